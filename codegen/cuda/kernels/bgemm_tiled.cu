// bgemm_tiled.cu: binary GEMM Y[M][N] = epilogue(dot(A[m], W[n])) through mma.sync m16n8k256
// .b1 AND.POPC, with both operands PRE-TILED in global memory (layout in tiled_common.cu and
// docs/kernels.md) so that one cp.async.bulk per operand fills a pipeline stage. sm_90+.
//     dot = 4*popc(a AND w) - 2*popc(a) - 2*popc(w) + K      (AND only, never XOR)
// popc(a) per row (apop[M]) and popc(w) per column (wpop[N]) come in as arrays; the prep
// kernel bnn_tiled_row_popc computes either from a tiled operand.
//
// Structure: persistent blocks of WM*WN warps walk the output tiles; an S-stage ring of shared
// memory holds K stages (KC 16-byte chunks of BM A rows and BN W rows: two bulk copies on the
// stage's "full" mbarrier). Every warp waits on "full", runs ldmatrix + mma.sync over the
// stage and arrives on the stage's "empty" mbarrier; lane 0 of warp (stage mod NW) then waits
// on "empty" and refills the slot with the stage S ahead, which may be the next tile's, so the
// next tile's first stages load during this tile's last stages and epilogue. The refilling warp
// turns over so that each warp waits for the others at one stage in NW: with thread 0 doing
// every refill, warp 0 waited at every stage and the main loop ran at 7.7 POPS, 8.0-8.1 with the
// turns (8192^3, H200, docs/perf.md stop 37). No producer warp: a 9th warp
// would cap registers at 168 per thread (3 warps on one SM sub-partition), too few for the
// 128 accumulators of a 64x64 warp tile plus double-buffered fragments.
// Epilogue parameters: copied at a tile's start into one of two buffers (by the tile's parity)
// and folded in the middle of its main loop (stage KF), between two barriers there, where the
// fold's instructions issue beside the queued MMAs; the epilogue then starts right after the
// last MMA with no barrier. A buffer is written again two tiles later, after every thread has
// passed the next tile's fold barriers, so after every thread's epilogue that read it.
// The whole #define contract is in docs/kernels.md; each inclusion defines one kernel named
// BT_NAME and #undefs its BT_* macros at the end.
#ifndef BNN_TILED_COMMON_CU
#include "tiled_common.cu"
#endif

#if !defined(BT_N) || !defined(BT_K)
#error "bgemm_tiled.cu: define BT_N (output channels) and BT_K (true K in bits)"
#endif
#ifndef BT_NAME
#define BT_NAME bgemm_tiled
#endif
#ifndef BT_EPI
#define BT_EPI BNN_EPI_I32
#endif
#ifndef BT_LDY
#if BT_EPI == BNN_EPI_THRESHOLD
#define BT_LDY ((BT_N + 31) / 32)
#else
#define BT_LDY BT_N
#endif
#endif
#ifndef BT_BM
#define BT_BM 128
#endif
#ifndef BT_BN
#define BT_BN 256
#endif
#ifndef BT_WM
#define BT_WM 2
#endif
#ifndef BT_WN
#define BT_WN 4
#endif
#ifndef BT_KC
#define BT_KC 8
#endif
#ifndef BT_STAGES
#define BT_STAGES 4
#endif
#ifndef BT_NOSTORE
#define BT_NOSTORE 0
#endif
#ifndef BT_COMPACT // 1: both operands with compact last row tiles (tiled_common.cu)
#define BT_COMPACT 0
#endif
#ifndef BT_YTILE // 128: a threshold epilogue writes its bits tile-major (bnn_ybits_at)
#define BT_YTILE 0
#endif

