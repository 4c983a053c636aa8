/* infer.c: result types of every op (docs/ir.md is the contract), and the graph verifier. */
#include "ir.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---------------------------------------------------------------- helpers */

/* Record "<op where>: <message>" at the node's location; returns -1. */
static int fail(const Node *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(const Node *n, const char *fmt, ...) {
    char where[256], msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error_at(n->loc, "%s: %s", node_where(n, where, sizeof where), msg);
    return -1;
}

/* Type strings for messages: a few rotating buffers so one message can show several. */
static const char *tstr(const Type *t) {
    static char bufs[4][160];
    static int next;
    char *b = bufs[next++ & 3];
    return type_str(t, b, sizeof bufs[0]);
}

static const char *dim_text(int64_t d) {
    static char bufs[4][32];
    static int next;
    char *b = bufs[next++ & 3];
    if (d == DIM_BATCH)
        snprintf(b, sizeof bufs[0], "N");
    else
        snprintf(b, sizeof bufs[0], "%lld", (long long)d);
    return b;
}

static const Type *in_type(const Node *n, int i) { return &n->in[i]->type; }

static int need_dtype(const Node *n, int i, DType dt, const char *what) {
    if (in_type(n, i)->dtype != dt)
        return fail(n, "%s must be %s, got %s", what, dtype_name(dt), tstr(in_type(n, i)));
    return 0;
}

static int need_rank(const Node *n, int i, int rank, const char *what) {
    if (in_type(n, i)->rank != rank)
        return fail(n, "%s must have rank %d, got %s", what, rank, tstr(in_type(n, i)));
    return 0;
}

/* Dims an op computes with (channels, spatial sizes, reduced axes) cannot be the batch. */
static int need_static(const Node *n, int i, int axis, const char *what) {
    if (in_type(n, i)->dim[axis] == DIM_BATCH)
        return fail(n, "axis %d of the %s %s cannot be the batch N", axis, what,
                    tstr(in_type(n, i)));
    return 0;
}

/* Read an ints attribute that must have exactly count entries (or be absent: def). */
static int get_ints(const Node *n, const char *key, int count, const int64_t *def, int64_t *out,
                    bool required) {
    const Attr *a = get_attr(n, key);
    if (!a) {
        if (required)
            return fail(n, "missing attribute '%s'", key);
        for (int i = 0; i < count; i++)
            out[i] = def[i];
        return 0;
    }
    if (a->n != count)
        return fail(n, "attribute '%s' needs %d entries, got %d", key, count, a->n);
    for (int i = 0; i < count; i++)
        out[i] = a->ints[i];
    return 0;
}

static int need_positive(const Node *n, const char *key, const int64_t *v, int count) {
    for (int i = 0; i < count; i++)
        if (v[i] <= 0)
            return fail(n, "attribute '%s' must be positive, got %lld", key, (long long)v[i]);
    return 0;
}

static int need_nonneg(const Node *n, const char *key, const int64_t *v, int count) {
    for (int i = 0; i < count; i++)
        if (v[i] < 0)
            return fail(n, "attribute '%s' must be non-negative, got %lld", key, (long long)v[i]);
    return 0;
}

static int need_flag(const Node *n, const char *key, int64_t def) {
    int64_t v = attr_int(n, key, def);
    if (v != 0 && v != 1)
        return fail(n, "attribute '%s' must be 0 or 1, got %lld", key, (long long)v);
    return 0;
}

/* A negative axis counts from the end, as in ONNX. */
static int get_axis(const Node *n, int rank, int64_t def, bool required, int *axis) {
    if (required && !get_attr(n, "axis"))
        return fail(n, "missing attribute 'axis'");
    int64_t a = attr_int(n, "axis", def);
    if (a < -rank || a >= rank)
        return fail(n, "axis %lld is out of range for rank %d", (long long)a, rank);
    *axis = (int)(a < 0 ? a + rank : a);
    return 0;
}

static int count_batch_dims(const Type *t) {
    int k = 0;
    for (int i = 0; i < t->rank; i++)
        k += t->dim[i] == DIM_BATCH;
    return k;
}

/* numpy broadcasting; N matches only N or 1. */
static int broadcast_types(const Node *n, const Type *a, const Type *b, Type *out) {
    int rank = a->rank > b->rank ? a->rank : b->rank;
    *out = make_type(a->dtype, 0, NULL);
    out->rank = rank;
    for (int i = 0; i < rank; i++) {
        int ia = a->rank - rank + i, ib = b->rank - rank + i;
        int64_t da = ia >= 0 ? a->dim[ia] : 1, db = ib >= 0 ? b->dim[ib] : 1;
        if (da == db || db == 1)
            out->dim[i] = da;
        else if (da == 1)
            out->dim[i] = db;
        else
            return fail(n, "shapes %s and %s do not broadcast (dimension %s vs %s)", tstr(a),
                        tstr(b), dim_text(da), dim_text(db));
    }
    if (count_batch_dims(out) > 1)
        return fail(n, "broadcasting %s and %s gives two batch dimensions", tstr(a), tstr(b));
    return 0;
}

/* Output size of a window op along one axis; ceil_mode follows ONNX (and PyTorch): the last
 * window must start inside the input or its leading padding. -1 if the window does not fit. */
static int64_t window_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe,
                          bool ceil_mode) {
    int64_t span = in + pb + pe - (d * (k - 1) + 1);
    if (span < 0)
        return -1;
    if (!ceil_mode)
        return span / s + 1;
    int64_t out = (span + s - 1) / s + 1;
    if ((out - 1) * s >= in + pb)
        out--;
    return out;
}

/* ---------------------------------------------------------------- attribute and operand checks */

static const char *attr_kind_name(AttrKind k) {
    switch (k) {
    case ATTR_INT: return "an int";
    case ATTR_FLOAT: return "a float";
    case ATTR_INTS: return "an int list";
    case ATTR_FLOATS: return "a float list";
    case ATTR_STR: return "a string";
    }
    return "?";
}

static int check_attrs(const Node *n) {
    const AttrSpec *specs = op_attr_specs(n->op);
    for (int i = 0; i < n->nattrs; i++) {
        const Attr *a = &n->attrs[i];
        const AttrSpec *s = specs;
        while (s->key && strcmp(s->key, a->key) != 0)
            s++;
        if (!s->key)
            return fail(n, "unknown attribute '%s'", a->key);
        /* An integer literal is a fine float (clip {min=0}). */
        bool ok = a->kind == s->kind || (s->kind == ATTR_FLOAT && a->kind == ATTR_INT);
        if (!ok)
            return fail(n, "attribute '%s' must be %s, got %s", a->key, attr_kind_name(s->kind),
                        attr_kind_name(a->kind));
    }
    return 0;
}

