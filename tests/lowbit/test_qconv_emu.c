/* test_qconv_emu: qconv.cu run without a GPU, as C under the block emulator (warp_emu.h): the
 * direct kernel (on half its row tiles' blocks: its loop) and the halo-tile kernel (QC_HALO 1) of every case against a plain loop over the
 * integer codes (qconv2d's definition, docs/ir.md: a padded tap reads pad_code) and, for the
 * float chain (epi 3), the chain's operations on that exact sum (rt_cpu.c run_qconv_chain's
 * order, each rounded on its own): the int32 accumulators, the level counts as image planes, the
 * f32 results and the codes must match word for word, padding words and tails included. The
 * cases: the qconv steps bnncc makes of w1a2resnet18_tiny, and odd shapes (3, 40, 64, 65, 130,
 * 300 channels; strides 1, 2, 2x1; 1x1, 2x3, 3x3; dilation 2; pad codes; 1, 2, 3 planes; signed,
 * unsigned and bipolar weights; taps in pairs, halved at stride 2; blocks of 32 to 128 channels;
 * tiles that overhang the output; several tiles a block; a last column block partly empty). The PTX itself: test_planes_nvrtc, test_w1a2_resnet; on a GPU,
 * tests/lowbit/test_qconv_bin.py --device gpu. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../codegen/blob.h"
#include "../../codegen/cuda/kernels.h"
#include "../check.h"
#include "folded_levels.h"
#include "warp_emu.h"

#define BNN_QC_LINKAGE static
#define BNN_QC_FN static inline
#define BNN_QCONV_ONCE /* the emulator's MMA, ldmatrix and cp.async instead of the PTX */
#define bnn_qc_mma emu_mma
#define EMU_CAT_(a, b) a##_##b
#define EMU_CAT(a, b) EMU_CAT_(a, b)
/* The float chain's operations as C (SSE floats: each rounded to float on its own). */
#define __int2float_rn(v) ((float)(v))
#define __fmul_rn(a, b) ((float)(a) * (float)(b))
#define __fdiv_rn(a, b) ((float)(a) / (float)(b))
#define __fadd_rn(a, b) ((float)(a) + (float)(b))
#define __fsub_rn(a, b) ((float)(a) - (float)(b))
#define __ldg(p) (*(p))
#define __frcp_rn(a) (1.0f / (float)(a))
#define __fmaf_rn(a, b, c) fmaf(a, b, c)
#define __ffs(x) __builtin_ffs(x)
/* QC_RESD_FAST: the elements its kernels test, and those left to the chains */
static long emu_fast_total, emu_fast_undecided, emu_fast_out;
/* common.cu's bnn_div_fast, which the chains divide by, is checked against IEEE division by
 * tests/codegen/test_div_fast.cc. Here a stand-in: the quotient where |x| >= 1/4, else "not
 * exact" and a wrong value, so that every case also takes the kernels' way back to __fdiv_rn
 * (a chain that kept the stand-in's value would differ from the reference). */
static bool bnn_div_fast_ok(float a) { return a != 0.0f; }
static float bnn_div_fast(float x, float a, float y, bool *ok) {
    (void)y;
    if (fabsf(x) >= 0.25f)
        return x / a;
    *ok = false;
    return -12345.0f;
}
static float __int_as_float(int b) {
    float f;
    memcpy(&f, &b, 4);
    return f;
}
static int __float_as_int(float f) {
    int b;
    memcpy(&b, &f, 4);
    return b;
}
static float bnn_quantize_one(const float *x, int k, float scale, float zero, int lo, int hi, int rounding) {
    if (rounding != 0)
        abort();
    float q = rintf(x[k] / scale + zero);
    return q < (float)lo ? (float)lo : q > (float)hi ? (float)hi : q;
}
static float bnn_dequantize(float q, float scale, float zeropt) { return __fmul_rn(__fsub_rn(q, zeropt), scale); }

typedef void (*EmuKernel3)(const unsigned *, const unsigned *, int, const float *, const float *, float *, unsigned *);
typedef struct Case {
    const char *name;
    int c, h, w, o, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, oh, ow, xb, wb, wsigned, bipolar, pad_code, epi, l, yb,
        ldw, ldy, th, tw, wm, wn, gy;
    EmuKernel direct, halo;
    EmuKernel3 direct3, halo3;
    int nst, div, relu, res, orelu, f32, qhi;
    unsigned qscale, qzero;
    /* QC_RESD: the residual is a 1x1 downsample over c1 channels of h1 x w1 pixels (xb1 planes,
     * ldw1 words a pixel), stride s1, bipolar weights, its chain 3 stages (the second divides) */
    int resd, c1, h1, w1, s1, xb1, ldw1, resd_fast;
    int lfold; /* QC_LFOLD: T the levels folded and sorted (folded_levels.h) */
    int lstage; /* QC_LSTAGE: the halo kernel stages them in shared memory */
} Case;

/* w1a2resnet18_tiny's qconv steps (bnncc --emit=cuda): bipolar w1, a2, pad code 0, the halo
 * tiles bnn_qhalo_choose gives them (checked below). */
#define S_ID t8
#define S_NAME "tiny s8: C 16 (1 word a pixel) 8x8 3x3, 3 levels"
#include "qconv_emu_tiny_8x8.h"
#define S_EPI 2
#define S_L 3
#define S_YB 2
#define S_LDW 1
#define S_TH 4
#define S_TW 4
#define S_WM 1
#define S_WN 1
#include "qconv_emu_case.h"

#define S_ID t9
#define S_NAME "tiny s9: chain, residual, dequantized f32 and codes"
#include "qconv_emu_tiny_s9.h"
#define S_TH 4
#define S_TW 4
#define S_WM 1
#define S_WN 1
#include "qconv_emu_case.h"

#define S_ID t12
#define S_NAME "tiny s12: 1x1 stride 2 shortcut, f32 only"
#define S_C 16
#define S_H 8
#define S_W 8
#define S_O 64
#define S_KH 1
#define S_KW 1
#define S_SH 2
#define S_SW 2
#define S_PT 0
#define S_PL 0
#define S_OH 4
#define S_OW 4
#define S_XB 2
#define S_WB 1
#define S_BIPOLAR 1
#define S_EPI 3
#define S_YB 0
#define S_LDW 1
#define S_RES 0
#define S_ORELU 0
#define S_F32 1
#define S_QHI 0
#define S_TH 4
#define S_TW 8
#define S_WM 1
#define S_WN 2
#include "qconv_emu_case.h"

