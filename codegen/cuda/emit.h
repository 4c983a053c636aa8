/* emit.h: what the lowering (codegen/lower.c) hands the CUDA emitter (codegen/cuda/emit.c):
 * one KernelSpec per plan step that runs on the GPU. Private to codegen/. */
#ifndef BNN_EMIT_H
#define BNN_EMIT_H

#include <stdbool.h>
#include <stdint.h>

typedef enum {
    KERNEL_BGEMM, /* defines (BG_*) + kernels/bgemm.cu */
    KERNEL_BCONV, /* defines (BC_*) + kernels/bconv.cu */
    KERNEL_FLOAT, /* a __global__ wrapper around one call into kernels/float_ops.cu */
    KERNEL_PLANES, /* defines (PL_*) + kernels/bgemm_planes.cu (the qgemm step) */
    KERNEL_QCONV, /* defines (QC_*) + kernels/qconv.cu (the qconv step) */
    KERNEL_Q8, /* defines (Q8_*) + kernels/qgemm_s8.cu (the qgemm step on int8 codes) */
    KERNEL_FLOAT_TILE, /* defines (a config struct) + a __global__ around one tiled float_ops.cu call */
    KERNEL_MLP, /* a __global__ whose body (call) drives kernels/mlp_fused.cu: a fused binary MLP */
    KERNEL_BGEMM_TILED, /* defines (BT_*) + kernels/bgemm_tiled.cu: pre-tiled operands, mma.sync (sm_90+) */
    KERNEL_BGEMM_WGMMA, /* defines (BW_*) + kernels/bgemm_wgmma.cu: pre-tiled operands, wgmma (sm_90a) */
    KERNEL_PLANES_TILED, /* defines (PT_*, PT_APLAIN 1) + kernels/bgemm_planes_tiled.cu: the qgemm step's batch alternative */
    KERNEL_PLANES_WGMMA, /* the same with PT_WGMMA 1: a kernel in the sm_90a CUBIN only (BLOB_STEP_SM90A) */
} KernelFamily;

/* Every field that shapes a kernel's text must be in kernel_identity (lower.c), which decides
 * which steps can share one kernel. */
typedef struct KernelSpec {
    KernelFamily family;
    char name[64];       /* the kernel's symbol, unique in the model */
    const char *ir_line; /* the IR line it was generated from (borrowed), or NULL */
    char *defines;       /* BGEMM/BCONV/PLANES: "#define BG_N 64\n" lines; FLOAT_TILE: the
                          * config struct the call names (malloc'ed) */
    int64_t count;       /* FLOAT: work items per batch item */
    char *call;          /* FLOAT, FLOAT_TILE: the float_ops.cu call; MLP: the kernel's body (malloc'ed) */
    int threads;         /* FLOAT_TILE, MLP: threads per block (the __launch_bounds__) */
    int min_blocks;      /* FLOAT_TILE: blocks an SM must fit (__launch_bounds__); 0: 512 threads' worth */
    int min_blocks80;    /* FLOAT_TILE: at most this many in the sm_80 code; 0: as its shared memory fits */
    int64_t smem;        /* FLOAT_TILE: the launch's dynamic shared memory (fewer blocks fit on sm_80) */
    bool waits_itself;   /* FLOAT_TILE: the call makes the PDL wait (BNN_PDL_ENTER), not the glue */
    const char *shared_by; /* the other steps that launch this kernel ("s13_bconv, s21_bconv"):
                            * their kernels were the same but for the name; or NULL */
} KernelSpec;

/* The whole CUDA program of a model: the kernel families' common code once, then every
 * kernel (one per distinct kernel: the lowering leaves out the copies, see shared_by), each
 * under a comment with its IR line and with #line directives so that NVRTC's
 * messages point into `file` (the name the source is saved under) or the family's .cu.
 * Deterministic. Returns malloc'ed text. */
char *emit_cuda_source(const char *file, const char *model, const KernelSpec *k, int n);

#endif
