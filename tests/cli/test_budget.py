"""A run that passes budget.max_minutes starts no new point: the measured points are archived,
the rest counted in timing.not_run, status over_budget, exit 2 and the resume command; --resume
finishes the run, and --force runs past the budget.

The plan must fit the budget for the spec to be accepted at all, so the test plants a
calibration (KT_CALIBRATION_FILE) that calls input generation, the float64 reference and the
arms' checks and copies free: the plan then says about 0.05 s per point (the worker) while
each point, a quarter of a million elements or more, really takes longer. No timing is
asserted beyond "more than the budget"."""
import json
import os
import re
import shlex
import shutil
import tempfile
import unittest

from ktrial_cli import run, sim_spec, validate_result

BATCHES = (1, 2, 3, 4)


class BudgetTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt_budget.")
        cal = os.path.join(self.tmp, "calibration.json")
        with open(cal, "w") as f:
            f.write('{"synthetic/fp32": {"gen_s_per_elem": 1e-15, "ref_s_per_flop": 1e-15, '
                    '"busy": 1}}\n')
        self.env = dict(os.environ, KT_CALIBRATION_FILE=cal)
        self.spec = sim_spec(os.path.join(self.tmp, "budget.yaml"), name="budget",
                             batch_sizes=BATCHES, context_lengths=(1 << 18,), sets=1,
                             trials={"warmup": 1, "min_repetitions": 10, "max_repetitions": 20})
        with open(self.spec, "a") as f:
            f.write("budget: {max_minutes: 0.005}\n")  # 0.3 s
        # the arms' costs, as the plan measured them, made free: a first plan measures them
        run(["validate", "--plan", self.spec], env=self.env)
        with open(cal) as f:
            doc = json.load(f)
        arms = [k for k in doc if k.startswith("arm/")]
        self.assertEqual(len(arms), 2, doc)  # baseline and candidate
        for k in arms:
            for field in ("call_s", "prepare_s", "scan_s", "full_s", "flush_s", "touch_s"):
                doc[k][field] = 0
        with open(cal, "w") as f:
            json.dump(doc, f)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_past_the_budget_no_new_point_starts(self):
        plan = run(["validate", "--plan", self.spec], env=self.env)
        self.assertEqual(plan.returncode, 0, plan.stdout + plan.stderr)  # the plan fits
        out = os.path.join(self.tmp, "out")
        p = run(["run", self.spec, "-o", out], env=self.env)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        doc = validate_result(self, out)
        self.assertEqual(doc["status"], "over_budget")
        self.assertEqual(doc["decision"]["exit_code"], 2)
        measured, not_run = len(doc["points"]), doc["timing"]["not_run"]
        self.assertGreaterEqual(measured, 1)  # the first point always starts
        self.assertGreaterEqual(not_run, 1)
        self.assertEqual(measured + not_run, len(BATCHES))
        self.assertGreater(doc["timing"]["elapsed_seconds"], 0.3)
        self.assertEqual(doc["timing"]["budget_seconds"], 0.3)
        self.assertIn("budget.max_minutes", p.stderr)
        self.assertIn("budget 0.3 s (over)", p.stdout)
        with open(os.path.join(out, "points.jsonl")) as f:
            self.assertEqual(len(f.readlines()), measured)  # what was measured is archived
        # show prints the same table as run did, the points never started included
        rows = [ln for ln in p.stdout.splitlines() if ln.endswith("NOT RUN (budget)")]
        self.assertEqual(len(rows), not_run, p.stdout)
        shown = run(["show", out])
        self.assertEqual(rows, [ln for ln in shown.stdout.splitlines()
                                if ln.endswith("NOT RUN (budget)")],
                         shown.stdout)
        m = re.search(r"continue with: (ktrial run .* --resume .*)$", p.stderr, re.M)
        self.assertIsNotNone(m, p.stderr)
        # --resume starts a fresh budget for what is left; with --force it finishes
        args = shlex.split(m.group(1))[1:]
        r = run(args + ["--force"], env=self.env)
        self.assertIn(r.returncode, (0, 1, 2), r.stdout + r.stderr)
        doc = validate_result(self, out)
        self.assertEqual(doc["status"], "complete")
        self.assertEqual(len(doc["points"]), len(BATCHES))
        self.assertEqual(doc["timing"]["not_run"], 0)

    def test_force_runs_past_the_budget(self):
        out = os.path.join(self.tmp, "forced")
        p = run(["run", self.spec, "-o", out, "--force"], env=self.env)
        self.assertIn(p.returncode, (0, 1, 2), p.stdout + p.stderr)
        doc = validate_result(self, out)
        self.assertEqual(doc["status"], "complete")
        self.assertEqual(len(doc["points"]), len(BATCHES))
        self.assertEqual(doc["timing"]["not_run"], 0)


if __name__ == "__main__":
    unittest.main()
