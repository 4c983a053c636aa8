/* capi_bench.c: time one model.bin through the C API (libbnnrt) on the GPU.
 *
 *   capi_bench MODEL.bin BATCH RUNS IN.f32 OUT.raw [pinned]
 *
 * IN.f32 holds BATCH items of the model's one input (raw bytes, C order); the outputs of the
 * last run go to OUT.raw so the caller can check them. bnn_session_run takes host pointers and
 * copies them in and out on every call (runtime.md), so inputs cannot stay resident: what is
 * timed is the whole call. With "pinned" the host buffers are page-locked (cuMemHostAlloc on
 * the primary context the runtime uses too), which is the best a caller can do today.
 * Prints the median and minimum of the wall time per call (host clock around
 * bnn_session_run, which is synchronous) and of bnn_session_last_run_ms (device events
 * around copies + graph). */
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

static cu_hostfree_fn host_free;

/* Page-locked host memory from the driver; NULL when the driver refuses. */
static void *pinned_alloc(size_t n) {
    static void *ctx;
    static cu_hostalloc_fn host_alloc;
    if (!ctx) {
        void *lib = dlopen("libcuda.so.1", RTLD_NOW);
        if (!lib)
            return NULL;
        cu_init_fn init = (cu_init_fn)dlsym(lib, "cuInit");
        cu_dev_fn dev_get = (cu_dev_fn)dlsym(lib, "cuDeviceGet");
        cu_retain_fn retain = (cu_retain_fn)dlsym(lib, "cuDevicePrimaryCtxRetain");
        cu_push_fn push = (cu_push_fn)dlsym(lib, "cuCtxPushCurrent_v2");
        host_alloc = (cu_hostalloc_fn)dlsym(lib, "cuMemHostAlloc");
        host_free = (cu_hostfree_fn)dlsym(lib, "cuMemFreeHost");
        int dev = 0;
        if (!init || !dev_get || !retain || !push || !host_alloc || !host_free || init(0) ||
            dev_get(&dev, 0) || retain(&ctx, dev) || push(ctx))
            return NULL;
    }
    void *p = NULL;
    /* PORTABLE (1): usable from every context, whatever the runtime makes current. */
    return host_alloc(&p, n, 1) ? NULL : p;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: capi_bench MODEL.bin BATCH RUNS IN.f32 OUT.raw [pinned]\n");
        return 2;
    }
    int batch = atoi(argv[2]);
    long runs = atol(argv[3]);
    int pinned = argc > 6 && !strcmp(argv[6], "pinned");
    if (batch < 1 || runs < 1) {
        fprintf(stderr, "capi_bench: BATCH and RUNS must be positive\n");
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
    /* Warm-up: the first run captures the graph; later ones warm clocks and caches. */
    for (int w = 0; w < 20 && st == BNN_STATUS_OK; w++)
        st = bnn_session_run(s, batch, ins, outs);
    for (long r = 0; r < runs && st == BNN_STATUS_OK; r++) {
        double t0 = now_ms();
        st = bnn_session_run(s, batch, ins, outs);
        wall[r] = now_ms() - t0;
        ev[r] = bnn_session_last_run_ms(s);
    }
    if (st != BNN_STATUS_OK)
        goto fail;
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
           batch, pinned ? "pinned" : "pageable", runs, wall[runs / 2], wall[0], ev[runs / 2], ev[0]);
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
