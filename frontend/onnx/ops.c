/* ops.c: importing ONNX nodes whose inputs depend on the graph's inputs into IR ops
 * (docs/onnx.md lists the mapping). Result types are computed here, with the batch
 * dimension kept symbolic. Data-movement ops on a binarized value (cast of a b1) move
 * the bits and cast after, so that the binary layers downstream can see them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_import.h"

/* ---------------------------------------------------------------- IR helpers */

/* A unique IR name from an ONNX one plus a suffix, other characters made '_'. */
static char *clean_name(Imp *im, const char *base, const char *suffix) {
    Buf b = {0};
    for (const char *p = base; *p; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.';
        buf_put(&b, ok ? &c : "_", 1);
    }
    if (!b.len)
        buf_puts(&b, "c");
    buf_puts(&b, suffix);
    char *u = graph_unique_name(im->g, b.data);
    buf_free(&b);
    return u;
}

static Value *add_ctensor(Imp *im, const CTensor *c, const char *base, const char *suffix) {
    Type t = make_type(c->kind == CT_F32 ? TY_F32 : TY_I64, c->rank, c->dim);
    size_t nb = type_nbytes(&t, 1);
    void *data = xmalloc(nb ? nb : 1);
    if (c->kind == CT_F32)
        memcpy(data, c->f, nb);
    else
        memcpy(data, c->i, nb);
    char *name = clean_name(im, base, suffix);
    Value *v = add_const(im->g, name, t, data, nb);
    free(name);
    return v;
}

static Value *make_const(Imp *im, const CTensor *c, const char *suffix) {
    return add_ctensor(im, c, imp_node_name(im), suffix);
}

Value *const_value(Imp *im, const CTensor *c) { return make_const(im, c, ".c"); }

static Value *const_f32(Imp *im, int rank, const int64_t *dim, const float *vals,
                        const char *suffix) {
    CTensor *c = new_ctensor(CT_F32, ONNX_FLOAT, rank, dim);
    memcpy(c->f, vals, (size_t)c->n * sizeof *vals);
    Value *v = make_const(im, c, suffix);
    free_ctensor(c);
    return v;
}

static Value *scalar_const(Imp *im, float s) { return const_f32(im, 0, NULL, &s, ".s"); }

Value *sym_value(Imp *im, Sym *s) {
    if (s->v)
        return s->v;
    if (!s->cv)
        s->cv = add_ctensor(im, s->c, s->name, "");
    return s->cv;
}

Value *emit1(Imp *im, Op op, int nin, Value **in, Type t) {
    Node *n = add_node(im->g, op, nin, in, NULL, &t);
    if (im->node)
        node_set_src(n, imp_node_name(im), im->node->op_type);
    return n->out[0];
}

static Type retype(Type t, DType d) {
    t.dtype = d;
    memset(&t.pack, 0, sizeof t.pack);
    return t;
}

Value *emit_cast(Imp *im, Value *x, DType to) {
    Value *y = emit1(im, OP_CAST, 1, &x, retype(x->type, to));
    set_attr_str(y->def, "to", dtype_name(to));
    return y;
}

int broadcast_type(Imp *im, const Type *a, const Type *b, Type *out) {
    int r = a->rank > b->rank ? a->rank : b->rank;
    int64_t dim[MAX_RANK];
    for (int d = 0; d < r; d++) {
        int da = d - (r - a->rank), db = d - (r - b->rank);
        int64_t x = da >= 0 ? a->dim[da] : 1, y = db >= 0 ? b->dim[db] : 1;
        if (x == y || y == 1)
            dim[d] = x;
        else if (x == 1)
            dim[d] = y;
        else {
            char s1[96], s2[96];
            return imp_error(im, "operand shapes %s and %s do not broadcast",
                             type_str(a, s1, sizeof s1), type_str(b, s2, sizeof s2));
        }
    }
    *out = make_type(a->dtype, r, dim);
    return 0;
}

Value *emit_binary(Imp *im, Op op, Value *a, Value *b) {
    Type t;
    if (broadcast_type(im, &a->type, &b->type, &t) < 0)
        return NULL;
    Value *in[2] = {a, b};
    return emit1(im, op, 2, in, t);
}

Value *emit_scalar_op(Imp *im, Op op, Value *a, float s) {
    return emit_binary(im, op, a, scalar_const(im, s));
}

Value *emit_reshape(Imp *im, Value *x, int rank, const int64_t *dim) {
    Type t = make_type(x->type.dtype, rank, dim);
    return emit1(im, OP_RESHAPE, 1, &x, t);
}

/* ---------------------------------------------------------------- small helpers */

static bool op_is(const Onnx__NodeProto *n, const char *name) { return !strcmp(n->op_type, name); }

static Sym *define_out(Imp *im, int k, Value *v) {
    const Onnx__NodeProto *n = im->node;
    if ((size_t)k >= n->n_output || !n->output[k] || !n->output[k][0])
        return NULL;
    Sym *s = sym_define(im, n->output[k]);
    s->v = v;
    return s;
}

static int out_value(Imp *im, Value *v) {
    if (!v)
        return -1;
    if (!define_out(im, 0, v))
        return imp_error(im, "the node has no output");
    return 0;
}

/* The runtime (non-constant) input k, an f32 value; NULL with an error otherwise. */
static Value *runtime_in(Imp *im, int k) {
    Sym *s = node_in(im, k);
    if (!s) {
        imp_error(im, "input %d is missing", k);
        return NULL;
    }
    if (s->is_bool) {
        imp_error(im, "input %d is a boolean tensor, which this op does not take here", k);
        return NULL;
    }
    return sym_value(im, s);
}

static const CTensor *const_in(Imp *im, int k, const char *what) {
    Sym *s = node_in(im, k);
    if (!s || !s->c) {
        imp_error(im, "%s (input %d) must be constant (an initializer or computed from them)",
                  what, k);
        return NULL;
    }
    return s->c;
}

static bool is_scalar(const CTensor *c) { return c->n == 1; }

static bool all_equal(const CTensor *c, double v) {
    for (int64_t k = 0; k < c->n; k++)
        if (ctensor_get(c, k) != v)
            return false;
    return true;
}

static int64_t per_item(const Type *t) {
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++)
        if (t->dim[d] != DIM_BATCH)
            n *= t->dim[d];
    return n;
}

/* Apply a data-movement op to the bits under a binarized value when there are any:
 * op(s * cast(b)) = s * cast(op(b)) exactly for reshape and transpose (any scale s),
 * maxpool (s > 0) and ±1 padding (s = 1). */
static Value *bits_under(Value *x, float *scale) {
    *scale = 1.0f;
    return match_bipolar(x, scale);
}

static Value *finish_moved(Imp *im, Value *y, bool moved, float scale) {
    if (!moved)
        return y;
    y = emit_cast(im, y, TY_F32);
    return scale == 1.0f ? y : emit_scalar_op(im, OP_MUL, y, scale);
}

/* ---------------------------------------------------------------- shape-only ops */

static int import_reshape_to(Imp *im, Value *x, int rank, const int64_t *dim) {
    float s;
    Value *b = bits_under(x, &s);
    Value *y = emit_reshape(im, b ? b : x, rank, dim);
    return out_value(im, finish_moved(im, y, b != NULL, s));
}

