// bconv.cu: binary 2D convolution (groups = 1) as an implicit GEMM on the bgemm path
// (mma.sync m16n8k256 .b1 AND.POPC only). GEMM row m = output pixel (n, oh, ow), GEMM
// column = output channel o, K = the KH*KW taps x CWP words of channels, tap-major.
//   X: NHWC-packed input: pixel (n, h, w) is CWP words at ((n*H + h)*W + w)*CWP, channel c =
//      bit c%32 of word c/32, bits past C zero; CWP a multiple of 4 (whole 16-byte chunks).
//   W: [O][KH][KW][CWP] words, same channel packing, rows BC_LDW words apart.
//   Y: one row per output pixel, NHWC: O int32 / f32, or O bits packed in BC_LDY words, which
//      is X for a next layer with CWP = BC_LDY. BC_EPI BNN_EPI_CHAIN (a float chain after the
//      dot, common.cu): f32 canonical NCHW in Y and / or bits as above in Yb (BC_LDB words).
// Zero padding is exact: a padded tap loads as zero words, so it adds nothing to popc(a AND w)
// nor to popc(a), and the dot over the valid taps only is
//     dot = 4*popc(a AND w) - 2*popc(a) - 2*popc(w over the valid taps) + C*(valid taps).
// The valid taps of a pixel form a rectangle kh in [h0,h1), kw in [w0,w1); popc(w) over it
// comes from the table P[(KH+1)][(KW+1)][O] of 2D prefix sums (bnn_conv_wprefix in common.cu
// computes it on the device; the host may too), 4 lookups for a border pixel, 1 inside.
// One padding (BC_PAD_ONE 1): a padded tap loads as C one-bits, i.e. +1 everywhere, so every
// pixel sees all KH*KW taps and only P[KH][KW] is needed.
// Fused 2x2 / stride 2 max pooling (BC_POOL 1, bit epilogue only, floor mode: an odd last
// output row / column is dropped): GEMM rows are ordered window by window, m = ((n*PH + ph)*PW
// + pw)*4 + 2*dy + dx for output pixel (2ph+dy, 2pw+dx), and the epilogue ORs the 4 bits (the
// max of the +-1 outputs) into output row (n, ph, pw); Y then has nb*PH*PW rows.
// Each inclusion defines one kernel named BC_NAME and #undefs its BC_* macros at the end.
#ifndef BNN_COMMON_CU
#include "common.cu"
#endif

#ifndef BNN_BCONV_ONCE
#define BNN_BCONV_ONCE
// Bits of channel word wi that hold real channels (C bits in all): ones there, zeros in the pad.
__device__ __forceinline__ unsigned bnn_chmask(int C, int wi) {
    const int b = C - 32 * wi;
    return b >= 32 ? 0xffffffffu : b <= 0 ? 0u : (1u << b) - 1u;
}
// GEMM row m -> top-left input tap (ih0, iw0) of its output pixel, and its image n.
template <int OH, int OW, int SH, int SW, int PT, int PL, bool POOL>
__device__ __forceinline__ void bnn_conv_pixel(int m, int &n, int &ih0, int &iw0) {
    int oh, ow;
    if (POOL) { // window-major: 4 consecutive rows are one 2x2 window
        constexpr int PH = OH / 2, PW = OW / 2;
        const int r = m % (PH * PW * 4), win = r / 4, q = r % 4;
        n = m / (PH * PW * 4);
        oh = win / PW * 2 + (q >> 1);
        ow = win % PW * 2 + (q & 1);
    } else {
        const int p = m % (OH * OW);
        n = m / (OH * OW);
        oh = p / OW;
        ow = p % OW;
    }
    ih0 = oh * SH - PT;
    iw0 = ow * SW - PL;
}
// The convolution's dot correction from the valid-tap rectangle of each output pixel.
template <int C, int H, int W, int O, int KH, int KW, int SH, int SW, int PT, int PL, int DH, int DW, int OH,
          int OW, bool ONE, bool POOL>
