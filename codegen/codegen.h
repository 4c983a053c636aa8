/* codegen.h: from an optimized Graph (after run_passes) to model.bin, the whole interface
 * of codegen/ for the driver. The lowering (lower.c) turns each op into the runtime's
 * plan steps (docs/blob-format.md), lays out weights in the kernels' formats and plans the
 * arena; the emitter (cuda/emit.c) writes one specialized CUDA kernel per GPU step (steps
 * that need the same kernel share it); NVRTC (nvrtc.h) compiles them, one program per target,
 * the targets in parallel, through a CUBIN cache; the blob writer (blob.h) writes it all.
 * docs/codegen.md tells the story. Errors go through diag_error (ir.h). */
#ifndef BNN_CODEGEN_H
#define BNN_CODEGEN_H

#include <stdbool.h>

#include "ir.h"
#include "util.h"

#define CODEGEN_MAX_TARGETS 8

typedef struct CodegenOptions {
    /* GPU architectures ("sm_90a", "sm_80"); none: a CPU-only blob (no CUBIN). */
    const char *targets[CODEGEN_MAX_TARGETS];
    int ntargets;
    /* Where the generated source goes when NVRTC fails (NULL: "bnncc-failed.cu"). */
    const char *failed_source_path;
    Buf *report; /* lines for bnncc --report (steps, arena, sizes), or NULL */
    /* The CUBINs come from the cache ($BNNCC_CACHE_DIR, else $XDG_CACHE_HOME/bnncc, else
     * ~/.cache/bnncc) when it has them, and new ones go there; no_cache: neither. */
    bool no_cache;
    bool progress; /* say on stderr what NVRTC compiles before a compile (not on a cache hit) */
    /* --float-convs: how float convolutions run on the GPU. EXACT: the reference's float
     * sums, bit for bit; FP16 / FP16X3: on the tensor cores with inputs and weights as fp16 (or
     * as hi + lo fp16 pairs, three products per term), f32 sums in the tensor cores' order:
     * no longer bit-identical to the reference. The CPU path stays exact in every mode. */
    enum { FLOAT_CONVS_EXACT, FLOAT_CONVS_FP16, FLOAT_CONVS_FP16X3 } float_convs;
    /* --lowbit: how low-bit dense layers (qgemm steps) compute. AUTO: int8 MMA where activation
     * bits x weight bits > 8, bit-planes otherwise (docs/codegen.md "Bit-planes or int8");
     * PLANES / INT8: every layer that can, the others an error naming the layer. */
    enum { LOWBIT_AUTO, LOWBIT_PLANES, LOWBIT_INT8 } lowbit;
    /* --qconv=direct: every qconv step on the direct kernel (qconv.cu without QC_HALO), not the
     * halo-tile kernel where its shared memory fits (the default; docs/codegen.md). */
    bool qconv_direct;
    /* bnncc --tune: the kernel configuration of each tunable layer (CodegenTunable), indexed
     * by the node's index in the graph: a candidate number (0 the cost model's), or negative (or
     * a node past ntune_choice) for no choice: the cost model's configuration. A candidate that
     * does not apply to a layer is an internal error (the candidates are the ones
     * codegen_tunables listed). */
    const int *tune_choice;
    int ntune_choice;
    /* No batch alternatives (BLOB_STEP_BATCH_ALT: a second kernel configuration of a step that
     * the GPU runs from a batch size on; docs/codegen.md "Batch alternatives"). A tunable layer
     * with a tune_choice entry (>= 0) has none (its configuration is the tuned batch's at every
     * batch); the other steps keep theirs unless this is set (the tuner's variants set it: their
     * plan steps are codegen_tunables'). */
    bool no_batch_alts;
} CodegenOptions;

/* A layer whose GPU kernel has several configurations of the same result (tiles, warps),
 * which bnncc --tune measures. The candidates are those that apply to this layer; candidate 0
 * is the cost model's choice. signature: what the kernel computes (the kernel family and
 * every parameter but its name and tile), the same for two layers of the same problem, so a
 * winner stored for one applies to the other. */
#define CODEGEN_MAX_CANDIDATES 8
typedef struct CodegenTunable {
    int node;  /* index in g->nodes */
    int step;  /* its plan step (bnn_model_step_info's index) */
    char *layer;     /* the node's name */
    char *signature; /* one line, no tabs */
    int ncandidates;
    char *candidate[CODEGEN_MAX_CANDIDATES]; /* "halo 4x8 px, 64 ch, 4 warps, minb 3" */
    int chosen; /* the candidate the options gave it (0 by codegen_tunables) */
    /* The plan steps the layer takes with each candidate, from `step` on: 1, but 3 for a
     * low-bit convolution on the int8 tensor cores (its bit-plane step made CPU-only, the
     * bytes converter, the int8 convolution), so the tuner finds each variant's steps. */
    int nsteps[CODEGEN_MAX_CANDIDATES];
    /* The batch alternatives the plan gives the layer when it has no tune entry: from batch
     * alt_from[a] on (increasing) the GPU runs candidate alt_candidate[a]. bnncc --tune compares
     * a batch's candidates with the one the plan runs at that batch. */
    int nalts;
    int alt_from[2], alt_candidate[2];
} CodegenTunable;

/* The tunable layers of g under o (o->tune_choice is ignored: the list is the same for every
 * choice), in plan order. 0 with *out (free with codegen_tunables_free) and *n; -1 with a
 * diagnostic (an op with no code generator, as codegen_cuda_source). */
int codegen_tunables(const Graph *g, const CodegenOptions *o, CodegenTunable **out, int *n);
void codegen_tunables_free(CodegenTunable *t, int n);

/* Parse "sm_90a,sm_80,cpu" into o->targets ("cpu" adds no GPU target; targets point into
 * list, which must outlive o). 0 ok; -1 with a diagnostic naming the bad entry. */
int codegen_parse_targets(const char *list, CodegenOptions *o);

/* Which pre-tiled GEMM kernel the targets of o can run: 0 none (a target before sm_90),
 * 1 the mma.sync one (bgemm_tiled.cu: every target sm_90 or newer), 2 the wgmma one
 * (bgemm_wgmma.cu: every target sm_90a), -1 no GPU target at all. */
int codegen_tiled_kernel(const CodegenOptions *o);

/* The CUDA source of g's kernels, as NVRTC compiles it (bnncc --emit=cuda); o (may be NULL)
 * for the options that change kernels (float_convs). NULL with a diagnostic when an op has no
 * code generator. */
char *codegen_cuda_source(const Graph *g, const CodegenOptions *o);

/* Lower g, compile its kernels for every target and write the blob to path atomically
 * (nothing is written on failure). 0 ok; -1 with a diagnostic. */
int codegen_write_blob(const Graph *g, const CodegenOptions *o, const char *path);

#endif
