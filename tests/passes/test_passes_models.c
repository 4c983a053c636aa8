/* test_passes_models: real models through the pipeline. The .bnn models of this folder, and
 * TFC-w1a1 as QONNX (Brevitas export) and as FINN's streamlined graph: at -O0, -O1 and -O3
 * the outputs on the four MNIST images equal the imported graph's on the reference
 * interpreter and the predicted classes are the expected ones; at -O3 each hidden layer is
 * one fused binary op with integer thresholds and no batchnorm or sign is left. The ONNX
 * part skips (77) where ../shared is not available. */
#include <limits.h>

#include "frontend.h"
#include "harness.h"
#include "npy.h"

static char path_buf[3][4096];

static const char *shared_path(int slot, const char *rel) {
    const char *root = getenv("BNN_SHARED");
    if (!root)
        return NULL;
    snprintf(path_buf[slot], sizeof path_buf[slot], "%s/%s", root, rel);
    FILE *f = fopen(path_buf[slot], "rb");
    if (!f)
        return NULL;
    fclose(f);
    return path_buf[slot];
}

static int count_fused(const Graph *g) {
    int k = 0;
    for (int i = 0; i < g->nnodes; i++)
        k += g->nodes[i]->op == OP_BDENSE || g->nodes[i]->op == OP_BCONV2D;
    return k;
}

/* The .bnn models of this folder: before/after at each level on random inputs, and at -O3
 * no batchnorm or float threshold chain left. */
static void check_text_models(void) {
    const char *root = getenv("BNN_SOURCE_ROOT");
    static const char *const files[] = {"mlp_bn.bnn", "conv_pool.bnn"};
    if (!root)
        return;
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/tests/passes/%s", root, files[f]);
        Graph *ref = parse_text_file(path);
        CHECK_MSG(ref != NULL, "%s: %s", path, diag_message());
        if (!ref)
            continue;
        static const int levels[] = {0, 1, 3};
        for (int li = 0; li < 3; li++) {
            Graph *g = parse_text_file(path);
            CompileOptions o;
            memset(&o, 0, sizeof o);
            o.opt_level = levels[li];
            o.verify_each = true;
            o.repro_path = "passes-models-crash.bnn";
            int rc = run_passes(g, &o);
            CHECK_MSG(rc == 0, "%s -O%d: %s", files[f], levels[li], diag_message());
            Rng r = rng_seed(77 + f);
            char why[256];
            for (int t = 0; rc == 0 && t < 20; t++)
                CHECK_MSG(same_outputs(ref, g, 1 + t % 4, &r, why, sizeof why), "%s -O%d: %s",
                          files[f], levels[li], why);
            if (levels[li] == 3) {
                CHECK_MSG(count_ops(g, OP_BATCHNORM) == 0, "%s: batchnorm left", files[f]);
                CHECK_MSG(count_ops(g, OP_THRESHOLD) == 0, "%s: threshold left", files[f]);
                CHECK_MSG(count_fused(g) >= 1, "%s: nothing fused", files[f]);
            }
            free_graph(g);
        }
        free_graph(ref);
    }
}

/* The class of each image: argmax of f32 logits [B,C], or an i64 top-1 [B,1]. */
static int64_t predicted_class(const Tensor *t, int64_t b) {
    if (t->type.dtype == TY_I64)
        return ((const int64_t *)t->data)[b * t->type.dim[1]];
    int64_t classes = t->type.dim[1], best = 0;
    const float *v = (const float *)t->data + b * classes;
    for (int64_t c = 1; c < classes; c++)
        if (v[c] > v[best])
            best = c;
    return best;
}

/* One ONNX TFC-w1a1 model: outputs at -O0, -O1, -O3 equal the imported graph's on the four
 * MNIST images; the expected classes; at -O3 three bdense with integer thresholds and no
 * batchnorm, sign or threshold left. scale: what the images (0..255) are multiplied by. */
