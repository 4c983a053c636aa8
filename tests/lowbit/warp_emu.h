/* warp_emu.h: a block emulator to run the bit-plane kernel files (bgemm_planes.cu, qconv.cu)
 * as C without a GPU. The threads of a block of up to EMU_MAXW warps are fibers
 * (tests/emu/emu_fiber.h); the warp primitives (__syncwarp, __ballot_sync, __shfl_xor_sync, ldmatrix, mma.sync) meet at their
 * warp's barrier, __syncthreads at the block's. mma.sync m16n8k256 .and.popc (emu_mma) is
 * computed from the lanes' fragments with the register layout HARDWARE.md verified on the
 * hardware; ldmatrix .x4 (bnn_qh_ldsm4) hands lane l word l%4 of row l/4 of matrix j, whose
 * rows lanes 8j..8j+7 addressed; cp.async (bnn_qh_cp) is queued per thread and lands only at
 * the cp.async.wait_group that covers its group (a read before the wait sees the old bytes).
 * Dynamic shared memory is filled with 0xa5 before each block; its addresses are offsets into
 * emu_dsmem, checked for bounds and alignment. Include once per test, before the kernel files. */
#ifndef BNN_WARP_EMU_H
#define BNN_WARP_EMU_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_fiber.h"

enum { EMU_MAXW = 16, EMU_DSMEM = 232448, EMU_MAXCP = 4096 };

typedef struct EmuDim {
    unsigned x, y, z;
} EmuDim;
static EmuDim threadIdx, blockIdx, gridDim; /* threadIdx: the running fiber's */
static EmuFiberBarrier emu_wbar[EMU_MAXW], emu_bbar;
static unsigned emu_u[EMU_MAXW][32];
static int emu_i[EMU_MAXW][32];
static unsigned emu_frag[EMU_MAXW][32][6]; /* a0..a3, b0, b1 of each lane */
static unsigned emu_addr[EMU_MAXW][32];
static _Alignas(16) unsigned char emu_dsmem[EMU_DSMEM];
static unsigned emu_dsmem_size; /* the launch's dynamic shared memory */

#define __global__
#define __device__
#define __forceinline__ static inline
#define __launch_bounds__(...)
#define __restrict__ restrict
#define __shared__ static
#define __popc(x) __builtin_popcount(x)
#define __trap() (fprintf(stderr, "__trap at %s:%d\n", __FILE__, __LINE__), abort())

static void emu_fail(const char *what, unsigned v) {
    fprintf(stderr, "warp_emu: %s (%u), thread %u of block (%u, %u)\n", what, v, threadIdx.x, blockIdx.x, blockIdx.y);
    abort();
}
static void emu_sync(void) { emu_fiber_barrier_wait(&emu_wbar[threadIdx.x / 32]); }
#define __syncwarp() emu_sync()
#define __syncthreads() emu_fiber_barrier_wait(&emu_bbar)

static unsigned __ballot_sync(unsigned mask, int pred) {
    (void)mask;
    unsigned w = threadIdx.x / 32, r = 0;
    emu_u[w][threadIdx.x % 32] = pred != 0;
    emu_sync();
    for (int l = 0; l < 32; l++)
        r |= emu_u[w][l] << l;
    emu_sync();
    return r;
}

static int __shfl_xor_sync(unsigned mask, int v, int o) {
    (void)mask;
    unsigned w = threadIdx.x / 32;
    emu_i[w][threadIdx.x % 32] = v;
    emu_sync();
    int r = emu_i[w][(threadIdx.x % 32) ^ (unsigned)o];
    emu_sync();
    return r;
}

/* D[16][8] += popc(A AND B) over 256 bits. Lane 4g+t holds a0 = A[g][t], a1 = A[g+8][t],
 * a2 = A[g][4+t], a3 = A[g+8][4+t], b0 = B[g][t], b1 = B[g][4+t] (words of the k256 slice) and
 * d0 = D[g][2t], d1 = D[g][2t+1], d2 = D[g+8][2t], d3 = D[g+8][2t+1]. */
