"""Python arms for tests/cli/test_python.py: gemm y[m, n] = x[m, k] @ w[n, k]^T, honest ones in
numpy and torch, in place and returned, and each way of getting it wrong the tests expect
ktrial to catch."""
import numpy as np

calls = 0


def gemm(inputs, outputs, problem):
    x, w = inputs
    (y,) = outputs
    np.matmul(x, w.T, out=y)


def gemm_returns(inputs, outputs, problem):
    x, w = inputs
    return x @ w.T


def gemm_torch(inputs, outputs, problem):
    import torch
    x, w = inputs
    torch.matmul(x, w.t(), out=outputs[0])


def wrong(inputs, outputs, problem):
    x, w = inputs
    outputs[0][...] = (x @ w.T) * 1.01


def returns_input(inputs, outputs, problem):
    return inputs[0][:, : outputs[0].shape[1]]


memo = {}


def returns_memo(inputs, outputs, problem):
    key = inputs[0].ctypes.data
    if key not in memo:
        memo[key] = inputs[0] @ inputs[1].T
    return memo[key]


def fails_later(inputs, outputs, problem):
    global calls
    calls += 1
    if calls > 6:
        raise RuntimeError(f"gave up at call {calls}")
    gemm(inputs, outputs, problem)


def two_args(inputs, outputs):
    pass


not_a_function = 3