static int check_operands(const Node *n) {
    const OpInfo *info = op_info(n->op);
    if (n->nin < info->min_inputs || (info->max_inputs >= 0 && n->nin > info->max_inputs)) {
        if (info->min_inputs == info->max_inputs)
            return fail(n, "takes %d operands, got %d", info->min_inputs, n->nin);
        if (info->max_inputs < 0)
            return fail(n, "takes at least %d operands, got %d", info->min_inputs, n->nin);
        return fail(n, "takes %d to %d operands, got %d", info->min_inputs, info->max_inputs,
                    n->nin);
    }
    for (int i = 0; i < n->nin; i++)
        if (!n->in[i])
            return fail(n, "operand %d is missing", i);
    return 0;
}

/* ---------------------------------------------------------------- per-op rules */

/* Result dtype of conv2d/dense from the operand dtypes; -1 if not a supported pair. */
static int product_dtype(DType x, DType w) {
    if (x == TY_F32 && w == TY_F32)
        return TY_F32;
    if (x == TY_B1 && w == TY_B1)
        return TY_I32;
    if (x == TY_B1 && w == TY_F32)
        return TY_F32;
    return -1;
}

static int check_bias(const Node *n, int rdt, int64_t o) {
    if (n->nin < 3)
        return 0;
    if (rdt != TY_F32)
        return fail(n, "a bias needs a float result; b1 x b1 gives exact i32 and takes no bias");
    const Type *b = in_type(n, 2);
    if (b->dtype != TY_F32 || b->rank != 1 || b->dim[0] != o)
        return fail(n, "bias must be f32[%lld], got %s", (long long)o, tstr(b));
    return 0;
}

static int infer_conv2d(const Node *n, Type *out) {
    const Type *x = in_type(n, 0), *w = in_type(n, 1);
    if (need_rank(n, 0, 4, "input") || need_rank(n, 1, 4, "weights"))
        return -1;
    int rdt = product_dtype(x->dtype, w->dtype);
    if (rdt < 0)
        return fail(n, "unsupported operand types: input %s, weights %s (f32 x f32, b1 x b1 or "
                       "b1 x f32)", tstr(x), tstr(w));
    for (int i = 1; i < 4; i++)
        if (need_static(n, 0, i, "input"))
            return -1;
    if (count_batch_dims(w))
        return fail(n, "weights %s cannot have a batch dimension", tstr(w));
    int64_t strides[2], pads[4], dil[2];
    static const int64_t one2[2] = {1, 1}, zero4[4] = {0, 0, 0, 0};
    if (get_ints(n, "strides", 2, one2, strides, false) || need_positive(n, "strides", strides, 2) ||
        get_ints(n, "dilations", 2, one2, dil, false) || need_positive(n, "dilations", dil, 2) ||
        get_ints(n, "pads", 4, zero4, pads, false) || need_nonneg(n, "pads", pads, 4))
        return -1;
    int64_t groups = attr_int(n, "groups", 1);
    int64_t pad_value = attr_int(n, "pad_value", 0);
    if (groups <= 0)
        return fail(n, "groups must be positive, got %lld", (long long)groups);
    if (pad_value < -1 || pad_value > 1)
        return fail(n, "pad_value must be 0, 1 or -1, got %lld", (long long)pad_value);
    if (pad_value != 0 && x->dtype != TY_B1)
        return fail(n, "pad_value=%lld needs a b1 input; %s pads with zeros", (long long)pad_value,
                    tstr(x));
    int64_t c = x->dim[1], o = w->dim[0];
    if (c % groups != 0)
        return fail(n, "input has %lld channels, not a multiple of groups=%lld", (long long)c,
                    (long long)groups);
    if (o % groups != 0)
        return fail(n, "weights have %lld output channels, not a multiple of groups=%lld",
                    (long long)o, (long long)groups);
    if (w->dim[1] * groups != c)
        return fail(n, "input has %lld channels but weights expect %lld (groups=%lld)",
                    (long long)c, (long long)(w->dim[1] * groups), (long long)groups);
    if (check_bias(n, rdt, o))
        return -1;
    int64_t oh = window_out(x->dim[2], w->dim[2], strides[0], dil[0], pads[0], pads[2], false);
    int64_t ow = window_out(x->dim[3], w->dim[3], strides[1], dil[1], pads[1], pads[3], false);
    if (oh < 1 || ow < 1)
        return fail(n, "kernel %lldx%lld (dilations %lld,%lld) does not fit the padded input %s",
                    (long long)w->dim[2], (long long)w->dim[3], (long long)dil[0],
                    (long long)dil[1], tstr(x));
    int64_t d[4] = {x->dim[0], o, oh, ow};
    out[0] = make_type((DType)rdt, 4, d);
    return 0;
}

static int infer_dense(const Node *n, Type *out) {
    const Type *x = in_type(n, 0), *w = in_type(n, 1);
    if (need_rank(n, 0, 2, "input") || need_rank(n, 1, 2, "weights"))
        return -1;
    int rdt = product_dtype(x->dtype, w->dtype);
    if (rdt < 0)
        return fail(n, "unsupported operand types: input %s, weights %s (f32 x f32, b1 x b1 or "
                       "b1 x f32)", tstr(x), tstr(w));
    if (need_static(n, 0, 1, "input"))
        return -1;
    if (count_batch_dims(w))
        return fail(n, "weights %s cannot have a batch dimension", tstr(w));
    if (x->dim[1] != w->dim[1])
        return fail(n, "input has %lld features but weights %s expect %lld", (long long)x->dim[1],
                    tstr(w), (long long)w->dim[1]);
    if (check_bias(n, rdt, w->dim[0]))
        return -1;
    int64_t d[2] = {x->dim[0], w->dim[0]};
    out[0] = make_type((DType)rdt, 2, d);
    return 0;
}

static int infer_matmul(const Node *n, Type *out) {
    const Type *a = in_type(n, 0), *b = in_type(n, 1);
    if (need_dtype(n, 0, TY_F32, "a") || need_dtype(n, 1, TY_F32, "b"))
        return -1;
    if (a->rank < 2 || b->rank < 2)
        return fail(n, "operands must have rank >= 2, got %s and %s", tstr(a), tstr(b));
    int64_t k = a->dim[a->rank - 1];
    if (k == DIM_BATCH || k != b->dim[b->rank - 2])
        return fail(n, "inner dimensions differ: %s x %s", tstr(a), tstr(b));
    /* Broadcast the leading (batch) dims. */
    Type la = make_type(TY_F32, a->rank - 2, a->dim), lb = make_type(TY_F32, b->rank - 2, b->dim);
    Type lead;
    if (broadcast_types(n, &la, &lb, &lead))
        return -1;
    Type r = make_type(TY_F32, lead.rank + 2, lead.dim);
    r.dim[lead.rank] = a->dim[a->rank - 2];
    r.dim[lead.rank + 1] = b->dim[b->rank - 1];
    if (count_batch_dims(&r) > 1)
        return fail(n, "result of %s x %s would have two batch dimensions", tstr(a), tstr(b));
    out[0] = r;
    return 0;
}

