/* reader.c: decoding ONNX protobuf pieces: tensors (raw_data, typed fields, external
 * data files), attributes, and the constant-tensor helpers. Every size read from the
 * file is checked before use: the model is untrusted input. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onnx_import.h"

/* Folding works on host copies; refuse single tensors that could not be sane weights. */
#define MAX_TENSOR_ELEMS ((int64_t)1 << 31)

/* ---------------------------------------------------------------- constant tensors */

CTensor *new_ctensor(CKind kind, int elem, int rank, const int64_t *dim) {
    CTensor *t = xcalloc(1, sizeof *t);
    t->kind = kind;
    t->elem = elem;
    t->rank = rank;
    t->n = 1;
    for (int k = 0; k < rank; k++) {
        t->dim[k] = dim[k];
        t->n *= dim[k];
    }
    if (kind == CT_F32)
        t->f = xcalloc((size_t)(t->n ? t->n : 1), sizeof *t->f);
    else
        t->i = xcalloc((size_t)(t->n ? t->n : 1), sizeof *t->i);
    return t;
}

void free_ctensor(CTensor *t) {
    if (!t)
        return;
    free(t->f);
    free(t->i);
    free(t);
}

CTensor *copy_ctensor(const CTensor *t) {
    CTensor *c = new_ctensor(t->kind, t->elem, t->rank, t->dim);
    if (t->kind == CT_F32)
        memcpy(c->f, t->f, (size_t)t->n * sizeof *t->f);
    else
        memcpy(c->i, t->i, (size_t)t->n * sizeof *t->i);
    return c;
}

bool ctensor_has_batch_mark(const CTensor *t) {
    if (t->kind != CT_I64)
        return false;
    for (int64_t k = 0; k < t->n; k++)
        if (t->i[k] == BATCH_MARK)
            return true;
    return false;
}

double ctensor_get(const CTensor *t, int64_t k) {
    return t->kind == CT_F32 ? (double)t->f[k] : (double)t->i[k];
}

/* ---------------------------------------------------------------- element decoding */

static int elem_size(int elem) {
    switch (elem) {
    case ONNX_FLOAT: case ONNX_INT32: case ONNX_UINT32: return 4;
    case ONNX_DOUBLE: case ONNX_INT64: case ONNX_UINT64: return 8;
    case ONNX_FLOAT16: case ONNX_INT16: case ONNX_UINT16: return 2;
    case ONNX_INT8: case ONNX_UINT8: case ONNX_BOOL: return 1;
    default: return 0;
    }
}

static bool elem_is_float(int elem) {
    return elem == ONNX_FLOAT || elem == ONNX_DOUBLE || elem == ONNX_FLOAT16;
}

static const char *elem_name(int elem) {
    static const char *const names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16",
                                        "INT16", "INT32", "INT64", "STRING", "BOOL",
                                        "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64",
                                        "COMPLEX128", "BFLOAT16"};
    return elem >= 0 && elem < (int)(sizeof names / sizeof names[0]) ? names[elem] : "unknown";
}

static uint64_t load_le(const uint8_t *p, int size) {
    uint64_t v = 0;
    for (int k = size - 1; k >= 0; k--)
        v = v << 8 | p[k];
    return v;
}

/* Store one element given as its little-endian bytes. */
static void store_raw(CTensor *t, int64_t k, const uint8_t *p) {
    int size = elem_size(t->elem);
    uint64_t u = load_le(p, size);
    switch (t->elem) {
    case ONNX_FLOAT: {
        uint32_t w = (uint32_t)u;
        float f;
        memcpy(&f, &w, 4);
        t->f[k] = f;
        break;
    }
    case ONNX_DOUBLE: {
        double d;
        memcpy(&d, &u, 8);
        t->f[k] = (float)d;
        break;
    }
    case ONNX_FLOAT16: t->f[k] = half_to_float((uint16_t)u); break;
    case ONNX_INT8: t->i[k] = (int8_t)(uint8_t)u; break;
    case ONNX_INT16: t->i[k] = (int16_t)(uint16_t)u; break;
    case ONNX_INT32: t->i[k] = (int32_t)(uint32_t)u; break;
    case ONNX_INT64: t->i[k] = (int64_t)u; break;
    case ONNX_UINT64: t->i[k] = u > INT64_MAX ? INT64_MAX : (int64_t)u; break;
    case ONNX_BOOL: t->i[k] = u != 0; break;
    default: t->i[k] = (int64_t)u; break; /* UINT8, UINT16, UINT32 */
    }
}

