/* lowbit: requires result types (infer-shapes); runs after fold-thresholds. Changes: a float
 * dense / conv2d whose input is a `quant` of 1-8 bits (perhaps through a reshape) and whose
 * weights are integer levels times a per-channel scale becomes qdense / qconv2d over integer
 * codes, and its float chain up to the next quant (or binarize) becomes per-channel
 * multi-level integer thresholds, checked by running the interpreter on the model's own ops
 * at every reachable accumulator of every channel, or for a channel of more than 2^22 by a
 * binary search of its monotone chain (docs/passes.md, lowbit). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

#define MAX_CHAIN 16
/* Per channel, enumerate at most this many accumulators (unless CompileOptions says
 * otherwise); a wider range is searched (search_levels). */
#define MAX_RANGE ((int64_t)1 << 22)
/* Accumulators a searched channel's thresholds are checked at, spread over its range. */
#define SEARCH_CHECKS 65536

/* Integer codes standing for a quant's float output: value = (n + off) * scale, n in
 * [0, nmax]: the quant's value (n + off is a small exact integer; only a zero's sign is lost). */
typedef struct Codes {
    const Value *fval; /* the quant's f32 result */
    Value *codes;      /* i32 level indices */
    int64_t nmax;
    int64_t off; /* lo - zeropt */
    float scale;
} Codes;

/* A scalar-parameter quant: what the codes and the thresholds need. */
typedef struct QParams {
    Node *n;
    float scale, zeropt;
    int bits;
    int64_t lo, hi;
} QParams;

typedef struct LowbitContext {
    PassContext *pass;
    Graph *g;
    Codes *codes;
    int ncodes, cap;
    int layers;
} LowbitContext;

/* The float chain after a dense: per-channel steps, then an end (quant, binarize or none). */
typedef struct Chain {
    Node *steps[MAX_CHAIN];
    int nsteps;
    Node *end; /* OP_QUANT, OP_BINARIZE, or NULL: a float tail */
    QParams q; /* end is a quant */
} Chain;

/* ---------------------------------------------------------------- matching */

static bool scalar_f32(const Value *v, float *out) {
    if (v->kind != VAL_CONST || v->type.dtype != TY_F32 || type_numel(&v->type, 1) != 1)
        return false;
    *out = ((const float *)v->data)[0];
    return true;
}

/* A quant with constant scalar parameters, an integer zero point and at most 8 bits. */
static bool get_qparams(Node *n, QParams *p) {
    float b;
    if (n->dead || n->op != OP_QUANT || !scalar_f32(n->in[1], &p->scale) ||
        !scalar_f32(n->in[2], &p->zeropt) || !scalar_f32(n->in[3], &b))
        return false;
    if (!(p->scale > 0.0f) || !isfinite(p->scale) || p->zeropt != floorf(p->zeropt) ||
        fabsf(p->zeropt) > 65536.0f || b != floorf(b) || b < 1.0f || b > 8.0f)
        return false;
    p->n = n;
    p->bits = (int)b;
    bool is_signed = attr_int(n, "signed", 1), narrow = attr_int(n, "narrow", 0);
    p->lo = is_signed ? -((int64_t)1 << (p->bits - 1)) + narrow : 0;
    p->hi = is_signed ? ((int64_t)1 << (p->bits - 1)) - 1 : ((int64_t)1 << p->bits) - 1 - narrow;
    return p->hi > p->lo;
}

static Codes *find_codes(LowbitContext *lc, const Value *fval) {
    for (int i = 0; i < lc->ncodes; i++)
        if (lc->codes[i].fval == fval)
            return &lc->codes[i];
    return NULL;
}

static Codes *add_codes(LowbitContext *lc, const Value *fval, Value *codes, const QParams *p) {
    if (lc->ncodes == lc->cap) {
        lc->cap = lc->cap ? 2 * lc->cap : 16;
        Codes *c = xcalloc((size_t)lc->cap, sizeof *c);
        if (lc->ncodes)
            memcpy(c, lc->codes, (size_t)lc->ncodes * sizeof *c);
        free(lc->codes);
        lc->codes = c;
    }
    Codes *c = &lc->codes[lc->ncodes++];
    *c = (Codes){fval, codes, p->hi - p->lo, p->lo - (int64_t)p->zeropt, p->scale};
    return c;
}

static Value *new_const(Graph *g, const char *base, DType dt, int rank, const int64_t *dims,
                        const void *data) {
    Type t = make_type(dt, rank, dims);
    return add_const_copy(g, base, t, data, type_nbytes(&t, 1));
}

/* A node appended by add_node, placed right before `before`, named after base. */
static Node *insert_node(Graph *g, Op op, int nin, Value *const *in, const char *base, Type t,
                         const Node *before, const Node *src) {
    char *name = graph_unique_name(g, base);
    const char *names[1] = {name};
    Node *n = add_node(g, op, nin, in, names, &t);
    free(name);
    if (src)
        node_set_src(n, src->src_name, src->src_op);
    move_node_before(g, n, before);
    return n;
}

/* Codes for a quant's result: known from an earlier layer's thresholds, or a new quantize of
 * the quant's own input. */
static Codes *get_codes(LowbitContext *lc, const QParams *p) {
    Codes *c = find_codes(lc, p->n->out[0]);
    if (c)
        return c;
    Type t = p->n->out[0]->type;
    t.dtype = TY_I32;
    char base[256];
    snprintf(base, sizeof base, "%s.codes", p->n->out[0]->name);
    Node *q = insert_node(lc->g, OP_QUANTIZE, 4, p->n->in, base, t, p->n, p->n);
    for (int i = 0; i < p->n->nattrs; i++) {
        const Attr *a = &p->n->attrs[i];
        if (a->kind == ATTR_INT)
            set_attr_int(q, a->key, a->i);
        else if (a->kind == ATTR_STR)
            set_attr_str(q, a->key, a->s);
    }
    return add_codes(lc, p->n->out[0], q->out[0], p);
}

/* Integer weight codes u and a positive float scale per output channel with
 * w == fl(u * scale) bit for bit; false if the weights are not integer levels. */
