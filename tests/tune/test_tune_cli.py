#!/usr/bin/env python3
"""bnncc --tune and --tune-file from the outside.

    test_tune_cli.py --device cpu   the errors a user can meet without a GPU, and every
                                    candidate of the tunable layers of two QONNX conv nets, the
                                    CIFAR-10 CNV and a float stem (from the --report's tune lines, forced through a
                                    tune file): NVRTC compiles it for sm_90a and sm_80, the CPU
                                    path equals the reference (quick)
    test_tune_cli.py --device gpu   tune a small binary conv net on the GPU at batch 4: exit 0,
                                    the tune file has its layers, the tuned blob's GPU outputs
                                    equal the reference interpreter's, and a blob compiled from
                                    the tune file is byte-identical to the tuned one (exit 77
                                    without a GPU)"""
import argparse
import os
import re
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "codegen_e2e"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lowbit"))
import test_e2e as e2e  # noqa: E402  (its runner, failure list and GPU probe)

BNNCC, BNNRUN, run, fail, SRC = e2e.BNNCC, e2e.BNNRUN, e2e.run, e2e.fail, e2e.SRC


def model_text(rng):
    """Two binary 3x3 convs (64 -> 64, 64 -> 128 at stride 2) with batch-norm and sign, a binary 1x1
    conv read as floats: two halo bconvs with several tiles each (tests/tune/test_tune.c's net)."""
    def hexw(name, shape):
        n = (int(np.prod(shape)) + 7) // 8
        return f'const ${name}: b1[{",".join(map(str, shape))}] = hex "{rng.bytes(n).hex()}"\n'

    def f32(name, n, lo, hi):
        return f"const ${name}: f32[{n}] = [{', '.join(f'{v:.4f}' for v in rng.uniform(lo, hi, n))}]\n"

    t = hexw("w1", (64, 64, 3, 3)) + hexw("w2", (128, 64, 3, 3)) + hexw("w3", (16, 128, 1, 1))
    for i, c in ((1, 64), (2, 128)):
        t += f32(f"g{i}", c, -1, 1) + f32(f"b{i}", c, -0.5, 0.5) + f32(f"m{i}", c, -6, 6) + f32(f"v{i}", c, 0.5, 4)
    return t + """graph $tunenet(%x: f32[N,64,12,12]) -> (f32[N,16,6,6]) {
    %a = b1[N,64,12,12] binarize %x {zero=1}
    %c1 = i32[N,64,12,12] conv2d %a, $w1 {pads=[1,1,1,1]} loc("conv1", Conv)
    %f1 = f32[N,64,12,12] cast %c1 {to=f32}
    %n1 = f32[N,64,12,12] batchnorm %f1, $g1, $b1, $m1, $v1
    %h1 = b1[N,64,12,12] binarize %n1 {zero=1}
    %c2 = i32[N,128,6,6] conv2d %h1, $w2 {strides=[2,2], pads=[1,1,1,1]} loc("conv2", Conv)
    %f2 = f32[N,128,6,6] cast %c2 {to=f32}
    %n2 = f32[N,128,6,6] batchnorm %f2, $g2, $b2, $m2, $v2
    %h2 = b1[N,128,6,6] binarize %n2 {zero=1}
    %c3 = i32[N,16,6,6] conv2d %h2, $w3 loc("conv3", Conv)
    %y = f32[N,16,6,6] cast %c3 {to=f32}
    ret %y
}
"""


def expect_error(args, pattern, what):
    p = run([BNNCC] + args)
    if p.returncode != 1 or not re.search(pattern, p.stderr):
        fail(f"{what}: exit {p.returncode}, {p.stderr.strip()!r}")
    else:
        print(f"ok: {what}")


def check_errors(tmp, model, gpu):
    out = os.path.join(tmp, "e.bin")
    expect_error([model, "--tune=0", "-o", out], r"--tune=BATCH needs a batch from 1", "--tune=0")
    expect_error([model, "--tune=x", "-o", out], r"--tune=BATCH needs a batch", "--tune=x")
    expect_error([model, "--tune", "--emit=ir"], r"goes with --emit=bin", "--tune with --emit=ir")
    expect_error([model, "--tune", "--target=cpu", "-o", out], r"no GPU target", "--tune with --target=cpu")
    expect_error([model, "--tune-file=" + os.path.join(tmp, "none.tune"), "-o", out], r"none\.tune",
                 "a missing tune file")
    expect_error([model, "--target=", "-o", out], r"--target: no target given", "--target= with nothing")
    p = run([BNNCC, model, "--tune-file=" + os.path.join(tmp, "none.tune"), "--emit=ir", "-o", os.devnull])
    if p.returncode or "--tune-file has no effect with --emit=ir" not in p.stderr:
        fail(f"--tune-file with --emit=ir: exit {p.returncode}, {p.stderr.strip()!r}")
    else:
        print("ok: --tune-file with --emit=ir warns")
    bad = os.path.join(tmp, "bad.tune")
    with open(bad, "w") as f:
        f.write("bnncc-tune 1\nGPU\t1\t0.5\n")
    expect_error([model, "--tune-file=" + bad, "--emit=cuda"], r"bad\.tune:2: a tune line has 6", "a bad tune line")
    if not gpu:
        expect_error([model, "--tune", "-o", out], r"--tune measures the kernels on a GPU, and none can be used",
                     "--tune without a GPU")
    for f in (out, out + ".tune"):
        if os.path.exists(f):
            fail(f"{f} was written by a failed compile")


