#!/usr/bin/env python3
"""gemm_peer.py: the peer GEMMs on this GPU, for ratios in the same run as a bnncc kernel.

    bench/gemm_peer.py [--sizes 8192,16384]

Times PyTorch fp16 `matmul` and int8 `torch._int_mm` on random square matrices, B given as
the transpose of a row-major [N, K] tensor (column-major, as bgemm_bench.py does: cuBLASLt's
int8 kernels want that form, a row-major B runs several times slower), with the benchmarks'
timer (timing.py: calls captured back to back in a CUDA graph, the median of 20 replays), one line per
(size, kind): ms per call and POPS = 2*n^3 / time."""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import time_ms  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="8192")
    a = ap.parse_args()
    print(f"gemm_peer: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for n in (int(s) for s in a.sizes.split(",")):
        ops = 2.0 * n * n * n
        x = torch.randn(n, n, device="cuda", dtype=torch.float16)
        y = torch.randn(n, n, device="cuda", dtype=torch.float16).t()
        ms = time_ms(lambda: torch.matmul(x, y), 20)
        print(f"peer {n}^3 torch fp16 matmul {ms:8.3f} ms {ops / (ms * 1e-3) / 1e15:6.2f} POPS")
        xi = torch.randint(-128, 127, (n, n), device="cuda", dtype=torch.int8)
        yi = torch.randint(-128, 127, (n, n), device="cuda", dtype=torch.int8).t()
        ms = time_ms(lambda: torch._int_mm(xi, yi), 20)
        print(f"peer {n}^3 torch int8 _int_mm {ms:8.3f} ms {ops / (ms * 1e-3) / 1e15:6.2f} POPS")
        del x, y, xi, yi


if __name__ == "__main__":
    main()
