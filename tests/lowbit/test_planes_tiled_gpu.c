/* test_planes_tiled_gpu: bgemm_planes_tiled.cu on a GPU (driver API through dlopen) against the
 * runtime's CPU bit-plane GEMM (rt_cpu_qgemm_planes): w1a2 (bipolar), w2a2 signed and unsigned,
 * w8a8 with 255 levels, a single -1 plane, both epilogues, odd M, N, K, several row tiles and
 * pairs per block (persistent grid capped to 3 blocks on every other run), a 128-column tile
 * (bit-row padding words written by the zero-pad path). The output buffer and a 4 KiB guard
 * after it are poisoned first: every output word must equal the CPU's, the guard untouched.
 * bnn_planes_row_pop (the bipolar correction) must equal the host sums.
 * On sm_90a the wgmma variant (PT_WGMMA) runs the same checks on its own specs.
 * With --bench [CASES]: w1a2, w2a2 and w4a4 (or the CASES named, e.g. w1a2,w2a2) at 8192^3,
 * bit-plane output, the old kernel (bgemm_planes.cu),
 * the tiled mma.sync kernel and (sm_90a) the wgmma one, each over pre-tiled and plain A, in the
 * same run, device-event medians,
 * effective POPS (2*M*N*K), each tiled main loop alone (PT_NOSTORE), and every tiled kernel's
 * whole 8192^3 output compared word for word with the old one's (whose 8 rows are checked
 * against the CPU). Exit 77 (skipped) without a driver, GPU or libnvrtc. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../codegen/cudrv.h"
#include "ir.h"
#include "nvrtc.h"
#include "ptsrc.h"
#include "rt.h"
#include "util.h"

extern const char bnn_bgemm_planes_cu[];

static const PtSpec specs[] = {
    {.n = 64, .k = 784, .xb = 2, .wb = 1, .wsigned = 1, .bipolar = 1, .epi = 2, .l = 3, .yb = 2}, /* TFC w1a2 */
    {.n = 300, .k = 2500, .xb = 2, .wb = 2, .wsigned = 1, .epi = 2, .l = 3, .yb = 2},             /* w2a2 */
    {.n = 257, .k = 1000, .xb = 2, .wb = 2, .wsigned = 0, .epi = 1},                              /* unsigned */
    {.n = 10, .k = 64, .xb = 2, .wb = 2, .wsigned = 1, .epi = 1, .kc = 2, .stages = 3},           /* output layer */
    {.n = 257, .k = 1000, .xb = 8, .wb = 8, .wsigned = 1, .epi = 2, .l = 255, .yb = 8},           /* w8a8 */
    {.n = 33, .k = 3, .xb = 3, .wb = 3, .wsigned = 0, .epi = 1},                                  /* K < 256 */
    {.n = 70, .k = 300, .xb = 4, .wb = 1, .wsigned = 1, .epi = 2, .l = 15, .yb = 4},              /* one -1 plane */
    {.n = 200, .k = 1500, .xb = 3, .wb = 1, .bipolar = 1, .epi = 1, .bm = 128, .bn = 128, .wm = 2, .wn = 2},
    {.n = 100, .k = 777, .xb = 2, .wb = 1, .bipolar = 1, .epi = 2, .l = 3, .yb = 2, .bm = 128, .bn = 128, .wm = 2,
     .wn = 2}, /* LDY 8 words > 4 covered by the tile: zero-pad path */
    {.n = 520, .k = 4100, .xb = 2, .wb = 2, .wsigned = 1, .epi = 2, .l = 3, .yb = 2, .kc = 4, .stages = 6},
    /* the wgmma variant (sm_90a only) */
    {.n = 64, .k = 784, .xb = 2, .wb = 1, .wsigned = 1, .bipolar = 1, .epi = 2, .l = 3, .yb = 2, .wgmma = true},
    {.n = 300, .k = 2500, .xb = 2, .wb = 2, .wsigned = 1, .epi = 2, .l = 3, .yb = 2, .wgmma = true},
    {.n = 257, .k = 1000, .xb = 2, .wb = 2, .wsigned = 0, .epi = 1, .kc = 4, .stages = 6, .wgmma = true},
    {.n = 257, .k = 1000, .xb = 8, .wb = 8, .wsigned = 1, .epi = 2, .l = 255, .yb = 8, .wgmma = true},
    {.n = 70, .k = 300, .xb = 4, .wb = 1, .wsigned = 1, .epi = 2, .l = 15, .yb = 4, .kc = 2, .stages = 2, .wgmma = true},
    {.n = 200, .k = 1500, .xb = 3, .wb = 1, .bipolar = 1, .epi = 1, .wgmma = true},
    PT_SEARCH_SPECS,
    PT_APLAIN_SPECS,
    /* plain A on wgmma with rings of 3 and 2 stages */
    {.n = 520, .k = 4100, .xb = 2, .wb = 2, .wsigned = 1, .epi = 2, .l = 3, .yb = 2, .stages = 3, .aplain = true,
     .wgmma = true},
    {.n = 100, .k = 777, .xb = 4, .wb = 1, .bipolar = 1, .epi = 2, .l = 15, .yb = 4, .stages = 2, .aplain = true,
     .wgmma = true},
};
enum { NSPECS = sizeof specs / sizeof *specs, GUARD = 4096, POISON = 0xA5 };

