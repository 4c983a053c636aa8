// qconv.cu: low-bit convolution (qconv2d, docs/ir.md; groups = 1) as a bit-plane implicit GEMM
// on the b1 tensor cores, the convolution form of bgemm_planes.cu:
//     acc[m][o] = sum_p sum_q c_q * 2^(p+q) * popc(X_p[m] AND W_q[o])
// where GEMM row m is an output pixel (image n, oy, ox) of the batch, column o an output
// channel, and a row's K runs over the QC_KH*QC_KW taps, QC_LDW words of channels each
// (tap-major), then zero words up to QC_KROW, a multiple of 8: with QC_LDW = 1, 2 or 4 (up to
// 128 channels) one k256 step covers 8 / QC_LDW taps, so few channels waste little of each
// MMA. X_p = bit p of the unsigned activation codes; W_q = bit q of the weight codes in
// two's complement (c_q = -1 for the top plane when QC_WSIGNED), or with QC_WBIPOLAR one +-1
// plane b (u = 2b - 1): acc = sum_p 2^p * (2*popc(X_p AND B) - popc(X_p)).
// Only mma.sync m16n8k256 .and.popc (HARDWARE.md: never XOR on Hopper).
//
// Operands (32-bit words; channel c of a pixel = bit c%32 of word c/32, channels padded with
// zero bits to QC_LDW words: 1, 2, 4 or a multiple of 8):
//   X: image planes, per image QC_XB planes of QC_PLANE words (QC_H*QC_W*QC_LDW rounded up to
//      8), a plane [QC_H*QC_W][QC_LDW] (with QC_LDW a multiple of 8: an NHWC-packed bit image)
//   W: [QC_WB][QC_O][QC_KROW], the taps' QC_LDW words in a row
// Padding is exact by construction: a tap outside the image reads the planes of QC_PAD_CODE
// in every real channel (zero bits in the channel padding), i.e. the very words an image
// whose border held pad_code would give; pad code 0 reads zero words, which add nothing.
// Epilogues (QC_EPI): 1 = int32 Y, NCHW per image ([QC_O][QC_OH*QC_OW]); 2 = the level count
//   count = sum_l (dir[o] >= 0 ? acc >= T[o][l] : acc <= T[o][l]) over QC_L levels, written as
//   QC_YB image planes of QC_YPLANE words per image, [QC_OH*QC_OW][QC_LDY] each (QC_LDY words a
//   pixel, zero words and tail): exactly the next qconv's X (one plane with QC_LDY a multiple
//   of 8: a b1 NHWC-packed image); with QC_LFOLD 1 T[o] holds the levels folded (t ^ -1 where
//   dir[o] < 0) and sorted ascending, lower.c put_code_levels. 3 = the float chain of a qconv2d_chain (docs/kernels.md):
//   v = (float)acc through QC_NST stages of EP [NST][2][QC_O] (v*a or v/a where bit k of QC_DIV,
//   + b, relu where bit k of QC_RELU), + R (f32 NCHW) by QC_RES (1: v + r, 2: r + v), relu with
//   QC_ORELU, then the quantizer q = clamp(round(v / scale + zero), QC_QLO, QC_QHI) (QC_ROUND,
//   scale and zero as float bits QC_QSCALE, QC_QZERO): f32 NCHW Yf = v (QC_F32 1) or
//   (q - zero) * scale (QC_F32 2) where Yf is not null (a kernel of the f32 form serves a layer
//   whose value nobody reads too), and the codes q - QC_QLO as QC_YB planes (0: none) in Y, as
//   epi 2 writes its counts. Arguments (X, W, M, EP, R, Yf, Y).
//   Epi 3 with QC_RESD (halo kernel, QC_RES): the residual is a 1x1 downsample convolution's
//   value (a qconv2d_chain D over the block input, docs/kernels.md "The downsample inside the
//   conv that adds it"), computed here: R holds D's input codes (QC_RESD_XB image planes of
//   QC_RESD_H x QC_RESD_W pixels, QC_RESD_LDW words each), output pixel (oh, ow) reads its pixel
//   (oh * QC_RESD_SH, ow * QC_RESD_SW); D's weights are one bipolar plane. EP holds this chain's
//   [NST][2][QC_O], then D's chain [QC_RESD_NST][2][QC_O] (QC_RESD_DIV, QC_RESD_RELU,
//   QC_RESD_ORELU as QC_DIV, QC_RELU, QC_ORELU), then D's weight rows [QC_O][QC_RESD_KROW] words.
//   With QC_RESD_FAST (codes of at most 2 bits, no f32 out: Yf must be null) EP then holds
//   [QC_O][20] rows of blob.h's fast test (blob_qresd_fast_row): x = fma(kappa, d, sgn * v) of
//   the accumulator v and D's dot d decides each level by two bounds, and only an element that
//   neither decides runs the two chains (docs/kernels.md "The downsample's fast test").
//   Epi 2 with QC_RCODE > 0 (halo kernel, at most 3 levels): thresholds by a residual's code, a
//   qconv2d_chain whose residual is another layer's dequantized codes (docs/kernels.md
//   "Thresholds by a residual code"): R holds those codes as QC_RCODE image planes of the
//   output's geometry, and T [QC_O][8] each channel's fold mask (0, or -1 where its codes fall
//   with the sum), then its 3 levels for each residual code (at most 2 planes: 4 codes) as
//   int16 pairs, word 1 + 2l codes 0 | 1 << 16, word 2 + 2l codes 2 | 3 << 16, folded and
//   sorted as frag_levels gives them (32767: a level never reached); with QC_RNAN, RN holds
//   the residual's NaN flags (one plane a pixel as the codes', at item stride QC_O*QC_CELLS
//   words: the residual's f32 buffer, which no GPU kernel reads as floats), and a NaN flag
//   makes the code 0; with QC_YNAN the kernel writes its own NaN flags (the residual's) to YN
//   so. Arguments (X, W, M, T, R, RN, Y, YN).
// One warp computes 16 pixels x 32 channels (four n8 MMA tiles); grid = (ceil(O/32),
// ceil(M/16)), M = images * QC_OH * QC_OW. Each inclusion defines one kernel QC_NAME and
// #undefs its QC_* macros at the end.
#ifndef BNN_PDL_ENTER // compiled without common.cu (a test's own program): launched plainly
#define BNN_PDL_ENTER() ((void)0)
#endif

