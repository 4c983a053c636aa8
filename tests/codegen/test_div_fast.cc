// test_div_fast: common.cu's bnn_div_fast (x / a by a precomputed reciprocal and two fma
// corrections, no branch) against IEEE division, compiled as host C++ as the block emulator
// compiles common.cu (common_emu.h: __fmul_rn, __fmaf_rn and __frcp_rn each rounded once).
// Wherever it reports its quotient exact (*ok kept), the quotient must be x / a bit for bit:
// - every significand of x in two binades for divisors whose significands are the hard cases
//   (all ones, all zeros, one less than all ones) and random ones, exponents of a in [-20, 20];
// - random pairs over the whole range bnn_div_fast_ok and the x test accept, and past it;
// - zeros of both signs, subnormals, the range's ends, infinities and NaN.
// It must also keep *ok across that range (the kernels' fast path is the usual one) and clear
// it outside (|x| past 2^105 or below 2^-58 but not zero, infinities, NaN).
//   test_div_fast [--sanitized]   --sanitized: a twentieth of the sweeps (the ASan / UBSan build)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "common_emu.h"

namespace {

uint64_t rng = 0x9E3779B97F4A7C15ull;
uint64_t rnd() {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
float make(uint32_t sign, int exp, uint32_t mant) {
    return __int_as_float((int)(sign << 31 | (uint32_t)(exp + 127) << 23 | mant));
}

long checked, wrong, kept, cleared_in_range, kept_out_of_range;

// One pair; in_range: whether bnn_div_fast must keep ok (else it must clear it).
void check(float x, float a, bool in_range) {
    bool ok = true;
    const float q = bnn_div_fast(x, a, __frcp_rn(a), &ok);
    const float want = __fdiv_rn(x, a);
    checked++;
    if (ok) {
        kept++;
        if (__float_as_int(q) != __float_as_int(want)) {
            if (wrong < 10)
                printf("FAIL: %a / %a: %a, IEEE %a\n", (double)x, (double)a, (double)q, (double)want);
            wrong++;
        }
        if (!in_range && kept_out_of_range++ < 10)
            printf("FAIL: %a / %a kept ok outside the range\n", (double)x, (double)a);
    } else if (in_range && cleared_in_range++ < 10) {
        printf("FAIL: %a / %a cleared ok inside the range\n", (double)x, (double)a);
    }
}

} // namespace

int main(int argc, char **argv) {
    const bool sanitized = argc > 1 && !strcmp(argv[1], "--sanitized");
    const int step = sanitized ? 20 : 1;
    int fails = 0;
    // bnn_div_fast_ok: |a| in [2^-20, 2^20].
    const float okay[] = {0x1p-20f, -0x1p-20f, 0x1p20f, 1.0f, -3.0f, 0x1.fffffep19f};
    const float not_okay[] = {0x1.fffffep-21f, 0x1.000002p20f, 0.0f, -0.0f, INFINITY, NAN, 1e-30f, -1e30f};
    for (float a : okay)
        if (!bnn_div_fast_ok(a)) printf("FAIL: bnn_div_fast_ok(%a) false\n", (double)a), fails++;
    for (float a : not_okay)
        if (bnn_div_fast_ok(a)) printf("FAIL: bnn_div_fast_ok(%a) true\n", (double)a), fails++;

    // Sweeps: all significands of x in two binades, against divisors with hard significands.
    const uint32_t hard[] = {0x7fffff, 0x000000, 0x7ffffe, 0x000001, 0x400000, 0x555555, 0x2aaaaa};
    int ndiv = 0;
    for (int i = 0; i < 14; i++) {
        const uint32_t m = i < 7 ? hard[i] : (uint32_t)rnd() & 0x7fffff;
        const float a = make(i & 1, (int)(rnd() % 41) - 20, m);
        const int ex = (int)(rnd() % 40) - 20;
        for (int b = 0; b < 2; b++)
            for (uint32_t xm = (uint32_t)(rnd() % step); xm < 0x800000; xm += (uint32_t)step)
                check(make((uint32_t)(xm & 1), ex + b, xm), a, true);
        ndiv++;
    }
    // Random pairs over the accepted range (|x| in [2^-58, 2^105], |a| in [2^-20, 2^20]).
    for (long i = 0; i < 40000000 / step; i++) {
        const uint64_t r = rnd();
        const float a = make((uint32_t)(r >> 63), (int)(r % 41) - 20, (uint32_t)(r >> 8) & 0x7fffff);
        const float x = make((uint32_t)(r >> 62) & 1, (int)((r >> 40) % 163) - 58, (uint32_t)(r >> 31) & 0x7fffff);
        check(x, a, true);
    }
    // Zeros (exact, signed), the range's ends, and what must take the fallback.
    const float a_list[] = {1.0f, -1.0f, 3.0f, -0x1.fffffep19f, 0x1p-20f, 0x1.5555p-7f};
    for (float a : a_list) {
        check(0.0f, a, true);
        check(-0.0f, a, true);
        check(0x1p-58f, a, true);
        check(-0x1p105f, a, true);
        check(0x1.fffffep-59f, a, false);
        check(0x1.000002p105f, a, false);
        check(0x1p-140f, a, false); // subnormal
        check(INFINITY, a, false);
        check(-INFINITY, a, false);
        check(NAN, a, false);
        check(3e38f, a, false);
    }
    fails += (int)(wrong + cleared_in_range + kept_out_of_range);
    printf("%s: %ld pairs (%d divisors swept), %ld with ok kept: %ld differ from IEEE division, %ld cleared "
           "inside the range, %ld kept outside\n",
           fails ? "FAIL" : "ok", checked, ndiv, kept, wrong, cleared_in_range, kept_out_of_range);
    return fails ? 1 : 0;
}
