/* fold.c: constant folding. Every node whose inputs are all known at import time is
 * evaluated here on the host, in float32 as ONNX does, so that the IR only holds the
 * computation that depends on the graph's inputs. Shape on a runtime value folds too:
 * its batch entry is BATCH_MARK, which Gather/Unsqueeze/Concat/Slice/Cast carry along
 * so that Reshape can put the batch back. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_import.h"

/* ---------------------------------------------------------------- broadcasting */

static int bcast_shape(Imp *im, int nt, const CTensor *const *t, int *rank, int64_t *dim) {
    int r = 0;
    for (int k = 0; k < nt; k++)
        if (t[k]->rank > r)
            r = t[k]->rank;
    for (int d = 0; d < r; d++) {
        int64_t out = 1;
        for (int k = 0; k < nt; k++) {
            int off = d - (r - t[k]->rank);
            if (off < 0)
                continue;
            int64_t x = t[k]->dim[off];
            if (x == out || x == 1)
                continue;
            if (out != 1)
                return imp_error(im, "operand shapes do not broadcast (dimension %lld against "
                                 "%lld)", (long long)x, (long long)out);
            out = x;
        }
        dim[d] = out;
    }
    int64_t total = 1;
    for (int d = 0; d < r; d++)
        if (!mul_elems(&total, dim[d]))
            return imp_error(im, "the folded result is too large");
    *rank = r;
    return 0;
}

/* Offset in t of the output element at multi-index idx (rank r). */
static int64_t bcast_offset(const CTensor *t, int r, const int64_t *idx) {
    int64_t off = 0;
    for (int d = 0; d < t->rank; d++) {
        int64_t i = idx[d + r - t->rank];
        off = off * t->dim[d] + (t->dim[d] == 1 ? 0 : i);
    }
    return off;
}

static void next_index(int r, const int64_t *dim, int64_t *idx) {
    for (int d = r - 1; d >= 0; d--) {
        if (++idx[d] < dim[d])
            return;
        idx[d] = 0;
    }
}

/* ---------------------------------------------------------------- elementwise */

typedef enum {
    EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_POW, EW_MIN, EW_MAX, EW_EQ, EW_GT, EW_GE, EW_LT, EW_LE,
    EW_AND, EW_OR,
} EwOp;

static float ew_float(EwOp op, float a, float b) {
    switch (op) {
    case EW_ADD: return a + b;
    case EW_SUB: return a - b;
    case EW_MUL: return a * b;
    case EW_DIV: return a / b;
    case EW_POW: return powf(a, b);
    case EW_MIN: return a < b ? a : b;
    case EW_MAX: return a > b ? a : b;
    default: return 0;
    }
}

static bool ew_compare(EwOp op, double a, double b) {
    switch (op) {
    case EW_EQ: return a == b;
    case EW_GT: return a > b;
    case EW_GE: return a >= b;
    case EW_LT: return a < b;
    case EW_LE: return a <= b;
    case EW_AND: return a != 0 && b != 0;
    case EW_OR: return a != 0 || b != 0;
    default: return false;
    }
}

static CTensor *fold_elementwise(Imp *im, EwOp op, const CTensor *a, const CTensor *b) {
    const CTensor *ops[2] = {a, b};
    int r;
    int64_t dim[MAX_RANK], idx[MAX_RANK] = {0};
    if (bcast_shape(im, 2, ops, &r, dim) < 0)
        return NULL;
    bool cmp = op >= EW_EQ;
    bool ints = a->kind == CT_I64 && b->kind == CT_I64;
    if (!cmp && (ctensor_has_batch_mark(a) || ctensor_has_batch_mark(b))) {
        imp_error(im, "arithmetic on the batch size is not supported (the batch is symbolic)");
        return NULL;
    }
    CTensor *y = cmp ? new_ctensor(CT_I64, ONNX_BOOL, r, dim)
                     : new_ctensor(ints ? CT_I64 : CT_F32, ints ? a->elem : ONNX_FLOAT, r, dim);
    for (int64_t k = 0; k < y->n; k++, next_index(r, dim, idx)) {
        int64_t ia = bcast_offset(a, r, idx), ib = bcast_offset(b, r, idx);
        if (cmp) {
            y->i[k] = ew_compare(op, ctensor_get(a, ia), ctensor_get(b, ib));
        } else if (ints) {
            int64_t x = a->i[ia], z = b->i[ib];
            switch (op) {
            case EW_ADD: y->i[k] = (int64_t)((uint64_t)x + (uint64_t)z); break;
            case EW_SUB: y->i[k] = (int64_t)((uint64_t)x - (uint64_t)z); break;
            case EW_MUL: y->i[k] = (int64_t)((uint64_t)x * (uint64_t)z); break;
            case EW_DIV:
                if (z == 0 || (z == -1 && x == INT64_MIN)) {
                    imp_error(im, "integer division by zero");
                    free_ctensor(y);
                    return NULL;
                }
                y->i[k] = x / z;
                break;
            case EW_POW: y->i[k] = sat_i64(pow((double)x, (double)z)); break;
            case EW_MIN: y->i[k] = x < z ? x : z; break;
            case EW_MAX: y->i[k] = x > z ? x : z; break;
            default: break;
            }
        } else {
            y->f[k] = ew_float(op, (float)ctensor_get(a, ia), (float)ctensor_get(b, ib));
        }
    }
    return y;
}

