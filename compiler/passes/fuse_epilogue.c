/* fuse-epilogue: requires result types; runs after fold-thresholds / fuse-binary / lowbit, on
 * what they left float. Changes: a binary conv2d (dense) -> cast to f32 -> per-channel float ops
 * (batchnorm, mul/div/add/sub by a constant, relu) -> [add of a real-valued shortcut] ->
 * [binarize] becomes one bconv2d_chain (bdense_chain), a qconv2d -> cast -> the same ops ->
 * [shortcut add] -> [relu] -> [quantize and/or quant] one qconv2d_chain, and a float conv2d (the stem) -> the same float ops -> [maxpool] ->
 * [binarize, or quantize (and quant)] one conv2d_chain, each computing the very same float32
 * operations (docs/ir.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* The epilogue being built: stage s is v = v*a + b (v/a + b where div), then relu where asked;
 * a[c] at stage[2s][c], b[c] at stage[2s+1][c] (the chain constant's [S,2,O] layout). */
typedef struct Epi {
    int64_t o;
    int stages;
    int frozen;       /* stages before a max-pool: a later op never merges into them */
    float *data;      /* [2*CHAIN_MAX_STAGES][o] */
    int64_t div[CHAIN_MAX_STAGES], relu[CHAIN_MAX_STAGES];
    Buf what;         /* the absorbed ops, for the report */
} Epi;

static float *stage_a(Epi *e, int s) { return e->data + (2 * s) * e->o; }
static float *stage_b(Epi *e, int s) { return e->data + (2 * s + 1) * e->o; }

/* Append v = v*a + b (v/a + b): a plain add (a = 1) merges into a previous stage whose bias is
 * -0 and that has no relu, since (v*a + -0) is v*a exactly, so (v*a) + b rounds as the two
 * separate ops do. False when no stage is left. */
static bool push_stage(Epi *e, const float *a, const float *b, bool div) {
    bool plain_add = !div, prev_zero = e->stages > e->frozen && !e->relu[e->stages - 1];
    for (int64_t c = 0; c < e->o; c++) {
        plain_add = plain_add && a[c] == 1.0f;
        prev_zero = prev_zero && stage_b(e, e->stages - 1)[c] == 0.0f &&
                    signbit(stage_b(e, e->stages - 1)[c]);
    }
    if (plain_add && prev_zero) {
        memcpy(stage_b(e, e->stages - 1), b, (size_t)e->o * sizeof *b);
        return true;
    }
    if (e->stages == CHAIN_MAX_STAGES)
        return false;
    memcpy(stage_a(e, e->stages), a, (size_t)e->o * sizeof *a);
    memcpy(stage_b(e, e->stages), b, (size_t)e->o * sizeof *b);
    e->div[e->stages] = div;
    e->relu[e->stages] = 0;
    e->stages++;
    return true;
}

/* The f32 constant operand of an elementwise op m reading v, per channel of v, into k[o]. */
static bool per_channel_operand(const Node *m, const Value *v, float *k, int64_t o) {
    const Value *c = m->in[0] == v ? m->in[1] : m->in[0];
    if (c == v || c->kind != VAL_CONST || c->type.dtype != TY_F32)
        return false;
    int64_t *idx = xmalloc((size_t)o * sizeof *idx);
    bool ok = const_per_channel(c, &v->type, idx);
    for (int64_t ch = 0; ok && ch < o; ch++)
        k[ch] = ((const float *)c->data)[idx[ch]];
    free(idx);
    return ok;
}

/* mul, div, add, sub of v and a per-channel constant k as one stage, an exact rewrite of the
 * interpreter's op: v*k, v/k, v*1 + k, v*1 + (-k) (= v - k), k - v as v*(-1) + k. */