static bool decode_weights(const Value *w, int8_t *u, float *sw) {
    if (w->kind != VAL_CONST || w->type.dtype != TY_F32 || w->type.rank < 2 || !w->type.dim[0])
        return false;
    int64_t O = w->type.dim[0], K = type_numel(&w->type, 1) / O; /* conv: C/groups*KH*KW */
    const float *wf = w->data;
    for (int64_t o = 0; o < O; o++) {
        const float *row = wf + o * K;
        float m = INFINITY;
        for (int64_t k = 0; k < K; k++) {
            if (!isfinite(row[k]))
                return false;
            if (row[k] != 0.0f && fabsf(row[k]) < m)
                m = fabsf(row[k]);
        }
        if (m == INFINITY) { /* an all-zero channel */
            sw[o] = 1.0f;
            memset(u + o * K, 0, (size_t)K);
            continue;
        }
        bool found = false;
        /* The smallest level used may be 1, 2, 3, ... times the scale. */
        for (int d = 1; d <= 127 && !found; d++) {
            float s = m / (float)d;
            found = s > 0.0f;
            for (int64_t k = 0; k < K && found; k++) {
                double r = nearbyint((double)row[k] / s);
                if (r < -128 || r > 127 || (float)((float)r * s) != row[k])
                    found = false;
                else
                    u[o * K + k] = (int8_t)r;
            }
            if (found)
                sw[o] = s;
        }
        if (!found)
            return false;
    }
    return true;
}

/* A per-channel f32 constant operand of an elementwise op on x. */
static bool per_channel_const(const Value *k, const Type *x) {
    if (k->kind != VAL_CONST || k->type.dtype != TY_F32 || x->rank != 2)
        return false;
    int64_t *idx = xmalloc((size_t)x->dim[1] * sizeof *idx);
    bool ok = const_per_channel(k, x, idx);
    free(idx);
    return ok;
}

/* Walk forward from the dense's result through single-user per-channel float ops. */
static void match_chain(const Graph *g, Node *dense, Chain *ch) {
    memset(ch, 0, sizeof *ch);
    Value *v = dense->out[0];
    while (ch->nsteps < MAX_CHAIN) {
        Node *u = single_user(g, v);
        if (!u)
            return;
        bool same = type_equal(&u->out[0]->type, &v->type);
        switch (u->op) {
        case OP_QUANT:
            if (u->in[0] == v && get_qparams(u, &ch->q))
                ch->end = u;
            return;
        case OP_BINARIZE:
            if (u->in[0] == v)
                ch->end = u;
            return;
        case OP_BATCHNORM:
            for (int i = 1; i < 5; i++)
                if (u->in[i]->kind != VAL_CONST || u->in[i]->type.dtype != TY_F32)
                    return;
            if (u->in[0] != v || !same)
                return;
            break;
        case OP_ADD:
        case OP_SUB:
        case OP_MUL:
        case OP_DIV: {
            int ki = u->in[0] == v ? 1 : 0;
            if (u->in[1 - ki] != v || u->in[ki] == v || !same || (u->op == OP_DIV && ki == 0) ||
                !per_channel_const(u->in[ki], &v->type))
                return;
            break;
        }
        case OP_RELU:
        case OP_CLIP:
            if (!same)
                return;
            break;
        default: return;
        }
        ch->steps[ch->nsteps++] = u;
        v = u->out[0];
    }
}

/* ---------------------------------------------------------------- exact evaluation */

/* Element c's slice of a constant that broadcasts per channel over x (same rank, all 1s). */
static Value *slice_const(Graph *mg, const Value *k, const Type *x, int64_t c) {
    int64_t *idx = xmalloc((size_t)x->dim[1] * sizeof *idx);
    int64_t dims[MAX_RANK];
    if (!const_per_channel(k, x, idx)) /* batchnorm parameters: [C] */
        for (int64_t i = 0; i < x->dim[1]; i++)
            idx[i] = i;
    dims[0] = 1;
    float v = ((const float *)k->data)[idx[c]];
    free(idx);
    /* At most rank 1, so that it broadcasts over the channel graph's [N,1] as the original
     * broadcast over its channel. */
    Type t = make_type(TY_F32, k->type.rank ? 1 : 0, dims);
    return add_const_copy(mg, k->name, t, &v, sizeof v);
}

static void copy_attrs(Node *to, const Node *from) {
    for (int i = 0; i < from->nattrs; i++) {
        const Attr *a = &from->attrs[i];
        switch (a->kind) {
        case ATTR_INT: set_attr_int(to, a->key, a->i); break;
        case ATTR_FLOAT: set_attr_float(to, a->key, a->f); break;
        case ATTR_INTS: set_attr_ints(to, a->key, a->n, a->ints); break;
        case ATTR_FLOATS: set_attr_floats(to, a->key, a->n, a->floats); break;
        case ATTR_STR: set_attr_str(to, a->key, a->s); break;
        }
    }
}

/* One channel of the chain as a graph over f32[N,1] (the dense's float sum without its bias):
 * bias add, the steps with their constants sliced to the channel, and the end as quantize
 * (level index) or binarize. The interpreter then evaluates exactly the ops the model runs. */
static Graph *build_channel_graph(const Node *dense, const Chain *ch, int64_t c) {
    Graph *mg = new_graph("lowbit_channel");
    int64_t d[2] = {DIM_BATCH, 1};
    Type ft = make_type(TY_F32, 2, d);
    Value *v = add_input(mg, "acc", ft);
    const Type *xt = &dense->out[0]->type;
    if (dense->nin == 3) {
        Value *in[2] = {v, slice_const(mg, dense->in[2], xt, c)};
        v = add_node(mg, OP_ADD, 2, in, NULL, &ft)->out[0];
    }
    for (int i = 0; i < ch->nsteps; i++) {
        const Node *s = ch->steps[i];
        Value *in[5];
        for (int j = 0; j < s->nin; j++)
            in[j] = s->in[j]->kind == VAL_CONST ? slice_const(mg, s->in[j], xt, c) : v;
        Node *n = add_node(mg, s->op, s->nin, in, NULL, &ft);
        copy_attrs(n, s);
        v = n->out[0];
    }
    if (ch->end) {
        const Node *e = ch->end;
        Type t = ft;
        Node *n;
        if (e->op == OP_QUANT) {
            t.dtype = TY_I32;
            Value *in[4] = {v, NULL, NULL, NULL};
            for (int j = 1; j < 4; j++)
                in[j] = add_const_copy(mg, e->in[j]->name, e->in[j]->type, e->in[j]->data,
                                       e->in[j]->nbytes);
            n = add_node(mg, OP_QUANTIZE, 4, in, NULL, &t);
        } else {
            t.dtype = TY_B1;
            n = add_node(mg, OP_BINARIZE, 1, &v, NULL, &t);
        }
        copy_attrs(n, e);
        v = n->out[0];
    }
    add_output(mg, v);
    return mg;
}

