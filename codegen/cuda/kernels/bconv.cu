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
// Fused 2x2 / stride 2 max pooling (BC_POOL 1 or 2, bit epilogue only, floor mode: an odd last
// output row / column is dropped): GEMM rows are ordered window by window, m = ((n*PH + ph)*PW
// + pw)*4 + 2*dy + dx for output pixel (2ph+dy, 2pw+dx), and the epilogue ORs the 4 bits (the
// max of the +-1 outputs) into output row (n, ph, pw); Y then has nb*PH*PW rows. BC_POOL 2 is
// a max-pool of the accumulators before the threshold: the same OR where dir >= 0, an AND of
// the bits where dir < 0 (common.cu bnn_epilogue).
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
// GEMM row m -> its output pixel (oh, ow) and its image n.
template <int OH, int OW, bool POOL> __device__ __forceinline__ void bnn_conv_out_pixel(int m, int &n, int &oh, int &ow) {
    if (POOL) { // window-major: 4 consecutive rows are one 2x2 window
        constexpr int PH = POOL ? OH / 2 : 1, PW = POOL ? OW / 2 : 1;
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
}
// GEMM row m -> top-left input tap (ih0, iw0) of its output pixel, and its image n.
template <int OH, int OW, int SH, int SW, int PT, int PL, bool POOL>
__device__ __forceinline__ void bnn_conv_pixel(int m, int &n, int &ih0, int &iw0) {
    int oh, ow;
    bnn_conv_out_pixel<OH, OW, POOL>(m, n, oh, ow);
    ih0 = oh * SH - PT;
    iw0 = ow * SW - PL;
}
// Along one axis of a convolution (input N, kernel K, stride S, leading pad P, dilation D, NO
// outputs) the valid kernel range [lo, hi) of output o is [0, K) except for the first A outputs
// (o*S < P) and the last B (the kernel runs past N): classes o < A, then A for every full
// output, then A+1.. for the last B; when that leaves no full output between them, class = o.
// (kernels.h bnn_axis_classes and bnn_axis_band_range mirror it for bnncc's tables.)
template <int N, int K, int S, int P, int D, int NO> struct BnnAxisBands {
    static constexpr int A = (P + S - 1) / S < NO ? (P + S - 1) / S : NO;
    static constexpr int F = N + P - (K - 1) * D; // o >= ceil(F / S): the kernel runs past N
    static constexpr int FO = F <= 0 ? 0 : (F + S - 1) / S;
    static constexpr int B = FO >= NO ? 0 : NO - FO;
    static constexpr bool SMALL = A + 1 + B >= NO;
    static constexpr int NCLS = SMALL ? NO : A + 1 + B;
    static __device__ __forceinline__ int cls(int o) { return SMALL || o < A ? o : o >= NO - B ? A + 1 + o - (NO - B) : A; }
    // The valid kernel range of output o: the taps k with o*S - P + k*D inside [0, N).
    static __device__ __forceinline__ void range(int o, int &lo, int &hi) {
        lo = hi = 0;
#pragma unroll
        for (int k = 0; k < K; ++k) { // the input index grows with k: the valid taps are a range
            lo += o * S - P + k * D < 0;
            hi += o * S - P + k * D < N;
        }
        hi = hi < lo ? lo : hi;
    }
};
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
        int n, oh, ow;
        bnn_conv_out_pixel<OH, OW, POOL>(m, n, oh, ow);
        Row r;
        BnnAxisBands<H, KH, SH, PT, DH, OH>::range(oh, r.h0, r.h1);
        BnnAxisBands<W, KW, SW, PL, DW, OW>::range(ow, r.w0, r.w1);
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
// The dot correction of BnnConvCorr from a table in shared memory, one entry per (row class,
// column class, column of the block): bnncc builds it (kernels.h bnn_halo_tables), the halo
// kernel (BC_HALO) copies its block's, then a correction is one shared load, with no per-output
// branch or P lookups.
template <int C, int H, int W, int O, int KH, int KW, int SH, int SW, int PT, int PL, int DH, int DW, int OH,
          int OW, bool ONE, bool POOL, int BN>
struct BnnConvCorrT {
    typedef BnnAxisBands<H, KH, SH, PT, DH, OH> AH;
    typedef BnnAxisBands<W, KW, SW, PL, DW, OW> AW;
    static constexpr int NHC = ONE ? 1 : AH::NCLS, NWC = ONE ? 1 : AW::NCLS, ENTRIES = NHC * NWC * BN;
    const int *T; // T[(hc*NWC + wc)*BN + c - n0], shared memory
    typedef int Row;
    typedef int Col;
    // The class part of row(): the class of output pixel (oh, ow), times BN.
    static __device__ __forceinline__ Row row_at(int oh, int ow) {
        return ONE ? 0 : (AH::cls(oh) * NWC + AW::cls(ow)) * BN;
    }
    __device__ __forceinline__ Row row(int m) const {
        if (ONE) return 0;
        int n, oh, ow;
        bnn_conv_out_pixel<OH, OW, POOL>(m, n, oh, ow);
        return row_at(oh, ow);
    }
    __device__ __forceinline__ int col(int) const { return 0; }
    __device__ __forceinline__ int corr(const Row &r, int, int c) const { return T[r + c]; }
};
// Halo tiles (BC_HALO): tile row r -> output pixel (th, tw) inside a TH x TW tile. With POOL
// the rows go window by window (4 consecutive rows = one 2x2 window), else row-major.
template <int TH, int TW, bool POOL> __device__ __forceinline__ void bnn_tile_rc(int r, int &th, int &tw) {
    if (POOL) {
        const int wi = r >> 2, q = r & 3;
        th = wi / (TW / 2) * 2 + (q >> 1);
        tw = wi % (TW / 2) * 2 + (q & 1);
    } else {
        th = r / TW;
        tw = r % TW;
    }
}
// Halo row stride in 16-byte slots: the smallest >= hw congruent to `want` mod 8 (ldmatrix
// reads 8 rows; 8 slots apart mod 8 are 8 different bank groups). kernels.h mirrors it.
__host__ __device__ constexpr int bnn_halo_ws(int hw, int want) { return hw + ((want - hw) % 8 + 8) % 8; }
// The epilogue's row map of one halo tile (image n, output origin oh0, ow0): GEMM row of tile
// row rl in bconv's row order, or -1 outside the output (OHE x OWE: the pooled part with POOL).
template <int TH, int TW, int OH, int OW, bool POOL> struct BnnHaloRows {
    int n, oh0, ow0;
    __device__ __forceinline__ int operator()(int rl) const {
        constexpr int OHE = POOL ? OH / 2 * 2 : OH, OWE = POOL ? OW / 2 * 2 : OW;
        int th, tw;
        bnn_tile_rc<TH, TW, POOL>(rl, th, tw);
        const int oh = oh0 + th, ow = ow0 + tw;
        if (oh >= OHE || ow >= OWE) return -1;
        if (POOL) return ((n * (OH / 2) + (oh >> 1)) * (OW / 2) + (ow >> 1)) * 4 + (oh & 1) * 2 + (ow & 1);
        return (n * OH + oh) * OW + ow;
    }
};

// ---------------- the halo kernel's bit epilogue (BC_EPI threshold, no pool: BnnHaloBits)
// A threshold needs dot >= t (dir >= 0) or dot <= t (dir < 0), dot = 4*acc - 2*popc(a) + corr
// (above). With U = corr - t (dir >= 0) or corr - t - 1 (dir < 0), x = 4*acc - 2*popc(a) + U
// gives the bit as the sign of x: !(x < 0) for dir >= 0, x < 0 for dir < 0. So an output costs
// an add of its row's -2*popc(a), one of U, and one funnel shift that moves x's sign into the
// lane's byte of bits, where the generic epilogue (common.cu) loaded t and dir, added the
// correction, compared and set a bit at a computed position. For that the B rows are permuted
// in each group of 32 channels (bnn_halo_brow), so that the 8 values a lane holds of a group
// (n8 tiles u = 0..3, columns 2t, 2t+1) are 8 consecutive channels, 8t..8t+7: bits 8t.. of the
// output word, the lane's byte, stored as it is. U comes from a table of (row class, column)
// that the block builds (t clamped to [-KMAX-1, KMAX+1], KMAX = C*KH*KW, which decides every
// dot the same and keeps U small); a column past N gets U = -2^30 with dir >= 0: bit 0.
// RESW (the thresholds' row 1 where the residual bit is 1): x1 = x + D, D = U1 - U0 per column
// (the class cancels), and each bit taken from x or x1 by the residual byte.
// RESD (a threshold by a residual dot, BC_RESD > 0): the threshold depends on a second dot of
// the same output pixel, dot1 of a 1x1 convolution over K1 = BC_RESD channels (an XNOR ResNet's
// downsample, whose float value only this conv adds), through a row of K1 + 1 thresholds a
// channel in shared memory, int16 T[c][(dot1 + K1) / 2] (bnncc: resd_thresholds in lower.c).
// U then holds corr - [dir < 0] alone (t = 0), and the kernel folds the threshold into the
// accumulator before this epilogue (bnn_resd_fold), which then reads acc as 4*acc - T.

// B row (within the block's BN) of block channel cl: cl = 8t + 2u + j is column 2t + j of n8
// tile u of its 32-channel group.
__host__ __device__ constexpr int bnn_halo_brow(int cl) {
    return (cl & ~31) | ((cl >> 1) & 3) << 3 | ((cl >> 3) & 3) << 1 | (cl & 1);
}
template <class E, int C, int KK, int N, int BN, int RESW> struct BnnHaloBits {
    static constexpr int NQ = BN / 32;
    // Its table (kernels.h bnn_halo_tables, with the thresholds): U0 [classes][BN], then D [BN].
    // The lane's bits of group q whose threshold row `row` has dir >= 0 (and those past N).
    static __device__ __forceinline__ unsigned positive(const int *dir, int n0, int q, int t, int row) {
        unsigned m = 0;
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            const int c = n0 + 32 * q + 8 * t + k;
            m |= (c >= N || dir[row * N + c] >= 0 ? 1u : 0u) << k;
        }
        return m;
    }
};
// One tile's bits (MI m16 tiles of rows, 4*NQ n8 tiles): tile row rl is output pixel (oh0, ow0)
// + bnn_tile_rc(rl) of image n. u: the table (shared memory), pos0 / pos1: positive() of
// threshold rows 0 / 1, R: the residual bits (RESW words a pixel). Y: LDY words a pixel.
// RESD: acc holds 4*acc - T (bnn_resd_fold).
template <class B, class E, int TH, int TW, int OH, int OW, int N, int BN, int LDY, int RESW, bool RESD, int MI>
__device__ __forceinline__ void bnn_halo_bits(const int (&acc)[MI][4 * B::NQ][4], const int *rowpop, const int *u,
                                              int n, int oh0, int ow0, int n0, const unsigned (&pos0)[B::NQ],
                                              const unsigned (&pos1)[B::NQ], unsigned *__restrict__ Y,
                                              const unsigned *__restrict__ R) {
    constexpr int NQ = B::NQ;
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int rl = mi * 16 + g + 8 * h;
            int th, tw;
            bnn_tile_rc<TH, TW, false>(rl, th, tw);
            const int oh = oh0 + th, ow = ow0 + tw;
            const bool rok = oh < OH && ow < OW;
            const long long row = ((long long)n * OH + oh) * OW + ow;
            const int *ur = u + E::row_at(rok ? oh : 0, rok ? ow : 0) + 8 * t;
            const int ra = -2 * rowpop[rl];
            unsigned rw[RESW ? NQ : 1];
#pragma unroll
            for (int q = 0; q < (RESW ? NQ : 0); ++q)
                rw[q] = rok && n0 / 32 + q < RESW ? R[row * RESW + n0 / 32 + q] : 0u;
            unsigned char *y = (unsigned char *)(Y + row * LDY) + t;
#pragma unroll
            for (int q = 0; q < NQ; ++q) {
                int uv[8], dv[8];
                bnn_ld16(bnn_smem(ur + 32 * q), *(unsigned(*)[4])uv);
                bnn_ld16(bnn_smem(ur + 32 * q + 4), *(unsigned(*)[4])(uv + 4));
                if (RESW) {
                    bnn_ld16(bnn_smem(u + E::ENTRIES + 32 * q + 8 * t), *(unsigned(*)[4])dv);
                    bnn_ld16(bnn_smem(u + E::ENTRIES + 32 * q + 8 * t + 4), *(unsigned(*)[4])(dv + 4));
                }
                unsigned s0 = 0, s1 = 0; // bit k: the sign of channel 8t + k's x (x1)
#pragma unroll
                for (int k = 7; k >= 0; --k) {
                    const int a = acc[mi][4 * q + (k >> 1)][2 * h + (k & 1)];
                    const int x = (RESD ? a : 4 * a) + ra + uv[k];
                    s0 = __funnelshift_l((unsigned)x, s0, 1);
                    if (RESW) s1 = __funnelshift_l((unsigned)(x + dv[k]), s1, 1);
                }
                unsigned bits = s0 ^ pos0[q];
                if (RESW) {
                    const unsigned r = rw[RESW ? q : 0] >> 8 * t & 0xffu;
                    bits = (bits & ~r) | ((s1 ^ pos1[q]) & r);
                }
                if (rok && n0 / 32 + q < LDY) y[4 * (n0 / 32 + q)] = (unsigned char)bits;
            }
            // Words past the last column block (a padded LDY): zeroed by the last block.
            constexpr int NBX = (N + BN - 1) / BN, W0 = NBX * BN / 32;
            if (LDY > W0 && (int)blockIdx.x == NBX - 1 && rok)
                for (int wd = W0 + t; wd < LDY; wd += 4) Y[row * LDY + wd] = 0u;
        }
}
// RESD: a channel's row of thresholds in int16 entries, K1 + 1 rounded up to 2 mod 8: 4 bytes
// past a multiple of 16, so that the rows of channels 8 apart, which a lookup's lanes read at
// once (8 pixels each, their entries near the row's middle), start 8 banks apart (kernels.h
// bnn_resd_row mirrors it).
__host__ __device__ constexpr int bnn_resd_row(int k1) { return (k1 + 1 + 5) / 8 * 8 + 2; }
// RESD: dot1 of each accumulator's pixel and channel by MMAs over a1 (the tile rows' words of R
// at the 1x1 conv's pixels, RCH k256 steps) and the block's B fragments w1f (bnncc-made, in
// bnn_halo_brow's order: n8 tile ni, step ch, lane: 2 words), one n8 tile at a time, and its
// threshold folded in: acc = 4*acc - T[tb[c] + 2*and - popc(a1)], tb[c] the channel's row offset
// in tj plus K1 - popc(w1_c), so the index is the row's plus (dot1 + K1) / 2. One n8 tile's
// dot1 at a time keeps the registers of a second set of accumulators free.
template <int MI, int NI, int RCH>
__device__ __forceinline__ void bnn_resd_fold(int (&acc)[MI][NI][4], const unsigned (&a1)[RCH][MI][4],
                                              const unsigned *__restrict__ w1f, const short *tj, const int *tb) {
    const int lane = threadIdx.x & 31, t = lane & 3;
    int tbv[NI / 4][8]; // tb of the lane's channels 32q + 8t + k
#pragma unroll
    for (int q = 0; q < NI / 4; ++q) {
        bnn_ld16(bnn_smem(tb + 32 * q + 8 * t), *(unsigned(*)[4])tbv[q]);
        bnn_ld16(bnn_smem(tb + 32 * q + 8 * t + 4), *(unsigned(*)[4])(tbv[q] + 4));
    }
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
        int pa[4] = {0, 0, 0, 0}; // popc(a1) of rows g (pa[0]) and g + 8 (pa[2])
#pragma unroll
        for (int ch = 0; ch < RCH; ++ch) bnn_bmma(pa, a1[ch][mi], 0xffffffffu, 0xffffffffu);
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
            int d[4] = {0, 0, 0, 0};
#pragma unroll
            for (int ch = 0; ch < RCH; ++ch) {
                const unsigned *f = w1f + ((ni * RCH + ch) * 32 + lane) * 2;
                bnn_bmma(d, a1[ch][mi], f[0], f[1]);
            }
            // accumulator r: row g + 8 (r >> 1), channel 32 (ni / 4) + 8t + 2 (ni % 4) + (r & 1)
#pragma unroll
            for (int r = 0; r < 4; ++r)
                acc[mi][ni][r] = 4 * acc[mi][ni][r] - tj[tbv[ni >> 2][2 * (ni & 3) + (r & 1)] + 2 * d[r] - pa[r & 2]];
        }
    }
}
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
#ifndef BC_RESW // > 0: the residual is NHWC-packed bits (+-1), BC_RESW words a pixel
#define BC_RESW 0
#endif
#ifndef BC_RESD // > 0: a threshold by a residual dot (halo bits only): the 1x1 conv's K1 = BC_RESD
#define BC_RESD 0  // channels over R (BC_RESD_H x BC_RESD_W pixels of BC_RESD_CWP words, strides
#endif             // BC_RESD_SH, BC_RESD_SW; BnnHaloBits above)
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
#ifndef BC_HALO // 1: the halo-tile kernel below (each warp tiles of BC_TH x BC_TW output pixels)
#define BC_HALO 0
#endif
#ifndef BC_MINB // halo kernel: blocks per SM the registers must allow
#define BC_MINB 3
#endif
#ifndef BC_TH
#define BC_TH 4
#endif
#ifndef BC_TW
#define BC_TW 4
#endif

