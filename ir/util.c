/* util.c: see util.h. */
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

static void *check_alloc(void *p) {
    if (!p) {
        fprintf(stderr, "bnncc: out of memory\n");
        exit(1);
    }
    return p;
}

void *xmalloc(size_t n) { return check_alloc(malloc(n ? n : 1)); }
void *xcalloc(size_t count, size_t size) { return check_alloc(calloc(count ? count : 1, size ? size : 1)); }
void *xrealloc(void *p, size_t n) { return check_alloc(realloc(p, n ? n : 1)); }
char *xstrdup(const char *s) { return xstrndup(s, strlen(s)); }

char *xstrndup(const char *s, size_t n) {
    char *d = xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static void buf_reserve(Buf *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1)
        cap *= 2;
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
}

void buf_put(Buf *b, const void *data, size_t n) {
    buf_reserve(b, n);
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void buf_puts(Buf *b, const char *s) { buf_put(b, s, strlen(s)); }

void buf_vprintf(Buf *b, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        unreachable("bad format '%s'", fmt);
    buf_reserve(b, (size_t)n);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void buf_printf(Buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
}

char *buf_take(Buf *b) {
    char *d = b->data ? b->data : xstrdup("");
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}

void buf_free(Buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        diag_error("cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    Buf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_put(&b, chunk, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        diag_error("cannot read '%s': %s", path, strerror(errno));
        buf_free(&b);
        return NULL;
    }
    if (len)
        *len = b.len;
    return buf_take(&b);
}

int write_file_atomic(const char *path, const void *data, size_t len) {
    size_t plen = strlen(path) + 8;
    char *tmp = xmalloc(plen);
    snprintf(tmp, plen, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        diag_error("cannot write '%s': %s", path, strerror(errno));
        free(tmp);
        return -1;
    }
    int ok = fwrite(data, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        diag_error("cannot write '%s': %s", path, strerror(errno));
        remove(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}
