/* test_planes_gpu: bgemm_planes.cu on a GPU (driver API through dlopen, as the runtime does)
 * against the runtime's CPU bit-plane GEMM (rt_cpu_qgemm_planes, itself checked against a plain
 * integer GEMM by test_planes_cpu): signed, unsigned and bipolar weight planes, int32 output and
 * thresholds written as output bit-planes, odd M, N, K. Every output word must be identical.
 * Exit 77 (skipped) without a CUDA driver, a GPU or libnvrtc. With --bench it also times w1a2 and
 * w2a2 at 8192^3 (effective POPS; the simple kernel, not the tiled pipeline). */
#include <dlfcn.h>
#include <time.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "ir.h"
#include "nvrtc.h"
#include "rt.h"
#include "util.h"

extern const char bnn_bgemm_planes_cu[];

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;

static struct {
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
} cu;

#define CU(call)                                                                          \
    do {                                                                                  \
        CUresult r_ = (call);                                                             \
        if (r_ != 0) {                                                                    \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, r_);     \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

/* 0 ok, 77 without a driver or a GPU; the architecture to compile for in arch. */
static int load_driver(char *arch, size_t len) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("test_planes_gpu: skipped: no CUDA driver\n");
        return 77;
    }
    struct {
        const char *sym;
        void **slot;
    } fns[] = {
        {"cuInit", (void **)&cu.Init},
        {"cuDeviceGetCount", (void **)&cu.DeviceGetCount},
        {"cuDeviceGet", (void **)&cu.DeviceGet},
        {"cuDeviceGetAttribute", (void **)&cu.DeviceGetAttribute},
        {"cuDevicePrimaryCtxRetain", (void **)&cu.DevicePrimaryCtxRetain},
        {"cuCtxSetCurrent", (void **)&cu.CtxSetCurrent},
        {"cuCtxSynchronize", (void **)&cu.CtxSynchronize},
        {"cuMemAlloc_v2", (void **)&cu.MemAlloc},
        {"cuMemFree_v2", (void **)&cu.MemFree},
        {"cuMemcpyHtoD_v2", (void **)&cu.MemcpyHtoD},
        {"cuMemcpyDtoH_v2", (void **)&cu.MemcpyDtoH},
        {"cuModuleLoadData", (void **)&cu.ModuleLoadData},
        {"cuModuleUnload", (void **)&cu.ModuleUnload},
        {"cuModuleGetFunction", (void **)&cu.ModuleGetFunction},
        {"cuLaunchKernel", (void **)&cu.LaunchKernel},
    };
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        void *p = dlsym(lib, fns[i].sym);
        if (!p) {
            fprintf(stderr, "libcuda.so.1 has no %s\n", fns[i].sym);
            return 1;
        }
        memcpy(fns[i].slot, &p, sizeof p);
    }
    int n = 0;
    if (cu.Init(0) != 0 || cu.DeviceGetCount(&n) != 0 || n == 0) {
        printf("test_planes_gpu: skipped: no GPU\n");
        return 77;
    }
    CUdevice dev;
    CUcontext ctx;
    int major = 0, minor = 0;
    CU(cu.DeviceGet(&dev, 0));
    CU(cu.DeviceGetAttribute(&major, 75, dev));
    CU(cu.DeviceGetAttribute(&minor, 76, dev));
    if (major < 8) {
        printf("test_planes_gpu: skipped: the b1 MMA needs sm_80 (device sm_%d%d)\n", major, minor);
        return 77;
    }
    snprintf(arch, len, "sm_%d%d%s", major, minor, major == 9 && minor == 0 ? "a" : "");
    CU(cu.DevicePrimaryCtxRetain(&ctx, dev));
    CU(cu.CtxSetCurrent(ctx));
    return 0;
}

static uint32_t rng_state = 777;
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

/* Device copy of h (n bytes); h NULL: an allocation left for the kernel to fill. */
static CUdeviceptr upload(const void *h, size_t n) {
    CUdeviceptr p;
    CU(cu.MemAlloc(&p, n ? n : 4));
    if (n && h)
        CU(cu.MemcpyHtoD(p, h, n));
    return p;
}

typedef struct Spec {
    int n, k, xb, wb, wsigned, bipolar, epi, l, yb;
} Spec;

static const Spec specs[] = {
    {64, 784, 2, 1, 1, 1, 2, 3, 2}, {64, 64, 2, 2, 1, 0, 2, 3, 2}, {10, 64, 2, 2, 1, 0, 1, 1, 1},
    {257, 1000, 8, 8, 1, 0, 2, 255, 8}, {33, 3, 3, 3, 0, 0, 1, 1, 1},
    {70, 300, 4, 1, 1, 0, 1, 1, 1},
};