// The layer's epilogue (BC_EPI), the same call in both kernels below: `rows` maps tile rows to
// GEMM rows (an int row offset, or the halo kernel's BnnHaloRows); the kernel's acc, rowpop,
// n0, M, e, ep0, ep1, Y, Yb, O, OH, OW in scope. #undef'd at the end with the BC_* macros.
#if BC_EPI == BNN_EPI_CHAIN
#define BC_EPILOGUE(rows)                                                                                       \
    bnn_epilogue_chain<Cfg, O, OH * OW, BC_NST, BC_DIV, BC_RES, BC_F32 != 0, BC_LDB, BC_RESW>(                  \
        acc, rowpop, rows, n0, M, e, (const float *)ep0, (const float *)ep1, (float *)Y, (unsigned *)Yb)
#elif BC_RESW > 0 // a threshold by a residual of bits (BNN_EPI_THRESHOLD): R, the kernel's argument
#define BC_EPILOGUE(rows)                                                                                       \
    bnn_epilogue<Cfg, BC_EPI, O, BC_LDY, BC_POOL, BC_RESW>(acc, rowpop, rows, n0, M, e, ep0, ep1, Y,            \
                                                           (const unsigned *)R)
#else
#define BC_EPILOGUE(rows) bnn_epilogue<Cfg, BC_EPI, O, BC_LDY, BC_POOL>(acc, rowpop, rows, n0, M, e, ep0, ep1, Y)
#endif
#if BC_EPI == BNN_EPI_CHAIN && BC_POOL
#error "bconv.cu: the float chain has no fused pooling"
#endif
#if BC_RESD > 0 && !(BC_HALO && BC_EPI == BNN_EPI_THRESHOLD && !BC_POOL && BC_RESW == 0)
#error "bconv.cu: BC_RESD is the halo kernel's threshold without a pool or BC_RESW"
#endif
// The halo kernel's threshold without a pool takes its own epilogue (BnnHaloBits, bnn_halo_bits)
// instead: B rows permuted, a table of U, the lane's byte of signs. #undef'd with the rest.
#define BC_HALO_BITS (BC_EPI == BNN_EPI_THRESHOLD && !BC_POOL)

