/* rt_cuda.c: the GPU path through the CUDA driver API, opened with dlopen so that libbnnrt
 * starts (and runs on the CPU) where there is no driver. A session picks the CUBIN for its
 * GPU, allocates one arena for max_batch items, uploads the weights once, and captures the
 * whole plan into one CUDA graph per batch size, replayed on every run. The driver's types
 * are declared here (no cuda.h: building needs no CUDA toolkit); their values are the
 * driver ABI's. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_STUB_LIBRARY = 34,
    CUDA_ERROR_INSUFFICIENT_DRIVER = 35,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_NOT_FOUND = 500,
    ATTR_CC_MAJOR = 75, /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
    ATTR_CC_MINOR = 76,
    ATTR_SM_COUNT = 16, /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
    FUNC_ATTR_MAX_DYNAMIC_SHARED = 8, /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
    STREAM_NON_BLOCKING = 1,
    EVENT_DISABLE_TIMING = 2,
    CAPTURE_MODE_THREAD_LOCAL = 1,
    LAUNCH_ATTR_PROGRAMMATIC = 6, /* CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION */
};

/* cuLaunchKernelEx's configuration (cuda.h CUlaunchConfig, CUlaunchAttribute). */
typedef struct {
    int id;
    char pad[4];
    union {
        char bytes[64];
        int programmatic; /* programmaticStreamSerializationAllowed */
    } value;
} CuLaunchAttribute;
typedef struct {
    unsigned grid[3], block[3], smem;
    CUstream stream;
    CuLaunchAttribute *attrs;
    unsigned nattrs;
} CuLaunchConfig;

/* The driver entry points used, with the versioned symbol names cuda.h maps them to. */
#define CUDA_API_LIST(X)                                                                      \
    X(Init, "cuInit", "", (unsigned))                                                      \
    X(DeviceGetCount, "cuDeviceGetCount", "", (int *))                                     \
    X(DeviceGet, "cuDeviceGet", "", (CUdevice *, int))                                     \
    X(DeviceGetAttribute, "cuDeviceGetAttribute", "", (int *, int, CUdevice))              \
    X(DeviceGetName, "cuDeviceGetName", "", (char *, int, CUdevice))                       \
    X(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain", "", (CUcontext *, CUdevice))           \
    X(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "", (CUdevice))                   \
    X(CtxPushCurrent, "cuCtxPushCurrent_v2", "", (CUcontext))                              \
    X(CtxPopCurrent, "cuCtxPopCurrent_v2", "", (CUcontext *))                              \
    X(ModuleLoadData, "cuModuleLoadData", "", (CUmodule *, const void *))                  \
    X(ModuleUnload, "cuModuleUnload", "", (CUmodule))                                      \
    X(ModuleGetFunction, "cuModuleGetFunction", "", (CUfunction *, CUmodule, const char *)) \
    X(FuncSetAttribute, "cuFuncSetAttribute", "", (CUfunction, int, int))                  \
    X(MemAlloc, "cuMemAlloc_v2", "", (CUdeviceptr *, size_t))                              \
    X(MemFree, "cuMemFree_v2", "", (CUdeviceptr))                                          \
    X(MemsetD8Async, "cuMemsetD8Async", "", (CUdeviceptr, unsigned char, size_t, CUstream)) \
    X(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", "", (CUdeviceptr, const void *, size_t, CUstream)) \
    X(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", "", (void *, CUdeviceptr, size_t, CUstream)) \
    X(StreamCreate, "cuStreamCreate", "", (CUstream *, unsigned))                          \
    X(StreamDestroy, "cuStreamDestroy_v2", "", (CUstream))                                 \
    X(StreamSynchronize, "cuStreamSynchronize", "", (CUstream))                            \
    X(StreamWaitEvent, "cuStreamWaitEvent", "", (CUstream, CUevent, unsigned))             \
    X(StreamBeginCapture, "cuStreamBeginCapture_v2", "", (CUstream, int))                  \
    X(StreamEndCapture, "cuStreamEndCapture", "", (CUstream, CUgraph *))                   \
    X(GraphInstantiate, "cuGraphInstantiateWithFlags", "", (CUgraphExec *, CUgraph, unsigned long long)) \
    X(GraphLaunch, "cuGraphLaunch", "", (CUgraphExec, CUstream))                           \
    X(GraphExecDestroy, "cuGraphExecDestroy", "", (CUgraphExec))                           \
    X(GraphDestroy, "cuGraphDestroy", "", (CUgraph))                                       \
    X(LaunchKernel, "cuLaunchKernel", "",                                                    \
      (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,     \
       CUstream, void **, void **))                                                          \
    X(EventCreate, "cuEventCreate", "", (CUevent *, unsigned))                             \
    X(EventDestroy, "cuEventDestroy_v2", "", (CUevent))                                    \
    X(EventRecord, "cuEventRecord", "", (CUevent, CUstream))                               \
    X(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime", (float *, CUevent, CUevent)) \
    X(GetErrorName, "cuGetErrorName", "", (CUresult, const char **))                       \
    X(GetErrorString, "cuGetErrorString", "", (CUresult, const char **))

typedef struct CudaApi {
    void *lib;
#define X(field, sym, alt, args) CUresult (*field) args;
    CUDA_API_LIST(X)
#undef X
    /* Optional (drivers of CUDA 12 and later): NULL launches every kernel plainly. */
    CUresult (*LaunchKernelEx)(const CuLaunchConfig *, CUfunction, void **, void **);
    /* Optional (CUDA 12 and later): BLOB_ARG_TMAP_PLANES arguments need it (checked at setup). */
    BlobTmapEncodeFn TensorMapEncodeTiled;
    /* optional too: without it a BLOB_STEP_ONE_WAVE step gets its blob grid */
    CUresult (*OccupancyMaxActiveBlocksPerMultiprocessor)(int *, CUfunction, int, size_t);
} CudaApi;

