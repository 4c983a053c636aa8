// float_ops.cu: plain CUDA-core code for the plan steps that are not binary GEMMs or
// convolutions (pack, unpack, float dense/conv2d, affine, pools, add, relu, copy, argmax,
// cast, and the NHWC->NCHW transpose the GPU needs after an integer bconv). Each function
// computes work item j of batch item `item`, exactly as runtime/rt_cpu.c computes the same
// element: same loop order, every float operation rounded on its own (__fmul_rn /
// __fadd_rn, never contracted into an FMA), so the GPU matches the CPU path.
// The generated glue (codegen/cuda/emit.c) wraps one call per plan step in a __global__
// with the step's shapes as literals. The float conv2d and dense steps use the tiled
// kernels at the end of this file instead (a block per tile of outputs, the same float
// sequence per output). NVRTC has no <cstdint>: built-in types only.
#ifndef BNN_FLOAT_OPS_CU
#define BNN_FLOAT_OPS_CU
#ifndef BNN_PDL_ENTER // compiled without common.cu (a test's own program): launched plainly
#define BNN_PDL_ENTER() ((void)0)
#endif

typedef long long bnn_i64;

// A quantizer's float of its level q (a code + lo, or the clamped rounding): (q - zeropt) *
// scale, each operation rounded on its own, as blob.h blob_dequantize. The quantize step, the
// code pools, the global pool of codes and the qconv chain's f32 output all take it from here.
__device__ __forceinline__ float bnn_dequantize(float q, float scale, float zeropt) {
    return __fmul_rn(__fsub_rn(q, zeropt), scale);
}

// Bits LSB-first in 32-bit words; layout 0 reads x channel-major [C][S], 1 channel-minor [S][C].
// Work item j is word wi of pixel s: for layout 0 word-major (j = wi * spatial + s), so a
// warp's 32 lanes read 32 consecutive pixels of one channel at each of their 32 loads (one
// 128-byte line) and the padding words of wide rows are whole idle warps; pixel-major for
// layout 1, where a pixel's channels are contiguous. The 32 loads of a word are predicated,
// not cut off by a loop exit, so that all of them are in flight before the first compare (a
// loop that stops at the last channel issued them a few at a time: Bi-Real ResNet-18's pack
// added 6.9 us at batch 1, docs/perf.md stop 27).
__device__ __forceinline__ void bnn_pack(bnn_i64 item, int j, const float *x, unsigned *y, int channels,
                                         int spatial, int words, int zero, int layout) {
    x += item * channels * spatial;
    y += item * spatial * words;
    const int s = layout == 0 ? j % spatial : j / words, wi = layout == 0 ? j / spatial : j % words;
    float v[32];
#pragma unroll
    for (int b = 0; b < 32; ++b) {
        const int ch = wi * 32 + b;
        v[b] = ch >= channels ? -1.0f : layout == 0 ? x[(bnn_i64)ch * spatial + s] : x[(bnn_i64)s * channels + ch];
    }
    unsigned bits = 0;
#pragma unroll
    for (int b = 0; b < 32; ++b) // NaN packs as -1; channels past the last as -1 (0 bits)
        bits |= (unsigned)(v[b] > 0.0f || (v[b] == 0.0f && zero > 0)) << b;
    y[(bnn_i64)s * words + wi] = bits;
}

__device__ __forceinline__ void bnn_unpack(bnn_i64 item, int j, const unsigned *x, float *y, int channels,
                                           int spatial, int words, int layout) {
    x += item * spatial * words;
    y += item * channels * spatial;
    const int ch = layout == 0 ? j / spatial : j % channels, s = layout == 0 ? j % spatial : j / channels;
    y[j] = (x[(bnn_i64)s * words + ch / 32] >> (ch % 32)) & 1u ? 1.0f : -1.0f;
}

// The retile step (docs/blob-format.md): byte b of row r of `rows` bit rows stored with ld
// bytes a row, row-major (tr 0) or tile-major with compact last tile (tr 128 or 256).
__device__ __forceinline__ bnn_i64 bnn_row_byte(bnn_i64 r, bnn_i64 b, bnn_i64 rows, int tr, bnn_i64 ld) {
    if (tr == 0) return r * ld + b;
    const bnn_i64 t = r / tr, in = rows - t * tr < tr ? rows - t * tr : tr;
    return (t * tr * (ld / 16) + (b / 16) * in + r % tr) * 16 + b % 16;
}
// One output byte j of item `item` (rows rows of out_ld bytes); batch items in all. Bits
// past k are zeros.
__device__ __forceinline__ void bnn_retile(bnn_i64 item, int j, int batch, const unsigned char *x, unsigned char *y,
                                           int rows, bnn_i64 k, int in_tr, bnn_i64 in_ld, int out_tr, bnn_i64 out_ld) {
    const bnn_i64 m = (bnn_i64)batch * rows, r = item * rows + j / out_ld, b = j % out_ld;
    unsigned v = 0;
    if (b * 8 < k) {
        v = x[bnn_row_byte(r, b, m, in_tr, in_ld)];
        if (k - b * 8 < 8) v &= (1u << (k - b * 8)) - 1u;
    }
    y[bnn_row_byte(r, b, m, out_tr, out_ld)] = (unsigned char)v;
}

// The convolution when the tiled one does not apply (a non-finite weight, a huge kernel).
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

// One value of an affine step: v * scale[ch] + bias[ch] (v / scale[ch] with div), each
// operation rounded.
__device__ __forceinline__ float bnn_affine_value(float v, const float *scale, const float *bias, int ch, int div) {
    return __fadd_rn(div ? __fdiv_rn(v, scale[ch]) : __fmul_rn(v, scale[ch]), bias[ch]);
}
// y = x * scale[c] + bias[c] (div: x / scale[c] + bias[c]), in place allowed.
__device__ __forceinline__ void bnn_affine(bnn_i64 item, int j, const float *x, const float *scale,
                                           const float *bias, float *y, int channels, int spatial, int layout,
                                           int div) {
    const bnn_i64 at = item * channels * spatial + j;
    y[at] = bnn_affine_value(x[at], scale, bias, layout == 0 ? j / spatial : j % channels, div);
}

// Max or average pooling over NCHW f32, the divisor as the CPU path computes it. The window's
// taps in the reference's row-major order, a tap outside the image skipped; KH, KW constants so
// that (for windows of up to 64 taps) the loops unroll and every tap's load is issued before the
// first comparison waits on one (with runtime bounds a 3x3 max-pool's nine loads could go one
// after the other). Max: a NaN wins, and of +0 and -0 the first seen stays (v > acc), as the
// reference.
template <int KH, int KW>
__device__ __forceinline__ void bnn_pool(bnn_i64 item, int j, const float *x, float *y, int c, int h, int w,
                                         int sh, int sw, int pt, int pl, int pb, int pr, int oh, int ow,
                                         int include_pad, bool max) {
    x += item * c * h * w;
    y += item * c * oh * ow;
    const int ch = j / (oh * ow), oy = j / ow % oh, ox = j % ow;
    const int y0 = oy * sh - pt, x0 = ox * sw - pl, y1 = y0 + KH, x1 = x0 + KW;
    const int py1 = y1 < h + pb ? y1 : h + pb, px1 = x1 < w + pr ? x1 : w + pr;
    const int padded = (py1 - y0) * (px1 - x0);
    const int real = ((y1 < h ? y1 : h) - (y0 < 0 ? 0 : y0)) * ((x1 < w ? x1 : w) - (x0 < 0 ? 0 : x0));
    const float *xc = x + (bnn_i64)ch * h * w;
    float acc = max ? -__int_as_float(0x7f800000) : 0.0f;
#pragma unroll(KH * KW <= 64 ? KH : 1)
    for (int ky = 0; ky < KH; ++ky) {
        const int iy = y0 + ky;
#pragma unroll(KH * KW <= 64 ? KW : 1)
        for (int kx = 0; kx < KW; ++kx) {
            const int ix = x0 + kx;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w)
                continue;
            const float v = xc[(bnn_i64)iy * w + ix];
            if (!max)
                acc = __fadd_rn(acc, v);
            else if (v > acc || v != v) // a NaN wins, as in the reference
                acc = acc != acc ? acc : v;
        }
    }
    if (!max) acc = __fdiv_rn(acc, (float)(include_pad ? padded : real));
    y[j] = acc;
}

// Max-pool of NHWC-packed bits (maxpool with words > 0): thread j is output pixel j, all of its
// OUTW words: per channel word the OR of the window's real pixels (the max of +-1 values), the
// AND for the channels set in and_mask (null: none), 0 where a pixel of the window has its NaN
// flag (NANF: WORDS flag words after each pixel's WORDS words of bits); words past WORDS are zero
// (rt_cpu.c run_bit_pool). A tap's WORDS * (1 + NANF) words are one record, read by 16-byte
// loads where it is a multiple of 4 words, and the pixel's words are written the same way: a
// thread a word, the first form, left the pad words' threads (6 of 8 for 64 channels in 256-bit
// pixels) idle and read 4 bytes a load (XNOR ResNet-18's stem pool at batch 256: docs/perf.md
// stop 40). KH, KW constants, as bnn_pool's: every tap's loads are issued before the first OR
// waits on one (with loops bounded by the image, a 3x3 window's rows went one after the other).
template <int KH, int KW, int WORDS, int NANF, int OUTW>
__device__ __forceinline__ void bnn_bitpool(bnn_i64 item, int j, const unsigned *x, unsigned *y,
                                            const unsigned *and_mask, int h, int w, int sh, int sw, int pt, int pl,
                                            int oh, int ow) {
    constexpr int PXW = WORDS * (1 + NANF);
    static_assert(WORDS >= 1 && WORDS <= OUTW, "bnn_bitpool: words");
    x += item * h * w * PXW;
    y += (item * oh * ow + j) * OUTW;
    const int oy = j / ow, ox = j % ow, y0 = oy * sh - pt, x0 = ox * sw - pl;
    unsigned any[WORDS], all[WORDS], nans[WORDS];
#pragma unroll
    for (int i = 0; i < WORDS; ++i) any[i] = 0u, all[i] = ~0u, nans[i] = 0u;
#pragma unroll(KH * KW <= 64 ? KH : 1)
    for (int ky = 0; ky < KH; ++ky)
#pragma unroll(KH * KW <= 64 ? KW : 1)
        for (int kx = 0; kx < KW; ++kx) {
            const int iy = y0 + ky, ix = x0 + kx;
            if ((unsigned)iy >= (unsigned)h || (unsigned)ix >= (unsigned)w) continue;
            const unsigned *t = x + ((bnn_i64)iy * w + ix) * PXW;
            unsigned v[PXW];
            if constexpr (PXW % 4 == 0) {
#pragma unroll
                for (int i = 0; i < PXW; i += 4) {
                    const uint4 q = *(const uint4 *)(t + i);
                    v[i] = q.x, v[i + 1] = q.y, v[i + 2] = q.z, v[i + 3] = q.w;
                }
            } else {
#pragma unroll
                for (int i = 0; i < PXW; ++i) v[i] = t[i];
            }
#pragma unroll
            for (int i = 0; i < WORDS; ++i) {
                any[i] |= v[i];
                all[i] &= v[i];
                if (NANF) nans[i] |= v[NANF ? WORDS + i : i];
            }
        }
    unsigned o[OUTW];
#pragma unroll
    for (int i = 0; i < OUTW; ++i) {
        const int k = i < WORDS ? i : 0;
        const unsigned m = and_mask && i < WORDS ? and_mask[i] : 0u;
        o[i] = i < WORDS ? ((any[k] & ~m) | (all[k] & m)) & ~nans[k] : 0u;
    }
    if constexpr (OUTW % 4 == 0) {
#pragma unroll
        for (int i = 0; i < OUTW; i += 4) *(uint4 *)(y + i) = make_uint4(o[i], o[i + 1], o[i + 2], o[i + 3]);
    } else {
#pragma unroll
        for (int i = 0; i < OUTW; ++i) y[i] = o[i];
    }
}

// A max-pool of codes (a conv2d step's with levels: QP planes of `words` words a pixel, then the
// NaN flags; rt_cpu.c run_code_pool): work item j < S * words is word j / S of output pixel j % S
// (so a warp's float stores below are coalesced), up to `plane` the planes' tail words; the largest
// code of each of its 32 channels over the window's real pixels, plane by plane from the top: a
// pixel stays a candidate while its bits equal the maximum's so far. Written as image planes
// [QP][S][words] (`plane` words each), code 0 where the window holds a NaN; f (null: none), the
// quantizer's float of it, f32 [C][S]: ((code + lo) - zeropt) * scale, NaN there; nanf (null:
// none), the windows' NaN flags as one more such plane at item stride C * S words (the float's
// buffer, where a qconv reads the codes for the float: lower.c plan_rcode).
template <int KH, int KW, int QP>
__device__ __forceinline__ void bnn_codepool(bnn_i64 item, int j, const unsigned *x, unsigned *y, float *f,
                                             unsigned *nanf, int c,
                                             int words, int plane, int h, int w, int sh, int sw, int pt, int pl,
                                             int oh, int ow, int lo, unsigned scale_bits, unsigned zero_bits) {
    const int S = oh * ow, px_words = words * (QP + 1), wi = j / S, s = j % S, oy = s / ow, ox = s % ow;
    y += item * QP * plane;
    if (j >= S * words) { // work items S * words .. plane - 1: the planes' tail words, zero
#pragma unroll
        for (int q = 0; q < QP; ++q) y[q * plane + j] = 0u;
        return;
    }
    x += item * h * w * px_words + wi;
    const int y0 = oy * sh - pt, x0 = ox * sw - pl;
    unsigned v[KH * KW][QP], nans = 0, real = 0; // real: bit t where tap t lies inside the image
#pragma unroll
    for (int t = 0; t < KH * KW; ++t) {
        const int iy = y0 + t / KW, ix = x0 + t % KW;
        const bool in = (unsigned)iy < (unsigned)h && (unsigned)ix < (unsigned)w;
        const unsigned *p = x + (in ? (iy * w + ix) * px_words : 0);
#pragma unroll
        for (int q = 0; q < QP; ++q) v[t][q] = in ? p[q * words] : 0u;
        nans |= in ? p[QP * words] : 0u;
        real |= (unsigned)in << t;
    }
    unsigned best[QP], cand[KH * KW];
#pragma unroll
    for (int t = 0; t < KH * KW; ++t) cand[t] = real >> t & 1 ? ~0u : 0u;
#pragma unroll
    for (int q = QP - 1; q >= 0; --q) {
        unsigned any = 0;
#pragma unroll
        for (int t = 0; t < KH * KW; ++t) any |= cand[t] & v[t][q];
        best[q] = any & ~nans;
#pragma unroll
        for (int t = 0; t < KH * KW; ++t) cand[t] &= v[t][q] | ~any;
    }
    const int real_ch = c - wi * 32; // the word's channels past C stay 0
    const unsigned valid = real_ch >= 32 ? ~0u : real_ch > 0 ? (1u << real_ch) - 1u : 0u;
#pragma unroll
    for (int q = 0; q < QP; ++q) y[q * plane + s * words + wi] = best[q] & valid;
    if (nanf) nanf[item * c * S + s * words + wi] = nans & valid;
    if (!f) return;
    f += item * c * S;
    const float scale = __uint_as_float(scale_bits), zero = __uint_as_float(zero_bits);
    for (int b = 0; b < 32 && wi * 32 + b < c; ++b) {
        int code = 0;
#pragma unroll
        for (int q = 0; q < QP; ++q) code |= (int)(best[q] >> b & 1) << q;
        f[(bnn_i64)(wi * 32 + b) * S + s] =
            nans >> b & 1 ? __int_as_float(0x7fffffff) : bnn_dequantize((float)(code + lo), scale, zero);
    }
}

__device__ __forceinline__ void bnn_gap(bnn_i64 item, int j, const float *x, float *y, int channels, int spatial) {
    x += item * channels * spatial;
    float acc = 0.0f;
    for (int s = 0; s < spatial; ++s) acc = __fadd_rn(acc, x[(bnn_i64)j * spatial + s]);
    y[item * channels + j] = __fdiv_rn(acc, (float)spatial);
}

// The same over a dequantized value's codes (lower.c plan_rcode: the GPU writes no float for it):
// QP image planes of `plane` words an item, [spatial][ldw] words each, and where nanf is not null
// the NaN flags (one such plane at item stride channels * spatial words); element s of channel j
// is ((code + lo) - zeropt) * scale, NaN where flagged: the float the CPU path sums, in its order.
template <int QP>
__device__ __forceinline__ void bnn_gap_codes(bnn_i64 item, int j, const unsigned *x, const unsigned *nanf, float *y,
                                              int channels, int spatial, int ldw, int plane, int lo,
                                              unsigned scale_bits, unsigned zero_bits) {
    const float scale = __uint_as_float(scale_bits), zero = __uint_as_float(zero_bits);
    x += item * QP * plane + j / 32;
    if (nanf) nanf += item * channels * spatial + j / 32;
    float acc = 0.0f;
    for (int s = 0; s < spatial; ++s) {
        int code = 0;
#pragma unroll
        for (int q = 0; q < QP; ++q) code |= (int)(x[q * plane + s * ldw] >> (j % 32) & 1u) << q;
        const float v = nanf && (nanf[s * ldw] >> (j % 32) & 1u) ? __int_as_float(0x7fffffff)
                                                                  : bnn_dequantize((float)(code + lo), scale, zero);
        acc = __fadd_rn(acc, v);
    }
    y[item * channels + j] = __fdiv_rn(acc, (float)spatial);
}

