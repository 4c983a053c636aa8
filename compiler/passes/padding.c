/* padding: requires result types (infer-shapes).
 * Changes: an explicit spatial pad of a b1 tensor by +1 or -1 that feeds a binary conv2d
 * becomes that conv's pads with pad_value=+1/-1 (zero padding is already exact there). */
#include <string.h>

#include "passes.h"

/* The spatial pads [top, left, bottom, right] and the value of a b1 NCHW pad, if it pads
 * only H and W. */
static bool spatial_pad(const Node *p, int64_t *pads4, int *value) {
    if (p->op != OP_PAD || p->in[0]->type.dtype != TY_B1 || p->in[0]->type.rank != 4)
        return false;
    int64_t pads[8];
    if (attr_ints(p, "pads", pads, 8, 0, NULL) != 8)
        return false;
    if (pads[0] || pads[1] || pads[4] || pads[5])
        return false;
    pads4[0] = pads[2];
    pads4[1] = pads[3];
    pads4[2] = pads[6];
    pads4[3] = pads[7];
    float v = attr_float(p, "value", 0.0f);
    if (v != 1.0f && v != -1.0f)
        return false;
    *value = v > 0 ? 1 : -1;
    return true;
}

int run_padding(Graph *g, PassContext *ctx) {
    int folded = 0;
    for (int i = 0; i < g->nnodes; i++) {
        Node *n = g->nodes[i];
        if (!is_binary_layer(n) || n->op != OP_CONV2D)
            continue;
        Value *x = n->in[0];
        if (x->kind != VAL_NODE || !x->def)
            continue;
        int64_t extra[4];
        int value;
        if (!spatial_pad(x->def, extra, &value))
            continue;
        int64_t pads[4] = {0, 0, 0, 0};
        attr_ints(n, "pads", pads, 4, 4, pads);
        int64_t pv = attr_int(n, "pad_value", 0);
        bool conv_pads = pads[0] || pads[1] || pads[2] || pads[3];
        /* The conv's own border must pad with the same value, or not exist. */
        if (conv_pads && pv != value)
            continue;
        for (int j = 0; j < 4; j++)
            pads[j] += extra[j];
        Node *pad = x->def;
        n->in[0] = pad->in[0];
        if (count_uses(g, x) == 0)
            remove_node(g, pad);
        set_attr_ints(n, "pads", 4, pads);
        set_attr_int(n, "pad_value", value);
        folded++;
        char lname[160];
        report_line(ctx, "layer %s: explicit pad by %+d folded into conv2d pads [%lld,%lld,%lld,%lld]",
                    layer_name(n, lname, sizeof lname), value, (long long)pads[0],
                    (long long)pads[1], (long long)pads[2], (long long)pads[3]);
    }
    if (folded)
        graph_compact(g);
    return 0;
}
