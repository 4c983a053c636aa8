// float_tiles_emu.cc: the tiled float kernels of codegen/cuda/kernels/float_ops.cu
// (bnn_conv2d_tile, bnn_dense_tile, bnn_dense_few, bnn_dense_long) run without a GPU, driven by
// float_tiles_emu.py. The
// kernel templates are compiled as host C++ under a block emulator: one fiber per CUDA thread
// (tests/emu/emu_fiber.h), __syncthreads as the fibers' barrier, cp.async as a plain copy (so it checks indexing,
// tiling, staging and the float sequence, not the asynchrony: the GPU run does that), then
// every output is compared bit for bit with a plain loop in the reference order
// (ir/interp.c, runtime/rt_cpu.c); and bnn_pool (max and average pools over f32), bnn_pack and
// bnn_quantize_image on fixed shapes. float_tiles_emu.py writes tile.inc (the kernels' source)
// and cfgs.inc (bnncc's config structs for a set of models, and run_all).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "emu_fiber.h"

#define __device__
#define __forceinline__ inline
#define __align__(n)
#define __shared__
struct Dim {
    unsigned x, y, z;
};
static Dim threadIdx, blockIdx, gridDim; // threadIdx: the running fiber's
static EmuFiberBarrier block_barrier;
static inline void __syncthreads() { emu_fiber_barrier_wait(&block_barrier); }
[[noreturn]] static inline void __trap() { fprintf(stderr, "float_tiles_emu: __trap (a bad launch)\n"), abort(); }
// volatile: each product and sum rounded to float on its own, never contracted
static inline float __fmul_rn(float a, float b) {
    volatile float r = a * b;
    return r;
}
static inline float __fadd_rn(float a, float b) {
    volatile float r = a + b;
    return r;
}
static inline float __fdiv_rn(float a, float b) {
    volatile float r = a / b;
    return r;
}
static inline float __fsub_rn(float a, float b) {
    volatile float r = a - b;
    return r;
}
static inline float __int_as_float(int b) {
    float f;
    memcpy(&f, &b, 4);
    return f;
}
static inline float __uint_as_float(unsigned b) { return __int_as_float((int)b); }
static inline unsigned __float_as_uint(float f) {
    unsigned b;
    memcpy(&b, &f, 4);
    return b;
}
struct float4 {
    float x, y, z, w;
};
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
typedef long long bnn_i64;
alignas(128) unsigned char bnn_dsmem[1 << 22]; // the dynamic shared memory of the running block
static size_t smem_end;                        // one past the highest byte a copy wrote
static inline void bnn_cp4(float *dst, const float *src, bool ok) {
    const size_t end = (size_t)((unsigned char *)dst - bnn_dsmem) + 4;
    if (end > smem_end) smem_end = end;
    if (ok)
        memcpy(dst, src, 4); // bytes: the pooled dense copies bits this way
    else
        *dst = 0.0f;
}
#define BNN_PDL_ENTER() ((void)0) // launched plainly
// 16-byte copies address shared memory as offsets from bnn_dsmem (the GPU's 32-bit addresses)
static inline unsigned bnn_smem(const void *p) { return (unsigned)((const unsigned char *)p - bnn_dsmem); }
static inline void bnn_cp16(unsigned dst, const void *src, unsigned src_bytes) {
    const size_t end = (size_t)dst + 16;
    if (end > smem_end) smem_end = end;
    memset(bnn_dsmem + dst, 0, 16);
    memcpy(bnn_dsmem + dst, src, src_bytes);
}
static inline void bnn_cp_commit() {}
template <int N> static inline void bnn_cp_wait() {}
#include "tile.inc"
#include "ref_conv.h"

static void resume(unsigned tid) { threadIdx = {tid, 0, 0}; }
template <class Fn> static void run_thread(unsigned, void *fn) { (*(Fn *)fn)(); }
template <class Fn> static void launch(unsigned grid_x, unsigned grid_y, int threads, Fn fn) {
    gridDim = {grid_x, grid_y, 1};
    for (unsigned by = 0; by < grid_y; by++)
        for (unsigned bx = 0; bx < grid_x; bx++) {
            blockIdx = {bx, by, 0};
            emu_fiber_barrier_init(&block_barrier, (unsigned)threads);
            emu_fibers_run((unsigned)threads, run_thread<Fn>, &fn, resume);
        }
}

