# A KernelBench-layout problem written for ktrial: C = A B for square matrices (matmul).
import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B, A and B N x N"""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


N = 512


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
