"""ktrial merge and ktrial slurm through the built binary: shards of a 6-point sim spec merge
into exactly the verdicts and speedups of the unsharded run (aggregate all and geomean);
missing, duplicated and mismatched shards are refused with 65; --shard auto reads Slurm's
array variables; 'slurm --dry-run' writes a job array and an afterok merge job."""
import json
import os
import re
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from ktrial_cli import KTRIAL, run, sim_spec, validate_result  # noqa: E402

CANDIDATES = {"fast": {"median_us": 90, "spread": 0.05},
              "same": {"median_us": 100, "spread": 0.05},
              "slow": {"median_us": 115, "spread": 0.05}}


def figures(doc):
    """What must not change between a sharded and an unsharded run."""
    points = [(p["id"], c["name"], c["verdict"], c["speedup"], c["ci"], c["p_value"], c["n_pairs"])
              for p in doc["points"] for c in p["candidates"]]
    cands = [(c["name"], c["verdict"], c["geomean_speedup"], c["geomean_ci"], c["reason"])
             for c in doc["candidates"]]
    return points, cands, doc["decision"]


class MergeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt-merge-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def spec(self, aggregate, seed=7, name="spec.yaml"):
        return sim_spec(os.path.join(self.tmp, name), name="sim-six", candidates=CANDIDATES,
                        batch_sizes=(1, 2), context_lengths=(64, 96, 128), seed=seed,
                        thresholds={"aggregate": aggregate})

    def shards(self, spec, n, prefix="shard"):
        dirs = []
        for i in range(1, n + 1):
            out = os.path.join(self.tmp, f"{prefix}{n}-{i}")
            p = run(["run", spec, "-o", out, "--shard", f"{i}/{n}"])
            # a shard is not a verdict: it exits 0 once its points are measured
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(f"shard {i} of {n}: not a verdict for the experiment", p.stdout)
            dirs.append(out)
        return dirs

    def test_merged_shards_equal_the_unsharded_run(self):
        for aggregate in ("all", "geomean"):
            spec = self.spec(aggregate)
            whole = os.path.join(self.tmp, f"whole-{aggregate}")
            w = run(["run", spec, "-o", whole])
            expected = figures(validate_result(self, whole))
            for n in (2, 3):
                dirs = self.shards(spec, n, prefix=f"{aggregate}-")
                out = os.path.join(self.tmp, f"merged-{aggregate}-{n}")
                m = run(["merge", *reversed(dirs), "-o", out])
                self.assertEqual(m.returncode, w.returncode, m.stderr)
                self.assertIn(f"merged {n} shards, 6 points", m.stdout)
                doc = validate_result(self, out)
                self.assertEqual(figures(doc), expected)
                self.assertEqual(len(doc["shards"]), n)
                self.assertEqual(doc["provenance"]["run"]["shard"], "1/1")
                with open(os.path.join(out, "points.jsonl")) as f:
                    self.assertEqual(len(f.readlines()), 6)
                with open(os.path.join(out, "samples.csv")) as f:
                    rows = len(f.readlines()) - 1
                self.assertEqual(rows, 2 * sum(c["n_pairs"] for p in doc["points"]
                                               for c in p["candidates"]))
                shown = run(["show", out])
                self.assertIn("overall:", shown.stdout)

    def assert_one_problem_per_error(self, p):
        """The closing count names as many problems as the error lines before it."""
        lines = p.stderr.splitlines()
        m = re.search(r"^error: the shards do not make one run \((\d+) problems?\)", lines[-1])
        self.assertIsNotNone(m, p.stderr)
        errors = [ln for ln in lines[:-1] if ln.startswith("error: ")]
        self.assertEqual(int(m.group(1)), len(errors), p.stderr)

    def test_missing_duplicated_and_mismatched_shards_exit_65(self):
        spec = self.spec("geomean")
        dirs = self.shards(spec, 3)
        out = lambda name: os.path.join(self.tmp, name)  # noqa: E731

        p = run(["merge", dirs[0], dirs[2], "-o", out("m1")])
        self.assertEqual(p.returncode, 65)
        self.assertIn("point 'b1/t96' is in no shard", p.stderr)
        self.assertIn("4 of 6 points present", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(out("m1"), "result.json")))
        self.assert_one_problem_per_error(p)

        # a shard interrupted before its first point finished has no points.jsonl: its
        # points are missing (and said so), not an unreadable file
        stopped = out("stopped")
        shutil.copytree(dirs[0], stopped)
        os.remove(os.path.join(stopped, "points.jsonl"))
        with open(os.path.join(stopped, "result.json")) as f:
            doc = json.load(f)
        doc.update(status="interrupted", points=[])
        with open(os.path.join(stopped, "result.json"), "w") as f:
            json.dump(doc, f)
        p = run(["merge", stopped, dirs[1], dirs[2], "-o", out("ms")])
        self.assertEqual(p.returncode, 65)
        self.assertIn("point 'b1/t64' is in no shard", p.stderr)
        self.assertIn(f"hint: shard '{stopped}' is interrupted, with 0 finished points", p.stderr)
        # not an unreadable shard (its edited copy fails verification, which is said apart)
        self.assertNotIn(f"error: shard '{stopped}'", p.stderr)

        p = run(["merge", dirs[0], dirs[0], "-o", out("m0")])
        self.assertEqual(p.returncode, 65)
        self.assertIn("are both shard 1/3", p.stderr)
        self.assert_one_problem_per_error(p)

        p = run(["merge", dirs[0], dirs[1], dirs[2], dirs[1], "-o", out("m2")])
        self.assertEqual(p.returncode, 65)
        self.assertIn("are both shard 2/3", p.stderr)
        self.assertIn("is in both", p.stderr)
        self.assert_one_problem_per_error(p)

        other = self.spec("geomean", seed=8, name="other.yaml")
        odd = os.path.join(self.tmp, "odd")
        self.assertEqual(run(["run", other, "-o", odd, "--shard", "2/3"]).returncode, 0)
        p = run(["merge", dirs[0], odd, dirs[2], "-o", out("m3")])
        self.assertEqual(p.returncode, 65)
        self.assertIn("the spec (sha256) differs", p.stderr)
        self.assertIn("--force", p.stderr)
        p = run(["merge", dirs[0], odd, dirs[2], "-o", out("m4"), "--force"])
        self.assertIn(p.returncode, (0, 1, 2), p.stderr)
        self.assertIn("warning: the spec (sha256) differs", p.stderr)

        two = self.shards(spec, 2, prefix="half")
        p = run(["merge", dirs[0], two[1], "-o", out("m5")])
        self.assertEqual(p.returncode, 65)
        self.assertIn("shard 1/3 but", p.stderr)

        p = run(["merge", dirs[0], dirs[1], dirs[2], "-o", out("m6")])
        self.assertEqual(p.returncode, 1, p.stderr)  # 'slow' is rejected: the run's verdict
        p = run(["merge", dirs[0], dirs[1], dirs[2], "-o", out("m6")])
        self.assertEqual(p.returncode, 65)
        self.assertIn("already holds a run", p.stderr)

        self.assertEqual(run(["merge", dirs[0]]).returncode, 64)
        self.assertEqual(run(["merge", "-o", out("m7")]).returncode, 64)

    def test_shards_run_differently_are_refused_even_with_force(self):
        # a --quick shard (at most 20 pairs a point) beside a full one, or shards of two
        # backends, are not one experiment: --force, for a changed spec or code, does not help
        spec = sim_spec(os.path.join(self.tmp, "two.yaml"), name="sim-two", batch_sizes=(1, 2))
        quick, full, quick2 = (os.path.join(self.tmp, n) for n in ("q1", "f2", "q2"))
        self.assertEqual(run(["run", spec, "-o", quick, "--shard", "1/2", "--quick"]).returncode, 0)
        self.assertEqual(run(["run", spec, "-o", full, "--shard", "2/2"]).returncode, 0)
        p = run(["merge", quick, full, "-o", os.path.join(self.tmp, "m"), "--force"])
        self.assertEqual(p.returncode, 65, p.stderr)
        self.assertIn(f"error: '{quick}' was run with --quick, '{full}' without it", p.stderr)
        self.assertEqual(run(["run", spec, "-o", quick2, "--shard", "2/2", "--quick"]).returncode,
                         0)
        p = run(["merge", quick, quick2, "-o", os.path.join(self.tmp, "mq")])
        self.assertIn(p.returncode, (0, 1, 2), p.stderr)
        self.assertIn("; --quick: at most 20 pairs per point)", p.stdout)  # the merged summary
        with open(os.path.join(quick2, "result.json")) as f:
            doc = json.load(f)
        doc["provenance"]["device"]["backend"] = "cpu"
        with open(os.path.join(quick2, "result.json"), "w") as f:
            json.dump(doc, f)
        p = run(["merge", quick, quick2, "-o", os.path.join(self.tmp, "mb"), "--force"])
        self.assertEqual(p.returncode, 65, p.stderr)
        self.assertIn(f"was measured on backend 'sim', '{quick2}' on 'cpu'", p.stderr)

    def test_shard_auto_reads_the_slurm_array(self):
        spec = self.spec("all")
        env = dict(os.environ, SLURM_ARRAY_TASK_ID="12", SLURM_ARRAY_TASK_MIN="11",
                   SLURM_ARRAY_TASK_COUNT="3")
        out = os.path.join(self.tmp, "auto")
        p = run(["run", spec, "-o", out, "--shard", "auto"], env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = validate_result(self, out)
        self.assertEqual(doc["provenance"]["run"]["shard"], "2/3")
        self.assertEqual([pt["id"] for pt in doc["points"]], ["b1/t96", "b2/t96"])
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        p = run(["run", spec, "--shard", "auto"], env=env)
        self.assertEqual(p.returncode, 64)
        self.assertIn("SLURM_ARRAY_TASK_ID", p.stderr)

    def test_slurm_writes_an_array_and_an_afterok_merge(self):
        spec = self.spec("geomean")
        p = run(["slurm", spec, "--shards", "3", "--partition", "gpu", "--time", "00:30:00",
                 "--gpus-per-task", "2", "--dry-run", "-o", os.path.join(self.tmp, "job")])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("#SBATCH --array=1-3", p.stdout)
        self.assertIn("#SBATCH --gres=gpu:2", p.stdout)
        self.assertIn("#SBATCH --partition=gpu", p.stdout)
        self.assertIn("#SBATCH --time=00:30:00", p.stdout)
        self.assertIn("--shard auto", p.stdout)
        self.assertIn("afterok", p.stdout)
        self.assertIn(" merge ", p.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "job")))  # dry run writes nothing

        job = os.path.join(self.tmp, "job2")
        p = run(["slurm", spec, "--shards", "2", "-o", job])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(job, "shards.sbatch")) as f:
            text = f.read()
        self.assertIn("#SBATCH --array=1-2", text)
        self.assertNotIn("--gres", text)  # the sim backend needs no GPU
        with open(os.path.join(job, "merge.sbatch")) as f:
            self.assertIn(os.path.join(job, "shard-2"), f.read())

        p = run(["slurm", spec, "--shards", "7", "--dry-run"])
        self.assertEqual(p.returncode, 64)
        self.assertIn("a shard would be empty", p.stderr)

    def test_slurm_escapes_an_awkward_run_folder(self):
        # sbatch splits an #SBATCH line at blanks and ends it at a '#'; '%' starts a pattern
        job = os.path.join(self.tmp, "my runs#1", "100%x")
        p = run(["slurm", self.spec("all"), "--shards", "2", "--partition", "gpu", "--dry-run",
                 "-o", job])
        self.assertEqual(p.returncode, 0, p.stderr)
        outputs = [sbatch_argument(line[len("#SBATCH "):])
                   for line in p.stdout.splitlines() if line.startswith("#SBATCH --output=")]
        pattern = job.replace("%", "%%")
        self.assertEqual(outputs, ["--output=" + pattern + "/logs/shard-%a.out",
                                   "--output=" + pattern + "/logs/merge.out"])
        self.assertIn("#SBATCH --partition=gpu\n", p.stdout)
        p = run(["slurm", self.spec("all"), "--dry-run", "-o", self.tmp + "/a\nb"])
        self.assertEqual(p.returncode, 64)
        self.assertIn("line break", p.stderr)

    def test_slurm_checks_partition_and_time_limit(self):
        spec = self.spec("all")
        for t in ("30", "30:00", "02:00:00", "1-12", "1-12:30", "1-12:30:00", "UNLIMITED"):
            p = run(["slurm", spec, "--time", t, "--dry-run"])
            self.assertEqual(p.returncode, 0, t + ": " + p.stderr)
            self.assertIn("#SBATCH --time=" + t + "\n", p.stdout)
        for t in ("1:2:3:4", "2h", "1-", "-1", ":30", "1-2:3:4:5", "1.5"):
            p = run(["slurm", spec, "--time", t, "--dry-run"])
            self.assertEqual(p.returncode, 64, t)
            self.assertIn("not a Slurm time limit", p.stderr)
        p = run(["slurm", spec, "--partition", "gpu,debug-2", "--dry-run"])
        self.assertEqual(p.returncode, 0, p.stderr)
        for part in ("gpu a", "gpu#1", "gpu,", ",gpu", "gpu;rm"):
            p = run(["slurm", spec, "--partition", part, "--dry-run"])
            self.assertEqual(p.returncode, 64, part)
            self.assertIn("not a partition name", p.stderr)

    def test_slurm_pins_backend_auto_and_finds_ktrial_in_path(self):
        spec = sim_spec(os.path.join(self.tmp, "auto.yaml"), name="auto-six",
                        candidates=CANDIDATES, batch_sizes=(1, 2), context_lengths=(64,))
        with open(spec) as f:
            text = f.read()
        with open(spec, "w") as f:
            f.write(text.replace("backend: sim", "backend: auto"))
        kernels = json.loads(run(["kernels", "--json"]).stdout)
        cuda_built = any(b["name"] == "cuda" for b in kernels["backends"])
        # each task resolving auto on its own node could mix backends across shards
        p = run(["slurm", spec, "--shards", "2", "--dry-run"])
        self.assertEqual(p.returncode, 0, p.stderr)
        want = "cuda" if cuda_built else "cpu"
        self.assertIn(f" run '{spec}' --backend {want} --shard auto", p.stdout)
        self.assertEqual("#SBATCH --gres=gpu:1" in p.stdout, cuda_built)
        self.assertIn(f"notice: backend auto: the jobs run --backend {want}", p.stderr)
        p = run(["slurm", spec, "--shards", "2", "--gpus-per-task", "0", "--dry-run"])
        self.assertIn(" --backend cpu --shard auto", p.stdout)
        self.assertNotIn("--gres", p.stdout)
        # a spec naming its backend is run as written
        p = run(["slurm", self.spec("all"), "--dry-run"])
        self.assertNotIn("--backend", p.stdout)

        exe = os.path.realpath(KTRIAL)
        env = dict(os.environ, PATH=os.path.dirname(exe) + ":/usr/bin:/bin")
        p = run(["slurm", spec, "--ktrial", os.path.basename(exe), "--dry-run"], env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(f"exec '{exe}' run ", p.stdout)  # not the current folder's 'ktrial'
        env["PATH"] = "/usr/bin:/bin"
        p = run(["slurm", spec, "--ktrial", "ktrial-not-here", "--dry-run"], env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("exec 'ktrial-not-here' run ", p.stdout)
        self.assertIn("not in PATH here", p.stderr)


def sbatch_argument(line):
    """The first argument of an #SBATCH line as sbatch reads it (_get_argument in Slurm's
    src/sbatch/opt.c): blanks split, backslash escapes, quotes group, an unescaped '#' ends."""
    out, quote, i = "", None, 0
    while i < len(line) and (quote or not line[i].isspace()):
        c = line[i]
        if c == "\\":
            i += 1
            c = line[i]
        elif quote and c == quote or not quote and c in "\"'":
            quote = None if quote else c
            i += 1
            continue
        elif not quote and c == "#":
            break
        out += c
        i += 1
    return out


if __name__ == "__main__":
    unittest.main()
