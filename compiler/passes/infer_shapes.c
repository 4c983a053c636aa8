/* infer-shapes: requires operand counts and attributes valid (a frontend's graph).
 * Changes: every node result gets the type infer_node_types computes (batch stays N). */
#include "passes.h"

int run_infer_shapes(Graph *g, PassContext *ctx) {
    (void)ctx;
    for (int i = 0; i < g->nnodes; i++) {
        Node *n = g->nodes[i];
        if (n->dead)
            continue;
        Type t[MAX_OUTPUTS];
        if (infer_node_types(n, t) != 0)
            return -1;
        for (int j = 0; j < n->nout; j++) {
            /* A chosen packing is the format pass's business, not inference's. */
            if (t[j].dtype == TY_B1 && n->out[j]->type.dtype == TY_B1)
                t[j].pack = n->out[j]->type.pack;
            n->out[j]->type = t[j];
        }
    }
    return 0;
}
