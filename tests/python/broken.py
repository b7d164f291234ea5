"""A Python arm file that does not import (tests/cli/test_python.py)."""
import a_module_nobody_has  # noqa: F401


def gemm(inputs, outputs, problem):
    pass
