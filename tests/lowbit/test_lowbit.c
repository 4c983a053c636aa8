/* test_lowbit: random wMaN layers through the pipeline. Dense nets (quant -> dense over
 * quantized weights -> batchnorm -> [relu] -> quant, twice, then a float output layer; some
 * reading the quant through a flatten) and conv nets (the same with conv2d: strides, zero
 * padding, groups), with 1-8 bit signed/unsigned/narrow quants, every rounding mode, zero points,
 * 1-8 bit and bipolar weights: the -O3 graph (qdense / qconv2d over integer codes with
 * multi-level thresholds) and the -O1 graph give bit-identical outputs to the -O0 float quant
 * path on the reference interpreter; with power-of-two scales every dense layer must become
 * integer. Also: the interpreter's qdense against a plain integer GEMM, and quantize against
 * quant. */
#include "../passes/harness.h"

static const char *const modes[] = {"ROUND", "FLOOR", "CEIL", "HALF_UP", "HALF_DOWN",
                                    "ROUND_TO_ZERO", "UP"};

typedef struct Spec {
    bool pow2; /* scales that keep the float sums exact */
} Spec;

/* q = quant(x) with random bits (1..8), signedness, narrowness, rounding. */
static Value *add_quant(Graph *g, Rng *r, Value *x, float scale, const char *name, int *bits) {
    int b = rng_int(r, 1, 8);
    int is_signed = rng_int(r, 0, 1), narrow = rng_int(r, 0, 1);
    if (b == 1 && is_signed)
        narrow = 0; /* a narrow signed 1-bit quant has a single level */
    if (b == 1 && narrow && !is_signed)
        narrow = 0;
    *bits = b;
    int lo = is_signed ? -(1 << (b - 1)) + narrow : 0;
    int hi = is_signed ? (1 << (b - 1)) - 1 : (1 << b) - 1 - narrow;
    /* Zero points: mostly 0, else a level (padding has a code) or any small integer. */
    int zsel = rng_int(r, 0, 3);
    float zp = zsel < 2 ? 0.0f : zsel == 2 ? (float)rng_int(r, lo, hi) : (float)rng_int(r, -3, 3);
    char nm[64];
    snprintf(nm, sizeof nm, "%s.s", name);
    Value *s = hconst_scalar(g, nm, scale);
    snprintf(nm, sizeof nm, "%s.z", name);
    Value *z = hconst_scalar(g, nm, zp);
    snprintf(nm, sizeof nm, "%s.b", name);
    Value *bw = hconst_scalar(g, nm, (float)b);
    Value *in[4] = {x, s, z, bw};
    Node *n = hnode(g, OP_QUANT, 4, in, name);
    set_attr_int(n, "signed", is_signed);
    set_attr_int(n, "narrow", narrow);
    set_attr_str(n, "rounding", modes[rng_int(r, 0, 6)]);
    return hfinish(n);
}

static float pick_scale(Rng *r, bool pow2) {
    return pow2 ? ldexpf(1.0f, rng_int(r, -4, 2)) : rng_float(r, 0.01f, 0.6f);
}

/* Weights: integer levels of wbits (signed two's complement, or bipolar +-1) times a
 * per-channel scale, stored as the float products a quant folding leaves. */
static Value *add_weights(Graph *g, Rng *r, int64_t O, int64_t K, bool pow2, const char *name) {
    int wb = rng_int(r, 1, 8);
    int64_t d[2] = {O, K};
    float *w = xmalloc((size_t)(O * K) * sizeof *w);
    for (int64_t o = 0; o < O; o++) {
        float s = pick_scale(r, pow2);
        for (int64_t k = 0; k < K; k++) {
            int u = wb == 1 ? (rng_int(r, 0, 1) ? 1 : -1)
                            : rng_int(r, -(1 << (wb - 1)), (1 << (wb - 1)) - 1);
            if (rng_int(r, 0, 5) == 0)
                u = 0;
            w[o * K + k] = (float)u * s;
        }
    }
    Value *v = hconst_f32(g, name, 2, d, w);
    free(w);
    return v;
}