static int sm_count;
static bool wgmma_ok; /* sm_90a: the wgmma variant runs */
static char arch[16];

static CUdeviceptr dalloc(size_t n) {
    CUdeviceptr p;
    CU(cu.MemAlloc(&p, n ? n : 4));
    return p;
}
static CUdeviceptr dupload(const void *h, size_t n) {
    CUdeviceptr p = dalloc(n);
    if (n)
        CU(cu.MemcpyHtoD(p, h, n));
    return p;
}

static CUmodule compile_module(const char *name, const char *src) {
    NvrtcOutput out;
    if (nvrtc_compile(name, src, arch, NULL, 0, false, &out) != 0) {
        fprintf(stderr, "%s: %s\n", arch, diag_message());
        exit(1);
    }
    CUmodule mod;
    CU(cu.ModuleLoadData(&mod, out.cubin));
    nvrtc_output_free(&out);
    return mod;
}

/* Thresholds around accumulators the data gives, random directions (as test_planes_gpu). */
static void make_thresholds(const PtSpec *s, const int32_t *acc, int M, int32_t **t, int32_t **dir) {
    *t = xmalloc((size_t)s->n * s->l * 4);
    *dir = xmalloc((size_t)s->n * 4);
    for (int n = 0; n < s->n; n++) {
        (*dir)[n] = pt_rnd(0, 1) ? 1 : -1;
        for (int l = 0; l < s->l; l++)
            (*t)[n * s->l + l] = acc[pt_rnd(0, M * s->n - 1)] + pt_rnd(-3, 3);
    }
}

/* The bipolar correction on the device; checked against the host. */
static CUdeviceptr row_pop(CUfunction prep, const PtSpec *s, CUdeviceptr dA, const uint32_t *A, int M, int ld) {
    CUdeviceptr d = dalloc((size_t)M * 4);
    int rows = M, xb = s->xb, tr = s->bm, nch = bnn_tiled_kpad(s->k, s->kc * 128) / 128;
    void *args[] = {&dA, &rows, &xb, &tr, &nch, &d};
    CU(cu.LaunchKernel(prep, (unsigned)((M + 31) / 32), 1, 1, 32, 8, 1, 0, NULL, args, NULL));
    int *got = xmalloc((size_t)M * 4);
    CU(cu.MemcpyDtoH(got, d, (size_t)M * 4));
    size_t bad = 0;
    for (int m = 0; m < M; m++) {
        int want = 0;
        for (int p = 0; p < s->xb; p++)
            for (int w = 0; w < ld; w++)
                want += __builtin_popcount(A[((size_t)m * s->xb + p) * ld + w]) << p;
        bad += got[m] != want;
    }
    CHECK_MSG(bad == 0, "bnn_planes_row_pop: %zu of %d rows differ", bad, M);
    free(got);
    return d;
}

