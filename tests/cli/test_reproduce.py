"""'ktrial reproduce' refuses, with the reason, an archive whose code state cannot be rebuilt:
no commit recorded, a commit the repository does not hold, a git.diff that was capped or
edited. These stop before any build (seconds); the rebuild itself is test_reproduce_build.py."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from ktrial_cli import run, sim_spec

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]


class ReproduceRefusalTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt_repro.")
        self.env = dict(os.environ, HOME=self.tmp, GIT_CONFIG_NOSYSTEM="1", TMPDIR=self.tmp)
        self.repo = os.path.join(self.tmp, "repo")
        os.makedirs(self.repo)
        with open(os.path.join(self.repo, "code.txt"), "w") as f:
            f.write("one\n")
        self.git("init", "-q")
        self.git("add", "-A")
        self.git("commit", "-qm", "first")
        with open(os.path.join(self.repo, "code.txt"), "a") as f:
            f.write("two\n")  # dirty: the archive keeps a git.diff
        self.spec = sim_spec(os.path.join(self.tmp, "spec.yaml"),
                             trials={"max_repetitions": 20})
        self.archive = os.path.join(self.tmp, "a")
        p = run(["run", self.spec, "-o", self.archive], cwd=self.repo, env=self.env)
        self.assertIn(p.returncode, (0, 1, 2), p.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.archive, "git.diff")))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def git(self, *args):
        subprocess.run(GIT + list(args), cwd=self.repo, env=self.env, check=True,
                       capture_output=True)

    def reproduce(self):
        p = run(["reproduce", self.archive, "-o", os.path.join(self.tmp, "b")], cwd=self.repo,
                env=self.env)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "b")), "nothing was rerun")
        self.assertEqual([n for n in os.listdir(self.tmp) if n.startswith("ktrial-reproduce.")],
                         [], "the temporary tree is removed")
        return p

    def edit_result(self, fn):
        path = os.path.join(self.archive, "result.json")
        with open(path) as f:
            doc = json.load(f)
        fn(doc)
        with open(path, "w") as f:
            json.dump(doc, f)

    def test_a_capped_diff_is_refused(self):
        path = os.path.join(self.archive, "git.diff")
        with open(path) as f:
            patch = f.read()
        with open(path, "w") as f:
            f.write("# ktrial: not copied: big.bin (2097152 bytes, sha256 ab12...; over 1 MiB)\n"
                    + patch)
        p = self.reproduce()
        self.assertEqual(p.returncode, 65, p.stdout + p.stderr)
        self.assertIn("the recorded diff was capped: 1 file not copied", p.stderr)

    def test_an_edited_diff_is_refused(self):
        with open(os.path.join(self.archive, "git.diff"), "a") as f:
            f.write("+three\n")
        p = self.reproduce()
        self.assertEqual(p.returncode, 65, p.stdout + p.stderr)
        self.assertIn("git.diff is not the diff the run recorded", p.stderr)

    def test_an_unknown_commit_is_refused(self):
        self.edit_result(lambda d: d["provenance"]["git"].update(commit="1" * 40))
        p = self.reproduce()
        self.assertEqual(p.returncode, 65, p.stdout + p.stderr)
        self.assertIn(f"commit {'1' * 40} is not in the repository", p.stderr)

    def test_an_archive_without_git_is_refused(self):
        self.edit_result(lambda d: d["provenance"]["git"].update(
            available=False, commit=None, reason="not a git repository"))
        p = self.reproduce()
        self.assertEqual(p.returncode, 65, p.stdout + p.stderr)
        self.assertIn("records no commit (not a git repository)", p.stderr)


if __name__ == "__main__":
    unittest.main()
