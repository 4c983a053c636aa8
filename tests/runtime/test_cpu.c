/* test_cpu.c: blobs built by hand with the writer run on the CPU path and match a plain C
 * computation of the same math exactly (binary layers bit for bit, float layers in the same
 * order, so equal to the last bit too); write -> file -> load round trips; model queries;
 * the device choice without a GPU; run-time argument checks; resident runs on the session's
 * own buffers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bnnrt.h"
#include "check.h"
#include "testmodels.h"

static void random_input(uint64_t *s, float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        x[i] = test_randf(s);
}

static bnn_model *load(const Buf *b) {
    bnn_model *m = NULL;
    bnn_status st = bnn_model_load_memory(b->data, b->len, &m);
    CHECK_MSG(st == BNN_STATUS_OK, "load: %s: %s", bnn_status_str(st), bnn_last_error());
    return m;
}

static void test_mlp(void) {
    TestMlp ref;
    Buf b = {0};
    build_mlp(1, &b, &ref, NULL, NULL);
    bnn_model *m = load(&b);
    if (!m)
        return;
    CHECK(bnn_model_num_inputs(m) == 1 && bnn_model_num_outputs(m) == 2);
    bnn_tensor_info info;
    CHECK(bnn_model_input_info(m, 0, &info) == BNN_STATUS_OK);
    CHECK(!strcmp(info.name, "x") && info.dtype == BNN_DTYPE_F32 && info.rank == 2 &&
          info.dims[0] == -1 && info.dims[1] == MLP_K0 && info.item_bytes == MLP_K0 * 4 &&
          info.batch_axis == 0);
    CHECK(bnn_model_output_info(m, 1, &info) == BNN_STATUS_OK);
    CHECK(!strcmp(info.name, "label") && info.dtype == BNN_DTYPE_I64 && info.item_bytes == 8);
    CHECK(bnn_model_output_info(m, 2, &info) == BNN_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(bnn_last_error(), "out of range");
    CHECK(!strcmp(bnn_model_targets(m), ""));

    bnn_session *s = NULL;
    bnn_status st = bnn_session_create(m, BNN_DEVICE_CPU, 9, &s);
    CHECK_MSG(st == BNN_STATUS_OK, "%s", bnn_last_error());
    if (st == BNN_STATUS_OK) {
        CHECK(bnn_session_device(s) == BNN_DEVICE_CPU);
        uint64_t seed = 7;
        static const int batches[] = {1, 3, 9, 2};
        for (size_t bi = 0; bi < sizeof batches / sizeof *batches; bi++) {
            int n = batches[bi];
            float x[9 * MLP_K0], logits[90], want[90];
            int64_t label[9], want_label[9];
            random_input(&seed, x, (size_t)n * MLP_K0);
            const void *in[1] = {x};
            void *out[2] = {logits, label};
            st = bnn_session_run(s, n, in, out);
            CHECK_MSG(st == BNN_STATUS_OK, "run: %s", bnn_last_error());
            mlp_reference(&ref, n, x, want, want_label);
            CHECK_MSG(!memcmp(logits, want, (size_t)n * 40), "mlp logits differ at batch %d", n);
            CHECK_MSG(!memcmp(label, want_label, (size_t)n * 8), "mlp labels differ at batch %d", n);
        }
        CHECK(bnn_session_last_run_ms(s) >= 0.0);
        /* Run-time argument checks. */
        float x[MLP_K0] = {0}, logits[10];
        int64_t label[1];
        const void *in[1] = {x};
        void *out[2] = {logits, label};
        CHECK(bnn_session_run(s, 0, in, out) == BNN_STATUS_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(bnn_last_error(), "outside 1..9");
        CHECK(bnn_session_run(s, 10, in, out) == BNN_STATUS_INVALID_ARGUMENT);
        CHECK(bnn_session_run(s, 1, NULL, out) == BNN_STATUS_INVALID_ARGUMENT);
        void *out_null[2] = {logits, NULL};
        CHECK(bnn_session_run(s, 1, in, out_null) == BNN_STATUS_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(bnn_last_error(), "'label'");
    }
    bnn_session_free(s);
    CHECK(bnn_session_create(m, BNN_DEVICE_CPU, 0, &s) == BNN_STATUS_INVALID_ARGUMENT && !s);
    CHECK(bnn_session_create(m, (bnn_device)7, 1, &s) == BNN_STATUS_INVALID_ARGUMENT && !s);
    bnn_model_free(m);
    buf_free(&b);
    free_mlp(&ref);
}

