/* rt_api.c: the public API's plumbing: errors, the allocation hook, loading, queries and
 * sessions. The device work is in rt_cpu.c and rt_cuda.c, the checks in rt_blob.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "rt.h"

#ifndef BNN_VERSION
#define BNN_VERSION "unknown"
#endif

/* ---------------------------------------------------------------- errors */

static _Thread_local char last_error[1024];

bnn_status rt_error(bnn_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

void rt_clear_error(void) { last_error[0] = '\0'; }

const char *bnn_last_error(void) { return last_error; }

const char *bnn_version(void) { return BNN_VERSION; }

const char *bnn_status_str(bnn_status status) {
    switch (status) {
    case BNN_STATUS_OK: return "ok";
    case BNN_STATUS_INVALID_ARGUMENT: return "invalid argument";
    case BNN_STATUS_IO_ERROR: return "I/O error";
    case BNN_STATUS_BAD_BLOB: return "bad model file";
    case BNN_STATUS_CHECKSUM: return "checksum mismatch";
    case BNN_STATUS_VERSION: return "unsupported format version";
    case BNN_STATUS_OUT_OF_MEMORY: return "out of memory";
    case BNN_STATUS_NO_DRIVER: return "no CUDA driver";
    case BNN_STATUS_NO_DEVICE: return "no GPU";
    case BNN_STATUS_NO_CUBIN: return "no code for this GPU";
    case BNN_STATUS_DEVICE_OUT_OF_MEMORY: return "out of GPU memory";
    case BNN_STATUS_DEVICE_ERROR: return "GPU error";
    case BNN_STATUS_UNSUPPORTED: return "unsupported";
    }
    return "unknown status";
}

const char *bnn_dtype_name(bnn_dtype dtype) { return blob_dtype_name((uint32_t)dtype); }

/* ---------------------------------------------------------------- memory */

static void *default_alloc(void *user, void *ptr, size_t size) {
    (void)user;
    if (size == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, size);
}

static bnn_alloc_fn alloc_fn = default_alloc;
static void *alloc_user;

void bnn_set_allocator(bnn_alloc_fn fn, void *user) {
    alloc_fn = fn ? fn : default_alloc;
    alloc_user = fn ? user : NULL;
}

void *rt_alloc(size_t n) { return alloc_fn(alloc_user, NULL, n ? n : 1); }

void *rt_calloc(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size)
        return NULL;
    size_t n = count * size;
    void *p = rt_alloc(n);
    if (p)
        memset(p, 0, n ? n : 1);
    return p;
}

void rt_free(void *p) {
    if (p)
        alloc_fn(alloc_user, p, 0);
}

/* An allocation of n bytes starting at a 64-byte boundary; *mem gets what to free. */
static unsigned char *alloc_aligned(size_t n, void **mem) {
    if (n > SIZE_MAX - BLOB_ALIGN)
        return NULL;
    *mem = rt_alloc(n + BLOB_ALIGN);
    if (!*mem)
        return NULL;
    uintptr_t p = (uintptr_t)*mem;
    return (unsigned char *)*mem + (BLOB_ALIGN - p % BLOB_ALIGN) % BLOB_ALIGN;
}

/* ---------------------------------------------------------------- models */

void bnn_model_free(bnn_model *m) {
    if (!m)
        return;
    rt_free(m->io);
    rt_free(m->steps);
    rt_free(m->mem);
    rt_free(m);
}

/* Take ownership of a filled aligned copy (mem, blob, len) and parse it. */
static bnn_status finish_load(void *mem, const unsigned char *blob, size_t len, bnn_model **out) {
    bnn_model *m = rt_calloc(1, sizeof *m);
    if (!m) {
        rt_free(mem);
        return rt_error(BNN_STATUS_OUT_OF_MEMORY, "out of memory loading the model");
    }
    m->mem = mem;
    m->blob = blob;
    m->len = len;
    bnn_status st = rt_parse_blob(m);
    if (st != BNN_STATUS_OK) {
        bnn_model_free(m);
        return st;
    }
    *out = m;
    return BNN_STATUS_OK;
}

