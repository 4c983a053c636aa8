// conv2d_mma_emu.cc: the float stem's tensor-core kernel (float_ops.cu bnn_conv2d_mma, exact
// bits or codes out) run without a GPU, driven by conv2d_mma_emu.py. The kernel is compiled as host C++
// under tests/codegen/bconv_emu.h's block emulator (a fiber per CUDA thread, warp
// collectives through per-warp slots, cp.async queued until its wait), with common.cu's PTX
// helpers mapped to emulated ones: mma.m16n8k16 f16 -> f32 computes each tile's 16 products
// exactly and rounds their sum with the accumulator once (one of the orders the kernel's error
// bound allows), fp16 rounding through _Float16, directed roundings through fesetround. Every
// output bit and NaN flag must equal a plain loop's: the sum in the reference order (rt_cpu.c),
// the bias, the chain's stages as blob_conv2d_chain_value rounds them. So the window staging,
// the k order of p1, the fragments, the margins, the queue of sums too close to call and the
// bit packing are checked here, and the fixup kernels after the conv that recompute the sums a
// block listed (bnn_conv2d_bits_fixup; for a stem of one channel tile bnn_conv2d_bits_fixwin and
// its larger batches' form bnn_conv2d_bits_fixwin_gw, whose words must equal fixwin's); the GPU run (codegen_e2e_gpu) checks the real
// tensor cores. The inf and NaN inputs must fill some block's list (the rest then recomputed
// in the block), so that both ways are taken.
// conv2d_mma_emu.py writes mma.inc (the kernel's source) and cfgs.inc (bnncc's config structs
// and run_all).
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "bconv_emu.h"

#define _Static_assert static_assert // blob.h is C11
extern "C" {
#include "blob.h" // blob_round: the CPU path's rounding, the reference's
}

extern "C" {
alignas(128) unsigned char bnn_dsmem[EMU_DSMEM];
}

#define __noinline__ __attribute__((noinline))

