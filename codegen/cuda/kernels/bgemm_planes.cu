// bgemm_planes.cu: low-bit GEMM (qdense, docs/ir.md) as bit-planes on the b1 tensor cores:
//     acc[m][n] = sum_k x[m][k] * u[n][k]
// with x unsigned PL_XB-bit activation codes and u PL_WB-bit weight codes, computed as
//     acc = sum_p sum_q c_q * 2^(p+q) * popc(X_p[m] AND W_q[n])
// over 0/1 planes (X_p = bit p of x; W_q = bit q of u in two's complement, c_q = -1 for the
// top plane when PL_WSIGNED, else +1). The AND-popc of 0/1 planes is the product of the bits:
// no +-1 algebra. With PL_WBIPOLAR the weights are +-1 as one plane b (u = 2b - 1):
//     acc = sum_p 2^p * (2*popc(X_p AND B) - popc(X_p)).
// Only mma.sync m16n8k256 .and.popc (HARDWARE.md: never XOR on Hopper).
//
// Operands (words are 32-bit, bit k of a row = bit k%32 of word k/32, rows zero-padded to
// PL_LD words, a multiple of 8 = 256 bits):
//   A: [M][PL_XB][PL_LD]   activation planes, a row's planes together (an arena batch item)
//   W: [PL_WB][PL_N][PL_LD] weight planes (PL_WB = 1 with PL_WBIPOLAR)
// Epilogues (PL_EPI): 1 = int32 Y[M][PL_N]; 2 = the next layer's codes as bit-planes:
//   count = sum_l (dir[n] >= 0 ? acc >= T[n][l] : acc <= T[n][l]) over PL_L levels (T, dir
//   int32, as the qgemm step's p0 / p1), and
//   Y: [M][PL_YB][PL_LDY] words, bit n of plane r = bit r of count, PL_LDY = N rounded up to
//      256 bits with zero words: exactly the next layer's A operand; or, with PL_YFMT 1, the
//      counts as bytes Y[M][round64(N)] (zero bytes past N: qgemm_s8.cu's A operand).
//   PL_LFOLD 1 (bnncc sets it where the codes have more than 15 levels): T holds the levels
//   folded and sorted as the int8 form's (the qgemm step's x0: u = sorted(t ^ m), m = -1 where
//   dir < 0; from BNN_Q8_EST levels on the estimates after them), each count a binary search
//   (q8_levels.cu bnn_q8_count) instead of PL_L loads and compares.
// One warp computes a 16 x 32 tile (four n8 MMA tiles); grid = (ceil(N/32), ceil(M/16)).
// Each inclusion defines one kernel PL_NAME and #undefs its PL_* macros at the end.
#ifndef BNN_PDL_ENTER // compiled without common.cu (a test's own program): launched plainly
#define BNN_PDL_ENTER() ((void)0)
#endif

#ifndef BNN_PLANES_ONCE
#define BNN_PLANES_ONCE
#define BNN_PL_LINKAGE extern "C" // (tests/lowbit/test_planes_emu.c runs this file as C)
__device__ __forceinline__ void bnn_pl_mma(int *d, unsigned a0, unsigned a1, unsigned a2,
                                           unsigned a3, unsigned b0, unsigned b1) {
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
    (void)d; (void)a0; (void)a1; (void)a2; (void)a3; (void)b0; (void)b1;
    __trap(); // the b1 MMA needs sm_80 or later
#endif
}
#endif
// The plane loops unrolled, so that pos and neg are indexed by constants: nvcc left them rolled
// from 9 plane pairs on (w3a3: a 448-byte stack, w8a8 1,408: the accumulators in local memory).
#ifndef BNN_PL_UNROLL
#ifdef __CUDACC__
#define BNN_PL_UNROLL _Pragma("unroll")
#else
#define BNN_PL_UNROLL
#endif
#endif

