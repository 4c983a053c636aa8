// q8_gemm_bench.cu: the int8 GEMM kernel (codegen/cuda/kernels/qgemm_s8.cu) alone, its block
// tiles against each other, on the GPU machine (nvcc there):
//
//     nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/q8_gemm_bench.cu -o /tmp/q8b
//     /tmp/q8b
//
// Shapes: 1024, 512 and 256 x 4096 x 4096 (a 4096-wide MLP layer at those batches) and 8192^3.
// Random 7-bit activation codes and s8 weights; each variant's result is compared with the
// first variant's of its shape byte for byte, the first with a host dot product at 64 sampled
// outputs (int32 out) or the count of sorted levels there (bytes out: 255 levels, a w8a8
// layer's epilogue: evenly spaced, every other channel's top 95 never reached, as lowbit writes
// them, INT32_MAX). Timed: CUDA events around 20 launches after 3 warm-ups, the best of 3
// such runs; ms a GEMM and TOPS = 2 M N K / time. Benchmarks are not tests: docs/perf.md
// records what this printed and where.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

// The kernels are compiled for a fixed N and K (Q8_N, Q8_LD).
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N 4096
#define Q8_LD 4096
#define Q8_NAME q8_64x128_4k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N 4096
#define Q8_LD 4096
#define Q8_BM 128
#define Q8_BN 128
#define Q8_DYN 1
#define Q8_NAME q8_128x128_4k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N 4096
#define Q8_LD 4096
#define Q8_BM 128
#define Q8_BN 128
#define Q8_DYN 1
#define Q8_STAGES 4
#define Q8_NAME q8_128x128s4_4k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N 4096
#define Q8_LD 4096
#define Q8_BM 128
#define Q8_BN 128
#define Q8_DYN 1
#define Q8_BK 128
#define Q8_NAME q8_128x128k128_4k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 2
#define Q8_YFMT 1
#define Q8_L 255
#define Q8_YB 8
#define Q8_XB 8
#define Q8_N 4096
#define Q8_LD 4096
#define Q8_NAME q8_64x128_b_4k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 2
#define Q8_YFMT 1
#define Q8_L 255
#define Q8_YB 8
#define Q8_XB 8
#define Q8_N 4096
#define Q8_LD 4096
#define Q8_BM 128
#define Q8_BN 128
#define Q8_DYN 1
#define Q8_STAGES 4
#define Q8_NAME q8_128x128_b_4k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
// eight warps, K stages of 128 three deep, 255 levels (the plans' dense wide tile of a w8a8
// layer whose row of bytes is a multiple of 128, stop 59)
#define Q8_EPI 2
#define Q8_YFMT 1
#define Q8_L 255
#define Q8_YB 8
#define Q8_XB 8
#define Q8_N 4096
#define Q8_LD 4096
#define Q8_BM 128
#define Q8_BN 128
#define Q8_DYN 1
#define Q8_BK 128
#define Q8_NAME q8_128x128k128_b_4k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
// the narrow tile with K stages of 128 over 255 levels (the plans' main tile of a w8a8 layer
// whose row of bytes is a multiple of 128, stop 59)
#define Q8_EPI 2
#define Q8_YFMT 1
#define Q8_L 255
#define Q8_YB 8
#define Q8_XB 8
#define Q8_N 4096
#define Q8_LD 4096
#define Q8_DYN 1
#define Q8_BK 128
#define Q8_NAME q8_64x128k128_b_4k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
// the narrow tile with K stages of 128 (83 KiB of dynamic shared memory)
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N 4096
#define Q8_LD 4096
#define Q8_DYN 1
#define Q8_BK 128
#define Q8_NAME q8_64x128k128_4k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
// four warps of 64 x 64 (the plans' dense 128 x 128 tile up to 15 levels and for int32 out)
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N 4096
#define Q8_LD 4096
#define Q8_BM 128
#define Q8_BN 128
#define Q8_DYN 1
#define Q8_STAGES 4
#define Q8_WARPS 4
#define Q8_WTN 64
#define Q8_NAME q8_128x128w4_4k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N 4096
#define Q8_LD 4096
#define Q8_BM 128
#define Q8_BN 128
#define Q8_DYN 1
#define Q8_BK 128
#define Q8_WARPS 4
#define Q8_WTN 64
#define Q8_NAME q8_128x128w4k128_4k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N 8192
#define Q8_LD 8192
#define Q8_NAME q8_64x128_8k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N 8192
#define Q8_LD 8192
#define Q8_BM 128
#define Q8_BN 128
#define Q8_DYN 1
#define Q8_NAME q8_128x128_8k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N 8192
#define Q8_LD 8192
#define Q8_BM 128
#define Q8_BN 128
#define Q8_DYN 1
#define Q8_STAGES 4
#define Q8_NAME q8_128x128s4_8k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N 8192
#define Q8_LD 8192
#define Q8_BM 128
#define Q8_BN 128
#define Q8_DYN 1
#define Q8_STAGES 4
#define Q8_WARPS 4
#define Q8_WTN 64
#define Q8_NAME q8_128x128w4_8k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N 8192
#define Q8_LD 8192
#define Q8_BM 128
#define Q8_BN 128
#define Q8_DYN 1
#define Q8_BK 128
#define Q8_WARPS 4
#define Q8_WTN 64
#define Q8_NAME q8_128x128w4k128_8k
#include "../codegen/cuda/kernels/qgemm_s8.cu"

