"""A GEMM in NumPy, y[m, n] = x[m, k] @ w[n, k]^T, the layout of ktrial's gemm op
(docs/python.md)."""
import numpy as np


def gemm(inputs, outputs, problem):
    x, w = inputs
    (y,) = outputs
    np.matmul(x, w.T, out=y)
