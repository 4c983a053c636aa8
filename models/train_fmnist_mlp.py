#!/usr/bin/env python3
"""Train a binary MLP on Fashion-MNIST and export it to ONNX.

    python3 models/train_fmnist_mlp.py [--data /usr/share/datasets/fashion-mnist] [--out models]
                                       [--device cpu|cuda] [--epochs 20]

The bundled models/fmnist_mlp.onnx was made with `--device cuda --epochs 20` on one H100
(41 s; torch 2.11); on the CPU an epoch takes about 40 s on two idle cores (torch 1.13 works).

Data: Debian's `dataset-fashion-mnist` (`apt-get install dataset-fashion-mnist`), the IDX
files under /usr/share/datasets/fashion-mnist/.

Architecture (``--hidden H``, default 512):

    x float32 [N,1,28,28] in [0,1] -> (x - 0.2860) / 0.3530       (inside the graph)
    flatten -> linear(784->H)  float weights, no bias -> BN -> sign  first layer: float
    linear(H->H)               binary weights         -> BN -> sign
    linear(H->10)              binary weights         -> BN         logits

The first layer keeps float weights on the float pixels (no input binarization); every other
layer has binary weights on binary activations. The classifier is binary too with a
batch-norm giving the logits their scale (bnncc has no code generator yet for a dense layer
with float weights on binary activations). Signs are straight-through estimators written the
way a user writes them:

    weights:      w + (where(w >= 0, 1.0, -1.0) - w).detach()   (latent w clipped to [-1, 1])
    activations:  the same, of clamp(x, -1, 1) in training (the hardtanh STE gradient); the
                  clamp does not change the value, so eval mode (exported) leaves it out

Adam with a cosine schedule, batch 100, fixed seeds. Writes OUT/fmnist_mlp.onnx
(torch.onnx.export of the model in eval mode, opset 13) and prints PyTorch's float32 test
accuracy of the final weights."""
import argparse
import gzip
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def sign_ste(x):
    s = torch.where(x >= 0, 1.0, -1.0)
    return x + (s - x).detach()


def act_ste(x, training):
    return sign_ste(torch.clamp(x, -1.0, 1.0) if training else x)


class BinLinear(nn.Linear):
    def forward(self, x):
        return F.linear(x, sign_ste(self.weight))


class MLP(nn.Module):
    def __init__(self, hidden=512, num_classes=10):
        super().__init__()
        self.fc0 = nn.Linear(784, hidden, bias=False)
        self.bn0 = nn.BatchNorm1d(hidden)
        self.fc1 = BinLinear(hidden, hidden, bias=False)
        self.bn1 = nn.BatchNorm1d(hidden)
        self.fc2 = BinLinear(hidden, num_classes, bias=False)
        self.bn2 = nn.BatchNorm1d(num_classes)

    def forward(self, x):
        x = torch.flatten((x - 0.2860) / 0.3530, 1)
        x = act_ste(self.bn0(self.fc0(x)), self.training)
        x = act_ste(self.bn1(self.fc1(x)), self.training)
        return self.bn2(self.fc2(x))

    def clip_latent(self):
        with torch.no_grad():
            for fc in (self.fc1, self.fc2):
                fc.weight.clamp_(-1.0, 1.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--bs", type=int, default=100)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    torch.set_num_threads(a.threads)

    def load(prefix):
        x = read_idx(os.path.join(a.data, f"{prefix}-images-idx3-ubyte.gz"))
        y = read_idx(os.path.join(a.data, f"{prefix}-labels-idx1-ubyte.gz"))
        return (torch.from_numpy(x.astype(np.float32) / 255.0).view(-1, 1, 28, 28),
                torch.from_numpy(y.astype(np.int64)))

    dev = a.device
    xtr, ytr = (t.to(dev) for t in load("train"))
    xte, yte = (t.to(dev) for t in load("t10k"))
    model = MLP(a.hidden).to(dev)
    binw = [model.fc1.weight, model.fc2.weight]
    other = [p for p in model.parameters() if all(p is not q for q in binw)]
    opt = torch.optim.Adam([{"params": binw}, {"params": other}], lr=a.lr)
    n = xtr.shape[0]
    spe = n // a.bs
    total = a.epochs * spe
    step = 0

    def evaluate():
        model.eval()
        with torch.no_grad():
            out = torch.cat([model(xte[i:i + 2000]) for i in range(0, xte.shape[0], 2000)])
        return 100.0 * float((out.argmax(1) == yte).float().mean()), out

    t0 = time.time()
    for ep in range(a.epochs):
        model.train()
        perm = torch.randperm(n, device=dev)
        for i in range(spe):
            lr = 0.5 * a.lr * (1 + math.cos(math.pi * step / total))
            for g in opt.param_groups:
                g["lr"] = lr
            idx = perm[i * a.bs:(i + 1) * a.bs]
            loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            model.clip_latent()
            step += 1
        acc, _ = evaluate()
        print(f"epoch {ep + 1}/{a.epochs} loss {float(loss):.3f} test {acc:.2f} % "
              f"({time.time() - t0:.0f}s)", flush=True)
    acc, out = evaluate()
    np.save(os.path.join(a.out, "fmnist_mlp_torch_logits.npy"), out.cpu().numpy())
    print(f"final: {a.epochs} epochs, hidden {a.hidden}, seed {a.seed}, bs {a.bs}, lr {a.lr}: "
          f"float32 PyTorch test top-1 {acc:.2f} %")
    path = os.path.join(a.out, "fmnist_mlp.onnx")
    torch.save({k: v.cpu() for k, v in model.state_dict().items()}, os.path.join(a.out, "fmnist_mlp.pt"))
    model.cpu().eval()
    kw = dict(opset_version=13, do_constant_folding=False, input_names=["x"],
              output_names=["logits"], dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}})
    x = torch.rand(1, 1, 28, 28)
    try:
        torch.onnx.export(model, x, path, dynamo=False, **kw)
    except TypeError:  # torch 1.x has no dynamo argument
        torch.onnx.export(model, x, path, **kw)
    print(f"exported {path} ({os.path.getsize(path)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
