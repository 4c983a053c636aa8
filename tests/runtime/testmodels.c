/* testmodels.c: see testmodels.h. The reference side works on unpacked ±1 values with
 * plain multiply-adds, so it shares no algebra with the runtime's popcount path. */
#include "testmodels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t test_rand(uint64_t *s) {
    /* xorshift64*: deterministic across platforms. */
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dull;
}

float test_randf(uint64_t *s) {
    uint64_t r = test_rand(s);
    if (r % 13 == 0)
        return 0.0f; /* exact zeros exercise the binarize zero convention */
    return (float)((int64_t)(r >> 40) - (1 << 23)) / (float)(1 << 23);
}

static int8_t *random_pm1(uint64_t *s, size_t n) {
    int8_t *v = xmalloc(n);
    for (size_t i = 0; i < n; i++)
        v[i] = test_rand(s) >> 63 ? 1 : -1;
    return v;
}

static float *random_floats(uint64_t *s, size_t n, float lo, float hi) {
    float *v = xmalloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = lo + (hi - lo) * (float)((test_rand(s) >> 40) & 0xffffff) / (float)(1 << 24);
    return v;
}

static void random_thresholds(uint64_t *s, int n, int range, int32_t **t, int32_t **dir) {
    *t = xmalloc((size_t)n * sizeof **t);
    *dir = xmalloc((size_t)n * sizeof **dir);
    for (int i = 0; i < n; i++) {
        (*t)[i] = (int32_t)(test_rand(s) % (uint64_t)(2 * range + 1)) - range;
        (*dir)[i] = test_rand(s) % 3 == 0 ? -1 : 1;
    }
}

/* Rows of ±1 values [rows][k] packed LSB-first into `words` 32-bit words per row. */
static uint32_t *pack_rows(const int8_t *v, int rows, int k, int words) {
    uint32_t *p = xcalloc((size_t)rows * (size_t)words, 4);
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < k; i++)
            if (v[(size_t)r * (size_t)k + (size_t)i] > 0)
                p[(size_t)r * (size_t)words + (size_t)i / 32] |= 1u << (i % 32);
    return p;
}

/* Conv weights w[O][C][KH][KW] as [O][KH][KW][words]. */
static uint32_t *pack_conv(const int8_t *w, int o, int c, int kh, int kw, int words) {
    uint32_t *p = xcalloc((size_t)(o * kh * kw * words), 4);
    for (int a = 0; a < o; a++)
        for (int ch = 0; ch < c; ch++)
            for (int y = 0; y < kh; y++)
                for (int x = 0; x < kw; x++)
                    if (w[((a * c + ch) * kh + y) * kw + x] > 0)
                        p[((a * kh + y) * kw + x) * words + ch / 32] |= 1u << (ch % 32);
    return p;
}

static BlobRef add_weights(BlobWriter *w, const void *data, size_t n) {
    return blob_add_weights(w, data, n);
}

/* Arena offsets handed out in order, 64-byte aligned, never reused. */
static BlobRef take(uint64_t *at, uint64_t bytes) {
    BlobRef r = blob_arena_ref(*at, bytes);
    *at += (bytes + 63) / 64 * 64;
    return r;
}

static BlobStep *add_step(BlobWriter *w, BlobStepKind kind, int *index) {
    (*index)++;
    return blob_add_step(w, kind);
}

static void finish(BlobWriter *w, uint64_t arena, Buf *out) {
    blob_set_arena(w, arena);
    char err[256];
    if (blob_finish(w, out, err, sizeof err) != 0) {
        fprintf(stderr, "testmodels: blob_finish: %s\n", err);
        exit(2);
    }
    blob_free(w);
}

#define HOOK(s)                                      \
    do {                                             \
        if (kernels)                                 \
            kernels(w, (s), index, user);            \
    } while (0)

/* ---------------------------------------------------------------- MLP */