/* The conv test model loaded into a CPU session of max_batch (a failed check if it cannot be). */
typedef struct ConvFixture {
    TestConv ref;
    Buf blob;
    bnn_model *m;
    bnn_session *s;
} ConvFixture;

static bool open_conv(uint64_t seed, int max_batch, ConvFixture *f) {
    memset(f, 0, sizeof *f);
    build_conv(seed, &f->blob, &f->ref, NULL, NULL);
    f->m = load(&f->blob);
    bool ok = f->m && bnn_session_create(f->m, BNN_DEVICE_CPU, max_batch, &f->s) == BNN_STATUS_OK;
    CHECK_MSG(ok, "conv model: %s", bnn_last_error());
    return ok;
}

static void close_conv(ConvFixture *f) {
    bnn_session_free(f->s);
    bnn_model_free(f->m);
    buf_free(&f->blob);
    free_conv(&f->ref);
}

/* A run of n (<= 5) random items equals conv_reference bit for bit, and its bits are not
 * degenerate (both signs appear). */
static void check_conv_run(ConvFixture *f, int n, uint64_t *seed, const char *what) {
    static float x[5 * CONV_IN], logits[50], logits2[50], bits[5 * 990], stem[5 * 48];
    static float wl[50], wb[5 * 990], ws[5 * 48];
    random_input(seed, x, (size_t)n * CONV_IN);
    const void *in[1] = {x};
    void *out[4] = {logits, logits2, bits, stem};
    bnn_status st = bnn_session_run(f->s, n, in, out);
    CHECK_MSG(st == BNN_STATUS_OK, "%s: run: %s", what, bnn_last_error());
    conv_reference(&f->ref, n, x, wl, wb, ws);
    CHECK_MSG(!memcmp(bits, wb, (size_t)n * 990 * 4), "%s: conv bits differ at batch %d", what, n);
    CHECK_MSG(!memcmp(logits, wl, (size_t)n * 40), "%s: conv logits differ at batch %d", what, n);
    CHECK_MSG(!memcmp(logits2, wl, (size_t)n * 40), "%s: copied logits differ at batch %d", what, n);
    CHECK_MSG(!memcmp(stem, ws, (size_t)n * 48 * 4), "%s: float stem differs at batch %d", what, n);
    int plus = 0;
    for (int i = 0; i < n * 990; i++)
        plus += bits[i] > 0;
    CHECK_MSG(plus > n * 50 && plus < n * 940, "%s: %d of %d bits are +1", what, plus, n * 990);
}

static void test_conv(void) {
    ConvFixture f;
    uint64_t seed = 11;
    static const int batches[] = {1, 5, 2};
    if (open_conv(2, 5, &f))
        for (size_t bi = 0; bi < sizeof batches / sizeof *batches; bi++)
            check_conv_run(&f, batches[bi], &seed, "one thread");
    close_conv(&f);
}

/* Resident runs: the session's buffers for a batch, written in place, run without copies,
 * give what bnn_session_run gives; bnn_session_run leaves its data in those buffers; the
 * inputs survive the run; every bad argument is INVALID_ARGUMENT naming it. */
