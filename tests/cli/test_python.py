"""Python arms through the built binary (docs/python.md): a built-in C baseline against Python
candidates in numpy and torch, every timed call checked; a wrong candidate, one returning an
input or an earlier call's value, and one raising mid-run are each a REJECT with the reason;
a file that does not import, a missing function and a wrong signature are validation errors
(exit 65) at the key's file:line:col; the torch variants run in their dtypes against the
float64 reference, and 'kernels' lists them with the bridge's cost. Skipped where
ktrial was built without Python."""
import os
import re
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from ktrial_cli import KTRIAL, SOURCE, run, validate_result  # noqa: E402

ARMS = os.path.join(SOURCE, "tests", "python")
TINY = "{name: tiny, hidden: 96, heads: 4, kv_heads: 2, head_dim: 32, intermediate: 200}"


def spec_text(op, dtype, baseline, candidates, extra=()):
    lines = ["version: 1", "name: python-test", f"op: {op}", "backend: cpu", f"dtype: {dtype}",
             "threads: 1", f"models: [{TINY}]", "batch_sizes: [3]", "context_lengths: [24]"]
    lines += list(extra)
    lines += ["inputs: {distribution: llm, seed: 4, sets: 2}", f"baseline: {baseline}",
              "candidates:"]
    lines += [f"  - {c}" for c in candidates]
    lines += ["trials: {warmup: 1, min_repetitions: 10, max_repetitions: 12, "
              "max_seconds_per_point: 2, flush_cache: false}",
              "thresholds: {numerics: {max_rel_l2: 1.0e-2}, latency: {min_speedup: 0.001}}"]
    return "\n".join(lines) + "\n"


