"""'ktrial lock' and what 'run' does with a lock: a locked spec runs and says so, a changed
limit is refused naming its key (65) unless --relock (recorded), reformatting changes nothing;
without a lock, thresholds that moved since earlier runs had results are reported with the diff
(docs/reproduce.md). Sim backend, one point each: seconds."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from ktrial_cli import SOURCE, load_result, run, sim_spec, validate_result

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]


def validate_lock(testcase, path):
    import jsonschema
    with open(os.path.join(SOURCE, "schemas", "lock.schema.json")) as f:
        schema = json.load(f)
    with open(path) as f:
        lock = json.load(f)
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(lock), key=str)
    testcase.assertEqual([], [f"{list(e.path)}: {e.message}" for e in errors[:5]])
    return lock


class LockTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt_lock.")
        self.spec = os.path.join(self.tmp, "spec.yaml")
        self.results = os.path.join(self.tmp, "results")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write(self, min_speedup=1.0, **kw):
        return sim_spec(self.spec, trials={"max_repetitions": 40},
                        thresholds={"latency": {"min_speedup": min_speedup}}, **kw)

    def run_to(self, name, *extra):
        out = os.path.join(self.results, name)
        return run(["run", self.spec, "-o", out] + list(extra)), out

    def test_a_locked_spec_runs_and_its_archive_says_locked(self):
        self.write()
        p = run(["lock", self.spec])
        self.assertEqual(p.returncode, 0, p.stderr)
        lock = validate_lock(self, self.spec + ".lock")
        self.assertIn("thresholds.latency.min_speedup", lock["keys"])
        self.assertIn("arms.candidates[cand].params.median_us", lock["keys"])
        p, out = self.run_to("a")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # outside git the commit is that of the folder ktrial runs in, as in provenance
        self.assertRegex(p.stdout, r"limits locked at \S+( \(dirty\))?, "
                         + lock["locked_utc"] + r" \(.*spec\.yaml\.lock\)\n")
        limits = validate_result(self, out)["provenance"]["limits"]
        self.assertTrue(limits["locked"])
        self.assertFalse(limits["relocked"])
        self.assertEqual(limits["lock"]["sha256"], lock["sha256"])
        show = run(["show", out])
        self.assertIn("limits locked at", show.stdout)
        # locking again a spec that still matches leaves the lock as it was
        self.assertEqual(run(["lock", "--check", self.spec]).returncode, 0)
        p = run(["lock", self.spec])
        self.assertIn("unchanged", p.stdout)
        self.assertEqual(validate_lock(self, self.spec + ".lock"), lock)

    def test_reformatting_and_comments_do_not_break_the_lock(self):
        self.write()
        run(["lock", self.spec])
        with open(self.spec) as f:
            text = f.read()
        text = "# a comment\n" + text.replace("trials: {", "trials: {  ").replace(
            "min_speedup: 1.0", "min_speedup: 1.00")
        with open(self.spec, "w") as f:
            f.write(text)
        p, out = self.run_to("a")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertTrue(load_result(out)["provenance"]["limits"]["locked"])

    def test_a_changed_threshold_is_refused_naming_the_key_unless_relocked(self):
        self.write()
        run(["lock", self.spec])
        self.write(min_speedup=1.1)
        p = run(["lock", "--check", self.spec])
        self.assertEqual(p.returncode, 65, p.stdout + p.stderr)
        self.assertIn("changed thresholds.latency.min_speedup", p.stderr)
        p, out = self.run_to("a")
        self.assertEqual(p.returncode, 65, p.stdout + p.stderr)
        self.assertRegex(p.stderr, r"no longer matches its lock .*changed "
                                   r"thresholds\.latency\.min_speedup\n")
        self.assertIn("--relock", p.stderr)
        self.assertFalse(os.path.exists(out), "a refused run leaves no folder")
        # a candidate changed is named too
        self.write(candidates={"cand": {"median_us": 70, "spread": 0.05}})
        p, _ = self.run_to("b")
        self.assertEqual(p.returncode, 65)
        self.assertIn("arms.candidates[cand].params.median_us", p.stderr)

        self.write(min_speedup=1.1)
        before = validate_lock(self, self.spec + ".lock")
        p, out = self.run_to("c", "--relock")
        self.assertIn(p.returncode, (0, 1, 2), p.stdout + p.stderr)
        limits = validate_result(self, out)["provenance"]["limits"]
        self.assertTrue(limits["relocked"])
        self.assertEqual(limits["changed_keys"], ["thresholds.latency.min_speedup"])
        self.assertEqual(limits["previous_lock"]["sha256"], before["sha256"])
        self.assertIn("limits relocked by --relock", p.stdout)
        after = validate_lock(self, self.spec + ".lock")
        self.assertNotEqual(after["sha256"], before["sha256"])
        self.assertEqual(limits["lock"]["sha256"], after["sha256"])
        p, _ = self.run_to("d")  # the relocked spec now runs as locked
        self.assertIn("limits locked at", p.stdout)

    def test_a_lock_that_is_not_a_lock_is_refused(self):
        self.write()
        with open(self.spec + ".lock", "w") as f:
            f.write('{"sha256": "x"}\n')
        p, _ = self.run_to("a")
        self.assertEqual(p.returncode, 65, p.stderr)
        self.assertIn("is not a ktrial lock", p.stderr)

    def test_thresholds_moved_after_earlier_runs_are_reported_with_the_diff(self):
        self.write(min_speedup=1.0)
        for name in ("first", "second"):
            p, out = self.run_to(name)
            self.assertNotIn("thresholds changed", p.stdout)
            self.assertIsNone(load_result(out)["provenance"]["limits"]["moved"])
        self.write(min_speedup=1.2)
        p, out = self.run_to("third", "--report")
        self.assertIn("warning: thresholds changed after 2 earlier runs had results", p.stdout)
        self.assertIn("  thresholds.latency.min_speedup: 1 -> 1.2\n", p.stdout)
        moved = validate_result(self, out)["provenance"]["limits"]["moved"]
        self.assertEqual(moved["earlier_runs"], 2)
        self.assertEqual(moved["changes"], [{"key": "thresholds.latency.min_speedup",
                                             "before": 1, "after": 1.2}])
        with open(os.path.join(out, "report.html")) as f:
            self.assertRegex(f.read(), r"<th>limits</th><td><pre class='limits'>warning: "
                                       r"thresholds changed after 2 earlier runs")
        self.assertIn("thresholds changed after 2", run(["show", out]).stdout)
        # another experiment in the same folder is not compared
        sim_spec(self.spec, name="other", thresholds={"latency": {"min_speedup": 1.5}})
        p, out = self.run_to("other")
        self.assertNotIn("thresholds changed", p.stdout)

    def test_the_lock_records_the_commit(self):
        env = dict(os.environ, HOME=self.tmp, GIT_CONFIG_NOSYSTEM="1")
        repo = os.path.join(self.tmp, "repo")  # HOME gets a .cache: not in the work tree
        os.makedirs(repo)
        self.spec = os.path.join(repo, "spec.yaml")
        subprocess.run(GIT + ["init", "-q"], cwd=repo, env=env, check=True)
        self.write()
        subprocess.run(GIT + ["add", "spec.yaml"], cwd=repo, env=env, check=True)
        subprocess.run(GIT + ["commit", "-qm", "spec"], cwd=repo, env=env, check=True)
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, env=env, check=True,
                              capture_output=True, text=True).stdout.strip()
        p = run(["lock", self.spec], env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        lock = validate_lock(self, self.spec + ".lock")
        self.assertEqual(lock["git"], {"commit": head, "dirty": False})
        p, out = self.run_to("a")
        self.assertRegex(p.stdout, r"limits locked at " + head[:7] + r", \d{4}-")

if __name__ == "__main__":
    unittest.main()