/* ---------------------------------------------------------------- external data */

static bool path_is_safe(const char *loc) {
    if (!loc[0] || loc[0] == '/')
        return false;
    for (const char *p = loc; *p;) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return false;
        if (!e)
            break;
        p = e + 1;
    }
    return true;
}

static int parse_i64(const char *s, int64_t *out) {
    if (!s || !*s)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < 0)
        return -1;
    *out = v;
    return 0;
}

static uint8_t *read_external(Imp *im, const Onnx__TensorProto *tp, const char *what,
                              size_t want) {
    const char *loc = NULL, *off_s = NULL, *len_s = NULL;
    for (size_t k = 0; k < tp->n_external_data; k++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[k];
        if (!e->key)
            continue;
        if (!strcmp(e->key, "location"))
            loc = e->value;
        else if (!strcmp(e->key, "offset"))
            off_s = e->value;
        else if (!strcmp(e->key, "length"))
            len_s = e->value;
    }
    if (!im->dir) {
        imp_error(im, "%s: external data is not available for a model read from memory", what);
        return NULL;
    }
    if (!loc || !path_is_safe(loc)) {
        imp_error(im, "%s: external data location '%s' is not a relative path inside the "
                  "model's folder", what, loc ? loc : "");
        return NULL;
    }
    int64_t off = 0, len = (int64_t)want;
    if ((off_s && parse_i64(off_s, &off)) || (len_s && parse_i64(len_s, &len))) {
        imp_error(im, "%s: bad external data offset or length", what);
        return NULL;
    }
    if ((uint64_t)len != want) {
        imp_error(im, "%s: external data length %lld does not match the tensor's %zu bytes",
                  what, (long long)len, want);
        return NULL;
    }
    size_t plen = strlen(im->dir) + strlen(loc) + 2;
    char *full = xmalloc(plen);
    snprintf(full, plen, "%s/%s", im->dir, loc);
    FILE *f = fopen(full, "rb");
    struct stat st;
    uint8_t *buf = NULL;
    if (!f || fstat(fileno(f), &st) != 0) {
        imp_error(im, "%s: cannot open external data file '%s': %s", what, full,
                  strerror(errno));
    } else if (!S_ISREG(st.st_mode) || off > st.st_size || (int64_t)want > st.st_size - off) {
        imp_error(im, "%s: external data [%lld, +%zu) lies outside '%s' (%lld bytes)", what,
                  (long long)off, want, full, (long long)st.st_size);
    } else if (fseeko(f, (off_t)off, SEEK_SET) != 0) {
        imp_error(im, "%s: cannot seek in '%s'", what, full);
    } else {
        buf = xmalloc(want ? want : 1);
        if (fread(buf, 1, want, f) != want) {
            imp_error(im, "%s: cannot read %zu bytes from '%s'", what, want, full);
            free(buf);
            buf = NULL;
        }
    }
    if (f)
        fclose(f);
    free(full);
    return buf;
}

/* ---------------------------------------------------------------- tensors */

