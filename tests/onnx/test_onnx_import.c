/* test_onnx_import.c: the ONNX importer on the real models of ../shared/models (import,
 * report, reference-interpreter run on the TFC inputs) and on bad input built here with
 * the generated protobuf-c API (truncated and random bytes, an unsupported op, a missing
 * initializer, a cycle, bad attributes, external data, a model over 2 GiB). */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "frontend.h"
#include "ir.h"
#include "npy.h"
#include "onnx_import.h"

static const char *shared_dir(void) {
    const char *s = getenv("BNN_SHARED");
    return s ? s : "../shared";
}

static char *model_path(const char *rel) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/models/%s", shared_dir(), rel);
    return buf;
}

/* ---------------------------------------------------------------- real models */

static void test_import_real(const char *rel, int want_binary, int want_layers) {
    Buf report = {0};
    diag_clear();
    Graph *g = import_onnx_file(model_path(rel), &report);
    CHECK_MSG(g != NULL, "%s: %s", rel, diag_message());
    if (g) {
        CHECK_MSG(verify_graph(g) == 0, "%s: %s", rel, diag_message());
        printf("---- %s: %d nodes\n%s", rel, g->nnodes, report.data ? report.data : "");
        char want[64];
        snprintf(want, sizeof want, "summary: %d of %d conv/dense", want_binary, want_layers);
        if (want_layers >= 0)
            CHECK_STR_CONTAINS(report.data ? report.data : "", want);
        /* ONNX node names are kept on the IR ops. */
        int named = 0;
        for (int i = 0; i < g->nnodes; i++)
            named += g->nodes[i]->src_name != NULL && g->nodes[i]->src_op != NULL;
        CHECK(named == g->nnodes);
    }
    free_graph(g);
    buf_free(&report);
}

static int argmax_row(const float *row, int n) {
    int best = 0;
    for (int k = 1; k < n; k++)
        if (row[k] > row[best])
            best = k;
    return best;
}

/* Run the model on finn/tfc_w1a1_input.npy (divided by div) and check the classes. */
static void test_run_tfc(const char *rel, float div, bool indices_out) {
    Graph *g = import_onnx_file(model_path(rel), NULL);
    CHECK_MSG(g != NULL, "%s: %s", rel, diag_message());
    if (!g)
        return;
    char err[512];
    NpyArray a;
    char path[4096];
    snprintf(path, sizeof path, "%s/models/finn/tfc_w1a1_input.npy", shared_dir());
    if (npy_read(path, &a, err, sizeof err) != 0) {
        CHECK_MSG(0, "%s", err);
        free_graph(g);
        return;
    }
    CHECK(a.dtype == NPY_F32 && a.rank == 4 && a.shape[0] == 4);
    Tensor in;
    in.type = g->inputs[0]->type;
    in.type.dim[0] = a.shape[0];
    in.nbytes = a.nbytes;
    in.data = a.data;
    float *f = a.data;
    for (int64_t k = 0; k < npy_numel(&a); k++)
        f[k] /= div;
    Tensor out[2];
    memset(out, 0, sizeof out);
    int rc = interp_run(g, &in, out);
    CHECK_MSG(rc == 0, "%s: %s", rel, diag_message());
    if (rc == 0) {
        static const int want[4] = {7, 2, 1, 0};
        for (int b = 0; b < 4; b++) {
            int cls;
            if (indices_out) {
                CHECK(out[0].type.dtype == TY_I64);
                cls = (int)((int64_t *)out[0].data)[b];
            } else {
                CHECK(out[0].type.dtype == TY_F32 && out[0].type.dim[1] == 10);
                cls = argmax_row((float *)out[0].data + b * 10, 10);
            }
            CHECK_MSG(cls == want[b], "%s: image %d is class %d, want %d", rel, b, cls, want[b]);
        }
        free_tensor(&out[0]);
    }
    npy_free(&a);
    free_graph(g);
}

/* ---------------------------------------------------------------- building bad models */

/* A tiny model builder over the generated structs: everything lives in this struct so
 * that nothing needs freeing. */
