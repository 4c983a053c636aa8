// rcode_emu.cc: the halo qconv with thresholds by a residual code (qconv.cu QC_HALO 1, QC_EPI 2
// with QC_RCODE > 0; lower.c lower_qconv_rcode) run without a GPU, driven by rcode_emu.py.
// kernels.inc (written by the script) holds, for each such kernel step of bnncc's blobs, its
// #define block as --emit=cuda prints it followed by qconv.cu, so the kernel is compiled as host
// C++ under tests/codegen/bconv_emu.h's block emulator (a fiber per CUDA thread, warp collectives
// that check every lane reaches the same one, an emulated m16n8k256 AND-popc MMA and ldmatrix,
// shared memory filled with garbage and guarded), and a launcher; then the table
// emu_kernels[] (emu_driver.h: the manifest, files, guards). qconv.cu's shared-memory
// operations (bnn_qh_*) are the emulator's, with cp.async of 4, 8 and 16 bytes queued per
// thread below: in blocks with an even blockIdx.x + blockIdx.y a copy lands only at the
// cp.async.wait_group that covers it (a read before the wait sees the old bytes), in the others
// at once (a copy into a buffer other lanes still read shows); every source must lie in one of
// the launch's input buffers. The kernel's static __shared__ levels (thr) are one array for all
// the threads of a block, as on the GPU.
//     rcode_emu MANIFEST
// runs the launches MANIFEST lists, one a line:
//     LABEL KERNEL GX GY THREADS SMEM M YWORDS YNWORDS X W T R RN YOUT YNOUT
// the kernel's arguments (X, W, M, T, R, RN, Y, YN) read from the files named (each its own
// allocation of the file's size; RN "-" for a null pointer, QC_RNAN 0), Y (YWORDS words) and YN
// (YNWORDS words; YNOUT "-" for a null pointer, QC_YNAN 0) filled with POISON and followed by a
// guard, and writes Y and YN to YOUT and YNOUT for the script to compare. Prints a FAIL line
// (and exits 1 at the end) where a block changed the shared memory past the launch's or a
// guard changed; the emulator aborts on a misaligned or out-of-bounds shared access or
// cp.async source and on lanes of a warp that diverge into different collectives.
#include <cstdint>
#include <cstring>
#include <vector>

#include "bconv_emu.h"
#include "emu_driver.h"

// ---------------------------------------------------------------- qconv.cu's device helpers
#undef __shared__
#define __shared__ static // a block's static shared memory: one array for all its fibers
#define BNN_QCONV_ONCE     // (qconv.cu's own helpers are PTX)
#define BNN_QC_LINKAGE static
#define BNN_QC_FN static inline
#define BNN_QC_DSMEM(name) unsigned char *name = bnn_dsmem
#define BNN_QC_ALIGN16 __attribute__((aligned(16)))
#define BNN_QC_UNROLL
#define bnn_qh_smem(p) emu_smem(p)
#define bnn_qh_smem_size() emu_dyn_smem_size()
#define bnn_qh_commit() emu_cp_commit()
#define bnn_qh_wait1() qc_wait(1)
#define bnn_qh_wait2() qc_wait(2)
#define bnn_qh_st16(d, x, y, z, w) emu_st16(d, x, y, z, w)

inline void bnn_qc_mma(int *d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
    const unsigned a[4] = {a0, a1, a2, a3};
    emu_bmma(*reinterpret_cast<int(*)[4]>(d), a, b0, b1);
}
inline void bnn_qh_st8(unsigned a, unsigned x, unsigned y) {
    const unsigned v[2] = {x, y};
    memcpy(emu_at(a, 8, 8), v, 8);
}
inline void bnn_qh_ld16(unsigned a, unsigned *v) { memcpy(v, emu_at(a, 16, 16), 16); }
inline void bnn_qh_ldsm4(unsigned a, unsigned *r) { emu_ldsm4(a, r[0], r[1], r[2], r[3]); }

// A cp.async of size bytes (4, 8 or 16) to shared dst; src_bytes 0 writes zeros, reads nothing.
struct QcCopy {
    unsigned dst, size, src_bytes;
    const void *src;
    int group;
};
inline std::vector<QcCopy> qc_queue[EMU_MAXW * 32]; // each thread's copies in flight