static void test_resident(void) {
    TestConv ref;
    Buf b = {0};
    build_conv(6, &b, &ref, NULL, NULL);
    bnn_model *m = load(&b);
    bnn_session *s = NULL, *t = NULL;
    if (!m || bnn_session_create(m, BNN_DEVICE_CPU, 5, &s) != BNN_STATUS_OK ||
        bnn_session_create(m, BNN_DEVICE_CPU, 5, &t) != BNN_STATUS_OK) {
        CHECK_MSG(0, "resident: %s", bnn_last_error());
        goto done;
    }
    static const size_t out_bytes[4] = {40, 40, 990 * 4, 48 * 4};
    uint64_t seed = 21;
    static const int batches[] = {1, 3, 5, 3};
    for (size_t bi = 0; bi < sizeof batches / sizeof *batches; bi++) {
        int n = batches[bi];
        static float x[5 * CONV_IN], o0[50], o1[50], o2[5 * 990], o3[5 * 48];
        random_input(&seed, x, (size_t)n * CONV_IN);
        void *in = NULL, *out[4] = {0};
        CHECK(bnn_session_input_buffer(s, 0, n, &in) == BNN_STATUS_OK && in);
        for (int i = 0; i < 4; i++)
            CHECK(bnn_session_output_buffer(s, i, n, &out[i]) == BNN_STATUS_OK && out[i]);
        if (!in || !out[0] || !out[1] || !out[2] || !out[3])
            break;
        memcpy(in, x, (size_t)n * CONV_IN * 4);
        for (int i = 0; i < 4; i++) /* every byte of the outputs must be written */
            memset(out[i], 0xa5, (size_t)n * out_bytes[i]);
        for (int rep = 0; rep < 2; rep++) {
            bnn_status st = bnn_session_run_resident(s, n);
            CHECK_MSG(st == BNN_STATUS_OK, "resident run: %s", bnn_last_error());
            CHECK_MSG(!memcmp(in, x, (size_t)n * CONV_IN * 4), "the run changed its input");
        }
        const void *ins[1] = {x};
        void *outs[4] = {o0, o1, o2, o3};
        CHECK(bnn_session_run(t, n, ins, outs) == BNN_STATUS_OK);
        for (int i = 0; i < 4; i++)
            CHECK_MSG(!memcmp(out[i], outs[i], (size_t)n * out_bytes[i]),
                      "resident output %d differs from bnn_session_run at batch %d", i, n);
        /* bnn_session_run uses the same buffers: they hold its inputs and outputs after. */
        void *tin = NULL, *tout = NULL;
        CHECK(bnn_session_input_buffer(t, 0, n, &tin) == BNN_STATUS_OK &&
              !memcmp(tin, x, (size_t)n * CONV_IN * 4));
        CHECK(bnn_session_output_buffer(t, 2, n, &tout) == BNN_STATUS_OK &&
              !memcmp(tout, o2, (size_t)n * out_bytes[2]));
    }
    /* The buffers move with the batch (item n sits at batch * offset + n * bytes). */
    void *p1 = NULL, *p5 = NULL;
    CHECK(bnn_session_output_buffer(s, 3, 1, &p1) == BNN_STATUS_OK);
    CHECK(bnn_session_output_buffer(s, 3, 5, &p5) == BNN_STATUS_OK);
    CHECK(p1 && p5 && p1 != p5);
    CHECK(bnn_session_last_run_ms(s) >= 0.0);
    CHECK(bnn_session_set_device_timing(s, 1) == BNN_STATUS_OK); /* no effect on the CPU */
    CHECK(bnn_session_run_resident(s, 2) == BNN_STATUS_OK && bnn_session_last_run_ms(s) >= 0.0);

    /* Bad arguments. */
    void *p = &p;
    CHECK(bnn_session_input_buffer(s, 1, 1, &p) == BNN_STATUS_INVALID_ARGUMENT && !p);
    CHECK_STR_CONTAINS(bnn_last_error(), "bnn_session_input_buffer: index 1 is out of range");
    CHECK_STR_CONTAINS(bnn_last_error(), "1 input)");
    CHECK(bnn_session_output_buffer(s, -1, 1, &p) == BNN_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(bnn_last_error(), "index -1");
    CHECK(bnn_session_output_buffer(s, 4, 1, &p) == BNN_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(bnn_last_error(), "4 outputs");
    CHECK(bnn_session_input_buffer(s, 0, 0, &p) == BNN_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(bnn_last_error(), "batch 0 is outside 1..5");
    CHECK(bnn_session_output_buffer(s, 0, 6, &p) == BNN_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(bnn_last_error(), "bnn_session_output_buffer: batch 6");
    CHECK(bnn_session_input_buffer(s, 0, 1, NULL) == BNN_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(bnn_last_error(), "buffer is NULL");
    p = &p;
    CHECK(bnn_session_input_buffer(NULL, 0, 1, &p) == BNN_STATUS_INVALID_ARGUMENT && !p);
    CHECK_STR_CONTAINS(bnn_last_error(), "session is NULL");
    CHECK(bnn_session_run_resident(s, 0) == BNN_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(bnn_last_error(), "bnn_session_run_resident: batch 0 is outside 1..5");
    CHECK(bnn_session_run_resident(s, 6) == BNN_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(bnn_last_error(), "batch 6");
    CHECK(bnn_session_run_resident(NULL, 1) == BNN_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(bnn_last_error(), "session is NULL");
    CHECK(bnn_session_set_device_timing(NULL, 1) == BNN_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(bnn_last_error(), "session is NULL");
done:
    bnn_session_free(s);
    bnn_session_free(t);
    bnn_model_free(m);
    buf_free(&b);
    free_conv(&ref);
}

/* Written with blob_write_file, loaded from the file, same results as from memory. */
static void test_round_trip(void) {
    TestMlp ref;
    Buf b = {0};
    build_mlp(3, &b, &ref, NULL, NULL);
    char path[] = "/tmp/bnnrt_test_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    close(fd);
    /* The writer is deterministic: the same model twice gives the same bytes. */
    Buf again = {0};
    TestMlp ref2;
    build_mlp(3, &again, &ref2, NULL, NULL);
    CHECK(again.len == b.len && !memcmp(again.data, b.data, b.len));
    CHECK(b.len % 64 == 0 && !memcmp(b.data, "BNNMODEL", 8));
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(b.data, 1, b.len, f) == b.len);
    if (f)
        fclose(f);
    bnn_model *m = NULL;
    bnn_status st = bnn_model_load_file(path, &m);
    CHECK_MSG(st == BNN_STATUS_OK, "%s", bnn_last_error());
    bnn_session *s = NULL;
    if (m && bnn_session_create(m, BNN_DEVICE_CPU, 4, &s) == BNN_STATUS_OK) {
        float x[4 * MLP_K0], logits[40], want[40];
        int64_t label[4], want_label[4];
        uint64_t seed = 5;
        random_input(&seed, x, sizeof x / sizeof *x);
        const void *in[1] = {x};
        void *out[2] = {logits, label};
        CHECK(bnn_session_run(s, 4, in, out) == BNN_STATUS_OK);
        mlp_reference(&ref, 4, x, want, want_label);
        CHECK(!memcmp(logits, want, sizeof want) && !memcmp(label, want_label, sizeof label));
    }
    bnn_session_free(s);
    bnn_model_free(m);
    remove(path);
    /* A missing file and a directory are I/O errors naming the path. */
    CHECK(bnn_model_load_file("/nonexistent/model.bin", &m) == BNN_STATUS_IO_ERROR && !m);
    CHECK_STR_CONTAINS(bnn_last_error(), "/nonexistent/model.bin");
    CHECK(bnn_model_load_file("/tmp", &m) != BNN_STATUS_OK && !m);
    CHECK(bnn_model_load_file(NULL, &m) == BNN_STATUS_INVALID_ARGUMENT);
    CHECK(bnn_model_load_memory(b.data, b.len, NULL) == BNN_STATUS_INVALID_ARGUMENT);
    buf_free(&b);
    buf_free(&again);
    free_mlp(&ref);
    free_mlp(&ref2);
}

/* The GPU path where it cannot run: a status and a message, never a crash; AUTO falls back
 * to the CPU. BNN_CUDA_LIBRARY points the runtime at a driver that does not exist. */
static void test_devices(void) {
    TestMlp ref;
    Buf b = {0};
    build_mlp(4, &b, &ref, NULL, NULL);
    bnn_model *m = load(&b);
    bnn_session *s = NULL;
    if (m) {
        setenv("BNN_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
        bnn_status st = bnn_session_create(m, BNN_DEVICE_GPU, 2, &s);
        CHECK(st == BNN_STATUS_NO_DRIVER && !s);
        CHECK_STR_CONTAINS(bnn_last_error(), "no NVIDIA driver");
        CHECK_STR_CONTAINS(bnn_last_error(), "CPU");
        st = bnn_session_create(m, BNN_DEVICE_AUTO, 2, &s);
        CHECK(st == BNN_STATUS_OK && s && bnn_session_device(s) == BNN_DEVICE_CPU);
        CHECK(!strcmp(bnn_session_device_name(s), "CPU"));
        bnn_session_free(s);
        s = NULL;
        unsetenv("BNN_CUDA_LIBRARY");
        /* With the real driver lookup: no GPU here, or a GPU and no code for it. */
        st = bnn_session_create(m, BNN_DEVICE_GPU, 2, &s);
        CHECK_MSG(st == BNN_STATUS_NO_DRIVER || st == BNN_STATUS_NO_DEVICE ||
                  st == BNN_STATUS_NO_CUBIN, "%s: %s", bnn_status_str(st), bnn_last_error());
        CHECK(!s && bnn_last_error()[0]);
        st = bnn_session_create(m, BNN_DEVICE_AUTO, 2, &s);
        CHECK(st == BNN_STATUS_OK && bnn_session_device(s) == BNN_DEVICE_CPU);
        bnn_session_free(s);
    }
    bnn_model_free(m);
    buf_free(&b);
    free_mlp(&ref);
}

/* The plan's steps through the C API, and per-step timing on the CPU path: every step the CPU
 * runs gets a time (GPU helper kernels -1), the times add up to no more than the run, and a
 * profiled run computes what an ordinary one does. */
static void test_profile(void) {
    ConvFixture f;
    if (!open_conv(2, 3, &f)) {
        close_conv(&f);
        return;
    }
    bnn_model *m = f.m;
    bnn_session *s = f.s;
    int n = bnn_model_num_steps(m);
    CHECK_MSG(n >= 3, "%d steps", n);
    CHECK(bnn_model_num_steps(NULL) == 0);
    bnn_step_info info;
    int cpu_steps = 0;
    for (int i = 0; i < n; i++) {
        CHECK(bnn_model_step_info(m, i, &info) == BNN_STATUS_OK);
        CHECK_MSG(info.kind && info.kind[0] && info.kernel, "step %d has a kind and a kernel string", i);
        cpu_steps += info.on_cpu;
    }
    CHECK(cpu_steps > 0);
    CHECK(bnn_model_step_info(m, n, &info) == BNN_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(bnn_last_error(), "out of range");
    CHECK(bnn_model_step_info(m, 0, NULL) == BNN_STATUS_INVALID_ARGUMENT);
    CHECK(bnn_session_set_profiling(NULL, 1) == BNN_STATUS_INVALID_ARGUMENT);
    CHECK(bnn_session_step_ms(s, 0) == -1.0); /* nothing profiled yet */
    CHECK(bnn_session_set_graph_omit(NULL, 0) == BNN_STATUS_INVALID_ARGUMENT);
    CHECK(bnn_session_set_graph_omit(s, 0) == BNN_STATUS_INVALID_ARGUMENT); /* a CPU session */
    CHECK_STR_CONTAINS(bnn_last_error(), "CPU session has no graph");

    static float x[3 * CONV_IN], plain[4][3 * 990], prof[4][3 * 990];
    uint64_t seed = 5;
    random_input(&seed, x, 3 * CONV_IN);
    const void *in[1] = {x};
    void *out_plain[4] = {plain[0], plain[1], plain[2], plain[3]};
    void *out_prof[4] = {prof[0], prof[1], prof[2], prof[3]};
    CHECK(bnn_session_run(s, 3, in, out_plain) == BNN_STATUS_OK);
    CHECK(bnn_session_step_ms(s, 0) == -1.0); /* profiling is off */
    CHECK(bnn_session_set_profiling(s, 1) == BNN_STATUS_OK);
    CHECK(bnn_session_run(s, 3, in, out_prof) == BNN_STATUS_OK);
    CHECK_MSG(!memcmp(plain, prof, sizeof plain), "a profiled run computes what an ordinary run does");
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        bnn_model_step_info(m, i, &info);
        double ms = bnn_session_step_ms(s, i);
        CHECK_MSG(info.on_cpu ? ms >= 0.0 : ms == -1.0, "step %d (%s): %g ms", i, info.kind, ms);
        sum += ms > 0 ? ms : 0.0;
    }
    CHECK_MSG(sum <= bnn_session_last_run_ms(s) + 1e-6, "steps %g ms, the run %g ms", sum,
              bnn_session_last_run_ms(s));
    CHECK(bnn_session_step_ms(s, -1) == -1.0 && bnn_session_step_ms(s, n) == -1.0);
    CHECK(bnn_session_step_ms(NULL, 0) == -1.0);
    CHECK(bnn_session_set_profiling(s, 0) == BNN_STATUS_OK);
    CHECK(bnn_session_run(s, 3, in, out_prof) == BNN_STATUS_OK);
    CHECK(!memcmp(plain, prof, sizeof plain));
    close_conv(&f);
}

/* The CPU path on several threads: the same bits and floats as the reference for every thread
 * count, batches smaller and larger than it; bad counts are refused and change nothing. */
static void test_threads(void) {
    ConvFixture f;
    if (!open_conv(3, 5, &f)) {
        close_conv(&f);
        return;
    }
    bnn_session *s = f.s;
    CHECK(bnn_session_threads(s) == 1 && bnn_session_threads(NULL) == 0);
    CHECK(bnn_session_set_threads(s, 0) == BNN_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(bnn_last_error(), "give 1 to");
    CHECK(bnn_session_set_threads(s, BNN_MAX_THREADS + 1) == BNN_STATUS_INVALID_ARGUMENT);
    CHECK(bnn_session_set_threads(NULL, 2) == BNN_STATUS_INVALID_ARGUMENT);
    CHECK(bnn_session_threads(s) == 1);
    uint64_t seed = 21;
    static const int threads[] = {2, 3, 7, 1, 4};
    static const int batches[] = {1, 5, 2};
    for (size_t ti = 0; ti < sizeof threads / sizeof *threads; ti++) {
        CHECK(bnn_session_set_threads(s, threads[ti]) == BNN_STATUS_OK);
        CHECK(bnn_session_threads(s) == threads[ti]);
        char what[32];
        snprintf(what, sizeof what, "%d threads", threads[ti]);
        for (size_t bi = 0; bi < sizeof batches / sizeof *batches; bi++)
            check_conv_run(&f, batches[bi], &seed, what);
    }
    close_conv(&f);
}

static void test_strings(void) {
    for (int i = 0; i <= BNN_STATUS_UNSUPPORTED; i++)
        CHECK(strcmp(bnn_status_str((bnn_status)i), "unknown status") != 0);
    CHECK(!strcmp(bnn_status_str((bnn_status)99), "unknown status"));
    CHECK(!strcmp(bnn_dtype_name(BNN_DTYPE_I64), "i64"));
    CHECK(!strcmp(bnn_version(), BNN_VERSION));
    bnn_model_free(NULL);
    bnn_session_free(NULL);
}

int main(void) {
    test_strings();
    test_mlp();
    test_conv();
    test_resident();
    test_round_trip();
    test_devices();
    test_profile();
    test_threads();
    return check_report("test_cpu");
}
