/* kernels.h: the fixed CUDA code of the binary kernel families, embedded at build time from
 * the .cu files of codegen/cuda/kernels/ by embed.py, plus the host-side facts a launcher needs.
 *
 * A program for NVRTC is: bnn_common_cu once, then for each specialized kernel a block of
 * #defines (BG_* for bgemm, BC_* for bconv; BG_NAME / BC_NAME give each its own name) followed
 * by bnn_bgemm_cu or bnn_bconv_cu. Each kernel file #undefs its macros at its end. The
 * #define contract, the operand formats and the algebra are in docs/kernels.md. */
#ifndef BNN_KERNELS_H
#define BNN_KERNELS_H

#include <stddef.h>

extern const char bnn_common_cu[]; /* PTX helpers, tile pipeline, epilogue, prep kernels */
extern const size_t bnn_common_cu_len;
extern const char bnn_bgemm_cu[]; /* binary GEMM (one kernel per inclusion) */
extern const size_t bnn_bgemm_cu_len;
extern const char bnn_bconv_cu[]; /* binary implicit-GEMM convolution */
extern const size_t bnn_bconv_cu_len;

/* Epilogue kinds: the values of BG_EPI / BC_EPI (BNN_EPI_* in common.cu). */
enum { BNN_EPI_I32 = 1, BNN_EPI_THRESHOLD = 2, BNN_EPI_AFFINE = 3 };

/* Default tiles when BG_* / BC_* tile macros are not given. */
enum {
    BNN_BGEMM_BM = 128, BNN_BGEMM_BN = 128, BNN_BGEMM_WM = 2, BNN_BGEMM_WN = 2, BNN_BGEMM_KC = 4,
    BNN_BGEMM_STAGES = 3,
    BNN_BCONV_BM = 128, BNN_BCONV_BN = 64, BNN_BCONV_WM = 2, BNN_BCONV_WN = 2, BNN_BCONV_KC = 4,
    BNN_BCONV_STAGES = 3
};

/* Dynamic shared memory of a tile (BnnTile<>::SMEM in common.cu): stages of KC 16-byte K chunks
 * for BM A rows and BN W rows, each chunk column padded by 128/KC bytes, plus popc(a) per row.
 * Above 48 KiB the launcher must raise CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES. */
static inline int bnn_tile_smem(int bm, int bn, int kc, int stages) {
    return stages * kc * ((bm + bn) * 16 + 2 * (128 / kc)) + bm * 4;
}

/* Threads per block of a tile: one warp per (WM x WN) warp tile. */
static inline int bnn_tile_threads(int wm, int wn) { return wm * wn * 32; }

/* Output size of a convolution along one axis (ONNX: floor, pads at both ends). */
static inline int bnn_conv_out(int in, int k, int stride, int pad_begin, int pad_end, int dilation) {
    return (in + pad_begin + pad_end - dilation * (k - 1) - 1) / stride + 1;
}

#endif
