"""test_torch.py: BNNs written the way PyTorch users write them, exported with
torch.onnx.export and run through `bnnrun --reference`, compared with PyTorch's own output:

- a binary VGG-style CIFAR net (zero padding, max-pool, batch-norm with negative gammas,
  binarized activations with a straight-through estimator), once with Sign (Sign(0) = 0:
  stays float) and once with where(x >= 0, 1, -1) (becomes binary);
- a Bi-Real-style residual block with real-valued shortcuts and an avg-pool downsample.

Exit 77 when torch is not importable (Debian python3-torch; when the interpreter running the
tests lacks it, the system python3 is tried)."""
import os
import shutil
import subprocess
import sys
import tempfile


def reexec_with_torch():
    for exe in ["/usr/bin/python3"]:
        if os.path.realpath(exe) == os.path.realpath(sys.executable) or not os.path.exists(exe):
            continue
        r = subprocess.run([exe, "-c", "import torch, numpy"], capture_output=True)
        if r.returncode == 0:
            os.execv(exe, [exe] + sys.argv)


try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    if not os.environ.get("BNN_TORCH_REEXEC"):
        os.environ["BNN_TORCH_REEXEC"] = "1"
        reexec_with_torch()
    print("skipping:", e)
    sys.exit(77)

BUILD = os.environ.get("BNN_BUILD_ROOT", "build")
BNNRUN = os.path.join(BUILD, "runtime", "bnnrun")
BNNCC = os.path.join(BUILD, "compiler", "bnncc")
passes = failures = 0
torch.manual_seed(0)


def check(cond, msg):
    global passes, failures
    if cond:
        passes += 1
        print("ok:", msg)
    else:
        failures += 1
        print("FAIL:", msg)


def binarize(x, kind):
    if kind == "sign":
        return x + (torch.sign(x) - x).detach()  # the STE as users write it
    b = torch.where(x >= 0, torch.ones_like(x), -torch.ones_like(x))
    return x + (b - x).detach()


class BinConv(nn.Conv2d):
    def forward(self, x):
        w = self.weight + (torch.sign(self.weight) - self.weight).detach()
        return F.conv2d(x, w, None, self.stride, self.padding)


class BinLinear(nn.Linear):
    def forward(self, x):
        w = self.weight + (torch.sign(self.weight) - self.weight).detach()
        return F.linear(x, w)


def randomize_bn(m):
    for bn in m.modules():
        if isinstance(bn, (nn.BatchNorm2d, nn.BatchNorm1d)):
            c = bn.num_features
            g = torch.rand(c) + 0.5
            g[::3] *= -1  # negative gammas flip the threshold's direction
            bn.weight.data = g
            bn.bias.data = torch.randn(c)
            bn.running_mean.data = torch.randn(c) * 3
            bn.running_var.data = torch.rand(c) * 4 + 0.5


class VGG(nn.Module):
    def __init__(self, act):
        super().__init__()
        self.act = act
        self.conv0 = nn.Conv2d(3, 16, 3, padding=1, bias=False)  # float first layer
        self.bn0 = nn.BatchNorm2d(16)
        self.conv1 = BinConv(16, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = BinConv(16, 32, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(32)
        self.fc = BinLinear(32 * 8 * 8, 10, bias=False)
        self.bn3 = nn.BatchNorm1d(10)

    def forward(self, x):
        x = binarize(self.bn0(self.conv0(x)), self.act)
        x = F.max_pool2d(self.conv1(x), 2)
        x = binarize(self.bn1(x), self.act)
        x = F.max_pool2d(self.conv2(x), 2)
        x = binarize(self.bn2(x), self.act)
        return self.bn3(self.fc(torch.flatten(x, 1)))


class BiRealBlock(nn.Module):
    """Bi-Real: y = BN(binconv(sign(x))) + x, real shortcut; a downsampling variant with
    avg-pool + 1x1 float conv on the shortcut."""

    def __init__(self, cin, cout, stride, act):
        super().__init__()
        self.act = act
        self.conv = BinConv(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.AvgPool2d(2, stride=2), nn.Conv2d(cin, cout, 1, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        sc = x if self.down is None else self.down(x)
        return self.bn(self.conv(binarize(x, self.act))) + sc


class BiReal(nn.Module):
    def __init__(self, act):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.b1 = BiRealBlock(16, 16, 1, act)
        self.b2 = BiRealBlock(16, 32, 2, act)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = self.b2(self.b1(self.bn(self.stem(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def run_case(name, net, x, expect):
    net.eval()
    randomize_bn(net)
    with torch.no_grad():
        ref = net(x).numpy()
    tmp = tempfile.mkdtemp(prefix="bnn_torch_")
    path = os.path.join(tmp, name + ".onnx")
    torch.onnx.export(net, x, path, opset_version=13, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    xin, yout = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
    np.save(xin, x.numpy())
    r = subprocess.run([BNNRUN, "--reference", path, "--input", xin, "--output", yout],
                       capture_output=True, text=True)
    if r.returncode != 0:
        check(False, "%s: bnnrun failed: %s" % (name, r.stderr.strip()))
        shutil.rmtree(tmp, ignore_errors=True)
        return
    got = np.load(yout)
    diff = float(np.abs(got - ref).max())
    scale = max(1.0, float(np.abs(ref).max()))
    check(diff <= 1e-4 * scale, "%s: matches PyTorch (max diff %.3g, scale %.3g)" % (name, diff,
                                                                                    scale))
    check(bool((got.argmax(1) == ref.argmax(1)).all()), "%s: same argmax as PyTorch" % name)
    rep = subprocess.run([BNNCC, path, "--report", "--emit=ir", "-O0", "-o", os.devnull],
                         capture_output=True, text=True)
    text = rep.stdout + rep.stderr
    print(text)
    for line in expect:
        check(line in text, "%s: report says %r" % (name, line))
    shutil.rmtree(tmp, ignore_errors=True)


def main():
    if not os.path.exists(BNNRUN):
        print("skipping: bnnrun not built")
        return 77
    x = torch.randn(4, 3, 32, 32)
    run_case("vgg_where", VGG("where"), x, ["summary: 3 of 4 conv/dense layers binary"])
    run_case("vgg_sign", VGG("sign"), x, ["Sign(0) = 0 is not a bit", "summary: 0 of 4"])
    run_case("bireal_where", BiReal("where"), x, ["summary: 2 of 5 conv/dense layers binary"])
    run_case("bireal_sign", BiReal("sign"), x, ["Sign(0) = 0 is not a bit"])
    print("%d passed, %d failed" % (passes, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
