/* frontend.h: model readers, the whole interface of frontend/.
 * Each returns a verified Graph, or NULL with a diagnostic (diag_message()) that names
 * the place: file:line:col for text models, node 'name' (OpType) for ONNX. */
#ifndef BNN_FRONTEND_H
#define BNN_FRONTEND_H

#include <stddef.h>

#include "ir.h"
#include "util.h"

/* The text format (docs/text-format.md), from a file or from memory. Weight side files
 * named by the model are resolved relative to the model's directory (path's). */
Graph *parse_text_file(const char *path);
Graph *parse_text_string(const char *path, const char *text, size_t len);

/* An ONNX model. Lines for `bnncc --report` (which layers became binary, which stayed
 * float and why) are appended to report when it is not NULL. */
Graph *import_onnx_file(const char *path, Buf *report);

/* By extension: .onnx is ONNX, anything else the text format. */
Graph *load_model(const char *path, Buf *report);

#endif
