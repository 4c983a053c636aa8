// q8_wgmma_bench.cu: the int8 GEMM on wgmma (bgemm_planes_tiled.cu's wgmma block with PT_S8:
// m64n256k32 .u8.s8 from the same shared-memory images as its b1 form) against the int8
// mma.sync kernel the plans run (qgemm_s8.cu, 128 x 128 on 4 warps, K stages of 128) and
// cuBLAS's int8 GEMM, on the GPU machine (nvcc there):
//
//     nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/q8_wgmma_bench.cu \
//          -lcuda -lcublas -o /tmp/q8w && /tmp/q8w
//
// Shapes: 256 ... 8192 x 4096 x 4096 (a 4096-wide layer at those batches) and 8192^3. Random
// 8-bit activation codes (u8) and s8 weights; int32 out. The mma.sync kernel's result is
// checked against a host dot product at 64 sampled outputs, every wgmma variant's against it
// byte for byte (cuBLAS reads the codes as s8: timed, not compared). Timed: CUDA events around
// 20 launches after 3 warm-ups, the best of 3 such runs; ms a GEMM and TOPS = 2 M N K / time.
// Benchmarks are not tests: docs/perf.md records what this printed and where.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#define _Static_assert static_assert // blob.h is C11
extern "C" {
#include "../codegen/blob.h"
#include "../codegen/tile_layout.h"
}

#define Q8_EPI 1
#define Q8_XB 8
#define Q8_N 4096
#define Q8_LD 4096
#define Q8_BM 128
#define Q8_BN 128
#define Q8_DYN 1
#define Q8_BK 128
#define Q8_WARPS 4
#define Q8_WTN 64
#define Q8_NAME q8_sync_4k
#include "../codegen/cuda/kernels/qgemm_s8.cu"
#define Q8_EPI 1
#define Q8_XB 8
#define Q8_N 8192
#define Q8_LD 8192
#define Q8_BM 128
#define Q8_BN 128
#define Q8_DYN 1
#define Q8_BK 128
#define Q8_WARPS 4
#define Q8_WTN 64
#define Q8_NAME q8_sync_8k
#include "../codegen/cuda/kernels/qgemm_s8.cu"

// The wgmma forms: PT_K in bits (8 a byte), A pre-tiled or (PT_APLAIN) plain rows by TMA.
#define BNN_WGMMA_HELPERS_ONLY
#include "../codegen/cuda/kernels/bgemm_wgmma.cu"
#undef BNN_WGMMA_HELPERS_ONLY
#define PT_WGMMA 1
#define PT_S8 1
#define PT_XB 1
#define PT_WB 1
#define PT_WSIGNED 0
#define PT_N 4096
#define PT_K (8 * 4096)
#define PT_KC 8
#define PT_STAGES 4
#define PT_NAME wg_tiled_k8s4_4k
#include "../codegen/cuda/kernels/bgemm_planes_tiled.cu"
#define PT_WGMMA 1
#define PT_S8 1
#define PT_XB 1
#define PT_WB 1
#define PT_WSIGNED 0
#define PT_N 4096
#define PT_K (8 * 4096)
#define PT_KC 4
#define PT_STAGES 8
#define PT_NAME wg_tiled_k4s8_4k
#include "../codegen/cuda/kernels/bgemm_planes_tiled.cu"
#define PT_WGMMA 1
#define PT_S8 1
#define PT_XB 1
#define PT_WB 1
#define PT_WSIGNED 0
#define PT_N 4096
#define PT_K (8 * 4096)
#define PT_KC 8
#define PT_STAGES 4
#define PT_APLAIN 1
#define PT_LDA 1024
#define PT_NAME wg_plain_k8s4_4k
#include "../codegen/cuda/kernels/bgemm_planes_tiled.cu"
#define PT_WGMMA 1
#define PT_S8 1
#define PT_XB 1
#define PT_WB 1
#define PT_WSIGNED 0
#define PT_N 8192
#define PT_K (8 * 8192)
#define PT_KC 8
#define PT_STAGES 4
#define PT_NAME wg_tiled_k8s4_8k
#include "../codegen/cuda/kernels/bgemm_planes_tiled.cu"
#define PT_WGMMA 1
#define PT_S8 1
#define PT_XB 1
#define PT_WB 1
#define PT_WSIGNED 0
#define PT_N 8192
#define PT_K (8 * 8192)
#define PT_KC 8
#define PT_STAGES 4
#define PT_APLAIN 1
#define PT_LDA 2048
#define PT_NAME wg_plain_k8s4_8k
#include "../codegen/cuda/kernels/bgemm_planes_tiled.cu"

