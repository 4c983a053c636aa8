/* fold-thresholds: requires result types (infer-shapes); exact float evaluation as in
 * ir/interp.c. Changes: acc -> cast/mul/add/sub/div/batchnorm/relu/clip/sign/maxpool ->
 * binarize (or f32 threshold) becomes threshold(acc, t:i32[C], dir:i8[C]), exact for
 * every accumulator in [-K, K]; the float chain stays where it is still used. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

#define MAX_STEPS 32

typedef enum {
    ST_CAST,    /* i32 -> f32 */
    ST_MUL,     /* x * k */
    ST_ADD,     /* x + k */
    ST_SUB,     /* x - k */
    ST_RSUB,    /* k - x */
    ST_DIV,     /* x / k */
    ST_BN,      /* batchnorm_scalar */
    ST_RELU,
    ST_CLIP,
    ST_SIGN,
    ST_MAXPOOL, /* on floats: handled by moving it after the threshold */
    ST_RESHAPE, /* keeps batch and channel axes (Unsqueeze/Squeeze around a batch-norm) */
} StepKind;

typedef struct Step {
    StepKind kind;
    Node *n;
    const Value *k[4]; /* per-channel constants */
    int64_t *idx[4];   /* element of k[i] for each channel */
    int nk;
    float lo, hi, eps;
} Step;

typedef struct Chain {
    Node *layer; /* the binary conv2d / dense */
    Node *end;   /* binarize, or threshold over f32 */
    int nsteps;
    Step steps[MAX_STEPS]; /* in evaluation order, accumulator first */
    int pool;              /* index of the ST_MAXPOOL step, or -1 */
    int64_t channels, fan_in;
} Chain;

typedef struct FoldContext {
    PassContext *pass;
    Graph *g;
    int folded, refused;
    const Node **kept; /* binary layers whose chain was refused (reported already) */
    int nkept;
} FoldContext;

static void free_chain(Chain *ch) {
    for (int i = 0; i < ch->nsteps; i++)
        for (int j = 0; j < ch->steps[i].nk; j++)
            free(ch->steps[i].idx[j]);
    ch->nsteps = 0;
}

static const char *step_name(StepKind k) {
    static const char *const names[] = {"cast", "mul", "add", "sub", "sub", "div", "batchnorm",
                                        "relu", "clip", "sign", "maxpool", "reshape"};
    return names[k];
}

/* ---------------------------------------------------------------- matching */

/* Record per-channel constant k of step s, checked against the op's float operand type. */
static bool take_const(Step *s, const Value *k, const Type *x, int64_t channels) {
    if (k->kind != VAL_CONST || k->type.dtype != TY_F32)
        return false;
    int64_t *idx = xmalloc((size_t)(channels ? channels : 1) * sizeof *idx);
    if (s->kind == ST_BN) { /* batchnorm parameters are [C], indexed by axis 1 */
        for (int64_t c = 0; c < channels; c++)
            idx[c] = c;
    } else if (!const_per_channel(k, x, idx)) {
        free(idx);
        return false;
    }
    s->k[s->nk] = k;
    s->idx[s->nk] = idx;
    s->nk++;
    return true;
}

/* The elementwise ops keep their float operand's shape; a broadcast that grows it is
 * not per-channel. */
static bool same_shape(const Type *a, const Type *b) {
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i])
            return false;
    return true;
}

/* The binary layer behind v, following the computed operand of each op, or NULL. */
static Node *binary_layer_behind(const Value *v) {
    for (int hops = 0; hops < 64 && v->kind == VAL_NODE && v->def; hops++) {
        Node *n = v->def;
        if (is_binary_layer(n))
            return n;
        if (n->nin == 0)
            break;
        v = n->nin > 1 && n->in[0]->kind == VAL_CONST ? n->in[1] : n->in[0];
    }
    return NULL;
}

/* Walk back from end's float operand to a binary layer's accumulator. On failure, why
 * says what stopped it when a binary layer is behind the chain (else it is empty). */
