/* bnnrun: run a model on .npy inputs.
 *
 *   bnnrun model.bin --input x.npy --output y.npy [--device gpu|cpu|auto] [--batch N]
 *          [--bench N [--resident]]
 *   bnnrun --reference MODEL --input x.npy --output y.npy    reference interpreter
 *
 * Exit codes: 0 ok, 1 user error (bad file, wrong shape or dtype), 2 internal error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bnnrt.h"
#include "frontend.h"
#include "ir.h"
#include "npy.h"

#define MAX_FILES 16

typedef struct Args {
    const char *model;
    bool reference;
    const char *inputs[MAX_FILES];
    int ninputs;
    const char *outputs[MAX_FILES];
    int noutputs;
    bnn_device device;
    long batch; /* items per run; 0: the whole input */
    long bench; /* timed runs; 0: none */
    bool resident; /* time runs on the session's buffers, without copies */
    long profile;  /* runs timed step by step; 0: none */
    long profile_graph; /* GPU: runs of the graph without each step in turn; 0: none */
    long threads;  /* CPU path threads; 0: one per CPU */
    bool stats;    /* --reference: statistics of every value computed */
} Args;

static void usage(FILE *out) {
    fprintf(out,
            "usage: bnnrun MODEL.bin --input X.npy [--input ...] --output Y.npy [...]\n"
            "              [--device gpu|cpu|auto] [--batch N] [--bench N [--resident]]\n"
            "              [--profile N] [--profile-graph N] [--threads N]\n"
            "       bnnrun --reference MODEL --input X.npy [--input ...] --output Y.npy [...]\n"
            "              [--stats]\n"
            "\n"
            "Runs a model compiled by bnncc (model.bin) with libbnnrt, or MODEL (.bnn text model\n"
            "or .onnx) on the reference interpreter.\n"
            "  --input FILE      one .npy per graph input, in the graph's order; the first\n"
            "                    dimension is the batch and may be any size\n"
            "  --output FILE     one .npy per graph output, in order (optional with --bench and --profile)\n"
            "  --device D        gpu, cpu, or auto (default: the GPU if there is a usable one)\n"
            "  --batch N         run at most N items at a time (default: the whole input)\n"
            "  --bench N         after warm-up, time N runs over the input and print the median\n"
            "                    latency per run of --batch items and the throughput\n"
            "  --resident        with --bench: time runs on the first --batch items left in\n"
            "                    the session's buffers, without the input and output copies\n"
            "  --threads N       threads of the CPU path (default: one per CPU)\n"
            "  --profile N       after the other runs, time each plan step over N runs (the\n"
            "                    GPU launches steps one by one, without the CUDA graph) and\n"
            "                    print a table: median ms per step and its share\n"
            "  --profile-graph N (GPU) after the other runs, replay the CUDA graph N times\n"
            "                    with each step left out in turn (resident, first --batch\n"
            "                    items) and print what each step costs inside the graph:\n"
            "                    the whole graph's median less the median without it\n"
            "  --reference       use the reference interpreter (exact ONNX semantics)\n"
            "  --stats           with --reference: print statistics of every value the model\n"
            "                    computes (min, max, mean, std, zeros, NaN/inf; b1: the share of\n"
            "                    +1 and the channels of one sign everywhere)\n"
            "  --help, --version\n"
            "Exit codes: 0 ok, 1 user error, 2 internal error.\n");
}

static int die(const char *msg) {
    fprintf(stderr, "bnnrun: error: %s\n", msg);
    return 1;
}

