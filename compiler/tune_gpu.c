/* tune_gpu.c: the tuner's measurer on this machine's GPU, through libbnnrt's public API: a GPU
 * session per variant, random inputs, warm-up runs, then profiled runs (bnn_session_set_profiling:
 * each step timed between CUDA events) whose per-step medians the tuner compares. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bnnrt.h"
#include "ir.h"
#include "tune.h"
#include "util.h"

enum { TUNE_WARMUP = 3, TUNE_WARMUP_MS = 100 };

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int fail_rt(const char *what, bnn_status st) {
    diag_error("--tune: %s: %s: %s", what, bnn_status_str(st), bnn_last_error());
    return -1;
}

/* A CPU-only blob opened on the GPU stops at its missing CUBIN, after the driver and the device
 * were found: that status says a GPU is there. */
static int gpu_probe(void *ctx, const char *cpu_blob) {
    (void)ctx;
    bnn_model *model = NULL;
    bnn_session *s = NULL;
    bnn_status st = bnn_model_load_file(cpu_blob, &model);
    if (st != BNN_STATUS_OK)
        return fail_rt("loading the probe model", st);
    st = bnn_session_create(model, BNN_DEVICE_GPU, 1, &s);
    bnn_session_free(s);
    bnn_model_free(model);
    if (st == BNN_STATUS_NO_CUBIN || st == BNN_STATUS_OK)
        return 0;
    diag_error("--tune measures the kernels on a GPU, and none can be used here (%s: %s); compile without "
               "--tune to use the cost model's tiles, or give --tune-file=FILE from a tuning run on the GPU "
               "the model will run on",
               bnn_status_str(st), bnn_last_error());
    return -1;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Inputs a trained model could see: floats in [-1, 1), integers and bits as random bytes. */
static void fill_input(unsigned char *p, size_t n, bnn_dtype dt, uint64_t *rng) {
    for (size_t i = 0; i < n;) {
        *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t r = (uint32_t)(*rng >> 33);
        if (dt == BNN_DTYPE_F32 && i + 4 <= n) {
            float f = (float)r / 2147483648.0f * 2.0f - 1.0f;
            memcpy(p + i, &f, 4);
            i += 4;
        } else {
            p[i++] = (unsigned char)r;
        }
    }
}

static int gpu_measure(void *ctx, const char *path, int batch, int runs, unsigned seed, double **step_ms,
                       int *nsteps, unsigned char **outputs, size_t *out_bytes, char *device, size_t device_len) {
    (void)ctx;
    bnn_model *model = NULL;
    bnn_session *s = NULL;
    int rc = -1, nin = 0, nout = 0, n = 0;
    void **ins = NULL, **outs = NULL;
    double *samples = NULL;
    *step_ms = NULL;
    *outputs = NULL;
    *out_bytes = 0;
    bnn_status st = bnn_model_load_file(path, &model);
    if (st != BNN_STATUS_OK) {
        fail_rt("loading a variant", st);
        goto done;
    }
    if ((st = bnn_session_create(model, BNN_DEVICE_GPU, batch, &s)) != BNN_STATUS_OK) {
        fail_rt("opening the GPU", st);
        goto done;
    }
    snprintf(device, device_len, "%s", bnn_session_device_name(s));
    nin = bnn_model_num_inputs(model);
    nout = bnn_model_num_outputs(model);
    n = bnn_model_num_steps(model);
    ins = xcalloc((size_t)nin + 1, sizeof *ins);
    outs = xcalloc((size_t)nout + 1, sizeof *outs);
    uint64_t rng = seed;
    size_t total = 0, off = 0;
    for (int i = 0; i < nin; i++) {
        bnn_tensor_info info;
        bnn_model_input_info(model, i, &info);
        ins[i] = xmalloc(info.item_bytes * (size_t)batch + 1);
        fill_input(ins[i], info.item_bytes * (size_t)batch, info.dtype, &rng);
    }
    for (int i = 0; i < nout; i++) {
        bnn_tensor_info info;
        bnn_model_output_info(model, i, &info);
        total += info.item_bytes * (size_t)batch;
    }
    *outputs = xmalloc(total + 1);
    for (int i = 0; i < nout; i++) {
        bnn_tensor_info info;
        bnn_model_output_info(model, i, &info);
        outs[i] = *outputs + off;
        off += info.item_bytes * (size_t)batch;
    }
    *out_bytes = total;
    /* Warm up: the graph captured, the clocks up (at least TUNE_WARMUP runs and TUNE_WARMUP_MS). */
    double t0 = now_ms();
    for (int r = 0; r < TUNE_WARMUP || now_ms() - t0 < TUNE_WARMUP_MS; r++)
        if ((st = bnn_session_run(s, batch, (const void *const *)ins, outs)) != BNN_STATUS_OK) {
            fail_rt("running a variant", st);
            goto done;
        }
    if ((st = bnn_session_set_profiling(s, 1)) != BNN_STATUS_OK) {
        fail_rt("timing steps", st);
        goto done;
    }
    samples = xcalloc((size_t)n * (size_t)runs + 1, sizeof *samples);
    for (int r = 0; r < runs; r++) {
        if ((st = bnn_session_run(s, batch, (const void *const *)ins, outs)) != BNN_STATUS_OK) {
            fail_rt("running a variant", st);
            goto done;
        }
        for (int i = 0; i < n; i++)
            samples[(size_t)i * (size_t)runs + (size_t)r] = bnn_session_step_ms(s, i);
    }
    *step_ms = xmalloc(((size_t)n + 1) * sizeof **step_ms);
    for (int i = 0; i < n; i++) {
        double *x = &samples[(size_t)i * (size_t)runs];
        qsort(x, (size_t)runs, sizeof *x, cmp_double);
        (*step_ms)[i] = x[runs / 2];
    }
    *nsteps = n;
    rc = 0;
done:
    for (int i = 0; ins && i < nin; i++)
        free(ins[i]);
    free(ins);
    free(outs);
    free(samples);
    bnn_session_free(s);
    bnn_model_free(model);
    if (rc != 0) {
        free(*outputs);
        *outputs = NULL;
        free(*step_ms);
        *step_ms = NULL;
    }
    return rc;
}

TuneMeasurer tune_gpu_measurer(void) { return (TuneMeasurer){.probe = gpu_probe, .measure = gpu_measure}; }