// The same over b1 NHWC-packed words (words a pixel), bit 1 = +1, bit 0 = -1: the float sum of
// the +-1 values in order is the integer 2 * ones - spatial exactly (spatial < 2^24).
__device__ __forceinline__ void bnn_gap_bits(bnn_i64 item, int j, const unsigned *x, float *y, int channels,
                                             int spatial, int words) {
    x += item * spatial * words + j / 32;
    int ones = 0;
    for (int s = 0; s < spatial; ++s) ones += (x[(bnn_i64)s * words] >> (j % 32)) & 1u;
    y[item * channels + j] = __fdiv_rn((float)(2 * ones - spatial), (float)spatial);
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

// Element `at` of a cast step's input (from: 4 i32, 5 i8, 6 u8: BlobDType) as the f32 it
// becomes, rounded to nearest.
__device__ __forceinline__ float bnn_cast_value(const void *x, bnn_i64 at, int from) {
    return from == 4   ? __int2float_rn(((const int *)x)[at])
           : from == 5 ? (float)((const signed char *)x)[at]
                       : (float)((const unsigned char *)x)[at];
}
__device__ __forceinline__ void bnn_cast(bnn_i64 item, int j, const void *x, float *y, int count, int from) {
    const bnn_i64 at = item * count + j;
    y[at] = bnn_cast_value(x, at, from);
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

// QONNX rounding as blob.h's blob_round (ties decided on v - trunc(v)); mode as BlobRounding:
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

// x / scale: where scale is a power of two whose reciprocal is a normal float, x * (1 / scale)
// is the same float (the same real number, rounded once) without an IEEE division. The
// lowering passes scale as a literal, so the test and the reciprocal fold away.
__device__ __forceinline__ float bnn_div_scale(float x, float scale) {
    const unsigned b = __float_as_uint(scale), e = (b >> 23) & 255u;
    if ((b & 0x7fffffu) == 0 && e >= 1 && e <= 253)
        return __fmul_rn(x, __uint_as_float((b & 0x80000000u) | (254u - e) << 23));
    return __fdiv_rn(x, scale);
}

// The quantize step (rt_cpu.c run_quantize), one row of k floats per batch item:
// q = clamp(round(x / scale + zeropt), lo, hi). dequant: work item j is element j, written as
// the float (q - zeropt) * scale; else the [bits][ld] bit-planes of the codes q - lo (padding
// words zero), NaN as code 0, a warp `words` words: work item j (the lowering's count
// ld * 32 / words, so that a warp never straddles two items; words divides ld) is lane j % 32
// of words (j / 32) * words ... + words - 1, element word * 32 + lane of the row, and a word's
// bit of each plane is the warp's ballot. Several words a warp keep several loads in flight a
// thread (one float a thread left an H100 at 1.2 TB/s on 8192 x 8192 floats; a thread a word
// read 32 floats 128 bytes apart from its neighbours': 0.33 ms there, docs/perf.md).
__device__ __forceinline__ float bnn_quantize_one(const float *x, int k, float scale, float zeropt, int lo, int hi,
                                                  int rounding) {
    float q = bnn_round_mode(__fadd_rn(bnn_div_scale(x[k], scale), zeropt), rounding);
    q = q < (float)lo ? (float)lo : q > (float)hi ? (float)hi : q;
    return q;
}

// The dequantized value of element k: (q - zeropt) * scale, each operation rounded on its own.
__device__ __forceinline__ float bnn_dequant_one(const float *x, int k, float scale, float zeropt, int lo, int hi,
                                                 int rounding) {
    return bnn_dequantize(bnn_quantize_one(x, k, scale, zeropt, lo, hi, rounding), scale, zeropt);
}

template <int WORDS>
__device__ __forceinline__ void bnn_quantize(bnn_i64 item, int j, const float *x, void *out, int k, int bits, int ld,
                                             int lo, int hi, int rounding, unsigned scale_bits,
                                             unsigned zeropt_bits, int dequant) {
    const float scale = __int_as_float((int)scale_bits), zeropt = __int_as_float((int)zeropt_bits);
    x += item * k;
    if (dequant) {
        ((float *)out)[item * k + j] = bnn_dequant_one(x, j, scale, zeropt, lo, hi, rounding);
        return;
    }
    unsigned *y = (unsigned *)out + item * bits * ld;
    const int lane = j & 31, w0 = (j >> 5) * WORDS;
    unsigned n[WORDS]; // this lane's codes (0 past k: the padding)
#pragma unroll
    for (int r = 0; r < WORDS; ++r) {
        const int e = (w0 + r) * 32 + lane;
        n[r] = 0u;
        if (e < k) {
            const float q = bnn_quantize_one(x, e, scale, zeropt, lo, hi, rounding);
            n[r] = q != q ? 0u : (unsigned)(bnn_i64)__fsub_rn(q, (float)lo);
        }
    }
#pragma unroll
    for (int r = 0; r < WORDS; ++r)
        for (int b = 0; b < bits; ++b) {
            const unsigned word = __ballot_sync(0xffffffffu, (n[r] >> b) & 1u);
            if (lane == b % 32) y[(bnn_i64)b * ld + w0 + r] = word;
        }
}

// quantize to int8 codes (the int8 qgemm's A, qgemm_s8.cu): a byte a level index n = q - lo,
// [ld] bytes per item (ld a multiple of 64), zero past k; thread j makes bytes 4j..4j+3.
__device__ __forceinline__ void bnn_quantize_bytes(bnn_i64 item, int j, const float *x, unsigned *out, int k, int ld,
                                                   int lo, int hi, int rounding, unsigned scale_bits,
                                                   unsigned zeropt_bits) {
    const float scale = __int_as_float((int)scale_bits), zeropt = __int_as_float((int)zeropt_bits);
    x += item * k;
    unsigned word = 0u;
    for (int i = 0; i < 4 && 4 * j + i < k; ++i) {
        const float q = bnn_quantize_one(x, 4 * j + i, scale, zeropt, lo, hi, rounding);
        word |= (q != q ? 0u : (unsigned)(bnn_i64)__fsub_rn(q, (float)lo)) << (8 * i);
    }
    out[item * (ld / 4) + j] = word;
}

// quantize of an NCHW item (C channels x S pixels) into image planes, `plane` words each ([S][ld]
// then zero words: the qconv operand, channel c of pixel s at bit c%32 of word c/32): thread j
// makes word j of every plane (word j%ld of pixel j/ld, or a tail word).
__device__ __forceinline__ void bnn_quantize_image(bnn_i64 item, int j, const float *x, unsigned *out, int C, int S,
                                                   int bits, int ld, int plane, int lo, int hi, int rounding,
                                                   unsigned scale_bits, unsigned zeropt_bits) {
    const float scale = __int_as_float((int)scale_bits), zeropt = __int_as_float((int)zeropt_bits);
    const int s = j / ld, wi = j % ld;
    x += item * C * S;
    unsigned word[24];
    for (int b = 0; b < bits; ++b) word[b] = 0u;
    const int nc = s < S ? (C - wi * 32 < 32 ? C - wi * 32 : 32) : 0; // the word's channels
    float v[32]; // every load issued before the first is used (as bnn_pack)
#pragma unroll
    for (int i = 0; i < 32; ++i) v[i] = i < nc ? x[(bnn_i64)(wi * 32 + i) * S + s] : 0.0f;
#pragma unroll
    for (int i = 0; i < 32; ++i) {
        if (i >= nc) break;
        const float q = bnn_quantize_one(v + i, 0, scale, zeropt, lo, hi, rounding);
        const unsigned n = q != q ? 0u : (unsigned)(bnn_i64)__fsub_rn(q, (float)lo);
        for (int b = 0; b < bits; ++b) word[b] |= ((n >> b) & 1u) << i;
    }
    unsigned *y = out + item * bits * plane;
    for (int b = 0; b < bits; ++b) y[(bnn_i64)b * plane + j] = word[b];
}

// The dequantized values (q - zeropt) * scale of 4 consecutive elements 4j..4j+3 of an item of k
// (k % 4 == 0; lower.c uses it for a quant step with dequant where it holds), one 16-byte load
// and store: bnn_quantize's dequant form, a thread an element, left a w1a2 ResNet-18's 205 MB
// quant after its max-pool at 0.157 ms at batch 256 (H200), neither its loads nor its
// instructions near their limits.
__device__ __forceinline__ void bnn_dequantize4(bnn_i64 item, int j, const float *x, float *out, int k, int lo, int hi,
                                                int rounding, unsigned scale_bits, unsigned zeropt_bits) {
    const float scale = __int_as_float((int)scale_bits), zeropt = __int_as_float((int)zeropt_bits);
    const float4 v = ((const float4 *)(x + item * k))[j];
    const float e[4] = {v.x, v.y, v.z, v.w};
    float d[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) d[i] = bnn_dequant_one(e, i, scale, zeropt, lo, hi, rounding);
    ((float4 *)(out + item * k))[j] = make_float4(d[0], d[1], d[2], d[3]);
}

// ---------------------------------------------------------------- tiled float conv2d and dense
// The fast forms of the conv2d and dense steps (docs/kernels.md "Float kernels"): a block
// computes a tile of outputs from operands staged in shared memory, each thread several
// outputs in registers. Every output still sums its products one after the other in the
// reference order (c, kh, kw for a convolution, k for a dense row), each product and each sum
// rounded on its own: the tiling changes which thread and when, never the sequence of float
// operations of an output. A zero staged where the reference skips a tap (padding, channels
// or K past their end) adds a product of +-0, which leaves any sum the reference can hold
// unchanged: the running sum starts at +0 and a round-to-nearest sum is -0 only when both
// operands are, so it is never -0, and s + (+-0) == s for every other s, NaN and inf
// included. That needs the weight of a padded tap to be finite (0 * inf is NaN): the lowering
// uses these kernels only for finite weights. The generated glue defines a config struct
// (static constexpr ints named as below) and calls the template from a __global__.

// 4-byte global->shared copy; ok = false writes a zero and reads nothing.
__device__ __forceinline__ void bnn_cp4(float *dst, const float *src, bool ok) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
                 "l"(src), "r"(ok ? 4u : 0u)
                 : "memory");
}

// A float chain's stages on v: v*a[s] + b[s] (v/a[s] + b[s] where bit s of DIVM), then a relu
// where bit s of RELUM, each operation rounded on its own (blob.h blob_conv2d_chain_value).
template <int ST, int DIVM, int RELUM>
__device__ __forceinline__ float bnn_chain_stages(float v, const float *a, const float *b) {
#pragma unroll
    for (int s = 0; s < ST; ++s) {
        v = __fadd_rn((DIVM >> s) & 1 ? __fdiv_rn(v, a[s]) : __fmul_rn(v, a[s]), b[s]);
        if ((RELUM >> s) & 1) v = v < 0.0f ? 0.0f : v; // NaN stays NaN, as bnn_relu
    }
    return v;
}

// Convolution, NCHW. F: C, H, W, O, KH, KW, SH, SW, PT, PL, DH, DW, G, OH, OW (the step's
// shape), BIAS, RELU (a fused relu: v < 0 ? 0 : v after the bias), ST, DIVM, RELUM (a fused
// float chain of ST stages, constants chain[ST][2][O]: v*a + b, v/a + b where bit s of DIVM, a
// relu after where bit s of RELUM, each operation rounded as the separate affine and relu
// steps round it; blob.h blob_conv2d_chain_value), SMEM (the dynamic shared
// memory the launch gives, checked below), and the tile: a block computes BO output
// channels of one group x a BH x BW pixel tile of one image; a thread TO
// consecutive channels x TP pixels, pixel p = tp + k * NTP of the tile's row-major pixels
// (NTP = BH*BW/TP = 32: a warp reads 32 neighbouring pixels, one weight for all lanes).
// Input channels come in chunks of CC (two stages when there are several chunks): the
// patch of each channel, (BH-1)*SH + (KH-1)*DH + 1 rows, its columns split by phase (column
// % SW) so that strided taps read consecutive words, PCW words per phase row (padded by the
// lowering against bank conflicts); the weights as rows [c][kh][kw] of BO (+ 4: WLD).
// grid.x = batch * tiles, or with MANY fewer: a block takes tiles blockIdx.x, + gridDim.x, ...
// (below). FLAT (a 1x1 conv with one group, H = OH = 1, W = OW the image's pixels): the tiles
// run over the batch's pixels, q = item * W + pixel, so one may hold the end of an image and
// the start of the next; tile t is channel tile t % OT of pixels (t / OT) * BW..., grid.x at
// least OT * ceil(batch * W / BW) (lower.c launches OT more at most). The first stage's
// weights (constants) are requested before the wait for the kernels before (BNN_PDL_ENTER),
// the patch after.
template <class F> struct BnnConvTile {
    static constexpr int CG = F::C / F::G, OG = F::O / F::G, KK = F::KH * F::KW;
    static constexpr int PR = (F::BH - 1) * F::SH + (F::KH - 1) * F::DH + 1;
    static constexpr int PC = (F::BW - 1) * F::SW + (F::KW - 1) * F::DW + 1;
    static constexpr int RS = F::SH * F::SW * F::PCW; // words between two output rows
    // With float4 weight reads (TO = 8, BO a multiple of 8) a weight row holds BO + 4 words:
    // the loader's warps write 8 rows x 4 channels, 4 * odd words apart: 32 distinct banks.
    static constexpr bool V4 = F::TO % 4 == 0;
    static constexpr int WLD = V4 ? F::BO + 4 : F::BO;
    static constexpr int XS = (F::CC * PR * F::SW * F::PCW + 3) / 4 * 4, WS = F::CC * KK * WLD;
    static constexpr int STAGE = XS + WS, NTP = F::BH * F::BW / F::TP, NT = F::BO / F::TO * NTP;
    static constexpr int OT = (OG + F::BO - 1) / F::BO, RT = (F::OH + F::BH - 1) / F::BH;
    static constexpr int CT = (F::OW + F::BW - 1) / F::BW, TILES = F::G * OT * RT * CT;
    static constexpr int NCH = (CG + F::CC - 1) / F::CC, R = F::CC * KK; // weight rows a stage
    static_assert(F::BH * F::BW % F::TP == 0 && F::BO % F::TO == 0 && F::PCW * F::SW >= PC, "bad tile");
    // MANY: a block may take several tiles, which share its weights (one stage, one channel
    // tile), with two patch buffers
    static_assert(!F::MANY || (NCH == 1 && F::G == 1 && OT == 1), "MANY");
    static_assert(!F::FLAT || (!F::MANY && F::G == 1 && F::H == 1 && F::OH == 1 && KK == 1 && F::SW == 1 &&
                                 F::PL == 0 && F::W == F::OW && F::PCW == F::BW), "FLAT");
    // FLAT with 16-byte copies of 4 pixels: an image's rows start at multiples of 4 floats
    static constexpr bool V16 = F::FLAT && F::W % 4 == 0 && F::BW % 4 == 0;
    static_assert((F::MANY ? 2 * XS + WS : (NCH > 1 ? 2 : 1) * STAGE) * 4 == F::SMEM,
                  "the launch's shared memory (lower.c) differs");
};

