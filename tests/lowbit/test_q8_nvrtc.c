/* test_q8_nvrtc: qgemm_s8.cu (the low-bit GEMM on int8 codes) compiles through NVRTC without a
 * GPU for sm_90a and sm_80: 7- and 8-bit codes (.s8.s8 and .u8.s8), every epilogue (int32, the
 * counts as bit-planes and as bytes, the counts as int32), odd N, one and many K stages; and
 * bgemm_planes.cu with its counts as bytes (PL_YFMT 1, a bit-plane layer before an int8 one).
 * The PTX must hold the m16n8k32 int8 mma.sync and cp.async. Exit 77 (skipped) when libnvrtc
 * is not installed, unless BNN_REQUIRE_NVRTC=1. */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "ir.h"
#include "nvrtc.h"
#include "util.h"

extern const char bnn_qgemm_s8_cu[]; /* embedded by codegen/cuda/embed.py */
extern const char bnn_bgemm_planes_cu[];

static const struct {
    int n, ld, xb, epi, l, yb, yfmt;
} specs[] = {
    {4096, 4096, 4, 2, 15, 4, 1}, /* w4a4 hidden layer: bytes out */
    {257, 1024, 8, 2, 255, 8, 0}, /* w8a8, odd N, planes out */
    {10, 64, 3, 1, 1, 1, 0},      /* an output layer: int32, one K stage */
    {33, 192, 8, 3, 7, 3, 0},     /* the counts as int32 */
};

static int count_str(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

int main(void) {
    if (nvrtc_load() != 0) {
        const char *req = getenv("BNN_REQUIRE_NVRTC");
        printf("libnvrtc not available: %s\n", diag_message());
        return req && !strcmp(req, "1") ? 1 : 77;
    }
    Buf b = {0};
    int nk = (int)(sizeof specs / sizeof specs[0]);
    for (int i = 0; i < nk; i++) {
        buf_printf(&b,
                   "#define Q8_NAME q8_%d\n#define Q8_N %d\n#define Q8_LD %d\n#define Q8_XB %d\n"
                   "#define Q8_EPI %d\n#define Q8_L %d\n#define Q8_YB %d\n#define Q8_YFMT %d\n",
                   i, specs[i].n, specs[i].ld, specs[i].xb, specs[i].epi, specs[i].l, specs[i].yb, specs[i].yfmt);
        buf_puts(&b, bnn_qgemm_s8_cu);
        buf_puts(&b, "\n");
    }
    buf_puts(&b, "#define PL_NAME planes_y8\n#define PL_N 300\n#define PL_K 784\n#define PL_XB 2\n#define PL_WB 2\n"
                 "#define PL_EPI 2\n#define PL_L 3\n#define PL_YB 2\n#define PL_YFMT 1\n");
    buf_puts(&b, bnn_bgemm_planes_cu);
    static const char *const archs[] = {"sm_90a", "sm_80"};
    for (int a = 0; a < 2; a++) {
        NvrtcOutput out;
        int rc = nvrtc_compile("qgemm_s8.cu", b.data, archs[a], NULL, 0, true, &out);
        CHECK_MSG(rc == 0, "%s: %s", archs[a], diag_message());
        if (rc != 0)
            continue;
        CHECK(out.cubin && out.cubin_size > 0);
        CHECK_MSG(strstr(out.ptx, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"),
                  "%s: no s8.s8 m16n8k32 mma.sync in the PTX", archs[a]);
        CHECK_MSG(strstr(out.ptx, "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32"),
                  "%s: no u8.s8 m16n8k32 mma.sync in the PTX (8-bit codes)", archs[a]);
        CHECK_MSG(strstr(out.ptx, "cp.async.cg.shared.global"), "%s: no cp.async in the PTX", archs[a]);
        CHECK_MSG(count_str(out.ptx, ".entry q8_") == nk && count_str(out.ptx, ".entry planes_y8") == 1,
                  "%s: %d entries", archs[a], count_str(out.ptx, ".entry"));
        printf("%s: %d kernels, CUBIN %zu bytes, %d int8 MMAs in the PTX\n", archs[a], nk + 1, out.cubin_size,
               count_str(out.ptx, "m16n8k32.row.col.s32"));
        nvrtc_output_free(&out);
    }
    buf_free(&b);
    return check_report("test_q8_nvrtc");
}
