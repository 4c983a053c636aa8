/* test_planes_tiled: bgemm_planes_tiled.cu (the bit-plane GEMM on the pre-tiled pipeline)
 * without a GPU.
 * 1. The plane-tiled layout: bnn_tile_planes puts every word of every plane row where
 *    bnn_tiled_planes_offset says, and zeros everywhere else.
 * 1b. The plain-A gather (PT_APLAIN, the form bnncc emits): the stage image its producer builds
 *    from the plain planes equals the pre-tiled image's stage, byte for byte.
 * 2. The kernel's algebra, modelled on the host over the tiled images: one accumulator, plane
 *    pairs in the kernel's order (bnn_pt_pair), the Horner step (x2 when the shift drops,
 *    x-1 when the sign changes), the final sign and the bipolar correction from the
 *    bnn_planes_row_pop sums must equal the runtime's CPU bit-plane GEMM
 *    (rt_cpu_qgemm_planes) on signed, unsigned and bipolar weights, odd shapes, several row
 *    tiles, and K over several stages.
 * 3. NVRTC compiles the kernel for sm_90a (with tiled_common.cu: bulk copies, no XOR-popc;
 *    and the wgmma variant) and sm_80 (without it: 16-byte cp.async; no wgmma) for every spec,
 *    both epilogues, 255 levels, plain A (also on wgmma); for sm_80 the wgmma kernels compile
 *    to no kernel at all.
 * Part 3 is skipped (not failed) without libnvrtc unless BNN_REQUIRE_NVRTC=1, and left out
 * with --sanitized (the ASan / UBSan build: NVRTC's time, none of it instrumented). */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "ir.h"
#include "nvrtc.h"
#include "ptsrc.h"
#include "rt.h"
#include "util.h"

static const PtSpec specs[] = {
    {.n = 64, .k = 784, .xb = 2, .wb = 1, .wsigned = 1, .bipolar = 1, .epi = 2, .l = 3, .yb = 2}, /* w1a2 */
    {.n = 300, .k = 2500, .xb = 2, .wb = 2, .wsigned = 1, .epi = 2, .l = 3, .yb = 2},             /* w2a2 signed */
    {.n = 257, .k = 1000, .xb = 2, .wb = 2, .wsigned = 0, .epi = 1},                              /* w2a2 unsigned */
    {.n = 10, .k = 64, .xb = 2, .wb = 2, .wsigned = 1, .epi = 1, .kc = 2, .stages = 3},           /* output layer */
    {.n = 257, .k = 1000, .xb = 8, .wb = 8, .wsigned = 1, .epi = 2, .l = 255, .yb = 8},           /* w8a8 */
    {.n = 33, .k = 3, .xb = 3, .wb = 3, .wsigned = 0, .epi = 1},                                  /* K < 256 */
    {.n = 70, .k = 300, .xb = 4, .wb = 1, .wsigned = 1, .epi = 2, .l = 15, .yb = 4},              /* one -1 plane */
    {.n = 200, .k = 1500, .xb = 3, .wb = 1, .bipolar = 1, .epi = 1, .bm = 128, .bn = 128, .wm = 2, .wn = 2},
    {.n = 8192, .k = 8192, .xb = 2, .wb = 2, .wsigned = 1, .epi = 2, .l = 3, .yb = 2, .nostore = true},
    /* the wgmma variant (sm_90a only) */
    {.n = 64, .k = 784, .xb = 2, .wb = 1, .wsigned = 1, .bipolar = 1, .epi = 2, .l = 3, .yb = 2, .wgmma = true},
    {.n = 300, .k = 2500, .xb = 2, .wb = 2, .wsigned = 1, .epi = 2, .l = 3, .yb = 2, .wgmma = true},
    {.n = 257, .k = 1000, .xb = 2, .wb = 2, .wsigned = 0, .epi = 1, .kc = 4, .stages = 6, .wgmma = true},
    {.n = 257, .k = 1000, .xb = 8, .wb = 8, .wsigned = 1, .epi = 2, .l = 255, .yb = 8, .wgmma = true},
    {.n = 8192, .k = 8192, .xb = 2, .wb = 2, .wsigned = 1, .epi = 2, .l = 3, .yb = 2, .nostore = true, .wgmma = true},
    PT_SEARCH_SPECS,
    PT_APLAIN_SPECS,
};
enum { NSPECS = sizeof specs / sizeof *specs };

/* ---------------------------------------------------------------- 1. the layout */

