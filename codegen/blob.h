/* blob.h: the model.bin format (docs/blob-format.md) and its writer.
 *
 * The format's constants and the in-memory form of a plan step are defined here once:
 * the writer (codegen/blob.c, used by the compiler) fills BlobStep records and the
 * runtime's reader (runtime/rt_blob.c) decodes into the same struct. This header needs
 * only libc, so the runtime can include it without the compiler's utilities. */
#ifndef BNN_BLOB_H
#define BNN_BLOB_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__cplusplus) && !defined(_Static_assert) /* the block emulators' tests are C++ */
#define _Static_assert static_assert
#endif

/* ---------------------------------------------------------------- the container */

#define BLOB_MAGIC "BNNMODEL"
#define BLOB_VERSION 1u
#define BLOB_HEADER_SIZE 64u
#define BLOB_SECTION_ENTRY_SIZE 48u
#define BLOB_ALIGN 64u
#define BLOB_MAX_SECTIONS 64u
#define BLOB_TAG_SIZE 16u   /* section tag, e.g. "sm_90a", NUL-padded */

typedef enum {
    BLOB_SECTION_META = 1,
    BLOB_SECTION_PLAN = 2,
    BLOB_SECTION_WEIGHTS = 3,
    BLOB_SECTION_CUBIN = 4,
} BlobSectionKind;

/* FNV-1a 64 over n bytes, continuing from h (start with BLOB_FNV_INIT). */
#define BLOB_FNV_INIT 0xcbf29ce484222325ull
static inline uint64_t blob_fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* ---------------------------------------------------------------- META */

#define BLOB_MAX_RANK 8
#define BLOB_META_HEADER_SIZE 16u
#define BLOB_META_RECORD_SIZE 112u

/* Element types (the numbering is part of the format). B1 is a logical bit tensor in
 * the IR's canonical packing: element i is bit i%8 of byte i/8 (per batch item). */
typedef enum {
    BLOB_DTYPE_F32 = 1,
    BLOB_DTYPE_F16 = 2,
    BLOB_DTYPE_I64 = 3,
    BLOB_DTYPE_I32 = 4,
    BLOB_DTYPE_I8 = 5,
    BLOB_DTYPE_U8 = 6,
    BLOB_DTYPE_B1 = 7,
    BLOB_DTYPE_LAST = BLOB_DTYPE_B1
} BlobDType;

/* ---------------------------------------------------------------- PLAN */

#define BLOB_PLAN_HEADER_SIZE 64u
#define BLOB_STEP_SIZE 648u
#define BLOB_KERNEL_NAME_SIZE 64u
#define BLOB_MAX_ARGS 8
#define BLOB_MAX_SLOTS 8
#define BLOB_MAX_PARAMS 24

/* Step kinds (numbering is part of the format). Semantics: docs/blob-format.md. */
#define BLOB_STEP_LIST(X)                      \
    X(BLOB_STEP_PACK, 1, "pack")               \
    X(BLOB_STEP_UNPACK, 2, "unpack")           \
    X(BLOB_STEP_BGEMM, 3, "bgemm")             \
    X(BLOB_STEP_BCONV, 4, "bconv")             \
    X(BLOB_STEP_DENSE, 5, "dense")             \
    X(BLOB_STEP_CONV2D, 6, "conv2d")           \
    X(BLOB_STEP_AFFINE, 7, "affine")           \
    X(BLOB_STEP_MAXPOOL, 8, "maxpool")         \
    X(BLOB_STEP_AVGPOOL, 9, "avgpool")         \
    X(BLOB_STEP_GLOBALAVGPOOL, 10, "globalavgpool") \
    X(BLOB_STEP_ADD, 11, "add")                \
    X(BLOB_STEP_RELU, 12, "relu")              \
    X(BLOB_STEP_COPY, 13, "copy")              \
    X(BLOB_STEP_ARGMAX, 14, "argmax")          \
    X(BLOB_STEP_CAST, 15, "cast")              \
    X(BLOB_STEP_KERNEL, 16, "kernel") /* a GPU launch with no CPU meaning */ \
    X(BLOB_STEP_SOFTMAX, 17, "softmax")        \
    X(BLOB_STEP_QUANTIZE, 18, "quantize") /* low-bit codes as bit-planes (docs/kernels.md) */ \
    X(BLOB_STEP_QGEMM, 19, "qgemm")       /* bit-plane low-bit GEMM */ \
    X(BLOB_STEP_QCONV, 20, "qconv")       /* bit-plane low-bit implicit-GEMM convolution */ \
    X(BLOB_STEP_RETILE, 21, "retile")     /* bit rows from one layout (row-major, tile-major) to another */

typedef enum {
#define X(e, v, name) e = v,
    BLOB_STEP_LIST(X)
#undef X
    BLOB_STEP_LAST = BLOB_STEP_RETILE
} BlobStepKind;

static inline const char *blob_step_name(uint32_t kind) {
    switch (kind) {
#define X(e, v, name) case v: return name;
        BLOB_STEP_LIST(X)
#undef X
    }
    return "?";
}

static inline const char *blob_dtype_name(uint32_t dtype) {
    static const char *const names[] = {"?", "f32", "f16", "i64", "i32", "i8", "u8", "b1"};
    _Static_assert(sizeof names / sizeof names[0] == BLOB_DTYPE_LAST + 1, "dtype names");
    return dtype <= BLOB_DTYPE_LAST ? names[dtype] : "?";
}

/* Bytes per element; 0 for B1 (bit-packed) and unknown types. */
static inline size_t blob_dtype_size(uint32_t dtype) {
    static const unsigned char sizes[] = {0, 4, 2, 8, 4, 1, 1, 0};
    _Static_assert(sizeof sizes / sizeof sizes[0] == BLOB_DTYPE_LAST + 1, "dtype sizes");
    return dtype <= BLOB_DTYPE_LAST ? sizes[dtype] : 0;
}

/* Epilogues of bgemm / bconv. */
typedef enum {
    BLOB_EPI_I32 = 1,       /* out i32: the exact dot */
    BLOB_EPI_THRESHOLD = 2, /* out bits: dir[n] >= 0 ? dot >= t[n] : dot <= t[n] */
    BLOB_EPI_AFFINE = 3,    /* out f32: ((float)dot * scale[n]) + bias[n], rounded after each op */
} BlobEpilogue;

#define BLOB_EPI_MAX_STAGES 8 /* stages of a bconv's float chain (BlobBconvParams.epi_stages) */

/* Step flags. */
#define BLOB_STEP_CPU_ONLY 1u /* the GPU skips this step (its kernels do the work elsewhere) */
/* The step's kernel reads and writes activations only after griddepcontrol.wait, so the runtime
 * may launch it while the step before still runs (programmatic dependent launch, sm_90+). */
#define BLOB_STEP_PDL 2u
/* Another GPU configuration of the step before it (same kind, operands and parameters, another
 * kernel): the GPU runs this one instead of that one at batches >= alt_batch; the CPU path
 * skips it. */