// Normal values with exact +0 and -0; with specials, one NaN, -inf and +inf somewhere.
static std::vector<float> random_floats(size_t n, std::mt19937 &g, bool specials) {
    std::normal_distribution<float> d(0.0f, 0.7f);
    std::uniform_real_distribution<float> u(0, 1);
    std::vector<float> v(n);
    for (auto &x : v) {
        const float r = u(g);
        x = r < 0.04f ? 0.0f : r < 0.06f ? -0.0f : d(g);
    }
    if (specials && n > 16) {
        v[g() % n] = NAN;
        v[g() % n] = -INFINITY;
        v[g() % n] = INFINITY;
    }
    return v;
}

static int compare(const char *name, const std::vector<float> &got, const std::vector<float> &ref, size_t smem,
                   size_t smem_given) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < got.size(); i++) {
        const bool same = std::isnan(got[i]) ? std::isnan(ref[i]) : memcmp(&got[i], &ref[i], 4) == 0;
        if (!same && bad++ == 0) first = i;
    }
    printf("%s %-44s %8zu outputs, %zu differ", bad || smem > smem_given ? "FAIL" : "ok  ", name, got.size(), bad);
    if (bad) printf(" (first at %zu: %a, reference %a)", first, got[first], ref[first]);
    if (smem > smem_given) printf("; shared memory written up to %zu bytes, the launch gives %zu", smem, smem_given);
    printf("\n");
    return bad || smem > smem_given;
}

// tpb: the launch's tiles a block (lower.c launches a MANY kernel with 1 and with CONV_TPB).
template <class F> static int run_conv2d(const char *name, int batch, int tpb = 1) {
    typedef BnnConvTile<F> T;
    std::mt19937 g(1);
    const int CG = F::C / F::G, OG = F::O / F::G;
    const auto x = random_floats((size_t)batch * F::C * F::H * F::W, g, true);
    const auto w = random_floats((size_t)F::O * CG * F::KH * F::KW, g, false), b = random_floats(F::O, g, false);
    // a fused chain's constants: factors with exact zeros (a division by 0 gives inf or NaN)
    const auto chain = random_floats((size_t)2 * (F::ST > 0 ? F::ST : 1) * F::O, g, false);
    std::vector<float> y((size_t)batch * F::O * F::OH * F::OW, 12345.0f), ref(y.size());
    for (int n = 0; n < batch; n++)
        for (int o = 0; o < F::O; o++)
            for (int oy = 0; oy < F::OH; oy++)
                for (int ox = 0; ox < F::OW; ox++) {
                    const float acc = ref_conv2d_sum<F>(x.data() + ((size_t)n * F::C + o / OG * CG) * F::H * F::W,
                                                        w.data() + (size_t)o * CG * F::KH * F::KW, CG, oy, ox);
                    float v = F::BIAS ? __fadd_rn(b[o], acc) : acc;
                    if (F::RELU) v = v < 0.0f ? 0.0f : v;
                    v = ref_chain_value(v, chain.data(), o, F::O, F::ST, F::DIVM, F::RELUM);
                    ref[(((size_t)n * F::O + o) * F::OH + oy) * F::OW + ox] = v;
                }
    smem_end = 0;
    // lower.c's grid: a block a tile (FLAT: OT * ceil(batch * W / BW) tiles, up to OT blocks more)
    const int blocks = F::FLAT ? T::OT + (batch * T::OT * F::OW + F::BW - 1) / F::BW : (batch * T::TILES + tpb - 1) / tpb;
    launch(blocks, 1, T::NT,
           [&] { bnn_conv2d_tile<F>(batch, x.data(), w.data(), F::BIAS ? b.data() : nullptr, y.data(),
                                              F::ST ? chain.data() : nullptr); });
    return compare(name, y, ref, smem_end, F::SMEM);
}

// bnn_dense_tile (a config with stages S), bnn_dense_long (k a thread and chunk, KPT) or
// bnn_dense_few (lower.c's kernel below batch 4).
template <class F> static void dense_kernel(int batch, const void *x, const float *w, const float *b, float *y) {
    if constexpr (requires { F::S; })
        bnn_dense_tile<F>(batch, x, w, b, y);
    else if constexpr (requires { F::KPT; })
        bnn_dense_long<F>(batch, x, w, b, y);
    else
        bnn_dense_few<F>(batch, x, w, b, y);
}

