// bgemm_wgmma.cu: binary GEMM Y[M][N] = epilogue(dot(A[m], W[n])) through
// wgmma.mma_async m64n256k256 .s32.b1.b1.and.popc on sm_90a only (BGMMA: 15.7 POPS peak,
// 1.5x the best mma.sync), with both operands PRE-TILED in global memory (tiled_common.cu,
// docs/kernels.md) and copied into shared memory by cp.async.bulk, one copy per operand and
// stage, completing on mbarriers. Same algebra, epilogues and contract style as bgemm.cu:
//     dot = 4*popc(a AND w) - 2*popc(a) - 2*popc(w) + K      (AND only, never XOR)
// popc(a) per row (apop[M]) and popc(w) per column (wpop[N]) come in as arrays.
//
// Block tile 128 x 256: two consumer warpgroups (rows 0-63 and 64-127), each issuing one
// m64n256k256 per 256-bit K step with A and B read from shared memory through matrix
// descriptors (SS, K-major, no swizzle), plus one producer warpgroup whose thread 0 keeps an
// S-stage ring full (a whole warpgroup so that setmaxnreg can move its registers to the
// consumers: 232 each instead of the 168 that 384 threads get by default). A stage is KC
// 16-byte chunks; the tiled layout makes a stage of an operand the chunk-major shared image
// [chunk][row][16 B], so the descriptor's LBO (distance between the
// two 16-byte K halves of a k256 step) is rows*16 and SBO (distance between 8-row groups) is
// 128 (HARDWARE.md, verified layouts). Persistent blocks walk the tiles; the consumers release
// a stage (one "empty" arrival per warp) once the wgmma that read it retired (wait_group 1,
// i.e. one stage late), so one wgmma batch is always in flight while the next stage is awaited.
// Each inclusion defines one kernel named BW_NAME and #undefs its BW_* macros at the end.
#ifndef BNN_TILED_COMMON_CU
#include "tiled_common.cu"
#endif

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "bgemm_wgmma.cu needs sm_90a (wgmma): compile with --gpu-architecture=sm_90a, or use bgemm_tiled.cu"
#endif

#ifndef BNN_WG_DESC_ONCE
#define BNN_WG_DESC_ONCE
// Matrix descriptor, no swizzle, base offset 0: bits 0-13 address >> 4, 16-29 LBO >> 4,
// 32-45 SBO >> 4. (Outside the PTX wrappers below, which tests/codegen/tiled_emu.h replaces.)
__device__ __forceinline__ unsigned long long bnn_wg_desc(unsigned saddr, unsigned lbo, unsigned sbo) {
    return (unsigned long long)((saddr & 0x3FFFF) >> 4) | (unsigned long long)((lbo & 0x3FFFF) >> 4) << 16 |
           (unsigned long long)((sbo & 0x3FFFF) >> 4) << 32;
}
#endif

#ifndef BNN_BGEMM_WGMMA_ONCE
#define BNN_BGEMM_WGMMA_ONCE
__device__ __forceinline__ void bnn_wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void bnn_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void bnn_wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
#define BNN_WG_R4(j) "+r"(d[0][j][0]), "+r"(d[0][j][1]), "+r"(d[0][j][2]), "+r"(d[0][j][3])
#define BNN_WG_R32(j)                                                                                              \
    BNN_WG_R4(j), BNN_WG_R4(j + 1), BNN_WG_R4(j + 2), BNN_WG_R4(j + 3), BNN_WG_R4(j + 4), BNN_WG_R4(j + 5),         \
        BNN_WG_R4(j + 6), BNN_WG_R4(j + 7)
// One m64n256 wgmma of `op` (the instruction's name past .m64n256) from two descriptors into d.
#define BNN_WG_N256(op, d, da, db)                                                                                 \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                                      \
                 "wgmma.mma_async.sync.aligned.m64n256" op " {"                                                    \
                 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"                                          \
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"                                \
                 "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"                                \
                 "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,"                                \
                 "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,"                                \
                 "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,"                                \
                 "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,"                    \
                 "%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127"                 \
                 "}, %128, %129, p;\n}\n"                                                                          \
                 : BNN_WG_R32(0), BNN_WG_R32(8), BNN_WG_R32(16), BNN_WG_R32(24)                                     \
                 : "l"(da), "l"(db)                                                                                 \
                 : "memory")