#if BC_HALO
// The halo-tile kernel. The implicit GEMM below issues one 16-byte cp.async per (output pixel,
// tap, channel chunk); this kernel loads each input chunk once per tile instead:
// - A block owns BN output channels (blockIdx.x); its weight slice, all KH*KW taps x CCR =
//   ceil(C/128) real 16-byte channel chunks x BN rows, is loaded into shared memory once.
// - Every warp owns its own output tiles of TH x TW pixels (16 or 32 GEMM rows) x all BN
//   channels: warp w of block y takes tiles y*NW + w, + gridDim.y*NW, ... (NW = BC_WM warps;
//   BC_WN must be 1; any grid.y works). Per tile it loads the input halo its taps touch, HH x
//   HWD pixels x CCR chunks, one cp.async each, into one of its two buffers while the other
//   tile computes, and every tap reads it through ldmatrix with per-lane row addresses.
// - K runs over the items (tap, chunk) of real chunks, two per m16n8k256 MMA (k128 halves from
//   different taps): C = 64 costs 5 MMAs per 9 taps, not 9. An odd last item is paired with a
//   zero line of B.
// - popc(a) of each row is one more MMA per m16 tile and item pair, against a B of all ones
//   (its k128 half past an odd last item zero).
// - The border correction of a dot is one shared load from a table of the block's columns per
//   class of border position (BnnConvCorrT): no per-output branch, no P lookups. bnncc builds
//   the tables (kernels.h bnn_halo_tables); P holds them, one per block of BN columns.
// The only block-wide barrier is the one after the weights and the table; a warp's tiles need
// __syncwarp only, so one warp's loads, MMAs and epilogue overlap the others'. (A kernel with
// block tiles, four barriers a tile and popcount passes, ran latency-bound at 25 % occupancy
// with an epilogue of P lookups per output: docs/kernels.md.) Padding (zero / one), the
// epilogues and the fused pool are the implicit GEMM's; only the row order inside a tile
// differs (bnn_tile_rc), the epilogue maps tile rows to GEMM rows (BnnHaloRows). Shared
// memory: bnn_halo_smem() in kernels.h.
extern "C" __global__ void __launch_bounds__(BC_WM * 32, BC_MINB)
    BC_NAME(const unsigned *__restrict__ X, const unsigned *__restrict__ Wt, const int *__restrict__ P,
            const void *__restrict__ ep0, const void *__restrict__ ep1, void *__restrict__ Y,
#if BC_EPI == BNN_EPI_CHAIN
            void *__restrict__ Yb,
#elif BC_RESW > 0 || BC_RESD > 0
            const void *__restrict__ R,
#endif
            int nb_rt) {
    constexpr int C = BC_C, H = BC_H, W = BC_W, O = BC_O, KH = BC_KH, KW = BC_KW, CWP = BC_CWP;
    constexpr int SH = BC_SH, SW = BC_SW, PT = BC_PT, PL = BC_PL, DH = BC_DH, DW = BC_DW;
    constexpr int OH = (H + BC_PT + BC_PB - DH * (KH - 1) - 1) / SH + 1;
    constexpr int OW = (W + BC_PL + BC_PR - DW * (KW - 1) - 1) / SW + 1;
    constexpr int LDW = BC_LDW;
    constexpr bool ONE = BC_PAD_ONE != 0, POOL = BC_POOL != 0;
    // RESD: the residual dot's 1x1 conv over R (K1 channels, RCWP words a pixel, RCH k256 steps)
    // and, after each block's correction table in P, the blocks' threshold rows and bases (RSZ
    // bytes each), then the blocks' B fragments of its weights (lower.c set_halo_kernel).
    constexpr int RK = BC_RESD;
#if BC_RESD > 0
    constexpr int RH = BC_RESD_H, RW = BC_RESD_W, RSH = BC_RESD_SH, RSW = BC_RESD_SW, RCWP = BC_RESD_CWP;
    static_assert(BC_HALO_BITS && BC_RESW == 0 && RCWP % 4 == 0 && RCWP * 32 >= RK, "BC_RESD");
    static_assert((OH - 1) * RSH < RH && (OW - 1) * RSW < RW, "BC_RESD: the 1x1 conv's output is this conv's");
    constexpr int RCH = (RCWP + 7) / 8;
#endif
    constexpr unsigned RSZ = RK ? BC_BN * bnn_resd_row(RK) * 2 + BC_BN * 4 : 0;
    constexpr int TH = BC_TH, TW = BC_TW, BM = TH * TW, BN = BC_BN, NW = BC_WM, T = NW * 32;
    static_assert(BC_WN == 1, "BC_HALO: BC_WM warps of one column each (BC_WN 1)");
    typedef BnnTile<BM, BN, 1, 1, 8, 2> Cfg; // one warp's tile, as the epilogue sees it
    constexpr int MI = Cfg::MI, NI = Cfg::NI;
    constexpr int CCR = (C + 127) / 128, KK = KH * KW, NIT = KK * CCR, NPAIR = (NIT + 1) / 2;
    constexpr int FH = KH == 1 ? SH : 1, FW = KW == 1 ? SW : 1, SHE = SH / FH, SWE = SW / FW;
    constexpr int HH = (TH - 1) * SHE + (KH - 1) * DH + 1, HWD = (TW - 1) * SWE + (KW - 1) * DW + 1;
    constexpr int HWS = SHE == 1 ? bnn_halo_ws(HWD, POOL ? 4 : TW * SWE) : HWD, NHP = HH * HWS;
    constexpr int OHE = POOL ? OH / 2 * 2 : OH, OWE = POOL ? OW / 2 * 2 : OW;
    constexpr int TX = (OWE + TW - 1) / TW, TYX = (OHE + TH - 1) / TH * TX;
    // Per warp: two halo buffers and the popc(a) of its tile rows.
    typedef BnnConvCorrT<C, H, W, O, KH, KW, SH, SW, PT, PL, DH, DW, OH, OW, ONE, POOL, BN> E;
    // BITS: the threshold's own epilogue (BnnHaloBits above), its table one row longer.
    constexpr bool BITS = BC_HALO_BITS;
    typedef BnnHaloBits<E, C, KH * KW, O, BN, BC_RESW> HB;
    constexpr unsigned BSZ = NIT * BN * 16, ASZ = CCR * NHP * 16, WSZ = 2 * ASZ + 4 * BM, TSZ = (E::ENTRIES + BN) * 4;
    constexpr unsigned SMEM = BSZ + 16 + NW * WSZ + TSZ + RSZ;
    constexpr int NBX = (O + BN - 1) / BN;
    static_assert(CWP % 4 == 0 && CWP * 32 >= C, "BC_CWP: a multiple of 4 words holding C bits");
    static_assert(LDW % 4 == 0 && LDW >= KH * KW * CWP, "BC_LDW");
    static_assert(OH >= 1 && OW >= 1, "empty output");
    static_assert(!POOL || (OH >= 2 && OW >= 2 && TH % 2 == 0 && TW % 2 == 0), "pooling: 2x2 output, even tile");
    static_assert(BM == 16 || BM == 32, "BC_HALO: warp tiles of 16 or 32 pixels");
    static_assert(BN % 16 == 0 && (BC_EPI != BNN_EPI_THRESHOLD && BC_LDB == 0 || BN % 32 == 0), "BC_BN");
    constexpr int PIX = POOL ? OH / 2 * (OW / 2) * 4 : OH * OW; // GEMM rows per image
#ifdef BC_NB
    const int nb = BC_NB;
#else
    const int nb = nb_rt;
#endif
    const int M = nb * PIX, NMT = nb * TYX;
    extern __shared__ __align__(128) unsigned char bnn_dsmem[];
    if (bnn_dyn_smem_size() < SMEM) __trap(); // launched with too little shared memory
    if ((int)blockIdx.y * NW >= NMT) return; // the whole block: no tile for any warp
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const unsigned sB = bnn_smem(bnn_dsmem), sZ = sB + BSZ, sW = sZ + 16 + warp * WSZ;
    int *rowpop = (int *)(bnn_dsmem + BSZ + 16 + warp * WSZ + 2 * ASZ);
    const int n0 = blockIdx.x * BN;

    for (int i = tid; i < BN * NIT; i += T) { // the weight slice, item-major: item j = tap*CCR + chunk, BN rows
        const int j = i % NIT, ol = i / NIT, o = n0 + ol, tap = j / CCR, cc = j % CCR;
        const bool ok = o < O;
        bnn_cp16(sB + (j * BN + (BITS ? bnn_halo_brow(ol) : ol)) * 16, Wt + (ok ? (long long)o * LDW + tap * CWP + cc * 4 : 0),
                 ok ? 16u : 0u);
    }
    if (tid == 0) bnn_st16(sZ, 0u, 0u, 0u, 0u);
    // The block's table (TSZ bytes: bnncc's bnn_halo_tables for column block blockIdx.x, P the
    // layer's tables one after another): copied, not built here. (Built by each block from the
    // popc(w) prefix table and the thresholds, it was about 40 % of the prologue's instructions,
    // which were a third of XNOR ResNet-18's 56x56 convs at batch 64: docs/perf.md.)
    int *corr = (int *)(bnn_dsmem + BSZ + 16 + NW * WSZ);
    for (int i = tid; i < (int)TSZ / 16; i += T)
        bnn_cp16(sB + BSZ + 16 + NW * WSZ + i * 16, P + (long long)blockIdx.x * (TSZ / 4) + i * 4, 16);
    for (int i = tid; i < (int)RSZ / 16; i += T) // RESD: the block's threshold rows and bases
        bnn_cp16(sB + BSZ + 16 + NW * WSZ + TSZ + i * 16, P + NBX * (TSZ / 4) + (long long)blockIdx.x * (RSZ / 4) + i * 4,
                 16);
#if BC_RESD > 0
    const short *tj = (const short *)(bnn_dsmem + BSZ + 16 + NW * WSZ + TSZ);
    const int *tb = (const int *)(bnn_dsmem + BSZ + 16 + NW * WSZ + TSZ + (RSZ - BN * 4));
    const unsigned *w1f = (const unsigned *)(P + NBX * (TSZ / 4) + NBX * (RSZ / 4)) + blockIdx.x * (NI * RCH * 64);
#endif
    auto load_halo = [&](int t, unsigned dst) { // tile t's halo, by this warp's lanes
        const int n = t / TYX, ih0 = t % TYX / TX * TH * SH - PT, iw0 = t % TX * TW * SW - PL;
        for (int i = lane; i < HH * HWD * CCR; i += 32) {
            const int cc = i % CCR, p = i / CCR, hy = p / HWD, hx = p % HWD, ih = ih0 + hy * FH, iw = iw0 + hx * FW;
            const bool inside = (unsigned)ih < (unsigned)H && (unsigned)iw < (unsigned)W;
            const unsigned d = dst + (cc * NHP + hy * HWS + hx) * 16;
            if (ONE && !inside)
                bnn_st16(d, bnn_chmask(C, 4 * cc), bnn_chmask(C, 4 * cc + 1), bnn_chmask(C, 4 * cc + 2),
                         bnn_chmask(C, 4 * cc + 3));
            else
                bnn_cp16(d, X + (inside ? (((long long)n * H + ih) * W + iw) * CWP + cc * 4 : 0), inside ? 16u : 0u);
        }
    };
    const int t0 = blockIdx.y * NW + warp, tstep = gridDim.y * NW;
    bnn_pdl_wait(); // the prologue above read only constants; now the activations
    if (t0 < NMT) load_halo(t0, sW);
    bnn_cp_commit();
    bnn_cp_wait<0>();
    __syncthreads(); // the weights, the correction table (and every warp's first halo) are in

    int abase[MI]; // halo slot of this lane's ldmatrix row at tap (0, 0), per m16 tile
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
        int th, tw;
        bnn_tile_rc<TH, TW, POOL>(mi * 16 + ((lane >> 3) & 1) * 8 + (lane & 7), th, tw);
        abase[mi] = (th * SHE * HWS + tw * SWE) * 16;
    }
    const E e{corr - n0}; // the generic epilogues' (BITS reads the table itself)
    const bool bhi = (lane >> 3) & 1;
    (void)e, (void)M;
