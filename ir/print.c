/* print.c: the text form of a graph (docs/text-format.md, "Canonical printing").
 * One canonical spelling for everything, so that print(parse(print(g))) == print(g). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "util.h"

/* Constants with at most this many elements are written inline as decimal lists. */
#define LIST_MAX 16
/* Side-file offsets are multiples of this, so a loader can map weights aligned. */
#define WEIGHT_ALIGN 64

/* ---------------------------------------------------------------- words and names */

static bool is_name_char(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == ':' || c == '/' || c == '-';
}

/* A quoted string: \" \\ \n \t \r and \xHH for other control bytes; UTF-8 passes through. */
static void put_quoted(Buf *b, const char *s) {
    buf_puts(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': buf_puts(b, "\\\""); break;
        case '\\': buf_puts(b, "\\\\"); break;
        case '\n': buf_puts(b, "\\n"); break;
        case '\t': buf_puts(b, "\\t"); break;
        case '\r': buf_puts(b, "\\r"); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                buf_printf(b, "\\x%02x", *p);
            else
                buf_put(b, p, 1);
        }
    }
    buf_puts(b, "\"");
}

/* %name or $name bare when the lexer reads it back whole (it cannot end in ':', which
 * would swallow the ': type' after it), else %"quoted". */
static void put_name(Buf *b, char sigil, const char *name) {
    size_t n = strlen(name);
    bool bare = n > 0 && name[n - 1] != ':';
    for (size_t i = 0; bare && i < n; i++)
        bare = is_name_char((unsigned char)name[i]);
    buf_put(b, &sigil, 1);
    if (bare)
        buf_puts(b, name);
    else
        put_quoted(b, name);
}

