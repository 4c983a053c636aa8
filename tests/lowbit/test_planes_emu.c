/* test_planes_emu: bgemm_planes.cu run without a GPU. The kernel file is compiled as C with a
 * warp emulator: 32 fibers per block stand for the lanes (tests/emu/emu_fiber.h), the warp primitives
 * (__syncwarp, __ballot_sync, __shfl_xor_sync) meet at a barrier, and mma.sync m16n8k256
 * .and.popc is computed from the lanes' fragments with the register layout HARDWARE.md verified
 * on the hardware. The outputs must equal the runtime's CPU bit-plane GEMM word for word, which
 * checks the kernel's indexing, plane combination and epilogues, among them the counts over
 * folded, sorted levels past 15 (PL_LFOLD, with 255 the estimates; not the PTX: see
 * test_planes_nvrtc and, on a GPU, test_planes_gpu). */
#include <stdbool.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "blob.h"
#include "folded_levels.h"
#include "rt.h"

/* ---------------------------------------------------------------- the warp emulator */

#include "warp_emu.h"
#define BNN_PL_LINKAGE static
#define BNN_PLANES_ONCE /* the emulator's MMA instead of the PTX */
#define bnn_pl_mma emu_mma

/* ---------------------------------------------------------------- the kernels */

#define PL_NAME emu_w1a2
#define PL_N 64
#define PL_K 784
#define PL_XB 2
#define PL_WB 1
#define PL_WBIPOLAR 1
#define PL_EPI 2
#define PL_L 3
#define PL_YB 2
#include "../../codegen/cuda/kernels/bgemm_planes.cu"

#define PL_NAME emu_w2a2
#define PL_N 70
#define PL_K 300
#define PL_XB 2
#define PL_WB 2
#define PL_EPI 2
#define PL_L 3
#define PL_YB 2
#include "../../codegen/cuda/kernels/bgemm_planes.cu"

#define PL_NAME emu_w3a4_i32
#define PL_N 33
#define PL_K 520
#define PL_XB 4
#define PL_WB 3
#define PL_EPI 1
#include "../../codegen/cuda/kernels/bgemm_planes.cu"

#define PL_NAME emu_w1s_a3_i32
#define PL_N 9
#define PL_K 3
#define PL_XB 3
#define PL_WB 1
#define PL_EPI 1
#include "../../codegen/cuda/kernels/bgemm_planes.cu"

#define PL_NAME emu_u2a5
#define PL_N 40
#define PL_K 257
#define PL_XB 5
#define PL_WB 2
#define PL_WSIGNED 0
#define PL_EPI 2
#define PL_L 7
#define PL_YB 3
#include "../../codegen/cuda/kernels/bgemm_planes.cu"

/* a bit-plane layer before an int8 one: its counts as bytes (PL_YFMT 1) */
#define PL_NAME emu_w2a3_y8
#define PL_N 300
#define PL_K 784
#define PL_XB 3
#define PL_WB 2
#define PL_EPI 2
#define PL_L 7
#define PL_YB 3
#define PL_YFMT 1
#include "../../codegen/cuda/kernels/bgemm_planes.cu"

/* past 15 levels bnncc hands the kernel its levels folded and sorted (PL_LFOLD): 31 levels
 * (a binary search), 255 (the estimate checked, then the search), 63 levels as bytes */
#define PL_NAME emu_w2a2_fold31
#define PL_N 100
#define PL_K 300
#define PL_XB 2
#define PL_WB 2
#define PL_EPI 2
#define PL_L 31
#define PL_YB 5
#define PL_LFOLD 1
#include "../../codegen/cuda/kernels/bgemm_planes.cu"

#define PL_NAME emu_w3a4_fold255
#define PL_N 70
#define PL_K 520
#define PL_XB 4
#define PL_WB 3
#define PL_EPI 2
#define PL_L 255
#define PL_YB 8
#define PL_LFOLD 1
#include "../../codegen/cuda/kernels/bgemm_planes.cu"

