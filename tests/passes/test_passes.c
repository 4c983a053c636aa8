/* test_passes: every pass against the reference interpreter. Graphs built with the ir.h
 * API run before and after the pipeline at -O0, -O1 and -O3 on random inputs: binary
 * outputs bit-identical, float outputs within 1e-5 relative. Plus the exhaustive threshold
 * check, property tests over random small graphs and the pass manager's own features. */
#include <limits.h>
#include <unistd.h>

#include "harness.h"

static const int levels[] = {0, 1, 3};
/* Whether random nets may give a hidden layer's float value a second reader. */
static bool allow_shortcuts = true;

/* A per-channel f32 constant shaped to broadcast over x ([C] for rank 2, [C,1,1] or
 * [1,C,1,1] for rank 4), some entries negative or zero when allowed. */
static Value *per_channel_const(Graph *g, Rng *r, const Type *x, const char *name,
                                bool allow_neg) {
    int64_t c = x->dim[1];
    float *v = xmalloc((size_t)c * 4);
    for (int64_t i = 0; i < c; i++) {
        v[i] = rng_float(r, 0.1f, 2.0f);
        if (allow_neg && rng_int(r, 0, 3) == 0)
            v[i] = -v[i];
    }
    Value *k = hconst_per_channel(g, name, x, x->rank == 2 ? 1 : rng_int(r, 2, 3), v);
    free(v);
    return k;
}

/* The epilogue of a hidden binary layer: cast, then a random mix of the float forms
 * exporters write, then binarize. pool: 0 none, 1 maxpool before the float ops (on the
 * cast accumulator), 2 maxpool on the bits after binarize. */
static Value *hidden_epilogue(Graph *g, Rng *r, Value *acc, const char *name, int pool) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s_f", name);
    Value *v = hcast_f32(g, acc, buf);
    Node *pn = NULL;
    if (pool == 1) {
        snprintf(buf, sizeof buf, "%s_pool", name);
        Value *in[1] = {v};
        pn = hnode(g, OP_MAXPOOL, 1, in, buf);
        int64_t k[2] = {2, 2}, s[2] = {rng_int(r, 1, 2), rng_int(r, 1, 2)};
        set_attr_ints(pn, "kernel", 2, k);
        set_attr_ints(pn, "strides", 2, s);
        if (rng_int(r, 0, 2) == 0) {
            int64_t p[4] = {1, 0, 0, 1};
            set_attr_ints(pn, "pads", 4, p);
        }
        v = hfinish(pn);
    }
    int form = rng_int(r, 0, 4);
    if (form == 0 || form == 3) {
        snprintf(buf, sizeof buf, "%s_alpha", name);
        Value *a = per_channel_const(g, r, &v->type, buf, true);
        snprintf(buf, sizeof buf, "%s_scaled", name);
        v = h2(g, OP_MUL, v, a, buf);
    }
    if (form == 1 || form == 3) {
        snprintf(buf, sizeof buf, "%s_b", name);
        Value *b = per_channel_const(g, r, &v->type, buf, true);
        snprintf(buf, sizeof buf, "%s_biased", name);
        v = rng_int(r, 0, 1) ? h2(g, OP_ADD, v, b, buf) : h2(g, OP_SUB, v, b, buf);
    }
    if (form != 1 && v->type.rank == 2 && rng_int(r, 0, 2) == 0) {
        /* FINN's Unsqueeze -> BatchNormalization -> Squeeze. */
        int64_t d3[3] = {DIM_BATCH, v->type.dim[1], 1}, d2[2] = {DIM_BATCH, v->type.dim[1]};
        snprintf(buf, sizeof buf, "%s_unsq", name);
        v = hreshape(g, v, 3, d3, buf);
        snprintf(buf, sizeof buf, "%s_bn", name);
        v = random_bn_node(g, r, v, buf);
        snprintf(buf, sizeof buf, "%s_sq", name);
        v = hreshape(g, v, 2, d2, buf);
    } else if (form != 1) {
        snprintf(buf, sizeof buf, "%s_bn", name);
        v = random_bn_node(g, r, v, buf);
    }
    if (form == 4) {
        snprintf(buf, sizeof buf, "%s_relu", name);
        v = h1(g, OP_RELU, v, buf);
    }
    /* A real-valued shortcut (Bi-Real) also reads the float value: it must stay. */
    if (rng_int(r, 0, 5) == 0 && allow_shortcuts)
        add_output(g, v);
    snprintf(buf, sizeof buf, "%s_bits", name);
    Value *bits;
    if (rng_int(r, 0, 4) == 0) {
        /* FINN's MultiThreshold to one bit: a float threshold per channel, either way. */
        int64_t c = v->type.dim[1];
        float *t = xmalloc((size_t)c * sizeof *t);
        int8_t *d = xmalloc((size_t)c);
        for (int64_t i = 0; i < c; i++) {
            t[i] = rng_int(r, 0, 2) ? rng_float(r, -2.0f, 2.0f) : (float)rng_int(r, -2, 2);
            d[i] = rng_int(r, 0, 1) ? 1 : -1;
        }
        char tn[160];
        snprintf(tn, sizeof tn, "%s_t", name);
        Value *in[3] = {v, hconst_f32(g, tn, 1, &c, t), NULL};
        int nin = 2;
        if (rng_int(r, 0, 1)) {
            snprintf(tn, sizeof tn, "%s_dir", name);
            Type dt = make_type(TY_I8, 1, &c);
            int8_t *dd = xmalloc((size_t)c);
            memcpy(dd, d, (size_t)c);
            in[2] = add_const(g, tn, dt, dd, (size_t)c);
            nin = 3;
        }
        bits = hfinish(hnode(g, OP_THRESHOLD, nin, in, buf));
        free(t);
        free(d);
    } else {
        bits = hbinarize(g, v, rng_int(r, 0, 2) ? 1 : -1, buf);
    }
    if (pool == 2) {
        snprintf(buf, sizeof buf, "%s_bpool", name);
        Value *in[1] = {bits};
        Node *p = hnode(g, OP_MAXPOOL, 1, in, buf);
        int64_t k[2] = {2, 2}, s[2] = {2, 2};
        set_attr_ints(p, "kernel", 2, k);
        set_attr_ints(p, "strides", 2, s);
        bits = hfinish(p);
    }
    return bits;
}

