// bconv_emu_kernels.cc: the cases of test_bconv_emu, each compiled from bconv.cu (BC_HALO 1) in
// one halo configuration: meson builds this file once per configuration (EMU_CFG, EMU_TH,
// EMU_TW, EMU_BN, EMU_NW, EMU_MINB on the command line), each build registers its kernels.

#define EMU_CAT_(a, b) a##_##b
#define EMU_CAT(a, b) EMU_CAT_(a, b)
#define EMU_STR_(a) #a
#define EMU_STR(a) EMU_STR_(a)

// common.cu's prep kernels under names of this configuration (each build defines them), its
// PTX helpers mapped to the emulator's (common_emu.h).
#define bnn_row_popc EMU_CAT(bnn_row_popc, EMU_CFG)
#define bnn_conv_wprefix EMU_CAT(bnn_conv_wprefix, EMU_CFG)
#include "common_emu.h"

// ---------------------------------------------------------------- ResNet-18's layers, kept small

#define S_ID r18_3x3
#define S_NAME "C 64 (8 words a pixel) 3x3 s1 p1 10x10 -> 64, threshold, LDY 8"
#define S_C 64
#define S_H 10
#define S_W 10
#define S_O 64
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_CWP 8
#define S_EPI BNN_EPI_THRESHOLD
#define S_LDY 8
#define S_BATCH 1
#define S_BATCH2 3
#include "bconv_emu_case.h"

#define S_ID r18_3x3s2
#define S_NAME "C 64 (8 words) 3x3 s2 p1 17x17 -> 9x9 x 128, int32"
#define S_C 64
#define S_H 17
#define S_W 17
#define S_O 128
#define S_KH 3
#define S_KW 3
#define S_SH 2
#define S_SW 2
#define S_PT 1
#define S_PL 1
#define S_CWP 8
#define S_EPI BNN_EPI_I32
#define S_BATCH 1
#define S_BATCH2 3
#include "bconv_emu_case.h"

#define S_ID r18_1x1s2
#define S_NAME "C 64 (8 words) 1x1 s2 18x18 -> 9x9 x 128, chain of 3 stages (a division), f32"
#define S_C 64
#define S_H 18
#define S_W 18
#define S_O 128
#define S_KH 1
#define S_KW 1
#define S_SH 2
#define S_SW 2
#define S_CWP 8
#define S_EPI BNN_EPI_CHAIN
#define S_NST 3
#define S_DIV 2
#define S_BATCH 1
#define S_BATCH2 3
#include "bconv_emu_case.h"

#define S_ID r18_c128
#define S_NAME "C 128 3x3 s1 p1 9x9 -> 128, chain + f32 residual (v + r), f32 and bits (LDB 8)"
#define S_C 128
#define S_H 9
#define S_W 9
#define S_O 128
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_EPI BNN_EPI_CHAIN
#define S_NST 2
#define S_RES 1
#define S_LDB 8
#define S_BATCH 1
#define S_BATCH2 3
#include "bconv_emu_case.h"

#define S_ID r18_c256
#define S_NAME "C 256 3x3 s1 p1 5x5 -> 256, threshold by a residual of bits (RESW 8)"
#define S_C 256
#define S_H 5
#define S_W 5
#define S_O 256
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_EPI BNN_EPI_THRESHOLD
#define S_RESW 8
#define S_BATCH 1
#include "bconv_emu_case.h"

#define S_ID r18_c128s2
#define S_NAME "C 128 3x3 s2 p1 7x7 -> 4x4 x 256, chain + residual of bits (RESW 8), f32 and bits"
#define S_C 128
#define S_H 7
#define S_W 7
#define S_O 256
#define S_KH 3
#define S_KW 3
#define S_SH 2
#define S_SW 2
#define S_PT 1
#define S_PL 1
#define S_EPI BNN_EPI_CHAIN
#define S_NST 3
#define S_DIV 2
#define S_RES 1
#define S_RESW 8
#define S_LDB 8
#define S_BATCH 3
#include "bconv_emu_case.h"

// ---------------------------------------------------------------- odd shapes, other epilogues

#define S_ID affine65
#define S_NAME "C 65 (8 words) 3x3 s1 p1 9x7 -> 40, affine, LDY 43"
#define S_C 65
#define S_H 9
#define S_W 7
#define S_O 40
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_CWP 8
#define S_EPI BNN_EPI_AFFINE
#define S_LDY 43
#define S_BATCH 1
#define S_BATCH2 3
#include "bconv_emu_case.h"

