/* test_roundtrip.c: print(parse(print(g))) == print(g) for graphs built with the IR API,
 * for every .bnn file under tests/ and models/, and for the hard cases: special floats,
 * names that need quoting, every constant encoding, and weights in a side file. */
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "frontend.h"

static int64_t dims_buf[MAX_RANK];

static Type ty(DType dt, int rank, ...) {
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++)
        dims_buf[i] = va_arg(ap, int64_t);
    va_end(ap);
    return make_type(dt, rank, dims_buf);
}
#define N ((int64_t)DIM_BATCH) /* varargs: every dimension is an int64_t */

static Value *const_bytes(Graph *g, const char *name, Type t, const void *src) {
    size_t n = type_nbytes(&t, 1);
    void *data = xmalloc(n ? n : 1);
    memcpy(data, src, n);
    return add_const(g, name, t, data, n);
}

static Node *node1(Graph *g, Op op, const char *out, Type t, int nin, ...) {
    Value *in[8];
    va_list ap;
    va_start(ap, nin);
    for (int i = 0; i < nin; i++)
        in[i] = va_arg(ap, Value *);
    va_end(ap);
    const char *names[1] = {out};
    return add_node(g, op, nin, in, names, &t);
}

/* Parses text (named path) and returns its print, or NULL with the message shown. */
static char *reprint(const char *path, const char *text) {
    Graph *g = parse_text_string(path, text, strlen(text));
    if (!g) {
        fprintf(stderr, "parse of %s failed: %s\n", path, diag_message());
        return NULL;
    }
    char *s = print_graph_to_string(g);
    free_graph(g);
    return s;
}

/* The round trip itself: print(parse(print(g))) == print(g). Returns print(g). */
static char *check_roundtrip(const char *what, const Graph *g) {
    char *a = print_graph_to_string(g);
    char *b = reprint(what, a);
    CHECK_MSG(b && strcmp(a, b) == 0, "%s: round trip differs:\n--- print\n%s--- reprint\n%s", what, a,
              b ? b : "(parse failed)\n");
    free(b);
    return a;
}

/* ---------------------------------------------------------------- graphs from the API */

static Graph *build_mlp(void) {
    Graph *g = new_graph("tfc");
    Value *x = add_input(g, "x", ty(TY_F32, 2, N, (int64_t)64));
    uint8_t bits[64 * 64 / 8];
    for (size_t i = 0; i < sizeof bits; i++)
        bits[i] = (uint8_t)(i * 37 + 11);
    Value *w1 = const_bytes(g, "w1", ty(TY_B1, 2, (int64_t)64, (int64_t)64), bits);
    int32_t t[64];
    for (int i = 0; i < 64; i++)
        t[i] = i - 32;
    Value *t1 = const_bytes(g, "t1", ty(TY_I32, 1, (int64_t)64), t);
    Value *w2 = const_bytes(g, "w2", ty(TY_B1, 2, (int64_t)10, (int64_t)64), bits);
    Node *n = node1(g, OP_BINARIZE, "a", ty(TY_B1, 2, N, (int64_t)64), 1, x);
    set_attr_int(n, "zero", 1);
    node_set_src(n, "12", "BipolarQuant");
    n = node1(g, OP_DENSE, "h", ty(TY_I32, 2, N, (int64_t)64), 2, n->out[0], w1);
    node_set_src(n, "MatMul_0", "MatMul");
    n = node1(g, OP_THRESHOLD, "b", ty(TY_B1, 2, N, (int64_t)64), 2, n->out[0], t1);
    n = node1(g, OP_DENSE, "o", ty(TY_I32, 2, N, (int64_t)10), 2, n->out[0], w2);
    n = node1(g, OP_CAST, "y", ty(TY_F32, 2, N, (int64_t)10), 1, n->out[0]);
    set_attr_str(n, "to", "f32");
    add_output(g, n->out[0]);
    return g;
}