// D(64x256, s32) += popc(A(64 x 256 bits) AND B(256 bits x 256)). d[0][j][0..3] is the m16n8
// fragment of n8 tile j for this warp's 16 rows (accumulator layout in HARDWARE.md).
__device__ __forceinline__ void bnn_wgmma_n256(int (&d)[1][32][4], unsigned long long da, unsigned long long db) {
    BNN_WG_N256("k256.s32.b1.b1.and.popc", d, da, db);
}
// D(64x256, s32) += A(64 x 32 u8) * B(32 x 256 s8): the same 32 bytes of K a row as a k256 b1
// step, so the same descriptors and shared-memory images serve both (bgemm_planes_tiled.cu
// PT_S8: unsigned activation codes, signed weight codes).
__device__ __forceinline__ void bnn_wgmma_s8_n256(int (&d)[1][32][4], unsigned long long da, unsigned long long db) {
    BNN_WG_N256("k32.s32.u8.s8", d, da, db);
}
#undef BNN_WG_N256
#undef BNN_WG_R32
#undef BNN_WG_R4
// Register budget per thread of the executing warpgroup (sm_90a); the kernel needs a cap at
// entry (__launch_bounds__(threads, 1)) and each role in one branch.
template <int R> __device__ __forceinline__ void bnn_setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R));
}
template <int R> __device__ __forceinline__ void bnn_setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R));
}
// Thread-block clusters (sm_90): rank in the cluster, a cluster-wide barrier, the address of
// a shared variable in another block of the cluster, a remote mbarrier arrival, and a bulk
// copy multicast into the same offset of every block in ctamask (completing on each block's
// mbarrier at the same offset).
__device__ __forceinline__ unsigned bnn_cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
__device__ __forceinline__ void bnn_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
__device__ __forceinline__ unsigned bnn_mapa(unsigned saddr, unsigned rank) {
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(saddr), "r"(rank));
    return r;
}
__device__ __forceinline__ void bnn_mbar_arrive_cluster(unsigned cluster_addr) {
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_addr) : "memory");
}
__device__ __forceinline__ void bnn_bulk_g2s_multicast(unsigned dst, const void *src, unsigned bytes, unsigned bar,
                                                       unsigned short ctamask) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1], %2, [%3], %4;\n" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar), "h"(ctamask)
                 : "memory");
}
// Keeps the compiler from moving accumulator reads or writes across wgmma.wait_group.
__device__ __forceinline__ void bnn_wg_fence_acc(int (&d)[1][32][4]) {
#pragma unroll
    for (int j = 0; j < 32; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(d[0][j][i])::"memory");
}
#endif

// BNN_WGMMA_HELPERS_ONLY: just the wrappers above, no kernel (bgemm_planes_tiled.cu's wgmma variant).
#ifndef BNN_WGMMA_HELPERS_ONLY
#if !defined(BW_N) || !defined(BW_K)
#error "bgemm_wgmma.cu: define BW_N (output channels) and BW_K (true K in bits)"
#endif
#ifndef BW_NAME
#define BW_NAME bgemm_wgmma
#endif
#ifndef BW_EPI
#define BW_EPI BNN_EPI_I32
#endif
#ifndef BW_LDY
#if BW_EPI == BNN_EPI_THRESHOLD
#define BW_LDY ((BW_N + 31) / 32)
#else
#define BW_LDY BW_N
#endif
#endif
#ifndef BW_KC
#define BW_KC 8
#endif
#ifndef BW_STAGES
#define BW_STAGES 4
#endif
#ifndef BW_NOSTORE
#define BW_NOSTORE 0
#endif
#ifndef BW_COMPACT // 1: both operands with compact last row tiles (tiled_common.cu); BW_CLUSTER 1 only
#define BW_COMPACT 0
#endif
#ifndef BW_YTILE // 128: a threshold epilogue writes its bits tile-major (bnn_ybits_at)
#define BW_YTILE 0
#endif

