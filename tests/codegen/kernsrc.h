/* kernsrc.h: the tests' description of a specialized bgemm / bconv kernel and the NVRTC source
 * for it (bnn_common_cu, then #defines, then the kernel file), as the code generator will
 * emit them. Header-only; static functions, for the tests of this folder. */
#ifndef BNN_TEST_KERNSRC_H
#define BNN_TEST_KERNSRC_H

#include <stdbool.h>

#include "kernels.h"
#include "util.h"

typedef struct Tile {
    int bm, bn, wm, wn, kc, stages; /* all 0: the family's default tile */
} Tile;

typedef struct BgemmSpec {
    int M;          /* > 0: compiled in as BG_M; 0: M is the run-time argument */
    int N, K, epi;  /* epi: BNN_EPI_* */
    int lda, ldw, ldy; /* 0: the default, filled in by bgemm_resolve */
    Tile tile;
} BgemmSpec;

typedef struct BconvSpec {
    int nb;         /* > 0: compiled in as BC_NB; 0: the batch is the run-time argument */
    int C, H, W, O, KH, KW, SH, SW, PT, PL, PB, PR, DH, DW; /* pads: top, left, bottom, right */
    bool pad_one;
    bool pool;      /* fused 2x2 / stride 2 max pool (bit epilogue only) */
    int epi;
    int cwp, ldw, ldy; /* 0: the default, filled in by bconv_resolve */
    Tile tile;
    /* th > 0: the halo-tile kernel (BC_HALO) with TH x TW output tiles a warp; tile.bn is its
     * BN, tile.wm its warps a block (tile.wn 1; tile.bm = th*tw; kc, stages unused); minb:
     * BC_MINB (0: the default); tpw: tiles per warp the runtime's grid aims at when the batch
     * is large (0: 4); gy > 0: launch that many blocks along y instead (tests the tile loop). */
    int th, tw, minb, tpw, gy;
} BconvSpec;

static inline int kdiv_up(int a, int b) { return (a + b - 1) / b; }

static inline void tile_resolve(Tile *t, bool conv) {
    if (t->bm)
        return;
    t->bm = conv ? BNN_BCONV_BM : BNN_BGEMM_BM;
    t->bn = conv ? BNN_BCONV_BN : BNN_BGEMM_BN;
    t->wm = conv ? BNN_BCONV_WM : BNN_BGEMM_WM;
    t->wn = conv ? BNN_BCONV_WN : BNN_BGEMM_WN;
    t->kc = conv ? BNN_BCONV_KC : BNN_BGEMM_KC;
    t->stages = conv ? BNN_BCONV_STAGES : BNN_BGEMM_STAGES;
}

/* The defaults of bgemm.cu, so the host packs operands the way the kernel reads them. */
static inline void bgemm_resolve(BgemmSpec *s) {
    if (!s->lda)
        s->lda = kdiv_up(s->K, 256) * 8;
    if (!s->ldw)
        s->ldw = s->lda;
    if (!s->ldy)
        s->ldy = s->epi == BNN_EPI_THRESHOLD ? kdiv_up(s->N, 32) : s->N;
    tile_resolve(&s->tile, false);
}

static inline void bconv_resolve(BconvSpec *s) {
    if (!s->SH)
        s->SH = 1;
    if (!s->SW)
        s->SW = 1;
    if (!s->DH)
        s->DH = 1;
    if (!s->DW)
        s->DW = 1;
    if (!s->cwp)
        s->cwp = kdiv_up(s->C, 128) * 4;
    if (!s->ldw)
        s->ldw = s->KH * s->KW * s->cwp;
    if (!s->ldy)
        s->ldy = s->epi == BNN_EPI_THRESHOLD ? kdiv_up(s->O, 32) : s->O;
    tile_resolve(&s->tile, true);
}

