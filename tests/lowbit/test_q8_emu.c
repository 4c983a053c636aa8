/* test_q8_emu: qgemm_s8.cu (the low-bit GEMM on int8 codes) run without a GPU. The kernel file
 * is compiled as C under a block emulator: a fiber (tests/emu/emu_fiber.h) for each of a block's threads (256,
 * or 128 for the tiles of 4 warps of 64 x 64),
 * __syncthreads meets at a barrier, cp.async is an immediate copy (zero-filled past M and N),
 * ldmatrix .x4 gathers each lane's words from the rows its warp's lanes name, and mma.sync m16n8k32 .s8 / .u8 is computed from the 32 lanes' fragments of each warp with
 * the PTX ISA's register layout (the same word layout HARDWARE.md verified for m16n8k256 b1).
 * Every output word (padding included, the buffer poisoned first) must equal the runtime's CPU
 * GEMM on int8 codes (rt_cpu_qgemm_int8, itself checked against the interpreter by
 * test_qsteps): all three epilogues, planes and bytes out, 1 and 8 bits, odd N and K, one and
 * many K stages, batch 1, 3, 67 and 130, level counts of 2^k - 1 and between (the two
 * searches), warps of 32 x 32, 64 x 32 (8 and 4 a block) and 64 x 64. This checks the kernel's tiling, staging ring and epilogues, not the PTX
 * (test_planes_nvrtc, and on a GPU test_lowbit_int8.py --device gpu). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "blob.h"
#include "emu_fiber.h"
#include "folded_levels.h"
#include "rt.h"

/* ---------------------------------------------------------------- the block emulator */

typedef struct EmuDim {
    unsigned x, y, z;
} EmuDim;
static EmuDim threadIdx, blockIdx; /* threadIdx: the running fiber's */
static EmuFiberBarrier block_bar;
static unsigned emu_frag[256][6]; /* a0..a3, b0, b1 of each thread */

#define __global__
#define __device__
#define __forceinline__ static inline
#define __launch_bounds__(...)
#define __restrict__ restrict
#define __shared__ static
#define __align__(n) _Alignas(n)
#define __syncthreads() emu_fiber_barrier_wait(&block_bar)

#define BNN_Q8_ONCE
#define BNN_Q8_LINKAGE static
static void bnn_q8_cp16(void *dst, const void *src, bool ok) {
    if (ok)
        memcpy(dst, src, 16);
    else
        memset(dst, 0, 16);
}
static void bnn_q8_commit(void) {}
static _Alignas(16) unsigned char emu_dsmem[128 * 1024]; /* Q8_DYN kernels' shared memory */
#define bnn_q8_dyn_smem() emu_dsmem
/* ldmatrix .x4: every lane's row address through the barrier, then each lane reads its words. */
static const unsigned char *emu_ldsm_row[256];
static void bnn_q8_ldsm4(unsigned *r, const void *p) {
    unsigned tid = threadIdx.x, w0 = tid & ~31u, lane = tid & 31;
    emu_ldsm_row[tid] = p;
    emu_fiber_barrier_wait(&block_bar);
    for (unsigned i = 0; i < 4; i++)
        memcpy(&r[i], emu_ldsm_row[w0 + 8 * i + lane / 4] + 4 * (lane % 4), 4);
    emu_fiber_barrier_wait(&block_bar);
}
#define bnn_q8_wait(n) ((void)(n))
#define Q8_U_STORE4(y, v) memcpy((y), (v), 16)

/* Every thread of the block calls this the same number of times (the kernel's main loop has
 * no divergence), so a block barrier stands for the warp's. */
static void bnn_q8_mma(int *d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1,
                       int a_unsigned) {
    unsigned tid = threadIdx.x, w0 = tid & ~31u;
    unsigned f[6] = {a0, a1, a2, a3, b0, b1};
    memcpy(emu_frag[tid], f, sizeof f);
    emu_fiber_barrier_wait(&block_bar);
    int A[16][32], B[8][32];
    for (int l = 0; l < 32; l++) {
        int g = l >> 2, t = l & 3;
        const unsigned *r = emu_frag[w0 + (unsigned)l];
        for (int i = 0; i < 4; i++) {
            int sh = 8 * i;
#define BYTE_A(v) (a_unsigned ? (int)(((v) >> sh) & 0xffu) : (int)(int8_t)(((v) >> sh) & 0xffu))
            A[g][4 * t + i] = BYTE_A(r[0]);
            A[g + 8][4 * t + i] = BYTE_A(r[1]);
            A[g][16 + 4 * t + i] = BYTE_A(r[2]);
            A[g + 8][16 + 4 * t + i] = BYTE_A(r[3]);
#undef BYTE_A
            B[g][4 * t + i] = (int8_t)((r[4] >> sh) & 0xffu);
            B[g][16 + 4 * t + i] = (int8_t)((r[5] >> sh) & 0xffu);
        }
    }
    emu_fiber_barrier_wait(&block_bar);
    int g = (int)(tid & 31) >> 2, t = (int)tid & 3;
    int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 32; k++)
            d[i] += A[rows[i]][k] * B[cols[i]][k];
}