static bool push_elementwise(Epi *e, const Node *m, const Value *v) {
    if ((m->op != OP_MUL && m->op != OP_DIV && m->op != OP_ADD && m->op != OP_SUB) ||
        (m->op == OP_DIV && m->in[0] != v)) /* k / v is no stage */
        return false;
    float *k = xmalloc((size_t)e->o * 4), *a = xmalloc((size_t)e->o * 4),
          *b = xmalloc((size_t)e->o * 4);
    bool ok = per_channel_operand(m, v, k, e->o);
    bool mul = m->op == OP_MUL || m->op == OP_DIV, rsub = m->op == OP_SUB && m->in[1] == v;
    for (int64_t c = 0; ok && c < e->o; c++) {
        a[c] = mul ? k[c] : rsub ? -1.0f : 1.0f;
        b[c] = mul ? -0.0f : m->op == OP_SUB && !rsub ? -k[c] : k[c];
    }
    ok = ok && push_stage(e, a, b, m->op == OP_DIV);
    free(k);
    free(a);
    free(b);
    return ok;
}

/* batchnorm with constant f32[o] parameters as ir/interp.c evaluates it,
 * (x - mean) / sqrtf(var + eps) * scale + bias: the stages v*1 + (-mean),
 * v / sqrtf(var + eps) + (-0), v*scale + bias. */
static bool push_batchnorm(Epi *e, const Node *m) {
    for (int i = 1; i < 5; i++)
        if (m->in[i]->kind != VAL_CONST || m->in[i]->type.dtype != TY_F32 ||
            m->in[i]->type.rank != 1 || m->in[i]->type.dim[0] != e->o)
            return false;
    int first = e->stages; /* may merge into the previous stage */
    if (first + 3 - (first > e->frozen) > CHAIN_MAX_STAGES)
        return false;
    const float *scale = m->in[1]->data, *bias = m->in[2]->data, *mean = m->in[3]->data,
                *var = m->in[4]->data;
    float eps = attr_float(m, "epsilon", 1e-5f);
    float *one = xmalloc((size_t)e->o * 4), *nmean = xmalloc((size_t)e->o * 4),
          *den = xmalloc((size_t)e->o * 4), *zero = xmalloc((size_t)e->o * 4);
    for (int64_t c = 0; c < e->o; c++) {
        one[c] = 1.0f;
        nmean[c] = -mean[c];
        den[c] = sqrtf(var[c] + eps);
        zero[c] = -0.0f;
    }
    int before = e->stages;
    bool ok = push_stage(e, one, nmean, false) && push_stage(e, den, zero, true) &&
              push_stage(e, scale, bias, false);
    if (!ok) /* out of stages: leave the chain as it was */
        e->stages = before;
    free(one);
    free(nmean);
    free(den);
    free(zero);
    return ok;
}

/* relu after the last stage (an identity stage v*1 + -0 first when there is none). */
static bool push_relu(Epi *e) {
    if (e->stages == e->frozen || e->relu[e->stages - 1]) {
        float *one = xmalloc((size_t)e->o * 4), *zero = xmalloc((size_t)e->o * 4);
        for (int64_t c = 0; c < e->o; c++)
            one[c] = 1.0f, zero[c] = -0.0f;
        bool ok = push_stage(e, one, zero, false);
        free(one);
        free(zero);
        if (!ok)
            return false;
    }
    e->relu[e->stages - 1] = 1;
    return true;
}

/* Absorb m, the only reader of v, into the chain; false (chain unchanged) if it is not a
 * per-channel float op of v that fits. */
static bool absorb(Epi *e, const Node *m, const Value *v) {
    if (!type_equal(&m->out[0]->type, &v->type))
        return false;
    switch (m->op) {
    case OP_BATCHNORM: return m->in[0] == v && push_batchnorm(e, m);
    case OP_RELU: return push_relu(e);
    default: return push_elementwise(e, m, v);
    }
}

/* Give node `to` the result value of `from` as its result j (names and readers stay), and
 * `from` the placeholder `to` had: `from` is removed afterwards. */
static void take_result(Node *to, int j, Node *from) {
    Value *v = from->out[0], *tmp = to->out[j];
    to->out[j] = v;
    v->def = to;
    v->def_index = j;
    from->out[0] = tmp;
    tmp->def = from;
    tmp->def_index = 0;
}

/* The first binarize reading v, or NULL. */
static Node *binarize_of(const Graph *g, const Value *v) {
    for (int i = 0; i < g->nnodes; i++) {
        Node *n = g->nodes[i];
        if (!n->dead && n->op == OP_BINARIZE && n->in[0] == v)
            return n;
    }
    return NULL;
}