static bool match_chain(Node *end, Chain *ch, char *why, size_t whylen) {
    memset(ch, 0, sizeof *ch);
    ch->end = end;
    ch->pool = -1;
    why[0] = '\0';
    Step rev[MAX_STEPS];
    int nrev = 0;
    Value *v = end->in[0];
    int64_t channels = v->type.rank >= 2 ? v->type.dim[1] : -1;
    if (channels <= 0)
        return false;
    for (;;) {
        if (v->kind != VAL_NODE || !v->def || nrev == MAX_STEPS)
            goto fail;
        Node *n = v->def;
        Step s;
        memset(&s, 0, sizeof s);
        s.n = n;
        const Type *out = &n->out[0]->type;
        Value *next = NULL;
        switch (n->op) {
        case OP_CAST:
            if (n->in[0]->type.dtype != TY_I32 || out->dtype != TY_F32)
                goto fail;
            s.kind = ST_CAST;
            next = n->in[0];
            break;
        case OP_MUL:
        case OP_ADD:
        case OP_SUB:
        case OP_DIV: {
            int ki = n->in[1]->kind == VAL_CONST ? 1 : n->in[0]->kind == VAL_CONST ? 0 : -1;
            if (ki < 0 || n->in[1 - ki]->kind == VAL_CONST || out->dtype != TY_F32) {
                snprintf(why, whylen, "%s of two computed values", op_info(n->op)->name);
                goto fail;
            }
            if (n->op == OP_DIV && ki == 0) {
                snprintf(why, whylen, "division of a constant by the accumulator");
                goto fail;
            }
            next = n->in[1 - ki];
            s.kind = n->op == OP_MUL ? ST_MUL : n->op == OP_ADD ? ST_ADD
                   : n->op == OP_SUB ? (ki == 1 ? ST_SUB : ST_RSUB) : ST_DIV;
            if (!same_shape(&next->type, out) || !take_const(&s, n->in[ki], out, channels)) {
                for (int j = 0; j < s.nk; j++)
                    free(s.idx[j]);
                snprintf(why, whylen, "%s by a constant that is not per-channel",
                         op_info(n->op)->name);
                goto fail;
            }
            break;
        }
        case OP_BATCHNORM:
            s.kind = ST_BN;
            s.eps = attr_float(n, "epsilon", 1e-5f);
            next = n->in[0];
            for (int i = 1; i < 5; i++)
                if (!take_const(&s, n->in[i], out, channels)) {
                    for (int j = 0; j < s.nk; j++)
                        free(s.idx[j]);
                    snprintf(why, whylen, "batchnorm with computed parameters");
                    goto fail;
                }
            break;
        case OP_RELU:
        case OP_SIGN:
        case OP_CLIP:
            if (out->dtype != TY_F32)
                goto fail;
            s.kind = n->op == OP_RELU ? ST_RELU : n->op == OP_SIGN ? ST_SIGN : ST_CLIP;
            s.lo = attr_float(n, "min", -INFINITY);
            s.hi = attr_float(n, "max", INFINITY);
            next = n->in[0];
            break;
        case OP_MAXPOOL:
            if (out->dtype != TY_F32 || n->in[0]->type.dim[1] != channels)
                goto fail;
            for (int i = 0; i < nrev; i++)
                if (rev[i].kind == ST_MAXPOOL) {
                    snprintf(why, whylen, "more than one maxpool");
                    goto fail;
                }
            {
                /* Every window must hold an input position (no dilation): then max
                 * over the window is one of the accumulators, never -inf. */
                int64_t dil[2] = {1, 1};
                attr_ints(n, "dilations", dil, 2, 2, dil);
                if (dil[0] != 1 || dil[1] != 1) {
                    snprintf(why, whylen, "dilated maxpool");
                    goto fail;
                }
            }
            s.kind = ST_MAXPOOL;
            next = n->in[0];
            break;
        case OP_RESHAPE: {
            /* Row-major: with the first two axes equal, every element keeps its channel. */
            const Type *it = &n->in[0]->type;
            if (out->dtype != TY_F32 || it->rank < 2 || out->rank < 2 ||
                it->dim[0] != out->dim[0] || it->dim[1] != out->dim[1]) {
                snprintf(why, whylen, "reshape that moves the channel axis");
                goto fail;
            }
            s.kind = ST_RESHAPE;
            next = n->in[0];
            break;
        }
        default:
            snprintf(why, whylen, "%s", op_info(n->op)->name);
            goto fail;
        }
        rev[nrev++] = s;
        if (s.kind != ST_MAXPOOL && s.kind != ST_CAST && s.kind != ST_RESHAPE &&
            !same_shape(&next->type, out)) {
            snprintf(why, whylen, "%s changes the shape", op_info(n->op)->name);
            goto fail;
        }
        if (s.kind == ST_CAST) {
            Node *layer = next->kind == VAL_NODE ? next->def : NULL;
            if (!layer || !is_binary_layer(layer))
                goto fail;
            ch->layer = layer;
            break;
        }
        v = next;
    }
    ch->channels = channels;
    ch->fan_in = binary_layer_fan_in(ch->layer);
    for (int i = 0; i < nrev; i++) {
        ch->steps[i] = rev[nrev - 1 - i];
        if (ch->steps[i].kind == ST_MAXPOOL)
            ch->pool = i;
    }
    ch->nsteps = nrev;
    return true;
fail:
    for (int i = 0; i < nrev; i++)
        for (int j = 0; j < rev[i].nk; j++)
            free(rev[i].idx[j]);
    ch->layer = why[0] ? binary_layer_behind(v) : NULL;
    if (!ch->layer)
        why[0] = '\0';
    return false;
}

