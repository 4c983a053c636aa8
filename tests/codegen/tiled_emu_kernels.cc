// tiled_emu_kernels.cc: the kernels of test_tiled_emu, compiled from bgemm_wgmma.cu (wgmma),
// bgemm_tiled.cu (mma.sync) and bgemm_planes_tiled.cu (bit-planes, both) as host C++ under
// tiled_emu.h, each registered with its numbers (tiled_emu_cases.h). Small shapes with several
// row and column tiles, a partial last tile, rings of 2-3 stages that wrap many times, every
// epilogue, the compiler's compact and tile-major forms, padded LDY, a compiled-in M; for the
// bit-planes signed, unsigned and +-1 weights, codes of 3 levels (staged and searched), 5, 15,
// and plain A (the form bnncc emits): by tensor map into the swizzled stages on wgmma, gathered
// on mma.sync, with +-1 weights the kernels' own popc(a); int8 on wgmma (PT_S8) with int32
// out and codes of 6, 15, 31 and 255 levels as planes or bytes; the int8 convolution on wgmma
// (PT_CONV): int32 NCHW, codes of 15 and 31 levels as image planes, stride 2, dilation 2, a
// pad code, padding words and a plane's tail, channels that span taps within a stage, the levels
// staged in shared memory (15, 31) or read from global memory (63 at four stages).
#include "tiled_emu.h"
#define BNN_TILED_PTX_EMULATED
#include "../../codegen/cuda/kernels/tiled_common.cu"

void tiled_emu_reset() { emu_sync_reset(); }

#define EMU_LAUNCHER(fn)                                                                                               \
    static void call_##fn(const EmuArgs &a) {                                                                          \
        fn(a.X, a.W, a.P, (const int *)a.R, a.ep0, a.ep1, a.Y, a.nb);                                                  \
    }

// wgmma: name, N, K, EPI, KC, STAGES, COMPACT, YTILE, LDY (0: the default), M (0: at run time)
#define EMU_WGMMA(fn, n_, k_, epi_, kc_, st_, compact_, ytile_, ldy_, m_)                                              \
    EMU_LAUNCHER(fn)                                                                                                   \
    static bool reg_##fn = tiled_emu_register(TiledEmuCase{#fn, 1, epi_, n_, k_, kc_, st_, 128, 256, 384, compact_,    \
                                                           ytile_, ldy_, m_, 0, 0, 0, 0, 0, 0, 0, 0,    \
                                                           0, 0, call_##fn});

#define BW_NAME bw_i32
#define BW_N 300
#define BW_K 3000
#define BW_EPI BNN_EPI_I32
#define BW_KC 2
#define BW_STAGES 3
#include "../../codegen/cuda/kernels/bgemm_wgmma.cu"
EMU_WGMMA(bw_i32, 300, 3000, BNN_EPI_I32, 2, 3, 0, 0, 0, 0)

#define BW_NAME bw_bits
#define BW_N 300
#define BW_K 3000
#define BW_EPI BNN_EPI_THRESHOLD
#define BW_KC 2
#define BW_STAGES 3
#include "../../codegen/cuda/kernels/bgemm_wgmma.cu"
EMU_WGMMA(bw_bits, 300, 3000, BNN_EPI_THRESHOLD, 2, 3, 0, 0, 0, 0)

#define BW_NAME bw_affine_m
#define BW_M 300
#define BW_N 300
#define BW_K 1000
#define BW_EPI BNN_EPI_AFFINE
#define BW_KC 4
#define BW_STAGES 2
#include "../../codegen/cuda/kernels/bgemm_wgmma.cu"
EMU_WGMMA(bw_affine_m, 300, 1000, BNN_EPI_AFFINE, 4, 2, 0, 0, 0, 300)

#define BW_NAME bw_bits_tiles
#define BW_N 130
#define BW_K 700
#define BW_EPI BNN_EPI_THRESHOLD
#define BW_KC 2
#define BW_STAGES 2
#define BW_COMPACT 1
#define BW_YTILE 128
#define BW_LDY 12
#include "../../codegen/cuda/kernels/bgemm_wgmma.cu"
EMU_WGMMA(bw_bits_tiles, 130, 700, BNN_EPI_THRESHOLD, 2, 2, 1, 128, 12, 0)

