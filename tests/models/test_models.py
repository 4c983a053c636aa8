#!/usr/bin/env python3
"""The bundled trained models (models/*.onnx, models/README.md) compiled with bnncc -O3
--target=cpu and run on the CPU path over the first test images of their data set, against the
reference interpreter on the ONNX model: every prediction must agree, and the accuracy on the
sample must be plausible (within TOL points of the full-set accuracy recorded in
models/README.md). Runs bench/accuracy.py, the tool that measured the recorded numbers.

A model whose data is missing is skipped (Fashion-MNIST: Debian's dataset-fashion-mnist;
CIFAR-10: ../shared/data/cifar10 and Pillow); exit 77 when every model was skipped.

--sanitized (a sanitizer build, whose interpreter is several times slower): a fifth of the
sample, every prediction and output still compared, the accuracy check left to the plain run."""
import os
import re
import subprocess
import sys
import tempfile

SRC = os.environ.get("BNN_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BNN_BUILD_ROOT", os.path.join(SRC, "build"))
SHARED = os.environ.get("BNN_SHARED", os.path.join(SRC, "..", "shared"))
BNNCC = os.path.join(BUILD, "compiler", "bnncc")
BNNRUN = os.path.join(BUILD, "runtime", "bnnrun")
ACCURACY = os.path.join(SRC, "bench", "accuracy.py")
FMNIST = "/usr/share/datasets/fashion-mnist"
CIFAR = os.path.join(SHARED, "data", "cifar10")
TOL = 5.0  # points; the sample is small (binomial standard error about 2.5 points at n=200)

# model, data set, data folder, sample size, full-set top-1 of model.bin on the CPU path
MODELS = [
    ("fmnist_mlp.onnx", "fashion-mnist", FMNIST, 300, None),
    ("cifar_cnv.onnx", "cifar10", CIFAR, 200, None),
]


def recorded_accuracy(name):
    """The CPU-path accuracy from the models/README.md row of NAME (the last '%' number)."""
    for line in open(os.path.join(SRC, "models", "README.md")):
        if line.startswith("| `" + name + "`"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            for c in reversed(cells):
                m = re.match(r"^([0-9.]+) %", c)
                if m:
                    return float(m.group(1))
    return None


def main():
    failures, ran = [], 0
    sanitized = "--sanitized" in sys.argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        for name, dataset, folder, n, _ in MODELS:
            n = n // 5 if sanitized else n
            model = os.path.join(SRC, "models", name)
            if not os.path.isdir(folder):
                print(f"skip {name}: no {dataset} data in {folder}")
                continue
            if dataset == "cifar10":
                try:
                    import PIL  # noqa: F401
                except ImportError:
                    print(f"skip {name}: Pillow is missing (needed to decode the CIFAR-10 JPEGs)")
                    continue
            full = recorded_accuracy(name)
            if full is None:
                failures.append(f"{name}: no recorded accuracy in models/README.md")
                continue
            blob = os.path.join(tmp, name + ".bin")
            p = subprocess.run([BNNCC, "-O3", "--target=cpu", model, "-o", blob, "--report"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if p.returncode:
                failures.append(f"{name}: bnncc failed: {p.stdout.strip()}")
                continue
            summary = [l for l in p.stdout.splitlines() if l.startswith("summary:")]
            print(f"{name}: {summary[0] if summary else p.stdout.strip()}")
            key = "--" + ("fashion-mnist" if dataset == "fashion-mnist" else dataset)
            p = subprocess.run([sys.executable, ACCURACY, blob, "--bin", "--device", "cpu",
                                "--dataset", dataset, key, folder, "--limit", str(n),
                                "--bnnrun", BNNRUN, "--compare-reference", model],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            print(p.stdout.strip())
            m = re.search(r"top1_cpu=([0-9.]+) top1_ref=([0-9.]+) differ_ref_cpu=(\d+) identical_cpu=(\d)",
                          p.stdout)
            if p.returncode or not m:
                failures.append(f"{name}: bench/accuracy.py failed (exit {p.returncode})")
                continue
            ran += 1
            top1, differ, identical = float(m.group(1)), int(m.group(3)), m.group(4) == "1"
            if differ:
                failures.append(f"{name}: {differ} of {n} predictions differ from the reference")
            if not identical:
                failures.append(f"{name}: the CPU path's outputs are not bit-identical to the reference's")
            if not sanitized and abs(top1 - full) > TOL:
                failures.append(f"{name}: top-1 {top1:.2f} % on the first {n} test images is not "
                                f"within {TOL} points of the recorded {full:.2f} %")
    for f in failures:
        print("FAIL:", f)
    if failures:
        return 1
    if not ran:
        print("skipped: no model's data is here")
        return 77
    print(f"ok: {ran} models")
    return 0


if __name__ == "__main__":
    sys.exit(main())