/* ---------------------------------------------------------------- the kernels */

#define Q8_NAME emu_w4a4_bytes
#define Q8_N 300
#define Q8_LD 1024
#define Q8_XB 4
#define Q8_EPI 2
#define Q8_L 15
#define Q8_YB 4
#define Q8_YFMT 1
#include "../../codegen/cuda/kernels/qgemm_s8.cu"

#define Q8_NAME emu_w8a8_planes
#define Q8_N 257
#define Q8_LD 256
#define Q8_XB 8
#define Q8_EPI 2
#define Q8_L 255
#define Q8_YB 8
#define Q8_YFMT 0
#include "../../codegen/cuda/kernels/qgemm_s8.cu"

#define Q8_NAME emu_a3_i32
#define Q8_N 10
#define Q8_LD 64
#define Q8_XB 3
#define Q8_EPI 1
#include "../../codegen/cuda/kernels/qgemm_s8.cu"

#define Q8_NAME emu_a8_counts
#define Q8_N 129
#define Q8_LD 192
#define Q8_XB 8
#define Q8_EPI 3
#define Q8_L 7
#include "../../codegen/cuda/kernels/qgemm_s8.cu"

#define Q8_NAME emu_a2_planes1
#define Q8_N 33
#define Q8_LD 128
#define Q8_XB 2
#define Q8_EPI 2
#define Q8_L 1
#define Q8_YB 1
#include "../../codegen/cuda/kernels/qgemm_s8.cu"

/* The 128 x 128 tile (dynamic shared memory): bytes, planes and int32 out. */
#define Q8_NAME emu_w8a8_bytes_t128
#define Q8_N 300
#define Q8_LD 320
#define Q8_XB 8
#define Q8_EPI 2
#define Q8_L 255
#define Q8_YB 8
#define Q8_YFMT 1
#define Q8_BM 128
#define Q8_BN 128
#define Q8_DYN 1
#include "../../codegen/cuda/kernels/qgemm_s8.cu"

#define Q8_NAME emu_w4a3_planes_t128
#define Q8_N 257
#define Q8_LD 192
#define Q8_XB 3
#define Q8_EPI 2
#define Q8_L 7
#define Q8_YB 3
#define Q8_BM 128
#define Q8_BN 128
#define Q8_DYN 1
#include "../../codegen/cuda/kernels/qgemm_s8.cu"

#define Q8_NAME emu_a5_i32_t128
#define Q8_N 129
#define Q8_LD 128
#define Q8_XB 5
#define Q8_EPI 1
#define Q8_BM 128
#define Q8_BN 128
#define Q8_DYN 1
#define Q8_BK 128
#include "../../codegen/cuda/kernels/qgemm_s8.cu"

/* Four warps of 64 x 64 on the 128 x 128 tile (lower.c q8_warps: up to 15 levels): bytes out
 * (stages of 64, four as the plans' dense tile), planes out (stages of 128). */
#define Q8_NAME emu_w5a4_bytes_w64
#define Q8_N 300
#define Q8_LD 320
#define Q8_XB 4
#define Q8_EPI 2
#define Q8_L 15
#define Q8_YB 4
#define Q8_YFMT 1
#define Q8_BM 128
#define Q8_BN 128
#define Q8_WARPS 4
#define Q8_WTN 64
#define Q8_DYN 1
#define Q8_STAGES 4
#include "../../codegen/cuda/kernels/qgemm_s8.cu"

#define Q8_NAME emu_w4a3_planes_w64
#define Q8_N 257
#define Q8_LD 256
#define Q8_XB 3
#define Q8_EPI 2
#define Q8_L 7
#define Q8_YB 3
#define Q8_BM 128
#define Q8_BN 128
#define Q8_WARPS 4
#define Q8_WTN 64
#define Q8_DYN 1
#define Q8_BK 128
#include "../../codegen/cuda/kernels/qgemm_s8.cu"

/* The plans' 64 x 128 tile where a row of bytes is a multiple of 128: K stages of 128, dynamic
 * shared memory; bytes out. */
