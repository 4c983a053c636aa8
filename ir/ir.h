/* ir.h: the bnncc intermediate representation, the whole interface of ir/.
 *
 * A Graph is a list of Nodes in topological order over typed tensor Values.
 * Values are graph inputs (%x), constants ($w, with data), or node results (%y).
 * Every op is declared once in ops.h; its semantics are in docs/ir.md.
 *
 * Errors a user can cause are reported through the diagnostics below: the function
 * returns failure (NULL or -1) and the message is kept for diag_message(). Only
 * broken internal invariants stop the program (unreachable(), exit code 2). */
#ifndef BNN_IR_H
#define BNN_IR_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#include "ops.h"

/* ---------------------------------------------------------------- diagnostics */

/* A place in a source text model. line == 0: no text location. */
typedef struct Loc {
    const char *file; /* not owned: interned by the graph or a static string */
    int line;
    int col;
} Loc;

/* Record a user error (replaces any earlier one). The *_at form prefixes
 * "file:line:col: " and, when the file's text was registered with
 * diag_set_source, appends the offending line and a caret. */
void diag_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void diag_error_at(Loc loc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *diag_message(void); /* "" when no error was recorded */
void diag_clear(void);
/* Keep a copy of a text file's contents so errors can quote its lines. */
void diag_set_source(const char *file, const char *text, size_t len);
void diag_free_sources(void);

/* Internal invariant violated: print file, line, message and exit(2). */
_Noreturn void unreachable_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define unreachable(...) unreachable_at(__FILE__, __LINE__, __VA_ARGS__)

/* ---------------------------------------------------------------- types */

#define MAX_RANK 6
#define DIM_BATCH (-1) /* the symbolic batch dimension, printed as N */

#define DTYPE_LIST(X)            \
    X(TY_F32, "f32", 32)         \
    X(TY_F16, "f16", 16)         \
    X(TY_I64, "i64", 64)         \
    X(TY_I32, "i32", 32)         \
    X(TY_I8, "i8", 8)            \
    X(TY_U8, "u8", 8)            \
    X(TY_B1, "b1", 1) /* bit: 1 is +1, 0 is -1 */

typedef enum {
#define X(e, name, bits) e,
    DTYPE_LIST(X)
#undef X
    TY_COUNT
} DType;

const char *dtype_name(DType t);
int dtype_bits(DType t);
bool dtype_is_float(DType t);
int dtype_from_name(const char *name); /* -1 if unknown */

/* Tile orders of a packed bit tensor (the tensor-core kernels' load units). */
typedef enum {
    TILE_NONE, /* words in plain row order along the packed axis */
    TILE_K128, /* 128-bit K chunks, chunk-major inside a row tile */
    TILE_K256, /* 256-bit K chunks, chunk-major inside a row tile */
    TILE_COUNT
} TileOrder;

/* The packing of a b1 tensor in memory. word_bits == 0: not chosen yet (a
 * logical bit tensor: element i of the row-major flattening is bit i%8 of
 * byte i/8). The format pass chooses one; kernels declare what they read. */
typedef struct PackFormat {
    int axis;      /* the axis packed into words (usually channels) */
    int word_bits; /* 32 or 64; 0 = not chosen */
    int pad_to;    /* the packed axis is zero-padded to a multiple of this */
    TileOrder tile;
} PackFormat;

typedef struct Type {
    DType dtype;
    int rank;
    int64_t dim[MAX_RANK]; /* DIM_BATCH for the symbolic batch */
    PackFormat pack;       /* TY_B1 only */
} Type;

Type make_type(DType dtype, int rank, const int64_t *dim);
bool type_equal(const Type *a, const Type *b);
bool type_has_batch(const Type *t);
/* Elements per batch item if the type has a batch dim, else total elements. Inline: the
 * reference interpreter's element loops take it as their bound. */
static inline int64_t type_numel(const Type *t, int64_t batch) {
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->dim[i] == DIM_BATCH ? batch : t->dim[i];
    return n;
}
/* Bytes of a tensor's canonical storage (b1: ceil(numel/8)). */
size_t type_nbytes(const Type *t, int64_t batch);
/* Print into buf as the text format writes it, e.g. "f32[N,1,28,28]". */
const char *type_str(const Type *t, char *buf, size_t len);
const char *tile_name(TileOrder t);
int tile_from_name(const char *name);

/* ---------------------------------------------------------------- ops */

typedef enum {
#define X(e, name, nin_min, nin_max, nout, flags) e,
    OP_LIST(X)
#undef X
    OP_COUNT
} Op;

typedef struct OpInfo {
    const char *name;
    int min_inputs;
    int max_inputs; /* -1: variadic */
    int outputs;
    int flags;
} OpInfo;

const OpInfo *op_info(Op op);
int op_from_name(const char *name); /* -1 if unknown */

/* ---------------------------------------------------------------- attributes */

typedef enum { ATTR_INT, ATTR_FLOAT, ATTR_INTS, ATTR_FLOATS, ATTR_STR } AttrKind;

typedef struct Attr {
    char *key;
    AttrKind kind;
    int64_t i;
    float f;
    int n; /* length of ints / floats */
    int64_t *ints;
    float *floats;
    char *s;
} Attr;

/* The attributes an op accepts, in the order the printer writes them. */
typedef struct AttrSpec {
    const char *key;
    AttrKind kind;
} AttrSpec;
const AttrSpec *op_attr_specs(Op op); /* terminated by {NULL} */

/* ---------------------------------------------------------------- values, nodes, graph */

typedef enum { VAL_INPUT, VAL_CONST, VAL_NODE } ValueKind;

typedef struct Node Node;

typedef struct Value {
    ValueKind kind;
    char *name; /* without its sigil (% or $) */
    Type type;
    Node *def;     /* VAL_NODE: the producing node */
    int def_index; /* which output of def */
    /* VAL_CONST: canonical little-endian storage, type_nbytes(&type, 1) bytes
     * (a constant has no batch dim). b1 is bit-packed, element i = bit i%8 of byte i/8. */
    void *data;
    size_t nbytes;
    int id; /* position in Graph.values, stable until graph_compact */
} Value;

#define MAX_OUTPUTS 2
/* Stages of a bconv2d_chain's float epilogue (docs/ir.md): what one kernel epilogue holds. */
#define CHAIN_MAX_STAGES 8

struct Node {
    Op op;
    int nin;
    Value **in;
    int nout;
    Value *out[MAX_OUTPUTS];
    int nattrs;
    Attr *attrs;
    Loc loc;        /* where a text model wrote it */
    char *src_name; /* the ONNX node name(s) it came from, or NULL */
    char *src_op;   /* the ONNX op type it came from, or NULL */
    bool dead;      /* removed; dropped by graph_compact */
};

typedef struct Graph {
    char *name;
    int ninputs, noutputs, nconsts, nnodes, nvalues;
    Value **inputs;
    Value **outputs;
    Value **consts;
    Node **nodes;   /* topological order */
    Value **values; /* every value, for ownership and ids */
    int cap_inputs, cap_outputs, cap_consts, cap_nodes, cap_values;
} Graph;

Graph *new_graph(const char *name);
void free_graph(Graph *g);

/* Names are copied. A NULL name gets a fresh one ("v12"). Names are unique per
 * sigil: graph_find_value looks up inputs and node results by %name,
 * graph_find_const constants by $name. */
Value *add_input(Graph *g, const char *name, Type type);
/* Takes ownership of data (malloc'ed, nbytes == type_nbytes(&type, 1)). */
Value *add_const(Graph *g, const char *name, Type type, void *data, size_t nbytes);
/* A node with its result values typed by the caller (types may be filled in later by
 * infer_node_types). Inputs are referenced, outputs are created with out_names. */
Node *add_node(Graph *g, Op op, int nin, Value *const *in, const char *const *out_names,
               const Type *out_types);
void add_output(Graph *g, Value *v);
Value *graph_find_value(Graph *g, const char *name);
Value *graph_find_const(Graph *g, const char *name);
char *graph_unique_name(Graph *g, const char *base); /* malloc'ed */

void node_set_src(Node *n, const char *src_name, const char *src_op);
void set_attr_int(Node *n, const char *key, int64_t v);
void set_attr_float(Node *n, const char *key, float v);
void set_attr_ints(Node *n, const char *key, int count, const int64_t *v);
void set_attr_floats(Node *n, const char *key, int count, const float *v);
void set_attr_str(Node *n, const char *key, const char *s);
const Attr *get_attr(const Node *n, const char *key);
int64_t attr_int(const Node *n, const char *key, int64_t def);
float attr_float(const Node *n, const char *key, float def);
/* Copies up to max entries into out and returns the count, or def_count/def. */
int attr_ints(const Node *n, const char *key, int64_t *out, int max, int def_count,
              const int64_t *def);
const char *attr_str(const Node *n, const char *key, const char *def);

/* The max-pool a conv2d_chain holds in its pool_* attributes, as a stand-alone maxpool node
 * over *in (attrs: room for 4; the node borrows n's attribute data). For its checks and its
 * interpreter. */
Node fused_pool_node(const Node *n, Value **in, Attr *attrs);

/* Rewiring for passes. */
void replace_all_uses(Graph *g, Value *old, Value *with);
int count_uses(const Graph *g, const Value *v);
void remove_node(Graph *g, Node *n); /* marks dead */
/* Drop dead nodes and values nothing refers to (constants included), renumber ids. */
void graph_compact(Graph *g);

/* ---------------------------------------------------------------- checks */

/* Compute the result types of n from its inputs and attributes. Returns 0 and
 * writes out[0..nout-1]; on a user error returns -1 with a diagnostic naming n.
 * Ops whose result shape is not a function of inputs (reshape) keep the declared type. */
int infer_node_types(const Node *n, Type *out);
/* Check every op's operand count, attribute kinds, operand types and shapes, and
 * that declared result types equal the inferred ones. 0 ok, -1 with a diagnostic. */
int verify_graph(const Graph *g);
/* "node 'Conv_3' (Conv)", "line 12 (conv2d %y)" or "conv2d %y": for messages. */
const char *node_where(const Node *n, char *buf, size_t len);

/* ---------------------------------------------------------------- text form */

/* Write g in the text format (docs/text-format.md). Constants up to 16 elements
 * are written as lists, b1 as hex, others as base64. Deterministic. */
void print_graph(const Graph *g, FILE *out);
char *print_graph_to_string(const Graph *g); /* malloc'ed */
/* As print_graph, but constants of more than 16 elements go to the side file
 * weights_path (each at a 64-byte aligned offset, written atomically) and the text
 * refers to them as `file "weights_ref" offset K` (weights_ref: the side file's path
 * relative to the model file). 0 ok, -1 with a diagnostic. */
int print_graph_with_weights(const Graph *g, FILE *out, const char *weights_path,
                             const char *weights_ref);
/* The text of print_graph_with_weights (malloc'ed), the bytes of its side file appended to
 * *weights (its offsets counted from weights' start, so pass an empty Buf). */
struct Buf;
char *print_graph_split(const Graph *g, const char *weights_ref, struct Buf *weights);

/* ---------------------------------------------------------------- reference interpreter */

/* A concrete tensor: type with the batch resolved (no DIM_BATCH), canonical storage. */
typedef struct Tensor {
    Type type;
    void *data;
    size_t nbytes;
} Tensor;

/* Run g on inputs (one per graph input, same order, batch dims resolved and all
 * equal). outputs[i] are allocated by the interpreter (free with free_tensor).
 * 0 ok, -1 with a diagnostic (shape mismatch, batch disagreement). */
int interp_run(const Graph *g, const Tensor *inputs, Tensor *outputs);
/* interp_run calling observe(user, n, outs) after each node n has run, with its results (batch
 * resolved), before the interpreter frees any of them: for statistics and dumps. */
typedef void (*InterpObserver)(void *user, const Node *n, const Tensor *outs);
int interp_run_observed(const Graph *g, const Tensor *inputs, Tensor *outputs, InterpObserver observe,
                        void *user);
void free_tensor(Tensor *t);
float half_to_float(uint16_t h); /* the f16 storage's value, exactly */

/* Scalar semantics shared by the interpreter and the passes, so that folding
 * evaluates exactly the float expression the interpreter does. */
float batchnorm_scalar(float x, float scale, float bias, float mean, float var, float eps);
/* QONNX Quant's integer levels [lo, hi] for `bits` (1..32): signed [-2^(bits-1) + narrow,
 * 2^(bits-1) - 1], unsigned [0, 2^bits - 1 - narrow]. */
void quant_range(int64_t bits, bool is_signed, bool narrow, int64_t *lo, int64_t *hi);
/* QONNX rounding modes (docs/ir.md quant), numbered as the blob's BLOB_ROUND_*. */
typedef enum RoundingMode {
    ROUNDING_HALF_EVEN, ROUNDING_CEIL, ROUNDING_FLOOR, ROUNDING_TO_ZERO, ROUNDING_UP, ROUNDING_HALF_UP,
    ROUNDING_HALF_DOWN
} RoundingMode;
/* The mode of an IR rounding name ("ROUND" half to even, "CEIL", "FLOOR", "ROUND_TO_ZERO" or
 * "DOWN", "UP" away from zero, "HALF_UP", "HALF_DOWN"), or -1 for another name. */
int rounding_of(const char *name);
/* The IR's name of a mode (the first of rounding_of's names for it). */
const char *rounding_name(RoundingMode mode);
/* v rounded by mode, NaN staying NaN; ties of HALF_UP / HALF_DOWN decided on the exact fraction
 * v - trunc(v) (floor(|v| + 0.5) would round just below a half up). */
float round_by(float v, RoundingMode mode);

/* The threshold op's form (t, dir) of a table of bits over the integer dots -k .. k (bits[i]
 * the bit of dot i - k): bit = dir > 0 ? dot >= t : dot <= t for every dot. A constant table
 * is t = INT32_MIN with dir +1 (all 1) or -1 (all 0). False when the bits are not monotone in
 * the dot. The folding pass and the code generator's residual thresholds both fit with it. */
bool threshold_of_bits(const uint8_t *bits, int64_t k, int32_t *t, int *dir);

/* b1 storage helpers: element i is bit i%8 of byte i/8. */
static inline int bit_get(const void *data, int64_t i) {
    return (((const uint8_t *)data)[i >> 3] >> (i & 7)) & 1;
}
static inline void bit_set(void *data, int64_t i, int v) {
    uint8_t *p = (uint8_t *)data + (i >> 3);
    *p = (uint8_t)((*p & ~(1u << (i & 7))) | ((unsigned)(v & 1) << (i & 7)));
}

#endif
