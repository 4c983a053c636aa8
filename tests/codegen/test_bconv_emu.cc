// test_bconv_emu: bconv.cu's halo-tile kernel (BC_HALO 1) without a GPU, compiled as host C++
// under the block emulator of bconv_emu.h, in the halo configurations bnncc may pick
// (bconv_emu_kernels.cc, built once per configuration by meson), on every epilogue it supports:
// int32, threshold (also with the fused pool, OR and OR / AND, and with thresholds picked by a
// residual of bits), affine, and the float chain (f32 residual on either side, a residual of
// bits, f32 and / or bits out). Every output word is compared with a plain C++ reference: the
// dots from the convolution's definition (XOR form on the packed rows, not the kernel's AND
// form), the epilogues from docs/kernels.md, each float operation rounded on its own. Outputs
// are poisoned before a launch: padding columns of int32 / f32 rows and a guard after every
// output must stay poisoned, bit rows must be whole (zero past the channels and padding words).
// The popc(w) prefix table P is computed here and checked against common.cu's bnn_conv_wprefix.
// One line per case and configuration (ok: / FAIL:); exit 1 on any failure.
//   test_bconv_emu [--sanitized] [ID...]   --sanitized: the first run of each case only (the
//   ASan / UBSan build); IDs: only the cases whose id contains one of them.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "../../codegen/cuda/kernels.h"
#include "bconv_emu.h"
#include "emu_test_util.h"

extern "C" {
alignas(128) unsigned char bnn_dsmem[EMU_DSMEM];
}

