/* build.h: small helpers for the IR tests to build graphs through the ir.h API and run them. */
#ifndef BNN_TEST_IR_BUILD_H
#define BNN_TEST_IR_BUILD_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

#define N_ DIM_BATCH

/* TY(TY_F32, 1, 2, 3) is f32[1,2,3]; scalars use make_type(dt, 0, NULL). */
#define TY(dt, ...)                                                                         \
    make_type((dt), (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),            \
              (int64_t[]){__VA_ARGS__})
#define COUNT_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static inline void *dup_bytes(const void *p, size_t n) {
    void *q = malloc(n ? n : 1);
    if (n)
        memcpy(q, p, n);
    return q;
}

/* Storage for type t from values written as they read: floats, ints, or +1/-1 for b1. */
static inline void *pack_values(Type t, const double *v) {
    size_t nb = type_nbytes(&t, 1);
    int64_t n = type_numel(&t, 1);
    void *d = calloc(nb ? nb : 1, 1);
    for (int64_t i = 0; i < n; i++) {
        switch (t.dtype) {
        case TY_F32: ((float *)d)[i] = (float)v[i]; break;
        case TY_I32: ((int32_t *)d)[i] = (int32_t)v[i]; break;
        case TY_I64: ((int64_t *)d)[i] = (int64_t)v[i]; break;
        case TY_I8: ((int8_t *)d)[i] = (int8_t)v[i]; break;
        case TY_U8: ((uint8_t *)d)[i] = (uint8_t)v[i]; break;
        case TY_B1: bit_set(d, i, v[i] > 0); break;
        default: abort();
        }
    }
    return d;
}

#define VALS(...) ((const double[]){__VA_ARGS__})

static inline Value *konst(Graph *g, const char *name, Type t, const double *v) {
    return add_const(g, name, t, pack_values(t, v), type_nbytes(&t, 1));
}

/* A node whose result types come from inference (call after setting attributes). */
static inline Node *node(Graph *g, Op op, const char *out, int nin, Value **in) {
    const char *names[MAX_OUTPUTS] = {out, NULL};
    char second[64];
    if (op_info(op)->outputs > 1) {
        snprintf(second, sizeof second, "%s_idx", out);
        names[1] = second;
    }
    return add_node(g, op, nin, in, names, NULL);
}

/* Fill in inferred result types; returns 0 or -1 (diagnostic kept). */
static inline int settle(Node *n) {
    Type t[MAX_OUTPUTS];
    if (infer_node_types(n, t))
        return -1;
    for (int i = 0; i < n->nout; i++)
        n->out[i]->type = t[i];
    return 0;
}

static inline Tensor tensor(Type t, const double *v) {
    Tensor x;
    x.type = t;
    x.data = pack_values(t, v);
    x.nbytes = type_nbytes(&t, 1);
    return x;
}

/* Element i of a tensor as a double (b1 as +1/-1). */
static inline double elem(const Tensor *t, int64_t i) {
    switch (t->type.dtype) {
    case TY_F32: return ((const float *)t->data)[i];
    case TY_I32: return ((const int32_t *)t->data)[i];
    case TY_I64: return (double)((const int64_t *)t->data)[i];
    case TY_I8: return ((const int8_t *)t->data)[i];
    case TY_U8: return ((const uint8_t *)t->data)[i];
    case TY_B1: return bit_get(t->data, i) ? 1 : -1;
    default: abort();
    }
}

#endif
