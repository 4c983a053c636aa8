/* test_fuse_epilogue: the fuse-epilogue pass on random Bi-Real-style blocks (bconv2d_chain; the
 * same with dense layers, bdense_chain) and float stems (conv2d_chain):
 * binarize -> binary conv2d -> cast -> a random float chain (batch-norms with negative and zero
 * gammas, mul/div/add/sub by per-channel constants on either side, relu) -> [shortcut add, either
 * operand order, the shortcut sometimes read twice] -> [binarize, zero +-1] -> [a second conv].
 * The -O0, -O1 and -O3 graphs must give bit-identical outputs (floats compared as bits) on the
 * reference interpreter, and where the block has a shortcut and fits one op's stages, -O1 and
 * -O3 leave it as one bconv2d_chain with no batchnorm, add, relu or binarize beside it. The same
 * for low-bit blocks (qconv2d_chain): quantize -> qconv2d -> cast -> chain -> [shortcut add] ->
 * [relu] -> [quantize and/or quant]. */
#include "harness.h"

static const int levels[] = {0, 1, 3};
static const int64_t channel_choices[] = {3, 65, 130};

/* A per-channel f32 constant for x: [C,1,1] or [1,C,1,1] ([C] for a rank-2 x), or one scalar
 * [1] for every channel; some entries negative, some zero when allowed (not for divisors). */
static Value *channel_const(Graph *g, Rng *r, const Type *x, const char *name, bool allow_zero) {
    int64_t c = x->dim[1];
    int shape = rng_int(r, 0, 4);
    int64_t n = shape == 0 ? 1 : c;
    float *v = xmalloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) {
        v[i] = rng_int(r, 0, 3) == 0 ? (float)rng_int(r, -3, 3) : rng_float(r, -2.0f, 2.0f);
        if (v[i] == 0.0f && !allow_zero)
            v[i] = 0.5f;
    }
    Value *k = hconst_per_channel(g, name, x, shape == 0 ? 0 : x->rank == 2 ? 1 : shape <= 2 ? 2 : 3, v);
    free(v);
    return k;
}

/* One float op of the chain after the cast; *stages grows by its worst-case stage count. */
static Value *random_chain_op(Graph *g, Rng *r, Value *v, int i, int *stages) {
    char name[32], kname[32];
    snprintf(name, sizeof name, "op%d", i);
    snprintf(kname, sizeof kname, "k%d", i);
    int kind = rng_int(r, 0, 7);
    if (kind == 0) {
        *stages += 3;
        return random_bn_node(g, r, v, name);
    }
    *stages += 1;
    if (kind == 1)
        return h1(g, OP_RELU, v, name);
    static const Op ops[] = {OP_MUL, OP_DIV, OP_ADD, OP_SUB, OP_MUL, OP_SUB};
    Op op = ops[kind - 2];
    Value *k = channel_const(g, r, &v->type, kname, op != OP_DIV);
    bool const_first = op != OP_DIV && rng_int(r, 0, 1); /* k*v, k+v, k-v */
    return const_first ? h2(g, op, k, v, name) : h2(g, op, v, k, name);
}

/* What the last build made, for the structural checks. */
static bool built_fusable;

/* Whether build_block makes a dense block (bdense_chain) instead of a conv block. */
static bool block_dense;

