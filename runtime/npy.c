/* npy.c: see npy.h. The header is a Python dict literal; we accept exactly the
 * keys NumPy writes ('descr', 'fortran_order', 'shape') in any order. */
#include "npy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *descr; /* without the byte-order character */
    const char *name;
    size_t size;
} npy_types[] = {
    [NPY_F32] = {"f4", "float32", 4}, [NPY_F64] = {"f8", "float64", 8},
    [NPY_F16] = {"f2", "float16", 2}, [NPY_I64] = {"i8", "int64", 8},
    [NPY_I32] = {"i4", "int32", 4},   [NPY_I16] = {"i2", "int16", 2},
    [NPY_I8] = {"i1", "int8", 1},     [NPY_U8] = {"u1", "uint8", 1},
    [NPY_BOOL] = {"b1", "bool", 1},
};
_Static_assert(sizeof npy_types / sizeof npy_types[0] == NPY_DTYPE_COUNT, "npy dtype table");

const char *npy_dtype_name(NpyDtype t) { return npy_types[t].name; }
size_t npy_dtype_size(NpyDtype t) { return npy_types[t].size; }

int64_t npy_numel(const NpyArray *a) {
    int64_t n = 1;
    for (int i = 0; i < a->rank; i++)
        n *= a->shape[i];
    return n;
}

void npy_free(NpyArray *a) {
    free(a->data);
    a->data = NULL;
    a->nbytes = 0;
}

static int fail(char *err, size_t err_len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *skip_space(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* Find the value text after 'key': in the dict. */
static const char *find_key(const char *h, const char *end, const char *key) {
    size_t klen = strlen(key);
    for (const char *p = h; p + klen + 2 <= end; p++)
        if ((*p == '\'' || *p == '"') && memcmp(p + 1, key, klen) == 0 && p[klen + 1] == *p) {
            const char *q = skip_space(p + klen + 2, end);
            if (q < end && *q == ':')
                return skip_space(q + 1, end);
        }
    return NULL;
}

int npy_parse(const void *bytes, size_t len, const char *name, NpyArray *out, char *err,
              size_t err_len) {
    const unsigned char *b = bytes;
    memset(out, 0, sizeof *out);
    if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
        return fail(err, err_len, "%s: not a .npy file (no \\x93NUMPY magic)", name);
    int major = b[6];
    size_t hlen, hoff;
    if (major == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        hoff = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12)
            return fail(err, err_len, "%s: truncated .npy header", name);
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        hoff = 12;
    } else {
        return fail(err, err_len, "%s: unsupported .npy format version %d", name, major);
    }
    if (hlen > len - hoff)
        return fail(err, err_len, "%s: truncated .npy header", name);
    const char *h = (const char *)b + hoff, *hend = h + hlen;

    const char *d = find_key(h, hend, "descr");
    if (!d || d >= hend || (*d != '\'' && *d != '"'))
        return fail(err, err_len, "%s: .npy header has no 'descr'", name);
    const char *dend = memchr(d + 1, *d, (size_t)(hend - d - 1));
    if (!dend)
        return fail(err, err_len, "%s: malformed 'descr' in .npy header", name);
    size_t dlen = (size_t)(dend - d - 1);
    char descr[16] = {0};
    if (dlen == 0 || dlen >= sizeof descr)
        return fail(err, err_len, "%s: unsupported dtype in .npy header", name);
    memcpy(descr, d + 1, dlen);
    int dtype = -1;
    char order = descr[0];
    if (order == '<' || order == '|' || order == '=') {
        for (int i = 0; i < NPY_DTYPE_COUNT; i++)
            if (strcmp(descr + 1, npy_types[i].descr) == 0)
                dtype = i;
    }
    if (dtype < 0 || (order == '|' && npy_types[dtype].size > 1))
        return fail(err, err_len,
                    "%s: unsupported dtype '%s' (supported: little-endian float32, float64, "
                    "float16, int64, int32, int16, int8, uint8, bool)",
                    name, descr);

    const char *fo = find_key(h, hend, "fortran_order");
    if (!fo)
        return fail(err, err_len, "%s: .npy header has no 'fortran_order'", name);
    if ((size_t)(hend - fo) >= 4 && memcmp(fo, "True", 4) == 0)
        return fail(err, err_len, "%s: Fortran-order arrays are not supported; save with "
                    "np.ascontiguousarray", name);

    const char *s = find_key(h, hend, "shape");
    if (!s || *s != '(')
        return fail(err, err_len, "%s: .npy header has no 'shape'", name);
    s++;
    int rank = 0;
    for (;;) {
        s = skip_space(s, hend);
        if (s >= hend)
            return fail(err, err_len, "%s: malformed 'shape' in .npy header", name);
        if (*s == ')')
            break;
        if (*s < '0' || *s > '9')
            return fail(err, err_len, "%s: malformed 'shape' in .npy header", name);
        int64_t v = 0;
        while (s < hend && *s >= '0' && *s <= '9') {
            if (v > (INT64_MAX - 9) / 10)
                return fail(err, err_len, "%s: dimension too large in .npy header", name);
            v = v * 10 + (*s++ - '0');
        }
        if (rank == NPY_MAX_RANK)
            return fail(err, err_len, "%s: more than %d dimensions", name, NPY_MAX_RANK);
        out->shape[rank++] = v;
        s = skip_space(s, hend);
        if (s < hend && *s == ',')
            s++;
    }
    out->rank = rank;
    out->dtype = (NpyDtype)dtype;

    size_t elem = npy_types[dtype].size;
    size_t numel = 1;
    for (int i = 0; i < rank; i++) {
        if (out->shape[i] != 0 && numel > SIZE_MAX / elem / (size_t)out->shape[i])
            return fail(err, err_len, "%s: array too large", name);
        numel *= (size_t)out->shape[i];
    }
    size_t need = numel * elem;
    size_t have = len - hoff - hlen;
    if (have < need)
        return fail(err, err_len, "%s: truncated: the header says %zu data bytes, the file has %zu",
                    name, need, have);
    out->data = malloc(need ? need : 1);
    if (!out->data)
        return fail(err, err_len, "%s: out of memory", name);
    memcpy(out->data, b + hoff + hlen, need);
    out->nbytes = need;
    return 0;
}

int npy_read(const char *path, NpyArray *out, char *err, size_t err_len) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(err, err_len, "cannot open '%s': %s", path, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            unsigned char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf)
        return fail(err, err_len, "%s: out of memory", path);
    if (bad) {
        free(buf);
        return fail(err, err_len, "cannot read '%s'", path);
    }
    int rc = npy_parse(buf, len, path, out, err, err_len);
    free(buf);
    return rc;
}

