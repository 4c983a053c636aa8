// bconv_emu_case.h: one case of test_bconv_emu in this translation unit's halo configuration
// (EMU_CFG: EMU_TH x EMU_TW pixels, EMU_BN channels, EMU_NW warps a block, BC_MINB EMU_MINB).
// Given S_ID, S_NAME and the S_* numbers of a layer (the BC_* contract of bconv.cu) and its
// runs (batch S_BATCH with S_GY blocks along y, then S_BATCH2 with S_GY2 if S_BATCH2 > 0; grid.y
// 0: one tile a warp and an empty block, as the runtime's larger grids), it compiles bconv.cu's
// halo kernel for it as bconv_<cfg>_<id>, a launcher that passes the arguments its epilogue
// takes, and registers both (emu_register); then #undefs the S_*.
#ifndef S_SH
#define S_SH 1
#endif
#ifndef S_SW
#define S_SW 1
#endif
#ifndef S_PT
#define S_PT 0
#endif
#ifndef S_PL
#define S_PL 0
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
#ifndef S_ONE
#define S_ONE 0
#endif
#ifndef S_POOL
#define S_POOL 0
#endif
#ifndef S_CWP
#define S_CWP ((S_C + 127) / 128 * 4)
#endif
#ifndef S_LDW
#define S_LDW (S_KH * S_KW * S_CWP)
#endif
#ifndef S_LDY
#define S_LDY (S_EPI == BNN_EPI_THRESHOLD ? (S_O + 31) / 32 : S_O)
#endif
#ifndef S_NST
#define S_NST 1
#endif
#ifndef S_DIV
#define S_DIV 0
#endif
#ifndef S_RES
#define S_RES 0
#endif
#ifndef S_RESW
#define S_RESW 0
#endif
#ifndef S_F32
#define S_F32 1
#endif
#ifndef S_LDB
#define S_LDB 0
#endif
#ifndef S_NB
#define S_NB 0
#endif
#ifndef S_BATCH2
#define S_BATCH2 0
#endif
#ifndef S_GY
#define S_GY 0
#endif
#ifndef S_GY2
#define S_GY2 1
#endif

#define S_KERNEL EMU_CAT(EMU_CAT(bconv, EMU_CFG), S_ID)
#define BC_NAME S_KERNEL
#define BC_C S_C
#define BC_H S_H
#define BC_W S_W
#define BC_O S_O
#define BC_KH S_KH
#define BC_KW S_KW
#define BC_SH S_SH
#define BC_SW S_SW
#define BC_PT S_PT
#define BC_PL S_PL
#define BC_PB S_PB
#define BC_PR S_PR
#define BC_DH S_DH
#define BC_DW S_DW
#define BC_PAD_ONE S_ONE
#define BC_POOL S_POOL
#define BC_CWP S_CWP
#define BC_LDW S_LDW
#define BC_LDY S_LDY
#define BC_EPI S_EPI
#if S_EPI == BNN_EPI_CHAIN
#define BC_NST S_NST
#define BC_DIV S_DIV
#define BC_RES S_RES
#define BC_F32 S_F32
#define BC_LDB S_LDB
#endif
#if S_RESW
#define BC_RESW S_RESW
#endif
#if S_NB
#define BC_NB S_NB
#endif
#define BC_HALO 1
#define BC_TH EMU_TH
#define BC_TW EMU_TW
#define BC_BN EMU_BN
#define BC_WM EMU_NW
#define BC_WN 1
#define BC_MINB EMU_MINB
#include "../../codegen/cuda/kernels/bconv.cu"

static void EMU_CAT(call, S_ID)(const EmuArgs &a) {
    S_KERNEL(a.X, a.W, a.P, a.ep0, a.ep1, a.Y,
#if S_EPI == BNN_EPI_CHAIN
             a.Yb,
#elif S_RESW
             a.R,
#endif
             a.nb);
}
static const bool EMU_CAT(registered, S_ID) = emu_register(EmuCase{
    EMU_STR(S_ID), S_NAME, EMU_STR(EMU_CFG), S_C, S_H, S_W, S_O, S_KH, S_KW, S_SH, S_SW, S_PT, S_PL, S_PB, S_PR,
    S_DH, S_DW, S_ONE, S_POOL, S_EPI, S_CWP, S_LDW, S_LDY, S_NST, S_DIV, S_RES, S_RESW, S_F32, S_LDB, S_NB,
    {S_BATCH, S_BATCH2}, {S_GY, S_GY2}, EMU_TH, EMU_TW, EMU_BN, EMU_NW, EMU_MINB, EMU_CAT(call, S_ID),
    bnn_conv_wprefix});

#undef S_KERNEL
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
#undef S_ONE
#undef S_POOL
#undef S_CWP
#undef S_LDW
#undef S_LDY
#undef S_EPI
#undef S_NST
#undef S_DIV
#undef S_RES
#undef S_RESW
#undef S_F32
#undef S_LDB
#undef S_NB
#undef S_BATCH
#undef S_BATCH2
#undef S_GY
#undef S_GY2
