"""Nothing faked, nothing lost, nothing leaked (issue 20): checked timed calls, a crash-safe
archive, honest blame, hostile folders and inputs. Every test drives the built binary."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from ktrial_cli import KTRIAL, load_result, run, sim_spec, validate_result, verdicts


class TimedCallsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt_robust.")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_turning_bad_inside_the_timed_pairs_is_rejected(self):
        # correctness: 2 calls (one per input set), warmup 2 more; so fail_after 4 turns bad
        # on the first timed call, 9 on the sixth, well inside the timed pairs
        for mode, words in (("nan", "NaN"), ("unwritten", "unwritten"),
                            ("error", "injected failure")):
            for after in (4, 9):
                with self.subTest(mode=mode, after=after):
                    out = os.path.join(self.tmp, f"out-{mode}-{after}")
                    spec = sim_spec(os.path.join(self.tmp, f"{mode}{after}.yaml"),
                                    candidates={"sly": {"median_us": 50, "fail": mode,
                                                        "fail_after": after}})
                    p = run(["run", spec, "-o", out])
                    self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
                    doc = validate_result(self, out)
                    self.assertEqual(verdicts(doc)[("b1/t64", "sly")], "REJECT")
                    c = doc["points"][0]["candidates"][0]
                    reasons = " ".join(c["reasons"])
                    self.assertIn(words, reasons)
                    self.assertRegex(reasons, rf"timed call {after - 3}\b")  # names the call

    def test_every_timed_call_is_counted_as_checked(self):
        out = os.path.join(self.tmp, "out")
        spec = sim_spec(os.path.join(self.tmp, "s.yaml"),
                        trials={"min_repetitions": 30, "max_repetitions": 30})
        p = run(["run", spec, "-o", out])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        doc = validate_result(self, out)
        point = doc["points"][0]
        c = point["candidates"][0]
        pairs = len(c["pairs"])
        self.assertEqual(pairs, 30)
        # warmup 2 + one call per pair, for each arm
        self.assertEqual(c["call_checks"]["calls"], 2 + pairs)
        self.assertEqual(point["baseline"]["call_checks"]["calls"], 2 + pairs)
        self.assertGreater(c["call_checks"]["full"], 0)
        self.assertLess(c["call_checks"]["full"], 2 + pairs)

    def test_fail_after_counts_calls_across_input_sets(self):
        # one correctness call per set: counted per set, fail_after 1 would first fire in
        # warmup; counted per call (as documented) it fires on input set 1's check
        out = os.path.join(self.tmp, "out")
        spec = sim_spec(os.path.join(self.tmp, "s.yaml"), sets=4,
                        candidates={"c": {"median_us": 50, "fail": "error", "fail_after": 1}})
        p = run(["run", spec, "-o", out])
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        c = load_result(out)["points"][0]["candidates"][0]
        self.assertIn("run failed: injected failure (fail: error) (input set 1)",
                      " ".join(c["reasons"]))


if __name__ == "__main__":
    unittest.main()