template <class F>
__device__ __forceinline__ void bnn_conv2d_tile(int batch, const float *x, const float *w, const float *b, float *y,
                                                const float *chain) {
    typedef BnnConvTile<F> T;
    extern __shared__ __align__(128) unsigned char bnn_dsmem[];
    float *const smem = (float *)bnn_dsmem;
    const int tid = threadIdx.x, tp = tid % T::NTP, to = tid / T::NTP;
    // Tile t of the batch's: its item, group, first output channel (within the group) and pixel.
    struct Tile {
        bnn_i64 item;
        int g, oc0, oy0, ox0;
    };
    const bnn_i64 nq = (bnn_i64)batch * F::W; // FLAT: the batch's pixels
    auto tile_of = [&](bnn_i64 t) {
        Tile tl;
        if (F::FLAT) { // item 0, ox0 the first of the batch's pixels q
            tl.item = 0, tl.g = 0, tl.oy0 = 0;
            tl.oc0 = (int)(t % T::OT) * F::BO, tl.ox0 = (int)(t / T::OT) * F::BW;
            return tl;
        }
        tl.item = t / T::TILES;
        const int u = (int)(t % T::TILES), ct = u % T::CT, rt = u / T::CT % T::RT;
        tl.oc0 = u / (T::CT * T::RT) % T::OT * F::BO, tl.g = u / (T::CT * T::RT * T::OT);
        tl.oy0 = rt * F::BH, tl.ox0 = ct * F::BW;
        return tl;
    };
    // The patch of input channels c0.. of tile tl into xs.
    auto load_x = [&](float *xs, const Tile &tl, int c0) {
        if (F::FLAT) {
            // The tile's BW pixels q = ox0.. of the batch's, V at a time (4 where W % 4 == 0: one
            // 16-byte copy, as a group then never straddles two images): a thread keeps its
            // group g and finds its item once, then steps through the channels (their rows W
            // floats apart). (A copy a float, each with its item's division, was 20 % of the
            // 1x1 convs' instructions.)
            constexpr int V = T::V16 ? 4 : 1, NG = F::BW / V, TPG = T::NT >= NG ? T::NT / NG : 1;
            static_assert(T::NT % NG == 0 || NG % T::NT == 0, "FLAT: column groups");
            for (int g = T::NT >= NG ? tid % NG : tid; g < NG; g += T::NT) {
                const bnn_i64 q = (bnn_i64)tl.ox0 + g * V, n = q / F::W;
                const bool okq = q < nq;
                const float *src = x + (n * F::C + c0) * F::W + (q - n * F::W);
                for (int c = T::NT >= NG ? tid / NG : 0; c < F::CC; c += TPG) {
                    const bool ok = okq && c0 + c < T::CG;
                    float *const dst = xs + c * F::PCW + g * V;
                    if (V == 4)
                        bnn_cp16(bnn_smem(dst), ok ? src + (bnn_i64)c * F::W : x, ok ? 16u : 0u);
                    else
                        bnn_cp4(dst, ok ? src + (bnn_i64)c * F::W : x, ok);
                }
            }
            return;
        }
        const float *xi = x + (tl.item * F::C + tl.g * T::CG) * F::H * F::W;
        const int iy0 = tl.oy0 * F::SH - F::PT, ix0 = tl.ox0 * F::SW - F::PL;
        for (int i = tid; i < F::CC * T::PR * T::PC; i += T::NT) {
            const int c = i / (T::PR * T::PC), r = i / T::PC % T::PR, col = i % T::PC;
            const int iy = iy0 + r, ix = ix0 + col;
            const bool ok = c0 + c < T::CG && iy >= 0 && iy < F::H && ix >= 0 && ix < F::W;
            bnn_cp4(xs + ((c * T::PR + r) * F::SW + col % F::SW) * F::PCW + col / F::SW,
                    ok ? xi + ((bnn_i64)(c0 + c) * F::H + iy) * F::W + ix : xi, ok);
        }
    };
    // The weights of tile tl's output channels for input channels c0.. into ws.
    auto load_w = [&](float *ws, const Tile &tl, int c0) {
        const float *wg = w + (bnn_i64)(tl.g * T::OG + tl.oc0) * T::CG * T::KK;
        constexpr int RB = (T::R + 7) / 8, U = 32 * RB; // V4: a warp's 8 rows x 4 channels, RB of them
        if (T::V4 && (T::NT % U == 0 || U % T::NT == 0)) {
            // The same, with a thread's rows (u) fixed and its channel groups (og) stepped: the
            // addresses of its copies differ by constants. (Each copy's indices computed from a
            // running i took about 6 % of a 1x1 conv's instructions, 10 % of its stall samples.)
            for (int u = T::NT >= U ? tid % U : tid; u < U; u += T::NT) {
                const int r = u / 32 * 8 + u / 4 % 8;
                if (r >= T::R) continue;
                const bool okr = c0 + r / T::KK < T::CG;
                const float *const src = wg + ((bnn_i64)(u % 4) * T::CG + c0) * T::KK + r;
                for (int og = T::NT >= U ? tid / U : 0; og < F::BO / 4; og += T::NT >= U ? T::NT / U : 1) {
                    const bool ok = okr && tl.oc0 + og * 4 + u % 4 < T::OG;
                    bnn_cp4(ws + r * T::WLD + og * 4 + u % 4, ok ? src + (bnn_i64)og * 4 * T::CG * T::KK : wg, ok);
                }
            }
        } else if (T::V4) { // a warp: 4 channels x 8 consecutive rows (c*KK + tap: contiguous in w)
            for (int i = tid; i < F::BO / 4 * RB * 32; i += T::NT) {
                const int ol = i / (32 * RB) * 4 + i % 4, r = i / 32 % RB * 8 + i / 4 % 8;
                if (r >= T::R) continue;
                const bool ok = tl.oc0 + ol < T::OG && c0 + r / T::KK < T::CG;
                bnn_cp4(ws + r * T::WLD + ol, ok ? wg + ((bnn_i64)ol * T::CG + c0) * T::KK + r : wg, ok);
            }
        } else {
            for (int i = tid; i < F::BO * T::R; i += T::NT) { // global order [o][c][tap]
                const int ol = i / T::R, r = i % T::R;
                const bool ok = tl.oc0 + ol < T::OG && c0 + r / T::KK < T::CG;
                bnn_cp4(ws + r * F::BO + ol, ok ? wg + ((bnn_i64)ol * T::CG + c0) * T::KK + r : wg, ok);
            }
        }
    };

    int poff[F::TP]; // each pixel's word in a channel's patch, tap (0, 0)
#pragma unroll
    for (int k = 0; k < F::TP; ++k) {
        const int p = tp + k * T::NTP;
        poff[k] = p / F::BW * T::RS + p % F::BW;
    }
    float acc[F::TO][F::TP];
    // The products of one stage's CC channels, added to acc in the reference's order.
    auto compute = [&](const float *xs, const float *ws) {
#pragma unroll(T::KK == 1 ? 4 : 1) // a 1x1 conv: one tap per channel
        for (int c = 0; c < F::CC; ++c)
#pragma unroll 1
            for (int ky = 0; ky < F::KH; ++ky) {
                const float *xr = xs + (c * T::PR + ky * F::DH) * F::SW * F::PCW;
                const float *wr = ws + (c * T::KK + ky * F::KW) * T::WLD + to * F::TO;
#pragma unroll
                for (int kx = 0; kx < F::KW; ++kx) {
                    const float *xt = xr + (kx * F::DW) % F::SW * F::PCW + (kx * F::DW) / F::SW;
                    float wv[F::TO], xv[F::TP];
                    if (T::V4) {
#pragma unroll
                        for (int o = 0; o < F::TO; o += 4) {
                            const float4 q = *(const float4 *)(wr + kx * T::WLD + o);
                            wv[o] = q.x, wv[o + 1] = q.y, wv[o + 2] = q.z, wv[o + 3] = q.w;
                        }
                    } else {
#pragma unroll
                        for (int o = 0; o < F::TO; ++o) wv[o] = wr[kx * T::WLD + o];
                    }
#pragma unroll
                    for (int k = 0; k < F::TP; ++k) xv[k] = xt[poff[k]];
#pragma unroll
                    for (int o = 0; o < F::TO; ++o)
#pragma unroll
                        for (int k = 0; k < F::TP; ++k) acc[o][k] = __fadd_rn(acc[o][k], __fmul_rn(xv[k], wv[o]));
                }
            }
    };
    auto store = [&](const Tile &tl) {
        // Each pixel's place in y past its channel's offset, -1 outside the output: once a tile,
        // not an output (FLAT: its item from a division)
        bnn_i64 pix[F::TP];
#pragma unroll
        for (int k = 0; k < F::TP; ++k) {
            const int p = tp + k * T::NTP;
            if (F::FLAT) {
                const bnn_i64 q = (bnn_i64)tl.ox0 + p, n = q / F::OW;
                pix[k] = q < nq ? n * F::O * F::OW + (q - n * F::OW) : -1;
            } else {
                const int oy = tl.oy0 + p / F::BW, ox = tl.ox0 + p % F::BW;
                pix[k] = oy < F::OH && ox < F::OW ? tl.item * F::O * F::OH * F::OW + oy * F::OW + ox : -1;
            }
        }
#pragma unroll
        for (int o = 0; o < F::TO; ++o) {
            const int oc = tl.oc0 + to * F::TO + o;
            if (oc >= T::OG) break;
            const int oo = tl.g * T::OG + oc;
            float *yo = y + (bnn_i64)oo * F::OH * F::OW;
            // this channel's bias and chain constants, read once (y might alias them for the compiler)
            const float bo = F::BIAS ? b[oo] : 0.0f;
            float ca[F::ST > 0 ? F::ST : 1], cb[F::ST > 0 ? F::ST : 1];
#pragma unroll
            for (int s = 0; s < F::ST; ++s) ca[s] = chain[2 * s * F::O + oo], cb[s] = chain[(2 * s + 1) * F::O + oo];
#pragma unroll
            for (int k = 0; k < F::TP; ++k) {
                if (pix[k] < 0) continue;
                float v = F::BIAS ? __fadd_rn(bo, acc[o][k]) : acc[o][k];
                if (F::RELU) v = v < 0.0f ? 0.0f : v; // NaN stays NaN, as bnn_relu
                yo[pix[k]] = bnn_chain_stages<F::ST, F::DIVM, F::RELUM>(v, ca, cb);
            }
        }
    };
    auto zero = [&] {
#pragma unroll
        for (int o = 0; o < F::TO; ++o)
#pragma unroll
            for (int k = 0; k < F::TP; ++k) acc[o][k] = 0.0f;
    };

    const bnn_i64 tiles = F::FLAT ? T::OT * ((nq + F::BW - 1) / F::BW) : (bnn_i64)batch * T::TILES;
    bnn_i64 t = blockIdx.x;
    if (t >= tiles) return;
    Tile tl = tile_of(t);
    zero();
    if (!F::MANY) { // one tile a block; input channels in NCH chunks through two stages
        if ((bnn_i64)gridDim.x < tiles) __trap(); // a grid of fewer blocks needs MANY
        load_w(smem + T::XS, tl, 0); // constants: requested before the wait for the steps before
        BNN_PDL_ENTER();
        load_x(smem, tl, 0);
        bnn_cp_commit();
        for (int ch = 0; ch < T::NCH; ++ch) {
            if (ch + 1 < T::NCH) {
                float *next = smem + ((ch + 1) & 1) * T::STAGE;
                load_x(next, tl, (ch + 1) * F::CC);
                load_w(next + T::XS, tl, (ch + 1) * F::CC);
                bnn_cp_commit();
                bnn_cp_wait<1>();
            } else {
                bnn_cp_wait<0>();
            }
            __syncthreads();
            const float *xs = smem + (ch & 1) * T::STAGE;
            compute(xs, xs + T::XS);
            __syncthreads();
        }
        store(tl);
        return;
    }
    // MANY (one stage, one channel tile): tiles blockIdx.x, + gridDim.x, ... (one where the grid
    // has a block a tile); the weights loaded once, the next tile's patch into the other of two
    // patch buffers while this one's products run. The lowering launches the same kernel with
    // both grids (a batch alternative of fewer blocks: the same kernel, shared).
    float *const ws = smem + T::XS, *const xb1 = smem + T::XS + T::WS;
    load_w(ws, tl, 0);
    BNN_PDL_ENTER();
    load_x(smem, tl, 0);
    bnn_cp_commit();
    for (int k = 0;; ++k) {
        const bnn_i64 tn = t + gridDim.x;
        const Tile nx = tile_of(tn < tiles ? tn : t);
        if (tn < tiles) load_x(k & 1 ? smem : xb1, nx, 0);
        bnn_cp_commit();
        bnn_cp_wait<1>(); // this tile's patch (and the first time the weights)
        __syncthreads();
        compute(k & 1 ? xb1 : smem, ws);
        store(tl);
        if (tn >= tiles) return;
        __syncthreads(); // every thread is done with this patch before the one after next lands there
        t = tn, tl = nx;
        zero();
    }
}

constexpr int bnn_bits_of(int v) { return v ? 1 + bnn_bits_of(v >> 1) : 0; } // bits of v >= 0

// Dense, y[m][n] = bias[n] + sum_k x[m][k] * w[n][k] over the M = batch * rows rows. F: N, K,
// BIAS, SMEM, the tile: a block computes BM rows x BN outputs with NT threads, thread (tn = tid %
// BN, tm = tid / BN) the TM rows tm*TM.. of output column tn; K in chunks of KC through S
// cp.async stages, x as [BM][KC+1] and w as [BN][KC+1] (the odd stride keeps a warp's 32
// reads of one k in distinct banks). grid.x = ceil(M / BM), grid.y = ceil(N / BN). The
// weights are constants, so a block requests its first S - 1 chunks of them before it waits
// for the kernels before it (BNN_PDL_ENTER), the activations after.
//
// GS > 0 (lower.c fuse_gap_dense: a global average pool of bits, then this layer): x is b1
// NHWC-packed, GS pixels of GW words an item, and x[m][k] is the pool's value of channel k,
// (2 * ones - GS) / GS as bnn_gap_bits computes it. The block copies its items' bits to
// shared memory and pools them there (bnn_pool_bit_rows) into rows [BM][XLD], zeros past K;
// only W goes through the stages. One kernel instead of two launches, the pooled floats never
// leave the SM.
template <class F> struct BnnDenseTile {
    // V4 (K % 4 == 0, no pool): rows of KC + 4 floats, 16-byte aligned, copied and read 4 k at a
    // time; else KC + 1 (an odd stride: a warp's 32 reads of one k in distinct banks).
    static constexpr int LD = F::V4 ? F::KC + 4 : F::KC + 1, NKC = (F::K + F::KC - 1) / F::KC;
    static_assert(!F::V4 || (F::K % 4 == 0 && F::KC % 4 == 0 && !F::GS), "V4: 16-byte chunks of k, no pool");
    static constexpr int XROWS = F::GS ? 0 : F::BM, STAGE = (XROWS + F::BN) * LD;
    static constexpr int XLD = NKC * F::KC + 1, XP = F::GS ? F::BM * XLD : 0, BITS = F::GS * F::GW * F::BM;
    static constexpr int POOL = F::GS ? BITS + F::GS + 1 : 0; // the bits, then bnn_pool_values' table
    static_assert(F::NT % F::BN == 0 && F::NT / F::BN * F::TM == F::BM, "bad tile");
    static_assert(!F::GS || F::GW * 32 >= F::K, "pooled channels past the bits");
    static_assert((F::S * STAGE + XP + POOL) * 4 == F::SMEM, "the launch's shared memory (lower.c) differs");
};

// The pool's value for each count of ones, 0..GS, into tab: GS + 1 divisions a block instead
// of one a channel.
template <class F> __device__ __forceinline__ void bnn_pool_values(float *tab) {
    for (int i = threadIdx.x; i <= F::GS; i += F::NT) tab[i] = __fdiv_rn((float)(2 * i - F::GS), (float)F::GS);
}

// The pooled rows of a dense kernel with GS > 0 (bnn_dense_tile, bnn_dense_few): from the
// bits of `rows` items in shared memory ([rows][GS][GW] words), xp[r][k] for k < xld - 1 (row
// stride xld) = (2 * ones - GS) / GS of channel k (bnn_gap_bits' value), 0 past K and in the
// rows past `rows` (F::BM of them); tab[ones] holds that value for each count 0..GS (the
// caller's bnn_pool_values, behind a barrier). Few rows (batch 1): a thread counts 4 channels
// of a word over the pixels, 4 independent sums; more: a thread a word, its 32 channels at once
// in NPL bit-sliced counters (an add of a pixel's word is 2 * NPL logic operations).
template <class F>
__device__ __forceinline__ void bnn_pool_bit_rows(const unsigned *bits, const float *tab, int rows, float *xp,
                                                  int xld) {
    constexpr int NPL = bnn_bits_of(F::GS) + !F::GS; // counter planes: GS < 2^NPL (1 unused without GS)
    auto put = [&](int r, int k, int ones) {
        if (k < xld - 1)
            xp[r * xld + k] = k < F::K && r < rows ? tab[ones] : 0.0f;
    };
    if (rows * F::GW * 8 <= F::NT) {
        for (int i = threadIdx.x; i < F::BM * F::GW * 8; i += F::NT) {
            const int r = i / (F::GW * 8), j = i / 8 % F::GW, g = i % 8;
            int c[4] = {0, 0, 0, 0};
            if (r < rows)
                for (int s = 0; s < F::GS; ++s) {
                    const unsigned v = bits[(r * F::GS + s) * F::GW + j] >> (4 * g);
#pragma unroll
                    for (int t = 0; t < 4; ++t) c[t] += (v >> t) & 1u;
                }
#pragma unroll
            for (int t = 0; t < 4; ++t) put(r, j * 32 + 4 * g + t, c[t]);
        }
    } else {
        for (int i = threadIdx.x; i < F::BM * F::GW; i += F::NT) {
            const int r = i / F::GW, j = i % F::GW;
            unsigned p[NPL];
#pragma unroll
            for (int l = 0; l < NPL; ++l) p[l] = 0u;
            if (r < rows)
                for (int s = 0; s < F::GS; ++s) {
                    unsigned c = bits[(r * F::GS + s) * F::GW + j];
#pragma unroll
                    for (int l = 0; l < NPL; ++l) { // add c's bits to the counters
                        const unsigned carry = p[l] & c;
                        p[l] ^= c;
                        c = carry;
                    }
                }
            for (int bb = 0; bb < 32; ++bb) {
                int ones = 0;
#pragma unroll
                for (int l = 0; l < NPL; ++l) ones |= (int)((p[l] >> bb) & 1u) << l;
                put(r, j * 32 + bb, ones);
            }
        }
    }
    for (int i = threadIdx.x; i < F::BM * (xld - 1 - F::GW * 32); i += F::NT) // past the bits' channels
        xp[i / (xld - 1 - F::GW * 32) * xld + F::GW * 32 + i % (xld - 1 - F::GW * 32)] = 0.0f;
}

