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
extern const char bnn_q8_levels_cu[]; /* the int8 epilogues' level counts: once, before the
                                       * int8 and bit-plane GEMM files (bnncc pastes it) */
extern const size_t bnn_q8_levels_cu_len;

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

/* Halo row stride in 16-byte slots (bnn_halo_ws in bconv.cu): the smallest >= hw congruent to
 * want mod 8, so the 8 rows an ldmatrix reads fall in 8 bank groups. */
static inline int bnn_halo_ws(int hw, int want) { return hw + ((want - hw) % 8 + 8) % 8; }
/* Classes of output positions along one conv axis by their valid kernel range (BnnAxisBands in
 * bconv.cu): the first A outputs (o*s < p), one class for all full ones, the last B; when no
 * full one lies between them, one class per output. */
static inline int bnn_axis_classes(int n, int k, int s, int p, int d, int no) {
    int a = (p + s - 1) / s < no ? (p + s - 1) / s : no, f = n + p - (k - 1) * d;
    int fo = f <= 0 ? 0 : (f + s - 1) / s, b = fo >= no ? 0 : no - fo;
    return a + 1 + b >= no ? no : a + 1 + b;
}
/* The valid tap range [*lo, *hi) along one conv axis of the outputs of class cls
 * (BnnAxisBands::rep and range in bconv.cu; the axis as in bnn_axis_classes). */
static inline void bnn_axis_band_range(int n, int k, int s, int p, int d, int no, int cls, int *lo, int *hi) {
    int a = (p + s - 1) / s < no ? (p + s - 1) / s : no, f = n + p - (k - 1) * d;
    int fo = f <= 0 ? 0 : (f + s - 1) / s, b = fo >= no ? 0 : no - fo;
    int o = a + 1 + b >= no || cls <= a ? cls : no - b + cls - a - 1;
    *lo = *hi = 0;
    for (int t = 0; t < k; t++) {
        *lo += o * s - p + t * d < 0;
        *hi += o * s - p + t * d < n;
    }
    if (*hi < *lo)
        *hi = *lo;
}
/* Entries per column of the border-correction table of the halo bconv (BnnConvCorrT):
 * row classes x column classes, 1 with one padding (every tap counts). */
static inline int bnn_corr_classes(int h, int w, int kh, int kw, int sh, int sw, int pt, int pl, int dh, int dw,
                                   int oh, int ow, int pad_one) {
    return pad_one ? 1 : bnn_axis_classes(h, kh, sh, pt, dh, oh) * bnn_axis_classes(w, kw, sw, pl, dw, ow);
}

/* Threshold row r of channel ch as the bit epilogue uses it: clamped to [-kmax - 1, kmax + 1],
 * plus 1 where dir < 0 (bnn_halo_tables). */
static inline int bnn_halo_shift(const int *thr, const int *dir, int o, int kmax, int r, int ch) {
    const int t = thr[r * o + ch];
    return (t < -kmax - 1 ? -kmax - 1 : t > kmax + 1 ? kmax + 1 : t) + (dir[r * o + ch] < 0);
}
/* The halo bconv's tables, one of (classes + 1) * bn ints for each column block bx of bn
 * channels, ceil(o / bn) of them one after another: bnncc builds them, a block copies its own
 * into the end of its shared memory (bnn_halo_smem). Row cls = hc * nwc + wc, a class
 * of output positions (bnn_corr_classes), column j: for channel c = bx * bn + j < o the dot
 * correction of the class's valid taps, C * (h1 - h0) * (w1 - w0) - 2 * (their weights'
 * popcount, from the prefix table pre[(kh + 1) * (kw + 1)][o]), every tap with pad_one; 0 past
 * o; the last row zeros. With the threshold's own bit epilogue (thr and dir [1 + (resw > 0)][o],
 * bconv.cu BnnHaloBits) U = corr - t'0 instead (-2^30 past o), t'r = thr[r][c] clamped to
 * [-K - 1, K + 1] (K = C * kh * kw), plus 1 where dir[r][c] < 0, and the last row t'0 - t'1
 * where resw > 0. */