struct RtCuda {
    CudaApi api;
    CUdevice dev;
    CUcontext ctx; /* the device's primary context, retained */
    CUmodule module;
    CUfunction *funcs; /* per step; NULL where the GPU skips the step */
    /* per step: the blocks of a BLOB_STEP_ONE_WAVE step's kernel the GPU holds at once (its
     * SMs times the kernel's blocks an SM), 0 for none (launch_grid_y: still 65,535 at most) */
    uint32_t *wave;
    CUdeviceptr arena, weights;
    CUstream stream;
    /* Runs beside the main line (BLOB_STEP_BESIDE): their stream, captured into the graph as a
     * branch that forks at `fork` and joins the main stream at `join`; BNN_NO_BESIDE unset. */
    CUstream side;
    CUevent fork, join;
    bool beside;
    CUevent start, stop;
    CUevent *marks; /* profiling: an event before the first step and after each (nsteps + 1) */
    int nmarks;
    int profiled_batch; /* the batch of the last profiled run: which steps it launched */
    /* Steps flagged BLOB_STEP_PDL launch as programmatic dependents of the step before (sm_90
     * and later, cuLaunchKernelEx present, BNN_NO_PDL unset): docs/runtime.md. */
    bool pdl;
    bool sm90a; /* the sm_90a CUBIN is loaded: steps flagged BLOB_STEP_SM90A run (gpu_runs) */
    int sm_count; /* the GPU's SMs: a BLOB_STEP_PERSISTENT step's blocks at most (launch_grid_x) */
    bool one_wave; /* BLOB_STEP_ONE_WAVE steps get one wave (occupancy query present, BNN_NO_ONE_WAVE unset) */
    int omit; /* a step the graphs leave out (bnn_session_set_graph_omit), or -1 */
    /* One graph per batch size (and omitted step), captured on first use (a list: few are used). */
    struct {
        int batch, omit;
        CUgraphExec exec;
    } *graphs;
    int ngraphs, cap_graphs;
};

/* ---------------------------------------------------------------- errors */

static const char *cu_name(const RtCuda *c, CUresult r) {
    const char *s = NULL;
    if (!c->api.GetErrorName || c->api.GetErrorName(r, &s) != CUDA_SUCCESS || !s)
        return "CUDA_ERROR_UNKNOWN";
    return s;
}

static const char *cu_text(const RtCuda *c, CUresult r) {
    const char *s = NULL;
    if (!c->api.GetErrorString || c->api.GetErrorString(r, &s) != CUDA_SUCCESS || !s)
        return "unknown error";
    return s;
}

/* A failed driver call: GPU memory exhaustion has its own status. */
static bnn_status cu_fail(const RtCuda *c, CUresult r, const char *what) {
    bnn_status st = r == CUDA_ERROR_OUT_OF_MEMORY ? BNN_STATUS_DEVICE_OUT_OF_MEMORY
                                                  : BNN_STATUS_DEVICE_ERROR;
    return rt_error(st, "%s failed: %s (%s)", what, cu_text(c, r), cu_name(c, r));
}

#define CU_TRY(c, call, what)                     \
    do {                                          \
        CUresult r_ = (call);                     \
        if (r_ != CUDA_SUCCESS)                   \
            return cu_fail((c), r_, (what));      \
    } while (0)

/* ---------------------------------------------------------------- setup */

static bnn_status load_api(CudaApi *api) {
    const char *path = getenv("BNN_CUDA_LIBRARY"); /* a driver elsewhere, or none in tests */
    if (!path || !*path)
        path = "libcuda.so.1";
    api->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!api->lib) {
        const char *why = dlerror();
        return rt_error(BNN_STATUS_NO_DRIVER,
                        "no NVIDIA driver: cannot open %s (%s); run on the CPU instead "
                        "(BNN_DEVICE_CPU, bnnrun --device cpu)", path, why ? why : "not found");
    }
    void *sym;
#define X(field, name, alt, args)                                                   \
    sym = dlsym(api->lib, name);                                                    \
    if (!sym && alt[0])                                                             \
        sym = dlsym(api->lib, alt);                                                 \
    if (!sym)                                                                       \
        return rt_error(BNN_STATUS_NO_DRIVER, "the NVIDIA driver in %s is too old: it lacks %s", \
                        path, name);                                                \
    memcpy(&api->field, &sym, sizeof sym);
    CUDA_API_LIST(X)
#undef X
    sym = dlsym(api->lib, "cuLaunchKernelEx");
    memcpy(&api->LaunchKernelEx, &sym, sizeof sym);
    sym = dlsym(api->lib, "cuTensorMapEncodeTiled");
    memcpy(&api->TensorMapEncodeTiled, &sym, sizeof sym);
    sym = dlsym(api->lib, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    memcpy(&api->OccupancyMaxActiveBlocksPerMultiprocessor, &sym, sizeof sym);
    return BNN_STATUS_OK;
}

/* The CUBIN for compute capability major.minor: the arch-specific "sm_XYa" first (wgmma
 * needs it, and it runs on exactly that GPU), then "sm_XY", then the newest "sm_XZ" with
 * Z < Y, whose SASS runs on later GPUs of the same major version. */
