#!/usr/bin/env python3
"""The pipeline on BNNs exported from PyTorch: a binary VGG-style conv net (zero padding,
max-pool between the binary conv and its batch-norm, negative gammas) and a Bi-Real-style
net with real-valued shortcuts. For each: the -O3 IR (bnncc --emit=ir) and the imported model
give identical outputs on the reference interpreter (bnnrun --reference), and the binary
layers became fused ops with integer thresholds. Exit 77 without torch."""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    if not os.environ.get("BNN_TORCH_REEXEC") and os.path.exists("/usr/bin/python3") and \
            os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        os.environ["BNN_TORCH_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("skipping:", e)
    sys.exit(77)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_bnn import BinConv, BinLinear, sign_ste  # noqa: E402

BUILD = os.environ.get("BNN_BUILD_ROOT", "build")
BNNCC = os.path.join(BUILD, "compiler", "bnncc")
BNNRUN = os.path.join(BUILD, "runtime", "bnnrun")
checks = failures = 0


def check(cond, msg):
    global checks, failures
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", msg, file=sys.stderr)


class Vgg(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn0 = nn.BatchNorm2d(8)
        self.c1 = BinConv(8, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.c2 = BinConv(16, 24, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(24)
        self.fc = BinLinear(24 * 4 * 4, 10, bias=False)
        self.bn3 = nn.BatchNorm1d(10)

    def forward(self, x):
        x = sign_ste(self.bn0(self.stem(x)))
        x = sign_ste(self.bn1(F.max_pool2d(self.c1(x), 2)))
        x = sign_ste(self.bn2(F.max_pool2d(self.c2(x), 2)))
        return self.bn3(self.fc(torch.flatten(x, 1)))


class BiReal(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn0 = nn.BatchNorm2d(16)
        self.c1 = BinConv(16, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.c2 = BinConv(16, 16, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.bn0(self.stem(x))
        x = self.bn1(self.c1(sign_ste(x))) + x
        x = self.bn2(self.c2(sign_ste(x))) + x
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def random_bn(net):
    g = torch.Generator().manual_seed(3)
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


def reference(model, x_path, y_path):
    r = subprocess.run([BNNRUN, "--reference", model, "--input", x_path, "--output", y_path],
                       capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, f"bnnrun --reference {model}: {r.stderr.strip()[-300:]}")
    return np.load(y_path) if r.returncode == 0 else None


def run_case(name, net, want_fused, want_bn, want_report, want_chains=0):
    torch.manual_seed(1)
    random_bn(net)
    net.eval()
    x = torch.randn(6, 3, 16, 16)
    tmp = tempfile.mkdtemp(prefix="bnn_passes_")
    onnx_path = os.path.join(tmp, name + ".onnx")
    torch.onnx.export(net, x, onnx_path, opset_version=13, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    x_path = os.path.join(tmp, "x.npy")
    np.save(x_path, x.numpy())
    opt_path = os.path.join(tmp, name + ".O3.bnn")
    r = subprocess.run([BNNCC, onnx_path, "-O3", "--verify-each", "--emit=ir", "--report",
                        "-o", opt_path], capture_output=True, text=True, timeout=300, cwd=tmp)
    check(r.returncode == 0, f"{name}: bnncc -O3: {r.stderr.strip()[-400:]}")
    if r.returncode != 0:
        return
    if os.environ.get("BNN_TEST_VERBOSE"):
        print(r.stderr)
    text = open(opt_path).read()
    body = text[text.index("graph $"):]
    fused = body.count(" bconv2d ") + body.count(" bdense ")
    check(fused == want_fused, f"{name}: {fused} fused binary layers, want {want_fused}")
    chains = body.count(" bconv2d_chain ")
    check(chains == want_chains, f"{name}: {chains} bconv2d_chain, want {want_chains}")
    if want_chains:
        check(" add " not in body, f"{name}: a shortcut add left")
    check(body.count(" batchnorm ") <= want_bn,
          f"{name}: {body.count(' batchnorm ')} batchnorm left, want at most {want_bn}")
    for line in want_report:
        check(line in r.stderr, f"{name}: report lacks {line!r}")
    check(" sign " not in body, f"{name}: sign left")
    ref = reference(onnx_path, x_path, os.path.join(tmp, "ref.npy"))
    got = reference(opt_path, x_path, os.path.join(tmp, "got.npy"))
    if ref is not None and got is not None:
        diff = float(np.abs(ref - got).max())
        check(diff <= 1e-5 * max(1.0, float(np.abs(ref).max())),
              f"{name}: -O3 output differs from the imported model's by {diff}")
        check(bool((ref.argmax(1) == got.argmax(1)).all()), f"{name}: same classes")


def main():
    if not os.path.exists(BNNRUN) or not os.path.exists(BNNCC):
        print("skipping: bnncc/bnnrun not built")
        return 77
    # The float stem's and the head's batch-norms stay; both binary convs fuse with the
    # max-pool before their batch-norm (negative gammas pool as AND).
    run_case("vgg", Vgg(), 2, 2, ["bconv2d with the maxpool before an integer threshold"])
    # Bi-Real: each binarize reads bn(conv) + shortcut, a sum of two real streams, which no
    # per-channel threshold can express (the report says why); fuse-epilogue makes each block
    # one bconv2d_chain (batch-norm, shortcut add and binarize inside); the stem's batch-norm stays.
    run_case("bireal", BiReal(), 0, 1, ["add of two computed values",
                                        "+batchnorm+add(shortcut)+binarize -> bconv2d_chain"], 2)
    print(f"test_torch_passes: {checks - failures} of {checks} checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
