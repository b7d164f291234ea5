"""'ktrial init' prints a starter spec that validates in each of its forms, and runs: the sim
and command forms are run to their verdict here (the kernel forms are validated with --plan;
running them is minutes of CPU). -o writes a new file and never overwrites one."""
import os
import tempfile
import unittest

from ktrial_cli import run

FORMS = [["--op", "attention_decode"], ["--op", "gemm"], ["--op", "swiglu_mlp"],
         ["--op", "decoder_layer"], ["--op", "synthetic"], ["--command"], []]


def has_op(name):
    return f"op {name}:" in run(["kernels"]).stdout


class InitTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, args, name="spec.yaml"):
        path = os.path.join(self.dir, name)
        p = run(["init"] + args + ["-o", path])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("ktrial validate", p.stderr)
        return path

    def test_every_form_validates(self):
        for i, form in enumerate(FORMS):
            with self.subTest(form=form):
                path = self.write(form, f"s{i}.yaml")
                with open(path) as f:
                    text = f.read()
                self.assertIn("# ", text)  # commented
                self.assertEqual(text, run(["init"] + form).stdout)
                p = run(["validate", "--plan", path])
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_model_is_used(self):
        path = self.write(["--op", "gemm", "--model", "qwen2.5-0.5b"])
        with open(path) as f:
            self.assertIn("models: [qwen2.5-0.5b]", f.read())
        self.assertEqual(run(["validate", path]).returncode, 0)
        p = run(["init", "--command", "--model", "qwen2.5-0.5b"])
        self.assertEqual(p.returncode, 64)

    def test_sim_and_command_forms_run(self):
        for form in (["--op", "synthetic"], ["--command"]):
            with self.subTest(form=form):
                path = self.write(form, f"{form[-1].strip('-')}.yaml")
                p = run(["run", "--quick", path, "-o", os.path.join(self.dir, form[-1] + "-out")])
                self.assertIn(p.returncode, (0, 1, 2), p.stderr)
                self.assertIn("overall:", p.stdout)

    @unittest.skipUnless(has_op("service"), "op service is not in this build (issue 40)")
    def test_service_form_validates(self):
        path = self.write(["--service"])
        os.makedirs(os.path.join(self.dir, "tasks"))
        with open(os.path.join(self.dir, "tasks", "short.json"), "w") as f:
            f.write('{"prompt": "hello", "max_tokens": 8}\n')
        p = run(["validate", path])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_errors(self):
        p = run(["init", "--op", "gem"])
        self.assertEqual(p.returncode, 64)
        self.assertIn("gemm", p.stderr)
        p = run(["init", "--op", "gemm", "--command"])
        self.assertEqual(p.returncode, 64)
        path = self.write([])
        p = run(["init", "-o", path])
        self.assertEqual(p.returncode, 74)
        self.assertIn("never overwrites", p.stderr)


if __name__ == "__main__":
    unittest.main()