class Base(unittest.TestCase):
    def setUp(self):
        r = run(["kernels"]) if KTRIAL else None
        if not r or "Python was not found when ktrial was built" in r.stdout:
            self.skipTest("needs ktrial built with Python")
        self.tmp = tempfile.mkdtemp(prefix="kt-python-")
        shutil.copy(os.path.join(ARMS, "arms.py"), self.tmp)
        shutil.copy(os.path.join(ARMS, "broken.py"), self.tmp)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def write(self, text):
        path = os.path.join(self.tmp, "spec.yaml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_spec(self, text):
        out = os.path.join(self.tmp, "out")
        shutil.rmtree(out, ignore_errors=True)
        r = run(["run", self.write(text), "-o", out, "--json"], timeout=600)
        self.assertIn(r.returncode, (0, 1, 2), r.stderr[-3000:])  # a verdict, whichever
        doc = validate_result(self, out)
        return {c["name"]: c for p in doc["points"] for c in p["candidates"]}, doc


class Candidates(Base):
    def test_numpy_and_torch_candidates_against_a_c_baseline(self):
        cands, _ = self.run_spec(spec_text("gemm", "fp32", "{variant: blas}", [
            "{name: np, python: arms.py:gemm}",
            "{name: np-returns, python: arms.py:gemm_returns, framework: numpy}",
            "{name: th, python: arms.py:gemm_torch, framework: torch}",
            "{name: wrong, python: arms.py:wrong}",
            "{name: alias, python: arms.py:returns_input}",
            "{name: memo, python: arms.py:returns_memo}",
            "{name: later, python: arms.py:fails_later}",
        ], ["phases: [decode]", "roles: [o]"]))
        for name in ("np", "np-returns", "th"):
            c = cands[name]
            self.assertEqual(c["verdict"], "KEEP", (name, c["reasons"]))
            self.assertIsNone(c["failure"], name)
            # every timed call's output checked
            self.assertGreaterEqual(c["call_checks"]["calls"], c["n_pairs"], name)
            self.assertLess(c["worst_rel_l2"], 1e-5, name)
        self.assertEqual(cands["np"]["variant"], "arms.py:gemm")
        wrong = cands["wrong"]
        self.assertEqual(wrong["verdict"], "REJECT")
        self.assertIn("rel_l2", wrong["reason_codes"])
        alias = cands["alias"]
        self.assertEqual(alias["verdict"], "REJECT")
        self.assertIn("check aliasing: the value returned for output 'y' shares memory with "
                      "input 'x'", alias["failure"])
        memo = cands["memo"]
        self.assertEqual(memo["verdict"], "REJECT")
        self.assertRegex(memo["failure"], r"check aliasing: the value returned for output 'y' "
                                          r"shares memory with a value returned \d calls? earlier")
        later = cands["later"]
        self.assertEqual(later["verdict"], "REJECT")
        self.assertRegex(later["failure"], r"the function raised: traceback: .*File \"arms.py\", "
                                           r"line \d+, in fails_later: raise RuntimeError\(.*"
                                           r"\| RuntimeError: gave up at call \d+")
        self.assertGreater(later["call_checks"]["calls"], 0)  # it failed mid-run, not at once

    def test_a_bf16_spec_refuses_numpy_at_the_framework(self):
        path = self.write(spec_text("gemm", "bf16", "{variant: blas}",
                                    ["{name: np, python: arms.py:gemm}"],
                                    ["phases: [decode]", "roles: [o]"]))
        r = run(["validate", path])
        self.assertEqual(r.returncode, 65, r.stderr)
        self.assertRegex(r.stderr, r"spec.yaml:\d+:\d+: .*numpy has no bfloat16")


class Validation(Base):
    def test_the_examples_validate(self):
        for name in ("attention.yaml", "gemm-numpy.yaml"):
            r = run(["validate", os.path.join(SOURCE, "examples", "python", name)])
            self.assertEqual(r.returncode, 0, (name, r.stderr))

    def test_import_error_missing_function_and_signature_at_their_keys(self):
        text = spec_text("gemm", "fp32", "{variant: blas}", [
            "{name: a, python: broken.py:gemm}",
            "{name: b, python: arms.py:nowhere}",
            "{name: c, python: arms.py:two_args}",
            "{name: d, python: arms.py:not_a_function}",
            "{name: e, python: missing.py:gemm}",
        ], ["phases: [decode]", "roles: [o]"])
        path = self.write(text)
        r = run(["validate", path])
        self.assertEqual(r.returncode, 65, r.stderr)
        lines = text.splitlines()

        def at(name):
            row = next(i for i, l in enumerate(lines) if f"{{name: {name}," in l)
            return f"spec.yaml:{row + 1}:{lines[row].index('python:') + len('python: ') + 1}: "

        self.assertRegex(r.stderr, re.escape(at("a")) + r"candidates\[0\]\.python: 'broken.py:"
                         r"gemm': cannot import .*broken.py': traceback: File \"broken.py\", "
                         r"line 2, in <module>: import a_module_nobody_has .*\| "
                         r"ModuleNotFoundError: No module named 'a_module_nobody_has'\n")
        self.assertIn(at("b") + "candidates[1].python: 'arms.py:nowhere': defines no function "
                      "'nowhere'", r.stderr)
        self.assertIn(at("c") + "candidates[2].python: 'arms.py:two_args': two_args(inputs, "
                      "outputs) cannot be called with 3 positional arguments", r.stderr)
        self.assertIn(at("d") + "candidates[3].python: 'arms.py:not_a_function': "
                      "'not_a_function' is a int, not a function", r.stderr)
        self.assertIn(at("e") + "candidates[4].python: cannot open 'missing.py'", r.stderr)


class TorchVariants(Base):
    def test_listed_with_the_bridge_cost(self):
        r = run(["kernels"], timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        for op in ("gemm", "attention_decode", "swiglu_mlp"):
            self.assertRegex(r.stdout, rf"op {op}:[\s\S]*cpu/torch: PyTorch")
        self.assertRegex(r.stdout, r"bridge cost per call \(an empty function, 3 numpy arrays\): "
                                   r"\d+\.\d\d us")

    def test_each_op_in_a_dtype_against_float64(self):
        # the baseline is the torch variant: its numerics against float64 fail the point if wrong
        for op, dtype, other, extra in (
                ("gemm", "bf16", "blas", ["phases: [decode]", "roles: [qkv]"]),
                ("attention_decode", "fp32", "dense", []),
                ("swiglu_mlp", "fp16", "unfused", ["phases: [decode]"])):
            with self.subTest(op=op, dtype=dtype):
                cands, doc = self.run_spec(spec_text(op, dtype, "{variant: torch}",
                                                     [f"{{name: c, variant: {other}}}"], extra))
                point = doc["points"][0]
                self.assertIsNone(point["error"])
                base = point["baseline"]
                self.assertEqual(base["variant"], "torch")
                self.assertFalse(base["failed"], base["failure"])
                self.assertLess(max(n["rel_l2"] for n in base["numerics"]),
                                {"fp32": 1e-5, "bf16": 2e-2, "fp16": 3e-3}[dtype])


if __name__ == "__main__":
    unittest.main()
