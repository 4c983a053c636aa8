// test_tiled_emu: the pre-tiled bit-GEMM kernels (bgemm_wgmma.cu on wgmma, bgemm_tiled.cu on
// mma.sync, bgemm_planes_tiled.cu's bit-planes on both) without a GPU, compiled as host C++
// under the block emulator of tiled_emu.h (tiled_emu_kernels.cc): their producer / consumer
// pipelines on mbarriers and bulk copies, persistent blocks walking several tiles, every
// epilogue (int32, threshold bits, affine f32), the compiler's compact row tiles and
// tile-major bit output, padded LDY; for the bit-planes signed, unsigned and +-1 weights, int32
// and codes (the staging warp's sorted thresholds and their search on wgmma); int8 on wgmma
// (PT_S8) with int32 out and codes as planes or bytes, and its convolution (PT_CONV) with int32
// NCHW out and codes as image planes. Every output word
// is compared with a plain reference: dot = K - 2 * popc(a XOR w) on the packed rows (not the
// kernels' AND form), bit = dir >= 0 ? dot >= t : dot <= t, y = dot * scale + bias rounded
// twice; the planes' integer dot of the codes and the count of the levels it passes. Outputs
// are poisoned before a launch and a guard after them must stay poisoned. One line per case
// and run (ok: / FAIL:); exit 1 on any failure.
//   test_tiled_emu [--sanitized]   --sanitized: one run a case (the ASan / UBSan build)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "blob.h"
#include "emu_test_util.h"
#include "tile_layout.h"
#include "tiled_emu_cases.h"

extern "C" {
alignas(128) unsigned char bnn_dsmem[EMU_DSMEM];
}

namespace {

enum { EPI_I32 = 1, EPI_THRESHOLD = 2, EPI_AFFINE = 3 }; // BNN_EPI_* of common.cu
constexpr uint32_t POISON = 0xABABABABu;
constexpr size_t GUARD = 256; // words after each output


// Launches case s at M rows on min(tiles, grid_cap) blocks (grid_cap 0: one more than tiles)
// with args (Y set here: poisoned, a guard after it), the kernel's input buffers registered
// for the copies' checks; then every output word against want and the guard. 0 ok, 1 failed.
int launch_and_check(const TiledEmuCase &s, int M, int grid_cap, EmuArgs &args,
                     const std::vector<std::pair<const void *, size_t>> &inputs, unsigned smem,
                     const std::vector<uint32_t> &want) {
    std::vector<uint32_t> y(want.size() + GUARD, POISON);
    args.Y = y.data();
    args.nb = M;
    emu_nglobal = 0;
    for (const auto &in : inputs) {
        emu_global_base[emu_nglobal] = in.first;
        emu_global_bytes[emu_nglobal++] = in.second;
    }
    const int units = (M + s.bm - 1) / s.bm * ((s.n + s.bn - 1) / s.bn);
    const unsigned gx = (unsigned)(grid_cap ? std::min(units, grid_cap) : units + 1);
    char what[160];
    snprintf(what, sizeof what, "%s M=%d, %u blocks for %d tiles", s.name, M, gx, units);
    emu_what = what;
    tiled_emu_reset();
    const unsigned long long overrun = emu_launch(s.call, args, gx, 1, (unsigned)s.threads, smem);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < y.size(); i++)
        if (y[i] != (i < want.size() ? want[i] : POISON) && !bad++) first = i;
    if (bad || overrun) {
        printf("FAIL: %s: %zu words wrong (first at %zu: %08x, want %08x), %llu shared bytes past the launch's\n", what,
               bad, first, y[first], first < want.size() ? want[first] : POISON, overrun);
        return 1;
    }
    printf("ok: %s (%zu words)\n", what, want.size());
    return 0;
}