static Graph *build_block(uint64_t seed) {
    Rng r = rng_seed(seed);
    Graph *g = new_graph("block");
    int64_t c = channel_choices[rng_int(&r, 0, 2)], h = rng_int(&r, 3, 7), w = rng_int(&r, 3, 7);
    int64_t xd[4] = {DIM_BATCH, c, h, w};
    Value *x = add_input(g, "x", make_type(TY_F32, block_dense ? 2 : 4, xd));
    Value *bits = hbinarize(g, x, rng_int(&r, 0, 1) ? 1 : -1, "xb");
    int64_t o = channel_choices[rng_int(&r, 0, 2)];
    int64_t kh = rng_int(&r, 1, 3), kw = rng_int(&r, 1, 3);
    int64_t wd[4] = {o, c, kh, kw};
    Value *in[2] = {bits, hconst_b1_random(g, "w", block_dense ? 2 : 4, wd, &r)};
    Node *conv = hnode(g, block_dense ? OP_DENSE : OP_CONV2D, 2, in, "conv");
    int64_t st[2] = {rng_int(&r, 1, 2), rng_int(&r, 1, 2)};
    int64_t pads[4] = {rng_int(&r, 0, 1), rng_int(&r, 0, 1), rng_int(&r, 0, 1), rng_int(&r, 0, 1)};
    pads[2] = pads[0], pads[3] = pads[1];
    if (kh == 1)
        pads[0] = pads[2] = 0;
    if (kw == 1)
        pads[1] = pads[3] = 0;
    if (!block_dense) {
        set_attr_ints(conv, "strides", 2, st);
        set_attr_ints(conv, "pads", 4, pads);
        if (pads[0] + pads[1] && rng_int(&r, 0, 2) == 0)
            set_attr_int(conv, "pad_value", 1);
    }
    Value *acc = hfinish(conv);
    int res = rng_int(&r, 0, 3); /* 0: none; 1, 2: a graph input; 3: a value computed before */
    Value *shortcut = NULL;
    if (res) {
        Type st4 = acc->type;
        st4.dtype = TY_F32;
        shortcut = add_input(g, "shortcut", st4);
        if (res == 3) /* computed before the conv, as a block's input is */
            shortcut = h1(g, OP_RELU, shortcut, "shortcut_relu");
    }
    if (res == 3) { /* the relu was appended after the conv: put it first */
        int at = g->nnodes - 1;
        while (g->nodes[at - 1] != conv)
            at--;
        Node *relu = g->nodes[g->nnodes - 1];
        memmove(&g->nodes[at], &g->nodes[at - 1], (size_t)(g->nnodes - at) * sizeof *g->nodes);
        g->nodes[at - 1] = relu;
    }
    Value *v = hcast_f32(g, acc, "acc_f");
    /* Mostly short chains (they fit one op); sometimes one longer than its stages. */
    int nops = rng_int(&r, 0, 9) == 0 ? rng_int(&r, 4, 6) : rng_int(&r, 0, 3), stages = 0;
    for (int i = 0; i < nops; i++)
        v = random_chain_op(g, &r, v, i, &stages);
    if (res) {
        Value *s = shortcut;
        if (rng_int(&r, 0, 3) == 0) /* the shortcut has another reader */
            add_output(g, s);
        v = rng_int(&r, 0, 1) ? h2(g, OP_ADD, v, s, "sum") : h2(g, OP_ADD, s, v, "sum");
    }
    int bin = rng_int(&r, 0, 2); /* 0: none, 1: zero=1, 2: zero=-1 */
    bool y_out = !bin || rng_int(&r, 0, 2) == 0;
    if (y_out)
        add_output(g, v);
    if (bin) {
        Value *b = hbinarize(g, v, bin == 1 ? 1 : -1, "yb");
        if (rng_int(&r, 0, 1)) { /* the bits feed the next binary layer */
            int64_t w2d[4] = {5, o, 1, 1};
            Value *in2[2] = {b, hconst_b1_random(g, "w2", block_dense ? 2 : 4, w2d, &r)};
            Value *acc2 = hfinish(hnode(g, block_dense ? OP_DENSE : OP_CONV2D, 2, in2, "conv2"));
            add_output(g, hcast_f32(g, acc2, "out2"));
        } else {
            add_output(g, b);
        }
    }
    built_fusable = res && stages + 1 <= CHAIN_MAX_STAGES;
    return g;
}

/* A float stem: conv2d f32 (with or without a bias) -> a random chain -> [maxpool -> a random
 * chain] -> [binarize] -> [a binary conv]. */