static inline void bnn_halo_tables(int c, int h, int w, int o, int kh, int kw, int sh, int sw, int pt, int pl, int dh,
                                   int dw, int oh, int ow, int pad_one, int bn, const int *pre, const int *thr,
                                   const int *dir, int resw, int *out) {
    const int nhc = pad_one ? 1 : bnn_axis_classes(h, kh, sh, pt, dh, oh);
    const int nwc = pad_one ? 1 : bnn_axis_classes(w, kw, sw, pl, dw, ow), kmax = c * kh * kw;
    for (int bx = 0; bx * bn < o; bx++)
        for (int cls = 0; cls <= nhc * nwc; cls++)
            for (int j = 0; j < bn; j++) {
                const int ch = bx * bn + j;
                int v = 0;
                if (cls == nhc * nwc) {
                    if (thr && resw > 0 && ch < o)
                        v = bnn_halo_shift(thr, dir, o, kmax, 0, ch) - bnn_halo_shift(thr, dir, o, kmax, 1, ch);
                } else if (ch < o) {
                    int h0 = 0, h1 = kh, w0 = 0, w1 = kw;
                    if (!pad_one) {
                        bnn_axis_band_range(h, kh, sh, pt, dh, oh, cls / nwc, &h0, &h1);
                        bnn_axis_band_range(w, kw, sw, pl, dw, ow, cls % nwc, &w0, &w1);
                    }
                    const int s = pre[(h1 * (kw + 1) + w1) * o + ch] - pre[(h0 * (kw + 1) + w1) * o + ch] -
                                  pre[(h1 * (kw + 1) + w0) * o + ch] + pre[(h0 * (kw + 1) + w0) * o + ch];
                    v = c * (h1 - h0) * (w1 - w0) - 2 * s;
                    if (thr)
                        v -= bnn_halo_shift(thr, dir, o, kmax, 0, ch);
                } else if (thr) {
                    v = -(1 << 30);
                }
                *out++ = v;
            }
}

/* A channel's row of BC_RESD thresholds in int16 entries (bconv.cu bnn_resd_row): k1 + 1
 * rounded up to 2 mod 8, so that rows 8 channels apart start 8 banks apart. */
static inline int bnn_resd_row(int k1) { return (k1 + 1 + 5) / 8 * 8 + 2; }

/* The halo-tile bconv (BC_HALO, bconv.cu): the weight slice, a zero line, per warp (nw of them)
 * two halos of its TH x TW tile and the popc(a) of its rows, and the correction table
 * (classes entries per column, bnn_corr_classes, and one more row: the bit epilogue's
 * BnnHaloBits). Mirrors the kernel. */
static inline int bnn_halo_smem(int c, int kh, int kw, int sh, int sw, int dh, int dw, int th, int tw, int bn,
                                int pool, int nw, int classes) {
    int she = kh == 1 ? 1 : sh, swe = kw == 1 ? 1 : sw;
    int ccr = (c + 127) / 128, hh = (th - 1) * she + (kh - 1) * dh + 1, hwd = (tw - 1) * swe + (kw - 1) * dw + 1;
    int hws = she == 1 ? bnn_halo_ws(hwd, pool ? 4 : tw * swe) : hwd, nhp = hh * hws;
    return kh * kw * ccr * bn * 16 + 16 + nw * (2 * ccr * nhp * 16 + 4 * th * tw) + (classes + 1) * bn * 4;
}

/* A halo-tile configuration of one convolution (BC_TH, BC_TW, BC_BN, BC_WM, BC_WN), chosen by
 * bnn_halo_choose: the grid is (ceil(O/bn), grid_base + ceil(batch*grid_per_batch/grid_div)),
 * bnn_halo_threads(wm, wn) threads, smem bytes of dynamic shared memory. */
typedef struct BnnHaloCfg {
    int th, tw, bn, wm, wn, smem;
    int minb;                                    /* BC_MINB: blocks per SM the registers allow */
    int tiles;                                   /* tiles per image (TY*TX) */
    int lev;                                     /* qconv: levels a channel staged (QC_LSTAGE), or 0 */
    unsigned grid_base, grid_per_batch, grid_div; /* grid.y as the runtime computes it */
} BnnHaloCfg;

