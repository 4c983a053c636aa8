/* harness.h: graph builders and before/after comparison for the pass tests. Header-only,
 * included by each test program of tests/passes/. */
#ifndef BNN_TEST_PASSES_HARNESS_H
#define BNN_TEST_PASSES_HARNESS_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "compiler.h"
#include "ir.h"
#include "util.h"

/* ---------------------------------------------------------------- random numbers */

typedef struct Rng {
    uint64_t s;
} Rng;

static inline uint32_t rng_next(Rng *r) {
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return (uint32_t)(r->s >> 11);
}
static inline int rng_int(Rng *r, int lo, int hi) { /* inclusive */
    return lo + (int)(rng_next(r) % (uint32_t)(hi - lo + 1));
}
static inline float rng_float(Rng *r, float lo, float hi) {
    return lo + (hi - lo) * (float)(rng_next(r) & 0xffffff) / (float)0x1000000;
}
static inline Rng rng_seed(uint64_t seed) {
    Rng r = {seed * 0x9E3779B97F4A7C15ull + 12345};
    for (int i = 0; i < 4; i++)
        rng_next(&r);
    return r;
}

/* ---------------------------------------------------------------- builders */

static inline Value *hconst_f32(Graph *g, const char *name, int rank, const int64_t *dim,
                                const float *vals) {
    Type t = make_type(TY_F32, rank, dim);
    size_t nb = type_nbytes(&t, 1);
    float *d = xmalloc(nb);
    memcpy(d, vals, nb);
    return add_const(g, name, t, d, nb);
}

static inline Value *hconst_scalar(Graph *g, const char *name, float v) {
    return hconst_f32(g, name, 0, NULL, &v);
}

static inline Value *hconst_b1_random(Graph *g, const char *name, int rank, const int64_t *dim,
                                      Rng *r) {
    Type t = make_type(TY_B1, rank, dim);
    size_t nb = type_nbytes(&t, 1);
    uint8_t *d = xcalloc(nb, 1);
    int64_t n = type_numel(&t, 1);
    for (int64_t i = 0; i < n; i++)
        bit_set(d, i, rng_next(r) & 1);
    return add_const(g, name, t, d, nb);
}

static inline Value *hconst_b1_fill(Graph *g, const char *name, int rank, const int64_t *dim,
                                    int bit) {
    Type t = make_type(TY_B1, rank, dim);
    size_t nb = type_nbytes(&t, 1);
    uint8_t *d = xcalloc(nb, 1);
    memset(d, bit ? 0xff : 0, nb);
    return add_const(g, name, t, d, nb);
}

/* A node whose result type is inferred now (declared for reshape). */
static inline Node *hnode(Graph *g, Op op, int nin, Value **in, const char *name) {
    const char *names[1] = {name};
    Node *n = add_node(g, op, nin, in, name ? names : NULL, NULL);
    return n;
}

static inline Value *hfinish(Node *n) {
    Type t[MAX_OUTPUTS];
    if (infer_node_types(n, t) != 0) {
        fprintf(stderr, "harness: cannot infer: %s\n", diag_message());
        exit(2);
    }
    for (int j = 0; j < n->nout; j++)
        n->out[j]->type = t[j];
    return n->out[0];
}

static inline Value *h1(Graph *g, Op op, Value *a, const char *name) {
    Value *in[1] = {a};
    return hfinish(hnode(g, op, 1, in, name));
}
static inline Value *h2(Graph *g, Op op, Value *a, Value *b, const char *name) {
    Value *in[2] = {a, b};
    return hfinish(hnode(g, op, 2, in, name));
}

static inline Value *hbinarize(Graph *g, Value *x, int zero, const char *name) {
    Value *in[1] = {x};
    Node *n = hnode(g, OP_BINARIZE, 1, in, name);
    if (zero != 1)
        set_attr_int(n, "zero", zero);
    return hfinish(n);
}

static inline Value *hcast_f32(Graph *g, Value *x, const char *name) {
    Value *in[1] = {x};
    Node *n = hnode(g, OP_CAST, 1, in, name);
    set_attr_str(n, "to", "f32");
    return hfinish(n);
}

static inline Value *hreshape(Graph *g, Value *x, int rank, const int64_t *dim, const char *name) {
    Value *in[1] = {x};
    Type t = make_type(x->type.dtype, rank, dim);
    const char *names[1] = {name};
    Node *n = add_node(g, OP_RESHAPE, 1, in, name ? names : NULL, &t);
    return hfinish(n);
}

