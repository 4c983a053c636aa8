/* util.h: allocation, growable byte buffers and file reading shared by the
 * compiler stages (frontend, ir, compiler, codegen). Not used by runtime/. */
#ifndef BNN_UTIL_H
#define BNN_UTIL_H

#include <stdarg.h>
#include <stddef.h>

/* Allocation that cannot fail: out of memory prints a message and exits 1. */
void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/* A growable byte buffer; data is always NUL-terminated. */
typedef struct Buf {
    char *data;
    size_t len, cap;
} Buf;

void buf_put(Buf *b, const void *data, size_t n);
void buf_puts(Buf *b, const char *s);
void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_vprintf(Buf *b, const char *fmt, va_list ap);
char *buf_take(Buf *b); /* returns data (never NULL) and resets b */
void buf_free(Buf *b);

/* Read a whole file. NULL with a diagnostic (diag_error) naming the file on failure. */
char *read_file(const char *path, size_t *len);

/* Write a file atomically: to path.tmp, then rename, so that a failure never leaves a
 * partial output. 0 ok, -1 with a diagnostic. */
int write_file_atomic(const char *path, const void *data, size_t len);

#endif
