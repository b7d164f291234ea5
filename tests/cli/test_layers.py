"""tests/tools/check_cycles.py, the layering check that unit/no_cycles runs, on small trees made
here: it reads the order from a doc's layers block, reports an include that points up or to a
peer (with the file behind it), a file in a folder the order does not place, and an include
cycle, and passes a tree that keeps the order."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from ktrial_cli import SOURCE

CHECK = os.path.join(SOURCE, "tests", "tools", "check_cycles.py")
DOC = """# Layers

<!-- layers: the block below is read by tests/tools/check_cycles.py -->
```
runner/cli       top
runner/run      the engine
runner/spec runner/result   two peers
runner/util      leaves
kernels          bottom
```
"""


class LayersTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="kt_layers.")
        with open(os.path.join(self.root, "architecture.md"), "w") as f:
            f.write(DOC)
        self.write("runner/cli/main.c", '#include "run/run.h"\n#include "util/a.h"\n')
        self.write("runner/run/run.h", '#include "spec/spec.h"\n#include "result/r.h"\n')
        self.write("runner/spec/spec.h", '#include "util/a.h"\n#include "kernel.h"\n')
        self.write("runner/result/r.h", '#include "util/a.h"\n')
        self.write("runner/util/a.h", "/* a leaf */\n")
        self.write("kernels/kernel.h", "/* the bottom */\n")

    def tearDown(self):
        shutil.rmtree(self.root)

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def check(self):
        # no library: an empty archive keeps the object graph empty
        lib = os.path.join(self.root, "empty.a")
        subprocess.run(["ar", "rc", lib], check=True)
        return subprocess.run([sys.executable, CHECK, "--order",
                               os.path.join(self.root, "architecture.md"),
                               "--src", os.path.join(self.root, "runner"),
                               "--src", os.path.join(self.root, "kernels"), lib],
                              capture_output=True, text=True)

    def test_a_tree_that_keeps_the_order_passes(self):
        p = self.check()
        self.assertEqual(0, p.returncode, p.stdout + p.stderr)
        self.assertIn("declared order, highest first: runner/cli > runner/run > "
                      "runner/spec|runner/result > runner/util > kernels", p.stdout)
        self.assertIn("files (#include): 0 back-edge(s)", p.stdout)

    def test_an_include_that_points_up_fails_naming_the_file(self):
        self.write("runner/util/a.h", '#include "run/run.h"\n')
        p = self.check()
        self.assertEqual(1, p.returncode, p.stdout)
        self.assertIn("back-edge: runner/util -> runner/run (1)", p.stdout)
        self.assertIn(os.path.join("runner", "util", "a.h") + " -> ", p.stdout)
        self.assertIn("cycle: ", p.stdout)  # run.h reaches util/a.h: a cycle as well

    def test_peers_may_not_use_each_other(self):
        self.write("runner/result/r.h", '#include "spec/spec.h"\n')
        p = self.check()
        self.assertEqual(1, p.returncode, p.stdout)
        self.assertIn("back-edge: runner/result -> runner/spec (1)", p.stdout)

    def test_kernels_may_not_include_the_runner(self):
        self.write("kernels/kernel.h", '#include "util/a.h"\n')
        p = self.check()
        self.assertEqual(1, p.returncode, p.stdout)
        self.assertIn("back-edge: kernels -> runner/util (1)", p.stdout)

    def test_a_folder_the_order_does_not_place_fails(self):
        self.write("runner/extra/x.c", '#include "util/a.h"\n')
        p = self.check()
        self.assertEqual(1, p.returncode, p.stdout)
        self.assertIn("in folder runner/extra, which the declared order does not place", p.stdout)

    def test_a_doc_without_the_block_is_refused(self):
        with open(os.path.join(self.root, "architecture.md"), "w") as f:
            f.write("# Layers\n\nno block here\n")
        p = self.check()
        self.assertNotEqual(0, p.returncode)
        self.assertIn("no '<!-- layers: -->' line", p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main()
