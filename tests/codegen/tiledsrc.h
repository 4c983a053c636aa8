/* tiledsrc.h: the tests' description of a pre-tiled bit-GEMM kernel (bgemm_tiled.cu, mma.sync,
 * or bgemm_wgmma.cu, wgmma) and its NVRTC source: bnn_common_cu, bnn_tiled_common_cu, then per
 * kernel a block of #defines and the kernel file. Header-only, for the tests of this folder. */
#ifndef BNN_TEST_TILEDSRC_H
#define BNN_TEST_TILEDSRC_H

#include <stdbool.h>

#include "kernels.h"
#include "tile_layout.h"
#include "util.h"

enum { TK_MMA = 0, TK_WGMMA = 1 };

typedef struct TiledSpec {
    int kind;       /* TK_MMA or TK_WGMMA */
    int M;          /* > 0: compiled in; 0: run-time argument */
    int N, K, epi;  /* epi: BNN_EPI_* */
    int ldy;        /* 0: the default */
    int bm, bn, wm, wn, kc, stages; /* 0: the file's defaults (bm, bn, wm, wn: mma.sync only) */
    bool nostore;   /* timing aid: main loop only */
    int cluster;    /* wgmma: 2 = clusters of two blocks sharing W stages by multicast; 0, 1: none */
} TiledSpec;

static inline void tiled_resolve(TiledSpec *s) {
    if (!s->ldy)
        s->ldy = s->epi == BNN_EPI_THRESHOLD ? (s->N + 31) / 32 : s->N;
    if (s->kind == TK_WGMMA) {
        s->bm = BNN_WGMMA_BM;
        s->bn = BNN_WGMMA_BN;
        s->wm = 2; /* two consumer warpgroups */
        s->wn = 4;
        if (!s->cluster)
            s->cluster = 1;
        if (!s->kc)
            s->kc = BNN_WGMMA_KC;
        if (!s->stages)
            s->stages = BNN_WGMMA_STAGES;
        return;
    }
    s->cluster = 1;
    if (!s->bm) {
        s->bm = BNN_TILED_BM;
        s->bn = BNN_TILED_BN;
        s->wm = BNN_TILED_WM;
        s->wn = BNN_TILED_WN;
    }
    if (!s->kc)
        s->kc = BNN_TILED_KC;
    if (!s->stages)
        s->stages = BNN_TILED_STAGES;
}

static inline int tiled_threads(const TiledSpec *s) {
    return s->kind == TK_WGMMA ? BNN_WGMMA_THREADS : bnn_bgemm_tiled_threads(s->wm, s->wn);
}
static inline int tiled_smem(const TiledSpec *s) { return bnn_bgemm_tiled_smem(s->bm, s->bn, s->kc, s->stages); }

/* The program's fixed head: common.cu and tiled_common.cu. */
static inline void tiled_head(Buf *b) {
    buf_put(b, bnn_common_cu, bnn_common_cu_len);
    buf_put(b, bnn_tiled_common_cu, bnn_tiled_common_cu_len);
}

/* Append one specialized kernel named `name` (after tiled_head). s must be resolved. */
static inline void tiled_append(Buf *b, const char *name, const TiledSpec *s) {
    const char *p = s->kind == TK_WGMMA ? "BW" : "BT";
    buf_printf(b, "\n#define %s_NAME %s\n#define %s_N %d\n#define %s_K %d\n#define %s_EPI %d\n#define %s_LDY %d\n", p,
               name, p, s->N, p, s->K, p, s->epi, p, s->ldy);
    if (s->M)
        buf_printf(b, "#define %s_M %d\n", p, s->M);
    buf_printf(b, "#define %s_KC %d\n#define %s_STAGES %d\n", p, s->kc, p, s->stages);
    if (s->nostore)
        buf_printf(b, "#define %s_NOSTORE 1\n", p);
    if (s->kind == TK_WGMMA) {
        if (s->cluster > 1)
            buf_printf(b, "#define BW_CLUSTER %d\n", s->cluster);
        buf_put(b, bnn_bgemm_wgmma_cu, bnn_bgemm_wgmma_cu_len);
    } else {
        buf_printf(b, "#define BT_BM %d\n#define BT_BN %d\n#define BT_WM %d\n#define BT_WN %d\n", s->bm, s->bn, s->wm,
                   s->wn);
        buf_put(b, bnn_bgemm_tiled_cu, bnn_bgemm_tiled_cu_len);
    }
}

#endif