// mma.sync: the same with BM x BN tiles of WM x WN warps
#define EMU_TILED(fn, n_, k_, epi_, kc_, st_, bm_, bn_, wm_, wn_, compact_, ytile_, ldy_, m_)                          \
    EMU_LAUNCHER(fn)                                                                                                   \
    static bool reg_##fn = tiled_emu_register(TiledEmuCase{#fn, 0, epi_, n_, k_, kc_, st_, bm_, bn_,                   \
                                                           wm_ * wn_ * 32, compact_, ytile_, ldy_, m_, 0, 0, 0, 0, 0, \
                                                           0, 0, 0, 0, 0, call_##fn});

#define BT_NAME bt_i32
#define BT_N 300
#define BT_K 3000
#define BT_EPI BNN_EPI_I32
#define BT_KC 2
#define BT_STAGES 3
#include "../../codegen/cuda/kernels/bgemm_tiled.cu"
EMU_TILED(bt_i32, 300, 3000, BNN_EPI_I32, 2, 3, 128, 256, 2, 4, 0, 0, 0, 0)

#define BT_NAME bt_bits_small
#define BT_N 300
#define BT_K 3000
#define BT_EPI BNN_EPI_THRESHOLD
#define BT_KC 2
#define BT_STAGES 3
#define BT_BM 64
#define BT_BN 128
#define BT_WM 1
#define BT_WN 4
#include "../../codegen/cuda/kernels/bgemm_tiled.cu"
EMU_TILED(bt_bits_small, 300, 3000, BNN_EPI_THRESHOLD, 2, 3, 64, 128, 1, 4, 0, 0, 0, 0)

#define BT_NAME bt_affine_m
#define BT_M 300
#define BT_N 300
#define BT_K 1000
#define BT_EPI BNN_EPI_AFFINE
#define BT_KC 4
#define BT_STAGES 2
#include "../../codegen/cuda/kernels/bgemm_tiled.cu"
EMU_TILED(bt_affine_m, 300, 1000, BNN_EPI_AFFINE, 4, 2, 128, 256, 2, 4, 0, 0, 0, 300)

#define BT_NAME bt_bits_tiles
#define BT_N 130
#define BT_K 700
#define BT_EPI BNN_EPI_THRESHOLD
#define BT_KC 2
#define BT_STAGES 2
#define BT_COMPACT 1
#define BT_YTILE 128
#define BT_LDY 12
#include "../../codegen/cuda/kernels/bgemm_tiled.cu"
EMU_TILED(bt_bits_tiles, 130, 700, BNN_EPI_THRESHOLD, 2, 2, 128, 256, 2, 4, 1, 128, 12, 0)

// bit-planes (pre-tiled A): name, wgmma, N, K, XB, WB, WSIGNED, WBIPOLAR, EPI, L, YB
#define EMU_PLANES(fn, wg_, n_, k_, xb_, wb_, sg_, bp_, epi_, l_, yb_)                                                 \
    static void call_##fn(const EmuArgs &a) {                                                                          \
        fn(a.X, a.W, a.P, (const int *)a.ep0, (const int *)a.ep1, a.Y, a.nb);                                          \
    }                                                                                                                  \
    static bool reg_##fn = tiled_emu_register(TiledEmuCase{#fn, wg_, epi_, n_, k_, 2, 3, 128, 256, wg_ ? 384 : 256,   \
                                                           0, 0, 0, 0, 1, xb_, wb_, sg_, bp_, l_, yb_, 0, 0, 0, call_##fn});

#define PT_NAME pw_w2a2_codes
#define PT_WGMMA 1
#define PT_N 300
#define PT_K 700
#define PT_XB 2
#define PT_WB 2
#define PT_WSIGNED 1
#define PT_EPI 2
#define PT_L 3
#define PT_YB 2
#define PT_KC 2
#define PT_STAGES 3
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_PLANES(pw_w2a2_codes, 1, 300, 700, 2, 2, 1, 0, 2, 3, 2)

#define PT_NAME pw_w1a2_bipolar_codes5
#define PT_WGMMA 1
#define PT_N 300
#define PT_K 700
#define PT_XB 2
#define PT_WB 1
#define PT_WBIPOLAR 1
#define PT_EPI 2
#define PT_L 5
#define PT_YB 3
#define PT_KC 2
#define PT_STAGES 3
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_PLANES(pw_w1a2_bipolar_codes5, 1, 300, 700, 2, 1, 0, 1, 2, 5, 3)