/* grid.y of the halo kernel = base + ceil(batch * tiles / div): at least 3 blocks per SM of
 * 132 (so a small batch runs one tile a block), and about 8 tiles a block when the batch is
 * large (a block keeps its weights in shared memory and prefetches the next tile's halo);
 * div grows with the tiles so that grid.y stays below 65536 up to batch 16384. That is the
 * bound: the steps are flagged BLOB_STEP_ONE_WAVE, and the runtime launches at most the blocks
 * the GPU holds at once (at batch 256 about 32 tiles a block on ResNet's 56x56 layers). */
static inline void bnn_halo_grid(int tiles, int nbx, unsigned *base, unsigned *div) {
    *base = (unsigned)((3 * 132 + nbx - 1) / nbx);
    *div = tiles / 4 > 8 ? (unsigned)(tiles / 4) : 8u;
}

/* cfg's tiles over an oh x ow output and its grid.y terms (bnn_halo_grid), O channels. */
static inline void bnn_halo_set_grid(BnnHaloCfg *cfg, int oh, int ow, int o) {
    cfg->tiles = ((oh + cfg->th - 1) / cfg->th) * ((ow + cfg->tw - 1) / cfg->tw);
    bnn_halo_grid(cfg->tiles, (o + cfg->bn - 1) / cfg->bn, &cfg->grid_base, &cfg->grid_div);
    cfg->grid_per_batch = (unsigned)cfg->tiles;
}

/* The largest shared memory a halo block may take: two blocks still fit on an SM. */
enum { BNN_HALO_SMEM_MAX = 110 * 1024 };

/* The output tiles (TH x TW pixels) the halo qconv chooses from, and the choice: the first
 * whose padding waste is small (at least 3/4 of its rows are real pixels of an ohe x owe
 * output) and that gives at least min_blocks blocks for one image (nbx column blocks); failing
 * that, the one with the most blocks at one image among those at least half full. */
static const int bnn_halo_tiles[4][2] = {{8, 16}, {8, 8}, {4, 8}, {4, 4}};
static inline int bnn_halo_pick(int ohe, int owe, int nbx, int min_blocks) {
    int best = -1, best_blocks = -1;
    for (int i = 0; i < 4; i++) {
        int th = bnn_halo_tiles[i][0], tw = bnn_halo_tiles[i][1];
        int tiles = ((ohe + th - 1) / th) * ((owe + tw - 1) / tw);
        long real = (long)ohe * owe, rows = (long)tiles * th * tw;
        if (4 * real >= 3 * rows && tiles * nbx >= min_blocks)
            return i;
        if (2 * real >= rows && tiles * nbx > best_blocks)
            best = i, best_blocks = tiles * nbx;
    }
    return best < 0 ? 3 : best;
}

/* The warp tiles of the halo-tile bconv (BC_HALO): each warp TH x TW pixels x all BN channels
 * of its block, WM warps a block, BC_MINB blocks an SM the registers must allow. The rule
 * (bnn_halo_rule, candidate 0) takes one of the first two, 32 channels, 8 warps, BC_MINB 3 (80
 * registers, no spills): 2 x 8 pixels where the output is at least 8 wide and not pooled, else
 * 4 x 4. A 2 x 8 tile's 8 rows of 16 pixels are one image row each, so the chain epilogues' f32
 * NCHW residuals and values move in whole 32-byte sectors (4 x 4: half sectors). On an H100 at
 * batch 256 (docs/perf.md, 2026-11-27) 2 x 8 everywhere made Bi-Real ResNet-18 2.3 % faster and
 * XNOR ResNet-18 2.6 %, with batch 8 and 1 within 0.5 %; on pooled layers (VGG-small) 2 x 8 and
 * 4 x 4 are within 1.3 % (2026-11-27), and those keep 4 x 4. 2 x 16 was slower everywhere. The others are the tiles of the first measurement (docs/kernels.md,
 * "The halo-tile convolution"): 4x8 x 64 is up to 1.45x faster at batch 256 on the 56x56
 * threshold layers but slower at batch 1, and the batch is not known here, so they are bnncc
 * --tune's candidates, measured on the GPU and batch the user names. The last is 4x8/64/8 with
 * BC_MINB 1: at minb 2 (128 registers) it spills 120-544 bytes on chain epilogues, where it
 * gets all the registers it wants instead. tpw: tiles a warp at a large batch (grid_div / wm):
 * 4, and 8 for 4x8/64/8 at minb 2, lower.c's batch alternative of the threshold layers from
 * batch 16, whose blocks (two an SM) then pay their prologue (weights, tables, masks) half as
 * often: its layers of XNOR ResNet-18 4-8 % faster at batch 256 on an H200 (docs/perf.md stop
 * 27; with 8 everywhere the 1x1 downsample chains were up to 9 % slower). */