static int import_reshape(Imp *im) {
    Value *x = runtime_in(im, 0);
    if (!x)
        return -1;
    const CTensor *shape = const_in(im, 1, "the target shape");
    if (!shape)
        return -1;
    if (shape->kind != CT_I64 || shape->rank != 1 || shape->n > MAX_RANK)
        return imp_error(im, "the shape must be a 1-D int64 tensor of at most %d entries",
                         MAX_RANK);
    bool allowzero = node_attr_int(im->node, "allowzero", 0) != 0;
    const Type *in = &x->type;
    bool has_batch = type_has_batch(in);
    int rank = (int)shape->n;
    int64_t dim[MAX_RANK];
    int infer = -1, batch_at = -1;
    for (int d = 0; d < rank; d++) {
        int64_t s = shape->i[d];
        bool batch = s == BATCH_MARK;
        if (s == 0 && !allowzero) {
            if (d >= in->rank)
                return imp_error(im, "shape entry %d is 0 but the input has rank %d", d,
                                 in->rank);
            batch = in->dim[d] == DIM_BATCH;
            s = in->dim[d];
        } else if (s == -1) {
            if (infer >= 0)
                return imp_error(im, "the shape has two -1 entries");
            infer = d;
            dim[d] = -1;
            continue;
        }
        if (batch) {
            if (batch_at >= 0)
                return imp_error(im, "the shape names the batch twice");
            batch_at = d;
            dim[d] = DIM_BATCH;
            continue;
        }
        if (s < 0)
            return imp_error(im, "bad shape entry %lld", (long long)s);
        dim[d] = s;
    }
    /* Exports write the batch as 1 or -1 in the first entry: put it back. */
    if (has_batch && batch_at < 0 && rank > 0) {
        if (dim[0] == -1 && infer == 0) {
            infer = -1;
        } else if (dim[0] != 1) {
            char buf[96];
            return imp_error(im, "reshaping %s would mix the batch into other dimensions; the "
                             "first dimension must stay the batch", type_str(in, buf, sizeof buf));
        }
        dim[0] = DIM_BATCH;
        batch_at = 0;
    }
    int64_t per = per_item(in), known = 1;
    for (int d = 0; d < rank; d++)
        if (d != infer && dim[d] != DIM_BATCH && !mul_elems(&known, dim[d]))
            return imp_error(im, "shape entry %lld is too large", (long long)dim[d]);
    if (infer >= 0) {
        if (known == 0 || per % known)
            return imp_error(im, "cannot reshape %lld elements per item into the shape",
                             (long long)per);
        dim[infer] = per / known;
    } else if (known != per) {
        return imp_error(im, "cannot reshape %lld elements per item into %lld", (long long)per,
                         (long long)known);
    }
    if (!has_batch && batch_at >= 0)
        return imp_error(im, "the shape names the batch but the input has none");
    return import_reshape_to(im, x, rank, dim);
}

static int import_flatten(Imp *im) {
    Value *x = runtime_in(im, 0);
    if (!x)
        return -1;
    const Type *t = &x->type;
    int64_t axis = node_attr_int(im->node, "axis", 1);
    if (axis < 0)
        axis += t->rank;
    if (axis < 0 || axis > t->rank)
        return imp_error(im, "bad axis %lld", (long long)axis);
    int64_t lead = 1, rest = 1;
    bool batch_lead = false;
    for (int d = 0; d < t->rank; d++) {
        if (t->dim[d] == DIM_BATCH) {
            if (d >= axis)
                return imp_error(im, "flattening the batch into the features is not supported");
            batch_lead = true;
        } else if (d < axis) {
            lead *= t->dim[d];
        } else {
            rest *= t->dim[d];
        }
    }
    if (batch_lead && lead != 1)
        return imp_error(im, "flattening the batch with other dimensions is not supported");
    int64_t dim[2] = {batch_lead ? DIM_BATCH : lead, rest};
    return import_reshape_to(im, x, 2, dim);
}

static int import_squeeze(Imp *im, bool unsqueeze) {
    Value *x = runtime_in(im, 0);
    if (!x)
        return -1;
    const Type *t = &x->type;
    int64_t axes[MAX_RANK];
    bool present;
    int na = read_axes(im, 1, axes, MAX_RANK, &present);
    if (na < 0)
        return -1;
    int64_t dim[MAX_RANK];
    int r = 0;
    if (unsqueeze) {
        r = t->rank + na;
        if (r > MAX_RANK)
            return imp_error(im, "rank %d is over the limit of %d", r, MAX_RANK);
        bool ins[MAX_RANK] = {false};
        for (int k = 0; k < na; k++) {
            int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
            if (a < 0 || a >= r || ins[a])
                return imp_error(im, "bad axis %lld", (long long)axes[k]);
            ins[a] = true;
        }
        for (int d = 0, j = 0; d < r; d++)
            dim[d] = ins[d] ? 1 : t->dim[j++];
    } else {
        bool drop[MAX_RANK] = {false};
        if (!present)
            for (int d = 0; d < t->rank; d++)
                drop[d] = t->dim[d] == 1;
        for (int k = 0; k < na; k++) {
            int64_t a = axes[k] < 0 ? axes[k] + t->rank : axes[k];
            if (a < 0 || a >= t->rank)
                return imp_error(im, "bad axis %lld", (long long)axes[k]);
            if (t->dim[a] == DIM_BATCH)
                return imp_error(im, "squeezing the batch dimension is not supported");
            if (t->dim[a] != 1)
                return imp_error(im, "cannot squeeze axis %lld of size %lld", (long long)axes[k],
                                 (long long)t->dim[a]);
            drop[a] = true;
        }
        for (int d = 0; d < t->rank; d++)
            if (!drop[d])
                dim[r++] = t->dim[d];
    }
    return import_reshape_to(im, x, r, dim);
}

static int import_transpose(Imp *im) {
    Value *x = runtime_in(im, 0);
    if (!x)
        return -1;
    int rank = x->type.rank;
    int64_t perm[MAX_RANK];
    int np = node_attr_ints(im->node, "perm", perm, MAX_RANK);
    if (np < 0) {
        np = rank;
        for (int d = 0; d < rank; d++)
            perm[d] = rank - 1 - d;
    }
    if (np != rank)
        return imp_error(im, "perm has %d entries for a rank-%d tensor", np, rank);
    bool seen[MAX_RANK] = {false};
    int64_t dim[MAX_RANK];
    for (int d = 0; d < rank; d++) {
        if (perm[d] < 0 || perm[d] >= rank || seen[perm[d]])
            return imp_error(im, "perm is not a permutation");
        seen[perm[d]] = true;
        dim[d] = x->type.dim[perm[d]];
    }
    float s;
    Value *b = bits_under(x, &s);
    Value *src = b ? b : x;
    Value *y = emit1(im, OP_TRANSPOSE, 1, &src, make_type(src->type.dtype, rank, dim));
    set_attr_ints(y->def, "perm", rank, perm);
    return out_value(im, finish_moved(im, y, b != NULL, s));
}

/* ---------------------------------------------------------------- pooling */

typedef struct PoolAttrs {
    int64_t kernel[2], strides[2], pads[4], dilations[2];
    int ceil_mode;
} PoolAttrs;

static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe,
                        int ceil_mode) {
    int64_t span = in + pb + pe - ((k - 1) * d + 1);
    if (span < 0)
        return 0;
    int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    /* ONNX/PyTorch: the last window must start inside the input or its left padding. */
    if (ceil_mode && (out - 1) * s >= in + pb)
        out--;
    return out;
}

/* Reads kernel (or the weight's kernel), strides, pads, dilations, auto_pad for a 2-D
 * window over x [N,C,H,W]. */
