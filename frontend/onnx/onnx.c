/* onnx.c: the ONNX importer's driver: read and decode the model, define the graph's
 * inputs and initializers, order the nodes (rejecting cycles and undefined inputs),
 * fold or import each node, and hand back a verified Graph. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onnx_import.h"

/* Protobuf messages cannot exceed 2 GiB; ONNX puts larger weights in external files. */
#define MAX_MODEL_BYTES ((int64_t)2147483647)

/* ---------------------------------------------------------------- messages */

const char *imp_node_name(const Imp *im) {
    const Onnx__NodeProto *n = im->node;
    if (!n)
        return "";
    if (n->name && n->name[0])
        return n->name;
    if (n->n_output && n->output[0])
        return n->output[0];
    return "";
}

int imp_error(Imp *im, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (im->node)
        diag_error("%s: node '%s' (%s): %s", im->path, imp_node_name(im),
                   im->node->op_type ? im->node->op_type : "?", msg);
    else
        diag_error("%s: %s", im->path, msg);
    return -1;
}

/* ---------------------------------------------------------------- symbols */

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static Sym *sym_slot(Sym *tab, size_t cap, const char *name) {
    size_t k = (size_t)hash_str(name) & (cap - 1);
    while (tab[k].name && strcmp(tab[k].name, name))
        k = (k + 1) & (cap - 1);
    return &tab[k];
}

Sym *sym_lookup(Imp *im, const char *name) {
    if (!im->cap_syms || !name)
        return NULL;
    Sym *s = sym_slot(im->syms, im->cap_syms, name);
    return s->name && s->defined ? s : NULL;
}

Sym *sym_define(Imp *im, const char *name) {
    if (2 * (im->nsyms + 1) > im->cap_syms) {
        size_t cap = im->cap_syms ? 2 * im->cap_syms : 64;
        Sym *tab = xcalloc(cap, sizeof *tab);
        for (size_t k = 0; k < im->cap_syms; k++)
            if (im->syms[k].name)
                *sym_slot(tab, cap, im->syms[k].name) = im->syms[k];
        free(im->syms);
        im->syms = tab;
        im->cap_syms = cap;
    }
    Sym *s = sym_slot(im->syms, im->cap_syms, name);
    if (!s->name) {
        s->name = xstrdup(name);
        im->nsyms++;
    }
    /* A redefinition replaces the old meaning (never happens in a valid model: SSA). */
    free_ctensor(s->c);
    s->c = NULL;
    s->v = s->cv = NULL;
    s->is_bool = false;
    s->defined = true;
    return s;
}

static void free_syms(Imp *im) {
    for (size_t k = 0; k < im->cap_syms; k++) {
        free(im->syms[k].name);
        free_ctensor(im->syms[k].c);
    }
    free(im->syms);
    im->syms = NULL;
    im->cap_syms = im->nsyms = 0;
}

int node_nin(const Imp *im) { return (int)im->node->n_input; }

Sym *node_in(Imp *im, int i) {
    const Onnx__NodeProto *n = im->node;
    if (i < 0 || (size_t)i >= n->n_input || !n->input[i] || !n->input[i][0])
        return NULL;
    return sym_lookup(im, n->input[i]);
}

/* ---------------------------------------------------------------- names */

/* IR names keep the ONNX ones where they are plain; other characters become '_'. */
static char *sanitize_name(const char *s) {
    size_t n = strlen(s);
    char *d = xmalloc(n + 2);
    size_t k = 0;
    for (size_t j = 0; j < n; j++) {
        char c = s[j];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.';
        c = ok ? c : '_';
        if (c == '_' && k > 0 && d[k - 1] == '_')
            continue;
        d[k++] = c;
    }
    while (k > 1 && d[k - 1] == '_')
        k--;
    size_t start = 0;
    while (start + 1 < k && d[start] == '_')
        start++;
    if (start == k || k == 0) {
        strcpy(d, "v");
        return d;
    }
    memmove(d, d + start, k - start);
    d[k - start] = '\0';
    return d;
}

static void rename_value(Graph *g, Value *v, const char *onnx_name) {
    char *base = sanitize_name(onnx_name);
    if (strcmp(base, v->name) != 0) {
        char *u = graph_unique_name(g, base);
        free(v->name);
        v->name = u;
    }
    free(base);
}

/* ---------------------------------------------------------------- name -> producer map */

typedef struct NameMap {
    const char **keys;
    int *vals;
    size_t cap;
} NameMap;

static void map_init(NameMap *m, size_t n) {
    m->cap = 16;
    while (m->cap < 2 * n + 2)
        m->cap *= 2;
    m->keys = xcalloc(m->cap, sizeof *m->keys);
    m->vals = xcalloc(m->cap, sizeof *m->vals);
}