typedef enum { UN_NEG, UN_ABS, UN_SQRT, UN_RECIP, UN_SIGN, UN_RELU, UN_FLOOR, UN_CEIL,
               UN_ROUND, UN_NOT, UN_EXP, UN_LOG } UnOp;

static CTensor *fold_unary(Imp *im, UnOp op, const CTensor *x) {
    if (ctensor_has_batch_mark(x)) {
        imp_error(im, "arithmetic on the batch size is not supported (the batch is symbolic)");
        return NULL;
    }
    if (op == UN_NOT) {
        CTensor *y = new_ctensor(CT_I64, ONNX_BOOL, x->rank, x->dim);
        for (int64_t k = 0; k < x->n; k++)
            y->i[k] = ctensor_get(x, k) == 0;
        return y;
    }
    if (x->kind == CT_I64) {
        CTensor *y = copy_ctensor(x);
        for (int64_t k = 0; k < x->n; k++) {
            int64_t v = x->i[k];
            switch (op) {
            case UN_NEG: y->i[k] = (int64_t)(0 - (uint64_t)v); break;
            case UN_ABS: y->i[k] = v < 0 ? (int64_t)(0 - (uint64_t)v) : v; break;
            case UN_SIGN: y->i[k] = (v > 0) - (v < 0); break;
            case UN_RELU: y->i[k] = v > 0 ? v : 0; break;
            case UN_FLOOR: case UN_CEIL: case UN_ROUND: break;
            default:
                imp_error(im, "this op is not defined on integers");
                free_ctensor(y);
                return NULL;
            }
        }
        return y;
    }
    CTensor *y = copy_ctensor(x);
    for (int64_t k = 0; k < x->n; k++) {
        float v = x->f[k];
        switch (op) {
        case UN_NEG: v = -v; break;
        case UN_ABS: v = fabsf(v); break;
        case UN_SQRT: v = sqrtf(v); break;
        case UN_RECIP: v = 1.0f / v; break;
        case UN_SIGN: v = (float)((v > 0) - (v < 0)); break;
        case UN_RELU: v = v > 0 ? v : 0; break;
        case UN_FLOOR: v = floorf(v); break;
        case UN_CEIL: v = ceilf(v); break;
        case UN_ROUND: v = nearbyintf(v); break;
        case UN_EXP: v = expf(v); break;
        case UN_LOG: v = logf(v); break;
        case UN_NOT: break;
        }
        y->f[k] = v;
    }
    return y;
}

/* ---------------------------------------------------------------- quantization */

int onnx_rounding(const char *s) {
    return strcmp(s, "HALF_EVEN") == 0 ? ROUNDING_HALF_EVEN : rounding_of(s);
}

static CTensor *fold_quant(Imp *im, const CTensor *x, const CTensor *scale, const CTensor *zp,
                           const CTensor *bits) {
    char buf[32];
    const Onnx__NodeProto *n = im->node;
    int is_signed = (int)node_attr_int(n, "signed", 1);
    int narrow = (int)node_attr_int(n, "narrow", 0);
    const char *rm = node_attr_str(n, "rounding_mode", "ROUND", buf, sizeof buf);
    int mode = onnx_rounding(rm);
    if (mode < 0) {
        imp_error(im, "rounding_mode '%s' is not supported", rm);
        return NULL;
    }
    if (bits->n != 1) {
        imp_error(im, "a per-channel bit width is not supported");
        return NULL;
    }
    double b = ctensor_get(bits, 0);
    if (!(b >= 1 && b <= 32) || b != floor(b)) {
        imp_error(im, "bit width %g is not an integer from 1 to 32", b);
        return NULL;
    }
    double lo = is_signed ? -ldexp(1, (int)b - 1) + narrow : 0;
    double hi = is_signed ? ldexp(1, (int)b - 1) - 1 : ldexp(1, (int)b) - 1 - narrow;
    const CTensor *ops[3] = {x, scale, zp};
    int r;
    int64_t dim[MAX_RANK], idx[MAX_RANK] = {0};
    if (bcast_shape(im, 3, ops, &r, dim) < 0)
        return NULL;
    CTensor *y = new_ctensor(CT_F32, ONNX_FLOAT, r, dim);
    for (int64_t k = 0; k < y->n; k++, next_index(r, dim, idx)) {
        float s = (float)ctensor_get(scale, bcast_offset(scale, r, idx));
        float z = (float)ctensor_get(zp, bcast_offset(zp, r, idx));
        float q = round_by((float)ctensor_get(x, bcast_offset(x, r, idx)) / s + z, (RoundingMode)mode);
        q = q < (float)lo ? (float)lo : q > (float)hi ? (float)hi : q;
        y->f[k] = (q - z) * s;
    }
    return y;
}

