// float_ops.cu: plain CUDA-core code for the plan steps that are not binary GEMMs or
// convolutions (pack, unpack, float dense/conv2d, affine, pools, add, relu, copy, argmax,
// cast, and the NHWC->NCHW transpose the GPU needs after an integer bconv). Each function
// computes work item j of batch item `item`, exactly as runtime/rt_cpu.c computes the same
// element: same loop order, every float operation rounded on its own (__fmul_rn /
// __fadd_rn, never contracted into an FMA), so the GPU matches the CPU path.
// The generated glue (codegen/cuda/emit.c) wraps one call per plan step in a __global__
// with the step's shapes as literals. NVRTC has no <cstdint>: built-in types only.
#ifndef BNN_FLOAT_OPS_CU
#define BNN_FLOAT_OPS_CU

typedef long long bnn_i64;

// Bits LSB-first in 32-bit words; layout 0 reads x channel-major [C][S], 1 channel-minor [S][C].
__device__ __forceinline__ void bnn_pack(bnn_i64 item, int j, const float *x, unsigned *y, int channels,
                                         int spatial, int words, int zero, int layout) {
    x += item * channels * spatial;
    y += item * spatial * words;
    const int s = j / words, wi = j % words;
    unsigned bits = 0;
    for (int b = 0; b < 32; ++b) {
        const int ch = wi * 32 + b;
        if (ch >= channels) break;
        const float v = layout == 0 ? x[(bnn_i64)ch * spatial + s] : x[(bnn_i64)s * channels + ch];
        const bool bit = v > 0.0f || (v == 0.0f && zero > 0); // NaN packs as -1
        bits |= (unsigned)bit << b;
    }
    y[j] = bits;
}

__device__ __forceinline__ void bnn_unpack(bnn_i64 item, int j, const unsigned *x, float *y, int channels,
                                           int spatial, int words, int layout) {
    x += item * spatial * words;
    y += item * channels * spatial;
    const int ch = layout == 0 ? j / spatial : j % channels, s = layout == 0 ? j % spatial : j / channels;
    y[j] = (x[(bnn_i64)s * words + ch / 32] >> (ch % 32)) & 1u ? 1.0f : -1.0f;
}

__device__ __forceinline__ void bnn_dense(bnn_i64 item, int j, const float *x, const float *w, const float *b,
                                          float *y, int rows, int n, int k) {
    x += item * rows * k;
    y += item * rows * n;
    const int r = j / n, o = j % n;
    float acc = 0.0f;
    for (int i = 0; i < k; ++i) acc = __fadd_rn(acc, __fmul_rn(x[(bnn_i64)r * k + i], w[(bnn_i64)o * k + i]));
    y[j] = b ? __fadd_rn(b[o], acc) : acc;
}

__device__ __forceinline__ void bnn_conv2d(bnn_i64 item, int j, const float *x, const float *w, const float *b,
                                           float *y, int c, int h, int wd, int o_n, int kh, int kw, int sh, int sw,
                                           int pt, int pl, int dh, int dw, int groups, int oh, int ow) {
    x += item * c * h * wd;
    y += item * o_n * oh * ow;
    const int cg = c / groups, og = o_n / groups;
    const int o = j / (oh * ow), oy = j / ow % oh, ox = j % ow, g = o / og;
    float acc = 0.0f;
    for (int ci = 0; ci < cg; ++ci)
        for (int ky = 0; ky < kh; ++ky) {
            const int iy = oy * sh - pt + ky * dh;
            if (iy < 0 || iy >= h) continue;
            for (int kx = 0; kx < kw; ++kx) {
                const int ix = ox * sw - pl + kx * dw;
                if (ix < 0 || ix >= wd) continue;
                acc = __fadd_rn(acc, __fmul_rn(x[((bnn_i64)(g * cg + ci) * h + iy) * wd + ix],
                                               w[(((bnn_i64)o * cg + ci) * kh + ky) * kw + kx]));
            }
        }
    y[j] = b ? __fadd_rn(b[o], acc) : acc;
}

