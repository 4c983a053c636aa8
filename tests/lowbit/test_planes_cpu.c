/* test_planes_cpu: the runtime's CPU bit-plane GEMM (rt_cpu_qgemm_planes in runtime/rt_cpu.c)
 * against a plain integer GEMM over the codes: random M x N x K (odd sizes, K past word and
 * 256-bit boundaries), 1..8-bit unsigned activations, 1..8-bit signed or unsigned weights and
 * +-1 bipolar weights, int32 output and the multi-level threshold epilogue writing bit-planes. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "rt.h"

static uint32_t rng_state = 12345;
static int rnd(int lo, int hi) { /* inclusive */
    rng_state = rng_state * 1664525u + 1013904223u;
    return lo + (int)((rng_state >> 8) % (uint32_t)(hi - lo + 1));
}

/* Plane b of codes[rows][K] (two's complement bits of the int) into P[rows][ld]. */
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

int main(void) {
    for (int trial = 0; trial < 200; trial++) {
        int64_t M = rnd(1, 9), N = rnd(1, 70), K = rnd(1, 600), ld = (K + 255) / 256 * 8;
        int xb = rnd(1, 8), wb = rnd(1, 8), mode = rnd(0, 2); /* signed, unsigned, bipolar */
        bool wsigned = mode == 0, bipolar = mode == 2;
        if (bipolar)
            wb = 1;
        int *x = malloc((size_t)(M * K) * sizeof *x), *u = malloc((size_t)(N * K) * sizeof *u);
        for (int64_t i = 0; i < M * K; i++)
            x[i] = rnd(0, (1 << xb) - 1);
        for (int64_t i = 0; i < N * K; i++)
            u[i] = bipolar ? (rnd(0, 1) ? 1 : -1)
                   : wsigned ? rnd(-(1 << (wb - 1)), (1 << (wb - 1)) - 1) : rnd(0, (1 << wb) - 1);
        uint32_t *A = malloc((size_t)(xb * M * ld) * 4), *W = malloc((size_t)(wb * N * ld) * 4);
        for (int p = 0; p < xb; p++)
            pack_plane(x, M, K, ld, p, xb, p, A);
        if (bipolar) { /* the plane is u > 0 */
            int *b = malloc((size_t)(N * K) * sizeof *b);
            for (int64_t i = 0; i < N * K; i++)
                b[i] = u[i] > 0;
            pack_plane(b, N, K, ld, 0, 1, 0, W);
            free(b);
        } else {
            for (int q = 0; q < wb; q++)
                pack_plane(u, N, K, ld, q, 1, 0, W + q * N * ld);
        }
        int32_t *acc = malloc((size_t)(M * N) * 4);
        rt_cpu_qgemm_planes(A, W, M, N, ld, xb, wb, wsigned, bipolar, acc, NULL, NULL, 0, 0, NULL);
        int L = rnd(1, 7), yb = 3;
        int32_t *t = malloc((size_t)(N * L) * 4);
        int32_t *dir = malloc((size_t)N * sizeof *dir);
        for (int64_t i = 0; i < N * L; i++)
            t[i] = rnd(-3000, 3000);
        for (int64_t n = 0; n < N; n++)
            dir[n] = rnd(0, 1) ? 1 : -1;
        int64_t ldy = (N + 255) / 256 * 8;
        uint32_t *Y = malloc((size_t)(yb * M * ldy) * 4);
        rt_cpu_qgemm_planes(A, W, M, N, ld, xb, wb, wsigned, bipolar, NULL, t, dir, L, yb, Y);
        int bad = 0;
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                int64_t want = 0;
                for (int64_t k = 0; k < K; k++)
                    want += (int64_t)x[m * K + k] * u[n * K + k];
                bad += acc[m * N + n] != want;
                int count = 0, got = 0;
                for (int l = 0; l < L; l++)
                    count += dir[n] < 0 ? want <= t[n * L + l] : want >= t[n * L + l];
                for (int b = 0; b < yb; b++)
                    got |= (int)((Y[(m * yb + b) * ldy + n / 32] >> (n % 32)) & 1u) << b;
                bad += got != count;
            }
        CHECK_MSG(bad == 0, "trial %d: %dx%dx%d w%d%s a%d: %d mismatches", trial, (int)M, (int)N,
                  (int)K, wb, bipolar ? "(bipolar)" : wsigned ? "(signed)" : "(unsigned)", xb, bad);
        free(x);
        free(u);
        free(A);
        free(W);
        free(acc);
        free(t);
        free(dir);
        free(Y);
    }
    return check_report("test_planes_cpu");
}