#define BLOB_STEP_BATCH_ALT 4u
/* The GPU may run this step beside the D steps before it (D = flags >> BLOB_STEP_BESIDE_SHIFT,
 * 1..BLOB_STEP_BESIDE_MAX): it reads nothing they write and writes nothing they read. Such
 * steps come in runs of consecutive steps with the same fork (step index - D), after at least
 * one step without the flag; the step after a run waits for it. A kernel never writes its IN or
 * IN2 slot, so the compiler can tell reads from writes (docs/codegen.md "Runs beside the main
 * line"). The CPU path runs steps in order and ignores the flag. */
#define BLOB_STEP_BESIDE 8u
/* On every step of such a run: the GPU runs the D steps before the run on its side stream and
 * the run on the main line (the cheaper side goes beside; without the flag, the run does). */
#define BLOB_STEP_BESIDE_SWAP 16u
/* The step's kernel is in the sm_90a CUBIN only (wgmma): a GPU that loads another CUBIN skips
 * the step as if it were not there. Only on a batch alternative, which may then start at the
 * same batch as the alternative before it and replaces that one on sm_90a. */
#define BLOB_STEP_SM90A 32u
/* The step's kernel is persistent: its blocks walk its tiles with a stride of gridDim.x, one
 * block an SM, so the GPU launches min(grid x, its SM count) blocks in x (the grid stays the
 * kernel's upper bound: a block a tile). Each block then loads its next tile's operands during
 * the epilogue of the last one, and no SM waits for a last, partial round of whole blocks. */
#define BLOB_STEP_PERSISTENT 64u
/* The step's kernel walks its tiles with a stride of gridDim.y (any grid.y gives the same
 * result): the GPU launches in y at most one wave, the blocks that fit on it at once (its SMs
 * times the blocks of this kernel an SM holds, over grid x), at least 1. The grid stays the
 * bound. Each block then works until the tiles run out, so no SM idles through a last, partial
 * wave of blocks, and a block stages its weights once for many tiles. */
#define BLOB_STEP_ONE_WAVE 128u
#define BLOB_STEP_BESIDE_SHIFT 16
#define BLOB_STEP_BESIDE_MAX 255u
/* The fork of step i with these flags where it is BESIDE (i - D), else -1. */
static inline int blob_step_beside_fork(uint32_t flags, int i) {
    return (flags & BLOB_STEP_BESIDE) ? i - (int)(flags >> BLOB_STEP_BESIDE_SHIFT) : -1;
}

/* Where a tensor operand lives. */
typedef enum {
    BLOB_SPACE_NONE = 0,
    BLOB_SPACE_ARENA = 1,   /* per batch item: see BlobRef */
    BLOB_SPACE_WEIGHTS = 2, /* a range of the WEIGHTS section, shared by all items */
} BlobSpace;

/* A tensor operand. ARENA: offset and bytes are per batch item; for a batch of B the
 * tensor occupies [offset*B, (offset+bytes)*B) of the arena, item n at offset*B + n*bytes
 * (so a plan laid out for one item is valid for every B). WEIGHTS: absolute. */
typedef struct BlobRef {
    uint32_t space;
    uint32_t reserved;
    uint64_t offset;
    uint64_t bytes;
} BlobRef;

/* Operand slots a step's CPU semantics use; GPU kernel arguments may name any slot. */
enum {
    BLOB_SLOT_IN = 0,  /* main input (arena) */
    BLOB_SLOT_IN2 = 1, /* second input of add (arena or weights) */
    BLOB_SLOT_OUT = 2, /* output (arena) */
    BLOB_SLOT_W = 3,   /* weights (weights) */
    BLOB_SLOT_P0 = 4,  /* thresholds i32 / scale f32 / bias f32 (weights) */
    BLOB_SLOT_P1 = 5,  /* dir i32 / bias f32 (weights) */
    BLOB_SLOT_X0 = 6,  /* free for GPU-only operands (pre-tiled weights, ...) */
    BLOB_SLOT_X1 = 7,
};
/* The slots a GPU kernel only reads (BLOB_STEP_BESIDE's contract); it may write any other. */
static inline int blob_slot_read_only(int slot) { return slot == BLOB_SLOT_IN || slot == BLOB_SLOT_IN2; }

/* GPU kernel arguments, passed to cuLaunchKernel in order. */
typedef enum {
    BLOB_ARG_PTR = 1,   /* 8-byte device pointer of slot `slot` (its start for this batch) */
    BLOB_ARG_BATCH = 2, /* i32: the batch of this run times value (>= 1), e.g. GEMM rows */
    BLOB_ARG_I32 = 3,   /* i32 immediate (value) */
    BLOB_ARG_I64 = 4,   /* i64 immediate (value) */
    /* A 128-byte tensor map (bgemm_planes_tiled.cu's wgmma variant with PT_APLAIN) of slot
     * `slot` read as plain bit-planes [rows][xb][ld] u32 words, rows = the slot's bytes for
     * this batch / blob_tmap_planes_row_bytes(value); value = blob_tmap_planes_value(...). The
     * GPU encodes it for each batch (cuTensorMapEncodeTiled); only on BLOB_STEP_SM90A steps. */
    BLOB_ARG_TMAP_PLANES = 5,
} BlobArgKind;

/* BLOB_ARG_TMAP_PLANES's value: xb planes, kc 16-byte chunks and bm rows a box, ld words a
 * plane row. */
static inline int64_t blob_tmap_planes_value(int xb, int kc, int bm, int64_t ld) {
    return (int64_t)xb | (int64_t)kc << 8 | (int64_t)bm << 16 | ld << 32;
}
/* The bytes of one row (its xb planes) of such a value's operand. */
static inline uint64_t blob_tmap_planes_row_bytes(int64_t value) {
    return ((uint64_t)value & 255) * ((uint64_t)value >> 32) * 4;
}
/* The tensor map such a value describes over `rows` rows (docs/kernels.md, PT_APLAIN on
 * wgmma): rank 3 over u32 words, dims {ld, xb, rows}, byte strides {ld*4, xb*ld*4}, box
 * {kc*4, 1, bm}, 128-byte swizzle (so kc is 8). Returns the rank, 0 for a malformed value. */
static inline int blob_tmap_planes_geometry(int64_t value, uint64_t rows, uint64_t dims[3], uint64_t strides[2],
                                            uint32_t box[3]) {
    const uint64_t xb = (uint64_t)value & 255, kc = ((uint64_t)value >> 8) & 255, bm = ((uint64_t)value >> 16) & 65535,
                   ld = (uint64_t)value >> 32;
    if (xb < 1 || xb > 8 || kc != 8 || bm < 16 || bm > 256 || bm % 16 || ld < 4 || ld % 4 || ld > (1u << 24) ||
        rows < 1)
        return 0;
    dims[0] = ld, dims[1] = xb, dims[2] = rows;
    strides[0] = ld * 4, strides[1] = xb * ld * 4;
    box[0] = (uint32_t)kc * 4, box[1] = 1, box[2] = (uint32_t)bm;
    return 3;
}
/* The driver's cuTensorMapEncodeTiled as the runtime and the GPU tests open it (CUresult and
 * the CUtensorMap* enums as ints). */
typedef int (*BlobTmapEncodeFn)(void *map, int dtype, unsigned rank, void *base, const uint64_t *dims,
                                const uint64_t *strides, const uint32_t *box, const uint32_t *elem_strides,
                                int interleave, int swizzle, int l2_promotion, int oob_fill);