/* Levels (quantize's index, or the bit) the chain gives for each float input, RUN_CHUNK
 * inputs a run: the interpreter's buffers then stay small enough to be reused and cached
 * (a run of a million inputs mapped fresh pages for every op). */
enum { RUN_CHUNK = 8192 };
static int run_channel(Graph *mg, const float *xs, int64_t count, int32_t *levels) {
    for (int64_t at = 0; at < count; at += RUN_CHUNK) {
        int64_t m = count - at < RUN_CHUNK ? count - at : RUN_CHUNK, d[2] = {m, 1};
        Tensor in = {make_type(TY_F32, 2, d), (void *)(xs + at), (size_t)m * sizeof *xs}, out;
        if (interp_run(mg, &in, &out))
            return -1;
        for (int64_t i = 0; i < m; i++)
            levels[at + i] = out.type.dtype == TY_B1 ? bit_get(out.data, i) : ((int32_t *)out.data)[i];
        free_tensor(&out);
    }
    return 0;
}

/* f = m * 2^e with m odd (f != 0): the bits its multiples need. */
static double odd_mantissa(float f) {
    int e;
    double m = frexp(fabs((double)f), &e) * 16777216.0; /* 24 bits */
    while (m != 0 && fmod(m, 2.0) == 0)
        m /= 2;
    return m;
}

/* Thresholds t[L] and dir so that the count of passed levels equals levels[acc - amin] for
 * every acc in [amin, amax]. False when the levels are not monotone in acc. One pass over the
 * accumulators, not one a level: with 255 levels over a million accumulators a channel (a w8a8
 * layer over 64 inputs) the pass a level took most of the compile (docs/perf.md stop 56). */
static bool fit_levels(const int32_t *lv, int64_t amin, int64_t amax, int64_t L, int32_t *t,
                       int8_t *dir) {
    int64_t n = amax - amin + 1;
    bool up = true, down = true;
    for (int64_t i = 0; i + 1 < n; i++) {
        up &= lv[i] <= lv[i + 1];
        down &= lv[i] >= lv[i + 1];
    }
    if (!up && !down)
        return false;
    *dir = up ? 1 : -1;
    /* Level l's threshold: (up) the first accumulator reaching it, which moves right as l
     * grows; (down) the last one at it or above, which moves left. */
    int64_t i = up ? 0 : n - 1;
    for (int64_t l = 1; l <= L; l++) {
        int32_t tl;
        if (up) {
            while (i < n && lv[i] < l)
                i++;
            tl = i == n ? INT32_MAX : i == 0 ? INT32_MIN : (int32_t)(amin + i);
        } else {
            while (i >= 0 && lv[i] < l)
                i--;
            tl = i < 0 ? INT32_MIN : i == n - 1 ? INT32_MAX : (int32_t)(amin + i);
        }
        t[l - 1] = tl;
    }
    /* Check every accumulator's count against its level: the thresholds are sorted (rising
     * for up, falling for down, or the count below is not theirs), so the count is a prefix of
     * them, which moves one way as acc grows. */
    for (int64_t l = 1; l < L; l++)
        if (up ? t[l] < t[l - 1] : t[l] > t[l - 1])
            return false;
    int64_t passed = 0; /* up: the t[l] <= acc; down: the t[l] >= acc, both a prefix of l */
    if (!up)
        while (passed < L && amin <= t[passed])
            passed++;
    for (int64_t j = 0; j < n; j++) {
        int64_t acc = amin + j;
        if (up)
            while (passed < L && t[passed] <= acc)
                passed++;
        else
            while (passed > 0 && t[passed - 1] < acc)
                passed--;
        if (passed != lv[j])
            return false;
    }
    return true;
}

/* ---------------------------------------------------------------- one layer */

typedef struct Layer {
    Node *dense;
    Codes *x;
    int8_t *u;
    float *sw;
    int64_t O, K;
    bool exact; /* the float dense is exactly s*sw*(acc + off*U): no rounding anywhere */
    int64_t *amin, *amax, *usum;
    int64_t enumerate; /* a channel of more accumulators is searched */
    int64_t nsearched; /* channels whose thresholds came by search_levels */
} Layer;

/* Whether the model's float dense computes s*sw[o]*(acc + off*U[o]) without any rounding,
 * for every input: each x = fl(v*s), w, product and partial sum is an exact multiple of
 * 2^(es+ew) below 2^24 units. */
static bool dense_is_exact(const Layer *ly, int64_t vmax) {
    double ms = odd_mantissa(ly->x->scale);
    if (vmax * ms >= 16777216.0)
        return false;
    for (int64_t o = 0; o < ly->O; o++) {
        double s = 0;
        for (int64_t k = 0; k < ly->K; k++)
            s += fabs((double)ly->u[o * ly->K + k]);
        if (s * (double)vmax * ms * odd_mantissa(ly->sw[o]) >= 16777216.0)
            return false;
        const float *w = (const float *)ly->dense->in[1]->data + o * ly->K;
        for (int64_t k = 0; k < ly->K; k++)
            if ((double)ly->u[o * ly->K + k] * (double)ly->sw[o] != (double)w[k])
                return false;
        float kf = ly->x->scale * ly->sw[o];
        if ((double)kf != (double)ly->x->scale * (double)ly->sw[o])
            return false;
    }
    return true;
}

/* The float the model's dense gives accumulator acc of channel o (k = s * sw[o], err its
 * rounding bound): exactly, for an exact layer; else the low or high end of its interval. */
static float acc_float(const Layer *ly, int64_t o, double k, double err, int64_t acc, bool high) {
    double r = k * (double)(acc + ly->x->off * ly->usum[o + ly->O]);
    if (ly->exact)
        return (float)r; /* exactly the interpreter's float sum */
    double e = err + fabs(r) * ldexp(1.0, -40);
    return high ? nextafterf((float)(r + e), INFINITY) : nextafterf((float)(r - e), -INFINITY);
}