#define S_ID t13
#define S_NAME "tiny s13: 3x3 stride 2, 2-word output pixels"
#define S_C 16
#define S_H 8
#define S_W 8
#define S_O 64
#define S_KH 3
#define S_KW 3
#define S_SH 2
#define S_SW 2
#define S_PT 1
#define S_PL 1
#define S_OH 4
#define S_OW 4
#define S_XB 2
#define S_WB 1
#define S_BIPOLAR 1
#define S_EPI 2
#define S_L 3
#define S_YB 2
#define S_LDW 1
#define S_LDY 2
#define S_TH 4
#define S_TW 8
#define S_WM 1
#define S_WN 2
#include "qconv_emu_case.h"

#define S_ID t14
#define S_NAME "tiny s14: C 64 (2 words a pixel) chain with residual, codes only (the f32 form, Yf null)"
#define S_C 64
#define S_H 4
#define S_W 4
#define S_O 64
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_OH 4
#define S_OW 4
#define S_XB 2
#define S_WB 1
#define S_BIPOLAR 1
#define S_EPI 3
#define S_YB 2
#define S_LDW 2
#define S_LDY 2
#define S_RES 1
#define S_ORELU 1
#define S_F32 2
#define S_F32_UNREAD 1 /* as bnncc compiles a chain layer whose f32 nobody reads (it shares the kernel) */
#define S_QHI 3
#define S_TH 4
#define S_TW 8
#define S_WM 1
#define S_WN 2
#include "qconv_emu_case.h"

#define S_ID t23
#define S_NAME "tiny s23: C 128 (4 words) 3x3 stride 2 to 8-word pixels"
#define S_C 128
#define S_H 2
#define S_W 2
#define S_O 160
#define S_KH 3
#define S_KW 3
#define S_SH 2
#define S_SW 2
#define S_PT 1
#define S_PL 1
#define S_OH 1
#define S_OW 1
#define S_XB 2
#define S_WB 1
#define S_BIPOLAR 1
#define S_EPI 2
#define S_L 3
#define S_YB 2
#define S_LDW 4
#define S_LDY 8
#define S_TH 4
#define S_TW 4
#define S_WM 1
#define S_WN 2
#include "qconv_emu_case.h"

#define S_ID t24
#define S_NAME "tiny: C 160 (8 words) 1x1 chain, f32 and codes"
#define S_C 160
#define S_H 1
#define S_W 1
#define S_O 160
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_OH 1
#define S_OW 1
#define S_XB 2
#define S_WB 1
#define S_BIPOLAR 1
#define S_EPI 3
#define S_YB 2
#define S_LDW 8
#define S_LDY 8
#define S_RES 2
#define S_ORELU 1
#define S_F32 1
#define S_QHI 3
#define S_TH 4
#define S_TW 4
#define S_WM 1
#define S_WN 2
#include "qconv_emu_case.h"

/* Odd shapes, tiles chosen by hand (overhanging, several a block, 1 to 4 warps along M). */
#define S_ID o1
#define S_NAME "w2a2 signed, C 3, 9x11 3x3, pad code 1, int32, 8x8 tiles overhanging, 4 a block"
#define S_C 3
#define S_H 9
#define S_W 11
#define S_O 70
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_OH 9
#define S_OW 11
#define S_XB 2
#define S_WB 2
#define S_PAD_CODE 1
#define S_EPI 1
#define S_LDW 1
#define S_TH 8
#define S_TW 8
#define S_WM 2
#define S_WN 2
#include "qconv_emu_case.h"

#define S_ID o2
#define S_NAME "unsigned w2 a3, C 40, 3x3 stride 2, pad code 5, 7 levels, 3 planes out"
#define S_C 40
#define S_H 10
#define S_W 9
#define S_O 33
#define S_KH 3
#define S_KW 3
#define S_SH 2
#define S_SW 2
#define S_PT 1
#define S_PL 1
#define S_OH 5
#define S_OW 5
#define S_XB 3
#define S_WB 2
#define S_WSIGNED 0
#define S_PAD_CODE 5
#define S_EPI 2
#define S_L 7
#define S_YB 3
#define S_LDW 2
#define S_LDY 2
#define S_TH 4
#define S_TW 4
#define S_WM 1
#define S_WN 2
#define S_GY 2
#include "qconv_emu_case.h"

/* Taps in pairs (QC_PAIR, C <= 64 and KW > 1) along an even kernel row of taps 2 apart, strided
 * along it: a halo slot's second half is the pixel DW = 2 slots on, pad code 2 in both halves.
 * (Its second tap's offset broken, or the pairs' last half, fails it.) */
#define S_ID p1
#define S_NAME "bipolar w1 a2, C 48, 2x4 dilation 1x2, strides 1x2, pad code 2, taps in pairs"
#define S_C 48
#define S_H 7
#define S_W 13
#define S_O 40
#define S_KH 2
#define S_KW 4
#define S_SW 2
#define S_DW 2
#define S_PT 1
#define S_PL 3
#define S_OH 8
#define S_OW 7
#define S_XB 2
#define S_WB 1
#define S_BIPOLAR 1
#define S_PAD_CODE 2
#define S_EPI 2
#define S_L 3
#define S_YB 2
#define S_LDW 2
#define S_LDY 2
#define S_TH 4
#define S_TW 8
#define S_WM 1
#define S_WN 2
#include "qconv_emu_case.h"

/* Halved pairs (QC_HALF: taps in pairs at stride 2 along the row, dilation 1): a halo slot holds
 * pixels 2j and 2j + 1, output column ox's item i reads slot ox + i, each pixel's popcount is kept
 * apart. h1: unsigned 2-bit weights (no popcounts), a 2x4 kernel (two items a row), pad code 1,
 * int32 out; h2: the w1a2 ResNet's stride-2 layer on its 8x16 tiles, overhanging the output. */
#define S_ID h1
#define S_NAME "unsigned w2 a2, C 40, 2x4 stride 2, pad code 1, halved pairs, int32 out"
#define S_C 40
#define S_H 9
#define S_W 19
#define S_O 64
#define S_KH 2
#define S_KW 4
#define S_SH 2
#define S_SW 2
#define S_PT 1
#define S_PL 2
#define S_OH 5
#define S_OW 10
#define S_XB 2
#define S_WB 2
#define S_WSIGNED 0
#define S_PAD_CODE 1
#define S_EPI 1
#define S_LDW 2
#define S_TH 4
#define S_TW 8
#define S_WM 1
#define S_WN 2
#define S_GY 2
#include "qconv_emu_case.h"