static Graph *build_stem(uint64_t seed) {
    Rng r = rng_seed(seed);
    Graph *g = new_graph("stem");
    static const int64_t in_choices[] = {1, 3, 5};
    int64_t c = in_choices[rng_int(&r, 0, 2)], h = rng_int(&r, 4, 9), w = rng_int(&r, 4, 9);
    int64_t xd[4] = {DIM_BATCH, c, h, w};
    Value *x = add_input(g, "x", make_type(TY_F32, 4, xd));
    int64_t o = channel_choices[rng_int(&r, 0, 2)], k = rng_int(&r, 1, 3);
    int64_t wd[4] = {o, c, k, k}, n = o * c * k * k;
    float *wv = xmalloc((size_t)n * 4), *bv = xmalloc((size_t)o * 4);
    for (int64_t i = 0; i < n; i++)
        wv[i] = rng_int(&r, 0, 7) == 0 ? 0.0f : rng_float(&r, -1.0f, 1.0f);
    for (int64_t i = 0; i < o; i++)
        bv[i] = rng_float(&r, -0.5f, 0.5f);
    Value *in[3] = {x, hconst_f32(g, "w", 4, wd, wv), hconst_f32(g, "b", 1, &o, bv)};
    free(wv);
    free(bv);
    Node *conv = hnode(g, OP_CONV2D, rng_int(&r, 0, 1) ? 3 : 2, in, "conv");
    int64_t st[2] = {rng_int(&r, 1, 2), rng_int(&r, 1, 2)}, p = k > 1 ? rng_int(&r, 0, 1) : 0;
    int64_t pads[4] = {p, p, p, p};
    set_attr_ints(conv, "strides", 2, st);
    set_attr_ints(conv, "pads", 4, pads);
    Value *v = hfinish(conv);
    int nops = rng_int(&r, 0, 3), stages = 0;
    for (int i = 0; i < nops; i++)
        v = random_chain_op(g, &r, v, i, &stages);
    bool pool = v->type.dim[2] >= 3 && v->type.dim[3] >= 3 && rng_int(&r, 0, 2) > 0;
    if (pool) {
        Value *pin[1] = {v};
        Node *mp = hnode(g, OP_MAXPOOL, 1, pin, "pool");
        int64_t pk = rng_int(&r, 2, 3), ps = rng_int(&r, 1, 2), pp = rng_int(&r, 0, 1);
        int64_t kk[2] = {pk, pk}, ss[2] = {ps, ps}, pd[4] = {pp, pp, pp, pp};
        set_attr_ints(mp, "kernel", 2, kk);
        set_attr_ints(mp, "strides", 2, ss);
        set_attr_ints(mp, "pads", 4, pd);
        if (rng_int(&r, 0, 1))
            set_attr_int(mp, "ceil_mode", 1);
        v = hfinish(mp);
        /* ops after the pool (XNOR-Net's batch-norm before the sign): stages after it */
        int post = rng_int(&r, 0, 2);
        stages += post && !nops; /* the identity stage before the pool */
        for (int i = 0; i < post; i++)
            v = random_chain_op(g, &r, v, nops + i, &stages);
    }
    int bin = rng_int(&r, 0, 2);
    if (!bin || rng_int(&r, 0, 2) == 0)
        add_output(g, v);
    if (bin) {
        Value *b = hbinarize(g, v, bin == 1 ? 1 : -1, "bits");
        if (rng_int(&r, 0, 1)) {
            int64_t w2d[4] = {5, o, 1, 1};
            Value *in2[2] = {b, hconst_b1_random(g, "w2", 4, w2d, &r)};
            add_output(g, hcast_f32(g, hfinish(hnode(g, OP_CONV2D, 2, in2, "conv2")), "out2"));
        } else {
            add_output(g, b);
        }
    }
    built_fusable = (nops || pool || bin) && stages <= CHAIN_MAX_STAGES;
    return g;
}