/* Whether every constant of the channel's chain is finite and no divisor is zero: a division
 * by zero makes one accumulator's value NaN between -inf and inf, which a relu could then put
 * out of order at that single point. */
static bool consts_finite(const Graph *mg) {
    for (int i = 0; i < mg->nconsts; i++) {
        const Value *c = mg->consts[i];
        for (int64_t j = 0; c->type.dtype == TY_F32 && j < (int64_t)(c->nbytes / 4); j++)
            if (!isfinite(((const float *)c->data)[j]))
                return false;
    }
    for (int i = 0; i < mg->nnodes; i++) {
        const Node *n = mg->nodes[i];
        for (int64_t j = 0; n->op == OP_DIV && n->in[1]->kind == VAL_CONST && j < (int64_t)(n->in[1]->nbytes / 4); j++)
            if (((const float *)n->in[1]->data)[j] == 0.0f)
                return false;
    }
    return true;
}

/* The count of thresholds t[L] an accumulator passes (fit_levels' form). */
static int32_t passed_levels(const int32_t *t, int64_t L, int8_t dir, int64_t acc) {
    int32_t n = 0;
    for (int64_t l = 0; l < L; l++)
        n += dir > 0 ? t[l] <= acc : t[l] >= acc;
    return n;
}

/* Thresholds t[L] and dir (fit_levels' form) of channel o whose range is too wide to enumerate
 * (more than MAX_RANGE accumulators): a binary search a level over [amin, amax], every level's
 * probe of a round in one interpreter run, about log2(range) runs. Sound because the level is
 * monotone in the accumulator: acc -> its float (either end) rises, and every op match_chain
 * admits (batchnorm, add / sub / mul / div by a constant, relu, clip, then quant or binarize)
 * is a monotone float function for finite constants, its rounding included (mg's constants are
 * checked finite first). The thresholds are checked anyway against the chain at SEARCH_CHECKS
 * accumulators spread over the range and at each threshold and its neighbour below (above for
 * a falling channel). An inexact layer's low and high ends are searched apart: the channel has
 * an integer form only where every level's two thresholds agree, *namb counting the
 * accumulators between them. 0, 1 when the check fails (not monotone), -1 on an interpreter
 * error. */
static int search_levels(const Layer *ly, int64_t o, double k, double err, Graph *mg, int64_t L,
                         int32_t *t, int8_t *dir, int64_t *namb) {
    const int64_t amin = ly->amin[o], amax = ly->amax[o], nx = SEARCH_CHECKS + 2 * L + 2; /* the check's inputs, more than a round's */
    int32_t *t2 = xmalloc((size_t)L * sizeof *t2), *lv = xmalloc((size_t)nx * sizeof *lv);
    int64_t *lo = xmalloc((size_t)L * sizeof *lo), *hi = xmalloc((size_t)L * sizeof *hi),
            *acc = xmalloc((size_t)nx * sizeof *acc);
    bool *ended = xmalloc((size_t)L); /* the level's threshold a sentinel: no search */
    float *xs = xmalloc((size_t)nx * sizeof *xs);
    int rc = 0;
    bool up = true;
    *namb = 0;
    for (int pass = 0; pass < (ly->exact ? 1 : 2) && rc == 0; pass++) {
        const bool high = pass == 1;
        int32_t *th = pass ? t2 : t;
        xs[0] = acc_float(ly, o, k, err, amin, high);
        xs[1] = acc_float(ly, o, k, err, amax, high);
        if (run_channel(mg, xs, 2, lv)) {
            rc = -1;
            break;
        }
        const int32_t fmin = lv[0], fmax = lv[1];
        if (pass == 0)
            up = fmax >= fmin;
        /* up: the first accumulator at level l or above, F(lo) < l <= F(hi); falling: the last,
         * F(lo) >= l > F(hi). Reached at the range's end already: INT32_MIN / INT32_MAX. */
        for (int64_t l = 1; l <= L; l++) {
            lo[l - 1] = amin, hi[l - 1] = amax, ended[l - 1] = true;
            if (up ? fmin >= l : fmin < l)
                th[l - 1] = INT32_MIN;
            else if (up ? fmax < l : fmax >= l)
                th[l - 1] = INT32_MAX;
            else
                ended[l - 1] = false;
        }
        for (;;) {
            int64_t m = 0;
            for (int64_t l = 0; l < L; l++)
                if (!ended[l] && hi[l] - lo[l] > 1) {
                    acc[m] = lo[l] + (hi[l] - lo[l]) / 2;
                    xs[m] = acc_float(ly, o, k, err, acc[m], high);
                    m++;
                }
            if (m == 0)
                break;
            if (run_channel(mg, xs, m, lv)) {
                rc = -1;
                break;
            }
            m = 0;
            for (int64_t l = 0; l < L; l++)
                if (!ended[l] && hi[l] - lo[l] > 1) {
                    bool reached = lv[m] >= l + 1;
                    if (up == reached)
                        hi[l] = acc[m];
                    else
                        lo[l] = acc[m];
                    m++;
                }
        }
        for (int64_t l = 0; l < L && rc == 0; l++)
            if (!ended[l])
                th[l] = (int32_t)(up ? hi[l] : lo[l]);
    }
    *dir = up ? 1 : -1;
    if (rc == 0 && !ly->exact)
        for (int64_t l = 0; l < L; l++) {
            /* the range's ends stand for the sentinels: the accumulators between the two */
            int64_t a = t[l] == INT32_MIN ? amin : t[l] == INT32_MAX ? amax + 1 : t[l];
            int64_t b = t2[l] == INT32_MIN ? amin : t2[l] == INT32_MAX ? amax + 1 : t2[l];
            *namb += a > b ? a - b : b - a;
        }
    /* The check: thresholds in order, and the chain's level at spread accumulators and at
     * each threshold's edge equal to the count of thresholds passed. */
    for (int64_t l = 1; rc == 0 && l < L; l++)
        if (up ? t[l] < t[l - 1] : t[l] > t[l - 1])
            rc = 1;
    if (rc == 0 && *namb == 0) {
        int64_t m = 0;
        for (int64_t i = 0; i < SEARCH_CHECKS; i++)
            acc[m++] = amin + (int64_t)((double)(amax - amin) * (double)i / (SEARCH_CHECKS - 1));
        for (int64_t l = 0; l < L; l++)
            if (t[l] != INT32_MIN && t[l] != INT32_MAX) {
                acc[m++] = t[l];
                acc[m++] = up ? t[l] - 1 : t[l] + 1;
            }
        for (int64_t i = 0; i < m; i++)
            xs[i] = acc_float(ly, o, k, err, acc[i], false);
        if (run_channel(mg, xs, m, lv))
            rc = -1;
        for (int64_t i = 0; rc == 0 && i < m; i++)
            if (acc[i] >= amin && acc[i] <= amax && lv[i] != passed_levels(t, L, *dir, acc[i]))
                rc = 1;
    }
    free(t2);
    free(ended);
    free(lv);
    free(lo);
    free(hi);
    free(acc);
    free(xs);
    return rc;
}

