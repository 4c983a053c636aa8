// tiled_emu_cases.h: what test_tiled_emu.cc sees of tiled_emu_kernels.cc: the kernels it
// compiled under the emulator of tiled_emu.h, each with its BT_* / BW_* / PT_* numbers and a
// launcher taking EmuArgs as (X = At, W = Wt, P = apop, R = wpop, ep0, ep1, Y, nb = M); the
// bit-plane kernels (planes 1) take (At, Wt, apop, T = ep0, dir = ep1, Y, M).
#ifndef BNN_TILED_EMU_CASES_H
#define BNN_TILED_EMU_CASES_H
#include <vector>

#include "bconv_emu.h"

struct TiledEmuCase {
    const char *name;
    int wgmma, epi, n, k, kc, stages, bm, bn, threads, compact, ytile, ldy, m_const;
    int planes, xb, wb, wsigned, bipolar, levels, yb; // bgemm_planes_tiled.cu (planes 1)
    EmuCall call;
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
#endif