static int infer_batchnorm(const Node *n, Type *out) {
    const Type *x = in_type(n, 0);
    static const char *const names[] = {"input", "scale", "bias", "mean", "var"};
    for (int i = 0; i < 5; i++)
        if (need_dtype(n, i, TY_F32, names[i]))
            return -1;
    if (x->rank < 2)
        return fail(n, "input must have rank >= 2 (channels on axis 1), got %s", tstr(x));
    if (need_static(n, 0, 1, "input"))
        return -1;
    for (int i = 1; i < 5; i++) {
        const Type *p = in_type(n, i);
        if (p->rank != 1 || p->dim[0] != x->dim[1])
            return fail(n, "%s must be f32[%lld] (one per channel of %s), got %s", names[i],
                        (long long)x->dim[1], tstr(x), tstr(p));
    }
    out[0] = *x;
    return 0;
}

/* Check that a constant i8 dir tensor holds only +1 / -1. */
static int check_dir_data(const Node *n, const Value *dir) {
    if (dir->kind != VAL_CONST || !dir->data)
        return 0;
    int64_t cnt = type_numel(&dir->type, 1);
    for (int64_t i = 0; i < cnt; i++) {
        int8_t v = ((const int8_t *)dir->data)[i];
        if (v != 1 && v != -1)
            return fail(n, "dir[%lld] is %d; directions must be +1 or -1", (long long)i, v);
    }
    return 0;
}

static int infer_threshold(const Node *n, Type *out) {
    const Type *x = in_type(n, 0), *t = in_type(n, 1);
    if (x->dtype != TY_I32 && x->dtype != TY_F32)
        return fail(n, "input must be i32 or f32, got %s", tstr(x));
    if (x->rank < 2)
        return fail(n, "input must have rank >= 2 (channels on axis 1), got %s", tstr(x));
    if (need_static(n, 0, 1, "input"))
        return -1;
    int64_t c = x->dim[1];
    if (t->dtype != x->dtype)
        return fail(n, "thresholds %s must have the input's dtype %s", tstr(t),
                    dtype_name(x->dtype));
    if (t->rank < 1 || t->rank > 2 || (t->dim[0] != c && t->dim[0] != 1) ||
        (t->rank == 2 && t->dim[1] < 1))
        return fail(n, "thresholds must be [%lld] or [%lld,L] (or with 1 channel), got %s",
                    (long long)c, (long long)c, tstr(t));
    if (n->nin == 3) {
        const Type *dir = in_type(n, 2);
        if (dir->dtype != TY_I8 || dir->rank != 1 || (dir->dim[0] != c && dir->dim[0] != 1))
            return fail(n, "dir must be i8[%lld] (or i8[1]), got %s", (long long)c, tstr(dir));
        if (check_dir_data(n, n->in[2]))
            return -1;
    }
    out[0] = *x;
    out[0].dtype = t->rank == 1 ? TY_B1 : TY_I32;
    memset(&out[0].pack, 0, sizeof out[0].pack);
    return 0;
}

/* A parameter that broadcasts against x without growing it. */
static int check_param(const Node *n, int i, const char *what, bool scalar) {
    const Type *x = in_type(n, 0), *p = in_type(n, i);
    if (need_dtype(n, i, TY_F32, what))
        return -1;
    if (count_batch_dims(p))
        return fail(n, "%s %s cannot have a batch dimension", what, tstr(p));
    if (scalar) {
        if (type_numel(p, 1) != 1)
            return fail(n, "%s must be a scalar, got %s", what, tstr(p));
        return 0;
    }
    Type b;
    if (broadcast_types(n, x, p, &b))
        return -1;
    if (!type_equal(&b, x))
        return fail(n, "%s %s does not broadcast to the input %s", what, tstr(p), tstr(x));
    return 0;
}

static int infer_quant(const Node *n, Type *out) {
    if (need_dtype(n, 0, TY_F32, "input") || check_param(n, 1, "scale", false) ||
        check_param(n, 2, "zeropt", false) || check_param(n, 3, "bitwidth", true) ||
        need_flag(n, "signed", 1) || need_flag(n, "narrow", 0))
        return -1;
    const char *r = attr_str(n, "rounding", "ROUND");
    if (rounding_of(r) < 0)
        return fail(n, "unknown rounding mode '%s'", r);
    out[0] = *in_type(n, 0);
    return 0;
}

static int infer_trunc(const Node *n, Type *out) {
    if (need_dtype(n, 0, TY_F32, "input") || check_param(n, 1, "scale", false) ||
        check_param(n, 2, "zeropt", false) || check_param(n, 3, "in_bitwidth", true) ||
        check_param(n, 4, "out_bitwidth", true))
        return -1;
    const char *r = attr_str(n, "rounding", "FLOOR");
    if (rounding_of(r) < 0)
        return fail(n, "unknown rounding mode '%s'", r);
    out[0] = *in_type(n, 0);
    return 0;
}

static int infer_cast(const Node *n, Type *out) {
    const Type *x = in_type(n, 0);
    const char *to = attr_str(n, "to", "f32");
    int dt = dtype_from_name(to);
    if (dt < 0)
        return fail(n, "unknown dtype '%s' in 'to'", to);
    if (dt == TY_B1)
        return fail(n, "cannot cast to b1 (use binarize)");
    if (x->dtype == TY_B1 && dt == TY_U8)
        return fail(n, "cannot cast b1 (+1/-1) to u8");
    out[0] = *x;
    out[0].dtype = (DType)dt;
    memset(&out[0].pack, 0, sizeof out[0].pack);
    return 0;
}

static int infer_pool(const Node *n, Type *out) {
    const Type *x = in_type(n, 0);
    bool is_max = n->op == OP_MAXPOOL;
    if (x->dtype != TY_F32 && !(is_max && x->dtype == TY_B1))
        return fail(n, "input must be %s, got %s", is_max ? "f32 or b1" : "f32", tstr(x));
    if (need_rank(n, 0, 4, "input") || need_static(n, 0, 2, "input") ||
        need_static(n, 0, 3, "input"))
        return -1;
    int64_t k[2], s[2], pads[4], dil[2] = {1, 1};
    static const int64_t one2[2] = {1, 1}, zero4[4] = {0, 0, 0, 0};
    if (get_ints(n, "kernel", 2, NULL, k, true) || need_positive(n, "kernel", k, 2) ||
        get_ints(n, "strides", 2, one2, s, false) || need_positive(n, "strides", s, 2) ||
        get_ints(n, "pads", 4, zero4, pads, false) || need_nonneg(n, "pads", pads, 4) ||
        need_flag(n, "ceil_mode", 0))
        return -1;
    if (is_max && (get_ints(n, "dilations", 2, one2, dil, false) ||
                   need_positive(n, "dilations", dil, 2)))
        return -1;
    if (!is_max && need_flag(n, "count_include_pad", 0))
        return -1;
    for (int i = 0; i < 4; i++)
        if (pads[i] >= dil[i % 2] * (k[i % 2] - 1) + 1)
            return fail(n, "pad %lld is not smaller than the window %lld", (long long)pads[i],
                        (long long)(dil[i % 2] * (k[i % 2] - 1) + 1));
    bool ceil_mode = attr_int(n, "ceil_mode", 0) != 0;
    int64_t oh = window_out(x->dim[2], k[0], s[0], dil[0], pads[0], pads[2], ceil_mode);
    int64_t ow = window_out(x->dim[3], k[1], s[1], dil[1], pads[1], pads[3], ceil_mode);
    if (oh < 1 || ow < 1)
        return fail(n, "window %lldx%lld does not fit the padded input %s", (long long)k[0],
                    (long long)k[1], tstr(x));
    int64_t d[4] = {x->dim[0], x->dim[1], oh, ow};
    out[0] = make_type(x->dtype, 4, d);
    return 0;
}