int npy_write(const char *path, const NpyArray *a, char *err, size_t err_len) {
    char header[512];
    int n = snprintf(header, sizeof header, "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
                     npy_types[a->dtype].size == 1 ? '|' : '<', npy_types[a->dtype].descr);
    for (int i = 0; i < a->rank; i++)
        n += snprintf(header + n, sizeof header - (size_t)n, "%lld,%s", (long long)a->shape[i],
                      i + 1 < a->rank ? " " : "");
    if (a->rank > 1)
        n--; /* "(2, 3)" not "(2, 3,)"; a rank-1 shape keeps its comma: "(5,)" */
    n += snprintf(header + n, sizeof header - (size_t)n, "), }");
    /* Pad with spaces so that data starts on a 64-byte boundary, ending in '\n'. */
    size_t total = 10 + (size_t)n + 1;
    size_t padded = (total + 63) / 64 * 64;
    size_t hlen = padded - 10;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    size_t plen = strlen(path) + 8;
    char *tmp = malloc(plen);
    if (!tmp)
        return fail(err, err_len, "%s: out of memory", path);
    snprintf(tmp, plen, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        int e = errno;
        free(tmp);
        return fail(err, err_len, "cannot write '%s': %s", path, strerror(e));
    }
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(header, 1, (size_t)n, f) == (size_t)n;
    for (size_t i = 10 + (size_t)n; ok && i < padded - 1; i++)
        ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    ok = ok && fwrite(a->data, 1, a->nbytes, f) == a->nbytes;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        free(tmp);
        return fail(err, err_len, "cannot write '%s': %s", path, strerror(e));
    }
    free(tmp);
    return 0;
}