static void emu_mma(int *d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                       unsigned b1) {
    unsigned lane = threadIdx.x % 32, wp = threadIdx.x / 32;
    unsigned f[6] = {a0, a1, a2, a3, b0, b1};
    memcpy(emu_frag[wp][lane], f, sizeof f);
    emu_sync();
    unsigned A[16][8], B[8][8];
    for (int l = 0; l < 32; l++) {
        int g = l >> 2, t = l & 3;
        A[g][t] = emu_frag[wp][l][0];
        A[g + 8][t] = emu_frag[wp][l][1];
        A[g][4 + t] = emu_frag[wp][l][2];
        A[g + 8][4 + t] = emu_frag[wp][l][3];
        B[g][t] = emu_frag[wp][l][4];
        B[g][4 + t] = emu_frag[wp][l][5];
    }
    emu_sync();
    int g = (int)lane >> 2, t = (int)lane & 3;
    int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
    for (int i = 0; i < 4; i++)
        for (int w = 0; w < 8; w++)
            d[i] += __builtin_popcount(A[rows[i]][w] & B[cols[i]][w]);
}

/* ---- shared memory: 32-bit addresses are offsets into emu_dsmem */
static unsigned char *emu_at(unsigned a, unsigned bytes, unsigned align) {
    if (a % align)
        emu_fail("misaligned shared address", a);
    if (a + bytes > emu_dsmem_size)
        emu_fail("shared address past the launch's dynamic shared memory", a);
    return emu_dsmem + a;
}
#define BNN_QC_DSMEM(name) unsigned char *name = emu_dsmem
#define bnn_qh_smem(p) ((unsigned)((unsigned char *)(p) - emu_dsmem))
#define bnn_qh_smem_size() emu_dsmem_size
#define BNN_QC_UNROLL
static inline void bnn_qh_st16(unsigned a, unsigned x, unsigned y, unsigned z, unsigned w) {
    unsigned v[4] = {x, y, z, w};
    memcpy(emu_at(a, 16, 16), v, 16);
}
static inline void bnn_qh_st8(unsigned a, unsigned x, unsigned y) {
    unsigned v[2] = {x, y};
    memcpy(emu_at(a, 8, 8), v, 8);
}
static inline void bnn_qh_ld16(unsigned a, unsigned *v) { memcpy(v, emu_at(a, 16, 16), 16); }

/* ldmatrix.sync.aligned.m8n8.x4.shared.b16: lanes 8j..8j+7 give the rows of matrix j (16
 * bytes each); register j of lane l = 32-bit word l%4 of row l/4 of matrix j. */
static inline void bnn_qh_ldsm4(unsigned a, unsigned *r) {
    unsigned w = threadIdx.x / 32, l = threadIdx.x % 32;
    emu_addr[w][l] = a;
    emu_sync();
    for (int j = 0; j < 4; j++)
        memcpy(&r[j], emu_at(emu_addr[w][8 * j + l / 4], 16, 16) + 4 * (l % 4), 4);
    emu_sync();
}

