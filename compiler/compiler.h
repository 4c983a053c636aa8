/* compiler.h: the pass pipeline, the whole interface of compiler/ (besides the bnncc
 * driver in main.c). Passes live one per file in compiler/passes/. */
#ifndef BNN_COMPILER_H
#define BNN_COMPILER_H

#include <stdbool.h>
#include <stdio.h>

#include "ir.h"
#include "util.h"

typedef struct CompileOptions {
    int opt_level;          /* 0..3: -O0 runs only the required passes */
    bool verify_each;       /* run verify_graph after every pass */
    const char *dump_after; /* a pass name, "all", or NULL */
    FILE *dump_out;         /* where dumps go (stderr when NULL) */
    bool time_passes;       /* print each pass's time to stderr */
    Buf *report;            /* lines for --report, or NULL */
    const char *repro_path; /* where a failing pass leaves the IR from before it;
                               NULL: bnncc-crash.bnn in the current directory */
    /* choose-formats (bnncc --formats): AUTO tile-major where the rule of docs/passes.md says
     * so and the targets allow it, PLAIN never, TILED wherever a layer can (tests). */
    enum { FORMATS_AUTO, FORMATS_PLAIN, FORMATS_TILED } formats;
    /* What the GPU targets allow (bnncc sets it from --target): 0 some target before sm_90
     * (no tile-major formats: the pre-tiled kernels need cp.async.bulk), 1 every GPU target
     * sm_90 or newer, -1 no GPU target (a CPU-only blob: TILED runs on the CPU path, AUTO
     * stays plain). */
    int tiled_targets;
    /* lowbit: the accumulators a channel's thresholds are checked at one by one, at most; a
     * wider channel's are found by a binary search of its monotone chain (0: 2^22; the tests
     * set 1 to search every channel, and compare the two). */
    int64_t lowbit_enumerate;
} CompileOptions;

/* Run the pipeline for opts->opt_level over g in place. 0 ok, -1 with a diagnostic. */
int run_passes(Graph *g, const CompileOptions *opts);
/* Print every pass with a line of what it does (bnncc --list-passes). */
void list_passes(FILE *out);
/* Whether name is a pass name (for --dump-after checking). */
bool is_pass_name(const char *name);

/* The arena plan of plan-memory (compiler/passes/plan_memory.c): every intermediate
 * (node result that is not a graph output) gets an offset in one arena. Sizes and
 * offsets are per batch element: for batch B, value v lives at B*offset[v.id] and takes
 * B*size[v.id] bytes, so one plan holds for every batch. Ids are Value.id, valid until
 * the next graph_compact. offset -1: not in the arena (inputs, outputs, constants). */
typedef struct MemPlan {
    int nvalues;
    int64_t *offset;
    int64_t *size;
    int64_t peak;   /* arena bytes per batch element */
    int nbuffers;   /* intermediates placed */
} MemPlan;

/* Plan g's intermediates (deterministic). 0 ok. Free with free_mem_plan. */
int plan_memory(const Graph *g, MemPlan *plan);
void free_mem_plan(MemPlan *plan);
/* Bytes per batch element of a value's storage in its chosen format (b1 packed along
 * pack.axis padded to pack.pad_to; canonical storage otherwise). */
int64_t value_storage_bytes(const Type *t);

#endif