// Random rows of k bits (bits past k zero), `words` 32-bit words a row.
std::vector<uint32_t> random_rows(int rows, int k, int words) {
    std::vector<uint32_t> v((size_t)rows * words, 0);
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < k; i++)
            if (rnd() & 1) v[(size_t)r * words + i / 32] |= 1u << (i % 32);
    return v;
}
// The pre-tiled image (tiled_common.cu): chunk c of row r at ((t * TR * NCH) + c * in) * 16 +
// (r % TR) * 16 bytes, t = r / TR, in = TR or (compact) the rows of the last tile.
std::vector<uint32_t> tile_rows(const std::vector<uint32_t> &x, int rows, int words, int tr, int nch, bool compact) {
    const int ntiles = (rows + tr - 1) / tr;
    std::vector<uint32_t> img(compact ? (size_t)rows * nch * 4 : (size_t)ntiles * tr * nch * 4, 0);
    for (int r = 0; r < rows; r++) {
        const int t = r / tr, in = compact ? std::min(tr, rows - t * tr) : tr;
        for (int c = 0; c < nch; c++)
            for (int q = 0; q < 4; q++)
                if (4 * c + q < words)
                    img[((size_t)t * tr * nch + (size_t)c * in + r % tr) * 4 + q] = x[(size_t)r * words + 4 * c + q];
    }
    return img;
}

// The binary GEMMs at M rows (launch_and_check's grid_cap).
int run(const TiledEmuCase &s, int M, int grid_cap) {
    const int N = s.n, K = s.k, kwords = (K + 31) / 32;
    const int kpad = (K + s.kc * 128 - 1) / (s.kc * 128) * (s.kc * 128), nch = kpad / 128;
    const std::vector<uint32_t> a = random_rows(M, K, kpad / 32), w = random_rows(N, K, kpad / 32);
    std::vector<uint32_t> at = tile_rows(a, M, kpad / 32, s.bm, nch, s.compact),
                          wt = tile_rows(w, N, kpad / 32, s.bn, nch, s.compact);
    std::vector<int> apop(M), wpop(N), dot((size_t)M * N);
    for (int m = 0; m < M; m++) {
        apop[m] = 0;
        for (int i = 0; i < kwords; i++) apop[m] += __builtin_popcount(a[(size_t)m * (kpad / 32) + i]);
    }
    for (int n = 0; n < N; n++) {
        wpop[n] = 0;
        for (int i = 0; i < kwords; i++) wpop[n] += __builtin_popcount(w[(size_t)n * (kpad / 32) + i]);
    }
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            int x = 0;
            for (int i = 0; i < kwords; i++)
                x += __builtin_popcount(a[(size_t)m * (kpad / 32) + i] ^ w[(size_t)n * (kpad / 32) + i]);
            dot[(size_t)m * N + n] = K - 2 * x;
        }
    // Parameters: thresholds around the dots' spread, both directions (0 counts as >= 0),
    // columns 7 and 8 past INT_MAX - 2*popc(w) (the fold saturates: every dot below, or
    // every dot at most), 11 and 12 near INT_MIN; affine scale and bias.
    std::vector<uint32_t> p0(N), p1(N);
    for (int n = 0; n < N; n++) {
        if (s.epi == EPI_THRESHOLD) {
            const int t = n == 7 || n == 8     ? 2147483647 - rnd_int(0, 10)
                          : n == 11 || n == 12 ? (int)(0x80000000u + (unsigned)rnd_int(0, 10))
                                               : rnd_int(-60, 60);
            p0[n] = (uint32_t)t;
            p1[n] = (uint32_t)(n == 7 || n == 11 ? 1 : n == 8 || n == 12 ? -1 : rnd_int(-1, 1));
        } else {
            p0[n] = float_bits(rnd_float(-2.0f, 2.0f));
            p1[n] = float_bits(rnd_float(-100.0f, 100.0f));
        }
    }
    const int ldy = s.ldy ? s.ldy : s.epi == EPI_THRESHOLD ? (N + 31) / 32 : N;
    const size_t ywords = (size_t)M * ldy;
    std::vector<uint32_t> want(ywords, 0);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            const int d = dot[(size_t)m * N + n];
            if (s.epi == EPI_I32) {
                want[(size_t)m * ldy + n] = (uint32_t)d;
            } else if (s.epi == EPI_AFFINE) {
                float sc, bi;
                memcpy(&sc, &p0[n], 4);
                memcpy(&bi, &p1[n], 4);
                want[(size_t)m * ldy + n] = float_bits(fadd(fmul((float)d, sc), bi));
            } else {
                const int t = (int)p0[n], dir = (int)p1[n];
                if (dir >= 0 ? d >= t : d <= t) {
                    // row-major, or tile-major with a compact last tile (tiled_common.cu bnn_ybits_at)
                    const int wd = n / 32;
                    size_t at_w = (size_t)m * ldy + wd;
                    if (s.ytile) {
                        const int tt = m / s.ytile, in = std::min(s.ytile, M - tt * s.ytile);
                        at_w = ((size_t)tt * s.ytile * (ldy / 4) + (size_t)(wd / 4) * in + m % s.ytile) * 4 + wd % 4;
                    }
                    want[at_w] |= 1u << (n % 32);
                }
            }
        }
    if (s.epi != EPI_THRESHOLD) // int32 / f32 rows: columns past N are not written
        for (int m = 0; m < M; m++)
            for (int n = N; n < ldy; n++) want[(size_t)m * ldy + n] = POISON;

    EmuArgs args = {};
    args.X = at.data();
    args.W = wt.data();
    args.P = apop.data();
    args.R = wpop.data();
    args.ep0 = p0.data();
    args.ep1 = p1.data();
    const unsigned smem = (unsigned)bnn_bgemm_tiled_smem(s.bm, s.bn, s.kc, s.stages);
    return launch_and_check(s, M, grid_cap, args,
                            {{at.data(), at.size() * 4}, {wt.data(), wt.size() * 4}, {apop.data(), apop.size() * 4},
                             {wpop.data(), wpop.size() * 4}, {p0.data(), p0.size() * 4}, {p1.data(), p1.size() * 4}},
                            smem, want);
}

