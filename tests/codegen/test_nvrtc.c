/* test_nvrtc.c: the kernel families compile through NVRTC for sm_90a and sm_80 without a GPU:
 * every epilogue, odd shapes, padded strides, both pad modes, several specializations in one
 * program; each CUBIN is non-empty and the PTX holds the AND-popc MMA and no XOR-popc.
 * Also the wrapper's failures: a bad source, a missing #define, a bad architecture.
 * Exit 77 (skipped) when libnvrtc is not installed, unless BNN_REQUIRE_NVRTC=1. With
 * --sanitized (the ASan / UBSan build) the wrapper's own paths only (defaults, options, PTX,
 * failures): the kernel families' compiles are NVRTC's time, which the plain build's run spends. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ir.h"
#include "kernels.h"
#include "kernsrc.h"
#include "nvrtc.h"
#include "util.h"

static const BgemmSpec gemms[] = {
    {.M = 1, .N = 10, .K = 784, .epi = BNN_EPI_I32},
    {.N = 10, .K = 784, .epi = BNN_EPI_THRESHOLD},
    {.N = 130, .K = 257, .epi = BNN_EPI_AFFINE},
    {.N = 517, .K = 3000, .epi = BNN_EPI_THRESHOLD, .ldy = 20, .tile = {128, 256, 2, 4, 4, 4}},
    {.N = 64, .K = 4096, .epi = BNN_EPI_I32, .ldy = 66, .tile = {64, 64, 2, 2, 8, 2}},
    {.N = 512, .K = 4096, .epi = BNN_EPI_THRESHOLD, .tile = {64, 128, 1, 4, 2, 4}},
    {.N = 1, .K = 1, .epi = BNN_EPI_AFFINE, .lda = 4, .ldw = 4},
};

static const BconvSpec convs[] = {
    {.C = 65, .H = 14, .W = 14, .O = 130, .KH = 3, .KW = 3, .PT = 1, .PL = 1, .PB = 1, .PR = 1, .epi = BNN_EPI_THRESHOLD},
    {.C = 65, .H = 14, .W = 14, .O = 130, .KH = 3, .KW = 3, .PT = 1, .PL = 1, .PB = 1, .PR = 1, .pad_one = true,
     .epi = BNN_EPI_I32},
    {.C = 32, .H = 7, .W = 7, .O = 10, .KH = 1, .KW = 1, .epi = BNN_EPI_AFFINE},
    {.C = 256, .H = 32, .W = 32, .O = 64, .KH = 3, .KW = 3, .SH = 2, .SW = 2, .PT = 1, .PL = 1, .PB = 1, .PR = 1,
     .epi = BNN_EPI_THRESHOLD, .tile = {128, 128, 2, 2, 4, 3}},
    {.C = 128, .H = 14, .W = 14, .O = 128, .KH = 3, .KW = 3, .PT = 2, .PL = 2, .PB = 2, .PR = 2, .DH = 2, .DW = 2,
     .epi = BNN_EPI_I32, .nb = 3},
    {.C = 64, .H = 15, .W = 15, .O = 96, .KH = 3, .KW = 3, .SH = 2, .SW = 2, .PB = 1, .PR = 1, .pad_one = true,
     .epi = BNN_EPI_THRESHOLD, .ldy = 8, .tile = {64, 64, 2, 2, 4, 2}},
    {.C = 65, .H = 15, .W = 15, .O = 130, .KH = 3, .KW = 3, .PT = 1, .PL = 1, .PB = 1, .PR = 1, .pool = true,
     .epi = BNN_EPI_THRESHOLD},
    /* the halo-tile kernel (BC_HALO): tiles, warps, items, pools, pads, epilogues */
    {.C = 64, .H = 56, .W = 56, .O = 64, .KH = 3, .KW = 3, .PT = 1, .PL = 1, .PB = 1, .PR = 1, .cwp = 8,
     .epi = BNN_EPI_THRESHOLD, .ldy = 8, .tile = {32, 64, 4, 1, 8, 2}, .th = 4, .tw = 8},
    {.C = 300, .H = 9, .W = 11, .O = 70, .KH = 3, .KW = 3, .PT = 1, .PL = 1, .PB = 1, .PR = 1, .pad_one = true,
     .epi = BNN_EPI_I32, .tile = {32, 64, 8, 1, 8, 2}, .th = 4, .tw = 8},
    {.C = 130, .H = 13, .W = 13, .O = 200, .KH = 3, .KW = 3, .SH = 2, .SW = 2, .PT = 1, .PL = 1, .PB = 1, .PR = 1,
     .epi = BNN_EPI_AFFINE, .tile = {16, 64, 2, 1, 8, 2}, .th = 4, .tw = 4, .minb = 2},
    {.C = 64, .H = 56, .W = 56, .O = 128, .KH = 1, .KW = 1, .SH = 2, .SW = 2, .cwp = 8, .epi = BNN_EPI_THRESHOLD,
     .tile = {32, 64, 4, 1, 8, 2}, .th = 4, .tw = 8},
    {.C = 512, .H = 8, .W = 8, .O = 512, .KH = 3, .KW = 3, .PT = 1, .PL = 1, .PB = 1, .PR = 1, .pool = true,
     .epi = BNN_EPI_THRESHOLD, .tile = {32, 32, 8, 1, 8, 2}, .th = 4, .tw = 8},
    {.C = 65, .H = 12, .W = 10, .O = 33, .KH = 5, .KW = 3, .PT = 3, .PL = 0, .PB = 1, .PR = 2, .DH = 2,
     .epi = BNN_EPI_I32, .nb = 2, .tile = {32, 64, 2, 1, 8, 2}, .th = 4, .tw = 8},
};

