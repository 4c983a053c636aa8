/* emit.h: what the lowering (codegen/lower.c) hands the CUDA emitter (codegen/cuda/emit.c):
 * one KernelSpec per plan step that runs on the GPU. Private to codegen/. */
#ifndef BNN_EMIT_H
#define BNN_EMIT_H

#include <stdint.h>

typedef enum {
    KERNEL_BGEMM, /* defines (BG_*) + kernels/bgemm.cu */
    KERNEL_BCONV, /* defines (BC_*) + kernels/bconv.cu */
    KERNEL_FLOAT, /* a __global__ wrapper around one call into kernels/float_ops.cu */
    KERNEL_PLANES, /* defines (PL_*) + kernels/bgemm_planes.cu (the qgemm step) */
} KernelFamily;

typedef struct KernelSpec {
    KernelFamily family;
    char name[64];       /* the kernel's symbol, unique in the model */
    const char *ir_line; /* the IR line it was generated from (borrowed), or NULL */
    char *defines;       /* BGEMM/BCONV/PLANES: "#define BG_N 64\n" lines (malloc'ed) */
    int64_t count;       /* FLOAT: work items per batch item */
    char *call;          /* FLOAT: the float_ops.cu call (malloc'ed) */
} KernelSpec;

/* The whole CUDA program of a model: the kernel families' common code once, then every
 * kernel, each under a comment with its IR line and with #line directives so that NVRTC's
 * messages point into `file` (the name the source is saved under) or the family's .cu.
 * Deterministic. Returns malloc'ed text. */
char *emit_cuda_source(const char *file, const char *model, const KernelSpec *k, int n);

#endif