template <class F>
__device__ __forceinline__ void bnn_dense_tile(int m_total, const void *xv, const float *w, const float *b, float *y) {
    typedef BnnDenseTile<F> T;
    extern __shared__ __align__(128) unsigned char bnn_dsmem[];
    float *const smem = (float *)bnn_dsmem, *const xp = smem + F::S * T::STAGE;
    unsigned *const bits = (unsigned *)(xp + T::XP);
    const float *const x = (const float *)xv;
    const int m0 = blockIdx.x * F::BM, n0 = blockIdx.y * F::BN, tid = threadIdx.x;
    const int tn = tid % F::BN, tm = tid / F::BN;

    // V4: x's rows are 16-byte aligned where x is (the arena's are; a caller's need not be)
    const bool x16 = F::V4 && ((unsigned long long)xv & 15) == 0;
    auto load_w = [&](int stage, int k0) {
        float *ws = smem + stage * T::STAGE + T::XROWS * T::LD;
        if constexpr (F::V4 != 0) { // 16-byte chunks (w is 64-byte aligned in the blob): in or out of K whole
            for (int i = tid; i < F::BN * F::KC / 4; i += F::NT) {
                const int r = i / (F::KC / 4), kk = i % (F::KC / 4) * 4;
                const bool ok = n0 + r < F::N && k0 + kk < F::K;
                bnn_cp16(bnn_smem(ws + r * T::LD + kk), ok ? w + (bnn_i64)(n0 + r) * F::K + k0 + kk : w, ok ? 16 : 0);
            }
        } else {
            for (int i = tid; i < F::BN * F::KC; i += F::NT) {
                const int r = i / F::KC, kk = i % F::KC;
                const bool ok = n0 + r < F::N && k0 + kk < F::K;
                bnn_cp4(ws + r * T::LD + kk, ok ? w + (bnn_i64)(n0 + r) * F::K + k0 + kk : w, ok);
            }
        }
    };
    auto load_x = [&](int stage, int k0) {
        float *xs = smem + stage * T::STAGE;
        if (x16) {
            for (int i = tid; i < T::XROWS * F::KC / 4; i += F::NT) {
                const int r = i / (F::KC / 4), kk = i % (F::KC / 4) * 4;
                const bool ok = m0 + r < m_total && k0 + kk < F::K;
                bnn_cp16(bnn_smem(xs + r * T::LD + kk), ok ? x + (bnn_i64)(m0 + r) * F::K + k0 + kk : x, ok ? 16 : 0);
            }
        } else {
            for (int i = tid; i < T::XROWS * F::KC; i += F::NT) {
                const int r = i / F::KC, kk = i % F::KC;
                const bool ok = m0 + r < m_total && k0 + kk < F::K;
                bnn_cp4(xs + r * T::LD + kk, ok ? x + (bnn_i64)(m0 + r) * F::K + k0 + kk : x, ok);
            }
        }
    };

    float acc[F::TM];
#pragma unroll
    for (int i = 0; i < F::TM; ++i) acc[i] = 0.0f;
#pragma unroll
    for (int s = 0; s < F::S - 1; ++s) { // prologue: S - 1 chunks of W in flight, one group each
        if (s < T::NKC) load_w(s, s * F::KC);
        bnn_cp_commit();
    }
    BNN_PDL_ENTER();
#pragma unroll
    for (int s = 0; s < F::S - 1; ++s) { // then their x, one group each (empty with GS)
        if (s < T::NKC) load_x(s, s * F::KC);
        bnn_cp_commit();
    }
    if constexpr (F::GS != 0) { // the block's items' bits, then their pooled rows
        const int rows = m_total - m0 < F::BM ? m_total - m0 : F::BM;
        const unsigned *xb = (const unsigned *)xv + (bnn_i64)m0 * F::GS * F::GW;
        for (int i = tid; i < rows * F::GS * F::GW; i += F::NT) bnn_cp4((float *)(bits + i), (const float *)(xb + i), true);
        bnn_cp_commit();
        bnn_pool_values<F>((float *)(bits + T::BITS));
        bnn_cp_wait<0>();
        __syncthreads();
        bnn_pool_bit_rows<F>(bits, (const float *)(bits + T::BITS), rows, xp, T::XLD);
    }
    for (int kc = 0; kc < T::NKC; ++kc) {
        if (kc + F::S - 1 < T::NKC) {
            load_x((kc + F::S - 1) % F::S, (kc + F::S - 1) * F::KC);
            load_w((kc + F::S - 1) % F::S, (kc + F::S - 1) * F::KC);
        }
        bnn_cp_commit();
        bnn_cp_wait<F::S - 1>(); // chunk kc has landed (its W group came first)
        __syncthreads();
        const float *xs = F::GS ? xp + tm * F::TM * T::XLD + kc * F::KC : smem + kc % F::S * T::STAGE + tm * F::TM * T::LD;
        const float *ws = smem + kc % F::S * T::STAGE + (T::XROWS + tn) * T::LD;
        constexpr int XS = F::GS ? T::XLD : T::LD;
        if constexpr (F::V4 != 0) { // 4 k a step from 16-byte loads (the rows' stride 4 mod 32
                                    // words: a quarter warp's 8 loads of w in distinct banks, x's the
                                    // same for all lanes), each chain still one k after another
#pragma unroll 4
            for (int kk = 0; kk < F::KC; kk += 4) {
                const float4 wv = *(const float4 *)(ws + kk);
#pragma unroll
                for (int i = 0; i < F::TM; ++i) {
                    const float4 xq = *(const float4 *)(xs + i * XS + kk);
                    acc[i] = __fadd_rn(acc[i], __fmul_rn(xq.x, wv.x));
                    acc[i] = __fadd_rn(acc[i], __fmul_rn(xq.y, wv.y));
                    acc[i] = __fadd_rn(acc[i], __fmul_rn(xq.z, wv.z));
                    acc[i] = __fadd_rn(acc[i], __fmul_rn(xq.w, wv.w));
                }
            }
        } else {
#pragma unroll 8
            for (int kk = 0; kk < F::KC; ++kk) {
                const float wv = ws[kk];
#pragma unroll
                for (int i = 0; i < F::TM; ++i) acc[i] = __fadd_rn(acc[i], __fmul_rn(xs[i * XS + kk], wv));
            }
        }
        __syncthreads(); // before the stage is loaded again
    }
    const int n = n0 + tn;
    if (n >= F::N) return;
#pragma unroll
    for (int i = 0; i < F::TM; ++i) {
        const int m = m0 + tm * F::TM + i;
        if (m < m_total) y[(bnn_i64)m * F::N + n] = F::BIAS ? __fadd_rn(b[n], acc[i]) : acc[i];
    }
}

// acc + x[k] * w[k] for k < 4 * NQ in order, each product and sum rounded (a dense output's
// chain), from 16-byte shared-memory loads, the loop unrolled U times. Deep, ptxas issues the
// loads well ahead of their adds: one warp's chain of 8192 k took 5.1-5.4 cycles a k unrolled
// 128 times (the adds alone 4.2-4.5), 5.8 unrolled 16 or 32 times, 6.4 unrolled 8 times, 6.8
// with the loads issued four iterations ahead by hand (a probe on an H200, docs/perf.md stop
// 33). Where the chain runs once a launch (bnn_dense_few), a short body (U 4) is as fast: its
// code is fetched once, and unrolled 128 times the heads of XNOR and Bi-Real ResNet-18 were
// 0.1-0.5 % slower at batches 1 to 3.
template <int NQ, int U>
__device__ __forceinline__ float bnn_chain_dot(float acc, const float4 *xq, const float4 *wq) {
#pragma unroll U
    for (int q = 0; q < NQ; ++q) {
        const float4 x4 = xq[q], w4 = wq[q];
        acc = __fadd_rn(acc, __fmul_rn(x4.x, w4.x));
        acc = __fadd_rn(acc, __fmul_rn(x4.y, w4.y));
        acc = __fadd_rn(acc, __fmul_rn(x4.z, w4.z));
        acc = __fadd_rn(acc, __fmul_rn(x4.w, w4.w));
    }
    return acc;
}

// The same dense layer for fewer rows than a tile holds (batch 1 to 3: lower.c's main step,
// the tiles are its batch alternatives). At batch 1 bnn_dense_tile spends its time issuing
// instructions, not waiting for memory (ncu, H100: ResNet's 512 -> 1000 head 9.9 us, 5,183
// instructions a warp at one warp a scheduler, most of them the 4-byte copies' address
// arithmetic of its chunks). Here a block stages its BN weight rows whole, with 16-byte copies
// (K % 4 == 0; else 4-byte ones) requested before the PDL wait, then its items' x rows (or with
// GS their bits, pooled as bnn_dense_tile pools them), zeros past K up to KP; thread (r, n)
// then runs its column's chain straight from shared memory (bnn_chain_dot): the K dependent
// adds (~4 cycles each) are its latency. Rows are XLD = KP + 4
// floats apart (16-byte aligned). grid.x = ceil(M / BM), grid.y = ceil(N / BN); BM * BN <= NT.
template <class F> struct BnnDenseFew {
    static constexpr int KP = (F::K + 3) / 4 * 4, XLD = KP + 4;
    static constexpr int WS = F::BN * XLD, XS = F::BM * XLD, BITS = F::GS * F::GW * F::BM;
    static constexpr int POOL = F::GS ? BITS + F::GS + 1 : 0; // the bits, then bnn_pool_values' table
    static_assert(F::BM * F::BN <= F::NT, "bad tile");
    static_assert((WS + XS + POOL) * 4 == F::SMEM, "the launch's shared memory (lower.c) differs");
};

// Rows [n][K] of src into dst [n][XLD] by cp.async (rows from `valid` on zeros), zeros from
// K to KP.
template <class F>
__device__ __forceinline__ void bnn_few_rows(float *dst, const float *src, int n, int valid) {
    typedef BnnDenseFew<F> T;
    if (F::K % 4 == 0) {
        for (int i = threadIdx.x; i < n * (T::KP / 4); i += F::NT) {
            const int r = i / (T::KP / 4), q = i % (T::KP / 4);
            bnn_cp16(bnn_smem(dst + r * T::XLD + 4 * q), r < valid ? src + (bnn_i64)r * F::K + 4 * q : src,
                     r < valid ? 16u : 0u);
        }
    } else {
        for (int i = threadIdx.x; i < n * T::KP; i += F::NT) {
            const int r = i / T::KP, k = i % T::KP;
            const bool ok = r < valid && k < F::K;
            bnn_cp4(dst + r * T::XLD + k, ok ? src + (bnn_i64)r * F::K + k : src, ok);
        }
    }
}

template <class F>
__device__ __forceinline__ void bnn_dense_few(int m_total, const void *xv, const float *w, const float *b, float *y) {
    typedef BnnDenseFew<F> T;
    extern __shared__ __align__(128) unsigned char bnn_dsmem[];
    float *const ws = (float *)bnn_dsmem, *const xs = ws + T::WS;
    unsigned *const bits = (unsigned *)(xs + T::XS);
    const int m0 = blockIdx.x * F::BM, n0 = blockIdx.y * F::BN, tid = threadIdx.x;
    const int rows = m_total - m0 < F::BM ? m_total - m0 : F::BM;
    bnn_few_rows<F>(ws, w + (bnn_i64)n0 * F::K, F::BN, F::N - n0); // constants: before the wait
    bnn_cp_commit();
    BNN_PDL_ENTER();
    if constexpr (F::GS != 0) {
        const unsigned *xb = (const unsigned *)xv + (bnn_i64)m0 * F::GS * F::GW;
        for (int i = tid; i < rows * F::GS * F::GW; i += F::NT) bnn_cp4((float *)(bits + i), (const float *)(xb + i), true);
        bnn_pool_values<F>((float *)(bits + T::BITS));
    } else {
        bnn_few_rows<F>(xs, (const float *)xv + (bnn_i64)m0 * F::K, rows, rows);
    }
    bnn_cp_commit();
    bnn_cp_wait<0>();
    __syncthreads();
    if constexpr (F::GS != 0) {
        bnn_pool_bit_rows<F>(bits, (const float *)(bits + T::BITS), rows, xs, T::XLD);
        __syncthreads();
    }
    const int r = tid / F::BN, n = tid % F::BN; // this thread's chain, where r < rows
    if (r >= rows || n0 + n >= F::N)
        return;
    const float acc = bnn_chain_dot<T::KP / 4, 4>(0.0f, (const float4 *)(xs + r * T::XLD), (const float4 *)(ws + n * T::XLD));
    y[(bnn_i64)(m0 + r) * F::N + n0 + n] = F::BIAS ? __fadd_rn(b[n0 + n], acc) : acc;
}

// The same dense layer with few outputs over a long K (a classifier after a flatten: VGG-small's
// 8192 -> 10), where bnn_dense_tile's chunks of 128 k, two in flight, each waited for its copies
// (100 us at batch 1 for 8192 dependent adds that take some 17: docs/perf.md stop 33) and
// bnn_dense_few's rows do not fit in shared memory. A block of NT threads holds BM rows x BN
// columns of chains (at most 32: one warp adds them), K in chunks of KC = KPT * NT: thread t
// loads k = t + j * NT (j < KPT) of its rows and columns into registers with coalesced 4-byte
// loads, the weights' first before the PDL wait; it stores them to shared memory, and while the
// chain warp adds a chunk from there (bnn_chain_dot), the block's loads of the next one are in
// flight. Each output stays one chain in the reference's order; k past K reads zeros, and
// adding a product +0 leaves a sum that starts at +0 as it was (it is never -0). grid.x =
// ceil(M / BM), grid.y = ceil(N / BN).
template <class F> struct BnnDenseLong {
    static constexpr int KC = F::KPT * F::NT, LD = KC + 4, NKC = (F::K + KC - 1) / KC, CH = F::BM * F::BN;
    static_assert(CH <= 32 && F::NT % 32 == 0, "the chains are one warp's");
    static_assert((F::BM + F::BN) * LD * 4 == F::SMEM, "the launch's shared memory (lower.c) differs");
};
template <class F>
__device__ __forceinline__ void bnn_dense_long(int m_total, const void *xv, const float *w, const float *b, float *y) {
    typedef BnnDenseLong<F> T;
    extern __shared__ __align__(128) unsigned char bnn_dsmem[];
    float *const xs = (float *)bnn_dsmem, *const ws = xs + F::BM * T::LD; // [BM][LD], [BN][LD]
    const float *const x = (const float *)xv;
    const int m0 = blockIdx.x * F::BM, n0 = blockIdx.y * F::BN, tid = threadIdx.x;
    float xr[F::KPT][F::BM], wr[F::KPT][F::BN];
    auto load = [&](int k0, bool wts, bool acts) {
#pragma unroll
        for (int j = 0; j < F::KPT; ++j) {
            const int k = k0 + tid + j * F::NT;
            if (wts)
#pragma unroll
                for (int i = 0; i < F::BN; ++i)
                    wr[j][i] = n0 + i < F::N && k < F::K ? w[(bnn_i64)(n0 + i) * F::K + k] : 0.0f;
            if (acts)
#pragma unroll
                for (int i = 0; i < F::BM; ++i)
                    xr[j][i] = m0 + i < m_total && k < F::K ? x[(bnn_i64)(m0 + i) * F::K + k] : 0.0f;
        }
    };
    load(0, true, false); // constants: before the wait
    BNN_PDL_ENTER();
    load(0, false, true);
    const int r = tid / F::BN, n = tid % F::BN; // this thread's chain, where tid < CH
    float acc = 0.0f;
    for (int kc = 0; kc < T::NKC; ++kc) {
#pragma unroll
        for (int j = 0; j < F::KPT; ++j) {
#pragma unroll
            for (int i = 0; i < F::BM; ++i) xs[i * T::LD + tid + j * F::NT] = xr[j][i];
#pragma unroll
            for (int i = 0; i < F::BN; ++i) ws[i * T::LD + tid + j * F::NT] = wr[j][i];
        }
        __syncthreads();
        if (kc + 1 < T::NKC) load((kc + 1) * T::KC, true, true);
        if (tid < T::CH)
            acc = bnn_chain_dot<T::KC / 4, 128>(acc, (const float4 *)(xs + r * T::LD), (const float4 *)(ws + n * T::LD));
        __syncthreads(); // the chunk's rows are read before the next one is stored
    }
    if (tid < T::CH && m0 + r < m_total && n0 + n < F::N)
        y[(bnn_i64)(m0 + r) * F::N + n0 + n] = F::BIAS ? __fadd_rn(b[n0 + n], acc) : acc;
}