static size_t map_slot(const NameMap *m, const char *key) {
    size_t k = (size_t)hash_str(key) & (m->cap - 1);
    while (m->keys[k] && strcmp(m->keys[k], key))
        k = (k + 1) & (m->cap - 1);
    return k;
}

static int map_get(const NameMap *m, const char *key) {
    size_t k = map_slot(m, key);
    return m->keys[k] ? m->vals[k] : -1;
}

static void map_free(NameMap *m) {
    free(m->keys);
    free(m->vals);
}

/* ---------------------------------------------------------------- graph inputs and outputs */

static int define_initializers(Imp *im, const Onnx__GraphProto *gp) {
    for (size_t k = 0; k < gp->n_initializer; k++) {
        const Onnx__TensorProto *tp = gp->initializer[k];
        if (!tp->name || !tp->name[0])
            return imp_error(im, "initializer %zu has no name", k);
        char what[300];
        snprintf(what, sizeof what, "initializer '%.200s'", tp->name);
        CTensor *c = read_tensor(im, tp, what);
        if (!c)
            return -1;
        sym_define(im, tp->name)->c = c;
    }
    if (gp->n_sparse_initializer)
        return imp_error(im, "sparse initializers are not supported");
    return 0;
}

static int define_inputs(Imp *im, const Onnx__GraphProto *gp) {
    for (size_t k = 0; k < gp->n_input; k++) {
        const Onnx__ValueInfoProto *vi = gp->input[k];
        if (!vi->name || !vi->name[0])
            return imp_error(im, "graph input %zu has no name", k);
        if (sym_lookup(im, vi->name))
            continue; /* an initializer listed as an input (IR version < 4 exports) */
        const Onnx__TypeProto *tp = vi->type;
        if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
            return imp_error(im, "graph input '%s' is not a tensor", vi->name);
        const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
        if (!tt->has_elem_type || tt->elem_type != ONNX_FLOAT)
            return imp_error(im, "graph input '%s': element type %d is not supported (only "
                             "FLOAT inputs)", vi->name, tt->has_elem_type ? tt->elem_type : 0);
        if (!tt->shape)
            return imp_error(im, "graph input '%s' has no shape; bnncc needs static shapes "
                             "(the first dimension may be symbolic: it is the batch)", vi->name);
        if (tt->shape->n_dim > MAX_RANK)
            return imp_error(im, "graph input '%s': rank %zu is over the limit of %d", vi->name,
                             tt->shape->n_dim, MAX_RANK);
        int64_t dim[MAX_RANK], per = 1;
        int rank = (int)tt->shape->n_dim;
        for (int d = 0; d < rank; d++) {
            const Onnx__TensorShapeProto__Dimension *dp = tt->shape->dim[d];
            if (d == 0) {
                dim[d] = DIM_BATCH; /* the batch, whatever the export declared */
                continue;
            }
            if (dp->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ||
                dp->dim_value <= 0)
                return imp_error(im, "graph input '%s': dimension %d is not a positive "
                                 "number; only the first (batch) dimension may be symbolic",
                                 vi->name, d);
            dim[d] = dp->dim_value;
            if (!mul_elems(&per, dim[d]))
                return imp_error(im, "graph input '%s' is too large", vi->name);
        }
        Type t = make_type(TY_F32, rank, dim);
        char *name = sanitize_name(vi->name);
        char *uname = graph_unique_name(im->g, name);
        sym_define(im, vi->name)->v = add_input(im->g, uname, t);
        free(uname);
        free(name);
    }
    if (im->g->ninputs == 0)
        return imp_error(im, "the graph has no input that is not an initializer");
    return 0;
}

static int define_outputs(Imp *im, const Onnx__GraphProto *gp) {
    if (gp->n_output == 0)
        return imp_error(im, "the graph has no outputs");
    for (size_t k = 0; k < gp->n_output; k++) {
        const char *name = gp->output[k]->name;
        Sym *s = name ? sym_lookup(im, name) : NULL;
        if (!s)
            return imp_error(im, "graph output '%s' is not computed by any node",
                             name ? name : "");
        if (!s->v)
            return imp_error(im, "graph output '%s' is a constant (it does not depend on the "
                             "graph's inputs); bnncc does not support that", name);
        Value *v = s->v;
        if (v->kind != VAL_NODE) {
            /* A graph output must be a node result: copy an input through a reshape. */
            v = emit_reshape(im, v, v->type.rank, v->type.dim);
            node_set_src(v->def, name, "Identity");
        }
        add_output(im->g, v);
    }
    return 0;
}

/* ---------------------------------------------------------------- node order */

