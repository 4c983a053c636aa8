/* testmodels.h: model.bin files built by hand with the blob writer, and a plain C
 * computation of the same math on unpacked ±1 values (no popcount, no packing) to check the
 * runtime against.
 *
 *   mlp:  x f32[N,100] -> pack -> bgemm 100->70 threshold -> bgemm 70->10 affine
 *         -> logits f32[N,10], argmax -> label i64[N,1]
 *   conv: x f32[N,3,13,11] -> pack -> bconv 3x3 pad 0-valued 1, 40 ch, threshold
 *         -> bconv 3x3 one-padding, 33 ch, threshold + 2x2 max-pool -> unpack -> bits f32[N,33,6,5]
 *         -> bconv 3x3 stride 2, (-1)-padding, 20 ch, i32 NCHW -> cast -> affine -> relu
 *         -> maxpool 2x2 s1 -> globalavgpool -> dense 20->10 -> add bias -> logits f32[N,10]
 *         -> copy -> logits2; and x -> conv2d float 3->4 3x3 s2 pad 1 -> avgpool 3x3 s2 pad 1
 *         (count_include_pad) -> stem f32[N,4,4,3]
 * Steps carry no GPU kernels unless `kernels` is given (see test_gpu.c). */
#ifndef BNN_TESTMODELS_H
#define BNN_TESTMODELS_H

#include <stdbool.h>
#include <stdint.h>

#include "blob.h"
#include "util.h"

uint64_t test_rand(uint64_t *state);
float test_randf(uint64_t *state); /* in [-1, 1), with exact zeros now and then */

/* GPU kernels for a model's steps, filled by test_gpu.c: called once per step with its
 * index, to set the step's kernel and arguments (may leave it without one). */
typedef void (*TestKernelFn)(BlobWriter *w, BlobStep *s, int index, void *user);

typedef struct TestMlp {
    int k0, n1, n2;
    int8_t *w1, *w2;      /* ±1, [n1][k0], [n2][n1] */
    int32_t *t1, *dir1;   /* [n1] */
    float *scale, *bias;  /* [n2] */
} TestMlp;

/* Build the MLP blob into out (appended); ref gets the parameters. */
void build_mlp(uint64_t seed, Buf *out, TestMlp *ref, TestKernelFn kernels, void *user);
void mlp_reference(const TestMlp *ref, int batch, const float *x, float *logits, int64_t *label);
void free_mlp(TestMlp *ref);

typedef struct TestConv {
    int8_t *w1, *w2, *w3;     /* ±1 [O][C][3][3] */
    int32_t *t1, *d1, *t2, *d2;
    float *sc3, *bi3;         /* affine after conv3, [20] */
    float *wd, *bd, *badd;    /* dense [10][20], its bias [10], the added bias [10] */
    float *ws, *bs;           /* float stem [4][3][3][3], [4] */
} TestConv;

void build_conv(uint64_t seed, Buf *out, TestConv *ref, TestKernelFn kernels, void *user);
/* Outputs: logits [N,10], logits2 [N,10], bits [N,33,6,5] (±1), stem [N,4,4,3]. */
void conv_reference(const TestConv *ref, int batch, const float *x, float *logits, float *bits,
                    float *stem);
void free_conv(TestConv *ref);

#define MLP_K0 100
#define CONV_IN (3 * 13 * 11)

#endif
