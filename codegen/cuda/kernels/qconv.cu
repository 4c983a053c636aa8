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
//   of 8: a b1 NHWC-packed image). 3 = the float chain of a qconv2d_chain (docs/kernels.md):
//   v = (float)acc through QC_NST stages of EP [NST][2][QC_O] (v*a or v/a where bit k of QC_DIV,
//   + b, relu where bit k of QC_RELU), + R (f32 NCHW) by QC_RES (1: v + r, 2: r + v), relu with
//   QC_ORELU, then the quantizer q = clamp(round(v / scale + zero), QC_QLO, QC_QHI) (QC_ROUND,
//   scale and zero as float bits QC_QSCALE, QC_QZERO): f32 NCHW Yf = v (QC_F32 1) or
//   (q - zero) * scale (QC_F32 2), and the codes q - QC_QLO as QC_YB planes (0: none) in Y, as
//   epi 2 writes its counts. Arguments (X, W, M, EP, R, Yf, Y).
// One warp computes 16 pixels x 32 channels (four n8 MMA tiles); grid = (ceil(O/32),
// ceil(M/16)), M = images * QC_OH * QC_OW. Each inclusion defines one kernel QC_NAME and
// #undefs its QC_* macros at the end.

#ifndef BNN_QCONV_ONCE
#define BNN_QCONV_ONCE
#define BNN_QC_LINKAGE extern "C" // (tests/lowbit/test_qconv_emu.c runs this file as C)
__device__ __forceinline__ void bnn_qc_mma(int *d, unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                           unsigned b0, unsigned b1) {
    const unsigned a[4] = {a0, a1, a2, a3};
    bnn_bmma(*reinterpret_cast<int(*)[4]>(d), a, b0, b1); // common.cu: the AND-popc MMA
}
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
#ifndef QC_ORELU
#define QC_ORELU 0
#endif
#define QC_TAPS (QC_KH * QC_KW)
#define QC_CELLS (QC_OH * QC_OW)
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
BNN_QC_LINKAGE __global__ void __launch_bounds__(32)
QC_NAME(const unsigned *__restrict__ X, const unsigned *__restrict__ W, int M, const float *__restrict__ EP,
        const float *__restrict__ R, float *__restrict__ Yf, unsigned *__restrict__ Y) {
#else
BNN_QC_LINKAGE __global__ void __launch_bounds__(32)
QC_NAME(const unsigned *__restrict__ X, const unsigned *__restrict__ W, int M,
        const int *__restrict__ T, const int *__restrict__ dir, void *__restrict__ Y) {
#endif
    const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    const int m0 = blockIdx.y * 16, n0 = blockIdx.x * 32;
    __shared__ int tile[16][33];
    // Plane pairs with the same shift s = p + q share an accumulator (pos[s]); those of a signed
    // top weight plane get their own (neg[p]), as in bgemm_planes.cu.
    int pos[QC_NPOS > 0 ? QC_NPOS : 1][4][4];
    int neg[QC_NEG ? QC_XB : 1][4][4];
    for (int s = 0; s < (QC_NPOS > 0 ? QC_NPOS : 1); s++)
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 4; i++)
                pos[s][j][i] = 0;
    for (int p = 0; p < (QC_NEG ? QC_XB : 1); p++)
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 4; i++)
                neg[p][j][i] = 0;
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
        for (int q = 0; q < QC_WB; q++)
            for (int j = 0; j < 4; j++) {
                const int n = n0 + 8 * j + g;
                const unsigned *wq = W + ((long long)q * QC_O + n) * QC_KROW + k;
                const unsigned b0 = n < QC_O ? wq[t] : 0u;
                const unsigned b1 = n < QC_O ? wq[4 + t] : 0u;
                for (int p = 0; p < QC_XB; p++) {
                    int *d = QC_NEG && q == QC_WB - 1 ? neg[QC_NEG ? p : 0][j] : pos[p + q][j];
                    bnn_qc_mma(d, a[p][0], a[p][1], a[p][2], a[p][3], b0, b1);
                }
            }
    }
    // Combine: acc = sum_s 2^s pos[s] - sum_p 2^(p + WB - 1) neg[p]; bipolar planes count twice.
    for (int j = 0; j < 4; j++) {
        int acc[4];
        for (int i = 0; i < 4; i++) {
            int v = 0;
            for (int s = 0; s < QC_NPOS; s++)
                v += pos[s][j][i] << s;
#if QC_NEG
            for (int p = 0; p < QC_XB; p++)
                v -= neg[p][j][i] << (p + QC_WB - 1);
#endif
            acc[i] = QC_WBIPOLAR ? 2 * v : v;
        }
        // d0 = D[g][2t], d1 = D[g][2t+1], d2 = D[g+8][2t], d3 = D[g+8][2t+1] per n8 tile.
        tile[g][8 * j + 2 * t] = acc[0];
        tile[g][8 * j + 2 * t + 1] = acc[1];
        tile[g + 8][8 * j + 2 * t] = acc[2];
        tile[g + 8][8 * j + 2 * t + 1] = acc[3];
    }
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
    const int o = n0 + lane;
    for (int r = 0; r < 16; r++) {
        const int m = m0 + r;
        if (m >= M)
            break;
        const int v = tile[r][lane];
        const long long image = m / QC_CELLS, cell = m % QC_CELLS;
#if QC_EPI == 1
        if (o < QC_O)
            ((int *)Y)[(image * QC_O + o) * QC_CELLS + cell] = v;
#else
        int count = 0;
#if QC_EPI == 2
        if (o < QC_O) {
            const bool up = dir[o] >= 0;
            for (int l = 0; l < QC_L; l++) {
                const int th = T[o * QC_L + l];
                count += up ? v >= th : v <= th;
            }
        }
#else
        // The float chain (rt_cpu.c run_qconv_chain's operations, each rounded on its own, no
        // contraction): stages, residual, relu, then the next layer's quantizer.
        if (o < QC_O) {
            const long long at = (image * QC_O + o) * QC_CELLS + cell;
            float x = __int2float_rn(v);
            for (int k = 0; k < QC_NST; k++) {
                const float a = __ldg(EP + 2 * k * QC_O + o), b = __ldg(EP + (2 * k + 1) * QC_O + o);
                x = (QC_DIV >> k & 1) ? __fdiv_rn(x, a) : __fmul_rn(x, a);
                x = __fadd_rn(x, b);
                if (QC_RELU >> k & 1)
                    x = x < 0.0f ? 0.0f : x;
            }
#if QC_RES == 1
            x = __fadd_rn(x, R[at]);
#elif QC_RES == 2
            x = __fadd_rn(R[at], x);
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
            Yf[at] = x;
#elif QC_F32 == 2
            Yf[at] = __fmul_rn(__fsub_rn(q, zero), scale);
#endif
        }
#endif
        // The next layer's codes, written directly as its image planes (32 channels a word).
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
#endif
    }
}

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
#undef QC_PLANE
#undef QC_YPLANE
#undef QC_NEG
#undef QC_NPOS