/* A constant of per-channel values v[0..c-1] (or one value, shape 0) that broadcasts over
 * x's channel axis 1. shape: 0 [1], 1 [C] (rank-2 x only), 2 [C,1,1], 3 [1,C,1,1]. */
static inline Value *hconst_per_channel(Graph *g, const char *name, const Type *x, int shape,
                                        const float *v) {
    int64_t c = x->dim[1];
    int64_t d1[1] = {shape == 0 ? 1 : c}, d3[3] = {c, 1, 1}, d4[4] = {1, c, 1, 1};
    if (shape <= 1)
        return hconst_f32(g, name, 1, d1, v);
    return shape == 2 ? hconst_f32(g, name, 3, d3, v) : hconst_f32(g, name, 4, d4, v);
}

/* Per-channel batch-norm parameters; gamma_kind: 0 random sign, 1 positive, 2 negative,
 * 3 zero. */
static inline Value *hbatchnorm(Graph *g, Value *x, const float *scale, const float *bias,
                                const float *mean, const float *var, float eps,
                                const char *name) {
    int64_t c = x->type.dim[1];
    char buf[256];
    Value *in[5] = {x};
    const float *p[4] = {scale, bias, mean, var};
    static const char *const pn[4] = {"scale", "bias", "mean", "var"};
    for (int i = 0; i < 4; i++) {
        snprintf(buf, sizeof buf, "%s_%s", name, pn[i]);
        in[i + 1] = hconst_f32(g, buf, 1, &c, p[i]);
    }
    Node *n = hnode(g, OP_BATCHNORM, 5, in, name);
    if (eps != 1e-5f)
        set_attr_float(n, "epsilon", eps);
    return hfinish(n);
}

/* ---------------------------------------------------------------- batch-norm parameters */

/* kind: 0 mixed, 1 all positive gammas, 2 all negative, 3 all zero. Some channels land an
 * integer accumulator exactly on the boundary (integer mean, unit scale, zero bias). */
static inline void random_bn(Rng *r, int64_t c, int kind, float *scale, float *bias, float *mean,
                      float *var) {
    for (int64_t i = 0; i < c; i++) {
        int k = kind ? kind : rng_int(r, 1, 7);
        float mag = rng_int(r, 0, 3) == 0 ? 1.0f : rng_float(r, 0.05f, 3.0f);
        scale[i] = k == 2 || k == 4 ? -mag : k == 3 || k == 5 ? 0.0f : mag;
        bias[i] = rng_int(r, 0, 2) == 0 ? 0.0f : rng_float(r, -2.0f, 2.0f);
        mean[i] = rng_int(r, 0, 1) ? (float)rng_int(r, -6, 6) : rng_float(r, -6.0f, 6.0f);
        var[i] = rng_int(r, 0, 3) == 0 ? 1.0f : rng_float(r, 0.01f, 4.0f);
    }
}

static inline Value *random_bn_node(Graph *g, Rng *r, Value *x, const char *name) {
    int64_t c = x->type.dim[1];
    float *s = xmalloc((size_t)c * 4), *b = xmalloc((size_t)c * 4), *m = xmalloc((size_t)c * 4),
          *v = xmalloc((size_t)c * 4);
    random_bn(r, c, rng_int(r, 0, 4) == 0 ? rng_int(r, 1, 3) : 0, s, b, m, v);
    static const float eps_choices[] = {1e-5f, 1e-3f, 0.1f, 0.0f, 2e-5f};
    Value *y = hbatchnorm(g, x, s, b, m, v, eps_choices[rng_int(r, 0, 4)], name);
    free(s);
    free(b);
    free(m);
    free(v);
    return y;
}

/* ---------------------------------------------------------------- running */

static inline void fill_inputs(const Graph *g, int64_t batch, Rng *r, Tensor *in) {
    for (int i = 0; i < g->ninputs; i++) {
        Type t = g->inputs[i]->type;
        for (int d = 0; d < t.rank; d++)
            if (t.dim[d] == DIM_BATCH)
                t.dim[d] = batch;
        in[i].type = t;
        in[i].nbytes = type_nbytes(&t, batch);
        in[i].data = xcalloc(in[i].nbytes ? in[i].nbytes : 1, 1);
        int64_t n = type_numel(&t, batch);
        if (t.dtype == TY_F32) {
            float *f = in[i].data;
            for (int64_t k = 0; k < n; k++) {
                int sel = rng_int(r, 0, 9);
                /* Exact zeros exercise binarize's zero rule. */
                f[k] = sel == 0 ? 0.0f : rng_float(r, -1.0f, 1.0f);
            }
        } else if (t.dtype == TY_B1) {
            for (int64_t k = 0; k < n; k++)
                bit_set(in[i].data, k, rng_next(r) & 1);
        }
    }
}

