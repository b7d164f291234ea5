# A failing solution (for tests): raises in its timed calls.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls > 4:
            raise RuntimeError("kernel launch failed: out of shared memory")
        return torch.relu(x)