static Graph *build_layers(uint64_t seed, bool pow2) {
    Rng r = rng_seed(seed);
    Graph *g = new_graph("lowbit");
    int64_t K = rng_int(&r, 1, 70), H1 = rng_int(&r, 1, 33), H2 = rng_int(&r, 1, 9);
    /* Half the nets with an even K read the input as [N,2,K/2] and flatten after the quant. */
    bool flat = K % 2 == 0 && rng_int(&r, 0, 1);
    int64_t xd[3] = {DIM_BATCH, flat ? 2 : K, K / 2};
    Value *x = add_input(g, "x", make_type(TY_F32, flat ? 3 : 2, xd));
    int bits;
    Value *xs = h2(g, OP_MUL, x, hconst_scalar(g, "gain", 4.0f), "xg");
    Value *q0 = add_quant(g, &r, xs, pick_scale(&r, pow2), "q0", &bits);
    if (flat) {
        int64_t fd[2] = {DIM_BATCH, K};
        q0 = hreshape(g, q0, 2, fd, "flat");
    }
    int64_t dims[2][2] = {{K, H1}, {H1, H2}};
    Value *h = q0;
    for (int l = 0; l < 2; l++) {
        char nm[64];
        snprintf(nm, sizeof nm, "w%d", l);
        Value *w = add_weights(g, &r, dims[l][1], dims[l][0], pow2, nm);
        snprintf(nm, sizeof nm, "fc%d", l);
        Value *in[3] = {h, w, NULL};
        int nin = 2;
        if (rng_int(&r, 0, 1)) {
            float *b = xmalloc((size_t)dims[l][1] * sizeof *b);
            for (int64_t o = 0; o < dims[l][1]; o++)
                b[o] = pow2 ? (float)rng_int(&r, -8, 8) * 0.25f : rng_float(&r, -2, 2);
            char bn[64];
            snprintf(bn, sizeof bn, "b%d", l);
            in[2] = hconst_f32(g, bn, 1, &dims[l][1], b);
            free(b);
            nin = 3;
        }
        Value *a = hfinish(hnode(g, OP_DENSE, nin, in, nm));
        int64_t C = dims[l][1];
        float *sc = xmalloc((size_t)C * sizeof *sc), *bi = xmalloc((size_t)C * sizeof *bi),
              *mu = xmalloc((size_t)C * sizeof *mu), *va = xmalloc((size_t)C * sizeof *va);
        for (int64_t c = 0; c < C; c++) {
            int sel = rng_int(&r, 0, 9);
            sc[c] = sel == 0 ? 0.0f : sel == 1 ? -rng_float(&r, 0.2f, 2) : rng_float(&r, 0.2f, 2);
            bi[c] = rng_float(&r, -1, 1);
            mu[c] = rng_float(&r, -3, 3);
            va[c] = rng_float(&r, 0.1f, 4);
        }
        snprintf(nm, sizeof nm, "bn%d", l);
        a = hbatchnorm(g, a, sc, bi, mu, va, 1e-5f, nm);
        free(sc);
        free(bi);
        free(mu);
        free(va);
        if (rng_int(&r, 0, 1)) {
            snprintf(nm, sizeof nm, "relu%d", l);
            a = h1(g, OP_RELU, a, nm);
        }
        snprintf(nm, sizeof nm, "q%d", l + 1);
        h = add_quant(g, &r, a, pick_scale(&r, pow2), nm, &bits);
    }
    Value *w = add_weights(g, &r, 3, H2, pow2, "wout");
    Value *in[2] = {h, w};
    add_output(g, hfinish(hnode(g, OP_DENSE, 2, in, "out")));
    return g;
}

/* Per-channel batchnorm (mixed, negative and zero gammas) and an optional relu. */
static Value *add_bn_relu(Graph *g, Rng *r, Value *a, int64_t C, int l) {
    float *sc = xmalloc((size_t)C * sizeof *sc), *bi = xmalloc((size_t)C * sizeof *bi),
          *mu = xmalloc((size_t)C * sizeof *mu), *va = xmalloc((size_t)C * sizeof *va);
    for (int64_t c = 0; c < C; c++) {
        int sel = rng_int(r, 0, 9);
        sc[c] = sel == 0 ? 0.0f : sel == 1 ? -rng_float(r, 0.2f, 2) : rng_float(r, 0.2f, 2);
        bi[c] = rng_float(r, -1, 1);
        mu[c] = rng_float(r, -3, 3);
        va[c] = rng_float(r, 0.1f, 4);
    }
    char nm[64];
    snprintf(nm, sizeof nm, "cbn%d", l);
    a = hbatchnorm(g, a, sc, bi, mu, va, 1e-5f, nm);
    free(sc);
    free(bi);
    free(mu);
    free(va);
    if (rng_int(r, 0, 1)) {
        snprintf(nm, sizeof nm, "crelu%d", l);
        a = h1(g, OP_RELU, a, nm);
    }
    return a;
}