#define PT_NAME pw_w4a4_codes15
#define PT_WGMMA 1
#define PT_N 300
#define PT_K 300
#define PT_XB 4
#define PT_WB 4
#define PT_WSIGNED 1
#define PT_EPI 2
#define PT_L 15
#define PT_YB 4
#define PT_KC 2
#define PT_STAGES 3
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_PLANES(pw_w4a4_codes15, 1, 300, 300, 4, 4, 1, 0, 2, 15, 4)

#define PT_NAME pw_w2a2_unsigned_i32
#define PT_WGMMA 1
#define PT_N 300
#define PT_K 700
#define PT_XB 2
#define PT_WB 2
#define PT_WSIGNED 0
#define PT_EPI 1
#define PT_KC 2
#define PT_STAGES 3
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_PLANES(pw_w2a2_unsigned_i32, 1, 300, 700, 2, 2, 0, 0, 1, 1, 1)

#define PT_NAME pt_w2a2_codes
#define PT_N 300
#define PT_K 700
#define PT_XB 2
#define PT_WB 2
#define PT_WSIGNED 1
#define PT_EPI 2
#define PT_L 3
#define PT_YB 2
#define PT_KC 2
#define PT_STAGES 3
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_PLANES(pt_w2a2_codes, 0, 300, 700, 2, 2, 1, 0, 2, 3, 2)

#define PT_NAME pt_w1a2_bipolar_i32
#define PT_N 300
#define PT_K 700
#define PT_XB 2
#define PT_WB 1
#define PT_WBIPOLAR 1
#define PT_EPI 1
#define PT_KC 2
#define PT_STAGES 3
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_PLANES(pt_w1a2_bipolar_i32, 0, 300, 700, 2, 1, 0, 1, 1, 1, 1)

// bit-planes, plain A X[M][XB][LDA] (PT_APLAIN 1): name, wgmma, N, K, LDA, XB, WB, WSIGNED,
// WBIPOLAR, EPI, L, YB, KC, STAGES; wgmma takes X's tensor map (an EmuTensorMap)
#define EMU_PLANES_PLAIN(fn, wg_, n_, k_, xb_, wb_, sg_, bp_, epi_, l_, yb_, kc_, st_)                                 \
    static void call_##fn(const EmuArgs &a) {                                                                          \
        EMU_PLAIN_CALL(fn, a);                                                                                         \
    }                                                                                                                  \
    static bool reg_##fn = tiled_emu_register(TiledEmuCase{#fn, wg_, epi_, n_, k_, kc_, st_, 128, 256,                 \
                                                           wg_ ? 384 : 256, 0, 0, 0, 0, 1, xb_, wb_, sg_, bp_, l_,     \
                                                           yb_, 1, 0, 0, call_##fn});

#define EMU_PLAIN_CALL(fn, a)                                                                                          \
    fn(*(const BnnTensorMap *)a.X, a.W, a.P, (const int *)a.ep0, (const int *)a.ep1, a.Y, a.nb)
#define PT_NAME pw_w2a2_plain
#define PT_WGMMA 1
#define PT_APLAIN 1
#define PT_LDA 80
#define PT_N 300
#define PT_K 2500
#define PT_XB 2
#define PT_WB 2
#define PT_EPI 2
#define PT_L 3
#define PT_YB 2
#define PT_KC 8
#define PT_STAGES 2
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_PLANES_PLAIN(pw_w2a2_plain, 1, 300, 2500, 2, 2, 1, 0, 2, 3, 2, 8, 2)

#define PT_NAME pw_w1a2_bipolar_plain
#define PT_WGMMA 1
#define PT_APLAIN 1
#define PT_LDA 80
#define PT_N 300
#define PT_K 2500
#define PT_XB 2
#define PT_WB 1
#define PT_WBIPOLAR 1
#define PT_EPI 2
#define PT_L 3
#define PT_YB 2
#define PT_KC 8
#define PT_STAGES 2
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_PLANES_PLAIN(pw_w1a2_bipolar_plain, 1, 300, 2500, 2, 1, 0, 1, 2, 3, 2, 8, 2)