#define S_ID h2
#define S_NAME "bipolar w1 a2, C 64, 3x3 stride 2, pad code 2, halved pairs on 8x16 tiles"
#define S_C 64
#define S_H 17
#define S_W 33
#define S_O 64
#define S_KH 3
#define S_KW 3
#define S_SH 2
#define S_SW 2
#define S_PT 1
#define S_PL 1
#define S_OH 9
#define S_OW 17
#define S_XB 2
#define S_WB 1
#define S_BIPOLAR 1
#define S_PAD_CODE 2
#define S_EPI 2
#define S_L 3
#define S_YB 2
#define S_LDW 2
#define S_LDY 2
#define S_TH 8
#define S_TW 16
#define S_WM 4
#define S_WN 2
#include "qconv_emu_case.h"

/* 128 channels a block (bnn_qhalo_variant's candidates from BNN_QHALO_WIDE: four warps across):
 * w1 and w3 the stride-2 threshold layers of a w1a2 ResNet's stages 2 and 4 made small, on their
 * batch alternatives' tiles (w1's taps in pairs; two column blocks, several tiles a block), w2 a
 * chain with its f32 residual. */
#define S_ID w1
#define S_NAME "bipolar w1 a2, C 64 -> 256, 3x3 stride 2, 4x8 tiles of 128 channels (1 x 4 warps)"
#define S_C 64
#define S_H 16
#define S_W 31
#define S_O 256
#define S_KH 3
#define S_KW 3
#define S_SH 2
#define S_SW 2
#define S_PT 1
#define S_PL 1
#define S_OH 8
#define S_OW 16
#define S_XB 2
#define S_WB 1
#define S_BIPOLAR 1
#define S_EPI 2
#define S_L 3
#define S_YB 2
#define S_LDW 2
#define S_LDY 8
#define S_TH 4
#define S_TW 8
#define S_WM 1
#define S_WN 4
#define S_GY 2
#include "qconv_emu_case.h"

#define S_ID w3
#define S_NAME "bipolar w1 a2, C 256 -> 256, 3x3 stride 2 into 7x7, 8x8 tiles of 128 channels (2 x 4 warps)"
#define S_C 256
#define S_H 14
#define S_W 13
#define S_O 256
#define S_KH 3
#define S_KW 3
#define S_SH 2
#define S_SW 2
#define S_PT 1
#define S_PL 1
#define S_OH 7
#define S_OW 7
#define S_XB 2
#define S_WB 1
#define S_BIPOLAR 1
#define S_EPI 2
#define S_L 3
#define S_YB 2
#define S_LDW 8
#define S_LDY 8
#define S_TH 8
#define S_TW 8
#define S_WM 2
#define S_WN 4
#include "qconv_emu_case.h"

#define S_ID w2
#define S_NAME "w1 a2, C 128, 3x3, a chain with its f32 residual, 8x8 tiles of 128 channels (2 x 4 warps)"
#define S_C 128
#define S_H 10
#define S_W 11
#define S_O 128
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_OH 10
#define S_OW 11
#define S_XB 2
#define S_WB 1
#define S_BIPOLAR 1
#define S_EPI 3
#define S_L 1
#define S_YB 2
#define S_LDW 4
#define S_LDY 4
#define S_RES 1
#define S_ORELU 1
#define S_F32 1
#define S_QHI 3
#define S_TH 8
#define S_TW 8
#define S_WM 2
#define S_WN 4
#include "qconv_emu_case.h"

#define S_ID o9
#define S_NAME "bipolar w1 a2, C 64, 3x3, 31 levels folded (QC_LFOLD: searched a row at a time), 5 planes out"
#define S_C 64
#define S_H 6
#define S_W 7
#define S_O 48
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_OH 6
#define S_OW 7
#define S_XB 2
#define S_WB 1
#define S_BIPOLAR 1
#define S_EPI 2
#define S_L 31
#define S_YB 5
#define S_LDW 2
#define S_LDY 2
#define S_TH 4
#define S_TW 4
#define S_WM 1
#define S_WN 2
#define S_GY 3
#define S_LFOLD 1
#define S_LSTAGE 0 /* (the halo kernel searches global memory; f2 stages them) */
#include "qconv_emu_case.h"

#define S_ID o3
#define S_NAME "bipolar w1 a2, C 130 (8 words), 7x6 3x3, pad code 2, chain r + v, f32 and codes"
#define S_C 130
#define S_H 7
#define S_W 6
#define S_O 40
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_OH 7
#define S_OW 6
#define S_XB 2
#define S_WB 1
#define S_BIPOLAR 1
#define S_PAD_CODE 2
#define S_EPI 3
#define S_YB 2
#define S_LDW 8
#define S_LDY 2
#define S_RES 2
#define S_ORELU 0
#define S_F32 1
#define S_QHI 3
#define S_TH 4
#define S_TW 8
#define S_WM 1
#define S_WN 2
#define S_GY 2
#include "qconv_emu_case.h"

#define S_ID o4
#define S_NAME "w3a2 signed, C 300 (16 words), 1x1 stride 2, int32"
#define S_C 300
#define S_H 7
#define S_W 5
#define S_O 9
#define S_KH 1
#define S_KW 1
#define S_SH 2
#define S_SW 2
#define S_PT 0
#define S_PL 0
#define S_OH 4
#define S_OW 3
#define S_XB 2
#define S_WB 3
#define S_EPI 1
#define S_LDW 16
#define S_TH 4
#define S_TW 4
#define S_WM 1
#define S_WN 1
#include "qconv_emu_case.h"

#define S_ID o5
#define S_NAME "w2 a1, C 300, 3x3 dilation 2, pad code 1, one level to 8-word pixels"
#define S_C 300
#define S_H 5
#define S_W 6
#define S_O 64
#define S_KH 3
#define S_KW 3
#define S_PT 2
#define S_PL 2
#define S_DH 2
#define S_DW 2
#define S_OH 5
#define S_OW 6
#define S_XB 1
#define S_WB 2
#define S_PAD_CODE 1
#define S_EPI 2
#define S_L 1
#define S_YB 1
#define S_LDW 16
#define S_LDY 8
#define S_TH 4
#define S_TW 4
#define S_WM 1
#define S_WN 2
#include "qconv_emu_case.h"

