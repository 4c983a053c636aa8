/* qconv_emu_kernel.h: qconv.cu's QC_* macros from qconv_emu_case.h's S_* ones, and the kernel:
 * the direct one (emu_direct_<ID>), or with S_HALO the halo-tile one (emu_halo_<ID>). */
#define QC_C S_C
#define QC_H S_H
#define QC_W S_W
#define QC_O S_O
#define QC_KH S_KH
#define QC_KW S_KW
#define QC_SH S_SH
#define QC_SW S_SW
#define QC_PT S_PT
#define QC_PL S_PL
#define QC_DH S_DH
#define QC_DW S_DW
#define QC_OH S_OH
#define QC_OW S_OW
#define QC_XB S_XB
#define QC_WB S_WB
#define QC_WSIGNED S_WSIGNED
#define QC_WBIPOLAR S_BIPOLAR
#define QC_PAD_CODE S_PAD_CODE
#define QC_EPI S_EPI
#define QC_L S_L
#define QC_YB S_YB
#define QC_LDW S_LDW
#define QC_LDY S_LDY
#define QC_LFOLD S_LFOLD
#if S_EPI == 3
#define QC_NST 2
#define QC_DIV 1
#define QC_RELU 2
#define QC_RES S_RES
#define QC_ORELU S_ORELU
#define QC_F32 S_F32
#define QC_QLO 0
#define QC_QHI S_QHI
#define QC_ROUND 0
#define QC_QSCALE 0x3f000000
#define QC_QZERO 0x3e800000
#endif
#if S_HALO && S_RESD /* the downsample's chain: 3 stages, the second a division (a batch-norm's) */
#define QC_RESD 1
#define QC_RESD_C S_RESD_C
#define QC_RESD_H S_RESD_H
#define QC_RESD_W S_RESD_W
#define QC_RESD_SH S_RESD_S
#define QC_RESD_SW S_RESD_S
#define QC_RESD_XB S_RESD_XB
#define QC_RESD_LDW S_RESD_LDW
#define QC_RESD_NST 3
#define QC_RESD_DIV 2
#define QC_RESD_RELU 0
#define QC_RESD_ORELU 0
#define QC_RESD_FAST (S_RESD_FAST > 0)
#define QC_RESD_FAST_COUNT() (emu_fast_total++)
#define QC_RESD_FAST_EXACT() (emu_fast_undecided++)
#define QC_RESD_FAST_OUT() (emu_fast_out++)
#endif
#if S_HALO
#define QC_HALO 1
#define QC_LSTAGE S_LSTAGE
#define QC_TH S_TH
#define QC_TW S_TW
#define QC_WM S_WM
#define QC_WN S_WN
#define QC_NAME EMU_CAT(emu_halo, S_ID)
#else
#define QC_NAME EMU_CAT(emu_direct, S_ID)
#endif
#include "../../codegen/cuda/kernels/qconv.cu"
