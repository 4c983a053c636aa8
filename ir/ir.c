/* ir.c: types, the op table, graph construction and rewiring, diagnostics. */
#include "ir.h"

#include <assert.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---------------------------------------------------------------- diagnostics */

static char diag_buf[4096];

typedef struct Source {
    char *file;
    char *text;
    size_t len;
} Source;

static Source *sources;
static int nsources;

void diag_clear(void) { diag_buf[0] = '\0'; }
const char *diag_message(void) { return diag_buf; }

void diag_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(diag_buf, sizeof diag_buf, fmt, ap);
    va_end(ap);
}

void diag_set_source(const char *file, const char *text, size_t len) {
    sources = xrealloc(sources, (size_t)(nsources + 1) * sizeof *sources);
    Source *s = &sources[nsources++];
    s->file = xstrdup(file);
    s->text = xmalloc(len + 1);
    memcpy(s->text, text, len);
    s->text[len] = '\0';
    s->len = len;
}

void diag_free_sources(void) {
    for (int i = 0; i < nsources; i++) {
        free(sources[i].file);
        free(sources[i].text);
    }
    free(sources);
    sources = NULL;
    nsources = 0;
}

static const Source *find_source(const char *file) {
    for (int i = nsources - 1; i >= 0; i--)
        if (file && strcmp(sources[i].file, file) == 0)
            return &sources[i];
    return NULL;
}

void diag_error_at(Loc loc, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (loc.line <= 0) {
        snprintf(diag_buf, sizeof diag_buf, "%s", msg);
        return;
    }
    int n = snprintf(diag_buf, sizeof diag_buf, "%s:%d:%d: %s", loc.file ? loc.file : "<input>",
                     loc.line, loc.col, msg);
    const Source *src = find_source(loc.file);
    if (!src || n < 0 || (size_t)n >= sizeof diag_buf)
        return;
    /* Quote the line and put a caret under the column. */
    const char *p = src->text, *end = src->text + src->len;
    for (int line = 1; line < loc.line && p < end; p++)
        if (*p == '\n')
            line++;
    const char *eol = p;
    while (eol < end && *eol != '\n')
        eol++;
    int width = (int)(eol - p);
    if (width > 200)
        width = 200;
    int col = loc.col < 1 ? 1 : loc.col;
    if (col > width + 1)
        col = width + 1;
    snprintf(diag_buf + n, sizeof diag_buf - (size_t)n, "\n  %.*s\n  %*s", width, p, col, "^");
}

_Noreturn void unreachable_at(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "internal error at %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

/* ---------------------------------------------------------------- types */

static const struct {
    const char *name;
    int bits;
} dtypes[] = {
#define X(e, name, bits) {name, bits},
    DTYPE_LIST(X)
#undef X
};
_Static_assert(sizeof dtypes / sizeof dtypes[0] == TY_COUNT, "dtype table");

const char *dtype_name(DType t) { return (unsigned)t < TY_COUNT ? dtypes[t].name : "?"; }
int dtype_bits(DType t) { return dtypes[t].bits; }
bool dtype_is_float(DType t) { return t == TY_F32 || t == TY_F16; }

int dtype_from_name(const char *name) {
    for (int i = 0; i < TY_COUNT; i++)
        if (strcmp(dtypes[i].name, name) == 0)
            return i;
    return -1;
}

static const char *const tile_names[] = {"none", "k128", "k256"};
_Static_assert(sizeof tile_names / sizeof tile_names[0] == TILE_COUNT, "tile table");

const char *tile_name(TileOrder t) { return (unsigned)t < TILE_COUNT ? tile_names[t] : "?"; }
int tile_from_name(const char *name) {
    for (int i = 0; i < TILE_COUNT; i++)
        if (strcmp(tile_names[i], name) == 0)
            return i;
    return -1;
}

Type make_type(DType dtype, int rank, const int64_t *dim) {
    Type t;
    memset(&t, 0, sizeof t);
    assert(rank >= 0 && rank <= MAX_RANK);
    t.dtype = dtype;
    t.rank = rank;
    for (int i = 0; i < rank; i++)
        t.dim[i] = dim[i];
    return t;
}

bool type_equal(const Type *a, const Type *b) {
    if (a->dtype != b->dtype || a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i])
            return false;
    if (a->dtype == TY_B1)
        return a->pack.word_bits == b->pack.word_bits &&
               (a->pack.word_bits == 0 ||
                (a->pack.axis == b->pack.axis && a->pack.pad_to == b->pack.pad_to &&
                 a->pack.tile == b->pack.tile));
    return true;
}

