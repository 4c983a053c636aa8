/* passes.h: what the passes share with the pass manager (compiler/pipeline.c), and a few
 * helpers the passes use on the graph. Private to compiler/. */
#ifndef BNN_PASSES_H
#define BNN_PASSES_H

#include <stdbool.h>
#include <stdint.h>

#include "compiler.h"
#include "ir.h"
#include "util.h"

/* The state one pass run sees: options, the report and the pass's own name. */
typedef struct PassContext {
    const CompileOptions *opts;
    Buf *report; /* may be NULL */
    const char *pass_name;
} PassContext;

/* Append one line "NAME: ..." to the report (no-op without one). */
void report_line(PassContext *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int run_infer_shapes(Graph *g, PassContext *ctx);
int run_cleanup(Graph *g, PassContext *ctx);
int run_sign_to_binarize(Graph *g, PassContext *ctx);
int run_padding(Graph *g, PassContext *ctx);
int run_fold_thresholds(Graph *g, PassContext *ctx);
int run_fuse_binary(Graph *g, PassContext *ctx);
int run_fuse_epilogue(Graph *g, PassContext *ctx);
int run_choose_formats(Graph *g, PassContext *ctx);
int run_plan_memory(Graph *g, PassContext *ctx);
int run_lowbit(Graph *g, PassContext *ctx); /* lowbit.c */

/* fold_thresholds.c: whether user's operand (user->in[0]) is a per-channel float chain of
 * a binary layer's accumulator that is neither 0 nor NaN for any accumulator the layer
 * can produce (checked for each one). False with a reason. */
bool float_chain_never_zero(Node *user, char *why, size_t whylen);

/* ---------------------------------------------------------------- helpers (helpers.c) */

/* The node using v, when exactly one node uses it and it is not a graph output. */
Node *single_user(const Graph *g, const Value *v);
bool is_graph_output(const Graph *g, const Value *v);
/* A b1 x b1 conv2d or dense without bias: the integer accumulator of a binary layer. */
bool is_binary_layer(const Node *n);
/* Inputs per output of a binary layer: C/groups*KH*KW or K. Its accumulator is in [-K, K]. */
int64_t binary_layer_fan_in(const Node *n);
/* A short human name for a node in report lines: its ONNX name, else its result. */
const char *layer_name(const Node *n, char *buf, size_t len);
/* Turn n into op over the given operands with no attributes, keeping its result values,
 * their names and n's source names: the in-place rewrite the fusing passes use. */
void rewrite_node(Node *n, Op op, int nin, Value *const *in);
/* Copy the int and int-list attributes of from onto to (conv and pool attributes). */
void copy_int_attrs(Node *to, const Node *from);
/* A fresh constant (data copied) named after base. */
Value *add_const_copy(Graph *g, const char *base, Type type, const void *data, size_t nbytes);
/* Put node n (appended last by add_node) right before node 'before' in topological order. */
void move_node_before(Graph *g, Node *n, const Node *before);
/* Per-channel access to a constant that broadcasts over x's shape with x's channel axis
 * 1: fills idx[c] with the element index for channel c. False if it varies on another
 * axis or would grow x. */
bool const_per_channel(const Value *k, const Type *x, int64_t *idx);
/* A maxpool's window (kernel, strides, pads, ceil_mode), read from a maxpool node and written
 * as a fused op's pool_* attributes (pool_pads and pool_ceil_mode only when not the default). */
typedef struct PoolAttrs {
    int64_t k[2], s[2], pads[4];
    bool ceil_mode;
} PoolAttrs;
PoolAttrs read_pool_attrs(const Node *pool);
void set_fused_pool_attrs(Node *to, const PoolAttrs *p);
/* Element i of an f32/i32/i8/i64 constant as double (b1: +1/-1). */
double const_elem(const Value *k, int64_t i);

#endif
