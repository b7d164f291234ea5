"""Every command's --help comes from the one table of options (runner/cli/options_table.c):
each row of the table appears in its command's help with its explanation, the parser accepts
every row (as --name VALUE and --name=VALUE), and nothing outside the table is accepted."""
import os
import re
import shutil
import tempfile
import unittest

from ktrial_cli import SOURCE, run, sim_spec

COMMANDS = ["run", "validate", "init", "lock", "models", "kernels", "show", "compare", "verify",
            "merge", "reproduce", "slurm", "report", "history", "env"]

# A value each kind of argument accepts, so that parsing succeeds and the command fails later
# (on the missing files) with something other than a usage error.
VALUES = {"DIR": "{tmp}/dir", "NAME": "cpu", "OP": "gemm", "I/N|auto": "1/2", "FILE": "{tmp}/file",
          "PATH": "{tmp}/lib.so", "F": "0.02", "C": "0.9", "N": "2", "GPUS": "0", "CPUS": "2", "P": "debug",
          "T": "01:00:00", "OP": "gemm", "M": "qwen2.5-0.5b"}
# Positional arguments (and required options) that make each command complete.
POSITIONAL = {"run": ["{tmp}/none.yaml"], "validate": ["{tmp}/none.yaml"], "init": [], "models": [],
              "kernels": [], "show": ["{tmp}/none"], "compare": ["{tmp}/a", "{tmp}/b"],
              "verify": ["{tmp}/none"],
              "merge": ["{tmp}/s1", "-o", "{tmp}/m"], "slurm": ["{tmp}/none.yaml"],
              "report": ["{tmp}/none"], "history": ["{tmp}", "--experiment", "x"],
              "env": [], "lock": ["{tmp}/none.yaml"], "reproduce": ["{tmp}/none"]}


def table():
    """(command, name, alias, arg, help) of every row of options_table.c."""
    with open(os.path.join(SOURCE, "runner", "cli", "options_table.c")) as f:
        text = f.read()
    body = text[text.index("table[] = {"):]
    rows = []
    for m in re.finditer(r'\{"(\w+)",\s*"(--[\w-]+)",\s*(NULL|"-\w")\s*,\s*(NULL|"[^"]*")\s*,'
                         r'((?:\s*"(?:[^"\\]|\\.)*")+)\s*\}', body):
        alias = None if m.group(3) == "NULL" else m.group(3).strip('"')
        arg = None if m.group(4) == "NULL" else m.group(4).strip('"')
        help_text = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(5)))
        rows.append((m.group(1), m.group(2), alias, arg, help_text))
    return rows


class HelpTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt_help.")
        self.rows = table()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def fill(self, words):
        return [w.format(tmp=self.tmp) for w in words]

    def test_the_table_covers_every_command(self):
        self.assertGreater(len(self.rows), 30)
        commands = {r[0] for r in self.rows}
        self.assertEqual(commands, set(COMMANDS))

    def test_every_help_lists_and_explains_every_option_of_its_command(self):
        for command in COMMANDS:
            with self.subTest(command=command):
                p = run([command, "--help"])
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("\noptions:\n", p.stdout)
                usage = p.stdout.splitlines()[0]
                for c, name, alias, arg, help_text in self.rows:
                    if c != command:
                        continue
                    left = (f"{alias}, " if alias else "") + name + (f" {arg}" if arg else "")
                    self.assertRegex(p.stdout, rf"\n  {re.escape(left)} +{re.escape(help_text)}\n")
                    shown = f"{alias or name}{' ' + arg if arg else ''}"
                    if help_text.endswith("(required)"):  # not optional: no brackets
                        self.assertIn(f" {shown}", usage)
                        self.assertNotIn(f"[{shown}]", usage)
                    else:
                        self.assertIn(f"[{shown}]", usage)
                self.assertIn("-h, --help", p.stdout)

    def test_the_readme_commands_table_lists_every_option(self):
        """docs/commands.md's table is where a user looks the options up: each row names every
        option of its command."""
        with open(os.path.join(SOURCE, "docs", "commands.md")) as f:
            text = f.read()
        rows = {m.group(1): m.group(2) for m in
                re.finditer(r"^\| `ktrial (\w+) ([^`]*)` \|", text, re.M)}
        self.assertEqual(set(rows), set(COMMANDS))
        missing = [f"{c}: {alias or name}" for c, name, alias, _, _ in self.rows
                   if not any(re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", rows[c])
                              for word in (name, alias) if word)]
        self.assertEqual([], missing)

    def test_the_parser_accepts_every_option_of_the_table(self):
        for command, name, alias, arg, _ in self.rows:
            if (command, name) in {("slurm", "--submit")}:
                continue  # would call sbatch after the spec check; the spec is missing anyway
            forms = [[name] + ([VALUES[arg]] if arg else [])]
            if arg:
                forms.append([f"{name}={VALUES[arg]}"])
            if alias:
                forms.append([alias, VALUES[arg]])
            for form in forms:
                with self.subTest(command=command, option=form):
                    p = run([command] + self.fill(POSITIONAL[command] + form))
                    self.assertNotEqual(p.returncode, 64, p.stderr)
                    self.assertNotIn("unknown option", p.stderr)

    def test_an_option_not_in_the_table_is_a_usage_error_with_a_suggestion(self):
        for command in COMMANDS:
            names = [r[1] for r in self.rows if r[0] == command]
            wrong = names[0][:-1] + "x" + names[0][-1]  # one letter added
            with self.subTest(command=command, option=wrong):
                p = run([command, wrong] + self.fill(POSITIONAL[command]))
                self.assertEqual(p.returncode, 64, p.stderr)
                self.assertIn(f"unknown option '{wrong}'; did you mean '{names[0]}'?", p.stderr)
                self.assertIn(f"usage: ktrial {command}", p.stderr)

    def test_run_output_help_says_where_the_archive_goes(self):
        # -o DIR is the archive itself (DIR/result.json), not a folder a new archive goes in
        p = run(["run", "--help"])
        line = next(ln for ln in p.stdout.splitlines() if ln.startswith("  -o, --output DIR"))
        self.assertIn("into DIR itself", line)
        self.assertNotIn("new folder in it", line)
        spec = sim_spec(os.path.join(self.tmp, "o.yaml"), name="out-help",
                        trials={"min_repetitions": 5, "max_repetitions": 10})
        out = os.path.join(self.tmp, "out")
        p = run(["run", spec, "-o", out])
        self.assertIn(p.returncode, (0, 1, 2), p.stderr)
        self.assertTrue(os.path.isfile(os.path.join(out, "result.json")), os.listdir(out))

    def test_a_missing_value_is_named(self):
        p = run(["run", "x.yaml", "--resume"])
        self.assertEqual(p.returncode, 64)
        self.assertIn("'--resume' needs DIR", p.stderr)
        p = run(["env", "--json=yes"])
        self.assertEqual(p.returncode, 64)
        self.assertIn("'--json' takes no value", p.stderr)
        for opt in ("--threshold", "--confidence"):  # an empty number is no number, not 0
            p = run(["compare", opt, "", "a", "b"])
            self.assertEqual(p.returncode, 64, p.stderr)
            self.assertIn(f"'{opt}' needs a", p.stderr)

    def test_an_empty_value_is_refused_before_anything_runs(self):
        # '--junit ""' used to run the whole experiment, then fail writing '' (exit 74)
        spec = sim_spec(os.path.join(self.tmp, "e.yaml"), name="empty-value",
                        trials={"min_repetitions": 5, "max_repetitions": 10})
        out = os.path.join(self.tmp, "out")
        for args in (["run", spec, "-o", out, "--junit", ""], ["run", spec, "-o", out, "--markdown="],
                     ["run", spec, "--resume", ""], ["kernels", "--plugin="],
                     ["history", "--experiment", ""], ["merge", out, "-o", ""]):
            p = run(args)
            self.assertEqual(p.returncode, 64, args)
            self.assertIn("needs a value", p.stderr)
            self.assertIn("not an empty string", p.stderr)
            self.assertFalse(os.path.exists(out), args)


if __name__ == "__main__":
    unittest.main()