// The plane-tiled image (tile_layout.h): chunk c of plane p of row r at
// (((r / TR) * P + p) * NCH + c) * TR * 16 + (r % TR) * 16 bytes; plane p of row r is bit p of
// its codes.
std::vector<uint32_t> tile_planes(const std::vector<int> &codes, int rows, int k, int planes, int tr, int nch) {
    const int ntiles = (rows + tr - 1) / tr;
    std::vector<uint32_t> img((size_t)ntiles * planes * nch * tr * 4, 0);
    for (int r = 0; r < rows; r++)
        for (int p = 0; p < planes; p++)
            for (int i = 0; i < k; i++)
                if ((codes[(size_t)r * k + i] >> p) & 1)
                    img[((((size_t)(r / tr) * planes + p) * nch + i / 128) * tr + r % tr) * 4 + i % 128 / 32] |=
                        1u << (i % 32);
    return img;
}

// Plain planes (PT_APLAIN): X[M][XB][LDA] words, LDA = K rounded up to 128 bits, in words.
std::vector<uint32_t> plain_planes(const std::vector<int> &codes, int rows, int k, int planes) {
    const int lda = (k + 127) / 128 * 4;
    std::vector<uint32_t> x((size_t)rows * planes * lda, 0);
    for (int r = 0; r < rows; r++)
        for (int p = 0; p < planes; p++)
            for (int i = 0; i < k; i++)
                if ((codes[(size_t)r * k + i] >> p) & 1) x[((size_t)r * planes + p) * lda + i / 32] |= 1u << (i % 32);
    return x;
}

// A code epilogue's levels T[N][L] and directions dir[N] for the sums acc: unsorted with ties,
// spread over the sums' range, now and then INT_MIN or INT_MAX (a level every sum or none
// reaches, by the direction); both directions (0 counts as rising).
void random_levels(const std::vector<int> &acc, int N, int L, std::vector<int> &T, std::vector<int> &dir) {
    int lo = acc.empty() ? 0 : acc[0], hi = lo;
    for (int v : acc) lo = std::min(lo, v), hi = std::max(hi, v);
    T.assign((size_t)N * L, 0);
    dir.assign(N, 0);
    for (int n = 0; n < N; n++) {
        dir[n] = rnd_int(-1, 1);
        for (int l = 0; l < L; l++) {
            const int r = rnd_int(0, 19);
            T[(size_t)n * L + l] = l && r < 4 ? T[(size_t)n * L + l - 1]
                                   : r == 4   ? INT32_MIN
                                   : r == 5   ? INT32_MAX
                                              : rnd_int(lo, hi);
        }
    }
}

