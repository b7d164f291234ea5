# An honest solution in KernelBench's layout: softmax written out (max-subtracted exponentials
# over their sum), as a hand-written kernel would.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        e = torch.exp(x - x.amax(dim=1, keepdim=True))
        return e / e.sum(dim=1, keepdim=True)