static Graph *build_conv(void) {
    Graph *g = new_graph("cnv");
    Value *x = add_input(g, "x", ty(TY_F32, 4, N, (int64_t)3, (int64_t)8, (int64_t)8));
    float w[16 * 3 * 3 * 3];
    for (int i = 0; i < 16 * 27; i++)
        w[i] = (float)(i % 7) * 0.125f - 0.3f;
    Value *cw = const_bytes(g, "conv_w", ty(TY_F32, 4, (int64_t)16, (int64_t)3, (int64_t)3, (int64_t)3), w);
    Value *cb = const_bytes(g, "conv_b", ty(TY_F32, 1, (int64_t)16), w);
    Node *n = node1(g, OP_CONV2D, "c", ty(TY_F32, 4, N, (int64_t)16, (int64_t)8, (int64_t)8), 3, x,
                    cw, cb);
    int64_t ones[2] = {1, 1}, pads[4] = {1, 1, 1, 1};
    set_attr_ints(n, "pads", 4, pads);
    set_attr_ints(n, "strides", 2, ones); /* set out of print order on purpose */
    set_attr_int(n, "groups", 1);
    node_set_src(n, "Conv_0", "Conv");
    Node *p = node1(g, OP_MAXPOOL, "p", ty(TY_F32, 4, N, (int64_t)16, (int64_t)4, (int64_t)4), 1,
                    n->out[0]);
    int64_t k2[2] = {2, 2};
    set_attr_ints(p, "kernel", 2, k2);
    set_attr_ints(p, "strides", 2, k2);
    Node *q = node1(g, OP_CLIP, "q", ty(TY_F32, 4, N, (int64_t)16, (int64_t)4, (int64_t)4), 1,
                    p->out[0]);
    set_attr_float(q, "min", -INFINITY);
    set_attr_float(q, "max", 6.0f);
    Node *f = node1(g, OP_RESHAPE, "f", ty(TY_F32, 2, N, (int64_t)256), 1, q->out[0]);
    Node *s = node1(g, OP_SOFTMAX, "s", ty(TY_F32, 2, N, (int64_t)256), 1, f->out[0]);
    set_attr_int(s, "axis", -1);
    Value *in = s->out[0];
    const char *names[2] = {"val", "idx"};
    Type tt[2] = {ty(TY_F32, 2, N, (int64_t)5), ty(TY_I64, 2, N, (int64_t)5)};
    Node *k = add_node(g, OP_TOPK, 1, &in, names, tt);
    set_attr_int(k, "k", 5);
    set_attr_int(k, "axis", -1);
    set_attr_int(k, "largest", 1);
    add_output(g, k->out[0]);
    add_output(g, k->out[1]);
    return g;
}

/* Every dtype as a constant, in list form (<= 16 elements) and in hex/base64 form. */
static Graph *build_constants(void) {
    Graph *g = new_graph("consts");
    Value *x = add_input(g, "x", ty(TY_F32, 1, N));
    uint8_t raw[512];
    for (int i = 0; i < 512; i++)
        raw[i] = (uint8_t)(i * 73 + 5);
    static const DType dts[] = {TY_F32, TY_F16, TY_I64, TY_I32, TY_I8, TY_U8, TY_B1};
    char name[32];
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        snprintf(name, sizeof name, "small_%s", dtype_name(dts[i]));
        if (dts[i] == TY_F32) {
            float f[5] = {1.0f, -0.0f, 1e-45f, 3.40282347e38f, 0.1f};
            const_bytes(g, name, ty(TY_F32, 1, (int64_t)5), f);
        } else {
            const_bytes(g, name, ty(dts[i], 2, (int64_t)3, (int64_t)5), raw);
        }
        snprintf(name, sizeof name, "big_%s", dtype_name(dts[i]));
        const_bytes(g, name, ty(dts[i], 3, (int64_t)2, (int64_t)3, (int64_t)7), raw);
    }
    const_bytes(g, "scalar", ty(TY_F32, 0), raw);
    const_bytes(g, "empty", ty(TY_I32, 2, (int64_t)0, (int64_t)4), raw);
    Type packed = ty(TY_B1, 2, (int64_t)8, (int64_t)20);
    packed.pack = (PackFormat){1, 32, 64, TILE_K256};
    const_bytes(g, "packed", packed, raw);
    Node *n = node1(g, OP_RELU, "y", ty(TY_F32, 1, N), 1, x);
    add_output(g, n->out[0]);
    return g;
}

