/* choose-formats: requires result types (infer-shapes) and the final ops (after fusion).
 * Changes: every b1 value inside the graph gets a PackFormat in its type; repack ops
 * convert b1 graph inputs and outputs, which stay in canonical storage. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* The one layout the kernels read and write today: NHWC-packed along channels (axis 1)
 * in 32-bit words, the channel axis zero-padded to 256 bits so that every pixel's bits
 * are whole k256 MMA steps; weights the same along their input-channel axis (K-major
 * rows). Tiled orders (k128/k256) are for pre-tiled weight images, not chosen yet. */
static PackFormat activation_format(const Type *t) {
    PackFormat p;
    memset(&p, 0, sizeof p);
    p.axis = t->rank >= 2 ? 1 : 0;
    p.word_bits = 32;
    p.pad_to = 256;
    p.tile = TILE_NONE;
    return p;
}

static Node *add_repack(Graph *g, Value *from, const char *name, PackFormat to) {
    Type t = from->type;
    t.pack = to;
    Value *in[1] = {from};
    const char *names[1] = {name};
    return add_node(g, OP_REPACK, 1, in, names, &t);
}

/* The runtime hands b1 inputs and outputs over in canonical storage (element i is bit i%8
 * of byte i/8): where they meet packed producers or consumers, a repack converts. */
static int repack_graph_io(Graph *g) {
    int added = 0;
    PackFormat canonical;
    memset(&canonical, 0, sizeof canonical);
    for (int i = 0; i < g->ninputs; i++) {
        Value *x = g->inputs[i];
        if (x->type.dtype != TY_B1 || x->type.rank == 0 || count_uses(g, x) == 0)
            continue;
        char base[256];
        snprintf(base, sizeof base, "%s.packed", x->name);
        char *name = graph_unique_name(g, base);
        Node *r = add_repack(g, x, name, activation_format(&x->type));
        free(name);
        for (int j = 0; j < g->nnodes; j++) {
            Node *n = g->nodes[j];
            for (int k = 0; n != r && !n->dead && k < n->nin; k++)
                if (n->in[k] == x)
                    n->in[k] = r->out[0];
        }
        move_node_before(g, r, g->nodes[0]);
        added++;
    }
    for (int i = 0; i < g->noutputs; i++) {
        Value *v = g->outputs[i];
        if (v->type.dtype != TY_B1 || v->type.rank == 0 || v->kind != VAL_NODE)
            continue;
        /* The repack takes over the output's name; the packed producer gets a new one. */
        char *keep = xstrdup(v->name);
        char base[256];
        snprintf(base, sizeof base, "%s.packed", keep);
        char *name = graph_unique_name(g, base);
        free(v->name);
        v->name = name;
        Node *r = add_repack(g, v, keep, canonical);
        free(keep);
        node_set_src(r, v->def->src_name, v->def->src_op);
        for (int j = 0; j < g->noutputs; j++)
            if (g->outputs[j] == v)
                g->outputs[j] = r->out[0];
        added++;
    }
    return added;
}

int run_choose_formats(Graph *g, PassContext *ctx) {
    int acts = 0, weights = 0;
    int repacks = repack_graph_io(g);
    for (int i = 0; i < g->nnodes; i++) {
        Node *n = g->nodes[i];
        if (n->dead || n->op == OP_REPACK)
            continue;
        for (int j = 0; j < n->nout; j++) {
            Type *t = &n->out[j]->type;
            if (t->dtype != TY_B1 || t->rank == 0)
                continue;
            t->pack = activation_format(t);
            acts++;
        }
    }
    for (int i = 0; i < g->nconsts; i++) {
        Type *t = &g->consts[i]->type;
        if (t->dtype != TY_B1 || t->rank == 0)
            continue;
        t->pack = activation_format(t);
        weights++;
    }
    /* What the binary kernels read must now be in their format. */
    for (int i = 0; i < g->nnodes; i++) {
        const Node *n = g->nodes[i];
        if (n->dead || (n->op != OP_BDENSE && n->op != OP_BCONV2D))
            continue;
        for (int k = 0; k < 2; k++) {
            const Type *t = &n->in[k]->type;
            PackFormat want = activation_format(t);
            if (t->pack.word_bits != want.word_bits || t->pack.axis != want.axis ||
                t->pack.pad_to != want.pad_to || t->pack.tile != want.tile) {
                char where[160], ts[160];
                diag_error("%s: operand %s is %s, not in the packed format the kernel reads",
                           node_where(n, where, sizeof where), n->in[k]->name,
                           type_str(t, ts, sizeof ts));
                return -1;
            }
        }
    }
    if (acts + weights)
        report_line(ctx,
                    "%d b1 activations and %d b1 constants packed along axis 1 in 32-bit words, "
                    "padded to 256 bits; %d repacks at the graph's b1 inputs and outputs",
                    acts, weights, repacks);
    return 0;
}