static int count_str(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Every variant in one program, as a model's kernels will be: also checks that the kernel
 * files are re-includable with fresh #defines. */
static void compile_all(const char *arch) {
    Buf b = {0};
    buf_put(&b, bnn_common_cu, bnn_common_cu_len);
    int nk = 0;
    for (size_t i = 0; i < sizeof gemms / sizeof *gemms; i++) {
        char name[32];
        snprintf(name, sizeof name, "bgemm_%zu", i);
        bgemm_append(&b, name, &gemms[i]);
        nk++;
    }
    for (size_t i = 0; i < sizeof convs / sizeof *convs; i++) {
        char name[32];
        snprintf(name, sizeof name, "bconv_%zu", i);
        bconv_append(&b, name, &convs[i]);
        nk++;
    }
    NvrtcOutput out;
    int rc = nvrtc_compile("all_kernels.cu", b.data, arch, NULL, 0, true, &out);
    CHECK_MSG(rc == 0, "%s: %s", arch, diag_message());
    if (rc == 0) {
        CHECK(out.cubin && out.cubin_size > 0);
        CHECK(out.ptx && out.ptx_size > 0);
        CHECK_MSG(strstr(out.ptx, "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc") != NULL,
                  "%s: no AND-popc MMA in the PTX", arch);
        CHECK_MSG(strstr(out.ptx, "xor.popc") == NULL, "%s: XOR-popc in the PTX", arch);
        CHECK_MSG(count_str(out.ptx, ".entry") == nk + 2, "%s: %d entries, expected %d", arch,
                  count_str(out.ptx, ".entry"), nk + 2);
        for (int i = 0; i < (int)(sizeof gemms / sizeof *gemms); i++) {
            char name[40];
            snprintf(name, sizeof name, ".entry bgemm_%d(", i);
            CHECK_MSG(strstr(out.ptx, name) != NULL, "%s: no %s", arch, name);
        }
        printf("%s: %d kernels, CUBIN %zu bytes, PTX %zu bytes, %d AND-popc MMAs\n", arch, nk, out.cubin_size,
               out.ptx_size, count_str(out.ptx, ".and.popc"));
        nvrtc_output_free(&out);
    }
    buf_free(&b);
}

/* One kernel with nothing but its required #defines: the file's own defaults must compile. */
static void compile_defaults(void) {
    Buf b = {0};
    buf_put(&b, bnn_common_cu, bnn_common_cu_len);
    buf_puts(&b, "#define BG_N 10\n#define BG_K 784\n");
    buf_put(&b, bnn_bgemm_cu, bnn_bgemm_cu_len);
    buf_puts(&b, "#define BC_C 3\n#define BC_H 9\n#define BC_W 9\n#define BC_O 8\n#define BC_KH 3\n#define BC_KW 3\n");
    buf_put(&b, bnn_bconv_cu, bnn_bconv_cu_len);
    NvrtcOutput out;
    int rc = nvrtc_compile("defaults.cu", b.data, "sm_90a", NULL, 0, false, &out);
    CHECK_MSG(rc == 0, "%s", diag_message());
    CHECK(rc != 0 || out.cubin_size > 0);
    CHECK(out.ptx == NULL);
    nvrtc_output_free(&out);
    /* -D options reach the program. */
    const char *opts[] = {"-DBG_N=33", "-DBG_K=100", "-DBG_EPI=2"};
    buf_free(&b);
    buf_put(&b, bnn_common_cu, bnn_common_cu_len);
    buf_put(&b, bnn_bgemm_cu, bnn_bgemm_cu_len);
    rc = nvrtc_compile("options.cu", b.data, "sm_80", opts, 3, false, &out);
    CHECK_MSG(rc == 0, "%s", diag_message());
    nvrtc_output_free(&out);
    /* PTX only for a virtual architecture. */
    rc = nvrtc_compile("options.cu", b.data, "compute_90a", opts, 3, false, &out);
    CHECK_MSG(rc == 0, "%s", diag_message());
    CHECK(rc != 0 || (out.cubin == NULL && out.ptx && strstr(out.ptx, ".and.popc")));
    nvrtc_output_free(&out);
    buf_free(&b);
}

/* The halo kernel with the float chain of a Bi-Real block (3 stages, residual, f32 and bits)
 * and the tile bnn_halo_choose picks, for both targets. */
static void compile_halo_chain(void) {
    for (int t = 0; t < 2; t++) {
        const char *arch = t ? "sm_80" : "sm_90a";
        Buf b = {0};
        buf_put(&b, bnn_common_cu, bnn_common_cu_len);
        BnnHaloCfg h;
        int classes = bnn_corr_classes(14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 14, 14, 0);
        CHECK(classes == 9);
        CHECK(bnn_halo_choose(256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 0, classes, &h) == 0);
        CHECK(h.smem <= BNN_HALO_SMEM_MAX && h.wn == 1 && (h.th * h.tw == 16 || h.th * h.tw == 32));
        buf_printf(&b, "#define BC_NAME chain\n#define BC_C 256\n#define BC_H 14\n#define BC_W 14\n#define BC_O 256\n"
                       "#define BC_KH 3\n#define BC_KW 3\n#define BC_PT 1\n#define BC_PL 1\n#define BC_CWP 8\n"
                       "#define BC_EPI BNN_EPI_CHAIN\n#define BC_NST 3\n#define BC_DIV 2\n#define BC_RES 1\n"
                       "#define BC_LDB 8\n#define BC_HALO 1\n#define BC_TH %d\n#define BC_TW %d\n#define BC_BN %d\n"
                       "#define BC_WM %d\n#define BC_WN %d\n#define BC_MINB %d\n",
                   h.th, h.tw, h.bn, h.wm, h.wn, h.minb);
        buf_put(&b, bnn_bconv_cu, bnn_bconv_cu_len);
        NvrtcOutput out;
        int rc = nvrtc_compile("halo_chain.cu", b.data, arch, NULL, 0, true, &out);
        CHECK_MSG(rc == 0, "%s: %s", arch, diag_message());
        CHECK(rc != 0 || (out.cubin_size > 0 && strstr(out.ptx, ".entry chain(") &&
                          strstr(out.ptx, "m16n8k256.row.col.s32.b1.b1.s32.and.popc") && !strstr(out.ptx, "xor.popc")));
        nvrtc_output_free(&out);
        buf_free(&b);
    }
    /* the rule: 2x8 tiles a warp (4x4 pooled or under 8 wide), 32 channels, 8 warps; the implicit
     * GEMM for a very wide C */
    BnnHaloCfg h;
    CHECK(bnn_halo_choose(64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 0, 9, &h) == 0 && h.th == 2 && h.tw == 8 && h.bn == 32 &&
          h.wm == 8 && h.minb == 3);
    CHECK(bnn_halo_choose(64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 9, &h) == 0 && h.th == 4 && h.tw == 4);
    CHECK(bnn_halo_choose(512, 7, 7, 512, 3, 3, 1, 1, 1, 1, 0, 9, &h) == 0 && h.th == 4 && h.tw == 4 &&
          h.smem <= BNN_HALO_SMEM_MAX);
    CHECK(bnn_halo_choose(8192, 7, 7, 512, 3, 3, 1, 1, 1, 1, 0, 9, &h) == -1);
    CHECK(h.smem > BNN_HALO_SMEM_MAX);
    /* border classes: top / full / bottom by left / full / right; none past a 1x1 kernel; one
     * per output where no output is full; one with one padding */
    CHECK(bnn_corr_classes(56, 56, 3, 3, 1, 1, 1, 1, 1, 1, 56, 56, 0) == 9);
    CHECK(bnn_corr_classes(56, 56, 1, 1, 2, 2, 0, 0, 1, 1, 28, 28, 0) == 1);
    CHECK(bnn_corr_classes(2, 2, 3, 3, 1, 1, 1, 1, 1, 1, 2, 2, 0) == 4);
    CHECK(bnn_corr_classes(14, 14, 3, 3, 2, 2, 1, 1, 1, 1, 7, 7, 0) == 4); /* stride 2: no bottom band */
    CHECK(bnn_corr_classes(56, 56, 3, 3, 1, 1, 1, 1, 1, 1, 56, 56, 1) == 1);
}

static void compile_errors(void) {
    NvrtcOutput out;
    int rc = nvrtc_compile("broken.cu", "__global__ void k() { this is not cuda; }\n", "sm_90a", NULL, 0, false, &out);
    CHECK(rc == -1);
    CHECK(out.cubin == NULL && out.log == NULL);
    CHECK_STR_CONTAINS(diag_message(), "nvrtcCompileProgram");
    CHECK_STR_CONTAINS(diag_message(), "nvrtc.c:");
    CHECK_STR_CONTAINS(diag_message(), "NVRTC log");
    CHECK_STR_CONTAINS(diag_message(), "broken.cu");

    Buf b = {0};
    buf_put(&b, bnn_common_cu, bnn_common_cu_len);
    buf_put(&b, bnn_bgemm_cu, bnn_bgemm_cu_len);
    rc = nvrtc_compile("missing.cu", b.data, "sm_90a", NULL, 0, false, &out);
    CHECK(rc == -1);
    CHECK_STR_CONTAINS(diag_message(), "define BG_N");
    CHECK_STR_CONTAINS(diag_message(), "bgemm.cu"); /* #line points at the real file */
    buf_free(&b);

    rc = nvrtc_compile("x.cu", "", "gfx90a", NULL, 0, false, &out);
    CHECK(rc == -1);
    CHECK_STR_CONTAINS(diag_message(), "bad architecture");
    rc = nvrtc_compile("x.cu", "", "sm_1", NULL, 0, false, &out);
    CHECK(rc == -1);
    CHECK_STR_CONTAINS(diag_message(), "NVRTC");
}

int main(int argc, char **argv) {
    const bool sanitized = argc > 1 && strcmp(argv[1], "--sanitized") == 0;
    if (nvrtc_load() != 0) {
        const char *req = getenv("BNN_REQUIRE_NVRTC");
        fprintf(stderr, "test_nvrtc: %s\n", diag_message());
        if (req && strcmp(req, "1") == 0)
            return 1;
        printf("test_nvrtc: skipped (no NVRTC)\n");
        return 77;
    }
    int major = 0, minor = 0;
    CHECK(nvrtc_version(&major, &minor) == 0);
    printf("NVRTC %d.%d\n", major, minor);
    if (!sanitized) {
        compile_all("sm_90a");
        compile_all("sm_80");
        compile_halo_chain();
    }
    compile_defaults();
    compile_errors();
    return check_report("test_nvrtc");
}
