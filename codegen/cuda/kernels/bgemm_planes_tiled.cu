// bgemm_planes_tiled.cu: the low-bit GEMM of bgemm_planes.cu (qdense as bit-planes, same
// semantics, same two epilogues) on the pre-tiled mma.sync pipeline of bgemm_tiled.cu:
//     acc[m][n] = sum_p sum_q c_q * 2^(p+q) * popc(X_p[m] AND W_q[n])
// (X_p: activation plane p, W_q: weight plane q, c_q = -1 for a two's-complement top weight
// plane when PT_WSIGNED, else +1; PT_WBIPOLAR: one +-1 plane B, acc = 2 * sum_p 2^p
// popc(X_p AND B) - apop[m] with apop[m] = sum_p 2^p popc(X_p[m])). AND-popc only.
//
// Plane pairs as extra K blocks: a tile runs one full K sweep per plane pair (p, q), all into
// ONE accumulator set, in order of decreasing shift s = p + q (Horner): moving on to the next
// pair multiplies the accumulators by 2 when s drops by one and by -1 when the sign c_q
// changes, so at the end acc * c_last is the exact sum (integers: any order is exact). So the
// main loop is bgemm_tiled.cu's, with its 128 accumulators per thread and its rate per pair:
// XB*WB pairs (XB with bipolar weights) cost XB*WB binary GEMMs, and no register grows with
// the number of planes.
//
// Operands, pre-tiled plane by plane (docs/kernels.md, "The plane-tiled layout"; written by
// bnn_tile_planes() of codegen/tile_layout.h): chunk c (16 bytes, bits 128c..128c+127) of
// plane p of row r at byte
//     (((r / TR) * P + p) * NCH + c) * TR * 16 + (r % TR) * 16
// [row tile][plane][chunk][row][16 B], NCH = KPAD/128, KPAD = K rounded up to KC*128 bits,
// padding zero. A: P = PT_XB, TR = PT_BM; W: P = PT_WB (1 with bipolar), TR = PT_BN. A stage
// of one plane of one row tile is KC*TR*16 contiguous bytes: one cp.async.bulk per operand.
// Epilogues (PT_EPI), as bgemm_planes.cu: 1 = int32 Y[M][PT_N]; 2 = the next layer's codes
// as bit-planes, count = sum_l (dir[n] >= 0 ? acc >= T[n][l] : acc <= T[n][l]) over PT_L
// levels, Y[M][PT_YB][LDY] words, bit n of plane b = bit b of count, LDY = N rounded up to
// 256 bits (padding words zero), exactly bgemm_planes.cu's A operand. PT_LFOLD 1 (bnncc sets
// it where a layer's codes have more than 15 levels, more than a staged tile holds): T holds
// the levels folded and sorted as the int8 form's (the qgemm step's x0: u = sorted(t ^ m), m =
// -1 where dir < 0; from BNN_Q8_EST levels on the estimates after them), each count a binary
// search (q8_levels.cu bnn_q8_count) instead of L loads and compares.
// sm_90+: cp.async.bulk on mbarriers, a lane of each warp in turn refilling (bgemm_tiled.cu's
// scheme). sm_80: the same main loop fed by 16-byte cp.async copies of the same image (a
// program for sm_80 leaves out tiled_common.cu, which is sm_90+ only). PT_WGMMA 1 (sm_90a): the
// same schedule on bgemm_wgmma.cu's wgmma loop (empty when compiled for another target).
// PT_APLAIN 1 (the form bnncc emits for a qgemm step, on both): A is not pre-tiled but
// bgemm_planes.cu's plain planes, X[M][PT_XB][PT_LDA] words (a quantize's or the previous
// qgemm's output as it is), loaded into shared memory by the kernel (mma.sync: gathered into
// the same stage image with 16-byte cp.async by every thread, the sm_80 pipeline on every
// architecture; wgmma: one TMA copy a stage from a tensor map, 128-byte swizzled rows), and
// with PT_WBIPOLAR the kernel counts apop itself (apop unused). PT_CONV 1 (wgmma with PT_S8):
// the int8 convolution of qgemm_s8.cu Q8_CONV as an implicit GEMM on the same pipeline, A its
// bytes image gathered window by window by the producer warpgroup (see the kernel). Each
// inclusion defines one kernel PT_NAME and #undefs its PT_* macros at the end; docs/kernels.md
// has the contract.
#ifndef BNN_COMMON_CU
#include "common.cu"
#endif
#ifndef BNN_Q8_COUNT_ONCE // pasted before this file by bnncc (NVRTC has no include files)
#include "q8_levels.cu"
#endif
#if (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900) && !defined(BNN_TILED_COMMON_CU) && (!PT_APLAIN || PT_WGMMA)
#include "tiled_common.cu"
#endif

#ifndef BNN_PLANES_TILED_ONCE
#define BNN_PLANES_TILED_ONCE
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "bgemm_planes_tiled.cu needs sm_80 or newer (the b1 MMA)"
#endif

// Pair i of the schedule: shift s = p + q from XB+WB-2 down to 0, q from high to low within
// a shift (a signed top plane first). Every shift has a pair, so s drops by 0 or 1 per step.
__device__ __forceinline__ void bnn_pt_pair(int i, int xb, int wb, int &p, int &q) {
    for (int s = xb + wb - 2; s >= 0; --s)
        for (int qq = min(wb - 1, s); qq >= 0 && s - qq < xb; --qq)
            if (i-- == 0) {
                p = s - qq, q = qq;
                return;
            }
    p = q = 0; // not reached for i < the number of pairs
}

// Pair i's planes (p, q) and the Horner factor to apply before its sweep: 2 when the shift
// drops by one, times -1 when the sign changes. s, c: the previous pair's shift and sign (start
// with xb + wb - 2 and 1); updated.
__device__ __forceinline__ int bnn_pt_step(int i, int xb, int wb, bool neg, int &s, int &c, int &p, int &q) {
    bnn_pt_pair(i, xb, wb, p, q);
    const int cn = neg && q == wb - 1 ? -1 : 1, f = (s - (p + q) == 1 ? 2 : 1) * (cn == c ? 1 : -1);
    s = p + q, c = cn;
    return f;
}

// Item i (0 <= i < KC*BM) of a plain-A stage gather: row r, 16-byte chunk c. A warp's 32
// items are 16 rows x 2 neighbouring chunks: lanes l and l+16 read the two halves of one
// 32-byte sector of row l (whole sectors from global memory), and each 8-lane phase of the
// shared-memory writes is 8 rows of one chunk, 8 distinct bank groups of the [chunk][row]
// image (a row's 8 chunks in one phase, 2 KiB apart, would hit the same banks 8 times over).
// BM: a multiple of 16; KC even.
__device__ __forceinline__ void bnn_pt_gather_item(int i, int bm, int &r, int &c) {
    const int w = i >> 5, lane = i & 31, rb = bm / 16;
    r = (w % rb) * 16 + (lane & 15);
    c = (w / rb) * 2 + (lane >> 4);
}

// acc *= f (f = +-1 or +-2), in unsigned arithmetic: wrapping, never undefined.
template <int MI, int NI> __device__ __forceinline__ void bnn_pt_scale(int (&acc)[MI][NI][4], int f) {
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = (int)((unsigned)acc[i][j][e] * (unsigned)f);
}

// Steps of the staged levels' binary search: a column's L levels padded to 2^S - 1
// (bnn_pt_stage_params).
__host__ __device__ constexpr int bnn_pt_search_steps(int l) { return l >= 8 ? 4 : l >= 4 ? 3 : l >= 2 ? 2 : 1; }

// The code of x over a staged column's 2^S - 1 sorted levels (bnn_pt_stage_params): a binary
// search of S steps, p[b] = bit b of the count of levels x reaches. Step b compares x with
// level pos + 2^b - 1, pos the levels found below x so far. HOLD: the levels in registers t,
// the step's level chosen by selects on the earlier outcomes (2^(S-1-b) - 1 of them at step b:
// 1 for a two-bit code, 4 for three bits); else from shared memory at tcol[j], one load a step.
template <int S, bool HOLD>
__device__ __forceinline__ void bnn_pt_code_sorted(int x, const int *t, const int *__restrict__ tcol, bool (&p)[S]) {
    static_assert(S >= 1 && S <= 4, "1 to 4 search steps (at most 15 levels)");
    int pos = 0;
#pragma unroll
    for (int b = S - 1; b >= 0; --b) {
        int tb;
        if (HOLD) {
            // candidate m: level m * 2^(b+1) + 2^b - 1, taken when the outcomes of steps
            // b+1 .. S-1 spell m (bit i of m: step b+1+i)
            int cand[1 << (S - 1)];
#pragma unroll
            for (int m = 0; m < (1 << (S - 1 - b)); ++m) cand[m] = t[m * (2 << b) + (1 << b) - 1];
#pragma unroll
            for (int i = 0, n = 1 << (S - 1 - b); n > 1; ++i, n >>= 1)
#pragma unroll
                for (int m = 0; m < n / 2; ++m) cand[m] = p[b + 1 + i] ? cand[2 * m + 1] : cand[2 * m];
            tb = cand[0];
        } else {
            tb = tcol[pos + (1 << b) - 1];
        }
        p[b] = x >= tb;
        pos += p[b] ? 1 << b : 0;
    }
}

