/* bnnrun: run a model on .npy inputs.
 *
 *   bnnrun --reference MODEL --input x.npy --output y.npy    reference interpreter
 *
 * Exit codes: 0 ok, 1 user error (bad file, wrong shape or dtype), 2 internal error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
} Args;

static void usage(FILE *out) {
    fprintf(out,
            "usage: bnnrun --reference MODEL --input X.npy [--input ...] --output Y.npy [...]\n"
            "\n"
            "Runs MODEL (.bnn text model or .onnx) on the reference interpreter.\n"
            "  --reference       use the reference interpreter (exact ONNX semantics)\n"
            "  --input FILE      one .npy per graph input, in the graph's order; the first\n"
            "                    dimension is the batch and may be any size\n"
            "  --output FILE     one .npy per graph output, in order\n"
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
    if (!a->reference) {
        fprintf(stderr, "bnnrun: error: only --reference is supported in this build: compiled "
                        "model.bin files need the runtime, which is not built yet\n");
        return -1;
    }
    return 0;
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
    if (a->noutputs != g->noutputs) {
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
    if (interp_run(g, ins, outs) != 0) {
        fprintf(stderr, "bnnrun: error: %s\n", diag_message());
        goto done;
    }
    ran = true;
    rc = 0;
    for (int i = 0; i < g->noutputs && rc == 0; i++)
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

int main(int argc, char **argv) {
    Args a;
    if (parse_args(argc, argv, &a) != 0)
        return 1;
    int rc = run_reference(&a);
    diag_free_sources();
    return rc;
}
