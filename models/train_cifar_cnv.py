#!/usr/bin/env python3
"""Train a binary VGG-small / FINN-CNV-style network on CIFAR-10 and export it to ONNX.

    python3 models/train_cifar_cnv.py --data .data/cifar10 --out OUTDIR [--epochs N | --budget S]

Architecture (``--width W``, default 96; W=128 is the classic VGG-small):

    x in [0,1] -> (x - mean) / std                               (inside the graph)
    conv3x3(3->W)        float  -> BN -> sign                    first layer: float weights
    conv3x3(W->W)        binary -> maxpool2 -> BN -> sign
    conv3x3(W->2W)       binary -> BN -> sign
    conv3x3(2W->2W)      binary -> maxpool2 -> BN -> sign
    conv3x3(2W->4W)      binary -> BN -> sign
    conv3x3(4W->4W)      binary -> maxpool2 -> BN -> sign
    flatten (4W*4*4) -> linear(->10) binary -> BN                last layer: binary weights on
                                                                 binary activations, float BN

(bnncc has no code generator yet for a dense layer with float weights on binary activations,
so the classifier is binary too, with a batch-norm giving the logits their scale.)

All convs have zero padding 1 and no bias. Binary layers see sign(weights) and sign
activations; both signs are written as straight-through estimators the way a user writes them:

    weights:      w + (where(w >= 0, 1.0, -1.0) - w).detach()   (latent w clipped to [-1, 1])
    activations:  the same, of clamp(x, -1, 1) in training (the hardtanh STE gradient); the
                  clamp does not change the value, so eval mode (exported) leaves it out

Training: the whole data set is decoded once (Pillow, the same decoder as bench/accuracy.py;
torchvision's GPU decoder if Pillow is missing) into GPU-resident uint8 tensors; random crop
(pad 4) + horizontal flip on the GPU; Adam with a cosine schedule, bf16 autocast,
channels_last; fixed seeds. ``--budget S`` picks the number of epochs after timing the first
two so that training takes about S seconds (until then the cosine schedule assumes --epochs).
Writes OUT/cifar_cnv.pt (state_dict), OUT/cifar_cnv.onnx (torch.onnx.export of the model in
eval mode, legacy exporter, opset 13, the binary layers' weights stored as their int8 signs:
2.7 MB instead of 10.6; ``--export-from OUT/cifar_cnv.pt`` redoes only the export), OUT/cifar_cnv_log.txt and OUT/cifar_cnv_torch_logits.npy
(the float32 test logits), and prints the test accuracy of the final weights in float32
(PyTorch's own evaluation, on the Pillow-decoded test set)."""
import argparse
import io
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

MEAN = (0.4914, 0.4822, 0.4465)
STD = (0.2470, 0.2435, 0.2616)


def sign_ste(x):
    s = torch.where(x >= 0, 1.0, -1.0)
    return x + (s - x).detach()


def act_ste(x, training):
    # In training the STE input is clamped to [-1, 1] (the usual hardtanh STE gradient). The
    # clamp does not change the forward value (sign(clamp(x)) == sign(x)), so in eval mode,
    # which is what gets exported, the plain STE is used and the graph has no Clip.
    return sign_ste(torch.clamp(x, -1.0, 1.0) if training else x)


def binary_weight(layer):
    """The latent float weights in training; after compact_binary_weights(), their signs as
    int8 (cast to float in the graph)."""
    signs = getattr(layer, "weight_sign", None)
    return layer.weight if signs is None else signs.float()


class BinConv(nn.Conv2d):
    def forward(self, x):
        return F.conv2d(x, sign_ste(binary_weight(self)), None, self.stride, self.padding)


class BinLinear(nn.Linear):
    def forward(self, x):
        return F.linear(x, sign_ste(binary_weight(self)))


def compact_binary_weights(model):
    """For export: each binary layer keeps only sign(w) as an int8 buffer (1 byte a weight
    instead of 4; the exported graph casts it to float before the same STE). The effective
    weights are the same +-1 values, so the outputs are too."""
    for m in model.modules():
        if isinstance(m, (BinConv, BinLinear)):
            signs = torch.where(m.weight >= 0, 1, -1).to(torch.int8)
            del m._parameters["weight"]
            m.register_buffer("weight_sign", signs)