#define CK(x)                                                                                    \
    do {                                                                                         \
        cudaError_t e_ = (x);                                                                    \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

typedef void (*SyncKern)(const unsigned char *, const signed char *, int, const int *, const int *, void *);
typedef void (*TiledKern)(const void *, const void *, const int *, const int *, const int *, void *, int);
typedef void (*PlainKern)(const BnnTensorMap, const void *, const int *, const int *, const int *, void *, int);
enum Kind { SYNC, TILED, PLAIN, CUBLAS };
struct Variant {
    const char *name;
    Kind kind;
    void *fn;
    int n, kc, stages;
};
static const Variant variants[] = {
    {"mma.sync 128x128 4w BK128 (plans)", SYNC, (void *)q8_sync_4k, 4096, 0, 0},
    {"wgmma 128x256, A tiled, KC8 S4", TILED, (void *)wg_tiled_k8s4_4k, 4096, 8, 4},
    {"wgmma 128x256, A tiled, KC4 S8", TILED, (void *)wg_tiled_k4s8_4k, 4096, 4, 8},
    {"wgmma 128x256, A plain (TMA), KC8 S4", PLAIN, (void *)wg_plain_k8s4_4k, 4096, 8, 4},
    {"cuBLAS int8 (GemmEx, s8)", CUBLAS, nullptr, 4096, 0, 0},
    {"mma.sync 128x128 4w BK128 (plans)", SYNC, (void *)q8_sync_8k, 8192, 0, 0},
    {"wgmma 128x256, A tiled, KC8 S4", TILED, (void *)wg_tiled_k8s4_8k, 8192, 8, 4},
    {"wgmma 128x256, A plain (TMA), KC8 S4", PLAIN, (void *)wg_plain_k8s4_8k, 8192, 8, 4},
    {"cuBLAS int8 (GemmEx, s8)", CUBLAS, nullptr, 8192, 0, 0},
};

// Rows x k bytes, row-major, to the plane-tiled image (one plane; tile_layout.h): chunk c of
// row r at ((r / tr) * nch + c) * tr * 16 + (r % tr) * 16, zero padding.
static std::vector<unsigned char> tile_rows(const unsigned char *src, int rows, int k, int tr, int kc) {
    const int nch = (k + 16 * kc - 1) / (16 * kc) * kc, rt = (rows + tr - 1) / tr;
    std::vector<unsigned char> out((size_t)rt * nch * tr * 16, 0);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < k / 16; c++)
            memcpy(&out[((size_t)(r / tr) * nch + c) * tr * 16 + (size_t)(r % tr) * 16], src + (size_t)r * k + 16 * c, 16);
    return out;
}

