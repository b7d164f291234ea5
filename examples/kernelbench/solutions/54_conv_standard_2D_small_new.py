# An honest solution in KernelBench's layout: the convolution through unfold and a matmul
# (im2col), with the same weights as Model's conv.
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        k = self.conv.kernel_size[0]
        cols = F.unfold(x, k, padding=k // 2)  # [B, C k k, H W]
        w = self.conv.weight.reshape(self.conv.out_channels, -1)
        y = w @ cols + self.conv.bias[:, None]
        return y.reshape(x.shape[0], self.conv.out_channels, x.shape[2], x.shape[3])
