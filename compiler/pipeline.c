/* pipeline.c: the pass table, walked in order per -O level, verifying, dumping and
 * timing as asked; a failing pass leaves a reproducer of the IR from before it. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compiler.h"
#include "passes/passes.h"

typedef struct Pass {
    const char *name;
    int (*run)(Graph *g, PassContext *ctx);
    int min_level; /* skipped below this -O level; 0: required for correct code */
    const char *what;
} Pass;

/* Order matters: shapes before anything reads them; cleanup and sign rewriting expose
 * the accumulator -> ... -> binarize chains that folding matches; fusion consumes the
 * thresholds; formats and memory come last because they describe the final graph. */
static const Pass passes[] = {
    {"infer-shapes", run_infer_shapes, 0,
     "fill every result type from its operands (infer_node_types); batch stays N"},
    {"cleanup", run_cleanup, 1,
     "drop dead code, identity ops, duplicate constants, reshape chains, STE pairs; fold "
     "constant subgraphs"},
    {"sign-to-binarize", run_sign_to_binarize, 1,
     "sign whose input is never 0 or NaN becomes cast(binarize); binarize(sign x) -> binarize x"},
    {"padding", run_padding, 1,
     "fold explicit +-1 pads of b1 tensors into the next binary conv2d (pad_value)"},
    {"fold-thresholds", run_fold_thresholds, 1,
     "accumulator -> cast/scale/bias/batchnorm/relu/maxpool -> binarize becomes one exact "
     "integer threshold per channel"},
    {"lowbit", run_lowbit, 1,
     "quant -> dense over quantized weights -> ... -> quant becomes qdense over integer codes "
     "with exact multi-level integer thresholds"},
    {"fuse-binary", run_fuse_binary, 2,
     "binary conv2d/dense + threshold (+ maxpool of its bits) becomes one bconv2d/bdense"},
    {"fuse-epilogue", run_fuse_epilogue, 1,
     "binary conv2d -> cast -> batchnorm/scale/bias/relu -> [shortcut add] -> [binarize] "
     "becomes one bconv2d_chain"},
    {"cleanup", run_cleanup, 1, "(again) drop what folding and fusion left unused"},
    {"choose-formats", run_choose_formats, 0,
     "give every b1 tensor a packed format (NHWC-packed along C, 32-bit words, pad 256)"},
    {"plan-memory", run_plan_memory, 0,
     "liveness-based arena offsets for every intermediate, per batch element"},
};
#define NPASSES ((int)(sizeof passes / sizeof passes[0]))

void list_passes(FILE *out) {
    fprintf(out, "passes, in pipeline order (-ON runs those marked -O0..-ON):\n");
    for (int i = 0; i < NPASSES; i++)
        fprintf(out, "  %-18s -O%d+  %s\n", passes[i].name, passes[i].min_level, passes[i].what);
}

bool is_pass_name(const char *name) {
    if (!strcmp(name, "all"))
        return true;
    for (int i = 0; i < NPASSES; i++)
        if (!strcmp(passes[i].name, name))
            return true;
    return false;
}

void report_line(PassContext *ctx, const char *fmt, ...) {
    if (!ctx->report)
        return;
    va_list ap;
    va_start(ap, fmt);
    buf_printf(ctx->report, "%s: ", ctx->pass_name);
    buf_vprintf(ctx->report, fmt, ap);
    buf_puts(ctx->report, "\n");
    va_end(ap);
}

/* Where a failing pass leaves its reproducer. */
static const char *repro_path(const CompileOptions *opts) {
    return opts->repro_path ? opts->repro_path : "bnncc-crash.bnn";
}

/* The reproducer's side file as its text names it (relative to the reproducer's folder), in ref. */
static void repro_weights_ref(const CompileOptions *opts, char *ref, size_t size) {
    const char *path = repro_path(opts), *base = strrchr(path, '/');
    snprintf(ref, size, "%s.weights", base ? base + 1 : path);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Leave the IR from before the failing pass where the user can rerun it, and put that in
 * the diagnostic (which already says what went wrong): the text, its constants of more than 16
 * elements in a side file beside it (repro_path + ".weights"; none when it has none). */
static void write_reproducer(const CompileOptions *opts, const char *pass, const char *before,
                             const Buf *weights, const char *verb) {
    char msg[3072];
    snprintf(msg, sizeof msg, "%s", diag_message());
    const char *path = repro_path(opts);
    Buf wp = {0};
    buf_printf(&wp, "%s.weights", path);
    const char *wpath = wp.data;
    bool saved = before && (!weights->len || write_file_atomic(wpath, weights->data, weights->len) == 0) &&
                 write_file_atomic(path, before, strlen(before)) == 0;
    if (saved)
        diag_error("pass '%s' %s: %s\n  the IR from before the pass is in %s%s%s (rerun: bnncc %s "
                   "--verify-each --dump-after=%s)",
                   pass, verb, msg, path, weights->len ? ", its large constants in " : "",
                   weights->len ? wpath : "", path, pass);
    else
        diag_error("pass '%s' %s: %s\n  (could not write the reproducer %s)", pass, verb, msg,
                   path);
    buf_free(&wp);
}

int run_passes(Graph *g, const CompileOptions *opts) {
    FILE *dump = opts->dump_out ? opts->dump_out : stderr;
    double total = 0;
    char ref[1024];
    repro_weights_ref(opts, ref, sizeof ref);
    for (int i = 0; i < NPASSES; i++) {
        const Pass *p = &passes[i];
        if (opts->opt_level < p->min_level)
            continue;
        PassContext ctx = {opts, opts->report, p->name};
        /* Keep the graph from before the pass: the reproducer if it fails. Its large constants
         * as bytes for a side file, not base64 text: the w1a2 ResNet-18's 47 MB of weights
         * printed before each of its 11 passes took 0.9 s of a 1.5 s compile. */
        Buf weights = {0};
        char *before = print_graph_split(g, ref, &weights);
        diag_clear();
        double t0 = now_ms();
        int rc = p->run(g, &ctx);
        double dt = now_ms() - t0;
        total += dt;
        if (rc != 0) {
            write_reproducer(opts, p->name, before, &weights, "failed");
            free(before);
            buf_free(&weights);
            return -1;
        }
        if (opts->time_passes)
            fprintf(stderr, "pass %-18s %9.3f ms\n", p->name, dt);
        if (opts->verify_each && verify_graph(g) != 0) {
            write_reproducer(opts, p->name, before, &weights, "left an invalid graph");
            free(before);
            buf_free(&weights);
            return -1;
        }
        free(before);
        buf_free(&weights);
        if (opts->dump_after &&
            (!strcmp(opts->dump_after, "all") || !strcmp(opts->dump_after, p->name))) {
            fprintf(dump, "# --- after %s ---\n", p->name);
            print_graph(g, dump);
            fflush(dump);
        }
    }
    if (opts->time_passes)
        fprintf(stderr, "pass %-18s %9.3f ms\n", "(total)", total);
    return 0;
}
