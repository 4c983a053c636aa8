/* text.c: the text-format reader. (stub, being written) */
#include <stdlib.h>

#include "frontend.h"

Graph *parse_text_string(const char *path, const char *text, size_t len) {
    (void)text; (void)len;
    diag_error("%s: text models are not supported yet", path);
    return NULL;
}

Graph *parse_text_file(const char *path) {
    size_t len;
    char *text = read_file(path, &len);
    if (!text)
        return NULL;
    Graph *g = parse_text_string(path, text, len);
    free(text);
    return g;
}