/* quant -> conv2d (random geometry, groups, zero padding) -> bn -> [relu] -> quant, twice,
 * then a float conv output. */
static Graph *build_convs(uint64_t seed, bool pow2) {
    Rng r = rng_seed(seed);
    Graph *g = new_graph("lowbit_conv");
    int64_t C = rng_int(&r, 1, 4), H = rng_int(&r, 4, 8), W = rng_int(&r, 4, 8);
    int64_t xd[4] = {DIM_BATCH, C, H, W};
    Value *x = add_input(g, "x", make_type(TY_F32, 4, xd));
    int bits;
    Value *h = add_quant(g, &r, h2(g, OP_MUL, x, hconst_scalar(g, "gain", 4.0f), "xg"),
                         pick_scale(&r, pow2), "q0", &bits);
    for (int l = 0; l < 3; l++) {
        int64_t groups = l < 2 && C % 2 == 0 && rng_int(&r, 0, 2) == 0 ? 2 : 1;
        int64_t O = l == 2 ? 3 : groups * rng_int(&r, 1, 4);
        int64_t k = rng_int(&r, 1, H < W ? (H < 3 ? H : 3) : (W < 3 ? W : 3));
        int64_t st = rng_int(&r, 1, 2), p = k > 1 ? rng_int(&r, 0, 1) : 0;
        int64_t wd[4] = {O, C / groups, k, k};
        char nm[64];
        snprintf(nm, sizeof nm, "cw%d", l);
        Value *w = add_weights(g, &r, O, C / groups * k * k, pow2, nm);
        w->type = make_type(TY_F32, 4, wd); /* same data, the conv's weight shape */
        Value *in[3] = {h, w, NULL};
        int nin = 2;
        if (rng_int(&r, 0, 1)) {
            float *b = xmalloc((size_t)O * sizeof *b);
            for (int64_t o = 0; o < O; o++)
                b[o] = pow2 ? (float)rng_int(&r, -8, 8) * 0.25f : rng_float(&r, -2, 2);
            snprintf(nm, sizeof nm, "cb%d", l);
            in[2] = hconst_f32(g, nm, 1, &O, b);
            free(b);
            nin = 3;
        }
        snprintf(nm, sizeof nm, "conv%d", l);
        Node *cn = hnode(g, OP_CONV2D, nin, in, nm);
        int64_t s2[2] = {st, st}, pads[4] = {p, p, p, p};
        set_attr_ints(cn, "strides", 2, s2);
        if (p)
            set_attr_ints(cn, "pads", 4, pads);
        if (groups > 1)
            set_attr_int(cn, "groups", groups);
        Value *a = hfinish(cn);
        if (l == 2) {
            add_output(g, a);
            break;
        }
        a = add_bn_relu(g, &r, a, O, l);
        snprintf(nm, sizeof nm, "cq%d", l + 1);
        h = add_quant(g, &r, a, pick_scale(&r, pow2), nm, &bits);
        C = O;
        H = a->type.dim[2];
        W = a->type.dim[3];
    }
    return g;
}

static Graph *build_pow2(uint64_t seed) {
    return seed % 2 ? build_layers(seed, true) : build_convs(seed, true);
}
static Graph *build_any(uint64_t seed) {
    return seed % 2 ? build_layers(seed, false) : build_convs(seed, false);
}

static Value *const_copy(Graph *g, const char *name, Type t, const void *data) {
    size_t n = type_nbytes(&t, 1);
    void *copy = xmalloc(n);
    memcpy(copy, data, n);
    return add_const(g, name, t, copy, n);
}

