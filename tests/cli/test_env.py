"""'ktrial env': the provenance a run would record, as text and as JSON."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

KTRIAL = os.environ["KTRIAL"]


def run(args, cwd=None, env=None):
    return subprocess.run([KTRIAL] + args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60)


class EnvTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt_env.")
        self.env = dict(os.environ, HOME=self.tmp, GIT_CONFIG_NOSYSTEM="1")
        self.repo = os.path.join(self.tmp, "repo")
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
        subprocess.run(["git", "init", "-q", "-b", "main", self.repo], check=True, env=self.env)
        with open(os.path.join(self.repo, "a.txt"), "w") as f:
            f.write("a\n")
        subprocess.run(git + ["add", "a.txt"], cwd=self.repo, check=True, env=self.env)
        subprocess.run(git + ["commit", "-qm", "init"], cwd=self.repo, check=True, env=self.env)
        subprocess.run(["git", "remote", "add", "origin", "https://me:tok@example.com/r.git"],
                       cwd=self.repo, check=True, env=self.env)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_json_has_every_section(self):
        p = run(["env", "--json"], cwd=self.repo, env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(set(doc), {"git", "host", "build", "devices"})
        git = doc["git"]
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=self.repo, env=self.env,
                              capture_output=True, text=True, check=True).stdout.strip()
        self.assertTrue(git["available"])
        self.assertEqual(git["commit"], head)
        self.assertEqual(git["branch"], "main")
        self.assertEqual(git["remote_url"], "https://example.com/r.git")
        self.assertIs(git["dirty"], False)
        for key in ("staged", "unstaged", "untracked", "diff_bytes"):
            self.assertIsInstance(git[key], int)
        for key in ("hostname", "os", "kernel", "cpu_model"):
            self.assertIsInstance(doc["host"][key], str)
        self.assertGreaterEqual(doc["host"]["cores"], 1)
        for key in ("ktrial_version", "compiler", "libyaml", "libgit2", "cjson", "openblas"):
            self.assertIsInstance(doc["build"][key], str)
        self.assertIn("cpu", doc["devices"])
        for name, dev in doc["devices"].items():
            self.assertEqual(dev["backend"], name)
            self.assertIsInstance(dev["available"], bool)
            self.assertIsInstance(dev["info"], dict)
            if not dev["available"]:
                self.assertIsInstance(dev["reason"], str)

    def test_dirty_tree_counts(self):
        with open(os.path.join(self.repo, "a.txt"), "w") as f:
            f.write("changed\n")
        with open(os.path.join(self.repo, "new.txt"), "w") as f:
            f.write("new\n")
        p = run(["env", "--json"], cwd=self.repo, env=self.env)
        git = json.loads(p.stdout)["git"]
        self.assertIs(git["dirty"], True)
        self.assertEqual((git["staged"], git["unstaged"], git["untracked"]), (0, 1, 1))
        self.assertRegex(git["diff_blob_id"], r"^[0-9a-f]{40}$")

    def test_text_output(self):
        p = run(["env"], cwd=self.repo, env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        for section in ("git\n", "host\n", "build\n", "devices\n"):
            self.assertIn(section, p.stdout)
        self.assertNotIn("tok", p.stdout)

    def test_outside_a_repository_warns(self):
        plain = os.path.join(self.tmp, "plain")
        os.mkdir(plain)
        p = run(["env", "--json"], cwd=plain, env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("warning: git: not a git repository", p.stderr)
        git = json.loads(p.stdout)["git"]
        # the folder it looked from, by its real path: '.' would say nothing
        self.assertIn(f"(or any parent): '{os.path.realpath(plain)}'", git["reason"])
        self.assertIs(git["available"], False)
        self.assertIsNone(git["commit"])

    def test_usage_error(self):
        p = run(["env", "--bogus"], env=self.env)
        self.assertEqual(p.returncode, 64)
        self.assertIn("usage: ktrial env", p.stderr)

    def test_help(self):
        p = run(["env", "--help"], env=self.env)
        self.assertEqual(p.returncode, 0)
        self.assertIn("usage: ktrial env [--json]", p.stdout)


if __name__ == "__main__":
    unittest.main()
