"""'ktrial run' on the decoder_layer op: the per-stage profile in result.json (validated against
the schema) and in the summary, and the Amdahl arithmetic checked exactly on the sim backend,
whose virtual clock makes every stage last its bytes / bandwidth / its speedup param (or, with
compute_gflops, the longer of that and its flops / compute). Decode steps and prefill chunks
(phases: [decode, prefill]) in one run; the refusal of a decode-only stage for prefill."""
import os
import shutil
import tempfile
import unittest

from ktrial_cli import load_result, run, validate_result

MODEL = {"hidden": 96, "heads": 6, "kv_heads": 2, "head_dim": 32, "intermediate": 130}
STAGES = ["norm", "projections", "rope_kv", "attention", "mlp", "residual"]


def spec_text(backend, baseline, candidates, batch=2, context=700, layers=1, reps=10,
              dtype="fp32", phases=None, chunk=None, extra=()):
    model = ", ".join(f"{k}: {v}" for k, v in MODEL.items())
    params = f"layers: {layers}" + (f", chunk: {chunk}" if chunk else "")
    lines = [
        "version: 1",
        "name: decode-step-test",
        "op: decoder_layer",
        f"backend: {backend}",
        f"dtype: {dtype}",
        "threads: 2",
        f"models: [{{name: tiny, {model}}}]",
        f"batch_sizes: [{batch}]",
        f"context_lengths: [{context}]",
    ] + ([f"phases: [{', '.join(phases)}]"] if phases else []) + [
        f"inputs: {{distribution: llm, seed: 3, sets: 2, params: {{{params}}}}}",
        f"baseline: {{variant: layer, params: {baseline}}}",
        "candidates:",
    ]
    for name, params in candidates.items():
        lines.append(f"  - {{name: {name}, variant: layer, params: {params}}}")
    lines.append(f"trials: {{warmup: 1, min_repetitions: {reps}, max_repetitions: {reps}, "
                 "max_seconds_per_point: 60, flush_cache: false}")
    lines.append("thresholds: {numerics: {max_rel_l2: 5.0e-2}}")
    lines.extend(extra)
    return "\n".join(lines) + "\n"


def expected_bytes(batch, context, layers, size, chunk=1):
    """The sim variant's stage traffic, computed here from the shapes (not read from ktrial):
    weights once per call, activations once per row (batch x chunk rows), the cache once."""
    h, hq, hkv, d, i = (MODEL[k] for k in ("hidden", "heads", "kv_heads", "head_dim",
                                            "intermediate"))
    qkv = (hq + 2 * hkv) * d
    rows = batch * chunk
    return {
        "norm": layers * 4 * rows * h * size,
        "projections": layers * (qkv * h + h * hq * d) * size,
        "rope_kv": layers * rows * qkv * size,
        "attention": layers * 2 * batch * hkv * (context + chunk) * d * size,
        "mlp": layers * 3 * i * h * size,
        "residual": layers * 6 * rows * h * size,
    }


def expected_flops(batch, context, layers, chunk):
    """Each stage's flops for the sim's roofline: token j of the chunk attends to context + j + 1
    keys, every other stage costs per row."""
    h, hq, hkv, d, i = (MODEL[k] for k in ("hidden", "heads", "kv_heads", "head_dim",
                                            "intermediate"))
    qkv = (hq + 2 * hkv) * d
    rows = batch * chunk
    keys = batch * sum(context + j + 1 for j in range(chunk))
    return {
        "norm": layers * 6 * rows * h,
        "projections": layers * 2 * rows * (qkv * h + h * hq * d),
        "rope_kv": layers * 3 * rows * (hq + hkv) * d,
        "attention": layers * 4 * hq * d * keys,
        "mlp": layers * 2 * rows * 3 * i * h,
        "residual": layers * 2 * rows * h,
    }


class DecodeStepTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt_decode.")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_text(self, text, expect=None):
        path = os.path.join(self.tmp, "spec.yaml")
        with open(path, "w") as f:
            f.write(text)
        out = os.path.join(self.tmp, "out")
        p = run(["run", path, "-o", out])
        if expect is not None:
            self.assertEqual(p.returncode, expect, p.stdout + p.stderr)
        return p, out

    def test_sim_shares_and_amdahl_are_exact(self):
        """Two arms that differ only in the attention stage: the shares are the stage traffic's
        shares, and the end-to-end speedup equals the Amdahl bound of the attention share and
        the attention speedup (no other stage changed, no noise on the virtual clock)."""
        base = "{bandwidth_gbps: 10, other_us: 2}"
        cands = {"attn2x": "{bandwidth_gbps: 10, other_us: 2, attention_speedup: 2.0}"}
        p, out = self.run_text(spec_text("sim", base, cands, layers=2), expect=0)
        doc = validate_result(self, out)
        point = doc["points"][0]
        b = point["baseline"]["profile"]
        self.assertEqual([s["name"] for s in b["stages"]], STAGES)
        stage_ns = {k: v / 10.0 for k, v in expected_bytes(2, 700, 2, 4).items()}
        total = sum(stage_ns.values()) + 2000.0
        for s in b["stages"]:
            self.assertAlmostEqual(s["mean_ns"], stage_ns[s["name"]], delta=1e-6 * total)
            self.assertAlmostEqual(s["share"], stage_ns[s["name"]] / total, delta=1e-9)
        self.assertAlmostEqual(b["other_share"], 2000.0 / total, delta=1e-9)
        c = point["candidates"][0]
        sp = {s["name"]: s for s in c["stage_speedups"]["stages"]}
        self.assertAlmostEqual(sp["attention"]["speedup"], 2.0, delta=1e-9)
        self.assertAlmostEqual(sp["mlp"]["speedup"], 1.0, delta=1e-9)
        f = stage_ns["attention"] / total
        self.assertAlmostEqual(sp["attention"]["baseline_share"], f, delta=1e-9)
        bound = 1.0 / ((1 - f) + f / 2.0)
        self.assertAlmostEqual(sp["attention"]["amdahl_bound"], bound, delta=1e-9)
        self.assertAlmostEqual(sp["attention"]["amdahl_limit"], 1.0 / (1 - f), delta=1e-9)
        # the end-to-end speedup, by the means and by the paired estimate the verdict uses, is
        # the bound: never above it
        e2e = c["stage_speedups"]["end_to_end_speedup"]
        self.assertAlmostEqual(e2e, bound, delta=1e-9)
        self.assertLessEqual(c["speedup"], bound * (1 + 1e-9))
        self.assertAlmostEqual(c["speedup"], bound, delta=1e-6)
        self.assertIn("stages of baseline: attention", p.stdout)
        self.assertIn("attention 2.00x (Amdahl bound %.2fx)" % bound, p.stdout)
        shown = run(["show", out])
        self.assertEqual(shown.returncode, 0, shown.stderr)
        self.assertIn("attention 2.00x (Amdahl bound %.2fx)" % bound, shown.stdout)

    def test_sim_two_stages_changed(self):
        """Stages that change together: each stage's bound alone is below the end-to-end
        speedup, and the end-to-end time is the sum of the new stage times."""
        base = "{bandwidth_gbps: 10}"
        cands = {"both": "{bandwidth_gbps: 10, attention_speedup: 3.0, mlp_speedup: 1.5}"}
        p, out = self.run_text(spec_text("sim", base, cands), expect=0)
        c = validate_result(self, out)["points"][0]["candidates"][0]
        sp = {s["name"]: s for s in c["stage_speedups"]["stages"]}
        e2e = c["stage_speedups"]["end_to_end_speedup"]
        fa, fm = sp["attention"]["baseline_share"], sp["mlp"]["baseline_share"]
        self.assertAlmostEqual(e2e, 1.0 / ((1 - fa - fm) + fa / 3.0 + fm / 1.5), delta=1e-9)
        self.assertLess(sp["attention"]["amdahl_bound"], e2e)
        self.assertLess(sp["mlp"]["amdahl_bound"], e2e)
        # the sim's stages fill its calls exactly: nothing is left over, and rounding does not
        # show as a negative share
        self.assertRegex(p.stdout, r"stages of both: [^\n]*, other 0\.0%\n")
        self.assertNotIn("other -", p.stdout)

    def test_cpu_profile_and_fusion_settings(self):
        """The real CPU variant: every fusion setting passes the numerics gate, and every arm
        records a profile whose stages account for the measured time (shares in [0, 1])."""
        cands = {"own": "{fusion: own}", "mlp": "{fusion: mlp}", "layer": "{fusion: layer}",
                 "ffd": "{attention: ffd, attention.delta: 7}"}
        p, out = self.run_text(spec_text("cpu", "{fusion: none}", cands, reps=6, dtype="bf16"))
        self.assertIn(p.returncode, (0, 1, 2), p.stdout + p.stderr)
        doc = validate_result(self, out)
        point = doc["points"][0]
        arms = [point["baseline"]] + point["candidates"]
        for a in arms:
            self.assertFalse(a["failed"], a.get("failure"))
            for n in a["numerics"]:
                self.assertLess(n["rel_l2"], 5e-2)
            prof = a["profile"]
            self.assertEqual([s["name"] for s in prof["stages"]], STAGES)
            shares = [s["share"] for s in prof["stages"]] + [prof["other_share"]]
            self.assertAlmostEqual(sum(shares), 1.0, delta=1e-9)
            for s in prof["stages"]:
                self.assertGreaterEqual(s["share"], 0.0)
            self.assertIn("timer_read_ns", a["metrics"])
        for c in point["candidates"]:
            self.assertIn("stage_speedups", c)
        self.assertIn("stages of own:", p.stdout)

    def test_sim_prefill_amdahl_is_exact(self):
        """A prefill chunk on the sim roofline: each stage lasts the longer of its traffic and
        its flops (computed here from the shapes), and the attention-only candidate's
        end-to-end speedup is the Amdahl bound of the attention share; the decode point of the
        same run keeps the decode traffic; the cost per call counts batch x chunk tokens."""
        arm = "bandwidth_gbps: 10, compute_gflops: 2, other_us: 2"
        cands = {"attn2x": "{%s, attention_speedup: 2.0}" % arm}
        text = spec_text("sim", "{%s}" % arm, cands, layers=2, phases=["decode", "prefill"],
                         chunk=21, extra=["costs: {usd_per_hour: 3.6}"])
        p, out = self.run_text(text, expect=0)
        doc = validate_result(self, out)
        points = {pt["id"]: pt for pt in doc["points"]}
        self.assertEqual(sorted(points), ["tiny/decode/b2/t700", "tiny/prefill/b2/t700"])
        self.assertIn("tiny/prefill/b2/t700", p.stdout)
        for phase, chunk in (("decode", 1), ("prefill", 21)):
            point = points[f"tiny/{phase}/b2/t700"]
            traffic = expected_bytes(2, 700, 2, 4, chunk)
            flops = expected_flops(2, 700, 2, chunk)
            stage_ns = {k: max(traffic[k] / 10.0, flops[k] / 2.0) for k in traffic}
            if phase == "prefill":  # the chunk makes the projections and MLP compute-bound
                self.assertGreater(flops["mlp"] / 2.0, traffic["mlp"] / 10.0)
            total = sum(stage_ns.values()) + 2000.0
            b = point["baseline"]["profile"]
            for s in b["stages"]:
                self.assertAlmostEqual(s["share"], stage_ns[s["name"]] / total, delta=1e-9)
            c = point["candidates"][0]
            f = stage_ns["attention"] / total
            bound = 1.0 / ((1 - f) + f / 2.0)
            sp = {s["name"]: s for s in c["stage_speedups"]["stages"]}
            self.assertAlmostEqual(sp["attention"]["amdahl_bound"], bound, delta=1e-9)
            self.assertAlmostEqual(c["stage_speedups"]["end_to_end_speedup"], bound, delta=1e-9)
            self.assertAlmostEqual(c["speedup"], bound, delta=1e-6)
            self.assertEqual(c["costs"]["tokens_per_call"], 2 * chunk)

    def test_cpu_decode_and_prefill_in_one_run(self):
        """phases [decode, prefill] on the CPU variant: both points pass the numerics gate in
        fusion none (stage variants, causal kernel) and layer, the prefill outputs have the
        chunk's shapes, and the ids and the summary name the phase."""
        cands = {"layer": "{fusion: layer}"}
        text = spec_text("cpu", "{fusion: none, gemm: blas}", cands, reps=8, context=150,
                         phases=["decode", "prefill"], chunk=19)
        p, out = self.run_text(text)
        self.assertIn(p.returncode, (0, 1, 2), p.stdout + p.stderr)
        doc = validate_result(self, out)
        ids = [pt["id"] for pt in doc["points"]]
        self.assertEqual(ids, ["tiny/decode/b2/t150", "tiny/prefill/b2/t150"])
        for pt in doc["points"]:
            for a in [pt["baseline"]] + pt["candidates"]:
                self.assertFalse(a["failed"], a.get("failure"))
                for n in a["numerics"]:
                    self.assertLess(n["rel_l2"], 1e-4)
                self.assertEqual([s["name"] for s in a["profile"]["stages"]], STAGES)
            self.assertIn(pt["id"], p.stdout)
        shown = run(["show", out, "--json"])
        self.assertEqual(shown.returncode, 0, shown.stderr)

    def test_ffd_refused_for_prefill_at_its_place(self):
        """FFD attends one query per sequence: with phases listing prefill, validate refuses
        the arm at its 'attention' param (exit 65), and accepts it for decode only."""
        path = os.path.join(self.tmp, "ffd.yaml")
        with open(path, "w") as f:
            f.write(spec_text("cpu", "{fusion: none}", {"ffd": "{attention: ffd}"},
                              phases=["decode", "prefill"]))
        p = run(["validate", path])
        self.assertEqual(p.returncode, 65, p.stdout + p.stderr)
        self.assertRegex(p.stderr, r"ffd\.yaml:14:\d+: candidates\[0\]\.params\.attention: "
                                   r"attention 'ffd' is a decode kernel.*phases lists 'prefill'")
        with open(path, "w") as f:
            f.write(spec_text("cpu", "{fusion: none}", {"ffd": "{attention: ffd}"},
                              phases=["decode"]))
        p = run(["validate", path])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_bad_stage_variant_is_named_at_its_place(self):
        path = os.path.join(self.tmp, "bad.yaml")
        with open(path, "w") as f:
            f.write(spec_text("cpu", "{attention: fdd}", {"c": "{gemm: blass}"}))
        p = run(["validate", path])
        self.assertEqual(p.returncode, 65, p.stdout + p.stderr)
        self.assertRegex(p.stderr, r"bad\.yaml:11:\d+: baseline\.params\.attention: expected one "
                                   r"of dense\|ffd, got string \"fdd\"; did you mean 'ffd'")
        self.assertRegex(p.stderr, r"bad\.yaml:13:\d+: candidates\[0\]\.params\.gemm: .*blass")


    def test_a_bad_model_shape_names_only_the_rule_it_breaks(self):
        global MODEL
        saved = dict(MODEL)
        try:
            # an odd head_dim passes the catalog's checks and reaches the op's: the message
            # says what is wrong with it, not also the heads rule it meets
            for key, value, says, not_says in (
                    ("head_dim", 23, r"head_dim \(23\) must be even", "kv_heads"),):
                with self.subTest(key=key):
                    MODEL = dict(saved, **{key: value})
                    path = os.path.join(self.tmp, f"shape-{key}.yaml")
                    with open(path, "w") as f:
                        f.write(spec_text("cpu", "{fusion: none}", {"c": "{fusion: none}"}))
                    p = run(["validate", path])
                    self.assertEqual(p.returncode, 65, p.stdout + p.stderr)
                    self.assertRegex(p.stderr, says)
                    self.assertNotIn(not_says, p.stderr.split("decoder_layer:")[1])
                    # once, at the model's entry (line 7), for its one point
                    self.assertEqual(p.stderr.count("must be even"), 1, p.stderr)
                    self.assertRegex(p.stderr, r"shape-head_dim\.yaml:7:\d+: models\[0\]: "
                                     r"point 'tiny/decode/b2/t700': decoder_layer")
        finally:
            MODEL = saved


if __name__ == "__main__":
    unittest.main()