static void run_spec(CUmodule mod, int si, const PtSpec *s, int M, int grid_cap) {
    uint32_t *A, *W;
    int ld;
    pt_random_operands(s, M, &A, &W, &ld);
    void *At, *Wt;
    size_t ab, wb;
    pt_tile_operands(s, A, W, M, ld, &At, &ab, &Wt, &wb);
    int32_t *acc = xmalloc((size_t)M * s->n * 4), *t = NULL, *dir = NULL;
    rt_cpu_qgemm_planes(A, W, M, s->n, ld, s->xb, s->wb, s->wsigned, s->bipolar, acc, NULL, NULL, 0, 0, NULL);
    const int ldy = (s->n + 255) / 256 * 8;
    size_t ybytes = s->epi == 1 ? (size_t)M * s->n * 4 : (size_t)M * s->yb * ldy * 4;
    uint32_t *want = xmalloc(ybytes), *got = xmalloc(ybytes + GUARD);
    if (s->epi == 1) {
        memcpy(want, acc, ybytes);
    } else {
        make_thresholds(s, acc, M, &t, &dir);
        rt_cpu_qgemm_planes(A, W, M, s->n, ld, s->xb, s->wb, s->wsigned, s->bipolar, NULL, t, dir, s->l, s->yb, want);
    }
    /* plain A: the planes as they are; the kernel counts a bipolar apop itself */
    CUdeviceptr dA = s->aplain ? dupload(A, (size_t)M * s->xb * ld * 4) : dupload(At, ab);
    CUdeviceptr dW = dupload(Wt, wb), dY = dalloc(ybytes + GUARD);
    CUdeviceptr dT = t ? dupload(t, (size_t)s->n * s->l * 4) : 0, dD = dir ? dupload(dir, (size_t)s->n * 4) : 0;
    CUfunction f, prep;
    char name[32];
    snprintf(name, sizeof name, "pt_%d", si);
    CU(cu.ModuleGetFunction(&f, mod, name));
    CU(cu.ModuleGetFunction(&prep, mod, "bnn_planes_row_pop"));
    CUdeviceptr dP = s->bipolar && !s->aplain ? row_pop(prep, s, dA, A, M, ld) : 0;
    CU(cu.FuncSetAttribute(f, CU_FUNC_MAX_DYNAMIC_SMEM, pt_smem(s)));
    CU(cu.MemsetD8(dY, POISON, ybytes + GUARD));
    int tiles = (M + s->bm - 1) / s->bm * ((s->n + s->bn - 1) / s->bn), grid = tiles < sm_count ? tiles : sm_count;
    if (grid_cap && grid > grid_cap)
        grid = grid_cap;
    int m32 = M;
    _Alignas(64) unsigned char amap[128]; /* plain A on wgmma: A's tensor map, the first argument */
    const bool tma = s->aplain && s->wgmma;
    if (tma)
        CU(pt_encode_amap(cu.TensorMapEncodeTiled, amap, s, dA, M, ld));
    void *args[] = {tma ? (void *)amap : (void *)&dA, &dW, &dP, &dT, &dD, &dY, &m32};
    CU(cu.LaunchKernel(f, (unsigned)grid, 1, 1, (unsigned)pt_threads(s), 1, 1, (unsigned)pt_smem(s), NULL, args,
                       NULL));
    CU(cu.CtxSynchronize());
    CU(cu.MemcpyDtoH(got, dY, ybytes + GUARD));
    size_t bad = 0, guard = 0;
    for (size_t i = 0; i < ybytes / 4; i++)
        bad += got[i] != want[i];
    for (size_t i = 0; i < GUARD; i++)
        guard += ((unsigned char *)got)[ybytes + i] != POISON;
    CHECK_MSG(bad == 0 && guard == 0,
              "spec %d (M=%d N=%d K=%d w%da%d%s epi %d, grid %d): %zu of %zu words differ, %zu guard bytes written",
              si, M, s->n, s->k, s->wb, s->xb, s->bipolar ? " bipolar" : "", s->epi, grid, bad, ybytes / 4, guard);
    CU(cu.MemFree(dA));
    CU(cu.MemFree(dW));
    CU(cu.MemFree(dY));
    if (dT)
        CU(cu.MemFree(dT));
    if (dD)
        CU(cu.MemFree(dD));
    if (dP)
        CU(cu.MemFree(dP));
    free(A);
    free(W);
    free(At);
    free(Wt);
    free(acc);
    free(t);
    free(dir);
    free(want);
    free(got);
}

