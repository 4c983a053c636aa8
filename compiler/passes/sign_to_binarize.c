/* sign-to-binarize: requires result types (infer-shapes).
 * Changes: binarize(sign x) reads x; a sign whose input is provably never 0 (nor NaN)
 * becomes cast(binarize x) to f32; any other sign stays, with the reason in the report.
 * The proof: x is a per-channel float chain of a binary accumulator (fold-thresholds'
 * matcher), evaluated exactly at every accumulator the layer can produce. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

int run_sign_to_binarize(Graph *g, PassContext *ctx) {
    int direct = 0, rewritten = 0;
    int nnodes = g->nnodes;
    for (int i = 0; i < nnodes; i++) {
        Node *n = g->nodes[i];
        if (n->dead)
            continue;
        /* sign(x) > 0 exactly where x > 0, and == 0 exactly where x == 0: binarize sees
         * the same thing either way. */
        if (n->op == OP_BINARIZE && n->in[0]->kind == VAL_NODE && n->in[0]->def &&
            n->in[0]->def->op == OP_SIGN) {
            n->in[0] = n->in[0]->def->in[0];
            direct++;
            continue;
        }
        if (n->op != OP_SIGN)
            continue;
        char why[256], where[160];
        if (!float_chain_never_zero(n, why, sizeof why)) {
            /* Unused signs, or ones read only by binarize, are not worth a line. */
            bool only_binarize = !is_graph_output(g, n->out[0]);
            for (int j = 0; j < g->nnodes && only_binarize; j++) {
                const Node *u = g->nodes[j];
                for (int k = 0; !u->dead && k < u->nin; k++)
                    if (u->in[k] == n->out[0] && u->op != OP_BINARIZE)
                        only_binarize = false;
            }
            if (!only_binarize)
                report_line(ctx, "%s: sign kept (sign(0) = 0 is not a bit): %s",
                            node_where(n, where, sizeof where), why);
            continue;
        }
        /* sign(x) == cast(binarize(x)) for x != 0: binarize, then cast back to f32 for
         * the float consumers; a later binarize of the cast folds in cleanup/fusion. */
        char base[256];
        snprintf(base, sizeof base, "%s.bits", n->out[0]->name);
        char *name = graph_unique_name(g, base);
        Type bt = n->out[0]->type;
        bt.dtype = TY_B1;
        memset(&bt.pack, 0, sizeof bt.pack);
        Value *in[1] = {n->in[0]};
        const char *names[1] = {name};
        Node *b = add_node(g, OP_BINARIZE, 1, in, names, &bt);
        free(name);
        node_set_src(b, n->src_name, n->src_op);
        move_node_before(g, b, n);
        n->op = OP_CAST;
        n->in[0] = b->out[0];
        set_attr_str(n, "to", "f32");
        rewritten++;
        report_line(ctx, "%s: sign -> cast(binarize): %%%s is never 0 (checked at every "
                         "reachable accumulator)",
                    node_where(n, where, sizeof where), b->in[0]->name);
    }
    if (direct)
        report_line(ctx, "%d binarize(sign x) read x directly", direct);
    return 0;
}
