// qgemm_s8.cu: low-bit GEMM (qdense, docs/ir.md) on the int8 tensor cores, for layers whose
// activation bits x weight bits exceed 8 (docs/kernels.md "Low-bit layers on int8 MMA"):
//     acc[m][n] = sum_k x[m][k] * u[n][k]
// with x the unsigned activation codes (level indices, < 2^Q8_XB) one byte each and u the
// signed weight codes one byte each (two's complement; +-1 for bipolar weights). Exact: both
// are the integers themselves, so mma.sync m16n8k32 .s32 sums exactly what the bit-plane
// kernel's shifted popcounts sum (int32, wrapping alike). Codes below 128 (Q8_XB <= 7) are the
// same bytes as s8: .s8.s8; 8-bit codes use the .u8.s8 form of the same instruction.
//
// Operands (K padded with zero bytes to Q8_LD, a multiple of 64; blob.h blob_int8_ld):
//   A: [M][Q8_LD] u8   activation codes (an arena batch item per row)
//   W: [Q8_N][Q8_LD] s8 weight codes, K-major (the MMA's "col" operand)
// Epilogues (Q8_EPI), as bgemm_planes.cu's: 1 int32 Y[M][Q8_N]; 2 the level counts
//   count = sum_l (dir[n] >= 0 ? acc >= t[n][l] : acc <= t[n][l]) over Q8_L levels as the next
//   layer's codes, from each channel's levels folded and sorted, T[N][Q8_L], by a binary search
//   (bnn_q8_count_sorted; the blob's x0 for a qgemm step, p0 for the conv): Q8_YFMT 0 bit-planes Y[M][Q8_YB][LDY] words (LDY = N rounded up to 256
//   bits, padding words zero: bgemm_planes.cu's A), Q8_YFMT 1 bytes Y[M][round64(N)] (zero
//   bytes past N: this kernel's A); 3 the counts as int32 Y[M][Q8_N].
// Block tile Q8_BM x Q8_BN of Q8_WARPS warps, each Q8_WTM x Q8_WTN (32 or 64 each way) of m16 x n8
// MMA tiles: 64 x 128 or 128 x 64 (narrow layers) on 8 warps of 32 x 32; 128 x 128 (with
// Q8_DYN: its accumulators alone take 66 KiB) on 8 warps of 64 x 32 or 4 of 64 x 64 (Q8_WTN 64:
// a k step's 8 ldmatrix feed 32 MMAs where 32 x 32 has 4 feed 8, and a stage's bytes from L2
// serve twice the products of 64 x 128); 128 x 64 also on 4 warps of 64 x 32. K in stages of Q8_BK bytes
// (64, or 128 for the convolutions) staged through shared memory by 16-byte cp.async
// (zero-filled past M and N), a ring of Q8_STAGES; rows padded by 16 bytes so the fragments'
// ldmatrix hits 32 distinct banks. Grid (ceil(N/Q8_BN), ceil(M/Q8_BM)), 32 Q8_WARPS threads;
// static shared memory (45 KiB at Q8_BK 64), or with Q8_DYN 1 Q8_SMEM bytes of dynamic shared
// memory (83 KiB at Q8_BK 128 on 64 x 128; 80 KiB for the 128 x 128 tile's 4 stages of 64, 111
// KiB for its 3 of 128).
//
// With Q8_CONV 1 the same GEMM is a convolution (qconv2d on int8, docs/kernels.md "Low-bit
// convolution on int8 MMA"): row m an output pixel (image, oy, ox) of the batch, K the
// Q8_KH*Q8_KW taps (row-major) of Q8_CB bytes of channels each, then zero bytes up to Q8_LD:
//   A: the input codes as a bytes image, per image [Q8_H*Q8_W][Q8_CB] u8 (channel c at byte c,
//      zero past Q8_C; Q8_U_NAME below writes it from the image planes)
//   W: [Q8_N][Q8_LD] s8, weight (o, tap, c) at byte tap*Q8_CB + c
// A tap outside the image reads Q8_PAD (the pad code) in every real channel: exactly what
// qconv.cu's image planes give there. Epilogues as qconv.cu's: 1 int32 NCHW per image
// ([Q8_N][Q8_OH*Q8_OW]); 2 the level counts as Q8_YB image planes of [Q8_OH*Q8_OW][Q8_LDYW]
// words each (Q8_YPLANE words a plane, zero padding words and tail): the next qconv's X, or
// with one plane a b1 NHWC-packed image.
//
// With Q8_U_NAME instead (and Q8_U_XB, Q8_U_PIX, Q8_U_LDW, Q8_U_PLANE) the file defines the
// converter Q8_U_NAME(X, M, Y): image planes (qconv.cu's X: per image Q8_U_XB planes of
// Q8_U_PLANE words, [Q8_U_PIX][Q8_U_LDW] each) to the bytes image above (Q8_CB = 32 Q8_U_LDW),
// M = images x Q8_U_PIX x Q8_U_LDW x 2, 16 bytes (16 channels) a thread.
// Each inclusion defines one kernel and #undefs its macros at the end.
#ifndef BNN_PDL_ENTER // compiled without common.cu (a test's own program): launched plainly
#define BNN_PDL_ENTER() ((void)0)
#endif