/* Bit-identical outputs of two graphs on random inputs (exact zeros and ties included). */
static bool identical(const Graph *a, const Graph *b, Rng *r, int64_t batch, char *why,
                      size_t len) {
    Tensor in, oa, ob;
    fill_inputs(a, batch, r, &in);
    float *f = in.data;
    for (size_t i = 0; i < in.nbytes / 4; i++)
        if (rng_int(r, 0, 4) == 0) /* values on rounding ties of the first quant */
            f[i] = (float)rng_int(r, -64, 64) / 8.0f;
    bool ok = interp_run(a, &in, &oa) == 0;
    if (!ok) {
        snprintf(why, len, "reference: %s", diag_message());
    } else if (interp_run(b, &in, &ob) != 0) {
        snprintf(why, len, "optimized: %s", diag_message());
        ok = false;
        free_tensor(&oa);
    } else {
        ok = oa.nbytes == ob.nbytes && memcmp(oa.data, ob.data, oa.nbytes) == 0;
        if (!ok)
            snprintf(why, len, "outputs differ");
        free_tensor(&oa);
        free_tensor(&ob);
    }
    free_tensor(&in);
    return ok;
}

static void check_random_layers(void) {
    int integer_layers = 0, total = 0, convs = 0;
    for (int pass = 0; pass < 2; pass++) {
        BuildFn build = pass == 0 ? build_pow2 : build_any;
        for (uint64_t seed = 1; seed <= 60; seed++) {
            Graph *ref = build(seed);
            Buf report = {0};
            Graph *opt = compile_copy(build, seed, 3, &report);
            Graph *o1 = compile_copy(build, seed, 1, NULL);
            CHECK_MSG(opt && o1, "seed %llu did not compile", (unsigned long long)seed);
            if (opt && o1) {
                Rng r = rng_seed(seed * 7919);
                char why[256];
                for (int t = 0; t < 3; t++) {
                    CHECK_MSG(identical(ref, opt, &r, 64, why, sizeof why),
                              "%s seed %llu -O3: %s", pass ? "any" : "pow2",
                              (unsigned long long)seed, why);
                    CHECK_MSG(identical(ref, o1, &r, 64, why, sizeof why),
                              "%s seed %llu -O1: %s", pass ? "any" : "pow2",
                              (unsigned long long)seed, why);
                }
                int nq = count_ops(opt, OP_QDENSE);
                /* Power-of-two scales keep the float sums exact: every layer must go integer. */
                convs += count_ops(opt, OP_QCONV2D);
                nq += count_ops(opt, OP_QCONV2D);
                /* (A padded conv whose input quant has no level at 0.0 stays float.) */
                if (pass == 0 && seed % 2)
                    CHECK_MSG(nq == 3 && count_ops(opt, OP_DENSE) == 0,
                              "pow2 seed %llu: %d qdense\n%s", (unsigned long long)seed, nq,
                              report.data ? report.data : "");
                integer_layers += nq;
                total += 3;
            }
            buf_free(&report);
            free_graph(ref);
            if (opt)
                free_graph(opt);
            if (o1)
                free_graph(o1);
        }
    }
    printf("random layers: %d of %d dense/conv layers on integer codes (%d qconv2d)\n",
           integer_layers, total, convs);
    CHECK(convs >= 40); /* the conv half of the power-of-two nets mostly goes integer */
}

/* The thresholds a binary search of the monotone chain finds (what lowbit does past 2^22
 * accumulators a channel) against those the enumeration of every accumulator fits: on the
 * same random nets every layer must come out the same, integer or float, with the same
 * thresholds and directions. */
static Graph *compile_enumerating(BuildFn build, uint64_t seed, int64_t enumerate) {
    CompileOptions o;
    memset(&o, 0, sizeof o);
    o.opt_level = 3;
    o.lowbit_enumerate = enumerate;
    return compile_copy_with(build, seed, o, NULL);
}

/* The integer layers of g in order (at most cap). */
static int integer_layers(const Graph *g, const Node **out, int cap) {
    int n = 0;
    for (int i = 0; i < g->nnodes && n < cap; i++)
        if (g->nodes[i]->op == OP_QDENSE || g->nodes[i]->op == OP_QCONV2D)
            out[n++] = g->nodes[i];
    return n;
}

/* Whether two constants hold the same bytes. */
static bool same_const(const Value *a, const Value *b) {
    return a->nbytes == b->nbytes && memcmp(a->data, b->data, a->nbytes) == 0;
}