/* ---------------------------------------------------------------- --bench */

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* Median ms of 20 launches after 3 warm-ups; prep (may be NULL) runs before each. */
static double time_ms(CUfunction prep, unsigned pgx, void **pargs, CUfunction f, unsigned gx, unsigned gy,
                      unsigned threads, unsigned smem, void **args) {
    CUevent e0, e1;
    CU(cu.EventCreate(&e0, 0));
    CU(cu.EventCreate(&e1, 0));
    float v[20];
    for (int i = -3; i < 20; i++) {
        CU(cu.EventRecord(e0, NULL));
        if (prep)
            CU(cu.LaunchKernel(prep, pgx, 1, 1, 32, 8, 1, 0, NULL, pargs, NULL));
        CU(cu.LaunchKernel(f, gx, gy, 1, threads, 1, 1, smem, NULL, args, NULL));
        CU(cu.EventRecord(e1, NULL));
        CU(cu.EventSynchronize(e1));
        if (i >= 0)
            CU(cu.EventElapsedTime(&v[i], e0, e1));
    }
    qsort(v, 20, sizeof *v, cmp_float);
    CU(cu.EventDestroy(e0));
    CU(cu.EventDestroy(e1));
    return (v[9] + v[10]) / 2;
}

static void report(const char *what, const char *kernel, double ms, double ops) {
    printf("bench %s 8192^3 %-34s %8.3f ms  %5.2f effective POPS\n", what, kernel, ms, ops / (ms * 1e-3) / 1e15);
}