#define S_ID o6
#define S_NAME "unsigned w2 a2, C 3, 2x3 strides 2x1, uneven pads, 16x8 tiles, 8 warps"
#define S_C 3
#define S_H 6
#define S_W 6
#define S_O 70
#define S_KH 2
#define S_KW 3
#define S_SH 2
#define S_SW 1
#define S_PT 1
#define S_PL 0
#define S_PB 0
#define S_PR 2
#define S_OH 3
#define S_OW 6
#define S_XB 2
#define S_WB 2
#define S_WSIGNED 0
#define S_PAD_CODE 1
#define S_EPI 1
#define S_LDW 1
#define S_TH 8
#define S_TW 16
#define S_WM 4
#define S_WN 2
#include "qconv_emu_case.h"

#define S_ID o7
#define S_NAME "bipolar w1 a3, C 65 (4 words), 3x3 stride 2, pad code 5, 3 planes to 8-word pixels"
#define S_C 65
#define S_H 5
#define S_W 5
#define S_O 40
#define S_KH 3
#define S_KW 3
#define S_SH 2
#define S_SW 2
#define S_PT 1
#define S_PL 1
#define S_OH 3
#define S_OW 3
#define S_XB 3
#define S_WB 1
#define S_BIPOLAR 1
#define S_PAD_CODE 5
#define S_EPI 2
#define S_L 7
#define S_YB 3
#define S_LDW 4
#define S_LDY 8
#define S_TH 4
#define S_TW 4
#define S_WM 1
#define S_WN 2
#include "qconv_emu_case.h"

#define S_ID o8
#define S_NAME "w3a2 signed, C 300, 4x5 3x3 dilation 2, pad code 1, int32, 1 plane in"
#define S_C 300
#define S_H 4
#define S_W 5
#define S_O 9
#define S_KH 3
#define S_KW 3
#define S_PT 2
#define S_PL 2
#define S_DH 2
#define S_DW 2
#define S_OH 4
#define S_OW 5
#define S_XB 1
#define S_WB 3
#define S_PAD_CODE 1
#define S_EPI 1
#define S_LDW 16
#define S_TH 4
#define S_TW 8
#define S_WM 1
#define S_WN 1
#include "qconv_emu_case.h"

/* The tiles of larger batches (bnn_qhalo_batch_alts): tiny s9's from batch 4 (8x8, two warps of
 * two m16 tiles each), and a 28x28-like chain with residual, f32 and codes on 8x16 tiles of 8
 * warps (the w1a2 ResNet-18's 28x28 chains from batch 4), several tiles a block. */
#define S_ID a9
#define S_NAME "tiny s9 on its batch alternative: chain, residual, f32 and codes, 8x8 tiles of 2 warps"
#include "qconv_emu_tiny_s9.h"
#define S_TH 8
#define S_TW 8
#define S_WM 2
#define S_WN 1
#include "qconv_emu_case.h"

#define S_ID a28
#define S_NAME "bipolar w1 a2, C 64, 12x20 3x3, chain with residual, f32 and codes, 8x16 tiles of 8 warps, 2 a block"
#define S_C 64
#define S_H 12
#define S_W 20
#define S_O 64
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_OH 12
#define S_OW 20
#define S_XB 2
#define S_WB 1
#define S_BIPOLAR 1
#define S_EPI 3
#define S_YB 2
#define S_LDW 2
#define S_LDY 2
#define S_RES 1
#define S_ORELU 1
#define S_F32 1
#define S_QHI 3
#define S_TH 8
#define S_TW 16
#define S_WM 4
#define S_WN 2
#define S_GY 2
#include "qconv_emu_case.h"

/* The second conv of a w1a2 ResNet's downsampling block with its 1x1 stride-2 downsample inside
 * (QC_RESD), with both chains and with the fast test (QC_RESD_FAST): qconv_emu_resd_cases.h. */
#define RC_FAST 0
#include "qconv_emu_resd_cases.h"
#define RC_FAST 1
#include "qconv_emu_resd_cases.h"

/* 255 levels (8-bit codes), folded and sorted (QC_LFOLD), from a signed w3 a4 conv at stride 2
 * whose second block of channels is mostly empty; the halo kernel stages them in shared memory
 * (QC_LSTAGE). (The unfolded levels fail it, and o9.) */
#define S_ID f2
#define S_NAME "signed w3 a4, C 40, 3x3 stride 2, pad code 9, 255 levels folded (QC_LFOLD; halo: QC_LSTAGE), 8 planes out"
#define S_C 40
#define S_H 11
#define S_W 9
#define S_O 70
#define S_KH 3
#define S_KW 3
#define S_SH 2
#define S_SW 2
#define S_PT 1
#define S_PL 1
#define S_OH 6
#define S_OW 5
#define S_XB 4
#define S_WB 3
#define S_PAD_CODE 9
#define S_EPI 2
#define S_L 255
#define S_YB 8
#define S_LDW 2
#define S_LDY 4
#define S_TH 4
#define S_TW 4
#define S_WM 1
#define S_WN 2
#define S_GY 2
#define S_LFOLD 1
#include "qconv_emu_case.h"

static const Case *const cases[] = {&case_t8, &case_t9, &case_t12, &case_t13, &case_t14, &case_t23, &case_t24,
                                    &case_o1, &case_o2, &case_o3, &case_o4, &case_o5, &case_o6, &case_o7, &case_o8,
                                    &case_o9, &case_p1, &case_h1, &case_h2, &case_w1, &case_w2, &case_w3, &case_a9, &case_a28, &case_r1, &case_r2, &case_r3, &case_r4,
                                    &case_r1f, &case_r2f, &case_r3f, &case_r4f, &case_f2};

static uint32_t rng_state = 777;
static int rnd(int lo, int hi) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return lo + (int)((rng_state >> 8) % (uint32_t)(hi - lo + 1));
}

typedef struct Launch3 {
    EmuKernel3 fn;
    const unsigned *X, *W;
    int M;
    const float *EP, *R;
    float *Yf;
    unsigned *Y;
} Launch3;
static void call3(void *arg) {
    Launch3 *l = arg;
    l->fn(l->X, l->W, l->M, l->EP, l->R, l->Yf, l->Y);
}

/* Runs one kernel of the case (halo or direct) on X, W into fresh poisoned outputs, compares
 * them with want / wantf; returns the number of differing words. */
