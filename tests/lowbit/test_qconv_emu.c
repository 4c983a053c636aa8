/* test_qconv_emu: qconv.cu run without a GPU, as C under the warp emulator (warp_emu.h), against
 * a plain loop over the integer codes (qconv2d's definition, docs/ir.md: a padded tap reads
 * pad_code): the int32 accumulators and the level counts as image planes must match word for
 * word, padding words included. Covers signed, unsigned and bipolar weight planes, 2- and
 * 3-bit codes, non-zero pad codes, strides, dilations, uneven pads, channels past 256, several
 * images and a last row block that is partly empty. The PTX itself: test_qconv_nvrtc; on a GPU,
 * tests/lowbit/test_qconv_bin.py --device gpu. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../check.h"
#include "warp_emu.h"

#define BNN_QC_LINKAGE static
#define BNN_QCONV_ONCE /* the emulator's MMA instead of the PTX */
#define bnn_qc_mma emu_mma

typedef struct Spec {
    const char *name;
    int c, h, w, o, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, xb, wb, wsigned, bipolar, pad_code, epi,
        l, yb, ldw, ldy;
} Spec;

/* The kernels below are these specs' numbers as the QC_* contract of qconv.cu (QC_OH, QC_OW as
 * ONNX gives them; the bottom and right pads only shape the output). */
static const Spec specs[] = {
    {"w2a2, 1 word a pixel (8 taps a k256 step), planes out", 5, 7, 6, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 1,
     0, 0, 2, 3, 2, 1, 2},
    {"bipolar w1 a3, stride 2, pad code 5, 4 words a pixel, 8-word output pixels", 65, 5, 5, 40, 3, 3, 2, 2, 1, 1,
     1, 1, 1, 1, 3, 1, 1, 1, 5, 2, 7, 3, 4, 8},
    {"w3a2, C 300, dilation 2, pad code 2, int32", 300, 4, 5, 9, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 2, 3, 1, 0, 2, 1, 1,
     1, 16, 1},
    {"unsigned w2 a2, 2x3, strides 2x1, uneven pads, int32", 3, 6, 6, 70, 2, 3, 2, 1, 1, 0, 0, 2, 1, 1, 2, 2, 0, 0,
     1, 1, 1, 1, 1, 1},
    {"w2a2, C 64 (2 words a pixel), pad code 3, 4-word output pixels", 64, 5, 5, 100, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1,
     2, 2, 1, 0, 3, 2, 3, 2, 2, 4},
};

#define QC_NAME emu_qconv0
#define QC_C 5
#define QC_H 7
#define QC_W 6
#define QC_O 33
#define QC_KH 3
#define QC_KW 3
#define QC_PT 1
#define QC_PL 1
#define QC_OH 7
#define QC_OW 6
#define QC_XB 2
#define QC_WB 2
#define QC_EPI 2
#define QC_L 3
#define QC_YB 2
#define QC_LDW 1
#define QC_LDY 2
#include "../../codegen/cuda/kernels/qconv.cu"

#define QC_NAME emu_qconv1
#define QC_C 65
#define QC_H 5
#define QC_W 5
#define QC_O 40
#define QC_KH 3
#define QC_KW 3
#define QC_SH 2
#define QC_SW 2
#define QC_PT 1
#define QC_PL 1
#define QC_OH 3
#define QC_OW 3
#define QC_XB 3
#define QC_WB 1
#define QC_WBIPOLAR 1
#define QC_PAD_CODE 5
#define QC_EPI 2
#define QC_L 7
#define QC_YB 3
#define QC_LDW 4
#define QC_LDY 8
#include "../../codegen/cuda/kernels/qconv.cu"

#define QC_NAME emu_qconv2
#define QC_C 300
#define QC_H 4
#define QC_W 5
#define QC_O 9
#define QC_KH 3
#define QC_KW 3
#define QC_PT 2
#define QC_PL 2
#define QC_DH 2
#define QC_DW 2
#define QC_OH 4
#define QC_OW 5
#define QC_XB 2
#define QC_WB 3
#define QC_PAD_CODE 2
#define QC_EPI 1
#define QC_LDW 16
#include "../../codegen/cuda/kernels/qconv.cu"

#define QC_NAME emu_qconv3
#define QC_C 3
#define QC_H 6
#define QC_W 6
#define QC_O 70
#define QC_KH 2
#define QC_KW 3
#define QC_SH 2
#define QC_SW 1
#define QC_PT 1
#define QC_PL 0
#define QC_OH 3
#define QC_OW 6
#define QC_XB 2
#define QC_WB 2
#define QC_WSIGNED 0
#define QC_PAD_CODE 1
#define QC_EPI 1
#define QC_LDW 1
#include "../../codegen/cuda/kernels/qconv.cu"

#define QC_NAME emu_qconv4
#define QC_C 64
#define QC_H 5
#define QC_W 5
#define QC_O 100
#define QC_KH 3
#define QC_KW 3
#define QC_PT 1
#define QC_PL 1
#define QC_OH 5
#define QC_OW 5
#define QC_XB 2
#define QC_WB 2
#define QC_PAD_CODE 3
#define QC_EPI 2
#define QC_L 3
#define QC_YB 2
#define QC_LDW 2
#define QC_LDY 4
#include "../../codegen/cuda/kernels/qconv.cu"

static const EmuKernel kernels[] = {emu_qconv0, emu_qconv1, emu_qconv2, emu_qconv3, emu_qconv4};

static uint32_t rng_state = 777;
static int rnd(int lo, int hi) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return lo + (int)((rng_state >> 8) % (uint32_t)(hi - lo + 1));
}