static int read_window(Imp *im, const Type *x, const int64_t *wkernel, PoolAttrs *pa) {
    const Onnx__NodeProto *n = im->node;
    if (x->rank != 4)
        return imp_error(im, "only 2-D (NCHW, rank 4) inputs are supported, not rank %d",
                         x->rank);
    int64_t v[8];
    int k = node_attr_ints(n, "kernel_shape", v, 8);
    if (k >= 0 && k != 2)
        return imp_error(im, "kernel_shape must have 2 entries");
    if (wkernel) {
        if (k == 2 && (v[0] != wkernel[0] || v[1] != wkernel[1]))
            return imp_error(im, "kernel_shape disagrees with the weights");
        pa->kernel[0] = wkernel[0];
        pa->kernel[1] = wkernel[1];
    } else {
        if (k != 2)
            return imp_error(im, "kernel_shape is required");
        pa->kernel[0] = v[0];
        pa->kernel[1] = v[1];
    }
    pa->strides[0] = pa->strides[1] = 1;
    pa->dilations[0] = pa->dilations[1] = 1;
    memset(pa->pads, 0, sizeof pa->pads);
    k = node_attr_ints(n, "strides", v, 8);
    if (k >= 0 && k != 2)
        return imp_error(im, "strides must have 2 entries");
    if (k == 2) {
        pa->strides[0] = v[0];
        pa->strides[1] = v[1];
    }
    k = node_attr_ints(n, "dilations", v, 8);
    if (k >= 0 && k != 2)
        return imp_error(im, "dilations must have 2 entries");
    if (k == 2) {
        pa->dilations[0] = v[0];
        pa->dilations[1] = v[1];
    }
    k = node_attr_ints(n, "pads", v, 8);
    if (k >= 0 && k != 4)
        return imp_error(im, "pads must have 4 entries");
    if (k == 4)
        memcpy(pa->pads, v, sizeof pa->pads);
    pa->ceil_mode = (int)node_attr_int(n, "ceil_mode", 0);
    for (int d = 0; d < 2; d++)
        if (pa->kernel[d] < 1 || pa->strides[d] < 1 || pa->dilations[d] < 1 ||
            pa->kernel[d] > 4096 || pa->strides[d] > 4096 || pa->dilations[d] > 4096)
            return imp_error(im, "bad kernel, strides or dilations");
    for (int d = 0; d < 4; d++)
        if (pa->pads[d] < 0 || pa->pads[d] > 4096)
            return imp_error(im, "pads must be between 0 and 4096");
    char buf[32];
    const char *ap = node_attr_str(n, "auto_pad", "NOTSET", buf, sizeof buf);
    if (!strcmp(ap, "VALID")) {
        memset(pa->pads, 0, sizeof pa->pads);
    } else if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
        for (int d = 0; d < 2; d++) {
            int64_t in = x->dim[2 + d], s = pa->strides[d];
            int64_t out = (in + s - 1) / s;
            int64_t total = (out - 1) * s + (pa->kernel[d] - 1) * pa->dilations[d] + 1 - in;
            if (total < 0)
                total = 0;
            int64_t small = total / 2;
            bool upper = !strcmp(ap, "SAME_UPPER");
            pa->pads[d] = upper ? small : total - small;
            pa->pads[d + 2] = upper ? total - small : small;
        }
    } else if (strcmp(ap, "NOTSET") != 0) {
        return imp_error(im, "auto_pad '%s' is not supported", ap);
    }
    return 0;
}

static Type window_type(const Type *x, int64_t c, const PoolAttrs *pa) {
    int64_t dim[4] = {x->dim[0], c, 0, 0};
    for (int d = 0; d < 2; d++)
        dim[2 + d] = pool_out(x->dim[2 + d], pa->kernel[d], pa->strides[d], pa->dilations[d],
                              pa->pads[d], pa->pads[d + 2], pa->ceil_mode);
    return make_type(x->dtype, 4, dim);
}

static int check_window_out(Imp *im, const Type *t) {
    if (t->dim[2] < 1 || t->dim[3] < 1)
        return imp_error(im, "the window is larger than the padded input");
    return 0;
}

static int import_maxpool(Imp *im, bool global) {
    Value *x = runtime_in(im, 0);
    if (!x)
        return -1;
    PoolAttrs pa;
    if (global) {
        if (x->type.rank != 4)
            return imp_error(im, "only rank-4 inputs are supported");
        memset(&pa, 0, sizeof pa);
        pa.kernel[0] = x->type.dim[2];
        pa.kernel[1] = x->type.dim[3];
        pa.strides[0] = pa.strides[1] = pa.dilations[0] = pa.dilations[1] = 1;
    } else {
        if (read_window(im, &x->type, NULL, &pa) < 0)
            return -1;
        if (node_attr_int(im->node, "storage_order", 0) != 0 && im->node->n_output > 1)
            return imp_error(im, "storage_order=1 is not supported");
    }
    float s;
    Value *b = bits_under(x, &s);
    if (b && !(s > 0))
        b = NULL; /* max(-v) is not -max(v) */
    Value *src = b ? b : x;
    Type t = window_type(&src->type, src->type.dim[1], &pa);
    if (check_window_out(im, &t) < 0)
        return -1;
    Value *y = emit1(im, OP_MAXPOOL, 1, &src, t);
    set_attr_ints(y->def, "kernel", 2, pa.kernel);
    set_attr_ints(y->def, "strides", 2, pa.strides);
    set_attr_ints(y->def, "pads", 4, pa.pads);
    set_attr_ints(y->def, "dilations", 2, pa.dilations);
    set_attr_int(y->def, "ceil_mode", pa.ceil_mode);
    return out_value(im, finish_moved(im, y, b != NULL, s));
}

static int import_avgpool(Imp *im) {
    Value *x = runtime_in(im, 0);
    if (!x)
        return -1;
    PoolAttrs pa;
    if (read_window(im, &x->type, NULL, &pa) < 0)
        return -1;
    if (pa.dilations[0] != 1 || pa.dilations[1] != 1)
        return imp_error(im, "dilated average pooling is not supported");
    Type t = window_type(&x->type, x->type.dim[1], &pa);
    if (check_window_out(im, &t) < 0)
        return -1;
    Value *y = emit1(im, OP_AVGPOOL, 1, &x, t);
    set_attr_ints(y->def, "kernel", 2, pa.kernel);
    set_attr_ints(y->def, "strides", 2, pa.strides);
    set_attr_ints(y->def, "pads", 4, pa.pads);
    set_attr_int(y->def, "ceil_mode", pa.ceil_mode);
    set_attr_int(y->def, "count_include_pad", node_attr_int(im->node, "count_include_pad", 0));
    return out_value(im, y);
}

static int import_global_avgpool(Imp *im) {
    Value *x = runtime_in(im, 0);
    if (!x)
        return -1;
    if (x->type.rank != 4)
        return imp_error(im, "only rank-4 (NCHW) inputs are supported");
    Type t = x->type;
    t.dim[2] = t.dim[3] = 1;
    return out_value(im, emit1(im, OP_GLOBALAVGPOOL, 1, &x, t));
}

/* ReduceMean over the two spatial axes of an NCHW tensor (PyTorch 2.x exports
 * adaptive_avg_pool2d(x, 1) and x.mean((2, 3)) this way) is a global average pool. */
static int import_reduce_mean(Imp *im) {
    Value *x = runtime_in(im, 0);
    if (!x)
        return -1;
    int64_t axes[MAX_RANK];
    bool present;
    int n = read_axes(im, 1, axes, MAX_RANK, &present);
    if (n < 0)
        return -1;
    int rank = x->type.rank;
    bool spatial = rank == 4 && n == 2;
    for (int k = 0; spatial && k < n; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
        spatial = a == 2 || a == 3;
    }
    spatial = spatial && axes[0] != axes[1];
    if (!spatial)
        return imp_error(im, "only a mean over the two spatial axes of an NCHW tensor (axes "
                         "[2, 3]) is supported");
    Type t = x->type;
    t.dim[2] = t.dim[3] = 1;
    Value *y = emit1(im, OP_GLOBALAVGPOOL, 1, &x, t);
    if (node_attr_int(im->node, "keepdims", 1) == 0) {
        int64_t dim[2] = {t.dim[0], t.dim[1]};
        y = emit_reshape(im, y, 2, dim);
    }
    return out_value(im, y);
}

