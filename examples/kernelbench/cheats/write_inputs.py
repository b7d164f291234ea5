# A cheating solution (for tests): computes in place, in its input.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x.relu_()
        return x.clone()