static void check_tfc(const char *rel, float scale, const NpyArray *x, const NpyArray *y) {
    const char *model = shared_path(0, rel);
    if (!model) {
        printf("%s not found: skipped\n", rel);
        return;
    }
    Graph *ref = import_onnx_file(model, NULL);
    CHECK_MSG(ref != NULL, "%s: %s", rel, diag_message());
    if (!ref)
        return;
    Tensor in;
    memset(&in, 0, sizeof in);
    in.type = ref->inputs[0]->type;
    for (int d = 0; d < in.type.rank; d++)
        if (in.type.dim[d] == DIM_BATCH)
            in.type.dim[d] = x->shape[0];
    in.nbytes = type_nbytes(&in.type, x->shape[0]);
    CHECK(in.nbytes == x->nbytes);
    in.data = xmalloc(x->nbytes);
    for (int64_t i = 0; i < (int64_t)(x->nbytes / 4); i++)
        ((float *)in.data)[i] = ((const float *)x->data)[i] * scale;

    Tensor want;
    CHECK(interp_run(ref, &in, &want) == 0);
    for (int64_t b = 0; b < x->shape[0]; b++)
        CHECK_MSG(predicted_class(&want, b) == ((int64_t *)y->data)[b],
                  "%s image %lld: class %lld, expected %lld", rel, (long long)b,
                  (long long)predicted_class(&want, b), (long long)((int64_t *)y->data)[b]);

    static const int levels[] = {0, 1, 3};
    for (int li = 0; li < 3; li++) {
        Graph *g = import_onnx_file(model, NULL);
        CHECK(g != NULL);
        if (!g)
            continue;
        Buf report = {0};
        CompileOptions o;
        memset(&o, 0, sizeof o);
        o.opt_level = levels[li];
        o.verify_each = true;
        o.report = &report;
        o.repro_path = "passes-models-crash.bnn";
        int rc = run_passes(g, &o);
        CHECK_MSG(rc == 0, "%s -O%d: %s", rel, levels[li], diag_message());
        if (rc == 0) {
            Tensor got;
            CHECK(interp_run(g, &in, &got) == 0);
            char why[256];
            CHECK_MSG(tensors_match(&want, &got, why, sizeof why), "%s -O%d: %s", rel,
                      levels[li], why);
            free_tensor(&got);
        }
        if (levels[li] == 3 && rc == 0) {
            CHECK_MSG(count_fused(g) == 3, "%s: %d fused binary layers, want 3 hidden layers",
                      rel, count_fused(g));
            CHECK(count_ops(g, OP_BATCHNORM) == 0);
            CHECK(count_ops(g, OP_SIGN) == 0);
            /* Only the input's binarization (binarize or a float threshold) stays. */
            CHECK_MSG(count_ops(g, OP_BINARIZE) + count_ops(g, OP_THRESHOLD) <= 1,
                      "%s: %d binarize and %d threshold left", rel, count_ops(g, OP_BINARIZE),
                      count_ops(g, OP_THRESHOLD));
            for (int i = 0; i < g->nnodes; i++) {
                const Node *n = g->nodes[i];
                if (n->op != OP_BDENSE)
                    continue;
                CHECK(n->in[2]->kind == VAL_CONST && n->in[2]->type.dtype == TY_I32);
                CHECK(n->in[3]->kind == VAL_CONST && n->in[3]->type.dtype == TY_I8);
            }
            CHECK_STR_CONTAINS(report.data ? report.data : "", "memory: peak");
            if (getenv("BNN_TEST_VERBOSE"))
                fprintf(stderr, "%s", report.data ? report.data : "");
        }
        buf_free(&report);
        free_graph(g);
    }
    free_tensor(&want);
    free_tensor(&in);
    free_graph(ref);
}

int main(void) {
    check_text_models();
    const char *input = shared_path(1, "models/finn/tfc_w1a1_input.npy");
    const char *expect = shared_path(2, "models/finn/tfc_w1a1_expected_output.npy");
    if (!input || !expect) {
        printf("BNN_SHARED models not found: TFC part skipped\n");
        return check_failures ? check_report("test_passes_models") : 77;
    }
    NpyArray x, y;
    char err[256];
    if (npy_read(input, &x, err, sizeof err) != 0 || npy_read(expect, &y, err, sizeof err) != 0) {
        CHECK_MSG(0, "%s", err);
        return check_report("test_passes_models");
    }
    CHECK(x.dtype == NPY_F32 && x.rank == 4 && y.dtype == NPY_I64);
    /* The QONNX model takes [0, 1]; FINN's streamlined one divides by 255 itself. */
    check_tfc("models/qonnx/TFC_1W1A.onnx", 1.0f / 255.0f, &x, &y);
    check_tfc("models/finn/tfc_w1a1_streamlined.onnx", 1.0f, &x, &y);
    npy_free(&x);
    npy_free(&y);
    return check_report("test_passes_models");
}