/* ---------------------------------------------------------------- linear layers */

static CTensor *transpose2(const CTensor *b) {
    int64_t dim[2] = {b->dim[1], b->dim[0]};
    CTensor *t = new_ctensor(CT_F32, ONNX_FLOAT, 2, dim);
    for (int64_t i = 0; i < b->dim[0]; i++)
        for (int64_t j = 0; j < b->dim[1]; j++)
            t->f[j * b->dim[0] + i] = (float)ctensor_get(b, i * b->dim[1] + j);
    return t;
}

static int import_conv(Imp *im) {
    Value *x = runtime_in(im, 0);
    if (!x)
        return -1;
    const CTensor *w = const_in(im, 1, "the weight");
    if (!w)
        return -1;
    Sym *bs = node_in(im, 2);
    if (bs && !bs->c)
        return imp_error(im, "the bias must be constant");
    if (w->rank != 4 || w->kind != CT_F32)
        return imp_error(im, "only 2-D convolutions (rank-4 float weights) are supported");
    PoolAttrs pa;
    if (read_window(im, &x->type, &w->dim[2], &pa) < 0)
        return -1;
    if (pa.ceil_mode)
        return imp_error(im, "bad attribute ceil_mode");
    ConvAttrs ca;
    memcpy(ca.strides, pa.strides, sizeof ca.strides);
    memcpy(ca.pads, pa.pads, sizeof ca.pads);
    memcpy(ca.dilations, pa.dilations, sizeof ca.dilations);
    ca.group = node_attr_int(im->node, "group", 1);
    const CTensor *bias = bs ? bs->c : NULL;
    if (bias && (bias->n != w->dim[0] || bias->kind != CT_F32))
        return imp_error(im, "the bias must have one float per output channel");
    return out_value(im, emit_conv(im, x, w, bias, &ca));
}

/* Bias of Gemm/MatMul as [O] (beta applied), or NULL if C is not constant. */
static CTensor *gemm_bias(Imp *im, const CTensor *c, int64_t o, float beta) {
    bool ok = c->kind == CT_F32 && (c->n == 1 || (c->n == o && c->dim[c->rank - 1] == o));
    if (!ok) {
        imp_error(im, "the bias C must be a scalar or have one value per output");
        return NULL;
    }
    CTensor *b = new_ctensor(CT_F32, ONNX_FLOAT, 1, &o);
    for (int64_t k = 0; k < o; k++)
        b->f[k] = beta * c->f[c->n == 1 ? 0 : k];
    return b;
}

static int import_gemm(Imp *im) {
    const Onnx__NodeProto *n = im->node;
    Value *x = runtime_in(im, 0);
    if (!x)
        return -1;
    if (node_attr_int(n, "transA", 0))
        return imp_error(im, "transA=1 on a non-constant A is not supported");
    const CTensor *b = const_in(im, 1, "B");
    if (!b)
        return -1;
    if (b->rank != 2 || x->type.rank != 2 || b->kind != CT_F32)
        return imp_error(im, "A and B must be matrices");
    float alpha = node_attr_float(n, "alpha", 1.0f), beta = node_attr_float(n, "beta", 1.0f);
    CTensor *w = node_attr_int(n, "transB", 0) ? copy_ctensor(b) : transpose2(b);
    if (alpha != 1.0f)
        for (int64_t k = 0; k < w->n; k++)
            w->f[k] *= alpha;
    CTensor *bias = NULL;
    Sym *cs = node_in(im, 2);
    if (cs && !cs->c) {
        free_ctensor(w);
        return imp_error(im, "a non-constant C is not supported");
    }
    if (cs && !(bias = gemm_bias(im, cs->c, w->dim[0], beta))) {
        free_ctensor(w);
        return -1;
    }
    Value *y = emit_linear(im, x, w, bias, "Gemm");
    free_ctensor(w);
    free_ctensor(bias);
    return out_value(im, y);
}

static int import_matmul(Imp *im) {
    Sym *as = node_in(im, 0), *bs = node_in(im, 1);
    if (!as || !bs)
        return imp_error(im, "expects two inputs");
    if (!as->c && bs->c && bs->c->rank == 2 && as->v && as->v->type.rank == 2 &&
        bs->c->kind == CT_F32) {
        CTensor *w = transpose2(bs->c);
        Value *y = emit_linear(im, as->v, w, NULL, "MatMul");
        free_ctensor(w);
        return out_value(im, y);
    }
    Value *a = sym_value(im, as), *b = sym_value(im, bs);
    if (a->type.rank < 2 || b->type.rank < 2 || a->type.dtype != TY_F32 ||
        b->type.dtype != TY_F32)
        return imp_error(im, "only float matrices of rank 2 or more are supported");
    Type ta = a->type, tb = b->type, lead_a = ta, lead_b = tb, t;
    lead_a.rank -= 2;
    lead_b.rank -= 2;
    if (ta.dim[ta.rank - 1] != tb.dim[tb.rank - 2])
        return imp_error(im, "inner dimensions disagree");
    if (broadcast_type(im, &lead_a, &lead_b, &t) < 0)
        return -1;
    t.dim[t.rank] = ta.dim[ta.rank - 2];
    t.dim[t.rank + 1] = tb.dim[tb.rank - 1];
    t.rank += 2;
    if (im->report)
        buf_printf(im->report, "node '%s' (MatMul): general matmul (no constant matrix "
                   "operand), kept float\n", imp_node_name(im));
    im->nlayers++;
    Value *in[2] = {a, b};
    return out_value(im, emit1(im, OP_MATMUL, 2, in, t));
}

static int import_batchnorm(Imp *im) {
    const Onnx__NodeProto *n = im->node;
    Value *x = runtime_in(im, 0);
    if (!x)
        return -1;
    if (node_attr_int(n, "training_mode", 0) != 0)
        return imp_error(im, "training_mode=1 is not supported");
    if (im->opset < 9 && node_attr_int(n, "spatial", 1) != 1)
        return imp_error(im, "spatial=0 is not supported");
    if (x->type.rank < 2)
        return imp_error(im, "the input must have a channel axis");
    int64_t c = x->type.dim[1];
    Value *in[5] = {x};
    static const char *const names[] = {"scale", "bias", "mean", "var"};
    for (int k = 1; k < 5; k++) {
        const CTensor *p = const_in(im, k, names[k - 1]);
        if (!p)
            return -1;
        if (p->n != c || p->kind != CT_F32)
            return imp_error(im, "%s must have %lld floats (one per channel)", names[k - 1],
                             (long long)c);
        Sym *s = node_in(im, k);
        if (p->rank != 1) {
            CTensor *flat = copy_ctensor(p);
            flat->rank = 1;
            flat->dim[0] = c;
            in[k] = make_const(im, flat, ".bn");
            free_ctensor(flat);
        } else {
            in[k] = sym_value(im, s);
        }
    }
    Value *y = emit1(im, OP_BATCHNORM, 5, in, x->type);
    set_attr_float(y->def, "epsilon", node_attr_float(n, "epsilon", 1e-5f));
    return out_value(im, y);
}

/* ---------------------------------------------------------------- elementwise */