/* Outputs equal bit for bit, floats included (NaN compares by its bits too). */
static bool same_bits(const Graph *ref, const Graph *opt, uint64_t seed, char *why, size_t len) {
    Tensor in[8], a[8], b[8];
    Rng r = rng_seed(seed ^ 0x5eed);
    fill_inputs(ref, rng_int(&r, 1, 3), &r, in);
    bool ok = interp_run(ref, in, a) == 0;
    if (!ok) {
        snprintf(why, len, "reference run failed: %s", diag_message());
    } else if (interp_run(opt, in, b) != 0) {
        snprintf(why, len, "optimized run failed: %s", diag_message());
        ok = false;
        free_tensors(a, ref->noutputs);
    } else {
        for (int i = 0; i < ref->noutputs && ok; i++)
            if (a[i].nbytes != b[i].nbytes || memcmp(a[i].data, b[i].data, a[i].nbytes)) {
                snprintf(why, len, "output %d (%s) differs", i, dtype_name(a[i].type.dtype));
                ok = false;
            }
        free_tensors(a, ref->noutputs);
        free_tensors(b, ref->noutputs);
    }
    free_tensors(in, ref->ninputs);
    return ok;
}

/* The float ops a fused graph may still hold. */
static int float_ops_left(const Graph *g) {
    static const Op ops[] = {OP_BATCHNORM, OP_ADD, OP_RELU, OP_MUL, OP_DIV, OP_SUB, OP_BINARIZE, OP_MAXPOOL};
    int left = 0;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        left += count_ops(g, ops[i]);
    return left;
}

/* The stems at -O1+: one conv2d_chain, no float op left. */
static void check_stem_fused(const Graph *opt, uint64_t seed, int level) {
    CHECK_MSG(count_ops(opt, OP_CONV2D_CHAIN) == 1 && float_ops_left(opt) == 0,
              "stem seed %llu -O%d: %d conv2d_chain, %d float ops left (want 1, 0)",
              (unsigned long long)seed, level, count_ops(opt, OP_CONV2D_CHAIN), float_ops_left(opt));
}

/* The blocks at -O1+: one bconv2d_chain for the block (and one for the second conv's cast),
 * nothing left but the input's binarize and a computed shortcut's relu. */
static void check_block_fused(const Graph *opt, uint64_t seed, int level) {
    int allowed = 1 + (graph_find_value((Graph *)opt, "shortcut_relu") != NULL);
    int want = 1 + (graph_find_value((Graph *)opt, "out2") != NULL);
    Op op = block_dense ? OP_BDENSE_CHAIN : OP_BCONV2D_CHAIN;
    CHECK_MSG(count_ops(opt, op) == want && float_ops_left(opt) == allowed,
              "block seed %llu -O%d: %d %s, %d float ops left (want %d, %d)", (unsigned long long)seed,
              level, count_ops(opt, op), op_info(op)->name, float_ops_left(opt), want, allowed);
}

/* ---------------------------------------------------------------- low-bit blocks */

/* What the last build_qblock made: the quantizer (0 none, 1 quantize, 2 quant, 3 both). */
static int built_quant;

/* A quantize (codes) or quant of v: scale, zero point, bits, signed, rounding as given. */
static Value *hquant(Graph *g, Op op, Value *v, const float k[3], int sgn, const char *mode,
                     const char *name) {
    char kn[48];
    Value *in[4] = {v, NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) {
        snprintf(kn, sizeof kn, "%s_k%d", name, i);
        in[i + 1] = hconst_scalar(g, kn, k[i]);
    }
    Node *n = hnode(g, op, 4, in, name);
    set_attr_int(n, "signed", sgn);
    set_attr_str(n, "rounding", mode);
    return hfinish(n);
}

/* A w1a2-style block: quantize x (2 or 3 bits) -> qconv2d (+-1 or small signed weights) ->
 * cast -> a random float chain -> [shortcut add, either order] -> [relu] -> [quantize and/or
 * quant of random parameters, the codes sometimes read by a second qconv2d]. */