// ---------------------------------------------------------------- what the kernel needs of CUDA
static float emu_rounded(int mode, double exact) { // exact: a value a double holds exactly
    const int old = fegetround();
    fesetround(mode);
    volatile float r = (float)exact;
    fesetround(old);
    return r;
}
inline float __fmul_ru(float a, float b) { return emu_rounded(FE_UPWARD, (double)a * (double)b); }
inline float __fadd_ru(float a, float b) { return emu_rounded(FE_UPWARD, (double)a + (double)b); }
inline float __fsub_rd(float a, float b) { return emu_rounded(FE_DOWNWARD, (double)a - (double)b); }
static float emu_fma(int mode, float a, float b, float c) {
    const int old = fegetround();
    fesetround(mode);
    volatile float r = fmaf(a, b, c);
    fesetround(old);
    return r;
}
inline float __fmaf_ru(float a, float b, float c) { return emu_fma(FE_UPWARD, a, b, c); }
inline float __fsqrt_ru(float a) { return emu_rounded(FE_UPWARD, std::sqrt((double)a)); }
inline float __fmaf_rd(float a, float b, float c) { return emu_fma(FE_DOWNWARD, a, b, c); }
// the quantizer of a stem with codes out (BnnChainK::code)
inline float __fsub_rn(float a, float b) {
    volatile float r = a - b;
    return r;
}
inline float __uint_as_float(unsigned b) { return __int_as_float((int)b); }
inline unsigned __float_as_uint(float f) {
    unsigned b;
    memcpy(&b, &f, 4);
    return b;
}
// bnn_conv2d_bits_fixwin's 4-byte cp.async (float_ops.cu, outside mma.inc): landed at once
inline void bnn_cp4(float *dst, const float *src, bool ok) { *dst = ok ? *src : 0.0f; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int atomicAdd(int *p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline unsigned atomicOr(unsigned *p, unsigned v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }

static unsigned short emu_f16_bits(float v) {
    const _Float16 h = (_Float16)v;
    unsigned short u;
    memcpy(&u, &h, 2);
    return u;
}
// From a table of every half's value: the conversion is a library call (most of the test's time).
static double emu_f16_value(unsigned half) {
    static float value[65536];
    static bool filled;
    if (!filled) {
        for (unsigned i = 0; i < 65536; i++) {
            const unsigned short u = (unsigned short)i;
            _Float16 h;
            memcpy(&h, &u, 2);
            value[i] = (float)h;
        }
        filled = true;
    }
    return value[half & 0xffffu];
}
inline unsigned emu_f16x2(float lo, float hi) { return (unsigned)emu_f16_bits(hi) << 16 | emu_f16_bits(lo); }
inline float emu_f16_rest(float v) {
    const _Float16 h = (_Float16)v;
    return v - (float)h;
}
inline float emu_f16_float(unsigned short h) { return (float)emu_f16_value(h); }
// mma.sync m16n8k16 f32.f16.f16.f32 in the register layout of common.cu's bnn_hmma_f16.
inline void emu_hmma_f16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    const unsigned f[6] = {a[0], a[1], a[2], a[3], b0, b1};
    const unsigned(*s)[8] = emu_exchange(EMU_MMA, f, 6);
    const int g = (int)(threadIdx.x % 32) >> 2, t = (int)(threadIdx.x % 32) & 3;
    auto A = [&](int r, int k) { // lane 4(r % 8) + (k % 8) / 2, register a0..a3, half k % 2
        const unsigned w = s[4 * (r % 8) + (k % 8) / 2][1 + (r >= 8) + 2 * (k >= 8)];
        return emu_f16_value(k % 2 ? w >> 16 : w & 0xffffu);
    };
    auto B = [&](int k, int n) {
        const unsigned w = s[4 * n + (k % 8) / 2][1 + 4 + (k >= 8)];
        return emu_f16_value(k % 2 ? w >> 16 : w & 0xffffu);
    };
    for (int i = 0; i < 4; i++) {
        const int r = g + 8 * (i >> 1), n = 2 * t + (i & 1);
        double sum = d[i];
        for (int k = 0; k < 16; k++) sum += A(r, k) * B(k, n);
        d[i] = (float)sum;
    }
}

#include "common_emu.h"
typedef long long bnn_i64;
#include "mma.inc"
#include "ref_conv.h"

// ---------------------------------------------------------------- one model's stem

// The kernels' operands, in the launch's arguments (EmuArgs of bconv_emu.h, reused; Yb the list).
template <class F> static void emu_call(const EmuArgs &a) {
    bnn_conv2d_mma<F>(a.nb, (const float *)a.X, (const unsigned short *)a.W, (const float *)a.ep0, (float *)a.Y,
                      (const float *)a.R, (const float *)a.ep1, (unsigned *)a.Yb);
}
template <class F> static void emu_fixup(const EmuArgs &a) {
    bnn_conv2d_bits_fixup<F>(a.nb, (const float *)a.X, (const float *)a.ep0, (unsigned *)a.Y, (const float *)a.R,
                             (const float *)a.ep1, (const unsigned *)a.Yb);
}
template <class F> static void emu_fixwin(const EmuArgs &a) {
    if constexpr (F::WIN && BnnConvMma<F>::NT == 1)
        bnn_conv2d_bits_fixwin<F>(a.nb, (const float *)a.X, (const float *)a.ep0, (unsigned *)a.Y, (const float *)a.R,
                                  (const float *)a.ep1, (const unsigned *)a.Yb);
}

template <class F> static void emu_fixwin_gw(const EmuArgs &a) { // R: the weights [K/4][O][4]
    if constexpr (F::WIN && BnnConvMma<F>::NT == 1)
        bnn_conv2d_bits_fixwin_gw<F>(a.nb, (const float *)a.X, (const float *)a.ep0, (unsigned *)a.Y,
                                     (const float *)a.R, (const float *)a.ep1, (const unsigned *)a.Yb);
}

static std::vector<unsigned char> read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "conv2d_mma_emu: cannot open %s\n", path);
        exit(2);
    }
    std::vector<unsigned char> v;
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) v.insert(v.end(), buf, buf + n);
    fclose(f);
    return v;
}

