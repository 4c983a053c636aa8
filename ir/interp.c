/* interp.c: the reference interpreter. It is the oracle every pass and backend is checked
 * against, so each op is the plainest loop that follows docs/ir.md; speed does not matter. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "util.h"

void quant_range(int64_t bits, bool is_signed, bool narrow, int64_t *lo, int64_t *hi) {
    *lo = is_signed ? -(1ll << (bits - 1)) + narrow : 0;
    *hi = is_signed ? (1ll << (bits - 1)) - 1 : (1ll << bits) - 1 - narrow;
}

static const char *const rounding_names[] = {"ROUND", "CEIL", "FLOOR", "ROUND_TO_ZERO", "UP", "HALF_UP", "HALF_DOWN"};

int rounding_of(const char *name) {
    for (int m = 0; m < (int)(sizeof rounding_names / sizeof rounding_names[0]); m++)
        if (strcmp(name, rounding_names[m]) == 0)
            return m;
    return strcmp(name, "DOWN") == 0 ? ROUNDING_TO_ZERO : -1;
}

const char *rounding_name(RoundingMode mode) {
    return rounding_names[mode];
}

float round_by(float v, RoundingMode mode) {
    float t = truncf(v), frac = fabsf(v - t), away = v < 0 ? t - 1.0f : t + 1.0f;
    switch (mode) {
    case ROUNDING_HALF_EVEN: break;
    case ROUNDING_CEIL: return ceilf(v);
    case ROUNDING_FLOOR: return floorf(v);
    case ROUNDING_TO_ZERO: return t;
    case ROUNDING_UP: return v < 0 ? floorf(v) : ceilf(v);
    case ROUNDING_HALF_UP: return frac >= 0.5f ? away : t;
    case ROUNDING_HALF_DOWN: return frac > 0.5f ? away : t;
    }
    return nearbyintf(v); /* half to even in the default rounding mode */
}

float batchnorm_scalar(float x, float scale, float bias, float mean, float var, float eps) {
    return (x - mean) / sqrtf(var + eps) * scale + bias;
}

bool threshold_of_bits(const uint8_t *bits, int64_t k, int32_t *t, int *dir) {
    int64_t n = 2 * k + 1;
    bool up = true, down = true;
    for (int64_t i = 0; i + 1 < n; i++) {
        up = up && bits[i] <= bits[i + 1];
        down = down && bits[i] >= bits[i + 1];
    }
    int64_t i = 0;
    if (up && down) { /* constant */
        *t = INT32_MIN;
        *dir = bits[0] ? 1 : -1;
    } else if (up) { /* the first dot with bit 1 */
        while (!bits[i])
            i++;
        *t = (int32_t)(i - k), *dir = 1;
    } else if (down) { /* the last dot with bit 1 */
        for (i = n - 1; !bits[i]; i--)
            ;
        *t = (int32_t)(i - k), *dir = -1;
    } else {
        return false;
    }
    return true;
}

void free_tensor(Tensor *t) {
    free(t->data);
    t->data = NULL;
    t->nbytes = 0;
}

/* ---------------------------------------------------------------- helpers */

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

/* The type with the batch resolved and no packing: interpreter tensors are canonical. */
static Type concrete_type(const Type *t, int64_t batch) {
    Type c = *t;
    memset(&c.pack, 0, sizeof c.pack);
    for (int i = 0; i < c.rank; i++)
        if (c.dim[i] == DIM_BATCH)
            c.dim[i] = batch;
    return c;
}

static void alloc_tensor(Tensor *t, const Type *type) {
    t->type = *type;
    t->nbytes = type_nbytes(type, 1);
    t->data = xcalloc(t->nbytes ? t->nbytes : 1, 1);
}

/* The element loops' bound (type_numel is inline: a call an element was 7 % of the lowbit
 * pass's compile of a w8a8 layer, docs/perf.md stop 56). */
static int64_t numel(const Tensor *t) { return type_numel(&t->type, 1); }
static float *f32s(const Tensor *t) { return (float *)t->data; }
static int32_t *i32s(const Tensor *t) { return (int32_t *)t->data; }
static int64_t *i64s(const Tensor *t) { return (int64_t *)t->data; }
/* A b1 element as the value it stands for. */
static int pm1(const Tensor *t, int64_t i) { return bit_get(t->data, i) ? 1 : -1; }

/* Advance a row-major multi-index over t's shape; false after the last one. */
static bool next_index(const Type *t, int64_t *idx) {
    for (int d = t->rank - 1; d >= 0; d--) {
        if (++idx[d] < t->dim[d])
            return true;
        idx[d] = 0;
    }
    return false;
}

/* The flat offset in `in` of output position idx under numpy broadcasting. */
static int64_t broadcast_offset(const Type *in, const Type *out, const int64_t *idx) {
    int64_t off = 0, stride = 1;
    for (int d = in->rank - 1; d >= 0; d--) {
        int od = out->rank - in->rank + d;
        off += (in->dim[d] == 1 ? 0 : idx[od]) * stride;
        stride *= in->dim[d];
    }
    return off;
}

static int64_t flat_offset(const Type *t, const int64_t *idx) {
    int64_t off = 0;
    for (int d = 0; d < t->rank; d++)
        off = off * t->dim[d] + idx[d];
    return off;
}

static void copy_elem(Tensor *dst, int64_t di, const Tensor *src, int64_t si) {
    if (src->type.dtype == TY_B1) {
        bit_set(dst->data, di, bit_get(src->data, si));
        return;
    }
    size_t sz = (size_t)dtype_bits(src->type.dtype) / 8;
    memcpy((char *)dst->data + (size_t)di * sz, (const char *)src->data + (size_t)si * sz, sz);
}

/* Sizes of the axes before, at and after axis. */
static void split_axis(const Type *t, int axis, int64_t *outer, int64_t *len, int64_t *inner) {
    *outer = *inner = 1;
    for (int d = 0; d < axis; d++)
        *outer *= t->dim[d];
    *len = t->dim[axis];
    for (int d = axis + 1; d < t->rank; d++)
        *inner *= t->dim[d];
}

static int node_axis(const Node *n, int rank, int64_t def) {
    int64_t a = attr_int(n, "axis", def);
    return (int)(a < 0 ? a + rank : a);
}

/* ---------------------------------------------------------------- f16 */

float half_to_float(uint16_t h) {
    int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float v;
    if (exp == 0)
        v = ldexpf((float)mant, -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexpf((float)(mant + 1024), exp - 25);
    return (h & 0x8000) ? -v : v;
}

/* Round to nearest, ties to even. */
static uint16_t float_to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t a = x & 0x7fffffff;
    if (a > 0x7f800000)
        return sign | 0x7e00;
    if (a >= 0x477ff000) /* 65520 and above round to infinity */
        return sign | 0x7c00;
    if (a < 0x38800000) { /* below the smallest normal half: count units of 2^-24 */
        float af;
        memcpy(&af, &a, sizeof af);
        return sign | (uint16_t)nearbyintf(af * 16777216.0f);
    }
    uint32_t h = ((((a >> 23) - 127 + 15)) << 10) | ((a & 0x7fffff) >> 13);
    uint32_t rest = a & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
        h++; /* a carry into the exponent is still the right encoding */
    return sign | (uint16_t)h;
}

/* ---------------------------------------------------------------- linear algebra */

/* A b1 tensor as +-1 bytes, so the integer loops below read one byte per element. */
static int8_t *unpack_pm1(const Tensor *t) {
    int64_t count = numel(t);
    int8_t *v = xmalloc((size_t)(count > 0 ? count : 1));
    for (int64_t i = 0; i < count; i++)
        v[i] = (int8_t)pm1(t, i);
    return v;
}

