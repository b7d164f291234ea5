"""Every timed call does the work (issue 43, docs/robustness.md): each cheat of
tests/plugins/cheats.c is a REJECT whose reason names the check that caught it, the baseline
and an honest candidate beside it keep theirs. Small gemm shapes, a few pairs."""
import os
import shutil
import tempfile
import unittest

from ktrial_cli import KTRIAL, run, validate_result
from test_plugins import TINY, gemm_spec, test_plugin

CHEATS = {
    "memo_content": "check fresh-inputs:",
    "memo_pointer": "check fresh-inputs:",
    "zeros_timed": "check reference:",
    "scribble": "check inputs-unchanged: input 'x' was modified by the call",
    "late": "check late-writes: output 'y' changed after the call",
    "far": "check guard: a write 6001 bytes past output 'y'",
    "near": "check guard: a write 4 bytes past output 'y'",
}


class CheatsTest(unittest.TestCase):
    def setUp(self):
        if not KTRIAL or not os.path.exists(test_plugin("cheats")):
            self.skipTest("needs the built ktrial and test plugins")
        self.tmp = tempfile.mkdtemp(prefix="kt-cheats-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_spec(self, candidates, sets=2, flush=False, reps=12, env=None, codes=(0, 1)):
        spec = gemm_spec(os.path.join(self.tmp, "spec.yaml"), [test_plugin("cheats")],
                         {"variant": "blas"}, candidates, max_reps=reps)
        with open(spec) as f:
            text = f.read().replace("sets: 2", f"sets: {sets}")
            text = text.replace("flush_cache: false", f"flush_cache: {str(flush).lower()}")
            # 256 x 256 x 256: computing costs many times comparing the inputs, as a memo must,
            # cold (flushed) as well as warm
            text = text.replace("batch_sizes: [3]", "batch_sizes: [256]")
            text = text.replace(TINY, "{name: mid, hidden: 256, heads: 4, kv_heads: 1, "
                                      "head_dim: 64, intermediate: 512}")
        with open(spec, "w") as f:
            f.write(text)
        out = os.path.join(self.tmp, "out")
        shutil.rmtree(out, ignore_errors=True)
        p = run(["run", spec, "-o", out, "--no-profile"], env=env)
        self.assertIn(p.returncode, codes, p.stdout + p.stderr)
        self.assertIn("checks on every call: written, finite, reference, fresh-inputs", p.stdout)
        self.doc = validate_result(self, out)
        (point,) = self.doc["points"]
        self.point = point
        return {c["name"]: c for c in point["candidates"]}

    def test_each_cheat_is_rejected_naming_its_check(self):
        for sets, flush in ((2, False), (1, True)):
            with self.subTest(sets=sets, flush=flush):
                cands = [{"name": n, "variant": n} for n in CHEATS]
                cands.append({"name": "honest", "variant": "blas"})
                got = self.run_spec(cands, sets=sets, flush=flush)
                self.assertIsNone(self.point["error"])
                checks = self.doc["provenance"]["checks"]
                self.assertEqual(checks["ran"], ["written", "finite", "reference", "fresh-inputs",
                                                 "inputs-unchanged", "guard", "late-writes",
                                                 "roofline"])
                self.assertIn(checks["read_bandwidth"]["source"], ("measured", "cached"))
                for name, words in CHEATS.items():
                    c = got[name]
                    self.assertEqual(c["verdict"], "REJECT", (name, c["reasons"]))
                    self.assertIn(words, " ".join(c["reasons"]), name)
                self.assertNotEqual(got["honest"]["verdict"], "REJECT", got["honest"]["reasons"])
                self.assertFalse(got["honest"]["failed"])

    def test_a_call_faster_than_the_bandwidth_allows_is_rejected_with_the_figures(self):
        # a bandwidth set far too low makes every honest call "too fast": whichever arm's timed
        # call comes first fails (the candidate, or the baseline and with it the point), with
        # the figures in the reason
        env = dict(os.environ, KT_READ_BANDWIDTH_GBS="0.0001")
        got = self.run_spec([{"name": "honest", "variant": "blas"}], env=env, codes=(1, 70))
        self.assertRegex((self.point["error"] or "") + " ".join(got["honest"]["reasons"]),
                         r"check roofline: [0-9.]+ [mun]?s for a call that must read at least "
                         r"([0-9]+) bytes is faster than reading its inputs allows \(\1 bytes "
                         r"at 0.0001 GB/s KT_READ_BANDWIDTH_GBS x 1 threads, margin 4: at least "
                         r"[0-9.]+ m?s\)")
        bw = self.doc["provenance"]["checks"]["read_bandwidth"]
        self.assertEqual(bw["source"], "KT_READ_BANDWIDTH_GBS")
        self.assertEqual(bw["gbs_per_thread"], [{"bytes": 0, "gbs": 0.0001}])


if __name__ == "__main__":
    unittest.main()