namespace {

enum { EPI_I32 = 1, EPI_THRESHOLD = 2, EPI_AFFINE = 3, EPI_CHAIN = 4 }; // BNN_EPI_* of common.cu
constexpr uint32_t POISON = 0xABABABABu;
constexpr size_t GUARD = 1024; // words after each output


// A layer's data at one batch, its reference dots and the expected outputs, shared by the
// configurations of the case.
struct Layer {
    const EmuCase *s;
    int nb, oh, ow, m, mo; // batch, output size, GEMM rows (output pixels), output rows (pooled)
    std::vector<unsigned> X, W, R;
    std::vector<int> P, dot;            // P: popc(w) prefix table; dot[m][o]
    std::vector<int> t, dir;            // threshold parameters ([2][O] with a residual of bits)
    std::vector<float> p0, p1, ep, rf;  // affine scale / bias, chain parameters, f32 residual
    std::vector<uint32_t> want, wantb;  // expected Y (words) and Yb (chain bits)
};

int div_up(int a, int b) { return (a + b - 1) / b; }

// Random packed input (NHWC, cwp words a pixel) and weights; words of X past the 16-byte chunks
// that hold channels get random garbage: the halo kernel never reads them (docs/kernels.md).
void make_operands(Layer &L) {
    const EmuCase &s = *L.s;
    const int ccr = div_up(s.c, 128), taps = s.kh * s.kw;
    const size_t npix = (size_t)L.nb * s.h * s.w;
    L.X.assign(npix * s.cwp, 0);
    for (size_t p = 0; p < npix; p++)
        for (int i = 0; i < s.cwp; i++) {
            uint32_t v = (uint32_t)rnd();
            if (i * 32 >= s.c && i >= 4 * ccr) {
                L.X[p * s.cwp + i] = v;
                continue;
            }
            const int bits = s.c - 32 * i;
            L.X[p * s.cwp + i] = bits >= 32 ? v : bits <= 0 ? 0u : v & ((1u << bits) - 1u);
        }
    L.W.assign((size_t)s.o * s.ldw, 0);
    for (int o = 0; o < s.o; o++)
        for (int tap = 0; tap < taps; tap++)
            for (int i = 0; 32 * i < s.c; i++) {
                const int bits = s.c - 32 * i;
                const uint32_t v = (uint32_t)rnd();
                L.W[(size_t)o * s.ldw + (size_t)tap * s.cwp + i] = bits >= 32 ? v : v & ((1u << bits) - 1u);
            }
    L.P.assign((size_t)(s.kh + 1) * (s.kw + 1) * s.o, 0);
    for (int i = 0; i <= s.kh; i++)
        for (int j = 0; j <= s.kw; j++)
            for (int o = 0; o < s.o; o++) {
                int sum = 0;
                for (int kh = 0; kh < i; kh++)
                    for (int kw = 0; kw < j; kw++)
                        for (int wd = 0; wd < s.cwp; wd++)
                            sum += __builtin_popcount(L.W[(size_t)o * s.ldw + (size_t)(kh * s.kw + kw) * s.cwp + wd]);
                L.P[((size_t)i * (s.kw + 1) + j) * s.o + o] = sum;
            }
}

// The dots from the definition: a tap inside the image adds C - 2*popc(x XOR w) over the C
// channels, a zero-padded tap 0, a one-padded tap (all +1) 2*popc(w) - C.
void make_dots(Layer &L) {
    const EmuCase &s = *L.s;
    const int cw = div_up(s.c, 32);
    L.dot.assign((size_t)L.nb * L.oh * L.ow * s.o, 0);
    for (int n = 0; n < L.nb; n++)
        for (int oh = 0; oh < L.oh; oh++)
            for (int ow = 0; ow < L.ow; ow++)
                for (int o = 0; o < s.o; o++) {
                    int acc = 0;
                    for (int kh = 0; kh < s.kh; kh++)
                        for (int kw = 0; kw < s.kw; kw++) {
                            const int ih = oh * s.sh - s.pt + kh * s.dh, iw = ow * s.sw - s.pl + kw * s.dw;
                            const unsigned *w = &L.W[(size_t)o * s.ldw + (size_t)(kh * s.kw + kw) * s.cwp];
                            const bool inside = ih >= 0 && ih < s.h && iw >= 0 && iw < s.w;
                            if (!inside && !s.pad_one) continue;
                            const unsigned *x = inside ? &L.X[(((size_t)n * s.h + ih) * s.w + iw) * s.cwp] : nullptr;
                            int d = 0; // the channels where x and w differ; padded (+1): where w is -1
                            for (int i = 0; i < cw; i++)
                                d += inside ? __builtin_popcount(x[i] ^ w[i])
                                            : __builtin_popcount(~w[i]) - (i == cw - 1 ? 32 * cw - s.c : 0);
                            acc += s.c - 2 * d;
                        }
                    L.dot[(((size_t)n * L.oh + oh) * L.ow + ow) * s.o + o] = acc;
                }
}

int dot_at(const Layer &L, int n, int oh, int ow, int o) {
    return L.dot[(((size_t)n * L.oh + oh) * L.ow + ow) * L.s->o + o];
}

// Thresholds on real dot values and next to them (the >= / <= edges), far ones, and the
// folding pass's constant channel (INT32_MIN: dir +1 always 1, dir -1 always 0).
void make_thresholds(Layer &L, int rows) {
    const int O = L.s->o;
    L.t.resize((size_t)rows * O);
    L.dir.resize((size_t)rows * O);
    for (int i = 0; i < rows * O; i++) {
        const int r = rnd_int(0, 9), pick = L.dot[(size_t)rnd_int(0, L.m - 1) * O + i % O];
        L.t[i] = r == 0 ? -1000000 : r == 1 ? 1000000 : r == 2 ? INT32_MIN : pick + rnd_int(-1, 1);
        L.dir[i] = rnd() & 1 ? 1 : -1;
    }
}
bool threshold_bit(const Layer &L, int row, int o, int d) {
    const int i = row * L.s->o + o;
    return L.dir[i] >= 0 ? d >= L.t[i] : d <= L.t[i];
}
// Bit o of GEMM row m of the residual of bits (resw words a row).
bool residual_bit(const Layer &L, int m, int o) { return L.R[(size_t)m * L.s->resw + o / 32] >> (o % 32) & 1u; }

// The float chain on one dot (blob_bconv_chain_value's sequence), before the residual.
float chain_value(const Layer &L, int d, int o) {
    const EmuCase &s = *L.s;
    float v = (float)d;
    for (int k = 0; k < s.nst; k++) {
        const float a = L.ep[(size_t)(2 * k) * s.o + o], b = L.ep[(size_t)(2 * k + 1) * s.o + o];
        v = (s.div >> k & 1) ? fdiv(v, a) : fmul(v, a);
        v = fadd(v, b);
    }
    return v;
}

// Epilogue parameters and expected outputs.
void make_expected(Layer &L) {
    const EmuCase &s = *L.s;
    const int O = s.o, pix = L.oh * L.ow;
    if (s.resw) { // random bits, also past O (never read as channels)
        L.R.resize((size_t)L.m * s.resw);
        for (auto &w : L.R) w = (uint32_t)rnd();
    }
    if (s.epi == EPI_I32 || s.epi == EPI_AFFINE) {
        L.want.assign((size_t)L.m * s.ldy + GUARD, POISON);
        if (s.epi == EPI_AFFINE)
            for (int o = 0; o < O; o++) {
                L.p0.push_back(rnd_float(-0.05f, 0.05f));
                L.p1.push_back(rnd_float(-3.0f, 3.0f));
            }
        for (int m = 0; m < L.m; m++)
            for (int o = 0; o < O; o++) {
                const int d = L.dot[(size_t)m * O + o];
                L.want[(size_t)m * s.ldy + o] =
                    s.epi == EPI_I32 ? (uint32_t)d : float_bits(fadd(fmul((float)d, L.p0[o]), L.p1[o]));
            }
    } else if (s.epi == EPI_THRESHOLD) {
        make_thresholds(L, s.resw ? 2 : 1);
        L.want.assign((size_t)L.mo * s.ldy + GUARD, POISON);
        const int ph = L.oh / 2, pw = L.ow / 2;
        for (int r = 0; r < L.mo; r++) {
            for (int j = 0; j < s.ldy; j++) L.want[(size_t)r * s.ldy + j] = 0;
            for (int o = 0; o < O; o++) {
                bool on;
                if (s.pool) { // window (n, y, x): the 2x2 outputs of 2y.., 2x..
                    const int n = r / (ph * pw), y = r / pw % ph, x = r % pw;
                    int dmax = INT32_MIN;
                    on = false;
                    for (int q = 0; q < 4; q++) {
                        const int d = dot_at(L, n, 2 * y + q / 2, 2 * x + q % 2, o);
                        on |= threshold_bit(L, 0, o, d);
                        dmax = d > dmax ? d : dmax;
                    }
                    if (s.pool == 2) on = threshold_bit(L, 0, o, dmax); // the pool of the dots, then the threshold
                } else {
                    on = threshold_bit(L, s.resw && residual_bit(L, r, o) ? 1 : 0, o, L.dot[(size_t)r * O + o]);
                }
                if (on && o / 32 < s.ldy) L.want[(size_t)r * s.ldy + o / 32] |= 1u << (o % 32);
            }
        }
    } else { // the chain: f32 NCHW and / or bits NHWC
        L.ep.resize((size_t)2 * s.nst * O);
        const float fan = (float)(s.c * s.kh * s.kw);
        for (int k = 0; k < s.nst; k++)
            for (int o = 0; o < O; o++) {
                float a = (s.div >> k & 1) ? rnd_float(0.5f, 4.0f) * (rnd() & 1 ? 1.0f : -1.0f)
                                           : rnd_float(-2.0f, 2.0f) / sqrtf(fan);
                float b = rnd_float(-1.5f, 1.5f);
                if (o == 1 && (s.div >> k & 1)) a = 0.0f; // a division by zero: +-inf, NaN at dot 0
                if (o == 2) b = -0.0f;
                L.ep[(size_t)(2 * k) * O + o] = a;
                L.ep[(size_t)(2 * k + 1) * O + o] = b;
            }
        if (s.res && !s.resw) {
            L.rf.resize((size_t)L.m * O);
            for (auto &r : L.rf) r = (float)rnd_int(-16, 16) / 4.0f;
        }
        if (s.f32) L.want.assign((size_t)L.m * O + GUARD, POISON);
        if (s.ldb) L.wantb.assign((size_t)L.m * s.ldb + GUARD, POISON);
        for (int m = 0; m < L.m; m++) {
            for (int j = 0; s.ldb && j < s.ldb; j++) L.wantb[(size_t)m * s.ldb + j] = 0;
            for (int o = 0; o < O; o++) {
                const size_t i = (size_t)(m / pix) * O * pix + (size_t)o * pix + m % pix; // NCHW
                float v = chain_value(L, L.dot[(size_t)m * O + o], o);
                const float r = s.resw ? (residual_bit(L, m, o) ? 1.0f : -1.0f) : s.res ? L.rf[i] : 0.0f;
                if (s.res == 1) v = fadd(v, r);
                if (s.res == 2) v = fadd(r, v);
                if (s.f32) L.want[i] = float_bits(v);
                if (s.ldb && v >= 0.0f) L.wantb[(size_t)m * s.ldb + o / 32] |= 1u << (o % 32);
            }
        }
    }
}

// Words of got that differ from want (floats: NaN equals any NaN); the first one described in `first`.
size_t compare(const char *what, const std::vector<uint32_t> &got, const std::vector<uint32_t> &want, size_t rows,
               size_t ld, bool floats, std::string &first) {
    size_t bad = 0;
    for (size_t i = 0; i < want.size(); i++) {
        bool same = got[i] == want[i];
        if (!same && floats && std::isnan(bits_float(got[i])) && std::isnan(bits_float(want[i]))) same = true;
        if (same) continue;
        if (bad++ == 0) {
            char b[160];
            if (i >= rows * ld)
                snprintf(b, sizeof b, "%s guard word %zu written: 0x%08x", what, i - rows * ld, got[i]);
            else
                snprintf(b, sizeof b, "%s row %zu word %zu: 0x%08x, want 0x%08x", what, i / ld, i % ld, got[i],
                         want[i]);
            first = b;
        }
    }
    return bad;
}

struct Totals {
    int ok = 0, failed = 0;
};

// Runs configuration s on the layer L (s.cfg's kernel); prints the case's line.
bool run_config(const Layer &L, const EmuCase &s, int gy_case, Totals &tot) {
    const int ohe = s.pool ? L.oh / 2 * 2 : L.oh, owe = s.pool ? L.ow / 2 * 2 : L.ow;
    const int tiles = div_up(ohe, s.th) * div_up(owe, s.tw), nmt = L.nb * tiles;
    const unsigned gx = (unsigned)div_up(s.o, s.bn);
    const unsigned gy = gy_case ? (unsigned)gy_case : (unsigned)div_up(nmt, s.nw) + 1;
    const int classes =
        bnn_corr_classes(s.h, s.w, s.kh, s.kw, s.sh, s.sw, s.pt, s.pl, s.dh, s.dw, L.oh, L.ow, s.pad_one);
    const int smem = bnn_halo_smem(s.c, s.kh, s.kw, s.sh, s.sw, s.dh, s.dw, s.th, s.tw, s.bn, s.pool, s.nw, classes);
    std::vector<uint32_t> y, yb;
    if (!L.want.empty()) y.assign(L.want.size(), POISON);
    if (!L.wantb.empty()) yb.assign(L.wantb.size(), POISON);
    EmuArgs a{};
    a.X = L.X.data();
    a.W = L.W.data();
    // The kernel's P: bnncc's tables of its column blocks (kernels.h bnn_halo_tables) from the
    // prefix table, with the thresholds where the threshold takes the bit epilogue (no pool).
    const bool own_bits = s.epi == EPI_THRESHOLD && !s.pool;
    std::vector<int> tables(gx * (size_t)(classes + 1) * s.bn);
    bnn_halo_tables(s.c, s.h, s.w, s.o, s.kh, s.kw, s.sh, s.sw, s.pt, s.pl, s.dh, s.dw, L.oh, L.ow, s.pad_one, s.bn,
                    L.P.data(), own_bits ? L.t.data() : nullptr, own_bits ? L.dir.data() : nullptr, s.resw,
                    tables.data());
    a.P = tables.data();
    if (s.epi == EPI_THRESHOLD) {
        a.ep0 = L.t.data();
        a.ep1 = L.dir.data();
    } else if (s.epi == EPI_AFFINE) {
        a.ep0 = L.p0.data();
        a.ep1 = L.p1.data();
    } else if (s.epi == EPI_CHAIN) {
        a.ep0 = L.ep.data();
        a.ep1 = s.resw ? (const void *)L.R.data() : s.res ? (const void *)L.rf.data() : nullptr;
    }
    a.Y = y.empty() ? nullptr : y.data();
    a.Yb = yb.empty() ? nullptr : yb.data();
    a.R = s.epi == EPI_THRESHOLD && s.resw ? L.R.data() : nullptr;
    a.nb = s.nb_const ? 0 : L.nb; // a batch compiled in ignores the argument
    emu_global_base[0] = L.X.data();
    emu_global_bytes[0] = L.X.size() * 4;
    emu_global_base[1] = L.W.data();
    emu_global_bytes[1] = L.W.size() * 4;
    emu_global_base[2] = tables.data();
    emu_global_bytes[2] = tables.size() * 4;
    emu_nglobal = 3;
    char what[256];
    snprintf(what, sizeof what, "%s %dx%d/%d/%d minb %d: %s [%s], batch %d", s.cfg, s.th, s.tw, s.bn, s.nw, s.minb,
             s.name, s.id, L.nb);
    emu_what = what;
    const unsigned long long overrun = emu_launch(s.call, a, gx, gy, (unsigned)(32 * s.nw), (unsigned)smem);

    std::string first;
    const bool chain = s.epi == EPI_CHAIN;
    size_t bad = 0;
    if (!chain || s.f32) // the chain's f32 Y is NCHW: one row of m*O values here
        bad += chain ? compare("Y (NCHW f32)", y, L.want, 1, (size_t)L.m * s.o, true, first)
                     : compare("Y", y, L.want, (size_t)L.mo, (size_t)s.ldy, s.epi == EPI_AFFINE, first);
    if (chain && s.ldb) bad += compare("Yb", yb, L.wantb, (size_t)L.m, (size_t)s.ldb, false, first);
    const bool ok = bad == 0 && overrun == 0;
    printf("%s: %s (grid %ux%u, %d tiles, up to %d a warp, smem %d%s)", ok ? "ok" : "FAIL", what, gx, gy, nmt,
           div_up(nmt, (int)gy * s.nw), smem, smem > BNN_HALO_SMEM_MAX ? " > BNN_HALO_SMEM_MAX" : "");
    if (bad) printf(": %zu words differ, first: %s", bad, first.c_str());
    if (overrun) printf(": %llu bytes of shared memory past the launch's changed", overrun);
    printf("\n");
    fflush(stdout);
    (ok ? tot.ok : tot.failed)++;
    return ok;
}

} // namespace