/* Names that need quoting, loc() strings with every awkward byte, special floats. */
static Graph *build_weird(void) {
    Graph *g = new_graph("my model/v1 \"final\"");
    Value *x = add_input(g, "input:0", ty(TY_F32, 2, N, (int64_t)4));
    Value *y = add_input(g, "a b", ty(TY_F32, 2, N, (int64_t)4));
    float c[4] = {NAN, INFINITY, -INFINITY, -0.0f};
    const_bytes(g, "w\\eird\"", ty(TY_F32, 1, (int64_t)4), c);
    float one = 1.0f, zero = 0.0f, eight = 8.0f;
    Value *scale = const_bytes(g, "scale", ty(TY_F32, 0), &one);
    Value *zp = const_bytes(g, "zp", ty(TY_F32, 0), &zero);
    Value *bw = const_bytes(g, "bw", ty(TY_F32, 0), &eight);
    Node *n = node1(g, OP_ADD, "sum:", ty(TY_F32, 2, N, (int64_t)4), 2, x, y);
    node_set_src(n, "/layer.0/Add \"q\"\n\t\x01 \\ \xc3\xa9", "com.ms:Add");
    n = node1(g, OP_CLIP, "\xc3\xbcn", ty(TY_F32, 2, N, (int64_t)4), 1, n->out[0]);
    set_attr_float(n, "min", -INFINITY);
    set_attr_float(n, "max", INFINITY);
    node_set_src(n, "clip", NULL);
    n = node1(g, OP_PAD, "%", ty(TY_F32, 2, N, (int64_t)6), 1, n->out[0]);
    int64_t pads[4] = {0, 1, 0, 1};
    set_attr_ints(n, "pads", 4, pads);
    set_attr_float(n, "value", NAN);
    n = node1(g, OP_QUANT, "q", ty(TY_F32, 2, N, (int64_t)6), 4, n->out[0], scale, zp, bw);
    set_attr_str(n, "rounding", "ROUND_TO_ZERO");
    node_set_src(n, "file", "inf"); /* a keyword and a float spelling as words */
    Node *m = node1(g, OP_MUL, "m", ty(TY_F32, 2, N, (int64_t)6), 2, n->out[0], n->out[0]);
    add_output(g, m->out[0]);
    add_output(g, x);
    return g;
}

static void test_api_graphs(void) {
    Graph *gs[] = {build_mlp(), build_conv(), build_constants(), build_weird()};
    const char *names[] = {"mlp", "conv", "constants", "weird"};
    for (int i = 0; i < 4; i++) {
        char *s = check_roundtrip(names[i], gs[i]);
        /* Values survive the trip, not only the text. */
        Graph *back = parse_text_string(names[i], s, strlen(s));
        CHECK(back != NULL);
        if (back) {
            CHECK(back->nconsts == gs[i]->nconsts && back->nnodes == gs[i]->nnodes);
            for (int c = 0; c < back->nconsts && c < gs[i]->nconsts; c++) {
                const Value *a = gs[i]->consts[c], *b = back->consts[c];
                CHECK_MSG(strcmp(a->name, b->name) == 0 && a->nbytes == b->nbytes &&
                              memcmp(a->data, b->data, a->nbytes) == 0 &&
                              type_equal(&a->type, &b->type),
                          "%s: constant $%s changed", names[i], a->name);
            }
            for (int k = 0; k < back->nnodes && k < gs[i]->nnodes; k++) {
                const Node *a = gs[i]->nodes[k], *b = back->nodes[k];
                CHECK(a->op == b->op && strcmp(a->out[0]->name, b->out[0]->name) == 0);
                CHECK((a->src_name == NULL) == (b->src_name == NULL));
                if (a->src_name && b->src_name)
                    CHECK(strcmp(a->src_name, b->src_name) == 0);
                CHECK(b->loc.line == 0 || b->loc.line > 1);
            }
            CHECK(strcmp(back->name, gs[i]->name) == 0);
            free_graph(back);
        }
        free(s);
        free_graph(gs[i]);
    }
}

