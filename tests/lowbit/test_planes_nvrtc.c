/* test_planes_nvrtc: bgemm_planes.cu (the bit-plane GEMM of qdense), qconv.cu (its
 * convolution, after common.cu) and qgemm_s8.cu (qdense on int8 codes) compile through NVRTC
 * without a GPU for sm_90a and sm_80: signed, unsigned and bipolar weight planes, the int32 and
 * the multi-level threshold epilogues, odd shapes, pad codes, several specializations in one
 * program; for int8 7- and 8-bit codes and every epilogue (int32, counts as bit-planes or
 * bytes, counts as int32), one and many K stages, and a bit-plane layer writing bytes
 * (PL_YFMT 1) and one counting 255 folded levels (PL_LFOLD), three int8 convolutions (Q8_CONV: image planes and int32 out; 4 warps of 64 x 64) and the converter
 * of image planes to bytes (Q8_U_NAME). The PTX must hold the AND-popc m16n8k256 mma.sync and
 * no XOR-popc, the m16n8k32 .s8.s8 and .u8.s8 mma.sync, ldmatrix and cp.async. Exit 77 (skipped) when
 * libnvrtc is not installed, unless BNN_REQUIRE_NVRTC=1. */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "ir.h"
#include "kernels.h"
#include "nvrtc.h"
#include "util.h"

extern const char bnn_bgemm_planes_cu[]; /* embedded by codegen/cuda/embed.py */
extern const char bnn_qconv_cu[];
extern const char bnn_common_cu[];
extern const char bnn_qgemm_s8_cu[];

/* qgemm_s8.cu: n, ld (bytes), xb, epi, l, yb, yfmt */
static const struct {
    int n, ld, xb, epi, l, yb, yfmt;
} q8s[] = {
    {4096, 4096, 4, 2, 15, 4, 1}, /* w4a4 hidden layer: bytes out */
    {257, 1024, 8, 2, 255, 8, 0}, /* w8a8 (.u8), odd N, planes out */
    {10, 64, 3, 1, 1, 1, 0},      /* an output layer: int32, one K stage */
    {33, 192, 8, 3, 7, 3, 0},     /* the counts as int32 */
};

static const struct {
    int n, k, xb, wb, wsigned, bipolar, epi, l, yb;
} specs[] = {
    {64, 784, 2, 1, 1, 1, 2, 3, 2},   /* TFC w1a2: bipolar weights, 2-bit codes out */
    {64, 64, 2, 2, 1, 0, 2, 3, 2},    /* w2a2 */
    {10, 64, 2, 2, 1, 0, 1, 1, 1},    /* an output layer: int32 */
    {257, 1000, 8, 8, 1, 0, 2, 255, 8}, /* w8a8, odd N */
    {33, 3, 3, 3, 0, 0, 1, 1, 1},     /* unsigned weights, K < 256 */
};

/* qconv.cu: c, h, w, o, k (square), stride, pad, xb, wb, wsigned, bipolar, pad code, epi, l, yb,
 * words a pixel in and out */