typedef struct BnnHaloTile {
    int th, tw, bn, wm, minb, tpw;
} BnnHaloTile;
static const BnnHaloTile bnn_halo_variants[] = {{4, 4, 32, 8, 3, 4}, {2, 8, 32, 8, 3, 4}, {4, 8, 64, 4, 3, 4},
                                                {4, 4, 64, 4, 4, 4}, {4, 8, 64, 8, 2, 8}, {4, 8, 32, 4, 4, 4},
                                                {4, 8, 64, 8, 1, 4}};
enum { BNN_HALO_VARIANTS = (int)(sizeof bnn_halo_variants / sizeof *bnn_halo_variants) };

/* The index in bnn_halo_variants of the rule's tile for an output ow wide, pooled or not. */
static inline int bnn_halo_rule(int ow, int pool) { return ow >= 8 && !pool ? 1 : 0; }

/* Candidate v of the halo bconv's tiles for one layer (O output channels): 0 the rule's tile,
 * 1 the other of the first two, v >= 2 bnn_halo_variants[v]; or -1 when it does not apply: its
 * shared memory exceeds BNN_HALO_SMEM_MAX (very wide C; for v = 0 the implicit GEMM then), or
 * (v > 0) its BN does not divide O. grid.y: bnn_halo_grid's base (3 blocks an SM at a small
 * batch), and the tile's tpw tiles a warp at a large one (more for a variant whose tiles would
 * otherwise give more blocks than the rule's). classes: bnn_corr_classes. */
static inline int bnn_halo_variant(int v, int c, int oh, int ow, int o, int kh, int kw, int sh, int sw, int dh,
                                   int dw, int pool, int classes, BnnHaloCfg *cfg) {
    const int rule = bnn_halo_rule(ow, pool), idx = v == 0 ? rule : v == 1 ? 1 - rule : v;
    if (v < 0 || v >= BNN_HALO_VARIANTS || (v > 0 && o % bnn_halo_variants[idx].bn != 0))
        return -1;
    const BnnHaloTile *t = &bnn_halo_variants[idx];
    int ohe = pool ? oh / 2 * 2 : oh, owe = pool ? ow / 2 * 2 : ow;
    cfg->th = t->th;
    cfg->tw = t->tw;
    cfg->wm = t->wm;
    cfg->wn = 1;
    cfg->minb = t->minb;
    cfg->bn = t->bn;
    cfg->smem = bnn_halo_smem(c, kh, kw, sh, sw, dh, dw, cfg->th, cfg->tw, cfg->bn, pool, cfg->wm, classes);
    if (cfg->smem > BNN_HALO_SMEM_MAX)
        return -1;
    bnn_halo_set_grid(cfg, ohe, owe, o);
    cfg->grid_div = (unsigned)(cfg->wm * t->tpw);
    /* No more blocks a batch item than the rule's (grid.y must stay under 65536 for every batch
     * the rule's blob takes): a variant with fewer warps takes more tiles a warp instead. */
    const BnnHaloTile *r = &bnn_halo_variants[rule];
    const long rule_tiles = (long)((ohe + r->th - 1) / r->th) * ((owe + r->tw - 1) / r->tw), rule_div = r->wm * 4;
    const long need = ((long)cfg->tiles * rule_div + rule_tiles - 1) / rule_tiles;
    if (need > (long)cfg->grid_div)
        cfg->grid_div = (unsigned)need;
    return 0;
}

