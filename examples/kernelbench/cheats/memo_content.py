# A cheating solution (for tests): remembers results by a fingerprint of the input's content
# (its shape and first elements) and hands them out again.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.memo = {}

    def forward(self, x):
        key = (tuple(x.shape), tuple(x.reshape(-1)[:16].tolist()))
        if key not in self.memo:
            self.memo[key] = torch.relu(x)
        return self.memo[key].clone()
