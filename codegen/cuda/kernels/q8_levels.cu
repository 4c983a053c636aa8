// q8_levels.cu: the count of a channel's folded, sorted levels that an int32 accumulator
// reaches: the epilogue of the int8 kernels (qgemm_s8.cu on mma.sync, bgemm_planes_tiled.cu's
// PT_S8 on wgmma) that writes the next layer's codes, and of the bit-plane dense kernels where
// a layer's codes have more than 15 levels (bgemm_planes.cu PL_LFOLD, bgemm_planes_tiled.cu
// PT_LFOLD). A program for NVRTC has it once, before those files (bnncc's emit.c); a compiler
// with include files gets it from their #include.
#ifndef BNN_Q8_COUNT_ONCE
#define BNN_Q8_COUNT_ONCE
// The searches' constants for l levels (macros: test_q8_emu compiles qgemm_s8.cu as C): the
// largest power of two <= l, and whether bnn_q8_count_full serves (2^k - 1 levels, up to 15: at
// 255 the clamped search was as fast in the dense kernel and the full one 18 % slower in the
// convolution's words, stop 57).
#define BNN_Q8_POW2(l) ((l) >= 128 ? 128 : (l) >= 64 ? 64 : (l) >= 32 ? 32 : (l) >= 16 ? 16 : (l) >= 8 ? 8 : (l) >= 4 ? 4 : (l) >= 2 ? 2 : 1)
#define BNN_Q8_FULL(l) ((((l) & ((l) + 1)) == 0) && (l) <= 15)
// The levels the accumulator v reaches, sum_l (dir >= 0 ? v >= t[l] : v <= t[l]), from the
// channel's levels folded and sorted (lower.c put_code_levels writes u[l] = sorted(t[l] ^ m),
// m = -1 for a falling channel, else 0: v <= t is ~v >= ~t): the number of u[l] <= v ^ m, by a
// binary search of pow2 (the largest power of two <= levels) first: 8 loads for 255 levels,
// where counting them one by one took 255 (a w8a8 MLP's epilogues were most of its time).
// Without branches (a step past the last level loads the last one and keeps the count), so that
// the searches of a word's 32 channels, unrolled, overlap their loads. Level l at u[l * stride]:
// stride 1, or a table in shared memory of a block's channels, [level][channel] (qconv.cu
// QC_LSTAGE), where a warp's 32 channels lie in 32 banks whatever levels their lanes read.
__device__ __forceinline__ int bnn_q8_count_sorted_at(int v, const int *u, int stride, int levels, int pow2) {
    int count = 0;
#pragma unroll
    for (int step = pow2; step > 0; step >>= 1) {
        const int next = count + step;
        count = next <= levels && u[((next < levels ? next : levels) - 1) * stride] <= v ? next : count;
    }
    return count;
}
__device__ __forceinline__ int bnn_q8_count_sorted(int v, const int *u, int levels, int pow2) {
    return bnn_q8_count_sorted_at(v, u, 1, levels, pow2);
}
// From 128 levels on (8-bit codes; blob.h BLOB_Q8_EST_LEVELS, the same number): the count from
// the channel's estimate est (blob.h blob_q8_level_estimate: {lo, per, first, last}, bnncc
// writes it after the levels). The estimate e is the count or one off where the levels are
// evenly spaced (a batch-norm folded into a uniform quantizer, up to rounding); four independent
// loads around it show that (the count is at least e - 1 where u[e - 2] <= v, at most e + 1
// where u[e + 1] > v) and give it: two rounds of loads where the binary search chains 8. Else
// (levels not even, a sum past float's 24 bits) the binary search. H200, docs/perf.md stop 61:
// the w8a8 MLP of 2 x 4096 4 % faster at batch 64-128 (mma.sync tiles), 5-22 % at 256-2048
// (wgmma); a w6a6 one (63 levels) 2-8 % slower, so not below 128.
#define BNN_Q8_EST(l) ((l) >= 128)
#define BNN_Q8_EST_AT(n, l) (((n) * (l) + 3) / 4 * 4) // channel 0's estimate in x0, words (blob_q8_est_at)
#ifdef __CUDACC__
#define BNN_Q8_F32(bits) __int_as_float(bits)
#else
static inline float bnn_q8_f32(int bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}
#define BNN_Q8_F32(bits) bnn_q8_f32(bits)
#endif
__device__ __forceinline__ int bnn_q8_count_near(int v, const int *u, int levels, int pow2, const int *est) {
#ifdef __CUDACC__
    const int4 q = *(const int4 *)est; // 16-byte aligned: x0's levels are a multiple of 16 bytes
    const int lo = q.x, per = q.y, first = q.z, last = q.w;
#else
    const int lo = est[0], per = est[1], first = est[2], last = est[3];
#endif
    const float f = ((float)v - (float)lo) * BNN_Q8_F32(per);
    int e = first + 1 + (int)floorf(f < -1.0f ? -1.0f : f > 16777216.0f ? 16777216.0f : f);
    e = e < first ? first : e > last ? last : e;
    const int a = u[e >= 2 ? e - 2 : 0], b = u[e >= 1 ? e - 1 : 0], c = u[e < levels ? e : levels - 1],
              d = u[e + 1 < levels ? e + 1 : levels - 1];
    if ((e < 2 || a <= v) && (e + 1 >= levels || d > v))
        return e - 1 + (e < 1 || b <= v) + (e < levels && c <= v);
    return bnn_q8_count_sorted(v, u, levels, pow2);
}
// The same where levels = 2 pow2 - 1 (an a-bit code's 2^a - 1 levels): no step can pass the
// last level, so none is clamped.
__device__ __forceinline__ int bnn_q8_count_full(int v, const int *u, int pow2) {
    int count = 0;
#pragma unroll
    for (int step = pow2; step > 0; step >>= 1)
        count += u[count + step - 1] <= v ? step : 0;
    return count;
}
// The count by the search that serves `levels` (levels and near constants in every caller, so
// the choice folds away): every epilogue over folded levels. near: the channel's estimate est
// follows the levels (a dense layer's x0 from BNN_Q8_EST levels on; a convolution's levels have
// none).
__device__ __forceinline__ int bnn_q8_count(int v, const int *u, int levels, bool near, const int *est) {
    return BNN_Q8_FULL(levels) ? bnn_q8_count_full(v, u, BNN_Q8_POW2(levels))
           : near              ? bnn_q8_count_near(v, u, levels, BNN_Q8_POW2(levels), est)
                               : bnn_q8_count_sorted(v, u, levels, BNN_Q8_POW2(levels));
}
#endif