#ifndef BNN_QCONV_ONCE
#define BNN_QCONV_ONCE
#define BNN_QC_LINKAGE extern "C" // (tests/lowbit/test_qconv_emu.c runs this file as C)
#define BNN_QC_FN static __device__ __forceinline__
#define BNN_QC_NOINLINE static __device__ __noinline__ // (its own registers: see resd16)
__device__ __forceinline__ void bnn_qc_mma(int *d, unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                           unsigned b0, unsigned b1) {
    const unsigned a[4] = {a0, a1, a2, a3};
    bnn_bmma(*reinterpret_cast<int(*)[4]>(d), a, b0, b1); // common.cu: the AND-popc MMA
}
// The halo kernel's shared-memory operations (common.cu's, in a form the C emulator can stand
// in for): shared addresses are 32-bit, as in common.cu.
#define BNN_QC_DSMEM(name) extern __shared__ __align__(16) unsigned char name[]
#define BNN_QC_ALIGN16 __align__(16)
#define bnn_qh_smem(p) bnn_smem(p)
#define bnn_qh_smem_size() bnn_dyn_smem_size()
#define bnn_qh_commit() bnn_cp_commit()
#define bnn_qh_wait1() bnn_cp_wait<1>()
#define bnn_qh_wait2() bnn_cp_wait<2>()
#define bnn_qh_st16(d, x, y, z, w) bnn_st16(d, x, y, z, w)
__device__ __forceinline__ void bnn_qh_st8(unsigned d, unsigned x, unsigned y) {
    asm volatile("st.shared.v2.u32 [%0], {%1, %2};\n" ::"r"(d), "r"(x), "r"(y) : "memory");
}
#define BNN_QC_UNROLL _Pragma("unroll")
// A size-byte cp.async (16: .cg; 8 and 4: .ca, for 1 or 2 words a pixel), src_bytes 0 or size.
__device__ __forceinline__ void bnn_qh_cp(unsigned dst, const void *src, int size, unsigned src_bytes) {
    if (size == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
    else if (size == 8)
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void bnn_qh_ld16(unsigned a, unsigned *v) {
    unsigned r[4];
    bnn_ld16(a, r);
    v[0] = r[0], v[1] = r[1], v[2] = r[2], v[3] = r[3];
}
__device__ __forceinline__ void bnn_qh_ldsm4(unsigned a, unsigned *r) { bnn_ldsm4(a, r[0], r[1], r[2], r[3]); }
#endif
#ifndef BNN_QC_NOINLINE
#define BNN_QC_NOINLINE BNN_QC_FN
#endif
#ifndef BNN_QC_ALIGN16 // (the warp emulator's static arrays)
#define BNN_QC_ALIGN16
#endif
#ifndef QC_CAT // a name of this inclusion's kernel: QC_CAT(QC_NAME, row) = <name>_row
#define QC_CAT_(a, b) a##_##b
#define QC_CAT(a, b) QC_CAT_(a, b)
#endif

#if !defined(QC_C) || !defined(QC_H) || !defined(QC_W) || !defined(QC_O) || !defined(QC_KH) || \
    !defined(QC_KW) || !defined(QC_OH) || !defined(QC_OW) || !defined(QC_XB) || !defined(QC_WB)
#error "qconv.cu: define QC_C, QC_H, QC_W, QC_O, QC_KH, QC_KW, QC_OH, QC_OW, QC_XB and QC_WB"
#endif
#ifndef QC_NAME
#define QC_NAME qconv
#endif
#ifndef QC_SH
#define QC_SH 1
#endif
#ifndef QC_SW
#define QC_SW 1
#endif
#ifndef QC_PT
#define QC_PT 0
#endif
#ifndef QC_PL
#define QC_PL 0
#endif
#ifndef QC_DH
#define QC_DH 1
#endif
#ifndef QC_DW
#define QC_DW 1
#endif
#ifndef QC_WSIGNED
#define QC_WSIGNED 1
#endif
#ifndef QC_WBIPOLAR
#define QC_WBIPOLAR 0
#endif
#ifndef QC_PAD_CODE
#define QC_PAD_CODE 0
#endif
#ifndef QC_EPI
#define QC_EPI 1
#endif
#ifndef QC_L
#define QC_L 1
#endif
#ifndef QC_LFOLD // 1 (bnncc: codes of more than 15 levels, epi 2): T holds the levels folded and sorted
#define QC_LFOLD 0
#endif
#if QC_LFOLD && QC_EPI != 2
#error "qconv.cu: QC_LFOLD (folded levels) is for codes out (QC_EPI 2)"
#endif
#if QC_EPI == 2 && !QC_RCODE && QC_L > 15 && !QC_LFOLD
#error "qconv.cu: past 15 levels T holds them folded and sorted (QC_LFOLD 1)"
#endif
#if QC_LFOLD && !defined(BNN_Q8_COUNT_ONCE) // pasted before this file by bnncc (NVRTC has no include files)
#include "q8_levels.cu"
#endif
#ifndef QC_YB
#define QC_YB 1
#endif
#ifndef QC_LDW
#error "qconv.cu: define QC_LDW (input words per pixel) and QC_LDY (output words per pixel)"
#endif
#ifndef QC_LDY
#define QC_LDY 1
#endif
#ifndef QC_DIV
#define QC_DIV 0
#endif
#ifndef QC_RELU
#define QC_RELU 0
#endif
#ifndef QC_RES
#define QC_RES 0
#endif
#ifndef QC_RESD // 1: the residual a 1x1 downsample's value, computed here (epi 3 of the halo kernel)
#define QC_RESD 0
#endif
#ifndef QC_RCODE // planes of a residual read as codes (epi 2 of the halo kernel)
#define QC_RCODE 0
#endif
#ifndef QC_RNAN
#define QC_RNAN 0
#endif
#ifndef QC_YNAN
#define QC_YNAN 0
#endif
#define QC_RW (QC_RCODE + QC_RNAN) // words a tile row of the residual's staged planes
// Words of a channel's levels in codes_frag's shared table: [3] the mask, [0..2] the levels; with
// QC_RCODE [0] the mask, [1 + 2l], [2 + 2l] level l's int16 for residual codes 0, 1 and 2, 3 (8
// words of T's row), padded to 12 so that a quarter warp's 4 channels (2 apart) lie in 4
// distinct groups of 4 banks.
#define QC_TST (QC_RCODE ? 12 : 4)
#ifndef QC_ORELU
#define QC_ORELU 0
#endif
#ifndef QC_HALO // 1: the halo-tile kernel (tiles of QC_TH x QC_TW pixels, QC_WM x QC_WN warps)
#define QC_HALO 0
#endif
#ifndef QC_LSTAGE // 1 (halo kernel, QC_LFOLD): a block stages its channels' levels in shared memory
#define QC_LSTAGE 0
#endif
#if QC_LSTAGE && !(QC_LFOLD && QC_HALO)
#error "qconv.cu: QC_LSTAGE is the halo kernel's, over folded levels (QC_LFOLD)"
#endif
#ifndef QC_MINB // halo kernel: blocks per SM the registers must allow
#define QC_MINB 2
#endif
#define QC_TAPS (QC_KH * QC_KW)
#define QC_CELLS (QC_OH * QC_OW)
#if QC_RESD
#if !QC_HALO || QC_EPI != 3 || !QC_RES || !defined(QC_RESD_C) || !defined(QC_RESD_H) || !defined(QC_RESD_W) ||  \
    !defined(QC_RESD_SH) || !defined(QC_RESD_SW) || !defined(QC_RESD_XB) || !defined(QC_RESD_LDW) ||           \
    !defined(QC_RESD_NST) || !defined(QC_RESD_DIV) || !defined(QC_RESD_RELU) || !defined(QC_RESD_ORELU) ||     \
    QC_RESD_XB < 1 || QC_RESD_XB > 3 || QC_RESD_NST < 1 || QC_RESD_NST > 8 || QC_RESD_LDW * 32 < QC_RESD_C ||     \
    QC_RESD_XB * QC_RESD_LDW > 33
#error "qconv.cu: QC_RESD needs the halo kernel's epi 3 with QC_RES and the downsample's QC_RESD_* (1 to 3 planes, a row's words in 33)"
#endif
#define QC_RESD_PLANE (((long long)QC_RESD_H * QC_RESD_W * QC_RESD_LDW + 7) / 8 * 8) // words of its input plane
#define QC_RESD_KROW ((QC_RESD_LDW + 7) / 8 * 8)                                  // words of its weight row
// Its dot's K: plane p's words 2^p times over (segments 0; 1, 2; 3..6), so that one AND-popc sum
// weighs them; k256 steps of 8 words.
#define QC_RESD_NSEG ((1 << QC_RESD_XB) - 1)
#define QC_RESD_NK ((QC_RESD_NSEG * QC_RESD_LDW + 7) / 8)
#endif
#ifndef QC_RESD_FAST // 1: QC_RESD's codes by the fast test of EP's rows, the chains where it cannot decide
#define QC_RESD_FAST 0
#endif
// In blocks of any size: with the first form of the test (every level's interval and status bit
// for every element) the 8-warp tiles ran 2-21 % slower and kept the chains (docs/perf.md stop
// 45); with resd_rows' common case alone the w1a2 ResNet's 8x16 layer is 9 % faster (stop 48).
#if QC_RESD_FAST
#if !QC_RESD || QC_YB < 1 || QC_YB > 2 || QC_QHI - QC_QLO > 3
#error "qconv.cu: QC_RESD_FAST needs QC_RESD and codes of at most 2 bits"
#endif
// EP's words before the fast rows ([QC_O][QC_RESD_FW]: blob.h BLOB_QRESD_*)
#define QC_RESD_FT (2 * QC_NST * QC_O + 2 * QC_RESD_NST * QC_O + QC_O * QC_RESD_KROW)
#define QC_RESD_FW 20
#endif
#define QC_KROW ((QC_TAPS * QC_LDW + 7) / 8 * 8)                 // words of a weight row
#define QC_PLANE (((long long)QC_H * QC_W * QC_LDW + 7) / 8 * 8)  // words of an input plane
#define QC_YPLANE (((long long)QC_CELLS * QC_LDY + 7) / 8 * 8)    // words of an output plane
#define QC_NEG (QC_WSIGNED && !QC_WBIPOLAR)
#define QC_NPOS (QC_NEG ? QC_XB + QC_WB - 2 : QC_XB + QC_WB - 1)

#if QC_EPI == 3
#if !defined(QC_NST) || !defined(QC_F32) || QC_NST < 1 || QC_NST > 8 || QC_RES < 0 || QC_RES > 2
#error "qconv.cu: the chain epilogue needs QC_NST (1..8), QC_DIV, QC_RELU, QC_RES (0..2), QC_ORELU, QC_F32"
#endif
#if QC_F32 == 0 && QC_YB == 0
#error "qconv.cu: a chain epilogue with no output"
#endif
#define QC_EPARAMS const float *__restrict__ EP, const float *__restrict__ R, float *__restrict__ Yf, unsigned *__restrict__ Y
#define QC_EARGS EP, R, Yf, Y
#elif QC_RCODE
#if !QC_HALO || QC_EPI != 2 || QC_L > 3 || QC_RCODE > 2
#error "qconv.cu: QC_RCODE needs the halo kernel's epi 2 with at most 3 levels, and at most 2 residual planes"
#endif
#define QC_EPARAMS                                                                                    \
    const int *__restrict__ T, const unsigned *__restrict__ R, const unsigned *__restrict__ RN, void *__restrict__ Y, \
        unsigned *__restrict__ YN
#define QC_EARGS T, R, RN, Y, YN
#else
#define QC_EPARAMS const int *__restrict__ T, const int *__restrict__ dir, void *__restrict__ Y
#define QC_EARGS T, dir, Y
#endif
#if QC_HALO
#define QC_MI (QC_TH * QC_TW / (16 * QC_WM)) // m16 tiles of a warp
#else
#define QC_MI 1
#endif

// The plane pairs' accumulators of a warp: pos[s] for the pairs of shift s = p + q, neg[p] for
// a signed top weight plane's (as in bgemm_planes.cu); [m16 tile][n8 tile][fragment].
#define QC_NACC (QC_NPOS > 0 ? QC_NPOS : 1)
#define QC_NNEG (QC_NEG ? QC_XB : 1)
BNN_QC_FN void QC_CAT(QC_NAME, zero)(int pos[][QC_MI][4][4], int neg[][QC_MI][4][4]) {
    BNN_QC_UNROLL
    for (int s = 0; s < QC_NACC; s++)
        BNN_QC_UNROLL
        for (int mi = 0; mi < QC_MI; mi++)
            BNN_QC_UNROLL
            for (int j = 0; j < 4; j++)
                BNN_QC_UNROLL
                for (int i = 0; i < 4; i++)
                    pos[s][mi][j][i] = 0;
    BNN_QC_UNROLL
    for (int p = 0; p < QC_NNEG; p++)
        BNN_QC_UNROLL
        for (int mi = 0; mi < QC_MI; mi++)
            BNN_QC_UNROLL
            for (int j = 0; j < 4; j++)
                BNN_QC_UNROLL
                for (int i = 0; i < 4; i++)
                    neg[p][mi][j][i] = 0;
}

// The plane pairs of fragment (mi, j, i) combined: sum_s 2^s pos[s] - sum_p 2^(p + WB - 1) neg[p]
// (bipolar planes count twice; their row term is the caller's).
BNN_QC_FN int QC_CAT(QC_NAME, acc_at)(int pos[][QC_MI][4][4], int neg[][QC_MI][4][4], int mi, int j, int i) {
    int v = 0;
    for (int s = 0; s < QC_NPOS; s++)
        v += pos[s][mi][j][i] << s;
#if QC_NEG
    for (int p = 0; p < QC_XB; p++)
        v -= neg[p][mi][j][i] << (p + QC_WB - 1);
#else
    (void)neg;
#endif
    return QC_WBIPOLAR ? 2 * v : v;
}

// Combine the plane pairs of m16 tile mi into tile[16][33] (row, channel of the warp's 32).
BNN_QC_FN void QC_CAT(QC_NAME, combine)(int pos[][QC_MI][4][4], int neg[][QC_MI][4][4], int mi, int lane,
                                        int (*tile)[33]) {
    const int g = lane >> 2, t = lane & 3;
    for (int j = 0; j < 4; j++) {
        int acc[4];
        for (int i = 0; i < 4; i++)
            acc[i] = QC_CAT(QC_NAME, acc_at)(pos, neg, mi, j, i);
        // d0 = D[g][2t], d1 = D[g][2t+1], d2 = D[g+8][2t], d3 = D[g+8][2t+1] per n8 tile.
        tile[g][8 * j + 2 * t] = acc[0];
        tile[g][8 * j + 2 * t + 1] = acc[1];
        tile[g + 8][8 * j + 2 * t] = acc[2];
        tile[g + 8][8 * j + 2 * t + 1] = acc[3];
    }
}

// The next layer's codes of one output pixel (image, cell), count the code of channel n0 +
// lane, written directly as its image planes (32 channels a word, one ballot a plane); the 32
// lanes of the warp call it together.
BNN_QC_FN void QC_CAT(QC_NAME, codes)(int count, long long image, long long cell, int n0, int lane, void *Y) {
    for (int b = 0; b < QC_YB; b++) {
        const unsigned word = __ballot_sync(0xffffffffu, (count >> b) & 1);
        unsigned *yplane = (unsigned *)Y + (image * QC_YB + b) * QC_YPLANE;
        if (lane == 0)
            yplane[cell * QC_LDY + n0 / 32] = word;
        // The last column block zeroes the pixel's padding words (the next K's zero bits),
        // and at the last pixel the plane's tail.
        if (n0 + 32 >= QC_O) {
            for (int w = n0 / 32 + 1 + lane; w < QC_LDY; w += 32)
                yplane[cell * QC_LDY + w] = 0u;
            if (cell == QC_CELLS - 1)
                for (long long w = (long long)QC_CELLS * QC_LDY + lane; w < QC_YPLANE; w += 32)
                    yplane[w] = 0u;
        }
    }
}

#if QC_EPI == 3
// Channel o's stage constants (zeros past QC_O), loaded once by the caller.
#define QC_NSTC (QC_NST > 0 ? QC_NST : 1)
BNN_QC_FN void QC_CAT(QC_NAME, consts)(const float *EP, int o, float ca[QC_NSTC], float cb[QC_NSTC]) {
    for (int k = 0; k < QC_NST; k++) {
        ca[k] = o < QC_O ? __ldg(EP + 2 * k * QC_O + o) : 0.0f;
        cb[k] = o < QC_O ? __ldg(EP + (2 * k + 1) * QC_O + o) : 0.0f;
    }
}
// The float chain of one output, v its accumulator, r its residual (rt_cpu.c run_qconv_chain's
// operations, each rounded on its own, no contraction): stages, residual, relu, then the next
// layer's quantizer. Returns the code (0 without codes); *f the f32 value (QC_F32). No
// synchronization, so that a caller can run several outputs' chains side by side. With fast,
// divisions by common.cu's bnn_div_fast (cy: the reciprocals of ca), which clears *fast where
// its result may differ from __fdiv_rn's: the caller then runs the chain again without.
BNN_QC_FN int QC_CAT(QC_NAME, chain)(int v, float r, const float ca[QC_NSTC], const float cb[QC_NSTC],
                                     const float cy[QC_NSTC], bool *fast, float *f) {
    int count = 0;
    float x = __int2float_rn(v);
    for (int k = 0; k < QC_NST; k++) {
        x = !(QC_DIV >> k & 1) ? __fmul_rn(x, ca[k]) : fast ? bnn_div_fast(x, ca[k], cy[k], fast) : __fdiv_rn(x, ca[k]);
        x = __fadd_rn(x, cb[k]);
        if (QC_RELU >> k & 1)
            x = x < 0.0f ? 0.0f : x;
    }
#if QC_RES == 1
    x = __fadd_rn(x, r);
#elif QC_RES == 2
    x = __fadd_rn(r, x);
#else
    (void)r;
#endif
#if QC_ORELU
    x = x < 0.0f ? 0.0f : x;
#endif
#if QC_YB > 0 || QC_F32 == 2
    const float scale = __int_as_float(QC_QSCALE), zero = __int_as_float(QC_QZERO);
    const float q = bnn_quantize_one(&x, 0, scale, zero, QC_QLO, QC_QHI, QC_ROUND);
    count = q != q ? 0 : (int)(long long)__fsub_rn(q, (float)QC_QLO);
#endif
#if QC_F32 == 1
    *f = x;
#elif QC_F32 == 2
    *f = bnn_dequantize(q, scale, zero);
#else
    (void)f;
#endif
    return count;
}
#endif

#if QC_EPI == 2
// A lane's levels: count = sum_l (v ^ m >= t_l ^ m), m = 0 for a rising channel (v >= t), ~0
// for a falling one (v <= t is ~v >= ~t, and ~ never overflows). Up to 15 levels (QC_TREG) the
// folded thresholds sit in registers, loaded once a kernel (the halo kernel); past 15 (QC_LFOLD)
// each row counts by q8_levels.cu's binary search over the channel's levels folded and sorted (u =
// sorted(t ^ m): the count of u <= v ^ m), where one by one from global memory a sum took QC_L
// loads and compares; the halo kernel searches them staged in shared memory where they fit
// (QC_LSTAGE, below). H200, docs/perf.md stop 63: a w2a2 conv of 64 channels at 56x56, batch
// 256, writing 63 levels 3.90 -> 0.68 ms (searched in global memory) -> 0.30 (staged), 255
// levels 14.1 -> 0.89 -> 0.38.
#define QC_TREG (!QC_LFOLD)
#define QC_NTR (QC_TREG ? QC_L : 1)
BNN_QC_FN int QC_CAT(QC_NAME, level_mask)(const int *dir, int o, int th[QC_NTR], const int *T) {
    const int m = o < QC_O && __ldg(dir + o) < 0 ? -1 : 0;
    for (int l = 0; l < QC_NTR; l++)
        th[l] = QC_TREG && o < QC_O ? __ldg(T + o * QC_L + l) ^ m : 0;
    return m;
}
BNN_QC_FN int QC_CAT(QC_NAME, level_count)(int v, int m, const int th[QC_NTR], const int *T, int o) {
    int count = 0;
    v ^= m;
#if QC_LFOLD
    (void)th;
    if (o < QC_O) // (a lane past QC_O reads nothing: T ends at channel QC_O - 1)
        count = bnn_q8_count(v, T + o * QC_L, QC_L, false, T);
#else
    (void)T, (void)o;
    for (int l = 0; l < QC_NTR; l++)
        count += v >= th[l];
#endif
    return count;
}
#endif

// The epilogue of one output pixel (image, cell) for channel n0 + lane, v its accumulator, r its
// residual (epi 3 with QC_RES; the caller loads the residuals of all its rows first, so their
// latency is paid once, not once per row); the 32 lanes of the warp call it together (the code
// planes are ballots). Epi 3 with QC_F32: the f32 value goes to *fdst. (Not with QC_RCODE, whose
// codes only codes_frag counts.)
#if !QC_RCODE
BNN_QC_FN void QC_CAT(QC_NAME, row)(int v, float r, long long image, long long cell, int n0, int lane,
                                    float *fdst, QC_EPARAMS) {
    const int o = n0 + lane;
#if QC_EPI == 1
    (void)T, (void)dir, (void)fdst, (void)r;
    if (o < QC_O)
        ((int *)Y)[(image * QC_O + o) * QC_CELLS + cell] = v;
#else
    int count = 0;
#if QC_EPI == 2
    (void)fdst, (void)r;
    int th[QC_NTR];
    const int m = QC_CAT(QC_NAME, level_mask)(dir, o, th, T);
    count = o < QC_O ? QC_CAT(QC_NAME, level_count)(v, m, th, T, o) : 0;
#else
    (void)Yf;
    float ca[QC_NSTC], cb[QC_NSTC], f = 0.0f;
    QC_CAT(QC_NAME, consts)(EP, o, ca, cb);
    if (o < QC_O) {
        count = QC_CAT(QC_NAME, chain)(v, r, ca, cb, 0, 0, &f); // __fdiv_rn (no reciprocals)
        if (QC_F32 && fdst)
            *fdst = f;
    }
#endif
    QC_CAT(QC_NAME, codes)(count, image, cell, n0, lane, Y);
#endif
}
#endif

#if QC_HALO
// The halo-tile kernel (QC_HALO 1; docs/kernels.md). A block owns QC_BN = 32*QC_WN output
// channels (blockIdx.x) and walks tiles of QC_TH x QC_TW output pixels of one image (tile
// blockIdx.y, + gridDim.y, ... < images * tiles per image; any grid.y works). Warp (wm, wn)
// computes QC_MI m16 tiles of rows x the 32 channels wn*32.. of the block.
// Shared memory (all 16-byte lines; QC_HSMEM bytes, kernels.h bnn_qhalo_smem mirrors it):
//   weights, once per block: line ((q*NIT + j)*BN + o) = 16-byte chunk cc of tap `tap` of
//     weight plane q, channel o, for the items j = tap*CCR + cc over the CCR = ceil(C/128) chunks
//     that hold real channels (with QC_LDW < 4 a chunk is the tap's LDW words and zero words;
//     with QC_PAIR, below, an item is two taps of a kernel row, each in half a line);
//   two input halos (the next tile's loads while this one computes): line ((p*CCR + cc)*NHP +
//     s) = chunk cc of activation plane p at halo slot s = hy*HWS + hx (QC_HALF: hx / 2), the
//     HH x HWD input pixels the tile's taps read (along a 1-wide kernel axis only every
//     stride-th one), a pixel outside the image holding pad_code's planes as the direct kernel
//     reads them;
//   a zero line, the weighted popcount of each halo pixel and of each tile row (bipolar only);
//   (a chain with a residual) each warp's residuals, [QC_MI * 16 rows][33 words], requested by
//   cp.async at the start of its tile so that their DRAM latency passes under the MMAs (with
//   QC_RCODE the residual's words of the warp's 32 channels instead, [QC_MI * 16][QC_RW]).
// K runs over the items, two per m16n8k256 MMA (its k128 halves may come from different taps;
// an odd last item is paired with the zero line of B); every lane gives ldmatrix its own row's
// halo slot at the item's tap. Each MMA pairs one activation plane with one weight plane into
// the accumulators of the direct kernel; combine and epilogue are the direct kernel's.
#define QC_BM (QC_TH * QC_TW)
#define QC_BN (32 * QC_WN)
#define QC_NT (QC_WM * QC_WN * 32)
#define QC_CCR ((QC_C + 127) / 128)
// Paired taps (QC_PAIR: C <= 64, so that a tap's words fill at most half of a 16-byte line, and
// KW > 1): item i of a kernel row holds its taps 2i and 2i + 1, a halo slot's line its pixel's
// words in the first 8 bytes and those of the pixel DW slots on (the next tap's) in the last 8,
// so that a k128 half covers two taps. Unpaired, the w1a2 ResNet's 56x56 layers (C = 64) ran 5
// MMAs a plane for their 9 taps, half of each k128 half zero words; paired, 3.
#define QC_PAIR (QC_LDW <= 2 && QC_KW > 1)
#if (QC_LDW <= 2) != (QC_C <= 64)
#error "qconv.cu: the halo kernel's LDW must be lower.c's image_ldw(C) (kernels.h bnn_qhalo_smem pairs taps where C <= 64)"
#endif
#define QC_KWI (QC_PAIR ? (QC_KW + 1) / 2 : QC_KW) // items a kernel row
#define QC_NIT (QC_KH * QC_KWI * QC_CCR)
// Item j's (first) tap, ky * KW + kx: the weights' staging and the main loop's halo offsets.
#define QC_ITEM_TAP(j) ((j) / QC_CCR / QC_KWI * QC_KW + (QC_PAIR ? 2 : 1) * ((j) / QC_CCR % QC_KWI))
#define QC_FH (QC_KH == 1 ? QC_SH : 1) // input rows per halo row
#define QC_FW (QC_KW == 1 ? QC_SW : 1)
#define QC_SHE (QC_SH / QC_FH) // output stride inside the halo
#define QC_SWE (QC_SW / QC_FW)
#define QC_HH ((QC_TH - 1) * QC_SHE + (QC_KH - 1) * QC_DH + 1)
#define QC_HWD ((QC_TW - 1) * QC_SWE + (QC_KW - 1) * QC_DW + 1) // input pixels a halo row
// Halved pairs (QC_HALF: paired taps 1 apart at stride 2 along the row): every item reads its
// slot at an even pixel, ox * 2 + 2i, so a halo row keeps only those slots, slot j = pixels 2j
// and 2j + 1 (each pixel copied once, into one half), and output ox's item i reads slot ox + i.
// A full row of slots held each pixel twice and read half of them (the w1a2 ResNet's stride-2
// 56x56 -> 28x28 layer).
#define QC_HALF (QC_PAIR && QC_SWE == 2 && QC_DW == 1)
#define QC_HWC (QC_HALF ? (QC_HWD + 1) / 2 : QC_HWD) // slots a halo row
#define QC_SWC (QC_HALF ? 1 : QC_SWE)                // slots from one output column to the next
#define QC_KXS(kx) (QC_HALF ? (kx) / 2 : (kx) * QC_DW) // slot offset of (an item's first) tap kx
// Row stride in slots: with unit stride in the halo, congruent to TW*SWC mod 8, so that the 8
// rows an ldmatrix reads lie in 8 bank groups (bconv.cu's bnn_halo_ws); no padding where a
// tile row holds whole 8-row matrices (TW a multiple of 8, unit stride along it): their 8 rows
// are 8 consecutive slots of one halo row. (The padding of 8x8 tiles was 60 % of each halo, and
// kept the w1a2 ResNet's 7x7 layers at two blocks an SM.)
#define QC_HWS (QC_TW % 8 == 0 && QC_SWC == 1 ? QC_HWC                                             \
                : QC_SHE == 1                  ? QC_HWC + ((QC_TW * QC_SWC - QC_HWC) % 8 + 8) % 8 \
                                               : QC_HWC)
#define QC_NHP (QC_HH * QC_HWS)
// Halo pixel (hy, hx): its slot, and whether it is the slot's second half (QC_HALF: odd hx),
// as the byte offset of its words in the slot's line.
#define QC_PX_SLOT(hy, hx) ((hy) * QC_HWS + (QC_HALF ? (hx) / 2 : (hx)))
#define QC_PX_HI(hx) (QC_HALF && (hx) % 2)
#define QC_PX_OFF(hx) (QC_HALF ? (hx) % 2 * 8 : 0)
#define QC_HPS (QC_HALF ? 2 * QC_HWS : QC_HWS) // a halo row's stride in hpop, a count a pixel
#define QC_NHPOP (QC_HH * QC_HPS)              // hpop's counts
#define QC_TX ((QC_OW + QC_TW - 1) / QC_TW)
#define QC_TYX ((QC_OH + QC_TH - 1) / QC_TH * QC_TX)
#define QC_BSZ (QC_WB * QC_NIT * QC_BN * 16)
#define QC_ASZ (QC_XB * QC_CCR * QC_NHP * 16)
#if QC_EPI == 3 && QC_RES
#define QC_RSZ (QC_WN * QC_BM * 33 * 4) // each warp's residuals, [QC_MI * 16 rows][33 words]
#define QC_STAGE_RES 1                  // (QC_RESD: the downsample's input words, resd_issue)
#elif QC_RCODE
#define QC_RSZ (QC_WN * QC_BM * QC_RW * 4) // each warp's residual words, [QC_MI * 16 rows][QC_RW]
#define QC_STAGE_RES 1
#else
#define QC_STAGE_RES 0
#define QC_RSZ 0
#endif
// QC_LSTAGE: the block's channels' folded levels, [QC_L][QC_BN] words (a level's channels side by
// side: the 32 lanes of a warp, each searching its own channel's levels, read 32 banks at every
// step). From global memory each step of the search read 32 lines a warp, [channel][level].
#define QC_LSZ (QC_LSTAGE ? 4 * QC_L * QC_BN : 0)
#define QC_HSMEM (QC_BSZ + 2 * QC_ASZ + 16 + 4 * QC_NHPOP + 4 * QC_BM + QC_RSZ + QC_LSZ)
#if QC_BM % (16 * QC_WM) != 0 || QC_MI < 1 || QC_LDW == 3
#error "qconv.cu: QC_TH * QC_TW must be a multiple of 16 * QC_WM"
#endif
// Epi 2 with at most 3 levels (codes of up to 2 bits: w1a2, w2a2, binary outputs): the levels
// are counted where the MMA left the sums, and a row's code words put together by shuffles
// (codes_frag), not through the warp's tile and a ballot a row and plane (that path was two
// thirds of the instructions of the w1a2 ResNet's 56x56 threshold layer: ncu, docs/perf.md).
#define QC_FRAGL (QC_EPI == 2 && QC_L <= 3)

// The halo of tile `tl` into the buffer at shared address dst: one cp.async per (plane, pixel,
// chunk) inside the image, pad_code's words (real channel bits where its bit p is set) outside.
BNN_QC_FN void QC_CAT(QC_NAME, halo)(const unsigned *X, int tl, unsigned dst, int tid) {
    const int n = tl / QC_TYX, ih0 = tl % QC_TYX / QC_TX * QC_TH * QC_SH - QC_PT;
    const int iw0 = tl % QC_TX * QC_TW * QC_SW - QC_PL;
    // A thread a pixel, its geometry once for all its planes and chunks (the index arithmetic
    // per copy was most of this function's instructions).
    for (int px = tid; px < QC_HH * QC_HWD; px += QC_NT) {
        const int hy = px / QC_HWD, hx = px % QC_HWD, ih = ih0 + hy * QC_FH, iw = iw0 + hx * QC_FW;
        const bool in = ih >= 0 && ih < QC_H && iw >= 0 && iw < QC_W;
        const unsigned *src = X + (long long)n * QC_XB * QC_PLANE + ((long long)ih * QC_W + iw) * QC_LDW;
        const unsigned d = dst + QC_PX_SLOT(hy, hx) * 16 + QC_PX_OFF(hx);
        // (QC_PAIR: the pixel's words go to the first half of its slot and to the last half of
        // the slot DW before it, whose item's second tap it is; QC_HALF: to one half of slot hx / 2)
        const bool left = QC_PAIR && !QC_HALF && hx >= QC_DW;
        for (int p = 0; p < QC_XB; p++)
            for (int cc = 0; cc < QC_CCR; cc++) {
                const unsigned dc = d + (p * QC_CCR + cc) * QC_NHP * 16, dl = dc - QC_DW * 16 + 8;
                if (in) {
                    const unsigned *const sp = src + (long long)p * QC_PLANE + 4 * cc;
                    bnn_qh_cp(dc, sp, QC_LDW >= 4 ? 16 : 4 * QC_LDW, QC_LDW >= 4 ? 16u : 4u * QC_LDW);
                    if (left)
                        bnn_qh_cp(dl, sp, 4 * QC_LDW, 4u * QC_LDW);
                } else {
                    unsigned w[4];
                    for (int k = 0; k < 4; k++) {
                        const int bits = QC_C - 32 * (4 * cc + k);
                        w[k] = !((QC_PAD_CODE >> p) & 1) || bits <= 0 ? 0u : bits >= 32 ? 0xffffffffu : (1u << bits) - 1u;
                    }
                    if (QC_PAIR) { // (w[2], w[3] are zeros: LDW <= 2)
                        bnn_qh_st8(dc, w[0], w[1]);
                        if (left)
                            bnn_qh_st8(dl, w[0], w[1]);
                    } else {
                        bnn_qh_st16(dc, w[0], w[1], w[2], w[3]);
                    }
                }
            }
    }
}

#if QC_EPI == 3
// The f32 NCHW values of the 16 tile rows rl0.. of image n and the warp's 32 channels n0.., as
// the halo kernel moves them between global memory and its warp's tile ([row][channel], float
// bits): lane l takes channel 2i + l/16 of row l%16 in step i, so one instruction covers 2
// channels x 16 pixels (runs of QC_TW consecutive floats), not 32 channels a plane apart.
// f32_at: lane's element of step 0 (step i at + 2i planes), or 0 for a row past the output.
BNN_QC_FN float *QC_CAT(QC_NAME, f32_at)(const float *g, int n, int oh0, int ow0, int rl0, int n0, int lane) {
    const int rl = rl0 + (lane & 15), oh = oh0 + rl / QC_TW, ow = ow0 + rl % QC_TW;
    return oh < QC_OH && ow < QC_OW
               ? (float *)g + ((long long)n * QC_O + n0 + (lane >> 4)) * QC_CELLS + (long long)oh * QC_OW + ow
               : 0;
}
#define QC_F32_OK(at, i) ((at) && n0 + 2 * (i) + (lane >> 4) < QC_O) // step i's element exists
// The tile's values (float bits) to Yf.
BNN_QC_FN void QC_CAT(QC_NAME, f32_store)(int (*t)[33], float *Yf, int n, int oh0, int ow0, int rl0, int n0,
                                          int lane) {
    float *at = QC_CAT(QC_NAME, f32_at)(Yf, n, oh0, ow0, rl0, n0, lane);
#ifdef __CUDACC__
#pragma unroll
#endif
    for (int i = 0; i < 16; i++)
        if (QC_F32_OK(at, i))
            at[(long long)2 * i * QC_CELLS] = __int_as_float(t[lane & 15][2 * i + (lane >> 4)]);
}
// The warp's residuals of its QC_MI m16 tiles (rows wm * QC_MI * 16..) of tile (n, oh0, ow0) to
// shared dst, row r of m16 tile mi at word (mi * 16 + r) * 33 + channel: 4-byte cp.async in
// f32_at's order (2 channels x 16 pixels an instruction), zeros for rows past the output and
// channels past QC_O. (Loaded after the MMAs, they were half the stall samples of the w1a2
// ResNet's 56x56 chain layer at batch 256.)
#if QC_RES
BNN_QC_FN void QC_CAT(QC_NAME, res_issue)(const float *R, int n, int oh0, int ow0, int wm, int n0, int lane,
                                          unsigned dst) {
    for (int mi = 0; mi < QC_MI; mi++) {
        const float *at = QC_CAT(QC_NAME, f32_at)(R, n, oh0, ow0, wm * (QC_MI * 16) + mi * 16, n0, lane);
        for (int i = 0; i < 16; i++) {
            const bool ok = QC_F32_OK(at, i);
            bnn_qh_cp(dst + (unsigned)(((mi * 16 + (lane & 15)) * 33 + 2 * i + (lane >> 4)) * 4),
                      ok ? at + (long long)2 * i * QC_CELLS : R, 4, ok ? 4u : 0u);
        }
    }
}
#endif
#undef QC_F32_OK
#if QC_RESD
// Channel o's downsample chain constants (D's [NST][2][QC_O] after this chain's in EP; 1 and 0
// past QC_O), loaded once by the caller.
BNN_QC_FN void QC_CAT(QC_NAME, resd_consts)(const float *EP, int o, float ka[QC_RESD_NST], float kb[QC_RESD_NST]) {
    const float *const EP1 = EP + 2 * QC_NST * QC_O;
    for (int k = 0; k < QC_RESD_NST; k++) {
        ka[k] = o < QC_O ? __ldg(EP1 + 2 * k * QC_O + o) : 1.0f;
        kb[k] = o < QC_O ? __ldg(EP1 + (2 * k + 1) * QC_O + o) : 0.0f;
    }
}
// The downsample's chain of its dot v for constants a, b of one channel (rt_cpu.c's qconv2d_chain
// without residual or quantizer: its stages, then its out relu, each operation rounded on its own).
BNN_QC_FN float QC_CAT(QC_NAME, resd_chain)(int v, const float *a, const float *b) {
    float x = __int2float_rn(v);
    for (int k = 0; k < QC_RESD_NST; k++) {
        x = (QC_RESD_DIV >> k & 1) ? __fdiv_rn(x, a[k]) : __fmul_rn(x, a[k]);
        x = __fadd_rn(x, b[k]);
        if (QC_RESD_RELU >> k & 1)
            x = x < 0.0f ? 0.0f : x;
    }
    if (QC_RESD_ORELU)
        x = x < 0.0f ? 0.0f : x;
    return x;
}
// The downsample's input words of the warp's QC_MI m16 tiles (rows wm * QC_MI * 16..) of tile
// (n, oh0, ow0) to shared dst, row r of m16 tile mi at word (mi * 16 + r) * 33 + w, w = p * LDW +
// word of plane p of the row's pixel (oh * SH, ow * SW) of X1 (where resd16 then writes the
// row's residuals): 4-byte cp.async, zeros for rows past the output. Issued at the tile's start,
// as res_issue's floats, so that their latency passes under the MMAs (computed there from
// global memory, the loads waited before every tile).
BNN_QC_FN void QC_CAT(QC_NAME, resd_issue)(const unsigned *X1, int n, int oh0, int ow0, int wm, int lane,
                                           unsigned dst) {
    for (int i = lane; i < QC_MI * 16 * QC_RESD_XB * QC_RESD_LDW; i += 32) {
        const int row = i / (QC_RESD_XB * QC_RESD_LDW), w = i % (QC_RESD_XB * QC_RESD_LDW);
        const int rl = wm * (QC_MI * 16) + row, oh = oh0 + rl / QC_TW, ow = ow0 + rl % QC_TW;
        const bool ok = oh < QC_OH && ow < QC_OW;
        const unsigned *src = X1 + ((long long)n * QC_RESD_XB + w / QC_RESD_LDW) * QC_RESD_PLANE +
                              ((long long)oh * QC_RESD_SH * QC_RESD_W + (long long)ow * QC_RESD_SW) * QC_RESD_LDW +
                              w % QC_RESD_LDW;
        bnn_qh_cp(dst + (unsigned)((row * 33 + w) * 4), ok ? src : X1, 4, ok ? 4u : 0u);
    }
}
// The residuals of m16 tile rows 0..15 (r16: [16][33] words, the row's staged words of X1 first,
// resd_issue) for the warp's 32 channels n0..; EP this chain's constants, then the downsample's
// (EP1) and its weight rows (W1). Each row's dot by AND-popc MMAs on the fragments of HARDWARE.md
// (a0 = A[g][t], a1 = A[g + 8][t], a2 = A[g][4 + t], a3 = A[g + 8][4 + t]; b0 = B[g][t], b1 =
// B[g][4 + t]) over the planes' words repeated 2^p times, dot = 2 acc - sum_p 2^p popc(X1_p)
// (bipolar weights), as ints over the staged words; then each lane runs its channel's chain on
// the 16 rows (QC_RESD_FAST: the dots stay, as int bits, for resd_rows). Not inlined: its own
// registers (inlined, the 8-warp tiles, at their 128, spilled).
BNN_QC_NOINLINE void QC_CAT(QC_NAME, resd16)(const float *EP, int n0, int lane, float *r16) {
    const float *const EP1 = EP + 2 * QC_NST * QC_O;
    const unsigned *const W1 = (const unsigned *)(EP1 + 2 * QC_RESD_NST * QC_O);
    const unsigned *const xs = (const unsigned *)r16;
    const int g = lane >> 2, t = lane & 3;
#if !QC_RESD_FAST
    float ka[QC_RESD_NST], kb[QC_RESD_NST]; // this lane's channel's chain constants
    QC_CAT(QC_NAME, resd_consts)(EP, n0 + lane, ka, kb);
#endif
    // A's words first (all k steps: at most 12 registers), then one n8 tile's 4 accumulators at a time
    unsigned a[QC_RESD_NK][4];
    int pop[2] = {0, 0};
    for (int k = 0; k < QC_RESD_NK; k++)
        for (int i = 0; i < 4; i++) { // word e of a row: word e % LDW of segment e / LDW's plane
            const int h = i & 1, e = 8 * k + t + 4 * (i >> 1), seg = e / QC_RESD_LDW;
            const int p = seg >= 3 ? 2 : seg >= 1 ? 1 : 0;
            a[k][i] = seg < QC_RESD_NSEG ? xs[(g + 8 * h) * 33 + p * QC_RESD_LDW + e % QC_RESD_LDW] : 0u;
            pop[h] += __popc(a[k][i]);
        }
    for (int h = 0; h < 2; h++) { // the row's words are spread over its 4 lanes t
        pop[h] += __shfl_xor_sync(0xffffffffu, pop[h], 1);
        pop[h] += __shfl_xor_sync(0xffffffffu, pop[h], 2);
    }
    __syncwarp(); // every lane has its words: the dots go over them
    for (int j = 0; j < 4; j++) {
        const int o = n0 + 8 * j + g;
        const unsigned *wr = W1 + (long long)(o < QC_O ? o : 0) * QC_RESD_KROW;
        int d[4] = {0, 0, 0, 0};
        for (int k = 0; k < QC_RESD_NK; k++) {
            const int e0 = 8 * k + t, e1 = e0 + 4;
            const unsigned b0 = o < QC_O && e0 < QC_RESD_NSEG * QC_RESD_LDW ? __ldg(wr + e0 % QC_RESD_LDW) : 0u;
            const unsigned b1 = o < QC_O && e1 < QC_RESD_NSEG * QC_RESD_LDW ? __ldg(wr + e1 % QC_RESD_LDW) : 0u;
            bnn_qc_mma(d, a[k][0], a[k][1], a[k][2], a[k][3], b0, b1);
        }
        for (int i = 0; i < 4; i++) // d0 = D[g][2t], d1 = D[g][2t + 1], d2 = D[g + 8][2t], d3 = D[g + 8][2t + 1]
            r16[(g + 8 * (i >> 1)) * 33 + 8 * j + 2 * t + (i & 1)] = __int_as_float(2 * d[i] - pop[i >> 1]);
    }
    __syncwarp();
#if !QC_RESD_FAST
    for (int r = 0; r < 16; r++)
        r16[r * 33 + lane] = QC_CAT(QC_NAME, resd_chain)(__float_as_int(r16[r * 33 + lane]), ka, kb);
    __syncwarp();
#endif
}
#endif
#endif

#if QC_RCODE
// The warp's residual words of its QC_MI m16 tiles (rows wm * QC_MI * 16..) of tile (n, oh0,
// ow0) to shared dst, row r of m16 tile mi at word (mi * 16 + r) * QC_RW + b: the word of the
// warp's 32 channels in code plane b < QC_RCODE of R, then (QC_RNAN) in the NaN plane of RN;
// zeros for rows past the output. A 4-byte cp.async a word, the warp's lanes side by side.
BNN_QC_FN void QC_CAT(QC_NAME, rcode_issue)(const unsigned *R, const unsigned *RN, int n, int oh0, int ow0, int wm,
                                            int n0, int lane, unsigned dst) {
    for (int i = lane; i < QC_MI * 16 * QC_RW; i += 32) {
        const int row = i / QC_RW, b = i % QC_RW, rl = wm * (QC_MI * 16) + row;
        const int oh = oh0 + rl / QC_TW, ow = ow0 + rl % QC_TW;
        const bool ok = oh < QC_OH && ow < QC_OW && n0 < QC_O;
        const long long at = ((long long)oh * QC_OW + ow) * QC_LDY + n0 / 32;
        const unsigned *src = b < QC_RCODE ? R + ((long long)n * QC_RCODE + b) * QC_YPLANE + at
                                           : RN + (long long)n * QC_O * QC_CELLS + at;
        bnn_qh_cp(dst + (unsigned)(i * 4), ok ? src : R, 4, ok ? 4u : 0u);
    }
}
#endif


#if QC_EPI == 3
// The chains of a warp's 16 tile rows (t: the combined accumulators, [row][channel]; rowpop16
// their bipolar terms; res16 their residuals at row * 33 + channel, QC_RES): codes to cnt (0
// where not live), values to fv; divisions by bnn_div_fast where fast is not null.
BNN_QC_FN void QC_CAT(QC_NAME, chains16)(int (*t)[33], const int *rowpop16, const float *res16, int lane, int live,
                                         const float *ca, const float *cb, const float *cy, bool *fast, int *cnt,
                                         float *fv) {
#ifdef __CUDACC__
#pragma unroll
#endif
    for (int r = 0; r < 16; r++) {
        const int v = t[r][lane] - (QC_WBIPOLAR ? rowpop16[r] : 0);
        const float rr = QC_RES ? res16[r * 33 + lane] : 0.0f;
        cnt[r] = QC_CAT(QC_NAME, chain)(v, rr, ca, cb, cy, fast, &fv[r]);
        cnt[r] = live ? cnt[r] : 0;
    }
}
#endif

// Word `word` (channels n0..n0+31) of pixel `cell` of image n's code plane b; the last column
// block also zeroes the pixel's padding words (the next K's zero bits) and, at the last pixel,
// the plane's tail.
BNN_QC_FN void QC_CAT(QC_NAME, code_store)(unsigned word, int n, int b, long long cell, int n0, void *Y) {
    unsigned *yplane = (unsigned *)Y + ((long long)n * QC_YB + b) * QC_YPLANE;
    yplane[cell * QC_LDY + n0 / 32] = word;
    if (n0 + 32 >= QC_O) {
        for (int w = n0 / 32 + 1; w < QC_LDY; w++)
            yplane[cell * QC_LDY + w] = 0u;
        if (cell == QC_CELLS - 1)
            for (long long w = (long long)QC_CELLS * QC_LDY; w < QC_YPLANE; w++)
                yplane[w] = 0u;
    }
}

// The codes of the warp's 16 tile rows rl0.. (cnt[r]: channel n0 + lane's code of row r, 0 past
// QC_O) as the next layer's image planes; the last column block also zeroes the pixels' padding
// words and the plane's tail. Codes of at most 2 bits: a lane packs its 16 codes into one word
// (row r at bits 2r, 2r + 1), and five shuffle rounds transpose the warp's 32 x 32 bit matrix,
// so that lane 2r + b holds plane b's word of row r (bit l: channel n0 + l), all stored by one
// instruction (a ballot a row and plane with a select a lane, 32 of each, cost several times
// the rounds). Wider codes: a ballot a row and plane, lane r keeping row r's word, one store a
// plane by the lanes whose rows lie inside the output.
BNN_QC_FN void QC_CAT(QC_NAME, codes16)(const int *cnt, int n, int oh0, int ow0, int rl0, int n0, int lane, void *Y) {
#if QC_YB >= 1 && (QC_EPI == 3 ? QC_QHI - QC_QLO : QC_L) <= 3 // (every code in 2 bits)
    unsigned x = 0u;
#ifdef __CUDACC__
#pragma unroll
#endif
    for (int r = 0; r < 16; r++)
        x |= (unsigned)cnt[r] << 2 * r;
#ifdef __CUDACC__
#pragma unroll
#endif
    for (int s = 16; s >= 1; s >>= 1) { // swap the off-diagonal s x s blocks of each 2s x 2s one
        const unsigned m = s == 16 ? 0x0000ffffu : s == 8 ? 0x00ff00ffu : s == 4 ? 0x0f0f0f0fu : s == 2 ? 0x33333333u : 0x55555555u;
        const unsigned y = __shfl_xor_sync(0xffffffffu, x, s);
        x = lane & s ? (x & ~m) | (y >> s & m) : (x & m) | (y << s & ~m);
    }
    const int b = lane & 1, rl = rl0 + (lane >> 1), oh = oh0 + rl / QC_TW, ow = ow0 + rl % QC_TW;
    if (b < QC_YB && oh < QC_OH && ow < QC_OW)
        QC_CAT(QC_NAME, code_store)(x, n, b, (long long)oh * QC_OW + ow, n0, Y);
#else
    const int rl = rl0 + (lane & 15), oh = oh0 + rl / QC_TW, ow = ow0 + rl % QC_TW;
    const bool live = lane < 16 && oh < QC_OH && ow < QC_OW;
    const long long cell = (long long)oh * QC_OW + ow;
    for (int b = 0; b < QC_YB; b++) {
        unsigned word = 0u;
#ifdef __CUDACC__
#pragma unroll
#endif
        for (int r = 0; r < 16; r++) {
            const unsigned w = __ballot_sync(0xffffffffu, (cnt[r] >> b) & 1);
            word = lane == r ? w : word;
        }
        if (live)
            QC_CAT(QC_NAME, code_store)(word, n, b, cell, n0, Y);
    }
#endif
}

#if QC_FRAGL
// Residual code rc's int16 of a level's pair words (lo: codes 0, 1; hi: 2, 3), sign-extended:
// one byte permute (PTX prmt, whose selector nibbles 8-15 replicate a byte's sign).
BNN_QC_FN int QC_CAT(QC_NAME, half)(unsigned lo, unsigned hi, int rc) {
#ifdef __CUDA_ARCH__
    int r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(lo), "r"(hi), "r"(0x9910 + rc * 0x2222));
    return r;
#else
    return (short)((rc & 2 ? hi : lo) >> (16 * (rc & 1)));
#endif
}
#if QC_RCODE
// With QC_RCODE, T's rows as the lowering folded and sorted them; past QC_O, levels never reached.
BNN_QC_FN void QC_CAT(QC_NAME, rcode_levels)(const int *T, int (*thr)[QC_TST], int o0, int tid) {
    for (int i = tid; i < QC_BN * 8; i += QC_NT) {
        const int o = o0 + i / 8, k = i % 8;
        thr[i / 8][k] = o < QC_O ? __ldg(T + (long long)o * 8 + k) : k == 0 ? 0 : 0x7fff7fff;
    }
}
#else
// The block's channels' levels for codes_frag, thr[channel][QC_TST]: levels 0..QC_L-1 as t ^ m
// (level_mask's fold) in increasing order (a count is the same for any order), [3] the mask m;
// INT_MAX for a missing level and past QC_O, where no sum reaches it (a count of 0 there, as
// level_count gives).
BNN_QC_FN void QC_CAT(QC_NAME, frag_levels)(const int *T, const int *dir, int (*thr)[QC_TST], int o0, int tid) {
    for (int i = tid; i < QC_BN; i += QC_NT) {
        const int o = o0 + i, m = o < QC_O && __ldg(dir + o) < 0 ? -1 : 0;
        int t[3];
        for (int l = 0; l < 3; l++)
            t[l] = o < QC_O && l < QC_L ? __ldg(T + o * QC_L + l) ^ m : 0x7fffffff;
        for (int a = 0; a < 2; a++) // sorted, so that a code's high bit is the middle test
            for (int b = 0; b < 2 - a; b++)
                if (t[b] > t[b + 1]) {
                    const int x = t[b];
                    t[b] = t[b + 1], t[b + 1] = x;
                }
        for (int l = 0; l < 3; l++)
            thr[i][l] = t[l];
        thr[i][3] = m;
    }
}
#endif