// Writes one warp's outputs: acc[mi][ni] is the m16n8 tile at tile rows rw0 + 16mi and
// columns cw0 + 8ni (the tile starts at row m0, column n0), PTX layout (g = lane>>2,
// t = lane&3): d0 = D[g][2t], d1 = D[g][2t+1], d2 = D[g+8][2t], d3 = D[g+8][2t+1]; the final
// accumulators (sign applied), bipolar correction still to do (apop).
// apop[row - abase] (abase: 0 for the whole batch's apop, m0 for the tile's own in shared memory).
// Codes (EPI 2): STAGED, as bnn_pt_stage_params leaves them: column c's 2^S - 1 sorted levels
// at T[(c - cbase) * 2^S], the flip words at ((const unsigned *)dir)[(c - cbase) / 32]; a code
// is the binary search's outcomes (bnn_pt_code_sorted: a two-bit code two comparisons and a
// select, a four-bit one four comparisons), complemented a word at a time where the column's
// direction is negative. Else the blob's: column c's L levels at T[c * L + l], its direction
// at dir[c] (>= 0 counts v >= t, else v <= t); with flip = 0 or -1 (dir < 0) a code counts
// (v ^ flip) >= (t ^ flip): ~ reverses the order of two's-complement integers.
// A row's 32-column output word is spread over the 4 lanes t of the row (8 columns each):
// bnn_quad_or_scatter gives each lane a quarter of the words, whole, to store.
// Q8LEV (PT_S8's codes, PT_LFOLD's): column c's levels as qgemm_s8.cu reads them, folded and sorted at
// T[(c - cbase) * L] (lower.c put_q8_dense_levels), its direction at dir[c - cbase], a code the
// binary search of q8_levels.cu (from BNN_Q8_EST levels on, its check of the estimate after the
// levels); with YFMT 1 the codes as bytes, Y[M][N rounded up to 64]
// (zero past N: qgemm_s8.cu's A), a row's 8 columns of an n8 tile gathered into one lane by a
// transpose within the quad (each lane holds 2 of each tile), one 8-byte store.
// CELLS > 0 (PT_CONV): row m is pixel m % CELLS of image m / CELLS, and Y is qgemm_s8.cu
// Q8_CONV's: int32 NCHW per image, or YB image planes of YPLANE words per image, [CELLS][LDYW]
// each (words past LDYW not stored); its levels have no estimates.
template <int MI, int NI, int EPI, int N, int L, int YB, int LDY, bool BIPOLAR, bool STAGED, bool Q8LEV = false,
          int YFMT = 0, int CELLS = 0, int LDYW = 0, int YPLANE = 0>
__device__ __forceinline__ void bnn_pt_epilogue(const int (&acc)[MI][NI][4], int m0, int n0, int rw0, int cw0, int M,
                                                const int *__restrict__ apop, int abase, const int *__restrict__ T,
                                                const int *__restrict__ dir, int cbase, void *__restrict__ Y) {
    static_assert(NI % 4 == 0, "warp tile width must be a multiple of 32 columns");
    static_assert(EPI == 1 || EPI == 2, "PT_EPI: 1 (int32) or 2 (codes as bit-planes)");
    constexpr int SS = bnn_pt_search_steps(L), LF = (1 << SS) - 1; // STAGED: steps, padded levels
    static_assert(!STAGED || L <= 15, "staged levels: at most 15");
    static_assert(!(STAGED && Q8LEV) && (YFMT == 0 || Q8LEV), "Q8LEV: levels of the blob's int8 form, not staged");
    // Levels held in registers when few: each is read for 2 * MI rows.
    constexpr bool HOLD = Q8LEV ? false : STAGED ? SS <= 3 : L <= 8;
    constexpr int LR = HOLD ? (STAGED ? LF : L) : 1;
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    int fix[MI][2]; // apop of the rows this thread holds (bipolar), else 0
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = m0 + rw0 + mi * 16 + g + 8 * h;
            fix[mi][h] = BIPOLAR && row < M ? apop[row - abase] : 0;
        }
    if (EPI == 1) {
#pragma unroll
        for (int q = 0; q < NI / 4; ++q)
#pragma unroll
            for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int row = m0 + rw0 + mi * 16 + g + 8 * h;
                    if (row >= M) continue;
#pragma unroll
                    for (int u = 0; u < 4; ++u) {
                        const int c = n0 + cw0 + (4 * q + u) * 8 + 2 * t, *a = acc[mi][4 * q + u] + 2 * h;
                        const int v0 = BIPOLAR ? (int)(2u * (unsigned)a[0] - (unsigned)fix[mi][h]) : a[0];
                        const int v1 = BIPOLAR ? (int)(2u * (unsigned)a[1] - (unsigned)fix[mi][h]) : a[1];
                        if (CELLS) { // NCHW per image
                            int *y = (int *)Y + ((long long)(row / CELLS) * N + c) * CELLS + row % CELLS;
                            if (c < N) y[0] = v0;
                            if (c + 1 < N) y[CELLS] = v1;
                            continue;
                        }
                        int *y = (int *)Y + (long long)row * N + c;
                        if (N % 2 == 0 && c + 1 < N) {
                            *(int2 *)y = make_int2(v0, v1);
                        } else {
                            if (c < N) y[0] = v0;
                            if (c + 1 < N) y[1] = v1;
                        }
                    }
                }
        return;
    }
    // Partial words: slot ((mi * 2 + h) * YB + b) * NQ + q holds bit b of the codes of row
    // rw0 + 16mi + g + 8h in word q of the warp's columns, this lane's 8 of its 32 columns
    // (8u + 2t + e: bit at[u][e]).
    constexpr int NQ = NI / 4, NS = MI * 2 * YB * NQ;
    static_assert(NS % 4 == 0, "the reduce-scatter gives each of a row's 4 lanes a quarter of its words");
    unsigned w[NS], at[4][2];
    constexpr int LDY8 = (N + 63) / 64 * 64; // YFMT 1: bytes a row
#pragma unroll
    for (int j = 0; j < NS; ++j) w[j] = 0;
#pragma unroll
    for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int e = 0; e < 2; ++e) at[u][e] = 1u << (u * 8 + 2 * t + e);
