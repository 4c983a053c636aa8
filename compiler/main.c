/* bnncc: the compiler driver.
 *
 *   bnncc MODEL -o OUT [--emit=bin|ir|cuda] [--target=sm_90a,sm_80,cpu] [-O0..-O3] [--report] ...
 *
 * Exit codes: 0 ok, 1 user error (bad model, unsupported op, bad flag), 2 internal error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen.h"
#include "compiler.h"
#include "frontend.h"
#include "ir.h"
#include "tune.h"
#include "util.h"

typedef enum { EMIT_BIN, EMIT_IR, EMIT_CUDA } Emit;

typedef struct Args {
    const char *model;
    const char *out;
    Emit emit;
    CompileOptions copts;
    bool report;
    const char *dump_file;
    const char *targets; /* --target=LIST */
    bool no_cache;       /* --no-cache */
    int float_convs;     /* --float-convs: CodegenOptions.float_convs */
    int lowbit;          /* --lowbit: CodegenOptions.lowbit */
    bool qconv_direct;   /* --qconv=direct: CodegenOptions.qconv_direct */
    int tune_batch;      /* --tune[=BATCH]: measure the tunable layers' candidates; 0: no */
    const char *tune_file; /* --tune-file=FILE: where --tune stores winners, or where they are read */
} Args;

static void usage(FILE *out) {
    fprintf(out,
            "usage: bnncc MODEL [-o OUT] [options]\n"
            "\n"
            "Compiles a binarized or low-bit network (.onnx, or a .bnn text model).\n"
            "\n"
            "  -o FILE              output file ('-' for standard output; default: model.bin,\n"
            "                       or standard output for --emit=ir and --emit=cuda)\n"
            "  --emit=bin           write model.bin: plan, weights, one CUBIN per target (default)\n"
            "  --emit=ir            write the IR in the text format (docs/text-format.md)\n"
            "  --emit=cuda          write the generated CUDA source of the model's kernels\n"
            "  --target=LIST        GPU architectures to compile for, comma-separated\n"
            "                       (default sm_90a,sm_80; 'cpu' alone: no GPU code)\n"
            "  --formats=MODE       packed formats of binary tensors: auto (default: tile-major\n"
            "                       for large binary dense layers when every GPU target is sm_90+),\n"
            "                       plain (NHWC-packed words everywhere), tiled (tile-major wherever\n"
            "                       a binary dense layer can read it); see docs/cli.md\n"
            "  --float-convs=MODE   float convolutions on the GPU: exact (default: the same float\n"
            "                       sums as the reference, bit for bit, on CUDA cores); fp16\n"
            "                       (inputs and weights rounded to fp16, f32 sums on the tensor\n"
            "                       cores: fastest, about 1e-3 off, so a sign after them may\n"
            "                       flip); fp16x3 (hi + lo fp16 pairs, three products a term:\n"
            "                       about 2^-21 off). The CPU path stays exact in every mode\n"
            "  --lowbit=MODE        low-bit layers: auto (default: int8 MMA past 4 activation\n"
            "                       bits or 16 plane pairs (activation bits x weight bits; for\n"
            "                       convolutions also at 15-16 pairs into 14x14 or less), bit-planes\n"
            "                       otherwise), planes, int8 (every such layer; an error naming\n"
            "                       a dense layer that cannot)\n"
            "  --qconv=KERNEL       low-bit convolutions on the GPU: halo (default: the halo-tile\n"
            "                       kernel wherever its shared memory fits), direct (the direct\n"
            "                       kernel everywhere); same results, docs/codegen.md\n"
            "  --tune[=BATCH]       measure each tunable layer's kernel configurations (conv tiles;\n"
            "                       bit-planes or int8) on this machine's GPU at BATCH (default 256),\n"
            "                       keep the fastest (outputs must equal the cost model's) and store\n"
            "                       them in --tune-file; needs a GPU\n"
            "  --tune-file=FILE     with --tune, where the winners go (default: OUT.tune); without,\n"
            "                       take the configurations of the layers FILE has winners for\n"
            "  --no-cache           compile the kernels even when the CUBIN cache has them, and\n"
            "                       store nothing there (cache: $BNNCC_CACHE_DIR, else\n"
            "                       $XDG_CACHE_HOME/bnncc, else ~/.cache/bnncc)\n"
            "  -O0 -O1 -O2 -O3      optimisation level (default -O2; -O0 runs only required passes)\n"
            "  --report, -v         print which layers became binary and which stayed float\n"
            "  --verify-each        verify the IR after every pass\n"
            "  --dump-after=PASS    print the IR after PASS ('all' for every pass) to stderr,\n"
            "                       or to --dump-file=FILE\n"
            "  --time-passes        print the time of each pass\n"
            "  --list-passes        list the passes and exit\n"
            "  --help, --version\n"
            "\n"
            "Exit codes: 0 ok, 1 user error, 2 internal error.\n");
}

