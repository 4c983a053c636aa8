/* test_lowbit_models: the real low-bit QONNX models (../shared/models/qonnx) at -O0 (the
 * quantized float path) and -O3 (qdense over integer codes) on the reference interpreter:
 * TFC_1W2A and TFC_2W2A on the 10,000 MNIST test images (identical outputs, accuracy printed),
 * unsw_nb15-mlp-w2a2 and kwsmlp_w3a3 on random inputs in their valid range (identical
 * outputs). Skips (77) without ../shared. --sanitized (the ASan / UBSan build): the first 1,000
 * MNIST images, the outputs compared but the accuracy not (the interpreter on 10,000 images
 * twice was most of that run; the plain build checks the accuracy on all of them). */
#include <limits.h>

#include "../passes/harness.h"
#include "frontend.h"

static char shared_buf[4096];

static const char *shared_path(const char *rel) {
    const char *root = getenv("BNN_SHARED");
    if (!root)
        return NULL;
    snprintf(shared_buf, sizeof shared_buf, "%s/%s", root, rel);
    FILE *f = fopen(shared_buf, "rb");
    if (!f)
        return NULL;
    fclose(f);
    return shared_buf;
}

/* An IDX file from the MNIST distribution, gunzipped through gzip(1). */
static uint8_t *read_idx_gz(const char *path, int64_t *count, int64_t *item) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "gzip -dc '%s'", path);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    uint8_t hdr[4];
    uint8_t *data = NULL;
    if (fread(hdr, 1, 4, p) == 4) {
        int nd = hdr[3];
        int64_t dims[4] = {1, 1, 1, 1};
        bool ok = nd >= 1 && nd <= 4;
        for (int i = 0; ok && i < nd; i++) {
            uint8_t b[4];
            ok = fread(b, 1, 4, p) == 4;
            dims[i] = (int64_t)b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3];
        }
        *count = dims[0];
        *item = dims[1] * dims[2] * dims[3];
        size_t n = (size_t)(*count * *item);
        data = ok ? xmalloc(n) : NULL;
        if (data && fread(data, 1, n, p) != n) {
            free(data);
            data = NULL;
        }
    }
    pclose(p);
    return data;
}

static Graph *compile_model(const char *path, int level, Buf *report) {
    Graph *g = import_onnx_file(path, NULL);
    if (!g)
        return NULL;
    CompileOptions o;
    memset(&o, 0, sizeof o);
    o.opt_level = level;
    o.verify_each = true;
    o.report = report;
    o.repro_path = "lowbit-models-crash.bnn";
    if (run_passes(g, &o) != 0) {
        fprintf(stderr, "%s -O%d: %s\n", path, level, diag_message());
        free_graph(g);
        return NULL;
    }
    return g;
}

/* Run both graphs on in; true when the outputs are bit-identical. */
static bool same_bits(const Graph *a, const Graph *b, const Tensor *in, Tensor *out_a) {
    Tensor ob;
    if (interp_run(a, in, out_a) != 0 || interp_run(b, in, &ob) != 0) {
        fprintf(stderr, "run: %s\n", diag_message());
        return false;
    }
    bool same = out_a->nbytes == ob.nbytes && memcmp(out_a->data, ob.data, ob.nbytes) == 0;
    free_tensor(&ob);
    return same;
}

static bool sanitized;