/* Whether v is a graph input or the result of a node before n. */
static bool defined_before(const Graph *g, const Value *v, const Node *n) {
    if (v->kind != VAL_NODE)
        return true;
    for (int i = 0; i < g->nnodes && g->nodes[i] != n; i++)
        if (g->nodes[i] == v->def)
            return true;
    return false;
}

#define MAX_ABSORBED 64

/* A match: the layer, the ops absorbed after it (in order; the last one's result, else the
 * layer's, is the fused op's f32 result), the epilogue, the binarize (for a qconv2d: the
 * quantize) whose value the fused op's second result takes over, if any. */
typedef struct Match {
    Node *layer;
    Node *gone[MAX_ABSORBED];
    int ngone;
    Value *v; /* the float value the fused op's f32 result takes over */
    Epi e;
    Node *bin;
} Match;

static void start_match(Match *mt, Node *layer, int64_t o) {
    memset(mt, 0, sizeof *mt);
    mt->layer = layer;
    mt->v = layer->out[0];
    mt->e.o = o;
    mt->e.data = xcalloc((size_t)(2 * CHAIN_MAX_STAGES * o), sizeof *mt->e.data);
}

static void take_op(Match *mt, Node *m, const char *what) {
    buf_printf(&mt->e.what, "%s%s", mt->ngone ? "+" : "", what);
    mt->gone[mt->ngone++] = m;
    mt->v = m->out[0];
}

/* The per-channel float ops after mt->v, each its value's only reader. */
static void absorb_ops(Graph *g, Match *mt) {
    Node *m;
    while (mt->ngone < MAX_ABSORBED - 2 && (m = single_user(g, mt->v)) && absorb(&mt->e, m, mt->v))
        take_op(mt, m, op_info(m->op)->name);
}

/* absorb_ops, with at least one stage (the identity v*1 + -0 when none). */
static void absorb_chain(Graph *g, Match *mt) {
    absorb_ops(g, mt);
    if (!mt->e.stages) {
        float *one = xmalloc((size_t)mt->e.o * 4), *zero = xmalloc((size_t)mt->e.o * 4);
        for (int64_t c = 0; c < mt->e.o; c++)
            one[c] = 1.0f, zero[c] = -0.0f;
        push_stage(&mt->e, one, zero, false);
        free(one);
        free(zero);
    }
}

/* Replace the match by one op over in[0..nin-1] (the chain constant goes in at chain_at), in
 * the layer's place, with the layer's int attributes and the epilogue's; returns it. */
static Node *replace_match(Graph *g, Match *mt, Op op, Value **in, int nin, int chain_at) {
    Epi *e = &mt->e;
    int64_t cd[3] = {e->stages, 2, e->o};
    char base[256];
    snprintf(base, sizeof base, "%s.chain", mt->v->name);
    in[chain_at] = add_const_copy(g, base, make_type(TY_F32, 3, cd), e->data,
                                  (size_t)(2 * e->stages * e->o) * sizeof *e->data);
    bool codes = op == OP_QCONV2D_CHAIN;
    Type types[2] = {mt->v->type, mt->v->type};
    types[1].dtype = codes ? TY_I32 : TY_B1;
    memset(&types[1].pack, 0, sizeof types[1].pack);
    if (mt->bin)
        types[1] = mt->bin->out[0]->type;
    /* Result 0 takes over v, result 1 the binarize's (quantize's) value; without one it is
     * named after v. */
    char *tmp0 = graph_unique_name(g, "chain.y");
    snprintf(base, sizeof base, "%s.%s", mt->v->name, codes ? "codes" : "bits");
    char *tmp1 = graph_unique_name(g, mt->bin ? "chain.bits" : base);
    const char *names[2] = {tmp0, tmp1};
    Node *f = add_node(g, op, nin, in, names, types);
    free(tmp0);
    free(tmp1);
    move_node_before(g, f, mt->layer);
    f->loc = mt->layer->loc;
    node_set_src(f, mt->layer->src_name, mt->layer->src_op);
    copy_int_attrs(f, mt->layer);
    bool any_div = false, any_relu = false;
    for (int s = 0; s < e->stages; s++)
        any_div |= e->div[s] != 0, any_relu |= e->relu[s] != 0;
    if (any_div)
        set_attr_ints(f, "div", e->stages, e->div);
    if (any_relu)
        set_attr_ints(f, "relu", e->stages, e->relu);
    take_result(f, 0, mt->ngone ? mt->gone[mt->ngone - 1] : mt->layer);
    if (mt->bin) {
        if (!codes && attr_int(mt->bin, "zero", 1) != 1)
            set_attr_int(f, "zero", attr_int(mt->bin, "zero", 1));
        take_result(f, 1, mt->bin);
        remove_node(g, mt->bin);
    }
    for (int i = 0; i < mt->ngone; i++)
        remove_node(g, mt->gone[i]);
    remove_node(g, mt->layer);
    return f;
}

