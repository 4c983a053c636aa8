// tiled_emu_cases.h: what test_tiled_emu.cc sees of tiled_emu_kernels.cc: the kernels it
// compiled under the emulator of tiled_emu.h, each with its BT_* / BW_* / PT_* numbers and a
// launcher taking EmuArgs as (X = At, W = Wt, P = apop, R = wpop, ep0, ep1, Y, nb = M); the
// bit-plane kernels (planes 1) take (At, Wt, apop, T = ep0, dir = ep1, Y, M), with aplain 1
// At the plain planes X[M][XB][LDA] words (mma.sync) or an EmuTensorMap of them (wgmma); with
// s8 the rows are bytes; with s8 or lfold T holds the levels in their int8 form (folded, sorted);
// with conv (PT_CONV) At is the bytes image and M the images times the output pixels.
#ifndef BNN_TILED_EMU_CASES_H
#define BNN_TILED_EMU_CASES_H
#include <vector>

#include "bconv_emu.h"

// PT_CONV's convolution (bgemm_planes_tiled.cu): the input image, its taps, the output image
// and, with codes out, the words a pixel and a plane an image.
struct TiledEmuConv {
    int ih, iw, ic, cb, kh, kw, sh, sw, padt, padl, dh, dw, oh, ow, padc, ldyw, yplane;
};
struct TiledEmuCase {
    const char *name;
    int wgmma, epi, n, k, kc, stages, bm, bn, threads, compact, ytile, ldy, m_const;
    int planes, xb, wb, wsigned, bipolar, levels, yb, aplain; // bgemm_planes_tiled.cu (planes 1)
    int s8, yfmt; // PT_S8 (k: K in bytes, ldy: the bytes of an A and W row) and its codes' format (1: bytes)
    EmuCall call;
    int lfold = 0; // bit-planes' PT_LFOLD: the levels in their int8 form (folded, sorted)
    const TiledEmuConv *conv = nullptr; // PT_CONV (with s8): the convolution; k its K in bytes, ldy K padded
};
inline std::vector<TiledEmuCase> &tiled_emu_cases() {
    static std::vector<TiledEmuCase> cases;
    return cases;
}
inline bool tiled_emu_register(const TiledEmuCase &c) {
    tiled_emu_cases().push_back(c);
    return true;
}
// Forgets every mbarrier and named barrier: call before each launch.
void tiled_emu_reset();

// The emulator's own contents of a tensor map (a kernel's BnnTensorMap, 128 opaque bytes on a
// GPU): a 3-d tensor of 4-byte elements at base, dims[0] contiguous, strides of dims 1 and 2 in
// bytes, the box a copy brings, and the swizzle (0 or 128 bytes).
struct EmuTensorMap {
    const void *base;
    unsigned long long dims[3], strides[2], box[3], swizzle;
};
static_assert(sizeof(EmuTensorMap) <= 128, "a tensor map is 128 bytes");
#endif