/* cp.async: size bytes (4, 8 or 16) to shared dst, src_bytes of them read (0: zeros). */
typedef struct EmuCopy {
    unsigned dst, size, src_bytes;
    const void *src;
    int group;
} EmuCopy;
/* Each thread's queued copies and committed groups; emu_lane is the running thread's. */
typedef struct EmuLane {
    EmuCopy cp[EMU_MAXCP];
    int ncp, groups;
} EmuLane;
static EmuLane *emu_lanes, *emu_lane;
static inline void bnn_qh_cp(unsigned dst, const void *src, int size, unsigned src_bytes) {
    if (size != 4 && size != 8 && size != 16)
        emu_fail("cp.async size", (unsigned)size);
    if (src_bytes != 0 && src_bytes != (unsigned)size)
        emu_fail("cp.async src_bytes", src_bytes);
    if ((size_t)src % (size_t)size)
        emu_fail("misaligned cp.async source", (unsigned)((size_t)src % 16));
    emu_at(dst, (unsigned)size, (unsigned)size);
    if (emu_lane->ncp == EMU_MAXCP)
        emu_fail("too many cp.async in flight", EMU_MAXCP);
    emu_lane->cp[emu_lane->ncp++] = (EmuCopy){dst, (unsigned)size, src_bytes, src, emu_lane->groups};
}
static inline void bnn_qh_commit(void) { emu_lane->groups++; }
/* cp.async.wait_group n: the copies of all but the n most recent committed groups land. */
static inline void emu_cp_wait(int n) {
    int k = 0;
    for (int i = 0; i < emu_lane->ncp; i++) {
        EmuCopy c = emu_lane->cp[i];
        if (c.group < emu_lane->groups - n) {
            unsigned char *d = emu_at(c.dst, c.size, c.size);
            memset(d, 0, c.size);
            if (c.src_bytes)
                memcpy(d, c.src, c.src_bytes);
        } else {
            emu_lane->cp[k++] = c;
        }
    }
    emu_lane->ncp = k;
}
#define bnn_qh_wait1() emu_cp_wait(1)
#define bnn_qh_wait2() emu_cp_wait(2)

/* One launch: grid (gx, gy), `threads` threads a block (a multiple of 32), `smem` bytes of
 * dynamic shared memory; body(ctx) runs the kernel in every thread, blocks one after another. */
typedef struct EmuBody {
    void (*body)(void *);
    void *ctx;
} EmuBody;

static void emu_resume(unsigned tid) {
    threadIdx.x = tid;
    emu_lane = &emu_lanes[tid];
}

static void emu_run_thread(unsigned tid, void *arg) {
    EmuBody *b = arg;
    emu_lanes[tid].ncp = emu_lanes[tid].groups = 0;
    b->body(b->ctx);
    emu_cp_wait(0);
}

static void emu_launch_body(void (*body)(void *), void *ctx, unsigned gx, unsigned gy, unsigned threads,
                            unsigned smem) {
    if (threads % 32 || threads / 32 > EMU_MAXW || smem > EMU_DSMEM)
        emu_fail("launch configuration", threads);
    if (!emu_lanes && !(emu_lanes = calloc(EMU_MAXW * 32, sizeof *emu_lanes)))
        emu_fail("out of memory", EMU_MAXW * 32);
    for (unsigned w = 0; w < threads / 32; w++)
        emu_fiber_barrier_init(&emu_wbar[w], 32);
    emu_fiber_barrier_init(&emu_bbar, threads);
    emu_dsmem_size = smem;
    gridDim = (EmuDim){gx, gy, 1};
    EmuBody b = {body, ctx};
    for (unsigned by = 0; by < gy; by++)
        for (unsigned bx = 0; bx < gx; bx++) {
            blockIdx = (EmuDim){bx, by, 0};
            memset(emu_dsmem, 0xa5, sizeof emu_dsmem);
            emu_fibers_run(threads, emu_run_thread, &b, emu_resume);
        }
}

/* The bit-plane kernels' signature (A or X, W, rows, T, dir, Y) and one launch of one: grid
 * (gx, gy), 32 threads. */
typedef void (*EmuKernel)(const unsigned *, const unsigned *, int, const int *, const int *, void *);

typedef struct EmuLaunch {
    EmuKernel fn;
    const unsigned *A, *W;
    int M;
    const int *T, *dir;
    void *Y;
} EmuLaunch;

static void emu_call(void *arg) {
    EmuLaunch *l = arg;
    l->fn(l->A, l->W, l->M, l->T, l->dir, l->Y);
}

static inline void emu_launch(EmuKernel fn, unsigned gx, unsigned gy, const unsigned *A, const unsigned *W, int M,
                       const int *T, const int *dir, void *Y) {
    EmuLaunch l = {fn, A, W, M, T, dir, Y};
    emu_launch_body(emu_call, &l, gx, gy, 32, 0);
}
#endif
