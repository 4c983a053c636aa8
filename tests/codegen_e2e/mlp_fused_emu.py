#!/usr/bin/env python3
"""The fused MLP kernels (codegen/cuda/kernels/mlp_fused.cu) without a GPU: bnncc's generated
kernel compiled as host C++ (one fiber per CUDA thread, tests/emu/emu_fiber.h; barriers for
__syncthreads and __ballot_sync, cp.async as a copy), fed the blob's WEIGHTS window and the same inputs as
`bnnrun --device cpu`, whose output it must equal bit for bit: TFC_1W1A, tests/text/mlp.bnn,
tests/passes/mlp_bn.bnn at -O3 and -O0 (float steps and a pack between layers), and the e2e
models of test_e2e.py's mlp_models (shared and global weights), at batch 1, 3 and 21 (21: one
block striding over the batch). Exit 77 (skipped) without a C++ compiler.

    mlp_fused_emu.py [MODEL [OPT]]"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

SRC = os.environ.get("BNN_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BNN_BUILD_ROOT", os.path.join(SRC, "build"))
SHARED = os.environ.get("BNN_SHARED", os.path.join(SRC, "..", "shared"))
BNNCC = os.path.join(BUILD, "compiler", "bnncc")
BNNRUN = os.path.join(BUILD, "runtime", "bnnrun")
CXX = os.environ.get("CXX", "g++")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_e2e  # noqa: E402  (the blob's sections and steps, mlp_models)

SHIM = r'''
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <vector>
#include "emu_fiber.h"
struct uint4 { unsigned x, y, z, w; };
struct D3 { unsigned x, y, z; };
static D3 threadIdx, blockIdx, blockDim, gridDim; // threadIdx: the running fiber's
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(x)
#define BNN_COMMON_CU
#define BNN_PDL_ENTER() ((void)0)
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
template <class T> static inline T __ldg(const T *p) { return *p; }
static inline float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
static inline float __fadd_rn(float a, float b) { volatile float r = a + b; return r; }
static inline float __fdiv_rn(float a, float b) { volatile float r = a / b; return r; }
static inline float __int2float_rn(int a) { return (float)a; }
static EmuFiberBarrier block_bar, warp_bar[8];
static bool votes[32][32];
static inline void __syncthreads() { emu_fiber_barrier_wait(&block_bar); }
static inline unsigned __ballot_sync(unsigned, bool bit) {
    int w = threadIdx.x / 32, l = threadIdx.x % 32;
    votes[w][l] = bit;
    emu_fiber_barrier_wait(&warp_bar[w]);
    unsigned r = 0;
    for (int i = 0; i < 32; i++) r |= (unsigned)votes[w][i] << i;
    emu_fiber_barrier_wait(&warp_bar[w]);
    return r;
}
static inline uintptr_t bnn_smem(const void *p) { return (uintptr_t)p; }
static inline void bnn_cp16(uintptr_t dst, const void *src, unsigned n) { memcpy((void *)dst, src, n); }
static inline void bnn_cp_commit() {}
template <int N> static inline void bnn_cp_wait() {}
static uint4 *emu_smem;
'''
MAIN = r'''
struct Launch { const unsigned char *x; unsigned char *y; const unsigned char *w; int batch; };
static void resume(unsigned tid) { threadIdx = {tid, 0, 0}; }
static void run_thread(unsigned, void *arg) {
    const Launch *l = (const Launch *)arg;
    KERNEL(l->x, l->y, l->w, l->batch);
}
int main(int argc, char **argv) {
    int batch = atoi(argv[1]);
    FILE *f = fopen(argv[2], "rb"); fseek(f, 0, SEEK_END); long nx = ftell(f); rewind(f);
    std::vector<unsigned char> x(nx); fread(x.data(), 1, nx, f); fclose(f);
    f = fopen(argv[3], "rb"); fseek(f, 0, SEEK_END); long nw = ftell(f); rewind(f);
    std::vector<unsigned char> w(nw + 64); fread(w.data(), 1, nw, f); fclose(f);
    long ny = atol(argv[4]);
    std::vector<unsigned char> y(ny, 0xAB);
    int smem = atoi(argv[6]);
    std::vector<uint4> sm(smem / 16 + 1);
    emu_smem = sm.data();
    blockDim = {256, 1, 1};
    gridDim = {argc > 7 ? (unsigned)atoi(argv[7]) : (unsigned)((batch + 7) / 8), 1, 1};
    Launch l = {x.data(), y.data(), w.data(), batch};
    for (unsigned b = 0; b < gridDim.x; b++) {
        blockIdx = {b, 0, 0};
        emu_fiber_barrier_init(&block_bar, 256);
        for (int i = 0; i < 8; i++) emu_fiber_barrier_init(&warp_bar[i], 32);
        emu_fibers_run(256, run_thread, &l, resume);
    }
    f = fopen(argv[5], "wb"); fwrite(y.data(), 1, ny, f); fclose(f);
}
'''

def check(model, opt, tmp):
    """The fused kernel of model against the CPU path; returns the failures."""
    tmp = os.path.join(tmp, os.path.basename(model) + opt)
    os.makedirs(tmp, exist_ok=True)
    blob = tmp + "/m.bin"
    subprocess.run([BNNCC, opt, "--target=cpu", model, "-o", blob], check=True)
    src = subprocess.run([BNNCC, opt, model, "--emit=cuda", "-o", "-"], check=True, capture_output=True,
                         text=True).stdout
    b = open(blob, "rb").read()
    woff, _ = test_e2e.blob_sections(b)[3]
    steps = [(name, [test_e2e.blob_slot(b, at, s) for s in range(8)], struct.unpack_from("<I", b, at + 128)[0])
             for at, kind, name in test_e2e.blob_steps(b) if kind == 16 and name.endswith("_mlp")]
    if len(steps) != 1:
        return [f"{model} {opt}: {len(steps)} fused MLP steps, expected 1"]
    name, slots, smem = steps[0]
    m = re.search(r"^// -+ %s\n(.*?)(?=^// -{20,} |\Z)" % name, src, re.M | re.S)
    glue = m.group(1).replace("extern __shared__ uint4 bnn_mlp_smem[];", "uint4 *bnn_mlp_smem = emu_smem;")
    fused = open(os.path.join(SRC, "codegen", "cuda", "kernels", "mlp_fused.cu")).read()
    with open(tmp + "/emu.cpp", "w") as f:
        f.write(SHIM + fused + glue + "#define KERNEL " + name + "\n" + MAIN)
    exe = tmp + "/emu"
    subprocess.run([CXX, "-std=c++20", "-O1", "-ffp-contract=off", "-w", "-I", test_e2e.EMU_FIBER, tmp + "/emu.cpp",
                    os.path.join(test_e2e.EMU_FIBER, "emu_fiber.c"), "-o", exe], check=True)
    wlo, wbytes = slots[3][2], slots[3][3]
    with open(tmp + "/w.bin", "wb") as f:
        f.write(b[woff + wlo:woff + wlo + wbytes])
    out_bytes = slots[2][3]
    ir = subprocess.run([BNNCC, "-O0", model, "--emit=ir", "-o", "-"], capture_output=True, text=True).stdout
    dims = [int(d) for d in re.search(r"^graph \$\S+\(%[^:]+: \w+\[N,([^\]]*)\]", ir, re.M).group(1).split(",")]
    rng = np.random.default_rng(5)
    bad = []
    for batch in (1, 3, 21):
        x = rng.standard_normal([batch] + dims).astype(np.float32)
        x[rng.random(x.shape) < 0.05] = 0  # exact zeros: the pack's zero rule
        x.tofile(tmp + "/x.bin")
        np.save(tmp + "/x.npy", x)
        grid = ["1"] if batch > 8 else []  # one block striding over the batch
        subprocess.run([exe, str(batch), tmp + "/x.bin", tmp + "/w.bin", str(out_bytes * batch), tmp + "/y.bin",
                        str(smem)] + grid, check=True)
        subprocess.run([BNNRUN, blob, "--device", "cpu", "--input", tmp + "/x.npy", "--output", tmp + "/ref.npy"],
                       check=True)
        got = np.fromfile(tmp + "/y.bin", np.uint8)
        want = np.ascontiguousarray(np.load(tmp + "/ref.npy")).view(np.uint8).reshape(-1)
        if got.size != want.size or not np.array_equal(got, want):
            bad.append(f"{os.path.basename(model)} {opt} batch {batch}: the fused kernel differs from the CPU path")
    print(f"{'FAIL' if bad else 'ok'}: {os.path.basename(model)} {opt} {name} (shared memory {smem} bytes)")
    return bad


def main():
    if not shutil.which(CXX):
        print(f"skipped: no {CXX}")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as tmp:
        if len(sys.argv) > 1:
            cases = [(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "-O3")]
        else:
            models = test_e2e.mlp_models(tmp, np.random.default_rng(99))
            cases = [(m, "-O3") for m in models if "bits" not in m]  # bits: its output is repacked after it
            cases += [(os.path.join(SHARED, "models", "qonnx", "TFC_1W1A.onnx"), "-O3"),
                      (os.path.join(SRC, "tests", "text", "mlp.bnn"), "-O3"),
                      (os.path.join(SRC, "tests", "passes", "mlp_bn.bnn"), "-O3"),
                      (os.path.join(SRC, "tests", "passes", "mlp_bn.bnn"), "-O0")]
        failures = sum((check(m, opt, tmp) for m, opt in cases), [])
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