// The dense kernel over rows x [batch][K] (given to it as xin: x itself, or the bits it pools
// to x) against the reference loop: k in order, each product and sum rounded, then the bias.
template <class F>
static int check_dense(const char *name, int batch, const std::vector<float> &x, const void *xin, std::mt19937 &g) {
    const auto w = random_floats((size_t)F::N * F::K, g, false), b = random_floats(F::N, g, false);
    std::vector<float> y((size_t)batch * F::N, 12345.0f), ref(y.size());
    for (int m = 0; m < batch; m++)
        for (int n = 0; n < F::N; n++) {
            float acc = 0.0f;
            for (int k = 0; k < F::K; k++) acc = __fadd_rn(acc, __fmul_rn(x[(size_t)m * F::K + k], w[(size_t)n * F::K + k]));
            ref[(size_t)m * F::N + n] = F::BIAS ? __fadd_rn(b[n], acc) : acc;
        }
    smem_end = 0;
    launch((batch + F::BM - 1) / F::BM, (F::N + F::BN - 1) / F::BN, F::NT,
           [&] { dense_kernel<F>(batch, xin, w.data(), F::BIAS ? b.data() : nullptr, y.data()); });
    return compare(name, y, ref, smem_end, F::SMEM);
}

template <class F> static int run_dense(const char *name, int batch) {
    std::mt19937 g(2);
    // a NaN or inf in a row makes its every output NaN or inf: at batch 1 none, so that each
    // product and sum shows
    const auto x = random_floats((size_t)batch * F::K, g, batch > 1);
    return check_dense<F>(name, batch, x, x.data(), g);
}

// The dense kernels with a global average pool of bits before them (GS > 0): GS pixels of GW
// random words an item, pooled to (2 * ones - GS) / GS per channel as bnn_gap_bits.
template <class F> static int run_gapdense(const char *name, int batch) {
    std::mt19937 g(4);
    std::vector<unsigned> bits((size_t)batch * F::GS * F::GW);
    for (auto &v : bits) v = (unsigned)g();
    std::vector<float> x((size_t)batch * F::K);
    for (int m = 0; m < batch; m++)
        for (int k = 0; k < F::K; k++) {
            int ones = 0;
            for (int s = 0; s < F::GS; s++) ones += (bits[((size_t)m * F::GS + s) * F::GW + k / 32] >> (k % 32)) & 1u;
            x[(size_t)m * F::K + k] = __fdiv_rn((float)(2 * ones - F::GS), (float)F::GS);
        }
    return check_dense<F>(name, batch, x, bits.data(), g);
}

// bnn_pool<KH, KW> over every output of `batch` items against the CPU path's loop (rt_cpu.c
// run_pool): taps in row-major order, those outside the image skipped, a NaN wins the max, of +0
// and -0 the first seen stays, the average's divisor the real or the padded window.
template <int KH, int KW>
static int run_pool(const char *name, int batch, int c, int h, int w, int sh, int sw, int pt, int pl, int pb, int pr,
                    int include_pad, bool max) {
    const int oh = (h + pt + pb - KH) / sh + 1, ow = (w + pl + pr - KW) / sw + 1;
    std::mt19937 g(3);
    const auto x = random_floats((size_t)batch * c * h * w, g, true);
    std::vector<float> y((size_t)batch * c * oh * ow, 12345.0f), ref(y.size());
    for (int n = 0; n < batch; n++)
        for (int ch = 0; ch < c; ch++)
            for (int oy = 0; oy < oh; oy++)
                for (int ox = 0; ox < ow; ox++) {
                    int y0 = oy * sh - pt, x0 = ox * sw - pl, y1 = y0 + KH, x1 = x0 + KW;
                    const int padded = ((y1 < h + pb ? y1 : h + pb) - y0) * ((x1 < w + pr ? x1 : w + pr) - x0);
                    y0 = y0 < 0 ? 0 : y0, x0 = x0 < 0 ? 0 : x0, y1 = y1 < h ? y1 : h, x1 = x1 < w ? x1 : w;
                    float acc = max ? -INFINITY : 0.0f;
                    for (int iy = y0; iy < y1; iy++)
                        for (int ix = x0; ix < x1; ix++) {
                            const float v = x[(((size_t)n * c + ch) * h + iy) * w + ix];
                            if (!max)
                                acc = __fadd_rn(acc, v);
                            else if (v > acc || v != v)
                                acc = acc != acc ? acc : v;
                        }
                    if (!max) acc = __fdiv_rn(acc, (float)(include_pad ? padded : (y1 - y0) * (x1 - x0)));
                    ref[(((size_t)n * c + ch) * oh + oy) * ow + ox] = acc;
                }
    for (int n = 0; n < batch; n++)
        for (int j = 0; j < c * oh * ow; j++)
            bnn_pool<KH, KW>(n, j, x.data(), y.data(), c, h, w, sh, sw, pt, pl, pb, pr, oh, ow, include_pad, max);
    return compare(name, y, ref, 0, 0);
}

