/* rt_cpu.c: the CPU path, one plain C function per step kind, following
 * docs/blob-format.md to the bit. Binary steps are exact integer arithmetic with
 * dot = K - 2*popc(a^w) (the bits past K are zero in both); float steps compute in float32 in
 * the order documented. The heavy steps (binary and float convolutions, binary GEMMs) split
 * their output rows among the session's threads (rt_pool.c): each output is computed by one
 * thread in the same order, so results do not depend on the thread count. Shapes and ranges were checked by the loader (rt_blob.c), so nothing here
 * re-checks them. Words are little-endian uint32, so a big-endian host would read them
 * wrongly: refuse to build there rather than run wrongly. */
#include <math.h>
#include <string.h>

#include "rt.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the CPU path assumes a little-endian host"
#endif

/* A step's operand for batch item `item`. */
typedef struct Ctx {
    const bnn_model *m;
    const BlobStep *s;
    unsigned char *arena;
    int batch;
    int part, parts; /* this thread's share of a split step: part of parts */
} Ctx;

/* The units [*u0, *u1) of `units` (output rows of the whole batch) that this part computes. */
static void my_units(const Ctx *c, int64_t units, int64_t *u0, int64_t *u1) {
    *u0 = units * c->part / c->parts;
    *u1 = units * (c->part + 1) / c->parts;
}

static void *slot_ptr(const Ctx *c, int slot, int64_t item) {
    const BlobRef *r = &c->s->slot[slot];
    if (r->space == BLOB_SPACE_NONE)
        return NULL;
    if (r->space == BLOB_SPACE_WEIGHTS)
        return (void *)(c->m->weights + r->offset); /* the plan never writes weights */
    return c->arena + r->offset * (uint64_t)c->batch + (uint64_t)item * r->bytes;
}

/* The population counts of the binary loops below. An x86-64 build without -mpopcnt compiles
 * __builtin_popcount to a call of libgcc's table loop, which took 59 % of a CPU run of XNOR
 * ResNet-18; the functions that run those loops (RT_POPCNT) are compiled twice, with and
 * without the POPCNT instruction, and the loader picks by the CPU (function multiversioning,
 * an ifunc: GCC and clang on ELF). popc_words, popc_xor and popc_and are forced inline into
 * each (RT_INLINE): -O2 left popc_xor a call to its own generic copy, libgcc's loop again. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__ELF__) && !defined(__SANITIZE_THREAD__)
/* (ThreadSanitizer's runtime is not up yet when the loader runs the ifunc resolvers.) */
#define RT_POPCNT __attribute__((target_clones("popcnt", "default")))
#define RT_AVX2 __attribute__((target_clones("avx2", "default")))
#else
#define RT_POPCNT
#define RT_AVX2
#endif
#define RT_INLINE static inline __attribute__((always_inline))

RT_INLINE int popc_words(const uint32_t *a, int64_t n) {
    int s = 0;
    int64_t i = 0;
    for (; i + 2 <= n; i += 2) {
        uint64_t x;
        memcpy(&x, a + i, 8);
        s += __builtin_popcountll(x);
    }
    if (i < n)
        s += __builtin_popcount(a[i]);
    return s;
}

/* popc(a ^ w) over n words: with the bits past the channels zero in both (the blob's rule), the
 * exact +-1 dot of k channels is k - 2 popc(a ^ w), one count a word where the AND form of the
 * GPU's tensor cores takes three. */
RT_INLINE int popc_xor(const uint32_t *a, const uint32_t *w, int64_t n) {
    int s = 0;
    int64_t i = 0;
    for (; i + 2 <= n; i += 2) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, w + i, 8);
        s += __builtin_popcountll(x ^ y);
    }
    if (i < n)
        s += __builtin_popcount(a[i] ^ w[i]);
    return s;
}

/* popc(a & w) and popc(w) over n words in one pass. */
RT_INLINE int popc_and(const uint32_t *a, const uint32_t *w, int64_t n, int *popc_w) {
    int s = 0, pw = 0;
    int64_t i = 0;
    for (; i + 2 <= n; i += 2) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, w + i, 8);
        s += __builtin_popcountll(x & y);
        pw += __builtin_popcountll(y);
    }
    if (i < n) {
        s += __builtin_popcount(a[i] & w[i]);
        pw += __builtin_popcount(w[i]);
    }
    *popc_w = pw;
    return s;
}

/* ---------------------------------------------------------------- epilogues */

/* Write output channel o of cell `cell` (of `cells`) for bgemm/bconv epilogues other
 * than threshold; layout CS puts channels outermost. */
static void put_value(const Ctx *c, void *out, int64_t cell, int64_t cells, int64_t n, int64_t o,
                      int64_t layout, int64_t dot) {
    int64_t at = layout == BLOB_LAYOUT_CS ? o * cells + cell : cell * n + o;
    if (c->s->epilogue == BLOB_EPI_I32) {
        ((int32_t *)out)[at] = (int32_t)dot;
    } else {
        const float *scale = slot_ptr(c, BLOB_SLOT_P0, 0), *bias = slot_ptr(c, BLOB_SLOT_P1, 0);
        /* Two statements: rounded after the product, never contracted into an FMA, as the
         * GPU epilogue (__fmul_rn, __fadd_rn) does. */
        float prod = (float)dot * scale[o];
        ((float *)out)[at] = prod + bias[o];
    }
}

static bool threshold_bit(const Ctx *c, int64_t o, int64_t dot) {
    const int32_t *t = slot_ptr(c, BLOB_SLOT_P0, 0), *dir = slot_ptr(c, BLOB_SLOT_P1, 0);
    return dir[o] < 0 ? dot <= t[o] : dot >= t[o];
}

/* ---------------------------------------------------------------- binary steps */

RT_POPCNT static void run_bgemm(const Ctx *c) {
    const BlobBgemmParams *p = &c->s->bgemm;
    const uint32_t *w = slot_ptr(c, BLOB_SLOT_W, 0);
    int64_t u0, u1;
    my_units(c, c->batch * p->rows, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        int64_t item = u / p->rows, r = u % p->rows;
        const uint32_t *a = slot_ptr(c, BLOB_SLOT_IN, item);
        void *out = slot_ptr(c, BLOB_SLOT_OUT, item);
        const uint32_t *ar = a + r * p->words;
        uint32_t *bits = NULL;
        if (c->s->epilogue == BLOB_EPI_THRESHOLD) {
            bits = (uint32_t *)out + r * p->out_words;
            memset(bits, 0, (size_t)p->out_words * 4);
        }
        for (int64_t o = 0; o < p->n; o++) {
            int64_t dot = p->k - 2ll * popc_xor(ar, w + o * p->words, p->words);
            if (bits)
                bits[o / 32] |= (uint32_t)threshold_bit(c, o, dot) << (o % 32);
            else
                put_value(c, out, r, p->rows, p->n, o, BLOB_LAYOUT_SC, dot);
        }
    }
}

/* bgemm on tile-major operands (in_tile 128, w_tile 256; docs/blob-format.md): the batch's
 * M = batch*rows rows of A and the n rows of W are each a tile-major image with compact last
 * tiles, read chunk by chunk; the bits out (out_tile 128) tile-major the same way, or
 * row-major; i32 / f32 rows row-major as in run_bgemm. */
