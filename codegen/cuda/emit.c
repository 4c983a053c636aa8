/* emit.c: the CUDA source of one model. The fixed code of each kernel family lives in real
 * .cu files (codegen/cuda/kernels, embedded by embed.py); this file writes only the glue: a block
 * of #defines in front of each bgemm/bconv inclusion, and a small __global__ per float
 * step, from templates with named $HOLES (fill_template), never printf soup. */
#include <string.h>

#include "emit.h"
#include "ir.h"
#include "kernels.h"
#include "tile_layout.h"
#include "util.h"

extern const char bnn_float_ops_cu[]; /* embedded kernels/float_ops.cu (embed.py) */
extern const size_t bnn_float_ops_cu_len;
extern const char bnn_bgemm_planes_cu[]; /* embedded kernels/bgemm_planes.cu (the qgemm step) */
extern const size_t bnn_bgemm_planes_cu_len;
extern const char bnn_qconv_cu[]; /* embedded kernels/qconv.cu (the qconv step) */
extern const size_t bnn_qconv_cu_len;
extern const char bnn_qgemm_s8_cu[]; /* embedded kernels/qgemm_s8.cu (the qgemm step on int8 codes) */
extern const size_t bnn_qgemm_s8_cu_len;
extern const char bnn_mlp_fused_cu[]; /* embedded kernels/mlp_fused.cu (fused binary MLPs) */
extern const size_t bnn_mlp_fused_cu_len;

typedef struct Hole {
    const char *name;
    const char *value;
} Hole;