static int run_pools(int batch) {
    int bad = 0;
    bad += run_pool<3, 3>("maxpool 3x3/2 pad 1 (ResNet stem)", batch, 5, 17, 14, 2, 2, 1, 1, 1, 1, 0, true);
    bad += run_pool<2, 2>("avgpool 2x2/2 (Bi-Real downsample)", batch, 4, 10, 12, 2, 2, 0, 0, 0, 0, 0, false);
    bad += run_pool<3, 3>("avgpool 3x3/1 pad 1", batch, 3, 7, 6, 1, 1, 1, 1, 1, 1, 0, false);
    bad += run_pool<3, 3>("avgpool 3x3/1 pad 1, pads counted", batch, 3, 7, 6, 1, 1, 1, 1, 1, 1, 1, false);
    bad += run_pool<5, 3>("maxpool 5x3/(2,3), uneven pads", batch, 3, 11, 13, 2, 3, 2, 0, 1, 2, 0, true);
    bad += run_pool<5, 3>("avgpool 5x3/(2,3), uneven pads counted", batch, 3, 11, 13, 2, 3, 2, 0, 1, 2, 1, false);
    bad += run_pool<9, 9>("maxpool 9x9/3 pad 4 (not unrolled)", batch, 2, 20, 19, 3, 3, 4, 4, 4, 4, 0, true);
    bad += run_pool<9, 9>("avgpool 9x9/3 pad 4 (not unrolled)", batch, 2, 20, 19, 3, 3, 4, 4, 4, 4, 1, false);
    return bad;
}

// Words against their reference, one line of result.
static int compare_words(const char *name, const std::vector<unsigned> &y, const std::vector<unsigned> &ref) {
    size_t bad = 0;
    for (size_t i = 0; i < y.size(); i++) bad += y[i] != ref[i];
    printf("%s %-44s %8zu words, %zu differ\n", bad ? "FAIL" : "ok  ", name, y.size(), bad);
    return bad != 0;
}

// bnn_pack over every word of `batch` items of c channels x s pixels (words a pixel, padding
// words included) against the CPU path's rule (rt_cpu.c run_pack): bit = v > 0, or v == 0 with
// zero > 0; NaN and channels past c give 0 bits.
static int run_pack(const char *name, int batch, int c, int s, int words, int zero, int layout) {
    std::mt19937 g(4);
    const auto x = random_floats((size_t)batch * c * s, g, true);
    std::vector<unsigned> y((size_t)batch * s * words, 0xdeadbeefu), ref(y.size(), 0u);
    for (int n = 0; n < batch; n++)
        for (int p = 0; p < s; p++)
            for (int ch = 0; ch < c; ch++) {
                const float v = x[(size_t)n * c * s + (layout == 0 ? (size_t)ch * s + p : (size_t)p * c + ch)];
                if (v > 0.0f || (v == 0.0f && zero > 0)) ref[((size_t)n * s + p) * words + ch / 32] |= 1u << (ch % 32);
            }
    for (int n = 0; n < batch; n++)
        for (int j = 0; j < s * words; j++) bnn_pack(n, j, x.data(), y.data(), c, s, words, zero, layout);
    return compare_words(name, y, ref);
}