/* ---------------------------------------------------------------- exact values */

static void test_special_floats(void) {
    const char *text =
        "const $c: f32[6] = [-0.0, inf, -inf, 1e-45, 3.40282347e+38, 0.1]\n"
        "const $h: f16[4] = [1, -2.5, 65504, 6e-8]\n"
        "const $n: f32[2] = [nan, -nan]\n"
        "graph $g(%x: f32[N,4]) -> (f32[N,4]) {\n"
        "    %y = f32[N,4] clip %x {min=-inf, max=inf}\n"
        "    %z = f32[N,4] clip %y {min=-1, max=1e10}\n"
        "    ret %z\n"
        "}\n";
    Graph *g = parse_text_string("floats.bnn", text, strlen(text));
    CHECK_MSG(g != NULL, "%s", diag_message());
    if (!g)
        return;
    const float *c = g->consts[0]->data;
    CHECK(c[0] == 0.0f && signbit(c[0]));
    CHECK(isinf(c[1]) && c[1] > 0 && isinf(c[2]) && c[2] < 0);
    CHECK(c[3] == 1e-45f && c[4] == 3.40282347e38f && c[5] == 0.1f);
    const uint16_t *h = g->consts[1]->data;
    CHECK(h[0] == 0x3c00 && h[1] == 0xc100 && h[2] == 0x7bff && h[3] == 0x0001);
    const float *nn = g->consts[2]->data;
    CHECK(isnan(nn[0]) && isnan(nn[1]));
    CHECK(isinf(attr_float(g->nodes[0], "min", 0)) && attr_float(g->nodes[0], "min", 0) < 0);
    CHECK(get_attr(g->nodes[1], "min")->kind == ATTR_FLOAT);
    char *s = check_roundtrip("floats", g);
    CHECK_STR_CONTAINS(s, "[-0.0, inf, -inf, 1.40129846e-45, 3.40282347e+38, 0.100000001]");
    CHECK_STR_CONTAINS(s, "{min=-inf, max=inf}");
    CHECK_STR_CONTAINS(s, "{min=-1.0, max=1e+10}");
    CHECK_STR_CONTAINS(s, "const $n: f32[2] = base64"); /* NaN bits are kept exactly */
    CHECK_STR_CONTAINS(s, "const $h: f16[4] = base64");
    free(s);
    free_graph(g);

    /* A NaN with a payload survives bit for bit. */
    Graph *p = new_graph("nan");
    uint32_t bits[3] = {0x7fc00001u, 0xffc00000u, 0x7f800001u};
    const_bytes(p, "n", ty(TY_F32, 1, (int64_t)3), bits);
    Value *x = add_input(p, "x", ty(TY_F32, 1, N));
    add_output(p, x);
    s = print_graph_to_string(p);
    Graph *back = parse_text_string("nan", s, strlen(s));
    CHECK(back && memcmp(back->consts[0]->data, bits, sizeof bits) == 0);
    free_graph(back);
    free(s);
    free_graph(p);
}