#ifndef BNN_Q8_THREADS
#define BNN_Q8_THREADS 256
#endif
// The PTX helpers (tests/lowbit/test_q8_emu.c defines BNN_Q8_ONCE and its own, to run this
// file as C under a block emulator).
#ifndef BNN_Q8_ONCE
#define BNN_Q8_ONCE
#define BNN_Q8_LINKAGE extern "C"
// D[16][8] += A[16][32] * B[32][8] (B given as [8][32], K-major): lane 4g+t holds
// a0 = A[g][4t..4t+3], a1 = A[g+8][4t..], a2 = A[g][16+4t..], a3 = A[g+8][16+4t..],
// b0 = B[g][4t..4t+3], b1 = B[g][16+4t..] (4 bytes a register, the lowest k in the low byte),
// d0 = D[g][2t], d1 = D[g][2t+1], d2 = D[g+8][2t], d3 = D[g+8][2t+1].
__device__ __forceinline__ void bnn_q8_mma(int *d, unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                           unsigned b0, unsigned b1, int a_unsigned) {
#if __CUDA_ARCH__ >= 800
    if (a_unsigned)
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
    (void)d; (void)a0; (void)a1; (void)a2; (void)a3; (void)b0; (void)b1; (void)a_unsigned;
    __trap(); // the s8 MMA m16n8k32 needs sm_80 or later
#endif
}
// Four 8x8 matrices of 16-byte rows from shared memory (ldmatrix .x4 .b16): lane l gives the
// address of row l % 8 of matrix l / 8 and gets r[i] = bytes 4 (l % 4).. of row l / 4 of
// matrix i, the MMA's fragment word layout above (one instruction for four LDS.32 a lane).
__device__ __forceinline__ void bnn_q8_ldsm4(unsigned *r, const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"((unsigned)__cvta_generic_to_shared(p)));
}
// 16-byte global -> shared copy, zero-filled (nothing read) when !ok.
__device__ __forceinline__ void bnn_q8_cp16(void *dst, const void *src, bool ok) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
                 "l"(src), "r"(ok ? 16u : 0u)
                 : "memory");
}
__device__ __forceinline__ void bnn_q8_commit(void) { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// A 16-byte store of four words (y 16-byte aligned).
#define Q8_U_STORE4(y, v) (*(uint4 *)(y) = make_uint4((v)[0], (v)[1], (v)[2], (v)[3]))
// The dynamic shared memory of a kernel with Q8_DYN (its launch gives the size).
extern __shared__ __align__(16) unsigned char bnn_q8_dsmem[];
#define bnn_q8_dyn_smem() bnn_q8_dsmem
#define bnn_q8_wait(n) asm volatile("cp.async.wait_group %0;\n" ::"n"(n) : "memory")
#endif
#ifndef BNN_Q8_COUNT_ONCE // pasted before this file by bnncc (NVRTC has no include files)
#include "q8_levels.cu"
#endif

#if defined(Q8_U_NAME)
// Image planes to the bytes image (Q8_CONV's A): 16 bytes a thread (a warp stores 512 in a row;
// at 4 bytes a thread it issued 4x the plane loads and stores), chunk i of the output is bytes
// 16h..16h+15 of pixel word pw of an image (h = i % 2), byte c = sum_p bit c of plane p's word
// << p. M: the chunks, images x Q8_U_PIX x Q8_U_LDW x 2.
BNN_Q8_LINKAGE __global__ void __launch_bounds__(BNN_Q8_THREADS)
Q8_U_NAME(const unsigned *__restrict__ X, int M, unsigned *__restrict__ Y) {
    BNN_PDL_ENTER();
    const int i = blockIdx.x * BNN_Q8_THREADS + threadIdx.x;
    if (i >= M)
        return;
    const int per = Q8_U_PIX * Q8_U_LDW * 2, image = i / per, r = i % per, h = r & 1;
    const unsigned *x = X + (long long)image * Q8_U_XB * Q8_U_PLANE + (r >> 1);
    unsigned v[4] = {0u, 0u, 0u, 0u};
    for (int p = 0; p < Q8_U_XB; p++) {
        const unsigned half = x[(long long)p * Q8_U_PLANE] >> (16 * h);
        // the 4 bits of channels 4j.. spread to bit 0 of 4 bytes: nib * 0x00204081 puts bit b
        // at 7b + b = 8b, and its four shifted copies do not overlap (no carries)
        for (int j = 0; j < 4; j++)
            v[j] |= ((((half >> (4 * j)) & 15u) * 0x00204081u) & 0x01010101u) << p;
    }
    unsigned *y = Y + 4 * (long long)i;
    Q8_U_STORE4(y, v);
}
#undef Q8_U_NAME
#undef Q8_U_XB
#undef Q8_U_PIX
#undef Q8_U_LDW
#undef Q8_U_PLANE
#else

#if !defined(Q8_N) || !defined(Q8_LD)
#error "qgemm_s8.cu: define Q8_N and Q8_LD (bytes, a multiple of 64)"
#endif
#ifndef Q8_NAME
#define Q8_NAME qgemm_s8
#endif
#ifndef Q8_XB
#define Q8_XB 8
#endif
#ifndef Q8_EPI
#define Q8_EPI 1
#endif
#ifndef Q8_L
#define Q8_L 1
#endif
#ifndef Q8_YB
#define Q8_YB 1
#endif
#ifndef Q8_YFMT
#define Q8_YFMT 0
#endif
#ifndef Q8_STAGES
#define Q8_STAGES 3
#endif
#ifndef Q8_BM
#define Q8_BM 64
#endif
#ifndef Q8_BN
#define Q8_BN (8192 / Q8_BM)
#endif
#ifndef Q8_CONV
#define Q8_CONV 0
#endif
#ifndef Q8_BK
#define Q8_BK 64 // bytes of K a stage: two (64) or four (128) k32 MMA steps
#endif
#ifndef Q8_DYN
#define Q8_DYN 0 // 1: the shared memory dynamic (Q8_SMEM bytes, past 48 KiB with Q8_BK 128)
#endif
#ifndef Q8_MINB
// Blocks an SM the registers are budgeted for (__launch_bounds__): two, at most 128 registers.
// Without it the levels in shared memory took the 128 x 128 dense tile to 137 registers and the
// full search below the convolution to 146, one block an SM: the int8 MLPs 22-26 % and the
// convolutions 1-25 % slower (docs/perf.md stop 57); capped, neither spills.
#define Q8_MINB 2
#endif
#ifndef Q8_WARPS
#define Q8_WARPS 8 // warps a block
#endif
#ifndef Q8_WTN
#define Q8_WTN 32 // a warp's columns: 32, or 64 (4 warps of 64 x 64 on the 128 x 128 tile)
#endif
#define Q8_THREADS (32 * Q8_WARPS)
#define Q8_ROW (Q8_BK + 16) // bytes of a staged row: 16 of padding spread a matrix's rows over the banks
#define Q8_CPR (Q8_BK / 16) // 16-byte chunks a row
#define Q8_WN (Q8_BN / Q8_WTN)                     // warps along N
#define Q8_WTM (Q8_BM * Q8_BN / (Q8_WARPS * Q8_WTN)) // a warp's rows
#define Q8_MI (Q8_WTM / 16)                        // its m16 tiles
#define Q8_NJ (Q8_WTN / 8)                         // its n8 tiles
#define Q8_NW (Q8_BN / 32)                         // 32-channel words a row of the tile
#if (Q8_WTM != 32 && Q8_WTM != 64) || (Q8_WTN != 32 && Q8_WTN != 64) || Q8_BN % Q8_WTN != 0 ||                \
    Q8_BM % Q8_WTM != 0 || (Q8_BM / Q8_WTM) * Q8_WN != Q8_WARPS || Q8_BM * (Q8_BK / 16) % Q8_THREADS != 0 ||    \
    Q8_BN * (Q8_BK / 16) % Q8_THREADS != 0
#error "qgemm_s8.cu: warps of 32 or 64 rows by 32 or 64 columns tile the block, whose stage's chunks its threads share evenly"
#endif
#define Q8_KT (Q8_LD / Q8_BK)
#define Q8_LDY ((Q8_N + 255) / 256 * 8)
#define Q8_LDY8 ((Q8_N + 63) / 64 * 64)
#define Q8_STAGE_BYTES ((Q8_BM + Q8_BN) * Q8_ROW)
#define Q8_SMEM (Q8_STAGES * Q8_STAGE_BYTES > Q8_BM * (Q8_BN + 1) * 4 ? Q8_STAGES * Q8_STAGE_BYTES \
                                                                  : Q8_BM * (Q8_BN + 1) * 4)
