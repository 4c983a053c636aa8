/* fuzz_blob.c: libFuzzer target for the blob loader. Built (clang, -Dfuzz=true) with the
 * runtime's sources compiled under BNN_FUZZING, which skips the checksum comparisons so that
 * mutations reach the semantic checks. A blob that loads is also run on the CPU at batch 1
 * and 2 when it is small: what the loader accepts must be safe to run.
 *   build-fuzz/tests/runtime/fuzz_blob -max_total_time=60 CORPUS_DIR
 * (seed the corpus with the .bin files tests/runtime/mkblob writes). Without libFuzzer
 * (BNN_FUZZ_MAIN) the same code runs over files named on the command line, so the quick
 * suite can replay saved crashers. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bnnrt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_IO_BYTES = 1 << 20 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bnn_model *m = NULL;
    if (bnn_model_load_memory(data, size, &m) != BNN_STATUS_OK)
        return 0;
    int nin = bnn_model_num_inputs(m), nout = bnn_model_num_outputs(m);
    void *in[16] = {0}, *out[16] = {0};
    bool ok = nin <= 16 && nout <= 16;
    bnn_tensor_info info;
    for (int i = 0; ok && i < nin + nout; i++) {
        if (i < nin)
            bnn_model_input_info(m, i, &info);
        else
            bnn_model_output_info(m, i - nin, &info);
        ok = info.item_bytes <= MAX_IO_BYTES;
        if (ok) {
            void *p = calloc(2, info.item_bytes ? info.item_bytes : 1);
            if (i < nin)
                in[i] = p;
            else
                out[i - nin] = p;
        }
    }
    bnn_session *s = NULL;
    /* Compute time is bounded by the loader's size limits, not by this target: a large but
     * valid plan can still be slow, which libFuzzer reports as a timeout, not a crash. */
    if (ok && bnn_session_create(m, BNN_DEVICE_CPU, 2, &s) == BNN_STATUS_OK) {
        bnn_session_run(s, 1, (const void *const *)in, out);
        bnn_session_run(s, 2, (const void *const *)in, out);
    }
    bnn_session_free(s);
    for (int i = 0; i < 16; i++) {
        free(in[i]);
        free(out[i]);
    }
    bnn_model_free(m);
    return 0;
}

#ifdef BNN_FUZZ_MAIN
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            fprintf(stderr, "fuzz_blob: cannot open %s\n", argv[i]);
            return 1;
        }
        static uint8_t buf[1 << 22];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, n);
    }
    printf("fuzz_blob: replayed %d inputs\n", argc - 1);
    return 0;
}
#endif
