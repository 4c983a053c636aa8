#!/usr/bin/env python3
"""qconv_bench.py: low-bit convolution layers (w1a2 by default) through bnncc and bnnrun, against
PyTorch's fp16 convolution of the same shape in the same run and against the 0.4 POPS that issue 7
quotes for the best published arbitrary-precision tensor-core convolution on this GPU.

    python3 bench/qconv_bench.py --bin DIR [--shapes C,O,HW,K,S/...] [--batch 256] [--wbits 1]
                                 [--abits 2] [--out-abits A] [--lowbit auto[,planes,int8]] [--runs 20]
                                 [--device gpu|cpu] [--keep DIR]

DIR holds a release bnncc and bnnrun (bench/prepare_carry.sh's .cache/bench/carry). For each
shape (C input and O output channels, an HW x HW input, a K x K kernel, stride S, padding K // 2):
a QONNX model x -> Quant(abits) -> Conv(wbits) -> BatchNormalization -> Relu -> Quant(out-abits,
by default abits) (tests/lowbit/qconv_models.py's layer; bnncc -O3 makes the conv one qconv2d step
whose epilogue writes the next layer's codes: 2^out-abits - 1 levels), then a 1x1 conv to 10 channels that reads them (a float out),
compiled by DIR/bnncc with each --lowbit mode given (a row each: bit-planes, qconv.cu, or
the int8 tensor cores, qgemm_s8.cu, whose layer is two GPU steps: the input planes to bytes,
then the convolution; their sum is the layer's time, the first printed apart). Its outputs on 4
images must equal the CPU path's byte for byte (else no time is printed for it); then `bnnrun
--profile RUNS` at --batch gives the layer's steps' medians. PyTorch: an fp16 conv of the same shape (cuDNN,
channels_last, benchmark mode) timed by bench/timing.py (CUDA-graph replays). The table gives
effective POPS = 2 * M * N * K over the step's time (M = batch * OH * OW, N = O, K = C * K * K:
a multiply-add of a code by a weight each, as the GEMM benchmarks count), that against 0.4 POPS,
and PyTorch's time over bnncc's. The default shapes are ResNet-18's stride-1 3x3 layers and two
wider ones. --device cpu checks the script on a machine without a GPU (CPU-path times, no peer).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lowbit"))
import qconv_models  # noqa: E402

sys.path.insert(0, HERE)
from ab_blobs import profile  # noqa: E402  (bnnrun --profile's table)

PUBLISHED_POPS = 0.4
DEFAULT_SHAPES = "64,64,56,3,1/128,128,28,3,1/256,256,14,3,1/512,512,7,3,1/256,256,28,3,1/512,512,14,3,1"


def out_hw(hw, k, s):
    """The output's height and width: padding k // 2 on each side."""
    return (hw + 2 * (k // 2) - k) // s + 1


def layer_model(c, o, hw, k, s, wbits, abits, out_abits, seed):
    n = qconv_models.Net("qconv_%d_%d_%d_%d_%d" % (c, o, hw, k, s), np.random.default_rng(seed))
    x = n.quant("x", 0.25, abits, 0)
    y = qconv_models.block(n, x, c, o, k, wbits, out_abits, stride=s, pad=k // 2)
    # A small 1x1 conv to 10 channels reads the codes (a float chain, bit-planes in every
    # --lowbit mode): with the quant's float as the graph's output, bnncc would keep the conv
    # float, since nothing would read its codes.
    return n.model((c, hw, hw), n.conv(y, o, 10, 1, wbits))


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("qconv_bench: %s failed (exit %d):\n%s%s" % (" ".join(cmd), p.returncode, p.stdout,
                                                                        p.stderr))
    return p.stdout


def qconv_step_ms(profile_out):
    """The median ms of the profile's first low-bit convolution, the layer timed: its qconv step
    (kernel sN_qconv), or its int8 steps (sN_q8bytes then sN_qconv8, or from its batch on sm_90a
    its wgmma alternative sN_qconv8wg: a profile lists the steps that ran); and of those the
    bytes step's (0 for bit-planes)."""
    steps, _ = profile(profile_out)
    order = sorted(steps)
    for j, i in enumerate(order):
        kernel, ms = steps[i]
        if kernel.endswith("_qconv"):
            return ms, 0.0
        if kernel.endswith("_q8bytes") and j + 1 < len(order) and steps[order[j + 1]][0].endswith(("_qconv8", "_qconv8wg")):
            return ms + steps[order[j + 1]][1], ms
    raise SystemExit("qconv_bench: no qconv step in bnnrun --profile's output:\n" + profile_out)


def torch_conv_ms(c, o, hw, k, s, batch, reps):
    import torch
    from timing import time_ms
    torch.backends.cudnn.benchmark = True
    conv = torch.nn.Conv2d(c, o, k, stride=s, padding=k // 2, bias=False).cuda().half()
    conv = conv.to(memory_format=torch.channels_last)
    x = torch.randn(batch, c, hw, hw, device="cuda", dtype=torch.half).to(memory_format=torch.channels_last)
    with torch.no_grad():
        return time_ms(lambda: conv(x), reps)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="folder with bnncc and bnnrun")
    ap.add_argument("--shapes", default=DEFAULT_SHAPES, help="C,O,HW,K,S shapes separated by /")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--wbits", type=int, default=1)
    ap.add_argument("--abits", type=int, default=2)
    ap.add_argument("--out-abits", type=int, default=0, help="the codes the layer writes (default --abits)")
    ap.add_argument("--lowbit", default="auto", help="bnncc --lowbit modes, separated by commas: a row each")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--device", choices=("gpu", "cpu"), default="gpu")
    ap.add_argument("--keep", default="", help="keep the models and blobs in this folder")
    a = ap.parse_args()
    bnncc, bnnrun = os.path.join(a.bin, "bnncc"), os.path.join(a.bin, "bnnrun")
    for f in (bnncc, bnnrun):
        if not os.access(f, os.X_OK):
            raise SystemExit("qconv_bench: %s is not an executable (give --bin the folder of bnncc and bnnrun)" % f)
    import onnx
    work = a.keep or tempfile.mkdtemp(prefix="qconv_bench_")
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(1)
    rows = []
    shapes = [tuple(int(v) for v in s.split(",")) for s in a.shapes.split("/") if s]
    modes = [m for m in a.lowbit.split(",") if m]
    out_abits = a.out_abits or a.abits
    for i, (c, o, hw, k, s) in enumerate(shapes):
        base = "w%da%d%s_%dx%d_%dx%d_k%ds%d" % (a.wbits, a.abits, "" if out_abits == a.abits else "o%d" % out_abits,
                                                c, o, hw, hw, k, s)
        onnx_path = os.path.join(work, base + ".onnx")
        onnx.save(layer_model(c, o, hw, k, s, a.wbits, a.abits, out_abits, 100 + i), onnx_path)
        x = rng.uniform(-0.5, 1.5, size=(a.batch, c, hw, hw)).astype(np.float32)
        xin = os.path.join(work, base + "_x.npy")
        np.save(xin, x)
        small = os.path.join(work, base + "_x4.npy")
        np.save(small, x[:4])
        peer = torch_conv_ms(c, o, hw, k, s, a.batch, a.runs) if a.device == "gpu" else None
        ops = 2.0 * a.batch * out_hw(hw, k, s) ** 2 * o * c * k * k
        for mode in modes:
            name = base + ("" if len(modes) == 1 else " " + mode)
            blob = os.path.join(work, "%s_%s.bin" % (base, mode))
            run([bnncc, "-O3", "--lowbit=" + mode, onnx_path, "-o", blob])
            ys = [os.path.join(work, "%s_%s_y4_%s.npy" % (base, mode, d)) for d in ("cpu", a.device)]
            run([bnnrun, blob, "--device", "cpu", "--input", small, "--output", ys[0]])
            run([bnnrun, blob, "--device", a.device, "--input", small, "--output", ys[1]])
            same = np.array_equal(np.load(ys[0]), np.load(ys[1]))
            ms = first = None
            if same:
                ms, first = qconv_step_ms(run([bnnrun, blob, "--device", a.device, "--input", xin, "--batch",
                                               str(a.batch), "--profile", str(a.runs)]))
            rows.append((name, ms, first, ops, peer, same))
            print("%s: %s" % (name, "%.4f ms" % ms if ms else "outputs differ from the CPU path: no time"),
                  flush=True)
    print("\nbatch %d, device %s, bnnrun --profile %d (the layer's steps' medians), PyTorch fp16 cuDNN "
          "channels_last" % (a.batch, a.device, a.runs))
    print("| layer (wMaN_CxO_HxW_kKsS) | bnncc ms (of it planes to bytes) | effective POPS | vs %.1f POPS | "
          "PyTorch fp16 ms | vs PyTorch |" % PUBLISHED_POPS)
    print("|---|---:|---:|---:|---:|---:|")
    failed = 0
    for name, ms, first, ops, peer, same in rows:
        if not same:
            failed += 1
            print("| %s | WRONG (GPU != CPU path) | - | - | - | - |" % name)
            continue
        pops = ops / (ms * 1e-3) / 1e15
        print("| %s | %.4f%s | %.2f | %.2fx | %s | %s |" % (name, ms, " (%.4f)" % first if first else "", pops,
                                                             pops / PUBLISHED_POPS, "%.4f" % peer if peer else "-",
                                                             "%.2fx" % (peer / ms) if peer else "-"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