static int infer_globalavgpool(const Node *n, Type *out) {
    const Type *x = in_type(n, 0);
    if (x->dtype != TY_B1 && need_dtype(n, 0, TY_F32, "input")) /* b1: the mean of its +-1 values */
        return -1;
    if (need_rank(n, 0, 4, "input") ||
        need_static(n, 0, 2, "input") || need_static(n, 0, 3, "input"))
        return -1;
    if (x->dim[2] == 0 || x->dim[3] == 0)
        return fail(n, "input %s has no spatial elements", tstr(x));
    int64_t d[4] = {x->dim[0], x->dim[1], 1, 1};
    out[0] = make_type(TY_F32, 4, d);
    return 0;
}

static int infer_binary(const Node *n, Type *out) {
    const Type *a = in_type(n, 0), *b = in_type(n, 1);
    bool int_ok = n->op == OP_ADD || n->op == OP_SUB || n->op == OP_MUL;
    if (a->dtype != b->dtype)
        return fail(n, "operands have different dtypes: %s and %s", tstr(a), tstr(b));
    if (a->dtype != TY_F32 && !(int_ok && a->dtype == TY_I32))
        return fail(n, "operands must be %s, got %s", int_ok ? "f32 or i32" : "f32", tstr(a));
    return broadcast_types(n, a, b, &out[0]);
}

static int infer_reshape(const Node *n, Type *out) {
    const Type *x = in_type(n, 0), *r = &n->out[0]->type;
    if (r->dtype != x->dtype)
        return fail(n, "result %s must keep the input's dtype %s", tstr(r), dtype_name(x->dtype));
    if (type_has_batch(x) != type_has_batch(r))
        return fail(n, "the batch N must appear in both %s and %s or in neither", tstr(x),
                    tstr(r));
    if (type_numel(x, 1) != type_numel(r, 1))
        return fail(n, "cannot reshape %s (%lld elements%s) to %s (%lld)", tstr(x),
                    (long long)type_numel(x, 1), type_has_batch(x) ? " per batch item" : "",
                    tstr(r), (long long)type_numel(r, 1));
    out[0] = *r;
    return 0;
}