// y = x * scale[c] + bias[c] (div: x / scale[c] + bias[c]), in place allowed.
__device__ __forceinline__ void bnn_affine(bnn_i64 item, int j, const float *x, const float *scale,
                                           const float *bias, float *y, int channels, int spatial, int layout,
                                           int div) {
    const bnn_i64 at = item * channels * spatial + j;
    const int ch = layout == 0 ? j / spatial : j % channels;
    const float prod = div ? __fdiv_rn(x[at], scale[ch]) : __fmul_rn(x[at], scale[ch]);
    y[at] = __fadd_rn(prod, bias[ch]);
}

// Max or average pooling over NCHW f32, the divisor as the CPU path computes it.
__device__ __forceinline__ void bnn_pool(bnn_i64 item, int j, const float *x, float *y, int c, int h, int w,
                                         int kh, int kw, int sh, int sw, int pt, int pl, int pb, int pr, int oh,
                                         int ow, int include_pad, bool max) {
    x += item * c * h * w;
    y += item * c * oh * ow;
    const int ch = j / (oh * ow), oy = j / ow % oh, ox = j % ow;
    int y0 = oy * sh - pt, x0 = ox * sw - pl, y1 = y0 + kh, x1 = x0 + kw;
    const int py1 = y1 < h + pb ? y1 : h + pb, px1 = x1 < w + pr ? x1 : w + pr;
    const int padded = (py1 - y0) * (px1 - x0);
    y0 = y0 < 0 ? 0 : y0;
    x0 = x0 < 0 ? 0 : x0;
    y1 = y1 < h ? y1 : h;
    x1 = x1 < w ? x1 : w;
    float acc = max ? -__int_as_float(0x7f800000) : 0.0f;
    for (int iy = y0; iy < y1; ++iy)
        for (int ix = x0; ix < x1; ++ix) {
            const float v = x[((bnn_i64)ch * h + iy) * w + ix];
            if (!max)
                acc = __fadd_rn(acc, v);
            else if (v > acc)
                acc = v;
        }
    if (!max) acc = __fdiv_rn(acc, (float)(include_pad ? padded : (y1 - y0) * (x1 - x0)));
    y[j] = acc;
}

__device__ __forceinline__ void bnn_gap(bnn_i64 item, int j, const float *x, float *y, int channels, int spatial) {
    x += item * channels * spatial;
    float acc = 0.0f;
    for (int s = 0; s < spatial; ++s) acc = __fadd_rn(acc, x[(bnn_i64)j * spatial + s]);
    y[item * channels + j] = __fdiv_rn(acc, (float)spatial);
}

// b_per_item: 0 when b is a constant shared by every item (weights), else count.
__device__ __forceinline__ void bnn_add_f32(bnn_i64 item, int j, const float *a, const float *b, float *y,
                                            int count, int b_per_item) {
    const bnn_i64 at = item * count + j;
    y[at] = __fadd_rn(a[at], b[item * b_per_item + j]);
}

__device__ __forceinline__ void bnn_add_i32(bnn_i64 item, int j, const int *a, const int *b, int *y, int count,
                                            int b_per_item) {
    const bnn_i64 at = item * count + j;
    y[at] = (int)((unsigned)a[at] + (unsigned)b[item * b_per_item + j]); // wraps, as the CPU path
}

__device__ __forceinline__ void bnn_relu(bnn_i64 item, int j, const float *x, float *y, int count) {
    const bnn_i64 at = item * count + j;
    const float v = x[at];
    y[at] = v < 0.0f ? 0.0f : v; // NaN stays NaN
}

__device__ __forceinline__ void bnn_copy(bnn_i64 item, int j, const unsigned char *x, unsigned char *y,
                                         int bytes) {
    y[item * bytes + j] = x[item * bytes + j];
}

__device__ __forceinline__ void bnn_argmax(bnn_i64 item, int j, const float *x, bnn_i64 *y, int rows, int n) {
    const float *r = x + (item * rows + j) * (bnn_i64)n;
    int best = 0;
    for (int i = 1; i < n; ++i)
        if (r[i] > r[best]) best = i;
    y[item * rows + j] = best;
}

// from: 4 i32, 5 i8, 6 u8 (BlobDType); to f32, rounded to nearest.
__device__ __forceinline__ void bnn_cast(bnn_i64 item, int j, const void *x, float *y, int count, int from) {
    const bnn_i64 at = item * count + j;
    y[at] = from == 4 ? __int2float_rn(((const int *)x)[at])
            : from == 5 ? (float)((const signed char *)x)[at]
                        : (float)((const unsigned char *)x)[at];
}

