"""'ktrial reproduce' rebuilds the recorded state: a scratch repository holding the working
tree is committed, dirtied (an edited tracked file and a new one), built, and a tiny sim spec is
run there; a later commit moves HEAD on; reproduce then checks the earlier commit plus the
recorded git.diff out through libgit2, builds it with the recorded options and reruns the spec,
and must print "reproduced" with exit 0.

Builds ktrial twice (the ktrial target only, no tests, no CUDA; ccache when installed shares
the objects between the two builds), so it runs in the 'full' loop only."""
import os
import shutil
import subprocess
import tempfile
import unittest

from ktrial_cli import SOURCE, sim_spec

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]
MARK = "/* a harmless edit, recorded in git.diff */\n"


class ReproduceBuildTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kt_reprob.")
        self.env = dict(os.environ, HOME=self.tmp, GIT_CONFIG_NOSYSTEM="1", TMPDIR=self.tmp)
        if shutil.which("ccache"):  # cmake reads the launcher from the environment
            self.env.update(CMAKE_C_COMPILER_LAUNCHER="ccache", CCACHE_BASEDIR=self.tmp,
                            CCACHE_NOHASHDIR="1")
        self.src = os.path.join(self.tmp, "src")
        self.build = os.path.join(self.tmp, "build")
        files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                                "--exclude-standard"], cwd=SOURCE, capture_output=True,
                               check=True).stdout.decode().split("\0")
        for rel in filter(None, files):
            src = os.path.join(SOURCE, rel)
            if os.path.isfile(src):
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

    def sh(self, args, cwd=None):
        p = subprocess.run(args, cwd=cwd, env=self.env, capture_output=True, text=True)
        return p

    def test_an_archive_of_a_dirty_tree_at_an_earlier_commit_is_reproduced(self):
        with open(os.path.join(self.src, "runner", "util", "version.c"), "a") as f:
            f.write(MARK)
        with open(os.path.join(self.src, "NOTES.txt"), "w") as f:
            f.write("an untracked file\n")
        p = self.sh(["cmake", "-S", self.src, "-B", self.build, "-DKT_CUDA=OFF",
                     "-DKT_BUILD_TESTS=OFF"])
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        p = self.sh(["cmake", "--build", self.build, "--target", "ktrial", "-j2"])
        self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
        ktrial = os.path.join(self.build, "ktrial")
        spec = sim_spec(os.path.join(self.tmp, "spec.yaml"), name="repro",
                        trials={"max_repetitions": 40})
        archive = os.path.join(self.tmp, "archive")
        p = self.sh([ktrial, "run", spec, "-o", archive], cwd=self.src)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertTrue(os.path.exists(os.path.join(archive, "git.diff")))
        recorded = self.git("rev-parse", "HEAD")
        self.git("add", "-A")
        self.git("commit", "-qm", "second")  # HEAD moves on; the archive keeps the first

        rerun = os.path.join(self.tmp, "rerun")
        p = self.sh([ktrial, "reproduce", archive, "-o", rerun, "--keep"], cwd=self.src)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("reproduced: the same verdicts, every speedup inside the other run's "
                      "interval (1 point)", p.stdout)
        self.assertIn(f"tree: {recorded[:7]} + git.diff checked out", p.stderr)
        self.assertIn("tree: git.diff applied, 2 files", p.stderr)
        self.assertIn("-DKT_CUDA=OFF", p.stderr)
        self.assertIn("machine and library differences between the runs (provenance):\n  none\n",
                      p.stdout)
        # the tree that was built is the recorded one: the first commit with the edits
        kept = [n for n in os.listdir(self.tmp) if n.startswith("ktrial-reproduce.")]
        self.assertEqual(len(kept), 1, p.stderr)
        tree = os.path.join(self.tmp, kept[0], "src")
        with open(os.path.join(tree, "runner", "util", "version.c")) as f:
            self.assertTrue(f.read().endswith(MARK))
        with open(os.path.join(tree, "NOTES.txt")) as f:
            self.assertEqual(f.read(), "an untracked file\n")
        self.assertTrue(os.access(os.path.join(self.tmp, kept[0], "build", "ktrial"), os.X_OK))
        self.assertTrue(os.path.exists(os.path.join(rerun, "result.json")))
        # the user's repository was not touched: HEAD, index and work tree as they were
        self.assertEqual(self.git("status", "--porcelain"), "")


if __name__ == "__main__":
    unittest.main()