#define S_ID pool200
#define S_NAME "C 200 3x3 s1 p1 one-padded 11x11 -> 96, threshold, pool (OR), odd output"
#define S_C 200
#define S_H 11
#define S_W 11
#define S_O 96
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_ONE 1
#define S_POOL 1
#define S_EPI BNN_EPI_THRESHOLD
#define S_BATCH 1
#define S_BATCH2 3
#include "bconv_emu_case.h"

#define S_ID pool2_64
#define S_NAME "C 64 (8 words) 3x3 s1 p1 13x13 -> 64, threshold, pool before it (OR / AND), LDY 8"
#define S_C 64
#define S_H 13
#define S_W 13
#define S_O 64
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_CWP 8
#define S_POOL 2
#define S_EPI BNN_EPI_THRESHOLD
#define S_LDY 8
#define S_BATCH 1
#define S_BATCH2 3
#include "bconv_emu_case.h"

#define S_ID i32_200
#define S_NAME "C 200 1x1 s2 13x17 -> 7x9 x 70, int32, LDY 72"
#define S_C 200
#define S_H 13
#define S_W 17
#define S_O 70
#define S_KH 1
#define S_KW 1
#define S_SH 2
#define S_SW 2
#define S_EPI BNN_EPI_I32
#define S_LDY 72
#define S_BATCH 1
#define S_BATCH2 3
#include "bconv_emu_case.h"

#define S_ID chain65
#define S_NAME "C 65 3x3 s2 p1 one-padded 13x17 -> 7x9 x 48, chain of 3 stages + f32 residual (r + v)"
#define S_C 65
#define S_H 13
#define S_W 17
#define S_O 48
#define S_KH 3
#define S_KW 3
#define S_SH 2
#define S_SW 2
#define S_PT 1
#define S_PL 1
#define S_ONE 1
#define S_EPI BNN_EPI_CHAIN
#define S_NST 3
#define S_DIV 5
#define S_RES 2
#define S_BATCH 1
#define S_BATCH2 3
#include "bconv_emu_case.h"

#define S_ID nbconst
#define S_NAME "C 128 3x3 s1 p1 8x8 -> 128, threshold, batch 3 compiled in, LDY 8"
#define S_C 128
#define S_H 8
#define S_W 8
#define S_O 128
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_EPI BNN_EPI_THRESHOLD
#define S_LDY 8
#define S_NB 3
#define S_BATCH 3
#define S_GY 2
#include "bconv_emu_case.h"

#define S_ID dil5x3
#define S_NAME "C 65 5x3 dilation 2x1, pads 3/0/1/2, 12x10 -> 8x10 x 33, int32"
#define S_C 65
#define S_H 12
#define S_W 10
#define S_O 33
#define S_KH 5
#define S_KW 3
#define S_PT 3
#define S_PL 0
#define S_PB 1
#define S_PR 2
#define S_DH 2
#define S_EPI BNN_EPI_I32
#define S_BATCH 1
#define S_BATCH2 3
#include "bconv_emu_case.h"

#define S_ID chainbits
#define S_NAME "C 200 3x3 s1 p1 one-padded 9x9 -> 40, chain of 3 stages, bits only (LDB 8)"
#define S_C 200
#define S_H 9
#define S_W 9
#define S_O 40
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_ONE 1
#define S_EPI BNN_EPI_CHAIN
#define S_NST 3
#define S_DIV 2
#define S_F32 0
#define S_LDB 8
#define S_BATCH 1
#define S_BATCH2 3
#include "bconv_emu_case.h"

#define S_ID resw40
#define S_NAME "C 64 3x3 s1 p1 one-padded 9x12 -> 40, threshold by a residual of bits (RESW 2)"
#define S_C 64
#define S_H 9
#define S_W 12
#define S_O 40
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_ONE 1
#define S_EPI BNN_EPI_THRESHOLD
#define S_RESW 2
#define S_BATCH 1
#define S_BATCH2 3
#include "bconv_emu_case.h"

#define S_ID chainresw
#define S_NAME "C 65 3x3 s1 p1 9x9 -> 64, chain + residual of bits (r + v, RESW 8), f32 only"
#define S_C 65
#define S_H 9
#define S_W 9
#define S_O 64
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_EPI BNN_EPI_CHAIN
#define S_RES 2
#define S_RESW 8
#define S_BATCH 1
#define S_BATCH2 3
#include "bconv_emu_case.h"
