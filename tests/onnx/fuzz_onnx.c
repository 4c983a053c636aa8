/* fuzz_onnx.c: libFuzzer target for the ONNX reader and importer (-Dfuzz=true with
 * clang). Any input must give a graph or a diagnostic, never a crash or a leak. */
#include <stddef.h>
#include <stdint.h>

#include "frontend.h"
#include "onnx_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Buf report = {0};
    Graph *g = import_onnx_memory("fuzz.onnx", data, size, &report);
    free_graph(g);
    buf_free(&report);
    diag_clear();
    return 0;
}