/* Thresholds for every channel, or false with a reason. t is [O, L]. */
static bool compute_layer(Layer *ly, const Chain *ch, int64_t L, int32_t *t, int8_t *dir,
                          int64_t *nambig, char *why, size_t whylen) {
    int64_t K = ly->K, vmax = llabs(ly->x->off) > llabs(ly->x->off + ly->x->nmax)
                                  ? llabs(ly->x->off)
                                  : llabs(ly->x->off + ly->x->nmax);
    *nambig = 0;
    int nchan = 0;
    bool ok = true;
    /* One set of buffers for the layer's largest range (a fresh one a channel spent its time
     * mapping pages) */
    int64_t nbuf = 1;
    for (int64_t o = 0; o < ly->O; o++) {
        int64_t n = ly->amax[o] - ly->amin[o] + 1;
        nbuf = n <= ly->enumerate && n > nbuf ? n : nbuf;
    }
    float *lo = xmalloc((size_t)nbuf * sizeof *lo), *hi = xmalloc((size_t)nbuf * sizeof *hi);
    int32_t *l1 = xmalloc((size_t)nbuf * sizeof *l1), *l2 = xmalloc((size_t)nbuf * sizeof *l2);
    for (int64_t o = 0; o < ly->O && ok; o++) {
        int64_t n = ly->amax[o] - ly->amin[o] + 1;
        double k = (double)ly->x->scale * (double)ly->sw[o];
        /* Rounding of the float dense, all of it, for any summation order: each term of
         * sum (v*s)(u*sw) is off by at most 3 roundings (x, w, the product) of relative
         * u = 2^-24, and each addition by u times its partial sum, which is at most the sum
         * of the largest |terms| so far (zero weights add exact zeros). So the float sum is
         * within u * k * vmax * (3 T + sum_i P_i) of the exact one, T = sum |u|, P_i the
         * prefix sums of |u| taken largest first; 2^-20 relative covers the second-order terms. */
        double err = 0;
        if (!ly->exact) {
            int64_t hist[129] = {0};
            for (int64_t j = 0; j < K; j++)
                hist[abs(ly->u[o * K + j])]++;
            double prefix = 0, sum_prefix = 0;
            for (int a = 128; a >= 1; a--)
                for (int64_t c = 0; c < hist[a]; c++) {
                    prefix += a;
                    sum_prefix += prefix;
                }
            err = ldexp(1.0, -24) * (1 + ldexp(1.0, -20)) * k * (double)vmax *
                      (3.0 * (double)ly->usum[o] + sum_prefix) + 1e-30;
        }
        Graph *mg = build_channel_graph(ly->dense, ch, o);
        if (n > ly->enumerate) { /* too many to enumerate: the monotone chain's thresholds searched */
            int64_t amb = 0;
            int rc = consts_finite(mg) ? search_levels(ly, o, k, err, mg, L, t + o * L, &dir[o], &amb) : 2;
            if (rc) {
                if (rc < 0)
                    snprintf(why, whylen, "channel %lld: %s", (long long)o, diag_message());
                else
                    snprintf(why, whylen,
                             "channel %lld: %lld accumulators, too many to check one by one, and %s",
                             (long long)o, (long long)n,
                             rc == 1 ? "the levels are not monotone in the accumulator"
                                     : "a constant of its float chain is not finite or divides by zero");
                ok = false;
            }
            *nambig += amb;
            nchan += amb > 0;
            ly->nsearched++;
            free_graph(mg);
            continue;
        }
        for (int64_t i = 0; i < n; i++) {
            lo[i] = acc_float(ly, o, k, err, ly->amin[o] + i, false);
            hi[i] = ly->exact ? lo[i] : acc_float(ly, o, k, err, ly->amin[o] + i, true);
        }
        if (run_channel(mg, lo, n, l1) || (!ly->exact && run_channel(mg, hi, n, l2))) {
            snprintf(why, whylen, "channel %lld: %s", (long long)o, diag_message());
            ok = false;
        }
        int64_t amb = 0;
        for (int64_t i = 0; ok && !ly->exact && i < n; i++)
            amb += l1[i] != l2[i];
        /* Count them all (for the report) before giving up on the layer. */
        *nambig += amb;
        nchan += amb > 0;
        if (ok && !*nambig && !fit_levels(l1, ly->amin[o], ly->amax[o], L, t + o * L, &dir[o])) {
            snprintf(why, whylen, "channel %lld: the levels are not monotone in the accumulator",
                     (long long)o);
            ok = false;
        }
        free_graph(mg);
    }
    free(lo);
    free(hi);
    free(l1);
    free(l2);
    if (ok && *nambig) {
        snprintf(why, whylen,
                 "%lld accumulators in %d of %lld channels lie within the float dense's "
                 "rounding error of a level boundary (the float path is not a function of the "
                 "accumulator there)",
                 (long long)*nambig, nchan, (long long)ly->O);
        ok = false;
    }
    return ok;
}

static int xbits_of(int64_t nmax) {
    int b = 1;
    while (((int64_t)1 << b) - 1 < nmax)
        b++;
    return b;
}

/* Whether every reader of v gives the same result for -0 and +0: float sums that start at +0
 * (dense, conv2d), comparisons (binarize, threshold) and quant (x/s + 0 is +0 either way). */
