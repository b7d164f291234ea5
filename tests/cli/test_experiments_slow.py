"""The shipped specs that test_experiments.py leaves out for their cost (its SLOW list), run and
checked the same way: label full, not quick (tests/CMakeLists.txt)."""
import os
import unittest

import test_experiments


class SlowExperimentsTest(test_experiments.ExperimentsTest):
    def test_every_shipped_spec_writes_a_valid_result(self):
        specs = [s for s in test_experiments.shipped_specs()
                 if os.path.basename(s) in test_experiments.SLOW]
        self.assertEqual(sorted(os.path.basename(s) for s in specs),
                         sorted(test_experiments.SLOW))
        self.check_specs(specs)


if __name__ == "__main__":
    unittest.main()
