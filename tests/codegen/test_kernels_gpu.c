/* test_kernels_gpu.c: runs NVRTC-compiled bgemm / bconv kernels on the GPU through the driver
 * API (libcuda.so.1 opened with dlopen, as the runtime does) and compares every output word
 * with a plain C reference computed from the unpacked +-1 values: exact for ints and bits,
 * bit-identical for the f32 epilogue (the kernel rounds the product, then the sum, as C does
 * here). Outputs are poisoned before each run; the padding columns of a row and a guard
 * region after the output must stay poisoned, and padding words of bit rows must be zero.
 * Exit 77 (skipped) without a driver or a GPU. Prints a table: shape, variant, ok, time.
 * `test_kernels_gpu --bench` also times bgemm at 8192^3 (checking sampled rows exactly);
 * `--compile-only` compiles every case for sm_90a without a driver (a dry run). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "ir.h"
#include "kernels.h"
#include "kernsrc.h"
#include "nvrtc.h"
#include "util.h"

#include "cudrv.h"

/* ---------------------------------------------------------------- helpers */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static float rndf(float lo, float hi) { return lo + (hi - lo) * (float)((rnd() >> 40) * (1.0 / 16777216.0)); }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fill_bits(uint8_t *x, size_t n) {
    for (size_t i = 0; i < n; i += 64) {
        uint64_t v = rnd();
        for (size_t j = 0; j < 64 && i + j < n; j++)
            x[i + j] = (uint8_t)((v >> j) & 1);
    }
}

static CUdeviceptr dalloc(size_t n) {
    CUdeviceptr p;
    CU(cu.MemAlloc(&p, n ? n : 4));
    return p;
}
static CUdeviceptr dupload(const void *h, size_t n) {
    CUdeviceptr p = dalloc(n);
    CU(cu.MemcpyHtoD(p, h, n));
    return p;
}

typedef struct Kern {
    CUmodule mod;
    CUfunction fn, row_popc, wprefix;
    int threads, smem;
    double compile_s;
} Kern;

static const char *arch_name;
static bool compile_only; /* --compile-only: no driver needed, compile every case and stop */

/* Compile `src` with NVRTC for the GPU's architecture and load kernel `name` from it. */
static bool load_kernel(Kern *k, const char *src, const char *name, const Tile *t) {
    double t0 = now_s();
    NvrtcOutput out;
    if (nvrtc_compile("test_kernel.cu", src, arch_name, NULL, 0, false, &out) != 0) {
        fprintf(stderr, "NVRTC failed for %s:\n%s\n", name, diag_message());
        return false;
    }
    k->compile_s = now_s() - t0;
    if (compile_only) {
        nvrtc_output_free(&out);
        return false;
    }
    CU(cu.ModuleLoadData(&k->mod, out.cubin));
    nvrtc_output_free(&out);
    CU(cu.ModuleGetFunction(&k->fn, k->mod, name));
    CU(cu.ModuleGetFunction(&k->row_popc, k->mod, "bnn_row_popc"));
    CU(cu.ModuleGetFunction(&k->wprefix, k->mod, "bnn_conv_wprefix"));
    k->threads = bnn_tile_threads(t->wm, t->wn);
    k->smem = bnn_tile_smem(t->bm, t->bn, t->kc, t->stages);
    CU(cu.FuncSetAttribute(k->fn, CU_FUNC_MAX_DYNAMIC_SMEM, k->smem));
    return true;
}

