#!/usr/bin/env python3
"""models.py: the benchmark architectures of issue 6, with random weights and random batch-norm
statistics, written the way users write binary nets in PyTorch, and exported to ONNX.

    bench/models.py OUTDIR [--only NAME,...]       export NAME.onnx for each model
    import models; models.build(name, binary=False) the float twin PyTorch is timed with

Binarization is `torch.where(x >= 0, 1, -1)` with a straight-through estimator, on activations
and on weights (sign_ste). Batch-norm statistics are random with some negative gammas, so the
folded thresholds have both directions. With binary=False the same module runs as a float
network (no sign on activations or weights): that is the network the binary one replaces, the
one the benchmark times in PyTorch fp16.

- birealnet18: binary ResNet-18, Bi-Real style, 224x224. Float stem (conv 7x7/2, BN, ReLU,
  max-pool 3x3/2), every 3x3 conv binary with its own real-valued shortcut (BN(conv(sign(x))) + x),
  downsampling shortcut avg-pool 2x2 + float 1x1 conv + BN, float head (global avg-pool, fc 1000).
- xnorresnet18: binary ResNet-18, XNOR style, 224x224: blocks take and give binary (+-1)
  activations; the shortcut is binary too (the identity of the +-1 input, or a binary 1x1/2
  conv + BN when downsampling); y = sign(BN(bconv(h)) + shortcut). Float stem and head as above,
  the stem's output batch-normed before its sign (XNOR-Net).
- vggsmall: binary VGG-small on CIFAR shapes (32x32): float conv 3->128, then binary 3x3 convs
  128-128(pool) 256-256(pool) 512-512(pool), a float classifier 8192 -> 10 on the last
  batch-norm's output.
- tfc: the TFC MLP 784-64-64-64-10, binary input, binary dense layers each with batch-norm.
- w1a2resnet18: issue 7's w1a2 ResNet-18 (224x224): exported from bench/qonnx_resnet.py (a
  Brevitas-style QONNX graph, written without torch); its float twin here is torchvision's
  ResNet-18 (BasicBlock: conv, BN, ReLU, conv, BN, + shortcut, ReLU; 1x1/2 conv + BN
  downsampling)."""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import qonnx_resnet


def sign_ste(x):
    """+1 where x >= 0 else -1, with the identity's gradient (0 maps to +1, a bit)."""
    return x + (torch.where(x >= 0, 1.0, -1.0) - x).detach()


class Act(nn.Module):
    """sign_ste on a binary net; the identity on its float twin."""
    def __init__(self, binary):
        super().__init__()
        self.binary = binary

    def forward(self, x):
        return sign_ste(x) if self.binary else x


class QConv(nn.Conv2d):
    """A conv whose weights are sign_ste'd when binary (no bias)."""
    def __init__(self, cin, cout, k, stride=1, padding=0, binary=True):
        super().__init__(cin, cout, k, stride=stride, padding=padding, bias=False)
        self.binary = binary

    def forward(self, x):
        w = sign_ste(self.weight) if self.binary else self.weight
        return F.conv2d(x, w, None, self.stride, self.padding)


class QLinear(nn.Linear):
    def __init__(self, cin, cout, binary=True):
        super().__init__(cin, cout, bias=False)
        self.binary = binary

    def forward(self, x):
        return F.linear(x, sign_ste(self.weight) if self.binary else self.weight)


def stem(binary):
    return nn.Sequential(nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64),
                         nn.ReLU(inplace=False), nn.MaxPool2d(3, stride=2, padding=1))