/* The rule's tile (candidate 0). */
static inline int bnn_halo_choose(int c, int oh, int ow, int o, int kh, int kw, int sh, int sw, int dh, int dw,
                                  int pool, int classes, BnnHaloCfg *cfg) {
    return bnn_halo_variant(0, c, oh, ow, o, kh, kw, sh, sw, dh, dw, pool, classes, cfg);
}

/* The halo-tile qconv (QC_HALO 1, qconv.cu): a block's dynamic shared memory (QC_HSMEM), which
 * it checks on entry: the weight slice (wb planes x KH*KW taps, or with C <= 64 and KW > 1
 * KH*ceil(KW/2) pairs of taps, x ceil(C/128) 16-byte chunks x 32*wn rows), two halos of xb
 * planes (HH rows of HWS slots per chunk), a zero line, the popcount of each halo slot and of
 * each tile row, each warp's staged residual, resw words a tile row (0 without one; 33 for
 * a chain's f32 residual; QC_RW for a residual read as codes), and the block's channels' folded
 * levels, lev a channel (QC_LSTAGE; 0 without). */
static inline int bnn_qhalo_smem(int c, int kh, int kw, int sh, int sw, int dh, int dw, int th, int tw, int wn,
                                 int xb, int wb, int resw, int lev) {
    int she = kh == 1 ? 1 : sh, swe = kw == 1 ? 1 : sw;
    int ccr = (c + 127) / 128, hh = (th - 1) * she + (kh - 1) * dh + 1, hwd = (tw - 1) * swe + (kw - 1) * dw + 1;
    int pair = c <= 64 && kw > 1, kwi = pair ? (kw + 1) / 2 : kw; /* items a kernel row (QC_PAIR: taps in pairs) */
    int half = pair && swe == 2 && dw == 1, hwc = half ? (hwd + 1) / 2 : hwd, swc = half ? 1 : swe; /* QC_HALF */
    int hws = tw % 8 == 0 && swc == 1 ? hwc : she == 1 ? bnn_halo_ws(hwc, tw * swc) : hwc, nhp = hh * hws;
    return wb * kh * kwi * ccr * 32 * wn * 16 + 2 * xb * ccr * nhp * 16 + 16 + 4 * hh * (half ? 2 * hws : hws) +
           4 * th * tw + wn * th * tw * resw * 4 + 4 * lev * 32 * wn;
}

/* The halo qconv's configuration (QC_TH, QC_TW, QC_WM, QC_WN, QC_MINB in cfg->th, tw, wm, wn,
 * minb; bn = 32*wn channels a block; grid as bnn_halo_choose's); 0, or -1 when its shared
 * memory would exceed BNN_HALO_SMEM_MAX even with bn = 32 (the direct kernel then). The rule
 * (candidate v = 0): the tile of bnn_halo_pick with min_blocks 66 (at least half an H100's SMs
 * busy at batch 1), bn = 64 (32 when O <= 32), each warp 32 channels; a warp takes two m16 tiles
 * of rows (one when the tile has 16 rows, or when nacc, the accumulator sets pos + neg of the
 * plane pairs, exceeds 4: registers), QC_MINB 2 (1 for a block of 8 warps or more whose
 * accumulators take more than 64 registers a thread). Candidates v = 1..3 (bnncc --tune) take the
 * other tiles of bnn_halo_tiles, in its order, with the same rest; v = 4, 5 its 8x8 and 4x8
 * tiles with bn = 128 (four warps across; only where O is a multiple of 128), which load each
 * halo once for twice the channels: a stride-2 layer's halo is about four times its tile's
 * pixels. (8x16 pixels of 128 channels, 16 warps at QC_MINB 1, won no layer of the w1a2
 * ResNet-18 under bnncc --tune=256 on an H200: docs/perf.md stop 50.) lev > 0 (codes past 15
 * levels, QC_LFOLD): the block stages its channels' lev levels where its memory fits them at
 * some bn (cfg->lev = lev: QC_LSTAGE), else not (cfg->lev = 0). */