#define MAXN 8
typedef struct Mini {
    Onnx__ModelProto model;
    Onnx__GraphProto graph;
    Onnx__OperatorSetIdProto opset;
    Onnx__OperatorSetIdProto *opsets[1];
    Onnx__NodeProto nodes[MAXN];
    Onnx__NodeProto *node_ptrs[MAXN];
    Onnx__AttributeProto attrs[MAXN];
    Onnx__AttributeProto *attr_ptrs[MAXN];
    Onnx__ValueInfoProto input, output;
    Onnx__ValueInfoProto *inputs[1], *outputs[1];
    Onnx__TypeProto type;
    Onnx__TypeProto__Tensor tensor_type;
    Onnx__TensorShapeProto shape;
    Onnx__TensorShapeProto__Dimension dims[2];
    Onnx__TensorShapeProto__Dimension *dim_ptrs[2];
    Onnx__TensorProto init;
    Onnx__TensorProto *inits[1];
    Onnx__StringStringEntryProto ext[2];
    Onnx__StringStringEntryProto *ext_ptrs[2];
    float init_data[4];
    char *io[MAXN][3];
} Mini;

/* A graph x:[1,4] -> nodes -> out; node k reads ins and writes outs (names). */
static void mini_init(Mini *m, int64_t opset) {
    memset(m, 0, sizeof *m);
    onnx__model_proto__init(&m->model);
    onnx__graph_proto__init(&m->graph);
    onnx__operator_set_id_proto__init(&m->opset);
    m->opset.domain = "";
    m->opset.has_version = 1;
    m->opset.version = opset;
    m->opsets[0] = &m->opset;
    m->model.n_opset_import = 1;
    m->model.opset_import = m->opsets;
    m->model.has_ir_version = 1;
    m->model.ir_version = 8;
    m->model.graph = &m->graph;
    m->graph.name = "mini";
    onnx__value_info_proto__init(&m->input);
    onnx__type_proto__init(&m->type);
    onnx__type_proto__tensor__init(&m->tensor_type);
    onnx__tensor_shape_proto__init(&m->shape);
    for (int d = 0; d < 2; d++) {
        onnx__tensor_shape_proto__dimension__init(&m->dims[d]);
        m->dims[d].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        m->dims[d].dim_value = d ? 4 : 1;
        m->dim_ptrs[d] = &m->dims[d];
    }
    m->shape.n_dim = 2;
    m->shape.dim = m->dim_ptrs;
    m->tensor_type.has_elem_type = 1;
    m->tensor_type.elem_type = 1;
    m->tensor_type.shape = &m->shape;
    m->type.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    m->type.tensor_type = &m->tensor_type;
    m->input.name = "x";
    m->input.type = &m->type;
    m->inputs[0] = &m->input;
    m->graph.n_input = 1;
    m->graph.input = m->inputs;
    onnx__value_info_proto__init(&m->output);
    m->output.name = "out";
    m->outputs[0] = &m->output;
    m->graph.n_output = 1;
    m->graph.output = m->outputs;
    m->graph.node = m->node_ptrs;
}

static Onnx__NodeProto *mini_node(Mini *m, const char *op, const char *name, const char *in0,
                                  const char *in1, const char *out) {
    int k = (int)m->graph.n_node++;
    Onnx__NodeProto *n = &m->nodes[k];
    onnx__node_proto__init(n);
    n->op_type = (char *)op;
    n->name = (char *)name;
    m->io[k][0] = (char *)in0;
    m->io[k][1] = (char *)in1;
    m->io[k][2] = (char *)out;
    n->n_input = in1 ? 2 : 1;
    n->input = m->io[k];
    n->n_output = 1;
    n->output = &m->io[k][2];
    m->node_ptrs[k] = n;
    return n;
}

static void mini_attr_str(Mini *m, Onnx__NodeProto *n, const char *key, const char *val) {
    int k = (int)(n - m->nodes);
    Onnx__AttributeProto *a = &m->attrs[k];
    onnx__attribute_proto__init(a);
    a->name = (char *)key;
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    a->has_s = 1;
    a->s.data = (uint8_t *)val;
    a->s.len = strlen(val);
    m->attr_ptrs[k] = a;
    n->n_attribute = 1;
    n->attribute = &m->attr_ptrs[k];
}