static int bad_arg(const char *fmt, const char *s) {
    fprintf(stderr, "bnncc: error: ");
    fprintf(stderr, fmt, s);
    fprintf(stderr, " (see bnncc --help)\n");
    return -1;
}

static int parse_args(int argc, char **argv, Args *a) {
    memset(a, 0, sizeof *a);
    a->copts.opt_level = 2;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(s, "--version")) {
            printf("bnncc %s\n", BNN_VERSION);
            exit(0);
        } else if (!strcmp(s, "--list-passes")) {
            list_passes(stdout);
            exit(0);
        } else if (!strcmp(s, "-o")) {
            if (i + 1 >= argc)
                return bad_arg("%s needs a file name", s);
            a->out = argv[++i];
        } else if (!strncmp(s, "-o", 2)) {
            a->out = s + 2;
        } else if (!strcmp(s, "--emit=ir")) {
            a->emit = EMIT_IR;
        } else if (!strcmp(s, "--emit=bin")) {
            a->emit = EMIT_BIN;
        } else if (!strcmp(s, "--emit=cuda")) {
            a->emit = EMIT_CUDA;
        } else if (!strncmp(s, "--emit=", 7)) {
            return bad_arg("unknown --emit kind '%s' (known: bin, ir, cuda)", s + 7);
        } else if (!strncmp(s, "--target=", 9)) {
            a->targets = s + 9;
        } else if (!strcmp(s, "--tune")) {
            a->tune_batch = 256;
        } else if (!strncmp(s, "--tune=", 7)) {
            char *end;
            long b = strtol(s + 7, &end, 10);
            if (!s[7] || *end || b < 1 || b > 65536)
                return bad_arg("--tune=BATCH needs a batch from 1 to 65536, not '%s'", s + 7);
            a->tune_batch = (int)b;
        } else if (!strncmp(s, "--tune-file=", 12)) {
            if (!s[12])
                return bad_arg("%s needs a file name", s);
            a->tune_file = s + 12;
        } else if (!strcmp(s, "--no-cache")) {
            a->no_cache = true;
        } else if (!strcmp(s, "--float-convs=exact")) {
            a->float_convs = FLOAT_CONVS_EXACT;
        } else if (!strcmp(s, "--float-convs=fp16")) {
            a->float_convs = FLOAT_CONVS_FP16;
        } else if (!strcmp(s, "--float-convs=fp16x3")) {
            a->float_convs = FLOAT_CONVS_FP16X3;
        } else if (!strcmp(s, "--formats=auto")) {
            a->copts.formats = FORMATS_AUTO;
        } else if (!strcmp(s, "--formats=plain")) {
            a->copts.formats = FORMATS_PLAIN;
        } else if (!strcmp(s, "--formats=tiled")) {
            a->copts.formats = FORMATS_TILED;
        } else if (!strncmp(s, "--formats", 9)) {
            return bad_arg("unknown '%s' (--formats=auto, plain or tiled)", s);
        } else if (!strcmp(s, "--lowbit=auto")) {
            a->lowbit = LOWBIT_AUTO;
        } else if (!strcmp(s, "--lowbit=planes")) {
            a->lowbit = LOWBIT_PLANES;
        } else if (!strcmp(s, "--lowbit=int8")) {
            a->lowbit = LOWBIT_INT8;
        } else if (!strncmp(s, "--lowbit", 8)) {
            return bad_arg("unknown '%s' (--lowbit=auto, planes or int8)", s);
        } else if (!strcmp(s, "--qconv=halo") || !strcmp(s, "--qconv=direct")) {
            a->qconv_direct = s[8] == 'd';
        } else if (!strncmp(s, "--qconv", 7)) {
            return bad_arg("unknown '%s' (--qconv=halo or direct)", s);
        } else if (!strncmp(s, "--float-convs", 13)) {
            return bad_arg("unknown '%s' (--float-convs=exact, fp16 or fp16x3)", s);
        } else if (s[0] == '-' && s[1] == 'O' && s[2] >= '0' && s[2] <= '3' && !s[3]) {
            a->copts.opt_level = s[2] - '0';
        } else if (!strcmp(s, "--report") || !strcmp(s, "-v")) {
            a->report = true;
        } else if (!strcmp(s, "--verify-each")) {
            a->copts.verify_each = true;
        } else if (!strcmp(s, "--time-passes")) {
            a->copts.time_passes = true;
        } else if (!strncmp(s, "--dump-after=", 13)) {
            if (!is_pass_name(s + 13))
                return bad_arg("unknown pass '%s' in --dump-after (see bnncc --list-passes)", s + 13);
            a->copts.dump_after = s + 13;
        } else if (!strncmp(s, "--dump-file=", 12)) {
            a->dump_file = s + 12;
        } else if (s[0] == '-' && s[1]) {
            return bad_arg("unknown option '%s'", s);
        } else if (a->model) {
            fprintf(stderr, "bnncc: error: more than one model given ('%s' and '%s')\n", a->model, s);
            return -1;
        } else {
            a->model = s;
        }
    }
    if (!a->model) {
        fprintf(stderr, "bnncc: error: no model given (see bnncc --help)\n");
        return -1;
    }
    /* What the targets allow choose-formats to pick (the pre-tiled kernels need sm_90+). */
    CodegenOptions o;
    memset(&o, 0, sizeof o);
    if (codegen_parse_targets(a->targets ? a->targets : "sm_90a,sm_80", &o) != 0) {
        fprintf(stderr, "bnncc: error: %s\n", diag_message());
        return -1;
    }
    if (a->tune_batch && a->emit != EMIT_BIN) {
        fprintf(stderr, "bnncc: error: --tune measures compiled kernels: it goes with --emit=bin (the "
                        "default), not --emit=%s (give the tune file it wrote with --tune-file=FILE)\n",
                a->emit == EMIT_IR ? "ir" : "cuda");
        return -1;
    }
    if (a->tune_file && !a->tune_batch && a->emit == EMIT_IR)
        fprintf(stderr, "bnncc: warning: --tune-file has no effect with --emit=ir (the IR holds no kernel "
                        "configurations; they are chosen when the blob or the CUDA source is made)\n");
    if (a->tune_batch && o.ntargets == 0) {
        fprintf(stderr, "bnncc: error: --tune measures GPU kernels, and --target=%s has no GPU target\n",
                a->targets);
        return -1;
    }
    int tk = codegen_tiled_kernel(&o);
    a->copts.tiled_targets = tk < 0 ? -1 : tk > 0;
    if (a->copts.formats == FORMATS_TILED && tk == 0) {
        fprintf(stderr, "bnncc: error: --formats=tiled needs every GPU target to be sm_90 or newer (the "
                        "pre-tiled kernels use cp.async.bulk); drop the older targets from --target or use "
                        "--formats=auto\n");
        return -1;
    }
    return 0;
}