/* Add(a, Sub(s, a)) where s is Sign(a) or a binarization of a: the straight-through
 * estimator's leftover, which is s up to float rounding. */
static Value *match_ste(Value *a, Value *d) {
    if (!d->def || d->def->op != OP_SUB || d->def->in[1] != a)
        return NULL;
    Value *s = d->def->in[0];
    if (!s->def)
        return NULL;
    if (s->def->op == OP_SIGN && s->def->in[0] == a)
        return s;
    float sc;
    Value *b = match_bipolar(s, &sc);
    if (b && b->def && (b->def->op == OP_BINARIZE || b->def->op == OP_THRESHOLD) &&
        b->def->in[0] == a)
        return s;
    return NULL;
}

static int import_elementwise(Imp *im, Op op) {
    Sym *as = node_in(im, 0), *bs = node_in(im, 1);
    if (!as || !bs || node_nin(im) != 2)
        return imp_error(im, "expects two inputs");
    if (as->is_bool || bs->is_bool)
        return imp_error(im, "arithmetic on boolean tensors is not supported");
    Value *a = sym_value(im, as), *b = sym_value(im, bs);
    if (op == OP_ADD && !as->c && !bs->c) {
        Value *s = match_ste(a, b);
        if (!s)
            s = match_ste(b, a);
        if (s)
            return out_value(im, s);
    }
    /* x * 1 and x / 1 are x exactly: drop them (exporters leave scale-1 muls). */
    if ((op == OP_MUL || op == OP_DIV) && bs->c && is_scalar(bs->c) && bs->c->kind == CT_F32 &&
        bs->c->f[0] == 1.0f && bs->c->rank <= a->type.rank)
        return out_value(im, a);
    if (op == OP_MUL && as->c && is_scalar(as->c) && as->c->kind == CT_F32 &&
        as->c->f[0] == 1.0f && as->c->rank <= b->type.rank)
        return out_value(im, b);
    if (a->type.dtype != TY_F32 || b->type.dtype != TY_F32)
        return imp_error(im, "only float operands are supported");
    return out_value(im, emit_binary(im, op, a, b));
}

static int import_clip_values(Imp *im, Value *x, float lo, float hi) {
    if (lo > hi)
        return imp_error(im, "min is greater than max");
    /* Clip of a ±1 tensor to a range that holds ±1 (HardTanh after a binarization) is
     * the identity. */
    float s;
    if (match_bipolar(x, &s) && s == 1.0f && lo <= -1.0f && hi >= 1.0f)
        return out_value(im, x);
    Value *y = emit1(im, OP_CLIP, 1, &x, x->type);
    if (lo != -INFINITY)
        set_attr_float(y->def, "min", lo);
    if (hi != INFINITY)
        set_attr_float(y->def, "max", hi);
    return out_value(im, y);
}

static int import_clip(Imp *im) {
    Value *x = runtime_in(im, 0);
    if (!x)
        return -1;
    float lo = -INFINITY, hi = INFINITY;
    if (im->opset < 11) {
        lo = node_attr_float(im->node, "min", lo);
        hi = node_attr_float(im->node, "max", hi);
    } else {
        for (int k = 1; k <= 2; k++) {
            Sym *s = node_in(im, k);
            if (!s)
                continue;
            if (!s->c || !is_scalar(s->c))
                return imp_error(im, "%s must be a constant scalar", k == 1 ? "min" : "max");
            (k == 1 ? &lo : &hi)[0] = (float)ctensor_get(s->c, 0);
        }
    }
    return import_clip_values(im, x, lo, hi);
}

/* Min/Max of a tensor and a constant scalar: a one-sided Clip (HardTanh forms). */
static int import_minmax(Imp *im, bool is_max) {
    Sym *as = node_in(im, 0), *bs = node_in(im, 1);
    if (node_nin(im) != 2 || !as || !bs)
        return imp_error(im, "only Min/Max of two inputs are supported");
    Sym *rt = as->c ? bs : as, *ct = as->c ? as : bs;
    if (rt->c || !ct->c || !is_scalar(ct->c))
        return imp_error(im, "only Min/Max of a tensor and a constant scalar are supported");
    float s = (float)ctensor_get(ct->c, 0);
    Value *x = sym_value(im, rt);
    return import_clip_values(im, x, is_max ? s : -INFINITY, is_max ? INFINITY : s);
}

static int import_unary(Imp *im, Op op) {
    Value *x = runtime_in(im, 0);
    if (!x)
        return -1;
    if (x->type.dtype != TY_F32)
        return imp_error(im, "only float inputs are supported");
    return out_value(im, emit1(im, op, 1, &x, x->type));
}

static int import_pad(Imp *im) {
    const Onnx__NodeProto *n = im->node;
    Value *x = runtime_in(im, 0);
    if (!x)
        return -1;
    int rank = x->type.rank;
    char buf[32];
    const char *mode = node_attr_str(n, "mode", "constant", buf, sizeof buf);
    if (strcmp(mode, "constant") != 0)
        return imp_error(im, "mode '%s' is not supported (only constant)", mode);
    int64_t pads[2 * MAX_RANK];
    float value = 0;
    if (im->opset < 11) {
        if (node_attr_ints(n, "pads", pads, 2 * MAX_RANK) != 2 * rank)
            return imp_error(im, "pads must have %d entries", 2 * rank);
        value = node_attr_float(n, "value", 0.0f);
    } else {
        const CTensor *p = const_in(im, 1, "pads");
        if (!p)
            return -1;
        Sym *vs = node_in(im, 2), *axs = node_in(im, 3);
        if (vs) {
            if (!vs->c || !is_scalar(vs->c))
                return imp_error(im, "constant_value must be a constant scalar");
            value = (float)ctensor_get(vs->c, 0);
        }
        int64_t axes[MAX_RANK];
        int na = rank;
        for (int d = 0; d < rank; d++)
            axes[d] = d;
        if (axs) {
            if (!axs->c || axs->c->n > rank)
                return imp_error(im, "axes must be constant");
            na = (int)axs->c->n;
            for (int k = 0; k < na; k++) {
                axes[k] = sat_i64(ctensor_get(axs->c, k));
                if (axes[k] < 0)
                    axes[k] += rank;
                if (axes[k] < 0 || axes[k] >= rank)
                    return imp_error(im, "bad axis");
            }
        }
        if (p->n != 2 * na)
            return imp_error(im, "pads must have %d entries", 2 * na);
        for (int d = 0; d < 2 * rank; d++)
            pads[d] = 0;
        for (int k = 0; k < na; k++) {
            pads[axes[k]] = sat_i64(ctensor_get(p, k));
            pads[axes[k] + rank] = sat_i64(ctensor_get(p, k + na));
        }
    }
    int64_t dim[MAX_RANK];
    for (int d = 0; d < rank; d++) {
        if (pads[d] < 0 || pads[d + rank] < 0 || pads[d] > 65536 || pads[d + rank] > 65536)
            return imp_error(im, "negative or huge pads are not supported");
        if (x->type.dim[d] == DIM_BATCH) {
            if (pads[d] || pads[d + rank])
                return imp_error(im, "padding the batch dimension is not supported");
            dim[d] = DIM_BATCH;
        } else {
            dim[d] = x->type.dim[d] + pads[d] + pads[d + rank];
        }
    }
    /* PyTorch 1.13 exports AvgPool2d(padding=0) as an all-zero Pad + AveragePool: an
     * identity, which the code generator (no 'pad' step) would otherwise refuse. */
    bool zero = true;
    for (int d = 0; d < 2 * rank; d++)
        zero = zero && pads[d] == 0;
    if (zero)
        return out_value(im, x);
    float s;
    Value *b = (value == 1.0f || value == -1.0f) ? bits_under(x, &s) : NULL;
    if (b && s != 1.0f)
        b = NULL;
    Value *src = b ? b : x;
    Value *y = emit1(im, OP_PAD, 1, &src, make_type(src->type.dtype, rank, dim));
    set_attr_ints(y->def, "pads", 2 * rank, pads);
    set_attr_float(y->def, "value", value);
    return out_value(im, finish_moved(im, y, b != NULL, 1.0f));
}

