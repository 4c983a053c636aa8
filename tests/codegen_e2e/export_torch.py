#!/usr/bin/env python3
"""export_torch.py OUTDIR: export two small binary conv nets from PyTorch to ONNX for the
end-to-end codegen test (exit 77 without torch). Batch-norm statistics are random with
negative and zero gammas, so folded thresholds have both directions.

- vggish.onnx: float stem, binary convs with a max-pool between each and its batch-norm
  (2x2 and a 3x3 / stride 2 / pad 1 pool), zero padding, a binary classifier on the
  flattened bits.
- birealish.onnx: float stem, binary convs whose batch-norm output is added to a real-valued
  shortcut, global average pool, float classifier with bias."""
import os
import sys

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    print("skipping:", e)
    sys.exit(77)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_bnn import BinConv, BinLinear, sign_ste  # noqa: E402


class Vggish(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 12, 3, padding=1, bias=False)
        self.bn0 = nn.BatchNorm2d(12)
        self.c1 = BinConv(12, 40, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(40)
        self.c2 = BinConv(40, 33, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(33)
        self.fc = BinLinear(33 * 4 * 4, 10, bias=False)
        self.bn3 = nn.BatchNorm1d(10)

    def forward(self, x):
        x = sign_ste(self.bn0(self.stem(x)))
        x = sign_ste(self.bn1(F.max_pool2d(self.c1(x), 2)))
        x = sign_ste(self.bn2(F.max_pool2d(self.c2(x), 3, stride=2, padding=1)))
        return self.bn3(self.fc(torch.flatten(x, 1)))


class Birealish(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 20, 3, padding=1, bias=False)
        self.bn0 = nn.BatchNorm2d(20)
        self.c1 = BinConv(20, 20, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(20)
        self.c2 = BinConv(20, 20, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(20)
        self.fc = nn.Linear(20, 7)

    def forward(self, x):
        x = self.bn0(self.stem(x))
        x = self.bn1(self.c1(sign_ste(x))) + x
        x = F.relu(self.bn2(self.c2(sign_ste(x)))) + x
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def randomize_bn(net, seed):
    g = torch.Generator().manual_seed(seed)
    for m in net.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            c = m.num_features
            gamma = torch.rand(c, generator=g) + 0.25
            gamma[1::3] *= -1
            gamma[2::7] = 0.0
            m.weight.data = gamma
            m.bias.data = torch.randn(c, generator=g)
            m.running_mean.data = torch.randn(c, generator=g) * 4
            m.running_var.data = torch.rand(c, generator=g) * 3 + 0.25


def main():
    out = sys.argv[1]
    torch.manual_seed(7)
    for name, net in (("vggish", Vggish()), ("birealish", Birealish())):
        randomize_bn(net, 11)
        net.eval()
        x = torch.randn(2, 3, 16, 16)
        torch.onnx.export(net, x, os.path.join(out, name + ".onnx"), opset_version=13, input_names=["x"],
                          output_names=["y"], dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
