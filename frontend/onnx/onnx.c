/* onnx.c: the ONNX reader. (stub, being written) */
#include "frontend.h"

Graph *import_onnx_file(const char *path, Buf *report) {
    (void)report;
    diag_error("%s: ONNX models are not supported yet", path);
    return NULL;
}