/* Order the nodes so that every input is defined before use (exporters do not all
 * keep the protobuf order topological). Fails on undefined inputs and on cycles. */
static int order_nodes(Imp *im, const Onnx__GraphProto *gp, int **order_out) {
    size_t nn = gp->n_node;
    size_t nouts = 0;
    for (size_t k = 0; k < nn; k++)
        nouts += gp->node[k]->n_output;
    NameMap prod;
    map_init(&prod, nouts);
    int rc = -1;
    int *indeg = xcalloc(nn + 1, sizeof *indeg);
    int *order = xcalloc(nn + 1, sizeof *order);
    int *first = NULL, *next = NULL, *dst = NULL;
    size_t nedges = 0;
    for (size_t k = 0; k < nn; k++) {
        const Onnx__NodeProto *n = gp->node[k];
        im->node = n;
        if (!n->op_type || !n->op_type[0]) {
            imp_error(im, "node has no op_type");
            goto out;
        }
        for (size_t o = 0; o < n->n_output; o++) {
            const char *name = n->output[o];
            if (!name || !name[0])
                continue;
            size_t s = map_slot(&prod, name);
            if (prod.keys[s] || sym_lookup(im, name)) {
                imp_error(im, "output '%s' is defined twice", name);
                goto out;
            }
            prod.keys[s] = name;
            prod.vals[s] = (int)k;
        }
    }
    for (size_t k = 0; k < nn; k++) {
        const Onnx__NodeProto *n = gp->node[k];
        im->node = n;
        for (size_t i = 0; i < n->n_input; i++) {
            const char *name = n->input[i];
            if (!name || !name[0] || sym_lookup(im, name))
                continue;
            if (map_get(&prod, name) < 0) {
                imp_error(im, "input '%s' is not defined: no initializer, graph input or node "
                          "output has that name", name);
                goto out;
            }
            nedges++;
        }
    }
    im->node = NULL;
    first = xmalloc((nn + 1) * sizeof *first);
    next = xmalloc((nedges + 1) * sizeof *next);
    dst = xmalloc((nedges + 1) * sizeof *dst);
    for (size_t k = 0; k < nn; k++)
        first[k] = -1;
    size_t e = 0;
    for (size_t k = 0; k < nn; k++) {
        const Onnx__NodeProto *n = gp->node[k];
        for (size_t i = 0; i < n->n_input; i++) {
            const char *name = n->input[i];
            if (!name || !name[0] || sym_lookup(im, name))
                continue;
            int p = map_get(&prod, name);
            dst[e] = (int)k;
            next[e] = first[p];
            first[p] = (int)e;
            indeg[k]++;
            e++;
        }
    }
    /* Kahn's algorithm with a FIFO seeded in file order keeps the exporter's order
     * where it was already topological. */
    size_t head = 0, tail = 0;
    for (size_t k = 0; k < nn; k++)
        if (indeg[k] == 0)
            order[tail++] = (int)k;
    while (head < tail) {
        int k = order[head++];
        for (int ed = first[k]; ed >= 0; ed = next[ed])
            if (--indeg[dst[ed]] == 0)
                order[tail++] = dst[ed];
    }
    if (tail < nn) {
        for (size_t k = 0; k < nn; k++)
            if (indeg[k] > 0) {
                im->node = gp->node[k];
                imp_error(im, "the graph has a cycle through this node");
                im->node = NULL;
                goto out;
            }
    }
    *order_out = order;
    order = NULL;
    rc = 0;
out:
    im->node = NULL;
    map_free(&prod);
    free(indeg);
    free(order);
    free(first);
    free(next);
    free(dst);
    return rc;
}

/* ---------------------------------------------------------------- the import */

static bool domain_is_onnx(const char *d) { return !d || !d[0] || !strcmp(d, "ai.onnx"); }

static int find_opset(Imp *im, const Onnx__ModelProto *m) {
    im->opset = -1;
    for (size_t k = 0; k < m->n_opset_import; k++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[k];
        if (domain_is_onnx(o->domain) && o->has_version)
            im->opset = o->version;
    }
    if (im->opset < 0)
        return imp_error(im, "the model imports no ONNX opset");
    if (im->opset < 7 || im->opset > 21)
        return imp_error(im, "ONNX opset %lld is not supported (opsets 7 to 21 are)",
                         (long long)im->opset);
    return 0;
}

static int check_node_inputs(Imp *im) {
    const Onnx__NodeProto *n = im->node;
    for (size_t i = 0; i < n->n_input; i++) {
        const char *name = n->input[i];
        if (name && name[0] && !sym_lookup(im, name))
            return imp_error(im, "input '%s' is an output that bnncc does not compute (an "
                             "optional output of its producer)", name);
    }
    return 0;
}