#pragma unroll
    for (int q = 0; q < NQ; ++q) { // n8 tiles 4q..4q+3 = output word (n0 + cw0)/32 + q
        bool ok[4][2];
        unsigned pair[MI][2][4]; // YFMT 1: the codes of columns 2t, 2t+1 of tile 4q+u, a byte each
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int u = 0; u < 4; ++u) pair[mi][0][u] = pair[mi][1][u] = 0;
        int flip[4][2], th[4][2][LR];
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int c = n0 + cw0 + (4 * q + u) * 8 + 2 * t + e;
                if (STAGED) { // columns past N are staged as codes 0
                    ok[u][e] = true, flip[u][e] = 0;
                    const int *tc = T + (c - cbase) * (LF + 1);
                    if (HOLD && LF == 1) {
                        th[u][e][0] = tc[0];
                    } else if (HOLD) {
#pragma unroll
                        for (int k4 = 0; k4 < (LF + 1) / 4; ++k4) {
                            const int4 v = ((const int4 *)tc)[k4];
                            const int l4[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
                            for (int i = 0; i < 4; ++i)
                                if (4 * k4 + i < LR) th[u][e][4 * k4 + i < LR ? 4 * k4 + i : 0] = l4[i];
                        }
                    }
                } else {
                    ok[u][e] = c < N;
                    flip[u][e] = ok[u][e] && dir[c - cbase] < 0 ? -1 : 0;
#pragma unroll
                    for (int l = 0; l < LR; ++l) th[u][e][l] = HOLD && ok[u][e] ? T[(c - cbase) * L + l] ^ flip[u][e] : 0;
                }
            }
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int u = 0; u < 4; ++u)
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        if (!ok[u][e]) continue; // columns past N: code 0, zero bits
                        const int a = acc[mi][4 * q + u][2 * h + e];
                        const int v = BIPOLAR ? (int)(2u * (unsigned)a - (unsigned)fix[mi][h]) : a;
                        const int c = n0 + cw0 + (4 * q + u) * 8 + 2 * t + e, slot = (mi * 2 + h) * YB * NQ + q;
                        if (Q8LEV) { // the int8 form's levels: a binary search
                            const int count = bnn_q8_count(v ^ flip[u][e], T + (c - cbase) * L, L, !CELLS && BNN_Q8_EST(L),
                                                           T + BNN_Q8_EST_AT(N, L) + 4 * (c - cbase));
                            if (YFMT == 1) {
                                pair[mi][h][u] |= (unsigned)count << 8 * e;
                            } else {
#pragma unroll
                                for (int b = 0; b < YB; b++)
                                    bnn_or_if(w[slot + b * NQ], at[u][e], (count >> b) & 1);
                            }
                        } else if (STAGED) { // sorted levels: a binary search
                            bool p[SS];
                            bnn_pt_code_sorted<SS, HOLD>(v, th[u][e], T + (c - cbase) * (LF + 1), p);
#pragma unroll
                            for (int b = 0; b < (SS < YB ? SS : YB); ++b)
                                bnn_or_if(w[slot + b * NQ], at[u][e], p[b]);
                        } else if (L <= 3) { // the count's two bits as boolean sums (half adders)
                            const int x = v ^ flip[u][e];
                            bool s0 = false, s1 = false;
#pragma unroll
                            for (int l = 0; l < L; ++l) {
                                const bool p = x >= th[u][e][HOLD ? l : 0];
                                s1 = s1 ^ (s0 & p);
                                s0 = s0 ^ p;
                            }
                            bnn_or_if(w[slot], at[u][e], s0);
                            if (YB > 1) bnn_or_if(w[slot + (YB > 1 ? NQ : 0)], at[u][e], s1);
                        } else {
                            const int x = v ^ flip[u][e];
                            int count = 0;
#pragma unroll(L <= 8 ? L : 1)
                            for (int l = 0; l < L; ++l)
                                count += x >= (HOLD ? th[u][e][HOLD ? l : 0] : T[(c - cbase) * L + l] ^ flip[u][e]);
#pragma unroll
                            for (int b = 0; b < YB; ++b)
                                bnn_or_if(w[slot + b * NQ], at[u][e], (count >> b) & 1);
                        }
                    }
        if (YFMT == 1) // lane t gathers tile 4q+t's 8 bytes of each row: from lane t ^ s its 2
#pragma unroll
            for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    unsigned lo = 0, hi = 0;
#pragma unroll
                    for (int s = 0; s < 4; ++s) {
                        const int ts = t ^ s; // this lane sends tile 4q + ts's pair to lane ts
                        const unsigned send = ts == 0 ? pair[mi][h][0] : ts == 1 ? pair[mi][h][1]
                                             : ts == 2 ? pair[mi][h][2] : pair[mi][h][3];
                        const unsigned got = __shfl_xor_sync(0xffffffffu, send, s); // columns 2ts, 2ts+1
                        if (ts < 2)
                            lo |= got << 16 * ts;
                        else
                            hi |= got << 16 * (ts - 2);
                    }
                    const int row = m0 + rw0 + mi * 16 + g + 8 * h, col = n0 + cw0 + (4 * q + t) * 8;
                    if (row < M && col < LDY8)
                        *(uint2 *)((unsigned char *)Y + (long long)row * LDY8 + col) = make_uint2(lo, hi);
                }
    }
    if (YFMT == 1)
        return;
    unsigned r[NS / 4]; // slot 4i + t, whole
    bnn_quad_or_scatter(w, r, t);
#pragma unroll
    for (int i = 0; i < NS / 4; ++i) {
        const int j = 4 * i + t, q = j % NQ, b = j / NQ % YB, h = j / (NQ * YB) % 2, mi = j / (NQ * YB * 2);
        const int row = m0 + rw0 + mi * 16 + g + 8 * h, wcol = (n0 + cw0) / 32 + q;
        unsigned word = r[i];
        if (STAGED && b < SS) // a negative direction's code: 2^S - 1 minus the staged levels' count
            word ^= ((const unsigned *)dir)[(n0 + cw0 - cbase) / 32 + q];
        if (CELLS) {
            if (row < M && wcol < LDYW)
                ((unsigned *)Y)[((long long)(row / CELLS) * YB + b) * YPLANE + (long long)(row % CELLS) * LDYW + wcol] = word;
        } else if (row < M && wcol < LDY) {
            ((unsigned *)Y)[((long long)row * YB + b) * LDY + wcol] = word;
        }
    }
}

// A tile's thresholds and directions (columns n0 .. n0 + BN) into shared memory as
// bnn_pt_epilogue<STAGED> reads them, so that every column counts x >= u and S search steps
// find its code: column col's L levels u at sT[col * 2^S], 2^S - 1 of them (the padding as
// below), ascending; bit col % 32 of flipw[col / 32] set where the direction is negative. A
// negative direction counts x <= t = !(x >= t + 1), i.e. its code is L minus the count of
// u = t + 1; padded with 2^S - 1 - L levels every x reaches (INT_MIN) that is 2^S - 1 minus
// the count of all of them, the count's S bits complemented. A level t = INT_MAX there, which
// every x reaches, is u = INT_MAX, which none does: the kernel stages levels only where every
// count lies below INT_MAX (its XMAX). A direction >= 0 keeps its levels, padded with INT_MAX;
// columns past N are all INT_MAX (code 0). One warp, a column a lane at a time (BN a multiple
// of 32: the ballot has every lane); the sort is a fixed network on registers.
template <int BN, int L, int N>
__device__ __forceinline__ void bnn_pt_stage_params(int *__restrict__ sT, unsigned *__restrict__ flipw,
                                                    const int *__restrict__ T, const int *__restrict__ dir, int n0,
                                                    int lane) {
    constexpr int S = bnn_pt_search_steps(L), LF = (1 << S) - 1;
    constexpr int NEVER = 0x7fffffff, ALWAYS = -0x7fffffff - 1;
    static_assert(BN % 32 == 0 && L <= 15, "staged levels: 1 to 15, BN a multiple of 32");
    for (int col = lane; col < BN; col += 32) {
        const int c = n0 + col;
        const bool in = c < N, neg = in && dir[c] < 0;
        int u[LF];
#pragma unroll
        for (int l = 0; l < LF; ++l) {
            const int tv = l < L && in ? T[(size_t)c * L + (l < L ? l : 0)] : 0;
            u[l] = l >= L || !in ? (neg ? ALWAYS : NEVER) : !neg ? tv : bnn_le_as_ge(tv);
        }
#pragma unroll
        for (int i = 0; i + 1 < LF; ++i)
#pragma unroll
            for (int j = 0; j + 1 < LF - i; ++j) {
                const int a = u[j], b = u[j + 1];
                u[j] = min(a, b), u[j + 1] = max(a, b);
            }
#pragma unroll
        for (int l = 0; l < LF; ++l) sT[col * (LF + 1) + l] = u[l];
        const unsigned fw = __ballot_sync(0xffffffffu, neg);
        if (lane == 0) flipw[col / 32] = fw;
    }
}

// Bit output: the words of rows [m0, m0+BM) past the last column tile (W0 = words the column
// tiles cover, when BN is not a multiple of 256) up to LDY are zero, written by the block of
// the last column tile, as the next layer's A expects. nthreads threads.
template <int N, int BN, int BM, int YB, int LDY>
__device__ __forceinline__ void bnn_pt_zero_pad(void *__restrict__ Y, int m0, int M, int tid, int nthreads, int nt) {
    constexpr int NBX = (N + BN - 1) / BN, W0 = NBX * BN / 32, NWP = LDY > W0 ? LDY - W0 : 1, NZ = NWP * YB;
    if (LDY > W0 && nt == NBX - 1)
        for (int i = tid; i < BM * NZ; i += nthreads) {
            const int row = m0 + i / NZ, z = i % NZ;
            if (row < M) ((unsigned *)Y)[((long long)row * YB + z / NWP) * LDY + W0 + z % NWP] = 0u;
        }
}

// The bipolar correction apop[r] = sum_p 2^p popc(X_p[r]) of a plane-tiled A (xb planes, tile
// rows tr, nch 16-byte chunks per plane row), for r < rows. Block (32, 8): threadIdx.x picks
// one of 32 neighbouring rows (512 contiguous bytes per chunk), threadIdx.y strides chunks.
extern "C" __global__ void __launch_bounds__(256) bnn_planes_row_pop(const uint4 *__restrict__ X, int rows, int xb,
                                                                     int tr, int nch, int *__restrict__ out) {
    BNN_PDL_ENTER();
    __shared__ int part[8][33];
    const int r = blockIdx.x * 32 + threadIdx.x;
    int s = 0;
    if (r < rows)
        for (int p = 0; p < xb; ++p) {
            const uint4 *base = X + ((long long)(r / tr) * xb + p) * nch * tr + r % tr;
            for (int c = threadIdx.y; c < nch; c += 8) {
                const uint4 v = base[(long long)c * tr];
                s += (__popc(v.x) + __popc(v.y) + __popc(v.z) + __popc(v.w)) << p;
            }
        }
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && r < rows) {
#pragma unroll
        for (int y = 1; y < 8; ++y) s += part[y][threadIdx.x];
        out[r] = s;
    }
}
#endif // BNN_PLANES_TILED_ONCE

