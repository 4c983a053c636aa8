#!/usr/bin/env python3
"""The four QONNX low-bit models through model.bin on the CPU path (bnncc -O3 --target=cpu,
bnnrun --device cpu), against the reference interpreter on the ONNX model (bnnrun
--reference): every output bit-identical. TFC_1W2A and TFC_2W2A on the 10,000 MNIST test
images (accuracy printed), unsw_nb15 and kwsmlp on random inputs in their valid range, at
batch 1 and 3 too; two of them at -O1 as well (qdense and its threshold unfused). With GPU targets (the default
sm_90a,sm_80) each compiles too: NVRTC builds the quantize and bit-plane GEMM kernels. Skips (77) without ../shared.
--sanitized (the ASan / UBSan build): a tenth of the inputs (the first 1,000 MNIST images),
the reference interpreter on 10,000 images being most of that run; the plain build checks all."""
import gzip
import os
import subprocess
import sys
import tempfile

import numpy as np

SRC = os.environ.get("BNN_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BNN_BUILD_ROOT", os.path.join(SRC, "build"))
SHARED = os.environ.get("BNN_SHARED", os.path.join(SRC, "..", "shared"))
BNNCC = os.path.join(BUILD, "compiler", "bnncc")
BNNRUN = os.path.join(BUILD, "runtime", "bnnrun")
failures = []


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    nd = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * nd).reshape(dims)


def outputs(tmp, args, x):
    xin, yout = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
    np.save(xin, x)
    p = run([BNNRUN] + args + ["--input", xin, "--output", yout])
    if p.returncode:
        failures.append(f"bnnrun {' '.join(args)}: {p.stderr.strip()}")
        return None
    return np.load(yout)


def check(tmp, name, x, labels=None, level="-O3"):
    model = os.path.join(SHARED, "models", "qonnx", name)
    blob = os.path.join(tmp, name + ".bin")
    p = run([BNNCC, level, "--target=cpu", model, "-o", blob])
    if p.returncode:
        failures.append(f"{name}: bnncc {level} --target=cpu: {p.stderr.strip()}")
        return
    results = []
    for xs in (x, x[:1], x[:3]):
        want = outputs(tmp, ["--reference", model], xs)
        got = outputs(tmp, [blob, "--device", "cpu"], xs)
        if want is None or got is None:
            return
        if want.dtype != got.dtype or want.shape != got.shape or want.tobytes() != got.tobytes():
            failures.append(f"{name} {level}: model.bin differs from the reference at batch "
                            f"{len(xs)}")
            return
        results.append(got)
    note = ""
    if labels is not None:
        note = f", accuracy {100.0 * (results[0].argmax(axis=1) == labels).mean():.2f} %"
    print(f"ok: {name} {level}: model.bin (CPU) bit-identical to the reference on {len(x)} "
          f"inputs{note}")
    # GPU targets: the low-bit steps have kernels (bnn_quantize, bgemm_planes.cu), NVRTC
    # compiles them; their results on a GPU are checked by test_e2e.py --device gpu.
    gpu = os.path.join(tmp, name + ".gpu.bin")
    p = run([BNNCC, level, model, "-o", gpu])
    if p.returncode or not os.path.exists(gpu):
        failures.append(f"{name}: GPU targets: bnncc {level} failed ({p.returncode}): {p.stderr.strip()}")

def main():
    if not os.path.exists(os.path.join(SHARED, "models", "qonnx", "TFC_1W2A.onnx")):
        print("../shared not available: skipped")
        sys.exit(77)
    part = 10 if "--sanitized" in sys.argv[1:] else 1
    mnist = os.path.join(SHARED, "data", "mnist")
    images = read_idx(os.path.join(mnist, "t10k-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(mnist, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)
    x = images.reshape(-1, 1, 28, 28).astype(np.float32) * np.float32(1.0 / 255.0)
    x, labels = x[:len(x) // part], labels[:len(x) // part]
    rng = np.random.default_rng(2026)
    with tempfile.TemporaryDirectory() as tmp:
        check(tmp, "TFC_1W2A.onnx", x, labels)
        check(tmp, "TFC_2W2A.onnx", x, labels)
        # UNSW-NB15 features are bipolar bits (the model maps x to (x + 1) / 2).
        check(tmp, "unsw_nb15-mlp-w2a2.onnx",
              np.where(rng.integers(0, 2, size=(5000 // part, 600)) == 1, 1.0, -1.0).astype(np.float32))
        # KWS features: the 8-bit input quant (scale 0.83) covers about +-105.
        kws = rng.uniform(-110, 110, size=(5000 // part, 1, 10, 49)).astype(np.float32)
        kws[::4] = np.round(kws[::4] * 2) / 2  # ties of the input quant's rounding
        check(tmp, "kwsmlp_w3a3.onnx", kws)
        # -O1 leaves qdense and its multi-level threshold unfused: the lowering fuses them.
        check(tmp, "TFC_2W2A.onnx", x[:2000 // part], labels[:2000 // part], "-O1")
        check(tmp, "unsw_nb15-mlp-w2a2.onnx",
              np.where(rng.integers(0, 2, size=(1000 // part, 600)) == 1, 1.0, -1.0).astype(np.float32),
              level="-O1")
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