/* Encodes into map (128 bytes, 64-byte aligned) the tensor map of value over `rows` rows at
 * base through enc: enc's result (0 ok), or -1 for a malformed value. */
static inline int blob_tmap_planes_encode(BlobTmapEncodeFn enc, void *map, int64_t value, void *base, uint64_t rows) {
    enum { U32 = 2, INTERLEAVE_NONE = 0, SWIZZLE_128B = 3, L2_256B = 3, OOB_ZERO = 0 }; /* the driver's values */
    uint64_t dims[3], strides[2];
    uint32_t box[3], elem_strides[3] = {1, 1, 1};
    const int rank = blob_tmap_planes_geometry(value, rows, dims, strides, box);
    return rank ? enc(map, U32, (unsigned)rank, base, dims, strides, box, elem_strides, INTERLEAVE_NONE,
                      SWIZZLE_128B, L2_256B, OOB_ZERO)
                : -1;
}

typedef struct BlobArg {
    uint32_t kind;
    uint32_t slot;
    int64_t value;
} BlobArg;

/* One grid dimension: base + ceil(batch * per_batch / div). */
typedef struct BlobGridDim {
    uint32_t base, per_batch, div;
} BlobGridDim;

/* Parameters of each step kind, all int64 (params[] on disk, in this order). */
typedef struct { int64_t channels, spatial, words, zero, layout; } BlobPackParams;
typedef struct { int64_t channels, spatial, words, layout; } BlobUnpackParams;
/* bgemm: in_tile 0 reads A row-major (`words` words a row), 128 tile-major (below; words =
 * the padded K / 32, a multiple of 32); w_tile 0 or 256 likewise for W (both tiled or neither);
 * out_tile 128 writes the threshold epilogue's bits tile-major (out_words a multiple of 32). */
typedef struct { int64_t rows, n, k, words, out_words, in_tile, w_tile, out_tile; } BlobBgemmParams;
/* retile: the bit rows of a b1 value (rows per item, k bits each) from one layout to another;
 * *_tile 0: row-major, *_ld bytes a row (>= ceil(k/8)); 128 or 256: tile-major with *_ld =
 * 16 * chunks a row. Bits past k are written as zeros, and so is every byte up to *_ld. */
typedef struct { int64_t rows, k, in_tile, in_ld, out_tile, out_ld; } BlobRetileParams;

/* The tile-major layout of R rows of bits (docs/blob-format.md, "Tile-major bits"): row
 * tiles of tr rows, each row's bits in nch 16-byte chunks (LSB-first, zero past the true
 * length), chunk-major inside a tile: [row tile][chunk][row][16 B]. The last tile holds only
 * the rows that exist, so R rows take exactly R * nch * 16 bytes. Byte offset of chunk c of
 * row r (this is what the pre-tiled GEMM kernels load, one bulk copy a stage). */
static inline uint64_t blob_tiled_offset(int64_t r, int64_t c, int64_t rows, int64_t tr, int64_t nch) {
    int64_t t = r / tr, in_tile = rows - t * tr < tr ? rows - t * tr : tr;
    return ((uint64_t)(t * tr) * (uint64_t)nch + (uint64_t)(c * in_tile) + (uint64_t)(r % tr)) * 16u;
}
/* Byte b of row r of `rows` rows stored with `ld` bytes a row: row-major (tr 0) or tile-major. */
static inline uint64_t blob_row_byte(int64_t r, int64_t b, int64_t rows, int64_t tr, int64_t ld) {
    if (!tr)
        return (uint64_t)r * (uint64_t)ld + (uint64_t)b;
    return blob_tiled_offset(r, b / 16, rows, tr, ld / 16) + (uint64_t)(b % 16);
}
typedef struct {
    int64_t h, w, c, words, o, kh, kw, stride_h, stride_w, pad_top, pad_left, pad_bottom,
        pad_right, pad_value, dil_h, dil_w, oh, ow, pool, out_words, out_layout;
    /* The float chain of an AFFINE epilogue (docs/blob-format.md, "bconv"); epi_stages 0: the
     * plain one, p0 scale and p1 bias. With a THRESHOLD epilogue, epi_residual >> 2 > 0 (its
     * words a pixel) makes it a threshold by a residual of bits: p0 t[2][o], p1 dir[2][o], row
     * 1 where the residual's bit of the channel is 1, row 0 where it is 0. */
    int64_t epi_stages, epi_div, epi_residual;
} BlobBconvParams;
/* The float chain of a bconv (epi_stages > 0) on a dot: v = (float)dot, each stage v * a (or
 * v / a where bit k of epi_div) then + b (ep [epi_stages][2][o]), then the residual r added on
 * its side (epi_residual & 3: 1 v + r, 2 r + v); one rounding per operation. The CPU path runs
 * it, and the compiler scans it for the thresholds by a residual of bits: one definition. */
static inline float blob_bconv_chain_value(const BlobBconvParams *p, const float *ep, int64_t o, int64_t dot,
                                           float r) {
    float v = (float)dot;
    for (int64_t k = 0; k < p->epi_stages; k++) {
        float a = ep[2 * k * p->o + o], b = ep[(2 * k + 1) * p->o + o];
        float t = (p->epi_div >> k) & 1 ? v / a : v * a;
        v = t + b;
    }
    if ((p->epi_residual & 3) == 1)
        v = v + r;
    else if ((p->epi_residual & 3) == 2)
        v = r + v;
    return v;
}
typedef struct { int64_t rows, n, k; } BlobDenseParams;
typedef struct {
    int64_t c, h, w, o, kh, kw, stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right,
        dil_h, dil_w, groups, oh, ow;
    /* epi_stages > 0: each sum (+ bias) runs through the epi_stages stages of in2 (v*a + b,
     * v/a + b where bit s of epi_div, then a relu where bit s of epi_relu) before it is stored
     * (docs/blob-format.md "conv2d"). out_words > 0: the step writes bits, not f32 (a
     * conv2d_chain whose float value nobody reads): bit = v > 0 || (v == 0 && zero),
     * NHWC-packed, out_words words a pixel; nan_flags 1 (for a maxpool of bits, which a NaN
     * turns to 0): out_words more words a pixel after those, bit c set where v is NaN.
     * levels > 0 (with out_words; blobs from 2026-11-29 on): codes instead of bits, a
     * conv2d_chain's quantizer of hi - lo = levels levels (blob_conv2d_chain_code), as
     * blob_code_planes(levels) planes of out_words words a pixel, then the NaN flags. */
    int64_t out_words, epi_stages, epi_div, epi_relu, zero, nan_flags, levels;
} BlobConv2dParams;
/* The value of a conv2d step's output channel o after its float chain (epi_stages > 0): v (sum +
 * bias) through the stages of chain ([epi_stages][2][o]), v*a + b (v/a + b where bit s of
 * epi_div), each operation rounded on its own, then max(v, 0) where bit s of epi_relu. */
static inline float blob_conv2d_chain_value(const BlobConv2dParams *p, const float *chain, int64_t o, float v) {
    for (int64_t s = 0; s < p->epi_stages; s++) {
        float a = chain[2 * s * p->o + o], k = chain[(2 * s + 1) * p->o + o];
        float t = (p->epi_div >> s) & 1 ? v / a : v * a;
        v = t + k;
        if ((p->epi_relu >> s) & 1)
            v = v < 0.0f ? 0.0f : v;
    }
    return v;
}
/* The bit of a conv2d step with out_words > 0 for output channel o whose value (sum + bias) is
 * v: its chain value (blob_conv2d_chain_value), binarized; 1 or 0, -1 for NaN. The CPU path
 * runs it, and the compiler bisects it for the GPU kernel's thresholds: one definition, so
 * both read the format alike. */
