/* load.c: pick the reader by file extension. */
#include <string.h>

#include "frontend.h"

static int has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

Graph *load_model(const char *path, Buf *report) {
    if (has_suffix(path, ".onnx"))
        return import_onnx_file(path, report);
    return parse_text_file(path);
}