// The codes of m16 tile mi (tile rows rl0..; rowpop16 their bipolar terms; thr the warp's 32
// channels' levels) as the next layer's image planes, straight from the accumulators: lane
// (g, t) = (lane / 4, lane % 4) holds rows g and g + 8 of channels 8j + 2t + e (j < 4, e < 2).
// With at most 3 levels, sorted, a code's bits are the parity of its level tests and the middle
// test; each set bit is one OR of a constant into a word a row and plane (bit 8j + e, shifted by
// 2t at the end); the row's 4 lanes then OR their words together (two shuffles). Lane (g, t)
// stores plane bb + t / 2 of row g + 8 (t % 2): two planes of 16 rows an instruction.
// With QC_RCODE (rw: the m16 tile's staged residual words, [16][QC_RW]) each element takes the
// levels of its residual code, and a residual NaN flag makes its code 0 (and, QC_YNAN, sets
// its own flag in YN).
BNN_QC_FN void QC_CAT(QC_NAME, codes_frag)(int pos[][QC_MI][4][4], int neg[][QC_MI][4][4], int mi,
                                           const int *rowpop16, int (*thr)[QC_TST], const unsigned *rw, int n,
                                           int oh0, int ow0, int rl0, int n0, int lane, void *Y, unsigned *YN) {
    const int g = lane >> 2, t = lane & 3;
    const int rp0 = QC_WBIPOLAR ? rowpop16[g] : 0, rp1 = QC_WBIPOLAR ? rowpop16[g + 8] : 0;
    unsigned word[QC_YB][2]; // (planes past the second stay zero: a count of at most 3)
    // QC_RCODE: rows g and g + 8's residual codes of this lane's 8 channels 8j + 2t + e as bit
    // pairs 8j + 2e (low plane) and 8j + 2e + 1 of rcn[h], so that an element's code is one bit
    // field; their NaN flags at bit 8j + e of rnan[h], which clear those codes at the end (one
    // mask a row and plane, not a test an element) and are the row's own flags.
    unsigned rcn[2] = {0u, 0u}, rnan[2] = {0u, 0u};
#ifdef __CUDACC__
#pragma unroll
#endif
    for (int h = 0; h < (QC_RCODE ? 2 : 0); h++) {
        const unsigned *r = rw + (g + 8 * h) * QC_RW;
        unsigned a = r[0] >> 2 * t & 0x03030303u, b = QC_RCODE > 1 ? r[QC_RCODE > 1] >> 2 * t & 0x03030303u : 0u;
        a = (a | a << 1) & 0x05050505u, b = (b | b << 1) & 0x05050505u; // bits e -> 2e
        rcn[h] = a | b << 1;
        rnan[h] = QC_RNAN ? r[QC_RW - 1] >> 2 * t & 0x03030303u : 0u;
    }
    (void)rcn, (void)rnan, (void)rw, (void)YN;
#ifdef __CUDACC__
#pragma unroll
#endif
    for (int b = 0; b < QC_YB; b++)
        word[b][0] = word[b][1] = 0u;
#ifdef __CUDACC__
#pragma unroll
#endif
    for (int j = 0; j < 4; j++)
#ifdef __CUDACC__
#pragma unroll
#endif
        for (int e = 0; e < 2; e++) {
            const int ch = 8 * j + 2 * t + e;
            int th[4] = {0, 0, 0, 0};
            unsigned pair[3][2]; // QC_RCODE: each level's int16 for the 4 residual codes
            if (QC_RCODE) {
                th[3] = thr[ch][0];
                for (int l = 0; l < 3; l++)
                    pair[l][0] = (unsigned)thr[ch][1 + 2 * l], pair[l][1] = (unsigned)thr[ch][2 + 2 * l];
            } else {
                for (int l = 0; l < 4; l++)
                    th[l] = thr[ch][l];
            }
            (void)pair;
#ifdef __CUDACC__
#pragma unroll
#endif
            for (int h = 0; h < 2; h++) {
                if (QC_RCODE) { // this element's residual code picks its levels
                    const int rc = (int)(rcn[h] >> (8 * j + 2 * e) & 3u);
                    for (int l = 0; l < 3; l++)
                        th[l] = QC_CAT(QC_NAME, half)(pair[l][0], pair[l][1], rc);
                }
                const int v = (QC_CAT(QC_NAME, acc_at)(pos, neg, mi, j, 2 * h + e) - (h ? rp1 : rp0)) ^ th[3];
                // Levels sorted (frag_levels): c2 implies c1 implies c0, so count = c0 + c1 + c2
                // has bit 1 = c1 and bit 0 = c0 ^ c1 ^ c2.
                const bool c0 = v >= th[0], c1 = QC_L > 1 && v >= th[1], c2 = QC_L > 2 && v >= th[2];
                if (c0 ^ c1 ^ c2)
                    word[0][h] |= 1u << (8 * j + e);
                if (QC_YB > 1 && c1)
                    word[QC_YB > 1 ? 1 : 0][h] |= 1u << (8 * j + e);
            }
        }
#ifdef __CUDACC__
#pragma unroll
#endif
    for (int b = 0; b < QC_YB; b++)
        for (int h = 0; h < 2; h++) {
            word[b][h] = (word[b][h] & ~rnan[h]) << 2 * t; // (a residual NaN's code is 0)
            word[b][h] |= __shfl_xor_sync(0xffffffffu, word[b][h], 1);
            word[b][h] |= __shfl_xor_sync(0xffffffffu, word[b][h], 2);
        }
    const int rl = rl0 + g + 8 * (t & 1), oh = oh0 + rl / QC_TW, ow = ow0 + rl % QC_TW;
    const long long cell = (long long)oh * QC_OW + ow;
#ifdef __CUDACC__
#pragma unroll
#endif
    for (int bb = 0; bb < QC_YB; bb += 2) {
        const int b = bb + (t >> 1), b1 = bb + 1 < QC_YB ? bb + 1 : bb; // (constant indices: registers)
        const unsigned w = t == 0 ? word[bb][0] : t == 1 ? word[bb][1] : t == 2 ? word[b1][0] : word[b1][1];
        if (b < QC_YB && oh < QC_OH && ow < QC_OW)
            QC_CAT(QC_NAME, code_store)(w, n, b, cell, n0, Y);
    }
#if QC_YNAN
    unsigned nanw[2] = {rnan[0], rnan[1]};
    for (int h = 0; h < 2; h++) {
        nanw[h] <<= 2 * t;
        nanw[h] |= __shfl_xor_sync(0xffffffffu, nanw[h], 1);
        nanw[h] |= __shfl_xor_sync(0xffffffffu, nanw[h], 2);
    }
    if (t < 2 && oh < QC_OH && ow < QC_OW) // lane (g, t): row g + 8t's flags, in the word's pixel
        YN[(long long)n * QC_O * QC_CELLS + cell * QC_LDY + n0 / 32] = t ? nanw[1] : nanw[0];
#endif
}
#endif
#if QC_RESD_FAST
// Channel o's code of accumulator v and downsample dot d by both chains (resd_chain, then chain
// with __fdiv_rn: the very operations of the kernel without the fast test), where resd_rows'
// test cannot decide. Not inlined: rarely run, and its constants' registers stay out of the
// caller's.
BNN_QC_NOINLINE int QC_CAT(QC_NAME, resd_exact)(const float *EP, int o, int v, int d) {
    float ka[QC_RESD_NST], kb[QC_RESD_NST], ca[QC_NSTC], cb[QC_NSTC], f;
    QC_CAT(QC_NAME, resd_consts)(EP, o, ka, kb);
    QC_CAT(QC_NAME, consts)(EP, o, ca, cb);
    return QC_CAT(QC_NAME, chain)(v, QC_CAT(QC_NAME, resd_chain)(d, ka, kb), ca, cb, 0, 0, &f); // __fdiv_rn
}
// Channel o's fast row (EP's [QC_O][QC_RESD_FW] after D's weight rows: blob.h BLOB_QRESD_*),
// the words resd_rows reads, into a lane's registers once a kernel; past QC_O a row whose levels
// are never reached (+inf bounds at every d), so that its codes are 0.
#define QC_RESD_FR 16 // kappa, sgn, ends, (pad), then lo, hi, il, ih of each level
#ifdef BNN_BLOB_H // (a host test that includes blob.h: NVRTC sees no host header, so the layout is spelled out)
_Static_assert(QC_RESD_FW == BLOB_QRESD_WORDS && QC_RESD_FR == BLOB_QRESD_LEVEL + 4 * 3 && BLOB_QRESD_KAPPA == 0 &&
                   BLOB_QRESD_SIGN == 1 && BLOB_QRESD_ENDS == 2,
               "qconv.cu: QC_RESD_FW, QC_RESD_FR and fast_row's words must be blob.h's BLOB_QRESD_* layout");
