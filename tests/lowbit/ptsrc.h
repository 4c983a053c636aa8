/* ptsrc.h: the tests' description of a bgemm_planes_tiled.cu kernel (the bit-plane GEMM on the
 * pre-tiled pipeline) and its NVRTC program, plus the operands in the plane-tiled layout.
 * Header-only, for test_planes_tiled.c (quick) and test_planes_tiled_gpu.c (gpu). */
#ifndef BNN_TEST_PTSRC_H
#define BNN_TEST_PTSRC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blob.h"
#include "kernels.h"
#include "tile_layout.h"
#include "util.h"

typedef struct PtSpec {
    int n, k, xb, wb, wsigned, bipolar, epi, l, yb;
    int bm, bn, wm, wn, kc, stages; /* 0: the file's defaults */
    bool nostore;                  /* timing aid: main loop only */
    bool wgmma;                    /* the wgmma variant (sm_90a; 128 x 256 tile, 384 threads) */
    bool aplain;                   /* PT_APLAIN: A as plain planes [M][XB][ld] (ld = K in 256-bit words);
                                      wgmma: kc 8, A's tensor map as the first argument (pt_encode_amap) */
} PtSpec;

/* Plain A (PT_APLAIN, what bnncc emits) on mma.sync (gathered by cp.async) and on wgmma (one
 * TMA copy a stage, 128-byte swizzled rows): bipolar (apop counted in the kernel) and signed,
 * K not a multiple of the stage, a small ring on mma.sync. Both tests' spec lists have them. */
#define PT_APLAIN_SPECS                                                                                               \
    {.n = 300, .k = 700, .xb = 2, .wb = 1, .wsigned = 1, .bipolar = 1, .epi = 2, .l = 3, .yb = 2, .aplain = true},  \
        {.n = 257, .k = 1000, .xb = 3, .wb = 2, .wsigned = 1, .epi = 1, .kc = 2, .stages = 3, .aplain = true},       \
        {.n = 300, .k = 700, .xb = 2, .wb = 1, .wsigned = 1, .bipolar = 1, .epi = 2, .l = 3, .yb = 2, .aplain = true, \
         .wgmma = true},                                                                                              \
        {.n = 257, .k = 1000, .xb = 3, .wb = 2, .wsigned = 1, .epi = 1, .aplain = true, .wgmma = true}

/* The staged, sorted levels' search on wgmma (bnn_pt_code_sorted): 7 levels in registers, 5
 * (two missing levels) in registers, 11 (four missing) from shared memory. */
#define PT_SEARCH_SPECS                                                                                               \
    {.n = 300, .k = 2500, .xb = 3, .wb = 3, .wsigned = 1, .epi = 2, .l = 7, .yb = 3, .wgmma = true},                 \
        {.n = 130, .k = 900, .xb = 3, .wb = 2, .wsigned = 1, .epi = 2, .l = 5, .yb = 3, .aplain = true,              \
         .wgmma = true},                                                                                              \
        {.n = 70, .k = 600, .xb = 4, .wb = 2, .wsigned = 0, .epi = 2, .l = 11, .yb = 4, .wgmma = true}

static inline void pt_resolve(PtSpec *s) {
    if (s->wgmma) {
        s->bm = BNN_PLANES_TILED_BM;
        s->bn = BNN_PLANES_TILED_BN;
        s->wm = s->wn = 0;
    } else if (!s->bm) {
        s->bm = BNN_PLANES_TILED_BM;
        s->bn = BNN_PLANES_TILED_BN;
        s->wm = BNN_PLANES_TILED_WM;
        s->wn = BNN_PLANES_TILED_WN;
    }
    if (!s->kc)
        s->kc = BNN_PLANES_TILED_KC;
    if (!s->stages)
        s->stages = BNN_PLANES_TILED_STAGES;
}

static inline int pt_smem(const PtSpec *s) {
    return bnn_planes_tiled_smem(s->bm, s->bn, s->kc, s->stages, s->wgmma, s->aplain, s->bipolar,
                                 s->epi == 2 ? s->l : 0);
}
static inline int pt_threads(const PtSpec *s) { return s->wgmma ? BNN_PLANES_WGMMA_THREADS : s->wm * s->wn * 32; }
static inline int pt_wplanes(const PtSpec *s) { return s->bipolar ? 1 : s->wb; }

/* The program's fixed head for arch ("sm_80", "sm_90a", ...): common.cu; tiled_common.cu
 * for sm_90 and newer; the wgmma wrappers of bgemm_wgmma.cu for sm_90a. */
static inline void pt_head(Buf *b, const char *arch) {
    buf_put(b, bnn_common_cu, bnn_common_cu_len);
    buf_put(b, bnn_q8_levels_cu, bnn_q8_levels_cu_len); /* as bnncc pastes it (PT_S8's epilogue) */
    if (atoi(arch + 3) >= 90)
        buf_put(b, bnn_tiled_common_cu, bnn_tiled_common_cu_len);
    if (!strcmp(arch, "sm_90a")) {
        buf_puts(b, "\n#define BNN_WGMMA_HELPERS_ONLY\n");
        buf_put(b, bnn_bgemm_wgmma_cu, bnn_bgemm_wgmma_cu_len);
        buf_puts(b, "\n#undef BNN_WGMMA_HELPERS_ONLY\n");
    }
}