/* QONNX BipolarQuant: scale * (x >= 0 ? +1 : -1); 0 maps to +1. */
static CTensor *fold_bipolar(Imp *im, const CTensor *x, const CTensor *scale) {
    const CTensor *ops[2] = {x, scale};
    int r;
    int64_t dim[MAX_RANK], idx[MAX_RANK] = {0};
    if (bcast_shape(im, 2, ops, &r, dim) < 0)
        return NULL;
    CTensor *y = new_ctensor(CT_F32, ONNX_FLOAT, r, dim);
    for (int64_t k = 0; k < y->n; k++, next_index(r, dim, idx)) {
        float v = (float)ctensor_get(x, bcast_offset(x, r, idx));
        float s = (float)ctensor_get(scale, bcast_offset(scale, r, idx));
        y->f[k] = (v >= 0 ? 1.0f : -1.0f) * s;
    }
    return y;
}

/* ---------------------------------------------------------------- data movement */

/* The axes of an op (attribute before opset 13, input 1 from 13 on for Squeeze/Unsqueeze). */
int read_axes(Imp *im, int input, int64_t *axes, int max, bool *present) {
    *present = false;
    int n = node_attr_ints(im->node, "axes", axes, max);
    if (n > max)
        return imp_error(im, "too many axes");
    if (n >= 0) {
        *present = true;
        return n;
    }
    Sym *s = node_in(im, input);
    if (!s)
        return 0;
    if (!s->c)
        return imp_error(im, "axes must be constant");
    if (s->c->n > max)
        return imp_error(im, "too many axes");
    for (int64_t k = 0; k < s->c->n; k++)
        axes[k] = sat_i64(ctensor_get(s->c, k));
    *present = true;
    return (int)s->c->n;
}

static CTensor *reshaped(const CTensor *x, int rank, const int64_t *dim) {
    CTensor *y = copy_ctensor(x);
    y->rank = rank;
    for (int d = 0; d < rank; d++)
        y->dim[d] = dim[d];
    return y;
}

static CTensor *fold_unsqueeze(Imp *im, const CTensor *x) {
    int64_t axes[MAX_RANK];
    bool present;
    int na = read_axes(im, 1, axes, MAX_RANK, &present);
    if (na < 0)
        return NULL;
    int r = x->rank + na;
    if (r > MAX_RANK) {
        imp_error(im, "rank %d is over the limit of %d", r, MAX_RANK);
        return NULL;
    }
    bool ins[MAX_RANK] = {false};
    for (int k = 0; k < na; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
        if (a < 0 || a >= r || ins[a]) {
            imp_error(im, "bad axis %lld", (long long)axes[k]);
            return NULL;
        }
        ins[a] = true;
    }
    int64_t dim[MAX_RANK];
    for (int d = 0, j = 0; d < r; d++)
        dim[d] = ins[d] ? 1 : x->dim[j++];
    return reshaped(x, r, dim);
}

static CTensor *fold_squeeze(Imp *im, const CTensor *x) {
    int64_t axes[MAX_RANK];
    bool present;
    int na = read_axes(im, 1, axes, MAX_RANK, &present);
    if (na < 0)
        return NULL;
    bool drop[MAX_RANK] = {false};
    if (!present)
        for (int d = 0; d < x->rank; d++)
            drop[d] = x->dim[d] == 1;
    for (int k = 0; k < na; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + x->rank : axes[k];
        if (a < 0 || a >= x->rank || x->dim[a] != 1) {
            imp_error(im, "cannot squeeze axis %lld", (long long)axes[k]);
            return NULL;
        }
        drop[a] = true;
    }
    int64_t dim[MAX_RANK];
    int r = 0;
    for (int d = 0; d < x->rank; d++)
        if (!drop[d])
            dim[r++] = x->dim[d];
    return reshaped(x, r, dim);
}

static CTensor *fold_transpose(Imp *im, const CTensor *x) {
    int64_t perm[MAX_RANK];
    int np = node_attr_ints(im->node, "perm", perm, MAX_RANK);
    if (np < 0) {
        np = x->rank;
        for (int d = 0; d < np; d++)
            perm[d] = np - 1 - d;
    }
    bool seen[MAX_RANK] = {false};
    if (np != x->rank) {
        imp_error(im, "perm has %d entries for a rank-%d tensor", np, x->rank);
        return NULL;
    }
    for (int d = 0; d < np; d++) {
        if (perm[d] < 0 || perm[d] >= np || seen[perm[d]]) {
            imp_error(im, "perm is not a permutation");
            return NULL;
        }
        seen[perm[d]] = true;
    }
    int64_t dim[MAX_RANK], idx[MAX_RANK] = {0}, stride[MAX_RANK];
    for (int d = 0; d < np; d++)
        dim[d] = x->dim[perm[d]];
    int64_t s = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        stride[d] = s;
        s *= x->dim[d];
    }
    CTensor *y = new_ctensor(x->kind, x->elem, np, dim);
    for (int64_t k = 0; k < y->n; k++, next_index(np, dim, idx)) {
        int64_t off = 0;
        for (int d = 0; d < np; d++)
            off += idx[d] * stride[perm[d]];
        if (x->kind == CT_F32)
            y->f[k] = x->f[off];
        else
            y->i[k] = x->i[off];
    }
    return y;
}