static void launch(CUfunction f, unsigned gx, unsigned gy, unsigned threads, unsigned smem, void **args) {
    CU(cu.LaunchKernel(f, gx, gy, 1, threads, 1, 1, smem, NULL, args, NULL));
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* Median milliseconds of `reps` launches. Warm-up: launches for at least 30 ms of wall time
 * (the GPU leaves its idle clock), then the timed launches go back to back, each between its
 * own pair of events, with one synchronization at the end: no host gap between kernels. */
static double time_ms(CUfunction f, unsigned gx, unsigned gy, unsigned threads, unsigned smem, void **args,
                      int reps) {
    double t0 = now_s();
    do {
        for (int i = 0; i < 16; i++)
            launch(f, gx, gy, threads, smem, args);
        CU(cu.CtxSynchronize());
    } while (now_s() - t0 < 0.03);
    CUevent *ev = xcalloc(2 * (size_t)reps, sizeof *ev);
    for (int i = 0; i < 2 * reps; i++)
        CU(cu.EventCreate(&ev[i], 0));
    for (int i = 0; i < reps; i++) {
        CU(cu.EventRecord(ev[2 * i], NULL));
        launch(f, gx, gy, threads, smem, args);
        CU(cu.EventRecord(ev[2 * i + 1], NULL));
    }
    CU(cu.EventSynchronize(ev[2 * reps - 1]));
    float *v = xcalloc((size_t)reps, sizeof *v);
    for (int i = 0; i < reps; i++)
        CU(cu.EventElapsedTime(&v[i], ev[2 * i], ev[2 * i + 1]));
    qsort(v, (size_t)reps, sizeof *v, cmp_float);
    double med = v[reps / 2];
    free(v);
    for (int i = 0; i < 2 * reps; i++)
        CU(cu.EventDestroy(ev[i]));
    free(ev);
    return med;
}

/* ---------------------------------------------------------------- results table */

typedef struct Row {
    char shape[64], variant[112];
    bool ok;
    double ms, tops, compile_s;
} Row;
static Row table[256];
static int ntable;

static void record(const char *shape, const char *variant, bool ok, double ms, double ops, double compile_s) {
    if (ntable == (int)(sizeof table / sizeof *table))
        return;
    Row *r = &table[ntable++];
    snprintf(r->shape, sizeof r->shape, "%s", shape);
    snprintf(r->variant, sizeof r->variant, "%s", variant);
    r->ok = ok;
    r->ms = ms;
    r->tops = ms > 0 ? ops / (ms * 1e-3) / 1e12 : 0;
    r->compile_s = compile_s;
}

static const char *epi_name(int epi) {
    return epi == BNN_EPI_I32 ? "i32" : epi == BNN_EPI_THRESHOLD ? "thresh" : "affine";
}

/* ---------------------------------------------------------------- output check */

#define POISON8 0xAB
#define POISON32 0xABABABABu
#define GUARD_BYTES 4096

/* The epilogue parameters and the expected output of one row from its int dots. */
typedef struct Epi {
    int kind, n, ldy;
    int *thr, *dir;
    float *scale, *bias;
} Epi;

static void epi_make(Epi *e, int kind, int n, int ldy, const int *dots, int rows) {
    e->kind = kind;
    e->n = n;
    e->ldy = ldy;
    e->thr = xcalloc((size_t)n, sizeof(int));
    e->dir = xcalloc((size_t)n, sizeof(int));
    e->scale = xcalloc((size_t)n, sizeof(float));
    e->bias = xcalloc((size_t)n, sizeof(float));
    for (int j = 0; j < n; j++) {
        /* Thresholds on real dot values (and next to them) test the >= / <= edges exactly. */
        int pick = dots ? dots[(size_t)(rnd() % (uint64_t)rows) * (size_t)n + (size_t)j] : 0;
        int r = (int)(rnd() % 8);
        /* r 2: the folding pass's constant channel, t = INT32_MIN (dir -1: always 0) */
        e->thr[j] = r == 0 ? -1000000 : r == 1 ? 1000000 : r == 2 ? INT32_MIN : pick + (int)(rnd() % 3) - 1;
        e->dir[j] = rnd() & 1 ? 1 : -1;
        e->scale[j] = rndf(-0.05f, 0.05f);
        e->bias[j] = rndf(-3.0f, 3.0f);
    }
}

static void epi_free(Epi *e) {
    free(e->thr);
    free(e->dir);
    free(e->scale);
    free(e->bias);
}

/* Expected 32-bit word `j` of an output row from the row's dots (n of them). */
static uint32_t expect_word(const Epi *e, const int *dot, int j, bool *poison) {
    *poison = false;
    if (e->kind == BNN_EPI_THRESHOLD) {
        uint32_t w = 0;
        for (int b = 0; b < 32; b++) {
            int c = 32 * j + b;
            if (c >= e->n)
                break;
            bool on = e->dir[c] >= 0 ? dot[c] >= e->thr[c] : dot[c] <= e->thr[c];
            w |= (uint32_t)on << b;
        }
        return w;
    }
    if (j >= e->n) {
        *poison = true;
        return POISON32;
    }
    if (e->kind == BNN_EPI_I32)
        return (uint32_t)dot[j];
    volatile float p = (float)dot[j] * e->scale[j]; /* rounded, as __fmul_rn */
    float y = p + e->bias[j];
    uint32_t u;
    memcpy(&u, &y, 4);
    return u;
}

/* Compare rows `rows` (all when NULL: 0..M-1) of Y[M][ldy] with the expectation and the guard
 * region (everything past M*ldy words). dot_of(m) gives the reference dots of row m. */
typedef const int *(*DotFn)(void *ctx, int m);
static size_t check_output(const uint32_t *y, size_t ywords, int M, const Epi *e, const int *rows, int nrows,
                           DotFn dot_of, void *ctx, const char *what) {
    size_t bad = 0;
    int count = rows ? nrows : M;
    for (int i = 0; i < count; i++) {
        int m = rows ? rows[i] : i;
        const int *dot = dot_of(ctx, m);
        for (int j = 0; j < e->ldy; j++) {
            bool poison;
            uint32_t want = expect_word(e, dot, j, &poison), got = y[(size_t)m * (size_t)e->ldy + (size_t)j];
            if (got != want) {
                if (bad < 5)
                    fprintf(stderr, "%s: row %d word %d: got 0x%08x, want 0x%08x%s\n", what, m, j, got, want,
                            poison ? " (padding must stay untouched)" : "");
                bad++;
            }
        }
    }
    for (size_t i = (size_t)M * (size_t)e->ldy; i < ywords; i++)
        if (y[i] != POISON32) {
            if (bad < 5)
                fprintf(stderr, "%s: guard word %zu written: 0x%08x\n", what, i - (size_t)M * (size_t)e->ldy, y[i]);
            bad++;
        }
    return bad;
}

/* ---------------------------------------------------------------- bgemm */

typedef struct GemmCtx {
    int N, K, lda, ldw;
    const uint32_t *a, *w; /* packed by pack_rows (zero padded) */
    int *row;              /* scratch: dots of one row */
    const int *all;        /* precomputed dots [M][N] or NULL */
} GemmCtx;

/* The XOR form on the host, K - 2*popc(a XOR w): another formula than the kernel's AND one. */
static const int *gemm_dots(void *vctx, int m) {
    GemmCtx *g = vctx;
    if (g->all)
        return g->all + (size_t)m * (size_t)g->N;
    const uint32_t *a = g->a + (size_t)m * (size_t)g->lda;
    int nw = kdiv_up(g->K, 32);
    for (int n = 0; n < g->N; n++) {
        const uint32_t *w = g->w + (size_t)n * (size_t)g->ldw;
        int d = 0;
        for (int i = 0; i < nw; i++)
            d += __builtin_popcount(a[i] ^ w[i]);
        g->row[n] = g->K - 2 * d;
    }
    return g->row;
}

static void pack_rows(uint32_t *dst, const uint8_t *bits, int rows, int k, int ld) {
    memset(dst, 0, (size_t)rows * (size_t)ld * 4);
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < k; i++)
            if (bits[(size_t)r * (size_t)k + (size_t)i])
                dst[(size_t)r * (size_t)ld + (size_t)(i / 32)] |= 1u << (i % 32);
}

/* Runs spec s at batch M (and, when M is a run-time argument, again at a smaller batch on the
 * same buffers). `full` checks every row; otherwise 64 sampled rows plus the first and last. */