static void report_match(PassContext *ctx, const Match *mt, const Node *f, const char *kind,
                         bool residual) {
    char lname[160];
    report_line(ctx, "layer %s (%s, K=%lld, %lld channels): %s -> %s (%d stage%s%s)",
                layer_name(f, lname, sizeof lname), kind, (long long)binary_layer_fan_in(f),
                (long long)mt->e.o, mt->e.what.data, op_info(f->op)->name, mt->e.stages,
                mt->e.stages == 1 ? "" : "s", residual ? ", residual" : "");
}

static void free_match(Match *mt) {
    free(mt->e.what.data);
    free(mt->e.data);
}

/* An integer layer whose accumulator only a cast to f32 reads: the match of the cast and the
 * per-channel float ops after it; false (nothing started) without that cast. */
static bool start_int_match(Graph *g, Match *mt, Node *conv) {
    Node *cast = single_user(g, conv->out[0]);
    if (!cast || cast->op != OP_CAST || cast->out[0]->type.dtype != TY_F32)
        return false;
    start_match(mt, conv, conv->out[0]->type.dim[1]);
    take_op(mt, cast, "cast");
    absorb_chain(g, mt);
    return true;
}

/* The real-valued shortcut after the chain: v + r or r + v (*first), r of v's type computed
 * before the layer (the fused op takes the layer's place; of two branches meeting in an add,
 * the later one takes it). The add joins the match; returns r, or NULL. */
static Value *take_shortcut(const Graph *g, Match *mt, bool *first) {
    Value *v = mt->v;
    Node *m = single_user(g, v);
    if (!m || m->op != OP_ADD)
        return NULL;
    Value *r = m->in[0] == v ? m->in[1] : m->in[0];
    if (r == v || r->kind == VAL_CONST || !type_equal(&r->type, &v->type) ||
        !type_equal(&m->out[0]->type, &v->type) || !defined_before(g, r, mt->layer))
        return NULL;
    *first = m->in[1] == v;
    take_op(mt, m, *first ? "add(shortcut first)" : "add(shortcut)");
    return r;
}

/* A binary conv2d / dense -> cast -> chain -> [shortcut add] -> [binarize]: bconv2d_chain /
 * bdense_chain. */
static bool fuse_binary_layer(Graph *g, PassContext *ctx, Node *conv) {
    if (!is_binary_layer(conv))
        return false;
    Match mt;
    if (!start_int_match(g, &mt, conv))
        return false;
    bool res_first = false;
    Value *residual = take_shortcut(g, &mt, &res_first);
    if ((mt.bin = binarize_of(g, mt.v)))
        buf_puts(&mt.e.what, "+binarize");
    Value *in[4] = {conv->in[0], conv->in[1], NULL, residual};
    bool dense = conv->op == OP_DENSE;
    Node *f = replace_match(g, &mt, dense ? OP_BDENSE_CHAIN : OP_BCONV2D_CHAIN, in, residual ? 4 : 3, 2);
    if (res_first)
        set_attr_int(f, "residual_first", 1);
    report_match(ctx, &mt, f, dense ? "dense" : "conv2d", residual != NULL);
    free_match(&mt);
    return true;
}