// The levels T[N][L] as the int8 kernels and PT_LFOLD read them (lower.c put_q8_dense_levels,
// the qgemm step's x0): every other channel's first made a quantizer's, evenly spaced from a
// sampled sum with a few off the line, in every third of them the top quarter never reached
// (INT32_MAX; folded, an always-reached INT32_MIN where the channel falls): the estimate's
// checked path. Then each channel's t ^ m (m = -1 where it falls) sorted, and from
// BLOB_Q8_EST_LEVELS levels on the estimates after them.
std::vector<int> folded_levels(const std::vector<int> &acc, int N, int L, std::vector<int> &T,
                               const std::vector<int> &dir) {
    std::vector<int> folded((size_t)blob_q8_levels_bytes(N, L) / 4);
    for (int n = 0; n < N; n += 2) {
        const int base = acc[(size_t)rnd_int(0, (int)acc.size() - 1)], step = rnd_int(1, 400);
        const int sign = dir[n] < 0 ? -1 : 1;
        for (int l = 0; l < L; l++)
            T[(size_t)n * L + l] = n % 3 == 0 && 4 * l >= 3 * L ? INT32_MAX
                                   : base + (l - L / 2) * step * sign + (rnd_int(0, 9) ? 0 : rnd_int(-step, step));
    }
    for (int n = 0; n < N; n++) {
        for (int l = 0; l < L; l++) folded[(size_t)n * L + l] = T[(size_t)n * L + l] ^ (dir[n] < 0 ? -1 : 0);
        std::sort(folded.begin() + (ptrdiff_t)n * L, folded.begin() + (ptrdiff_t)(n + 1) * L);
        if (L >= BLOB_Q8_EST_LEVELS)
            blob_q8_level_estimate(&folded[(size_t)n * L], L,
                                   &folded[(size_t)blob_q8_est_at(N, L) + (size_t)n * BLOB_Q8_EST_WORDS]);
    }
    return folded;
}

