/* test_planes_emu: bgemm_planes.cu run without a GPU. The kernel file is compiled as C with a
 * warp emulator: 32 POSIX threads per block stand for the lanes, the warp primitives
 * (__syncwarp, __ballot_sync, __shfl_xor_sync) meet at a barrier, and mma.sync m16n8k256
 * .and.popc is computed from the lanes' fragments with the register layout HARDWARE.md verified
 * on the hardware. The outputs must equal the runtime's CPU bit-plane GEMM word for word, which
 * checks the kernel's indexing, plane combination and epilogues (not the PTX: see
 * test_planes_nvrtc and, on a GPU, test_planes_gpu). */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "rt.h"

/* ---------------------------------------------------------------- the warp emulator */

typedef struct EmuDim {
    unsigned x, y, z;
} EmuDim;
static _Thread_local EmuDim threadIdx;
static EmuDim blockIdx;
static pthread_barrier_t warp_bar;
static unsigned emu_u[32];
static int emu_i[32];
static unsigned emu_frag[32][6]; /* a0..a3, b0, b1 of each lane */

#define __global__
#define __launch_bounds__(n)
#define __restrict__ restrict
#define __shared__ static
#define BNN_PL_LINKAGE static
#define BNN_PLANES_ONCE /* bnn_pl_mma below instead of the PTX */
#define __popc(x) __builtin_popcount(x)

static void emu_sync(void) { pthread_barrier_wait(&warp_bar); }
#define __syncwarp() emu_sync()

static unsigned __ballot_sync(unsigned mask, int pred) {
    (void)mask;
    emu_u[threadIdx.x] = pred != 0;
    emu_sync();
    unsigned w = 0;
    for (int l = 0; l < 32; l++)
        w |= emu_u[l] << l;
    emu_sync();
    return w;
}

static int __shfl_xor_sync(unsigned mask, int v, int o) {
    (void)mask;
    emu_i[threadIdx.x] = v;
    emu_sync();
    int r = emu_i[threadIdx.x ^ (unsigned)o];
    emu_sync();
    return r;
}

/* D[16][8] += popc(A AND B) over 256 bits. Lane 4g+t holds a0 = A[g][t], a1 = A[g+8][t],
 * a2 = A[g][4+t], a3 = A[g+8][4+t], b0 = B[g][t], b1 = B[g][4+t] (words of the k256 slice) and
 * d0 = D[g][2t], d1 = D[g][2t+1], d2 = D[g+8][2t], d3 = D[g+8][2t+1]. */
static void bnn_pl_mma(int *d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                       unsigned b1) {
    unsigned lane = threadIdx.x;
    unsigned f[6] = {a0, a1, a2, a3, b0, b1};
    memcpy(emu_frag[lane], f, sizeof f);
    emu_sync();
    unsigned A[16][8], B[8][8];
    for (int l = 0; l < 32; l++) {
        int g = l >> 2, t = l & 3;
        A[g][t] = emu_frag[l][0];
        A[g + 8][t] = emu_frag[l][1];
        A[g][4 + t] = emu_frag[l][2];
        A[g + 8][4 + t] = emu_frag[l][3];
        B[g][t] = emu_frag[l][4];
        B[g][4 + t] = emu_frag[l][5];
    }
    emu_sync();
    int g = (int)lane >> 2, t = (int)lane & 3;
    int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
    for (int i = 0; i < 4; i++)
        for (int w = 0; w < 8; w++)
            d[i] += __builtin_popcount(A[rows[i]][w] & B[cols[i]][w]);
}

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

typedef void (*KernelFn)(const unsigned *, const unsigned *, int, const int *, const int *,
                         void *);

typedef struct Spec {
    KernelFn fn;
    const char *name;
    int n, k, xb, wb, wsigned, bipolar, epi, l, yb;
} Spec;

static const Spec specs[] = {
    {emu_w1a2, "w1a2 bipolar, planes out", 64, 784, 2, 1, 1, 1, 2, 3, 2},
    {emu_w2a2, "w2a2, planes out", 70, 300, 2, 2, 1, 0, 2, 3, 2},
    {emu_w3a4_i32, "w3a4, int32", 33, 520, 4, 3, 1, 0, 1, 1, 1},
    {emu_w1s_a3_i32, "signed w1 (0/-1) a3, int32", 9, 3, 3, 1, 1, 0, 1, 1, 1},
    {emu_u2a5, "unsigned w2 a5, planes out", 40, 257, 5, 2, 0, 0, 2, 7, 3},
};

typedef struct Launch {
    KernelFn fn;
    const unsigned *A, *W;
    int M;
    const int *T;
    const int *dir;
    void *Y;
    unsigned lane;
} Launch;

static void *run_lane(void *arg) {
    Launch *l = arg;
    threadIdx.x = l->lane;
    l->fn(l->A, l->W, l->M, l->T, l->dir, l->Y);
    return NULL;
}

/* One launch: grid (ceil(N/32), ceil(M/16)), 32 threads, blocks one after another. */
static void launch(const Spec *s, const unsigned *A, const unsigned *W, int M, const int *T,
                   const int *dir, void *Y) {
    for (unsigned by = 0; by < (unsigned)(M + 15) / 16; by++)
        for (unsigned bx = 0; bx < (unsigned)(s->n + 31) / 32; bx++) {
            blockIdx.x = bx;
            blockIdx.y = by;
            pthread_t th[32];
            Launch ls[32];
            for (unsigned l = 0; l < 32; l++) {
                ls[l] = (Launch){s->fn, A, W, M, T, dir, Y, l};
                pthread_create(&th[l], NULL, run_lane, &ls[l]);
            }
            for (int l = 0; l < 32; l++)
                pthread_join(th[l], NULL);
        }
}

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
    }
    size_t words = s->epi == 1 ? (size_t)(M * N) : (size_t)(s->yb * M * ldy);
    uint32_t *want = malloc(words * 4), *got = malloc(words * 4);
    if (s->epi == 1)
        memcpy(want, acc, words * 4);
    else
        rt_cpu_qgemm_planes(A, W, M, N, ld, s->xb, s->wb, s->wsigned, s->bipolar, NULL, t, dir,
                            s->l, s->yb, want);
    memset(got, 0xa5, words * 4);
    launch(s, A, W, M, t, dir, got);
    size_t bad = 0;
    for (size_t i = 0; i < words; i++)
        bad += got[i] != want[i];
    CHECK_MSG(bad == 0, "%s, M=%d: %zu of %zu words differ", s->name, M, bad, words);
    free(x);
    free(u);
    free(A);
    free(W);
    free(acc);
    free(t);
    free(dir);
    free(want);
    free(got);
}

int main(void) {
    pthread_barrier_init(&warp_bar, NULL, 32);
    static const int Ms[] = {1, 16, 37};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++)
        for (size_t m = 0; m < sizeof Ms / sizeof *Ms; m++)
            check_spec(&specs[i], Ms[m]);
    pthread_barrier_destroy(&warp_bar);
    return check_report("test_planes_emu");
}