static inline int blob_conv2d_chain_bit(const BlobConv2dParams *p, const float *chain, int64_t o, float v) {
    v = blob_conv2d_chain_value(p, chain, o, v);
    return v != v ? -1 : v > 0.0f || (v == 0.0f && p->zero);
}

/* QONNX rounding of v by a BLOB_ROUND_* mode (ties decided on v - trunc(v)); the CPU path's
 * and the compiler's, one definition. */
static inline float blob_round(float v, int64_t mode) {
    float t = truncf(v), frac = fabsf(v - t), away = v < 0 ? t - 1.0f : t + 1.0f;
    switch (mode) {
    case 1: return ceilf(v);                         /* BLOB_ROUND_CEIL */
    case 2: return floorf(v);                        /* FLOOR */
    case 3: return t;                                /* TO_ZERO */
    case 4: return v < 0 ? floorf(v) : ceilf(v);     /* UP */
    case 5: return frac >= 0.5f ? away : t;          /* HALF_UP */
    case 6: return frac > 0.5f ? away : t;           /* HALF_DOWN */
    default: return nearbyintf(v);                   /* half to even */
    }
}
/* QONNX Quant's level of v: q = clamp(round(v / scale + zeropt), lo, hi), each operation
 * rounded on its own; NaN stays NaN (its code is 0, its float NaN). */
static inline float blob_quantize(float v, float scale, float zeropt, float lo, float hi, int64_t mode) {
    float q = blob_round(v / scale + zeropt, mode);
    return q < lo ? lo : q > hi ? hi : q;
}
/* Quant's float of level q (blob_quantize's): (q - zeropt) * scale, each operation rounded on
 * its own: what the CPU path writes as a dequantized value, and what the compiler's tables by a
 * residual code assume it wrote (lower.c rcode_float). */
static inline float blob_dequantize(float q, float scale, float zeropt) { return (q - zeropt) * scale; }
/* Planes of codes 0 .. levels: the bits to hold levels. */
static inline int64_t blob_code_planes(int64_t levels) {
    int64_t b = 1;
    while ((1ll << b) - 1 < levels)
        b++;
    return b;
}
/* A conv2d step with levels > 0: in2 holds the chain ([epi_stages][2][o]), then per channel
 * ||w||_2 [o], the GPU kernel's thresholds [levels][o] and their sign [o], then these
 * BLOB_CONV2D_QUANT_WORDS words: the quantizer clamp(round(v / scale + zeropt), lo, hi) with
 * hi - lo = levels (docs/blob-format.md "conv2d"). */
enum { BLOB_CONV2D_Q_LO, BLOB_CONV2D_Q_HI, BLOB_CONV2D_Q_ROUNDING, BLOB_CONV2D_Q_SCALE, BLOB_CONV2D_Q_ZEROPT,
       BLOB_CONV2D_QUANT_WORDS };
static inline int64_t blob_conv2d_quant_at(const BlobConv2dParams *p) {
    return (2 * p->epi_stages + 2 + p->levels) * p->o;
}
/* The code of a conv2d step with levels > 0 for output channel o whose value (sum + bias) is v:
 * its chain value quantized, the level index q - lo, as quantize computes it; -1 for NaN. The
 * CPU path runs it, and the compiler bisects it for the GPU kernel's thresholds. */
static inline int blob_conv2d_chain_code(const BlobConv2dParams *p, const float *chain, int64_t o, float v) {
    int32_t qd[BLOB_CONV2D_QUANT_WORDS]; /* the words as they are: lo, hi and rounding are int32 */
    memcpy(qd, chain + blob_conv2d_quant_at(p), sizeof qd);
    float scale, zeropt;
    memcpy(&scale, &qd[BLOB_CONV2D_Q_SCALE], 4);
    memcpy(&zeropt, &qd[BLOB_CONV2D_Q_ZEROPT], 4);
    float lo = (float)qd[BLOB_CONV2D_Q_LO];
    float q = blob_quantize(blob_conv2d_chain_value(p, chain, o, v), scale, zeropt, lo,
                            (float)qd[BLOB_CONV2D_Q_HI], qd[BLOB_CONV2D_Q_ROUNDING]);
    return q != q ? -1 : (int)(q - lo);
}

/* conv2d's optional p1 (bnncc --float-convs=fp16|fp16x3, or bits out): the weights as IEEE
 * fp16 for the GPU's tensor-core kernel, [1 or 2 planes][O rounded up to BLOB_F16_ROWS][KP],
 * zero padded (groups 1), k in one of these orders, which only the blob's own kernel reads:
 * (c, ky, kx), KP = C*KH*KW rounded up to BLOB_F16_COLS (older blobs everywhere); or, where C
 * <= BLOB_F16_CMAX, k = ky*KWP + kx*PS + c: PS slots a tap (C, or C rounded up to even; zeros
 * past C), KWP = KW*PS rounded up to even (a zero past a kernel row's last tap), KP = KH*KWP
 * rounded up (blobs of bnncc 58407fd to 2026-11-27 have PS = C rounded up to even everywhere).
 * The kernel reads k two at a time as a pair of halves of its staged input: PS = C (no
 * padding channel: 10 k steps of 16 for a 7x7 RGB stem, not 13) where every pair falls on
 * whole words there, i.e. C even, or stride_w * C even with dil_w 1. */
#define BLOB_F16_ROWS 64
#define BLOB_F16_COLS 16
#define BLOB_F16_CMAX 4
typedef struct {
    int64_t ps, kwp, kp; /* ps 0: the (c, ky, kx) order */
} BlobConv2dF16Order;
/* The order bnncc writes p1 in. */
static inline BlobConv2dF16Order blob_conv2d_f16_order(const BlobConv2dParams *p) {
    BlobConv2dF16Order r = {0, 0, 0};
    int64_t k = p->c * p->kh * p->kw;
    if (p->c <= BLOB_F16_CMAX) {
        r.ps = p->c % 2 == 0 || (p->stride_w * p->c % 2 == 0 && p->dil_w == 1) ? p->c : p->c + 1;
        r.kwp = (p->kw * r.ps + 1) / 2 * 2;
        k = p->kh * r.kwp;
    }
    r.kp = (k + BLOB_F16_COLS - 1) / BLOB_F16_COLS * BLOB_F16_COLS;
    return r;
}
/* affine: y = x * scale[c] + bias[c], or with div = 1 y = x / scale[c] + bias[c] (an exact
 * ONNX Div by a constant), each operation rounded on its own. */
