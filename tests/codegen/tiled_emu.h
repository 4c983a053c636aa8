// tiled_emu.h: the block emulator of bconv_emu.h extended to the pre-tiled bit-GEMM kernels
// (bgemm_tiled.cu, mma.sync; bgemm_wgmma.cu, wgmma), to run them as host C++ without a GPU
// (test_tiled_emu). What they need beyond bconv_emu.h, supplied here under the names the
// kernels call (tiled_common.cu leaves out its own PTX wrappers when BNN_TILED_PTX_EMULATED is
// defined; bgemm_wgmma.cu leaves out its wgmma wrappers when BNN_BGEMM_WGMMA_ONCE is):
// - mbarriers, kept beside shared memory by address: init, arrive, arrive.expect_tx, the
//   transaction bytes of bulk copies, try_wait.parity (the phase of that parity completed);
//   arrivals past the count, bytes past the expected and a wait no thread can end (a deadlock,
//   tests/emu/emu_fiber.h) fail the run;
// - cp.async.bulk global -> shared: copied at issue (sources inside the launch's registered
//   buffers, 16-byte sizes and alignment), then its bytes complete on the mbarrier;
// - named barriers (bar.sync id, count) among `count` threads;
// - 4-byte cp.async: lands at issue (zeros for src_bytes 0);
// - wgmma m64n256k256 .and.popc and m64n256k32 .u8.s8 from shared memory through the two
//   matrix descriptors (no swizzle, K-major: row r's 16-byte chunk h at start + (r / 8) * SBO + h * LBO + (r % 8) * 16),
//   each thread computing its own accumulator fragment at issue (the m16n8 layout of its warp's
//   16 rows, HARDWARE.md), no swizzle or the 128-byte one; fence, commit, wait and setmaxnreg
//   do nothing. Clusters are not emulated (a call fails);
// - tensor-map copies (cp.async.bulk.tensor.3d) from the emulator's own EmuTensorMap
//   (tiled_emu_cases.h) in the map's bytes, zeros past the tensor, the 128-byte swizzle.
#ifndef BNN_TILED_EMU_H
#define BNN_TILED_EMU_H
#include "common_emu.h"
#include "tiled_emu_cases.h"

struct alignas(16) int4 {
    int x, y, z, w;
};
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }

// ---------------------------------------------------------------- mbarriers and named barriers
struct EmuMbar {
    unsigned count, pending; // arrivals a phase, still to come in this one
    unsigned long long tx;   // bulk-copy bytes still to come in this phase
    unsigned phase;          // phases completed
    bool live;
};
inline EmuMbar emu_mbar[EMU_DSMEM / 8];
inline EmuFiberBarrier emu_nbar[16]; // named barriers: the count their first arrival gives

// Before a launch: no barrier is live.
inline void emu_sync_reset() {
    memset(emu_mbar, 0, sizeof emu_mbar);
    memset(emu_nbar, 0, sizeof emu_nbar);
}
inline EmuMbar &emu_mbar_at(unsigned bar) {
    emu_at(bar, 8, 8);
    return emu_mbar[bar / 8];
}
// Completes the phase once its arrivals and bytes are in.
inline void emu_mbar_settle(EmuMbar &m) {
    if (m.pending == 0 && m.tx == 0) {
        m.phase++;
        m.pending = m.count;
    }
}
inline void emu_mbar_arrive_on(EmuMbar &m, unsigned bar) {
    if (!m.live) emu_fail("arrival on an mbarrier never initialized", bar);
    if (m.pending == 0) emu_fail("more arrivals on an mbarrier than its count", bar);
    m.pending--;
    emu_mbar_settle(m);
}
inline void bnn_mbar_init(unsigned bar, unsigned count) {
    EmuMbar &m = emu_mbar_at(bar);
    if (count == 0) emu_fail("mbarrier count 0", bar);
    m = EmuMbar{count, count, 0, 0, true};
}
inline void bnn_mbar_init_fence() {}
inline void bnn_mbar_arrive(unsigned bar) { emu_mbar_arrive_on(emu_mbar_at(bar), bar); }
inline void bnn_fence_proxy_async() {} // the emulator has one proxy
inline void bnn_mbar_expect_tx(unsigned bar, unsigned bytes) {
    EmuMbar &m = emu_mbar_at(bar);
    m.tx += bytes;
    emu_mbar_arrive_on(m, bar);
}
inline void emu_mbar_complete_tx(unsigned bar, unsigned bytes) {
    EmuMbar &m = emu_mbar_at(bar);
    if (!m.live || m.tx < bytes) emu_fail("bulk-copy bytes an mbarrier did not expect", bar);
    m.tx -= bytes;
    emu_mbar_settle(m);
}
// try_wait.parity in a loop: returns once the phase of that parity has completed; the fibers
// abort the run if no thread can complete it (a deadlock).
struct EmuMbarWait {
    const EmuMbar *m;
    unsigned parity;
};
inline int emu_mbar_passed(const void *arg) {
    const EmuMbarWait *w = (const EmuMbarWait *)arg;
    return (w->m->phase & 1u) != (w->parity & 1u);
}
inline void bnn_mbar_wait(unsigned bar, unsigned parity) {
    EmuMbar &m = emu_mbar_at(bar);
    if (!m.live) emu_fail("wait on an mbarrier never initialized", bar);
    const EmuMbarWait w = {&m, parity};
    emu_fiber_wait_until(emu_mbar_passed, &w, "an mbarrier wait");
}
// bar.sync id, count: the count-th arrival at barrier id releases the others.
inline void bnn_bar_sync(int id, int count) {
    if (id < 0 || id > 15 || count <= 0 || count % 32) emu_fail("named barrier id or count", (unsigned long long)id);
    EmuFiberBarrier &b = emu_nbar[id];
    if (b.arrived == 0) b.count = (unsigned)count;
    if (b.count != (unsigned)count) emu_fail("named barrier reached with different counts", (unsigned long long)count);
    emu_fiber_barrier_wait(&b);
}

