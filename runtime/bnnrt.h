/* bnnrt.h: the bnncc runtime (libbnnrt). Loads a model.bin written by bnncc and runs it on
 * an NVIDIA GPU (through the driver, opened at run time: no CUDA toolkit needed) or on the
 * CPU, with bit-identical results on binary layers. Link with -lbnnrt (pkg-config bnnrt).
 *
 *     #include <bnnrt.h>
 *     #include <stdio.h>
 *
 *     int classify(const float *images, int n, int64_t *labels) { // images: n x 1x28x28
 *         bnn_model *model = NULL;
 *         bnn_session *session = NULL;
 *         bnn_status st = bnn_model_load_file("model.bin", &model);
 *         if (st == BNN_STATUS_OK)
 *             st = bnn_session_create(model, BNN_DEVICE_AUTO, n, &session);
 *         if (st == BNN_STATUS_OK) {
 *             const void *inputs[1] = {images};
 *             void *outputs[1] = {labels};
 *             st = bnn_session_run(session, n, inputs, outputs);
 *         }
 *         if (st != BNN_STATUS_OK)
 *             fprintf(stderr, "bnnrt: %s: %s\n", bnn_status_str(st), bnn_last_error());
 *         bnn_session_free(session);
 *         bnn_model_free(model);
 *         return st == BNN_STATUS_OK ? 0 : -1;
 *     }
 *
 * Rules: every function returns a status (or a plain value for queries); on failure the
 * thread's bnn_last_error() says what went wrong. The library never prints and never exits.
 * A model is immutable once loaded and may be shared by threads; a session is used by one
 * thread at a time and must be freed before its model. Full documentation: docs/runtime.md. */
#ifndef BNNRT_H
#define BNNRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(BNN_STATIC_ONLY)
#define BNN_API __attribute__((visibility("default")))
#else
#define BNN_API
#endif

#define BNN_MAX_RANK 8

typedef enum bnn_status {
    BNN_STATUS_OK = 0,
    BNN_STATUS_INVALID_ARGUMENT = 1,     /* a NULL pointer, a batch out of range, ... */
    BNN_STATUS_IO_ERROR = 2,             /* the file cannot be opened or read */
    BNN_STATUS_BAD_BLOB = 3,             /* not a model.bin, truncated or inconsistent */
    BNN_STATUS_CHECKSUM = 4,             /* a section's checksum does not match */
    BNN_STATUS_VERSION = 5,              /* written by a newer bnncc than this runtime */
    BNN_STATUS_OUT_OF_MEMORY = 6,        /* host memory */
    BNN_STATUS_NO_DRIVER = 7,            /* libcuda.so.1 cannot be opened or is unusable */
    BNN_STATUS_NO_DEVICE = 8,            /* the driver sees no GPU */
    BNN_STATUS_NO_CUBIN = 9,             /* the blob has no code for this GPU's architecture */
    BNN_STATUS_DEVICE_OUT_OF_MEMORY = 10, /* GPU memory */
    BNN_STATUS_DEVICE_ERROR = 11,        /* any other CUDA driver error */
    BNN_STATUS_UNSUPPORTED = 12          /* the plan needs what this device path lacks */
} bnn_status;

typedef enum bnn_device {
    BNN_DEVICE_AUTO = 0, /* the GPU when there is a usable one, else the CPU */
    BNN_DEVICE_CPU = 1,
    BNN_DEVICE_GPU = 2
} bnn_device;

/* Element types of inputs and outputs. B1 is bit-packed: element i of a batch item is
 * bit i%8 of byte i/8, 1 meaning +1 and 0 meaning -1. */
typedef enum bnn_dtype {
    BNN_DTYPE_F32 = 1,
    BNN_DTYPE_F16 = 2,
    BNN_DTYPE_I64 = 3,
    BNN_DTYPE_I32 = 4,
    BNN_DTYPE_I8 = 5,
    BNN_DTYPE_U8 = 6,
    BNN_DTYPE_B1 = 7
} bnn_dtype;

