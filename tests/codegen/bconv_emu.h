// bconv_emu.h: a block emulator to run bconv.cu's halo-tile kernel (BC_HALO 1) as host C++
// without a GPU (test_bconv_emu). Each CUDA thread of a block is a fiber (tests/emu/emu_fiber.h);
// the blocks of a launch run one after another on the same fibers. What the kernel needs of CUDA:
// - the keywords defined away, the built-ins it calls (__popc, __funnelshift_l, __ldg, __fmul_rn
//   / __fadd_rn / __fdiv_rn / __fmaf_rn rounded on their own through volatile, int2 / float2 / float4 with the GPU's 8- and 16-byte
//   alignment, so UBSan checks the kernel's vector stores);
// - the PTX helpers of common.cu (bnn_cp16, bnn_ldsm4, bnn_bmma ...) as the emu_ functions
//   below: bconv_emu_kernels.cc renames common.cu's own while including it (their asm is then
//   never used) and maps the names to these, so common.cu and bconv.cu stay as NVRTC sees them.
// - Warp collectives (ldmatrix, mma.sync, shuffles, ballots) publish each lane's operands in a slot of
//   its warp and wait at the warp's barrier; slots alternate between two sets, so one barrier
//   per collective suffices: a set is written again only after the next collective's barrier,
//   which every lane reaches after reading it. Each slot carries the collective's kind, so
//   lanes of a warp that diverge into different collectives are reported.
// - mma.sync m16n8k256 .and.popc from the lanes' fragments in the register layout HARDWARE.md
//   verified (tests/lowbit/warp_emu.h has the same); ldmatrix .x4: register j of lane l = word
//   l%4 of the row that lane 8j + l/4 addressed.
// - cp.async copies are queued per thread and land at the cp.async.wait_group that covers
//   them, in blocks with an even blockIdx.x + blockIdx.y (a read before the wait sees the old
//   bytes), or at once in the others (a copy into a buffer other lanes still read shows).
//   Sources must lie inside the buffers the launch registers (emu_global), 16-byte aligned.
// - Shared addresses are offsets into bnn_dsmem (defined once by the test), checked for bounds
//   (the launch's dynamic shared memory) and alignment. Before each block the launch's shared
//   memory and a 4 KiB guard after it are filled with a garbage pattern of the block; after it
//   the guard must be unchanged (the kernel also writes through plain pointers).
#ifndef BNN_BCONV_EMU_H
#define BNN_BCONV_EMU_H
#include <math.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "emu_fiber.h"

enum { EMU_MAXW = 16, EMU_DSMEM = 232448, EMU_MAXCP = 4096 };

extern "C" {
extern unsigned char bnn_dsmem[]; // EMU_DSMEM bytes, 128-aligned: the running block's shared memory
}

struct EmuDim {
    unsigned x, y, z;
};
inline EmuDim threadIdx, blockIdx, gridDim, blockDim; // threadIdx: the running fiber's
inline const char *emu_what = "";         // the running case, for emu_fail
inline unsigned emu_smem_size;            // the launch's dynamic shared memory
inline bool emu_land_early;               // this block's copies land at issue
inline const void *emu_global_base[8];    // the buffers cp.async may read
inline size_t emu_global_bytes[8];
inline int emu_nglobal;

[[noreturn]] inline void emu_fail(const char *what, unsigned long long v) {
    fprintf(stderr, "bconv_emu: %s: %s (%llu), thread %u of block (%u, %u)\n", emu_what, what, v, threadIdx.x,
            blockIdx.x, blockIdx.y);
    abort();
}

// ---------------------------------------------------------------- CUDA keywords and built-ins
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n)
#define __shared__
#define __trap() emu_fail("__trap", (unsigned long long)__LINE__)

struct alignas(8) int2 {
    int x, y;
};
struct alignas(8) float2 {
    float x, y;
};
struct alignas(16) float4 {
    float x, y, z, w;
};
inline int2 make_int2(int x, int y) { return int2{x, y}; }
inline float2 make_float2(float x, float y) { return float2{x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
struct alignas(8) uint2 {
    unsigned x, y;
};
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};
inline uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) { // s in 0..31 here
    return s ? hi << s | lo >> (32 - s) : hi;
}
template <class T> inline T __ldg(const T *p) { return *p; }
inline float __int_as_float(int v) {
    float f;
    memcpy(&f, &v, 4);
    return f;
}
inline int __float_as_int(float f) {
    int v;
    memcpy(&v, &f, 4);
    return v;
}
// volatile: one rounding per operation, never contracted into a fused multiply-add
inline float __fmul_rn(float a, float b) {
    volatile float r = a * b;
    return r;
}
inline float __fadd_rn(float a, float b) {
    volatile float r = a + b;
    return r;
}
inline float __fdiv_rn(float a, float b) {
    volatile float r = a / b;
    return r;
}
inline float __fmaf_rn(float a, float b, float c) { // one rounding: C's fmaf
    volatile float r = fmaf(a, b, c);
    return r;
}
inline float __frcp_rn(float a) { return __fdiv_rn(1.0f, a); }
inline size_t __cvta_generic_to_shared(const void *p) { return (size_t)p; } // only in the renamed bnn_smem