#define Q8_NAME emu_w8a8_bytes_k128
#define Q8_N 300
#define Q8_LD 384
#define Q8_XB 8
#define Q8_EPI 2
#define Q8_L 255
#define Q8_YB 8
#define Q8_YFMT 1
#define Q8_DYN 1
#define Q8_BK 128
#include "../../codegen/cuda/kernels/qgemm_s8.cu"

/* Fewer levels than 2^YB - 1 (a MultiThreshold's own count): the clamped search. */
#define Q8_NAME emu_l5_planes
#define Q8_N 70
#define Q8_LD 128
#define Q8_XB 4
#define Q8_EPI 2
#define Q8_L 5
#define Q8_YB 3
#define Q8_YFMT 0
#include "../../codegen/cuda/kernels/qgemm_s8.cu"

#define Q8_NAME emu_l12_bytes
#define Q8_N 45
#define Q8_LD 192
#define Q8_XB 4
#define Q8_EPI 2
#define Q8_L 12
#define Q8_YB 4
#define Q8_YFMT 1
#include "../../codegen/cuda/kernels/qgemm_s8.cu"

/* Convolutions (Q8_CONV): S_* describe a case, Q8_* follow from it as lower_qconv_int8 writes
 * them; the converter of its input planes beside it. */
#define CONV_CASE(ID, XB_, C_, H_, W_, O_, KH_, KW_, SH_, SW_, PT_, PL_, DH_, DW_, OH_, OW_, PAD_, EPI_, L_, YB_,   \
                  LDW_, LDYW_, BM_)                                                                               \
    static const int ID##_geom[] = {XB_, C_, H_, W_, O_, KH_, KW_, SH_, SW_, PT_, PL_, DH_, DW_, OH_, OW_,      \
                                    PAD_, EPI_, L_, YB_, LDW_, LDYW_, BM_};
#define Q8_NAME emu_conv_w4a4
#define Q8_BM 64
#include "q8_conv_w4a4.h"
#include "../../codegen/cuda/kernels/qgemm_s8.cu"
CONV_CASE(conv_w4a4, 4, 64, 7, 7, 96, 3, 3, 1, 1, 1, 1, 1, 1, 7, 7, 5, 2, 15, 4, 2, 4, 64)
/* the same on four warps of 64 x 32 as a 128 x 64 tile (the plans' where O <= 64: two column
 * blocks here, rows past M) */
#define Q8_NAME emu_conv_w4a4_w4
#define Q8_BM 128
#define Q8_BN 64
#define Q8_WARPS 4
#define Q8_MINB 4
#include "q8_conv_w4a4.h"
#include "../../codegen/cuda/kernels/qgemm_s8.cu"
CONV_CASE(conv_w4a4_w4, 4, 64, 7, 7, 96, 3, 3, 1, 1, 1, 1, 1, 1, 7, 7, 5, 2, 15, 4, 2, 4, 128)
#define Q8_U_NAME emu_unpack_w4a4
#define Q8_U_XB 4
#define Q8_U_PIX 49
#define Q8_U_LDW 2
#define Q8_U_PLANE 104
#include "../../codegen/cuda/kernels/qgemm_s8.cu"

#define Q8_CONV 1
#define Q8_NAME emu_conv_w8a8
#define Q8_N 32
#define Q8_LD 320
#define Q8_XB 8
#define Q8_EPI 1
#define Q8_BM 128
#define Q8_H 9
#define Q8_W 11
#define Q8_C 3
#define Q8_CB 32
#define Q8_KH 3
#define Q8_KW 3
#define Q8_SH 2
#define Q8_SW 2
#define Q8_PT 1
#define Q8_PL 1
#define Q8_DH 1
#define Q8_DW 1
#define Q8_OH 5
#define Q8_OW 6
#define Q8_PAD 0
#define Q8_LDYW 1
#define Q8_YPLANE 8
#include "../../codegen/cuda/kernels/qgemm_s8.cu"
CONV_CASE(conv_w8a8, 8, 3, 9, 11, 32, 3, 3, 2, 2, 1, 1, 1, 1, 5, 6, 0, 1, 1, 1, 1, 1, 128)
#define Q8_U_NAME emu_unpack_w8a8
#define Q8_U_XB 8
#define Q8_U_PIX 99
#define Q8_U_LDW 1
#define Q8_U_PLANE 104
#include "../../codegen/cuda/kernels/qgemm_s8.cu"

/* 2x3 kernel, dilation 2 along y, stride 2 along x, uneven pads, 300 channels (16 words), two
 * column blocks of 128, pad code 3 */
