// q8_levels.cu: the count of a channel's folded, sorted levels that an int32 accumulator
// reaches: the epilogue of the int8 kernels (qgemm_s8.cu on mma.sync, bgemm_planes_tiled.cu's
// PT_S8 on wgmma) that writes the next layer's codes. A program for NVRTC has it once, before
// either file (bnncc's emit.c); a compiler with include files gets it from their #include.
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
// the searches of a word's 32 channels, unrolled, overlap their loads.
__device__ __forceinline__ int bnn_q8_count_sorted(int v, const int *u, int levels, int pow2) {
    int count = 0;
#pragma unroll
    for (int step = pow2; step > 0; step >>= 1) {
        const int next = count + step;
        count = next <= levels && u[(next < levels ? next : levels) - 1] <= v ? next : count;
    }
    return count;
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
#endif