void build_mlp(uint64_t seed, Buf *out, TestMlp *ref, TestKernelFn kernels, void *user) {
    uint64_t s = seed;
    memset(ref, 0, sizeof *ref);
    ref->k0 = MLP_K0, ref->n1 = 70, ref->n2 = 10;
    ref->w1 = random_pm1(&s, (size_t)ref->n1 * ref->k0);
    ref->w2 = random_pm1(&s, (size_t)ref->n2 * ref->n1);
    random_thresholds(&s, ref->n1, 12, &ref->t1, &ref->dir1);
    ref->scale = random_floats(&s, (size_t)ref->n2, 0.01f, 0.5f);
    ref->bias = random_floats(&s, (size_t)ref->n2, -1.0f, 1.0f);

    BlobWriter *w = blob_new();
    uint64_t at = 0;
    int index = -1;
    int words0 = 4, words1 = 4; /* K padded to 128 bits, as the GPU kernels want */
    BlobRef x = take(&at, (uint64_t)ref->k0 * 4), a0 = take(&at, (uint64_t)words0 * 4);
    BlobRef a1 = take(&at, (uint64_t)words1 * 4), logits = take(&at, (uint64_t)ref->n2 * 4);
    BlobRef label = take(&at, 8);
    int64_t xdims[2] = {-1, ref->k0}, ldims[2] = {-1, ref->n2}, adims[2] = {-1, 1};
    blob_add_input(w, "x", BLOB_DTYPE_F32, 2, xdims, x);
    blob_add_output(w, "logits", BLOB_DTYPE_F32, 2, ldims, logits);
    blob_add_output(w, "label", BLOB_DTYPE_I64, 2, adims, label);

    BlobStep *st = add_step(w, BLOB_STEP_PACK, &index);
    st->pack = (BlobPackParams){.channels = ref->k0, .spatial = 1, .words = words0, .zero = 1};
    st->slot[BLOB_SLOT_IN] = x, st->slot[BLOB_SLOT_OUT] = a0;
    HOOK(st);

    uint32_t *pw1 = pack_rows(ref->w1, ref->n1, ref->k0, words0);
    uint32_t *pw2 = pack_rows(ref->w2, ref->n2, ref->n1, words1);
    BlobRef w1 = add_weights(w, pw1, (size_t)ref->n1 * words0 * 4);
    BlobRef t1 = add_weights(w, ref->t1, (size_t)ref->n1 * 4);
    BlobRef d1 = add_weights(w, ref->dir1, (size_t)ref->n1 * 4);
    BlobRef w2 = add_weights(w, pw2, (size_t)ref->n2 * words1 * 4);
    BlobRef sc = add_weights(w, ref->scale, (size_t)ref->n2 * 4);
    BlobRef bi = add_weights(w, ref->bias, (size_t)ref->n2 * 4);
    free(pw1);
    free(pw2);

    st = add_step(w, BLOB_STEP_BGEMM, &index);
    st->epilogue = BLOB_EPI_THRESHOLD;
    st->bgemm = (BlobBgemmParams){.rows = 1, .n = ref->n1, .k = ref->k0, .words = words0,
                                  .out_words = words1};
    st->slot[BLOB_SLOT_IN] = a0, st->slot[BLOB_SLOT_W] = w1, st->slot[BLOB_SLOT_OUT] = a1;
    st->slot[BLOB_SLOT_P0] = t1, st->slot[BLOB_SLOT_P1] = d1;
    HOOK(st);

    st = add_step(w, BLOB_STEP_BGEMM, &index);
    st->epilogue = BLOB_EPI_AFFINE;
    st->bgemm = (BlobBgemmParams){.rows = 1, .n = ref->n2, .k = ref->n1, .words = words1};
    st->slot[BLOB_SLOT_IN] = a1, st->slot[BLOB_SLOT_W] = w2, st->slot[BLOB_SLOT_OUT] = logits;
    st->slot[BLOB_SLOT_P0] = sc, st->slot[BLOB_SLOT_P1] = bi;
    HOOK(st);

    st = add_step(w, BLOB_STEP_ARGMAX, &index);
    st->argmax = (BlobArgmaxParams){.rows = 1, .n = ref->n2};
    st->slot[BLOB_SLOT_IN] = logits, st->slot[BLOB_SLOT_OUT] = label;
    HOOK(st);
    finish(w, at, out);
}

void mlp_reference(const TestMlp *r, int batch, const float *x, float *logits, int64_t *label) {
    int8_t a0[MLP_K0], a1[256];
    for (int n = 0; n < batch; n++) {
        for (int k = 0; k < r->k0; k++)
            a0[k] = x[n * r->k0 + k] >= 0.0f ? 1 : -1; /* zero = +1 */
        for (int o = 0; o < r->n1; o++) {
            int dot = 0;
            for (int k = 0; k < r->k0; k++)
                dot += a0[k] * r->w1[o * r->k0 + k];
            bool on = r->dir1[o] < 0 ? dot <= r->t1[o] : dot >= r->t1[o];
            a1[o] = on ? 1 : -1;
        }
        int best = 0;
        for (int o = 0; o < r->n2; o++) {
            int dot = 0;
            for (int k = 0; k < r->n1; k++)
                dot += a1[k] * r->w2[o * r->n1 + k];
            float prod = (float)dot * r->scale[o];
            logits[n * r->n2 + o] = prod + r->bias[o];
            if (logits[n * r->n2 + o] > logits[n * r->n2 + best])
                best = o;
        }
        label[n] = best;
    }
}