/* A [4] float initializer named name (raw_data, or external data when loc is set). */
static void mini_init_tensor(Mini *m, const char *name, const char *loc, const char *offset) {
    Onnx__TensorProto *t = &m->init;
    onnx__tensor_proto__init(t);
    static int64_t dims[1] = {4};
    t->name = (char *)name;
    t->n_dims = 1;
    t->dims = dims;
    t->has_data_type = 1;
    t->data_type = 1;
    if (loc) {
        onnx__string_string_entry_proto__init(&m->ext[0]);
        onnx__string_string_entry_proto__init(&m->ext[1]);
        m->ext[0].key = "location";
        m->ext[0].value = (char *)loc;
        m->ext[1].key = "offset";
        m->ext[1].value = (char *)offset;
        m->ext_ptrs[0] = &m->ext[0];
        m->ext_ptrs[1] = &m->ext[1];
        t->n_external_data = offset ? 2 : 1;
        t->external_data = m->ext_ptrs;
        t->has_data_location = 1;
        t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    } else {
        for (int k = 0; k < 4; k++)
            m->init_data[k] = (float)(k + 1);
        t->has_raw_data = 1;
        t->raw_data.data = (uint8_t *)m->init_data;
        t->raw_data.len = sizeof m->init_data;
    }
    m->inits[0] = t;
    m->graph.n_initializer = 1;
    m->graph.initializer = m->inits;
}

static uint8_t *mini_pack(Mini *m, size_t *len) {
    *len = onnx__model_proto__get_packed_size(&m->model);
    uint8_t *buf = malloc(*len ? *len : 1);
    onnx__model_proto__pack(&m->model, buf);
    return buf;
}

/* Import m from memory (or from path after writing it there); expect failure with a
 * message containing want, or success when want is NULL. */
static void expect_import(Mini *m, const char *path, const char *want) {
    size_t len;
    uint8_t *buf = mini_pack(m, &len);
    Graph *g;
    diag_clear();
    if (path) {
        FILE *f = fopen(path, "wb");
        CHECK(f != NULL);
        if (f) {
            fwrite(buf, 1, len, f);
            fclose(f);
        }
        g = import_onnx_file(path, NULL);
    } else {
        g = import_onnx_memory("mini.onnx", buf, len, NULL);
    }
    if (want) {
        CHECK_MSG(g == NULL, "import succeeded, expected '%s'", want);
        CHECK_STR_CONTAINS(diag_message(), want);
    } else {
        CHECK_MSG(g != NULL, "%s", diag_message());
    }
    free_graph(g);
    free(buf);
}