static void test_bgemm(int M, BgemmSpec s, bool full, int reps) {
    bgemm_resolve(&s);
    const int N = s.N, K = s.K;
    char shape[64], variant[64];
    snprintf(shape, sizeof shape, "gemm %dx%dx%d", M, N, K);
    snprintf(variant, sizeof variant, "%s %dx%d w%dx%d kc%d s%d%s%s", epi_name(s.epi), s.tile.bm, s.tile.bn, s.tile.wm,
             s.tile.wn, s.tile.kc, s.tile.stages, s.M ? " M=const" : "",
             s.ldy != (s.epi == BNN_EPI_THRESHOLD ? kdiv_up(N, 32) : N) ? " ldy-pad" : "");
    Buf src = {0};
    buf_put(&src, bnn_common_cu, bnn_common_cu_len);
    bgemm_append(&src, "bgemm_t", &s);
    Kern k = {0};
    bool ok = load_kernel(&k, src.data, "bgemm_t", &s.tile);
    buf_free(&src);
    if (!ok && compile_only) {
        CHECK_MSG(k.compile_s > 0, "%s %s: compile", shape, variant);
        record(shape, variant, k.compile_s > 0, 0, 0, k.compile_s);
        return;
    }
    if (!ok) {
        CHECK_MSG(false, "%s %s: compile", shape, variant);
        record(shape, variant, false, 0, 0, 0);
        return;
    }
    uint8_t *a = xmalloc((size_t)M * (size_t)K), *w = xmalloc((size_t)N * (size_t)K);
    fill_bits(a, (size_t)M * (size_t)K);
    fill_bits(w, (size_t)N * (size_t)K);
    uint32_t *pa = xmalloc((size_t)M * (size_t)s.lda * 4), *pw = xmalloc((size_t)N * (size_t)s.ldw * 4);
    pack_rows(pa, a, M, K, s.lda);
    pack_rows(pw, w, N, K, s.ldw);
    free(a); /* the packed rows are the reference's input from here on */
    free(w);
    GemmCtx g = {N, K, s.lda, s.ldw, pa, pw, xcalloc((size_t)N, sizeof(int)), NULL};
    int *all = NULL;
    if (full) {
        all = xmalloc((size_t)M * (size_t)N * sizeof(int));
        for (int m = 0; m < M; m++)
            memcpy(all + (size_t)m * (size_t)N, gemm_dots(&g, m), (size_t)N * sizeof(int));
        g.all = all;
    }
    int sample[66], nsample = 0;
    if (!full) {
        sample[nsample++] = 0;
        sample[nsample++] = M - 1;
        while (nsample < 66)
            sample[nsample++] = (int)(rnd() % (uint64_t)M);
    }
    Epi e;
    epi_make(&e, s.epi, N, s.ldy, all, M);

    CUdeviceptr dA = dupload(pa, (size_t)M * (size_t)s.lda * 4), dW = dupload(pw, (size_t)N * (size_t)s.ldw * 4);
    CUdeviceptr dpop = dalloc((size_t)N * 4);
    CUdeviceptr dp0 = 0, dp1 = 0;
    if (s.epi == BNN_EPI_THRESHOLD) {
        dp0 = dupload(e.thr, (size_t)N * 4);
        dp1 = dupload(e.dir, (size_t)N * 4);
    } else if (s.epi == BNN_EPI_AFFINE) {
        dp0 = dupload(e.scale, (size_t)N * 4);
        dp1 = dupload(e.bias, (size_t)N * 4);
    }
    size_t ywords = (size_t)M * (size_t)s.ldy + GUARD_BYTES / 4;
    CUdeviceptr dY = dalloc(ywords * 4);
    uint32_t *y = xmalloc(ywords * 4);

    /* popc(w) per output channel by the prep kernel. */
    CU(cu.MemsetD8(dpop, POISON8, (size_t)N * 4));
    int rows = N, ld = s.ldw;
    void *pargs[] = {&dW, &rows, &ld, &dpop};
    launch(k.row_popc, (unsigned)kdiv_up(N * 32, 256), 1, 256, 0, pargs);

    int mruns[2] = {M, s.M ? 0 : (M > 3 ? M / 3 : 0)};
    bool all_ok = true;
    double ms = 0;
    for (int run = 0; run < 2 && mruns[run] > 0; run++) {
        int mr = mruns[run];
        CU(cu.MemsetD8(dY, POISON8, ywords * 4));
        void *args[] = {&dA, &dW, &dpop, &dp0, &dp1, &dY, &mr};
        unsigned gx = (unsigned)kdiv_up(N, s.tile.bn), gy = (unsigned)kdiv_up(mr, s.tile.bm);
        launch(k.fn, gx, gy, (unsigned)k.threads, (unsigned)k.smem, args);
        CU(cu.CtxSynchronize());
        CU(cu.MemcpyDtoH(y, dY, ywords * 4));
        /* Rows past mr belong to the guard region in the second run. */
        int *rowsel = full ? NULL : sample;
        int nsel = nsample;
        if (!full)
            for (int i = 0; i < nsel; i++)
                sample[i] = sample[i] % mr;
        size_t bad = check_output(y, ywords, mr, &e, rowsel, nsel, gemm_dots, &g, shape);
        CHECK_MSG(bad == 0, "%s %s M=%d: %zu wrong words", shape, variant, mr, bad);
        all_ok &= bad == 0;
        if (run == 0 && reps > 0)
            ms = time_ms(k.fn, gx, gy, (unsigned)k.threads, (unsigned)k.smem, args, reps);
    }
    record(shape, variant, all_ok, ms, 2.0 * M * N * (double)K, k.compile_s);
    CU(cu.MemFree(dA));
    CU(cu.MemFree(dW));
    CU(cu.MemFree(dpop));
    if (dp0) {
        CU(cu.MemFree(dp0));
        CU(cu.MemFree(dp1));
    }
    CU(cu.MemFree(dY));
    CU(cu.ModuleUnload(k.mod));
    epi_free(&e);
    free(y);
    free(all);
    free(g.row);
    free(pa);
    free(pw);
}

/* ---------------------------------------------------------------- bconv */

typedef struct ConvCtx {
    const BconvSpec *s;
    int OH, OW;
    const uint8_t *x, *w; /* x[nb][H][W][C], w[O][KH][KW][C] as 0/1 */
    int *row;
} ConvCtx;

/* Reference dots of output pixel m over all O channels, from the definition: a tap inside the
 * image multiplies, a zero-padded tap adds 0, a one-padded tap multiplies by +1. */
static const int *conv_dots(void *vctx, int m) {
    ConvCtx *cx = vctx;
    const BconvSpec *s = cx->s;
    int n = m / (cx->OH * cx->OW), p = m % (cx->OH * cx->OW), oh = p / cx->OW, ow = p % cx->OW;
    for (int o = 0; o < s->O; o++) {
        int acc = 0;
        for (int kh = 0; kh < s->KH; kh++)
            for (int kw = 0; kw < s->KW; kw++) {
                int ih = oh * s->SH - s->PT + kh * s->DH, iw = ow * s->SW - s->PL + kw * s->DW;
                const uint8_t *wt = cx->w + (((size_t)o * (size_t)s->KH + (size_t)kh) * (size_t)s->KW + (size_t)kw) *
                                                (size_t)s->C;
                if (ih >= 0 && ih < s->H && iw >= 0 && iw < s->W) {
                    const uint8_t *xt =
                        cx->x + (((size_t)n * (size_t)s->H + (size_t)ih) * (size_t)s->W + (size_t)iw) * (size_t)s->C;
                    int eq = 0;
                    for (int c = 0; c < s->C; c++)
                        eq += xt[c] == wt[c];
                    acc += 2 * eq - s->C;
                } else if (s->pad_one) {
                    int ones = 0;
                    for (int c = 0; c < s->C; c++)
                        ones += wt[c];
                    acc += 2 * ones - s->C;
                }
            }
        cx->row[o] = acc;
    }
    return cx->row;
}

/* Fused 2x2 / 2 max pool (floor mode): output row (n, ph, pw), word j = OR of the expected
 * words of output pixels (2ph+dy, 2pw+dx); all[] holds the dots of every pixel in NHW order. */
/* With all = NULL: only the pooled rows sample[0..65] (taken modulo their count), dots from
 * conv_dots(cx). */