/* The scalar constant parameters of a quant / quantize q of v, false if it has others. */
static bool scalar_quant(const Node *q, const Value *v, float k[3]) {
    if ((q->op != OP_QUANT && q->op != OP_QUANTIZE) || q->in[0] != v)
        return false;
    for (int i = 1; i < 4; i++) {
        const Value *c = q->in[i];
        if (c == v || c->kind != VAL_CONST || c->type.dtype != TY_F32 || type_numel(&c->type, 1) != 1)
            return false;
        k[i - 1] = ((const float *)c->data)[0];
    }
    return k[0] > 0.0f && isfinite(k[0]) && isfinite(k[1]) && k[2] >= 1.0f && k[2] <= 24.0f &&
           k[2] == floorf(k[2]);
}

/* The quantizer reading v: its quantize (codes) and its quant (float value), at most one of
 * each, with the same scalar parameters and flags, v's only readers; false if v has others. */
static bool quantizer_of(const Graph *g, const Value *v, Node **codes, Node **deq, float k[3]) {
    *codes = *deq = NULL;
    if (is_graph_output(g, v))
        return false;
    const Node *first = NULL;
    for (int i = 0; i < g->nnodes; i++) {
        Node *n = g->nodes[i];
        bool reads = false;
        for (int j = 0; !n->dead && j < n->nin; j++)
            reads = reads || n->in[j] == v;
        if (!reads)
            continue;
        float kn[3];
        Node **slot = n->op == OP_QUANTIZE ? codes : deq;
        if (!scalar_quant(n, v, kn) || *slot)
            return false;
        if (first && (memcmp(k, kn, sizeof kn) != 0 ||
                      attr_int(n, "signed", 1) != attr_int(first, "signed", 1) ||
                      attr_int(n, "narrow", 0) != attr_int(first, "narrow", 0) ||
                      strcmp(attr_str(n, "rounding", "ROUND"), attr_str(first, "rounding", "ROUND"))))
            return false;
        memcpy(k, kn, sizeof kn);
        *slot = n;
        first = n;
    }
    return first != NULL;
}

/* The quantizer attributes of a fused op f from quantize / quant q of parameters k (scale,
 * zero point, bits); dequant: f's float result is the quant's. */
static void set_quantizer_attrs(Node *f, const Node *q, const float k[3], bool dequant) {
    set_attr_float(f, "quant_scale", k[0]);
    set_attr_float(f, "quant_zero", k[1]);
    set_attr_int(f, "quant_bits", (int64_t)k[2]);
    set_attr_int(f, "signed", attr_int(q, "signed", 1));
    set_attr_int(f, "narrow", attr_int(q, "narrow", 0));
    set_attr_str(f, "rounding", attr_str(q, "rounding", "ROUND"));
    if (dequant)
        set_attr_int(f, "dequant", 1);
}

/* A max-pool of v without dilation, v's only reader. */
static Node *pool_of(const Graph *g, const Value *v) {
    Node *m = single_user(g, v);
    if (!m || m->op != OP_MAXPOOL)
        return NULL;
    int64_t dil[2] = {1, 1};
    attr_ints(m, "dilations", dil, 2, 2, dil);
    return dil[0] == 1 && dil[1] == 1 ? m : NULL;
}

/* A float conv2d (the stem) -> chain -> [maxpool -> chain] -> [binarize, or a quantize and/or
 * quant of scalar parameters with the quantize], with at least one of them: conv2d_chain. The
 * stages after a max-pool (XNOR-Net's batch-norm before the sign) stay after it (attribute
 * pool_at: the stages before it). */
