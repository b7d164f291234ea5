# A cheating solution (for tests): right while it is checked at start-up, zeros once the
# timed calls begin.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return torch.relu(x) if self.calls <= 4 else torch.zeros_like(x)