RT_POPCNT static void run_bgemm_tiled(const Ctx *c) {
    const BlobBgemmParams *p = &c->s->bgemm;
    const unsigned char *a = slot_ptr(c, BLOB_SLOT_IN, 0), *w = slot_ptr(c, BLOB_SLOT_W, 0);
    unsigned char *out = slot_ptr(c, BLOB_SLOT_OUT, 0);
    const int64_t m = (int64_t)c->batch * p->rows, nch = p->words / 4, ochunks = p->out_words / 4;
    for (int64_t r = 0; r < m; r++) {
        uint32_t word = 0;
        for (int64_t o = 0; o < p->n; o++) {
            int differ = 0;
            for (int64_t ch = 0; ch < nch; ch++) {
                uint32_t x[4], y[4];
                memcpy(x, a + blob_tiled_offset(r, ch, m, p->in_tile, nch), 16);
                memcpy(y, w + blob_tiled_offset(o, ch, p->n, p->w_tile, nch), 16);
                differ += popc_xor(x, y, 4);
            }
            int64_t dot = p->k - 2ll * differ;
            if (c->s->epilogue != BLOB_EPI_THRESHOLD) {
                put_value(c, out, r, m, p->n, o, BLOB_LAYOUT_SC, dot);
                continue;
            }
            word |= (uint32_t)threshold_bit(c, o, dot) << (o % 32);
            if (o % 32 == 31 || o == p->n - 1) {
                uint64_t at = p->out_tile ? blob_tiled_offset(r, o / 128, m, p->out_tile, ochunks) + (o / 32 % 4) * 4
                                          : (uint64_t)(r * p->out_words + o / 32) * 4;
                memcpy(out + at, &word, 4);
                word = 0;
            }
        }
        if (c->s->epilogue == BLOB_EPI_THRESHOLD) /* the words past the last channel are zeros */
            for (int64_t wi = (p->n + 31) / 32; wi < p->out_words; wi++) {
                uint64_t at = p->out_tile ? blob_tiled_offset(r, wi / 4, m, p->out_tile, ochunks) + (wi % 4) * 4
                                          : (uint64_t)(r * p->out_words + wi) * 4;
                memset(out + at, 0, 4);
            }
    }
}

/* retile: byte b of each row from one layout to the other, bits past k zero. */
static void run_retile(const Ctx *c) {
    const BlobRetileParams *p = &c->s->retile;
    const unsigned char *in = slot_ptr(c, BLOB_SLOT_IN, 0);
    unsigned char *out = slot_ptr(c, BLOB_SLOT_OUT, 0);
    const int64_t m = (int64_t)c->batch * p->rows;
    for (int64_t r = 0; r < m; r++)
        for (int64_t b = 0; b < p->out_ld; b++) {
            unsigned v = 0;
            if (b * 8 < p->k) {
                v = in[blob_row_byte(r, b, m, p->in_tile, p->in_ld)];
                if (p->k - b * 8 < 8)
                    v &= (1u << (p->k - b * 8)) - 1u;
            }
            out[blob_row_byte(r, b, m, p->out_tile, p->out_ld)] = (unsigned char)v;
        }
}

/* Output channels a bconv's CPU loops take at once (their dots on the stack). */
enum { BCONV_CHANNELS = 256 };

/* The exact ±1 dots of output channels o0 .. o0+n-1 (n <= BCONV_CHANNELS) at output position
 * (oy, ox), into dot[0 .. n): tap by tap, the tap's input pixel read once for all of them. */
RT_POPCNT static void bconv_dots(const BlobBconvParams *p, const uint32_t *in, const uint32_t *w,
                                 int64_t oy, int64_t ox, int64_t o0, int64_t n, int64_t *dot) {
    const int64_t taps = p->kh * p->kw, words = p->words;
    memset(dot, 0, (size_t)n * sizeof *dot);
    w += o0 * taps * words;
    for (int64_t ky = 0; ky < p->kh; ky++) {
        int64_t iy = oy * p->stride_h - p->pad_top + ky * p->dil_h;
        for (int64_t kx = 0; kx < p->kw; kx++) {
            int64_t ix = ox * p->stride_w - p->pad_left + kx * p->dil_w;
            const uint32_t *wt = w + (ky * p->kw + kx) * words; /* channel o at wt + o * taps * words */
            if (iy >= 0 && iy < p->h && ix >= 0 && ix < p->w) {
                const uint32_t *at = in + (iy * p->w + ix) * words;
                for (int64_t o = 0; o < n; o++)
                    dot[o] += p->c - 2ll * popc_xor(at, wt + o * taps * words, words);
            } else if (p->pad_value != 0) {
                /* A tap of all +1 (or all -1) adds sum(w) (or -sum(w)); zero padding adds 0. */
                for (int64_t o = 0; o < n; o++) {
                    int64_t sum_w = 2ll * popc_words(wt + o * taps * words, words) - p->c;
                    dot[o] += p->pad_value > 0 ? sum_w : -sum_w;
                }
            }
        }
    }
}

/* A bconv with a float chain: f32 NCHW into out (unless only bits are asked for) and the
 * bits of v >= 0 (binarize {zero=1}) NHWC-packed into x1, or into out when there is no f32. */
static void run_bconv_chain(const Ctx *c) {
    const BlobBconvParams *p = &c->s->bconv;
    const uint32_t *w = slot_ptr(c, BLOB_SLOT_W, 0);
    const float *ep = slot_ptr(c, BLOB_SLOT_P0, 0);
    bool x1 = c->s->slot[BLOB_SLOT_X1].space != BLOB_SPACE_NONE, f32 = x1 || p->out_words == 0;
    int64_t cells = p->oh * p->ow, u0, u1;
    my_units(c, c->batch * cells, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        int64_t item = u / cells, cell = u % cells;
        const uint32_t *in = slot_ptr(c, BLOB_SLOT_IN, item);
        const float *r = slot_ptr(c, BLOB_SLOT_IN2, item);
        const uint32_t *rbits = (const uint32_t *)r; /* a shortcut of bits: +-1, res_words a pixel */
        int64_t res_words = p->epi_residual >> 2;
        float *out = f32 ? slot_ptr(c, BLOB_SLOT_OUT, item) : NULL;
        uint32_t *bits = p->out_words ? slot_ptr(c, x1 ? BLOB_SLOT_X1 : BLOB_SLOT_OUT, item) : NULL;
        uint32_t *row = bits ? bits + cell * p->out_words : NULL;
        if (row)
            memset(row, 0, (size_t)p->out_words * 4);
        for (int64_t o0 = 0; o0 < p->o; o0 += BCONV_CHANNELS) {
            int64_t n = p->o - o0 < BCONV_CHANNELS ? p->o - o0 : BCONV_CHANNELS, dot[BCONV_CHANNELS];
            bconv_dots(p, in, w, cell / p->ow, cell % p->ow, o0, n, dot);
            for (int64_t o = o0; o < o0 + n; o++) {
                int64_t at = o * cells + cell;
                float rv = !r           ? 0.0f
                           : !res_words ? r[at]
                           : rbits[cell * res_words + o / 32] >> (o % 32) & 1 ? 1.0f : -1.0f;
                float v = blob_bconv_chain_value(p, ep, o, dot[o - o0], rv);
                if (out)
                    out[at] = v;
                if (row) /* NaN compares false: -1 */
                    row[o / 32] |= (uint32_t)(v >= 0.0f) << (o % 32);
            }
        }
    }
}