#if !defined(PT_N) || !defined(PT_K) || !defined(PT_XB) || !defined(PT_WB)
#error "bgemm_planes_tiled.cu: define PT_N, PT_K (bits), PT_XB and PT_WB (planes)"
#endif
#ifndef PT_NAME
#define PT_NAME bgemm_planes_tiled
#endif
#ifndef PT_WSIGNED
#define PT_WSIGNED 1
#endif
#ifndef PT_WBIPOLAR
#define PT_WBIPOLAR 0
#endif
#ifndef PT_EPI
#define PT_EPI 1
#endif
#ifndef PT_L
#define PT_L 1
#endif
#ifndef PT_YB
#define PT_YB 1
#endif
#ifndef PT_BM
#define PT_BM 128
#endif
#ifndef PT_BN
#define PT_BN 256
#endif
#ifndef PT_WM
#define PT_WM 2
#endif
#ifndef PT_WN
#define PT_WN 4
#endif
#ifndef PT_KC
#define PT_KC 8
#endif
#ifndef PT_STAGES
#define PT_STAGES 4
#endif
#ifndef PT_NOSTORE
#define PT_NOSTORE 0
#endif
#ifndef PT_APLAIN
#define PT_APLAIN 0
#endif
#ifndef PT_LDA
#define PT_LDA 0
#endif
#ifndef PT_WGMMA
#define PT_WGMMA 0
#endif
#ifndef PT_S8
#define PT_S8 0
#endif
#ifndef PT_LFOLD
#define PT_LFOLD 0
#endif
#if PT_LFOLD && (PT_S8 || PT_EPI != 2)
#error "bgemm_planes_tiled.cu: PT_LFOLD (folded levels) is for bit-plane codes out (PT_EPI 2)"
#endif
#ifndef PT_YFMT
#define PT_YFMT 0
#endif
#ifndef PT_CONV
#define PT_CONV 0
#endif
#if PT_CONV && (!PT_WGMMA || !PT_S8 || PT_APLAIN || PT_YFMT != 0 || PT_STAGES < 2)
#error "bgemm_planes_tiled.cu: PT_CONV (the int8 convolution) is a wgmma form of PT_S8 over its bytes image, codes as planes"
#endif
#if PT_CONV && !(defined(PT_IH) && defined(PT_IW) && defined(PT_IC) && defined(PT_CB) && defined(PT_KH) && \
                 defined(PT_KW) && defined(PT_SH) && defined(PT_SW) && defined(PT_PADT) && defined(PT_PADL) && \
                 defined(PT_DH) && defined(PT_DW) && defined(PT_OH) && defined(PT_OW) && defined(PT_PADC))
#error "bgemm_planes_tiled.cu: PT_CONV needs the convolution's PT_IH ... PT_PADC (see the kernel)"
#endif
#if PT_CONV && PT_EPI == 2 && !(defined(PT_LDYW) && defined(PT_YPLANE))
#error "bgemm_planes_tiled.cu: PT_CONV with codes out needs PT_LDYW and PT_YPLANE"
#endif
#if PT_CONV
#define PT_CELLS (PT_OH * PT_OW) // output pixels an image
#else
#define PT_CELLS 0
#endif
#if !PT_CONV || PT_EPI != 2
#undef PT_LDYW
#undef PT_YPLANE
#define PT_LDYW 0
#define PT_YPLANE 0
#endif
#if PT_S8 && (!PT_WGMMA || PT_XB != 1 || PT_WB != 1 || PT_WBIPOLAR)
#error "bgemm_planes_tiled.cu: PT_S8 (one byte a K element) is a wgmma form of one plane each (PT_XB = PT_WB = 1)"
#endif
#if PT_YFMT != 0 && !(PT_S8 && PT_EPI == 2 && PT_YFMT == 1)
#error "bgemm_planes_tiled.cu: PT_YFMT 1 (codes as bytes) is PT_S8's only other output format"
#endif
// The wgmma variant keeps a tile's thresholds in shared memory up to this many levels
// (tile_layout.h BNN_PLANES_WGMMA_STAGE_T_MAX_L, bnn_planes_tiled_smem).
#define BNN_PT_STAGE_T_MAX_L 15
// The wgmma variant exists only where wgmma does (sm_90a, and the host pass). In a program
// compiled for several targets (a model.cu) it is empty elsewhere: bnncc flags its step
// BLOB_STEP_SM90A, so no other CUBIN is asked for it.
#if PT_WGMMA && (!defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL))
#define BNN_PT_WGMMA_HERE 1
#else
#define BNN_PT_WGMMA_HERE 0
#endif
#if BNN_PT_WGMMA_HERE && !defined(BNN_BGEMM_WGMMA_ONCE) // alone (nvcc): the wgmma wrappers of bgemm_wgmma.cu
#define BNN_WGMMA_HELPERS_ONLY
#include "bgemm_wgmma.cu"
#undef BNN_WGMMA_HELPERS_ONLY
#endif