static CTensor *fold_gather(Imp *im, const CTensor *x, const CTensor *ind) {
    int64_t axis = node_attr_int(im->node, "axis", 0);
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis >= x->rank || ind->kind != CT_I64) {
        imp_error(im, "bad axis or indices");
        return NULL;
    }
    int r = x->rank - 1 + ind->rank;
    if (r > MAX_RANK) {
        imp_error(im, "rank %d is over the limit of %d", r, MAX_RANK);
        return NULL;
    }
    int64_t dim[MAX_RANK];
    int j = 0;
    for (int d = 0; d < axis; d++)
        dim[j++] = x->dim[d];
    for (int d = 0; d < ind->rank; d++)
        dim[j++] = ind->dim[d];
    for (int d = (int)axis + 1; d < x->rank; d++)
        dim[j++] = x->dim[d];
    int64_t outer = 1, inner = 1, na = x->dim[axis];
    for (int d = 0; d < axis; d++)
        outer *= x->dim[d];
    for (int d = (int)axis + 1; d < x->rank; d++)
        inner *= x->dim[d];
    CTensor *y = new_ctensor(x->kind, x->elem, r, dim);
    int64_t k = 0;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t t = 0; t < ind->n; t++) {
            int64_t i = ind->i[t] < 0 ? ind->i[t] + na : ind->i[t];
            if (i < 0 || i >= na) {
                imp_error(im, "index %lld is out of range", (long long)ind->i[t]);
                free_ctensor(y);
                return NULL;
            }
            for (int64_t q = 0; q < inner; q++, k++) {
                int64_t off = (o * na + i) * inner + q;
                if (x->kind == CT_F32)
                    y->f[k] = x->f[off];
                else
                    y->i[k] = x->i[off];
            }
        }
    return y;
}

static CTensor *fold_concat(Imp *im) {
    int nin = node_nin(im);
    CTensor *parts[64];
    int np = 0;
    for (int k = 0; k < nin; k++) {
        Sym *s = node_in(im, k);
        if (!s)
            continue;
        if (np == 64) {
            imp_error(im, "too many inputs");
            return NULL;
        }
        parts[np++] = s->c;
    }
    if (np == 0) {
        imp_error(im, "no inputs");
        return NULL;
    }
    const CTensor *a = parts[0];
    int64_t axis = node_attr_int(im->node, "axis", 0);
    if (axis < 0)
        axis += a->rank;
    if (axis < 0 || axis >= a->rank) {
        imp_error(im, "bad axis");
        return NULL;
    }
    int64_t dim[MAX_RANK];
    memcpy(dim, a->dim, sizeof dim);
    dim[axis] = 0;
    bool ints = true;
    for (int k = 0; k < np; k++) {
        if (parts[k]->rank != a->rank) {
            imp_error(im, "inputs of different ranks");
            return NULL;
        }
        for (int d = 0; d < a->rank; d++)
            if (d != axis && parts[k]->dim[d] != a->dim[d]) {
                imp_error(im, "input shapes disagree");
                return NULL;
            }
        dim[axis] += parts[k]->dim[axis];
        ints = ints && parts[k]->kind == CT_I64;
    }
    CTensor *y = new_ctensor(ints ? CT_I64 : CT_F32, ints ? a->elem : ONNX_FLOAT, a->rank, dim);
    int64_t outer = 1;
    for (int d = 0; d < axis; d++)
        outer *= a->dim[d];
    int64_t k = 0;
    for (int64_t o = 0; o < outer; o++)
        for (int p = 0; p < np; p++) {
            int64_t chunk = parts[p]->n / (outer ? outer : 1);
            for (int64_t q = 0; q < chunk; q++, k++) {
                int64_t off = o * chunk + q;
                if (ints)
                    y->i[k] = parts[p]->i[off];
                else
                    y->f[k] = (float)ctensor_get(parts[p], off);
            }
        }
    return y;
}

/* Reshape's target shape with 0 and -1 resolved against a known element count. */
int resolve_reshape(Imp *im, const CTensor *shape, const int64_t *in_dim, int in_rank,
                    int64_t numel, bool allowzero, int *rank, int64_t *dim) {
    if (shape->kind != CT_I64 || shape->rank != 1 || shape->n > MAX_RANK)
        return imp_error(im, "the shape must be a 1-D int64 tensor of at most %d entries",
                         MAX_RANK);
    int infer = -1;
    int64_t known = 1;
    for (int d = 0; d < shape->n; d++) {
        int64_t s = shape->i[d];
        if (s == 0 && !allowzero) {
            if (d >= in_rank)
                return imp_error(im, "shape entry %d is 0 but the input has rank %d", d,
                                 in_rank);
            s = in_dim[d];
        }
        if (s == -1) {
            if (infer >= 0)
                return imp_error(im, "the shape has two -1 entries");
            infer = d;
            s = 1;
        } else if (s < 0) {
            return imp_error(im, "bad shape entry %lld", (long long)s);
        }
        dim[d] = s;
        if (!mul_elems(&known, s))
            return imp_error(im, "shape entry %lld is too large", (long long)s);
    }
    if (infer >= 0) {
        if (known == 0 || numel % known)
            return imp_error(im, "cannot reshape %lld elements into the shape", (long long)numel);
        dim[infer] = numel / known;
    } else if (known != numel) {
        return imp_error(im, "cannot reshape %lld elements into %lld", (long long)numel,
                         (long long)known);
    }
    *rank = (int)shape->n;
    return 0;
}