// ---------------------------------------------------------------- warps and barriers
struct EmuWarp {
    EmuFiberBarrier bar;
    unsigned slot[2][32][8]; // [set][lane]: word 0 the collective's kind, then its operands
};
inline EmuWarp emu_warp[EMU_MAXW];
inline EmuFiberBarrier emu_block_bar;

// A thread's own state: the slot set of its next collective, its queued copies (EmuCopy below).
struct EmuCopy {
    unsigned dst, src_bytes;
    const void *src;
    int group;
};
struct EmuLane {
    int set, ncp, groups;
    EmuCopy cp[EMU_MAXCP];
};
inline EmuLane *emu_lanes, *emu_lane; // every thread's; the running one's

inline void __syncwarp(unsigned = 0xffffffffu) { emu_fiber_barrier_wait(&emu_warp[threadIdx.x / 32].bar); }
inline void __syncthreads() { emu_fiber_barrier_wait(&emu_block_bar); }

enum { EMU_LDSM = 1, EMU_MMA, EMU_SHFL, EMU_VOTE };
// Publishes this lane's n operand words for a collective of kind `kind` and returns the warp's
// slots once every lane has published its own.
inline const unsigned (*emu_exchange(unsigned kind, const unsigned *v, int n))[8] {
    EmuWarp &w = emu_warp[threadIdx.x / 32];
    unsigned(*s)[8] = w.slot[emu_lane->set];
    emu_lane->set ^= 1;
    s[threadIdx.x % 32][0] = kind;
    memcpy(&s[threadIdx.x % 32][1], v, 4 * (size_t)n);
    emu_fiber_barrier_wait(&w.bar);
    for (int l = 0; l < 32; l++)
        if (s[l][0] != kind) emu_fail("the lanes of a warp reached different collectives", (unsigned long long)l);
    return s;
}

template <class T> inline T __shfl_xor_sync(unsigned, T v, int lane_mask) {
    static_assert(sizeof(T) == 4, "32-bit shuffles only");
    unsigned u;
    memcpy(&u, &v, 4);
    const unsigned(*s)[8] = emu_exchange(EMU_SHFL, &u, 1);
    memcpy(&v, &s[(threadIdx.x % 32) ^ (unsigned)lane_mask][1], 4);
    return v;
}

template <class T> inline T __shfl_sync(unsigned, T v, int src_lane) {
    static_assert(sizeof(T) == 4, "32-bit shuffles only");
    unsigned u;
    memcpy(&u, &v, 4);
    const unsigned(*s)[8] = emu_exchange(EMU_SHFL, &u, 1);
    memcpy(&v, &s[(unsigned)src_lane % 32][1], 4);
    return v;
}

// Bit l: lane l's predicate (every lane of the warp takes part, as in the kernels).
inline unsigned __ballot_sync(unsigned, int pred) {
    const unsigned u = pred != 0;
    const unsigned(*s)[8] = emu_exchange(EMU_VOTE, &u, 1);
    unsigned r = 0;
    for (int l = 0; l < 32; l++) r |= s[l][1] << l;
    return r;
}

// ---------------------------------------------------------------- shared memory, PTX helpers
inline unsigned char *emu_at(unsigned a, unsigned bytes, unsigned align) {
    if (a % align) emu_fail("misaligned shared address", a);
    if ((unsigned long long)a + bytes > emu_smem_size)
        emu_fail("shared address past the launch's dynamic shared memory", a);
    return bnn_dsmem + a;
}
inline unsigned emu_smem(const void *p) {
    const ptrdiff_t d = (const unsigned char *)p - bnn_dsmem;
    if (d < 0 || d > EMU_DSMEM) emu_fail("bnn_smem of a pointer outside shared memory", (unsigned long long)d);
    return (unsigned)d;
}
inline unsigned emu_dyn_smem_size() { return emu_smem_size; }
inline void emu_or_if(unsigned &w, unsigned m, bool p) {
    if (p) w |= m;
}
inline void emu_st16(unsigned dst, unsigned x, unsigned y, unsigned z, unsigned w) {
    const unsigned v[4] = {x, y, z, w};
    memcpy(emu_at(dst, 16, 16), v, 16);
}
inline void emu_ld16(unsigned src, unsigned (&v)[4]) { memcpy(v, emu_at(src, 16, 16), 16); }