/* Write text to path ('-' or NULL: stdout) without ever leaving a partial file. */
static int emit_text(const char *path, const char *text) {
    if (!path || !strcmp(path, "-")) {
        fputs(text, stdout);
        return fflush(stdout) == 0 ? 0 : -1;
    }
    if (write_file_atomic(path, text, strlen(text)) != 0) {
        fprintf(stderr, "bnncc: error: %s\n", diag_message());
        return -1;
    }
    return 0;
}

/* model.bin: lower, compile the kernels per target, write atomically (docs/codegen.md). */
static int emit_blob(const Args *a, const Graph *g) {
    const char *path = a->out ? a->out : "model.bin";
    if (!strcmp(path, "-")) {
        fprintf(stderr, "bnncc: error: model.bin cannot go to standard output; give -o FILE\n");
        return 1;
    }
    CodegenOptions o;
    memset(&o, 0, sizeof o);
    if (codegen_parse_targets(a->targets ? a->targets : "sm_90a,sm_80", &o) != 0) {
        fprintf(stderr, "bnncc: error: %s\n", diag_message());
        return 1;
    }
    char failed[4096];
    snprintf(failed, sizeof failed, "%s.failed.cu", path);
    o.failed_source_path = failed;
    Buf report = {0};
    o.report = a->report ? &report : NULL;
    o.no_cache = a->no_cache;
    o.float_convs = a->float_convs;
    o.lowbit = a->lowbit;
    o.qconv_direct = a->qconv_direct;
    /* NVRTC takes seconds on a big model: say so where someone watches, or with -v. */
    o.progress = a->report || isatty(STDERR_FILENO);
    int *choice = NULL, rc = 0;
    if (a->tune_batch) {
        Buf tune_file = {0}, work = {0};
        if (a->tune_file)
            buf_puts(&tune_file, a->tune_file);
        else
            buf_printf(&tune_file, "%s.tune", path);
        buf_printf(&work, "%s.tuning.%ld", path, (long)getpid());
        TuneOptions t = {.batch = a->tune_batch, .runs = 15, .rounds = 2, .file = tune_file.data,
                         .work_path = work.data, .progress = stderr};
        TuneMeasurer gpu = tune_gpu_measurer();
        rc = tune_model(g, &o, &t, &gpu, &choice);
        buf_free(&tune_file);
        buf_free(&work);
    } else if (a->tune_file) {
        int tuned = 0;
        rc = tune_read_file(a->tune_file, g, &o, &choice, &tuned, stderr);
        if (rc == 0 && a->report)
            buf_printf(&report, "codegen: %d layers take their configurations from %s\n", tuned, a->tune_file);
    }
    o.tune_choice = choice;
    o.ntune_choice = choice ? g->nnodes : 0;
    if (rc == 0)
        rc = codegen_write_blob(g, &o, path);
    free(choice);
    if (rc != 0)
        fprintf(stderr, "bnncc: error: %s\n", diag_message());
    else if (report.data)
        fputs(report.data, stderr);
    buf_free(&report);
    return rc ? 1 : 0;
}

