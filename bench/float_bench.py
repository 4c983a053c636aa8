#!/usr/bin/env python3
"""float_bench.py: the float conv2d and dense kernels alone (float_ops.cu, docs/kernels.md
"Float kernels"), one single-layer model.bin each, timed on the GPU by bnnrun.

    bench/float_bench.py [--build BUILD] [--batches 1,256] [--runs N] [--check]

Layers, with random weights: the ResNet-18 stem (conv 3->64 7x7/2 pads 3 at 224x224, relu
fused), Bi-Real's three 1x1 downsample convs (64->128 at 28x28, 128->256 at 14x14, 256->512
at 7x7), VGG-small's conv 3->128 3x3 at 32x32, the heads dense 512->1000 and 8192->10.
Each conv also runs as "old": the same model with one weight set to inf, which makes the
lowering fall back to the one-thread-per-output kernel (same shape and traffic). Times are
`bnnrun --bench N --resident` medians: device time of the run on the session's buffers,
no input or output copy (a single-layer run: that kernel, plus the graph launch); with a
bnnrun that has no --resident, the copies are included (the header line says which). --check
first compares the GPU output with the CPU path on a batch of 2 (bit for bit; slow on the
CPU for the stem). Prints a markdown table with the rate in multiply-adds per second."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

# name, C, H, W, O, k, stride, pad, relu  |  name, K, N
CONVS = [("stem 3->64 7x7/2 +relu", 3, 224, 224, 64, 7, 2, 3, True),
         ("1x1 64->128 @28", 64, 28, 28, 128, 1, 1, 0, False),
         ("1x1 128->256 @14", 128, 14, 14, 256, 1, 1, 0, False),
         ("1x1 256->512 @7", 256, 7, 7, 512, 1, 1, 0, False),
         ("vgg 3->128 3x3 @32", 3, 32, 32, 128, 3, 1, 1, False)]
DENSES = [("dense 512->1000", 512, 1000), ("dense 8192->10", 8192, 10)]


def f32(name, a):
    import base64
    dims = ",".join(map(str, a.shape))
    return f'const ${name}: f32[{dims}] = base64 "{base64.b64encode(a.astype("<f4").tobytes()).decode()}"\n'


def conv_model(path, c, h, w, o, k, s, p, relu, old, rng):
    wt = (rng.standard_normal((o, c, k, k)) * 0.1).astype(np.float32)
    if old:
        wt[0, 0, 0, 0] = np.inf  # non-finite weights: the lowering keeps bnn_conv2d
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    body = (f"    %y = f32[N,{o},{oh},{ow}] conv2d %x, $w, $b {{strides=[{s},{s}], pads=[{p},{p},{p},{p}]}}\n")
    out = "y"
    if relu:
        body += f"    %r = f32[N,{o},{oh},{ow}] relu %y\n"
        out = "r"
    with open(path, "w") as f:
        f.write(f32("w", wt) + f32("b", rng.standard_normal(o).astype(np.float32)) +
                f"\ngraph $bench(%x: f32[N,{c},{h},{w}]) -> (f32[N,{o},{oh},{ow}]) {{\n{body}    ret %{out}\n}}\n")
    return (c, h, w), o * oh * ow * c * k * k


def dense_model(path, k, n, rng):
    with open(path, "w") as f:
        f.write(f32("w", (rng.standard_normal((n, k)) * 0.05).astype(np.float32)) +
                f32("b", rng.standard_normal(n).astype(np.float32)) +
                f"\ngraph $bench(%x: f32[N,{k}]) -> (f32[N,{n}]) {{\n"
                f"    %y = f32[N,{n}] dense %x, $w, $b\n    ret %y\n}}\n")
    return (k,), n * k


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode:
        sys.exit(f"{' '.join(cmd)}: {p.stderr.strip()}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--batches", default="1,256")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    bnncc, bnnrun = (os.path.join(a.build, d, t) for d, t in (("compiler", "bnncc"), ("runtime", "bnnrun")))
    resident = "--resident" in run([bnnrun, "--help"])  # older bnnrun: times include the copies
    rng = np.random.default_rng(6)
    batches = [int(b) for b in a.batches.split(",")]
    cases = [(n, False, lambda p, c=c: conv_model(p, *c[1:], False, rng)) for c in CONVS for n in [c[0]]]
    cases += [(n + " (old)", True, lambda p, c=c: conv_model(p, *c[1:], True, rng)) for c in CONVS for n in [c[0]]]
    cases += [(d[0], False, lambda p, d=d: dense_model(p, d[1], d[2], rng)) for d in DENSES]
    print(f"times: bnnrun --bench {a.runs}{' --resident (no copies)' if resident else ' (input and output copies included)'}")
    print("| layer | batch | median ms | G multiply-adds/s |")
    print("|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, _, make in cases:
            model = os.path.join(tmp, "m.bnn")
            shape, macs = make(model)
            blob = os.path.join(tmp, "m.bin")
            run([bnncc, "-O3", "--target=sm_90a,sm_80", model, "-o", blob])
            if a.check:
                x = rng.standard_normal((2,) + shape).astype(np.float32)
                np.save(os.path.join(tmp, "x.npy"), x)
                for dev in ("gpu", "cpu"):
                    run([bnnrun, blob, "--device", dev, "--input", os.path.join(tmp, "x.npy"),
                         "--output", os.path.join(tmp, f"y_{dev}.npy")])
                g, c = (np.load(os.path.join(tmp, f"y_{d}.npy")) for d in ("gpu", "cpu"))
                same = np.array_equal(g.view(np.uint32), c.view(np.uint32)) or \
                    (np.array_equal(np.isnan(g), np.isnan(c)) and np.array_equal(g[~np.isnan(g)], c[~np.isnan(c)]))
                if not same:
                    sys.exit(f"{name}: GPU and CPU path differ")
            for b in batches:
                np.save(os.path.join(tmp, "x.npy"), rng.standard_normal((b,) + shape).astype(np.float32))
                out = run([bnnrun, blob, "--device", "gpu", "--input", os.path.join(tmp, "x.npy"),
                           "--bench", str(a.runs)] + (["--resident"] if resident else []))
                ms = float(re.search(r"median ([0-9.]+) ms", out).group(1))
                print(f"| {name} | {b} | {ms:.4f} | {macs * b / ms / 1e6:.0f} |", flush=True)


if __name__ == "__main__":
    main()
