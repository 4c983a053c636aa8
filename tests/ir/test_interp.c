/* test_interp.c: every op of the reference interpreter against values computed by hand
 * (the arithmetic is in the comments). Graphs are built through the ir.h API. */
#include "check.h"
#include "build.h"

/* Run g; outputs are malloc'ed (free with free_outputs) or NULL with the diagnostic printed. */
static Tensor *run(Graph *g, Tensor *inputs) {
    Tensor *out = calloc((size_t)g->noutputs + 1, sizeof *out);
    diag_clear();
    if (interp_run(g, inputs, out) != 0) {
        fprintf(stderr, "interp_run: %s\n", diag_message());
        free(out);
        return NULL;
    }
    return out;
}

static void free_all(Graph *g, Tensor *inputs, int nin, Tensor *outputs) {
    for (int i = 0; i < nin; i++)
        free_tensor(&inputs[i]);
    if (outputs)
        for (int i = 0; i < g->noutputs; i++)
            free_tensor(&outputs[i]);
    free(outputs);
    free_graph(g);
}

/* Check a tensor's concrete type and values (|got - want| <= tol; NaN matches NaN). */
static void check_tensor_at(int line, const Tensor *t, Type want, const double *v, double tol) {
    check_count++;
    char a[160], b[160];
    if (!t || t->type.dtype != want.dtype || t->type.rank != want.rank ||
        memcmp(t->type.dim, want.dim, (size_t)want.rank * sizeof want.dim[0]) != 0) {
        check_failures++;
        fprintf(stderr, "%s:%d: tensor is %s, want %s\n", __FILE__, line,
                t ? type_str(&t->type, a, sizeof a) : "(none)", type_str(&want, b, sizeof b));
        return;
    }
    for (int64_t i = 0; i < type_numel(&want, 1); i++) {
        double got = elem(t, i);
        bool ok = got == v[i] || (isnan(got) && isnan(v[i])) || fabs(got - v[i]) <= tol;
        if (!ok) {
            check_failures++;
            fprintf(stderr, "%s:%d: element %lld is %.9g, want %.9g\n", __FILE__, line,
                    (long long)i, got, v[i]);
            return;
        }
    }
}
#define CHECK_TENSOR(t, want, v) check_tensor_at(__LINE__, (t), (want), (v), 0.0)
#define CHECK_TENSOR_NEAR(t, want, v, tol) check_tensor_at(__LINE__, (t), (want), (v), (tol))

/* One input, one op, one output: the shape of most tests below. */
static Graph *unary_graph(Op op, Type xt, Value **x, Node **n) {
    Graph *g = new_graph("t");
    *x = add_input(g, "x", xt);
    *n = node(g, op, "y", 1, x);
    return g;
}

/* Finish a one-output graph, run it on in (one input, consumed) and check the result. */
static void expect_at(int line, Graph *g, Node *n, Tensor in, Type want, const double *v,
                      double tol) {
    if (settle(n) != 0) {
        check_count++;
        check_failures++;
        fprintf(stderr, "%s:%d: inference failed: %s\n", __FILE__, line, diag_message());
        free_all(g, &in, 1, NULL);
        return;
    }
    add_output(g, n->out[0]);
    Tensor *out = run(g, &in);
    check_tensor_at(line, out ? &out[0] : NULL, want, v, tol);
    free_all(g, &in, 1, out);
}
#define EXPECT(g, n, in, want, v) expect_at(__LINE__, (g), (n), (in), (want), (v), 0.0)
#define EXPECT_NEAR(g, n, in, want, v, tol) expect_at(__LINE__, (g), (n), (in), (want), (v), (tol))

/* ---------------------------------------------------------------- conv2d */