#endif
BNN_QC_FN void QC_CAT(QC_NAME, fast_row)(const float *EP, int o, float fr[QC_RESD_FR]) {
    for (int k = 0; k < QC_RESD_FR; k++) {
        const int f = (k - 4) & 3;
        fr[k] = o < QC_O ? __ldg(EP + QC_RESD_FT + (long long)o * QC_RESD_FW + k)
                : k < 4  ? 0.0f
                : f < 2  ? __int_as_float(0x7f800000)
                         : __int_as_float(f == 2 ? (int)0x80000000 : 0x7fffffff);
    }
}
#ifndef QC_RESD_FAST_COUNT // (test_qconv_emu counts the elements, and those the test leaves to the chains)
#define QC_RESD_FAST_COUNT() ((void)0)
#define QC_RESD_FAST_EXACT() ((void)0)
#define QC_RESD_FAST_OUT() ((void)0)
#endif
// Level l of channel o by its fast row fr: reached (1), not (0) or undecided (-1) for x = fma(kappa,
// d, sgn * v) and D's dot d: inside [il_l, ih_l] by the bounds, outside by the ends' bits.
BNN_QC_FN int QC_CAT(QC_NAME, fast_level)(const float *fr, int l, float x, int d) {
    const float *lv = fr + 4 + 4 * l;
    const int il = __float_as_int(lv[2]), ih = __float_as_int(lv[3]);
    if (d < il || d > ih)
        return __float_as_int(fr[2]) >> (2 * l + (d > ih)) & 1;
    return x > lv[1] ? 1 : x < lv[0] ? 0 : -1;
}
// resd_rows' x = fma(kappa, d, sgn * v) of accumulator v and D's dot d, with fast row fr.
BNN_QC_FN float QC_CAT(QC_NAME, resd_x)(const float *fr, int v, int d) {
    return __fmaf_rn(fr[0], __int2float_rn(d), __fmul_rn(fr[1], __int2float_rn(v)));
}
// The codes of a warp's 16 tile rows with the downsample inside (QC_RESD_FAST), a lane its
// channel's (fr: its fast row): t the combined accumulators, rowpop16 their bipolar terms, r16
// D's dots (resd16's int bits, [row][33]). Element (v, d) takes x = fma(kappa, d, sgn * v),
// correctly rounded (fmaf on the host gives the same bits); for d in [il_l, ih_l] level l is
// reached where x > hi_l and not where x < lo_l, outside it as the ends' bits say
// (blob_qresd_fast_row proves all of it). The unrolled tests take the common case alone, d inside
// every level's interval (the lane's [dl, dh]; every channel of the w1a2 ResNet-18 has all of
// D's dots there): three comparisons a level and no ends. A row outside it, or undecided, goes
// after them, a row a lane at a time (__ballot_sync loop, so that the calls' registers stay out
// of the unrolled tests), to the ends' bits or, undecided, to resd_exact (few: the floats keep
// the band between the bounds narrow, docs/kernels.md). Codes to cnt (0 past QC_O).
BNN_QC_FN void QC_CAT(QC_NAME, resd_rows)(int (*t)[33], const int *rowpop16, const float *r16, const float *fr,
                                          const float *EP, int n0, int lane, int *cnt) {
    const int o = n0 + lane;
    int dl = __float_as_int(fr[6]), dh = __float_as_int(fr[7]); // (C: the host emulator compiles this)
    for (int l = 1; l < 3; l++) {
        const int il = __float_as_int(fr[6 + 4 * l]), ih = __float_as_int(fr[7 + 4 * l]);
        dl = il > dl ? il : dl;
        dh = ih < dh ? ih : dh;
    }
    unsigned left = 0u; // bit r: row r outside [dl, dh] or undecided
#ifdef __CUDACC__
#pragma unroll
#endif
    for (int r = 0; r < 16; r++) {
        const int v = t[r][lane] - (QC_WBIPOLAR ? rowpop16[r] : 0), d = __float_as_int(r16[r * 33 + lane]);
        const float x = QC_CAT(QC_NAME, resd_x)(fr, v, d);
        const bool c0 = x > fr[5], c1 = x > fr[9], c2 = x > fr[13];
        const bool undecided = !(c0 || x < fr[4]) || !(c1 || x < fr[8]) || !(c2 || x < fr[12]) || d < dl || d > dh;
        QC_RESD_FAST_COUNT();
        cnt[r] = o < QC_O ? (int)c0 + (int)c1 + (int)c2 : 0;
        left |= (unsigned)(undecided && o < QC_O) << r;
    }
    unsigned fixed = 0u, b0 = 0u, b1 = 0u; // (codes by bits, not by a run-time index into cnt)
    while (__ballot_sync(0xffffffffu, left != 0u)) {
        if (left) {
            const int r = __ffs((int)left) - 1;
            left &= left - 1u;
            const int v = t[r][lane] - (QC_WBIPOLAR ? rowpop16[r] : 0), d = __float_as_int(r16[r * 33 + lane]);
            const float x = QC_CAT(QC_NAME, resd_x)(fr, v, d);
            int code = 0;
            if (d < dl || d > dh)
                QC_RESD_FAST_OUT();
            for (int l = 0; l < 3 && code >= 0; l++) {
                const int c = QC_CAT(QC_NAME, fast_level)(fr, l, x, d);
                code = c < 0 ? -1 : code + c;
            }
            if (code < 0) {
                QC_RESD_FAST_EXACT();
                code = QC_CAT(QC_NAME, resd_exact)(EP, o, v, d);
            }
            fixed |= 1u << r, b0 |= (unsigned)(code & 1) << r, b1 |= (unsigned)(code >> 1 & 1) << r;
        }
    }
    if (fixed) // (most lanes have none: the 16 selects skipped)
#ifdef __CUDACC__
#pragma unroll
#endif
        for (int r = 0; r < 16; r++)
            cnt[r] = fixed >> r & 1 ? (int)((b0 >> r & 1) | (b1 >> r & 1) << 1) : cnt[r];
}
#endif

