/* helpers.c: graph queries and edits the passes share (see passes.h).
 * Not a pass: requires nothing, changes nothing by itself. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

bool is_graph_output(const Graph *g, const Value *v) {
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == v)
            return true;
    return false;
}

Node *single_user(const Graph *g, const Value *v) {
    Node *user = NULL;
    if (is_graph_output(g, v))
        return NULL;
    for (int i = 0; i < g->nnodes; i++) {
        Node *n = g->nodes[i];
        if (n->dead)
            continue;
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] == v) {
                if (user && user != n)
                    return NULL;
                user = n;
            }
    }
    return user;
}

bool is_binary_layer(const Node *n) {
    if (n->dead || (n->op != OP_CONV2D && n->op != OP_DENSE) || n->nin != 2)
        return false;
    return n->in[0]->type.dtype == TY_B1 && n->in[1]->type.dtype == TY_B1 &&
           n->out[0]->type.dtype == TY_I32;
}

int64_t binary_layer_fan_in(const Node *n) {
    const Type *w = &n->in[1]->type;
    int64_t k = 1;
    for (int i = 1; i < w->rank; i++)
        k *= w->dim[i];
    return k;
}

const char *layer_name(const Node *n, char *buf, size_t len) {
    if (n->src_name)
        snprintf(buf, len, "'%s'", n->src_name);
    else
        snprintf(buf, len, "%%%s", n->nout ? n->out[0]->name : "?");
    return buf;
}

Value *add_const_copy(Graph *g, const char *base, Type type, const void *data, size_t nbytes) {
    char *name = graph_unique_name(g, base);
    void *copy = xmalloc(nbytes);
    memcpy(copy, data, nbytes);
    Value *v = add_const(g, name, type, copy, nbytes);
    free(name);
    return v;
}

void move_node_before(Graph *g, Node *n, const Node *before) {
    int from = -1, to = -1;
    for (int i = 0; i < g->nnodes; i++) {
        if (g->nodes[i] == n)
            from = i;
        if (g->nodes[i] == before)
            to = i;
    }
    if (from < 0 || to < 0 || from < to)
        return;
    memmove(&g->nodes[to + 1], &g->nodes[to], (size_t)(from - to) * sizeof *g->nodes);
    g->nodes[to] = n;
}

bool const_per_channel(const Value *k, const Type *x, int64_t *idx) {
    const Type *t = &k->type;
    if (k->kind != VAL_CONST || t->rank > x->rank || x->rank < 2)
        return false;
    int64_t c = x->dim[1];
    int off = x->rank - t->rank; /* t's axis i aligns with x's axis i + off */
    int64_t stride = 1, cstride = 0;
    bool varies = false;
    for (int i = t->rank - 1; i >= 0; i--) {
        int xa = i + off;
        if (t->dim[i] != 1) {
            if (xa != 1 || t->dim[i] != c)
                return false;
            cstride = stride;
            varies = true;
        }
        stride *= t->dim[i];
    }
    for (int64_t ch = 0; ch < c; ch++)
        idx[ch] = varies ? ch * cstride : 0;
    return true;
}

double const_elem(const Value *k, int64_t i) {
    switch (k->type.dtype) {
    case TY_F32: return ((const float *)k->data)[i];
    case TY_I32: return ((const int32_t *)k->data)[i];
    case TY_I8: return ((const int8_t *)k->data)[i];
    case TY_U8: return ((const uint8_t *)k->data)[i];
    case TY_I64: return (double)((const int64_t *)k->data)[i];
    case TY_B1: return bit_get(k->data, i) ? 1.0 : -1.0;
    case TY_F16: break;
    case TY_COUNT: break;
    }
    return 0;
}

void rewrite_node(Node *n, Op op, int nin, Value *const *in) {
    for (int i = 0; i < n->nattrs; i++) {
        free(n->attrs[i].key);
        free(n->attrs[i].ints);
        free(n->attrs[i].floats);
        free(n->attrs[i].s);
    }
    free(n->attrs);
    n->attrs = NULL;
    n->nattrs = 0;
    Value **copy = xcalloc((size_t)(nin ? nin : 1), sizeof *copy);
    memcpy(copy, in, (size_t)nin * sizeof *in); /* in may point into n->in */
    free(n->in);
    n->in = copy;
    n->nin = nin;
    n->op = op;
}

void copy_int_attrs(Node *to, const Node *from) {
    for (int i = 0; i < from->nattrs; i++) {
        const Attr *a = &from->attrs[i];
        if (a->kind == ATTR_INTS)
            set_attr_ints(to, a->key, a->n, a->ints);
        else if (a->kind == ATTR_INT)
            set_attr_int(to, a->key, a->i);
    }
}

PoolAttrs read_pool_attrs(const Node *pool) {
    PoolAttrs p = {{1, 1}, {1, 1}, {0, 0, 0, 0}, attr_int(pool, "ceil_mode", 0) != 0};
    attr_ints(pool, "kernel", p.k, 2, 2, p.k);
    attr_ints(pool, "strides", p.s, 2, 2, p.s);
    attr_ints(pool, "pads", p.pads, 4, 4, p.pads);
    return p;
}

void set_fused_pool_attrs(Node *to, const PoolAttrs *p) {
    set_attr_ints(to, "pool_kernel", 2, p->k);
    set_attr_ints(to, "pool_strides", 2, p->s);
    if (p->pads[0] || p->pads[1] || p->pads[2] || p->pads[3])
        set_attr_ints(to, "pool_pads", 4, p->pads);
    if (p->ceil_mode)
        set_attr_int(to, "pool_ceil_mode", 1);
}
