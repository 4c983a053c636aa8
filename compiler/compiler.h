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
} CompileOptions;

/* Run the pipeline for opts->opt_level over g in place. 0 ok, -1 with a diagnostic. */
int run_passes(Graph *g, const CompileOptions *opts);
/* Print every pass with a line of what it does (bnncc --list-passes). */
void list_passes(FILE *out);
/* Whether name is a pass name (for --dump-after checking). */
bool is_pass_name(const char *name);

#endif