// past 15 levels bnncc hands the kernel its levels folded and sorted (PT_LFOLD): the int8
// form's binary search, with 255 levels after a check of the estimate
#define EMU_PLANES_FOLD(fn, wg_, n_, k_, xb_, wb_, bp_, l_, yb_, kc_, st_)                                             \
    static void call_##fn(const EmuArgs &a) {                                                                          \
        EMU_PLAIN_CALL(fn, a);                                                                                         \
    }                                                                                                                  \
    static bool reg_##fn = tiled_emu_register(TiledEmuCase{#fn, wg_, 2, n_, k_, kc_, st_, 128, 256, wg_ ? 384 : 256,  \
                                                           0, 0, 0, 0, 1, xb_, wb_, 1, bp_, l_, yb_, 1, 0, 0,        \
                                                           call_##fn, 1});
#define PT_NAME pw_w1a4_bipolar_fold255
#define PT_WGMMA 1
#define PT_APLAIN 1
#define PT_LDA 24
#define PT_N 300
#define PT_K 700
#define PT_XB 4
#define PT_WB 1
#define PT_WBIPOLAR 1
#define PT_EPI 2
#define PT_L 255
#define PT_YB 8
#define PT_LFOLD 1
#define PT_KC 8
#define PT_STAGES 2
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_PLANES_FOLD(pw_w1a4_bipolar_fold255, 1, 300, 700, 4, 1, 1, 255, 8, 8, 2)
#undef EMU_PLAIN_CALL

#define EMU_PLAIN_CALL(fn, a) fn(a.X, a.W, a.P, (const int *)a.ep0, (const int *)a.ep1, a.Y, a.nb)
#define PT_NAME pt_w2a2_plain
#define PT_APLAIN 1
#define PT_LDA 80
#define PT_N 300
#define PT_K 2500
#define PT_XB 2
#define PT_WB 2
#define PT_EPI 2
#define PT_L 3
#define PT_YB 2
#define PT_KC 4
#define PT_STAGES 3
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_PLANES_PLAIN(pt_w2a2_plain, 0, 300, 2500, 2, 2, 1, 0, 2, 3, 2, 4, 3)

#define PT_NAME pt_w2a3_fold31
#define PT_APLAIN 1
#define PT_LDA 24
#define PT_N 300
#define PT_K 700
#define PT_XB 3
#define PT_WB 2
#define PT_EPI 2
#define PT_L 31
#define PT_YB 5
#define PT_LFOLD 1
#define PT_KC 4
#define PT_STAGES 3
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_PLANES_FOLD(pt_w2a3_fold31, 0, 300, 700, 3, 2, 0, 31, 5, 4, 3)

#define PT_NAME pt_w1a2_bipolar_plain_i32
#define PT_APLAIN 1
#define PT_LDA 80
#define PT_N 300
#define PT_K 2500
#define PT_XB 2
#define PT_WB 1
#define PT_WBIPOLAR 1
#define PT_EPI 1
#define PT_KC 4
#define PT_STAGES 3
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_PLANES_PLAIN(pt_w1a2_bipolar_plain_i32, 0, 300, 2500, 2, 1, 0, 1, 1, 1, 1, 4, 3)
#undef EMU_PLAIN_CALL

// int8 on wgmma (PT_S8, plain A by tensor map, as bnncc emits it): name, N, K (bytes), LD
// (bytes a row), EPI, L, YB, YFMT; the levels in their int8 form (folded, sorted)
#define EMU_S8(fn, n_, k_, ld_, epi_, l_, yb_, yfmt_)                                                                  \
    static void call_##fn(const EmuArgs &a) {                                                                          \
        fn(*(const BnnTensorMap *)a.X, a.W, a.P, (const int *)a.ep0, (const int *)a.ep1, a.Y, a.nb);                   \
    }                                                                                                                  \
    static bool reg_##fn = tiled_emu_register(TiledEmuCase{#fn, 1, epi_, n_, k_, 8, 2, 128, 256, 384, 0, 0, ld_, 0,   \
                                                           1, 1, 1, 0, 0, l_, yb_, 1, 1, yfmt_, call_##fn});
