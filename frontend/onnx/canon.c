/* canon.c: recognising binary layers while importing. A dense/conv layer becomes the
 * IR's b1 x b1 form (exact i32 result, then cast to f32 and the per-channel scale)
 * when its activation operand is a ±1 tensor computed from bits and its weights are
 * ±1 or ±alpha per output channel; otherwise it stays float, and the report says why. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_import.h"

Value *match_bipolar(const Value *v, float *scale) {
    const Node *d = v->def;
    if (!d || v->type.dtype != TY_F32)
        return NULL;
    if (d->op == OP_CAST && d->in[0]->type.dtype == TY_B1) {
        *scale = 1.0f;
        return d->in[0];
    }
    if (d->op == OP_MUL) {
        for (int k = 0; k < 2; k++) {
            const Value *c = d->in[1 - k];
            const Node *cd = d->in[k]->def;
            if (c->kind != VAL_CONST || type_numel(&c->type, 1) != 1 || c->type.dtype != TY_F32 ||
                !cd || cd->op != OP_CAST || cd->in[0]->type.dtype != TY_B1)
                continue;
            if (c->type.rank > d->in[k]->type.rank)
                continue; /* the mul changes the shape */
            float s;
            memcpy(&s, c->data, sizeof s);
            if (s == 0 || !isfinite(s))
                return NULL;
            *scale = s;
            return cd->in[0];
        }
    }
    return NULL;
}

/* Weights that are ±alpha[o] in every row o: their bits and alphas. A row of zeros is
 * alpha 0 (any bits): exporters that fold a batch-norm with gamma = 0 into the weights write
 * one. At least one row must be non-zero. */
static bool binary_weights(const CTensor *w, int64_t rows, float *alpha) {
    int64_t per = rows ? w->n / rows : 0;
    bool any = false;
    for (int64_t o = 0; o < rows; o++) {
        const float *r = w->f + o * per;
        float a = fabsf(r[0]);
        if (!(a >= 0) || !isfinite(a))
            return false;
        any = any || a > 0;
        for (int64_t k = 1; k < per; k++)
            if (fabsf(r[k]) != a)
                return false;
        alpha[o] = a;
    }
    return any && per > 0;
}

static Value *b1_weights(Imp *im, const CTensor *w) {
    Type t = make_type(TY_B1, w->rank, w->dim);
    size_t nb = type_nbytes(&t, 1);
    uint8_t *bits = xcalloc(nb ? nb : 1, 1);
    for (int64_t k = 0; k < w->n; k++)
        bit_set(bits, k, w->f[k] > 0);
    Buf b = {0};
    buf_printf(&b, "%s.wbits", imp_node_name(im));
    for (char *p = b.data; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '.'))
            *p = '_';
    char *name = graph_unique_name(im->g, b.data);
    Value *v = add_const(im->g, name, t, bits, nb);
    free(name);
    buf_free(&b);
    return v;
}

static Value *f32_const(Imp *im, const CTensor *c, int rank, const int64_t *dim,
                        const char *suffix) {
    Type t = make_type(TY_F32, rank, dim);
    size_t nb = type_nbytes(&t, 1);
    float *data = xmalloc(nb ? nb : 1);
    memcpy(data, c->f, nb);
    Buf b = {0};
    buf_printf(&b, "%s%s", imp_node_name(im), suffix);
    for (char *p = b.data; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '.'))
            *p = '_';
    char *name = graph_unique_name(im->g, b.data);
    Value *v = add_const(im->g, name, t, data, nb);
    free(name);
    buf_free(&b);
    return v;
}

/* Why an activation operand is not binary, for the report. */
static void describe_input(const Value *x, char *buf, size_t len) {
    if (!x->def) {
        snprintf(buf, len, "input is the graph input '%s'", x->name);
        return;
    }
    const Node *d = x->def;
    const char *op = d->src_op ? d->src_op : op_info(d->op)->name;
    if (d->op == OP_SIGN)
        snprintf(buf, len, "input is Sign, and Sign(0) = 0 is not a bit");
    else if (d->op == OP_QUANT && d->nin == 4 && d->in[3]->kind == VAL_CONST &&
             d->in[3]->type.dtype == TY_F32 && d->in[3]->nbytes >= 4) {
        float bits;
        memcpy(&bits, d->in[3]->data, sizeof bits);
        snprintf(buf, len, "input is a %g-bit %s, not bits: the lowbit pass (-O2) takes it",
                 (double)bits, op);
    } else if (d->op == OP_PAD)
        snprintf(buf, len, "input is Pad with a value other than 0 or ±1 over a non-binary "
                 "tensor");
    else
        snprintf(buf, len, "input is %s", op);
}