static void check_tfc(const char *rel, double published) {
    const char *path = shared_path(rel);
    if (!path) {
        printf("%s not found: skipped\n", rel);
        return;
    }
    Buf report = {0};
    Graph *g0 = compile_model(path, 0, NULL), *g3 = compile_model(path, 3, &report);
    CHECK_MSG(g0 && g3, "%s did not compile", rel);
    if (!g0 || !g3)
        return;
    /* Every layer on integer codes, no float dense left. */
    CHECK_MSG(count_ops(g3, OP_QDENSE) == 4 && count_ops(g3, OP_DENSE) == 0 &&
                  count_ops(g3, OP_BATCHNORM) == 0,
              "%s -O3:\n%s", rel, report.data ? report.data : "");
    char ip[4096], lp[4096];
    const char *root = getenv("BNN_SHARED");
    snprintf(ip, sizeof ip, "%s/data/mnist/t10k-images-idx3-ubyte.gz", root);
    snprintf(lp, sizeof lp, "%s/data/mnist/t10k-labels-idx1-ubyte.gz", root);
    int64_t n, item, nl, one;
    uint8_t *img = read_idx_gz(ip, &n, &item), *lab = read_idx_gz(lp, &nl, &one);
    CHECK_MSG(img && lab && n == nl && item == 784, "MNIST test set not readable");
    if (img && lab && n == nl && item == 784) {
        int64_t correct = 0, differ = 0;
        const int64_t chunk = 1000;
        if (sanitized)
            n = chunk;
        for (int64_t b0 = 0; b0 < n; b0 += chunk) {
            int64_t B = n - b0 < chunk ? n - b0 : chunk;
            int64_t d[4] = {B, 1, 28, 28};
            Tensor in = {make_type(TY_F32, 4, d), NULL, (size_t)(B * 784) * 4};
            in.data = xmalloc(in.nbytes);
            for (int64_t i = 0; i < B * 784; i++) /* numpy: x.astype(f32) * f32(1/255) */
                ((float *)in.data)[i] = (float)img[b0 * 784 + i] * (float)(1.0 / 255.0);
            Tensor out;
            if (!same_bits(g0, g3, &in, &out))
                differ++;
            for (int64_t b = 0; b < B; b++) {
                const float *y = (const float *)out.data + b * 10;
                int best = 0;
                for (int c = 1; c < 10; c++)
                    best = y[c] > y[best] ? c : best;
                correct += best == lab[b0 + b];
            }
            free_tensor(&out);
            free(in.data);
        }
        CHECK_MSG(differ == 0, "%s: %lld chunks of 1000 images differ between -O0 and -O3", rel,
                  (long long)differ);
        double acc = 100.0 * (double)correct / (double)n;
        printf("%s: accuracy %.2f %% on %lld MNIST test images (published %.2f %%), -O0 and "
               "-O3 outputs bit-identical\n",
               rel, acc, (long long)n, published);
        CHECK_MSG(sanitized || fabs(acc - published) < 1.0, "%s: accuracy %.2f %%", rel, acc);
    }
    free(img);
    free(lab);
    buf_free(&report);
    free_graph(g0);
    free_graph(g3);
}

/* Random inputs of the model's valid range; gen(i) gives element i. */
static void check_random(const char *rel, float (*gen)(Rng *r), int min_qdense) {
    const char *path = shared_path(rel);
    if (!path) {
        printf("%s not found: skipped\n", rel);
        return;
    }
    Buf report = {0};
    Graph *g0 = compile_model(path, 0, NULL), *g3 = compile_model(path, 3, &report);
    CHECK_MSG(g0 && g3, "%s did not compile", rel);
    if (!g0 || !g3)
        return;
    int nq = count_ops(g3, OP_QDENSE);
    CHECK_MSG(nq >= min_qdense, "%s: %d qdense\n%s", rel, nq, report.data ? report.data : "");
    Rng r = rng_seed(2026);
    int64_t differ = 0, B = sanitized ? 200 : 2000;
    for (int t = 0; t < 3; t++) {
        Type ty = g0->inputs[0]->type;
        ty.dim[0] = B;
        Tensor in = {ty, NULL, type_nbytes(&ty, 1)};
        in.data = xmalloc(in.nbytes);
        for (size_t i = 0; i < in.nbytes / 4; i++)
            ((float *)in.data)[i] = gen(&r);
        Tensor out;
        differ += !same_bits(g0, g3, &in, &out);
        free_tensor(&out);
        free(in.data);
    }
    CHECK_MSG(differ == 0, "%s: outputs differ between -O0 and -O3", rel);
    printf("%s: %d layers on qdense; -O0 and -O3 outputs bit-identical on %lld random inputs\n",
           rel, nq, (long long)(3 * B));
    buf_free(&report);
    free_graph(g0);
    free_graph(g3);
}

/* UNSW-NB15 features are bipolar bits (the model maps x to (x + 1) / 2). */
static float gen_unsw(Rng *r) { return rng_int(r, 0, 1) ? 1.0f : -1.0f; }
/* KWS MFCC features: the input quant (8-bit, scale 0.83) covers about +-105. */
static float gen_kws(Rng *r) {
    return rng_int(r, 0, 3) == 0 ? (float)rng_int(r, -110, 110) * 0.5f : rng_float(r, -110, 110);
}

int main(int argc, char **argv) {
    sanitized = argc > 1 && strcmp(argv[1], "--sanitized") == 0;
    if (!shared_path("models/qonnx/TFC_1W2A.onnx")) {
        printf("../shared not available: skipped\n");
        return 77;
    }
    check_tfc("models/qonnx/TFC_1W2A.onnx", 94.79);
    check_tfc("models/qonnx/TFC_2W2A.onnx", 96.60);
    check_random("models/qonnx/unsw_nb15-mlp-w2a2.onnx", gen_unsw, 2);
    check_random("models/qonnx/kwsmlp_w3a3.onnx", gen_kws, 0);
    return check_report("test_lowbit_models");
}