static void check_search_vs_enumeration(void) {
    int compared = 0;
    for (int pass = 0; pass < 2; pass++) {
        BuildFn build = pass == 0 ? build_pow2 : build_any;
        for (uint64_t seed = 1; seed <= 60; seed++) {
            Graph *all = compile_enumerating(build, seed, 0), *searched = compile_enumerating(build, seed, 1);
            CHECK_MSG(all && searched, "seed %llu did not compile", (unsigned long long)seed);
            if (all && searched) {
                int n = 0;
                const Node *qa[8], *qs[8];
                int na = integer_layers(all, qa, 8), ns = integer_layers(searched, qs, 8);
                CHECK_MSG(na == ns, "%s seed %llu: %d integer layers enumerating, %d searching",
                          pass ? "any" : "pow2", (unsigned long long)seed, na, ns);
                for (int i = 0; i < na && i < ns; i++) {
                    CHECK(qa[i]->nin == qs[i]->nin);
                    for (int j = 2; j < qa[i]->nin && qa[i]->nin == qs[i]->nin; j++) {
                        CHECK_MSG(same_const(qa[i]->in[j], qs[i]->in[j]),
                                  "%s seed %llu: layer %d's %s differ between the enumeration and the search",
                                  pass ? "any" : "pow2", (unsigned long long)seed, i, j == 2 ? "thresholds" : "directions");
                        n++;
                    }
                }
                compared += n > 0;
            }
            if (all)
                free_graph(all);
            if (searched)
                free_graph(searched);
        }
    }
    printf("search against enumeration: %d nets with thresholds compared\n", compared);
    CHECK(compared >= 40);
}

/* A w8a8 dense layer over 500 inputs: about 8 million reachable accumulators a channel, past
 * what lowbit enumerates, so its thresholds come by the search; power-of-two scales keep the
 * float sum exact, so it must go integer, equal to the float path, with the thresholds the
 * enumeration (allowed 2^24 here) finds. */
static Graph *build_wide(uint64_t seed) {
    Rng r = rng_seed(seed);
    Graph *g = new_graph("wide");
    const int64_t K = 500, O = 3;
    int64_t xd[2] = {DIM_BATCH, K}, wd[2] = {O, K};
    Value *x = add_input(g, "x", make_type(TY_F32, 2, xd));
    Value *xs = h2(g, OP_MUL, x, hconst_scalar(g, "gain", 64.0f), "xg");
    Value *qin[4] = {xs, hconst_scalar(g, "q0.s", 0.5f), hconst_scalar(g, "q0.z", 0.0f), hconst_scalar(g, "q0.b", 8.0f)};
    Node *q0 = hnode(g, OP_QUANT, 4, qin, "q0");
    set_attr_int(q0, "signed", 0);
    set_attr_int(q0, "narrow", 0);
    set_attr_str(q0, "rounding", "ROUND");
    float *w = xmalloc((size_t)(O * K) * sizeof *w);
    for (int64_t i = 0; i < O * K; i++)
        w[i] = (float)rng_int(&r, -128, 127) * 0.25f;
    Value *in[2] = {hfinish(q0), hconst_f32(g, "w", 2, wd, w)};
    free(w);
    Value *a = hfinish(hnode(g, OP_DENSE, 2, in, "fc"));
    float sc[3] = {0.7f, -1.3f, 0.02f}, bi[3] = {0.5f, -2.0f, 1.0f}, mu[3] = {300.0f, -800.0f, 0.0f},
          va[3] = {9e5f, 4e6f, 1e6f};
    a = hbatchnorm(g, a, sc, bi, mu, va, 1e-5f, "bn");
    Value *q1in[4] = {a, hconst_scalar(g, "q1.s", 0.0078125f), hconst_scalar(g, "q1.z", 0.0f),
                      hconst_scalar(g, "q1.b", 8.0f)};
    Node *q1 = hnode(g, OP_QUANT, 4, q1in, "q1");
    set_attr_int(q1, "signed", 1);
    set_attr_int(q1, "narrow", 0);
    set_attr_str(q1, "rounding", seed % 2 ? "HALF_UP" : "FLOOR");
    float wo[6] = {1, -1, 0.5f, 2, 0, -0.25f};
    int64_t od[2] = {2, O};
    Value *oin[2] = {hfinish(q1), hconst_f32(g, "wout", 2, od, wo)};
    add_output(g, hfinish(hnode(g, OP_DENSE, 2, oin, "out")));
    return g;
}

