"""op pymodule: KernelBench-layout problems (examples/kernelbench/problems/, written for this
project) run with their honest solutions, whose every call passes every check; cheating
solutions are each a REJECT whose reason names the check that caught them (memo by content and
by pointer: fresh-inputs; zeros in timed calls: reference; writing into inputs:
inputs-unchanged; returning an input: aliasing; finishing in a background thread: late-writes);
an exception is a REJECT ending with the traceback; bad keys are errors at file:line:col. Small
sizes through 'globals' and few repetitions: no figure is checked, only the checks."""
import os
import shutil
import tempfile
import unittest

from ktrial_cli import SOURCE, run, validate_result

KB = os.path.join(SOURCE, "examples", "kernelbench")

# problem file, honest solution, globals that keep a call small
PROBLEMS = [
    ("19_ReLU.py", "19_ReLU_new.py", "{batch_size: 4, dim: 2048}"),
    ("47_Sum_reduction_over_a_dimension.py", "47_Sum_reduction_over_a_dimension_new.py",
     "{batch_size: 2, dim1: 64, dim2: 48}"),
    ("23_Softmax.py", "23_Softmax_new.py", "{batch_size: 4, dim: 2048}"),
    ("1_Square_matrix_multiplication_.py", "1_Square_matrix_multiplication__new.py", "{N: 96}"),
    ("40_LayerNorm.py", "40_LayerNorm_new.py", "{batch_size: 2, features: 4, dim1: 16, dim2: 16}"),
    ("54_conv_standard_2D_small.py", "54_conv_standard_2D_small_new.py",
     "{batch_size: 2, in_channels: 3, out_channels: 5, height: 12, width: 12}"),
]

CHEATS = {  # candidate file under cheats/ -> the check its reason must start with
    "memo_content.py": "fresh-inputs",
    "memo_pointer.py": "fresh-inputs",
    "zeros_timed.py": "reference",
    "write_inputs.py": "inputs-unchanged",
    "return_input.py": "aliasing",
    "background_thread.py": "late-writes",
    "raises.py": "exception",
}


def spec(path, problem, candidates, globals_="{}", reps=6):
    lines = ["version: 1", "name: kb-test", "op: pymodule", f"problem: {problem}",
             f"globals: {globals_}", "framework: torch", "threads: 1",
             "baseline: {class: Model}", "candidates:"]
    lines += [f"  - {{name: {name}, file: {file}, class: ModelNew}}" for name, file in candidates]
    lines += ["inputs: {seed: 5, sets: 2}",
              f"trials: {{warmup: 2, min_repetitions: {reps}, max_repetitions: {reps}, "
              "max_seconds_per_point: 30}",
              "thresholds: {numerics: {max_rel_l2: 1.0e-4}, latency: {min_speedup: 1.0}}"]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


class KernelBench(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt-kb-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_spec(self, path, name):
        out = os.path.join(self.tmp, name)
        r = run(["run", path, "-o", out])
        self.assertNotEqual(r.returncode, 70, r.stderr)
        self.assertTrue(os.path.exists(os.path.join(out, "result.json")), r.stdout + r.stderr)
        return validate_result(self, out), r

    def test_honest_solutions_pass_every_check(self):
        for problem, solution, globals_ in PROBLEMS:
            with self.subTest(problem=problem):
                path = spec(os.path.join(self.tmp, f"{problem}.yaml"),
                            os.path.join(KB, "problems", problem),
                            [("honest", os.path.join(KB, "solutions", solution))], globals_,
                            reps=6)
                doc, _ = self.run_spec(path, problem)
                point = doc["points"][0]
                self.assertFalse(point.get("error"), point.get("error"))
                cand = point["candidates"][0]
                self.assertNotEqual(cand["verdict"], "FAILED", cand)
                for reason in cand.get("reasons", []):  # only the speed may reject it
                    self.assertTrue(reason.startswith("speedup"), reason)
                self.assertEqual(len(cand["pairs"]), 6)  # every timed call checked and kept

    def test_each_cheat_is_rejected_by_its_check(self):
        cands = [(name.replace(".py", "").replace("_", "-"), os.path.join(KB, "cheats", name))
                 for name in CHEATS]
        path = spec(os.path.join(self.tmp, "cheats.yaml"),
                    os.path.join(KB, "problems", "19_ReLU.py"), cands,
                    "{batch_size: 4, dim: 2048}", reps=12)
        doc, _ = self.run_spec(path, "cheats")
        got = {c["name"]: c for c in doc["points"][0]["candidates"]}
        for file, check in CHEATS.items():
            with self.subTest(cheat=file):
                c = got[file.replace(".py", "").replace("_", "-")]
                self.assertEqual(c["verdict"], "REJECT", c)
                self.assertTrue(any(r.startswith(check + ":") for r in c["reasons"]), c["reasons"])
        raised = " ".join(got["raises"]["reasons"])
        self.assertIn("RuntimeError: kernel launch failed: out of shared memory", raised)
        self.assertIn('raises.py", line', raised)

    def test_a_model_that_cannot_run_in_double_is_compared_with_fp32(self):
        problem = os.path.join(self.tmp, "fp32_only.py")
        with open(problem, "w") as f:
            f.write("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                    "    def forward(self, x):\n"
                    "        return x @ torch.ones(x.shape[-1], 8)  # float32 whatever x is\n\n\n"
                    "n = 32\n\n\ndef get_inputs():\n    return [torch.randn(4, n)]\n\n\n"
                    "def get_init_inputs():\n    return []\n")
        path = spec(os.path.join(self.tmp, "fp32.yaml"), problem, [("same", problem)])
        with open(path) as f:
            text = f.read().replace("class: ModelNew", "class: Model")
        with open(path, "w") as f:
            f.write(text)
        doc, _ = self.run_spec(path, "fp32")
        point = doc["points"][0]
        self.assertFalse(point.get("error"), point.get("error"))
        self.assertEqual(point["baseline"]["metrics"]["float64_reference"]["value"], 0)
        self.assertNotEqual(point["candidates"][0]["verdict"], "FAILED")
        self.assertEqual(len(point["candidates"][0]["pairs"]), 6)

    def test_bad_keys_are_errors_at_their_place(self):
        path = os.path.join(self.tmp, "bad.yaml")
        with open(path, "w") as f:
            f.write("version: 1\nname: kb-bad\nop: pymodule\nproblem: nowhere/19_ReLU.py\n"
                    "baseline: {class: Model}\ncandidates:\n  - {name: c, file: missing.py}\n")
        r = run(["validate", path])
        self.assertEqual(r.returncode, 65, r.stdout + r.stderr)
        self.assertIn("bad.yaml:4:10", r.stderr)
        self.assertIn("problem: cannot read 'nowhere/19_ReLU.py'", r.stderr)
        self.assertIn("bad.yaml:7:", r.stderr)
        with open(path, "w") as f:
            f.write("version: 1\nname: kb-bad\nop: gemm\nmodels: [qwen2.5-0.5b]\n"
                    "batch_sizes: [1]\nproblem: p.py\nbaseline: {variant: blas}\n"
                    "candidates:\n  - {name: c, variant: tiled, class: ModelNew}\n")
        r = run(["validate", path])
        self.assertEqual(r.returncode, 65, r.stdout + r.stderr)
        self.assertIn("only op 'pymodule' has 'problem'", r.stderr)
        self.assertIn("only op 'pymodule' arms have 'class'", r.stderr)


if __name__ == "__main__":
    unittest.main()