static void run_bconv(const Ctx *c) {
    const BlobBconvParams *p = &c->s->bconv;
    if (c->s->epilogue == BLOB_EPI_AFFINE && p->epi_stages > 0) {
        run_bconv_chain(c);
        return;
    }
    const uint32_t *w = slot_ptr(c, BLOB_SLOT_W, 0);
    const int32_t *dir = slot_ptr(c, BLOB_SLOT_P1, 0);
    /* Output cells cover f x f conv positions: the OR of their bits (a max-pool of +-1), or with
     * pool 2 (a max-pool of the accumulators, then the threshold) their AND where dir < 0. A
     * threshold by a residual of bits (res_words > 0, no pool) takes row 0 or 1 of t and dir
     * by the residual's bit of the channel. */
    int64_t f = p->pool ? 2 : 1, res_words = p->epi_residual >> 2;
    int64_t ch = p->oh / f, cw = p->ow / f, u0, u1;
    my_units(c, c->batch * ch, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        int64_t item = u / ch, y = u % ch;
        const uint32_t *in = slot_ptr(c, BLOB_SLOT_IN, item);
        const uint32_t *res = res_words ? slot_ptr(c, BLOB_SLOT_IN2, item) : NULL;
        void *out = slot_ptr(c, BLOB_SLOT_OUT, item);
        for (int64_t x = 0; x < cw; x++) {
            int64_t cell = y * cw + x;
            uint32_t *bits = NULL;
            if (c->s->epilogue == BLOB_EPI_THRESHOLD) {
                bits = (uint32_t *)out + cell * p->out_words;
                memset(bits, 0, (size_t)p->out_words * 4);
            }
            for (int64_t o0 = 0; o0 < p->o; o0 += BCONV_CHANNELS) {
                int64_t n = p->o - o0 < BCONV_CHANNELS ? p->o - o0 : BCONV_CHANNELS, dot[4][BCONV_CHANNELS];
                for (int64_t d = 0; d < f * f; d++)
                    bconv_dots(p, in, w, y * f + d / f, x * f + d % f, o0, n, dot[d]);
                for (int64_t o = o0; o < o0 + n; o++) {
                    if (!bits) {
                        put_value(c, out, cell, ch * cw, p->o, o, p->out_layout, dot[0][o - o0]);
                        continue;
                    }
                    bool bit;
                    if (res) {
                        int64_t row = res[cell * res_words + o / 32] >> (o % 32) & 1;
                        bit = threshold_bit(c, row * p->o + o, dot[0][o - o0]);
                    } else {
                        bool all = p->pool == 2 && dir[o] < 0;
                        bit = all;
                        for (int64_t d = 0; d < f * f && bit == all; d++)
                            bit = threshold_bit(c, o, dot[d][o - o0]);
                    }
                    bits[o / 32] |= (uint32_t)bit << (o % 32);
                }
            }
        }
    }
}

static void run_pack(const Ctx *c) {
    const BlobPackParams *p = &c->s->pack;
    for (int64_t item = 0; item < c->batch; item++) {
        const float *x = slot_ptr(c, BLOB_SLOT_IN, item);
        uint32_t *bits = slot_ptr(c, BLOB_SLOT_OUT, item);
        memset(bits, 0, (size_t)(p->spatial * p->words * 4));
        for (int64_t s = 0; s < p->spatial; s++)
            for (int64_t ch = 0; ch < p->channels; ch++) {
                float v = p->layout == BLOB_LAYOUT_CS ? x[ch * p->spatial + s] : x[s * p->channels + ch];
                /* NaN compares false both ways: it packs as -1. */
                bool bit = v > 0.0f || (v == 0.0f && p->zero > 0);
                bits[s * p->words + ch / 32] |= (uint32_t)bit << (ch % 32);
            }
    }
}

static void run_unpack(const Ctx *c) {
    const BlobUnpackParams *p = &c->s->unpack;
    for (int64_t item = 0; item < c->batch; item++) {
        const uint32_t *bits = slot_ptr(c, BLOB_SLOT_IN, item);
        float *y = slot_ptr(c, BLOB_SLOT_OUT, item);
        for (int64_t s = 0; s < p->spatial; s++)
            for (int64_t ch = 0; ch < p->channels; ch++) {
                float v = (bits[s * p->words + ch / 32] >> (ch % 32)) & 1 ? 1.0f : -1.0f;
                y[p->layout == BLOB_LAYOUT_CS ? ch * p->spatial + s : s * p->channels + ch] = v;
            }
    }
}

/* ---------------------------------------------------------------- float steps */

static void run_dense(const Ctx *c) {
    const BlobDenseParams *p = &c->s->dense;
    const float *w = slot_ptr(c, BLOB_SLOT_W, 0), *b = slot_ptr(c, BLOB_SLOT_P0, 0);
    for (int64_t item = 0; item < c->batch; item++) {
        const float *x = slot_ptr(c, BLOB_SLOT_IN, item);
        float *y = slot_ptr(c, BLOB_SLOT_OUT, item);
        for (int64_t r = 0; r < p->rows; r++)
            for (int64_t o = 0; o < p->n; o++) {
                float acc = 0.0f;
                for (int64_t k = 0; k < p->k; k++)
                    acc += x[r * p->k + k] * w[o * p->k + k];
                y[r * p->n + o] = b ? b[o] + acc : acc;
            }
    }
}

/* Outputs ox0 .. ox0 + RT_ROW - 1 of row oy of a float conv2d for nch output channels o0 .. of
 * one group. Each output is the reference's sum (docs/blob-format.md "conv2d"): products in
 * (ci, ky, kx) order, taps outside the image skipped (not added as 0: 0 * inf is NaN, and
 * -0 + 0 is +0), then the bias. The nch x RT_ROW outputs run as independent chains so that
 * they overlap instead of waiting on each other (one chain of dependent sums was latency-bound:
 * a ResNet stem took half a CPU run), each input read once for the nch channels. `edge`: some
 * tap along the row falls outside the image, or the row ends before ox0 + RT_ROW; such taps
 * leave their sums as they are (a select, exact). nch (1 or RT_CHANNELS) and edge are
 * constants where this is inlined. */
enum { RT_ROW = 8, RT_CHANNELS = 4 };
/* RT_ROW lanes, written as GCC vectors so that -O2 (which leaves such loops scalar) computes
 * them as SIMD too; each lane's mul and add round separately (no contraction under -std=c11). */