static bool zero_sign_blind(const Graph *g, const Value *v) {
    if (is_graph_output(g, v))
        return false;
    for (int i = 0; i < g->nnodes; i++) {
        const Node *n = g->nodes[i];
        bool reads = false;
        for (int j = 0; j < n->nin && !n->dead; j++)
            reads |= n->in[j] == v;
        if (!reads)
            continue;
        if (n->in[0] != v)
            return false;
        switch (n->op) {
        case OP_DENSE:
        case OP_CONV2D:
        case OP_BINARIZE:
        case OP_THRESHOLD: break;
        case OP_QUANT:
        case OP_QUANTIZE: {
            const Value *z = n->in[2];
            if (z->kind != VAL_CONST)
                return false;
            for (int64_t k = 0; k < type_numel(&z->type, 1); k++)
                if (signbit(((const float *)z->data)[k]))
                    return false;
            break;
        }
        default: return false;
        }
    }
    return true;
}

/* xbits, and for a convolution its geometry and the code that padding reads. */
static void set_q_attrs(Node *q, const Node *layer, int xbits, int64_t pad_code) {
    set_attr_int(q, "xbits", xbits);
    if (layer->op != OP_CONV2D)
        return;
    static const char *const keys[] = {"strides", "pads", "dilations"};
    for (int i = 0; i < 3; i++) {
        const Attr *a = get_attr(layer, keys[i]);
        if (a)
            set_attr_ints(q, keys[i], a->n, a->ints);
    }
    if (attr_int(layer, "groups", 1) != 1)
        set_attr_int(q, "groups", attr_int(layer, "groups", 1));
    if (pad_code)
        set_attr_int(q, "pad_code", pad_code);
}