#if BC_HALO_BITS
    unsigned pos0[HB::NQ], pos1[HB::NQ]; // HB::positive() of the lane's channels
#pragma unroll
    for (int q = 0; q < HB::NQ; ++q) {
        pos0[q] = HB::positive((const int *)ep1, n0, q, lane & 3, 0);
        pos1[q] = BC_RESW ? HB::positive((const int *)ep1, n0, q, lane & 3, 1) : 0u;
    }
#endif

    int buf = 0;
    for (int t = t0; t < NMT; t += tstep, buf ^= 1) {
        const int n = t / TYX, oh0 = t % TYX / TX * TH, ow0 = t % TX * TW;
        const unsigned sA = sW + buf * ASZ;
        // The other buffer was last read by this warp's previous tile (the __syncwarp below).
        if (t + tstep < NMT) load_halo(t + tstep, sW + (buf ^ 1) * ASZ);
        bnn_cp_commit();
        bnn_cp_wait<1>();
        __syncwarp(); // every lane's copies of this tile's halo are in

        // RESD: this tile's rows of R at the 1x1 conv's pixels as A fragments (row g, g + 8 of
        // each m16 tile; words t, 4 + t of each 8-word k256 step), loaded under the main loop.
#if BC_RESD > 0
        unsigned a1[RCH][MI][4];
#pragma unroll
        for (int ch = 0; ch < RCH; ++ch)
#pragma unroll
            for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                for (int r = 0; r < 4; ++r) {
                    int th, tw;
                    bnn_tile_rc<TH, TW, false>(mi * 16 + (lane >> 2) + 8 * (r & 1), th, tw);
                    const int oh = oh0 + th, ow = ow0 + tw, wd = 8 * ch + 4 * (r >> 1) + (lane & 3);
                    a1[ch][mi][r] = oh < OH && ow < OW && wd < RCWP
                                        ? ((const unsigned *)R)[(((long long)n * RH + oh * RSH) * RW + ow * RSW) * RCWP + wd]
                                        : 0u;
                }
#endif
        int acc[MI][NI][4], pacc[MI][4];
#pragma unroll
        for (int i = 0; i < MI; ++i) {
            pacc[i][0] = pacc[i][1] = pacc[i][2] = pacc[i][3] = 0;
#pragma unroll
            for (int j = 0; j < NI; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0;
        }
#pragma unroll
        for (int q = 0; q < NPAIR; ++q) {
            const int jl = 2 * q, jh = 2 * q + 1 < NIT ? 2 * q + 1 : 2 * q;
            const int offl = ((jl % CCR) * NHP + (jl / CCR) / KW * DH * HWS + (jl / CCR) % KW * DW) * 16;
            const int offh = ((jh % CCR) * NHP + (jh / CCR) / KW * DH * HWS + (jh / CCR) % KW * DW) * 16;
            const unsigned ao = sA + ((lane >> 4) ? offh : offl);
            unsigned a[MI][4], b[NI][2];
#pragma unroll
            for (int mi = 0; mi < MI; ++mi) bnn_ldsm4(ao + abase[mi], a[mi][0], a[mi][1], a[mi][2], a[mi][3]);
#pragma unroll
            for (int nj = 0; nj < NI / 2; ++nj) {
                const int br = nj * 16 + (lane >> 4) * 8 + (lane & 7);
                const unsigned ba = !bhi ? sB + (jl * BN + br) * 16
                                    : 2 * q + 1 < NIT ? sB + ((2 * q + 1) * BN + br) * 16
                                                      : sZ;
                bnn_ldsm4(ba, b[2 * nj][0], b[2 * nj][1], b[2 * nj + 1][0], b[2 * nj + 1][1]);
            }
            const unsigned ones_hi = 2 * q + 1 < NIT ? 0xffffffffu : 0u;
#pragma unroll
            for (int mi = 0; mi < MI; ++mi) {
                bnn_bmma(pacc[mi], a[mi], 0xffffffffu, ones_hi);
#pragma unroll
                for (int ni = 0; ni < NI; ++ni) bnn_bmma(acc[mi][ni], a[mi], b[ni][0], b[ni][1]);
            }
        }
#if BC_RESD > 0
        bnn_resd_fold<MI, NI, RCH>(acc, a1, w1f, tj, tb);
#endif
        if ((lane & 3) == 0) // popc(a): every column of pacc holds it; rows g and g + 8
#pragma unroll
            for (int mi = 0; mi < MI; ++mi) {
                rowpop[mi * 16 + (lane >> 2)] = pacc[mi][0];
                rowpop[mi * 16 + (lane >> 2) + 8] = pacc[mi][2];
            }
        __syncwarp();
        if (t + tstep >= NMT) bnn_pdl_trigger(); // this warp's last tile: its epilogue next
#if BC_HALO_BITS
        bnn_halo_bits<HB, E, TH, TW, OH, OW, O, BN, BC_LDY, BC_RESW, (RK > 0), MI>(acc, rowpop, corr, n, oh0, ow0, n0,
                                                                                    pos0, pos1, (unsigned *)Y,
#if BC_RESW > 0
                                                                                    (const unsigned *)R
#else
                                                                                    nullptr
#endif
        );
#else
        const BnnHaloRows<TH, TW, OH, OW, POOL> rows{n, oh0, ow0};
        BC_EPILOGUE(rows);
#endif
        __syncwarp(); // this halo buffer and rowpop are free for the tile after next
    }
}
#else
// Grid: (ceil(O/BC_BN), up to ceil(M/BC_BM)), M = nb*OH*OW (nb*PH*PW*4 with BC_POOL); block: BC_WM*BC_WN*32 threads; dynamic shared
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
#elif BC_RESW > 0
            const void *__restrict__ R,