/* ---------------------------------------------------------------- exact evaluation */

static float kval(const Step *s, int i, int64_t c) {
    return ((const float *)s->k[i]->data)[s->idx[i][c]];
}

/* Apply steps [from, to) to x for channel c, in float32, as the interpreter does. */
static float eval_steps(const Chain *ch, int from, int to, int64_t c, float x) {
    for (int i = from; i < to; i++) {
        const Step *s = &ch->steps[i];
        switch (s->kind) {
        case ST_CAST: break; /* x is already (float)y */
        case ST_MUL: x = x * kval(s, 0, c); break;
        case ST_ADD: x = x + kval(s, 0, c); break;
        case ST_SUB: x = x - kval(s, 0, c); break;
        case ST_RSUB: x = kval(s, 0, c) - x; break;
        case ST_DIV: x = x / kval(s, 0, c); break;
        case ST_BN:
            x = batchnorm_scalar(x, kval(s, 0, c), kval(s, 1, c), kval(s, 2, c), kval(s, 3, c),
                                 s->eps);
            break;
        case ST_RELU: x = x < 0.0f ? 0.0f : x; break;
        case ST_CLIP: x = x < s->lo ? s->lo : x; x = x > s->hi ? s->hi : x; break;
        case ST_SIGN: x = x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x == 0.0f ? 0.0f : x; break;
        case ST_MAXPOOL: break; /* handled by the caller */
        case ST_RESHAPE: break;
        }
    }
    return x;
}

/* The bit the end op gives for float x on channel c (binarize or f32 threshold). */
static int end_bit(const Node *end, int64_t c, float x) {
    if (end->op == OP_BINARIZE) {
        if (x > 0.0f)
            return 1;
        if (x == 0.0f)
            return attr_int(end, "zero", 1) == 1;
        return 0; /* negative or NaN */
    }
    const Value *t = end->in[1];
    float tc = ((const float *)t->data)[t->type.dim[0] == 1 ? 0 : c];
    int dir = 1;
    if (end->nin == 3) {
        const Value *d = end->in[2];
        dir = ((const int8_t *)d->data)[d->type.dim[0] == 1 ? 0 : c];
    }
    return dir > 0 ? x >= tc : x <= tc;
}

/* Find t, dir for channel c such that (dir>0 ? y >= t : y <= t) equals the float path's
 * bit for every y in [-K, K], then check it for every y. False with a reason if none. */
static bool fit_channel(const Chain *ch, int64_t c, const uint8_t *bits, int32_t *t, int8_t *dir,
                        char *why, size_t whylen) {
    int64_t k = ch->fan_in, n = 2 * k + 1;
    int d;
    if (!threshold_of_bits(bits, k, t, &d)) {
        snprintf(why, whylen, "channel %lld: the float path is not monotone in the accumulator",
                 (long long)c);
        return false;
    }
    *dir = (int8_t)d;
    for (int64_t i = 0; i < n; i++) {
        int64_t y = i - k;
        int b = *dir > 0 ? y >= *t : y <= *t;
        if (b != bits[i]) {
            snprintf(why, whylen, "channel %lld: no integer threshold reproduces y=%lld",
                     (long long)c, (long long)y);
            return false;
        }
    }
    return true;
}

/* Per channel: the pre-pool part must not decrease in y, so that max over the window
 * commutes with it (max g(y_i) == g(max y_i)). */
static bool prepool_nondecreasing(const Chain *ch, int64_t c) {
    int64_t k = ch->fan_in;
    float prev = -INFINITY;
    for (int64_t y = -k; y <= k; y++) {
        float x = eval_steps(ch, 0, ch->pool, c, (float)y);
        if (isnan(x) || x < prev)
            return false;
        prev = x;
    }
    return true;
}