static const RtCubin *pick_cubin(const bnn_model *m, int major, int minor) {
    char want[BLOB_TAG_SIZE];
    snprintf(want, sizeof want, "sm_%d%da", major, minor);
    for (int i = 0; i < m->ncubins; i++)
        if (!strcmp(m->cubins[i].arch, want))
            return &m->cubins[i];
    want[strlen(want) - 1] = '\0';
    for (int i = 0; i < m->ncubins; i++)
        if (!strcmp(m->cubins[i].arch, want))
            return &m->cubins[i];
    const RtCubin *best = NULL;
    int best_minor = -1;
    for (int z = 0; z < minor; z++) {
        snprintf(want, sizeof want, "sm_%d%d", major, z);
        for (int i = 0; i < m->ncubins; i++)
            if (!strcmp(m->cubins[i].arch, want) && z > best_minor)
                best = &m->cubins[i], best_minor = z;
    }
    return best;
}

#define GRID_Y_MAX 65535u /* blocks a grid holds in y (and z) */

/* grid dimension d of step s for a batch. */
static uint64_t grid_dim(const BlobStep *s, int d, int batch) {
    const BlobGridDim *g = &s->grid[d];
    return g->base + ((uint64_t)batch * g->per_batch + g->div - 1) / g->div;
}

/* The blocks in x a launch of step s gets: its grid, or for a persistent kernel (its blocks
 * walk the tiles, one block an SM) at most the GPU's SMs. */
static unsigned launch_grid_x(const RtCuda *c, const BlobStep *s, int batch) {
    uint64_t x = grid_dim(s, 0, batch);
    if ((s->flags & BLOB_STEP_PERSISTENT) && c->sm_count > 0 && x > (uint64_t)c->sm_count)
        x = (uint64_t)c->sm_count;
    return (unsigned)x;
}

/* The blocks in y a launch of step i gets: its grid, or for a BLOB_STEP_ONE_WAVE step at most
 * one wave of them (c->wave[i] over the blocks in x), at least 1, and at most the 65,535 blocks
 * a grid holds in y (its blocks walk the tiles: any grid.y works). */
static unsigned launch_grid_y(const RtCuda *c, int i, const BlobStep *s, int batch, unsigned gx) {
    uint64_t y = grid_dim(s, 1, batch);
    if (s->flags & BLOB_STEP_ONE_WAVE) {
        uint64_t cap = c->wave[i] == 0 ? GRID_Y_MAX : c->wave[i] >= gx ? c->wave[i] / gx : 1;
        if (cap > GRID_Y_MAX)
            cap = GRID_Y_MAX;
        if (y > cap)
            y = cap;
    }
    return (unsigned)y;
}

/* Whether environment variable name switches a GPU feature off: set, not empty and not "0"
 * (BNN_NO_PDL, BNN_NO_BESIDE, BNN_NO_ONE_WAVE: docs/runtime.md). */
