# An honest solution in KernelBench's layout: the reduction as a product with a ones vector
# over the reduced dimension moved last.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        moved = x.movedim(self.dim, -1)
        ones = torch.ones(moved.shape[-1], 1, dtype=x.dtype)
        return (moved @ ones).movedim(-1, self.dim)
