/* fuse-epilogue: requires result types; runs after fold-thresholds / fuse-binary, on what they
 * left float. Changes: a binary conv2d -> cast to f32 -> per-channel float ops (batchnorm,
 * mul/div/add/sub by a constant, relu) -> [add of a real-valued shortcut] -> [binarize] becomes
 * one bconv2d_chain computing the very same float32 operations (docs/ir.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* The epilogue being built: stage s is v = v*a + b (v/a + b where div), then relu where asked;
 * a[c] at stage[2s][c], b[c] at stage[2s+1][c] (the chain constant's [S,2,O] layout). */
typedef struct Epi {
    int64_t o;
    int stages;
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
    bool plain_add = !div, prev_zero = e->stages > 0 && !e->relu[e->stages - 1];
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
    if (first + 3 - (first > 0) > CHAIN_MAX_STAGES)
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
    if (!e->stages || e->relu[e->stages - 1]) {
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

static bool fuse_layer(Graph *g, PassContext *ctx, Node *conv) {
    if (!is_binary_layer(conv) || conv->op != OP_CONV2D)
        return false;
    Value *acc = conv->out[0];
    Node *cast = single_user(g, acc);
    if (!cast || cast->op != OP_CAST || cast->out[0]->type.dtype != TY_F32)
        return false;
    Epi e = {.o = acc->type.dim[1]};
    e.data = xcalloc((size_t)(2 * CHAIN_MAX_STAGES * e.o), sizeof *e.data);
    Node *gone[MAX_ABSORBED];
    int ngone = 0;
    gone[ngone++] = cast;
    buf_puts(&e.what, "cast");
    Value *v = cast->out[0];
    Node *m;
    while (ngone < MAX_ABSORBED - 2 && (m = single_user(g, v)) && absorb(&e, m, v)) {
        buf_printf(&e.what, "+%s", op_info(m->op)->name);
        gone[ngone++] = m;
        v = m->out[0];
    }
    if (!e.stages) { /* a bare cast: the identity stage v*1 + -0 */
        float *one = xmalloc((size_t)e.o * 4), *zero = xmalloc((size_t)e.o * 4);
        for (int64_t c = 0; c < e.o; c++)
            one[c] = 1.0f, zero[c] = -0.0f;
        push_stage(&e, one, zero, false);
        free(one);
        free(zero);
    }
    /* The real-valued shortcut: v + r or r + v, r of v's type computed before the layer (the
     * fused op takes the layer's place; of two branches meeting in an add, the later one
     * takes it). */
    Value *residual = NULL;
    bool res_first = false;
    m = single_user(g, v);
    if (m && m->op == OP_ADD) {
        Value *r = m->in[0] == v ? m->in[1] : m->in[0];
        if (r != v && r->kind != VAL_CONST && type_equal(&r->type, &v->type) &&
            type_equal(&m->out[0]->type, &v->type) && defined_before(g, r, conv)) {
            residual = r;
            res_first = m->in[1] == v;
            buf_puts(&e.what, res_first ? "+add(shortcut first)" : "+add(shortcut)");
            gone[ngone++] = m;
            v = m->out[0];
        }
    }
    Node *bin = binarize_of(g, v);
    if (bin)
        buf_puts(&e.what, "+binarize");
    Node *end = gone[ngone - 1];  /* the op whose result the fused op's f32 result takes over */

    int64_t cd[3] = {e.stages, 2, e.o};
    char base[256];
    snprintf(base, sizeof base, "%s.chain", v->name);
    Value *chain = add_const_copy(g, base, make_type(TY_F32, 3, cd), e.data,
                                  (size_t)(2 * e.stages * e.o) * sizeof *e.data);
    Value *in[4] = {conv->in[0], conv->in[1], chain, residual};
    Type types[2] = {v->type, v->type};
    types[1].dtype = TY_B1;
    memset(&types[1].pack, 0, sizeof types[1].pack);
    if (bin)
        types[1] = bin->out[0]->type;
    /* Result 0 takes over v, result 1 the binarize's value; without one it is named after v. */
    char *tmp0 = graph_unique_name(g, "chain.y");
    snprintf(base, sizeof base, "%s.bits", v->name);
    char *tmp1 = graph_unique_name(g, bin ? "chain.bits" : base);
    const char *names[2] = {tmp0, tmp1};
    Node *f = add_node(g, OP_BCONV2D_CHAIN, residual ? 4 : 3, in, names, types);
    free(tmp0);
    free(tmp1);
    move_node_before(g, f, conv);
    f->loc = conv->loc;
    node_set_src(f, conv->src_name, conv->src_op);
    copy_int_attrs(f, conv);
    bool any_div = false, any_relu = false;
    for (int s = 0; s < e.stages; s++)
        any_div |= e.div[s] != 0, any_relu |= e.relu[s] != 0;
    if (any_div)
        set_attr_ints(f, "div", e.stages, e.div);
    if (any_relu)
        set_attr_ints(f, "relu", e.stages, e.relu);
    if (res_first)
        set_attr_int(f, "residual_first", 1);
    take_result(f, 0, end);
    if (bin) {
        if (attr_int(bin, "zero", 1) != 1)
            set_attr_int(f, "zero", attr_int(bin, "zero", 1));
        take_result(f, 1, bin);
        remove_node(g, bin);
    }
    for (int i = 0; i < ngone; i++)
        remove_node(g, gone[i]);
    remove_node(g, conv);
    char lname[160];
    report_line(ctx, "layer %s (conv2d, K=%lld, %lld channels): %s -> bconv2d_chain (%d stage%s%s)",
                layer_name(f, lname, sizeof lname), (long long)binary_layer_fan_in(f),
                (long long)e.o, e.what.data, e.stages, e.stages == 1 ? "" : "s", residual ? ", residual" : "");
    free(e.what.data);
    free(e.data);
    return true;
}

int run_fuse_epilogue(Graph *g, PassContext *ctx) {
    /* A fused node takes its layer's place (the layer moves one on): visited, not matched. */
    for (int i = 0; i < g->nnodes; i++)
        if (!g->nodes[i]->dead)
            fuse_layer(g, ctx, g->nodes[i]);
    graph_compact(g);
    return 0;
}