typedef float RtRowF __attribute__((vector_size(4 * RT_ROW)));
typedef int32_t RtRowI __attribute__((vector_size(4 * RT_ROW)));
static inline __attribute__((always_inline)) void conv2d_row_sums(const BlobConv2dParams *p, const float *x,
                                                                  const float *w, const float *b, int64_t o0,
                                                                  int nch, bool edge, int64_t oy, int64_t ox0,
                                                                  float out[RT_CHANNELS][RT_ROW]) {
    int64_t cg = p->c / p->groups, g = o0 / (p->o / p->groups), taps = p->kh * p->kw;
    RtRowF acc[RT_CHANNELS];
    for (int q = 0; q < nch; q++)
        acc[q] = (RtRowF){0};
    for (int64_t ci = 0; ci < cg; ci++)
        for (int64_t ky = 0; ky < p->kh; ky++) {
            int64_t iy = oy * p->stride_h - p->pad_top + ky * p->dil_h;
            if (iy < 0 || iy >= p->h)
                continue;
            const float *xr = x + ((g * cg + ci) * p->h + iy) * p->w;
            const float *wr = w + ((o0 * cg + ci) * p->kh + ky) * p->kw; /* channel o0 + q at q * cg * taps */
            for (int64_t kx = 0; kx < p->kw; kx++) {
                RtRowF xv;
                RtRowI in; /* all ones where the tap is inside */
                for (int j = 0; j < RT_ROW; j++) {
                    int64_t ix = (ox0 + j) * p->stride_w - p->pad_left + kx * p->dil_w;
                    bool inside = !edge || (ox0 + j < p->ow && ix >= 0 && ix < p->w);
                    in[j] = inside ? -1 : 0;
                    xv[j] = xr[inside ? ix : 0];
                }
                for (int q = 0; q < nch; q++) {
                    RtRowF sum = acc[q] + xv * wr[q * cg * taps + kx];
                    acc[q] = edge ? (RtRowF)(((RtRowI)sum & in) | ((RtRowI)acc[q] & ~in)) : sum;
                }
            }
        }
    for (int q = 0; q < nch; q++)
        for (int j = 0; j < RT_ROW; j++)
            out[q][j] = b ? b[o0 + q] + acc[q][j] : acc[q][j];
}

/* Whether outputs ox0 .. ox0 + RT_ROW - 1 of a row exist and all their taps along it are inside. */
static bool conv2d_row_inside(const BlobConv2dParams *p, int64_t ox0) {
    return ox0 + RT_ROW <= p->ow && ox0 * p->stride_w - p->pad_left >= 0 &&
           (ox0 + RT_ROW - 1) * p->stride_w - p->pad_left + (p->kw - 1) * p->dil_w < p->w;
}

RT_AVX2 static void run_conv2d(const Ctx *c) {
    const BlobConv2dParams *p = &c->s->conv2d;
    const float *w = slot_ptr(c, BLOB_SLOT_W, 0), *b = slot_ptr(c, BLOB_SLOT_P0, 0);
    const float *chain = slot_ptr(c, BLOB_SLOT_IN2, 0);
    /* bits or codes out: planes of out_words words a pixel (one for bits), then the NaN flags */
    const int64_t planes = p->levels ? blob_code_planes(p->levels) : 1;
    const int64_t per_group = p->o / p->groups, px_words = p->out_words * (planes + p->nan_flags);
    int64_t u0, u1;
    my_units(c, c->batch * p->oh, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) { /* output row oy of item */
        int64_t item = u / p->oh, oy = u % p->oh;
        const float *x = slot_ptr(c, BLOB_SLOT_IN, item);
        void *out = slot_ptr(c, BLOB_SLOT_OUT, item);
        if (p->out_words)
            memset((uint32_t *)out + oy * p->ow * px_words, 0, (size_t)(p->ow * px_words) * 4);
        float rows[RT_CHANNELS][RT_ROW];
        for (int64_t o0 = 0, nch; o0 < p->o; o0 += nch) {
            /* RT_CHANNELS channels at once where they lie in one group */
            nch = o0 % per_group + RT_CHANNELS <= per_group ? RT_CHANNELS : 1;
            for (int64_t ox0 = 0; ox0 < p->ow; ox0 += RT_ROW) {
                bool inside = conv2d_row_inside(p, ox0);
                if (nch == RT_CHANNELS && inside)
                    conv2d_row_sums(p, x, w, b, o0, RT_CHANNELS, false, oy, ox0, rows);
                else if (nch == RT_CHANNELS)
                    conv2d_row_sums(p, x, w, b, o0, RT_CHANNELS, true, oy, ox0, rows);
                else if (inside)
                    conv2d_row_sums(p, x, w, b, o0, 1, false, oy, ox0, rows);
                else
                    conv2d_row_sums(p, x, w, b, o0, 1, true, oy, ox0, rows);
                for (int64_t o = o0; o < o0 + nch; o++)
                    for (int64_t ox = ox0; ox < ox0 + RT_ROW && ox < p->ow; ox++) {
                        float v = rows[o - o0][ox - ox0];
                        if (!p->out_words) {
                            ((float *)out)[(o * p->oh + oy) * p->ow + ox] =
                                p->epi_stages ? blob_conv2d_chain_value(p, chain, o, v) : v;
                            continue;
                        }
                        int code = p->levels ? blob_conv2d_chain_code(p, chain, o, v)
                                             : blob_conv2d_chain_bit(p, chain, o, v);
                        uint32_t *px = (uint32_t *)out + (oy * p->ow + ox) * px_words + o / 32;
                        if (code < 0 && p->nan_flags)
                            px[planes * p->out_words] |= 1u << (o % 32);
                        for (int64_t pl = 0; code > 0 && pl < planes; pl++)
                            px[pl * p->out_words] |= (uint32_t)((code >> pl) & 1) << (o % 32);
                    }
            }
        }
    }
}

static void run_affine(const Ctx *c) {
    const BlobAffineParams *p = &c->s->affine;
    const float *scale = slot_ptr(c, BLOB_SLOT_P0, 0), *bias = slot_ptr(c, BLOB_SLOT_P1, 0);
    for (int64_t item = 0; item < c->batch; item++) {
        const float *x = slot_ptr(c, BLOB_SLOT_IN, item);
        float *y = slot_ptr(c, BLOB_SLOT_OUT, item);
        for (int64_t i = 0; i < p->channels * p->spatial; i++) {
            int64_t ch = p->layout == BLOB_LAYOUT_CS ? i / p->spatial : i % p->channels;
            /* rounded, not fused: see put_value; div: an exact division (codegen of Div) */
            float prod = p->div ? x[i] / scale[ch] : x[i] * scale[ch];
            y[i] = prod + bias[ch];
        }
    }
}

/* A max-pool of NHWC-packed bits: the OR of the window's real pixels, word by word (the AND for
 * the channels set in the optional mask p0: a decreasing stage after the pool turns its max into
 * a min), and 0 where one of them has its NaN flag. */
static void run_bit_pool(const Ctx *c) {
    const BlobPoolParams *p = &c->s->pool;
    const uint32_t *and_mask = slot_ptr(c, BLOB_SLOT_P0, 0);
    int64_t px_words = p->words * (1 + p->nan_flags);
    for (int64_t item = 0; item < c->batch; item++) {
        const uint32_t *x = slot_ptr(c, BLOB_SLOT_IN, item);
        uint32_t *y = slot_ptr(c, BLOB_SLOT_OUT, item);
        for (int64_t oy = 0; oy < p->oh; oy++)
            for (int64_t ox = 0; ox < p->ow; ox++)
                for (int64_t wi = 0; wi < p->out_words; wi++) {
                    int64_t y0 = oy * p->stride_h - p->pad_top, x0 = ox * p->stride_w - p->pad_left;
                    uint32_t any = 0, all = 0xffffffffu, nan = 0;
                    for (int64_t iy = y0 < 0 ? 0 : y0; wi < p->words && iy < y0 + p->kh && iy < p->h; iy++)
                        for (int64_t ix = x0 < 0 ? 0 : x0; ix < x0 + p->kw && ix < p->w; ix++) {
                            any |= x[(iy * p->w + ix) * px_words + wi];
                            all &= x[(iy * p->w + ix) * px_words + wi];
                            if (p->nan_flags)
                                nan |= x[(iy * p->w + ix) * px_words + p->words + wi];
                        }
                    uint32_t m = and_mask && wi < p->words ? and_mask[wi] : 0u;
                    y[(oy * p->ow + ox) * p->out_words + wi] = wi < p->words ? ((any & ~m) | (all & m)) & ~nan : 0u;
                }
    }
}