static size_t run_one(const Case *s, bool halo, int M, const unsigned *X, const unsigned *W, const int *t,
                      const int *dir, const float *ep, const float *r, const unsigned *want, size_t words,
                      const float *wantf, size_t nf) {
    unsigned *got = malloc(words * 4 + 4);
    float *gotf = malloc(nf * 4 + 4);
    memset(got, 0xa5, words * 4 + 4);
    memset(gotf, 0xa5, nf * 4 + 4);
    /* the direct kernel on half the row tiles' blocks: each walks two (its grid-stride loop) */
    unsigned gx = (unsigned)(s->o + 31) / 32, gy = ((unsigned)(M + 15) / 16 + 1) / 2, threads = 32, smem = 0;
    if (halo) {
        gx = (unsigned)((s->o + 32 * s->wn - 1) / (32 * s->wn));
        gy = (unsigned)s->gy;
        threads = (unsigned)(32 * s->wm * s->wn);
        smem = (unsigned)bnn_qhalo_smem(s->c, s->kh, s->kw, s->sh, s->sw, s->dh, s->dw, s->th, s->tw, s->wn, s->xb,
                                        s->wb, s->epi == 3 && s->res ? 33 : 0, s->lstage ? s->l : 0);
    }
    if (s->epi == 3) {
        Launch3 l = {halo ? s->halo3 : s->direct3, X, W, M, ep, r, s->f32 ? gotf : NULL, s->yb ? got : NULL};
        emu_launch_body(call3, &l, gx, gy, threads, smem);
    } else {
        int *tf = s->lfold ? folded_levels(t, dir, s->o, s->l) : NULL;
        EmuLaunch l = {halo ? s->halo : s->direct, X, W, M, tf ? tf : t, dir, got};
        emu_launch_body(emu_call, &l, gx, gy, threads, smem);
        free(tf);
    }
    size_t bad = 0;
    for (size_t i = 0; i < words; i++)
        bad += got[i] != want[i];
    for (size_t i = 0; i < nf; i++)
        bad += memcmp(&gotf[i], &wantf[i], 4) != 0;
    bad += got[words] != 0xa5a5a5a5u || memcmp(&gotf[nf], "\xa5\xa5\xa5\xa5", 4) != 0; /* past the end */
    free(got);
    free(gotf);
    return bad;
}

/* The chains of the resd cases as blob.h descriptors: this kernel's (2 stages, the first a
 * division, a relu after the second; the residual, the out relu and the quantizer: scale 0.5, zero
 * 0.25, half to even) and the downsample's (3 stages, the second a division, its f32). */
static void emu_chain_descs(const Case *s, int32_t *dm, int32_t *d1) {
    memset(dm, 0, sizeof(int32_t) * BLOB_QCHAIN_WORDS);
    memset(d1, 0, sizeof(int32_t) * BLOB_QCHAIN_WORDS);
    dm[BLOB_QCHAIN_STAGES] = s->nst, dm[BLOB_QCHAIN_DIV] = s->div, dm[BLOB_QCHAIN_RELU] = s->relu;
    dm[BLOB_QCHAIN_RESIDUAL] = s->res, dm[BLOB_QCHAIN_OUT_RELU] = s->orelu, dm[BLOB_QCHAIN_QUANT] = 1;
    dm[BLOB_QCHAIN_HI] = s->qhi, dm[BLOB_QCHAIN_SCALE] = (int32_t)s->qscale, dm[BLOB_QCHAIN_ZEROPT] = (int32_t)s->qzero;
    d1[BLOB_QCHAIN_STAGES] = 3, d1[BLOB_QCHAIN_DIV] = 2, d1[BLOB_QCHAIN_F32] = 1;
}

/* blob_qresd_fast_row against every (v, d) of small ranges: wherever the row decides a level
 * (x > hi or x < lo, d in [dlo, dhi]) the chains agree; random chains as the cases', with
 * factors of both signs, and 2- and 1-bit codes. Without a relu inside the chain (a ResNet's:
 * batch-norm stages, the relu after the add) it must decide nearly all; with one (the cases'
 * kernels: where it clamps, the code depends on d alone and the row leaves those d to the
 * chains) it need only be right. */
static void check_fast_rows(void) {
    const int64_t a = 300, a1 = 60;
    int32_t dm[BLOB_QCHAIN_WORDS], d1[BLOB_QCHAIN_WORDS], *scratch = malloc(sizeof(int32_t) * 3 * (2 * a1 + 1));
    long decided[2] = {0, 0}, total[2] = {0, 0}, wrong = 0;
    for (int trial = 0; trial < 48; trial++) {
        const int O = 1, relu = trial % 4 < 2 ? 0 : 2;
        Case c = {.nst = 2, .div = 1, .relu = relu, .res = 1 + trial % 2, .orelu = 1, .qhi = trial % 3 == 2 ? 1 : 3,
                  .qscale = 0x3f000000u, .qzero = 0x3e800000u};
        emu_chain_descs(&c, dm, d1);
        float ep[4], ep1[6], row[BLOB_QRESD_WORDS];
        for (int i = 0; i < 4; i++)
            ep[i] = i % 2 == 0 ? (float)rnd(1, 40) / 8.0f * (rnd(0, 3) ? 1.0f : -0.75f) : (float)rnd(-400, 400) / 16.0f;
        for (int i = 0; i < 6; i++)
            ep1[i] = i % 2 == 0 ? (float)rnd(1, 40) / 8.0f * (rnd(0, 3) ? 1.0f : -0.75f) : (float)rnd(-400, 400) / 16.0f;
        blob_qresd_fast_row(dm, ep, O, 0, a, d1, ep1, a1, row, scratch);
        int32_t ends, il[3], ih[3];
        memcpy(&ends, &row[BLOB_QRESD_ENDS], 4);
        for (int l = 0; l < 3; l++) {
            memcpy(&il[l], &row[BLOB_QRESD_LEVEL + 4 * l + 2], 4);
            memcpy(&ih[l], &row[BLOB_QRESD_LEVEL + 4 * l + 3], 4);
        }
        for (int64_t d = -a1; d <= a1; d++) {
            float q, r = blob_qconv_chain_value(d1, ep1, O, 0, d, 0.0f, &q);
            for (int64_t v = -a; v <= a; v++) {
                blob_qconv_chain_value(dm, ep, O, 0, v, r, &q);
                const int code = (int)q;
                const float x = fmaf(row[BLOB_QRESD_KAPPA], (float)d, row[BLOB_QRESD_SIGN] * (float)v);
                bool undecided = false;
                int count = 0;
                for (int l = 0; l < 3; l++) {
                    const float *lv = row + BLOB_QRESD_LEVEL + 4 * l;
                    const bool inside = d >= il[l] && d <= ih[l];
                    const bool reached = inside ? x > lv[1] : (ends >> (2 * l + (d > ih[l])) & 1) != 0;
                    undecided = undecided || (inside && !(reached || x < lv[0]));
                    count += reached;
                }
                total[relu > 0]++;
                if (!undecided) {
                    decided[relu > 0]++;
                    wrong += count != code;
                }
            }
        }
    }
    CHECK_MSG(wrong == 0, "blob_qresd_fast_row: %ld of %ld decided codes differ from the chains", wrong,
              decided[0] + decided[1]);
    CHECK_MSG(decided[0] > total[0] * 99 / 100, "blob_qresd_fast_row decides only %ld of %ld codes of chains "
              "without an inner relu", decided[0], total[0]);
    printf("ok: blob_qresd_fast_row: %ld of %ld (v, d) decided without an inner relu, %ld of %ld with one, all as "
           "the chains\n", decided[0], total[0], decided[1], total[1]);
    free(scratch);
}