bnn_status bnn_model_load_memory(const void *data, size_t len, bnn_model **out) {
    if (!out)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "bnn_model_load_memory: model is NULL");
    *out = NULL;
    if (!data && len)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "bnn_model_load_memory: data is NULL");
    rt_clear_error();
    void *mem;
    unsigned char *copy = alloc_aligned(len, &mem);
    if (!copy)
        return rt_error(BNN_STATUS_OUT_OF_MEMORY, "out of memory copying a %zu-byte model", len);
    if (len)
        memcpy(copy, data, len);
    return finish_load(mem, copy, len, out);
}

bnn_status bnn_model_load_file(const char *path, bnn_model **out) {
    if (!out || !path)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "bnn_model_load_file: %s is NULL",
                        path ? "model" : "path");
    *out = NULL;
    rt_clear_error();
    FILE *f = fopen(path, "rb");
    if (!f)
        return rt_error(BNN_STATUS_IO_ERROR, "cannot open '%s': %s", path, strerror(errno));
    struct stat info;
    if (fstat(fileno(f), &info) != 0 || !S_ISREG(info.st_mode)) {
        fclose(f);
        return rt_error(BNN_STATUS_IO_ERROR, "cannot read '%s': not a regular file", path);
    }
    long size = (long)info.st_size;
    void *mem;
    unsigned char *copy = alloc_aligned((size_t)size, &mem);
    if (!copy) {
        fclose(f);
        return rt_error(BNN_STATUS_OUT_OF_MEMORY, "out of memory reading '%s' (%ld bytes)", path,
                        size);
    }
    size_t got = size ? fread(copy, 1, (size_t)size, f) : 0;
    int e = ferror(f) ? errno : 0;
    fclose(f);
    if (got != (size_t)size) {
        rt_free(mem);
        return rt_error(BNN_STATUS_IO_ERROR, "cannot read '%s': %s", path,
                        e ? strerror(e) : "the file changed while being read");
    }
    bnn_status st = finish_load(mem, copy, (size_t)size, out);
    if (st != BNN_STATUS_OK && st != BNN_STATUS_OUT_OF_MEMORY) {
        /* Name the file in front of the loader's message. */
        char msg[sizeof last_error];
        snprintf(msg, sizeof msg, "%s", last_error);
        rt_error(st, "%s: %s", path, msg);
    }
    return st;
}

int bnn_model_num_inputs(const bnn_model *m) { return m ? m->ninputs : 0; }
int bnn_model_num_outputs(const bnn_model *m) { return m ? m->noutputs : 0; }
const char *bnn_model_targets(const bnn_model *m) { return m ? m->targets : ""; }

static bnn_status io_info(const bnn_model *m, int index, bool input, bnn_tensor_info *info) {
    const char *what = input ? "input" : "output";
    if (!m || !info)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "bnn_model_%s_info: NULL argument", what);
    int n = input ? m->ninputs : m->noutputs;
    if (index < 0 || index >= n)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "%s index %d out of range (the model has %d)",
                        what, index, n);
    const RtIo *io = &m->io[input ? index : m->ninputs + index];
    memset(info, 0, sizeof *info);
    info->name = io->name;
    info->dtype = (bnn_dtype)io->dtype;
    info->rank = io->rank;
    info->batch_axis = 0;
    for (int i = 0; i < io->rank; i++)
        info->dims[i] = io->dims[i];
    info->item_bytes = (size_t)io->item_bytes;
    return BNN_STATUS_OK;
}

bnn_status bnn_model_input_info(const bnn_model *m, int index, bnn_tensor_info *info) {
    return io_info(m, index, true, info);
}

bnn_status bnn_model_output_info(const bnn_model *m, int index, bnn_tensor_info *info) {
    return io_info(m, index, false, info);
}