STEM_SHAPE = (3, 9, 9)  # tests/passes/stem.bnn's input


def check_candidates(tmp, rng, gpu=False):
    """Each candidate on every tunable layer at once, of three QONNX conv nets (low-bit halo
    convs), the bundled CIFAR-10 CNV (binary halo convs) and tests/passes/stem.bnn (a float conv
    tile): CPU path = reference; with gpu, the blob on the GPU too (every candidate must launch:
    qcnn_s2c64's 8x16 tile once did not)."""
    import onnx
    import qconv_models
    nets = []
    for name in ("qcnn_w1a2", "qcnn_big", "qcnn_s2c64"):
        make, shape = qconv_models.MODELS[name]
        onnx.save(make(np.random.default_rng(11)), os.path.join(tmp, name + ".onnx"))
        nets.append((name, os.path.join(tmp, name + ".onnx"), shape, "qconv:", 1))
    nets.append(("cifar_cnv", os.path.join(SRC, "models", "cifar_cnv.onnx"), (3, 32, 32), "bconv:", 1))
    nets.append(("stem", os.path.join(SRC, "tests", "passes", "stem.bnn"), STEM_SHAPE, "conv2d:", 2))
    for name, model, shape, kind, nout in nets:
        layers, p = e2e.tunable_layers(model, tmp)
        if p.returncode or not any(sig.startswith(kind) for _, _, sig in layers):
            fail(f"{name}: no {kind} tune lines in the report: exit {p.returncode}, {p.stderr[-1500:]!r}")
            continue
        x = rng.standard_normal((3,) + shape).astype(np.float32)
        xp = os.path.join(tmp, "qx.npy")
        yr, yc = ([os.path.join(tmp, f"q{k}{i}.npy") for i in range(nout)] for k in ("r", "c"))
        np.save(xp, x)
        pr = run([BNNRUN, "--reference", model, "--input", xp] + [a for y in yr for a in ("--output", y)])
        for c in range(1, max(len(cands) for _, cands, _ in layers)):
            tune = os.path.join(tmp, f"{name}_{c}.tune")
            n = e2e.force_candidate(tune, layers, c)
            blob = os.path.join(tmp, f"{name}_{c}.bin")
            pc = run([BNNCC, model, "-O3", f"--tune-file={tune}", "-v", "-o", blob])
            took = re.search(r"codegen: (\d+) layers take their configurations", pc.stderr)
            if pc.returncode or not took or int(took.group(1)) != n:
                fail(f"{name}, candidate {c}: NVRTC or the tune file: exit {pc.returncode}, {pc.stderr[-1500:]!r}")
                continue
            dev = "gpu" if gpu else "cpu"
            px = run([BNNRUN, blob, "--device", dev, "--input", xp] + [a for y in yc for a in ("--output", y)])
            if px.returncode or pr.returncode or not all(np.array_equal(np.load(a), np.load(b)) for a, b in zip(yc, yr)):
                fail(f"{name}, candidate {c}: the {dev.upper()} path differs from the reference: {px.stderr!r}")
            else:
                print(f"ok: {name}, candidate {c} on {n} layers: NVRTC, {dev.upper()} path = reference")


def check_gpu(tmp, model, rng):
    blob, tune = os.path.join(tmp, "t.bin"), os.path.join(tmp, "t.tune")
    p = run([BNNCC, model, "--tune=4", "--tune-file=" + tune, "-o", blob])
    print(p.stderr.strip())
    if p.returncode:
        fail(f"--tune=4: exit {p.returncode}")
        return
    lines = [l for l in open(tune).read().splitlines() if l and not l.startswith("#")]
    if lines[0] != "bnncc-tune 1" or len(lines) != 3 or any(l.split("\t")[1] != "4" for l in lines[1:]):
        fail(f"tune file: {lines}")
    x = rng.standard_normal((4, 64, 12, 12)).astype(np.float32)
    xp, yg, yr = (os.path.join(tmp, n) for n in ("x.npy", "yg.npy", "yr.npy"))
    np.save(xp, x)
    pg = run([BNNRUN, blob, "--device", "gpu", "--input", xp, "--output", yg])
    pr = run([BNNRUN, "--reference", model, "--input", xp, "--output", yr])
    if pg.returncode or pr.returncode or not np.array_equal(np.load(yg), np.load(yr)):
        fail(f"tuned blob on the GPU against the reference: {pg.stderr.strip()!r} {pr.stderr.strip()!r}")
    else:
        print("ok: tuned blob on the GPU = reference")
    again = os.path.join(tmp, "again.bin")
    p = run([BNNCC, model, "--tune-file=" + tune, "-o", again])
    if p.returncode or open(again, "rb").read() != open(blob, "rb").read():
        fail(f"a blob from the tune file differs from the tuned one: {p.stderr.strip()!r}")
    else:
        print("ok: the tune file gives the tuned blob again")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    a = ap.parse_args()
    rng = np.random.default_rng(20261126)
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "tunenet.bnn")
        with open(model, "w") as f:
            f.write(model_text(rng))
        gpu = e2e.gpu_available(tmp)
        if a.device == "gpu":
            if not gpu:
                print("no GPU: skipped")
                return 77
            check_gpu(tmp, model, rng)
            check_candidates(tmp, rng, gpu=True)
        else:
            check_errors(tmp, model, gpu)
            check_candidates(tmp, rng)
    print("all ok" if not e2e.failures else f"{len(e2e.failures)} failure(s)")
    return 1 if e2e.failures else 0


if __name__ == "__main__":
    sys.exit(main())
