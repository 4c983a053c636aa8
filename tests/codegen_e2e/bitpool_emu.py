#!/usr/bin/env python3
"""bnn_bitpool and bnn_codepool (codegen/cuda/kernels/float_ops.cu: the max-pools of NHWC-packed
bits and of codes a stem's outputs go through) without a GPU: the device function compiled as
host C++ and called for every work item j of every item, as the launch does (bnn_bitpool: an
output pixel, its 16-byte loads and stores where its records allow them), on random words,
NaN flags and AND masks (docs/blob-format.md "maxpool" with words > 0); every output word must
equal numpy's reading of the format: the OR of the window's real pixels' words, the AND for the
channels of the mask, 0 where a pixel of the window has its NaN flag, 0 past `words`.
bnn_codepool the same way on random code planes (1 to 3 planes, some channels past C): each
channel's largest code over the window as image planes, 0 with a NaN flag, and the quantizer's
float ((code + lo) - zeropt) * scale, NaN there (rt_cpu.c run_code_pool), or instead the NaN
flags (lower.c plan_rcode). bnn_gap_codes (the global average pool of a dequantized value read
from its codes) on random code planes and NaN flags: each channel's mean of those floats summed
in order, as rt_cpu.c run_gap sums the floats. Exit 77 (skipped) without a C++ compiler.

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
# (the XNOR stem's: 2 words and their flags, 16-byte records, into 8-word pixels: 16-byte loads
# and stores; 4 words without flags likewise)
CASES = [(2, 2, 1, 8, 12, 11, 3, 3, 2, 1, "random"),
         (1, 4, 0, 4, 7, 6, 3, 3, 2, 1, "random"),
         (2, 1, 1, 1, 9, 7, 3, 3, 2, 1, "random"),
         (3, 2, 1, 3, 6, 6, 2, 2, 2, 0, "random"),
         (1, 3, 0, 3, 5, 8, 3, 2, 1, 1, "all"),
         (2, 1, 0, 2, 4, 4, 3, 3, 1, 1, None),
         (2, 2, 1, 2, 11, 5, 3, 3, 2, 1, "random")]


# (batch, channels, planes, h, w, kh, kw, stride, pad, lo, scale, zeropt, f32 out)
CODE_CASES = [(2, 16, 2, 9, 7, 3, 3, 2, 1, 0, 0.25, 0.0, True),
              (3, 70, 3, 6, 6, 2, 2, 2, 0, -4, 0.125, 1.0, True),
              (1, 64, 1, 5, 8, 3, 2, 1, 1, 0, 0.5, 0.0, False),
              (2, 40, 2, 11, 5, 3, 3, 2, 1, -2, 0.3, -0.5, True),
              (2, 70, 2, 7, 9, 3, 3, 2, 1, 0, 0.5, 0.0, False)]


# The device functions' CUDA names as host C++ (each float operation rounded on its own: volatile)
HOST_PRELUDE = """#include <cmath>
#include <cstdio>
#include <cstring>
typedef long long bnn_i64;
#define __device__
#define __forceinline__ inline
static float __uint_as_float(unsigned b) { float f; std::memcpy(&f, &b, 4); return f; }
static float __int_as_float(int b) { float f; std::memcpy(&f, &b, 4); return f; }
static float __fsub_rn(float a, float b) { volatile float r = a - b; return r; }
static float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
static float __fadd_rn(float a, float b) { volatile float r = a + b; return r; }
static float __fdiv_rn(float a, float b) { volatile float r = a / b; return r; }"""


def device_function(src, name="bnn_bitpool", template="template <int KH, int KW, int WORDS, int NANF, int OUTW>",
                    returns="void"):
    start = src.index(f"{template}\n__device__ __forceinline__ {returns} {name}(")
    end = src.index("\n}\n", start) + 3
    return src[start:end]


def dequantize_function(src):
    """float_ops.cu's bnn_dequantize, which the code pools call."""
    return device_function(src, "bnn_dequantize", "", "float")


def image_ldw(channels):
    w = (channels + 31) // 32
    return 1 if w <= 1 else 2 if w <= 2 else 4 if w <= 4 else (w + 7) // 8 * 8


def code_reference(x, c, planes, words, oh, ow, kh, kw, s, p, lo, scale, zero):
    """Image planes [n][planes][plane words] and the float [n][c][oh * ow] of the pooled codes."""
    n, h, w, _ = x.shape
    S, plane = oh * ow, (oh * ow * words + 7) // 8 * 8
    y, f = np.zeros((n, planes, plane), np.uint32), np.zeros((n, c, S), np.float32)
    nf = np.zeros((n, c * S), np.uint32)  # the NaN flags at item stride c * S words
    for b in range(n):
        for oy in range(oh):
            for ox in range(ow):
                ys = range(max(oy * s - p, 0), min(oy * s - p + kh, h))
                xs = range(max(ox * s - p, 0), min(ox * s - p + kw, w))
                win = x[b][np.ix_(list(ys), list(xs))].reshape(-1, (planes + 1) * words)
                for ch in range(c):
                    wi, bit = ch // 32, ch % 32
                    codes = [sum(((int(px[q * words + wi]) >> bit) & 1) << q for q in range(planes)) for px in win]
                    nan = any((int(px[planes * words + wi]) >> bit) & 1 for px in win)
                    best = 0 if nan else max(codes)
                    nf[b, (oy * ow + ox) * words + wi] |= np.uint32(int(nan) << bit)
                    for q in range(planes):
                        y[b, q, (oy * ow + ox) * words + wi] |= np.uint32(((best >> q) & 1) << bit)
                    f[b, ch, oy * ow + ox] = np.nan if nan else (np.float32(best + lo) - np.float32(zero)) * np.float32(scale)
    return y, f, nf