static Graph *build_qblock(uint64_t seed) {
    Rng r = rng_seed(seed);
    Graph *g = new_graph("qblock");
    int64_t c = channel_choices[rng_int(&r, 0, 2)], h = rng_int(&r, 3, 7), w = rng_int(&r, 3, 7);
    int64_t xd[4] = {DIM_BATCH, c, h, w};
    Value *x = add_input(g, "x", make_type(TY_F32, 4, xd));
    int xbits = rng_int(&r, 2, 3);
    float kx[3] = {0.25f, 0.0f, (float)xbits};
    Value *codes = hquant(g, OP_QUANTIZE, x, kx, 0, "ROUND", "xq");
    int64_t o = channel_choices[rng_int(&r, 0, 2)], kh = rng_int(&r, 1, 3), kw = rng_int(&r, 1, 3);
    int64_t wd[4] = {o, c, kh, kw}, nw = o * c * kh * kw;
    bool bipolar = rng_int(&r, 0, 1);
    int8_t *wv = xmalloc((size_t)nw);
    for (int64_t i = 0; i < nw; i++)
        wv[i] = (int8_t)(bipolar ? (rng_int(&r, 0, 1) ? 1 : -1) : rng_int(&r, -2, 1));
    Value *in[2] = {codes, add_const(g, "wq", make_type(TY_I8, 4, wd), wv, (size_t)nw)};
    Node *conv = hnode(g, OP_QCONV2D, 2, in, "conv");
    int64_t st[2] = {rng_int(&r, 1, 2), rng_int(&r, 1, 2)};
    int64_t pads[4] = {kh > 1 ? rng_int(&r, 0, 1) : 0, kw > 1 ? rng_int(&r, 0, 1) : 0, 0, 0};
    pads[2] = pads[0], pads[3] = pads[1];
    set_attr_ints(conv, "strides", 2, st);
    set_attr_ints(conv, "pads", 4, pads);
    set_attr_int(conv, "xbits", xbits);
    Value *acc = hfinish(conv);
    int res = rng_int(&r, 0, 2); /* 0: none; 1: a graph input; 2: a value computed before */
    Value *shortcut = NULL;
    if (res) {
        Type st4 = acc->type;
        st4.dtype = TY_F32;
        shortcut = add_input(g, "shortcut", st4);
        if (res == 2) { /* computed before the conv: move the relu before it */
            shortcut = h1(g, OP_RELU, shortcut, "shortcut_relu");
            memmove(&g->nodes[2], &g->nodes[1], (size_t)(g->nnodes - 2) * sizeof *g->nodes);
            g->nodes[1] = shortcut->def;
        }
    }
    Value *v = hcast_f32(g, acc, "acc_f");
    int nops = rng_int(&r, 0, 9) == 0 ? rng_int(&r, 4, 6) : rng_int(&r, 0, 3), stages = 0;
    for (int i = 0; i < nops; i++)
        v = random_chain_op(g, &r, v, i, &stages);
    if (res) {
        v = rng_int(&r, 0, 1) ? h2(g, OP_ADD, v, shortcut, "sum") : h2(g, OP_ADD, shortcut, v, "sum");
        if (rng_int(&r, 0, 2))
            v = h1(g, OP_RELU, v, "sum_relu");
    }
    built_quant = rng_int(&r, 0, 3);
    static const char *const modes[] = {"ROUND", "HALF_UP", "FLOOR", "CEIL"};
    float kq[3] = {rng_int(&r, 0, 1) ? 0.5f : 0.3f, (float)rng_int(&r, 0, 1), (float)rng_int(&r, 2, 3)};
    int sgn = rng_int(&r, 0, 1);
    const char *mode = modes[rng_int(&r, 0, 3)];
    if (!built_quant)
        add_output(g, v);
    if (built_quant & 1) {
        Value *q = hquant(g, OP_QUANTIZE, v, kq, sgn, mode, "yq");
        if (rng_int(&r, 0, 1)) { /* the codes feed the next low-bit layer */
            int64_t w2d[4] = {5, o, 1, 1};
            int8_t *w2 = xmalloc((size_t)(5 * o));
            for (int64_t i = 0; i < 5 * o; i++)
                w2[i] = (int8_t)(rng_int(&r, 0, 1) ? 1 : -1);
            Value *in2[2] = {q, add_const(g, "w2", make_type(TY_I8, 4, w2d), w2, (size_t)(5 * o))};
            Node *c2 = hnode(g, OP_QCONV2D, 2, in2, "conv2");
            set_attr_int(c2, "xbits", (int64_t)kq[2]);
            add_output(g, hcast_f32(g, hfinish(c2), "out2"));
        } else {
            add_output(g, q);
        }
    }
    if (built_quant & 2)
        add_output(g, hquant(g, OP_QUANT, v, kq, sgn, mode, "yf"));
    built_fusable = res && stages + 1 <= CHAIN_MAX_STAGES;
    return g;
}