int main(int argc, char **argv) {
    bool sanitized = false;
    std::vector<std::string> only;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--sanitized") == 0)
            sanitized = true;
        else
            only.push_back(argv[i]);
    }
    // The cases in the order of the list, each with its configurations sorted by name.
    std::vector<std::string> ids;
    for (const EmuCase &c : emu_cases()) {
        bool seen = false;
        for (const auto &id : ids) seen |= id == c.id;
        bool wanted = only.empty();
        for (const auto &o : only) wanted |= strstr(c.id, o.c_str()) != nullptr;
        if (!seen && wanted) ids.push_back(c.id);
    }
    std::vector<std::string> cfgs;
    for (const EmuCase &c : emu_cases()) {
        bool seen = false;
        for (const auto &x : cfgs) seen |= x == c.cfg;
        if (!seen) cfgs.push_back(c.cfg);
    }
    std::sort(cfgs.begin(), cfgs.end());
    std::vector<Totals> totals(cfgs.size());
    int failures = 0;
    const clock_t t0 = clock();
    for (const auto &id : ids) {
        std::vector<const EmuCase *> runs;
        for (const auto &cfg : cfgs)
            for (const EmuCase &c : emu_cases())
                if (id == c.id && cfg == c.cfg) runs.push_back(&c);
        const EmuCase &s = *runs[0];
        for (int bi = 0; bi < (sanitized ? 1 : 2) && s.batch[bi]; bi++) {
            Layer L;
            L.s = &s;
            L.nb = s.batch[bi];
            L.oh = bnn_conv_out(s.h, s.kh, s.sh, s.pt, s.pb, s.dh);
            L.ow = bnn_conv_out(s.w, s.kw, s.sw, s.pl, s.pr, s.dw);
            L.m = L.nb * L.oh * L.ow;
            L.mo = s.pool ? L.nb * (L.oh / 2) * (L.ow / 2) : L.m;
            rng_state = 0x5EED0000u + 7919u * (uint64_t)(&id - &ids[0]) + (uint64_t)L.nb;
            make_operands(L);
            make_dots(L);
            make_expected(L);
            // common.cu's prep kernel must give the same table, one thread per entry.
            std::vector<int> P(L.P.size(), -1);
            blockDim = EmuDim{128, 1, 1};
            for (unsigned b = 0; b * 128 < P.size(); b++)
                for (unsigned t = 0; t < 128; t++) {
                    blockIdx = EmuDim{b, 0, 0};
                    threadIdx = EmuDim{t, 0, 0};
                    s.wprefix(L.W.data(), s.o, s.kh, s.kw, s.cwp, s.ldw, P.data());
                }
            if (P != L.P) {
                printf("FAIL: %s, batch %d: bnn_conv_wprefix differs from the host's table\n", s.id, L.nb);
                failures++;
            }
            for (size_t r = 0; r < runs.size(); r++)
                for (size_t k = 0; k < cfgs.size(); k++)
                    if (cfgs[k] == runs[r]->cfg) run_config(L, *runs[r], s.gy[bi], totals[k]);
        }
    }
    printf("\nconfiguration                 cases ok  failed\n");
    for (size_t k = 0; k < cfgs.size(); k++) {
        const EmuCase *c = nullptr;
        for (const EmuCase &x : emu_cases())
            if (cfgs[k] == x.cfg) c = &x;
        printf("%s %dx%d/%d/%d minb %d %12d %7d\n", c->cfg, c->th, c->tw, c->bn, c->nw, c->minb, totals[k].ok,
               totals[k].failed);
        failures += totals[k].failed;
    }
    // Every tile bnncc --tune may pick (kernels.h) must be one emulated here; BC_MINB only sets
    // __launch_bounds__, so a variant that differs from an emulated one in minb alone is covered.
    for (int v = 0; v < BNN_HALO_VARIANTS; v++) {
        const BnnHaloTile &t = bnn_halo_variants[v];
        bool covered = false;
        for (const EmuCase &x : emu_cases())
            covered |= x.th == t.th && x.tw == t.tw && x.bn == t.bn && x.nw == t.wm;
        if (!covered) {
            printf("FAIL: bnn_halo_variants[%d] (%dx%d/%d/%d) has no emulated configuration: add it to "
                   "tests/codegen/meson.build\n", v, t.th, t.tw, t.bn, t.wm);
            failures++;
        }
    }
    printf("test_bconv_emu: %s (%.1f s of CPU)\n", failures ? "FAILED" : "every output word exact",
           (double)(clock() - t0) / CLOCKS_PER_SEC);
    return failures ? 1 : 0;
}