static CTensor *fold_slice(Imp *im, const CTensor *x) {
    int64_t starts[MAX_RANK], ends[MAX_RANK], axes[MAX_RANK], steps[MAX_RANK];
    int n;
    if (im->opset < 10) {
        n = node_attr_ints(im->node, "starts", starts, MAX_RANK);
        if (n < 0 || node_attr_ints(im->node, "ends", ends, MAX_RANK) != n) {
            imp_error(im, "bad starts/ends");
            return NULL;
        }
        int na = node_attr_ints(im->node, "axes", axes, MAX_RANK);
        for (int k = 0; k < n; k++) {
            if (na < 0)
                axes[k] = k;
            steps[k] = 1;
        }
    } else {
        Sym *s = node_in(im, 1), *e = node_in(im, 2), *a = node_in(im, 3), *st = node_in(im, 4);
        if (!s || !e || !s->c || !e->c || s->c->n != e->c->n || s->c->n > MAX_RANK ||
            (a && (!a->c || a->c->n != s->c->n)) || (st && (!st->c || st->c->n != s->c->n))) {
            imp_error(im, "bad starts/ends/axes/steps");
            return NULL;
        }
        n = (int)s->c->n;
        for (int k = 0; k < n; k++) {
            starts[k] = s->c->i ? s->c->i[k] : 0;
            ends[k] = e->c->i ? e->c->i[k] : 0;
            axes[k] = a ? sat_i64(ctensor_get(a->c, k)) : k;
            steps[k] = st ? sat_i64(ctensor_get(st->c, k)) : 1;
        }
    }
    int64_t b[MAX_RANK], stp[MAX_RANK], dim[MAX_RANK];
    for (int d = 0; d < x->rank; d++) {
        b[d] = 0;
        stp[d] = 1;
        dim[d] = x->dim[d];
    }
    for (int k = 0; k < n; k++) {
        int64_t ax = axes[k] < 0 ? axes[k] + x->rank : axes[k];
        if (ax < 0 || ax >= x->rank || steps[k] == 0 || steps[k] > INT32_MAX ||
            steps[k] < -INT32_MAX) {
            imp_error(im, "bad axis or step");
            return NULL;
        }
        int64_t len = x->dim[ax], s = starts[k], e = ends[k], step = steps[k];
        if (s < 0)
            s += len;
        if (e < 0 && e > INT64_MIN / 2)
            e += len;
        if (step > 0) {
            s = s < 0 ? 0 : s > len ? len : s;
            e = e < 0 ? 0 : e > len ? len : e;
            dim[ax] = e > s ? (e - s + step - 1) / step : 0;
        } else {
            s = s < 0 ? -1 : s > len - 1 ? len - 1 : s;
            e = e < -1 ? -1 : e > len - 1 ? len - 1 : e;
            dim[ax] = s > e ? (s - e - step - 1) / -step : 0;
        }
        b[ax] = s;
        stp[ax] = step;
    }
    int64_t idx[MAX_RANK] = {0}, stride[MAX_RANK];
    int64_t sz = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        stride[d] = sz;
        sz *= x->dim[d];
    }
    CTensor *y = new_ctensor(x->kind, x->elem, x->rank, dim);
    for (int64_t k = 0; k < y->n; k++, next_index(x->rank, dim, idx)) {
        int64_t off = 0;
        for (int d = 0; d < x->rank; d++)
            off += (b[d] + idx[d] * stp[d]) * stride[d];
        if (x->kind == CT_F32)
            y->f[k] = x->f[off];
        else
            y->i[k] = x->i[off];
    }
    return y;
}

static CTensor *fold_cast(Imp *im, const CTensor *x) {
    int to = (int)node_attr_int(im->node, "to", ONNX_FLOAT);
    bool to_float = to == ONNX_FLOAT || to == ONNX_DOUBLE || to == ONNX_FLOAT16;
    if (to == ONNX_STRING || to <= 0 || to > ONNX_UINT64) {
        imp_error(im, "cast to type %d is not supported", to);
        return NULL;
    }
    CTensor *y = new_ctensor(to_float ? CT_F32 : CT_I64, to, x->rank, x->dim);
    for (int64_t k = 0; k < x->n; k++) {
        if (to_float)
            y->f[k] = (float)ctensor_get(x, k);
        else if (x->kind == CT_I64)
            y->i[k] = to == ONNX_BOOL && x->i[k] != BATCH_MARK ? x->i[k] != 0 : x->i[k];
        else if (to == ONNX_BOOL)
            y->i[k] = x->f[k] != 0;
        else if (isfinite(x->f[k]) && fabsf(x->f[k]) < 9.2e18f)
            y->i[k] = (int64_t)x->f[k];
        else {
            imp_error(im, "cast of %g to an integer is out of range", (double)x->f[k]);
            free_ctensor(y);
            return NULL;
        }
    }
    return y;
}

