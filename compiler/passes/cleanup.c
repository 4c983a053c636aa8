/* cleanup: requires result types (infer-shapes); folding constants needs ir/interp.c.
 * Changes: removes dead nodes, identity ops, duplicate constants, reshape chains and
 * exporter STE pairs; replaces nodes whose operands are all constants by constants. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* Largest constant result folding will materialise. */
#define MAX_FOLD_BYTES (64u << 20)

typedef struct CleanContext {
    PassContext *pass;
    Graph *g;
    int dead, identities, dups, reshapes, ste, folded, gap_bits;
} CleanContext;

/* ---------------------------------------------------------------- constant folding */

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

/* Run n alone on the interpreter; the result becomes a constant. The interpreter is the
 * semantics, so the folded value is exactly what the graph computed. */
static bool fold_constant_node(CleanContext *cc, Node *n) {
    Graph *g = cc->g;
    if (n->nout != 1 || n->nin == 0 || type_has_batch(&n->out[0]->type) ||
        type_nbytes(&n->out[0]->type, 1) > MAX_FOLD_BYTES)
        return false;
    for (int i = 0; i < n->nin; i++)
        if (n->in[i]->kind != VAL_CONST)
            return false;
    Graph *one = new_graph("fold");
    Value *in[16];
    if (n->nin > 16) {
        free_graph(one);
        return false;
    }
    for (int i = 0; i < n->nin; i++) {
        const Value *k = n->in[i];
        Value *dup = NULL;
        for (int j = 0; j < i; j++)
            if (n->in[j] == k)
                dup = in[j];
        in[i] = dup ? dup : add_const_copy(one, k->name, k->type, k->data, k->nbytes);
    }
    const char *names[1] = {n->out[0]->name};
    Node *m = add_node(one, n->op, n->nin, in, names, &n->out[0]->type);
    copy_attrs(m, n);
    add_output(one, m->out[0]);
    Tensor out;
    memset(&out, 0, sizeof out);
    bool ok = verify_graph(one) == 0 && interp_run(one, NULL, &out) == 0 &&
              out.nbytes == type_nbytes(&n->out[0]->type, 1);
    free_graph(one);
    diag_clear();
    if (!ok) {
        free_tensor(&out);
        return false;
    }
    /* The constant takes the folded result's name; the dead result gives it up. */
    char *name = n->out[0]->name;
    n->out[0]->name = graph_unique_name(g, "folded");
    Value *k = add_const_copy(g, name, n->out[0]->type, out.data, out.nbytes);
    free(name);
    free_tensor(&out);
    replace_all_uses(g, n->out[0], k);
    remove_node(g, n);
    cc->folded++;
    return true;
}

/* ---------------------------------------------------------------- identities */

/* Every element of an f32 constant has exactly the bits of want (so -0 != +0). */
static bool const_all_equal(const Value *k, float want) {
    if (k->kind != VAL_CONST || k->type.dtype != TY_F32)
        return false;
    int64_t n = type_numel(&k->type, 1);
    const float *d = k->data;
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&d[i], &want, sizeof want) != 0)
            return false;
    return true;
}

static bool same_dims(const Type *a, const Type *b) {
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i])
            return false;
    return true;
}

/* The operand n passes through unchanged, or NULL. Only exact identities: x*1, x/1,
 * x+(-0), x-(+0) keep every float (signed zeros and NaN included); x+0 would turn -0 into
 * +0 and is left alone. binarize(cast(b)) of bits is b. */