static inline int bconv_oh(const BconvSpec *s);
static inline int bconv_ow(const BconvSpec *s);
/* bnn_corr_classes of a resolved spec. */
static inline int bconv_corr_classes(const BconvSpec *s) {
    return bnn_corr_classes(s->H, s->W, s->KH, s->KW, s->SH, s->SW, s->PT, s->PL, s->DH, s->DW, bconv_oh(s),
                            bconv_ow(s), s->pad_one);
}
/* The halo kernel's tile as bnn_halo_choose picks it (what lower.c emits) for a resolved spec. */
static inline bool bconv_halo_auto(BconvSpec *s) {
    BnnHaloCfg h;
    if (bnn_halo_choose(s->C, bconv_oh(s), bconv_ow(s), s->O, s->KH, s->KW, s->SH, s->SW, s->DH, s->DW, s->pool,
                        bconv_corr_classes(s), &h) != 0)
        return false;
    s->th = h.th;
    s->tw = h.tw;
    s->minb = h.minb;
    s->tpw = (int)h.grid_div / h.wm;
    s->tile = (Tile){h.th * h.tw, h.bn, h.wm, h.wn, 8, 2};
    return true;
}

static inline int bconv_oh(const BconvSpec *s) { return bnn_conv_out(s->H, s->KH, s->SH, s->PT, s->PB, s->DH); }
static inline int bconv_ow(const BconvSpec *s) { return bnn_conv_out(s->W, s->KW, s->SW, s->PL, s->PR, s->DW); }

static inline void tile_defines(Buf *b, const char *p, const Tile *t) {
    if (!t->bm)
        return;
    buf_printf(b, "#define %s_BM %d\n#define %s_BN %d\n#define %s_WM %d\n#define %s_WN %d\n", p, t->bm, p, t->bn, p,
               t->wm, p, t->wn);
    buf_printf(b, "#define %s_KC %d\n#define %s_STAGES %d\n", p, t->kc, p, t->stages);
}

/* Append one specialized bgemm named `name` to b (after bnn_common_cu). */
static inline void bgemm_append(Buf *b, const char *name, const BgemmSpec *s) {
    buf_printf(b, "\n#define BG_NAME %s\n#define BG_N %d\n#define BG_K %d\n#define BG_EPI %d\n", name, s->N, s->K,
               s->epi);
    if (s->M)
        buf_printf(b, "#define BG_M %d\n", s->M);
    if (s->lda)
        buf_printf(b, "#define BG_LDA %d\n", s->lda);
    if (s->ldw)
        buf_printf(b, "#define BG_LDW %d\n", s->ldw);
    if (s->ldy)
        buf_printf(b, "#define BG_LDY %d\n", s->ldy);
    tile_defines(b, "BG", &s->tile);
    buf_put(b, bnn_bgemm_cu, bnn_bgemm_cu_len);
}

static inline void bconv_append(Buf *b, const char *name, const BconvSpec *s) {
    buf_printf(b, "\n#define BC_NAME %s\n#define BC_C %d\n#define BC_H %d\n#define BC_W %d\n#define BC_O %d\n", name,
               s->C, s->H, s->W, s->O);
    buf_printf(b, "#define BC_KH %d\n#define BC_KW %d\n#define BC_EPI %d\n#define BC_PAD_ONE %d\n", s->KH, s->KW,
               s->epi, s->pad_one ? 1 : 0);
    if (s->pool)
        buf_puts(b, "#define BC_POOL 1\n");
    /* Pads always, as given: the kernel's own default for PB/PR is PT/PL. */
    buf_printf(b, "#define BC_PT %d\n#define BC_PL %d\n#define BC_PB %d\n#define BC_PR %d\n", s->PT, s->PL, s->PB,
               s->PR);
    const struct {
        const char *m;
        int v;
    } opt[] = {{"BC_NB", s->nb}, {"BC_SH", s->SH}, {"BC_SW", s->SW}, {"BC_DH", s->DH}, {"BC_DW", s->DW}, {"BC_CWP", s->cwp},
               {"BC_LDW", s->ldw}, {"BC_LDY", s->ldy}};
    for (size_t i = 0; i < sizeof opt / sizeof *opt; i++)
        if (opt[i].v)
            buf_printf(b, "#define %s %d\n", opt[i].m, opt[i].v);
    tile_defines(b, "BC", &s->tile);
    if (s->th)
        buf_printf(b, "#define BC_HALO 1\n#define BC_TH %d\n#define BC_TW %d\n", s->th, s->tw);
    if (s->minb)
        buf_printf(b, "#define BC_MINB %d\n", s->minb);
    buf_put(b, bnn_bconv_cu, bnn_bconv_cu_len);
}

#endif
