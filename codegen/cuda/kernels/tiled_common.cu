// tiled_common.cu: device code shared by the pre-tiled binary GEMM kernels (bgemm_tiled.cu,
// mma.sync; bgemm_wgmma.cu, wgmma on sm_90a): mbarrier and bulk-copy wrappers, the epilogue
// for operands that come pre-tiled, and the popcount prep kernel for the tiled layout.
// Emitted once per NVRTC program, after common.cu and before the specialized kernels.
// sm_90 or newer: cp.async.bulk and mbarrier transaction counts do not exist before Hopper.
//
// The pre-tiled layout (codegen/tile_layout.h writes it on the host; docs/kernels.md):
// a matrix of R rows x K bits, bit 1 = +1, LSB-first as everywhere, is cut into row tiles of
// TR rows (R padded to a multiple of TR with zero rows) and its K into 16-byte chunks (K
// padded with zero bits to a multiple of the stage, KPAD bits, NCH = KPAD/128 chunks).
// Byte offset of chunk c of row r:
//     ((r / TR) * NCH + c) * TR * 16 + (r % TR) * 16
// i.e. [row tile][chunk][row][16 B]: the KC chunks of one pipeline stage of one row tile are
// KC*TR*16 contiguous bytes, already in the shared-memory image the kernels read, so one
// cp.async.bulk moves a whole stage of an operand (one L2 request per 4 sectors instead of
// one per 16 bytes: HARDWARE.md measured 2.3 -> 11 POPS for exactly this change).
#ifndef BNN_TILED_COMMON_CU
#define BNN_TILED_COMMON_CU
#ifndef BNN_COMMON_CU
#include "common.cu"
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "the pre-tiled kernels need sm_90 or newer (cp.async.bulk, mbarrier expect_tx); use bgemm.cu before Hopper"
#endif

// ---------------------------------------------------------------- mbarrier and bulk copy

// A tensor map (cuTensorMapEncodeTiled's 128 opaque bytes), passed to a kernel by value as a
// __grid_constant__ parameter so that its address is the one the TMA unit reads.
struct __align__(64) BnnTensorMap {
    unsigned long long w[16];
};
// BNN_TILED_PTX_EMULATED: tests/codegen/tiled_emu.h supplies this file's PTX wrappers
// (mbarriers, bulk and tensor copies, 4-byte cp.async, named barriers) to run the kernels as
// host C++ (test_tiled_emu); NVRTC never defines it.
#ifndef BNN_TILED_PTX_EMULATED
__device__ __forceinline__ void bnn_mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Makes the initialized barriers visible to the async proxy (the bulk-copy engine).
__device__ __forceinline__ void bnn_mbar_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// One arrival that also announces `bytes` of bulk-copy data for the current phase.
__device__ __forceinline__ void bnn_mbar_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bnn_mbar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Orders this thread's generic-proxy shared-memory writes (cp.async, st.shared) before later
// async-proxy reads of them (wgmma's operands): after the copies landed, before the arrival
// that announces them.
__device__ __forceinline__ void bnn_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// Box (c0, c1, c2) of tensor map *tm into shared memory at dst, completing on bar (the
// box's bytes, out-of-range elements zero).
__device__ __forceinline__ void bnn_tma_load_3d(unsigned dst, const BnnTensorMap *tm, int c0, int c1, int c2,
                                                unsigned bar) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, "
                 "%4}], [%5];\n" ::"r"(dst),
                 "l"((unsigned long long)tm), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
                 : "memory");
}
// Spins until the phase with the given parity has completed.
__device__ __forceinline__ void bnn_mbar_wait(unsigned bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}
// Global -> shared bulk copy (the TMA engine without a tensor map), completing on `bar`.
// dst, src and bytes must be multiples of 16.
__device__ __forceinline__ void bnn_bulk_g2s(unsigned dst, const void *src, unsigned bytes, unsigned bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}
#endif