static Value *identity_source(const Node *n) {
    const Type *out = &n->out[0]->type;
    switch (n->op) {
    case OP_RESHAPE:
        return same_dims(&n->in[0]->type, out) ? n->in[0] : NULL;
    case OP_CAST:
        return n->in[0]->type.dtype == out->dtype ? n->in[0] : NULL;
    case OP_BINARIZE: {
        /* binarize(cast(b)) of a b1 tensor b: the cast gives +-1, binarize its bit back. */
        const Value *c = n->in[0];
        if (c->kind == VAL_NODE && c->def && c->def->op == OP_CAST &&
            c->def->in[0]->type.dtype == TY_B1 && same_dims(&c->def->in[0]->type, out))
            return c->def->in[0];
        return NULL;
    }
    case OP_TRANSPOSE: {
        int64_t perm[MAX_RANK];
        int cnt = attr_ints(n, "perm", perm, MAX_RANK, 0, NULL);
        if (cnt != out->rank)
            return NULL;
        for (int i = 0; i < cnt; i++)
            if (perm[i] != i)
                return NULL;
        return n->in[0];
    }
    case OP_MUL:
        for (int i = 0; i < 2; i++)
            if (const_all_equal(n->in[i], 1.0f) && same_dims(&n->in[1 - i]->type, out) &&
                n->in[1 - i]->type.dtype == TY_F32)
                return n->in[1 - i];
        return NULL;
    case OP_DIV:
        return const_all_equal(n->in[1], 1.0f) && same_dims(&n->in[0]->type, out)
                   ? n->in[0] : NULL;
    case OP_ADD:
        for (int i = 0; i < 2; i++)
            if (const_all_equal(n->in[i], -0.0f) && same_dims(&n->in[1 - i]->type, out) &&
                n->in[1 - i]->type.dtype == TY_F32)
                return n->in[1 - i];
        return NULL;
    case OP_SUB:
        return const_all_equal(n->in[1], 0.0f) &&
                       same_dims(&n->in[0]->type, out) && n->in[0]->type.dtype == TY_F32
                   ? n->in[0] : NULL;
    default:
        return NULL;
    }
}

/* ---------------------------------------------------------------- STE pairs */

/* a + (q - a) where q = sign(x) and a = clip(x, lo, hi), -1 <= lo <= 0 <= hi <= 1 (the
 * straight-through estimator as exported). Its value can differ from q by an ulp, but
 * its sign is q's and it is 0 exactly where q is: so a consumer that only looks at the
 * sign (binarize, sign) sees q. Returns q, or NULL. */
static Value *match_ste(const Graph *g, const Node *add) {
    if (add->op != OP_ADD)
        return NULL;
    for (int i = 0; i < 2; i++) {
        Value *a = add->in[i], *d = add->in[1 - i];
        if (d->kind != VAL_NODE || !d->def || d->def->op != OP_SUB || d->def->in[1] != a)
            continue;
        Value *q = d->def->in[0];
        if (q->kind != VAL_NODE || !q->def || q->def->op != OP_SIGN)
            continue;
        Value *x = q->def->in[0];
        if (a->kind != VAL_NODE || !a->def || a->def->op != OP_CLIP || a->def->in[0] != x)
            continue;
        float lo = attr_float(a->def, "min", -INFINITY), hi = attr_float(a->def, "max", INFINITY);
        if (!(lo >= -1.0f && lo <= 0.0f && hi >= 0.0f && hi <= 1.0f))
            continue;
        if (!same_dims(&q->type, &add->out[0]->type))
            continue;
        /* Every consumer must look only at the sign. */
        if (is_graph_output(g, add->out[0]))
            return NULL;
        for (int j = 0; j < g->nnodes; j++) {
            const Node *u = g->nodes[j];
            if (u->dead)
                continue;
            for (int k = 0; k < u->nin; k++)
                if (u->in[k] == add->out[0] && u->op != OP_BINARIZE && u->op != OP_SIGN)
                    return NULL;
        }
        return q;
    }
    return NULL;
}

/* ---------------------------------------------------------------- dead code, duplicates */

