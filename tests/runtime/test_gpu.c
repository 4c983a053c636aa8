/* test_gpu.c: the runtime's GPU path. The hand-built test models get one plain CUDA kernel
 * per step (gpu_kernels.cu plus a generated wrapper that bakes the step's parameters in),
 * compiled by NVRTC for this GPU and put in the blob as its CUBIN; the GPU session's outputs
 * must equal the CPU session's and the plain C reference bit for bit, at several batch sizes,
 * each run twice (CUDA graph capture, then replay), and resident runs on the session's own
 * device buffers (written and read here through the driver) equal them too. Error paths on a real GPU: no CUBIN for
 * its architecture (the message lists what the blob has and the --target to use), a damaged
 * CUBIN, a kernel missing from the CUBIN, an arena larger than GPU memory.
 *
 * Exit 77 (skipped) when libcuda.so.1 cannot be opened or there is no GPU, or without NVRTC.
 * `test_gpu --compile-only` needs no driver: it compiles the generated kernels for sm_90a and
 * sm_80 with NVRTC (the quick suite runs it; 77 without NVRTC). */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "bnnrt.h"
#include "check.h"
#include "testmodels.h"

/* ---------------------------------------------------------------- NVRTC by dlopen */

typedef struct _nvrtcProgram *nvrtcProgram;
static struct {
    int (*Create)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                  const char *const *);
    int (*Compile)(nvrtcProgram, int, const char *const *);
    int (*LogSize)(nvrtcProgram, size_t *);
    int (*Log)(nvrtcProgram, char *);
    int (*CubinSize)(nvrtcProgram, size_t *);
    int (*Cubin)(nvrtcProgram, char *);
    int (*Destroy)(nvrtcProgram *);
} nv;