struct BnnConvCorr {
    const int *P; // [(KH+1)*(KW+1)][O], see above
    struct Row {
        int h0, h1, w0, w1;
        bool full;
    };
    typedef int Col;
    __device__ __forceinline__ Row row(int m) const {
        int n, ih0, iw0;
        bnn_conv_pixel<OH, OW, SH, SW, PT, PL, POOL>(m, n, ih0, iw0);
        Row r;
        r.h0 = r.h1 = r.w0 = r.w1 = 0;
#pragma unroll
        for (int k = 0; k < KH; ++k) { // ih = ih0 + k*DH grows with k: valid taps are a range
            r.h0 += ih0 + k * DH < 0;
            r.h1 += ih0 + k * DH < H;
        }
#pragma unroll
        for (int k = 0; k < KW; ++k) {
            r.w0 += iw0 + k * DW < 0;
            r.w1 += iw0 + k * DW < W;
        }
        r.h1 = r.h1 < r.h0 ? r.h0 : r.h1;
        r.w1 = r.w1 < r.w0 ? r.w0 : r.w1;
        r.full = ONE || (r.h0 == 0 && r.h1 == KH && r.w0 == 0 && r.w1 == KW);
        return r;
    }
    __device__ __forceinline__ int col(int c) const { return C * KH * KW - 2 * P[(KH * (KW + 1) + KW) * O + c]; }
    __device__ __forceinline__ int corr(const Row &r, int ci, int c) const {
        if (r.full) return ci;
        const int s = P[(r.h1 * (KW + 1) + r.w1) * O + c] - P[(r.h0 * (KW + 1) + r.w1) * O + c] -
                      P[(r.h1 * (KW + 1) + r.w0) * O + c] + P[(r.h0 * (KW + 1) + r.w0) * O + c];
        return C * (r.h1 - r.h0) * (r.w1 - r.w0) - 2 * s;
    }
};
#endif

#if !defined(BC_C) || !defined(BC_H) || !defined(BC_W) || !defined(BC_O) || !defined(BC_KH) || !defined(BC_KW)
#error "bconv.cu: define BC_C, BC_H, BC_W (input), BC_O (output channels), BC_KH, BC_KW (kernel)"
#endif
#ifndef BC_NAME
#define BC_NAME bconv
#endif
#ifndef BC_EPI
#define BC_EPI BNN_EPI_I32
#endif
#ifndef BC_SH
#define BC_SH 1
#endif
#ifndef BC_SW
#define BC_SW 1
#endif
#ifndef BC_PT
#define BC_PT 0
#endif
#ifndef BC_PL
#define BC_PL 0
#endif
#ifndef BC_PB
#define BC_PB BC_PT
#endif
#ifndef BC_PR
#define BC_PR BC_PL
#endif
#ifndef BC_DH
#define BC_DH 1
#endif
#ifndef BC_DW
#define BC_DW 1
#endif
#ifndef BC_PAD_ONE
#define BC_PAD_ONE 0
#endif
#ifndef BC_POOL
#define BC_POOL 0
#endif
#ifndef BC_CWP
#define BC_CWP ((BC_C + 127) / 128 * 4) // words per input pixel: C padded to a multiple of 128
#endif
#ifndef BC_LDW
#define BC_LDW (BC_KH * BC_KW * BC_CWP)
#endif
#ifndef BC_LDY
#if BC_EPI == BNN_EPI_THRESHOLD
#define BC_LDY ((BC_O + 31) / 32)
#else
#define BC_LDY BC_O
#endif
#endif
#ifndef BC_NST // the float chain (BNN_EPI_CHAIN): stages, divide mask, residual, f32 out, bit words
#define BC_NST 1
#endif
#ifndef BC_DIV
#define BC_DIV 0
#endif
#ifndef BC_RES
#define BC_RES 0
#endif
#ifndef BC_F32
#define BC_F32 1
#endif
#ifndef BC_LDB
#define BC_LDB 0
#endif
#ifndef BC_BM
#define BC_BM 128
#endif
#ifndef BC_BN
#define BC_BN 64
#endif
#ifndef BC_WM
#define BC_WM 2
#endif
#ifndef BC_WN
#define BC_WN 2
#endif
#ifndef BC_KC
#define BC_KC 4
#endif
#ifndef BC_STAGES
#define BC_STAGES 3
#endif

