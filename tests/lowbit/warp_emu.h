/* warp_emu.h: a warp emulator to run the bit-plane kernel files (bgemm_planes.cu, qconv.cu)
 * as C without a GPU: 32 POSIX threads per block stand for the lanes, the warp primitives
 * (__syncwarp, __ballot_sync, __shfl_xor_sync) meet at a barrier, and mma.sync m16n8k256
 * .and.popc (emu_mma) is computed from the lanes' fragments with the register layout
 * HARDWARE.md verified on the hardware. Include once per test, before the kernel files;
 * initialize warp_bar for 32 threads. */
#ifndef BNN_WARP_EMU_H
#define BNN_WARP_EMU_H
#include <pthread.h>
#include <string.h>

typedef struct EmuDim {
    unsigned x, y, z;
} EmuDim;
static _Thread_local EmuDim threadIdx;
static EmuDim blockIdx;
static pthread_barrier_t warp_bar;
static unsigned emu_u[32];
static int emu_i[32];
static unsigned emu_frag[32][6]; /* a0..a3, b0, b1 of each lane */

#define __global__
#define __launch_bounds__(n)
#define __restrict__ restrict
#define __shared__ static
#define __popc(x) __builtin_popcount(x)

static void emu_sync(void) { pthread_barrier_wait(&warp_bar); }
#define __syncwarp() emu_sync()

static unsigned __ballot_sync(unsigned mask, int pred) {
    (void)mask;
    emu_u[threadIdx.x] = pred != 0;
    emu_sync();
    unsigned w = 0;
    for (int l = 0; l < 32; l++)
        w |= emu_u[l] << l;
    emu_sync();
    return w;
}

static int __shfl_xor_sync(unsigned mask, int v, int o) {
    (void)mask;
    emu_i[threadIdx.x] = v;
    emu_sync();
    int r = emu_i[threadIdx.x ^ (unsigned)o];
    emu_sync();
    return r;
}

/* D[16][8] += popc(A AND B) over 256 bits. Lane 4g+t holds a0 = A[g][t], a1 = A[g+8][t],
 * a2 = A[g][4+t], a3 = A[g+8][4+t], b0 = B[g][t], b1 = B[g][4+t] (words of the k256 slice) and
 * d0 = D[g][2t], d1 = D[g][2t+1], d2 = D[g+8][2t], d3 = D[g+8][2t+1]. */
static void emu_mma(int *d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                       unsigned b1) {
    unsigned lane = threadIdx.x;
    unsigned f[6] = {a0, a1, a2, a3, b0, b1};
    memcpy(emu_frag[lane], f, sizeof f);
    emu_sync();
    unsigned A[16][8], B[8][8];
    for (int l = 0; l < 32; l++) {
        int g = l >> 2, t = l & 3;
        A[g][t] = emu_frag[l][0];
        A[g + 8][t] = emu_frag[l][1];
        A[g][4 + t] = emu_frag[l][2];
        A[g + 8][4 + t] = emu_frag[l][3];
        B[g][t] = emu_frag[l][4];
        B[g][4 + t] = emu_frag[l][5];
    }
    emu_sync();
    int g = (int)lane >> 2, t = (int)lane & 3;
    int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
    for (int i = 0; i < 4; i++)
        for (int w = 0; w < 8; w++)
            d[i] += __builtin_popcount(A[rows[i]][w] & B[cols[i]][w]);
}

/* The bit-plane kernels' signature (A or X, W, rows, T, dir, Y) and one launch of one: grid
 * (gx, gy), 32 threads, the blocks one after another. */
typedef void (*EmuKernel)(const unsigned *, const unsigned *, int, const int *, const int *, void *);

typedef struct EmuLaunch {
    EmuKernel fn;
    const unsigned *A, *W;
    int M;
    const int *T, *dir;
    void *Y;
    unsigned lane;
} EmuLaunch;

static void *emu_run_lane(void *arg) {
    EmuLaunch *l = arg;
    threadIdx.x = l->lane;
    l->fn(l->A, l->W, l->M, l->T, l->dir, l->Y);
    return NULL;
}

static void emu_launch(EmuKernel fn, unsigned gx, unsigned gy, const unsigned *A, const unsigned *W, int M,
                       const int *T, const int *dir, void *Y) {
    for (unsigned by = 0; by < gy; by++)
        for (unsigned bx = 0; bx < gx; bx++) {
            blockIdx.x = bx;
            blockIdx.y = by;
            pthread_t th[32];
            EmuLaunch ls[32];
            for (unsigned l = 0; l < 32; l++) {
                ls[l] = (EmuLaunch){fn, A, W, M, T, dir, Y, l};
                pthread_create(&th[l], NULL, emu_run_lane, &ls[l]);
            }
            for (int l = 0; l < 32; l++)
                pthread_join(th[l], NULL);
        }
}
#endif
