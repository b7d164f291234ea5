"""A command trial's peak RSS is the program's own, not ktrial's: ktrial starts each call
through kt_exec (kernels/process/exec/), so 'dd bs=16M' (about 18 MiB) against 'true' (about
1 MiB) is a memory REJECT at max_ratio 1.5 in every build (before, both read ktrial's own peak,
23 MiB in a build without CUDA and 166 MiB with it, a ratio near 1). Without the helper the
peak is not measured: NaN, no memory ratio, never a ratio of 1."""
import json
import math
import os
import tempfile
import unittest

from ktrial_cli import load_result, run

SPEC = """version: 1
name: dd-memory
op: command
backend: process
tasks:
  - {name: one}
baseline:
  run: ["true"]
candidates:
  - name: dd
    run: ["dd", "if=/dev/zero", "of=/dev/null", "bs=16M", "count=4"]
trials: {warmup: 0, min_repetitions: 6, max_repetitions: 8, max_seconds_per_point: 60, order: random}
thresholds:
  latency: {min_speedup: 0.001, confidence: 0.95}
  memory: {max_ratio: 1.5}
"""


def value(x):
    v = x["value"]
    return float("nan") if v == "NaN" else v


class CommandMemoryTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.spec = os.path.join(self.tmp.name, "dd.yaml")
        with open(self.spec, "w") as f:
            f.write(SPEC)

    def tearDown(self):
        self.tmp.cleanup()

    def run_spec(self, out, env=None):
        p = run(["run", self.spec, "-o", os.path.join(self.tmp.name, out)], env=env)
        return p, load_result(os.path.join(self.tmp.name, out))

    def test_dd_against_true_is_a_memory_reject(self):
        p, doc = self.run_spec("out")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        point = doc["points"][0]
        base, dd = point["baseline"], point["candidates"][0]
        self.assertEqual("REJECT", dd["verdict"])
        self.assertIn("memory", dd["reason_codes"])
        self.assertIn("above max_ratio 1.5", p.stdout)
        self.assertLess(value(base["metrics"]["max_rss_mib"]), 8)  # true: about 1 MiB
        self.assertGreater(value(dd["metrics"]["max_rss_mib"]), 16)  # one 16 MiB buffer
        self.assertGreater(dd["memory_ratio"], 2)
        for arm in (base, dd):  # the floor is kt_exec's own resident set
            m = arm["metrics"]
            self.assertLessEqual(value(m["rss_floor_mib"]), value(m["max_rss_mib"]))

    def test_without_the_helper_memory_is_not_measured(self):
        p, doc = self.run_spec("nohelper", env=dict(os.environ, KT_EXEC_HELPER=""))
        self.assertIn(p.returncode, (0, 2), p.stdout + p.stderr)
        dd = doc["points"][0]["candidates"][0]
        self.assertTrue(math.isnan(value(dd["metrics"]["max_rss_mib"])))
        self.assertNotIn("memory", dd["reason_codes"])
        ratio = dd.get("memory_ratio", "NaN")
        self.assertTrue(ratio == "NaN" or ratio is None or math.isnan(ratio), ratio)


if __name__ == "__main__":
    unittest.main()
