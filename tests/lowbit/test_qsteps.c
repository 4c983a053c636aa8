/* test_qsteps: the runtime's low-bit plan steps (quantize, qgemm in runtime/rt_cpu.c, formats in
 * docs/blob-format.md) against the reference interpreter's quantize and qdense on the same
 * data: f32 -> quantize (bit-planes) -> qgemm with thresholds (output planes) -> qgemm (int32),
 * plus the counts epilogue, and the same chain on int8 codes (quantize to bytes, int8 qgemm with
 * its counts as bytes and as planes, the counts epilogue); random bit widths, signedness, narrow ranges, rounding modes, zero
 * points, ±1 (bipolar) and two's-complement weights, odd sizes, several batch items. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "ir.h"
#include "rt.h"
#include "util.h"

static uint32_t rng_state = 31337;
static int rnd(int lo, int hi) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return lo + (int)((rng_state >> 8) % (uint32_t)(hi - lo + 1));
}

static const char *const mode_names[] = {"ROUND", "CEIL", "FLOOR", "ROUND_TO_ZERO", "UP",
                                         "HALF_UP", "HALF_DOWN"};

static Value *const_of(Graph *g, const char *name, Type t, const void *data) {
    size_t n = type_nbytes(&t, 1);
    void *copy = xmalloc(n);
    memcpy(copy, data, n);
    return add_const(g, name, t, copy, n);
}

static Node *node_of(Graph *g, Op op, int nin, Value **in, const char *name) {
    const char *names[1] = {name};
    Type t = make_type(TY_F32, 0, NULL);
    Node *n = add_node(g, op, nin, in, names, &t);
    return n;
}

static void finish(Node *n) {
    Type t[MAX_OUTPUTS];
    if (infer_node_types(n, t) != 0) {
        fprintf(stderr, "cannot infer: %s\n", diag_message());
        exit(2);
    }
    n->out[0]->type = t[0];
}

static int bits_for(int lo, int hi) { /* two's complement (lo < 0) or unsigned */
    int b = 1;
    while (lo < -(1 << (b - 1)) || hi > (lo < 0 ? (1 << (b - 1)) - 1 : (1 << b) - 1))
        b++;
    return b;
}

/* Weight planes [wb][n][ld] of codes u[n][k] (bipolar: the single plane u > 0). */
static void pack_weights(const int8_t *u, int64_t n, int64_t k, int64_t ld, int wb, bool bipolar,
                         uint32_t *out) {
    memset(out, 0, (size_t)(wb * n * ld) * 4);
    for (int q = 0; q < wb; q++)
        for (int64_t o = 0; o < n; o++)
            for (int64_t i = 0; i < k; i++) {
                int bit = bipolar ? u[o * k + i] > 0 : ((uint8_t)u[o * k + i] >> q) & 1;
                out[(q * n + o) * ld + i / 32] |= (uint32_t)bit << (i % 32);
            }
}

static int64_t float_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (int64_t)u;
}

