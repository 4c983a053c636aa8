/* test_verify.c: inferred result types (conv, pools, ceil_mode, broadcasting, the batch N)
 * and each kind of verifier error, whose message must name the offending op. */
#include "check.h"
#include "build.h"

static char tbuf[160];
static const char *show(const Type *t) { return type_str(t, tbuf, sizeof tbuf); }

/* Infer n's first result and compare its printed type. */
static void check_infers_at(int line, Node *n, const char *want) {
    Type t[MAX_OUTPUTS];
    diag_clear();
    check_count++;
    if (infer_node_types(n, t) != 0) {
        check_failures++;
        fprintf(stderr, "%s:%d: inference failed: %s\n", __FILE__, line, diag_message());
    } else if (strcmp(show(&t[0]), want) != 0) {
        check_failures++;
        fprintf(stderr, "%s:%d: inferred %s, want %s\n", __FILE__, line, tbuf, want);
    }
}
#define CHECK_INFERS(n, want) check_infers_at(__LINE__, (n), (want))

/* Inference fails and the message contains want. */
static void check_rejects_at(int line, Node *n, const char *want) {
    Type t[MAX_OUTPUTS];
    diag_clear();
    check_count++;
    if (infer_node_types(n, t) == 0) {
        check_failures++;
        fprintf(stderr, "%s:%d: inference accepted %s, want an error '%s'\n", __FILE__, line,
                show(&t[0]), want);
    } else if (!strstr(diag_message(), want)) {
        check_failures++;
        fprintf(stderr, "%s:%d: message '%s' does not contain '%s'\n", __FILE__, line,
                diag_message(), want);
    }
}
#define CHECK_REJECTS(n, want) check_rejects_at(__LINE__, (n), (want))

/* verify_graph fails with a message containing want. */
static void check_verify_fails_at(int line, Graph *g, const char *want) {
    diag_clear();
    check_count++;
    if (verify_graph(g) == 0) {
        check_failures++;
        fprintf(stderr, "%s:%d: verify_graph accepted, want '%s'\n", __FILE__, line, want);
    } else if (!strstr(diag_message(), want)) {
        check_failures++;
        fprintf(stderr, "%s:%d: message '%s' does not contain '%s'\n", __FILE__, line,
                diag_message(), want);
    }
}
#define CHECK_VERIFY_FAILS(g, want) check_verify_fails_at(__LINE__, (g), (want))

static Value *zeros(Graph *g, const char *name, Type t) {
    size_t nb = type_nbytes(&t, 1);
    return add_const(g, name, t, calloc(nb ? nb : 1, 1), nb);
}

/* ---------------------------------------------------------------- inferred shapes */