static size_t check_pooled(const uint32_t *y, size_t ywords, int nb, int OH, int OW, const Epi *e, const int *all,
                           const int *sample, void *cx, const char *what) {
    const int PH = OH / 2, PW = OW / 2;
    size_t bad = 0, mo = (size_t)nb * (size_t)PH * (size_t)PW;
    int *dots = xcalloc(4 * (size_t)e->n, sizeof(int));
    for (size_t i = 0; i < (sample ? 66 : mo); i++) {
        size_t r = sample ? (size_t)sample[i] % mo : i;
        int n = (int)(r / ((size_t)PH * (size_t)PW)), ph = (int)(r / (size_t)PW % (size_t)PH), pw = (int)(r % (size_t)PW);
        {
            {
                const int *d4[4];
                for (int q = 0; q < 4; q++) {
                    size_t m = ((size_t)n * (size_t)OH + (size_t)(2 * ph + q / 2)) * (size_t)OW + (size_t)(2 * pw + q % 2);
                    if (all)
                        d4[q] = all + m * (size_t)e->n;
                    else {
                        memcpy(dots + (size_t)q * (size_t)e->n, conv_dots(cx, (int)m), (size_t)e->n * sizeof(int));
                        d4[q] = dots + (size_t)q * (size_t)e->n;
                    }
                }
                for (int j = 0; j < e->ldy; j++) {
                    uint32_t want = 0;
                    bool poison;
                    for (int q = 0; q < 4; q++)
                        want |= expect_word(e, d4[q], j, &poison);
                    uint32_t got = y[r * (size_t)e->ldy + (size_t)j];
                    if (got != want) {
                        if (bad < 5)
                            fprintf(stderr, "%s: pooled row %zu word %d: got 0x%08x, want 0x%08x\n", what, r, j, got,
                                    want);
                        bad++;
                    }
                }
            }
        }
    }
    free(dots);
    for (size_t i = mo * (size_t)e->ldy; i < ywords; i++)
        if (y[i] != POISON32) {
            if (bad < 5)
                fprintf(stderr, "%s: guard word %zu written: 0x%08x\n", what, i - mo * (size_t)e->ldy, y[i]);
            bad++;
        }
    return bad;
}

static double last_conv_ms; /* of the last test_bconv, for the bench table */
static bool last_conv_ok;

/* `full` checks every output pixel; otherwise 64 sampled pixels plus the first and last.
 * With s.pool every output is checked (full is implied). */
static void test_bconv(int nb, BconvSpec s, bool full, int reps) {
    bconv_resolve(&s);
    const int OH = bconv_oh(&s), OW = bconv_ow(&s), O = s.O, C = s.C;
    /* M: output pixels (GEMM rows); MO: output rows (pooled windows with s.pool). */
    const int M = nb * OH * OW, MO = s.pool ? nb * (OH / 2) * (OW / 2) : M, MG = s.pool ? 4 * MO : M;
    char shape[64], variant[112];
    snprintf(shape, sizeof shape, "conv n%d %dx%dx%d->%d k%dx%d", nb, s.H, s.W, C, O, s.KH, s.KW);
    char tilestr[48];
    if (s.th)
        snprintf(tilestr, sizeof tilestr, "halo %dx%d bn%d w%d%s", s.th, s.tw, s.tile.bn, s.tile.wm,
                 s.gy ? " loop" : "");
    else
        snprintf(tilestr, sizeof tilestr, "%dx%d%s", s.tile.bm, s.tile.bn, s.gy ? " loop" : "");
    snprintf(variant, sizeof variant, "%s s%d p%d%s%s d%d %s %s%s%s", epi_name(s.epi), s.SH, s.PT,
             s.PB != s.PT ? "/" : "", s.PB != s.PT ? (s.PB ? "1" : "0") : "", s.DH, s.pad_one ? "one" : "zero",
             tilestr, s.nb ? " nb=const" : "", s.pool ? " pool" : "");
    Buf src = {0};
    buf_put(&src, bnn_common_cu, bnn_common_cu_len);
    bconv_append(&src, "bconv_t", &s);
    Kern k = {0};
    bool ok;
    static char *cached_src; /* the last kernel stays loaded: the bench runs it at several batches */
    static Kern cached;
    if (cached_src && !compile_only && strcmp(cached_src, src.data) == 0) {
        k = cached;
        k.compile_s = 0;
        ok = true;
    } else {
        if (cached_src) {
            CU(cu.ModuleUnload(cached.mod));
            free(cached_src);
            cached_src = NULL;
        }
        ok = load_kernel(&k, src.data, "bconv_t", &s.tile);
        if (ok) {
            cached_src = xstrdup(src.data);
            cached = k;
        }
    }
    buf_free(&src);
    if (!ok && compile_only) {
        CHECK_MSG(k.compile_s > 0, "%s %s: compile", shape, variant);
        record(shape, variant, k.compile_s > 0, 0, 0, k.compile_s);
        return;
    }
    if (!ok) {
        CHECK_MSG(false, "%s %s: compile", shape, variant);
        record(shape, variant, false, 0, 0, 0);
        return;
    }
    if (s.th) { /* the halo kernel's own shared memory */
        k.smem = bnn_halo_smem(C, s.KH, s.KW, s.SH, s.SW, s.DH, s.DW, s.th, s.tw, s.tile.bn, s.pool, s.tile.wm,
                               bconv_corr_classes(&s));
        CU(cu.FuncSetAttribute(k.fn, CU_FUNC_MAX_DYNAMIC_SMEM, k.smem));
        cached.smem = k.smem;
    }
    size_t npix = (size_t)nb * (size_t)s.H * (size_t)s.W, ntap = (size_t)s.KH * (size_t)s.KW;
    uint8_t *x = xmalloc(npix * (size_t)C), *w = xmalloc((size_t)O * ntap * (size_t)C);
    fill_bits(x, npix * (size_t)C);
    fill_bits(w, (size_t)O * ntap * (size_t)C);
    uint32_t *px = xcalloc(npix * (size_t)s.cwp, 4), *pw = xcalloc((size_t)O * (size_t)s.ldw, 4);
    for (size_t p = 0; p < npix; p++)
        for (int c = 0; c < C; c++)
            if (x[p * (size_t)C + (size_t)c])
                px[p * (size_t)s.cwp + (size_t)(c / 32)] |= 1u << (c % 32);
    for (int o = 0; o < O; o++)
        for (size_t t = 0; t < ntap; t++)
            for (int c = 0; c < C; c++)
                if (w[((size_t)o * ntap + t) * (size_t)C + (size_t)c])
                    pw[(size_t)o * (size_t)s.ldw + t * (size_t)s.cwp + (size_t)(c / 32)] |= 1u << (c % 32);
    ConvCtx cx = {&s, OH, OW, x, w, xcalloc((size_t)O, sizeof(int))};
    int *all = NULL;
    if (full) {
        all = xmalloc((size_t)M * (size_t)O * sizeof(int));
        for (int m = 0; m < M; m++)
            memcpy(all + (size_t)m * (size_t)O, conv_dots(&cx, m), (size_t)O * sizeof(int));
    }
    GemmCtx g = {O, 0, 0, 0, NULL, NULL, NULL, all}; /* dots by row from the table */
    int sample[66];
    for (int i = 0; i < 66; i++)
        sample[i] = i == 0 ? 0 : i == 1 ? M - 1 : (int)(rnd() % (uint64_t)M);
    Epi e;
    epi_make(&e, s.epi, O, s.ldy, all, M);

    CUdeviceptr dX = dupload(px, npix * (size_t)s.cwp * 4), dW = dupload(pw, (size_t)O * (size_t)s.ldw * 4);
    size_t ptab = (size_t)(s.KH + 1) * (size_t)(s.KW + 1) * (size_t)O;
    CUdeviceptr dP = dalloc(ptab * 4);
    CUdeviceptr dp0 = 0, dp1 = 0;
    if (s.epi == BNN_EPI_THRESHOLD) {
        dp0 = dupload(e.thr, (size_t)O * 4);
        dp1 = dupload(e.dir, (size_t)O * 4);
    } else if (s.epi == BNN_EPI_AFFINE) {
        dp0 = dupload(e.scale, (size_t)O * 4);
        dp1 = dupload(e.bias, (size_t)O * 4);
    }
    size_t ywords = (size_t)MO * (size_t)s.ldy + GUARD_BYTES / 4;
    CUdeviceptr dY = dalloc(ywords * 4);
    uint32_t *y = xmalloc(ywords * 4);

    CU(cu.MemsetD8(dP, POISON8, ptab * 4));
    int kh = s.KH, kw = s.KW, cwp = s.cwp, ldw = s.ldw;
    int o_ = O;
    void *wargs[] = {&dW, &o_, &kh, &kw, &cwp, &ldw, &dP};
    launch(k.wprefix, (unsigned)kdiv_up((int)ptab, 128), 1, 128, 0, wargs);

    /* The halo kernel's P: its column blocks' tables (kernels.h bnn_halo_tables, as lower.c builds
     * them), from the prefix table the prep kernel wrote, with the thresholds where the threshold
     * takes the bit epilogue (no pool). */
    CUdeviceptr dT = 0;
    if (s.th) {
        int *pre = xmalloc(ptab * 4);
        size_t ntab = (size_t)kdiv_up(O, s.tile.bn) * (size_t)(bconv_corr_classes(&s) + 1) * (size_t)s.tile.bn;
        int *tab = xmalloc(ntab * 4);
        CU(cu.CtxSynchronize());
        CU(cu.MemcpyDtoH(pre, dP, ptab * 4));
        bool own_bits = s.epi == BNN_EPI_THRESHOLD && !s.pool;
        bnn_halo_tables(C, s.H, s.W, O, s.KH, s.KW, s.SH, s.SW, s.PT, s.PL, s.DH, s.DW, OH, OW, s.pad_one, s.tile.bn,
                        pre, own_bits ? e.thr : NULL, own_bits ? e.dir : NULL, 0, tab);
        dT = dupload(tab, ntab * 4);
        free(pre);
        free(tab);
    }
    CU(cu.MemsetD8(dY, POISON8, ywords * 4));
    int nbr = nb;
    void *args[] = {&dX, &dW, s.th ? &dT : &dP, &dp0, &dp1, &dY, &nbr};
    unsigned gx = (unsigned)kdiv_up(O, s.tile.bn), gy = (unsigned)kdiv_up(MG, s.tile.bm);
    if (s.th) { /* the runtime's grid (lower.c), or the test's smaller one */
        int ohe = s.pool ? OH / 2 * 2 : OH, owe = s.pool ? OW / 2 * 2 : OW;
        int tiles = kdiv_up(ohe, s.th) * kdiv_up(owe, s.tw);
        unsigned base, div;
        bnn_halo_grid(tiles, kdiv_up(O, s.tile.bn), &base, &div);
        div = (unsigned)(s.tile.wm * (s.tpw ? s.tpw : 4)); /* tiles per block: tpw for each warp */
        gy = s.gy ? (unsigned)s.gy : base + ((unsigned)(nb * tiles) + div - 1) / div;
    } else if (s.gy) { /* the direct kernel on fewer blocks than row tiles: each walks several */
        gy = (unsigned)s.gy;
    }
    launch(k.fn, gx, gy, (unsigned)k.threads, (unsigned)k.smem, args);
    CU(cu.CtxSynchronize());
    CU(cu.MemcpyDtoH(y, dY, ywords * 4));
    size_t bad = s.pool ? check_pooled(y, ywords, nb, OH, OW, &e, all, full ? NULL : sample, &cx, shape)
                 : full ? check_output(y, ywords, M, &e, NULL, 0, gemm_dots, &g, shape)
                        : check_output(y, ywords, M, &e, sample, 66, conv_dots, &cx, shape);
    CHECK_MSG(bad == 0, "%s %s: %zu wrong words", shape, variant, bad);
    double ms = reps > 0 ? time_ms(k.fn, gx, gy, (unsigned)k.threads, (unsigned)k.smem, args, reps) : 0;
    record(shape, variant, bad == 0, ms, 2.0 * MG * O * (double)C * (double)ntap, k.compile_s);
    last_conv_ms = ms;
    last_conv_ok = bad == 0;

    CU(cu.MemFree(dX));
    CU(cu.MemFree(dW));
    CU(cu.MemFree(dP));
    if (dT)
        CU(cu.MemFree(dT));
    if (dp0) {
        CU(cu.MemFree(dp0));
        CU(cu.MemFree(dp1));
    }
    CU(cu.MemFree(dY));
    /* k stays loaded (cached above) */
    epi_free(&e);
    free(y);
    free(all);
    free(cx.row);
    free(px);
    free(pw);
    free(x);
    free(w);
}