/* The output layer: dense over bits, cast, scale and bias (kept float). */
static Value *output_layer(Graph *g, Rng *r, Value *bits, int64_t classes) {
    int64_t k = bits->type.dim[1];
    int64_t wd[2] = {classes, k};
    Value *w = hconst_b1_random(g, "w_out", 2, wd, r);
    Value *acc = h2(g, OP_DENSE, bits, w, "logits_acc");
    Value *f = hcast_f32(g, acc, "logits_f");
    Value *a = per_channel_const(g, r, &f->type, "out_alpha", false);
    Value *s = h2(g, OP_MUL, f, a, "logits_scaled");
    Value *b = per_channel_const(g, r, &s->type, "out_bias", true);
    return h2(g, OP_ADD, s, b, "logits");
}

static const int64_t channel_choices[] = {3, 5, 8, 65, 130};

static Graph *build_dense_net(uint64_t seed) {
    Rng r = rng_seed(seed);
    Graph *g = new_graph("dense_net");
    int64_t k = rng_int(&r, 3, 40);
    int64_t xd[2] = {DIM_BATCH, k};
    Value *x = add_input(g, "x", make_type(TY_F32, 2, xd));
    Value *bits = hbinarize(g, x, rng_int(&r, 0, 1) ? 1 : -1, "x_bits");
    int layers = rng_int(&r, 1, 3);
    for (int l = 0; l < layers; l++) {
        int64_t o = channel_choices[rng_int(&r, 0, l == 0 ? 4 : 3)];
        int64_t wd[2] = {o, bits->type.dim[1]};
        char name[32];
        snprintf(name, sizeof name, "w%d", l);
        Value *w = hconst_b1_random(g, name, 2, wd, &r);
        snprintf(name, sizeof name, "fc%d", l);
        Value *acc = h2(g, OP_DENSE, bits, w, name);
        bits = hidden_epilogue(g, &r, acc, name, 0);
        if (rng_int(&r, 0, 3) == 0)
            add_output(g, bits);
    }
    add_output(g, output_layer(g, &r, bits, rng_int(&r, 2, 10)));
    return g;
}