#if !Q8_DYN && Q8_SMEM > 48 * 1024
#error "qgemm_s8.cu: past 48 KiB of shared memory the kernel needs Q8_DYN"
#endif
#if Q8_LD % Q8_BK != 0 || (Q8_BK != 64 && Q8_BK != 128)
#error "qgemm_s8.cu: Q8_BK is 64 or 128 bytes and Q8_LD a multiple of it"
#endif
// Where the block's channels' levels and directions fit in shared memory past the accumulator
// tile (Q8_SLEV), the epilogue copies them there first: a search's loads are then LDS with
// 32-bit addresses instead of LDG through L1 with 64-bit ones (the int8 conv's epilogue took 47
// instructions an output reading them from T; docs/perf.md stop 57).
#define Q8_TILE_BYTES (Q8_BM * (Q8_BN + 1) * 4)
#define Q8_SLEV ((Q8_EPI == 2 || Q8_EPI == 3) && Q8_TILE_BYTES + Q8_BN * (Q8_L + 1) * 4 <= Q8_SMEM)
#if Q8_SLEV
#define Q8_FLIP(n) sflip[(n) - n0]
#define Q8_LEVELS(n) (slev + ((n) - n0) * Q8_L)
#else
#define Q8_FLIP(n) (dir[n] < 0 ? -1 : 0)
#define Q8_LEVELS(n) (T + (n) * Q8_L)
#endif
// The count of channel n for accumulator v over its folded levels (q8_levels.cu bnn_q8_count):
// without clamps where there are 2^k - 1 of them, up to 15 (BNN_Q8_FULL).
// A dense layer's x0 holds each channel's estimate of its count after the levels from
// BNN_Q8_EST_LEVELS on (blob.h blob_q8_level_estimate): four loads round it, not a binary search.
#define Q8_FULL BNN_Q8_FULL(Q8_L)
#define Q8_EST (!Q8_CONV && Q8_EPI != 1 && BNN_Q8_EST(Q8_L))
#define Q8_COUNT(v, n) \
    bnn_q8_count((v) ^ Q8_FLIP(n), Q8_LEVELS(n), Q8_L, Q8_EST, T + BNN_Q8_EST_AT(Q8_N, Q8_L) + 4 * (n))