BNN_QC_LINKAGE __global__ void __launch_bounds__(QC_NT, QC_MINB)
QC_NAME(const unsigned *__restrict__ X, const unsigned *__restrict__ W, int M, QC_EPARAMS) {
    BNN_PDL_ENTER();
    BNN_QC_DSMEM(qc_dsmem);
#if QC_FRAGL
    __shared__ BNN_QC_ALIGN16 int thr[QC_BN][QC_TST]; // codes_frag's levels
#else
    __shared__ int tile[QC_WM * QC_WN][16][33];
#endif
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wm = warp % QC_WM, wn = warp / QC_WM;
    const int ntiles = M / QC_CELLS * QC_TYX, n0 = blockIdx.x * QC_BN + wn * 32; // the warp's channels
#if QC_RESD_FAST
    if (Yf)
        __trap(); // no f32 out with the fast test (lower.c emits it for layers whose GPU value is codes)
    float fr[QC_RESD_FR]; // this lane's channel's fast row, for every tile (read in resd_rows, the
    QC_CAT(QC_NAME, fast_row)(EP, n0 + lane, fr); // layers of 2 and 4 warps ran 3-10 % slower)
#elif QC_EPI == 3
    float ca[QC_NSTC], cb[QC_NSTC]; // this lane's channel's chain constants, for every tile
    QC_CAT(QC_NAME, consts)(EP, n0 + lane, ca, cb);
    float cy[QC_NSTC]; // the reciprocals of the dividing stages (bnn_div_fast)
    bool cfast = true; // whether they all allow it (a lane past QC_O: its values are not stored)
    for (int k = 0; k < QC_NST; k++) {
        cy[k] = QC_DIV >> k & 1 ? __frcp_rn(ca[k]) : 0.0f;
        cfast = cfast && (!(QC_DIV >> k & 1) || n0 + lane >= QC_O || bnn_div_fast_ok(ca[k]));
    }
#elif QC_RCODE
    QC_CAT(QC_NAME, rcode_levels)(T, thr, blockIdx.x * QC_BN, tid); // read after the first tile's barriers
#elif QC_FRAGL
    QC_CAT(QC_NAME, frag_levels)(T, dir, thr, blockIdx.x * QC_BN, tid); // read after the first tile's barriers
#elif QC_EPI == 2
    int th[QC_NTR]; // this lane's channel's levels, for every tile
    const int tmask = QC_CAT(QC_NAME, level_mask)(dir, n0 + lane, th, T);
#endif
    if (bnn_qh_smem_size() < QC_HSMEM)
        __trap(); // launched with too little shared memory
    if ((int)blockIdx.y >= ntiles)
        return;
    const unsigned sB = bnn_qh_smem(qc_dsmem), sA0 = sB + QC_BSZ, sZ = sA0 + 2 * QC_ASZ;
    int *hpop = (int *)(qc_dsmem + QC_BSZ + 2 * QC_ASZ + 16), *rowpop = hpop + QC_NHPOP;
#if QC_EPI == 3 && QC_RES
    const int rbase = warp * QC_MI * 16 * 33; // this warp's residuals: words of the region after rowpop
    float *res = (float *)(rowpop + QC_BM) + rbase;
    const unsigned sR = sB + (unsigned)(QC_BSZ + 2 * QC_ASZ + 16 + 4 * QC_NHPOP + 4 * QC_BM + 4 * rbase);
#elif QC_RCODE
    const int rbase = warp * QC_MI * 16 * QC_RW; // this warp's residual words, after rowpop
    const unsigned *res = (const unsigned *)(rowpop + QC_BM) + rbase;
    const unsigned sR = sB + (unsigned)(QC_BSZ + 2 * QC_ASZ + 16 + 4 * QC_NHPOP + 4 * QC_BM + 4 * rbase);
#endif
    // Zero lines first: the zero line of B, and the words past LDW of every chunk (LDW < 4),
    // which the narrower cp.async below never write.
    for (int i = tid; i < (QC_BSZ + 2 * QC_ASZ) / 16 + 1; i += QC_NT)
        bnn_qh_st16(sB + 16 * i, 0u, 0u, 0u, 0u);
    __syncthreads();
    for (int i = tid; i < QC_WB * QC_NIT * QC_BN; i += QC_NT) {
        const int j = i % QC_NIT, ol = i / QC_NIT % QC_BN, q = i / QC_NIT / QC_BN, o = blockIdx.x * QC_BN + ol;
        const int tap = QC_ITEM_TAP(j);
        const unsigned *src = W + ((long long)q * QC_O + (o < QC_O ? o : 0)) * QC_KROW + tap * QC_LDW + j % QC_CCR * 4;
        const unsigned dst = sB + ((q * QC_NIT + j) * QC_BN + ol) * 16;
        bnn_qh_cp(dst, src, QC_LDW >= 4 ? 16 : 4 * QC_LDW, o < QC_O ? (QC_LDW >= 4 ? 16u : 4u * QC_LDW) : 0u);
        if (QC_PAIR && tap % QC_KW + 1 < QC_KW) // the row's next tap (past its last: the zero half)
            bnn_qh_cp(dst + 8, src + QC_LDW, 4 * QC_LDW, o < QC_O ? 4u * QC_LDW : 0u);
    }
#if QC_LSTAGE // (read after the first tile's barriers; a channel past QC_O: counts 0 in any case)
    int *lev = (int *)(qc_dsmem + QC_HSMEM - QC_LSZ);
    for (int i = tid; i < QC_L * QC_BN; i += QC_NT) {
        const int ol = i / QC_L, l = i % QC_L, o = blockIdx.x * QC_BN + ol;
        lev[l * QC_BN + ol] = o < QC_O ? __ldg(T + (long long)o * QC_L + l) : 0x7fffffff;
    }
#endif
    QC_CAT(QC_NAME, halo)(X, blockIdx.y, sA0, tid);
    bnn_qh_commit(); // with the weights

    unsigned abase[QC_MI]; // halo slot of this lane's ldmatrix row at tap (0, 0), per m16 tile
    for (int mi = 0; mi < QC_MI; mi++) {
        const int r = wm * (QC_MI * 16) + mi * 16 + ((lane >> 3) & 1) * 8 + (lane & 7);
        abase[mi] = (unsigned)((r / QC_TW * QC_SHE * QC_HWS + r % QC_TW * QC_SWC) * 16);
    }
    int buf = 0;
    for (int tl = blockIdx.y; tl < ntiles; tl += gridDim.y, buf ^= 1) {
        const unsigned sA = sA0 + buf * QC_ASZ;
        const int n = tl / QC_TYX, oh0 = tl % QC_TYX / QC_TX * QC_TH, ow0 = tl % QC_TX * QC_TW;
#if QC_RESD
        // This tile's downsample input words (the previous tile's residuals were read before its
        // last barrier).
        QC_CAT(QC_NAME, resd_issue)((const unsigned *)R, n, oh0, ow0, wm, lane, sR);
        bnn_qh_commit();
#elif QC_EPI == 3 && QC_RES
        // This tile's residuals (the previous tile's were read before its last barrier).
        QC_CAT(QC_NAME, res_issue)(R, n, oh0, ow0, wm, n0, lane, sR);
        bnn_qh_commit();
#elif QC_RCODE
        QC_CAT(QC_NAME, rcode_issue)(R, RN, n, oh0, ow0, wm, n0, lane, sR);
        bnn_qh_commit();
#endif
        // The other buffer was last read by the previous tile, which every thread has finished.
        if (tl + (int)gridDim.y < ntiles)
            QC_CAT(QC_NAME, halo)(X, tl + gridDim.y, sA0 + (buf ^ 1) * QC_ASZ, tid);
        bnn_qh_commit();
#if QC_STAGE_RES
        bnn_qh_wait2(); // this tile's halo (and the first time the weights) are in; residuals may not be
#else
        bnn_qh_wait1(); // this tile's halo (and the first time the weights) are in
#endif
        __syncthreads();
#if QC_WBIPOLAR
        // sum_p 2^p popc(X_p) of each row over its taps (u = 2b - 1), from each pixel's count
        // (hpop: HH rows of QC_HPS, pixel hx at hx).
        for (int px = tid; px < QC_HH * QC_HWD; px += QC_NT) {
            const int hy = px / QC_HWD, hx = px % QC_HWD, s = QC_PX_SLOT(hy, hx);
            int c = 0;
            for (int p = 0; p < QC_XB; p++)
                for (int cc = 0; cc < QC_CCR; cc++) {
                    unsigned v[4];
                    bnn_qh_ld16(sA + ((p * QC_CCR + cc) * QC_NHP + s) * 16, v);
                    // (QC_PAIR: the slot's own pixel, its first half; QC_HALF: the pixel's half,
                    // chosen by selects: v indexed by hx would live in local memory)
                    const bool hi = QC_PX_HI(hx);
                    c += (__popc(hi ? v[2] : v[0]) + __popc(hi ? v[3] : v[1]) + (QC_PAIR ? 0 : __popc(v[2]) + __popc(v[3]))) << p;
                }
            hpop[hy * QC_HPS + hx] = c;
        }
        __syncthreads();
        for (int r = tid; r < QC_BM; r += QC_NT) {
            const int b = r / QC_TW * QC_SHE * QC_HPS + r % QC_TW * QC_SWE;
            int c = 0;
            for (int tap = 0; tap < QC_TAPS; tap++)
                c += hpop[b + tap / QC_KW * QC_DH * QC_HPS + tap % QC_KW * QC_DW];
            rowpop[r] = c;
        }
#else
        (void)hpop;
#endif
        int pos[QC_NACC][QC_MI][4][4], neg[QC_NNEG][QC_MI][4][4];
        QC_CAT(QC_NAME, zero)(pos, neg);
        BNN_QC_UNROLL
        for (int k = 0; k < (QC_NIT + 1) / 2; k++) {
            // Items 2k (k128 half lo: lanes 0-15) and 2k+1 (hi: lanes 16-31; past NIT the zero
            // line of B, A any row).
            const int jl = 2 * k, jh = 2 * k + 1 < QC_NIT ? 2 * k + 1 : 2 * k, j = (lane >> 4) ? jh : jl;
            const int tap = QC_ITEM_TAP(j);
            const unsigned ao = sA + ((j % QC_CCR) * QC_NHP + tap / QC_KW * QC_DH * QC_HWS + QC_KXS(tap % QC_KW)) * 16;
            unsigned a[QC_XB][QC_MI][4];
            BNN_QC_UNROLL
            for (int p = 0; p < QC_XB; p++)
                BNN_QC_UNROLL
                for (int mi = 0; mi < QC_MI; mi++)
                    bnn_qh_ldsm4(ao + p * QC_CCR * QC_NHP * 16 + abase[mi], a[p][mi]);
            // Every loop below unrolled, so that pos and neg are indexed by constants (nvcc left
            // w6a2's q loop rolled: the accumulators in local memory, a 512-byte stack, and the
            // layers 4.5 to 13 times slower than with it unrolled).
            BNN_QC_UNROLL
            for (int q = 0; q < QC_WB; q++) {
                // b0, b1 of n8 tiles 2h and 2h+1: matrices (rows of tile 2h | 2h+1) x (lo | hi).
                unsigned b[4][2];
                BNN_QC_UNROLL
                for (int h = 0; h < 2; h++) {
                    const int br = wn * 32 + h * 16 + (lane >> 4) * 8 + (lane & 7);
                    const unsigned ba = !((lane >> 3) & 1) ? sB + ((q * QC_NIT + jl) * QC_BN + br) * 16
                                        : 2 * k + 1 < QC_NIT ? sB + ((q * QC_NIT + 2 * k + 1) * QC_BN + br) * 16
                                                             : sZ;
                    unsigned r4[4];
                    bnn_qh_ldsm4(ba, r4);
                    b[2 * h][0] = r4[0], b[2 * h][1] = r4[1], b[2 * h + 1][0] = r4[2], b[2 * h + 1][1] = r4[3];
                }
                BNN_QC_UNROLL
                for (int p = 0; p < QC_XB; p++)
                    BNN_QC_UNROLL
                    for (int mi = 0; mi < QC_MI; mi++)
                        BNN_QC_UNROLL
                        for (int jn = 0; jn < 4; jn++) {
                            int *d = QC_NEG && q == QC_WB - 1 ? neg[QC_NEG ? p : 0][mi][jn] : pos[p + q][mi][jn];
                            bnn_qc_mma(d, a[p][mi][0], a[p][mi][1], a[p][mi][2], a[p][mi][3], b[jn][0], b[jn][1]);
                        }
            }
        }
        __syncthreads(); // rowpop is complete
#if QC_STAGE_RES
        bnn_qh_wait1(); // this thread's residual copies are in (the next halo's may not be)
        __syncwarp();   // and the other lanes' of the warp
#endif
        // Unrolled but for the float chain: a loop index into pos and neg puts them in local
        // memory (the w1a2 ResNet's 56x56 threshold layer: 0.32 ms so, 0.24 ms unrolled, batch
        // 256, H200), while the chain's unrolled epilogue was slower (its first chain layer 0.92
        // against 0.73 ms). So the chain's loop indexes them by a constant, m2 == mi.
#if defined(__CUDACC__) && QC_EPI != 3
#pragma unroll
#endif
        for (int mi = 0; mi < QC_MI; mi++) {
            const int rl0 = wm * (QC_MI * 16) + mi * 16; // the m16 tile's first row in the tile
#if QC_RESD_FAST
            // the m16 tile's accumulators and downsample dots (from the words resd_issue staged),
            // then its codes by the fast test
            BNN_QC_UNROLL
            for (int m2 = 0; m2 < QC_MI; m2++)
                if (m2 == mi) QC_CAT(QC_NAME, combine)(pos, neg, m2, lane, tile[warp]);
            QC_CAT(QC_NAME, resd16)(EP, n0, lane, res + mi * 16 * 33);
            int cnt[16];
            QC_CAT(QC_NAME, resd_rows)(tile[warp], rowpop + rl0, res + mi * 16 * 33, fr, EP, n0, lane, cnt);
            if (n0 < QC_O)
                QC_CAT(QC_NAME, codes16)(cnt, n, oh0, ow0, rl0, n0, lane, Y);
            __syncwarp(); // (the next m16 tile's combine overwrites the tile)
#elif QC_FRAGL
#if QC_RCODE
            const unsigned *rw = res + mi * 16 * QC_RW;
            unsigned *yn = YN;
#else
            const unsigned *rw = 0;
            unsigned *yn = 0;
#endif
            if (n0 < QC_O)
                QC_CAT(QC_NAME, codes_frag)(pos, neg, mi, rowpop + rl0, thr + wn * 32, rw, n, oh0, ow0, rl0, n0,
                                            lane, Y, yn);
#else
            BNN_QC_UNROLL
            for (int m2 = 0; m2 < QC_MI; m2++)
                if (m2 == mi) QC_CAT(QC_NAME, combine)(pos, neg, m2, lane, tile[warp]);
            __syncwarp();
#if QC_EPI == 1
#ifdef __CUDACC__
#pragma unroll
#endif
            for (int r = 0; r < 16; r++) {
                const int rl = rl0 + r, oh = oh0 + rl / QC_TW, ow = ow0 + rl % QC_TW;
                if (n0 >= QC_O || oh >= QC_OH || ow >= QC_OW) // rows of a tile overhanging the output are not stored
                    continue;
                QC_CAT(QC_NAME, row)(tile[warp][r][lane] - (QC_WBIPOLAR ? rowpop[rl] : 0), 0.0f, n,
                                     (long long)oh * QC_OW + ow, n0, lane, 0, QC_EARGS);
            }
#else
            // The 16 rows' codes first, side by side, then their ballots and stores (codes16).
            int cnt[16];
#if QC_EPI == 3
            float fv[16];
#if QC_RESD
            // the m16 tile's residuals from the downsample input's words resd_issue staged there
            QC_CAT(QC_NAME, resd16)(EP, n0, lane, res + mi * 16 * 33);
#endif
            // Divisions without a branch (bnn_div_fast), so that the rows' chains overlap; where
            // one may differ from __fdiv_rn's, the lane runs its 16 chains again with it.
#if QC_RES
            const float *res16 = res + mi * 16 * 33;
#else
            const float *res16 = 0;
#endif
            bool fast = cfast;
            QC_CAT(QC_NAME, chains16)(tile[warp], rowpop + rl0, res16, lane, n0 + lane < QC_O, ca, cb, cy, &fast, cnt, fv);
            if (!fast && n0 + lane < QC_O)
                QC_CAT(QC_NAME, chains16)(tile[warp], rowpop + rl0, res16, lane, 1, ca, cb, cy, 0, cnt, fv);
#else
#ifdef __CUDACC__
#pragma unroll
#endif
            for (int r = 0; r < 16; r++) {
                const int v = tile[warp][r][lane] - (QC_WBIPOLAR ? rowpop[rl0 + r] : 0);
#if QC_LSTAGE
                cnt[r] = bnn_q8_count_sorted_at(v ^ tmask, lev + wn * 32 + lane, QC_BN, QC_L, BNN_Q8_POW2(QC_L));
#else
                cnt[r] = QC_CAT(QC_NAME, level_count)(v, tmask, th, T, n0 + lane);
#endif
                cnt[r] = n0 + lane < QC_O ? cnt[r] : 0;
            }
#endif
            if (n0 < QC_O)
                QC_CAT(QC_NAME, codes16)(cnt, n, oh0, ow0, rl0, n0, lane, Y);
#if QC_EPI == 3 && QC_F32
#ifdef __CUDACC__
#pragma unroll
#endif
            for (int r = 0; r < 16; r++)
                tile[warp][r][lane] = __float_as_int(fv[r]); // the element this lane's chain read
#endif
#endif
            __syncwarp();
#if QC_EPI == 3 && QC_F32
            if (Yf) {
                QC_CAT(QC_NAME, f32_store)(tile[warp], Yf, n, oh0, ow0, rl0, n0, lane);
                __syncwarp();
            }
#endif
#endif // QC_FRAGL
        }
        __syncthreads(); // the halo, hpop and rowpop are free for the next tile
    }
}
#else
BNN_QC_LINKAGE __global__ void __launch_bounds__(32)
QC_NAME(const unsigned *__restrict__ X, const unsigned *__restrict__ W, int M, QC_EPARAMS) {
    BNN_PDL_ENTER();
    const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    const int n0 = blockIdx.x * 32;
    __shared__ int tile[16][33];
    // Row tiles blockIdx.y, + gridDim.y, ...: any grid.y works (the runtime caps it at 65,535 and
    // at one wave: BLOB_STEP_ONE_WAVE).
    for (int m0 = blockIdx.y * 16; m0 < M; m0 += gridDim.y * 16) {
        // Plane pairs with the same shift s = p + q share an accumulator (pos[s]); those of a signed
        // top weight plane get their own (neg[p]), as in bgemm_planes.cu.
        int pos[QC_NACC][1][4][4], neg[QC_NNEG][1][4][4];
        QC_CAT(QC_NAME, zero)(pos, neg);
        // This lane's two A rows (g and g + 8): image, top-left tap, and whether the row exists.
        const unsigned *img[2];
        int ih0[2], iw0[2];
        bool live[2];
        for (int h = 0; h < 2; h++) {
            const int m = m0 + g + 8 * h;
            live[h] = m < M;
            const int cell = live[h] ? m % QC_CELLS : 0;
            img[h] = X + (live[h] ? (long long)(m / QC_CELLS) * QC_XB * QC_PLANE : 0);
            ih0[h] = cell / QC_OW * QC_SH - QC_PT;
            iw0[h] = cell % QC_OW * QC_SW - QC_PL;
        }
        for (int k = 0; k < QC_KROW; k += 8) {
            // HARDWARE.md's m16n8k256 fragments: a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][4+t],
            // a3 = A[g+8][4+t]; b0 = B[g][t], b1 = B[g][4+t]. Word e of a row is word e % LDW of tap
            // e / LDW: an input word, pad_code's bit p over the real channels of that word (a tap
            // outside the image), or zero (past the last tap, or a row past M).
            const unsigned *src[4];
            unsigned pad[4];
            for (int i = 0; i < 4; i++) {
                const int h = i & 1, e = k + t + 4 * (i >> 1), tap = e / QC_LDW, wi = e % QC_LDW;
                const int ih = ih0[h] + tap / QC_KW * QC_DH, iw = iw0[h] + tap % QC_KW * QC_DW;
                const int bits = QC_C - 32 * wi;
                const bool real = live[h] && tap < QC_TAPS;
                src[i] = real && ih >= 0 && ih < QC_H && iw >= 0 && iw < QC_W
                             ? img[h] + ((long long)ih * QC_W + iw) * QC_LDW + wi
                             : 0;
                pad[i] = !real ? 0u : bits >= 32 ? 0xffffffffu : bits <= 0 ? 0u : (1u << bits) - 1u;
            }
            unsigned a[QC_XB][4];
            for (int p = 0; p < QC_XB; p++)
                for (int i = 0; i < 4; i++)
                    a[p][i] = src[i] ? src[i][p * QC_PLANE] : ((QC_PAD_CODE >> p) & 1) ? pad[i] : 0u;
            BNN_QC_UNROLL // (as the halo kernel's: pos and neg indexed by constants)
            for (int q = 0; q < QC_WB; q++)
                BNN_QC_UNROLL
                for (int j = 0; j < 4; j++) {
                    const int n = n0 + 8 * j + g;
                    const unsigned *wq = W + ((long long)q * QC_O + n) * QC_KROW + k;
                    const unsigned b0 = n < QC_O ? wq[t] : 0u;
                    const unsigned b1 = n < QC_O ? wq[4 + t] : 0u;
                    BNN_QC_UNROLL
                    for (int p = 0; p < QC_XB; p++) {
                        int *d = QC_NEG && q == QC_WB - 1 ? neg[QC_NEG ? p : 0][0][j] : pos[p + q][0][j];
                        bnn_qc_mma(d, a[p][0], a[p][1], a[p][2], a[p][3], b0, b1);
                    }
                }
        }
        QC_CAT(QC_NAME, combine)(pos, neg, 0, lane, tile);
        __syncwarp();
#if QC_WBIPOLAR
        // u = 2b - 1: subtract sum_p 2^p * popc(X_p) over each row's taps, padded taps included.
        for (int r = 0; r < 16; r++) {
            const int m = m0 + r;
            int pop = 0;
            if (m < M) {
                const int cell = m % QC_CELLS;
                const unsigned *im = X + (long long)(m / QC_CELLS) * QC_XB * QC_PLANE;
                for (int e = lane; e < QC_TAPS * QC_LDW; e += 32) {
                    const int tap = e / QC_LDW, wi = e % QC_LDW, bits = QC_C - 32 * wi;
                    const int ih = cell / QC_OW * QC_SH - QC_PT + tap / QC_KW * QC_DH;
                    const int iw = cell % QC_OW * QC_SW - QC_PL + tap % QC_KW * QC_DW;
                    const bool in = ih >= 0 && ih < QC_H && iw >= 0 && iw < QC_W;
                    const unsigned real = bits >= 32 ? 0xffffffffu : bits <= 0 ? 0u : (1u << bits) - 1u;
                    for (int p = 0; p < QC_XB; p++) {
                        const unsigned word = in ? im[p * QC_PLANE + ((long long)ih * QC_W + iw) * QC_LDW + wi]
                                                 : (((QC_PAD_CODE >> p) & 1) ? real : 0u);
                        pop += __popc(word) << p;
                    }
                }
            }
            for (int o = 16; o > 0; o >>= 1)
                pop += __shfl_xor_sync(0xffffffffu, pop, o);
            tile[r][lane] -= pop;
            __syncwarp();
        }
#endif
        float rv[16] = {0.0f};
#if QC_EPI == 3 && QC_RES
#ifdef __CUDACC__
#pragma unroll
#endif
        for (int r = 0; r < 16; r++)
            if (m0 + r < M && n0 + lane < QC_O)
                rv[r] = R[((long long)(m0 + r) / QC_CELLS * QC_O + n0 + lane) * QC_CELLS + (m0 + r) % QC_CELLS];
#endif
#ifdef __CUDACC__
#pragma unroll
#endif
        for (int r = 0; r < 16; r++) {
            const int m = m0 + r;
            if (m >= M)
                break;
#if QC_EPI == 3 && QC_F32
            float *fdst = Yf ? Yf + ((long long)(m / QC_CELLS) * QC_O + n0 + lane) * QC_CELLS + m % QC_CELLS : 0;
#else
            float *fdst = 0;
#endif
            QC_CAT(QC_NAME, row)(tile[r][lane], rv[r], m / QC_CELLS, m % QC_CELLS, n0, lane, fdst, QC_EARGS);
        }
        __syncwarp(); // tile is free for the next row tile
    }
}
#endif // QC_HALO
#undef QC_NAME
#undef QC_C
#undef QC_H
#undef QC_W
#undef QC_O
#undef QC_KH
#undef QC_KW
#undef QC_SH
#undef QC_SW
#undef QC_PT
#undef QC_PL
#undef QC_DH
#undef QC_DW
#undef QC_OH
#undef QC_OW
#undef QC_XB
#undef QC_WB
#undef QC_WSIGNED
#undef QC_WBIPOLAR
#undef QC_PAD_CODE
#undef QC_EPI
#undef QC_L
#undef QC_YB
#undef QC_LDW
#undef QC_LDY
#undef QC_NST
#undef QC_DIV
#undef QC_RELU
#undef QC_RES
#undef QC_ORELU
#undef QC_F32
#undef QC_QLO
#undef QC_QHI
#undef QC_ROUND
#undef QC_QSCALE
#undef QC_QZERO
#undef QC_TAPS
#undef QC_CELLS
#undef QC_KROW
#undef QC_NSTC
#undef QC_PLANE
#undef QC_YPLANE
#undef QC_NEG
#undef QC_NPOS
#undef QC_HALO
#undef QC_MINB
#undef QC_TH
#undef QC_TW
#undef QC_WM
#undef QC_WN
#undef QC_MI
#undef QC_NACC
#undef QC_NNEG
#undef QC_EPARAMS
#undef QC_EARGS
#undef QC_BM
#undef QC_BN
#undef QC_NT
#undef QC_CCR
#undef QC_PAIR
#undef QC_KWI
#undef QC_ITEM_TAP
#undef QC_NIT
#undef QC_FH
#undef QC_FW
#undef QC_SHE
#undef QC_SWE
#undef QC_HH
#undef QC_HWD
#undef QC_HWS
#undef QC_NHP
#undef QC_HALF
#undef QC_HWC
#undef QC_SWC
#undef QC_KXS
#undef QC_PX_SLOT
#undef QC_PX_HI
#undef QC_PX_OFF
#undef QC_HPS
#undef QC_NHPOP
#undef QC_TX
#undef QC_TYX
#undef QC_BSZ
#undef QC_ASZ
#undef QC_HSMEM
#undef QC_RSZ
#undef QC_STAGE_RES
#undef QC_RESD
#undef QC_RESD_C
#undef QC_RESD_H
#undef QC_RESD_W
#undef QC_RESD_SH
#undef QC_RESD_SW
#undef QC_RESD_XB
#undef QC_RESD_LDW
#undef QC_RESD_NST
#undef QC_RESD_DIV
#undef QC_RESD_RELU
#undef QC_RESD_ORELU
#undef QC_RESD_PLANE
#undef QC_RESD_KROW
#undef QC_RESD_NSEG
#undef QC_RESD_NK
#undef QC_RESD_FAST
#undef QC_RESD_FT
#undef QC_RESD_FW
#undef QC_RESD_FR
#undef QC_RESD_FAST_COUNT
#undef QC_RESD_FAST_EXACT
#undef QC_RESD_FAST_OUT
#undef QC_RCODE
#undef QC_RNAN
#undef QC_YNAN
#undef QC_TST
#undef QC_RW
#undef QC_TREG
#undef QC_LFOLD
#undef QC_LSTAGE
#undef QC_LSZ
#undef QC_FRAGL
#undef QC_NTR
