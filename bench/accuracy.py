#!/usr/bin/env python3
"""Top-1 accuracy of a model on the MNIST test set, run through bnnrun.

    bench/accuracy.py MODEL [--scale 255|1] [--limit N] [--bnnrun PATH] [--mnist DIR]
                      [--bin [--device cpu|gpu]]

MODEL is anything bnnrun takes with --reference (.onnx or .bnn), or with --bin a model.bin
from bnncc, run by libbnnrt on --device (default cpu). Images are fed as
float32 [N,1,28,28], divided by 255 unless --scale 255 (models that divide inside)."""
import argparse
import gzip
import os
import subprocess
import sys
import tempfile

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    ndim = magic & 0xFF
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="pixel range the model expects: 1 for [0,1] (default), 255 for 0..255")
    ap.add_argument("--limit", type=int, default=0, help="only the first N images")
    ap.add_argument("--bnnrun", default=os.path.join(here, "..", "build", "runtime", "bnnrun"))
    ap.add_argument("--mnist", default=os.path.join(here, "..", "..", "shared", "data", "mnist"))
    ap.add_argument("--bin", action="store_true", help="MODEL is a model.bin: run it with libbnnrt")
    ap.add_argument("--device", default="cpu", help="with --bin: cpu (default), gpu or auto")
    ap.add_argument("--save-predictions", help="write the predicted classes to this .npy")
    a = ap.parse_args()

    images = read_idx(os.path.join(a.mnist, "t10k-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(a.mnist, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)
    if a.limit:
        images, labels = images[: a.limit], labels[: a.limit]
    x = images.reshape(-1, 1, 28, 28).astype(np.float32) * np.float32(a.scale / 255.0)
    with tempfile.TemporaryDirectory() as tmp:
        xin, yout = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
        np.save(xin, x)
        how = [a.model, "--device", a.device] if a.bin else ["--reference", a.model]
        p = subprocess.run([a.bnnrun] + how + ["--input", xin, "--output", yout])
        if p.returncode != 0:
            sys.exit(p.returncode)
        y = np.load(yout)
    pred = y.reshape(len(labels), -1)
    pred = pred[:, 0] if pred.shape[1] == 1 and y.dtype.kind == "i" else pred.argmax(axis=1)
    if a.save_predictions:
        np.save(a.save_predictions, pred.astype(np.int64))
    correct = int((pred == labels).sum())
    print(f"{os.path.basename(a.model)}: {correct}/{len(labels)} correct, "
          f"top-1 {100.0 * correct / len(labels):.2f} %")


if __name__ == "__main__":
    main()