/* Identifier-like strings print bare, except those the lexer reads as numbers. */
static void put_word(Buf *b, const char *s) {
    bool bare = (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_';
    for (const char *p = s; bare && *p; p++)
        bare = is_name_char((unsigned char)*p) && *p != '.' && *p != ':' && *p != '/' &&
               *p != '-';
    if (bare && (strcmp(s, "inf") == 0 || strcmp(s, "nan") == 0))
        bare = false;
    if (bare)
        buf_puts(b, s);
    else
        put_quoted(b, s);
}

/* ---------------------------------------------------------------- numbers */

/* %.9g round-trips every float; the spelling always reads back as a float (it has a
 * '.', an exponent, or is inf/nan). NaNs print as one "nan". */
static void put_float(Buf *b, float f) {
    if (isnan(f)) {
        buf_puts(b, "nan");
        return;
    }
    if (isinf(f)) {
        buf_puts(b, f < 0 ? "-inf" : "inf");
        return;
    }
    char s[32];
    snprintf(s, sizeof s, "%.9g", (double)f);
    buf_puts(b, s);
    if (!strpbrk(s, ".e"))
        buf_puts(b, ".0");
}

static uint64_t load_le(const uint8_t *p, int nbytes) {
    uint64_t v = 0;
    for (int i = nbytes - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* ---------------------------------------------------------------- types, attributes */

static void put_type(Buf *b, const Type *t) {
    char s[256];
    buf_puts(b, type_str(t, s, sizeof s));
}

static void put_attr(Buf *b, const Attr *a) {
    buf_printf(b, "%s=", a->key);
    switch (a->kind) {
    case ATTR_INT: buf_printf(b, "%lld", (long long)a->i); break;
    case ATTR_FLOAT: put_float(b, a->f); break;
    case ATTR_INTS:
        buf_puts(b, "[");
        for (int i = 0; i < a->n; i++)
            buf_printf(b, "%s%lld", i ? "," : "", (long long)a->ints[i]);
        buf_puts(b, "]");
        break;
    case ATTR_FLOATS:
        buf_puts(b, "[");
        for (int i = 0; i < a->n; i++) {
            if (i)
                buf_puts(b, ",");
            put_float(b, a->floats[i]);
        }
        buf_puts(b, "]");
        break;
    case ATTR_STR: put_word(b, a->s ? a->s : ""); break;
    }
}

/* In op_attr_specs order; attributes outside the spec follow in stored order, so that
 * nothing is silently dropped (the parser and verifier then reject them). */
static void put_attrs(Buf *b, const Node *n) {
    if (!n->nattrs)
        return;
    const AttrSpec *specs = op_attr_specs(n->op);
    int count = 0;
    buf_puts(b, " {");
    for (const AttrSpec *s = specs; s->key; s++) {
        const Attr *a = get_attr(n, s->key);
        if (a) {
            buf_puts(b, count++ ? ", " : "");
            put_attr(b, a);
        }
    }
    for (int i = 0; i < n->nattrs; i++) {
        const AttrSpec *s = specs;
        while (s->key && strcmp(s->key, n->attrs[i].key) != 0)
            s++;
        if (!s->key) {
            buf_puts(b, count++ ? ", " : "");
            put_attr(b, &n->attrs[i]);
        }
    }
    buf_puts(b, "}");
}

/* ---------------------------------------------------------------- constants */

static void put_hex(Buf *b, const uint8_t *p, size_t n) {
    static const char digits[] = "0123456789abcdef";
    buf_puts(b, "hex \"");
    for (size_t i = 0; i < n; i++) {
        char pair[2] = {digits[p[i] >> 4], digits[p[i] & 15]};
        buf_put(b, pair, 2);
    }
    buf_puts(b, "\"");
}

static void put_base64(Buf *b, const uint8_t *p, size_t n) {
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    buf_puts(b, "base64 \"");
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        char q[4] = {alphabet[(v >> 18) & 63], alphabet[(v >> 12) & 63],
                     i + 1 < n ? alphabet[(v >> 6) & 63] : '=', i + 2 < n ? alphabet[v & 63] : '='};
        buf_put(b, q, 4);
    }
    buf_puts(b, "\"");
}

/* Lists for small numeric constants whose every element reads back bit for bit: not b1
 * (hex is shorter and exact), not f16 (no decimal spelling here), no NaN payloads. */
static bool const_as_list(const Value *v) {
    int64_t numel = type_numel(&v->type, 1);
    if (numel > LIST_MAX || v->type.dtype == TY_B1 || v->type.dtype == TY_F16)
        return false;
    if (v->type.dtype == TY_F32)
        for (int64_t i = 0; i < numel; i++) {
            uint32_t bits = (uint32_t)load_le((const uint8_t *)v->data + 4 * i, 4);
            float f;
            memcpy(&f, &bits, sizeof f);
            if (isnan(f))
                return false;
        }
    return true;
}

static void put_const_list(Buf *b, const Value *v) {
    int64_t numel = type_numel(&v->type, 1);
    int bytes = dtype_bits(v->type.dtype) / 8;
    const uint8_t *p = v->data;
    buf_puts(b, "[");
    for (int64_t i = 0; i < numel; i++) {
        if (i)
            buf_puts(b, ", ");
        uint64_t raw = load_le(p + (size_t)i * (size_t)bytes, bytes);
        switch (v->type.dtype) {
        case TY_F32: {
            uint32_t bits = (uint32_t)raw;
            float f;
            memcpy(&f, &bits, sizeof f);
            put_float(b, f);
            break;
        }
        case TY_I64: buf_printf(b, "%lld", (long long)(int64_t)raw); break;
        case TY_I32: buf_printf(b, "%d", (int)(int32_t)(uint32_t)raw); break;
        case TY_I8: buf_printf(b, "%d", (int)(int8_t)(uint8_t)raw); break;
        case TY_U8: buf_printf(b, "%u", (unsigned)raw); break;
        default: unreachable("no list form for %s", dtype_name(v->type.dtype));
        }
    }
    buf_puts(b, "]");
}

/* offset < 0: inline data; else a reference into the side file weights_ref. */
static void put_const(Buf *b, const Value *v, const char *weights_ref, long long offset) {
    buf_puts(b, "const ");
    put_name(b, '$', v->name);
    buf_puts(b, ": ");
    put_type(b, &v->type);
    buf_puts(b, " = ");
    if (offset >= 0) {
        buf_puts(b, "file ");
        put_quoted(b, weights_ref);
        buf_printf(b, " offset %lld", offset);
    } else if (const_as_list(v)) {
        put_const_list(b, v);
    } else if (v->type.dtype == TY_B1) {
        put_hex(b, v->data, v->nbytes);
    } else {
        put_base64(b, v->data, v->nbytes);
    }
    buf_puts(b, "\n");
}

/* ---------------------------------------------------------------- graph */

static void put_node(Buf *b, const Node *n) {
    buf_puts(b, "    ");
    for (int i = 0; i < n->nout; i++) {
        buf_puts(b, i ? ", " : "");
        put_name(b, '%', n->out[i]->name);
    }
    buf_puts(b, " = ");
    for (int i = 0; i < n->nout; i++) {
        buf_puts(b, i ? ", " : "");
        put_type(b, &n->out[i]->type);
    }
    buf_printf(b, " %s ", op_info(n->op)->name);
    for (int i = 0; i < n->nin; i++) {
        buf_puts(b, i ? ", " : "");
        put_name(b, n->in[i]->kind == VAL_CONST ? '$' : '%', n->in[i]->name);
    }
    put_attrs(b, n);
    if (n->src_name) {
        buf_puts(b, " loc(");
        put_quoted(b, n->src_name);
        if (n->src_op) {
            buf_puts(b, ", ");
            put_word(b, n->src_op);
        }
        buf_puts(b, ")");
    }
    buf_puts(b, "\n");
}

/* offsets[i] is the side-file offset of g->consts[i], or -1 to write it inline. */
static void put_graph(Buf *b, const Graph *g, const char *weights_ref, const long long *offsets) {
    for (int i = 0; i < g->nconsts; i++)
        put_const(b, g->consts[i], weights_ref, offsets ? offsets[i] : -1);
    if (g->nconsts)
        buf_puts(b, "\n");
    buf_puts(b, "graph ");
    put_name(b, '$', g->name);
    buf_puts(b, "(");
    for (int i = 0; i < g->ninputs; i++) {
        buf_puts(b, i ? ", " : "");
        put_name(b, '%', g->inputs[i]->name);
        buf_puts(b, ": ");
        put_type(b, &g->inputs[i]->type);
    }
    buf_puts(b, ") -> (");
    for (int i = 0; i < g->noutputs; i++) {
        buf_puts(b, i ? ", " : "");
        put_type(b, &g->outputs[i]->type);
    }
    buf_puts(b, ") {\n");
    for (int i = 0; i < g->nnodes; i++)
        if (!g->nodes[i]->dead)
            put_node(b, g->nodes[i]);
    buf_puts(b, "    ret");
    for (int i = 0; i < g->noutputs; i++) {
        const Value *v = g->outputs[i];
        buf_puts(b, i ? ", " : " ");
        put_name(b, v->kind == VAL_CONST ? '$' : '%', v->name);
    }
    buf_puts(b, "\n}\n");
}

char *print_graph_to_string(const Graph *g) {
    Buf b = {0};
    put_graph(&b, g, NULL, NULL);
    return buf_take(&b);
}

void print_graph(const Graph *g, FILE *out) {
    char *s = print_graph_to_string(g);
    fputs(s, out);
    free(s);
}

char *print_graph_split(const Graph *g, const char *weights_ref, Buf *weights) {
    long long *offsets = xcalloc((size_t)(g->nconsts ? g->nconsts : 1), sizeof *offsets);
    for (int i = 0; i < g->nconsts; i++) {
        const Value *v = g->consts[i];
        offsets[i] = -1;
        if (type_numel(&v->type, 1) <= LIST_MAX)
            continue;
        static const char zeros[WEIGHT_ALIGN];
        buf_put(weights, zeros, (WEIGHT_ALIGN - weights->len % WEIGHT_ALIGN) % WEIGHT_ALIGN);
        offsets[i] = (long long)weights->len;
        buf_put(weights, v->data, v->nbytes);
    }
    Buf b = {0};
    put_graph(&b, g, weights_ref, offsets);
    free(offsets);
    return buf_take(&b);
}

int print_graph_with_weights(const Graph *g, FILE *out, const char *weights_path,
                             const char *weights_ref) {
    Buf w = {0};
    char *text = print_graph_split(g, weights_ref, &w);
    int rc = write_file_atomic(weights_path, w.data ? w.data : "", w.len);
    buf_free(&w);
    if (rc == 0 && fwrite(text, 1, strlen(text), out) != strlen(text)) {
        diag_error("cannot write the model text");
        rc = -1;
    }
    free(text);
    return rc;
}