static Graph *build_conv_net(uint64_t seed) {
    Rng r = rng_seed(seed);
    Graph *g = new_graph("conv_net");
    int64_t c = rng_int(&r, 1, 3), h = rng_int(&r, 4, 9), w = rng_int(&r, 4, 9);
    int64_t xd[4] = {DIM_BATCH, c, h, w};
    Value *x = add_input(g, "x", make_type(TY_F32, 4, xd));
    Value *bits = hbinarize(g, x, rng_int(&r, 0, 1) ? 1 : -1, "x_bits");
    int layers = rng_int(&r, 1, 2);
    for (int l = 0; l < layers; l++) {
        const Type *t = &bits->type;
        int64_t o = channel_choices[rng_int(&r, 0, l == 0 ? 3 : 2)];
        int64_t kh = rng_int(&r, 1, 3), kw = rng_int(&r, 1, 3);
        int64_t sh = rng_int(&r, 1, 2), sw = rng_int(&r, 1, 2);
        int64_t dh = rng_int(&r, 1, 2), dw = rng_int(&r, 1, 2);
        int64_t pads[4] = {rng_int(&r, 0, 1), rng_int(&r, 0, 1), rng_int(&r, 0, 1),
                           rng_int(&r, 0, 1)};
        if (t->dim[2] + pads[0] + pads[2] < dh * (kh - 1) + 1)
            dh = 1, kh = 1;
        if (t->dim[3] + pads[1] + pads[3] < dw * (kw - 1) + 1)
            dw = 1, kw = 1;
        int64_t groups = 1;
        if (t->dim[1] % 2 == 0 && o % 2 == 0 && rng_int(&r, 0, 1))
            groups = 2;
        int64_t wd[4] = {o, t->dim[1] / groups, kh, kw};
        char name[32];
        snprintf(name, sizeof name, "cw%d", l);
        Value *wt = hconst_b1_random(g, name, 4, wd, &r);
        snprintf(name, sizeof name, "conv%d", l);
        Value *in[2] = {bits, wt};
        Node *n = hnode(g, OP_CONV2D, 2, in, name);
        int64_t st[2] = {sh, sw}, di[2] = {dh, dw};
        set_attr_ints(n, "strides", 2, st);
        set_attr_ints(n, "dilations", 2, di);
        set_attr_ints(n, "pads", 4, pads);
        if (groups > 1)
            set_attr_int(n, "groups", groups);
        static const int pvals[] = {0, 0, 1, -1};
        int pv = pvals[rng_int(&r, 0, 3)];
        if (pv)
            set_attr_int(n, "pad_value", pv);
        Value *acc = hfinish(n);
        int pool = 0;
        if (acc->type.dim[2] >= 2 && acc->type.dim[3] >= 2)
            pool = rng_int(&r, 0, 2);
        bits = hidden_epilogue(g, &r, acc, name, pool);
        if (rng_int(&r, 0, 3) == 0)
            add_output(g, bits);
    }
    const Type *t = &bits->type;
    int64_t fd[2] = {DIM_BATCH, t->dim[1] * t->dim[2] * t->dim[3]};
    Value *flat = hreshape(g, bits, 2, fd, "flat");
    add_output(g, output_layer(g, &r, flat, rng_int(&r, 2, 10)));
    return g;
}

/* Compare before/after at each level for seeds [first, first+count). */
static void check_property(const char *what, BuildFn build, uint64_t first, int count) {
    int failures = 0;
    for (int s = 0; s < count; s++) {
        uint64_t seed = first + (uint64_t)s;
        Graph *ref = build(seed);
        for (size_t li = 0; li < sizeof levels / sizeof levels[0]; li++) {
            Buf report = {0};
            bool verbose = getenv("BNN_TEST_VERBOSE") != NULL;
            Graph *opt = compile_copy(build, seed, levels[li], verbose ? &report : NULL);
            if (verbose && report.data)
                fprintf(stderr, "== %s seed %llu -O%d\n%s", what, (unsigned long long)seed,
                        levels[li], report.data);
            buf_free(&report);
            CHECK_MSG(opt != NULL, "%s seed %llu -O%d failed to compile", what,
                      (unsigned long long)seed, levels[li]);
            if (!opt)
                continue;
            Rng r = rng_seed(seed ^ 0xabcdef);
            char why[256] = "";
            bool ok = same_outputs(ref, opt, rng_int(&r, 1, 3), &r, why, sizeof why);
            if (!ok && failures++ < 5)
                CHECK_MSG(ok, "%s seed %llu -O%d: %s", what, (unsigned long long)seed,
                          levels[li], why);
            else
                CHECK(true);
            free_graph(opt);
        }
        free_graph(ref);
    }
    CHECK_MSG(failures == 0, "%s: %d mismatches", what, failures);
}

/* ---------------------------------------------------------------- exhaustive thresholds */

typedef struct ExhaustiveSpec {
    int64_t k, c;
    int zero;
    float *alpha, *scale, *bias, *mean, *var;
    float eps;
} ExhaustiveSpec;

static ExhaustiveSpec spec_now;

/* dense with every weight +1, so input row j (j ones) gives accumulator 2j - K on every
 * channel: the batch covers every reachable accumulator of every channel. */
static Graph *build_exhaustive(uint64_t seed) {
    (void)seed;
    const ExhaustiveSpec *s = &spec_now;
    Graph *g = new_graph("exhaustive");
    int64_t xd[2] = {DIM_BATCH, s->k};
    Value *x = add_input(g, "x", make_type(TY_F32, 2, xd));
    Value *bits = hbinarize(g, x, 1, "x_bits");
    int64_t wd[2] = {s->c, s->k};
    Value *w = hconst_b1_fill(g, "w", 2, wd, 1);
    Value *acc = h2(g, OP_DENSE, bits, w, "acc");
    Value *f = hcast_f32(g, acc, "accf");
    Value *a = hconst_f32(g, "alpha", 1, &s->c, s->alpha);
    Value *m = h2(g, OP_MUL, f, a, "scaled");
    Value *bn = hbatchnorm(g, m, s->scale, s->bias, s->mean, s->var, s->eps, "bn");
    add_output(g, hbinarize(g, bn, s->zero, "y"));
    return g;
}