static bool load_nvrtc(void) {
    static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
    void *lib = NULL;
    for (size_t i = 0; i < sizeof names / sizeof *names && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return false;
    void *syms[7];
    static const char *const fn[] = {"nvrtcCreateProgram", "nvrtcCompileProgram",
                                     "nvrtcGetProgramLogSize", "nvrtcGetProgramLog",
                                     "nvrtcGetCUBINSize", "nvrtcGetCUBIN", "nvrtcDestroyProgram"};
    for (int i = 0; i < 7; i++)
        if (!(syms[i] = dlsym(lib, fn[i])))
            return false;
    memcpy(&nv.Create, &syms[0], sizeof syms[0]);
    memcpy(&nv.Compile, &syms[1], sizeof syms[1]);
    memcpy(&nv.LogSize, &syms[2], sizeof syms[2]);
    memcpy(&nv.Log, &syms[3], sizeof syms[3]);
    memcpy(&nv.CubinSize, &syms[4], sizeof syms[4]);
    memcpy(&nv.Cubin, &syms[5], sizeof syms[5]);
    memcpy(&nv.Destroy, &syms[6], sizeof syms[6]);
    return true;
}

/* CUBIN for arch ("sm_90a") into *out, or false with NVRTC's log printed. */
static bool compile(const char *src, const char *arch, Buf *out) {
    nvrtcProgram prog;
    if (nv.Create(&prog, src, "gpu_kernels.cu", 0, NULL, NULL) != 0)
        return false;
    char opt[64];
    snprintf(opt, sizeof opt, "--gpu-architecture=%s", arch);
    const char *opts[] = {opt, "--fmad=false", "--std=c++17"};
    int rc = nv.Compile(prog, 3, opts);
    size_t n = 0;
    if (rc != 0) {
        nv.LogSize(prog, &n);
        char *log = xmalloc(n + 1);
        nv.Log(prog, log);
        fprintf(stderr, "test_gpu: NVRTC failed for %s:\n%s\n", arch, log);
        free(log);
        nv.Destroy(&prog);
        return false;
    }
    nv.CubinSize(prog, &n);
    char *cubin = xmalloc(n ? n : 1);
    nv.Cubin(prog, cubin);
    buf_put(out, cubin, n);
    free(cubin);
    nv.Destroy(&prog);
    return n > 0;
}

/* ---------------------------------------------------------------- kernels for the plan */

typedef struct Gen {
    Buf src;          /* the generated wrappers */
    const Buf *cubin; /* second pass: the CUBIN to add */
    char arch[16];
    bool skip_last;   /* leave the last step without a kernel */
} Gen;

static const char *kernel_fn(uint32_t kind) {
    switch (kind) {
    case BLOB_STEP_PACK: return "k_pack";
    case BLOB_STEP_UNPACK: return "k_unpack";
    case BLOB_STEP_BGEMM: return "k_bgemm";
    case BLOB_STEP_BCONV: return "k_bconv";
    case BLOB_STEP_DENSE: return "k_dense";
    case BLOB_STEP_CONV2D: return "k_conv2d";
    case BLOB_STEP_AFFINE: return "k_affine";
    case BLOB_STEP_MAXPOOL: return "k_maxpool";
    case BLOB_STEP_AVGPOOL: return "k_avgpool";
    case BLOB_STEP_GLOBALAVGPOOL: return "k_globalavgpool";
    case BLOB_STEP_ADD: return "k_add";
    case BLOB_STEP_RELU: return "k_relu";
    case BLOB_STEP_COPY: return "k_copy";
    case BLOB_STEP_ARGMAX: return "k_argmax";
    case BLOB_STEP_CAST: return "k_cast";
    }
    return NULL;
}

/* Threads per batch item: one per output element (per output word for bits). */
static int64_t per_item(const BlobStep *s) {
    bool bits = s->epilogue == BLOB_EPI_THRESHOLD;
    switch (s->kind) {
    case BLOB_STEP_PACK: return s->pack.spatial * s->pack.words;
    case BLOB_STEP_UNPACK: return s->unpack.channels * s->unpack.spatial;
    case BLOB_STEP_BGEMM: return s->bgemm.rows * (bits ? s->bgemm.out_words : s->bgemm.n);
    case BLOB_STEP_BCONV: {
        int64_t f = s->bconv.pool ? 2 : 1;
        return (s->bconv.oh / f) * (s->bconv.ow / f) * (bits ? s->bconv.out_words : s->bconv.o);
    }
    case BLOB_STEP_DENSE: return s->dense.rows * s->dense.n;
    case BLOB_STEP_CONV2D: return s->conv2d.o * s->conv2d.oh * s->conv2d.ow;
    case BLOB_STEP_AFFINE: return s->affine.channels * s->affine.spatial;
    case BLOB_STEP_MAXPOOL:
    case BLOB_STEP_AVGPOOL: return s->pool.c * s->pool.oh * s->pool.ow;
    case BLOB_STEP_GLOBALAVGPOOL: return s->gap.channels;
    case BLOB_STEP_ADD: return s->add.count;
    case BLOB_STEP_RELU: return s->relu.count;
    case BLOB_STEP_COPY: return s->copy.bytes;
    case BLOB_STEP_ARGMAX: return s->argmax.rows;
    case BLOB_STEP_CAST: return s->cast.count;
    }
    return 1;
}

static void gen_kernel(BlobWriter *w, BlobStep *s, int index, void *user) {
    Gen *g = user;
    if (index == 0 && g->cubin)
        blob_add_cubin(w, g->arch, g->cubin->data, g->cubin->len);
    if (g->skip_last && s->kind == BLOB_STEP_ARGMAX)
        return;
    char name[32];
    snprintf(name, sizeof name, "step%d", index);
    BlobGridDim grid[3] = {{0, (uint32_t)per_item(s), 128}, {1, 0, 1}, {1, 0, 1}};
    uint32_t block[3] = {128, 1, 1};
    blob_step_set_kernel(s, name, grid, block, 0);
    static const int slots[6] = {BLOB_SLOT_IN, BLOB_SLOT_IN2, BLOB_SLOT_OUT,
                                 BLOB_SLOT_W, BLOB_SLOT_P0, BLOB_SLOT_P1};
    for (int i = 0; i < 6; i++) {
        if (s->slot[slots[i]].space == BLOB_SPACE_NONE)
            blob_step_add_arg(s, BLOB_ARG_I64, 0, 0); /* a null pointer */
        else
            blob_step_add_arg(s, BLOB_ARG_PTR, (uint32_t)slots[i], 0);
    }
    blob_step_add_arg(s, BLOB_ARG_BATCH, 0, 1);

    buf_printf(&g->src, "__device__ const i64 %s_p[%d] = {", name, BLOB_MAX_PARAMS);
    for (int i = 0; i < BLOB_MAX_PARAMS; i++)
        buf_printf(&g->src, "%s%lldll", i ? ", " : "", (long long)s->params[i]);
    buf_printf(&g->src, "};\n__device__ const i64 %s_b[6] = {", name);
    for (int i = 0; i < 6; i++) {
        const BlobRef *r = &s->slot[slots[i]];
        buf_printf(&g->src, "%s%llu", i ? ", " : "",
                   r->space == BLOB_SPACE_ARENA ? (unsigned long long)r->bytes : 0ull);
    }
    buf_printf(&g->src, "};\nextern \"C\" __global__ void %s(char *in, char *in2, char *out, char *w, "
               "char *p0, char *p1, int batch) {\n    const i64 t = (i64)blockIdx.x * blockDim.x + "
               "threadIdx.x;\n", name);
    if (s->kind == BLOB_STEP_BGEMM || s->kind == BLOB_STEP_BCONV)
        buf_printf(&g->src, "    %s(%s_p, %s_b, %u, t, batch, in, out, w, p0, p1);\n}\n",
                   kernel_fn(s->kind), name, name, s->epilogue);
    else
        buf_printf(&g->src, "    %s(%s_p, %s_b, t, batch, in, in2, out, w, p0, p1);\n}\n",
                   kernel_fn(s->kind), name, name);
}

static char *read_text(const char *path) {
    size_t n;
    char *s = read_file(path, &n);
    if (!s)
        fprintf(stderr, "test_gpu: cannot read %s\n", path);
    return s;
}

/* The full source for one model: gpu_kernels.cu, then its wrappers. */
static char *model_source(bool conv, Gen *g) {
    char path[4096];
    const char *root = getenv("BNN_SOURCE_ROOT");
    snprintf(path, sizeof path, "%s/tests/runtime/gpu_kernels.cu", root ? root : ".");
    char *base = read_text(path);
    if (!base)
        return NULL;
    Buf blob = {0};
    if (conv) {
        TestConv r;
        build_conv(2, &blob, &r, gen_kernel, g);
        free_conv(&r);
    } else {
        TestMlp r;
        build_mlp(1, &blob, &r, gen_kernel, g);
        free_mlp(&r);
    }
    buf_free(&blob);
    Buf all = {0};
    buf_puts(&all, base);
    buf_put(&all, g->src.data, g->src.len);
    free(base);
    return buf_take(&all);
}

/* ---------------------------------------------------------------- the driver, for resident runs */

static struct {
    int (*DeviceGet)(int *, int);
    int (*Retain)(void **, int);
    int (*Release)(int);
    int (*Push)(void *);
    int (*Pop)(void **);
    int (*HtoD)(unsigned long long, const void *, size_t);
    int (*DtoH)(void *, unsigned long long, size_t);
    int (*Memset)(unsigned long long, unsigned char, size_t);
    int (*Sync)(void);
} cu;

static bool load_driver_copies(void) {
    if (cu.Sync)
        return true;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    static const char *const fn[] = {"cuDeviceGet", "cuDevicePrimaryCtxRetain",
                                     "cuDevicePrimaryCtxRelease_v2", "cuCtxPushCurrent_v2",
                                     "cuCtxPopCurrent_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2",
                                     "cuMemsetD8_v2", "cuCtxSynchronize"};
    void *syms[9];
    for (int i = 0; i < 9; i++)
        if (!lib || !(syms[i] = dlsym(lib, fn[i])))
            return false;
    memcpy(&cu.DeviceGet, &syms[0], sizeof syms[0]);
    memcpy(&cu.Retain, &syms[1], sizeof syms[1]);
    memcpy(&cu.Release, &syms[2], sizeof syms[2]);
    memcpy(&cu.Push, &syms[3], sizeof syms[3]);
    memcpy(&cu.Pop, &syms[4], sizeof syms[4]);
    memcpy(&cu.HtoD, &syms[5], sizeof syms[5]);
    memcpy(&cu.DtoH, &syms[6], sizeof syms[6]);
    memcpy(&cu.Memset, &syms[7], sizeof syms[7]);
    memcpy(&cu.Sync, &syms[8], sizeof syms[8]);
    return true;
}

static unsigned long long dev_ptr(void *p) { return (unsigned long long)(uintptr_t)p; }

/* Resident runs of batch n: the inputs written into the session's input buffers, the output
 * buffers filled with a pattern (every byte must be written), two runs (the first may
 * capture the graph), each read back: outputs equal want (the CPU session's), inputs kept. */
static void check_resident(bnn_session *gpu, int n, int nin, int nout, void *const *in,
                           void *const *want, const size_t *in_item, const size_t *out_item) {
    int dev = 0;
    void *ctx = NULL, *popped;
    if (!load_driver_copies() || cu.DeviceGet(&dev, 0) || cu.Retain(&ctx, dev) || cu.Push(ctx)) {
        CHECK_MSG(0, "the driver's copy functions for the resident test");
        return;
    }
    void *ib[4] = {0}, *ob[4] = {0};
    bool ok = true;
    for (int i = 0; i < nin; i++) {
        ok = ok && bnn_session_input_buffer(gpu, i, n, &ib[i]) == BNN_STATUS_OK && ib[i];
        ok = ok && !cu.HtoD(dev_ptr(ib[i]), in[i], in_item[i] * (size_t)n);
    }
    for (int i = 0; i < nout; i++) {
        ok = ok && bnn_session_output_buffer(gpu, i, n, &ob[i]) == BNN_STATUS_OK && ob[i];
        ok = ok && !cu.Memset(dev_ptr(ob[i]), 0xa5, out_item[i] * (size_t)n);
    }
    /* A pageable cuMemcpyHtoD and cuMemsetD8 may return before the data lands, and the
     * session's stream does not wait for them: the caller synchronizes (docs/runtime.md). */
    ok = ok && !cu.Sync();
    CHECK_MSG(ok, "resident buffers at batch %d: %s", n, bnn_last_error());
    bnn_session_set_device_timing(gpu, 0); /* the wall clock */
    for (int rep = 0; ok && rep < 2; rep++) {
        bnn_status st = bnn_session_run_resident(gpu, n);
        CHECK_MSG(st == BNN_STATUS_OK, "resident run at batch %d: %s", n, bnn_last_error());
        CHECK(bnn_session_last_run_ms(gpu) > 0.0);
        for (int i = 0; st == BNN_STATUS_OK && i < nout; i++) {
            size_t bytes = out_item[i] * (size_t)n;
            void *got = xmalloc(bytes);
            CHECK(!cu.DtoH(got, dev_ptr(ob[i]), bytes));
            CHECK_MSG(!memcmp(got, want[i], bytes),
                      "resident output %d differs from the CPU at batch %d (run %d)", i, n, rep);
            free(got);
        }
        for (int i = 0; st == BNN_STATUS_OK && i < nin; i++) {
            size_t bytes = in_item[i] * (size_t)n;
            void *got = xmalloc(bytes);
            CHECK(!cu.DtoH(got, dev_ptr(ib[i]), bytes));
            CHECK_MSG(!memcmp(got, in[i], bytes), "a resident run changed input %d", i);
            free(got);
        }
    }
    bnn_session_set_device_timing(gpu, 1);
    cu.Pop(&popped);
    cu.Release(dev);
}

/* ---------------------------------------------------------------- runs */

/* A profiled GPU run (steps launched without the graph, an event after each) gives the CPU
 * path's outputs and a time for every step the GPU runs; off again, the graph replays. */
static void check_profiled(bnn_session *gpu, const bnn_model *m, int n, void *const *in, void *const *oc,
                           int nout, const size_t *out_item) {
    void *op[4];
    for (int i = 0; i < nout; i++)
        op[i] = xcalloc((size_t)n, out_item[i]);
    CHECK(bnn_session_set_profiling(gpu, 1) == BNN_STATUS_OK);
    bnn_status st = bnn_session_run(gpu, n, (const void *const *)in, op);
    CHECK_MSG(st == BNN_STATUS_OK, "profiled GPU run: %s", bnn_last_error());
    for (int i = 0; st == BNN_STATUS_OK && i < nout; i++)
        CHECK_MSG(!memcmp(op[i], oc[i], out_item[i] * (size_t)n),
                  "output %d of a profiled GPU run differs from the CPU path at batch %d", i, n);
    double sum = 0.0;
    for (int k = 0; st == BNN_STATUS_OK && k < bnn_model_num_steps(m); k++) {
        bnn_step_info info;
        bnn_model_step_info(m, k, &info);
        double ms = bnn_session_step_ms(gpu, k);
        CHECK_MSG(info.on_gpu ? ms >= 0.0 : ms == -1.0, "step %d (%s): %g ms", k, info.kind, ms);
        sum += ms > 0 ? ms : 0.0;
    }
    CHECK_MSG(sum > 0.0, "the profiled steps took %g ms", sum);
    printf("test_gpu: profiled batch %d: steps %.3f ms\n", n, sum);
    CHECK(bnn_session_set_profiling(gpu, 0) == BNN_STATUS_OK);
    CHECK(bnn_session_run(gpu, n, (const void *const *)in, op) == BNN_STATUS_OK);
    for (int i = 0; i < nout; i++) {
        CHECK(!memcmp(op[i], oc[i], out_item[i] * (size_t)n));
        free(op[i]);
    }
}

/* Graph runs without a step (bnn_session_set_graph_omit, what bnnrun --profile-graph times):
 * accepted for every step the GPU runs, refused past the plan; the full graph again (-1)
 * gives the CPU path's outputs. */
static void check_graph_omit(bnn_session *gpu, const bnn_model *m, int n, void *const *in, void *const *oc,
                             int nout, const size_t *out_item) {
    void *op[4];
    for (int i = 0; i < nout; i++)
        op[i] = xcalloc((size_t)n, out_item[i]);
    int omitted = 0;
    for (int k = 0; k < bnn_model_num_steps(m); k++) {
        bnn_step_info info;
        bnn_model_step_info(m, k, &info);
        if (!info.on_gpu)
            continue;
        CHECK_MSG(bnn_session_set_graph_omit(gpu, k) == BNN_STATUS_OK, "omit step %d: %s", k, bnn_last_error());
        CHECK_MSG(bnn_session_run_resident(gpu, n) == BNN_STATUS_OK, "a run without step %d: %s", k,
                  bnn_last_error());
        omitted++;
    }
    CHECK(omitted > 0);
    CHECK(bnn_session_set_graph_omit(gpu, bnn_model_num_steps(m)) == BNN_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(bnn_last_error(), "not a step the GPU runs");
    CHECK(bnn_session_set_graph_omit(gpu, -1) == BNN_STATUS_OK);
    CHECK(bnn_session_run(gpu, n, (const void *const *)in, op) == BNN_STATUS_OK);
    for (int i = 0; i < nout; i++) {
        CHECK_MSG(!memcmp(op[i], oc[i], out_item[i] * (size_t)n),
                  "output %d after graph runs without steps differs from the CPU path at batch %d", i, n);
        free(op[i]);
    }
    printf("test_gpu: graph runs without each of %d steps at batch %d, then the whole graph again\n", omitted, n);
}

static bool compare_sessions(const Buf *blob, int nin, int nout, const size_t *in_item,
                             const size_t *out_item, int max_batch) {
    bnn_model *m = NULL;
    bnn_session *gpu = NULL, *cpu = NULL;
    bnn_status st = bnn_model_load_memory(blob->data, blob->len, &m);
    CHECK_MSG(st == BNN_STATUS_OK, "load: %s", bnn_last_error());
    if (st == BNN_STATUS_OK) {
        st = bnn_session_create(m, BNN_DEVICE_GPU, max_batch, &gpu);
        CHECK_MSG(st == BNN_STATUS_OK, "GPU session: %s: %s", bnn_status_str(st), bnn_last_error());
    }
    if (st == BNN_STATUS_OK) {
        printf("test_gpu: %s\n", bnn_session_device_name(gpu));
        CHECK(bnn_session_device(gpu) == BNN_DEVICE_GPU);
        CHECK(bnn_session_set_device_timing(gpu, 1) == BNN_STATUS_OK); /* CUDA events */
        st = bnn_session_create(m, BNN_DEVICE_CPU, max_batch, &cpu);
        CHECK(st == BNN_STATUS_OK);
    }
    uint64_t seed = 1234;
    static const int batches[] = {1, 3, 64, 1000, 3};
    for (size_t bi = 0; st == BNN_STATUS_OK && bi < sizeof batches / sizeof *batches; bi++) {
        int n = batches[bi] < max_batch ? batches[bi] : max_batch;
        void *in[4], *og[4], *oc[4];
        for (int i = 0; i < nin; i++) {
            in[i] = xmalloc(in_item[i] * (size_t)n);
            for (size_t k = 0; k < in_item[i] * (size_t)n / 4; k++)
                ((float *)in[i])[k] = test_randf(&seed);
        }
        for (int i = 0; i < nout; i++) {
            og[i] = xcalloc((size_t)n, out_item[i]);
            oc[i] = xcalloc((size_t)n, out_item[i]);
        }
        CHECK(bnn_session_run(cpu, n, (const void *const *)in, oc) == BNN_STATUS_OK);
        /* Resident first at odd positions, so both entry points capture graphs. */
        if (bi % 2)
            check_resident(gpu, n, nin, nout, in, oc, in_item, out_item);
        for (int rep = 0; rep < 2; rep++) { /* capture, then replay */
            st = bnn_session_run(gpu, n, (const void *const *)in, og);
            CHECK_MSG(st == BNN_STATUS_OK, "GPU run at batch %d: %s", n, bnn_last_error());
        }
        CHECK_MSG(bnn_session_last_run_ms(gpu) > 0.0, "device time %g",
                  bnn_session_last_run_ms(gpu));
        if (bi % 2 == 0)
            check_resident(gpu, n, nin, nout, in, oc, in_item, out_item);
        if (bi == 1) /* steps launched one by one, timed: the same results */
            check_profiled(gpu, m, n, in, oc, nout, out_item);
        if (bi == 2)
            check_graph_omit(gpu, m, n, in, oc, nout, out_item);
        for (int i = 0; st == BNN_STATUS_OK && i < nout; i++)
            CHECK_MSG(!memcmp(og[i], oc[i], out_item[i] * (size_t)n),
                      "output %d differs between GPU and CPU at batch %d", i, n);
        if (st == BNN_STATUS_OK)
            printf("test_gpu: batch %d: %.3f ms on the GPU\n", n, bnn_session_last_run_ms(gpu));
        for (int i = 0; i < nin; i++)
            free(in[i]);
        for (int i = 0; i < nout; i++)
            free(og[i]), free(oc[i]);
    }
    bnn_session_free(gpu);
    bnn_session_free(cpu);
    bnn_model_free(m);
    return st == BNN_STATUS_OK;
}

/* ---------------------------------------------------------------- driver facts */

static bool device_arch(int *major, int *minor) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return false;
    int (*init)(unsigned), (*count)(int *), (*attr)(int *, int, int);
    void *a = dlsym(lib, "cuInit"), *b = dlsym(lib, "cuDeviceGetCount"),
         *c = dlsym(lib, "cuDeviceGetAttribute");
    if (!a || !b || !c)
        return false;
    memcpy(&init, &a, sizeof a), memcpy(&count, &b, sizeof b), memcpy(&attr, &c, sizeof c);
    int n = 0;
    if (init(0) != 0 || count(&n) != 0 || n < 1)
        return false;
    return attr(major, 75, 0) == 0 && attr(minor, 76, 0) == 0; /* on device 0 */
}

static bnn_status try_gpu(const Buf *blob, int max_batch) {
    bnn_model *m = NULL;
    bnn_session *s = NULL;
    bnn_status st = bnn_model_load_memory(blob->data, blob->len, &m);
    if (st == BNN_STATUS_OK)
        st = bnn_session_create(m, BNN_DEVICE_GPU, max_batch, &s);
    bnn_session_free(s);
    bnn_model_free(m);
    return st;
}

static int compile_only(void) {
    if (!load_nvrtc()) {
        printf("test_gpu: no NVRTC: skipped\n");
        return 77;
    }
    static const char *const archs[] = {"sm_90a", "sm_80"};
    for (int conv = 0; conv < 2; conv++) {
        Gen g = {0};
        char *src = model_source(conv, &g);
        CHECK(src != NULL);
        for (int i = 0; src && i < 2; i++) {
            Buf cubin = {0};
            CHECK_MSG(compile(src, archs[i], &cubin), "%s kernels for %s", conv ? "conv" : "mlp",
                      archs[i]);
            buf_free(&cubin);
        }
        free(src);
        buf_free(&g.src);
    }
    return check_report("test_gpu --compile-only");
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--compile-only"))
        return compile_only();
    int major, minor;
    if (!device_arch(&major, &minor)) {
        printf("test_gpu: no CUDA driver or no GPU: skipped\n");
        return 77;
    }
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d%d%s", major, minor, major == 9 && minor == 0 ? "a" : "");

    /* Error paths that need a GPU but no compiler. */
    {
        TestMlp r;
        Buf blob = {0};
        Gen g = {0};
        Buf fake = {0};
        buf_puts(&fake, "this is not a cubin");
        g.cubin = &fake;
        snprintf(g.arch, sizeof g.arch, "sm_52");
        build_mlp(1, &blob, &r, gen_kernel, &g);
        bnn_status st = try_gpu(&blob, 4);
        CHECK_MSG(st == BNN_STATUS_NO_CUBIN, "%s", bnn_last_error());
        CHECK_STR_CONTAINS(bnn_last_error(), "GPU code for sm_52");
        CHECK_STR_CONTAINS(bnn_last_error(), "--target=sm_");
        printf("test_gpu: no CUBIN: %s\n", bnn_last_error());
        buf_free(&blob), buf_free(&g.src);
        snprintf(g.arch, sizeof g.arch, "%s", arch);
        build_mlp(1, &blob, &r, gen_kernel, &g);
        st = try_gpu(&blob, 4);
        CHECK_MSG(st == BNN_STATUS_DEVICE_ERROR, "damaged CUBIN: %s", bnn_last_error());
        CHECK_STR_CONTAINS(bnn_last_error(), "CUBIN");
        buf_free(&blob), buf_free(&g.src), buf_free(&fake);
        free_mlp(&r);
    }

    if (!load_nvrtc()) {
        printf("test_gpu: no NVRTC: the GPU runs are skipped\n");
        return check_failures ? check_report("test_gpu") : 77;
    }
    char build_arch[16];
    snprintf(build_arch, sizeof build_arch, "sm_%d%d", major, minor);
    for (int conv = 0; conv < 2; conv++) {
        Gen g = {0};
        char *src = model_source(conv, &g);
        Buf cubin = {0};
        if (!src || !compile(src, build_arch, &cubin)) {
            CHECK_MSG(0, "compiling the %s kernels for %s", conv ? "conv" : "mlp", build_arch);
            free(src);
            buf_free(&g.src);
            continue;
        }
        /* Second pass: the same steps, now with the CUBIN, tagged as the runtime prefers. */
        buf_free(&g.src);
        g.cubin = &cubin;
        snprintf(g.arch, sizeof g.arch, "%s", arch);
        Buf blob = {0};
        size_t in_item[1], out_item[4];
        int nout;
        if (conv) {
            TestConv r;
            build_conv(2, &blob, &r, gen_kernel, &g);
            free_conv(&r);
            in_item[0] = CONV_IN * 4, nout = 4;
            out_item[0] = out_item[1] = 40, out_item[2] = 990 * 4, out_item[3] = 48 * 4;
        } else {
            TestMlp r;
            build_mlp(1, &blob, &r, gen_kernel, &g);
            free_mlp(&r);
            in_item[0] = MLP_K0 * 4, nout = 2, out_item[0] = 40, out_item[1] = 8;
        }
        compare_sessions(&blob, 1, nout, in_item, out_item, 1000);
        if (!conv) {
            /* An arena larger than any GPU: a status, not a crash. */
            bnn_status st = try_gpu(&blob, 0x7fffffff);
            CHECK_MSG(st == BNN_STATUS_DEVICE_OUT_OF_MEMORY, "huge arena: %s: %s",
                      bnn_status_str(st), bnn_last_error());
            CHECK_STR_CONTAINS(bnn_last_error(), "out of GPU memory");
            /* A step the CUBIN lacks a kernel for. */
            buf_free(&blob), buf_free(&g.src);
            g.skip_last = true;
            TestMlp r;
            build_mlp(1, &blob, &r, gen_kernel, &g);
            free_mlp(&r);
            st = try_gpu(&blob, 4);
            CHECK_MSG(st == BNN_STATUS_UNSUPPORTED, "no kernel for argmax: %s", bnn_last_error());
            CHECK_STR_CONTAINS(bnn_last_error(), "step 3 (argmax) has no GPU kernel");
        }
        buf_free(&blob);
        buf_free(&g.src);
        buf_free(&cubin);
        free(src);
    }
    return check_report("test_gpu");
}