// ldmatrix.sync.aligned.m8n8.x4.shared.b16: lanes 8j..8j+7 address the 8 rows of matrix j.
inline void emu_ldsm4(unsigned a, unsigned &r0, unsigned &r1, unsigned &r2, unsigned &r3) {
    emu_at(a, 16, 16);
    const unsigned(*s)[8] = emu_exchange(EMU_LDSM, &a, 1);
    const unsigned l = threadIdx.x % 32;
    unsigned r[4];
    for (int j = 0; j < 4; j++) memcpy(&r[j], emu_at(s[8 * j + l / 4][1], 16, 16) + 4 * (l % 4), 4);
    r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
}

// mma.sync m16n8k256 .and.popc: D[16][8] += popc(A AND B) over 256 bits. Lane 4g+t holds a0 =
// A[g][t], a1 = A[g+8][t], a2 = A[g][4+t], a3 = A[g+8][4+t], b0 = B[g][t], b1 = B[g][4+t] (words
// of the k256 slice; B indexed by column) and d0 = D[g][2t], d1 = D[g][2t+1], d2 = D[g+8][2t],
// d3 = D[g+8][2t+1].
inline void emu_bmma(int (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    const unsigned f[6] = {a[0], a[1], a[2], a[3], b0, b1};
    const unsigned(*s)[8] = emu_exchange(EMU_MMA, f, 6);
    const int g = (int)(threadIdx.x % 32) >> 2, t = (int)(threadIdx.x % 32) & 3;
    unsigned arow[2][8], bcol[2][8]; // rows g, g+8 of A; columns 2t, 2t+1 of B
    for (int q = 0; q < 4; q++) {
        arow[0][q] = s[4 * g + q][1 + 0];
        arow[1][q] = s[4 * g + q][1 + 1];
        arow[0][4 + q] = s[4 * g + q][1 + 2];
        arow[1][4 + q] = s[4 * g + q][1 + 3];
        for (int j = 0; j < 2; j++) {
            bcol[j][q] = s[4 * (2 * t + j) + q][1 + 4];
            bcol[j][4 + q] = s[4 * (2 * t + j) + q][1 + 5];
        }
    }
    for (int i = 0; i < 4; i++)
        for (int w = 0; w < 8; w++) d[i] += __builtin_popcount(arow[i >> 1][w] & bcol[i & 1][w]);
}

// cp.async.cg 16 bytes; src_bytes 0 writes zeros and reads nothing.
inline void emu_land(const EmuCopy &c) {
    unsigned char *d = emu_at(c.dst, 16, 16);
    memset(d, 0, 16);
    if (c.src_bytes) memcpy(d, c.src, 16);
}
// Fails with `what` unless bytes at src lie inside one of the launch's registered buffers.
inline void emu_check_source(const void *src, size_t bytes, const char *what) {
    for (int i = 0; i < emu_nglobal; i++) {
        const unsigned char *b = (const unsigned char *)emu_global_base[i];
        if ((const unsigned char *)src >= b && (const unsigned char *)src + bytes <= b + emu_global_bytes[i]) return;
    }
    emu_fail(what, (uintptr_t)src);
}
inline void emu_cp16(unsigned dst, const void *src, unsigned src_bytes) {
    emu_at(dst, 16, 16);
    if (src_bytes != 0 && src_bytes != 16) emu_fail("cp.async src_bytes", src_bytes);
    if (src_bytes) {
        if ((uintptr_t)src % 16) emu_fail("misaligned cp.async source", (uintptr_t)src % 16);
        emu_check_source(src, 16, "cp.async source outside the kernel's input buffers");
    }
    const EmuCopy c = {dst, src_bytes, src, emu_lane->groups};
    if (emu_land_early) {
        emu_land(c);
        return;
    }
    if (emu_lane->ncp == EMU_MAXCP) emu_fail("too many cp.async in flight", EMU_MAXCP);
    emu_lane->cp[emu_lane->ncp++] = c;
}
inline void emu_cp_commit() { emu_lane->groups++; }
// cp.async.wait_group n: the copies of all but the n most recent committed groups land.
inline void emu_cp_wait_n(int n) {
    int k = 0;
    EmuLane &t = *emu_lane;
    for (int i = 0; i < t.ncp; i++)
        if (t.cp[i].group < t.groups - n)
            emu_land(t.cp[i]);
        else
            t.cp[k++] = t.cp[i];
    t.ncp = k;
}
template <int N> inline void emu_cp_wait() { emu_cp_wait_n(N); }

// ---------------------------------------------------------------- launch

// The arguments of every bconv kernel (unused ones null): X, W, P, ep0, ep1, Y, then Yb
// (BNN_EPI_CHAIN) or R (a threshold by a residual of bits), then the batch.
struct EmuArgs {
    const unsigned *X, *W;
    const int *P;
    const void *ep0, *ep1;
    void *Y, *Yb;
    const void *R;
    int nb;
};
typedef void (*EmuCall)(const EmuArgs &);
// bnn_conv_wprefix of common.cu (the popc(w) prefix table P), one thread per entry.
typedef void (*EmuPrep)(const unsigned *W, int O, int KH, int KW, int cwp, int ldw, int *P);

// One layer compiled in one halo configuration (bconv_emu_case.h): the BC_* numbers, its runs
// (batch[i] with gy[i] blocks along y, 0: one tile a warp plus an empty block; batch 0: no
// run), the configuration, the launcher and the translation unit's bnn_conv_wprefix.
struct EmuCase {
    const char *id, *name, *cfg;
    int c, h, w, o, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, pad_one, pool, epi, cwp, ldw, ldy;
    int nst, div, res, resw, f32, ldb, nb_const, batch[2], gy[2];
    int th, tw, bn, nw, minb;
    EmuCall call;
    EmuPrep wprefix;
};
inline std::vector<EmuCase> &emu_cases() {
    static std::vector<EmuCase> cases;
    return cases;
}
inline bool emu_register(const EmuCase &c) {
    emu_cases().push_back(c);
    return true;
}

struct EmuLaunch {
    EmuCall call;
    const EmuArgs *args;
    unsigned gx, gy, threads, smem, guard_end; // guard_end: smem and a guard after it
    unsigned long long smem_overrun;            // bytes of the guard changed (set by thread 0)
};
inline unsigned char emu_pattern(unsigned i, unsigned block) {
    return (unsigned char)((i * 0x9E3779B1u + block * 0x85EBCA6Bu) >> 13);
}

inline void emu_thread(unsigned tid, void *arg) {
    EmuLaunch *L = (EmuLaunch *)arg;
    for (unsigned by = 0; by < L->gy; by++)
        for (unsigned bx = 0; bx < L->gx; bx++) {
            const unsigned block = by * L->gx + bx;
            if (tid == 0) {
                blockIdx = EmuDim{bx, by, 0};
                emu_land_early = (bx + by) & 1;
                for (unsigned i = 0; i < L->guard_end; i++) bnn_dsmem[i] = emu_pattern(i, block);
            }
            __syncthreads();
            emu_lane->set = emu_lane->ncp = emu_lane->groups = 0;
            L->call(*L->args);
            emu_cp_wait_n(0);
            __syncthreads();
            if (tid == 0)
                for (unsigned i = L->smem; i < L->guard_end; i++)
                    L->smem_overrun += bnn_dsmem[i] != emu_pattern(i, block);
            __syncthreads();
        }
}

inline void emu_resume(unsigned tid) {
    threadIdx = EmuDim{tid, 0, 0};
    emu_lane = &emu_lanes[tid];
}

// Runs `call` on a grid (gx, gy) of blocks of `threads` threads with `smem` bytes of dynamic
// shared memory; returns the number of bytes of the guard after smem that the blocks changed.
inline unsigned long long emu_launch(EmuCall call, const EmuArgs &args, unsigned gx, unsigned gy, unsigned threads,
                                     unsigned smem) {
    if (threads % 32 || threads / 32 > EMU_MAXW || smem > EMU_DSMEM) emu_fail("launch configuration", threads);
    if (!emu_lanes && !(emu_lanes = (EmuLane *)calloc(EMU_MAXW * 32, sizeof(EmuLane))))
        emu_fail("out of memory", EMU_MAXW * 32);
    const unsigned guard_end = smem + 4096 < (unsigned)EMU_DSMEM ? smem + 4096 : (unsigned)EMU_DSMEM;
    EmuLaunch L = {call, &args, gx, gy, threads, smem, guard_end, 0};
    emu_smem_size = smem;
    gridDim = EmuDim{gx, gy, 1};
    blockDim = EmuDim{threads, 1, 1};
    for (unsigned w = 0; w < threads / 32; w++) emu_fiber_barrier_init(&emu_warp[w].bar, 32);
    emu_fiber_barrier_init(&emu_block_bar, threads);
    emu_fibers_run(threads, emu_thread, &L, emu_resume);
    return L.smem_overrun;
}
#endif