static bool env_switch(const char *name) {
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* Whether this GPU has step s at all: not a CPU-only step, nor an sm_90a-only one elsewhere. */
static bool gpu_runs(const BlobStep *s, bool sm90a) {
    return !(s->flags & BLOB_STEP_CPU_ONLY) && (sm90a || !(s->flags & BLOB_STEP_SM90A));
}

/* Whether the GPU runs step i at this batch: of a step and the batch alternatives after it that
 * it has (their alt_batch not decreasing), the last whose alt_batch the batch reaches; the step
 * below the first's. */
static bool gpu_runs_at(const bnn_model *m, bool sm90a, int i, int batch) {
    const BlobStep *s = &m->steps[i];
    if (!gpu_runs(s, sm90a))
        return false;
    if ((s->flags & BLOB_STEP_BATCH_ALT) && (uint32_t)batch < s->alt_batch)
        return false;
    for (int j = i + 1; j < m->nsteps && (m->steps[j].flags & BLOB_STEP_BATCH_ALT); j++)
        if (gpu_runs(&m->steps[j], sm90a) && (uint32_t)batch >= m->steps[j].alt_batch)
            return false;
    return true;
}

/* Every step the GPU runs has a kernel, and its grid is legal at batch 1 and max_batch
 * (grid sizes grow with the batch, so these two bound every batch between; a ONE_WAVE step's y
 * is capped at launch instead). */
static bnn_status check_plan_for_gpu(const bnn_model *m, bool sm90a, int max_batch) {
    static const uint64_t limit[3] = {0x7fffffffu, GRID_Y_MAX, GRID_Y_MAX};
    for (int i = 0; i < m->nsteps; i++) {
        const BlobStep *s = &m->steps[i];
        if (!gpu_runs(s, sm90a))
            continue;
        if (!s->kernel[0])
            return rt_error(BNN_STATUS_UNSUPPORTED,
                            "step %d (%s) has no GPU kernel: the model was compiled for the CPU "
                            "path only", i, blob_step_name(s->kind));
        for (uint32_t a = 0; a < s->nargs; a++)
            if (s->args[a].kind == BLOB_ARG_BATCH &&
                (uint64_t)max_batch * (uint64_t)s->args[a].value > 0x7fffffffu)
                return rt_error(BNN_STATUS_UNSUPPORTED,
                                "step %d (%s): max_batch %d times %lld rows overflows a 32-bit "
                                "kernel argument", i, blob_step_name(s->kind), max_batch,
                                (long long)s->args[a].value);
        for (int d = 0; d < 3; d++) {
            uint64_t lo = grid_dim(s, d, 1), hi = grid_dim(s, d, max_batch);
            if (d == 1 && (s->flags & BLOB_STEP_ONE_WAVE) && hi > limit[d])
                hi = limit[d];
            if (lo < 1 || hi > limit[d])
                return rt_error(BNN_STATUS_UNSUPPORTED,
                                "step %d (%s): grid dimension %d is %llu at batch %d, outside 1..%llu",
                                i, blob_step_name(s->kind), d,
                                (unsigned long long)(lo < 1 ? lo : hi), lo < 1 ? 1 : max_batch,
                                (unsigned long long)limit[d]);
        }
    }
    return BNN_STATUS_OK;
}

static bnn_status open_device(bnn_session *s, RtCuda *c, int *major, int *minor, char *name,
                              int name_len) {
    CUresult r = c->api.Init(0);
    if (r == CUDA_ERROR_NO_DEVICE)
        return rt_error(BNN_STATUS_NO_DEVICE, "no GPU: the NVIDIA driver finds no device (%s)",
                        cu_name(c, r));
    if (r == CUDA_ERROR_STUB_LIBRARY || r == CUDA_ERROR_INSUFFICIENT_DRIVER)
        return rt_error(BNN_STATUS_NO_DRIVER, "the NVIDIA driver is not usable: %s (%s)",
                        cu_text(c, r), cu_name(c, r));
    if (r != CUDA_SUCCESS)
        return cu_fail(c, r, "cuInit");
    int count = 0;
    CU_TRY(c, c->api.DeviceGetCount(&count), "cuDeviceGetCount");
    if (count < 1)
        return rt_error(BNN_STATUS_NO_DEVICE, "no GPU: the NVIDIA driver finds no device");
    CU_TRY(c, c->api.DeviceGet(&c->dev, 0), "cuDeviceGet");
    CU_TRY(c, c->api.DeviceGetAttribute(major, ATTR_CC_MAJOR, c->dev), "cuDeviceGetAttribute");
    CU_TRY(c, c->api.DeviceGetAttribute(minor, ATTR_CC_MINOR, c->dev), "cuDeviceGetAttribute");
    CU_TRY(c, c->api.DeviceGetAttribute(&c->sm_count, ATTR_SM_COUNT, c->dev), "cuDeviceGetAttribute");
    if (c->api.DeviceGetName(name, name_len, c->dev) != CUDA_SUCCESS)
        snprintf(name, (size_t)name_len, "GPU 0");
    (void)s;
    return BNN_STATUS_OK;
}

/* With the context current: the module, functions, memory, stream and events. */
static bnn_status setup_in_context(bnn_session *s, RtCuda *c, const RtCubin *cubin) {
    const bnn_model *m = s->model;
    char what[160];
    snprintf(what, sizeof what, "loading the %s CUBIN (cuModuleLoadData)", cubin->arch);
    CU_TRY(c, c->api.ModuleLoadData(&c->module, cubin->data), what);
    for (int i = 0; i < m->nsteps; i++) {
        const BlobStep *st = &m->steps[i];
        if (!gpu_runs(st, c->sm90a))
            continue;
        CUresult r = c->api.ModuleGetFunction(&c->funcs[i], c->module, st->kernel);
        if (r == CUDA_ERROR_NOT_FOUND)
            return rt_error(BNN_STATUS_BAD_BLOB, "step %d (%s): kernel '%s' is not in the %s CUBIN",
                            i, blob_step_name(st->kind), st->kernel, cubin->arch);
        if (r != CUDA_SUCCESS)
            return cu_fail(c, r, "cuModuleGetFunction");
        /* The dynamic shared memory every launch of the kernel may ask for: the most of the
         * steps that launch it. Raised for any kernel with some, not only past 48 KiB: its own
         * static shared memory counts against the same 48 KiB (a halo qconv tile of 8x16 pixels
         * asked for 46.8 KiB beside 16.5 KiB of static and failed to launch). */
        uint32_t smem = 0;
        for (int j = 0; j < m->nsteps; j++)
            if (gpu_runs(&m->steps[j], c->sm90a) && !strcmp(m->steps[j].kernel, st->kernel) && m->steps[j].smem > smem)
                smem = m->steps[j].smem;
        if (smem > 0) {
            snprintf(what, sizeof what, "step %d: allowing %u bytes of shared memory for '%s'", i, smem,
                     st->kernel);
            CU_TRY(c, c->api.FuncSetAttribute(c->funcs[i], FUNC_ATTR_MAX_DYNAMIC_SHARED, (int)smem), what);
        }
        /* After the shared memory's attribute, which the occupancy reads; a failed query
         * leaves the blob's grid. */
        int per_sm = 0;
        if ((st->flags & BLOB_STEP_ONE_WAVE) && c->one_wave &&
            c->api.OccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, c->funcs[i],
                                                             (int)(st->block[0] * st->block[1] * st->block[2]),
                                                             st->smem) == CUDA_SUCCESS &&
            per_sm > 0 && c->sm_count > 0)
            c->wave[i] = (uint32_t)per_sm * (uint32_t)c->sm_count;
    }
    if (m->arena_item > SIZE_MAX / (uint64_t)s->max_batch)
        return rt_error(BNN_STATUS_DEVICE_OUT_OF_MEMORY,
                        "the arena for max_batch %d (%llu bytes per item) exceeds any GPU memory",
                        s->max_batch, (unsigned long long)m->arena_item);
    uint64_t arena = m->arena_item * (uint64_t)s->max_batch;
    CUresult r = c->api.MemAlloc(&c->arena, arena ? (size_t)arena : 1);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        return rt_error(BNN_STATUS_DEVICE_OUT_OF_MEMORY,
                        "out of GPU memory allocating the arena: %llu bytes for max_batch %d "
                        "(%llu per item); use a smaller max_batch",
                        (unsigned long long)arena, s->max_batch, (unsigned long long)m->arena_item);
    if (r != CUDA_SUCCESS)
        return cu_fail(c, r, "cuMemAlloc (arena)");
    /* The session's stream first: the arena's zeros and the weights go in on it, so that every
     * later step is ordered after them (a synchronous cuMemset / cuMemcpyHtoD runs on the legacy
     * stream, which a non-blocking stream does not wait for: the memset or the weights' DMA could
     * land after a first kernel). */
    CU_TRY(c, c->api.StreamCreate(&c->stream, STREAM_NON_BLOCKING), "cuStreamCreate");
    /* Zeroed once so padding that a plan reads but never writes is deterministic. */
    CU_TRY(c, c->api.MemsetD8Async(c->arena, 0, arena ? (size_t)arena : 1, c->stream),
           "cuMemsetD8Async (arena)");
    r = c->api.MemAlloc(&c->weights, m->weights_size ? (size_t)m->weights_size : 1);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        return rt_error(BNN_STATUS_DEVICE_OUT_OF_MEMORY,
                        "out of GPU memory allocating %llu bytes of weights",
                        (unsigned long long)m->weights_size);
    if (r != CUDA_SUCCESS)
        return cu_fail(c, r, "cuMemAlloc (weights)");
    if (m->weights_size)
        CU_TRY(c, c->api.MemcpyHtoDAsync(c->weights, m->weights, (size_t)m->weights_size, c->stream),
               "uploading the weights (cuMemcpyHtoDAsync)");
    CU_TRY(c, c->api.StreamSynchronize(c->stream), "uploading the weights (cuStreamSynchronize)");
    CU_TRY(c, c->api.EventCreate(&c->start, 0), "cuEventCreate");
    CU_TRY(c, c->api.EventCreate(&c->stop, 0), "cuEventCreate");
    c->beside = !env_switch("BNN_NO_BESIDE");
    if (c->beside) {
        CU_TRY(c, c->api.StreamCreate(&c->side, STREAM_NON_BLOCKING), "cuStreamCreate");
        CU_TRY(c, c->api.EventCreate(&c->fork, EVENT_DISABLE_TIMING), "cuEventCreate");
        CU_TRY(c, c->api.EventCreate(&c->join, EVENT_DISABLE_TIMING), "cuEventCreate");
    }
    return BNN_STATUS_OK;
}

