/* test_tiled_gpu.c: runs the pre-tiled bit-GEMM kernels (bgemm_tiled.cu: mma.sync;
 * bgemm_wgmma.cu: wgmma, sm_90a) on the GPU through the driver API (libcuda.so.1 with dlopen)
 * and compares every output word with a plain C reference: the XOR form K - 2*popc(a XOR w)
 * on the packed rows (another formula than the kernels' AND one), then the epilogue in C.
 * Operands are tiled on the host by tile_layout.c; popc(a) comes from the device prep kernel
 * bnn_tiled_row_popc, popc(w) from the host (and the prep kernel is checked against it).
 * Outputs are poisoned; padding columns and a guard region after the output must stay
 * poisoned, padding words of bit rows must be zero. Persistent grids are run with fewer
 * blocks than tiles too, and run-time-M kernels again at M/3 on the same buffers.
 * Exit 77 (skipped) without a driver, a GPU, or a GPU older than sm_90.
 * `test_tiled_gpu --bench` also times 8192^3 (sampled rows checked exactly); `--small` skips
 * 8192^3 (for compute-sanitizer runs). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ir.h"
#include "kernels.h"
#include "nvrtc.h"
#include "tile_layout.h"
#include "tiledsrc.h"
#include "util.h"

#include "cudrv.h"

/* ---------------------------------------------------------------- helpers */

static uint64_t rng_state = 0xD1B54A32D192ED03ull;
static uint64_t rnd(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static float rndf(float lo, float hi) { return lo + (hi - lo) * (float)((rnd() >> 40) * (1.0 / 16777216.0)); }

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
static void launch(CUfunction f, unsigned gx, unsigned threads, unsigned smem, void **args) {
    CU(cu.LaunchKernel(f, gx, 1, 1, threads, 1, 1, smem, NULL, args, NULL));
}
static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}
static double time_ms(CUfunction f, unsigned gx, unsigned threads, unsigned smem, void **args, int reps) {
    CUevent e0, e1;
    CU(cu.EventCreate(&e0, 0));
    CU(cu.EventCreate(&e1, 0));
    for (int i = 0; i < 3; i++)
        launch(f, gx, threads, smem, args);
    CU(cu.CtxSynchronize());
    float *v = xcalloc((size_t)reps, sizeof *v);
    for (int i = 0; i < reps; i++) {
        CU(cu.EventRecord(e0, NULL));
        launch(f, gx, threads, smem, args);
        CU(cu.EventRecord(e1, NULL));
        CU(cu.EventSynchronize(e1));
        CU(cu.EventElapsedTime(&v[i], e0, e1));
    }
    qsort(v, (size_t)reps, sizeof *v, cmp_float);
    double med = v[reps / 2];
    free(v);
    CU(cu.EventDestroy(e0));
    CU(cu.EventDestroy(e1));
    return med;
}

static int sm_count;

/* ---------------------------------------------------------------- results table */

typedef struct Row {
    char shape[48], variant[80];
    bool ok;
    double ms, tops;
} Row;
static Row table[128];
static int ntable;

static void record(const char *shape, const char *variant, bool ok, double ms, double ops) {
    if (ntable == (int)(sizeof table / sizeof *table))
        return;
    Row *r = &table[ntable++];
    snprintf(r->shape, sizeof r->shape, "%s", shape);
    snprintf(r->variant, sizeof r->variant, "%s", variant);
    r->ok = ok;
    r->ms = ms;
    r->tops = ms > 0 ? ops / (ms * 1e-3) / 1e12 : 0;
}

/* ---------------------------------------------------------------- reference and epilogues */

#define POISON8 0xAB
#define POISON32 0xABABABABu
#define GUARD_BYTES 4096

typedef struct Epi {
    int kind, n, ldy;
    int *thr, *dir;
    float *scale, *bias;
} Epi;