static void bench_case(const char *what, PtSpec s) {
    const int M = 8192, N = s.n, K = s.k, L = s.l, YB = s.yb, ldy = (N + 255) / 256 * 8;
    const double ops = 2.0 * M * (double)N * K;
    pt_resolve(&s);
    uint32_t *A, *W;
    int ld;
    pt_random_operands(&s, M, &A, &W, &ld);
    void *At, *Wt;
    size_t ab, wb;
    pt_tile_operands(&s, A, W, M, ld, &At, &ab, &Wt, &wb);
    int32_t *t = xmalloc((size_t)N * L * 4), *dir = xmalloc((size_t)N * 4);
    /* Thresholds within about 1.5 standard deviations of the mean accumulator K*E[x]*E[u]. */
    const double ex = ((1 << s.xb) - 1) / 2.0, eu = s.bipolar ? 0 : s.wsigned ? -0.5 : ((1 << s.wb) - 1) / 2.0;
    for (int n = 0; n < N; n++) {
        dir[n] = pt_rnd(0, 1) ? 1 : -1;
        for (int l = 0; l < L; l++)
            t[n * L + l] = (int)(K * ex * eu) + pt_rnd(-300, 300);
    }
    const size_t ybytes = (size_t)M * YB * ldy * 4;
    const int wp = pt_wplanes(&s);
    CUdeviceptr dA = dupload(A, (size_t)M * s.xb * ld * 4), dW = dupload(W, (size_t)wp * N * ld * 4);
    CUdeviceptr dAt = dupload(At, ab), dWt = dupload(Wt, wb), dT = dupload(t, (size_t)N * L * 4);
    CUdeviceptr dD = dupload(dir, (size_t)N * 4), dP = dalloc((size_t)M * 4);
    CUdeviceptr dYold = dalloc(ybytes), dYnew = dalloc(ybytes);

    /* The old kernel: bgemm_planes.cu, one warp per 16 x 32 tile. */
    Buf b = {0};
    buf_printf(&b,
               "#define PL_NAME old\n#define PL_N %d\n#define PL_K %d\n#define PL_XB %d\n#define PL_WB %d\n"
               "#define PL_WSIGNED %d\n#define PL_WBIPOLAR %d\n#define PL_EPI 2\n#define PL_L %d\n#define PL_YB %d\n",
               N, K, s.xb, s.wb, s.wsigned, s.bipolar, L, YB);
    buf_puts(&b, bnn_bgemm_planes_cu);
    CUmodule mold = compile_module("old.cu", b.data);
    buf_free(&b);
    CUfunction fold;
    CU(cu.ModuleGetFunction(&fold, mold, "old"));
    int m32 = M;
    void *aold[] = {&dA, &dW, &m32, &dT, &dD, &dYold};
    double ms_old = time_ms(NULL, 0, NULL, fold, (unsigned)(N / 32), (unsigned)(M / 16), 32, 0, aold);
    report(what, "bgemm_planes.cu (old)", ms_old, ops);

    /* The tiled kernels (mma.sync, and wgmma on sm_90a), each also as its main loop alone;
     * each one's whole output against the old kernel's (its last timed run), word for word. */
    uint32_t *yo = xmalloc(ybytes), *yn = xmalloc(ybytes);
    CU(cu.MemcpyDtoH(yo, dYold, ybytes));
    /* pre-tiled A on mma.sync and wgmma; plain A (what bnncc emits) on both */
    static const struct {
        bool wgmma, aplain;
    } variants[] = {{false, false}, {true, false}, {false, true}, {true, true}};
    for (size_t variant = 0; variant < sizeof variants / sizeof *variants; variant++) {
        if (variants[variant].wgmma && !wgmma_ok)
            continue;
        PtSpec v = s;
        v.wgmma = variants[variant].wgmma;
        v.aplain = variants[variant].aplain;
        pt_resolve(&v);
        pt_head(&b, arch);
        pt_append(&b, "pt_bench", &v);
        v.nostore = true;
        pt_append(&b, "pt_bench_loop", &v);
        CUmodule mnew = compile_module("pt_bench.cu", b.data);
        buf_free(&b);
        CUfunction fnew, floop, prep;
        CU(cu.ModuleGetFunction(&fnew, mnew, "pt_bench"));
        CU(cu.ModuleGetFunction(&floop, mnew, "pt_bench_loop"));
        CU(cu.ModuleGetFunction(&prep, mnew, "bnn_planes_row_pop"));
        const int smem = pt_smem(&v), threads = pt_threads(&v);
        CU(cu.FuncSetAttribute(fnew, CU_FUNC_MAX_DYNAMIC_SMEM, smem));
        CU(cu.FuncSetAttribute(floop, CU_FUNC_MAX_DYNAMIC_SMEM, smem));
        int tiles = M / v.bm * ((N + v.bn - 1) / v.bn), grid = tiles < sm_count ? tiles : sm_count;
        int rows = M, xb = v.xb, tr = v.bm, nch = bnn_tiled_kpad(K, v.kc * 128) / 128;
        void *aprep[] = {&dAt, &rows, &xb, &tr, &nch, &dP};
        _Alignas(64) unsigned char amap[128];
        if (v.aplain && v.wgmma)
            CU(pt_encode_amap(cu.TensorMapEncodeTiled, amap, &v, dA, M, ld));
        void *anew[] = {v.aplain && v.wgmma ? (void *)amap : v.aplain ? (void *)&dA : (void *)&dAt, &dWt, &dP, &dT, &dD, &dYnew,
                        &m32};
        CU(cu.MemsetD8(dYnew, POISON, ybytes));
        CUfunction pf = v.bipolar && !v.aplain ? prep : NULL;
        double ms_new = time_ms(pf, (unsigned)(M + 31) / 32, aprep, fnew, (unsigned)grid, 1, threads, smem, anew);
        CU(cu.MemcpyDtoH(yn, dYnew, ybytes));
        double ms_loop = time_ms(NULL, 0, NULL, floop, (unsigned)grid, 1, threads, smem, anew);
        char kind[48], label[80];
        snprintf(kind, sizeof kind, "%s%s kc%d s%d", v.wgmma ? "wgmma" : "mma.sync",
                 v.aplain ? v.wgmma ? " plainA (TMA)" : " plainA" : "", v.kc, v.stages);
        snprintf(label, sizeof label, "planes_tiled %s%s", kind, pf ? " (+ row pop)" : "");
        report(what, label, ms_new, ops);
        snprintf(label, sizeof label, "planes_tiled %s main loop", kind);
        report(what, label, ms_loop, ops);
        printf("bench %s 8192^3 %s speed-up over the old kernel: %.2fx\n", what, kind, ms_old / ms_new);
        size_t bad = 0;
        for (size_t i = 0; i < ybytes / 4; i++)
            bad += yo[i] != yn[i];
        CHECK_MSG(bad == 0, "bench %s %s: the tiled and the old kernel differ in %zu of %zu words", what, kind,
                  bad, ybytes / 4);
        CU(cu.ModuleUnload(mnew));
    }

    /* 8 rows of the old kernel's output against the CPU (the tiled ones equal it, above). */
    const int rows8 = 8, m0 = 4093;
    uint32_t *want = xmalloc((size_t)rows8 * YB * ldy * 4);
    rt_cpu_qgemm_planes(A + (size_t)m0 * s.xb * ld, W, rows8, N, ld, s.xb, s.wb, s.wsigned, s.bipolar, NULL, t, dir, L,
                        YB, want);
    CHECK_MSG(!memcmp(want, yo + (size_t)m0 * YB * ldy, (size_t)rows8 * YB * ldy * 4),
              "bench %s: rows %d..%d differ from the CPU", what, m0, m0 + rows8 - 1);
    size_t ones = 0;
    for (size_t i = 0; i < ybytes / 4; i++)
        ones += (size_t)__builtin_popcount(yo[i]);
    printf("bench %s 8192^3 outputs: checked (%zu words each), %d rows == CPU, %.1f%% of code bits set\n", what,
           ybytes / 4, rows8, 100.0 * (double)ones / ((double)M * YB * N));
    CU(cu.ModuleUnload(mold));
    CU(cu.MemFree(dA));
    CU(cu.MemFree(dW));
    CU(cu.MemFree(dAt));
    CU(cu.MemFree(dWt));
    CU(cu.MemFree(dT));
    CU(cu.MemFree(dD));
    CU(cu.MemFree(dP));
    CU(cu.MemFree(dYold));
    CU(cu.MemFree(dYnew));
    free(A);
    free(W);
    free(At);
    free(Wt);
    free(t);
    free(dir);
    free(yo);
    free(yn);
    free(want);
}