/* Compute thresholds for every channel. False with a reason when the chain cannot be
 * replaced exactly. */
static bool compute_thresholds(const Chain *ch, int32_t *t, int8_t *dir, int *nneg,
                               int *nconst, char *why, size_t whylen) {
    int64_t k = ch->fan_in, n = 2 * k + 1;
    uint8_t *bits = xmalloc((size_t)n);
    bool ok = true;
    *nneg = *nconst = 0;
    for (int64_t c = 0; c < ch->channels && ok; c++) {
        if (ch->pool >= 0 && !prepool_nondecreasing(ch, c)) {
            snprintf(why, whylen,
                     "channel %lld: the ops before the maxpool decrease with the accumulator",
                     (long long)c);
            ok = false;
            break;
        }
        for (int64_t i = 0; i < n && ok; i++) {
            float x = eval_steps(ch, 0, ch->nsteps, c, (float)(i - k));
            if (isnan(x)) {
                snprintf(why, whylen, "channel %lld: the float path gives NaN at y=%lld",
                         (long long)c, (long long)(i - k));
                ok = false;
            }
            bits[i] = (uint8_t)end_bit(ch->end, c, x);
        }
        if (ok && !fit_channel(ch, c, bits, &t[c], &dir[c], why, whylen))
            ok = false;
        if (ok) {
            *nconst += t[c] == INT32_MIN;
            *nneg += t[c] != INT32_MIN && dir[c] < 0;
        }
    }
    free(bits);
    return ok;
}

/* ---------------------------------------------------------------- rewriting */

static void copy_pool_attrs(Node *to, const Node *pool) {
    static const char *const keys[] = {"kernel", "strides", "pads", "dilations"};
    for (int i = 0; i < 4; i++) {
        const Attr *a = get_attr(pool, keys[i]);
        if (a)
            set_attr_ints(to, keys[i], a->n, a->ints);
    }
    if (attr_int(pool, "ceil_mode", 0))
        set_attr_int(to, "ceil_mode", 1);
}

/* Remove the chain's nodes that nothing uses any more, last first. */
static void drop_unused_chain(Graph *g, Chain *ch) {
    for (int i = ch->nsteps - 1; i >= 0; i--) {
        Node *n = ch->steps[i].n;
        if (!n->dead && count_uses(g, n->out[0]) == 0)
            remove_node(g, n);
    }
}

static void describe_chain(const Chain *ch, char *buf, size_t len) {
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < ch->nsteps && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? "+" : "", step_name(ch->steps[i].kind));
    if (o < len)
        snprintf(buf + o, len - o, "+%s", op_info(ch->end->op)->name);
}

/* max over the window, then a threshold with decreasing channels: an AND of bits for
 * those, which only the fused op can say. Rewrite the end into
 * bconv2d {pool_before=1}: bit = threshold(max of the accumulators in the window). */
static void emit_pool_before(FoldContext *fc, Chain *ch, const int32_t *t, const int8_t *dir,
                             const char *lname, const char *desc, int nneg, int nconst) {
    Graph *g = fc->g;
    int64_t c = ch->channels, dims[1] = {c};
    char base[256];
    snprintf(base, sizeof base, "%s.t", ch->layer->out[0]->name);
    Value *tv = add_const_copy(g, base, make_type(TY_I32, 1, dims), t, (size_t)c * sizeof *t);
    snprintf(base, sizeof base, "%s.dir", ch->layer->out[0]->name);
    Value *dv = add_const_copy(g, base, make_type(TY_I8, 1, dims), dir, (size_t)c);
    Node *end = ch->end, *conv = ch->layer;
    const Node *pool = ch->steps[ch->pool].n;
    Value *in[4] = {conv->in[0], conv->in[1], tv, dv};
    rewrite_node(end, OP_BCONV2D, 4, in);
    copy_int_attrs(end, conv);
    PoolAttrs pa = read_pool_attrs(pool);
    set_fused_pool_attrs(end, &pa);
    set_attr_int(end, "pool_before", 1);
    node_set_src(end, conv->src_name, conv->src_op);
    drop_unused_chain(g, ch);
    if (count_uses(g, conv->out[0]) == 0)
        remove_node(g, conv);
    report_line(fc->pass,
                "layer %s (conv2d, K=%lld, %lld channels): %s -> bconv2d with the maxpool before "
                "an integer threshold (exact for every accumulator in [-%lld, %lld]; %d "
                "decreasing channels pool as AND, %d constant)",
                lname, (long long)ch->fan_in, (long long)c, desc, (long long)ch->fan_in,
                (long long)ch->fan_in, nneg, nconst);
    fc->folded++;
}