class CNV(nn.Module):
    def __init__(self, width=96, num_classes=10):
        super().__init__()
        w = width
        chans = [(3, w), (w, w), (w, 2 * w), (2 * w, 2 * w), (2 * w, 4 * w), (4 * w, 4 * w)]
        self.pool_after = [False, True, False, True, False, True]
        convs = []
        for i, (ci, co) in enumerate(chans):
            conv = nn.Conv2d if i == 0 else BinConv
            convs.append(conv(ci, co, 3, padding=1, bias=False))
        self.convs = nn.ModuleList(convs)
        self.bns = nn.ModuleList([nn.BatchNorm2d(co) for _, co in chans])
        self.fc = BinLinear(4 * w * 4 * 4, num_classes, bias=False)
        self.bn_out = nn.BatchNorm1d(num_classes)
        self.register_buffer("mean", torch.tensor(MEAN).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(STD).view(1, 3, 1, 1))

    def forward(self, x):
        x = (x - self.mean) / self.std
        for conv, bn, pool in zip(self.convs, self.bns, self.pool_after):
            x = conv(x)
            if pool:
                x = F.max_pool2d(x, 2)
            x = act_ste(bn(x), self.training)
        return self.bn_out(self.fc(torch.flatten(x, 1)))

    def clip_latent(self):
        with torch.no_grad():
            for conv in list(self.convs[1:]) + [self.fc]:
                conv.weight.clamp_(-1.0, 1.0)


def load_split(data, split, device):
    """uint8 NCHW tensor on device and int64 labels."""
    blob = open(os.path.join(data, f"{split}_jpegs.bin"), "rb").read()
    index = np.load(os.path.join(data, f"{split}_index.npz"))
    off = index["offsets"]
    labels = torch.from_numpy(index["labels"].astype(np.int64)).to(device)
    try:
        from PIL import Image
        imgs = np.stack([np.asarray(Image.open(io.BytesIO(blob[off[i]:off[i + 1]])).convert("RGB"))
                         for i in range(len(off) - 1)])
        x = torch.from_numpy(imgs).permute(0, 3, 1, 2).contiguous().to(device)
        how = "pillow"
    except ImportError:
        import torchvision.io as tio
        raw = np.frombuffer(blob, np.uint8)
        datas = [torch.from_numpy(raw[off[i]:off[i + 1]].copy()) for i in range(len(off) - 1)]
        x = torch.stack(tio.decode_jpeg(datas, mode=tio.ImageReadMode.RGB, device=device))
        how = "torchvision decode_jpeg"
    return x, labels, how


def augment(xb):
    """Random crop 32 from zero-padded 40 and horizontal flip, on the GPU; xb float NCHW."""
    n = xb.shape[0]
    p = F.pad(xb, (4, 4, 4, 4))
    dx = torch.randint(0, 9, (n,), device=xb.device)
    dy = torch.randint(0, 9, (n,), device=xb.device)
    ar = torch.arange(32, device=xb.device)
    rows = (dy[:, None] + ar[None, :])  # n x 32
    cols = (dx[:, None] + ar[None, :])
    flip = torch.rand(n, device=xb.device) < 0.5
    cols = torch.where(flip[:, None], cols.flip(1), cols)
    idx_r = rows[:, None, :, None].expand(n, 3, 32, 40)
    p = torch.gather(p, 2, idx_r)
    idx_c = cols[:, None, None, :].expand(n, 3, 32, 32)
    return torch.gather(p, 3, idx_c)


