/* plan-memory: requires final types (after choose-formats: packed sizes).
 * Changes: nothing in the graph; computes the arena plan (compiler.h MemPlan) and reports
 * its peak. Codegen calls plan_memory() on the final graph for the same plan. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

#define ARENA_ALIGN 256 /* bytes; B*offset stays aligned for any batch B */

int64_t value_storage_bytes(const Type *t) {
    int64_t n = 1;
    if (t->dtype != TY_B1 || t->pack.word_bits == 0) {
        for (int i = 0; i < t->rank; i++)
            n *= t->dim[i] == DIM_BATCH ? 1 : t->dim[i];
        if (t->dtype == TY_B1)
            return (n + 7) / 8;
        return n * (dtype_bits(t->dtype) / 8);
    }
    int64_t unit = t->pack.pad_to > t->pack.word_bits ? t->pack.pad_to : t->pack.word_bits;
    for (int i = 0; i < t->rank; i++) {
        int64_t d = t->dim[i] == DIM_BATCH ? 1 : t->dim[i];
        if (i == t->pack.axis)
            d = (d + unit - 1) / unit * unit;
        n *= d;
    }
    return (n + 7) / 8;
}

static int64_t align_up(int64_t x) { return (x + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN; }

typedef struct Block {
    int64_t offset, size;
    int last_use;
} Block;

void free_mem_plan(MemPlan *plan) {
    free(plan->offset);
    free(plan->size);
    memset(plan, 0, sizeof *plan);
}

static bool is_output(const Graph *g, const Value *v) {
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == v)
            return true;
    return false;
}

/* Greedy first fit in definition order: a block is free once the last node reading it
 * has run (a node's outputs never share with its own inputs). */
int plan_memory(const Graph *g, MemPlan *plan) {
    memset(plan, 0, sizeof *plan);
    plan->nvalues = g->nvalues;
    plan->offset = xmalloc((size_t)(g->nvalues + 1) * sizeof *plan->offset);
    plan->size = xcalloc((size_t)g->nvalues + 1, sizeof *plan->size);
    int *last = xmalloc((size_t)(g->nvalues + 1) * sizeof *last);
    for (int i = 0; i < g->nvalues; i++) {
        plan->offset[i] = -1;
        last[i] = -1;
    }
    for (int i = 0; i < g->nnodes; i++) {
        const Node *n = g->nodes[i];
        if (n->dead)
            continue;
        for (int j = 0; j < n->nin; j++)
            last[n->in[j]->id] = i;
        for (int j = 0; j < n->nout; j++)
            if (last[n->out[j]->id] < i)
                last[n->out[j]->id] = i;
    }
    Block *live = xmalloc((size_t)(g->nvalues + 1) * sizeof *live);
    int nlive = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const Node *n = g->nodes[i];
        if (n->dead)
            continue;
        int k = 0;
        for (int b = 0; b < nlive; b++)
            if (live[b].last_use >= i)
                live[k++] = live[b];
        nlive = k;
        for (int j = 0; j < n->nout; j++) {
            const Value *v = n->out[j];
            if (is_output(g, v))
                continue;
            int64_t size = align_up(value_storage_bytes(&v->type));
            /* Lowest gap between live blocks (kept sorted by offset) that fits. */
            int64_t at = 0;
            int pos = 0;
            for (; pos < nlive; pos++) {
                if (live[pos].offset - at >= size)
                    break;
                if (live[pos].offset + live[pos].size > at)
                    at = live[pos].offset + live[pos].size;
            }
            memmove(&live[pos + 1], &live[pos], (size_t)(nlive - pos) * sizeof *live);
            live[pos] = (Block){at, size, last[v->id]};
            nlive++;
            plan->offset[v->id] = at;
            plan->size[v->id] = size;
            plan->nbuffers++;
            if (at + size > plan->peak)
                plan->peak = at + size;
        }
    }
    free(live);
    free(last);
    return 0;
}

int run_plan_memory(Graph *g, PassContext *ctx) {
    MemPlan plan;
    for (int i = 0; i < g->nvalues; i++)
        g->values[i]->id = i;
    if (plan_memory(g, &plan) != 0)
        return -1;
    /* Not a graph fact but the pass's result: the report carries it. */
    if (ctx->report)
        buf_printf(ctx->report, "memory: peak %lld bytes per batch element (%d intermediates)\n",
                   (long long)plan.peak, plan.nbuffers);
    free_mem_plan(&plan);
    return 0;
}