static int import_graph(Imp *im, const Onnx__ModelProto *m) {
    const Onnx__GraphProto *gp = m->graph;
    if (!gp)
        return imp_error(im, "the model has no graph (not an ONNX model, or a corrupt one)");
    if (find_opset(im, m) < 0 || define_initializers(im, gp) < 0 || define_inputs(im, gp) < 0)
        return -1;
    int *order = NULL;
    if (order_nodes(im, gp, &order) < 0)
        return -1;
    int rc = 0;
    for (size_t k = 0; k < gp->n_node && rc == 0; k++) {
        im->node = gp->node[order[k]];
        int before = im->g->nvalues;
        rc = check_node_inputs(im);
        if (rc == 0) {
            int folded = fold_node(im);
            if (folded < 0)
                rc = -1;
            else if (folded == 0)
                rc = import_node(im);
        }
        if (rc == 0) {
            /* Give the IR results of this node the ONNX output names, and the helper
             * values it needed (bits, accumulators) names derived from them. */
            const Onnx__NodeProto *n = im->node;
            const char *first = NULL;
            for (size_t o = 0; o < n->n_output; o++) {
                Sym *s = n->output[o] && n->output[o][0] ? sym_lookup(im, n->output[o]) : NULL;
                if (!first && n->output[o] && n->output[o][0])
                    first = n->output[o];
                if (s && s->v && s->v->kind == VAL_NODE && s->v->id >= before) {
                    rename_value(im->g, s->v, n->output[o]);
                    s->v->id = -1; /* renamed: skip below (ids are renumbered later) */
                }
            }
            for (int j = before; first && j < im->g->nvalues; j++) {
                Value *v = im->g->values[j];
                if (v->kind != VAL_NODE || v->id < 0 || !v->def)
                    continue;
                char base[512];
                snprintf(base, sizeof base, "%.400s.%s", first, op_info(v->def->op)->name);
                rename_value(im->g, v, base);
            }
            for (int j = before; j < im->g->nvalues; j++)
                im->g->values[j]->id = j;
        }
    }
    free(order);
    im->node = NULL;
    if (rc == 0)
        rc = define_outputs(im, gp);
    return rc;
}

static Graph *import_model(const char *path, const char *dir, const void *data, size_t len,
                           Buf *report) {
    Imp im;
    memset(&im, 0, sizeof im);
    im.path = path ? path : "<memory>";
    im.report = report;
    if ((int64_t)len > MAX_MODEL_BYTES) {
        imp_error(&im, "the model is over 2 GiB, the protobuf limit; store the weights as "
                  "external data");
        return NULL;
    }
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, data);
    if (!m) {
        imp_error(&im, "not a valid ONNX protobuf (truncated or corrupt file)");
        return NULL;
    }
    im.dir = dir ? xstrdup(dir) : NULL;
    const char *gname = m->graph && m->graph->name && m->graph->name[0] ? m->graph->name : "main";
    char *clean = sanitize_name(gname);
    im.g = new_graph(clean);
    free(clean);
    int rc = import_graph(&im, m);
    if (rc == 0) {
        drop_dead_nodes(im.g);
        graph_compact(im.g);
        if (verify_graph(im.g) != 0) {
            char msg[2048];
            snprintf(msg, sizeof msg, "%s", diag_message());
            rc = imp_error(&im, "the imported graph does not verify (an importer bug): %s", msg);
        }
    }
    if (rc == 0 && report && im.nlayers)
        buf_printf(report, "summary: %d of %d conv/dense layers binary\n", im.nbinary,
                   im.nlayers);
    onnx__model_proto__free_unpacked(m, NULL);
    free_syms(&im);
    free(im.dir);
    if (rc != 0) {
        free_graph(im.g);
        return NULL;
    }
    return im.g;
}

Graph *import_onnx_memory(const char *path, const void *data, size_t len, Buf *report) {
    return import_model(path, NULL, data, len, report);
}

Graph *import_onnx_file(const char *path, Buf *report) {
    struct stat st;
    if (stat(path, &st) != 0) {
        diag_error("cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    if (st.st_size > MAX_MODEL_BYTES) {
        diag_error("%s: the model is over 2 GiB (%lld bytes), the protobuf limit; store the "
                   "weights as external data", path, (long long)st.st_size);
        return NULL;
    }
    size_t len;
    char *data = read_file(path, &len);
    if (!data)
        return NULL;
    const char *slash = strrchr(path, '/');
    char *dir = slash ? xstrndup(path, (size_t)(slash - path == 0 ? 1 : slash - path))
                      : xstrdup(".");
    Graph *g = import_model(path, dir, data, len, report);
    free(dir);
    free(data);
    return g;
}