#define Q8_NAME emu_conv_w3a3
#define Q8_BM 64
#include "q8_conv_w3a3.h"
#include "../../codegen/cuda/kernels/qgemm_s8.cu"
CONV_CASE(conv_w3a3, 3, 300, 5, 6, 130, 2, 3, 1, 2, 1, 2, 2, 1, 4, 4, 3, 2, 7, 3, 16, 8, 64)
/* the same on the 128 x 128 tile (rows past M and channels past O in both blocks) */
#define Q8_NAME emu_conv_w3a3_t128
#define Q8_BM 128
#define Q8_BN 128
#include "q8_conv_w3a3.h"
#include "../../codegen/cuda/kernels/qgemm_s8.cu"
CONV_CASE(conv_w3a3_t128, 3, 300, 5, 6, 130, 2, 3, 1, 2, 1, 2, 2, 1, 4, 4, 3, 2, 7, 3, 16, 8, 128)
/* and on four warps of 64 x 64 */
#define Q8_NAME emu_conv_w3a3_w64
#define Q8_BM 128
#define Q8_BN 128
#define Q8_WARPS 4
#define Q8_WTN 64
#include "q8_conv_w3a3.h"
#include "../../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_U_NAME emu_unpack_w3a3
#define Q8_U_XB 3
#define Q8_U_PIX 30
#define Q8_U_LDW 16
#define Q8_U_PLANE 480
#include "../../codegen/cuda/kernels/qgemm_s8.cu"

/* one level, one plane out (a b1 image for a binary conv), 40 channels in 2 words */
#define Q8_CONV 1
#define Q8_NAME emu_conv_b1out
#define Q8_N 40
#define Q8_LD 128
#define Q8_XB 5
#define Q8_EPI 2
#define Q8_L 1
#define Q8_YB 1
#define Q8_BM 128
#define Q8_H 4
#define Q8_W 4
#define Q8_C 17
#define Q8_CB 32
#define Q8_KH 2
#define Q8_KW 2
#define Q8_SH 1
#define Q8_SW 1
#define Q8_PT 0
#define Q8_PL 0
#define Q8_DH 1
#define Q8_DW 1
#define Q8_OH 3
#define Q8_OW 3
#define Q8_PAD 0
#define Q8_LDYW 2
#define Q8_YPLANE 24
#include "../../codegen/cuda/kernels/qgemm_s8.cu"
CONV_CASE(conv_b1out, 5, 17, 4, 4, 40, 2, 2, 1, 1, 0, 0, 1, 1, 3, 3, 0, 2, 1, 1, 1, 2, 128)
#define Q8_U_NAME emu_unpack_b1out
#define Q8_U_XB 5
#define Q8_U_PIX 16
#define Q8_U_LDW 1
#define Q8_U_PLANE 16
#include "../../codegen/cuda/kernels/qgemm_s8.cu"

/* 8-bit codes out: 255 levels (the binary search's deepest), 8 planes; 130 channels (stages of
 * 128 bytes of K on 128 x 64 tiles) */
#define Q8_CONV 1
#define Q8_NAME emu_conv_a8out
#define Q8_N 33
#define Q8_BK 128
#define Q8_DYN 1
#define Q8_LD 2304
#define Q8_XB 8
#define Q8_EPI 2
#define Q8_L 255
#define Q8_YB 8
#define Q8_BM 128
#define Q8_H 5
#define Q8_W 6
#define Q8_C 130
#define Q8_CB 256
#define Q8_KH 3
#define Q8_KW 3
#define Q8_SH 1
#define Q8_SW 1
#define Q8_PT 1
#define Q8_PL 1
#define Q8_DH 1
#define Q8_DW 1
#define Q8_OH 5
#define Q8_OW 6
#define Q8_PAD 0
#define Q8_LDYW 2
#define Q8_YPLANE 64
#include "../../codegen/cuda/kernels/qgemm_s8.cu"
CONV_CASE(conv_a8out, 8, 130, 5, 6, 33, 3, 3, 1, 1, 1, 1, 1, 1, 5, 6, 0, 2, 255, 8, 8, 2, 128)
#define Q8_U_NAME emu_unpack_a8out
#define Q8_U_XB 8
#define Q8_U_PIX 30
#define Q8_U_LDW 8
#define Q8_U_PLANE 240
#include "../../codegen/cuda/kernels/qgemm_s8.cu"

typedef void (*Q8Kernel)(const unsigned char *, const signed char *, int, const int *, const int *, void *);
typedef void (*Q8Unpack)(const unsigned *, int, unsigned *);