// bgemm_planes_tiled.cu: acc = the integer dot of the codes (weights two's complement with
// wsigned, +-1 with bipolar: bit 1 = +1), then int32 out or the next layer's codes as planes:
// count = sum_l (dir >= 0 ? acc >= T[n][l] : acc <= T[n][l]), Y[M][YB][LDY] words, LDY = N
// rounded up to 256 bits, bit n of plane b = bit b of count; with lfold (PT_LFOLD) the kernel
// reads the levels folded and sorted (folded_levels).
int run_planes(const TiledEmuCase &s, int M, int grid_cap) {
    const int N = s.n, K = s.k, L = s.levels, YB = s.yb, wbits = s.bipolar ? 1 : s.wb;
    const int kpad = (K + s.kc * 128 - 1) / (s.kc * 128) * (s.kc * 128), nch = kpad / 128;
    std::vector<int> xc((size_t)M * K), wc((size_t)N * K), apop(M, 0), acc((size_t)M * N);
    for (auto &v : xc) v = rnd_int(0, (1 << s.xb) - 1);
    for (auto &v : wc) v = rnd_int(0, (1 << wbits) - 1);
    for (int m = 0; m < M; m++)
        for (int i = 0; i < K; i++) apop[m] += xc[(size_t)m * K + i];
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            long long d = 0;
            for (int i = 0; i < K; i++) {
                const int c = wc[(size_t)n * K + i];
                const int wv = s.bipolar ? 2 * c - 1 : s.wsigned && c >= (1 << (wbits - 1)) ? c - (1 << wbits) : c;
                d += (long long)xc[(size_t)m * K + i] * wv;
            }
            acc[(size_t)m * N + n] = (int)d;
        }
    std::vector<uint32_t> at = s.aplain ? plain_planes(xc, M, K, s.xb) : tile_planes(xc, M, K, s.xb, s.bm, nch),
                          wt = tile_planes(wc, N, K, wbits, s.bn, nch);
    std::vector<int> T, dir;
    random_levels(acc, N, L, T, dir);
    const std::vector<int> folded = s.lfold ? folded_levels(acc, N, L, T, dir) : std::vector<int>();
    const int ldy = s.epi == EPI_THRESHOLD ? (N + 255) / 256 * 8 : N;
    const size_t ywords = s.epi == EPI_THRESHOLD ? (size_t)M * YB * ldy : (size_t)M * N;
    std::vector<uint32_t> want(ywords, 0);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            const int v = acc[(size_t)m * N + n];
            if (s.epi != EPI_THRESHOLD) {
                want[(size_t)m * N + n] = (uint32_t)v;
                continue;
            }
            int count = 0;
            for (int l = 0; l < L; l++) count += dir[n] >= 0 ? v >= T[(size_t)n * L + l] : v <= T[(size_t)n * L + l];
            for (int b = 0; b < YB; b++)
                if ((count >> b) & 1) want[((size_t)m * YB + b) * ldy + n / 32] |= 1u << (n % 32);
        }
    // Plain A on wgmma: the kernel takes the tensor map of X[M][XB][LDA] (box: a stage's
    // KC * 4 words of 128 rows of one plane, 128-byte swizzle), as the runtime encodes it.
    const int lda = (K + 127) / 128 * 4;
    const EmuTensorMap tmap = {at.data(),
                               {(unsigned long long)lda, (unsigned long long)s.xb, (unsigned long long)M},
                               {(unsigned long long)lda * 4, (unsigned long long)s.xb * lda * 4},
                               {(unsigned long long)s.kc * 4, 1, 128},
                               128};
    alignas(64) unsigned char tmap_bytes[128] = {0};
    memcpy(tmap_bytes, &tmap, sizeof tmap);
    EmuArgs args = {};
    args.X = s.aplain && s.wgmma ? (const unsigned *)(const void *)tmap_bytes : at.data();
    args.W = wt.data();
    args.P = apop.data();
    const std::vector<int> &tk = s.lfold ? folded : T;
    args.ep0 = tk.data();
    args.ep1 = dir.data();
    // Shared memory as the kernels compute it: stages, their mbarriers; plain A with +-1
    // weights the tile's popc(a); plain A on wgmma 1 KiB of slack to align the swizzled stages;
    // on wgmma with 1-15 levels the staged thresholds of two tiles and their four mbarriers.
    const unsigned smem = (unsigned)bnn_planes_tiled_smem(s.bm, s.bn, s.kc, s.stages, s.wgmma, s.aplain, s.bipolar,
                                                         s.epi == EPI_THRESHOLD ? L : 0);
    return launch_and_check(s, M, grid_cap, args,
                            {{at.data(), at.size() * 4}, {wt.data(), wt.size() * 4}, {apop.data(), apop.size() * 4},
                             {tk.data(), tk.size() * 4}, {dir.data(), dir.size() * 4}},
                            smem, want);
}