/* Append one specialized kernel named `name` (after pt_head). s must be resolved. */
static inline void pt_append(Buf *b, const char *name, const PtSpec *s) {
    buf_printf(b,
               "\n#define PT_NAME %s\n#define PT_N %d\n#define PT_K %d\n#define PT_XB %d\n#define PT_WB %d\n"
               "#define PT_WSIGNED %d\n#define PT_WBIPOLAR %d\n#define PT_EPI %d\n#define PT_L %d\n"
               "#define PT_YB %d\n#define PT_BM %d\n#define PT_BN %d\n#define PT_WM %d\n#define PT_WN %d\n"
               "#define PT_KC %d\n#define PT_STAGES %d\n#define PT_NOSTORE %d\n#define PT_WGMMA %d\n"
               "#define PT_APLAIN %d\n#define PT_LDA %d\n",
               name, s->n, s->k, s->xb, s->wb, s->wsigned, s->bipolar, s->epi, s->l, s->yb, s->bm, s->bn, s->wm,
               s->wn, s->kc, s->stages, s->nostore ? 1 : 0, s->wgmma ? 1 : 0, s->aplain ? 1 : 0,
               s->aplain ? (s->k + 255) / 256 * 8 : 0);
    buf_put(b, bnn_bgemm_planes_tiled_cu, bnn_bgemm_planes_tiled_cu_len);
}

/* The plane-tiled images of A[M][XB][LD] (tile rows bm) and W[WB'][N][LD] (tile rows bn),
 * xmalloc'ed; sizes in *abytes, *wbytes. */
static inline void pt_tile_operands(const PtSpec *s, const uint32_t *A, const uint32_t *W, int M, int ld,
                                    void **At, size_t *abytes, void **Wt, size_t *wbytes) {
    const int kal = s->kc * 128, wp = pt_wplanes(s);
    *abytes = bnn_tiled_planes_bytes(M, s->xb, s->k, s->bm, kal);
    *wbytes = bnn_tiled_planes_bytes(s->n, wp, s->k, s->bn, kal);
    *At = xmalloc(*abytes);
    *Wt = xmalloc(*wbytes);
    int ra = bnn_tile_planes(A, M, s->xb, s->k, (size_t)s->xb * ld, (size_t)ld, s->bm, kal, *At);
    int rw = bnn_tile_planes(W, s->n, wp, s->k, (size_t)ld, (size_t)s->n * ld, s->bn, kal, *Wt);
    if (ra || rw) {
        fprintf(stderr, "bnn_tile_planes refused the operands\n");
        exit(1);
    }
}

/* The tensor map of plain A[M][XB][ld] u32 words at dA for the wgmma variant's PT_APLAIN, as
 * the runtime encodes it (blob.h blob_tmap_planes_encode through enc, cuTensorMapEncodeTiled);
 * 0 ok. */
static inline int pt_encode_amap(BlobTmapEncodeFn enc, void *map128, const PtSpec *s, unsigned long long dA, int M,
                                 int ld) {
    return blob_tmap_planes_encode(enc, map128, blob_tmap_planes_value(s->xb, s->kc, s->bm, ld),
                                   (void *)(uintptr_t)dA, (uint64_t)M);
}

/* Deterministic random numbers for the tests. */
static uint32_t pt_rng = 4242;
static inline int pt_rnd(int lo, int hi) {
    pt_rng = pt_rng * 1664525u + 1013904223u;
    return lo + (int)((pt_rng >> 8) % (uint32_t)(hi - lo + 1));
}

/* Random codes as the plain plane operands of bgemm_planes.cu / rt_cpu_qgemm_planes:
 * A[M][XB][ld] (unsigned activation codes), W[WB'][N][ld] (signed, unsigned or bipolar weight
 * codes), ld = K rounded up to 256 bits in words. xmalloc'ed. */
static inline void pt_random_operands(const PtSpec *s, int M, uint32_t **A, uint32_t **W, int *ld) {
    const int K = s->k, N = s->n, wp = pt_wplanes(s);
    *ld = (K + 255) / 256 * 8;
    *A = xcalloc((size_t)M * s->xb * *ld, 4);
    *W = xcalloc((size_t)wp * N * *ld, 4);
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++) {
            unsigned x = (unsigned)pt_rnd(0, (1 << s->xb) - 1);
            for (int p = 0; p < s->xb; p++)
                if ((x >> p) & 1)
                    (*A)[((size_t)m * s->xb + p) * *ld + k / 32] |= 1u << (k % 32);
        }
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) {
            unsigned u = s->bipolar   ? (unsigned)pt_rnd(0, 1)
                         : s->wsigned ? (unsigned)pt_rnd(-(1 << (s->wb - 1)), (1 << (s->wb - 1)) - 1)
                                      : (unsigned)pt_rnd(0, (1 << s->wb) - 1);
            for (int q = 0; q < wp; q++) /* two's complement bits */
                if ((u >> q) & 1)
                    (*W)[((size_t)q * N + n) * *ld + k / 32] |= 1u << (k % 32);
        }
}

#endif