static void run_code_pool(const Ctx *c);

static void run_pool(const Ctx *c, bool max) {
    const BlobPoolParams *p = &c->s->pool;
    if (p->planes) {
        run_code_pool(c);
        return;
    }
    if (p->words) {
        run_bit_pool(c);
        return;
    }
    int64_t u0, u1;
    my_units(c, c->batch * p->c, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        int64_t item = u / p->c, ch = u % p->c;
        const float *x = slot_ptr(c, BLOB_SLOT_IN, item);
        float *y = slot_ptr(c, BLOB_SLOT_OUT, item);
        for (int64_t oy = 0; oy < p->oh; oy++)
            for (int64_t ox = 0; ox < p->ow; ox++) {
                int64_t y0 = oy * p->stride_h - p->pad_top, x0 = ox * p->stride_w - p->pad_left;
                int64_t y1 = y0 + p->kh, x1 = x0 + p->kw;
                /* The divisor with pads counts the padded extent, not past it (ONNX). */
                int64_t py1 = y1 < p->h + p->pad_bottom ? y1 : p->h + p->pad_bottom;
                int64_t px1 = x1 < p->w + p->pad_right ? x1 : p->w + p->pad_right;
                int64_t padded = (py1 - y0) * (px1 - x0);
                y0 = y0 < 0 ? 0 : y0, x0 = x0 < 0 ? 0 : x0;
                y1 = y1 < p->h ? y1 : p->h, x1 = x1 < p->w ? x1 : p->w;
                float acc = max ? -INFINITY : 0.0f;
                for (int64_t iy = y0; iy < y1; iy++)
                    for (int64_t ix = x0; ix < x1; ix++) {
                        float v = x[(ch * p->h + iy) * p->w + ix];
                        if (!max)
                            acc += v;
                        else if (v > acc || v != v) /* a NaN wins, as in the reference */
                            acc = acc != acc ? acc : v;
                    }
                if (!max)
                    acc /= (float)(p->count_include_pad ? padded : (y1 - y0) * (x1 - x0));
                y[(ch * p->oh + oy) * p->ow + ox] = acc;
            }
    }
}

static void run_gap(const Ctx *c) {
    const BlobGapParams *p = &c->s->gap;
    for (int64_t item = 0; item < c->batch; item++) {
        const float *x = slot_ptr(c, BLOB_SLOT_IN, item);
        const uint32_t *xb = slot_ptr(c, BLOB_SLOT_IN, item); /* words > 0: NHWC-packed bits */
        float *y = slot_ptr(c, BLOB_SLOT_OUT, item);
        for (int64_t ch = 0; ch < p->channels; ch++) {
            float acc = 0.0f;
            for (int64_t s = 0; s < p->spatial; s++)
                acc += p->words ? ((xb[s * p->words + ch / 32] >> (ch % 32)) & 1u ? 1.0f : -1.0f)
                                : x[ch * p->spatial + s];
            y[ch] = acc / (float)p->spatial;
        }
    }
}

static void run_add(const Ctx *c) {
    const BlobAddParams *p = &c->s->add;
    for (int64_t item = 0; item < c->batch; item++) {
        const void *a = slot_ptr(c, BLOB_SLOT_IN, item), *b = slot_ptr(c, BLOB_SLOT_IN2, item);
        void *y = slot_ptr(c, BLOB_SLOT_OUT, item);
        for (int64_t i = 0; i < p->count; i++) {
            if (p->dtype == BLOB_DTYPE_F32)
                ((float *)y)[i] = ((const float *)a)[i] + ((const float *)b)[i];
            else /* wraps like the GPU's 32-bit add instead of overflowing */
                ((int32_t *)y)[i] = (int32_t)((uint32_t)((const int32_t *)a)[i] +
                                              (uint32_t)((const int32_t *)b)[i]);
        }
    }
}

static void run_relu(const Ctx *c) {
    for (int64_t item = 0; item < c->batch; item++) {
        const float *x = slot_ptr(c, BLOB_SLOT_IN, item);
        float *y = slot_ptr(c, BLOB_SLOT_OUT, item);
        for (int64_t i = 0; i < c->s->relu.count; i++)
            y[i] = x[i] < 0.0f ? 0.0f : x[i]; /* NaN stays NaN, as ONNX Relu */
    }
}

static void run_argmax(const Ctx *c) {
    const BlobArgmaxParams *p = &c->s->argmax;
    for (int64_t item = 0; item < c->batch; item++) {
        const float *x = slot_ptr(c, BLOB_SLOT_IN, item);
        int64_t *y = slot_ptr(c, BLOB_SLOT_OUT, item);
        for (int64_t r = 0; r < p->rows; r++) {
            int64_t best = 0;
            for (int64_t i = 1; i < p->n; i++)
                if (x[r * p->n + i] > x[r * p->n + best])
                    best = i;
            y[r] = best;
        }
    }
}

static void run_softmax(const Ctx *c) {
    const BlobSoftmaxParams *p = &c->s->softmax;
    for (int64_t item = 0; item < c->batch; item++) {
        const float *x = slot_ptr(c, BLOB_SLOT_IN, item);
        float *y = slot_ptr(c, BLOB_SLOT_OUT, item);
        for (int64_t r = 0; r < p->rows; r++) {
            const float *xr = x + r * p->n;
            float *yr = y + r * p->n, m = -INFINITY, sum = 0.0f;
            for (int64_t i = 0; i < p->n; i++)
                m = xr[i] > m ? xr[i] : m;
            for (int64_t i = 0; i < p->n; i++) {
                yr[i] = expf(xr[i] - m);
                sum += yr[i];
            }
            for (int64_t i = 0; i < p->n; i++)
                yr[i] /= sum;
        }
    }
}

static void run_cast(const Ctx *c) {
    const BlobCastParams *p = &c->s->cast;
    for (int64_t item = 0; item < c->batch; item++) {
        const void *x = slot_ptr(c, BLOB_SLOT_IN, item);
        float *y = slot_ptr(c, BLOB_SLOT_OUT, item);
        for (int64_t i = 0; i < p->count; i++)
            y[i] = p->from == BLOB_DTYPE_I32  ? (float)((const int32_t *)x)[i]
                   : p->from == BLOB_DTYPE_I8 ? (float)((const int8_t *)x)[i]
                                              : (float)((const uint8_t *)x)[i];
    }
}

/* The levels of a qgemm / qconv threshold epilogue that the accumulator v reaches:
 * sum_l (dir < 0 ? v <= t[l] : v >= t[l]). */
static int level_count(int64_t v, const int32_t *t, int32_t dir, int L) {
    int count = 0;
    for (int l = 0; l < L; l++)
        count += dir < 0 ? v <= t[l] : v >= t[l];
    return count;
}

/* The bit-plane dot of row a (xb planes of ld words) with output n of W ([wb][N][ld]): the
 * AND-popc of two 0/1 planes is the dot of their bits, so each plane pair adds its popcount
 * shifted by p + q (negated for a signed top weight plane). */