#if !defined(PL_N) || !defined(PL_K) || !defined(PL_XB) || !defined(PL_WB)
#error "bgemm_planes.cu: define PL_N, PL_K (bits), PL_XB and PL_WB (planes)"
#endif
#ifndef PL_NAME
#define PL_NAME bgemm_planes
#endif
#ifndef PL_WSIGNED
#define PL_WSIGNED 1
#endif
#ifndef PL_WBIPOLAR
#define PL_WBIPOLAR 0
#endif
#ifndef PL_EPI
#define PL_EPI 1
#endif
#ifndef PL_L
#define PL_L 1
#endif
#ifndef PL_YB
#define PL_YB 1
#endif
#ifndef PL_YFMT
#define PL_YFMT 0
#endif
#ifndef PL_LFOLD
#define PL_LFOLD 0
#endif
#if PL_LFOLD && PL_EPI != 2
#error "bgemm_planes.cu: PL_LFOLD (folded levels) is for codes out (PL_EPI 2)"
#endif
#if PL_LFOLD && !defined(BNN_Q8_COUNT_ONCE) // pasted before this file by bnncc (NVRTC has no include files)
#include "q8_levels.cu"
#endif
#define PL_LD ((PL_K + 255) / 256 * 8)
#define PL_LDY ((PL_N + 255) / 256 * 8)
#define PL_LDY8 ((PL_N + 63) / 64 * 64)