bool type_has_batch(const Type *t) {
    for (int i = 0; i < t->rank; i++)
        if (t->dim[i] == DIM_BATCH)
            return true;
    return false;
}

size_t type_nbytes(const Type *t, int64_t batch) {
    int64_t n = type_numel(t, batch);
    if (t->dtype == TY_B1)
        return (size_t)((n + 7) / 8);
    return (size_t)n * (size_t)(dtype_bits(t->dtype) / 8);
}

const char *type_str(const Type *t, char *buf, size_t len) {
    size_t n = (size_t)snprintf(buf, len, "%s[", dtype_name(t->dtype));
    for (int i = 0; i < t->rank && n < len; i++) {
        if (t->dim[i] == DIM_BATCH)
            n += (size_t)snprintf(buf + n, len - n, "%sN", i ? "," : "");
        else
            n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? "," : "", (long long)t->dim[i]);
    }
    if (n < len)
        n += (size_t)snprintf(buf + n, len - n, "]");
    if (t->dtype == TY_B1 && t->pack.word_bits && n < len)
        snprintf(buf + n, len - n, " pack(axis=%d, word=%d, pad=%d, tile=%s)", t->pack.axis,
                 t->pack.word_bits, t->pack.pad_to, tile_name(t->pack.tile));
    return buf;
}

/* ---------------------------------------------------------------- ops */

static const OpInfo op_table[] = {
#define X(e, name, nin_min, nin_max, nout, flags) {name, nin_min, nin_max, nout, flags},
    OP_LIST(X)
#undef X
};
_Static_assert(sizeof op_table / sizeof op_table[0] == OP_COUNT, "op table");

const OpInfo *op_info(Op op) {
    if ((unsigned)op >= OP_COUNT)
        unreachable("bad op %d", (int)op);
    return &op_table[op];
}

int op_from_name(const char *name) {
    for (int i = 0; i < OP_COUNT; i++)
        if (strcmp(op_table[i].name, name) == 0)
            return i;
    return -1;
}

/* Attributes each op accepts, in print order; defaults live in docs/ir.md and
 * at the accessor calls in infer.c and interp.c. */
#define SPEC_END {NULL, 0}
static const AttrSpec spec_none[] = {SPEC_END};
static const AttrSpec spec_conv2d[] = {{"strides", ATTR_INTS}, {"pads", ATTR_INTS},
                                       {"dilations", ATTR_INTS}, {"groups", ATTR_INT},
                                       {"pad_value", ATTR_INT}, SPEC_END};
static const AttrSpec spec_batchnorm[] = {{"epsilon", ATTR_FLOAT}, SPEC_END};
static const AttrSpec spec_binarize[] = {{"zero", ATTR_INT}, SPEC_END};
static const AttrSpec spec_quant[] = {{"signed", ATTR_INT}, {"narrow", ATTR_INT},
                                      {"rounding", ATTR_STR}, SPEC_END};
static const AttrSpec spec_trunc[] = {{"rounding", ATTR_STR}, SPEC_END};
static const AttrSpec spec_cast[] = {{"to", ATTR_STR}, SPEC_END};
static const AttrSpec spec_maxpool[] = {{"kernel", ATTR_INTS}, {"strides", ATTR_INTS},
                                        {"pads", ATTR_INTS}, {"dilations", ATTR_INTS},
                                        {"ceil_mode", ATTR_INT}, SPEC_END};
static const AttrSpec spec_avgpool[] = {{"kernel", ATTR_INTS}, {"strides", ATTR_INTS},
                                        {"pads", ATTR_INTS}, {"ceil_mode", ATTR_INT},
                                        {"count_include_pad", ATTR_INT}, SPEC_END};
static const AttrSpec spec_clip[] = {{"min", ATTR_FLOAT}, {"max", ATTR_FLOAT}, SPEC_END};
static const AttrSpec spec_transpose[] = {{"perm", ATTR_INTS}, SPEC_END};
static const AttrSpec spec_axis[] = {{"axis", ATTR_INT}, SPEC_END};
static const AttrSpec spec_pad[] = {{"pads", ATTR_INTS}, {"value", ATTR_FLOAT}, SPEC_END};
static const AttrSpec spec_argmax[] = {{"axis", ATTR_INT}, {"keepdims", ATTR_INT}, SPEC_END};
static const AttrSpec spec_topk[] = {{"k", ATTR_INT}, {"axis", ATTR_INT}, {"largest", ATTR_INT},
                                     SPEC_END};