// ---------------------------------------------------------------- copies
inline void bnn_bulk_g2s(unsigned dst, const void *src, unsigned bytes, unsigned bar) {
    if (bytes == 0 || bytes % 16 || (uintptr_t)src % 16) emu_fail("bulk copy size or source alignment", bytes);
    emu_check_source(src, bytes, "bulk copy source outside the kernel's input buffers");
    memcpy(emu_at(dst, bytes, 16), src, bytes);
    emu_mbar_complete_tx(bar, bytes);
}
// cp.async.bulk.tensor.3d: the box at (c0, c1, c2) of the tensor map (an EmuTensorMap in the
// 128 bytes), elements past the tensor zero, rows of box[0] elements written one after another
// (box[1] = 1 here), with the 128-byte swizzle the 16-byte chunk j of a 128-byte row stored at
// j ^ (address bits 7-9), as the hardware does on the absolute address.
#define __grid_constant__
struct BnnTensorMap;
inline void bnn_tma_load_3d(unsigned dst, const BnnTensorMap *tmap, int c0, int c1, int c2, unsigned bar) {
    EmuTensorMap tm;
    memcpy(&tm, (const void *)tmap, sizeof tm);
    const unsigned row = (unsigned)tm.box[0] * 4, bytes = row * (unsigned)(tm.box[1] * tm.box[2]);
    if (tm.box[1] != 1 || (tm.swizzle && (row != 128 || dst % 1024))) emu_fail("tensor map box or swizzle", row);
    unsigned char *d = emu_at(dst, bytes, 16);
    for (unsigned long long i2 = 0; i2 < tm.box[2]; i2++)
        for (unsigned long long i0 = 0; i0 < tm.box[0]; i0++) {
            const unsigned long long x0 = c0 + i0, x1 = (unsigned long long)c1, x2 = c2 + i2;
            uint32_t v = 0;
            if (c0 >= 0 && c1 >= 0 && c2 >= 0 && x0 < tm.dims[0] && x1 < tm.dims[1] && x2 < tm.dims[2]) {
                const unsigned char *src =
                    (const unsigned char *)tm.base + x2 * tm.strides[1] + x1 * tm.strides[0] + x0 * 4;
                emu_check_source(src, 4, "tensor map element outside the kernel's input buffers");
                memcpy(&v, src, 4);
            }
            unsigned off = (unsigned)(i2 * row + i0 * 4);
            if (tm.swizzle) off ^= ((dst + off) >> 7 & 7) << 4;
            memcpy(d + off, &v, 4);
        }
    emu_mbar_complete_tx(bar, bytes);
}
inline void bnn_cp4(unsigned dst, const void *src, unsigned src_bytes) {
    unsigned char *d = emu_at(dst, 4, 4);
    if (src_bytes == 0) {
        memset(d, 0, 4);
        return;
    }
    if (src_bytes != 4 || (uintptr_t)src % 4) emu_fail("4-byte cp.async size or source alignment", src_bytes);
    emu_check_source(src, 4, "cp.async source outside the kernel's input buffers");
    memcpy(d, src, 4);
}