typedef struct bnn_model bnn_model;
typedef struct bnn_session bnn_session;

/* An input or output. dims[batch_axis] is -1: the batch, chosen at each run. The data of a
 * batch of B is B * item_bytes contiguous bytes, C order. name lives as long as the model. */
typedef struct bnn_tensor_info {
    const char *name;
    bnn_dtype dtype;
    int rank;
    int batch_axis;
    int64_t dims[BNN_MAX_RANK];
    size_t item_bytes;
} bnn_tensor_info;

/* One hook for every host allocation of the library, realloc-style: (user, NULL, n)
 * allocates, (user, p, n) resizes, (user, p, 0) frees and returns NULL. An allocation that
 * fails returns NULL, and the call that needed it returns BNN_STATUS_OUT_OF_MEMORY having
 * released what it took. fn == NULL restores malloc/realloc/free. Set it while no model
 * or session exists. */
typedef void *(*bnn_alloc_fn)(void *user, void *ptr, size_t size);
BNN_API void bnn_set_allocator(bnn_alloc_fn fn, void *user);

BNN_API const char *bnn_status_str(bnn_status status); /* "bad blob", ... */
/* The message of this thread's last failure ("" if none); valid until the next call. */
BNN_API const char *bnn_last_error(void);
BNN_API const char *bnn_version(void);             /* "0.1.0" */
BNN_API const char *bnn_dtype_name(bnn_dtype dtype); /* "f32", ... */

/* Load and check a blob: every offset, size and count is validated and every section's
 * checksum verified, so a damaged file gives a status, never a crash. load_memory copies. */
BNN_API bnn_status bnn_model_load_file(const char *path, bnn_model **model);
BNN_API bnn_status bnn_model_load_memory(const void *data, size_t len, bnn_model **model);
BNN_API void bnn_model_free(bnn_model *model); /* NULL is fine */

BNN_API int bnn_model_num_inputs(const bnn_model *model);
BNN_API int bnn_model_num_outputs(const bnn_model *model);
BNN_API bnn_status bnn_model_input_info(const bnn_model *model, int index, bnn_tensor_info *info);
BNN_API bnn_status bnn_model_output_info(const bnn_model *model, int index, bnn_tensor_info *info);
/* The GPU architectures the blob has code for, comma-separated ("sm_90a,sm_80"; "" if none). */
BNN_API const char *bnn_model_targets(const bnn_model *model);

/* The steps of the model's plan, in the order a run executes them (`bnncc --report` lists each
 * with the layers it computes). kind: the step kind ("bconv", "conv2d", ...; docs/blob-format.md,
 * "Step kinds"); kernel: its GPU kernel's name ("s3_bconv"), "" for none; on_cpu, on_gpu: 1
 * where a CPU or GPU session runs it (a GPU helper kernel's result the CPU path computes inside
 * the step that reads it; a step flagged CPU-only is a no-op on the GPU). */
typedef struct bnn_step_info {
    const char *kind;
    const char *kernel;
    int on_cpu, on_gpu;
} bnn_step_info;
BNN_API int bnn_model_num_steps(const bnn_model *model);
BNN_API bnn_status bnn_model_step_info(const bnn_model *model, int index, bnn_step_info *info);

/* A session owns the working memory for batches up to max_batch (on the GPU: one arena,
 * the weights, one CUDA graph per batch size used). */
BNN_API bnn_status bnn_session_create(const bnn_model *model, bnn_device device, int max_batch,
                                      bnn_session **session);
BNN_API void bnn_session_free(bnn_session *session); /* NULL is fine */
BNN_API bnn_device bnn_session_device(const bnn_session *session); /* CPU or GPU */
/* A line naming the device ("NVIDIA H200 (sm_90, running sm_90a code)", "CPU"). */
BNN_API const char *bnn_session_device_name(const bnn_session *session);
/* Run a batch (1 <= batch <= max_batch): inputs[i] points to batch * item_bytes of input i,
 * outputs[i] receives batch * item_bytes of output i. Synchronous. Same as copying the inputs
 * into the session's input buffers for this batch, bnn_session_run_resident, and copying the
 * outputs out of its output buffers: afterwards those buffers hold this run's data. */