static void test_bad_models(void) {
    Mini m;
    /* The base case works: Relu. */
    mini_init(&m, 13);
    mini_node(&m, "Relu", "r", "x", NULL, "out");
    expect_import(&m, NULL, NULL);

    mini_init(&m, 13);
    mini_node(&m, "FancyOp", "fancy1", "x", NULL, "out");
    expect_import(&m, NULL, "mini.onnx: node 'fancy1' (FancyOp): unsupported op; supported ops "
                  "are listed in docs/onnx.md");

    mini_init(&m, 13);
    Onnx__NodeProto *n = mini_node(&m, "Quant", "q", "x", NULL, "out");
    n->domain = "com.example";
    expect_import(&m, NULL, "node 'q' (Quant): unsupported op (domain 'com.example')");

    mini_init(&m, 13);
    mini_node(&m, "Add", "add1", "x", "w_missing", "out");
    expect_import(&m, NULL, "node 'add1' (Add): input 'w_missing' is not defined");

    /* Concat whose inputs have empty names (a fuzzer's find: it read a missing first input). */
    mini_init(&m, 13);
    mini_node(&m, "Concat", "cat", "", "", "out");
    expect_import(&m, NULL, "node 'cat' (Concat): input 0 has no name");
    mini_init(&m, 13);
    mini_node(&m, "Concat", "cat", "x", "", "out");
    expect_import(&m, NULL, "node 'cat' (Concat): input 1 has no name");

    mini_init(&m, 13);
    mini_node(&m, "Add", "a", "x", "b_out", "a_out");
    mini_node(&m, "Relu", "b", "a_out", NULL, "b_out");
    mini_node(&m, "Relu", "c", "a_out", NULL, "out");
    expect_import(&m, NULL, "cycle");

    mini_init(&m, 13);
    mini_node(&m, "Relu", "r1", "x", NULL, "out");
    mini_node(&m, "Relu", "r2", "x", NULL, "out");
    expect_import(&m, NULL, "defined twice");

    mini_init(&m, 13);
    n = mini_node(&m, "Pad", "pad1", "x", NULL, "out");
    mini_attr_str(&m, n, "mode", "reflect");
    expect_import(&m, NULL, "node 'pad1' (Pad): mode 'reflect' is not supported");

    mini_init(&m, 13);
    mini_node(&m, "Relu", "r", "x", NULL, "not_out");
    expect_import(&m, NULL, "graph output 'out' is not computed");

    mini_init(&m, 30);
    mini_node(&m, "Relu", "r", "x", NULL, "out");
    expect_import(&m, NULL, "opset 30 is not supported");

    mini_init(&m, 6);
    mini_node(&m, "Relu", "r", "x", NULL, "out");
    expect_import(&m, NULL, "opset 6 is not supported");

    /* Initializers: raw data works; a wrong raw size is refused. */
    mini_init(&m, 13);
    mini_init_tensor(&m, "w", NULL, NULL);
    mini_node(&m, "Add", "add1", "x", "w", "out");
    expect_import(&m, NULL, NULL);
    m.init.raw_data.len = 10;
    expect_import(&m, NULL, "initializer 'w': raw_data holds 10 bytes");
    m.init.raw_data.len = 16;
    m.init.n_dims = 0; /* a scalar with 4 values */
    expect_import(&m, NULL, "raw_data holds 16 bytes");
    /* A shape far larger than its data (a fuzzer's find): refused before anything that size is
     * allocated (it was: 8 GB, out of memory). */
    static int64_t huge[2] = {1 << 28, 8};
    m.init.n_dims = 2;
    m.init.dims = huge;
    expect_import(&m, NULL, "raw_data holds 16 bytes, the FLOAT tensor needs 8589934592");

    /* External data: next to the model, bounds-checked, no escaping the folder. */
    char dir[] = "/tmp/bnn_onnx_XXXXXX";
    if (mkdtemp(dir)) {
        char model[256], data[256];
        snprintf(model, sizeof model, "%s/m.onnx", dir);
        snprintf(data, sizeof data, "%s/w.bin", dir);
        FILE *f = fopen(data, "wb");
        float w[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        if (f) {
            fwrite(w, sizeof w, 1, f);
            fclose(f);
        }
        mini_init(&m, 13);
        mini_init_tensor(&m, "w", "w.bin", "16");
        mini_node(&m, "Add", "add1", "x", "w", "out");
        expect_import(&m, model, NULL);
        mini_init_tensor(&m, "w", "w.bin", "24");
        expect_import(&m, model, "lies outside");
        mini_init_tensor(&m, "w", "../w.bin", NULL);
        expect_import(&m, model, "not a relative path inside");
        mini_init_tensor(&m, "w", "missing.bin", NULL);
        expect_import(&m, model, "cannot open external data file");
        mini_init_tensor(&m, "w", "w.bin", NULL);
        expect_import(&m, NULL, "external data is not available");
        /* Over 2 GiB: a sparse file, refused before it is read. */
        char big[256];
        snprintf(big, sizeof big, "%s/big.onnx", dir);
        int fd = open(big, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        if (fd >= 0) {
            CHECK(ftruncate(fd, (off_t)2147483648LL + 10) == 0);
            close(fd);
            diag_clear();
            CHECK(import_onnx_file(big, NULL) == NULL);
            CHECK_STR_CONTAINS(diag_message(), "over 2 GiB");
            unlink(big);
        }
        unlink(model);
        unlink(data);
        rmdir(dir);
    }
}

/* ---------------------------------------------------------------- corrupt bytes */

static void test_corrupt(void) {
    size_t len;
    char *data = read_file(model_path("qonnx/TFC_1W1A.onnx"), &len);
    CHECK(data != NULL);
    if (!data)
        return;
    /* Every truncation point in steps: a clear error, never a crash. */
    int failures = 0;
    for (size_t cut = 0; cut < len; cut += len / 97 + 1) {
        diag_clear();
        Graph *g = import_onnx_memory("trunc.onnx", data, cut, NULL);
        failures += g == NULL;
        if (g == NULL)
            CHECK_MSG(strstr(diag_message(), "trunc.onnx: ") == diag_message(), "%s",
                      diag_message());
        free_graph(g);
    }
    CHECK(failures > 90);
    /* Flipped bytes and random buffers. */
    uint64_t seed = 12345;
    for (int round = 0; round < 300; round++) {
        char *copy = malloc(len);
        memcpy(copy, data, len);
        for (int k = 0; k < 8; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            copy[(seed >> 33) % len] ^= (char)(1 + (seed >> 20) % 255);
        }
        Graph *g = import_onnx_memory("flip.onnx", copy, len, NULL);
        free_graph(g);
        free(copy);
    }
    for (int round = 0; round < 300; round++) {
        size_t n = (size_t)(round * 7 % 500);
        uint8_t *buf = malloc(n + 1);
        for (size_t k = 0; k < n; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            buf[k] = (uint8_t)(seed >> 56);
        }
        diag_clear();
        Graph *g = import_onnx_memory("random.onnx", buf, n, NULL);
        CHECK(g == NULL);
        free_graph(g);
        free(buf);
    }
    free(data);
}

/* The fuzzer's seeds (and any crashers saved next to them): each imports without a
 * crash, and so do byte-flipped copies. */
static void test_fuzz_seeds(void) {
    const char *root = getenv("BNN_SOURCE_ROOT");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/onnx/fuzz-seeds", root ? root : ".");
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "no fuzz seeds at %s\n", dir);
        return;
    }
    int files = 0;
    uint64_t seed = 99;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len;
        char *data = read_file(path, &len);
        if (!data)
            continue;
        files++;
        Buf report = {0};
        free_graph(import_onnx_memory(e->d_name, data, len, &report));
        buf_free(&report);
        for (int round = 0; round < 200 && len > 0; round++) {
            char *copy = malloc(len);
            memcpy(copy, data, len);
            for (int k = 0; k < 4; k++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                copy[(seed >> 33) % len] ^= (char)(1 + (seed >> 20) % 255);
            }
            free_graph(import_onnx_memory("flip.onnx", copy, len, NULL));
            free(copy);
        }
        free(data);
    }
    closedir(d);
    CHECK(files > 0);
}

int main(void) {
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/models/qonnx/TFC_1W1A.onnx", shared_dir());
    struct stat st;
    bool have_models = stat(probe, &st) == 0;
    if (have_models) {
        test_import_real("qonnx/TFC_1W1A.onnx", 4, 4);
        test_import_real("finn/tfc_w1a1_streamlined.onnx", 4, 4);
        test_import_real("qonnx/TFC_1W2A.onnx", -1, -1);
        test_import_real("qonnx/TFC_2W2A.onnx", -1, -1);
        test_import_real("qonnx/unsw_nb15-mlp-w2a2.onnx", -1, -1);
        test_import_real("qonnx/kwsmlp_w3a3.onnx", -1, -1);
        test_run_tfc("qonnx/TFC_1W1A.onnx", 255.0f, false);
        test_run_tfc("finn/tfc_w1a1_streamlined.onnx", 1.0f, true);
        test_corrupt();
    } else {
        fprintf(stderr, "models not found under %s: skipping the real-model checks\n",
                shared_dir());
    }
    test_bad_models();
    test_fuzz_seeds();
    diag_free_sources();
    return check_report("test_onnx_import");
}