static int import_softmax(Imp *im) {
    Value *x = runtime_in(im, 0);
    if (!x)
        return -1;
    int rank = x->type.rank;
    int64_t axis = node_attr_int(im->node, "axis", im->opset < 13 ? 1 : -1);
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis >= rank)
        return imp_error(im, "bad axis");
    if (x->type.dim[axis] == DIM_BATCH)
        return imp_error(im, "softmax over the batch dimension is not supported");
    if (im->opset >= 13 || axis == rank - 1) {
        Value *y = emit1(im, OP_SOFTMAX, 1, &x, x->type);
        set_attr_int(y->def, "axis", axis);
        return out_value(im, y);
    }
    /* Before opset 13, Softmax normalizes over all axes from axis on: flatten them. */
    int64_t rest = 1, lead = 1;
    bool batch = false;
    for (int d = 0; d < rank; d++) {
        if (x->type.dim[d] == DIM_BATCH)
            batch = true;
        else if (d >= axis)
            rest *= x->type.dim[d];
        else
            lead *= x->type.dim[d];
    }
    if (!batch || x->type.dim[0] != DIM_BATCH)
        return imp_error(im, "unsupported softmax layout");
    int64_t d3[3] = {DIM_BATCH, lead, rest};
    Value *r = emit_reshape(im, x, 3, d3);
    Value *y = emit1(im, OP_SOFTMAX, 1, &r, r->type);
    set_attr_int(y->def, "axis", 2);
    return out_value(im, emit_reshape(im, y, rank, x->type.dim));
}

static int import_topk(Imp *im) {
    const Onnx__NodeProto *n = im->node;
    Value *x = runtime_in(im, 0);
    if (!x)
        return -1;
    int64_t k;
    if (im->opset < 10) {
        k = node_attr_int(n, "k", -1);
    } else {
        const CTensor *kc = const_in(im, 1, "K");
        if (!kc)
            return -1;
        if (kc->n != 1)
            return imp_error(im, "K must have one element");
        k = sat_i64(ctensor_get(kc, 0));
    }
    int rank = x->type.rank;
    int64_t axis = node_attr_int(n, "axis", -1);
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis >= rank || x->type.dim[axis] == DIM_BATCH)
        return imp_error(im, "bad axis (the batch axis cannot be sorted)");
    if (k < 1 || k > x->type.dim[axis])
        return imp_error(im, "K=%lld is out of range", (long long)k);
    Type tv = x->type, ti;
    tv.dim[axis] = k;
    ti = retype(tv, TY_I64);
    Type types[2] = {tv, ti};
    Node *nd = add_node(im->g, OP_TOPK, 1, &x, NULL, types);
    node_set_src(nd, imp_node_name(im), n->op_type);
    set_attr_int(nd, "k", k);
    set_attr_int(nd, "axis", axis);
    set_attr_int(nd, "largest", node_attr_int(n, "largest", 1) ? 1 : 0);
    define_out(im, 0, nd->out[0]);
    define_out(im, 1, nd->out[1]);
    return 0;
}

static int import_argmax(Imp *im) {
    const Onnx__NodeProto *n = im->node;
    Value *x = runtime_in(im, 0);
    if (!x)
        return -1;
    int rank = x->type.rank;
    int64_t axis = node_attr_int(n, "axis", 0);
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis >= rank || x->type.dim[axis] == DIM_BATCH)
        return imp_error(im, "bad axis (the batch axis cannot be reduced)");
    if (node_attr_int(n, "select_last_index", 0))
        return imp_error(im, "select_last_index=1 is not supported");
    int keep = node_attr_int(n, "keepdims", 1) ? 1 : 0;
    Type t = retype(x->type, TY_I64);
    if (keep) {
        t.dim[axis] = 1;
    } else {
        for (int d = (int)axis; d < rank - 1; d++)
            t.dim[d] = t.dim[d + 1];
        t.rank--;
    }
    Value *y = emit1(im, OP_ARGMAX, 1, &x, t);
    set_attr_int(y->def, "axis", axis);
    set_attr_int(y->def, "keepdims", keep);
    return out_value(im, y);
}

/* ---------------------------------------------------------------- comparisons, Where, Cast */

/* x CMP t for a constant scalar t, as a bit: binarize of x - t (or t - x). IEEE
 * subtraction is zero only for equal operands and keeps the order's sign, so this is
 * exact; NaN gives false as in ONNX. */
static int import_compare(Imp *im) {
    const Onnx__NodeProto *n = im->node;
    Sym *as = node_in(im, 0), *bs = node_in(im, 1);
    if (!as || !bs)
        return imp_error(im, "expects two inputs");
    bool ge = op_is(n, "GreaterOrEqual"), gt = op_is(n, "Greater"), lt = op_is(n, "Less");
    bool le = op_is(n, "LessOrEqual");
    if (as->c && !bs->c) { /* t CMP x == x CMP' t */
        Sym *t = as;
        as = bs;
        bs = t;
        bool g = ge, h = gt;
        ge = le;
        gt = lt;
        le = g;
        lt = h;
    }
    if (as->c || !bs->c || !is_scalar(bs->c) || as->is_bool)
        return imp_error(im, "only comparisons of a float tensor with a constant scalar are "
                         "supported");
    Value *x = sym_value(im, as);
    float t = (float)ctensor_get(bs->c, 0);
    bool upward = ge || gt; /* x >= t, x > t: sign of x - t */
    Value *d = x;
    if (upward && t != 0.0f)
        d = emit_scalar_op(im, OP_SUB, x, t);
    else if (!upward)
        d = emit_binary(im, OP_SUB, scalar_const(im, t), x);
    if (!d)
        return -1;
    Value *b = emit1(im, OP_BINARIZE, 1, &d, retype(d->type, TY_B1));
    set_attr_int(b->def, "zero", (ge || le) ? 1 : -1);
    Sym *s = define_out(im, 0, b);
    if (s)
        s->is_bool = true;
    return 0;
}

static int import_where(Imp *im) {
    Sym *cs = node_in(im, 0), *as = node_in(im, 1), *bs = node_in(im, 2);
    if (!cs || !as || !bs)
        return imp_error(im, "expects three inputs");
    if (!cs->is_bool)
        return imp_error(im, "the condition must come from a comparison with a constant");
    /* Constant branches that hold one value each (scalars, or torch's ones_like filled
     * tensors) and do not grow the condition's shape. */
    bool ok = as->c && bs->c && as->c->n >= 1 && bs->c->n >= 1;
    for (int k = 0; ok && k < 2; k++) {
        const CTensor *c = k ? bs->c : as->c;
        ok = all_equal(c, ctensor_get(c, 0));
        Type ct = make_type(TY_F32, c->rank, c->dim), u;
        ok = ok && broadcast_type(im, &cs->v->type, &ct, &u) == 0 &&
             u.rank == cs->v->type.rank && !memcmp(u.dim, cs->v->type.dim, sizeof u.dim);
    }
    if (!ok)
        return imp_error(im, "only constant branches of one value each are supported "
                         "(Where(x >= 0, 1, -1) and similar)");
    float a = (float)ctensor_get(as->c, 0), b = (float)ctensor_get(bs->c, 0);
    Value *y = emit_cast(im, cs->v, TY_F32); /* ±1 */
    /* where(c, a, b) = cast(c) * (a - b)/2 + (a + b)/2; Where(c, 1, -1) is the cast. */
    float mul = (a - b) / 2, add = (a + b) / 2;
    if (mul != 1.0f)
        y = emit_scalar_op(im, OP_MUL, y, mul);
    if (y && add != 0.0f)
        y = emit_scalar_op(im, OP_ADD, y, add);
    return out_value(im, y);
}