typedef void (*Kern)(const unsigned char *, const signed char *, int, const int *, const int *, void *);
struct Variant {
    const char *name;
    Kern fn;
    int n, bm, bn, stages, bk, dyn, bytes_out; // bytes_out: 255 levels to a byte a code
    int warps;                                 // 0 for 8
};
static const Variant variants[] = {
    {"64x128, BK 64, 3 stages", q8_64x128_4k, 4096, 64, 128, 3, 64, 0, 0},
    {"128x128, BK 64, 3 stages", q8_128x128_4k, 4096, 128, 128, 3, 64, 1, 0},
    {"128x128, BK 64, 4 stages", q8_128x128s4_4k, 4096, 128, 128, 4, 64, 1, 0},
    {"128x128, BK 128, 3 stages", q8_128x128k128_4k, 4096, 128, 128, 3, 128, 1, 0},
    {"64x128, 255 levels to bytes", q8_64x128_b_4k, 4096, 64, 128, 3, 64, 0, 1},
    {"128x128, 4 stages, 255 levels", q8_128x128_b_4k, 4096, 128, 128, 4, 64, 1, 1},
    {"128x128, BK 128, 255 levels", q8_128x128k128_b_4k, 4096, 128, 128, 3, 128, 1, 1},
    {"64x128, BK 128, 255 levels", q8_64x128k128_b_4k, 4096, 64, 128, 3, 128, 1, 1},
    {"64x128, BK 128, 3 stages", q8_64x128k128_4k, 4096, 64, 128, 3, 128, 1, 0},
    {"128x128 4 warps, BK 64, 4 stages", q8_128x128w4_4k, 4096, 128, 128, 4, 64, 1, 0, 4},
    {"128x128 4 warps, BK 128, 3 stages", q8_128x128w4k128_4k, 4096, 128, 128, 3, 128, 1, 0, 4},
    {"64x128, BK 64, 3 stages", q8_64x128_8k, 8192, 64, 128, 3, 64, 0, 0},
    {"128x128, BK 64, 3 stages", q8_128x128_8k, 8192, 128, 128, 3, 64, 1, 0},
    {"128x128, BK 64, 4 stages", q8_128x128s4_8k, 8192, 128, 128, 4, 64, 1, 0},
    {"128x128 4 warps, BK 64, 4 stages", q8_128x128w4_8k, 8192, 128, 128, 4, 64, 1, 0, 4},
    {"128x128 4 warps, BK 128, 3 stages", q8_128x128w4k128_8k, 8192, 128, 128, 3, 128, 1, 0, 4},
};