static int compile(Args *a) {
    Buf report = {0};
    FILE *dump = NULL;
    int rc = 1;
    Graph *g = load_model(a->model, a->report ? &report : NULL);
    if (!g) {
        fprintf(stderr, "bnncc: error: %s\n", diag_message());
        goto done;
    }
    if (a->dump_file) {
        dump = fopen(a->dump_file, "w");
        if (!dump) {
            fprintf(stderr, "bnncc: error: cannot write '%s'\n", a->dump_file);
            goto done;
        }
        a->copts.dump_out = dump;
    }
    a->copts.report = a->report ? &report : NULL;
    if (run_passes(g, &a->copts) != 0) {
        fprintf(stderr, "bnncc: error: %s\n", diag_message());
        goto done;
    }
    if (a->report)
        fprintf(stderr, "%s", report.data ? report.data : "report: nothing to say\n");
    if (a->emit == EMIT_IR) {
        char *text = print_graph_to_string(g);
        rc = emit_text(a->out, text) == 0 ? 0 : 1;
        free(text);
    } else if (a->emit == EMIT_CUDA) {
        CodegenOptions o = {.float_convs = a->float_convs, .lowbit = a->lowbit, .qconv_direct = a->qconv_direct};
        if (codegen_parse_targets(a->targets ? a->targets : "sm_90a,sm_80", &o) != 0) {
            fprintf(stderr, "bnncc: error: %s\n", diag_message());
            goto done;
        }
        int *choice = NULL, tuned = 0;
        if (a->tune_file && tune_read_file(a->tune_file, g, &o, &choice, &tuned, stderr) != 0) {
            fprintf(stderr, "bnncc: error: %s\n", diag_message());
            goto done;
        }
        o.tune_choice = choice;
        o.ntune_choice = choice ? g->nnodes : 0;
        char *text = codegen_cuda_source(g, &o);
        free(choice);
        if (!text)
            fprintf(stderr, "bnncc: error: %s\n", diag_message());
        else
            rc = emit_text(a->out, text) == 0 ? 0 : 1;
        free(text);
    } else {
        rc = emit_blob(a, g);
    }
done:
    if (dump)
        fclose(dump);
    buf_free(&report);
    free_graph(g);
    return rc;
}

int main(int argc, char **argv) {
    Args a;
    if (parse_args(argc, argv, &a) != 0)
        return 1;
    int rc = compile(&a);
    diag_free_sources();
    return rc;
}
