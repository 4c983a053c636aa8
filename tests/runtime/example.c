/* example.c: the complete example of docs/runtime.md, built in CI against libbnnrt alone
 * (bnnrt.h, -lbnnrt). Loads a model.bin, prints its inputs and outputs, runs a batch of
 * zeros on the chosen device and prints the first values of each output.
 *
 *   cc example.c $(pkg-config --cflags --libs bnnrt) -o example
 *   ./example model.bin [gpu|cpu|auto] */
#include <bnnrt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_info(const char *what, const bnn_tensor_info *t) {
    printf("%s '%s': %s[", what, t->name, bnn_dtype_name(t->dtype));
    for (int d = 0; d < t->rank; d++)
        printf(t->dims[d] < 0 ? "%sN" : "%s%lld", d ? "," : "", (long long)t->dims[d]);
    printf("], %zu bytes per item\n", t->item_bytes);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: example model.bin [gpu|cpu|auto]\n");
        return 2;
    }
    bnn_device device = BNN_DEVICE_AUTO;
    if (argc > 2 && !strcmp(argv[2], "gpu"))
        device = BNN_DEVICE_GPU;
    if (argc > 2 && !strcmp(argv[2], "cpu"))
        device = BNN_DEVICE_CPU;
    enum { BATCH = 2, MAX_IO = 16 };

    bnn_model *model = NULL;
    bnn_session *session = NULL;
    void *inputs[MAX_IO] = {0}, *outputs[MAX_IO] = {0};
    int nin = 0, nout = 0, rc = 1;
    bnn_status st = bnn_model_load_file(argv[1], &model);
    if (st != BNN_STATUS_OK)
        goto fail;
    nin = bnn_model_num_inputs(model);
    nout = bnn_model_num_outputs(model);
    if (nin > MAX_IO || nout > MAX_IO) {
        fprintf(stderr, "example: too many inputs or outputs\n");
        goto done;
    }
    bnn_tensor_info info;
    for (int i = 0; i < nin; i++) {
        bnn_model_input_info(model, i, &info);
        print_info("input", &info);
        inputs[i] = calloc(BATCH, info.item_bytes); /* a batch of zeros */
    }
    for (int i = 0; i < nout; i++) {
        bnn_model_output_info(model, i, &info);
        print_info("output", &info);
        outputs[i] = calloc(BATCH, info.item_bytes);
    }
    st = bnn_session_create(model, device, BATCH, &session);
    if (st != BNN_STATUS_OK)
        goto fail;
    printf("device: %s\n", bnn_session_device_name(session));
    st = bnn_session_run(session, BATCH, (const void *const *)inputs, outputs);
    if (st != BNN_STATUS_OK)
        goto fail;
    for (int i = 0; i < nout; i++) {
        bnn_model_output_info(model, i, &info);
        if (info.dtype == BNN_DTYPE_F32)
            printf("output %d: first value %g\n", i, (double)((const float *)outputs[i])[0]);
        else if (info.dtype == BNN_DTYPE_I64)
            printf("output %d: first value %lld\n", i, (long long)((const int64_t *)outputs[i])[0]);
    }
    printf("ran a batch of %d in %.3f ms\n", BATCH, bnn_session_last_run_ms(session));
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "example: %s: %s\n", bnn_status_str(st), bnn_last_error());
done:
    for (int i = 0; i < MAX_IO; i++) {
        free(inputs[i]);
        free(outputs[i]);
    }
    bnn_session_free(session);
    bnn_model_free(model);
    return rc;
}