static void check_wide_layer(void) {
    for (uint64_t seed = 1; seed <= 2; seed++) {
        Graph *ref = build_wide(seed);
        Buf report = {0};
        Graph *opt = compile_copy(build_wide, seed, 3, &report);
        Graph *all = compile_enumerating(build_wide, seed, (int64_t)1 << 24);
        CHECK_MSG(opt && all, "the wide layer did not compile");
        if (opt && all) {
            CHECK_MSG(count_ops(opt, OP_QDENSE) == 2 && count_ops(opt, OP_DENSE) == 0,
                      "seed %llu: the wide layer stayed float:\n%s", (unsigned long long)seed,
                      report.data ? report.data : "");
            CHECK_MSG(report.data && strstr(report.data, "in 3 of 3 channels, past 4194304 accumulators, by a binary search"),
                      "the report names the search:\n%s", report.data ? report.data : "");
            Rng r = rng_seed(seed);
            char why[256];
            for (int t = 0; t < 3; t++)
                CHECK_MSG(identical(ref, opt, &r, 256, why, sizeof why), "wide seed %llu: %s",
                          (unsigned long long)seed, why);
            const Node *qa = NULL, *qs = NULL; /* the fused first layer: its thresholds */
            CHECK(integer_layers(all, &qa, 1) == 1 && integer_layers(opt, &qs, 1) == 1 && qa->nin == 4 &&
                  qs->nin == 4);
            for (int j = 2; qa && qs && qa->nin == 4 && qs->nin == 4 && j < 4; j++)
                CHECK_MSG(same_const(qa->in[j], qs->in[j]),
                          "wide seed %llu: the searched %s differ from the enumerated ones",
                          (unsigned long long)seed, j == 2 ? "thresholds" : "directions");
        }
        buf_free(&report);
        free_graph(ref);
        if (opt)
            free_graph(opt);
        if (all)
            free_graph(all);
    }
}

/* The interpreter's qdense (with and without thresholds) against a plain integer loop. */
static void check_qdense_interp(void) {
    Rng r = rng_seed(42);
    for (int trial = 0; trial < 50; trial++) {
        int64_t B = rng_int(&r, 1, 5), K = rng_int(&r, 1, 300), O = rng_int(&r, 1, 17);
        int xbits = rng_int(&r, 1, 8), L = rng_int(&r, 1, 7);
        Graph *g = new_graph("q");
        int64_t xd[2] = {DIM_BATCH, K}, wd[2] = {O, K}, td[2] = {O, L};
        Value *x = add_input(g, "x", make_type(TY_I32, 2, xd));
        int8_t *w = xmalloc((size_t)(O * K));
        int32_t *t = xmalloc((size_t)(O * L) * sizeof *t);
        int8_t *dir = xmalloc((size_t)O);
        for (int64_t i = 0; i < O * K; i++)
            w[i] = (int8_t)rng_int(&r, -128, 127);
        for (int64_t i = 0; i < O * L; i++)
            t[i] = rng_int(&r, -20000, 20000);
        for (int64_t o = 0; o < O; o++)
            dir[o] = rng_int(&r, 0, 1) ? 1 : -1;
        Value *wv = const_copy(g, "w", make_type(TY_I8, 2, wd), w);
        Value *tv = const_copy(g, "t", make_type(TY_I32, 2, td), t);
        Value *dv = const_copy(g, "dir", make_type(TY_I8, 1, &O), dir);
        Value *in2[2] = {x, wv}, *in4[4] = {x, wv, tv, dv};
        Node *a = hnode(g, OP_QDENSE, 2, in2, "acc");
        set_attr_int(a, "xbits", xbits);
        Node *c = hnode(g, OP_QDENSE, 4, in4, "codes");
        set_attr_int(c, "xbits", xbits);
        add_output(g, hfinish(a));
        add_output(g, hfinish(c));
        CHECK_MSG(verify_graph(g) == 0, "%s", diag_message());
        Tensor in;
        int64_t bd[2] = {B, K};
        in.type = make_type(TY_I32, 2, bd);
        in.nbytes = (size_t)(B * K) * 4;
        in.data = xmalloc(in.nbytes);
        for (int64_t i = 0; i < B * K; i++)
            ((int32_t *)in.data)[i] = rng_int(&r, 0, (1 << xbits) - 1);
        Tensor out[2];
        CHECK_MSG(interp_run(g, &in, out) == 0, "%s", diag_message());
        for (int64_t b = 0; b < B; b++)
            for (int64_t o = 0; o < O; o++) {
                int64_t acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += (int64_t)((int32_t *)in.data)[b * K + k] * w[o * K + k];
                int32_t cnt = 0;
                for (int l = 0; l < L; l++)
                    cnt += dir[o] > 0 ? acc >= t[o * L + l] : acc <= t[o * L + l];
                CHECK(((int32_t *)out[0].data)[b * O + o] == acc);
                CHECK(((int32_t *)out[1].data)[b * O + o] == cnt);
            }
        /* A code outside [0, 2^xbits) is refused, not wrapped. */
        ((int32_t *)in.data)[0] = 1 << xbits;
        Tensor bad[2];
        CHECK(interp_run(g, &in, bad) != 0);
        free_tensor(&out[0]);
        free_tensor(&out[1]);
        free_tensor(&in);
        free(w);
        free(t);
        free(dir);
        free_graph(g);
    }
}