#if PT_WGMMA
#if BNN_PT_WGMMA_HERE
// The wgmma variant (sm_90a): bgemm_wgmma.cu's block (128 x 256 tile; two consumer warpgroups
// issuing m64n256k256 from shared memory, one producer warpgroup whose thread 0 keeps the
// ring full) over the same pair schedule. Before a Horner step the consumers wait for their
// in-flight wgmma group (the accumulators must be final), so each step costs one pipeline
// bubble per pair, not per stage. Block 384 threads; PT_BM/BN/WM/WN are ignored.
// With PT_APLAIN thread 0 loads A with one TMA copy a stage from the tensor map tmA (the
// kernel's first parameter instead of At), which the launcher encodes for the plain planes
// X[M][PT_XB][PT_LDA] u32 words: rank 3, dims {PT_LDA, PT_XB, M}, strides {LDA*4, XB*LDA*4}
// bytes, box {KC*4, 1, 128}, 128-byte swizzle (KC 8): a stage's A is 128 rows of 128 bytes,
// the 16-byte chunks of row r at index c ^ (r % 8), which the A descriptor reads as the
// swizzled K-major layout (stages 1024-byte aligned). Rows past M come in as zeros. (A
// gather by the producer warpgroup's cp.async, announced per thread after a proxy fence, was
// 20-35 % slower at 8192^3.)
// With PT_WBIPOLAR the consumers count apop themselves from the stages in shared memory (each
// warp its 16 rows) while their wgmmas run.
// PT_CONV 1 (with PT_S8): qgemm_s8.cu Q8_CONV's convolution, the same implicit GEMM: row m an
// output pixel (image m / (PT_OH PT_OW), oy, ox), K byte tap * PT_CB + c (PT_KH x PT_KW taps
// row-major, stride PT_SH x PT_SW, padding PT_PADT / PT_PADL, dilation PT_DH x PT_DW), PT_K
// = 8 x that K padded to a multiple of KC 16 bytes (the pre-tiled weights' K). At: the bytes image, per image [PT_IH PT_IW][PT_CB]
// u8 (channel c < PT_IC at byte c); a tap outside the image reads the pad code PT_PADC in
// channels below PT_IC, zero above; K past the taps zero. Wt: the weights [N][K bytes]
// pre-tiled as PT_S8's. Y: Q8_CONV's (bnn_pt_epilogue CELLS): int32 NCHW, or PT_YB image
// planes of PT_YPLANE words per image, [PT_OH PT_OW][PT_LDYW] each, padding words and the
// plane's tail zero. The producer warpgroup's 128 threads gather a stage's A into the
// chunk-major image, 16-byte cp.async a chunk (a warp 16 rows x 2 neighbouring chunks: whole
// 32-byte sectors read, 8 rows of one chunk a store phase, no bank conflicts), the pad code by
// a plain store; thread 0 also bulk-copies W. cp.async and st.shared write through the
// generic proxy and wgmma reads through the async one, so a thread announces a stage only
// after its copies landed (cp.async.wait_group), then a proxy fence, then its arrival on the
// stage's "full" barrier (128 arrivals + thread 0's expect_tx); LAG = S - 2 stages late at
// most: the consumers release stage g once stage g + 1 is full, and the producer needs that
// release to refill g's slot for stage g + S.
#if PT_APLAIN
#define BNN_PT_A_PARAM const __grid_constant__ BnnTensorMap tmA
#else
#define BNN_PT_A_PARAM const void *__restrict__ At
#endif
extern "C" __global__ void __launch_bounds__(384, 1)
    PT_NAME(BNN_PT_A_PARAM, const void *__restrict__ Wt, const int *__restrict__ apop, const int *__restrict__ T,
            const int *__restrict__ dir, void *__restrict__ Y, int m_rt) {
    BNN_PDL_ENTER();
    constexpr int BM = 128, BN = 256, KC = PT_KC, S = PT_STAGES, NW = 8, NT = NW * 32;
    constexpr int N = PT_N, K = PT_K, BK = KC * 128, NKT = (K + BK - 1) / BK, NCH = NKT * KC;
    constexpr int XB = PT_XB, WB = PT_WBIPOLAR ? 1 : PT_WB, NP = XB * WB;
    constexpr bool NEG = PT_WSIGNED && !PT_WBIPOLAR && !PT_S8;
    constexpr int LDY = PT_EPI == 2 ? (N + 255) / 256 * 8 : N;
    constexpr int L = PT_EPI == 2 ? PT_L : 1, YB = PT_EPI == 2 ? PT_YB : 1; // unused with int32 output
    constexpr unsigned ABYTES = KC * BM * 16, BBYTES = KC * BN * 16, STAGE = ABYTES + BBYTES;
    constexpr bool SELF_POP = PT_APLAIN && PT_WBIPOLAR;  // SELF_POP: the tile's apop after the barriers
    constexpr unsigned ALIGN = PT_APLAIN ? 1024 : 0;    // the swizzled stages' alignment slack
    // STAGE_T: a tile's thresholds and directions in shared memory, two tiles' buffers and
    // their "full" and "empty" mbarriers (not with PT_NOSTORE, whose consumers skip the
    // epilogue: the staging warp would wait for buffers never handed back). Staged levels read
    // x >= INT_MAX as never reached (bnn_pt_stage_params), so every count must lie below it:
    // |acc| <= K * (2^XB - 1) * the largest weight magnitude (+-1 weights: 2a - apop).
    constexpr long long XMAX =
        (long long)K * ((1 << XB) - 1) * (PT_WBIPOLAR ? 1 : PT_WSIGNED ? 1 << (PT_WB - 1) : (1 << PT_WB) - 1);
    constexpr bool STAGE_T =
        PT_EPI == 2 && !PT_S8 && !PT_LFOLD && L <= BNN_PT_STAGE_T_MAX_L && !PT_NOSTORE && XMAX < 0x7fffffffLL;
    // STAGE_T buffer: BN columns of 2^S levels (bnn_pt_stage_params), then BN / 32 flip words
    constexpr int TBUF = BN * (1 << bnn_pt_search_steps(L)) + BN / 32;
    constexpr unsigned SMEM0 = S * STAGE + 16 * S + (SELF_POP ? BM * 4 : 0) + ALIGN + (STAGE_T ? 2 * TBUF * 4 + 32 : 0);
    // CSTAGE (PT_CONV's codes, where they fit: tile_layout.h bnn_qconv_wgmma_smem): a column
    // tile's folded levels [BN][L] and directions [BN] in shared memory after the barriers,
    // staged by the consumers when the tile's columns change (a search step an LDS instead of a
    // load from L2: 255-level codes took 1.6x the mma.sync kernel's time from global memory)
    constexpr bool CSTAGE = PT_CONV && PT_EPI == 2 && SMEM0 + (BN * L + BN) * 4 <= 232448;
    constexpr unsigned SMEM = SMEM0 + (CSTAGE ? (BN * L + BN) * 4 : 0);
    static_assert(!PT_APLAIN || KC == 8, "PT_APLAIN: PT_KC 8 (a stage's A rows are the 128 bytes of the swizzle)");
    static_assert(N >= 1 && K >= 1 && XB >= 1 && PT_WB >= 1, "empty GEMM");
    static_assert(!PT_WBIPOLAR || PT_WB == 1, "bipolar weights are one plane (PT_WB 1)");
    static_assert(KC % 2 == 0 && KC >= 2 && KC <= 16, "KC: an even number of 16-byte chunks (k256 steps), <= 16");
    static_assert(S >= 2, "at least 2 stages");
    static_assert(!PT_APLAIN || (PT_LDA % 4 == 0 && PT_LDA * 32 >= K), "PT_LDA: words a plain plane row, 16-byte chunks");
    static_assert(SMEM <= 232448, "stages do not fit in 227 KiB of shared memory");
    static_assert(PT_EPI != 2 || (PT_YB >= 1 && PT_YB <= 31 && PT_L >= 1), "PT_YB output planes, PT_L levels");
#ifdef PT_M
    const int M = PT_M;
#else
    const int M = m_rt;
#endif
    extern __shared__ __align__(128) unsigned char bnn_dsmem[];
    if (bnn_dyn_smem_size() < SMEM) __trap(); // launched with too little shared memory
    const unsigned sraw = bnn_smem(bnn_dsmem), s0 = ALIGN ? (sraw + ALIGN - 1) & ~(ALIGN - 1) : sraw;
    const unsigned full = s0 + S * STAGE, empty = full + 8 * S;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int ntn = (N + BN - 1) / BN, ntiles = (M + BM - 1) / BM * ntn;
    int *const tpop = (int *)(bnn_dsmem + (s0 - sraw) + S * STAGE + 16 * S); // SELF_POP: the tile's apop
    int *const tsh = tpop + (SELF_POP ? BM : 0); // STAGE_T: [2][TBUF]
    const unsigned tbars = bnn_smem(tsh + 2 * TBUF); // STAGE_T: the buffers' hand-off (bnn_handoff_init)
    if (tid == 0) {
        for (int s = 0; s < S; ++s) {
            bnn_mbar_init(full + 8 * s, PT_CONV ? 129 : 1); // the expect_tx arrival (+ the bytes), PT_CONV: + 128 gatherers
            bnn_mbar_init(empty + 8 * s, NW); // one arrival per consumer warp
        }
        if (STAGE_T)
            bnn_handoff_init(tbars, NW);
        bnn_mbar_init_fence();
    }
    __syncthreads();

#if PT_CONV
    if (warp >= NW) { // producer warpgroup: 128 threads gather A's windows, thread 0 also copies W
        bnn_setmaxnreg_dec<40>();
        constexpr int CELLS = PT_CELLS, TAPS = PT_KH * PT_KW, LAG = S - 2;
        // this thread's rows ra and ra + 64 of a tile, its chunks hc, hc + 2, ... of a stage
        const int ptid = tid - NT, hc = (ptid >> 4) & 1, ra = (ptid >> 5) * 16 + (ptid & 15);
        unsigned it = 0, shown = 0; // stages issued; stages announced on their "full" barrier
        for (int tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
            const int mt = tile / ntn, nt = tile % ntn;
            const char *gb = (const char *)Wt + (size_t)nt * NCH * BN * 16;
            long long org[2]; // the rows' window origins in At (bytes), their top left tap
            int iy0[2], ix0[2];
            bool live[2];
#pragma unroll
            for (int j = 0; j < 2; ++j) {
                const int m = mt * BM + ra + 64 * j, image = m / CELLS, cell = m - image * CELLS, oy = cell / PT_OW;
                live[j] = m < M;
                iy0[j] = oy * PT_SH - PT_PADT, ix0[j] = (cell - oy * PT_OW) * PT_SW - PT_PADL;
                org[j] = ((long long)image * (PT_IH * PT_IW) + (long long)iy0[j] * PT_IW + ix0[j]) * PT_CB;
            }
            for (int kt = 0; kt < NKT; ++kt, ++it) {
                const unsigned slot = it % S, bar = full + 8 * slot, dst = s0 + slot * STAGE;
                if (it >= S) bnn_mbar_wait(empty + 8 * slot, (it / S - 1) & 1);
                if (ptid == 0) {
                    bnn_mbar_expect_tx(bar, BBYTES);
                    bnn_bulk_g2s(dst + ABYTES, gb + (size_t)kt * BBYTES, BBYTES, bar);
                }
#pragma unroll
                for (int cc = 0; cc < KC / 2; ++cc) {
                    const int c = 2 * cc + hc, kb = (kt * KC + c) * 16, tap = kb / PT_CB, cb = kb - tap * PT_CB;
                    const int ky = tap / PT_KW, kx = tap - ky * PT_KW;
                    const long long toff = (long long)(ky * PT_DH * PT_IW + kx * PT_DW) * PT_CB + cb;
#pragma unroll
                    for (int j = 0; j < 2; ++j) {
                        const int iy = iy0[j] + ky * PT_DH, ix = ix0[j] + kx * PT_DW;
                        const unsigned d = dst + (c * BM + ra + 64 * j) * 16;
                        if (live[j] && tap < TAPS && (unsigned)iy < (unsigned)PT_IH && (unsigned)ix < (unsigned)PT_IW) {
                            bnn_cp16(d, (const char *)At + org[j] + toff, 16);
                        } else if (PT_PADC == 0 || !live[j] || tap >= TAPS) {
                            bnn_cp16(d, At, 0);
                        } else { // the pad code in the real channels
                            unsigned pw[4];
#pragma unroll
                            for (int q = 0; q < 4; ++q) {
                                pw[q] = 0u;
#pragma unroll
                                for (int i = 0; i < 4; ++i)
                                    pw[q] |= (cb + 4 * q + i < PT_IC ? (unsigned)PT_PADC : 0u) << (8 * i);
                            }
                            bnn_st16(d, pw[0], pw[1], pw[2], pw[3]);
                        }
                    }
                }
                bnn_cp_commit();
                if (it >= (unsigned)LAG) { // stage it - LAG landed: announce it
                    bnn_cp_wait<LAG>();
                    bnn_fence_proxy_async();
                    bnn_mbar_arrive(full + 8 * (shown++ % S));
                }
            }
        }
        bnn_cp_wait<0>();
        bnn_fence_proxy_async();
        while (shown < it) bnn_mbar_arrive(full + 8 * (shown++ % S));
    } else
#endif
    if (warp >= NW) { // producer warpgroup: one thread issues every copy, and it gives its registers away
        bnn_setmaxnreg_dec<40>();
        if (warp == NW && lane == 0) {
            unsigned it = 0;
            for (int tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
                const int mt = tile / ntn, nt = tile % ntn;
                for (int pi = 0; pi < NP; ++pi) {
                    int p, q;
                    bnn_pt_pair(pi, XB, WB, p, q);
#if !PT_APLAIN
                    const char *ga = (const char *)At + ((size_t)mt * XB + p) * NCH * BM * 16;
#endif
                    const char *gb = (const char *)Wt + ((size_t)nt * WB + q) * NCH * BN * 16;
                    for (int kt = 0; kt < NKT; ++kt, ++it) {
                        const unsigned slot = it % S, bar = full + 8 * slot, dst = s0 + slot * STAGE;
                        if (it >= S) bnn_mbar_wait(empty + 8 * slot, (it / S - 1) & 1);
                        bnn_mbar_expect_tx(bar, STAGE);
#if PT_APLAIN
                        bnn_tma_load_3d(dst, &tmA, kt * KC * 4, p, mt * BM, bar);
#else
                        bnn_bulk_g2s(dst, ga + (size_t)kt * ABYTES, ABYTES, bar);
#endif
                        bnn_bulk_g2s(dst + ABYTES, gb + (size_t)kt * BBYTES, BBYTES, bar);
                    }
                }
            }
        } else if (STAGE_T && warp == NW + 1) {
            // The staging warp: each tile's thresholds, in one orientation, padded and sorted, into
            // buffer i % 2 while the consumers run tile i - 1, so that no epilogue waits for global
            // loads.
            unsigned i = 0;
            for (int tile = blockIdx.x; tile < ntiles; tile += gridDim.x, ++i) {
                bnn_handoff_wait_empty(tbars, i);
                int *const buf = tsh + (i & 1) * TBUF;
                bnn_pt_stage_params<BN, STAGE_T ? L : 1, N>(buf, (unsigned *)buf + TBUF - BN / 32, T, dir, tile % ntn * BN, lane);
                bnn_handoff_fill(tbars, i);
            }
        }
    } else {
        bnn_setmaxnreg_inc<232>(); // 128 accumulators + the epilogue without spills
        const int wg = warp >> 2;
        // Descriptors without their address field: LBO = rows*16 (the next 16-byte K chunk),
        // SBO = 128 (the next 8 rows of the same chunk).
        // PT_APLAIN: A as 128-byte swizzled K-major rows (mode 1 in bits 62-63), SBO = 1024 (the
        // next 8 rows), LBO unused (a k256 step's 32 bytes lie within a row); its k step advances
        // the start address by 32 bytes.
        const unsigned long long dA0 =
            PT_APLAIN ? bnn_wg_desc(0, 16, 1024) | 1ull << 62 : bnn_wg_desc(0, BM * 16, 128);
        const unsigned long long dB0 = bnn_wg_desc(0, BN * 16, 128);
        constexpr unsigned AROW = PT_APLAIN ? KC * 16 : 16, AK = PT_APLAIN ? 32 : 2 * BM * 16; // a row; a k step
        unsigned it = 0;
        auto release = [&](unsigned slot) { // after the wgmmas that read the slot retired
            __syncwarp();
            if (lane == 0) bnn_mbar_arrive(empty + 8 * slot);
        };
        unsigned tiles_done = 0; // STAGE_T: the staging warp's buffer (tiles_done & 1) and phase
        int staged_nt = -1;      // CSTAGE: the column tile whose levels are in shared memory
        int *const csT = (int *)(bnn_dsmem + S * STAGE + 16 * S), *const csdir = csT + BN * L; // CSTAGE
        for (int tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
            const int mt = tile / ntn, nt = tile % ntn;
            int acc[1][32][4];
#pragma unroll
            for (int j = 0; j < 32; ++j) acc[0][j][0] = acc[0][j][1] = acc[0][j][2] = acc[0][j][3] = 0;
            int sprev = XB + WB - 2, cprev = 1;
            int rpop = 0; // SELF_POP: 2^p popc of tile row 16*warp + (lane & 15), chunks of parity lane >> 4
            unsigned prev = 0;
            bool held = false; // prev: a slot read by the in-flight group, not yet released
#pragma unroll 1
            for (int pi = 0; pi < NP; ++pi) {
                int p, q;
                const int f = bnn_pt_step(pi, XB, WB, NEG, sprev, cprev, p, q);
                if (f != 1) {
                    bnn_wg_wait<0>();
                    bnn_wg_fence_acc(acc);
                    bnn_pt_scale(acc, f);
                }
                for (int kt = 0; kt < NKT; ++kt, ++it) {
                    const unsigned slot = it % S, sa = s0 + slot * STAGE + wg * 64 * AROW, sb = s0 + slot * STAGE + ABYTES;
                    bnn_mbar_wait(full + 8 * slot, (it / S) & 1);
                    __syncwarp(); // wgmma is .sync.aligned: the warp must be converged after the spin
                    bnn_wg_fence();
#pragma unroll
                    for (int ks = 0; ks < KC / 2; ++ks) {
                        const unsigned long long da = dA0 | ((sa + ks * AK) & 0x3FFFF) >> 4,
                                                 db = dB0 | ((sb + 2 * ks * BN * 16) & 0x3FFFF) >> 4;
                        if (PT_S8)
                            bnn_wgmma_s8_n256(acc, da, db);
                        else
                            bnn_wgmma_n256(acc, da, db);
                    }
                    bnn_wg_commit();
                    if (SELF_POP) // bipolar weights: every pair is (p, 0), every stage one of plane p's
#pragma unroll
                        for (int c = lane >> 4; c < KC; c += 2) {
                            unsigned v[4];
                            // PT_APLAIN: the 128-byte swizzle stores a row's chunk c at c ^ (row & 7);
                            // reading chunk c ^ (row & 7) keeps 8 lanes' rows on 8 bank groups, and the
                            // lanes of a row still read each of its chunks once (the sum is the same)
                            const unsigned row = warp * 16 + (lane & 15);
                            bnn_ld16(s0 + slot * STAGE +
                                         (PT_APLAIN ? row * AROW + (c ^ (row & 7)) * 16 : (c * BM + row) * 16), v);
                            rpop += (__popc(v[0]) + __popc(v[1]) + __popc(v[2]) + __popc(v[3])) << p;
                        }
                    bnn_wg_wait<1>(); // the previous stage's wgmmas retired: its slot can be refilled
                    if (held) release(prev);
                    prev = slot, held = true;
                }
            }
            bnn_wg_wait<0>();
            bnn_wg_fence_acc(acc);
            release(prev);
            if (cprev != 1) bnn_pt_scale(acc, cprev);
            if (PT_NOSTORE) { // timing aid: keeps the main loop alive without the epilogue's stores
                int x = 0;
#pragma unroll
                for (int j = 0; j < 32; ++j) x ^= acc[0][j][0] ^ acc[0][j][1] ^ acc[0][j][2] ^ acc[0][j][3];
                if (x == 0x7fffffff) ((int *)Y)[0] = x;
                continue;
            }
            if (SELF_POP) { // rows of this warp only: its own epilogue reads them
                rpop += __shfl_xor_sync(0xffffffffu, rpop, 16);
                if (lane < 16) tpop[warp * 16 + lane] = rpop;
                __syncwarp();
            }
            // STAGE_T: the column tile's thresholds and directions, staged by warp NW + 1 (the
            // epilogue reads each several times); each consumer warp hands the buffer back
            // after its epilogue.
            const int *tT = T, *tdir = dir;
            if (STAGE_T) {
                bnn_handoff_wait_full(tbars, tiles_done);
                tT = tsh + (tiles_done & 1) * TBUF, tdir = tT + TBUF - BN / 32;
            }
            if (CSTAGE) { // every consumer walks the same tiles: the barriers are uniform
                if (nt != staged_nt) {
                    if (staged_nt >= 0) bnn_bar_sync(1, NT); // the last tile's searches are done
                    for (int i = tid; i < BN * L; i += NT)
                        csT[i] = nt * BN + i / L < N ? T[(size_t)nt * BN * L + i] : 0;
                    for (int i = tid; i < BN; i += NT) csdir[i] = nt * BN + i < N ? dir[nt * BN + i] : 0;
                    bnn_bar_sync(1, NT);
                    staged_nt = nt;
                }
                tT = csT, tdir = csdir;
            }
            // Warp w holds rows 16w .. 16w+15 of the tile: the m16n8 layout, MI = 1, NI = 32.
            // (the levels folded, sorted and searched: PT_S8's, PT_LFOLD's)
            bnn_pt_epilogue<1, 32, PT_EPI, N, L, YB, LDY, (bool)PT_WBIPOLAR, STAGE_T, PT_EPI == 2 && (PT_S8 || PT_LFOLD),
                            PT_YFMT, PT_CELLS, PT_LDYW, PT_YPLANE>(
                acc, mt * BM, nt * BN, warp * 16, 0, M, SELF_POP ? tpop : apop, SELF_POP ? mt * BM : 0, tT, tdir,
                STAGE_T || CSTAGE ? nt * BN : 0, Y);
            if (STAGE_T) // every lane read the buffer (and tpop)
                bnn_handoff_release(tbars, tiles_done++, lane);
            else if (SELF_POP)
                __syncwarp(); // every lane read tpop
            if (PT_CONV && PT_EPI == 2) { // the last column tile zeroes an image's plane tails past its last pixel
                constexpr int CELLS = PT_CONV ? PT_CELLS : 1, TAIL = PT_YPLANE - CELLS * PT_LDYW;
                for (int i = tid; TAIL > 0 && nt == ntn - 1 && i < BM * YB * TAIL; i += NT) {
                    const int row = mt * BM + i / (YB * TAIL), b = i / TAIL % YB;
                    if (row < M && row % CELLS == CELLS - 1)
                        ((unsigned *)Y)[((long long)(row / CELLS) * YB + b) * PT_YPLANE + CELLS * PT_LDYW + i % TAIL] = 0u;
                }
            } else if (PT_EPI == 2 && PT_YFMT == 0) {
                bnn_pt_zero_pad<N, BN, BM, YB, LDY>(Y, mt * BM, M, tid, NT, nt);
            }
        }
    }
}
#endif // BNN_PT_WGMMA_HERE
#else // mma.sync

