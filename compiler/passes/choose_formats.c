/* choose-formats: requires result types (infer-shapes) and the final ops (after fusion).
 * Changes: every b1 value inside the graph gets a PackFormat in its type, plain or (binary
 * dense layers on the pre-tiled GEMM) tile-major; repack ops convert b1 graph inputs and
 * outputs, which stay in canonical storage, and wherever a producer's format is not what a
 * tiled layer reads. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

#define TILED_KALIGN 1024 /* the pre-tiled kernels' stage: 8 chunks of 128 bits */

/* The plain layout, what every kernel reads and writes: NHWC-packed along channels (axis 1)
 * in 32-bit words, the channel axis zero-padded to 256 bits so that every pixel's bits are
 * whole k256 MMA steps; weights the same along their input-channel axis (K-major rows). */
static PackFormat activation_format(const Type *t) {
    PackFormat p;
    memset(&p, 0, sizeof p);
    p.axis = t->rank >= 2 ? 1 : 0;
    p.word_bits = 32;
    p.pad_to = 256;
    p.tile = TILE_NONE;
    return p;
}

/* The tile-major layouts of the pre-tiled GEMM kernels (docs/ir.md): K padded to a whole
 * number of the kernels' pipeline stages (TILED_KALIGN bits), rows in tiles of 128 (k128:
 * the activations, A) or 256 (k256: the weights, W). */
static PackFormat tiled_format(int64_t k, TileOrder tile) {
    PackFormat p;
    memset(&p, 0, sizeof p);
    p.axis = 1;
    p.word_bits = 32;
    p.pad_to = (int)((k + TILED_KALIGN - 1) / TILED_KALIGN * TILED_KALIGN);
    p.tile = tile;
    return p;
}

static bool same_format(const PackFormat *a, const PackFormat *b) {
    return a->word_bits == b->word_bits && a->axis == b->axis && a->pad_to == b->pad_to && a->tile == b->tile;
}

/* The auto rule (docs/passes.md): a binary dense layer gets the pre-tiled kernel when it is
 * big enough for the bulk-copy pipeline to pay (at least one 256-column tile, one 1024-bit
 * stage, 2^21 weight bits) and padding K to whole stages wastes at most 1/8 of its work. */
static bool worth_tiling(int64_t k, int64_t n) {
    int64_t kpad = (k + TILED_KALIGN - 1) / TILED_KALIGN * TILED_KALIGN;
    return n >= 256 && k >= TILED_KALIGN && n * k >= ((int64_t)1 << 21) && (kpad - k) * 8 <= kpad;
}

/* Whether layer n (bdense, bdense_chain) runs the pre-tiled kernel: constant [N,K] weights
 * that no other kind of node reads, a [N,K] operand, and the mode's rule. */