// [cells][n] 32-bit elements (NHWC, what the bconv epilogue writes) to [n][cells] (NCHW).
__device__ __forceinline__ void bnn_transpose_sc(bnn_i64 item, int j, const unsigned *x, unsigned *y, int cells,
                                                 int n) {
    const int o = j / cells, cell = j % cells;
    y[item * cells * n + j] = x[item * cells * n + (bnn_i64)cell * n + o];
}

// One row j of rows x n: exp(x - max) / sum, summed in ascending order as the CPU path.
__device__ __forceinline__ void bnn_softmax(bnn_i64 item, int j, const float *x, float *y, int rows, int n) {
    const float *xr = x + (item * rows + j) * (bnn_i64)n;
    float *yr = y + (item * rows + j) * (bnn_i64)n;
    float m = -__int_as_float(0x7f800000), sum = 0.0f;
    for (int i = 0; i < n; ++i) m = xr[i] > m ? xr[i] : m;
    for (int i = 0; i < n; ++i) {
        yr[i] = expf(__fsub_rn(xr[i], m));
        sum = __fadd_rn(sum, yr[i]);
    }
    for (int i = 0; i < n; ++i) yr[i] = __fdiv_rn(yr[i], sum);
}

// QONNX rounding as rt_cpu.c's round_mode (ties decided on v - trunc(v)); mode as BlobRounding:
// 0 ROUND (half to even, rintf as the CPU's nearbyintf), 1 CEIL, 2 FLOOR, 3 ROUND_TO_ZERO, 4 UP,
// 5 HALF_UP, 6 HALF_DOWN.
__device__ __forceinline__ float bnn_round_mode(float v, int mode) {
    const float t = truncf(v), frac = fabsf(__fsub_rn(v, t)), away = v < 0 ? __fsub_rn(t, 1.0f) : __fadd_rn(t, 1.0f);
    switch (mode) {
    case 1: return ceilf(v);
    case 2: return floorf(v);
    case 3: return t;
    case 4: return v < 0 ? floorf(v) : ceilf(v);
    case 5: return frac >= 0.5f ? away : t;
    case 6: return frac > 0.5f ? away : t;
    default: return rintf(v);
    }
}

// The quantize step (rt_cpu.c run_quantize), one row of k floats per batch item:
// q = clamp(round(x / scale + zeropt), lo, hi). dequant: work item j is element j, written as
// the float (q - zeropt) * scale; else work item j is word j of the [bits][ld] bit-planes of the
// codes q - lo (every plane's word j, padding words zero), NaN as code 0.
__device__ __forceinline__ float bnn_quantize_one(const float *x, int k, float scale, float zeropt, int lo, int hi,
                                                  int rounding) {
    float q = bnn_round_mode(__fadd_rn(__fdiv_rn(x[k], scale), zeropt), rounding);
    q = q < (float)lo ? (float)lo : q > (float)hi ? (float)hi : q;
    return q;
}

__device__ __forceinline__ void bnn_quantize(bnn_i64 item, int j, const float *x, void *out, int k, int bits, int ld,
                                             int lo, int hi, int rounding, unsigned scale_bits,
                                             unsigned zeropt_bits, int dequant) {
    const float scale = __int_as_float((int)scale_bits), zeropt = __int_as_float((int)zeropt_bits);
    x += item * k;
    if (dequant) {
        const float q = bnn_quantize_one(x, j, scale, zeropt, lo, hi, rounding);
        ((float *)out)[item * k + j] = __fmul_rn(__fsub_rn(q, zeropt), scale);
        return;
    }
    unsigned *y = (unsigned *)out + item * bits * ld;
    unsigned word[24];
    for (int b = 0; b < bits; ++b) word[b] = 0u;
    for (int i = 0; i < 32; ++i) {
        const int kk = j * 32 + i;
        if (kk >= k) break;
        const float q = bnn_quantize_one(x, kk, scale, zeropt, lo, hi, rounding);
        const unsigned n = q != q ? 0u : (unsigned)(bnn_i64)__fsub_rn(q, (float)lo);
        for (int b = 0; b < bits; ++b) word[b] |= ((n >> b) & 1u) << i;
    }
    for (int b = 0; b < bits; ++b) y[(bnn_i64)b * ld + j] = word[b];
}

#endif // BNN_FLOAT_OPS_CU
