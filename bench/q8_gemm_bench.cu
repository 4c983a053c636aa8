// q8_gemm_bench.cu: the int8 GEMM kernel (codegen/cuda/kernels/qgemm_s8.cu) alone, its
// mma.sync tile against the wgmma ones (Q8_WG), on the GPU machine (nvcc there):
//
//     nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/q8_gemm_bench.cu -o /tmp/q8b
//     /tmp/q8b [M N K ...]     (default: 1024 4096 4096, 256 4096 4096, 8192 8192 8192)
//
// Each shape: random 7-bit activation codes and s8 weights, every variant's int32 result
// compared with the mma.sync kernel's byte for byte (and 64 sampled outputs with a host dot
// product), then timed (CUDA events around 20 launches after 3 warm-ups, the best of 3 such
// runs): ms a GEMM and TOPS = 2 M N K / time. Benchmarks are not tests: docs/perf.md records
// what this printed and where.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>


// The kernels are compiled for a fixed N and K (Q8_N, Q8_LD): one set per (N, K) pair below.
#define SHAPE_N 4096
#define SHAPE_K 4096
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N SHAPE_N
#define Q8_LD SHAPE_K
#define Q8_NAME q8_sync_4k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N SHAPE_N
#define Q8_LD SHAPE_K
#define Q8_WG 1
#define Q8_BN 128
#define Q8_BK 64
#define Q8_NAME q8_wg128_64_4k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N SHAPE_N
#define Q8_LD SHAPE_K
#define Q8_WG 1
#define Q8_BN 128
#define Q8_BK 128
#define Q8_NAME q8_wg128_128_4k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N SHAPE_N
#define Q8_LD SHAPE_K
#define Q8_WG 1
#define Q8_BN 256
#define Q8_BK 64
#define Q8_NAME q8_wg256_64_4k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N SHAPE_N
#define Q8_LD SHAPE_K
#define Q8_WG 1
#define Q8_BN 256
#define Q8_BK 128
#define Q8_STAGES 3
#define Q8_NAME q8_wg256_128s3_4k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N SHAPE_N
#define Q8_LD SHAPE_K
#define Q8_WG 1
#define Q8_BN 128
#define Q8_BK 64
#define Q8_STAGES 6
#define Q8_NAME q8_wg128_64s6_4k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N 8192
#define Q8_LD 8192
#define Q8_NAME q8_sync_8k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N 8192
#define Q8_LD 8192
#define Q8_WG 1
#define Q8_BN 128
#define Q8_BK 128
#define Q8_NAME q8_wg128_128_8k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N 8192
#define Q8_LD 8192
#define Q8_WG 1
#define Q8_BN 128
#define Q8_BK 64
#define Q8_NAME q8_wg128_64_8k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 1
#define Q8_XB 7
#define Q8_N 8192
#define Q8_LD 8192
#define Q8_WG 1
#define Q8_BN 256
#define Q8_BK 64
#define Q8_NAME q8_wg256_64_8k
#include "../codegen/cuda/kernels/qgemm_s8.cu"

typedef void (*Kern)(const unsigned char *, const signed char *, int, const int *, const int *, void *);
struct Variant {
    const char *name;
    Kern fn;
    int n, k, bm, bn, stages, bk, wg;
};
static const Variant variants[] = {
    {"mma.sync 64x128, BK 64, 3 stages", q8_sync_4k, 4096, 4096, 64, 128, 3, 64, 0},
    {"wgmma 128x128, BK 64, 4 stages", q8_wg128_64_4k, 4096, 4096, 128, 128, 4, 64, 1},
    {"wgmma 128x128, BK 128, 4 stages", q8_wg128_128_4k, 4096, 4096, 128, 128, 4, 128, 1},
    {"wgmma 128x256, BK 64, 4 stages", q8_wg256_64_4k, 4096, 4096, 128, 256, 4, 64, 1},
    {"wgmma 128x256, BK 128, 3 stages", q8_wg256_128s3_4k, 4096, 4096, 128, 256, 3, 128, 1},
    {"wgmma 128x128, BK 64, 6 stages", q8_wg128_64s6_4k, 4096, 4096, 128, 128, 6, 64, 1},
    {"mma.sync 64x128, BK 64, 3 stages", q8_sync_8k, 8192, 8192, 64, 128, 3, 64, 0},
    {"wgmma 128x128, BK 128, 4 stages", q8_wg128_128_8k, 8192, 8192, 128, 128, 4, 128, 1},
    {"wgmma 128x128, BK 64, 4 stages", q8_wg128_64_8k, 8192, 8192, 128, 128, 4, 64, 1},
    {"wgmma 128x256, BK 64, 4 stages", q8_wg256_64_8k, 8192, 8192, 128, 256, 4, 64, 1},
};