typedef struct Spec {
    Q8Kernel fn;
    const char *name;
    int n, k, xb, wlo, whi, epi, l, yb, yfmt;
    int bm, bn; /* the block tile: bn 0 for 8192 / bm, or 128 (128 x 128, dynamic shared memory) */
    int warps;  /* 0 for 8 */
    bool even; /* levels evenly spaced (a quantizer's), some never reached, else sampled sums */
} Spec;

static const Spec specs[] = {
    {emu_w4a4_bytes, "w4a4, bytes out", 300, 1000, 4, -8, 7, 2, 15, 4, 1, 64, 0, 0, false},
    {emu_w8a8_planes, "w8a8 (u8 codes), planes out", 257, 255, 8, -128, 127, 2, 255, 8, 0, 64, 0, 0, false},
    {emu_a3_i32, "w1a3 bipolar, int32, one stage", 10, 37, 3, -1, 1, 1, 1, 1, 0, 64, 0, 0, false},
    {emu_a8_counts, "w3a8, counts as int32", 129, 150, 8, -4, 3, 3, 7, 3, 0, 64, 0, 0, false},
    {emu_a2_planes1, "unsigned w5 a2, one plane out", 33, 100, 2, 0, 31, 2, 1, 1, 0, 64, 0, 0, false},
    {emu_w8a8_bytes_t128, "w8a8, 128 x 128 tile, bytes out", 300, 300, 8, -128, 127, 2, 255, 8, 1, 128, 128, 0, false},
    {emu_w4a3_planes_t128, "w4a3, 128 x 128 tile, planes out", 257, 170, 3, -8, 7, 2, 7, 3, 0, 128, 128, 0, false},
    {emu_a5_i32_t128, "w2a5, 128 x 128 tile, K stages of 128, int32", 129, 100, 5, -2, 1, 1, 1, 1, 0, 128, 128, 0, false},
    {emu_w8a8_bytes_t128, "w8a8, 128 x 128 tile, bytes out, even levels", 300, 300, 8, -128, 127, 2, 255, 8, 1, 128, 128,
     0, true},
    {emu_w8a8_planes, "w8a8 (u8 codes), planes out, even levels", 257, 255, 8, -128, 127, 2, 255, 8, 0, 64, 0, 0, true},
    {emu_l5_planes, "w3a4, 5 levels, planes out", 70, 100, 4, -4, 3, 2, 5, 3, 0, 64, 0, 0, false},
    {emu_l12_bytes, "w4a4, 12 levels, bytes out", 45, 150, 4, -8, 7, 2, 12, 4, 1, 64, 0, 0, false},
    {emu_w5a4_bytes_w64, "w5a4, 4 warps of 64 x 64, bytes out", 300, 300, 4, -16, 15, 2, 15, 4, 1, 128, 128, 4, false},
    {emu_w4a3_planes_w64, "w4a3, 4 warps of 64 x 64, K stages of 128, planes out", 257, 250, 3, -8, 7, 2, 7, 3, 0, 128,
     128, 4, false},
    {emu_w8a8_bytes_k128, "w8a8, K stages of 128, bytes out, even levels", 300, 330, 8, -128, 127, 2, 255, 8, 1, 64,
     0, 0, true},
};

static uint32_t rng_state = 777;
static int rnd(int lo, int hi) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return lo + (int)((rng_state >> 8) % (uint32_t)(hi - lo + 1));
}

typedef struct Launch {
    Q8Kernel fn;
    const unsigned char *A;
    const signed char *W;
    int M;
    const int *T, *dir;
    void *Y;
} Launch;

static void resume(unsigned tid) { threadIdx.x = tid; }

static void run_thread(unsigned tid, void *arg) {
    (void)tid;
    Launch *l = arg;
    l->fn(l->A, l->W, l->M, l->T, l->dir, l->Y);
}

static void launch(Q8Kernel fn, unsigned threads, unsigned gx, unsigned gy, const unsigned char *A,
                   const signed char *W, int M, const int *T, const int *dir, void *Y) {
    Launch l = {fn, A, W, M, T, dir, Y};
    emu_fiber_barrier_init(&block_bar, threads);
    for (unsigned by = 0; by < gy; by++)
        for (unsigned bx = 0; bx < gx; bx++) {
            blockIdx.x = bx;
            blockIdx.y = by;
            emu_fibers_run(threads, run_thread, &l, resume);
        }
    emu_fiber_barrier_init(&block_bar, 256);
}