def code_cases(cxx, src, rng, tmp):
    fn = dequantize_function(src) + device_function(src, "bnn_codepool", "template <int KH, int KW, int QP>")
    failures = 0
    for ci, (n, c, planes, h, w, kh, kw, s, p, lo, scale, zero, f32) in enumerate(CODE_CASES):
        words = image_ldw(c)
        oh, ow = (h + 2 * p - kh) // s + 1, (w + 2 * p - kw) // s + 1
        S, plane = oh * ow, (oh * ow * words + 7) // 8 * 8
        x = rng.integers(0, 2**32, (n, h, w, planes * words), dtype=np.uint64).astype(np.uint32)
        flags = np.where(rng.random((n, h, w, words)) < 0.05,
                         np.uint32(1) << rng.integers(0, 32, (n, h, w, words)).astype(np.uint32), 0).astype(np.uint32)
        x = np.concatenate([x, flags], axis=-1)
        sb, zb = (int(np.float32(v).view(np.uint32)) for v in (scale, zero))
        arr = lambda a: ", ".join(f"{int(v)}u" for v in a.reshape(-1))
        prog = f"""{HOST_PRELUDE}
{fn}
static const unsigned X[] = {{{arr(x)}}};
static unsigned Y[{n * planes * plane}];
static float F[{n * c * S}];
static unsigned N[{n * c * S}];
int main() {{
    for (unsigned &v : Y) v = 0xdeadbeefu; // the tail words too must be written
    for (bnn_i64 item = 0; item < {n}; item++)
        for (int j = 0; j < {plane}; j++)
            bnn_codepool<{kh}, {kw}, {planes}>(item, j, X, Y, {"F" if f32 else "nullptr"}, {"nullptr" if f32 else "N"},
                                              {c}, {words}, {plane}, {h}, {w},
                                              {s}, {s}, {p}, {p}, {oh}, {ow}, {lo}, {sb}u, {zb}u);
    for (unsigned v : Y) std::printf("%u\\n", v);
    for (float v : F) {{ unsigned u; std::memcpy(&u, &v, 4); std::printf("%u\\n", v != v ? 0x7fc00000u : u); }}
    for (unsigned v : N) std::printf("%u\\n", v);
}}
"""
        cc, exe = os.path.join(tmp, f"code{ci}.cc"), os.path.join(tmp, f"code{ci}")
        with open(cc, "w") as fh:
            fh.write(prog)
        r = subprocess.run([cxx, "-std=c++17", "-O1", "-ffp-contract=off", cc, "-o", exe], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"FAIL: compiling code case {ci}:\n{r.stderr[-2000:]}")
        got = np.array([int(v) for v in subprocess.run([exe], capture_output=True, text=True,
                                                       check=True).stdout.split()], np.uint64).astype(np.uint32)
        want_y, want_f, want_n = code_reference(x, c, planes, words, oh, ow, kh, kw, s, p, lo, scale, zero)
        gy, gf = got[:n * planes * plane], got[n * planes * plane:n * planes * plane + n * c * S]
        gn = got[n * planes * plane + n * c * S:]
        fbits = np.where(np.isnan(want_f), np.float32(np.nan), want_f).astype(np.float32).view(np.uint32)
        fbits = np.where(np.isnan(want_f), np.uint32(0x7fc00000), fbits)
        # without the float: the NaN flags (the words of real pixels; the rest of N stays 0)
        ok = np.array_equal(gy, want_y.reshape(-1)) and (not f32 or np.array_equal(gf, fbits.reshape(-1))) and \
            (f32 or (np.array_equal(gn, want_n.reshape(-1)) and want_n.any()))
        if not ok:
            bad = np.nonzero(gy != want_y.reshape(-1))[0]
            badf = np.nonzero(gf != fbits.reshape(-1))[0] if f32 else []
            print(f"  planes differ at {bad[:5]}, floats at {badf[:5]}"
                  f"{f' ({gf[badf[0]]:08x}, want {fbits.reshape(-1)[badf[0]]:08x})' if len(badf) else ''}")
        print(f"{'ok' if ok else 'FAIL'}: codes {ci}: {n}x{h}x{w}, {c} channels, {planes} planes, {kh}x{kw}/{s} pad {p}"
              f"{', float out' if f32 else ', NaN flags out'}")
        failures += not ok
    return failures


