// common_emu.h: common.cu for the block emulator (bconv_emu.h). common.cu's PTX helpers are
// compiled under other names (never called, so their asm never reaches code), then the names
// the kernels call are mapped to the emulator's emu_ functions. An includer that calls
// bnn_hmma_f16, bnn_f16x2, bnn_f16_rest or bnn_f16_float defines emu_hmma_f16, emu_f16x2,
// emu_f16_rest and emu_f16_float
// (conv2d_mma_emu.cc); one that compiles several configurations renames common.cu's kernels
// first (bconv_emu_kernels.cc).
#ifndef BNN_COMMON_EMU_H
#define BNN_COMMON_EMU_H
#include "bconv_emu.h"

#define bnn_smem bnn_ptx_smem
#define bnn_cp16 bnn_ptx_cp16
#define bnn_cp_commit bnn_ptx_cp_commit
#define bnn_cp_wait bnn_ptx_cp_wait
#define bnn_st16 bnn_ptx_st16
#define bnn_ld16 bnn_ptx_ld16
#define bnn_ldsm4 bnn_ptx_ldsm4
#define bnn_bmma bnn_ptx_bmma
#define bnn_hmma_f16 bnn_ptx_hmma_f16
#define bnn_f16x2 bnn_ptx_f16x2
#define bnn_f16_rest bnn_ptx_f16_rest
#define bnn_f16_float bnn_ptx_f16_float
#define bnn_dyn_smem_size bnn_ptx_dyn_smem_size
#define bnn_or_if bnn_ptx_or_if
#include "../../codegen/cuda/kernels/common.cu"
#undef bnn_smem
#undef bnn_cp16
#undef bnn_cp_commit
#undef bnn_cp_wait
#undef bnn_st16
#undef bnn_ld16
#undef bnn_ldsm4
#undef bnn_bmma
#undef bnn_hmma_f16
#undef bnn_f16x2
#undef bnn_f16_rest
#undef bnn_f16_float
#undef bnn_dyn_smem_size
#undef bnn_or_if
#define bnn_smem emu_smem
#define bnn_cp16 emu_cp16
#define bnn_cp_commit emu_cp_commit
#define bnn_cp_wait emu_cp_wait
#define bnn_st16 emu_st16
#define bnn_ld16 emu_ld16
#define bnn_ldsm4 emu_ldsm4
#define bnn_bmma emu_bmma
#define bnn_hmma_f16 emu_hmma_f16
#define bnn_f16x2 emu_f16x2
#define bnn_f16_rest emu_f16_rest
#define bnn_f16_float emu_f16_float
#define bnn_dyn_smem_size emu_dyn_smem_size
#define bnn_or_if emu_or_if
#endif