/* quantize is quant without the dequantization: quant(x) == ((float)n + (lo - zeropt)) * scale
 * bit for bit but for the sign of a zero, for every rounding mode, ties and out-of-range
 * values included. */
static void check_quantize_vs_quant(void) {
    Rng r = rng_seed(99);
    for (int trial = 0; trial < 200; trial++) {
        Graph *g = new_graph("qz");
        int64_t xd[2] = {DIM_BATCH, 64};
        Value *x = add_input(g, "x", make_type(TY_F32, 2, xd));
        int bits;
        float scale =
            rng_int(&r, 0, 1) ? ldexpf(1.0f, rng_int(&r, -3, 2)) : rng_float(&r, 0.01f, 2);
        Value *q = add_quant(g, &r, x, scale, "q", &bits);
        Node *qn = q->def;
        Node *z = hnode(g, OP_QUANTIZE, 4, qn->in, "codes");
        for (int i = 0; i < qn->nattrs; i++) {
            if (qn->attrs[i].kind == ATTR_STR)
                set_attr_str(z, qn->attrs[i].key, qn->attrs[i].s);
            else
                set_attr_int(z, qn->attrs[i].key, qn->attrs[i].i);
        }
        add_output(g, q);
        add_output(g, hfinish(z));
        int64_t bd[2] = {7, 64};
        Tensor in = {make_type(TY_F32, 2, bd), NULL, 7 * 64 * 4}, out[2];
        in.data = xmalloc(in.nbytes);
        float zp = ((const float *)qn->in[2]->data)[0];
        for (int i = 0; i < 7 * 64; i++) /* ties of x/scale + zp, and ordinary values */
            ((float *)in.data)[i] = rng_int(&r, 0, 1)
                                        ? ((float)rng_int(&r, -300, 300) * 0.5f - zp) * scale
                                        : rng_float(&r, -300, 300) * scale;
        CHECK_MSG(interp_run(g, &in, out) == 0, "%s", diag_message());
        bool is_signed = attr_int(qn, "signed", 1), narrow = attr_int(qn, "narrow", 0);
        int lo = is_signed ? -(1 << (bits - 1)) + narrow : 0;
        int bad = 0;
        for (int i = 0; i < 7 * 64; i++) {
            float want = ((const float *)out[0].data)[i];
            float got = ((float)((const int32_t *)out[1].data)[i] + (float)(lo - (int)zp)) * scale;
            /* The same value; only a zero's sign may differ (quant's -0 from rounding). */
            bad += memcmp(&want, &got, 4) != 0 && !(want == 0.0f && got == 0.0f);
        }
        CHECK_MSG(bad == 0, "trial %d (%d bits, %s): %d values differ", trial, bits,
                  attr_str(qn, "rounding", "ROUND"), bad);
        free_tensor(&out[0]);
        free_tensor(&out[1]);
        free(in.data);
        free_graph(g);
    }
}

int main(void) {
    check_quantize_vs_quant();
    check_qdense_interp();
    check_random_layers();
    check_search_vs_enumeration();
    check_wide_layer();
    return check_report("test_lowbit");
}
