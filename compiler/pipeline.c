/* pipeline.c: the pass table, walked in order, verifying and dumping as asked. */
#include <string.h>
#include <time.h>

#include "compiler.h"

typedef struct Pass {
    const char *name;
    int (*run)(Graph *g, const CompileOptions *opts);
    int min_level; /* skipped below this -O level */
    const char *what;
} Pass;

static int pass_verify(Graph *g, const CompileOptions *opts) {
    (void)opts;
    return verify_graph(g);
}

static const Pass passes[] = {
    {"verify", pass_verify, 0, "check operand types, shapes and attributes of every op"},
};
#define NPASSES ((int)(sizeof passes / sizeof passes[0]))

void list_passes(FILE *out) {
    for (int i = 0; i < NPASSES; i++)
        fprintf(out, "  %-16s -O%d+  %s\n", passes[i].name, passes[i].min_level, passes[i].what);
}

bool is_pass_name(const char *name) {
    if (!strcmp(name, "all"))
        return true;
    for (int i = 0; i < NPASSES; i++)
        if (!strcmp(passes[i].name, name))
            return true;
    return false;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int run_passes(Graph *g, const CompileOptions *opts) {
    FILE *dump = opts->dump_out ? opts->dump_out : stderr;
    for (int i = 0; i < NPASSES; i++) {
        const Pass *p = &passes[i];
        if (opts->opt_level < p->min_level)
            continue;
        double t0 = now_ms();
        if (p->run(g, opts) != 0)
            return -1;
        if (opts->time_passes)
            fprintf(stderr, "pass %-16s %8.3f ms\n", p->name, now_ms() - t0);
        if (opts->verify_each && verify_graph(g) != 0)
            return -1;
        if (opts->dump_after && (!strcmp(opts->dump_after, "all") || !strcmp(opts->dump_after, p->name))) {
            fprintf(dump, "# --- after %s ---\n", p->name);
            print_graph(g, dump);
        }
    }
    return 0;
}
