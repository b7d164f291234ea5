"""The man page ktrial(1) and the bash and zsh completions that the build writes next to ktrial
(runner/cli/docgen.c) name every command and every option of the tables, which 'ktrial --help'
and 'ktrial COMMAND --help' print; bash completion is exercised by sourcing the script and
calling its function with COMP_WORDS, as bash does."""
import os
import re
import shutil
import subprocess
import unittest

from ktrial_cli import KTRIAL, run

BUILD = os.environ.get("KT_BUILD_DIR", os.path.dirname(KTRIAL))


def commands():
    """The commands 'ktrial --help' lists."""
    out = run(["--help"]).stdout
    block = out.split("commands:\n")[1].split("\n\n")[0]
    return [line.split()[0] for line in block.splitlines() if line.strip()]


def options(command):
    """The options 'ktrial COMMAND --help' lists, long and short names."""
    out = run([command, "--help"]).stdout
    if "options:\n" not in out:  # 'help --help' is the overview
        return []
    names = []
    for line in out.split("options:\n")[1].splitlines():
        names += re.findall(r"--?[a-z][a-z0-9-]*", line[:26])  # "  -o, --output DIR   help"
    return [n for n in names if n not in ("-h", "--help")]


def complete(script, words):
    """The words bash completion offers for the command line 'words' (the last one is being
    typed)."""
    line = " ".join(f"'{w}'" for w in words)
    prog = (f"source '{script}'\nCOMP_WORDS=({line})\nCOMP_CWORD={len(words) - 1}\n"
            "_ktrial\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n")
    p = subprocess.run(["bash", "--norc", "-c", prog], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError(p.stderr)
    return p.stdout.split()


class DocgenTest(unittest.TestCase):
    def test_tables_are_seen(self):
        self.assertIn("init", commands())
        self.assertIn("--quick", options("run"))
        self.assertIn("-o", options("run"))

    def test_man_page_lists_every_command_and_option(self):
        page = os.path.join(BUILD, "ktrial.1")
        self.assertTrue(os.path.exists(page), "the build writes ktrial.1 next to ktrial")
        with open(page) as f:
            self.assertEqual(f.read(), run(["--man"]).stdout)
        if shutil.which("man"):
            p = subprocess.run(["man", "-l", page], capture_output=True, text=True, timeout=60,
                               env=dict(os.environ, MANWIDTH="100", MANPAGER="cat", PAGER="cat"))
            self.assertEqual(p.returncode, 0, p.stderr)
            text = p.stdout
        else:  # the roff itself, its escaped hyphens undone
            with open(page) as f:
                text = f.read().replace("\\-", "-")
        self.assertIn("EXIT STATUS", text)
        for command in commands():
            self.assertRegex(text, rf"(?m)^\s+{command}\b", f"command {command}")
            for option in options(command):
                self.assertIn(option, text, f"{command} {option}")

    def test_bash_completes_commands_and_options(self):
        script = os.path.join(BUILD, "ktrial.bash")
        with open(script) as f:
            self.assertEqual(f.read(), run(["--completion", "bash"]).stdout)
        self.assertEqual(sorted(complete(script, ["ktrial", ""])),
                         sorted(commands() + ["--help", "--version"]))
        self.assertEqual(complete(script, ["ktrial", "va"]), ["validate"])
        for command in commands():
            offered = complete(script, ["ktrial", command, "-"])
            for option in options(command):
                self.assertIn(option, offered, f"{command} {option}")
        self.assertEqual(complete(script, ["ktrial", "run", "--qu"]), ["--quick"])
        self.assertEqual(sorted(complete(script, ["ktrial", "run", "--backend", "c"])),
                         ["cpu", "cuda"])
        self.assertIn("run", complete(script, ["ktrial", "help", "r"]))

    def test_zsh_script_names_every_command_and_option(self):
        script = os.path.join(BUILD, "_ktrial")
        with open(script) as f:
            text = f.read()
        self.assertEqual(text, run(["--completion", "zsh"]).stdout)
        self.assertTrue(text.startswith("#compdef ktrial"))
        for command in commands():
            self.assertRegex(text, rf"(?m)^    '{command}:", command)
            block = text.split(f"\n    {command})\n")[1].split("\n      ;;")[0]
            for option in options(command):
                self.assertIn(f"'{option}[", block, f"{command} {option}")
        if shutil.which("zsh"):
            p = subprocess.run(["zsh", "-n", script], capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)

    def test_unknown_shell_is_a_usage_error(self):
        p = run(["--completion", "fish"])
        self.assertEqual(p.returncode, 64)
        self.assertIn("bash or zsh", p.stderr)


if __name__ == "__main__":
    unittest.main()