# (batch, channels, pixels, planes, lo, scale, zeropt, NaN flags): the w1a2 ResNet-18's last block
# (512 channels at 7x7), the tiny one's (160 at 1x1), and odd shapes
GAP_CASES = [(2, 512, 49, 2, 0, 0.25, 0.0, False), (3, 160, 1, 2, 0, 0.25, 0.0, True),
             (2, 70, 13, 3, -4, 0.3, 1.0, True), (1, 40, 9, 1, 0, 0.5, -0.5, False)]


def gap_cases(cxx, src, rng, tmp):
    fn = dequantize_function(src) + device_function(src, "bnn_gap_codes", "template <int QP>")
    failures = 0
    for ci, (n, c, S, planes, lo, scale, zero, nan) in enumerate(GAP_CASES):
        ldw = image_ldw(c)
        plane = (S * ldw + 7) // 8 * 8
        codes = rng.integers(0, 1 << planes, (n, S, c))
        x = np.zeros((n, planes, plane), np.uint32)
        for q in range(planes):
            bits = ((codes >> q) & 1).astype(np.uint64)
            for ch in range(c):
                x[:, q, np.arange(S) * ldw + ch // 32] |= (bits[:, :, ch] << (ch % 32)).astype(np.uint32)
        flag = rng.random((n, S, c)) < 0.03 if nan else np.zeros((n, S, c), bool)
        nf = np.zeros((n, c * S), np.uint32)  # item stride c * S words, a pixel's ldw words at s * ldw
        for ch in range(c):
            nf[:, np.arange(S) * ldw + ch // 32] |= (flag[:, :, ch].astype(np.uint64) << (ch % 32)).astype(np.uint32)
        v = (np.float32(codes + lo) - np.float32(zero)) * np.float32(scale)
        v = np.where(flag, np.float32(np.nan), v).astype(np.float32)
        want = np.zeros((n, c), np.float32)
        for s_ in range(S):  # in order, one rounding an add, as the CPU path
            want = (want + v[:, s_, :]).astype(np.float32)
        want = (want / np.float32(S)).astype(np.float32)
        sb, zb = (int(np.float32(t).view(np.uint32)) for t in (scale, zero))
        arr = lambda a: ", ".join(f"{int(t)}u" for t in a.reshape(-1))
        prog = f"""{HOST_PRELUDE}
{fn}
static const unsigned X[] = {{{arr(x)}}};
static const unsigned N[] = {{{arr(nf)}}};
static float Y[{n * c}];
int main() {{
    for (bnn_i64 item = 0; item < {n}; item++)
        for (int j = 0; j < {c}; j++)
            bnn_gap_codes<{planes}>(item, j, X, {"N" if nan else "nullptr"}, Y, {c}, {S}, {ldw}, {plane}, {lo}, {sb}u,
                                    {zb}u);
    for (float v : Y) {{ unsigned u; std::memcpy(&u, &v, 4); std::printf("%u\\n", v != v ? 0x7fc00000u : u); }}
}}
"""
        cc, exe = os.path.join(tmp, f"gap{ci}.cc"), os.path.join(tmp, f"gap{ci}")
        with open(cc, "w") as fh:
            fh.write(prog)
        r = subprocess.run([cxx, "-std=c++17", "-O1", "-ffp-contract=off", cc, "-o", exe], capture_output=True,
                           text=True)
        if r.returncode:
            sys.exit(f"FAIL: compiling gap case {ci}:\n{r.stderr[-2000:]}")
        got = np.array([int(t) for t in subprocess.run([exe], capture_output=True, text=True,
                                                       check=True).stdout.split()], np.uint64).astype(np.uint32)
        wbits = np.where(np.isnan(want), np.uint32(0x7fc00000), want.view(np.uint32)).reshape(-1)
        ok = np.array_equal(got, wbits) and (not nan or np.isnan(want).any())
        if not ok:
            bad = np.nonzero(got != wbits)[0]
            print(f"  means differ at {bad[:5]}")
        print(f"{'ok' if ok else 'FAIL'}: gap of codes {ci}: {n} x {c} channels x {S} pixels, {planes} planes"
              f"{', NaN flags' if nan else ''}")
        failures += not ok
    return failures


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
struct alignas(16) uint4 {{ unsigned x, y, z, w; }};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {{ return uint4{{x, y, z, w}}; }}
{fn}
alignas(16) static const unsigned X[] = {{{arr(x)}}};
static const unsigned M[] = {{{arr(mask)}}};
alignas(16) static unsigned Y[{n * oh * ow * out_words}];
int main() {{
    for (bnn_i64 item = 0; item < {n}; item++)
        for (int j = 0; j < {oh * ow}; j++)  // a thread an output pixel
            bnn_bitpool<{kh}, {kw}, {words}, {nan}, {out_words}>(item, j, X, Y, {"M" if mode else "nullptr"}, {h},
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
        failures += code_cases(cxx, open(os.path.join(SRC, "codegen", "cuda", "kernels", "float_ops.cu")).read(),
                               rng, tmp)
        failures += gap_cases(cxx, open(os.path.join(SRC, "codegen", "cuda", "kernels", "float_ops.cu")).read(),
                              rng, tmp)
    print("all ok" if not failures else f"{failures} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
