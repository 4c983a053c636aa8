/* tile_layout.h: the pre-tiled operand layout of the fast binary GEMM kernels
 * (codegen/cuda/kernels/bgemm_tiled.cu, mma.sync; bgemm_wgmma.cu, wgmma on sm_90a) and the
 * host-side facts a launcher needs. docs/kernels.md, "Pre-tiled bit-GEMM", has the contract.
 *
 * Layout of an R x K bit matrix (bit 1 = +1, LSB-first) with tile rows TR and K padded to
 * KPAD = ceil(K / kalign) * kalign bits (kalign = the kernel's stage, KC*128 bits):
 * NCH = KPAD/128 16-byte chunks per row, R padded to a multiple of TR with zero rows, and
 * chunk c of row r at byte ((r / TR) * NCH + c) * TR * 16 + (r % TR) * 16. Padding is zeros.
 * A kernel reads A with TR = its BM and W with TR = its BN (128 and 256 by default). */
#ifndef BNN_TILE_LAYOUT_H
#define BNN_TILE_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* The kernel sources, embedded at build time by cuda/embed.py. A program for NVRTC is
 * bnn_common_cu, bnn_tiled_common_cu, then per kernel a block of #defines (BT_* or BW_*)
 * followed by bnn_bgemm_tiled_cu or bnn_bgemm_wgmma_cu. */
extern const char bnn_tiled_common_cu[];
extern const size_t bnn_tiled_common_cu_len;
extern const char bnn_bgemm_tiled_cu[];
extern const size_t bnn_bgemm_tiled_cu_len;
extern const char bnn_bgemm_wgmma_cu[];
extern const size_t bnn_bgemm_wgmma_cu_len;

/* Defaults of the two kernel files. */
enum {
    BNN_TILED_BM = 128, BNN_TILED_BN = 256, BNN_TILED_WM = 2, BNN_TILED_WN = 4, BNN_TILED_KC = 8,
    BNN_TILED_STAGES = 4,
    BNN_WGMMA_BM = 128, BNN_WGMMA_BN = 256, BNN_WGMMA_THREADS = 384, BNN_WGMMA_KC = 8, BNN_WGMMA_STAGES = 4
};

/* Padded K in bits: k rounded up to a multiple of kalign_bits (a multiple of 256). */
static inline int bnn_tiled_kpad(int k, int kalign_bits) {
    return (k + kalign_bits - 1) / kalign_bits * kalign_bits;
}

/* Bytes of the tiled image of a rows x k matrix. */
size_t bnn_tiled_bytes(int rows, int k, int tile_rows, int kalign_bits);

/* Byte offset of 16-byte chunk c (bits 128c .. 128c+127) of row r in the tiled image. */
size_t bnn_tiled_offset(int r, int c, int k, int tile_rows, int kalign_bits);

/* Writes the tiled image of `rows` packed rows (src: row r at src + r*ld_words, 32-bit words,
 * bits past k ignored and written as zeros) into dst, which holds bnn_tiled_bytes() bytes;
 * every padding byte is zeroed. 0 ok; -1 on bad arguments (kalign_bits not a positive
 * multiple of 256, tile_rows not a positive multiple of 8, ld_words < ceil(k/32)). */
int bnn_tile_bits(const uint32_t *src, int rows, int k, int ld_words, int tile_rows, int kalign_bits, void *dst);

/* popc of each of `rows` packed rows (the kernels' wpop for weights, folded at compile time;
 * apop for activations is usually made on the device by bnn_tiled_row_popc). */
void bnn_row_popc_host(const uint32_t *src, int rows, int k, int ld_words, int *out);

/* Dynamic shared memory of a pre-tiled kernel: stages of KC chunks for BM + BN rows, two
 * mbarriers per stage, and the epilogue parameters of two tiles (4 ints per column, a flip
 * word per 32 columns, 1 int per row: bgemm_wgmma.cu stages the next tile's beside the
 * current one's, on two pairs of mbarriers, and bgemm_tiled.cu alternates between them by a
 * tile's parity; the 32 bytes of mbarriers only bgemm_wgmma.cu uses). Above 48 KiB the
 * launcher must raise CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES. */
static inline int bnn_bgemm_tiled_smem(int bm, int bn, int kc, int stages) {
    return stages * kc * (bm + bn) * 16 + 16 * stages + 2 * (4 * bn + bn / 32 + bm) * 4 + 32;
}

/* Threads per block of bgemm_tiled.cu: one warp per warp tile (no producer warp). */
static inline int bnn_bgemm_tiled_threads(int wm, int wn) { return wm * wn * 32; }