// A: ceil(M/BM) row tiles of BM rows, W: ceil(N/BN) row tiles of BN rows, both with
// KPAD = K rounded up to KC*128 bits. Grid: any number of blocks (best: min(tiles, SMs));
// block: WM*WN*32 threads; dynamic shared memory bnn_bgemm_tiled_smem() (tile_layout.h),
// checked on entry. ep0/ep1 as bgemm.cu. m_rt is M unless BT_M fixes it.
extern "C" __global__ void __launch_bounds__(BT_WM *BT_WN * 32, 1)
    BT_NAME(const void *__restrict__ At, const void *__restrict__ Wt, const int *__restrict__ apop,
            const int *__restrict__ wpop, const void *__restrict__ ep0, const void *__restrict__ ep1,
            void *__restrict__ Y, int m_rt) {
    BNN_PDL_ENTER();
    constexpr int BM = BT_BM, BN = BT_BN, WM = BT_WM, WN = BT_WN, KC = BT_KC, S = BT_STAGES;
    constexpr int NW = WM * WN, T = NW * 32, WTM = BM / WM, WTN = BN / WN, MI = WTM / 16, NI = WTN / 8;
    constexpr int N = BT_N, K = BT_K, BK = KC * 128, NKT = (K + BK - 1) / BK, NCH = NKT * KC;
    constexpr unsigned ABYTES = KC * BM * 16, BBYTES = KC * BN * 16, STAGE = ABYTES + BBYTES;
    constexpr unsigned SMEM = S * STAGE + 16 * S + 2 * (unsigned)sizeof(BnnTiledParams<BM, BN>);
    constexpr int KF = NKT / 2; // the stage after whose MMAs the parameters are folded
    static_assert(N >= 1 && K >= 1, "empty GEMM");
    static_assert(KC % 2 == 0 && KC >= 2 && KC <= 16, "KC: an even number of 16-byte chunks (k256 steps), <= 16");
    static_assert(S >= 2, "at least 2 stages");
    static_assert(WTM % 16 == 0 && WTN % 32 == 0 && BM == WTM * WM && BN == WTN * WN, "warp tile");
    static_assert(SMEM <= 232448, "stages do not fit in 227 KiB of shared memory");
    static_assert(BT_YTILE == 0 || (BT_YTILE == BM && BT_EPI == BNN_EPI_THRESHOLD), "tile-major bits: BM-row tiles");
#ifdef BT_M
    const int M = BT_M;
#else
    const int M = m_rt;
#endif
    extern __shared__ __align__(128) unsigned char bnn_dsmem[];
    if (bnn_dyn_smem_size() < SMEM) __trap(); // launched with too little shared memory
    const unsigned s0 = bnn_smem(bnn_dsmem), full = s0 + S * STAGE, empty = full + 8 * S;
    BnnTiledParams<BM, BN> *sp = (BnnTiledParams<BM, BN> *)(bnn_dsmem + S * STAGE + 16 * S);
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int ntn = (N + BN - 1) / BN, ntiles = (M + BM - 1) / BM * ntn;
    const unsigned total = (int)blockIdx.x < ntiles ? (ntiles - blockIdx.x + gridDim.x - 1) / gridDim.x * NKT : 0;
    // Stage g of this block's sequence (its tiles blockIdx.x + i*gridDim.x, NKT stages each)
    // into slot g % S; one thread.
    auto produce = [&](unsigned g) {
        if (g >= total) return;
        const int tile = blockIdx.x + (int)(g / NKT) * gridDim.x, kt = g % NKT;
        const int mt = tile / ntn, nt = tile % ntn;
        const unsigned slot = g % S, bar = full + 8 * slot, dst = s0 + slot * STAGE;
        bnn_mbar_expect_tx(bar, bnn_tiled_stage_bytes(mt, M, BM, KC, BT_COMPACT) +
                                    bnn_tiled_stage_bytes(nt, N, BN, KC, BT_COMPACT));
        bnn_tiled_stage_g2s(dst, At, mt, kt, M, BM, NCH, KC, bar, BT_COMPACT);
        bnn_tiled_stage_g2s(dst + ABYTES, Wt, nt, kt, N, BN, NCH, KC, bar, BT_COMPACT);
    };
    if (tid == 0) {
        for (int s = 0; s < S; ++s) {
            bnn_mbar_init(full + 8 * s, 1);   // thread 0's expect_tx arrival (+ the bytes)
            bnn_mbar_init(empty + 8 * s, NW); // one arrival per warp
        }
        bnn_mbar_init_fence();
        for (int s = 0; s < S; ++s) produce(s);
    }
    __syncthreads();

    const int wm = warp % WM, wn = warp / WM;
    unsigned it = 0;
    for (int tile = blockIdx.x, parity = 0; tile < ntiles; tile += gridDim.x, parity ^= 1) {
        const int mt = tile / ntn, nt = tile % ntn;
        BnnTiledParams<BM, BN> *const tp = sp + parity;
        if (!BT_NOSTORE)
            bnn_tiled_params_load<BM, BN, BT_EPI, N>(tp, mt * BM, nt * BN, M, tid, T, apop, wpop, ep0, ep1);
        int acc[MI][NI][4];
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
            for (int j = 0; j < NI; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0;
        for (int kt = 0; kt < NKT; ++kt, ++it) {
            const unsigned slot = it % S, sa = s0 + slot * STAGE, sb = sa + ABYTES;
            bnn_mbar_wait(full + 8 * slot, (it / S) & 1);
            __syncwarp(); // ldmatrix and mma.sync are .aligned: reconverge after the spin (and a lane's refill)
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
            }
            __syncwarp(); // every lane's ldmatrix of this stage is done before the slot is released
            if (lane == 0) bnn_mbar_arrive(empty + 8 * slot);
            if (lane == 0 && warp == (int)(it % NW)) { // refill the slot once every warp released it
                bnn_mbar_wait(empty + 8 * slot, (it / S) & 1);
                produce(it + S);
            }
            if (!BT_NOSTORE && kt == KF) {
                bnn_cp_wait<0>();
                bnn_bar_sync(1, T); // everyone's parameter copies landed
                bnn_tiled_params_fold<BM, BN, BT_EPI, N>(tp, nt * BN, tid, T);
                bnn_bar_sync(1, T); // folded before any warp's epilogue
            }
        }
        if (BT_NOSTORE) { // timing aid: keeps the main loop alive without the epilogue's stores
            int x = 0;
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NI; ++j) x ^= acc[i][j][0] ^ acc[i][j][1] ^ acc[i][j][2] ^ acc[i][j][3];
            if (x == 0x7fffffff) ((int *)Y)[0] = x;
            continue;
        }
        bnn_tiled_epilogue<MI, NI, BT_EPI, N, K, BT_LDY, BM, BN, BT_YTILE>(acc, mt * BM, nt * BN, wm * WTM, wn * WTN, M, tp, Y);
        bnn_tiled_zero_pad<BT_EPI, N, BN, BT_LDY, BT_YTILE>(Y, mt * BM, BM, M, tid, T, nt);
    }
}
#undef BT_NAME
#undef BT_M
#undef BT_N
#undef BT_K
#undef BT_EPI
#undef BT_LDY
#undef BT_BM
#undef BT_BN
#undef BT_WM
#undef BT_WN
#undef BT_KC
#undef BT_STAGES
#undef BT_NOSTORE
#undef BT_COMPACT
#undef BT_YTILE
