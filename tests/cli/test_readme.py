"""The README's and the tutorial's example specs validate, and the README's test command is the
one .ci/run runs."""
import os
import re
import tempfile
import unittest

from ktrial_cli import SOURCE, run


class ReadmeTest(unittest.TestCase):
    def setUp(self):
        with open(os.path.join(SOURCE, "README.md")) as f:
            self.readme = f.read()

    def test_example_spec_is_valid(self):
        blocks = re.findall(r"```yaml\n(.*?)```", self.readme, re.S)
        self.assertEqual(len(blocks), 1)
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write(blocks[0])
        try:
            p = run(["validate", "--backend", "cpu", f.name])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("ok: ", p.stdout)
        finally:
            os.unlink(f.name)

    def test_the_tutorial_specs_are_valid(self):
        with open(os.path.join(SOURCE, "docs", "tutorial.md")) as f:
            blocks = re.findall(r"```yaml\n(.*?)```", f.read(), re.S)
        self.assertGreaterEqual(len(blocks), 1)
        for block in blocks:
            with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
                f.write(block)
            try:
                p = run(["validate", "--backend", "cpu", f.name])
                self.assertEqual(p.returncode, 0, p.stderr)
            finally:
                os.unlink(f.name)

    def test_ci_runs_the_readme_test_command(self):
        with open(os.path.join(SOURCE, ".ci", "run")) as f:
            ci = f.read()
        self.assertIn("# set up, build, and run the whole test suite", self.readme)
        self.assertIn("set up, build, and run the whole test suite", ci)
        line = self.readme.split("# set up, build, and run the whole test suite\n")[1].split("\n")[0]
        self.assertIn("ctest --test-dir build", line)
        self.assertIn("-L full", line)  # every test but the benchmarks (tests/CMakeLists.txt)


if __name__ == "__main__":
    unittest.main()