#define PT_NAME ws8_i32
#define PT_S8 1
#define PT_WGMMA 1
#define PT_APLAIN 1
#define PT_LDA 80
#define PT_N 300
#define PT_K (8 * 320)
#define PT_XB 1
#define PT_WB 1
#define PT_WSIGNED 0
#define PT_EPI 1
#define PT_KC 8
#define PT_STAGES 2
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_S8(ws8_i32, 300, 300, 320, 1, 1, 1, 0)

#define PT_NAME ws8_codes15
#define PT_S8 1
#define PT_WGMMA 1
#define PT_APLAIN 1
#define PT_LDA 80
#define PT_N 300
#define PT_K (8 * 320)
#define PT_XB 1
#define PT_WB 1
#define PT_WSIGNED 0
#define PT_EPI 2
#define PT_L 15
#define PT_YB 4
#define PT_KC 8
#define PT_STAGES 2
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_S8(ws8_codes15, 300, 300, 320, 2, 15, 4, 0)

#define PT_NAME ws8_codes6
#define PT_S8 1
#define PT_WGMMA 1
#define PT_APLAIN 1
#define PT_LDA 48
#define PT_N 520
#define PT_K (8 * 192)
#define PT_XB 1
#define PT_WB 1
#define PT_WSIGNED 0
#define PT_EPI 2
#define PT_L 6
#define PT_YB 3
#define PT_KC 8
#define PT_STAGES 2
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_S8(ws8_codes6, 520, 150, 192, 2, 6, 3, 0)

#define PT_NAME ws8_bytes255
#define PT_S8 1
#define PT_WGMMA 1
#define PT_APLAIN 1
#define PT_LDA 256
#define PT_N 300
#define PT_K (8 * 1024)
#define PT_XB 1
#define PT_WB 1
#define PT_WSIGNED 0
#define PT_EPI 2
#define PT_L 255
#define PT_YB 8
#define PT_YFMT 1
#define PT_KC 8
#define PT_STAGES 2
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_S8(ws8_bytes255, 300, 1000, 1024, 2, 255, 8, 1)

#define PT_NAME ws8_bytes31
#define PT_S8 1
#define PT_WGMMA 1
#define PT_APLAIN 1
#define PT_LDA 16
#define PT_N 70
#define PT_K (8 * 64)
#define PT_XB 1
#define PT_WB 1
#define PT_WSIGNED 0
#define PT_EPI 2
#define PT_L 31
#define PT_YB 5
#define PT_YFMT 1
#define PT_KC 8
#define PT_STAGES 2
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_S8(ws8_bytes31, 70, 64, 64, 2, 31, 5, 1)

// The int8 convolution on wgmma (PT_CONV): name, N, K (bytes: taps x CB), LD (K padded to a
// stage's 128), EPI, L, YB, STAGES, then its geometry (TiledEmuConv, PT_* below alike)
#define EMU_S8CONV(fn, n_, k_, ld_, epi_, l_, yb_, st_, ...)                                                            \
    static void call_##fn(const EmuArgs &a) {                                                                          \
        fn(a.X, a.W, a.P, (const int *)a.ep0, (const int *)a.ep1, a.Y, a.nb);                                          \
    }                                                                                                                  \
    static const TiledEmuConv conv_##fn = {__VA_ARGS__};                                                               \
    static bool reg_##fn = tiled_emu_register(TiledEmuCase{#fn, 1, epi_, n_, k_, 8, st_, 128, 256, 384, 0, 0, ld_, 0,  \
                                                           1, 1, 1, 0, 0, l_, yb_, 0, 1, 0, call_##fn, 0, &conv_##fn});

// 3x3, stride 1, pad 1 around a 7 x 9 image of 40 channels (64 bytes a pixel: a stage's 128
// bytes are two taps), int32 out, three stages
#define PT_NAME wc8_i32
#define PT_S8 1
#define PT_WGMMA 1
#define PT_CONV 1
#define PT_N 300
#define PT_K (8 * 640)
#define PT_XB 1
#define PT_WB 1
#define PT_WSIGNED 0
#define PT_EPI 1
#define PT_KC 8
#define PT_STAGES 3
#define PT_IH 7
#define PT_IW 9
#define PT_IC 40
#define PT_CB 64
#define PT_KH 3
#define PT_KW 3
#define PT_SH 1
#define PT_SW 1
#define PT_PADT 1
#define PT_PADL 1
#define PT_DH 1
#define PT_DW 1
#define PT_OH 7
#define PT_OW 9
#define PT_PADC 0
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_S8CONV(wc8_i32, 300, 576, 640, 1, 1, 1, 3, 7, 9, 40, 64, 3, 3, 1, 1, 1, 1, 1, 1, 7, 9, 0, 0, 0)