static void report_layer(Imp *im, const char *optype, bool binary, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void report_layer(Imp *im, const char *optype, bool binary, const char *fmt, ...) {
    im->nlayers++;
    im->nbinary += binary;
    if (!im->report)
        return;
    buf_printf(im->report, "node '%s' (%s): ", imp_node_name(im), optype);
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(im->report, fmt, ap);
    va_end(ap);
    buf_puts(im->report, "\n");
}

/* y * alpha[o] (alpha of the output channels, shaped for broadcasting) unless all 1. */
static Value *apply_channel_scale(Imp *im, Value *y, const float *alpha, int64_t o, int rank) {
    bool ones = true, same = true;
    for (int64_t k = 0; k < o; k++) {
        ones = ones && alpha[k] == 1.0f;
        same = same && alpha[k] == alpha[0];
    }
    if (ones)
        return y;
    if (same)
        return emit_scalar_op(im, OP_MUL, y, alpha[0]);
    int64_t dim[3] = {o, 1, 1};
    CTensor tmp = {.kind = CT_F32, .elem = ONNX_FLOAT, .rank = rank, .n = o, .f = (float *)alpha};
    return emit_binary(im, OP_MUL, y, f32_const(im, &tmp, rank, dim, ".alpha"));
}

static Value *add_bias(Imp *im, Value *y, const CTensor *bias, int rank) {
    if (!y || !bias)
        return y;
    int64_t dim[3] = {bias->n, 1, 1};
    return emit_binary(im, OP_ADD, y, f32_const(im, bias, rank, dim, ".bias"));
}

static void dims_str(const CTensor *w, char *buf, size_t len) {
    size_t n = 0;
    buf[0] = '\0';
    for (int d = 0; d < w->rank && n < len; d++)
        n += (size_t)snprintf(buf + n, len - n, "%s%lld", d ? "x" : "", (long long)w->dim[d]);
}

/* The shared decision of dense and conv: returns the activation bits (or NULL) and
 * fills alpha (weight scale per output times the activation scale) when binary. */
typedef struct LayerPlan {
    Value *bits;    /* b1 activations or NULL */
    float act_scale;
    bool wbin;
    float *alpha;   /* [O] */
} LayerPlan;

static void plan_layer(Value *x, const CTensor *w, LayerPlan *p) {
    p->act_scale = 1.0f;
    p->bits = match_bipolar(x, &p->act_scale);
    p->alpha = xmalloc((size_t)w->dim[0] * sizeof *p->alpha);
    p->wbin = binary_weights(w, w->dim[0], p->alpha);
}

static void report_plan(Imp *im, const char *optype, Value *x, const LayerPlan *p,
                        const CTensor *w, bool per_channel) {
    char dims[96], why[160];
    dims_str(w, dims, sizeof dims);
    if (p->bits && p->wbin) {
        report_layer(im, optype, true, "binary (b1 x b1 -> i32), %s%s", dims,
                     per_channel ? ", scaled per output channel" : "");
    } else if (p->bits) {
        report_layer(im, optype, false, "weights are not ±1, kept float (binary activations: "
                     "b1 x f32 -> f32), %s", dims);
    } else {
        describe_input(x, why, sizeof why);
        report_layer(im, optype, false, "activations are not binarized (%s), kept float%s, %s",
                     why, p->wbin ? " (weights are ±1)" : "", dims);
    }
}

Value *emit_linear(Imp *im, Value *x, const CTensor *w, const CTensor *bias, const char *optype) {
    if (x->type.rank != 2 || w->rank != 2 || x->type.dim[1] != w->dim[1]) {
        char buf[96];
        imp_error(im, "the input %s does not match the %lldx%lld weights",
                  type_str(&x->type, buf, sizeof buf), (long long)w->dim[1], (long long)w->dim[0]);
        return NULL;
    }
    int64_t o = w->dim[0];
    LayerPlan p;
    plan_layer(x, w, &p);
    int64_t odim[2] = {x->type.dim[0], o};
    Value *y;
    bool per_channel = false;
    if (p.bits && p.wbin) {
        Value *in[2] = {p.bits, b1_weights(im, w)};
        y = emit1(im, OP_DENSE, 2, in, make_type(TY_I32, 2, odim));
        y = emit_cast(im, y, TY_F32);
        for (int64_t k = 0; k < o; k++) {
            per_channel = per_channel || p.alpha[k] != p.alpha[0];
            p.alpha[k] *= p.act_scale;
        }
        y = apply_channel_scale(im, y, p.alpha, o, 1);
        y = add_bias(im, y, bias, 1);
    } else if (p.bits) {
        Value *in[2] = {p.bits, f32_const(im, w, 2, w->dim, ".w")};
        y = emit1(im, OP_DENSE, 2, in, make_type(TY_F32, 2, odim));
        if (p.act_scale != 1.0f)
            y = emit_scalar_op(im, OP_MUL, y, p.act_scale);
        y = add_bias(im, y, bias, 1);
    } else {
        Value *in[3] = {x, f32_const(im, w, 2, w->dim, ".w"), NULL};
        if (bias)
            in[2] = f32_const(im, bias, 1, &o, ".bias");
        y = emit1(im, OP_DENSE, bias ? 3 : 2, in, make_type(TY_F32, 2, odim));
    }
    report_plan(im, optype, x, &p, w, per_channel);
    free(p.alpha);
    return y;
}

Value *emit_conv(Imp *im, Value *x, const CTensor *w, const CTensor *bias, const ConvAttrs *ca) {
    const Type *xt = &x->type;
    int64_t o = w->dim[0], cg = w->dim[1], g = ca->group;
    if (xt->rank != 4 || g < 1 || o % g || cg * g != xt->dim[1]) {
        imp_error(im, "weights [%lld, %lld, ...] with group %lld do not fit the input's %lld "
                  "channels", (long long)o, (long long)cg, (long long)g,
                  (long long)(xt->rank > 1 ? xt->dim[1] : 0));
        return NULL;
    }
    int64_t pads[4];
    memcpy(pads, ca->pads, sizeof pads);
    /* A zero Pad right before a conv over bits is the conv's own zero padding. */
    Value *src = x;
    LayerPlan p;
    bool planned = false;
    if (x->def && x->def->op == OP_PAD && attr_float(x->def, "value", 0) == 0.0f) {
        int64_t pp[8];
        if (attr_ints(x->def, "pads", pp, 8, 0, NULL) == 8 && !pp[0] && !pp[1] && !pp[4] &&
            !pp[5]) {
            plan_layer(x->def->in[0], w, &p);
            planned = true;
            if (p.bits) {
                src = x->def->in[0];
                pads[0] += pp[2];
                pads[1] += pp[3];
                pads[2] += pp[6];
                pads[3] += pp[7];
            } else {
                free(p.alpha);
                planned = false;
            }
        }
    }
    if (!planned)
        plan_layer(x, w, &p);
    const Type *st = &src->type;
    int64_t odim[4] = {st->dim[0], o, 0, 0};
    for (int d = 0; d < 2; d++) {
        int64_t span = st->dim[2 + d] + pads[d] + pads[d + 2] -
                       (ca->dilations[d] * (w->dim[2 + d] - 1) + 1);
        if (span < 0) {
            free(p.alpha);
            imp_error(im, "the kernel is larger than the padded input");
            return NULL;
        }
        odim[2 + d] = span / ca->strides[d] + 1;
    }
    Value *y;
    bool per_channel = false;
    Value *in[3] = {src, NULL, NULL};
    int nin = 2;
    if (p.bits && p.wbin) {
        in[0] = p.bits;
        in[1] = b1_weights(im, w);
    } else if (p.bits) {
        in[0] = p.bits;
        in[1] = f32_const(im, w, 4, w->dim, ".w");
    } else {
        in[1] = f32_const(im, w, 4, w->dim, ".w");
        if (bias) {
            in[2] = f32_const(im, bias, 1, &o, ".bias");
            nin = 3;
        }
    }
    DType rt = p.bits && p.wbin ? TY_I32 : TY_F32;
    y = emit1(im, OP_CONV2D, nin, in, make_type(rt, 4, odim));
    set_attr_ints(y->def, "strides", 2, ca->strides);
    set_attr_ints(y->def, "pads", 4, pads);
    set_attr_ints(y->def, "dilations", 2, ca->dilations);
    set_attr_int(y->def, "groups", g);
    set_attr_int(y->def, "pad_value", 0);
    if (p.bits && p.wbin) {
        y = emit_cast(im, y, TY_F32);
        for (int64_t k = 0; k < o; k++) {
            per_channel = per_channel || p.alpha[k] != p.alpha[0];
            p.alpha[k] *= p.act_scale;
        }
        y = apply_channel_scale(im, y, p.alpha, o, 3);
        y = add_bias(im, y, bias, 3);
    } else if (p.bits) {
        if (p.act_scale != 1.0f)
            y = emit_scalar_op(im, OP_MUL, y, p.act_scale);
        y = add_bias(im, y, bias, 3);
    }
    report_plan(im, "Conv", src, &p, w, per_channel);
    free(p.alpha);
    return y;
}

void drop_dead_nodes(Graph *g) {
    int *uses = xcalloc((size_t)g->nvalues + 1, sizeof *uses);
    for (int i = 0; i < g->nvalues; i++)
        g->values[i]->id = i;
    for (int i = 0; i < g->nnodes; i++) {
        Node *n = g->nodes[i];
        if (!n->dead)
            for (int j = 0; j < n->nin; j++)
                uses[n->in[j]->id]++;
    }
    for (int i = 0; i < g->noutputs; i++)
        uses[g->outputs[i]->id]++;
    for (int i = g->nnodes - 1; i >= 0; i--) {
        Node *n = g->nodes[i];
        if (n->dead)
            continue;
        bool used = false;
        for (int j = 0; j < n->nout; j++)
            used = used || uses[n->out[j]->id] > 0;
        if (used)
            continue;
        n->dead = true;
        for (int j = 0; j < n->nin; j++)
            uses[n->in[j]->id]--;
    }
    free(uses);
}