static int infer_transpose(const Node *n, Type *out) {
    const Type *x = in_type(n, 0);
    int64_t perm[MAX_RANK], def[MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        def[i] = x->rank - 1 - i;
    if (get_ints(n, "perm", x->rank, def, perm, false))
        return -1;
    bool seen[MAX_RANK] = {false};
    for (int i = 0; i < x->rank; i++) {
        if (perm[i] < 0 || perm[i] >= x->rank || seen[perm[i]])
            return fail(n, "perm is not a permutation of the axes of %s", tstr(x));
        seen[perm[i]] = true;
    }
    out[0] = *x;
    memset(&out[0].pack, 0, sizeof out[0].pack);
    for (int i = 0; i < x->rank; i++)
        out[0].dim[i] = x->dim[perm[i]];
    return 0;
}

static int infer_concat(const Node *n, Type *out) {
    const Type *x = in_type(n, 0);
    int axis;
    if (get_axis(n, x->rank, 0, true, &axis))
        return -1;
    Type r = *x;
    memset(&r.pack, 0, sizeof r.pack);
    r.dim[axis] = 0;
    for (int i = 0; i < n->nin; i++) {
        const Type *t = in_type(n, i);
        if (t->dtype != x->dtype || t->rank != x->rank)
            return fail(n, "operand %d is %s but operand 0 is %s", i, tstr(t), tstr(x));
        for (int d = 0; d < x->rank; d++)
            if (d != axis && t->dim[d] != x->dim[d])
                return fail(n, "operand %d is %s but operand 0 is %s (only axis %d may differ)",
                            i, tstr(t), tstr(x), axis);
        if (need_static(n, i, axis, "operand"))
            return -1;
        r.dim[axis] += t->dim[axis];
    }
    out[0] = r;
    return 0;
}

static int infer_pad(const Node *n, Type *out) {
    const Type *x = in_type(n, 0);
    int64_t pads[2 * MAX_RANK];
    if (get_ints(n, "pads", 2 * x->rank, NULL, pads, true) ||
        need_nonneg(n, "pads", pads, 2 * x->rank))
        return -1;
    float value = attr_float(n, "value", 0.0f);
    if (x->dtype == TY_B1) {
        if (value != 1.0f && value != -1.0f)
            return fail(n, "a b1 input pads with value 1 or -1, got %g", (double)value);
    } else if (x->dtype != TY_F32) {
        return fail(n, "input must be f32 or b1, got %s", tstr(x));
    }
    out[0] = *x;
    memset(&out[0].pack, 0, sizeof out[0].pack);
    for (int i = 0; i < x->rank; i++) {
        int64_t extra = pads[i] + pads[x->rank + i];
        if (x->dim[i] == DIM_BATCH && extra)
            return fail(n, "cannot pad the batch axis %d of %s", i, tstr(x));
        if (x->dim[i] != DIM_BATCH)
            out[0].dim[i] = x->dim[i] + extra;
    }
    return 0;
}

static int infer_softmax(const Node *n, Type *out) {
    int axis;
    if (need_dtype(n, 0, TY_F32, "input") || get_axis(n, in_type(n, 0)->rank, -1, false, &axis))
        return -1;
    out[0] = *in_type(n, 0);
    return 0;
}

static int infer_argmax(const Node *n, Type *out) {
    const Type *x = in_type(n, 0);
    int axis;
    if (need_dtype(n, 0, TY_F32, "input") || get_axis(n, x->rank, -1, false, &axis) ||
        need_flag(n, "keepdims", 1))
        return -1;
    if (x->dim[axis] == 0)
        return fail(n, "axis %d of %s is empty", axis, tstr(x));
    Type r = make_type(TY_I64, 0, NULL);
    for (int i = 0; i < x->rank; i++) {
        if (i != axis)
            r.dim[r.rank++] = x->dim[i];
        else if (attr_int(n, "keepdims", 1))
            r.dim[r.rank++] = 1;
    }
    out[0] = r;
    return 0;
}

static int infer_topk(const Node *n, Type *out) {
    const Type *x = in_type(n, 0);
    int axis;
    if (need_dtype(n, 0, TY_F32, "input") || get_axis(n, x->rank, -1, false, &axis) ||
        need_flag(n, "largest", 1) || need_static(n, 0, axis, "input"))
        return -1;
    if (!get_attr(n, "k"))
        return fail(n, "missing attribute 'k'");
    int64_t k = attr_int(n, "k", 0);
    if (k < 1 || k > x->dim[axis])
        return fail(n, "k=%lld is out of range for axis %d of %s", (long long)k, axis, tstr(x));
    out[0] = *x;
    out[0].dim[axis] = k;
    out[1] = out[0];
    out[1].dtype = TY_I64;
    return 0;
}

static int infer_unary_f32(const Node *n, Type *out, DType result) {
    if (need_dtype(n, 0, TY_F32, "input"))
        return -1;
    if (n->op == OP_BINARIZE) {
        int64_t z = attr_int(n, "zero", 1);
        if (z != 1 && z != -1)
            return fail(n, "attribute 'zero' must be 1 or -1, got %lld", (long long)z);
    }
    out[0] = *in_type(n, 0);
    out[0].dtype = result;
    return 0;
}

/* ---------------------------------------------------------------- fused binary layers */

/* Operands 2 and 3 of bdense/bconv2d: t: i32[O], dir: i8[O] of +1/-1. */
static int check_fused_threshold(const Node *n, int64_t o) {
    const Type *t = in_type(n, 2), *dir = in_type(n, 3);
    if (t->dtype != TY_I32 || t->rank != 1 || t->dim[0] != o)
        return fail(n, "thresholds must be i32[%lld], got %s", (long long)o, tstr(t));
    if (dir->dtype != TY_I8 || dir->rank != 1 || dir->dim[0] != o)
        return fail(n, "dir must be i8[%lld], got %s", (long long)o, tstr(dir));
    return check_dir_data(n, n->in[3]);
}

/* ---------------------------------------------------------------- low-bit layers */

static int infer_quantize(const Node *n, Type *out) {
    if (infer_quant(n, out))
        return -1;
    out[0].dtype = TY_I32; /* the level index q - lo */
    return 0;
}

/* qdense (x: i32[N,K] codes, w: i8[O,K] codes, [t: i32[O,L], dir: i8[O]]) {xbits}. */
static int infer_qdense(const Node *n, Type *out) {
    const Type *x = in_type(n, 0), *w = in_type(n, 1);
    if (need_dtype(n, 0, TY_I32, "input codes") || need_dtype(n, 1, TY_I8, "weight codes") ||
        need_rank(n, 0, 2, "input codes") || need_rank(n, 1, 2, "weight codes") ||
        need_static(n, 0, 1, "input codes"))
        return -1;
    int64_t xbits = attr_int(n, "xbits", 0);
    if (xbits < 1 || xbits > 16)
        return fail(n, "attribute 'xbits' must be 1..16, got %lld", (long long)xbits);
    if (count_batch_dims(w))
        return fail(n, "weights %s cannot have a batch dimension", tstr(w));
    if (x->dim[1] != w->dim[1])
        return fail(n, "input has %lld features but weights %s expect %lld", (long long)x->dim[1],
                    tstr(w), (long long)w->dim[1]);
    int64_t o = w->dim[0], d[2] = {x->dim[0], o};
    out[0] = make_type(TY_I32, 2, d);
    if (n->nin == 2)
        return 0;
    if (n->nin != 4)
        return fail(n, "needs 2 operands (x, w) or 4 (x, w, t, dir), got %d", n->nin);
    const Type *t = in_type(n, 2), *dir = in_type(n, 3);
    if (t->dtype != TY_I32 || t->rank != 2 || t->dim[0] != o || t->dim[1] < 1)
        return fail(n, "thresholds must be i32[%lld,L], got %s", (long long)o, tstr(t));
    if (dir->dtype != TY_I8 || dir->rank != 1 || dir->dim[0] != o)
        return fail(n, "dir must be i8[%lld], got %s", (long long)o, tstr(dir));
    return check_dir_data(n, n->in[3]);
}

/* Operands 2 and 3 of qdense / qconv2d: t: i32[O,L], dir: i8[O]. */
static int check_qthreshold(const Node *n, int64_t o) {
    if (n->nin == 2)
        return 0;
    if (n->nin != 4)
        return fail(n, "needs 2 operands (x, w) or 4 (x, w, t, dir), got %d", n->nin);
    const Type *t = in_type(n, 2), *dir = in_type(n, 3);
    if (t->dtype != TY_I32 || t->rank != 2 || t->dim[0] != o || t->dim[1] < 1)
        return fail(n, "thresholds must be i32[%lld,L], got %s", (long long)o, tstr(t));
    if (dir->dtype != TY_I8 || dir->rank != 1 || dir->dim[0] != o)
        return fail(n, "dir must be i8[%lld], got %s", (long long)o, tstr(dir));
    return check_dir_data(n, n->in[3]);
}

/* qconv2d (x: i32[N,C,H,W] codes, w: i8[O,C/groups,KH,KW] codes, [t, dir]) {conv geometry,
 * xbits, pad_code}: the shape is conv2d's (checked on a float stand-in). */
static int infer_qconv2d(const Node *n, Type *out) {
    if (need_dtype(n, 0, TY_I32, "input codes") || need_dtype(n, 1, TY_I8, "weight codes"))
        return -1;
    int64_t xbits = attr_int(n, "xbits", 0), pad = attr_int(n, "pad_code", 0);
    if (xbits < 1 || xbits > 16)
        return fail(n, "attribute 'xbits' must be 1..16, got %lld", (long long)xbits);
    if (pad < 0 || pad >= ((int64_t)1 << xbits))
        return fail(n, "attribute 'pad_code' %lld is not an %lld-bit code", (long long)pad,
                    (long long)xbits);
    Value fx = *n->in[0], fw = *n->in[1];
    fx.type.dtype = fw.type.dtype = TY_F32;
    Value *fin[2] = {&fx, &fw};
    Node conv = *n;
    conv.in = fin;
    conv.nin = 2;
    if (infer_conv2d(&conv, out))
        return -1;
    out[0].dtype = TY_I32;
    return check_qthreshold(n, in_type(n, 1)->dim[0]);
}

/* The accumulator of a fused binary layer: `op` (dense or conv2d) over its first two
 * operands, both b1. */
static int infer_fused_acc(const Node *n, Op op, Type *out) {
    if (need_dtype(n, 0, TY_B1, "input") || need_dtype(n, 1, TY_B1, "weights"))
        return -1;
    Node acc = *n;
    acc.op = op;
    acc.nin = 2;
    return op == OP_DENSE ? infer_dense(&acc, out) : infer_conv2d(&acc, out);
}

static int infer_bdense(const Node *n, Type *out) {
    if (infer_fused_acc(n, OP_DENSE, out) || check_fused_threshold(n, in_type(n, 1)->dim[0]))
        return -1;
    out[0].dtype = TY_B1;
    return 0;
}

static int infer_bconv2d(const Node *n, Type *out) {
    if (infer_fused_acc(n, OP_CONV2D, out) || check_fused_threshold(n, in_type(n, 1)->dim[0]) ||
        need_flag(n, "pool_before", 0) || need_flag(n, "pool_ceil_mode", 0))
        return -1;
    out[0].dtype = TY_B1;
    if (!get_attr(n, "pool_kernel")) {
        if (get_attr(n, "pool_strides") || get_attr(n, "pool_pads") ||
            get_attr(n, "pool_before") || get_attr(n, "pool_ceil_mode"))
            return fail(n, "pool attributes without 'pool_kernel'");
        return 0;
    }
    int64_t k[2], s[2], pads[4];
    static const int64_t one2[2] = {1, 1}, zero4[4] = {0, 0, 0, 0};
    if (get_ints(n, "pool_kernel", 2, NULL, k, true) || need_positive(n, "pool_kernel", k, 2) ||
        get_ints(n, "pool_strides", 2, one2, s, false) || need_positive(n, "pool_strides", s, 2) ||
        get_ints(n, "pool_pads", 4, zero4, pads, false) || need_nonneg(n, "pool_pads", pads, 4))
        return -1;
    for (int i = 0; i < 4; i++)
        if (pads[i] >= k[i % 2])
            return fail(n, "pool pad %lld is not smaller than the window %lld", (long long)pads[i],
                        (long long)k[i % 2]);
    bool ceil_mode = attr_int(n, "pool_ceil_mode", 0) != 0;
    int64_t oh = window_out(out[0].dim[2], k[0], s[0], 1, pads[0], pads[2], ceil_mode);
    int64_t ow = window_out(out[0].dim[3], k[1], s[1], 1, pads[1], pads[3], ceil_mode);
    if (oh < 1 || ow < 1)
        return fail(n, "pool window %lldx%lld does not fit the convolution's output %s",
                    (long long)k[0], (long long)k[1], tstr(&out[0]));
    out[0].dim[2] = oh;
    out[0].dim[3] = ow;
    return 0;
}

/* A 0/1 ints attribute with one entry per chain stage, or absent. */
static int check_stage_flags(const Node *n, const char *key, int64_t stages) {
    const Attr *a = get_attr(n, key);
    if (!a)
        return 0;
    if (a->n != stages)
        return fail(n, "attribute '%s' needs one entry per stage (%lld), got %d", key,
                    (long long)stages, a->n);
    for (int i = 0; i < a->n; i++)
        if (a->ints[i] != 0 && a->ints[i] != 1)
            return fail(n, "attribute '%s' entries must be 0 or 1, got %lld", key,
                        (long long)a->ints[i]);
    return 0;
}

/* Operand 2 of bconv2d_chain / conv2d_chain, chain: f32[S,2,o], and the attributes of its
 * stages and of the bits (zero). */
static int check_chain(const Node *n, int64_t o) {
    const Type *c = in_type(n, 2);
    if (c->dtype != TY_F32 || c->rank != 3 || c->dim[0] < 1 || c->dim[0] > CHAIN_MAX_STAGES ||
        c->dim[1] != 2 || c->dim[2] != o)
        return fail(n, "chain must be f32[S,2,%lld] with 1 <= S <= %d stages, got %s",
                    (long long)o, CHAIN_MAX_STAGES, tstr(c));
    if (check_stage_flags(n, "div", c->dim[0]) || check_stage_flags(n, "relu", c->dim[0]))
        return -1;
    int64_t z = attr_int(n, "zero", 1);
    if (z != 1 && z != -1)
        return fail(n, "attribute 'zero' must be 1 or -1, got %lld", (long long)z);
    return 0;
}

/* bconv2d_chain / bdense_chain (x: b1, w: b1, chain: f32[S,2,O], [residual: f32 like y]) ->
 * y: f32 (the conv2d's / dense's shape), bits: b1 of the same shape. */
static int infer_binary_chain(const Node *n, Type *out) {
    if (infer_fused_acc(n, n->op == OP_BDENSE_CHAIN ? OP_DENSE : OP_CONV2D, out))
        return -1;
    out[0].dtype = TY_F32;
    out[1] = out[0];
    out[1].dtype = TY_B1;
    if (check_chain(n, out[0].dim[1]))
        return -1;
    if (n->nin == 4 && (in_type(n, 3)->dtype != TY_F32 || !type_equal(in_type(n, 3), &out[0])))
        return fail(n, "residual must be %s like the result, got %s", tstr(&out[0]),
                    tstr(in_type(n, 3)));
    if (need_flag(n, "residual_first", 0))
        return -1;
    if (n->nin == 3 && attr_int(n, "residual_first", 0))
        return fail(n, "attribute 'residual_first' without a residual operand");
    return 0;
}

/* The quantizer of a conv2d_chain / qconv2d_chain (quant_bits and the attributes that go with
 * it: the codes result, and with dequant the float result, as quantize and quant give them). */
static int check_quantizer(const Node *n) {
    if (need_flag(n, "dequant", 0) || need_flag(n, "signed", 1) || need_flag(n, "narrow", 0))
        return -1;
    bool q = get_attr(n, "quant_bits") != NULL;
    if (!q) {
        if (get_attr(n, "quant_scale") || get_attr(n, "quant_zero") || get_attr(n, "signed") ||
            get_attr(n, "narrow") || get_attr(n, "rounding") || attr_int(n, "dequant", 0))
            return fail(n, "quantizer attributes without 'quant_bits'");
        return 0;
    }
    int64_t bits = attr_int(n, "quant_bits", 0);
    float scale = attr_float(n, "quant_scale", 0.0f), zero = attr_float(n, "quant_zero", 0.0f);
    if (bits < 1 || bits > 24)
        return fail(n, "attribute 'quant_bits' must be 1..24, got %lld", (long long)bits);
    if (!get_attr(n, "quant_scale") || !(scale > 0.0f) || !isfinite(scale) || !isfinite(zero))
        return fail(n, "the quantizer needs a finite 'quant_scale' > 0 and a finite 'quant_zero'");
    const char *r = attr_str(n, "rounding", "ROUND");
    if (rounding_of(r) < 0)
        return fail(n, "unknown rounding mode '%s'", r);
    return 0;
}

/* conv2d_chain (x: f32, w: f32, chain: f32[S,2,O], [b: f32[O]]) {pool_*, [quant_*, signed,
 * narrow, rounding, dequant]} -> y: f32 (the conv's shape, or its max-pool's), then bits: b1 of
 * y's shape, or with a quantizer codes: i32 of y's shape (y the quant's float with dequant). */
static int infer_conv2d_chain(const Node *n, Type *out) {
    if (need_dtype(n, 0, TY_F32, "input") || need_dtype(n, 1, TY_F32, "weights"))
        return -1;
    if (n->nin == 4 && need_dtype(n, 3, TY_F32, "bias"))
        return -1;
    Value *conv_in[3] = {n->in[0], n->in[1], n->nin == 4 ? n->in[3] : NULL};
    Node conv = *n;
    conv.op = OP_CONV2D;
    conv.in = conv_in;
    conv.nin = n->nin == 4 ? 3 : 2;
    if (infer_conv2d(&conv, out) || check_chain(n, out[0].dim[1]))
        return -1;
    if (get_attr(n, "pool_kernel")) {
        Value acc = {.kind = VAL_NODE, .name = n->out[0]->name, .type = out[0]};
        Value *pin[1] = {&acc};
        Attr attrs[4];
        Node pool = fused_pool_node(n, pin, attrs);
        if (infer_pool(&pool, out))
            return -1;
    } else if (get_attr(n, "pool_strides") || get_attr(n, "pool_pads") ||
               get_attr(n, "pool_ceil_mode") || get_attr(n, "pool_at")) {
        return fail(n, "pool attributes without 'pool_kernel'");
    }
    int64_t stages = in_type(n, 2)->dim[0], pool_at = attr_int(n, "pool_at", stages);
    if (pool_at < 0 || pool_at > stages)
        return fail(n, "attribute 'pool_at' must be 0 to %lld (the stages before the max-pool), got %lld",
                    (long long)stages, (long long)pool_at);
    out[1] = out[0];
    out[1].dtype = get_attr(n, "quant_bits") ? TY_I32 : TY_B1;
    if (get_attr(n, "quant_bits") && get_attr(n, "zero"))
        return fail(n, "attribute 'zero' is for chains that binarize, not for a quantizer ('quant_bits')");
    return check_quantizer(n);
}

/* qconv2d_chain (x: i32 codes, w: i8 codes, chain: f32[S,2,O], [residual: f32 like y])
 * {qconv2d's attributes, the chain's, out_relu, quant_*, signed, narrow, rounding, dequant}
 * -> y: f32 (qconv2d's shape), codes: i32 of the same shape. */
static int infer_qconv2d_chain(const Node *n, Type *out) {
    Node conv = *n;
    conv.op = OP_QCONV2D;
    conv.nin = 2;
    if (infer_qconv2d(&conv, out) || check_chain(n, out[0].dim[1]))
        return -1;
    out[0].dtype = TY_F32;
    out[1] = out[0];
    out[1].dtype = TY_I32;
    if (n->nin == 4 && (in_type(n, 3)->dtype != TY_F32 || !type_equal(in_type(n, 3), &out[0])))
        return fail(n, "residual must be %s like the result, got %s", tstr(&out[0]),
                    tstr(in_type(n, 3)));
    if (need_flag(n, "residual_first", 0) || need_flag(n, "out_relu", 0) ||
        need_flag(n, "dequant", 0))
        return -1;
    if (n->nin == 3 && attr_int(n, "residual_first", 0))
        return fail(n, "attribute 'residual_first' without a residual operand");
    if (get_attr(n, "zero"))
        return fail(n, "attribute 'zero' is for chains that binarize");
    return check_quantizer(n);
}

/* repack keeps the logical tensor; the declared result type says the new format. */
static int infer_repack(const Node *n, Type *out) {
    if (need_dtype(n, 0, TY_B1, "input"))
        return -1;
    out[0] = *in_type(n, 0);
    out[0].pack = n->out[0]->type.pack;
    return 0;
}

/* A type any value may have: rank in range, dims non-negative or N, at most one N. */
static bool type_valid(const Type *t) {
    if ((unsigned)t->dtype >= TY_COUNT || t->rank < 0 || t->rank > MAX_RANK)
        return false;
    for (int i = 0; i < t->rank; i++)
        if (t->dim[i] < 0 && t->dim[i] != DIM_BATCH)
            return false;
    return count_batch_dims(t) <= 1;
}

static int infer_logical_types(const Node *n, Type *out) {
    switch (n->op) {
    case OP_CONV2D: return infer_conv2d(n, out);
    case OP_DENSE: return infer_dense(n, out);
    case OP_MATMUL: return infer_matmul(n, out);
    case OP_BATCHNORM: return infer_batchnorm(n, out);
    case OP_SIGN: return infer_unary_f32(n, out, TY_F32);
    case OP_BINARIZE: return infer_unary_f32(n, out, TY_B1);
    case OP_THRESHOLD: return infer_threshold(n, out);
    case OP_QUANT: return infer_quant(n, out);
    case OP_TRUNC: return infer_trunc(n, out);
    case OP_CAST: return infer_cast(n, out);
    case OP_MAXPOOL:
    case OP_AVGPOOL: return infer_pool(n, out);
    case OP_GLOBALAVGPOOL: return infer_globalavgpool(n, out);
    case OP_ADD:
    case OP_SUB:
    case OP_MUL:
    case OP_DIV:
    case OP_POW: return infer_binary(n, out);
    case OP_RELU:
    case OP_CLIP: return infer_unary_f32(n, out, TY_F32);
    case OP_RESHAPE: return infer_reshape(n, out);
    case OP_TRANSPOSE: return infer_transpose(n, out);
    case OP_CONCAT: return infer_concat(n, out);
    case OP_PAD: return infer_pad(n, out);
    case OP_SOFTMAX: return infer_softmax(n, out);
    case OP_ARGMAX: return infer_argmax(n, out);
    case OP_TOPK: return infer_topk(n, out);
    case OP_BDENSE: return infer_bdense(n, out);
    case OP_BCONV2D: return infer_bconv2d(n, out);
    case OP_BCONV2D_CHAIN:
    case OP_BDENSE_CHAIN: return infer_binary_chain(n, out);
    case OP_CONV2D_CHAIN: return infer_conv2d_chain(n, out);
    case OP_REPACK: return infer_repack(n, out);
    case OP_QUANTIZE: return infer_quantize(n, out);
    case OP_QDENSE: return infer_qdense(n, out);
    case OP_QCONV2D: return infer_qconv2d(n, out);
    case OP_QCONV2D_CHAIN: return infer_qconv2d_chain(n, out);
    case OP_COUNT: break;
    }
    unreachable("bad op %d", (int)n->op);
}

int infer_node_types(const Node *n, Type *out) {
    if (check_operands(n) || check_attrs(n))
        return -1;
    for (int i = 0; i < n->nin; i++)
        if (!type_valid(in_type(n, i)))
            return fail(n, "operand %d has an invalid type %s", i, tstr(in_type(n, i)));
    if (infer_logical_types(n, out))
        return -1;
    /* A packing cannot be inferred: a b1 result keeps the one declared (the format pass's
     * choice, checked by the verifier), so dumps after that pass read back. */
    for (int j = 0; j < n->nout; j++)
        if (out[j].dtype == TY_B1 && n->out[j] && n->out[j]->type.dtype == TY_B1)
            out[j].pack = n->out[j]->type.pack;
    return 0;
}

/* ---------------------------------------------------------------- verifier */

static const char *value_ref(const Value *v, char *buf, size_t len) {
    snprintf(buf, len, "%c%s", v->kind == VAL_CONST ? '$' : '%', v->name);
    return buf;
}

static int check_pack(const Node *n, const Value *v) {
    const PackFormat *p = &v->type.pack;
    if (v->type.dtype != TY_B1 || p->word_bits == 0)
        return 0;
    if ((p->word_bits != 32 && p->word_bits != 64) || p->axis < 0 || p->axis >= v->type.rank ||
        p->pad_to < 0 || (unsigned)p->tile >= TILE_COUNT)
        return fail(n, "result %%%s has an invalid packing %s", v->name, tstr(&v->type));
    if (p->tile != TILE_NONE && (v->type.rank != 2 || p->axis != 1 || p->word_bits != 32 || p->pad_to < 1024 ||
                                 p->pad_to % 1024))
        return fail(n, "result %%%s: a tile-major packing needs a [N,K] tensor packed along axis 1 in 32-bit "
                       "words with pad a multiple of 1024, not %s", v->name, tstr(&v->type));
    return 0;
}

/* Tile-major bits (docs/ir.md) are read only by what reads that layout: a binary dense layer
 * (activations k128 and weights k256 with the same padding, or neither) and repack; they are
 * written only by repack and by a binary dense layer on tiled operands (its threshold bits). */
static int check_tiled_use(const Node *n) {
    bool dense = n->op == OP_BDENSE || n->op == OP_BDENSE_CHAIN;
    for (int j = 0; j < n->nin; j++) {
        const PackFormat *p = &n->in[j]->type.pack;
        if (p->tile == TILE_NONE || n->op == OP_REPACK)
            continue;
        if (!dense || j > 1)
            return fail(n, "operand %d is tile-major (%s): only a binary dense layer or repack reads that", j,
                        tstr(&n->in[j]->type));
    }
    if (dense) {
        const PackFormat *a = &n->in[0]->type.pack, *w = &n->in[1]->type.pack;
        if ((a->tile != TILE_NONE || w->tile != TILE_NONE) &&
            (a->tile != TILE_K128 || w->tile != TILE_K256 || a->pad_to != w->pad_to))
            return fail(n, "a pre-tiled layer reads its activations k128 and its weights k256 with the same "
                           "padding, not %s and %s", tstr(&n->in[0]->type), tstr(&n->in[1]->type));
    }
    for (int j = 0; j < n->nout; j++) {
        const Type *t = &n->out[j]->type;
        if (t->dtype != TY_B1 || t->pack.tile == TILE_NONE || n->op == OP_REPACK)
            continue;
        if (n->op != OP_BDENSE || n->in[0]->type.pack.tile == TILE_NONE || t->pack.tile != TILE_K128)
            return fail(n, "result %%%s is tile-major (%s): only repack and a binary dense layer on tile-major "
                           "operands write that (as k128)", n->out[j]->name, tstr(t));
    }
    return 0;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Names are unique per sigil: %inputs and results share one space, $constants another. */
static int check_unique_names(const Graph *g) {
    const char **names = xmalloc((size_t)(g->nvalues + 1) * sizeof *names);
    int rc = 0;
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        bool consts = pass == 1;
        int k = 0;
        if (consts) {
            for (int i = 0; i < g->nconsts; i++)
                names[k++] = g->consts[i]->name;
        } else {
            for (int i = 0; i < g->ninputs; i++)
                names[k++] = g->inputs[i]->name;
            for (int i = 0; i < g->nnodes; i++)
                for (int j = 0; !g->nodes[i]->dead && j < g->nodes[i]->nout; j++)
                    names[k++] = g->nodes[i]->out[j]->name;
        }
        qsort(names, (size_t)k, sizeof *names, compare_names);
        for (int i = 1; i < k; i++)
            if (strcmp(names[i - 1], names[i]) == 0) {
                diag_error("graph $%s: the name %c%s is defined more than once", g->name,
                           consts ? '$' : '%', names[i]);
                rc = -1;
                break;
            }
    }
    free(names);
    return rc;
}

static int check_values(const Graph *g) {
    char buf[256];
    for (int i = 0; i < g->ninputs; i++) {
        const Value *v = g->inputs[i];
        if (!type_valid(&v->type))
            return diag_error("graph input %%%s has an invalid type %s", v->name,
                              tstr(&v->type)), -1;
    }
    for (int i = 0; i < g->nconsts; i++) {
        const Value *v = g->consts[i];
        if (!type_valid(&v->type) || type_has_batch(&v->type))
            return diag_error("constant %s: invalid type %s (constants have no batch N)",
                              value_ref(v, buf, sizeof buf), tstr(&v->type)), -1;
        size_t want = type_nbytes(&v->type, 1);
        if ((!v->data && want) || v->nbytes != want)
            return diag_error("constant %s: %s needs %zu bytes of data, has %zu",
                              value_ref(v, buf, sizeof buf), tstr(&v->type), want,
                              v->data ? v->nbytes : 0), -1;
    }
    return 0;
}

static bool value_owned(const Graph *g, const Value *v) {
    return v->id >= 0 && v->id < g->nvalues && g->values[v->id] == v;
}

int verify_graph(const Graph *g) {
    if (check_values(g) || check_unique_names(g))
        return -1;
    char *defined = xcalloc((size_t)g->nvalues + 1, 1);
    char buf[256];
    int rc = -1;
    for (int i = 0; i < g->ninputs; i++)
        if (value_owned(g, g->inputs[i]))
            defined[g->inputs[i]->id] = 1;
    for (int i = 0; i < g->nconsts; i++)
        if (value_owned(g, g->consts[i]))
            defined[g->consts[i]->id] = 1;
    for (int i = 0; i < g->nnodes; i++) {
        const Node *n = g->nodes[i];
        if (n->dead)
            continue;
        if (check_operands(n))
            goto out;
        for (int j = 0; j < n->nin; j++) {
            const Value *v = n->in[j];
            if (!value_owned(g, v)) {
                fail(n, "operand %d (%s) does not belong to this graph", j,
                     value_ref(v, buf, sizeof buf));
                goto out;
            }
            if (!defined[v->id]) {
                bool removed = v->kind == VAL_NODE && v->def && v->def->dead;
                fail(n, "operand %s is %s", value_ref(v, buf, sizeof buf),
                     removed ? "the result of a removed node" : "used before it is defined");
                goto out;
            }
        }
        for (int j = 0; j < n->nout; j++) {
            const Value *v = n->out[j];
            if (!type_valid(&v->type)) {
                fail(n, "result %%%s has an invalid type %s", v->name, tstr(&v->type));
                goto out;
            }
            if (check_pack(n, v))
                goto out;
        }
        if (check_tiled_use(n))
            goto out;
        Type inferred[MAX_OUTPUTS];
        if (infer_node_types(n, inferred))
            goto out;
        for (int j = 0; j < n->nout; j++) {
            const Value *v = n->out[j];
            if (!type_equal(&inferred[j], &v->type)) {
                fail(n, "result %%%s is declared %s but its operands give %s", v->name,
                     tstr(&v->type), tstr(&inferred[j]));
                goto out;
            }
            if (value_owned(g, v))
                defined[v->id] = 1;
        }
    }
    for (int i = 0; i < g->noutputs; i++) {
        const Value *v = g->outputs[i];
        if (!v || !value_owned(g, v) || !defined[v->id]) {
            diag_error("graph $%s: output %s is not defined", g->name,
                       v ? value_ref(v, buf, sizeof buf) : "(null)");
            goto out;
        }
    }
    rc = 0;
out:
    free(defined);
    return rc;
}