// The expected words of item n: each sum in the reference order, then the bias and the stages,
// each operation rounded on its own; the bit (LV > 0: the code's QP planes, the quantizer's
// level index), and (NANF) the NaN flag.
template <class F>
static std::vector<unsigned> expected(const float *x, int batch, const float *w32, const float *bias,
                                      const float *chain) {
    constexpr int P = F::OH * F::OW, PXW = F::OUTW * (F::QP + F::NANF);
    std::vector<unsigned> y((size_t)batch * P * PXW, 0);
    for (int n = 0; n < batch; n++)
        for (int p = 0; p < P; p++)
            for (int o = 0; o < F::O; o++) {
                const float s = ref_conv2d_sum<F>(x + (size_t)n * F::C * F::H * F::W,
                                                  w32 + (size_t)o * F::C * F::KH * F::KW, F::C, p / F::OW, p % F::OW);
                const float v = ref_chain_value(F::BIAS ? __fadd_rn(bias[o], s) : s, chain, o, F::O, F::STAGES,
                                                F::DIV, F::RELUS);
                unsigned *px = &y[((size_t)n * P + p) * PXW];
                int code = v != v ? -1 : v > 0.0f || (v == 0.0f && F::ZERO);
                if (F::LV) {
                    float scale, zero;
                    const unsigned sb = F::QSCALE, zb = F::QZERO;
                    memcpy(&scale, &sb, 4);
                    memcpy(&zero, &zb, 4);
                    volatile float d = v / scale; // each operation rounded on its own
                    float q = blob_round(d + zero, F::QROUND);
                    q = q < (float)F::QLO ? (float)F::QLO : q > (float)F::QHI ? (float)F::QHI : q;
                    code = q != q ? -1 : (int)(q - (float)F::QLO);
                }
                if (code < 0) {
                    if (F::NANF) px[F::QP * F::OUTW + o / 32] |= 1u << (o % 32);
                } else {
                    for (int pl = 0; pl < F::QP; pl++)
                        if (code >> pl & 1) px[pl * F::OUTW + o / 32] |= 1u << (o % 32);
                }
            }
    return y;
}

// Input kind 3: patches whose sums' error in the kernel is the weights' fp16 rounding, x_i =
// s sgn(w_i - hi(w_i)) on every tap, and whose sums lie just past one of their channel's
// thresholds (a bit's t, a code's level), by a quarter of that error, on the side away from
// where the error moves them: where the MMAs leave the weights' lo plane out (BnnConvBits::TERMS
// 2) and the bound did not cover it (exact_consts' dlo), those sums would be decided wrong.
// Patches of output pixels inside the image that do not overlap, channels in turn; returns how
// many were set.
template <class F> static int craft_weight_rounding(float *x, int batch, const float *w32, const float *chain) {
    constexpr int K = F::C * F::KH * F::KW, SPY = ((F::KH - 1) * F::DH + F::SH) / F::SH;
    constexpr int SPX = ((F::KW - 1) * F::DW + F::SW) / F::SW;
    const float *rows = chain + 2 * F::STAGES * F::O; // ||w||_2, then t and mode, or LV thresholds and the sign
    int n = 0, pick = 0;
    for (int item = 0; item < batch; item++)
        for (int oy = 0; oy < F::OH; oy += SPY)
            for (int ox = 0; ox < F::OW; ox += SPX) {
                const int iy0 = oy * F::SH - F::PT, ix0 = ox * F::SW - F::PL;
                if (iy0 < 0 || iy0 + (F::KH - 1) * F::DH >= F::H || ix0 < 0 || ix0 + (F::KW - 1) * F::DW >= F::W)
                    continue;
                const int o = pick % F::O, j = pick / F::O % (F::LV ? F::LV : 1);
                pick++;
                float t;
                if (F::LV) {
                    t = rows[(1 + F::LV) * F::O + o] * rows[(1 + j) * F::O + o];
                } else {
                    const float mode = rows[2 * F::O + o];
                    if (mode != 1.0f && mode != -1.0f) continue;
                    t = rows[F::O + o];
                }
                const float *w = w32 + (size_t)o * K;
                int sg[K];                // sgn(d_i), d = w - hi(w)
                double a = 0.0, d1 = 0.0; // sum sgn(d_i) w_i and ||d||_1
                for (int k = 0; k < K; k++) {
                    const double d = (double)w[k] - (double)(float)(_Float16)w[k];
                    sg[k] = (d > 0) - (d < 0);
                    a += sg[k] * (double)w[k];
                    d1 += std::fabs(d);
                }
                if (!std::isfinite(t) || t == 0.0f || a == 0.0 || d1 == 0.0) continue;
                const double s0 = t / a, s = (t + (s0 > 0 ? 0.25 : -0.25) * std::fabs(s0) * d1) / a;
                if (!(std::fabs(s) > 1e-6 && std::fabs(s) < 1e3)) continue;
                for (int k = 0; k < K; k++) {
                    const int c = k / (F::KH * F::KW), ky = k / F::KW % F::KH, kx = k % F::KW;
                    x[(((size_t)item * F::C + c) * F::H + iy0 + ky * F::DH) * F::W + ix0 + kx * F::DW] =
                        (float)(s * sg[k]);
                }
                n++;
            }
    return n;
}

