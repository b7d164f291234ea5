"""The archive through the binary: provenance in git clones, interruption and --resume,
'show' and 'compare'."""
import csv
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from ktrial_cli import KTRIAL, load_result, run, sim_spec, validate_result, verdicts

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]


class ArchiveTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt_arch.")
        self.env = dict(os.environ, HOME=self.tmp, GIT_CONFIG_NOSYSTEM="1")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def git(self, cwd, *args):
        return subprocess.run(GIT + list(args), cwd=cwd, env=self.env, check=True,
                              capture_output=True, text=True).stdout.strip()

    def make_repo(self):
        repo = os.path.join(self.tmp, "repo")
        os.mkdir(repo)
        self.git(repo, "init", "-q", "-b", "main")
        sim_spec(os.path.join(repo, "spec.yaml"))
        with open(os.path.join(repo, "kernel.c"), "w") as f:
            f.write("int kernel(void) { return 1; }\n")
        with open(os.path.join(repo, ".gitignore"), "w") as f:
            f.write("results/\n")
        self.git(repo, "add", ".")
        self.git(repo, "commit", "-qm", "init")
        self.git(repo, "remote", "add", "origin", "https://user:s3cret-token@example.com/r.git")
        return repo

    def test_dirty_clone_records_commit_and_a_diff_that_reproduces_the_tree(self):
        repo = self.make_repo()
        head = self.git(repo, "rev-parse", "HEAD")
        with open(os.path.join(repo, "kernel.c"), "a") as f:
            f.write("/* tuned */\n")
        with open(os.path.join(repo, "new_kernel.c"), "w") as f:
            f.write("int candidate(void) { return 2; }\n")
        with open(os.path.join(repo, "blob.bin"), "wb") as f:
            f.write(bytes(range(256)) * 4)
        p = run(["run", "spec.yaml"], cwd=repo, env=self.env)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        results = os.path.join(repo, "results")
        (folder,) = os.listdir(results)
        self.assertTrue(folder.endswith("-sim-test-" + head[:7] + "-dirty"), folder)
        out = os.path.join(results, folder)
        doc = validate_result(self, out)
        git = doc["provenance"]["git"]
        self.assertEqual(git["commit"], head)
        self.assertTrue(git["dirty"])
        self.assertEqual(git["unstaged"], 1)
        self.assertEqual(git["untracked"], 2)
        self.assertNotIn("s3cret", json.dumps(doc))
        self.assertEqual(git["remote_url"], "https://example.com/r.git")
        blob = subprocess.run(["git", "hash-object", os.path.join(out, "git.diff")],
                              capture_output=True, text=True, check=True).stdout.strip()
        self.assertEqual(blob, git["diff_blob_id"])
        clone = os.path.join(self.tmp, "clone")
        subprocess.run(["git", "clone", "-q", repo, clone], check=True, env=self.env)
        self.git(clone, "checkout", "-q", head)
        self.git(clone, "apply", os.path.join(out, "git.diff"))
        for name in ("kernel.c", "new_kernel.c", "blob.bin", "spec.yaml"):
            with open(os.path.join(repo, name), "rb") as a, \
                    open(os.path.join(clone, name), "rb") as b:
                self.assertEqual(a.read(), b.read(), name)

    def test_require_clean_refuses_a_dirty_tree(self):
        repo = self.make_repo()
        self.assertEqual(run(["run", "spec.yaml", "--require-clean", "-o", "r1"], cwd=repo,
                             env=self.env).returncode, 0)
        with open(os.path.join(repo, "kernel.c"), "a") as f:
            f.write("/* edit */\n")
        p = run(["run", "spec.yaml", "--require-clean", "-o", "r2"], cwd=repo, env=self.env)
        self.assertEqual(p.returncode, 65)
        self.assertIn("dirty", p.stderr)

    def test_outside_any_repository(self):
        spec = sim_spec(os.path.join(self.tmp, "spec.yaml"))
        p = run(["run", spec, "-o", os.path.join(self.tmp, "out")], cwd=self.tmp, env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("warning", p.stderr)
        git = validate_result(self, os.path.join(self.tmp, "out"))["provenance"]["git"]
        self.assertFalse(git["available"])
        self.assertIsNone(git["commit"])
        self.assertTrue(git["reason"])

    def test_interrupted_run_resumes_to_the_same_verdicts(self):
        spec = sim_spec(os.path.join(self.tmp, "spec.yaml"), context_lengths=(64, 96, 128, 160),
                        baseline={"median_us": 100, "spread": 0.05, "sleep_us": 2000},
                        candidates={"fast": {"median_us": 90, "spread": 0.05, "sleep_us": 2000},
                                    "same": {"median_us": 100, "spread": 0.05}},
                        trials={"max_repetitions": 60})
        whole = os.path.join(self.tmp, "whole")
        p = run(["run", spec, "-o", whole], cwd=self.tmp, env=self.env)
        self.assertIn(p.returncode, (0, 1, 2), p.stderr)
        cut = os.path.join(self.tmp, "cut")
        proc = subprocess.Popen([KTRIAL, "run", spec, "-o", cut], cwd=self.tmp, env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        jsonl = os.path.join(cut, "points.jsonl")
        deadline = time.time() + 120
        while time.time() < deadline and not (os.path.exists(jsonl) and os.path.getsize(jsonl)):
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 130, err)
        doc = validate_result(self, cut)
        self.assertEqual(doc["status"], "interrupted")
        with open(jsonl) as f:
            done = len(f.readlines())
        self.assertGreaterEqual(done, 1)
        self.assertLess(done, 4)
        with open(os.path.join(cut, "samples.csv"), "a") as f:
            # rows of a point cut short
            f.write("x,,sim,synthetic,fp32,b1/t999,,,,1,999,fast,0,0,0,candidate,fast,lognormal,"
                    "1,0,0\n")
        r = run(["run", spec, "--resume", cut], cwd=self.tmp, env=self.env)
        self.assertEqual(r.returncode, p.returncode, r.stderr)
        resumed = validate_result(self, cut)
        self.assertEqual(resumed["status"], "complete")
        with open(os.path.join(cut, "samples.csv")) as f:
            rows = list(csv.DictReader(f))
        pairs = sum(c["n_pairs"] for pt in resumed["points"] for c in pt["candidates"])
        self.assertEqual(len(rows), 2 * pairs)
        self.assertFalse(any(r["point"] == "b1/t999" for r in rows))
        # the archive keeps its run id across --resume: every row, old and new, carries it
        self.assertEqual({r["run_id"] for r in rows}, {resumed["provenance"]["run"]["id"]})
        self.assertEqual(verdicts(resumed), verdicts(load_result(whole)))
        speed = lambda d: [c["speedup"] for pt in d["points"] for c in pt["candidates"]]
        self.assertEqual(speed(resumed), speed(load_result(whole)))

    def test_resume_refuses_another_spec(self):
        spec = sim_spec(os.path.join(self.tmp, "spec.yaml"))
        out = os.path.join(self.tmp, "out")
        self.assertEqual(run(["run", spec, "-o", out], cwd=self.tmp).returncode, 0)
        sim_spec(spec, seed=99)
        p = run(["run", spec, "--resume", out], cwd=self.tmp)
        self.assertEqual(p.returncode, 65)
        self.assertIn("spec differs", p.stderr)
        self.assertEqual(run(["run", spec, "--resume", out, "--force"], cwd=self.tmp).returncode, 0)

    def test_resume_refuses_a_changed_work_tree(self):
        # the same commit, but the kernel edited since the run started: the points kept and
        # the points to come would be measured on different code
        repo = self.make_repo()
        out = os.path.join("results", "r")
        self.assertEqual(run(["run", "spec.yaml", "-o", out], cwd=repo, env=self.env).returncode, 0)
        with open(os.path.join(repo, "kernel.c"), "a") as f:
            f.write("/* tuned */\n")
        p = run(["run", "spec.yaml", "--resume", out], cwd=repo, env=self.env)
        self.assertEqual(p.returncode, 65, p.stderr)
        self.assertIn("started on a clean work tree, which now has changes", p.stderr)
        p = run(["run", "spec.yaml", "--resume", out, "--force"], cwd=repo, env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        git = validate_result(self, os.path.join(repo, out))["provenance"]["git"]
        self.assertTrue(git["changed_during_run"])  # forced across it: recorded, not hidden

    def test_resume_keeps_the_shard_quick_and_backend(self):
        spec = sim_spec(os.path.join(self.tmp, "spec.yaml"), batch_sizes=(1, 2))
        shard = os.path.join(self.tmp, "shard")
        self.assertEqual(run(["run", spec, "-o", shard, "--shard", "1/2"]).returncode, 0)
        for args, says in (([], "holds shard 1/2, this run would be shard 1/1 (the whole matrix)"),
                           (["--shard", "2/2"], "holds shard 1/2, this run would be shard 2/2"),
                           (["--shard", "1/2", "--quick"], "was run without --quick")):
            p = run(["run", spec, "--resume", shard, "--force"] + args)
            self.assertEqual(p.returncode, 65, p.stderr)
            self.assertIn(says, p.stderr)
        self.assertIn(f"continue it with: ktrial run {spec} --resume {shard} --shard 1/2",
                      p.stderr)
        self.assertEqual(run(["run", spec, "--resume", shard, "--shard", "1/2"]).returncode, 0)
        self.assertEqual(len(load_result(shard)["points"]), 1)  # still the shard's one point
        # show's way on for an interrupted shard repeats the shard too
        doc = load_result(shard)
        doc["status"] = "interrupted"
        doc["decision"]["exit_code"] = 130  # as an interrupted run records it: it verifies
        with open(os.path.join(shard, "result.json"), "w") as f:
            json.dump(doc, f)
        s = run(["show", shard])
        self.assertIn(f"--resume {shard} --shard 1/2\n", s.stdout)

        quick = os.path.join(self.tmp, "quick")
        self.assertEqual(run(["run", spec, "-o", quick, "--quick"]).returncode, 0)
        p = run(["run", spec, "--resume", quick])
        self.assertEqual(p.returncode, 65, p.stderr)
        self.assertIn("was run with --quick", p.stderr)
        self.assertEqual(run(["run", spec, "--resume", quick, "--quick"]).returncode, 0)
        # an archive measured on another backend (as a cpu run of an auto spec would be)
        doc = load_result(quick)
        doc["provenance"]["device"]["backend"] = "cpu"
        with open(os.path.join(quick, "result.json"), "w") as f:
            json.dump(doc, f)
        p = run(["run", spec, "--resume", quick, "--quick", "--force"])
        self.assertEqual(p.returncode, 65, p.stderr)
        self.assertIn("was measured on backend 'cpu', this run would use 'sim'", p.stderr)

    def test_resume_refuses_another_experiment_and_a_missing_folder(self):
        spec = sim_spec(os.path.join(self.tmp, "spec.yaml"), name="first")
        out = os.path.join(self.tmp, "out")
        self.assertEqual(run(["run", spec, "-o", out]).returncode, 0)
        before = load_result(out)
        other = sim_spec(os.path.join(self.tmp, "other.yaml"), name="second")
        # another experiment, not a changed spec: --force does not reuse the folder
        p = run(["run", other, "--resume", out, "--force"])
        self.assertEqual(p.returncode, 65, p.stderr)
        self.assertIn(f"'{out}' holds experiment 'first', the spec is experiment 'second'",
                      p.stderr)
        self.assertEqual(load_result(out)["points"], before["points"])  # nothing dropped
        p = run(["run", spec, "--resume", os.path.join(self.tmp, "nowhere")])
        self.assertEqual(p.returncode, 65, p.stderr)
        self.assertIn("no such folder", p.stderr)
        p = run(["run", spec, "--resume", spec])
        self.assertEqual(p.returncode, 65, p.stderr)
        self.assertIn("not a folder", p.stderr)

    def test_existing_run_folder_is_not_overwritten(self):
        spec = sim_spec(os.path.join(self.tmp, "spec.yaml"))
        out = os.path.join(self.tmp, "out")
        self.assertEqual(run(["run", spec, "-o", out]).returncode, 0)
        p = run(["run", spec, "-o", out])
        self.assertEqual(p.returncode, 65)
        self.assertIn("--resume", p.stderr)

    def test_run_cut_in_its_first_point_is_a_run_for_o(self):
        # stopped before any point finished: result.json (interrupted) and spec.yaml, no
        # points.jsonl; -o on it names the run and the --resume that continues it
        slow = {"median_us": 100, "spread": 0.05, "sleep_us": 20000}
        spec = sim_spec(os.path.join(self.tmp, "spec.yaml"), baseline=slow,
                        candidates={"same": slow}, trials={"max_repetitions": 200})
        out = os.path.join(self.tmp, "out")
        proc = subprocess.Popen([KTRIAL, "run", spec, "-o", out], cwd=self.tmp,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        seen = []
        for line in proc.stderr:  # the SIGINT handler is in place once the pairs start
            seen.append(line)
            if "timed pairs" in line:
                break
        proc.send_signal(signal.SIGINT)
        seen.append(proc.stderr.read())
        self.assertEqual(proc.wait(timeout=60), 130, "".join(seen))
        proc.stderr.close()
        self.assertEqual(load_result(out)["status"], "interrupted")
        self.assertFalse(os.path.exists(os.path.join(out, "points.jsonl")), os.listdir(out))
        p = run(["run", spec, "-o", out], cwd=self.tmp)
        self.assertEqual(p.returncode, 65)
        self.assertIn(f"'{out}' already holds a run; continue it with --resume '{out}'", p.stderr)
        self.assertNotIn("holds no run", p.stderr)

    def test_show_prints_the_summary_and_provenance(self):
        spec = sim_spec(os.path.join(self.tmp, "spec.yaml"))
        out = os.path.join(self.tmp, "out")
        p = run(["run", spec, "-o", out])
        s = run(["show", out])
        self.assertEqual(s.returncode, 0, s.stderr)
        table = lambda text: [l for l in text.splitlines() if l.startswith(("b1/", "candidate",
                                                                             "overall"))]
        self.assertEqual(table(s.stdout), table(p.stdout))
        self.assertIn("host:", s.stdout)
        self.assertEqual(run(["show", os.path.join(out, "result.json")]).returncode, 0)
        self.assertEqual(run(["show", os.path.join(self.tmp, "nope")]).returncode, 65)

    def test_compare_flags_a_regression(self):
        old_spec = sim_spec(os.path.join(self.tmp, "old.yaml"),
                            candidates={"cand": {"median_us": 80, "spread": 0.05}})
        new_spec = sim_spec(os.path.join(self.tmp, "new.yaml"),
                            candidates={"cand": {"median_us": 95, "spread": 0.05}})
        old, new = os.path.join(self.tmp, "old"), os.path.join(self.tmp, "new")
        self.assertEqual(run(["run", old_spec, "-o", old]).returncode, 0)
        run(["run", new_spec, "-o", new])
        p = run(["compare", old, new])
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("worse", p.stdout)
        self.assertIn("REGRESSION", p.stdout)
        j = run(["compare", old, new, "--json"])
        doc = json.loads(j.stdout)
        cand = [r for r in doc["rows"] if r["candidate"] == "cand"][0]
        self.assertEqual(cand["change"], "worse")
        self.assertTrue(cand["regression"])
        # the speedup went from 100/80 to 100/95
        self.assertAlmostEqual(cand["speedup_change"], 80 / 95, delta=0.04)
        self.assertLess(cand["ci"][1], 0.99)
        self.assertEqual(doc["regressions"], 1)
        same = run(["compare", old, old])
        self.assertEqual(same.returncode, 0, same.stdout)
        self.assertIn("0 regression(s)", same.stdout)

    def test_compare_a_slower_machine_is_drift_not_a_regression(self):
        """Every call 3% slower in NEW (baseline and candidate alike), the speedup unchanged:
        the absolute times move, the paired evidence does not, and compare exits 0."""
        old_spec = sim_spec(os.path.join(self.tmp, "old.yaml"), seed=11,
                            baseline={"median_us": 100, "spread": 0.01},
                            candidates={"cand": {"median_us": 80, "spread": 0.01}})
        new_spec = sim_spec(os.path.join(self.tmp, "new.yaml"), seed=12,
                            baseline={"median_us": 103, "spread": 0.01},
                            candidates={"cand": {"median_us": 82.4, "spread": 0.01}})
        old, new = os.path.join(self.tmp, "old"), os.path.join(self.tmp, "new")
        self.assertEqual(run(["run", old_spec, "-o", old]).returncode, 0)
        self.assertEqual(run(["run", new_spec, "-o", new]).returncode, 0)
        p = run(["compare", old, new])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("0 regression(s)", p.stdout)
        self.assertIn("machine/baseline drift", p.stdout)
        cand = json.loads(run(["compare", old, new, "--json"]).stdout)["rows"][0]
        self.assertAlmostEqual(cand["baseline_drift"], 1.03, delta=0.02)
        self.assertFalse(cand["regression"])

    def test_compare_refuses_different_experiments(self):
        a = os.path.join(self.tmp, "a")
        self.assertEqual(run(["run", sim_spec(os.path.join(self.tmp, "a.yaml")), "-o", a])
                         .returncode, 0)
        doc = load_result(a)
        doc["spec"]["parsed"]["op"] = "gemm"
        b = os.path.join(self.tmp, "b.json")
        with open(b, "w") as f:
            json.dump(doc, f)
        # a copy of result.json away from its folder fails verification (its sealed files are
        # not beside it): refused, naming what failed
        p = run(["compare", a, b])
        self.assertEqual(p.returncode, 65)
        self.assertIn("spec.yaml: sealed by result.json, but cannot be read", p.stderr)
        self.assertIn("fails verification", p.stderr)

        def variant(name, change):
            d = load_result(a)
            change(d)
            path = os.path.join(self.tmp, name + ".json")
            with open(path, "w") as f:
                json.dump(d, f)
            return path
        # another experiment whose points and candidates happen to have the same names
        other = variant("other", lambda d: d["spec"]["parsed"].update(name="other-test"))
        p = run(["compare", a, other, "--force"])
        self.assertIn("not the same experiment: 'sim-test' in OLD, 'other-test' in NEW", p.stderr)
        self.assertEqual(run(["compare", a, other, "--force"]).returncode, 0)  # as its help says
        # nothing in common to compare is no "0 regression(s)", exit 0
        renamed = variant("renamed", lambda d: [c.update(name="cand2") for pt in d["points"]
                                                for c in pt["candidates"]])
        p = run(["compare", a, renamed, "--force"])
        self.assertEqual(p.returncode, 65, p.stdout + p.stderr)
        self.assertIn("OLD and NEW share no candidate", p.stderr)
        killed = variant("killed", lambda d: d.update(status="running", points=[]))
        p = run(["compare", a, killed, "--force"])
        self.assertEqual(p.returncode, 65, p.stdout + p.stderr)
        self.assertIn("killed.json' has no finished point", p.stderr)
        # a result that cannot be read is named: OLD and NEW are both archives
        torn = variant("torn", lambda d: d.pop("points"))
        p = run(["compare", a, torn])
        self.assertEqual(p.returncode, 65, p.stdout + p.stderr)
        self.assertIn(f"error: '{torn}': not a ktrial result", p.stderr)


if __name__ == "__main__":
    unittest.main()