static void check_chain(int trial) {
    int64_t B = rnd(1, 4), K = rnd(1, 300), O1 = rnd(1, 70), O2 = rnd(1, 20);
    int bits = rnd(1, 8), is_signed = rnd(0, 1), narrow = bits > 1 ? rnd(0, 1) : 0;
    int mode = rnd(0, 6);
    int lo = is_signed ? -(1 << (bits - 1)) + narrow : 0;
    int hi = is_signed ? (1 << (bits - 1)) - 1 : (1 << bits) - 1 - narrow;
    float scale = rnd(0, 1) ? ldexpf(1.0f, rnd(-3, 1)) : 0.01f * (float)rnd(1, 100);
    float zp = rnd(0, 2) ? 0.0f : (float)rnd(-2, 2);
    int xb = bits_for(0, hi - lo);
    bool bip1 = rnd(0, 2) == 0, bip2 = false;
    int L = rnd(1, 7), yb = bits_for(0, L);
    int8_t *u1 = xmalloc((size_t)(O1 * K)), *u2 = xmalloc((size_t)(O2 * O1));
    int w1lo = rnd(-128, 0), w1hi = rnd(0, 127);
    for (int64_t i = 0; i < O1 * K; i++)
        u1[i] = (int8_t)(bip1 ? (rnd(0, 1) ? 1 : -1) : rnd(w1lo, w1hi));
    for (int64_t i = 0; i < O2 * O1; i++)
        u2[i] = (int8_t)rnd(-3, 3);
    int wb1 = bip1 ? 1 : bits_for(w1lo, w1hi), wb2 = bits_for(-3, 3);
    bool ws1 = !bip1 && w1lo < 0;
    if (!bip1 && w1lo >= 0)
        wb1 = bits_for(0, w1hi);
    int32_t *t1 = xmalloc((size_t)(O1 * L) * 4), *dir1 = xmalloc((size_t)O1 * 4);
    int8_t *dir8 = xmalloc((size_t)O1);
    for (int64_t o = 0; o < O1; o++) {
        dir1[o] = rnd(0, 1) ? 1 : -1;
        dir8[o] = (int8_t)dir1[o];
        for (int l = 0; l < L; l++)
            t1[o * L + l] = rnd(-400, 400);
    }
    float *x = xmalloc((size_t)(B * K) * 4);
    for (int64_t i = 0; i < B * K; i++)
        x[i] = rnd(0, 2) ? (float)rnd(-40, 40) * 0.5f * scale : (float)rnd(-4000, 4000) * 0.01f;

    /* The reference: quantize -> qdense(t) -> qdense, and the counts as outputs. */
    Graph *g = new_graph("qsteps");
    int64_t xd[2] = {DIM_BATCH, K}, w1d[2] = {O1, K}, w2d[2] = {O2, O1}, td[2] = {O1, L};
    Value *xv = add_input(g, "x", make_type(TY_F32, 2, xd));
    float bw = (float)bits;
    Value *qin[4] = {xv, const_of(g, "s", make_type(TY_F32, 0, NULL), &scale),
                     const_of(g, "z", make_type(TY_F32, 0, NULL), &zp),
                     const_of(g, "b", make_type(TY_F32, 0, NULL), &bw)};
    Node *qz = node_of(g, OP_QUANTIZE, 4, qin, "codes");
    set_attr_int(qz, "signed", is_signed);
    set_attr_int(qz, "narrow", narrow);
    set_attr_str(qz, "rounding", mode_names[mode]);
    finish(qz);
    Value *d1in[4] = {qz->out[0], const_of(g, "w1", make_type(TY_I8, 2, w1d), u1),
                      const_of(g, "t1", make_type(TY_I32, 2, td), t1),
                      const_of(g, "d1", make_type(TY_I8, 1, &O1), dir8)};
    Node *d1 = node_of(g, OP_QDENSE, 4, d1in, "h");
    set_attr_int(d1, "xbits", xb);
    finish(d1);
    Value *d2in[2] = {d1->out[0], const_of(g, "w2", make_type(TY_I8, 2, w2d), u2)};
    Node *d2 = node_of(g, OP_QDENSE, 2, d2in, "y");
    set_attr_int(d2, "xbits", yb);
    finish(d2);
    add_output(g, d2->out[0]);
    add_output(g, d1->out[0]);
    int64_t bd[2] = {B, K};
    Tensor in = {make_type(TY_F32, 2, bd), x, (size_t)(B * K) * 4}, ref[2];
    CHECK_MSG(interp_run(g, &in, ref) == 0, "%s", diag_message());

    /* The plan: weights and arena laid out by hand, 64-byte aligned. */
    int64_t ld1 = (K + 255) / 256 * 8, ld2 = (O1 + 255) / 256 * 8;
    size_t ow1 = 0, ot1 = ow1 + (size_t)(wb1 * O1 * ld1) * 4;
    ot1 = (ot1 + 63) / 64 * 64;
    size_t od1 = (ot1 + (size_t)(O1 * L) * 4 + 63) / 64 * 64;
    size_t ow2 = (od1 + (size_t)O1 * 4 + 63) / 64 * 64;
    size_t wsize = ow2 + (size_t)(wb2 * O2 * ld2) * 4;
    unsigned char *wbuf = xcalloc(wsize, 1);
    pack_weights(u1, O1, K, ld1, wb1, bip1, (uint32_t *)(wbuf + ow1));
    memcpy(wbuf + ot1, t1, (size_t)(O1 * L) * 4);
    memcpy(wbuf + od1, dir1, (size_t)O1 * 4);
    pack_weights(u2, O2, O1, ld2, wb2, bip2, (uint32_t *)(wbuf + ow2));
    uint64_t sz_x = (uint64_t)K * 4, sz_p1 = (uint64_t)(xb * ld1) * 4;
    uint64_t sz_p2 = (uint64_t)(yb * ld2) * 4, sz_y = (uint64_t)O2 * 4, sz_c = (uint64_t)O1 * 4;
    uint64_t o_x = 0, o_p1 = o_x + sz_x, o_p2 = o_p1 + sz_p1, o_y = o_p2 + sz_p2, o_c = o_y + sz_y;
    unsigned char *arena = xcalloc((size_t)((o_c + sz_c) * (uint64_t)B), 1);
    memcpy(arena, x, (size_t)(B * K) * 4); /* o_x = 0: item i at i * sz_x */
    bnn_model m;
    memset(&m, 0, sizeof m);
    m.weights = wbuf;
    m.weights_size = wsize;
#define ARENA(off, sz) ((BlobRef){BLOB_SPACE_ARENA, 0, (off), (sz)})
#define WEIGHTS(off, sz) ((BlobRef){BLOB_SPACE_WEIGHTS, 0, (off), (sz)})
    BlobStep s1, s2, s3, s4;
    memset(&s1, 0, sizeof s1);
    s1.kind = BLOB_STEP_QUANTIZE;
    s1.slot[BLOB_SLOT_IN] = ARENA(o_x, sz_x);
    s1.slot[BLOB_SLOT_OUT] = ARENA(o_p1, sz_p1);
    s1.quantize =
        (BlobQuantizeParams){1, K, ld1, xb, lo, hi, mode, float_bits(scale), float_bits(zp), 0, 0, 0};
    memset(&s2, 0, sizeof s2);
    s2.kind = BLOB_STEP_QGEMM;
    s2.slot[BLOB_SLOT_IN] = ARENA(o_p1, sz_p1);
    s2.slot[BLOB_SLOT_OUT] = ARENA(o_p2, sz_p2);
    s2.slot[BLOB_SLOT_W] = WEIGHTS(ow1, (uint64_t)(wb1 * O1 * ld1) * 4);
    s2.slot[BLOB_SLOT_P0] = WEIGHTS(ot1, (uint64_t)(O1 * L) * 4);
    s2.slot[BLOB_SLOT_P1] = WEIGHTS(od1, (uint64_t)O1 * 4);
    s2.qgemm = (BlobQgemmParams){1, O1, ld1, xb, wb1, ws1, bip1, 2, L, yb, 0, 0};
    s4 = s2; /* the counts epilogue: i32 into the count buffer */
    s4.slot[BLOB_SLOT_OUT] = ARENA(o_c, sz_c);
    s4.qgemm.epi = 3;
    memset(&s3, 0, sizeof s3);
    s3.kind = BLOB_STEP_QGEMM;
    s3.slot[BLOB_SLOT_IN] = ARENA(o_p2, sz_p2);
    s3.slot[BLOB_SLOT_OUT] = ARENA(o_y, sz_y);
    s3.slot[BLOB_SLOT_W] = WEIGHTS(ow2, (uint64_t)(wb2 * O2 * ld2) * 4);
    s3.qgemm = (BlobQgemmParams){1, O2, ld2, yb, wb2, 1, 0, 1, 0, 0, 0, 0};
    rt_cpu_run_step(&m, &s1, arena, (int)B, NULL);
    rt_cpu_run_step(&m, &s2, arena, (int)B, NULL);
    rt_cpu_run_step(&m, &s3, arena, (int)B, NULL);
    rt_cpu_run_step(&m, &s4, arena, (int)B, NULL);
    const int32_t *y = (const int32_t *)(arena + o_y * (uint64_t)B);
    const int32_t *cnt = (const int32_t *)(arena + o_c * (uint64_t)B);
    CHECK_MSG(memcmp(y, ref[0].data, (size_t)(B * O2) * 4) == 0,
              "trial %d: qgemm chain differs from the interpreter (K=%lld, %d-bit %s %s, w%d%s)",
              trial, (long long)K, bits, is_signed ? "signed" : "unsigned", mode_names[mode], wb1,
              bip1 ? " bipolar" : "");
    CHECK_MSG(memcmp(cnt, ref[1].data, (size_t)(B * O1) * 4) == 0,
              "trial %d: qgemm counts differ from the interpreter", trial);

    /* The same chain on int8 codes (format BLOB_CODES_INT8): quantize to bytes, the first
     * layer's counts as bytes into an int8 layer and as planes into a bit-plane layer, the
     * counts epilogue: all equal to the interpreter. */
    int64_t l81 = blob_int8_ld(K), l82 = blob_int8_ld(O1);
    size_t w8a = 0, w8b = (size_t)(O1 * l81 + 63) / 64 * 64;
    size_t w8size = w8b + (size_t)(O2 * l82);
    size_t t8 = (w8size + 63) / 64 * 64, d8 = t8 + (od1 - ot1); /* t1, dir1 after them */
    unsigned char *w8 = xcalloc(d8 + (size_t)O1 * 4, 1);
    for (int64_t o = 0; o < O1; o++)
        memcpy(w8 + w8a + (size_t)(o * l81), u1 + o * K, (size_t)K);
    for (int64_t o = 0; o < O2; o++)
        memcpy(w8 + w8b + (size_t)(o * l82), u2 + o * O1, (size_t)O1);
    memcpy(w8 + t8, t1, (size_t)(O1 * L) * 4);
    memcpy(w8 + d8, dir1, (size_t)O1 * 4);
    m.weights = w8;
    m.weights_size = d8 + (size_t)O1 * 4;
    uint64_t z_x = (uint64_t)K * 4, z_a = ((uint64_t)l81 + 63) / 64 * 64, z_h = ((uint64_t)l82 + 63) / 64 * 64;
    uint64_t z_hp = sz_p2, z_y = sz_y, z_c = sz_c;
    uint64_t q_x = 0, q_a = q_x + z_x, q_h = q_a + z_a, q_hp = q_h + z_h, q_y = q_hp + z_hp, q_y2 = q_y + z_y,
             q_c = q_y2 + z_y;
    unsigned char *ar8 = xcalloc((size_t)((q_c + z_c) * (uint64_t)B), 1);
    memcpy(ar8, x, (size_t)(B * K) * 4);
    BlobStep e[6];
    memset(e, 0, sizeof e);
    e[0] = s1;
    e[0].slot[BLOB_SLOT_IN] = ARENA(q_x, z_x);
    e[0].slot[BLOB_SLOT_OUT] = ARENA(q_a, z_a);
    e[0].quantize.ld = l81;
    e[0].quantize.format = BLOB_CODES_INT8;
    e[1] = s2; /* int8 layer, counts as bytes */
    e[1].slot[BLOB_SLOT_IN] = ARENA(q_a, z_a);
    e[1].slot[BLOB_SLOT_OUT] = ARENA(q_h, z_h);
    e[1].slot[BLOB_SLOT_W] = WEIGHTS(w8a, (uint64_t)(O1 * l81));
    e[1].slot[BLOB_SLOT_P0] = WEIGHTS(t8, (uint64_t)(O1 * L) * 4);
    e[1].slot[BLOB_SLOT_P1] = WEIGHTS(d8, (uint64_t)O1 * 4);
    e[1].qgemm.ld = l81;
    e[1].qgemm.format = BLOB_CODES_INT8;
    e[1].qgemm.yformat = BLOB_CODES_INT8;
    e[2] = e[1]; /* the same layer, counts as bit-planes */
    e[2].slot[BLOB_SLOT_OUT] = ARENA(q_hp, z_hp);
    e[2].qgemm.yformat = BLOB_CODES_PLANES;
    e[3] = s3; /* int8 layer over the bytes, i32 out */
    e[3].slot[BLOB_SLOT_IN] = ARENA(q_h, z_h);
    e[3].slot[BLOB_SLOT_OUT] = ARENA(q_y, z_y);
    e[3].slot[BLOB_SLOT_W] = WEIGHTS(w8b, (uint64_t)(O2 * l82));
    e[3].qgemm.ld = l82;
    e[3].qgemm.format = BLOB_CODES_INT8;
    e[4] = s3; /* the planes layer over the int8 layer's planes (the old weights) */
    e[4].slot[BLOB_SLOT_IN] = ARENA(q_hp, z_hp);
    e[4].slot[BLOB_SLOT_OUT] = ARENA(q_y2, z_y);
    e[5] = e[1]; /* the counts epilogue */
    e[5].slot[BLOB_SLOT_OUT] = ARENA(q_c, z_c);
    e[5].qgemm.epi = 3;
    e[5].qgemm.yformat = 0;
    for (int i = 0; i < 6; i++) { /* step 4 reads the bit-plane weights */
        m.weights = i == 4 ? wbuf : w8;
        m.weights_size = i == 4 ? wsize : d8 + (size_t)O1 * 4;
        rt_cpu_run_step(&m, &e[i], ar8, (int)B, NULL);
    }
    CHECK_MSG(memcmp(ar8 + q_y * B, ref[0].data, (size_t)(B * O2) * 4) == 0,
              "trial %d: int8 qgemm chain differs from the interpreter (K=%lld, %d-bit %s, w%d%s)", trial,
              (long long)K, bits, is_signed ? "signed" : "unsigned", wb1, bip1 ? " bipolar" : "");
    CHECK_MSG(memcmp(ar8 + q_y2 * B, ref[0].data, (size_t)(B * O2) * 4) == 0,
              "trial %d: int8 layer into a bit-plane layer differs from the interpreter", trial);
    CHECK_MSG(memcmp(ar8 + q_c * B, ref[1].data, (size_t)(B * O1) * 4) == 0,
              "trial %d: int8 qgemm counts differ from the interpreter", trial);
    free(ar8);
    free(w8);
    free_tensor(&ref[0]);
    free_tensor(&ref[1]);
    free_graph(g);
    free(u1);
    free(u2);
    free(t1);
    free(dir1);
    free(dir8);
    free(x);
    free(wbuf);
    free(arena);
}

int main(void) {
    for (int trial = 0; trial < 300; trial++)
        check_chain(trial);
    return check_report("test_qsteps");
}