static bool is_hole_char(char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

/* Append tpl with every $NAME replaced by its hole's value. A hole the template names but
 * nobody gave, or one given but never used, is a bug in this file: stop (exit 2). */
static void fill_template(Buf *out, const char *tpl, const Hole *holes, int nholes) {
    bool used[16] = {false};
    if (nholes > 16)
        unreachable("too many holes");
    for (const char *p = tpl; *p;) {
        const char *d = strchr(p, '$');
        if (!d) {
            buf_puts(out, p);
            break;
        }
        buf_put(out, p, (size_t)(d - p));
        const char *e = d + 1;
        while (is_hole_char(*e))
            e++;
        int found = -1;
        for (int i = 0; i < nholes; i++)
            if (strlen(holes[i].name) == (size_t)(e - d - 1) && !strncmp(holes[i].name, d + 1, (size_t)(e - d - 1)))
                found = i;
        if (found < 0)
            unreachable("template hole '$%.*s' has no value", (int)(e - d - 1), d + 1);
        buf_puts(out, holes[found].value);
        used[found] = true;
        p = e;
    }
    for (int i = 0; i < nholes; i++)
        if (!used[i])
            unreachable("template hole '$%s' given but not used", holes[i].name);
}

/* The line number the next appended line will have. */
static int next_line(const Buf *b) {
    int n = 1;
    for (size_t i = 0; i < b->len; i++)
        n += b->data[i] == '\n';
    return n;
}

/* #line back into the generated file itself, for the glue that follows. */
static void put_line_directive(Buf *b, const char *file) {
    char line[32];
    snprintf(line, sizeof line, "%d", next_line(b) + 1);
    Hole h[] = {{"LINE", line}, {"FILE", file}};
    fill_template(b, "#line $LINE \"$FILE\"\n", h, 2);
}

/* The IR line as a one-line comment (it never holds a newline; trim its indent). */
static void put_ir_comment(Buf *b, const char *ir_line) {
    if (!ir_line)
        return;
    while (*ir_line == ' ')
        ir_line++;
    buf_puts(b, "// ");
    const char *p = ir_line;
    for (; *p && *p != '\n'; p++)
        buf_put(b, p, 1);
    /* A trailing backslash would splice the next line into the comment. */
    buf_puts(b, p > ir_line && p[-1] == '\\' ? "(eol)\n" : "\n");
}

static const char float_glue[] =
    "extern \"C\" __global__ void __launch_bounds__(256)\n"
    "$NAME(const void *__restrict__ in, const void *__restrict__ in2, void *__restrict__ out,\n"
    "      const void *__restrict__ w, const void *__restrict__ p0, const void *__restrict__ p1,\n"
    "      void *__restrict__ x0, int total) {\n"
    "    BNN_PDL_ENTER();\n"
    "    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= total) return;\n"
    "    const long long item = i / $COUNT;\n"
    "    const int j = (int)(i % $COUNT);\n"
    "    $CALL;\n"
    "}\n";

/* Shared memory an SM of sm_80 (A100) gives its blocks; sm_86 and sm_89, which run the sm_80
 * code too, have 100 KiB. */
#define SM80_SMEM_SM (164 * 1024)

/* A tiled float kernel (float_ops.cu's bnn_conv2d_tile, bnn_dense_tile): the config struct,
 * then a __global__ whose whole body is the call; `total` is the batch (times the rows). The
 * launch bounds ask for min_blocks blocks an SM, by default 512 threads (at most 128 registers
 * a thread). ENTER is the wait for the kernels before, or nothing where the call waits itself
 * (after it has requested its constants). */
static const char float_tile_glue[] =
    "$DEFINES"
    "extern \"C\" __global__ void __launch_bounds__($THREADS, $MINBLOCKS)\n"
    "$NAME(const void *__restrict__ in, const void *__restrict__ in2, void *__restrict__ out,\n"
    "      const void *__restrict__ w, const void *__restrict__ p0, const void *__restrict__ p1,\n"
    "      void *__restrict__ x0, int total) {\n"
    "$ENTER"
    "    $CALL;\n"
    "}\n";

/* A fused binary MLP (mlp_fused.cu): the lowering writes the body, the calls of the chain's
 * layers; in: the chain's input, out: its output, wts: the window of WEIGHTS holding every
 * parameter, batch: the items (one warp each, grid-stride). */
static const char mlp_glue[] =
    "extern \"C\" __global__ void __launch_bounds__($THREADS)\n"
    "$NAME(const void *__restrict__ in, void *__restrict__ out, const unsigned char *__restrict__ wts, int batch) {\n"
    "    BNN_PDL_ENTER();\n"
    "$BODY"
    "}\n";

char *emit_cuda_source(const char *file, const char *model, const KernelSpec *k, int n) {
    Buf b = {0};
    Hole head[] = {{"MODEL", model}, {"FILE", file}};
    fill_template(&b,
                  "// $FILE: the CUDA kernels of model '$MODEL', generated by bnncc (one\n"
                  "// specialized kernel per plan step, identical ones shared; see docs/codegen.md).\n"
                  "// Do not edit.\n",
                  head, 2);
    buf_put(&b, bnn_common_cu, bnn_common_cu_len);
    buf_put(&b, bnn_float_ops_cu, bnn_float_ops_cu_len);
    for (int i = 0; i < n; i++)
        if (k[i].family == KERNEL_MLP) { /* templates only: once, where a kernel needs them */
            buf_put(&b, bnn_mlp_fused_cu, bnn_mlp_fused_cu_len);
            break;
        }
    for (int i = 0; i < n; i++)
        if (k[i].family == KERNEL_Q8 || k[i].family == KERNEL_PLANES || k[i].family == KERNEL_PLANES_TILED ||
            k[i].family == KERNEL_PLANES_WGMMA || k[i].family == KERNEL_QCONV) {
            /* the epilogues' level counts over folded levels (qgemm_s8.cu, bgemm_planes_tiled.cu's
             * PT_S8 and PT_LFOLD, bgemm_planes.cu's PL_LFOLD, qconv.cu's QC_LFOLD) */
            buf_put(&b, bnn_q8_levels_cu, bnn_q8_levels_cu_len);
            break;
        }
    bool has_tiled_common = false;
    for (int i = 0; i < n; i++)
        if (k[i].family == KERNEL_BGEMM_TILED || k[i].family == KERNEL_BGEMM_WGMMA) {
            /* sm_90+ only: lower.c makes these kernels only when every target has them; it
             * also holds the prep kernel bnn_tiled_row_popc_c that the plan launches */
            buf_put(&b, bnn_tiled_common_cu, bnn_tiled_common_cu_len);
            has_tiled_common = true;
            break;
        }
    for (int i = 0; i < n; i++)
        if (k[i].family == KERNEL_PLANES_WGMMA) {
            /* every target compiles this program: the helpers only where they exist (the
             * kernels themselves are empty elsewhere; bgemm_planes_tiled.cu) */
            if (!has_tiled_common) {
                buf_puts(&b, "\n#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900\n");
                buf_put(&b, bnn_tiled_common_cu, bnn_tiled_common_cu_len);
                buf_puts(&b, "\n#endif\n");
            }
            buf_puts(&b, "\n#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)\n"
                         "#define BNN_WGMMA_HELPERS_ONLY\n");
            buf_put(&b, bnn_bgemm_wgmma_cu, bnn_bgemm_wgmma_cu_len);
            buf_puts(&b, "\n#undef BNN_WGMMA_HELPERS_ONLY\n#endif\n");
            break;
        }
    for (int i = 0; i < n; i++) {
        const KernelSpec *s = &k[i];
        buf_puts(&b, "\n");
        put_line_directive(&b, file);
        buf_printf(&b, "// ---------------------------------------------------------------- %s\n", s->name);
        put_ir_comment(&b, s->ir_line);
        if (s->shared_by)
            buf_printf(&b, "// also launched by %s\n", s->shared_by);
        /* the families that are a block of #defines in front of a kernel file */
        const char *kfile = NULL;
        size_t kfile_len = 0;
        switch (s->family) {
        case KERNEL_BGEMM: kfile = bnn_bgemm_cu, kfile_len = bnn_bgemm_cu_len; break;
        case KERNEL_BCONV: kfile = bnn_bconv_cu, kfile_len = bnn_bconv_cu_len; break;
        case KERNEL_BGEMM_TILED: kfile = bnn_bgemm_tiled_cu, kfile_len = bnn_bgemm_tiled_cu_len; break;
        case KERNEL_BGEMM_WGMMA: kfile = bnn_bgemm_wgmma_cu, kfile_len = bnn_bgemm_wgmma_cu_len; break;
        case KERNEL_PLANES: kfile = bnn_bgemm_planes_cu, kfile_len = bnn_bgemm_planes_cu_len; break;
        case KERNEL_PLANES_TILED:
        case KERNEL_PLANES_WGMMA: kfile = bnn_bgemm_planes_tiled_cu, kfile_len = bnn_bgemm_planes_tiled_cu_len; break;
        case KERNEL_QCONV: kfile = bnn_qconv_cu, kfile_len = bnn_qconv_cu_len; break;
        case KERNEL_Q8: kfile = bnn_qgemm_s8_cu, kfile_len = bnn_qgemm_s8_cu_len; break;
        default: break;
        }
        if (kfile) {
            buf_puts(&b, s->defines);
            buf_put(&b, kfile, kfile_len);
            continue;
        }
        switch (s->family) {
        case KERNEL_FLOAT: {
            char count[32];
            snprintf(count, sizeof count, "%lld", (long long)s->count);
            Hole h[] = {{"NAME", s->name}, {"COUNT", count}, {"CALL", s->call}};
            fill_template(&b, float_glue, h, 3);
            break;
        }
        case KERNEL_MLP: {
            char threads[32];
            snprintf(threads, sizeof threads, "%d", s->threads);
            Hole h[] = {{"THREADS", threads}, {"NAME", s->name}, {"BODY", s->call}};
            fill_template(&b, mlp_glue, h, 3);
            break;
        }
        case KERNEL_FLOAT_TILE: {
            char threads[32], minblocks[64];
            snprintf(threads, sizeof threads, "%d", s->threads);
            /* Blocks an SM: where fewer fit sm_80's shared memory (SM80_SMEM_SM, each block 1 KiB
             * more), or the kernel asks for fewer there (min_blocks80), its sm_80 code asks for
             * those (common.cu BNN_ARCH_MINB): more would only cap its registers (the XNOR stem's
             * 80 spilled 152 bytes on sm_80; 127 do not). */
            int minb = s->min_blocks ? s->min_blocks : s->threads < 512 ? 512 / s->threads : 1;
            int64_t fit80 = SM80_SMEM_SM / (s->smem + 1024);
            if (s->min_blocks80 && s->min_blocks80 < fit80)
                fit80 = s->min_blocks80;
            if (fit80 >= 1 && fit80 < minb)
                snprintf(minblocks, sizeof minblocks, "BNN_ARCH_MINB(%d, %lld)", minb, (long long)fit80);
            else
                snprintf(minblocks, sizeof minblocks, "%d", minb);
            Hole h[] = {{"DEFINES", s->defines},
                        {"THREADS", threads},
                        {"MINBLOCKS", minblocks},
                        {"NAME", s->name},
                        {"ENTER", s->waits_itself ? "" : "    BNN_PDL_ENTER();\n"},
                        {"CALL", s->call}};
            fill_template(&b, float_tile_glue, h, 6);
            break;
        }
        default: break; /* the kernel files above */
        }
    }
    return buf_take(&b);
}
