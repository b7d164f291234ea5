"""Every timed call does the work (issue 43, docs/robustness.md): each cheat of
tests/plugins/cheats.c is a REJECT whose reason names the check that caught it, the baseline
and an honest candidate beside it keep theirs. Small gemm shapes, a few pairs."""
import os
import shutil
import tempfile
import unittest

from ktrial_cli import KTRIAL, run, validate_result
from test_plugins import gemm_spec, test_plugin

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

    def run_spec(self, candidates, sets=2, flush=False, reps=12):
        spec = gemm_spec(os.path.join(self.tmp, "spec.yaml"), [test_plugin("cheats")],
                         {"variant": "blas"}, candidates, max_reps=reps)
        with open(spec) as f:
            text = f.read().replace("sets: 2", f"sets: {sets}")
            text = text.replace("flush_cache: false", f"flush_cache: {str(flush).lower()}")
            # 64 rows: computing costs many times comparing the inputs, as a memo must
            text = text.replace("batch_sizes: [3]", "batch_sizes: [64]")
        with open(spec, "w") as f:
            f.write(text)
        out = os.path.join(self.tmp, "out")
        shutil.rmtree(out, ignore_errors=True)
        p = run(["run", spec, "-o", out, "--no-profile"])
        self.assertIn(p.returncode, (0, 1), p.stdout + p.stderr)
        doc = validate_result(self, out)
        (point,) = doc["points"]
        self.assertIsNone(point["error"])
        return {c["name"]: c for c in point["candidates"]}

    def test_each_cheat_is_rejected_naming_its_check(self):
        for sets, flush in ((2, False), (1, True)):
            with self.subTest(sets=sets, flush=flush):
                cands = [{"name": n, "variant": n} for n in CHEATS]
                cands.append({"name": "honest", "variant": "blas"})
                got = self.run_spec(cands, sets=sets, flush=flush)
                for name, words in CHEATS.items():
                    c = got[name]
                    self.assertEqual(c["verdict"], "REJECT", (name, c["reasons"]))
                    self.assertIn(words, " ".join(c["reasons"]), name)
                self.assertNotEqual(got["honest"]["verdict"], "REJECT", got["honest"]["reasons"])
                self.assertFalse(got["honest"]["failed"])


if __name__ == "__main__":
    unittest.main()