@torch.no_grad()
def evaluate(model, x, y, bs=1000, amp=False, save=None):
    model.eval()
    correct = 0
    outs = []
    for i in range(0, x.shape[0], bs):
        xb = x[i:i + bs].float().div_(255.0).contiguous(memory_format=torch.channels_last)
        with torch.autocast("cuda" if amp else "cpu", dtype=torch.bfloat16, enabled=amp):
            out = model(xb)
        correct += int((out.argmax(1) == y[i:i + bs]).sum())
        outs.append(out.float().cpu())
    if save:
        np.save(save, torch.cat(outs).numpy())
    return 100.0 * correct / x.shape[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", ".data", "cifar10"))
    ap.add_argument("--out", default=".")
    ap.add_argument("--width", type=int, default=96)
    ap.add_argument("--epochs", type=int, default=60)
    ap.add_argument("--budget", type=float, default=0, help="seconds of training; overrides --epochs")
    ap.add_argument("--bs", type=int, default=256)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--limit", type=int, default=0, help="train on the first N images (smoke test)")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--export-from", metavar="STATE_DICT",
                    help="train nothing: load this cifar_cnv.pt and export OUT/cifar_cnv.onnx")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.export_from:
        model = CNV(a.width)
        model.load_state_dict(torch.load(a.export_from, map_location="cpu"))
        export(model, os.path.join(a.out, "cifar_cnv.onnx"))
        return 0
    logf = open(os.path.join(a.out, "cifar_cnv_log.txt"), "w")

    def log(*args):
        s = " ".join(str(v) for v in args)
        print(s, flush=True)
        logf.write(s + "\n")
        logf.flush()

    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cudnn.benchmark = True
    t0 = time.time()
    xtr, ytr, how = load_split(a.data, "train", dev)
    xte, yte, _ = load_split(a.data, "test", dev)
    if a.limit:
        xtr, ytr = xtr[:a.limit], ytr[:a.limit]
    log(f"torch {torch.__version__} on {dev}; decoded {xtr.shape[0]} train / {xte.shape[0]} test with {how} "
        f"in {time.time() - t0:.1f}s")

    model = CNV(a.width).to(dev).to(memory_format=torch.channels_last)
    fwd = torch.compile(model) if a.compile else model
    bin_params = [c.weight for c in model.convs[1:]] + [model.fc.weight]
    other = [p for p in model.parameters() if all(p is not q for q in bin_params)]
    opt = torch.optim.Adam([{"params": bin_params, "weight_decay": 0.0},
                            {"params": other, "weight_decay": 5e-5}], lr=a.lr)
    n = xtr.shape[0]
    steps_per_epoch = n // a.bs
    amp = dev == "cuda"
    epochs = a.epochs
    step = 0

    def set_lr(total_steps):
        lr = 0.5 * a.lr * (1 + math.cos(math.pi * min(step, total_steps) / total_steps))
        for g in opt.param_groups:
            g["lr"] = lr

    ep = 0
    t_train = time.time()
    while ep < epochs:
        model.train()
        perm = torch.randperm(n, device=dev)
        tl = 0.0
        te = time.time()
        for i in range(steps_per_epoch):
            set_lr(epochs * steps_per_epoch)
            idx = perm[i * a.bs:(i + 1) * a.bs]
            xb = augment(xtr[idx].float().div_(255.0)).contiguous(memory_format=torch.channels_last)
            with torch.autocast("cuda" if amp else "cpu", dtype=torch.bfloat16, enabled=amp):
                out = fwd(xb)
                loss = F.cross_entropy(out.float(), ytr[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            model.clip_latent()
            step += 1
            if i % 50 == 0:
                tl = float(loss)
        ep += 1
        if dev == "cuda":
            torch.cuda.synchronize()
        dt = time.time() - te
        if ep == 2 and a.budget:  # the first epoch includes cudnn's warm-up: time the second
            epochs = max(3, 2 + int((a.budget - (time.time() - t_train)) / dt))
            log(f"second epoch {dt:.1f}s -> {epochs} epochs for a {a.budget:.0f}s budget")
        if ep % 5 == 0 or ep == epochs:
            acc = evaluate(model, xte, yte, amp=amp)
            log(f"epoch {ep}/{epochs} loss {tl:.3f} lr {opt.param_groups[0]['lr']:.2e} "
                f"test(bf16) {acc:.2f} % epoch {dt:.1f}s total {time.time() - t_train:.0f}s")
            torch.save(model.state_dict(), os.path.join(a.out, "cifar_cnv.pt"))
    model.eval()
    torch.save({k: v.cpu() for k, v in model.state_dict().items()}, os.path.join(a.out, "cifar_cnv.pt"))
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    acc32 = evaluate(model.float(), xte, yte, amp=False,
                     save=os.path.join(a.out, "cifar_cnv_torch_logits.npy"))
    log(f"final: {epochs} epochs, width {a.width}, seed {a.seed}, bs {a.bs}, lr {a.lr}: "
        f"float32 PyTorch test top-1 {acc32:.2f} %")
    export(model.cpu(), os.path.join(a.out, "cifar_cnv.onnx"), log)
    return 0


def export(model, path, log=print):
    model.eval()
    compact_binary_weights(model)
    x = torch.rand(1, 3, 32, 32)
    # do_constant_folding=False: folding would store w, sign(w) - w and more as separate
    # initializers (3x the size); bnncc folds the STE on constants itself.
    kw = dict(opset_version=13, do_constant_folding=False, input_names=["x"], output_names=["logits"],
              dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}})
    try:
        torch.onnx.export(model, x, path, dynamo=False, **kw)
    except TypeError:  # torch 1.x has no dynamo argument
        torch.onnx.export(model, x, path, **kw)
    log(f"exported {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    sys.exit(main())