#define PL_NAME emu_w1a3_fold63_y8
#define PL_N 90
#define PL_K 400
#define PL_XB 3
#define PL_WB 1
#define PL_WBIPOLAR 1
#define PL_EPI 2
#define PL_L 63
#define PL_YB 6
#define PL_YFMT 1
#define PL_LFOLD 1
#include "../../codegen/cuda/kernels/bgemm_planes.cu"

typedef struct Spec {
    EmuKernel fn;
    const char *name;
    int n, k, xb, wb, wsigned, bipolar, epi, l, yb, yfmt, lfold;
} Spec;

static const Spec specs[] = {
    {emu_w1a2, "w1a2 bipolar, planes out", 64, 784, 2, 1, 1, 1, 2, 3, 2, 0, 0},
    {emu_w2a2, "w2a2, planes out", 70, 300, 2, 2, 1, 0, 2, 3, 2, 0, 0},
    {emu_w3a4_i32, "w3a4, int32", 33, 520, 4, 3, 1, 0, 1, 1, 1, 0, 0},
    {emu_w1s_a3_i32, "signed w1 (0/-1) a3, int32", 9, 3, 3, 1, 1, 0, 1, 1, 1, 0, 0},
    {emu_u2a5, "unsigned w2 a5, planes out", 40, 257, 5, 2, 0, 0, 2, 7, 3, 0, 0},
    {emu_w2a3_y8, "w2a3, bytes out", 300, 784, 3, 2, 1, 0, 2, 7, 3, 1, 0},
    {emu_w2a2_fold31, "w2a2, 31 folded levels", 100, 300, 2, 2, 1, 0, 2, 31, 5, 0, 1},
    {emu_w3a4_fold255, "w3a4, 255 folded levels and their estimates", 70, 520, 4, 3, 1, 0, 2, 255, 8, 0, 1},
    {emu_w1a3_fold63_y8, "w1a3 bipolar, 63 folded levels, bytes out", 90, 400, 3, 1, 1, 1, 2, 63, 6, 1, 1},
};

static uint32_t rng_state = 4242;
static int rnd(int lo, int hi) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return lo + (int)((rng_state >> 8) % (uint32_t)(hi - lo + 1));
}

/* Bit b of codes[rows][K] (two's complement bits of the int) as plane `plane` of each row of
 * P[rows][planes][ld]. */
static void pack_plane(const int *codes, int64_t rows, int64_t K, int64_t ld, int b, int planes,
                       int plane, uint32_t *P) {
    for (int64_t r = 0; r < rows; r++) {
        uint32_t *row = P + (r * planes + plane) * ld;
        memset(row, 0, (size_t)ld * sizeof *row);
        for (int64_t k = 0; k < K; k++)
            if (((unsigned)codes[r * K + k] >> b) & 1u)
                row[k / 32] |= 1u << (k % 32);
    }
}