void free_mlp(TestMlp *r) {
    free(r->w1), free(r->w2), free(r->t1), free(r->dir1), free(r->scale), free(r->bias);
    memset(r, 0, sizeof *r);
}

/* ---------------------------------------------------------------- conv net */

static BlobStep *bconv_step(BlobWriter *w, int *index, BlobBconvParams p, BlobRef in, BlobRef wt,
                            BlobRef out) {
    BlobStep *st = add_step(w, BLOB_STEP_BCONV, index);
    st->bconv = p;
    st->slot[BLOB_SLOT_IN] = in, st->slot[BLOB_SLOT_W] = wt, st->slot[BLOB_SLOT_OUT] = out;
    return st;
}

void build_conv(uint64_t seed, Buf *out, TestConv *ref, TestKernelFn kernels, void *user) {
    uint64_t s = seed;
    memset(ref, 0, sizeof *ref);
    ref->w1 = random_pm1(&s, 40 * 3 * 9);
    ref->w2 = random_pm1(&s, 33 * 40 * 9);
    ref->w3 = random_pm1(&s, 20 * 33 * 9);
    random_thresholds(&s, 40, 4, &ref->t1, &ref->d1);
    random_thresholds(&s, 33, 20, &ref->t2, &ref->d2);
    ref->sc3 = random_floats(&s, 20, -0.2f, 0.3f);
    ref->bi3 = random_floats(&s, 20, -1.0f, 1.0f);
    ref->wd = random_floats(&s, 200, -1.0f, 1.0f);
    ref->bd = random_floats(&s, 10, -1.0f, 1.0f);
    ref->badd = random_floats(&s, 10, -1.0f, 1.0f);
    ref->ws = random_floats(&s, 4 * 3 * 9, -1.0f, 1.0f);
    ref->bs = random_floats(&s, 4, -1.0f, 1.0f);

    BlobWriter *w = blob_new();
    uint64_t at = 0;
    int index = -1;
    BlobRef x = take(&at, CONV_IN * 4), p0 = take(&at, 143 * 4 * 4), c1 = take(&at, 143 * 4 * 4);
    BlobRef c2 = take(&at, 30 * 4 * 4), bits = take(&at, 33 * 30 * 4), c3 = take(&at, 180 * 4);
    BlobRef af = take(&at, 180 * 4), mp = take(&at, 80 * 4), gap = take(&at, 20 * 4);
    BlobRef logits = take(&at, 40), logits2 = take(&at, 40), st0 = take(&at, 4 * 7 * 6 * 4);
    BlobRef stem = take(&at, 4 * 4 * 3 * 4);
    int64_t xd[4] = {-1, 3, 13, 11}, ld[2] = {-1, 10}, bd[4] = {-1, 33, 6, 5}, sd[4] = {-1, 4, 4, 3};
    blob_add_input(w, "image", BLOB_DTYPE_F32, 4, xd, x);
    blob_add_output(w, "logits", BLOB_DTYPE_F32, 2, ld, logits);
    blob_add_output(w, "logits2", BLOB_DTYPE_F32, 2, ld, logits2);
    blob_add_output(w, "bits", BLOB_DTYPE_F32, 4, bd, bits);
    blob_add_output(w, "stem", BLOB_DTYPE_F32, 4, sd, stem);

    uint32_t *pw;
    pw = pack_conv(ref->w1, 40, 3, 3, 3, 4);
    BlobRef w1 = add_weights(w, pw, 40 * 9 * 4 * 4);
    free(pw);
    pw = pack_conv(ref->w2, 33, 40, 3, 3, 4);
    BlobRef w2 = add_weights(w, pw, 33 * 9 * 4 * 4);
    free(pw);
    pw = pack_conv(ref->w3, 20, 33, 3, 3, 4);
    BlobRef w3 = add_weights(w, pw, 20 * 9 * 4 * 4);
    free(pw);
    BlobRef t1 = add_weights(w, ref->t1, 40 * 4), d1 = add_weights(w, ref->d1, 40 * 4);
    BlobRef t2 = add_weights(w, ref->t2, 33 * 4), d2 = add_weights(w, ref->d2, 33 * 4);
    BlobRef sc3 = add_weights(w, ref->sc3, 80), bi3 = add_weights(w, ref->bi3, 80);
    BlobRef wd = add_weights(w, ref->wd, 800), bdr = add_weights(w, ref->bd, 40);
    BlobRef badd = add_weights(w, ref->badd, 40);
    BlobRef ws = add_weights(w, ref->ws, 4 * 27 * 4), bs = add_weights(w, ref->bs, 16);

    BlobStep *st = add_step(w, BLOB_STEP_PACK, &index);
    st->pack = (BlobPackParams){.channels = 3, .spatial = 143, .words = 4, .zero = -1};
    st->slot[BLOB_SLOT_IN] = x, st->slot[BLOB_SLOT_OUT] = p0;
    HOOK(st);

    BlobBconvParams p = {.h = 13, .w = 11, .c = 3, .words = 4, .o = 40, .kh = 3, .kw = 3,
                         .stride_h = 1, .stride_w = 1, .pad_top = 1, .pad_left = 1,
                         .pad_bottom = 1, .pad_right = 1, .dil_h = 1, .dil_w = 1, .oh = 13,
                         .ow = 11, .out_words = 4};
    st = bconv_step(w, &index, p, p0, w1, c1);
    st->epilogue = BLOB_EPI_THRESHOLD, st->slot[BLOB_SLOT_P0] = t1, st->slot[BLOB_SLOT_P1] = d1;
    HOOK(st);

    p.c = 40, p.o = 33, p.pad_value = 1, p.pool = 1;
    st = bconv_step(w, &index, p, c1, w2, c2);
    st->epilogue = BLOB_EPI_THRESHOLD, st->slot[BLOB_SLOT_P0] = t2, st->slot[BLOB_SLOT_P1] = d2;
    HOOK(st);

    st = add_step(w, BLOB_STEP_UNPACK, &index);
    st->unpack = (BlobUnpackParams){.channels = 33, .spatial = 30, .words = 4};
    st->slot[BLOB_SLOT_IN] = c2, st->slot[BLOB_SLOT_OUT] = bits;
    HOOK(st);

    BlobBconvParams q = {.h = 6, .w = 5, .c = 33, .words = 4, .o = 20, .kh = 3, .kw = 3,
                         .stride_h = 2, .stride_w = 2, .pad_top = 1, .pad_left = 1,
                         .pad_bottom = 1, .pad_right = 1, .pad_value = -1, .dil_h = 1,
                         .dil_w = 1, .oh = 3, .ow = 3, .out_layout = BLOB_LAYOUT_CS};
    st = bconv_step(w, &index, q, c2, w3, c3);
    st->epilogue = BLOB_EPI_I32;
    HOOK(st);

    st = add_step(w, BLOB_STEP_CAST, &index); /* in place */
    st->cast = (BlobCastParams){.count = 180, .from = BLOB_DTYPE_I32, .to = BLOB_DTYPE_F32};
    st->slot[BLOB_SLOT_IN] = c3, st->slot[BLOB_SLOT_OUT] = c3;
    HOOK(st);

    st = add_step(w, BLOB_STEP_AFFINE, &index);
    st->affine = (BlobAffineParams){.channels = 20, .spatial = 9, .layout = BLOB_LAYOUT_CS};
    st->slot[BLOB_SLOT_IN] = c3, st->slot[BLOB_SLOT_OUT] = af;
    st->slot[BLOB_SLOT_P0] = sc3, st->slot[BLOB_SLOT_P1] = bi3;
    HOOK(st);

    st = add_step(w, BLOB_STEP_RELU, &index); /* in place */
    st->relu.count = 180;
    st->slot[BLOB_SLOT_IN] = af, st->slot[BLOB_SLOT_OUT] = af;
    HOOK(st);

    st = add_step(w, BLOB_STEP_MAXPOOL, &index);
    st->pool = (BlobPoolParams){.c = 20, .h = 3, .w = 3, .kh = 2, .kw = 2, .stride_h = 1,
                                .stride_w = 1, .oh = 2, .ow = 2};
    st->slot[BLOB_SLOT_IN] = af, st->slot[BLOB_SLOT_OUT] = mp;
    HOOK(st);

    st = add_step(w, BLOB_STEP_GLOBALAVGPOOL, &index);
    st->gap = (BlobGapParams){.channels = 20, .spatial = 4};
    st->slot[BLOB_SLOT_IN] = mp, st->slot[BLOB_SLOT_OUT] = gap;
    HOOK(st);

    st = add_step(w, BLOB_STEP_DENSE, &index);
    st->dense = (BlobDenseParams){.rows = 1, .n = 10, .k = 20};
    st->slot[BLOB_SLOT_IN] = gap, st->slot[BLOB_SLOT_W] = wd, st->slot[BLOB_SLOT_P0] = bdr;
    st->slot[BLOB_SLOT_OUT] = logits;
    HOOK(st);

    st = add_step(w, BLOB_STEP_ADD, &index); /* in place, the bias from the weights */
    st->add = (BlobAddParams){.count = 10, .dtype = BLOB_DTYPE_F32};
    st->slot[BLOB_SLOT_IN] = logits, st->slot[BLOB_SLOT_IN2] = badd, st->slot[BLOB_SLOT_OUT] = logits;
    HOOK(st);

    st = add_step(w, BLOB_STEP_COPY, &index);
    st->copy.bytes = 40;
    st->slot[BLOB_SLOT_IN] = logits, st->slot[BLOB_SLOT_OUT] = logits2;
    HOOK(st);

    st = add_step(w, BLOB_STEP_CONV2D, &index);
    st->conv2d = (BlobConv2dParams){.c = 3, .h = 13, .w = 11, .o = 4, .kh = 3, .kw = 3,
                                    .stride_h = 2, .stride_w = 2, .pad_top = 1, .pad_left = 1,
                                    .pad_bottom = 1, .pad_right = 1, .dil_h = 1, .dil_w = 1,
                                    .groups = 1, .oh = 7, .ow = 6};
    st->slot[BLOB_SLOT_IN] = x, st->slot[BLOB_SLOT_W] = ws, st->slot[BLOB_SLOT_P0] = bs;
    st->slot[BLOB_SLOT_OUT] = st0;
    HOOK(st);

    st = add_step(w, BLOB_STEP_AVGPOOL, &index);
    st->pool = (BlobPoolParams){.c = 4, .h = 7, .w = 6, .kh = 3, .kw = 3, .stride_h = 2,
                                .stride_w = 2, .pad_top = 1, .pad_left = 1, .pad_bottom = 1,
                                .pad_right = 1, .oh = 4, .ow = 3, .count_include_pad = 1};
    st->slot[BLOB_SLOT_IN] = st0, st->slot[BLOB_SLOT_OUT] = stem;
    HOOK(st);
    finish(w, at, out);
}