#define CK(x)                                                                                    \
    do {                                                                                         \
        cudaError_t e_ = (x);                                                                    \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

static int smem_of(const Variant &v) {
    if (!v.wg) return v.bk == 128 ? 3 * (v.bm + v.bn) * (v.bk + 16) : 0;
    int st = v.stages * (v.bm + v.bn) * v.bk, tile = v.bm * (v.bn + 1) * 4;
    return st > tile ? st : tile;
}

static void launch(const Variant &v, const unsigned char *A, const signed char *W, int M, int *Y) {
    dim3 grid((v.n + v.bn - 1) / v.bn, (M + v.bm - 1) / v.bm), block(256);
    v.fn<<<grid, block, smem_of(v)>>>(A, W, M, nullptr, nullptr, Y);
}

int main(int argc, char **argv) {
    std::vector<int> Ms = {1024, 256, 8192};
    if (argc > 1) {
        Ms.clear();
        for (int i = 1; i < argc; i++) Ms.push_back(atoi(argv[i]));
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("q8_gemm_bench: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    for (const Variant &v : variants) {
        int s = smem_of(v);
        if (s > 48 * 1024) CK(cudaFuncSetAttribute(v.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, s));
    }
    int failures = 0;
    for (int N : {4096, 8192})
        for (int M : Ms) {
            const int K = N;
            if ((N == 8192) != (M == 8192)) continue; // 4096: the MLP's layers; 8192: the square GEMM
            std::vector<unsigned char> A((size_t)M * K);
            std::vector<signed char> W((size_t)N * K);
            unsigned s = 12345u;
            for (auto &a : A) a = (unsigned char)((s = s * 1664525u + 1013904223u) >> 25); // 0..127
            for (auto &w : W) w = (signed char)((s = s * 1664525u + 1013904223u) >> 24);
            unsigned char *dA;
            signed char *dW;
            int *dY, *dR;
            CK(cudaMalloc(&dA, A.size()));
            CK(cudaMalloc(&dW, W.size()));
            CK(cudaMalloc(&dY, (size_t)M * N * 4));
            CK(cudaMalloc(&dR, (size_t)M * N * 4));
            CK(cudaMemcpy(dA, A.data(), A.size(), cudaMemcpyHostToDevice));
            CK(cudaMemcpy(dW, W.data(), W.size(), cudaMemcpyHostToDevice));
            bool have_ref = false;
            printf("\n%d x %d x %d (M x N x K)\n", M, N, K);
            for (const Variant &v : variants) {
                if (v.n != N || v.k != K) continue;
                CK(cudaMemset(dY, 0xa5, (size_t)M * N * 4));
                launch(v, dA, dW, M, dY);
                CK(cudaGetLastError());
                CK(cudaDeviceSynchronize());
                const char *check = "";
                if (!have_ref) { // the first (mma.sync) against the host at 64 samples
                    CK(cudaMemcpy(dR, dY, (size_t)M * N * 4, cudaMemcpyDeviceToDevice));
                    std::vector<int> y((size_t)M * N);
                    CK(cudaMemcpy(y.data(), dY, y.size() * 4, cudaMemcpyDeviceToHost));
                    int bad = 0;
                    for (int i = 0; i < 64; i++) {
                        int m = (int)((s = s * 1664525u + 1013904223u) % (unsigned)M), n = (int)((s = s * 1664525u + 1013904223u) % (unsigned)N);
                        long long d = 0;
                        for (int k = 0; k < K; k++) d += (int)A[(size_t)m * K + k] * (int)W[(size_t)n * K + k];
                        bad += (int)d != y[(size_t)m * N + n];
                    }
                    check = bad ? "HOST MISMATCH" : "= host (64 samples)";
                    failures += bad != 0;
                    have_ref = true;
                } else {
                    std::vector<int> y((size_t)M * N), r((size_t)M * N);
                    CK(cudaMemcpy(y.data(), dY, y.size() * 4, cudaMemcpyDeviceToHost));
                    CK(cudaMemcpy(r.data(), dR, r.size() * 4, cudaMemcpyDeviceToHost));
                    bool same = memcmp(y.data(), r.data(), y.size() * 4) == 0;
                    check = same ? "= mma.sync" : "DIFFERS from mma.sync";
                    failures += !same;
                }
                cudaEvent_t e0, e1;
                CK(cudaEventCreate(&e0));
                CK(cudaEventCreate(&e1));
                float best = 1e30f;
                for (int rep = 0; rep < 3; rep++) {
                    for (int i = 0; i < 3; i++) launch(v, dA, dW, M, dY);
                    CK(cudaEventRecord(e0));
                    for (int i = 0; i < 20; i++) launch(v, dA, dW, M, dY);
                    CK(cudaEventRecord(e1));
                    CK(cudaEventSynchronize(e1));
                    float ms;
                    CK(cudaEventElapsedTime(&ms, e0, e1));
                    best = ms / 20 < best ? ms / 20 : best;
                }
                printf("  %-34s %9.4f ms %7.1f TOPS  %s\n", v.name, best, 2.0 * M * N * K / (best * 1e-3) / 1e12, check);
                CK(cudaEventDestroy(e0));
                CK(cudaEventDestroy(e1));
            }
            CK(cudaFree(dA));
            CK(cudaFree(dW));
            CK(cudaFree(dY));
            CK(cudaFree(dR));
        }
    printf("\n%s\n", failures ? "FAILED: a variant's result differs" : "all variants agree");
    return failures != 0;
}