// Grid: (ceil(O/BC_BN), ceil(M/BC_BM)), M = nb*OH*OW (nb*PH*PW*4 with BC_POOL); block: BC_WM*BC_WN*32 threads; dynamic shared
// memory: BnnTile<...>::SMEM bytes (bnn_tile_smem() in kernels.h), checked on entry.
// P: the popc(w) prefix table above; ep0/ep1 as in bgemm.cu; nb_rt is the batch unless BC_NB
// fixes it. BC_EPI BNN_EPI_CHAIN (common.cu bnn_epilogue_chain): ep0 = the chain's parameters,
// ep1 = the residual (NCHW f32, or null), Y = the f32 result NCHW (or null), Yb = the bits.
// OH = (H + PT + PB - DH*(KH-1) - 1)/SH + 1, OW likewise.
extern "C" __global__ void __launch_bounds__(BC_WM *BC_WN * 32, 1)
    BC_NAME(const unsigned *__restrict__ X, const unsigned *__restrict__ Wt, const int *__restrict__ P,
            const void *__restrict__ ep0, const void *__restrict__ ep1, void *__restrict__ Y,
#if BC_EPI == BNN_EPI_CHAIN
            void *__restrict__ Yb,
#endif
            int nb_rt) {
    typedef BnnTile<BC_BM, BC_BN, BC_WM, BC_WN, BC_KC, BC_STAGES> Cfg;
    constexpr int C = BC_C, H = BC_H, W = BC_W, O = BC_O, KH = BC_KH, KW = BC_KW, CWP = BC_CWP;
    constexpr int SH = BC_SH, SW = BC_SW, PT = BC_PT, PL = BC_PL, DH = BC_DH, DW = BC_DW;
    constexpr int OH = (H + BC_PT + BC_PB - DH * (KH - 1) - 1) / SH + 1;
    constexpr int OW = (W + BC_PL + BC_PR - DW * (KW - 1) - 1) / SW + 1;
    constexpr int CC = CWP / 4, KCH = KH * KW * CC, LDW = BC_LDW;
    constexpr bool ONE = BC_PAD_ONE != 0, POOL = BC_POOL != 0;
    static_assert(CWP % 4 == 0 && CWP * 32 >= C, "BC_CWP: a multiple of 4 words holding C bits");
    static_assert(LDW % 4 == 0 && LDW >= KH * KW * CWP, "BC_LDW");
    static_assert(OH >= 1 && OW >= 1, "empty output");
    static_assert(!POOL || (OH >= 2 && OW >= 2), "pooling needs a 2x2 output at least");
    constexpr int PIX = POOL ? OH / 2 * (OW / 2) * 4 : OH * OW; // GEMM rows per image
#ifdef BC_NB
    const int M = BC_NB * PIX;
#else
    const int M = nb_rt * PIX;
#endif
    extern __shared__ __align__(128) unsigned char bnn_dsmem[];
    if (bnn_dyn_smem_size() < (unsigned)Cfg::SMEM) __trap(); // launched with too little shared memory
    int *rowpop = (int *)(bnn_dsmem + Cfg::S * Cfg::STAGE);
    const int tid = threadIdx.x, m0 = blockIdx.y * Cfg::BM, n0 = blockIdx.x * Cfg::BN;

    // Each thread's output pixels are fixed for the whole loop: resolve them once.
    long long aoff[Cfg::AIT]; // word offset of input pixel (n, ih0, iw0), may lie outside X
    int aih[Cfg::AIT], aiw[Cfg::AIT];
    bool aok[Cfg::AIT];
#pragma unroll
    for (int it = 0; it < Cfg::AIT; ++it) {
        const int m = m0 + (tid + it * Cfg::T) / Cfg::KC;
        aok[it] = m < M;
        int n;
        bnn_conv_pixel<OH, OW, SH, SW, PT, PL, POOL>(aok[it] ? m : 0, n, aih[it], aiw[it]);
        aoff[it] = (((long long)n * H + aih[it]) * W + aiw[it]) * CWP;
    }
    const unsigned *brow[Cfg::BIT];
    bool bok[Cfg::BIT];
#pragma unroll
    for (int it = 0; it < Cfg::BIT; ++it) {
        const int o = n0 + (tid + it * Cfg::T) / Cfg::KC;
        bok[it] = o < O;
        brow[it] = Wt + (long long)(bok[it] ? o : 0) * LDW;
    }
    auto load_a = [&](int it, int, int cg, unsigned dst) {
        const int tap = cg / CC, cc = cg % CC, kh = tap / KW, kw = tap % KW;
        const int ih = aih[it] + kh * DH, iw = aiw[it] + kw * DW;
        const bool live = aok[it] && cg < KCH, inside = (unsigned)ih < (unsigned)H && (unsigned)iw < (unsigned)W;
        if (ONE && live && !inside) {
            bnn_st16(dst, bnn_chmask(C, 4 * cc), bnn_chmask(C, 4 * cc + 1), bnn_chmask(C, 4 * cc + 2),
                     bnn_chmask(C, 4 * cc + 3));
        } else {
            const bool ok = live && inside;
            bnn_cp16(dst, X + (ok ? aoff[it] + (long long)(kh * DH * W + kw * DW) * CWP + cc * 4 : 0),
                     ok ? 16u : 0u);
        }
    };
    auto load_b = [&](int it, int, int cg, unsigned dst) {
        const bool ok = bok[it] && cg < KCH;
        bnn_cp16(dst, brow[it] + (ok ? cg * 4 : 0), ok ? 16u : 0u);
    };
    int acc[Cfg::MI][Cfg::NI][4];
    bnn_mainloop<Cfg>(bnn_dsmem, (KCH + Cfg::KC - 1) / Cfg::KC, load_a, load_b, acc, rowpop);
    BnnConvCorr<C, H, W, O, KH, KW, SH, SW, PT, PL, DH, DW, OH, OW, ONE, POOL> e{P};
#if BC_EPI == BNN_EPI_CHAIN
    static_assert(!POOL, "the float chain has no fused pooling");
    bnn_epilogue_chain<Cfg, O, OH * OW, BC_NST, BC_DIV, BC_RES, BC_F32 != 0, BC_LDB>(
        acc, rowpop, m0, n0, M, e, (const float *)ep0, (const float *)ep1, (float *)Y, (unsigned *)Yb);
#else
    bnn_epilogue<Cfg, BC_EPI, O, BC_LDY, POOL>(acc, rowpop, m0, n0, M, e, ep0, ep1, Y);
#endif
}

#undef BC_NAME
#undef BC_NB
#undef BC_C
#undef BC_H
#undef BC_W
#undef BC_O
#undef BC_KH
#undef BC_KW
#undef BC_SH
#undef BC_SW
#undef BC_PT
#undef BC_PL
#undef BC_PB
#undef BC_PR
#undef BC_DH
#undef BC_DW
#undef BC_PAD_ONE
#undef BC_POOL
#undef BC_CWP
#undef BC_LDW
#undef BC_LDY
#undef BC_EPI
#undef BC_NST
#undef BC_DIV
#undef BC_RES
#undef BC_F32
#undef BC_LDB
#undef BC_BM
#undef BC_BN
#undef BC_WM
#undef BC_WN
#undef BC_KC
#undef BC_STAGES