// The Q8_YB plane words (bit i: channel n0 + 32 wq + i) of row r's counts: the 32 searches
// unrolled, a channel past N searching the last one's levels and dropped, so that their loads
// overlap (a loop with a break at N chained 32 searches' dependent loads: the int8 convs'
// epilogue, docs/perf.md stop 56).
#if Q8_FULL && Q8_L == (1 << Q8_YB) - 1
// With 2^Q8_YB - 1 levels the search's comparisons are the count's bits, top first: each goes
// straight into its plane's word; the channels past N are masked off the words at the end
// (w4a4's ResNet convolutions 2-5 % faster than with the clamped search, stop 57).
#define Q8_WORDS(word, r, wq)                                                                                \
    do {                                                                                                     \
        _Pragma("unroll") for (int i = 0; i < 32; i++) {                                                     \
            const int n = n0 + 32 * (wq) + i, nc = n < Q8_N ? n : Q8_N - 1;                                  \
            const int v = Q8_TILE(r, 32 * (wq) + i) ^ Q8_FLIP(nc);                                           \
            const int *u = Q8_LEVELS(nc);                                                                    \
            int count = 0;                                                                                   \
            _Pragma("unroll") for (int b = Q8_YB - 1; b >= 0; b--) {                                         \
                const unsigned bit = u[count + (1 << b) - 1] <= v;                                           \
                count += (int)bit << b;                                                                      \
                (word)[b] |= bit << i;                                                                       \
            }                                                                                                \
        }                                                                                                    \
        const int past = n0 + 32 * (wq) + 32 - Q8_N; /* channels of the word past N */                       \
        if (past > 0)                                                                                        \
            _Pragma("unroll") for (int b = 0; b < Q8_YB; b++)(word)[b] &= past >= 32 ? 0u : ~0u >> past;     \
    } while (0)