static int parse_args(int argc, char **argv, Args *a) {
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(s, "--version")) {
            printf("bnnrun %s\n", BNN_VERSION);
            exit(0);
        } else if (!strcmp(s, "--reference")) {
            a->reference = true;
        } else if (!strcmp(s, "--resident")) {
            a->resident = true;
        } else if (!strcmp(s, "--stats")) {
            a->stats = true;
        } else if (!strcmp(s, "--device")) {
            const char *d = i + 1 < argc ? argv[++i] : "";
            if (!strcmp(d, "gpu"))
                a->device = BNN_DEVICE_GPU;
            else if (!strcmp(d, "cpu"))
                a->device = BNN_DEVICE_CPU;
            else if (!strcmp(d, "auto"))
                a->device = BNN_DEVICE_AUTO;
            else {
                fprintf(stderr, "bnnrun: error: --device needs gpu, cpu or auto, not '%s'\n", d);
                return -1;
            }
        } else if (!strcmp(s, "--batch") || !strcmp(s, "--bench") || !strcmp(s, "--profile") ||
                   !strcmp(s, "--profile-graph") || !strcmp(s, "--threads")) {
            char *end = NULL;
            long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
            if (!end || *end || v < 1 || v > 1000000000) {
                fprintf(stderr, "bnnrun: error: %s needs a positive count\n", s);
                return -1;
            }
            i++;
            if (!strcmp(s, "--threads") && v > BNN_MAX_THREADS) {
                fprintf(stderr, "bnnrun: error: --threads %ld: at most %d\n", v, BNN_MAX_THREADS);
                return -1;
            }
            *(!strcmp(s, "--batch")     ? &a->batch
              : !strcmp(s, "--bench")   ? &a->bench
              : !strcmp(s, "--profile") ? &a->profile
              : !strcmp(s, "--profile-graph") ? &a->profile_graph
                                        : &a->threads) = v;
        } else if (!strcmp(s, "--input") || !strcmp(s, "-i") || !strcmp(s, "--output") ||
                   !strcmp(s, "-o")) {
            bool in = s[2] == 'i' || s[1] == 'i';
            if (i + 1 >= argc) {
                fprintf(stderr, "bnnrun: error: %s needs a file name\n", s);
                return -1;
            }
            if ((in ? a->ninputs : a->noutputs) == MAX_FILES) {
                fprintf(stderr, "bnnrun: error: too many %s files\n", in ? "input" : "output");
                return -1;
            }
            if (in)
                a->inputs[a->ninputs++] = argv[++i];
            else
                a->outputs[a->noutputs++] = argv[++i];
        } else if (s[0] == '-' && s[1]) {
            fprintf(stderr, "bnnrun: error: unknown option '%s' (see bnnrun --help)\n", s);
            return -1;
        } else if (a->model) {
            fprintf(stderr, "bnnrun: error: more than one model given ('%s' and '%s')\n",
                    a->model, s);
            return -1;
        } else {
            a->model = s;
        }
    }
    if (!a->model) {
        fprintf(stderr, "bnnrun: error: no model given (see bnnrun --help)\n");
        return -1;
    }
    if (a->reference &&
        (a->device != BNN_DEVICE_AUTO || a->batch || a->bench || a->resident || a->profile || a->profile_graph ||
         a->threads)) {
        fprintf(stderr, "bnnrun: error: --device, --batch, --bench, --resident, --profile, --profile-graph and --threads "
                        "apply to model.bin, not to --reference\n");
        return -1;
    }
    if (a->resident && !a->bench) {
        fprintf(stderr, "bnnrun: error: --resident goes with --bench N (it changes what is "
                        "timed)\n");
        return -1;
    }
    if (a->stats && !a->reference) {
        fprintf(stderr, "bnnrun: error: --stats goes with --reference (the reference interpreter "
                        "keeps every value; a model.bin keeps only what later steps read)\n");
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- --stats */

typedef struct Stats {
    int64_t n, zeros, nan, inf;
    double min, max, sum, sumsq;
} Stats;

static void stats_add(Stats *st, double v) {
    if (v != v) {
        st->nan++;
        return;
    }
    if (isinf(v)) {
        st->inf++;
        return;
    }
    if (st->n == 0 || v < st->min)
        st->min = v;
    if (st->n == 0 || v > st->max)
        st->max = v;
    st->n++;
    st->zeros += v == 0;
    st->sum += v;
    st->sumsq += v * v;
}

static bool bit_at(const Tensor *t, int64_t i) { return ((const uint8_t *)t->data)[i / 8] >> (i % 8) & 1; }

/* b1: the channels (axis 1) whose bits are all equal over the batch and the other axes. */
static int64_t constant_channels(const Tensor *t) {
    if (t->type.rank < 2)
        return 0;
    int64_t outer = t->type.dim[0], ch = t->type.dim[1], inner = 1, count = 0;
    for (int d = 2; d < t->type.rank; d++)
        inner *= t->type.dim[d];
    for (int64_t c = 0; c < ch; c++) {
        bool first = bit_at(t, c * inner), same = true;
        for (int64_t b = 0; b < outer && same; b++)
            for (int64_t i = 0; i < inner && same; i++)
                same = bit_at(t, (b * ch + c) * inner + i) == first;
        count += same && outer * inner > 0;
    }
    return count;
}

/* The interpreter's observer: one line per value a node computes. */
static void print_value_stats(void *user, const Node *n, const Tensor *outs) {
    (void)user;
    for (int j = 0; j < n->nout; j++) {
        const Tensor *t = &outs[j];
        int64_t numel = type_numel(&t->type, 0);
        Stats st = {0};
        for (int64_t i = 0; i < numel; i++) {
            double v = 0.0;
            switch (t->type.dtype) {
            case TY_F32: v = ((const float *)t->data)[i]; break;
            case TY_F16: v = half_to_float(((const uint16_t *)t->data)[i]); break;
            case TY_I64: v = (double)((const int64_t *)t->data)[i]; break;
            case TY_I32: v = ((const int32_t *)t->data)[i]; break;
            case TY_I8: v = ((const int8_t *)t->data)[i]; break;
            case TY_U8: v = ((const uint8_t *)t->data)[i]; break;
            case TY_B1: v = bit_at(t, i) ? 1.0 : -1.0; break;
            default: break;
            }
            stats_add(&st, v);
        }
        char type[96], share[48];
        type_str(&t->type, type, sizeof type);
        double mean = st.n ? st.sum / (double)st.n : 0.0;
        double var = st.n ? st.sumsq / (double)st.n - mean * mean : 0.0;
        if (t->type.dtype == TY_B1)
            snprintf(share, sizeof share, "%5.1f%% +1, %lld const ch", st.n ? 100.0 * (mean + 1.0) / 2.0 : 0.0,
                     (long long)constant_channels(t));
        else
            snprintf(share, sizeof share, "%5.1f%% zero", st.n ? 100.0 * (double)st.zeros / (double)st.n : 0.0);
        printf("%-14s %-22s %11.4g %11.4g %11.4g %11.4g  %-24s %5lld %5lld  %s\n", op_info(n->op)->name, type,
               st.n ? st.min : 0.0, st.n ? st.max : 0.0, mean, sqrt(var > 0 ? var : 0.0), share,
               (long long)st.nan, (long long)st.inf, n->out[j]->name);
    }
}

static int npy_dtype_for(DType t) {
    switch (t) {
    case TY_F32: return NPY_F32;
    case TY_F16: return NPY_F16;
    case TY_I64: return NPY_I64;
    case TY_I32: return NPY_I32;
    case TY_I8: return NPY_I8;
    case TY_U8: return NPY_U8;
    case TY_B1: return NPY_I8; /* written as -1 / +1 */
    case TY_COUNT: break;
    }
    return -1;
}

/* Check one .npy array against a graph input and turn it into a Tensor (which
 * borrows the array's data). Returns the batch it implies, or -1 with msg. */
static int64_t bind_input(const Value *v, const NpyArray *arr, const char *path, Tensor *t,
                          char *msg, size_t len) {
    char want[128];
    type_str(&v->type, want, sizeof want);
    if (v->type.dtype == TY_B1) {
        snprintf(msg, len, "input %%%s has type %s: bit inputs cannot be given as .npy", v->name,
                 want);
        return -1;
    }
    if (npy_dtype_for(v->type.dtype) != (int)arr->dtype) {
        snprintf(msg, len,
                 "%s: input %%%s expects %s (%s), the file holds %s; convert it, e.g. with "
                 "x.astype(np.%s)",
                 path, v->name, npy_dtype_name((NpyDtype)npy_dtype_for(v->type.dtype)), want,
                 npy_dtype_name(arr->dtype), npy_dtype_name((NpyDtype)npy_dtype_for(v->type.dtype)));
        return -1;
    }
    int64_t batch = 1;
    bool ok = arr->rank == v->type.rank;
    for (int i = 0; ok && i < v->type.rank; i++) {
        if (v->type.dim[i] == DIM_BATCH)
            batch = arr->shape[i];
        else
            ok = arr->shape[i] == v->type.dim[i];
    }
    if (!ok || batch < 1) {
        char got[256];
        int n = snprintf(got, sizeof got, "(");
        for (int i = 0; i < arr->rank && n < (int)sizeof got; i++)
            n += snprintf(got + n, sizeof got - (size_t)n, "%s%lld", i ? ", " : "",
                          (long long)arr->shape[i]);
        snprintf(got + (n < (int)sizeof got ? n : (int)sizeof got - 2), 2, ")");
        snprintf(msg, len, "%s: input %%%s expects shape %s (N is the batch, at least 1), the file "
                 "holds shape %s", path, v->name, want, got);
        return -1;
    }
    t->type = v->type;
    for (int i = 0; i < t->type.rank; i++)
        if (t->type.dim[i] == DIM_BATCH)
            t->type.dim[i] = batch;
    t->data = arr->data;
    t->nbytes = arr->nbytes;
    return batch;
}

static int write_output(const Tensor *t, const char *path, char *msg, size_t len) {
    NpyArray arr = {0};
    arr.dtype = (NpyDtype)npy_dtype_for(t->type.dtype);
    arr.rank = t->type.rank;
    for (int i = 0; i < arr.rank; i++)
        arr.shape[i] = t->type.dim[i];
    int64_t numel = type_numel(&t->type, 1);
    int8_t *bits = NULL;
    if (t->type.dtype == TY_B1) {
        bits = malloc((size_t)(numel ? numel : 1));
        if (!bits) {
            snprintf(msg, len, "out of memory");
            return -1;
        }
        for (int64_t i = 0; i < numel; i++)
            bits[i] = bit_get(t->data, i) ? 1 : -1;
        arr.data = bits;
        arr.nbytes = (size_t)numel;
    } else {
        arr.data = t->data;
        arr.nbytes = t->nbytes;
    }
    int rc = npy_write(path, &arr, msg, len);
    free(bits);
    return rc;
}

static int run_reference(const Args *a) {
    Graph *g = load_model(a->model, NULL);
    if (!g) {
        fprintf(stderr, "bnnrun: error: %s\n", diag_message());
        return 1;
    }
    int rc = 1;
    char msg[1024];
    NpyArray arrs[MAX_FILES];
    memset(arrs, 0, sizeof arrs);
    Tensor ins[MAX_FILES];
    memset(ins, 0, sizeof ins);
    Tensor *outs = calloc((size_t)g->noutputs + 1, sizeof *outs);
    bool ran = false;
    if (!outs) {
        die("out of memory");
        goto done;
    }
    if (a->ninputs != g->ninputs) {
        fprintf(stderr, "bnnrun: error: the model has %d input%s, %d --input file%s given\n",
                g->ninputs, g->ninputs == 1 ? "" : "s", a->ninputs, a->ninputs == 1 ? "" : "s");
        goto done;
    }
    if (a->noutputs != g->noutputs && !(a->stats && a->noutputs == 0)) {
        fprintf(stderr, "bnnrun: error: the model has %d output%s, %d --output file%s given\n",
                g->noutputs, g->noutputs == 1 ? "" : "s", a->noutputs,
                a->noutputs == 1 ? "" : "s");
        goto done;
    }
    int64_t batch = -1;
    for (int i = 0; i < a->ninputs; i++) {
        if (npy_read(a->inputs[i], &arrs[i], msg, sizeof msg) != 0) {
            die(msg);
            goto done;
        }
        int64_t b = bind_input(g->inputs[i], &arrs[i], a->inputs[i], &ins[i], msg, sizeof msg);
        if (b < 0) {
            die(msg);
            goto done;
        }
        if (type_has_batch(&g->inputs[i]->type)) {
            if (batch >= 0 && b != batch) {
                fprintf(stderr, "bnnrun: error: %s: batch %lld differs from the batch %lld of the "
                        "first input\n", a->inputs[i], (long long)b, (long long)batch);
                goto done;
            }
            batch = b;
        }
    }
    if (a->stats) {
        printf("stats of every value the reference interpreter computes, over the whole batch "
               "(b1: -1/+1; const ch: channels of axis 1 of one sign everywhere)\n");
        printf("%-14s %-22s %11s %11s %11s %11s  %-24s %5s %5s  %s\n", "op", "type", "min", "max", "mean",
               "std", "zeros / +1", "nan", "inf", "value");
    }
    if (interp_run_observed(g, ins, outs, a->stats ? print_value_stats : NULL, NULL) != 0) {
        fprintf(stderr, "bnnrun: error: %s\n", diag_message());
        goto done;
    }
    ran = true;
    rc = 0;
    for (int i = 0; i < a->noutputs && rc == 0; i++)
        if (write_output(&outs[i], a->outputs[i], msg, sizeof msg) != 0) {
            die(msg);
            rc = 1;
        }
done:
    for (int i = 0; i < MAX_FILES; i++)
        npy_free(&arrs[i]);
    if (outs && ran)
        for (int i = 0; i < g->noutputs; i++)
            free_tensor(&outs[i]);
    free(outs);
    free_graph(g);
    return rc;
}

/* ---------------------------------------------------------------- model.bin through libbnnrt */

static int npy_dtype_of(bnn_dtype t) {
    switch (t) {
    case BNN_DTYPE_F32: return NPY_F32;
    case BNN_DTYPE_F16: return NPY_F16;
    case BNN_DTYPE_I64: return NPY_I64;
    case BNN_DTYPE_I32: return NPY_I32;
    case BNN_DTYPE_I8: return NPY_I8;
    case BNN_DTYPE_U8: return NPY_U8;
    case BNN_DTYPE_B1: return NPY_I8; /* written as -1 / +1 */
    }
    return -1;
}

static void shape_str(const int64_t *dims, int rank, char *buf, size_t len) {
    int n = snprintf(buf, len, "(");
    for (int i = 0; i < rank && n < (int)len; i++) {
        if (dims[i] < 0)
            n += snprintf(buf + n, len - (size_t)n, "%sN", i ? ", " : "");
        else
            n += snprintf(buf + n, len - (size_t)n, "%s%lld", i ? ", " : "", (long long)dims[i]);
    }
    if (n < (int)len)
        snprintf(buf + n, len - (size_t)n, ")");
}

/* The batch an input file holds, or -1 with an error printed. */
static int64_t check_input(const bnn_tensor_info *info, const NpyArray *arr, const char *path) {
    if (info->dtype == BNN_DTYPE_B1) {
        fprintf(stderr, "bnnrun: error: input '%s' is a bit tensor: it cannot be given as .npy\n",
                info->name);
        return -1;
    }
    if (npy_dtype_of(info->dtype) != (int)arr->dtype) {
        const char *want = npy_dtype_name((NpyDtype)npy_dtype_of(info->dtype));
        fprintf(stderr, "bnnrun: error: %s: input '%s' expects %s, the file holds %s; convert it, "
                "e.g. with x.astype(np.%s)\n", path, info->name, want, npy_dtype_name(arr->dtype),
                want);
        return -1;
    }
    bool ok = arr->rank == info->rank && arr->shape[0] >= 1;
    for (int i = 1; ok && i < info->rank; i++)
        ok = arr->shape[i] == info->dims[i];
    if (!ok) {
        char want[256], got[256];
        shape_str(info->dims, info->rank, want, sizeof want);
        shape_str(arr->shape, arr->rank, got, sizeof got);
        fprintf(stderr, "bnnrun: error: %s: input '%s' expects shape %s (N is the batch, at least "
                "1), the file holds shape %s\n", path, info->name, want, got);
        return -1;
    }
    return arr->shape[0];
}

static int compare_ms(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Run every chunk of `chunk` items once; the summed device time in *ms. */
static bnn_status run_all(bnn_session *s, int nin, int nout, int64_t batch, int64_t chunk,
                          unsigned char *const *in, const size_t *in_item,
                          unsigned char *const *out, const size_t *out_item, double *ms) {
    const void *ip[MAX_FILES];
    void *op[MAX_FILES];
    *ms = 0;
    for (int64_t at = 0; at < batch; at += chunk) {
        int n = (int)(batch - at < chunk ? batch - at : chunk);
        for (int i = 0; i < nin; i++)
            ip[i] = in[i] + (size_t)at * in_item[i];
        for (int i = 0; i < nout; i++)
            op[i] = out[i] + (size_t)at * out_item[i];
        bnn_status st = bnn_session_run(s, n, ip, op);
        if (st != BNN_STATUS_OK)
            return st;
        *ms += bnn_session_last_run_ms(s);
    }
    return BNN_STATUS_OK;
}

/* The first `chunk` items into the session's buffers with one ordinary run (--resident,
 * --profile-graph). */
static bnn_status fill_resident(bnn_session *s, int chunk, int nin, int nout, unsigned char *const *in,
                                unsigned char *const *out) {
    const void *ip[MAX_FILES];
    void *op[MAX_FILES];
    for (int i = 0; i < nin; i++)
        ip[i] = in[i];
    for (int i = 0; i < nout; i++)
        op[i] = out[i];
    return bnn_session_run(s, chunk, ip, op);
}

/* Warm-up, then `runs` timed resident runs of `chunk` items: their device times in times[]. */
static bnn_status time_resident(bnn_session *s, long runs, int chunk, double *times) {
    bnn_status st = BNN_STATUS_OK;
    for (int w = 0; w < 3 && st == BNN_STATUS_OK; w++)
        st = bnn_session_run_resident(s, chunk);
    for (long r = 0; r < runs && st == BNN_STATUS_OK; r++) {
        st = bnn_session_run_resident(s, chunk);
        times[r] = bnn_session_last_run_ms(s);
    }
    return st;
}

/* --profile: `runs` runs over the input with per-step timing on, after one to warm up, then a
 * table of each step's median time (its times summed over the chunks of a run) to stdout. */
static bnn_status profile_steps(bnn_session *s, const bnn_model *m, long runs, int nin, int nout,
                                int64_t batch, int64_t chunk, unsigned char *const *in,
                                const size_t *in_item, unsigned char *const *out,
                                const size_t *out_item) {
    const void *ip[MAX_FILES];
    void *op[MAX_FILES];
    int nsteps = bnn_model_num_steps(m);
    double *t = calloc((size_t)(nsteps ? nsteps : 1) * (size_t)runs, sizeof *t);
    double *col = malloc(sizeof *col * (size_t)runs), *run_ms = calloc((size_t)runs, sizeof *run_ms);
    bnn_status st = t && col && run_ms ? bnn_session_set_profiling(s, 1) : BNN_STATUS_OUT_OF_MEMORY;
    if (st == BNN_STATUS_OUT_OF_MEMORY && !(t && col && run_ms))
        die("out of memory");
    for (long r = -1; r < runs && st == BNN_STATUS_OK; r++) /* run -1 warms up */
        for (int64_t at = 0; at < batch && st == BNN_STATUS_OK; at += chunk) {
            int n = (int)(batch - at < chunk ? batch - at : chunk);
            for (int i = 0; i < nin; i++)
                ip[i] = in[i] + (size_t)at * in_item[i];
            for (int i = 0; i < nout; i++)
                op[i] = out[i] + (size_t)at * out_item[i];
            st = bnn_session_run(s, n, ip, op);
            for (int k = 0; r >= 0 && st == BNN_STATUS_OK && k < nsteps; k++) {
                double ms = bnn_session_step_ms(s, k);
                t[(size_t)k * (size_t)runs + (size_t)r] += ms >= 0 ? ms : 0.0;
                run_ms[r] += ms >= 0 ? ms : 0.0;
            }
        }
    if (st == BNN_STATUS_OK) {
        bnn_session_set_profiling(s, 0);
        bool gpu = bnn_session_device(s) == BNN_DEVICE_GPU;
        qsort(run_ms, (size_t)runs, sizeof *run_ms, compare_ms);
        double total = run_ms[runs / 2];
        const char *clock = gpu ? "steps launched one by one without the CUDA graph, GPU events" : "wall clock";
        if (chunk == batch)
            printf("profile: %ld runs of batch %lld on %s (%s); median ms per step\n", runs,
                   (long long)batch, bnn_session_device_name(s), clock);
        else
            printf("profile: %ld passes over %lld items in runs of batch %lld on %s (%s); median ms "
                   "per step, summed over a pass\n", runs, (long long)batch, (long long)chunk,
                   bnn_session_device_name(s), clock);
        printf("%5s  %-13s %-24s %10s %7s\n", "step", "kind", "kernel", "ms", "share");
        for (int k = 0; k < nsteps; k++) {
            bnn_step_info info;
            bnn_model_step_info(m, k, &info);
            if (bnn_session_step_ms(s, k) < 0) { /* not run on this device */
                printf("%5d  %-13s %-24s %10s %7s\n", k, info.kind, info.kernel[0] ? info.kernel : "-",
                       "-", "");
                continue;
            }
            memcpy(col, t + (size_t)k * (size_t)runs, sizeof *col * (size_t)runs);
            qsort(col, (size_t)runs, sizeof *col, compare_ms);
            double med = col[runs / 2];
            printf("%5d  %-13s %-24s %10.4f %6.1f%%\n", k, info.kind, info.kernel[0] ? info.kernel : "-",
                   med, total > 0 ? 100.0 * med / total : 0.0);
        }
        printf("%5s  %-38s %10.4f\n", "", "all steps (median run)", total);
    }
    free(t);
    free(col);
    free(run_ms);
    return st;
}

/* Median device ms of `runs` resident runs of `chunk` items, after 3 to warm up. */
static bnn_status median_resident(bnn_session *s, long runs, int chunk, double *times, double *median) {
    bnn_status st = time_resident(s, runs, chunk, times);
    qsort(times, (size_t)runs, sizeof *times, compare_ms);
    *median = times[runs / 2];
    return st;
}

/* --profile-graph: on the first `chunk` items (already in the session's buffers from a full
 * run), the whole graph's median over `runs` runs, then for each step the GPU runs at this
 * batch the graph's median without it: a table of what each step adds to the graph's time,
 * launch overlap included (bnn_session_set_graph_omit; the outputs of those runs are wrong and
 * stay in the session). */
static bnn_status profile_graph(bnn_session *s, const bnn_model *m, long runs, int chunk) {
    int nsteps = bnn_model_num_steps(m);
    double *times = malloc(sizeof *times * (size_t)runs), full = 0, without = 0;
    bool *ran = calloc((size_t)(nsteps ? nsteps : 1), sizeof *ran);
    if (!times || !ran) {
        free(times);
        free(ran);
        return BNN_STATUS_OUT_OF_MEMORY;
    }
    /* which steps run at this batch: one profiled run says */
    bnn_status st = bnn_session_set_profiling(s, 1);
    if (st == BNN_STATUS_OK)
        st = bnn_session_run_resident(s, chunk);
    for (int k = 0; st == BNN_STATUS_OK && k < nsteps; k++)
        ran[k] = bnn_session_step_ms(s, k) >= 0;
    if (st == BNN_STATUS_OK)
        st = bnn_session_set_profiling(s, 0);
    if (st == BNN_STATUS_OK)
        st = bnn_session_set_device_timing(s, 1);
    if (st == BNN_STATUS_OK)
        st = median_resident(s, runs, chunk, times, &full);
    if (st == BNN_STATUS_OK) {
        printf("profile-graph: %ld CUDA graph runs of batch %d on %s, resident; the whole graph: median %.4f ms\n"
               "(each row: the graph's median with that step left out, and what the step adds: the difference)\n",
               runs, chunk, bnn_session_device_name(s), full);
        printf("%5s  %-13s %-24s %12s %10s %7s\n", "step", "kind", "kernel", "without ms", "adds ms", "share");
    }
    for (int k = 0; st == BNN_STATUS_OK && k < nsteps; k++) {
        bnn_step_info info;
        bnn_model_step_info(m, k, &info);
        if (!ran[k]) {
            printf("%5d  %-13s %-24s %12s %10s %7s\n", k, info.kind, info.kernel[0] ? info.kernel : "-", "-", "-", "");
            continue;
        }
        st = bnn_session_set_graph_omit(s, k);
        if (st == BNN_STATUS_OK)
            st = median_resident(s, runs, chunk, times, &without);
        if (st == BNN_STATUS_OK)
            printf("%5d  %-13s %-24s %12.4f %10.4f %6.1f%%\n", k, info.kind, info.kernel, without, full - without,
                   full > 0 ? 100.0 * (full - without) / full : 0.0);
    }
    if (st == BNN_STATUS_OK)
        st = bnn_session_set_graph_omit(s, -1);
    free(times);
    free(ran);
    return st;
}

static int run_blob(const Args *a) {
    bnn_model *m = NULL;
    bnn_session *s = NULL;
    NpyArray arrs[MAX_FILES];
    memset(arrs, 0, sizeof arrs);
    unsigned char *outs[MAX_FILES] = {0};
    double *times = NULL;
    int rc = 1;
    char msg[1024];
    bnn_status st = bnn_model_load_file(a->model, &m);
    if (st != BNN_STATUS_OK) {
        const char *ext = strrchr(a->model, '.');
        bool source = ext && (!strcmp(ext, ".onnx") || !strcmp(ext, ".bnn"));
        fprintf(stderr, "bnnrun: error: %s%s\n", bnn_last_error(),
                source && st == BNN_STATUS_BAD_BLOB
                    ? " (compile it with bnncc first, or run it with --reference)" : "");
        return 1;
    }
    int nin = bnn_model_num_inputs(m), nout = bnn_model_num_outputs(m);
    bnn_tensor_info iinfo[MAX_FILES], oinfo[MAX_FILES];
    size_t in_item[MAX_FILES], out_item[MAX_FILES];
    if (nin > MAX_FILES || nout > MAX_FILES) {
        die("the model has more inputs or outputs than bnnrun handles (16)");
        goto done;
    }
    if (a->ninputs != nin ||
        (a->noutputs != nout && !((a->bench || a->profile || a->profile_graph) && a->noutputs == 0))) {
        bool ins = a->ninputs != nin;
        fprintf(stderr, "bnnrun: error: the model has %d %s%s, %d --%s file%s given\n",
                ins ? nin : nout, ins ? "input" : "output", (ins ? nin : nout) == 1 ? "" : "s",
                ins ? a->ninputs : a->noutputs, ins ? "input" : "output",
                (ins ? a->ninputs : a->noutputs) == 1 ? "" : "s");
        goto done;
    }
    int64_t batch = -1;
    for (int i = 0; i < nin; i++) {
        bnn_model_input_info(m, i, &iinfo[i]);
        in_item[i] = iinfo[i].item_bytes;
        if (npy_read(a->inputs[i], &arrs[i], msg, sizeof msg) != 0) {
            die(msg);
            goto done;
        }
        int64_t b = check_input(&iinfo[i], &arrs[i], a->inputs[i]);
        if (b < 0)
            goto done;
        if (batch >= 0 && b != batch) {
            fprintf(stderr, "bnnrun: error: %s: batch %lld differs from the batch %lld of the "
                    "first input\n", a->inputs[i], (long long)b, (long long)batch);
            goto done;
        }
        batch = b;
    }
    if (batch < 0)
        batch = 1; /* a model without inputs runs once */
    if (batch > 0x7fffffff) {
        die("the input batch is too large");
        goto done;
    }
    int64_t chunk = a->batch && a->batch < batch ? a->batch : batch;
    for (int i = 0; i < nout; i++) {
        bnn_model_output_info(m, i, &oinfo[i]);
        out_item[i] = oinfo[i].item_bytes;
        outs[i] = malloc(out_item[i] * (size_t)batch + 1);
        if (!outs[i]) {
            die("out of memory");
            goto done;
        }
    }
    st = bnn_session_create(m, a->device, (int)chunk, &s);
    if (st != BNN_STATUS_OK) {
        fprintf(stderr, "bnnrun: error: %s\n", bnn_last_error());
        goto done;
    }
    if (a->profile_graph && bnn_session_device(s) != BNN_DEVICE_GPU) {
        fprintf(stderr, "bnnrun: error: --profile-graph times the GPU's CUDA graph: this session runs on "
                        "the CPU (use --device gpu on a machine with a GPU)\n");
        goto done;
    }
    if (bnn_session_device(s) == BNN_DEVICE_CPU) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        long threads = a->threads ? a->threads : cpus < 1 ? 1 : cpus > BNN_MAX_THREADS ? BNN_MAX_THREADS : cpus;
        st = bnn_session_set_threads(s, (int)threads);
        if (st != BNN_STATUS_OK) {
            fprintf(stderr, "bnnrun: error: %s\n", bnn_last_error());
            goto done;
        }
    }
    unsigned char *ins[MAX_FILES];
    for (int i = 0; i < nin; i++)
        ins[i] = arrs[i].data;
    if (a->bench) {
        times = malloc(sizeof *times * (size_t)a->bench);
        if (!times) {
            die("out of memory");
            goto done;
        }
        /* --bench reports device time on the GPU: CUDA events around each run. */
        bnn_session_set_device_timing(s, 1);
    }
    double ms;
    st = run_all(s, nin, nout, batch, chunk, ins, in_item, outs, out_item, &ms);
    if (st == BNN_STATUS_OK && a->bench && a->resident) {
        st = fill_resident(s, (int)chunk, nin, nout, ins, outs);
        if (st == BNN_STATUS_OK)
            st = time_resident(s, a->bench, (int)chunk, times);
    } else if (st == BNN_STATUS_OK && a->bench) {
        /* Warm-up: the first runs capture CUDA graphs and warm caches and clocks. */
        for (int w = 0; w < 3 && st == BNN_STATUS_OK; w++)
            st = run_all(s, nin, nout, batch, chunk, ins, in_item, outs, out_item, &ms);
        for (long r = 0; r < a->bench && st == BNN_STATUS_OK; r++) {
            st = run_all(s, nin, nout, batch, chunk, ins, in_item, outs, out_item, &ms);
            times[r] = ms * (double)chunk / (double)batch; /* per run of `chunk` items */
        }
    }
    if (st == BNN_STATUS_OK && a->profile)
        st = profile_steps(s, m, a->profile, nin, nout, batch, chunk, ins, in_item, outs, out_item);
    if (st == BNN_STATUS_OK && a->profile_graph) {
        st = fill_resident(s, (int)chunk, nin, nout, ins, outs);
        if (st == BNN_STATUS_OK)
            st = profile_graph(s, m, a->profile_graph, (int)chunk);
    }
    if (st != BNN_STATUS_OK) {
        fprintf(stderr, "bnnrun: error: %s\n", bnn_last_error());
        goto done;
    }
    if (a->bench) {
        qsort(times, (size_t)a->bench, sizeof *times, compare_ms);
        double med = times[a->bench / 2];
        bool gpu = bnn_session_device(s) == BNN_DEVICE_GPU;
        if (gpu)
            printf("device: %s\n", bnn_session_device_name(s));
        else
            printf("device: %s, %d thread%s\n", bnn_session_device_name(s), bnn_session_threads(s),
                   bnn_session_threads(s) == 1 ? "" : "s");
        printf("batch %lld, %ld runs: median %.4f ms, min %.4f ms, %.1f items/s (%s)\n",
               (long long)chunk, a->bench, med, times[0], med > 0 ? (double)chunk * 1e3 / med : 0.0,
               a->resident ? (gpu ? "GPU events around the graph, resident buffers: no copies"
                                  : "wall clock, resident buffers: no copies")
                           : (gpu ? "GPU events, copies included" : "wall clock"));
    }
    rc = 0;
    for (int i = 0; i < a->noutputs && rc == 0; i++) {
        NpyArray arr = {0};
        arr.dtype = (NpyDtype)npy_dtype_of(oinfo[i].dtype);
        arr.rank = oinfo[i].rank;
        arr.shape[0] = batch;
        for (int d = 1; d < arr.rank; d++)
            arr.shape[d] = oinfo[i].dims[d];
        int8_t *pm = NULL;
        if (oinfo[i].dtype == BNN_DTYPE_B1) {
            int64_t numel = npy_numel(&arr);
            pm = malloc((size_t)numel + 1);
            if (!pm) {
                rc = die("out of memory");
                break;
            }
            /* Each item's bits start on a byte: unpack item by item. */
            int64_t per = numel / batch;
            for (int64_t n = 0; n < batch; n++)
                for (int64_t k = 0; k < per; k++)
                    pm[n * per + k] = (outs[i][(size_t)n * out_item[i] + (size_t)k / 8] >> (k % 8)) & 1
                                          ? 1 : -1;
            arr.data = pm;
            arr.nbytes = (size_t)numel;
        } else {
            arr.data = outs[i];
            arr.nbytes = out_item[i] * (size_t)batch;
        }
        if (npy_write(a->outputs[i], &arr, msg, sizeof msg) != 0)
            rc = die(msg);
        free(pm);
    }
done:
    free(times);
    for (int i = 0; i < MAX_FILES; i++) {
        npy_free(&arrs[i]);
        free(outs[i]);
    }
    bnn_session_free(s);
    bnn_model_free(m);
    return rc;
}

int main(int argc, char **argv) {
    Args a;
    if (parse_args(argc, argv, &a) != 0)
        return 1;
    int rc = a.reference ? run_reference(&a) : run_blob(&a);
    diag_free_sources();
    return rc;
}