// Grid: any number of blocks (best: min(tiles, SMs)); block PT_WM*PT_WN*32 threads; dynamic
// shared memory bnn_planes_tiled_smem() (tile_layout.h), checked on entry. apop: only read
// with PT_WBIPOLAR (bnn_planes_row_pop makes it). T, dir: only read with PT_EPI 2. m_rt is M
// unless PT_M fixes it.
extern "C" __global__ void __launch_bounds__(PT_WM *PT_WN * 32, 1)
    PT_NAME(const void *__restrict__ At, const void *__restrict__ Wt, const int *__restrict__ apop,
            const int *__restrict__ T, const int *__restrict__ dir, void *__restrict__ Y, int m_rt) {
    BNN_PDL_ENTER();
    constexpr int BM = PT_BM, BN = PT_BN, WM = PT_WM, WN = PT_WN, KC = PT_KC, S = PT_STAGES;
    constexpr int NW = WM * WN, NT = NW * 32, WTM = BM / WM, WTN = BN / WN, MI = WTM / 16, NI = WTN / 8;
    constexpr int N = PT_N, K = PT_K, BK = KC * 128, NKT = (K + BK - 1) / BK, NCH = NKT * KC;
    constexpr int XB = PT_XB, WB = PT_WBIPOLAR ? 1 : PT_WB, NP = XB * WB;
    constexpr bool NEG = PT_WSIGNED && !PT_WBIPOLAR; // the top weight plane counts negative
    constexpr int LDY = PT_EPI == 2 ? (N + 255) / 256 * 8 : N;
    constexpr unsigned ABYTES = KC * BM * 16, BBYTES = KC * BN * 16, STAGE = ABYTES + BBYTES;
    // APLAIN + bipolar: the tile's apop in shared memory after the stages
    constexpr bool SELF_POP = PT_APLAIN && PT_WBIPOLAR;
    constexpr unsigned SMEM = S * STAGE + 16 * S + (SELF_POP ? BM * 4 : 0);
    static_assert(N >= 1 && K >= 1 && XB >= 1 && PT_WB >= 1, "empty GEMM");
    static_assert(!PT_WBIPOLAR || PT_WB == 1, "bipolar weights are one plane (PT_WB 1)");
    static_assert(KC % 2 == 0 && KC >= 2 && KC <= 16, "KC: an even number of 16-byte chunks (k256 steps), <= 16");
    static_assert(S >= 2, "at least 2 stages");
    static_assert(!PT_APLAIN || (PT_LDA % 4 == 0 && PT_LDA * 32 >= K), "PT_LDA: words a plain plane row, 16-byte chunks");
    static_assert(WTM % 16 == 0 && WTN % 32 == 0 && BM == WTM * WM && BN == WTN * WN, "warp tile");
    static_assert(SMEM <= 232448, "stages do not fit in 227 KiB of shared memory");
    static_assert(PT_EPI != 2 || (PT_YB >= 1 && PT_YB <= 31 && PT_L >= 1), "PT_YB output planes, PT_L levels");
#ifdef PT_M
    const int M = PT_M;
#else
    const int M = m_rt;
#endif
    extern __shared__ __align__(128) unsigned char bnn_dsmem[];
    if (bnn_dyn_smem_size() < SMEM) __trap(); // launched with too little shared memory
    const unsigned s0 = bnn_smem(bnn_dsmem);
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int ntn = (N + BN - 1) / BN, ntiles = (M + BM - 1) / BM * ntn;
    // This block's stage sequence: its tiles blockIdx.x + i*gridDim.x, NP pairs each, NKT
    // stages per pair; stage g lives in slot g % S.
    const unsigned total =
        (int)blockIdx.x < ntiles ? (ntiles - blockIdx.x + gridDim.x - 1) / gridDim.x * (NP * NKT) : 0;
    // ga: the stage's A image (pre-tiled), or (APLAIN) row m0 of plane p at the stage's first chunk
    auto source = [&](unsigned g, const char *&ga, const char *&gb, int &m0) {
        const int tile = blockIdx.x + (int)(g / (NP * NKT)) * gridDim.x, r = g % (NP * NKT);
        const int kt = r % NKT, mt = tile / ntn, nt = tile % ntn;
        int p, q;
        bnn_pt_pair(r / NKT, XB, WB, p, q);
        m0 = mt * BM;
        ga = PT_APLAIN ? (const char *)At + (((size_t)m0 * XB + p) * PT_LDA + (size_t)kt * KC * 4) * 4
                       : (const char *)At + (((size_t)mt * XB + p) * NCH + (size_t)kt * KC) * BM * 16;
        gb = (const char *)Wt + (((size_t)nt * WB + q) * NCH + (size_t)kt * KC) * BN * 16;
    };
#if __CUDA_ARCH__ >= 900 && !PT_APLAIN
    // One thread fills slot g % S with two bulk copies completing on its "full" mbarrier: thread
    // 0 the first S, then lane 0 of warp (g - S) mod NW (bgemm_tiled.cu's turns).
    const unsigned full = s0 + S * STAGE, empty = full + 8 * S;
    auto produce = [&](unsigned g) {
        if (g >= total) return;
        const char *ga, *gb;
        int m0;
        source(g, ga, gb, m0);
        const unsigned slot = g % S, bar = full + 8 * slot, dst = s0 + slot * STAGE;
        bnn_mbar_expect_tx(bar, STAGE);
        bnn_bulk_g2s(dst, ga, ABYTES, bar);
        bnn_bulk_g2s(dst + ABYTES, gb, BBYTES, bar);
    };
    if (tid == 0) {
        for (int s = 0; s < S; ++s) {
            bnn_mbar_init(full + 8 * s, 1);   // thread 0's expect_tx arrival (+ the bytes)
            bnn_mbar_init(empty + 8 * s, NW); // one arrival per warp
        }
        bnn_mbar_init_fence();
        for (int s = 0; s < S; ++s) produce(s);
    }
#else
    // Every thread copies its share of stage g's image (contiguous in global memory, as in
    // shared memory) with 16-byte cp.async; one commit group per stage, empty or not. APLAIN:
    // A's chunk c of tile row r from its plain row (bnn_pt_gather_item), zeros past M and past
    // the row's PT_LDA words.
    auto produce = [&](unsigned g) {
        if (g < total) {
            const char *ga, *gb;
            int m0;
            source(g, ga, gb, m0);
            const unsigned dst = s0 + (g % S) * STAGE;
            if (PT_APLAIN) {
                const int kt = (int)(g % (NP * NKT)) % NKT;
                for (int i = tid; i < KC * BM; i += NT) {
                    int r, c;
                    bnn_pt_gather_item(i, BM, r, c);
                    const bool ok = m0 + r < M && (kt * KC + c) * 4 < PT_LDA;
                    bnn_cp16(dst + (c * BM + r) * 16, ok ? ga + (size_t)r * XB * PT_LDA * 4 + c * 16 : At, ok ? 16 : 0);
                }
            } else {
                for (unsigned i = 16 * tid; i < ABYTES; i += 16 * NT) bnn_cp16(dst + i, ga + i, 16);
            }
            for (unsigned i = 16 * tid; i < BBYTES; i += 16 * NT) bnn_cp16(dst + ABYTES + i, gb + i, 16);
        }
        bnn_cp_commit();
    };
    for (int s = 0; s < S - 1; ++s) produce(s);
#endif
    __syncthreads();

    const int wm = warp % WM, wn = warp / WM;
    unsigned it = 0;
    for (int tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
        const int mt = tile / ntn, nt = tile % ntn;
        int acc[MI][NI][4];
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
            for (int j = 0; j < NI; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0;
        int sprev = XB + WB - 2, cprev = 1;
        // SELF_POP: 2^p popc of rows g and g + 8 of each m16 tile, over this lane's 4 bytes of
        // every chunk (warps wn == 0; the pairs (p, 0) sweep each A plane once)
        int rpop[MI][2];
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) rpop[mi][0] = rpop[mi][1] = 0;
#pragma unroll 1
        for (int pi = 0; pi < NP; ++pi) {
            int p, q;
            const int f = bnn_pt_step(pi, XB, WB, NEG, sprev, cprev, p, q);
            if (f != 1) bnn_pt_scale(acc, f);
            for (int kt = 0; kt < NKT; ++kt, ++it) {
                const unsigned slot = it % S, sa = s0 + slot * STAGE, sb = sa + ABYTES;
#if __CUDA_ARCH__ >= 900 && !PT_APLAIN
                bnn_mbar_wait(full + 8 * slot, (it / S) & 1);
                __syncwarp(); // ldmatrix and mma.sync are .aligned: reconverge after the spin
#else
                bnn_cp_wait<S - 2>();
                __syncthreads(); // stage it landed for everyone; slot (it-1) % S is free
                produce(it + S - 1);
#endif
#pragma unroll
                for (int ks = 0; ks < KC / 2; ++ks) {
                    unsigned a[MI][4], b[NI][2];
#pragma unroll
                    for (int mi = 0; mi < MI; ++mi) // rows 0-7 / 8-15 (lane bit 3) x chunk lo / hi (lane bit 4)
                        bnn_ldsm4(sa + (2 * ks + (lane >> 4)) * (BM * 16) +
                                      (wm * WTM + mi * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * 16,
                                  a[mi][0], a[mi][1], a[mi][2], a[mi][3]);
#pragma unroll
                    for (int nj = 0; nj < NI / 2; ++nj) // chunk lo / hi (lane bit 3) x n8 tile 2nj / 2nj+1 (lane bit 4)
                        bnn_ldsm4(sb + (2 * ks + ((lane >> 3) & 1)) * (BN * 16) +
                                      (wn * WTN + nj * 16 + (lane >> 4) * 8 + (lane & 7)) * 16,
                                  b[2 * nj][0], b[2 * nj][1], b[2 * nj + 1][0], b[2 * nj + 1][1]);
#pragma unroll
                    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                        for (int ni = 0; ni < NI; ++ni) bnn_bmma(acc[mi][ni], a[mi], b[ni][0], b[ni][1]);
                    if (SELF_POP && wn == 0) // a[mi]: row g lo, row g + 8 lo, row g hi, row g + 8 hi
#pragma unroll
                        for (int mi = 0; mi < MI; ++mi) {
                            rpop[mi][0] += (__popc(a[mi][0]) + __popc(a[mi][2])) << p;
                            rpop[mi][1] += (__popc(a[mi][1]) + __popc(a[mi][3])) << p;
                        }
                }
#if __CUDA_ARCH__ >= 900 && !PT_APLAIN
                __syncwarp(); // every lane's ldmatrix of this stage is done before the slot is released
                if (lane == 0) bnn_mbar_arrive(empty + 8 * slot);
                if (lane == 0 && warp == (int)(it % NW)) { // refill once every warp released it; the warps take turns
                    bnn_mbar_wait(empty + 8 * slot, (it / S) & 1);
                    produce(it + S);
                }
#endif
            }
        }
        if (cprev != 1) bnn_pt_scale(acc, cprev);
        if (PT_NOSTORE) { // timing aid: keeps the main loop alive without the epilogue's stores
            int x = 0;
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NI; ++j) x ^= acc[i][j][0] ^ acc[i][j][1] ^ acc[i][j][2] ^ acc[i][j][3];
            if (x == 0x7fffffff) ((int *)Y)[0] = x;
            continue;
        }
        constexpr int L = PT_EPI == 2 ? PT_L : 1, YB = PT_EPI == 2 ? PT_YB : 1; // unused with int32 output
        int *const tpop = (int *)(bnn_dsmem + S * STAGE + 16 * S); // SELF_POP: the tile's apop
        if (SELF_POP) {
            if (wn == 0)
#pragma unroll
                for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        int v = rpop[mi][h]; // the 4 lanes of a row hold its 16 bytes a chunk
                        v += __shfl_xor_sync(0xffffffffu, v, 1);
                        v += __shfl_xor_sync(0xffffffffu, v, 2);
                        if ((lane & 3) == 0) tpop[wm * WTM + mi * 16 + (lane >> 2) + 8 * h] = v;
                    }
            __syncthreads(); // (the next tile's stages sync before tpop is written again)
        }
        bnn_pt_epilogue<MI, NI, PT_EPI, N, L, YB, LDY, (bool)PT_WBIPOLAR, false, PT_EPI == 2 && PT_LFOLD>(
            acc, mt * BM, nt * BN, wm * WTM, wn * WTN, M, SELF_POP ? tpop : apop, SELF_POP ? mt * BM : 0, T, dir, 0, Y);
        if (PT_EPI == 2) bnn_pt_zero_pad<N, BN, BM, YB, LDY>(Y, mt * BM, M, tid, NT, nt);
    }