/* bconv2d: conv2d's attributes, then the optional max-pool it absorbed. */
static const AttrSpec spec_bconv2d[] = {{"strides", ATTR_INTS}, {"pads", ATTR_INTS},
                                        {"dilations", ATTR_INTS}, {"groups", ATTR_INT},
                                        {"pad_value", ATTR_INT}, {"pool_kernel", ATTR_INTS},
                                        {"pool_strides", ATTR_INTS}, {"pool_pads", ATTR_INTS},
                                        {"pool_ceil_mode", ATTR_INT}, {"pool_before", ATTR_INT},
                                        SPEC_END};

/* bconv2d_chain: conv2d's attributes, then its float epilogue's (docs/ir.md). */
static const AttrSpec spec_bconv2d_chain[] = {{"strides", ATTR_INTS}, {"pads", ATTR_INTS},
                                              {"dilations", ATTR_INTS}, {"groups", ATTR_INT},
                                              {"pad_value", ATTR_INT}, {"div", ATTR_INTS},
                                              {"relu", ATTR_INTS}, {"residual_first", ATTR_INT},
                                              {"zero", ATTR_INT}, SPEC_END};

/* bdense_chain: the float epilogue's attributes (docs/ir.md). */
static const AttrSpec spec_bdense_chain[] = {{"div", ATTR_INTS}, {"relu", ATTR_INTS},
                                             {"residual_first", ATTR_INT}, {"zero", ATTR_INT},
                                             SPEC_END};

/* conv2d_chain: conv2d's geometry, the float epilogue's, the max-pool's, binarize's zero. */
static const AttrSpec spec_conv2d_chain[] = {{"strides", ATTR_INTS}, {"pads", ATTR_INTS},
                                             {"dilations", ATTR_INTS}, {"groups", ATTR_INT},
                                             {"pad_value", ATTR_INT}, {"div", ATTR_INTS},
                                             {"relu", ATTR_INTS}, {"pool_kernel", ATTR_INTS}, {"pool_strides", ATTR_INTS},
                                             {"pool_pads", ATTR_INTS}, {"pool_ceil_mode", ATTR_INT},
                                             {"pool_at", ATTR_INT}, {"zero", ATTR_INT},
                                             {"quant_scale", ATTR_FLOAT}, {"quant_zero", ATTR_FLOAT},
                                             {"quant_bits", ATTR_INT}, {"signed", ATTR_INT}, {"narrow", ATTR_INT},
                                             {"rounding", ATTR_STR}, {"dequant", ATTR_INT}, SPEC_END};

/* qdense: the bit width of its unsigned input codes (docs/ir.md). */
static const AttrSpec spec_qdense[] = {{"xbits", ATTR_INT}, SPEC_END};
/* qconv2d: conv2d's geometry, the input code width and the code that padding stands for. */
static const AttrSpec spec_qconv2d[] = {{"strides", ATTR_INTS}, {"pads", ATTR_INTS},
                                        {"dilations", ATTR_INTS}, {"groups", ATTR_INT},
                                        {"xbits", ATTR_INT}, {"pad_code", ATTR_INT}, SPEC_END};

/* qconv2d_chain: qconv2d's attributes, the float chain's, the relu after the residual, the
 * fused quantizer's (scalar scale and zero point, bit width, quant's flags) and whether the f32
 * result is that quantizer's float value (docs/ir.md). */
static const AttrSpec spec_qconv2d_chain[] = {
    {"strides", ATTR_INTS}, {"pads", ATTR_INTS}, {"dilations", ATTR_INTS}, {"groups", ATTR_INT},
    {"xbits", ATTR_INT}, {"pad_code", ATTR_INT}, {"div", ATTR_INTS}, {"relu", ATTR_INTS},
    {"residual_first", ATTR_INT}, {"out_relu", ATTR_INT}, {"quant_scale", ATTR_FLOAT},
    {"quant_zero", ATTR_FLOAT}, {"quant_bits", ATTR_INT}, {"signed", ATTR_INT}, {"narrow", ATTR_INT},
    {"rounding", ATTR_STR}, {"dequant", ATTR_INT}, SPEC_END};