/* A convolution computed a whole output row at a time: for each output the taps are still
 * summed in the order c, kh, kw (each float product and sum rounded on its own, as written),
 * only interleaved across the row's outputs, so every result is the same as output by output
 * but the inner loop runs over contiguous memory. b1 weights (with b1 input) sum exactly in
 * int32; otherwise in float, and zero padding adds nothing at all. */
static void conv2d_rows(const Tensor *x, const Tensor *w, const Tensor *b, Tensor *y,
                        const int64_t *strides, const int64_t *pads, const int64_t *dil,
                        int64_t groups, int64_t pad_value) {
    int64_t B = x->type.dim[0], C = x->type.dim[1], H = x->type.dim[2], W = x->type.dim[3];
    int64_t O = w->type.dim[0], CG = w->type.dim[1], KH = w->type.dim[2], KW = w->type.dim[3];
    int64_t OH = y->type.dim[2], OW = y->type.dim[3];
    bool wb = w->type.dtype == TY_B1, xb = x->type.dtype == TY_B1;
    int8_t *xv = xb ? unpack_pm1(x) : NULL, *wv = wb ? unpack_pm1(w) : NULL;
    int32_t *iacc = xmalloc((size_t)(OW > 0 ? OW : 1) * sizeof *iacc);
    float *facc = xmalloc((size_t)(OW > 0 ? OW : 1) * sizeof *facc);
    for (int64_t bi = 0; bi < B; bi++)
        for (int64_t o = 0; o < O; o++) {
            int64_t g = o / (O / groups);
            for (int64_t i = 0; i < OH; i++) {
                memset(iacc, 0, (size_t)OW * sizeof *iacc);
                for (int64_t j = 0; j < OW; j++)
                    facc[j] = 0.0f;
                for (int64_t c = 0; c < CG; c++)
                    for (int64_t kh = 0; kh < KH; kh++) {
                        int64_t ih = i * strides[0] + kh * dil[0] - pads[0];
                        bool row_inside = ih >= 0 && ih < H;
                        if (!row_inside && pad_value == 0)
                            continue;
                        int64_t row = ((bi * C + g * CG + c) * H + (row_inside ? ih : 0)) * W;
                        for (int64_t kw = 0; kw < KW; kw++) {
                            int64_t wi = ((o * CG + c) * KH + kh) * KW + kw;
                            /* Outputs j in [lo, hi) read inside the row: iw = j*s + off. */
                            int64_t off = kw * dil[1] - pads[1], lo = 0, hi = 0;
                            if (row_inside) {
                                lo = off >= 0 ? 0 : (-off + strides[1] - 1) / strides[1];
                                hi = W - off > 0 ? (W - off + strides[1] - 1) / strides[1] : 0;
                                lo = lo < OW ? lo : OW;
                                hi = hi < OW ? hi : OW;
                                hi = hi > lo ? hi : lo;
                            }
                            if (pad_value != 0)
                                for (int64_t j = 0; j < OW; j++)
                                    if (j < lo || j >= hi) {
                                        if (wb)
                                            iacc[j] += wv[wi] * (int32_t)pad_value;
                                        else
                                            facc[j] += (float)pad_value * f32s(w)[wi];
                                    }
                            if (wb && strides[1] == 1) { /* contiguous: vectorizes */
                                const int8_t *xr = xv + row + off;
                                int32_t wt = wv[wi];
                                for (int64_t j = lo; j < hi; j++)
                                    iacc[j] += wt * xr[j];
                            } else if (wb) {
                                const int8_t *xr = xv + row + off;
                                int32_t wt = wv[wi];
                                for (int64_t j = lo; j < hi; j++)
                                    iacc[j] += wt * xr[j * strides[1]];
                            } else if (xb) {
                                const int8_t *xr = xv + row + off;
                                float wt = f32s(w)[wi];
                                for (int64_t j = lo; j < hi; j++)
                                    facc[j] += (float)xr[j * strides[1]] * wt;
                            } else {
                                const float *xr = f32s(x) + row + off;
                                float wt = f32s(w)[wi];
                                for (int64_t j = lo; j < hi; j++)
                                    facc[j] += xr[j * strides[1]] * wt;
                            }
                        }
                    }
                int64_t yi = ((bi * O + o) * OH + i) * OW;
                for (int64_t j = 0; j < OW; j++) {
                    if (wb)
                        i32s(y)[yi + j] = iacc[j];
                    else
                        f32s(y)[yi + j] = b ? facc[j] + f32s(b)[o] : facc[j];
                }
            }
        }
    free(iacc);
    free(facc);
    free(xv);
    free(wv);
}

/* A convolution's strides, pads and dilations, with their defaults. */
static void conv_attrs(const Node *n, int64_t *strides, int64_t *pads, int64_t *dil) {
    static const int64_t one2[2] = {1, 1}, zero4[4] = {0, 0, 0, 0};
    attr_ints(n, "strides", strides, 2, 2, one2);
    attr_ints(n, "pads", pads, 4, 4, zero4);
    attr_ints(n, "dilations", dil, 2, 2, one2);
}

static int run_conv2d(const Node *n, Tensor **in, Tensor *y) {
    const Tensor *x = in[0], *w = in[1], *b = n->nin > 2 ? in[2] : NULL;
    int64_t strides[2], pads[4], dil[2];
    conv_attrs(n, strides, pads, dil);
    int64_t groups = attr_int(n, "groups", 1), pad_value = attr_int(n, "pad_value", 0);
    conv2d_rows(x, w, b, y, strides, pads, dil, groups, pad_value);
    return 0;
}

static int run_dense(const Node *n, Tensor **in, Tensor *y) {
    const Tensor *x = in[0], *w = in[1], *b = n->nin > 2 ? in[2] : NULL;
    int64_t B = x->type.dim[0], K = x->type.dim[1], O = w->type.dim[0];
    bool xb = x->type.dtype == TY_B1, wb = w->type.dtype == TY_B1;
    for (int64_t bi = 0; bi < B; bi++)
        for (int64_t o = 0; o < O; o++) {
            int64_t iacc = 0;
            float facc = 0.0f;
            for (int64_t k = 0; k < K; k++) {
                if (wb)
                    iacc += pm1(x, bi * K + k) * pm1(w, o * K + k);
                else
                    facc += (xb ? (float)pm1(x, bi * K + k) : f32s(x)[bi * K + k]) *
                            f32s(w)[o * K + k];
            }
            if (wb)
                i32s(y)[bi * O + o] = (int32_t)iacc;
            else
                f32s(y)[bi * O + o] = b ? facc + f32s(b)[o] : facc;
        }
    return 0;
}

static int run_matmul(const Node *n, Tensor **in, Tensor *y) {
    (void)n;
    const Type *ta = &in[0]->type, *tb = &in[1]->type, *ty = &y->type;
    int64_t M = ta->dim[ta->rank - 2], K = ta->dim[ta->rank - 1], P = tb->dim[tb->rank - 1];
    Type la = make_type(TY_F32, ta->rank - 2, ta->dim), lb = make_type(TY_F32, tb->rank - 2, tb->dim);
    Type ly = make_type(TY_F32, ty->rank - 2, ty->dim);
    int64_t idx[MAX_RANK] = {0}, count = type_numel(&ly, 1);
    for (int64_t l = 0; l < count; l++, next_index(&ly, idx)) {
        const float *a = f32s(in[0]) + broadcast_offset(&la, &ly, idx) * M * K;
        const float *b = f32s(in[1]) + broadcast_offset(&lb, &ly, idx) * K * P;
        float *out = f32s(y) + l * M * P;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < P; j++) {
                float acc = 0.0f;
                for (int64_t k = 0; k < K; k++)
                    acc += a[i * K + k] * b[k * P + j];
                out[i * P + j] = acc;
            }
    }
    return 0;
}