/* dot[o][oy][ox] of a ±1 image in[c][h][w] with w[o][c][3][3], padding value pv. */
static void ref_bconv(const int8_t *in, int c, int h, int wd, const int8_t *w, int o, int stride,
                      int pv, int *dot, int oh, int ow) {
    for (int a = 0; a < o; a++)
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++) {
                int sum = 0;
                for (int ch = 0; ch < c; ch++)
                    for (int ky = 0; ky < 3; ky++)
                        for (int kx = 0; kx < 3; kx++) {
                            int iy = y * stride - 1 + ky, ix = x * stride - 1 + kx;
                            int v = iy < 0 || iy >= h || ix < 0 || ix >= wd
                                        ? pv : in[(ch * h + iy) * wd + ix];
                            sum += v * w[((a * c + ch) * 3 + ky) * 3 + kx];
                        }
                dot[(a * oh + y) * ow + x] = sum;
            }
}

void conv_reference(const TestConv *r, int batch, const float *xs, float *logits, float *bits,
                    float *stem) {
    int8_t b0[CONV_IN], b1[40 * 143], b2[33 * 30];
    int dot1[40 * 143], dot2[33 * 143], dot3[180];
    for (int n = 0; n < batch; n++) {
        const float *x = xs + (size_t)n * CONV_IN;
        for (int i = 0; i < CONV_IN; i++)
            b0[i] = x[i] > 0.0f ? 1 : -1; /* zero = -1 */
        ref_bconv(b0, 3, 13, 11, r->w1, 40, 1, 0, dot1, 13, 11);
        for (int a = 0; a < 40; a++)
            for (int i = 0; i < 143; i++) {
                int d = dot1[a * 143 + i];
                b1[a * 143 + i] = (r->d1[a] < 0 ? d <= r->t1[a] : d >= r->t1[a]) ? 1 : -1;
            }
        ref_bconv(b1, 40, 13, 11, r->w2, 33, 1, 1, dot2, 13, 11);
        for (int a = 0; a < 33; a++)
            for (int y = 0; y < 6; y++)
                for (int xx = 0; xx < 5; xx++) {
                    int8_t m = -1;
                    for (int dy = 0; dy < 2; dy++)
                        for (int dx = 0; dx < 2; dx++) {
                            int d = dot2[(a * 13 + 2 * y + dy) * 11 + 2 * xx + dx];
                            if (r->d2[a] < 0 ? d <= r->t2[a] : d >= r->t2[a])
                                m = 1;
                        }
                    b2[(a * 6 + y) * 5 + xx] = m;
                    bits[(size_t)n * 990 + (size_t)((a * 6 + y) * 5 + xx)] = m;
                }
        ref_bconv(b2, 33, 6, 5, r->w3, 20, 2, -1, dot3, 3, 3);
        float af[180], mp[80], gap[20];
        for (int i = 0; i < 180; i++) {
            float prod = (float)dot3[i] * r->sc3[i / 9];
            float v = prod + r->bi3[i / 9];
            af[i] = v < 0.0f ? 0.0f : v;
        }
        for (int a = 0; a < 20; a++)
            for (int y = 0; y < 2; y++)
                for (int xx = 0; xx < 2; xx++) {
                    float m = -INFINITY;
                    for (int dy = 0; dy < 2; dy++)
                        for (int dx = 0; dx < 2; dx++) {
                            float v = af[a * 9 + (y + dy) * 3 + xx + dx];
                            m = v > m ? v : m;
                        }
                    mp[(a * 2 + y) * 2 + xx] = m;
                }
        for (int a = 0; a < 20; a++) {
            float acc = 0.0f;
            for (int i = 0; i < 4; i++)
                acc += mp[a * 4 + i];
            gap[a] = acc / 4.0f;
        }
        for (int o = 0; o < 10; o++) {
            float acc = 0.0f;
            for (int k = 0; k < 20; k++)
                acc += gap[k] * r->wd[o * 20 + k];
            float y = r->bd[o] + acc;
            logits[n * 10 + o] = y + r->badd[o];
        }
        /* The float stem: conv 3x3 stride 2 pad 1, then avgpool 3x3 stride 2 pad 1. */
        float s0[4 * 7 * 6];
        for (int o = 0; o < 4; o++)
            for (int y = 0; y < 7; y++)
                for (int xx = 0; xx < 6; xx++) {
                    float acc = 0.0f;
                    for (int ch = 0; ch < 3; ch++)
                        for (int ky = 0; ky < 3; ky++)
                            for (int kx = 0; kx < 3; kx++) {
                                int iy = 2 * y - 1 + ky, ix = 2 * xx - 1 + kx;
                                if (iy < 0 || iy >= 13 || ix < 0 || ix >= 11)
                                    continue;
                                acc += x[(ch * 13 + iy) * 11 + ix] * r->ws[((o * 3 + ch) * 3 + ky) * 3 + kx];
                            }
                    s0[(o * 7 + y) * 6 + xx] = r->bs[o] + acc;
                }
        for (int o = 0; o < 4; o++)
            for (int y = 0; y < 4; y++)
                for (int xx = 0; xx < 3; xx++) {
                    float acc = 0.0f;
                    for (int ky = 0; ky < 3; ky++)
                        for (int kx = 0; kx < 3; kx++) {
                            int iy = 2 * y - 1 + ky, ix = 2 * xx - 1 + kx;
                            if (iy >= 0 && iy < 7 && ix >= 0 && ix < 6)
                                acc += s0[(o * 7 + iy) * 6 + ix];
                        }
                    /* count_include_pad: the window clipped to the padded extent 9 x 8. */
                    int hy = (2 * y - 1 + 3 < 8 ? 3 : 8 - (2 * y - 1));
                    int hx = (2 * xx - 1 + 3 < 7 ? 3 : 7 - (2 * xx - 1));
                    stem[(size_t)n * 48 + (size_t)((o * 4 + y) * 3 + xx)] = acc / (float)(hy * hx);
                }
    }
}

void free_conv(TestConv *r) {
    free(r->w1), free(r->w2), free(r->w3), free(r->t1), free(r->d1), free(r->t2), free(r->d2);
    free(r->sc3), free(r->bi3), free(r->wd), free(r->bd), free(r->badd), free(r->ws), free(r->bs);
    memset(r, 0, sizeof *r);
}