static void check_spec(const Spec *s, int M) {
    int64_t N = s->n, K = s->k, ld = (K + 255) / 256 * 8, ldy = (N + 255) / 256 * 8;
    int *x = malloc((size_t)(M * K) * sizeof *x), *u = malloc((size_t)(N * K) * sizeof *u);
    for (int64_t i = 0; i < M * K; i++)
        x[i] = rnd(0, (1 << s->xb) - 1);
    for (int64_t i = 0; i < N * K; i++)
        u[i] = s->bipolar   ? rnd(0, 1)
               : s->wsigned ? rnd(-(1 << (s->wb - 1)), (1 << (s->wb - 1)) - 1)
                            : rnd(0, (1 << s->wb) - 1);
    uint32_t *A = malloc((size_t)(s->xb * M * ld) * 4), *W = malloc((size_t)(s->wb * N * ld) * 4);
    for (int p = 0; p < s->xb; p++)
        pack_plane(x, M, K, ld, p, s->xb, p, A);
    for (int q = 0; q < s->wb; q++)
        pack_plane(u, N, K, ld, q, 1, 0, W + q * N * ld);
    int32_t *acc = malloc((size_t)(M * N) * 4);
    rt_cpu_qgemm_planes(A, W, M, N, ld, s->xb, s->wb, s->wsigned, s->bipolar, acc, NULL, NULL, 0,
                        0, NULL);
    int32_t *t = malloc((size_t)(N * s->l) * 4);
    int32_t *dir = malloc((size_t)N * sizeof *dir);
    for (int64_t n = 0; n < N; n++) {
        dir[n] = rnd(0, 1) ? 1 : -1;
        for (int l = 0; l < s->l; l++)
            t[n * s->l + l] = acc[rnd(0, M * (int)N - 1)] + rnd(-2, 2);
        /* every other channel a quantizer's levels, evenly spaced (the estimate's path), a few
         * off the line, every third one's top quarter never reached */
        for (int l = 0; s->lfold && n % 2 == 0 && l < s->l; l++) {
            int step = 1 + (int)(n % 5);
            t[n * s->l + l] = n % 3 == 0 && 4 * l >= 3 * s->l ? (dir[n] < 0 ? INT32_MIN : INT32_MAX)
                              : acc[n] + (l - s->l / 2) * step * dir[n] + (rnd(0, 9) ? 0 : rnd(-step, step));
        }
    }
    /* PL_LFOLD: the kernel reads them as lower.c put_q8_dense_levels writes x0 */
    int32_t *tk = s->lfold ? folded_levels(t, dir, N, s->l) : t;
    size_t words = s->epi == 1 ? (size_t)(M * N) : (size_t)(s->yb * M * ldy);
    int64_t ldy8 = (N + 63) / 64 * 64; /* PL_YFMT 1: bytes a row */
    if (s->yfmt)
        words = (size_t)(M * ldy8) / 4;
    uint32_t *want = malloc(words * 4), *got = malloc(words * 4);
    if (s->epi == 1) {
        memcpy(want, acc, words * 4);
    } else if (s->yfmt) { /* the counts' planes as bytes */
        uint32_t *planes = malloc((size_t)(s->yb * M * ldy) * 4);
        rt_cpu_qgemm_planes(A, W, M, N, ld, s->xb, s->wb, s->wsigned, s->bipolar, NULL, t, dir,
                            s->l, s->yb, planes);
        memset(want, 0, words * 4);
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++)
                for (int b = 0; b < s->yb; b++)
                    ((uint8_t *)want)[m * ldy8 + n] |=
                        (uint8_t)(((planes[(m * s->yb + b) * ldy + n / 32] >> (n % 32)) & 1u) << b);
        free(planes);
    } else {
        rt_cpu_qgemm_planes(A, W, M, N, ld, s->xb, s->wb, s->wsigned, s->bipolar, NULL, t, dir,
                            s->l, s->yb, want);
    }
    memset(got, 0xa5, words * 4);
    emu_launch(s->fn, (unsigned)(s->n + 31) / 32, (unsigned)(M + 15) / 16, A, W, M, tk, dir, got);
    size_t bad = 0;
    for (size_t i = 0; i < words; i++)
        bad += got[i] != want[i];
    CHECK_MSG(bad == 0, "%s, M=%d: %zu of %zu words differ", s->name, M, bad, words);
    free(x);
    free(u);
    free(A);
    free(W);
    free(acc);
    if (tk != t)
        free(tk);
    free(t);
    free(dir);
    free(want);
    free(got);
}

int main(void) {
    static const int Ms[] = {1, 16, 37};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++)
        for (size_t m = 0; m < sizeof Ms / sizeof *Ms; m++)
            check_spec(&specs[i], Ms[m]);
    return check_report("test_planes_emu");
}