static void test_weird_names(void) {
    Graph *g = build_weird();
    char *s = print_graph_to_string(g);
    CHECK_STR_CONTAINS(s, "graph $\"my model/v1 \\\"final\\\"\"(%input:0: f32[N,4], %\"a b\": f32[N,4])");
    CHECK_STR_CONTAINS(s, "%\"sum:\" = f32[N,4] add %input:0, %\"a b\"");
    CHECK_STR_CONTAINS(s, "loc(\"/layer.0/Add \\\"q\\\"\\n\\t\\x01 \\\\ é\", \"com.ms:Add\")");
    CHECK_STR_CONTAINS(s, "loc(\"clip\")\n");
    CHECK_STR_CONTAINS(s, "{pads=[0,1,0,1], value=nan}");
    CHECK_STR_CONTAINS(s, "{rounding=ROUND_TO_ZERO} loc(\"file\", \"inf\")");
    CHECK_STR_CONTAINS(s, "const $\"w\\\\eird\\\"\": f32[4] = base64");
    CHECK_STR_CONTAINS(s, "ret %m, %input:0\n");
    free(s);
    free_graph(g);

    /* Quoted names that did not need quoting mean the same value. */
    const char *text = "graph $\"g\"(%\"x\": f32[2]) -> (f32[2]) {\n"
                       "    %\"y\" = f32[2] relu %x loc(\"\\x41\\\\\", const)\n"
                       "    ret %y\n"
                       "}\n";
    Graph *h = parse_text_string("names.bnn", text, strlen(text));
    CHECK_MSG(h != NULL, "%s", diag_message());
    if (h) {
        CHECK(strcmp(h->nodes[0]->src_name, "A\\") == 0 && strcmp(h->nodes[0]->src_op, "const") == 0);
        char *p = print_graph_to_string(h);
        CHECK_STR_CONTAINS(p, "graph $g(%x: f32[2]) -> (f32[2]) {\n    %y = f32[2] relu %x loc(\"A\\\\\", const)\n");
        free(p);
        free_graph(h);
    }
}

/* The canonical sample must print back exactly as written. */
static void test_canonical_file(const char *root) {
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/text/canonical.bnn", root);
    size_t len;
    char *text = read_file(path, &len);
    CHECK_MSG(text != NULL, "%s", diag_message());
    if (!text)
        return;
    char *s = reprint(path, text);
    CHECK_MSG(s && strcmp(s, text) == 0, "canonical.bnn does not print back as written:\n%s",
              s ? s : "(parse failed)");
    free(s);
    free(text);
}

/* ---------------------------------------------------------------- side-file weights */

static char *make_temp_dir(void) {
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/bnn-text-XXXXXX", base && *base ? base : "/tmp");
    char *d = mkdtemp(tmpl);
    return d ? xstrdup(d) : NULL;
}

static void write_text(const char *path, const char *s) {
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(s, f);
        fclose(f);
    }
}