int bnn_model_num_steps(const bnn_model *m) { return m ? m->nsteps : 0; }

bnn_status bnn_model_step_info(const bnn_model *m, int index, bnn_step_info *info) {
    if (!m || !info)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "bnn_model_step_info: %s is NULL",
                        m ? "info" : "model");
    if (index < 0 || index >= m->nsteps)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "bnn_model_step_info: index %d is out of range "
                        "(the plan has %d steps)", index, m->nsteps);
    const BlobStep *st = &m->steps[index];
    info->kind = blob_step_name(st->kind);
    info->kernel = st->kernel;
    info->on_cpu = st->kind != BLOB_STEP_KERNEL;
    info->on_gpu = !(st->flags & BLOB_STEP_CPU_ONLY);
    rt_clear_error();
    return BNN_STATUS_OK;
}

/* ---------------------------------------------------------------- sessions */

void bnn_session_free(bnn_session *s) {
    if (!s)
        return;
    rt_cuda_free(s->cuda);
    rt_pool_free(s->pool);
    rt_free(s->arena_mem);
    rt_free(s->step_ms);
    rt_free(s);
}

static bnn_status create_cpu(bnn_session *s) {
    const bnn_model *m = s->model;
    if (m->arena_item > SIZE_MAX / (uint64_t)s->max_batch)
        return rt_error(BNN_STATUS_OUT_OF_MEMORY, "the arena for max_batch %d does not fit in memory",
                        s->max_batch);
    size_t bytes = (size_t)(m->arena_item * (uint64_t)s->max_batch);
    s->arena = alloc_aligned(bytes, &s->arena_mem);
    if (!s->arena)
        return rt_error(BNN_STATUS_OUT_OF_MEMORY,
                        "out of memory allocating the arena (%zu bytes for max_batch %d)", bytes,
                        s->max_batch);
    /* Deterministic contents: padding bytes that a plan reads but never writes are zero. */
    memset(s->arena, 0, bytes);
    s->device = BNN_DEVICE_CPU;
    snprintf(s->device_name, sizeof s->device_name, "CPU");
    return BNN_STATUS_OK;
}

bnn_status bnn_session_create(const bnn_model *m, bnn_device device, int max_batch,
                              bnn_session **out) {
    if (!out)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "bnn_session_create: session is NULL");
    *out = NULL;
    if (!m)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "bnn_session_create: model is NULL");
    if (max_batch < 1)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "max_batch must be at least 1, not %d",
                        max_batch);
    if (device != BNN_DEVICE_AUTO && device != BNN_DEVICE_CPU && device != BNN_DEVICE_GPU)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "unknown device %d", (int)device);
    rt_clear_error();
    bnn_session *s = rt_calloc(1, sizeof *s);
    if (!s)
        return rt_error(BNN_STATUS_OUT_OF_MEMORY, "out of memory creating a session");
    s->model = m;
    s->max_batch = max_batch;
    bnn_status st;
    if (device == BNN_DEVICE_CPU) {
        st = create_cpu(s);
    } else {
        st = rt_cuda_create(s);
        /* AUTO runs on the CPU where the GPU path cannot start for want of a GPU or of code
         * for it; a real failure on a present GPU (its memory, the driver) is reported. */
        if (device == BNN_DEVICE_AUTO &&
            (st == BNN_STATUS_NO_DRIVER || st == BNN_STATUS_NO_DEVICE ||
             st == BNN_STATUS_NO_CUBIN || st == BNN_STATUS_UNSUPPORTED)) {
            rt_cuda_free(s->cuda);
            s->cuda = NULL;
            st = create_cpu(s);
        }
    }
    if (st != BNN_STATUS_OK) {
        bnn_session_free(s);
        return st;
    }
    rt_clear_error();
    *out = s;
    return BNN_STATUS_OK;
}

bnn_device bnn_session_device(const bnn_session *s) { return s ? s->device : BNN_DEVICE_AUTO; }
const char *bnn_session_device_name(const bnn_session *s) { return s ? s->device_name : ""; }
double bnn_session_last_run_ms(const bnn_session *s) { return s ? s->last_ms : 0.0; }