#ifndef BW_CLUSTER
#define BW_CLUSTER 1
#endif
#if BW_CLUSTER == 2
#define BW_CLUSTER_ATTR __cluster_dims__(2, 1, 1)
#elif BW_CLUSTER == 1
#define BW_CLUSTER_ATTR
#else
#error "bgemm_wgmma.cu: BW_CLUSTER is 1 or 2"
#endif

// A: ceil(M/128) row tiles of 128 rows, W: ceil(N/256) row tiles of 256 rows, both with
// KPAD = K rounded up to KC*128 bits. Block: 384 threads (2 consumer + 1 producer warpgroups);
// dynamic shared memory bnn_bgemm_tiled_smem(128, 256, KC, STAGES) (tile_layout.h), checked
// on entry. Grid: any number of blocks (best: min(tiles, SMs)); with BW_CLUSTER 2 a multiple
// of 2 (best: 2*min(ceil(M tiles/2)*N tiles, SMs/2)): the kernel carries __cluster_dims__,
// so a plain launch makes the clusters.
// BW_CLUSTER 2: the two blocks of a cluster take M tiles 2i and 2i+1 of the same column tile
// and share its W stages: each loads its own A and one half of the W stage (by K chunks,
// contiguous in the tiled layout) and multicasts that half into both blocks' shared memory,
// so L2 serves 32 KiB instead of 48 KiB per block and stage. A stage slot is then refilled
// only when the consumers of both blocks released it (the "empty" barriers count both).
extern "C" __global__ void __launch_bounds__(384, 1) BW_CLUSTER_ATTR
    BW_NAME(const void *__restrict__ At, const void *__restrict__ Wt, const int *__restrict__ apop,
            const int *__restrict__ wpop, const void *__restrict__ ep0, const void *__restrict__ ep1,
            void *__restrict__ Y, int m_rt) {
    BNN_PDL_ENTER();
    constexpr int BM = 128, BN = 256, KC = BW_KC, S = BW_STAGES, NW = 8, T = NW * 32, CL = BW_CLUSTER;
    constexpr int N = BW_N, K = BW_K, BK = KC * 128, NKT = (K + BK - 1) / BK, NCH = NKT * KC;
    constexpr unsigned ABYTES = KC * BM * 16, BBYTES = KC * BN * 16, STAGE = ABYTES + BBYTES;
    // Two tiles' epilogue parameters, staged a tile ahead by warp NW + 1 on their "full" and
    // "empty" mbarriers (not with BW_NOSTORE, whose consumers never hand a buffer back).
    constexpr bool STAGE_P = !BW_NOSTORE;
    constexpr unsigned PBYTES = (unsigned)sizeof(BnnTiledParams<BM, BN>);
    constexpr unsigned SMEM = S * STAGE + 16 * S + 2 * PBYTES + 32;
    static_assert(N >= 1 && K >= 1, "empty GEMM");
    static_assert(KC % 2 == 0 && KC >= 2 && KC <= 16, "KC: an even number of 16-byte chunks (k256 steps), <= 16");
    static_assert(S >= 2, "at least 2 stages");
    static_assert(SMEM <= 232448, "stages do not fit in 227 KiB of shared memory");
    static_assert(!BW_COMPACT || CL == 1, "compact row tiles with BW_CLUSTER 1 only");
    static_assert(BW_YTILE == 0 || (BW_YTILE == BM && BW_EPI == BNN_EPI_THRESHOLD), "tile-major bits: 128-row tiles");
#ifdef BW_M
    const int M = BW_M;
#else
    const int M = m_rt;
#endif
    extern __shared__ __align__(128) unsigned char bnn_dsmem[];
    if (bnn_dyn_smem_size() < SMEM) __trap(); // launched with too little shared memory
    const unsigned s0 = bnn_smem(bnn_dsmem), full = s0 + S * STAGE, empty = full + 8 * S;
    // STAGE_P: parameter buffer b at sp[b], their hand-off mbarriers at pbars (bnn_handoff_init)
    BnnTiledParams<BM, BN> *const sp = (BnnTiledParams<BM, BN> *)(bnn_dsmem + S * STAGE + 16 * S);
    const unsigned pbars = s0 + S * STAGE + 16 * S + 2 * PBYTES;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const unsigned rank = CL > 1 ? bnn_cluster_rank() : 0;
    if (tid == 0) {
        for (int s = 0; s < S; ++s) {
            bnn_mbar_init(full + 8 * s, 1);        // the own producer's expect_tx arrival (+ all bytes)
            bnn_mbar_init(empty + 8 * s, NW * CL); // one arrival per consumer warp of the cluster
        }
        if (STAGE_P)
            bnn_handoff_init(pbars, NW);
        bnn_mbar_init_fence();
    }
    if (CL > 1)
        bnn_cluster_sync(); // the peer's barriers exist before any multicast or remote arrival
    else
        __syncthreads();
    // Work units: (pair of M tiles, column tile) with clusters, else (M tile, column tile).
    const int ntm = (M + BM - 1) / BM, ntn = (N + BN - 1) / BN, nunits = (ntm + CL - 1) / CL * ntn;
    const int cid = blockIdx.x / CL, ncl = gridDim.x / CL;

    if (warp >= NW) { // producer warpgroup: one thread issues every copy, and it gives its registers away
        bnn_setmaxnreg_dec<40>();
        if (warp == NW && lane == 0) {
            unsigned it = 0;
            for (int u = cid; u < nunits; u += ncl) {
                // A cluster partner past the last M tile loads a real tile (and stores nothing).
                const int mt = min((u / ntn) * CL + (int)rank, ntm - 1), nt = u % ntn;
                const char *ga = (const char *)At + (size_t)mt * NCH * BM * 16;
                const char *gb = (const char *)Wt + (size_t)nt * NCH * BN * 16;
                for (int kt = 0; kt < NKT; ++kt, ++it) {
                    const unsigned slot = it % S, bar = full + 8 * slot, dst = s0 + slot * STAGE;
                    if (it >= S) bnn_mbar_wait(empty + 8 * slot, (it / S - 1) & 1);
                    if (BW_COMPACT) {
                        bnn_mbar_expect_tx(bar, bnn_tiled_stage_bytes(mt, M, BM, KC, true) +
                                                    bnn_tiled_stage_bytes(nt, N, BN, KC, true));
                        bnn_tiled_stage_g2s(dst, At, mt, kt, M, BM, NCH, KC, bar, true);
                        bnn_tiled_stage_g2s(dst + ABYTES, Wt, nt, kt, N, BN, NCH, KC, bar, true);
                        continue;
                    }
                    bnn_mbar_expect_tx(bar, STAGE);
                    bnn_bulk_g2s(dst, ga + (size_t)kt * ABYTES, ABYTES, bar);
                    if (CL == 1) {
                        bnn_bulk_g2s(dst + ABYTES, gb + (size_t)kt * BBYTES, BBYTES, bar);
                    } else {
                        const unsigned half = BBYTES / 2 * rank;
                        bnn_bulk_g2s_multicast(dst + ABYTES + half, gb + (size_t)kt * BBYTES + half, BBYTES / 2, bar,
                                               (unsigned short)3);
                    }
                }
            }
        } else if (STAGE_P && warp == NW + 1) {
            // The staging warp: unit i's parameters, folded, into buffer i % 2 while the consumers
            // run unit i - 1, so that no epilogue waits for loads or for the other warpgroup.
            unsigned i = 0;
            for (int u = cid; u < nunits; u += ncl, ++i) {
                bnn_handoff_wait_empty(pbars, i);
                const int mt = (u / ntn) * CL + (int)rank, nt = u % ntn;
                bnn_tiled_params_stage<BM, BN, BW_EPI, N>(sp + (i & 1), mt * BM, nt * BN, M, lane, apop, wpop, ep0,
                                                          ep1);
                bnn_handoff_fill(pbars, i);
            }
        }
    } else {
        bnn_setmaxnreg_inc<232>(); // 128 accumulators + the epilogue without spills
        const int wg = warp >> 2;
        // Descriptors without their address field; LBO = rows*16 (the next 16-byte K chunk),
        // SBO = 128 (the next 8 rows of the same chunk).
        const unsigned long long dA0 = bnn_wg_desc(0, BM * 16, 128), dB0 = bnn_wg_desc(0, BN * 16, 128);
        unsigned it = 0;
        // Releases slot `slot` to the producers of the cluster (after its wgmmas retired).
        const unsigned empty0 = CL > 1 ? bnn_mapa(empty, 0) : empty, empty1 = CL > 1 ? bnn_mapa(empty, 1) : empty;
        auto release = [&](unsigned slot) {
            __syncwarp();
            if (lane == 0) {
                if (CL == 1) {
                    bnn_mbar_arrive(empty + 8 * slot);
                } else {
                    bnn_mbar_arrive_cluster(empty0 + 8 * slot);
                    bnn_mbar_arrive_cluster(empty1 + 8 * slot);
                }
            }
        };
        unsigned i = 0; // the unit's parameter buffer (i & 1) and phase
        for (int u = cid; u < nunits; u += ncl, ++i) {
            const int mt = (u / ntn) * CL + (int)rank, nt = u % ntn;
            int acc[1][32][4];
#pragma unroll
            for (int j = 0; j < 32; ++j) acc[0][j][0] = acc[0][j][1] = acc[0][j][2] = acc[0][j][3] = 0;
            unsigned prev = 0;
            for (int kt = 0; kt < NKT; ++kt, ++it) {
                const unsigned slot = it % S, sa = s0 + slot * STAGE + wg * 64 * 16, sb = s0 + slot * STAGE + ABYTES;
                bnn_mbar_wait(full + 8 * slot, (it / S) & 1);
                __syncwarp(); // wgmma is .sync.aligned: the warp must be converged after the spin
                bnn_wg_fence();
#pragma unroll
                for (int ks = 0; ks < KC / 2; ++ks)
                    bnn_wgmma_n256(acc, dA0 | ((sa + 2 * ks * BM * 16) & 0x3FFFF) >> 4,
                                   dB0 | ((sb + 2 * ks * BN * 16) & 0x3FFFF) >> 4);
                bnn_wg_commit();
                bnn_wg_wait<1>(); // the previous stage's wgmmas retired: its slot can be refilled
                if (kt > 0) release(prev);
                prev = slot;
            }
            bnn_wg_wait<0>();
            bnn_wg_fence_acc(acc);
            release(prev);
            if (BW_NOSTORE) { // timing aid: keeps the main loop alive without the epilogue's stores
                int x = 0;
#pragma unroll
                for (int j = 0; j < 32; ++j) x ^= acc[0][j][0] ^ acc[0][j][1] ^ acc[0][j][2] ^ acc[0][j][3];
                if (x == 0x7fffffff) ((int *)Y)[0] = x;
                continue;
            }
            bnn_handoff_wait_full(pbars, i);
            if (mt < ntm) { // a cluster partner past the last M tile only helped with the loads
                // Warp w of warpgroup wg holds rows 64wg + 16w .. +15: the m16n8 layout, MI = 1, NI = 32.
                bnn_tiled_epilogue<1, 32, BW_EPI, N, K, BW_LDY, BM, BN, BW_YTILE>(acc, mt * BM, nt * BN, warp * 16, 0, M,
                                                                                 sp + (i & 1), Y);
                bnn_tiled_zero_pad<BW_EPI, N, BN, BW_LDY, BW_YTILE>(Y, mt * BM, BM, M, tid, T, nt);
            }
            bnn_handoff_release(pbars, i, lane);
        }
    }
    if (CL > 1) bnn_cluster_sync(); // no block exits while its peer may still signal its barriers
}

#undef BW_NAME
#undef BW_M
#undef BW_N
#undef BW_K
#undef BW_EPI
#undef BW_LDY
#undef BW_KC
#undef BW_STAGES
#undef BW_NOSTORE
#undef BW_COMPACT
#undef BW_YTILE
#undef BW_CLUSTER
#undef BW_CLUSTER_ATTR
#endif // BNN_WGMMA_HELPERS_ONLY
