# A KernelBench-layout problem written for ktrial: a small 2D convolution with a bias.
import torch
import torch.nn as nn


class Model(nn.Module):
    """y = conv2d(x, W, b), 3 x 3, stride 1, padding 1"""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return self.conv(x)


batch_size = 4
in_channels = 8
out_channels = 16
kernel_size = 3
height = 32
width = 32


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
