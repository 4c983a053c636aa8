/* onnx_import.h: internals of the ONNX importer (frontend/onnx/), shared by its files
 * and its tests. Not part of frontend.h: nothing outside frontend/onnx and tests/onnx
 * should need it.
 *
 * The importer walks the ONNX nodes in dependency order. A value that depends only on
 * initializers is a CTensor, folded on the host; a value that depends on a graph input
 * is an IR Value. ONNX semantics are kept: an ONNX float tensor maps to an f32 IR value
 * even where the importer computes it from a b1 one (cast(b) for a binarized
 * activation), so that consumers can look through the cast (canon.c). */
#ifndef BNN_ONNX_IMPORT_H
#define BNN_ONNX_IMPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "frontend.h"
#include "onnx.pb-c.h"

/* Same as import_onnx_file, from memory: path is only used in messages and to find
 * external data files (NULL: external data is refused). For the tests and the fuzzer. */
Graph *import_onnx_memory(const char *path, const void *data, size_t len, Buf *report);

/* ---------------------------------------------------------------- constant tensors */

/* ONNX element types the importer reads (TensorProto.DataType). */
enum {
    ONNX_FLOAT = 1, ONNX_UINT8 = 2, ONNX_INT8 = 3, ONNX_UINT16 = 4, ONNX_INT16 = 5,
    ONNX_INT32 = 6, ONNX_INT64 = 7, ONNX_STRING = 8, ONNX_BOOL = 9, ONNX_FLOAT16 = 10,
    ONNX_DOUBLE = 11, ONNX_UINT32 = 12, ONNX_UINT64 = 13,
};

/* The most elements a folded tensor or one batch item of a runtime tensor may have. */
#define MAX_ELEMS ((int64_t)1 << 31)

/* *acc *= b unless that overflows or passes MAX_ELEMS (b >= 0). */
static inline bool mul_elems(int64_t *acc, int64_t b) {
    int64_t r;
    if (b < 0 || __builtin_mul_overflow(*acc, b, &r) || r > MAX_ELEMS)
        return false;
    *acc = r;
    return true;
}

/* A number as an int64, saturated (NaN gives 0): float-typed index tensors must not
 * cause undefined conversions. */
static inline int64_t sat_i64(double v) {
    if (!(v == v))
        return 0;
    if (v >= 9.2e18)
        return INT64_MAX;
    if (v <= -9.2e18)
        return INT64_MIN + 1;
    return (int64_t)v;
}

/* A shape entry of a folded Shape result that stands for the batch size. */
#define BATCH_MARK INT64_MIN

typedef enum { CT_F32, CT_I64 } CKind;

/* A tensor known at import time. Floating types are held as float, integer and bool
 * types as int64 (elem says which ONNX type it stands for). */
typedef struct CTensor {
    CKind kind;
    int elem;
    int rank;
    int64_t dim[MAX_RANK];
    int64_t n;  /* element count */
    float *f;   /* CT_F32 */
    int64_t *i; /* CT_I64; BATCH_MARK entries only in shape vectors */
} CTensor;

CTensor *new_ctensor(CKind kind, int elem, int rank, const int64_t *dim);
void free_ctensor(CTensor *t);
CTensor *copy_ctensor(const CTensor *t);
bool ctensor_has_batch_mark(const CTensor *t);
double ctensor_get(const CTensor *t, int64_t k); /* element k as a number */

/* ---------------------------------------------------------------- the importer */

/* What an ONNX tensor name stands for. */
typedef struct Sym {
    char *name;
    CTensor *c;      /* known at import time, or NULL */
    Value *v;        /* the IR value (runtime), or NULL */
    Value *cv;       /* c materialized as an IR constant (cached), or NULL */
    bool is_bool;    /* v is b1 standing for an ONNX bool: bit 1 = true */
    bool defined;
} Sym;

typedef struct Imp {
    const char *path;
    char *dir; /* the model's folder, for external data; NULL: none allowed */
    Graph *g;
    Buf *report;
    int64_t opset;
    Sym *syms; /* open-addressing hash table on name */
    size_t cap_syms, nsyms;
    const Onnx__NodeProto *node; /* the node being imported, for messages */
    int nbinary, nlayers;        /* for the report summary */
} Imp;