static void test_conv2d_f32(void) {
    /* x = [[1,2,3],[4,5,6],[7,8,9]], w = [[1,0],[0,-1]]: y[i,j] = x[i,j] - x[i+1,j+1] = -4,
     * plus bias 0.5 -> -3.5 everywhere. */
    Graph *g = new_graph("t");
    Value *x = add_input(g, "x", TY(TY_F32, 1, 1, 3, 3));
    Value *w = konst(g, "w", TY(TY_F32, 1, 1, 2, 2), VALS(1, 0, 0, -1));
    Value *b = konst(g, "b", TY(TY_F32, 1), VALS(0.5));
    Node *n = node(g, OP_CONV2D, "y", 3, (Value *[]){x, w, b});
    EXPECT(g, n, tensor(x->type, VALS(1, 2, 3, 4, 5, 6, 7, 8, 9)), TY(TY_F32, 1, 1, 2, 2),
           VALS(-3.5, -3.5, -3.5, -3.5));

    /* pads 1 all round, stride 2: OH = (3+2-2)/2+1 = 2; window origins (-1,-1),(-1,1),(1,-1),
     * (1,1). y[0,0] = -x[0,0] = -1; y[0,1] = -x[0,2] = -3; y[1,0] = -x[2,0] = -7;
     * y[1,1] = x[1,1] - x[2,2] = 5 - 9 = -4. */
    g = new_graph("t");
    x = add_input(g, "x", TY(TY_F32, 1, 1, 3, 3));
    w = konst(g, "w", TY(TY_F32, 1, 1, 2, 2), VALS(1, 0, 0, -1));
    n = node(g, OP_CONV2D, "y", 2, (Value *[]){x, w});
    set_attr_ints(n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    set_attr_ints(n, "strides", 2, (int64_t[]){2, 2});
    EXPECT(g, n, tensor(x->type, VALS(1, 2, 3, 4, 5, 6, 7, 8, 9)), TY(TY_F32, 1, 1, 2, 2),
           VALS(-1, -3, -7, -4));

    /* dilation 2 along W: x = [1..5], w = [1,1]: OW = 5 - 2 - 1 + 1 = 3, y[j] = x[j] + x[j+2]
     * = 4, 6, 8. */
    g = new_graph("t");
    x = add_input(g, "x", TY(TY_F32, 1, 1, 1, 5));
    w = konst(g, "w", TY(TY_F32, 1, 1, 1, 2), VALS(1, 1));
    n = node(g, OP_CONV2D, "y", 2, (Value *[]){x, w});
    set_attr_ints(n, "dilations", 2, (int64_t[]){1, 2});
    EXPECT(g, n, tensor(x->type, VALS(1, 2, 3, 4, 5)), TY(TY_F32, 1, 1, 1, 3), VALS(4, 6, 8));
}

static void test_conv2d_b1(void) {
    /* x = [[+1,-1],[+1,+1]], w = [[+1,-1],[+1,+1]], pads 1: OH = 2+2-2+1 = 3.
     * y[i,j] = sum x[i-1+kh, j-1+kw] * w[kh,kw] over the taps inside the image (zero padding
     * contributes 0, not -1):
     *   y00 = x00*w11 = 1            y01 = x00*w10 + x01*w11 = 1-1 = 0   y02 = x01*w10 = -1
     *   y10 = x00*w01 + x10*w11 = 0  y11 = 1+1+1+1 = 4                     y12 = x01*w00 + x11*w10 = 0
     *   y20 = x10*w01 = -1           y21 = x10*w00 + x11*w01 = 0          y22 = x11*w00 = 1 */
    for (int pad_value = 0; pad_value <= 1; pad_value++) {
        Graph *g = new_graph("t");
        Value *x = add_input(g, "x", TY(TY_B1, 1, 1, 2, 2));
        Value *w = konst(g, "w", TY(TY_B1, 1, 1, 2, 2), VALS(1, -1, 1, 1));
        Node *n = node(g, OP_CONV2D, "y", 2, (Value *[]){x, w});
        set_attr_ints(n, "pads", 4, (int64_t[]){1, 1, 1, 1});
        Tensor in = tensor(x->type, VALS(1, -1, 1, 1));
        if (pad_value == 0) {
            EXPECT(g, n, in, TY(TY_I32, 1, 1, 3, 3), VALS(1, 0, -1, 0, 4, 0, -1, 0, 1));
        } else {
            /* pad_value=1: each padded tap adds +1 * w at that tap.
             *   y00 += w00+w01+w10 = 1 -> 2   y01 += w00+w01 = 0 -> 0   y02 += w00+w01+w11 = 1 -> 0
             *   y10 += w00+w10 = 2 -> 2       y11 = 4                    y12 += w01+w11 = 0 -> 0
             *   y20 += w00+w10+w11 = 3 -> 2   y21 += w10+w11 = 2 -> 2    y22 += w01+w10+w11 = 1 -> 2 */
            set_attr_int(n, "pad_value", 1);
            EXPECT(g, n, in, TY(TY_I32, 1, 1, 3, 3), VALS(2, 0, 0, 2, 4, 0, 2, 2, 2));
        }
    }
    /* pad_value=-1 on a 1x1 input, 3x3 all-+1 kernel, pads 1: 8 padded taps of -1, centre +1:
     * y = 1 - 8 = -7. */
    Graph *g = new_graph("t");
    Value *x = add_input(g, "x", TY(TY_B1, 1, 1, 1, 1));
    Value *w = konst(g, "w", TY(TY_B1, 1, 1, 3, 3), VALS(1, 1, 1, 1, 1, 1, 1, 1, 1));
    Node *n = node(g, OP_CONV2D, "y", 2, (Value *[]){x, w});
    set_attr_ints(n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    set_attr_int(n, "pad_value", -1);
    EXPECT(g, n, tensor(x->type, VALS(1)), TY(TY_I32, 1, 1, 1, 1), VALS(-7));

    /* b1 activations, f32 weights, groups=2: channel 0 (+1) * 0.5 + 1 = 1.5,
     * channel 1 (-1) * 2 + 1 = -1. */
    g = new_graph("t");
    x = add_input(g, "x", TY(TY_B1, 1, 2, 1, 1));
    w = konst(g, "w", TY(TY_F32, 2, 1, 1, 1), VALS(0.5, 2));
    Value *b = konst(g, "b", TY(TY_F32, 2), VALS(1, 1));
    n = node(g, OP_CONV2D, "y", 3, (Value *[]){x, w, b});
    set_attr_int(n, "groups", 2);
    EXPECT(g, n, tensor(x->type, VALS(1, -1)), TY(TY_F32, 1, 2, 1, 1), VALS(1.5, -1));

    /* b1 x b1 with 2 input channels, groups=1, 1x1 kernel: y = x0*w0 + x1*w1.
     * pixel 0: (+1,+1).(+1,-1) = 0; pixel 1: (-1,+1).(+1,-1) = -2. */
    g = new_graph("t");
    x = add_input(g, "x", TY(TY_B1, 1, 2, 1, 2));
    w = konst(g, "w", TY(TY_B1, 1, 2, 1, 1), VALS(1, -1));
    n = node(g, OP_CONV2D, "y", 2, (Value *[]){x, w});
    EXPECT(g, n, tensor(x->type, VALS(1, -1, 1, 1)), TY(TY_I32, 1, 1, 1, 2), VALS(0, -2));
}

/* Batch 3, groups 2, stride 2, dilation 2, asymmetric pads: the exact b1 x b1 conv must equal
 * the f32 conv of the same +-1 values (small integer sums are exact in float32), and so must
 * b1 x f32. Everything lives in one graph: the differences are outputs that must be 0. */
static void test_conv2d_cross(void) {
    Graph *g = new_graph("t");
    Value *x = add_input(g, "x", TY(TY_B1, N_, 4, 6, 5));
    double wv[6 * 2 * 3 * 3];
    for (int i = 0; i < COUNT_OF(wv); i++)
        wv[i] = (i * 7 + i / 5) % 3 == 0 ? 1 : -1;
    Value *w = konst(g, "w", TY(TY_B1, 6, 2, 3, 3), wv);
    int64_t pads[4] = {1, 0, 2, 1}, strides[2] = {2, 1}, dil[2] = {1, 2};
    Node *conv[3];
    Node *xf = node(g, OP_CAST, "xf", 1, &x);
    Node *wf = node(g, OP_CAST, "wf", 1, &w);
    CHECK(settle(xf) == 0 && settle(wf) == 0);
    Value *ins[3][2] = {{x, w}, {xf->out[0], wf->out[0]}, {x, wf->out[0]}};
    const char *names[3] = {"bb", "ff", "bf"};
    for (int k = 0; k < 3; k++) {
        conv[k] = node(g, OP_CONV2D, names[k], 2, ins[k]);
        set_attr_ints(conv[k], "pads", 4, pads);
        set_attr_ints(conv[k], "strides", 2, strides);
        set_attr_ints(conv[k], "dilations", 2, dil);
        set_attr_int(conv[k], "groups", 2);
        CHECK(settle(conv[k]) == 0);
    }
    Node *bbf = node(g, OP_CAST, "bbf", 1, &conv[0]->out[0]);
    CHECK(settle(bbf) == 0);
    Node *d1 = node(g, OP_SUB, "d1", 2, (Value *[]){bbf->out[0], conv[1]->out[0]});
    Node *d2 = node(g, OP_SUB, "d2", 2, (Value *[]){conv[2]->out[0], conv[1]->out[0]});
    CHECK(settle(d1) == 0 && settle(d2) == 0);
    add_output(g, d1->out[0]);
    add_output(g, d2->out[0]);
    add_output(g, conv[0]->out[0]);
    /* OH = (6 + 3 - 3) / 2 + 1 = 4, OW = (5 + 1 - 5) / 1 + 1 = 2 */
    CHECK_MSG(verify_graph(g) == 0, "%s", diag_message());
    Type xt = TY(TY_B1, 3, 4, 6, 5);
    double xv[3 * 4 * 6 * 5];
    for (int i = 0; i < COUNT_OF(xv); i++)
        xv[i] = (i * 13 + i / 7) % 5 < 2 ? 1 : -1;
    Tensor in = tensor(xt, xv);
    Tensor *out = run(g, &in);
    double zero[3 * 6 * 4 * 2] = {0};
    CHECK_TENSOR(out ? &out[0] : NULL, TY(TY_F32, 3, 6, 4, 2), zero);
    CHECK_TENSOR(out ? &out[1] : NULL, TY(TY_F32, 3, 6, 4, 2), zero);
    /* The sums are not all zero (the comparison means something) and stay within the
     * 2 * 3 * 3 = 18 taps of a window. */
    bool bounded = out != NULL, nonzero = false;
    for (int i = 0; out && i < 3 * 6 * 4 * 2; i++) {
        bounded = bounded && fabs(elem(&out[2], i)) <= 18;
        nonzero = nonzero || elem(&out[2], i) != 0;
    }
    CHECK(bounded && nonzero);
    free_all(g, &in, 1, out);
}

/* The interpreter's convolution against a plain loop written here, output by output in the
 * order c, kh, kw with each float product and sum rounded alone: bit-identical results for
 * float and +-1 operands, odd strides, dilations, asymmetric pads, groups, and padding with
 * 0, +1 and -1 (the interpreter computes whole output rows at a time). */
static void naive_conv(const double *x, const double *w, double *y, int B, int C, int H, int W, int O,
                       int KH, int KW, const int64_t *s, const int64_t *d, const int64_t *p, int groups,
                       int pad_value, int OH, int OW, bool integer) {
    int CG = C / groups;
    for (int b = 0; b < B; b++)
        for (int o = 0; o < O; o++)
            for (int i = 0; i < OH; i++)
                for (int j = 0; j < OW; j++) {
                    float facc = 0.0f;
                    long iacc = 0;
                    int g = o / (O / groups);
                    for (int c = 0; c < CG; c++)
                        for (int kh = 0; kh < KH; kh++)
                            for (int kw = 0; kw < KW; kw++) {
                                int ih = i * (int)s[0] + kh * (int)d[0] - (int)p[0];
                                int iw = j * (int)s[1] + kw * (int)d[1] - (int)p[1];
                                bool in = ih >= 0 && ih < H && iw >= 0 && iw < W;
                                if (!in && pad_value == 0)
                                    continue;
                                double xv = in ? x[((b * C + g * CG + c) * H + ih) * W + iw] : pad_value;
                                double wv = w[((o * CG + c) * KH + kh) * KW + kw];
                                if (integer)
                                    iacc += (long)xv * (long)wv;
                                else
                                    facc += (float)xv * (float)wv;
                            }
                    y[((b * O + o) * OH + i) * OW + j] = integer ? (double)iacc : (double)facc;
                }
}

static void test_conv2d_rows_vs_naive(void) {
    enum { B = 2, C = 6, H = 9, W = 11, O = 4, KH = 3, KW = 2, GROUPS = 2 };
    const int64_t s[2] = {2, 3}, d[2] = {2, 1}, p[4] = {1, 2, 3, 0};
    int OH = (H + 1 + 3 - 2 * (KH - 1) - 1) / 2 + 1, OW = (W + 2 + 0 - (KW - 1) - 1) / 3 + 1;
    static double xv[B * C * H * W], wv[O * (C / GROUPS) * KH * KW], want[B * O * 9 * 9];
    uint32_t r = 12345;
    for (int integer = 0; integer < 2; integer++)
        for (int pad_value = -1; pad_value <= 1; pad_value++) {
            if (!integer && pad_value != 0)
                continue; /* float convolutions are zero-padded */
            for (int i = 0; i < COUNT_OF(xv); i++) {
                r = r * 1664525u + 1013904223u;
                xv[i] = integer ? ((r >> 16) & 1 ? 1 : -1) : (double)(float)((int)(r >> 9) % 2001 - 1000) / 997.0f;
            }
            for (int i = 0; i < COUNT_OF(wv); i++) {
                r = r * 1664525u + 1013904223u;
                wv[i] = integer ? ((r >> 16) & 1 ? 1 : -1) : (double)(float)((int)(r >> 9) % 2001 - 1000) / 991.0f;
            }
            DType dt = integer ? TY_B1 : TY_F32;
            Graph *g = new_graph("t");
            Value *x = add_input(g, "x", TY(dt, N_, C, H, W));
            Value *w = konst(g, "w", TY(dt, O, C / GROUPS, KH, KW), wv);
            Node *conv = node(g, OP_CONV2D, "y", 2, (Value *[]){x, w});
            set_attr_ints(conv, "pads", 4, p);
            set_attr_ints(conv, "strides", 2, s);
            set_attr_ints(conv, "dilations", 2, d);
            set_attr_int(conv, "groups", GROUPS);
            set_attr_int(conv, "pad_value", pad_value);
            naive_conv(xv, wv, want, B, C, H, W, O, KH, KW, s, d, p, GROUPS, pad_value, OH, OW, integer);
            CHECK(OH * OW <= 81);
            EXPECT(g, conv, tensor(TY(dt, B, C, H, W), xv), TY(integer ? TY_I32 : TY_F32, B, O, OH, OW), want);
        }
}

/* ---------------------------------------------------------------- dense, matmul */

static void test_dense(void) {
    /* b1 x b1: x rows (+,+,-), (-,-,-); w rows (+,-,+), (+,+,+).
     * y00 = 1-1-1 = -1, y01 = 1+1-1 = 1, y10 = -1+1-1 = -1, y11 = -3. */
    Graph *g = new_graph("t");
    Value *x = add_input(g, "x", TY(TY_B1, 2, 3));
    Value *w = konst(g, "w", TY(TY_B1, 2, 3), VALS(1, -1, 1, 1, 1, 1));
    Node *n = node(g, OP_DENSE, "y", 2, (Value *[]){x, w});
    EXPECT(g, n, tensor(x->type, VALS(1, 1, -1, -1, -1, -1)), TY(TY_I32, 2, 2),
           VALS(-1, 1, -1, -3));

    /* f32 with bias: [1,2] . [3,4] + 0.5 = 11.5; [1,2] . [5,6] - 1 = 16. */
    g = new_graph("t");
    x = add_input(g, "x", TY(TY_F32, 1, 2));
    w = konst(g, "w", TY(TY_F32, 2, 2), VALS(3, 4, 5, 6));
    Value *b = konst(g, "b", TY(TY_F32, 2), VALS(0.5, -1));
    n = node(g, OP_DENSE, "y", 3, (Value *[]){x, w, b});
    EXPECT(g, n, tensor(x->type, VALS(1, 2)), TY(TY_F32, 1, 2), VALS(11.5, 16));

    /* b1 x f32: (+1,-1) . [3,4] = -1, . [5,6] = -1. */
    g = new_graph("t");
    x = add_input(g, "x", TY(TY_B1, 1, 2));
    w = konst(g, "w", TY(TY_F32, 2, 2), VALS(3, 4, 5, 6));
    n = node(g, OP_DENSE, "y", 2, (Value *[]){x, w});
    EXPECT(g, n, tensor(x->type, VALS(1, -1)), TY(TY_F32, 1, 2), VALS(-1, -1));
}

static void test_matmul(void) {
    /* a: two 1x2 matrices [1,2] and [3,4]; b = [[1,0],[1,1]] broadcast to both:
     * [1+2, 2] = [3,2]; [3+4, 4] = [7,4]. */
    Graph *g = new_graph("t");
    Value *a = add_input(g, "a", TY(TY_F32, 2, 1, 2));
    Value *b = konst(g, "b", TY(TY_F32, 2, 2), VALS(1, 0, 1, 1));
    Node *n = node(g, OP_MATMUL, "y", 2, (Value *[]){a, b});
    EXPECT(g, n, tensor(a->type, VALS(1, 2, 3, 4)), TY(TY_F32, 2, 1, 2), VALS(3, 2, 7, 4));
}

/* ---------------------------------------------------------------- normalisation, bits */

static void test_batchnorm(void) {
    /* epsilon 0: channel 0: (1-1)/sqrt(4)*2 + 0 = 0; channel 1: (2-0)/sqrt(1)*1 + 1 = 3. */
    Graph *g = new_graph("t");
    Value *x = add_input(g, "x", TY(TY_F32, 1, 2, 1, 1));
    Value *in[5] = {x, konst(g, "s", TY(TY_F32, 2), VALS(2, 1)),
                    konst(g, "b", TY(TY_F32, 2), VALS(0, 1)),
                    konst(g, "m", TY(TY_F32, 2), VALS(1, 0)),
                    konst(g, "v", TY(TY_F32, 2), VALS(4, 1))};
    Node *n = node(g, OP_BATCHNORM, "y", 5, in);
    set_attr_float(n, "epsilon", 0.0f);
    EXPECT(g, n, tensor(x->type, VALS(1, 2)), TY(TY_F32, 1, 2, 1, 1), VALS(0, 3));
    /* The shared scalar is exactly this float expression. */
    CHECK(batchnorm_scalar(3.0f, 2.0f, 1.0f, 1.0f, 3.0f, 1.0f) == 3.0f);
    CHECK(batchnorm_scalar(0.1f, 0.7f, 0.3f, 0.2f, 0.5f, 1e-5f) ==
          (0.1f - 0.2f) / sqrtf(0.5f + 1e-5f) * 0.7f + 0.3f);
}

static void test_sign_binarize(void) {
    Value *x;
    Node *n;
    /* sign(0) = 0: not a bit. */
    Graph *g = unary_graph(OP_SIGN, TY(TY_F32, 4), &x, &n);
    EXPECT(g, n, tensor(x->type, VALS(-2, 0, 3, -0.0)), TY(TY_F32, 4), VALS(-1, 0, 1, 0));
    /* binarize zero=1 (default): -1 -> 0 (-1), 0 -> 1 (+1), 2 -> 1, NaN -> 0. */
    g = unary_graph(OP_BINARIZE, TY(TY_F32, 4), &x, &n);
    EXPECT(g, n, tensor(x->type, VALS(-1, 0, 2, NAN)), TY(TY_B1, 4), VALS(-1, 1, 1, -1));
    /* zero=-1: 0 -> 0 (-1). */
    g = unary_graph(OP_BINARIZE, TY(TY_F32, 4), &x, &n);
    set_attr_int(n, "zero", -1);
    EXPECT(g, n, tensor(x->type, VALS(-1, 0, 2, -0.0)), TY(TY_B1, 4), VALS(-1, -1, 1, -1));
}

static void test_threshold(void) {
    /* x: channel 0 = [5,-3], channel 1 = [0,7]; t = [0,7], dir = [+1,-1]:
     * ch0: x >= 0 -> 1, 0; ch1: x <= 7 -> 1, 1. */
    Graph *g = new_graph("t");
    Value *x = add_input(g, "x", TY(TY_I32, 1, 2, 2));
    Value *t = konst(g, "t", TY(TY_I32, 2), VALS(0, 7));
    Value *d = konst(g, "d", TY(TY_I8, 2), VALS(1, -1));
    Node *n = node(g, OP_THRESHOLD, "y", 3, (Value *[]){x, t, d});
    EXPECT(g, n, tensor(x->type, VALS(5, -3, 0, 7)), TY(TY_B1, 1, 2, 2), VALS(1, -1, 1, 1));

    /* Levels t = [[-5,5],[0,10]]: ch0: 5 -> (5>=-5)+(5>=5) = 2, -3 -> 1; ch1: 0 -> 1, 7 -> 1. */
    g = new_graph("t");
    x = add_input(g, "x", TY(TY_I32, 1, 2, 2));
    t = konst(g, "t", TY(TY_I32, 2, 2), VALS(-5, 5, 0, 10));
    n = node(g, OP_THRESHOLD, "y", 2, (Value *[]){x, t});
    EXPECT(g, n, tensor(x->type, VALS(5, -3, 0, 7)), TY(TY_I32, 1, 2, 2), VALS(2, 1, 1, 1));

    /* Levels with dir -1 on channel 1: 0 -> (0<=0)+(0<=10) = 2, 7 -> 1. */
    g = new_graph("t");
    x = add_input(g, "x", TY(TY_I32, 1, 2, 2));
    t = konst(g, "t", TY(TY_I32, 2, 2), VALS(-5, 5, 0, 10));
    d = konst(g, "d", TY(TY_I8, 2), VALS(1, -1));
    n = node(g, OP_THRESHOLD, "y", 3, (Value *[]){x, t, d});
    EXPECT(g, n, tensor(x->type, VALS(5, -3, 0, 7)), TY(TY_I32, 1, 2, 2), VALS(2, 1, 2, 1));

    /* One threshold for every channel, t = [1]: 5 -> 1, -3 -> 0, 0 -> 0, 7 -> 1. */
    g = new_graph("t");
    x = add_input(g, "x", TY(TY_I32, 1, 2, 2));
    t = konst(g, "t", TY(TY_I32, 1), VALS(1));
    n = node(g, OP_THRESHOLD, "y", 2, (Value *[]){x, t});
    EXPECT(g, n, tensor(x->type, VALS(5, -3, 0, 7)), TY(TY_B1, 1, 2, 2), VALS(1, -1, -1, 1));

    /* The constant channel of docs/ir.md: t = INT32_MIN, dir +1 always 1, dir -1 always 0. */
    g = new_graph("t");
    x = add_input(g, "x", TY(TY_I32, 1, 2, 1));
    t = konst(g, "t", TY(TY_I32, 2), VALS(-2147483648.0, -2147483648.0));
    d = konst(g, "d", TY(TY_I8, 2), VALS(1, -1));
    n = node(g, OP_THRESHOLD, "y", 3, (Value *[]){x, t, d});
    EXPECT(g, n, tensor(x->type, VALS(-2147483647.0, -2147483647.0)), TY(TY_B1, 1, 2, 1),
           VALS(1, -1));

    /* A dir that is a graph input is checked at run time. */
    g = new_graph("t");
    x = add_input(g, "x", TY(TY_I32, 1, 1, 1));
    d = add_input(g, "d", TY(TY_I8, 1));
    t = konst(g, "t", TY(TY_I32, 1), VALS(0));
    n = node(g, OP_THRESHOLD, "y", 3, (Value *[]){x, t, d});
    CHECK(settle(n) == 0);
    add_output(g, n->out[0]);
    Tensor ins[2] = {tensor(x->type, VALS(1)), tensor(d->type, VALS(0))};
    Tensor outs[1];
    CHECK(interp_run(g, ins, outs) != 0);
    CHECK_STR_CONTAINS(diag_message(), "threshold %y: dir for channel 0 is 0");
    free_all(g, ins, 2, NULL);

    /* f32 thresholds, negative direction: 0.5 <= 0.5 -> 1, 0.75 <= 0.5 -> 0. */
    g = new_graph("t");
    x = add_input(g, "x", TY(TY_F32, 1, 1, 2));
    t = konst(g, "t", TY(TY_F32, 1), VALS(0.5));
    d = konst(g, "d", TY(TY_I8, 1), VALS(-1));
    n = node(g, OP_THRESHOLD, "y", 3, (Value *[]){x, t, d});
    EXPECT(g, n, tensor(x->type, VALS(0.5, 0.75)), TY(TY_B1, 1, 1, 2), VALS(1, -1));
}

/* ---------------------------------------------------------------- quant, trunc, cast */

static Graph *quant_graph(Type xt, Type st, const double *scale, double zeropt, double bits,
                          Node **n, Value **x) {
    Graph *g = new_graph("t");
    *x = add_input(g, "x", xt);
    Value *in[4] = {*x, konst(g, "s", st, scale),
                    konst(g, "z", make_type(TY_F32, 0, NULL), VALS(zeropt)),
                    konst(g, "b", make_type(TY_F32, 0, NULL), VALS(bits))};
    *n = node(g, OP_QUANT, "y", 4, in);
    return g;
}

static void test_quant(void) {
    /* x / 1 + 0 = [0.5, 1.5, 2.5, -0.5, -1.5, 7.9], 3-bit signed: clamp to [-4, 3]. */
    static const struct {
        const char *mode;
        double want[6];
    } cases[] = {
        {"ROUND", {0, 2, 2, 0, -2, 3}},         /* half to even */
        {"CEIL", {1, 2, 3, 0, -1, 3}},
        {"FLOOR", {0, 1, 2, -1, -2, 3}},
        {"ROUND_TO_ZERO", {0, 1, 2, 0, -1, 3}},
        {"HALF_UP", {1, 2, 3, -1, -2, 3}},      /* ties away from zero */
        {"HALF_DOWN", {0, 1, 2, 0, -1, 3}},     /* ties toward zero */
        {"UP", {1, 2, 3, -1, -2, 3}},           /* away from zero */
    };
    for (int i = 0; i < COUNT_OF(cases); i++) {
        Node *n;
        Value *x;
        Graph *g = quant_graph(TY(TY_F32, 6), make_type(TY_F32, 0, NULL), VALS(1), 0, 3, &n, &x);
        set_attr_str(n, "rounding", cases[i].mode);
        EXPECT(g, n, tensor(x->type, VALS(0.5, 1.5, 2.5, -0.5, -1.5, 7.9)), TY(TY_F32, 6),
               cases[i].want);
    }
    /* HALF_UP just below a half: 0.49999997 must round to 0 (floor(|v| + 0.5) gets 1). */
    Node *n;
    Value *x;
    Graph *g = quant_graph(TY(TY_F32, 1), make_type(TY_F32, 0, NULL), VALS(1), 0, 8, &n, &x);
    set_attr_str(n, "rounding", "HALF_UP");
    EXPECT(g, n, tensor(x->type, VALS(0.49999997)), TY(TY_F32, 1), VALS(0));

    /* scale 0.5, zeropt 1, 4-bit unsigned [0, 15]: 1/0.5+1 = 3 -> (3-1)*0.5 = 1;
     * -3/0.5+1 = -5 -> 0 -> (0-1)*0.5 = -0.5. */
    g = quant_graph(TY(TY_F32, 2), make_type(TY_F32, 0, NULL), VALS(0.5), 1, 4, &n, &x);
    set_attr_int(n, "signed", 0);
    EXPECT(g, n, tensor(x->type, VALS(1, -3)), TY(TY_F32, 2), VALS(1, -0.5));

    /* 2-bit signed narrow: [-1, 1]; unsigned narrow 2-bit: [0, 2]. */
    g = quant_graph(TY(TY_F32, 2), make_type(TY_F32, 0, NULL), VALS(1), 0, 2, &n, &x);
    set_attr_int(n, "narrow", 1);
    EXPECT(g, n, tensor(x->type, VALS(-5, 5)), TY(TY_F32, 2), VALS(-1, 1));
    g = quant_graph(TY(TY_F32, 2), make_type(TY_F32, 0, NULL), VALS(1), 0, 2, &n, &x);
    set_attr_int(n, "narrow", 1);
    set_attr_int(n, "signed", 0);
    EXPECT(g, n, tensor(x->type, VALS(-5, 5)), TY(TY_F32, 2), VALS(0, 2));

    /* Per-channel scale [1,2,1,1] = [1, 2] on x = [3, 3]: 3 -> 3; 3/2 = 1.5 -> 2 -> 4. */
    g = quant_graph(TY(TY_F32, 1, 2, 1, 1), TY(TY_F32, 1, 2, 1, 1), VALS(1, 2), 0, 8, &n, &x);
    EXPECT(g, n, tensor(x->type, VALS(3, 3)), TY(TY_F32, 1, 2, 1, 1), VALS(3, 4));

    /* A bitwidth of 0 is refused at run time, naming the op. */
    g = quant_graph(TY(TY_F32, 1), make_type(TY_F32, 0, NULL), VALS(1), 0, 0, &n, &x);
    CHECK(settle(n) == 0);
    add_output(g, n->out[0]);
    Tensor in = tensor(x->type, VALS(1));
    Tensor out[1];
    CHECK(interp_run(g, &in, out) != 0);
    CHECK_STR_CONTAINS(diag_message(), "quant %y: bitwidth is 0");
    free_all(g, &in, 1, NULL);
}

static void test_trunc(void) {
    /* in 8 bits, out 6: shift 2^2 = 4. FLOOR: 13/4 = 3.25 -> 3 -> 12; -13/4 -> -4 -> -16.
     * ROUND: 10/4 = 2.5 -> 2 -> 8; 14/4 = 3.5 -> 4 -> 16. */
    for (int round = 0; round <= 1; round++) {
        Graph *g = new_graph("t");
        Value *x = add_input(g, "x", TY(TY_F32, 2));
        Type s = make_type(TY_F32, 0, NULL);
        Value *in[5] = {x, konst(g, "s", s, VALS(1)), konst(g, "z", s, VALS(0)),
                        konst(g, "ib", s, VALS(8)), konst(g, "ob", s, VALS(6))};
        Node *n = node(g, OP_TRUNC, "y", 5, in);
        if (round) {
            set_attr_str(n, "rounding", "ROUND");
            EXPECT(g, n, tensor(x->type, VALS(10, 14)), TY(TY_F32, 2), VALS(8, 16));
        } else {
            EXPECT(g, n, tensor(x->type, VALS(13, -13)), TY(TY_F32, 2), VALS(12, -16));
        }
    }
}

static void test_cast(void) {
    Value *x;
    Node *n;
    Graph *g = unary_graph(OP_CAST, TY(TY_B1, 2), &x, &n);
    EXPECT(g, n, tensor(x->type, VALS(1, -1)), TY(TY_F32, 2), VALS(1, -1));
    g = unary_graph(OP_CAST, TY(TY_B1, 2), &x, &n);
    set_attr_str(n, "to", "i32");
    EXPECT(g, n, tensor(x->type, VALS(-1, 1)), TY(TY_I32, 2), VALS(-1, 1));
    /* float -> int truncates toward zero. */
    g = unary_graph(OP_CAST, TY(TY_F32, 2), &x, &n);
    set_attr_str(n, "to", "i32");
    EXPECT(g, n, tensor(x->type, VALS(2.7, -2.7)), TY(TY_I32, 2), VALS(2, -2));
    /* i32 -> i8 wraps: 200 -> -56, -129 -> 127. */
    g = unary_graph(OP_CAST, TY(TY_I32, 2), &x, &n);
    set_attr_str(n, "to", "i8");
    EXPECT(g, n, tensor(x->type, VALS(200, -129)), TY(TY_I8, 2), VALS(-56, 127));
    /* i64 -> f32. */
    g = unary_graph(OP_CAST, TY(TY_I64, 2), &x, &n);
    EXPECT(g, n, tensor(x->type, VALS(7, -3)), TY(TY_F32, 2), VALS(7, -3));

    /* f32 -> f16 -> f32: 1.5 and 65504 exact; 65520 -> inf; 1 + 2^-11 is a tie -> 1 (even);
     * 2^-24 is the smallest subnormal. */
    g = new_graph("t");
    x = add_input(g, "x", TY(TY_F32, 5));
    n = node(g, OP_CAST, "h", 1, &x);
    set_attr_str(n, "to", "f16");
    CHECK(settle(n) == 0);
    Node *back = node(g, OP_CAST, "y", 1, &n->out[0]);
    EXPECT(g, back, tensor(x->type, VALS(1.5, 65504, 65520, 1 + ldexp(1, -11), ldexp(1, -24))),
           TY(TY_F32, 5), VALS(1.5, 65504, INFINITY, 1, ldexp(1, -24)));
    /* 1 + 3*2^-11 is a tie between mantissas 1 (odd) and 2 (even) -> 1 + 2^-9; NaN stays NaN;
     * -2^-25 is a tie between -0 and -2^-24 -> -0. */
    g = new_graph("t");
    x = add_input(g, "x", TY(TY_F32, 3));
    n = node(g, OP_CAST, "h", 1, &x);
    set_attr_str(n, "to", "f16");
    CHECK(settle(n) == 0);
    back = node(g, OP_CAST, "y", 1, &n->out[0]);
    EXPECT(g, back, tensor(x->type, VALS(1 + 3 * ldexp(1, -11), NAN, -ldexp(1, -25))),
           TY(TY_F32, 3), VALS(1 + ldexp(1, -9), NAN, 0));
    /* u8 -> i64 and i8 -> u8 (wraps: -1 -> 255). */
    g = unary_graph(OP_CAST, TY(TY_U8, 2), &x, &n);
    set_attr_str(n, "to", "i64");
    EXPECT(g, n, tensor(x->type, VALS(0, 255)), TY(TY_I64, 2), VALS(0, 255));
    g = unary_graph(OP_CAST, TY(TY_I8, 2), &x, &n);
    set_attr_str(n, "to", "u8");
    EXPECT(g, n, tensor(x->type, VALS(-1, 5)), TY(TY_U8, 2), VALS(255, 5));

    /* Out of range float -> int is refused, naming the op. */
    g = unary_graph(OP_CAST, TY(TY_F32, 1), &x, &n);
    set_attr_str(n, "to", "i8");
    CHECK(settle(n) == 0);
    add_output(g, n->out[0]);
    Tensor in = tensor(x->type, VALS(300));
    Tensor out[1];
    CHECK(interp_run(g, &in, out) != 0);
    CHECK_STR_CONTAINS(diag_message(), "cast %y: element 0 (300) is out of the range of i8");
    free_all(g, &in, 1, NULL);
}

/* ---------------------------------------------------------------- pooling */

static void test_maxpool(void) {
    Value *x;
    Node *n;
    /* x = 1..9 (3x3), kernel 2, stride 2. ceil_mode=0: one window -> 5. ceil_mode=1: OH =
     * ceil(1/2)+1 = 2, windows clipped to the image: max(1,2,4,5)=5, max(3,6)=6, max(7,8)=8, 9. */
    for (int ceil_mode = 0; ceil_mode <= 1; ceil_mode++) {
        Graph *g = unary_graph(OP_MAXPOOL, TY(TY_F32, 1, 1, 3, 3), &x, &n);
        set_attr_ints(n, "kernel", 2, (int64_t[]){2, 2});
        set_attr_ints(n, "strides", 2, (int64_t[]){2, 2});
        set_attr_int(n, "ceil_mode", ceil_mode);
        Tensor in = tensor(x->type, VALS(1, 2, 3, 4, 5, 6, 7, 8, 9));
        if (ceil_mode)
            EXPECT(g, n, in, TY(TY_F32, 1, 1, 2, 2), VALS(5, 6, 8, 9));
        else
            EXPECT(g, n, in, TY(TY_F32, 1, 1, 1, 1), VALS(5));
    }
    /* Negative values with padding: padding is ignored, not 0: max(-5) = -5 at the corner. */
    Graph *g = unary_graph(OP_MAXPOOL, TY(TY_F32, 1, 1, 2, 2), &x, &n);
    set_attr_ints(n, "kernel", 2, (int64_t[]){2, 2});
    set_attr_ints(n, "pads", 4, (int64_t[]){1, 1, 0, 0});
    /* windows origins (-1,-1): x00; (-1,0): x00,x01; (0,-1): x00,x10; (0,0): all. */
    EXPECT(g, n, tensor(x->type, VALS(-5, -6, -7, -8)), TY(TY_F32, 1, 1, 2, 2),
           VALS(-5, -5, -5, -5));

    /* b1: max of +-1 is OR of bits. Channel 0 (-,-,-,+) -> +1, channel 1 all - -> -1;
     * with padding that must not count as +1. */
    g = unary_graph(OP_MAXPOOL, TY(TY_B1, 1, 2, 2, 2), &x, &n);
    set_attr_ints(n, "kernel", 2, (int64_t[]){2, 2});
    set_attr_ints(n, "pads", 4, (int64_t[]){1, 1, 0, 0});
    /* ch0 windows: (-1,-1): x00=- ; (-1,0): x00,x01 = - ; (0,-1): x00,x10 = -; (0,0): + */
    EXPECT(g, n, tensor(x->type, VALS(-1, -1, -1, 1, -1, -1, -1, -1)), TY(TY_B1, 1, 2, 2, 2),
           VALS(-1, -1, -1, 1, -1, -1, -1, -1));
}

static void test_avgpool(void) {
    Value *x;
    Node *n;
    /* x = [[1,2],[3,4]], kernel 2, stride 2, pads 1: four windows each holding one pixel and
     * three padded positions. count_include_pad=0: 1,2,3,4; =1: divide by 4. */
    for (int inc = 0; inc <= 1; inc++) {
        Graph *g = unary_graph(OP_AVGPOOL, TY(TY_F32, 1, 1, 2, 2), &x, &n);
        set_attr_ints(n, "kernel", 2, (int64_t[]){2, 2});
        set_attr_ints(n, "strides", 2, (int64_t[]){2, 2});
        set_attr_ints(n, "pads", 4, (int64_t[]){1, 1, 1, 1});
        set_attr_int(n, "count_include_pad", inc);
        Tensor in = tensor(x->type, VALS(1, 2, 3, 4));
        if (inc)
            EXPECT(g, n, in, TY(TY_F32, 1, 1, 2, 2), VALS(0.25, 0.5, 0.75, 1));
        else
            EXPECT(g, n, in, TY(TY_F32, 1, 1, 2, 2), VALS(1, 2, 3, 4));
    }
    /* ceil_mode=1 with count_include_pad=1, no pads: positions past the input (and its zero
     * padding) never count. x = 1..9, kernel 2, stride 2: (1+2+4+5)/4 = 3, (3+6)/2 = 4.5,
     * (7+8)/2 = 7.5, 9/1 = 9. */
    Graph *g = unary_graph(OP_AVGPOOL, TY(TY_F32, 1, 1, 3, 3), &x, &n);
    set_attr_ints(n, "kernel", 2, (int64_t[]){2, 2});
    set_attr_ints(n, "strides", 2, (int64_t[]){2, 2});
    set_attr_int(n, "ceil_mode", 1);
    set_attr_int(n, "count_include_pad", 1);
    EXPECT(g, n, tensor(x->type, VALS(1, 2, 3, 4, 5, 6, 7, 8, 9)), TY(TY_F32, 1, 1, 2, 2),
           VALS(3, 4.5, 7.5, 9));

    /* globalavgpool: channel 0 = 1..4 -> 2.5, channel 1 = all 1 -> 1. */
    g = unary_graph(OP_GLOBALAVGPOOL, TY(TY_F32, 1, 2, 2, 2), &x, &n);
    EXPECT(g, n, tensor(x->type, VALS(1, 2, 3, 4, 1, 1, 1, 1)), TY(TY_F32, 1, 2, 1, 1),
           VALS(2.5, 1));
}

/* ---------------------------------------------------------------- elementwise */

static void test_elementwise(void) {
    static const struct {
        Op op;
        double want[6];
    } cases[] = {
        /* a = [10, 20] as [2,1], b = [1, 2, 4] as [3] -> [2,3] */
        {OP_ADD, {11, 12, 14, 21, 22, 24}},
        {OP_SUB, {9, 8, 6, 19, 18, 16}},
        {OP_MUL, {10, 20, 40, 20, 40, 80}},
        {OP_DIV, {10, 5, 2.5, 20, 10, 5}},
        {OP_POW, {10, 100, 10000, 20, 400, 160000}},
    };
    for (int i = 0; i < COUNT_OF(cases); i++) {
        Graph *g = new_graph("t");
        Value *a = add_input(g, "a", TY(TY_F32, 2, 1));
        Value *b = konst(g, "b", TY(TY_F32, 3), VALS(1, 2, 4));
        Node *n = node(g, cases[i].op, "y", 2, (Value *[]){a, b});
        EXPECT(g, n, tensor(a->type, VALS(10, 20)), TY(TY_F32, 2, 3), cases[i].want);
    }
    /* i32 add wraps: INT32_MAX + 1 = INT32_MIN; sub: 3 - 5 = -2. */
    Graph *g = new_graph("t");
    Value *a = add_input(g, "a", TY(TY_I32, 2));
    Value *b = konst(g, "b", TY(TY_I32, 2), VALS(1, -5));
    Node *n = node(g, OP_ADD, "y", 2, (Value *[]){a, b});
    EXPECT(g, n, tensor(a->type, VALS(2147483647.0, 3)), TY(TY_I32, 2),
           VALS(-2147483648.0, -2));
    g = new_graph("t");
    a = add_input(g, "a", TY(TY_I32, 2));
    b = konst(g, "b", make_type(TY_I32, 0, NULL), VALS(5));
    n = node(g, OP_SUB, "y", 2, (Value *[]){a, b});
    EXPECT(g, n, tensor(a->type, VALS(3, 5)), TY(TY_I32, 2), VALS(-2, 0));
    /* i32 mul: 65536 * 65536 wraps to 0; -3 * 5 = -15. */
    g = new_graph("t");
    a = add_input(g, "a", TY(TY_I32, 2));
    b = konst(g, "b", TY(TY_I32, 2), VALS(65536, 5));
    n = node(g, OP_MUL, "y", 2, (Value *[]){a, b});
    EXPECT(g, n, tensor(a->type, VALS(65536, -3)), TY(TY_I32, 2), VALS(0, -15));

    Value *x;
    g = unary_graph(OP_RELU, TY(TY_F32, 3), &x, &n);
    EXPECT(g, n, tensor(x->type, VALS(-1, 0, 2)), TY(TY_F32, 3), VALS(0, 0, 2));
    g = unary_graph(OP_CLIP, TY(TY_F32, 3), &x, &n);
    set_attr_float(n, "min", -1);
    set_attr_float(n, "max", 1);
    EXPECT(g, n, tensor(x->type, VALS(-2, 0.5, 3)), TY(TY_F32, 3), VALS(-1, 0.5, 1));
    g = unary_graph(OP_CLIP, TY(TY_F32, 3), &x, &n); /* only max: no lower bound */
    set_attr_float(n, "max", 1);
    EXPECT(g, n, tensor(x->type, VALS(-2, 0.5, 3)), TY(TY_F32, 3), VALS(-2, 0.5, 1));
}

/* ---------------------------------------------------------------- data movement */

static void test_data_movement(void) {
    Value *x;
    Node *n;
    /* transpose [2,3] -> [3,2]: [[1,2,3],[4,5,6]] -> [[1,4],[2,5],[3,6]]; default perm reverses. */
    Graph *g = unary_graph(OP_TRANSPOSE, TY(TY_F32, 2, 3), &x, &n);
    EXPECT(g, n, tensor(x->type, VALS(1, 2, 3, 4, 5, 6)), TY(TY_F32, 3, 2),
           VALS(1, 4, 2, 5, 3, 6));
    /* b1 transpose with perm [1,0]: [[+,-,-],[+,+,-]] -> [[+,+],[-,+],[-,-]]. */
    g = unary_graph(OP_TRANSPOSE, TY(TY_B1, 2, 3), &x, &n);
    set_attr_ints(n, "perm", 2, (int64_t[]){1, 0});
    EXPECT(g, n, tensor(x->type, VALS(1, -1, -1, 1, 1, -1)), TY(TY_B1, 3, 2),
           VALS(1, 1, -1, 1, -1, -1));
    /* 3-d transpose perm [2,0,1]: y[k,i,j] = x[i,j,k]; x [1,2,2] = [[a,b],[c,d]] =
     * 1,2,3,4 -> y [2,1,2]: y[0,0,:] = x[0,:,0] = 1,3; y[1,0,:] = 2,4. */
    g = unary_graph(OP_TRANSPOSE, TY(TY_F32, 1, 2, 2), &x, &n);
    set_attr_ints(n, "perm", 3, (int64_t[]){2, 0, 1});
    EXPECT(g, n, tensor(x->type, VALS(1, 2, 3, 4)), TY(TY_F32, 2, 1, 2), VALS(1, 3, 2, 4));

    /* concat on axis 1: [[1],[2]] ++ [[3,4],[5,6]] -> [[1,3,4],[2,5,6]]. */
    g = new_graph("t");
    x = add_input(g, "x", TY(TY_F32, 2, 1));
    Value *c = konst(g, "c", TY(TY_F32, 2, 2), VALS(3, 4, 5, 6));
    n = node(g, OP_CONCAT, "y", 2, (Value *[]){x, c});
    set_attr_int(n, "axis", -1);
    EXPECT(g, n, tensor(x->type, VALS(1, 2)), TY(TY_F32, 2, 3), VALS(1, 3, 4, 2, 5, 6));
    /* b1 concat on axis 0: [+,-] ++ [-,-,+] */
    g = new_graph("t");
    x = add_input(g, "x", TY(TY_B1, 2));
    c = konst(g, "c", TY(TY_B1, 3), VALS(-1, -1, 1));
    n = node(g, OP_CONCAT, "y", 2, (Value *[]){x, c});
    set_attr_int(n, "axis", 0);
    EXPECT(g, n, tensor(x->type, VALS(1, -1)), TY(TY_B1, 5), VALS(1, -1, -1, -1, 1));

    /* pad f32 [2] by 1 before, 2 after with 9: [9, 1, 2, 9, 9]. */
    g = unary_graph(OP_PAD, TY(TY_F32, 2), &x, &n);
    set_attr_ints(n, "pads", 2, (int64_t[]){1, 2});
    set_attr_float(n, "value", 9);
    EXPECT(g, n, tensor(x->type, VALS(1, 2)), TY(TY_F32, 5), VALS(9, 1, 2, 9, 9));
    /* pad b1 [1,2] on axis 1 with -1 and with +1 (integer-valued attribute). */
    g = unary_graph(OP_PAD, TY(TY_B1, 1, 2), &x, &n);
    set_attr_ints(n, "pads", 4, (int64_t[]){0, 1, 0, 0});
    set_attr_float(n, "value", -1);
    EXPECT(g, n, tensor(x->type, VALS(1, 1)), TY(TY_B1, 1, 3), VALS(-1, 1, 1));
    g = unary_graph(OP_PAD, TY(TY_B1, 1, 2), &x, &n);
    set_attr_ints(n, "pads", 4, (int64_t[]){0, 0, 0, 1});
    set_attr_int(n, "value", 1);
    EXPECT(g, n, tensor(x->type, VALS(-1, -1)), TY(TY_B1, 1, 3), VALS(-1, -1, 1));
}

/* ---------------------------------------------------------------- heads */

static void test_heads(void) {
    Value *x;
    Node *n;
    /* softmax over the last axis: [0, ln 3] -> [1/4, 3/4]; [5, 5] -> [1/2, 1/2]. */
    Graph *g = unary_graph(OP_SOFTMAX, TY(TY_F32, 2, 2), &x, &n);
    EXPECT_NEAR(g, n, tensor(x->type, VALS(0, log(3.0), 5, 5)), TY(TY_F32, 2, 2),
                VALS(0.25, 0.75, 0.5, 0.5), 1e-6);
    /* softmax over axis 0 of [[0, 0],[ln 3, 0]]: column 0 -> 1/4, 3/4; column 1 -> 1/2, 1/2. */
    g = unary_graph(OP_SOFTMAX, TY(TY_F32, 2, 2), &x, &n);
    set_attr_int(n, "axis", 0);
    EXPECT_NEAR(g, n, tensor(x->type, VALS(0, 0, log(3.0), 0)), TY(TY_F32, 2, 2),
                VALS(0.25, 0.5, 0.75, 0.5), 1e-6);

    /* argmax: [1, 3, 3, 2] -> 1 (the first maximum); keepdims=0 drops the axis. */
    g = unary_graph(OP_ARGMAX, TY(TY_F32, 1, 4), &x, &n);
    EXPECT(g, n, tensor(x->type, VALS(1, 3, 3, 2)), TY(TY_I64, 1, 1), VALS(1));
    g = unary_graph(OP_ARGMAX, TY(TY_F32, 2, 2), &x, &n);
    set_attr_int(n, "axis", 0);
    set_attr_int(n, "keepdims", 0);
    /* columns [4,7] -> 1 and [9,9] -> 0 */
    EXPECT(g, n, tensor(x->type, VALS(4, 9, 7, 9)), TY(TY_I64, 2), VALS(1, 0));

    /* topk k=3 of [1, 3, 2, 3, 0]: values 3, 3, 2 with indices 1, 3, 2 (ties: lower index). */
    for (int largest = 1; largest >= 0; largest--) {
        g = unary_graph(OP_TOPK, TY(TY_F32, 1, 5), &x, &n);
        set_attr_int(n, "k", largest ? 3 : 2);
        set_attr_int(n, "largest", largest);
        CHECK(settle(n) == 0);
        add_output(g, n->out[0]);
        add_output(g, n->out[1]);
        Tensor in = tensor(x->type, VALS(1, 3, 2, 3, 0));
        Tensor *out = run(g, &in);
        if (largest) {
            CHECK_TENSOR(out ? &out[0] : NULL, TY(TY_F32, 1, 3), VALS(3, 3, 2));
            CHECK_TENSOR(out ? &out[1] : NULL, TY(TY_I64, 1, 3), VALS(1, 3, 2));
        } else {
            /* smallest 2: 0 at index 4, 1 at index 0 */
            CHECK_TENSOR(out ? &out[0] : NULL, TY(TY_F32, 1, 2), VALS(0, 1));
            CHECK_TENSOR(out ? &out[1] : NULL, TY(TY_I64, 1, 2), VALS(4, 0));
        }
        free_all(g, &in, 1, out);
    }
    /* NaN ranks above every number: top 2 of [1, NaN, 5] = NaN (index 1), 5 (index 2). */
    g = unary_graph(OP_TOPK, TY(TY_F32, 3), &x, &n);
    set_attr_int(n, "k", 2);
    CHECK(settle(n) == 0);
    add_output(g, n->out[0]);
    add_output(g, n->out[1]);
    Tensor nin = tensor(x->type, VALS(1, NAN, 5));
    Tensor *nout = run(g, &nin);
    CHECK_TENSOR(nout ? &nout[0] : NULL, TY(TY_F32, 2), VALS(NAN, 5));
    CHECK_TENSOR(nout ? &nout[1] : NULL, TY(TY_I64, 2), VALS(1, 2));
    free_all(g, &nin, 1, nout);

    /* topk along axis 0 with equal values: [[2,1],[2,5]] k=1: column 0 tie -> index 0. */
    g = unary_graph(OP_TOPK, TY(TY_F32, 2, 2), &x, &n);
    set_attr_int(n, "k", 1);
    set_attr_int(n, "axis", 0);
    CHECK(settle(n) == 0);
    add_output(g, n->out[1]);
    Tensor in = tensor(x->type, VALS(2, 1, 2, 5));
    Tensor *out = run(g, &in);
    CHECK_TENSOR(out ? &out[0] : NULL, TY(TY_I64, 1, 2), VALS(0, 1));
    free_all(g, &in, 1, out);
}

/* ---------------------------------------------------------------- whole graphs, batch */

static void test_batch(void) {
    /* x: f32[N,2,1,1] -> binarize -> reshape [N,2] -> dense b1 [1,2] -> threshold -> out,
     * plus the i32 dot product as a second output. Batch 3:
     *   x = (0.5,-1), (0,0), (-2,-3) -> bits (+,-), (+,+), (-,-)
     *   w = (+,-): dots 2, 0, 0; threshold t=1 -> +, -, - */
    Graph *g = new_graph("t");
    Value *x = add_input(g, "x", TY(TY_F32, N_, 2, 1, 1));
    Node *b = node(g, OP_BINARIZE, "b", 1, &x);
    CHECK(settle(b) == 0);
    Node *r = add_node(g, OP_RESHAPE, 1, &b->out[0], (const char *[]){"r"},
                       (Type[]){TY(TY_B1, N_, 2)});
    Value *w = konst(g, "w", TY(TY_B1, 1, 2), VALS(1, -1));
    Node *d = node(g, OP_DENSE, "d", 2, (Value *[]){r->out[0], w});
    CHECK(settle(d) == 0);
    Value *t = konst(g, "t", TY(TY_I32, 1), VALS(1));
    Node *th = node(g, OP_THRESHOLD, "y", 2, (Value *[]){d->out[0], t});
    CHECK(settle(th) == 0);
    add_output(g, th->out[0]);
    add_output(g, d->out[0]);
    CHECK(verify_graph(g) == 0);
    Tensor in = tensor(TY(TY_F32, 3, 2, 1, 1), VALS(0.5, -1, 0, 0, -2, -3));
    Tensor *out = run(g, &in);
    CHECK_TENSOR(out ? &out[0] : NULL, TY(TY_B1, 3, 1), VALS(1, -1, -1));
    CHECK_TENSOR(out ? &out[1] : NULL, TY(TY_I32, 3, 1), VALS(2, 0, 0));
    if (out)
        for (int i = 0; i < g->noutputs; i++)
            free_tensor(&out[i]);
    free(out);

    /* Input shape mismatch. */
    Tensor bad = tensor(TY(TY_F32, 2, 2, 1, 2), VALS(0, 0, 0, 0, 0, 0, 0, 0));
    Tensor outs[2];
    CHECK(interp_run(g, &bad, outs) != 0);
    CHECK_STR_CONTAINS(diag_message(), "input %x: expected f32[N,2,1,1], got f32[2,2,1,2]");
    free_tensor(&bad);
    /* Wrong dtype. */
    bad = tensor(TY(TY_I32, 1, 2, 1, 1), VALS(0, 0));
    CHECK(interp_run(g, &bad, outs) != 0);
    CHECK_STR_CONTAINS(diag_message(), "expected f32[N,2,1,1], got i32[1,2,1,1]");
    free_tensor(&bad);
    free_tensor(&in);

    /* Data of the wrong size. */
    bad = tensor(TY(TY_F32, 1, 2, 1, 1), VALS(0, 0));
    bad.nbytes = 4;
    CHECK(interp_run(g, &bad, outs) != 0);
    CHECK_STR_CONTAINS(diag_message(), "input %x: f32[1,2,1,1] needs 8 bytes of data, got 4");
    free_tensor(&bad);
    free_graph(g);

    /* Two batched inputs must agree. */
    g = new_graph("t");
    Value *a = add_input(g, "a", TY(TY_F32, N_, 1));
    Value *c = add_input(g, "c", TY(TY_F32, N_, 1));
    Node *s = node(g, OP_ADD, "y", 2, (Value *[]){a, c});
    CHECK(settle(s) == 0);
    add_output(g, s->out[0]);
    Tensor two[2] = {tensor(TY(TY_F32, 2, 1), VALS(1, 2)), tensor(TY(TY_F32, 3, 1), VALS(1, 2, 3))};
    CHECK(interp_run(g, two, outs) != 0);
    CHECK_STR_CONTAINS(diag_message(), "input %c: batch 3 disagrees with batch 2 of input %a");
    free_tensor(&two[1]);
    two[1] = tensor(TY(TY_F32, 2, 1), VALS(10, 20));
    out = run(g, two);
    CHECK_TENSOR(out ? &out[0] : NULL, TY(TY_F32, 2, 1), VALS(11, 22));
    free_all(g, two, 2, out);
}

/* A longer chain whose intermediates are freed as they die (ASan reports leaks and
 * use-after-free), with a value read twice and a result nothing reads. */
static void test_chain(void) {
    Graph *g = new_graph("t");
    Value *x = add_input(g, "x", TY(TY_F32, N_, 4));
    Node *r = node(g, OP_RELU, "r", 1, &x);
    CHECK(settle(r) == 0);
    Node *sq = node(g, OP_MUL, "sq", 2, (Value *[]){r->out[0], r->out[0]});
    CHECK(settle(sq) == 0);
    Node *unused = node(g, OP_SIGN, "unused", 1, &sq->out[0]);
    CHECK(settle(unused) == 0);
    Node *k = node(g, OP_TOPK, "k", 1, &sq->out[0]);
    set_attr_int(k, "k", 2);
    CHECK(settle(k) == 0);
    Node *dead = node(g, OP_RELU, "dead", 1, &x);
    CHECK(settle(dead) == 0);
    remove_node(g, dead);
    add_output(g, k->out[0]);
    add_output(g, x); /* an input may be an output too */
    /* relu(x)^2 of [-1, 2, 3, 0.5] = [0, 4, 9, 0.25]; top 2 = 9, 4. */
    Tensor in = tensor(TY(TY_F32, 1, 4), VALS(-1, 2, 3, 0.5));
    Tensor *out = run(g, &in);
    CHECK_TENSOR(out ? &out[0] : NULL, TY(TY_F32, 1, 2), VALS(9, 4));
    CHECK_TENSOR(out ? &out[1] : NULL, TY(TY_F32, 1, 4), VALS(-1, 2, 3, 0.5));
    free_all(g, &in, 1, out);
}

int main(void) {
    test_conv2d_f32();
    test_conv2d_b1();
    test_conv2d_cross();
    test_conv2d_rows_vs_naive();
    test_dense();
    test_matmul();
    test_batchnorm();
    test_sign_binarize();
    test_threshold();
    test_quant();
    test_trunc();
    test_cast();
    test_maxpool();
    test_avgpool();
    test_elementwise();
    test_data_movement();
    test_heads();
    test_batch();
    test_chain();
    return check_report("test_interp");
}