static CTensor *fold_where(Imp *im, const CTensor *c, const CTensor *a, const CTensor *b) {
    const CTensor *ops[3] = {c, a, b};
    int r;
    int64_t dim[MAX_RANK], idx[MAX_RANK] = {0};
    if (bcast_shape(im, 3, ops, &r, dim) < 0)
        return NULL;
    bool ints = a->kind == CT_I64 && b->kind == CT_I64;
    CTensor *y = new_ctensor(ints ? CT_I64 : CT_F32, ints ? a->elem : ONNX_FLOAT, r, dim);
    for (int64_t k = 0; k < y->n; k++, next_index(r, dim, idx)) {
        bool cond = ctensor_get(c, bcast_offset(c, r, idx)) != 0;
        const CTensor *src = cond ? a : b;
        int64_t off = bcast_offset(src, r, idx);
        if (ints)
            y->i[k] = src->i[off];
        else
            y->f[k] = (float)ctensor_get(src, off);
    }
    return y;
}

static CTensor *tensor_from_attr(Imp *im) {
    const Onnx__NodeProto *n = im->node;
    for (size_t k = 0; k < n->n_attribute; k++) {
        const Onnx__AttributeProto *a = n->attribute[k];
        if (!a->name)
            continue;
        if (!strcmp(a->name, "value") && a->t)
            return read_tensor(im, a->t, "attribute 'value'");
        if (!strcmp(a->name, "value_float") && a->has_f) {
            CTensor *t = new_ctensor(CT_F32, ONNX_FLOAT, 0, NULL);
            t->f[0] = a->f;
            return t;
        }
        if (!strcmp(a->name, "value_int") && a->has_i) {
            CTensor *t = new_ctensor(CT_I64, ONNX_INT64, 0, NULL);
            t->i[0] = a->i;
            return t;
        }
        if (!strcmp(a->name, "value_floats")) {
            int64_t d = (int64_t)a->n_floats;
            CTensor *t = new_ctensor(CT_F32, ONNX_FLOAT, 1, &d);
            for (size_t j = 0; j < a->n_floats; j++)
                t->f[j] = a->floats[j];
            return t;
        }
        if (!strcmp(a->name, "value_ints")) {
            int64_t d = (int64_t)a->n_ints;
            CTensor *t = new_ctensor(CT_I64, ONNX_INT64, 1, &d);
            for (size_t j = 0; j < a->n_ints; j++)
                t->i[j] = a->ints[j];
            return t;
        }
    }
    imp_error(im, "no supported value attribute (value, value_float(s), value_int(s))");
    return NULL;
}

static CTensor *fold_constant_of_shape(Imp *im, const CTensor *shape) {
    if (shape->kind != CT_I64 || shape->rank != 1 || shape->n > MAX_RANK) {
        imp_error(im, "the shape must be a constant 1-D int64 tensor");
        return NULL;
    }
    /* A filled tensor of a runtime shape (torch's ones_like): every element is equal,
     * so a batch dimension of 1 broadcasts the same wherever it is used elementwise. */
    int64_t sdim[MAX_RANK];
    for (int d = 0; d < shape->n; d++)
        sdim[d] = shape->i[d] == BATCH_MARK ? 1 : shape->i[d];
    CTensor *val = NULL;
    const Onnx__AttributeProto *a = node_attr(im->node, "value");
    if (a && a->t) {
        val = read_tensor(im, a->t, "attribute 'value'");
        if (!val)
            return NULL;
        if (val->n != 1) {
            imp_error(im, "value must hold one element");
            free_ctensor(val);
            return NULL;
        }
    }
    int64_t total = 1;
    for (int d = 0; d < shape->n; d++)
        if (!mul_elems(&total, sdim[d])) {
            imp_error(im, "bad shape entry");
            free_ctensor(val);
            return NULL;
        }
    CTensor *y = new_ctensor(val ? val->kind : CT_F32, val ? val->elem : ONNX_FLOAT,
                             (int)shape->n, sdim);
    for (int64_t k = 0; k < y->n; k++) {
        if (y->kind == CT_F32)
            y->f[k] = val ? val->f[0] : 0.0f;
        else
            y->i[k] = val->i[0];
    }
    free_ctensor(val);
    return y;
}

/* Expand: broadcast x to the shape (numpy rules, both ways). A shape taken from a runtime
 * tensor (torch's ones_like / expand_as) has the batch marked; as for ConstantOfShape, the
 * batch dimension becomes 1, which broadcasts the same wherever the result is used
 * elementwise. */