bnn_status rt_cuda_create(bnn_session *s) {
    const bnn_model *m = s->model;
    RtCuda *c = rt_calloc(1, sizeof *c);
    if (!c)
        return rt_error(BNN_STATUS_OUT_OF_MEMORY, "out of memory creating a GPU session");
    s->cuda = c;
    c->omit = -1;
    bnn_status st = load_api(&c->api);
    if (st != BNN_STATUS_OK)
        return st;
    int major = 0, minor = 0;
    char name[96] = "";
    if ((st = open_device(s, c, &major, &minor, name, (int)sizeof name)) != BNN_STATUS_OK)
        return st;
    const RtCubin *cubin = pick_cubin(m, major, minor);
    if (!cubin) {
        if (!m->ncubins)
            return rt_error(BNN_STATUS_NO_CUBIN,
                            "the model has no GPU code (compiled for the CPU only); this GPU (%s) "
                            "is sm_%d%d: recompile with bnncc --target=sm_%d%d%s, or run on the CPU",
                            name, major, minor, major, minor, major == 9 && minor == 0 ? "a" : "");
        return rt_error(BNN_STATUS_NO_CUBIN,
                        "the model has GPU code for %s, but this GPU (%s) is sm_%d%d: recompile "
                        "with bnncc --target=sm_%d%d%s",
                        m->targets, name, major, minor, major, minor,
                        major == 9 && minor == 0 ? "a" : "");
    }
    c->sm90a = !strcmp(cubin->arch, "sm_90a");
    if ((st = check_plan_for_gpu(m, c->sm90a, s->max_batch)) != BNN_STATUS_OK)
        return st;
    for (int i = 0; c->sm90a && !c->api.TensorMapEncodeTiled && i < m->nsteps; i++)
        for (uint32_t a = 0; a < m->steps[i].nargs; a++)
            if (m->steps[i].args[a].kind == BLOB_ARG_TMAP_PLANES)
                return rt_error(BNN_STATUS_UNSUPPORTED,
                                "step %d (kernel '%s') needs tensor maps, which this CUDA driver lacks "
                                "(cuTensorMapEncodeTiled, CUDA 12 and later): update the driver, or "
                                "recompile the model without sm_90a",
                                i, m->steps[i].kernel);
    c->pdl = c->api.LaunchKernelEx && atoi(cubin->arch + 3) >= 90 && !env_switch("BNN_NO_PDL");
    c->one_wave = c->api.OccupancyMaxActiveBlocksPerMultiprocessor && !env_switch("BNN_NO_ONE_WAVE");
    c->funcs = rt_calloc(m->nsteps ? (size_t)m->nsteps : 1, sizeof *c->funcs);
    c->wave = rt_calloc(m->nsteps ? (size_t)m->nsteps : 1, sizeof *c->wave);
    if (!c->funcs || !c->wave)
        return rt_error(BNN_STATUS_OUT_OF_MEMORY, "out of memory creating a GPU session");
    CUcontext ctx = NULL;
    CU_TRY(c, c->api.PrimaryCtxRetain(&ctx, c->dev), "cuDevicePrimaryCtxRetain");
    c->ctx = ctx;
    CU_TRY(c, c->api.CtxPushCurrent(c->ctx), "cuCtxPushCurrent");
    st = setup_in_context(s, c, cubin);
    CUcontext popped;
    c->api.CtxPopCurrent(&popped);
    if (st != BNN_STATUS_OK)
        return st;
    s->device = BNN_DEVICE_GPU;
    snprintf(s->device_name, sizeof s->device_name, "%s (sm_%d%d, running %s code)", name, major,
             minor, cubin->arch);
    return BNN_STATUS_OK;
}