/* ---------------------------------------------------------------- normalisation, binarisation */

static int run_batchnorm(const Node *n, Tensor **in, Tensor *y) {
    int64_t outer, C, inner;
    split_axis(&in[0]->type, 1, &outer, &C, &inner);
    float eps = attr_float(n, "epsilon", 1e-5f);
    const float *x = f32s(in[0]), *scale = f32s(in[1]), *bias = f32s(in[2]),
                *mean = f32s(in[3]), *var = f32s(in[4]);
    for (int64_t i = 0; i < numel(y); i++) {
        int64_t c = (i / inner) % C;
        f32s(y)[i] = batchnorm_scalar(x[i], scale[c], bias[c], mean[c], var[c], eps);
    }
    return 0;
}

static int run_sign(const Node *n, Tensor **in, Tensor *y) {
    (void)n;
    for (int64_t i = 0; i < numel(y); i++) {
        float v = f32s(in[0])[i];
        f32s(y)[i] = v > 0 ? 1.0f : v < 0 ? -1.0f : v == 0 ? 0.0f : v; /* NaN stays NaN */
    }
    return 0;
}

static int run_binarize(const Node *n, Tensor **in, Tensor *y) {
    int zero_bit = attr_int(n, "zero", 1) == 1;
    for (int64_t i = 0; i < numel(y); i++) {
        float v = f32s(in[0])[i];
        bit_set(y->data, i, v > 0 || (v == 0 && zero_bit)); /* NaN: 0 */
    }
    return 0;
}

static int run_threshold(const Node *n, Tensor **in, Tensor *y) {
    const Tensor *x = in[0], *t = in[1], *dir = n->nin > 2 ? in[2] : NULL;
    int64_t outer, C, inner;
    split_axis(&x->type, 1, &outer, &C, &inner);
    int64_t tc = t->type.dim[0], L = t->type.rank == 2 ? t->type.dim[1] : 1;
    bool is_int = x->type.dtype == TY_I32;
    for (int64_t i = 0; i < numel(x); i++) {
        int64_t c = (i / inner) % C, row = (tc == 1 ? 0 : c) * L;
        int d = 1;
        if (dir) {
            d = ((const int8_t *)dir->data)[dir->type.dim[0] == 1 ? 0 : c];
            if (d != 1 && d != -1)
                return fail(n, "dir for channel %lld is %d; directions must be +1 or -1",
                            (long long)c, d);
        }
        int32_t count = 0;
        for (int64_t l = 0; l < L; l++) {
            bool ge, le;
            if (is_int) {
                ge = i32s(x)[i] >= i32s(t)[row + l];
                le = i32s(x)[i] <= i32s(t)[row + l];
            } else {
                ge = f32s(x)[i] >= f32s(t)[row + l];
                le = f32s(x)[i] <= f32s(t)[row + l];
            }
            count += d > 0 ? ge : le;
        }
        if (t->type.rank == 1)
            bit_set(y->data, i, count);
        else
            i32s(y)[i] = count;
    }
    return 0;
}

/* ---------------------------------------------------------------- quantisation */

/* The rounding attribute of quant / trunc n (default def), once an op (not compared as a
 * string an element). */
static RoundingMode op_rounding(const Node *n, const char *def) {
    const char *name = attr_str(n, "rounding", def);
    const int mode = rounding_of(name);
    if (mode < 0)
        unreachable("rounding mode %s passed the verifier", name);
    return (RoundingMode)mode;
}

/* Quant's level of x before its dequantization: clamp(round(x / scale + zeropt), lo, hi), each
 * operation rounded on its own (NaN stays NaN). */
static float quant_level(float x, float scale, float zeropt, int64_t lo, int64_t hi, RoundingMode mode) {
    float q = round_by(x / scale + zeropt, mode);
    return q < (float)lo ? (float)lo : q > (float)hi ? (float)hi : q;
}

/* A bit width operand: a scalar integer in [lo, 32]. */
static int get_bitwidth(const Node *n, const Tensor *t, const char *what, int lo, int *out) {
    float b = f32s(t)[0];
    if (!(b >= (float)lo && b <= 32.0f) || b != floorf(b))
        return fail(n, "%s is %g; it must be an integer from %d to 32", what, (double)b, lo);
    *out = (int)b;
    return 0;
}

static int run_quant(const Node *n, Tensor **in, Tensor *y) {
    int bits = 0;
    if (get_bitwidth(n, in[3], "bitwidth", 1, &bits))
        return -1;
    bool is_signed = attr_int(n, "signed", 1), narrow = attr_int(n, "narrow", 0);
    const RoundingMode mode = op_rounding(n, "ROUND");
    int64_t lo, hi;
    quant_range(bits, is_signed, narrow, &lo, &hi);
    const Type *ty = &y->type;
    int64_t idx[MAX_RANK] = {0};
    for (int64_t i = 0; i < numel(y); i++, next_index(ty, idx)) {
        float scale = f32s(in[1])[broadcast_offset(&in[1]->type, ty, idx)];
        float zeropt = f32s(in[2])[broadcast_offset(&in[2]->type, ty, idx)];
        float q = quant_level(f32s(in[0])[i], scale, zeropt, lo, hi, mode);
        f32s(y)[i] = (q - zeropt) * scale;
    }
    return 0;
}

/* quant's level q - lo as an integer code: the same float steps as run_quant, stopping
 * before the dequantization, so quant(x) == (float)(lo + code - zeropt) * scale. */
static int run_quantize(const Node *n, Tensor **in, Tensor *y) {
    int bits = 0;
    if (get_bitwidth(n, in[3], "bitwidth", 1, &bits))
        return -1;
    if (bits > 24)
        return fail(n, "bitwidth %d: quantize holds at most 24-bit codes", bits);
    bool is_signed = attr_int(n, "signed", 1), narrow = attr_int(n, "narrow", 0);
    const RoundingMode mode = op_rounding(n, "ROUND");
    int64_t lo, hi;
    quant_range(bits, is_signed, narrow, &lo, &hi);
    const Type *ty = &y->type;
    int64_t idx[MAX_RANK] = {0};
    for (int64_t i = 0; i < numel(y); i++, next_index(ty, idx)) {
        float scale = f32s(in[1])[broadcast_offset(&in[1]->type, ty, idx)];
        float zeropt = f32s(in[2])[broadcast_offset(&in[2]->type, ty, idx)];
        float q = quant_level(f32s(in[0])[i], scale, zeropt, lo, hi, mode);
        if (isnan(q))
            return fail(n, "element %lld quantizes NaN", (long long)i);
        i32s(y)[i] = (int32_t)(q - (float)lo);
    }
    return 0;
}

static int run_trunc(const Node *n, Tensor **in, Tensor *y) {
    int in_bits = 0, out_bits = 0;
    if (get_bitwidth(n, in[3], "in_bitwidth", 1, &in_bits) ||
        get_bitwidth(n, in[4], "out_bitwidth", 1, &out_bits))
        return -1;
    if (out_bits > in_bits)
        return fail(n, "out_bitwidth %d exceeds in_bitwidth %d", out_bits, in_bits);
    const RoundingMode mode = op_rounding(n, "FLOOR");
    float shift = ldexpf(1.0f, in_bits - out_bits);
    const Type *ty = &y->type;
    int64_t idx[MAX_RANK] = {0};
    for (int64_t i = 0; i < numel(y); i++, next_index(ty, idx)) {
        float scale = f32s(in[1])[broadcast_offset(&in[1]->type, ty, idx)];
        float zeropt = f32s(in[2])[broadcast_offset(&in[2]->type, ty, idx)];
        float q = nearbyintf(f32s(in[0])[i] / scale + zeropt);
        q = round_by(q / shift, mode);
        f32s(y)[i] = (q - zeropt) * scale * shift;
    }
    return 0;
}