BNN_API bnn_status bnn_session_run(bnn_session *session, int batch, const void *const *inputs,
                                   void *const *outputs);

/* Runs without copies, on data that stays where the model reads it. The session's buffer of
 * input or output `index` for runs of `batch` items: batch * item_bytes bytes; on a GPU
 * session a device address (a CUdeviceptr cast to void *), on a CPU session host memory.
 * The address depends on the batch (the working memory is laid out per batch size), so ask
 * for the batch you run; it stays valid until the session is freed. */
BNN_API bnn_status bnn_session_input_buffer(bnn_session *session, int index, int batch,
                                            void **buffer);
BNN_API bnn_status bnn_session_output_buffer(bnn_session *session, int index, int batch,
                                             void **buffer);
/* Run a batch on what the input buffers for this batch hold, leaving the results in its
 * output buffers. Synchronous: the outputs are complete on return. The run is not ordered
 * after work of the caller's own CUDA streams: finish writing the inputs first. Plans from
 * bnncc never write their input buffers, so inputs can be written once and run many times. */
BNN_API bnn_status bnn_session_run_resident(bnn_session *session, int batch);

/* Milliseconds the last successful run took: by default the wall clock around the call
 * (which costs nothing). With device timing on, a GPU session records CUDA events around the
 * copies and the graph and reports device time instead, at a few microseconds of host work
 * per run; a CPU session always reports the wall clock. */
BNN_API double bnn_session_last_run_ms(const bnn_session *session);
BNN_API bnn_status bnn_session_set_device_timing(bnn_session *session, int on);

/* The threads the CPU path runs on: the calling thread and threads - 1 workers that the session
 * starts here and ends when it is freed (default 1: no workers). The heavy steps (binary and
 * float convolutions, binary dense layers) split their output rows among them; every output is
 * computed by one thread in the same order, so the results are the same for any count. A GPU
 * session's CPU path is not used. 1 <= threads <= BNN_MAX_THREADS; on failure the session keeps
 * the threads it had. */
#define BNN_MAX_THREADS 256
BNN_API bnn_status bnn_session_set_threads(bnn_session *session, int threads);
BNN_API int bnn_session_threads(const bnn_session *session); /* 0 for NULL */

/* Per-step timing, to see where a run's time goes. With it on, every run times each plan step
 * on its own: a GPU session launches the steps one by one with a CUDA event after each instead
 * of replaying its CUDA graph (so a run is slower by the launch gaps: profile to compare steps,
 * not to time the model), a CPU session reads the wall clock around each step. Off again, GPU
 * runs replay the graph. bnn_session_step_ms: the milliseconds step `index` took in the last
 * run with profiling on; -1 for a step that the session's device does not run, before the
 * first profiled run, or for an index out of range. */
BNN_API bnn_status bnn_session_set_profiling(bnn_session *session, int on);
BNN_API double bnn_session_step_ms(const bnn_session *session, int index);

/* What a step costs inside the CUDA graph, where a launch overlaps the end of the kernel
 * before it and per-step profiling cannot see: with index >= 0, a GPU session's later runs
 * replay a graph without plan step `index` (captured once per batch size), so that the run's
 * time less the whole graph's is the step's share. THE OUTPUTS ARE WRONG while a step is left
 * out (the step's output keeps what an earlier run wrote there): for timing only, after at
 * least one full run, and only resident runs (bnn_session_run_resident) are meaningful.
 * index -1 restores the full graph. BNN_STATUS_INVALID_ARGUMENT for a CPU session or a step
 * the GPU does not run. */
BNN_API bnn_status bnn_session_set_graph_omit(bnn_session *session, int index);

#ifdef __cplusplus
}
#endif

#endif