// ---------------------------------------------------------------- wgmma (bgemm_wgmma.cu's wrappers)
// The file's own bnn_wg_desc (outside its wrappers) encodes the descriptors decoded here; the
// includer includes bgemm_wgmma.cu before bgemm_planes_tiled.cu, which then uses it.
#define BNN_BGEMM_WGMMA_ONCE
inline void bnn_wg_fence() {}
inline void bnn_wg_commit() {}
template <int N> inline void bnn_wg_wait() {}
// The 8 words of row r (a 256-bit K step) of the operand that descriptor desc describes: no
// swizzle, row r's 16-byte chunk h at start + (r / 8) * SBO + h * LBO + (r % 8) * 16; with the
// 128-byte swizzle (mode 1 in bits 62-63) rows of 128 bytes, chunk h at start + (r / 8) * SBO +
// (r % 8) * 128 + 16h before the swizzle of its address (bits 4-6 ^= bits 7-9).
inline void emu_desc_row(unsigned long long desc, int r, unsigned (&v)[8]) {
    const unsigned start = (unsigned)(desc & 0x3FFF) << 4, lbo = (unsigned)((desc >> 16) & 0x3FFF) << 4,
                   sbo = (unsigned)((desc >> 32) & 0x3FFF) << 4, mode = (unsigned)(desc >> 62);
    if (mode > 1) emu_fail("descriptor layout other than none or 128-byte swizzle", mode);
    for (int h = 0; h < 2; h++) {
        unsigned a = mode ? start + (unsigned)(r / 8) * sbo + (unsigned)(r % 8) * 128 + 16u * h
                          : start + (unsigned)(r / 8) * sbo + (unsigned)h * lbo + (unsigned)(r % 8) * 16;
        if (mode) a ^= (a >> 7 & 7) << 4;
        memcpy(&v[4 * h], emu_at(a, 16, 16), 16);
    }
}
// One m64n256 wgmma step of 32 bytes a row: this thread's fragment (rows 16 * (warp % 4) + g
// + 8h, columns 8j + 2t + e, lane = 4g + t), each accumulator as step(d, its A row's 8 words,
// its B row's 8 words).
template <class Step>
inline void emu_wgmma_n256(int (&d)[1][32][4], unsigned long long da, unsigned long long db, Step step) {
    const int lane = (int)(threadIdx.x % 32), wi = (int)(threadIdx.x / 32) % 4, g = lane >> 2, t = lane & 3;
    unsigned a[2][8];
    for (int h = 0; h < 2; h++) emu_desc_row(da, 16 * wi + g + 8 * h, a[h]);
    for (int j = 0; j < 32; j++)
        for (int e = 0; e < 2; e++) {
            unsigned b[8];
            emu_desc_row(db, 8 * j + 2 * t + e, b);
            for (int h = 0; h < 2; h++) step(d[0][j][2 * h + e], a[h], b);
        }
}
// D(64 x 256) += popc(A(64 x 256 bits) AND B(256 x 256 bits)).
inline void bnn_wgmma_n256(int (&d)[1][32][4], unsigned long long da, unsigned long long db) {
    emu_wgmma_n256(d, da, db, [](int &acc, const unsigned(&a)[8], const unsigned(&b)[8]) {
        for (int w = 0; w < 8; w++) acc += __builtin_popcount(a[w] & b[w]);
    });
}
// D(64 x 256) += A(64 x 32 u8) * B(32 x 256 s8): the same rows of 32 bytes, byte i of a row
// (little-endian words) its k = i (wrapping as the int32 accumulators do).
inline void bnn_wgmma_s8_n256(int (&d)[1][32][4], unsigned long long da, unsigned long long db) {
    emu_wgmma_n256(d, da, db, [](int &acc, const unsigned(&a)[8], const unsigned(&b)[8]) {
        unsigned sum = (unsigned)acc;
        for (int i = 0; i < 32; i++)
            sum += (a[i / 4] >> 8 * (i % 4) & 255u) * (unsigned)(int)(signed char)(b[i / 4] >> 8 * (i % 4));
        acc = (int)sum;
    });
}
inline void bnn_wg_fence_acc(int (&)[1][32][4]) {}
template <int R> inline void bnn_setmaxnreg_dec() {}
template <int R> inline void bnn_setmaxnreg_inc() {}
inline unsigned bnn_cluster_rank() { emu_fail("clusters are not emulated", 0); }
inline void bnn_cluster_sync() { emu_fail("clusters are not emulated", 0); }
inline unsigned bnn_mapa(unsigned, unsigned) { emu_fail("clusters are not emulated", 0); }
inline void bnn_mbar_arrive_cluster(unsigned) { emu_fail("clusters are not emulated", 0); }
inline void bnn_bulk_g2s_multicast(unsigned, const void *, unsigned, unsigned, unsigned short) {
    emu_fail("clusters are not emulated", 0);
}

#endif