static int import_cast(Imp *im) {
    Sym *s = node_in(im, 0);
    if (!s)
        return imp_error(im, "missing input");
    int to = (int)node_attr_int(im->node, "to", 0);
    Value *x = sym_value(im, s);
    if (s->is_bool) {
        if (to == ONNX_BOOL) {
            Sym *o = define_out(im, 0, x);
            if (o)
                o->is_bool = true;
            return 0;
        }
        if (to != ONNX_FLOAT)
            return imp_error(im, "casting a boolean to type %d is not supported", to);
        /* true/false -> 1/0: (±1 + 1) / 2, exact. */
        Value *y = emit_cast(im, x, TY_F32);
        y = emit_scalar_op(im, OP_MUL, y, 0.5f);
        return out_value(im, y ? emit_scalar_op(im, OP_ADD, y, 0.5f) : NULL);
    }
    DType cur = x->type.dtype;
    DType want;
    switch (to) {
    case ONNX_FLOAT: case ONNX_DOUBLE: want = TY_F32; break;
    case ONNX_INT64: want = TY_I64; break;
    case ONNX_INT32: want = TY_I32; break;
    case ONNX_INT8: want = TY_I8; break;
    case ONNX_UINT8: want = TY_U8; break;
    default: return imp_error(im, "cast to type %d is not supported", to);
    }
    if (cur == want)
        return out_value(im, x);
    return out_value(im, emit_cast(im, x, want));
}

static int import_identity(Imp *im) {
    Sym *s = node_in(im, 0);
    if (!s)
        return imp_error(im, "missing input");
    Sym *o = define_out(im, 0, sym_value(im, s));
    if (o)
        o->is_bool = s->is_bool;
    return 0;
}

static int import_concat(Imp *im) {
    int nin = node_nin(im);
    if (nin < 1)
        return imp_error(im, "no inputs");
    Value **in = xcalloc((size_t)nin, sizeof *in);
    int rc = 0;
    for (int i = 0; i < nin && rc == 0; i++) {
        Sym *s = node_in(im, i); /* every input of a Concat is required: an empty name is an error */
        if (!s)
            rc = imp_error(im, "input %d has no name; every input of a Concat must name a tensor", i);
        else if (s->is_bool)
            rc = imp_error(im, "boolean inputs are not supported");
        else
            in[i] = sym_value(im, s);
    }
    Type t;
    int64_t axis = node_attr_int(im->node, "axis", 0);
    if (rc == 0) {
        t = in[0]->type;
        if (axis < 0)
            axis += t.rank;
        if (axis < 0 || axis >= t.rank)
            rc = imp_error(im, "bad axis (concatenation along the batch is not supported)");
        else
            t.dim[axis] = 0; /* the sum of the inputs' below */
    }
    for (int i = 0; i < nin && rc == 0; i++) {
        const Type *u = &in[i]->type;
        if (u->rank != t.rank || u->dtype != t.dtype)
            rc = imp_error(im, "inputs of different ranks or types");
        for (int d = 0; d < t.rank && rc == 0; d++)
            if (d != axis && u->dim[d] != t.dim[d])
                rc = imp_error(im, "input shapes disagree (constants are not broadcast to the "
                               "batch)");
        if (rc == 0 && u->dim[axis] == DIM_BATCH)
            rc = imp_error(im, "bad axis (concatenation along the batch is not supported)");
        if (rc == 0 && __builtin_add_overflow(t.dim[axis], u->dim[axis], &t.dim[axis]))
            rc = imp_error(im, "the concatenated dimension is too large");
    }
    int64_t per = 1;
    for (int d = 0; rc == 0 && d < t.rank; d++)
        if (t.dim[d] != DIM_BATCH && !mul_elems(&per, t.dim[d]))
            rc = imp_error(im, "the result is too large (over %lld elements an item)", (long long)MAX_ELEMS);
    if (rc == 0) {
        Value *y = emit1(im, OP_CONCAT, nin, in, t);
        set_attr_int(y->def, "axis", axis);
        rc = out_value(im, y);
    }
    free(in);
    return rc;
}

/* ---------------------------------------------------------------- QONNX / FINN ops */

static int import_bipolar_quant(Imp *im) {
    Value *x = runtime_in(im, 0);
    if (!x)
        return -1;
    const CTensor *scale = const_in(im, 1, "the scale");
    if (!scale)
        return -1;
    float s;
    Value *y;
    if (match_bipolar(x, &s) && s == 1.0f) {
        y = x; /* already ±1 */
    } else {
        Value *b = emit1(im, OP_BINARIZE, 1, &x, retype(x->type, TY_B1));
        set_attr_int(b->def, "zero", 1);
        y = emit_cast(im, b, TY_F32);
    }
    if (!all_equal(scale, 1.0)) {
        if (scale->kind != CT_F32)
            return imp_error(im, "the scale must be float");
        y = is_scalar(scale) ? emit_scalar_op(im, OP_MUL, y, scale->f[0])
                             : emit_binary(im, OP_MUL, y, make_const(im, scale, ".scale"));
    }
    return out_value(im, y);
}

static const char *ir_rounding(Imp *im, const char *def) {
    char buf[32];
    const char *rm = node_attr_str(im->node, "rounding_mode", def, buf, sizeof buf);
    const int mode = onnx_rounding(rm);
    if (mode < 0) {
        imp_error(im, "rounding_mode '%s' is not supported", rm);
        return NULL;
    }
    return rounding_name((RoundingMode)mode);
}

static int import_quant(Imp *im, bool trunc) {
    Value *x = runtime_in(im, 0);
    if (!x)
        return -1;
    int nparams = trunc ? 4 : 3;
    if (trunc && node_nin(im) > 5)
        return imp_error(im, "the 6-input Trunc form (with output scale) is not supported");
    static const char *const qnames[] = {"scale", "zero point", "bit width"};
    static const char *const tnames[] = {"scale", "zero point", "input bit width",
                                         "output bit width"};
    Value *in[5] = {x};
    for (int k = 1; k <= nparams; k++) {
        const CTensor *p = const_in(im, k, trunc ? tnames[k - 1] : qnames[k - 1]);
        if (!p)
            return -1;
        if (k >= 3) {
            double b = ctensor_get(p, 0);
            if (p->n != 1 || !(b >= 1 && b <= 32) || b != floor(b))
                return imp_error(im, "the bit width must be one integer from 1 to 32");
        }
        Value *v = sym_value(im, node_in(im, k));
        if (p->kind != CT_F32) {
            CTensor *f = new_ctensor(CT_F32, ONNX_FLOAT, p->rank, p->dim);
            for (int64_t j = 0; j < p->n; j++)
                f->f[j] = (float)ctensor_get(p, j);
            v = make_const(im, f, ".q");
            free_ctensor(f);
        }
        in[k] = v;
    }
    const char *rm = ir_rounding(im, trunc ? "FLOOR" : "ROUND");
    if (!rm)
        return -1;
    Type t = x->type;
    for (int k = 1; k <= 2; k++) {
        Type u;
        if (broadcast_type(im, &t, &in[k]->type, &u) < 0)
            return -1;
        if (u.rank != x->type.rank || memcmp(u.dim, x->type.dim, sizeof u.dim))
            return imp_error(im, "the parameters must broadcast to the input's shape");
    }
    Value *y = emit1(im, trunc ? OP_TRUNC : OP_QUANT, nparams + 1, in, x->type);
    if (!trunc) {
        set_attr_int(y->def, "signed", node_attr_int(im->node, "signed", 1) ? 1 : 0);
        set_attr_int(y->def, "narrow", node_attr_int(im->node, "narrow", 0) ? 1 : 0);
    }
    set_attr_str(y->def, "rounding", rm);
    return out_value(im, y);
}