const AttrSpec *op_attr_specs(Op op) {
    switch (op) {
    case OP_CONV2D: return spec_conv2d;
    case OP_BATCHNORM: return spec_batchnorm;
    case OP_BINARIZE: return spec_binarize;
    case OP_QUANT:
    case OP_QUANTIZE: return spec_quant;
    case OP_QDENSE: return spec_qdense;
    case OP_QCONV2D: return spec_qconv2d;
    case OP_QCONV2D_CHAIN: return spec_qconv2d_chain;
    case OP_TRUNC: return spec_trunc;
    case OP_CAST: return spec_cast;
    case OP_MAXPOOL: return spec_maxpool;
    case OP_AVGPOOL: return spec_avgpool;
    case OP_CLIP: return spec_clip;
    case OP_TRANSPOSE: return spec_transpose;
    case OP_CONCAT:
    case OP_SOFTMAX: return spec_axis;
    case OP_PAD: return spec_pad;
    case OP_ARGMAX: return spec_argmax;
    case OP_TOPK: return spec_topk;
    case OP_BCONV2D: return spec_bconv2d;
    case OP_BCONV2D_CHAIN: return spec_bconv2d_chain;
    case OP_CONV2D_CHAIN: return spec_conv2d_chain;
    case OP_BDENSE_CHAIN: return spec_bdense_chain;
    case OP_BDENSE:
    case OP_REPACK: return spec_none;
    case OP_DENSE: case OP_MATMUL: case OP_SIGN: case OP_THRESHOLD: case OP_GLOBALAVGPOOL:
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_POW: case OP_RELU:
    case OP_RESHAPE:
        return spec_none;
    case OP_COUNT: break;
    }
    unreachable("bad op %d", (int)op);
}

/* ---------------------------------------------------------------- graph */

#define PUSH(arr, count, cap, item)                                        \
    do {                                                                   \
        if ((count) == (cap)) {                                            \
            (cap) = (cap) ? 2 * (cap) : 8;                                 \
            (arr) = xrealloc((arr), (size_t)(cap) * sizeof *(arr));        \
        }                                                                  \
        (arr)[(count)++] = (item);                                         \
    } while (0)

Graph *new_graph(const char *name) {
    Graph *g = xcalloc(1, sizeof *g);
    g->name = xstrdup(name ? name : "main");
    return g;
}

static void free_attr(Attr *a) {
    free(a->key);
    free(a->ints);
    free(a->floats);
    free(a->s);
}

static void free_node(Node *n) {
    for (int i = 0; i < n->nattrs; i++)
        free_attr(&n->attrs[i]);
    free(n->attrs);
    free(n->in);
    free(n->src_name);
    free(n->src_op);
    free(n);
}

static void free_value(Value *v) {
    free(v->name);
    free(v->data);
    free(v);
}

void free_graph(Graph *g) {
    if (!g)
        return;
    for (int i = 0; i < g->nnodes; i++)
        free_node(g->nodes[i]);
    for (int i = 0; i < g->nvalues; i++)
        free_value(g->values[i]);
    free(g->nodes);
    free(g->values);
    free(g->inputs);
    free(g->outputs);
    free(g->consts);
    free(g->name);
    free(g);
}

static Value *new_value(Graph *g, ValueKind kind, const char *name, Type type) {
    Value *v = xcalloc(1, sizeof *v);
    v->kind = kind;
    v->type = type;
    v->name = name ? xstrdup(name) : graph_unique_name(g, "v");
    v->id = g->nvalues;
    PUSH(g->values, g->nvalues, g->cap_values, v);
    return v;
}

Value *graph_find_value(Graph *g, const char *name) {
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        if (v->kind != VAL_CONST && strcmp(v->name, name) == 0)
            return v;
    }
    return NULL;
}

Value *graph_find_const(Graph *g, const char *name) {
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        if (v->kind == VAL_CONST && strcmp(v->name, name) == 0)
            return v;
    }
    return NULL;
}

static bool name_taken(Graph *g, const char *name) {
    for (int i = 0; i < g->nvalues; i++)
        if (strcmp(g->values[i]->name, name) == 0)
            return true;
    return false;
}

char *graph_unique_name(Graph *g, const char *base) {
    size_t len = strlen(base) + 24;
    char *s = xmalloc(len);
    if (!name_taken(g, base)) {
        snprintf(s, len, "%s", base);
        return s;
    }
    for (long i = 1;; i++) {
        snprintf(s, len, "%s.%ld", base, i);
        if (!name_taken(g, s))
            return s;
    }
}