// 3x3, stride 2 over 9 x 6 (90 channels, 96 bytes a pixel), pad code 5, 15 levels into 20 channels: a word a
// pixel, 15 pixels, a plane of 16 words (one of tail); two stages
#define PT_NAME wc8_codes15_s2
#define PT_S8 1
#define PT_WGMMA 1
#define PT_CONV 1
#define PT_N 20
#define PT_K (8 * 896)
#define PT_XB 1
#define PT_WB 1
#define PT_WSIGNED 0
#define PT_EPI 2
#define PT_L 15
#define PT_YB 4
#define PT_KC 8
#define PT_STAGES 2
#define PT_IH 9
#define PT_IW 6
#define PT_IC 90
#define PT_CB 96
#define PT_KH 3
#define PT_KW 3
#define PT_SH 2
#define PT_SW 2
#define PT_PADT 1
#define PT_PADL 1
#define PT_DH 1
#define PT_DW 1
#define PT_OH 5
#define PT_OW 3
#define PT_PADC 5
#define PT_LDYW 1
#define PT_YPLANE 16
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_S8CONV(wc8_codes15_s2, 20, 864, 896, 2, 15, 4, 2, 9, 6, 90, 96, 3, 3, 2, 2, 1, 1, 1, 1, 5, 3, 5, 1, 16)

// 3x3, dilation 2, pad 2 over 6 x 6 (32 channels), 31 levels into 300 channels (16 words a
// pixel, 6 of them padding); four stages
#define PT_NAME wc8_codes31_dil
#define PT_S8 1
#define PT_WGMMA 1
#define PT_CONV 1
#define PT_N 300
#define PT_K (8 * 384)
#define PT_XB 1
#define PT_WB 1
#define PT_WSIGNED 0
#define PT_EPI 2
#define PT_L 31
#define PT_YB 5
#define PT_KC 8
#define PT_STAGES 4
#define PT_IH 6
#define PT_IW 6
#define PT_IC 32
#define PT_CB 32
#define PT_KH 3
#define PT_KW 3
#define PT_SH 1
#define PT_SW 1
#define PT_PADT 2
#define PT_PADL 2
#define PT_DH 2
#define PT_DW 2
#define PT_OH 6
#define PT_OW 6
#define PT_PADC 0
#define PT_LDYW 16
#define PT_YPLANE 576
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_S8CONV(wc8_codes31_dil, 300, 288, 384, 2, 31, 5, 4, 6, 6, 32, 32, 3, 3, 1, 1, 2, 2, 2, 2, 6, 6, 0, 16, 576)

// 3x3, stride 1, pad 1 over 5 x 4 (64 channels), 63 levels into 260 channels: four stages
// leave no room for the levels, which the epilogue reads from global memory
#define PT_NAME wc8_codes63_global
#define PT_S8 1
#define PT_WGMMA 1
#define PT_CONV 1
#define PT_N 260
#define PT_K (8 * 640)
#define PT_XB 1
#define PT_WB 1
#define PT_WSIGNED 0
#define PT_EPI 2
#define PT_L 63
#define PT_YB 6
#define PT_KC 8
#define PT_STAGES 4
#define PT_IH 5
#define PT_IW 4
#define PT_IC 64
#define PT_CB 64
#define PT_KH 3
#define PT_KW 3
#define PT_SH 1
#define PT_SW 1
#define PT_PADT 1
#define PT_PADL 1
#define PT_DH 1
#define PT_DW 1
#define PT_OH 5
#define PT_OW 4
#define PT_PADC 0
#define PT_LDYW 16
#define PT_YPLANE 320
#include "../../codegen/cuda/kernels/bgemm_planes_tiled.cu"
EMU_S8CONV(wc8_codes63_global, 260, 576, 640, 2, 63, 6, 4, 5, 4, 64, 64, 3, 3, 1, 1, 1, 1, 1, 1, 5, 4, 0, 16, 320)