static void check_spec(const Spec *s, EmuKernel fn, int images) {
    int oh = (s->h + s->pt + s->pb - s->dh * (s->kh - 1) - 1) / s->sh + 1;
    int ow = (s->w + s->pl + s->pr - s->dw * (s->kw - 1) - 1) / s->sw + 1;
    int ldw = s->ldw, ldy = s->ldy, taps = s->kh * s->kw, krow = (taps * ldw + 7) / 8 * 8;
    int hw = s->h * s->w, cells = oh * ow, M = images * cells;
    int xplane = (hw * ldw + 7) / 8 * 8, yplane = (cells * ldy + 7) / 8 * 8; /* tails zero */
    int *x = malloc(sizeof(int) * (size_t)(images * s->c * hw)), *u = malloc(sizeof(int) * (size_t)(s->o * s->c * taps));
    for (int i = 0; i < images * s->c * hw; i++)
        x[i] = rnd(0, (1 << s->xb) - 1);
    for (int i = 0; i < s->o * s->c * taps; i++)
        u[i] = s->bipolar ? 2 * rnd(0, 1) - 1
               : s->wsigned ? rnd(-(1 << (s->wb - 1)), (1 << (s->wb - 1)) - 1)
                            : rnd(0, (1 << s->wb) - 1);
    /* X as image planes [n][p] of xplane words, [pixel][ldw] each; W as [q][o][krow]. */
    unsigned *X = calloc((size_t)(images * s->xb * xplane), 4), *W = calloc((size_t)(s->wb * s->o * krow), 4);
    for (int n = 0; n < images; n++)
        for (int c = 0; c < s->c; c++)
            for (int px = 0; px < hw; px++)
                for (int p = 0; p < s->xb; p++)
                    X[(n * s->xb + p) * xplane + px * ldw + c / 32] |= (unsigned)((x[(n * s->c + c) * hw + px] >> p) & 1) << (c % 32);
    for (int q = 0; q < s->wb; q++)
        for (int o = 0; o < s->o; o++)
            for (int c = 0; c < s->c; c++)
                for (int tap = 0; tap < taps; tap++) {
                    int v = u[(o * s->c + c) * taps + tap];
                    int bit = s->bipolar ? v > 0 : ((unsigned)v >> q) & 1;
                    W[(q * s->o + o) * krow + tap * ldw + c / 32] |= (unsigned)bit << (c % 32);
                }
    /* The definition: every tap adds code * weight, a padded one pad_code * weight. */
    int *acc = malloc(sizeof(int) * (size_t)(images * s->o * cells));
    for (int n = 0; n < images; n++)
        for (int o = 0; o < s->o; o++)
            for (int cell = 0; cell < cells; cell++) {
                int v = 0;
                for (int c = 0; c < s->c; c++)
                    for (int kh = 0; kh < s->kh; kh++)
                        for (int kw = 0; kw < s->kw; kw++) {
                            int ih = cell / ow * s->sh + kh * s->dh - s->pt, iw = cell % ow * s->sw + kw * s->dw - s->pl;
                            bool in = ih >= 0 && ih < s->h && iw >= 0 && iw < s->w;
                            v += (in ? x[(n * s->c + c) * hw + ih * s->w + iw] : s->pad_code) *
                                 u[(o * s->c + c) * taps + kh * s->kw + kw];
                        }
                acc[(n * s->o + o) * cells + cell] = v;
            }
    int *t = malloc(sizeof(int) * (size_t)(s->o * s->l)), *dir = malloc(sizeof(int) * (size_t)s->o);
    for (int o = 0; o < s->o; o++) {
        dir[o] = rnd(0, 1) ? 1 : -1;
        for (int l = 0; l < s->l; l++)
            t[o * s->l + l] = acc[rnd(0, images * s->o * cells - 1)] + rnd(-1, 1);
    }
    size_t words = s->epi == 1 ? (size_t)(images * s->o * cells) : (size_t)(images * s->yb * yplane);
    unsigned *want = calloc(words, 4), *got = malloc(words * 4);
    for (int n = 0; n < images; n++)
        for (int o = 0; o < s->o; o++)
            for (int cell = 0; cell < cells; cell++) {
                int v = acc[(n * s->o + o) * cells + cell], count = 0;
                if (s->epi == 1) {
                    want[(n * s->o + o) * cells + cell] = (unsigned)v;
                    continue;
                }
                for (int l = 0; l < s->l; l++)
                    count += dir[o] < 0 ? v <= t[o * s->l + l] : v >= t[o * s->l + l];
                for (int b = 0; b < s->yb; b++)
                    want[(n * s->yb + b) * yplane + cell * ldy + o / 32] |= (unsigned)((count >> b) & 1) << (o % 32);
            }
    memset(got, 0xa5, words * 4);
    emu_launch(fn, (unsigned)(s->o + 31) / 32, (unsigned)(M + 15) / 16, X, W, M, t, dir, got);
    size_t bad = 0;
    for (size_t i = 0; i < words; i++)
        bad += got[i] != want[i];
    CHECK_MSG(bad == 0, "%s, %d images: %zu of %zu words differ", s->name, images, bad, words);
    if (!bad)
        printf("ok: %s, %d images (%d GEMM rows)\n", s->name, images, M);
    free(x);
    free(u);
    free(X);
    free(W);
    free(acc);
    free(t);
    free(dir);
    free(want);
    free(got);
}

int main(void) {
    pthread_barrier_init(&warp_bar, NULL, 32);
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++)
        for (int images = 1; images <= 3; images += 2)
            check_spec(&specs[i], kernels[i], images);
    pthread_barrier_destroy(&warp_bar);
    return check_report("test_qconv_emu");
}