static int float_path_bit(const ExhaustiveSpec *s, int64_t c, int64_t y) {
    float v = (float)y * s->alpha[c];
    v = batchnorm_scalar(v, s->scale[c], s->bias[c], s->mean[c], s->var[c], s->eps);
    return v > 0 || (v == 0 && s->zero == 1);
}

static void check_exhaustive_case(ExhaustiveSpec *s) {
    spec_now = *s;
    Graph *ref = build_exhaustive(0);
    for (size_t li = 1; li < sizeof levels / sizeof levels[0]; li++) {
        Graph *opt = compile_copy(build_exhaustive, 0, levels[li], NULL);
        CHECK(opt != NULL);
        if (!opt)
            continue;
        /* The folded thresholds against the float path at every integer in [-K, K]. */
        const Node *thr = NULL;
        for (int i = 0; i < opt->nnodes; i++)
            if (opt->nodes[i]->op == OP_THRESHOLD || opt->nodes[i]->op == OP_BDENSE)
                thr = opt->nodes[i];
        CHECK_MSG(thr != NULL, "no threshold or fused op at -O%d", levels[li]);
        CHECK_MSG(count_ops(opt, OP_BATCHNORM) == 0, "batchnorm left at -O%d", levels[li]);
        if (thr) {
            const Value *tv = thr->in[thr->op == OP_THRESHOLD ? 1 : 2];
            const Value *dv = thr->in[thr->op == OP_THRESHOLD ? 2 : 3];
            const int32_t *t = tv->data;
            const int8_t *d = dv->data;
            int bad = 0;
            for (int64_t c = 0; c < s->c; c++)
                for (int64_t y = -s->k; y <= s->k; y++) {
                    int folded = d[c] > 0 ? y >= t[c] : y <= t[c];
                    if (folded != float_path_bit(s, c, y) && bad++ < 3)
                        CHECK_MSG(0, "K=%lld channel %lld y=%lld: threshold %d dir %d gives %d",
                                  (long long)s->k, (long long)c, (long long)y, t[c], d[c],
                                  folded);
                }
            CHECK(bad == 0);
        }
        /* And end to end on the interpreter, every reachable accumulator. */
        int64_t batch = s->k + 1;
        Tensor in, oa, ob;
        Type t = make_type(TY_F32, 2, (int64_t[]){batch, s->k});
        in.type = t;
        in.nbytes = type_nbytes(&t, batch);
        in.data = xmalloc(in.nbytes);
        for (int64_t j = 0; j < batch; j++)
            for (int64_t i = 0; i < s->k; i++)
                ((float *)in.data)[j * s->k + i] = i < j ? 1.0f : -1.0f;
        CHECK(interp_run(ref, &in, &oa) == 0);
        CHECK(interp_run(opt, &in, &ob) == 0);
        char why[256];
        CHECK_MSG(tensors_match(&oa, &ob, why, sizeof why), "exhaustive K=%lld: %s",
                  (long long)s->k, why);
        free_tensor(&in);
        free_tensor(&oa);
        free_tensor(&ob);
        free_graph(opt);
    }
    free_graph(ref);
}

static void test_exhaustive_thresholds(void) {
    static const int64_t ks[] = {1, 2, 7, 64, 65, 300};
    Rng r = rng_seed(7);
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
        for (int zero = -1; zero <= 1; zero += 2) {
            ExhaustiveSpec s;
            memset(&s, 0, sizeof s);
            s.k = ks[ki];
            s.c = 12;
            s.zero = zero;
            s.eps = ki % 2 ? 1e-3f : 1e-5f;
            float alpha[12], scale[12], bias[12], mean[12], var[12];
            s.alpha = alpha, s.scale = scale, s.bias = bias, s.mean = mean, s.var = var;
            random_bn(&r, s.c, 0, scale, bias, mean, var);
            for (int c = 0; c < 12; c++)
                alpha[c] = c % 5 == 4 ? -rng_float(&r, 0.5f, 2.0f) : rng_float(&r, 0.5f, 2.0f);
            /* Hand-placed cases: exact boundaries, gamma < 0, gamma == 0 both ways. */
            alpha[0] = 1, scale[0] = 1, bias[0] = 0, mean[0] = 1, var[0] = 1 - s.eps;
            alpha[1] = 1, scale[1] = -1, bias[1] = 0, mean[1] = -1, var[1] = 1;
            alpha[2] = 1, scale[2] = 0, bias[2] = 0.5f;           /* always 1 */
            alpha[3] = 1, scale[3] = 0, bias[3] = -0.5f;          /* always 0 */
            alpha[4] = 1, scale[4] = 0, bias[4] = 0;              /* bn gives 0: zero rule */
            alpha[5] = 1, scale[5] = 1, bias[5] = 0, mean[5] = 1e6f; /* beyond the range */
            alpha[6] = 0.1f, scale[6] = 3, bias[6] = 0, mean[6] = 0.3f, var[6] = 1;
            check_exhaustive_case(&s);
        }
    }
}