/* The kernels (q8_levels.cu, compiled by NVRTC without blob.h) hold their own copy of where the
 * estimates start and from how many levels; a kernel reading estimates bnncc did not write would
 * read past x0. */
_Static_assert(BNN_Q8_EST(BLOB_Q8_EST_LEVELS) && !BNN_Q8_EST(BLOB_Q8_EST_LEVELS - 1),
               "q8_levels.cu BNN_Q8_EST and blob.h BLOB_Q8_EST_LEVELS differ");
static void check_estimate_layout(void) {
    for (int64_t n = 1; n <= 9; n++)
        for (int64_t l = BLOB_Q8_EST_LEVELS; l <= 255; l += 41)
            CHECK_MSG(BNN_Q8_EST_AT(n, l) == blob_q8_est_at(n, l), "q8_levels.cu BNN_Q8_EST_AT(%lld, %lld) = %lld, blob.h %lld",
                      (long long)n, (long long)l, (long long)BNN_Q8_EST_AT(n, l), (long long)blob_q8_est_at(n, l));
}

static void check_spec(const Spec *s, int M) {
    int64_t N = s->n, K = s->k, ld = blob_int8_ld(K);
    uint8_t *A = calloc((size_t)(M * ld), 1);
    int8_t *W = calloc((size_t)(N * ld), 1);
    for (int64_t m = 0; m < M; m++)
        for (int64_t k = 0; k < K; k++)
            A[m * ld + k] = (uint8_t)rnd(0, (1 << s->xb) - 1);
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            W[n * ld + k] = (int8_t)(s->wlo == -1 && s->whi == 1 ? (rnd(0, 1) ? 1 : -1) : rnd(s->wlo, s->whi));
    int32_t *acc = malloc((size_t)(M * N) * 4);
    rt_cpu_qgemm_int8(A, W, M, N, ld, acc, NULL, NULL, 0, 0, 0, NULL);
    int32_t *t = malloc((size_t)(N * s->l + N) * 4), *dir = t + N * s->l; /* thresholds, then dir */
    for (int64_t n = 0; n < N; n++) {
        dir[n] = rnd(0, 1) ? 1 : -1;
        if (!s->even) {
            for (int l = 0; l < s->l; l++)
                t[n * s->l + l] = acc[rnd(0, M * (int)N - 1)] + rnd(-2, 2);
            continue;
        }
        /* a quantizer's levels, step apart from a sampled sum, a few off the line; in every
         * third channel the top quarter never reached (lowbit's INT32_MAX; folded, an
         * always-reached INT32_MIN where the channel falls) */
        const int base = acc[rnd(0, M * (int)N - 1)], step = rnd(1, 400);
        for (int l = 0; l < s->l; l++)
            t[n * s->l + l] = n % 3 == 0 && 4 * l >= 3 * s->l
                                  ? INT32_MAX
                                  : base + (l - s->l / 2) * step * dir[n] + (rnd(0, 9) ? 0 : rnd(-step, step));
    }
    size_t bytes = s->epi != 2 ? (size_t)(M * N) * 4
                   : s->yfmt    ? (size_t)(M * blob_int8_ld(N))
                                : (size_t)(M * s->yb * ((N + 255) / 256 * 8)) * 4;
    uint8_t *want = malloc(2 * bytes), *got = want + bytes;
    if (s->epi == 2)
        rt_cpu_qgemm_int8(A, W, M, N, ld, NULL, t, dir, s->l, s->yb, s->yfmt, want);
    else
        memcpy(want, acc, bytes);
    for (int64_t i = 0; s->epi == 3 && i < M * N; i++) { /* the counts */
        int c = 0;
        for (int l = 0; l < s->l; l++)
            c += dir[i % N] < 0 ? acc[i] <= t[i % N * s->l + l] : acc[i] >= t[i % N * s->l + l];
        ((int32_t *)want)[i] = c;
    }
    memset(got, 0xa5, bytes);
    int32_t *ts = folded_levels(t, dir, N, s->l);
    const int bn = s->bn ? s->bn : 8192 / s->bm;
    launch(s->fn, s->warps ? 32u * (unsigned)s->warps : 256u, (unsigned)((N + bn - 1) / bn), (unsigned)((M + s->bm - 1) / s->bm), A, (const signed char *)W, M, ts,
           dir, got);
    free(ts);
    size_t bad = 0, first = bytes;
    for (size_t i = 0; i < bytes; i++)
        if (got[i] != want[i]) {
            bad++;
            first = first < i ? first : i;
        }
    CHECK_MSG(bad == 0, "%s, M=%d: %zu of %zu bytes differ (the first at %zu)", s->name, M, bad, bytes, first);
    free(A);
    free(W);
    free(acc);
    free(t);
    free(want);
}