/* Thresholds on real dot values (and next to them) test the >= / <= edges exactly. */
static void epi_make(Epi *e, int kind, int n, int ldy, const int *dots, int rows) {
    e->kind = kind;
    e->n = n;
    e->ldy = ldy;
    e->thr = xcalloc((size_t)n, sizeof(int));
    e->dir = xcalloc((size_t)n, sizeof(int));
    e->scale = xcalloc((size_t)n, sizeof(float));
    e->bias = xcalloc((size_t)n, sizeof(float));
    for (int j = 0; j < n; j++) {
        int pick = dots[(size_t)(rnd() % (uint64_t)rows) * (size_t)n + (size_t)j];
        int r = (int)(rnd() % 8);
        e->thr[j] = r == 0 ? -1000000 : r == 1 ? 1000000 : pick + (int)(rnd() % 3) - 1;
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

/* K - 2*popc(a XOR w) of row m against all N columns, on packed rows of ld words. */
static void ref_dots(const uint32_t *a, const uint32_t *w, int N, int K, int ld, int m, int *out) {
    const uint32_t *ar = a + (size_t)m * (size_t)ld;
    int nw = (K + 31) / 32;
    for (int n = 0; n < N; n++) {
        const uint32_t *wr = w + (size_t)n * (size_t)ld;
        int d = 0;
        for (int i = 0; i < nw; i++)
            d += __builtin_popcount(ar[i] ^ wr[i]);
        out[n] = K - 2 * d;
    }
}

/* Random packed rows, zero past K. */
static uint32_t *rand_rows(int rows, int K, int ld) {
    uint32_t *x = xcalloc((size_t)rows * (size_t)ld, 4);
    int nw = (K + 31) / 32;
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < nw; i++) {
            uint32_t v = (uint32_t)rnd();
            if (i == nw - 1 && K % 32)
                v &= (1u << (K % 32)) - 1;
            x[(size_t)r * (size_t)ld + (size_t)i] = v;
        }
    return x;
}

/* ---------------------------------------------------------------- one case */

static const char *epi_name(int epi) {
    return epi == BNN_EPI_I32 ? "i32" : epi == BNN_EPI_THRESHOLD ? "bits" : "affine";
}

/* Runs spec s at M rows. full: every row checked; else 64 sampled rows plus first and last.
 * grid_cap > 0 limits the persistent grid (more tiles than blocks). */
static void test_case(int M, TiledSpec s, bool full, int grid_cap, int reps) {
    tiled_resolve(&s);
    const int N = s.N, K = s.K, kalign = s.kc * 128;
    char shape[48], variant[80];
    snprintf(shape, sizeof shape, "%dx%dx%d", M, N, K);
    const char *fam = s.cluster > 1 ? "wgmma-cl2" : s.kind == TK_WGMMA ? "wgmma" : "tiled";
    snprintf(variant, sizeof variant, "%s %s %dx%d kc%d s%d%s%s%s", fam,
             epi_name(s.epi), s.bm, s.bn, s.kc, s.stages, s.M ? " M=const" : "",
             s.ldy != (s.epi == BNN_EPI_THRESHOLD ? (N + 31) / 32 : N) ? " ldy-pad" : "", grid_cap ? " grid-cap" : "");
    Buf src = {0};
    tiled_head(&src);
    tiled_append(&src, "tiled_t", &s);
    NvrtcOutput out;
    if (nvrtc_compile("tiled_test.cu", src.data, "sm_90a", NULL, 0, false, &out) != 0) {
        CHECK_MSG(false, "%s %s: NVRTC: %s", shape, variant, diag_message());
        record(shape, variant, false, 0, 0);
        buf_free(&src);
        return;
    }
    buf_free(&src);
    CUmodule mod;
    CUfunction fn, prep;
    CU(cu.ModuleLoadData(&mod, out.cubin));
    nvrtc_output_free(&out);
    CU(cu.ModuleGetFunction(&fn, mod, "tiled_t"));
    CU(cu.ModuleGetFunction(&prep, mod, "bnn_tiled_row_popc"));
    const int threads = tiled_threads(&s), smem = tiled_smem(&s);
    CU(cu.FuncSetAttribute(fn, CU_FUNC_MAX_DYNAMIC_SMEM, smem));

    /* Operands: row stride ld (odd on purpose when K allows), tiled on the host. */
    const int ld = (K + 31) / 32 + (K % 64 ? 1 : 0);
    uint32_t *a = rand_rows(M, K, ld), *w = rand_rows(N, K, ld);
    size_t abytes = bnn_tiled_bytes(M, K, s.bm, kalign), wbytes = bnn_tiled_bytes(N, K, s.bn, kalign);
    void *at = xmalloc(abytes), *wt = xmalloc(wbytes);
    CHECK(bnn_tile_bits(a, M, K, ld, s.bm, kalign, at) == 0);
    CHECK(bnn_tile_bits(w, N, K, ld, s.bn, kalign, wt) == 0);
    int *wpop = xmalloc((size_t)N * sizeof(int));
    bnn_row_popc_host(w, N, K, ld, wpop);

    /* Reference dots: all rows, or the sampled ones. */
    int nrows = full ? M : 66;
    int *rows = xmalloc((size_t)nrows * sizeof(int));
    for (int i = 0; i < nrows; i++)
        rows[i] = full ? i : i == 0 ? 0 : i == 1 ? M - 1 : (int)(rnd() % (uint64_t)M);
    int *dots = xmalloc((size_t)nrows * (size_t)N * sizeof(int));
    for (int i = 0; i < nrows; i++)
        ref_dots(a, w, N, K, ld, rows[i], dots + (size_t)i * (size_t)N);
    Epi e;
    epi_make(&e, s.epi, N, s.ldy, dots, nrows);

    CUdeviceptr dA = dupload(at, abytes), dW = dupload(wt, wbytes), dwpop = dupload(wpop, (size_t)N * 4);
    CUdeviceptr dapop = dalloc((size_t)M * 4), dwchk = dalloc((size_t)N * 4);
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

    /* popc(a) by the prep kernel; the same kernel on W must agree with the host. */
    CU(cu.MemsetD8(dapop, POISON8, (size_t)M * 4));
    CU(cu.MemsetD8(dwchk, POISON8, (size_t)N * 4));
    int mrows = M, tra = s.bm, trw = s.bn, nch = bnn_tiled_kpad(K, kalign) / 128, nrw = N;
    void *pa[] = {&dA, &mrows, &tra, &nch, &dapop}, *pw[] = {&dW, &nrw, &trw, &nch, &dwchk};
    CU(cu.LaunchKernel(prep, (unsigned)((M + 31) / 32), 1, 1, 32, 8, 1, 0, NULL, pa, NULL));
    CU(cu.LaunchKernel(prep, (unsigned)((N + 31) / 32), 1, 1, 32, 8, 1, 0, NULL, pw, NULL));
    CU(cu.CtxSynchronize());
    int *wchk = xmalloc((size_t)N * 4);
    CU(cu.MemcpyDtoH(wchk, dwchk, (size_t)N * 4));
    CHECK_MSG(memcmp(wchk, wpop, (size_t)N * 4) == 0, "%s: bnn_tiled_row_popc disagrees with the host", shape);
    free(wchk);

    int mruns[2] = {M, s.M ? 0 : (M > 3 ? M / 3 : 0)};
    bool all_ok = true;
    double ms = 0;
    for (int run = 0; run < 2 && mruns[run] > 0; run++) {
        int mr = mruns[run];
        CU(cu.MemsetD8(dY, POISON8, ywords * 4));
        void *args[] = {&dA, &dW, &dapop, &dwpop, &dp0, &dp1, &dY, &mr};
        /* Work units: tiles, or pairs of M tiles with clusters of two; one cluster per unit at most. */
        const int cl = s.cluster, units = ((mr + s.bm - 1) / s.bm + cl - 1) / cl * ((N + s.bn - 1) / s.bn);
        int grid = units < sm_count / cl ? units : sm_count / cl;
        if (grid_cap && grid > grid_cap)
            grid = grid_cap;
        grid *= cl;
        launch(fn, (unsigned)grid, (unsigned)threads, (unsigned)smem, args);
        CU(cu.CtxSynchronize());
        CU(cu.MemcpyDtoH(y, dY, ywords * 4));
        size_t bad = 0;
        for (int i = 0; i < nrows; i++) {
            int m = rows[i];
            if (m >= mr)
                continue;
            for (int j = 0; j < s.ldy; j++) {
                bool poison;
                uint32_t want = expect_word(&e, dots + (size_t)i * (size_t)N, j, &poison);
                uint32_t got = y[(size_t)m * (size_t)s.ldy + (size_t)j];
                if (got != want) {
                    if (bad < 5)
                        fprintf(stderr, "%s %s M=%d: row %d word %d: got 0x%08x, want 0x%08x%s\n", shape, variant, mr,
                                m, j, got, want, poison ? " (padding must stay untouched)" : "");
                    bad++;
                }
            }
        }
        for (size_t i = (size_t)mr * (size_t)s.ldy; i < ywords; i++)
            if (y[i] != POISON32) {
                if (bad < 5)
                    fprintf(stderr, "%s %s M=%d: guard word %zu written\n", shape, variant, mr,
                            i - (size_t)mr * (size_t)s.ldy);
                bad++;
            }
        CHECK_MSG(bad == 0, "%s %s M=%d: %zu wrong words", shape, variant, mr, bad);
        all_ok &= bad == 0;
        if (run == 0 && reps > 0)
            ms = time_ms(fn, (unsigned)grid, (unsigned)threads, (unsigned)smem, args, reps);
    }
    record(shape, variant, all_ok, ms, 2.0 * M * N * (double)K);
    CU(cu.MemFree(dA));
    CU(cu.MemFree(dW));
    CU(cu.MemFree(dwpop));
    CU(cu.MemFree(dapop));
    CU(cu.MemFree(dwchk));
    if (dp0) {
        CU(cu.MemFree(dp0));
        CU(cu.MemFree(dp1));
    }
    CU(cu.MemFree(dY));
    CU(cu.ModuleUnload(mod));
    epi_free(&e);
    free(y);
    free(dots);
    free(rows);
    free(wpop);
    free(at);
    free(wt);
    free(a);
    free(w);
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv) {
    bool bench = false, small = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bench") == 0)
            bench = true;
        else if (strcmp(argv[i], "--small") == 0)
            small = true;
        else
            rng_state ^= strtoull(argv[i], NULL, 0); /* a seed */
    }
    CUdevice dev = 0;
    int rc = load_driver("test_tiled_gpu", &dev);
    if (rc)
        return rc;
    int major = 0, minor = 0;
    char name[256];
    CU(cu.DeviceGetAttribute(&major, CU_ATTR_CC_MAJOR, dev));
    CU(cu.DeviceGetAttribute(&minor, CU_ATTR_CC_MINOR, dev));
    CU(cu.DeviceGetAttribute(&sm_count, CU_ATTR_MULTIPROCESSOR_COUNT, dev));
    CU(cu.DeviceGetName(name, sizeof name, dev));
    if (major != 9) { /* sm_90a code runs on sm_90 only */
        printf("test_tiled_gpu: skipped: %s is sm_%d%d; the tiled kernels are built for sm_90a\n", name, major, minor);
        return 77;
    }
    if (nvrtc_load() != 0) {
        fprintf(stderr, "test_tiled_gpu: %s\n", diag_message());
        return 1;
    }
    printf("device: %s, sm_%d%d, %d SMs\n", name, major, minor, sm_count);

    const int epis[3] = {BNN_EPI_I32, BNN_EPI_THRESHOLD, BNN_EPI_AFFINE};
    const struct {
        int M, N, K;
    } shapes[] = {{1, 10, 784}, {3, 64, 784}, {1000, 130, 257}, {333, 517, 3000}, {256, 512, 4096}};
    for (int kind = 0; kind < 2; kind++)
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
            for (int e = 0; e < 3; e++)
                test_case(shapes[i].M, (TiledSpec){.kind = kind, .N = shapes[i].N, .K = shapes[i].K, .epi = epis[e]},
                          true, 0, 0);
    /* Variants: padded LDY (bits past the last tile, i32 padding columns), compiled-in M,
     * other stage sizes and depths, smaller mma.sync tiles, persistent grid with few blocks. */
    for (int kind = 0; kind < 2; kind++) {
        test_case(1000, (TiledSpec){.kind = kind, .N = 130, .K = 257, .epi = BNN_EPI_THRESHOLD, .ldy = 12}, true, 0, 0);
        test_case(1000, (TiledSpec){.kind = kind, .N = 130, .K = 257, .epi = BNN_EPI_I32, .ldy = 133}, true, 0, 0);
        test_case(333, (TiledSpec){.kind = kind, .M = 333, .N = 517, .K = 3000, .epi = BNN_EPI_AFFINE, .kc = 4,
                                   .stages = 6},
                  true, 0, 0);
        test_case(1000, (TiledSpec){.kind = kind, .N = 517, .K = 3000, .epi = BNN_EPI_THRESHOLD, .kc = 2, .stages = 3},
                  true, 3, 0);
        test_case(256, (TiledSpec){.kind = kind, .N = 512, .K = 4096, .epi = BNN_EPI_I32, .kc = 16, .stages = 2}, true,
                  1, 0);
    }
    /* Clusters of two sharing W: an odd number of M tiles (the last partner only loads), one
     * M tile, several units per cluster. */
    test_case(1, (TiledSpec){.kind = TK_WGMMA, .N = 10, .K = 784, .epi = BNN_EPI_THRESHOLD, .cluster = 2}, true, 0, 0);
    test_case(333, (TiledSpec){.kind = TK_WGMMA, .N = 517, .K = 3000, .epi = BNN_EPI_I32, .cluster = 2}, true, 0, 0);
    test_case(1000, (TiledSpec){.kind = TK_WGMMA, .N = 130, .K = 257, .epi = BNN_EPI_AFFINE, .cluster = 2}, true, 0,
              0);
    test_case(1000, (TiledSpec){.kind = TK_WGMMA, .N = 517, .K = 3000, .epi = BNN_EPI_THRESHOLD, .kc = 4, .stages = 8,
                                .cluster = 2},
              true, 1, 0);
    test_case(1000, (TiledSpec){.kind = TK_MMA, .N = 130, .K = 257, .epi = BNN_EPI_THRESHOLD, .bm = 64, .bn = 128,
                                .wm = 1, .wn = 4},
              true, 0, 0);
    test_case(333, (TiledSpec){.kind = TK_MMA, .N = 517, .K = 3000, .epi = BNN_EPI_I32, .bm = 128, .bn = 128, .wm = 2,
                               .wn = 2},
              true, 5, 0);

    /* 8192^3, sampled rows checked exactly, every epilogue (clusters: int32 and bits); timed
     * with --bench. */
    const int S = 8192, reps = bench ? 20 : 0;
    for (int kind = 0; kind < (small ? 0 : 3); kind++)
        for (int e = 0; e < (kind == 2 ? 2 : 3); e++)
            test_case(S,
                      (TiledSpec){.kind = kind ? TK_WGMMA : TK_MMA, .N = S, .K = S, .epi = epis[e],
                                  .cluster = kind == 2 ? 2 : 0},
                      false, 0, reps);

    printf("\n%-18s %-44s %-4s %10s %8s\n", "shape", "variant", "ok", "time_ms", "TOPS");
    for (int i = 0; i < ntable; i++)
        printf("%-18s %-44s %-4s %10.4f %8.1f\n", table[i].shape, table[i].variant, table[i].ok ? "yes" : "NO",
               table[i].ms, table[i].tops);
    return check_report("test_tiled_gpu");
}
