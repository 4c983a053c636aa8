#!/usr/bin/env python3
"""bnn_bitpool (codegen/cuda/kernels/float_ops.cu: the max-pool of NHWC-packed bits a stem's
bits go through) without a GPU: the device function compiled as host C++ and called for every
output word j of every item, as the launch does, on random words, NaN flags and AND masks
(docs/blob-format.md "maxpool" with words > 0); every output word must equal numpy's reading of
the format: the OR of the window's real pixels' words, the AND for the channels of the mask, 0
where a pixel of the window has its NaN flag, 0 past `words`. Exit 77 (skipped) without a C++
compiler.

    bitpool_emu.py"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("BNN_SOURCE_ROOT", os.path.join(HERE, "..", ".."))

# (batch, words, nan flags, out_words, h, w, kh, kw, stride, pad, mask)
CASES = [(2, 1, 1, 1, 9, 7, 3, 3, 2, 1, "random"),
         (3, 2, 1, 3, 6, 6, 2, 2, 2, 0, "random"),
         (1, 3, 0, 3, 5, 8, 3, 2, 1, 1, "all"),
         (2, 1, 0, 2, 4, 4, 3, 3, 1, 1, None),
         (2, 2, 1, 2, 11, 5, 3, 3, 2, 1, "random")]


def device_function(src):
    start = src.index("template <int KH, int KW>\n__device__ __forceinline__ void bnn_bitpool(")
    end = src.index("\n}\n", start) + 3
    return src[start:end]


def reference(x, mask, words, nan, out_words, oh, ow, kh, kw, s, p):
    n, h, w, _ = x.shape
    y = np.zeros((n, oh, ow, out_words), np.uint32)
    for b in range(n):
        for oy in range(oh):
            for ox in range(ow):
                ys = range(max(oy * s - p, 0), min(oy * s - p + kh, h))
                xs = range(max(ox * s - p, 0), min(ox * s - p + kw, w))
                win = x[b][np.ix_(list(ys), list(xs))]
                bits = win[..., :words].reshape(-1, words)
                flags = win[..., words:].reshape(-1, words) if nan else np.zeros_like(bits)
                anyw = np.bitwise_or.reduce(bits, axis=0)
                allw = np.bitwise_and.reduce(bits, axis=0)
                nans = np.bitwise_or.reduce(flags, axis=0)
                y[b, oy, ox, :words] = ((anyw & ~mask) | (allw & mask)) & ~nans
    return y


def main():
    cxx = next((c for c in (os.environ.get("CXX"), "c++", "g++", "clang++") if c and shutil.which(c)), None)
    if not cxx:
        print("skipped: no C++ compiler")
        sys.exit(77)
    fn = device_function(open(os.path.join(SRC, "codegen", "cuda", "kernels", "float_ops.cu")).read())
    rng = np.random.default_rng(17)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for ci, (n, words, nan, out_words, h, w, kh, kw, s, p, mode) in enumerate(CASES):
            oh, ow = (h + 2 * p - kh) // s + 1, (w + 2 * p - kw) // s + 1
            # mostly-set words so that the AND differs from the OR; flags rare
            x = (rng.integers(0, 2**32, (n, h, w, words), dtype=np.uint64) |
                 rng.integers(0, 2**32, (n, h, w, words), dtype=np.uint64)).astype(np.uint32)
            if nan:
                flags = np.where(rng.random((n, h, w, words)) < 0.05,
                                 np.uint32(1) << rng.integers(0, 32, (n, h, w, words)).astype(np.uint32), 0)
                x = np.concatenate([x, flags.astype(np.uint32)], axis=-1)
            mask = (np.zeros(words, np.uint32) if mode is None else np.full(words, 0xffffffff, np.uint32)
                    if mode == "all" else rng.integers(0, 2**32, words, dtype=np.uint64).astype(np.uint32))
            arr = lambda a: ", ".join(f"{int(v)}u" for v in a.reshape(-1))
            prog = f"""#include <cstdio>
typedef long long bnn_i64;
#define __device__
#define __forceinline__ inline
{fn}
static const unsigned X[] = {{{arr(x)}}};
static const unsigned M[] = {{{arr(mask)}}};
static unsigned Y[{n * oh * ow * out_words}];
int main() {{
    for (bnn_i64 item = 0; item < {n}; item++)
        for (int j = 0; j < {oh * ow * out_words}; j++)
            bnn_bitpool<{kh}, {kw}>(item, j, X, Y, {"M" if mode else "nullptr"}, {words}, {nan}, {out_words}, {h},
                                    {w}, {s}, {s}, {p}, {p}, {oh}, {ow});
    for (unsigned v : Y) std::printf("%u\\n", v);
}}
"""
            cc, exe = os.path.join(tmp, f"case{ci}.cc"), os.path.join(tmp, f"case{ci}")
            with open(cc, "w") as f:
                f.write(prog)
            r = subprocess.run([cxx, "-std=c++17", "-O1", cc, "-o", exe], capture_output=True, text=True)
            if r.returncode:
                sys.exit(f"FAIL: compiling case {ci}:\n{r.stderr[-2000:]}")
            got = np.array([int(v) for v in subprocess.run([exe], capture_output=True, text=True,
                                                           check=True).stdout.split()], np.uint32)
            want = reference(x, mask, words, nan, out_words, oh, ow, kh, kw, s, p).reshape(-1)
            ok = got.shape == want.shape and np.array_equal(got, want)
            ands = int(np.count_nonzero(mask)) if mode else 0
            print(f"{'ok' if ok else 'FAIL'}: case {ci}: {n}x{h}x{w}, {words} words{' + NaN flags' if nan else ''}, "
                  f"{out_words} out, {kh}x{kw}/{s} pad {p}, {ands} mask words")
            failures += not ok
    print("all ok" if not failures else f"{failures} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