bnn_status bnn_session_set_profiling(bnn_session *s, int on) {
    if (!s)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "bnn_session_set_profiling: session is NULL");
    if (on && !s->step_ms) {
        int n = s->model->nsteps;
        s->step_ms = rt_calloc((size_t)(n ? n : 1), sizeof *s->step_ms);
        if (!s->step_ms)
            return rt_error(BNN_STATUS_OUT_OF_MEMORY, "out of memory for the step times");
        for (int i = 0; i < n; i++)
            s->step_ms[i] = -1.0;
    }
    if (on && s->device == BNN_DEVICE_GPU) {
        bnn_status st = rt_cuda_prepare_profiling(s);
        if (st != BNN_STATUS_OK)
            return st;
    }
    s->profiling = on != 0;
    rt_clear_error();
    return BNN_STATUS_OK;
}

bnn_status bnn_session_set_graph_omit(bnn_session *s, int index) {
    if (!s)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "bnn_session_set_graph_omit: session is NULL");
    if (s->device != BNN_DEVICE_GPU)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "bnn_session_set_graph_omit: a CPU session has no graph");
    bnn_status st = rt_cuda_set_graph_omit(s, index);
    if (st == BNN_STATUS_OK)
        rt_clear_error();
    return st;
}

bnn_status bnn_session_set_threads(bnn_session *s, int threads) {
    if (!s)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "bnn_session_set_threads: session is NULL");
    if (threads < 1 || threads > BNN_MAX_THREADS)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "bnn_session_set_threads: %d threads: give 1 to %d",
                        threads, BNN_MAX_THREADS);
    if (threads == bnn_session_threads(s))
        return BNN_STATUS_OK;
    RtPool *pool = NULL;
    if (threads > 1) {
        bnn_status st = rt_pool_create(threads, &pool);
        if (st != BNN_STATUS_OK)
            return st; /* the session keeps its threads */
    }
    rt_pool_free(s->pool);
    s->pool = pool;
    rt_clear_error();
    return BNN_STATUS_OK;
}

int bnn_session_threads(const bnn_session *s) { return s ? rt_pool_threads(s->pool) : 0; }

double bnn_session_step_ms(const bnn_session *s, int index) {
    return s && s->step_ms && index >= 0 && index < s->model->nsteps ? s->step_ms[index] : -1.0;
}

bnn_status bnn_session_set_device_timing(bnn_session *s, int on) {
    if (!s)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "bnn_session_set_device_timing: session is NULL");
    s->device_timing = on != 0;
    return BNN_STATUS_OK;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static bnn_status check_batch(const bnn_session *s, int batch, const char *fn) {
    if (batch < 1 || batch > s->max_batch)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT,
                        "%s: batch %d is outside 1..%d (the session's max_batch)", fn, batch,
                        s->max_batch);
    return BNN_STATUS_OK;
}

/* Where input or output `index` of a batch lives: arena refs scale with the batch. */
static uint64_t io_offset(const bnn_model *m, int io, int batch) {
    return m->io[io].offset * (uint64_t)batch;
}

static bnn_status io_buffer(bnn_session *s, int index, int batch, bool input, void **out) {
    const char *fn = input ? "bnn_session_input_buffer" : "bnn_session_output_buffer";
    if (!out)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "%s: buffer is NULL", fn);
    *out = NULL;
    if (!s)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "%s: session is NULL", fn);
    const bnn_model *m = s->model;
    int n = input ? m->ninputs : m->noutputs;
    if (index < 0 || index >= n)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "%s: index %d is out of range (the model has "
                        "%d %s%s)", fn, index, n, input ? "input" : "output", n == 1 ? "" : "s");
    bnn_status st = check_batch(s, batch, fn);
    if (st != BNN_STATUS_OK)
        return st;
    uint64_t at = io_offset(m, input ? index : m->ninputs + index, batch);
    if (s->device == BNN_DEVICE_GPU)
        *out = (void *)(uintptr_t)(rt_cuda_arena(s->cuda) + at);
    else
        *out = s->arena + at;
    rt_clear_error();
    return BNN_STATUS_OK;
}

