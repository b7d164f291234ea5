"""The command table: help, version, unknown commands, and what every command does with --help
and bad flags."""
import re
import unittest

from ktrial_cli import run

COMMANDS = ["run", "validate", "kernels", "models", "show", "compare", "env", "help"]


class MainTest(unittest.TestCase):
    def test_overview_lists_every_command_and_the_exit_codes(self):
        p = run(["--help"])
        self.assertEqual(p.returncode, 0)
        for name in COMMANDS:
            self.assertRegex(p.stdout, rf"\n   {name} +\S")
        self.assertIn("69 backend or memory unavailable", p.stdout)
        self.assertEqual(run(["help"]).stdout, p.stdout)

    def test_no_command_is_a_usage_error(self):
        p = run([])
        self.assertEqual(p.returncode, 64)
        self.assertIn("usage: ktrial", p.stderr)

    def test_version_names_the_commit(self):
        p = run(["--version"])
        self.assertEqual(p.returncode, 0)
        self.assertRegex(p.stdout, r"^ktrial \d+\.\d+\.\d+ \(commit ([0-9a-f]{40}|unknown)(, dirty)?\)\n$")

    def test_unknown_command_suggests_the_closest(self):
        p = run(["kernals"])
        self.assertEqual(p.returncode, 64)
        self.assertIn("'kernals' is not a ktrial command", p.stderr)
        self.assertIn("\tkernels", p.stderr)
        p = run(["zzzzzz"])
        self.assertEqual(p.returncode, 64)
        self.assertNotIn("most similar", p.stderr)

    def test_unknown_option_suggests_the_closest(self):
        p = run(["--versoin"])
        self.assertEqual(p.returncode, 64)
        self.assertIn("unknown option '--versoin'; did you mean '--version'?", p.stderr)
        p = run(["--hepl"])
        self.assertEqual(p.returncode, 64)
        self.assertIn("did you mean '--help'?", p.stderr)
        p = run(["--zzzzzz"])
        self.assertEqual(p.returncode, 64)
        self.assertIn("unknown option '--zzzzzz'", p.stderr)
        self.assertNotIn("did you mean", p.stderr)

    def test_every_command_has_help(self):
        for name in COMMANDS:
            with self.subTest(command=name):
                a = run(["help", name])
                self.assertEqual(a.returncode, 0, a.stderr)
                self.assertTrue(a.stdout.startswith(f"usage: ktrial {name}"), a.stdout)
                if name != "help":
                    b = run([name, "--help"])
                    self.assertEqual(b.returncode, 0)
                    self.assertEqual(a.stdout, b.stdout)

    def test_bad_flags_exit_64(self):
        for name in ["run", "validate", "kernels", "show", "compare", "env"]:
            with self.subTest(command=name):
                p = run([name, "--no-such-flag"])
                self.assertEqual(p.returncode, 64, p.stdout + p.stderr)

    def test_kernels_lists_every_op_and_cpu_variant_with_params(self):
        p = run(["kernels", "--backend", "cpu"])
        self.assertEqual(p.returncode, 0, p.stderr)
        for op, variants in {"gemm": ["blas", "tiled", "deterministic"],
                             "attention_decode": ["dense", "ffd"],
                             "swiglu_mlp": ["unfused", "fused"]}.items():
            self.assertIn(f"op {op}:", p.stdout)
            for v in variants:
                self.assertIn(f"  cpu/{v}:", p.stdout)
        self.assertRegex(p.stdout, r"delta +float default 9 +\[")  # KT_FFD_DEFAULT_DELTA
        self.assertNotIn("sim/", p.stdout)
        self.assertEqual(run(["kernels", "--backend", "tpu"]).returncode, 64)

    def test_kernels_aligns_the_backends(self):
        p = run(["kernels"])
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.split("\n\n")[0].splitlines()
        self.assertEqual(lines[0], "backends:")
        rows = [re.match(r"  (\S+ +)(available|no device) ", ln) for ln in lines[1:]]
        self.assertTrue(all(rows), lines)
        self.assertIn("process", [m.group(1).strip() for m in rows])
        # the state starts in one column whatever the name's length ('process' is the longest)
        self.assertEqual(len({m.start(2) for m in rows}), 1, lines)

    def test_models_prints_the_catalog(self):
        p = run(["models"])
        self.assertEqual(p.returncode, 0)
        row = [l for l in p.stdout.splitlines() if l.startswith("gemma-2-9b")][0]
        self.assertEqual(re.split(r"\s+", row.strip())[1:], ["3584", "16", "8", "256", "14336", "42"])


if __name__ == "__main__":
    unittest.main()