static void check_layout(const PtSpec *s, const uint32_t *A, int M, int ld, const unsigned char *At) {
    const int kal = s->kc * 128, nch = bnn_tiled_kpad(s->k, kal) / 128;
    const size_t bytes = bnn_tiled_planes_bytes(M, s->xb, s->k, s->bm, kal);
    unsigned char *seen = xcalloc(bytes, 1);
    size_t bad = 0;
    for (int m = 0; m < M; m++)
        for (int p = 0; p < s->xb; p++)
            for (int c = 0; c < nch; c++) {
                size_t off = bnn_tiled_planes_offset(m, p, c, s->xb, s->k, s->bm, kal);
                for (int j = 0; j < 4; j++) {
                    int w = 4 * c + j;
                    uint32_t want = w < (s->k + 31) / 32 ? A[((size_t)m * s->xb + p) * ld + w] : 0, got;
                    if (w == (s->k + 31) / 32 - 1 && s->k % 32)
                        want &= (1u << (s->k % 32)) - 1;
                    memcpy(&got, At + off + 4 * j, 4);
                    bad += got != want;
                }
                memset(seen + off, 1, 16);
            }
    for (size_t i = 0; i < bytes; i++) /* every byte no row covers is padding: zero */
        bad += !seen[i] && At[i];
    CHECK_MSG(bad == 0, "plane-tiled layout: %zu words wrong (M=%d K=%d XB=%d)", bad, M, s->k, s->xb);
    free(seen);
}

/* ---------------------------------------------------------------- 1b. plain A */

/* The stage image PT_APLAIN's producer gathers from the plain planes (its produce(), line for
 * line: item i is chunk c of tile row r (bnn_pt_gather_item, copied here), at (c * BM + r) * 16,
 * from row m0 + r of plane p, zeros past M and past the row's ld words) is byte for byte the
 * pre-tiled image's stage, which the other producers copy whole, for every row tile, plane
 * and k stage: the main loop reads the same shared memory either way. The items cover every
 * (r, c) once. */
static void gather_item(int i, int bm, int *r, int *c) {
    const int w = i >> 5, lane = i & 31, rb = bm / 16;
    *r = (w % rb) * 16 + (lane & 15);
    *c = (w / rb) * 2 + (lane >> 4);
}
static void check_plain_gather(const PtSpec *s, const uint32_t *A, int M, int ld, const unsigned char *At) {
    const int kc = s->kc, bm = s->bm, nch = bnn_tiled_kpad(s->k, kc * 128) / 128, nkt = nch / kc;
    const size_t abytes = (size_t)kc * bm * 16;
    unsigned char *img = xmalloc(abytes);
    size_t bad = 0;
    for (int mt = 0; mt < (M + bm - 1) / bm; mt++)
        for (int p = 0; p < s->xb; p++)
            for (int kt = 0; kt < nkt; kt++) {
                const int m0 = mt * bm;
                const unsigned char *ga = (const unsigned char *)A + (((size_t)m0 * s->xb + p) * ld + (size_t)kt * kc * 4) * 4;
                memset(img, 0x5A, abytes); /* an item never written shows */
                for (int i = 0; i < kc * bm; i++) {
                    int r, c;
                    gather_item(i, bm, &r, &c);
                    unsigned char *dst = img + (size_t)(c * bm + r) * 16;
                    if (m0 + r < M && (kt * kc + c) * 4 < ld)
                        memcpy(dst, ga + (size_t)r * s->xb * ld * 4 + (size_t)c * 16, 16);
                    else
                        memset(dst, 0, 16);
                }
                const unsigned char *stage = At + (((size_t)mt * s->xb + p) * nch + (size_t)kt * kc) * bm * 16;
                for (size_t i = 0; i < abytes; i++)
                    bad += img[i] != stage[i];
            }
    CHECK_MSG(bad == 0, "plain-A gather: %zu bytes differ from the pre-tiled stages (M=%d K=%d XB=%d KC=%d)", bad, M,
              s->k, s->xb, kc);
    free(img);
}

/* ---------------------------------------------------------------- 2. the algebra */

/* bnn_pt_pair of the kernel, line for line. */
static void pt_pair(int i, int xb, int wb, int *p, int *q) {
    for (int s = xb + wb - 2; s >= 0; --s)
        for (int qq = (wb - 1 < s ? wb - 1 : s); qq >= 0 && s - qq < xb; --qq)
            if (i-- == 0) {
                *p = s - qq, *q = qq;
                return;
            }
    *p = *q = 0;
}

static int popc16(const unsigned char *a, const unsigned char *b) {
    int n = 0;
    for (int i = 0; i < 16; i++)
        n += __builtin_popcount((unsigned)(a[i] & b[i]));
    return n;
}

