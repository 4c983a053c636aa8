// mlp_fused.cu: one kernel for a chain of small binary dense layers (a TFC-like MLP at batch 1:
// the pack of its float input, bdense + threshold layers, a last dense with its float epilogue).
// The lowering (codegen/lower.c, fuse_mlp_chains) keeps the chain's plan steps for the CPU and
// writes one GPU-only `kernel` step whose generated __global__ calls these templates in the
// steps' order; every parameter (weights, popc(w), thresholds, scales) is read from the same
// WEIGHTS bytes the CPU steps read, through one window pointer `wts`. docs/kernels.md "Fused
// MLP" holds the contract.
//
// One warp per batch item (grid-stride over the batch). A lane holds the item's activation bits
// in registers, replicated in every lane (word w = __ballot_sync of the bits 32w..32w+31); lane l
// computes outputs l, l+32, ... of each layer with CUDA-core AND + __popc on 32-bit words:
//     dot = 4*popc(a AND w) - 2*popc(a) - 2*popc(w) + K      (the bgemm algebra, AND only)
// Float steps repeat the CPU path's operations one by one (__fmul_rn / __fdiv_rn / __fadd_rn,
// never an FMA), so results are bit-identical to the CPU path and the reference interpreter.
// Weights: staged in shared memory chunk-major ([16-byte chunk][row]: lane o reads chunk c of
// row o at c*N + o, no bank conflicts) when they fit, else read from global memory row-major.
// NVRTC has no <cstdint>: built-in types only. Needs common.cu (cp.async wrappers) before it.
#ifndef BNN_MLP_FUSED_CU
#define BNN_MLP_FUSED_CU

#ifndef BNN_COMMON_CU
#include "common.cu"
#endif

// Words of a K-bit activation as a lane holds it: whole 16-byte chunks, bits past K zero.
template <int K> struct BnnMlpWords {
    static constexpr int KC = (K + 127) / 128; // 16-byte chunks of a weight row that hold bits
    static constexpr int W = KC * 4;
    static constexpr int REAL = (K + 31) / 32; // words that hold bits
};

// Stage one layer's weights W[N][LD words] (global, row-major) into shared memory as
// dst[c*N + o] = chunk c of row o; cp.async, the caller commits and waits.
template <int N, int KC, int LD>
__device__ __forceinline__ void bnn_mlp_stage(uint4 *dst, const unsigned char *src) {
    for (int i = threadIdx.x; i < N * KC; i += blockDim.x) {
        const int o = i % N, c = i / N;
        bnn_cp16(bnn_smem(dst + i), src + ((long long)o * LD + 4 * c) * 4, 16);
    }
}

// The item loop: stage the weights (stage()), load the first item (input(item, a)) while the
// copies fly, wait, then per item body(item, a) and the next item's input. Warps past the
// batch skip the loop but still reach the barrier.
template <int AW, class Stage, class Input, class Body>
__device__ __forceinline__ void bnn_mlp_run(int batch, Stage stage, Input input, Body body) {
    const int warps = blockDim.x >> 5;
    if ((long long)blockIdx.x * warps >= batch)
        return; // the whole block is idle
    long long item = (long long)blockIdx.x * warps + (threadIdx.x >> 5);
    const long long stride = (long long)gridDim.x * warps;
    stage();
    bnn_cp_commit();
    unsigned a[AW];
    if (item < batch)
        input(item, a);
    bnn_cp_wait<0>();
    __syncthreads();
    for (; item < batch; item += stride) {
        body(item, (const unsigned(&)[AW])a);
        if (item + stride < batch)
            input(item + stride, a);
    }
}

// A float value to its bit as the pack step does: v > 0, or v == 0 with zero = 1; NaN is -1.
template <int ZERO> __device__ __forceinline__ bool bnn_mlp_bit(float v) {
    return v > 0.0f || (v == 0.0f && ZERO > 0);
}

// One affine plan step on element j (bnn_affine, layout channel-major): v * s[c] + b[c], or
// with DIV v / s[c] + b[c], c = j / SPATIAL; each operation rounded on its own.
template <int SPATIAL, int DIV>
__device__ __forceinline__ float bnn_mlp_affine(const float *s, const float *b, int j, float v) {
    const int c = j / SPATIAL;
    const float p = DIV ? __fdiv_rn(v, __ldg(s + c)) : __fmul_rn(v, __ldg(s + c));
    return __fadd_rn(p, __ldg(b + c));
}

// The bgemm's affine epilogue: (float)dot * scale[o] + bias[o], rounded after each operation.
__device__ __forceinline__ float bnn_mlp_scale(int dot, const float *s, const float *b, int o) {
    return __fadd_rn(__fmul_rn(__int2float_rn(dot), __ldg(s + o)), __ldg(b + o));
}