// int8 on wgmma (PT_S8): acc = the dot of u8 codes and s8 weights over K bytes (rows of ldy
// bytes, zero past K), A plain by tensor map, W pre-tiled as one plane of 8 ldy bits; int32
// out, or the count of the levels it reaches (the raw levels and directions as run_planes
// draws them; the kernel reads them folded and sorted, as lower.c put_code_levels writes them)
// as planes Y[M][YB][LDY words] or bytes Y[M][N rounded up to 64].
int run_s8(const TiledEmuCase &s, int M, int grid_cap) {
    const int N = s.n, K = s.k, ld = s.ldy, L = s.levels, YB = s.yb;
    const int nch = (ld + s.kc * 16 - 1) / (s.kc * 16) * s.kc;
    std::vector<uint32_t> a((size_t)M * ld / 4, 0), w((size_t)N * ld / 4, 0);
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++) ((unsigned char *)a.data())[(size_t)m * ld + k] = (unsigned char)rnd_int(0, 255);
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) ((signed char *)w.data())[(size_t)n * ld + k] = (signed char)rnd_int(-128, 127);
    std::vector<int> acc((size_t)M * N);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            int d = 0;
            for (int k = 0; k < K; k++)
                d += ((const unsigned char *)a.data())[(size_t)m * ld + k] * ((const signed char *)w.data())[(size_t)n * ld + k];
            acc[(size_t)m * N + n] = d;
        }
    const int ntn = (N + s.bn - 1) / s.bn; // W pre-tiled: chunk c of row r at ((r / BN) * NCH + c) * BN * 16 + (r % BN) * 16
    std::vector<uint32_t> wt((size_t)ntn * nch * s.bn * 4, 0);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < ld / 16; c++)
            memcpy(&wt[(((size_t)(n / s.bn) * nch + c) * s.bn + n % s.bn) * 4], &w[(size_t)n * ld / 4 + 4 * c], 16);
    std::vector<int> T, dir;
    random_levels(acc, N, L, T, dir);
    const std::vector<int> folded = folded_levels(acc, N, L, T, dir);
    const int ldyw = (N + 255) / 256 * 8, ldy8 = (N + 63) / 64 * 64;
    const size_t ywords = s.epi == 1 ? (size_t)M * N : s.yfmt ? (size_t)M * ldy8 / 4 : (size_t)M * YB * ldyw;
    std::vector<uint32_t> want(ywords, 0);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            const int v = acc[(size_t)m * N + n];
            if (s.epi == 1) {
                want[(size_t)m * N + n] = (uint32_t)v;
                continue;
            }
            int count = 0;
            for (int l = 0; l < L; l++) count += dir[n] >= 0 ? v >= T[(size_t)n * L + l] : v <= T[(size_t)n * L + l];
            if (s.yfmt)
                ((unsigned char *)want.data())[(size_t)m * ldy8 + n] = (unsigned char)count;
            else
                for (int b = 0; b < YB; b++)
                    if ((count >> b) & 1) want[((size_t)m * YB + b) * ldyw + n / 32] |= 1u << (n % 32);
        }
    const EmuTensorMap tmap = {a.data(),
                               {(unsigned long long)ld / 4, 1, (unsigned long long)M},
                               {(unsigned long long)ld, (unsigned long long)ld},
                               {(unsigned long long)s.kc * 4, 1, 128},
                               128};
    alignas(64) unsigned char tmap_bytes[128] = {0};
    memcpy(tmap_bytes, &tmap, sizeof tmap);
    EmuArgs args = {};
    args.X = (const unsigned *)(const void *)tmap_bytes;
    args.W = wt.data();
    args.ep0 = folded.data();
    args.ep1 = dir.data();
    const unsigned smem = (unsigned)bnn_planes_tiled_smem(s.bm, s.bn, s.kc, s.stages, 1, 1, 0, 0);
    return launch_and_check(s, M, grid_cap, args,
                            {{a.data(), a.size() * 4}, {wt.data(), wt.size() * 4}, {folded.data(), folded.size() * 4},
                             {dir.data(), dir.size() * 4}},
                            smem, want);
}