BNN_PL_LINKAGE __global__ void __launch_bounds__(32)
PL_NAME(const unsigned *__restrict__ A, const unsigned *__restrict__ W, int M,
        const int *__restrict__ T, const int *__restrict__ dir, void *__restrict__ Y) {
    BNN_PDL_ENTER();
    const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    const int m0 = blockIdx.y * 16, n0 = blockIdx.x * 32;
    __shared__ int tile[16][33];
    // Plane pairs with the same shift s = p + q share an accumulator (pos[s]); the pairs of a
    // signed top weight plane, whose weight is negative, get their own (neg[p]). Each k256 step
    // loads every plane's fragments once and issues all PL_XB * PL_WB MMAs on them.
#define PL_NEG (PL_WSIGNED && !PL_WBIPOLAR)
#define PL_NPOS (PL_NEG ? PL_XB + PL_WB - 2 : PL_XB + PL_WB - 1)
    int pos[PL_NPOS > 0 ? PL_NPOS : 1][4][4];
    int neg[PL_NEG ? PL_XB : 1][4][4];
    BNN_PL_UNROLL
    for (int s = 0; s < (PL_NPOS > 0 ? PL_NPOS : 1); s++)
        BNN_PL_UNROLL
        for (int j = 0; j < 4; j++)
            BNN_PL_UNROLL
            for (int i = 0; i < 4; i++)
                pos[s][j][i] = 0;
    BNN_PL_UNROLL
    for (int p = 0; p < (PL_NEG ? PL_XB : 1); p++)
        BNN_PL_UNROLL
        for (int j = 0; j < 4; j++)
            BNN_PL_UNROLL
            for (int i = 0; i < 4; i++)
                neg[p][j][i] = 0;
    const bool r0 = m0 + g < M, r1 = m0 + g + 8 < M;
    for (int k = 0; k < PL_LD; k += 8) {
        // HARDWARE.md's m16n8k256 fragments: a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][4+t],
        // a3 = A[g+8][4+t]; b0 = B[g][t], b1 = B[g][4+t].
        unsigned a[PL_XB][4];
        BNN_PL_UNROLL
        for (int p = 0; p < PL_XB; p++) {
            const unsigned *ap = A + (size_t)p * PL_LD + k;
            a[p][0] = r0 ? ap[(size_t)(m0 + g) * PL_XB * PL_LD + t] : 0u;
            a[p][1] = r1 ? ap[(size_t)(m0 + g + 8) * PL_XB * PL_LD + t] : 0u;
            a[p][2] = r0 ? ap[(size_t)(m0 + g) * PL_XB * PL_LD + 4 + t] : 0u;
            a[p][3] = r1 ? ap[(size_t)(m0 + g + 8) * PL_XB * PL_LD + 4 + t] : 0u;
        }
        BNN_PL_UNROLL
        for (int q = 0; q < PL_WB; q++) {
            const unsigned *wq = W + (size_t)q * PL_N * PL_LD + k;
            BNN_PL_UNROLL
            for (int j = 0; j < 4; j++) {
                const int n = n0 + 8 * j + g;
                const unsigned b0 = n < PL_N ? wq[(size_t)n * PL_LD + t] : 0u;
                const unsigned b1 = n < PL_N ? wq[(size_t)n * PL_LD + 4 + t] : 0u;
                BNN_PL_UNROLL
                for (int p = 0; p < PL_XB; p++) {
                    int *d = PL_NEG && q == PL_WB - 1 ? neg[PL_NEG ? p : 0][j] : pos[p + q][j];
                    bnn_pl_mma(d, a[p][0], a[p][1], a[p][2], a[p][3], b0, b1);
                }
            }
        }
    }
    // Combine: acc = sum_s 2^s pos[s] - sum_p 2^(p + WB - 1) neg[p]; bipolar planes count twice.
    int acc[4][4];
    BNN_PL_UNROLL
    for (int j = 0; j < 4; j++)
        BNN_PL_UNROLL
        for (int i = 0; i < 4; i++) {
            int v = 0;
            BNN_PL_UNROLL
            for (int s = 0; s < PL_NPOS; s++)
                v += pos[s][j][i] << s;
#if PL_NEG
            BNN_PL_UNROLL
            for (int p = 0; p < PL_XB; p++)
                v -= neg[p][j][i] << (p + PL_WB - 1);
#endif
            acc[j][i] = PL_WBIPOLAR ? 2 * v : v;
        }
    // d0 = D[g][2t], d1 = D[g][2t+1], d2 = D[g+8][2t], d3 = D[g+8][2t+1] per n8 tile.
    for (int j = 0; j < 4; j++) {
        tile[g][8 * j + 2 * t] = acc[j][0];
        tile[g][8 * j + 2 * t + 1] = acc[j][1];
        tile[g + 8][8 * j + 2 * t] = acc[j][2];
        tile[g + 8][8 * j + 2 * t + 1] = acc[j][3];
    }
    __syncwarp();
#if PL_WBIPOLAR
    // u = 2b - 1: subtract sum_p 2^p * popc(X_p) of each row.
    for (int r = 0; r < 16; r++) {
        int pop = 0;
        if (m0 + r < M)
            for (int p = 0; p < PL_XB; p++)
                for (int w = lane; w < PL_LD; w += 32)
                    pop += __popc(A[((size_t)(m0 + r) * PL_XB + p) * PL_LD + w]) << p;
        for (int o = 16; o > 0; o >>= 1)
            pop += __shfl_xor_sync(0xffffffffu, pop, o);
        tile[r][lane] -= pop;
        __syncwarp();
    }
#endif
    const int n = n0 + lane;
    for (int r = 0; r < 16; r++) {
        const int m = m0 + r;
        if (m >= M)
            break;
        const int v = tile[r][lane];
#if PL_EPI == 1
        if (n < PL_N)
            ((int *)Y)[(size_t)m * PL_N + n] = v;
#else
        int count = 0;
#if PL_LFOLD
        if (n < PL_N)
            count = bnn_q8_count(v ^ (dir[n] < 0 ? -1 : 0), T + n * PL_L, PL_L, BNN_Q8_EST(PL_L),
                                 T + BNN_Q8_EST_AT(PL_N, PL_L) + 4 * n);
#else
        if (n < PL_N) {
            const bool up = dir[n] >= 0;
            for (int l = 0; l < PL_L; l++) {
                const int th = T[n * PL_L + l];
                count += up ? v >= th : v <= th;
            }
        }
#endif
#if PL_YFMT == 1
        // The next layer reads int8 codes (qgemm_s8.cu): a byte a channel, zero bytes past N
        // up to the row's PL_LDY8 (the last column block writes the ones past its 32).
        unsigned char *y8 = (unsigned char *)Y + (size_t)m * PL_LDY8;
        if (n < PL_LDY8)
            y8[n] = (unsigned char)count;
        if (n0 + 32 >= PL_N)
            for (int c = n0 + 32 + lane; c < PL_LDY8; c += 32)
                y8[c] = 0;
        continue;
#endif
        // The next layer's codes, written directly as its bit-planes (32 channels a word).
        for (int b = 0; b < PL_YB; b++) {
            const unsigned word = __ballot_sync(0xffffffffu, (count >> b) & 1);
            unsigned *yrow = (unsigned *)Y + ((size_t)m * PL_YB + b) * PL_LDY;
            if (lane == 0)
                yrow[n0 / 32] = word;
            // The last column block zeroes the row's padding words (the next K's zero bits).
            if (n0 + 32 >= PL_N)
                for (int w = n0 / 32 + 1 + lane; w < PL_LDY; w += 32)
                    yrow[w] = 0u;
        }
#endif
    }
}

#undef PL_NAME
#undef PL_N
#undef PL_K
#undef PL_XB
#undef PL_WB
#undef PL_WSIGNED
#undef PL_WBIPOLAR
#undef PL_EPI
#undef PL_L
#undef PL_YB
#undef PL_LFOLD
#undef PL_LD
#undef PL_LDY
#undef PL_LDY8
#undef PL_YFMT
#undef PL_NEG
#undef PL_NPOS