int main() {
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const int sms = prop.multiProcessorCount;
    printf("q8_wgmma_bench: %s, %d SMs\n", prop.name, sms);
    for (const Variant &v : variants) {
        if (v.kind == SYNC) {
            const int smem = 3 * (128 + 128) * (128 + 16);
            CK(cudaFuncSetAttribute((const void *)v.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        } else if (v.kind != CUBLAS) {
            const int smem = bnn_planes_tiled_smem(128, 256, v.kc, v.stages, 1, v.kind == PLAIN, 0, 0);
            CK(cudaFuncSetAttribute((const void *)v.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        }
    }
    cublasHandle_t blas;
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cublasCreate failed\n");
        return 1;
    }
    int failures = 0;
    const int shapes[][2] = {{256, 4096}, {512, 4096}, {1024, 4096}, {2048, 4096}, {8192, 4096}, {8192, 8192}};
    unsigned s = 12345u;
    for (const auto &sh : shapes) {
        const int M = sh[0], N = sh[1], K = sh[1];
        std::vector<unsigned char> A((size_t)M * K);
        std::vector<signed char> W((size_t)N * K);
        for (auto &a : A) a = (unsigned char)((s = s * 1664525u + 1013904223u) >> 24); // 0..255
        for (auto &w : W) w = (signed char)((s = s * 1664525u + 1013904223u) >> 24);
        const std::vector<unsigned char> At = tile_rows(A.data(), M, K, 128, 8), At4 = tile_rows(A.data(), M, K, 128, 4);
        const std::vector<unsigned char> Wt = tile_rows((const unsigned char *)W.data(), N, K, 256, 8),
                                         Wt4 = tile_rows((const unsigned char *)W.data(), N, K, 256, 4);
        unsigned char *dA, *dAt, *dAt4, *dWt, *dWt4;
        signed char *dW;
        void *dY, *dR;
        CK(cudaMalloc(&dA, A.size()));
        CK(cudaMalloc(&dAt, At.size()));
        CK(cudaMalloc(&dAt4, At4.size()));
        CK(cudaMalloc(&dW, W.size()));
        CK(cudaMalloc(&dWt, Wt.size()));
        CK(cudaMalloc(&dWt4, Wt4.size()));
        CK(cudaMalloc(&dY, (size_t)M * N * 4));
        CK(cudaMalloc(&dR, (size_t)M * N * 4));
        CK(cudaMemcpy(dA, A.data(), A.size(), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dAt, At.data(), At.size(), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dAt4, At4.data(), At4.size(), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dW, W.data(), W.size(), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dWt, Wt.data(), Wt.size(), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dWt4, Wt4.data(), Wt4.size(), cudaMemcpyHostToDevice));
        BnnTensorMap tm;
        memset(&tm, 0, sizeof tm);
        const int enc = blob_tmap_planes_encode((BlobTmapEncodeFn)(void *)cuTensorMapEncodeTiled, &tm,
                                                blob_tmap_planes_value(1, 8, 128, K / 4), dA, (uint64_t)M);
        if (enc != 0) {
            fprintf(stderr, "cuTensorMapEncodeTiled: %d\n", enc);
            return 1;
        }
        printf("\n%d x %d x %d (M x N x K)\n", M, N, K);
        bool have_ref = false;
        const int tiles = (M + 127) / 128 * ((N + 255) / 256), grid = tiles < sms ? tiles : sms;
        for (const Variant &v : variants) {
            if (v.n != N) continue;
            auto launch = [&]() {
                if (v.kind == SYNC) {
                    dim3 g((N + 127) / 128, (M + 127) / 128);
                    ((SyncKern)v.fn)<<<g, 128, 3 * (128 + 128) * (128 + 16)>>>(dA, dW, M, nullptr, nullptr, dY);
                } else if (v.kind == TILED) {
                    const int smem = bnn_planes_tiled_smem(128, 256, v.kc, v.stages, 1, 0, 0, 0);
                    ((TiledKern)v.fn)<<<grid, 384, smem>>>(v.kc == 4 ? dAt4 : dAt, v.kc == 4 ? dWt4 : dWt, nullptr,
                                                           nullptr, nullptr, dY, M);
                } else if (v.kind == PLAIN) {
                    const int smem = bnn_planes_tiled_smem(128, 256, v.kc, v.stages, 1, 1, 0, 0);
                    ((PlainKern)v.fn)<<<grid, 384, smem>>>(tm, dWt, nullptr, nullptr, nullptr, dY, M);
                } else {
                    const int one = 1, zero = 0;
                    cublasStatus_t st = cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, dW, CUDA_R_8I, K, dA,
                                                     CUDA_R_8I, K, &zero, dY, CUDA_R_32I, N, CUBLAS_COMPUTE_32I,
                                                     CUBLAS_GEMM_DEFAULT);
                    if (st != CUBLAS_STATUS_SUCCESS) {
                        fprintf(stderr, "cublasGemmEx: %d\n", (int)st);
                        exit(1);
                    }
                }
            };
            CK(cudaMemset(dY, 0xa5, (size_t)M * N * 4));
            launch();
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            const char *check = "(not compared)";
            std::vector<int> y((size_t)M * N);
            if (v.kind == SYNC) {
                CK(cudaMemcpy(dR, dY, (size_t)M * N * 4, cudaMemcpyDeviceToDevice));
                CK(cudaMemcpy(y.data(), dY, y.size() * 4, cudaMemcpyDeviceToHost));
                int bad = 0;
                for (int i = 0; i < 64; i++) {
                    const int m = (int)((s = s * 1664525u + 1013904223u) % (unsigned)M),
                              n = (int)((s = s * 1664525u + 1013904223u) % (unsigned)N);
                    long long d = 0;
                    for (int k = 0; k < K; k++) d += (int)A[(size_t)m * K + k] * (int)W[(size_t)n * K + k];
                    bad += (int)d != y[(size_t)m * N + n];
                }
                check = bad ? "HOST MISMATCH" : "= host (64 samples)";
                failures += bad != 0;
                have_ref = true;
            } else if (v.kind != CUBLAS && have_ref) {
                std::vector<int> r((size_t)M * N);
                CK(cudaMemcpy(y.data(), dY, y.size() * 4, cudaMemcpyDeviceToHost));
                CK(cudaMemcpy(r.data(), dR, r.size() * 4, cudaMemcpyDeviceToHost));
                const bool same = memcmp(y.data(), r.data(), y.size() * 4) == 0;
                check = same ? "= mma.sync" : "DIFFERS from mma.sync";
                failures += !same;
            }
            cudaEvent_t e0, e1;
            CK(cudaEventCreate(&e0));
            CK(cudaEventCreate(&e1));
            float best = 1e30f;
            for (int rep = 0; rep < 3; rep++) {
                for (int i = 0; i < 3; i++) launch();
                CK(cudaEventRecord(e0));
                for (int i = 0; i < 20; i++) launch();
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                float ms;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                best = ms / 20 < best ? ms / 20 : best;
            }
            CK(cudaGetLastError());
            printf("  %-38s %9.4f ms %7.1f TOPS  %s\n", v.name, best, 2.0 * M * N * K / (best * 1e-3) / 1e12, check);
            CK(cudaEventDestroy(e0));
            CK(cudaEventDestroy(e1));
        }
        CK(cudaFree(dA));
        CK(cudaFree(dAt));
        CK(cudaFree(dAt4));
        CK(cudaFree(dW));
        CK(cudaFree(dWt));
        CK(cudaFree(dWt4));
        CK(cudaFree(dY));
        CK(cudaFree(dR));
    }
    cublasDestroy(blas);
    printf("\n%s\n", failures ? "FAILED: a variant's result differs" : "all compared variants agree");
    return failures != 0;
}