// A tile's epilogue parameters handed from one staging warp to the consumer warps a tile
// ahead: tile i in buffer i & 1 of two, each with a "full" mbarrier (32 arrivals, one a lane of
// the staging warp: an arrival releases the lane's stores) and an "empty" one (one arrival a
// consumer warp). bars: full[0], full[1], empty[0], empty[1], 8 bytes each.
__device__ __forceinline__ void bnn_handoff_init(unsigned bars, unsigned consumer_warps) {
    for (int b = 0; b < 2; ++b) {
        bnn_mbar_init(bars + 8 * b, 32);
        bnn_mbar_init(bars + 16 + 8 * b, consumer_warps);
    }
}
// Staging warp, every lane: before writing tile i's buffer, wait until the consumers gave
// back tile i - 2's.
__device__ __forceinline__ void bnn_handoff_wait_empty(unsigned bars, unsigned i) {
    if (i >= 2) bnn_mbar_wait(bars + 16 + 8 * (i & 1), ((i >> 1) - 1) & 1);
}
// Staging warp, every lane, after its stores to tile i's buffer.
__device__ __forceinline__ void bnn_handoff_fill(unsigned bars, unsigned i) { bnn_mbar_arrive(bars + 8 * (i & 1)); }
// Consumer warp: until tile i's buffer is full (converged after the spin, for the shuffles).
__device__ __forceinline__ void bnn_handoff_wait_full(unsigned bars, unsigned i) {
    bnn_mbar_wait(bars + 8 * (i & 1), (i >> 1) & 1);
    __syncwarp();
}
// Consumer warp, once every lane has read tile i's buffer: give it back.
__device__ __forceinline__ void bnn_handoff_release(unsigned bars, unsigned i, int lane) {
    __syncwarp();
    if (lane == 0) bnn_mbar_arrive(bars + 16 + 8 * (i & 1));
}

// ---------------------------------------------------------------- compact row tiles

// Compact row tiles (BT_COMPACT / BW_COMPACT 1: the compiler's tile-major formats k128 / k256,
// docs/blob-format.md "Tile-major bits"): the last row tile of an operand of R rows holds only
// its own rows, chunk-major with a chunk stride of (rows in the tile)*16 bytes, so R rows take
// exactly R*NCH*16 bytes (what the arena holds for a batch) and a batch of 1 needs no 127
// padding rows. A stage of such a tile is KC copies of rows*16 bytes; the shared-memory rows
// past them keep what an earlier stage left there, which reaches only accumulator rows (A) or
// columns (W) past M or N, never stored.
// Bytes stage copies bring from row tile t of an operand of `rows` rows (TR rows a tile).
__device__ __forceinline__ unsigned bnn_tiled_stage_bytes(int t, int rows, int TR, int KC, bool compact) {
    const int in = compact ? min(TR, rows - t * TR) : TR;
    return (unsigned)(KC * in * 16);
}
// Copies stage kt (KC chunks) of row tile t of X (NCH chunks a row) into dst, laid out
// [chunk][TR rows][16 B] as the main loops read it; completes on bar.
__device__ __forceinline__ void bnn_tiled_stage_g2s(unsigned dst, const void *X, int t, int kt, int rows, int TR,
                                                    int NCH, int KC, unsigned bar, bool compact) {
    const char *tile = (const char *)X + (size_t)t * NCH * TR * 16;
    const int in = compact ? min(TR, rows - t * TR) : TR;
    if (in == TR) {
        bnn_bulk_g2s(dst, tile + (size_t)kt * KC * TR * 16, (unsigned)(KC * TR * 16), bar);
        return;
    }
    for (int j = 0; j < KC; ++j)
        bnn_bulk_g2s(dst + (unsigned)(j * TR * 16), tile + ((size_t)kt * KC + j) * in * 16, (unsigned)(in * 16), bar);
}