RT_POPCNT static int64_t planes_dot(const uint32_t *a, const uint32_t *W, int64_t n, int64_t N, int64_t ld, int xb,
                          int wb, bool wsigned, bool bipolar) {
    int64_t v = 0;
    for (int p = 0; p < xb; p++, a += ld) {
        int pw;
        if (bipolar) { /* u = 2b - 1 */
            v += ((int64_t)2 * popc_and(a, W + n * ld, ld, &pw) - popc_words(a, ld)) * ((int64_t)1 << p);
            continue;
        }
        for (int q = 0; q < wb; q++) {
            int64_t d = (int64_t)popc_and(a, W + ((int64_t)q * N + n) * ld, ld, &pw) << (p + q);
            v += wsigned && q == wb - 1 ? -d : d;
        }
    }
    return v;
}

/* One qgemm over M rows (blob.h BlobQgemmParams): operands as bit-planes or int8 codes
 * (format), the accumulator into acc (t NULL) or the level counts into Y as planes or bytes
 * (yformat). */
static void qgemm_rows(const void *A, const void *W, int format, int64_t M, int64_t N, int64_t ld, int xb,
                       int wb, bool wsigned, bool bipolar, int32_t *acc, const int32_t *t,
                       const int32_t *dir, int L, int yb, int yformat, void *Y) {
    bool y8 = yformat == BLOB_CODES_INT8;
    int64_t ldy = y8 ? blob_int8_ld(N) : (N + 255) / 256 * 8; /* bytes / words: zeros past N */
    if (t)
        memset(Y, 0, (size_t)(M * ldy) * (y8 ? 1 : (size_t)yb * 4));
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            int64_t v = 0;
            if (format == BLOB_CODES_INT8) { /* u8 codes times s8 codes, zero bytes past K */
                const uint8_t *a = (const uint8_t *)A + m * ld;
                const int8_t *w = (const int8_t *)W + n * ld;
                for (int64_t k = 0; k < ld; k++)
                    v += (int64_t)a[k] * w[k];
            } else {
                v = planes_dot((const uint32_t *)A + m * xb * ld, W, n, N, ld, xb, wb, wsigned, bipolar);
            }
            if (!t) {
                acc[m * N + n] = (int32_t)v;
                continue;
            }
            int count = level_count(v, t + n * L, dir[n], L);
            if (y8)
                ((uint8_t *)Y)[m * ldy + n] = (uint8_t)count;
            for (int b = 0; !y8 && b < yb; b++)
                if ((count >> b) & 1)
                    ((uint32_t *)Y)[(m * yb + b) * ldy + n / 32] |= 1u << (n % 32);
        }
}

void rt_cpu_qgemm_planes(const uint32_t *A, const uint32_t *W, int64_t M, int64_t N, int64_t ld,
                         int xb, int wb, bool wsigned, bool bipolar, int32_t *acc,
                         const int32_t *t, const int32_t *dir, int L, int yb, uint32_t *Y) {
    qgemm_rows(A, W, BLOB_CODES_PLANES, M, N, ld, xb, wb, wsigned, bipolar, acc, t, dir, L, yb,
               BLOB_CODES_PLANES, Y);
}

void rt_cpu_qgemm_int8(const uint8_t *A, const int8_t *W, int64_t M, int64_t N, int64_t ld,
                       int32_t *acc, const int32_t *t, const int32_t *dir, int L, int yb,
                       int yformat, void *Y) {
    qgemm_rows(A, W, BLOB_CODES_INT8, M, N, ld, 8, 8, true, false, acc, t, dir, L, yb, yformat, Y);
}

/* ---------------------------------------------------------------- low-bit steps */

static float bits_to_float(int64_t b) {
    uint32_t u = (uint32_t)b;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* A max-pool of codes (conv2d's with levels): a window's largest code over its real pixels, as
 * image planes, 0 where one of them has its NaN flag; x0, the quantizer's float of it (NaN
 * there). The codes are monotone in the pooled float value, so this is the pool's quantize. */
static void run_code_pool(const Ctx *c) {
    const BlobPoolParams *p = &c->s->pool;
    const int64_t px_words = p->words * (p->planes + p->nan_flags);
    const int64_t plane = blob_image_plane_words(p->oh * p->ow, p->out_words);
    const float scale = bits_to_float(p->scale_bits), zeropt = bits_to_float(p->zeropt_bits);
    for (int64_t item = 0; item < c->batch; item++) {
        const uint32_t *x = slot_ptr(c, BLOB_SLOT_IN, item);
        uint32_t *y = slot_ptr(c, BLOB_SLOT_OUT, item);
        float *f = slot_ptr(c, BLOB_SLOT_X0, item);
        memset(y, 0, (size_t)(p->planes * plane) * 4);
        for (int64_t oy = 0; oy < p->oh; oy++)
            for (int64_t ox = 0; ox < p->ow; ox++)
                for (int64_t ch = 0; ch < p->c; ch++) {
                    int64_t y0 = oy * p->stride_h - p->pad_top, x0 = ox * p->stride_w - p->pad_left;
                    uint32_t best = 0, nan = 0, bit = 1u << (ch % 32);
                    for (int64_t iy = y0 < 0 ? 0 : y0; iy < y0 + p->kh && iy < p->h; iy++)
                        for (int64_t ix = x0 < 0 ? 0 : x0; ix < x0 + p->kw && ix < p->w; ix++) {
                            const uint32_t *px = x + (iy * p->w + ix) * px_words + ch / 32;
                            uint32_t code = 0;
                            for (int64_t b = 0; b < p->planes; b++)
                                code |= ((px[b * p->words] & bit) != 0) << b;
                            best = code > best ? code : best;
                            nan |= p->nan_flags ? px[p->planes * p->words] & bit : 0;
                        }
                    int64_t s = oy * p->ow + ox;
                    for (int64_t b = 0; !nan && b < p->planes; b++)
                        y[b * plane + s * p->out_words + ch / 32] |= ((best >> b) & 1u) << (ch % 32);
                    if (f)
                        f[ch * p->oh * p->ow + s] = nan ? NAN : blob_dequantize((float)((int64_t)best + p->lo), scale, zeropt);
                }
    }
}

/* The level index of one element, as the interpreter's quantize computes it. */
static uint32_t quantize_code(const BlobQuantizeParams *p, float x, float scale, float zeropt) {
    float q = blob_quantize(x, scale, zeropt, (float)p->lo, (float)p->hi, p->rounding);
    return isnan(q) ? 0u : (uint32_t)(int64_t)(q - (float)p->lo);
}

/* quantize to image planes: an NCHW item to [bits][spatial][ld] (the qconv operand). */
static void run_quantize_image(const Ctx *c, float scale, float zeropt) {
    const BlobQuantizeParams *p = &c->s->quantize;
    int64_t S = p->spatial, C = p->k / S, plane = blob_image_plane_words(S, p->ld);
    for (int64_t item = 0; item < c->batch; item++) {
        const float *x = slot_ptr(c, BLOB_SLOT_IN, item);
        uint32_t *out = slot_ptr(c, BLOB_SLOT_OUT, item);
        memset(out, 0, (size_t)(p->bits * plane) * 4);
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t s = 0; s < S; s++) {
                uint32_t n = quantize_code(p, x[ch * S + s], scale, zeropt);
                for (int64_t b = 0; b < p->bits; b++)
                    out[b * plane + s * p->ld + ch / 32] |= ((n >> b) & 1u) << (ch % 32);
            }
    }
}