void rt_cuda_free(RtCuda *c) {
    if (!c)
        return;
    if (c->ctx && c->api.CtxPushCurrent(c->ctx) == CUDA_SUCCESS) {
        for (int i = 0; i < c->ngraphs; i++)
            c->api.GraphExecDestroy(c->graphs[i].exec);
        CUevent events[] = {c->start, c->stop, c->fork, c->join};
        for (size_t i = 0; i < sizeof events / sizeof *events; i++)
            if (events[i])
                c->api.EventDestroy(events[i]);
        for (int i = 0; i < c->nmarks; i++)
            if (c->marks[i])
                c->api.EventDestroy(c->marks[i]);
        if (c->side)
            c->api.StreamDestroy(c->side);
        if (c->stream)
            c->api.StreamDestroy(c->stream);
        if (c->arena)
            c->api.MemFree(c->arena);
        if (c->weights)
            c->api.MemFree(c->weights);
        if (c->module)
            c->api.ModuleUnload(c->module);
        CUcontext popped;
        c->api.CtxPopCurrent(&popped);
    }
    if (c->ctx)
        c->api.PrimaryCtxRelease(c->dev);
    if (c->api.lib)
        dlclose(c->api.lib);
    rt_free(c->funcs);
    rt_free(c->wave);
    rt_free(c->marks);
    rt_free(c->graphs);
    rt_free(c);
}

/* ---------------------------------------------------------------- running */

/* plain: launched after the step before it on `stream` has completed, whatever the flags
 * (profiling, runs beside the main line). */
static bnn_status launch_step(const bnn_session *s, int i, int batch, bool plain, CUstream stream) {
    const RtCuda *c = s->cuda;
    const BlobStep *st = &s->model->steps[i];
    /* Argument values live here while cuLaunchKernel copies them. */
    uint64_t u64[BLOB_MAX_ARGS];
    int32_t i32[BLOB_MAX_ARGS];
    void *params[BLOB_MAX_ARGS];
    _Alignas(64) unsigned char tmap[128]; /* the step's one BLOB_ARG_TMAP_PLANES (the loader checks) */
    for (uint32_t a = 0; a < st->nargs; a++) {
        const BlobArg *arg = &st->args[a];
        switch (arg->kind) {
        case BLOB_ARG_TMAP_PLANES: { /* encoded for this batch: rows and the start move with it */
            const BlobRef *r = &st->slot[arg->slot];
            CUresult e = blob_tmap_planes_encode(c->api.TensorMapEncodeTiled, tmap, arg->value,
                                                 (void *)(uintptr_t)(c->arena + rt_slot_offset(r, batch)),
                                                 r->bytes * (uint64_t)batch / blob_tmap_planes_row_bytes(arg->value));
            if (e != CUDA_SUCCESS) {
                char what[160];
                snprintf(what, sizeof what, "step %d: encoding the tensor map of '%s' (cuTensorMapEncodeTiled)", i,
                         st->kernel);
                return cu_fail(c, e, what);
            }
            params[a] = tmap;
            break;
        }
        case BLOB_ARG_PTR: {
            const BlobRef *r = &st->slot[arg->slot];
            CUdeviceptr base = r->space == BLOB_SPACE_ARENA ? c->arena : c->weights;
            u64[a] = base + rt_slot_offset(r, batch);
            params[a] = &u64[a];
            break;
        }
        case BLOB_ARG_BATCH: i32[a] = (int32_t)(batch * arg->value), params[a] = &i32[a]; break;
        case BLOB_ARG_I32: i32[a] = (int32_t)arg->value, params[a] = &i32[a]; break;
        default: u64[a] = (uint64_t)arg->value, params[a] = &u64[a]; break;
        }
    }
    CUresult r;
    const unsigned gx = launch_grid_x(c, st, batch), gy = launch_grid_y(c, i, st, batch, gx),
                   gz = (unsigned)grid_dim(st, 2, batch);
    if (c->pdl && !plain && (st->flags & BLOB_STEP_PDL)) {
        CuLaunchAttribute attr = {.id = LAUNCH_ATTR_PROGRAMMATIC, .value.programmatic = 1};
        CuLaunchConfig cfg = {.grid = {gx, gy, gz},
                              .block = {st->block[0], st->block[1], st->block[2]},
                              .smem = st->smem,
                              .stream = stream,
                              .attrs = &attr,
                              .nattrs = 1};
        r = c->api.LaunchKernelEx(&cfg, c->funcs[i], params, NULL);
    } else {
        r = c->api.LaunchKernel(c->funcs[i], gx, gy, gz, st->block[0], st->block[1], st->block[2], st->smem, stream,
                                params, NULL);
    }
    if (r != CUDA_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "launching step %d (%s, kernel '%s')", i,
                 blob_step_name(st->kind), st->kernel);
        return cu_fail(c, r, what);
    }
    return BNN_STATUS_OK;
}

/* Step i's fork where it is in a run of BLOB_STEP_BESIDE steps (the loader checked the runs'
 * shape), else -1. */
static int beside_fork(const bnn_model *m, int i) { return blob_step_beside_fork(m->steps[i].flags, i); }