static int fold_chain(FoldContext *fc, Chain *ch) {
    Graph *g = fc->g;
    char why[256] = "", lname[160], desc[256];
    int64_t c = ch->channels;
    int32_t *t = xmalloc((size_t)c * sizeof *t);
    int8_t *dir = xmalloc((size_t)c * sizeof *dir);
    int nneg = 0, nconst = 0;
    layer_name(ch->layer, lname, sizeof lname);
    describe_chain(ch, desc, sizeof desc);
    bool ok = compute_thresholds(ch, t, dir, &nneg, &nconst, why, sizeof why);
    if (ok && ch->pool < 0 && !same_shape(&ch->end->out[0]->type, &ch->layer->out[0]->type)) {
        snprintf(why, sizeof why, "the chain ends in another shape than the accumulator's");
        ok = false;
    }
    for (int i = 0; ok && ch->pool >= 0 && i < ch->nsteps; i++)
        if (ch->steps[i].kind == ST_RESHAPE) {
            /* The pool moves onto the accumulator's own shape: no reshape may sit between. */
            snprintf(why, sizeof why, "maxpool and reshape in one chain");
            ok = false;
        }
    bool needs_and = false;
    for (int64_t i = 0; ok && ch->pool >= 0 && i < c; i++)
        needs_and |= t[i] != INT32_MIN && dir[i] < 0;
    if (ok && needs_and && fc->pass->opts->opt_level >= 2 && ch->layer->op == OP_CONV2D) {
        emit_pool_before(fc, ch, t, dir, lname, desc, nneg, nconst);
        free(t);
        free(dir);
        return 0;
    }
    if (ok && needs_and) {
        /* max then a decreasing threshold is an AND of bits: only the fused op can say
         * that (emitted above from -O2 on); below, the float path stays. */
        snprintf(why, sizeof why,
                 "maxpool before a threshold with negative-direction channels (AND of bits) "
                 "is not expressible without fusion");
        ok = false;
    }
    if (!ok) {
        report_line(fc->pass, "layer %s (%s, K=%lld): kept float %s: %s", lname,
                    op_info(ch->layer->op)->name, (long long)ch->fan_in, desc, why);
        fc->refused++;
        fc->kept[fc->nkept++] = ch->layer;
        free(t);
        free(dir);
        return 0;
    }
    char base[256];
    snprintf(base, sizeof base, "%s.t", ch->layer->out[0]->name);
    int64_t dims[1] = {c};
    Value *tv = add_const_copy(g, base, make_type(TY_I32, 1, dims), t, (size_t)c * sizeof *t);
    snprintf(base, sizeof base, "%s.dir", ch->layer->out[0]->name);
    Value *dv = add_const_copy(g, base, make_type(TY_I8, 1, dims), dir, (size_t)c);
    Value *acc = ch->layer->out[0];
    Node *end = ch->end;
    if (ch->pool < 0) {
        Value *in[3] = {acc, tv, dv};
        rewrite_node(end, OP_THRESHOLD, 3, in);
    } else {
        /* threshold at the accumulator's shape, then max of the bits (an OR, exact since
         * every non-constant channel increases): the pool moves after the threshold. */
        const Node *pool = ch->steps[ch->pool].n;
        snprintf(base, sizeof base, "%s.bits", acc->name);
        char *name = graph_unique_name(g, base);
        Type bt = acc->type;
        bt.dtype = TY_B1;
        Value *in[3] = {acc, tv, dv};
        const char *names[1] = {name};
        Node *thr = add_node(g, OP_THRESHOLD, 3, in, names, &bt);
        free(name);
        node_set_src(thr, end->src_name, end->src_op);
        move_node_before(g, thr, end);
        Value *pin[1] = {thr->out[0]};
        rewrite_node(end, OP_MAXPOOL, 1, pin);
        copy_pool_attrs(end, pool);
    }
    drop_unused_chain(g, ch);
    report_line(fc->pass,
                "layer %s (%s, K=%lld, %lld channels): %s -> integer threshold%s "
                "(exact for every accumulator in [-%lld, %lld]; %d decreasing, %d constant "
                "channels)",
                lname, op_info(ch->layer->op)->name, (long long)ch->fan_in, (long long)c, desc,
                ch->pool >= 0 ? " + maxpool on bits" : "", (long long)ch->fan_in,
                (long long)ch->fan_in, nneg, nconst);
    fc->folded++;
    free(t);
    free(dir);
    return 0;
}