static void run_spec(CUmodule mod, int si, const Spec *s) {
    int64_t M = rnd(1, 70), N = s->n, K = s->k, ld = (K + 255) / 256 * 8;
    int *x = xmalloc((size_t)(M * K) * sizeof *x), *u = xmalloc((size_t)(N * K) * sizeof *u);
    for (int64_t i = 0; i < M * K; i++)
        x[i] = rnd(0, (1 << s->xb) - 1);
    for (int64_t i = 0; i < N * K; i++)
        u[i] = s->bipolar   ? rnd(0, 1)
               : s->wsigned ? rnd(-(1 << (s->wb - 1)), (1 << (s->wb - 1)) - 1)
                            : rnd(0, (1 << s->wb) - 1);
    uint32_t *A = xmalloc((size_t)(s->xb * M * ld) * 4), *W = xmalloc((size_t)(s->wb * N * ld) * 4);
    for (int p = 0; p < s->xb; p++)
        pack_plane(x, M, K, ld, p, s->xb, p, A);
    for (int q = 0; q < s->wb; q++)
        pack_plane(u, N, K, ld, q, 1, 0, W + q * N * ld);
    int32_t *acc = xmalloc((size_t)(M * N) * 4);
    rt_cpu_qgemm_planes(A, W, M, N, ld, s->xb, s->wb, s->wsigned, s->bipolar, acc, NULL, NULL, 0,
                        0, NULL);
    int32_t *t = xmalloc((size_t)(N * s->l) * 4);
    int32_t *dir = xmalloc((size_t)N * sizeof *dir);
    for (int64_t n = 0; n < N; n++) {
        dir[n] = rnd(0, 1) ? 1 : -1;
        for (int l = 0; l < s->l; l++) /* around the accumulators the data gives */
            t[n * s->l + l] = acc[rnd(0, (int)(M * N - 1))] + rnd(-3, 3);
    }
    int64_t ldy = (N + 255) / 256 * 8;
    size_t ybytes = s->epi == 1 ? (size_t)(M * N) * 4 : (size_t)(s->yb * M * ldy) * 4;
    uint32_t *want = xmalloc(ybytes), *got = xmalloc(ybytes);
    if (s->epi == 1)
        memcpy(want, acc, ybytes);
    else
        rt_cpu_qgemm_planes(A, W, M, N, ld, s->xb, s->wb, s->wsigned, s->bipolar, NULL, t, dir,
                            s->l, s->yb, want);
    CUdeviceptr dA = upload(A, (size_t)(s->xb * M * ld) * 4);
    CUdeviceptr dW = upload(W, (size_t)(s->wb * N * ld) * 4);
    CUdeviceptr dT = upload(t, (size_t)(N * s->l) * 4), dD = upload(dir, (size_t)N * 4);
    CUdeviceptr dY = upload(NULL, ybytes);
    int m32 = (int)M;
    void *args[] = {&dA, &dW, &m32, &dT, &dD, &dY};
    char name[32];
    snprintf(name, sizeof name, "planes_%d", si);
    CUfunction f;
    CU(cu.ModuleGetFunction(&f, mod, name));
    CU(cu.LaunchKernel(f, (unsigned)((N + 31) / 32), (unsigned)((M + 15) / 16), 1, 32, 1, 1, 0,
                       NULL, args, NULL));
    CU(cu.CtxSynchronize());
    CU(cu.MemcpyDtoH(got, dY, ybytes));
    size_t bad = 0;
    for (size_t i = 0; i < ybytes / 4; i++)
        bad += got[i] != want[i];
    CHECK_MSG(bad == 0, "spec %d (M=%lld N=%d K=%d w%d a%d epi %d): %zu of %zu words differ", si,
              (long long)M, s->n, s->k, s->wb, s->xb, s->epi, bad, ybytes / 4);
    CU(cu.MemFree(dA));
    CU(cu.MemFree(dW));
    CU(cu.MemFree(dT));
    CU(cu.MemFree(dD));
    CU(cu.MemFree(dY));
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

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* --bench: w1a2 (bipolar) and w2a2 at 8192^3 with the planes epilogue, median of 10 launches,
 * as effective ops (2*M*N*K). Random data, not checked: the shapes above are. */
static void bench(const char *arch) {
    static const struct {
        const char *what;
        int xb, wb, bipolar;
    } cases[] = {{"w1a2", 2, 1, 1}, {"w2a2", 2, 2, 0}};
    const int64_t M = 8192, N = 8192, K = 8192, ld = K / 32;
    for (int c = 0; c < 2; c++) {
        Buf b = {0};
        buf_printf(&b,
                   "#define PL_NAME bench\n#define PL_N %lld\n#define PL_K %lld\n#define PL_XB %d\n"
                   "#define PL_WB %d\n#define PL_WBIPOLAR %d\n#define PL_EPI 2\n#define PL_L 3\n"
                   "#define PL_YB 2\n",
                   (long long)N, (long long)K, cases[c].xb, cases[c].wb, cases[c].bipolar);
        buf_puts(&b, bnn_bgemm_planes_cu);
        NvrtcOutput out;
        if (nvrtc_compile("bench.cu", b.data, arch, NULL, 0, false, &out) != 0) {
            fprintf(stderr, "%s\n", diag_message());
            exit(1);
        }
        CUmodule mod;
        CUfunction f;
        CU(cu.ModuleLoadData(&mod, out.cubin));
        CU(cu.ModuleGetFunction(&f, mod, "bench"));
        size_t abytes = (size_t)(M * cases[c].xb * ld) * 4;
        size_t wbytes = (size_t)(cases[c].wb * N * ld) * 4;
        uint32_t *h = xmalloc(abytes > wbytes ? abytes : wbytes);
        for (size_t i = 0; i < (abytes > wbytes ? abytes : wbytes) / 4; i++)
            h[i] = (uint32_t)rnd(0, 0x7fffffff) * 2u + (uint32_t)rnd(0, 1);
        int32_t *t = xmalloc((size_t)N * 3 * 4), *dir = xmalloc((size_t)N * 4);
        for (int64_t i = 0; i < N * 3; i++)
            t[i] = rnd(-2000, 2000);
        for (int64_t i = 0; i < N; i++)
            dir[i] = 1;
        CUdeviceptr dA = upload(h, abytes), dW = upload(h, wbytes), dT = upload(t, (size_t)N * 12);
        CUdeviceptr dD = upload(dir, (size_t)N * 4);
        CUdeviceptr dY = upload(NULL, (size_t)(M * 2 * (N / 32)) * 4);
        int m32 = (int)M;
        void *args[] = {&dA, &dW, &m32, &dT, &dD, &dY};
        double times[10];
        for (int r = -2; r < 10; r++) {
            double t0 = now_s();
            CU(cu.LaunchKernel(f, (unsigned)(N / 32), (unsigned)(M / 16), 1, 32, 1, 1, 0, NULL,
                               args, NULL));
            CU(cu.CtxSynchronize());
            if (r >= 0)
                times[r] = now_s() - t0;
        }
        for (int i = 0; i < 10; i++) /* median: sort the ten */
            for (int j = i + 1; j < 10; j++)
                if (times[j] < times[i]) {
                    double x = times[i];
                    times[i] = times[j];
                    times[j] = x;
                }
        double med = (times[4] + times[5]) / 2;
        printf("bench %s 8192^3 (planes out): %.3f ms, %.2f effective POPS\n", cases[c].what,
               med * 1e3, 2.0 * (double)M * (double)N * (double)K / med / 1e15);
        CU(cu.MemFree(dA));
        CU(cu.MemFree(dW));
        CU(cu.MemFree(dT));
        CU(cu.MemFree(dD));
        CU(cu.MemFree(dY));
        CU(cu.ModuleUnload(mod));
        nvrtc_output_free(&out);
        buf_free(&b);
        free(h);
        free(t);
        free(dir);
    }
}

int main(int argc, char **argv) {
    char arch[16];
    int rc = load_driver(arch, sizeof arch);
    if (rc)
        return rc;
    if (nvrtc_load() != 0) {
        printf("test_planes_gpu: skipped: %s\n", diag_message());
        return 77;
    }
    int nk = (int)(sizeof specs / sizeof *specs);
    Buf b = {0};
    for (int i = 0; i < nk; i++) {
        const Spec *s = &specs[i];
        buf_printf(&b,
                   "#define PL_NAME planes_%d\n#define PL_N %d\n#define PL_K %d\n#define PL_XB %d\n"
                   "#define PL_WB %d\n#define PL_WSIGNED %d\n#define PL_WBIPOLAR %d\n"
                   "#define PL_EPI %d\n#define PL_L %d\n#define PL_YB %d\n",
                   i, s->n, s->k, s->xb, s->wb, s->wsigned, s->bipolar, s->epi, s->l, s->yb);
        buf_puts(&b, bnn_bgemm_planes_cu);
        buf_puts(&b, "\n");
    }
    NvrtcOutput out;
    if (nvrtc_compile("bgemm_planes.cu", b.data, arch, NULL, 0, false, &out) != 0) {
        fprintf(stderr, "%s: %s\n", arch, diag_message());
        return 1;
    }
    CUmodule mod;
    CU(cu.ModuleLoadData(&mod, out.cubin));
    for (int rep = 0; rep < 4; rep++)
        for (int i = 0; i < nk; i++)
            run_spec(mod, i, &specs[i]);
    CU(cu.ModuleUnload(mod));
    nvrtc_output_free(&out);
    buf_free(&b);
    printf("test_planes_gpu: %s, %d kernels x 4 random shapes\n", arch, nk);
    if (argc > 1 && !strcmp(argv[1], "--bench"))
        bench(arch);
    return check_report("test_planes_gpu");
}