/* The first step of the run that forks at step i, or -1 where none does. */
static int run_forking_at(const bnn_model *m, int i) {
    for (int j = i + 1; j < m->nsteps && j - i <= (int)BLOB_STEP_BESIDE_MAX; j++)
        if (beside_fork(m, j) == i && beside_fork(m, j - 1) != i)
            return j;
    return -1;
}

/* Every GPU step at this batch in order on the main stream, except one side of each run beside
 * the main line: the run (or, BLOB_STEP_BESIDE_SWAP, the steps before it back to its fork) goes
 * on the side stream after the work before the fork; the step after the run waits for it. */
static bnn_status launch_graph_steps(bnn_session *s, int batch) {
    RtCuda *c = s->cuda;
    const bnn_model *m = s->model;
    int run = -1, end = -1; /* the run of the current fork, its first and last step */
    bool swap = false, waited = false, joining = false;
    for (int i = 0; i < m->nsteps; i++) {
        int first = c->beside ? run_forking_at(m, i) : -1;
        if (first >= 0) { /* a fork: after everything so far, a run's side work included */
            if (joining)
                CU_TRY(c, c->api.StreamWaitEvent(c->stream, c->join, 0), "cuStreamWaitEvent");
            CU_TRY(c, c->api.EventRecord(c->fork, c->stream), "cuEventRecord");
            run = end = first;
            while (end + 1 < m->nsteps && beside_fork(m, end + 1) == i)
                end++;
            swap = (m->steps[first].flags & BLOB_STEP_BESIDE_SWAP) != 0;
            waited = joining = false;
        }
        bool side = false;
        if (run >= 0 && i <= end) /* before the run: beside it where swapped; the run: where not */
            side = i < run ? swap : !swap;
        else if (joining) { /* past the run: the main line waits for the side's work */
            CU_TRY(c, c->api.StreamWaitEvent(c->stream, c->join, 0), "cuStreamWaitEvent");
            joining = false;
            run = -1;
        }
        if (!gpu_runs_at(m, c->sm90a, i, batch) || i == c->omit)
            continue;
        if (!side) {
            bnn_status st = launch_step(s, i, batch, false, c->stream);
            if (st != BNN_STATUS_OK)
                return st;
            continue;
        }
        if (!waited) /* the side's first step at this batch */
            CU_TRY(c, c->api.StreamWaitEvent(c->side, c->fork, 0), "cuStreamWaitEvent");
        waited = true;
        bnn_status st = launch_step(s, i, batch, true, c->side);
        if (st != BNN_STATUS_OK)
            return st;
        CU_TRY(c, c->api.EventRecord(c->join, c->side), "cuEventRecord");
        joining = true;
    }
    if (joining)
        CU_TRY(c, c->api.StreamWaitEvent(c->stream, c->join, 0), "cuStreamWaitEvent");
    return BNN_STATUS_OK;
}

/* One capture of every GPU step at this batch, instantiated and added to c->graphs (room made). */
static bnn_status capture_graph(bnn_session *s, int batch, CUgraphExec *exec) {
    RtCuda *c = s->cuda;
    CU_TRY(c, c->api.StreamBeginCapture(c->stream, CAPTURE_MODE_THREAD_LOCAL),
           "cuStreamBeginCapture");
    bnn_status st = launch_graph_steps(s, batch);
    CUgraph graph = NULL;
    CUresult r = c->api.StreamEndCapture(c->stream, &graph); /* always ends the capture */
    if (st == BNN_STATUS_OK && r != CUDA_SUCCESS)
        st = cu_fail(c, r, "cuStreamEndCapture");
    if (st == BNN_STATUS_OK) {
        r = c->api.GraphInstantiate(exec, graph, 0);
        if (r != CUDA_SUCCESS)
            st = cu_fail(c, r, "cuGraphInstantiate");
        else {
            c->graphs[c->ngraphs].batch = batch;
            c->graphs[c->ngraphs].omit = c->omit;
            c->graphs[c->ngraphs++].exec = *exec;
        }
    }
    if (graph)
        c->api.GraphDestroy(graph);
    return st;
}

/* Capture every GPU step for this batch size into one graph, added to c->graphs. */
static bnn_status capture(bnn_session *s, int batch, CUgraphExec *exec) {
    RtCuda *c = s->cuda;
    if (c->ngraphs == c->cap_graphs) {
        int cap = c->cap_graphs ? 2 * c->cap_graphs : 4;
        void *g = rt_calloc((size_t)cap, sizeof *c->graphs);
        if (!g)
            return rt_error(BNN_STATUS_OUT_OF_MEMORY, "out of memory capturing a CUDA graph");
        if (c->ngraphs)
            memcpy(g, c->graphs, (size_t)c->ngraphs * sizeof *c->graphs);
        rt_free(c->graphs);
        c->graphs = g;
        c->cap_graphs = cap;
    }
    bnn_status st = capture_graph(s, batch, exec);
    if (st != BNN_STATUS_OK && c->pdl) { /* a driver that cannot capture programmatic launches */
        c->pdl = false;                   /* gets plain ones, in this graph and the later ones */
        rt_clear_error();
        st = capture_graph(s, batch, exec);
    }
    return st;
}

/* Profiling: the GPU steps launched one by one, an event before the first and after each. */
static bnn_status launch_profiled(bnn_session *s, int batch) {
    RtCuda *c = s->cuda;
    c->profiled_batch = batch;
    CU_TRY(c, c->api.EventRecord(c->marks[0], c->stream), "cuEventRecord");
    for (int i = 0; i < s->model->nsteps; i++) {
        if (!gpu_runs_at(s->model, c->sm90a, i, batch))
            continue;
        bnn_status st = launch_step(s, i, batch, true, c->stream);
        if (st != BNN_STATUS_OK)
            return st;
        CU_TRY(c, c->api.EventRecord(c->marks[i + 1], c->stream), "cuEventRecord");
    }
    return BNN_STATUS_OK;
}

