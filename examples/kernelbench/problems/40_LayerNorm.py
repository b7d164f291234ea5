# A KernelBench-layout problem written for ktrial: LayerNorm over the last three dimensions
# (a norm with weights: the module's parameters come from its seeded construction).
import torch
import torch.nn as nn


class Model(nn.Module):
    """y = LayerNorm(normalized_shape)(x)"""

    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)
        with torch.no_grad():  # weights that are not all ones: a solution must use them
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.ln(x)


batch_size = 8
features = 16
dim1 = 32
dim2 = 32


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [(features, dim1, dim2)]
