"""threads_affinity and dense's bf16_dot through the binary: a spec asking for compact pinning
runs and records it in result.json (validated against the result schema), the default is none,
a wrong value is a spec error with its position (exit 65), and dense with bf16_dot auto and off
both pass the float64 check in a bf16 run; more threads than online cores runs, pinned, with a
warning that names the cores."""
import os
import shutil
import tempfile
import unittest

from ktrial_cli import run, validate_result


def attention_spec(path, affinity_line, threads=2):
    with open(path, "w") as f:
        f.write(f"""version: 1
name: affinity
op: attention_decode
backend: cpu
dtype: bf16
threads: {threads}
{affinity_line}
models: [{{name: tiny, hidden: 256, heads: 4, kv_heads: 2, head_dim: 64, intermediate: 512}}]
batch_sizes: [1]
context_lengths: [300]
inputs: {{distribution: llm, seed: 3, sets: 1}}
baseline: {{variant: dense, params: {{bf16_dot: auto}}}}
candidates:
  - {{name: widened, variant: dense, params: {{bf16_dot: "off"}}}}
trials: {{warmup: 1, min_repetitions: 6, max_repetitions: 6, max_seconds_per_point: 5}}
""")
    return path


class ThreadsAffinityTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt_affinity.")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_spec(self, name, affinity_line, threads=2):
        spec = attention_spec(os.path.join(self.tmp, name + ".yaml"), affinity_line, threads)
        out = os.path.join(self.tmp, "out-" + name)
        p = run(["run", spec, "-o", out])
        return p, out

    def test_compact_runs_and_is_recorded(self):
        p, out = self.run_spec("compact", "threads_affinity: compact")
        self.assertIn(p.returncode, (0, 1, 2), p.stdout + p.stderr)
        doc = validate_result(self, out)
        self.assertEqual(doc["spec"]["parsed"]["threads_affinity"], "compact")
        # both bf16 score paths pass the float64 check
        point = doc["points"][0]
        for a in [point["baseline"]] + point["candidates"]:
            self.assertFalse(a["failed"], a["failure"])
            for n in a["numerics"]:
                self.assertEqual(n["nonfinite"], 0)
                self.assertLess(n["rel_l2"], 1e-2)

    def test_default_is_none(self):
        p, out = self.run_spec("default", "")
        self.assertIn(p.returncode, (0, 1, 2), p.stdout + p.stderr)
        doc = validate_result(self, out)
        self.assertEqual(doc["spec"]["parsed"]["threads_affinity"], "none")

    def test_more_threads_than_cores_warns(self):
        cores = os.cpu_count()
        p, out = self.run_spec("over", "threads_affinity: compact", threads=cores + 1)
        self.assertIn(p.returncode, (0, 1, 2), p.stdout + p.stderr)
        self.assertIn(f"warning: threads: {cores + 1} is more than the {cores} online core(s)",
                      p.stderr)
        self.assertIn(f"set threads to at most {cores}", p.stderr)
        doc = validate_result(self, out)
        self.assertEqual(doc["points"][0]["candidates"][0]["failure"], None)
        if cores >= 2:  # the others' two threads fit: no such warning
            q, _ = self.run_spec("fits", "")
            self.assertNotIn("online core(s)", q.stderr)

    def test_wrong_value_is_a_spec_error(self):
        p, _ = self.run_spec("wrong", "threads_affinity: scatter")
        self.assertEqual(p.returncode, 65, p.stdout + p.stderr)
        self.assertIn("wrong.yaml:7:", p.stderr)
        self.assertIn("threads_affinity", p.stderr)


if __name__ == "__main__":
    unittest.main()