/* One element as a number: floats in f, integers (and b1 as +1/-1) in i. */
typedef struct Num {
    bool is_float;
    double f;
    int64_t i;
} Num;

static Num read_num(const Tensor *t, int64_t k) {
    Num v = {false, 0, 0};
    switch (t->type.dtype) {
    case TY_F32: v.is_float = true; v.f = f32s(t)[k]; break;
    case TY_F16: v.is_float = true; v.f = half_to_float(((const uint16_t *)t->data)[k]); break;
    case TY_I64: v.i = i64s(t)[k]; break;
    case TY_I32: v.i = i32s(t)[k]; break;
    case TY_I8: v.i = ((const int8_t *)t->data)[k]; break;
    case TY_U8: v.i = ((const uint8_t *)t->data)[k]; break;
    case TY_B1: v.i = pm1(t, k); break;
    case TY_COUNT: unreachable("bad dtype");
    }
    return v;
}

static int run_cast(const Node *n, Tensor **in, Tensor *y) {
    DType to = y->type.dtype;
    int bits = dtype_bits(to);
    for (int64_t k = 0; k < numel(y); k++) {
        Num v = read_num(in[0], k);
        if (to == TY_F32 || to == TY_F16) {
            float f = v.is_float ? (float)v.f : (float)v.i;
            if (to == TY_F32)
                f32s(y)[k] = f;
            else
                ((uint16_t *)y->data)[k] = float_to_half(f);
            continue;
        }
        int64_t r;
        if (v.is_float) {
            /* Truncation toward zero; out of range is undefined, so refuse it. */
            double t = trunc(v.f);
            double lo = to == TY_U8 ? 0 : -ldexp(1.0, bits - 1);
            double hi = to == TY_U8 ? 255 : ldexp(1.0, bits - 1) - 1;
            if (!(t >= lo && t <= hi))
                return fail(n, "element %lld (%g) is out of the range of %s", (long long)k, v.f,
                            dtype_name(to));
            r = (int64_t)t;
        } else {
            r = v.i;
        }
        /* Integer to narrower integer wraps (two's complement), as numpy's astype does. */
        uint64_t u = (uint64_t)r;
        switch (to) {
        case TY_I64: i64s(y)[k] = r; break;
        case TY_I32: i32s(y)[k] = (int32_t)(uint32_t)u; break;
        case TY_I8: ((int8_t *)y->data)[k] = (int8_t)(uint8_t)u; break;
        case TY_U8: ((uint8_t *)y->data)[k] = (uint8_t)u; break;
        default: unreachable("cast to %s passed the verifier", dtype_name(to));
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- pooling */

typedef struct Window {
    int64_t k[2], s[2], pads[4], dil[2];
} Window;

static void get_window(const Node *n, Window *w) {
    static const int64_t one2[2] = {1, 1}, zero4[4] = {0, 0, 0, 0};
    attr_ints(n, "kernel", w->k, 2, 2, one2);
    attr_ints(n, "strides", w->s, 2, 2, one2);
    attr_ints(n, "pads", w->pads, 4, 4, zero4);
    attr_ints(n, "dilations", w->dil, 2, 2, one2);
}

static int run_maxpool(const Node *n, Tensor **in, Tensor *y) {
    const Tensor *x = in[0];
    Window w;
    get_window(n, &w);
    int64_t BC = x->type.dim[0] * x->type.dim[1], H = x->type.dim[2], W = x->type.dim[3];
    int64_t OH = y->type.dim[2], OW = y->type.dim[3];
    bool is_bit = x->type.dtype == TY_B1;
    for (int64_t p = 0; p < BC; p++)
        for (int64_t i = 0; i < OH; i++)
            for (int64_t j = 0; j < OW; j++) {
                float m = -INFINITY; /* a window with no input position: ONNX's -inf */
                int bit = 0;
                for (int64_t kh = 0; kh < w.k[0]; kh++)
                    for (int64_t kw = 0; kw < w.k[1]; kw++) {
                        int64_t ih = i * w.s[0] + kh * w.dil[0] - w.pads[0];
                        int64_t iw = j * w.s[1] + kw * w.dil[1] - w.pads[1];
                        if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                            continue; /* padding never wins */
                        int64_t xi = (p * H + ih) * W + iw;
                        if (is_bit)
                            bit |= bit_get(x->data, xi);
                        else if (f32s(x)[xi] > m || isnan(f32s(x)[xi]))
                            m = isnan(m) ? m : f32s(x)[xi];
                    }
                int64_t yi = (p * OH + i) * OW + j;
                if (is_bit)
                    bit_set(y->data, yi, bit);
                else
                    f32s(y)[yi] = m;
            }
    return 0;
}

static int run_avgpool(const Node *n, Tensor **in, Tensor *y) {
    const Tensor *x = in[0];
    Window w;
    get_window(n, &w);
    w.dil[0] = w.dil[1] = 1;
    bool include_pad = attr_int(n, "count_include_pad", 0) != 0;
    int64_t BC = x->type.dim[0] * x->type.dim[1], H = x->type.dim[2], W = x->type.dim[3];
    int64_t OH = y->type.dim[2], OW = y->type.dim[3];
    for (int64_t p = 0; p < BC; p++)
        for (int64_t i = 0; i < OH; i++)
            for (int64_t j = 0; j < OW; j++) {
                float sum = 0.0f;
                int64_t count = 0;
                for (int64_t kh = 0; kh < w.k[0]; kh++)
                    for (int64_t kw = 0; kw < w.k[1]; kw++) {
                        int64_t ih = i * w.s[0] + kh - w.pads[0];
                        int64_t iw = j * w.s[1] + kw - w.pads[1];
                        bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
                        /* Positions past the end padding (ceil_mode) never count. */
                        bool in_padded = ih >= -w.pads[0] && ih < H + w.pads[2] &&
                                         iw >= -w.pads[1] && iw < W + w.pads[3];
                        if (inside)
                            sum += f32s(x)[(p * H + ih) * W + iw];
                        count += include_pad ? in_padded : inside;
                    }
                f32s(y)[(p * OH + i) * OW + j] = sum / (float)count;
            }
    return 0;
}

static int run_globalavgpool(const Node *n, Tensor **in, Tensor *y) {
    (void)n;
    int64_t BC = in[0]->type.dim[0] * in[0]->type.dim[1];
    int64_t HW = in[0]->type.dim[2] * in[0]->type.dim[3];
    bool bits = in[0]->type.dtype == TY_B1; /* +-1 values, summed as floats alike */
    for (int64_t p = 0; p < BC; p++) {
        float sum = 0.0f;
        for (int64_t k = 0; k < HW; k++)
            sum += bits ? (float)pm1(in[0], p * HW + k) : f32s(in[0])[p * HW + k];
        f32s(y)[p] = sum / (float)HW;
    }
    return 0;
}

/* ---------------------------------------------------------------- elementwise */

static int run_binary(const Node *n, Tensor **in, Tensor *y) {
    const Type *ty = &y->type;
    int64_t idx[MAX_RANK] = {0};
    bool is_int = y->type.dtype == TY_I32;
    for (int64_t k = 0; k < numel(y); k++, next_index(ty, idx)) {
        int64_t ia = broadcast_offset(&in[0]->type, ty, idx);
        int64_t ib = broadcast_offset(&in[1]->type, ty, idx);
        if (is_int) {
            /* Wraps modulo 2^32: unsigned arithmetic, no undefined overflow. */
            uint32_t a = (uint32_t)i32s(in[0])[ia], b = (uint32_t)i32s(in[1])[ib], r;
            switch (n->op) {
            case OP_ADD: r = a + b; break;
            case OP_SUB: r = a - b; break;
            case OP_MUL: r = a * b; break;
            default: unreachable("integer %s passed the verifier", op_info(n->op)->name);
            }
            i32s(y)[k] = (int32_t)r;
            continue;
        }
        float a = f32s(in[0])[ia], b = f32s(in[1])[ib], r;
        switch (n->op) {
        case OP_ADD: r = a + b; break;
        case OP_SUB: r = a - b; break;
        case OP_MUL: r = a * b; break;
        case OP_DIV: r = a / b; break;
        case OP_POW: r = powf(a, b); break;
        default: unreachable("bad elementwise op");
        }
        f32s(y)[k] = r;
    }
    return 0;
}

static int run_relu_clip(const Node *n, Tensor **in, Tensor *y) {
    float lo = 0.0f, hi = INFINITY;
    if (n->op == OP_CLIP) {
        lo = attr_float(n, "min", -INFINITY);
        hi = attr_float(n, "max", INFINITY);
    }
    for (int64_t k = 0; k < numel(y); k++) {
        float v = f32s(in[0])[k]; /* NaN passes through */
        v = v < lo ? lo : v;
        f32s(y)[k] = v > hi ? hi : v;
    }
    return 0;
}

/* ---------------------------------------------------------------- data movement */

static int run_reshape(const Node *n, Tensor **in, Tensor *y) {
    (void)n;
    memcpy(y->data, in[0]->data, y->nbytes); /* canonical storage is the flattening */
    return 0;
}

static int run_transpose(const Node *n, Tensor **in, Tensor *y) {
    const Type *tx = &in[0]->type;
    int64_t perm[MAX_RANK], def[MAX_RANK], idx[MAX_RANK] = {0}, src[MAX_RANK];
    for (int d = 0; d < tx->rank; d++)
        def[d] = tx->rank - 1 - d;
    attr_ints(n, "perm", perm, MAX_RANK, tx->rank, def);
    for (int64_t k = 0; k < numel(y); k++, next_index(&y->type, idx)) {
        for (int d = 0; d < tx->rank; d++)
            src[perm[d]] = idx[d];
        copy_elem(y, k, in[0], flat_offset(tx, src));
    }
    return 0;
}

static int run_concat(const Node *n, Tensor **in, Tensor *y) {
    int axis = node_axis(n, y->type.rank, 0);
    int64_t base = 0;
    for (int i = 0; i < n->nin; i++) {
        const Type *t = &in[i]->type;
        int64_t idx[MAX_RANK] = {0};
        for (int64_t k = 0; k < numel(in[i]); k++, next_index(t, idx)) {
            int64_t dst[MAX_RANK];
            memcpy(dst, idx, sizeof dst);
            dst[axis] += base;
            copy_elem(y, flat_offset(&y->type, dst), in[i], k);
        }
        base += t->dim[axis];
    }
    return 0;
}

static int run_pad(const Node *n, Tensor **in, Tensor *y) {
    const Type *tx = &in[0]->type;
    int64_t pads[2 * MAX_RANK], idx[MAX_RANK] = {0}, src[MAX_RANK];
    attr_ints(n, "pads", pads, 2 * MAX_RANK, 0, NULL);
    float value = attr_float(n, "value", 0.0f);
    for (int64_t k = 0; k < numel(y); k++, next_index(&y->type, idx)) {
        bool inside = true;
        for (int d = 0; d < tx->rank; d++) {
            src[d] = idx[d] - pads[d];
            inside = inside && src[d] >= 0 && src[d] < tx->dim[d];
        }
        if (inside)
            copy_elem(y, k, in[0], flat_offset(tx, src));
        else if (tx->dtype == TY_B1)
            bit_set(y->data, k, value > 0);
        else
            f32s(y)[k] = value;
    }
    return 0;
}

/* ---------------------------------------------------------------- heads */

static int run_softmax(const Node *n, Tensor **in, Tensor *y) {
    int64_t outer, len, inner;
    split_axis(&y->type, node_axis(n, y->type.rank, -1), &outer, &len, &inner);
    const float *x = f32s(in[0]);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i;
            float m = -INFINITY, sum = 0.0f;
            for (int64_t k = 0; k < len; k++)
                m = x[base + k * inner] > m ? x[base + k * inner] : m;
            for (int64_t k = 0; k < len; k++) {
                float e = expf(x[base + k * inner] - m);
                f32s(y)[base + k * inner] = e;
                sum += e;
            }
            for (int64_t k = 0; k < len; k++)
                f32s(y)[base + k * inner] /= sum;
        }
    return 0;
}

static int run_argmax(const Node *n, Tensor **in, Tensor *y) {
    int64_t outer, len, inner;
    split_axis(&in[0]->type, node_axis(n, in[0]->type.rank, -1), &outer, &len, &inner);
    const float *x = f32s(in[0]);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i, best = 0;
            for (int64_t k = 1; k < len; k++)
                if (x[base + k * inner] > x[base + best * inner])
                    best = k; /* strict: the first maximum wins */
            i64s(y)[o * inner + i] = best;
        }
    return 0;
}

typedef struct Ranked {
    float v;
    int64_t index;
} Ranked;

/* Sort key of topk: NaN above every number (numpy's order), then by value, then by index. */
static int compare_ranked(const Ranked *a, const Ranked *b, bool largest) {
    bool na = isnan(a->v), nb = isnan(b->v);
    int c = 0;
    if (na != nb)
        c = na ? 1 : -1;
    else if (!na && a->v != b->v)
        c = a->v > b->v ? 1 : -1;
    if (c)
        return largest ? -c : c;
    return a->index < b->index ? -1 : a->index > b->index;
}

static int compare_largest(const void *a, const void *b) { return compare_ranked(a, b, true); }
static int compare_smallest(const void *a, const void *b) { return compare_ranked(a, b, false); }

static int run_topk(const Node *n, Tensor **in, Tensor *vals, Tensor *idxs) {
    int64_t outer, len, inner;
    split_axis(&in[0]->type, node_axis(n, in[0]->type.rank, -1), &outer, &len, &inner);
    int64_t k = attr_int(n, "k", 1);
    bool largest = attr_int(n, "largest", 1) != 0;
    Ranked *row = xmalloc((size_t)(len ? len : 1) * sizeof *row);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            for (int64_t j = 0; j < len; j++) {
                row[j].v = f32s(in[0])[(o * len + j) * inner + i];
                row[j].index = j;
            }
            qsort(row, (size_t)len, sizeof *row, largest ? compare_largest : compare_smallest);
            for (int64_t j = 0; j < k; j++) {
                f32s(vals)[(o * k + j) * inner + i] = row[j].v;
                i64s(idxs)[(o * k + j) * inner + i] = row[j].index;
            }
        }
    free(row);
    return 0;
}