static void run_quantize(const Ctx *c) {
    const BlobQuantizeParams *p = &c->s->quantize;
    float scale = bits_to_float(p->scale_bits), zeropt = bits_to_float(p->zeropt_bits);
    if (p->spatial) {
        run_quantize_image(c, scale, zeropt);
        return;
    }
    for (int64_t item = 0; item < c->batch; item++) {
        const float *x = slot_ptr(c, BLOB_SLOT_IN, item);
        uint32_t *out = slot_ptr(c, BLOB_SLOT_OUT, item);
        if (p->format == BLOB_CODES_INT8) { /* a byte per code, zero bytes past k */
            uint8_t *y = (uint8_t *)out;
            memset(y, 0, (size_t)(p->rows * p->ld));
            for (int64_t r = 0; r < p->rows; r++)
                for (int64_t k = 0; k < p->k; k++)
                    y[r * p->ld + k] = (uint8_t)quantize_code(p, x[r * p->k + k], scale, zeropt);
            continue;
        }
        if (!p->dequant)
            memset(out, 0, (size_t)(p->rows * p->bits * p->ld) * 4);
        for (int64_t r = 0; r < p->rows; r++)
            for (int64_t k = 0; k < p->k; k++) {
                float q = blob_quantize(x[r * p->k + k], scale, zeropt, (float)p->lo, (float)p->hi, p->rounding);
                if (p->dequant) { /* Quant's float result, the interpreter's operations */
                    ((float *)out)[r * p->k + k] = blob_dequantize(q, scale, zeropt);
                    continue;
                }
                uint32_t n = isnan(q) ? 0u : (uint32_t)(int64_t)(q - (float)p->lo);
                for (int64_t b = 0; b < p->bits; b++)
                    out[(r * p->bits + b) * p->ld + k / 32] |= ((n >> b) & 1u) << (k % 32);
            }
    }
}

static void run_qgemm(const Ctx *c) {
    const BlobQgemmParams *p = &c->s->qgemm;
    const void *w = slot_ptr(c, BLOB_SLOT_W, 0);
    const int32_t *t = slot_ptr(c, BLOB_SLOT_P0, 0), *dir = slot_ptr(c, BLOB_SLOT_P1, 0);
    for (int64_t item = 0; item < c->batch; item++) {
        void *out = slot_ptr(c, BLOB_SLOT_OUT, item);
        bool codes = p->epi == 2;
        qgemm_rows(slot_ptr(c, BLOB_SLOT_IN, item), w, (int)p->format, p->rows, p->n, p->ld, (int)p->xb,
                   (int)p->wb, p->wsigned, p->bipolar, codes ? NULL : out, codes ? t : NULL, dir,
                   (int)p->levels, (int)p->yb, (int)p->yformat, out);
        int32_t *y = out;
        for (int64_t i = 0; p->epi == 3 && i < p->rows * p->n; i++) /* counts, in place */
            y[i] = level_count(y[i], t + i % p->n * p->levels, dir[i % p->n], (int)p->levels);
    }
}

/* Word wi of plane b of a padded tap: pad_code's bit b in every real channel (c channels). */
static uint32_t pad_word(int64_t pad_code, int64_t b, int64_t c, int64_t wi) {
    int64_t bits = c - 32 * wi;
    uint32_t real = bits >= 32 ? 0xffffffffu : bits <= 0 ? 0u : (1u << bits) - 1u;
    return (pad_code >> b) & 1 ? real : 0u;
}

/* Output channels a qconv's CPU loops take at once (their accumulators on the stack). */
enum { QCONV_CHANNELS = 256 };

/* The outputs of channels o0 .. o0+n-1 (n <= QCONV_CHANNELS) of qconv at pixel (oy, ox), into
 * acc[0 .. n): the qgemm algebra (rt_cpu_qgemm_planes) over the taps, a tap outside the image
 * reading pad_code's planes; each tap's plane read once for all the channels. */
RT_POPCNT static void qconv_accs(const BlobQconvParams *p, const uint32_t *x, const uint32_t *w, int64_t oy,
                                 int64_t ox, int64_t o0, int64_t n, int64_t *acc) {
    int64_t taps = p->kh * p->kw, krow = (taps * p->ldw + 7) / 8 * 8;
    int64_t plane = blob_image_plane_words(p->h * p->w, p->ldw);
    memset(acc, 0, (size_t)n * sizeof *acc);
    for (int64_t kh = 0; kh < p->kh; kh++)
        for (int64_t kw = 0; kw < p->kw; kw++) {
            int64_t ih = oy * p->stride_h + kh * p->dil_h - p->pad_top;
            int64_t iw = ox * p->stride_w + kw * p->dil_w - p->pad_left;
            bool inside = ih >= 0 && ih < p->h && iw >= 0 && iw < p->w;
            int64_t tap = kh * p->kw + kw;
            for (int64_t b = 0; b < p->xb; b++) {
                const uint32_t *a = x + b * plane + (ih * p->w + iw) * p->ldw;
                if (!inside && !((p->pad_code >> b) & 1))
                    continue; /* a plane of zeros adds 0 (bipolar too: 2 * 0 - 0) */
                int64_t pa = 0;
                for (int64_t wi = 0; p->bipolar && wi < p->ldw; wi++)
                    pa += __builtin_popcount(inside ? a[wi] : pad_word(p->pad_code, b, p->c, wi));
                for (int64_t q = 0; q < p->wb; q++) {
                    /* the top plane of signed (not bipolar) weights counts negative */
                    bool negative = p->wsigned && !p->bipolar && q == p->wb - 1;
                    const uint32_t *wq = w + (q * p->o + o0) * krow + tap * p->ldw;
                    for (int64_t o = 0; o < n; o++, wq += krow) {
                        int pw, d = 0;
                        if (inside)
                            d = popc_and(a, wq, p->ldw, &pw);
                        else
                            for (int64_t wi = 0; wi < p->ldw; wi++)
                                d += __builtin_popcount(pad_word(p->pad_code, b, p->c, wi) & wq[wi]);
                        int64_t v = p->bipolar ? 2ll * d - pa : d;
                        v *= (int64_t)1 << (b + q); /* v < 0 for bipolar planes: no shift of it */
                        acc[o] += negative ? -v : v;
                    }
                }
            }
        }
}

/* Zero cell `cell`'s words in each of the `planes` bit planes of an image (plane words a plane,
 * ldy a cell), and with the last cell the words past the cells. */
static void clear_plane_cell(uint32_t *y, int64_t planes, int64_t plane, int64_t cells, int64_t ldy,
                             int64_t cell) {
    for (int64_t b = 0; b < planes; b++) {
        int64_t end = cell == cells - 1 ? plane : (cell + 1) * ldy;
        memset(y + b * plane + cell * ldy, 0, (size_t)(end - cell * ldy) * 4);
    }
}

/* A qconv's float chain (epi 3): the descriptor d (p1), the stages ep (p0) on the exact
 * accumulator, each operation rounded on its own as the interpreter's qconv2d_chain does; the
 * f32 (NCHW, out) where d asks for it and the codes as yb image planes (x1, else out). */