#if __CUDA_ARCH__ < 900 || PT_APLAIN
    bnn_cp_wait<0>(); // no copy outlives the block (the tail's groups are empty)
#endif
}

#endif // PT_WGMMA

#undef PT_NAME
#undef PT_WGMMA
#undef PT_S8
#undef PT_LFOLD
#undef PT_YFMT
#undef PT_CONV
#undef PT_CELLS
#undef PT_IH
#undef PT_IW
#undef PT_IC
#undef PT_CB
#undef PT_KH
#undef PT_KW
#undef PT_SH
#undef PT_SW
#undef PT_PADT
#undef PT_PADL
#undef PT_DH
#undef PT_DW
#undef PT_OH
#undef PT_OW
#undef PT_PADC
#undef PT_LDYW
#undef PT_YPLANE
#undef BNN_PT_WGMMA_HERE
#undef PT_M
#undef PT_N
#undef PT_K
#undef PT_XB
#undef PT_WB
#undef PT_WSIGNED
#undef PT_WBIPOLAR
#undef PT_EPI
#undef PT_L
#undef PT_YB
#undef PT_BM
#undef PT_BN
#undef PT_WM
#undef PT_WN
#undef PT_KC
#undef PT_STAGES
#undef PT_NOSTORE
#undef PT_APLAIN
#undef PT_LDA
#undef BNN_PT_A_PARAM