/* ---------------------------------------------------------------- driver */

/* ---------------------------------------------------------------- fused binary layers */

/* The bit of a thresholded accumulator: y >= t[o] for dir +1, y <= t[o] for dir -1. */
static int threshold_bit(int64_t y, const Tensor *t, const Tensor *dir, int64_t o) {
    int32_t tv = i32s(t)[o];
    return ((const int8_t *)dir->data)[o] > 0 ? y >= tv : y <= tv;
}

static int run_bdense(const Node *n, Tensor **in, Tensor *y) {
    Node acc = *n;
    acc.op = OP_DENSE;
    acc.nin = 2;
    Tensor a;
    Type at = y->type;
    at.dtype = TY_I32;
    alloc_tensor(&a, &at);
    int rc = run_dense(&acc, in, &a);
    int64_t O = y->type.dim[1];
    for (int64_t i = 0; rc == 0 && i < numel(y); i++)
        bit_set(y->data, i, threshold_bit(i32s(&a)[i], in[2], in[3], i % O));
    free_tensor(&a);
    return rc;
}

static int run_bconv2d(const Node *n, Tensor **in, Tensor *y) {
    const Tensor *x = in[0], *w = in[1];
    int64_t strides[2], pads[4], dil[2];
    conv_attrs(n, strides, pads, dil);
    /* The convolution's own output, before any pooling. */
    Type at = y->type;
    at.dtype = TY_I32;
    at.dim[2] = (x->type.dim[2] + pads[0] + pads[2] - dil[0] * (w->type.dim[2] - 1) - 1) /
                    strides[0] + 1;
    at.dim[3] = (x->type.dim[3] + pads[1] + pads[3] - dil[1] * (w->type.dim[3] - 1) - 1) /
                    strides[1] + 1;
    Tensor a;
    alloc_tensor(&a, &at);
    Node acc = *n;
    acc.op = OP_CONV2D;
    acc.nin = 2;
    int rc = run_conv2d(&acc, in, &a);
    int64_t B = at.dim[0], O = at.dim[1], H = at.dim[2], W = at.dim[3];
    if (rc == 0 && !get_attr(n, "pool_kernel")) {
        for (int64_t i = 0; i < numel(y); i++)
            bit_set(y->data, i, threshold_bit(i32s(&a)[i], in[2], in[3], (i / (H * W)) % O));
    } else if (rc == 0) {
        static const int64_t one2[2] = {1, 1}, zero4[4] = {0, 0, 0, 0};
        int64_t k[2], s[2], pp[4];
        attr_ints(n, "pool_kernel", k, 2, 2, one2);
        attr_ints(n, "pool_strides", s, 2, 2, one2);
        attr_ints(n, "pool_pads", pp, 4, 4, zero4);
        bool before = attr_int(n, "pool_before", 0) != 0;
        int64_t OH = y->type.dim[2], OW = y->type.dim[3];
        for (int64_t p = 0; p < B * O; p++)
            for (int64_t i = 0; i < OH; i++)
                for (int64_t j = 0; j < OW; j++) {
                    int64_t o = p % O, best = 0;
                    int bit = 0;
                    bool any = false;
                    for (int64_t kh = 0; kh < k[0]; kh++)
                        for (int64_t kw = 0; kw < k[1]; kw++) {
                            int64_t ih = i * s[0] + kh - pp[0], iw = j * s[1] + kw - pp[1];
                            if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                                continue; /* padding never wins */
                            int64_t v = i32s(&a)[(p * H + ih) * W + iw];
                            best = !any || v > best ? v : best;
                            any = true;
                            bit |= threshold_bit(v, in[2], in[3], o);
                        }
                    if (before)
                        bit = any && threshold_bit(best, in[2], in[3], o);
                    bit_set(y->data, (p * OH + i) * OW + j, bit);
                }
    }
    free_tensor(&a);
    return rc;
}

