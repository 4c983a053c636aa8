/* capi_bench.c: time one model.bin through the C API (libbnnrt) on the GPU.
 *
 *   capi_bench MODEL.bin BATCH RUNS IN.f32 OUT.raw [pageable|pinned|resident]
 *
 * IN.f32 holds BATCH items of the model's one input (raw bytes, C order); the outputs of the
 * last run go to OUT.raw so the caller can check them. pageable (default) and pinned time
 * bnn_session_run, which copies from and to host buffers on every call: malloc'd, or
 * page-locked (cuMemHostAlloc on the primary context the runtime uses too). resident writes
 * the input once into the session's input buffer (cuMemcpyHtoD) and times
 * bnn_session_run_resident, no copies; the output is read from the session's output buffer.
 * Prints the median and minimum of the wall time per call (host clock around the synchronous
 * call, device timing off: what a caller sees), then of bnn_session_last_run_ms over as many
 * runs again with device timing on (CUDA events around copies + graph, or the graph alone). */
#define _POSIX_C_SOURCE 200809L
#include <bnnrt.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_dev_fn)(int *, int);
typedef int (*cu_retain_fn)(void **, int);
typedef int (*cu_push_fn)(void *);
typedef int (*cu_pop_fn)(void **);
typedef int (*cu_hostalloc_fn)(void **, size_t, unsigned);
typedef int (*cu_hostfree_fn)(void *);
typedef int (*cu_htod_fn)(unsigned long long, const void *, size_t);
typedef int (*cu_dtoh_fn)(void *, unsigned long long, size_t);
typedef int (*cu_sync_fn)(void);

static cu_hostalloc_fn host_alloc;
static cu_hostfree_fn host_free;
static cu_htod_fn htod;
static cu_dtoh_fn dtoh;
static cu_sync_fn ctx_sync;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* The driver's functions used here, with the primary context made current; false if not. */
static int open_driver(void) {
    static void *ctx;
    if (ctx)
        return 1;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib)
        return 0;
    cu_init_fn init = (cu_init_fn)dlsym(lib, "cuInit");
    cu_dev_fn dev_get = (cu_dev_fn)dlsym(lib, "cuDeviceGet");
    cu_retain_fn retain = (cu_retain_fn)dlsym(lib, "cuDevicePrimaryCtxRetain");
    cu_push_fn push = (cu_push_fn)dlsym(lib, "cuCtxPushCurrent_v2");
    host_alloc = (cu_hostalloc_fn)dlsym(lib, "cuMemHostAlloc");
    host_free = (cu_hostfree_fn)dlsym(lib, "cuMemFreeHost");
    htod = (cu_htod_fn)dlsym(lib, "cuMemcpyHtoD_v2");
    dtoh = (cu_dtoh_fn)dlsym(lib, "cuMemcpyDtoH_v2");
    ctx_sync = (cu_sync_fn)dlsym(lib, "cuCtxSynchronize");
    int dev = 0;
    if (!init || !dev_get || !retain || !push || !host_alloc || !host_free || !htod || !dtoh ||
        !ctx_sync || init(0) || dev_get(&dev, 0) || retain(&ctx, dev) || push(ctx)) {
        ctx = NULL;
        return 0;
    }
    return 1;
}

/* Page-locked host memory from the driver; NULL when the driver refuses. */
static void *pinned_alloc(size_t n) {
    void *p = NULL;
    /* PORTABLE (1): usable from every context, whatever the runtime makes current. */
    return open_driver() && !host_alloc(&p, n, 1) ? p : NULL;
}