typedef struct ULaunch {
    Q8Unpack fn;
    const unsigned *X;
    int M;
    unsigned *Y;
} ULaunch;

static void run_unpack(unsigned tid, void *arg) {
    (void)tid;
    ULaunch *l = arg;
    l->fn(l->X, l->M, l->Y);
}

typedef struct ConvSpec {
    Q8Kernel fn;
    Q8Unpack unpack;
    const int *g; /* CONV_CASE's numbers */
    const char *name;
    int wlo, whi, images;
    int bn;    /* the block tile's columns: 0 for 8192 / its rows, or 128 / 64 */
    int warps; /* 0 for 8 */
} ConvSpec;

/* One convolution case: codes -> image planes (as the quantize step writes them) -> the
 * converter's bytes (checked) -> the kernel, every output word against a plain loop over the
 * codes with the pad code outside the image. */
static void check_conv(const ConvSpec *s) {
    const int *g = s->g;
    const int xb = g[0], C = g[1], H = g[2], W = g[3], O = g[4], KH = g[5], KW = g[6], SH = g[7], SW = g[8];
    const int PT = g[9], PL = g[10], DH = g[11], DW = g[12], OH = g[13], OW = g[14], pad = g[15], epi = g[16];
    const int L = g[17], yb = g[18], ldw = g[19], ldyw = g[20], bm = g[21], n = s->images;
    const int pix = H * W, cells = OH * OW, cb = 32 * ldw, taps = KH * KW, M = n * cells;
    const int bk = cb >= 128 ? 128 : 64; /* lower.c lower_qconv_int8's stage of K */
    const int64_t plane = blob_image_plane_words(pix, ldw), ld = (taps * cb + bk - 1) / bk * bk;
    uint8_t *codes = malloc((size_t)(n * C * pix));
    for (int i = 0; i < n * C * pix; i++)
        codes[i] = (uint8_t)rnd(0, (1 << xb) - 1);
    uint32_t *X = calloc((size_t)(n * xb * plane), 4);
    uint8_t *want_bytes = calloc((size_t)(n * pix * cb), 1), *bytes = malloc((size_t)(n * pix * cb));
    for (int im = 0; im < n; im++)
        for (int c = 0; c < C; c++)
            for (int q = 0; q < pix; q++) {
                uint8_t v = codes[(im * C + c) * pix + q];
                want_bytes[(im * pix + q) * cb + c] = v;
                for (int p = 0; p < xb; p++)
                    X[(im * xb + p) * plane + q * ldw + c / 32] |= (uint32_t)((v >> p) & 1) << (c % 32);
            }
    memset(bytes, 0xa5, (size_t)(n * pix * cb));
    ULaunch ul = {s->unpack, X, n * pix * ldw * 2, (unsigned *)bytes};
    for (unsigned bx = 0; bx < (unsigned)(ul.M + 255) / 256; bx++) {
        blockIdx.x = bx;
        blockIdx.y = 0;
        emu_fibers_run(256, run_unpack, &ul, resume);
    }
    CHECK_MSG(memcmp(bytes, want_bytes, (size_t)(n * pix * cb)) == 0, "%s: the bytes image differs", s->name);
    int8_t *u = malloc((size_t)(O * C * taps)), *W8 = calloc((size_t)(O * ld), 1);
    for (int i = 0; i < O * C * taps; i++)
        u[i] = (int8_t)rnd(s->wlo, s->whi);
    for (int o = 0; o < O; o++)
        for (int c = 0; c < C; c++)
            for (int tap = 0; tap < taps; tap++)
                W8[o * ld + tap * cb + c] = u[(o * C + c) * taps + tap];
    int32_t *acc = calloc((size_t)(n * O * cells), 4); /* NCHW */
    for (int im = 0; im < n; im++)
        for (int o = 0; o < O; o++)
            for (int oy = 0; oy < OH; oy++)
                for (int ox = 0; ox < OW; ox++) {
                    int32_t a = 0;
                    for (int c = 0; c < C; c++)
                        for (int ky = 0; ky < KH; ky++)
                            for (int kx = 0; kx < KW; kx++) {
                                int iy = oy * SH - PT + ky * DH, ix = ox * SW - PL + kx * DW;
                                int v = iy >= 0 && iy < H && ix >= 0 && ix < W ? codes[(im * C + c) * pix + iy * W + ix] : pad;
                                a += v * u[(o * C + c) * taps + ky * KW + kx];
                            }
                    acc[(im * O + o) * cells + oy * OW + ox] = a;
                }
    int32_t *t = malloc((size_t)(O * L + O) * 4), *dir = t + O * L;
    for (int o = 0; o < O; o++) {
        dir[o] = rnd(0, 1) ? 1 : -1;
        for (int l = 0; l < L; l++)
            t[o * L + l] = acc[rnd(0, n * O * cells - 1)] + rnd(-2, 2);
    }
    int32_t *ts = folded_levels(t, dir, O, L);
    const int64_t yplane = blob_image_plane_words(cells, ldyw);
    size_t nbytes = epi == 1 ? (size_t)(n * O * cells) * 4 : (size_t)(n * yb * yplane) * 4;
    uint8_t *want = calloc(2, nbytes), *got = want + nbytes;
    if (epi == 1)
        memcpy(want, acc, nbytes);
    else
        for (int im = 0; im < n; im++)
            for (int o = 0; o < O; o++)
                for (int q = 0; q < cells; q++) {
                    int32_t a = acc[(im * O + o) * cells + q];
                    int count = 0;
                    for (int l = 0; l < L; l++)
                        count += dir[o] < 0 ? a <= t[o * L + l] : a >= t[o * L + l];
                    for (int b = 0; b < yb; b++)
                        ((uint32_t *)want)[(im * yb + b) * yplane + q * ldyw + o / 32] |= (uint32_t)((count >> b) & 1)
                                                                                         << (o % 32);
                }
    memset(got, 0xa5, nbytes);
    const int bn = s->bn ? s->bn : 8192 / bm;
    launch(s->fn, s->warps ? 32u * (unsigned)s->warps : 256u, (unsigned)(M + bm - 1) / bm, (unsigned)(O + bn - 1) / bn, bytes,
           (const signed char *)W8, M, ts, dir, got);
    size_t bad = 0, first = nbytes;
    for (size_t i = 0; i < nbytes; i++)
        if (got[i] != want[i]) {
            bad++;
            first = first < i ? first : i;
        }
    CHECK_MSG(bad == 0, "%s: %zu of %zu bytes differ (the first at %zu)", s->name, bad, nbytes, first);
    free(codes);
    free(X);
    free(want_bytes);
    free(bytes);
    free(u);
    free(W8);
    free(acc);
    free(t);
    free(ts);
    free(want);
}