enum { BNN_QHALO_VARIANTS = 6, BNN_QHALO_WIDE = 4 };
/* The rule's tile (an index in bnn_halo_tiles) of an oh x ow output of o channels. */
static inline int bnn_qhalo_rule_tile(int oh, int ow, int o) {
    const int bn = o <= 32 ? 32 : 64;
    return bnn_halo_pick(oh, ow, (o + bn - 1) / bn, 66);
}
static inline int bnn_qhalo_variant(int v, int c, int oh, int ow, int o, int kh, int kw, int sh, int sw, int dh,
                                    int dw, int xb, int wb, int nacc, int resw, int lev, BnnHaloCfg *cfg) {
    int bn = o <= 32 ? 32 : 64, tile = bnn_qhalo_rule_tile(oh, ow, o);
    if (v < 0 || v >= BNN_QHALO_VARIANTS || (v >= BNN_QHALO_WIDE && o % 128 != 0))
        return -1;
    if (v >= BNN_QHALO_WIDE)
        tile = 1 + v - BNN_QHALO_WIDE, bn = 128;
    else if (v > 0) /* the v-th of the other tiles */
        tile = v - 1 < tile ? v - 1 : v;
    cfg->th = bnn_halo_tiles[tile][0];
    cfg->tw = bnn_halo_tiles[tile][1];
    int mi = cfg->th * cfg->tw >= 32 && nacc <= 4 ? 2 : 1;
    cfg->wm = cfg->th * cfg->tw / (16 * mi);
    cfg->minb = 2;
    /* the most channels a block whose shared memory fits, with lev levels a channel staged where
     * any does (else none: the kernel then searches them in global memory) */
    const int bn0 = bn;
    for (cfg->lev = lev;; cfg->lev = 0) {
        for (bn = bn0; bn >= (v >= BNN_QHALO_WIDE ? 128 : 32); bn -= 32) {
            cfg->bn = bn;
            cfg->wn = bn / 32;
            cfg->smem = bnn_qhalo_smem(c, kh, kw, sh, sw, dh, dw, cfg->th, cfg->tw, cfg->wn, xb, wb, resw, cfg->lev);
            if (cfg->smem <= BNN_HALO_SMEM_MAX)
                break;
        }
        if (cfg->smem <= BNN_HALO_SMEM_MAX || cfg->lev == 0)
            break;
    }
    if (cfg->smem > BNN_HALO_SMEM_MAX)
        return -1;
    /* Accumulators past 1.5x the w1a2 layers' two sets of two m16 tiles (64 registers), or past
     * them with weights of several planes (their fragments take registers too), in a block of 8
     * warps or more: one block an SM, so that ptxas may give a thread 255 registers (at two,
     * 128, the 8x16 tiles of w1a4 ... w2a3 layers spilled 116-2,796 bytes). w1a3's (1.5x) spill
     * 12 bytes at two and run 11-13 % faster there than at one (H200, docs/perf.md stop 52). */
    if ((mi * nacc > 6 || (wb > 1 && mi * nacc > 4)) && cfg->wm * cfg->wn > 4)
        cfg->minb = 1;
    bnn_halo_set_grid(cfg, oh, ow, o);
    return 0;
}

