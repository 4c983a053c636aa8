/* mkblob: writes the hand-built test models of testmodels.c into a folder, with an input and
 * the expected outputs as .npy, for the command-line and example tests:
 *   DIR/mlp.bin  DIR/mlp_x.npy (f32 [5,100])  DIR/mlp_logits.npy  DIR/mlp_label.npy
 *   DIR/conv.bin DIR/conv_x.npy (f32 [3,3,13,11]) DIR/conv_{logits,logits2,bits,stem}.npy */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"
#include "testmodels.h"

static int save_npy(const char *dir, const char *name, NpyDtype dtype, int rank,
                    const int64_t *shape, void *data, size_t nbytes) {
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    NpyArray a = {.dtype = dtype, .rank = rank, .data = data, .nbytes = nbytes};
    memcpy(a.shape, shape, (size_t)rank * sizeof *shape);
    if (npy_write(path, &a, err, sizeof err) != 0) {
        fprintf(stderr, "mkblob: %s\n", err);
        return -1;
    }
    return 0;
}

static int save_blob(const char *dir, const char *name, const Buf *b) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (write_file_atomic(path, b->data, b->len) != 0) {
        fprintf(stderr, "mkblob: cannot write %s\n", path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: mkblob DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    uint64_t seed = 42;
    int rc = 0;

    TestMlp mlp;
    Buf b = {0};
    build_mlp(1, &b, &mlp, NULL, NULL);
    float x[5 * MLP_K0], logits[50];
    int64_t label[5];
    for (int i = 0; i < 5 * MLP_K0; i++)
        x[i] = test_randf(&seed);
    mlp_reference(&mlp, 5, x, logits, label);
    int64_t xs[2] = {5, MLP_K0}, ls[2] = {5, 10}, as[2] = {5, 1};
    rc |= save_blob(dir, "mlp.bin", &b);
    rc |= save_npy(dir, "mlp_x.npy", NPY_F32, 2, xs, x, sizeof x);
    rc |= save_npy(dir, "mlp_logits.npy", NPY_F32, 2, ls, logits, sizeof logits);
    rc |= save_npy(dir, "mlp_label.npy", NPY_I64, 2, as, label, sizeof label);
    buf_free(&b);
    free_mlp(&mlp);

    TestConv conv;
    build_conv(2, &b, &conv, NULL, NULL);
    static float cx[3 * CONV_IN], cl[30], cb[3 * 990], cs[3 * 48];
    for (int i = 0; i < 3 * CONV_IN; i++)
        cx[i] = test_randf(&seed);
    conv_reference(&conv, 3, cx, cl, cb, cs);
    int64_t cxs[4] = {3, 3, 13, 11}, cls[2] = {3, 10}, cbs[4] = {3, 33, 6, 5}, css[4] = {3, 4, 4, 3};
    rc |= save_blob(dir, "conv.bin", &b);
    rc |= save_npy(dir, "conv_x.npy", NPY_F32, 4, cxs, cx, sizeof cx);
    rc |= save_npy(dir, "conv_logits.npy", NPY_F32, 2, cls, cl, sizeof cl);
    rc |= save_npy(dir, "conv_logits2.npy", NPY_F32, 2, cls, cl, sizeof cl);
    rc |= save_npy(dir, "conv_bits.npy", NPY_F32, 4, cbs, cb, sizeof cb);
    rc |= save_npy(dir, "conv_stem.npy", NPY_F32, 4, css, cs, sizeof cs);
    buf_free(&b);
    free_conv(&conv);
    return rc ? 1 : 0;
}