// Word w of bit row `row` of Y (M rows of LDY words): row-major (YT 0), or with YT = 128 in
// the tile-major layout with a compact last tile (LDY/4 chunks a row): the A operand of the
// next pre-tiled layer, written directly by this layer's threshold epilogue.
template <int YT, int LDY> __device__ __forceinline__ long long bnn_ybits_at(int row, int w, int M) {
    static_assert(YT == 0 || LDY % 4 == 0, "a tile-major bit output has whole 16-byte chunks");
    if (YT == 0) return (long long)row * LDY + w;
    const int t = row / YT, in = min(YT, M - t * YT);
    return ((long long)t * YT * (LDY / 4) + (long long)(w / 4) * in + row % YT) * 4 + w % 4;
}

// ---------------------------------------------------------------- epilogue

#ifndef BNN_TILED_PTX_EMULATED
// 4-byte global->shared copy, asynchronous (cp.async, sm_80+); src_bytes = 0 writes zero.
__device__ __forceinline__ void bnn_cp4(unsigned dst, const void *src, unsigned src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
// Barrier among the first `count` threads (the consumers; a producer warpgroup is not in it).
__device__ __forceinline__ void bnn_bar_sync(int id, int count) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
#endif

// The per-tile epilogue parameters, staged in shared memory: popc(w) of the BN columns, the
// two epilogue arrays (THRESHOLD: t, dir; AFFINE: scale, bias bits) and popc(a) of the BM rows,
// copied by cp.async at the start of a tile so that their latency hides behind the tile's main
// loop; then folded per column into u (bnn_tiled_params_fold) so that the epilogue reads one
// 8-byte word per pair of columns: with x = 4*popc(a AND w) + K - 2*popc(a),
//   THRESHOLD: bit = (x >= u) XOR the column's bit of flipw: for dir >= 0 u = t + 2*popc(w)
//              (saturated to INT_MAX), flip 0; for dir < 0 bit = x <= t + 2*popc(w) =
//              !(x >= that + 1), so u = that + 1 (INT_MAX, which no x reaches, where that is
//              INT_MAX: -K <= x <= 3K < INT_MAX), flip 1; past N u = INT_MAX, flip 0. One
//              comparison a bit, and the flips a whole word at a time;
//   I32, AFFINE: dot = x + u with u = -2*popc(w).
template <int BM, int BN> struct BnnTiledParams {
    // Both kernels keep two of these back to back: an even number of words each, so that the
    // second's u pairs are 8-byte aligned too.
    static_assert((BN / 32 + BM) % 2 == 0, "an odd number of words: the second buffer's u misaligned");
    int u[BN];              // first: 8-byte aligned pairs of columns
    unsigned flipw[BN / 32]; // THRESHOLD: bit c % 32 of word c / 32, column c's dir < 0
    int wpop[BN], p0[BN], p1[BN], apop[BM];
};
template <int BM, int BN, int EPI, int N>
__device__ __forceinline__ void bnn_tiled_params_load(BnnTiledParams<BM, BN> *sp, int m0, int n0, int M, int tid,
                                                      int nthreads, const int *__restrict__ apop,
                                                      const int *__restrict__ wpop, const void *__restrict__ ep0,
                                                      const void *__restrict__ ep1) {
    const unsigned base = bnn_smem(sp->wpop);
    for (int i = tid; i < BN; i += nthreads) {
        const int c = n0 + i;
        const bool ok = c < N;
        bnn_cp4(base + 4 * i, wpop + (ok ? c : 0), ok ? 4u : 0u);
        if (EPI != BNN_EPI_I32) {
            bnn_cp4(base + 4 * (BN + i), (const int *)ep0 + (ok ? c : 0), ok ? 4u : 0u);
            bnn_cp4(base + 4 * (2 * BN + i), (const int *)ep1 + (ok ? c : 0), ok ? 4u : 0u);
        }
    }
    for (int i = tid; i < BM; i += nthreads) {
        const int r = m0 + i;
        bnn_cp4(base + 4 * (3 * BN + i), apop + (r < M ? r : 0), r < M ? 4u : 0u);
    }
    bnn_cp_commit();
}
// Column c's folded parameter u and flip (the contract above) from its popc(w) and epilogue words.
template <int EPI, int N>
__device__ __forceinline__ int bnn_tiled_fold_column(int c, int wpop, int p0, int p1, bool &flip) {
    const int w2 = 2 * wpop;
    flip = EPI == BNN_EPI_THRESHOLD && p1 < 0 && c < N;
    if (EPI != BNN_EPI_THRESHOLD)
        return -w2;
    const long long t = (long long)p0 + w2;
    const int cs = t > 2147483647LL ? 2147483647 : (int)t;
    return c >= N ? 2147483647 : !flip ? cs : bnn_le_as_ge(cs);
}

// After this thread's copies completed and a barrier: fold the columns this thread owns.
// Every thread of the nthreads (a multiple of 32) calls it: a warp's lanes hold 32 neighbouring
// columns at each step, whose flips one ballot gathers.
template <int BM, int BN, int EPI, int N>
__device__ __forceinline__ void bnn_tiled_params_fold(BnnTiledParams<BM, BN> *sp, int n0, int tid, int nthreads) {
    static_assert(BN % 32 == 0, "whole flip words");
    for (int i = tid; i < BN; i += nthreads) {
        bool flip;
        sp->u[i] = bnn_tiled_fold_column<EPI, N>(n0 + i, sp->wpop[i], sp->p0[i], sp->p1[i], flip);
        if (EPI == BNN_EPI_THRESHOLD) {
            const unsigned fw = __ballot_sync(0xffffffffu, flip);
            if (i % 32 == 0) sp->flipw[i / 32] = fw;
        }
    }
}

// The same parameters written by one warp straight from global memory, folded (u, flipw,
// apop, and AFFINE's p0 / p1; wpop is not kept): the wgmma kernel's staging warp, a tile ahead
// of the consumers. Columns past N and rows past M read as zeros, as the copies above do.
template <int BM, int BN, int EPI, int N>
__device__ __forceinline__ void bnn_tiled_params_stage(BnnTiledParams<BM, BN> *sp, int m0, int n0, int M, int lane,
                                                       const int *__restrict__ apop, const int *__restrict__ wpop,
                                                       const void *__restrict__ ep0, const void *__restrict__ ep1) {
    static_assert(BN % 32 == 0, "whole flip words");
    for (int i = lane; i < BN; i += 32) {
        const int c = n0 + i;
        const bool ok = c < N;
        const int p0 = EPI != BNN_EPI_I32 && ok ? ((const int *)ep0)[c] : 0;
        const int p1 = EPI != BNN_EPI_I32 && ok ? ((const int *)ep1)[c] : 0;
        bool flip;
        sp->u[i] = bnn_tiled_fold_column<EPI, N>(c, ok ? wpop[c] : 0, p0, p1, flip);
        if (EPI == BNN_EPI_AFFINE)
            sp->p0[i] = p0, sp->p1[i] = p1;
        if (EPI == BNN_EPI_THRESHOLD) {
            const unsigned fw = __ballot_sync(0xffffffffu, flip);
            if (lane == 0) sp->flipw[i / 32] = fw;
        }
    }
    for (int i = lane; i < BM; i += 32) sp->apop[i] = m0 + i < M ? apop[m0 + i] : 0;
}

// Writes one warp's outputs. acc[mi][ni] is the m16n8 tile at rows rw0 + 16mi and columns
// cw0 + 8ni (both tile-local; the tile starts at row m0, column n0) in the PTX m16n8 layout
// (g = lane>>2, t = lane&3): d0 = D[g][2t], d1 = D[g][2t+1], d2 = D[g+8][2t], d3 = D[g+8][2t+1].
// The wgmma m64nN accumulator of a warp is the same thing with MI = 1, NI = N/8 (HARDWARE.md),
// so both kernels share this. Parameters from sp, folded (above).
// Epilogue contracts as bgemm.cu: I32 / AFFINE write columns < N only; THRESHOLD writes whole
// words (bits of columns >= N are 0) of columns below the tile end, up to LDY.
// YT: the bit output's layout (bnn_ybits_at).
template <int MI, int NI, int EPI, int N, int K, int LDY, int BM, int BN, int YT = 0>
__device__ __forceinline__ void bnn_tiled_epilogue(const int (&acc)[MI][NI][4], int m0, int n0, int rw0, int cw0,
                                                   int M, const BnnTiledParams<BM, BN> *sp, void *__restrict__ Y) {
    static_assert(NI % 4 == 0, "warp tile width must be a multiple of 32 columns");
    static_assert(EPI == BNN_EPI_THRESHOLD ? LDY * 32 >= N : LDY >= N, "output row stride LDY too small for N");
    static_assert(EPI == BNN_EPI_I32 || EPI == BNN_EPI_THRESHOLD || EPI == BNN_EPI_AFFINE, "unknown epilogue");
    static_assert(K < (1 << 29), "x <= 3K below INT_MAX (the folded levels' never)");
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    int ra[MI][2]; // K - 2*popc(a) of the rows this thread holds
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h) ra[mi][h] = K - 2 * sp->apop[rw0 + mi * 16 + g + 8 * h];
    // EPI_THRESHOLD: slot (mi * 2 + h) * NQ + q holds this lane's 8 bits of word q of row
    // rw0 + 16mi + g + 8h (columns 8u + 2t + e at bit 8u + 2t + e), stored by bnn_quad_or_scatter
    constexpr int NQ = NI / 4, NS = EPI == BNN_EPI_THRESHOLD ? MI * 2 * NQ : 4;
    unsigned w[NS];
#pragma unroll
    for (int j = 0; j < NS; ++j) w[j] = 0;
#pragma unroll
    for (int q = 0; q < NQ; ++q) { // n8 tiles 4q..4q+3 = output word (n0 + cw0)/32 + q
        int2 cu[4]; // u of columns 2t, 2t+1 of each n8 tile
#pragma unroll
        for (int u = 0; u < 4; ++u) cu[u] = *(const int2 *)&sp->u[cw0 + (4 * q + u) * 8 + 2 * t];
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = m0 + rw0 + mi * 16 + g + 8 * h;
                if (EPI == BNN_EPI_THRESHOLD) {
                    unsigned &bits = w[EPI == BNN_EPI_THRESHOLD ? (mi * 2 + h) * NQ + q : 0];
#pragma unroll
                    for (int u = 0; u < 4; ++u) {
                        const int x0 = 4 * acc[mi][4 * q + u][2 * h] + ra[mi][h];
                        const int x1 = 4 * acc[mi][4 * q + u][2 * h + 1] + ra[mi][h];
                        bnn_or_if(bits, 1u << (u * 8 + 2 * t), x0 >= cu[u].x);
                        bnn_or_if(bits, 2u << (u * 8 + 2 * t), x1 >= cu[u].y);
                    }
                } else if (row < M) {
#pragma unroll
                    for (int u = 0; u < 4; ++u) {
                        const int cl = cw0 + (4 * q + u) * 8 + 2 * t, c = n0 + cl;
                        const int d0 = 4 * acc[mi][4 * q + u][2 * h] + ra[mi][h] + cu[u].x;
                        const int d1 = 4 * acc[mi][4 * q + u][2 * h + 1] + ra[mi][h] + cu[u].y;
                        if (EPI == BNN_EPI_I32) {
                            int *y = (int *)Y + (long long)row * LDY + c;
                            if (LDY % 2 == 0 && c + 1 < N) {
                                *(int2 *)y = make_int2(d0, d1);
                            } else {
                                if (c < N) y[0] = d0;
                                if (c + 1 < N) y[1] = d1;
                            }
                        } else { // product, then sum, each rounded: a C reference matches bit for bit
                            float *y = (float *)Y + (long long)row * LDY + c;
                            const float v0 = __fadd_rn(__fmul_rn((float)d0, __int_as_float(sp->p0[cl])),
                                                       __int_as_float(sp->p1[cl]));
                            const float v1 = __fadd_rn(__fmul_rn((float)d1, __int_as_float(sp->p0[cl + 1])),
                                                       __int_as_float(sp->p1[cl + 1]));
                            if (LDY % 2 == 0 && c + 1 < N) {
                                *(float2 *)y = make_float2(v0, v1);
                            } else {
                                if (c < N) y[0] = v0;
                                if (c + 1 < N) y[1] = v1;
                            }
                        }
                    }
                }
            }
    }
    if (EPI == BNN_EPI_THRESHOLD) {
        unsigned r[NS / 4]; // word 4i + t, whole
        bnn_quad_or_scatter(w, r, t);
#pragma unroll
        for (int i = 0; i < NS / 4; ++i) {
            const int j = 4 * i + t, q = j % NQ, h = j / NQ % 2, mi = j / (NQ * 2);
            const int row = m0 + rw0 + mi * 16 + g + 8 * h, wcol = (n0 + cw0) / 32 + q;
            if (row < M && wcol < LDY) // the flips of the word's columns, then the word
                ((unsigned *)Y)[bnn_ybits_at<YT, LDY>(row, wcol, M)] = r[i] ^ sp->flipw[cw0 / 32 + q];
        }
    }
}