/* acc[m][n] as the kernel computes it from the tiled images. */
static void model_gemm(const PtSpec *s, int M, const unsigned char *At, const unsigned char *Wt, int32_t *acc) {
    const int kal = s->kc * 128, nch = bnn_tiled_kpad(s->k, kal) / 128, wp = pt_wplanes(s);
    const int np = s->xb * wp, neg = s->wsigned && !s->bipolar;
    for (int m = 0; m < M; m++) {
        int apop = 0; /* bnn_planes_row_pop */
        for (int p = 0; p < s->xb; p++)
            for (int c = 0; c < nch; c++) {
                const unsigned char *a = At + bnn_tiled_planes_offset(m, p, c, s->xb, s->k, s->bm, kal);
                apop += popc16(a, a) << p;
            }
        for (int n = 0; n < s->n; n++) {
            uint32_t v = 0; /* wrapping, as the kernel's int32 */
            int sprev = s->xb + wp - 2, cprev = 1;
            for (int i = 0; i < np; i++) {
                int p, q;
                pt_pair(i, s->xb, wp, &p, &q);
                int c = neg && q == wp - 1 ? -1 : 1;
                int f = (sprev - (p + q) == 1 ? 2 : 1) * (c == cprev ? 1 : -1);
                CHECK(sprev - (p + q) == 0 || sprev - (p + q) == 1 || i == 0);
                v *= (uint32_t)f;
                sprev = p + q, cprev = c;
                for (int ch = 0; ch < nch; ch++)
                    v += (uint32_t)popc16(At + bnn_tiled_planes_offset(m, p, ch, s->xb, s->k, s->bm, kal),
                                          Wt + bnn_tiled_planes_offset(n, q, ch, wp, s->k, s->bn, kal));
            }
            v *= (uint32_t)cprev;
            if (s->bipolar)
                v = 2u * v - (uint32_t)apop;
            acc[(size_t)m * s->n + n] = (int32_t)v;
        }
    }
}

static void check_algebra(int si, const PtSpec *s, int M) {
    uint32_t *A, *W;
    int ld;
    pt_random_operands(s, M, &A, &W, &ld);
    void *At, *Wt;
    size_t ab, wb;
    pt_tile_operands(s, A, W, M, ld, &At, &ab, &Wt, &wb);
    check_layout(s, A, M, ld, At);
    check_plain_gather(s, A, M, ld, At);
    int32_t *want = xmalloc((size_t)M * s->n * 4), *got = xmalloc((size_t)M * s->n * 4);
    rt_cpu_qgemm_planes(A, W, M, s->n, ld, s->xb, s->wb, s->wsigned, s->bipolar, want, NULL, NULL, 0, 0, NULL);
    model_gemm(s, M, At, Wt, got);
    size_t bad = 0;
    for (size_t i = 0; i < (size_t)M * s->n; i++)
        bad += got[i] != want[i];
    CHECK_MSG(bad == 0, "spec %d (M=%d N=%d K=%d w%da%d%s%s): %zu of %zu accumulators differ", si, M, s->n, s->k,
              s->wb, s->xb, s->bipolar ? " bipolar" : "", s->wsigned ? " signed" : "", bad, (size_t)M * s->n);
    free(A);
    free(W);
    free(At);
    free(Wt);
    free(want);
    free(got);
}

/* ---------------------------------------------------------------- 3. NVRTC */

static void compile_for(const char *arch) {
    bool sm90 = strcmp(arch, "sm_80") != 0;
    Buf b = {0};
    pt_head(&b, arch);
    int nk = 0;
    for (int i = 0; i < NSPECS; i++) {
        PtSpec s = specs[i];
        /* sm_80 gets the wgmma kernels too, as a model.cu for sm_90a,sm_80 gives them: they
         * must compile to nothing there (checked below) */
        nk++;
        pt_resolve(&s);
        char name[32];
        snprintf(name, sizeof name, "planes_tiled_%d", i);
        pt_append(&b, name, &s);
    }
    NvrtcOutput out;
    int rc = nvrtc_compile("bgemm_planes_tiled.cu", b.data, arch, NULL, 0, true, &out);
    CHECK_MSG(rc == 0, "%s: %s", arch, diag_message());
    if (rc == 0) {
        CHECK(out.cubin && out.cubin_size > 0);
        CHECK_MSG(strstr(out.ptx, "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc") != NULL,
                  "%s: no AND-popc mma.sync in the PTX", arch);
        CHECK_MSG(!strstr(out.ptx, "xor.popc"), "%s: XOR-popc in the PTX", arch);
        CHECK_MSG(!strstr(out.ptx, "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor"), "%s: XOR MMA", arch);
        CHECK_MSG((strstr(out.ptx, "cp.async.bulk.shared") != NULL) == sm90, "%s: bulk copies %s expected", arch,
                  sm90 ? "" : "not");
        CHECK_MSG(sm90 || strstr(out.ptx, "cp.async.cg.shared.global"), "%s: no 16-byte cp.async", arch);
        CHECK_MSG(strstr(out.ptx, ".entry bnn_planes_row_pop(") != NULL, "%s: no bnn_planes_row_pop", arch);
        CHECK_MSG((strstr(out.ptx, "wgmma.mma_async.sync.aligned.m64n256k256.s32.b1.b1.and.popc") != NULL) == sm90,
                  "%s: AND-popc wgmma %s expected", arch, sm90 ? "" : "not");
        for (int i = 0; i < NSPECS; i++) {
            char entry[48];
            snprintf(entry, sizeof entry, ".entry planes_tiled_%d(", i);
            CHECK_MSG((strstr(out.ptx, entry) != NULL) == (sm90 || !specs[i].wgmma), "%s: kernel %d %s", arch, i,
                      sm90 || !specs[i].wgmma ? "missing" : "(wgmma) present");
        }
        if (out.log && *out.log)
            printf("%s: NVRTC log: %s\n", arch, out.log);
        printf("%s: %d kernels, CUBIN %zu bytes\n", arch, nk, out.cubin_size);
        nvrtc_output_free(&out);
    }
    buf_free(&b);
}