static void run_qconv_chain(const Ctx *c) {
    const BlobQconvParams *p = &c->s->qconv;
    const uint32_t *w = slot_ptr(c, BLOB_SLOT_W, 0);
    const float *ep = slot_ptr(c, BLOB_SLOT_P0, 0);
    const int32_t *d = slot_ptr(c, BLOB_SLOT_P1, 0);
    int64_t cells = p->oh * p->ow, plane = blob_image_plane_words(cells, p->ldy);
    float scale = bits_to_float((uint32_t)d[BLOB_QCHAIN_SCALE]), zeropt = bits_to_float((uint32_t)d[BLOB_QCHAIN_ZEROPT]);
    float lo = (float)d[BLOB_QCHAIN_LO];
    int32_t res = d[BLOB_QCHAIN_RESIDUAL], f32 = d[BLOB_QCHAIN_F32];
    int64_t u0, u1;
    my_units(c, c->batch * cells, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        int64_t item = u / cells, cell = u % cells, accs[QCONV_CHANNELS];
        const uint32_t *x = slot_ptr(c, BLOB_SLOT_IN, item);
        const float *r = slot_ptr(c, BLOB_SLOT_IN2, item);
        float *yf = f32 ? slot_ptr(c, BLOB_SLOT_OUT, item) : NULL;
        uint32_t *yq = p->yb ? slot_ptr(c, f32 ? BLOB_SLOT_X1 : BLOB_SLOT_OUT, item) : NULL;
        if (yq)
            clear_plane_cell(yq, p->yb, plane, cells, p->ldy, cell);
        for (int64_t o = 0; o < p->o; o++) {
            if (o % QCONV_CHANNELS == 0)
                qconv_accs(p, x, w, cell / p->ow, cell % p->ow, o,
                           p->o - o < QCONV_CHANNELS ? p->o - o : QCONV_CHANNELS, accs);
            int64_t at = o * cells + cell;
            float q, v = blob_qconv_chain_value(d, ep, p->o, o, accs[o % QCONV_CHANNELS], res ? r[at] : 0.0f, &q);
            if (yf)
                yf[at] = f32 == 2 ? blob_dequantize(q, scale, zeropt) : v;
            uint32_t n = isnan(q) || !yq ? 0u : (uint32_t)(int64_t)(q - lo);
            for (int64_t b = 0; b < p->yb; b++)
                if ((n >> b) & 1)
                    yq[b * plane + cell * p->ldy + o / 32] |= 1u << (o % 32);
        }
    }
}

/* qconv: the exact accumulator per output, then the i32 (NCHW) or the level counts as image
 * planes, or the float chain. */
static void run_qconv(const Ctx *c) {
    const BlobQconvParams *p = &c->s->qconv;
    if (p->epi == BLOB_QCONV_EPI_CHAIN) {
        run_qconv_chain(c);
        return;
    }
    const uint32_t *w = slot_ptr(c, BLOB_SLOT_W, 0);
    const int32_t *t = slot_ptr(c, BLOB_SLOT_P0, 0), *dir = slot_ptr(c, BLOB_SLOT_P1, 0);
    int64_t cells = p->oh * p->ow, plane = blob_image_plane_words(cells, p->ldy), u0, u1;
    my_units(c, c->batch * cells, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        int64_t item = u / cells, cell = u % cells, accs[QCONV_CHANNELS];
        const uint32_t *x = slot_ptr(c, BLOB_SLOT_IN, item);
        void *out = slot_ptr(c, BLOB_SLOT_OUT, item);
        if (p->epi == 2)
            clear_plane_cell(out, p->yb, plane, cells, p->ldy, cell);
        for (int64_t o = 0; o < p->o; o++) {
            if (o % QCONV_CHANNELS == 0)
                qconv_accs(p, x, w, cell / p->ow, cell % p->ow, o,
                           p->o - o < QCONV_CHANNELS ? p->o - o : QCONV_CHANNELS, accs);
            int64_t v = accs[o % QCONV_CHANNELS];
            if (p->epi == 1) {
                ((int32_t *)out)[o * cells + cell] = (int32_t)v;
                continue;
            }
            int32_t count = level_count(v, t + o * p->levels, dir[o], (int)p->levels);
            for (int64_t b = 0; b < p->yb; b++)
                if ((count >> b) & 1)
                    ((uint32_t *)out)[b * plane + cell * p->ldy + o / 32] |= 1u << (o % 32);
        }
    }
}

/* Run the step of c (its part of parts). */
static void run_ctx(const Ctx *c) {
    const BlobStep *s = c->s;
    switch (s->kind) {
    case BLOB_STEP_PACK: run_pack(c); break;
    case BLOB_STEP_UNPACK: run_unpack(c); break;
    case BLOB_STEP_BGEMM: s->bgemm.in_tile ? run_bgemm_tiled(c) : run_bgemm(c); break;
    case BLOB_STEP_BCONV: run_bconv(c); break;
    case BLOB_STEP_DENSE: run_dense(c); break;
    case BLOB_STEP_CONV2D: run_conv2d(c); break;
    case BLOB_STEP_AFFINE: run_affine(c); break;
    case BLOB_STEP_MAXPOOL: run_pool(c, true); break;
    case BLOB_STEP_AVGPOOL: run_pool(c, false); break;
    case BLOB_STEP_GLOBALAVGPOOL: run_gap(c); break;
    case BLOB_STEP_ADD: run_add(c); break;
    case BLOB_STEP_RELU: run_relu(c); break;
    case BLOB_STEP_COPY: {
        void *out = slot_ptr(c, BLOB_SLOT_OUT, 0), *in = slot_ptr(c, BLOB_SLOT_IN, 0);
        if (out != in)
            memcpy(out, in, (size_t)s->copy.bytes * (size_t)c->batch);
        break;
    }
    case BLOB_STEP_ARGMAX: run_argmax(c); break;
    case BLOB_STEP_CAST: run_cast(c); break;
    case BLOB_STEP_SOFTMAX: run_softmax(c); break;
    case BLOB_STEP_KERNEL: break; /* GPU only */
    case BLOB_STEP_QUANTIZE: run_quantize(c); break;
    case BLOB_STEP_QGEMM: run_qgemm(c); break;
    case BLOB_STEP_QCONV: run_qconv(c); break;
    case BLOB_STEP_RETILE: run_retile(c); break;
    }
}

/* One part of a split step (rt_pool_run). */
static void run_part(void *arg, int part, int parts) {
    Ctx c = *(const Ctx *)arg;
    c.part = part;
    c.parts = parts;
    run_ctx(&c);
}

void rt_cpu_run_step(const bnn_model *m, const BlobStep *s, unsigned char *arena, int batch, RtPool *pool) {
    Ctx c = {m, s, arena, batch, 0, 1};
    /* the steps whose functions split their outputs by my_units */
    bool split = (s->kind == BLOB_STEP_BGEMM && !s->bgemm.in_tile) || s->kind == BLOB_STEP_BCONV ||
                 s->kind == BLOB_STEP_CONV2D || s->kind == BLOB_STEP_QCONV ||
                 ((s->kind == BLOB_STEP_MAXPOOL || s->kind == BLOB_STEP_AVGPOOL) && !s->pool.words);
    if (split && rt_pool_threads(pool) > 1)
        rt_pool_run(pool, run_part, &c);
    else
        run_ctx(&c);
}