#else
#define Q8_WORDS(word, r, wq)                                                                                \
    do {                                                                                                     \
        _Pragma("unroll") for (int i = 0; i < 32; i++) {                                                     \
            const int n = n0 + 32 * (wq) + i, nc = n < Q8_N ? n : Q8_N - 1;                                  \
            const unsigned on = n < Q8_N, count = (unsigned)Q8_COUNT(Q8_TILE(r, 32 * (wq) + i), nc);         \
            _Pragma("unroll") for (int b = 0; b < Q8_YB; b++) (word)[b] |= (count >> b & on) << i;           \
        }                                                                                                    \
    } while (0)
#endif
#if Q8_CONV
#define Q8_CELLS (Q8_OH * Q8_OW)
#define Q8_TAPS (Q8_KH * Q8_KW)
#if Q8_CB % 32 != 0 || Q8_LD < Q8_TAPS * Q8_CB
#error "qgemm_s8.cu: Q8_CB must be a multiple of 32 and Q8_LD hold every tap"
#endif
#endif

BNN_Q8_LINKAGE __global__ void __launch_bounds__(Q8_THREADS, Q8_MINB)
Q8_NAME(const unsigned char *__restrict__ A, const signed char *__restrict__ W, int M,
        const int *__restrict__ T, const int *__restrict__ dir, void *__restrict__ Y) {
    BNN_PDL_ENTER();
    // The stages, then (after the K loop) the block's accumulators [Q8_BM][Q8_BN + 1] int32.
#if Q8_DYN
    unsigned char *smem = bnn_q8_dyn_smem();
#else
    __shared__ __align__(16) unsigned char smem[Q8_SMEM];
#endif
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const int wm = warp / Q8_WN, wn = warp % Q8_WN; // each warp Q8_WTM rows x Q8_WTN columns
    // A convolution's row tiles run along x (2^31 - 1 blocks: batch x pixels / Q8_BM passes
    // 65,535 at a large batch), a GEMM's along y.
    const int m0 = (Q8_CONV ? blockIdx.x : blockIdx.y) * Q8_BM, n0 = (Q8_CONV ? blockIdx.y : blockIdx.x) * Q8_BN;
    (void)T; (void)dir;
#define Q8_AH (Q8_BM * Q8_CPR / Q8_THREADS) // A chunks a thread a stage
#define Q8_WH (Q8_BN * Q8_CPR / Q8_THREADS) // W chunks
#if Q8_CONV
    // A thread's A rows (tid + Q8_THREADS h) / Q8_CPR, once: the offset of the window's origin in A
    // and which of the window's taps fall inside the image (none for a row past M). A thread's
    // chunks of a stage share their tap and channels (c is the same for every h), so a chunk's
    // copy is an add and a bit test: the tap's bounds a chunk took a third of the instructions
    // (docs/perf.md stop 57).
#if Q8_TAPS > 32
    typedef unsigned long long q8_taps_t;
#else
    typedef unsigned q8_taps_t;
#endif
    long long aoff[Q8_AH];
    q8_taps_t inside[Q8_AH];
    bool arow[Q8_AH];
    for (int h = 0; h < Q8_AH; h++) {
        const int m = m0 + (tid + Q8_THREADS * h) / Q8_CPR;
        const int image = m / Q8_CELLS, cell = m % Q8_CELLS;
        const int iy0 = cell / Q8_OW * Q8_SH - Q8_PT, ix0 = cell % Q8_OW * Q8_SW - Q8_PL;
        aoff[h] = (long long)image * (Q8_H * Q8_W * Q8_CB) + (long long)(iy0 * Q8_W + ix0) * Q8_CB;
        arow[h] = m < M;
        inside[h] = 0;
        for (int tap = 0; tap < Q8_TAPS; tap++) {
            const int iy = iy0 + tap / Q8_KW * Q8_DH, ix = ix0 + tap % Q8_KW * Q8_DW;
            if (arow[h] && iy >= 0 && iy < Q8_H && ix >= 0 && ix < Q8_W)
                inside[h] |= (q8_taps_t)1 << tap;
        }
    }
#endif
    // The thread's first W row: the others are Q8_THREADS / Q8_CPR rows apart.
    const long long woff = (long long)(n0 + tid / Q8_CPR) * Q8_LD + tid % Q8_CPR * 16;

    // One stage: Q8_BM A rows of Q8_BK bytes (the row's K slice, or for a convolution its taps'
    // channels) and Q8_BN W rows, in chunks of 16 bytes; rows past M or N zero-filled.
#define Q8_LOAD(kt, slot)                                                                                    \
    do {                                                                                                     \
        unsigned char *sa = smem + (slot) * Q8_STAGE_BYTES, *sw = sa + Q8_BM * Q8_ROW;                       \
        const int c = tid % Q8_CPR * 16, kb = (kt) * Q8_BK + c;                                              \
        Q8_STAGE_A(kb);                                                                                      \
        for (int h = 0; h < Q8_AH; h++) {                                                                    \
            const int r = (tid + Q8_THREADS * h) / Q8_CPR;                                                   \
            Q8_LOAD_A(h, r, c, kb, sa + r * Q8_ROW + c);                                                     \
        }                                                                                                    \
        for (int h = 0; h < Q8_WH; h++) {                                                                    \
            const int rn = (tid + Q8_THREADS * h) / Q8_CPR;                                                  \
            const bool ok = n0 + rn < Q8_N;                                                                  \
            bnn_q8_cp16(sw + rn * Q8_ROW + c,                                                                \
                        ok ? (const void *)(W + woff + (long long)h * (Q8_THREADS / Q8_CPR) * Q8_LD +        \
                                            (kt) * Q8_BK)                                                    \
                           : (const void *)W,                                                                \
                        ok);                                                                                 \
        }                                                                                                    \
    } while (0)
#if !Q8_CONV
#define Q8_STAGE_A(kb) ((void)0)
#define Q8_LOAD_A(h, r, c, kb, dst)                                                                          \
    bnn_q8_cp16(dst, m0 + (r) < M ? A + (size_t)(m0 + (r)) * Q8_LD + (kb) : A, m0 + (r) < M)
#else
    // The stage's tap kb / Q8_CB and channels kb % Q8_CB.., and their offset from a window's origin.
#define Q8_STAGE_A(kb)                                                                                       \
    const int tap = (kb) / Q8_CB, cb = (kb) % Q8_CB;                                                         \
    const int toff = (tap / Q8_KW * Q8_DH * Q8_W + tap % Q8_KW * Q8_DW) * Q8_CB + cb
    // In the image a copy; outside it the pad code in the real channels (a plain store, seen
    // after the stage's barrier like the copies); past the last tap or M zeros.
#define Q8_LOAD_A(h, r, c, kb, dst)                                                                          \
    do {                                                                                                     \
        if (tap < Q8_TAPS && (inside[h] >> tap & 1u))                                                        \
            bnn_q8_cp16(dst, A + aoff[h] + toff, true);                                                      \
        else if (Q8_PAD == 0 || !arow[h] || tap >= Q8_TAPS)                                                  \
            bnn_q8_cp16(dst, A, false);                                                                      \
        else                                                                                                 \
            for (int q = 0; q < 4; q++) {                                                                    \
                unsigned word = 0u;                                                                          \
                for (int i = 0; i < 4; i++)                                                                  \
                    word |= (cb + 4 * q + i < Q8_C ? (unsigned)Q8_PAD : 0u) << (8 * i);                      \
                ((unsigned *)(dst))[q] = word;                                                               \
            }                                                                                                \
    } while (0)
#endif

    int acc[Q8_MI][Q8_NJ][4];
    for (int i = 0; i < Q8_MI; i++)
        for (int j = 0; j < Q8_NJ; j++)
            for (int e = 0; e < 4; e++)
                acc[i][j][e] = 0;
    for (int s = 0; s < Q8_STAGES - 1; s++) {
        if (s < Q8_KT)
            Q8_LOAD(s, s);
        bnn_q8_commit(); // empty groups keep the count of groups in flight fixed
    }
    for (int kt = 0; kt < Q8_KT; kt++) {
        bnn_q8_wait(Q8_STAGES - 2); // stage kt has landed (this thread's copies) ...
        __syncthreads();           // ... everyone's, and slot (kt - 1) % S is free again
        if (kt + Q8_STAGES - 1 < Q8_KT)
            Q8_LOAD(kt + Q8_STAGES - 1, (kt + Q8_STAGES - 1) % Q8_STAGES);
        bnn_q8_commit();
        const unsigned char *sa = smem + (kt % Q8_STAGES) * Q8_STAGE_BYTES, *sw = sa + Q8_BM * Q8_ROW;
        for (int kk = 0; kk < Q8_BK; kk += 32) {
            // A: matrices (rows 0-7, k 0-15), (8-15, 0-15), (0-7, 16-31), (8-15, 16-31) of each m16
            // tile = a0..a3; W: (n 0-7, k 0-15), (0-7, 16-31), (8-15, 0-15), (8-15, 16-31) of
            // each pair of n8 tiles = b0, b1 of the first, b0, b1 of the second. Rows 80 or 144
            // bytes apart: a matrix's 8 rows fall in distinct banks.
            unsigned a[Q8_MI][4], b[Q8_NJ / 2][4]; // b[j / 2][2 (j % 2)..]: n8 tile j's b0, b1
            for (int i = 0; i < Q8_MI; i++)
                bnn_q8_ldsm4(a[i], sa + (wm * Q8_WTM + 16 * i + (lane & 7) + ((lane >> 3) & 1) * 8) * Q8_ROW + kk +
                                       (lane >> 4) * 16);
            for (int j = 0; j < Q8_NJ / 2; j++)
                bnn_q8_ldsm4(b[j], sw + (wn * Q8_WTN + 16 * j + (lane & 7) + (lane >> 4) * 8) * Q8_ROW + kk +
                                       ((lane >> 3) & 1) * 16);
            for (int i = 0; i < Q8_MI; i++)
                for (int j = 0; j < Q8_NJ; j++)
                    bnn_q8_mma(acc[i][j], a[i][0], a[i][1], a[i][2], a[i][3], b[j / 2][2 * (j % 2)],
                               b[j / 2][2 * (j % 2) + 1], Q8_XB > 7);
        }
    }
    bnn_q8_wait(0);
    __syncthreads(); // the stages are dead: the accumulators go to shared memory
    int *tile = (int *)smem;
#define Q8_TILE(r, c) tile[(r) * (Q8_BN + 1) + (c)]
    for (int i = 0; i < Q8_MI; i++)
        for (int j = 0; j < Q8_NJ; j++) {
            const int r = wm * Q8_WTM + 16 * i + g, c = wn * Q8_WTN + 8 * j + 2 * t;
            Q8_TILE(r, c) = acc[i][j][0];
            Q8_TILE(r, c + 1) = acc[i][j][1];
            Q8_TILE(r + 8, c) = acc[i][j][2];
            Q8_TILE(r + 8, c + 1) = acc[i][j][3];
        }
#if Q8_SLEV
    int *slev = tile + Q8_BM * (Q8_BN + 1), *sflip = slev + Q8_BN * Q8_L; // channel n0 + j's at j
    for (int e = tid; e < Q8_BN * Q8_L; e += Q8_THREADS)
        slev[e] = n0 + e / Q8_L < Q8_N ? T[(long long)n0 * Q8_L + e] : 0;
    for (int j = tid; j < Q8_BN; j += Q8_THREADS)
        sflip[j] = n0 + j < Q8_N && dir[n0 + j] < 0 ? -1 : 0;
#endif
    __syncthreads();
#if Q8_CONV && Q8_EPI == 1
    // int32 NCHW per image, one output a thread at a time, along the pixels.
    for (int e = tid; e < Q8_BM * Q8_BN; e += Q8_THREADS) {
        const int r = e % Q8_BM, c = e / Q8_BM, m = m0 + r, n = n0 + c;
        if (m < M && n < Q8_N)
            ((int *)Y)[((long long)(m / Q8_CELLS) * Q8_N + n) * Q8_CELLS + m % Q8_CELLS] = Q8_TILE(r, c);
    }
#elif Q8_EPI != 2
    // int32 accumulators (1) or level counts (3), one output a thread at a time, along N.
    for (int e = tid; e < Q8_BM * Q8_BN; e += Q8_THREADS) {
        const int r = e / Q8_BN, c = e % Q8_BN, m = m0 + r, n = n0 + c;
        if (m >= M || n >= Q8_N)
            continue;
        int v = Q8_TILE(r, c);
#if Q8_EPI == 3
        v = Q8_COUNT(v, n);
#endif
        ((int *)Y)[(size_t)m * Q8_N + n] = v;
    }
#elif Q8_CONV
    // The counts as the next layer's image planes: one (row, 32 channels) word set a thread,
    // consecutive rows in a warp (its tile reads in distinct banks); plane b of the image, the
    // pixel's Q8_LDYW words.
    for (int e = tid; e < Q8_BM * Q8_NW; e += Q8_THREADS) {
        const int r = e % Q8_BM, wq = e / Q8_BM, m = m0 + r, nw = n0 / 32 + wq;
        if (m < M) {
            unsigned word[Q8_YB];
            for (int b = 0; b < Q8_YB; b++)
                word[b] = 0u;
            Q8_WORDS(word, r, wq);
            const long long cell = m % Q8_CELLS;
            unsigned *yrow = (unsigned *)Y + (long long)(m / Q8_CELLS) * Q8_YB * Q8_YPLANE + cell * Q8_LDYW;
            const bool last = wq == Q8_NW - 1 && n0 + Q8_BN >= Q8_N; // the last column block's last word
            for (int b = 0; b < Q8_YB; b++) {
                if (nw < Q8_LDYW)
                    yrow[b * Q8_YPLANE + nw] = word[b];
                // the last column block zeroes the pixel's padding words past its own, and at
                // the last pixel the plane's tail
                for (int w = nw + 1; last && w < Q8_LDYW; w++)
                    yrow[b * Q8_YPLANE + w] = 0u;
                for (long long w = (long long)Q8_CELLS * Q8_LDYW; last && cell == Q8_CELLS - 1 && w < Q8_YPLANE; w++)
                    yrow[b * Q8_YPLANE + w - cell * Q8_LDYW] = 0u;
            }
        }
    }
#elif Q8_YFMT == 0
    // The counts as the next layer's bit-planes: one (row, 32 channels) word set a thread.
    for (int e = tid; e < Q8_BM * Q8_NW; e += Q8_THREADS) {
        const int r = e / Q8_NW, wq = e % Q8_NW, m = m0 + r, nw = n0 / 32 + wq;
        if (m < M) {
            unsigned word[Q8_YB];
            for (int b = 0; b < Q8_YB; b++)
                word[b] = 0u;
            Q8_WORDS(word, r, wq);
            unsigned *yrow = (unsigned *)Y + (size_t)m * Q8_YB * Q8_LDY;
            for (int b = 0; b < Q8_YB; b++) {
                if (nw < Q8_LDY)
                    yrow[b * Q8_LDY + nw] = word[b];
                // the last column block zeroes the row's padding words past its own
                if (wq == Q8_NW - 1 && n0 + Q8_BN >= Q8_N)
                    for (int w = nw + 1; w < Q8_LDY; w++)
                        yrow[b * Q8_LDY + w] = 0u;
            }
        }
    }
#else
    // The counts as bytes (the next int8 layer's A): 4 channels a 32-bit store.
    for (int e = tid; e < Q8_BM * (Q8_BN / 4); e += Q8_THREADS) {
        const int r = e / (Q8_BN / 4), c = (e % (Q8_BN / 4)) * 4, m = m0 + r;
        if (m >= M || n0 + c >= Q8_LDY8)
            continue;
        unsigned word = 0u;
        for (int i = 0; i < 4 && n0 + c + i < Q8_N; i++) {
            const int n = n0 + c + i;
            word |= (unsigned)Q8_COUNT(Q8_TILE(r, c + i), n) << (8 * i);
        }
        *(unsigned *)((unsigned char *)Y + (size_t)m * Q8_LDY8 + n0 + c) = word;
    }
#endif
#undef Q8_TILE
#undef Q8_LOAD
#undef Q8_LOAD_A
#undef Q8_STAGE_A
#undef Q8_AH
#undef Q8_WH
}

