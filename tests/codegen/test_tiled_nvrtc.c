/* test_tiled_nvrtc.c: the pre-tiled bit-GEMM kernels (bgemm_tiled.cu, bgemm_wgmma.cu) compile
 * through NVRTC without a GPU: every epilogue, odd shapes, padded LDY, compiled-in M, several
 * specializations of both files in one program. For sm_90a the PTX must hold the AND-popc
 * mma.sync and wgmma instructions and no XOR-popc. sm_80 is refused with a clear error: both
 * files need cp.async.bulk and mbarrier transaction counts (sm_90), wgmma needs sm_90a.
 * Also checks the host tiling of tile_layout.c against its offset formula.
 * Exit 77 (skipped) when libnvrtc is not installed, unless BNN_REQUIRE_NVRTC=1; with
 * --sanitized (the ASan / UBSan build) the layout only: the compiles are NVRTC's time. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ir.h"
#include "kernels.h"
#include "nvrtc.h"
#include "tile_layout.h"
#include "tiledsrc.h"
#include "util.h"

static const TiledSpec specs[] = {
    {.kind = TK_MMA, .M = 1, .N = 10, .K = 784, .epi = BNN_EPI_I32},
    {.kind = TK_MMA, .N = 130, .K = 257, .epi = BNN_EPI_THRESHOLD, .ldy = 8},
    {.kind = TK_MMA, .N = 517, .K = 3000, .epi = BNN_EPI_AFFINE, .kc = 4, .stages = 6},
    {.kind = TK_MMA, .N = 512, .K = 4096, .epi = BNN_EPI_THRESHOLD, .bm = 128, .bn = 128, .wm = 2, .wn = 2},
    {.kind = TK_WGMMA, .M = 3, .N = 64, .K = 784, .epi = BNN_EPI_I32},
    {.kind = TK_WGMMA, .N = 130, .K = 257, .epi = BNN_EPI_THRESHOLD, .ldy = 8},
    {.kind = TK_WGMMA, .N = 517, .K = 3000, .epi = BNN_EPI_AFFINE, .kc = 4, .stages = 6},
    {.kind = TK_WGMMA, .N = 8192, .K = 8192, .epi = BNN_EPI_THRESHOLD, .nostore = true},
    {.kind = TK_WGMMA, .N = 517, .K = 3000, .epi = BNN_EPI_I32, .cluster = 2},
};

static int count_str(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void compile_all(void) {
    Buf b = {0};
    tiled_head(&b);
    int nk = 0;
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        TiledSpec s = specs[i];
        tiled_resolve(&s);
        char name[32];
        snprintf(name, sizeof name, "tiled_%zu", i);
        tiled_append(&b, name, &s);
        nk++;
    }
    NvrtcOutput out;
    int rc = nvrtc_compile("tiled_kernels.cu", b.data, "sm_90a", NULL, 0, true, &out);
    CHECK_MSG(rc == 0, "sm_90a: %s", diag_message());
    if (rc == 0) {
        CHECK(out.cubin && out.cubin_size > 0);
        CHECK(out.ptx && out.ptx_size > 0);
        CHECK_MSG(strstr(out.ptx, "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc") != NULL,
                  "no AND-popc mma.sync in the PTX");
        CHECK_MSG(strstr(out.ptx, "wgmma.mma_async.sync.aligned.m64n256k256.s32.b1.b1.and.popc") != NULL,
                  "no AND-popc wgmma in the PTX");
        CHECK_MSG(strstr(out.ptx, "xor.popc") == NULL, "XOR-popc in the PTX");
        CHECK_MSG(strstr(out.ptx, ".multicast::cluster") != NULL, "no multicast bulk copy in the PTX");
        CHECK_MSG(strstr(out.ptx, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes") != NULL,
                  "no bulk copy in the PTX");
        /* The specs, plus bnn_row_popc, bnn_conv_wprefix, bnn_tiled_row_popc and bnn_tiled_row_popc_c. */
        CHECK_MSG(count_str(out.ptx, ".entry") == nk + 4, "%d entries, expected %d", count_str(out.ptx, ".entry"),
                  nk + 4);
        for (int i = 0; i < nk; i++) {
            char name[40];
            snprintf(name, sizeof name, ".entry tiled_%d(", i);
            CHECK_MSG(strstr(out.ptx, name) != NULL, "no %s", name);
        }
        printf("sm_90a: %d kernels, CUBIN %zu bytes, PTX %zu bytes, %d AND-popc MMAs\n", nk, out.cubin_size,
               out.ptx_size, count_str(out.ptx, ".and.popc"));
        nvrtc_output_free(&out);
    }
    buf_free(&b);
}