// Runs the stem on four kinds of input (normal values with exact zeros; small integers, whose
// sums meet the dyadic weights' thresholds; normal values with inf, NaN and values past fp16's
// range, whose pixels' sums the kernel lists; kind 3 above) at batch 2; the
// weights window WTS holds w32, the bias, p1 and the chain at the given offsets.
template <class F>
static int run(const char *name, const char *wts_path, long long w_at, long long b_at, long long p1_at,
               long long p1_bytes, long long chain_at, int tpb, // tpb: the launch's tiles a block
               bool win_fix) { // the lists recomputed by bnn_conv2d_bits_fixwin (the small batches')
    typedef BnnConvMma<F> T;
    static_assert(F::BITS && F::EXACT, "the emulator checks the exact bits form");
    const std::vector<unsigned char> wts = read_file(wts_path);
    const float *w32 = (const float *)(wts.data() + w_at), *bias = F::BIAS ? (const float *)(wts.data() + b_at) : 0;
    const float *chain = (const float *)(wts.data() + chain_at);
    // p1 copied to a 16-byte aligned buffer of its own: cp.async's source (emu_global)
    std::vector<unsigned> w16((size_t)(p1_bytes + 3) / 4);
    memcpy(w16.data(), wts.data() + p1_at, (size_t)p1_bytes);
    if ((uintptr_t)w16.data() % 16) {
        fprintf(stderr, "conv2d_mma_emu: p1 buffer not 16-byte aligned\n");
        return 1;
    }
    const int batch = 2;
    constexpr int P = F::OH * F::OW, PXW = F::OUTW * (F::QP + F::NANF);
    std::mt19937 g(7);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    int bad = 0;
    for (int kind = 0; kind < 4; kind++) {
        std::vector<float> x((size_t)batch * F::C * F::H * F::W);
        for (auto &v : x) v = kind == 1 ? (float)((int)(g() % 5) - 2) : g() % 50 == 0 ? 0.0f : nd(g);
        const int crafted = kind == 3 ? craft_weight_rounding<F>(x.data(), batch, w32, chain) : 0;
        if (kind == 2) // and values past fp16's 65504: 65510 (fp16 65504, finite) and -7e4 (fp16 -inf)
            for (int i = 0; i < 10; i++) {
                const float big[5] = {INFINITY, -INFINITY, NAN, 65510.0f, -7e4f};
                x[g() % x.size()] = big[i % 5];
            }
        std::vector<unsigned> y((size_t)batch * P * PXW, 0xdeadbeefu);
        constexpr int LW = BnnConvBits<F>::LISTW, BLOCKS = T::MT * T::NT;
        std::vector<unsigned> list((size_t)batch * BLOCKS * LW, 0xdeadbeefu);
        EmuArgs args = {};
        args.X = (const unsigned *)x.data();
        args.W = w16.data();
        args.ep0 = bias;
        args.ep1 = chain;
        args.R = w32;
        args.Y = y.data();
        args.Yb = list.data();
        args.nb = batch;
        emu_global_base[0] = w16.data();
        emu_global_bytes[0] = (size_t)p1_bytes;
        emu_nglobal = 1;
        static char what[256];
        snprintf(what, sizeof what, "%s, input %d", name, kind);
        emu_what = what;
        const unsigned long long overrun =
            emu_launch(emu_call<F>, args, (batch * BLOCKS + tpb - 1) / tpb, 1, 256, F::SMEM);
        long listed = 0, full = 0; // entries in the lists; blocks whose list is full (their rest in their queue)
        for (int i = 0; i < batch * BLOCKS; i++) {
            const unsigned n = list[(size_t)i * LW];
            if (n > (unsigned)BnnConvBits<F>::LISTQ) emu_fail("a list's count", (int)n);
            listed += n, full += n == (unsigned)BnnConvBits<F>::LISTQ;
        }
        unsigned long long fix_overrun = 0;
        size_t differ4 = 0; // fixwin's window a float a copy: the input one float past 16-byte alignment
        size_t differg = 0; // bnn_conv2d_bits_fixwin_gw's words against fixwin's
        if constexpr (F::WIN && T::NT == 1) {
            if (win_fix) {
                const std::vector<unsigned> y_conv = y;
                std::vector<float> x4(x.size() + 4);
                float *const xs = x4.data() + ((uintptr_t)x4.data() % 16 ? 0 : 1);
                memcpy(xs, x.data(), x.size() * 4);
                emu_global_base[1] = wts.data(); // its weights' 16-byte copies
                emu_global_bytes[1] = wts.size();
                emu_global_base[2] = x.data();   // its window's (16-byte chunks where W % 4 == 0)
                emu_global_bytes[2] = x.size() * 4;
                emu_nglobal = 3;
                if ((uintptr_t)x.data() % 16 || (uintptr_t)xs % 16 == 0) {
                    fprintf(stderr, "conv2d_mma_emu: the inputs' alignment is not the one intended\n");
                    return 1;
                }
                fix_overrun = emu_launch(emu_fixwin<F>, args, (batch * BLOCKS + tpb - 1) / tpb, 1, 256,
                                         BnnFixWin<F>::SMEM);
                std::vector<unsigned> y4 = y_conv;
                EmuArgs a4 = args;
                a4.X = (const unsigned *)xs;
                a4.Y = y4.data();
                fix_overrun += emu_launch(emu_fixwin<F>, a4, (batch * BLOCKS + tpb - 1) / tpb, 1, 256,
                                          BnnFixWin<F>::SMEM);
                for (size_t i = 0; i < y.size(); i++) differ4 += y4[i] != y[i];
                // the larger batches' form: a tile a block of 128 threads, the weights [K/4][O][4]
                // (lower.c: zeros past K)
                constexpr int K = F::C * F::KH * F::KW, K4 = (K + 3) / 4;
                std::vector<float> wt((size_t)K4 * F::O * 4);
                for (int o = 0; o < F::O; o++)
                    for (int k = 0; k < K; k++) wt[((size_t)(k / 4) * F::O + o) * 4 + k % 4] = w32[(size_t)o * K + k];
                std::vector<unsigned> yg = y_conv;
                EmuArgs ag = args;
                ag.Y = yg.data();
                ag.R = wt.data();
                fix_overrun += emu_launch(emu_fixwin_gw<F>, ag, batch * BLOCKS, 1, 128, BnnFixWin<F>::SMEM_GW);
                for (size_t i = 0; i < y.size(); i++) differg += yg[i] != y[i];
            }
        }
        if (!win_fix) emu_launch(emu_fixup<F>, args, (batch * BLOCKS + 7) / 8, 1, 256, 0);
        const std::vector<unsigned> want = expected<F>(x.data(), batch, w32, bias, chain);
        size_t differ = 0, first = 0;
        for (size_t i = 0; i < y.size(); i++)
            if (y[i] != want[i] && differ++ == 0) first = i;
        differ += differ4 + differg;
        const char *kinds[] = {"normal", "integers", "inf and NaN", "w rounding"};
        // an inf or NaN makes every sum of the patches it is in non-finite: some blocks then
        // list LISTQ sums and recompute the rest themselves, both ways taken; the crafted sums
        // of kind 3 are listed (their bound holds the weights' rounding)
        const bool ways = (kind != 2 || full > 0) && (kind != 3 || listed >= crafted);
        printf("%s %-34s %-12s WIN %d %s: %zu words, %zu differ, %ld sums listed, %ld lists full",
               differ || overrun || fix_overrun || !ways ? "FAIL" : "ok  ", name, kinds[kind], F::WIN, win_fix ? "fixwin+gw" : "fixup   ", y.size(), differ, listed, full);
        if (kind == 3) printf(", %d sums set on a threshold", crafted);
        if (differ4) printf(" (%zu of them between fixwin's 16-byte and 4-byte window copies)", differ4);
        if (differg) printf(" (%zu of them between fixwin's and fixwin_gw's words)", differg);
        if (differ > differ4 + differg)
            printf(" (first: word %zu of pixel %zu, %08x, expected %08x)", first % PXW, first / PXW, y[first], want[first]);
        if (overrun || fix_overrun)
            printf("; %llu bytes written past the launch's shared memory", overrun + fix_overrun);
        printf("\n");
        bad += differ || overrun || fix_overrun || !ways;
    }
    return bad;
}

#include "cfgs.inc" // the config structs and run_all()

int main() {
    const int bad = run_all();
    printf("%s\n", bad ? "FAILED" : "all bits and codes equal");
    return bad != 0;
}