// ---------------- fp16 tensor-core conv2d
// The conv2d step's GPU kernel under `bnncc --float-convs=fp16|fp16x3` (docs/kernels.md
// "Float kernels"). Unlike everything above it does NOT keep the reference's float sequence:
// the products are summed in f32 by mma.sync m16n8k16 in the tensor cores' order. SPLIT 0
// (fp16): input and weights rounded to fp16, about 1e-3 relative error. SPLIT 1 (fp16x3):
// each value v as hi = fp16(v) plus lo = fp16(v - hi), and x*w as hi*hi + hi*lo + lo*hi, three
// MMAs, products good to about 2^-21 (lo parts below fp16's normal range lose bits). Implicit
// GEMM, groups = 1: row = output pixel of one image, column = output channel, k = (c, ky, kx),
// the weights' own order. F: C, H, W, O, KH, KW, SH, SW, PT, PL, DH, DW, OH, OW, BIAS, RELU
// (as bnn_conv2d_tile), SPLIT, KP (K rounded up to 16), OP (O rounded up to 64), SMEM. w16:
// the weights as fp16 [1 + SPLIT][OP][KP] (hi, then lo), zero padded (the lowering writes
// them). 256 threads, a block computes 128 pixels x 64 channels, warp (wm, wn) 32 pixels x 32
// channels; K in steps of 16 through two stages: each thread gathers 8 values of one pixel's
// patch into registers while the tensor cores work on the other stage, then stores them
// rounded as that pixel's row(s) of halves; the weight rows come by cp.async. Rows are 48
// bytes apart, so ldmatrix's 8 rows of 16 bytes hit 32 distinct banks. A stage: the pixels'
// hi rows [, lo rows], the weights' hi rows [, lo rows]. After the two stages, a table of KP
// taps (the input offset of k and its (dy, dx)), so a gathered value costs no divisions.
// PS > 0 (the lowering's choice for C <= 4, blob.h blob_conv2d_f16_order): k = ky*KWP + kx*PS + c
// instead, PS channel slots a tap (C, or C rounded up to even), KWP = KW*PS rounded up to even,
// KP = KH*KWP rounded up to 16, zero weights for c >= C and past a row's taps (docs/blob-format.md,
// p1). WIN 1 (PS > 0 and the shared memory below at most 75 KiB): a block's 128 pixels are 8 x 16
// output pixels, their whole input window is staged once with the PS channel slots of a position
// side by side, all of w16 stays in shared memory, and the A fragments are read as words.
// grid.x: batch * MT * NT, or fewer blocks (bnn_conv2d_mma below).
//
// BITS 1 (a conv2d_chain whose float value nobody reads; docs/kernels.md "The stem"): the
// block's 128 x 64 sums (+ bias) go through the chain's STAGES stages (chain [STAGES][2][O]:
// v*a + b, or v/a + b where bit s of DIV, then a relu where bit s of RELUS) to one bit each,
// v > 0 || (v == 0 && ZERO), stored NHWC-packed, OUTW words a pixel (NANF 1: then OUTW words
// of flags, bit set where v is NaN, for the maxpool of bits after it); a warp's 32 channels are
// one word, OR-ed over its lanes by shuffles. EXACT 1 (SPLIT 1) makes
// those bits the reference's: the chain is monotone in the sum, so where the chain gives the
// same bit at both ends of [sum - m, sum + m], m a bound on |fp16x3 sum - the reference's f32
// sum| (from the patch's max |x| and ||x||_2 and chain[2*STAGES*O + o] = ||w||_2 of channel o), that bit
// is exact; else the sum is left to bnn_conv2d_bits_fixup: the block writes it as a 0 bit and
// lists it in the tile's LISTQ entries of `list`, which that kernel, launched next, recomputes
// in the reference's order (c, ky, kx) from w32 across the whole GPU. Sums past a tile's LISTQ
// (non-finite inputs) the thread that found them recomputes itself (all of them in the block,
// before the list: 0.48 of the stem's 1.65 ms at batch 256 on an H100, a dozen threads a
// block adding 147 products while the others waited; docs/perf.md).
template <class F> struct BnnConvBits {
    static_assert(!F::EXACT || (F::SPLIT && F::BITS), "exact bits need the hi + lo split");
    static_assert(!F::BITS || F::OUTW >= (F::O + 31) / 32, "bit output narrower than O");
    // The MMAs a k step: hi * hi of x and w, lo(x) * hi(w), and (TERMS 3) hi(x) * lo(w). The
    // staged-window exact form with bits out leaves the last out (TERMS 2: a third fewer MMAs,
    // the tensor pipe being what its k loop waits on) and bounds what it leaves, sum x_i (w_i -
    // hi(w_i)), by ||x||_2 ||w - hi(w)||_2 instead (exact_consts' dlo). That bound about doubles
    // the margin, so twice the sums are listed: XNOR ResNet-18's stem at batch 256 on an H200
    // 0.706 -> 0.637 ms, its fixup 0.086 -> 0.115, the model -3.6 %; with codes out (LV > 0,
    // three thresholds a sum can be near) the fixup grew more than the conv saved (the w1a2
    // ResNet's 0.880 -> 0.813 and 0.162 -> 0.237 ms), so they keep three (docs/perf.md stop 43;
    // stop 56: with one, hi(x) * hi(w), the conv 0.760 -> 0.652 ms and the fixup 0.111 -> 0.365).
    static constexpr int TERMS = !F::SPLIT ? 1 : F::EXACT && F::WIN && !F::LV ? 2 : 3;
    // |sum - ref| <= m = REL * P + ABS * (K * xmax + sum|w|) (+ ||x||_2 dlo with TERMS 2),
    // P = sum |x_i w_i| (<= xmax sum|w|, and <= ||x||_2 ||w||_2): each mma of 16 products may
    // lose an ulp of its largest term per term (17 per mma, TERMS mma a k step), the reference's
    // own rounding ((K + 1) ulp), every term and partial sum at most P in size; the splits' 2^-22
    // of P and fp16 subnormals' 2^-25; twice that.
    static constexpr float REL =
        2.0f * (17.0f * TERMS * (F::KP / 16) + F::C * F::KH * F::KW + 16.0f) * 0x1p-23f;
    static constexpr float ABS = 2.0f * 0x1p-23f;
    // ABS K, and one K more: with slope and aw (exact_consts), m is then at least (1 + 2^-20)
    // times the bound, which the codes' test needs (BnnConvMma's epilogue). ABS a power of 2: exact.
    static constexpr float ABSK = ABS * (F::C * F::KH * F::KW + 1);
    static_assert(F::C * F::KH * F::KW < (1 << 20), "ABS (K + 1) >= (1 + 2^-20) ABS K (lower.c fp16_conv_ok)");
    // A tile's list: its count, then up to LISTQ entries pixel << 8 | channel (the tile's);
    // 8.9 a block on average in XNOR ResNet-18's stem (TERMS 2), at most 18 (bench/stem_queue.py,
    // normal inputs). Codes (LV > 0) have LV thresholds a sum can be too close to: 127 entries
    // (a w1a2 ResNet-18's stem lists 0.42 % of its sums, 34 a block of 64 channels on average,
    // at most 50; with the first bound, 84; past 31 the blocks recomputed the rest themselves,
    // one sum after another: its conv 1.94 ms at batch 256 on an H200, docs/perf.md).
    static constexpr int LISTQ = F::LV ? 127 : 31, LISTW = LISTQ + 1;
};

// A BITS conv's channel: the chain as one comparison of the sum (the lowering's
// stem_threshold: mode 1 sum >= t, -1 sum <= t, 2 always 1, 0 always 0, 3 none) and ||w||_2,
// loaded once for the thread's pixels; the bias and the stages' constants only where the chain
// itself runs (mode 3, a NaN, a sum past the list).
template <class F> struct BnnChainK {
    const float *b, *chain;
    int o, mode;
    float wabs, t;
    // mode < 3 as one comparison (exact bits): bit 1 where sgn * sum >= tt for every sum of the
    // interval, 0 where sgn * sum < tt for every one; sgn -1 for a falling threshold (-sum >= -t
    // is sum <= t), tt -inf for a constant 1, +inf for a constant 0.
    float sgn, tt;
    __device__ __forceinline__ BnnChainK(int o_, const float *b_, const float *chain_)
        : BnnChainK(o_, b_, chain_, chain_ + 2 * F::STAGES * F::O + o_, F::O) {}
    // ||w||_2, t and the mode from k[0], k[ld], k[2 ld]: the chain's rows, or a copy of them
    // (LV > 0: the rows are ||w||_2, the LV thresholds tt, already signed, and the sign.)
    __device__ __forceinline__ BnnChainK(int o_, const float *b_, const float *chain_, const float *k, int ld)
        : b(b_), chain(chain_), o(o_) {
        wabs = k[0];
        if (F::LV) {
            t = tt = 0.0f;
            mode = 1;
            sgn = k[(1 + F::LV) * ld];
            return;
        }
        t = k[ld];
        mode = (int)k[2 * ld];
        sgn = mode == -1 ? -1.0f : 1.0f;
        const float inf = __int_as_float(0x7f800000);
        tt = mode == 2 ? -inf : mode == 0 ? inf : sgn * t;
    }
    // EXACT: the interval test's constants {slope, aw, sgn, tt}, wabs the channel's ||w||_2
    // (rounded up; sum |w| <= sqrt(K) ||w||_2 = ws). BnnConvBits' bound is REL * P + ABS * (K xm
    // + sum |w|) with P = sum |x_i w_i| and xm the patch's max |x|. WIN: m = nx * slope + (xm *
    // ABS K + aw), rounded up, with nx the patch's ||x||_2 (P <= ||x||_2 ||w||_2, Cauchy-Schwarz:
    // slope >= REL ||w||_2); else m = xm * slope + aw (P <= xm sum |w|: slope >= REL ws + ABS K).
    // aw >= ABS ws. slope is NaN where ws passes 1e30: with xm <= 65504 (the epilogue lists the sums
    // of a pixel past that) no sum nor m can then overflow, so a NaN m or sum is the only
    // non-finite case, and it lists the sum. dlo >= ||w - hi(w)||_2 where the MMAs leave the
    // weights' lo plane out (TERMS 2; else 0): sum x_i (w_i - hi(w_i)) <= ||x||_2 dlo, and
    // <= xm sqrt(K) dlo. Both slope and aw are (1 + 2^-20) times that (ABSK too), so that a
    // difference from a threshold rounded once, within 2^-24 of itself, can be compared with m.
    __device__ __forceinline__ float4 exact_consts(float dlo) const {
        typedef BnnConvBits<F> TB;
        constexpr float GROW = 1.0f + 0x1p-20f;
        const float sk = __fsqrt_ru((float)(F::C * F::KH * F::KW)), ws = __fmul_ru(wabs, sk);
        const float slope = !(ws <= 1e30f) ? __int_as_float(0x7fffffff)
                            : F::WIN       ? __fadd_ru(__fmul_ru(TB::REL, wabs), dlo)
                                           : __fadd_ru(__fadd_ru(__fmul_ru(TB::REL, ws), TB::ABSK), __fmul_ru(sk, dlo));
        return make_float4(__fmul_ru(slope, GROW), __fmul_ru(__fadd_ru(__fmul_ru(TB::ABS, ws), 1e-30f), GROW), sgn, tt);
    }
    // The bit of every sum in [lo, hi] when they all have the same one (mode < 3), else -2.
    __device__ __forceinline__ int bit_of_range(float lo, float hi) const {
        if (mode == 2 || mode == 0) return mode >> 1;
        if (mode == 1) return lo >= t ? 1 : hi < t ? 0 : -2;
        return hi <= t ? 1 : lo > t ? 0 : -2;
    }
    // The chain's value on sum v (before the bias).
    __device__ __forceinline__ float value(float v) const {
        float a[F::STAGES + 1], k[F::STAGES + 1];
#pragma unroll
        for (int s = 0; s < F::STAGES; ++s) a[s] = chain[2 * s * F::O + o], k[s] = chain[(2 * s + 1) * F::O + o];
        if (F::BIAS) v = __fadd_rn(b[o], v);
        return bnn_chain_stages<F::STAGES, F::DIV, F::RELUS>(v, a, k);
    }
    // The chain on sum v (before the bias): bit 1 or 0, -1 for NaN.
    __device__ __forceinline__ int bit(float v) const {
        v = value(v);
        return v != v ? -1 : v > 0.0f || (v == 0.0f && F::ZERO);
    }
    // The output on sum v: its bit, or (LV > 0) its code, the level index of the quantizer
    // (blob.h blob_conv2d_chain_code); -1 for NaN.
    __device__ __forceinline__ int code(float v) const {
        if (!F::LV) return bit(v);
        v = value(v);
        const float q = bnn_quantize_one(&v, 0, __uint_as_float(F::QSCALE), __uint_as_float(F::QZERO), F::QLO, F::QHI,
                                         F::QROUND);
        return q != q ? -1 : (int)__fsub_rn(q, (float)F::QLO);
    }
};

// Sum o of pixel p in the reference's order (rt_cpu.c conv2d_sum), x at the item's image.
// (Unrolling its row loop, each row's loads issued before its sums, made XNOR's stem slower
// on an H200: 1.66 -> 2.27 ms at batch 256, docs/perf.md.)
template <class F>
__device__ __noinline__ float bnn_conv2d_exact_sum(const float *x, const float *w32, int o, int p) {
    const int oy = p / F::OW, ox = p % F::OW;
    float s = 0.0f;
    for (int ci = 0; ci < F::C; ++ci)
        for (int ky = 0; ky < F::KH; ++ky) {
            const int iy = oy * F::SH - F::PT + ky * F::DH;
            if ((unsigned)iy >= (unsigned)F::H) continue;
            for (int kx = 0; kx < F::KW; ++kx) {
                const int ix = ox * F::SW - F::PL + kx * F::DW;
                if ((unsigned)ix >= (unsigned)F::W) continue;
                s = __fadd_rn(s, __fmul_rn(x[(ci * F::H + iy) * F::W + ix], w32[((o * F::C + ci) * F::KH + ky) * F::KW + kx]));
            }
        }
    return s;
}
// ORs bit m of a code (or a bit: QP 1) into plane words at w, w + stride, ..., a NaN (code < 0)
// into the NaN flags after them where the output has them (NANF).
template <class F>
__device__ __forceinline__ void bnn_code_or(unsigned *w, int stride, unsigned m, int code) {
    if (code < 0) {
        if (F::NANF) atomicOr(&w[F::QP * stride], m);
        return;
    }
#pragma unroll
    for (int pl = 0; pl < F::QP; ++pl)
        if (code >> pl & 1) atomicOr(&w[pl * stride], m);
}