static void check_case(const Case *s, int images) {
    int oh = (s->h + s->pt + s->pb - s->dh * (s->kh - 1) - 1) / s->sh + 1;
    int ow = (s->w + s->pl + s->pr - s->dw * (s->kw - 1) - 1) / s->sw + 1;
    CHECK_MSG(oh == s->oh && ow == s->ow, "%s: output %dx%d, the case says %dx%d", s->name, oh, ow, s->oh, s->ow);
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
    /* The chain's parameters: stage 0 divides by a (powers of two and 3), stage 1 multiplies. */
    size_t nout = (size_t)(images * s->o * cells);
    float *ep = malloc(sizeof(float) * (size_t)(4 * s->o)), *r = malloc(sizeof(float) * nout);
    for (int i = 0; i < 4 * s->o; i++)
        ep[i] = i / s->o % 2 == 0 ? (float)rnd(1, 4) * (rnd(0, 3) ? 1.0f : -0.75f) : (float)rnd(-40, 40) / 16.0f;
    for (size_t i = 0; i < nout; i++)
        r[i] = (float)rnd(-64, 64) / 8.0f;
    /* QC_RESD: r is the downsample's value (its dot of the block input's codes x1 at the strided
     * pixel with bipolar weights u1, through its 3 stages, the second dividing); the kernel gets
     * the input's planes as R and EP = [this chain][its chain][its weight rows]. */
    unsigned *X1 = NULL;
    float *ep_all = ep;
    if (s->resd) {
        int hw1 = s->h1 * s->w1, xplane1 = (hw1 * s->ldw1 + 7) / 8 * 8, krow1 = (s->ldw1 + 7) / 8 * 8;
        int *x1 = malloc(sizeof(int) * (size_t)(images * s->c1 * hw1)), *u1 = malloc(sizeof(int) * (size_t)(s->o * s->c1));
        for (int i = 0; i < images * s->c1 * hw1; i++)
            x1[i] = rnd(0, (1 << s->xb1) - 1);
        for (int i = 0; i < s->o * s->c1; i++)
            u1[i] = 2 * rnd(0, 1) - 1;
        X1 = calloc((size_t)(images * s->xb1 * xplane1), 4);
        for (int n = 0; n < images; n++)
            for (int c = 0; c < s->c1; c++)
                for (int px = 0; px < hw1; px++)
                    for (int p = 0; p < s->xb1; p++)
                        X1[(n * s->xb1 + p) * xplane1 + px * s->ldw1 + c / 32] |=
                            (unsigned)((x1[(n * s->c1 + c) * hw1 + px] >> p) & 1) << (c % 32);
        ep_all = calloc((size_t)(4 * s->o + 6 * s->o + s->o * krow1 + (s->resd_fast ? s->o * BLOB_QRESD_WORDS : 0)), 4);
        memcpy(ep_all, ep, sizeof(float) * (size_t)(4 * s->o));
        float *ep1 = ep_all + 4 * s->o;
        for (int i = 0; i < 6 * s->o; i++)
            ep1[i] = i / s->o % 2 == 0 ? (float)rnd(1, 4) * (rnd(0, 3) ? 1.0f : -0.75f) : (float)rnd(-40, 40) / 16.0f;
        unsigned *w1 = (unsigned *)(ep1 + 6 * s->o);
        for (int o = 0; o < s->o; o++)
            for (int c = 0; c < s->c1; c++)
                w1[o * krow1 + c / 32] |= (unsigned)(u1[o * s->c1 + c] > 0) << (c % 32);
        for (int n = 0; n < images; n++)
            for (int o = 0; o < s->o; o++)
                for (int cell = 0; cell < cells; cell++) {
                    int px = cell / ow * s->s1 * s->w1 + cell % ow * s->s1, v = 0;
                    for (int c = 0; c < s->c1; c++)
                        v += x1[(n * s->c1 + c) * hw1 + px] * u1[o * s->c1 + c];
                    float f = (float)v;
                    for (int k = 0; k < 3; k++) {
                        float a = ep1[2 * k * s->o + o], b = ep1[(2 * k + 1) * s->o + o];
                        f = k == 1 ? f / a : f * a;
                        f = f + b;
                    }
                    r[(size_t)((n * s->o + o) * cells + cell)] = f;
                }
        if (s->resd_fast) { /* the fast test's rows, as lower.c makes them */
            int32_t dm[BLOB_QCHAIN_WORDS], d1[BLOB_QCHAIN_WORDS];
            emu_chain_descs(s, dm, d1);
            const int64_t a = (int64_t)s->c * taps * ((1 << s->xb) - 1), a1 = (int64_t)s->c1 * ((1 << s->xb1) - 1);
            int32_t *scratch = malloc(sizeof(int32_t) * (size_t)(3 * (2 * a1 + 1)));
            int decided = 0;
            for (int o = 0; o < s->o; o++)
                decided += blob_qresd_fast_row(dm, ep, s->o, o, a, d1, ep1, a1,
                                               ep1 + 6 * s->o + s->o * krow1 + o * BLOB_QRESD_WORDS, scratch) > 0;
            CHECK_MSG(decided == s->o, "%s: %d of %d channels have a fast test", s->name, decided, s->o);
            for (int o = 0; s->resd_fast >= 2 && o < s->o; o++) /* bounds widened: more to the chains */
                for (int l = 0; l < 3; l++) { /* (3: by less than the levels lie apart, so that a band's */
                    float *lv = ep1 + 6 * s->o + s->o * krow1 + o * BLOB_QRESD_WORDS + BLOB_QRESD_LEVEL + 4 * l;
                    const float by = s->resd_fast == 3 ? 0.5f : 6.0f; /* elements are in its band alone) */
                    lv[0] -= by, lv[1] += by;
                }
            free(scratch);
        }
        free(x1);
        free(u1);
    }
    size_t words = s->epi == 1 ? nout : (size_t)(images * s->yb * yplane), nf = s->epi == 3 && s->f32 ? nout : 0;
    unsigned *want = calloc(words + 1, 4);
    float *wantf = calloc(nf + 1, 4);
    for (int n = 0; n < images; n++)
        for (int o = 0; o < s->o; o++)
            for (int cell = 0; cell < cells; cell++) {
                size_t at = (size_t)((n * s->o + o) * cells + cell);
                int v = acc[at], count = 0;
                if (s->epi == 1) {
                    want[at] = (unsigned)v;
                    continue;
                }
                if (s->epi == 2)
                    for (int l = 0; l < s->l; l++)
                        count += dir[o] < 0 ? v <= t[o * s->l + l] : v >= t[o * s->l + l];
                if (s->epi == 3) {
                    float f = (float)v, scale = __int_as_float((int)s->qscale), zero = __int_as_float((int)s->qzero);
                    for (int k = 0; k < s->nst; k++) {
                        float a = ep[2 * k * s->o + o], b = ep[(2 * k + 1) * s->o + o];
                        f = (s->div >> k & 1) ? f / a : f * a;
                        f = f + b;
                        if (s->relu >> k & 1)
                            f = f < 0.0f ? 0.0f : f;
                    }
                    f = s->res == 1 ? f + r[at] : s->res == 2 ? r[at] + f : f;
                    if (s->orelu)
                        f = f < 0.0f ? 0.0f : f;
                    float q = bnn_quantize_one(&f, 0, scale, zero, 0, s->qhi, 0);
                    count = (int)(q - 0.0f);
                    if (nf)
                        wantf[at] = s->f32 == 1 ? f : (q - zero) * scale;
                }
                for (int b = 0; b < s->yb; b++)
                    want[(n * s->yb + b) * yplane + cell * ldy + o / 32] |= (unsigned)((count >> b) & 1) << (o % 32);
            }
    if (s->epi == 3 && !s->yb)
        words = 0;
    emu_fast_total = emu_fast_undecided = emu_fast_out = 0;
    for (int halo = s->resd; halo < 2; halo++) { /* (QC_RESD: the halo kernel only) */
        size_t bad = run_one(s, halo, M, X, W, t, dir, ep_all, s->resd ? (const float *)X1 : r, want, words, wantf, nf);
        CHECK_MSG(bad == 0, "%s kernel, %s, %d images: %zu of %zu words differ", halo ? "halo" : "direct", s->name,
                  images, bad, words + nf);
        if (!bad)
            printf("ok: %s kernel, %s, %d images (%d GEMM rows)\n", halo ? "halo" : "direct", s->name, images, M);
    }
    if (s->resd_fast >= 2) { /* both ways taken: the fast test and the chains */
        CHECK_MSG(emu_fast_undecided > 0 && emu_fast_undecided < emu_fast_total,
                  "%s: %ld of %ld elements left to the chains", s->name, emu_fast_undecided, emu_fast_total);
    }
    if (s->resd_fast) /* both of resd_rows' ways: the unrolled tests and the rows outside [dl, dh] */
        CHECK_MSG(emu_fast_out > 0 && emu_fast_out < emu_fast_total, "%s: %ld of %ld elements outside [dl, dh]",
                  s->name, emu_fast_out, emu_fast_total);
    if (s->resd_fast)
        printf("    (%ld of %ld elements left to the chains, %ld outside a level's interval of D's dots)\n",
               emu_fast_undecided, emu_fast_total, emu_fast_out);
    free(x);
    free(u);
    free(X);
    free(W);
    free(acc);
    free(t);
    free(dir);
    free(ep);
    if (ep_all != ep)
        free(ep_all);
    free(X1);
    free(r);
    free(want);
    free(wantf);
}