/* qdense: an exact integer dot of unsigned activation codes and signed weight codes,
 * optionally counted against multi-level thresholds (docs/ir.md). */
static int run_qdense(const Node *n, Tensor **in, Tensor *y) {
    const Tensor *x = in[0], *w = in[1];
    int64_t B = x->type.dim[0], K = x->type.dim[1], O = w->type.dim[0];
    int64_t xmax = ((int64_t)1 << attr_int(n, "xbits", 1)) - 1;
    const int8_t *wc = (const int8_t *)w->data;
    for (int64_t i = 0; i < B * K; i++)
        if (i32s(x)[i] < 0 || i32s(x)[i] > xmax)
            return fail(n, "input code %d at element %lld is outside [0, %lld]", i32s(x)[i],
                        (long long)i, (long long)xmax);
    int64_t L = n->nin == 4 ? in[2]->type.dim[1] : 0;
    for (int64_t bi = 0; bi < B; bi++)
        for (int64_t o = 0; o < O; o++) {
            int64_t acc = 0;
            for (int64_t k = 0; k < K; k++)
                acc += (int64_t)i32s(x)[bi * K + k] * wc[o * K + k];
            if (acc < INT32_MIN || acc > INT32_MAX)
                return fail(n, "accumulator %lld of output %lld does not fit i32", (long long)acc,
                            (long long)o);
            if (!L) {
                i32s(y)[bi * O + o] = (int32_t)acc;
                continue;
            }
            int d = ((const int8_t *)in[3]->data)[o];
            int32_t count = 0;
            for (int64_t l = 0; l < L; l++) {
                int32_t t = i32s(in[2])[o * L + l];
                count += d > 0 ? acc >= t : acc <= t;
            }
            i32s(y)[bi * O + o] = count;
        }
    return 0;
}

/* qconv2d: conv2d's loop over integer codes; a padded tap reads pad_code (the code of 0.0,
 * so that every tap adds code * weight and the zero-point algebra stays uniform). */
static int run_qconv2d(const Node *n, Tensor **in, Tensor *y) {
    const Tensor *x = in[0], *w = in[1];
    int64_t strides[2], pads[4], dil[2];
    conv_attrs(n, strides, pads, dil);
    int64_t groups = attr_int(n, "groups", 1), pad_code = attr_int(n, "pad_code", 0);
    int64_t xmax = ((int64_t)1 << attr_int(n, "xbits", 1)) - 1;
    int64_t B = x->type.dim[0], C = x->type.dim[1], H = x->type.dim[2], W = x->type.dim[3];
    int64_t O = w->type.dim[0], CG = w->type.dim[1], KH = w->type.dim[2], KW = w->type.dim[3];
    int64_t OH = y->type.dim[2], OW = y->type.dim[3], L = n->nin == 4 ? in[2]->type.dim[1] : 0;
    const int8_t *wc = (const int8_t *)w->data;
    for (int64_t i = 0; i < numel(x); i++)
        if (i32s(x)[i] < 0 || i32s(x)[i] > xmax)
            return fail(n, "input code %d at element %lld is outside [0, %lld]", i32s(x)[i],
                        (long long)i, (long long)xmax);
    for (int64_t bi = 0; bi < B; bi++)
        for (int64_t o = 0; o < O; o++) {
            int64_t g = o / (O / groups);
            for (int64_t i = 0; i < OH; i++)
                for (int64_t j = 0; j < OW; j++) {
                    int64_t acc = 0;
                    for (int64_t c = 0; c < CG; c++)
                        for (int64_t kh = 0; kh < KH; kh++)
                            for (int64_t kw = 0; kw < KW; kw++) {
                                int64_t ih = i * strides[0] + kh * dil[0] - pads[0];
                                int64_t iw = j * strides[1] + kw * dil[1] - pads[1];
                                bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
                                int64_t xv = inside
                                    ? i32s(x)[((bi * C + g * CG + c) * H + ih) * W + iw]
                                    : pad_code;
                                acc += xv * wc[((o * CG + c) * KH + kh) * KW + kw];
                            }
                    if (acc < INT32_MIN || acc > INT32_MAX)
                        return fail(n, "accumulator %lld of output %lld does not fit i32",
                                    (long long)acc, (long long)o);
                    int64_t yi = ((bi * O + o) * OH + i) * OW + j;
                    if (!L) {
                        i32s(y)[yi] = (int32_t)acc;
                        continue;
                    }
                    int d = ((const int8_t *)in[3]->data)[o];
                    int32_t count = 0;
                    for (int64_t l = 0; l < L; l++) {
                        int32_t t = i32s(in[2])[o * L + l];
                        count += d > 0 ? acc >= t : acc <= t;
                    }
                    i32s(y)[yi] = count;
                }
        }
    return 0;
}

/* The stages of a bconv2d_chain / conv2d_chain's float epilogue on v (NCHW, o channels of hw
 * elements), element by element: v*a + b or v/a + b, then relu where asked, each one float32
 * operation as mul/div, add and relu do. */