int main(void) {
    emu_fiber_barrier_init(&block_bar, 256);
    check_estimate_layout();
    static const ConvSpec convs[] = {
        {emu_conv_w4a4, emu_unpack_w4a4, conv_w4a4_geom, "conv w4a4 3x3, pad code 5, planes out", -8, 7, 3, 0, 0},
        {emu_conv_w4a4_w4, emu_unpack_w4a4, conv_w4a4_w4_geom, "conv w4a4 as above, 4 warps of 64 x 32 on 128 x 64, 7 images",
         -8, 7, 7, 64, 4},
        {emu_conv_w8a8, emu_unpack_w8a8, conv_w8a8_geom, "conv w8a8 (u8) 3x3/2 over 3 channels, int32 out", -128, 127, 2, 0,
         0},
        {emu_conv_w3a3, emu_unpack_w3a3, conv_w3a3_geom, "conv w3a3 2x3, dilation, uneven pads, 300 channels", -4, 3, 1, 0, 0},
        {emu_conv_w3a3_t128, emu_unpack_w3a3, conv_w3a3_t128_geom, "conv w3a3 as above, 128 x 128 tile, 9 images", -4, 3,
         9, 128, 0},
        {emu_conv_w3a3_w64, emu_unpack_w3a3, conv_w3a3_t128_geom, "conv w3a3 as above, 4 warps of 64 x 64, 9 images", -4, 3,
         9, 128, 4},
        {emu_conv_b1out, emu_unpack_b1out, conv_b1out_geom, "conv unsigned w4 a5, one plane out", 0, 15, 5, 0, 0},
        {emu_conv_a8out, emu_unpack_a8out, conv_a8out_geom, "conv w8a8, 255 levels, 8 planes out, K stages of 128", -128, 127, 2, 0,
         0},
    };
    for (size_t i = 0; i < sizeof convs / sizeof *convs; i++)
        check_conv(&convs[i]);
    static const int Ms[] = {1, 3, 67, 130, 260};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++)
        for (size_t m = 0; m < sizeof Ms / sizeof *Ms; m++)
            check_spec(&specs[i], Ms[m]);
    return check_report("test_q8_emu");
}