#endif
            int nb_rt) {
    BNN_PDL_ENTER();
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
    const int tid = threadIdx.x, n0 = blockIdx.x * Cfg::BN;
    const unsigned *brow[Cfg::BIT];
    bool bok[Cfg::BIT];
#pragma unroll
    for (int it = 0; it < Cfg::BIT; ++it) {
        const int o = n0 + (tid + it * Cfg::T) / Cfg::KC;
        bok[it] = o < O;
        brow[it] = Wt + (long long)(bok[it] ? o : 0) * LDW;
    }
    // Row tiles blockIdx.y, + gridDim.y, ...: any grid.y works (the runtime caps it at 65,535
    // and at one wave: BLOB_STEP_ONE_WAVE).
    for (int m0 = blockIdx.y * Cfg::BM; m0 < M; m0 += gridDim.y * Cfg::BM) {
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
        bnn_pdl_trigger(); // the kernels after it may launch (common.cu)
        BnnConvCorr<C, H, W, O, KH, KW, SH, SW, PT, PL, DH, DW, OH, OW, ONE, POOL> e{P};
        BC_EPILOGUE(m0);
        __syncthreads(); // the stages and rowpop are free for the next row tile
    }
}
#endif // BC_HALO

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
#undef BC_RESW
#undef BC_RESD
#undef BC_RESD_H
#undef BC_RESD_W
#undef BC_RESD_SH
#undef BC_RESD_SW
#undef BC_RESD_CWP
#undef BC_F32
#undef BC_LDB
#undef BC_BM
#undef BC_BN
#undef BC_WM
#undef BC_WN
#undef BC_KC
#undef BC_STAGES
#undef BC_HALO
#undef BC_MINB
#undef BC_TH
#undef BC_TW
#undef BC_EPILOGUE
#undef BC_HALO_BITS