class BiRealBlock(nn.Module):
    """Two binary 3x3 convs, each with its own real-valued shortcut."""
    def __init__(self, cin, cout, stride, binary):
        super().__init__()
        self.a1 = Act(binary)
        self.c1 = QConv(cin, cout, 3, stride, 1, binary)
        self.bn1 = nn.BatchNorm2d(cout)
        self.a2 = Act(binary)
        self.c2 = QConv(cout, cout, 3, 1, 1, binary)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.AvgPool2d(2, stride=2), nn.Conv2d(cin, cout, 1, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        sc = x if self.down is None else self.down(x)
        x = self.bn1(self.c1(self.a1(x))) + sc
        return self.bn2(self.c2(self.a2(x))) + x


class XnorBlock(nn.Module):
    """A basic block on +-1 activations with a binary shortcut."""
    def __init__(self, cin, cout, stride, binary):
        super().__init__()
        self.c1 = QConv(cin, cout, 3, stride, 1, binary)
        self.bn1 = nn.BatchNorm2d(cout)
        self.a1 = Act(binary)
        self.c2 = QConv(cout, cout, 3, 1, 1, binary)
        self.bn2 = nn.BatchNorm2d(cout)
        self.a2 = Act(binary)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(QConv(cin, cout, 1, stride, 0, binary), nn.BatchNorm2d(cout))

    def forward(self, x):
        sc = x if self.down is None else self.down(x)
        h = self.a1(self.bn1(self.c1(x)))
        return self.a2(self.bn2(self.c2(h)) + sc)


class BasicBlock(nn.Module):
    """torchvision's ResNet basic block, float: the float twin of a w1a2 ResNet-18 block
    (binary is ignored: the w1a2 network is bench/qonnx_resnet.py's QONNX graph)."""
    def __init__(self, cin, cout, stride, binary):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        sc = x if self.down is None else self.down(x)
        return F.relu(self.bn2(self.c2(F.relu(self.bn1(self.c1(x))))) + sc)


class ResNet18(nn.Module):
    def __init__(self, block, binary, classes=1000):
        super().__init__()
        self.stem = stem(binary)
        # XNOR blocks take +-1 input: the stem's output batch-normed and binarized once, as in
        # XNOR-Net (a sign straight after the relu and max-pool would be +1 everywhere: the
        # first binary layer's input constant, as in this file before 2026-11-25).
        self.a0 = nn.Sequential(nn.BatchNorm2d(64), Act(binary)) if block is XnorBlock else nn.Identity()
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [block(cin, cout, stride, binary), block(cout, cout, 1, binary)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.layers(self.a0(self.stem(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class VggSmall(nn.Module):
    def __init__(self, binary, classes=10):
        super().__init__()
        cfg = [(128, False), (128, True), (256, False), (256, True), (512, False), (512, True)]
        mods, cin = [], 3
        for i, (cout, pool) in enumerate(cfg):
            if i == 0:
                mods += [nn.Conv2d(3, cout, 3, padding=1, bias=False)]
            else:
                mods += [Act(binary), QConv(cin, cout, 3, 1, 1, binary)]
            if pool:
                mods += [nn.MaxPool2d(2)]
            mods += [nn.BatchNorm2d(cout)]
            cin = cout
        # The classifier reads the last batch-norm's real values (as IR-Net's VGG-small does):
        # a float dense layer over sign()ed features (b1 x f32) has no code generator yet.
        self.features = nn.Sequential(*mods)
        self.fc = nn.Linear(512 * 4 * 4, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))


class Tfc(nn.Module):
    def __init__(self, binary):
        super().__init__()
        mods, cin = [Act(binary)], 784
        for i, cout in enumerate((64, 64, 64, 10)):
            mods += [QLinear(cin, cout, binary), nn.BatchNorm1d(cout)]
            if i < 3:
                mods += [Act(binary)]
            cin = cout
        self.body = nn.Sequential(*mods)

    def forward(self, x):
        return self.body(torch.flatten(x, 1))


MODELS = {
    # name: (constructor, input shape of one item)
    "birealnet18": (lambda b: ResNet18(BiRealBlock, b), (3, 224, 224)),
    "xnorresnet18": (lambda b: ResNet18(XnorBlock, b), (3, 224, 224)),
    "vggsmall": (lambda b: VggSmall(b), (3, 32, 32)),
    "tfc": (lambda b: Tfc(b), (1, 28, 28)),
    "w1a2resnet18": (lambda b: ResNet18(BasicBlock, b), (3, 224, 224)),  # the float twin
}


def randomize(net, seed):
    """Random weights and non-trivial batch-norm statistics (some gammas negative)."""
    g = torch.Generator().manual_seed(seed)
    for m in net.modules():
        if isinstance(m, (QConv, QLinear)) and m.binary:
            # Only the sign of a binary layer's latent weights matters: two values keep the
            # exported file compressible (it travels to the GPU machine gzipped).
            m.weight.data = (torch.rand(m.weight.shape, generator=g) < 0.5).float() * 0.1 - 0.05
        elif isinstance(m, (nn.Conv2d, nn.Linear)):
            fan_in = m.weight[0].numel()
            m.weight.data = torch.randn(m.weight.shape, generator=g) / fan_in ** 0.5
            if m.bias is not None:
                m.bias.data = torch.randn(m.bias.shape, generator=g) * 0.1
        elif isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            c = m.num_features
            gamma = torch.rand(c, generator=g) + 0.25
            gamma[1::5] *= -1
            m.weight.data = gamma
            m.bias.data = torch.randn(c, generator=g) * 0.5
            # Means near the pre-activation's scale keep the signs mixed rather than all +1.
            m.running_mean.data = torch.randn(c, generator=g) * 2
            m.running_var.data = torch.rand(c, generator=g) * 3 + 0.5


def build(name, binary=True, seed=1):
    ctor, shape = MODELS[name]
    net = ctor(binary)
    randomize(net, seed)
    if name == "xnorresnet18":
        # The stem's batch-norm calibrated on what it reads (the max-pool of a relu), per channel,
        # as a trained one is: its signs then vary within the channels (randomize's statistics
        # left 51 of 64 channels one sign everywhere on N(0, 1) inputs).
        g = torch.Generator().manual_seed(seed + 1)
        with torch.no_grad():
            y = net.stem(torch.randn(8, *shape, generator=g))
        bn = net.a0[0]
        bn.running_mean.data = y.mean((0, 2, 3))
        bn.running_var.data = y.var((0, 2, 3)) + 1e-3
    return net.eval(), shape


def main():
    outdir, names = qonnx_resnet.command_line(MODELS)
    for name in names:
        if name in qonnx_resnet.MODELS:  # a QONNX graph, not a torch export
            qonnx_resnet.save(name, outdir)
            continue
        net, shape = build(name)
        x = torch.randn(2, *shape)
        path = os.path.join(outdir, name + ".onnx")
        with torch.no_grad():
            torch.onnx.export(net, x, path, opset_version=13, input_names=["x"], output_names=["y"],
                              dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
        print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