#define CK(x)                                                                                    \
    do {                                                                                         \
        cudaError_t e_ = (x);                                                                    \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

static int smem_of(const Variant &v) { // qgemm_s8.cu's Q8_SMEM
    if (!v.dyn) return 0;
    int st = v.stages * (v.bm + v.bn) * (v.bk + 16), tile = v.bm * (v.bn + 1) * 4;
    return st > tile ? st : tile;
}

static void launch(const Variant &v, const unsigned char *A, const signed char *W, int M, const int *T,
                   const int *dir, void *Y) {
    dim3 grid((v.n + v.bn - 1) / v.bn, (M + v.bm - 1) / v.bm), block(32 * (v.warps ? v.warps : 8));
    v.fn<<<grid, block, smem_of(v)>>>(A, W, M, T, dir, Y);
}

int main() {
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("q8_gemm_bench: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    for (const Variant &v : variants)
        if (smem_of(v) > 48 * 1024) CK(cudaFuncSetAttribute(v.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_of(v)));
    int failures = 0;
    const int shapes[][2] = {{1024, 4096}, {512, 4096}, {256, 4096}, {8192, 8192}};
    for (const auto &sh : shapes) {
        const int M = sh[0], N = sh[1], K = sh[1], L = 255;
        std::vector<unsigned char> A((size_t)M * K);
        std::vector<signed char> W((size_t)N * K);
        std::vector<int> T((size_t)N * L), dir(N, 1);
        unsigned s = 12345u;
        for (auto &a : A) a = (unsigned char)((s = s * 1664525u + 1013904223u) >> 25); // 0..127
        for (auto &w : W) w = (signed char)((s = s * 1664525u + 1013904223u) >> 24);
        for (int n = 0; n < N; n++) // sorted levels over the sums' spread (about 3e5), a channel's offset
            for (int l = 0; l < L; l++) T[(size_t)n * L + l] = n % 2 && l >= 160 ? INT32_MAX : (l - 127) * 2600 + (n % 97) * 13;
        unsigned char *dA;
        signed char *dW;
        int *dT, *dD;
        void *dY, *dR, *dRb;
        CK(cudaMalloc(&dA, A.size()));
        CK(cudaMalloc(&dW, W.size()));
        CK(cudaMalloc(&dT, T.size() * 4));
        CK(cudaMalloc(&dD, dir.size() * 4));
        CK(cudaMalloc(&dY, (size_t)M * N * 4));
        CK(cudaMalloc(&dR, (size_t)M * N * 4));
        CK(cudaMalloc(&dRb, (size_t)M * N));
        CK(cudaMemcpy(dA, A.data(), A.size(), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dW, W.data(), W.size(), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dT, T.data(), T.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dD, dir.data(), dir.size() * 4, cudaMemcpyHostToDevice));
        bool have_ref[2] = {false, false};
        printf("\n%d x %d x %d (M x N x K)\n", M, N, K);
        for (const Variant &v : variants) {
            if (v.n != N) continue;
            const size_t bytes = v.bytes_out ? (size_t)M * N : (size_t)M * N * 4;
            void *ref = v.bytes_out ? dRb : dR;
            CK(cudaMemset(dY, 0xa5, bytes));
            launch(v, dA, dW, M, dT, dD, dY);
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            const char *check = "";
            if (!have_ref[v.bytes_out]) { // the shape's first against the host at 64 samples
                CK(cudaMemcpy(ref, dY, bytes, cudaMemcpyDeviceToDevice));
                std::vector<unsigned char> y(bytes);
                CK(cudaMemcpy(y.data(), dY, bytes, cudaMemcpyDeviceToHost));
                int bad = 0;
                for (int i = 0; i < 64; i++) {
                    int m = (int)((s = s * 1664525u + 1013904223u) % (unsigned)M), n = (int)((s = s * 1664525u + 1013904223u) % (unsigned)N);
                    long long d = 0;
                    for (int k = 0; k < K; k++) d += (int)A[(size_t)m * K + k] * (int)W[(size_t)n * K + k];
                    if (v.bytes_out) {
                        int c = 0;
                        for (int l = 0; l < L; l++) c += (int)d >= T[(size_t)n * L + l];
                        bad += c != y[(size_t)m * N + n];
                    } else {
                        bad += (int)d != ((int *)y.data())[(size_t)m * N + n];
                    }
                }
                check = bad ? "HOST MISMATCH" : "= host (64 samples)";
                failures += bad != 0;
                have_ref[v.bytes_out] = true;
            } else {
                std::vector<unsigned char> y(bytes), r(bytes);
                CK(cudaMemcpy(y.data(), dY, bytes, cudaMemcpyDeviceToHost));
                CK(cudaMemcpy(r.data(), ref, bytes, cudaMemcpyDeviceToHost));
                bool same = memcmp(y.data(), r.data(), bytes) == 0;
                check = same ? "= the first" : "DIFFERS from the first";
                failures += !same;
            }
            cudaEvent_t e0, e1;
            CK(cudaEventCreate(&e0));
            CK(cudaEventCreate(&e1));
            float best = 1e30f;
            for (int rep = 0; rep < 3; rep++) {
                for (int i = 0; i < 3; i++) launch(v, dA, dW, M, dT, dD, dY);
                CK(cudaEventRecord(e0));
                for (int i = 0; i < 20; i++) launch(v, dA, dW, M, dT, dD, dY);
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                float ms;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                best = ms / 20 < best ? ms / 20 : best;
            }
            printf("  %-32s %9.4f ms %7.1f TOPS  %s\n", v.name, best, 2.0 * M * N * K / (best * 1e-3) / 1e12, check);
            CK(cudaEventDestroy(e0));
            CK(cudaEventDestroy(e1));
        }
        CK(cudaFree(dA));
        CK(cudaFree(dW));
        CK(cudaFree(dT));
        CK(cudaFree(dD));
        CK(cudaFree(dY));
        CK(cudaFree(dR));
        CK(cudaFree(dRb));
    }
    printf("\n%s\n", failures ? "FAILED: a variant's result differs" : "all variants agree");
    return failures != 0;
}