/* ---- The plane-tiled layout of bgemm_planes_tiled.cu (low-bit GEMM as bit-planes).
 * `planes` bit-planes of a rows x k matrix, each tiled as above (same TR, KPAD, NCH) and the
 * planes of one row tile together: chunk c of plane p of row r at byte
 *     (((r / TR) * planes + p) * NCH + c) * TR * 16 + (r % TR) * 16
 * i.e. [row tile][plane][chunk][row][16 B]. A (activation codes, planes = XB) with TR = the
 * kernel's BM (128), W (weight codes, planes = WB, 1 for +-1 weights) with TR = its BN (256).
 * A program for NVRTC: bnn_common_cu, bnn_tiled_common_cu (sm_90 and newer only: leave it
 * out for sm_80), for the wgmma variant (PT_WGMMA 1, sm_90a) "#define BNN_WGMMA_HELPERS_ONLY"
 * + bnn_bgemm_wgmma_cu + "#undef BNN_WGMMA_HELPERS_ONLY" (its wrappers, no kernel), then per
 * kernel a block of PT_* #defines and bnn_bgemm_planes_tiled_cu. */
extern const char bnn_bgemm_planes_tiled_cu[];
extern const size_t bnn_bgemm_planes_tiled_cu_len;

enum {
    BNN_PLANES_TILED_BM = 128, BNN_PLANES_TILED_BN = 256, BNN_PLANES_TILED_WM = 2, BNN_PLANES_TILED_WN = 4,
    BNN_PLANES_TILED_KC = 8, BNN_PLANES_TILED_STAGES = 4, BNN_PLANES_WGMMA_THREADS = 384,
    BNN_PLANES_WGMMA_STAGE_T_MAX_L = 15 /* the kernel's BNN_PT_STAGE_T_MAX_L */
};

/* Bytes of the plane-tiled image. */
size_t bnn_tiled_planes_bytes(int rows, int planes, int k, int tile_rows, int kalign_bits);

/* Byte offset of 16-byte chunk c of plane p of row r in the plane-tiled image. */
size_t bnn_tiled_planes_offset(int r, int p, int c, int planes, int k, int tile_rows, int kalign_bits);

/* Writes the plane-tiled image of `rows` x `planes` packed plane rows into dst (which holds
 * bnn_tiled_planes_bytes() bytes; every padding byte zeroed, bits past k written as zeros).
 * Plane p of row r is at src + r*row_words + p*plane_words (32-bit words, LSB-first):
 * activations A[M][XB][LD] have row_words = XB*LD, plane_words = LD; weights W[WB][N][LD]
 * row_words = LD, plane_words = N*LD. 0 ok; -1 on bad arguments (as bnn_tile_bits, and
 * planes < 1). */
int bnn_tile_planes(const uint32_t *src, int rows, int planes, int k, size_t row_words, size_t plane_words,
                    int tile_rows, int kalign_bits, void *dst);

/* Dynamic shared memory of a bgemm_planes_tiled.cu kernel (above 48 KiB the launcher raises
 * the function's limit): stages of KC chunks for BM + BN rows and two mbarriers per stage;
 * with PT_APLAIN and PT_WBIPOLAR bm * 4 more (the tile's apop); on wgmma with PT_APLAIN 1024
 * (the swizzled stages' alignment), and with a threshold output of at most
 * BNN_PLANES_WGMMA_STAGE_T_MAX_L levels two tiles' staged thresholds (each column's levels
 * padded to a power of two minus one, in a power of two of words: the kernel's
 * bnn_pt_search_steps) and direction words, and
 * their four mbarriers. levels: PT_L, 0 for an int32 output. Threads: wm * wn * 32,
 * BNN_PLANES_WGMMA_THREADS on wgmma. */
static inline int bnn_planes_tiled_smem(int bm, int bn, int kc, int stages, int wgmma, int aplain, int bipolar,
                                        int levels) {
    return stages * kc * (bm + bn) * 16 + 16 * stages + (aplain && bipolar ? bm * 4 : 0) +
           (wgmma && aplain ? 1024 : 0) +
           (wgmma && levels >= 1 && levels <= BNN_PLANES_WGMMA_STAGE_T_MAX_L
                ? 2 * (bn * (levels >= 8 ? 16 : levels >= 4 ? 8 : levels >= 2 ? 4 : 2) + bn / 32) * 4 + 32
                : 0);
}

/* Dynamic shared memory of the int8 convolution on wgmma (bgemm_planes_tiled.cu PT_CONV, KC 8,
 * 128 x 256 tiles) with `stages` stages: the stages, their mbarriers and, for codes of `levels`
 * levels (0: int32 out) where they fit in the 227 KiB of a block, a column tile's levels
 * (folded, sorted) and directions (the kernel's CSTAGE). */
static inline int bnn_qconv_wgmma_smem(int stages, int levels) {
    const int base = bnn_planes_tiled_smem(BNN_PLANES_TILED_BM, BNN_PLANES_TILED_BN, BNN_PLANES_TILED_KC, stages, 1, 0,
                                           0, 0),
              lev = levels >= 1 ? (BNN_PLANES_TILED_BN * levels + BNN_PLANES_TILED_BN) * 4 : 0;
    return base + lev <= 232448 ? base + lev : base;
}

#endif