static void remove_dead(CleanContext *cc) {
    Graph *g = cc->g;
    int *uses = xcalloc((size_t)g->nvalues + 1, sizeof *uses);
    for (int i = 0; i < g->nvalues; i++)
        g->values[i]->id = i;
    for (int i = 0; i < g->nnodes; i++)
        for (int j = 0; !g->nodes[i]->dead && j < g->nodes[i]->nin; j++)
            uses[g->nodes[i]->in[j]->id]++;
    for (int i = 0; i < g->noutputs; i++)
        uses[g->outputs[i]->id]++;
    for (int i = g->nnodes - 1; i >= 0; i--) {
        Node *n = g->nodes[i];
        if (n->dead)
            continue;
        bool used = false;
        for (int j = 0; j < n->nout; j++)
            used |= uses[n->out[j]->id] > 0;
        if (used)
            continue;
        for (int j = 0; j < n->nin; j++)
            uses[n->in[j]->id]--;
        remove_node(g, n);
        cc->dead++;
    }
    free(uses);
}

static void merge_duplicate_consts(CleanContext *cc) {
    Graph *g = cc->g;
    for (int i = 0; i < g->nconsts; i++) {
        Value *a = g->consts[i];
        if (!a)
            continue;
        for (int j = i + 1; j < g->nconsts; j++) {
            Value *b = g->consts[j];
            if (!b || !type_equal(&a->type, &b->type) || a->nbytes != b->nbytes ||
                memcmp(a->data, b->data, a->nbytes) != 0)
                continue;
            if (count_uses(g, b) == 0)
                continue;
            replace_all_uses(g, b, a);
            cc->dups++;
        }
    }
}

int run_cleanup(Graph *g, PassContext *ctx) {
    CleanContext cc;
    memset(&cc, 0, sizeof cc);
    cc.pass = ctx;
    cc.g = g;
    merge_duplicate_consts(&cc);
    for (int i = 0; i < g->nnodes; i++) {
        Node *n = g->nodes[i];
        if (n->dead)
            continue;
        if (fold_constant_node(&cc, n))
            continue;
        /* reshape(reshape(x)) reads x directly. */
        if (n->op == OP_RESHAPE && n->in[0]->kind == VAL_NODE && n->in[0]->def &&
            n->in[0]->def->op == OP_RESHAPE) {
            n->in[0] = n->in[0]->def->in[0];
            cc.reshapes++;
        }
        /* globalavgpool(cast(b)) of a b1 tensor averages b's +-1 values itself (docs/ir.md):
         * no float copy of the bits for it (the cast goes when nothing else reads it). */
        if (n->op == OP_GLOBALAVGPOOL && n->in[0]->kind == VAL_NODE && n->in[0]->def &&
            n->in[0]->def->op == OP_CAST && n->in[0]->def->in[0]->type.dtype == TY_B1 &&
            same_dims(&n->in[0]->def->in[0]->type, &n->in[0]->type)) {
            n->in[0] = n->in[0]->def->in[0];
            cc.gap_bits++;
        }
        Value *q = match_ste(g, n);
        if (q) {
            replace_all_uses(g, n->out[0], q);
            remove_node(g, n);
            cc.ste++;
            continue;
        }
        Value *src = n->nout == 1 ? identity_source(n) : NULL;
        /* A graph output keeps its producer (and name). */
        if (src && !is_graph_output(g, n->out[0])) {
            replace_all_uses(g, n->out[0], src);
            remove_node(g, n);
            cc.identities++;
        }
    }
    remove_dead(&cc);
    graph_compact(g);
    if (cc.dead + cc.identities + cc.dups + cc.reshapes + cc.ste + cc.folded)
        report_line(ctx,
                    "removed %d dead nodes, %d identities, %d duplicate constants, %d "
                    "reshape-of-reshape, %d STE pairs; folded %d constant nodes",
                    cc.dead, cc.identities, cc.dups, cc.reshapes, cc.ste, cc.folded);
    if (cc.gap_bits)
        report_line(ctx, "%d global average pools read their b1 input's +-1 values (no float copy)", cc.gap_bits);
    return 0;
}