typedef struct { int64_t channels, spatial, layout, div; } BlobAffineParams;
/* maxpool with words > 0: of NHWC-packed bits, `words` a pixel in and out_words (>= words,
 * the rest zero) out; the max of +-1 values is the OR of the window's bits. nan_flags 1: each
 * input pixel has `words` more words of NaN flags (conv2d's), and a window with a NaN gives 0
 * (the max of floats is NaN there, whose bit is 0). planes > 0 (blobs from 2026-11-29 on): of
 * codes, a conv2d step's with levels: `planes` planes of `words` words a pixel in (then the NaN
 * flags), the max code of each window out as image planes [planes][oh * ow][out_words] of
 * blob_image_plane_words each (the qconv operand), code 0 where the window has a NaN; x0
 * (optional) the quantizer's float of the max, f32 [c][oh][ow]: ((code + lo) - zeropt) * scale,
 * NaN where the window has one (zeropt and scale float32 bit patterns). */
typedef struct {
    int64_t c, h, w, kh, kw, stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right, oh,
        ow, count_include_pad, words, out_words, nan_flags, planes, lo, scale_bits, zeropt_bits;
} BlobPoolParams;
/* globalavgpool: words 0, in f32 [C][S]; words > 0, in b1 NHWC-packed, `words` a pixel, +-1 values
 * (blobs before this field have it 0). */
typedef struct { int64_t channels, spatial, words; } BlobGapParams;
typedef struct { int64_t count, dtype; } BlobAddParams;
typedef struct { int64_t count; } BlobCountParams; /* relu */
typedef struct { int64_t bytes; } BlobCopyParams;
typedef struct { int64_t rows, n; } BlobArgmaxParams;
/* softmax over the last axis of rows x n f32: exp(x - max) / sum, the sum in float32 in
 * ascending order (the reference interpreter's order). */
typedef struct { int64_t rows, n; } BlobSoftmaxParams;
typedef struct { int64_t count, from, to; } BlobCastParams;
/* quantize: QONNX Quant's q = clamp(round(x / scale + zeropt), lo, hi) of each f32 of an item's
 * [rows][k]; dequant 0: the level index n = q - lo as `bits` bit-planes [rows][bits][ld];
 * dequant 1: Quant's f32 result (q - zeropt) * scale, [rows][k] (ld, bits unused). scale and
 * zeropt are float32 bit patterns, rounding a BLOB_ROUND_*. spatial > 0 (image planes, the
 * qconv operand; rows 1, dequant 0): the item is NCHW, k / spatial channels x spatial pixels,
 * and each of the `bits` planes is [spatial][ld] (ld words per pixel, channel c at bit c%32 of
 * word c/32) in blob_image_plane_words(spatial, ld) words, the tail zero. format
 * BLOB_CODES_INT8 (dequant 0, spatial 0, bits <= 8): the level indices as bytes instead,
 * [rows][ld] u8 with ld = blob_int8_ld(k) bytes, the bytes past k zero (the int8 qgemm's in). */
typedef struct {
    int64_t rows, k, ld, bits, lo, hi, rounding, scale_bits, zeropt_bits, dequant, spatial, format;
} BlobQuantizeParams;
/* qgemm: acc = sum_p sum_q c_q 2^(p+q) popc(in_p AND w_q) over an item's [rows][xb][ld] planes
 * and the weights' [wb][n][ld]; epi 1: out i32 [rows][n]; 2: the level counts against p0 =
 * t i32[n][levels], p1 = dir i32[n] as yb planes [rows][yb][ldy], ldy = n rounded up to 256
 * bits; 3: the counts as i32 [rows][n]. format BLOB_CODES_INT8 (docs/kernels.md "Low-bit layers
 * on int8 MMA"): in [rows][ld] u8 codes (< 2^xb, xb <= 8), w [n][ld] s8 codes (wb <= 8; one
 * byte each, +-1 when bipolar), ld = blob_int8_ld(K) bytes with zero bytes past K, and
 * acc = sum_k in[k] * w[k]. yformat (epi 2): BLOB_CODES_PLANES the planes above,
 * BLOB_CODES_INT8 the counts as bytes [rows][blob_int8_ld(n)] (yb <= 8, zero bytes past n). */
typedef struct {
    int64_t rows, n, ld, xb, wb, wsigned, bipolar, epi, levels, yb, format, yformat;
} BlobQgemmParams;
/* How low-bit codes are stored (quantize, qgemm): 0 bit-planes, 1 one byte a code. */
enum { BLOB_CODES_PLANES = 0, BLOB_CODES_INT8 = 1 };
/* Bytes of a row of int8 codes for k codes: k rounded up to 64 (two k32 MMA steps; every row
 * starts 64-byte aligned). */
static inline int64_t blob_int8_ld(int64_t k) { return (k + 63) / 64 * 64; }
/* An int8 dense step's x0 (the GPU kernel's levels, each channel's t ^ m sorted ascending) with
 * BLOB_Q8_EST_LEVELS levels or more holds after them, for each channel n, 4 words that estimate
 * its count (bnncc from 2026-12-03 stop 61), from word blob_q8_est_at (the levels rounded up to
 * 16 bytes, zero words between): {lo, per (f32 bits), first, last} with first the
 * levels every sum reaches (INT32_MIN), last the levels below those no sum reaches (INT32_MAX),
 * lo the first level between and per (last - first - 1) / (its last - lo). A batch-norm folded
 * into a uniform quantizer spaces the levels evenly up to their rounding, so the count of levels
 * <= v is within one of min(max(first + 1 + floor((v - lo) * per), first), last): the kernel
 * checks that with four loads around the estimate, where a binary search of 255 levels takes 8
 * dependent ones (q8_levels.cu bnn_q8_count_near). */
enum { BLOB_Q8_EST_LEVELS = 128, BLOB_Q8_EST_WORDS = 4 };
static inline int64_t blob_q8_est_at(int64_t n, int64_t levels) { return (n * levels + 3) / 4 * 4; }
/* x0's bytes for an int8 dense step of n channels and levels levels. */
static inline int64_t blob_q8_levels_bytes(int64_t n, int64_t levels) {
    return levels >= BLOB_Q8_EST_LEVELS ? (blob_q8_est_at(n, levels) + n * BLOB_Q8_EST_WORDS) * 4 : n * levels * 4;
}
static inline void blob_q8_level_estimate(const int32_t *u, int64_t levels, int32_t est[BLOB_Q8_EST_WORDS]) {
    int64_t first = 0, last = levels;
    while (first < levels && u[first] == INT32_MIN)
        first++;
    while (last > first && u[last - 1] == INT32_MAX)
        last--;
    float per = 0.0f;
    if (last - first >= 2 && u[last - 1] > u[first])
        per = (float)((double)(last - first - 1) / ((double)u[last - 1] - (double)u[first]));
    est[0] = last > first ? u[first] : 0;
    memcpy(&est[1], &per, 4);
    est[2] = (int32_t)first;
    est[3] = (int32_t)last;
}
/* qconv: qconv2d over image planes (docs/blob-format.md): in xb planes of round8(h*w*ldw) words
 * per item, a plane [h*w][ldw] (ldw words per pixel: 1, 2, 4 or a multiple of 8); weights
 * [wb][o][round8(kh*kw*ldw)], the taps' words in a row (planes as qgemm's: two's complement
 * when wsigned, one +-1 plane when bipolar); a tap outside the image reads pad_code in every
 * real channel. epi 1: out i32 NCHW [o][oh*ow]; 2: the level counts against p0 = t
 * i32[o][levels], p1 = dir i32[o] as yb planes of round8(oh*ow*ldy) words, [oh*ow][ldy] each
 * (one plane with ldy a multiple of 8: the NHWC-packed bits of a b1 value). round8: up to a
 * multiple of 8 words, the tail zero. */