/* After a profiled run has synchronized: each GPU step's time, from the event before it. */
static void read_step_times(bnn_session *s) {
    RtCuda *c = s->cuda;
    CUevent before = c->marks[0];
    for (int i = 0; i < s->model->nsteps; i++) {
        float ms;
        s->step_ms[i] = -1.0;
        if (!gpu_runs_at(s->model, c->sm90a, i, c->profiled_batch))
            continue;
        if (c->api.EventElapsedTime(&ms, before, c->marks[i + 1]) == CUDA_SUCCESS)
            s->step_ms[i] = ms;
        before = c->marks[i + 1];
    }
}

bnn_status rt_cuda_set_graph_omit(bnn_session *s, int index) {
    const bnn_model *m = s->model;
    if (index >= 0 && (index >= m->nsteps || !gpu_runs(&m->steps[index], s->cuda->sm90a)))
        return rt_error(BNN_STATUS_INVALID_ARGUMENT,
                        "bnn_session_set_graph_omit: step %d is not a step the GPU runs (the model has %d steps; "
                        "bnnrun --profile lists them)", index, m->nsteps);
    s->cuda->omit = index < 0 ? -1 : index;
    return BNN_STATUS_OK;
}

bnn_status rt_cuda_prepare_profiling(bnn_session *s) {
    RtCuda *c = s->cuda;
    if (c->marks)
        return BNN_STATUS_OK;
    int n = s->model->nsteps + 1;
    c->marks = rt_calloc((size_t)n, sizeof *c->marks);
    if (!c->marks)
        return rt_error(BNN_STATUS_OUT_OF_MEMORY, "out of memory for the profiling events");
    CUresult r = c->api.CtxPushCurrent(c->ctx);
    if (r == CUDA_SUCCESS) {
        int made = 0;
        while (made < n && (r = c->api.EventCreate(&c->marks[made], 0)) == CUDA_SUCCESS)
            made++;
        if (r != CUDA_SUCCESS) /* none kept: a later call tries again */
            while (made > 0)
                c->api.EventDestroy(c->marks[--made]);
        CUcontext popped;
        c->api.CtxPopCurrent(&popped);
    }
    if (r != CUDA_SUCCESS) {
        rt_free(c->marks);
        c->marks = NULL;
        return cu_fail(c, r, "creating the profiling events (cuEventCreate)");
    }
    c->nmarks = n;
    return BNN_STATUS_OK;
}

/* One stream synchronization per run and no allocation once the graph exists; the events
 * only when timing is asked for (each record and the elapsed query cost host time). Copies
 * go straight from the caller's memory: pinned staging would add a host memcpy to every
 * run and was not faster where measured (docs/runtime.md, "Overheads"). */
static bnn_status run_in_context(bnn_session *s, int batch, const void *const *inputs,
                                 void *const *outputs) {
    RtCuda *c = s->cuda;
    const bnn_model *m = s->model;
    CUgraphExec exec = NULL;
    for (int i = 0; i < c->ngraphs && !exec; i++)
        if (c->graphs[i].batch == batch && c->graphs[i].omit == c->omit)
            exec = c->graphs[i].exec;
    if (!exec && !s->profiling) {
        bnn_status st = capture(s, batch, &exec);
        if (st != BNN_STATUS_OK)
            return st;
    }
    bool timed = s->device_timing;
    if (timed)
        CU_TRY(c, c->api.EventRecord(c->start, c->stream), "cuEventRecord");
    for (int i = 0; inputs && i < m->ninputs; i++) {
        const RtIo *io = &m->io[i];
        CU_TRY(c, c->api.MemcpyHtoDAsync(c->arena + io->offset * (uint64_t)batch, inputs[i],
                                         (size_t)io->item_bytes * (size_t)batch, c->stream),
               "copying an input to the GPU");
    }
    if (s->profiling) {
        bnn_status st = launch_profiled(s, batch);
        if (st != BNN_STATUS_OK)
            return st;
    } else {
        CU_TRY(c, c->api.GraphLaunch(exec, c->stream), "cuGraphLaunch");
    }
    for (int i = 0; outputs && i < m->noutputs; i++) {
        const RtIo *io = &m->io[m->ninputs + i];
        CU_TRY(c, c->api.MemcpyDtoHAsync(outputs[i], c->arena + io->offset * (uint64_t)batch,
                                         (size_t)io->item_bytes * (size_t)batch, c->stream),
               "copying an output from the GPU");
    }
    if (timed)
        CU_TRY(c, c->api.EventRecord(c->stop, c->stream), "cuEventRecord");
    CU_TRY(c, c->api.StreamSynchronize(c->stream), "running the model (cuStreamSynchronize)");
    float ms = 0.0f;
    if (timed && c->api.EventElapsedTime(&ms, c->start, c->stop) == CUDA_SUCCESS)
        s->last_ms = ms;
    if (s->profiling)
        read_step_times(s);
    return BNN_STATUS_OK;
}

bnn_status rt_cuda_run(bnn_session *s, int batch, const void *const *inputs,
                       void *const *outputs) {
    RtCuda *c = s->cuda;
    CU_TRY(c, c->api.CtxPushCurrent(c->ctx), "cuCtxPushCurrent");
    bnn_status st = run_in_context(s, batch, inputs, outputs);
    CUcontext popped;
    c->api.CtxPopCurrent(&popped);
    return st;
}

uint64_t rt_cuda_arena(const RtCuda *c) { return c->arena; }
