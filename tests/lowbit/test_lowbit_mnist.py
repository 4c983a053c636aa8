#!/usr/bin/env python3
"""Issue 7's trained low-bit models on the whole MNIST test set: TFC_1W2A and TFC_2W2A
(../shared/models/qonnx) compiled with bnncc -O3 and run through model.bin on the CPU path
(bench/accuracy.py --compile), against the reference interpreter on the ONNX model over all
10,000 images: the outputs must be bit-identical, no prediction may differ, and the accuracy
must be the one recorded in docs/perf.md ("Real low-bit models"). With --device gpu the blob
runs on the GPU too (exit 77 without one). Exit 77 when the MNIST files or the models are
missing."""
import os
import re
import subprocess
import sys

SRC = os.environ.get("BNN_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BNN_BUILD_ROOT", os.path.join(SRC, "build"))
SHARED = os.environ.get("BNN_SHARED", os.path.join(SRC, "..", "shared"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "codegen_e2e"))
from test_e2e import gpu_available  # noqa: E402

# model, correct predictions of 10,000 (docs/perf.md; published: 94.79 % and 96.60 %)
MODELS = [("TFC_1W2A", 9474), ("TFC_2W2A", 9660)]


def main():
    device = "gpu,cpu" if sys.argv[1:] == ["--device", "gpu"] else "cpu"
    mnist = os.path.join(SHARED, "data", "mnist")
    if not os.path.exists(os.path.join(mnist, "t10k-images-idx3-ubyte.gz")):
        print(f"skipped: no MNIST test set in {mnist}")
        return 77
    if device != "cpu":
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            if not gpu_available(tmp):
                print("no GPU: skipped")
                return 77
    failures = 0
    for name, correct in MODELS:
        model = os.path.join(SHARED, "models", "qonnx", name + ".onnx")
        if not os.path.exists(model):
            print(f"skipped: no {model}")
            return 77
        p = subprocess.run([sys.executable, os.path.join(SRC, "bench", "accuracy.py"), model, "--compile",
                            "--device", device, "--bnncc", os.path.join(BUILD, "compiler", "bnncc"),
                            "--bnnrun", os.path.join(BUILD, "runtime", "bnnrun"), "--mnist", mnist,
                            "--jobs", "2", "--chunk", "1000", "--compare-reference", model],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
        fields = dict(re.findall(r"(\w+)=([\w.]+)", last)) if last.startswith("accuracy:") else {}
        want = {"n": "10000", "top1_ref": f"{correct / 100:.2f}"}
        for d in device.split(","):
            want.update({f"top1_{d}": f"{correct / 100:.2f}", f"differ_ref_{d}": "0", f"identical_{d}": "1"})
        bad = [f"{k}={fields.get(k)} (want {v})" for k, v in want.items() if fields.get(k) != v]
        if p.returncode or bad:
            failures += 1
            print(f"FAIL: {name}: exit {p.returncode}, {', '.join(bad)}\n{p.stdout[-3000:]}")
        else:
            print(f"ok: {name}: {last}")
    print("all ok" if not failures else f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
