/* qconv_emu_resd_cases.h: test_qconv_emu's cases of a w1a2 ResNet's downsampling block, the second
 * conv with its 1x1 stride-2 downsample inside (QC_RESD), included twice: RC_FAST 0 (cases r1, r2,
 * r3: both chains in the kernel, codes and the dequantized f32 out) and RC_FAST 1 (r1f, r2f, r3f:
 * QC_RESD_FAST, codes by the fast test of blob_qresd_fast_row's rows, no f32 out; r1f and r3f
 * with their rows' bounds widened by 6, still true bounds, S_RESD_FAST 2, so that many elements
 * take the chains; r2f by 0.5, S_RESD_FAST 3, less than its levels lie apart, so that an
 * element of one level's band is in no other's and each level's test in resd_rows counts). 2-bit codes of 40 channels (2 words a pixel: one k256 step of 3 segments),
 * and of 130 channels in 1 plane and in 3 (8 words: 1 and 7 segments, 1 and 7 k steps), channels
 * past a warp's 32; r4 / r4f in blocks of 8 warps. */
#define RC_PASTE_(a, b) a##b
#define RC_PASTE(a, b) RC_PASTE_(a, b)
#if RC_FAST
#define RC_ID(n) RC_PASTE(n, f)
#define RC_NAME "resd fast: "
#else
#define RC_ID(n) n
#define RC_NAME "resd: "
#endif

#define S_ID RC_ID(r1)
#define S_NAME RC_NAME "3x3 chain + 1x1/2 downsample of 40 ch, 2 planes, 8x8 from 16x15"
#define S_C 16
#define S_H 8
#define S_W 8
#define S_O 48
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_OH 8
#define S_OW 8
#define S_XB 2
#define S_WB 1
#define S_BIPOLAR 1
#define S_EPI 3
#define S_YB 2
#define S_LDW 1
#define S_LDY 2
#define S_RES 1
#define S_ORELU 1
#define S_F32 2
#define S_F32_UNREAD RC_FAST /* (the fast test writes no f32) */
#define S_QHI 3
#define S_TH 4
#define S_TW 8
#define S_WM 1
#define S_WN 2
#define S_RESD 1
#define S_RESD_C 40
#define S_RESD_H 16
#define S_RESD_W 15
#define S_RESD_S 2
#define S_RESD_XB 2
#define S_RESD_LDW 2
#define S_RESD_FAST (RC_FAST ? 2 : 0)
#include "qconv_emu_case.h"


#define S_ID RC_ID(r2)
#define S_NAME RC_NAME "the downsample over 130 ch in 3 planes, residual first (r + v), 5x7 from 9x13"
#define S_C 64
#define S_H 5
#define S_W 7
#define S_O 40
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_OH 5
#define S_OW 7
#define S_XB 2
#define S_WB 1
#define S_BIPOLAR 1
#define S_EPI 3
#define S_YB 2
#define S_LDW 2
#define S_LDY 2
#define S_RES 2
#define S_ORELU 1
#define S_F32 2
#define S_F32_UNREAD RC_FAST /* (the fast test writes no f32) */
#define S_QHI 3
#define S_TH 4
#define S_TW 4
#define S_WM 1
#define S_WN 2
#define S_RESD 1
#define S_RESD_C 130
#define S_RESD_H 9
#define S_RESD_W 13
#define S_RESD_S 2
#define S_RESD_XB 3
#define S_RESD_LDW 8
#define S_RESD_FAST (RC_FAST ? 3 : 0)
#include "qconv_emu_case.h"


#define S_ID RC_ID(r3)
#define S_NAME RC_NAME "the downsample over 130 ch in 1 plane, stride 1, codes only"
#define S_C 16
#define S_H 6
#define S_W 6
#define S_O 33
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_OH 6
#define S_OW 6
#define S_XB 2
#define S_WB 1
#define S_BIPOLAR 1
#define S_EPI 3
#define S_YB 2
#define S_LDW 1
#define S_LDY 2
#define S_RES 1
#define S_ORELU 1
#define S_F32 2
#define S_F32_UNREAD 1
#define S_QHI 3
#define S_TH 4
#define S_TW 8
#define S_WM 2
#define S_WN 1
#define S_RESD 1
#define S_RESD_C 130
#define S_RESD_H 6
#define S_RESD_W 6
#define S_RESD_S 1
#define S_RESD_XB 1
#define S_RESD_LDW 8
#define S_RESD_FAST (RC_FAST ? 2 : 0)
#include "qconv_emu_case.h"


#define S_ID RC_ID(r4)
#define S_NAME RC_NAME "8 warps on 8x16 tiles (a 28x28 layer's batch tile), 64 ch of 2 planes from 16x32"
#define S_C 16
#define S_H 8
#define S_W 16
#define S_O 64
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_OH 8
#define S_OW 16
#define S_XB 2
#define S_WB 1
#define S_BIPOLAR 1
#define S_EPI 3
#define S_YB 2
#define S_LDW 1
#define S_LDY 2
#define S_RES 1
#define S_ORELU 1
#define S_F32 2
#define S_F32_UNREAD RC_FAST
#define S_QHI 3
#define S_TH 8
#define S_TW 16
#define S_WM 4
#define S_WN 2
#define S_RESD 1
#define S_RESD_C 64
#define S_RESD_H 16
#define S_RESD_W 32
#define S_RESD_S 2
#define S_RESD_XB 2
#define S_RESD_LDW 2
#define S_RESD_FAST (RC_FAST ? 2 : 0)
#include "qconv_emu_case.h"

#undef RC_ID
#undef RC_NAME
#undef RC_FAST