static CTensor *fold_expand(Imp *im, const CTensor *x, const CTensor *shape) {
    if (shape->kind != CT_I64 || shape->rank != 1 || shape->n > MAX_RANK) {
        imp_error(im, "the shape must be a constant 1-D int64 tensor");
        return NULL;
    }
    if (ctensor_has_batch_mark(x)) {
        imp_error(im, "expanding the batch size is not supported (the batch is symbolic)");
        return NULL;
    }
    int64_t sdim[MAX_RANK];
    for (int d = 0; d < shape->n; d++) {
        sdim[d] = shape->i[d] == BATCH_MARK ? 1 : shape->i[d];
        if (sdim[d] < 0) {
            imp_error(im, "negative dimension %lld in the shape", (long long)sdim[d]);
            return NULL;
        }
    }
    CTensor *target = new_ctensor(CT_I64, ONNX_INT64, (int)shape->n, sdim);
    const CTensor *ops[2] = {x, target};
    int r;
    int64_t dim[MAX_RANK], idx[MAX_RANK] = {0};
    int rc = bcast_shape(im, 2, ops, &r, dim);
    free_ctensor(target);
    if (rc < 0)
        return NULL;
    CTensor *y = new_ctensor(x->kind, x->elem, r, dim);
    for (int64_t k = 0; k < y->n; k++, next_index(r, dim, idx)) {
        int64_t off = bcast_offset(x, r, idx);
        if (y->kind == CT_F32)
            y->f[k] = x->f[off];
        else
            y->i[k] = x->i[off];
    }
    return y;
}

/* ---------------------------------------------------------------- dispatch */

static Type sym_type(const Sym *s) { return s->v->type; }

/* Shape of a runtime value: the batch becomes BATCH_MARK. */
static CTensor *fold_shape(Imp *im, const Sym *s) {
    int rank;
    int64_t dim[MAX_RANK];
    if (s->c) {
        rank = s->c->rank;
        memcpy(dim, s->c->dim, sizeof dim);
    } else {
        Type t = sym_type(s);
        rank = t.rank;
        for (int d = 0; d < rank; d++)
            dim[d] = t.dim[d] == DIM_BATCH ? BATCH_MARK : t.dim[d];
    }
    int64_t start = node_attr_int(im->node, "start", 0), end = node_attr_int(im->node, "end", rank);
    if (start < 0)
        start += rank;
    if (end < 0)
        end += rank;
    start = start < 0 ? 0 : start > rank ? rank : start;
    end = end < start ? start : end > rank ? rank : end;
    int64_t n = end - start;
    CTensor *y = new_ctensor(CT_I64, ONNX_INT64, 1, &n);
    for (int64_t k = 0; k < n; k++)
        y->i[k] = dim[start + k];
    return y;
}

static bool op_is(const Onnx__NodeProto *n, const char *name) { return !strcmp(n->op_type, name); }

static bool domain_is_qonnx(const char *d) {
    return d && (!strcmp(d, "onnx.brevitas") || !strcmp(d, "qonnx.custom_op.general") ||
                 !strcmp(d, "finn.custom_op.general") || !strcmp(d, "finn"));
}

static bool all_inputs_const(Imp *im) {
    for (int k = 0; k < node_nin(im); k++) {
        Sym *s = node_in(im, k);
        if (s && !s->c)
            return false;
    }
    return true;
}

static const CTensor *in_c(Imp *im, int k) {
    Sym *s = node_in(im, k);
    return s ? s->c : NULL;
}