template <class F> struct BnnConvMma {
    static constexpr int K = F::C * F::KH * F::KW, KK = F::KH * F::KW, P = F::OH * F::OW;
    static constexpr int BM = 128, BN = 64, NK = F::KP / 16, ROW = 48, PL = 1 + F::SPLIT;
    static constexpr int NT = F::OP / BN, BROW = PL * BM, STAGE = PL * (BM + BN) * ROW;
    // WIN: a block's 128 pixels are TH x TW output pixels, its input window SR x SC positions.
    static constexpr int TH = 8, TW = 16, TY = (F::OH + TH - 1) / TH, TX = (F::OW + TW - 1) / TW;
    static constexpr int MT = F::WIN ? TY * TX : (P + BM - 1) / BM;
    static constexpr int SR = (TH - 1) * F::SH + (F::KH - 1) * F::DH + 1;
    static constexpr int SC = (TW - 1) * F::SW + (F::KW - 1) * F::DW + 1;
    // WIN's shared memory, in bytes: the weights (all k), the window's planes, (EXACT) the max
    // |x| of its positions and of its output rows' KH rows of positions, the k pairs' offsets,
    // (BITS) the epilogue's words.
    static constexpr int WROW = 2 * F::KP + 16; // odd 16-byte units: ldmatrix's 8 rows in 32 banks
    static constexpr int R0 = (PL * BN * WROW + 15) / 16 * 16;
    // A window row: its SC positions' PS halves, then zeros up to an even count past the last
    // pixel's last k pair (with KWP > KW*PS it reads one half past its last tap).
    static constexpr int RH = (SC * F::PS + (F::KWP - F::KW * F::PS) + 1) / 2 * 2;
    static constexpr int PLW = SR * RH / 2; // words a window plane
    static constexpr int WINB = (PL * PLW * 4 + 15) / 16 * 16;
    // (EXACT: the max |x| over c of each position, then the sum of x^2 over c; the same over ky
    // of each output row's KH rows, [TH][SC] each.)
    static constexpr int XWH = (SR * SC * 4 + 15) / 16 * 16, XWB = F::EXACT ? 2 * XWH : 0;
    static constexpr int VMB = F::EXACT ? 2 * TH * SC * 4 : 0;
    static constexpr int XW_AT = R0 + WINB, VM_AT = XW_AT + XWB, KOFF_AT = VM_AT + VMB; // byte offsets
    // BITS: the epilogue's words ([1 + NANF][BM][2]) and list count; WIN: a region of their own
    // (the weights stay for the block's next tile), else in the free stages. WIN and BITS: then
    // the chain's rows of sum |w|, t and mode for the block's BN channels ([3][BN], CH_AT), and
    // (EXACT) each channel's exact_consts ([BN] float4, CK_AT), computed once a block.
    // LV > 0 (codes of QP planes): the words [QP + 1][BM][2], the rows sum |w|, LV thresholds, sign.
    static constexpr int EPW = (F::QP + 1) * BM * 2 * 4, CHR = F::LV ? 2 + F::LV : 3;
    static constexpr int EP_AT = (KOFF_AT + F::KP / 2 * 4 + 15) / 16 * 16, EPB = F::BITS ? EPW + 16 : 0;
    static constexpr int WORDS_AT = F::WIN ? EP_AT : 1024, QLEN_AT = WORDS_AT + EPW;
    static constexpr int CH_AT = EP_AT + EPB, CHB = F::BITS ? CHR * BN * 4 : 0;
    static constexpr int CK_AT = CH_AT + CHB, CKB = F::BITS ? BN * 16 : 0;
    static constexpr int WIN_SMEM = CK_AT + CKB;
    // The output pixel of pixel pl of the block's pixel tile mt, -1 past the image's.
    static __device__ __forceinline__ int pixel(int mt, int pl) {
        if (F::WIN) {
            const int oy = mt / TX * TH + pl / TW, ox = mt % TX * TW + pl % TW;
            return oy < F::OH && ox < F::OW ? oy * F::OW + ox : -1;
        }
        return mt * BM + pl < P ? mt * BM + pl : -1;
    }
    static_assert(F::KP % 16 == 0 && F::OP % BN == 0 && F::OP >= F::O, "bad padding");
    static_assert(F::PS ? F::PS >= F::C && F::KWP % 2 == 0 && F::KWP >= F::KW * F::PS && F::KP >= F::KH * F::KWP
                        : !F::WIN && F::KP >= K,
                  "bad padding");
    // WIN reads k two at a time as a word of the window: a pixel's origin and a pair's offset even
    static_assert(!F::WIN || F::PS % 2 == 0 || (F::SW * F::PS % 2 == 0 && F::DW == 1), "k pairs off words");
    static_assert((F::WIN ? WIN_SMEM : 2 * STAGE + 8 * F::KP) == F::SMEM,
                  "the launch's shared memory (lower.c) differs");
    static_assert(F::WIN || QLEN_AT + 16 <= 2 * STAGE, "the epilogue's words fit the stages");
    static_assert(!F::LV || (F::WIN && F::BITS && F::QP >= 1 && (1 << F::QP) > F::LV && F::LV <= 7),
                  "codes out: the staged-window form, at most 7 levels");
    // a block takes several tiles (a grid of fewer blocks) only where they share its weights
    static constexpr bool MANY = F::WIN && NT == 1;
    static_assert((F::KH - 1) * F::DH < 32768 && (F::KW - 1) * F::DW < 32768 && F::H < 32768 &&
                      (long long)F::C * F::H * F::W < (1ll << 31), "tap table: int offsets, 16-bit dy and dx");
};

template <class F>
__device__ __forceinline__ void bnn_conv2d_mma_tile(bnn_i64 tile, bool first, const float *x, const unsigned short *w16,
                                                    const float *b, float *y, const float *w32, const float *chain,
                                                    unsigned *list) {
    typedef BnnConvMma<F> T;
    typedef BnnConvBits<F> TB;
    extern __shared__ __align__(128) unsigned char bnn_dsmem[];
    const unsigned sbase = bnn_smem(bnn_dsmem);
    const bnn_i64 item = tile / (T::MT * T::NT);
    const int t = (int)(tile % (T::MT * T::NT));
    const int mt = t % T::MT, o0 = t / T::MT * T::BN;
    const int p0 = mt * T::BM;                                   // !WIN: the block's first pixel
    const int oy0 = mt / T::TX * T::TH, ox0 = mt % T::TX * T::TW; // WIN: its first row and column
    auto pixel = [&](int pl) -> int { return T::pixel(mt, pl); };
    x += item * F::C * F::H * F::W;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wm = warp & 3, wn = warp >> 2;
    const int sm = tid & 127;
    float acc[2][4][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
    // One k step's MMAs: a warp's 2 x 4 tiles from its A and B fragments (plane 0 hi, 1 lo).
    auto mma = [&](const unsigned (&a)[T::PL][2][4], const unsigned (&bw)[T::PL][2][4]) {
#pragma unroll
        for (int mi = 0; mi < 2; ++mi)
#pragma unroll
            for (int ni = 0; ni < 4; ++ni)
#pragma unroll
                for (int term = 0; term < TB::TERMS; ++term) { // lo*hi, (TERMS 3) hi*lo, then hi*hi
                    const int pa = term == 0 && F::SPLIT, pb = TB::TERMS == 3 && term == 1;
                    bnn_hmma_f16(acc[mi][ni], a[pa][mi], bw[pb][ni >> 1][(ni & 1) * 2],
                                 bw[pb][ni >> 1][(ni & 1) * 2 + 1]);
                }
    };
    float xmax = 0.0f; // !WIN, EXACT: the largest |x| this thread gathered (NaN ignored)
    if constexpr (F::WIN) {
        // The block's input window, staged once: [PL][SR][RH] halves, the PS channel slots of a
        // position side by side, so that k = ky*KWP + kx*PS + c (the lowering's order of w16)
        // takes a pair of halves from one aligned word (BnnConvMma's static_assert), and a
        // thread's A fragment is 4 such words a plane and m16 tile, at offsets known before the
        // loop. All k of the weights stay in shared memory; no barrier in the loop.
        unsigned *const win = (unsigned *)(bnn_dsmem + T::R0);
        float *const xw = (float *)(bnn_dsmem + T::XW_AT); // [SR * SC]: max |x| over c
        float *const xs = (float *)(bnn_dsmem + T::XW_AT + T::XWH); // [SR * SC]: sum of x^2 over c, rounded up
        float *const vm = (float *)(bnn_dsmem + T::VM_AT); // [TH][SC]: over ky too
        float *const vs = vm + T::TH * T::SC;
        int *const koff = (int *)(bnn_dsmem + T::KOFF_AT);
        constexpr int WCH = F::KP / 8; // 16-byte pieces of a weight row
        // The window's values first: issued after the weights' copies, they waited behind them
        // (docs/perf.md stop 25).
        const int wy0 = oy0 * F::SH - F::PT, wx0 = ox0 * F::SW - F::PL;
        constexpr int NPOS = T::SR * T::SC, NJ = (NPOS + 255) / 256;
        float xv[NJ][F::PS];
#pragma unroll
        for (int j = 0; j < NJ; ++j) {
            const int i = tid + j * 256, iy = wy0 + i / T::SC, ix = wx0 + i % T::SC;
            const bool in = i < NPOS && (unsigned)iy < (unsigned)F::H && (unsigned)ix < (unsigned)F::W;
#pragma unroll
            for (int c = 0; c < F::PS; ++c) xv[j][c] = in && c < F::C ? x[(c * F::H + iy) * F::W + ix] : 0.0f;
        }
        if (first) { // the weights and the k pairs' offsets serve all of the block's tiles (MANY)
            for (int i = tid; i < T::PL * T::BN * WCH; i += 256) {
                const int r = i / WCH, ch = i % WCH, pl = r / T::BN, n = r % T::BN;
                const unsigned dst = sbase + r * T::WROW + ch * 16;
                bnn_cp16(dst, w16 + ((bnn_i64)pl * F::OP + o0 + n) * F::KP + ch * 8, 16);
            }
            if (F::BITS) // the epilogue's chain constants, not loaded after the main loop
                for (int i = tid; i < T::CHR * T::BN; i += 256) {
                    const int o = o0 + i % T::BN;
                    bnn_cp4((float *)(bnn_dsmem + T::CH_AT) + i,
                            chain + (bnn_i64)(2 * F::STAGES + i / T::BN) * F::O + (o < F::O ? o : 0), o < F::O);
                }
            bnn_cp_commit();
            // k pair i's word in a plane, from the pixel's window origin, in bytes (an address is
            // then one add); the padding's past the last kernel row (zero weights) reads the
            // origin's word, which the pixel's sum holds
            for (int i = tid; i < F::KP / 2; i += 256) {
                const int ky = 2 * i / F::KWP, r = 2 * i % F::KWP, kx = r / F::PS, c = r % F::PS;
                koff[i] = ky < F::KH ? (ky * F::DH * T::RH + kx * F::DW * F::PS + c) / 2 * 4 : 0;
            }
            // The halves past a row's positions: zeros (a pair's half past its kernel row's last
            // tap), which no tile's staging writes
            for (int i = tid; i < T::PL * T::SR * (T::RH - T::SC * F::PS); i += 256) {
                constexpr int Z = T::RH - T::SC * F::PS;
                ((unsigned short *)win)[i / Z * T::RH + T::SC * F::PS + i % Z] = 0;
            }
        }
        // The window's positions, converted.
#pragma unroll
        for (int j = 0; j < NJ; ++j) {
            const int i = tid + j * 256;
            const float *const v = xv[j];
            float m = 0.0f, sq = 0.0f;
#pragma unroll
            for (int c = 0; c < F::PS; ++c) m = fmaxf(m, fabsf(v[c])), sq = F::EXACT ? __fmaf_ru(v[c], v[c], sq) : 0.0f;
            if (i < NPOS) {
                const int h = i / T::SC * T::RH + i % T::SC * F::PS; // the position's first half
                if (F::PS % 2 == 0) { // whole words
#pragma unroll
                    for (int c = 0; c < F::PS; c += 2) {
                        win[h / 2 + c / 2] = bnn_f16x2(v[c], v[c + 1]);
                        if (F::SPLIT)
                            win[T::PLW + h / 2 + c / 2] = bnn_f16x2(bnn_f16_rest(v[c]), bnn_f16_rest(v[c + 1]));
                    }
                } else {
                    unsigned short *const wh = (unsigned short *)win;
#pragma unroll
                    for (int c = 0; c < F::PS; ++c) {
                        wh[h + c] = (unsigned short)(bnn_f16x2(v[c], 0.0f) & 0xffffu);
                        if (F::SPLIT)
                            wh[2 * T::PLW + h + c] = (unsigned short)(bnn_f16x2(bnn_f16_rest(v[c]), 0.0f) & 0xffffu);
                    }
                }
                if (F::EXACT) xw[i] = m, xs[i] = sq;
            }
        }
        bnn_cp_wait<0>();
        __syncthreads();
        if (F::EXACT && first) { // read after the loop's barrier
            // Four threads a channel (BN * 4 = 256): with TERMS 2, dlo from the weights' lo plane,
            // lo = fp16(w - hi) rounded to nearest, so |w - hi| <= (1 + 2^-10) |lo| + 2^-25 (fp16's
            // subnormals) and ||w - hi||_2 <= (1 + 2^-10) ||lo||_2 + 2^-25 sqrt(K).
            static_assert(T::BN * 4 == 256, "four threads a channel");
            const int ch = tid >> 2;
            float dlo = 0.0f;
            if (TB::TERMS == 2) {
                const unsigned short *lo = (const unsigned short *)(bnn_dsmem + (T::BN + ch) * T::WROW);
                float sq = 0.0f;
#pragma unroll 8
                for (int k = tid & 3; k < F::KP; k += 4) {
                    const float v = bnn_f16_float(lo[k]);
                    sq = __fmaf_ru(v, v, sq);
                }
                sq = __fadd_ru(sq, __shfl_xor_sync(0xffffffffu, sq, 1));
                sq = __fadd_ru(sq, __shfl_xor_sync(0xffffffffu, sq, 2));
                dlo = __fmaf_ru(__fsqrt_ru(sq), 1.0f + 0x1p-10f,
                                __fmul_ru(0x1p-25f, __fsqrt_ru((float)(F::C * F::KH * F::KW))));
            }
            if ((tid & 3) == 0)
                ((float4 *)(bnn_dsmem + T::CK_AT))[ch] =
                    BnnChainK<F>(o0 + ch, b, chain, (const float *)(bnn_dsmem + T::CH_AT) + ch, T::BN).exact_consts(dlo);
        }
        // EXACT: the max |x| and the sum of x^2 over each output row's KH rows of positions; a
        // pixel's (over its KW columns of these) is taken in the epilogue, after the loop's barrier
        if (F::EXACT)
            for (int i = tid; i < T::TH * T::SC; i += 256) {
                const int ly = i / T::SC, sc = i % T::SC;
                float m = 0.0f, sq = 0.0f;
#pragma unroll
                for (int ky = 0; ky < F::KH; ++ky) {
                    const int at = (ly * F::SH + ky * F::DH) * T::SC + sc;
                    m = fmaxf(m, xw[at]);
                    sq = __fadd_ru(sq, xs[at]);
                }
                vm[i] = m;
                vs[i] = sq;
            }
        // Rows g and g + 8 of m16 tile mi are pixels (2 wm + mi, g) and (2 wm + mi, g + 8). (g and
        // tq declared here and again for the epilogue: hoisted above the staging, they cost the
        // kernel 16 more bytes of spills.)
        const int g = lane >> 2, tq = lane & 3;
        int pw[2][2]; // the pixels' window origins, in bytes
#pragma unroll
        for (int mi = 0; mi < 2; ++mi)
#pragma unroll
            for (int h = 0; h < 2; ++h)
                pw[mi][h] = ((2 * wm + mi) * F::SH * T::RH + (g + 8 * h) * F::SW * F::PS) / 2 * 4;
        auto word = [&](int pl, int at) { return *(const unsigned *)((const unsigned char *)win + pl * T::PLW * 4 + at); };
#pragma unroll
        for (int kc = 0; kc < T::NK; ++kc) {
            const int k0 = koff[kc * 8 + tq], k1 = koff[kc * 8 + 4 + tq]; // pairs 2tq and 2tq + 8
            unsigned a[T::PL][2][4], bw[T::PL][2][4];
#pragma unroll
            for (int pl = 0; pl < T::PL; ++pl) {
#pragma unroll
                for (int mi = 0; mi < 2; ++mi) {
                    a[pl][mi][0] = word(pl, pw[mi][0] + k0);
                    a[pl][mi][1] = word(pl, pw[mi][1] + k0);
                    a[pl][mi][2] = word(pl, pw[mi][0] + k1);
                    a[pl][mi][3] = word(pl, pw[mi][1] + k1);
                }
#pragma unroll
                for (int nj = 0; nj < 2; ++nj) // two n8 tiles x k16: b0, b1 of tile 2nj, then of 2nj + 1
                    if (TB::TERMS == 3 || pl == 0) // (TERMS 2: the weights' hi plane only)
                        bnn_ldsm4(sbase + (pl * T::BN + wn * 32 + nj * 16 + (lane & 7) + (lane >> 4) * 8) * T::WROW +
                                  kc * 32 + (lane >> 3 & 1) * 16,
                              bw[pl][nj][0], bw[pl][nj][1], bw[pl][nj][2], bw[pl][nj][3]);
            }
            mma(a, bw);
        }
        __syncthreads(); // the weights' memory is the epilogue's now
    } else {
        // The staging thread's pixel and which 8 of the step's 16 k values it gathers.
        const int sk = (tid >> 7) * 8, sp = p0 + sm;
        const bool spok = sp < T::P;
        const int iy0 = (spok ? sp / F::OW : 0) * F::SH - F::PT, ix0 = (spok ? sp % F::OW : 0) * F::SW - F::PL;
        // Tap k: its word offset from the patch origin, and dy << 16 | dx (k >= K: dy past any row).
        int2 *const taps = (int2 *)(bnn_dsmem + 2 * T::STAGE);
        for (int k = tid; k < F::KP; k += 256) { // k = (c, ky, kx), or ky*KWP + kx*PS + c where PS
            const int kx = F::PS ? k % F::KWP / F::PS : 0, ky = F::PS ? k / F::KWP : 0;
            const int c = F::PS ? k % F::KWP % F::PS : k / T::KK, r = F::PS ? ky * F::KW + kx : k % T::KK;
            const int dy = r / F::KW * F::DH, dx = r % F::KW * F::DW;
            const bool real = F::PS ? ky < F::KH && kx < F::KW && c < F::C : k < T::K;
            taps[k] = real ? make_int2((c * F::H + dy) * F::W + dx, dy << 16 | dx) : make_int2(0, 0x7fff0000);
        }
        __syncthreads();
        const int base = iy0 * F::W + ix0; // the patch origin's offset: negative at the top left border
        float v[8], xmax = 0.0f;           // EXACT: the largest |x| this thread gathered (NaN ignored)
        auto gather = [&](int k0) {
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const int2 tap = taps[k0 + sk + j];
                const int iy = iy0 + (tap.y >> 16), ix = ix0 + (tap.y & 0xffff);
                const bool ok = spok && (unsigned)iy < (unsigned)F::H && (unsigned)ix < (unsigned)F::W;
                v[j] = ok ? x[base + tap.x] : 0.0f;
                if (F::EXACT) xmax = fmaxf(xmax, fabsf(v[j]));
            }
        };
        auto put = [&](int stage) {
            const unsigned a = sbase + stage * T::STAGE + sm * T::ROW + sk * 2;
            bnn_st16(a, bnn_f16x2(v[0], v[1]), bnn_f16x2(v[2], v[3]), bnn_f16x2(v[4], v[5]), bnn_f16x2(v[6], v[7]));
            if (F::SPLIT) {
#pragma unroll
                for (int j = 0; j < 8; ++j) v[j] = bnn_f16_rest(v[j]);
                bnn_st16(a + T::BM * T::ROW, bnn_f16x2(v[0], v[1]), bnn_f16x2(v[2], v[3]), bnn_f16x2(v[4], v[5]),
                         bnn_f16x2(v[6], v[7]));
            }
        };
        auto weights = [&](int stage, int k0) { // PL x 64 rows of 32 bytes: a 16-byte copy each
            if (tid < 128 * T::PL) {
                const int pl = tid >> 7, n = (tid & 127) >> 1, h = tid & 1;
                const unsigned dst = sbase + stage * T::STAGE + (T::BROW + pl * T::BN + n) * T::ROW + h * 16;
                bnn_cp16(dst, w16 + ((bnn_i64)pl * F::OP + o0 + n) * F::KP + k0 + h * 8, 16);
            }
            bnn_cp_commit();
        };

        gather(0);
        weights(0, 0);
        put(0);
        bnn_cp_wait<0>();
        __syncthreads();
        for (int kc = 0; kc < T::NK; ++kc) {
            const int st = kc & 1;
            const bool more = kc + 1 < T::NK;
            if (more) { // the next step's loads fly while this one's MMAs run
                gather((kc + 1) * 16);
                weights(st ^ 1, (kc + 1) * 16);
            }
            const unsigned s0 = sbase + st * T::STAGE;
            unsigned a[T::PL][2][4], bw[T::PL][2][4];
#pragma unroll
            for (int pl = 0; pl < T::PL; ++pl) {
#pragma unroll
                for (int mi = 0; mi < 2; ++mi) // A 16x16: rows = lane & 15, k half = lane >> 4
                    bnn_ldsm4(s0 + (pl * T::BM + wm * 32 + mi * 16 + (lane & 15)) * T::ROW + (lane >> 4) * 16,
                              a[pl][mi][0], a[pl][mi][1], a[pl][mi][2], a[pl][mi][3]);
#pragma unroll
                for (int nj = 0; nj < 2; ++nj) // two n8 tiles x k16: b0, b1 of tile 2nj, then of 2nj + 1
                    bnn_ldsm4(s0 + (T::BROW + pl * T::BN + wn * 32 + nj * 16 + (lane & 7) + (lane >> 4) * 8) * T::ROW +
                                  (lane >> 3 & 1) * 16,
                              bw[pl][nj][0], bw[pl][nj][1], bw[pl][nj][2], bw[pl][nj][3]);
            }
            mma(a, bw);
            if (more) {
                put(st ^ 1);
                bnn_cp_wait<0>();
            }
            __syncthreads();
        }
    }
    // d[e]: pixel row g (+8 for e >= 2), channels 2t and 2t + 1 (e & 1) of the n8 tile.
    const int g = lane >> 2, tq = lane & 3;
    if (F::BITS) {
        // Each thread holds 4 pixels (mi, row half) x 8 channels of its warp's 32, one word:
        // the thread's bits of a pixel, OR-ed over the 4 lanes of a row (tq), are the word.
        // (EXACT) The sums too close to call: the first LISTQ in the tile's list for the fixup
        // kernel; past those (non-finite inputs) each thread recomputes its own, in the
        // reference's order.
        float *xm = (float *)bnn_dsmem;                           // !WIN: [2][BM], a pixel's two staging threads
        unsigned *words = (unsigned *)(bnn_dsmem + T::WORDS_AT);  // [1 + NANF][BM][2]
        int *qlen = (int *)(bnn_dsmem + T::QLEN_AT);
        unsigned *const blist = list + tile * TB::LISTW;          // EXACT: count, entries
        // (EXACT) pixel q's max |x|, NaN past 65504 (fp16's range: exact_consts), so that its sums
        // are all listed, and (WIN) its patch's ||x||_2 rounded up; the 4 lanes of a row hold the
        // same 4 pixels, so with WIN lane tq takes pixel q = tq's over its KW columns and shuffles
        // them to the others.
        float xmq[4], nxq[4];
        if (F::EXACT) {
            if (!F::WIN) xm[(tid >> 7) * T::BM + sm] = xmax;
            if (tid == 0) *qlen = 0;
            __syncthreads();
            auto guard = [](float v) { return v <= 65504.0f ? v : __int_as_float(0x7fffffff); };
            if (F::WIN) { // over the pixel's KW columns of its row's maxima
                const int pl = wm * 32 + (tq >> 1) * 16 + g + (tq & 1) * 8;
                const float *vm = (const float *)(bnn_dsmem + T::VM_AT) + pl / T::TW * T::SC;
                const float *vs = vm + T::TH * T::SC;
                float xmx = 0.0f, sqx = 0.0f;
#pragma unroll
                for (int kx = 0; kx < F::KW; ++kx) {
                    xmx = fmaxf(xmx, vm[pl % T::TW * F::SW + kx * F::DW]);
                    sqx = __fadd_ru(sqx, vs[pl % T::TW * F::SW + kx * F::DW]);
                }
                xmx = guard(xmx);
                const float nx = __fsqrt_ru(sqx);
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    xmq[q] = __shfl_sync(0xffffffffu, xmx, (lane & ~3) | q);
                    nxq[q] = __shfl_sync(0xffffffffu, nx, (lane & ~3) | q);
                }
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const int pl = wm * 32 + (q >> 1) * 16 + g + (q & 1) * 8;
                    xmq[q] = guard(fmaxf(xm[pl], xm[T::BM + pl]));
                    nxq[q] = 0.0f;
                }
            }
        }
        // A thread's 32 outputs: pixel q (of 4) x its 8 channels j = 2 ni + c (channel ni*8 + 2 tq + c
        // of the warp's 32). Their bits are collected at constant positions, bit j of one8[q] (and
        // nan8[q]), and the undecided ones (EXACT) at bit 8 q + j of und, so that an output costs
        // no branch and no shift by a lane-dependent amount; the list is filled after the loop.
        // (LV > 0: one8[pl][q] holds plane pl of the codes, each output's code the number of
        // its channel's thresholds below the sum, at both ends of the interval.)
        unsigned one8[F::QP][4] = {}, nan8[4] = {0, 0, 0, 0}, und = 0;
        // (EXACT) the bound m of pixel q's sums for a channel of constants k4 (exact_consts)
        auto margin = [&](int q, const float4 &k4) {
            return F::WIN ? __fmaf_ru(nxq[q], k4.x, __fmaf_ru(xmq[q], TB::ABSK, k4.y)) : __fmaf_ru(xmq[q], k4.x, k4.y);
        };
        bool pok[4]; // the thread's 4 pixels inside the image