int main(void) {
    /* The tiny model's cases use the tiles the lowering's rule gives them. */
    for (size_t i = 0; i < 7; i++) {
        const Case *s = cases[i];
        BnnHaloCfg hc;
        int nacc = s->xb + s->wb - 1;
        CHECK(bnn_qhalo_choose(s->c, s->oh, s->ow, s->o, s->kh, s->kw, s->sh, s->sw, s->dh, s->dw, s->xb, s->wb,
                               nacc, s->epi == 3 && s->res ? 33 : 0, 0, &hc) == 0);
        CHECK_MSG(hc.th == s->th && hc.tw == s->tw && hc.wm == s->wm && hc.wn == s->wn,
                  "%s: bnn_qhalo_choose gives %dx%d, %dx%d warps", s->name, hc.th, hc.tw, hc.wm, hc.wn);
    }
    /* tiny s9's batch alternative is case a9's tile */
    {
        BnnQhaloAlt alt[2];
        BnnHaloCfg hc;
        const Case *s = &case_a9;
        CHECK(bnn_qhalo_batch_alts(s->c, s->oh, s->ow, s->o, s->kh, s->kw, s->sh, s->sw, 1, 1, 0, alt) == 1 && alt[0].variant == 2 &&
              alt[0].from == BNN_QHALO_ALT_BATCH);
        CHECK(bnn_qhalo_variant(2, s->c, s->oh, s->ow, s->o, s->kh, s->kw, s->sh, s->sw, s->dh, s->dw, s->xb, s->wb,
                                s->xb + s->wb - 1, 33, 0, &hc) == 0 &&
              hc.th == s->th && hc.tw == s->tw && hc.wm == s->wm && hc.wn == s->wn);
    }
    /* the stride-2 threshold layers' batch alternatives are cases w1's and w3's tiles */
    for (int k = 0; k < 2; k++) {
        BnnQhaloAlt alt[2];
        BnnHaloCfg hc;
        const Case *s = k == 0 ? &case_w1 : &case_w3;
        CHECK(bnn_qhalo_batch_alts(s->c, s->oh, s->ow, s->o, s->kh, s->kw, s->sh, s->sw, 0, 0, 0, alt) == 2 &&
              alt[0].variant < BNN_QHALO_WIDE && alt[0].from == BNN_QHALO_ALT_BATCH &&
              alt[1].variant >= BNN_QHALO_WIDE && alt[1].from > alt[0].from);
        CHECK(bnn_qhalo_variant(alt[1].variant, s->c, s->oh, s->ow, s->o, s->kh, s->kw, s->sh, s->sw, s->dh, s->dw,
                                s->xb, s->wb, s->xb + s->wb - 1, 0, 0, &hc) == 0 &&
              hc.th == s->th && hc.tw == s->tw && hc.wm == s->wm && hc.wn == s->wn && hc.minb == 2);
        /* as a chain (not measured): none */
        const int na = bnn_qhalo_batch_alts(s->c, s->oh, s->ow, s->o, s->kh, s->kw, s->sh, s->sw, 1, 0, 0, alt);
        for (int i = 0; i < na; i++)
            CHECK(alt[i].variant < BNN_QHALO_WIDE);
    }
    /* Threshold layers past 2 activation or weight bits (heavy) on ResNet-18's 3x3 shapes: their
     * larger batches' tiles (bnncc --tune=256, docs/perf.md stop 52) 4x4 at 56x56 (the rule's
     * 4x8 before), the rule's 4x4 kept into 28x28 and 14x14 at stride 2 and at 28x28, 4x8 at
     * 14x14 and into 7x7 at stride 2, 8x8 at 7x7; never 128 channels a block. */
    {
        static const int shapes[7][5] = {/* c, out hw, o, stride, bnn_halo_tiles index or -1 */
                                         {64, 56, 64, 1, 3},   {64, 28, 128, 2, -1}, {128, 28, 128, 1, -1},
                                         {128, 14, 256, 2, -1}, {256, 14, 256, 1, 2}, {256, 7, 512, 2, 2},
                                         {512, 7, 512, 1, 1}};
        for (int i = 0; i < 7; i++) {
            const int *h = shapes[i];
            BnnQhaloAlt alt[2];
            BnnHaloCfg hc = {0};
            const int na = bnn_qhalo_batch_alts(h[0], h[1], h[1], h[2], 3, 3, h[3], h[3], 0, 0, 1, alt);
            const int ok = na == (h[4] >= 0) &&
                           (na == 0 || (alt[0].from == BNN_QHALO_ALT_BATCH &&
                                        bnn_qhalo_variant(alt[0].variant, h[0], h[1], h[1], h[2], 3, 3, h[3], h[3], 1, 1,
                                                          4, 2, 8, 0, 0, &hc) == 0 &&
                                        hc.th == bnn_halo_tiles[h[4]][0] && hc.tw == bnn_halo_tiles[h[4]][1]));
            CHECK_MSG(ok, "heavy %dx%d, %d -> %d channels, stride %d: %d alternatives, the first %dx%d (want tile %d)",
                      h[1], h[1], h[0], h[2], h[3], na, na ? hc.th : 0, na ? hc.tw : 0, h[4]);
        }
        /* w4a3 (signed: 3 + 4 - 2 + 3 accumulators) at 7x7, 512 channels: 8x8 does not fit, its
         * fallback is 4x8 (lower.c add_qconv_batch_alts takes it) */
        BnnQhaloAlt alt[2];
        BnnHaloCfg hc = {0};
        const int na = bnn_qhalo_batch_alts(512, 7, 7, 512, 3, 3, 1, 1, 0, 0, 1, alt);
        CHECK_MSG(na == 1 && bnn_qhalo_variant(alt[0].variant, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1, 3, 4, 8, 0, 0, &hc) != 0 &&
                      alt[0].fallback > 0 &&
                      bnn_qhalo_variant(alt[0].fallback, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1, 3, 4, 8, 0, 0, &hc) == 0 &&
                      hc.th == 4 && hc.tw == 8,
                  "w4a3 7x7, 512 channels: %d alternatives, the fallback %d (%dx%d), want 4x8", na, na ? alt[0].fallback : -1,
                  hc.th, hc.tw);
    }
    /* Levels staged (QC_LSTAGE, lev): [lev][bn] words more where they fit at some bn, else none.
     * w2a2 into 6-bit codes at 64 channels: at bn 64; cnn_w8a8's first conv (8-bit weights, 255
     * levels): at bn 32, where bn 64 fits only without; w4a2 over 512 channels at 7x7: nowhere. */
    {
        static const int layers[3][8] = {/* c, hw, o, wb, xb, levels; want bn, staged */
                                         {64, 56, 64, 2, 2, 63, 64, 1},
                                         {3, 11, 33, 8, 8, 255, 32, 1},
                                         {512, 7, 512, 4, 2, 255, 32, 0}};
        for (int i = 0; i < 3; i++) {
            const int *y = layers[i];
            BnnHaloCfg hs = {0}, hn = {0};
            const int rs = bnn_qhalo_variant(0, y[0], y[1], y[1], y[2], 3, 3, 1, 1, 1, 1, y[4], y[3], y[3] + y[4] - 1,
                                             0, y[5], &hs),
                      rn = bnn_qhalo_variant(0, y[0], y[1], y[1], y[2], 3, 3, 1, 1, 1, 1, y[4], y[3], y[3] + y[4] - 1,
                                             0, 0, &hn);
            /* (the table would not fit at the bn without it: the reason for a smaller bn) */
            const int at_hn = bnn_qhalo_smem(y[0], 3, 3, 1, 1, 1, 1, hs.th, hs.tw, hn.wn, y[4], y[3], 0, y[5]);
            CHECK_MSG(rs == 0 && rn == 0 && hs.bn == y[6] && hs.lev == (y[7] ? y[5] : 0) && hn.lev == 0 &&
                          hs.th == hn.th && hs.tw == hn.tw &&
                          hs.smem == bnn_qhalo_smem(y[0], 3, 3, 1, 1, 1, 1, hs.th, hs.tw, hs.wn, y[4], y[3], 0, hs.lev) &&
                          (hs.bn == hn.bn || at_hn > BNN_HALO_SMEM_MAX) && hs.smem <= BNN_HALO_SMEM_MAX,
                      "c %d, %dx%d, o %d, w%da%d, %d levels: bn %d, %d staged, %d bytes (without: bn %d, %d bytes)", y[0],
                      y[1], y[1], y[2], y[3], y[4], y[5], hs.bn, hs.lev, hs.smem, hn.bn, hn.smem);
        }
    }
    check_fast_rows();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int images = 1; images <= 3; images += 2)
            check_case(cases[i], images);
    return check_report("test_qconv_emu");
}
