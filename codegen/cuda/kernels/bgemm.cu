// bgemm.cu: binary GEMM Y[M][N] = epilogue(dot(A[m], W[n])) on the tensor cores through
// mma.sync m16n8k256 .b1 AND.POPC only. A holds M activation rows, W one row per output
// channel; both are K bits packed LSB-first into 32-bit words (bit k = bit k%32 of word k/32),
// bit 1 = +1, bit 0 = -1, bits past K zero. With the true K:
//     dot = 4*popc(a AND w) - 2*popc(a) - 2*popc(w) + K
// popc(w) comes in precomputed (wpop[N], e.g. from bnn_row_popc); popc(a) is counted in the
// kernel from the staged tiles. The whole #define contract is in docs/kernels.md.
//
// Each inclusion defines one kernel named BG_NAME and #undefs its BG_* macros at the end, so
// one NVRTC program can hold many specializations (common.cu pasted once in front of them).
#ifndef BNN_COMMON_CU
#include "common.cu"
#endif

#ifndef BNN_BGEMM_ONCE
#define BNN_BGEMM_ONCE
// The GEMM's dot correction: K - 2*popc(w[c]), the same for every row.
template <int K> struct BnnGemmCorr {
    const int *wpop;
    struct Row {};
    typedef int Col;
    __device__ __forceinline__ Row row(int) const { return Row(); }
    __device__ __forceinline__ int col(int c) const { return K - 2 * wpop[c]; }
    __device__ __forceinline__ int corr(const Row &, int ci, int) const { return ci; }
};
#endif

#if !defined(BG_N) || !defined(BG_K)
#error "bgemm.cu: define BG_N (output channels) and BG_K (true K in bits)"
#endif
#ifndef BG_NAME
#define BG_NAME bgemm
#endif
#ifndef BG_EPI
#define BG_EPI BNN_EPI_I32
#endif
#ifndef BG_LDA
#define BG_LDA ((BG_K + 255) / 256 * 8) // words per A row: K padded to a multiple of 256
#endif
#ifndef BG_LDW
#define BG_LDW BG_LDA
#endif
#ifndef BG_LDY
#if BG_EPI == BNN_EPI_THRESHOLD
#define BG_LDY ((BG_N + 31) / 32)
#else
#define BG_LDY BG_N
#endif
#endif
#ifndef BG_BM
#define BG_BM 128
#endif
#ifndef BG_BN
#define BG_BN 128
#endif
#ifndef BG_WM
#define BG_WM 2
#endif
#ifndef BG_WN
#define BG_WN 2
#endif
#ifndef BG_KC
#define BG_KC 4
#endif
#ifndef BG_STAGES
#define BG_STAGES 3
#endif

// Grid: (ceil(N/BG_BN), ceil(M/BG_BM)); block: BG_WM*BG_WN*32 threads; dynamic shared
// memory: BnnTile<...>::SMEM bytes (bnn_tile_smem() in kernels.h), checked on entry.
// ep0/ep1: nothing (I32), int t[N] / int dir[N] (THRESHOLD), float scale[N] / bias[N] (AFFINE).
// m_rt is M unless BG_M fixes it at compile time.
extern "C" __global__ void __launch_bounds__(BG_WM *BG_WN * 32, 1)
    BG_NAME(const unsigned *__restrict__ A, const unsigned *__restrict__ W, const int *__restrict__ wpop,
            const void *__restrict__ ep0, const void *__restrict__ ep1, void *__restrict__ Y, int m_rt) {
    BNN_PDL_ENTER();
    typedef BnnTile<BG_BM, BG_BN, BG_WM, BG_WN, BG_KC, BG_STAGES> Cfg;
    constexpr int N = BG_N, K = BG_K, LDA = BG_LDA, LDW = BG_LDW, KCH = (K + 127) / 128;
    static_assert(N >= 1 && K >= 1, "empty GEMM");
    static_assert(LDA % 4 == 0 && LDW % 4 == 0, "row strides must be multiples of 4 words (16 bytes)");
    static_assert(LDA * 32 >= K && LDW * 32 >= K, "row stride shorter than K");
#ifdef BG_M
    const int M = BG_M;
#else
    const int M = m_rt;
#endif
    extern __shared__ __align__(128) unsigned char bnn_dsmem[];
    if (bnn_dyn_smem_size() < (unsigned)Cfg::SMEM) __trap(); // launched with too little shared memory
    int *rowpop = (int *)(bnn_dsmem + Cfg::S * Cfg::STAGE);
    const int tid = threadIdx.x, m0 = blockIdx.y * Cfg::BM, n0 = blockIdx.x * Cfg::BN;

    // Each thread's rows are fixed for the whole loop: resolve them once.
    const unsigned *arow[Cfg::AIT];
    bool aok[Cfg::AIT];
#pragma unroll
    for (int it = 0; it < Cfg::AIT; ++it) {
        const int m = m0 + (tid + it * Cfg::T) / Cfg::KC;
        aok[it] = m < M;
        arow[it] = A + (long long)(aok[it] ? m : 0) * LDA;
    }
    const unsigned *brow[Cfg::BIT];
    bool bok[Cfg::BIT];
#pragma unroll
    for (int it = 0; it < Cfg::BIT; ++it) {
        const int n = n0 + (tid + it * Cfg::T) / Cfg::KC;
        bok[it] = n < N;
        brow[it] = W + (long long)(bok[it] ? n : 0) * LDW;
    }
    auto load_a = [&](int it, int, int cg, unsigned dst) {
        const bool ok = aok[it] && cg < KCH;
        bnn_cp16(dst, arow[it] + (ok ? cg * 4 : 0), ok ? 16u : 0u);
    };
    auto load_b = [&](int it, int, int cg, unsigned dst) {
        const bool ok = bok[it] && cg < KCH;
        bnn_cp16(dst, brow[it] + (ok ? cg * 4 : 0), ok ? 16u : 0u);
    };
    int acc[Cfg::MI][Cfg::NI][4];
    bnn_mainloop<Cfg>(bnn_dsmem, (KCH + Cfg::KC - 1) / Cfg::KC, load_a, load_b, acc, rowpop);
    BnnGemmCorr<K> e{wpop};
    bnn_epilogue<Cfg, BG_EPI, N, BG_LDY, false>(acc, rowpop, m0, n0, M, e, ep0, ep1, Y);
}

#undef BG_NAME
#undef BG_M
#undef BG_N
#undef BG_K
#undef BG_EPI
#undef BG_LDA
#undef BG_LDW
#undef BG_LDY
#undef BG_BM
#undef BG_BN
#undef BG_WM
#undef BG_WN
#undef BG_KC
#undef BG_STAGES