/* RUNS timed calls; wall[] gets the host time of each, ev[] bnn_session_last_run_ms. */
static bnn_status time_runs(bnn_session *s, int batch, long runs, int resident,
                            const void *const *ins, void *const *outs, double *wall, double *ev) {
    bnn_status st = BNN_STATUS_OK;
    /* Warm-up: the first run captures the graph; later ones warm clocks and caches. */
    for (int w = 0; w < 20 && st == BNN_STATUS_OK; w++)
        st = resident ? bnn_session_run_resident(s, batch) : bnn_session_run(s, batch, ins, outs);
    for (int timing = 0; timing < 2; timing++) {
        bnn_session_set_device_timing(s, timing);
        for (long r = 0; r < runs && st == BNN_STATUS_OK; r++) {
            double t0 = now_ms();
            st = resident ? bnn_session_run_resident(s, batch) : bnn_session_run(s, batch, ins, outs);
            double t = now_ms() - t0;
            if (timing)
                ev[r] = bnn_session_last_run_ms(s);
            else
                wall[r] = t;
        }
    }
    return st;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: capi_bench MODEL.bin BATCH RUNS IN.f32 OUT.raw "
                        "[pageable|pinned|resident]\n");
        return 2;
    }
    int batch = atoi(argv[2]);
    long runs = atol(argv[3]);
    const char *mode = argc > 6 ? argv[6] : "pageable";
    int pinned = !strcmp(mode, "pinned"), resident = !strcmp(mode, "resident");
    if (batch < 1 || runs < 1) {
        fprintf(stderr, "capi_bench: BATCH and RUNS must be positive\n");
        return 2;
    }
    if (!pinned && !resident && strcmp(mode, "pageable")) {
        fprintf(stderr, "capi_bench: the mode is pageable, pinned or resident, not '%s'\n", mode);
        return 2;
    }
    bnn_model *m = NULL;
    bnn_session *s = NULL;
    void *in = NULL, *out = NULL;
    double *wall = NULL, *ev = NULL;
    int rc = 1;
    bnn_status st = bnn_model_load_file(argv[1], &m);
    if (st != BNN_STATUS_OK)
        goto fail;
    if (bnn_model_num_inputs(m) != 1 || bnn_model_num_outputs(m) != 1) {
        fprintf(stderr, "capi_bench: models with one input and one output only\n");
        goto done;
    }
    bnn_tensor_info ii, oi;
    bnn_model_input_info(m, 0, &ii);
    bnn_model_output_info(m, 0, &oi);
    size_t in_bytes = ii.item_bytes * (size_t)batch, out_bytes = oi.item_bytes * (size_t)batch;
    st = bnn_session_create(m, BNN_DEVICE_GPU, batch, &s);
    if (st != BNN_STATUS_OK)
        goto fail;
    in = pinned ? pinned_alloc(in_bytes) : malloc(in_bytes);
    out = pinned ? pinned_alloc(out_bytes) : malloc(out_bytes);
    wall = malloc(sizeof *wall * (size_t)runs);
    ev = malloc(sizeof *ev * (size_t)runs);
    if (!in || !out || !wall || !ev) {
        fprintf(stderr, "capi_bench: %s allocation failed\n", pinned ? "pinned" : "host");
        goto done;
    }
    FILE *f = fopen(argv[4], "rb");
    size_t got = f ? fread(in, 1, in_bytes, f) : 0;
    if (f)
        fclose(f);
    if (got != in_bytes) {
        fprintf(stderr, "capi_bench: %s: expected %zu bytes of input\n", argv[4], in_bytes);
        goto done;
    }
    const void *ins[1] = {in};
    void *outs[1] = {out};
    void *dev_in = NULL, *dev_out = NULL;
    if (resident) {
        if ((st = bnn_session_input_buffer(s, 0, batch, &dev_in)) != BNN_STATUS_OK ||
            (st = bnn_session_output_buffer(s, 0, batch, &dev_out)) != BNN_STATUS_OK)
            goto fail;
        /* Synchronized: the session's stream does not wait for the driver's copy. */
        if (!open_driver() || htod((unsigned long long)(uintptr_t)dev_in, in, in_bytes) ||
            ctx_sync()) {
            fprintf(stderr, "capi_bench: cannot copy the input to the session's buffer\n");
            goto done;
        }
    }
    st = time_runs(s, batch, runs, resident, ins, outs, wall, ev);
    if (st != BNN_STATUS_OK)
        goto fail;
    if (resident && dtoh(out, (unsigned long long)(uintptr_t)dev_out, out_bytes)) {
        fprintf(stderr, "capi_bench: cannot read the session's output buffer\n");
        goto done;
    }
    f = fopen(argv[5], "wb");
    if (!f || fwrite(out, 1, out_bytes, f) != out_bytes) {
        fprintf(stderr, "capi_bench: cannot write %s\n", argv[5]);
        if (f)
            fclose(f);
        goto done;
    }
    fclose(f);
    qsort(wall, (size_t)runs, sizeof *wall, cmp_double);
    qsort(ev, (size_t)runs, sizeof *ev, cmp_double);
    printf("capi batch %d %s runs %ld wall_median_ms %.5f wall_min_ms %.5f events_median_ms %.5f "
           "events_min_ms %.5f\n",
           batch, mode, runs, wall[runs / 2], wall[0], ev[runs / 2], ev[0]);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "capi_bench: %s: %s\n", bnn_status_str(st), bnn_last_error());
done:
    bnn_session_free(s);
    bnn_model_free(m);
    if (pinned) {
        if (in && host_free)
            host_free(in);
        if (out && host_free)
            host_free(out);
    } else {
        free(in);
        free(out);
    }
    free(wall);
    free(ev);
    return rc;
}