/* A halo qconv's tiles for larger batches, its batch alternatives (lower.c): up to two
 * (candidate of bnn_qhalo_variant, 0 for the rule's tile again; first batch) in increasing batch. The rule's tile
 * is chosen for batch 1 (66 blocks at one image); with a few images more, larger tiles have
 * blocks enough and share their halo and weights over more pixels. A 3x3 layer's larger tile
 * starts at batch 4 (BNN_QHALO_ALT_BATCH; 16 before stop 44: at batch 8 bnncc --tune picked it
 * for every such layer but the stride-2 one into 28x28, 6-40 % faster each, and on an H200 the
 * w1a2 ResNet-18 from batch 4 on ran 3 / 10 / 14 / 11 % faster at batches 4 / 6 / 8 / 12 than
 * from 16, level at 16; from 8 on, the same at 8 and 12, nothing at 4 and 6: docs/perf.md stop 44). Measured per layer on the
 * w1a2 ResNet-18 (2-bit codes, +-1 weights) on an H200 at batches 8, 16, 64 and 256 with every
 * tile (docs/perf.md stop 31): 3x3 layers of at most 64 output pixels (7x7) gain 2-25 % on 8x8
 * tiles, of at most 256 (14x14) 3-35 % on 8x16; at 28x28 a chain that writes its f32 value
 * gains 6-24 % on 8x16, a threshold layer or a chain of codes alone gains 12-23 % at 16 and
 * loses up to 31 % at 256 (so the rule's tile again for such a chain from 128: it gains 5 % on
 * 8x16 at 64 and loses 10 % at 128, 15 % at 256, docs/perf.md stop 41; a threshold layer,
 * since its codes are counted in the fragment layout, gains 22 % on 8x16 at 256 at stride 1 and
 * 5 % at stride 2: bnncc --tune and bench/qconv_bench.py, docs/perf.md stop 38); the 1x1 stride-2 downsample (f32
 * only) into 28x28 loses 1-5 % at 16 and 64 and gains 37 % at 256, into 14x14 it loses 15-22 %
 * up to 64 on 8x16 but gains 18 / 13 / 44 % at 64 / 128 / 256 on 8x8, into 7x7 11 / 7 / 20 % on
 * 4x8 (stop 41); at 56x56 the threshold layers gain 2-13 % on 8x8, the chains nothing. A tile less
 * than half full of real pixels is not taken. chain: a qconv2d_chain; f32: its GPU kernel writes
 * its f32 value (not where only the CPU path reads it: lower.c plan_rcode). Returns how many. */
enum { BNN_QHALO_ALT_BATCH = 4 }; /* the batch from which a 3x3 layer takes its larger tile */
enum { BNN_QHALO_WIDE_BATCH = 64 }; /* ... and a stride-2 one its 128 channels a block */
/* Tile t of bnn_halo_tiles as bnn_qhalo_variant's candidate (its mapping inverted: the rule's
 * tile is candidate 0, the others follow in order); t < 0: the rule's. */
