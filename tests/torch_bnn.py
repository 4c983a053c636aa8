"""torch_bnn.py: the binary layers the PyTorch-export tests build nets from, written the way
users write BNNs without a quantization library: sign with a straight-through estimator
(0 maps to +1), on activations and on weights. Importing it needs torch."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def sign_ste(x):
    """+1/-1 with 0 -> +1, and the gradient of the identity."""
    s = torch.where(x >= 0, torch.ones_like(x), -torch.ones_like(x))
    return x + (s - x).detach()


class BinConv(nn.Conv2d):
    """A convolution whose weights are binarized by sign_ste (no bias)."""
    def forward(self, x):
        return F.conv2d(x, sign_ste(self.weight), None, self.stride, self.padding)


class BinLinear(nn.Linear):
    """A dense layer whose weights are binarized by sign_ste (no bias)."""
    def forward(self, x):
        return F.linear(x, sign_ste(self.weight))