static void rewrite_layer(LowbitContext *lc, Node *d) {
    Graph *g = lc->g;
    char lname[160], why[512] = "", searched[160] = "";
    layer_name(d, lname, sizeof lname);
    QParams qa;
    /* The quant behind the input, directly or through one reshape (a Flatten). */
    Value *src = d->in[0];
    Node *rs = src->kind == VAL_NODE && src->def && src->def->op == OP_RESHAPE ? src->def : NULL;
    if (rs)
        src = rs->in[0];
    Node *qn = src->kind == VAL_NODE ? src->def : NULL;
    Codes *known = find_codes(lc, src);
    if (!known && (!qn || !get_qparams(qn, &qa))) {
        report_line(lc->pass, "layer %s (%s): kept float: its input is not a quant with "
                              "scalar constant parameters of 1..8 bits", lname,
                    op_info(d->op)->name);
        return;
    }
    const char *opname = op_info(d->op)->name;
    bool conv = d->op == OP_CONV2D;
    Layer ly = {.dense = d, .O = d->in[1]->type.dim[0],
                .enumerate = lc->pass->opts->lowbit_enumerate > 0 ? lc->pass->opts->lowbit_enumerate : MAX_RANGE};
    ly.K = type_numel(&d->in[1]->type, 1) / (ly.O ? ly.O : 1);
    int64_t O = ly.O, K = ly.K;
    ly.u = xmalloc((size_t)(O * K));
    ly.sw = xmalloc((size_t)O * sizeof *ly.sw);
    ly.amin = xmalloc((size_t)O * sizeof *ly.amin);
    ly.amax = xmalloc((size_t)O * sizeof *ly.amax);
    ly.usum = xmalloc((size_t)(2 * O) * sizeof *ly.usum); /* sum |u|, then sum u */
    Chain ch;
    int32_t *t = NULL;
    int8_t *dir = NULL;
    if ((d->nin == 3 && (d->in[2]->kind != VAL_CONST || d->in[2]->type.dtype != TY_F32)) ||
        !decode_weights(d->in[1], ly.u, ly.sw)) {
        report_line(lc->pass, "layer %s (%s): kept float: the weights are not integer levels "
                              "times a scale per output channel", lname, opname);
        goto done;
    }
    Codes xcodes = known ? *known : *get_codes(lc, &qa); /* add_codes may move the table */
    ly.x = &xcodes;
    if (rs) { /* the same reshape of the codes */
        Type rt = rs->out[0]->type;
        rt.dtype = TY_I32;
        char rbase[256];
        snprintf(rbase, sizeof rbase, "%s.codes", rs->out[0]->name);
        xcodes.codes = insert_node(g, OP_RESHAPE, 1, &xcodes.codes, rbase, rt, d, rs)->out[0];
    }
    int64_t nmax = ly.x->nmax;
    bool fits = true;
    for (int64_t o = 0; o < O; o++) {
        int64_t pos = 0, neg = 0, abs_sum = 0, sum = 0;
        for (int64_t k = 0; k < K; k++) {
            int v = ly.u[o * K + k];
            pos += v > 0 ? v : 0;
            neg += v < 0 ? v : 0;
            abs_sum += v < 0 ? -v : v;
            sum += v;
        }
        ly.amin[o] = neg * nmax;
        ly.amax[o] = pos * nmax;
        ly.usum[o] = abs_sum;
        ly.usum[O + o] = sum;
        fits &= ly.amin[o] > INT32_MIN / 2 && ly.amax[o] < INT32_MAX / 2;
    }
    if (!fits) {
        report_line(lc->pass, "layer %s (%s): kept float: the accumulator may not fit i32", lname,
                    opname);
        goto done;
    }
    /* A zero-padded tap adds nothing to the float conv; on codes it reads the code of 0.0,
     * -off, which then cancels in acc + off*U like every other tap's offset. */
    int64_t pads[4] = {0, 0, 0, 0};
    if (conv)
        attr_ints(d, "pads", pads, 4, 4, pads);
    bool padded = pads[0] || pads[1] || pads[2] || pads[3];
    if (conv && (attr_int(d, "pad_value", 0) != 0 ||
                 (padded && (-ly.x->off < 0 || -ly.x->off > nmax)))) {
        report_line(lc->pass, "layer %s (conv2d): kept float: 0.0 is not a level of its input "
                              "quant, so padding has no code", lname);
        goto done;
    }
    int64_t vmax = llabs(ly.x->off) > llabs(ly.x->off + nmax) ? llabs(ly.x->off)
                                                              : llabs(ly.x->off + nmax);
    ly.exact = dense_is_exact(&ly, vmax);
    match_chain(g, d, &ch);
    int64_t L = !ch.end ? 0 : ch.end->op == OP_QUANT ? ch.q.hi - ch.q.lo : 1;
    bool tail = !ch.end;
    if (tail && !ly.exact) {
        report_line(lc->pass,
                    "layer %s (%s, %lldx%lld): kept float: no quant or binarize follows, and "
                    "the float sum rounds (scales %g x %g), so integer accumulation would "
                    "change its value",
                    lname, opname, (long long)O, (long long)K, (double)ly.x->scale,
                    (double)ly.sw[0]);
        goto done;
    }
    int64_t nambig = 0;
    if (!tail) {
        t = xmalloc((size_t)(O * L) * sizeof *t);
        dir = xmalloc((size_t)O);
        if (!compute_layer(&ly, &ch, L, t, dir, &nambig, why, sizeof why)) {
            report_line(lc->pass, "layer %s (%s, %lldx%lld): kept float: %s", lname, opname,
                        (long long)O, (long long)K, why);
            goto done;
        }
    }
    /* The integer layer. */
    int xbits = xbits_of(nmax);
    int64_t td[2] = {O, L}, od[1] = {O}, cd[3] = {O, 1, 1};
    char base[256];
    snprintf(base, sizeof base, "%s.wq", d->out[0]->name);
    Value *wq = new_const(g, base, TY_I8, d->in[1]->type.rank, d->in[1]->type.dim, ly.u);
    Op qop = conv ? OP_QCONV2D : OP_QDENSE;
    Value *in[4] = {ly.x->codes, wq, NULL, NULL};
    Type at = d->out[0]->type;
    at.dtype = TY_I32;
    bool fuse = ch.end && ch.end->op == OP_QUANT && lc->pass->opts->opt_level >= 2;
    Node *qd = NULL;
    if (!fuse) {
        snprintf(base, sizeof base, "%s.acc", d->out[0]->name);
        qd = insert_node(g, qop, 2, in, base, at, d, d);
        set_q_attrs(qd, d, xbits, padded ? -ly.x->off : 0);
    }
    int wmin = 0, wmax = 0;
    for (int64_t i = 0; i < O * K; i++) {
        wmin = ly.u[i] < wmin ? ly.u[i] : wmin;
        wmax = ly.u[i] > wmax ? ly.u[i] : wmax;
    }
    if (tail) {
        /* Exact case: cast(acc) + off*U, times s*sw, (+ bias): each step exact or the same
         * float op as the model's, so the result is the float dense's, bit for bit. */
        float *offu = xmalloc((size_t)O * sizeof *offu), *kk = xmalloc((size_t)O * sizeof *kk);
        for (int64_t o = 0; o < O; o++) {
            offu[o] = (float)(ly.x->off * ly.usum[O + o]);
            kk[o] = ly.x->scale * ly.sw[o];
        }
        Type ft = d->out[0]->type;
        snprintf(base, sizeof base, "%s.accf", d->out[0]->name);
        Value *cur = qd->out[0];
        Node *c = insert_node(g, OP_CAST, 1, &cur, base, ft, d, d);
        set_attr_str(c, "to", "f32");
        cur = c->out[0];
        if (ly.x->off) {
            snprintf(base, sizeof base, "%s.off", d->out[0]->name);
            Value *ai[2] = {cur, conv ? new_const(g, base, TY_F32, 3, cd, offu)
                                      : new_const(g, base, TY_F32, 1, od, offu)};
            cur = insert_node(g, OP_ADD, 2, ai, base, ft, d, d)->out[0];
        }
        snprintf(base, sizeof base, "%s.scale", d->out[0]->name);
        Value *mi[2] = {cur, conv ? new_const(g, base, TY_F32, 3, cd, kk)
                                  : new_const(g, base, TY_F32, 1, od, kk)};
        if (d->nin == 3) {
            cur = insert_node(g, OP_MUL, 2, mi, base, ft, d, d)->out[0];
            /* conv2d adds its bias per channel: as an elementwise add it needs [O,1,1]. */
            snprintf(base, sizeof base, "%s.bias", d->out[0]->name);
            Value *bi[2] = {cur, conv ? new_const(g, base, TY_F32, 3, cd, d->in[2]->data)
                                      : d->in[2]};
            rewrite_node(d, OP_ADD, 2, bi);
        } else {
            rewrite_node(d, OP_MUL, 2, mi);
        }
        free(offu);
        free(kk);
        report_line(lc->pass,
                    "layer %s (%s, %lldx%lld): %s over %d-bit codes x weights in "
                    "[%d, %d], float epilogue kept (the model's float sum is exact: no rounding)",
                    lname, opname, (long long)O, (long long)K, op_info(qop)->name, xbits, wmin,
                    wmax);
        lc->layers++;
        goto done;
    }
    snprintf(base, sizeof base, "%s.t", d->out[0]->name);
    Value *tv = L > 1 || ch.end->op == OP_QUANT ? new_const(g, base, TY_I32, 2, td, t)
                                                : new_const(g, base, TY_I32, 1, od, t);
    snprintf(base, sizeof base, "%s.dir", d->out[0]->name);
    Value *dv = new_const(g, base, TY_I8, 1, od, dir);
    if (ch.end->op == OP_BINARIZE) {
        Value *ti[3] = {qd->out[0], tv, dv};
        rewrite_node(ch.end, OP_THRESHOLD, 3, ti); /* keeps the bit result and its name */
    } else {
        Type ct = at;
        snprintf(base, sizeof base, "%s.codes", ch.end->out[0]->name);
        Node *codes;
        if (fuse) {
            in[2] = tv;
            in[3] = dv;
            codes = insert_node(g, qop, 4, in, base, ct, d, d);
            set_q_attrs(codes, d, xbits, padded ? -ly.x->off : 0);
        } else {
            Value *ti[3] = {qd->out[0], tv, dv};
            codes = insert_node(g, OP_THRESHOLD, 3, ti, base, ct, d, ch.end);
        }
        Codes *nc = add_codes(lc, ch.end->out[0], codes->out[0], &ch.q);
        if (!zero_sign_blind(g, ch.end->out[0]))
            goto reported; /* the quant stays, on the float path, for its other readers */
        /* The quant's float result from the codes: (n + off) is exact, then the same
         * multiplication by the scale, so the same value; only a zero's sign may differ (quant
         * gives -0 where rounding gives -0 and zeropt is 0), which its readers cannot see. */
        Type ft = ch.end->out[0]->type;
        snprintf(base, sizeof base, "%s.levels", ch.end->out[0]->name);
        Value *cv = codes->out[0];
        Node *c = insert_node(g, OP_CAST, 1, &cv, base, ft, ch.end, ch.end);
        set_attr_str(c, "to", "f32");
        float offf = (float)nc->off;
        int64_t one[1] = {1};
        snprintf(base, sizeof base, "%s.off", ch.end->out[0]->name);
        Value *ai[2] = {c->out[0], new_const(g, base, TY_F32, 1, one, &offf)};
        Node *a = insert_node(g, OP_ADD, 2, ai, base, ft, ch.end, ch.end);
        Value *mi[2] = {a->out[0], ch.end->in[1]};
        rewrite_node(ch.end, OP_MUL, 2, mi);
    }
reported:
    if (ly.nsearched)
        snprintf(searched, sizeof searched,
                 "; in %lld of %lld channels, past %lld accumulators, by a binary search of the monotone chain "
                 "instead",
                 (long long)ly.nsearched, (long long)O, (long long)ly.enumerate);
    report_line(lc->pass,
                "layer %s (%s, %lldx%lld): %s over %d-bit codes x weights in [%d, %d] "
                "%s %s (%s for every accumulator in each channel's reachable range%s)",
                lname, opname, (long long)O, (long long)K, op_info(qop)->name, xbits, wmin, wmax,
                fuse ? "with fused" : "+", L > 1 ? "multi-level integer thresholds"
                                                 : "integer threshold",
                ly.exact ? "exact: the float sum never rounds; checked"
                         : "exact: the float path's level is the same at both ends of its "
                           "rounding interval",
                searched);
    lc->layers++;
done:
    free(t);
    free(dir);
    free(ly.u);
    free(ly.sw);
    free(ly.amin);
    free(ly.amax);
    free(ly.usum);
}