/* Stages s0 .. s1 - 1 of the chain on v, in place. */
static void apply_stages(const Node *n, const Tensor *chain, Tensor *v, int64_t s0, int64_t s1) {
    int64_t O = v->type.dim[1], HW = 1, S = chain->type.dim[0];
    for (int d = 2; d < v->type.rank; d++)
        HW *= v->type.dim[d];
    int64_t div[CHAIN_MAX_STAGES] = {0}, relu[CHAIN_MAX_STAGES] = {0};
    attr_ints(n, "div", div, (int)S, 0, NULL);
    attr_ints(n, "relu", relu, (int)S, 0, NULL);
    const float *k = f32s(chain);
    for (int64_t i = 0; i < numel(v); i++) {
        int64_t c = (i / HW) % O;
        float x = f32s(v)[i];
        for (int64_t s = s0; s < s1; s++) {
            x = div[s] ? x / k[(2 * s) * O + c] : x * k[(2 * s) * O + c];
            x = x + k[(2 * s + 1) * O + c];
            if (relu[s])
                x = x < 0.0f ? 0.0f : x;
        }
        f32s(v)[i] = x;
    }
}

static void apply_chain(const Node *n, const Tensor *chain, Tensor *v) {
    apply_stages(n, chain, v, 0, chain->type.dim[0]);
}

static void binarize_into(const Node *n, const Tensor *y, Tensor *bits) {
    int zero_bit = attr_int(n, "zero", 1) == 1;
    for (int64_t i = 0; i < numel(y); i++) {
        float v = f32s(y)[i];
        bit_set(bits->data, i, v > 0 || (v == 0 && zero_bit)); /* NaN: 0 */
    }
}

/* bconv2d_chain / bdense_chain, in the order the unfused ops ran: (float)acc, the stages, the
 * residual add, the binarize. */
static int run_binary_chain(const Node *n, Tensor **in, Tensor *y, Tensor *bits) {
    Tensor a;
    Type at = y->type;
    at.dtype = TY_I32;
    alloc_tensor(&a, &at);
    Node acc = *n;
    acc.op = n->op == OP_BDENSE_CHAIN ? OP_DENSE : OP_CONV2D;
    acc.nin = 2;
    int rc = acc.op == OP_DENSE ? run_dense(&acc, in, &a) : run_conv2d(&acc, in, &a);
    for (int64_t i = 0; i < numel(y); i++)
        f32s(y)[i] = (float)i32s(&a)[i];
    free_tensor(&a);
    apply_chain(n, in[2], y);
    if (n->nin == 4) {
        const float *r = f32s(in[3]);
        bool first = attr_int(n, "residual_first", 0) != 0;
        for (int64_t i = 0; i < numel(y); i++)
            f32s(y)[i] = first ? r[i] + f32s(y)[i] : f32s(y)[i] + r[i];
    }
    binarize_into(n, y, bits);
    return rc;
}

/* The quantizer of a conv2d_chain / qconv2d_chain on its value y: codes as quantize gives them
 * (q - lo, NaN: code 0, as the runtime) and, with dequant, y as quant's float result
 * (q - zeropt) * scale. */
static void quantize_into(const Node *n, Tensor *y, Tensor *codes) {
    int bits = (int)attr_int(n, "quant_bits", 8);
    bool is_signed = attr_int(n, "signed", 1), narrow = attr_int(n, "narrow", 0);
    bool dequant = attr_int(n, "dequant", 0) != 0;
    const RoundingMode mode = op_rounding(n, "ROUND");
    float scale = attr_float(n, "quant_scale", 1.0f), zeropt = attr_float(n, "quant_zero", 0.0f);
    int64_t lo, hi;
    quant_range(bits, is_signed, narrow, &lo, &hi);
    for (int64_t i = 0; i < numel(y); i++) {
        float q = quant_level(f32s(y)[i], scale, zeropt, lo, hi, mode);
        i32s(codes)[i] = isnan(q) ? 0 : (int32_t)(q - (float)lo);
        if (dequant)
            f32s(y)[i] = (q - zeropt) * scale;
    }
}

/* conv2d_chain: the float conv2d (bias in[3]), the stages, the max-pool, the stages after it,
 * then the binarize or the quantizer. */
static int run_conv2d_chain(const Node *n, Tensor **in, Tensor *y, Tensor *bits) {
    const Attr *pk = get_attr(n, "pool_kernel");
    Tensor v = *y;
    if (pk) { /* the conv's own output, before the pool */
        int64_t strides[2], pads[4], dil[2];
        conv_attrs(n, strides, pads, dil);
        Type vt = y->type;
        for (int d = 0; d < 2; d++)
            vt.dim[2 + d] = (in[0]->type.dim[2 + d] + pads[d] + pads[d + 2] -
                             dil[d] * (in[1]->type.dim[2 + d] - 1) - 1) / strides[d] + 1;
        alloc_tensor(&v, &vt);
    }
    Tensor *conv_in[3] = {in[0], in[1], n->nin == 4 ? in[3] : NULL};
    Node conv = *n;
    conv.op = OP_CONV2D;
    conv.nin = n->nin == 4 ? 3 : 2;
    int rc = run_conv2d(&conv, conv_in, &v);
    int64_t stages = in[2]->type.dim[0], pool_at = pk ? attr_int(n, "pool_at", stages) : stages;
    apply_stages(n, in[2], &v, 0, pool_at);
    if (pk) { /* the max-pool, then the stages after it */
        Attr attrs[4];
        Node pool = fused_pool_node(n, n->in, attrs);
        Tensor *pin[1] = {&v};
        if (rc == 0)
            rc = run_maxpool(&pool, pin, y);
        free_tensor(&v);
        apply_stages(n, in[2], y, pool_at, stages);
    }
    if (get_attr(n, "quant_bits"))
        quantize_into(n, y, bits); /* bits: the codes */
    else
        binarize_into(n, y, bits);
    return rc;
}

/* qconv2d_chain, in the order the unfused ops ran: the qconv2d's accumulator, (float)acc, the
 * stages, the residual add, the relu, then the quantizer: codes as quantize gives them (q - lo)
 * and, with dequant, y as quant's float result (q - zeropt) * scale; else y is the value. */
static int run_qconv2d_chain(const Node *n, Tensor **in, Tensor *y, Tensor *codes) {
    Node conv = *n;
    conv.op = OP_QCONV2D;
    conv.nin = 2;
    int rc = run_qconv2d(&conv, in, codes); /* the accumulator, replaced by the codes below */
    if (rc)
        return rc;
    for (int64_t i = 0; i < numel(y); i++)
        f32s(y)[i] = (float)i32s(codes)[i];
    apply_chain(n, in[2], y);
    bool first = attr_int(n, "residual_first", 0) != 0, relu = attr_int(n, "out_relu", 0) != 0;
    for (int64_t i = 0; i < numel(y); i++) {
        float v = f32s(y)[i];
        if (n->nin == 4)
            v = first ? f32s(in[3])[i] + v : v + f32s(in[3])[i];
        f32s(y)[i] = relu && v < 0.0f ? 0.0f : v;
    }
    if (!get_attr(n, "quant_bits")) {
        memset(codes->data, 0, codes->nbytes);
        return 0;
    }
    quantize_into(n, y, codes);
    return 0;
}

static int run_repack(const Node *n, Tensor **in, Tensor *y) {
    (void)n; /* interpreter tensors are canonical: a layout change is a copy */
    memcpy(y->data, in[0]->data, y->nbytes);
    return 0;
}