static const struct {
    int c, h, w, o, k, s, p, xb, wb, wsigned, bipolar, pad_code, epi, l, yb, ldw, ldy;
} convs[] = {
    {3, 32, 32, 64, 3, 1, 1, 2, 2, 1, 0, 0, 2, 3, 2, 1, 2},     /* w2a2 first layer */
    {65, 16, 16, 130, 3, 2, 1, 3, 1, 1, 1, 4, 2, 7, 3, 4, 8}, /* bipolar w1a3, stride 2, pad code 4 */
    {300, 7, 7, 10, 1, 1, 0, 2, 3, 0, 0, 0, 1, 1, 1, 16, 1},  /* unsigned w3, int32 out */
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
    buf_puts(&b, bnn_common_cu);
    int nk = (int)(sizeof specs / sizeof specs[0]), nc = (int)(sizeof convs / sizeof convs[0]);
    for (int i = 0; i < nc; i++) {
        int out = (convs[i].h + 2 * convs[i].p - convs[i].k) / convs[i].s + 1;
        buf_printf(&b,
                   "#define QC_NAME qconv_%d\n#define QC_C %d\n#define QC_H %d\n#define QC_W %d\n"
                   "#define QC_O %d\n#define QC_KH %d\n#define QC_KW %d\n#define QC_SH %d\n"
                   "#define QC_SW %d\n#define QC_PT %d\n#define QC_PL %d\n#define QC_OH %d\n"
                   "#define QC_OW %d\n#define QC_XB %d\n#define QC_WB %d\n#define QC_WSIGNED %d\n"
                   "#define QC_WBIPOLAR %d\n#define QC_PAD_CODE %d\n#define QC_EPI %d\n#define QC_L %d\n"
                   "#define QC_YB %d\n#define QC_LDW %d\n#define QC_LDY %d\n",
                   i, convs[i].c, convs[i].h, convs[i].w, convs[i].o, convs[i].k, convs[i].k, convs[i].s,
                   convs[i].s, convs[i].p, convs[i].p, out, out, convs[i].xb, convs[i].wb, convs[i].wsigned,
                   convs[i].bipolar, convs[i].pad_code, convs[i].epi, convs[i].l, convs[i].yb, convs[i].ldw,
                   convs[i].ldy);
        buf_puts(&b, bnn_qconv_cu);
        buf_puts(&b, "\n");
    }
    for (int i = 0; i < nk; i++) {
        buf_printf(&b,
                   "#define PL_NAME planes_%d\n#define PL_N %d\n#define PL_K %d\n#define PL_XB %d\n"
                   "#define PL_WB %d\n#define PL_WSIGNED %d\n#define PL_WBIPOLAR %d\n"
                   "#define PL_EPI %d\n#define PL_L %d\n#define PL_YB %d\n",
                   i, specs[i].n, specs[i].k, specs[i].xb, specs[i].wb, specs[i].wsigned,
                   specs[i].bipolar, specs[i].epi, specs[i].l, specs[i].yb);
        buf_puts(&b, bnn_bgemm_planes_cu);
        buf_puts(&b, "\n");
    }
    int nq = (int)(sizeof q8s / sizeof q8s[0]);
    buf_puts(&b, bnn_q8_levels_cu); /* once before the int8 kernels, as bnncc pastes it */
    for (int i = 0; i < nq; i++) {
        buf_printf(&b,
                   "#define Q8_NAME q8_%d\n#define Q8_N %d\n#define Q8_LD %d\n#define Q8_XB %d\n"
                   "#define Q8_EPI %d\n#define Q8_L %d\n#define Q8_YB %d\n#define Q8_YFMT %d\n",
                   i, q8s[i].n, q8s[i].ld, q8s[i].xb, q8s[i].epi, q8s[i].l, q8s[i].yb, q8s[i].yfmt);
        buf_puts(&b, bnn_qgemm_s8_cu);
        buf_puts(&b, "\n");
    }
    /* convolutions (Q8_CONV: a w4a4 3x3 into image planes with a pad code, a w8a8 stride-2 one
     * to int32 on 128 x 64 tiles, a w4a4 one of 128 channels on 4 warps of 64 x 64) and the
     * converter of image planes to bytes */
    buf_puts(&b, "#define Q8_NAME q8c_0\n#define Q8_CONV 1\n#define Q8_BK 128\n#define Q8_DYN 1\n#define Q8_N 96\n#define Q8_LD 640\n#define Q8_XB 4\n"
                 "#define Q8_EPI 2\n#define Q8_L 15\n#define Q8_YB 4\n#define Q8_BM 64\n#define Q8_H 56\n"
                 "#define Q8_W 56\n#define Q8_C 64\n#define Q8_CB 64\n#define Q8_KH 3\n#define Q8_KW 3\n"
                 "#define Q8_SH 1\n#define Q8_SW 1\n#define Q8_PT 1\n#define Q8_PL 1\n#define Q8_DH 1\n"
                 "#define Q8_DW 1\n#define Q8_OH 56\n#define Q8_OW 56\n#define Q8_PAD 8\n#define Q8_LDYW 4\n"
                 "#define Q8_YPLANE 12544\n");
    buf_puts(&b, bnn_qgemm_s8_cu);
    buf_puts(&b, "\n#define Q8_NAME q8c_1\n#define Q8_CONV 1\n#define Q8_N 64\n#define Q8_LD 320\n#define Q8_XB 8\n"
                 "#define Q8_EPI 1\n#define Q8_BM 128\n#define Q8_H 33\n#define Q8_W 33\n#define Q8_C 3\n"
                 "#define Q8_CB 32\n#define Q8_KH 3\n#define Q8_KW 3\n#define Q8_SH 2\n#define Q8_SW 2\n"
                 "#define Q8_PT 1\n#define Q8_PL 1\n#define Q8_DH 1\n#define Q8_DW 1\n#define Q8_OH 17\n"
                 "#define Q8_OW 17\n#define Q8_PAD 0\n#define Q8_LDYW 1\n#define Q8_YPLANE 296\n");
    buf_puts(&b, bnn_qgemm_s8_cu);
    buf_puts(&b, "\n#define Q8_NAME q8c_2\n#define Q8_CONV 1\n#define Q8_BK 128\n#define Q8_DYN 1\n#define Q8_N 128\n"
                 "#define Q8_LD 1152\n#define Q8_XB 4\n#define Q8_EPI 2\n#define Q8_L 15\n#define Q8_YB 4\n#define Q8_BM 128\n"
                 "#define Q8_BN 128\n#define Q8_WARPS 4\n#define Q8_WTN 64\n#define Q8_H 28\n#define Q8_W 28\n#define Q8_C 128\n"
                 "#define Q8_CB 128\n#define Q8_KH 3\n#define Q8_KW 3\n#define Q8_SH 1\n#define Q8_SW 1\n#define Q8_PT 1\n"
                 "#define Q8_PL 1\n#define Q8_DH 1\n#define Q8_DW 1\n#define Q8_OH 28\n#define Q8_OW 28\n#define Q8_PAD 0\n"
                 "#define Q8_LDYW 4\n#define Q8_YPLANE 3136\n");
    buf_puts(&b, bnn_qgemm_s8_cu);
    buf_puts(&b, "\n#define Q8_U_NAME q8u_0\n#define Q8_U_XB 4\n#define Q8_U_PIX 3136\n#define Q8_U_LDW 2\n"
                 "#define Q8_U_PLANE 6272\n");
    buf_puts(&b, bnn_qgemm_s8_cu);
    buf_puts(&b, "\n#define PL_NAME planes_y8\n#define PL_N 300\n#define PL_K 784\n#define PL_XB 2\n#define PL_WB 2\n"
                 "#define PL_EPI 2\n#define PL_L 3\n#define PL_YB 2\n#define PL_YFMT 1\n");
    buf_puts(&b, bnn_bgemm_planes_cu);
    /* past 15 levels, folded and sorted (PL_LFOLD: q8_levels.cu's searches, pasted above) */
    buf_puts(&b, "\n#define PL_NAME planes_fold\n#define PL_N 257\n#define PL_K 1000\n#define PL_XB 8\n#define PL_WB 8\n"
                 "#define PL_EPI 2\n#define PL_L 255\n#define PL_YB 8\n#define PL_LFOLD 1\n");
    buf_puts(&b, bnn_bgemm_planes_cu);
    static const char *const archs[] = {"sm_90a", "sm_80"};
    for (int a = 0; a < 2; a++) {
        NvrtcOutput out;
        int rc = nvrtc_compile("bgemm_planes.cu", b.data, archs[a], NULL, 0, true, &out);
        CHECK_MSG(rc == 0, "%s: %s", archs[a], diag_message());
        if (rc != 0)
            continue;
        CHECK(out.cubin && out.cubin_size > 0);
        CHECK_MSG(strstr(out.ptx, "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc"),
                  "%s: no AND-popc mma.sync in the PTX", archs[a]);
        CHECK_MSG(!strstr(out.ptx, "xor.popc"), "%s: XOR-popc in the PTX", archs[a]);
        CHECK_MSG(strstr(out.ptx, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32") &&
                      strstr(out.ptx, "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32"),
                  "%s: no s8.s8 / u8.s8 m16n8k32 mma.sync in the PTX", archs[a]);
        CHECK_MSG(strstr(out.ptx, "cp.async.cg.shared.global"), "%s: no cp.async in the PTX", archs[a]);
        CHECK_MSG(strstr(out.ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"), "%s: no ldmatrix in the PTX", archs[a]);
        CHECK_MSG(count_str(out.ptx, ".entry q8c_") == 3 && count_str(out.ptx, ".entry q8u_") == 1,
                  "%s: not the 3 int8 convolutions and the converter", archs[a]);
        CHECK_MSG(count_str(out.ptx, ".entry planes_") == nk + 2 && count_str(out.ptx, ".entry qconv_") == nc &&
                      count_str(out.ptx, ".entry q8_") == nq,
                  "%s: %d entries", archs[a], count_str(out.ptx, ".entry"));
        printf("%s: %d kernels, CUBIN %zu bytes, %d AND-popc and %d int8 MMAs in the PTX\n", archs[a],
               nk + nc + nq + 6, out.cubin_size, count_str(out.ptx, ".and.popc"),
               count_str(out.ptx, "m16n8k32.row.col.s32"));
        nvrtc_output_free(&out);
    }
    buf_free(&b);
    return check_report("test_planes_nvrtc");
}