/* blob.h's tensor map of plain A on wgmma (BLOB_ARG_TMAP_PLANES): the value round-trips into
 * the geometry the kernel's TMA copies assume, and malformed values are refused (the loader
 * relies on that). */
static void check_tmap_geometry(void) {
    uint64_t dims[3], strides[2];
    uint32_t box[3];
    const int64_t v = blob_tmap_planes_value(2, BNN_PLANES_TILED_KC, BNN_PLANES_TILED_BM, 256);
    CHECK(blob_tmap_planes_row_bytes(v) == 2 * 256 * 4);
    CHECK(blob_tmap_planes_geometry(v, 8192, dims, strides, box) == 3);
    CHECK(dims[0] == 256 && dims[1] == 2 && dims[2] == 8192);
    CHECK(strides[0] == 256 * 4 && strides[1] == 2 * 256 * 4);
    CHECK(box[0] == BNN_PLANES_TILED_KC * 4 && box[1] == 1 && box[2] == BNN_PLANES_TILED_BM);
    CHECK(box[0] * 4 == 128); /* a box row is the 128 bytes of the swizzle */
    static const struct {
        int xb, kc, bm;
        int64_t ld;
        uint64_t rows;
    } bad[] = {{0, 8, 128, 256, 1}, {9, 8, 128, 256, 1}, {2, 4, 128, 256, 1}, {2, 8, 0, 256, 1},
               {2, 8, 100, 256, 1}, {2, 8, 512, 256, 1}, {2, 8, 128, 6, 1}, {2, 8, 128, 0, 1},
               {2, 8, 128, 256, 0}, {2, 8, 128, (int64_t)1 << 25, 1}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK_MSG(blob_tmap_planes_geometry(blob_tmap_planes_value(bad[i].xb, bad[i].kc, bad[i].bm, bad[i].ld),
                                            bad[i].rows, dims, strides, box) == 0,
                  "malformed tensor map %zu accepted", i);
}

int main(int argc, char **argv) {
    static const int rows[] = {1, 5, 129, 300};
    check_tmap_geometry();
    int nalg = 0;
    for (int i = 0; i < NSPECS; i++) {
        PtSpec s = specs[i];
        pt_resolve(&s);
        if (s.n * s.k > 1000000 || s.wgmma) /* the bench shape: compiled only; wgmma: same algebra */
            continue;
        nalg++;
        for (size_t r = 0; r < sizeof rows / sizeof *rows; r++)
            check_algebra(i, &s, rows[r]);
    }
    printf("test_planes_tiled: layout and algebra of %d specs x %zu row counts\n", nalg, sizeof rows / sizeof *rows);
    if (argc > 1 && strcmp(argv[1], "--sanitized") == 0) { /* NVRTC's work: the plain build's run */
        printf("test_planes_tiled: NVRTC part left to the plain build\n");
        return check_report("test_planes_tiled");
    }
    if (nvrtc_load() != 0) {
        const char *req = getenv("BNN_REQUIRE_NVRTC");
        printf("test_planes_tiled: NVRTC part skipped: %s\n", diag_message());
        if (req && !strcmp(req, "1"))
            return 1;
        return check_report("test_planes_tiled");
    }
    compile_for("sm_90a");
    compile_for("sm_80");
    return check_report("test_planes_tiled");
}