bnn_status bnn_session_input_buffer(bnn_session *s, int index, int batch, void **buffer) {
    return io_buffer(s, index, batch, true, buffer);
}

bnn_status bnn_session_output_buffer(bnn_session *s, int index, int batch, void **buffer) {
    return io_buffer(s, index, batch, false, buffer);
}

/* The CPU path: inputs in (unless resident), every CPU step, outputs out (unless resident). */
static void run_cpu(bnn_session *s, int batch, const void *const *inputs, void *const *outputs) {
    const bnn_model *m = s->model;
    for (int i = 0; inputs && i < m->ninputs; i++)
        memcpy(s->arena + io_offset(m, i, batch), inputs[i], m->io[i].item_bytes * (size_t)batch);
    for (int i = 0; i < m->nsteps; i++) {
        if (m->steps[i].kind == BLOB_STEP_KERNEL || (m->steps[i].flags & BLOB_STEP_BATCH_ALT))
            continue; /* a GPU helper, or another GPU kernel for the step before: the CPU needs neither */
        double t0 = s->profiling ? now_ms() : 0.0;
        rt_cpu_run_step(m, &m->steps[i], s->arena, batch, s->pool);
        if (s->profiling)
            s->step_ms[i] = now_ms() - t0;
    }
    for (int i = 0; outputs && i < m->noutputs; i++)
        memcpy(outputs[i], s->arena + io_offset(m, m->ninputs + i, batch),
               m->io[m->ninputs + i].item_bytes * (size_t)batch);
}

/* A checked run; inputs and outputs NULL for a resident run. */
static bnn_status run(bnn_session *s, int batch, const void *const *inputs, void *const *outputs) {
    rt_clear_error();
    double t0 = now_ms();
    bool device_clock = s->device == BNN_DEVICE_GPU && s->device_timing;
    if (s->device == BNN_DEVICE_GPU) {
        bnn_status st = rt_cuda_run(s, batch, inputs, outputs); /* sets last_ms when timed */
        if (st != BNN_STATUS_OK)
            return st;
    } else {
        run_cpu(s, batch, inputs, outputs);
    }
    if (!device_clock)
        s->last_ms = now_ms() - t0;
    return BNN_STATUS_OK;
}

bnn_status bnn_session_run(bnn_session *s, int batch, const void *const *inputs,
                           void *const *outputs) {
    if (!s)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "bnn_session_run: session is NULL");
    const bnn_model *m = s->model;
    bnn_status st = check_batch(s, batch, "bnn_session_run");
    if (st != BNN_STATUS_OK)
        return st;
    if ((m->ninputs && !inputs) || !outputs)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "bnn_session_run: %s array is NULL",
                        outputs ? "the inputs" : "the outputs");
    for (int i = 0; i < m->ninputs; i++)
        if (!inputs[i])
            return rt_error(BNN_STATUS_INVALID_ARGUMENT, "input %d ('%s') is NULL", i, m->io[i].name);
    for (int i = 0; i < m->noutputs; i++)
        if (!outputs[i])
            return rt_error(BNN_STATUS_INVALID_ARGUMENT, "output %d ('%s') is NULL", i,
                            m->io[m->ninputs + i].name);
    return run(s, batch, inputs, outputs);
}

bnn_status bnn_session_run_resident(bnn_session *s, int batch) {
    if (!s)
        return rt_error(BNN_STATUS_INVALID_ARGUMENT, "bnn_session_run_resident: session is NULL");
    bnn_status st = check_batch(s, batch, "bnn_session_run_resident");
    if (st != BNN_STATUS_OK)
        return st;
    return run(s, batch, NULL, NULL);
}