static bool is_chain_end(const Node *n) {
    if (n->dead)
        return false;
    if (n->op == OP_BINARIZE)
        return n->in[0]->type.dtype == TY_F32;
    /* A float threshold with one level per channel (FINN MultiThreshold to one bit). */
    return n->op == OP_THRESHOLD && n->in[0]->type.dtype == TY_F32 &&
           n->in[1]->kind == VAL_CONST && n->in[1]->type.rank == 1 &&
           (n->nin < 3 || n->in[2]->kind == VAL_CONST);
}

/* Whether every accumulator a binary layer can produce sums exactly K terms of +-1, so
 * that it has K's parity: dense, or conv2d without zero padding. */
static bool full_taps(const Node *layer) {
    if (layer->op != OP_CONV2D || attr_int(layer, "pad_value", 0) != 0)
        return true;
    int64_t pads[4] = {0, 0, 0, 0};
    attr_ints(layer, "pads", pads, 4, 4, pads);
    return !(pads[0] || pads[1] || pads[2] || pads[3]);
}

bool float_chain_never_zero(Node *user, char *why, size_t whylen) {
    Chain ch;
    why[0] = '\0';
    if (!match_chain(user, &ch, why, whylen)) {
        if (!why[0])
            snprintf(why, whylen, "its input is not a per-channel function of a binary "
                                  "accumulator, so it may be 0");
        return false;
    }
    /* A maxpool gives one of its inputs, so it is enough that none of them is 0. */
    int64_t k = ch.fan_in, step = full_taps(ch.layer) ? 2 : 1;
    bool ok = true;
    for (int64_t c = 0; c < ch.channels && ok; c++)
        for (int64_t y = -k; y <= k && ok; y += step) {
            float x = eval_steps(&ch, 0, ch.nsteps, c, (float)y);
            if (x == 0.0f || isnan(x)) {
                snprintf(why, whylen, "channel %lld gives %g at accumulator %lld",
                         (long long)c, (double)x, (long long)y);
                ok = false;
            }
        }
    free_chain(&ch);
    return ok;
}

int run_fold_thresholds(Graph *g, PassContext *ctx) {
    FoldContext fc = {ctx, g, 0, 0, NULL, 0};
    fc.kept = xcalloc((size_t)g->nnodes + 1, sizeof *fc.kept);
    int nnodes = g->nnodes; /* nodes added while folding are thresholds: not ends */
    for (int i = 0; i < nnodes; i++) {
        Node *n = g->nodes[i];
        if (!is_chain_end(n))
            continue;
        Chain ch;
        char why[256];
        if (!match_chain(n, &ch, why, sizeof why)) {
            if (why[0]) {
                char where[160];
                report_line(ctx, "%s: kept float: %s between a binary layer and it",
                            node_where(n, where, sizeof where), why);
                fc.kept[fc.nkept++] = ch.layer;
            }
            continue;
        }
        int rc = fold_chain(&fc, &ch);
        free_chain(&ch);
        if (rc) {
            free(fc.kept);
            return rc;
        }
    }
    /* Say what happened to every layer: binary with a threshold, or why not. */
    for (int i = 0; i < g->nnodes; i++) {
        Node *n = g->nodes[i];
        if (n->dead || (n->op != OP_CONV2D && n->op != OP_DENSE))
            continue;
        char lname[160];
        layer_name(n, lname, sizeof lname);
        if (!is_binary_layer(n)) {
            report_line(ctx, "layer %s (%s): float layer (%s x %s operands)", lname,
                        op_info(n->op)->name, dtype_name(n->in[0]->type.dtype),
                        dtype_name(n->in[1]->type.dtype));
            continue;
        }
        bool thresholded = false;
        for (int j = 0; j < fc.nkept; j++)
            thresholded |= fc.kept[j] == n;
        for (int j = 0; j < g->nnodes; j++) {
            Node *u = g->nodes[j];
            if (!u->dead && u->op == OP_THRESHOLD && u->in[0] == n->out[0])
                thresholded = true;
        }
        if (!thresholded)
            report_line(ctx,
                        "layer %s (%s, K=%lld): binary accumulator kept with its float "
                        "epilogue (no binarize reads it through a per-channel chain: an output "
                        "layer or a real-valued path)",
                        lname, op_info(n->op)->name, (long long)binary_layer_fan_in(n));
    }
    free(fc.kept);
    return 0;
}
