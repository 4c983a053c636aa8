/* rt.h: the runtime's internals, shared by its files (never installed).
 *   rt_api.c   errors, the allocation hook, model queries, sessions
 *   rt_blob.c  the loader: container, META, PLAN and every step checked before use
 *   rt_cpu.c   the CPU path: one C function per step kind
 *   rt_cuda.c  the GPU path: the driver API through dlopen, one CUDA graph per batch size */
#ifndef BNN_RT_H
#define BNN_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blob.h"
#include "bnnrt.h"

/* ---------------------------------------------------------------- errors, memory */

/* Keep a message for bnn_last_error() and return status. */
bnn_status rt_error(bnn_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rt_clear_error(void);

void *rt_alloc(size_t n); /* through the hook; NULL on failure (n == 0 allocates 1 byte) */
void *rt_calloc(size_t count, size_t size);
void rt_free(void *p);

/* ---------------------------------------------------------------- the model */

typedef struct RtIo {
    const char *name; /* inside the blob, NUL-terminated */
    uint32_t dtype;
    int rank;
    int64_t dims[BLOB_MAX_RANK];
    uint64_t offset, item_bytes; /* its arena ref */
} RtIo;

typedef struct RtCubin {
    char arch[BLOB_TAG_SIZE]; /* "sm_90a" */
    const unsigned char *data;
    size_t size;
} RtCubin;

struct bnn_model {
    void *mem;                 /* the allocation holding the blob copy */
    const unsigned char *blob; /* 64-byte aligned copy of the file */
    size_t len;
    int ninputs, noutputs;
    RtIo *io; /* inputs, then outputs */
    int nsteps;
    BlobStep *steps;
    uint64_t arena_item; /* arena bytes per batch item */
    const unsigned char *weights;
    uint64_t weights_size;
    int ncubins;
    RtCubin cubins[BLOB_MAX_SECTIONS];
    char targets[BLOB_MAX_SECTIONS * BLOB_TAG_SIZE];
};

/* Parse and check a blob already copied to 64-byte aligned memory (m->blob, m->len);
 * fills m. On failure the status and message are set; m's allocations are left for
 * free_model_parts. */
bnn_status rt_parse_blob(bnn_model *m);

/* ---------------------------------------------------------------- sessions */

typedef struct RtCuda RtCuda;

/* The CPU path's threads (rt_pool.c): a job runs as rt_pool_threads parts, fn(arg, part, parts),
 * part 0 on the calling thread. A NULL pool is one thread. */
typedef struct RtPool RtPool;
typedef void (*RtPoolFn)(void *arg, int part, int parts);
bnn_status rt_pool_create(int threads, RtPool **pool);
int rt_pool_threads(const RtPool *pool);
void rt_pool_run(RtPool *pool, RtPoolFn fn, void *arg);
void rt_pool_free(RtPool *pool);

struct bnn_session {
    const bnn_model *model;
    bnn_device device;
    int max_batch;
    void *arena_mem;      /* CPU: the allocation */
    unsigned char *arena; /* CPU: 64-byte aligned, max_batch * arena_item bytes */
    RtCuda *cuda;         /* GPU */
    double last_ms;
    bool device_timing; /* GPU: last_ms from CUDA events instead of the wall clock */
    bool profiling;     /* time every step (bnn_session_set_profiling) */
    double *step_ms;    /* nsteps: each step's time in the last profiled run, -1 if none */
    RtPool *pool;       /* the CPU path's threads (bnn_session_set_threads); NULL: one */
    char device_name[160];
};

/* The device pointer or host address of a slot for a batch: arena refs scale by batch. */
static inline uint64_t rt_slot_offset(const BlobRef *r, int batch) {
    return r->space == BLOB_SPACE_ARENA ? r->offset * (uint64_t)batch : r->offset;
}

/* CPU path: run step s on the arena for this batch. Steps were checked at load. */
void rt_cpu_run_step(const bnn_model *m, const BlobStep *s, unsigned char *arena, int batch, RtPool *pool);

/* Bit-plane qdense on the CPU (docs/kernels.md, "Low-bit layers as bit-planes"): A holds the
 * xb activation planes of each row, [M][xb][ld] (a row's planes together, as the arena keeps a
 * batch item), W the wb weight planes [wb][N][ld] (32-bit words, K bits LSB-first,
 * zero-padded), two's complement when wsigned, one +-1 plane when bipolar.
 * acc = sum_p sum_q c_q 2^(p+q) popc(A_p AND W_q). Without t: int32 acc[M][N]. With t[N][L] and
 * dir[N] (< 0: acc <= t counts, else acc >= t): the level counts as yb bit-planes Y[M][yb][ldy], ldy = N rounded up to 256 bits with
 * zero words (exactly the next layer's A). The qgemm step (blob.h) runs it per batch item. */
void rt_cpu_qgemm_planes(const uint32_t *A, const uint32_t *W, int64_t M, int64_t N, int64_t ld,
                         int xb, int wb, bool wsigned, bool bipolar, int32_t *acc,
                         const int32_t *t, const int32_t *dir, int L, int yb, uint32_t *Y);

/* The same GEMM on int8 codes (the qgemm step's format BLOB_CODES_INT8, docs/kernels.md "Low-bit
 * layers on int8 MMA"): A[M][ld] u8 activation codes, W[N][ld] s8 weight codes, zero bytes past
 * K; acc = sum_k A[m][k] * W[n][k]. Without t: int32 acc[M][N]. With t and dir: the level
 * counts, as yb bit-planes (yformat BLOB_CODES_PLANES, the layout above) or as bytes
 * Y[M][blob_int8_ld(N)] (BLOB_CODES_INT8, zero bytes past N). */
void rt_cpu_qgemm_int8(const uint8_t *A, const int8_t *W, int64_t M, int64_t N, int64_t ld,
                       int32_t *acc, const int32_t *t, const int32_t *dir, int L, int yb,
                       int yformat, void *Y);

/* GPU path. create fills s->cuda and s->device_name or returns a status with a message.
 * run copies inputs in and outputs out when they are not NULL (NULL: a resident run on what
 * the arena holds), and sets s->last_ms when s->device_timing. arena: its device address. */
bnn_status rt_cuda_create(bnn_session *s);
bnn_status rt_cuda_run(bnn_session *s, int batch, const void *const *inputs, void *const *outputs);
/* The events a profiled run records (bnn_session_set_profiling), made once. */
bnn_status rt_cuda_prepare_profiling(bnn_session *s);
/* Graph runs leave step index out from now on (-1: none); bnn_session_set_graph_omit. */
bnn_status rt_cuda_set_graph_omit(bnn_session *s, int index);
uint64_t rt_cuda_arena(const RtCuda *c);
void rt_cuda_free(RtCuda *c);

#endif