/* Record "PATH: node 'NAME' (OP): MESSAGE" (node part only while a node is current)
 * and return -1. */
int imp_error(Imp *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *imp_node_name(const Imp *im);

Sym *sym_lookup(Imp *im, const char *name); /* NULL if never defined */
Sym *sym_define(Imp *im, const char *name);

/* Reading a TensorProto (initializers, Constant, attribute tensors). */
CTensor *read_tensor(Imp *im, const Onnx__TensorProto *tp, const char *what);

/* Node attributes. */
const Onnx__AttributeProto *node_attr(const Onnx__NodeProto *n, const char *name);
int64_t node_attr_int(const Onnx__NodeProto *n, const char *name, int64_t def);
float node_attr_float(const Onnx__NodeProto *n, const char *name, float def);
/* Copies the string (NUL-terminated, truncated to len-1) and returns out, or def. */
const char *node_attr_str(const Onnx__NodeProto *n, const char *name, const char *def,
                          char *out, size_t len);
/* Number of ints copied (at most max), or -1 when absent. */
int node_attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *out, int max);

/* The node's i-th input symbol; NULL when absent or empty (optional input). */
Sym *node_in(Imp *im, int i);
int node_nin(const Imp *im);

/* Constant folding (fold.c). Returns 1 if the node was folded into its outputs, 0 if the
 * op is not foldable, -1 on an error (diagnostic set). */
int fold_node(Imp *im);
/* The axes of Squeeze/Unsqueeze-like ops: the attribute (before opset 13) or the given
 * input. Returns the count (0 when absent, *present false) or -1. */
int read_axes(Imp *im, int input, int64_t *axes, int max, bool *present);
/* Reshape's target shape with 0 and -1 resolved against numel elements. */
int resolve_reshape(Imp *im, const CTensor *shape, const int64_t *in_dim, int in_rank,
                    int64_t numel, bool allowzero, int *rank, int64_t *dim);
/* The RoundingMode of a QONNX rounding_mode attribute (the IR's names, and HALF_EVEN for
 * ROUND); -1 if unknown. */
int onnx_rounding(const char *s);

/* Op import (ops.c). 0 ok, -1 with a diagnostic. */
int import_node(Imp *im);

/* IR construction helpers (ops.c). */
Value *sym_value(Imp *im, Sym *s); /* runtime value or materialized constant */
Value *const_value(Imp *im, const CTensor *c); /* a fresh IR constant for c */
Value *emit1(Imp *im, Op op, int nin, Value **in, Type t);
Value *emit_cast(Imp *im, Value *x, DType to);
Value *emit_binary(Imp *im, Op op, Value *a, Value *b); /* elementwise, broadcast */
Value *emit_scalar_op(Imp *im, Op op, Value *a, float s); /* a OP s for a scalar s */
int broadcast_type(Imp *im, const Type *a, const Type *b, Type *out);
Value *emit_reshape(Imp *im, Value *x, int rank, const int64_t *dim);

/* Binary canonicalization (canon.c). */
/* If v is a ±1 float tensor computed from bits (cast(b), possibly times a scalar
 * constant), return the bits and the scale; NULL otherwise. */
Value *match_bipolar(const Value *v, float *scale);
/* Import a dense layer y = x·wᵀ (+ bias): w is [O,K] (one row per output), bias [O] or
 * NULL. Chooses b1 x b1 where it can and appends the report line. */
Value *emit_linear(Imp *im, Value *x, const CTensor *w, const CTensor *bias, const char *optype);
/* Import a conv2d with the conv attributes already decided. */
typedef struct ConvAttrs {
    int64_t strides[2], pads[4], dilations[2], group;
} ConvAttrs;
Value *emit_conv(Imp *im, Value *x, const CTensor *w, const CTensor *bias, const ConvAttrs *ca);
/* Remove nodes whose results nobody uses (the casts the binary layers looked through). */
void drop_dead_nodes(Graph *g);

#endif
