// emu_test_util.h: what the emulator tests (test_bconv_emu, test_tiled_emu) share on the host
// side: a seeded random stream (splitmix64), float <-> bits, and float operations rounded one
// at a time as __fmul_rn / __fdiv_rn / __fadd_rn are.
#ifndef BNN_EMU_TEST_UTIL_H
#define BNN_EMU_TEST_UTIL_H
#include <cstdint>
#include <cstring>

inline uint64_t rng_state;
inline uint64_t rnd() {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
inline int rnd_int(int lo, int hi) { return lo + (int)(rnd() % (uint64_t)(hi - lo + 1)); }
inline float rnd_float(float lo, float hi) { return lo + (hi - lo) * (float)((rnd() >> 40) * (1.0 / 16777216.0)); }
inline float bits_float(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
inline uint32_t float_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
inline float fmul(float a, float b) {
    volatile float r = a * b;
    return r;
}
inline float fdiv(float a, float b) {
    volatile float r = a / b;
    return r;
}
inline float fadd(float a, float b) {
    volatile float r = a + b;
    return r;
}
#endif