static bool tiled_layer(const Graph *g, const Node *n, const PassContext *ctx) {
    const CompileOptions *o = ctx->opts;
    if ((n->op != OP_BDENSE && n->op != OP_BDENSE_CHAIN) || !o || o->formats == FORMATS_PLAIN)
        return false;
    const Value *x = n->in[0], *w = n->in[1];
    if (w->kind != VAL_CONST || w->type.rank != 2 || x->type.rank != 2)
        return false;
    for (int i = 0; i < g->nnodes; i++) { /* the weights' image is the tiled one: no other reader */
        const Node *u = g->nodes[i];
        for (int j = 0; !u->dead && j < u->nin; j++)
            if (u->in[j] == w && (j != 1 || (u->op != OP_BDENSE && u->op != OP_BDENSE_CHAIN)))
                return false;
    }
    if (o->formats == FORMATS_TILED)
        return o->tiled_targets != 0;
    return o->tiled_targets == 1 && worth_tiling(x->type.dim[1], w->type.dim[0]);
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

/* The node whose result v is, or NULL (graph inputs, constants). */
static Node *producer(const Value *v) { return v->kind == VAL_NODE ? v->def : NULL; }

/* Whether every reader of v is a tiled layer reading it as its activations (in[0]), and v is
 * no graph output. */
static bool only_tiled_readers(const Graph *g, const Value *v, const bool *tiled) {
    if (is_graph_output(g, v) || count_uses(g, v) == 0)
        return false;
    for (int i = 0; i < g->nnodes; i++) {
        const Node *u = g->nodes[i];
        for (int j = 0; !u->dead && j < u->nin; j++)
            if (u->in[j] == v && (!tiled[i] || j != 0))
                return false;
    }
    return true;
}

/* What the kernels read must be in their format: plain for every binary kernel, the A and W
 * images of the pre-tiled kernel for a tiled layer (whose bits output, if tiled, is its
 * consumers' A). */
static int check_operands(const Graph *g, const bool *tiled) {
    for (int i = 0; i < g->nnodes; i++) {
        const Node *n = g->nodes[i];
        if (n->dead || (n->op != OP_BDENSE && n->op != OP_BCONV2D && n->op != OP_BDENSE_CHAIN &&
                        n->op != OP_BCONV2D_CHAIN))
            continue;
        for (int k = 0; k < 2; k++) {
            const Type *t = &n->in[k]->type;
            PackFormat want = tiled[i] ? tiled_format(n->in[0]->type.dim[1], k ? TILE_K256 : TILE_K128)
                                       : activation_format(t);
            if (!same_format(&t->pack, &want)) {
                char where[160], ts[160];
                diag_error("%s: operand %s is %s, not in the packed format the kernel reads (%s, %s)",
                           node_where(n, where, sizeof where), n->in[k]->name, type_str(t, ts, sizeof ts),
                           tiled[i] ? "the pre-tiled GEMM" : "plain", tile_name(want.tile));
                return -1;
            }
        }
    }
    return 0;
}

int run_choose_formats(Graph *g, PassContext *ctx) {
    int acts = 0, weights = 0;
    int repacks = repack_graph_io(g);
    for (int i = 0; i < g->nnodes; i++) {
        Node *n = g->nodes[i];
        /* a repack to canonical storage (graph I/O) stays; one to a tile-major format from an
         * earlier run is decided again below */
        if (n->dead || (n->op == OP_REPACK && n->out[0]->type.pack.tile == TILE_NONE))
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
    /* Tile-major formats: the layers that run the pre-tiled kernel, their weights' image, the
     * bits a tiled layer writes for tiled readers only, and a repack wherever a tiled layer's
     * operand comes in another format (a plain producer, a graph input). */
    bool *tiled = xcalloc(2 * (size_t)g->nnodes + 1, sizeof *tiled); /* room for one repack a layer */
    int ntiled = 0, tiled_acts = 0, tile_repacks = 0;
    for (int i = 0; i < g->nnodes; i++)
        if (!g->nodes[i]->dead && tiled_layer(g, g->nodes[i], ctx)) {
            tiled[i] = true;
            ntiled++;
            Value *w = g->nodes[i]->in[1];
            w->type.pack = tiled_format(w->type.dim[1], TILE_K256);
        }
    for (int i = 0; i < g->nnodes; i++) {
        const Node *n = g->nodes[i];
        if (tiled[i] && n->op == OP_BDENSE && only_tiled_readers(g, n->out[0], tiled)) {
            n->out[0]->type.pack = tiled_format(n->out[0]->type.dim[1], TILE_K128);
            tiled_acts++;
        }
    }
    int nnodes = g->nnodes; /* the repacks added below are not visited */
    for (int i = 0; i < nnodes; i++) {
        Node *n = g->nodes[i];
        if (!tiled[i] || n->in[0]->type.pack.tile == TILE_K128)
            continue;
        Value *x = n->in[0];
        PackFormat want = tiled_format(x->type.dim[1], TILE_K128);
        Node *p = producer(x);
        if (p && p->op == OP_REPACK && only_tiled_readers(g, x, tiled)) {
            /* a repack read by tiled layers only (a graph input's, or one from an earlier run of
             * this pass) converts straight to the tiled image */
            x->type.pack = want;
            tiled_acts++;
            continue;
        }
        char base[256];
        snprintf(base, sizeof base, "%s.tiled", x->name);
        char *name = graph_unique_name(g, base);
        Node *r = add_repack(g, x, name, want);
        free(name);
        tile_repacks++;
        /* every tiled reader of x after this one reads the same repack */
        for (int j = i; j < nnodes; j++)
            if (tiled[j] && g->nodes[j]->in[0] == x)
                g->nodes[j]->in[0] = r->out[0];
        move_node_before(g, r, n);
        nnodes++; /* move_node_before shifted n and its followers one place on */
        memmove(tiled + i + 1, tiled + i, (size_t)(nnodes - i - 1) * sizeof *tiled);
        tiled[i] = false;
        i++;
    }
    int rc = check_operands(g, tiled);
    free(tiled);
    if (rc)
        return -1;
    if (acts + weights)
        report_line(ctx,
                    "%d b1 activations and %d b1 constants packed along axis 1 in 32-bit words, "
                    "padded to 256 bits; %d repacks at the graph's b1 inputs and outputs",
                    acts, weights, repacks);
    if (ntiled)
        report_line(ctx,
                    "%d binary dense layers on the pre-tiled GEMM (weights k256, %d activations written "
                    "k128 by their producer, %d repacks to k128)",
                    ntiled, tiled_acts, tile_repacks);
    return 0;
}
