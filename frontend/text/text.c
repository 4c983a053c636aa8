/* text.c: the text-format reader. The Bison grammar (parser.y) collects tokens; the
 * build_* actions here check them and build the Graph as statements arrive, so values
 * are defined before use by construction. Every error names file:line:col. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "frontend.h"
#include "textparse.h"
#include "parser.h"
#define YYSTYPE TXSTYPE
#define YYLTYPE TXLTYPE
#include "lexer.h"

/* A type may hold at most this many elements (besides N): beyond it, byte counts
 * overflow in later stages, and no binarized model comes near it. */
#define MAX_ELEMENTS (INT64_C(1) << 40)

/* ---------------------------------------------------------------- arena, errors */

void *ctx_alloc(ParseCtx *ctx, size_t n) {
    void *p = xcalloc(1, n);
    if (ctx->nallocs == ctx->cap_allocs) {
        ctx->cap_allocs = ctx->cap_allocs ? 2 * ctx->cap_allocs : 256;
        ctx->allocs = xrealloc(ctx->allocs, (size_t)ctx->cap_allocs * sizeof *ctx->allocs);
    }
    ctx->allocs[ctx->nallocs++] = p;
    return p;
}

Tok *ctx_tok(ParseCtx *ctx, TokKind kind, TextLoc loc, const char *text, size_t len) {
    Tok *t = ctx_alloc(ctx, sizeof *t);
    t->kind = kind;
    t->loc = loc;
    if (text) {
        t->text = ctx_alloc(ctx, len + 1);
        memcpy(t->text, text, len);
    }
    return t;
}

Vec *ctx_vec(ParseCtx *ctx) {
    Vec *v = xcalloc(1, sizeof *v);
    if (ctx->nvecs == ctx->cap_vecs) {
        ctx->cap_vecs = ctx->cap_vecs ? 2 * ctx->cap_vecs : 64;
        ctx->vecs = xrealloc(ctx->vecs, (size_t)ctx->cap_vecs * sizeof *ctx->vecs);
    }
    ctx->vecs[ctx->nvecs++] = v;
    return v;
}

Vec *vec_push(Vec *v, void *item) {
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 8;
        v->items = xrealloc(v->items, (size_t)v->cap * sizeof *v->items);
    }
    v->items[v->n++] = item;
    return v;
}

static void free_arena(ParseCtx *ctx) {
    for (int i = 0; i < ctx->nallocs; i++)
        free(ctx->allocs[i]);
    free(ctx->allocs);
    for (int i = 0; i < ctx->nvecs; i++) {
        free(ctx->vecs[i]->items);
        free(ctx->vecs[i]);
    }
    free(ctx->vecs);
    free(ctx->def_locs);
    free(ctx->dir);
}

void ctx_error(ParseCtx *ctx, TextLoc loc, const char *fmt, ...) {
    if (ctx->failed)
        return;
    ctx->failed = true;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    Loc where = {ctx->file, loc.line, loc.col};
    diag_error_at(where, "%s", msg);
}

/* Nodes keep the file name in their Loc after the parse, so it must outlive every
 * graph: keep one copy of each name for the life of the program. */
static const char *intern_file(const char *path) {
    static char **names;
    static int count;
    for (int i = 0; i < count; i++)
        if (strcmp(names[i], path) == 0)
            return names[i];
    names = xrealloc(names, (size_t)(count + 1) * sizeof *names);
    names[count] = xstrdup(path);
    return names[count++];
}

static void note_def(ParseCtx *ctx, const Value *v, TextLoc loc) {
    if (v->id >= ctx->cap_def_locs) {
        int cap = ctx->cap_def_locs ? 2 * ctx->cap_def_locs : 64;
        while (cap <= v->id)
            cap *= 2;
        ctx->def_locs = xrealloc(ctx->def_locs, (size_t)cap * sizeof *ctx->def_locs);
        ctx->cap_def_locs = cap;
    }
    ctx->def_locs[v->id] = loc;
}