int fold_node(Imp *im) {
    const Onnx__NodeProto *n = im->node;
    const char *dom = n->domain;
    bool std = !dom || !dom[0] || !strcmp(dom, "ai.onnx");
    bool q = domain_is_qonnx(dom);
    if (!std && !q)
        return 0;
    CTensor *y = NULL;
    if (std && (op_is(n, "Shape") || op_is(n, "Size"))) {
        Sym *s = node_in(im, 0);
        if (!s)
            return imp_error(im, "missing input");
        if (op_is(n, "Shape")) {
            y = fold_shape(im, s);
        } else {
            int64_t total = 1;
            Type t = s->c ? make_type(TY_F32, s->c->rank, s->c->dim) : sym_type(s);
            for (int d = 0; d < t.rank; d++)
                if (t.dim[d] == DIM_BATCH)
                    return imp_error(im, "Size of a tensor with the batch dimension is not "
                                     "supported");
                else
                    total *= t.dim[d];
            y = new_ctensor(CT_I64, ONNX_INT64, 0, NULL);
            y->i[0] = total;
        }
        goto define;
    }
    if (std && op_is(n, "Constant")) {
        y = tensor_from_attr(im);
        goto define;
    }
    if (!all_inputs_const(im) || node_nin(im) == 0 || !in_c(im, 0))
        return 0;
    const CTensor *x = in_c(im, 0), *b = in_c(im, 1);
    if (q) {
        if (op_is(n, "BipolarQuant") && b)
            y = fold_bipolar(im, x, b);
        else if ((op_is(n, "Quant") || op_is(n, "IntQuant")) && b && in_c(im, 2) && in_c(im, 3))
            y = fold_quant(im, x, b, in_c(im, 2), in_c(im, 3));
        else
            return 0;
        goto define;
    }
    static const struct {
        const char *name;
        EwOp op;
    } binops[] = {{"Add", EW_ADD}, {"Sub", EW_SUB}, {"Mul", EW_MUL}, {"Div", EW_DIV},
                  {"Pow", EW_POW}, {"Equal", EW_EQ}, {"Greater", EW_GT},
                  {"GreaterOrEqual", EW_GE}, {"Less", EW_LT}, {"LessOrEqual", EW_LE},
                  {"And", EW_AND}, {"Or", EW_OR}, {"Min", EW_MIN}, {"Max", EW_MAX}};
    static const struct {
        const char *name;
        UnOp op;
    } unops[] = {{"Neg", UN_NEG}, {"Abs", UN_ABS}, {"Sqrt", UN_SQRT}, {"Reciprocal", UN_RECIP},
                 {"Sign", UN_SIGN}, {"Relu", UN_RELU}, {"Floor", UN_FLOOR}, {"Ceil", UN_CEIL},
                 {"Round", UN_ROUND}, {"Not", UN_NOT}, {"Exp", UN_EXP}, {"Log", UN_LOG}};
    for (size_t k = 0; k < sizeof binops / sizeof binops[0]; k++)
        if (op_is(n, binops[k].name)) {
            if (!b || (node_nin(im) != 2 && binops[k].op != EW_MIN && binops[k].op != EW_MAX))
                return imp_error(im, "expects two inputs");
            if (node_nin(im) > 2)
                return 0; /* variadic Min/Max: not folded */
            y = fold_elementwise(im, binops[k].op, x, b);
            goto define;
        }
    for (size_t k = 0; k < sizeof unops / sizeof unops[0]; k++)
        if (op_is(n, unops[k].name)) {
            y = fold_unary(im, unops[k].op, x);
            goto define;
        }
    if (op_is(n, "Identity") || op_is(n, "Dropout")) {
        y = copy_ctensor(x);
    } else if (op_is(n, "Cast")) {
        y = fold_cast(im, x);
    } else if (op_is(n, "Unsqueeze")) {
        y = fold_unsqueeze(im, x);
    } else if (op_is(n, "Squeeze")) {
        y = fold_squeeze(im, x);
    } else if (op_is(n, "Transpose")) {
        y = fold_transpose(im, x);
    } else if (op_is(n, "Gather")) {
        if (!b)
            return imp_error(im, "expects two inputs");
        y = fold_gather(im, x, b);
    } else if (op_is(n, "Concat")) {
        y = fold_concat(im);
    } else if (op_is(n, "Slice")) {
        y = fold_slice(im, x);
    } else if (op_is(n, "Where")) {
        if (!b || !in_c(im, 2))
            return imp_error(im, "expects three inputs");
        y = fold_where(im, x, b, in_c(im, 2));
    } else if (op_is(n, "ConstantOfShape")) {
        y = fold_constant_of_shape(im, x);
    } else if (op_is(n, "Expand")) {
        if (!b)
            return imp_error(im, "expects two inputs");
        y = fold_expand(im, x, b);
    } else if (op_is(n, "Clip")) {
        float lo = -INFINITY, hi = INFINITY;
        if (im->opset < 11) {
            lo = node_attr_float(n, "min", lo);
            hi = node_attr_float(n, "max", hi);
        } else {
            if (b)
                lo = (float)ctensor_get(b, 0);
            if (in_c(im, 2))
                hi = (float)ctensor_get(in_c(im, 2), 0);
        }
        y = fold_unary(im, UN_RELU, x); /* for the shape and kind; values below */
        if (y && y->kind == CT_F32)
            for (int64_t k = 0; k < x->n; k++)
                y->f[k] = x->f[k] < lo ? lo : x->f[k] > hi ? hi : x->f[k];
        else if (y)
            for (int64_t k = 0; k < x->n; k++)
                y->i[k] = x->i[k] < lo ? sat_i64(lo) : x->i[k] > hi ? sat_i64(hi) : x->i[k];
    } else if (op_is(n, "Reshape") || op_is(n, "Flatten")) {
        int rank;
        int64_t dim[MAX_RANK];
        if (op_is(n, "Flatten")) {
            int64_t axis = node_attr_int(n, "axis", 1);
            if (axis < 0)
                axis += x->rank;
            if (axis < 0 || axis > x->rank)
                return imp_error(im, "bad axis");
            dim[0] = dim[1] = 1;
            for (int d = 0; d < x->rank; d++)
                dim[d < axis ? 0 : 1] *= x->dim[d];
            rank = 2;
        } else {
            if (!b)
                return imp_error(im, "expects a shape input");
            if (ctensor_has_batch_mark(b))
                return imp_error(im, "reshaping a constant with the batch size");
            if (resolve_reshape(im, b, x->dim, x->rank, x->n,
                                node_attr_int(n, "allowzero", 0) != 0, &rank, dim) < 0)
                return -1;
        }
        y = reshaped(x, rank, dim);
    } else {
        return 0;
    }
define:
    if (!y)
        return -1;
    if (n->n_output < 1 || !n->output[0] || !n->output[0][0]) {
        free_ctensor(y);
        return imp_error(im, "node has no output");
    }
    sym_define(im, n->output[0])->c = y;
    return 1;
}
