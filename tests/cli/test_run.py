"""'ktrial run' on the sim backend: verdicts, exit codes, failures, and the archive."""
import csv
import json
import math
import os
import re
import shutil
import tempfile
import unittest

from ktrial_cli import load_result, run, sim_spec, validate_result, verdicts


class RunVerdictTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt_run.")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_spec(self, **kw):
        spec = sim_spec(os.path.join(self.tmp, "spec.yaml"), **kw)
        out = os.path.join(self.tmp, "out")
        p = run(["run", spec, "-o", out])
        return p, out

    def test_faster_candidate_is_kept(self):
        p, out = self.run_spec(candidates={"fast": {"median_us": 80, "spread": 0.05}})
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        doc = validate_result(self, out)
        self.assertEqual(doc["decision"]["verdict"], "KEEP")
        c = doc["points"][0]["candidates"][0]
        self.assertAlmostEqual(c["speedup"], 1.25, delta=0.05)
        self.assertLessEqual(c["ci"][0], c["speedup"])
        self.assertGreaterEqual(c["ci"][1], c["speedup"])
        self.assertIn("KEEP", p.stdout)

    def test_a_short_plan_is_not_estimated_at_0_s(self):
        # a sim point of 64 elements plans well under a second: the plan line and the time
        # left after each point keep a decimal there, as the closing 'time:' line does
        p, _ = self.run_spec(batch_sizes=(1, 2))
        plan = re.search(r"^plan: 2 points to measure, estimate ([0-9.]+) s$", p.stderr, re.M)
        self.assertIsNotNone(plan, p.stderr)
        figure = plan.group(1)
        self.assertGreater(float(figure), 0)
        self.assertTrue("." in figure or float(figure) >= 10, figure)  # 0.3 s, 12 s
        left = re.search(r"\[1/2\] [^\n]*; estimate ([0-9.]+) s left\n", p.stderr)
        self.assertIsNotNone(left, p.stderr)
        self.assertTrue("." in left.group(1) or float(left.group(1)) >= 10, left.group(1))

    def test_slower_candidate_is_rejected(self):
        p, out = self.run_spec(candidates={"slow": {"median_us": 110, "spread": 0.05}})
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        doc = validate_result(self, out)
        c = doc["points"][0]["candidates"][0]
        self.assertEqual(c["verdict"], "REJECT")
        self.assertTrue(any("below 1" in r for r in c["reasons"]), c["reasons"])
        self.assertAlmostEqual(c["speedup"], 100 / 110, delta=0.03)

    def test_identical_variants_are_inconclusive(self):
        p, out = self.run_spec(candidates={"same": {"median_us": 100, "spread": 0.05}})
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        doc = validate_result(self, out)
        c = doc["points"][0]["candidates"][0]
        self.assertEqual(c["verdict"], "INCONCLUSIVE")
        self.assertEqual(c["n_pairs"], 200)  # undecided: ran to max_repetitions

    def test_input_sets_that_differ_are_flagged(self):
        # identical arms whose speed depends on their prepared state (sim 'placement': a
        # factor drawn per state, as where a real kernel's buffers lie): each input set has its
        # own states, so the sets' pairs differ and the point says so; without it they do not
        for placement, warned in ((0.05, True), (0, False)):
            with self.subTest(placement=placement):
                same = {"median_us": 100, "spread": 0.01, "placement": placement}
                spec = sim_spec(os.path.join(self.tmp, f"sets{placement}.yaml"), baseline=same,
                                candidates={"same": same}, trials={"min_repetitions": 200})
                out = os.path.join(self.tmp, f"sets{placement}")
                p = run(["run", spec, "-o", out])
                doc = validate_result(self, out)
                c = doc["points"][0]["candidates"][0]
                self.assertEqual(c["set_effect"]["warning"], warned, c["set_effect"])
                self.assertEqual(doc["decision"]["set_warnings"], int(warned))
                self.assertEqual("(input sets differ!)" in p.stdout, warned, p.stdout)
                self.assertEqual("the input sets' pairs differ" in p.stdout, warned, p.stdout)
                if warned:
                    self.assertLess(c["set_effect"]["p_value"], 0.01)
                    self.assertGreater(abs(c["set_effect"]["shift"]), 0.01)

    def test_prepared_states_are_drawn_and_their_spread_counted(self):
        # identical arms whose every prepared state is a fixed 3% (sigma) off: with one state
        # per arm and set that is the run's bias (a KEEP or REJECT at min_speedup 1); the arms
        # allocate through the backend here (extra_bytes), so each gets 8 states per set, the
        # pairs draw one index, and the spread between those clusters widens the interval
        same = {"median_us": 100, "spread": 0.01, "placement": 0.03, "extra_bytes": 64}
        spec = sim_spec(os.path.join(self.tmp, "placed.yaml"), baseline=same,
                        candidates={"same": same}, trials={"min_repetitions": 200})
        out = os.path.join(self.tmp, "placed")
        p = run(["run", spec, "-o", out])
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        doc = validate_result(self, out)
        point = doc["points"][0]
        c = point["candidates"][0]
        self.assertEqual(point["baseline"]["placements"], 8)
        self.assertEqual(c["placements"], 8)
        self.assertEqual({q["placement"] for q in c["pairs"]}, set(range(8)))
        self.assertEqual(c["placement_spread"]["clusters"], 16)
        self.assertGreater(c["placement_spread"]["tau2"], 1e-4)  # about (0.03 sqrt 2)^2
        self.assertEqual(c["verdict"], "INCONCLUSIVE")
        self.assertLess(c["ci"][0], 1.0)
        self.assertGreater(c["ci"][1], 1.0)
        # the state furthest from its arm's others is named; 3% (sigma) stays under 1.2x
        worst = c["placement_spread"]["worst_state"]
        self.assertIn(worst["arm"], ("baseline", "candidate"))
        self.assertLess(worst["time_ratio"], 1.2)
        self.assertGreater(worst["time_ratio"], 1 / 1.2)
        self.assertFalse(worst["warning"])
        self.assertNotIn("uneven buffer placement", p.stdout)

    def test_a_prepared_state_far_off_its_arms_others_is_named(self):
        # the baseline's states 40% (sigma) apart, as one state's buffers ran 2.3x slower on
        # this project's VM: the furthest is named in result.json, on the row and under it
        base = {"median_us": 100, "spread": 0.01, "placement": 0.4, "extra_bytes": 64}
        cand = {"median_us": 100, "spread": 0.01, "extra_bytes": 64}
        spec = sim_spec(os.path.join(self.tmp, "off.yaml"), baseline=base,
                        candidates={"same": cand}, trials={"min_repetitions": 100,
                                                           "max_repetitions": 100})
        out = os.path.join(self.tmp, "off")
        p = run(["run", spec, "-o", out])
        self.assertIn(p.returncode, (0, 1, 2), p.stdout + p.stderr)
        c = validate_result(self, out)["points"][0]["candidates"][0]
        worst = c["placement_spread"]["worst_state"]
        self.assertEqual(worst["arm"], "baseline")
        self.assertTrue(worst["warning"])
        self.assertGreater(abs(math.log(worst["time_ratio"])), math.log(1.2))
        # the row points at the warning, and the warning says what happened, what it means for
        # the verdict and what to do, in words a first-time reader follows
        mark = "(uneven buffer placement: see the warning below)"
        self.assertIn(mark, p.stdout)
        r = worst["time_ratio"]
        self.assertRegex(p.stdout, r"warning: uneven buffer placement at 1 point\. ktrial "
                         r"prepares each arm's inputs and buffers several times over "
                         r"\(placements\)[^\n]*one placement's calls ran "
                         rf"{max(r, 1 / r):.2f}x {'slower' if r >= 1 else 'faster'} than the "
                         r"median of the same arm's other placements \(the baseline, input set "
                         rf"{worst['input_set']}, placement {worst['placement']}, [^\n]*"
                         r"The verdict stands: its interval includes this spread, so it is "
                         r"wider, not wrong\. If it recurs")
        self.assertNotIn("others' median", p.stdout)
        self.assertIn(mark, run(["show", out]).stdout)

    def test_numerics_threshold_names_rel_l2_and_point(self):
        p, out = self.run_spec(candidates={"lossy": {"median_us": 50, "rel_error": 0.05}},
                               thresholds={"numerics": {"max_rel_l2": 0.01}})
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        doc = validate_result(self, out)
        c = doc["points"][0]["candidates"][0]
        self.assertEqual(c["verdict"], "REJECT")
        reason = " ".join(c["reasons"])
        self.assertIn("rel_l2", reason)
        self.assertIn("b1/t64", reason)
        self.assertAlmostEqual(c["worst_rel_l2"], 0.05, delta=1e-4)

    def test_failures_reject_the_culprit_and_the_run_goes_on(self):
        for mode, words in (("error", "injected failure"), ("nan", "NaN"),
                            ("unwritten", "unwritten"), ("crash", "signal 11")):
            with self.subTest(mode=mode):
                out = os.path.join(self.tmp, "out-" + mode)
                spec = sim_spec(os.path.join(self.tmp, mode + ".yaml"),
                                context_lengths=(64, 128),
                                candidates={"bad": {"median_us": 50, "fail": mode},
                                            "good": {"median_us": 80, "spread": 0.05}})
                p = run(["run", spec, "-o", out])
                self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
                doc = validate_result(self, out)
                v = verdicts(doc)
                for point in ("b1/t64", "b1/t128"):
                    self.assertEqual(v[(point, "bad")], "REJECT")
                    self.assertEqual(v[(point, "good")], "KEEP")  # still measured
                bad = doc["points"][0]["candidates"][0]
                self.assertIn(words, " ".join(bad["reasons"]))
                self.assertIn("b1/t64", " ".join(bad["reasons"]))
                # a candidate with no pairs has no p, no order check and no looks taken;
                # not the 0s of a fresh record (p = 0 reads as the strongest evidence)
                self.assertEqual(0, bad["n_pairs"])
                self.assertEqual("NaN", bad["p_value"])
                self.assertEqual("NaN", bad["order_effect"]["p_value"])
                self.assertEqual(0, bad["looks"])
                self.assertIsNone(bad["repeatable"])  # bitwise_repeatable is not set
                if mode == "crash":  # dropped from the point: it has no outputs nor memory
                    self.assertEqual([], bad["numerics"])
                    self.assertEqual("NaN", bad["worst_rel_l2"])
                    self.assertEqual("NaN", bad["memory_ratio"])

    def test_memory_ratio(self):
        p, out = self.run_spec(candidates={"hungry": {"median_us": 50, "extra_bytes": 1000000}},
                               thresholds={"memory": {"max_ratio": 1.5}})
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        c = validate_result(self, out)["points"][0]["candidates"][0]
        self.assertGreater(c["memory_ratio"], 1.5)
        self.assertIn("memory", " ".join(c["reasons"]))

    def test_archive_files(self):
        p, out = self.run_spec(context_lengths=(64, 128))
        self.assertEqual(p.returncode, 0, p.stderr)
        for name in ("result.json", "spec.yaml", "samples.csv", "points.jsonl"):
            self.assertTrue(os.path.exists(os.path.join(out, name)), name)
        with open(os.path.join(self.tmp, "spec.yaml"), "rb") as a, \
                open(os.path.join(out, "spec.yaml"), "rb") as b:
            self.assertEqual(a.read(), b.read())
        doc = load_result(out)
        self.assertEqual(doc["spec"]["parsed"]["threads"], 0)  # 0: every online core
        self.assertEqual(doc["provenance"]["run"]["threads"], os.cpu_count())
        with open(os.path.join(out, "points.jsonl")) as f:
            lines = [json.loads(line) for line in f]
        self.assertEqual([p["id"] for p in lines], [p["id"] for p in doc["points"]])
        self.assertEqual(lines, doc["points"])  # the same objects, so the schema covers both
        with open(os.path.join(out, "samples.csv")) as f:
            rows = list(csv.DictReader(f))
        pairs = sum(c["n_pairs"] for p in doc["points"] for c in p["candidates"])
        self.assertEqual(len(rows), 2 * pairs)  # one row per timed call
        first = doc["points"][0]["candidates"][0]["pairs"][0]
        row = [r for r in rows if r["point"] == "b1/t64" and r["repetition"] == "0"
               and r["arm"] == "baseline"][0]
        self.assertEqual(float(row["ns"]), first["baseline_ns"])  # exact round trip
        # tidy: one column per axis, whose run and code, the arm's role, name and variant
        self.assertEqual((row["batch_size"], row["context_length"]), ("1", "64"))
        self.assertEqual(row["model"], "")  # synthetic has no model axis: empty, never 0
        self.assertEqual((row["backend"], row["op"], row["dtype"]), ("sim", "synthetic", "fp32"))
        self.assertEqual(row["run_id"], doc["provenance"]["run"]["id"])
        self.assertEqual(row["commit"], doc["provenance"]["git"]["commit"] or "")
        self.assertEqual((row["arm_name"], row["variant"]), ("baseline", "lognormal"))
        cand = [r for r in rows if r["arm"] == "candidate"][0]
        self.assertEqual(cand["arm_name"], cand["pair_candidate"])
        self.assertEqual({r["position"] for r in rows}, {"0", "1"})

    def test_json_flag_prints_the_result(self):
        spec = sim_spec(os.path.join(self.tmp, "spec.yaml"))
        p = run(["run", spec, "-o", os.path.join(self.tmp, "o"), "--json"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["decision"]["verdict"], "KEEP")

    def test_quick_caps_repetitions(self):
        spec = sim_spec(os.path.join(self.tmp, "spec.yaml"),
                        candidates={"same": {"median_us": 100, "spread": 0.05}})
        out = os.path.join(self.tmp, "q")
        p = run(["run", spec, "-o", out, "--quick"])
        self.assertEqual(p.returncode, 2, p.stderr)
        doc = validate_result(self, out)
        self.assertTrue(doc["provenance"]["run"]["quick"])
        self.assertEqual(doc["points"][0]["candidates"][0]["n_pairs"], 20)
        self.assertIn("--quick", p.stdout)

    def test_quick_refuses_a_design_that_cannot_decide_in_its_cap(self):
        # 0.9999 split over 64 points needs 21 pairs for a finite interval: fine at 200 pairs,
        # never within --quick's 20, where every point used to end as an error (exit 70,
        # "the baseline or the set-up failed") after the whole matrix had run
        spec = sim_spec(os.path.join(self.tmp, "spec.yaml"), batch_sizes=range(1, 9),
                        context_lengths=range(1, 9),
                        thresholds={"latency": {"confidence": 0.9999}})
        self.assertEqual(run(["validate", spec]).returncode, 0)
        out = os.path.join(self.tmp, "q")
        p = run(["run", spec, "-o", out, "--quick"])
        self.assertEqual(p.returncode, 65, p.stderr)
        self.assertIn("error: --quick caps a point at 20 pairs: no look can decide", p.stderr)
        self.assertFalse(os.path.exists(out))  # refused before anything ran

    def test_orders_and_aggregate_geomean(self):
        for order in ("alternate", "grouped"):
            with self.subTest(order=order):
                out = os.path.join(self.tmp, "o-" + order)
                spec = sim_spec(os.path.join(self.tmp, order + ".yaml"), trials={"order": order},
                                thresholds={"aggregate": "geomean"})
                p = run(["run", spec, "-o", out])
                # grouped timings give no speed verdict without allow_grouped_verdicts
                self.assertEqual(p.returncode, 0 if order == "alternate" else 2,
                                 p.stdout + p.stderr)
                if order == "grouped":
                    self.assertIn("grouped", p.stdout)
                    spec2 = sim_spec(os.path.join(self.tmp, "g2.yaml"),
                                     trials={"order": order, "allow_grouped_verdicts": True},
                                     thresholds={"aggregate": "geomean"})
                    p2 = run(["run", spec2, "-o", out + "-allowed"])
                    self.assertEqual(p2.returncode, 0, p2.stdout + p2.stderr)
                doc = validate_result(self, out)
                firsts = [q["candidate_first"] for q in doc["points"][0]["candidates"][0]["pairs"]]
                if order == "alternate":
                    self.assertEqual(firsts[:8], [0, 1, 1, 0, 0, 1, 1, 0])
                else:
                    self.assertEqual(set(firsts), {0})
                self.assertAlmostEqual(doc["candidates"][0]["geomean_speedup"], 1.25, delta=0.05)

    def test_shards_split_the_matrix(self):
        spec = sim_spec(os.path.join(self.tmp, "spec.yaml"), context_lengths=(64, 96, 128),
                        batch_sizes=(1, 2))
        ids = []
        for shard in ("1/2", "2/2"):
            out = os.path.join(self.tmp, "shard" + shard[0])
            p = run(["run", spec, "-o", out, "--shard", shard])
            self.assertEqual(p.returncode, 0, p.stderr)
            doc = validate_result(self, out)
            self.assertEqual(doc["provenance"]["run"]["shard"], shard)
            ids.append([pt["id"] for pt in doc["points"]])
        self.assertEqual(ids[0], ["b1/t64", "b1/t128", "b2/t96"])
        self.assertEqual(ids[1], ["b1/t96", "b2/t64", "b2/t128"])
        self.assertEqual(run(["run", spec, "--shard", "3/2"]).returncode, 64)

    def test_bad_spec_exits_65_and_bad_flag_64(self):
        bad = os.path.join(self.tmp, "bad.yaml")
        with open(bad, "w") as f:
            f.write("version: 1\nname: Bad Name\n")
        self.assertEqual(run(["run", bad]).returncode, 65)
        self.assertEqual(run(["run", bad, "--frobnicate"]).returncode, 64)
        self.assertEqual(run(["run"]).returncode, 64)

    def cpu_attention_spec(self, backend):
        path = os.path.join(self.tmp, "attn.yaml")
        with open(path, "w") as f:
            f.write(f"""version: 1
name: tiny-attention
op: attention_decode
backend: {backend}
dtype: fp32
models: [{{name: tiny, hidden: 64, heads: 4, kv_heads: 2, head_dim: 16, intermediate: 128}}]
batch_sizes: [1]
context_lengths: [300]
inputs: {{distribution: llm, seed: 3, sets: 1}}
baseline: {{variant: dense}}
candidates:
  - {{name: same, variant: dense}}
trials: {{warmup: 1, min_repetitions: 6, max_repetitions: 6}}
""")
        return path

    def test_cuda_backend_without_device_exits_69(self):
        kernels = run(["kernels"]).stdout
        spec = self.cpu_attention_spec("cpu")
        p = run(["run", spec, "--backend", "cuda", "-o", os.path.join(self.tmp, "c")])
        self.assertEqual(p.returncode, 69, p.stdout + p.stderr)
        if "cuda " in kernels:  # a CUDA build on a machine without a GPU
            self.assertIn("no CUDA device: ", p.stderr)
        else:
            self.assertIn("not built into this ktrial", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "c", "result.json")))

    def test_auto_falls_back_to_the_cpu_with_a_notice(self):
        if "cuda  available" in run(["kernels"]).stdout:
            self.skipTest("a CUDA device answers here")
        out = os.path.join(self.tmp, "auto")
        p = run(["run", self.cpu_attention_spec("auto"), "-o", out])
        self.assertIn(p.returncode, (0, 1, 2), p.stderr)
        self.assertIn("notice: backend auto:", p.stderr)
        doc = validate_result(self, out)
        self.assertEqual(doc["spec"]["parsed"]["backend"], "cpu")
        self.assertEqual(doc["provenance"]["device"]["backend"], "cpu")

    def test_unwritable_folder_exits_74(self):
        spec = sim_spec(os.path.join(self.tmp, "spec.yaml"))
        locked = os.path.join(self.tmp, "locked")
        os.mkdir(locked)
        os.chmod(locked, 0o500)
        if os.access(locked, os.W_OK):  # root ignores permissions: use a file as a parent
            os.chmod(locked, 0o700)
            locked = os.path.join(self.tmp, "afile")
            open(locked, "w").close()
        p = run(["run", spec, "-o", os.path.join(locked, "out")])
        self.assertEqual(p.returncode, 74, p.stderr)
        self.assertIn(locked, p.stderr)


if __name__ == "__main__":
    unittest.main()