// Bit output only: zero the words of rows [m0, m0+BM) past the last column tile (W0 = words
// the column tiles cover) up to LDY, from the block that did the last column tile, so the
// padding of a bit row is exact zeros as the next layer's A expects. nthreads threads.
template <int EPI, int N, int BN, int LDY, int YT = 0>
__device__ __forceinline__ void bnn_tiled_zero_pad(void *__restrict__ Y, int m0, int BM, int M, int tid, int nthreads,
                                                   int nt) {
    constexpr int NBX = (N + BN - 1) / BN, W0 = NBX * BN / 32;
    if (EPI == BNN_EPI_THRESHOLD && LDY > W0 && nt == NBX - 1) {
        constexpr int NW = LDY > W0 ? LDY - W0 : 1;
        for (int i = tid; i < BM * NW; i += nthreads) {
            const int row = m0 + i / NW;
            if (row < M) ((unsigned *)Y)[bnn_ybits_at<YT, LDY>(row, W0 + i % NW, M)] = 0u;
        }
    }
}

// ---------------------------------------------------------------- prep kernel

// popc of each row of a pre-tiled matrix (tile rows tr, nch 16-byte chunks per row):
// out[r] for r < rows. Block (32, 8): threadIdx.x picks one of 32 neighbouring rows (16-byte
// loads of one chunk of 32 rows are 512 contiguous bytes), threadIdx.y strides the chunks.
// compact: the last row tile is compact (above: chunk stride = its own rows).
__device__ __forceinline__ void bnn_tiled_row_popc_body(const uint4 *__restrict__ X, int rows, int tr, int nch,
                                                        int *__restrict__ out, bool compact) {
    __shared__ int part[8][33];
    const int r = blockIdx.x * 32 + threadIdx.x;
    int s = 0;
    if (r < rows) {
        const int t = r / tr, in = compact ? min(tr, rows - t * tr) : tr;
        const uint4 *base = X + (long long)t * nch * tr + r % tr;
        for (int c = threadIdx.y; c < nch; c += 8) {
            const uint4 v = base[(long long)c * in];
            s += __popc(v.x) + __popc(v.y) + __popc(v.z) + __popc(v.w);
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
// For the kernels' apop (activations) and wpop (weights, usually folded on the host instead).
extern "C" __global__ void __launch_bounds__(256) bnn_tiled_row_popc(const uint4 *__restrict__ X, int rows, int tr,
                                                                     int nch, int *__restrict__ out) {
    BNN_PDL_ENTER();
    bnn_tiled_row_popc_body(X, rows, tr, nch, out, false);
}
// The same over compact row tiles: the apop of a compiled pre-tiled layer, launched by the
// plan before it (a `kernel` step).
extern "C" __global__ void __launch_bounds__(256) bnn_tiled_row_popc_c(const uint4 *__restrict__ X, int rows, int tr,
                                                                       int nch, int *__restrict__ out) {
    BNN_PDL_ENTER();
    bnn_tiled_row_popc_body(X, rows, tr, nch, out, true);
}

#endif // BNN_TILED_COMMON_CU
