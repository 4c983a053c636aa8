#!/usr/bin/env python3
"""Top-1 accuracy of a model on a test set (MNIST, Fashion-MNIST or CIFAR-10), run through bnnrun.

    bench/accuracy.py MODEL [--dataset mnist|fashion-mnist|cifar10] [--scale 255|1]
                      [--offset N] [--limit N] [--bnnrun PATH] [--mnist DIR] [--fashion-mnist DIR]
                      [--cifar10 DIR] [--bin | --compile [--bnncc PATH] [--target LIST]
                      [--bnncc-flags "OPTIONS"]]
                      [--device cpu|gpu|auto] [--compare-reference SOURCE]
                      [--compare-logits FILE.npy] [--save-predictions FILE.npy] [--chunk N] [--jobs N]
                      [--save-outputs PREFIX]

MODEL is anything bnnrun takes with --reference (.onnx or .bnn), run by the reference
interpreter; with --bin a model.bin from bnncc, run by libbnnrt on --device (default cpu);
with --compile an .onnx or .bnn that this tool first compiles with `bnncc -O3` (--target,
default bnncc's) into a temporary model.bin, runs on --device, and compares with the
reference interpreter on MODEL itself (the whole job of checking a model in one command).

Images are fed as float32 NCHW: [N,1,28,28] for MNIST and Fashion-MNIST (the IDX test files),
[N,3,32,32] RGB for CIFAR-10 (the 10,000 test JPEGs of ../shared/data/cifar10, decoded with
Pillow), divided by 255 unless --scale 255 (models that divide inside).

--compare-reference SOURCE also runs SOURCE (the .onnx or .bnn the model.bin came from, or
MODEL itself) through the reference interpreter and prints how many predictions differ.
--compare-logits FILE.npy prints how many predictions differ from argmax of saved logits
(e.g. PyTorch's own evaluation of the same weights). The exit status is 0 whatever the
accuracy; the last line is machine-readable: `accuracy: top1=... n=... differ_ref=...`."""
import argparse
import gzip
import io
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
shared = os.environ.get("BNN_SHARED", os.path.join(here, "..", "..", "shared"))


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    ndim = magic & 0xFF
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_idx_test(folder, limit=0):
    """uint8 [N,1,28,28] and int64 labels from t10k-*-idx?-ubyte.gz."""
    images = read_idx(os.path.join(folder, "t10k-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(folder, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)
    if limit:
        images, labels = images[:limit], labels[:limit]
    return images.reshape(-1, 1, 28, 28), labels


def load_cifar10_test(folder, limit=0):
    """uint8 [N,3,32,32] RGB and int64 labels from test_jpegs.bin + test_index.npz (Pillow)."""
    from PIL import Image
    blob = open(os.path.join(folder, "test_jpegs.bin"), "rb").read()
    index = np.load(os.path.join(folder, "test_index.npz"))
    off, labels = index["offsets"], index["labels"].astype(np.int64)
    n = len(off) - 1 if not limit else min(limit, len(off) - 1)
    images = np.stack([np.asarray(Image.open(io.BytesIO(blob[off[i]:off[i + 1]])).convert("RGB"))
                       for i in range(n)])
    return np.ascontiguousarray(images.transpose(0, 3, 1, 2)), labels[:n]


def load_dataset(name, a):
    """The test set's images a.offset .. a.offset + a.limit - 1 (all from a.offset if no limit)."""
    end = a.offset + a.limit if a.limit else 0
    if name == "mnist":
        images, labels = load_idx_test(a.mnist, end)
    elif name == "fashion-mnist":
        images, labels = load_idx_test(a.fashion_mnist, end)
    elif name == "cifar10":
        images, labels = load_cifar10_test(a.cifar10, end)
    else:
        raise SystemExit(f"accuracy.py: unknown dataset '{name}'")
    return images[a.offset:], labels[a.offset:]


def run_bnnrun(bnnrun, how, x, chunk, jobs=1):
    """Run x through bnnrun (`how`: [model.bin, --device, d] or [--reference, model]) in chunks,
    `jobs` bnnrun processes at a time, printing progress to stderr; returns the outputs in order."""
    from concurrent.futures import ThreadPoolExecutor
    step = chunk if chunk > 0 else len(x)
    starts = list(range(0, len(x), step))
    done = [0]

    def one(tmp, s):
        xin, yout = os.path.join(tmp, f"x{s}.npy"), os.path.join(tmp, f"y{s}.npy")
        np.save(xin, x[s:s + step])
        p = subprocess.run([bnnrun] + how + ["--input", xin, "--output", yout])
        if p.returncode != 0:
            return p.returncode
        done[0] += min(step, len(x) - s)
        if len(starts) > 1:
            print(f"  {done[0]}/{len(x)} images", file=sys.stderr, flush=True)
        return np.load(yout)

    with tempfile.TemporaryDirectory() as tmp:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            outs = list(pool.map(lambda s: one(tmp, s), starts))
    for o in outs:
        if isinstance(o, int):
            sys.exit(o)
    return np.concatenate(outs)


def predictions(y, n):
    pred = y.reshape(n, -1)
    return pred[:, 0] if pred.shape[1] == 1 and y.dtype.kind == "i" else pred.argmax(axis=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--dataset", default="mnist", choices=["mnist", "fashion-mnist", "cifar10"])
    ap.add_argument("--scale", type=float, default=1.0,
                    help="pixel range the model expects: 1 for [0,1] (default), 255 for 0..255")
    ap.add_argument("--limit", type=int, default=0, help="only N images (from --offset)")
    ap.add_argument("--offset", type=int, default=0, help="start at this test image (split a long run)")
    ap.add_argument("--bnnrun", default=os.path.join(here, "..", "build", "runtime", "bnnrun"))
    ap.add_argument("--mnist", default=os.path.join(shared, "data", "mnist"))
    ap.add_argument("--fashion-mnist", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--cifar10", default=os.path.join(shared, "data", "cifar10"))
    ap.add_argument("--bin", action="store_true", help="MODEL is a model.bin: run it with libbnnrt")
    ap.add_argument("--compile", action="store_true",
                    help="compile MODEL (.onnx/.bnn) with bnncc -O3, run the model.bin, and compare "
                         "with the reference interpreter on MODEL")
    ap.add_argument("--bnncc", default=os.path.join(here, "..", "build", "compiler", "bnncc"))
    ap.add_argument("--target", help="with --compile: bnncc --target (e.g. sm_90a or cpu)")
    ap.add_argument("--bnncc-flags", default="", help="with --compile: more bnncc options, e.g. "
                    "--float-convs=fp16")
    ap.add_argument("--device", default="cpu",
                    help="with --bin/--compile: cpu (default), gpu, auto, or a list (gpu,cpu) to run "
                         "the model.bin on each")
    ap.add_argument("--compare-reference", metavar="SOURCE",
                    help="also run SOURCE through the reference interpreter and count differing "
                         "predictions")
    ap.add_argument("--compare-logits", metavar="NPY",
                    help="count predictions that differ from argmax of these saved logits")
    ap.add_argument("--chunk", type=int, default=-1,
                    help="images per bnnrun call (0: all at once; default 1000 for cifar10, "
                         "which needs about 0.8 MB of arena per image, else all at once)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="bnnrun processes at a time over the chunks (the reference interpreter "
                         "is single-threaded: use the machine's cores)")
    ap.add_argument("--save-outputs", metavar="PREFIX",
                    help="write each run's raw outputs to PREFIX_<device|reference>.npy")
    ap.add_argument("--save-predictions", help="write the predicted classes to this .npy")
    a = ap.parse_args()

    if a.chunk < 0:
        a.chunk = 1000 if a.dataset == "cifar10" else 0
    if a.bin and a.compile:
        sys.exit("accuracy.py: --bin and --compile exclude each other")
    with tempfile.TemporaryDirectory() as tmp:
        if a.compile:
            source, a.model = a.model, os.path.join(tmp, "model.bin")
            cmd = [a.bnncc, source, "-O3", "-o", a.model] + ([f"--target={a.target}"] if a.target else []) + \
                a.bnncc_flags.split()
            t0 = time.time()
            if subprocess.run(cmd).returncode != 0:
                sys.exit(f"accuracy.py: bnncc failed on {source}")
            print(f"compiled {os.path.basename(source)} with bnncc -O3 {a.bnncc_flags} in {time.time() - t0:.1f} s")
            a.bin = True
            a.compare_reference = a.compare_reference or source
        evaluate(a)


def evaluate(a):
    images, labels = load_dataset(a.dataset, a)
    n = len(labels)
    x = images.astype(np.float32) * np.float32(a.scale / 255.0)
    runs = [(d, [a.model, "--device", d]) for d in a.device.split(",")] if a.bin \
        else [("reference", ["--reference", a.model])]
    summary = f"accuracy: n={n}"
    results = []
    for what, how in runs:
        t0 = time.time()
        y = run_bnnrun(a.bnnrun, how, x, a.chunk, a.jobs)
        pred = predictions(y, n)
        correct = int((pred == labels).sum())
        label = f"model.bin on {what}" if a.bin else what
        print(f"{os.path.basename(a.model)}: {correct}/{n} correct, top-1 {100.0 * correct / n:.2f} % "
              f"({a.dataset}, {label}, {time.time() - t0:.1f} s)")
        summary += f" top1_{what}={100.0 * correct / n:.2f}"
        results.append((what, y, pred))
        if a.save_outputs:
            np.save(f"{a.save_outputs}_{what}.npy", y)
    if a.save_predictions:
        np.save(a.save_predictions, results[0][2].astype(np.int64))
    if a.compare_reference:
        t0 = time.time()
        yref = run_bnnrun(a.bnnrun, ["--reference", a.compare_reference], x, a.chunk, a.jobs)
        ref = predictions(yref, n)
        if a.save_outputs:
            np.save(f"{a.save_outputs}_reference.npy", yref)
        rc = int((ref == labels).sum())
        print(f"reference {os.path.basename(a.compare_reference)}: {rc}/{n} correct, "
              f"top-1 {100.0 * rc / n:.2f} % ({time.time() - t0:.1f} s)")
        summary += f" top1_ref={100.0 * rc / n:.2f}"
        for what, y, pred in results:
            differ = int((ref != pred).sum())
            same_bits = y.dtype == yref.dtype and y.shape == yref.shape and y.tobytes() == yref.tobytes()
            print(f"  {what}: {differ} of {n} predictions differ from the reference; outputs "
                  f"{'bit-identical' if same_bits else 'NOT bit-identical'} to the reference's")
            summary += f" differ_ref_{what}={differ} identical_{what}={int(same_bits)}"
    if a.compare_logits:
        lp = np.load(a.compare_logits)[:n].argmax(axis=1)
        lc = int((lp == labels).sum())
        print(f"logits {os.path.basename(a.compare_logits)}: top-1 {100.0 * lc / n:.2f} %")
        summary += f" top1_logits={100.0 * lc / n:.2f}"
        for what, _, pred in results:
            differ = int((lp != pred).sum())
            print(f"  {what}: {differ} of {n} predictions differ from these logits' argmax")
            summary += f" differ_logits_{what}={differ}"
    print(summary)


if __name__ == "__main__":
    main()