typedef struct {
    int64_t c, h, w, o, kh, kw, stride_h, stride_w, pad_top, pad_left, dil_h, dil_w, oh, ow, ldw,
        xb, wb, wsigned, bipolar, epi, levels, yb, pad_code, ldy;
} BlobQconvParams;
/* qconv epi 3 (a qconv2d_chain's float chain): p0 f32 [stages][2][o] stage constants, p1 this
 * descriptor, i32[BLOB_QCHAIN_WORDS] in the weights (docs/blob-format.md "qconv"). */
enum {
    BLOB_QCHAIN_STAGES,   /* 1..BLOB_EPI_MAX_STAGES */
    BLOB_QCHAIN_DIV,      /* bit k: stage k divides */
    BLOB_QCHAIN_RELU,     /* bit k: a relu after stage k */
    BLOB_QCHAIN_RESIDUAL, /* 0 none, 1 v + r, 2 r + v (r: in2, f32 NCHW) */
    BLOB_QCHAIN_OUT_RELU, /* 0/1: a relu after the residual */
    BLOB_QCHAIN_F32,      /* 0 no f32 out, 1 v, 2 the quantizer's float (q - zeropt) * scale */
    BLOB_QCHAIN_QUANT,    /* 0/1: the quantizer below is used (codes as yb planes, or F32 2) */
    BLOB_QCHAIN_LO,       /* the quantizer: clamp(round(v / scale + zeropt), lo, hi) */
    BLOB_QCHAIN_HI,
    BLOB_QCHAIN_ROUNDING, /* a BLOB_ROUND_* */
    BLOB_QCHAIN_SCALE,    /* float32 bit patterns */
    BLOB_QCHAIN_ZEROPT,
    BLOB_QCHAIN_WORDS
};
#define BLOB_QCONV_EPI_CHAIN 3
/* The float chain of qconv epi 3 (descriptor d, stages ep of an o_count-channel layer) for
 * channel o on the exact accumulator acc, r its residual: each stage v * a (v / a where its DIV
 * bit) + b, then a relu where its RELU bit; the residual on its side; the relu after it; each
 * operation rounded on its own. *q: the quantizer's level (NaN for a NaN value) where d has
 * QUANT. The CPU path runs it, and the compiler bisects its codes for the thresholds by a
 * residual code (lower.c): one definition. */
static inline float blob_qconv_chain_value(const int32_t *d, const float *ep, int64_t o_count, int64_t o,
                                           int64_t acc, float r, float *q) {
    float v = (float)acc;
    for (int32_t k = 0; k < d[BLOB_QCHAIN_STAGES]; k++) {
        float a = ep[2 * k * o_count + o], b = ep[(2 * k + 1) * o_count + o];
        float t = (d[BLOB_QCHAIN_DIV] >> k) & 1 ? v / a : v * a;
        v = t + b;
        if ((d[BLOB_QCHAIN_RELU] >> k) & 1)
            v = v < 0.0f ? 0.0f : v;
    }
    if (d[BLOB_QCHAIN_RESIDUAL] == 1)
        v = v + r;
    else if (d[BLOB_QCHAIN_RESIDUAL] == 2)
        v = r + v;
    if (d[BLOB_QCHAIN_OUT_RELU])
        v = v < 0.0f ? 0.0f : v;
    *q = 0.0f;
    if (d[BLOB_QCHAIN_QUANT]) {
        float scale, zeropt;
        uint32_t sb = (uint32_t)d[BLOB_QCHAIN_SCALE], zb = (uint32_t)d[BLOB_QCHAIN_ZEROPT];
        memcpy(&scale, &sb, 4);
        memcpy(&zeropt, &zb, 4);
        *q = blob_quantize(v, scale, zeropt, (float)d[BLOB_QCHAIN_LO], (float)d[BLOB_QCHAIN_HI],
                           d[BLOB_QCHAIN_ROUNDING]);
    }
    return v;
}
/* The fast test of a qconv2d_chain whose residual is a 1x1 downsample D computed in its kernel
 * (qconv.cu QC_RESD_FAST, docs/kernels.md "The downsample's fast test"): per channel a row of
 * BLOB_QRESD_WORDS words. For D's dot d the code is a step function of the accumulator v (the
 * chain is monotone in v: clean constants): level l is reached where v' = sgn * v >= T_l(d),
 * T_l(d) in [-a, a + 1] (-a: reached for every v, a + 1: for none), and monotone in d. Where T_l
 * lies inside, for d in [il_l, ih_l], x = fmaf(kappa, d, v') (correctly rounded, so monotone in
 * v') decides: with lo_l the least fmaf(kappa, d, T_l(d)) and hi_l the largest fmaf(kappa, d,
 * T_l(d) - 1) over that interval, x > hi_l proves v' >= T_l(d) and x < lo_l proves v' < T_l(d);
 * between, the kernel runs the chains. For d below il_l (above ih_l) the level is reached for
 * every v or for none, as bit 2l (2l + 1) of the ends word says; a level of one status at every d
 * is inside everywhere instead, with lo_l = hi_l = -inf (reached) or +inf (not), so that the
 * kernel's test of d against the levels' common interval passes it. kappa = alpha_D / |alpha| (each
 * chain's product of factors and reciprocal divisors) makes T_l(d) + kappa * d nearly flat, so
 * the band between lo_l and hi_l is narrow. Levels past the quantizer's are never reached. */
enum {
    BLOB_QRESD_KAPPA,
    BLOB_QRESD_SIGN,   /* sgn: 1 where the codes rise with v, -1 where they fall */
    BLOB_QRESD_ENDS,   /* int32 bits */
    BLOB_QRESD_LEVEL = 4, /* level l: lo_l, hi_l, il_l, ih_l (int32 bits) at 4 + 4l, l < 3 */
    BLOB_QRESD_WORDS = 20 /* (channels 2 apart 40 words apart: 4 distinct bank groups) */
};
/* The slope of a chain's stages for channel o: the product of its factors and of its divisors'
 * reciprocals (blob_qresd_fast_row's alpha). */
static inline double blob_qchain_slope(const int32_t *d, const float *ep, int64_t o_count, int64_t o) {
    double alpha = 1.0;
    for (int32_t k = 0; k < d[BLOB_QCHAIN_STAGES]; k++) {
        double f = ep[2 * k * o_count + o];
        alpha *= (d[BLOB_QCHAIN_DIV] >> k) & 1 ? 1.0 / f : f;
    }
    return alpha;
}
/* Whether accumulator v with residual r gives a code of level l or more (up; with !up, less):
 * blob_qresd_fast_row's predicate, false below its threshold and true from it on. */