static int run_node(const Node *n, Tensor **in, Tensor *out) {
    switch (n->op) {
    case OP_CONV2D: return run_conv2d(n, in, &out[0]);
    case OP_DENSE: return run_dense(n, in, &out[0]);
    case OP_MATMUL: return run_matmul(n, in, &out[0]);
    case OP_BATCHNORM: return run_batchnorm(n, in, &out[0]);
    case OP_SIGN: return run_sign(n, in, &out[0]);
    case OP_BINARIZE: return run_binarize(n, in, &out[0]);
    case OP_THRESHOLD: return run_threshold(n, in, &out[0]);
    case OP_QUANT: return run_quant(n, in, &out[0]);
    case OP_TRUNC: return run_trunc(n, in, &out[0]);
    case OP_CAST: return run_cast(n, in, &out[0]);
    case OP_MAXPOOL: return run_maxpool(n, in, &out[0]);
    case OP_AVGPOOL: return run_avgpool(n, in, &out[0]);
    case OP_GLOBALAVGPOOL: return run_globalavgpool(n, in, &out[0]);
    case OP_ADD:
    case OP_SUB:
    case OP_MUL:
    case OP_DIV:
    case OP_POW: return run_binary(n, in, &out[0]);
    case OP_RELU:
    case OP_CLIP: return run_relu_clip(n, in, &out[0]);
    case OP_RESHAPE: return run_reshape(n, in, &out[0]);
    case OP_TRANSPOSE: return run_transpose(n, in, &out[0]);
    case OP_CONCAT: return run_concat(n, in, &out[0]);
    case OP_PAD: return run_pad(n, in, &out[0]);
    case OP_SOFTMAX: return run_softmax(n, in, &out[0]);
    case OP_ARGMAX: return run_argmax(n, in, &out[0]);
    case OP_TOPK: return run_topk(n, in, &out[0], &out[1]);
    case OP_BDENSE: return run_bdense(n, in, &out[0]);
    case OP_BCONV2D: return run_bconv2d(n, in, &out[0]);
    case OP_BCONV2D_CHAIN:
    case OP_BDENSE_CHAIN: return run_binary_chain(n, in, &out[0], &out[1]);
    case OP_CONV2D_CHAIN: return run_conv2d_chain(n, in, &out[0], &out[1]);
    case OP_REPACK: return run_repack(n, in, &out[0]);
    case OP_QUANTIZE: return run_quantize(n, in, &out[0]);
    case OP_QDENSE: return run_qdense(n, in, &out[0]);
    case OP_QCONV2D: return run_qconv2d(n, in, &out[0]);
    case OP_QCONV2D_CHAIN: return run_qconv2d_chain(n, in, &out[0], &out[1]);
    case OP_COUNT: break;
    }
    unreachable("bad op %d", (int)n->op);
}

/* Check the inputs against the graph's input types and find the batch (1 if none). */
static int resolve_batch(const Graph *g, const Tensor *inputs, int64_t *batch) {
    const Value *first = NULL;
    *batch = -1;
    for (int i = 0; i < g->ninputs; i++) {
        const Value *v = g->inputs[i];
        const Type *want = &v->type, *got = &inputs[i].type;
        char w[160], h[160];
        bool ok = got->dtype == want->dtype && got->rank == want->rank;
        for (int d = 0; ok && d < want->rank; d++)
            ok = want->dim[d] == DIM_BATCH ? got->dim[d] >= 1 : got->dim[d] == want->dim[d];
        if (!ok) {
            diag_error("input %%%s: expected %s, got %s", v->name, type_str(want, w, sizeof w),
                       type_str(got, h, sizeof h));
            return -1;
        }
        size_t need = type_nbytes(got, 1);
        if (inputs[i].nbytes != need || (need && !inputs[i].data)) {
            diag_error("input %%%s: %s needs %zu bytes of data, got %zu", v->name,
                       type_str(got, h, sizeof h), need, inputs[i].data ? inputs[i].nbytes : 0);
            return -1;
        }
        for (int d = 0; d < want->rank; d++) {
            if (want->dim[d] != DIM_BATCH)
                continue;
            if (*batch >= 0 && got->dim[d] != *batch) {
                diag_error("input %%%s: batch %lld disagrees with batch %lld of input %%%s",
                           v->name, (long long)got->dim[d], (long long)*batch, first->name);
                return -1;
            }
            *batch = got->dim[d];
            first = v;
        }
    }
    if (*batch < 0)
        *batch = 1;
    return 0;
}

int interp_run(const Graph *g, const Tensor *inputs, Tensor *outputs) {
    return interp_run_observed(g, inputs, outputs, NULL, NULL);
}

int interp_run_observed(const Graph *g, const Tensor *inputs, Tensor *outputs, InterpObserver observe,
                        void *user) {
    for (int i = 0; i < g->noutputs; i++)
        memset(&outputs[i], 0, sizeof outputs[i]);
    int64_t batch;
    if (verify_graph(g) || resolve_batch(g, inputs, &batch))
        return -1;
    int nv = g->nvalues;
    Tensor *vals = xcalloc((size_t)nv + 1, sizeof *vals);
    bool *owned = xcalloc((size_t)nv + 1, sizeof *owned);
    bool *keep = xcalloc((size_t)nv + 1, sizeof *keep);
    int *last_use = xmalloc(((size_t)nv + 1) * sizeof *last_use);
    for (int i = 0; i < nv; i++)
        last_use[i] = -1;
    for (int i = 0; i < g->nnodes; i++)
        for (int j = 0; !g->nodes[i]->dead && j < g->nodes[i]->nin; j++)
            last_use[g->nodes[i]->in[j]->id] = i;
    for (int i = 0; i < g->noutputs; i++)
        keep[g->outputs[i]->id] = true;
    /* Inputs and constants are borrowed, never freed here. */
    for (int i = 0; i < g->ninputs; i++)
        vals[g->inputs[i]->id] = inputs[i];
    for (int i = 0; i < g->nconsts; i++) {
        const Value *c = g->consts[i];
        vals[c->id] = (Tensor){c->type, c->data, c->nbytes};
    }
    int rc = 0;
    for (int i = 0; i < g->nnodes && rc == 0; i++) {
        const Node *n = g->nodes[i];
        if (n->dead)
            continue;
        Tensor **in = xcalloc((size_t)n->nin, sizeof *in);
        for (int j = 0; j < n->nin; j++)
            in[j] = &vals[n->in[j]->id];
        Tensor out[MAX_OUTPUTS];
        for (int j = 0; j < n->nout; j++) {
            Type t = concrete_type(&n->out[j]->type, batch);
            alloc_tensor(&out[j], &t);
        }
        rc = run_node(n, in, out);
        free(in);
        if (rc == 0 && observe)
            observe(user, n, out);
        for (int j = 0; j < n->nout; j++) {
            int id = n->out[j]->id;
            vals[id] = out[j];
            owned[id] = true;
        }
        /* Free what no later node reads: operands at their last use, unused results now. */
        for (int j = 0; j < n->nin; j++) {
            int id = n->in[j]->id;
            if (owned[id] && !keep[id] && last_use[id] <= i) {
                free_tensor(&vals[id]);
                owned[id] = false;
            }
        }
        for (int j = 0; j < n->nout; j++) {
            int id = n->out[j]->id;
            if (owned[id] && !keep[id] && last_use[id] <= i) {
                free_tensor(&vals[id]);
                owned[id] = false;
            }
        }
    }
    for (int i = 0; rc == 0 && i < g->noutputs; i++) {
        const Tensor *t = &vals[g->outputs[i]->id];
        outputs[i].type = concrete_type(&t->type, batch);
        outputs[i].nbytes = t->nbytes;
        outputs[i].data = xmalloc(t->nbytes ? t->nbytes : 1);
        if (t->nbytes)
            memcpy(outputs[i].data, t->data, t->nbytes);
    }
    for (int i = 0; i < nv; i++)
        if (owned[i])
            free_tensor(&vals[i]);
    free(vals);
    free(owned);
    free(keep);
    free(last_use);
    return rc;
}
