/* qconv_emu_case.h: one case of test_qconv_emu. Given S_ID and the S_* numbers of a qconv step
 * (the QC_* contract of qconv.cu; S_OH, S_OW as ONNX gives them, the bottom and right pads S_PB,
 * S_PR only shape them), it compiles the direct kernel (emu_direct_<ID>) and the halo-tile
 * kernel (emu_halo_<ID>, tile S_TH x S_TW, S_WM x S_WN warps) from qconv.cu and describes them
 * in case_<ID>; then #undefs the S_* macros. */
#ifndef S_SH
#define S_SH 1
#endif
#ifndef S_SW
#define S_SW 1
#endif
#ifndef S_PB
#define S_PB S_PT
#endif
#ifndef S_PR
#define S_PR S_PL
#endif
#ifndef S_DH
#define S_DH 1
#endif
#ifndef S_DW
#define S_DW 1
#endif
#ifndef S_WSIGNED
#define S_WSIGNED 1
#endif
#ifndef S_BIPOLAR
#define S_BIPOLAR 0
#endif
#ifndef S_PAD_CODE
#define S_PAD_CODE 0
#endif
#ifndef S_L
#define S_L 1
#endif
#ifndef S_YB
#define S_YB (S_EPI == 1 ? 0 : 1)
#endif
#ifndef S_LDY
#define S_LDY 1
#endif
#ifndef S_GY
#define S_GY 1
#endif
#ifndef S_LFOLD /* 1: QC_LFOLD, the levels folded and sorted (epi 2) */
#define S_LFOLD 0
#endif
#ifndef S_LSTAGE /* 1: the halo kernel stages them in shared memory (QC_LSTAGE) */
#define S_LSTAGE S_LFOLD
#endif
#ifndef S_F32_UNREAD /* 1: a kernel of S_F32's form for a layer whose f32 value nobody reads (Yf null) */
#define S_F32_UNREAD 0
#endif
#ifndef S_RESD /* 1: the residual a 1x1 downsample's (S_RESD_C channels of S_RESD_H x S_RESD_W pixels, */
#define S_RESD 0 /* S_RESD_LDW words, S_RESD_XB planes, stride S_RESD_S), computed in the halo kernel */
#endif
#ifndef S_RESD_FAST /* 1: QC_RESD_FAST, the codes by the fast test (S_F32_UNREAD then); 2: rows widened by 6,
                     * 3: by 0.5 */
#define S_RESD_FAST 0
#endif
#if S_EPI == 3 /* the float chain: 2 stages, the first a division, a relu after the second */
#define S_CHAIN , 2, 1, 2, S_RES, S_ORELU, S_F32_UNREAD ? 0 : S_F32, S_QHI, 0x3f000000u /* scale 0.5 */, \
                0x3e800000u /* zero 0.25 */
#else
#define S_CHAIN , 0, 0, 0, 0, 0, 0, 0, 0u, 0u
#endif

#if !S_RESD /* (the direct kernel has no QC_RESD) */
#define S_HALO 0
#include "qconv_emu_kernel.h"
#undef S_HALO
#endif
#define S_HALO 1
#include "qconv_emu_kernel.h"
#undef S_HALO

static const Case EMU_CAT(case, S_ID) = {
    S_NAME, S_C, S_H, S_W, S_O, S_KH, S_KW, S_SH, S_SW, S_PT, S_PL, S_PB, S_PR, S_DH, S_DW, S_OH, S_OW, S_XB, S_WB,
    S_WSIGNED, S_BIPOLAR, S_PAD_CODE, S_EPI, S_L, S_YB, S_LDW, S_LDY, S_TH, S_TW, S_WM, S_WN, S_GY,
#if S_EPI == 3 && S_RESD
    NULL, NULL, NULL, EMU_CAT(emu_halo, S_ID) S_CHAIN, 1, S_RESD_C, S_RESD_H, S_RESD_W, S_RESD_S, S_RESD_XB,
    S_RESD_LDW, S_RESD_FAST, 0, 0
#elif S_EPI == 3
    NULL, NULL, EMU_CAT(emu_direct, S_ID), EMU_CAT(emu_halo, S_ID) S_CHAIN, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
#else
    EMU_CAT(emu_direct, S_ID), EMU_CAT(emu_halo, S_ID), NULL, NULL S_CHAIN, 0, 0, 0, 0, 0, 0, 0, 0, S_LFOLD, S_LSTAGE
#endif
};

#undef S_ID
#undef S_NAME
#undef S_C
#undef S_H
#undef S_W
#undef S_O
#undef S_KH
#undef S_KW
#undef S_SH
#undef S_SW
#undef S_PT
#undef S_PL
#undef S_PB
#undef S_PR
#undef S_DH
#undef S_DW
#undef S_OH
#undef S_OW
#undef S_XB
#undef S_WB
#undef S_WSIGNED
#undef S_BIPOLAR
#undef S_PAD_CODE
#undef S_EPI
#undef S_L
#undef S_YB
#undef S_LDW
#undef S_LDY
#undef S_TH
#undef S_TW
#undef S_WM
#undef S_WN
#undef S_GY
#undef S_RES
#undef S_ORELU
#undef S_F32
#undef S_F32_UNREAD
#undef S_RESD
#undef S_RESD_C
#undef S_RESD_H
#undef S_RESD_W
#undef S_RESD_S
#undef S_RESD_XB
#undef S_RESD_LDW
#undef S_RESD_FAST
#undef S_LFOLD
#undef S_LSTAGE
#undef S_QHI
#undef S_CHAIN