int main(int argc, char **argv) {
    CUdevice dev;
    int rc = load_driver("test_planes_tiled_gpu", &dev);
    if (rc)
        return rc;
    int major = 0, minor = 0;
    CU(cu.DeviceGetAttribute(&major, CU_ATTR_CC_MAJOR, dev));
    CU(cu.DeviceGetAttribute(&minor, CU_ATTR_CC_MINOR, dev));
    CU(cu.DeviceGetAttribute(&sm_count, CU_ATTR_MULTIPROCESSOR_COUNT, dev));
    if (major < 8) {
        printf("test_planes_tiled_gpu: skipped: the b1 MMA needs sm_80 (device sm_%d%d)\n", major, minor);
        return 77;
    }
    wgmma_ok = major == 9 && minor == 0;
    if (wgmma_ok && !cu.TensorMapEncodeTiled) { /* plain A on wgmma comes by TMA */
        printf("test_planes_tiled_gpu: FAIL: an sm_90 device but a driver without cuTensorMapEncodeTiled\n");
        return 1;
    }
    snprintf(arch, sizeof arch, "sm_%d%d%s", major, minor, major == 9 && minor == 0 ? "a" : "");
    if (nvrtc_load() != 0) {
        printf("test_planes_tiled_gpu: skipped: %s\n", diag_message());
        return 77;
    }
    Buf b = {0};
    pt_head(&b, arch);
    PtSpec rs[NSPECS];
    int nk = 0;
    for (int i = 0; i < NSPECS; i++) {
        rs[i] = specs[i];
        pt_resolve(&rs[i]);
        if (rs[i].wgmma && !wgmma_ok)
            continue;
        char name[32];
        snprintf(name, sizeof name, "pt_%d", i);
        pt_append(&b, name, &rs[i]);
        nk++;
    }
    CUmodule mod = compile_module("bgemm_planes_tiled.cu", b.data);
    buf_free(&b);
    for (int rep = 0; rep < 4; rep++)
        for (int i = 0; i < NSPECS; i++)
            if (!rs[i].wgmma || wgmma_ok)
                run_spec(mod, i, &rs[i], rep == 0 ? pt_rnd(1, 20) : pt_rnd(1, 700), rep % 2 ? 3 : 0);
    CU(cu.ModuleUnload(mod));
    printf("test_planes_tiled_gpu: %s, %d kernels x 4 random shapes\n", arch, nk);
    if (argc > 1 && !strcmp(argv[1], "--bench")) { /* --bench [w1a2,w2a2,w4a4]: the cases named */
        const char *only = argc > 2 ? argv[2] : "w1a2,w2a2,w4a4";
        if (strstr(only, "w1a2"))
            bench_case("w1a2", (PtSpec){.n = 8192, .k = 8192, .xb = 2, .wb = 1, .wsigned = 1, .bipolar = 1, .epi = 2,
                                        .l = 3, .yb = 2});
        if (strstr(only, "w2a2"))
            bench_case("w2a2",
                       (PtSpec){.n = 8192, .k = 8192, .xb = 2, .wb = 2, .wsigned = 1, .epi = 2, .l = 3, .yb = 2});
        if (strstr(only, "w4a4"))
            bench_case("w4a4",
                       (PtSpec){.n = 8192, .k = 8192, .xb = 4, .wb = 4, .wsigned = 1, .epi = 2, .l = 15, .yb = 4});
    }
    return check_report("test_planes_tiled_gpu");
}
