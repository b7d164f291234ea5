"""The build commit is read on every build: a scratch copy of the source tree is committed,
built, committed again and rebuilt incrementally; --version and result.json (tool.commit)
must name the new HEAD each time, and a tracked change without a commit marks it dirty.

Builds only the ktrial target (no tests, no CUDA) and takes a minute or two on two cores."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from ktrial_cli import SOURCE, sim_spec

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]


class BuildCommitTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt_commit.")
        self.env = dict(os.environ, HOME=self.tmp, GIT_CONFIG_NOSYSTEM="1")
        self.src = os.path.join(self.tmp, "src")
        self.build = os.path.join(self.tmp, "build")
        # the working tree as it is now: tracked files with their edits, and new files
        files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=SOURCE, capture_output=True,
                               check=True).stdout.decode().split("\0")
        for rel in filter(None, files):
            src = os.path.join(SOURCE, rel)
            if not os.path.isfile(src):
                continue
            dst = os.path.join(self.src, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(src, dst)
        self.git("init", "-q", "-b", "main")
        self.git("add", "-A")
        self.git("commit", "-qm", "first")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def git(self, *args):
        return subprocess.run(GIT + list(args), cwd=self.src, env=self.env, check=True,
                              capture_output=True, text=True).stdout.strip()

    def make(self):
        p = subprocess.run(["cmake", "--build", self.build, "--target", "ktrial", "-j2"],
                           capture_output=True, text=True, env=self.env)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
        return p.stdout

    def version(self):
        p = subprocess.run([os.path.join(self.build, "ktrial"), "--version"],
                           capture_output=True, text=True, env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def tool_of_a_run(self, name):
        spec = sim_spec(os.path.join(self.src, "experiments", f"{name}.yaml"), name=name,
                        trials={"max_repetitions": 20})
        out = os.path.join(self.tmp, name)
        p = subprocess.run([os.path.join(self.build, "ktrial"), "run", spec, "-o", out],
                           capture_output=True, text=True, env=self.env, cwd=self.src)
        self.assertIn(p.returncode, (0, 1, 2), p.stderr)
        with open(os.path.join(out, "result.json")) as f:
            return json.load(f)["tool"], p.stderr

    def test_commit_follows_head_after_an_incremental_rebuild(self):
        p = subprocess.run(["cmake", "-S", self.src, "-B", self.build, "-DKT_CUDA=OFF",
                            "-DKT_BUILD_TESTS=OFF"], capture_output=True, text=True, env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        self.make()
        first = self.git("rev-parse", "HEAD")
        self.assertEqual(self.version().split("(commit ")[1], f"{first})\n")

        with open(os.path.join(self.src, "README.md"), "a") as f:
            f.write("\nanother line\n")
        self.git("commit", "-qam", "second")
        second = self.git("rev-parse", "HEAD")
        self.assertNotEqual(first, second)
        log = self.make()  # incremental: no reconfigure asked for
        self.assertNotIn("Configuring done", log)
        self.assertEqual(self.version().split("(commit ")[1], f"{second})\n")

        # the spec is a new untracked file: the tree is clean for tracked files
        tool, stderr = self.tool_of_a_run("scratch-a")
        self.assertEqual(tool["commit"], second)
        self.assertFalse(tool["dirty"])
        self.assertNotIn("built from commit", stderr)

        # a tracked change, rebuilt: the binary says dirty
        with open(os.path.join(self.src, "README.md"), "a") as f:
            f.write("uncommitted\n")
        self.make()
        self.assertEqual(self.version().split("(commit ")[1], f"{second}, dirty)\n")
        tool, _ = self.tool_of_a_run("scratch-b")
        self.assertTrue(tool["dirty"])

        # a commit without a rebuild: run warns that the binary is stale
        self.git("commit", "-qam", "third")
        third = self.git("rev-parse", "HEAD")
        tool, stderr = self.tool_of_a_run("scratch-c")
        self.assertEqual(tool["commit"], second)
        self.assertIn(f"built from commit {second[:12]} but the code is at {third[:12]}", stderr)


if __name__ == "__main__":
    unittest.main()