static void test_conv_shapes(void) {
    Graph *g = new_graph("t");
    Value *x = add_input(g, "x", TY(TY_F32, N_, 4, 28, 28));
    Value *w = zeros(g, "w", TY(TY_F32, 8, 4, 3, 3));
    Node *n = node(g, OP_CONV2D, "y", 2, (Value *[]){x, w});
    CHECK_INFERS(n, "f32[N,8,26,26]");
    /* pads 1, stride 2: (28 + 2 - 3) / 2 + 1 = 14 */
    set_attr_ints(n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    set_attr_ints(n, "strides", 2, (int64_t[]){2, 2});
    CHECK_INFERS(n, "f32[N,8,14,14]");
    /* asymmetric pads [top=0, left=1, bottom=2, right=0], dilation 2 on H:
     * H: (28 + 2 - 2*2 - 1) / 2 + 1 = 13; W: (28 + 1 - 2 - 1) / 2 + 1 = 14 */
    set_attr_ints(n, "pads", 4, (int64_t[]){0, 1, 2, 0});
    set_attr_ints(n, "dilations", 2, (int64_t[]){2, 1});
    CHECK_INFERS(n, "f32[N,8,13,14]");

    /* groups: w [8, 2, 1, 1] with groups=2 over 4 channels. */
    Value *wg = zeros(g, "wg", TY(TY_F32, 8, 2, 1, 1));
    Node *gc = node(g, OP_CONV2D, "gy", 2, (Value *[]){x, wg});
    set_attr_int(gc, "groups", 2);
    CHECK_INFERS(gc, "f32[N,8,28,28]");
    set_attr_int(gc, "groups", 1);
    CHECK_REJECTS(gc, "conv2d %gy: input has 4 channels but weights expect 2 (groups=1)");

    /* b1 x b1 -> i32, b1 x f32 -> f32, f32 x b1 rejected, bias on i32 rejected. */
    Value *xb = add_input(g, "xb", TY(TY_B1, N_, 4, 5, 5));
    Value *wb = zeros(g, "wb", TY(TY_B1, 8, 4, 3, 3));
    Node *bc = node(g, OP_CONV2D, "bc", 2, (Value *[]){xb, wb});
    CHECK_INFERS(bc, "i32[N,8,3,3]");
    set_attr_int(bc, "pad_value", 1);
    CHECK_INFERS(bc, "i32[N,8,3,3]");
    set_attr_int(bc, "pad_value", 2);
    CHECK_REJECTS(bc, "conv2d %bc: pad_value must be 0, 1 or -1, got 2");
    Node *bf = node(g, OP_CONV2D, "bf", 2, (Value *[]){xb, w});
    CHECK_INFERS(bf, "f32[N,8,3,3]");
    Node *fb = node(g, OP_CONV2D, "fb", 2, (Value *[]){x, wb});
    CHECK_REJECTS(fb, "conv2d %fb: unsupported operand types: input f32[N,4,28,28], weights b1");
    Value *bias = zeros(g, "bias", TY(TY_F32, 8));
    Node *bb = node(g, OP_CONV2D, "bb", 3, (Value *[]){xb, wb, bias});
    CHECK_REJECTS(bb, "conv2d %bb: a bias needs a float result");
    Node *fp = node(g, OP_CONV2D, "fp", 2, (Value *[]){x, w});
    set_attr_int(fp, "pad_value", 1);
    CHECK_REJECTS(fp, "conv2d %fp: pad_value=1 needs a b1 input");
    /* A kernel larger than the padded input. */
    Value *big = zeros(g, "big", TY(TY_F32, 1, 4, 30, 3));
    Node *kb = node(g, OP_CONV2D, "kb", 2, (Value *[]){x, big});
    CHECK_REJECTS(kb, "conv2d %kb: kernel 30x3");
    free_graph(g);
}

static void test_pool_shapes(void) {
    Graph *g = new_graph("t");
    Value *x = add_input(g, "x", TY(TY_F32, N_, 3, 5, 5));
    Node *n = node(g, OP_MAXPOOL, "m", 1, &x);
    CHECK_REJECTS(n, "maxpool %m: missing attribute 'kernel'");
    set_attr_ints(n, "kernel", 2, (int64_t[]){2, 2});
    set_attr_ints(n, "strides", 2, (int64_t[]){2, 2});
    CHECK_INFERS(n, "f32[N,3,2,2]"); /* (5 - 2) / 2 + 1 = 2 */
    set_attr_int(n, "ceil_mode", 1);
    CHECK_INFERS(n, "f32[N,3,3,3]"); /* ceil(3 / 2) + 1 = 3; last window starts at 4 < 5 */
    /* ceil_mode with H = 3, kernel 2, stride 2, end pad 1: span = 3 + 1 - 2 = 2,
     * ceil(2/2) + 1 = 2 (the second window starts at 2 < 3, inside): same as floor. */
    Value *x3 = add_input(g, "x3", TY(TY_F32, 1, 1, 3, 3));
    Node *m3 = node(g, OP_MAXPOOL, "m3", 1, &x3);
    set_attr_ints(m3, "kernel", 2, (int64_t[]){2, 2});
    set_attr_ints(m3, "strides", 2, (int64_t[]){2, 2});
    set_attr_ints(m3, "pads", 4, (int64_t[]){0, 0, 1, 1});
    set_attr_int(m3, "ceil_mode", 1);
    CHECK_INFERS(m3, "f32[1,1,2,2]");
    /* dilation 2: window extent 3; (5 - 3) / 1 + 1 = 3 */
    Node *m4 = node(g, OP_MAXPOOL, "m4", 1, &x);
    set_attr_ints(m4, "kernel", 2, (int64_t[]){2, 2});
    set_attr_ints(m4, "dilations", 2, (int64_t[]){2, 2});
    CHECK_INFERS(m4, "f32[N,3,3,3]");
    free_graph(g);
}

static void test_ceil_mode_rule(void) {
    /* The ONNX / PyTorch rule for ceil_mode: a last window starting past the input and its
     * leading padding is dropped. x = 2x2, kernel 2, stride 2, end pads 1: floor gives
     * (2 + 1 - 2) / 2 + 1 = 1; ceil gives ceil(1/2) + 1 = 2, but window 2 starts at 2 >= 2
     * (all padding), so 1. */
    Graph *g = new_graph("t");
    Value *x = add_input(g, "x", TY(TY_F32, 1, 1, 2, 2));
    Node *n = node(g, OP_AVGPOOL, "a", 1, &x);
    set_attr_ints(n, "kernel", 2, (int64_t[]){2, 2});
    set_attr_ints(n, "strides", 2, (int64_t[]){2, 2});
    set_attr_ints(n, "pads", 4, (int64_t[]){0, 0, 1, 1});
    set_attr_int(n, "ceil_mode", 1);
    CHECK_INFERS(n, "f32[1,1,1,1]");
    /* With a leading pad the second window starts at 1 (inside): 2x2. */
    set_attr_ints(n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    CHECK_INFERS(n, "f32[1,1,2,2]");
    /* Pads as large as the window are refused. */
    set_attr_ints(n, "pads", 4, (int64_t[]){2, 0, 0, 0});
    CHECK_REJECTS(n, "avgpool %a: pad 2 is not smaller than the window 2");
    set_attr_ints(n, "pads", 4, (int64_t[]){0, 0, 0, 0});
    set_attr_ints(n, "kernel", 2, (int64_t[]){3, 3});
    CHECK_REJECTS(n, "avgpool %a: window 3x3 does not fit the padded input f32[1,1,2,2]");
    /* avgpool takes no dilations; maxpool on b1 keeps b1, avgpool on b1 is refused. */
    set_attr_ints(n, "dilations", 2, (int64_t[]){1, 1});
    CHECK_REJECTS(n, "avgpool %a: unknown attribute 'dilations'");
    Value *xb = add_input(g, "xb", TY(TY_B1, N_, 2, 4, 4));
    Node *mb = node(g, OP_MAXPOOL, "mb", 1, &xb);
    set_attr_ints(mb, "kernel", 2, (int64_t[]){2, 2});
    set_attr_ints(mb, "strides", 2, (int64_t[]){2, 2});
    CHECK_INFERS(mb, "b1[N,2,2,2]");
    Node *ab = node(g, OP_AVGPOOL, "ab", 1, &xb);
    set_attr_ints(ab, "kernel", 2, (int64_t[]){2, 2});
    CHECK_REJECTS(ab, "avgpool %ab: input must be f32, got b1[N,2,4,4]");
    Node *gp = node(g, OP_GLOBALAVGPOOL, "gp", 1, &x);
    CHECK_INFERS(gp, "f32[1,1,1,1]");
    free_graph(g);
}

static void test_broadcast_shapes(void) {
    Graph *g = new_graph("t");
    Value *a = add_input(g, "a", TY(TY_F32, N_, 1, 4));
    Value *b = zeros(g, "b", TY(TY_F32, 3, 1));
    Value *c = zeros(g, "c", TY(TY_F32, 3));
    Value *s = zeros(g, "s", make_type(TY_F32, 0, NULL));
    Value *n1 = add_input(g, "n1", TY(TY_F32, N_, 3, 4));
    Value *ones = add_input(g, "ones", TY(TY_F32, 1, 3, 4));
    Value *i = add_input(g, "i", TY(TY_I32, N_, 3));
    CHECK_INFERS(node(g, OP_ADD, "y1", 2, (Value *[]){a, b}), "f32[N,3,4]");
    CHECK_INFERS(node(g, OP_MUL, "y2", 2, (Value *[]){a, s}), "f32[N,1,4]");
    CHECK_INFERS(node(g, OP_SUB, "y3", 2, (Value *[]){n1, a}), "f32[N,3,4]");
    CHECK_INFERS(node(g, OP_DIV, "y4", 2, (Value *[]){ones, n1}), "f32[N,3,4]"); /* 1 vs N */
    CHECK_REJECTS(node(g, OP_ADD, "y5", 2, (Value *[]){a, c}),
                  "add %y5: shapes f32[N,1,4] and f32[3] do not broadcast (dimension 4 vs 3)");
    /* N matches only N or 1. */
    Value *three = add_input(g, "three", TY(TY_F32, 3, 3, 4));
    CHECK_REJECTS(node(g, OP_ADD, "y6", 2, (Value *[]){n1, three}),
                  "add %y6: shapes f32[N,3,4] and f32[3,3,4] do not broadcast (dimension N vs 3)");
    CHECK_REJECTS(node(g, OP_ADD, "y7", 2, (Value *[]){i, c}),
                  "add %y7: operands have different dtypes");
    Value *i2 = zeros(g, "i2", TY(TY_I32, 3));
    CHECK_INFERS(node(g, OP_ADD, "y8", 2, (Value *[]){i, i2}), "i32[N,3]");
    CHECK_REJECTS(node(g, OP_DIV, "y9", 2, (Value *[]){i, i2}),
                  "div %y9: operands must be f32, got i32[N,3]");
    /* matmul broadcasts its leading dims. */
    Value *m = zeros(g, "m", TY(TY_F32, 4, 5));
    CHECK_INFERS(node(g, OP_MATMUL, "mm", 2, (Value *[]){n1, m}), "f32[N,3,5]");
    CHECK_REJECTS(node(g, OP_MATMUL, "mm2", 2, (Value *[]){n1, b}),
                  "matmul %mm2: inner dimensions differ: f32[N,3,4] x f32[3,1]");
    free_graph(g);
}

static void test_other_shapes(void) {
    Graph *g = new_graph("t");
    Value *x = add_input(g, "x", TY(TY_F32, N_, 4, 2, 2));
    Value *xi = add_input(g, "xi", TY(TY_I32, N_, 4, 2, 2));

    /* reshape keeps its declared type; counts and the batch are checked. */
    Node *r = add_node(g, OP_RESHAPE, 1, &x, (const char *[]){"r"}, (Type[]){TY(TY_F32, N_, 16)});
    CHECK_INFERS(r, "f32[N,16]");
    r->out[0]->type = TY(TY_F32, N_, 15);
    CHECK_REJECTS(r, "reshape %r: cannot reshape f32[N,4,2,2] (16 elements per batch item) to "
                     "f32[N,15] (15)");
    r->out[0]->type = TY(TY_F32, 1, 16);
    CHECK_REJECTS(r, "reshape %r: the batch N must appear in both f32[N,4,2,2] and f32[1,16]");
    r->out[0]->type = TY(TY_I32, N_, 16);
    CHECK_REJECTS(r, "reshape %r: result i32[N,16] must keep the input's dtype f32");

    /* transpose */
    Node *t = node(g, OP_TRANSPOSE, "t", 1, &x);
    set_attr_ints(t, "perm", 4, (int64_t[]){0, 2, 3, 1});
    CHECK_INFERS(t, "f32[N,2,2,4]");
    set_attr_ints(t, "perm", 4, (int64_t[]){0, 2, 2, 1});
    CHECK_REJECTS(t, "transpose %t: perm is not a permutation");

    /* concat */
    Value *x2 = add_input(g, "x2", TY(TY_F32, N_, 3, 2, 2));
    Node *c = node(g, OP_CONCAT, "c", 2, (Value *[]){x, x2});
    CHECK_REJECTS(c, "concat %c: missing attribute 'axis'");
    set_attr_int(c, "axis", 1);
    CHECK_INFERS(c, "f32[N,7,2,2]");
    set_attr_int(c, "axis", 2);
    CHECK_REJECTS(c, "concat %c: operand 1 is f32[N,3,2,2] but operand 0 is f32[N,4,2,2]");
    set_attr_int(c, "axis", 0);
    CHECK_REJECTS(c, "concat %c: axis 0 of the operand f32[N,4,2,2] cannot be the batch N");

    /* pad */
    Node *p = node(g, OP_PAD, "p", 1, &x);
    set_attr_ints(p, "pads", 8, (int64_t[]){0, 0, 1, 0, 0, 0, 1, 2});
    CHECK_INFERS(p, "f32[N,4,4,4]");
    set_attr_ints(p, "pads", 8, (int64_t[]){1, 0, 1, 0, 0, 0, 1, 2});
    CHECK_REJECTS(p, "pad %p: cannot pad the batch axis 0");
    set_attr_ints(p, "pads", 2, (int64_t[]){1, 1});
    CHECK_REJECTS(p, "pad %p: attribute 'pads' needs 8 entries, got 2");
    Value *xb = add_input(g, "xb", TY(TY_B1, N_, 4));
    Node *pb = node(g, OP_PAD, "pb", 1, &xb);
    set_attr_ints(pb, "pads", 4, (int64_t[]){0, 1, 0, 1});
    CHECK_REJECTS(pb, "pad %pb: a b1 input pads with value 1 or -1, got 0");
    set_attr_float(pb, "value", -1);
    CHECK_INFERS(pb, "b1[N,6]");

    /* threshold: b1 by a [C] threshold, i32 by [C,L]; dir checked. */
    Value *t1 = zeros(g, "t1", TY(TY_I32, 4));
    Value *t2 = zeros(g, "t2", TY(TY_I32, 4, 3));
    Value *t0 = zeros(g, "t0", TY(TY_I32, 1));
    Value *t5 = zeros(g, "t5", TY(TY_I32, 5));
    CHECK_INFERS(node(g, OP_THRESHOLD, "th1", 2, (Value *[]){xi, t1}), "b1[N,4,2,2]");
    CHECK_INFERS(node(g, OP_THRESHOLD, "th2", 2, (Value *[]){xi, t2}), "i32[N,4,2,2]");
    CHECK_INFERS(node(g, OP_THRESHOLD, "th3", 2, (Value *[]){xi, t0}), "b1[N,4,2,2]");
    CHECK_REJECTS(node(g, OP_THRESHOLD, "th4", 2, (Value *[]){xi, t5}),
                  "threshold %th4: thresholds must be [4] or [4,L]");
    CHECK_REJECTS(node(g, OP_THRESHOLD, "th5", 2, (Value *[]){x, t1}),
                  "threshold %th5: thresholds i32[4] must have the input's dtype f32");
    Value *dir = konst(g, "dir", TY(TY_I8, 4), VALS(1, -1, 0, 1));
    CHECK_REJECTS(node(g, OP_THRESHOLD, "th6", 3, (Value *[]){xi, t1, dir}),
                  "threshold %th6: dir[2] is 0; directions must be +1 or -1");

    /* dense b1 x b1 -> i32, feature mismatch. */
    Value *a = add_input(g, "a", TY(TY_B1, N_, 64));
    Value *w = zeros(g, "w", TY(TY_B1, 10, 64));
    Value *w2 = zeros(g, "w2", TY(TY_B1, 10, 63));
    CHECK_INFERS(node(g, OP_DENSE, "d1", 2, (Value *[]){a, w}), "i32[N,10]");
    CHECK_REJECTS(node(g, OP_DENSE, "d2", 2, (Value *[]){a, w2}),
                  "dense %d2: input has 64 features but weights b1[10,63] expect 63");

    /* heads */
    Value *f = add_input(g, "f", TY(TY_F32, N_, 10));
    Node *k = node(g, OP_TOPK, "k", 1, &f);
    set_attr_int(k, "k", 3);
    Type two[MAX_OUTPUTS];
    CHECK(infer_node_types(k, two) == 0);
    CHECK(strcmp(show(&two[0]), "f32[N,3]") == 0);
    CHECK(strcmp(show(&two[1]), "i64[N,3]") == 0);
    set_attr_int(k, "k", 11);
    CHECK_REJECTS(k, "topk %k: k=11 is out of range for axis 1 of f32[N,10]");
    Node *am = node(g, OP_ARGMAX, "am", 1, &f);
    CHECK_INFERS(am, "i64[N,1]");
    set_attr_int(am, "keepdims", 0);
    CHECK_INFERS(am, "i64[N]");
    set_attr_int(am, "axis", 2);
    CHECK_REJECTS(am, "argmax %am: axis 2 is out of range for rank 2");
    CHECK_INFERS(node(g, OP_SOFTMAX, "sm", 1, &f), "f32[N,10]");

    /* casts, binarize, quant */
    Node *cs = node(g, OP_CAST, "cs", 1, &a);
    set_attr_str(cs, "to", "i32");
    CHECK_INFERS(cs, "i32[N,64]");
    set_attr_str(cs, "to", "b1");
    CHECK_REJECTS(cs, "cast %cs: cannot cast to b1 (use binarize)");
    set_attr_str(cs, "to", "f64");
    CHECK_REJECTS(cs, "cast %cs: unknown dtype 'f64'");
    Node *bz = node(g, OP_BINARIZE, "bz", 1, &f);
    CHECK_INFERS(bz, "b1[N,10]");
    set_attr_int(bz, "zero", 0);
    CHECK_REJECTS(bz, "binarize %bz: attribute 'zero' must be 1 or -1, got 0");
    Value *sc = zeros(g, "sc", TY(TY_F32, 10));
    Value *z = zeros(g, "z", make_type(TY_F32, 0, NULL));
    Value *bits = zeros(g, "bits", TY(TY_F32, 1));
    Value *bad = zeros(g, "bad", TY(TY_F32, 3));
    Node *q = node(g, OP_QUANT, "q", 4, (Value *[]){f, sc, z, bits});
    CHECK_INFERS(q, "f32[N,10]");
    set_attr_str(q, "rounding", "NEAREST");
    CHECK_REJECTS(q, "quant %q: unknown rounding mode 'NEAREST'");
    CHECK_REJECTS(node(g, OP_QUANT, "q2", 4, (Value *[]){f, bad, z, bits}),
                  "quant %q2: shapes f32[N,10] and f32[3] do not broadcast");
    CHECK_REJECTS(node(g, OP_QUANT, "q3", 4, (Value *[]){f, sc, z, sc}),
                  "quant %q3: bitwidth must be a scalar, got f32[10]");
    /* batchnorm parameters per channel. */
    Value *p4 = zeros(g, "p4", TY(TY_F32, 4)), *p3 = zeros(g, "p3", TY(TY_F32, 3));
    CHECK_INFERS(node(g, OP_BATCHNORM, "bn", 5, (Value *[]){x, p4, p4, p4, p4}), "f32[N,4,2,2]");
    CHECK_REJECTS(node(g, OP_BATCHNORM, "bn2", 5, (Value *[]){x, p4, p4, p3, p4}),
                  "batchnorm %bn2: mean must be f32[4] (one per channel of f32[N,4,2,2]), got f32[3]");
    free_graph(g);
}

/* ---------------------------------------------------------------- verifier errors */

/* x: f32[N,4,5,5] -> conv2d 3x3 (8 out) -> batchnorm -> binarize -> maxpool -> reshape ->
 * dense b1 -> threshold -> output. Returns the conv node in *conv. */
static Graph *good_graph(Node **conv) {
    Graph *g = new_graph("good");
    Value *x = add_input(g, "x", TY(TY_F32, N_, 4, 5, 5));
    Value *w = zeros(g, "w", TY(TY_F32, 8, 4, 3, 3));
    Node *c = add_node(g, OP_CONV2D, 2, (Value *[]){x, w}, (const char *[]){"y"},
                       (Type[]){TY(TY_F32, N_, 8, 3, 3)});
    Value *p = konst(g, "p", TY(TY_F32, 8), VALS(1, 1, 1, 1, 1, 1, 1, 1));
    Node *bn = add_node(g, OP_BATCHNORM, 5, (Value *[]){c->out[0], p, p, p, p},
                        (const char *[]){"bn"}, (Type[]){TY(TY_F32, N_, 8, 3, 3)});
    Node *b = add_node(g, OP_BINARIZE, 1, &bn->out[0], (const char *[]){"b"},
                       (Type[]){TY(TY_B1, N_, 8, 3, 3)});
    Node *m = add_node(g, OP_MAXPOOL, 1, &b->out[0], (const char *[]){"m"},
                       (Type[]){TY(TY_B1, N_, 8, 2, 2)});
    set_attr_ints(m, "kernel", 2, (int64_t[]){2, 2});
    set_attr_ints(m, "strides", 2, (int64_t[]){2, 2});
    set_attr_int(m, "ceil_mode", 1);
    Node *r = add_node(g, OP_RESHAPE, 1, &m->out[0], (const char *[]){"r"},
                       (Type[]){TY(TY_B1, N_, 32)});
    Value *w2 = zeros(g, "w2", TY(TY_B1, 10, 32));
    Node *d = add_node(g, OP_DENSE, 2, (Value *[]){r->out[0], w2}, (const char *[]){"d"},
                       (Type[]){TY(TY_I32, N_, 10)});
    Value *t = zeros(g, "t", TY(TY_I32, 10, 3));
    Node *th = add_node(g, OP_THRESHOLD, 2, (Value *[]){d->out[0], t}, (const char *[]){"out"},
                        (Type[]){TY(TY_I32, N_, 10)});
    add_output(g, th->out[0]);
    *conv = c;
    return g;
}

static void test_verify_errors(void) {
    Node *conv;
    Graph *g = good_graph(&conv);
    diag_clear();
    CHECK_MSG(verify_graph(g) == 0, "%s", diag_message());

    /* Declared result type disagrees with inference: both types shown. */
    conv->out[0]->type = TY(TY_F32, N_, 8, 4, 4);
    CHECK_VERIFY_FAILS(g, "conv2d %y: result %y is declared f32[N,8,4,4] but its operands give "
                          "f32[N,8,3,3]");
    conv->out[0]->type = TY(TY_F32, N_, 8, 3, 3);

    /* The source location and the ONNX name appear when known. */
    conv->loc = (Loc){"m.bnn", 3, 5};
    conv->out[0]->type = TY(TY_I32, N_, 8, 3, 3);
    CHECK_VERIFY_FAILS(g, "m.bnn:3:5: conv2d %y: result %y is declared i32");
    node_set_src(conv, "Conv_3", "Conv");
    CHECK_VERIFY_FAILS(g, "m.bnn:3:5: node 'Conv_3' (Conv): result %y is declared i32");
    conv->out[0]->type = TY(TY_F32, N_, 8, 3, 3);
    conv->loc = (Loc){NULL, 0, 0};
    node_set_src(conv, NULL, NULL);

    /* Unknown attribute and wrong kind. */
    set_attr_int(conv, "stride", 2);
    CHECK_VERIFY_FAILS(g, "conv2d %y: unknown attribute 'stride'");
    free(conv->attrs[0].key);
    conv->attrs[0].key = strdup("strides"); /* now an int where an int list is expected */
    CHECK_VERIFY_FAILS(g, "conv2d %y: attribute 'strides' must be an int list, got an int");
    conv->attrs[0].kind = ATTR_INTS;
    conv->attrs[0].n = 2;
    conv->attrs[0].ints = malloc(2 * sizeof(int64_t));
    conv->attrs[0].ints[0] = conv->attrs[0].ints[1] = 1;
    diag_clear();
    CHECK_MSG(verify_graph(g) == 0, "%s", diag_message());

    /* Operand count. */
    int saved = conv->nin;
    conv->nin = 1;
    CHECK_VERIFY_FAILS(g, "conv2d %y: takes 2 to 3 operands, got 1");
    conv->nin = saved;

    /* A constant whose data does not match its type. */
    Value *w = conv->in[1];
    w->nbytes -= 4;
    CHECK_VERIFY_FAILS(g, "constant $w: f32[8,4,3,3] needs 1152 bytes of data, has 1148");
    w->nbytes += 4;

    /* Duplicate names (per sigil). */
    free(conv->out[0]->name);
    conv->out[0]->name = strdup("x");
    CHECK_VERIFY_FAILS(g, "the name %x is defined more than once");
    free(conv->out[0]->name);
    conv->out[0]->name = strdup("w"); /* $w and %w do not clash */
    diag_clear();
    CHECK_MSG(verify_graph(g) == 0, "%s", diag_message());
    free(conv->out[0]->name);
    conv->out[0]->name = strdup("y");
    free_graph(g);

    /* Use before definition: swap the first two nodes. */
    g = good_graph(&conv);
    Node *tmp = g->nodes[0];
    g->nodes[0] = g->nodes[1];
    g->nodes[1] = tmp;
    CHECK_VERIFY_FAILS(g, "batchnorm %bn: operand %y is used before it is defined");
    g->nodes[1] = g->nodes[0];
    g->nodes[0] = tmp;

    /* A removed node's result still used, and as a graph output. */
    remove_node(g, conv);
    CHECK_VERIFY_FAILS(g, "batchnorm %bn: operand %y is the result of a removed node");
    conv->dead = false;
    Node *last = g->nodes[g->nnodes - 1];
    remove_node(g, last);
    CHECK_VERIFY_FAILS(g, "graph $good: output %out is not defined");
    last->dead = false;

    /* A constant with a batch dimension. */
    Value *nb = zeros(g, "nb", TY(TY_F32, 1));
    nb->type.dim[0] = DIM_BATCH;
    CHECK_VERIFY_FAILS(g, "constant $nb: invalid type f32[N] (constants have no batch N)");
    nb->type.dim[0] = 1;
    diag_clear();
    CHECK_MSG(verify_graph(g) == 0, "%s", diag_message());

    /* A declared packing on a b1 result is kept; a malformed one is refused. */
    Node *bin = g->nodes[2];
    bin->out[0]->type.pack = (PackFormat){1, 32, 128, TILE_NONE};
    diag_clear();
    CHECK_MSG(verify_graph(g) == 0, "%s", diag_message());
    Type packed[MAX_OUTPUTS];
    CHECK(infer_node_types(bin, packed) == 0 && type_equal(&packed[0], &bin->out[0]->type));
    CHECK_INFERS(bin, "b1[N,8,3,3] pack(axis=1, word=32, pad=128, tile=none)");
    bin->out[0]->type.pack = (PackFormat){7, 32, 128, TILE_K256};
    CHECK_VERIFY_FAILS(g, "binarize %b: result %b has an invalid packing");
    /* tile-major orders only on [N,K] values padded to whole 1024-bit stages (docs/ir.md) */
    bin->out[0]->type.pack = (PackFormat){1, 32, 1024, TILE_K256};
    CHECK_VERIFY_FAILS(g, "binarize %b: result %b: a tile-major packing needs a [N,K] tensor");
    bin->out[0]->type.pack = (PackFormat){0, 0, 0, TILE_NONE};
    free_graph(g);

    /* Operand count on a fixed-arity op, via the verifier. */
    g = new_graph("t");
    Value *x = add_input(g, "x", TY(TY_F32, 2));
    Node *add = add_node(g, OP_ADD, 1, &x, (const char *[]){"s"}, (Type[]){TY(TY_F32, 2)});
    add_output(g, add->out[0]);
    CHECK_VERIFY_FAILS(g, "add %s: takes 2 operands, got 1");
    free_graph(g);
}

int main(void) {
    test_conv_shapes();
    test_pool_shapes();
    test_ceil_mode_rule();
    test_broadcast_shapes();
    test_other_shapes();
    test_verify_errors();
    return check_report("test_verify");
}