/* ---------------------------------------------------------------- bconv bench */

static bool bconv_bench; /* --bconv-bench: the layers of binary ResNet-18 and VGG-small */
static bool halo_only;   /* --halo-only: only the halo-kernel cases (for compute-sanitizer) */

/* Each layer at batch 1, 8 and 256: the implicit-GEMM kernel with lower.c's old tile (128x64),
 * and the halo-tile kernel with the tile bnn_halo_choose picks (what lower.c emits) and with
 * fixed ones.
 * Threshold epilogue, activations and outputs in the compiler's format (words per pixel:
 * ceil(C/256)*8), random inputs; every run checks 66 output rows (pooled rows with a pool)
 * against the reference. Times: median of 20 device-event-timed launches after warm-up. */
static void run_bconv_bench(void) {
    struct {
        const char *name;
        int C, HW, O, K, S, P, pool;
    } L[] = {
        {"r18 56x56 64-64 3x3", 64, 56, 64, 3, 1, 1, 0},
        {"r18 56>28 64-128 3x3/2", 64, 56, 128, 3, 2, 1, 0},
        {"r18 56>28 64-128 1x1/2", 64, 56, 128, 1, 2, 0, 0},
        {"r18 28x28 128-128 3x3", 128, 28, 128, 3, 1, 1, 0},
        {"r18 28>14 128-256 3x3/2", 128, 28, 256, 3, 2, 1, 0},
        {"r18 28>14 128-256 1x1/2", 128, 28, 256, 1, 2, 0, 0},
        {"r18 14x14 256-256 3x3", 256, 14, 256, 3, 1, 1, 0},
        {"r18 14>7 256-512 3x3/2", 256, 14, 512, 3, 2, 1, 0},
        {"r18 14>7 256-512 1x1/2", 256, 14, 512, 1, 2, 0, 0},
        {"r18 7x7 512-512 3x3", 512, 7, 512, 3, 1, 1, 0},
        {"vgg 32x32 128-128 +pool", 128, 32, 128, 3, 1, 1, 1},
        {"vgg 16x16 128-256", 128, 16, 256, 3, 1, 1, 0},
        {"vgg 16x16 256-256 +pool", 256, 16, 256, 3, 1, 1, 1},
        {"vgg 8x8 256-512", 256, 8, 512, 3, 1, 1, 0},
        {"vgg 8x8 512-512 +pool", 512, 8, 512, 3, 1, 1, 1},
    };
    static const int batches[3] = {1, 8, 256};
    /* variants after "old": the halo kernel with the tile bnn_halo_choose picks (th 0), or with
     * th x tw pixels x bn channels a warp, nw warps a block, BC_MINB minb, tpw tiles a warp */
    static const struct {
        const char *name;
        int th, tw, bn, nw, minb, tpw;
    } var[] = {
        {"auto", 0, 0, 0, 0, 0, 0},         {"4x8/64/4", 4, 8, 64, 4, 3, 4}, {"4x4/64/4", 4, 4, 64, 4, 4, 4},
        {"4x8/64/8", 4, 8, 64, 8, 2, 4},    {"4x8/32/4", 4, 8, 32, 4, 4, 4}, {"4x4/32/8", 4, 4, 32, 8, 3, 4},
    };
    enum { NV = 1 + sizeof var / sizeof *var };
    struct {
        double ms[NV];
        bool ok;
    } res[15][3];
    memset(res, 0, sizeof res);
    for (size_t l = 0; l < sizeof L / sizeof *L; l++) {
        BconvSpec base = {.C = L[l].C, .H = L[l].HW, .W = L[l].HW, .O = L[l].O, .KH = L[l].K, .KW = L[l].K,
                          .SH = L[l].S, .SW = L[l].S, .PT = L[l].P, .PL = L[l].P, .PB = L[l].P, .PR = L[l].P,
                          .pool = L[l].pool != 0, .epi = BNN_EPI_THRESHOLD, .cwp = kdiv_up(L[l].C, 256) * 8,
                          .ldy = kdiv_up(L[l].O, 256) * 8};
        bconv_resolve(&base);
        for (int b = 0; b < 3; b++)
            res[l][b].ok = true;
        for (int v = 0; v < NV; v++)
            for (int b = 0; b < 3; b++) {
                BconvSpec s = base;
                res[l][b].ms[v] = -1;
                if (v > 0 && var[v - 1].th == 0 && !bconv_halo_auto(&s))
                    continue;
                if (v > 0 && var[v - 1].th > 0) {
                    s.th = var[v - 1].th;
                    s.tw = var[v - 1].tw;
                    s.minb = var[v - 1].minb;
                    s.tpw = var[v - 1].tpw;
                    s.tile = (Tile){s.th * s.tw, var[v - 1].bn, var[v - 1].nw, 1, 8, 2};
                    if (bnn_halo_smem(s.C, s.KH, s.KW, s.SH, s.SW, s.DH, s.DW, s.th, s.tw, s.tile.bn, s.pool,
                                      s.tile.wm, bconv_corr_classes(&s)) > BNN_HALO_SMEM_MAX)
                        continue;
                }
                test_bconv(batches[b], s, false, 20);
                res[l][b].ms[v] = last_conv_ok ? last_conv_ms : -1;
                res[l][b].ok &= last_conv_ok;
            }
    }
    printf("\nbconv layers, threshold epilogue, times in us (median of 20; -1: not applicable), POPS of the best\n"
           "old = implicit GEMM 128x64; auto = halo kernel as lower.c emits it (bnn_halo_choose); THxTW/BN/NW =\n"
           "halo kernel with warp tiles of TH x TW pixels x BN channels, NW warps a block\n");
    printf("%-25s %5s %8s", "layer", "batch", "old");
    for (int v = 1; v < NV; v++)
        printf(" %9s", var[v - 1].name);
    printf(" %6s %8s %s\n", "best_P", "old/auto", "exact");
    for (size_t l = 0; l < sizeof L / sizeof *L; l++)
        for (int b = 0; b < 3; b++) {
            int nb = batches[b], oh = bnn_conv_out(L[l].HW, L[l].K, L[l].S, L[l].P, L[l].P, 1);
            double ops = 2.0 * nb * oh * oh * L[l].O * (double)L[l].C * L[l].K * L[l].K;
            double *ms = res[l][b].ms, best = 1e30;
            printf("%-25s %5d", L[l].name, nb);
            for (int v = 0; v < NV; v++) {
                printf(v ? " %9.2f" : " %8.2f", ms[v] > 0 ? 1e3 * ms[v] : -1.0);
                if (ms[v] > 0 && ms[v] < best)
                    best = ms[v];
            }
            printf(" %6.3f %7.2fx %s\n", best < 1e30 ? ops / best * 1e-12 : 0, ms[1] > 0 ? ms[0] / ms[1] : 0,
                   res[l][b].ok ? "yes" : "NO");
        }
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv) {
    bool bench = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bench") == 0)
            bench = true;
        else if (strcmp(argv[i], "--halo-only") == 0)
            halo_only = true;
        else if (strcmp(argv[i], "--bconv-bench") == 0)
            bconv_bench = true;
        else if (strcmp(argv[i], "--compile-only") == 0)
            compile_only = true;
        else
            rng_state ^= strtoull(argv[i], NULL, 0); /* a seed */
    }
    CUdevice dev = 0;
    int major = 9, minor = 0, sms = 0;
    char name[256] = "none (compile only)";
    if (!compile_only) {
        int rc = load_driver("test_kernels_gpu", &dev);
        if (rc)
            return rc;
        CU(cu.DeviceGetAttribute(&major, CU_ATTR_CC_MAJOR, dev));
        CU(cu.DeviceGetAttribute(&minor, CU_ATTR_CC_MINOR, dev));
        CU(cu.DeviceGetAttribute(&sms, CU_ATTR_MULTIPROCESSOR_COUNT, dev));
        CU(cu.DeviceGetName(name, sizeof name, dev));
    }
    if (nvrtc_load() != 0) {
        fprintf(stderr, "test_kernels_gpu: %s\n", diag_message());
        return 1;
    }
    static char arch[32];
    snprintf(arch, sizeof arch, "sm_%d%d%s", major, minor, major == 9 ? "a" : "");
    arch_name = arch;
    printf("device: %s, %s, %d SMs\n", name, arch, sms);

    const int reps = bench ? 20 : 5;
    const Tile big = {128, 256, 2, 4, 4, 4}, mid = {128, 128, 2, 2, 4, 3}, small = {64, 64, 2, 2, 8, 2},
               thin = {64, 128, 1, 4, 2, 4};
    struct {
        int M;
        BgemmSpec s;
    } gemms[] = {
        {1, {.M = 1, .N = 10, .K = 784, .epi = BNN_EPI_I32}},
        {1, {.N = 10, .K = 784, .epi = BNN_EPI_THRESHOLD}},
        {1, {.N = 10, .K = 784, .epi = BNN_EPI_AFFINE, .tile = small}},
        {3, {.N = 64, .K = 784, .epi = BNN_EPI_I32, .tile = small}},
        {3, {.N = 64, .K = 784, .epi = BNN_EPI_THRESHOLD, .ldy = 6}}, /* words 4, 5: past the last tile */
        {1000, {.N = 130, .K = 257, .epi = BNN_EPI_I32, .ldy = 133}},
        {1000, {.N = 130, .K = 257, .epi = BNN_EPI_THRESHOLD, .ldy = 8, .tile = thin}},
        {1000, {.N = 130, .K = 257, .epi = BNN_EPI_AFFINE, .tile = mid}},
        {333, {.N = 517, .K = 3000, .epi = BNN_EPI_I32, .tile = big}},
        {333, {.N = 517, .K = 3000, .epi = BNN_EPI_THRESHOLD, .tile = small}},
        {333, {.M = 333, .N = 517, .K = 3000, .epi = BNN_EPI_AFFINE, .lda = 96, .ldw = 100}},
        {256, {.N = 512, .K = 4096, .epi = BNN_EPI_I32, .tile = big}},
        {256, {.N = 512, .K = 4096, .epi = BNN_EPI_THRESHOLD, .tile = thin}},
        {200, {.N = 72, .K = 1000, .epi = BNN_EPI_THRESHOLD, .ldy = 4, .tile = big}},
        {1, {.N = 1, .K = 1, .epi = BNN_EPI_I32, .lda = 4, .ldw = 4, .tile = small}},
    };
    for (size_t i = 0; !bconv_bench && !halo_only && i < sizeof gemms / sizeof *gemms; i++)
        test_bgemm(gemms[i].M, gemms[i].s, true, reps);

    const Tile ct = {128, 128, 2, 2, 4, 3};
    struct {
        int nb;
        BconvSpec s;
    } convs[] = {
#define P1 .PT = 1, .PL = 1, .PB = 1, .PR = 1
        {2, {.C = 32, .H = 7, .W = 7, .O = 64, .KH = 3, .KW = 3, P1, .epi = BNN_EPI_I32}},
        {3, {.C = 65, .H = 14, .W = 14, .O = 130, .KH = 3, .KW = 3, P1, .epi = BNN_EPI_THRESHOLD}},
        {3, {.C = 65, .H = 14, .W = 14, .O = 130, .KH = 3, .KW = 3, P1, .pad_one = true, .epi = BNN_EPI_I32, .gy = 2}},
        {1, {.C = 65, .H = 7, .W = 7, .O = 10, .KH = 3, .KW = 3, .SH = 2, .SW = 2, P1, .epi = BNN_EPI_AFFINE}},
        {2, {.C = 128, .H = 14, .W = 14, .O = 128, .KH = 3, .KW = 3, .SH = 2, .SW = 2, P1, .epi = BNN_EPI_THRESHOLD,
             .tile = ct}},
        {2, {.C = 128, .H = 14, .W = 14, .O = 96, .KH = 3, .KW = 3, .SH = 2, .SW = 2, P1, .pad_one = true,
             .epi = BNN_EPI_THRESHOLD, .ldy = 4}},
        {1, {.C = 256, .H = 32, .W = 32, .O = 64, .KH = 3, .KW = 3, P1, .epi = BNN_EPI_THRESHOLD, .tile = ct}},
        {2, {.C = 256, .H = 14, .W = 14, .O = 256, .KH = 1, .KW = 1, .epi = BNN_EPI_I32, .tile = ct}},
        {3, {.C = 32, .H = 32, .W = 32, .O = 32, .KH = 1, .KW = 1, .SH = 2, .SW = 2, .epi = BNN_EPI_THRESHOLD}},
        {1, {.C = 128, .H = 7, .W = 7, .O = 130, .KH = 1, .KW = 1, .epi = BNN_EPI_AFFINE, .nb = 1}},
        {2, {.C = 65, .H = 14, .W = 14, .O = 64, .KH = 3, .KW = 3, .PT = 2, .PL = 2, .PB = 2, .PR = 2, .DH = 2,
             .DW = 2, .epi = BNN_EPI_I32}},
        {2, {.C = 64, .H = 15, .W = 15, .O = 96, .KH = 3, .KW = 3, .SH = 2, .SW = 2, .PB = 1, .PR = 1,
             .epi = BNN_EPI_I32, .tile = {64, 64, 2, 2, 4, 2}}},
        {2, {.C = 32, .H = 14, .W = 14, .O = 64, .KH = 3, .KW = 3, P1, .cwp = 8, .epi = BNN_EPI_THRESHOLD}},
        {2, {.C = 65, .H = 14, .W = 14, .O = 130, .KH = 3, .KW = 3, P1, .pool = true, .epi = BNN_EPI_THRESHOLD}},
        {1, {.C = 128, .H = 15, .W = 15, .O = 64, .KH = 3, .KW = 3, P1, .pool = true, .pad_one = true,
             .epi = BNN_EPI_THRESHOLD, .tile = ct, .gy = 1}},
        {3, {.C = 32, .H = 7, .W = 7, .O = 64, .KH = 3, .KW = 3, P1, .pool = true, .epi = BNN_EPI_THRESHOLD,
             .ldy = 4, .tile = {64, 64, 2, 2, 4, 2}}}, /* words 2, 3: past the last tile */
        {2, {.C = 256, .H = 32, .W = 32, .O = 130, .KH = 3, .KW = 3, P1, .pool = true, .epi = BNN_EPI_THRESHOLD,
             .ldy = 8, .tile = {64, 128, 1, 4, 2, 4}}},
#undef P1
    };
    if (!bconv_bench) {
        for (size_t i = 0; !halo_only && i < sizeof convs / sizeof *convs; i++)
            test_bconv(convs[i].nb, convs[i].s, true, reps);
#define P1 .PT = 1, .PL = 1, .PB = 1, .PR = 1
        struct {
            int nb;
            BconvSpec s;
        } halos[] = {
            /* odd item counts (9 taps x 1 chunk, 27), channels 3, 64 in 256-bit words, 130, 300 */
            {2, {.C = 64, .H = 56, .W = 56, .O = 64, .KH = 3, .KW = 3, P1, .cwp = 8, .epi = BNN_EPI_THRESHOLD, .ldy = 8,
                 .tile = {32, 64, 4, 1, 8, 2}, .th = 4, .tw = 8}},
            {2, {.C = 3, .H = 17, .W = 19, .O = 40, .KH = 3, .KW = 3, P1, .epi = BNN_EPI_I32,
                 .tile = {32, 64, 2, 1, 8, 2}, .th = 4, .tw = 8}},
            {3, {.C = 300, .H = 9, .W = 11, .O = 70, .KH = 3, .KW = 3, P1, .epi = BNN_EPI_THRESHOLD,
                 .tile = {32, 64, 4, 1, 8, 2}, .th = 4, .tw = 8}},
            {2, {.C = 130, .H = 13, .W = 13, .O = 200, .KH = 3, .KW = 3, .SH = 2, .SW = 2, P1, .pad_one = true,
                 .epi = BNN_EPI_AFFINE, .tile = {16, 64, 2, 1, 8, 2}, .th = 4, .tw = 4}},
            /* 1x1 stride 2 (one item, the hi half is the zero line), 5x5 dilation 2, uneven pads */
            {2, {.C = 64, .H = 56, .W = 56, .O = 128, .KH = 1, .KW = 1, .SH = 2, .SW = 2, .cwp = 8,
                 .epi = BNN_EPI_THRESHOLD, .tile = {32, 64, 4, 1, 8, 2}, .th = 4, .tw = 8}},
            {2, {.C = 65, .H = 12, .W = 10, .O = 33, .KH = 5, .KW = 3, .PT = 3, .PL = 0, .PB = 1, .PR = 2, .DH = 2,
                 .epi = BNN_EPI_I32, .tile = {32, 64, 2, 1, 8, 2}, .th = 4, .tw = 8}},
            /* 1-wide kernels with strides: the halo keeps every stride-th row / column only */
            {2, {.C = 65, .H = 13, .W = 12, .O = 40, .KH = 1, .KW = 3, .SH = 2, .SW = 2, P1, .pad_one = true,
                 .epi = BNN_EPI_I32, .tile = {32, 64, 4, 1, 8, 2}, .th = 4, .tw = 8}},
            {2, {.C = 32, .H = 15, .W = 16, .O = 64, .KH = 1, .KW = 1, .SH = 2, .SW = 3, .PT = 1, .PL = 0, .PB = 0,
                 .PR = 2, .epi = BNN_EPI_THRESHOLD, .tile = {16, 64, 2, 1, 8, 2}, .th = 4, .tw = 4, .gy = 3}},
            {2, {.C = 200, .H = 14, .W = 14, .O = 96, .KH = 3, .KW = 1, .SH = 2, .SW = 2, .PT = 1, .PL = 0, .PB = 1,
                 .PR = 0, .DH = 2, .pad_one = true, .epi = BNN_EPI_THRESHOLD, .tile = {32, 32, 4, 1, 8, 2}, .th = 4, .tw = 8}},
            {1, {.C = 65, .H = 12, .W = 10, .O = 33, .KH = 5, .KW = 3, .PT = 3, .PL = 0, .PB = 1, .PR = 2, .DH = 2,
                 .pad_one = true, .epi = BNN_EPI_THRESHOLD, .tile = {32, 32, 2, 1, 8, 2}, .th = 4, .tw = 8}},
            /* pools: odd output, tiles that overhang it, one padding, padded LDY */
            {2, {.C = 256, .H = 15, .W = 15, .O = 64, .KH = 3, .KW = 3, P1, .pool = true, .pad_one = true,
                 .epi = BNN_EPI_THRESHOLD, .ldy = 8, .tile = {32, 64, 4, 1, 8, 2}, .th = 4, .tw = 8}},
            {3, {.C = 128, .H = 32, .W = 32, .O = 128, .KH = 3, .KW = 3, P1, .pool = true, .epi = BNN_EPI_THRESHOLD,
                 .cwp = 8, .ldy = 8, .tile = {32, 64, 2, 1, 8, 2}, .th = 4, .tw = 8, .gy = 5}},
            {1, {.C = 512, .H = 8, .W = 8, .O = 512, .KH = 3, .KW = 3, P1, .pool = true, .epi = BNN_EPI_THRESHOLD,
                 .tile = {16, 64, 4, 1, 8, 2}, .th = 4, .tw = 4}},
            {4, {.C = 512, .H = 7, .W = 7, .O = 512, .KH = 3, .KW = 3, P1, .epi = BNN_EPI_THRESHOLD,
                 .tile = {32, 64, 2, 1, 8, 2}, .th = 4, .tw = 8, .nb = 4}},
        };
#undef P1
        for (size_t i = 0; i < sizeof halos / sizeof *halos; i++)
            test_bconv(halos[i].nb, halos[i].s, true, reps);
        /* The halo kernel on all cases above: the tile lower.c picks, then 4x4 tiles on 2 blocks
         * of 2 warps with BC_MINB 2 (several tiles a warp: its double buffer). */
        for (size_t i = 0; i < sizeof convs / sizeof *convs + sizeof halos / sizeof *halos; i++) {
            bool from_convs = i < sizeof convs / sizeof *convs;
            int nb = from_convs ? convs[i].nb : halos[i - sizeof convs / sizeof *convs].nb;
            BconvSpec h = from_convs ? convs[i].s : halos[i - sizeof convs / sizeof *convs].s;
            h.th = h.tw = h.gy = h.minb = 0;
            h.tile = (Tile){0};
            bconv_resolve(&h);
            if (!bconv_halo_auto(&h))
                continue;
            test_bconv(nb, h, true, reps);
            h.th = h.tw = 4;
            h.tile.bm = 16;
            h.tile.wm = 2;
            h.minb = 2;
            h.gy = 2;
            test_bconv(nb, h, true, 0);
        }
    } else
        run_bconv_bench();

    if (bench) {
        const int S = 8192;
        test_bgemm(S, (BgemmSpec){.M = S, .N = S, .K = S, .epi = BNN_EPI_I32, .tile = big}, false, 20);
        test_bgemm(S, (BgemmSpec){.M = S, .N = S, .K = S, .epi = BNN_EPI_THRESHOLD, .tile = big}, false, 20);
        test_bgemm(S, (BgemmSpec){.M = S, .N = S, .K = S, .epi = BNN_EPI_THRESHOLD, .tile = mid}, false, 20);
        test_bgemm(S, (BgemmSpec){.M = S, .N = S, .K = S, .epi = BNN_EPI_THRESHOLD, .tile = {128, 256, 2, 4, 8, 3}},
                   false, 20);
        test_bgemm(S, (BgemmSpec){.M = S, .N = S, .K = S, .epi = BNN_EPI_THRESHOLD, .tile = {256, 128, 4, 2, 4, 4}},
                   false, 20);
        test_bconv(64, (BconvSpec){.C = 256, .H = 14, .W = 14, .O = 256, .KH = 3, .KW = 3, .PT = 1, .PL = 1, .PB = 1,
                                   .PR = 1, .epi = BNN_EPI_THRESHOLD, .tile = ct},
                   false, 20);
        test_bconv(16, (BconvSpec){.C = 256, .H = 14, .W = 14, .O = 256, .KH = 3, .KW = 3, .PT = 1, .PL = 1, .PB = 1,
                                   .PR = 1, .pool = true, .epi = BNN_EPI_THRESHOLD, .tile = ct},
                   false, 20);
    }

    printf("\n%-34s %-40s %-4s %10s %8s %8s\n", "shape", "variant", "ok", "time_ms", "TOPS", "nvrtc_s");
    for (int i = 0; i < ntable; i++)
        printf("%-34s %-40s %-4s %10.4f %8.1f %8.2f\n", table[i].shape, table[i].variant, table[i].ok ? "yes" : "NO",
               table[i].ms, table[i].tops, table[i].compile_s);
    return check_report("test_kernels_gpu");
}
