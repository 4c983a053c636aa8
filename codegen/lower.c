/* lower.c: an optimized Graph becomes the runtime's plan (docs/blob-format.md): one or a
 * few plan steps per op, weights laid out as the kernels read them, an arena planned by
 * liveness, the graph's inputs and outputs described; then the kernels of the GPU steps
 * are generated (cuda/emit.c), compiled per target (nvrtc.h) and everything is written
 * with the blob writer (blob.h). docs/codegen.md describes the mapping op by op.
 *
 * Tensor storage in the arena, per batch item: f32/i32/i64 in canonical row-major (NCHW);
 * b1 with a chosen format (axis 1, 32-bit words, channels padded) NHWC-packed: each pixel
 * one row of `words` words, bit c%32 of word c/32; b1 graph outputs canonical. */
#include <limits.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blob.h"
#include "codegen.h"
#include "cuda/emit.h"
#include "kernels.h"
#include "nvrtc.h"
#include "tile_layout.h"
#include "util.h"

#define ARENA_ALIGN 256 /* every arena offset; item n of a tensor sits at B*offset + n*bytes */
#define FLOAT_BLOCK 256 /* threads per block of the float kernels */
#define QUANTIZE_WORDS 4 /* code-plane words a warp of the quantize kernel (bnn_quantize) */
_Static_assert(CHAIN_MAX_STAGES == BLOB_EPI_MAX_STAGES, "a bconv2d_chain's stages fit one bconv epilogue");

typedef struct LBuf {
    int64_t bytes; /* per batch item */
    int first, last; /* steps that touch it; pinned: the whole run */
    bool pinned;     /* a graph input or output */
    int64_t offset;
} LBuf;

typedef struct LStep {
    BlobStep s;
    int buf[BLOB_MAX_SLOTS]; /* the arena buffer behind each arena slot, or -1 */
    bool has_kernel;
    KernelSpec k;
} LStep;

typedef struct Lower {
    const Graph *g;
    BlobWriter *w;
    char *ir_text;    /* the graph printed; ir_lines point into it */
    char **ir_lines;  /* per node index */
    int *vbuf;        /* per value id: its arena buffer, or -1 */
    bool *done;       /* per node index: already lowered as part of an earlier node */
    LBuf *bufs;
    int nbufs, cap_bufs;
    LStep *steps;
    int nsteps, cap_steps;
    int64_t arena;    /* bytes per batch item */
    const Node *node; /* being lowered, for messages */
    int node_index;
    int float_convs;  /* CodegenOptions.float_convs: float convs on fp16 tensor cores (GPU only) */
    int nfp16_convs;  /* how many got that kernel, for --report */
    bool qconv_direct; /* CodegenOptions.qconv_direct: no halo-tile qconv kernels */
    int nexact_bit_convs; /* conv2d_chains on it that write exact bits (lower_conv2d_bits) */
    int nres_thresholds;  /* bconv chains become thresholds by a residual of bits (lower_bconv) */
    int nresd;            /* 1x1 downsample convs computed inside the conv that adds them (lower_bconv) */
    bool *rcode;          /* per node index: a qconv2d_chain that reads its residual as codes (plan_rcode) */
    bool *no_rcode_src;   /* per node index: a conv2d_chain that did not write a pool of codes */
    signed char *may_nan; /* per value id: value_may_be_nan's answer, -1 until asked */
    bool stem_codes;      /* the conv2d_chain being lowered wrote a pool of codes (lower_conv2d_codes) */
    int nrcode;           /* qconv2d_chains whose GPU kernel thresholds by a residual code */
    int nqresd;           /* qconv2d_chains that compute the 1x1 downsample they add in their GPU kernel */
    int nqresd_fast;      /* ... of which decide their codes by the fast test (QC_RESD_FAST) */
    int64_t nqresd_chans, nqresd_rows; /* their channels, and those whose fast row decides some d */
    int ngap_codes;       /* global average pools whose GPU kernel reads a value's codes (lower_gap) */
    bool batch_alts;      /* steps may get a batch alternative (new_batch_alt; tunable_alts) */
    int nbatch_alts;      /* how many did, for --report */
    int nbeside_runs;     /* runs of steps beside others (mark_beside_runs), for --report */
    int min_sm;           /* the lowest target's sm (0: no GPU target) */
    bool sm90a;           /* a target is sm_90a (wgmma kernels, in that CUBIN only) */
    int nqgemm_tiled;     /* qgemm steps with a pre-tiled batch alternative (qgemm_tiled_alt) */
    int nqgemm_int8_wide; /* int8 qgemm steps with a 128 x 128 tile batch alternative (qgemm_int8_wide_alt) */
    int nqgemm_int8_wgmma; /* int8 qgemm steps with a wgmma alternative (qgemm_int8_wgmma_alt) */
    int ncast_affines;    /* casts whose affines run in their GPU pass (fuse_cast_affines) */
    int ngap_denses;      /* pools of bits computed in the dense kernel after them (fuse_gap_dense) */
    int tiled_kernel; /* codegen_tiled_kernel of the options: which pre-tiled GEMM the targets run */
    int ntiled;       /* pre-tiled bgemm steps, for --report */
    int lowbit;       /* CodegenOptions.lowbit: bit-planes or int8 codes for the qgemm steps */
    int nqgemm_int8, nqgemm_planes; /* qgemm steps of each kind, for --report */
    int nqconv_int8, nqconv_planes; /* low-bit convolutions of each kind, for --report */
    int nqconv_int8_wgmma;          /* int8 convolutions with a wgmma alternative (qconv_int8_wgmma_alt) */
    const int *tune_choice; /* CodegenOptions.tune_choice, ntune_choice */
    int ntune_choice;
    CodegenTunable *tunables; /* the layers with a choice of kernel configuration */
    int ntunables, cap_tunables;
    int ntuned; /* of them, on a candidate other than the cost model's */
} Lower;

/* ---------------------------------------------------------------- small helpers */

static char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *str_printf(const char *fmt, ...) {
    Buf b = {0};
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    return buf_take(&b);
}

static int fail_node(Lower *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail_node(Lower *L, const char *fmt, ...) {
    char where[256], msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error("%s: %s", node_where(L->node, where, sizeof where), msg);
    return -1;
}

/* An op (or a form of one) the plan cannot express. */
static int unsupported(Lower *L, const char *what) {
    return fail_node(L, "no code generator for %s yet; run it with bnnrun --reference", what);
}

static int unsupported_op(Lower *L) {
    char what[96];
    snprintf(what, sizeof what, "'%s'", op_info(L->node->op)->name);
    return unsupported(L, what);
}

static int64_t dim_or_one(int64_t d) { return d == DIM_BATCH ? 1 : d; }

/* Elements per batch item. */
static int64_t item_numel(const Type *t) {
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= dim_or_one(t->dim[i]);
    return n;
}

/* Product of the dimensions after the channel axis (1 for [N,C]). */
static int64_t spatial_of(const Type *t) {
    int64_t n = 1;
    for (int i = 2; i < t->rank; i++)
        n *= t->dim[i];
    return n;
}

/* Words per pixel of a b1 tensor in its chosen format; 0 when it is canonical or in a
 * tiled order (no step reads those yet: the ops on it are refused). */
static int64_t packed_words(const Type *t) {
    if (t->pack.word_bits == 0 || t->pack.tile != TILE_NONE || t->rank < 2)
        return 0;
    int64_t unit = t->pack.pad_to > 32 ? t->pack.pad_to : 32;
    return (t->dim[1] + unit - 1) / unit * unit / 32;
}

static int64_t dtype_size(DType t) { return t == TY_B1 ? 0 : dtype_bits(t) / 8; }

/* Bytes per batch item as the steps read and write it. */
static int64_t value_bytes(const Type *t) {
    if (t->dtype != TY_B1)
        return item_numel(t) * dtype_size(t->dtype);
    if (t->pack.tile != TILE_NONE) /* tile-major [N,K]: K padded, compact row tiles */
        return t->pack.pad_to / 8;
    int64_t words = packed_words(t);
    if (words)
        return spatial_of(t) * words * 4;
    return (item_numel(t) + 7) / 8;
}

static BlobDType blob_dtype(DType t) {
    switch (t) {
    case TY_F32: return BLOB_DTYPE_F32;
    case TY_F16: return BLOB_DTYPE_F16;
    case TY_I64: return BLOB_DTYPE_I64;
    case TY_I32: return BLOB_DTYPE_I32;
    case TY_I8: return BLOB_DTYPE_I8;
    case TY_U8: return BLOB_DTYPE_U8;
    case TY_B1: return BLOB_DTYPE_B1;
    case TY_COUNT: break;
    }
    unreachable("bad dtype %d", (int)t);
}

static bool is_output(const Graph *g, const Value *v) {
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == v)
            return true;
    return false;
}

/* The one node reading v (v not a graph output), or NULL. */
static Node *only_user(const Graph *g, const Value *v) {
    if (is_output(g, v) || count_uses(g, v) != 1)
        return NULL;
    for (int i = 0; i < g->nnodes; i++) {
        Node *n = g->nodes[i];
        if (n->dead)
            continue;
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] == v)
                return n;
    }
    return NULL;
}

static int node_index(const Graph *g, const Node *n) {
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i] == n)
            return i;
    unreachable("node not in graph");
}

/* Element i of a numeric constant as double. */
static double const_at(const Value *k, int64_t i) {
    const void *d = k->data;
    switch (k->type.dtype) {
    case TY_F32: return ((const float *)d)[i];
    case TY_I32: return ((const int32_t *)d)[i];
    case TY_I64: return (double)((const int64_t *)d)[i];
    case TY_I8: return ((const int8_t *)d)[i];
    case TY_U8: return ((const uint8_t *)d)[i];
    case TY_B1: return bit_get(d, i) ? 1.0 : -1.0;
    default: break;
    }
    unreachable("constant of dtype %s", dtype_name(k->type.dtype));
}

/* ---------------------------------------------------------------- buffers and steps */

static int new_buf(Lower *L, int64_t bytes) {
    if (L->nbufs == L->cap_bufs) {
        L->cap_bufs = L->cap_bufs ? 2 * L->cap_bufs : 32;
        L->bufs = xrealloc(L->bufs, (size_t)L->cap_bufs * sizeof *L->bufs);
    }
    L->bufs[L->nbufs] = (LBuf){bytes > 0 ? bytes : 4, INT_MAX, -1, false, 0};
    return L->nbufs++;
}

/* The arena buffer of a value computed earlier (or a graph input). */
static int buf_of(Lower *L, const Value *v) {
    if (v->kind == VAL_CONST || L->vbuf[v->id] < 0)
        unreachable("value '%s' has no arena buffer", v->name);
    return L->vbuf[v->id];
}

static int def_buf(Lower *L, const Value *v) {
    int b = new_buf(L, value_bytes(&v->type));
    L->vbuf[v->id] = b;
    return b;
}

/* A new step for the current node; the pointer is valid until the next new_step. */
static LStep *new_step(Lower *L, BlobStepKind kind) {
    if (L->nsteps == L->cap_steps) {
        L->cap_steps = L->cap_steps ? 2 * L->cap_steps : 32;
        L->steps = xrealloc(L->steps, (size_t)L->cap_steps * sizeof *L->steps);
    }
    LStep *st = &L->steps[L->nsteps++];
    memset(st, 0, sizeof *st);
    st->s.kind = kind;
    for (int i = 0; i < BLOB_MAX_SLOTS; i++)
        st->buf[i] = -1;
    st->k.ir_line = L->node ? L->ir_lines[L->node_index] : NULL;
    return st;
}

static void use_arena(Lower *L, LStep *st, int slot, int buf) {
    st->s.slot[slot] = blob_arena_ref(0, (uint64_t)L->bufs[buf].bytes);
    st->buf[slot] = buf;
}

static BlobRef put_weights(Lower *L, const void *data, size_t n) { return blob_add_weights(L->w, data, n); }

/* A batch alternative of step si (BLOB_STEP_BATCH_ALT; docs/codegen.md "Batch alternatives"): a
 * new step right after the last so far, step si or an alternative of it from a smaller batch,
 * with its kind, operands, parameters and IR line and no kernel yet, which the GPU runs instead
 * from batch alt_batch on. The caller gives it its kernel. */
static LStep *new_batch_alt(Lower *L, int si, uint32_t alt_batch) {
    LStep *alt = new_step(L, L->steps[si].s.kind);
    const LStep *m = &L->steps[si];
    memcpy(alt->s.slot, m->s.slot, sizeof m->s.slot);
    memcpy(alt->buf, m->buf, sizeof m->buf);
    memcpy(alt->s.params, m->s.params, sizeof m->s.params);
    alt->s.epilogue = m->s.epilogue;
    alt->k.ir_line = m->k.ir_line; /* the same step's: also when made after the node's lowering */
    alt->s.flags = BLOB_STEP_BATCH_ALT;
    alt->s.alt_batch = alt_batch;
    L->nbatch_alts++;
    return alt;
}

/* Step s's batch alternatives (the steps right after it) removed, the steps after them moved
 * down (the tunables' indices with them). */
static void drop_batch_alts(Lower *L, int s) {
    int alts = 0;
    while (s + 1 + alts < L->nsteps && (L->steps[s + 1 + alts].s.flags & BLOB_STEP_BATCH_ALT))
        alts++;
    for (int a = s + 1; a < s + 1 + alts; a++) {
        free(L->steps[a].k.defines);
        free(L->steps[a].k.call);
    }
    memmove(&L->steps[s + 1], &L->steps[s + 1 + alts], (size_t)(L->nsteps - (s + 1 + alts)) * sizeof *L->steps);
    L->nsteps -= alts;
    L->nbatch_alts -= alts;
    for (int t = 0; t < L->ntunables; t++)
        L->tunables[t].step -= L->tunables[t].step > s ? alts : 0;
}

static void name_kernel(Lower *L, LStep *st, const char *tag) {
    snprintf(st->k.name, sizeof st->k.name, "s%d_%s", (int)(st - L->steps), tag);
    st->has_kernel = true;
}

/* The six operand slots and x0 as kernel arguments, a null (0) where a slot is unused. */
static void add_operand_args(LStep *st) {
    static const int slots[7] = {BLOB_SLOT_IN, BLOB_SLOT_IN2, BLOB_SLOT_OUT, BLOB_SLOT_W,
                                 BLOB_SLOT_P0, BLOB_SLOT_P1, BLOB_SLOT_X0};
    for (int i = 0; i < 7; i++) {
        if (st->s.slot[slots[i]].space != BLOB_SPACE_NONE)
            blob_step_add_arg(&st->s, BLOB_ARG_PTR, (uint32_t)slots[i], 0);
        else
            blob_step_add_arg(&st->s, BLOB_ARG_I64, 0, 0);
    }
}

/* A float step's GPU kernel: one thread per work item, count items per batch item; the
 * arguments are the six operand slots (null where unused) and the total item count. */
static void float_kernel(Lower *L, LStep *st, const char *tag, int64_t count, char *call) {
    name_kernel(L, st, tag);
    st->k.family = KERNEL_FLOAT;
    st->k.count = count;
    st->k.call = call;
    BlobGridDim grid[3] = {{0, (uint32_t)count, FLOAT_BLOCK}, {1, 0, 1}, {1, 0, 1}};
    uint32_t block[3] = {FLOAT_BLOCK, 1, 1};
    blob_step_set_kernel(&st->s, st->k.name, grid, block, 0);
    add_operand_args(st);
    blob_step_add_arg(&st->s, BLOB_ARG_BATCH, 0, count);
}

/* ---------------------------------------------------------------- binary layers */

/* Words per pixel of a b1 value as stored: its format's, or for a canonical [N,32k] the
 * same bytes read as k words; 0 when neither. */
static int64_t stored_words(const Type *t) {
    int64_t w = packed_words(t);
    if (!w && t->pack.tile == TILE_NONE && t->rank == 2 && t->dim[1] % 32 == 0)
        w = t->dim[1] / 32;
    return w;
}


/* Thresholds and directions of a fused layer as the epilogue reads them: i32[o] each. */
static void put_thresholds(Lower *L, LStep *st, const Value *t, const Value *dir, int64_t o) {
    int32_t *tv = xmalloc((size_t)o * 4), *dv = xmalloc((size_t)o * 4);
    for (int64_t c = 0; c < o; c++) {
        tv[c] = (int32_t)const_at(t, t->type.dim[0] == 1 ? 0 : c);
        dv[c] = dir ? (const_at(dir, dir->type.dim[0] == 1 ? 0 : c) < 0 ? -1 : 1) : 1;
    }
    st->s.slot[BLOB_SLOT_P0] = put_weights(L, tv, (size_t)o * 4);
    st->s.slot[BLOB_SLOT_P1] = put_weights(L, dv, (size_t)o * 4);
    free(tv);
    free(dv);
}

/* The float epilogue of a binary layer whose accumulator is cast to f32: scale 1, bias -0
 * (x + -0 is x for every x, so the cast stays exact). */
static void put_cast_epilogue(Lower *L, LStep *st, int64_t o) {
    float *s = xmalloc((size_t)o * 4), *b = xmalloc((size_t)o * 4);
    for (int64_t c = 0; c < o; c++)
        s[c] = 1.0f, b[c] = -0.0f;
    st->s.slot[BLOB_SLOT_P0] = put_weights(L, s, (size_t)o * 4);
    st->s.slot[BLOB_SLOT_P1] = put_weights(L, b, (size_t)o * 4);
    free(s);
    free(b);
}

/* The words per row of a bit result: its format's, or for a canonical b1 graph output of
 * [N,C] with C a multiple of 32, C/32 (then both storages are the same bytes). */
static int out_words(Lower *L, const Value *v, int64_t *words) {
    *words = packed_words(&v->type);
    if (*words)
        return 0;
    if (v->type.rank == 2 && v->type.dim[1] % 32 == 0) {
        *words = v->type.dim[1] / 32;
        return 0;
    }
    return unsupported(L, "a b1 graph output other than [N, 32*k] (its bits are stored "
                          "NHWC-packed); end the model on a float or integer value");
}

/* Per-layer choices from what follows the accumulator: a threshold (bits), a cast (f32),
 * or the plain i32. */
typedef struct Epilogue {
    uint32_t kind;
    const Value *out; /* the value the step writes */
    const Value *t, *dir;
    float *scale, *bias; /* AFFINE: per output channel (malloc'ed) */
    /* AFFINE of a convolution: the float chain (blob-format.md "bconv"), stage k's a_k and b_k
     * at chain[(2k)*o] and chain[(2k+1)*o]; then out = v + residual (res 1) or residual + v
     * (res 2); bits: a fused binarize's output, written besides or instead of out (need_f32). */
    int stages, res;
    uint32_t div;
    float *chain;
    const Value *residual, *bits;
    bool need_f32;
    /* bconv2d_chain: the stage after which a relu ends the kernel's part (the rest runs as
     * later steps, lower_chain_rest), or -1; pack_bits: its bits come from a pack step. */
    int rest_from;
    bool pack_bits;
} Epilogue;

static float *broadcast_const(const Value *k, const Type *x, int64_t *channels, int64_t *spatial);

/* The values of the constant operand of m, an elementwise op reading x, when they have
 * the shape (channels, spatial) of x's other affine parameters; else NULL. */
static float *affine_operand(const Node *m, const Value *x, int64_t channels, int64_t spatial) {
    if (m->nin != 2 || (m->in[0] != x && m->in[1] != x) || !type_equal(&m->out[0]->type, &x->type) ||
        x->type.dtype != TY_F32)
        return NULL;
    const Value *k = m->in[0] == x ? m->in[1] : m->in[0];
    if (k->kind != VAL_CONST || k->type.dtype != TY_F32)
        return NULL;
    int64_t c, sp;
    float *v = broadcast_const(k, &x->type, &c, &sp);
    if (v && (c != channels || sp != spatial)) {
        free(v);
        v = NULL;
    }
    return v;
}

/* Fold what follows v into y = v * scale + bias (scale and bias hold the identity 1 and
 * -0 on entry, or after a mul/div only the identity bias), as long as that computes the
 * very same float operations: a mul by a constant (when allow_mul), then an add or a
 * subtraction of a constant. Each folded op must be the only user of the previous value.
 * Returns the last value folded in. */
static const Value *absorb_affine(Lower *L, const Value *v, float *scale, float *bias, int64_t channels,
                                  int64_t spatial, bool allow_mul) {
    Node *m = only_user(L->g, v);
    float *k;
    if (allow_mul && m && m->op == OP_MUL && (k = affine_operand(m, v, channels, spatial))) {
        memcpy(scale, k, (size_t)channels * 4);
        free(k);
        L->done[node_index(L->g, m)] = true;
        v = m->out[0];
        m = only_user(L->g, v);
    }
    if (m && (m->op == OP_ADD || (m->op == OP_SUB && m->in[0] == v)) &&
        (k = affine_operand(m, v, channels, spatial))) {
        for (int64_t c = 0; c < channels; c++)
            bias[c] = m->op == OP_SUB ? -k[c] : k[c];
        free(k);
        L->done[node_index(L->g, m)] = true;
        v = m->out[0];
    }
    return v;
}

/* Append the stage v = v * a + b (v / a + b where div) to a convolution's float chain. A plain
 * add (a = 1) merges into a previous stage whose bias is -0: v*a + -0 is v*a exactly, so
 * (v*a) + b rounds as the two separate ops do. False when the chain is full. */
static bool push_stage(Epilogue *e, int64_t o, const float *a, const float *b, bool div) {
    bool plain_add = !div, prev_zero = e->stages > 0;
    const float *pb = e->stages ? e->chain + (2 * e->stages - 1) * o : NULL;
    for (int64_t c = 0; c < o; c++) {
        plain_add = plain_add && a[c] == 1.0f;
        prev_zero = prev_zero && pb[c] == 0.0f && signbit(pb[c]);
    }
    if (plain_add && prev_zero) {
        memcpy(e->chain + (2 * e->stages - 1) * o, b, (size_t)o * 4);
        return true;
    }
    if (e->stages == BLOB_EPI_MAX_STAGES)
        return false;
    e->chain = xrealloc(e->chain, (size_t)(2 * (e->stages + 1) * o) * 4);
    memcpy(e->chain + 2 * e->stages * o, a, (size_t)o * 4);
    memcpy(e->chain + (2 * e->stages + 1) * o, b, (size_t)o * 4);
    if (div)
        e->div |= 1u << e->stages;
    e->stages++;
    return true;
}

/* The epilogue of a bconv2d_chain (docs/ir.md), read from the op: its stages up to the first
 * relu in the kernel's chain, then (when nothing follows in the op) the residual add and the
 * bits. A relu, and what comes after it, run as later steps (the kernel has no relu stage). */
static void chain_epilogue(Lower *L, const Node *n, Epilogue *e) {
    const Value *chain = n->in[2], *y = n->out[0], *bits = n->out[1];
    int64_t o = y->type.dim[1], S = chain->type.dim[0];
    int64_t div[CHAIN_MAX_STAGES] = {0}, relu[CHAIN_MAX_STAGES] = {0};
    attr_ints(n, "div", div, CHAIN_MAX_STAGES, 0, NULL);
    attr_ints(n, "relu", relu, CHAIN_MAX_STAGES, 0, NULL);
    int kernel_stages = (int)S;
    for (int s = 0; s < S; s++)
        if (relu[s]) {
            kernel_stages = s + 1;
            break;
        }
    e->kind = BLOB_EPI_AFFINE;
    e->out = y;
    e->stages = kernel_stages;
    e->chain = xmalloc((size_t)(2 * kernel_stages * o) * 4);
    memcpy(e->chain, chain->data, (size_t)(2 * kernel_stages * o) * 4);
    for (int s = 0; s < kernel_stages; s++)
        e->div |= div[s] ? 1u << s : 0;
    e->rest_from = relu[kernel_stages - 1] ? kernel_stages : -1;
    bool bits_used = count_uses(L->g, bits) > 0;
    if (e->rest_from < 0) {
        e->residual = n->nin == 4 ? n->in[3] : NULL;
        e->res = e->residual ? (attr_int(n, "residual_first", 0) ? 2 : 1) : 0;
        if (bits_used && attr_int(n, "zero", 1) == 1 && packed_words(&bits->type))
            e->bits = bits;
    }
    e->pack_bits = bits_used && !e->bits;
    e->need_f32 = !e->bits || count_uses(L->g, y) > 0;
}

/* The epilogue of a bdense_chain: bgemm's affine epilogue computes its first stage when that
 * multiplies (v*a + b, rounded as the op does), else the cast (1, -0); lower_chain_rest the
 * rest from rest_from on. */
static void dense_chain_epilogue(const Node *n, Epilogue *e) {
    const Value *chain = n->in[2];
    int64_t o = chain->type.dim[2], div[CHAIN_MAX_STAGES] = {0};
    attr_ints(n, "div", div, CHAIN_MAX_STAGES, 0, NULL);
    e->kind = BLOB_EPI_AFFINE;
    e->out = n->out[0];
    e->scale = xmalloc((size_t)o * 4);
    e->bias = xmalloc((size_t)o * 4);
    for (int64_t c = 0; c < o; c++) {
        e->scale[c] = div[0] ? 1.0f : ((const float *)chain->data)[c];
        e->bias[c] = div[0] ? -0.0f : ((const float *)chain->data)[o + c];
    }
    e->rest_from = div[0] ? 0 : 1;
}

static int choose_epilogue(Lower *L, const Node *layer, const Value *t, const Value *dir, Epilogue *e) {
    const Graph *g = L->g;
    memset(e, 0, sizeof *e);
    e->rest_from = -1;
    if (layer->op == OP_BCONV2D_CHAIN) {
        chain_epilogue(L, layer, e);
        return 0;
    }
    if (layer->op == OP_BDENSE_CHAIN) {
        dense_chain_epilogue(layer, e);
        return 0;
    }
    e->out = layer->out[0];
    if (layer->op == OP_BDENSE || layer->op == OP_BCONV2D) {
        e->kind = BLOB_EPI_THRESHOLD;
        e->t = t, e->dir = dir;
        return 0;
    }
    e->kind = BLOB_EPI_I32;
    Node *u = only_user(g, layer->out[0]);
    if (u && u->op == OP_THRESHOLD && u->in[1]->kind == VAL_CONST && u->in[1]->type.rank == 1 &&
        (u->nin < 3 || u->in[2]->kind == VAL_CONST)) {
        e->kind = BLOB_EPI_THRESHOLD;
        e->out = u->out[0];
        e->t = u->in[1];
        e->dir = u->nin == 3 ? u->in[2] : NULL;
        L->done[node_index(g, u)] = true;
    } else if (u && u->op == OP_CAST && u->out[0]->type.dtype == TY_F32) {
        /* (float)acc * 1 + -0 is the cast, exactly; a scale and a bias may follow. */
        e->kind = BLOB_EPI_AFFINE;
        L->done[node_index(g, u)] = true;
        int64_t o = layer->out[0]->type.dim[1], sp = spatial_of(&layer->out[0]->type);
        e->scale = xmalloc((size_t)o * 4);
        e->bias = xmalloc((size_t)o * 4);
        for (int64_t c = 0; c < o; c++)
            e->scale[c] = 1.0f, e->bias[c] = -0.0f;
        e->out = absorb_affine(L, u->out[0], e->scale, e->bias, o, sp, true);
        if (layer->op == OP_CONV2D) { /* a one-stage chain (fuse-epilogue makes longer ones) */
            push_stage(e, o, e->scale, e->bias, false);
            e->need_f32 = true;
        }
    }
    return 0;
}

static void set_epilogue_operands(Lower *L, LStep *st, const Epilogue *e, int64_t o) {
    st->s.epilogue = e->kind;
    if (e->kind == BLOB_EPI_THRESHOLD)
        put_thresholds(L, st, e->t, e->dir, o);
    else if (e->stages) /* a convolution's chain: all stages in p0 */
        st->s.slot[BLOB_SLOT_P0] = put_weights(L, e->chain, (size_t)(2 * e->stages * o) * 4);
    else if (e->kind == BLOB_EPI_AFFINE && e->scale) {
        st->s.slot[BLOB_SLOT_P0] = put_weights(L, e->scale, (size_t)o * 4);
        st->s.slot[BLOB_SLOT_P1] = put_weights(L, e->bias, (size_t)o * 4);
    } else if (e->kind == BLOB_EPI_AFFINE) {
        put_cast_epilogue(L, st, o);
    }
}

static void free_epilogue(Epilogue *e) {
    free(e->scale);
    free(e->bias);
    free(e->chain);
    e->scale = e->bias = e->chain = NULL;
}

static const char *epi_macro(const Epilogue *e) {
    return e->kind == BLOB_EPI_THRESHOLD ? "BNN_EPI_THRESHOLD"
           : e->stages                   ? "BNN_EPI_CHAIN"
           : e->kind == BLOB_EPI_AFFINE  ? "BNN_EPI_AFFINE"
                                         : "BNN_EPI_I32";
}

/* The last kernel arguments of the binary GEMM / conv kernels: ep0, ep1 (null where unused),
 * Y, the operand in slot `extra` where it is >= 0 (bconv's residual of bits, BC_RESW), batch *
 * rows_arg. */
static void add_epilogue_args(LStep *st, int64_t rows_arg, int extra) {
    for (int slot = BLOB_SLOT_P0; slot <= BLOB_SLOT_P1; slot++)
        if (st->s.slot[slot].space != BLOB_SPACE_NONE)
            blob_step_add_arg(&st->s, BLOB_ARG_PTR, (uint32_t)slot, 0);
        else
            blob_step_add_arg(&st->s, BLOB_ARG_I64, 0, 0);
    blob_step_add_arg(&st->s, BLOB_ARG_PTR, BLOB_SLOT_OUT, 0);
    if (extra >= 0)
        blob_step_add_arg(&st->s, BLOB_ARG_PTR, (uint32_t)extra, 0);
    blob_step_add_arg(&st->s, BLOB_ARG_BATCH, 0, rows_arg);
}

/* Kernel arguments of both families: X, W, popc table, then add_epilogue_args'. */
static void add_family_args(LStep *st, int64_t rows_arg, int extra) {
    blob_step_add_arg(&st->s, BLOB_ARG_PTR, BLOB_SLOT_IN, 0);
    blob_step_add_arg(&st->s, BLOB_ARG_PTR, BLOB_SLOT_W, 0);
    blob_step_add_arg(&st->s, BLOB_ARG_PTR, BLOB_SLOT_X0, 0);
    add_epilogue_args(st, rows_arg, extra);
}

/* Kernel arguments of a bconv chain: X, W, popc table, chain parameters, residual, f32 out,
 * bits out (slot bits_slot), batch; the absent ones null. */
static void add_chain_args(LStep *st, bool f32, int bits_slot) {
    blob_step_add_arg(&st->s, BLOB_ARG_PTR, BLOB_SLOT_IN, 0);
    blob_step_add_arg(&st->s, BLOB_ARG_PTR, BLOB_SLOT_W, 0);
    blob_step_add_arg(&st->s, BLOB_ARG_PTR, BLOB_SLOT_X0, 0);
    blob_step_add_arg(&st->s, BLOB_ARG_PTR, BLOB_SLOT_P0, 0);
    int slots[3] = {st->s.slot[BLOB_SLOT_IN2].space != BLOB_SPACE_NONE ? BLOB_SLOT_IN2 : -1,
                    f32 ? BLOB_SLOT_OUT : -1, bits_slot};
    for (int i = 0; i < 3; i++)
        if (slots[i] >= 0)
            blob_step_add_arg(&st->s, BLOB_ARG_PTR, (uint32_t)slots[i], 0);
        else
            blob_step_add_arg(&st->s, BLOB_ARG_I64, 0, 0);
    blob_step_add_arg(&st->s, BLOB_ARG_BATCH, 0, 1);
}

static int lower_chain_rest(Lower *L, const Node *n, int cur, const Type *t, int first, bool relu_due,
                            bool pack_bits);

/* Low-bit helpers defined with the low-bit layers below. */
static int64_t code_planes(const Value *v);
static int64_t image_ldw(int64_t channels);
static int image_codes_readers_ok(Lower *L, const Value *v);
static int lower_quantize_image(Lower *L, int in, const Value *y, BlobQuantizeParams qp);
static void emit_dequant(Lower *L, int in, int out, BlobQuantizeParams qp);
static BlobQuantizeParams chain_quantizer(const Node *n, int64_t k);

/* dense over b1 x b1 (bdense, bdense_chain, or dense with its threshold / cast) -> one bgemm
 * step (a bdense_chain's further stages, residual and bits: lower_chain_rest's steps). */
static int lower_bgemm_tiled(Lower *L, const Node *n, const Value *t, const Value *dir);

static int lower_bgemm(Lower *L, const Node *n, const Value *t, const Value *dir) {
    const Value *x = n->in[0], *w = n->in[1];
    if (x->type.pack.tile != TILE_NONE)
        return lower_bgemm_tiled(L, n, t, dir);
    if (w->kind != VAL_CONST)
        return unsupported(L, "a binary dense layer with non-constant weights");
    int64_t k = x->type.dim[1], o = w->type.dim[0], words = stored_words(&x->type);
    if (x->type.rank != 2 || !words || words % 4)
        return unsupported(L, "a binary dense layer on this input format");
    Epilogue e;
    choose_epilogue(L, n, t, dir, &e);
    int64_t owords = 0;
    if (e.kind == BLOB_EPI_THRESHOLD && out_words(L, e.out, &owords))
        return -1;
    /* W as o rows of `words` words, bit k%32 of word k/32; popc of each row for the GPU. */
    uint32_t *wb = xcalloc((size_t)(o * words), 4);
    int32_t *wpop = xcalloc((size_t)o, 4);
    for (int64_t r = 0; r < o; r++)
        for (int64_t i = 0; i < k; i++)
            if (bit_get(w->data, r * k + i)) {
                wb[r * words + i / 32] |= 1u << (i % 32);
                wpop[r]++;
            }
    int in = buf_of(L, x);
    int rest_from = e.rest_from; /* a bdense_chain: the value goes on to lower_chain_rest */
    int out = n->op == OP_BDENSE_CHAIN ? new_buf(L, value_bytes(&e.out->type)) : def_buf(L, e.out);
    LStep *st = new_step(L, BLOB_STEP_BGEMM);
    use_arena(L, st, BLOB_SLOT_IN, in);
    use_arena(L, st, BLOB_SLOT_OUT, out);
    st->s.slot[BLOB_SLOT_W] = put_weights(L, wb, (size_t)(o * words) * 4);
    st->s.slot[BLOB_SLOT_X0] = put_weights(L, wpop, (size_t)o * 4);
    free(wb);
    free(wpop);
    set_epilogue_operands(L, st, &e, o);
    free_epilogue(&e);
    st->s.bgemm = (BlobBgemmParams){.rows = 1, .n = o, .k = k, .words = words, .out_words = owords};
    name_kernel(L, st, "bgemm");
    st->k.family = KERNEL_BGEMM;
    st->k.defines = str_printf("#define BG_NAME %s\n#define BG_N %lld\n#define BG_K %lld\n#define BG_EPI %s\n"
                               "#define BG_LDA %lld\n#define BG_LDW %lld\n#define BG_LDY %lld\n",
                               st->k.name, (long long)o, (long long)k, epi_macro(&e), (long long)words,
                               (long long)words, (long long)(owords ? owords : o));
    BlobGridDim grid[3] = {{(uint32_t)((o + BNN_BGEMM_BN - 1) / BNN_BGEMM_BN), 0, 1}, {0, 1, BNN_BGEMM_BM}, {1, 0, 1}};
    uint32_t block[3] = {(uint32_t)bnn_tile_threads(BNN_BGEMM_WM, BNN_BGEMM_WN), 1, 1};
    blob_step_set_kernel(&st->s, st->k.name, grid, block,
                         (uint32_t)bnn_tile_smem(BNN_BGEMM_BM, BNN_BGEMM_BN, BNN_BGEMM_KC, BNN_BGEMM_STAGES));
    add_family_args(st, 1, -1);
    if (n->op == OP_BDENSE_CHAIN)
        return lower_chain_rest(L, n, out, &n->out[0]->type, rest_from, true, count_uses(L->g, n->out[1]) > 0);
    return 0;
}

/* A layer whose operands choose-formats made tile-major (docs/passes.md) -> a GPU-only
 * `kernel` step counting popc(a) of each row of A (bnn_tiled_row_popc_c, into an arena
 * scratch) and a bgemm step with in_tile 128 / w_tile 256 (and out_tile 128 where its bits
 * are tile-major too) on the pre-tiled kernel: bgemm_wgmma.cu when every target is sm_90a,
 * else bgemm_tiled.cu. The weights are stored as the kernel's W image, built here. */
static int lower_bgemm_tiled(Lower *L, const Node *n, const Value *t, const Value *dir) {
    const Value *x = n->in[0], *w = n->in[1];
    int64_t k = x->type.dim[1], o = w->type.dim[0], kpad = x->type.pack.pad_to, nch = kpad / 128;
    if (w->kind != VAL_CONST || x->type.pack.tile != TILE_K128 || w->type.pack.tile != TILE_K256 ||
        w->type.pack.pad_to != kpad || kpad % (BNN_TILED_KC * 128) || k > kpad || w->type.dim[1] != k)
        return unsupported(L, "a binary dense layer on these tile-major operands (k128 activations and "
                              "k256 constant weights padded to a multiple of 1024 bits)");
    if (L->tiled_kernel == 0)
        return fail_node(L, "tile-major operands need the pre-tiled GEMM kernels, which need sm_90 or newer: "
                            "compile for sm_90/sm_90a (or cpu) only, or recompile the model with --formats=plain");
    Epilogue e;
    choose_epilogue(L, n, t, dir, &e);
    int64_t owords = 0, out_tile = 0;
    if (e.kind == BLOB_EPI_THRESHOLD && e.out->type.pack.tile == TILE_K128) {
        out_tile = 128;
        owords = e.out->type.pack.pad_to / 32;
    } else if (e.out->type.pack.tile != TILE_NONE) {
        free_epilogue(&e);
        return unsupported(L, "a tile-major result of this layer's epilogue");
    } else if (e.kind == BLOB_EPI_THRESHOLD && out_words(L, e.out, &owords)) {
        free_epilogue(&e);
        return -1;
    }
    /* W: o rows of kpad bits in 256-row tiles (the last one compact); popc of each row. */
    unsigned char *wt = xcalloc((size_t)(o * nch * 16), 1);
    int32_t *wpop = xcalloc((size_t)o, 4);
    for (int64_t r = 0; r < o; r++)
        for (int64_t i = 0; i < k; i++)
            if (bit_get(w->data, r * k + i)) {
                wt[blob_row_byte(r, i / 8, o, 256, kpad / 8)] |= (unsigned char)(1u << (i % 8));
                wpop[r]++;
            }
    int in = buf_of(L, x), apop = new_buf(L, 4);
    LStep *pc = new_step(L, BLOB_STEP_KERNEL);
    use_arena(L, pc, BLOB_SLOT_IN, in);
    use_arena(L, pc, BLOB_SLOT_OUT, apop);
    BlobGridDim pgrid[3] = {{0, 1, 32}, {1, 0, 1}, {1, 0, 1}};
    uint32_t pblock[3] = {32, 8, 1};
    blob_step_set_kernel(&pc->s, "bnn_tiled_row_popc_c", pgrid, pblock, 0);
    blob_step_add_arg(&pc->s, BLOB_ARG_PTR, BLOB_SLOT_IN, 0);
    blob_step_add_arg(&pc->s, BLOB_ARG_BATCH, 0, 1);
    blob_step_add_arg(&pc->s, BLOB_ARG_I32, 0, 128);
    blob_step_add_arg(&pc->s, BLOB_ARG_I32, 0, nch);
    blob_step_add_arg(&pc->s, BLOB_ARG_PTR, BLOB_SLOT_OUT, 0);

    int rest_from = e.rest_from;
    int out = n->op == OP_BDENSE_CHAIN ? new_buf(L, value_bytes(&e.out->type)) : def_buf(L, e.out);
    LStep *st = new_step(L, BLOB_STEP_BGEMM);
    use_arena(L, st, BLOB_SLOT_IN, in);
    use_arena(L, st, BLOB_SLOT_OUT, out);
    use_arena(L, st, BLOB_SLOT_X1, apop);
    st->s.slot[BLOB_SLOT_W] = put_weights(L, wt, (size_t)(o * nch * 16));
    st->s.slot[BLOB_SLOT_X0] = put_weights(L, wpop, (size_t)o * 4);
    free(wt);
    free(wpop);
    set_epilogue_operands(L, st, &e, o);
    st->s.bgemm = (BlobBgemmParams){.rows = 1, .n = o, .k = k, .words = kpad / 32, .out_words = owords,
                                    .in_tile = 128, .w_tile = 256, .out_tile = out_tile};
    bool wg = L->tiled_kernel == 2;
    name_kernel(L, st, wg ? "bgemm_wgmma" : "bgemm_tiled");
    st->k.family = wg ? KERNEL_BGEMM_WGMMA : KERNEL_BGEMM_TILED;
    const char *pre = wg ? "BW" : "BT";
    st->k.defines = str_printf("#define %s_NAME %s\n#define %s_N %lld\n#define %s_K %lld\n#define %s_EPI %s\n"
                               "#define %s_LDY %lld\n#define %s_COMPACT 1\n#define %s_YTILE %lld\n",
                               pre, st->k.name, pre, (long long)o, pre, (long long)k, pre, epi_macro(&e), pre,
                               (long long)(owords ? owords : o), pre, pre, (long long)out_tile);
    free_epilogue(&e);
    /* Persistent blocks: one per output tile at least (ntn column tiles x ceil(batch/128) row
     * tiles <= ntn + ceil(batch*ntn/128)), the surplus returning at once; BLOB_STEP_PERSISTENT
     * caps them at the GPU's SMs, each walking several tiles. */
    uint32_t ntn = (uint32_t)((o + BNN_TILED_BN - 1) / BNN_TILED_BN);
    BlobGridDim grid[3] = {{ntn, ntn, BNN_TILED_BM}, {1, 0, 1}, {1, 0, 1}};
    uint32_t block[3] = {wg ? BNN_WGMMA_THREADS : (uint32_t)bnn_bgemm_tiled_threads(BNN_TILED_WM, BNN_TILED_WN), 1,
                         1};
    blob_step_set_kernel(&st->s, st->k.name, grid, block,
                         (uint32_t)bnn_bgemm_tiled_smem(BNN_TILED_BM, BNN_TILED_BN, BNN_TILED_KC, BNN_TILED_STAGES));
    st->s.flags |= BLOB_STEP_PERSISTENT; /* the runtime launches one block an SM at most */
    blob_step_add_arg(&st->s, BLOB_ARG_PTR, BLOB_SLOT_IN, 0);
    blob_step_add_arg(&st->s, BLOB_ARG_PTR, BLOB_SLOT_W, 0);
    blob_step_add_arg(&st->s, BLOB_ARG_PTR, BLOB_SLOT_X1, 0);
    blob_step_add_arg(&st->s, BLOB_ARG_PTR, BLOB_SLOT_X0, 0);
    add_epilogue_args(st, 1, -1);
    L->ntiled++;
    if (n->op == OP_BDENSE_CHAIN)
        return lower_chain_rest(L, n, out, &n->out[0]->type, rest_from, true, count_uses(L->g, n->out[1]) > 0);
    return 0;
}

/* ---------------------------------------------------------------- fused MLP (mlp_fused.cu) */

/* A chain of small binary dense layers runs on the GPU as one kernel (mlp_fused.cu, issue #6):
 * the lowering above makes its plan steps as usual, then fuse_mlp_chains finds them (consecutive
 * steps, each intermediate read by the next step only), marks them CPU-only (the CPU path runs
 * them as before) and adds one GPU-only `kernel` step after them that reads the chain's input,
 * writes its output and reads every parameter from the steps' own WEIGHTS bytes through one
 * window. Chain: [affine* pack | bits] bgemm ((affine* pack) bgemm)* affine*, every width at
 * most MLP_MAX_WIDTH, weights at most MLP_MAX_WEIGHTS (bigger layers keep the tensor-core
 * steps, which win at large batches). */
#define MLP_MAX_WIDTH 1024             /* 32 words of bits per lane */
#define MLP_MAX_WEIGHTS (128 * 1024)   /* bytes of weight rows the kernel reads (16-byte chunks) */
#define MLP_SMEM_WEIGHTS (48 * 1024)   /* staged in shared memory up to this, else read from global */
#define MLP_WARPS 8                    /* warps per block, one batch item each */

/* A step the fused kernel can take over: it has its own GPU kernel and reads IN, writes OUT. */
static bool mlp_plain(const LStep *st) {
    if (st->s.flags || !st->has_kernel || st->buf[BLOB_SLOT_IN] < 0 || st->buf[BLOB_SLOT_OUT] < 0 ||
        st->buf[BLOB_SLOT_IN] == st->buf[BLOB_SLOT_OUT])
        return false;
    for (int i = 0; i < BLOB_MAX_SLOTS; i++)
        if (i != BLOB_SLOT_IN && i != BLOB_SLOT_OUT && st->buf[i] >= 0)
            return false;
    return true;
}

/* Step a+1 is a plain step that reads what step a writes, and nothing else reads it. */
static bool mlp_link(const Lower *L, int a) {
    int b = a + 1, buf = L->steps[a].buf[BLOB_SLOT_OUT];
    if (b >= L->nsteps || !mlp_plain(&L->steps[b]) || L->bufs[buf].pinned || L->steps[b].buf[BLOB_SLOT_IN] != buf)
        return false;
    for (int s = 0; s < L->nsteps; s++)
        for (int i = 0; i < BLOB_MAX_SLOTS; i++)
            if (L->steps[s].buf[i] == buf && !(s == a && i == BLOB_SLOT_OUT) && !(s == b && i == BLOB_SLOT_IN))
                return false;
    return true;
}

/* An affine step over `count` floats per item, channel-major. */
static bool mlp_affine(const LStep *st, int64_t count) {
    const BlobAffineParams *p = &st->s.affine;
    return st->s.kind == BLOB_STEP_AFFINE && p->layout == BLOB_LAYOUT_CS && p->channels * p->spatial == count;
}

/* A pack of `count` floats per item into one row of bits. */
static bool mlp_pack(const LStep *st, int64_t count) {
    const BlobPackParams *p = &st->s.pack;
    return st->s.kind == BLOB_STEP_PACK && p->spatial == 1 && p->layout == BLOB_LAYOUT_CS && p->channels == count &&
           count <= MLP_MAX_WIDTH;
}

/* A dense bgemm over k bits stored in `words` words per item. */
static bool mlp_bgemm(const LStep *st, int64_t k, int64_t words) {
    const BlobBgemmParams *p = &st->s.bgemm;
    return st->s.kind == BLOB_STEP_BGEMM && !p->in_tile && !p->out_tile && p->rows == 1 && p->k == k &&
           p->words == words && p->n >= 1 &&
           p->n <= MLP_MAX_WIDTH && (st->s.epilogue == BLOB_EPI_THRESHOLD || st->s.epilogue == BLOB_EPI_I32 ||
                                     st->s.epilogue == BLOB_EPI_AFFINE);
}

/* The last step of the fusable chain that starts at step i, or -1. */
static int match_mlp_chain(const Lower *L, int i) {
    const LStep *s = L->steps;
    if (!mlp_plain(&s[i]))
        return -1;
    int j = i;
    int64_t width, words;
    if (s[i].s.kind == BLOB_STEP_AFFINE || s[i].s.kind == BLOB_STEP_PACK) {
        width = s[i].s.kind == BLOB_STEP_AFFINE ? s[i].s.affine.channels * s[i].s.affine.spatial
                                                : s[i].s.pack.channels;
        for (; mlp_affine(&s[j], width); j++)
            if (!mlp_link(L, j))
                return -1;
        if (!mlp_pack(&s[j], width) || !mlp_link(L, j))
            return -1;
        words = s[j++].s.pack.words;
    } else if (s[i].s.kind == BLOB_STEP_BGEMM) {
        width = s[i].s.bgemm.k, words = s[i].s.bgemm.words;
        if (width > MLP_MAX_WIDTH)
            return -1;
    } else {
        return -1;
    }
    for (;;) { /* s[j] is the next layer's candidate */
        if (!mlp_bgemm(&s[j], width, words))
            return -1; /* (only the first layer can fail here) */
        const LStep *g = &s[j];
        width = g->s.bgemm.n;
        if (g->s.epilogue == BLOB_EPI_THRESHOLD) {
            words = g->s.bgemm.out_words;
            if (!mlp_link(L, j) || !mlp_bgemm(&s[j + 1], width, words))
                return j;
            j++;
            continue;
        }
        if (g->s.epilogue == BLOB_EPI_I32)
            return j;
        int end = j; /* affine epilogue: the float steps after it, maybe a pack and a next layer */
        while (mlp_link(L, end) && mlp_affine(&s[end + 1], width))
            end++;
        if (mlp_link(L, end) && mlp_pack(&s[end + 1], width) && mlp_link(L, end + 1) &&
            mlp_bgemm(&s[end + 2], width, s[end + 1].s.pack.words)) {
            words = s[end + 1].s.pack.words;
            j = end + 2;
            continue;
        }
        return end;
    }
}

/* A weights ref relative to the window that starts at lo. */
static long long mlp_at(const BlobRef *r, uint64_t lo) { return (long long)(r->offset - lo); }

/* The first step from j on (up to last) that is not an affine step. */
static int mlp_skip_affines(const Lower *L, int j, int last) {
    while (j <= last && L->steps[j].s.kind == BLOB_STEP_AFFINE)
        j++;
    return j;
}

/* The affine steps from j on, applied to `float v` at element `idx`, one line each. */
static void put_mlp_affines(Buf *b, const Lower *L, int j, int last, uint64_t lo, const char *idx) {
    for (int end = mlp_skip_affines(L, j, last); j < end; j++) {
        const LStep *a = &L->steps[j];
        buf_printf(b, "                v = bnn_mlp_affine<%lld, %d>((const float *)(wts + %lld), "
                      "(const float *)(wts + %lld), %s, v);\n",
                   (long long)a->s.affine.spatial, (int)a->s.affine.div, mlp_at(&a->s.slot[BLOB_SLOT_P0], lo),
                   mlp_at(&a->s.slot[BLOB_SLOT_P1], lo), idx);
    }
}

/* The IR lines of steps first..last as comments: what the fused kernel computes. */
static void put_mlp_ir_lines(Buf *b, const Lower *L, int first, int last) {
    const char *prev = NULL;
    for (int j = first; j <= last; j++) {
        const char *ir = L->steps[j].k.ir_line;
        if (!ir || ir == prev)
            continue;
        prev = ir;
        while (*ir == ' ')
            ir++;
        int n = (int)strcspn(ir, "\n");
        /* a trailing backslash would splice the next line into the comment */
        buf_printf(b, "    // %.*s%s\n", n, ir, n && ir[n - 1] == '\\' ? "(eol)" : "");
    }
}

/* Bytes of weight rows the fused kernel reads for steps first..last (16-byte chunks). */
static int64_t mlp_weight_bytes(const Lower *L, int first, int last) {
    int64_t bytes = 0;
    for (int j = first; j <= last; j++)
        if (L->steps[j].s.kind == BLOB_STEP_BGEMM)
            bytes += L->steps[j].s.bgemm.n * ((L->steps[j].s.bgemm.k + 127) / 128) * 16;
    return bytes;
}

/* The body of the fused kernel for steps first..last (mlp_fused.cu: bnn_mlp_run with its three
 * lambdas: stage, input, layers); parameters at their offsets in the window that starts at lo;
 * sm: weight rows staged in shared memory. */
static char *mlp_kernel_body(const Lower *L, int first, int last, uint64_t lo, bool sm) {
    const LStep *s = L->steps;
    Buf b = {0};
    put_mlp_ir_lines(&b, L, first, last);
    int pack = mlp_skip_affines(L, first, last); /* the input's pack, or the first layer */
    bool bits_in = s[pack].s.kind == BLOB_STEP_BGEMM;
    long long k0 = bits_in ? s[pack].s.bgemm.k : s[pack].s.pack.channels, aw = (k0 + 127) / 128 * 4;
    long long in_stride = L->bufs[s[first].buf[BLOB_SLOT_IN]].bytes / 4;
    long long out_stride = L->bufs[s[last].buf[BLOB_SLOT_OUT]].bytes / 4;
    buf_printf(&b, "    extern __shared__ uint4 bnn_mlp_smem[];\n    bnn_mlp_run<%lld>(batch,\n        [&] {\n", aw);
    long long soff = 0;
    for (int j = first; sm && j <= last; j++)
        if (s[j].s.kind == BLOB_STEP_BGEMM) {
            const BlobBgemmParams *p = &s[j].s.bgemm;
            long long kc = (p->k + 127) / 128;
            buf_printf(&b, "            bnn_mlp_stage<%lld, %lld, %lld>(bnn_mlp_smem + %lld, wts + %lld);\n",
                       (long long)p->n, kc, (long long)p->words, soff, mlp_at(&s[j].s.slot[BLOB_SLOT_W], lo));
            soff += p->n * kc;
        }
    buf_printf(&b, "        },\n        [&](long long item, unsigned (&a0)[%lld]) {\n", aw);
    if (bits_in) {
        buf_printf(&b, "            bnn_mlp_load_bits<%lld>((const unsigned *)in + item * %lld, a0);\n", k0, in_stride);
    } else {
        buf_printf(&b, "            bnn_mlp_pack<%lld, %d>((const float *)in + item * %lld, a0, [&](int j, float v) {\n",
                   k0, s[pack].s.pack.zero > 0, in_stride);
        put_mlp_affines(&b, L, first, last, lo, "j");
        buf_puts(&b, "                return v;\n            });\n");
    }
    buf_printf(&b, "        },\n        [&](long long item, const unsigned (&a0)[%lld]) {\n", aw);
    soff = 0;
    int j = bits_in ? pack : pack + 1;
    for (int layer = 0; j <= last; layer++) {
        const LStep *g = &s[j];
        const BlobBgemmParams *p = &g->s.bgemm;
        long long n = p->n, k = p->k, ld = p->words, nw = (p->n + 127) / 128 * 4;
        char w[64], head[160];
        if (sm)
            snprintf(w, sizeof w, "bnn_mlp_smem + %lld", soff);
        else
            snprintf(w, sizeof w, "(const uint4 *)(wts + %lld)", mlp_at(&g->s.slot[BLOB_SLOT_W], lo));
        soff += n * ((k + 127) / 128);
        /* template arguments and the operands every layer function starts with */
        snprintf(head, sizeof head, "%lld, %lld, %d, %lld", k, n, sm, ld);
        long long pop = mlp_at(&g->s.slot[BLOB_SLOT_X0], lo), p0 = mlp_at(&g->s.slot[BLOB_SLOT_P0], lo),
                  p1 = mlp_at(&g->s.slot[BLOB_SLOT_P1], lo);
        if (g->s.epilogue == BLOB_EPI_THRESHOLD) {
            buf_printf(&b, "            unsigned a%d[%lld];\n", layer + 1, nw);
            buf_printf(&b, "            bnn_mlp_threshold<%s>(a%d, %s, (const int *)(wts + %lld), (const int *)(wts + "
                           "%lld), (const int *)(wts + %lld), a%d);\n",
                       head, layer, w, pop, p0, p1, layer + 1);
            if (j == last)
                buf_printf(&b, "            bnn_mlp_store_bits<%lld, %lld>(a%d, (unsigned *)out + item * %lld);\n", n,
                           (long long)p->out_words, layer + 1, out_stride);
            j++;
            continue;
        }
        if (g->s.epilogue == BLOB_EPI_I32) { /* only ever last */
            buf_printf(&b, "            int *y = (int *)out + item * %lld;\n"
                           "            bnn_mlp_dense<%s>(a%d, %s, (const int *)(wts + %lld), "
                           "[&](int, int o, bool ok, int dot) {\n"
                           "                if (ok)\n                    y[o] = dot;\n            });\n",
                       out_stride, head, layer, w, pop);
            j++;
            continue;
        }
        /* the affine epilogue, the float steps after it, then a pack (another layer follows) or
         * the chain's output */
        int after = mlp_skip_affines(L, j + 1, last);
        char scale[128];
        snprintf(scale, sizeof scale, "bnn_mlp_scale(dot, (const float *)(wts + %lld), (const float *)(wts + %lld), o)",
                 p0, p1);
        if (after > last) {
            buf_printf(&b, "            float *y = (float *)out + item * %lld;\n"
                           "            bnn_mlp_dense<%s>(a%d, %s, (const int *)(wts + %lld), "
                           "[&](int, int o, bool ok, int dot) {\n"
                           "                if (!ok)\n                    return;\n                float v = %s;\n",
                       out_stride, head, layer, w, pop, scale);
            put_mlp_affines(&b, L, j + 1, last, lo, "o");
            buf_puts(&b, "                y[o] = v;\n            });\n");
        } else {
            buf_printf(&b, "            unsigned a%d[%lld];\n", layer + 1, nw);
            buf_printf(&b, "            bnn_mlp_float_bits<%s, %d>(a%d, %s, (const int *)(wts + %lld), "
                           "[&](int o, int dot) {\n                float v = %s;\n",
                       head, s[after].s.pack.zero > 0, layer, w, pop, scale);
            put_mlp_affines(&b, L, j + 1, last, lo, "o");
            buf_printf(&b, "                return v;\n            }, a%d);\n", layer + 1);
        }
        j = after + 1;
    }
    buf_puts(&b, "        });\n");
    return buf_take(&b);
}

/* Step st with its GPU kernel taken away: the CPU path still runs it. */
static void make_cpu_only(LStep *st) {
    st->s.flags |= BLOB_STEP_CPU_ONLY;
    st->has_kernel = false;
    memset(st->s.kernel, 0, sizeof st->s.kernel);
    memset(st->s.grid, 0, sizeof st->s.grid);
    memset(st->s.block, 0, sizeof st->s.block);
    memset(st->s.args, 0, sizeof st->s.args);
    st->s.smem = st->s.nargs = 0;
    free(st->k.defines);
    free(st->k.call);
    st->k.defines = st->k.call = NULL;
}

/* The window [*lo, *hi) of the weights bytes of every WEIGHTS operand of steps first..last. */
static void weights_window(const Lower *L, int first, int last, uint64_t *lo, uint64_t *hi) {
    *lo = UINT64_MAX, *hi = 0;
    for (int j = first; j <= last; j++)
        for (int i = 0; i < BLOB_MAX_SLOTS; i++) {
            const BlobRef *r = &L->steps[j].s.slot[i];
            if (r->space != BLOB_SPACE_WEIGHTS)
                continue;
            *lo = r->offset < *lo ? r->offset : *lo;
            *hi = r->offset + r->bytes > *hi ? r->offset + r->bytes : *hi;
        }
}

/* The last step moved to index pos, the steps from pos on one up (the tunables' indices with
 * them); returns it. */
static LStep *move_last_step(Lower *L, int pos) {
    LStep st = L->steps[L->nsteps - 1];
    memmove(&L->steps[pos + 1], &L->steps[pos], (size_t)(L->nsteps - 1 - pos) * sizeof st);
    for (int i = 0; i < L->ntunables; i++)
        L->tunables[i].step += L->tunables[i].step >= pos;
    L->steps[pos] = st;
    return &L->steps[pos];
}

/* Steps first..last become CPU-only and a new GPU-only BLOB_STEP_KERNEL step just after them
 * (the steps after it move up by one) reads first's input (IN), writes last's output (OUT)
 * and their constants through the weights window [lo, hi) (W); its kernel is the caller's. */
static LStep *replace_on_gpu(Lower *L, int first, int last, const char *ir_line, uint64_t lo, uint64_t hi) {
    const int in = L->steps[first].buf[BLOB_SLOT_IN], out = L->steps[last].buf[BLOB_SLOT_OUT];
    for (int j = first; j <= last; j++)
        make_cpu_only(&L->steps[j]);
    new_step(L, BLOB_STEP_KERNEL); /* appended, then moved */
    LStep *k = move_last_step(L, last + 1);
    k->k.ir_line = ir_line;
    use_arena(L, k, BLOB_SLOT_IN, in);
    use_arena(L, k, BLOB_SLOT_OUT, out);
    k->s.slot[BLOB_SLOT_W] = (BlobRef){BLOB_SPACE_WEIGHTS, 0, lo, hi - lo};
    return k;
}

/* Fuse steps first..last (match_mlp_chain) into one GPU kernel step inserted after them.
 * False (nothing changed) when its weights are too big. */
static bool fuse_mlp_chain(Lower *L, int first, int last) {
    if (mlp_weight_bytes(L, first, last) > MLP_MAX_WEIGHTS)
        return false;
    bool sm = mlp_weight_bytes(L, first, last) <= MLP_SMEM_WEIGHTS;
    /* The window: every WEIGHTS operand of the chain (they were added one after the other). */
    uint64_t lo, hi;
    weights_window(L, first, last, &lo, &hi);
    if (hi <= lo)
        unreachable("fused MLP without weights");
    char *body = mlp_kernel_body(L, first, last, lo, sm);
    const char *ir = NULL;
    for (int j = first; j <= last && !ir; j++)
        ir = L->steps[j].s.kind == BLOB_STEP_BGEMM ? L->steps[j].k.ir_line : NULL;
    LStep *k = replace_on_gpu(L, first, last, ir, lo, hi);
    snprintf(k->k.name, sizeof k->k.name, "s%d_mlp", last + 1);
    k->has_kernel = true;
    k->k.family = KERNEL_MLP;
    k->k.threads = MLP_WARPS * 32;
    k->k.call = body;
    BlobGridDim grid[3] = {{0, 1, MLP_WARPS}, {1, 0, 1}, {1, 0, 1}};
    uint32_t block[3] = {MLP_WARPS * 32, 1, 1};
    blob_step_set_kernel(&k->s, k->k.name, grid, block, sm ? (uint32_t)mlp_weight_bytes(L, first, last) : 0);
    blob_step_add_arg(&k->s, BLOB_ARG_PTR, BLOB_SLOT_IN, 0);
    blob_step_add_arg(&k->s, BLOB_ARG_PTR, BLOB_SLOT_OUT, 0);
    blob_step_add_arg(&k->s, BLOB_ARG_PTR, BLOB_SLOT_W, 0);
    blob_step_add_arg(&k->s, BLOB_ARG_BATCH, 0, 1);
    return true;
}

/* Every chain of small binary dense layers becomes one GPU kernel (the steps stay, CPU-only). */
static void fuse_mlp_chains(Lower *L) {
    for (int i = 0; i < L->nsteps; i++) {
        int last = match_mlp_chain(L, i);
        if (last > i && fuse_mlp_chain(L, i, last))
            i = last + 1; /* past the new kernel step */
    }
}

/* ---------------------------------------------------------------- cast + affines */

/* A cast to f32 and the affine steps right after it (each the only reader of the step before,
 * channel-major over the cast's elements, no graph output between them): the last of them, or
 * -1. */
static int match_cast_affines(const Lower *L, int i) {
    const LStep *s = L->steps;
    if (s[i].s.kind != BLOB_STEP_CAST || !mlp_plain(&s[i]))
        return -1;
    int j = i;
    while (mlp_link(L, j) && mlp_affine(&s[j + 1], s[i].s.cast.count))
        j++;
    return j > i ? j : -1;
}

/* On the GPU, such a cast and its affines as one pass over the tensor (the output layer of a
 * low-bit MLP: its i32 accumulators to floats, then the scale and bias): a kernel step after
 * them computes each value as the steps would one after the other (float_ops.cu
 * bnn_cast_value, bnn_affine_value), the steps stay for the CPU path, CPU-only. Each affine
 * saves a read and a write of the tensor. */
static void fuse_cast_affines(Lower *L) {
    for (int first = 0; first < L->nsteps; first++) {
        const int last = match_cast_affines(L, first);
        if (last < 0)
            continue;
        const BlobCastParams cp = L->steps[first].s.cast;
        uint64_t lo, hi; /* the window of the affines' constants */
        weights_window(L, first, last, &lo, &hi);
        Buf b = {0};
        buf_printf(&b, "{\n        const bnn_i64 at = item * %lld + j;\n        float v = bnn_cast_value(in, at, %d);\n",
                   (long long)cp.count, (int)cp.from);
        for (int j = first + 1; j <= last; j++) {
            const LStep *a = &L->steps[j];
            buf_printf(&b,
                       "        v = bnn_affine_value(v, (const float *)((const char *)w + %lld), "
                       "(const float *)((const char *)w + %lld), j / %lld, %d);\n",
                       mlp_at(&a->s.slot[BLOB_SLOT_P0], lo), mlp_at(&a->s.slot[BLOB_SLOT_P1], lo),
                       (long long)a->s.affine.spatial, (int)a->s.affine.div);
        }
        buf_puts(&b, "        ((float *)out)[at] = v;\n    }");
        LStep *k = replace_on_gpu(L, first, last, L->steps[last].k.ir_line, lo, hi);
        float_kernel(L, k, "cast_affine", cp.count, buf_take(&b));
        L->ncast_affines++;
        first = last + 1; /* past the new kernel step */
    }
}

typedef struct PoolSpec {
    int64_t k[2], s[2], p[4];
    bool before; /* pool the accumulator, then threshold (else: OR of the bits) */
} PoolSpec;

/* The float epilogue of a convolution whose pool the kernel cannot fuse: (float)acc, negated
 * on the channels where the pool is a min (an OR of "acc <= t" bits is "min(acc) <= t"); a
 * one-stage chain writing f32 only. */
static void pool_epilogue(const PoolSpec *ps, const Value *dir, int64_t o, Epilogue *e) {
    memset(e, 0, sizeof *e);
    e->kind = BLOB_EPI_AFFINE;
    e->need_f32 = true;
    e->rest_from = -1;
    float *s = xmalloc((size_t)o * 4), *b = xmalloc((size_t)o * 4);
    for (int64_t c = 0; c < o; c++) {
        bool down = dir && const_at(dir, dir->type.dim[0] == 1 ? 0 : c) < 0;
        s[c] = !ps->before && down ? -1.0f : 1.0f;
        b[c] = -0.0f;
    }
    push_stage(e, o, s, b, false);
    free(s);
    free(b);
}

/* A convolution's strides, dilations and pads (top, left, bottom, right), with ONNX's defaults. */
static void conv_geometry(const Node *n, int64_t s[2], int64_t d[2], int64_t p[4]) {
    static const int64_t one2[2] = {1, 1}, zero4[4] = {0, 0, 0, 0};
    memcpy(s, one2, sizeof one2);
    memcpy(d, one2, sizeof one2);
    memcpy(p, zero4, sizeof zero4);
    attr_ints(n, "strides", s, 2, 2, one2);
    attr_ints(n, "dilations", d, 2, 2, one2);
    attr_ints(n, "pads", p, 4, 4, zero4);
}

/* The parameters of pool node n (maxpool or avgpool, no dilation) from x to y. */
static BlobPoolParams pool_params(const Node *n, const Type *x, const Type *y) {
    int64_t k[2], s[2] = {1, 1}, p[4] = {0, 0, 0, 0};
    static const int64_t one2[2] = {1, 1}, zero4[4] = {0, 0, 0, 0};
    attr_ints(n, "kernel", k, 2, 2, one2);
    attr_ints(n, "strides", s, 2, 2, one2);
    attr_ints(n, "pads", p, 4, 4, zero4);
    return (BlobPoolParams){.c = x->dim[1], .h = x->dim[2], .w = x->dim[3], .kh = k[0], .kw = k[1],
                            .stride_h = s[0], .stride_w = s[1], .pad_top = p[0], .pad_left = p[1],
                            .pad_bottom = p[2], .pad_right = p[3], .oh = y->dim[2], .ow = y->dim[3],
                            .count_include_pad = n->op == OP_MAXPOOL ? 0 : attr_int(n, "count_include_pad", 0) != 0};
}

static void emit_pool(Lower *L, int in, int out, const BlobPoolParams *pp, bool max) {
    LStep *st = new_step(L, max ? BLOB_STEP_MAXPOOL : BLOB_STEP_AVGPOOL);
    use_arena(L, st, BLOB_SLOT_IN, in);
    use_arena(L, st, BLOB_SLOT_OUT, out);
    st->s.pool = *pp;
    float_kernel(L, st, max ? "maxpool" : "avgpool", pp->c * pp->oh * pp->ow,
                 str_printf("bnn_pool<%lld, %lld>(item, j, (const float *)in, (float *)out, %lld, %lld, %lld, "
                            "%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %s)",
                            (long long)pp->kh, (long long)pp->kw, (long long)pp->c, (long long)pp->h,
                            (long long)pp->w, (long long)pp->stride_h, (long long)pp->stride_w,
                            (long long)pp->pad_top, (long long)pp->pad_left, (long long)pp->pad_bottom,
                            (long long)pp->pad_right, (long long)pp->oh, (long long)pp->ow,
                            (long long)pp->count_include_pad, max ? "true" : "false"));
}

static void add_pack(Lower *L, int in, const Type *xt, const Value *out, int zero);
static int check_pack_target(Lower *L, const Type *xt, const Value *out);
static void add_affine(Lower *L, int in, int out, const float *scale, const float *bias, int64_t channels,
                       int64_t spatial, bool div);

/* The rest of an unfusable pooled bconv2d: max-pool the float accumulators (exact: they
 * are integers below 2^24), then threshold them as floats (x - t >= 0, exact) and pack. */
static int pool_and_threshold(Lower *L, const Node *n, int acc, int64_t O, int64_t OH, int64_t OW,
                              const PoolSpec *ps, const Value *t, const Value *dir) {
    const Value *y = n->out[0];
    int64_t PH = y->type.dim[2], PW = y->type.dim[3], words;
    if (out_words(L, y, &words))
        return -1;
    if (!packed_words(&y->type) && PH * PW > 1)
        return unsupported(L, "a b1 graph output of a convolution");
    float *scale = xmalloc((size_t)O * 4), *bias = xmalloc((size_t)O * 4);
    for (int64_t c = 0; c < O; c++) {
        double tv = const_at(t, t->type.dim[0] == 1 ? 0 : c);
        bool down = dir && const_at(dir, dir->type.dim[0] == 1 ? 0 : c) < 0;
        if (!ps->before && down) /* the pool took max(-acc): acc_min <= t is -acc_min >= -t */
            tv = -tv, down = false;
        if ((double)(float)tv != tv) {
            free(scale);
            free(bias);
            return unsupported(L, "a pooled threshold that is not exact in float32");
        }
        scale[c] = down ? -1.0f : 1.0f;
        bias[c] = down ? (float)tv : (float)-tv;
    }
    BlobPoolParams pp = {.c = O, .h = OH, .w = OW, .kh = ps->k[0], .kw = ps->k[1], .stride_h = ps->s[0],
                         .stride_w = ps->s[1], .pad_top = ps->p[0], .pad_left = ps->p[1],
                         .pad_bottom = ps->p[2], .pad_right = ps->p[3], .oh = PH, .ow = PW};
    int pooled = new_buf(L, O * PH * PW * 4), shifted = new_buf(L, O * PH * PW * 4);
    emit_pool(L, acc, pooled, &pp, true);
    add_affine(L, pooled, shifted, scale, bias, O, PH * PW, false);
    free(scale);
    free(bias);
    Type ft = y->type;
    ft.dtype = TY_F32;
    memset(&ft.pack, 0, sizeof ft.pack);
    add_pack(L, shifted, &ft, y, 1);
    return 0;
}

/* A max-pool of bits the bconv epilogue can do: 2x2, stride 2, no padding, floor. */
static bool fusable_pool(const Node *mp, int64_t oh, int64_t ow) {
    if (mp->op != OP_MAXPOOL || mp->in[0]->type.dtype != TY_B1)
        return false;
    int64_t k[2] = {0, 0}, s[2] = {1, 1}, d[2] = {1, 1}, p[4] = {0, 0, 0, 0};
    attr_ints(mp, "kernel", k, 2, 2, k);
    attr_ints(mp, "strides", s, 2, 2, s);
    attr_ints(mp, "dilations", d, 2, 2, d);
    attr_ints(mp, "pads", p, 4, 4, p);
    bool ceil_mode = attr_int(mp, "ceil_mode", 0) != 0;
    return k[0] == 2 && k[1] == 2 && s[0] == 2 && s[1] == 2 && d[0] == 1 && d[1] == 1 && !p[0] && !p[1] &&
           !p[2] && !p[3] && (!ceil_mode || (oh % 2 == 0 && ow % 2 == 0)) && oh >= 2 && ow >= 2;
}

static void add_relu(Lower *L, int in, int out, int64_t count);
static void add_sum(Lower *L, int a, int b, int out, const Type *t);

/* Whether stage s of a chain [S][2][o] is v*1 + -0, which is v for every float: no step. */
static bool identity_stage(const float *k, int64_t s, int64_t o, bool div) {
    bool id = !div;
    for (int64_t c = 0; id && c < o; c++)
        id = k[2 * s * o + c] == 1.0f && k[(2 * s + 1) * o + c] == 0.0f && signbit(k[(2 * s + 1) * o + c]);
    return id;
}

/* Stages from .. to - 1 of n's chain on the f32 value t in buffer cur, an affine step for each
 * that is not the identity and a relu step for each relu (with relu_due, stage from - 1's relu
 * first); returns the buffer of the result. */
static int emit_stages(Lower *L, const Node *n, int cur, const Type *t, int64_t from, int64_t to, bool relu_due) {
    int64_t o = t->dim[1], sp = spatial_of(t);
    int64_t div[CHAIN_MAX_STAGES] = {0}, relu[CHAIN_MAX_STAGES] = {0};
    attr_ints(n, "div", div, CHAIN_MAX_STAGES, 0, NULL);
    attr_ints(n, "relu", relu, CHAIN_MAX_STAGES, 0, NULL);
    const float *k = n->in[2]->data;
    for (int64_t s = from - 1; s < to; s++) {
        int next;
        if (s >= from && !identity_stage(k, s, o, div[s] != 0)) {
            next = new_buf(L, value_bytes(t));
            add_affine(L, cur, next, k + 2 * s * o, k + (2 * s + 1) * o, o, sp, div[s] != 0);
            cur = next;
        }
        if (s >= 0 && relu[s] && (s >= from || relu_due)) {
            next = new_buf(L, value_bytes(t));
            add_relu(L, cur, next, item_numel(t));
            cur = next;
        }
    }
    return cur;
}

/* What the step of a bconv2d_chain (chain_epilogue) or a conv2d_chain (lower_conv2d_f32) did not
 * compute, on the f32 value t in buffer cur: the relu of stage first - 1 where relu_due, then
 * from stage first on each stage an affine step and each relu a relu step, then a
 * bconv2d_chain's residual add or a conv2d_chain's max-pool; then the bits by a pack step
 * where pack_bits. first < 0: nothing but the pack. */
static int lower_chain_rest(Lower *L, const Node *n, int cur, const Type *t, int first, bool relu_due,
                            bool pack_bits) {
    const Value *y = n->out[0], *bits = n->out[1], *chain = n->in[2];
    int64_t S = chain->type.dim[0];
    bool pool = n->op == OP_CONV2D_CHAIN && get_attr(n, "pool_kernel");
    int64_t pool_at = pool ? attr_int(n, "pool_at", S) : S;
    if (first >= 0) {
        cur = emit_stages(L, n, cur, t, first, pool_at > first ? pool_at : first, relu_due);
        if (n->op != OP_CONV2D_CHAIN && n->nin == 4) { /* a binary chain's residual */
            int r = buf_of(L, n->in[3]), next = new_buf(L, value_bytes(t));
            bool res_first = attr_int(n, "residual_first", 0) != 0;
            add_sum(L, res_first ? r : cur, res_first ? cur : r, next, t);
            cur = next;
        }
        if (pool) { /* the max-pool, then the stages after it */
            Attr attrs[4];
            Value *pin[1] = {NULL};
            Node pn = fused_pool_node(n, pin, attrs);
            BlobPoolParams pp = pool_params(&pn, t, &y->type);
            int next = new_buf(L, value_bytes(&y->type));
            emit_pool(L, cur, next, &pp, true);
            cur = emit_stages(L, n, next, &y->type, pool_at > first ? pool_at : first, S, false);
        }
        L->vbuf[y->id] = cur;
    }
    if (n->op == OP_CONV2D_CHAIN && get_attr(n, "quant_bits")) {
        /* the quantizer: the codes from the value, then (dequant) the value replaced by the quant's */
        BlobQuantizeParams qp = chain_quantizer(n, item_numel(&y->type));
        int val = buf_of(L, y);
        if (count_uses(L->g, bits) > 0 || is_output(L->g, bits)) {
            BlobQuantizeParams cq = qp;
            cq.dequant = 0;
            if (lower_quantize_image(L, val, bits, cq))
                return -1;
        }
        if (qp.dequant && (count_uses(L->g, y) > 0 || is_output(L->g, y))) {
            int deq = new_buf(L, value_bytes(&y->type));
            emit_dequant(L, val, deq, qp);
            L->vbuf[y->id] = deq;
        }
        return 0;
    }
    if (pack_bits) {
        if (check_pack_target(L, &y->type, bits))
            return -1;
        add_pack(L, buf_of(L, y), &y->type, bits, (int)attr_int(n, "zero", 1));
    }
    return 0;
}

/* ---------------------------------------------------------------- tunable configurations */

/* Candidate v of a kernel configuration for the layer being lowered: 0 when it applies. */
typedef int (*HaloVariantFn)(int v, const void *ctx, BnnHaloCfg *cfg);

/* The step's kernel text without its name, as one line: what the kernel computes. */
static char *kernel_signature(const LStep *st) {
    Buf b = {0};
    buf_puts(&b, st->k.family == KERNEL_BCONV ? "bconv:" : st->k.family == KERNEL_QCONV ? "qconv:" : "kernel:");
    for (const char *l = st->k.defines; *l;) {
        const char *e = strchr(l, '\n');
        int len = e ? (int)(e - l) : (int)strlen(l);
        const char *sp = len > 8 && !strncmp(l, "#define ", 8) ? memchr(l + 8, ' ', (size_t)len - 8) : NULL;
        bool is_name = sp && sp - (l + 8) >= 5 && !strncmp(sp - 5, "_NAME", 5);
        if (sp && !is_name)
            buf_printf(&b, " %.*s=%.*s", (int)(sp - l - 8), l + 8, (int)(l + len - sp - 1), sp + 1);
        l += len + (e != NULL);
    }
    return buf_take(&b);
}

/* The int8 tensor cores as a low-bit layer's tuning candidate (the other: bit-planes) */
#define INT8_CANDIDATE "int8 MMA (qgemm_s8.cu)"

static char *halo_candidate_name(const BnnHaloCfg *c) {
    return str_printf("halo %dx%d px, %d ch, %d warps, minb %d", c->th, c->tw, c->bn, c->wm * c->wn, c->minb);
}

/* Node n's entry in CodegenOptions.tune_choice: the candidate bnncc --tune chose, -1 without
 * one (no choice, or a node past ntune_choice). */
static int tune_entry(const Lower *L, const Node *n) {
    for (int i = 0; L->tune_choice && i < L->g->nnodes && i < L->ntune_choice; i++)
        if (L->g->nodes[i] == n)
            return L->tune_choice[i] >= 0 ? L->tune_choice[i] : -1;
    return -1;
}

/* The candidate bnncc --tune chose for node n, 0 (the cost model's) without one; n need not be
 * the node being lowered (a producer asks how its reader will run). */
static int tuned_pick(const Lower *L, const Node *n, int ncandidates) {
    const int entry = tune_entry(L, n), pick = entry > 0 ? entry : 0;
    if (pick >= ncandidates)
        unreachable("a tuned candidate past the layer's candidates");
    return pick;
}

/* Whether node n, a layer with ncandidates kernel configurations, may get batch alternatives:
 * not when it is a tunable layer (more than one candidate) that the tuning chose for (its
 * configuration is then the tuned batch's at every batch, the cost model's too); the other
 * steps keep theirs. */
static bool tunable_alts(const Lower *L, const Node *n, int ncandidates) {
    return L->batch_alts && !(ncandidates > 1 && tune_entry(L, n) >= 0);
}

/* Record the node being lowered as a tunable layer (codegen_tunables) whose step is st; names
 * and signature are taken over. */
static void add_tunable(Lower *L, const LStep *st, int n, char **names, char *signature, int pick) {
    if (L->ntunables == L->cap_tunables) {
        L->cap_tunables = L->cap_tunables ? 2 * L->cap_tunables : 16;
        L->tunables = xrealloc(L->tunables, (size_t)L->cap_tunables * sizeof *L->tunables);
    }
    CodegenTunable *t = &L->tunables[L->ntunables++];
    memset(t, 0, sizeof *t);
    t->node = L->node_index;
    t->step = (int)(st - L->steps);
    t->layer = L->node->src_name ? xstrdup(L->node->src_name) : str_printf("%%%s", L->node->out[0]->name);
    t->signature = signature;
    t->ncandidates = n;
    for (int i = 0; i < n; i++) {
        t->candidate[i] = names[i];
        t->nsteps[i] = 1;
    }
    t->chosen = pick;
    L->ntuned += pick > 0;
}

/* That the plan runs configuration cfg for step si from batch `from` on, where si is the last
 * tunable layer's step and cfg one of its candidates (CodegenTunable.alt_from): recorded whether
 * or not the alternative is emitted (the tuner's own lowering emits none). */
static void note_tunable_alt(Lower *L, int si, uint32_t from, const BnnHaloCfg *cfg) {
    CodegenTunable *t = L->ntunables ? &L->tunables[L->ntunables - 1] : NULL;
    if (!t || t->step != si || t->nalts == 2)
        return;
    char *name = halo_candidate_name(cfg);
    for (int c = 0; c < t->ncandidates; c++)
        if (!strcmp(t->candidate[c], name)) {
            t->alt_from[t->nalts] = (int)from;
            t->alt_candidate[t->nalts++] = c;
            break;
        }
    free(name);
}

/* The variants of fn (nvar of them) that apply to ctx, at most max: their indices in cand; how
 * many. */
static int halo_candidates(int nvar, HaloVariantFn fn, const void *ctx, int max, int *cand) {
    BnnHaloCfg hc;
    int n = 0;
    for (int v = 0; v < nvar && n < max; v++)
        if (fn(v, ctx, &hc) == 0)
            cand[n++] = v;
    return n;
}

/* The tuning names of the n variants cand of fn into names (halo_candidate_name). */
static void halo_candidate_names(HaloVariantFn fn, const void *ctx, const int *cand, int n, char **names) {
    BnnHaloCfg hc;
    for (int i = 0; i < n; i++) {
        fn(cand[i], ctx, &hc);
        names[i] = halo_candidate_name(&hc);
    }
}

/* The halo configuration of st, the step being lowered, into hc: among the nvar variants of fn
 * those that apply are the candidates; the one bnncc --tune chose for this node, else the first.
 * Recorded as a tunable layer when there is more than one (their number in *ncandidates). -1
 * when variant 0 (the rule's) does not apply: no halo kernel. Call it once the step's defines
 * are complete but for the tile's (they are the layer's signature). */
static int choose_halo(Lower *L, const LStep *st, int nvar, HaloVariantFn fn, const void *ctx, BnnHaloCfg *hc,
                       int *ncandidates) {
    int cand[CODEGEN_MAX_CANDIDATES];
    const int n = halo_candidates(nvar, fn, ctx, CODEGEN_MAX_CANDIDATES, cand);
    *ncandidates = n;
    if (n == 0 || cand[0] != 0)
        return -1;
    int pick = tuned_pick(L, L->node, n);
    if (n > 1) {
        char *names[CODEGEN_MAX_CANDIDATES];
        halo_candidate_names(fn, ctx, cand, n, names);
        add_tunable(L, st, n, names, kernel_signature(st), pick);
    }
    return fn(cand[pick], ctx, hc);
}

typedef struct HaloLayer {
    int c, oh, ow, o, kh, kw, sh, sw, dh, dw;
    int pool, classes;    /* bconv */
    int xb, wb, nacc;     /* qconv */
    int resw;             /* qconv: residual words a tile row in its shared memory (bnn_qhalo_smem) */
    int lev;              /* qconv: levels a channel to stage there where they fit (QC_LSTAGE), or 0 */
} HaloLayer;

static int bconv_halo_variant(int v, const void *ctx, BnnHaloCfg *cfg) {
    const HaloLayer *h = ctx;
    return bnn_halo_variant(v, h->c, h->oh, h->ow, h->o, h->kh, h->kw, h->sh, h->sw, h->dh, h->dw, h->pool,
                            h->classes, cfg);
}

static int qconv_halo_variant(int v, const void *ctx, BnnHaloCfg *cfg) {
    const HaloLayer *h = ctx;
    return bnn_qhalo_variant(v, h->c, h->oh, h->ow, h->o, h->kh, h->kw, h->sh, h->sw, h->dh, h->dw, h->xb, h->wb,
                             h->nacc, h->resw, h->lev, cfg);
}

/* A threshold halo bconv's batch alternative (new_batch_alt): bnn_halo_variants[4], 4x8 pixels
 * x 64 channels, 8 warps, BC_MINB 2, from batch 8 on. On an H100 (docs/perf.md, 2026-11-27)
 * XNOR ResNet-18 with it on every threshold layer ran batch 8 3 % slower than with the rule's
 * tiles, batch 16 5 % faster, and 4-5 % faster up to batch 256; on an H200 with today's kernels
 * (docs/perf.md stop 45) from batch 8 on it ran batch 8 1.5 % and batch 12 6 % faster than from
 * 16, level at 1-6 and 16, while from 4 on made batch 4 5 % slower; its chain layers lose with it
 * (0.107 -> 0.198 ms at batch 256 for one), so they keep the rule's. Where its shared memory is
 * too large (eight warps' halos of 512 channels: XNOR ResNet-18's 7x7 layers) the 4x8 x 64 tile
 * of 4 warps at BC_MINB 3 instead (HALO_ALT_FALLBACK): on an H200 those layers 3-5 % faster at
 * batch 16, 19-20 % at 64, 20-22 % at 256 (docs/perf.md stop 31). */
enum { HALO_ALT_VARIANT = 4, HALO_ALT_FALLBACK = 2, HALO_ALT_BATCH = 8 };

/* The launch of a halo-tile kernel (bconv.cu BC_HALO, qconv.cu QC_HALO) as hc configures it. */
static void set_halo_launch(LStep *st, const BnnHaloCfg *hc, int64_t O) {
    BlobGridDim grid[3] = {{(uint32_t)((O + hc->bn - 1) / hc->bn), 0, 1},
                           {hc->grid_base, hc->grid_per_batch, hc->grid_div}, {1, 0, 1}};
    uint32_t block[3] = {(uint32_t)bnn_tile_threads(hc->wm, hc->wn), 1, 1};
    blob_step_set_kernel(&st->s, st->k.name, grid, block, (uint32_t)hc->smem);
    st->s.flags |= BLOB_STEP_ONE_WAVE; /* its blocks walk the tiles in y: one wave of them suffices */
}

/* conv2d over b1 x b1 (bconv2d, bconv2d_chain, or conv2d with its threshold / cast) -> a bconv
 * step. A bconv2d_chain's float chain (chain_epilogue: stages, a residual add, the bits) runs in
 * the same step, f32 written NCHW and bits NHWC by CPU and GPU alike; a conv2d's cast is a
 * one-stage chain. The GPU kernel writes integer results NHWC only, so for those the CPU runs
 * the bconv step (NCHW out) while the GPU runs the kernel into a scratch buffer and a
 * transpose: three steps, the first CPU-only, the other two GPU-only. */
static int64_t residual_bit_words(const Lower *L, const Value *r);

/* A bconv chain that writes only bits (v >= 0) and adds a residual of bits (+-1) is, per
 * channel and residual bit, a threshold on the integer dot: its float ops are monotone in the
 * dot under any rounding, so the bits over every dot in [-k, k] (k = the fan-in) rise, fall,
 * or stay constant. Scans them with the CPU path's own chain (blob_bconv_chain_value) and
 * fits t[2][o], dir[2][o] with threshold_of_bits, as the folding pass does (row 1: residual
 * +1, row 0: -1). False if some channel is not a threshold (a NaN or infinity in its chain):
 * the chain stays. */
static bool residual_thresholds(const BlobBconvParams *bp, const float *chain, int64_t k, int32_t *t, int32_t *dir) {
    uint8_t *bits = xmalloc((size_t)(2 * k + 1));
    bool ok = true;
    for (int64_t row = 0; row < 2 && ok; row++)
        for (int64_t o = 0; o < bp->o && ok; o++) {
            for (int64_t i = 0; i <= 2 * k; i++)
                bits[i] = blob_bconv_chain_value(bp, chain, o, i - k, row ? 1.0f : -1.0f) >= 0.0f;
            int d = 0;
            ok = threshold_of_bits(bits, k, &t[row * bp->o + o], &d);
            dir[row * bp->o + o] = d;
        }
    free(bits);
    return ok;
}

/* The halo kernel's view of a bconv step's layer (bconv_halo_variant). */
static HaloLayer bconv_halo_layer(const BlobBconvParams *bp) {
    return (HaloLayer){.c = (int)bp->c, .oh = (int)bp->oh, .ow = (int)bp->ow, .o = (int)bp->o, .kh = (int)bp->kh,
                       .kw = (int)bp->kw, .sh = (int)bp->stride_h, .sw = (int)bp->stride_w, .dh = (int)bp->dil_h,
                       .dw = (int)bp->dil_w, .pool = bp->pool != 0,
                       .classes = bnn_corr_classes((int)bp->h, (int)bp->w, (int)bp->kh, (int)bp->kw,
                                                   (int)bp->stride_h, (int)bp->stride_w, (int)bp->pad_top,
                                                   (int)bp->pad_left, (int)bp->dil_h, (int)bp->dil_w, (int)bp->oh,
                                                   (int)bp->ow, bp->pad_value > 0)};
}

/* A bconv kernel's layer defines (bconv.cu's contract), BC_NAME first: epi its BC_EPI, ldy BC_LDY. */
static char *bconv_defines(const char *name, const BlobBconvParams *bp, const char *epi, int64_t ldy) {
    return str_printf(
        "#define BC_NAME %s\n#define BC_C %lld\n#define BC_H %lld\n#define BC_W %lld\n#define BC_O %lld\n"
        "#define BC_KH %lld\n#define BC_KW %lld\n#define BC_SH %lld\n#define BC_SW %lld\n"
        "#define BC_PT %lld\n#define BC_PL %lld\n#define BC_PB %lld\n#define BC_PR %lld\n"
        "#define BC_DH %lld\n#define BC_DW %lld\n#define BC_PAD_ONE %d\n#define BC_POOL %d\n"
        "#define BC_CWP %lld\n#define BC_EPI %s\n#define BC_LDY %lld\n",
        name, (long long)bp->c, (long long)bp->h, (long long)bp->w, (long long)bp->o, (long long)bp->kh,
        (long long)bp->kw, (long long)bp->stride_h, (long long)bp->stride_w, (long long)bp->pad_top,
        (long long)bp->pad_left, (long long)bp->pad_bottom, (long long)bp->pad_right, (long long)bp->dil_h,
        (long long)bp->dil_w, bp->pad_value > 0, (int)bp->pool, (long long)bp->words, epi, (long long)ldy);
}

/* A bconv chain that writes only bits and adds, as an f32 residual, the value of a 1x1
 * convolution over bits (an XNOR ResNet's downsample: a bconv2d_chain D whose float value only
 * this conv reads) is, per channel, a threshold on its dot2 for each value of D's dot1: both
 * chains are the CPU path's float operations, monotone in their dots, and dot1 in [-K1, K1]
 * takes K1 + 1 values. So the GPU computes dot1 in this conv's own kernel (an MMA a k256 step of
 * D's input at the pixel, bconv.cu BC_RESD) and looks its threshold up: D's kernel, its f32
 * tensor and the chain's float ops leave the GPU (XNOR ResNet-18: three downsample kernels and
 * their 100 MB a batch of 256 at 28x28). The CPU path runs both steps as before. */
typedef struct ResdFusion {
    int dstep;            /* D's step: CPU-only from here on */
    int x1;               /* D's input, its arena buffer */
    BlobBconvParams dp;   /* D's parameters */
    BlobRef w1;           /* D's weights [O][dp.words] (blob_weights_data: valid until the next add) */
    int32_t *pw;          /* popc of each of its rows */
    int32_t *dir;         /* [O]: 1 where the bits rise with dot2, -1 where they fall */
    int16_t *t;           /* [O][K1 + 1]: the threshold on dot2 where (dot1 + K1) / 2 = j */
} ResdFusion;

static void free_resd(ResdFusion *f) {
    free(f->pw), free(f->dir), free(f->t);
    f->pw = f->dir = NULL, f->t = NULL;
}

/* The thresholds of ResdFusion.t for a chain bp over dot2 in [-k, k] (the CPU step's
 * parameters, its residual D's value) and D's chain dp over dot1 in [-k1, k1]. Each channel's
 * chain without the residual must be finite and monotone over every dot2 (checked, all 2k + 1),
 * and D's value finite at every dot1: then chain + r, rounded, is monotone in dot2 and never
 * NaN, so its bits (v >= 0) are a step, which a bisection finds with the CPU path's own
 * function. False otherwise: the steps stay as they are. */
static bool resd_thresholds(const BlobBconvParams *bp, const float *chain, int64_t k, const BlobBconvParams *dp,
                            const float *dchain, int64_t k1, int32_t *dir, int16_t *t) {
    if (k + 1 > INT16_MAX)
        return false;
    BlobBconvParams plain = *bp;
    plain.epi_residual = 0;
    float *v = xmalloc((size_t)(2 * k + 1) * sizeof *v);
    bool ok = true;
    for (int64_t o = 0; o < bp->o && ok; o++) {
        bool up = true, down = true;
        for (int64_t i = 0; i <= 2 * k && ok; i++) {
            v[i] = blob_bconv_chain_value(&plain, chain, o, i - k, 0.0f);
            ok = isfinite(v[i]);
            if (ok && i > 0)
                up = up && v[i - 1] <= v[i], down = down && v[i - 1] >= v[i];
        }
        ok = ok && (up || down);
        dir[o] = up ? 1 : -1;
        for (int64_t j = 0; j <= k1 && ok; j++) {
            float r = blob_bconv_chain_value(dp, dchain, o, 2 * j - k1, 0.0f);
            ok = isfinite(r);
            /* rising: the first dot2 whose bit is 1 (dot2 >= t); falling: the first whose bit
             * is 0, less one (dot2 <= t); 2k + 1 past the end */
            int64_t lo = 0, hi = 2 * k + 1;
            while (ok && lo < hi) {
                int64_t mid = (lo + hi) / 2;
                bool bit = blob_bconv_chain_value(bp, chain, o, mid - k, r) >= 0.0f;
                if (bit == up)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            t[o * (k1 + 1) + j] = (int16_t)(up ? lo - k : lo - 1 - k);
        }
    }
    free(v);
    return ok;
}

/* The arena buffer's index of value v, or -1. */
static int value_buf(const Lower *L, const Value *v) { return v->kind == VAL_CONST ? -1 : L->vbuf[v->id]; }

/* Whether bconv2d_chain n (its epilogue e, parameters bp, fan-in k) takes its residual's 1x1
 * convolution into its GPU kernel (ResdFusion above); f filled when it does. */
static bool resd_match(Lower *L, const Node *n, const Epilogue *e, const BlobBconvParams *bp, int64_t k,
                       ResdFusion *f) {
    memset(f, 0, sizeof *f);
    const Value *r = e->residual;
    const Node *d = r ? r->def : NULL;
    if (!L->min_sm || !d || d->op != OP_BCONV2D_CHAIN || only_user(L->g, r) != n || value_buf(L, r) < 0)
        return false;
    for (int i = 0; i < d->nout; i++)
        if (d->out[i] != r && (count_uses(L->g, d->out[i]) || is_output(L->g, d->out[i])))
            return false;
    int ds = -1;
    for (int s = L->nsteps - 1; s >= 0 && ds < 0; s--)
        if (L->steps[s].buf[BLOB_SLOT_OUT] == value_buf(L, r))
            ds = s;
    if (ds < 0)
        return false;
    const LStep *st = &L->steps[ds];
    const BlobBconvParams *dp = &st->s.bconv;
    if (st->s.kind != BLOB_STEP_BCONV || st->s.epilogue != BLOB_EPI_AFFINE || !dp->epi_stages || dp->epi_residual ||
        dp->kh != 1 || dp->kw != 1 || dp->pad_top || dp->pad_left || dp->pad_bottom || dp->pad_right || dp->pool ||
        dp->out_layout != BLOB_LAYOUT_CS || dp->out_words || dp->o != bp->o || dp->oh != bp->oh || dp->ow != bp->ow ||
        dp->words % 4 || st->s.slot[BLOB_SLOT_X1].space != BLOB_SPACE_NONE || st->buf[BLOB_SLOT_IN] < 0 ||
        (ds + 1 < L->nsteps && (L->steps[ds + 1].s.flags & BLOB_STEP_BATCH_ALT)))
        return false;
    f->dstep = ds;
    f->x1 = st->buf[BLOB_SLOT_IN];
    f->dp = *dp;
    f->w1 = st->s.slot[BLOB_SLOT_W];
    const uint32_t *w1 = blob_weights_data(L->w, f->w1);
    const float *dchain = blob_weights_data(L->w, st->s.slot[BLOB_SLOT_P0]);
    f->pw = xmalloc((size_t)bp->o * sizeof *f->pw);
    f->dir = xmalloc((size_t)bp->o * sizeof *f->dir);
    f->t = xmalloc((size_t)(bp->o * (dp->c + 1)) * sizeof *f->t);
    for (int64_t o = 0; o < bp->o; o++) {
        f->pw[o] = 0;
        for (int64_t q = 0; q < dp->words; q++)
            f->pw[o] += __builtin_popcount(w1[o * dp->words + q]);
    }
    if (!resd_thresholds(bp, e->chain, k, dp, dchain, dp->c, f->dir, f->t)) {
        free_resd(f);
        return false;
    }
    return true;
}

/* Drops the tunable layer of step s (a step whose kernel went away). */
static void drop_tunable(Lower *L, int s) {
    for (int i = 0; i < L->ntunables; i++)
        if (L->tunables[i].step == s) {
            CodegenTunable *t = &L->tunables[i];
            L->ntuned -= t->chosen > 0;
            for (int c = 0; c < t->ncandidates; c++)
                free(t->candidate[c]);
            free(t->layer), free(t->signature);
            memmove(t, t + 1, (size_t)(L->ntunables - i - 1) * sizeof *t);
            L->ntunables--;
            return;
        }
}

/* Bytes a block of bn channels copies for BC_RESD (bconv.cu RSZ): its int16 threshold rows of
 * bnn_resd_row(k1) entries, then its channels' bases. */
static int64_t resd_block_bytes(int64_t bn, int64_t k1) { return bn * bnn_resd_row((int)k1) * 2 + bn * 4; }

/* A bconv step (named already) as the halo kernel in the tile hc: its defines (BC_NAME, body: the
 * layer's, then the tile's), its launch, and in slot x0, its P, the tables of its column blocks
 * (kernels.h bnn_halo_tables) from the popc(w) prefix table pre. A threshold without a pool takes
 * its own bit epilogue (bconv.cu BC_HALO_BITS): its tables hold the thresholds too (ep0, ep1 of
 * st: [1 + (resw > 0)][O] each). With f (BC_RESD: lower_bconv_resd's kernel step, thresholds 0
 * in ep0, so U = corr - [dir < 0]) the threshold rows go on top of the tile's shared memory, and
 * after the tables come each block's threshold rows and bases, then each block's B fragments of
 * D's weights (bconv.cu's order: n8 tile ni = 4q + u, k256 step ch, lane 4g + t: words 8ch + t
 * and 8ch + 4 + t of channel 32q + 8(g / 2) + 2u + g % 2, bnn_halo_brow's). */
static void set_halo_kernel(Lower *L, LStep *st, const char *body, const BnnHaloCfg *hc, const BlobBconvParams *bp,
                            BlobRef pre, int classes, int resw, const ResdFusion *f) {
    const int64_t O = bp->o, bn = hc->bn, nbx = (O + bn - 1) / bn;
    const int64_t k1 = f ? f->dp.c : 0, cwp1 = f ? f->dp.words : 0, rch = (cwp1 + 7) / 8, ni = bn / 8;
    const int64_t rsz = f ? resd_block_bytes(bn, k1) : 0, row = f ? bnn_resd_row((int)k1) : 0;
    BnnHaloCfg h = *hc;
    h.smem += (int)rsz;
    free(st->k.defines);
    st->k.defines = str_printf("#define BC_NAME %s\n%s#define BC_HALO 1\n#define BC_TH %d\n#define BC_TW %d\n"
                               "#define BC_BN %d\n#define BC_WM %d\n#define BC_WN %d\n#define BC_MINB %d\n",
                               st->k.name, body, h.th, h.tw, h.bn, h.wm, h.wn, h.minb);
    set_halo_launch(st, &h, O);
    size_t nt = (size_t)(nbx * (classes + 1) * bn), nr = (size_t)(nbx * rsz / 4), nw = f ? (size_t)(nbx * ni * rch * 64) : 0;
    bool own_bits = f || (st->s.epilogue == BLOB_EPI_THRESHOLD && !bp->pool);
    int32_t *x = xcalloc(nt + nr + nw, 4);
    bnn_halo_tables((int)bp->c, (int)bp->h, (int)bp->w, (int)O, (int)bp->kh, (int)bp->kw, (int)bp->stride_h,
                    (int)bp->stride_w, (int)bp->pad_top, (int)bp->pad_left, (int)bp->dil_h, (int)bp->dil_w,
                    (int)bp->oh, (int)bp->ow, bp->pad_value > 0, (int)bn, blob_weights_data(L->w, pre),
                    own_bits ? blob_weights_data(L->w, st->s.slot[BLOB_SLOT_P0]) : NULL,
                    own_bits ? blob_weights_data(L->w, st->s.slot[BLOB_SLOT_P1]) : NULL, resw, x);
    const uint32_t *w1 = f ? blob_weights_data(L->w, f->w1) : NULL;
    for (int64_t bx = 0; f && bx < nbx; bx++) {
        unsigned char *blk = (unsigned char *)(x + nt) + bx * rsz;
        int16_t *tj = (int16_t *)blk;
        int32_t *tb = (int32_t *)(blk + rsz - bn * 4);
        for (int64_t cl = 0; cl < bn; cl++) {
            int64_t c = bx * bn + cl;
            for (int64_t j = 0; c < O && j <= k1; j++)
                tj[cl * row + j] = f->t[c * (k1 + 1) + j];
            tb[cl] = (int32_t)(cl * row + k1 - (c < O ? f->pw[c] : 0));
        }
        uint32_t *fr = (uint32_t *)(x + nt + nr) + bx * ni * rch * 64;
        for (int64_t nt8 = 0; nt8 < ni; nt8++)
            for (int64_t ch = 0; ch < rch; ch++)
                for (int lane = 0; lane < 32; lane++) {
                    int g = lane >> 2, tq = lane & 3;
                    int64_t c = bx * bn + 32 * (nt8 / 4) + 8 * (g >> 1) + 2 * (nt8 % 4) + (g & 1);
                    for (int hf = 0; hf < 2; hf++) {
                        int64_t wd = 8 * ch + 4 * hf + tq;
                        fr[((nt8 * rch + ch) * 32 + lane) * 2 + hf] = c < O && wd < cwp1 ? w1[c * cwp1 + wd] : 0u;
                    }
                }
    }
    st->s.slot[BLOB_SLOT_X0] = put_weights(L, x, (nt + nr + nw) * 4);
    free(x);
}

/* The GPU's step of a bconv chain that takes its residual's 1x1 convolution in (resd_match):
 * D's step becomes CPU-only (its tunable entry goes), and a kernel step after the CPU's chain
 * step (also CPU-only) runs the halo bconv as a threshold with BC_RESD: in = this conv's input,
 * in2 = D's, out = the bits, w, p0 = zero thresholds, p1 = dir, x0 = set_halo_kernel's tables;
 * with the threshold layers' batch alternative where its shared memory fits. */
static int lower_bconv_resd(Lower *L, const Node *n, const BlobBconvParams *bp, const ResdFusion *f, int in, int out,
                            BlobRef wref, BlobRef pref) {
    const int64_t O = bp->o, k1 = f->dp.c;
    make_cpu_only(&L->steps[f->dstep]);
    drop_tunable(L, f->dstep);
    L->nresd++;
    LStep *st = new_step(L, BLOB_STEP_KERNEL);
    use_arena(L, st, BLOB_SLOT_IN, in);
    use_arena(L, st, BLOB_SLOT_IN2, f->x1);
    use_arena(L, st, BLOB_SLOT_OUT, out);
    st->s.slot[BLOB_SLOT_W] = wref;
    int32_t *zero = xcalloc((size_t)O, 4);
    st->s.slot[BLOB_SLOT_P0] = put_weights(L, zero, (size_t)O * 4);
    st->s.slot[BLOB_SLOT_P1] = put_weights(L, f->dir, (size_t)O * 4);
    free(zero);
    name_kernel(L, st, "bconv");
    st->k.family = KERNEL_BCONV;
    char *head = bconv_defines(st->k.name, bp, "BNN_EPI_THRESHOLD", bp->out_words);
    st->k.defines = str_printf("%s#define BC_RESD %lld\n#define BC_RESD_H %lld\n#define BC_RESD_W %lld\n"
                               "#define BC_RESD_SH %lld\n#define BC_RESD_SW %lld\n#define BC_RESD_CWP %lld\n",
                               head, (long long)k1, (long long)f->dp.h, (long long)f->dp.w, (long long)f->dp.stride_h,
                               (long long)f->dp.stride_w, (long long)f->dp.words);
    free(head);
    HaloLayer hl = bconv_halo_layer(bp);
    BnnHaloCfg hc, ha;
    int ncand = 0;
    if (choose_halo(L, st, BNN_HALO_VARIANTS, bconv_halo_variant, &hl, &hc, &ncand) != 0 ||
        hc.smem + resd_block_bytes(hc.bn, k1) > BNN_HALO_SMEM_MAX) /* a tuned tile too large: the rule's */
        bconv_halo_variant(0, &hl, &hc);
    char *body = xstrdup(strchr(st->k.defines, '\n') + 1);
    set_halo_kernel(L, st, body, &hc, bp, pref, hl.classes, 0, f);
    add_family_args(st, 1, BLOB_SLOT_IN2);
    /* The alternative: 4x8 x 64 of 4 warps at BC_MINB 3 (168 registers); the threshold layers'
     * 8 warps at BC_MINB 2 (128) spill with dot1's accumulators besides the dot's. */
    const bool alt_fits =
        bconv_halo_variant(HALO_ALT_FALLBACK, &hl, &ha) == 0 && ha.smem + resd_block_bytes(ha.bn, k1) <= BNN_HALO_SMEM_MAX;
    if (alt_fits)
        note_tunable_alt(L, (int)(st - L->steps), HALO_ALT_BATCH, &ha);
    if (alt_fits && tunable_alts(L, n, ncand)) {
        int si = (int)(st - L->steps);
        LStep *alt = new_batch_alt(L, si, HALO_ALT_BATCH);
        name_kernel(L, alt, "bconv");
        alt->k.family = KERNEL_BCONV;
        set_halo_kernel(L, alt, body, &ha, bp, pref, hl.classes, 0, f);
        add_family_args(alt, 1, BLOB_SLOT_IN2);
    }
    free(body);
    return 0;
}

static int lower_bconv(Lower *L, const Node *n, const Value *t, const Value *dir) {
    const Value *x = n->in[0], *w = n->in[1];
    if (w->kind != VAL_CONST)
        return unsupported(L, "a binary convolution with non-constant weights");
    int64_t cwp = packed_words(&x->type);
    if (x->type.rank != 4 || !cwp || cwp % 4)
        return unsupported(L, "a binary convolution on this input format");
    if (attr_int(n, "groups", 1) != 1)
        return unsupported(L, "a grouped binary convolution");
    int64_t pad_value = attr_int(n, "pad_value", 0);
    if (pad_value < 0)
        return unsupported(L, "a binary convolution padded with -1 (pad_value=-1)");
    int64_t C = x->type.dim[1], H = x->type.dim[2], W = x->type.dim[3];
    int64_t O = w->type.dim[0], KH = w->type.dim[2], KW = w->type.dim[3];
    int64_t s[2], d[2], p[4];
    conv_geometry(n, s, d, p);
    int64_t OH = (H + p[0] + p[2] - d[0] * (KH - 1) - 1) / s[0] + 1;
    int64_t OW = (W + p[1] + p[3] - d[1] * (KW - 1) - 1) / s[1] + 1;
    bool pool = get_attr(n, "pool_kernel") != NULL, fallback = false;
    int pool_mode = 0; /* the step's pool: 1 OR of the bits, 2 OR / AND by dir (bconv.cu BC_POOL) */
    PoolSpec ps = {{2, 2}, {2, 2}, {0, 0, 0, 0}, false};
    if (pool) {
        static const int64_t one2[2] = {1, 1}, zero4[4] = {0, 0, 0, 0};
        attr_ints(n, "pool_kernel", ps.k, 2, 2, one2);
        attr_ints(n, "pool_strides", ps.s, 2, 2, one2);
        attr_ints(n, "pool_pads", ps.p, 4, 4, zero4);
        ps.before = attr_int(n, "pool_before", 0) != 0;
        bool ceil_mode = attr_int(n, "pool_ceil_mode", 0) != 0;
        /* Pooling the accumulator before the threshold is the OR of the bits the epilogue
         * computes where dir = +1 and their AND where dir = -1: pool mode 2. */
        bool down = false;
        for (int64_t c = 0; dir && c < dir->type.dim[0]; c++)
            down = down || const_at(dir, c) < 0;
        fallback = ps.k[0] != 2 || ps.k[1] != 2 || ps.s[0] != 2 || ps.s[1] != 2 || ps.p[0] || ps.p[1] ||
                   ps.p[2] || ps.p[3] || (ceil_mode && (OH % 2 || OW % 2)) || OH < 2 || OW < 2;
        pool = !fallback;
        pool_mode = pool ? (ps.before && down ? 2 : 1) : 0;
    }
    Epilogue e;
    if (fallback) /* float accumulators out, pooled and thresholded by later steps */
        pool_epilogue(&ps, dir, O, &e);
    else
        choose_epilogue(L, n, t, dir, &e);
    Node *mp = e.kind == BLOB_EPI_THRESHOLD && !pool ? only_user(L->g, e.out) : NULL;
    if (mp && fusable_pool(mp, OH, OW)) { /* what fuse-binary does at -O2 */
        pool = true;
        pool_mode = 1;
        e.out = mp->out[0];
        L->done[node_index(L->g, mp)] = true;
    }
    int64_t owords = e.bits ? packed_words(&e.bits->type) : 0;
    if (e.kind == BLOB_EPI_THRESHOLD && out_words(L, e.out, &owords))
        return -1;
    if (e.kind == BLOB_EPI_THRESHOLD && !packed_words(&e.out->type) && OH * OW > 1)
        return unsupported(L, "a b1 graph output of a convolution");
    /* W as [O][KH][KW][cwp] words; the popc(w) prefix table P[(KH+1)(KW+1)][O] (bconv.cu). */
    int64_t ldw = KH * KW * cwp, cells = (KH + 1) * (KW + 1);
    uint32_t *wb = xcalloc((size_t)(O * ldw), 4);
    int32_t *pt = xcalloc((size_t)(cells * O), 4);
    for (int64_t o = 0; o < O; o++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t kh = 0; kh < KH; kh++)
                for (int64_t kw = 0; kw < KW; kw++)
                    if (bit_get(w->data, ((o * C + c) * KH + kh) * KW + kw))
                        wb[o * ldw + (kh * KW + kw) * cwp + c / 32] |= 1u << (c % 32);
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i <= KH; i++)
            for (int64_t j = 0; j <= KW; j++) {
                int sum = 0;
                for (int64_t kh = 0; kh < i; kh++)
                    for (int64_t kw = 0; kw < j; kw++)
                        for (int64_t q = 0; q < cwp; q++)
                            sum += __builtin_popcount(wb[o * ldw + (kh * KW + kw) * cwp + q]);
                pt[(i * (KW + 1) + j) * O + o] = sum;
            }
    BlobRef wref = put_weights(L, wb, (size_t)(O * ldw) * 4);
    BlobRef pref = put_weights(L, pt, (size_t)(cells * O) * 4);
    free(wb);
    free(pt);
    int in = buf_of(L, x);
    bool bits = e.kind == BLOB_EPI_THRESHOLD, chain = e.stages > 0;
    int out, bits_out = -1; /* a chain's bits besides its f32 result */
    int rest_from = e.rest_from;
    bool pack_bits = e.pack_bits;
    if (fallback || rest_from >= 0) /* f32 for later steps */
        out = new_buf(L, O * OH * OW * 4);
    else if (chain && !e.need_f32)
        out = def_buf(L, e.bits);
    else
        out = def_buf(L, e.out);
    if (chain && e.need_f32 && e.bits)
        bits_out = def_buf(L, e.bits);
    BlobBconvParams bp = {.h = H, .w = W, .c = C, .words = cwp, .o = O, .kh = KH, .kw = KW,
                          .stride_h = s[0], .stride_w = s[1], .pad_top = p[0], .pad_left = p[1],
                          .pad_bottom = p[2], .pad_right = p[3], .pad_value = pad_value,
                          .dil_h = d[0], .dil_w = d[1], .oh = OH, .ow = OW, .pool = pool_mode,
                          .out_words = owords, .out_layout = bits ? BLOB_LAYOUT_SC : BLOB_LAYOUT_CS,
                          .epi_stages = e.stages, .epi_div = e.div, .epi_residual = e.res};
    /* A shortcut of +-1 bits: the chain reads the packed bits (epi_residual's words field). */
    int64_t res_words = e.residual && rest_from < 0 ? residual_bit_words(L, e.residual) : 0;
    bp.epi_residual |= res_words << 2;
    /* Bits only with such a shortcut: a threshold by the residual's bit, when every channel is
     * one (residual_thresholds); the float chain's operations then run at compile time. */
    int32_t *res_t = NULL, *res_dir = NULL;
    if (chain && !e.need_f32 && res_words && !pool && !fallback && rest_from < 0) {
        res_t = xmalloc((size_t)(2 * O) * 4), res_dir = xmalloc((size_t)(2 * O) * 4);
        if (residual_thresholds(&bp, e.chain, C * KH * KW, res_t, res_dir)) {
            L->nres_thresholds++;
            e.kind = BLOB_EPI_THRESHOLD;
            bits = true, chain = false;
            bp.epi_stages = bp.epi_div = 0;
            bp.epi_residual = res_words << 2;
            bp.out_layout = BLOB_LAYOUT_SC;
            bp.out_words = owords;
        } else {
            free(res_t), free(res_dir);
            res_t = res_dir = NULL;
        }
    }
    /* An f32 residual from a 1x1 downsample conv: its dot inside this conv's GPU kernel
     * (resd_match), where the rule's halo tile and the threshold rows fit in shared memory. */
    ResdFusion rf;
    BnnHaloCfg rule;
    const HaloLayer rl = bconv_halo_layer(&bp);
    bool resd = chain && !e.need_f32 && e.bits && e.residual && !res_words && !pool && !fallback && rest_from < 0 &&
                pad_value == 0 && bconv_halo_variant(0, &rl, &rule) == 0 &&
                resd_match(L, n, &e, &bp, C * KH * KW, &rf);
    if (resd && rule.smem + resd_block_bytes(rule.bn, rf.dp.c) > BNN_HALO_SMEM_MAX) {
        free_resd(&rf);
        resd = false;
    }
    int64_t pix = pool ? OH / 2 * (OW / 2) * 4 : OH * OW;
    /* The CPU's step (for bits and chains, also the GPU's). */
    LStep *st = new_step(L, BLOB_STEP_BCONV);
    use_arena(L, st, BLOB_SLOT_IN, in);
    use_arena(L, st, BLOB_SLOT_OUT, out);
    if (e.residual)
        use_arena(L, st, BLOB_SLOT_IN2, buf_of(L, res_words ? e.residual->def->in[0] : e.residual));
    if (bits_out >= 0)
        use_arena(L, st, BLOB_SLOT_X1, bits_out);
    st->s.slot[BLOB_SLOT_W] = wref;
    st->s.slot[BLOB_SLOT_X0] = pref;
    if (res_t) {
        st->s.epilogue = BLOB_EPI_THRESHOLD;
        st->s.slot[BLOB_SLOT_P0] = put_weights(L, res_t, (size_t)(2 * O) * 4);
        st->s.slot[BLOB_SLOT_P1] = put_weights(L, res_dir, (size_t)(2 * O) * 4);
        free(res_t), free(res_dir);
    } else {
        set_epilogue_operands(L, st, &e, O);
    }
    free_epilogue(&e);
    st->s.bconv = bp;
    if (resd) { /* the CPU runs the chain, the GPU lower_bconv_resd's kernel */
        st->s.flags |= BLOB_STEP_CPU_ONLY;
        int r = lower_bconv_resd(L, n, &bp, &rf, in, out, wref, pref);
        free_resd(&rf);
        return r ? r : lower_chain_rest(L, n, out, &n->out[0]->type, rest_from, true, pack_bits);
    }
    BlobRef ep0 = st->s.slot[BLOB_SLOT_P0], ep1 = st->s.slot[BLOB_SLOT_P1];
    int scratch = -1;
    if (!bits && !chain) { /* I32 */
        st->s.flags |= BLOB_STEP_CPU_ONLY;
        scratch = new_buf(L, L->bufs[out].bytes);
        st = new_step(L, BLOB_STEP_KERNEL); /* the GPU's convolution, NHWC into scratch */
        use_arena(L, st, BLOB_SLOT_IN, in);
        use_arena(L, st, BLOB_SLOT_OUT, scratch);
        st->s.slot[BLOB_SLOT_W] = wref;
        st->s.slot[BLOB_SLOT_X0] = pref;
        st->s.slot[BLOB_SLOT_P0] = ep0;
        st->s.slot[BLOB_SLOT_P1] = ep1;
    }
    name_kernel(L, st, "bconv");
    st->k.family = KERNEL_BCONV;
    st->k.defines = bconv_defines(st->k.name, &bp, epi_macro(&e), bits ? owords : O);
    if (bp.epi_residual && !chain) {
        char *head = st->k.defines;
        st->k.defines = str_printf("%s#define BC_RESW %lld\n", head, (long long)res_words);
        free(head);
    }
    if (chain) {
        char *head = st->k.defines;
        st->k.defines = str_printf("%s#define BC_NST %d\n#define BC_DIV %u\n#define BC_RES %d\n#define BC_F32 %d\n"
                                   "#define BC_LDB %lld\n#define BC_RESW %lld\n",
                                   head, e.stages, e.div, e.res, e.need_f32, (long long)owords,
                                   (long long)res_words);
        free(head);
    }
    /* The halo-tile kernel (bconv.cu BC_HALO) wherever its shared memory fits, its tile the rule's
     * (bnn_halo_variant 0, kernels.h) or the one bnncc --tune chose (choose_halo); else the
     * implicit GEMM's default tile. */
    BnnHaloCfg hc;
    HaloLayer hl = bconv_halo_layer(&bp);
    char *halo_body = NULL; /* the layer's defines after BC_NAME, for a batch alternative too */
    int resw = bp.epi_residual && !chain ? (int)res_words : 0; /* BC_RESW of a threshold */
    int ncand = 0;
    if (choose_halo(L, st, BNN_HALO_VARIANTS, bconv_halo_variant, &hl, &hc, &ncand) == 0) {
        halo_body = xstrdup(strchr(st->k.defines, '\n') + 1);
        set_halo_kernel(L, st, halo_body, &hc, &bp, pref, hl.classes, resw, NULL);
    } else {
        BlobGridDim grid[3] = {{(uint32_t)((O + BNN_BCONV_BN - 1) / BNN_BCONV_BN), 0, 1},
                               {0, (uint32_t)pix, BNN_BCONV_BM}, {1, 0, 1}};
        uint32_t block[3] = {(uint32_t)bnn_tile_threads(BNN_BCONV_WM, BNN_BCONV_WN), 1, 1};
        blob_step_set_kernel(&st->s, st->k.name, grid, block,
                             (uint32_t)bnn_tile_smem(BNN_BCONV_BM, BNN_BCONV_BN, BNN_BCONV_KC, BNN_BCONV_STAGES));
        st->s.flags |= BLOB_STEP_ONE_WAVE; /* its blocks walk the row tiles in y: no 65,535 bound on the batch */
    }
    if (chain) {
        add_chain_args(st, e.need_f32, bits_out >= 0 ? BLOB_SLOT_X1 : e.bits ? BLOB_SLOT_OUT : -1);
    } else { /* a threshold by a residual of bits takes R after Y */
        add_family_args(st, 1, bp.epi_residual ? BLOB_SLOT_IN2 : -1);
    }
    /* A threshold's batch alternative: 4x8-pixel tiles of 64 channels from batch 16 on, where
     * the rule's 16-pixel tiles of 32 channels lose (8 warps, else 4; docs/codegen.md "Batch
     * alternatives"). */
    BnnHaloCfg ha;
    const bool alt_fits = halo_body && bits && !chain && !pool &&
                          (bconv_halo_variant(HALO_ALT_VARIANT, &hl, &ha) == 0 ||
                           bconv_halo_variant(HALO_ALT_FALLBACK, &hl, &ha) == 0);
    if (alt_fits)
        note_tunable_alt(L, (int)(st - L->steps), HALO_ALT_BATCH, &ha);
    if (alt_fits && tunable_alts(L, n, ncand)) {
        int si = (int)(st - L->steps);
        LStep *alt = new_batch_alt(L, si, HALO_ALT_BATCH);
        st = &L->steps[si];
        name_kernel(L, alt, "bconv");
        alt->k.family = KERNEL_BCONV;
        set_halo_kernel(L, alt, halo_body, &ha, &bp, pref, hl.classes, resw, NULL);
        add_family_args(alt, 1, bp.epi_residual ? BLOB_SLOT_IN2 : -1);
    }
    free(halo_body);
    if (!bits && !chain) {
        st = new_step(L, BLOB_STEP_KERNEL); /* NHWC scratch -> the NCHW result */
        use_arena(L, st, BLOB_SLOT_IN, scratch);
        use_arena(L, st, BLOB_SLOT_OUT, out);
        float_kernel(L, st, "transpose", O * OH * OW,
                     str_printf("bnn_transpose_sc(item, j, (const unsigned *)in, (unsigned *)out, %lld, %lld)",
                                (long long)(OH * OW), (long long)O));
    }
    if (fallback)
        return pool_and_threshold(L, n, out, O, OH, OW, &ps, t, dir);
    if (n->op == OP_BCONV2D_CHAIN)
        return lower_chain_rest(L, n, out, &n->out[0]->type, rest_from, true, pack_bits);
    return 0;
}

/* ---------------------------------------------------------------- float steps */

/* f32 -> bits: binarize, or (after an affine) a float threshold. */
static void add_pack(Lower *L, int in, const Type *xt, const Value *out, int zero) {
    int64_t C = xt->dim[1], S = spatial_of(xt), words = 0;
    out_words(L, out, &words);
    int ob = def_buf(L, out);
    LStep *st = new_step(L, BLOB_STEP_PACK);
    use_arena(L, st, BLOB_SLOT_IN, in);
    use_arena(L, st, BLOB_SLOT_OUT, ob);
    st->s.pack = (BlobPackParams){.channels = C, .spatial = S, .words = words, .zero = zero,
                                  .layout = BLOB_LAYOUT_CS};
    float_kernel(L, st, "pack", S * words,
                 str_printf("bnn_pack(item, j, (const float *)in, (unsigned *)out, %lld, %lld, %lld, %d, 0)",
                            (long long)C, (long long)S, (long long)words, zero));
}

static int check_pack_target(Lower *L, const Type *xt, const Value *out) {
    if (xt->dtype != TY_F32 || xt->rank < 2)
        return unsupported(L, "binarizing a tensor of rank < 2");
    int64_t words;
    if (out_words(L, out, &words))
        return -1;
    if (!packed_words(&out->type) && spatial_of(xt) > 1)
        return unsupported(L, "a b1 graph output with spatial dimensions");
    return 0;
}

static int lower_binarize(Lower *L, const Node *n) {
    if (check_pack_target(L, &n->in[0]->type, n->out[0]))
        return -1;
    add_pack(L, buf_of(L, n->in[0]), &n->in[0]->type, n->out[0], (int)attr_int(n, "zero", 1));
    return 0;
}

/* y = x * scale[c] + bias[c] (or x / scale[c] + bias[c]) with per-channel (or, with
 * channels = numel and spatial = 1, per-element) parameters. */
static void add_affine(Lower *L, int in, int out, const float *scale, const float *bias, int64_t channels,
                       int64_t spatial, bool div) {
    LStep *st = new_step(L, BLOB_STEP_AFFINE);
    use_arena(L, st, BLOB_SLOT_IN, in);
    use_arena(L, st, BLOB_SLOT_OUT, out);
    st->s.slot[BLOB_SLOT_P0] = put_weights(L, scale, (size_t)channels * 4);
    st->s.slot[BLOB_SLOT_P1] = put_weights(L, bias, (size_t)channels * 4);
    st->s.affine = (BlobAffineParams){.channels = channels, .spatial = spatial, .layout = BLOB_LAYOUT_CS,
                                      .div = div};
    float_kernel(L, st, div ? "div" : "affine", channels * spatial,
                 str_printf("bnn_affine(item, j, (const float *)in, (const float *)p0, (const float *)p1, "
                            "(float *)out, %lld, %lld, 0, %d)",
                            (long long)channels, (long long)spatial, div));
}

/* The values of constant k broadcast against x's per-item shape: per channel (axis 1) when
 * k varies along it only (*spatial = the rest), else per element (*spatial = 1). NULL when
 * k has the batch axis or would grow x. */
static float *broadcast_const(const Value *k, const Type *x, int64_t *channels, int64_t *spatial) {
    int r = x->rank, kr = k->type.rank;
    if (kr > r || k->type.dtype == TY_B1)
        return NULL;
    int64_t kd[MAX_RANK];
    for (int i = 0; i < r; i++) {
        int ki = i - (r - kr);
        kd[i] = ki >= 0 ? k->type.dim[ki] : 1;
        if (kd[i] != 1 && kd[i] != x->dim[i])
            return NULL;
    }
    if (r >= 1 && kd[0] != 1)
        return NULL; /* one constant per batch item: not a plan operand */
    bool per_channel = r >= 2;
    for (int i = 0; i < r; i++)
        if (i != 1 && kd[i] != 1)
            per_channel = false;
    if (per_channel) {
        *channels = x->dim[1];
        *spatial = spatial_of(x);
        float *v = xmalloc((size_t)*channels * 4);
        for (int64_t c = 0; c < *channels; c++)
            v[c] = (float)const_at(k, kd[1] == 1 ? 0 : c);
        return v;
    }
    int64_t n = item_numel(x);
    *channels = n;
    *spatial = 1;
    float *v = xmalloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) {
        int64_t rem = i, at = 0, stride = 1;
        for (int d = r - 1; d >= 1; d--) {
            int64_t xi = rem % x->dim[d];
            rem /= x->dim[d];
            if (kd[d] != 1)
                at += xi * stride;
            stride *= kd[d];
        }
        v[i] = (float)const_at(k, at);
    }
    return v;
}

/* out = a + b, elementwise over equal shapes t (f32 or i32). */
static void add_sum(Lower *L, int a, int b, int out, const Type *t) {
    LStep *st = new_step(L, BLOB_STEP_ADD);
    use_arena(L, st, BLOB_SLOT_IN, a);
    use_arena(L, st, BLOB_SLOT_IN2, b);
    use_arena(L, st, BLOB_SLOT_OUT, out);
    int64_t count = item_numel(t);
    bool f = t->dtype == TY_F32;
    st->s.add = (BlobAddParams){.count = count, .dtype = f ? BLOB_DTYPE_F32 : BLOB_DTYPE_I32};
    float_kernel(L, st, "add", count,
                 str_printf(f ? "bnn_add_f32(item, j, (const float *)in, (const float *)in2, (float *)out, %lld, %lld)"
                              : "bnn_add_i32(item, j, (const int *)in, (const int *)in2, (int *)out, %lld, %lld)",
                            (long long)count, (long long)count));
}

/* add, sub, mul, div with one constant operand: one affine step, exact (x*1, x + -0 are x). */
static int lower_elementwise(Lower *L, const Node *n) {
    const Value *a = n->in[0], *b = n->in[1], *y = n->out[0];
    bool ca = a->kind == VAL_CONST, cb = b->kind == VAL_CONST;
    if (!ca && !cb) {
        if (n->op != OP_ADD || !type_equal(&a->type, &b->type) || !type_equal(&a->type, &y->type) ||
            (y->type.dtype != TY_F32 && y->type.dtype != TY_I32))
            return unsupported(L, "an elementwise op of two computed tensors other than add of equal shapes");
        int ab = buf_of(L, a), bb = buf_of(L, b);
        add_sum(L, ab, bb, def_buf(L, y), &y->type);
        return 0;
    }
    if (ca && cb)
        return unsupported(L, "an elementwise op of two constants (run cleanup: -O1 or more)");
    const Value *x = ca ? b : a, *k = ca ? a : b;
    if (x->type.dtype != TY_F32 || !type_equal(&x->type, &y->type))
        return unsupported(L, "an elementwise op with a constant on a non-f32 tensor or one that broadcasts it");
    int64_t channels, spatial;
    float *kv = broadcast_const(k, &x->type, &channels, &spatial);
    if (!kv)
        return unsupported(L, "an elementwise op with a constant that does not broadcast into its input");
    float *scale = xmalloc((size_t)channels * 4), *bias = xmalloc((size_t)channels * 4);
    bool div = false;
    for (int64_t c = 0; c < channels; c++) {
        scale[c] = 1.0f, bias[c] = -0.0f;
        switch (n->op) {
        case OP_MUL: scale[c] = kv[c]; break;
        case OP_ADD: bias[c] = kv[c]; break;
        case OP_SUB:
            if (ca)
                scale[c] = -1.0f, bias[c] = kv[c]; /* k - x = -x + k, exactly */
            else
                bias[c] = -kv[c]; /* x - k = x + (-k), exactly */
            break;
        case OP_DIV: scale[c] = kv[c], div = true; break;
        default: unreachable("not elementwise");
        }
    }
    free(kv);
    if (n->op == OP_DIV && ca) {
        free(scale);
        free(bias);
        return unsupported(L, "a constant divided by a tensor");
    }
    if (n->op == OP_MUL || n->op == OP_DIV) /* x*s + b, x/s + b: still one rounding each */
        y = absorb_affine(L, y, scale, bias, channels, spatial, false);
    add_affine(L, buf_of(L, x), def_buf(L, y), scale, bias, channels, spatial, div);
    free(scale);
    free(bias);
    return 0;
}

/* batchnorm = (x - mean) / sqrtf(var + eps) * scale + bias: three affine steps in the
 * interpreter's order, so every rounding is the same. */
static int lower_batchnorm(Lower *L, const Node *n) {
    const Value *x = n->in[0], *y = n->out[0];
    for (int i = 1; i < 5; i++)
        if (n->in[i]->kind != VAL_CONST || n->in[i]->type.dtype != TY_F32)
            return unsupported(L, "a batchnorm with non-constant parameters");
    if (x->type.rank < 2)
        return unsupported(L, "a batchnorm of rank < 2");
    int64_t C = x->type.dim[1], S = spatial_of(&x->type);
    float eps = attr_float(n, "epsilon", 1e-5f);
    float *one = xmalloc((size_t)C * 4), *nmean = xmalloc((size_t)C * 4), *den = xmalloc((size_t)C * 4),
          *zero = xmalloc((size_t)C * 4);
    const float *scale = n->in[1]->data, *bias = n->in[2]->data, *mean = n->in[3]->data, *var = n->in[4]->data;
    for (int64_t c = 0; c < C; c++) {
        one[c] = 1.0f;
        nmean[c] = -mean[c];
        den[c] = sqrtf(var[c] + eps);
        zero[c] = -0.0f;
    }
    int t1 = new_buf(L, value_bytes(&x->type)), t2 = new_buf(L, value_bytes(&x->type));
    add_affine(L, buf_of(L, x), t1, one, nmean, C, S, false);
    add_affine(L, t1, t2, den, zero, C, S, true);
    add_affine(L, t2, def_buf(L, y), scale, bias, C, S, false);
    free(one);
    free(nmean);
    free(den);
    free(zero);
    return 0;
}

/* A float threshold to bits: x >= t is x - t >= 0 (dir -1: t - x >= 0), exact in IEEE
 * arithmetic for finite values, then packed with 0 -> +1. */
static int lower_threshold(Lower *L, const Node *n) {
    const Value *x = n->in[0], *t = n->in[1], *dir = n->nin == 3 ? n->in[2] : NULL;
    if (t->type.rank != 1)
        return unsupported(L, "a multi-level threshold (thresholds of rank 2)");
    if (x->type.dtype != TY_F32)
        return unsupported(L, "an integer threshold that is not fused into its binary layer");
    if (t->kind != VAL_CONST || (dir && dir->kind != VAL_CONST))
        return unsupported(L, "a threshold with non-constant thresholds");
    if (check_pack_target(L, &x->type, n->out[0]))
        return -1;
    int64_t C = x->type.dim[1], S = spatial_of(&x->type);
    float *scale = xmalloc((size_t)C * 4), *bias = xmalloc((size_t)C * 4);
    for (int64_t c = 0; c < C; c++) {
        float tv = (float)const_at(t, t->type.dim[0] == 1 ? 0 : c);
        bool down = dir && const_at(dir, dir->type.dim[0] == 1 ? 0 : c) < 0;
        scale[c] = down ? -1.0f : 1.0f;
        bias[c] = down ? tv : -tv;
    }
    int tmp = new_buf(L, value_bytes(&x->type));
    add_affine(L, buf_of(L, x), tmp, scale, bias, C, S, false);
    free(scale);
    free(bias);
    add_pack(L, tmp, &x->type, n->out[0], 1);
    return 0;
}

/* Words per pixel of the NHWC-packed bits that a bconv2d_chain reads as its shortcut directly
 * (an XNOR block's identity shortcut: the block input's bits as +-1), or 0. r qualifies when it
 * is a cast of packed bits to f32 read by nothing but that chain's residual add, and the chain
 * adds it in its kernel (no relu stage, so no later add step). Then no unpack is lowered. */
static int64_t residual_bit_words(const Lower *L, const Value *r) {
    const Node *cast = r->kind == VAL_NODE ? r->def : NULL;
    if (!cast || cast->op != OP_CAST || cast->in[0]->type.dtype != TY_B1 || r->type.dtype != TY_F32 ||
        r->type.rank != 4 || count_uses(L->g, r) != 1)
        return 0;
    const Node *u = only_user(L->g, r);
    if (!u || u->op != OP_BCONV2D_CHAIN || u->nin != 4 || u->in[3] != r || u->in[0] == r)
        return 0;
    int64_t relu[CHAIN_MAX_STAGES] = {0};
    attr_ints(u, "relu", relu, CHAIN_MAX_STAGES, 0, NULL);
    for (int s = 0; s < CHAIN_MAX_STAGES; s++)
        if (relu[s])
            return 0;
    return packed_words(&cast->in[0]->type);
}

static int lower_cast(Lower *L, const Node *n) {
    const Value *x = n->in[0], *y = n->out[0];
    DType from = x->type.dtype;
    if (y->type.dtype != TY_F32)
        return unsupported(L, "a cast to anything but f32");
    if (from == TY_B1 && residual_bit_words(L, y))
        return 0; /* the chain reads x's bits itself */
    if (from == TY_B1) {
        int64_t C = x->type.dim[1], S = spatial_of(&x->type), words = packed_words(&x->type);
        if (x->type.rank < 2 || !words)
            return unsupported(L, "a cast of a canonical b1 tensor");
        int out = def_buf(L, y);
        LStep *st = new_step(L, BLOB_STEP_UNPACK);
        use_arena(L, st, BLOB_SLOT_IN, buf_of(L, x));
        use_arena(L, st, BLOB_SLOT_OUT, out);
        st->s.unpack = (BlobUnpackParams){.channels = C, .spatial = S, .words = words, .layout = BLOB_LAYOUT_CS};
        float_kernel(L, st, "unpack", C * S,
                     str_printf("bnn_unpack(item, j, (const unsigned *)in, (float *)out, %lld, %lld, %lld, 0)",
                                (long long)C, (long long)S, (long long)words));
        return 0;
    }
    if (from != TY_I32 && from != TY_I8 && from != TY_U8)
        return unsupported(L, "a cast from this dtype");
    int64_t count = item_numel(&y->type);
    int out = def_buf(L, y);
    LStep *st = new_step(L, BLOB_STEP_CAST);
    use_arena(L, st, BLOB_SLOT_IN, buf_of(L, x));
    use_arena(L, st, BLOB_SLOT_OUT, out);
    st->s.cast = (BlobCastParams){.count = count, .from = blob_dtype(from), .to = BLOB_DTYPE_F32};
    float_kernel(L, st, "cast", count,
                 str_printf("bnn_cast(item, j, in, (float *)out, %lld, %d)", (long long)count, blob_dtype(from)));
    return 0;
}

/* ---------------------------------------------------------------- tiled float kernels */

#define TILE_STAGE_FLOATS 12288 /* a conv stage's shared memory budget (48 KiB) */
#define TILE_OPERANDS "(const float *)in, (const float *)w, (const float *)p0, (float *)out"

/* A tiled float step's GPU kernel (float_ops.cu bnn_conv2d_tile / bnn_conv2d_mma /
 * bnn_dense_tile / bnn_dense_few / bnn_dense_long): the config struct `cfg` (its members; the
 * struct is named after the kernel), then a __global__ calling fn<cfg>(total, operands).
 * Arguments as float_kernel's: the six operand slots and total = batch * rows. */
static void tile_kernel(Lower *L, LStep *st, const char *tag, char *cfg, const char *fn, const char *operands,
                        const BlobGridDim grid[3], int threads, int64_t smem, int64_t rows) {
    name_kernel(L, st, tag);
    st->k.family = KERNEL_FLOAT_TILE;
    st->k.threads = threads;
    st->k.defines = str_printf("struct %s_cfg {\n%s};\n", st->k.name, cfg);
    st->k.call = str_printf("%s<%s_cfg>(total, %s)", fn, st->k.name, operands);
    st->k.smem = smem;
    free(cfg);
    uint32_t block[3] = {(uint32_t)threads, 1, 1};
    blob_step_set_kernel(&st->s, st->k.name, grid, block, (uint32_t)smem);
    add_operand_args(st);
    blob_step_add_arg(&st->s, BLOB_ARG_BATCH, 0, rows);
}

/* The dense step's kernel: bnn_dense_tile. Few outputs (a classifier), or narrow: 128 threads,
 * 16 or 32 columns and one row per thread, K in chunks of 128, so that small batches
 * still spread over SMs and each thread's serial k loop is all the latency; more outputs: 64
 * columns x 4 rows per thread, 256 threads (without a pool), a block reusing its weight chunk
 * for 16 rows (ResNet's 512 -> 1000 at batch 256 on an H200: 128 threads and 8 rows 0.032 ms,
 * 256 and 16 rows 0.024, 512 and 32 rows 0.024; docs/perf.md stop 48). V4 where K % 4 == 0
 * (no pool): 16-byte copies and loads of 4 k (0.038 -> 0.032 ms there). gs > 0: x is the
 * b1 input of a global average pool of gs pixels of gw words (fuse_gap_dense), pooled by each
 * block into shared memory. The kernel waits for the steps before after its first weight
 * copies (PDL). */
static void dense_tile_kernel(Lower *L, LStep *st, int64_t n, int64_t k, bool bias, bool narrow, int64_t gs,
                              int64_t gw, const char *operands) {
    int bn = n <= 16 || narrow ? 16 : n <= 32 ? 32 : 64, tm = bn == 64 ? 4 : 1, kc = bn == 64 ? 64 : 128;
    int nt = bn == 64 && !gs ? 256 : 128;
    int stages = 3;
    int bm = nt / bn * tm;
    int64_t nkc = (k + kc - 1) / kc;
    const int v4 = !gs && k % 4 == 0; /* 16-byte copies and loads of 4 k (float_ops.cu BnnDenseTile) */
    /* the stages; with gs the pooled rows, the bits and the pool's values (float_ops.cu POOL) */
    int64_t smem = ((int64_t)stages * ((gs ? 0 : bm) + bn) * (kc + (v4 ? 4 : 1)) +
                    (gs ? bm * (nkc * kc + 1) + bm * gs * gw + gs + 1 : 0)) * 4;
    char *cfg = str_printf("    static constexpr int N = %lld, K = %lld, BIAS = %d, SMEM = %lld, GS = %lld, GW = %lld;\n"
                           "    static constexpr int NT = %d, BN = %d, BM = %d, TM = %d, KC = %d, S = %d, V4 = %d;\n",
                           (long long)n, (long long)k, bias, (long long)smem, (long long)gs, (long long)gw, nt, bn,
                           bm, tm, kc, stages, v4);
    BlobGridDim grid[3] = {{0, 1, (uint32_t)bm}, {(uint32_t)((n + bn - 1) / bn), 0, 1}, {1, 0, 1}};
    tile_kernel(L, st, gs ? "gapdense" : "dense", cfg, "bnn_dense_tile", operands, grid, nt, smem, 1);
    st->k.waits_itself = true;
}

enum {
    DENSE_FEW_BATCH = 4,  /* bnn_dense_few below this batch (its BM), the tiles from it on */
    DENSE_ALT_BATCH = 64, /* the narrow tile below this batch, the wide one from it on */
    DENSE_FEW_SMEM_MAX = 160 * 1024,
};

/* bnn_dense_few's kernel for step st (DENSE_FEW_BATCH rows, 16 columns, 128 threads a block;
 * float_ops.cu), or false where its shared memory (the block's weight rows whole) would pass
 * DENSE_FEW_SMEM_MAX. */
static bool dense_few_kernel(Lower *L, LStep *st, int64_t n, int64_t k, bool bias, int64_t gs, int64_t gw,
                             const char *operands) {
    const int nt = 128, bn = 16, bm = DENSE_FEW_BATCH;
    const int64_t xld = (k + 3) / 4 * 4 + 4;
    const int64_t smem = ((bn + bm) * xld + (gs ? bm * gs * gw + gs + 1 : 0)) * 4;
    if (smem > DENSE_FEW_SMEM_MAX)
        return false;
    char *cfg = str_printf("    static constexpr int N = %lld, K = %lld, BIAS = %d, SMEM = %lld, GS = %lld, GW = %lld;\n"
                           "    static constexpr int NT = %d, BN = %d, BM = %d;\n",
                           (long long)n, (long long)k, bias, (long long)smem, (long long)gs, (long long)gw, nt, bn,
                           bm);
    BlobGridDim grid[3] = {{0, 1, (uint32_t)bm}, {(uint32_t)((n + bn - 1) / bn), 0, 1}, {1, 0, 1}};
    tile_kernel(L, st, gs ? "gapdense" : "dense", cfg, "bnn_dense_few", operands, grid, nt, smem, 1);
    st->k.waits_itself = true;
    return true;
}

/* Few outputs over a long K (a classifier after a flatten): bnn_dense_long, 256 threads a
 * block, 2 k a thread and chunk, BM rows x BN columns of chains (at most 32), from
 * DENSE_LONG_K on. VGG-small's 8192 -> 10 at batch 1 on an H200: 99 us inside the graph on the
 * tile, whose chunks wait for their copies one after another (docs/perf.md stop 33). */
enum { DENSE_LONG_K = 2048, DENSE_LONG_NT = 256, DENSE_LONG_KPT = 2 };

static void dense_long_kernel(Lower *L, LStep *st, int64_t n, int64_t k, bool bias, const char *operands) {
    const int bn = (int)n, bm = 32 / bn;
    const int64_t smem = (int64_t)(bm + bn) * (DENSE_LONG_KPT * DENSE_LONG_NT + 4) * 4;
    char *cfg = str_printf("    static constexpr int N = %lld, K = %lld, BIAS = %d, SMEM = %lld;\n"
                           "    static constexpr int NT = %d, BM = %d, BN = %d, KPT = %d;\n",
                           (long long)n, (long long)k, bias, (long long)smem, DENSE_LONG_NT, bm, bn, DENSE_LONG_KPT);
    BlobGridDim grid[3] = {{0, 1, (uint32_t)bm}, {1, 0, 1}, {1, 0, 1}};
    tile_kernel(L, st, "dense", cfg, "bnn_dense_long", operands, grid, DENSE_LONG_NT, smem, 1);
    st->k.waits_itself = true;
}

/* The kernels of dense step si (or of the kernel step fuse_gap_dense made): bnn_dense_long
 * where few outputs have a long K (not after a pool of bits); else, with batch alternatives,
 * bnn_dense_few below DENSE_FEW_BATCH, then the narrow tile (more than 32 outputs) below
 * DENSE_ALT_BATCH, then the wide one; the alternatives are appended to the plan in that
 * order. Returns how many. */
static int dense_kernels(Lower *L, int si, int64_t n, int64_t k, bool bias, int64_t gs, int64_t gw,
                         const char *operands) {
    if (!gs && n <= 32 && k >= DENSE_LONG_K) {
        dense_long_kernel(L, &L->steps[si], n, k, bias, operands);
        return 0;
    }
    int nalts = 0;
    bool few = L->batch_alts && dense_few_kernel(L, &L->steps[si], n, k, bias, gs, gw, operands);
    bool narrow = L->batch_alts && n > 32;
    LStep *st = &L->steps[si];
    if (few) {
        st = new_batch_alt(L, si, DENSE_FEW_BATCH);
        nalts++;
    }
    dense_tile_kernel(L, st, n, k, bias, narrow, gs, gw, operands);
    if (narrow) {
        dense_tile_kernel(L, new_batch_alt(L, si, DENSE_ALT_BATCH), n, k, bias, false, gs, gw, operands);
        nalts++;
    }
    return nalts;
}

/* dense over f32 x f32, or b1 x f32 (bits as +-1: an unpack step into a scratch f32 [N,K],
 * then the float dense step; x * w is exact for x = +-1, the reference's same sums). */
static int lower_dense_f32(Lower *L, const Node *n) {
    const Value *x = n->in[0], *w = n->in[1], *b = n->nin == 3 ? n->in[2] : NULL;
    bool bits = x->type.dtype == TY_B1;
    if ((x->type.dtype != TY_F32 && !bits) || w->type.dtype != TY_F32 || w->kind != VAL_CONST ||
        (b && (b->kind != VAL_CONST || b->type.dtype != TY_F32)) || x->type.rank != 2)
        return unsupported(L, "a dense layer of this form (float or b1 activations, constant float weights "
                              "expected)");
    int64_t k = x->type.dim[1], o = w->type.dim[0];
    int in = bits ? -1 : buf_of(L, x);
    if (bits) {
        int64_t words = stored_words(&x->type);
        if (!words)
            return unsupported(L, "a dense layer over b1 activations in this format");
        in = new_buf(L, k * 4);
        LStep *u = new_step(L, BLOB_STEP_UNPACK);
        use_arena(L, u, BLOB_SLOT_IN, buf_of(L, x));
        use_arena(L, u, BLOB_SLOT_OUT, in);
        u->s.unpack = (BlobUnpackParams){.channels = k, .spatial = 1, .words = words, .layout = BLOB_LAYOUT_CS};
        float_kernel(L, u, "unpack", k,
                     str_printf("bnn_unpack(item, j, (const unsigned *)in, (float *)out, %lld, 1, %lld, 0)",
                                (long long)k, (long long)words));
    }
    int out = def_buf(L, n->out[0]);
    LStep *st = new_step(L, BLOB_STEP_DENSE);
    use_arena(L, st, BLOB_SLOT_IN, in);
    use_arena(L, st, BLOB_SLOT_OUT, out);
    st->s.slot[BLOB_SLOT_W] = put_weights(L, w->data, (size_t)(o * k) * 4);
    if (b)
        st->s.slot[BLOB_SLOT_P0] = put_weights(L, b->data, (size_t)o * 4);
    st->s.dense = (BlobDenseParams){.rows = 1, .n = o, .k = k};
    /* A narrow tile at small batches: a batch 1 classifier of 1000 outputs gets 63 blocks, not 16. */
    dense_kernels(L, (int)(st - L->steps), o, k, b != NULL, 0, 0, TILE_OPERANDS);
    return 0;
}

/* ---------------------------------------------------------------- pool + classifier */

enum { GAP_DENSE_BITS_MAX = 32768 }; /* bytes of bits a dense tile's items may pool in shared memory */

/* A global average pool of bits whose only reader is a float dense layer over its channels (the
 * head of XNOR ResNet-18: 7x7x512 bits, then 512 -> 1000): on the GPU one kernel step computes
 * both, the dense kernel pooling its items' bits itself (float_ops.cu, GS > 0:
 * the pool's exact values), which saves a launch and the pooled floats' trip through memory at
 * small batches. The two steps stay for the CPU path, CPU-only; the dense's batch alternatives
 * go, the kernel step gets its own (dense_kernels). */
static void fuse_gap_dense(Lower *L) {
    for (int i = 0; i + 1 < L->nsteps; i++) {
        const LStep *g = &L->steps[i], *d = &L->steps[i + 1];
        const int buf = g->buf[BLOB_SLOT_OUT];
        if (g->s.kind != BLOB_STEP_GLOBALAVGPOOL || !g->s.gap.words || g->s.flags || !g->has_kernel ||
            d->s.kind != BLOB_STEP_DENSE || d->s.flags || !d->has_kernel || d->buf[BLOB_SLOT_IN] != buf ||
            L->bufs[buf].pinned || d->s.dense.rows != 1 || d->s.dense.k != g->s.gap.channels)
            continue;
        int alts = 0; /* the dense's batch alternatives, right after it */
        while (i + 2 + alts < L->nsteps && (L->steps[i + 2 + alts].s.flags & BLOB_STEP_BATCH_ALT))
            alts++;
        bool only_reader = true; /* the pool's output: read by the dense (and its alternatives) only */
        for (int s = 0; s < L->nsteps; s++)
            for (int j = 0; j < BLOB_MAX_SLOTS; j++)
                if (L->steps[s].buf[j] == buf && !(s == i && j == BLOB_SLOT_OUT) &&
                    !(s >= i + 1 && s <= i + 1 + alts && j == BLOB_SLOT_IN))
                    only_reader = false;
        const int64_t gs = g->s.gap.spatial, gw = g->s.gap.words, n = d->s.dense.n, k = d->s.dense.k;
        if (!only_reader || 8 * gs * gw * 4 > GAP_DENSE_BITS_MAX)
            continue;
        const BlobRef wr = d->s.slot[BLOB_SLOT_W], br = d->s.slot[BLOB_SLOT_P0];
        const bool bias = br.space != BLOB_SPACE_NONE;
        drop_batch_alts(L, i + 1); /* the kernel step gets alternatives of its own */
        uint64_t lo, hi;
        weights_window(L, i, i + 1, &lo, &hi);
        char *bp = bias ? str_printf("(const float *)((const char *)w + %lld)", (long long)(br.offset - lo))
                        : xstrdup("nullptr");
        char *ops = str_printf("in, (const float *)((const char *)w + %lld), %s, (float *)out",
                               (long long)(wr.offset - lo), bp);
        free(bp);
        replace_on_gpu(L, i, i + 1, L->steps[i + 1].k.ir_line, lo, hi);
        const int nalts = dense_kernels(L, i + 2, n, k, bias, gs, gw, ops);
        for (int a = 0; a < nalts; a++) /* appended: after the kernel step, in order */
            move_last_step(L, i + 3);
        free(ops);
        L->ngap_denses++;
        i += 2 + nalts; /* past the new steps */
    }
}

/* The shape of a tiled conv2d kernel (bnn_conv2d_tile in float_ops.cu). */
typedef struct ConvTile {
    int64_t h, w, oh, ow; /* the image and output as tiled (a 1x1 convolution: flattened) */
    int to, bo, bh, bw, tp, cc, pcw, stages;
    bool flat;      /* a 1x1 conv tiled over the batch's pixels (FLAT): tiles cross images */
    int64_t xs, ws; /* floats a stage stages: the patch (BnnConvTile::XS) and the weights (WS) */
    int64_t smem;   /* the launch's shared memory: stages of xs + ws floats */
} ConvTile;

/* Words per phase row of a staged input patch: pc columns split into sw phases, padded so
 * that a warp's 32 pixels (32 / bw rows of bw, bw a power of two) read 32 distinct banks:
 * the words between two output rows, sh * sw * pcw, must be bw times an odd number mod 32. */
static int patch_pcw(int pc, int sw, int sh, int bw) {
    int pcw = (pc + sw - 1) / sw;
    for (int p = pcw; bw < 32 && p < pcw + 64; p++)
        if (sh * sw * p % (2 * bw) == bw)
            return p;
    return pcw;
}

/* The tile of a convolution with output oh x ow. The rule (force_tp 0): 8 channels a thread
 * (fewer if the group has fewer, or force_to if > 0), up to 8 warps a block, each warp 32
 * pixels x tp; the pixel tile
 * bh x bw that wastes least of the edge tiles (ties: the smaller patch), preferring 8 pixels a
 * thread down to 1 while the waste is above a quarter; then as many input channels a stage as
 * the budget holds (a divisor of the group's channels if one is near). force_tp > 0 (bnncc
 * --tune's other candidates): that many pixels a thread, up to max_warps warps. False when even
 * one channel does not fit (huge kernels or dilations): the caller uses the simple kernel. */
static bool choose_conv_tile(const BlobConv2dParams *cp, int64_t oh, int64_t ow, int force_tp, int max_warps,
                             int force_to, ConvTile *t) {
    int64_t cg = cp->c / cp->groups, og = cp->o / cp->groups, kk = cp->kh * cp->kw;
    const int to = force_to ? force_to : 8;
    t->to = og >= to ? to : (int)og;
    int64_t nco = (og + t->to - 1) / t->to;
    t->bo = t->to * (int)(nco < max_warps ? nco : max_warps);
    double best = -1.0;
    for (int tp = force_tp ? force_tp : 8; tp >= 1 && (force_tp ? tp == force_tp : best < 0.75); tp /= 2) {
        int64_t patch_best = 0;
        best = -1.0;
        for (int bw = 1; bw <= 32 * tp; bw *= 2) {
            int bh = 32 * tp / bw;
            double eff = (double)(oh * ow) / (double)(((oh + bh - 1) / bh * bh) * ((ow + bw - 1) / bw * bw));
            int64_t pr = (bh - 1) * cp->stride_h + (cp->kh - 1) * cp->dil_h + 1;
            int64_t pc = (bw - 1) * cp->stride_w + (cp->kw - 1) * cp->dil_w + 1;
            if (pr * pc > TILE_STAGE_FLOATS)
                continue;
            int pcw = patch_pcw((int)pc, (int)cp->stride_w, (int)cp->stride_h, bw);
            int64_t patch = pr * cp->stride_w * pcw;
            if (eff > best + 1e-9 || (eff > best - 1e-9 && patch < patch_best)) {
                best = eff, patch_best = patch;
                t->tp = tp, t->bw = bw, t->bh = bh, t->pcw = pcw;
            }
        }
    }
    if (best < 0)
        return false;
    int64_t pr = (t->bh - 1) * cp->stride_h + (cp->kh - 1) * cp->dil_h + 1;
    int64_t wld = t->bo + (t->to % 4 == 0 ? 4 : 0); /* a weight row (BnnConvTile::WLD) */
    int64_t per_c = pr * cp->stride_w * t->pcw + kk * wld; /* floats a channel stages */
    if (per_c > TILE_STAGE_FLOATS)
        return false;
    int64_t cc = cg * per_c <= 2 * TILE_STAGE_FLOATS ? cg : TILE_STAGE_FLOATS / per_c;
    for (int64_t d = cc; d * 2 >= cc && cg % cc; d--)
        if (cg % d == 0)
            cc = d;
    t->cc = (int)cc;
    t->stages = cg > cc ? 2 : 1;
    t->xs = (cc * pr * cp->stride_w * t->pcw + 3) / 4 * 4, t->ws = cc * kk * wld;
    t->smem = (int64_t)t->stages * (t->xs + t->ws) * 4;
    return true;
}

static bool all_finite(const float *v, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return false;
    return true;
}

/* The tiles bnncc --tune measures for a float convolution besides the rule's: pixels a thread
 * and warps a block (a candidate the same as the rule's, or as an earlier one, is left out). */
static const int conv_tile_variants[][2] = {{4, 8}, {2, 8}, {8, 4}, {4, 4}};
enum { CONV_TILE_VARIANTS = 1 + (int)(sizeof conv_tile_variants / sizeof *conv_tile_variants) };

/* The candidate tiles of a conv2d step into t[] (the rule's first), their number; 0 for the
 * one-thread-per-output bnn_conv2d: the tiled kernel needs finite weights (a zero staged for a
 * padded tap then adds nothing: float_ops.cu). A 1x1 convolution with unit strides and no
 * padding is the same over the flattened image: it is tiled as one row of h*w pixels, and with
 * one group over the batch's pixels (flat: a tile may hold the end of one image and the start of
 * the next), so that no tile is part empty: Bi-Real ResNet-18's 1x1 downsample convs had 784,
 * 196 and 49 pixels an image in tiles of 256, 256 and 64 (23 % of each block's products on
 * padding, and the last only 2 pixels a thread). The tiles for small batches
 * (small_batch_tiles) stay an image's. */
static int plan_conv_tiles(const BlobConv2dParams *cp, const float *w, ConvTile t[CONV_TILE_VARIANTS]) {
    ConvTile base;
    memset(&base, 0, sizeof base);
    base.h = cp->h, base.w = cp->w, base.oh = cp->oh, base.ow = cp->ow;
    if (cp->kh == 1 && cp->kw == 1 && cp->stride_h == 1 && cp->stride_w == 1 && !cp->pad_top && !cp->pad_left &&
        !cp->pad_bottom && !cp->pad_right) {
        base.w *= base.h, base.h = 1, base.ow *= base.oh, base.oh = 1;
        base.flat = cp->groups == 1;
    }
    /* A flat tile's pixels run on over the batch: its waste is one tile's at the batch's end,
     * weighed here as at batch 256. */
    const int64_t tile_ow = base.flat ? base.ow * 256 : base.ow;
    t[0] = base;
    if (!all_finite(w, cp->o * (cp->c / cp->groups) * cp->kh * cp->kw) ||
        !choose_conv_tile(cp, base.oh, tile_ow, 0, 8, 0, &t[0]))
        return 0;
    int n = 1;
    for (int v = 0; v + 1 < CONV_TILE_VARIANTS; v++) {
        t[n] = base;
        if (!choose_conv_tile(cp, base.oh, tile_ow, conv_tile_variants[v][0], conv_tile_variants[v][1], 0, &t[n]))
            continue;
        bool dup = false;
        for (int i = 0; i < n && !dup; i++)
            dup = t[i].tp == t[n].tp && t[i].bo == t[n].bo && t[i].bh == t[n].bh && t[i].bw == t[n].bw;
        n += !dup;
    }
    return n;
}

/* A float conv's tiles for small batches, the rule's (tiles[0]) being for large ones: into
 * small[0..n) with alt[i] the batch from which the next one (small[i + 1], or at alt[n - 1] the
 * rule's) takes over; returns n, 0 for other layers. A stem (C <= 4): the 4-pixel a thread tile
 * of 8 warps among tiles below batch 2 (H100, docs/perf.md 2026-11-27, Bi-Real ResNet-18's stem
 * on 8x16 pixels: 22.0 against 34.9 us at batch 1, 10 % slower at batch 8). A 1x1 convolution:
 * 1 pixel and 2 channels a thread below batch 6, then the 2-pixel a thread tile of 8 warps among
 * tiles (where the rule's has more pixels a thread) below 32. Bi-Real ResNet-18 on an H100
 * (docs/perf.md stop 23): the model 0.158 -> 0.135 ms at batch 1 (the last downsample conv,
 * 256 -> 512 over 7x7, from 8 blocks each thread of which ran 16 chains of 256 products),
 * -20 / -13 / -9 / -2 us at batches 2 to 5, even at 6, +1.5 us at 7, +5 us at 8; the 2-pixel
 * tile's 1x1 convs at batch 1 9.2 / 14.0 us against 19.9 / 36.5 on the rule's, as fast or faster
 * up to batch 32 (2026-11-27). */
static int small_batch_tiles(const BlobConv2dParams *cp, const ConvTile *tiles, int ntiles, ConvTile small[2],
                             uint32_t alt[2]) {
    const bool one = cp->kh * cp->kw == 1;
    if (!one && cp->c > 4)
        return 0;
    int n = 0;
    if (one) {
        small[0] = tiles[0];
        small[0].flat = false;
        if (choose_conv_tile(cp, tiles[0].oh, tiles[0].ow, 1, 8, 2, &small[0]) &&
            !(small[0].tp == tiles[0].tp && small[0].to == tiles[0].to && small[0].bo == tiles[0].bo))
            alt[n++] = 6;
    }
    const int tp = one ? 2 : 4;
    for (int i = 1; i < ntiles; i++)
        if (tiles[i].tp == tp && tiles[i].bo / tiles[i].to == 8 && tiles[0].tp != tp) {
            small[n] = tiles[i];
            if (small[n].flat) { /* an image's tile again: the same pixels a thread, an image's waste */
                small[n].flat = false;
                if (!choose_conv_tile(cp, tiles[0].oh, tiles[0].ow, tp, 8, 0, &small[n]))
                    continue;
            }
            alt[n++] = one ? 32 : 2;
            break;
        }
    return n;
}

/* From batch CONV_TPB_BATCH on, an exact float conv whose tile may (conv2d_tile_tpb_ok: a stem)
 * runs as a batch alternative with CONV_TPB tiles a block, which load the weights once and each
 * tile's patch while the tile before computes. H100 (docs/perf.md), Bi-Real ResNet-18's stem at
 * batch 256: 2.683 -> 2.488 ms with 8 (the model -3.6 %, -2.2 % at 64); 4 and 8 lose at 8. */
enum { CONV_TPB_BATCH = 64, CONV_TPB = 8 };

/* Whether tile t may take several tiles a block: one stage of input channels, one channel tile,
 * and two patch buffers in the shared memory of two blocks an SM. */
static bool conv2d_tile_tpb_ok(const BlobConv2dParams *cp, const ConvTile *t) {
    return !t->flat && t->stages == 1 && cp->groups == 1 && cp->o <= t->bo && t->smem + t->xs * 4 <= 110 * 1024;
}

/* The config struct members of a conv's shape that bnn_conv2d_tile and bnn_conv2d_mma read:
 * the image h x w and output oh x ow as the kernel tiles them (a 1x1 conv: flattened). */
static char *conv_shape_cfg(const BlobConv2dParams *cp, int64_t h, int64_t w, int64_t oh, int64_t ow, bool bias,
                            bool relu) {
    return str_printf(
        "    static constexpr int C = %lld, H = %lld, W = %lld, O = %lld, KH = %lld, KW = %lld, SH = %lld, "
        "SW = %lld;\n    static constexpr int PT = %lld, PL = %lld, DH = %lld, DW = %lld, G = %lld, OH = %lld, "
        "OW = %lld, BIAS = %d, RELU = %d;\n",
        (long long)cp->c, (long long)h, (long long)w, (long long)cp->o, (long long)cp->kh, (long long)cp->kw,
        (long long)cp->stride_h, (long long)cp->stride_w, (long long)cp->pad_top, (long long)cp->pad_left,
        (long long)cp->dil_h, (long long)cp->dil_w, (long long)cp->groups, (long long)oh, (long long)ow, bias, relu);
}

/* bnn_conv2d_tile for a conv2d step; relu: a relu applied before the store; many: the kernel
 * may take several tiles a block (conv2d_tile_tpb_ok: the weights loaded once a block), and
 * the launch gives it tpb a block. Steps whose kernels differ only in the launch's grid share
 * one kernel (share_kernels): a batch alternative of more tiles a block costs no compile. */
static void conv2d_tile_kernel(Lower *L, LStep *st, const BlobConv2dParams *cp, const ConvTile *t, bool bias,
                               bool relu, bool many, int tpb) {
    if (!conv2d_tile_tpb_ok(cp, t))
        many = false, tpb = 1;
    int64_t smem = many ? (2 * t->xs + t->ws) * 4 : t->smem; /* BnnConvTile's static_assert */
    char *shape = conv_shape_cfg(cp, t->h, t->w, t->oh, t->ow, bias, relu);
    char *cfg = str_printf(
        "%s    static constexpr int ST = %lld, DIVM = %lld, RELUM = %lld;\n"
        "    static constexpr int BO = %d, TO = %d, BH = %d, BW = %d, TP = %d, CC = %d, PCW = %d, SMEM = %lld, "
        "MANY = %d, FLAT = %d;\n",
        shape, (long long)cp->epi_stages, (long long)cp->epi_div, (long long)cp->epi_relu, t->bo, t->to, t->bh, t->bw,
        t->tp, t->cc, t->pcw, (long long)smem, (int)many, (int)t->flat);
    free(shape);
    int64_t og = cp->o / cp->groups, ot = (og + t->bo - 1) / t->bo;
    int64_t tiles = cp->groups * ot * ((t->oh + t->bh - 1) / t->bh) * ((t->ow + t->bw - 1) / t->bw);
    BlobGridDim grid[3] = {{0, (uint32_t)tiles, (uint32_t)tpb}, {1, 0, 1}, {1, 0, 1}};
    if (t->flat) /* OT * ceil(batch * OW / BW) tiles (float_ops.cu FLAT): at most OT blocks more */
        grid[0] = (BlobGridDim){(uint32_t)ot, (uint32_t)(ot * t->ow), (uint32_t)t->bw};
    tile_kernel(L, st, "conv2d", cfg, "bnn_conv2d_tile", TILE_OPERANDS ", (const float *)in2", grid,
                t->bo / t->to * 32, smem, 1);
    st->k.waits_itself = true; /* it requests its first weights before the wait */
}


/* The value of IEEE binary16 bits h (finite). */
static float f16_to_f32(uint16_t h) {
    float m = (float)(h & 0x3ffu), v = (h & 0x7c00u) ? ldexpf(m + 1024.0f, ((h >> 10) & 0x1f) - 25)
                                                     : ldexpf(m, -24);
    return h & 0x8000u ? -v : v;
}

/* IEEE binary16 bits of f, rounded to nearest even (the host's side of cvt.rn.f16.f32). */
static uint16_t f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return sign | 0x7e00u; /* NaN */
    if (a >= 0x47800000u)
        return sign | 0x7c00u; /* 2^16 and above, inf: infinity */
    if (a < 0x38800000u)       /* below 2^-14: a multiple of 2^-24, exact scaling, rint is to even */
        return sign | (uint16_t)lrintf(fabsf(f) * 16777216.0f);
    uint32_t h = ((a >> 23) - 112) << 10 | (a & 0x7fffffu) >> 13, rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++; /* a carry rounds into the exponent, up to infinity */
    return sign | (uint16_t)h;
}

/* bnn_conv2d_mma takes ungrouped convolutions whose weights fp16 holds (finite, at most its
 * largest value 65504), whose image its int tap table can address and whose patches have fewer
 * than 2^20 taps (its exact form's margin, BnnConvBits::ABSK); the others keep the exact kernels
 * under --float-convs=fp16 too. */
static bool fp16_conv_ok(const BlobConv2dParams *cp, const float *w) {
    if (cp->groups != 1 || cp->c * cp->h * cp->w >= (1ll << 31) || cp->h >= 32768 ||
        cp->c * cp->kh * cp->kw >= (1ll << 20) ||
        (cp->kh - 1) * cp->dil_h >= 32768 || (cp->kw - 1) * cp->dil_w >= 32768) /* the kernel's tap table */
        return false;
    for (int64_t i = 0; i < cp->o * cp->c * cp->kh * cp->kw; i++)
        if (!(fabsf(w[i]) <= 65504.0f))
            return false;
    return true;
}

/* bnn_conv2d_mma's config struct members (float_ops.cu BnnConvMma, BnnConvBits). */
static char *conv2d_mma_cfg(const BlobConv2dParams *cp, bool bias, bool relu, int split, BlobConv2dF16Order ord,
                            int64_t op, int64_t smem, int bits, int exact, int win, int mode3,
                            const int32_t *quant) {
    char *shape = conv_shape_cfg(cp, cp->h, cp->w, cp->oh, cp->ow, bias, relu);
    /* codes (LV levels): the quantizer's words (blob.h BLOB_CONV2D_Q_*), for the sums the GPU
     * recomputes */
    int32_t q[BLOB_CONV2D_QUANT_WORDS] = {0};
    if (cp->levels)
        memcpy(q, quant, sizeof q);
    char *cfg = str_printf(
        "%s    static constexpr int SPLIT = %d, KP = %lld, OP = %lld, SMEM = %lld;\n"
        "    static constexpr int BITS = %d, EXACT = %d, OUTW = %lld, NANF = %lld, STAGES = %lld, DIV = %lld, "
        "RELUS = %lld, ZERO = %lld, PS = %lld, KWP = %lld, WIN = %d, MODE3 = %d;\n"
        "    static constexpr int LV = %lld, QP = %lld, QLO = %d, QHI = %d, QROUND = %d;\n"
        "    static constexpr unsigned QSCALE = 0x%08xu, QZERO = 0x%08xu;\n",
        shape, split, (long long)ord.kp, (long long)op, (long long)smem, bits, exact,
        (long long)(cp->out_words ? cp->out_words : 1), (long long)cp->nan_flags, (long long)cp->epi_stages,
        (long long)cp->epi_div, (long long)cp->epi_relu, (long long)cp->zero, (long long)ord.ps, (long long)ord.kwp,
        win, mode3, (long long)cp->levels, (long long)(cp->levels ? blob_code_planes(cp->levels) : 1),
        q[BLOB_CONV2D_Q_LO], q[BLOB_CONV2D_Q_HI], q[BLOB_CONV2D_Q_ROUNDING], (unsigned)q[BLOB_CONV2D_Q_SCALE],
        (unsigned)q[BLOB_CONV2D_Q_ZEROPT]);
    free(shape);
    return cfg;
}

/* A step launching bnn_conv2d_mma with config cfg (copied), tpb of the batch's tiles a block:
 * the main step with 1 and its batch alternative with STEM_TPB name the same kernel
 * (share_kernels), whose blocks take tiles blockIdx.x, + gridDim.x, ... of any grid. */
static void conv2d_mma_step(Lower *L, LStep *st, const char *cfg, int64_t tiles, int tpb, int64_t smem) {
    BlobGridDim grid[3] = {{0, (uint32_t)tiles, (uint32_t)tpb}, {1, 0, 1}, {1, 0, 1}};
    tile_kernel(L, st, "conv2d", xstrdup(cfg), "bnn_conv2d_mma",
                "(const float *)in, (const unsigned short *)p1, (const float *)p0, (float *)out, "
                "(const float *)w, (const float *)in2, (unsigned *)x0",
                grid, 256, smem, 1);
    /* three blocks an SM (80 registers, no spills in ptxas for ResNet's stem): the kernel issues
     * more instructions than it waits for memory, at two blocks 25 % occupancy; two in the sm_80
     * code, which needs more registers (at 80 NVRTC spilled 108 bytes of VGG-small's stem, whose
     * shared memory fits three blocks there too, 76 of stem_bits_ties', 148-152 of the ResNets') */
    st->k.min_blocks = 3;
    st->k.min_blocks80 = 2;
}

/* From batch STEM_TPB_BATCH on, a staged-window conv of one channel tile runs as a batch
 * alternative with STEM_TPB tiles a block, which then copies its weights once for them (XNOR
 * ResNet-18's stem at batch 256 on an H100: 0.845 -> 0.789 ms with 8, the model -2 to -3 % with
 * 4 or 8; at batches 1 and 8 one tile a block is faster: docs/perf.md). */
enum { STEM_TPB_BATCH = 32, STEM_TPB = 4 };

/* Words of a block's list in the exact stem (float_ops.cu BnnConvBits::LISTW): bits, codes. */
enum { STEM_LIST_WORDS = 32, STEM_CODE_LIST_WORDS = 128 };

/* Below batch STEM_FIXWIN_BATCH the sums a staged-window stem of one channel tile lists are
 * recomputed from shared memory (bnn_conv2d_bits_fixwin: a block a tile stages the weights and
 * the tile's input window by coalesced copies), where the fixup's lane-an-entry loads of
 * scattered floats made it a chain of latencies; from it on by bnn_conv2d_bits_fixup, which
 * reads no more than the sums need (XNOR ResNet-18, H100: 0.0780 -> 0.0742 ms at batch 1, 3 %
 * faster at 2, 1 % slower at 3 and 4, 3 % at 8; docs/perf.md stop 24). Shared memory up to
 * FIXWIN_SMEM_MAX. */
enum { STEM_FIXWIN_BATCH = 3, FIXWIN_SMEM_MAX = 100 * 1024, FIXWIN_SMEM_4 = 56 * 1024 };

/* A stem with codes lists some 84 sums a tile (three thresholds a channel), where the fixup's
 * lane an entry read 147 scattered floats each: its lists go to bnn_conv2d_bits_fixwin at every
 * batch, a tile a block, and from FIXWIN_MANY_BATCH on FIXWIN_TPB tiles a block (the weights
 * staged once for them). w1a2 ResNet-18 on an H200: at batch 256 the fixup 0.482 ms, the
 * shared-memory one 0.396 with 8 tiles a block; 8 tiles a block from batch 3 left batch 4 with
 * 49 blocks (0.1848 ms; 0.1631 with one tile a block), and 4 or 8 tiles from 16 or 32 were
 * alike (docs/perf.md stop 30). */
enum { FIXWIN_TPB = 4, FIXWIN_MANY_BATCH = 32 };

/* From FIXWIN_GW_BATCH those lists go to bnn_conv2d_bits_fixwin_gw: a tile a block of
 * FIXWIN_GW_THREADS threads, the weights read as [K/4][O][4] from global memory (slot P1) instead of
 * staged, so that FIXWIN_GW_BLOCKS blocks (64 registers) fit an SM, where the shared weights
 * left room for four: its time is each tile's copies and one chain of 147 adds, so more tiles in
 * flight. w1a2 ResNet-18 on an H200: the fixup at batch 256 0.206 -> 0.161 ms, the model -1.7 %,
 * -0.6 % at 128; taken at every batch it was the same at 64, +1 % at 8 and +8 % at 1 (the
 * weights' first reads from the L2). Bits stems keep bnn_conv2d_bits_fixup (XNOR ResNet-18 +2 to
 * +6 % with this from batch 8). docs/perf.md stop 42. From 128 until stop 48; with its taps in
 * pairs and its weights in quads the model is 1.9 % / 2.0 % faster with it at 64 / 100 (docs/perf.md
 * stop 48). */
enum { FIXWIN_GW_BATCH = 64, FIXWIN_GW_THREADS = 128, FIXWIN_GW_BLOCKS = 8 };
/* the batch alternatives rise: an alternative from FIXWIN_MANY_BATCH itself made a plan that
 * bnnrun rejects */
_Static_assert((int)FIXWIN_GW_BATCH > (int)FIXWIN_MANY_BATCH, "the fixup's batch alternatives must rise");

/* The input window of a staged-window block's 8 x 16 output pixels: sr rows x sc columns
 * (BnnConvMma::SR, SC). */
static void stem_window(const BlobConv2dParams *cp, int64_t *sr, int64_t *sc) {
    *sr = 7 * cp->stride_h + (cp->kh - 1) * cp->dil_h + 1;
    *sc = 15 * cp->stride_w + (cp->kw - 1) * cp->dil_w + 1;
}

/* The shared memory of bnn_conv2d_mma's staged-window form (WIN, BnnConvMma::WIN_SMEM) for cp
 * with `planes` fp16 planes, 0 where it cannot take it: it needs the paired k order (C <= 4:
 * ps) and room for three blocks an SM. Bits or codes out (BnnConvMma: the epilogue's words,
 * [planes + 1][128][2], the channels' rows, ||w||_2, threshold(s) and mode or sign, and their
 * float4 of interval constants). */
static int64_t conv2d_win_smem(const BlobConv2dParams *cp, int planes, bool exact, bool bits) {
    BlobConv2dF16Order ord = blob_conv2d_f16_order(cp);
    int64_t ps = ord.ps, kwp = ord.kwp, kp = ord.kp;
    if (!ps)
        return 0;
    int64_t sr, sc;
    stem_window(cp, &sr, &sc);
    int64_t rh = (sc * ps + (kwp - cp->kw * ps) + 1) / 2 * 2; /* BnnConvMma::RH */
    int64_t wb = (planes * 64 * (2 * kp + 16) + 15) / 16 * 16;
    int64_t wsmem = wb + (planes * sr * rh / 2 * 4 + 15) / 16 * 16 +
                    (exact ? 2 * ((sr * sc * 4 + 15) / 16 * 16) + 2 * 8 * sc * 4 : 0) + kp / 2 * 4;
    int64_t qp = cp->levels ? blob_code_planes(cp->levels) : 1, rows = cp->levels ? 2 + cp->levels : 3;
    wsmem = (wsmem + 15) / 16 * 16 + (bits ? (qp + 1) * 128 * 2 * 4 + 16 + rows * 64 * 4 + 64 * 16 : 0);
    return wsmem <= 75 * 1024 ? wsmem : 0;
}

/* --float-convs=fp16|fp16x3: the conv2d step's GPU kernel on fp16 tensor cores
 * (bnn_conv2d_mma), the weights as fp16 [planes][OP][KP] in slot P1 (docs/blob-format.md):
 * rounded (fp16), or hi = fp16(w) then lo = fp16(w - hi) (fp16x3); the CPU path keeps the
 * exact loop over W. Exact bits out: the list of sums too close to call in slot x0, and a
 * `kernel` step after the conv that recomputes them (bnn_conv2d_bits_fixup). */
static void conv2d_mma_kernel(Lower *L, LStep *st, const BlobConv2dParams *cp, const float *w, bool bias,
                              bool relu) {
    int64_t k = cp->c * cp->kh * cp->kw, kk = cp->kh * cp->kw;
    BlobConv2dF16Order ord = blob_conv2d_f16_order(cp);
    int64_t ps = ord.ps, kwp = ord.kwp, kp = ord.kp;
    int64_t op = (cp->o + BLOB_F16_ROWS - 1) / BLOB_F16_ROWS * BLOB_F16_ROWS;
    /* bits out under the default exact mode: the hi + lo split with the margin check */
    int exact = cp->out_words && L->float_convs == FLOAT_CONVS_EXACT;
    int split = L->float_convs == FLOAT_CONVS_FP16X3 || exact, planes = 1 + split, bits = cp->out_words > 0;
    uint16_t *w16 = xcalloc((size_t)(planes * op * kp), 2);
    for (int64_t o = 0; o < cp->o; o++)
        for (int64_t i = 0; i < k; i++) { /* i = (c, ky, kx), the weights' order; p1's is blob.h's */
            int64_t tap = i % kk, j = ps ? tap / cp->kw * kwp + tap % cp->kw * ps + i / kk : i;
            uint16_t hi = f32_to_f16(w[o * k + i]);
            w16[o * kp + j] = hi;
            if (split)
                w16[(op + o) * kp + j] = f32_to_f16(w[o * k + i] - f16_to_f32(hi));
        }
    st->s.slot[BLOB_SLOT_P1] = put_weights(L, w16, (size_t)(planes * op * kp) * 2);
    free(w16);
    /* bnn_conv2d_mma's block: 128 pixels x 64 channels (BLOB_F16_ROWS, so op / 64 channel
     * tiles). Its shared memory (BnnConvMma, float_ops.cu): two stages of 48-byte rows per plane,
     * then its tap table; or (WIN, 8 x 16 pixels a block) all weights in rows of 2 kp + 16 bytes,
     * the input window's planes, (exact) the max |x| and the sum of x^2 of its positions and
     * of its output rows' positions, the k pairs' offsets, (bits) the epilogue's words, the
     * chain's ||w||_2, t
     * and mode of the 64 channels and their interval test's constants (float4 each). WIN where
     * it fits three blocks an SM. */
    int64_t smem = 2 * planes * (128 + 64) * 48 + 8 * kp, tiles = (cp->oh * cp->ow + 127) / 128;
    int64_t wsmem = conv2d_win_smem(cp, planes, exact, bits);
    int win = wsmem > 0;
    int64_t sr, sc; /* WIN's input window (the fixup from shared memory stages it too) */
    stem_window(cp, &sr, &sc);
    if (win) {
        smem = wsmem;
        tiles = (cp->oh + 7) / 8 * ((cp->ow + 15) / 16);
    }
    tiles *= op / 64;
    /* exact: the sums too close to call that a block leaves to the fixup kernel after it, in a
     * list of BnnConvBits::LISTW words a block (float_ops.cu) */
    int64_t list_words = cp->levels ? STEM_CODE_LIST_WORDS : STEM_LIST_WORDS;
    if (exact)
        use_arena(L, st, BLOB_SLOT_X0, new_buf(L, tiles * list_words * 4));
    /* MODE3: a channel whose chain the kernel evaluates itself (stem_threshold's mode 3, in2) */
    int mode3 = 0;
    if (bits && !cp->levels) {
        const float *in2 = blob_weights_data(L->w, st->s.slot[BLOB_SLOT_IN2]);
        for (int64_t c = 0; c < cp->o; c++)
            mode3 |= in2[(2 * cp->epi_stages + 2) * cp->o + c] == 3.0f;
    }
    const int32_t *quant = NULL;
    if (cp->levels) /* in2's quantizer words */
        quant = (const int32_t *)((const char *)blob_weights_data(L->w, st->s.slot[BLOB_SLOT_IN2]) +
                                  4 * blob_conv2d_quant_at(cp));
    char *cfg = conv2d_mma_cfg(cp, bias, relu, split, ord, op, smem, bits, exact, win, mode3, quant);
    char *fix_cfg = exact ? xstrdup(cfg) : NULL;
    int si = (int)(st - L->steps);
    conv2d_mma_step(L, st, cfg, tiles, 1, smem);
    if (win && op == 64 && L->batch_alts) /* one channel tile: its tiles share the weights */
        conv2d_mma_step(L, new_batch_alt(L, si, STEM_TPB_BATCH), cfg, tiles, STEM_TPB, smem);
    free(cfg);
    st = &L->steps[si];
    if (!exact) {
        L->nfp16_convs++;
        return;
    }
    L->nexact_bit_convs++;
    /* the fixup: a GPU-only step after the conv (and its alternative), a warp a tile of it
     * (bnn_conv2d_bits_fixup) */
    LStep *fx = new_step(L, BLOB_STEP_KERNEL);
    st = &L->steps[si];
    static const int slots[6] = {BLOB_SLOT_IN, BLOB_SLOT_IN2, BLOB_SLOT_OUT, BLOB_SLOT_W, BLOB_SLOT_P0, BLOB_SLOT_X0};
    for (int i = 0; i < 6; i++) {
        fx->s.slot[slots[i]] = st->s.slot[slots[i]];
        fx->buf[slots[i]] = st->buf[slots[i]];
    }
    static const char fix_args[] = "(const float *)in, (const float *)p0, (unsigned *)out, (const float *)w, "
                                   "(const float *)in2, (const unsigned *)x0";
    /* float_ops.cu BnnFixWin::SMEM: the weights [O][K] (to a multiple of 4 floats), the tile's
     * window [C][SR][SCA] (SCA: SC + 3 floats rounded up to whole 16-byte chunks), its list */
    int64_t fix_win_smem = (cp->c * sr * ((sc + 6) / 4 * 4) + list_words) * 4; /* BnnFixWin::SMEM_GW */
    int64_t fix_smem = (cp->o * k + 3) / 4 * 4 * 4 + fix_win_smem;
    if (win && op == 64 && L->batch_alts && fix_smem <= FIXWIN_SMEM_MAX) {
        int fi = (int)(fx - L->steps);
        /* bnn_conv2d_bits_fixwin_gw's weights [K/4][O][4], zeros past K (the alternatives share
         * slots), where a GPU target will run it */
        const bool gw = cp->levels && L->min_sm;
        if (gw) {
            const int64_t k4 = (k + 3) / 4;
            float *wt = xcalloc((size_t)(k4 * 4 * cp->o), 4);
            for (int64_t o = 0; o < cp->o; o++)
                for (int64_t i = 0; i < k; i++)
                    wt[(i / 4 * cp->o + o) * 4 + i % 4] = w[o * k + i];
            fx->s.slot[BLOB_SLOT_P1] = put_weights(L, wt, (size_t)(k4 * 4 * cp->o) * 4);
            free(wt);
        }
        BlobGridDim win_grid[3] = {{0, (uint32_t)tiles, 1}, {1, 0, 1}, {1, 0, 1}};
        tile_kernel(L, fx, "stemfix", xstrdup(fix_cfg), "bnn_conv2d_bits_fixwin", fix_args, win_grid, 256,
                    fix_smem, 1);
        fx->k.waits_itself = true; /* it stages the weights first */
        /* four blocks an SM where their shared memory allows it (64 registers, no spills in ptxas
         * for ResNet's stem): with two, 128 registers, the codes' fixup at batch 256 waited at its
         * barriers with one eligible warp in two cycles (ncu: 0.393 ms, docs/perf.md) */
        int fix_blocks = fix_smem <= FIXWIN_SMEM_4 ? 4 : 0;
        fx->k.min_blocks = fix_blocks;
        if (cp->levels) { /* codes: from FIXWIN_MANY_BATCH the same kernel, FIXWIN_TPB tiles a block */
            fx = new_batch_alt(L, fi, FIXWIN_MANY_BATCH);
            BlobGridDim many_grid[3] = {{0, (uint32_t)tiles, FIXWIN_TPB}, {1, 0, 1}, {1, 0, 1}};
            tile_kernel(L, fx, "stemfix", xstrdup(fix_cfg), "bnn_conv2d_bits_fixwin", fix_args, many_grid, 256,
                        fix_smem, 1);
            fx->k.waits_itself = true;
            fx->k.min_blocks = fix_blocks;
            if (!gw) {
                free(fix_cfg);
                return;
            }
            /* from FIXWIN_GW_BATCH a tile a block of FIXWIN_GW_THREADS, the weights [K/4][O][4] in P1 */
            fx = new_batch_alt(L, fi, FIXWIN_GW_BATCH);
            static const char gw_args[] = "(const float *)in, (const float *)p0, (unsigned *)out, (const float *)p1, "
                                          "(const float *)in2, (const unsigned *)x0";
            BlobGridDim gw_grid[3] = {{0, (uint32_t)tiles, 1}, {1, 0, 1}, {1, 0, 1}};
            tile_kernel(L, fx, "stemfix", fix_cfg, "bnn_conv2d_bits_fixwin_gw", gw_args, gw_grid, FIXWIN_GW_THREADS,
                        fix_win_smem, 1);
            fx->k.waits_itself = true;
            fx->k.min_blocks = FIXWIN_GW_BLOCKS;
            return;
        }
        fx = new_batch_alt(L, fi, STEM_FIXWIN_BATCH);
    }
    BlobGridDim fix_grid[3] = {{0, (uint32_t)tiles, 8}, {1, 0, 1}, {1, 0, 1}};
    tile_kernel(L, fx, "stemfix", fix_cfg, "bnn_conv2d_bits_fixup", fix_args, fix_grid, 256, 0, 1);
}

/* Channel c's bit for the sum v (before the bias), as the CPU path computes it. */
static int stem_bit(const BlobConv2dParams *cp, const float *chain, const float *bias, int64_t c, float v) {
    return blob_conv2d_chain_bit(cp, chain, c, bias ? bias[c] + v : v);
}

/* The float of an order key (0 .. +-0x7f7fffff: the finite floats in order, both zeros at 0). */
static float key_float(int64_t key) {
    uint32_t u = key < 0 ? 0x80000000u | (uint32_t)-key : (uint32_t)key;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* A stem channel's bit as one comparison of the sum v (docs/blob-format.md "conv2d"): mode 1:
 * v >= t; -1: v <= t; 2: always 1; 0: always 0; 3: no NaN-free monotone form (the kernel runs
 * the chain). The chain is monotone in v (each rounded op is), so where its ends -FLT_MAX and
 * FLT_MAX give no NaN no finite v does, and the bit flips at most once: t by bisection. */
static void stem_threshold(const BlobConv2dParams *cp, const float *chain, const float *bias, int64_t c, float *t,
                           float *mode) {
    const int64_t top = 0x7f7fffff;
    int lo = stem_bit(cp, chain, bias, c, key_float(-top));
    int hi = stem_bit(cp, chain, bias, c, key_float(top));
    *t = 0.0f;
    if (lo < 0 || hi < 0) {
        *mode = 3;
        return;
    }
    if (lo == hi) {
        *mode = lo ? 2 : 0;
        return;
    }
    int64_t a = -top, b = top; /* bit(a) = lo, bit(b) = hi */
    while (b - a > 1) {
        int64_t mid = a + (b - a) / 2;
        if (stem_bit(cp, chain, bias, c, key_float(mid)) == hi)
            b = mid;
        else
            a = mid;
    }
    *t = key_float(hi ? b : a); /* rising: the first 1; falling: the last 1 */
    *mode = hi ? 1 : -1;
}

/* The stage of a conv2d_chain before which its max-pool comes (S, its stages, without one). */
static int64_t chain_pool_at(const Node *n) {
    int64_t S = n->in[2]->type.dim[0];
    return get_attr(n, "pool_kernel") ? attr_int(n, "pool_at", S) : S;
}

/* A conv2d_chain's first `stages` stages as a conv2d step's float chain: epi_stages and the
 * epi_div and epi_relu masks from its div and relu attributes. */
static void set_chain_stages(BlobConv2dParams *cp, const Node *n, int64_t stages) {
    int64_t S = n->in[2]->type.dim[0], div[CHAIN_MAX_STAGES] = {0}, relu[CHAIN_MAX_STAGES] = {0};
    attr_ints(n, "div", div, (int)S, 0, NULL);
    attr_ints(n, "relu", relu, (int)S, 0, NULL);
    cp->epi_stages = stages;
    for (int64_t s = 0; s < stages; s++) {
        cp->epi_div |= (int64_t)(div[s] != 0) << s;
        cp->epi_relu |= (int64_t)(relu[s] != 0) << s;
    }
}

/* ||w||_2 of n weights, rounded up to a float (the exact stem's error bound, float_ops.cu
 * BnnChainK::exact_consts: the double's error is far below the float's ulp). */
static float l2_norm_up(const float *w, int64_t n) {
    double sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)w[i] * (double)w[i];
    return nextafterf((float)sqrt(sum), INFINITY);
}

/* Whether a stem's chain (cp's epi_stages stages, constants k [stages][2][o]) and bias are
 * finite, no stage divides by zero, and no stage from zero_from on (after the pool) multiplies
 * by 0, which could make a NaN of an inf (0 * inf) that the pool of bits or codes would not see:
 * the exact kernel's premise, a bit or code monotone in the sum. */
static bool stem_chain_ok(const BlobConv2dParams *cp, const float *k, const float *bias, int64_t zero_from) {
    int64_t o = cp->o;
    for (int64_t i = 0; i < 2 * cp->epi_stages * o; i++) {
        int64_t stage = i / (2 * o);
        bool factor = i % (2 * o) < o;
        if (!isfinite(k[i]) || (factor && k[i] == 0.0f && (((cp->epi_div >> stage) & 1) || stage >= zero_from)))
            return false;
    }
    for (int64_t c = 0; bias && c < o; c++)
        if (!isfinite(bias[c]))
            return false;
    return true;
}

/* The parameters of conv2d_chain n's max-pool over its conv's output (cp's oh x ow) into y. */
static BlobPoolParams chain_pool_params(const Node *n, const BlobConv2dParams *cp, const Type *y) {
    Attr attrs[4];
    Value *pin[1] = {NULL};
    Node pn = fused_pool_node(n, pin, attrs);
    Type conv_t = *y;
    conv_t.dim[2] = cp->oh, conv_t.dim[3] = cp->ow;
    return pool_params(&pn, &conv_t, y);
}

/* The conv2d step of a stem with bits or codes out (lower_conv2d_bits, lower_conv2d_codes): x into
 * buffer out, in2 (n2 floats) its chain and thresholds, w its f32 weights, b its bias or null. */
static void stem_conv_step(Lower *L, const Value *x, int out, const float *in2, int64_t n2, const float *w,
                           const float *b, const BlobConv2dParams *cp) {
    LStep *st = new_step(L, BLOB_STEP_CONV2D);
    use_arena(L, st, BLOB_SLOT_IN, buf_of(L, x));
    use_arena(L, st, BLOB_SLOT_OUT, out);
    st->s.slot[BLOB_SLOT_IN2] = put_weights(L, in2, (size_t)n2 * 4);
    st->s.slot[BLOB_SLOT_W] = put_weights(L, w, (size_t)(cp->o * cp->c * cp->kh * cp->kw) * 4);
    if (b)
        st->s.slot[BLOB_SLOT_P0] = put_weights(L, b, (size_t)cp->o * 4);
    st->s.conv2d = *cp;
    conv2d_mma_kernel(L, st, cp, w, b != NULL, false);
}

/* A conv2d_chain as one conv2d step that writes its bits (BlobConv2dParams.out_words), then,
 * with a max-pool, a maxpool step of bits (the max of +-1 is the OR): when nothing reads its
 * float value, its bits are packed, and its chain is monotone in the sum under any rounding
 * (finite constants and bias, no division by zero), which the exact GPU kernel relies on
 * (docs/kernels.md "The stem"). Returns 1 if it did, 0 if the steps of the separate ops must. */
static int lower_conv2d_bits(Lower *L, const Node *n, BlobConv2dParams cp, const float *w, const Value *b) {
    const Value *x = n->in[0], *y = n->out[0], *bits = n->out[1], *chain = n->in[2];
    int64_t S = chain->type.dim[0], o = cp.o;
    int64_t words = packed_words(&bits->type);
    if (is_output(L->g, y) || count_uses(L->g, y) > 0 || count_uses(L->g, bits) == 0 || !words ||
        !fp16_conv_ok(&cp, w))
        return 0;
    set_chain_stages(&cp, n, S);
    const float *k = chain->data, *bv = b ? b->data : NULL;
    bool pool = get_attr(n, "pool_kernel") != NULL;
    int64_t pool_at = chain_pool_at(n);
    if (!stem_chain_ok(&cp, k, bv, pool_at))
        return 0;
    cp.out_words = pool ? (o + 31) / 32 : words;
    cp.nan_flags = pool; /* a NaN in a window makes the pooled float NaN, its bit 0 */
    cp.zero = attr_int(n, "zero", 1) == 1;
    /* in2: the stages, then per channel ||w||_2 (the exact kernel's error bound), the threshold
     * and its mode (stem_threshold) */
    float *in2 = xmalloc((size_t)((2 * S + 3) * o) * 4);
    memcpy(in2, k, (size_t)(2 * S * o) * 4);
    int64_t kk = cp.c * cp.kh * cp.kw;
    for (int64_t c = 0; c < o; c++) {
        in2[2 * S * o + c] = l2_norm_up(w + c * kk, kk);
        stem_threshold(&cp, k, bv, c, &in2[(2 * S + 1) * o + c], &in2[(2 * S + 2) * o + c]);
    }
    int out = pool ? new_buf(L, cp.oh * cp.ow * cp.out_words * 2 * 4) : def_buf(L, bits);
    stem_conv_step(L, x, out, in2, (2 * S + 3) * o, w, bv, &cp);
    free(in2);
    if (pool) {
        BlobPoolParams pp = chain_pool_params(n, &cp, &y->type);
        pp.words = cp.out_words;
        pp.out_words = words;
        pp.nan_flags = 1;
        /* The stages after the pool are monotone per channel (no factor 0): the bit of the pooled
         * value is the OR of the window's bits where they do not decrease (max commutes with
         * them), the AND where they do (the max becomes a min); the per-pixel bits run the whole
         * chain. */
        uint32_t *and_mask = xcalloc((size_t)cp.out_words, 4);
        bool any_and = false;
        for (int64_t c = 0; c < o; c++) {
            bool decreasing = false;
            for (int64_t st_i = pool_at; st_i < S; st_i++)
                decreasing ^= k[2 * st_i * o + c] < 0.0f;
            and_mask[c / 32] |= (uint32_t)decreasing << (c % 32);
            any_and |= decreasing;
        }
        LStep *st = new_step(L, BLOB_STEP_MAXPOOL);
        use_arena(L, st, BLOB_SLOT_IN, out);
        use_arena(L, st, BLOB_SLOT_OUT, def_buf(L, bits));
        if (any_and)
            st->s.slot[BLOB_SLOT_P0] = put_weights(L, and_mask, (size_t)cp.out_words * 4);
        free(and_mask);
        st->s.pool = pp;
        float_kernel(L, st, "maxpool", pp.oh * pp.ow,
                     str_printf("bnn_bitpool<%lld, %lld, %lld, 1, %lld>(item, j, (const unsigned *)in, (unsigned *)out, "
                                "(const unsigned *)p0, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld)",
                                (long long)pp.kh, (long long)pp.kw, (long long)pp.words, (long long)words,
                                (long long)pp.h, (long long)pp.w, (long long)pp.stride_h, (long long)pp.stride_w,
                                (long long)pp.pad_top, (long long)pp.pad_left, (long long)pp.oh, (long long)pp.ow));
    }
    return 1;
}

/* Thresholds of more levels than this stay with the separate steps (the kernel keeps a
 * channel's in registers). */
enum { CODES_MAX_LEVELS = 7 };

/* A channel's code (blob_conv2d_chain_code of the sum v before the bias, in2 the step's) as
 * comparisons: code = the number of levels j with sgn * v >= tt[j], sgn 1 where the code rises
 * with v and -1 where it falls, tt[j] = sgn * (the first v of code >= j rising, the last one
 * falling), -inf / +inf for a level every / no sum reaches. The chain and the quantizer are
 * monotone in v, so each level is crossed at most once, in one direction: bisection over the
 * finite floats as in stem_threshold. False where an end gives NaN or the thresholds do not
 * rise with j (no monotone form). */
static bool code_thresholds(const BlobConv2dParams *cp, const float *in2, const float *bias, int64_t c, float *tt,
                            float *sgn) {
    const int64_t top = 0x7f7fffff;
    float b = bias ? bias[c] : 0.0f;
#define CODE_AT(key) blob_conv2d_chain_code(cp, in2, c, bias ? b + key_float(key) : key_float(key))
    int lo = CODE_AT(-top), hi = CODE_AT(top);
    if (lo < 0 || hi < 0)
        return false;
    bool rising = lo <= hi;
    *sgn = rising ? 1.0f : -1.0f;
    for (int64_t j = 1; j <= cp->levels; j++) {
        bool at_lo = lo >= j, at_hi = hi >= j;
        if (at_lo == at_hi) {
            tt[j - 1] = at_lo ? -INFINITY : INFINITY;
            continue;
        }
        int64_t a = -top, z = top; /* (code(a) >= j) = at_lo, (code(z) >= j) = at_hi */
        while (z - a > 1) {
            int64_t mid = a + (z - a) / 2;
            int code = CODE_AT(mid);
            if (code < 0)
                return false;
            if ((code >= j) == at_hi)
                z = mid;
            else
                a = mid;
        }
        tt[j - 1] = rising ? key_float(z) : -key_float(a);
    }
#undef CODE_AT
    /* The GPU kernel takes a code's planes from the thresholds in order (float_ops.cu, the codes'
     * interval test): a monotone code gives them rising, and anything else keeps the separate
     * steps. */
    for (int64_t j = 1; j < cp->levels; j++)
        if (!(tt[j - 1] <= tt[j]))
            return false;
    return true;
}

/* Whether a conv2d_chain's quant float (q - zeropt) * scale is a function of its code: the code
 * says all of q but its sign of zero, and (q - zeropt) * scale shows that sign only where zeropt
 * is 0 and q is -0.0, i.e. round(v / scale + zeropt) gave -0.0: for v / scale + zeropt in
 * [-0.5, -0.0], which needs v negative, or v and zeropt both -0.0 (-0.0 + +0.0 is +0.0). After a
 * last stage with a relu v is never negative, and q = -0.0 with zeropt = -0.0 gives
 * (-0.0 - -0.0) * scale = +0.0, the code's float. */
static bool quant_float_of_code(const Node *n, const BlobQuantizeParams *qp) {
    float zero;
    memcpy(&zero, &qp->zeropt_bits, 4);
    const Value *chain = n->in[2];
    int64_t S = chain->type.dim[0], relu[CHAIN_MAX_STAGES] = {0};
    attr_ints(n, "relu", relu, (int)S, 0, NULL);
    return zero != 0.0f || relu[S - 1];
}

/* A conv2d_chain with a max-pool and a quantizer as one conv2d step that writes each pixel's
 * codes (BlobConv2dParams.levels, exact on the tensor cores as the stem's bits: docs/kernels.md
 * "The stem"), then a maxpool step of codes that writes the pool's codes as image planes and,
 * where something reads it, the quant's float: where no stage follows the pool (the max of the
 * codes is then the code of the max: both are monotone), nothing reads the pooled value but
 * through the quant (quant_float_of_code), the staged-window kernel takes the conv, and every
 * level is a threshold of the sum. Returns 1 if it did, 0 if the separate steps must, -1 on an
 * error. */
static bool gpu_reads_float(const Lower *L, const Value *v);
static bool gpu_writes_nan_flags(const Lower *L, const Value *v);
static bool gap_reads_codes(const Lower *L, const Node *u, const Value *v);
static const Node *rcode_source(const Lower *L, const Value *r);
static int64_t image_ldw(int64_t channels);
static int64_t code_planes(const Value *v);

static int lower_conv2d_codes(Lower *L, const Node *n, BlobConv2dParams cp, const float *w, const Value *b) {
    const Value *x = n->in[0], *y = n->out[0], *codes = n->out[1], *chain = n->in[2];
    int64_t S = chain->type.dim[0], o = cp.o;
    BlobQuantizeParams q = chain_quantizer(n, 0);
    bool want_f32 = count_uses(L->g, y) > 0 || is_output(L->g, y);
    if (!get_attr(n, "pool_kernel") || chain_pool_at(n) != S || q.hi - q.lo > CODES_MAX_LEVELS ||
        (want_f32 && (!q.dequant || !quant_float_of_code(n, &q))) || count_uses(L->g, codes) == 0 ||
        !fp16_conv_ok(&cp, w))
        return 0;
    set_chain_stages(&cp, n, S);
    const float *k = chain->data, *bv = b ? b->data : NULL;
    if (!stem_chain_ok(&cp, k, bv, S))
        return 0;
    cp.levels = q.hi - q.lo;
    cp.out_words = image_ldw(o);
    cp.nan_flags = 1; /* a NaN in a window makes the pooled float NaN, its code 0 */
    int64_t planes = blob_code_planes(cp.levels);
    if (!conv2d_win_smem(&cp, 2, L->float_convs == FLOAT_CONVS_EXACT, true))
        return 0;
    /* in2: the stages, per channel ||w||_2 (the exact kernel's error bound), the thresholds and
     * their sign (code_thresholds), the quantizer's words */
    int64_t at = blob_conv2d_quant_at(&cp), n2 = at + BLOB_CONV2D_QUANT_WORDS;
    float *in2 = xcalloc((size_t)n2, 4);
    memcpy(in2, k, (size_t)(2 * S * o) * 4);
    int32_t qd[BLOB_CONV2D_QUANT_WORDS] = {(int32_t)q.lo, (int32_t)q.hi, (int32_t)q.rounding,
                                           (int32_t)(uint32_t)q.scale_bits, (int32_t)(uint32_t)q.zeropt_bits};
    memcpy(in2 + at, qd, sizeof qd);
    int64_t kk = cp.c * cp.kh * cp.kw;
    float *tt = xmalloc((size_t)cp.levels * 4);
    for (int64_t c = 0; c < o; c++) {
        in2[2 * S * o + c] = l2_norm_up(w + c * kk, kk);
        if (!code_thresholds(&cp, in2, bv, c, tt, &in2[(2 * S + 1 + cp.levels) * o + c])) {
            free(tt);
            free(in2);
            return 0;
        }
        for (int64_t j = 0; j < cp.levels; j++)
            in2[(2 * S + 1 + j) * o + c] = tt[j];
    }
    free(tt);
    if (image_codes_readers_ok(L, codes)) {
        free(in2);
        return -1;
    }
    int out = new_buf(L, cp.oh * cp.ow * cp.out_words * (planes + 1) * 4);
    stem_conv_step(L, x, out, in2, n2, w, bv, &cp);
    free(in2);
    /* the pool of codes */
    BlobPoolParams pp = chain_pool_params(n, &cp, &y->type);
    pp.words = cp.out_words;
    pp.out_words = cp.out_words;
    pp.nan_flags = 1;
    pp.planes = planes;
    pp.lo = q.lo;
    pp.scale_bits = q.scale_bits;
    pp.zeropt_bits = q.zeropt_bits;
    int64_t plane = blob_image_plane_words(pp.oh * pp.ow, pp.out_words);
    int cbuf = new_buf(L, planes * plane * 4);
    L->vbuf[codes->id] = cbuf;
    LStep *st = new_step(L, BLOB_STEP_MAXPOOL);
    use_arena(L, st, BLOB_SLOT_IN, out);
    use_arena(L, st, BLOB_SLOT_OUT, cbuf);
    if (want_f32)
        use_arena(L, st, BLOB_SLOT_X0, def_buf(L, y));
    st->s.pool = pp;
    L->stem_codes = true;
    /* x0 on the GPU: the float where a GPU kernel reads it, else the NaN flags where a layer
     * reads the codes for the float (plan_rcode keeps the two apart), else nothing */
    const bool gpu_f32 = want_f32 && gpu_reads_float(L, y), nan_flags = want_f32 && gpu_writes_nan_flags(L, y);
    float_kernel(L, st, "maxpool", plane,
                 str_printf("bnn_codepool<%lld, %lld, %lld>(item, j, (const unsigned *)in, (unsigned *)out, "
                            "%s, %s, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, "
                            "%uu, %uu)",
                            (long long)pp.kh, (long long)pp.kw, (long long)planes,
                            gpu_f32 ? "(float *)x0" : "(float *)0", nan_flags ? "(unsigned *)x0" : "(unsigned *)0",
                            (long long)pp.c,
                            (long long)pp.words, (long long)plane, (long long)pp.h, (long long)pp.w,
                            (long long)pp.stride_h, (long long)pp.stride_w, (long long)pp.pad_top,
                            (long long)pp.pad_left, (long long)pp.oh, (long long)pp.ow, (long long)q.lo,
                            (unsigned)q.scale_bits, (unsigned)q.zeropt_bits));
    return 1;
}

/* Whether a conv2d_chain's first stage is v*1 + -0 followed by a relu: the relu the tiled
 * float conv applies before its store. */
static bool identity_relu_stage(const Node *n) {
    int64_t div[CHAIN_MAX_STAGES] = {0}, relu[CHAIN_MAX_STAGES] = {0};
    attr_ints(n, "div", div, CHAIN_MAX_STAGES, 0, NULL);
    attr_ints(n, "relu", relu, CHAIN_MAX_STAGES, 0, NULL);
    return relu[0] && identity_stage(n->in[2]->data, 0, n->in[2]->type.dim[2], div[0] != 0);
}

/* A float convolution; a relu that is its only reader is fused on the GPU: the conv2d step
 * writes the relu's value, whose relu step then runs on the CPU path only, in place. */
static int lower_conv2d_f32(Lower *L, const Node *n) {
    bool fused = n->op == OP_CONV2D_CHAIN;
    const Value *x = n->in[0], *w = n->in[1], *b = n->nin == (fused ? 4 : 3) ? n->in[n->nin - 1] : NULL;
    if (x->type.dtype != TY_F32 || w->type.dtype != TY_F32 || w->kind != VAL_CONST ||
        (b && (b->kind != VAL_CONST || b->type.dtype != TY_F32)))
        return unsupported(L, "a convolution of this form (float activations, constant float weights expected)");
    int64_t s[2], d[2], p[4];
    conv_geometry(n, s, d, p);
    Type conv_t = n->out[0]->type; /* a conv2d_chain's pool comes after the conv */
    for (int i = 0; i < 2; i++)
        conv_t.dim[2 + i] = (x->type.dim[2 + i] + p[i] + p[i + 2] - d[i] * (w->type.dim[2 + i] - 1) - 1) / s[i] + 1;
    const Type *y = &conv_t;
    BlobConv2dParams cp = {.c = x->type.dim[1], .h = x->type.dim[2], .w = x->type.dim[3], .o = y->dim[1],
                           .kh = w->type.dim[2], .kw = w->type.dim[3], .stride_h = s[0], .stride_w = s[1],
                           .pad_top = p[0], .pad_left = p[1], .pad_bottom = p[2], .pad_right = p[3],
                           .dil_h = d[0], .dil_w = d[1], .groups = attr_int(n, "groups", 1),
                           .oh = y->dim[2], .ow = y->dim[3]};
    if (fused && get_attr(n, "quant_bits")) {
        int rc = lower_conv2d_codes(L, n, cp, w->data, b);
        if (rc)
            return rc < 0 ? -1 : 0;
    } else if (fused && lower_conv2d_bits(L, n, cp, w->data, b)) {
        return 0;
    }
    ConvTile tiles[CONV_TILE_VARIANTS];
    bool mma = L->float_convs != FLOAT_CONVS_EXACT && fp16_conv_ok(&cp, w->data);
    int ntiles = mma ? 0 : plan_conv_tiles(&cp, w->data, tiles);
    bool tiled = ntiles > 0;
    int pick = tiled ? tuned_pick(L, n, ntiles) : 0;
    /* A conv2d_chain on the tiled kernel runs its stages before the pool in the kernel's store
     * (BlobConv2dParams.epi_stages): one pass over the conv's output instead of one a stage. */
    int64_t in_kernel = fused && tiled ? chain_pool_at(n) : 0;
    if (in_kernel)
        set_chain_stages(&cp, n, in_kernel);
    /* both the tiled and the tensor-core kernel apply a relu before their store */
    Node *r = (tiled || mma) && !fused ? only_user(L->g, n->out[0]) : NULL;
    bool relu = (r && r->op == OP_RELU) || (mma && fused && identity_relu_stage(n));
    int out = fused ? new_buf(L, value_bytes(y)) : def_buf(L, relu ? r->out[0] : n->out[0]);
    LStep *st = new_step(L, BLOB_STEP_CONV2D);
    use_arena(L, st, BLOB_SLOT_IN, buf_of(L, x));
    use_arena(L, st, BLOB_SLOT_OUT, out);
    st->s.slot[BLOB_SLOT_W] = put_weights(L, w->data, w->nbytes);
    if (b)
        st->s.slot[BLOB_SLOT_P0] = put_weights(L, b->data, (size_t)cp.o * 4);
    if (in_kernel) /* the chain's first stages: [in_kernel][2][o], a prefix of [S][2][o] */
        st->s.slot[BLOB_SLOT_IN2] = put_weights(L, n->in[2]->data, (size_t)(2 * in_kernel * cp.o) * 4);
    st->s.conv2d = cp;
    if (mma)
        conv2d_mma_kernel(L, st, &cp, w->data, b != NULL, relu);
    else if (tiled) {
        ConvTile small[2];
        uint32_t alt[2] = {0, 0};
        const bool alts = tunable_alts(L, n, ntiles) && pick == 0;
        const int nsmall = alts ? small_batch_tiles(&cp, tiles, ntiles, small, alt) : 0;
        bool tpb_alt = alts && conv2d_tile_tpb_ok(&cp, &tiles[0]) &&
                       (nsmall ? alt[nsmall - 1] : 0) < CONV_TPB_BATCH;
        conv2d_tile_kernel(L, st, &cp, nsmall ? &small[0] : &tiles[pick], b != NULL, relu, tpb_alt && !nsmall, 1);
        if (ntiles > 1) { /* a tunable layer: the tile's pixels and channels a thread, warps */
            char *names[CONV_TILE_VARIANTS];
            for (int i = 0; i < ntiles; i++)
                names[i] = str_printf("%dx%d px, %d px x %d ch a thread, %d warps", tiles[i].bh, tiles[i].bw,
                                      tiles[i].tp, tiles[i].to, tiles[i].bo / tiles[i].to);
            add_tunable(L, st, ntiles, names,
                        str_printf("conv2d: C=%lld H=%lld W=%lld O=%lld KH=%lld KW=%lld SH=%lld SW=%lld PT=%lld "
                                   "PL=%lld PB=%lld PR=%lld DH=%lld DW=%lld G=%lld BIAS=%d RELU=%d ST=%lld "
                                   "DIVM=%lld RELUM=%lld",
                                   (long long)cp.c, (long long)cp.h, (long long)cp.w, (long long)cp.o,
                                   (long long)cp.kh, (long long)cp.kw, (long long)cp.stride_h,
                                   (long long)cp.stride_w, (long long)cp.pad_top, (long long)cp.pad_left,
                                   (long long)cp.pad_bottom, (long long)cp.pad_right, (long long)cp.dil_h,
                                   (long long)cp.dil_w, (long long)cp.groups, b != NULL, relu,
                                   (long long)cp.epi_stages, (long long)cp.epi_div, (long long)cp.epi_relu),
                        pick);
        }
        int si = (int)(st - L->steps);
        for (int j = 1; j < nsmall; j++) /* the next small-batch tile from alt[j - 1] on */
            conv2d_tile_kernel(L, new_batch_alt(L, si, alt[j - 1]), &cp, &small[j], b != NULL, relu, false, 1);
        if (nsmall) /* the rule's tile from alt[nsmall - 1] on */
            conv2d_tile_kernel(L, new_batch_alt(L, si, alt[nsmall - 1]), &cp, &tiles[0], b != NULL, relu, tpb_alt, 1);
        if (tpb_alt) /* the same kernel, CONV_TPB tiles a block */
            conv2d_tile_kernel(L, new_batch_alt(L, si, CONV_TPB_BATCH), &cp, &tiles[0], b != NULL, relu, true,
                               CONV_TPB);
        st = &L->steps[si];
    }
    else
        float_kernel(L, st, "conv2d", cp.o * cp.oh * cp.ow,
                     str_printf("bnn_conv2d(item, j, (const float *)in, (const float *)w, (const float *)p0, "
                                "(float *)out, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, "
                                "%lld, %lld, %lld, %lld)",
                                (long long)cp.c, (long long)cp.h, (long long)cp.w, (long long)cp.o, (long long)cp.kh,
                                (long long)cp.kw, (long long)cp.stride_h, (long long)cp.stride_w,
                                (long long)cp.pad_top, (long long)cp.pad_left, (long long)cp.dil_h,
                                (long long)cp.dil_w, (long long)cp.groups, (long long)cp.oh, (long long)cp.ow));
    if (relu) {
        st = new_step(L, BLOB_STEP_RELU);
        use_arena(L, st, BLOB_SLOT_IN, out);
        use_arena(L, st, BLOB_SLOT_OUT, out);
        st->s.relu = (BlobCountParams){.count = item_numel(y)};
        st->s.flags |= BLOB_STEP_CPU_ONLY;
        if (r)
            L->done[node_index(L->g, r)] = true;
    }
    if (fused) /* the stages not run above (the kernel's, or a relu), the pool, the bits */
        return lower_chain_rest(L, n, out, y, tiled ? (int)in_kernel : relu ? 1 : 0, false,
                                count_uses(L->g, n->out[1]) > 0);
    return 0;
}

/* Pools over f32; a max-pool of bits (the OR, i.e. the max of +-1) through floats:
 * unpack, pool (padding ignored, an empty window is -inf, bit 0), pack. */
static int lower_pool(Lower *L, const Node *n) {
    const Value *x = n->in[0];
    const Type *y = &n->out[0]->type;
    bool max = n->op == OP_MAXPOOL, bits = x->type.dtype == TY_B1;
    int64_t d[2] = {1, 1};
    attr_ints(n, "dilations", d, 2, 2, d);
    if (d[0] != 1 || d[1] != 1)
        return unsupported(L, "a dilated pool");
    if (bits && (!packed_words(&x->type) || !stored_words(y) || (!packed_words(y) && y->dim[2] * y->dim[3] > 1)))
        return unsupported(L, "a max-pool of bits in this format");
    BlobPoolParams pp = pool_params(n, &x->type, y);
    if (!bits) {
        emit_pool(L, buf_of(L, x), def_buf(L, n->out[0]), &pp, max);
        return 0;
    }
    int64_t words = packed_words(&x->type), S = pp.h * pp.w;
    int fx = new_buf(L, pp.c * S * 4), fy = new_buf(L, pp.c * pp.oh * pp.ow * 4);
    LStep *st = new_step(L, BLOB_STEP_UNPACK);
    use_arena(L, st, BLOB_SLOT_IN, buf_of(L, x));
    use_arena(L, st, BLOB_SLOT_OUT, fx);
    st->s.unpack = (BlobUnpackParams){.channels = pp.c, .spatial = S, .words = words, .layout = BLOB_LAYOUT_CS};
    float_kernel(L, st, "unpack", pp.c * S,
                 str_printf("bnn_unpack(item, j, (const unsigned *)in, (float *)out, %lld, %lld, %lld, 0)",
                            (long long)pp.c, (long long)S, (long long)words));
    emit_pool(L, fx, fy, &pp, true);
    Type ft = *y;
    ft.dtype = TY_F32;
    memset(&ft.pack, 0, sizeof ft.pack);
    add_pack(L, fy, &ft, n->out[0], 1);
    return 0;
}

/* globalavgpool over f32, or over b1 NHWC-packed words (cleanup's globalavgpool(cast(b))): the
 * mean of the +-1 values, whose float sum in order is the integer 2 * ones - S exactly. */
static int lower_gap(Lower *L, const Node *n) {
    const Value *x = n->in[0];
    int64_t C = x->type.dim[1], S = spatial_of(&x->type), words = 0;
    if (x->type.dtype == TY_B1 && !(words = packed_words(&x->type)))
        return unsupported(L, "a global average pool of bits in this format");
    int out = def_buf(L, n->out[0]);
    LStep *st = new_step(L, BLOB_STEP_GLOBALAVGPOOL);
    use_arena(L, st, BLOB_SLOT_IN, buf_of(L, x));
    use_arena(L, st, BLOB_SLOT_OUT, out);
    st->s.gap = (BlobGapParams){.channels = C, .spatial = S, .words = words};
    if (!words && gap_reads_codes(L, n, x)) { /* the GPU's: x's codes (x0), its NaN flags in its buffer */
        const Node *src = rcode_source(L, x);
        const BlobQuantizeParams q = chain_quantizer(src, 0);
        const int64_t ldw = image_ldw(C);
        use_arena(L, st, BLOB_SLOT_X0, value_buf(L, src->out[1]));
        float_kernel(L, st, "gap", C,
                     str_printf("bnn_gap_codes<%lld>(item, j, (const unsigned *)x0, %s, (float *)out, %lld, %lld, "
                                "%lld, %lld, %lld, %uu, %uu)",
                                (long long)code_planes(src->out[1]),
                                gpu_writes_nan_flags(L, x) ? "(const unsigned *)in" : "(const unsigned *)0",
                                (long long)C, (long long)S, (long long)ldw,
                                (long long)blob_image_plane_words(S, ldw), (long long)q.lo, (unsigned)q.scale_bits,
                                (unsigned)q.zeropt_bits));
        L->ngap_codes++;
        return 0;
    }
    float_kernel(L, st, "gap", C,
                 words ? str_printf("bnn_gap_bits(item, j, (const unsigned *)in, (float *)out, %lld, %lld, %lld)",
                                    (long long)C, (long long)S, (long long)words)
                       : str_printf("bnn_gap(item, j, (const float *)in, (float *)out, %lld, %lld)", (long long)C,
                                    (long long)S));
    return 0;
}

static void add_relu(Lower *L, int in, int out, int64_t count) {
    LStep *st = new_step(L, BLOB_STEP_RELU);
    use_arena(L, st, BLOB_SLOT_IN, in);
    use_arena(L, st, BLOB_SLOT_OUT, out);
    st->s.relu = (BlobCountParams){.count = count};
    float_kernel(L, st, "relu", count,
                 str_printf("bnn_relu(item, j, (const float *)in, (float *)out, %lld)", (long long)count));
}

static int lower_relu(Lower *L, const Node *n) {
    if (n->op == OP_CLIP)
        return unsupported_op(L);
    int in = buf_of(L, n->in[0]);
    add_relu(L, in, def_buf(L, n->out[0]), item_numel(&n->out[0]->type));
    return 0;
}

/* argmax, or a top-1 whose values nobody reads: the first index of the maximum. */
static int lower_argmax(Lower *L, const Node *n) {
    const Value *x = n->in[0];
    const Value *idx = n->op == OP_TOPK ? n->out[1] : n->out[0];
    int r = x->type.rank;
    int64_t axis = attr_int(n, "axis", -1);
    if (axis < 0)
        axis += r;
    if (x->type.dtype != TY_F32 || axis != r - 1 || r < 2)
        return unsupported(L, "an argmax or top-k over an axis other than the last");
    if (n->op == OP_TOPK && (attr_int(n, "k", 0) != 1 || attr_int(n, "largest", 1) != 1 ||
                             count_uses(L->g, n->out[0]) || is_output(L->g, n->out[0])))
        return unsupported(L, "a top-k other than the index of the largest (k=1, values unused)");
    int64_t cols = x->type.dim[r - 1], rows = item_numel(&x->type) / cols;
    int out = def_buf(L, idx);
    LStep *st = new_step(L, BLOB_STEP_ARGMAX);
    use_arena(L, st, BLOB_SLOT_IN, buf_of(L, x));
    use_arena(L, st, BLOB_SLOT_OUT, out);
    st->s.argmax = (BlobArgmaxParams){.rows = rows, .n = cols};
    float_kernel(L, st, "argmax", rows,
                 str_printf("bnn_argmax(item, j, (const float *)in, (long long *)out, %lld, %lld)",
                            (long long)rows, (long long)cols));
    return 0;
}

static int lower_softmax(Lower *L, const Node *n) {
    const Value *x = n->in[0];
    int r = x->type.rank;
    int64_t axis = attr_int(n, "axis", -1);
    if (axis < 0)
        axis += r;
    if (axis != r - 1 || r < 2)
        return unsupported(L, "a softmax over an axis other than the last");
    int64_t cols = x->type.dim[r - 1], rows = item_numel(&x->type) / cols;
    int out = def_buf(L, n->out[0]);
    LStep *st = new_step(L, BLOB_STEP_SOFTMAX);
    use_arena(L, st, BLOB_SLOT_IN, buf_of(L, x));
    use_arena(L, st, BLOB_SLOT_OUT, out);
    st->s.softmax = (BlobSoftmaxParams){.rows = rows, .n = cols};
    float_kernel(L, st, "softmax", rows,
                 str_printf("bnn_softmax(item, j, (const float *)in, (float *)out, %lld, %lld)",
                            (long long)rows, (long long)cols));
    return 0;
}

/* Bits from one storage to another (NHWC-packed -> flattened, packed -> the canonical
 * storage of a b1 graph output): unpack to +-1 floats in row-major order, pack them again
 * in y's shape. Exact. */
static int convert_bits(Lower *L, const Value *x, const Value *y) {
    int64_t wi = stored_words(&x->type);
    if (!wi || !stored_words(&y->type) || x->type.rank < 2 || y->type.rank < 2 ||
        (!packed_words(&y->type) && spatial_of(&y->type) > 1))
        return unsupported(L, "this change of bit layout");
    int64_t C = x->type.dim[1], S = spatial_of(&x->type);
    Type ft = y->type;
    ft.dtype = TY_F32;
    memset(&ft.pack, 0, sizeof ft.pack);
    int tmp = new_buf(L, value_bytes(&ft));
    LStep *st = new_step(L, BLOB_STEP_UNPACK);
    use_arena(L, st, BLOB_SLOT_IN, buf_of(L, x));
    use_arena(L, st, BLOB_SLOT_OUT, tmp);
    st->s.unpack = (BlobUnpackParams){.channels = C, .spatial = S, .words = wi, .layout = BLOB_LAYOUT_CS};
    float_kernel(L, st, "unpack", C * S,
                 str_printf("bnn_unpack(item, j, (const unsigned *)in, (float *)out, %lld, %lld, %lld, 0)",
                            (long long)C, (long long)S, (long long)wi));
    add_pack(L, tmp, &ft, y, 1);
    return 0;
}

/* reshape keeps the bytes of canonical tensors: the result shares its input's buffer.
 * Packed bits keep their order only for [N,C] <-> [N,C,1,..]; else they are converted. */
static int lower_reshape(Lower *L, const Node *n) {
    const Value *x = n->in[0], *y = n->out[0];
    if (x->kind == VAL_CONST)
        return unsupported(L, "a reshape of a constant (run cleanup: -O1 or more)");
    bool same = value_bytes(&x->type) == value_bytes(&y->type);
    if (x->type.dtype == TY_B1)
        same = same && x->type.dim[1] == y->type.dim[1] && spatial_of(&x->type) == 1 &&
               spatial_of(&y->type) == 1 && stored_words(&x->type) == stored_words(&y->type);
    if (!same)
        return x->type.dtype == TY_B1 ? convert_bits(L, x, y)
                                      : unsupported(L, "a reshape that changes the byte count");
    L->vbuf[y->id] = buf_of(L, x);
    return 0;
}

/* A change of bit format (e.g. packed -> the canonical storage of a b1 graph output). */
static bool bit_rows(const Type *t, int64_t *tile, int64_t *ld);
static int lower_retile(Lower *L, const Value *x, const Value *y);

static int lower_repack(Lower *L, const Node *n) {
    const Value *x = n->in[0], *y = n->out[0];
    if (x->type.pack.tile != TILE_NONE || y->type.pack.tile != TILE_NONE)
        return lower_retile(L, x, y);
    int64_t wi = stored_words(&x->type), wo = stored_words(&y->type);
    if (type_equal(&x->type, &y->type) || (wi && wi == wo && spatial_of(&x->type) == 1)) {
        L->vbuf[y->id] = buf_of(L, x);
        return 0;
    }
    if ((!wi || !wo) && x->type.rank == 2 && y->type.rank == 2) /* e.g. a b1 [N,C] output, C not 32k */
        return lower_retile(L, x, y);
    return convert_bits(L, x, y);
}

/* The rows of a b1 [N,K] value as the retile step sees them: tile rows (0: row-major) and
 * bytes a row (canonical storage: ceil(K/8) bytes an item). */
static bool bit_rows(const Type *t, int64_t *tile, int64_t *ld) {
    if (t->rank != 2)
        return false;
    if (t->pack.tile != TILE_NONE) {
        *tile = t->pack.tile == TILE_K128 ? 128 : 256;
        *ld = t->pack.pad_to / 8;
        return true;
    }
    int64_t w = packed_words(t);
    *tile = 0;
    *ld = w ? w * 4 : (t->dim[1] + 7) / 8;
    return true;
}

/* A repack to or from a tile-major format: one retile step (a byte gather; float_ops.cu's
 * bnn_retile on the GPU, one thread per output byte). */
static int lower_retile(Lower *L, const Value *x, const Value *y) {
    int64_t it, ild, ot, old;
    if (x->kind == VAL_CONST || !bit_rows(&x->type, &it, &ild) || !bit_rows(&y->type, &ot, &old))
        return unsupported(L, "this change to or from a tile-major bit layout (only [N,K] values)");
    int64_t k = x->type.dim[1];
    LStep *st = new_step(L, BLOB_STEP_RETILE);
    use_arena(L, st, BLOB_SLOT_IN, buf_of(L, x));
    use_arena(L, st, BLOB_SLOT_OUT, def_buf(L, y));
    st->s.retile = (BlobRetileParams){.rows = 1, .k = k, .in_tile = it, .in_ld = ild, .out_tile = ot, .out_ld = old};
    float_kernel(L, st, "retile", old,
                 str_printf("bnn_retile(item, j, total / %lld, (const unsigned char *)in, (unsigned char *)out, 1, "
                            "%lld, %lld, %lld, %lld, %lld)",
                            (long long)old, (long long)k, (long long)it, (long long)ild, (long long)ot,
                            (long long)old));
    return 0;
}

/* ---------------------------------------------------------------- low-bit layers */

/* The low-bit steps (quantize, qgemm: docs/blob-format.md kinds 18, 19): on the GPU a
 * float_ops.cu bnn_quantize and a specialized bgemm_planes.cu. Integer codes (results of quantize
 * and of a thresholded qdense) are stored as bit-planes, [bits][ld] words per batch item with
 * ld = the code count rounded up to 256 bits: the operand layout of the next qgemm. */

/* A value that holds integer codes as bit-planes, and how many planes. */
static int64_t code_planes(const Value *v) {
    const Node *d = v->kind == VAL_NODE ? v->def : NULL;
    if (d && d->op == OP_QDENSE && d->nin == 4)
        return blob_code_planes(d->in[2]->type.dim[1]);
    if (d && d->op == OP_THRESHOLD && d->in[1]->type.rank == 2 && d->in[0]->def &&
        d->in[0]->def->op == OP_QDENSE) /* qdense + threshold, as -O1 leaves them: fused */
        return blob_code_planes(d->in[1]->type.dim[1]);
    if (d && (d->op == OP_QUANTIZE || ((d->op == OP_QCONV2D_CHAIN || d->op == OP_CONV2D_CHAIN) && v->def_index == 1 &&
                                       get_attr(d, "quant_bits")))) {
        int64_t bits = d->op == OP_QUANTIZE ? (int64_t)((const float *)d->in[3]->data)[0]
                                            : attr_int(d, "quant_bits", 1);
        int64_t lo, hi;
        quant_range(bits, attr_int(d, "signed", 1), attr_int(d, "narrow", 0), &lo, &hi);
        return blob_code_planes(hi - lo);
    }
    return 0;
}

/* Every reader of v is a qdense reading it as its codes (they read bit-planes): 0, else -1
 * (the _quiet form) or the error. */
static int codes_only_for_qdense_quiet(Lower *L, const Value *v) {
    bool ok = !is_output(L->g, v) && v->type.rank == 2;
    for (int i = 0; ok && i < L->g->nnodes; i++) {
        const Node *u = L->g->nodes[i];
        for (int j = 0; !u->dead && j < u->nin; j++)
            if (u->in[j] == v)
                ok = u->op == OP_QDENSE && j == 0;
    }
    return ok ? 0 : -1;
}

static int codes_only_for_qdense(Lower *L, const Value *v) {
    if (!codes_only_for_qdense_quiet(L, v))
        return 0;
    return unsupported(L, "integer codes read by anything but qdense (or of rank > 2)");
}

/* Image planes: the codes of a convolution's input or output, per item `bits` planes of
 * blob_image_plane_words each, a plane [pixels][ldw] words, channel c at bit c%32 of word c/32 of
 * its pixel, padding bits and the plane's tail words zero. ldw is 1, 2 or 4 words for up to
 * 128 channels (a k256 step of the qconv kernel then spans 8/ldw taps, so few channels waste
 * little of each MMA), else a multiple of 8 (whole k256 steps a tap; each plane is then the
 * NHWC-packed layout of a b1 value). A whole plane read as one row is a flatten of the codes
 * for a qdense (its weight columns permuted to that order, flat_image_bit). */
static int64_t image_ldw(int64_t channels) {
    int64_t w = (channels + 31) / 32;
    return w <= 1 ? 1 : w <= 2 ? 2 : w <= 4 ? 4 : (w + 7) / 8 * 8;
}

/* A threshold of levels (t: [O, L]) whose input is a qconv2d's accumulator. */
static bool is_qconv_threshold(const Node *d) {
    return d && d->op == OP_THRESHOLD && d->in[1]->type.rank == 2 && d->in[0]->kind == VAL_NODE &&
           d->in[0]->def && d->in[0]->def->op == OP_QCONV2D;
}

/* v holds codes as image planes: a quantize of an NCHW tensor, a thresholded qconv2d, the
 * multi-level threshold of one (fused by lower_qconv), or a qconv2d_chain's or conv2d_chain's
 * quantized codes. */
static bool is_image_codes(const Value *v) {
    const Node *d = v->kind == VAL_NODE ? v->def : NULL;
    return d && v->type.rank == 4 &&
           (d->op == OP_QUANTIZE || (d->op == OP_QCONV2D && d->nin == 4) || is_qconv_threshold(d) ||
            ((d->op == OP_QCONV2D_CHAIN || d->op == OP_CONV2D_CHAIN) && v->def_index == 1 &&
             get_attr(d, "quant_bits")));
}

static int64_t image_code_planes(const Value *v) {
    const Node *d = v->def;
    if (d->op == OP_QCONV2D)
        return blob_code_planes(d->in[2]->type.dim[1]);
    if (d->op == OP_THRESHOLD)
        return blob_code_planes(d->in[1]->type.dim[1]);
    return code_planes(v);
}

/* The image planes a qdense's codes are a flatten of, or NULL. */
static const Value *image_source(const Value *x) {
    const Node *d = x->kind == VAL_NODE ? x->def : NULL;
    return d && d->op == OP_RESHAPE && x->type.rank == 2 && is_image_codes(d->in[0]) ? d->in[0] : NULL;
}

/* Bit position, in a plane of image codes, of element k of their NCHW flatten. */
static int64_t flat_image_bit(const Value *img, int64_t k) {
    int64_t hw = spatial_of(&img->type), c = k / hw;
    return (k % hw) * image_ldw(img->type.dim[1]) * 32 + c;
}

/* Every reader of the image codes v is a qconv2d reading them as its codes, or a flatten that
 * only qdense layers read (they read the planes as one row). */
static int image_codes_readers_ok(Lower *L, const Value *v) {
    bool ok = !is_output(L->g, v);
    for (int i = 0; ok && i < L->g->nnodes; i++) {
        const Node *u = L->g->nodes[i];
        for (int j = 0; ok && !u->dead && j < u->nin; j++)
            if (u->in[j] == v)
                ok = ((u->op == OP_QCONV2D || u->op == OP_QCONV2D_CHAIN) && j == 0) ||
                     (u->op == OP_RESHAPE && u->out[0]->type.rank == 2 && !codes_only_for_qdense_quiet(L, u->out[0]));
    }
    return ok ? 0 : unsupported(L, "integer codes of a convolution read by anything but a qconv2d "
                                   "or a flatten into a qdense");
}

/* The planes of the weight codes u (n of them): one +-1 plane, else two's complement (or
 * unsigned) with enough bits; weight_bit gives plane q's bit of one code. */
static int64_t weight_planes(const int8_t *u, int64_t n, bool *wsigned, bool *bipolar) {
    int umin = 0, umax = 0;
    *bipolar = true;
    for (int64_t i = 0; i < n; i++) {
        umin = u[i] < umin ? u[i] : umin;
        umax = u[i] > umax ? u[i] : umax;
        *bipolar = *bipolar && (u[i] == 1 || u[i] == -1);
    }
    *wsigned = !*bipolar && umin < 0;
    int64_t wb = *bipolar ? 1 : *wsigned ? 1 : blob_code_planes(umax);
    while (*wsigned && (umin < -(1ll << (wb - 1)) || umax > (1ll << (wb - 1)) - 1))
        wb++;
    return wb;
}

static int weight_bit(int8_t u, int64_t q, bool bipolar) { return bipolar ? u > 0 : ((uint8_t)u >> q) & 1; }

/* ---------------------------------------------------------------- residuals read as codes */

/* A qconv2d_chain whose residual is the dequantized float of another layer's codes (a ResNet
 * block's second conv adding the block input) computes, per element, a monotone function of its
 * accumulator v for each of the few values the residual can take. So its GPU kernel reads the
 * residual's codes (2 bits an element, not 32) and compares v with thresholds picked by the
 * residual's code, and the residual's producer writes no float on the GPU where nothing else
 * reads it (docs/codegen.md "Residuals read as codes", docs/kernels.md "Thresholds by a
 * residual code"). The CPU path runs the float chains as before: their steps become CPU-only.
 * Residual codes of at most RCODE_MAX_PLANES planes (a residual's 4 values: 16 bytes of levels a
 * channel and value in the kernel's shared memory). */
enum { RCODE_MAX_PLANES = 2 };

/* Whether chain node n's stage constants are finite with no factor or divisor 0, and its
 * quantizer's scale finite and positive, its zero point finite: each operation of its chain is
 * then monotone in v and gives no NaN from a non-NaN value. */
static bool qchain_clean(const Node *n) {
    const Value *chain = n->in[2];
    if (chain->kind != VAL_CONST || chain->type.rank != 3)
        return false;
    int64_t S = chain->type.dim[0], O = chain->type.dim[2];
    const float *k = chain->data;
    for (int64_t st = 0; st < S; st++)
        for (int64_t o = 0; o < O; o++) {
            float a = k[2 * st * O + o], b = k[(2 * st + 1) * O + o];
            if (!isfinite(a) || a == 0.0f || !isfinite(b))
                return false;
        }
    float scale = attr_float(n, "quant_scale", 1.0f), zero = attr_float(n, "quant_zero", 0.0f);
    return isfinite(scale) && scale > 0.0f && isfinite(zero);
}

/* The largest |accumulator| of qconv2d_chain n's output channel o: sum |w| times the largest
 * input code. */
static int64_t qchain_acc_bound(const Node *n, int64_t o) {
    const Value *w = n->in[1];
    int64_t k = w->type.dim[1] * w->type.dim[2] * w->type.dim[3], a = 0;
    const int8_t *u = (const int8_t *)w->data + o * k;
    for (int64_t i = 0; i < k; i++)
        a += u[i] < 0 ? -u[i] : u[i];
    return a * ((1ll << image_code_planes(n->in[0])) - 1);
}

/* An upper bound of |v| after qconv2d_chain n's stages, over every accumulator it can produce. */
static double qchain_stage_bound(const Node *n) {
    const Value *chain = n->in[2];
    int64_t S = chain->type.dim[0], O = chain->type.dim[2], div[CHAIN_MAX_STAGES] = {0};
    attr_ints(n, "div", div, (int)S, 0, NULL);
    const float *k = chain->data;
    double most = 0.0;
    for (int64_t o = 0; o < O; o++) {
        double b = (double)qchain_acc_bound(n, o);
        for (int64_t st = 0; st < S; st++) {
            double a = fabs((double)k[2 * st * O + o]);
            b = (div[st] ? b / a : b * a) * (1.0 + 1e-6) + fabs((double)k[(2 * st + 1) * O + o]);
        }
        most = b > most ? b : most;
    }
    return most;
}

/* Whether value v may be NaN where a qconv2d_chain adds it: only the float of a qconv2d_chain
 * whose constants are clean, whose stages stay far from infinity and whose own residual is never
 * NaN is known not to be (the stem's float is NaN for NaN inputs). */
static bool value_may_be_nan(const Lower *L, const Value *v) {
    if (L->may_nan[v->id] >= 0) /* (the bound reads every weight: asked often, computed once) */
        return L->may_nan[v->id];
    const Node *d = v->kind == VAL_NODE ? v->def : NULL;
    bool nan = !d || d->op != OP_QCONV2D_CHAIN || v->def_index != 0 || !qchain_clean(d) ||
               !(qchain_stage_bound(d) < 1e30) || (d->nin == 4 && value_may_be_nan(L, d->in[3]));
    L->may_nan[v->id] = nan;
    return nan;
}

/* The float of code c of a quantizer, as the CPU path dequantizes it (blob_dequantize) and the
 * dequantizing kernels round it. */
static float rcode_float(const BlobQuantizeParams *q, int64_t c) {
    float scale, zero;
    uint32_t sb = (uint32_t)q->scale_bits, zb = (uint32_t)q->zeropt_bits;
    memcpy(&scale, &sb, 4);
    memcpy(&zero, &zb, 4);
    return blob_dequantize((float)(c + q->lo), scale, zero);
}

/* The layer whose codes hold r, where a qconv2d_chain (or a global average pool) can read them
 * instead of r: r is the dequantized float of a qconv2d_chain or of a conv2d_chain that writes a
 * pool of codes (the stem's), whose codes a qconv reads as image planes (or which is itself in
 * L->rcode: its kernel writes them), with at most RCODE_MAX_PLANES planes and a finite float for
 * every code; else NULL. */
static const Node *rcode_source(const Lower *L, const Value *r) {
    const Node *d = r->kind == VAL_NODE ? r->def : NULL;
    if (!d || r->def_index != 0 || (d->op != OP_QCONV2D_CHAIN && d->op != OP_CONV2D_CHAIN) || d->nout < 2 ||
        !get_attr(d, "quant_bits") || !attr_int(d, "dequant", 0) ||
        (count_uses(L->g, d->out[1]) == 0 && !(d->op == OP_QCONV2D_CHAIN && L->rcode[node_index(L->g, d)])) ||
        !is_image_codes(d->out[1]) || code_planes(d->out[1]) > RCODE_MAX_PLANES || L->no_rcode_src[node_index(L->g, d)])
        return NULL;
    BlobQuantizeParams q = chain_quantizer(d, 0);
    for (int64_t c = 0; c <= q.hi - q.lo; c++)
        if (!isfinite(rcode_float(&q, c)))
            return NULL;
    return d;
}

/* The halo kernel's layer of qconv node n with resw residual words a tile row. */
static HaloLayer qconv_halo_layer(const Node *n, int resw) {
    const Value *x = n->in[0], *w = n->in[1], *y = n->out[0];
    int64_t s[2], d[2], p[4], O = w->type.dim[0], taps = w->type.dim[2] * w->type.dim[3];
    conv_geometry(n, s, d, p);
    bool wsigned, bipolar;
    int64_t wb = weight_planes(w->data, O * x->type.dim[1] * taps, &wsigned, &bipolar);
    int64_t xb = image_code_planes(x), nacc = wsigned && !bipolar ? xb + wb - 2 + xb : xb + wb - 1;
    HaloLayer hl = {.c = (int)x->type.dim[1], .oh = (int)y->type.dim[2], .ow = (int)y->type.dim[3], .o = (int)O,
                    .kh = (int)w->type.dim[2], .kw = (int)w->type.dim[3], .sh = (int)s[0], .sw = (int)s[1],
                    .dh = (int)d[0], .dw = (int)d[1], .xb = (int)xb, .wb = (int)wb, .nacc = (int)nacc, .resw = resw};
    return hl;
}

/* Whether qconv2d_chain n could read its residual as codes, by itself: a GPU target and the halo
 * kernel, at most 3 levels out (the kernel's codes in the fragment layout), clean constants, its
 * codes read by qconvs only (or by nothing: then a global average pool of its float reads them),
 * its float no graph output, a residual of its own shape from rcode_source, and the kernel's
 * shared memory. */
static bool rcode_local_ok(Lower *L, const Node *n) {
    if (!L->min_sm || L->qconv_direct || n->dead || n->op != OP_QCONV2D_CHAIN || n->nin != 4 || n->nout < 2 ||
        !get_attr(n, "quant_bits") || attr_int(n, "groups", 1) != 1 || n->in[1]->kind != VAL_CONST ||
        n->in[2]->kind != VAL_CONST || !is_image_codes(n->in[0]) || is_output(L->g, n->out[0]) ||
        is_output(L->g, n->out[1]))
        return false;
    BlobQuantizeParams q = chain_quantizer(n, 0);
    if (q.hi - q.lo > 3 || !qchain_clean(n) || !(qchain_stage_bound(n) < 1e30))
        return false;
    for (int64_t o = 0; o < n->in[1]->type.dim[0]; o++) /* levels as int16 (rcode_levels) */
        if (qchain_acc_bound(n, o) > INT16_MAX - 2)
            return false;
    for (int i = 0; i < L->g->nnodes; i++) {
        const Node *u = L->g->nodes[i];
        for (int j = 0; !u->dead && j < u->nin; j++)
            if (u->in[j] == n->out[1] && !((u->op == OP_QCONV2D || u->op == OP_QCONV2D_CHAIN) && j == 0))
                return false;
    }
    const Type *rt = &n->in[3]->type, *yt = &n->out[0]->type;
    if (rt->rank != 4 || yt->rank != 4)
        return false;
    for (int i = 1; i < 4; i++)
        if (rt->dim[i] != yt->dim[i])
            return false;
    HaloLayer hl = qconv_halo_layer(n, RCODE_MAX_PLANES + 1);
    BnnHaloCfg hc;
    return qconv_halo_variant(0, &hl, &hc) == 0 && rcode_source(L, n->in[3]) != NULL;
}

/* Whether qconv2d_chain u reads v as its residual and nothing else, and reads it as codes. */
static bool rcode_reader(const Lower *L, const Node *u, const Value *v) {
    if (u->dead || u->op != OP_QCONV2D_CHAIN || u->nin != 4 || u->in[3] != v || !L->rcode[node_index(L->g, u)])
        return false;
    for (int j = 0; j < 3; j++)
        if (u->in[j] == v)
            return false;
    return true;
}

/* Whether global average pool u reads v as its codes on the GPU (float_ops.cu bnn_gap_codes:
 * each code's float, or NaN where v's producer flags one, summed in the CPU path's order): v has
 * a rcode_source, and where v may be NaN its producer writes the flags. */
static bool gap_reads_codes(const Lower *L, const Node *u, const Value *v) {
    if (!L->min_sm || u->dead || u->op != OP_GLOBALAVGPOOL || u->in[0] != v || v->type.dtype != TY_F32 ||
        v->type.rank != 4)
        return false;
    const Node *src = rcode_source(L, v);
    return src && (!value_may_be_nan(L, v) || src->op == OP_CONV2D_CHAIN || L->rcode[node_index(L->g, src)]);
}

/* Whether u reads v as its codes on the GPU: a chain's residual, or a global average pool. */
static bool reads_codes(const Lower *L, const Node *u, const Value *v) {
    return rcode_reader(L, u, v) || gap_reads_codes(L, u, v);
}

/* Whether a GPU kernel reads value v as a float: it is a graph output, or a reader of it does
 * not read it as codes. */
static bool gpu_reads_float(const Lower *L, const Value *v) {
    if (is_output(L->g, v))
        return true;
    for (int i = 0; i < L->g->nnodes; i++) {
        const Node *u = L->g->nodes[i];
        for (int j = 0; !u->dead && j < u->nin; j++)
            if (u->in[j] == v && !reads_codes(L, u, v))
                return true;
    }
    return false;
}

/* Whether the GPU writes value v's NaN flags (in its f32 buffer, which then holds no floats on
 * the GPU): v may be NaN and a reader reads it as codes. */
static bool gpu_writes_nan_flags(const Lower *L, const Value *v) {
    if (!value_may_be_nan(L, v))
        return false;
    for (int i = 0; i < L->g->nnodes; i++)
        if (reads_codes(L, L->g->nodes[i], v))
            return true;
    return false;
}

/* L->rcode: the largest set of qconv2d_chains that read their residual as codes such that each
 * is rcode_local_ok, every reader of its float reads it as codes too (no GPU kernel writes the
 * float), and where its residual may be NaN, the residual's producer writes the NaN flags (the
 * stem's pool of codes, or a layer of the set) and nothing on the GPU reads that float (the flags
 * take its buffer). Run before lowering, and again when a conv2d_chain wrote no pool of codes. */
static void plan_rcode(Lower *L) {
    const Graph *g = L->g;
    for (int i = 0; i < g->nnodes; i++)
        L->rcode[i] = rcode_local_ok(L, g->nodes[i]);
    for (bool changed = true; changed;) {
        changed = false;
        for (int i = 0; i < g->nnodes; i++) {
            const Node *n = g->nodes[i];
            if (!L->rcode[i])
                continue;
            const Value *r = n->in[3];
            const Node *src = rcode_source(L, r);
            bool ok = src && !gpu_reads_float(L, n->out[0]);
            if (ok && value_may_be_nan(L, r))
                ok = (src->op == OP_CONV2D_CHAIN || L->rcode[node_index(L->g, src)]) && !gpu_reads_float(L, r);
            if (!ok) {
                L->rcode[i] = false;
                changed = true;
            }
        }
    }
}

/* Whether qconv2d_chain n's codes rise with its accumulator in channel o (else they fall): the
 * sign of the product of its stage factors (each operation of a clean chain is monotone: a
 * factor or divisor below 0 turns it, the adds, relus and the quantizer keep it). */
static bool qchain_rises(const Node *n, int64_t o) {
    const Value *chain = n->in[2];
    int64_t S = chain->type.dim[0], O = chain->type.dim[2];
    bool up = true;
    for (int64_t st = 0; st < S; st++)
        up = up == (((const float *)chain->data)[2 * st * O + o] > 0.0f);
    return up;
}

/* The thresholds by a residual code of qconv2d_chain n (its chain descriptor d and stages ep, O
 * channels; the residual's quantizer rq, at most 4 codes) as qconv.cu's QC_RCODE reads them, T
 * [O][8]: the channel's fold mask (0 where its codes rise with the accumulator v, count = #{l: v
 * >= t_l}; -1 where they fall, t_l the largest v of a code >= l, folded ~t_l), then for level l
 * = 1..3 the int16 t_l of residual codes 0 | 1 << 16 and 2 | 3 << 16 (32767: never reached).
 * Found by bisection with the CPU path's own chain function (blob_qconv_chain_value): with clean
 * constants (qchain_clean) and a finite residual each operation is monotone in v, so each code is
 * a step of v (checked at both ends of v's range). NULL where a level falls outside int16
 * (rcode_local_ok keeps the accumulators within it) or the ends disagree with qchain_rises. */
static int32_t *rcode_levels(const Node *n, const int32_t *d, const float *ep, int64_t O, const BlobQuantizeParams *rq) {
    const int64_t levels = d[BLOB_QCHAIN_HI] - d[BLOB_QCHAIN_LO];
    const float lo = (float)d[BLOB_QCHAIN_LO];
    int32_t *T = xcalloc((size_t)(O * 8), 4);
    for (int64_t o = 0; o < O; o++) {
        const int64_t a = qchain_acc_bound(n, o);
        const bool up = qchain_rises(n, o);
        T[o * 8] = up ? 0 : -1;
        for (int64_t rc = 0; rc < 4; rc++) {
            int64_t c = rc > rq->hi - rq->lo ? rq->hi - rq->lo : rc; /* (a code the residual never has) */
            float r = rcode_float(rq, c), q;
            blob_qconv_chain_value(d, ep, O, o, -a, r, &q);
            int64_t first = (int64_t)(q - lo);
            blob_qconv_chain_value(d, ep, O, o, a, r, &q);
            int64_t last = (int64_t)(q - lo);
            if (up ? last < first : last > first) {
                free(T);
                return NULL;
            }
            for (int64_t l = 1; l <= 3; l++) {
                int64_t t = INT16_MAX;
                if (l <= levels) {
                    /* up: the first v in [-a, a + 1) whose code is >= l (a + 1: none); down: the
                     * first whose code is < l, less one (a: all of them), folded */
                    int64_t b0 = -a, b1 = a + 1;
                    while (b0 < b1) {
                        int64_t mid = b0 + (b1 - b0) / 2;
                        blob_qconv_chain_value(d, ep, O, o, mid, r, &q);
                        bool reached = (int64_t)(q - lo) >= l;
                        if (reached == up)
                            b1 = mid;
                        else
                            b0 = mid + 1;
                    }
                    t = up ? b0 : -(b0 - 1) - 1;
                }
                if (t < INT16_MIN || t > INT16_MAX) {
                    free(T);
                    return NULL;
                }
                T[o * 8 + 2 * l - 1 + rc / 2] |= (int32_t)((uint32_t)(uint16_t)(int16_t)t << (16 * (rc % 2)));
            }
        }
    }
    return T;
}

/* Bit-planes or int8 codes (docs/codegen.md "Bit-planes or int8"). A qdense over xb-bit codes
 * and wb-bit weights costs xb*wb binary MMAs as bit-planes, one int8 MMA of the same work.
 * HARDWARE.md's peak rates (1/8 of the b1 rate) put the crossover at 8 plane pairs, but the
 * kernels themselves, timed on MLPs of 4 x 4096 (docs/perf.md stop 54, H200, batches 1024,
 * 256, 1), put it elsewhere: the int8 GEMM runs at a quarter of its peak, and the bit-plane
 * epilogue counts the levels one by one. Bit-planes win at 9-16 pairs over up to 4 activation
 * bits (w3a3, w4a3, w3a4 and w4a4: 2.5-3.9x at 1024, 1.4-3.2x at batch 1; at 256 w3a3 1.97x,
 * w4a4 0.78x, on the pre-tiled GEMM from 8 pairs: qgemm_tiled_alt); int8 wins past 4
 * activation bits (w1a8 14x at 1024, w4a6 4x, w4a8 and w8a8 15x; the planes ahead only at
 * batch 1 below 32 pairs) and is taken past 16 pairs (unmeasured between 17 and 23).
 * --lowbit=planes / int8 force either. */
static bool qdense_int8_rule(int64_t xb, int64_t wb) { return xb > 4 || xb * wb > 16; }

/* The weight planes of n. */
static int64_t qdense_weight_planes(const Node *n) {
    bool wsigned, bipolar;
    return weight_planes(n->in[1]->data, type_numel(&n->in[1]->type, 1), &wsigned, &bipolar);
}

/* Whether bnncc --tune may choose between bit-planes and int8 for qdense n: --lowbit=auto, and
 * its input codes are read by n alone and could be stored either way (codes_int8). */
static bool qdense_tunable(const Lower *L, const Node *n) {
    const Value *x = n->in[0];
    if (L->lowbit != LOWBIT_AUTO || n->in[1]->kind != VAL_CONST || image_source(x) || is_output(L->g, x) ||
        x->type.rank != 2)
        return false;
    int64_t xb = code_planes(x);
    if (xb < 1 || xb > 8)
        return false;
    int readers = 0;
    for (int i = 0; i < L->g->nnodes; i++) {
        const Node *u = L->g->nodes[i];
        for (int j = 0; !u->dead && j < u->nin; j++)
            readers += u->in[j] == x;
    }
    return readers == 1;
}

/* What the qdense n reading x wants by itself: 1 int8, 0 bit-planes, -1 it cannot read int8
 * codes (a flatten of a convolution's image planes, computed weights, codes wider than 8 bits). */
static int qdense_wants_int8(const Lower *L, const Node *n, int64_t xb) {
    if (n->in[1]->kind != VAL_CONST || image_source(n->in[0]) || xb < 1 || xb > 8)
        return -1;
    if (L->lowbit != LOWBIT_AUTO)
        return L->lowbit == LOWBIT_INT8;
    bool model = qdense_int8_rule(xb, qdense_weight_planes(n));
    return qdense_tunable(L, n) && tuned_pick(L, n, 2) == 1 ? !model : model;
}

/* Codes v (a quantize or a thresholded qdense) are stored as int8 bytes when every reader is a
 * qdense that wants int8 (readers that disagree all read bit-planes). */
static bool codes_int8(const Lower *L, const Value *v) {
    int64_t xb = code_planes(v);
    bool any = false, all = xb > 0 && !is_output(L->g, v) && v->type.rank == 2;
    for (int i = 0; all && i < L->g->nnodes; i++) {
        const Node *u = L->g->nodes[i];
        for (int j = 0; all && !u->dead && j < u->nin; j++)
            if (u->in[j] == v) {
                all = u->op == OP_QDENSE && j == 0 && qdense_wants_int8(L, u, xb) == 1;
                any = true;
            }
    }
    return all && any;
}

/* What a qdense / qconv2d step writes: the i32 accumulator (t NULL), or with thresholds (its
 * own t, dir; or a multi-level threshold that is its only reader, as -O1 leaves them) the
 * next codes as yb planes, or a one-level threshold to packed b1 (one plane). */
typedef struct CodeEpilogue {
    const Value *t, *dir, *out;
    int64_t levels, yb;
} CodeEpilogue;

static int codes_readers_ok(Lower *L, const Value *v, bool conv) {
    return conv ? image_codes_readers_ok(L, v) : codes_only_for_qdense(L, v);
}

static int choose_code_epilogue(Lower *L, const Node *n, bool conv, int64_t ldy, CodeEpilogue *e) {
    const Value *y = n->out[0];
    *e = (CodeEpilogue){NULL, NULL, y, 0, 0};
    Node *thr = only_user(L->g, y);
    bool const_thr = thr && thr->op == OP_THRESHOLD && thr->in[0] == y && thr->in[1]->kind == VAL_CONST &&
                     (thr->nin < 3 || thr->in[2]->kind == VAL_CONST);
    if (n->nin == 4) {
        *e = (CodeEpilogue){n->in[2], n->in[3], y, n->in[2]->type.dim[1], 0};
    } else if (const_thr && thr->in[1]->type.rank == 2) {
        *e = (CodeEpilogue){thr->in[1], thr->nin == 3 ? thr->in[2] : NULL, thr->out[0],
                            thr->in[1]->type.dim[1], 0};
    } else if (const_thr && thr->in[1]->type.rank == 1 && packed_words(&thr->out[0]->type) &&
               (conv ? thr->out[0]->type.rank == 4
                     : packed_words(&thr->out[0]->type) == ldy && spatial_of(&thr->out[0]->type) == 1)) {
        /* bits = one plane of the one-level count: the packed b1 rows of the threshold */
        *e = (CodeEpilogue){thr->in[1], thr->nin == 3 ? thr->in[2] : NULL, thr->out[0], 1, 1};
        L->done[node_index(L->g, thr)] = true;
        return 0;
    } else {
        return 0;
    }
    if (codes_readers_ok(L, e->out, conv))
        return -1;
    e->yb = blob_code_planes(e->levels);
    if (e->out != y)
        L->done[node_index(L->g, thr)] = true;
    return 0;
}

static int cmp_i32(const void *a, const void *b) {
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Whether channel o of a code epilogue falls (its dir negative): its codes count levels at or
 * above the accumulator. */
static bool code_falls(const CodeEpilogue *e, int64_t o) {
    return e->dir && const_at(e->dir, e->dir->type.dim[0] == 1 ? 0 : o) < 0;
}

/* A code epilogue's levels [O][levels] into tv: as the CPU path and the bit-plane kernels count
 * them, or folded, as qgemm_s8.cu counts them by a binary search: t ^ m (m = -1 for a falling
 * channel, else 0: v <= t is ~v >= ~t) sorted ascending (a count does not depend on the order). */
static void code_levels(const CodeEpilogue *e, int64_t O, bool folded, int32_t *tv) {
    const Value *t = e->t;
    int64_t levels = e->levels;
    for (int64_t o = 0; o < O; o++) {
        const int32_t m = folded && code_falls(e, o) ? -1 : 0;
        for (int64_t l = 0; l < levels; l++)
            tv[o * levels + l] = (int32_t)const_at(t, t->type.dim[0] == 1 ? l : o * levels + l) ^ m;
        if (folded)
            qsort(tv + o * levels, (size_t)levels, 4, cmp_i32);
    }
}

/* code_levels into the weights. */
static BlobRef put_code_levels(Lower *L, const CodeEpilogue *e, int64_t O, bool folded) {
    int32_t *tv = xmalloc((size_t)(O * e->levels) * 4);
    code_levels(e, O, folded, tv);
    BlobRef r = put_weights(L, tv, (size_t)(O * e->levels) * 4);
    free(tv);
    return r;
}

/* From how many levels a bit-plane dense step's GPU kernels count its codes by the int8 form's
 * binary search over x0 (bgemm_planes.cu PL_LFOLD, bgemm_planes_tiled.cu PT_LFOLD), one past
 * what the pre-tiled kernel stages in shared memory a tile. Counted one by one from global
 * memory instead, a level at a time for each of a thread's 128 sums, the pre-tiled kernel's
 * epilogue took most of its time (H200, docs/perf.md stop 62: MLPs of 2 x 4096 at batch 256,
 * w4a4 with 15 levels 0.097 ms, w3a5 with 31 and one plane pair less 0.39, w4a6 with 63 0.82). */
#define PLANES_FOLD_LEVELS (BNN_PLANES_WGMMA_STAGE_T_MAX_L + 1)

/* An int8 dense step's x0: its levels folded and sorted, then from BLOB_Q8_EST_LEVELS levels on
 * each channel's estimate of its count (blob.h blob_q8_level_estimate: the kernels check it with
 * four loads instead of a binary search). */
static BlobRef put_q8_dense_levels(Lower *L, const CodeEpilogue *e, int64_t O) {
    const int64_t levels = e->levels, bytes = blob_q8_levels_bytes(O, levels);
    int32_t *tv = xcalloc((size_t)bytes / 4, 4);
    code_levels(e, O, true, tv);
    for (int64_t o = 0; levels >= BLOB_Q8_EST_LEVELS && o < O; o++)
        blob_q8_level_estimate(tv + o * levels, levels, tv + blob_q8_est_at(O, levels) + o * BLOB_Q8_EST_WORDS);
    BlobRef r = put_weights(L, tv, (size_t)bytes);
    free(tv);
    return r;
}

/* The threshold epilogue's levels T [O][levels] in p0 (put_code_levels) and each channel's
 * direction (+1 rising, -1 falling) in p1. */
static void put_code_thresholds_as(Lower *L, LStep *st, const CodeEpilogue *e, int64_t O, bool folded) {
    if (!e->t)
        return;
    int32_t *dv = xmalloc((size_t)O * 4);
    for (int64_t o = 0; o < O; o++)
        dv[o] = code_falls(e, o) ? -1 : 1;
    st->s.slot[BLOB_SLOT_P0] = put_code_levels(L, e, O, folded);
    st->s.slot[BLOB_SLOT_P1] = put_weights(L, dv, (size_t)O * 4);
    free(dv);
}

/* The thresholds of a code epilogue as the bit-plane and qgemm kernels read them. */
static void put_code_thresholds(Lower *L, LStep *st, const CodeEpilogue *e, int64_t O) {
    put_code_thresholds_as(L, st, e, O, false);
}

/* quantize of an NCHW tensor into image planes (the qconv operand). GPU: bnn_quantize_image,
 * one thread per word of a pixel (all planes of it). */
static int lower_quantize_image(Lower *L, int in, const Value *y, BlobQuantizeParams qp) {
    if (image_codes_readers_ok(L, y))
        return -1;
    qp.bits = code_planes(y);
    qp.spatial = spatial_of(&y->type);
    qp.ld = image_ldw(y->type.dim[1]);
    int64_t plane = blob_image_plane_words(qp.spatial, qp.ld);
    int out = new_buf(L, qp.bits * plane * 4);
    L->vbuf[y->id] = out;
    LStep *st = new_step(L, BLOB_STEP_QUANTIZE);
    use_arena(L, st, BLOB_SLOT_IN, in);
    use_arena(L, st, BLOB_SLOT_OUT, out);
    st->s.quantize = qp;
    float_kernel(L, st, "quantize", plane,
                 str_printf("bnn_quantize_image(item, j, (const float *)in, (unsigned *)out, %lld, %lld, %lld, %lld, "
                            "%lld, %lld, %lld, %lld, %uu, %uu)",
                            (long long)y->type.dim[1], (long long)qp.spatial, (long long)qp.bits, (long long)qp.ld,
                            (long long)plane,
                            (long long)qp.lo, (long long)qp.hi, (long long)qp.rounding, (unsigned)qp.scale_bits,
                            (unsigned)qp.zeropt_bits));
    return 0;
}

/* The arguments of the bit-plane kernels (qgemm, qconv): (A, W, rows, T, dir, Y), rows = the
 * batch times rows_per_item, T and dir null for the i32 result. */
/* A code epilogue's levels T from tslot (the levels in p0, or the int8 qgemm's folded ones in
 * x0) and directions (p1) as two kernel arguments, nulls without them. */
static void add_levels_args(LStep *st, int tslot) {
    for (int slot = BLOB_SLOT_P0; slot <= BLOB_SLOT_P1; slot++)
        if (st->s.slot[slot].space != BLOB_SPACE_NONE)
            blob_step_add_arg(&st->s, BLOB_ARG_PTR, (uint32_t)(slot == BLOB_SLOT_P0 ? tslot : slot), 0);
        else
            blob_step_add_arg(&st->s, BLOB_ARG_I64, 0, 0);
}

static void add_planes_args(LStep *st, int64_t rows_per_item, int tslot) {
    blob_step_add_arg(&st->s, BLOB_ARG_PTR, BLOB_SLOT_IN, 0);
    blob_step_add_arg(&st->s, BLOB_ARG_PTR, BLOB_SLOT_W, 0);
    blob_step_add_arg(&st->s, BLOB_ARG_BATCH, 0, rows_per_item);
    add_levels_args(st, tslot);
    blob_step_add_arg(&st->s, BLOB_ARG_PTR, BLOB_SLOT_OUT, 0);
}

/* A dequantizing quantize step (Quant's float result, qp->dequant) from buffer in to out. */
static void emit_dequant(Lower *L, int in, int out, BlobQuantizeParams qp) {
    LStep *st = new_step(L, BLOB_STEP_QUANTIZE);
    use_arena(L, st, BLOB_SLOT_IN, in);
    use_arena(L, st, BLOB_SLOT_OUT, out);
    st->s.quantize = qp;
    /* The GPU: four elements a thread (k % 4 == 0: bnn_dequantize4), else one. */
    if (qp.k % 4 == 0) {
        float_kernel(L, st, "quantize", qp.k / 4,
                     str_printf("bnn_dequantize4(item, j, (const float *)in, (float *)out, %lld, %lld, %lld, %lld, "
                                "%uu, %uu)",
                                (long long)qp.k, (long long)qp.lo, (long long)qp.hi, (long long)qp.rounding,
                                (unsigned)qp.scale_bits, (unsigned)qp.zeropt_bits));
        return;
    }
    float_kernel(L, st, "quantize", qp.k,
                 str_printf("bnn_quantize<%d>(item, j, (const float *)in, out, %lld, %lld, %lld, %lld, %lld, %lld, "
                            "%uu, %uu, 1)",
                            QUANTIZE_WORDS, (long long)qp.k, (long long)qp.bits, (long long)qp.ld, (long long)qp.lo,
                            (long long)qp.hi, (long long)qp.rounding, (unsigned)qp.scale_bits,
                            (unsigned)qp.zeropt_bits));
}

/* The BLOB_ROUND_* of a rounding attribute (docs/ir.md quant; inference checked the name):
 * RoundingMode numbers them alike. */
static int64_t rounding_of_attr(const char *mode) {
    _Static_assert((int)ROUNDING_HALF_EVEN == (int)BLOB_ROUND_HALF_EVEN && (int)ROUNDING_CEIL == (int)BLOB_ROUND_CEIL &&
                       (int)ROUNDING_FLOOR == (int)BLOB_ROUND_FLOOR && (int)ROUNDING_TO_ZERO == (int)BLOB_ROUND_TO_ZERO &&
                       (int)ROUNDING_UP == (int)BLOB_ROUND_UP && (int)ROUNDING_HALF_UP == (int)BLOB_ROUND_HALF_UP &&
                       (int)ROUNDING_HALF_DOWN == (int)BLOB_ROUND_HALF_DOWN,
                   "RoundingMode and BLOB_ROUND_* differ");
    const int m = rounding_of(mode);
    return m < 0 ? BLOB_ROUND_HALF_EVEN : m;
}

/* The quantizer of a fused chain (conv2d_chain, qconv2d_chain: quant_bits and the rest) as a
 * quantize step's parameters over k floats an item (dequant: the chain's dequant). */
static BlobQuantizeParams chain_quantizer(const Node *n, int64_t k) {
    float scale = attr_float(n, "quant_scale", 1.0f), zero = attr_float(n, "quant_zero", 0.0f);
    BlobQuantizeParams qp = {.rows = 1, .k = k, .rounding = rounding_of_attr(attr_str(n, "rounding", "ROUND")),
                             .dequant = attr_int(n, "dequant", 0) != 0};
    quant_range(attr_int(n, "quant_bits", 8), attr_int(n, "signed", 1), attr_int(n, "narrow", 0), &qp.lo, &qp.hi);
    uint32_t sb, zb;
    memcpy(&sb, &scale, 4);
    memcpy(&zb, &zero, 4);
    qp.scale_bits = sb;
    qp.zeropt_bits = zb;
    return qp;
}

/* quant (f32 result) and quantize (codes as bit-planes): one quantize step. */
static int lower_quantize(Lower *L, const Node *n) {
    const Value *x = n->in[0], *y = n->out[0];
    for (int i = 1; i < 4; i++)
        if (n->in[i]->kind != VAL_CONST || type_numel(&n->in[i]->type, 1) != 1)
            return unsupported(L, "a quant with per-channel or computed parameters");
    float bw = ((const float *)n->in[3]->data)[0];
    if (!(bw >= 1.0f && bw <= 24.0f) || bw != floorf(bw))
        return unsupported(L, "a quant of more than 24 bits");
    int64_t lo, hi;
    quant_range((int64_t)bw, attr_int(n, "signed", 1), attr_int(n, "narrow", 0), &lo, &hi);
    int64_t rounding = rounding_of_attr(attr_str(n, "rounding", "ROUND"));
    uint32_t sb, zb;
    memcpy(&sb, n->in[1]->data, 4);
    memcpy(&zb, n->in[2]->data, 4);
    int64_t k = item_numel(&x->type);
    BlobQuantizeParams qp = {.rows = 1, .k = k, .lo = lo, .hi = hi, .rounding = rounding,
                             .scale_bits = sb, .zeropt_bits = zb, .dequant = n->op == OP_QUANT};
    if (n->op == OP_QUANTIZE && is_image_codes(y))
        return lower_quantize_image(L, buf_of(L, x), y, qp);
    if (n->op == OP_QUANT) {
        emit_dequant(L, buf_of(L, x), def_buf(L, y), qp);
        return 0;
    }
    int out;
    if (n->op == OP_QUANTIZE && codes_int8(L, y)) { /* a byte a code: the int8 qgemm's A */
        qp.bits = code_planes(y);
        qp.ld = blob_int8_ld(k);
        qp.format = BLOB_CODES_INT8;
        out = new_buf(L, qp.ld);
        L->vbuf[y->id] = out;
        LStep *st = new_step(L, BLOB_STEP_QUANTIZE);
        use_arena(L, st, BLOB_SLOT_IN, buf_of(L, x));
        use_arena(L, st, BLOB_SLOT_OUT, out);
        st->s.quantize = qp;
        float_kernel(L, st, "quantize", qp.ld / 4, /* one thread per 4 bytes */
                     str_printf("bnn_quantize_bytes(item, j, (const float *)in, (unsigned *)out, %lld, %lld, %lld, "
                                "%lld, %lld, %uu, %uu)",
                                (long long)k, (long long)qp.ld, (long long)lo, (long long)hi, (long long)rounding,
                                (unsigned)sb, (unsigned)zb));
        return 0;
    }
    if (codes_only_for_qdense(L, y))
        return -1;
    qp.bits = code_planes(y);
    qp.ld = (k + 255) / 256 * 8;
    out = new_buf(L, qp.bits * qp.ld * 4);
    L->vbuf[y->id] = out;
    LStep *st = new_step(L, BLOB_STEP_QUANTIZE);
    use_arena(L, st, BLOB_SLOT_IN, buf_of(L, x));
    use_arena(L, st, BLOB_SLOT_OUT, out);
    st->s.quantize = qp;
    /* The GPU: a warp per QUANTIZE_WORDS words of the code planes (ld is a multiple of 8). */
    float_kernel(L, st, "quantize", qp.ld * 32 / QUANTIZE_WORDS,
                 str_printf("bnn_quantize<%d>(item, j, (const float *)in, out, %lld, %lld, %lld, %lld, %lld, %lld, "
                            "%uu, %uu, 0)",
                            QUANTIZE_WORDS,
                            (long long)k, (long long)qp.bits, (long long)qp.ld, (long long)lo, (long long)hi,
                            (long long)rounding, (unsigned)sb, (unsigned)zb));
    return 0;
}

/* The pre-tiled bit-plane GEMM (bgemm_planes_tiled.cu, PT_APLAIN: A read as the plain planes
 * the step's input holds, the weights pre-tiled in x1; the levels those of slot tslot: p0, or
 * x0's folded ones, PT_LFOLD) as batch alternatives of qgemm step si:
 * 128 x 256 tiles, persistent blocks, against bgemm_planes.cu's warp a 16 x 32 tile straight
 * from global memory (docs/codegen.md "Batch alternatives"). On mma.sync (8 warps) where a
 * target is not sm_90a; on wgmma (a producer warpgroup loading A by TMA from a tensor map the
 * runtime encodes, two consumer warpgroups), flagged BLOB_STEP_SM90A, where one is: from the
 * same batch, it replaces the mma.sync one on sm_90a. From the batch that gives
 * QGEMM_TILED_MIN_TILES tiles (half an H100's SMs; at a quarter, 4 layers of 4096 at batch 256
 * ran 1.25-1.4x slower than bgemm_planes.cu on mma.sync, at a whole 2.2x faster: docs/perf.md),
 * and from half of them over 8 plane pairs or more, where bgemm_planes.cu's time grows with
 * the pairs and the batch while a pre-tiled tile's stays that of one wave (MLPs of 4 x 4096 on
 * an H200 at batch 256, docs/perf.md stop 54: w3a3 0.2227 -> 0.1228 ms, w4a4 0.2745 -> 0.1939;
 * w2a4's 0.2427 on bgemm_planes.cu against 0.1257 on the alternative at 512; at a quarter,
 * batch 128, the alternative was 9-31 % slower). */
#define QGEMM_TILED_MIN_TILES 64
#define QGEMM_TILED_MANY_PAIRS 8
#define QGEMM_TILED_MIN_N 128
#define QGEMM_TILED_MIN_K 512
/* The pre-tiled weight image of bgemm_planes_tiled.cu (tile rows BNN_PLANES_TILED_BN, K stages
 * of BNN_PLANES_TILED_KC chunks) of O rows of `planes` planes of k bits, from rows of ld words a
 * plane [planes][O][ld] (bnn_tile_planes), put into the weights. */
static BlobRef put_tiled_planes(Lower *L, const void *wp, int64_t O, int64_t planes, int64_t k, int64_t ld) {
    const int kalign = BNN_PLANES_TILED_KC * 128;
    size_t tbytes = bnn_tiled_planes_bytes((int)O, (int)planes, (int)k, BNN_PLANES_TILED_BN, kalign);
    void *wt = xmalloc(tbytes);
    if (bnn_tile_planes(wp, (int)O, (int)planes, (int)k, (size_t)ld, (size_t)(O * ld), BNN_PLANES_TILED_BN, kalign,
                        wt))
        unreachable("bnn_tile_planes refused a qgemm's weights");
    BlobRef r = put_weights(L, wt, tbytes);
    free(wt);
    return r;
}

static void qgemm_tiled_alt(Lower *L, int si, int tslot, const void *wp, int64_t K, int64_t wb, bool wsigned,
                            bool bipolar, int64_t levels, int64_t yb) {
    /* ntn column tiles; the batch's rows come in tiles of BM (a copy: new steps may move L->steps) */
    const BlobQgemmParams qp = L->steps[si].s.qgemm;
    const int64_t O = qp.n, ld = qp.ld;
    const uint32_t ntn = (uint32_t)((O + BNN_PLANES_TILED_BN - 1) / BNN_PLANES_TILED_BN);
    const uint32_t min_tiles = qp.xb * wb >= QGEMM_TILED_MANY_PAIRS ? QGEMM_TILED_MIN_TILES / 2 : QGEMM_TILED_MIN_TILES;
    const uint32_t from = BNN_PLANES_TILED_BM * ((min_tiles + ntn - 1) / ntn);
    const BlobRef wref = put_tiled_planes(L, wp, O, wb, K, ld); /* the W image of both kernels */
    for (int wgmma = L->tiled_kernel == 2; wgmma <= (int)L->sm90a; wgmma++) { /* tiled_kernel 2: sm_90a alone */
        LStep *alt = new_batch_alt(L, si, from);
        alt->s.slot[BLOB_SLOT_X1] = wref;
        name_kernel(L, alt, wgmma ? "qgemm_wgmma" : "qgemm_tiled");
        alt->k.family = wgmma ? KERNEL_PLANES_WGMMA : KERNEL_PLANES_TILED;
        alt->k.defines = str_printf("#define PT_NAME %s\n#define PT_N %lld\n#define PT_K %lld\n#define PT_XB %lld\n"
                                    "#define PT_WB %lld\n#define PT_WSIGNED %d\n#define PT_WBIPOLAR %d\n"
                                    "#define PT_EPI %lld\n#define PT_L %lld\n#define PT_YB %lld\n#define PT_APLAIN 1\n"
                                    "#define PT_LDA %lld\n#define PT_WGMMA %d\n%s",
                                    alt->k.name, (long long)O, (long long)K, (long long)qp.xb, (long long)wb,
                                    wsigned ? 1 : 0, bipolar ? 1 : 0, (long long)qp.epi, (long long)levels,
                                    (long long)yb, (long long)ld, wgmma,
                                    tslot == BLOB_SLOT_X0 ? "#define PT_LFOLD 1\n" : "");
        if (wgmma) /* the kernel is in the sm_90a CUBIN only */
            alt->s.flags |= BLOB_STEP_SM90A;
        /* persistent blocks, one an output tile at least (ntn column tiles x ceil(batch/128)
         * rows), at most one an SM (BLOB_STEP_PERSISTENT) */
        alt->s.flags |= BLOB_STEP_PERSISTENT;
        BlobGridDim grid[3] = {{ntn, ntn, BNN_PLANES_TILED_BM}, {1, 0, 1}, {1, 0, 1}};
        uint32_t block[3] = {
            wgmma ? BNN_PLANES_WGMMA_THREADS : (uint32_t)(BNN_PLANES_TILED_WM * BNN_PLANES_TILED_WN * 32), 1, 1};
        int smem = bnn_planes_tiled_smem(BNN_PLANES_TILED_BM, BNN_PLANES_TILED_BN, BNN_PLANES_TILED_KC,
                                         BNN_PLANES_TILED_STAGES, wgmma, 1, bipolar, qp.epi == 2 ? (int)levels : 0);
        blob_step_set_kernel(&alt->s, alt->k.name, grid, block, (uint32_t)smem);
        /* (At or wgmma's tensor map of it, Wt, apop: unused with PT_APLAIN, T (x0's folded levels with
         * PT_LFOLD), dir, Y, M) */
        if (wgmma)
            blob_step_add_arg(&alt->s, BLOB_ARG_TMAP_PLANES, BLOB_SLOT_IN,
                              blob_tmap_planes_value((int)qp.xb, BNN_PLANES_TILED_KC,
                                                     BNN_PLANES_TILED_BM, ld));
        else
            blob_step_add_arg(&alt->s, BLOB_ARG_PTR, BLOB_SLOT_IN, 0);
        blob_step_add_arg(&alt->s, BLOB_ARG_PTR, BLOB_SLOT_X1, 0);
        blob_step_add_arg(&alt->s, BLOB_ARG_I64, 0, 0);
        add_levels_args(alt, tslot);
        blob_step_add_arg(&alt->s, BLOB_ARG_PTR, BLOB_SLOT_OUT, 0);
        blob_step_add_arg(&alt->s, BLOB_ARG_BATCH, 0, 1);
    }
    L->nqgemm_tiled++;
}

/* The warps of an int8 kernel's block (qgemm_s8.cu Q8_WARPS): four, each 64 rows (of 64 columns
 * on a tile of 128, of 32 on one of 64), where its epilogue searches at most 15 levels (levels:
 * 0 for int32 out), else eight (of 32 x 32 on 64 x 128 or 128 x 64, of 64 x 32 on 128 x 128).
 * H200, docs/perf.md stop 58: w4a4's ResNet convolutions of more than 64 channels 13-26 % faster
 * on four (a k step's 8 ldmatrix feed 32 MMAs, not 4 feeding 8), of 64 8 %; with 255 levels
 * (w1a8) 1.7x slower, the searches' dependent loads needing the warps that four leave out. */
static int q8_warps(int64_t levels) { return levels <= 15 ? 4 : 8; }

/* The int8 qgemm step si's batch alternative on 128 x 128 tiles (qgemm_s8.cu Q8_BM = Q8_BN = 128,
 * K in stages of 128 bytes three deep on four warps where the row of bytes is a multiple of 128,
 * else of 64 four deep: 110.6 or 80 KiB of dynamic shared memory, two blocks an SM; H200,
 * docs/perf.md stop 59: w4a4 MLP of 2 x 4096 -6.3 % at batch 1024, 8192^3 572 -> 630 TOPS; on
 * eight warps over 255 levels 2x slower, spilling at 224 registers) from the batch that gives
 * QGEMM_INT8_WIDE_TILES of them: a k step's fragments serve more MMAs than the 64 x 128 tile's
 * warps' and a stage's bytes twice the products. H200, docs/perf.md stop 55: 1024 x 4096 x 4096
 * 0.1080 -> 0.0642 ms (256 tiles), 8192^3 2.84 -> 1.93 ms; at 256 x 4096 x 4096 (64 tiles)
 * 0.0298 -> 0.0450, slower. Where the output has fewer than 128 channels, none. The warps as
 * q8_warps says (w4a4 MLP of 2 x 4096: 1-3 % faster on four of 64 x 64, stop 58). */
#define QGEMM_INT8_WIDE_TILES 256
/* qgemm_s8.cu's Q8_SMEM: the ring of stages (bm + bn rows of bk + 16 bytes each) or the bm x
 * (bn + 1) int32 accumulator tile after the loop, the larger. */
static uint32_t q8_smem(int bm, int bn, int bk, int stages) {
    const int ring = stages * (bm + bn) * (bk + 16), tile = bm * (bn + 1) * 4;
    return (uint32_t)(ring > tile ? ring : tile);
}
/* A dense int8 qgemm step's #defines (qp: its parameters) under name, then its tile's (tile). */
static char *q8_dense_defines(const char *name, const BlobQgemmParams *qp, const char *tile) {
    return str_printf("#define Q8_NAME %s\n#define Q8_N %lld\n#define Q8_LD %lld\n#define Q8_XB %lld\n"
                      "#define Q8_EPI %lld\n#define Q8_L %lld\n#define Q8_YB %lld\n#define Q8_YFMT %lld\n%s",
                      name, (long long)qp->n, (long long)qp->ld, (long long)qp->xb, (long long)qp->epi,
                      (long long)(qp->epi == 2 ? qp->levels : 1), (long long)(qp->epi == 2 ? qp->yb : 1),
                      (long long)qp->yformat, tile);
}
/* The batch from which qgemm_int8_wide_alt's tile runs a layer of O outputs; 0: none. */
static uint32_t qgemm_int8_wide_from(int64_t O) {
    const uint32_t ntn = (uint32_t)((O + 127) / 128);
    return O < 128 ? 0 : 128 * ((QGEMM_INT8_WIDE_TILES + ntn - 1) / ntn);
}
static void qgemm_int8_wide_alt(Lower *L, int si, int tslot) {
    const LStep *st = &L->steps[si];
    const int64_t O = st->s.qgemm.n;
    const int warps = q8_warps(st->s.qgemm.epi == 2 ? st->s.qgemm.levels : 0);
    const int bk = warps == 4 && st->s.qgemm.ld % 128 == 0 ? 128 : 64, stages = bk == 128 ? 3 : 4;
    const uint32_t ntn = (uint32_t)((O + 127) / 128), from = qgemm_int8_wide_from(O);
    LStep *alt = new_batch_alt(L, si, from); /* (st may dangle from here) */
    name_kernel(L, alt, "qgemm8w");
    alt->k.family = KERNEL_Q8;
    char *tile = str_printf("#define Q8_BM 128\n#define Q8_BN 128\n#define Q8_DYN 1\n#define Q8_BK %d\n"
                            "#define Q8_STAGES %d\n#define Q8_WARPS %d\n#define Q8_WTN %d\n",
                            bk, stages, warps, warps == 4 ? 64 : 32);
    alt->k.defines = q8_dense_defines(alt->k.name, &L->steps[si].s.qgemm, tile);
    free(tile);
    BlobGridDim grid[3] = {{ntn, 0, 1}, {0, 1, 128}, {1, 0, 1}};
    uint32_t block[3] = {32u * (uint32_t)warps, 1, 1};
    blob_step_set_kernel(&alt->s, alt->k.name, grid, block, q8_smem(128, 128, bk, stages)); /* 80 or 110.6 KiB */
    add_planes_args(alt, 1, tslot);
    L->nqgemm_int8_wide++;
}

/* The int8 qgemm step si's alternative on wgmma (sm_90a, flagged BLOB_STEP_SM90A):
 * bgemm_planes_tiled.cu's wgmma block with PT_S8 (m64n256k32 .u8.s8 from the shared-memory
 * images of its b1 form: 128 x 256 tiles, persistent blocks, a producer warpgroup loading A by
 * TMA from the step's input bytes and the weights pre-tiled in x1 by bulk copies, two consumer
 * warpgroups), the epilogue qgemm_s8.cu's (the folded levels' binary search; codes as planes or
 * bytes). H200, docs/perf.md stop 60, int32 out, against the 128 x 128 mma.sync tile: 1024 x
 * 4096 x 4096 0.0636 -> 0.0278 ms, 8192^3 631 -> 1497 TOPS (cuBLAS's int8 GEMM 1503), 256 x
 * 4096 x 4096 (32 tiles) 0.0509 -> 0.0233 (the 64 x 128 tile's 0.0299 at stop 55). So from the
 * batch that gives QGEMM_INT8_WGMMA_TILES tiles, QGEMM_INT8_WGMMA_CODES_TILES where the step
 * writes codes: its epilogue's searches, 64 outputs a thread on 2 rows of a tile, made the w8a8
 * and w4a4 MLPs of 2 x 4096 slower at batch 256 and 512 than the mma.sync tiles (w8a8 0.072 ->
 * 0.147 ms at 256, 0.116 -> 0.152 at 512, 0.190 -> 0.164 at 1024; docs/perf.md stop 61). Where
 * that is below the 128 x 128 alternative's first batch, twice: before it, and from its batch on
 * after it (the GPU runs the last alternative a batch reaches; wgmma_from and wide_from say where
 * each starts). w8: the weight bytes [O][ld]. */
#define QGEMM_INT8_WGMMA_TILES 32
#define QGEMM_INT8_WGMMA_CODES_TILES 128
static void qgemm_int8_wgmma_alt(Lower *L, int si, int tslot, const void *w8, uint32_t from, BlobRef *wref) {
    const BlobQgemmParams qp = L->steps[si].s.qgemm; /* (a copy: new steps may move L->steps) */
    const int64_t O = qp.n, ld = qp.ld;
    const uint32_t ntn = (uint32_t)((O + BNN_PLANES_TILED_BN - 1) / BNN_PLANES_TILED_BN);
    if (wref->space == BLOB_SPACE_NONE) /* the weights pre-tiled as one plane of 8 ld bits a row */
        *wref = put_tiled_planes(L, w8, O, 1, 8 * ld, ld / 4);
    LStep *alt = new_batch_alt(L, si, from);
    alt->s.slot[BLOB_SLOT_X1] = *wref;
    name_kernel(L, alt, "qgemm8wg");
    alt->k.family = KERNEL_PLANES_WGMMA;
    alt->k.defines = str_printf("#define PT_NAME %s\n#define PT_S8 1\n#define PT_N %lld\n#define PT_K %lld\n"
                                "#define PT_XB 1\n#define PT_WB 1\n#define PT_WSIGNED 0\n#define PT_EPI %lld\n"
                                "#define PT_L %lld\n#define PT_YB %lld\n#define PT_YFMT %d\n#define PT_APLAIN 1\n"
                                "#define PT_LDA %lld\n#define PT_WGMMA 1\n",
                                alt->k.name, (long long)O, (long long)(8 * ld), (long long)qp.epi,
                                (long long)(qp.epi == 2 ? qp.levels : 1), (long long)(qp.epi == 2 ? qp.yb : 1),
                                qp.epi == 2 && qp.yformat == BLOB_CODES_INT8 ? 1 : 0, (long long)(ld / 4));
    alt->s.flags |= BLOB_STEP_SM90A | BLOB_STEP_PERSISTENT; /* at most a block an SM */
    BlobGridDim grid[3] = {{ntn, ntn, BNN_PLANES_TILED_BM}, {1, 0, 1}, {1, 0, 1}};
    uint32_t block[3] = {BNN_PLANES_WGMMA_THREADS, 1, 1};
    int smem = bnn_planes_tiled_smem(BNN_PLANES_TILED_BM, BNN_PLANES_TILED_BN, BNN_PLANES_TILED_KC,
                                     BNN_PLANES_TILED_STAGES, 1, 1, 0, 0);
    blob_step_set_kernel(&alt->s, alt->k.name, grid, block, (uint32_t)smem);
    /* (the tensor map of A, Wt, apop: none, T: the folded levels, dir, Y, M) */
    blob_step_add_arg(&alt->s, BLOB_ARG_TMAP_PLANES, BLOB_SLOT_IN,
                      blob_tmap_planes_value(1, BNN_PLANES_TILED_KC, BNN_PLANES_TILED_BM, ld / 4));
    blob_step_add_arg(&alt->s, BLOB_ARG_PTR, BLOB_SLOT_X1, 0);
    blob_step_add_arg(&alt->s, BLOB_ARG_I64, 0, 0);
    add_levels_args(alt, tslot);
    blob_step_add_arg(&alt->s, BLOB_ARG_PTR, BLOB_SLOT_OUT, 0);
    blob_step_add_arg(&alt->s, BLOB_ARG_BATCH, 0, 1);
}

/* The batch alternatives of the int8 qgemm step si (w8: its weight bytes): the 128 x 128
 * mma.sync tile from its batch, and on sm_90a the wgmma form from its own (for 128 outputs or
 * more, as the pre-tiled bit-plane GEMM), in the order the GPU's choice needs
 * (qgemm_int8_wgmma_alt). */
static void qgemm_int8_alts(Lower *L, int si, int tslot, const void *w8) {
    const int64_t O = L->steps[si].s.qgemm.n;
    const uint32_t ntn = (uint32_t)((O + BNN_PLANES_TILED_BN - 1) / BNN_PLANES_TILED_BN);
    const uint32_t tiles = L->steps[si].s.qgemm.epi == 1 ? QGEMM_INT8_WGMMA_TILES : QGEMM_INT8_WGMMA_CODES_TILES;
    const uint32_t wide_from = qgemm_int8_wide_from(O), wgmma_from = BNN_PLANES_TILED_BM * ((tiles + ntn - 1) / ntn);
    const bool wgmma = L->sm90a && O >= QGEMM_TILED_MIN_N; /* (a narrower layer would fill a tile's sliver) */
    BlobRef wref = {0};
    if (wgmma && wide_from && wgmma_from < wide_from)
        qgemm_int8_wgmma_alt(L, si, tslot, w8, wgmma_from, &wref);
    if (wide_from)
        qgemm_int8_wide_alt(L, si, tslot);
    if (wgmma) {
        qgemm_int8_wgmma_alt(L, si, tslot, w8, wgmma_from > wide_from ? wgmma_from : wide_from, &wref);
        L->nqgemm_int8_wgmma++;
    }
}

/* qdense: one qgemm step; its i32 result, its codes as bit-planes or int8 bytes (with
 * thresholds: the format the next layers read, codes_int8), or, when a one-level threshold to
 * packed bits is its only reader, those bits directly (one plane). The step runs on bit-planes
 * (bgemm_planes.cu) or on int8 codes (qgemm_s8.cu) as its input is stored. */
static int lower_qdense(Lower *L, const Node *n) {
    const Value *x = n->in[0], *w = n->in[1], *y = n->out[0];
    int64_t xb = image_source(x) ? image_code_planes(image_source(x)) : code_planes(x);
    if (!xb || w->kind != VAL_CONST)
        return unsupported(L, "a qdense over codes that are not a quantize, a thresholded "
                              "qdense or a flatten of a thresholded qconv2d, or over computed weights");
    bool int8 = !image_source(x) && codes_int8(L, x);
    if (L->lowbit == LOWBIT_INT8 && !int8)
        return fail_node(L, "--lowbit=int8: this layer cannot run on int8 codes (%s); use --lowbit=auto",
                         image_source(x) ? "it reads the flatten of a convolution's image planes, which "
                                           "only the bit-plane kernel reads"
                         : xb > 8        ? "its codes have more than 8 bits"
                                         : "its input codes are read elsewhere too: a graph output, or a layer with computed "
                                           "weights");
    if (L->lowbit == LOWBIT_PLANES && int8)
        unreachable("--lowbit=planes chose int8 codes");
    int64_t K = x->type.dim[1], O = w->type.dim[0], ld = int8 ? blob_int8_ld(K) : (K + 255) / 256 * 8;
    if (image_source(x)) /* a flatten of image planes: each plane is one row of pixels x ldw words */
        ld = blob_image_plane_words(spatial_of(&image_source(x)->type), image_ldw(image_source(x)->type.dim[1]));
    int64_t ldy = (O + 255) / 256 * 8;
    const int8_t *u = w->data;
    bool wsigned, bipolar;
    int64_t wb = weight_planes(u, O * K, &wsigned, &bipolar);
    const Value *img = image_source(x);
    size_t wbytes = int8 ? (size_t)(O * ld) : (size_t)(wb * O * ld) * 4;
    void *wp = xcalloc(wbytes, 1);
    if (int8) /* a byte a weight code, [O][ld], zero past K */
        for (int64_t o = 0; o < O; o++)
            memcpy((int8_t *)wp + o * ld, u + o * K, (size_t)K);
    for (int64_t q = 0; !int8 && q < wb; q++)
        for (int64_t o = 0; o < O; o++)
            for (int64_t k = 0; k < K; k++) {
                int64_t at = img ? flat_image_bit(img, k) : k;
                ((uint32_t *)wp)[(q * O + o) * ld + at / 32] |= (uint32_t)weight_bit(u[o * K + k], q, bipolar)
                                                                << (at % 32);
            }
    BlobQgemmParams qp = {.rows = 1, .n = O, .ld = ld, .xb = xb, .wb = wb, .wsigned = wsigned,
                          .bipolar = bipolar, .epi = 1, .format = int8 ? BLOB_CODES_INT8 : BLOB_CODES_PLANES};
    CodeEpilogue ce;
    if (choose_code_epilogue(L, n, false, ldy, &ce)) {
        free(wp);
        return -1;
    }
    if (ce.t) {
        qp.epi = 2;
        qp.levels = ce.levels;
        qp.yb = ce.yb;
        qp.yformat = codes_int8(L, ce.out) ? BLOB_CODES_INT8 : BLOB_CODES_PLANES;
    }
    int out;
    if (qp.epi == 2) {
        out = new_buf(L, qp.yformat == BLOB_CODES_INT8 ? blob_int8_ld(O) : qp.yb * ldy * 4);
        L->vbuf[ce.out->id] = out;
    } else {
        out = def_buf(L, y);
    }
    LStep *st = new_step(L, BLOB_STEP_QGEMM);
    use_arena(L, st, BLOB_SLOT_IN, buf_of(L, x));
    use_arena(L, st, BLOB_SLOT_OUT, out);
    st->s.slot[BLOB_SLOT_W] = put_weights(L, wp, wbytes);
    put_code_thresholds(L, st, &ce, O);
    /* the GPU kernels' levels, folded and sorted, and their estimates: every int8 step's, and a
     * bit-plane step's past 15 levels (PLANES_FOLD_LEVELS) */
    const bool lfold = ce.t && L->min_sm && (int8 || ce.levels >= PLANES_FOLD_LEVELS);
    if (lfold)
        st->s.slot[BLOB_SLOT_X0] = put_q8_dense_levels(L, &ce, O);
    st->s.qgemm = qp;
    int64_t levels = qp.epi == 2 ? qp.levels : 1, yb = qp.epi == 2 ? qp.yb : 1;
    /* The GPU, the batch items as the kernel's M rows (one row per item); arguments (A, W, M, T,
     * dir, Y), T and dir null for the i32 result. int8: qgemm_s8.cu, 64 x 128 tiles of 256
     * threads (K stages of 128 bytes where ld allows), grid (ceil(N/128), ceil(batch/64)) (and
     * 128 x 128 ones from a large batch: qgemm_int8_wide_alt). Bit-planes: bgemm_planes.cu, one
     * warp per 16 x 32 tile, grid (ceil(N/32), ceil(batch/16)). */
    name_kernel(L, st, "qgemm");
    if (int8) {
        L->nqgemm_int8++;
        st->k.family = KERNEL_Q8;
        /* K in stages of 128 bytes where the row of bytes is a multiple of 128: 83 KiB of dynamic
         * shared memory (3 stages of 192 rows of 144 bytes). H200, docs/perf.md stop 59: the w4a4
         * MLP of 2 x 4096 -17.9 % at batch 256, -10.1 % at 512, w8a8 -15.8 / -7.0 %. */
        const bool bk128 = ld % 128 == 0;
        st->k.defines = q8_dense_defines(st->k.name, &qp, bk128 ? "#define Q8_BK 128\n#define Q8_DYN 1\n" : "");
        BlobGridDim grid[3] = {{(uint32_t)((O + 127) / 128), 0, 1}, {0, 1, 64}, {1, 0, 1}};
        uint32_t block[3] = {256, 1, 1};
        blob_step_set_kernel(&st->s, st->k.name, grid, block, bk128 ? q8_smem(64, 128, 128, 3) : 0);
    } else {
        L->nqgemm_planes++;
        st->k.family = KERNEL_PLANES;
        st->k.defines = str_printf("#define PL_NAME %s\n#define PL_N %lld\n#define PL_K %lld\n#define PL_XB %lld\n"
                                   "#define PL_WB %lld\n#define PL_WSIGNED %d\n#define PL_WBIPOLAR %d\n"
                                   "#define PL_EPI %lld\n#define PL_L %lld\n#define PL_YB %lld\n%s%s",
                                   st->k.name, (long long)O, (long long)(img ? ld * 32 : K), (long long)xb,
                                   (long long)wb, wsigned ? 1 : 0, bipolar ? 1 : 0, (long long)qp.epi,
                                   (long long)levels, (long long)yb,
                                   qp.yformat == BLOB_CODES_INT8 ? "#define PL_YFMT 1\n" : "",
                                   lfold ? "#define PL_LFOLD 1\n" : "");
        BlobGridDim grid[3] = {{(uint32_t)((O + 31) / 32), 0, 1}, {0, 1, 16}, {1, 0, 1}};
        uint32_t block[3] = {32, 1, 1};
        blob_step_set_kernel(&st->s, st->k.name, grid, block, 0);
    }
    const int tslot = st->s.slot[BLOB_SLOT_X0].space != BLOB_SPACE_NONE ? BLOB_SLOT_X0 : BLOB_SLOT_P0;
    add_planes_args(st, 1, tslot);
    const int si = (int)(st - L->steps); /* the alternatives' new steps may move L->steps */
    if (int8 && L->min_sm >= 80 && tunable_alts(L, n, qdense_tunable(L, n) ? 2 : 1))
        qgemm_int8_alts(L, si, tslot, wp);
    if (!int8 && !img && qp.yformat != BLOB_CODES_INT8 && tunable_alts(L, n, qdense_tunable(L, n) ? 2 : 1) &&
        L->min_sm >= 80 && O >= QGEMM_TILED_MIN_N && K >= QGEMM_TILED_MIN_K)
        qgemm_tiled_alt(L, si, tslot, wp, K, wb, wsigned, bipolar, levels, yb);
    st = &L->steps[si];
    free(wp);
    if (qdense_tunable(L, n)) { /* candidate 0 the cost model's kind, 1 the other */
        static const char *const kinds[2] = {"bit-planes (bgemm_planes.cu)", INT8_CANDIDATE};
        int pick = tuned_pick(L, n, 2);
        bool model = int8 != (pick == 1);
        char *names[2] = {xstrdup(kinds[model]), xstrdup(kinds[!model])};
        add_tunable(L, st, 2, names,
                    str_printf("qgemm: N=%lld K=%lld XB=%lld WB=%lld WSIGNED=%d WBIPOLAR=%d EPI=%lld L=%lld YB=%lld",
                               (long long)O, (long long)K, (long long)xb, (long long)wb, wsigned ? 1 : 0,
                               bipolar ? 1 : 0, (long long)qp.epi, (long long)levels, (long long)yb),
                    pick);
    }
    return 0;
}

/* The float chain of a qconv2d_chain as qconv epi 3 (docs/blob-format.md): the stages in p0, the
 * descriptor in p1, the residual in in2; the f32 result where it is read (or none is), the codes
 * as image planes where a qconv2d reads them. Sets qp's yb and ldy; the outputs' buffers in
 * *f32_buf and *codes_buf (-1: not written); the kernel's #defines appended to defs. */
static int lower_qconv_chain(Lower *L, const Node *n, LStep *st, BlobQconvParams *qp, int *f32_buf,
                             int *codes_buf, Buf *defs, int32_t d[BLOB_QCHAIN_WORDS]) {
    const Value *y = n->out[0], *codes = n->out[1], *chain = n->in[2];
    int64_t O = qp->o, S = chain->type.dim[0], div[CHAIN_MAX_STAGES] = {0}, relu[CHAIN_MAX_STAGES] = {0};
    attr_ints(n, "div", div, (int)S, 0, NULL);
    attr_ints(n, "relu", relu, (int)S, 0, NULL);
    bool quant = get_attr(n, "quant_bits") != NULL;
    /* (a layer that reads its residual as codes writes its codes also where only a global
     * average pool of its float reads them: gap_reads_codes) */
    bool want_codes = quant && (count_uses(L->g, codes) > 0 || is_output(L->g, codes) || L->rcode[L->node_index]);
    if (want_codes && image_codes_readers_ok(L, codes))
        return -1;
    bool want_f32 = !want_codes || count_uses(L->g, y) > 0 || is_output(L->g, y);
    memset(d, 0, BLOB_QCHAIN_WORDS * sizeof *d);
    d[BLOB_QCHAIN_STAGES] = (int32_t)S;
    for (int64_t k = 0; k < S; k++) {
        d[BLOB_QCHAIN_DIV] |= (int32_t)(div[k] != 0) << k;
        d[BLOB_QCHAIN_RELU] |= (int32_t)(relu[k] != 0) << k;
    }
    d[BLOB_QCHAIN_RESIDUAL] = n->nin == 4 ? (attr_int(n, "residual_first", 0) ? 2 : 1) : 0;
    d[BLOB_QCHAIN_OUT_RELU] = attr_int(n, "out_relu", 0) != 0;
    d[BLOB_QCHAIN_F32] = !want_f32 ? 0 : attr_int(n, "dequant", 0) ? 2 : 1;
    if (quant) {
        BlobQuantizeParams q = chain_quantizer(n, 0);
        d[BLOB_QCHAIN_QUANT] = 1;
        d[BLOB_QCHAIN_LO] = (int32_t)q.lo;
        d[BLOB_QCHAIN_HI] = (int32_t)q.hi;
        d[BLOB_QCHAIN_ROUNDING] = (int32_t)q.rounding;
        d[BLOB_QCHAIN_SCALE] = (int32_t)(uint32_t)q.scale_bits;
        d[BLOB_QCHAIN_ZEROPT] = (int32_t)(uint32_t)q.zeropt_bits;
    }
    if (want_codes) {
        qp->yb = code_planes(codes);
        qp->ldy = image_ldw(O);
    }
    st->s.slot[BLOB_SLOT_P0] = put_weights(L, chain->data, (size_t)(2 * S * O) * 4);
    st->s.slot[BLOB_SLOT_P1] = put_weights(L, d, BLOB_QCHAIN_WORDS * sizeof *d);
    if (n->nin == 4)
        use_arena(L, st, BLOB_SLOT_IN2, buf_of(L, n->in[3]));
    *f32_buf = want_f32 ? def_buf(L, y) : -1;
    *codes_buf = -1;
    if (want_codes) {
        *codes_buf = new_buf(L, qp->yb * blob_image_plane_words(qp->oh * qp->ow, qp->ldy) * 4);
        L->vbuf[codes->id] = *codes_buf;
    }
    /* The kernel's f32 form also where nothing reads the value (its Yf is null then): layers that
     * differ in that only share one kernel, which saves NVRTC a fifth of the w1a2 ResNet-18's work */
    int gpu_f32 = d[BLOB_QCHAIN_F32] ? d[BLOB_QCHAIN_F32] : attr_int(n, "dequant", 0) ? 2 : 1;
    buf_printf(defs, "#define QC_NST %lld\n#define QC_DIV %d\n#define QC_RELU %d\n#define QC_RES %d\n"
                     "#define QC_ORELU %d\n#define QC_F32 %d\n#define QC_QLO %d\n#define QC_QHI %d\n"
                     "#define QC_ROUND %d\n#define QC_QSCALE 0x%08x\n#define QC_QZERO 0x%08x\n",
               (long long)S, d[BLOB_QCHAIN_DIV], d[BLOB_QCHAIN_RELU], d[BLOB_QCHAIN_RESIDUAL],
               d[BLOB_QCHAIN_OUT_RELU], gpu_f32, d[BLOB_QCHAIN_LO], d[BLOB_QCHAIN_HI],
               d[BLOB_QCHAIN_ROUNDING], (unsigned)d[BLOB_QCHAIN_SCALE], (unsigned)d[BLOB_QCHAIN_ZEROPT]);
    return 0;
}

/* A qconv step (named already) as the halo kernel in the tile hc: its defines (QC_NAME, body: the
 * layer's, then the tile's) and its launch. */
static void set_qconv_halo(LStep *st, const char *body, const BnnHaloCfg *hc, int64_t O) {
    free(st->k.defines);
    st->k.defines = str_printf("#define QC_NAME %s\n%s#define QC_HALO 1\n#define QC_TH %d\n#define QC_TW %d\n"
                               "#define QC_WM %d\n#define QC_WN %d\n#define QC_MINB %d\n%s",
                               st->k.name, body, hc->th, hc->tw, hc->wm, hc->wn, hc->minb,
                               hc->lev ? "#define QC_LSTAGE 1\n" : "");
    set_halo_launch(st, hc, O);
}

/* What a qconv kernel's arguments depend on: (X, W, rows, T, dir, Y), or for the chain (X, W,
 * rows, EP, R, Yf, Y), a null for R without a residual, for Yf or Y where that output is not
 * written (Y in the f32 output's slot when it is the only one), and for Yf where the step writes
 * the f32 for the CPU path only (gpu_f32 false: no GPU kernel reads it, plan_rcode); or with
 * rcode (lower_qconv_rcode's kernel) (X, W, rows, T, R, RN, Y, YN), RN and YN null where the
 * step has no x0 / x1. */
typedef struct QconvArgs {
    int64_t rows; /* GEMM rows a batch item: its output pixels */
    bool chain, res, f32, codes, gpu_f32, rcode;
    bool lfold; /* T the levels folded and sorted in x0 (QC_LFOLD), not p0's */
} QconvArgs;

static void add_qconv_args(LStep *st, const QconvArgs *a) {
    if (a->rcode) {
        static const int ptr[8] = {BLOB_SLOT_IN, BLOB_SLOT_W, -1, BLOB_SLOT_P0, BLOB_SLOT_IN2, BLOB_SLOT_X0,
                                   BLOB_SLOT_OUT, BLOB_SLOT_X1};
        for (int i = 0; i < 8; i++)
            if (ptr[i] < 0)
                blob_step_add_arg(&st->s, BLOB_ARG_BATCH, 0, a->rows);
            else if (st->s.slot[ptr[i]].space != BLOB_SPACE_NONE)
                blob_step_add_arg(&st->s, BLOB_ARG_PTR, (uint32_t)ptr[i], 0);
            else
                blob_step_add_arg(&st->s, BLOB_ARG_I64, 0, 0);
        return;
    }
    if (!a->chain) {
        add_planes_args(st, a->rows, a->lfold ? BLOB_SLOT_X0 : BLOB_SLOT_P0);
        return;
    }
    blob_step_add_arg(&st->s, BLOB_ARG_PTR, BLOB_SLOT_IN, 0);
    blob_step_add_arg(&st->s, BLOB_ARG_PTR, BLOB_SLOT_W, 0);
    blob_step_add_arg(&st->s, BLOB_ARG_BATCH, 0, a->rows);
    blob_step_add_arg(&st->s, BLOB_ARG_PTR, BLOB_SLOT_P0, 0);
    int slots[3] = {a->res ? BLOB_SLOT_IN2 : -1, a->f32 && a->gpu_f32 ? BLOB_SLOT_OUT : -1,
                    !a->codes ? -1 : a->f32 ? BLOB_SLOT_X1 : BLOB_SLOT_OUT};
    for (int i = 0; i < 3; i++)
        if (slots[i] >= 0)
            blob_step_add_arg(&st->s, BLOB_ARG_PTR, (uint32_t)slots[i], 0);
        else
            blob_step_add_arg(&st->s, BLOB_ARG_I64, 0, 0);
}

/* The batch alternatives of qconv step si (bnn_qhalo_batch_alts' alts, nalt of them): each the
 * halo kernel on its tile, where that tile is not the candidate before it (at first the rule's,
 * candidate 0), with the layer's defines body and the step's arguments qa. Noted for the
 * tuner (note_tunable_alt) always, emitted where emit is set (tunable_alts). */
static void add_qconv_batch_alts(Lower *L, int si, const char *body, const HaloLayer *hl, int64_t O,
                                 const BnnQhaloAlt *alts, int nalt, const QconvArgs *qa, bool emit) {
    for (int i = 0, prev = 0; i < nalt; i++) {
        BnnHaloCfg ha;
        int v = alts[i].variant;
        bool fits = v != prev && qconv_halo_variant(v, hl, &ha) == 0;
        if (!fits && v != prev && alts[i].fallback > 0) { /* its shared memory does not fit */
            v = alts[i].fallback;
            fits = v != prev && qconv_halo_variant(v, hl, &ha) == 0;
        }
        if (!fits)
            continue;
        prev = v;
        note_tunable_alt(L, si, (uint32_t)alts[i].from, &ha);
        if (!emit)
            continue;
        LStep *alt = new_batch_alt(L, si, (uint32_t)alts[i].from);
        name_kernel(L, alt, "qconv");
        alt->k.family = KERNEL_QCONV;
        set_qconv_halo(alt, body, &ha, O);
        add_qconv_args(alt, qa);
    }
}

/* A qconv kernel's defines for the layer qp (kernel name, geometry, planes, epilogue), then tail. */
static char *qconv_defines(const char *name, const BlobQconvParams *qp, const char *tail) {
    const bool planes = qp->epi == 2 || qp->yb > 0, chain = qp->epi == BLOB_QCONV_EPI_CHAIN;
    return str_printf(
        "#define QC_NAME %s\n#define QC_C %lld\n#define QC_H %lld\n#define QC_W %lld\n#define QC_O %lld\n"
        "#define QC_KH %lld\n#define QC_KW %lld\n#define QC_SH %lld\n#define QC_SW %lld\n#define QC_PT %lld\n"
        "#define QC_PL %lld\n#define QC_DH %lld\n#define QC_DW %lld\n#define QC_OH %lld\n#define QC_OW %lld\n"
        "#define QC_XB %lld\n#define QC_WB %lld\n#define QC_WSIGNED %d\n#define QC_WBIPOLAR %d\n"
        "#define QC_PAD_CODE %lld\n#define QC_EPI %lld\n#define QC_L %lld\n#define QC_YB %lld\n"
        "#define QC_LDW %lld\n#define QC_LDY %lld\n%s",
        name, (long long)qp->c, (long long)qp->h, (long long)qp->w, (long long)qp->o, (long long)qp->kh,
        (long long)qp->kw, (long long)qp->stride_h, (long long)qp->stride_w, (long long)qp->pad_top,
        (long long)qp->pad_left, (long long)qp->dil_h, (long long)qp->dil_w, (long long)qp->oh, (long long)qp->ow,
        (long long)qp->xb, (long long)qp->wb, qp->wsigned ? 1 : 0, qp->bipolar ? 1 : 0, (long long)qp->pad_code,
        (long long)qp->epi, (long long)(qp->epi == 2 ? qp->levels : 1),
        (long long)(planes ? qp->yb : chain ? 0 : 1), (long long)qp->ldw, (long long)(planes ? qp->ldy : 1),
        tail ? tail : "");
}

/* The GPU's step of qconv2d_chain n that reads its residual as codes (L->rcode; its chain step,
 * index cs, is CPU-only): the halo kernel with thresholds by a residual code (qconv.cu QC_RCODE):
 * in = the input codes, in2 = the residual's codes, out = the codes (the chain step's buffer), w
 * = its weights, p0 = rcode_levels' table, x0 = the residual's f32 buffer holding its NaN flags
 * (where it may be NaN), x1 = this layer's f32 buffer for its own (where it may be NaN and is
 * read as codes); arguments (X, W, rows, T, R, RN, Y, YN). With the threshold layers' batch
 * alternatives. */
static int lower_qconv_rcode(Lower *L, const Node *n, int cs, const BlobQconvParams *cp, const int32_t *d,
                             int codes_buf, int f32_buf) {
    const Value *r = n->in[3];
    const Node *src = rcode_source(L, r);
    const BlobQuantizeParams rq = chain_quantizer(src, 0);
    const int64_t O = cp->o, rxb = code_planes(src->out[1]);
    const bool rnan = value_may_be_nan(L, r), ynan = gpu_writes_nan_flags(L, n->out[0]);
    int32_t *t = rcode_levels(n, d, n->in[2]->data, O, &rq);
    if (!t)
        return fail_node(L, "internal: a chain that reads its residual as codes is not monotone");
    BlobRef tref = put_weights(L, t, (size_t)(O * 8) * 4);
    free(t);
    BlobQconvParams qp = *cp;
    qp.epi = 2;
    qp.levels = d[BLOB_QCHAIN_HI] - d[BLOB_QCHAIN_LO];
    LStep *st = new_step(L, BLOB_STEP_KERNEL);
    const LStep *c = &L->steps[cs];
    use_arena(L, st, BLOB_SLOT_IN, c->buf[BLOB_SLOT_IN]);
    use_arena(L, st, BLOB_SLOT_IN2, value_buf(L, src->out[1]));
    use_arena(L, st, BLOB_SLOT_OUT, codes_buf);
    st->s.slot[BLOB_SLOT_W] = c->s.slot[BLOB_SLOT_W];
    st->s.slot[BLOB_SLOT_P0] = tref;
    if (rnan)
        use_arena(L, st, BLOB_SLOT_X0, value_buf(L, r));
    if (ynan)
        use_arena(L, st, BLOB_SLOT_X1, f32_buf);
    name_kernel(L, st, "qconv");
    st->k.family = KERNEL_QCONV;
    char *tail = str_printf("#define QC_RCODE %lld\n#define QC_RNAN %d\n#define QC_YNAN %d\n", (long long)rxb,
                            rnan ? 1 : 0, ynan ? 1 : 0);
    st->k.defines = qconv_defines(st->k.name, &qp, tail);
    free(tail);
    HaloLayer hl = qconv_halo_layer(n, (int)rxb + rnan);
    BnnHaloCfg hc;
    int ncand = 0;
    if (choose_halo(L, st, BNN_QHALO_VARIANTS, qconv_halo_variant, &hl, &hc, &ncand) != 0)
        return fail_node(L, "internal: no halo tile for a qconv that reads its residual as codes");
    char *body = xstrdup(strchr(st->k.defines, '\n') + 1);
    set_qconv_halo(st, body, &hc, O);
    L->nrcode++;
    const QconvArgs qa = {.rows = qp.oh * qp.ow, .rcode = true};
    add_qconv_args(st, &qa);
    BnnQhaloAlt alts[2] = {{0, 0, 0}, {0, 0, 0}};
    const int nalt = bnn_qhalo_batch_alts(hl.c, hl.oh, hl.ow, hl.o, hl.kh, hl.kw, hl.sh, hl.sw, 0, 0, 0, alts);
    add_qconv_batch_alts(L, (int)(st - L->steps), body, &hl, O, alts, nalt, &qa, tunable_alts(L, n, ncand));
    free(body);
    return 0;
}

/* A qconv2d_chain whose residual is the value of a 1x1 downsample D over the block input (a
 * qconv2d_chain of its own: no residual, no codes read, one bipolar weight plane, no padding, its
 * f32 value read by this layer only) computes D's dot and chain in its own halo kernel (qconv.cu
 * QC_RESD, the same float operations): D's steps leave the GPU, and with them its f32 value's
 * write and read (the w1a2 ResNet-18's three downsampling blocks: 103 MB a batch of 256 into
 * 28x28). The CPU path runs both layers as before. */
typedef struct QresdFusion {
    const Node *dnode;               /* D */
    int dstep;                       /* D's step */
    int x1;                          /* D's input: its arena buffer */
    BlobQconvParams dp;              /* D's parameters */
    int32_t desc[BLOB_QCHAIN_WORDS]; /* D's chain descriptor */
    BlobRef dw, dep;                 /* D's weights [1][O][krow] and chain constants [stages][2][O] */
} QresdFusion;

/* Whether qconv2d_chain n (parameters qp) takes its residual's 1x1 convolution into its GPU
 * kernel (QresdFusion above); f filled when it does. */
static bool qresd_match(Lower *L, const Node *n, const BlobQconvParams *qp, QresdFusion *f) {
    memset(f, 0, sizeof *f);
    const Value *r = n->nin == 4 ? n->in[3] : NULL;
    const Node *d = r ? r->def : NULL;
    if (!L->min_sm || L->qconv_direct || !d || d->op != OP_QCONV2D_CHAIN || d->nin != 3 || only_user(L->g, r) != n ||
        is_output(L->g, r) || value_buf(L, r) < 0 || L->rcode[L->node_index])
        return false;
    for (int i = 0; i < d->nout; i++)
        if (d->out[i] != r && (count_uses(L->g, d->out[i]) || is_output(L->g, d->out[i])))
            return false;
    int ds = -1;
    for (int s = L->nsteps - 1; s >= 0 && ds < 0; s--)
        if (!(L->steps[s].s.flags & BLOB_STEP_BATCH_ALT) && L->steps[s].buf[BLOB_SLOT_OUT] == value_buf(L, r))
            ds = s;
    if (ds < 0)
        return false;
    const LStep *st = &L->steps[ds];
    const BlobQconvParams *dp = &st->s.qconv;
    if (st->s.kind != BLOB_STEP_QCONV || !st->has_kernel || (st->s.flags & BLOB_STEP_CPU_ONLY) ||
        dp->epi != BLOB_QCONV_EPI_CHAIN || dp->kh != 1 || dp->kw != 1 || dp->pad_top || dp->pad_left ||
        dp->o != qp->o || dp->oh != qp->oh || dp->ow != qp->ow || (dp->oh - 1) * dp->stride_h >= dp->h ||
        (dp->ow - 1) * dp->stride_w >= dp->w || dp->wb != 1 || !dp->bipolar || dp->xb < 1 || dp->xb > 3 ||
        dp->xb * dp->ldw > 33 || /* its rows' words staged in the residual rows (qconv.cu resd_issue) */
        st->buf[BLOB_SLOT_IN] < 0 || st->s.slot[BLOB_SLOT_X1].space != BLOB_SPACE_NONE)
        return false;
    const int32_t *desc = blob_weights_data(L->w, st->s.slot[BLOB_SLOT_P1]);
    if (desc[BLOB_QCHAIN_RESIDUAL] || desc[BLOB_QCHAIN_F32] != 1 || desc[BLOB_QCHAIN_STAGES] < 1 ||
        desc[BLOB_QCHAIN_STAGES] > CHAIN_MAX_STAGES)
        return false;
    BnnHaloCfg hc; /* this layer on a halo kernel (the rule's tile fits) */
    const HaloLayer hl = qconv_halo_layer(n, 33);
    if (qconv_halo_variant(0, &hl, &hc) != 0)
        return false;
    f->dnode = d;
    f->dstep = ds;
    f->x1 = st->buf[BLOB_SLOT_IN];
    f->dp = *dp;
    memcpy(f->desc, desc, sizeof f->desc);
    f->dw = st->s.slot[BLOB_SLOT_W];
    f->dep = st->s.slot[BLOB_SLOT_P0];
    return true;
}

/* The GPU's step of qconv2d_chain n that computes its residual's downsample (qresd_match; its
 * chain step, index cs, and D's step are CPU-only): the halo chain kernel with QC_RESD, the
 * chain step's slots but in2 = D's input and p0 = this chain's constants, D's and D's weight
 * rows; arguments qa (X, W, rows, EP, R, Yf, Y). With the chain layers' batch alternatives. */
static int lower_qconv_resd(Lower *L, const Node *n, int cs, const BlobQconvParams *qp, const QresdFusion *f,
                            const char *chain_defs, const int32_t *desc, const QconvArgs *qa) {
    const int64_t O = qp->o, S = n->in[2]->type.dim[0], S1 = f->desc[BLOB_QCHAIN_STAGES];
    const BlobQconvParams *dp = &f->dp;
    const int64_t krow1 = (dp->ldw + 7) / 8 * 8; /* one tap (qconv.cu QC_RESD_KROW) */
    /* the fast test (qconv.cu QC_RESD_FAST): codes of at most 2 bits and no f32 out, clean chains
     * (monotone in v), and |v| < 2^17, |d| < 2^13 (bounds a first form, which kept an undecided
     * element's pair in one word, needed; resd_rows needs only v, d and the thresholds exact as
     * floats, below 2^24) */
    bool fast = qa->codes && !qa->gpu_f32 && qp->yb <= 2 && desc[BLOB_QCHAIN_HI] - desc[BLOB_QCHAIN_LO] <= 3 &&
                qchain_clean(n) && qchain_clean(f->dnode) && qchain_stage_bound(n) < 1e30 &&
                qchain_stage_bound(f->dnode) < 1e30;
    int64_t a1 = 0;
    for (int64_t o = 0; fast && o < O; o++) {
        const int64_t ad = qchain_acc_bound(f->dnode, o);
        a1 = ad > a1 ? ad : a1;
        fast = qchain_acc_bound(n, o) < (1 << 17) && a1 < (1 << 13);
    }
    const size_t n0 = (size_t)(2 * S * O), n1 = (size_t)(2 * S1 * O), nw = (size_t)(O * krow1);
    const size_t nf = fast ? (size_t)(O * BLOB_QRESD_WORDS) : 0;
    float *ep = xmalloc((n0 + n1 + nw + nf) * 4);
    memcpy(ep, n->in[2]->data, n0 * 4);
    memcpy(ep + n0, blob_weights_data(L->w, f->dep), n1 * 4);
    memcpy(ep + n0 + n1, blob_weights_data(L->w, f->dw), nw * 4);
    if (fast) { /* the fast test's rows (blob_qresd_fast_row) */
        int32_t *scratch = xmalloc((size_t)(3 * (2 * a1 + 1)) * 4);
        for (int64_t o = 0; o < O; o++)
            L->nqresd_rows += blob_qresd_fast_row(desc, n->in[2]->data, O, o, qchain_acc_bound(n, o), f->desc,
                                                  blob_weights_data(L->w, f->dep), a1, ep + n0 + n1 + nw +
                                                  o * BLOB_QRESD_WORDS, scratch) > 0;
        free(scratch);
        L->nqresd_fast++;
        L->nqresd_chans += O;
    }
    const BlobRef epref = put_weights(L, ep, (n0 + n1 + nw + nf) * 4);
    free(ep);
    make_cpu_only(&L->steps[f->dstep]);
    drop_tunable(L, f->dstep);
    LStep *st = new_step(L, BLOB_STEP_KERNEL);
    const LStep *c = &L->steps[cs];
    static const int copied[4] = {BLOB_SLOT_IN, BLOB_SLOT_W, BLOB_SLOT_OUT, BLOB_SLOT_X1};
    for (int i = 0; i < 4; i++) {
        st->s.slot[copied[i]] = c->s.slot[copied[i]];
        st->buf[copied[i]] = c->buf[copied[i]];
    }
    use_arena(L, st, BLOB_SLOT_IN2, f->x1);
    st->s.slot[BLOB_SLOT_P0] = epref;
    name_kernel(L, st, "qconv");
    st->k.family = KERNEL_QCONV;
    char *tail = str_printf("%s#define QC_RESD 1\n#define QC_RESD_C %lld\n#define QC_RESD_H %lld\n"
                            "#define QC_RESD_W %lld\n#define QC_RESD_SH %lld\n#define QC_RESD_SW %lld\n"
                            "#define QC_RESD_XB %lld\n#define QC_RESD_LDW %lld\n#define QC_RESD_NST %lld\n"
                            "#define QC_RESD_DIV %d\n#define QC_RESD_RELU %d\n#define QC_RESD_ORELU %d\n"
                            "#define QC_RESD_FAST %d\n",
                            chain_defs, (long long)dp->c, (long long)dp->h, (long long)dp->w,
                            (long long)dp->stride_h, (long long)dp->stride_w, (long long)dp->xb, (long long)dp->ldw,
                            (long long)S1, f->desc[BLOB_QCHAIN_DIV], f->desc[BLOB_QCHAIN_RELU],
                            f->desc[BLOB_QCHAIN_OUT_RELU], fast ? 1 : 0);
    st->k.defines = qconv_defines(st->k.name, qp, tail);
    free(tail);
    const HaloLayer hl = qconv_halo_layer(n, 33);
    BnnHaloCfg hc;
    int ncand = 0;
    if (choose_halo(L, st, BNN_QHALO_VARIANTS, qconv_halo_variant, &hl, &hc, &ncand) != 0 &&
        qconv_halo_variant(0, &hl, &hc) != 0)
        return fail_node(L, "internal: no halo tile for a qconv that computes its downsample");
    char *body = xstrdup(strchr(st->k.defines, '\n') + 1);
    set_qconv_halo(st, body, &hc, O);
    L->nqresd++;
    add_qconv_args(st, qa);
    BnnQhaloAlt alts[2];
    const int nalt = bnn_qhalo_batch_alts(hl.c, hl.oh, hl.ow, hl.o, hl.kh, hl.kw, hl.sh, hl.sw, 1, qa->gpu_f32, 0, alts);
    add_qconv_batch_alts(L, (int)(st - L->steps), body, &hl, O, alts, nalt, qa, tunable_alts(L, n, ncand));
    free(body);
    return 0;
}

/* Whether a qconv2d (not a chain: the int8 kernel has no float chain) runs on the int8 tensor
 * cores (qgemm_s8.cu Q8_CONV) under --lowbit=auto when bnncc --tune has not chosen: by the
 * convolutions' own measurements (docs/perf.md stops 52 and 53, H200, batch 256, ResNet-18's
 * 3x3 shapes, each on its best tile): the bit-plane halo kernel wins every layer up to 14 plane
 * pairs over up to 4 activation bits (w1a2 ... w7a2, w1a3 ... w4a3, w1a4 ... w3a4), int8 wins
 * past 4 activation bits (w1a5, w1a6: 2-8x); at 15 and 16 pairs (w5a3, w8a2, w4a4) the planes
 * win or tie above 14x14 output pixels and int8 wins at 14x14 and below (3-28 %). Past 16 pairs
 * int8, unmeasured. (choose_qconv_kind also takes int8 where no halo tile fits: the direct
 * kernel took 2-3x int8's time.) sm_80 or later. */
static bool qconv_int8_rule(const BlobQconvParams *qp) {
    const int64_t pairs = qp->xb * qp->wb;
    return qp->xb > 4 || pairs > 16 || (pairs >= 15 && qp->oh * qp->ow <= 196);
}

/* The int8 convolution step si (qp: its qconv; w8: its weight bytes [O][ld]) on wgmma (sm_90a,
 * flagged BLOB_STEP_SM90A) as a batch alternative: bgemm_planes_tiled.cu PT_CONV, the int8
 * wgmma GEMM's block (128 x 256 tiles, persistent, two consumer warpgroups) whose producer
 * warpgroup gathers the windows from the bytes image by cp.async, the weights pre-tiled in x1;
 * the same results as Q8_CONV's. From the batch that gives QCONV_INT8_WGMMA_TILES tiles. */
#define QCONV_INT8_WGMMA_TILES 128
/* codes of at most this many levels, which a tile stages in shared memory */
#define QCONV_INT8_WGMMA_MAX_LEVELS 63
static void qconv_int8_wgmma_alt(Lower *L, int si, const BlobQconvParams *qp, const int8_t *w8, int64_t ld) {
    const int64_t O = qp->o, cells = qp->oh * qp->ow, cb = 32 * qp->ldw;
    const uint32_t ntn = (uint32_t)((O + BNN_PLANES_TILED_BN - 1) / BNN_PLANES_TILED_BN);
    const int64_t rows = (int64_t)BNN_PLANES_TILED_BM * ((QCONV_INT8_WGMMA_TILES + ntn - 1) / ntn);
    const uint32_t from = (uint32_t)((rows + cells - 1) / cells);
    const BlobRef wref = put_tiled_planes(L, w8, O, 1, 8 * ld, ld / 4);
    LStep *alt = new_batch_alt(L, si, from < 2 ? 2 : from);
    alt->s.slot[BLOB_SLOT_X1] = wref;
    name_kernel(L, alt, "qconv8wg");
    alt->k.family = KERNEL_PLANES_WGMMA;
    const bool codes = qp->epi == 2;
    /* four stages of 128 bytes (192 KiB; 64 bytes eight deep was 5-12 % slower, docs/perf.md
     * stop 64), three where a column tile's 32 to 63 levels fit in shared memory only beside
     * three (tile_layout.h bnn_qconv_wgmma_smem) */
    const int stages = codes && qp->levels > 31 ? 3 : BNN_PLANES_TILED_STAGES;
    const int64_t kbits = 8 * ((ld + 127) / 128 * 128); /* a multiple of the weights' tiled chunks (128 bytes) */
    alt->k.defines = str_printf(
        "#define PT_NAME %s\n#define PT_S8 1\n#define PT_CONV 1\n#define PT_WGMMA 1\n#define PT_N %lld\n"
        "#define PT_K %lld\n#define PT_XB 1\n#define PT_WB 1\n#define PT_WSIGNED 0\n#define PT_EPI %d\n"
        "#define PT_L %lld\n#define PT_YB %lld\n#define PT_IH %lld\n#define PT_IW %lld\n#define PT_IC %lld\n"
        "#define PT_CB %lld\n#define PT_KH %lld\n#define PT_KW %lld\n#define PT_SH %lld\n#define PT_SW %lld\n"
        "#define PT_PADT %lld\n#define PT_PADL %lld\n#define PT_DH %lld\n#define PT_DW %lld\n#define PT_OH %lld\n"
        "#define PT_OW %lld\n#define PT_PADC %lld\n#define PT_STAGES %d\n",
        alt->k.name, (long long)O, (long long)kbits, codes ? 2 : 1, (long long)(codes ? qp->levels : 1),
        (long long)(codes ? qp->yb : 1), (long long)qp->h, (long long)qp->w, (long long)qp->c, (long long)cb,
        (long long)qp->kh, (long long)qp->kw, (long long)qp->stride_h, (long long)qp->stride_w, (long long)qp->pad_top,
        (long long)qp->pad_left, (long long)qp->dil_h, (long long)qp->dil_w, (long long)qp->oh, (long long)qp->ow,
        (long long)qp->pad_code, stages);
    if (codes) {
        char *d = str_printf("%s#define PT_LDYW %lld\n#define PT_YPLANE %lld\n", alt->k.defines, (long long)qp->ldy,
                             (long long)blob_image_plane_words(cells, qp->ldy));
        free(alt->k.defines);
        alt->k.defines = d;
    }
    alt->s.flags |= BLOB_STEP_SM90A | BLOB_STEP_PERSISTENT; /* at most a block an SM */
    BlobGridDim grid[3] = {{ntn, (uint32_t)(ntn * cells), BNN_PLANES_TILED_BM}, {1, 0, 1}, {1, 0, 1}};
    uint32_t block[3] = {BNN_PLANES_WGMMA_THREADS, 1, 1};
    const int smem = bnn_qconv_wgmma_smem(stages, codes ? (int)qp->levels : 0);
    blob_step_set_kernel(&alt->s, alt->k.name, grid, block, (uint32_t)smem);
    /* (At: the bytes image, Wt, apop: none, T: the folded levels, dir, Y, M: the batch's pixels) */
    blob_step_add_arg(&alt->s, BLOB_ARG_PTR, BLOB_SLOT_IN, 0);
    blob_step_add_arg(&alt->s, BLOB_ARG_PTR, BLOB_SLOT_X1, 0);
    blob_step_add_arg(&alt->s, BLOB_ARG_I64, 0, 0);
    add_levels_args(alt, BLOB_SLOT_P0);
    blob_step_add_arg(&alt->s, BLOB_ARG_PTR, BLOB_SLOT_OUT, 0);
    blob_step_add_arg(&alt->s, BLOB_ARG_BATCH, 0, cells);
    L->nqconv_int8_wgmma++;
}

/* The GPU's steps of qconv step cs (made CPU-only) on the int8 tensor cores: the input's image
 * planes to a bytes image (qgemm_s8.cu Q8_U_NAME, [H*W][32 ldw] bytes an image), then the
 * convolution over it (Q8_CONV) into the step's own output, its thresholds ce folded and sorted
 * (p0, p1). The weights as bytes [O][ld], (o, tap, c) at tap * 32 ldw + c, zero elsewhere.
 * alts: whether it may have batch alternatives (on sm_90a from 128 outputs,
 * qconv_int8_wgmma_alt). */
static int lower_qconv_int8(Lower *L, int cs, const BlobQconvParams *qp, const int8_t *u, const CodeEpilogue *ce,
                            bool alts) {
    const int64_t C = qp->c, O = qp->o, taps = qp->kh * qp->kw, cb = 32 * qp->ldw;
    /* K stages of 128 bytes where a tap holds 128 channels or more (in dynamic shared memory,
     * two blocks an SM: 4-7 % faster on the deep ResNet layers), else 64 (static, four blocks
     * an SM: 19 % faster at 64 channels; docs/perf.md stop 51) */
    const int bk = cb >= 128 ? 128 : 64;
    const int64_t ld = (taps * cb + bk - 1) / bk * bk;
    const int64_t pix = qp->h * qp->w, cells = qp->oh * qp->ow, words = pix * qp->ldw * 8;
    const int in = L->steps[cs].buf[BLOB_SLOT_IN], out = L->steps[cs].buf[BLOB_SLOT_OUT];
    int8_t *w8 = xcalloc((size_t)(O * ld), 1);
    for (int64_t o = 0; o < O; o++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t tap = 0; tap < taps; tap++)
                w8[o * ld + tap * cb + c] = u[(o * C + c) * taps + tap];
    const int bytes = new_buf(L, pix * cb);
    LStep *st = new_step(L, BLOB_STEP_KERNEL);
    use_arena(L, st, BLOB_SLOT_IN, in);
    use_arena(L, st, BLOB_SLOT_OUT, bytes);
    name_kernel(L, st, "q8bytes");
    st->k.family = KERNEL_Q8;
    st->k.defines = str_printf("#define Q8_U_NAME %s\n#define Q8_U_XB %lld\n#define Q8_U_PIX %lld\n#define Q8_U_LDW "
                               "%lld\n#define Q8_U_PLANE %lld\n",
                               st->k.name, (long long)qp->xb, (long long)pix, (long long)qp->ldw,
                               (long long)blob_image_plane_words(pix, qp->ldw));
    BlobGridDim ugrid[3] = {{0, (uint32_t)(words / 4), 256}, {1, 0, 1}, {1, 0, 1}};
    uint32_t block[3] = {256, 1, 1};
    blob_step_set_kernel(&st->s, st->k.name, ugrid, block, 0);
    blob_step_add_arg(&st->s, BLOB_ARG_PTR, BLOB_SLOT_IN, 0);
    blob_step_add_arg(&st->s, BLOB_ARG_BATCH, 0, words / 4); /* 16-byte chunks */
    blob_step_add_arg(&st->s, BLOB_ARG_PTR, BLOB_SLOT_OUT, 0);

    st = new_step(L, BLOB_STEP_KERNEL);
    use_arena(L, st, BLOB_SLOT_IN, bytes);
    use_arena(L, st, BLOB_SLOT_OUT, out);
    st->s.slot[BLOB_SLOT_W] = put_weights(L, w8, (size_t)(O * ld));
    put_code_thresholds_as(L, st, ce, O, true);
    /* The block tile, on q8_warps's warps: where O <= 64 128 pixels x 64 channels, four warps of
     * 64 x 32 (at most 128 registers, four blocks an SM in 45 KiB of static shared memory each)
     * or eight of 32 x 32 (w4a4's 64-channel 56x56 layer 8 % faster on four at batch 256, the
     * same at 64; eight of 64 x 32 on 256 x 64 3-5 % faster, four of 64 x 64 on 256 x 64 1 %
     * slower: docs/perf.md stop 58), eight where K stages are 128 bytes (four spilled at 128
     * registers, their eight chunks' offsets and masks a thread, unmeasured); else 128 x 128 on four warps of 64 x 64 or 64 x 128 on
     * eight of 32 x 32. Three stages, or four of 64 bytes with four warps on 128 x 128: 80 KiB,
     * two blocks an SM. Shared memory as qgemm_s8.cu Q8_SMEM says: the stages or the int32 tile,
     * the larger; dynamic past 48 KiB. */
    const int narrow = O <= 64, warps = narrow && bk == 128 ? 8 : q8_warps(qp->epi == 2 ? qp->levels : 0);
    const int bm = warps == 4 || narrow ? 128 : 64, bn = narrow ? 64 : 128, wtn = warps == 4 && !narrow ? 64 : 32;
    const int stages = warps == 4 && !narrow && bk == 64 ? 4 : 3, minb = warps == 4 && narrow ? 4 : 2;
    const uint32_t smem = q8_smem(bm, bn, bk, stages), dyn = smem > 48 * 1024 ? smem : 0;
    name_kernel(L, st, "qconv8");
    st->k.family = KERNEL_Q8;
    st->k.defines = str_printf(
        "#define Q8_NAME %s\n#define Q8_CONV 1\n#define Q8_BK %d\n#define Q8_DYN %d\n#define Q8_N %lld\n#define Q8_LD %lld\n#define Q8_XB %lld\n"
        "#define Q8_EPI %lld\n#define Q8_L %lld\n#define Q8_YB %lld\n#define Q8_BM %d\n#define Q8_H %lld\n"
        "#define Q8_W %lld\n#define Q8_C %lld\n#define Q8_CB %lld\n#define Q8_KH %lld\n#define Q8_KW %lld\n"
        "#define Q8_SH %lld\n#define Q8_SW %lld\n#define Q8_PT %lld\n#define Q8_PL %lld\n#define Q8_DH %lld\n"
        "#define Q8_DW %lld\n#define Q8_OH %lld\n#define Q8_OW %lld\n#define Q8_PAD %lld\n#define Q8_LDYW %lld\n"
        "#define Q8_YPLANE %lld\n#define Q8_BN %d\n#define Q8_WARPS %d\n#define Q8_WTN %d\n#define Q8_STAGES %d\n"
        "#define Q8_MINB %d\n",
        st->k.name, bk, dyn > 0, (long long)O, (long long)ld, (long long)qp->xb, (long long)qp->epi,
        (long long)(qp->epi == 2 ? qp->levels : 1), (long long)(qp->epi == 2 ? qp->yb : 1), bm, (long long)qp->h,
        (long long)qp->w, (long long)C, (long long)cb, (long long)qp->kh, (long long)qp->kw, (long long)qp->stride_h,
        (long long)qp->stride_w, (long long)qp->pad_top, (long long)qp->pad_left, (long long)qp->dil_h,
        (long long)qp->dil_w, (long long)qp->oh, (long long)qp->ow, (long long)qp->pad_code,
        (long long)(qp->epi == 2 ? qp->ldy : 1),
        (long long)(qp->epi == 2 ? blob_image_plane_words(cells, qp->ldy) : 8), bn, warps, wtn,
        stages, minb);
    BlobGridDim grid[3] = {{0, (uint32_t)cells, (uint32_t)bm}, {(uint32_t)((O + bn - 1) / bn), 0, 1}, {1, 0, 1}};
    uint32_t qblock[3] = {32u * (uint32_t)warps, 1, 1};
    blob_step_set_kernel(&st->s, st->k.name, grid, qblock, dyn);
    add_planes_args(st, cells, BLOB_SLOT_P0);
    L->nqconv_int8++;
    if (alts && L->sm90a && O >= QGEMM_TILED_MIN_N && (qp->epi != 2 || qp->levels <= QCONV_INT8_WGMMA_MAX_LEVELS))
        qconv_int8_wgmma_alt(L, (int)(st - L->steps), qp, w8, ld);
    free(w8);
    return 0;
}

/* The kernel of st, a qconv2d step that may run on either kernel (--lowbit=auto, no float
 * chain, sm_80 or later), recorded as a tunable layer (its bit-plane #defines set: the
 * signature): the bit-plane kernel's tiles (the halo variants that apply, else the direct
 * kernel) and the int8 tensor cores, the rule's kind first (rule_int8: qconv_int8_rule, or
 * where no halo tile fits); the
 * candidate bnncc --tune chose, else the first. 1 for int8 (three plan steps: st, made
 * CPU-only, and lower_qconv_int8's two); else 0 with *halo the halo variant (-1: the direct
 * kernel). *ncandidates: their number. */
static int choose_qconv_kind(Lower *L, const LStep *st, bool rule_int8, const HaloLayer *hl, int *halo,
                             int *ncandidates) {
    int cand[CODEGEN_MAX_CANDIDATES], n = 0;
    int np = L->qconv_direct
                 ? 0
                 : halo_candidates(BNN_QHALO_VARIANTS, qconv_halo_variant, hl, CODEGEN_MAX_CANDIDATES - 1, cand);
    if (np && cand[0] != 0) /* the rule's tile does not fit: the direct kernel */
        np = 0;
    if (np == 0 && !L->qconv_direct) /* int8 first: the direct kernel took 2-3x its time (stop 53) */
        rule_int8 = true;
    char *names[CODEGEN_MAX_CANDIDATES];
    if (rule_int8)
        names[n++] = xstrdup(INT8_CANDIDATE);
    halo_candidate_names(qconv_halo_variant, hl, cand, np, names + n);
    n += np;
    if (np == 0)
        names[n++] = xstrdup("direct (qconv.cu)");
    const int int8 = rule_int8 ? 0 : n;
    if (!rule_int8)
        names[n++] = xstrdup(INT8_CANDIDATE);
    const int pick = tuned_pick(L, L->node, n);
    add_tunable(L, st, n, names, kernel_signature(st), pick);
    L->tunables[L->ntunables - 1].nsteps[int8] = 3;
    *ncandidates = n;
    *halo = pick == int8 || np == 0 ? -1 : cand[pick - (rule_int8 ? 1 : 0)];
    return pick == int8;
}

/* qconv2d (qconv2d_chain): one qconv step over image planes (docs/codegen.md). Weights
 * [wb][O][krow]: per output channel the taps' ldw words one after the other (the implicit GEMM's
 * K order), zero words up to krow, a multiple of 8. GPU: kernels/qconv.cu, output pixels of the
 * batch as GEMM rows, one warp per 16 pixels x 32 channels; arguments (X, W, rows, T, dir, Y), T
 * and dir null for the i32 result, or for the chain (X, W, rows, EP, R, Yf, Y). On the int8
 * tensor cores (choose_qconv_kind) the step is CPU-only and lower_qconv_int8's steps run on the
 * GPU. */
static int lower_qconv(Lower *L, const Node *n) {
    const Value *x = n->in[0], *w = n->in[1], *y = n->out[0];
    bool chain = n->op == OP_QCONV2D_CHAIN;
    if (!is_image_codes(x) || w->kind != VAL_CONST || (chain && n->in[2]->kind != VAL_CONST))
        return unsupported(L, "a qconv2d over codes that are not a quantize or a thresholded "
                              "qconv2d (e.g. after a pool), or over computed weights");
    if (attr_int(n, "groups", 1) != 1)
        return unsupported(L, "a grouped qconv2d");
    int64_t C = x->type.dim[1], H = x->type.dim[2], W = x->type.dim[3];
    int64_t O = w->type.dim[0], KH = w->type.dim[2], KW = w->type.dim[3];
    int64_t s[2], d[2], p[4];
    conv_geometry(n, s, d, p);
    int64_t OH = y->type.dim[2], OW = y->type.dim[3], taps = KH * KW, ldw = image_ldw(C);
    int64_t krow = (taps * ldw + 7) / 8 * 8, xb = image_code_planes(x);
    BlobQconvParams qp = {.c = C, .h = H, .w = W, .o = O, .kh = KH, .kw = KW, .stride_h = s[0],
                          .stride_w = s[1], .pad_top = p[0], .pad_left = p[1], .dil_h = d[0],
                          .dil_w = d[1], .oh = OH, .ow = OW, .ldw = ldw, .xb = xb, .epi = 1,
                          .pad_code = attr_int(n, "pad_code", 0)};
    if (qp.pad_code < 0 || qp.pad_code >= (1ll << xb))
        return fail_node(L, "pad_code %lld is not a %lld-bit code", (long long)qp.pad_code, (long long)xb);
    const int8_t *u = w->data;
    bool wsigned, bipolar;
    qp.wb = weight_planes(u, O * C * taps, &wsigned, &bipolar);
    qp.wsigned = wsigned;
    qp.bipolar = bipolar;
    CodeEpilogue ce = {0};
    if (!chain && choose_code_epilogue(L, n, true, 0, &ce))
        return -1;
    if (ce.t) {
        qp.epi = 2;
        qp.levels = ce.levels;
        qp.yb = ce.yb;
        /* the next codes' pixel words, or a b1 value's packed words (what a bconv reads) */
        qp.ldy = ce.out->type.dtype == TY_B1 ? packed_words(&ce.out->type) : image_ldw(O);
    }
    QresdFusion rf;
    const bool resd = chain && qresd_match(L, n, &qp, &rf);
    if (resd) /* D's kernel goes (lower_qconv_resd): so do its batch alternatives */
        drop_batch_alts(L, rf.dstep);
    LStep *st = new_step(L, BLOB_STEP_QCONV);
    int out, f32_buf = -1, codes_buf = -1;
    Buf chain_defs = {0};
    int32_t desc[BLOB_QCHAIN_WORDS];
    if (chain) {
        qp.epi = BLOB_QCONV_EPI_CHAIN;
        if (lower_qconv_chain(L, n, st, &qp, &f32_buf, &codes_buf, &chain_defs, desc)) {
            L->nsteps--;
            free(chain_defs.data);
            return -1;
        }
        out = f32_buf >= 0 ? f32_buf : codes_buf;
        if (f32_buf >= 0 && codes_buf >= 0)
            use_arena(L, st, BLOB_SLOT_X1, codes_buf);
    } else if (qp.epi == 2) {
        out = new_buf(L, qp.yb * blob_image_plane_words(OH * OW, qp.ldy) * 4);
        L->vbuf[ce.out->id] = out;
    } else {
        out = def_buf(L, y);
    }
    size_t wwords = (size_t)(qp.wb * O * krow);
    uint32_t *wp = xcalloc(wwords, 4);
    for (int64_t q = 0; q < qp.wb; q++)
        for (int64_t o = 0; o < O; o++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t tap = 0; tap < taps; tap++)
                    wp[(q * O + o) * krow + tap * ldw + c / 32] |=
                        (uint32_t)weight_bit(u[(o * C + c) * taps + tap], q, bipolar) << (c % 32);
    use_arena(L, st, BLOB_SLOT_IN, buf_of(L, x));
    use_arena(L, st, BLOB_SLOT_OUT, out);
    st->s.slot[BLOB_SLOT_W] = put_weights(L, wp, wwords * 4);
    free(wp);
    if (!chain)
        put_code_thresholds(L, st, &ce, O);
    st->s.qconv = qp;
    /* The int8 tensor cores (lower_qconv_int8) for a layer without a float chain on sm_80 or
     * later: every one under --lowbit=int8, by the rule or bnncc --tune's choice under auto. */
    const bool int8_ok = qp.epi != BLOB_QCONV_EPI_CHAIN && L->lowbit != LOWBIT_PLANES && L->min_sm >= 80,
               int8_fits = H * W * 32 * ldw <= INT32_MAX; /* the int8 kernels' offsets inside an item are int */
    if (int8_ok && L->lowbit == LOWBIT_INT8) {
        if (!int8_fits)
            return fail_node(L, "a qconv2d too large for the int8 kernel's 32-bit indices; use --lowbit=planes");
        make_cpu_only(st); /* the CPU runs this step, the GPU lower_qconv_int8's */
        return lower_qconv_int8(L, (int)(st - L->steps), &qp, u, &ce, L->batch_alts);
    }
    const bool kind_tunable = int8_ok && int8_fits;
    if (!kind_tunable)
        L->nqconv_planes++;
    if (chain && L->rcode[L->node_index]) { /* the CPU runs the chain, the GPU lower_qconv_rcode's kernel */
        free(chain_defs.data);
        make_cpu_only(st);
        return lower_qconv_rcode(L, n, (int)(st - L->steps), &qp, desc, codes_buf, f32_buf);
    }
    if (resd) { /* the CPU runs both chains, the GPU lower_qconv_resd's kernel */
        make_cpu_only(st);
        const QconvArgs qr = {.rows = OH * OW, .chain = true, .res = true, .f32 = f32_buf >= 0,
                              .codes = codes_buf >= 0, .gpu_f32 = f32_buf >= 0 && gpu_reads_float(L, y)};
        const int rc = lower_qconv_resd(L, n, (int)(st - L->steps), &qp, &rf, chain_defs.data, desc, &qr);
        free(chain_defs.data);
        return rc;
    }
    name_kernel(L, st, "qconv");
    st->k.family = KERNEL_QCONV;
    /* Past 15 levels (qconv.cu holds no more in registers, and requires QC_LFOLD past them) the
     * kernels count codes by q8_levels.cu's search over x0's levels, folded and sorted (x0
     * written once the step is known to run on bit-planes): one by one they took a load and a
     * compare a level for each sum (as the bit-plane dense kernels did, PLANES_FOLD_LEVELS). */
    const bool lfold = qp.epi == 2 && qp.levels >= PLANES_FOLD_LEVELS && L->min_sm;
    st->k.defines = qconv_defines(st->k.name, &qp, chain ? chain_defs.data : lfold ? "#define QC_LFOLD 1\n" : NULL);
    free(chain_defs.data);
    /* The halo-tile kernel (qconv.cu QC_HALO) wherever its shared memory fits, its tile the
     * rule's (bnn_qhalo_variant 0, kernels.h) or the one bnncc --tune chose (choose_halo,
     * choose_qconv_kind); else (or with --qconv=direct) the direct kernel. Same operands,
     * arguments and results either way. */
    BnnHaloCfg hc;
    HaloLayer hl = qconv_halo_layer(n, chain && n->nin == 4 ? 33 : 0);
    hl.lev = lfold ? (int)qp.levels : 0;
    int ncand = 0, halo = -1;
    if (kind_tunable) {
        if (choose_qconv_kind(L, st, qconv_int8_rule(&qp), &hl, &halo, &ncand)) {
            make_cpu_only(st); /* the CPU runs this step, the GPU lower_qconv_int8's */
            return lower_qconv_int8(L, (int)(st - L->steps), &qp, u, &ce, tunable_alts(L, n, ncand));
        }
        L->nqconv_planes++;
        if (halo >= 0)
            qconv_halo_variant(halo, &hl, &hc);
    } else if (!L->qconv_direct &&
               choose_halo(L, st, BNN_QHALO_VARIANTS, qconv_halo_variant, &hl, &hc, &ncand) == 0) {
        halo = 0;
    }
    char *halo_body = NULL; /* the layer's defines after QC_NAME, for a batch alternative too */
    if (halo >= 0) {
        halo_body = xstrdup(strchr(st->k.defines, '\n') + 1);
        set_qconv_halo(st, halo_body, &hc, O);
    } else {
        BlobGridDim grid[3] = {{(uint32_t)((O + 31) / 32), 0, 1}, {0, (uint32_t)(OH * OW), 16}, {1, 0, 1}};
        uint32_t block[3] = {32, 1, 1};
        blob_step_set_kernel(&st->s, st->k.name, grid, block, 0);
        st->s.flags |= BLOB_STEP_ONE_WAVE; /* its blocks walk the row tiles in y: no 65,535 bound on the batch */
    }
    const QconvArgs qa = {.rows = OH * OW, .chain = chain, .res = n->nin == 4, .f32 = f32_buf >= 0,
                          .codes = codes_buf >= 0, .gpu_f32 = f32_buf >= 0 && gpu_reads_float(L, y), .lfold = lfold};
    if (lfold)
        st->s.slot[BLOB_SLOT_X0] = put_code_levels(L, &ce, O, true);
    add_qconv_args(st, &qa);
    /* The tiles of larger batches (bnn_qhalo_batch_alts; heavy: past 2 activation or weight bits) */
    BnnQhaloAlt qa_alt[2];
    const int heavy = qp.xb > 2 || qp.wb > 2;
    const int nalt = halo_body ? bnn_qhalo_batch_alts(hl.c, hl.oh, hl.ow, hl.o, hl.kh, hl.kw, hl.sh, hl.sw, chain,
                                                      qa.gpu_f32, heavy, qa_alt)
                               : 0;
    add_qconv_batch_alts(L, (int)(st - L->steps), halo_body, &hl, O, qa_alt, nalt, &qa, tunable_alts(L, n, ncand));
    free(halo_body);
    return 0;
}

static int lower_node(Lower *L, const Node *n) {
    switch (n->op) {
    case OP_BDENSE: return lower_bgemm(L, n, n->in[2], n->in[3]);
    case OP_BCONV2D: return lower_bconv(L, n, n->in[2], n->in[3]);
    case OP_BCONV2D_CHAIN: return lower_bconv(L, n, NULL, NULL);
    case OP_BDENSE_CHAIN: return lower_bgemm(L, n, NULL, NULL);
    case OP_CONV2D_CHAIN: {
        L->stem_codes = false;
        int rc = lower_conv2d_f32(L, n);
        if (rc == 0 && !L->stem_codes) { /* its float's readers read no codes for it (plan_rcode) */
            L->no_rcode_src[L->node_index] = true;
            plan_rcode(L);
        }
        return rc;
    }
    case OP_DENSE:
        if (n->in[0]->type.dtype == TY_B1 && n->in[1]->type.dtype == TY_B1)
            return lower_bgemm(L, n, NULL, NULL);
        return lower_dense_f32(L, n);
    case OP_CONV2D:
        if (n->in[0]->type.dtype == TY_B1 && n->in[1]->type.dtype == TY_B1)
            return lower_bconv(L, n, NULL, NULL);
        return lower_conv2d_f32(L, n);
    case OP_BINARIZE: return lower_binarize(L, n);
    case OP_THRESHOLD: return lower_threshold(L, n);
    case OP_BATCHNORM: return lower_batchnorm(L, n);
    case OP_CAST: return lower_cast(L, n);
    case OP_ADD:
    case OP_SUB:
    case OP_MUL:
    case OP_DIV: return lower_elementwise(L, n);
    case OP_MAXPOOL:
    case OP_AVGPOOL: return lower_pool(L, n);
    case OP_GLOBALAVGPOOL: return lower_gap(L, n);
    case OP_RELU:
    case OP_CLIP: return lower_relu(L, n);
    case OP_ARGMAX:
    case OP_TOPK: return lower_argmax(L, n);
    case OP_RESHAPE: return lower_reshape(L, n);
    case OP_SOFTMAX: return lower_softmax(L, n);
    case OP_REPACK: return lower_repack(L, n);
    case OP_QUANT:
    case OP_QUANTIZE: return lower_quantize(L, n);
    case OP_QDENSE: return lower_qdense(L, n);
    case OP_QCONV2D:
    case OP_QCONV2D_CHAIN: return lower_qconv(L, n);
    default: return unsupported_op(L);
    }
}

/* ---------------------------------------------------------------- the arena */

/* Each buffer's first and last step (before plan_arena; mark_beside_runs widens some). */
static void buf_lifetimes(Lower *L) {
    for (int s = 0; s < L->nsteps; s++)
        for (int i = 0; i < BLOB_MAX_SLOTS; i++) {
            int b = L->steps[s].buf[i];
            if (b < 0)
                continue;
            if (s < L->bufs[b].first)
                L->bufs[b].first = s;
            if (s > L->bufs[b].last)
                L->bufs[b].last = s;
        }
}

/* ---------------------------------------------------------------- runs beside the main line */

/* A run of steps that reads only what existed before some earlier steps, and that those steps
 * do not write, may run on the GPU beside them (BLOB_STEP_BESIDE, docs/codegen.md "Runs beside
 * the main line"): a ResNet block's downsample conv beside the block's first conv. Buffers
 * (not values) decide, as the arena holds them: a step's IN and IN2 are only read (blob.h's
 * contract), every other arena slot may be written. */
#define BESIDE_MAX_BACK 16 /* steps a run may go back over */

static bool gpu_step(const LStep *st) { return st->has_kernel && !(st->s.flags & BLOB_STEP_CPU_ONLY); }

/* The last step of the group at i: the step and its batch alternatives right after it. */
static int group_last(const Lower *L, int i) {
    while (i + 1 < L->nsteps && (L->steps[i + 1].s.flags & BLOB_STEP_BATCH_ALT))
        i++;
    return i;
}

/* Steps g0..g1 may join a run that starts at step r beside steps a..r-1: each is a GPU kernel,
 * and each of its arena buffers is new in the run (first used at r or later) or older than a and
 * only read, by the run and by steps a..r-1 alike. */
static bool beside_ok(const Lower *L, int g0, int g1, int a, int r) {
    for (int s = g0; s <= g1; s++) {
        const LStep *st = &L->steps[s];
        if (!gpu_step(st))
            return false;
        for (int i = 0; i < BLOB_MAX_SLOTS; i++) {
            int b = st->buf[i];
            if (b < 0 || L->bufs[b].first >= r)
                continue;
            if (L->bufs[b].first >= a || L->bufs[b].pinned || !blob_slot_read_only(i))
                return false;
            for (int q = a; q < r; q++)
                for (int j = 0; j < BLOB_MAX_SLOTS; j++)
                    if (L->steps[q].buf[j] == b && !blob_slot_read_only(j))
                        return false;
        }
    }
    return true;
}

/* A rough cost of a step per batch item, in binary multiply-adds (a float one counted as 64):
 * enough to tell a 3x3 convolution from a 1x1 one beside it; 0 for steps without products. */
static double step_macs(const LStep *st) {
    const BlobStep *s = &st->s;
    switch (s->kind) {
    case BLOB_STEP_BCONV:
        return (double)s->bconv.oh * s->bconv.ow * s->bconv.o * s->bconv.kh * s->bconv.kw * s->bconv.c;
    case BLOB_STEP_QCONV:
        return (double)s->qconv.oh * s->qconv.ow * s->qconv.o * s->qconv.kh * s->qconv.kw * s->qconv.c *
               s->qconv.xb * s->qconv.wb;
    case BLOB_STEP_CONV2D:
        return 64.0 * s->conv2d.oh * s->conv2d.ow * s->conv2d.o * s->conv2d.kh * s->conv2d.kw * s->conv2d.c /
               (s->conv2d.groups > 0 ? s->conv2d.groups : 1);
    case BLOB_STEP_BGEMM: return (double)s->bgemm.rows * s->bgemm.n * s->bgemm.k;
    case BLOB_STEP_QGEMM: return 32.0 * s->qgemm.rows * s->qgemm.n * s->qgemm.ld * s->qgemm.xb * s->qgemm.wb;
    case BLOB_STEP_DENSE: return 64.0 * s->dense.rows * s->dense.n * s->dense.k;
    default: return 0.0;
    }
}

/* The cost of steps a..b, each group once (its main step's). */
static double steps_macs(const Lower *L, int a, int b) {
    double sum = 0.0;
    for (int s = a; s <= b; s++)
        if (!(L->steps[s].s.flags & BLOB_STEP_BATCH_ALT))
            sum += step_macs(&L->steps[s]);
    return sum;
}

/* Marks the runs (greedy, front to back) and widens their new buffers' lifetimes back to the
 * run's fork, so that the arena gives them no bytes of a buffer the steps beside them use.
 * Both sides must have products: beside steps launch without programmatic dependence, which
 * costs more than two small kernels side by side save. The cheaper side goes on the side
 * stream (BLOB_STEP_BESIDE_SWAP where that is the steps before the run), the other keeps the
 * main line's programmatic launches. */
static void mark_beside_runs(Lower *L) {
    int after = 0; /* steps before this belong to a run or its fork */
    for (int r = 1; r < L->nsteps; r = group_last(L, r) + 1) {
        if (r <= after || (L->steps[r].s.flags & BLOB_STEP_BATCH_ALT))
            continue;
        int g1 = group_last(L, r), a = r;
        /* the fork: back over steps that leave the group's buffers alone, to a group's first step */
        while (a - 1 >= after && r - (a - 1) <= BESIDE_MAX_BACK && beside_ok(L, r, g1, a - 1, r))
            a--;
        while (a < r && (L->steps[a].s.flags & BLOB_STEP_BATCH_ALT))
            a++;
        bool gpu_beside = false;
        for (int q = a; q < r; q++)
            gpu_beside = gpu_beside || gpu_step(&L->steps[q]);
        if (!gpu_beside)
            continue;
        int e = g1; /* the run: further groups while they too only need what the fork had */
        while (e + 1 < L->nsteps && group_last(L, e + 1) - a <= (int)BLOB_STEP_BESIDE_MAX &&
               beside_ok(L, e + 1, group_last(L, e + 1), a, r))
            e = group_last(L, e + 1);
        double run = steps_macs(L, r, e), before = steps_macs(L, a, r - 1);
        if (run <= 0.0 || before <= 0.0)
            continue;
        for (int s = r; s <= e; s++) {
            L->steps[s].s.flags |= BLOB_STEP_BESIDE | (uint32_t)(s - a) << BLOB_STEP_BESIDE_SHIFT;
            if (run > before)
                L->steps[s].s.flags |= BLOB_STEP_BESIDE_SWAP;
            for (int i = 0; i < BLOB_MAX_SLOTS; i++) {
                int b = L->steps[s].buf[i];
                if (b >= 0 && L->bufs[b].first >= r)
                    L->bufs[b].first = a;
            }
        }
        L->nbeside_runs++;
        after = e + 1;
    }
}

/* First fit in order of definition: each buffer takes the lowest aligned offset that no
 * buffer live at the same time holds. A step's output never shares its inputs' bytes. */
static int64_t plan_arena(Lower *L) {
    int *order = xmalloc((size_t)(L->nbufs + 1) * sizeof *order), n = 0;
    for (int b = 0; b < L->nbufs; b++) {
        LBuf *x = &L->bufs[b];
        if (x->pinned)
            x->first = -1, x->last = INT_MAX;
        if (x->first <= x->last)
            order[n++] = b;
    }
    for (int i = 1; i < n; i++) /* stable insertion sort by first use */
        for (int j = i; j > 0 && L->bufs[order[j - 1]].first > L->bufs[order[j]].first; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    int64_t peak = 0;
    for (int i = 0; i < n; i++) {
        LBuf *x = &L->bufs[order[i]];
        int64_t size = (x->bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN, at = 0;
        bool moved = true;
        while (moved) { /* bump past every overlapping live block until none is left */
            moved = false;
            for (int j = 0; j < i; j++) {
                const LBuf *y = &L->bufs[order[j]];
                int64_t ysize = (y->bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
                if (y->first <= x->last && x->first <= y->last && y->offset < at + size &&
                    at < y->offset + ysize) {
                    at = y->offset + ysize;
                    moved = true;
                }
            }
        }
        x->offset = at;
        if (at + size > peak)
            peak = at + size;
    }
    free(order);
    for (int s = 0; s < L->nsteps; s++)
        for (int i = 0; i < BLOB_MAX_SLOTS; i++)
            if (L->steps[s].buf[i] >= 0)
                L->steps[s].s.slot[i].offset = (uint64_t)L->bufs[L->steps[s].buf[i]].offset;
    return peak;
}

/* ---------------------------------------------------------------- the whole graph */

static void split_ir_lines(Lower *L) {
    const Graph *g = L->g;
    L->ir_text = print_graph_to_string(g);
    L->ir_lines = xcalloc((size_t)g->nnodes + 1, sizeof *L->ir_lines);
    char *p = strstr(L->ir_text, "\ngraph ");
    p = p ? p + 1 : (strncmp(L->ir_text, "graph ", 6) ? NULL : L->ir_text);
    p = p ? strchr(p, '\n') : NULL;
    for (int i = 0; i < g->nnodes && p; i++) {
        if (g->nodes[i]->dead)
            continue;
        *p++ = '\0';
        L->ir_lines[i] = p;
        p = strchr(p, '\n');
    }
    if (p)
        *p = '\0';
}

static void free_lower(Lower *L) {
    for (int i = 0; i < L->nsteps; i++) {
        free(L->steps[i].k.defines);
        free(L->steps[i].k.call);
    }
    free(L->steps);
    free(L->bufs);
    free(L->vbuf);
    free(L->done);
    free(L->rcode);
    free(L->no_rcode_src);
    free(L->may_nan);
    free(L->ir_lines);
    free(L->ir_text);
    if (L->w)
        blob_free(L->w);
    codegen_tunables_free(L->tunables, L->ntunables);
}

static int io_dims(const Value *v, const char *what, int64_t *dims) {
    const Type *t = &v->type;
    bool ok = t->rank >= 1 && t->rank <= BLOB_MAX_RANK && t->dim[0] == DIM_BATCH;
    for (int i = 1; i < t->rank; i++)
        ok = ok && t->dim[i] >= 1;
    if (!ok) {
        diag_error("graph %s '%%%s' (%s): model.bin needs the batch N as the first dimension of every "
                   "input and output", what, v->name, dtype_name(t->dtype));
        return -1;
    }
    dims[0] = -1;
    for (int i = 1; i < t->rank; i++)
        dims[i] = t->dim[i];
    return 0;
}

/* A parsed target ("sm_90a" up to a ',' or the end; codegen_parse_targets checked its form):
 * its sm number, and in *is_90a whether it is sm_90a (the wgmma kernels' CUBIN). */
static int target_sm(const char *t, bool *is_90a) {
    *is_90a = strcspn(t, ",") == 6 && !strncmp(t, "sm_90a", 6);
    return atoi(t + 3);
}

/* Lower g into L (steps, buffers, META, weights). 0 ok; -1 with a diagnostic. */
static int lower_graph(Lower *L, const Graph *g, const CodegenOptions *o) {
    memset(L, 0, sizeof *L);
    L->g = g;
    L->float_convs = o ? (int)o->float_convs : FLOAT_CONVS_EXACT;
    L->lowbit = o ? (int)o->lowbit : LOWBIT_AUTO;
    L->qconv_direct = o && o->qconv_direct;
    L->tiled_kernel = codegen_tiled_kernel(o);
    for (int i = 0; o && i < o->ntargets; i++) {
        bool is_90a;
        int sm = target_sm(o->targets[i], &is_90a);
        L->min_sm = i == 0 || sm < L->min_sm ? sm : L->min_sm;
        L->sm90a = L->sm90a || is_90a;
    }
    L->tune_choice = o ? o->tune_choice : NULL;
    L->ntune_choice = o ? o->ntune_choice : 0;
    L->batch_alts = !(o && o->no_batch_alts);
    L->w = blob_new();
    for (int i = 0; i < g->nvalues; i++)
        if (g->values[i]->id != i)
            unreachable("value ids are stale (graph_compact not run)");
    L->vbuf = xmalloc((size_t)(g->nvalues + 1) * sizeof *L->vbuf);
    for (int i = 0; i < g->nvalues; i++)
        L->vbuf[i] = -1;
    L->done = xcalloc((size_t)g->nnodes + 1, sizeof *L->done);
    L->rcode = xcalloc((size_t)g->nnodes + 1, sizeof *L->rcode);
    L->no_rcode_src = xcalloc((size_t)g->nnodes + 1, sizeof *L->no_rcode_src);
    L->may_nan = xmalloc((size_t)g->nvalues + 1);
    memset(L->may_nan, -1, (size_t)g->nvalues + 1);
    plan_rcode(L);
    split_ir_lines(L);
    int64_t dims[BLOB_MAX_RANK];
    int *in_buf = xmalloc((size_t)(g->ninputs + 1) * sizeof *in_buf);
    for (int i = 0; i < g->ninputs; i++) {
        const Value *v = g->inputs[i];
        if (io_dims(v, "input", dims)) {
            free(in_buf);
            return -1;
        }
        if (v->type.dtype == TY_B1) {
            diag_error("graph input '%%%s' is b1: model.bin takes float or integer inputs (binarize "
                       "inside the model)", v->name);
            free(in_buf);
            return -1;
        }
        in_buf[i] = def_buf(L, v);
        L->bufs[in_buf[i]].pinned = true;
    }
    for (int i = 0; i < g->nnodes; i++) {
        const Node *n = g->nodes[i];
        if (n->dead || L->done[i])
            continue;
        L->node = n;
        L->node_index = i;
        if (lower_node(L, n) != 0) {
            free(in_buf);
            return -1;
        }
    }
    L->node = NULL;
    /* Outputs: their own pinned buffers; a value that is an input or already an output
     * (or reshaped from one) is copied. */
    int *out_buf = xmalloc((size_t)(g->noutputs + 1) * sizeof *out_buf);
    for (int i = 0; i < g->noutputs; i++) {
        const Value *v = g->outputs[i];
        if (v->kind == VAL_CONST) {
            diag_error("graph output '$%s' is a constant: model.bin computes its outputs", v->name);
            free(in_buf);
            free(out_buf);
            return -1;
        }
        int b = buf_of(L, v);
        bool taken = false;
        for (int j = 0; j < g->ninputs; j++)
            taken = taken || in_buf[j] == b;
        for (int j = 0; j < i; j++)
            taken = taken || out_buf[j] == b;
        if (taken) {
            int nb = new_buf(L, L->bufs[b].bytes);
            LStep *st = new_step(L, BLOB_STEP_COPY);
            use_arena(L, st, BLOB_SLOT_IN, b);
            use_arena(L, st, BLOB_SLOT_OUT, nb);
            st->s.copy = (BlobCopyParams){.bytes = L->bufs[b].bytes};
            float_kernel(L, st, "copy", L->bufs[b].bytes,
                         str_printf("bnn_copy(item, j, (const unsigned char *)in, (unsigned char *)out, %lld)",
                                    (long long)L->bufs[b].bytes));
            b = nb;
        }
        out_buf[i] = b;
        L->bufs[b].pinned = true;
    }
    fuse_mlp_chains(L); /* after the outputs are pinned: a graph output is never a chain's inside */
    fuse_cast_affines(L); /* (an affine inside an MLP chain is CPU-only now: not taken twice) */
    fuse_gap_dense(L);
    buf_lifetimes(L);
    mark_beside_runs(L);
    int64_t arena = plan_arena(L);
    L->arena = arena;
    blob_set_arena(L->w, (uint64_t)arena);
    for (int i = 0; i < g->ninputs; i++) {
        const Value *v = g->inputs[i];
        io_dims(v, "input", dims);
        const LBuf *b = &L->bufs[in_buf[i]];
        blob_add_input(L->w, v->name, blob_dtype(v->type.dtype), v->type.rank, dims,
                       blob_arena_ref((uint64_t)b->offset, (uint64_t)b->bytes));
    }
    for (int i = 0; i < g->noutputs; i++) {
        const Value *v = g->outputs[i];
        if (io_dims(v, "output", dims)) {
            free(in_buf);
            free(out_buf);
            return -1;
        }
        const LBuf *b = &L->bufs[out_buf[i]];
        blob_add_output(L->w, v->name, blob_dtype(v->type.dtype), v->type.rank, dims,
                        blob_arena_ref((uint64_t)b->offset, (uint64_t)b->bytes));
    }
    free(in_buf);
    free(out_buf);
    for (int i = 0; i < L->nsteps; i++) {
        BlobStep *r = blob_add_step(L->w, (BlobStepKind)L->steps[i].s.kind);
        *r = L->steps[i].s;
        if (L->steps[i].has_kernel) /* every generated kernel waits for its producers */
            r->flags |= BLOB_STEP_PDL;
    }
    return 0;
}

static bool is_ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* text with each occurrence of its kernel's name (starting an identifier: "s5_bconv" in
 * "BG_NAME s5_bconv" or "s5_bconv_cfg", not in "s15_bconv") as \1, appended to b. */
static void put_without_name(Buf *b, const char *text, const char *name) {
    size_t n = strlen(name);
    char prev = ' ';
    for (const char *p = text ? text : ""; *p;) {
        if (!is_ident_char(prev) && !strncmp(p, name, n)) {
            buf_put(b, "\1", 1);
            p += n;
            prev = 'x';
        } else {
            prev = *p;
            buf_put(b, p++, 1);
        }
    }
    buf_put(b, "", 1); /* keeps defines and call apart */
}

/* Everything that makes a step's kernel and its launch what they are, but its name (*len
 * bytes: it holds NULs). */
static char *kernel_identity(const LStep *st, size_t *len) {
    const KernelSpec *k = &st->k;
    Buf b = {0};
    buf_printf(&b, "%d %lld %d %d %d %u %u %u %u|", (int)k->family, (long long)k->count, k->threads, k->min_blocks,
               k->min_blocks80, st->s.block[0], st->s.block[1], st->s.block[2], st->s.smem);
    put_without_name(&b, k->defines, k->name);
    put_without_name(&b, k->call, k->name);
    *len = b.len;
    return buf_take(&b);
}

/* Steps whose kernels are the same but for the name launch one kernel: rep[i] is the first
 * step with step i's kernel (i itself for the kernel that is emitted), -1 for a step without
 * one. The identity holds the launch's block and shared memory too, as the runtime sets the
 * shared memory limit per function. Returns the number of distinct kernels. */
static int share_kernels(const Lower *L, int *rep) {
    char **id = xcalloc((size_t)L->nsteps + 1, sizeof *id);
    size_t *len = xcalloc((size_t)L->nsteps + 1, sizeof *len);
    uint64_t *hash = xcalloc((size_t)L->nsteps + 1, sizeof *hash);
    int distinct = 0;
    for (int i = 0; i < L->nsteps; i++) {
        rep[i] = -1;
        if (!L->steps[i].has_kernel)
            continue;
        id[i] = kernel_identity(&L->steps[i], &len[i]);
        hash[i] = blob_fnv1a(BLOB_FNV_INIT, id[i], len[i]);
        for (int j = 0; j < i && rep[i] < 0; j++)
            if (rep[j] == j && hash[j] == hash[i] && len[j] == len[i] && !memcmp(id[j], id[i], len[i]))
                rep[i] = j;
        if (rep[i] < 0) {
            rep[i] = i;
            distinct++;
        }
    }
    for (int i = 0; i < L->nsteps; i++)
        free(id[i]);
    free(id);
    free(len);
    free(hash);
    return distinct;
}

/* The CUDA source of L's distinct kernels; a step whose kernel is another's launches that
 * one (its blob step renamed). *nkernels: how many kernels the source defines. */
static char *generate_source(Lower *L, const char *file, int *nkernels) {
    int *rep = xcalloc((size_t)L->nsteps + 1, sizeof *rep);
    *nkernels = share_kernels(L, rep);
    KernelSpec *k = xcalloc((size_t)L->nsteps + 1, sizeof *k);
    Buf *users = xcalloc((size_t)L->nsteps + 1, sizeof *users);
    for (int i = 0; i < L->nsteps; i++) {
        if (rep[i] < 0 || rep[i] == i)
            continue;
        const char *name = L->steps[rep[i]].k.name;
        buf_printf(&users[rep[i]], "%s%s", users[rep[i]].len ? ", " : "", L->steps[i].k.name);
        BlobStep *bs = blob_step_at(L->w, i);
        if (!bs)
            unreachable("plan step %d is not in the blob", i);
        memset(bs->kernel, 0, sizeof bs->kernel);
        memcpy(bs->kernel, name, strlen(name));
        memcpy(L->steps[i].s.kernel, bs->kernel, sizeof bs->kernel);
    }
    int n = 0;
    for (int i = 0; i < L->nsteps; i++) {
        if (rep[i] != i)
            continue;
        k[n] = L->steps[i].k;
        k[n++].shared_by = users[i].data;
    }
    char *src = emit_cuda_source(file, L->g->name ? L->g->name : "model", k, n);
    for (int i = 0; i < L->nsteps; i++)
        buf_free(&users[i]);
    free(users);
    free(k);
    free(rep);
    return src;
}

/* ---------------------------------------------------------------- public */

int codegen_parse_targets(const char *list, CodegenOptions *o) {
    o->ntargets = 0;
    const char *p = list;
    if (!*p) {
        diag_error("--target: no target given (expected e.g. sm_90a,sm_80, or cpu for a blob without GPU code)");
        return -1;
    }
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char t[32];
        if (len == 0 || len >= sizeof t) {
            diag_error("--target: bad entry '%.*s' in '%s' (expected e.g. sm_90a,sm_80,cpu)", (int)len, p, list);
            return -1;
        }
        memcpy(t, p, len);
        t[len] = '\0';
        bool ok = !strcmp(t, "cpu");
        if (!ok && !strncmp(t, "sm_", 3)) {
            size_t d = 3;
            while (t[d] >= '0' && t[d] <= '9')
                d++;
            ok = (d == 5 || d == 6) && (t[d] == '\0' || (t[d] >= 'a' && t[d] <= 'z' && t[d + 1] == '\0'));
        }
        if (!ok) {
            diag_error("--target: unknown target '%s' (expected sm_XY, sm_XYa or cpu, e.g. sm_90a,sm_80)", t);
            return -1;
        }
        if (strcmp(t, "cpu") != 0) {
            bool dup = false;
            for (int i = 0; i < o->ntargets; i++)
                dup = dup || (strlen(o->targets[i]) == len && !strncmp(o->targets[i], p, len));
            if (!dup) {
                if (o->ntargets == CODEGEN_MAX_TARGETS) {
                    diag_error("--target: at most %d GPU targets", CODEGEN_MAX_TARGETS);
                    return -1;
                }
                o->targets[o->ntargets++] = p;
            }
        }
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

int codegen_tiled_kernel(const CodegenOptions *o) {
    if (!o || o->ntargets == 0)
        return -1;
    bool all_90a = true;
    for (int i = 0; i < o->ntargets; i++) {
        bool is_90a;
        if (target_sm(o->targets[i], &is_90a) < 90)
            return 0;
        all_90a = all_90a && is_90a;
    }
    return all_90a ? 2 : 1;
}

char *codegen_cuda_source(const Graph *g, const CodegenOptions *o) {
    Lower L;
    char *src = NULL;
    int nkernels;
    if (lower_graph(&L, g, o) == 0)
        src = generate_source(&L, "model.cu", &nkernels);
    free_lower(&L);
    return src;
}

int codegen_tunables(const Graph *g, const CodegenOptions *o, CodegenTunable **out, int *n) {
    CodegenOptions plain = o ? *o : (CodegenOptions){0};
    plain.tune_choice = NULL;
    plain.ntune_choice = 0;
    plain.no_batch_alts = true; /* the step indices of the tuning's variants, which have none */
    Lower L;
    int rc = lower_graph(&L, g, &plain);
    *out = NULL;
    *n = 0;
    if (rc == 0) {
        *out = L.tunables;
        *n = L.ntunables;
        L.tunables = NULL;
        L.ntunables = 0;
    }
    free_lower(&L);
    return rc;
}

void codegen_tunables_free(CodegenTunable *t, int n) {
    for (int i = 0; i < n; i++) {
        free(t[i].layer);
        free(t[i].signature);
        for (int c = 0; c < t[i].ncandidates; c++)
            free(t[i].candidate[c]);
    }
    free(t);
}

/* NVRTC failed for arch: keep the source for the user, say where it is. */
static void report_failed_compile(const CodegenOptions *o, const char *src, const char *arch) {
    char msg[4096];
    snprintf(msg, sizeof msg, "%s", diag_message());
    const char *saved = o->failed_source_path ? o->failed_source_path : "bnncc-failed.cu";
    if (write_file_atomic(saved, src, strlen(src)) == 0)
        diag_error("compiling the generated kernels for %s failed: %s\n  the generated source is "
                   "in %s (bnncc --emit=cuda writes it too)", arch, msg, saved);
    else
        diag_error("compiling the generated kernels for %s failed: %s", arch, msg);
}

/* One --report line of what ptxas said of arch's kernels (its log with --ptxas-options=-v):
 * how many, their registers, and the kernels with a stack frame or spills, which run slower
 * than their registers suggest. */
static void report_resources(Buf *report, const char *arch, const char *log) {
    int kernels = 0, rmin = 1 << 30, rmax = 0;
    bool mine = false; /* the properties line belongs to the current kernel, not a callee */
    char cur[128] = "";
    Buf spills = {0};
    for (const char *l = log; l && *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line - 1 ? len : sizeof line - 1), l);
        const char *q;
        int regs, frame, st, ld;
        if ((q = strstr(line, "Compiling entry function '"))) {
            snprintf(cur, sizeof cur, "%.*s", (int)strcspn(q + 26, "'"), q + 26);
            kernels++;
        } else if ((q = strstr(line, "Function properties for "))) {
            mine = !strcmp(q + 24, cur);
        } else if (mine && sscanf(line, "ptxas . %d bytes stack frame, %d bytes spill stores, %d bytes spill loads",
                                  &frame, &st, &ld) == 3) {
            if (frame || st || ld)
                buf_printf(&spills, "%s%s (%d bytes stack, %d spilled, %d reloaded)", spills.len ? ", " : "", cur,
                           frame, st, ld);
        } else if ((q = strstr(line, "Used ")) && sscanf(q, "Used %d registers", &regs) == 1) {
            rmin = regs < rmin ? regs : rmin;
            rmax = regs > rmax ? regs : rmax;
        }
        l += len + (e != NULL);
    }
    if (kernels)
        buf_printf(report, "codegen: %s: %d kernels, %d-%d registers a thread, %s%s\n", arch, kernels, rmin, rmax,
                   spills.len ? "local memory in " : "no stack or spills", spills.len ? spills.data : "");
    buf_free(&spills);
}

/* A CUBIN per target into the blob, in the targets' order: from the cache where it has one,
 * else from NVRTC, the targets compiled in parallel (nvrtc_compile_jobs). 0 ok; -1 with a
 * diagnostic. */
static int compile_targets(Lower *L, const CodegenOptions *o, const char *src, int nkernels) {
    char arch[CODEGEN_MAX_TARGETS][32];
    NvrtcJob jobs[CODEGEN_MAX_TARGETS];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < o->ntargets; i++) {
        const char *e = strchr(o->targets[i], ',');
        size_t len = e ? (size_t)(e - o->targets[i]) : strlen(o->targets[i]);
        snprintf(arch[i], sizeof arch[i], "%.*s", (int)len, o->targets[i]);
        jobs[i].name = "model.cu";
        jobs[i].source = src;
        jobs[i].arch = arch[i];
    }
    char *cache = o->no_cache ? NULL : nvrtc_cache_dir();
    int misses = nvrtc_cache_lookup(jobs, o->ntargets, cache);
    if (misses < 0) {
        free(cache);
        return -1;
    }
    if (misses && o->progress) {
        Buf which = {0};
        for (int i = 0; i < o->ntargets; i++)
            if (!jobs[i].cached)
                buf_printf(&which, "%s%s", which.len ? ", " : "", arch[i]);
        fprintf(stderr, "bnncc: compiling %d kernels for %s with NVRTC ...\n", nkernels, which.data);
        buf_free(&which);
    }
    int failed;
    int compiled = nvrtc_compile_jobs(jobs, o->ntargets, cache, &failed);
    free(cache);
    if (compiled != 0) {
        if (failed >= 0)
            report_failed_compile(o, src, arch[failed]);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < o->ntargets; i++) {
        const NvrtcOutput *out = &jobs[i].out;
        if (rc == 0 && (!out->cubin || !out->cubin_size)) {
            diag_error("NVRTC gave no CUBIN for %s", arch[i]);
            rc = -1;
        }
        if (rc == 0) {
            blob_add_cubin(L->w, arch[i], out->cubin, out->cubin_size);
            /* Blackwell has no b1 MMA: the AND-popc instructions compile to emulation. */
            bool emulated = !strncmp(arch[i], "sm_10", 5) || !strncmp(arch[i], "sm_11", 5) ||
                            !strncmp(arch[i], "sm_12", 5);
            if (o->report)
                buf_printf(o->report, "codegen: %s CUBIN %zu bytes%s%s\n", arch[i], out->cubin_size,
                           jobs[i].cached ? " (from the kernel cache)" : "",
                           emulated ? " (this architecture has no native b1 MMA: the binary layers run "
                                      "emulated, much slower)" : "");
            if (o->report)
                report_resources(o->report, arch[i], out->log);
        }
        nvrtc_output_free(&jobs[i].out);
    }
    return rc;
}

int codegen_write_blob(const Graph *g, const CodegenOptions *o, const char *path) {
    Lower L;
    int rc = -1;
    char *src = NULL;
    if (lower_graph(&L, g, o) != 0)
        goto done;
    int nkernels = 0;
    if (o->ntargets) {
        src = generate_source(&L, "model.cu", &nkernels);
        if (compile_targets(&L, o, src, nkernels) != 0)
            goto done;
    }
    if (o->report) {
        int kernels = 0, cpu_only = 0;
        int64_t weights = 0;
        for (int i = 0; i < L.nsteps; i++) {
            kernels += L.steps[i].has_kernel;
            cpu_only += (L.steps[i].s.flags & BLOB_STEP_CPU_ONLY) != 0;
            for (int j = 0; j < BLOB_MAX_SLOTS; j++)
                if (L.steps[i].s.slot[j].space == BLOB_SPACE_WEIGHTS &&
                    (int64_t)(L.steps[i].s.slot[j].offset + L.steps[i].s.slot[j].bytes) > weights)
                    weights = (int64_t)(L.steps[i].s.slot[j].offset + L.steps[i].s.slot[j].bytes);
        }
        buf_printf(o->report, "codegen: %d plan steps (%d GPU kernels, %d CPU-only), arena %lld bytes per "
                              "batch item, weights %lld bytes\n",
                   L.nsteps, kernels, cpu_only, (long long)L.arena, (long long)weights);
        if (L.nbatch_alts)
            buf_printf(o->report, "codegen: %d steps have a batch alternative, the next step (the GPU runs it "
                                  "from its batch on; docs/codegen.md)\n", L.nbatch_alts);
        if (L.nbeside_runs)
            buf_printf(o->report, "codegen: %d runs of steps may run on the GPU beside the steps before them "
                                  "(they need nothing those write; docs/codegen.md)\n", L.nbeside_runs);
        /* One line per step, for reading bnnrun --profile's table against the IR. */
        for (int i = 0; i < L.nsteps; i++) {
            const LStep *st = &L.steps[i];
            const char *ir = st->k.ir_line ? st->k.ir_line : "";
            while (*ir == ' ')
                ir++;
            char alt[96] = "";
            int main_step = i;
            while (main_step > 0 && (L.steps[main_step].s.flags & BLOB_STEP_BATCH_ALT))
                main_step--;
            if (st->s.flags & BLOB_STEP_BATCH_ALT)
                snprintf(alt, sizeof alt, ", the GPU's from batch %u instead of step %d's%s", st->s.alt_batch,
                         main_step, (st->s.flags & BLOB_STEP_SM90A) ? " on sm_90a" : "");
            char beside[96] = "";
            if (st->s.flags & BLOB_STEP_BESIDE) {
                int fork = blob_step_beside_fork(st->s.flags, i), first = i;
                while (first > 0 && (L.steps[first - 1].s.flags & BLOB_STEP_BESIDE))
                    first--;
                snprintf(beside, sizeof beside, ", beside steps %d-%d%s", fork, first - 1,
                         (st->s.flags & BLOB_STEP_BESIDE_SWAP) ? ", which go to the side stream" : "");
            }
            buf_printf(o->report, "plan: step %d %s%s%s%s%s%s%s: %.*s\n", i, blob_step_name(st->s.kind),
                       st->s.kernel[0] ? " (kernel " : "", st->s.kernel, alt, beside,
                       (st->s.flags & BLOB_STEP_PERSISTENT) ? ", persistent: a block an SM"
                       : (st->s.flags & BLOB_STEP_ONE_WAVE) ? ", one wave: the blocks the GPU holds at once" : "",
                       st->s.kernel[0] ? ")" : "", (int)strcspn(ir, "\n"), ir);
        }
        if (o->ntargets)
            buf_printf(o->report, "codegen: %d distinct kernels emitted for the %d GPU kernel steps (steps "
                                  "whose kernels differ only in name share one)\n", nkernels, kernels);
        if (L.nexact_bit_convs)
            buf_printf(o->report, "codegen: %d float convolutions write their bits on fp16 tensor cores, exact "
                                  "(a bound on the rounding checked per bit, the reference's sum where it is too "
                                  "close)\n",
                       L.nexact_bit_convs);
        if (L.ntunables)
            buf_printf(o->report, "codegen: %d layers have several kernel configurations (tiles; int8 or bit-planes): "
                                  "bnncc --tune=BATCH measures them on a GPU; %d run another than the cost model's\n",
                       L.ntunables, L.ntuned);
        for (int i = 0; i < L.ntunables; i++) {
            const CodegenTunable *t = &L.tunables[i];
            buf_printf(o->report, "tune: step %d (%s) runs %s, candidate %d of %d%s", t->step, t->layer,
                       t->candidate[t->chosen], t->chosen + 1, t->ncandidates, t->chosen ? "" : " (the cost model's)");
            for (int a = 0; L.batch_alts && tune_entry(&L, L.g->nodes[t->node]) < 0 && a < t->nalts; a++)
                buf_printf(o->report, ", from batch %d on %s", t->alt_from[a], t->candidate[t->alt_candidate[a]]);
            buf_printf(o->report, "; candidates:");
            for (int c = 0; c < t->ncandidates; c++)
                buf_printf(o->report, " %s%s", t->candidate[c], c + 1 < t->ncandidates ? " |" : "");
            buf_printf(o->report, "; kernel signature: %s\n", t->signature);
        }
        if (L.nres_thresholds)
            buf_printf(o->report, "codegen: %d binary convolutions with a shortcut of bits compare their dot with "
                                  "two integer thresholds a channel (their float chains run at compile time)\n",
                       L.nres_thresholds);
        if (L.nresd)
            buf_printf(o->report, "codegen: %d binary convolutions compute the 1x1 downsample convolution they add "
                                  "inside their GPU kernel and compare their dot with a threshold for each of its "
                                  "dots (its own step and f32 output are CPU-only)\n",
                       L.nresd);
        if (L.nqresd)
            buf_printf(o->report, "codegen: %d low-bit convolutions compute the 1x1 downsample convolution they add "
                                  "inside their GPU kernel, its chain with the same float operations (its own step "
                                  "and f32 output are CPU-only)\n",
                       L.nqresd);
        if (L.nqresd_fast)
            buf_printf(o->report, "codegen: %d of them decide their codes by the fast test of the dot and the "
                                  "downsample's dot (the chains only where it cannot; "
                                  "%lld of their %lld channels have a test)\n",
                       L.nqresd_fast, (long long)L.nqresd_rows, (long long)L.nqresd_chans);
        if (L.nrcode)
            buf_printf(o->report, "codegen: %d low-bit convolutions read their residual as its codes in their GPU kernel "
                                  "and compare their sum with levels picked by it (their float chains and the "
                                  "residual's float are CPU-only)\n",
                       L.nrcode);
        if (L.ngap_codes)
            buf_printf(o->report, "codegen: %d global average pools read the codes of a dequantized value in their "
                                  "GPU kernel (its float is CPU-only)\n",
                       L.ngap_codes);
        if (L.nqgemm_int8 + L.nqgemm_planes)
            buf_printf(o->report, "codegen: low-bit dense layers: %d on int8 MMA (qgemm_s8.cu), %d as bit-planes "
                                  "(bgemm_planes.cu)%s\n",
                       L.nqgemm_int8, L.nqgemm_planes,
                       o->lowbit == LOWBIT_AUTO ? ": int8 past 4 activation bits or 16 plane pairs" : "");
        if (L.nqconv_int8 + L.nqconv_planes)
            buf_printf(o->report, "codegen: low-bit convolutions: %d on int8 MMA (qgemm_s8.cu), %d as bit-planes "
                                  "(qconv.cu)%s\n",
                       L.nqconv_int8, L.nqconv_planes,
                       o->lowbit == LOWBIT_AUTO ? ": int8 by the rule past 4 activation bits or 16 "
                                                  "plane pairs (15 at 14x14 or fewer output pixels) or where "
                                                  "no halo tile fits, where no float chain, or by the tune file"
                                                : "");
        if (L.nqgemm_tiled)
            buf_printf(o->report, "codegen: %d bit-plane dense layers run the pre-tiled GEMM (bgemm_planes_tiled.cu, "
                                  "%s) from the batch that fills %d of its tiles on (a batch alternative)\n",
                       L.nqgemm_tiled,
                       L.tiled_kernel == 2 ? "wgmma"
                       : L.sm90a           ? "wgmma on sm_90a, mma.sync on the other targets"
                                           : "mma.sync",
                       QGEMM_TILED_MIN_TILES);
        if (L.nqgemm_int8_wide)
            buf_printf(o->report, "codegen: %d int8 dense layers run 128 x 128 tiles (qgemm_s8.cu) from the batch "
                                  "that fills %d of them on (a batch alternative)\n",
                       L.nqgemm_int8_wide, QGEMM_INT8_WIDE_TILES);
        if (L.nqgemm_int8_wgmma)
            buf_printf(o->report, "codegen: %d int8 dense layers run on wgmma on sm_90a (bgemm_planes_tiled.cu "
                                  "PT_S8, 128 x 256 tiles) from the batch that fills %d of its tiles on, %d where "
                                  "they write codes (a batch alternative)\n",
                       L.nqgemm_int8_wgmma, QGEMM_INT8_WGMMA_TILES, QGEMM_INT8_WGMMA_CODES_TILES);
        if (L.nqconv_int8_wgmma)
            buf_printf(o->report, "codegen: %d int8 convolutions run on wgmma on sm_90a (bgemm_planes_tiled.cu "
                                  "PT_CONV, 128 pixels x 256 channels a tile) from the batch that fills %d of its "
                                  "tiles on (a batch alternative)\n",
                       L.nqconv_int8_wgmma, QCONV_INT8_WGMMA_TILES);
        if (L.ncast_affines)
            buf_printf(o->report, "codegen: %d casts to f32 run with the affine steps after them in one GPU pass "
                                  "(cast_affine)\n",
                       L.ncast_affines);
        if (L.ngap_denses)
            buf_printf(o->report, "codegen: %d global average pools of bits run inside the dense kernel after them "
                                  "(gapdense)\n",
                       L.ngap_denses);
        if (o->float_convs != FLOAT_CONVS_EXACT)
            buf_printf(o->report, "codegen: --float-convs=%s: %d float convolutions on fp16 tensor cores "
                                  "(GPU results differ from the reference by %s; the CPU path stays exact)\n",
                       o->float_convs == FLOAT_CONVS_FP16 ? "fp16" : "fp16x3", L.nfp16_convs,
                       o->float_convs == FLOAT_CONVS_FP16 ? "fp16 rounding (about 1e-3)"
                                                          : "about 2^-21 of each product");
    }
    char err[512];
    if (blob_write_file(L.w, path, err, sizeof err) != 0) {
        diag_error("writing %s: %s", path, err);
        goto done;
    }
    rc = 0;
done:
    free(src);
    free_lower(&L);
    return rc;
}