/* Each file alone with only its required #defines; and the architectures it must refuse. */
static void compile_defaults_and_refusals(void) {
    static const struct {
        const char *defs, *arch;
        bool ok;
        const char *msg;
    } cases[] = {
        {"#define BT_N 10\n#define BT_K 784\n", "sm_90a", true, NULL},
        {"#define BW_N 10\n#define BW_K 784\n", "sm_90a", true, NULL},
        {"#define BT_N 10\n#define BT_K 784\n", "sm_80", false, "need sm_90"},
        {"#define BW_N 10\n#define BW_K 784\n", "sm_90", false, "needs sm_90a"},
        {"", "sm_90a", false, "define BT_N"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Buf b = {0};
        tiled_head(&b);
        buf_puts(&b, cases[i].defs);
        bool wg = strstr(cases[i].defs, "BW_") != NULL;
        buf_put(&b, wg ? bnn_bgemm_wgmma_cu : bnn_bgemm_tiled_cu, wg ? bnn_bgemm_wgmma_cu_len : bnn_bgemm_tiled_cu_len);
        NvrtcOutput out;
        int rc = nvrtc_compile("defaults.cu", b.data, cases[i].arch, NULL, 0, false, &out);
        if (cases[i].ok) {
            CHECK_MSG(rc == 0, "case %zu: %s", i, diag_message());
            CHECK(rc != 0 || out.cubin_size > 0);
            nvrtc_output_free(&out);
        } else {
            CHECK_MSG(rc == -1, "case %zu (%s) compiled", i, cases[i].arch);
            if (rc == -1)
                CHECK_STR_CONTAINS(diag_message(), cases[i].msg);
            else
                nvrtc_output_free(&out);
        }
        buf_free(&b);
    }
}

/* tile_layout.c: every bit lands at its documented offset; padding is zero. */
static void check_layout(void) {
    const int rows = 261, k = 1000, ld = 33, tr = 128, ka = 1024;
    uint32_t *src = xcalloc((size_t)rows * ld, 4);
    uint64_t x = 12345;
    for (size_t i = 0; i < (size_t)rows * ld; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        src[i] = (uint32_t)(x >> 32); /* bits past k set too: they must not reach the image */
    }
    size_t bytes = bnn_tiled_bytes(rows, k, tr, ka);
    CHECK(bytes == 3u * 128 * 8 * 16);
    unsigned char *img = xmalloc(bytes);
    memset(img, 0x5A, bytes);
    CHECK(bnn_tile_bits(src, rows, k, ld, tr, ka, img) == 0);
    size_t ones = 0, want_ones = 0;
    for (size_t i = 0; i < bytes; i++)
        ones += (size_t)__builtin_popcount(img[i]);
    int bad = 0;
    for (int r = 0; r < rows; r++)
        for (int kk = 0; kk < k; kk++) {
            int bit = (src[(size_t)r * ld + (size_t)(kk / 32)] >> (kk % 32)) & 1;
            want_ones += (size_t)bit;
            size_t off = bnn_tiled_offset(r, kk / 128, k, tr, ka) + (size_t)((kk % 128) / 8);
            bad += ((img[off] >> (kk % 8)) & 1) != bit;
        }
    CHECK_MSG(bad == 0, "%d bits misplaced", bad);
    CHECK_MSG(ones == want_ones, "%zu one bits in the image, %zu in the matrix (padding not zero)", ones, want_ones);
    int pop[3];
    bnn_row_popc_host(src, 3, k, ld, pop);
    for (int r = 0; r < 3; r++) {
        int s = 0;
        for (int kk = 0; kk < k; kk++)
            s += (src[(size_t)r * ld + (size_t)(kk / 32)] >> (kk % 32)) & 1;
        CHECK(pop[r] == s);
    }
    CHECK(bnn_tile_bits(src, rows, k, ld, tr, 1000, img) == -1);
    CHECK(bnn_tile_bits(src, rows, k, 31, tr, ka, img) == -1);
    free(img);
    free(src);
}

int main(int argc, char **argv) {
    check_layout();
    if (argc > 1 && strcmp(argv[1], "--sanitized") == 0) { /* NVRTC's work: the plain build's run */
        printf("test_tiled_nvrtc: the layout checked; NVRTC compiles left to the plain build\n");
        return check_report("test_tiled_nvrtc");
    }
    if (nvrtc_load() != 0) {
        const char *req = getenv("BNN_REQUIRE_NVRTC");
        fprintf(stderr, "test_tiled_nvrtc: %s\n", diag_message());
        if (req && strcmp(req, "1") == 0)
            return 1;
        printf("test_tiled_nvrtc: skipped (no NVRTC)\n");
        return 77;
    }
    compile_all();
    compile_defaults_and_refusals();
    return check_report("test_tiled_nvrtc");
}