Value *add_input(Graph *g, const char *name, Type type) {
    Value *v = new_value(g, VAL_INPUT, name, type);
    PUSH(g->inputs, g->ninputs, g->cap_inputs, v);
    return v;
}

Value *add_const(Graph *g, const char *name, Type type, void *data, size_t nbytes) {
    assert(nbytes == type_nbytes(&type, 1));
    Value *v = new_value(g, VAL_CONST, name, type);
    v->data = data;
    v->nbytes = nbytes;
    PUSH(g->consts, g->nconsts, g->cap_consts, v);
    return v;
}

Node *add_node(Graph *g, Op op, int nin, Value *const *in, const char *const *out_names,
               const Type *out_types) {
    Node *n = xcalloc(1, sizeof *n);
    n->op = op;
    n->nin = nin;
    n->in = xcalloc((size_t)(nin ? nin : 1), sizeof *n->in);
    for (int i = 0; i < nin; i++)
        n->in[i] = in[i];
    n->nout = op_info(op)->outputs;
    for (int i = 0; i < n->nout; i++) {
        Type t = out_types ? out_types[i] : make_type(TY_F32, 0, NULL);
        Value *v = new_value(g, VAL_NODE, out_names ? out_names[i] : NULL, t);
        v->def = n;
        v->def_index = i;
        n->out[i] = v;
    }
    PUSH(g->nodes, g->nnodes, g->cap_nodes, n);
    return n;
}

void add_output(Graph *g, Value *v) { PUSH(g->outputs, g->noutputs, g->cap_outputs, v); }

void node_set_src(Node *n, const char *src_name, const char *src_op) {
    free(n->src_name);
    free(n->src_op);
    n->src_name = src_name ? xstrdup(src_name) : NULL;
    n->src_op = src_op ? xstrdup(src_op) : NULL;
}

/* ---------------------------------------------------------------- attributes */

static Attr *put_attr(Node *n, const char *key, AttrKind kind) {
    Attr *a = NULL;
    for (int i = 0; i < n->nattrs; i++)
        if (strcmp(n->attrs[i].key, key) == 0) {
            a = &n->attrs[i];
            free_attr(a);
            break;
        }
    if (!a) {
        n->attrs = xrealloc(n->attrs, (size_t)(n->nattrs + 1) * sizeof *n->attrs);
        a = &n->attrs[n->nattrs++];
    }
    memset(a, 0, sizeof *a);
    a->key = xstrdup(key);
    a->kind = kind;
    return a;
}

void set_attr_int(Node *n, const char *key, int64_t v) { put_attr(n, key, ATTR_INT)->i = v; }
void set_attr_float(Node *n, const char *key, float v) { put_attr(n, key, ATTR_FLOAT)->f = v; }
void set_attr_str(Node *n, const char *key, const char *s) {
    put_attr(n, key, ATTR_STR)->s = xstrdup(s);
}

void set_attr_ints(Node *n, const char *key, int count, const int64_t *v) {
    Attr *a = put_attr(n, key, ATTR_INTS);
    a->n = count;
    a->ints = xmalloc((size_t)(count ? count : 1) * sizeof *a->ints);
    memcpy(a->ints, v, (size_t)count * sizeof *v);
}

void set_attr_floats(Node *n, const char *key, int count, const float *v) {
    Attr *a = put_attr(n, key, ATTR_FLOATS);
    a->n = count;
    a->floats = xmalloc((size_t)(count ? count : 1) * sizeof *a->floats);
    memcpy(a->floats, v, (size_t)count * sizeof *v);
}

const Attr *get_attr(const Node *n, const char *key) {
    for (int i = 0; i < n->nattrs; i++)
        if (strcmp(n->attrs[i].key, key) == 0)
            return &n->attrs[i];
    return NULL;
}

int64_t attr_int(const Node *n, const char *key, int64_t def) {
    const Attr *a = get_attr(n, key);
    return a && a->kind == ATTR_INT ? a->i : def;
}

float attr_float(const Node *n, const char *key, float def) {
    const Attr *a = get_attr(n, key);
    if (a && a->kind == ATTR_FLOAT)
        return a->f;
    if (a && a->kind == ATTR_INT)
        return (float)a->i;
    return def;
}