#pragma unroll
        for (int q = 0; q < 4; ++q) pok[q] = pixel(wm * 32 + (q >> 1) * 16 + g + (q & 1) * 8) >= 0;
#pragma unroll
        for (int ni = 0; ni < 4; ++ni)
#pragma unroll
            for (int c = 0; c < 2; ++c) {
                const int j = 2 * ni + c, o = o0 + wn * 32 + ni * 8 + 2 * tq + c;
                if (o >= F::O) continue; // its bits stay 0
                const BnnChainK<F> ch = F::WIN ? BnnChainK<F>(o, b, chain, (const float *)(bnn_dsmem + T::CH_AT) + o - o0, T::BN)
                                               : BnnChainK<F>(o, b, chain);
                // (EXACT) {slope, aw, sgn, tt}: WIN's computed once a block
                const float4 k4 = !F::EXACT ? make_float4(0.0f, 0.0f, 0.0f, 0.0f)
                                  : F::WIN  ? ((const float4 *)(bnn_dsmem + T::CK_AT))[o - o0]
                                            : ch.exact_consts(0.0f);
                float tl[F::LV ? F::LV : 1]; // LV > 0: the channel's thresholds, signed
#pragma unroll
                for (int l = 0; l < F::LV; ++l) tl[l] = ((const float *)(bnn_dsmem + T::CH_AT))[(1 + l) * T::BN + o - o0];
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const float a = acc[q >> 1][ni][(q & 1) * 2 + c];
                    if (F::LV && !F::EXACT) { // codes: the thresholds below sgn * a (NaN: none, flagged)
                        if (!pok[q]) continue;
                        int n = 0;
#pragma unroll
                        for (int l = 0; l < F::LV; ++l) n += ch.sgn * a >= tl[l];
                        nan8[q] |= (unsigned)(a != a) << j;
#pragma unroll
                        for (int pl = 0; pl < F::QP; ++pl) one8[pl][q] |= (unsigned)(n >> pl & 1) << j;
                        continue;
                    }
                    if (F::LV) {
                        // d = rn(sgn * a - t) for each threshold t (sgn * a exact, one rounding:
                        // within 2^-24 of sgn * a - t), and every sum of [a - m, a + m] is on d's
                        // side of t where |d| >= m, m being (1 + 2^-20) times the bound
                        // (exact_consts); a NaN d or m fails the test: listed. The code is the
                        // number of d >= 0, and the thresholds rise with l (lower.c
                        // code_thresholds), so those are l < code: bit pl of the code is the XOR
                        // of [d >= 0] over the levels l with l + 1 a multiple of 2^pl, i.e. of
                        // their sign bits, complemented where they are an odd count (LV >> pl).
                        // (Counting them cost more: the w1a2 ResNet's stem, docs/perf.md stop 43.)
                        const float m = margin(q, k4);
                        if (F::LV == 3 && F::QP == 2) {
                            // 2-bit codes by two tests, not three: the middle level's d1 gives the
                            // high bit, and the level its side leaves open (t2 above t1, t0 below)
                            // the low one. Where |d1| > m every sum of the interval is on d1's side
                            // of t1, so also of the level not tested (the levels rise). |d| > m,
                            // not >=: a d of +-0 (whose sign bit need not be its side) is listed.
                            const float d1 = __fmaf_rn(k4.z, a, -tl[1]);
                            const bool below = (int)__float_as_uint(d1) < 0;
                            const float d2 = __fmaf_rn(k4.z, a, -(below ? tl[0] : tl[2]));
                            const bool near = !(fabsf(d1) > m) || !(fabsf(d2) > m);
                            one8[1][q] |= (unsigned)!below << j;
                            one8[0][q] |= (~__float_as_uint(d2) >> 31) << j;
                            und |= (unsigned)near << (8 * q + j); // its code's bits cleared below
                            continue;
                        }
                        bool near = false;
                        unsigned sx[F::QP] = {}; // per plane: the XOR of its levels' d, as bits
#pragma unroll
                        for (int l = 0; l < F::LV; ++l) {
                            const float d = __fmaf_rn(k4.z, a, -tl[l]);
                            near |= !(fabsf(d) >= m);
#pragma unroll
                            for (int pl = 0; pl < F::QP; ++pl)
                                if ((l + 1) % (1 << pl) == 0) sx[pl] ^= __float_as_uint(d);
                        }
#pragma unroll
                        for (int pl = 0; pl < F::QP; ++pl)
                            one8[pl][q] |= ((sx[pl] ^ (F::LV >> pl & 1 ? 0x80000000u : 0u)) >> 31) << j;
                        und |= (unsigned)near << (8 * q + j); // its code's bits cleared below
                        continue;
                    }
                    if (!F::EXACT) {
                        if (!pok[q]) continue;
                        const int bit = ch.mode == 3 || a != a ? ch.bit(a) : ch.bit_of_range(a, a);
                        one8[0][q] |= (unsigned)(bit == 1) << j;
                        nan8[q] |= (unsigned)(bit < 0) << j;
                        continue;
                    }
                    const float m = margin(q, k4);
                    bool b1, open; // every sum of [a - m, a + m] gives 1; they do not all give one bit
                    if (!F::MODE3 || ch.mode != 3) {
                        // [a - m, a + m] against t without branches, as the codes' levels
                        // above: d = rn(sgn * a - tt), on its side of tt where |d| >= m. A NaN
                        // sum or m: listed.
                        const float d = __fmaf_rn(k4.z, a, -k4.w);
                        open = !(fabsf(d) >= m);
                        b1 = !open && d >= 0.0f;
                    } else { // the chain at both ends (a NaN end gives -1: listed)
                        const int blo = ch.bit(__fsub_rd(a, m)), bhi = ch.bit(__fadd_ru(a, m));
                        open = blo < 0 || blo != bhi;
                        b1 = blo == 1 && !open;
                    }
                    one8[0][q] |= (unsigned)b1 << j; // a listed sum's bit is 0 here
                    und |= (unsigned)open << (8 * q + j);
                }
            }
        if (F::LV && F::EXACT) // a listed sum's code is 0 here: und's byte q is one8[.][q]'s bits
#pragma unroll
            for (int q = 0; q < 4; ++q)
#pragma unroll
                for (int pl = 0; pl < F::QP; ++pl) one8[pl][q] &= ~(und >> 8 * q);
#pragma unroll
        for (int q = 0; q < 4; ++q) und &= pok[q] ? ~0u : ~(0xffu << 8 * q); // pixels past the image: none listed
        // A sum of und's bit k: its tile pixel and its channel in the block's 64.
        auto und_pl = [&](int k) { return wm * 32 + (k >> 4) * 16 + g + (k >> 3 & 1) * 8; };
        auto und_ol = [&](int k) { return wn * 32 + (k >> 1 & 3) * 8 + 2 * tq + (k & 1); };
        unsigned over = 0; // und's sums past the list, which this thread recomputes below
        if (F::EXACT)
            while (und) { // the sums too close to call: the list (LISTQ) first
                const int k = __ffs(und) - 1;
                und &= und - 1;
                const int qi = atomicAdd(qlen, 1);
                if (qi < TB::LISTQ)
                    blist[1 + qi] = (unsigned)und_pl(k) << 8 | (unsigned)und_ol(k);
                else
                    over |= 1u << k;
            }
        // The lanes leave that loop one by one: met again here, the code below runs once a warp
        // and its shuffles take their converged form (without, ncu found the rest of the
        // epilogue run 2.2 times a warp, 14 lanes at a time, docs/perf.md stop 48).
        __syncwarp();
        // Bit j of a pixel's byte to channel bit (j >> 1) * 8 + 2 tq + (j & 1) of the warp's word.
        auto spread = [&](unsigned v) {
            return ((v & 3u) | (v & 0xcu) << 6 | (v & 0x30u) << 12 | (v & 0xc0u) << 18) << (2 * tq);
        };
        unsigned one[F::QP][4], nan[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
#pragma unroll
            for (int cp = 0; cp < F::QP; ++cp) one[cp][q] = spread(one8[cp][q]);
            nan[q] = F::EXACT ? 0u : spread(nan8[q]);
        }
        // words: [QP planes, then the NaN flags][BM][2]
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const int pl = wm * 32 + (q >> 1) * 16 + g + (q & 1) * 8;
#pragma unroll
            for (int cp = 0; cp < F::QP; ++cp) {
                one[cp][q] |= __shfl_xor_sync(0xffffffffu, one[cp][q], 1);
                one[cp][q] |= __shfl_xor_sync(0xffffffffu, one[cp][q], 2);
            }
            if (!F::EXACT) { // (EXACT: NaN flags only from the recomputed sums)
                nan[q] |= __shfl_xor_sync(0xffffffffu, nan[q], 1);
                nan[q] |= __shfl_xor_sync(0xffffffffu, nan[q], 2);
            }
            if (tq == 0) {
#pragma unroll
                for (int cp = 0; cp < F::QP; ++cp) words[cp * 2 * T::BM + pl * 2 + wn] = one[cp][q];
                if (F::NANF) words[F::QP * 2 * T::BM + pl * 2 + wn] = nan[q];
            }
        }
        __syncthreads();
        if (F::EXACT) {
            const int n = *qlen; // the same in every thread: a barrier or none
            if (tid == 0) blist[0] = (unsigned)(n < TB::LISTQ ? n : TB::LISTQ);
            if (n > TB::LISTQ) {
                while (over) {
                    const int k = __ffs(over) - 1, pl = und_pl(k), ol = und_ol(k), o = o0 + ol;
                    over &= over - 1;
                    const int code = BnnChainK<F>(o, b, chain).code(bnn_conv2d_exact_sum<F>(x, w32, o, pixel(pl)));
                    bnn_code_or<F>(words + pl * 2 + (ol >> 5), 2 * T::BM, 1u << (ol & 31), code);
                }
                __syncthreads();
            }
        }
        constexpr int NF = F::QP + F::NANF, PXW = F::OUTW * NF; // words a pixel
        unsigned *yb = (unsigned *)y + item * T::P * PXW;
        // A thread a pixel and plane: the tile's 2 words of it, one 8-byte store where a pixel's
        // words come in aligned pairs (OUTW even; o0 / 32 is). (A thread a word, the first form,
        // spent some 160 instructions a warp on the indices of its 3 stores: docs/perf.md stop 49.)
        for (int i = tid; i < T::BM * NF; i += 256) {
            const int f = i / T::BM, pl = i % T::BM, p = pixel(pl);
            if (p < 0) continue;
            const uint2 v = *(const uint2 *)(words + (f * T::BM + pl) * 2);
            unsigned *const d = yb + (bnn_i64)p * PXW + f * F::OUTW + o0 / 32;
            if (F::OUTW % 2 == 0) {
                *(uint2 *)d = v;
            } else {
                d[0] = v.x;
                if (o0 / 32 + 1 < F::OUTW) d[1] = v.y;
            }
        }
        constexpr int W0 = F::OP / 32, NZ = F::OUTW > W0 ? F::OUTW - W0 : 1; // NZ: words past OP's
        if (F::OUTW > W0 && o0 + T::BN == F::OP) // the last channel tile zeroes them
            for (int i = tid; i < T::BM * NZ * NF; i += 256) {
                const int pl = i / (NZ * NF), p = pixel(pl), r = i % (NZ * NF);
                if (p >= 0) yb[(bnn_i64)p * PXW + r / NZ * F::OUTW + W0 + r % NZ] = 0;
            }
        return;
    }
    float *yi = y + item * F::O * T::P;
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int p = pixel(wm * 32 + mi * 16 + g + (e >> 1) * 8);
                const int o = o0 + wn * 32 + ni * 8 + 2 * tq + (e & 1);
                if (p < 0 || o >= F::O) continue;
                float r = acc[mi][ni][e];
                if (F::BIAS) r = __fadd_rn(b[o], r);
                if (F::RELU) r = r < 0.0f ? 0.0f : r;
                yi[(bnn_i64)o * T::P + p] = r;
            }
}