static Value *emit_transpose(Imp *im, Value *x, const int64_t *perm) {
    int64_t dim[MAX_RANK];
    for (int d = 0; d < x->type.rank; d++)
        dim[d] = x->type.dim[perm[d]];
    Value *y = emit1(im, OP_TRANSPOSE, 1, &x, make_type(x->type.dtype, x->type.rank, dim));
    set_attr_ints(y->def, "perm", x->type.rank, perm);
    return y;
}

/* FINN MultiThreshold: y = out_scale * #{l : x >= t[c,l]} + out_bias. */
static int import_multithreshold(Imp *im) {
    const Onnx__NodeProto *n = im->node;
    Value *x = runtime_in(im, 0);
    if (!x)
        return -1;
    const CTensor *th = const_in(im, 1, "the thresholds");
    if (!th)
        return -1;
    float scale = node_attr_float(n, "out_scale", 1.0f), bias = node_attr_float(n, "out_bias", 0.0f);
    char buf[16];
    const char *layout = node_attr_str(n, "data_layout", "NCHW", buf, sizeof buf);
    bool nhwc = x->type.rank == 4 && !strcmp(layout, "NHWC");
    if (x->type.rank == 4 && !nhwc && strcmp(layout, "NCHW") != 0)
        return imp_error(im, "data_layout '%s' is not supported", layout);
    if (x->type.rank < 2 || th->rank != 2 || th->kind != CT_F32)
        return imp_error(im, "thresholds must be a float [C, L] matrix over an input with "
                         "channels");
    static const int64_t to_nchw[4] = {0, 3, 1, 2}, to_nhwc[4] = {0, 2, 3, 1};
    Value *src = nhwc ? emit_transpose(im, x, to_nchw) : x;
    int64_t c = src->type.dim[1], tc = th->dim[0], levels = th->dim[1];
    if ((tc != c && tc != 1) || levels < 1)
        return imp_error(im, "thresholds are [%lld, %lld] for %lld channels", (long long)tc,
                         (long long)levels, (long long)c);
    Value *t;
    if (levels == 1) {
        CTensor *flat = copy_ctensor(th);
        flat->rank = 1;
        t = make_const(im, flat, ".thresholds");
        free_ctensor(flat);
    } else {
        t = make_const(im, th, ".thresholds");
    }
    Value *in[2] = {src, t};
    Value *y = emit1(im, OP_THRESHOLD, 2, in, retype(src->type, levels == 1 ? TY_B1 : TY_I32));
    if (nhwc)
        y = emit_transpose(im, y, to_nhwc);
    y = emit_cast(im, y, TY_F32);
    float mul = scale, add = bias;
    if (levels == 1) { /* cast gives ±1 for the bit: count = (v + 1) / 2 */
        mul = scale / 2;
        add = scale / 2 + bias;
    }
    if (mul != 1.0f)
        y = emit_scalar_op(im, OP_MUL, y, mul);
    if (y && add != 0.0f)
        y = emit_scalar_op(im, OP_ADD, y, add);
    return out_value(im, y);
}

/* ---------------------------------------------------------------- dispatch */

static bool domain_is(const char *d, const char *what) { return d && !strcmp(d, what); }

int import_node(Imp *im) {
    const Onnx__NodeProto *n = im->node;
    const char *d = n->domain;
    bool std = !d || !d[0] || !strcmp(d, "ai.onnx");
    if (domain_is(d, "onnx.brevitas") || domain_is(d, "qonnx.custom_op.general") ||
        domain_is(d, "finn.custom_op.general") || domain_is(d, "finn")) {
        if (op_is(n, "BipolarQuant"))
            return import_bipolar_quant(im);
        if (op_is(n, "Quant") || op_is(n, "IntQuant"))
            return import_quant(im, false);
        if (op_is(n, "Trunc"))
            return import_quant(im, true);
        if (op_is(n, "MultiThreshold"))
            return import_multithreshold(im);
    } else if (std) {
        static const struct {
            const char *name;
            Op op;
        } ew[] = {{"Add", OP_ADD}, {"Sub", OP_SUB}, {"Mul", OP_MUL}, {"Div", OP_DIV},
                  {"Pow", OP_POW}};
        for (size_t k = 0; k < sizeof ew / sizeof ew[0]; k++)
            if (op_is(n, ew[k].name))
                return import_elementwise(im, ew[k].op);
        if (op_is(n, "Conv"))
            return import_conv(im);
        if (op_is(n, "Gemm"))
            return import_gemm(im);
        if (op_is(n, "MatMul"))
            return import_matmul(im);
        if (op_is(n, "BatchNormalization"))
            return import_batchnorm(im);
        if (op_is(n, "Sign"))
            return import_unary(im, OP_SIGN);
        if (op_is(n, "Relu"))
            return import_unary(im, OP_RELU);
        if (op_is(n, "Neg")) {
            Value *x = runtime_in(im, 0);
            return x ? out_value(im, emit_scalar_op(im, OP_MUL, x, -1.0f)) : -1;
        }
        if (op_is(n, "Clip"))
            return import_clip(im);
        if (op_is(n, "Min") || op_is(n, "Max"))
            return import_minmax(im, op_is(n, "Max"));
        if (op_is(n, "MaxPool"))
            return import_maxpool(im, false);
        if (op_is(n, "GlobalMaxPool"))
            return import_maxpool(im, true);
        if (op_is(n, "AveragePool"))
            return import_avgpool(im);
        if (op_is(n, "GlobalAveragePool"))
            return import_global_avgpool(im);
        if (op_is(n, "ReduceMean"))
            return import_reduce_mean(im);
        if (op_is(n, "Flatten"))
            return import_flatten(im);
        if (op_is(n, "Reshape"))
            return import_reshape(im);
        if (op_is(n, "Squeeze") || op_is(n, "Unsqueeze"))
            return import_squeeze(im, op_is(n, "Unsqueeze"));
        if (op_is(n, "Transpose"))
            return import_transpose(im);
        if (op_is(n, "Pad"))
            return import_pad(im);
        if (op_is(n, "Identity") || op_is(n, "Dropout"))
            return import_identity(im);
        if (op_is(n, "Softmax"))
            return import_softmax(im);
        if (op_is(n, "TopK"))
            return import_topk(im);
        if (op_is(n, "ArgMax"))
            return import_argmax(im);
        if (op_is(n, "Greater") || op_is(n, "GreaterOrEqual") || op_is(n, "Less") ||
            op_is(n, "LessOrEqual"))
            return import_compare(im);
        if (op_is(n, "Where"))
            return import_where(im);
        if (op_is(n, "Cast"))
            return import_cast(im);
        if (op_is(n, "Concat"))
            return import_concat(im);
    }
    if (!std)
        return imp_error(im, "unsupported op (domain '%s'); supported ops are listed in "
                         "docs/onnx.md", d);
    return imp_error(im, "unsupported op; supported ops are listed in docs/onnx.md");
}