static void error_redefined(ParseCtx *ctx, const Tok *name, const Value *old) {
    char sigil = old->kind == VAL_CONST ? '$' : '%';
    TextLoc first = ctx->def_locs[old->id];
    ctx_error(ctx, name->loc, "redefinition of %c%s (first defined at line %d, column %d)", sigil,
              name->text, first.line, first.col);
}

/* ---------------------------------------------------------------- numbers */

/* A token's text for messages: 'text', or a description for lists. */
static const char *tok_desc(const Tok *t, char *buf, size_t len) {
    if (t->kind == TK_LIST)
        snprintf(buf, len, "a list");
    else
        snprintf(buf, len, "'%.40s%s'", t->text, strlen(t->text) > 40 ? "..." : "");
    return buf;
}

static int parse_int(ParseCtx *ctx, const Tok *t, int64_t lo, int64_t hi, const char *what,
                     int64_t *out) {
    char desc[64];
    if (t->kind != TK_INT) {
        ctx_error(ctx, t->loc, "%s must be an integer, found %s", what,
                  tok_desc(t, desc, sizeof desc));
        return -1;
    }
    errno = 0;
    long long v = strtoll(t->text, NULL, 10);
    if (errno == ERANGE || v < lo || v > hi) {
        ctx_error(ctx, t->loc, "%s is out of range: %s (allowed %lld to %lld)", what,
                  tok_desc(t, desc, sizeof desc), (long long)lo, (long long)hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_float(ParseCtx *ctx, const Tok *t, const char *what, float *out) {
    char desc[64];
    if (t->kind != TK_INT && t->kind != TK_FLOAT) {
        ctx_error(ctx, t->loc, "%s must be a number, found %s", what,
                  tok_desc(t, desc, sizeof desc));
        return -1;
    }
    float v = strtof(t->text, NULL);
    if (isnan(v)) {
        v = NAN; /* one NaN, whatever sign was written */
    } else if (isinf(v) && !strstr(t->text, "inf")) {
        ctx_error(ctx, t->loc, "%s is out of range for f32: %s", what,
                  tok_desc(t, desc, sizeof desc));
        return -1;
    }
    *out = v;
    return 0;
}

/* IEEE binary16 from binary32, round to nearest even. */
static uint16_t float_to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t man = x & 0x7fffffu;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)sign;
        man |= 0x800000u;
        unsigned shift = (unsigned)(14 - e);
        uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = sign | ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++; /* a carry into the exponent is the right answer */
    return (uint16_t)h;
}

static void store_le(uint8_t *p, uint64_t v, int nbytes) {
    for (int i = 0; i < nbytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* ---------------------------------------------------------------- types */

Tok *build_type(ParseCtx *ctx, Tok *dtype, Vec *dims, Vec *pack) {
    int dt = dtype_from_name(dtype->text);
    if (dt < 0) {
        ctx_error(ctx, dtype->loc, "unknown type '%s' (expected f32, f16, i64, i32, i8, u8 or b1)",
                  dtype->text);
        return NULL;
    }
    if (dims->n > MAX_RANK) {
        Tok *extra = dims->items[MAX_RANK];
        ctx_error(ctx, extra->loc, "rank %d is above the maximum of %d", dims->n, MAX_RANK);
        return NULL;
    }
    int64_t dim[MAX_RANK];
    int64_t numel = 1;
    bool batch = false;
    for (int i = 0; i < dims->n; i++) {
        Tok *d = dims->items[i];
        if (d->kind == TK_IDENT) {
            if (strcmp(d->text, "N") != 0) {
                ctx_error(ctx, d->loc, "expected a dimension (an integer or N), found '%s'",
                          d->text);
                return NULL;
            }
            if (batch) {
                ctx_error(ctx, d->loc, "only one dimension can be the batch N");
                return NULL;
            }
            batch = true;
            dim[i] = DIM_BATCH;
            continue;
        }
        if (parse_int(ctx, d, 0, INT32_MAX, "dimension", &dim[i]))
            return NULL;
        if (dim[i] && numel > MAX_ELEMENTS / dim[i]) {
            ctx_error(ctx, d->loc, "type has too many elements (more than 2^40)");
            return NULL;
        }
        numel *= dim[i];
    }
    Type t = make_type((DType)dt, dims->n, dim);
    if (pack) {
        Tok *first = pack->items[0];
        if (dt != TY_B1) {
            ctx_error(ctx, first->key->loc, "pack(...) is only for b1 types, not %s", dtype->text);
            return NULL;
        }
        static const char *const keys[] = {"axis", "word", "pad", "tile"};
        bool seen[4] = {false, false, false, false};
        for (int i = 0; i < pack->n; i++) {
            Tok *v = pack->items[i];
            int k = 0;
            while (k < 4 && strcmp(keys[k], v->key->text) != 0)
                k++;
            if (k == 4) {
                ctx_error(ctx, v->key->loc, "unknown pack field '%s' (expected axis, word, pad, tile)",
                          v->key->text);
                return NULL;
            }
            if (seen[k]) {
                ctx_error(ctx, v->key->loc, "pack field '%s' given twice", keys[k]);
                return NULL;
            }
            seen[k] = true;
            int64_t x = 0;
            if (k == 3) {
                int tile = v->kind == TK_IDENT ? tile_from_name(v->text) : -1;
                if (tile < 0) {
                    ctx_error(ctx, v->loc, "unknown tile order '%s' (expected none, k128 or k256)",
                              v->text);
                    return NULL;
                }
                t.pack.tile = (TileOrder)tile;
            } else if (k == 0) {
                if (parse_int(ctx, v, 0, t.rank ? t.rank - 1 : 0, "pack axis", &x))
                    return NULL;
                t.pack.axis = (int)x;
            } else if (k == 1) {
                if (parse_int(ctx, v, 0, INT32_MAX, "pack word", &x))
                    return NULL;
                if (x != 32 && x != 64) {
                    ctx_error(ctx, v->loc, "pack word must be 32 or 64, found %s", v->text);
                    return NULL;
                }
                t.pack.word_bits = (int)x;
            } else {
                if (parse_int(ctx, v, 0, INT32_MAX, "pack pad", &x))
                    return NULL;
                t.pack.pad_to = (int)x;
            }
        }
        for (int k = 0; k < 4; k++)
            if (!seen[k]) {
                ctx_error(ctx, first->key->loc, "pack(...) needs axis, word, pad and tile; '%s' is missing",
                          keys[k]);
                return NULL;
            }
    }
    Tok *r = ctx_tok(ctx, TK_TYPE, dtype->loc, NULL, 0);
    r->type = ctx_alloc(ctx, sizeof *r->type);
    *r->type = t;
    return r;
}

/* ---------------------------------------------------------------- constant data */

static int hex_value(int ch) {
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

static bool is_blank(int ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; }

/* Column of byte i of a string token's contents (assumes no escapes before it). */
static TextLoc char_loc(const Tok *t, size_t i) {
    TextLoc l = {t->loc.line, t->loc.col + 1 + (int)(i < INT_MAX / 2 ? i : 0)};
    return l;
}

static void *decode_hex(ParseCtx *ctx, const Tok *t, const char *name, const char *type,
                        size_t nbytes) {
    size_t digits = 0;
    for (size_t i = 0; t->text[i]; i++) {
        unsigned char ch = (unsigned char)t->text[i];
        if (is_blank(ch))
            continue;
        if (hex_value(ch) < 0) {
            ctx_error(ctx, char_loc(t, i), "invalid hex digit '%c' in the data of $%s",
                      ch >= 32 && ch < 127 ? ch : '?', name);
            return NULL;
        }
        digits++;
    }
    if (digits % 2) {
        ctx_error(ctx, t->loc, "hex data of $%s has an odd number of digits (%zu)", name, digits);
        return NULL;
    }
    if (digits / 2 != nbytes) {
        ctx_error(ctx, t->loc, "hex data of $%s has %zu bytes, its type %s needs %zu", name,
                  digits / 2, type, nbytes);
        return NULL;
    }
    uint8_t *data = xmalloc(nbytes);
    size_t k = 0;
    int hi = -1;
    for (size_t i = 0; t->text[i]; i++) {
        int v = hex_value((unsigned char)t->text[i]);
        if (v < 0)
            continue;
        if (hi < 0) {
            hi = v;
        } else {
            data[k++] = (uint8_t)(hi * 16 + v);
            hi = -1;
        }
    }
    return data;
}

static int base64_value(int ch) {
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    if (ch == '+')
        return 62;
    if (ch == '/')
        return 63;
    return -1;
}

static void *decode_base64(ParseCtx *ctx, const Tok *t, const char *name, const char *type,
                           size_t nbytes) {
    size_t chars = 0, pads = 0;
    for (size_t i = 0; t->text[i]; i++) {
        unsigned char ch = (unsigned char)t->text[i];
        if (is_blank(ch))
            continue;
        if (ch == '=') {
            pads++;
            continue;
        }
        if (base64_value(ch) < 0 || pads) {
            ctx_error(ctx, char_loc(t, i), "invalid base64 character '%c' in the data of $%s",
                      ch >= 32 && ch < 127 ? ch : '?', name);
            return NULL;
        }
        chars++;
    }
    if (chars % 4 == 1 || pads > 2 || (pads && (chars + pads) % 4)) {
        ctx_error(ctx, t->loc, "base64 data of $%s is truncated or badly padded", name);
        return NULL;
    }
    size_t got = chars / 4 * 3 + (chars % 4 ? chars % 4 - 1 : 0);
    if (got != nbytes) {
        ctx_error(ctx, t->loc, "base64 data of $%s has %zu bytes, its type %s needs %zu", name, got,
                  type, nbytes);
        return NULL;
    }
    uint8_t *data = xmalloc(nbytes ? nbytes : 1);
    uint32_t acc = 0;
    int bits = 0;
    size_t k = 0;
    for (size_t i = 0; t->text[i]; i++) {
        int v = base64_value((unsigned char)t->text[i]);
        if (v < 0)
            continue;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (k < nbytes)
                data[k++] = (uint8_t)(acc >> bits);
        }
    }
    return data;
}

static void *decode_list(ParseCtx *ctx, const Tok *t, const Type *ty, const char *name,
                         const char *type, size_t nbytes) {
    int64_t numel = type_numel(ty, 1);
    Vec *list = t->list;
    if (list->n != numel) {
        ctx_error(ctx, t->loc, "$%s has %d elements, its type %s needs %lld", name, list->n, type,
                  (long long)numel);
        return NULL;
    }
    uint8_t *data = xcalloc(1, nbytes ? nbytes : 1);
    int bytes = dtype_bits(ty->dtype) / 8;
    for (int i = 0; i < list->n; i++) {
        Tok *e = list->items[i];
        char what[96];
        snprintf(what, sizeof what, "element %d of $%.40s (%s)", i, name, dtype_name(ty->dtype));
        int64_t v = 0;
        float f = 0;
        int rc = 0;
        switch (ty->dtype) {
        case TY_F32: {
            rc = parse_float(ctx, e, what, &f);
            uint32_t bitsf;
            memcpy(&bitsf, &f, sizeof bitsf);
            store_le(data + 4 * i, bitsf, 4);
            break;
        }
        case TY_F16: {
            rc = parse_float(ctx, e, what, &f);
            uint16_t h = float_to_half(f);
            if (!rc && (h & 0x7fffu) == 0x7c00u && !isinf(f)) {
                ctx_error(ctx, e->loc, "%s is out of range for f16: %s", what, e->text);
                rc = -1;
            }
            store_le(data + 2 * i, h, 2);
            break;
        }
        case TY_I64: rc = parse_int(ctx, e, INT64_MIN, INT64_MAX, what, &v); break;
        case TY_I32: rc = parse_int(ctx, e, INT32_MIN, INT32_MAX, what, &v); break;
        case TY_I8: rc = parse_int(ctx, e, INT8_MIN, INT8_MAX, what, &v); break;
        case TY_U8: rc = parse_int(ctx, e, 0, UINT8_MAX, what, &v); break;
        case TY_B1:
            rc = parse_int(ctx, e, -1, 1, what, &v);
            bit_set(data, i, v == 1);
            break;
        case TY_COUNT: unreachable("bad dtype");
        }
        if (rc) {
            free(data);
            return NULL;
        }
        if (!dtype_is_float(ty->dtype) && ty->dtype != TY_B1)
            store_le(data + (size_t)bytes * (size_t)i, (uint64_t)v, bytes);
    }
    return data;
}

static void *read_side_file(ParseCtx *ctx, const Tok *t, const char *name, size_t nbytes) {
    int64_t offset;
    char what[96];
    snprintf(what, sizeof what, "offset of $%.40s", name);
    if (parse_int(ctx, t->extra, 0, INT64_MAX, what, &offset))
        return NULL;
    if (!t->text[0]) {
        ctx_error(ctx, t->loc, "empty weights file name for $%s", name);
        return NULL;
    }
    Buf path = {0};
    if (t->text[0] != '/' && ctx->dir[0])
        buf_printf(&path, "%s/", ctx->dir);
    buf_puts(&path, t->text);
    void *data = NULL;
    FILE *f = fopen(path.data, "rb");
    if (!f) {
        ctx_error(ctx, t->loc, "cannot open weights file '%s' for $%s: %s", path.data, name,
                  strerror(errno));
        goto done;
    }
    off_t size = -1;
    if (fseeko(f, 0, SEEK_END) == 0)
        size = ftello(f);
    if (size < 0) {
        ctx_error(ctx, t->loc, "cannot read weights file '%s' for $%s: %s", path.data, name,
                  strerror(errno));
        goto done;
    }
    if ((int64_t)size < offset || (uint64_t)((int64_t)size - offset) < (uint64_t)nbytes) {
        ctx_error(ctx, t->loc,
                  "weights file '%s' is too short for $%s: it needs %zu bytes at offset %lld, "
                  "the file has %lld bytes",
                  path.data, name, nbytes, (long long)offset, (long long)size);
        goto done;
    }
    data = xmalloc(nbytes ? nbytes : 1);
    if (fseeko(f, (off_t)offset, SEEK_SET) != 0 || fread(data, 1, nbytes, f) != nbytes) {
        ctx_error(ctx, t->loc, "cannot read weights file '%s' for $%s", path.data, name);
        free(data);
        data = NULL;
    }
done:
    if (f)
        fclose(f);
    buf_free(&path);
    return data;
}

/* ---------------------------------------------------------------- declarations */

int build_const(ParseCtx *ctx, Tok *name, Tok *type, Tok *data) {
    Value *old = graph_find_const(ctx->g, name->text);
    if (old) {
        error_redefined(ctx, name, old);
        return -1;
    }
    const Type *ty = type->type;
    if (type_has_batch(ty)) {
        ctx_error(ctx, type->loc, "constant $%s cannot have the batch dimension N", name->text);
        return -1;
    }
    char tbuf[256];
    type_str(ty, tbuf, sizeof tbuf);
    size_t nbytes = type_nbytes(ty, 1);
    void *bytes = NULL;
    switch (data->kind) {
    case TK_HEX: bytes = decode_hex(ctx, data, name->text, tbuf, nbytes); break;
    case TK_BASE64: bytes = decode_base64(ctx, data, name->text, tbuf, nbytes); break;
    case TK_LIST: bytes = decode_list(ctx, data, ty, name->text, tbuf, nbytes); break;
    case TK_FILE: bytes = read_side_file(ctx, data, name->text, nbytes); break;
    default: unreachable("bad constant data kind %d", (int)data->kind);
    }
    if (!bytes)
        return -1;
    Value *v = add_const(ctx->g, name->text, *ty, bytes, nbytes);
    note_def(ctx, v, name->loc);
    return 0;
}

int build_graph_name(ParseCtx *ctx, Tok *name) {
    free(ctx->g->name);
    ctx->g->name = xstrdup(name->text);
    return 0;
}

int build_param(ParseCtx *ctx, Tok *name, Tok *type) {
    Value *old = graph_find_value(ctx->g, name->text);
    if (old) {
        error_redefined(ctx, name, old);
        return -1;
    }
    Value *v = add_input(ctx->g, name->text, *type->type);
    note_def(ctx, v, name->loc);
    return 0;
}

int build_outputs(ParseCtx *ctx, Vec *types) {
    ctx->out_types = types;
    return 0;
}

static Value *find_operand(ParseCtx *ctx, const Tok *t) {
    bool local = t->kind == TK_LOCAL;
    Value *v = local ? graph_find_value(ctx->g, t->text) : graph_find_const(ctx->g, t->text);
    if (!v)
        ctx_error(ctx, t->loc, "undefined %s %c%s", local ? "value" : "constant", local ? '%' : '$',
                  t->text);
    return v;
}

static int set_node_attr(ParseCtx *ctx, Node *n, const Tok *val) {
    const char *opname = op_info(n->op)->name;
    const Tok *key = val->key;
    const AttrSpec *spec = op_attr_specs(n->op);
    while (spec->key && strcmp(spec->key, key->text) != 0)
        spec++;
    if (!spec->key) {
        Buf known = {0};
        for (const AttrSpec *s = op_attr_specs(n->op); s->key; s++)
            buf_printf(&known, "%s%s", known.len ? ", " : "", s->key);
        if (known.len)
            ctx_error(ctx, key->loc, "unknown attribute '%s' for %s (it takes %s)", key->text,
                      opname, known.data);
        else
            ctx_error(ctx, key->loc, "unknown attribute '%s': %s takes no attributes", key->text,
                      opname);
        buf_free(&known);
        return -1;
    }
    if (get_attr(n, key->text)) {
        ctx_error(ctx, key->loc, "attribute '%s' given twice", key->text);
        return -1;
    }
    char what[96], desc[64];
    snprintf(what, sizeof what, "attribute '%s' of %s", key->text, opname);
    switch (spec->kind) {
    case ATTR_INT: {
        int64_t v;
        if (parse_int(ctx, val, INT64_MIN, INT64_MAX, what, &v))
            return -1;
        set_attr_int(n, key->text, v);
        return 0;
    }
    case ATTR_FLOAT: {
        float f;
        if (parse_float(ctx, val, what, &f))
            return -1;
        set_attr_float(n, key->text, f);
        return 0;
    }
    case ATTR_INTS:
    case ATTR_FLOATS: {
        bool ints = spec->kind == ATTR_INTS;
        if (val->kind != TK_LIST) {
            ctx_error(ctx, val->loc, "%s must be a list of %s, found %s", what,
                      ints ? "integers" : "numbers", tok_desc(val, desc, sizeof desc));
            return -1;
        }
        Vec *l = val->list;
        int64_t *iv = xmalloc((size_t)(l->n ? l->n : 1) * sizeof *iv);
        float *fv = xmalloc((size_t)(l->n ? l->n : 1) * sizeof *fv);
        int rc = 0;
        for (int i = 0; i < l->n && !rc; i++)
            rc = ints ? parse_int(ctx, l->items[i], INT64_MIN, INT64_MAX, what, &iv[i])
                      : parse_float(ctx, l->items[i], what, &fv[i]);
        if (!rc) {
            if (ints)
                set_attr_ints(n, key->text, l->n, iv);
            else
                set_attr_floats(n, key->text, l->n, fv);
        }
        free(iv);
        free(fv);
        return rc;
    }
    case ATTR_STR:
        if (val->kind != TK_IDENT && val->kind != TK_STRING) {
            ctx_error(ctx, val->loc, "%s must be a word or a string, found %s", what,
                      tok_desc(val, desc, sizeof desc));
            return -1;
        }
        set_attr_str(n, key->text, val->text);
        return 0;
    }
    unreachable("bad attribute kind");
}

/* True when diag_message() already starts with this file's name (a located message). */
static bool message_is_located(const ParseCtx *ctx) {
    size_t n = strlen(ctx->file);
    const char *m = diag_message();
    return strncmp(m, ctx->file, n) == 0 && m[n] == ':';
}

int build_stmt(ParseCtx *ctx, Vec *names, Vec *types, OpCall *call) {
    Graph *g = ctx->g;
    Tok *optok = call->op;
    int op = op_from_name(optok->text);
    if (op < 0) {
        ctx_error(ctx, optok->loc, "unknown op '%s'", optok->text);
        return -1;
    }
    const OpInfo *info = op_info((Op)op);
    int nin = call->operands->n;
    if (nin < info->min_inputs || (info->max_inputs >= 0 && nin > info->max_inputs)) {
        if (info->max_inputs < 0)
            ctx_error(ctx, optok->loc, "%s takes at least %d operand%s, found %d", info->name,
                      info->min_inputs, info->min_inputs == 1 ? "" : "s", nin);
        else if (info->min_inputs == info->max_inputs)
            ctx_error(ctx, optok->loc, "%s takes %d operand%s, found %d", info->name,
                      info->min_inputs, info->min_inputs == 1 ? "" : "s", nin);
        else
            ctx_error(ctx, optok->loc, "%s takes %d to %d operands, found %d", info->name,
                      info->min_inputs, info->max_inputs, nin);
        return -1;
    }
    Tok *first = names->items[0];
    if (names->n != info->outputs) {
        ctx_error(ctx, first->loc, "%s defines %d result%s, found %d name%s", info->name,
                  info->outputs, info->outputs == 1 ? "" : "s", names->n, names->n == 1 ? "" : "s");
        return -1;
    }
    if (types && types->n != names->n) {
        Tok *t0 = types->items[0];
        ctx_error(ctx, t0->loc, "%d result type%s for %d result%s", types->n,
                  types->n == 1 ? "" : "s", names->n, names->n == 1 ? "" : "s");
        return -1;
    }
    const char *out_names[MAX_OUTPUTS];
    Type out_types[MAX_OUTPUTS];
    for (int i = 0; i < names->n; i++) {
        Tok *nt = names->items[i];
        Value *old = graph_find_value(g, nt->text);
        if (old) {
            error_redefined(ctx, nt, old);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(((Tok *)names->items[j])->text, nt->text) == 0) {
                ctx_error(ctx, nt->loc, "%%%s is named twice in one statement", nt->text);
                return -1;
            }
        out_names[i] = nt->text;
        out_types[i] = types ? *((Tok *)types->items[i])->type : make_type(TY_F32, 0, NULL);
    }
    Value **in = ctx_alloc(ctx, (size_t)nin * sizeof *in);
    for (int i = 0; i < nin; i++)
        if (!(in[i] = find_operand(ctx, call->operands->items[i])))
            return -1;

    Node *n = add_node(g, (Op)op, nin, in, out_names, out_types);
    n->loc = (Loc){ctx->file, first->loc.line, first->loc.col};
    for (int i = 0; i < n->nout; i++)
        note_def(ctx, n->out[i], ((Tok *)names->items[i])->loc);
    for (int i = 0; call->attrs && i < call->attrs->n; i++)
        if (set_node_attr(ctx, n, call->attrs->items[i]))
            return -1;
    if (call->src_name)
        node_set_src(n, call->src_name->text, call->src_op ? call->src_op->text : NULL);

    if (!types && op == OP_RESHAPE) {
        ctx_error(ctx, optok->loc, "reshape needs its result type written before the op name");
        return -1;
    }
    /* Reshape keeps its written type; every other op's result type is inferred here,
     * so that a wrong operand or a wrong written type is reported at this line before
     * any later statement can fail on it. */
    Type inferred[MAX_OUTPUTS];
    diag_clear();
    if (infer_node_types(n, inferred)) {
        if (message_is_located(ctx))
            ctx->failed = true;
        else
            ctx_error(ctx, optok->loc, "%s", diag_message());
        return -1;
    }
    for (int i = 0; i < n->nout; i++) {
        if (!types) {
            n->out[i]->type = inferred[i];
        } else if (op != OP_RESHAPE && !type_equal(&inferred[i], &out_types[i])) {
            char a[256], b[256];
            Tok *tt = types->items[i];
            ctx_error(ctx, tt->loc, "%%%s is declared %s, but %s gives %s", n->out[i]->name,
                      type_str(&out_types[i], a, sizeof a), info->name,
                      type_str(&inferred[i], b, sizeof b));
            return -1;
        }
    }
    return 0;
}

int build_ret(ParseCtx *ctx, Tok *kw, Vec *operands) {
    Vec *decl = ctx->out_types;
    if (operands->n != decl->n) {
        ctx_error(ctx, kw->loc, "ret gives %d value%s, the graph signature declares %d",
                  operands->n, operands->n == 1 ? "" : "s", decl->n);
        return -1;
    }
    for (int i = 0; i < operands->n; i++) {
        Tok *t = operands->items[i];
        Value *v = find_operand(ctx, t);
        if (!v)
            return -1;
        const Type *want = ((Tok *)decl->items[i])->type;
        if (!type_equal(&v->type, want)) {
            char a[256], b[256];
            ctx_error(ctx, t->loc, "%c%s has type %s, the graph signature declares %s",
                      t->kind == TK_LOCAL ? '%' : '$', t->text, type_str(&v->type, a, sizeof a),
                      type_str(want, b, sizeof b));
            return -1;
        }
        add_output(ctx->g, v);
    }
    return 0;
}

/* ---------------------------------------------------------------- entry points */

static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        return xstrdup("");
    if (slash == path)
        return xstrdup("/");
    return xstrndup(path, (size_t)(slash - path));
}

Graph *parse_text_string(const char *path, const char *text, size_t len) {
    if (!path)
        path = "<input>";
    ParseCtx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.file = intern_file(path);
    ctx.dir = dir_of(path);
    ctx.line = 1;
    ctx.col = 1;
    ctx.g = new_graph("main");
    diag_clear();
    diag_set_source(ctx.file, text, len);

    if (len > INT_MAX / 2) {
        TextLoc start = {0, 0};
        ctx_error(&ctx, start, "%s: model text too large (%zu bytes)", path, len);
    } else {
        void *scanner;
        if (txlex_init_extra(&ctx, &scanner) != 0) {
            fprintf(stderr, "bnncc: out of memory\n");
            exit(1);
        }
        YY_BUFFER_STATE buf = tx_scan_bytes(text, (int)len, scanner);
        int rc = txparse(scanner, &ctx);
        tx_delete_buffer(buf, scanner);
        txlex_destroy(scanner);
        if (rc != 0 && !ctx.failed) {
            TextLoc here = {ctx.line, ctx.col};
            ctx_error(&ctx, here, "cannot parse the model (parser out of memory)");
        }
    }
    Graph *g = ctx.g;
    bool failed = ctx.failed;
    free_arena(&ctx);
    if (failed || verify_graph(g) != 0) {
        free_graph(g);
        return NULL;
    }
    return g;
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