/* ---------------------------------------------------------------- pass manager */

static Graph *build_broken(uint64_t seed) {
    (void)seed;
    Graph *g = new_graph("broken");
    int64_t xd[2] = {DIM_BATCH, 8};
    Value *x = add_input(g, "x", make_type(TY_F32, 2, xd));
    Value *b = hbinarize(g, x, 1, "b");
    int64_t wd[2] = {4, 9}; /* K mismatch: infer-shapes must refuse */
    Rng r = rng_seed(1);
    Value *w = hconst_b1_random(g, "w", 2, wd, &r);
    Value *in[2] = {b, w};
    Node *n = hnode(g, OP_DENSE, 2, in, "bad");
    n->out[0]->type = make_type(TY_I32, 2, (int64_t[]){DIM_BATCH, 4});
    add_output(g, n->out[0]);
    return g;
}

static void test_pass_manager(void) {
    CHECK(is_pass_name("fold-thresholds"));
    CHECK(is_pass_name("all"));
    CHECK(!is_pass_name("no-such-pass"));
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    list_passes(f);
    fclose(f);
    static const char *const names[] = {"infer-shapes", "cleanup", "sign-to-binarize", "padding",
                                        "fold-thresholds", "fuse-binary", "choose-formats",
                                        "plan-memory"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        CHECK_STR_CONTAINS(text, names[i]);
    free(text);

    /* Dumps carry a banner per pass; -O0 runs only the required passes. */
    text = NULL;
    f = open_memstream(&text, &len);
    Graph *g = build_dense_net(3);
    CompileOptions o;
    memset(&o, 0, sizeof o);
    o.opt_level = 0;
    o.verify_each = true;
    o.dump_after = "all";
    o.dump_out = f;
    CHECK(run_passes(g, &o) == 0);
    fclose(f);
    CHECK_STR_CONTAINS(text, "# --- after infer-shapes ---");
    CHECK_STR_CONTAINS(text, "# --- after plan-memory ---");
    CHECK(strstr(text, "# --- after fold-thresholds ---") == NULL);
    CHECK(count_ops(g, OP_BATCHNORM) > 0);
    free(text);
    free_graph(g);

    /* A failing pass leaves the IR from before it in the reproducer and says so; constants of
     * more than 16 elements (w: 36 bits) go to its side file, which the text names. */
    unlink("passes-test-crash.bnn");
    unlink("passes-test-crash.bnn.weights");
    g = build_broken(0);
    memset(&o, 0, sizeof o);
    o.opt_level = 3;
    o.verify_each = true;
    o.repro_path = "passes-test-crash.bnn";
    CHECK(run_passes(g, &o) != 0);
    CHECK_STR_CONTAINS(diag_message(), "infer-shapes");
    CHECK_STR_CONTAINS(diag_message(), "passes-test-crash.bnn");
    CHECK_STR_CONTAINS(diag_message(), "its large constants in passes-test-crash.bnn.weights");
    size_t rlen = 0, wlen = 0;
    char *repro = read_file("passes-test-crash.bnn", &rlen);
    char *side = read_file("passes-test-crash.bnn.weights", &wlen);
    CHECK(repro != NULL && side != NULL);
    if (repro && side) {
        CHECK_STR_CONTAINS(repro, "const $w: b1[4,9] = file \"passes-test-crash.bnn.weights\" offset 0");
        const Value *w = NULL;
        for (int i = 0; i < g->nconsts; i++)
            if (!strcmp(g->consts[i]->name, "w"))
                w = g->consts[i];
        CHECK(w != NULL && wlen == w->nbytes && memcmp(side, w->data, wlen) == 0);
    }
    free(repro);
    free(side);
    unlink("passes-test-crash.bnn");
    unlink("passes-test-crash.bnn.weights");
    free_graph(g);

    /* --time-passes does not disturb the result; the report has the memory line. */
    Buf report = {0};
    g = compile_copy(build_dense_net, 5, 3, &report);
    CHECK(g != NULL);
    CHECK_STR_CONTAINS(report.data ? report.data : "", "memory: peak ");
    CHECK_STR_CONTAINS(report.data ? report.data : "", "bytes per batch element");
    CHECK_STR_CONTAINS(report.data ? report.data : "", "integer threshold");
    CHECK_STR_CONTAINS(report.data ? report.data : "", "kept with its float epilogue");
    buf_free(&report);
    free_graph(g);
}

/* ---------------------------------------------------------------- single passes */

/* runs random inputs (batch 3) give ref and opt the same outputs; both graphs freed. */
static void check_same_and_free(Graph *ref, Graph *opt, uint64_t seed, int runs, const char *what) {
    Rng r = rng_seed(seed);
    char why[256];
    for (int i = 0; i < runs; i++)
        CHECK_MSG(same_outputs(ref, opt, 3, &r, why, sizeof why), "%s: %s", what, why);
    free_graph(opt);
    free_graph(ref);
}

/* Identity ops, duplicate constants, reshape chains, dead code, constant subgraphs and
 * an STE pair: cleanup removes them and the outputs stay. */
static Graph *build_cleanup(uint64_t seed) {
    Rng r = rng_seed(seed);
    Graph *g = new_graph("cleanup");
    int64_t xd[2] = {DIM_BATCH, 6};
    Value *x = add_input(g, "x", make_type(TY_F32, 2, xd));
    float one[6] = {1, 1, 1, 1, 1, 1}, negz[6] = {-0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f};
    int64_t six = 6;
    Value *k1 = hconst_f32(g, "one", 1, &six, one);
    Value *k1b = hconst_f32(g, "one_again", 1, &six, one);
    Value *a = h2(g, OP_MUL, x, k1, "times_one");
    Value *b = h2(g, OP_MUL, a, k1b, "times_one_again");
    Value *c = h2(g, OP_ADD, b, hconst_f32(g, "negzero", 1, &six, negz), "plus_negzero");
    int64_t r1[3] = {DIM_BATCH, 2, 3}, r2[2] = {DIM_BATCH, 6};
    Value *d = hreshape(g, hreshape(g, c, 3, r1, "r1"), 2, r2, "r2");
    h1(g, OP_RELU, d, "dead_relu"); /* unused */
    /* STE: clip(x) + (sign(x) - clip(x)) feeding binarize. */
    Value *in[1] = {d};
    Node *cl = hnode(g, OP_CLIP, 1, in, "clip");
    set_attr_float(cl, "min", -1.0f);
    set_attr_float(cl, "max", 1.0f);
    Value *cv = hfinish(cl);
    Value *sg = h1(g, OP_SIGN, d, "sgn");
    Value *ste = h2(g, OP_ADD, cv, h2(g, OP_SUB, sg, cv, "ste_diff"), "ste");
    Value *bits = hbinarize(g, ste, 1, "bits");
    /* Weights stored as floats: binarize of a constant folds to a b1 constant. */
    float wf[4 * 6];
    for (int i = 0; i < 24; i++)
        wf[i] = rng_float(&r, -1, 1);
    Value *w = hbinarize(g, hconst_f32(g, "wf", 2, (int64_t[]){4, 6}, wf), 1, "wbits");
    Value *acc = h2(g, OP_DENSE, bits, w, "acc");
    add_output(g, hcast_f32(g, acc, "out"));
    return g;
}

static void test_cleanup(void) {
    Graph *ref = build_cleanup(1);
    Graph *opt = compile_copy(build_cleanup, 1, 1, NULL);
    CHECK(opt != NULL);
    if (!opt) {
        free_graph(ref);
        return;
    }
    CHECK_MSG(count_ops(opt, OP_MUL) == 0, "x*1 left");
    CHECK_MSG(count_ops(opt, OP_ADD) == 0, "x+(-0) or STE add left");
    CHECK_MSG(count_ops(opt, OP_RESHAPE) == 0, "reshape chain left");
    CHECK_MSG(count_ops(opt, OP_RELU) == 0, "dead relu left");
    CHECK_MSG(count_ops(opt, OP_CLIP) == 0, "STE clip left");
    CHECK_MSG(count_ops(opt, OP_BINARIZE) == 1, "binarize of a constant not folded (%d left)",
              count_ops(opt, OP_BINARIZE));
    check_same_and_free(ref, opt, 9, 20, "cleanup");
}

/* globalavgpool(cast(bits)): cleanup makes the pool read the bits (b1 input, the mean of their
 * +-1 values: docs/ir.md); a cast that another node reads stays for it. seed 1: the cast's
 * only reader is the pool; seed 2: a relu reads it too. */
static Graph *build_gap_bits(uint64_t seed) {
    Graph *g = new_graph("gap_bits");
    int64_t xd[4] = {DIM_BATCH, 37, 3, 5};
    Value *x = add_input(g, "x", make_type(TY_F32, 4, xd));
    Value *f = hcast_f32(g, hbinarize(g, x, 1, "bits"), "pm1");
    add_output(g, h1(g, OP_GLOBALAVGPOOL, f, "mean"));
    if (seed == 2)
        add_output(g, h1(g, OP_RELU, f, "also"));
    return g;
}

static void test_gap_bits(void) {
    for (uint64_t seed = 1; seed <= 2; seed++) {
        Graph *ref = build_gap_bits(seed);
        Buf report = {0};
        Graph *opt = compile_copy(build_gap_bits, seed, 1, &report);
        CHECK(opt != NULL);
        if (!opt) {
            free_graph(ref);
            buf_free(&report);
            continue;
        }
        const Node *gap = NULL;
        for (int i = 0; i < opt->nnodes; i++)
            if (opt->nodes[i]->op == OP_GLOBALAVGPOOL)
                gap = opt->nodes[i];
        CHECK_MSG(gap && gap->in[0]->type.dtype == TY_B1, "seed %d: the pool does not read the bits", (int)seed);
        CHECK_MSG(count_ops(opt, OP_CAST) == (seed == 2), "seed %d: %d casts left", (int)seed,
                  count_ops(opt, OP_CAST));
        CHECK_MSG(report.data && strstr(report.data, "1 global average pools read their b1 input"),
                  "seed %d: no report line", (int)seed);
        check_same_and_free(ref, opt, 5, 10, "gap of bits");
        buf_free(&report);
    }
}

/* sign over a dense accumulator with odd K (never 0) becomes cast(binarize); with even K
 * it stays and the report says why. */
static int64_t sign_k;
static bool sign_bn;
static Graph *build_sign(uint64_t seed) {
    Rng r = rng_seed(seed);
    Graph *g = new_graph("sign");
    int64_t xd[2] = {DIM_BATCH, sign_k};
    Value *x = add_input(g, "x", make_type(TY_F32, 2, xd));
    Value *bits = hbinarize(g, x, 1, "xb");
    Value *w = hconst_b1_random(g, "w", 2, (int64_t[]){5, sign_k}, &r);
    Value *f = hcast_f32(g, h2(g, OP_DENSE, bits, w, "acc"), "accf");
    if (sign_bn) {
        /* A batch-norm whose mean is never an integer: never 0 at any accumulator. */
        float sc[5] = {1, -2, 0.5f, 3, 1}, bi[5] = {0, 0, 0, 0, 0},
              me[5] = {0.5f, -1.5f, 2.5f, 0.25f, -0.75f}, va[5] = {1, 2, 1, 4, 1};
        f = hbatchnorm(g, f, sc, bi, me, va, 1e-5f, "bn");
    }
    Value *s = h1(g, OP_SIGN, f, "s");
    /* A float consumer of the sign, and a binary layer after it. */
    add_output(g, h2(g, OP_MUL, s, hconst_scalar(g, "half", 0.5f), "halved"));
    Value *w2 = hconst_b1_random(g, "w2", 2, (int64_t[]){3, 5}, &r);
    Value *b2 = hbinarize(g, s, 1, "sb");
    add_output(g, hcast_f32(g, h2(g, OP_DENSE, b2, w2, "acc2"), "out2"));
    return g;
}

static void test_sign_to_binarize(void) {
    for (int mode = 0; mode < 3; mode++) {
        /* 0: even K, kept; 1: odd K; 2: even K through a batch-norm that is never 0. */
        int odd = mode > 0;
        sign_k = mode == 1 ? 9 : 8;
        sign_bn = mode == 2;
        Buf report = {0};
        Graph *ref = build_sign(2);
        Graph *opt = compile_copy(build_sign, 2, 3, &report);
        CHECK(opt != NULL);
        if (opt) {
            CHECK_MSG(count_ops(opt, OP_SIGN) == (odd ? 0 : 1), "K=%lld: %d signs left",
                      (long long)sign_k, count_ops(opt, OP_SIGN));
            if (!odd)
                CHECK_STR_CONTAINS(report.data ? report.data : "", "sign kept");
            if (mode == 2)
                CHECK_MSG(count_ops(opt, OP_BDENSE) == 1 && count_ops(opt, OP_BATCHNORM) == 0,
                          "sign over a batch-norm: %d bdense, %d batchnorm",
                          count_ops(opt, OP_BDENSE), count_ops(opt, OP_BATCHNORM));
            Rng r = rng_seed(4);
            char why[256];
            for (int i = 0; i < 10; i++)
                CHECK_MSG(same_outputs(ref, opt, 2, &r, why, sizeof why), "sign K=%lld: %s",
                          (long long)sign_k, why);
            free_graph(opt);
        }
        free_graph(ref);
        buf_free(&report);
    }
}

/* An explicit +1/-1 pad of a b1 tensor folds into the conv's pad_value. */
static int pad_sign;
static Graph *build_pad(uint64_t seed) {
    Rng r = rng_seed(seed);
    Graph *g = new_graph("pad");
    Value *x = add_input(g, "x", make_type(TY_F32, 4, (int64_t[]){DIM_BATCH, 3, 5, 6}));
    Value *b = hbinarize(g, x, 1, "xb");
    Value *in[1] = {b};
    Node *p = hnode(g, OP_PAD, 1, in, "padded");
    int64_t pads[8] = {0, 0, 1, 2, 0, 0, 2, 1};
    set_attr_ints(p, "pads", 8, pads);
    set_attr_float(p, "value", (float)pad_sign);
    Value *pv = hfinish(p);
    Value *w = hconst_b1_random(g, "w", 4, (int64_t[]){4, 3, 3, 3}, &r);
    Value *acc = h2(g, OP_CONV2D, pv, w, "conv");
    add_output(g, hcast_f32(g, acc, "out"));
    return g;
}

static void test_padding(void) {
    for (pad_sign = -1; pad_sign <= 1; pad_sign += 2) {
        Graph *ref = build_pad(3);
        Graph *opt = compile_copy(build_pad, 3, 1, NULL);
        CHECK(opt != NULL);
        if (opt) {
            CHECK_MSG(count_ops(opt, OP_PAD) == 0, "pad %+d not folded", pad_sign);
            Rng r = rng_seed(5);
            char why[256];
            for (int i = 0; i < 10; i++)
                CHECK_MSG(same_outputs(ref, opt, 2, &r, why, sizeof why), "pad %+d: %s",
                          pad_sign, why);
            free_graph(opt);
        }
        free_graph(ref);
    }
}

/* The plan never gives two values that are live at once overlapping bytes. */
static void test_memory_plan(void) {
    for (uint64_t seed = 1; seed <= 20; seed++) {
        Graph *g = compile_copy(seed % 2 ? build_conv_net : build_dense_net, seed, 3, NULL);
        CHECK(g != NULL);
        if (!g)
            continue;
        MemPlan plan;
        CHECK(plan_memory(g, &plan) == 0);
        int *first = xcalloc((size_t)g->nvalues, sizeof *first);
        int *last = xcalloc((size_t)g->nvalues, sizeof *last);
        for (int i = 0; i < g->nvalues; i++)
            first[i] = last[i] = -1;
        for (int i = 0; i < g->nnodes; i++) {
            for (int j = 0; j < g->nodes[i]->nout; j++)
                first[g->nodes[i]->out[j]->id] = last[g->nodes[i]->out[j]->id] = i;
            for (int j = 0; j < g->nodes[i]->nin; j++)
                last[g->nodes[i]->in[j]->id] = i;
        }
        int overlaps = 0;
        for (int a = 0; a < g->nvalues; a++)
            for (int b = a + 1; b < g->nvalues; b++) {
                if (plan.offset[a] < 0 || plan.offset[b] < 0)
                    continue;
                bool live_together = first[a] <= last[b] && first[b] <= last[a];
                bool bytes_overlap = plan.offset[a] < plan.offset[b] + plan.size[b] &&
                                     plan.offset[b] < plan.offset[a] + plan.size[a];
                overlaps += live_together && bytes_overlap;
            }
        CHECK_MSG(overlaps == 0, "seed %llu: %d overlapping live buffers",
                  (unsigned long long)seed, overlaps);
        CHECK(plan.peak > 0 || plan.nbuffers == 0);
        free(first);
        free(last);
        free_mem_plan(&plan);
        free_graph(g);
    }
}

/* At -O3 every hidden layer of a dense net is one fused op and nothing float is left
 * between binary layers. */
static void test_fusion_shape(void) {
    allow_shortcuts = false;
    for (uint64_t seed = 100; seed < 140; seed++) {
        Graph *g = compile_copy(build_dense_net, seed, 3, NULL);
        CHECK(g != NULL);
        if (!g)
            continue;
        CHECK_MSG(count_ops(g, OP_BATCHNORM) == 0, "seed %llu: batchnorm left",
                  (unsigned long long)seed);
        CHECK_MSG(count_ops(g, OP_THRESHOLD) == 0, "seed %llu: unfused threshold left",
                  (unsigned long long)seed);
        CHECK_MSG(count_ops(g, OP_BINARIZE) == 1, "seed %llu: %d binarize left (want the input's)",
                  (unsigned long long)seed, count_ops(g, OP_BINARIZE));
        free_graph(g);
    }
    allow_shortcuts = true;
}

int main(void) {
    test_pass_manager();
    test_exhaustive_thresholds();
    test_cleanup();
    test_gap_bits();
    test_sign_to_binarize();
    test_padding();
    test_memory_plan();
    test_fusion_shape();
    check_property("dense nets", build_dense_net, 1000, 300);
    check_property("conv nets", build_conv_net, 5000, 300);
    return check_report("test_passes");
}