static void test_side_file(void) {
    char *dir = make_temp_dir();
    CHECK(dir != NULL);
    if (!dir)
        return;
    char model[4096], weights[4096];
    snprintf(model, sizeof model, "%s/model.bnn", dir);
    snprintf(weights, sizeof weights, "%s/model.weights", dir);

    Graph *gs[] = {build_mlp(), build_conv(), build_constants()};
    for (int i = 0; i < 3; i++) {
        Graph *g = gs[i];
        FILE *f = fopen(model, "w");
        CHECK(f != NULL);
        if (!f)
            break;
        CHECK(print_graph_with_weights(g, f, weights, "model.weights") == 0);
        fclose(f);
        size_t len;
        char *text = read_file(model, &len);
        CHECK(text && strstr(text, "file \"model.weights\" offset 0\n"));
        /* Every offset is 64-byte aligned and small constants stay inline. */
        for (const char *p = text; p && (p = strstr(p, " offset ")); p++)
            CHECK(strtoll(p + 8, NULL, 10) % 64 == 0);
        if (i == 2)
            CHECK_STR_CONTAINS(text, "const $small_i32: i32[3,5] = [");
        Graph *back = parse_text_file(model);
        CHECK_MSG(back != NULL, "%s", diag_message());
        if (back) {
            char *a = print_graph_to_string(g), *b = print_graph_to_string(back);
            CHECK_MSG(strcmp(a, b) == 0, "side-file round trip differs:\n%s---\n%s", a, b);
            free(a);
            free(b);
            free_graph(back);
        }
        /* Relative to the model's directory, not the working directory. */
        back = parse_text_string(model, text, len);
        CHECK(back != NULL);
        free_graph(back);
        free(text);
    }

    /* A side file too short for a constant, then a missing one. */
    FILE *f = fopen(weights, "r+");
    CHECK(f && ftruncate(fileno(f), 100) == 0);
    if (f)
        fclose(f);
    Graph *bad = parse_text_file(model);
    CHECK(bad == NULL);
    CHECK_STR_CONTAINS(diag_message(), "model.weights' is too short for $big_");
    CHECK_STR_CONTAINS(diag_message(), "the file has 100 bytes");
    unlink(weights);
    bad = parse_text_file(model);
    CHECK(bad == NULL);
    CHECK_STR_CONTAINS(diag_message(), "cannot open weights file '");
    CHECK_STR_CONTAINS(diag_message(), "model.weights' for $big_");
    CHECK_STR_CONTAINS(diag_message(), "model.bnn:");

    /* file+offset is accepted for any type and hand-written offsets. */
    write_text(weights, "0123456789abcdefXYZW");
    write_text(model, "const $a: u8[4] = file \"model.weights\" offset 16\n"
                      "const $b: b1[9] = file \"model.weights\" offset 0\n"
                      "graph $g(%x: f32[1]) -> (f32[1]) {\n    ret %x\n}\n");
    Graph *g = parse_text_file(model);
    CHECK_MSG(g != NULL, "%s", diag_message());
    if (g) {
        CHECK(memcmp(g->consts[0]->data, "XYZW", 4) == 0 && memcmp(g->consts[1]->data, "01", 2) == 0);
        free_graph(g);
    }
    unlink(weights);
    unlink(model);
    rmdir(dir);
    free(dir);
    for (int i = 0; i < 3; i++)
        free_graph(gs[i]);
}

/* ---------------------------------------------------------------- every .bnn in the tree */

static int nfiles;

static void roundtrip_file(const char *path) {
    nfiles++;
    Graph *g = parse_text_file(path);
    if (!g) {
        /* Deliberately malformed models (CLI tests) still must say where. */
        printf("note: %s does not parse: %s\n", path, diag_message());
        CHECK_MSG(diag_message()[0] != '\0', "%s: parse failed without a message", path);
        return;
    }
    char *s = check_roundtrip(path, g);
    free(s);
    free_graph(g);
}

static void walk(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0)
            continue;
        size_t n = strlen(e->d_name);
        if (S_ISDIR(st.st_mode))
            walk(path);
        else if (n > 4 && strcmp(e->d_name + n - 4, ".bnn") == 0)
            roundtrip_file(path);
    }
    closedir(d);
}

int main(void) {
    const char *root = getenv("BNN_SOURCE_ROOT");
    test_api_graphs();
    test_special_floats();
    test_weird_names();
    test_side_file();
    if (root) {
        test_canonical_file(root);
        char path[4096];
        snprintf(path, sizeof path, "%s/tests", root);
        walk(path);
        snprintf(path, sizeof path, "%s/models", root);
        walk(path);
        CHECK_MSG(nfiles >= 3, "found only %d .bnn files under %s", nfiles, root);
    } else {
        fprintf(stderr, "BNN_SOURCE_ROOT not set: skipping the .bnn files\n");
    }
    diag_free_sources();
    return check_report("test_roundtrip");
}
