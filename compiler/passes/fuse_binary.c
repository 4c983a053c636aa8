/* fuse-binary: requires integer thresholds (fold-thresholds) and result types.
 * Changes: threshold(binary dense/conv2d) becomes bdense/bconv2d, and a b1 maxpool of a
 * bconv2d's bits is absorbed into it (an OR of bits: pool_before=0). */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* A constant per-channel operand widened to [o] entries of elem bytes (t or dir given as
 * [1] applies to every channel). fill: the value when absent (dir defaults to +1). */
static Value *widen_const(Graph *g, const Value *k, int64_t o, DType dt, int fill,
                          const char *base) {
    size_t elem = (size_t)dtype_bits(dt) / 8;
    char *data = xmalloc((size_t)o * elem);
    for (int64_t c = 0; c < o; c++) {
        if (!k) {
            int8_t v = (int8_t)fill;
            memcpy(data + c * elem, &v, elem);
        } else {
            int64_t src = k->type.dim[0] == 1 ? 0 : c;
            memcpy(data + c * elem, (const char *)k->data + src * elem, elem);
        }
    }
    int64_t dims[1] = {o};
    Value *v = add_const_copy(g, base, make_type(dt, 1, dims), data, (size_t)o * elem);
    free(data);
    return v;
}

/* threshold(acc) with acc the only use of a binary layer's result: fuse in place of the
 * threshold node, which keeps its result value and name. */
static bool fuse_threshold(Graph *g, PassContext *ctx, Node *thr) {
    if (thr->op != OP_THRESHOLD || thr->in[0]->type.dtype != TY_I32 ||
        thr->in[1]->kind != VAL_CONST || thr->in[1]->type.rank != 1 ||
        (thr->nin == 3 && thr->in[2]->kind != VAL_CONST))
        return false;
    Value *acc = thr->in[0];
    Node *layer = acc->kind == VAL_NODE ? acc->def : NULL;
    if (!layer || !is_binary_layer(layer))
        return false;
    if (single_user(g, acc) != thr) {
        char lname[160];
        report_line(ctx, "layer %s: threshold not fused: the accumulator %%%s has other readers",
                    layer_name(layer, lname, sizeof lname), acc->name);
        return false;
    }
    int64_t o = acc->type.dim[1];
    char base[256];
    snprintf(base, sizeof base, "%s.t", acc->name);
    Value *t = thr->in[1]->type.dim[0] == o ? thr->in[1]
                                            : widen_const(g, thr->in[1], o, TY_I32, 0, base);
    snprintf(base, sizeof base, "%s.dir", acc->name);
    Value *dir = thr->nin == 3 && thr->in[2]->type.dim[0] == o
                     ? thr->in[2]
                     : widen_const(g, thr->nin == 3 ? thr->in[2] : NULL, o, TY_I8, 1, base);
    Value *in[4] = {layer->in[0], layer->in[1], t, dir};
    rewrite_node(thr, layer->op == OP_DENSE ? OP_BDENSE : OP_BCONV2D, 4, in);
    copy_int_attrs(thr, layer);
    /* The fused op stands for the layer: keep the layer's ONNX name. */
    if (layer->src_name)
        node_set_src(thr, layer->src_name, layer->src_op);
    remove_node(g, layer);
    char lname[160];
    report_line(ctx, "layer %s: %s + threshold -> %s (%lld outputs, K=%lld)",
                layer_name(thr, lname, sizeof lname), op_info(layer->op)->name,
                op_info(thr->op)->name, (long long)o, (long long)binary_layer_fan_in(thr));
    return true;
}

/* A b1 maxpool whose input is a bconv2d's only use: the pool's node becomes the fused
 * op with the pool in its attributes (OR of thresholded bits). */
static bool fuse_pool(Graph *g, PassContext *ctx, Node *pool) {
    if (pool->op != OP_MAXPOOL || pool->in[0]->type.dtype != TY_B1)
        return false;
    Value *bits = pool->in[0];
    Node *conv = bits->kind == VAL_NODE ? bits->def : NULL;
    if (!conv || conv->op != OP_BCONV2D || get_attr(conv, "pool_kernel") ||
        single_user(g, bits) != pool)
        return false;
    int64_t dil[2] = {1, 1};
    attr_ints(pool, "dilations", dil, 2, 2, dil);
    if (dil[0] != 1 || dil[1] != 1) /* the fused op pools without dilation */
        return false;
    PoolAttrs pa = read_pool_attrs(pool);
    rewrite_node(pool, OP_BCONV2D, conv->nin, conv->in);
    copy_int_attrs(pool, conv);
    set_fused_pool_attrs(pool, &pa);
    node_set_src(pool, conv->src_name, conv->src_op);
    remove_node(g, conv);
    char lname[160];
    report_line(ctx, "layer %s: maxpool %lldx%lld of its bits fused (OR of bits)",
                layer_name(pool, lname, sizeof lname), (long long)pa.k[0], (long long)pa.k[1]);
    return true;
}

int run_fuse_binary(Graph *g, PassContext *ctx) {
    for (int i = 0; i < g->nnodes; i++)
        if (!g->nodes[i]->dead)
            fuse_threshold(g, ctx, g->nodes[i]);
    for (int i = 0; i < g->nnodes; i++)
        if (!g->nodes[i]->dead)
            fuse_pool(g, ctx, g->nodes[i]);
    graph_compact(g);
    return 0;
}