CTensor *read_tensor(Imp *im, const Onnx__TensorProto *tp, const char *what) {
    int elem = tp->has_data_type ? tp->data_type : 0;
    int size = elem_size(elem);
    if (!size) {
        imp_error(im, "%s: element type %s is not supported", what, elem_name(elem));
        return NULL;
    }
    if (tp->n_dims > MAX_RANK) {
        imp_error(im, "%s: rank %zu is over the limit of %d", what, tp->n_dims, MAX_RANK);
        return NULL;
    }
    int64_t dim[MAX_RANK], n = 1;
    for (size_t k = 0; k < tp->n_dims; k++) {
        dim[k] = tp->dims[k];
        if (dim[k] < 0 || (dim[k] && n > MAX_TENSOR_ELEMS / dim[k])) {
            imp_error(im, "%s: bad dimension %lld", what, (long long)dim[k]);
            return NULL;
        }
        n *= dim[k];
    }
    if (tp->segment) {
        imp_error(im, "%s: segmented tensors are not supported", what);
        return NULL;
    }
    /* The data is checked against the shape before the tensor is allocated: a shape that
     * claims more than the file holds must not allocate it. */
    size_t want = (size_t)n * (size_t)size;
    bool external = tp->has_data_location &&
                    tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    if (external || tp->has_raw_data) {
        const uint8_t *raw;
        uint8_t *owned = NULL;
        if (external) {
            owned = read_external(im, tp, what, want);
            if (!owned)
                return NULL;
            raw = owned;
        } else {
            if (tp->raw_data.len != want) {
                imp_error(im, "%s: raw_data holds %zu bytes, the %s tensor needs %zu", what,
                          tp->raw_data.len, elem_name(elem), want);
                return NULL;
            }
            raw = tp->raw_data.data;
        }
        CTensor *t = new_ctensor(elem_is_float(elem) ? CT_F32 : CT_I64, elem, (int)tp->n_dims, dim);
        for (int64_t k = 0; k < n; k++)
            store_raw(t, k, raw + (size_t)k * (size_t)size);
        free(owned);
        return t;
    }
    /* Typed fields: each ONNX type has its field. */
    size_t have;
    switch (elem) {
    case ONNX_FLOAT: have = tp->n_float_data; break;
    case ONNX_DOUBLE: have = tp->n_double_data; break;
    case ONNX_INT64: have = tp->n_int64_data; break;
    case ONNX_UINT32: case ONNX_UINT64: have = tp->n_uint64_data; break;
    default: have = tp->n_int32_data; break;
    }
    if (have != (size_t)n) {
        imp_error(im, "%s: holds %zu values, its shape needs %lld", what, have, (long long)n);
        return NULL;
    }
    CTensor *t = new_ctensor(elem_is_float(elem) ? CT_F32 : CT_I64, elem, (int)tp->n_dims, dim);
    for (int64_t k = 0; k < n; k++) {
        switch (elem) {
        case ONNX_FLOAT: t->f[k] = tp->float_data[k]; break;
        case ONNX_DOUBLE: t->f[k] = (float)tp->double_data[k]; break;
        case ONNX_FLOAT16: t->f[k] = half_to_float((uint16_t)tp->int32_data[k]); break;
        case ONNX_INT64: t->i[k] = tp->int64_data[k]; break;
        case ONNX_UINT32: case ONNX_UINT64:
            t->i[k] = tp->uint64_data[k] > INT64_MAX ? INT64_MAX : (int64_t)tp->uint64_data[k];
            break;
        case ONNX_BOOL: t->i[k] = tp->int32_data[k] != 0; break;
        default: t->i[k] = tp->int32_data[k]; break;
        }
    }
    return t;
}

/* ---------------------------------------------------------------- attributes */

const Onnx__AttributeProto *node_attr(const Onnx__NodeProto *n, const char *name) {
    for (size_t k = 0; k < n->n_attribute; k++) {
        const Onnx__AttributeProto *a = n->attribute[k];
        if (a->name && !strcmp(a->name, name))
            return a;
    }
    return NULL;
}

int64_t node_attr_int(const Onnx__NodeProto *n, const char *name, int64_t def) {
    const Onnx__AttributeProto *a = node_attr(n, name);
    if (!a)
        return def;
    if (a->has_i)
        return a->i;
    if (a->has_f)
        return sat_i64(a->f);
    return def;
}

float node_attr_float(const Onnx__NodeProto *n, const char *name, float def) {
    const Onnx__AttributeProto *a = node_attr(n, name);
    if (!a)
        return def;
    if (a->has_f)
        return a->f;
    if (a->has_i)
        return (float)a->i;
    return def;
}

const char *node_attr_str(const Onnx__NodeProto *n, const char *name, const char *def,
                          char *out, size_t len) {
    const Onnx__AttributeProto *a = node_attr(n, name);
    if (!a || !a->has_s)
        return def;
    size_t m = a->s.len < len - 1 ? a->s.len : len - 1;
    if (m)
        memcpy(out, a->s.data, m);
    out[m] = '\0';
    return out;
}

int node_attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *out, int max) {
    const Onnx__AttributeProto *a = node_attr(n, name);
    if (!a)
        return -1;
    int count = a->n_ints > (size_t)INT_MAX ? INT_MAX : (int)a->n_ints;
    for (int k = 0; k < count && k < max; k++)
        out[k] = a->ints[k];
    return count;
}