static inline int blob_qresd_past(const int32_t *d, const float *ep, int64_t o_count, int64_t o, int64_t v, float r,
                                  int64_t l, int up) {
    float q;
    blob_qconv_chain_value(d, ep, o_count, o, v, r, &q);
    return ((int64_t)(q - (float)d[BLOB_QCHAIN_LO]) >= l) == up;
}
/* Level l's words of a fast row: lo_l, hi_l and the interval [il_l, ih_l] (int32 bits). */
static inline void blob_qresd_set_level(float *row, int64_t l, float lo, float hi, int32_t il, int32_t ih) {
    row[BLOB_QRESD_LEVEL + 4 * l] = lo;
    row[BLOB_QRESD_LEVEL + 4 * l + 1] = hi;
    memcpy(&row[BLOB_QRESD_LEVEL + 4 * l + 2], &il, 4);
    memcpy(&row[BLOB_QRESD_LEVEL + 4 * l + 3], &ih, 4);
}
/* The row of channel o (of o_count) of a chain with descriptor d and stages ep (its residual D's
 * value: D's descriptor d1, stages ep1), |accumulators| at most a, |D's dots| at most a1;
 * scratch: 3 * (2 * a1 + 1) ints. Each threshold is found with blob_qconv_chain_value, as the
 * CPU path computes both chains: searched from the previous d's, then by bisection. Returns 1, or
 * 0 for a row that leaves every element to the chains (D's value not finite, or the codes not a
 * monotone step of v and d). */
static inline int blob_qresd_fast_row(const int32_t *d, const float *ep, int64_t o_count, int64_t o, int64_t a,
                                      const int32_t *d1, const float *ep1, int64_t a1, float *row, int32_t *scratch) {
    const int64_t levels = d[BLOB_QCHAIN_HI] - d[BLOB_QCHAIN_LO], nd = 2 * a1 + 1;
    const float inf = INFINITY;
    const double alpha = blob_qchain_slope(d, ep, o_count, o), alpha1 = blob_qchain_slope(d1, ep1, o_count, o);
    const int up = alpha > 0.0;
    const float kappa = (float)(alpha1 / fabs(alpha));
    int32_t ends = 0;
    for (int i = 0; i < BLOB_QRESD_WORDS; i++)
        row[i] = 0.0f;
    row[BLOB_QRESD_KAPPA] = kappa;
    row[BLOB_QRESD_SIGN] = up ? 1.0f : -1.0f;
    for (int l = 0; l < 3; l++) /* never reached, at every d */
        blob_qresd_set_level(row, l, inf, inf, INT32_MIN, INT32_MAX);
    int ok = levels <= 3 && isfinite(kappa) && alpha != 0.0;
    for (int64_t i = 0; ok && i < nd; i++) { /* T_l(d), folded */
        float q, r = blob_qconv_chain_value(d1, ep1, o_count, o, i - a1, 0.0f, &q);
        if (!isfinite(r))
            ok = 0;
        /* a step of v in the direction of the factors: the code at v' = a at least that at -a */
        blob_qconv_chain_value(d, ep, o_count, o, up ? -a : a, r, &q);
        const int64_t first = (int64_t)(q - (float)d[BLOB_QCHAIN_LO]);
        blob_qconv_chain_value(d, ep, o_count, o, up ? a : -a, r, &q);
        if ((int64_t)(q - (float)d[BLOB_QCHAIN_LO]) < first)
            ok = 0;
        for (int64_t l = 1; ok && l <= levels; l++) {
            /* up: the first v of a code >= l; down: the first of a code < l (blob_qresd_past turns
             * from false to true once over [-a, a + 1)). Searched from the previous d's answer,
             * which the next one's is near (T moves by about kappa a step): a bracket [b0, b1]
             * around it by doubling steps, then bisection, as from [-a, a + 1]. */
            int64_t b0 = -a, b1 = a + 1;
            if (i > 0) {
                const int32_t t = scratch[(l - 1) * nd + i - 1];
                const int64_t s0 = (up ? t : 1 - t) > a ? a : (up ? t : 1 - t); /* (a + 1: none then) */
                int64_t step = 1;
                if (blob_qresd_past(d, ep, o_count, o, s0, r, l, up)) {
                    b1 = s0; /* true at s0: the first true lies at or below it */
                    for (int64_t v = s0 - 1; v >= -a; v -= step, step *= 2) {
                        if (!blob_qresd_past(d, ep, o_count, o, v, r, l, up)) {
                            b0 = v + 1;
                            break;
                        }
                        b1 = v;
                    }
                } else { /* false at s0: above it */
                    b0 = s0 + 1;
                    for (int64_t v = s0 + 1; v <= a; v += step, step *= 2) {
                        if (blob_qresd_past(d, ep, o_count, o, v, r, l, up)) {
                            b1 = v;
                            break;
                        }
                        b0 = v + 1;
                    }
                }
            }
            while (b0 < b1) {
                int64_t mid = b0 + (b1 - b0) / 2;
                if (blob_qresd_past(d, ep, o_count, o, mid, r, l, up))
                    b1 = mid;
                else
                    b0 = mid + 1;
            }
            scratch[(l - 1) * nd + i] = (int32_t)(up ? b0 : 1 - b0);
        }
    }
    for (int64_t l = 0; ok && l < levels; l++) {
        const int32_t *t = scratch + l * nd;
        int64_t il = 0, ih = -1, i = 0; /* the interval of d where T lies inside (il > ih: none) */
        while (i < nd && (t[i] <= -a || t[i] >= a + 1))
            i++;
        il = i;
        while (i < nd && t[i] > -a && t[i] < a + 1)
            i++;
        ih = i - 1;
        if (il == nd) /* nowhere inside: the d where the ends' status changes */
            for (il = 1; il < nd && (t[il] <= -a) == (t[0] <= -a); il++)
                ;
        if (il > ih)
            ih = il - 1;
        for (int64_t k = 0; k < nd; k++) { /* outside the interval, one status a side (T monotone in d) */
            const int clamped = t[k] <= -a || t[k] >= a + 1;
            if ((k < il && (!clamped || (t[k] <= -a) != (t[0] <= -a))) ||
                (k > ih && (!clamped || (t[k] <= -a) != (t[nd - 1] <= -a))))
                ok = 0;
        }
        ends |= (t[0] <= -a) << (2 * l) | (t[nd - 1] <= -a) << (2 * l + 1);
        float glo = inf, hhi = -inf;
        for (int64_t k = il; k <= ih; k++) {
            const float g = fmaf(kappa, (float)(k - a1), (float)t[k]), h = fmaf(kappa, (float)(k - a1), (float)t[k] - 1.0f);
            glo = g < glo ? g : glo;
            hhi = h > hhi ? h : hhi;
        }
        const float every = (ends >> (2 * l) & 1) ? -inf : inf; /* the bounds of one status at every d */
        if (il > ih && (ends >> (2 * l) & 1) == (ends >> (2 * l + 1) & 1))
            blob_qresd_set_level(row, l, every, every, INT32_MIN, INT32_MAX); /* decided by them, inside everywhere */
        else
            blob_qresd_set_level(row, l, glo, hhi, (int32_t)(il - a1), (int32_t)(ih - a1));
    }
    if (!ok) { /* every element to the chains: inside everywhere, between the bounds always */
        for (int64_t l = 0; l < 3; l++)
            blob_qresd_set_level(row, l, -inf, inf, INT32_MIN, INT32_MAX);
        ends = 0;
    }
    memcpy(&row[BLOB_QRESD_ENDS], &ends, 4);
    return ok;
}
/* Words of an image plane (quantize with spatial > 0, qconv): pixels * ldw rounded up to 8. */
static inline int64_t blob_image_plane_words(int64_t pixels, int64_t ldw) { return (pixels * ldw + 7) / 8 * 8; }
/* Rounding modes of BlobQuantizeParams (docs/ir.md quant). */
enum {
    BLOB_ROUND_HALF_EVEN = 0, BLOB_ROUND_CEIL = 1, BLOB_ROUND_FLOOR = 2, BLOB_ROUND_TO_ZERO = 3,
    BLOB_ROUND_UP = 4, BLOB_ROUND_HALF_UP = 5, BLOB_ROUND_HALF_DOWN = 6
};