// bnn_quantize_image over every word of `batch` items of c channels x s pixels into `bits`
// planes of [s][ld] words (tails zero), against the CPU path's packing (rt_cpu.c
// run_quantize_image): code n = q - lo (NaN: 0) of each value, bit b of n into plane b at bit
// c % 32 of word c / 32. The codes themselves are bnn_quantize_one's (the lowbit tests check
// them against the CPU path).
static int run_quantize_image(const char *name, int batch, int c, int s, int bits, int lo, int hi, float scale) {
    const int ld = (c + 31) / 32, plane = (s * ld + 7) / 8 * 8;
    std::mt19937 g(6);
    const auto x = random_floats((size_t)batch * c * s, g, true);
    unsigned scale_bits;
    memcpy(&scale_bits, &scale, 4);
    std::vector<unsigned> y((size_t)batch * bits * plane, 0xdeadbeefu), ref(y.size(), 0u);
    for (int n = 0; n < batch; n++)
        for (int ch = 0; ch < c; ch++)
            for (int p = 0; p < s; p++) {
                const float q = bnn_quantize_one(x.data() + (size_t)n * c * s, ch * s + p, scale, 0.0f, lo, hi, 0);
                const unsigned code = q != q ? 0u : (unsigned)(long long)(q - (float)lo);
                for (int b = 0; b < bits; b++)
                    ref[((size_t)n * bits + b) * plane + (size_t)p * ld + ch / 32] |= ((code >> b) & 1u) << (ch % 32);
            }
    for (int n = 0; n < batch; n++)
        for (int j = 0; j < plane; j++)
            bnn_quantize_image(n, j, x.data(), y.data(), c, s, bits, ld, plane, lo, hi, 0, scale_bits, 0u);
    return compare_words(name, y, ref);
}

// bnn_dequantize4 (a quant step with dequant, 4 elements a thread) over `batch` items of k
// against the CPU path's value of each element (rt_cpu.c run_quantize): (q - zeropt) * scale,
// q = bnn_quantize_one's level.
static int run_dequantize4(const char *name, int batch, int k, int lo, int hi, float scale, float zeropt, int rounding) {
    std::mt19937 g(8);
    const auto x = random_floats((size_t)batch * k, g, true);
    unsigned sb, zb;
    memcpy(&sb, &scale, 4);
    memcpy(&zb, &zeropt, 4);
    std::vector<float> y(x.size(), 12345.0f), ref(x.size());
    for (size_t i = 0; i < x.size(); i++)
        ref[i] = __fmul_rn(__fsub_rn(bnn_quantize_one(x.data(), (int)i, scale, zeropt, lo, hi, rounding), zeropt), scale);
    for (int n = 0; n < batch; n++)
        for (int j = 0; j < k / 4; j++) bnn_dequantize4(n, j, x.data(), y.data(), k, lo, hi, rounding, sb, zb);
    return compare(name, y, ref, 0, 0);
}

// f32 -> bits and codes: the pack and quantize-to-image-planes steps.
static int run_packing(int batch) {
    int bad = 0;
    bad += run_pack("pack 64 ch x 13 px in 8 words (256-bit pixels), NCHW", batch, 64, 13, 8, 0, 0);
    bad += run_pack("pack 70 ch x 9 px, zero -> 1, NCHW", batch, 70, 9, 3, 1, 0);
    bad += run_pack("pack 5 ch x 11 px, NHWC", batch, 5, 11, 1, 0, 1);
    bad += run_pack("pack 96 ch x 4 px, zero -> 1, NHWC", batch, 96, 4, 4, 1, 1);
    bad += run_dequantize4("dequant 4 a thread, 0..3 / 2, round", batch, 6 * 44, 0, 3, 0.5f, 0.0f, 0);
    bad += run_dequantize4("dequant 4 a thread, -4..3, scale 0.3, zero pt 1, floor", batch, 4 * 27, -4, 3, 0.3f, 1.0f, 2);
    bad += run_quantize_image("quantize 64 ch x 13 px, 2 planes, 0..3", batch, 64, 13, 2, 0, 3, 0.25f);
    bad += run_quantize_image("quantize 70 ch x 9 px, 3 planes, -4..3", batch, 70, 9, 3, -4, 3, 0.3f);
    bad += run_quantize_image("quantize 5 ch x 11 px, 1 plane, 0..1", batch, 5, 11, 1, 0, 1, 1.0f);
    return bad;
}

#include "cfgs.inc" // the config structs and run_all(batch)

int main(int argc, char **argv) {
    int bad = 0;
    for (int i = 1; i < argc; i++) bad += run_all(atoi(argv[i])) + run_pools(atoi(argv[i])) + run_packing(atoi(argv[i]));
    printf("%s\n", bad ? "FAILED" : "all bit-identical");
    return bad != 0;
}