// The conv: tiles blockIdx.x, + gridDim.x, ... of the batch's (item, pixel tile, channel tile),
// grid.x = batch * MT * NT, or (MANY) fewer blocks: then a block loads its weights once for all
// of its tiles (the launch of one a tile copied them 25,088 times at batch 256 for ResNet's
// stem, 1.1 GB from the L2). The lowering launches the same kernel with both grids.
template <class F>
__device__ __forceinline__ void bnn_conv2d_mma(int batch, const float *x, const unsigned short *w16, const float *b,
                                               float *y, const float *w32, const float *chain, unsigned *list) {
    typedef BnnConvMma<F> T;
    if (bnn_dyn_smem_size() < (unsigned)F::SMEM) __trap(); // launched with too little shared memory
    const bnn_i64 tiles = (bnn_i64)batch * T::MT * T::NT;
    if (!T::MANY && (bnn_i64)gridDim.x < tiles) __trap(); // fewer blocks than tiles that cannot share
    bool first = true;
    for (bnn_i64 tile = blockIdx.x; tile < tiles; tile += gridDim.x, first = false) {
        if (!first) __syncthreads(); // the last tile's epilogue is done with its shared memory
        bnn_conv2d_mma_tile<F>(tile, first, x, w16, b, y, w32, chain, list);
    }
}

// A recomputed sum's bit or code for channel o of pixel p of item's output (the conv wrote a 0
// there): its planes' bits set, a NaN (code < 0) sets its NaN flag where the output has them.
template <class F>
__device__ __forceinline__ void bnn_conv2d_bits_set(unsigned *y, bnn_i64 item, int p, int o, int code) {
    constexpr int PXW = F::OUTW * (F::QP + F::NANF); // words a pixel
    bnn_code_or<F>(y + (item * BnnConvMma<F>::P + p) * PXW + o / 32, F::OUTW, 1u << (o & 31), code);
}

// The sums an exact bnn_conv2d_mma (BITS, EXACT) left in its list: each recomputed in the
// reference's order (bnn_conv2d_exact_sum), through the chain, and its bit (or NaN flag) OR-ed
// into the conv's output word, which holds a 0 there. A warp a block of the conv, a lane an
// entry; launched right after the conv, batch * MT * NT warps. What bounds it is reading the
// patches of the listed sums again, mostly from DRAM (the conv's input has left the L2 by then):
// 0.130 ms at batch 256 for XNOR ResNet-18's 0.15 % of sums on an H100, the same with each
// channel's 49 taps loaded before their sums; the whole warp computing one sum's products at a
// time, then each lane adding its own from shared memory, took 0.387 ms (docs/perf.md).
template <class F>
__device__ __forceinline__ void bnn_conv2d_bits_fixup(int batch, const float *x, const float *b, unsigned *y,
                                                      const float *w32, const float *chain, const unsigned *list) {
    typedef BnnConvMma<F> T;
    typedef BnnConvBits<F> TB;
    static_assert(F::BITS && F::EXACT, "only the exact bits form lists sums");
    const bnn_i64 blk = ((bnn_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (blk >= (bnn_i64)batch * T::MT * T::NT) return;
    const unsigned *bl = list + blk * TB::LISTW;
    const unsigned count = bl[0];
    const bnn_i64 item = blk / (T::MT * T::NT);
    const int t = (int)(blk % (T::MT * T::NT)), mt = t % T::MT;
    for (int i = lane; i < TB::LISTQ; i += 32) { // the first entry's load in one round with the count's
        const unsigned e = bl[1 + i];
        if (i >= (int)count) return;
        const int o = t / T::MT * T::BN + (int)(e & 255), p = T::pixel(mt, (int)(e >> 8));
        const int code = BnnChainK<F>(o, b, chain).code(bnn_conv2d_exact_sum<F>(x + item * F::C * F::H * F::W, w32, o, p));
        bnn_conv2d_bits_set<F>(y, item, p, o, code);
    }
}

// The same recomputation at small batches, where bnn_conv2d_bits_fixup's lane an entry, loading
// 294 scattered floats one tap after another, is a chain of latencies (ncu, XNOR ResNet-18's stem
// at batch 1 on an H100: 10.4 us alone, 17,000 cycles for one warp, 70 % waiting on its loads).
// Here a block of 256 threads takes one tile: it stages the f32 weights [O][K] of the channel tile
// by 16-byte copies before the PDL wait (constants), then, in one round of copies spread over
// all its threads (16 bytes where it can, below), its input window [C][SR][SCA] (zeros outside
// the image) and its list
// (waiting for the list's count before the window cost a round trip: docs/perf.md stop 25); lane
// i < count of warp 0 then adds entry i's products from shared memory in the reference's order, a
// tap outside the image adding the window's zero times a finite weight, +-0 (which leaves every
// sum as skipping it does), without a test a tap. Staged-window
// stems of one channel tile (WIN, NT 1); grid batch * MT, or fewer blocks, each then taking
// several tiles with the weights staged once (codes' stems from batch 3: their lists of about 84
// sums a tile read their patches from shared memory instead of bnn_conv2d_bits_fixup's scattered
// loads); SMEM bytes (lower.c conv2d_mma_kernel computes the same).
template <class F> struct BnnFixWin {
    typedef BnnConvMma<F> T;
    static constexpr int K = F::C * F::KH * F::KW;
    // A window row holds SCA floats: the image columns from ix0 - sh on, sh = ix0 & 3 where the
    // copies are 16-byte chunks (image rows of whole chunks and x 16-byte aligned), else sh = 0
    // and a copy a float. It starts at float WAT, 16-byte aligned after the weights.
    static constexpr int NCH = (T::SC + 6) / 4, SCA = 4 * NCH, WAT = (F::O * K + 3) / 4 * 4;
    static constexpr int WINF = F::C * T::SR * SCA;
    static constexpr int SMEM = (WAT + WINF + BnnConvBits<F>::LISTW) * 4;
    static constexpr int SMEM_GW = (WINF + BnnConvBits<F>::LISTW) * 4; // without the weights (GW)
    static_assert(F::WIN && T::NT == 1, "a staged-window stem of one channel tile");
};
// A listed sum of bnn_conv2d_bits_fixwin: channel o's products over the tile's window from xt
// (the entry's first tap), in the reference's order (c, ky, kx). A tap outside the image reads
// the window's zero there: its product is +-0 (the weights are finite: lower.c fp16_conv_ok),
// and adding it leaves the sum as the reference's skipping it does (a sum from +0 is never -0,
// and s + +-0 == s for every other s). P >= 0: xt's parity (the window's rows start 16-byte
// aligned and are a multiple of 4 floats), and a kernel row's KW taps are read as pairs of
// floats from the even ones by 8-byte loads (4 loads for 7 taps, not 7). w: GW, [K/4][O][4] in
// global memory (the fixup step's P1: 16 bytes a lane and 4 k, a warp's lanes reading one row
// of channels' quads from the L1); else [O][K] in shared memory.
template <class F, bool GW, int P>
__device__ __forceinline__ float bnn_fixwin_sum(const float *xt, const float *w, int o) {
    typedef BnnConvMma<F> T;
    typedef BnnFixWin<F> FX;
    float sum = 0.0f;
    float4 wq = make_float4(0.0f, 0.0f, 0.0f, 0.0f); // GW: the quad of k
#pragma unroll
    for (int c = 0; c < F::C; ++c)
#pragma unroll
        for (int ky = 0; ky < F::KH; ++ky) {
            const float *const xr = xt + (c * T::SR + ky * F::DH) * FX::SCA;
            float xv[F::KW];
            if (P < 0) {
#pragma unroll
                for (int kx = 0; kx < F::KW; ++kx) xv[kx] = xr[kx * F::DW];
            } else {
                if (P == 1) xv[0] = xr[0];
#pragma unroll
                for (int i = P; i + 1 < F::KW; i += 2) {
                    const float2 v = *(const float2 *)(xr + i);
                    xv[i] = v.x, xv[i + 1] = v.y;
                }
                if ((F::KW - P) % 2) xv[F::KW - 1] = xr[F::KW - 1];
            }
#pragma unroll
            for (int kx = 0; kx < F::KW; ++kx) {
                const int k = (c * F::KH + ky) * F::KW + kx;
                if (GW && k % 4 == 0) wq = __ldg((const float4 *)w + k / 4 * F::O + o);
                const float wv = !GW ? w[o * FX::K + k] : k % 4 == 0 ? wq.x : k % 4 == 1 ? wq.y : k % 4 == 2 ? wq.z : wq.w;
                sum = __fadd_rn(sum, __fmul_rn(xv[kx], wv));
            }
        }
    return sum;
}
template <class F, bool GW = false>
__device__ __forceinline__ void bnn_conv2d_bits_fixwin(int batch, const float *x, const float *b, unsigned *y,
                                                       const float *w32, const float *chain, const unsigned *list) {
    typedef BnnConvMma<F> T;
    typedef BnnConvBits<F> TB;
    typedef BnnFixWin<F> FX;
    static_assert(F::BITS && F::EXACT, "only the exact bits form lists sums");
    extern __shared__ __align__(16) unsigned char bnn_dsmem[];
    constexpr int WAT = GW ? 0 : FX::WAT; // GW: no weights in shared memory
    if (bnn_dyn_smem_size() < (unsigned)(GW ? FX::SMEM_GW : FX::SMEM)) __trap(); // too little shared memory
    if (blockDim.x < TB::LISTQ) __trap();                                              // a thread an entry
    float *ws = (float *)bnn_dsmem, *win = ws + WAT;
    const unsigned *const ls = (const unsigned *)(win + FX::WINF); // the tile's list
    // the weights by 16-byte copies (w32 is 64-byte aligned in the blob), all in flight at once
    constexpr int W16 = GW ? 0 : F::O * FX::K / 4;
    for (int i = threadIdx.x; i < W16; i += blockDim.x) bnn_cp16(bnn_smem(ws) + 16 * i, w32 + 4 * i, 16);
    if (!GW)
        for (int i = 4 * W16 + threadIdx.x; i < F::O * FX::K; i += blockDim.x) ws[i] = w32[i];
    bnn_cp_commit();
    BNN_PDL_ENTER();
    // A tile's window in 16-byte chunks where the image's rows are whole chunks (below)
    const bool v4 = F::W % 4 == 0 && ((unsigned long long)x & 15) == 0;
    // tiles blockIdx.x, + gridDim.x, ... (the tile: item * MT + mt): the weights staged once
    bool first = true;
    for (bnn_i64 blk = blockIdx.x; blk < (bnn_i64)batch * T::MT; blk += gridDim.x, first = false) {
        if (!first) __syncthreads(); // the last tile's sums are done with the window and the list
        if (threadIdx.x < TB::LISTW)
            bnn_cp4((float *)ls + threadIdx.x, (const float *)list + blk * TB::LISTW + threadIdx.x, true);
        const bnn_i64 item = blk / T::MT;
        const int mt = (int)(blk % T::MT), iy0 = mt / T::TX * T::TH * F::SH - F::PT;
        const int ix0 = mt % T::TX * T::TW * F::SW - F::PL;
        const float *xi = x + item * F::C * F::H * F::W;
        // Its window, rows [C][SR], in 16-byte chunks where the image's rows are whole chunks:
        // a copy a float with the index arithmetic of each was 60 % of the kernel's instructions
        // (ncu, the w1a2 ResNet's stem at batch 256: docs/perf.md stop 33).
        const int sh = v4 ? ix0 & 3 : 0;
        if (v4) {
            for (int i = threadIdx.x; i < F::C * T::SR * FX::NCH; i += blockDim.x) { // consecutive threads on a row's chunks
                const int row = i / FX::NCH, ch = i % FX::NCH, iy = iy0 + row % T::SR, ix = ix0 - sh + 4 * ch;
                const bool in = (unsigned)iy < (unsigned)F::H && (unsigned)ix < (unsigned)F::W; // a chunk is in or out whole
                bnn_cp16(bnn_smem(win + row * FX::SCA + 4 * ch), xi + (in ? (row / T::SR * F::H + iy) * F::W + ix : 0),
                         in ? 16 : 0);
            }
        } else {
            for (int i = threadIdx.x; i < F::C * T::SR * T::SC; i += blockDim.x) { // consecutive threads on a row's floats
                const int row = i / T::SC, q = i % T::SC, iy = iy0 + row % T::SR, ix = ix0 + q;
                const bool in = (unsigned)iy < (unsigned)F::H && (unsigned)ix < (unsigned)F::W;
                bnn_cp4(win + row * FX::SCA + q, xi + (in ? (row / T::SR * F::H + iy) * F::W + ix : 0), in);
            }
        }
        bnn_cp_commit();
        bnn_cp_wait<0>();
        __syncthreads(); // the weights, the window and the list
        const int lane = threadIdx.x;
        if (lane >= min((int)ls[0], TB::LISTQ)) continue;
        const unsigned e = ls[1 + lane];
        const int pl = (int)(e >> 8), o = (int)(e & 255), ry = pl / T::TW * F::SH, rx = pl % T::TW * F::SW;
        if (pl >= T::BM || o >= F::O) continue; // not a list the conv wrote (bnnrun --profile-graph leaves it out)
        // With an even stride along x a tile's entries all start on floats of one parity (the
        // window's rows are whole 16-byte chunks): their taps from 8-byte loads (P)
        const float *const xt = win + ry * FX::SCA + sh + rx, *const wsum = GW ? w32 : ws;
        float sum;
        if constexpr (F::SW % 2 == 0 && F::DW == 1)
            sum = sh & 1 ? bnn_fixwin_sum<F, GW, 1>(xt, wsum, o) : bnn_fixwin_sum<F, GW, 0>(xt, wsum, o);
        else
            sum = bnn_fixwin_sum<F, GW, -1>(xt, wsum, o);
        bnn_conv2d_bits_set<F>(y, item, T::pixel(mt, pl), o, BnnChainK<F>(o, b, chain).code(sum));
    }
    bnn_cp_wait<0>(); // a block without a tile: no copy into shared memory outlives it
}

// bnn_conv2d_bits_fixwin for the larger batches: a tile a block of at least LISTQ threads, the
// weights [K/4][O][4] read from global memory (wt), not staged, so that more blocks fit an SM (the
// shared weights of the w1a2 ResNet's stem, 37.6 KB, allowed four; lower.c FIXWIN_GW_BATCH).
template <class F>
__device__ __forceinline__ void bnn_conv2d_bits_fixwin_gw(int batch, const float *x, const float *b, unsigned *y,
                                                          const float *wt, const float *chain, const unsigned *list) {
    bnn_conv2d_bits_fixwin<F, true>(batch, x, b, y, wt, chain, list);
}

#endif // BNN_FLOAT_OPS_CU
