"""What a newcomer reads: the summary's labelled columns and legend, "—" for what was not
measured, INTERRUPTED / NOT RUN / a shard / --quick on the overall line, plurals, throughput
against KT_ROOFLINE, colour only on a terminal, show's state and --json, every command's --json
against its schema in schemas/, "did you mean" for options, spec keys and enum values, integers
printed as integers, and compare's table without "nan" or "-"."""
import json
import os
import pty
import re
import shutil
import signal
import subprocess
import tempfile
import unittest

from ktrial_cli import KTRIAL, SOURCE, run, sim_spec

NONE = "\u2014"  # —
ESC = "\033["


def schema(name):
    with open(os.path.join(SOURCE, "schemas", name)) as f:
        return json.load(f)


class OutputTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt_output.")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def valid(self, doc, name):
        import jsonschema
        errors = sorted(jsonschema.Draft7Validator(schema(name)).iter_errors(doc), key=str)
        self.assertEqual([], [f"{list(e.path)}: {e.message}" for e in errors[:5]])

    def run_sim(self, name, args=(), env=None, codes=(0, 1, 2), **spec):
        spec_path = sim_spec(self.path(name + ".yaml"), name=name, **spec)
        out = self.path(name)
        p = run(["run", spec_path, "-o", out] + list(args), env=env)
        self.assertIn(p.returncode, codes, p.stdout + p.stderr)
        return out, p

    def show_json(self, folder):
        p = run(["show", "--json", folder])
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.valid(doc, "show.schema.json")
        return doc

    # ---- the summary table ---------------------------------------------------------------

    def test_columns_are_labelled_and_explained(self):
        _, p = self.run_sim("labels", batch_sizes=(1,), context_lengths=(64,))
        lines = p.stdout.splitlines()
        header = lines[0]
        for label in ["point", "candidate", "base median", "cand median", "speedup (HL) [CI]",
                      "p (adj.)", "rel_l2", "noisy", "cand throughput", "verdict"]:
            self.assertIn(label, header)
        self.assertTrue(lines[1].startswith("(medians per call"), lines[1])
        self.assertIn("Hodges-Lehmann", lines[1])
        self.assertIn(f"{NONE}: not measured", lines[1])
        # one point, one candidate: singular words, and the geomean says what it is over
        self.assertIn("overall: KEEP over 1 point (", p.stdout)
        self.assertNotRegex(p.stdout, r"\b1 points\b")
        self.assertIn("geomean speedup", p.stdout)
        self.assertIn("over 1 of 1 point", p.stdout)
        row = next(line for line in lines if line.startswith("t64") or "/t64" in line)
        self.assertRegex(row, r"\d+\.\d+ us +\d+\.\d+ us +1\.\d{3} \[1\.\d{3}, 1\.\d{3}\]")
        self.assertRegex(row, r" 0/\d+ ")  # noisy pairs of the pairs
        self.assertIn("Hodges-Lehmann, 95% CI;", lines[1])
        # the legend gives the confidence as set: 0.975 is not "98%", 0.9999 not "100%"
        _, p = self.run_sim("labels-975", batch_sizes=(1,), context_lengths=(64,),
                            thresholds={"latency": {"confidence": 0.975}})
        self.assertIn("Hodges-Lehmann, 97.5% CI;", p.stdout.splitlines()[1])

    def test_unmeasured_cells_show_a_dash_never_zero_or_nan(self):
        # the baseline crashes: nothing at that point was measured
        _, p = self.run_sim("unmeasured", codes=(70,),
                            baseline={"median_us": 100, "fail": "crash"},
                            candidates={"cand": {"median_us": 80}, "other": {"median_us": 90}})
        rows = [l for l in p.stdout.splitlines() if l.startswith("b1/t64")]
        self.assertEqual(len(rows), 2, p.stdout)
        for row in rows:
            self.assertNotIn("0 ns", row)
            self.assertNotIn("nan", row.lower())
            self.assertNotIn("0.000 [0.000, 0.000]", row)
            self.assertGreaterEqual(row.count(NONE), 5, row)
        doc = self.show_json(self.path("unmeasured"))
        c = doc["points"][0]["candidates"][0]
        self.assertIsNone(c["base_median_ns"])
        self.assertIsNone(c["speedup"])
        self.assertIsNone(c["ci"])

    def test_interrupted_run_says_so_and_never_inconclusive(self):
        spec_path = sim_spec(self.path("stop.yaml"), name="stop", context_lengths=(64, 128, 256),
                             baseline={"median_us": 100, "sleep_us": 20000},
                             candidates={"cand": {"median_us": 100, "sleep_us": 20000}},
                             trials={"max_repetitions": 400, "min_repetitions": 300})
        out = self.path("stop")
        proc = subprocess.Popen([KTRIAL, "run", spec_path, "-o", out], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        for line in proc.stderr:
            if re.match(r"^\[1/3\] .*timed pairs", line):
                break
        proc.send_signal(signal.SIGINT)
        stdout, _ = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 130, stdout)
        # the point cut short has no verdict and is not counted as finished
        self.assertIn("overall: INTERRUPTED after 0 of 3 points", stdout)
        self.assertRegex(stdout, r"not measured: interrupted after \d+ pairs? at b1/t64")
        self.assertNotIn("error: interrupted", stdout)
        self.assertNotIn("overall: INCONCLUSIVE", stdout)
        self.assertNotIn("overall: KEEP", stdout)
        self.assertRegex(stdout, r"t128 .*NOT RUN \(interrupted\)")
        shown = run(["show", out])
        self.assertIn("overall: INTERRUPTED", shown.stdout)
        self.assertIn("state:   interrupted, exit code 130", shown.stdout)
        doc = self.show_json(out)
        self.assertEqual(doc["status"], "interrupted")
        self.assertEqual(doc["exit_code"], 130)
        self.assertEqual(doc["overall"]["state"], "INTERRUPTED")
        self.assertFalse(doc["overall"]["whole_run"])
        # the start record of a run killed before its end: no decision yet, the spec's settings
        with open(os.path.join(out, "result.json")) as f:
            start = json.load(f)
        start.update(status="running", decision=None, points=[], candidates=[])
        with open(os.path.join(out, "result.json"), "w") as f:
            json.dump(start, f)
        doc = self.show_json(out)
        self.assertEqual(doc["status"], "running")
        self.assertEqual((doc["overall"]["aggregate"], doc["overall"]["min_speedup"]), ("all", 1))

    def test_a_shard_never_reads_as_the_whole_experiment(self):
        out, p = self.run_sim("shard", ["--shard", "1/2", "--quick"], context_lengths=(64, 128))
        self.assertNotIn("overall: KEEP", p.stdout)
        self.assertIn("overall: shard 1/2 only, KEEP over its 1 point; not the experiment's "
                      "verdict", p.stdout)
        self.assertIn("--quick: at most", p.stdout)
        shown = run(["show", out])
        self.assertNotIn("overall: KEEP", shown.stdout)
        self.assertIn("shard 1/2, not the whole experiment", shown.stdout)
        self.assertRegex(shown.stdout, r"state: +complete, exit code 0; --quick \(at most \d+ "
                                       r"pairs per point\)")
        doc = self.show_json(out)
        self.assertEqual(doc["shard"], {"index": 1, "count": 2})
        self.assertTrue(doc["quick"]["on"])
        self.assertFalse(doc["overall"]["whole_run"])
        self.assertEqual(doc["overall"]["verdict"], "KEEP")
        whole, _ = self.run_sim("whole")
        self.assertTrue(self.show_json(whole)["overall"]["whole_run"])

    def test_throughput_and_the_roofline(self):
        env = dict(os.environ, KT_ROOFLINE="1000:100")
        _, p = self.run_sim("roof", env=env)
        self.assertRegex(p.stdout, r"GB/s \(\d+%\)")
        self.assertIn("KT_ROOFLINE=1000 GFLOP/s : 100 GB/s", p.stdout)
        env.pop("KT_ROOFLINE")
        _, p = self.run_sim("noroof", env=env)
        self.assertRegex(p.stdout, r"\d GB/s ")
        self.assertNotRegex(p.stdout, r"GB/s \(\d+%\)")
        self.assertNotIn("KT_ROOFLINE", p.stdout)

    def test_colour_only_on_a_terminal(self):
        _, p = self.run_sim("pipe")
        self.assertNotIn(ESC, p.stdout)
        folder = self.path("pipe")

        def on_tty(env):
            master, slave = pty.openpty()
            proc = subprocess.Popen([KTRIAL, "show", folder], stdout=slave, stderr=slave,
                                    env=env)
            os.close(slave)
            chunks = []
            while True:
                try:
                    data = os.read(master, 65536)
                except OSError:
                    break
                if not data:
                    break
                chunks.append(data)
            proc.wait(timeout=60)
            os.close(master)
            return b"".join(chunks).decode()

        base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
        self.assertIn(ESC + "1;32mKEEP", on_tty(dict(base, TERM="xterm")))
        self.assertNotIn(ESC, on_tty(dict(base, TERM="xterm", NO_COLOR="1")))
        self.assertNotIn(ESC, on_tty(dict(base, TERM="dumb")))

    # ---- machine output --------------------------------------------------------------------

    def test_kernels_models_env_json_match_their_schemas(self):
        p = run(["kernels", "--json"])
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.valid(doc, "kernels.schema.json")
        ops = {o["name"]: o for o in doc["ops"]}
        self.assertIn("gemm", ops)
        self.assertTrue(any(v["backend"] == "cpu" for v in ops["gemm"]["variants"]))
        # each op's matrix axes, as the spec keys that span them
        self.assertEqual(ops["gemm"]["axes"],
                         ["models", "phases", "roles", "batch_sizes", "context_lengths"])
        self.assertFalse(ops["gemm"]["decode_context"])  # a decode GEMM's rows are the batch
        self.assertEqual(ops["attention_decode"]["axes"],
                         ["models", "batch_sizes", "context_lengths"])
        self.assertTrue(ops["decoder_layer"]["decode_context"])
        text = run(["kernels"]).stdout
        self.assertIn("op gemm: ", text)
        self.assertIn("  axes: models, phases, roles, batch_sizes, context_lengths (context_lengths "
                      "at prefill only", text)
        p = run(["models", "--json"])
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.valid(doc, "models.schema.json")
        self.assertIn("qwen2.5-7b", [m["name"] for m in doc["models"]])
        p = run(["env", "--json"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.valid(json.loads(p.stdout), "env.schema.json")

    def test_validate_json_gives_problems_as_objects(self):
        good = sim_spec(self.path("good.yaml"))
        with open(good) as f:
            text = f.read()
        bad = self.path("bad.yaml")
        with open(bad, "w") as f:
            f.write(text.replace("min_repetitions", "min_reps"))
        tab = self.path("tab.yaml")
        with open(tab, "w") as f:
            f.write("version: 1\nname: x\n\top: gemm\n")
        p = run(["validate", "--json", "--plan", good, bad, tab])
        self.assertEqual(p.returncode, 65, p.stderr)
        doc = json.loads(p.stdout)
        self.valid(doc, "validate.schema.json")
        self.assertFalse(doc["ok"])
        by_path = {s["path"]: s for s in doc["specs"]}
        self.assertTrue(by_path[good]["ok"])
        self.assertIn("plan", by_path[good])
        problem = by_path[bad]["problems"][0]
        self.assertEqual(problem["file"], bad)
        self.assertEqual(problem["path"], "trials")
        self.assertIn("did you mean 'min_repetitions'?", problem["message"])
        self.assertIsInstance(problem["line"], int)
        self.assertIsInstance(problem["col"], int)
        problem = by_path[tab]["problems"][0]
        self.assertEqual((problem["line"], problem["col"]), (3, 1))
        self.assertIn("tabs are not allowed in YAML indentation", problem["message"])
        ok = run(["validate", "--json", good])
        self.assertEqual(ok.returncode, 0)
        self.assertTrue(json.loads(ok.stdout)["ok"])

    def test_compare_json_and_text(self):
        old, _ = self.run_sim("old", candidates={"cand": {"median_us": 80},
                                                  "broken": {"median_us": 80, "fail": "crash"}})
        new, _ = self.run_sim("new", candidates={"cand": {"median_us": 80},
                                                  "broken": {"median_us": 80, "fail": "crash"}})
        p = run(["compare", old, new, "--json", "--force"])
        self.assertIn(p.returncode, (0, 1), p.stderr)
        self.valid(json.loads(p.stdout), "compare.schema.json")
        p = run(["compare", old, new, "--force"])
        self.assertIn(p.returncode, (0, 1), p.stderr)
        table = p.stdout.split("\n\n")[0]
        self.assertNotIn("nan", table.lower())
        self.assertNotRegex(table, r"(^|\s)-(\s|$)")
        self.assertIn(NONE, table)  # the crashing candidate has no speedup on either side

    # ---- suggestions and numbers -----------------------------------------------------------

    def test_did_you_mean(self):
        spec = sim_spec(self.path("s.yaml"))
        p = run(["run", spec, "--quik"])
        self.assertEqual(p.returncode, 64)
        self.assertIn("unknown option '--quik'; did you mean '--quick'?", p.stderr)
        p = run(["validate", spec, "--backend", "cdua"])
        self.assertEqual(p.returncode, 64)
        self.assertIn("did you mean 'cuda'?", p.stderr)
        p = run(["kernels", "--backend", "cpy"])
        self.assertEqual(p.returncode, 64)
        self.assertIn("unknown value 'cpy' for '--backend'; did you mean 'cpu'?", p.stderr)
        with open(spec) as f:
            text = f.read()
        for old, new, hint in [("min_repetitions", "min_reps", "'min_repetitions'"),
                               ("op: synthetic", "op: synth", "'synthetic'"),
                               ("backend: sim", "backend: smi", "'sim'")]:
            with self.subTest(key=new):
                wrong = self.path("wrong.yaml")
                with open(wrong, "w") as f:
                    f.write(text.replace(old, new))
                p = run(["validate", wrong])
                self.assertEqual(p.returncode, 65, p.stderr)
                self.assertRegex(p.stderr, rf"wrong\.yaml:\d+:\d+: .*did you mean {hint}")

    def test_integers_print_as_integers(self):
        p = run(["kernels"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotRegex(p.stdout, r"\d\.\d+e[+-]\d+")
        self.assertIn("[0, 1000000000000]", p.stdout)
        spec = sim_spec(self.path("big.yaml"), context_lengths=(20000000,))
        p = run(["validate", spec])
        self.assertEqual(p.returncode, 65)
        self.assertIn("16777216", p.stderr)
        self.assertNotRegex(p.stderr, r"\d\.\d+e[+-]\d+")


if __name__ == "__main__":
    unittest.main()