#undef Q8_NAME
#undef Q8_N
#undef Q8_LD
#undef Q8_XB
#undef Q8_EPI
#undef Q8_L
#undef Q8_YB
#undef Q8_YFMT
#undef Q8_STAGES
#undef Q8_BM
#undef Q8_BN
#undef Q8_WN
#undef Q8_WTM
#undef Q8_MI
#undef Q8_NJ
#undef Q8_NW
#undef Q8_WARPS
#undef Q8_WTN
#undef Q8_THREADS
#undef Q8_KT
#undef Q8_LDY
#undef Q8_LDY8
#undef Q8_STAGE_BYTES
#undef Q8_SMEM
#undef Q8_BK
#undef Q8_DYN
#undef Q8_MINB
#undef Q8_ROW
#undef Q8_CPR
#undef Q8_COUNT
#undef Q8_FLIP
#undef Q8_LEVELS
#undef Q8_TILE_BYTES
#undef Q8_SLEV
#undef Q8_FULL
#undef Q8_EST
#undef Q8_WORDS
#if Q8_CONV
#undef Q8_CELLS
#undef Q8_TAPS
#undef Q8_H
#undef Q8_W
#undef Q8_C
#undef Q8_CB
#undef Q8_KH
#undef Q8_KW
#undef Q8_SH
#undef Q8_SW
#undef Q8_PT
#undef Q8_PL
#undef Q8_DH
#undef Q8_DW
#undef Q8_OH
#undef Q8_OW
#undef Q8_PAD
#undef Q8_LDYW
#undef Q8_YPLANE
#endif
#undef Q8_CONV
#endif