static bool fuse_float_conv(Graph *g, PassContext *ctx, Node *conv) {
    if (conv->dead || conv->op != OP_CONV2D || conv->in[0]->type.dtype != TY_F32 ||
        conv->in[1]->type.dtype != TY_F32 || conv->in[1]->kind != VAL_CONST ||
        (conv->nin == 3 && conv->in[2]->kind != VAL_CONST) || conv->out[0]->type.rank != 4)
        return false;
    Match mt;
    start_match(&mt, conv, conv->out[0]->type.dim[1]);
    absorb_chain(g, &mt);
    Node *pool = pool_of(g, mt.v);
    PoolAttrs pa;
    int pool_at = 0;
    if (pool) {
        pa = read_pool_attrs(pool);
        take_op(&mt, pool, "maxpool");
        pool_at = mt.e.frozen = mt.e.stages;
        absorb_ops(g, &mt);
    }
    Node *codes = NULL, *deq = NULL;
    float k[3];
    if ((mt.bin = binarize_of(g, mt.v)))
        buf_puts(&mt.e.what, mt.ngone ? "+binarize" : "binarize");
    else if (quantizer_of(g, mt.v, &codes, &deq, k) && codes) { /* the codes take result 1 */
        mt.bin = codes;
        buf_printf(&mt.e.what, "%s%s", mt.ngone ? "+" : "", deq ? "quantize+quant" : "quantize");
        if (deq) /* the f32 result takes over quant's value */
            mt.gone[mt.ngone++] = deq;
    }
    if (!mt.ngone && !mt.bin) {
        free_match(&mt);
        return false;
    }
    Value *in[4] = {conv->in[0], conv->in[1], NULL, conv->nin == 3 ? conv->in[2] : NULL};
    Node *f = replace_match(g, &mt, OP_CONV2D_CHAIN, in, conv->nin == 3 ? 4 : 3, 2);
    if (pool)
        set_fused_pool_attrs(f, &pa);
    if (pool && pool_at < mt.e.stages)
        set_attr_int(f, "pool_at", pool_at);
    if (codes)
        set_quantizer_attrs(f, codes, k, deq != NULL);
    report_match(ctx, &mt, f, "float conv2d", false);
    free_match(&mt);
    return true;
}

/* A qconv2d (no thresholds) -> cast -> chain -> [shortcut add] -> [relu] -> [quantize and/or
 * quant of scalar parameters]: qconv2d_chain. */
static bool fuse_qconv_layer(Graph *g, PassContext *ctx, Node *conv) {
    if (conv->dead || conv->op != OP_QCONV2D || conv->nin != 2)
        return false;
    Match mt;
    if (!start_int_match(g, &mt, conv))
        return false;
    bool res_first = false, out_relu = false;
    Value *residual = take_shortcut(g, &mt, &res_first);
    Node *m;
    if (residual && (m = single_user(g, mt.v)) && m->op == OP_RELU && type_equal(&m->out[0]->type, &mt.v->type)) {
        out_relu = true;
        take_op(&mt, m, "relu");
    }
    Node *codes, *deq;
    float k[3];
    bool quant = quantizer_of(g, mt.v, &codes, &deq, k);
    const Node *q = quant ? (codes ? codes : deq) : NULL;
    if (quant) {
        mt.bin = codes;
        buf_puts(&mt.e.what, codes && deq ? "+quantize+quant" : codes ? "+quantize" : "+quant");
        if (deq) { /* the f32 result takes over quant's value */
            mt.gone[mt.ngone++] = deq;
        }
    }
    Value *in[4] = {conv->in[0], conv->in[1], NULL, residual};
    Node *f = replace_match(g, &mt, OP_QCONV2D_CHAIN, in, residual ? 4 : 3, 2);
    if (res_first)
        set_attr_int(f, "residual_first", 1);
    if (out_relu)
        set_attr_int(f, "out_relu", 1);
    if (quant)
        set_quantizer_attrs(f, q, k, deq != NULL);
    report_match(ctx, &mt, f, "qconv2d", residual != NULL);
    free_match(&mt);
    return true;
}

int run_fuse_epilogue(Graph *g, PassContext *ctx) {
    /* A fused node takes its layer's place (the layer moves one on): visited, not matched. */
    for (int i = 0; i < g->nnodes; i++)
        if (!g->nodes[i]->dead && !fuse_binary_layer(g, ctx, g->nodes[i]) &&
            !fuse_qconv_layer(g, ctx, g->nodes[i]))
            fuse_float_conv(g, ctx, g->nodes[i]);
    graph_compact(g);
    return 0;
}
