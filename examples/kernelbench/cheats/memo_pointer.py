# A cheating solution (for tests): remembers results by the input's address.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.memo = {}

    def forward(self, x):
        key = x.data_ptr()
        if key not in self.memo:
            self.memo[key] = torch.relu(x)
        return self.memo[key].clone()