inline void qc_land(const QcCopy &c) {
    unsigned char *d = emu_at(c.dst, c.size, c.size);
    memset(d, 0, c.size);
    if (c.src_bytes) memcpy(d, c.src, c.size);
}
inline void bnn_qh_cp(unsigned dst, const void *src, int size, unsigned src_bytes) {
    if (size != 4 && size != 8 && size != 16) emu_fail("cp.async size", (unsigned long long)size);
    if (src_bytes != 0 && src_bytes != (unsigned)size) emu_fail("cp.async src_bytes", src_bytes);
    emu_at(dst, (unsigned)size, (unsigned)size);
    if (src_bytes) {
        if ((uintptr_t)src % (unsigned)size) emu_fail("misaligned cp.async source", (uintptr_t)src % 16);
        emu_check_source(src, (size_t)size, "cp.async source outside the kernel's input buffers");
    }
    const QcCopy c = {dst, (unsigned)size, src_bytes, src, emu_lane->groups};
    if (emu_land_early) {
        qc_land(c);
        return;
    }
    std::vector<QcCopy> &q = qc_queue[threadIdx.x];
    if (q.size() >= EMU_MAXCP) emu_fail("too many cp.async in flight", EMU_MAXCP);
    q.push_back(c);
}
// cp.async.wait_group n: the copies of all but the n most recent committed groups land.
inline void qc_wait(int n) {
    std::vector<QcCopy> &q = qc_queue[threadIdx.x];
    size_t k = 0;
    for (size_t i = 0; i < q.size(); i++)
        if (q[i].group < emu_lane->groups - n)
            qc_land(q[i]);
        else
            q[k++] = q[i];
    q.resize(k);
    emu_cp_wait_n(n); // (none of bconv_emu.h's 16-byte queue: the kernel issues only bnn_qh_cp)
}
// At the end of each block (the launcher after the kernel returns): what the thread left in flight.
inline void qc_drain() { qc_wait(0); }

// The launch's arguments in EmuArgs: X, W, P = T, ep0 = R, ep1 = RN, Y, Yb = YN, nb = M.
#include "kernels.inc" // the kernels and emu_kernels[]

int main(int argc, char **argv) {
    FILE *m = emu_manifest(argc, argv, "rcode_emu");
    char label[256], kernel[128], px[1024], pw[1024], pt[1024], pr[1024], pn[1024], py[1024], pyn[1024];
    unsigned gx, gy, threads, smem;
    int rows;
    size_t ywords, ynwords;
    int failed = 0;
    while (fscanf(m, "%255s %127s %u %u %u %u %d %zu %zu %1023s %1023s %1023s %1023s %1023s %1023s %1023s", label,
                  kernel, &gx, &gy, &threads, &smem, &rows, &ywords, &ynwords, px, pw, pt, pr, pn, py, pyn) == 16) {
        const EmuCall call = emu_kernel(emu_kernels, kernel);
        const bool ynan = strcmp(pyn, "-") != 0;
        const EmuFile X(px), W(pw), T(pt), R(pr), RN(pn); // RN "-": none
        EmuGuarded y(ywords), yn(ynan ? ynwords : 0);
        EmuArgs a = emu_args(X, W, T, R, RN, rows);
        a.Y = y.data();
        a.Yb = ynan ? yn.data() : nullptr;
        emu_sources({&X, &W, &R, &RN});
        emu_what = label;
        const unsigned long long overrun = emu_launch(call, a, gx, gy, threads, smem);
        const size_t gy_changed = y.guard_changed(), gyn_changed = yn.guard_changed();
        if (overrun || gy_changed || gyn_changed) {
            printf("FAIL: %s: %llu bytes of shared memory past the launch's changed, %zu words past Y and %zu past YN "
                   "written\n",
                   label, overrun, gy_changed, gyn_changed);
            failed = 1;
        }
        y.store(py);
        if (ynan) yn.store(pyn);
    }
    fclose(m);
    return failed;
}