// The int8 convolution on wgmma (PT_CONV) over `images` images: the bytes image random in
// every byte (past the channels too: their weights are zero), s8 weights [N][LD] (tap t's
// channel c at byte t * CB + c, zero past the channels and the taps) pre-tiled as run_s8's,
// acc = the sum over the taps of code x weight, a tap outside the image reading the pad code in
// its channels; int32 NCHW per image, or the count of the folded levels it reaches as image
// planes: per image YB planes of yplane words, [OH OW][LDYW], bit n % 32 of word n / 32.
int run_s8conv(const TiledEmuCase &s, int images, int grid_cap) {
    const TiledEmuConv &g = *s.conv;
    const int N = s.n, ld = s.ldy, L = s.levels, YB = s.yb, cells = g.oh * g.ow, M = images * cells;
    const int nch = ld / 16, taps = g.kh * g.kw, pix = g.ih * g.iw;
    std::vector<uint32_t> a((size_t)images * pix * g.cb / 4 + 4), w((size_t)N * ld / 4, 0);
    for (auto &v : a) v = (uint32_t)rnd();
    unsigned char *ab = (unsigned char *)a.data();
    signed char *wb = (signed char *)w.data();
    for (int n = 0; n < N; n++)
        for (int t = 0; t < taps; t++)
            for (int c = 0; c < g.ic; c++) wb[(size_t)n * ld + t * g.cb + c] = (signed char)rnd_int(-128, 127);
    std::vector<int> acc((size_t)M * N);
    for (int m = 0; m < M; m++) {
        const int image = m / cells, oy = m % cells / g.ow, ox = m % cells % g.ow;
        for (int n = 0; n < N; n++) {
            int d = 0;
            for (int t = 0; t < taps; t++) {
                const int iy = oy * g.sh - g.padt + t / g.kw * g.dh, ix = ox * g.sw - g.padl + t % g.kw * g.dw;
                const bool in = iy >= 0 && iy < g.ih && ix >= 0 && ix < g.iw;
                for (int c = 0; c < g.ic; c++) {
                    const int x = in ? ab[((size_t)image * pix + (size_t)iy * g.iw + ix) * g.cb + c] : g.padc;
                    d += x * wb[(size_t)n * ld + t * g.cb + c];
                }
            }
            acc[(size_t)m * N + n] = d;
        }
    }
    const int ntn = (N + s.bn - 1) / s.bn;
    std::vector<uint32_t> wt((size_t)ntn * nch * s.bn * 4, 0);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < nch; c++)
            memcpy(&wt[(((size_t)(n / s.bn) * nch + c) * s.bn + n % s.bn) * 4], &w[(size_t)n * ld / 4 + 4 * c], 16);
    std::vector<int> T, dir;
    random_levels(acc, N, L, T, dir);
    const std::vector<int> folded = folded_levels(acc, N, L, T, dir);
    const size_t ywords = s.epi == 1 ? (size_t)M * N : (size_t)images * YB * g.yplane;
    std::vector<uint32_t> want(ywords, 0);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            const int v = acc[(size_t)m * N + n], image = m / cells, cell = m % cells;
            if (s.epi == 1) {
                want[((size_t)image * N + n) * cells + cell] = (uint32_t)v;
                continue;
            }
            int count = 0;
            for (int l = 0; l < L; l++) count += dir[n] >= 0 ? v >= T[(size_t)n * L + l] : v <= T[(size_t)n * L + l];
            for (int b = 0; b < YB; b++)
                if ((count >> b) & 1)
                    want[((size_t)image * YB + b) * g.yplane + (size_t)cell * g.ldyw + n / 32] |= 1u << (n % 32);
        }
    EmuArgs args = {};
    args.X = a.data();
    args.W = wt.data();
    args.ep0 = folded.data();
    args.ep1 = dir.data();
    const unsigned smem = (unsigned)bnn_qconv_wgmma_smem(s.stages, s.epi == 2 ? L : 0);
    return launch_and_check(s, M, grid_cap, args,
                            {{a.data(), a.size() * 4}, {wt.data(), wt.size() * 4}, {folded.data(), folded.size() * 4},
                             {dir.data(), dir.size() * 4}},
                            smem, want);
}

} // namespace

int main(int argc, char **argv) {
    rng_state = 12345;
    const bool sanitized = argc > 1 && !strcmp(argv[1], "--sanitized");
    int failed = 0, runs = 0;
    for (const TiledEmuCase &s : tiled_emu_cases()) {
        // M: a partial last row tile on two blocks (each walks several tiles), then one row on
        // one block more than tiles (the compact tile of one row; a block with no tile).
        if (s.conv) { // three images on two and on three blocks (the column tiles alternate on a
                      // block: staged levels change), then one on more blocks than tiles
            failed += run_s8conv(s, 3, 2) + run_s8conv(s, 8, 3);
            runs += 2;
            if (!sanitized) {
                failed += run_s8conv(s, 1, 0);
                runs++;
            }
            continue;
        }
        const int m0 = s.m_const ? s.m_const : 300;
        failed += s.s8 ? run_s8(s, m0, 2) : s.planes ? run_planes(s, m0, 2) : run(s, m0, 2);
        runs++;
        if (!sanitized && !s.m_const) {
            failed += s.s8 ? run_s8(s, 1, 0) : s.planes ? run_planes(s, 1, 0) : run(s, 1, 0);
            runs++;
        }
    }
    printf("test_tiled_emu: %d of %d runs failed\n", failed, runs);
    return failed != 0;
}