// K floats of one item to bits: element j = 32w + lane goes through pre(j, v) (the leading
// affine steps) and bnn_mlp_bit. All loads are issued before the first ballot.
template <int K, int ZERO, class Pre>
__device__ __forceinline__ void bnn_mlp_pack(const float *__restrict__ x, unsigned (&a)[BnnMlpWords<K>::W], Pre pre) {
    constexpr int R = BnnMlpWords<K>::REAL;
    const int lane = threadIdx.x & 31;
    float v[R];
#pragma unroll
    for (int w = 0; w < R; ++w) {
        const int j = w * 32 + lane;
        v[w] = j < K ? pre(j, __ldg(x + j)) : 0.0f;
    }
#pragma unroll
    for (int w = 0; w < BnnMlpWords<K>::W; ++w)
        a[w] = w < R ? __ballot_sync(0xffffffffu, w * 32 + lane < K && bnn_mlp_bit<ZERO>(v[w])) : 0u;
}

// K bits of one item as stored by another step (LSB-first words, padding bits zero).
template <int K>
__device__ __forceinline__ void bnn_mlp_load_bits(const unsigned *__restrict__ x, unsigned (&a)[BnnMlpWords<K>::W]) {
#pragma unroll
    for (int w = 0; w < BnnMlpWords<K>::W; ++w)
        a[w] = w < BnnMlpWords<K>::REAL ? __ldg(x + w) : 0u;
}

// One binary dense layer: for o = 32i + lane < N, epi(i, o, true, dot) with the exact dot; lanes
// past N call epi(i, o, false, 0) (every lane reaches each epi, so it may ballot). SMEM: w is
// the staged [KC][N] chunks, else global rows of LD words. wpop[o] = popc(row o).
template <int K, int N, int SMEM, int LD, class Epi>
__device__ __forceinline__ void bnn_mlp_dense(const unsigned (&a)[BnnMlpWords<K>::W], const uint4 *__restrict__ w,
                                              const int *__restrict__ wpop, Epi epi) {
    constexpr int KC = BnnMlpWords<K>::KC;
    const int lane = threadIdx.x & 31;
    int pa = 0;
#pragma unroll
    for (int i = 0; i < KC * 4; ++i)
        pa += __popc(a[i]);
#pragma unroll
    for (int i = 0; i < (N + 31) / 32; ++i) {
        const int o = i * 32 + lane;
        const bool ok = o < N;
        int dot = 0;
        if (ok) {
            int pand = 0;
#pragma unroll
            for (int c = 0; c < KC; ++c) {
                const uint4 q = SMEM ? w[c * N + o] : __ldg(w + (long long)o * (LD / 4) + c);
                pand += __popc(a[4 * c] & q.x) + __popc(a[4 * c + 1] & q.y) + __popc(a[4 * c + 2] & q.z) +
                        __popc(a[4 * c + 3] & q.w);
            }
            dot = 4 * pand - 2 * pa - 2 * __ldg(wpop + o) + K;
        }
        epi(i, o, ok, dot);
    }
}

// A layer with the threshold epilogue: bit o = dir[o] < 0 ? dot <= t[o] : dot >= t[o], zero
// past N: the next layer's activation words.
template <int K, int N, int SMEM, int LD>
__device__ __forceinline__ void bnn_mlp_threshold(const unsigned (&a)[BnnMlpWords<K>::W], const uint4 *w,
                                                  const int *wpop, const int *t, const int *dir,
                                                  unsigned (&y)[BnnMlpWords<N>::W]) {
#pragma unroll
    for (int i = 0; i < BnnMlpWords<N>::W; ++i)
        y[i] = 0u;
    bnn_mlp_dense<K, N, SMEM, LD>(a, w, wpop, [&](int i, int o, bool ok, int dot) {
        bool bit = false;
        if (ok) {
            const int tv = __ldg(t + o);
            bit = __ldg(dir + o) < 0 ? dot <= tv : dot >= tv;
        }
        y[i] = __ballot_sync(0xffffffffu, bit);
    });
}

// A layer whose float result is packed again (its affine epilogue, the float steps after it,
// a pack): bit o = bnn_mlp_bit<ZERO>(f(o, dot)).
template <int K, int N, int SMEM, int LD, int ZERO, class F>
__device__ __forceinline__ void bnn_mlp_float_bits(const unsigned (&a)[BnnMlpWords<K>::W], const uint4 *w,
                                                   const int *wpop, F f, unsigned (&y)[BnnMlpWords<N>::W]) {
#pragma unroll
    for (int i = 0; i < BnnMlpWords<N>::W; ++i)
        y[i] = 0u;
    bnn_mlp_dense<K, N, SMEM, LD>(a, w, wpop, [&](int i, int o, bool ok, int dot) {
        y[i] = __ballot_sync(0xffffffffu, ok && bnn_mlp_bit<ZERO>(f(o, dot)));
    });
}

// The last layer's bits to memory: LDY words (bits past N and words past them zero), lane l
// writing word l.
template <int N, int LDY>
__device__ __forceinline__ void bnn_mlp_store_bits(const unsigned (&y)[BnnMlpWords<N>::W], unsigned *out) {
    static_assert(LDY <= 32, "bnn_mlp_store_bits: at most 32 words");
    const int lane = threadIdx.x & 31;
    unsigned mine = 0u;
#pragma unroll
    for (int i = 0; i < BnnMlpWords<N>::W; ++i)
        if (lane == i)
            mine = y[i];
    if (lane < LDY)
        out[lane] = mine;
}

#endif