int attr_ints(const Node *n, const char *key, int64_t *out, int max, int def_count,
              const int64_t *def) {
    const Attr *a = get_attr(n, key);
    const int64_t *src = def;
    int count = def_count;
    if (a && a->kind == ATTR_INTS) {
        src = a->ints;
        count = a->n;
    }
    for (int i = 0; i < count && i < max; i++)
        out[i] = src[i];
    return count;
}

const char *attr_str(const Node *n, const char *key, const char *def) {
    const Attr *a = get_attr(n, key);
    return a && a->kind == ATTR_STR ? a->s : def;
}

/* ---------------------------------------------------------------- rewiring */

void replace_all_uses(Graph *g, Value *old, Value *with) {
    for (int i = 0; i < g->nnodes; i++) {
        Node *n = g->nodes[i];
        if (n->dead)
            continue;
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] == old)
                n->in[j] = with;
    }
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == old)
            g->outputs[i] = with;
}

int count_uses(const Graph *g, const Value *v) {
    int uses = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const Node *n = g->nodes[i];
        if (n->dead)
            continue;
        for (int j = 0; j < n->nin; j++)
            uses += n->in[j] == v;
    }
    for (int i = 0; i < g->noutputs; i++)
        uses += g->outputs[i] == v;
    return uses;
}

void remove_node(Graph *g, Node *n) {
    (void)g;
    n->dead = true;
}

void graph_compact(Graph *g) {
    /* Drop dead nodes. */
    int k = 0;
    for (int i = 0; i < g->nnodes; i++) {
        if (g->nodes[i]->dead) {
            for (int j = 0; j < g->nodes[i]->nout; j++)
                g->nodes[i]->out[j]->def = NULL;
            free_node(g->nodes[i]);
        } else {
            g->nodes[k++] = g->nodes[i];
        }
    }
    g->nnodes = k;
    /* Mark values still referenced. */
    char *live = xcalloc((size_t)g->nvalues + 1, 1);
    for (int i = 0; i < g->nvalues; i++)
        g->values[i]->id = i;
    for (int i = 0; i < g->ninputs; i++)
        live[g->inputs[i]->id] = 1;
    for (int i = 0; i < g->noutputs; i++)
        live[g->outputs[i]->id] = 1;
    for (int i = 0; i < g->nnodes; i++) {
        Node *n = g->nodes[i];
        for (int j = 0; j < n->nin; j++)
            live[n->in[j]->id] = 1;
        for (int j = 0; j < n->nout; j++)
            live[n->out[j]->id] = 1;
    }
    k = 0;
    for (int i = 0; i < g->nvalues; i++) {
        if (live[i])
            g->values[k++] = g->values[i];
        else
            free_value(g->values[i]);
    }
    g->nvalues = k;
    for (int i = 0; i < g->nvalues; i++)
        g->values[i]->id = i;
    free(live);
    /* Constants list follows the live values. */
    k = 0;
    for (int i = 0; i < g->nvalues; i++)
        if (g->values[i]->kind == VAL_CONST) {
            if (k == g->cap_consts) {
                g->cap_consts = g->cap_consts ? 2 * g->cap_consts : 8;
                g->consts = xrealloc(g->consts, (size_t)g->cap_consts * sizeof *g->consts);
            }
            g->consts[k++] = g->values[i];
        }
    g->nconsts = k;
}

Node fused_pool_node(const Node *n, Value **in, Attr *attrs) {
    static const char *const keys[4][2] = {{"pool_kernel", "kernel"}, {"pool_strides", "strides"},
                                           {"pool_pads", "pads"}, {"pool_ceil_mode", "ceil_mode"}};
    Node pool = {.op = OP_MAXPOOL, .nin = 1, .in = in, .nout = 1, .out = {n->out[0]}, .attrs = attrs,
                 .loc = n->loc, .src_name = n->src_name, .src_op = n->src_op};
    for (int i = 0; i < 4; i++) {
        const Attr *a = get_attr(n, keys[i][0]);
        if (a) {
            attrs[pool.nattrs] = *a;
            attrs[pool.nattrs++].key = (char *)keys[i][1];
        }
    }
    return pool;
}

const char *node_where(const Node *n, char *buf, size_t len) {
    const char *opname = op_info(n->op)->name;
    const char *res = n->nout ? n->out[0]->name : "";
    if (n->src_name)
        snprintf(buf, len, "node '%s' (%s)", n->src_name, n->src_op ? n->src_op : opname);
    else
        snprintf(buf, len, "%s %%%s", opname, res);
    return buf;
}