/* Whether no live node reads v and it is no graph output. */
static bool unread(const Graph *g, const Value *v) {
    for (int i = 0; i < g->nnodes; i++)
        for (int j = 0; !g->nodes[i]->dead && j < g->nodes[i]->nin; j++)
            if (g->nodes[i]->in[j] == v)
                return false;
    return !is_graph_output(g, v);
}

/* maxpool(quant(x)) -> quant(maxpool(x)), so that a conv after a pool of quantized values
 * (a Brevitas QuantReLU, then MaxPool: a ResNet's stem) reads a quant and can take its codes.
 * Exact: a quant of scalar scale > 0 is monotone non-decreasing, so the max of the quantized
 * values is the quantized max (equal floats are equal bits but for a zero's sign); NaN maps
 * to NaN both ways, and the pool keeps a window's first NaN either way. The one difference is
 * -0.0, which quant gives for an x in [-scale/2, 0) when the zero point is 0: the pool of
 * {-0.0, +0.0} keeps the first. So the rewrite needs a non-zero zero point or an input that
 * is never negative (a relu's). The old quant stays for other readers (cleanup drops the
 * pool's other values when none is left). */
static void hoist_quant_over_maxpool(LowbitContext *lc) {
    Graph *g = lc->g;
    /* The pools first: inserting nodes moves the later ones in g->nodes. */
    Node **pools = xcalloc((size_t)g->nnodes + 1, sizeof *pools);
    int npools = 0;
    for (int i = 0; i < g->nnodes; i++)
        if (!g->nodes[i]->dead && g->nodes[i]->op == OP_MAXPOOL)
            pools[npools++] = g->nodes[i];
    for (int i = 0; i < npools; i++) {
        Node *mp = pools[i];
        QParams qp;
        if (mp->in[0]->kind != VAL_NODE ||
            mp->in[0]->type.dtype != TY_F32 || !mp->in[0]->def ||
            !get_qparams(mp->in[0]->def, &qp))
            continue;
        Node *qn = qp.n;
        const Value *x = qn->in[0];
        bool nonneg = x->kind == VAL_NODE && x->def && x->def->op == OP_RELU;
        if (qp.zeropt == 0.0f && !nonneg)
            continue;
        char base[256];
        snprintf(base, sizeof base, "%s.f", mp->out[0]->name);
        Node *pool = insert_node(g, OP_MAXPOOL, 1, &qn->in[0], base, mp->out[0]->type, mp, mp);
        copy_attrs(pool, mp);
        Value *qin[4] = {pool->out[0], qn->in[1], qn->in[2], qn->in[3]};
        snprintf(base, sizeof base, "%s.q", mp->out[0]->name);
        Node *q = insert_node(g, OP_QUANT, 4, qin, base, mp->out[0]->type, mp, qn);
        copy_attrs(q, qn);
        replace_all_uses(g, mp->out[0], q->out[0]);
        remove_node(g, mp);
        if (unread(g, qn->out[0])) /* so that the relu has one reader again (a fused stem) */
            remove_node(g, qn);
        char lname[160];
        layer_name(mp, lname, sizeof lname);
        report_line(lc->pass, "layer %s (maxpool of a quant): the quant moved after the pool "
                              "(exact: the quant is monotone), so its readers take codes", lname);
    }
    free(pools);
}

int run_lowbit(Graph *g, PassContext *ctx) {
    LowbitContext lc = {ctx, g, NULL, 0, 0, 0};
    int n = 0;
    hoist_quant_over_maxpool(&lc);
    Node **cand = xcalloc((size_t)g->nnodes + 1, sizeof *cand);
    for (int i = 0; i < g->nnodes; i++) {
        Node *d = g->nodes[i];
        if (!d->dead && (d->op == OP_DENSE || d->op == OP_CONV2D) &&
            d->in[0]->type.dtype == TY_F32 &&
            d->in[1]->kind == VAL_CONST && d->in[1]->type.dtype == TY_F32 &&
            d->in[0]->kind == VAL_NODE && d->in[0]->def &&
            (d->in[0]->def->op == OP_QUANT ||
             (d->in[0]->def->op == OP_RESHAPE && d->in[0]->def->in[0]->kind == VAL_NODE &&
              d->in[0]->def->in[0]->def->op == OP_QUANT)))
            cand[n++] = d;
    }
    for (int i = 0; i < n; i++)
        rewrite_layer(&lc, cand[i]);
    if (n)
        report_line(ctx, "%d of %d quantized dense/conv layers on integer codes", lc.layers, n);
    free(cand);
    free(lc.codes);
    return 0;
}