/* Layouts of per-channel data: 0 channel-major [C][S] (NCHW), 1 channel-minor [S][C] (NHWC). */
enum { BLOB_LAYOUT_CS = 0, BLOB_LAYOUT_SC = 1 };

/* A plan step in memory; the writer serializes it field by field, little-endian. */
typedef struct BlobStep {
    uint32_t kind;     /* BlobStepKind */
    uint32_t epilogue; /* BlobEpilogue for bgemm/bconv, else 0 */
    uint32_t flags;    /* BLOB_STEP_* */
    uint32_t alt_batch; /* BLOB_STEP_BATCH_ALT: the smallest batch it runs at (>= 2); else 0 */
    char kernel[BLOB_KERNEL_NAME_SIZE]; /* GPU kernel name; "" = none */
    BlobGridDim grid[3];
    uint32_t block[3];
    uint32_t smem; /* dynamic shared memory bytes */
    uint32_t nargs;
    BlobArg args[BLOB_MAX_ARGS];
    BlobRef slot[BLOB_MAX_SLOTS];
    union {
        int64_t params[BLOB_MAX_PARAMS];
        BlobPackParams pack;
        BlobUnpackParams unpack;
        BlobBgemmParams bgemm;
        BlobBconvParams bconv;
        BlobDenseParams dense;
        BlobConv2dParams conv2d;
        BlobAffineParams affine;
        BlobPoolParams pool;
        BlobGapParams gap;
        BlobAddParams add;
        BlobCountParams relu;
        BlobCopyParams copy;
        BlobArgmaxParams argmax;
        BlobSoftmaxParams softmax;
        BlobCastParams cast;
        BlobQuantizeParams quantize;
        BlobQgemmParams qgemm;
        BlobQconvParams qconv;
        BlobRetileParams retile;
    };
} BlobStep;

/* Byte offsets inside a step record (BLOB_STEP_SIZE bytes): kind 0, epilogue 4, flags 8,
 * alt_batch 12, then these. The writer encodes and the runtime decodes with them. */
enum {
    BLOB_STEP_KERNEL_AT = 16,
    BLOB_STEP_GRID_AT = 80,  /* 3 x {base, per_batch, div} u32 */
    BLOB_STEP_BLOCK_AT = 116, /* 3 x u32 */
    BLOB_STEP_SMEM_AT = 128,
    BLOB_STEP_NARGS_AT = 132,
    BLOB_STEP_ARGS_AT = 136,  /* 8 x {kind u32, slot u32, value i64} */
    BLOB_STEP_SLOTS_AT = 264, /* 8 x {space u32, reserved u32, offset u64, bytes u64} */
    BLOB_STEP_PARAMS_AT = 456, /* 24 x i64 */
};
_Static_assert(BLOB_STEP_ARGS_AT + 16 * BLOB_MAX_ARGS == BLOB_STEP_SLOTS_AT, "step layout");
_Static_assert(BLOB_STEP_SLOTS_AT + 24 * BLOB_MAX_SLOTS == BLOB_STEP_PARAMS_AT, "step layout");
_Static_assert(BLOB_STEP_PARAMS_AT + 8 * BLOB_MAX_PARAMS == BLOB_STEP_SIZE, "step layout");

/* Little-endian field access, shared by writer and reader. */
static inline uint32_t blob_get_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t blob_get_u64(const unsigned char *p) {
    return (uint64_t)blob_get_u32(p) | (uint64_t)blob_get_u32(p + 4) << 32;
}
static inline void blob_put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static inline void blob_put_u64(unsigned char *p, uint64_t v) {
    blob_put_u32(p, (uint32_t)v);
    blob_put_u32(p + 4, (uint32_t)(v >> 32));
}

/* ---------------------------------------------------------------- the writer */

/* Builds a blob in memory. The writer owns copies of everything given to it.
 * Usage: blob_new; blob_add_weights for each constant (keep the BlobRefs); blob_add_input /
 * blob_add_output; blob_add_step for each step, filling the returned record; blob_add_cubin
 * per target; blob_set_arena; blob_finish or blob_write_file; blob_free.
 * Allocation failure exits (the compiler's xmalloc); misuse is reported by blob_finish. */
typedef struct BlobWriter BlobWriter;
struct Buf;

BlobWriter *blob_new(void);
void blob_free(BlobWriter *w);

/* Copy n bytes into WEIGHTS at the next 64-byte boundary; returns a WEIGHTS ref. */
BlobRef blob_add_weights(BlobWriter *w, const void *data, size_t n);
/* The bytes of weights added before (r from blob_add_weights), valid until the next add. */
const void *blob_weights_data(const BlobWriter *w, BlobRef r);
/* An arena ref (per batch item). */
BlobRef blob_arena_ref(uint64_t offset, uint64_t item_bytes);
/* Bytes of the arena per batch item (every arena ref must fit inside). */
void blob_set_arena(BlobWriter *w, uint64_t item_bytes);

/* A graph input or output: dims[batch_axis] is -1 (batch_axis must be 0 in version 1);
 * `where` is its arena ref, item_bytes = numel per item * dtype size (B1: ceil(numel/8)). */
void blob_add_input(BlobWriter *w, const char *name, BlobDType dtype, int rank,
                    const int64_t *dims, BlobRef where);
void blob_add_output(BlobWriter *w, const char *name, BlobDType dtype, int rank,
                     const int64_t *dims, BlobRef where);

/* Append a step of this kind; returns the zeroed record to fill (valid until the next
 * blob_add_step). */
BlobStep *blob_add_step(BlobWriter *w, BlobStepKind kind);
/* Step i of those added so far, to change it afterwards (e.g. its kernel's name); NULL when
 * there is no step i. Valid until the next blob_add_step. */
BlobStep *blob_step_at(BlobWriter *w, int i);
/* Set a step's GPU launch: kernel name, grid as three BlobGridDim, block. */
void blob_step_set_kernel(BlobStep *s, const char *name, const BlobGridDim grid[3],
                          const uint32_t block[3], uint32_t smem);
void blob_step_add_arg(BlobStep *s, BlobArgKind kind, uint32_t slot, int64_t value);

/* A CUBIN for one architecture ("sm_90a", "sm_80", ...). */
void blob_add_cubin(BlobWriter *w, const char *arch, const void *data, size_t n);

/* Serialize into out (appended). 0 ok; -1 with a message in err on misuse the writer can
 * see (a name too long, too many args, an arena ref outside the arena, no outputs). The
 * full semantic check is the runtime loader's: tests load what they write. */
int blob_finish(BlobWriter *w, struct Buf *out, char *err, size_t err_len);
/* blob_finish, then write path atomically. 0 ok, -1 with err. */
int blob_write_file(BlobWriter *w, const char *path, char *err, size_t err_len);

#endif