/* The low-bit blocks at -O1+: one qconv2d_chain for the block (and one for the second conv's
 * cast), nothing float beside it but a computed shortcut's relu, and no quantizer left but
 * the input's. */
static void check_qblock_fused(const Graph *opt, uint64_t seed, int level) {
    int allowed = graph_find_value((Graph *)opt, "shortcut_relu") != NULL;
    int want = 1 + (graph_find_value((Graph *)opt, "out2") != NULL);
    int quants = count_ops(opt, OP_QUANTIZE) + count_ops(opt, OP_QUANT);
    CHECK_MSG(count_ops(opt, OP_QCONV2D_CHAIN) == want && float_ops_left(opt) == allowed && quants == 1 &&
                  count_ops(opt, OP_CAST) == 0,
              "qblock seed %llu -O%d: %d qconv2d_chain, %d float ops, %d quantizers, %d casts left "
              "(want %d, %d, 1, 0)", (unsigned long long)seed, level, count_ops(opt, OP_QCONV2D_CHAIN),
              float_ops_left(opt), quants, count_ops(opt, OP_CAST), want, allowed);
}

/* build(seed) for count seeds at -O0, -O1, -O3 against the graph as built, bit for bit; the
 * fused shape checked where the build says it is fusable. */
static void test_random(const char *what, BuildFn build, void (*check_fused)(const Graph *, uint64_t, int),
                        uint64_t first, int count) {
    int failures = 0, fused = 0;
    for (int s = 0; s < count; s++) {
        uint64_t seed = first + (uint64_t)s;
        Graph *ref = build(seed);
        bool fusable = built_fusable;
        for (size_t li = 0; li < sizeof levels / sizeof levels[0]; li++) {
            Graph *opt = compile_copy(build, seed, levels[li], NULL);
            CHECK_MSG(opt != NULL, "%s seed %llu -O%d failed to compile", what, (unsigned long long)seed,
                      levels[li]);
            if (!opt)
                continue;
            char why[256] = "";
            bool ok = same_bits(ref, opt, seed, why, sizeof why);
            if (!ok && failures++ < 5)
                CHECK_MSG(ok, "%s seed %llu -O%d: %s", what, (unsigned long long)seed, levels[li], why);
            if (levels[li] > 0 && fusable) {
                check_fused(opt, seed, levels[li]);
                fused++;
            }
            free_graph(opt);
        }
        free_graph(ref);
    }
    CHECK_MSG(failures == 0, "random %s: %d mismatches", what, failures);
    CHECK_MSG(fused > count / 4, "random %s: only %d fused graphs checked", what, fused);
}

int main(void) {
    test_random("blocks", build_block, check_block_fused, 1000, 400);
    block_dense = true;
    test_random("dense blocks", build_block, check_block_fused, 3000, 300);
    test_random("stems", build_stem, check_stem_fused, 5000, 300);
    test_random("low-bit blocks", build_qblock, check_qblock_fused, 7000, 300);
    return check_report("test_fuse_epilogue");
}