static inline void free_tensors(Tensor *t, int n) {
    for (int i = 0; i < n; i++)
        free_tensor(&t[i]);
}

/* Outputs equal: bit-identical for b1/integers, 1e-5 relative for floats. */
static inline bool tensors_match(const Tensor *a, const Tensor *b, char *why, size_t len) {
    if (a->type.dtype != b->type.dtype || a->nbytes != b->nbytes) {
        snprintf(why, len, "dtype/size differ (%s %zu vs %s %zu)", dtype_name(a->type.dtype),
                 a->nbytes, dtype_name(b->type.dtype), b->nbytes);
        return false;
    }
    if (a->type.dtype != TY_F32) {
        if (memcmp(a->data, b->data, a->nbytes) != 0) {
            snprintf(why, len, "%s data differs", dtype_name(a->type.dtype));
            return false;
        }
        return true;
    }
    const float *x = a->data, *y = b->data;
    for (size_t i = 0; i < a->nbytes / 4; i++) {
        float d = fabsf(x[i] - y[i]), m = fmaxf(fabsf(x[i]), fabsf(y[i]));
        if (!(d <= 1e-5f * m || d == 0.0f) && !(isnan(x[i]) && isnan(y[i]))) {
            snprintf(why, len, "f32 element %zu: %.9g vs %.9g", i, (double)x[i], (double)y[i]);
            return false;
        }
    }
    return true;
}

/* Run build(seed) as built and after the pipeline at -O level, on the same random
 * inputs; true when every output matches. report receives the pipeline's report. */
typedef Graph *(*BuildFn)(uint64_t seed);

/* The same with o's other options (its verify_each, report and repro_path set here). */
static inline Graph *compile_copy_with(BuildFn build, uint64_t seed, CompileOptions o, Buf *report) {
    Graph *g = build(seed);
    o.verify_each = true;
    o.report = report;
    o.repro_path = "passes-test-crash.bnn";
    if (run_passes(g, &o) != 0) {
        fprintf(stderr, "run_passes -O%d seed %llu: %s\n", o.opt_level, (unsigned long long)seed,
                diag_message());
        free_graph(g);
        return NULL;
    }
    return g;
}

static inline Graph *compile_copy(BuildFn build, uint64_t seed, int level, Buf *report) {
    CompileOptions o;
    memset(&o, 0, sizeof o);
    o.opt_level = level;
    return compile_copy_with(build, seed, o, report);
}

static inline bool same_outputs(const Graph *ref, const Graph *opt, int64_t batch, Rng *r,
                                char *why, size_t len) {
    Tensor in[8], out_a[8], out_b[8];
    memset(out_a, 0, sizeof out_a);
    memset(out_b, 0, sizeof out_b);
    if (ref->ninputs > 8 || ref->noutputs > 8 || opt->noutputs != ref->noutputs) {
        snprintf(why, len, "output count changed");
        return false;
    }
    fill_inputs(ref, batch, r, in);
    bool ok = true;
    if (interp_run(ref, in, out_a) != 0) {
        snprintf(why, len, "reference run failed: %s", diag_message());
        ok = false;
    } else if (interp_run(opt, in, out_b) != 0) {
        snprintf(why, len, "optimized run failed: %s", diag_message());
        free_tensors(out_a, ref->noutputs);
        ok = false;
    } else {
        for (int i = 0; i < ref->noutputs && ok; i++)
            if (!tensors_match(&out_a[i], &out_b[i], why, len))
                ok = false;
        free_tensors(out_a, ref->noutputs);
        free_tensors(out_b, ref->noutputs);
    }
    free_tensors(in, ref->ninputs);
    return ok;
}

static inline int count_ops(const Graph *g, Op op) {
    int k = 0;
    for (int i = 0; i < g->nnodes; i++)
        k += !g->nodes[i]->dead && g->nodes[i]->op == op;
    return k;
}

#endif
