// ref_conv.h: the reference's float convolution for the emulator tests (float_tiles_emu.cc,
// conv2d_mma_emu.cc), written once: one output's sum in rt_cpu.c conv2d_sum's order and a float
// chain's stages as blob.h blob_conv2d_chain_value runs them, each operation rounded on its own
// through the includer's __fmul_rn, __fadd_rn and __fdiv_rn.
#ifndef BNN_REF_CONV_H
#define BNN_REF_CONV_H
#include <cstddef>

// Output (oy, ox) of one channel: x at the channels it reads ([cg][H][W] from x), w at its
// weights ([cg][KH][KW]); taps in the order (c, ky, kx), those outside the image skipped.
template <class F> static float ref_conv2d_sum(const float *x, const float *w, int cg, int oy, int ox) {
    float acc = 0.0f;
    for (int c = 0; c < cg; c++)
        for (int ky = 0; ky < F::KH; ky++) {
            const int iy = oy * F::SH - F::PT + ky * F::DH;
            if (iy < 0 || iy >= F::H) continue;
            for (int kx = 0; kx < F::KW; kx++) {
                const int ix = ox * F::SW - F::PL + kx * F::DW;
                if (ix < 0 || ix >= F::W) continue;
                acc = __fadd_rn(acc, __fmul_rn(x[((size_t)c * F::H + iy) * F::W + ix],
                                               w[((size_t)c * F::KH + ky) * F::KW + kx]));
            }
        }
    return acc;
}

// Channel o's value v through the first `stages` stages of chain [stages][2][channels]: v*a + b
// (v/a + b where bit s of div), then a relu where bit s of relu.
static float ref_chain_value(float v, const float *chain, int o, int channels, int stages, int div, int relu) {
    for (int s = 0; s < stages; s++) {
        const float a = chain[(size_t)2 * s * channels + o], k = chain[(size_t)(2 * s + 1) * channels + o];
        v = __fadd_rn((div >> s) & 1 ? __fdiv_rn(v, a) : __fmul_rn(v, a), k);
        if ((relu >> s) & 1) v = v < 0.0f ? 0.0f : v;
    }
    return v;
}
#endif