static inline int bnn_qhalo_tile_variant(int t, int rule) {
    return t < 0 || t == rule ? 0 : t < rule ? t + 1 : t;
}
typedef struct BnnQhaloAlt {
    int variant, from;
    int fallback; /* the candidate to take where variant's shared memory does not fit (0: none) */
} BnnQhaloAlt;
static inline int bnn_qhalo_batch_alts(int c, int oh, int ow, int o, int kh, int kw, int sh, int sw, int chain,
                                       int f32, int heavy, BnnQhaloAlt alt[2]) {
    const long p = (long)oh * ow;
    const int one = kh == 1 && kw == 1;
    int tile[2] = {0, 0}, from[2] = {0, 0}, n = 0; /* a tile of bnn_halo_tiles (-1: the rule's) from a batch on */
    if (heavy && !one && !chain) {
        /* A threshold layer of more than 2 activation or weight bits (heavy; the above was
         * measured on w1a2): its larger tiles need more registers than a thread has at two
         * blocks an SM (bnn_qhalo_variant: minb 1) and lose, up to 3.3x on 8x16 at 28x28 and
         * 14x14; bnncc --tune=256 on an H200 (w3a2, w4a2, w1a3, w2a3, w1a4, w2a4, w3a3 over
         * ResNet-18's shapes, docs/perf.md stop 52) picked 4x4 above 256 output pixels (and for a
         * stride-2 layer above 64), 4x8 up to 256 (stride 2: up to 64), 8x8 up to 64 at stride 1,
         * and no 128-channel block. */
        const int s1 = sh == 1 && sw == 1;
        tile[n] = p <= 64 && s1 ? 1 : p <= (s1 ? 256 : 64) ? 2 : 3, from[n++] = BNN_QHALO_ALT_BATCH;
    } else if (p <= 64 && !one)
        tile[n] = 1, from[n++] = BNN_QHALO_ALT_BATCH;
    else if (p <= 256 && !one)
        tile[n] = 0, from[n++] = BNN_QHALO_ALT_BATCH;
    else if (p <= 64 && one && chain && f32)
        tile[n] = 2, from[n++] = 16;
    else if (p <= 256 && one && chain && f32)
        tile[n] = 1, from[n++] = 16;
    else if (p > 256 && p <= 1024 && one && chain && f32)
        tile[n] = 0, from[n++] = 64;
    else if (p <= 1024 && !one) {
        tile[n] = 0, from[n++] = BNN_QHALO_ALT_BATCH;
        if (chain && !f32)
            tile[n] = -1, from[n++] = 128;
    } else if (p > 1024 && !one && !chain)
        tile[n] = 1, from[n++] = BNN_QHALO_ALT_BATCH;
    if (n > 0 && tile[0] >= 0) { /* at least half full */
        const int th = bnn_halo_tiles[tile[0]][0], tw = bnn_halo_tiles[tile[0]][1];
        if (2 * p < (long)((oh + th - 1) / th) * ((ow + tw - 1) / tw) * th * tw)
            n = 0;
    }
    const int rule = bnn_qhalo_rule_tile(oh, ow, o);
    for (int i = 0; i < n; i++) {
        alt[i].variant = bnn_qhalo_tile_variant(tile[i], rule);
        alt[i].from = from[i];
        alt[i].fallback = 0;
    }
    /* A heavy layer's 8x8 tile where its weights leave no room for it (512 channels past 9 plane
     * pairs: w5a2, w4a3) takes 4x8: bnncc --tune=256 on an H200 timed 4x8 / 32 channels / 2 warps
     * at 0.13 and 0.20 ms on ResNet-18's 7x7 layer against the rule's 4x4's 0.24 and 0.36
     * (docs/perf.md stop 53). */
    if (heavy && n == 1 && tile[0] == 1)
        alt[0].fallback = bnn_qhalo_tile_variant(2, rule);
    /* A stride-2 3x3 threshold layer of 128k channels, with taps in pairs (C <= 64: 4x8 tiles) or
     * into at most 8x8 pixels (8x8 tiles), then takes 128 channels a block (BNN_QHALO_WIDE) from
     * batch 64: a stride-2 halo is about four times its tile's pixels, and one block loads it for
     * all 128. On an H200 (docs/perf.md stop 50) the w1a2 ResNet-18's 56x56 -> 28x28 layer on 4x8
     * tiles of 128 channels against 8x16 of 64: +7 / -1 / +11 / -1 / -5 / -17 % at batch 4 / 8 /
     * 16 / 32 / 64 / 256; its 14x14 -> 7x7 layer on 8x8 of 128 against 8x8 of 64: +17 / +14 /
     * +25 / -6 / -5 % at 4 / 8 / 32 / 64 / 256 (at 32, 128 blocks of 8 warps). The 28x28 -> 14x14
     * layer (C 128) stays: bnncc --tune=256 kept 8x16 of 64 channels. */
    if (heavy && n == 1 && alt[0].variant == 0) /* the rule's tile already */
        n = 0;
    if (n == 1 && !heavy && sh == 2 && sw == 2 && !one && !chain && o % 128 == 0 && (c <= 64 || p <= 64)) {
        const int wide_tile = c <= 64 ? 2 : 1;           /* 4x8 or 8x8 of bnn_halo_tiles */
        alt[1].variant = BNN_QHALO_WIDE + wide_tile - 1; /* bnn_qhalo_variant's mapping inverted */
        alt[1].from = BNN_QHALO_WIDE_BATCH;
        alt[1].fallback = 0;
        n = 2;
    }
    return n;
}

static inline int bnn_qhalo_choose(int c, int oh, int ow, int o, int kh, int kw, int sh, int sw, int dh, int dw,
                                   int xb, int wb, int nacc, int resw, int lev, BnnHaloCfg *cfg) {
    return bnn_qhalo_variant(0, c, oh, ow, o, kh, kw, sh, sw, dh, dw, xb, wb, nacc, resw, lev, cfg);
}

/* Threads per block of a tile: one warp per (WM x WN) warp tile. */
static inline int bnn_tile_threads(int wm, int wn) { return wm * wn * 32; }

/* Output size of a convolution along one axis (ONNX: floor, pads at both ends). */
static inline int bnn_conv_out(int in, int k, int stride, int pad_begin, int pad_end, int dilation) {
    return (in + pad_begin + pad_end - dilation * (k - 1) - 1) / stride + 1;
}

#endif
