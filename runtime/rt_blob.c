/* rt_blob.c: the blob loader. A model.bin is untrusted input: every offset, size and count
 * is checked here, once, before anything uses it, so the CPU steps and GPU launches that
 * follow can trust the plan (docs/blob-format.md lists what is checked). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rt.h"

/* Sizes above this are refused as corrupt: no real model comes near, and it keeps every
 * product of two checked sizes inside 64 bits. */
#define MAX_BYTES (1ull << 44)
#define MAX_DIM (1ll << 24)
#define MAX_IO 1024

static bnn_status bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static bnn_status bad(const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rt_error(BNN_STATUS_BAD_BLOB, "%s", msg);
}

/* a * b into *r if it stays within MAX_BYTES. */
static bool mul_ok(uint64_t a, uint64_t b, uint64_t *r) {
    if (a && b > MAX_BYTES / a)
        return false;
    *r = a * b;
    return true;
}

static bool mul3_ok(uint64_t a, uint64_t b, uint64_t c, uint64_t *r) {
    return mul_ok(a, b, r) && mul_ok(*r, c, r);
}

/* ---------------------------------------------------------------- container */

typedef struct Section {
    uint32_t kind;
    char tag[BLOB_TAG_SIZE];
    uint64_t offset, size;
} Section;

static const char *section_name(uint32_t kind) {
    switch (kind) {
    case BLOB_SECTION_META: return "META";
    case BLOB_SECTION_PLAN: return "PLAN";
    case BLOB_SECTION_WEIGHTS: return "WEIGHTS";
    case BLOB_SECTION_CUBIN: return "CUBIN";
    }
    return "?";
}

/* "sm_" then 2 or 3 digits, then an optional lower-case letter ("sm_90a"). */
static bool valid_arch(const char *t) {
    if (strncmp(t, "sm_", 3) != 0)
        return false;
    int digits = 0;
    const char *p = t + 3;
    while (*p >= '0' && *p <= '9')
        p++, digits++;
    if (*p >= 'a' && *p <= 'z')
        p++;
    return (digits == 2 || digits == 3) && *p == '\0';
}

static bnn_status parse_sections(const unsigned char *b, size_t len, Section *sec, int *nsec) {
    if (len < 8 || memcmp(b, BLOB_MAGIC, 8) != 0) {
        if (len < 8 && memcmp(b, BLOB_MAGIC, len) == 0)
            return bad("truncated: %zu bytes, shorter than the 64-byte header", len);
        return bad("not a bnncc model.bin (bad magic; expected \"%s\")", BLOB_MAGIC);
    }
    if (len < BLOB_HEADER_SIZE)
        return bad("truncated: %zu bytes, shorter than the 64-byte header", len);
    uint32_t version = blob_get_u32(b + 8);
    if (version > BLOB_VERSION)
        return rt_error(BNN_STATUS_VERSION,
                        "format version %u is newer than this runtime reads (%u): update libbnnrt "
                        "(this is %s) or rebuild the model with a matching bnncc",
                        version, BLOB_VERSION, bnn_version());
    if (version == 0)
        return bad("format version 0 is not valid");
    uint64_t file_size = blob_get_u64(b + 24);
    if (file_size != len) {
        if (file_size > len)
            return bad("truncated: the header says %llu bytes, there are %zu",
                       (unsigned long long)file_size, len);
        return bad("%zu bytes, but the header says %llu: trailing data or a damaged header", len,
                   (unsigned long long)file_size);
    }
    uint32_t header_size = blob_get_u32(b + 12), n = blob_get_u32(b + 16);
    if (header_size != BLOB_HEADER_SIZE || blob_get_u32(b + 20) != 0)
        return bad("damaged header (header size %u, flags %u)", header_size, blob_get_u32(b + 20));
    for (size_t i = 40; i < BLOB_HEADER_SIZE; i++)
        if (b[i])
            return bad("damaged header (reserved bytes are not zero)");
    if (n < 2 || n > BLOB_MAX_SECTIONS)
        return bad("%u sections: a model has 2 to %u", n, BLOB_MAX_SECTIONS);
    uint64_t table_end = BLOB_HEADER_SIZE + (uint64_t)n * BLOB_SECTION_ENTRY_SIZE;
    if (table_end > len)
        return bad("truncated inside the section table");
    uint64_t h = blob_fnv1a(BLOB_FNV_INIT, b, 32);
    h = blob_fnv1a(h, b + BLOB_HEADER_SIZE, (size_t)(table_end - BLOB_HEADER_SIZE));
    if (h != blob_get_u64(b + 32))
#ifndef BNN_FUZZING
        return rt_error(BNN_STATUS_CHECKSUM,
                        "the header or section table is damaged (checksum mismatch)");
#else
        (void)0;
#endif
    int counts[5] = {0};
    for (uint32_t i = 0; i < n; i++) {
        const unsigned char *e = b + BLOB_HEADER_SIZE + (size_t)i * BLOB_SECTION_ENTRY_SIZE;
        Section *s = &sec[i];
        s->kind = blob_get_u32(e);
        memcpy(s->tag, e + 8, BLOB_TAG_SIZE);
        s->offset = blob_get_u64(e + 24);
        s->size = blob_get_u64(e + 32);
        if (s->kind < BLOB_SECTION_META || s->kind > BLOB_SECTION_CUBIN || blob_get_u32(e + 4))
            return bad("section %u has an unknown kind %u (flags %u)", i, s->kind,
                       blob_get_u32(e + 4));
        counts[s->kind]++;
        size_t tl = strnlen(s->tag, BLOB_TAG_SIZE);
        if (tl == BLOB_TAG_SIZE)
            return bad("section %u: its tag is not terminated", i);
        for (size_t j = tl; j < BLOB_TAG_SIZE; j++)
            if (s->tag[j])
                return bad("section %u: bytes after its tag are not zero", i);
        if (s->kind == BLOB_SECTION_CUBIN ? !valid_arch(s->tag) : tl != 0)
            return bad("section %u (%s) has a bad tag '%s'", i, section_name(s->kind), s->tag);
        if (s->offset % BLOB_ALIGN || s->offset < table_end || s->offset > len ||
            s->size > len - s->offset)
            return bad("section %u (%s) at offset %llu size %llu lies outside the file of %zu "
                       "bytes or is misaligned", i, section_name(s->kind),
                       (unsigned long long)s->offset, (unsigned long long)s->size, len);
        for (uint32_t j = 0; j < i; j++) {
            if (s->offset < sec[j].offset + sec[j].size && sec[j].offset < s->offset + s->size)
                return bad("sections %u and %u overlap", j, i);
            if (s->kind == BLOB_SECTION_CUBIN && sec[j].kind == BLOB_SECTION_CUBIN &&
                !strcmp(s->tag, sec[j].tag))
                return bad("two CUBIN sections for %s", s->tag);
        }
#ifndef BNN_FUZZING
        if (blob_fnv1a(BLOB_FNV_INIT, b + s->offset, (size_t)s->size) != blob_get_u64(e + 40))
            return rt_error(BNN_STATUS_CHECKSUM, "section %u (%s%s%s) is damaged: checksum mismatch",
                            i, section_name(s->kind), s->tag[0] ? " " : "", s->tag);
#endif
    }
    if (counts[BLOB_SECTION_META] != 1 || counts[BLOB_SECTION_PLAN] != 1 ||
        counts[BLOB_SECTION_WEIGHTS] > 1)
        return bad("%d META, %d PLAN and %d WEIGHTS sections: a model has one of each",
                   counts[BLOB_SECTION_META], counts[BLOB_SECTION_PLAN],
                   counts[BLOB_SECTION_WEIGHTS]);
    *nsec = (int)n;
    return BNN_STATUS_OK;
}

/* ---------------------------------------------------------------- META */

static bnn_status parse_meta(bnn_model *m, const unsigned char *p, uint64_t size) {
    if (size < BLOB_META_HEADER_SIZE)
        return bad("META: %llu bytes, shorter than its header", (unsigned long long)size);
    uint32_t nin = blob_get_u32(p), nout = blob_get_u32(p + 4);
    uint32_t pool_at = blob_get_u32(p + 8), pool_size = blob_get_u32(p + 12);
    if (nin > MAX_IO || nout < 1 || nout > MAX_IO)
        return bad("META: %u inputs and %u outputs (1 to %d outputs, at most %d inputs)", nin,
                   nout, MAX_IO, MAX_IO);
    uint64_t nrec = (uint64_t)nin + nout;
    if (pool_at != BLOB_META_HEADER_SIZE + nrec * BLOB_META_RECORD_SIZE ||
        (uint64_t)pool_at + pool_size != size)
        return bad("META: its records and names do not fill it exactly");
    m->io = rt_calloc((size_t)nrec, sizeof *m->io);
    if (!m->io)
        return rt_error(BNN_STATUS_OUT_OF_MEMORY, "out of memory loading the model");
    m->ninputs = (int)nin;
    m->noutputs = (int)nout;
    const char *pool = (const char *)p + pool_at;
    for (uint64_t i = 0; i < nrec; i++) {
        const unsigned char *r = p + BLOB_META_HEADER_SIZE + i * BLOB_META_RECORD_SIZE;
        RtIo *io = &m->io[i];
        const char *what = i < nin ? "input" : "output";
        int idx = (int)(i < nin ? i : i - nin);
        uint32_t name_at = blob_get_u32(r), name_len = blob_get_u32(r + 4);
        if (name_at >= pool_size || name_len >= pool_size - name_at || pool[name_at + name_len] ||
            memchr(pool + name_at, 0, name_len))
            return bad("META: %s %d has a bad name", what, idx);
        io->name = pool + name_at;
        io->dtype = blob_get_u32(r + 8);
        uint32_t rank = blob_get_u32(r + 12);
        if (io->dtype < 1 || io->dtype > BLOB_DTYPE_LAST || rank < 1 || rank > BLOB_MAX_RANK ||
            blob_get_u32(r + 16) != 0 || blob_get_u32(r + 20) != 0)
            return bad("META: %s '%s' has a bad dtype %u, rank %u or batch axis %u (version 1 "
                       "puts the batch on axis 0)", what, io->name, io->dtype, rank,
                       blob_get_u32(r + 16));
        io->rank = (int)rank;
        uint64_t numel = 1;
        for (uint32_t d = 0; d < BLOB_MAX_RANK; d++) {
            int64_t v = (int64_t)blob_get_u64(r + 24 + 8 * d);
            io->dims[d] = v;
            bool ok = d == 0 ? v == -1 : d < rank ? (v >= 1 && v <= MAX_DIM) : v == 0;
            if (!ok || (d > 0 && d < rank && !mul_ok(numel, (uint64_t)v, &numel)))
                return bad("META: %s '%s' has a bad dimension %u (%lld)", what, io->name, d,
                           (long long)v);
        }
        io->offset = blob_get_u64(r + 88);
        io->item_bytes = blob_get_u64(r + 96);
        uint64_t want = io->dtype == BLOB_DTYPE_B1 ? (numel + 7) / 8
                                                   : numel * blob_dtype_size(io->dtype);
        if (io->item_bytes != want || blob_get_u64(r + 104) != 0)
            return bad("META: %s '%s' has %llu bytes per item, its shape needs %llu", what,
                       io->name, (unsigned long long)io->item_bytes, (unsigned long long)want);
        if (io->offset % BLOB_ALIGN || io->offset > m->arena_item ||
            io->item_bytes > m->arena_item - io->offset)
            return bad("META: %s '%s' lies outside the arena", what, io->name);
    }
    return BNN_STATUS_OK;
}

/* ---------------------------------------------------------------- PLAN steps */

typedef struct StepCheck {
    const bnn_model *m;
    const BlobStep *s;
    int index;
} StepCheck;

static bnn_status bad_step(const StepCheck *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static bnn_status bad_step(const StepCheck *c, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return bad("PLAN: step %d (%s): %s", c->index, blob_step_name(c->s->kind), msg);
}

static const char *const slot_names[BLOB_MAX_SLOTS] = {"in", "in2", "out", "w",
                                                       "p0", "p1", "x0", "x1"};

/* A slot must be in `space` (or NONE when optional) with exactly `bytes` bytes. */
static bnn_status want_slot(const StepCheck *c, int slot, uint32_t space, uint64_t bytes,
                            bool optional) {
    const BlobRef *r = &c->s->slot[slot];
    if (optional && r->space == BLOB_SPACE_NONE)
        return BNN_STATUS_OK;
    if (space == BLOB_SPACE_NONE) {
        if (r->space != BLOB_SPACE_NONE)
            return bad_step(c, "slot %s is used but this step has no such operand",
                            slot_names[slot]);
        return BNN_STATUS_OK;
    }
    bool space_ok = r->space == space ||
                    (space == (BLOB_SPACE_ARENA | BLOB_SPACE_WEIGHTS) && r->space != BLOB_SPACE_NONE);
    if (!space_ok)
        return bad_step(c, "slot %s must be in the %s", slot_names[slot],
                        space == BLOB_SPACE_ARENA     ? "arena"
                        : space == BLOB_SPACE_WEIGHTS ? "weights"
                                                      : "arena or the weights");
    if (r->bytes != bytes)
        return bad_step(c, "slot %s has %llu bytes, the step's shape needs %llu", slot_names[slot],
                        (unsigned long long)r->bytes, (unsigned long long)bytes);
    return BNN_STATUS_OK;
}

/* The output may not overlap an arena input, except the very same range where in_place. */
static bnn_status check_overlap(const StepCheck *c, bool in_place) {
    const BlobRef *o = &c->s->slot[BLOB_SLOT_OUT];
    for (int i = BLOB_SLOT_IN; i <= BLOB_SLOT_IN2; i++) {
        const BlobRef *r = &c->s->slot[i];
        if (r->space != BLOB_SPACE_ARENA)
            continue;
        if (in_place && r->offset == o->offset && r->bytes == o->bytes)
            continue;
        if (r->offset < o->offset + o->bytes && o->offset < r->offset + r->bytes)
            return bad_step(c, "the output overlaps slot %s", slot_names[i]);
    }
    return BNN_STATUS_OK;
}

#define TRY(x)                                 \
    do {                                       \
        bnn_status st_ = (x);                  \
        if (st_ != BNN_STATUS_OK)              \
            return st_;                        \
    } while (0)

static bool dim_ok(int64_t v) { return v >= 1 && v <= MAX_DIM; }
static bool pad_ok(int64_t v) { return v >= 0 && v <= MAX_DIM; }
static uint64_t words_for(int64_t bits) { return (uint64_t)(bits + 31) / 32; }

/* Output extent of a window of k (dilated by d) sliding with stride s over n padded by a, b. */
static int64_t out_extent(int64_t n, int64_t a, int64_t b, int64_t k, int64_t d, int64_t s) {
    int64_t span = n + a + b - d * (k - 1) - 1;
    return span < 0 ? 0 : span / s + 1;
}

/* Epilogue operands of bgemm/bconv over n output channels, with `cells` outputs per item
 * (bits: bit_rows rows of out_words words; thresholds: t_rows rows of n, 2 for bconv's
 * threshold by a residual of bits). */
static bnn_status check_epilogue(const StepCheck *c, int64_t n, uint64_t cells,
                                 uint64_t bit_rows, int64_t out_words, uint64_t t_rows) {
    uint64_t bytes;
    switch (c->s->epilogue) {
    case BLOB_EPI_I32:
    case BLOB_EPI_AFFINE:
        if (!mul3_ok(cells, (uint64_t)n, 4, &bytes))
            return bad_step(c, "the output is too large");
        TRY(want_slot(c, BLOB_SLOT_OUT, BLOB_SPACE_ARENA, bytes, false));
        bool affine = c->s->epilogue == BLOB_EPI_AFFINE;
        TRY(want_slot(c, BLOB_SLOT_P0, affine ? BLOB_SPACE_WEIGHTS : 0, (uint64_t)n * 4, false));
        return want_slot(c, BLOB_SLOT_P1, affine ? BLOB_SPACE_WEIGHTS : 0, (uint64_t)n * 4, false);
    case BLOB_EPI_THRESHOLD:
        if (out_words < (int64_t)words_for(n) || out_words > MAX_DIM)
            return bad_step(c, "%lld output words cannot hold %lld channels",
                            (long long)out_words, (long long)n);
        if (!mul3_ok(bit_rows, (uint64_t)out_words, 4, &bytes))
            return bad_step(c, "the output is too large");
        TRY(want_slot(c, BLOB_SLOT_OUT, BLOB_SPACE_ARENA, bytes, false));
        TRY(want_slot(c, BLOB_SLOT_P0, BLOB_SPACE_WEIGHTS, t_rows * (uint64_t)n * 4, false));
        return want_slot(c, BLOB_SLOT_P1, BLOB_SPACE_WEIGHTS, t_rows * (uint64_t)n * 4, false);
    }
    return bad_step(c, "unknown epilogue %u", c->s->epilogue);
}

static bnn_status check_bgemm(const StepCheck *c) {
    const BlobBgemmParams *p = &c->s->bgemm;
    if (!dim_ok(p->rows) || !dim_ok(p->n) || !dim_ok(p->k) || p->words > MAX_DIM ||
        p->words < (int64_t)words_for(p->k))
        return bad_step(c, "bad shape rows %lld n %lld k %lld words %lld", (long long)p->rows,
                        (long long)p->n, (long long)p->k, (long long)p->words);
    /* Tile-major operands (docs/blob-format.md): A in 128-row tiles and W in 256-row tiles or
     * neither, whole 1024-bit stages a row; tile-major bits out only from tiled operands. */
    bool tiled = p->in_tile != 0;
    if ((p->in_tile != 0 && p->in_tile != 128) || (p->w_tile != 0 && p->w_tile != 256) ||
        (p->w_tile != 0) != tiled || (p->out_tile != 0 && p->out_tile != 128) || (p->out_tile && !tiled) ||
        (tiled && (p->words % 32 || p->rows != 1)) ||
        (p->out_tile && (c->s->epilogue != BLOB_EPI_THRESHOLD || p->out_words % 32)))
        return bad_step(c, "bad tile-major layout: in_tile %lld, w_tile %lld, out_tile %lld, words %lld, "
                        "out_words %lld", (long long)p->in_tile, (long long)p->w_tile, (long long)p->out_tile,
                        (long long)p->words, (long long)p->out_words);
    uint64_t a, w;
    if (!mul3_ok((uint64_t)p->rows, (uint64_t)p->words, 4, &a) ||
        !mul3_ok((uint64_t)p->n, (uint64_t)p->words, 4, &w))
        return bad_step(c, "operands too large");
    TRY(want_slot(c, BLOB_SLOT_IN, BLOB_SPACE_ARENA, a, false));
    TRY(want_slot(c, BLOB_SLOT_IN2, 0, 0, false));
    TRY(want_slot(c, BLOB_SLOT_W, BLOB_SPACE_WEIGHTS, w, false));
    if (tiled) /* x1: popc(a) of each row, written by the GPU's prep kernel (the CPU ignores it) */
        TRY(want_slot(c, BLOB_SLOT_X1, BLOB_SPACE_ARENA, (uint64_t)p->rows * 4, true));
    TRY(check_epilogue(c, p->n, (uint64_t)p->rows, (uint64_t)p->rows, p->out_words, 1));
    return check_overlap(c, false);
}

static bool ranges_overlap(const BlobRef *a, const BlobRef *b) {
    return a->space == BLOB_SPACE_ARENA && b->space == BLOB_SPACE_ARENA && a->offset < b->offset + b->bytes &&
           b->offset < a->offset + a->bytes;
}

/* The operands of a bconv's float chain (epi_stages > 0, docs/blob-format.md): p0 the stages,
 * in2 the residual, out the f32 result and/or x1 (or out) the bits. */
static bnn_status check_bconv_chain(const StepCheck *c, uint64_t cells) {
    const BlobBconvParams *p = &c->s->bconv;
    int64_t res_side = p->epi_residual & 3, res_words = p->epi_residual >> 2; /* words: a shortcut of bits */
    if (p->epi_stages > BLOB_EPI_MAX_STAGES || p->epi_div < 0 || p->epi_div >= (int64_t)1 << p->epi_stages ||
        p->epi_residual < 0 || res_side > 2 || (res_words && (!res_side || res_words < (int64_t)words_for(p->o) ||
                                                            res_words > MAX_DIM)) ||
        p->out_layout != BLOB_LAYOUT_CS)
        return bad_step(c, "bad float chain: %lld stages, div mask %lld, residual %lld, layout %lld",
                        (long long)p->epi_stages, (long long)p->epi_div, (long long)p->epi_residual,
                        (long long)p->out_layout);
    uint64_t f32, bits = 0;
    if (!mul3_ok(cells, (uint64_t)p->o, 4, &f32) ||
        (p->out_words && !mul3_ok(cells, (uint64_t)p->out_words, 4, &bits)))
        return bad_step(c, "the output is too large");
    if (p->out_words && (p->out_words < (int64_t)words_for(p->o) || p->out_words > MAX_DIM))
        return bad_step(c, "%lld output words cannot hold %lld channels", (long long)p->out_words,
                        (long long)p->o);
    bool x1 = c->s->slot[BLOB_SLOT_X1].space != BLOB_SPACE_NONE;
    if (x1 && !p->out_words)
        return bad_step(c, "slot x1 is used but the chain writes no bits");
    uint64_t res_bits = 0;
    if (res_words && !mul3_ok(cells, (uint64_t)res_words, 4, &res_bits))
        return bad_step(c, "the residual is too large");
    TRY(want_slot(c, BLOB_SLOT_IN2, res_side ? BLOB_SPACE_ARENA : 0, res_words ? res_bits : f32, false));
    TRY(want_slot(c, BLOB_SLOT_OUT, BLOB_SPACE_ARENA, x1 || !p->out_words ? f32 : bits, false));
    TRY(want_slot(c, BLOB_SLOT_X1, BLOB_SPACE_ARENA, bits, true));
    TRY(want_slot(c, BLOB_SLOT_P0, BLOB_SPACE_WEIGHTS, (uint64_t)p->epi_stages * 2 * (uint64_t)p->o * 4, false));
    TRY(want_slot(c, BLOB_SLOT_P1, 0, 0, false));
    const BlobStep *s = c->s;
    if (ranges_overlap(&s->slot[BLOB_SLOT_X1], &s->slot[BLOB_SLOT_IN]) ||
        ranges_overlap(&s->slot[BLOB_SLOT_X1], &s->slot[BLOB_SLOT_IN2]) ||
        ranges_overlap(&s->slot[BLOB_SLOT_X1], &s->slot[BLOB_SLOT_OUT]))
        return bad_step(c, "the bit output (slot x1) overlaps another operand");
    return check_overlap(c, false);
}

static bnn_status check_bconv(const StepCheck *c) {
    const BlobBconvParams *p = &c->s->bconv;
    if (!dim_ok(p->h) || !dim_ok(p->w) || !dim_ok(p->c) || !dim_ok(p->o) || !dim_ok(p->kh) ||
        !dim_ok(p->kw) || !dim_ok(p->stride_h) || !dim_ok(p->stride_w) || !dim_ok(p->dil_h) ||
        !dim_ok(p->dil_w) || !pad_ok(p->pad_top) || !pad_ok(p->pad_left) ||
        !pad_ok(p->pad_bottom) || !pad_ok(p->pad_right) || p->words > MAX_DIM ||
        p->words < (int64_t)words_for(p->c))
        return bad_step(c, "bad shape, stride, dilation or padding");
    if (p->pad_value != 0 && p->pad_value != 1 && p->pad_value != -1)
        return bad_step(c, "pad_value %lld is not 0, 1 or -1", (long long)p->pad_value);
    int64_t oh = out_extent(p->h, p->pad_top, p->pad_bottom, p->kh, p->dil_h, p->stride_h);
    int64_t ow = out_extent(p->w, p->pad_left, p->pad_right, p->kw, p->dil_w, p->stride_w);
    if (oh < 1 || ow < 1 || p->oh != oh || p->ow != ow)
        return bad_step(c, "output %lldx%lld, the shape gives %lldx%lld", (long long)p->oh,
                        (long long)p->ow, (long long)oh, (long long)ow);
    if (p->pool != 0 && ((p->pool != 1 && p->pool != 2) || c->s->epilogue != BLOB_EPI_THRESHOLD || oh < 2 || ow < 2))
        return bad_step(c, "pool %lld needs the threshold epilogue and an output of 2x2 or more",
                        (long long)p->pool);
    if (p->out_layout != BLOB_LAYOUT_CS && p->out_layout != BLOB_LAYOUT_SC)
        return bad_step(c, "bad out_layout %lld", (long long)p->out_layout);
    uint64_t in, w, taps;
    if (!mul3_ok((uint64_t)p->h, (uint64_t)p->w, (uint64_t)p->words, &in) || !mul_ok(in, 4, &in) ||
        !mul3_ok((uint64_t)p->kh, (uint64_t)p->kw, (uint64_t)p->words, &taps) ||
        !mul3_ok(taps, (uint64_t)p->o, 4, &w))
        return bad_step(c, "operands too large");
    TRY(want_slot(c, BLOB_SLOT_IN, BLOB_SPACE_ARENA, in, false));
    TRY(want_slot(c, BLOB_SLOT_W, BLOB_SPACE_WEIGHTS, w, false));
    uint64_t cells = (uint64_t)oh * (uint64_t)ow;
    if (c->s->epilogue == BLOB_EPI_AFFINE && p->epi_stages > 0)
        return check_bconv_chain(c, cells);
    if (p->epi_stages || p->epi_div)
        return bad_step(c, "float chain parameters without a float chain");
    /* A threshold by a residual of bits: its words a pixel, thresholds t[2][o] and dir[2][o]. */
    int64_t res_words = p->epi_residual >> 2;
    if (p->epi_residual && (c->s->epilogue != BLOB_EPI_THRESHOLD || (p->epi_residual & 3) || p->pool ||
                            res_words < (int64_t)words_for(p->o) || res_words > MAX_DIM))
        return bad_step(c, "a residual (epi_residual %lld) needs a float chain, or the threshold epilogue with "
                        "%lld or more words a pixel and no pool", (long long)p->epi_residual,
                        (long long)words_for(p->o));
    uint64_t res_bytes = 0;
    if (res_words && !mul3_ok(cells, (uint64_t)res_words, 4, &res_bytes))
        return bad_step(c, "operands too large");
    TRY(want_slot(c, BLOB_SLOT_IN2, res_words ? BLOB_SPACE_ARENA : 0, res_bytes, false));
    uint64_t bit_rows = p->pool ? (uint64_t)(oh / 2) * (uint64_t)(ow / 2) : cells;
    TRY(check_epilogue(c, p->o, cells, bit_rows, p->out_words, res_words ? 2 : 1));
    return check_overlap(c, false);
}

static bnn_status check_conv2d(const StepCheck *c) {
    const BlobConv2dParams *p = &c->s->conv2d;
    if (!dim_ok(p->c) || !dim_ok(p->h) || !dim_ok(p->w) || !dim_ok(p->o) || !dim_ok(p->kh) ||
        !dim_ok(p->kw) || !dim_ok(p->stride_h) || !dim_ok(p->stride_w) || !dim_ok(p->dil_h) ||
        !dim_ok(p->dil_w) || !dim_ok(p->groups) || !pad_ok(p->pad_top) || !pad_ok(p->pad_left) ||
        !pad_ok(p->pad_bottom) || !pad_ok(p->pad_right) || p->c % p->groups || p->o % p->groups)
        return bad_step(c, "bad shape, stride, dilation, padding or groups");
    int64_t oh = out_extent(p->h, p->pad_top, p->pad_bottom, p->kh, p->dil_h, p->stride_h);
    int64_t ow = out_extent(p->w, p->pad_left, p->pad_right, p->kw, p->dil_w, p->stride_w);
    if (oh < 1 || ow < 1 || p->oh != oh || p->ow != ow)
        return bad_step(c, "output %lldx%lld, the shape gives %lldx%lld", (long long)p->oh,
                        (long long)p->ow, (long long)oh, (long long)ow);
    /* p1's sizes in its k orders (blob.h): bnncc's, older blobs' (c, ky, kx) and PS = C rounded
     * up to even; k bounds C*KH*KW first, so that the orders' k cannot overflow */
    uint64_t in, w, out, k, w16, w16old, w16pair;
    uint64_t f16_rows = ((uint64_t)p->o + BLOB_F16_ROWS - 1) / BLOB_F16_ROWS * BLOB_F16_ROWS;
    if (!mul3_ok((uint64_t)p->c, (uint64_t)p->h, (uint64_t)p->w, &in) || !mul_ok(in, 4, &in) ||
        !mul3_ok((uint64_t)p->o, (uint64_t)(p->c / p->groups), (uint64_t)p->kh, &w) ||
        !mul3_ok(w, (uint64_t)p->kw, 4, &w) ||
        !mul3_ok((uint64_t)p->o, (uint64_t)oh, (uint64_t)ow, &out) || !mul_ok(out, 4, &out) ||
        !mul3_ok((uint64_t)p->c, (uint64_t)p->kh, (uint64_t)p->kw, &k) || k > (uint64_t)1 << 40 ||
        !mul3_ok(f16_rows, (uint64_t)blob_conv2d_f16_order(p).kp, 2, &w16) ||
        !mul3_ok(f16_rows, (k + BLOB_F16_COLS - 1) / BLOB_F16_COLS * BLOB_F16_COLS, 2, &w16old) ||
        !mul3_ok(f16_rows,
                 (k / (uint64_t)p->c * (uint64_t)(p->c + (p->c & 1)) + BLOB_F16_COLS - 1) / BLOB_F16_COLS *
                     BLOB_F16_COLS,
                 2, &w16pair))
        return bad_step(c, "operands too large");
    /* bits out (a conv2d_chain's): in2 holds the chain, [epi_stages][2][o], then the GPU
     * kernel's sum |w|, threshold and mode, [o] each (docs/blob-format.md "conv2d") */
    uint64_t chain = 0;
    bool stages_ok = p->epi_stages >= 0 && p->epi_stages <= BLOB_EPI_MAX_STAGES && p->epi_div >= 0 &&
                     p->epi_div < (int64_t)1 << p->epi_stages && p->epi_relu >= 0 &&
                     p->epi_relu < (int64_t)1 << p->epi_stages;
    if (p->out_words) {
        if (!stages_ok || p->out_words < (p->o + 31) / 32 || p->out_words > (1 << 20) || (p->zero & ~1ll) ||
            (p->nan_flags & ~1ll) || p->levels < 0 || p->levels > 255 || (p->levels && p->zero))
            return bad_step(c, "bad bit output: %lld words a pixel, %lld stages, div %lld, relu %lld, zero %lld, "
                               "levels %lld",
                            (long long)p->out_words, (long long)p->epi_stages, (long long)p->epi_div,
                            (long long)p->epi_relu, (long long)p->zero, (long long)p->levels);
        /* bits: ||w||_2, threshold, mode; codes: ||w||_2, levels thresholds, sign, the quantizer */
        uint64_t planes = p->levels ? (uint64_t)blob_code_planes(p->levels) : 1;
        chain = p->levels ? ((uint64_t)(2 * p->epi_stages + 2 + p->levels) * (uint64_t)p->o + BLOB_CONV2D_QUANT_WORDS) * 4
                          : (uint64_t)(2 * p->epi_stages + 3) * (uint64_t)p->o * 4;
        out = (uint64_t)oh * (uint64_t)ow * (uint64_t)p->out_words * (planes + (uint64_t)p->nan_flags) * 4;
    } else if (!stages_ok || p->zero || p->nan_flags || p->levels) {
        return bad_step(c, "bad float chain: %lld stages, div %lld, relu %lld, zero %lld, nan_flags %lld",
                        (long long)p->epi_stages, (long long)p->epi_div, (long long)p->epi_relu,
                        (long long)p->zero, (long long)p->nan_flags);
    } else { /* f32 out, each value through the stages of in2 [epi_stages][2][o] first */
        chain = (uint64_t)(2 * p->epi_stages) * (uint64_t)p->o * 4;
    }
    TRY(want_slot(c, BLOB_SLOT_IN, BLOB_SPACE_ARENA, in, false));
    TRY(want_slot(c, BLOB_SLOT_IN2, chain ? BLOB_SPACE_WEIGHTS : 0, chain, false));
    if (p->levels) { /* the quantizer's words, read from the weights */
        int32_t qd[BLOB_CONV2D_QUANT_WORDS];
        for (int i = 0; i < BLOB_CONV2D_QUANT_WORDS; i++)
            qd[i] = (int32_t)blob_get_u32(c->m->weights + c->s->slot[BLOB_SLOT_IN2].offset + chain - 4 *
                                          (uint64_t)(BLOB_CONV2D_QUANT_WORDS - i));
        float scale, zeropt;
        memcpy(&scale, &qd[BLOB_CONV2D_Q_SCALE], 4);
        memcpy(&zeropt, &qd[BLOB_CONV2D_Q_ZEROPT], 4);
        if ((int64_t)qd[BLOB_CONV2D_Q_HI] - qd[BLOB_CONV2D_Q_LO] != p->levels || qd[BLOB_CONV2D_Q_ROUNDING] < 0 ||
            qd[BLOB_CONV2D_Q_ROUNDING] > BLOB_ROUND_HALF_DOWN || !(scale > 0.0f) || !isfinite(scale) ||
            !isfinite(zeropt))
            return bad_step(c, "bad quantizer: range [%lld, %lld] for %lld levels, rounding %lld",
                            (long long)qd[BLOB_CONV2D_Q_LO], (long long)qd[BLOB_CONV2D_Q_HI], (long long)p->levels,
                            (long long)qd[BLOB_CONV2D_Q_ROUNDING]);
    }
    TRY(want_slot(c, BLOB_SLOT_W, BLOB_SPACE_WEIGHTS, w, false));
    TRY(want_slot(c, BLOB_SLOT_P0, BLOB_SPACE_WEIGHTS, (uint64_t)p->o * 4, true));
    /* the fp16 weight image of bnncc --float-convs, 1 or 2 planes, in any of its k orders
     * (blob.h BLOB_F16_ROWS: older blobs have the others) */
    uint64_t p1 = c->s->slot[BLOB_SLOT_P1].bytes;
    TRY(want_slot(c, BLOB_SLOT_P1, BLOB_SPACE_WEIGHTS,
                  p1 == 2 * w16 || p1 == w16old || p1 == 2 * w16old || p1 == w16pair || p1 == 2 * w16pair ? p1 : w16,
                  true));
    TRY(want_slot(c, BLOB_SLOT_OUT, BLOB_SPACE_ARENA, out, false));
    /* x0: the exact bit kernel's list of the sums it leaves to the fixup kernel after it */
    const BlobRef *x0 = &c->s->slot[BLOB_SLOT_X0];
    if (x0->space != BLOB_SPACE_NONE &&
        (x0->space != BLOB_SPACE_ARENA || !p->out_words || !x0->bytes || x0->bytes % 128))
        return bad_step(c, "slot x0 (the bit kernel's list) must be in the arena, a multiple of 128 bytes, and "
                           "only with bits out");
    return check_overlap(c, false);
}

/* Words per pixel of image planes for n channels: 1, 2, 4 or a multiple of 8, enough for n. */
static bool image_words_ok(int64_t words, int64_t n) {
    return words >= (int64_t)words_for(n) && words <= MAX_DIM &&
           (words == 1 || words == 2 || words == 4 || words % 8 == 0);
}

static bnn_status check_pool(const StepCheck *c) {
    const BlobPoolParams *p = &c->s->pool;
    if (!dim_ok(p->c) || !dim_ok(p->h) || !dim_ok(p->w) || !dim_ok(p->kh) || !dim_ok(p->kw) ||
        !dim_ok(p->stride_h) || !dim_ok(p->stride_w) || !pad_ok(p->pad_top) ||
        !pad_ok(p->pad_left) || !pad_ok(p->pad_bottom) || !pad_ok(p->pad_right) ||
        !dim_ok(p->oh) || !dim_ok(p->ow) || (p->count_include_pad & ~1ll))
        return bad_step(c, "bad shape, stride or padding");
    /* ceil_mode may add one output; every window must still see one real pixel. */
    int64_t oh = out_extent(p->h, p->pad_top, p->pad_bottom, p->kh, 1, p->stride_h);
    int64_t ow = out_extent(p->w, p->pad_left, p->pad_right, p->kw, 1, p->stride_w);
    if (p->oh > oh + 1 || p->ow > ow + 1 || p->oh < oh || p->ow < ow || p->pad_top >= p->kh ||
        p->pad_left >= p->kw || (p->oh - 1) * p->stride_h - p->pad_top >= p->h ||
        (p->ow - 1) * p->stride_w - p->pad_left >= p->w)
        return bad_step(c, "output %lldx%lld does not fit the input and window",
                        (long long)p->oh, (long long)p->ow);
    uint64_t in, out;
    if ((p->words || p->out_words || p->nan_flags || p->planes) &&
        (c->s->kind != BLOB_STEP_MAXPOOL || p->words < (p->c + 31) / 32 || p->out_words < p->words ||
         p->out_words > (1 << 20) || p->count_include_pad || (p->nan_flags & ~1ll) || p->planes < 0 ||
         p->planes > 8 || (p->planes && !image_words_ok(p->out_words, p->c))))
        return bad_step(c, "bad bit pool: %lld words a pixel in, %lld out, %lld code planes, for %lld channels",
                        (long long)p->words, (long long)p->out_words, (long long)p->planes, (long long)p->c);
    if (!p->planes && (p->lo || p->scale_bits || p->zeropt_bits))
        return bad_step(c, "a dequantization without code planes");
    /* per pixel: 4-byte words of bits (of codes: planes, then NaN flags), or floats */
    uint64_t planes = p->planes ? (uint64_t)p->planes : 1;
    uint64_t in_px = p->words ? (uint64_t)p->words * (planes + (uint64_t)p->nan_flags) : (uint64_t)p->c;
    uint64_t out_px = p->words ? (uint64_t)p->out_words : in_px, f32 = 0;
    if (!mul3_ok(in_px, (uint64_t)p->h, (uint64_t)p->w, &in) || !mul_ok(in, 4, &in) ||
        !mul3_ok(out_px, (uint64_t)p->oh, (uint64_t)p->ow, &out) || !mul_ok(out, 4, &out) ||
        !mul3_ok((uint64_t)p->c * 4, (uint64_t)p->oh, (uint64_t)p->ow, &f32))
        return bad_step(c, "operands too large");
    if (p->planes) /* image planes */
        out = (uint64_t)blob_image_plane_words(p->oh * p->ow, p->out_words) * planes * 4;
    TRY(want_slot(c, BLOB_SLOT_IN, BLOB_SPACE_ARENA, in, false));
    TRY(want_slot(c, BLOB_SLOT_OUT, BLOB_SPACE_ARENA, out, false));
    /* a max-pool of bits: p0 optional, the channels pooled by AND (one bit each, words words) */
    if (p->words && !p->planes)
        TRY(want_slot(c, BLOB_SLOT_P0, BLOB_SPACE_WEIGHTS, (uint64_t)p->words * 4, true));
    /* of codes: x0 optional, the quantizer's float */
    if (p->planes)
        TRY(want_slot(c, BLOB_SLOT_X0, BLOB_SPACE_ARENA, f32, true));
    for (int i = BLOB_SLOT_IN2; i <= BLOB_SLOT_X1; i++)
        if (i != BLOB_SLOT_OUT && !(i == BLOB_SLOT_P0 && p->words && !p->planes) && !(i == BLOB_SLOT_X0 && p->planes))
            TRY(want_slot(c, i, 0, 0, false));
    if (ranges_overlap(&c->s->slot[BLOB_SLOT_X0], &c->s->slot[BLOB_SLOT_IN]) ||
        ranges_overlap(&c->s->slot[BLOB_SLOT_X0], &c->s->slot[BLOB_SLOT_OUT]))
        return bad_step(c, "slot x0 overlaps the input or the output");
    return check_overlap(c, false);
}

/* Steps whose operands are plain arrays: in (count_in bytes), out (count_out bytes). */
static bnn_status check_simple(const StepCheck *c, uint64_t in, uint64_t out, bool in_place) {
    TRY(want_slot(c, BLOB_SLOT_IN, BLOB_SPACE_ARENA, in, false));
    TRY(want_slot(c, BLOB_SLOT_OUT, BLOB_SPACE_ARENA, out, false));
    return check_overlap(c, in_place);
}

static bnn_status check_none(const StepCheck *c, int from, int to) {
    for (int i = from; i <= to; i++)
        TRY(want_slot(c, i, 0, 0, false));
    return BNN_STATUS_OK;
}

/* quantize (kind 18): f32 [rows][k] to bit-planes [rows][bits][ld], or to f32 (dequant). */
static bnn_status check_quantize(const StepCheck *c) {
    const BlobQuantizeParams *p = &c->s->quantize;
    bool planes = p->dequant == 0;
    if (!dim_ok(p->rows) || !dim_ok(p->k) || (p->dequant & ~1ll) || p->rounding < 0 ||
        p->rounding > BLOB_ROUND_HALF_DOWN || p->lo >= p->hi || p->lo < -(1ll << 30) ||
        p->hi > (1ll << 30) || (p->scale_bits & ~0xffffffffll) || (p->zeropt_bits & ~0xffffffffll))
        return bad_step(c, "bad shape, range [%lld, %lld] or rounding %lld", (long long)p->lo,
                        (long long)p->hi, (long long)p->rounding);
    if (planes && (p->bits < 1 || p->bits > 24 || p->hi - p->lo >= (1ll << p->bits) ||
                   p->ld > MAX_DIM || (!p->spatial && p->ld < (int64_t)words_for(p->k))))
        return bad_step(c, "bad planes: %lld bits, ld %lld", (long long)p->bits, (long long)p->ld);
    uint64_t in, out;
    if (p->format & ~1ll)
        return bad_step(c, "bad codes format %lld (0 bit-planes, 1 int8)", (long long)p->format);
    if (p->format == BLOB_CODES_INT8) { /* a byte a code: [rows][ld] */
        if (!planes || p->spatial || p->bits > 8 || p->ld % 64 || p->ld < p->k ||
            !mul3_ok((uint64_t)p->rows, (uint64_t)p->k, 4, &in) ||
            !mul3_ok((uint64_t)p->rows, (uint64_t)p->ld, 1, &out))
            return bad_step(c, "bad int8 codes: %lld bits, k %lld, ld %lld (bytes: a multiple of 64, at "
                               "least k), dequant %lld, spatial %lld", (long long)p->bits, (long long)p->k,
                            (long long)p->ld, (long long)p->dequant, (long long)p->spatial);
        TRY(check_none(c, BLOB_SLOT_W, BLOB_SLOT_P1));
        return check_simple(c, in, out, false);
    }
    if (p->spatial) { /* image planes: [bits][spatial][ld], ld words per pixel */
        if (!dim_ok(p->spatial) || p->rows != 1 || !planes || p->k % p->spatial ||
            !image_words_ok(p->ld, p->k / p->spatial) || !mul3_ok((uint64_t)p->k, 4, 1, &in) ||
            !mul3_ok((uint64_t)p->spatial, (uint64_t)p->ld, 1, &out) || out > (uint64_t)MAX_DIM * MAX_DIM ||
            !mul3_ok((uint64_t)blob_image_plane_words(p->spatial, p->ld), (uint64_t)p->bits, 4, &out))
            return bad_step(c, "bad image planes: k %lld, spatial %lld, ld %lld", (long long)p->k,
                            (long long)p->spatial, (long long)p->ld);
        TRY(check_none(c, BLOB_SLOT_W, BLOB_SLOT_P1));
        return check_simple(c, in, out, false);
    }
    if (!mul3_ok((uint64_t)p->rows, (uint64_t)p->k, 4, &in) ||
        !mul3_ok((uint64_t)p->rows, planes ? (uint64_t)(p->bits * p->ld) : (uint64_t)p->k, 4, &out))
        return bad_step(c, "operands too large");
    TRY(check_none(c, BLOB_SLOT_W, BLOB_SLOT_P1));
    return check_simple(c, in, out, false);
}

/* The operands of a qconv's float chain (epi 3): p1 the descriptor (read from the weights and
 * checked field by field), p0 the stages, in2 the residual, out the f32 and/or x1 (or out) the
 * codes' planes. `planes` is the bytes of the codes' planes, cells * o * 4 the f32's. */
static bnn_status check_qconv_chain(const StepCheck *c, uint64_t cells, uint64_t planes) {
    const BlobQconvParams *p = &c->s->qconv;
    const BlobStep *s = c->s;
    TRY(want_slot(c, BLOB_SLOT_P1, BLOB_SPACE_WEIGHTS, BLOB_QCHAIN_WORDS * 4, false));
    int64_t d[BLOB_QCHAIN_WORDS];
    for (int i = 0; i < BLOB_QCHAIN_WORDS; i++)
        d[i] = (int32_t)blob_get_u32(c->m->weights + s->slot[BLOB_SLOT_P1].offset + 4 * (size_t)i);
    int64_t st = d[BLOB_QCHAIN_STAGES], lo = d[BLOB_QCHAIN_LO], hi = d[BLOB_QCHAIN_HI];
    bool quant = d[BLOB_QCHAIN_QUANT] != 0;
    if (st < 1 || st > BLOB_EPI_MAX_STAGES || d[BLOB_QCHAIN_DIV] < 0 || d[BLOB_QCHAIN_DIV] >= (int64_t)1 << st ||
        d[BLOB_QCHAIN_RELU] < 0 || d[BLOB_QCHAIN_RELU] >= (int64_t)1 << st || d[BLOB_QCHAIN_RESIDUAL] < 0 ||
        d[BLOB_QCHAIN_RESIDUAL] > 2 || (d[BLOB_QCHAIN_OUT_RELU] & ~1ll) || d[BLOB_QCHAIN_F32] < 0 ||
        d[BLOB_QCHAIN_F32] > 2 || (d[BLOB_QCHAIN_QUANT] & ~1ll))
        return bad_step(c, "bad float chain descriptor: %lld stages, div %lld, relu %lld, residual %lld, "
                           "out relu %lld, f32 %lld, quantizer %lld", (long long)st,
                        (long long)d[BLOB_QCHAIN_DIV], (long long)d[BLOB_QCHAIN_RELU],
                        (long long)d[BLOB_QCHAIN_RESIDUAL], (long long)d[BLOB_QCHAIN_OUT_RELU],
                        (long long)d[BLOB_QCHAIN_F32], (long long)d[BLOB_QCHAIN_QUANT]);
    if (quant ? lo >= hi || lo < -(1ll << 23) || hi > (1ll << 24) || d[BLOB_QCHAIN_ROUNDING] < 0 ||
                    d[BLOB_QCHAIN_ROUNDING] > BLOB_ROUND_HALF_DOWN
              : lo || hi || d[BLOB_QCHAIN_ROUNDING] || d[BLOB_QCHAIN_SCALE] || d[BLOB_QCHAIN_ZEROPT])
        return bad_step(c, "bad quantizer: range [%lld, %lld], rounding %lld", (long long)lo, (long long)hi,
                        (long long)d[BLOB_QCHAIN_ROUNDING]);
    if ((p->yb && (!quant || hi - lo >= (1ll << p->yb))) || (d[BLOB_QCHAIN_F32] == 2 && !quant) ||
        (!p->yb && !d[BLOB_QCHAIN_F32]))
        return bad_step(c, "the chain's outputs (%lld code planes, f32 %lld) do not fit its quantizer",
                        (long long)p->yb, (long long)d[BLOB_QCHAIN_F32]);
    uint64_t f32;
    if (!mul3_ok(cells, (uint64_t)p->o, 4, &f32))
        return bad_step(c, "the output is too large");
    bool x1 = s->slot[BLOB_SLOT_X1].space != BLOB_SPACE_NONE, has_f32 = d[BLOB_QCHAIN_F32] != 0;
    if (x1 && !(has_f32 && p->yb))
        return bad_step(c, "slot x1 holds the codes when the chain writes both outputs, only then");
    TRY(want_slot(c, BLOB_SLOT_IN2, d[BLOB_QCHAIN_RESIDUAL] ? BLOB_SPACE_ARENA : 0, f32, false));
    TRY(want_slot(c, BLOB_SLOT_OUT, BLOB_SPACE_ARENA, has_f32 ? f32 : planes, false));
    TRY(want_slot(c, BLOB_SLOT_X1, has_f32 && p->yb ? BLOB_SPACE_ARENA : 0, planes, false));
    TRY(want_slot(c, BLOB_SLOT_P0, BLOB_SPACE_WEIGHTS, (uint64_t)st * 2 * (uint64_t)p->o * 4, false));
    if (ranges_overlap(&s->slot[BLOB_SLOT_X1], &s->slot[BLOB_SLOT_IN]) ||
        ranges_overlap(&s->slot[BLOB_SLOT_X1], &s->slot[BLOB_SLOT_IN2]) ||
        ranges_overlap(&s->slot[BLOB_SLOT_X1], &s->slot[BLOB_SLOT_OUT]))
        return bad_step(c, "the code output (slot x1) overlaps another operand");
    return check_overlap(c, false);
}

/* qconv (kind 20): bit-plane implicit-GEMM convolution, docs/blob-format.md. Every tap
 * outside the image reads pad_code, so any output extent is memory-safe. */
static bnn_status check_qconv(const StepCheck *c) {
    const BlobQconvParams *p = &c->s->qconv;
    bool chain = p->epi == BLOB_QCONV_EPI_CHAIN, planes = p->epi == 2 || (chain && p->yb);
    if (!dim_ok(p->c) || !dim_ok(p->h) || !dim_ok(p->w) || !dim_ok(p->o) || !dim_ok(p->kh) ||
        !dim_ok(p->kw) || !dim_ok(p->stride_h) || !dim_ok(p->stride_w) || !dim_ok(p->dil_h) ||
        !dim_ok(p->dil_w) || !pad_ok(p->pad_top) || !pad_ok(p->pad_left) || !dim_ok(p->oh) ||
        !dim_ok(p->ow) || !image_words_ok(p->ldw, p->c) ||
        (planes ? !image_words_ok(p->ldy, p->o) : p->ldy != 0) ||
        p->xb < 1 || p->xb > 16 || p->wb < 1 || p->wb > 16 || (p->wsigned & ~1ll) ||
        (p->bipolar & ~1ll) || (p->bipolar && p->wb != 1) || p->epi < 1 || p->epi > 3 ||
        (p->epi == 2 && (p->levels < 1 || p->levels > MAX_DIM || p->yb < 1 || p->yb > 16 ||
                         p->levels >= (1ll << p->yb))) ||
        (chain && (p->levels != 0 || p->yb < 0 || p->yb > 16)) || (p->epi == 1 && (p->levels || p->yb)) ||
        p->pad_code < 0 || p->pad_code >= (1ll << p->xb))
        return bad_step(c, "bad shape, planes, pad code or epilogue (c %lld o %lld ldw %lld xb "
                           "%lld wb %lld epi %lld)", (long long)p->c, (long long)p->o,
                        (long long)p->ldw, (long long)p->xb, (long long)p->wb, (long long)p->epi);
    /* dims are at most 2^24 each: products of two fit in 64 bits before the rounding */
    uint64_t in, w, out, t, cells = (uint64_t)p->oh * (uint64_t)p->ow, pixels = (uint64_t)p->h * (uint64_t)p->w;
    uint64_t krow;
    if (!mul3_ok((uint64_t)p->kh, (uint64_t)p->kw, (uint64_t)p->ldw, &krow) || krow > (uint64_t)MAX_DIM * MAX_DIM ||
        !mul3_ok(pixels, (uint64_t)p->ldw, 1, &in) || in > (uint64_t)MAX_DIM * MAX_DIM ||
        !mul3_ok((in + 7) / 8 * 8, (uint64_t)p->xb, 4, &in) || !mul3_ok(cells, (uint64_t)p->ldy, 1, &out) ||
        out > (uint64_t)MAX_DIM * MAX_DIM ||
        !mul3_ok((uint64_t)(p->wb * p->o), (krow + 7) / 8 * 8, 4, &w) ||
        !mul3_ok(planes ? (out + 7) / 8 * 8 : cells, planes ? (uint64_t)p->yb : (uint64_t)p->o, 4, &out) ||
        !mul3_ok((uint64_t)p->o, p->epi == 2 ? (uint64_t)p->levels : 0, 4, &t))
        return bad_step(c, "operands too large");
    TRY(want_slot(c, BLOB_SLOT_IN, BLOB_SPACE_ARENA, in, false));
    TRY(want_slot(c, BLOB_SLOT_W, BLOB_SPACE_WEIGHTS, w, false));
    if (chain)
        return check_qconv_chain(c, cells, planes ? out : 0);
    TRY(want_slot(c, BLOB_SLOT_IN2, 0, 0, false));
    TRY(want_slot(c, BLOB_SLOT_P0, p->epi == 1 ? 0 : BLOB_SPACE_WEIGHTS, t, false));
    TRY(want_slot(c, BLOB_SLOT_P1, p->epi == 1 ? 0 : BLOB_SPACE_WEIGHTS, (uint64_t)p->o * 4,
                  false));
    /* past 15 levels (bnncc from 2026-12-03 stop 63) the GPU kernels' levels, folded and sorted;
     * the CPU path reads p0 */
    TRY(want_slot(c, BLOB_SLOT_X0, p->epi == 2 ? BLOB_SPACE_WEIGHTS : 0, t, true));
    TRY(want_slot(c, BLOB_SLOT_OUT, BLOB_SPACE_ARENA, out, false));
    return check_overlap(c, false);
}

/* qgemm (kind 19): bit-plane GEMM, docs/blob-format.md. */
static bnn_status check_qgemm(const StepCheck *c) {
    const BlobQgemmParams *p = &c->s->qgemm;
    if (!dim_ok(p->rows) || !dim_ok(p->n) || !dim_ok(p->ld) || p->ld % 8 || p->xb < 1 ||
        p->xb > 16 || p->wb < 1 || p->wb > 16 || (p->wsigned & ~1ll) || (p->bipolar & ~1ll) ||
        (p->bipolar && p->wb != 1) || p->epi < 1 || p->epi > 3 ||
        (p->epi != 1 && (p->levels < 1 || p->levels > MAX_DIM)) ||
        (p->epi == 2 && (p->yb < 1 || p->yb > 16 || p->levels >= (1ll << p->yb))))
        return bad_step(c, "bad shape, planes or epilogue (rows %lld n %lld ld %lld xb %lld wb "
                           "%lld epi %lld)", (long long)p->rows, (long long)p->n, (long long)p->ld,
                        (long long)p->xb, (long long)p->wb, (long long)p->epi);
    bool x8 = p->format == BLOB_CODES_INT8, y8 = p->yformat == BLOB_CODES_INT8;
    if ((p->format & ~1ll) || (p->yformat & ~1ll) || (p->yformat && p->epi != 2) ||
        (x8 && (p->xb > 8 || p->wb > 8 || p->ld % 64)) || (y8 && p->yb > 8))
        return bad_step(c, "bad codes formats (in %lld, out %lld: 0 bit-planes, 1 int8 with at most 8 "
                           "bits and ld a multiple of 64 bytes; out only for epi 2; xb %lld wb %lld yb %lld "
                           "ld %lld)", (long long)p->format, (long long)p->yformat, (long long)p->xb,
                        (long long)p->wb, (long long)p->yb, (long long)p->ld);
    uint64_t a, w, out, t;
    /* bytes of an output row: i32, yb planes of ldy words, or one byte a code */
    uint64_t ldy = (uint64_t)(p->n + 255) / 256 * 8;
    uint64_t row = p->epi != 2 ? (uint64_t)p->n * 4 : y8 ? (uint64_t)blob_int8_ld(p->n) : (uint64_t)p->yb * ldy * 4;
    if (!mul3_ok((uint64_t)p->rows, x8 ? (uint64_t)p->ld : (uint64_t)(p->xb * p->ld), x8 ? 1 : 4, &a) ||
        !mul3_ok(x8 ? (uint64_t)p->n : (uint64_t)(p->wb * p->n), (uint64_t)p->ld, x8 ? 1 : 4, &w) ||
        !mul3_ok((uint64_t)p->rows, row, 1, &out) ||
        !mul3_ok((uint64_t)p->n, p->epi == 1 ? 0 : (uint64_t)p->levels, 4, &t))
        return bad_step(c, "operands too large");
    TRY(want_slot(c, BLOB_SLOT_IN, BLOB_SPACE_ARENA, a, false));
    TRY(want_slot(c, BLOB_SLOT_IN2, 0, 0, false));
    TRY(want_slot(c, BLOB_SLOT_W, BLOB_SPACE_WEIGHTS, w, false));
    TRY(want_slot(c, BLOB_SLOT_P0, p->epi == 1 ? 0 : BLOB_SPACE_WEIGHTS, t, false));
    TRY(want_slot(c, BLOB_SLOT_P1, p->epi == 1 ? 0 : BLOB_SPACE_WEIGHTS, (uint64_t)p->n * 4,
                  false));
    TRY(want_slot(c, BLOB_SLOT_OUT, BLOB_SPACE_ARENA, out, false));
    /* int8, and bit-planes past 15 levels (bnncc from stop 62): the GPU kernels' levels, folded
     * and sorted, and from BLOB_Q8_EST_LEVELS on their estimates (blob.h blob_q8_level_estimate;
     * for int8 bnncc before 2026-12-03 stop 61 wrote the levels alone, for kernels that read only
     * them; a bit-plane step's x0 always has them); the CPU path reads p0 */
    const bool levels_alone = x8 && c->s->slot[BLOB_SLOT_X0].bytes == t;
    if ((x8 || p->epi == 2) && !(c->s->flags & BLOB_STEP_BATCH_ALT))
        TRY(want_slot(c, BLOB_SLOT_X0, p->epi == 1 ? 0 : BLOB_SPACE_WEIGHTS,
                      p->epi != 1 && !levels_alone ? (uint64_t)blob_q8_levels_bytes(p->n, p->levels) : t, true));
    return check_overlap(c, false);
}

static bnn_status check_kind(const StepCheck *c) {
    const BlobStep *s = c->s;
    uint64_t a, b;
    bool two = false; /* the kind uses in2 */
    switch (s->kind) {
    case BLOB_STEP_PACK:
    case BLOB_STEP_UNPACK: {
        /* pack and unpack share their first four parameters. */
        int64_t ch = s->params[0], sp = s->params[1], words = s->params[2];
        int64_t layout = s->kind == BLOB_STEP_PACK ? s->pack.layout : s->unpack.layout;
        if (!dim_ok(ch) || !dim_ok(sp) || words > MAX_DIM || words < (int64_t)words_for(ch) ||
            (layout != BLOB_LAYOUT_CS && layout != BLOB_LAYOUT_SC))
            return bad_step(c, "bad channels %lld, spatial %lld, words %lld or layout %lld",
                            (long long)ch, (long long)sp, (long long)words, (long long)layout);
        if (s->kind == BLOB_STEP_PACK && s->pack.zero != 1 && s->pack.zero != -1)
            return bad_step(c, "zero must be 1 or -1, not %lld", (long long)s->pack.zero);
        if (!mul3_ok((uint64_t)ch, (uint64_t)sp, 4, &a) || !mul3_ok((uint64_t)sp, (uint64_t)words, 4, &b))
            return bad_step(c, "operands too large");
        TRY(check_none(c, BLOB_SLOT_W, BLOB_SLOT_P1));
        TRY(s->kind == BLOB_STEP_PACK ? check_simple(c, a, b, false) : check_simple(c, b, a, false));
        break;
    }
    case BLOB_STEP_BGEMM: return check_bgemm(c);
    case BLOB_STEP_RETILE: {
        const BlobRetileParams *p = &s->retile;
        bool ok = dim_ok(p->rows) && dim_ok(p->k) && p->in_ld <= MAX_DIM && p->out_ld <= MAX_DIM;
        for (int side = 0; ok && side < 2; side++) {
            int64_t tile = side ? p->out_tile : p->in_tile, ld = side ? p->out_ld : p->in_ld;
            ok = (tile == 0 && ld >= (p->k + 7) / 8) ||
                 ((tile == 128 || tile == 256) && ld % 16 == 0 && ld * 8 >= p->k && p->rows == 1);
        }
        if (!ok || !mul3_ok((uint64_t)p->rows, (uint64_t)p->in_ld, 1, &a) ||
            !mul3_ok((uint64_t)p->rows, (uint64_t)p->out_ld, 1, &b))
            return bad_step(c, "bad rows %lld, k %lld or layouts (tile %lld, %lld bytes a row) -> (tile %lld, "
                            "%lld bytes a row)", (long long)p->rows, (long long)p->k, (long long)p->in_tile,
                            (long long)p->in_ld, (long long)p->out_tile, (long long)p->out_ld);
        TRY(check_none(c, BLOB_SLOT_W, BLOB_SLOT_P1));
        TRY(check_simple(c, a, b, false));
        break;
    }
    case BLOB_STEP_BCONV: return check_bconv(c);
    case BLOB_STEP_QUANTIZE: return check_quantize(c);
    case BLOB_STEP_QGEMM: return check_qgemm(c);
    case BLOB_STEP_QCONV: return check_qconv(c);
    case BLOB_STEP_DENSE: {
        const BlobDenseParams *p = &s->dense;
        uint64_t w, out;
        if (!dim_ok(p->rows) || !dim_ok(p->n) || !dim_ok(p->k) ||
            !mul3_ok((uint64_t)p->rows, (uint64_t)p->k, 4, &a) ||
            !mul3_ok((uint64_t)p->n, (uint64_t)p->k, 4, &w) ||
            !mul3_ok((uint64_t)p->rows, (uint64_t)p->n, 4, &out))
            return bad_step(c, "bad shape");
        TRY(want_slot(c, BLOB_SLOT_W, BLOB_SPACE_WEIGHTS, w, false));
        TRY(want_slot(c, BLOB_SLOT_P0, BLOB_SPACE_WEIGHTS, (uint64_t)p->n * 4, true));
        TRY(want_slot(c, BLOB_SLOT_P1, 0, 0, false));
        TRY(check_simple(c, a, out, false));
        break;
    }
    case BLOB_STEP_CONV2D: return check_conv2d(c);
    case BLOB_STEP_AFFINE: {
        const BlobAffineParams *p = &s->affine;
        if (!dim_ok(p->channels) || !dim_ok(p->spatial) ||
            (p->layout != BLOB_LAYOUT_CS && p->layout != BLOB_LAYOUT_SC) || (p->div & ~1ll) ||
            !mul3_ok((uint64_t)p->channels, (uint64_t)p->spatial, 4, &a))
            return bad_step(c, "bad channels, spatial or layout");
        TRY(want_slot(c, BLOB_SLOT_W, 0, 0, false));
        TRY(want_slot(c, BLOB_SLOT_P0, BLOB_SPACE_WEIGHTS, (uint64_t)p->channels * 4, false));
        TRY(want_slot(c, BLOB_SLOT_P1, BLOB_SPACE_WEIGHTS, (uint64_t)p->channels * 4, false));
        TRY(check_simple(c, a, a, true));
        break;
    }
    case BLOB_STEP_MAXPOOL:
    case BLOB_STEP_AVGPOOL: return check_pool(c);
    case BLOB_STEP_GLOBALAVGPOOL: /* words 0: f32 [C][S]; else S pixels of `words` words of bits */
        if (!dim_ok(s->gap.channels) || !dim_ok(s->gap.spatial) || s->gap.spatial >= (1 << 24) ||
            s->gap.words < 0 || (s->gap.words && s->gap.words < (s->gap.channels + 31) / 32) ||
            !mul3_ok((uint64_t)s->gap.channels, (uint64_t)s->gap.spatial, 4, &a) ||
            !mul3_ok((uint64_t)s->gap.spatial, (uint64_t)s->gap.words, 4, &b))
            return bad_step(c, "bad channels, spatial or words");
        if (s->gap.words)
            a = b;
        TRY(check_none(c, BLOB_SLOT_W, BLOB_SLOT_P1));
        TRY(check_simple(c, a, (uint64_t)s->gap.channels * 4, false));
        break;
    case BLOB_STEP_ADD:
        if (!dim_ok(s->add.count) || (s->add.dtype != BLOB_DTYPE_F32 && s->add.dtype != BLOB_DTYPE_I32))
            return bad_step(c, "bad count %lld or dtype %lld", (long long)s->add.count,
                            (long long)s->add.dtype);
        a = (uint64_t)s->add.count * 4;
        TRY(want_slot(c, BLOB_SLOT_IN2, BLOB_SPACE_ARENA | BLOB_SPACE_WEIGHTS, a, false));
        TRY(check_none(c, BLOB_SLOT_W, BLOB_SLOT_P1));
        TRY(check_simple(c, a, a, true));
        two = true;
        break;
    case BLOB_STEP_RELU:
        if (!dim_ok(s->relu.count))
            return bad_step(c, "bad count %lld", (long long)s->relu.count);
        a = (uint64_t)s->relu.count * 4;
        TRY(check_none(c, BLOB_SLOT_W, BLOB_SLOT_P1));
        TRY(check_simple(c, a, a, true));
        break;
    case BLOB_STEP_COPY:
        if (s->copy.bytes < 1 || (uint64_t)s->copy.bytes > MAX_BYTES)
            return bad_step(c, "bad byte count %lld", (long long)s->copy.bytes);
        TRY(check_none(c, BLOB_SLOT_W, BLOB_SLOT_P1));
        TRY(check_simple(c, (uint64_t)s->copy.bytes, (uint64_t)s->copy.bytes, true));
        break;
    case BLOB_STEP_ARGMAX:
        if (!dim_ok(s->argmax.rows) || !dim_ok(s->argmax.n) ||
            !mul3_ok((uint64_t)s->argmax.rows, (uint64_t)s->argmax.n, 4, &a))
            return bad_step(c, "bad rows or n");
        TRY(check_none(c, BLOB_SLOT_W, BLOB_SLOT_P1));
        TRY(check_simple(c, a, (uint64_t)s->argmax.rows * 8, false));
        break;
    case BLOB_STEP_SOFTMAX:
        if (!dim_ok(s->softmax.rows) || !dim_ok(s->softmax.n) ||
            !mul3_ok((uint64_t)s->softmax.rows, (uint64_t)s->softmax.n, 4, &a))
            return bad_step(c, "bad rows or n");
        TRY(check_none(c, BLOB_SLOT_W, BLOB_SLOT_P1));
        TRY(check_simple(c, a, a, false));
        break;
    case BLOB_STEP_CAST: {
        int64_t from = s->cast.from;
        size_t fs = from == BLOB_DTYPE_I32 || from == BLOB_DTYPE_I8 || from == BLOB_DTYPE_U8
                        ? blob_dtype_size((uint32_t)from) : 0;
        if (!dim_ok(s->cast.count) || !fs || s->cast.to != BLOB_DTYPE_F32)
            return bad_step(c, "bad count %lld or types %lld -> %lld (i32, i8, u8 -> f32)",
                            (long long)s->cast.count, (long long)from, (long long)s->cast.to);
        TRY(check_none(c, BLOB_SLOT_W, BLOB_SLOT_P1));
        TRY(check_simple(c, (uint64_t)s->cast.count * fs, (uint64_t)s->cast.count * 4, fs == 4));
        break;
    }
    case BLOB_STEP_KERNEL:
        if (!s->kernel[0])
            return bad_step(c, "a kernel step without a kernel name");
        if (s->flags & BLOB_STEP_CPU_ONLY)
            return bad_step(c, "a kernel step cannot be CPU-only");
        return BNN_STATUS_OK; /* its slots were checked generically */
    default:
        return bad_step(c, "unknown step kind %u", s->kind);
    }
    if (!two)
        TRY(want_slot(c, BLOB_SLOT_IN2, 0, 0, false));
    return BNN_STATUS_OK;
}

static bool valid_kernel_name(const char *k) {
    if (memchr(k, 0, BLOB_KERNEL_NAME_SIZE) == NULL)
        return false;
    for (const char *p = k; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_'))
            return false;
    return true;
}

/* A step beside the main line touches no arena bytes that a step it runs beside writes, and
 * writes none that such a step reads (a kernel writes through no IN or IN2 slot). */
static bnn_status check_beside(const StepCheck *c) {
    const BlobStep *s = c->s;
    int first = c->index; /* the run's first step */
    while (first > 0 && (c->m->steps[first - 1].flags & BLOB_STEP_BESIDE))
        first--;
    for (int q = blob_step_beside_fork(s->flags, c->index); q < first; q++)
        for (int i = 0; i < BLOB_MAX_SLOTS; i++)
            for (int j = 0; j < BLOB_MAX_SLOTS; j++)
                if (!(blob_slot_read_only(i) && blob_slot_read_only(j)) &&
                    ranges_overlap(&s->slot[i], &c->m->steps[q].slot[j]))
                    return bad_step(c, "it runs beside step %d, but its slot %s overlaps that step's slot %s "
                                       "and one of them is written", q, slot_names[i], slot_names[j]);
    return BNN_STATUS_OK;
}

/* What every step needs, whatever its kind: refs inside their spaces, a sane launch. */
static bnn_status check_step(const StepCheck *c) {
    const BlobStep *s = c->s;
    const bnn_model *m = c->m;
    uint32_t beside = s->flags >> BLOB_STEP_BESIDE_SHIFT; /* the steps it may run beside */
    uint32_t known = BLOB_STEP_CPU_ONLY | BLOB_STEP_PDL | BLOB_STEP_BATCH_ALT | BLOB_STEP_BESIDE |
                     BLOB_STEP_BESIDE_SWAP | BLOB_STEP_SM90A | BLOB_STEP_PERSISTENT |
                     BLOB_STEP_ONE_WAVE;
    if ((s->flags & ~known & ((1u << BLOB_STEP_BESIDE_SHIFT) - 1)) ||
        ((beside || (s->flags & BLOB_STEP_BESIDE_SWAP)) && !(s->flags & BLOB_STEP_BESIDE)))
        return bad_step(c, "unknown flags %#x", s->flags);
    if ((s->flags & BLOB_STEP_SM90A) && !(s->flags & BLOB_STEP_BATCH_ALT))
        return bad_step(c, "an sm_90a-only kernel on a step that is no batch alternative (a GPU with another "
                           "CUBIN would have nothing to run)");
    if (s->flags & BLOB_STEP_BESIDE) {
        /* a run: after a step without the flag, or continuing the run before it (same fork) */
        const BlobStep *p = c->index > 0 ? &m->steps[c->index - 1] : NULL;
        bool ok = beside >= 1 && beside <= BLOB_STEP_BESIDE_MAX && beside <= (uint32_t)c->index && p &&
                  s->kernel[0] && !(s->flags & BLOB_STEP_CPU_ONLY);
        if (ok && (p->flags & BLOB_STEP_BESIDE))
            ok = (p->flags >> BLOB_STEP_BESIDE_SHIFT) + 1 == beside &&
                 (p->flags & BLOB_STEP_BESIDE_SWAP) == (s->flags & BLOB_STEP_BESIDE_SWAP);
        else
            for (uint32_t d = 1; ok && d <= beside; d++)
                ok = !(m->steps[c->index - d].flags & BLOB_STEP_BESIDE);
        if (!ok)
            return bad_step(c, "a step beside the %u before it that is not a GPU kernel after a step of the "
                               "main line, or that does not continue the run before it", beside);
    }
    if (s->flags & BLOB_STEP_BATCH_ALT) { /* another kernel for the step before, from alt_batch on */
        /* p: the step before, the main step or an alternative of it from a smaller batch */
        const BlobStep *p = c->index > 0 ? &m->steps[c->index - 1] : NULL;
        /* the operands the CPU path knows are the same; x0 and x1 (GPU-only) too, unless
         * neither is a buffer of the arena: constants of either kernel (a halo bconv's tables
         * for its tile, a pre-tiled qgemm's weights) or nothing */
        bool gpu_only_same = true;
        for (int i = BLOB_SLOT_X0; p && i <= BLOB_SLOT_X1; i++)
            gpu_only_same &= !memcmp(&p->slot[i], &s->slot[i], sizeof s->slot[i]) ||
                             (p->slot[i].space != BLOB_SPACE_ARENA && s->slot[i].space != BLOB_SPACE_ARENA);
        /* an sm_90a-only alternative may start where the one before it does (it replaces it there) */
        bool same_from_ok = (s->flags & BLOB_STEP_SM90A) && !(p && (p->flags & BLOB_STEP_SM90A));
        if (!p || (p->flags & BLOB_STEP_CPU_ONLY) ||
            ((p->flags & BLOB_STEP_BATCH_ALT) &&
             (p->alt_batch > s->alt_batch || (p->alt_batch == s->alt_batch && !same_from_ok))) ||
            p->kind != s->kind ||
            (s->flags & BLOB_STEP_CPU_ONLY) || !s->kernel[0] || s->alt_batch < 2 ||
            memcmp(p->slot, s->slot, BLOB_SLOT_X0 * sizeof *s->slot) || !gpu_only_same ||
            memcmp(p->params, s->params, sizeof s->params))
            return bad_step(c, "a batch alternative (from batch %u) that is not another kernel for the GPU "
                               "step before it (or for its main step, from a larger batch than the alternative "
                               "before it)", s->alt_batch);
    } else if (s->alt_batch) {
        return bad_step(c, "alt_batch %u on a step that is no batch alternative", s->alt_batch);
    }
    bool fused = s->kind == BLOB_STEP_BGEMM || s->kind == BLOB_STEP_BCONV;
    if (!fused && s->epilogue)
        return bad_step(c, "an epilogue on a step that has none");
    for (int i = 0; i < BLOB_MAX_SLOTS; i++) {
        const BlobRef *r = &s->slot[i];
        uint64_t limit = r->space == BLOB_SPACE_ARENA ? m->arena_item : m->weights_size;
        if (r->reserved || r->space > BLOB_SPACE_WEIGHTS ||
            (r->space == BLOB_SPACE_NONE && (r->offset || r->bytes)))
            return bad_step(c, "slot %s is malformed", slot_names[i]);
        if (r->space != BLOB_SPACE_NONE &&
            (r->bytes == 0 || r->offset % BLOB_ALIGN || r->offset > limit ||
             r->bytes > limit - r->offset))
            return bad_step(c, "slot %s (offset %llu, %llu bytes) lies outside the %s of %llu bytes "
                            "or is misaligned", slot_names[i], (unsigned long long)r->offset,
                            (unsigned long long)r->bytes,
                            r->space == BLOB_SPACE_ARENA ? "arena (per item)" : "weights",
                            (unsigned long long)limit);
    }
    if (s->flags & BLOB_STEP_BESIDE) /* the slots are in bounds now: overlaps are sums that fit */
        TRY(check_beside(c));
    if (!valid_kernel_name(s->kernel))
        return bad_step(c, "bad kernel name");
    if (s->nargs > BLOB_MAX_ARGS)
        return bad_step(c, "%u kernel arguments, at most %d", s->nargs, BLOB_MAX_ARGS);
    int ntmaps = 0;
    for (uint32_t i = 0; i < s->nargs; i++) {
        const BlobArg *a = &s->args[i];
        bool ok = a->kind >= BLOB_ARG_PTR && a->kind <= BLOB_ARG_TMAP_PLANES;
        if (a->kind == BLOB_ARG_TMAP_PLANES) { /* one a step, of whole plane rows of an arena slot, sm_90a only */
            uint64_t dims[3], strides[2];
            uint32_t box[3];
            ok = (s->flags & BLOB_STEP_SM90A) && ++ntmaps == 1 && a->slot < BLOB_MAX_SLOTS &&
                 s->slot[a->slot].space == BLOB_SPACE_ARENA && blob_tmap_planes_geometry(a->value, 1, dims, strides, box) &&
                 s->slot[a->slot].bytes % blob_tmap_planes_row_bytes(a->value) == 0 && s->slot[a->slot].bytes > 0 &&
                 s->slot[a->slot].offset % 16 == 0;
        }
        if (a->kind == BLOB_ARG_PTR)
            ok = a->slot < BLOB_MAX_SLOTS && s->slot[a->slot].space != BLOB_SPACE_NONE;
        if (a->kind == BLOB_ARG_I32)
            ok = a->value >= INT32_MIN && a->value <= INT32_MAX;
        if (a->kind == BLOB_ARG_BATCH) /* batch * value must fit an i32 for batch < 2^31 */
            ok = a->value >= 1 && a->value <= MAX_DIM;
        if (!ok)
            return bad_step(c, "kernel argument %u is malformed", i);
    }
    if (s->kernel[0]) {
        uint64_t threads = 1;
        for (int d = 0; d < 3; d++) {
            if (s->grid[d].div == 0 || s->block[d] == 0)
                return bad_step(c, "a zero grid divisor or block dimension");
            threads *= s->block[d];
        }
        if (threads > 1024)
            return bad_step(c, "%llu threads per block, at most 1024", (unsigned long long)threads);
    }
    return check_kind(c);
}

/* The inverse of the writer's encoder (codegen/blob.c); fields are checked afterwards. */
static void decode_step(const unsigned char *p, BlobStep *s) {
    memset(s, 0, sizeof *s);
    s->kind = blob_get_u32(p);
    s->epilogue = blob_get_u32(p + 4);
    s->flags = blob_get_u32(p + 8);
    s->alt_batch = blob_get_u32(p + 12);
    memcpy(s->kernel, p + BLOB_STEP_KERNEL_AT, BLOB_KERNEL_NAME_SIZE);
    for (int d = 0; d < 3; d++) {
        s->grid[d].base = blob_get_u32(p + BLOB_STEP_GRID_AT + 12 * d);
        s->grid[d].per_batch = blob_get_u32(p + BLOB_STEP_GRID_AT + 12 * d + 4);
        s->grid[d].div = blob_get_u32(p + BLOB_STEP_GRID_AT + 12 * d + 8);
        s->block[d] = blob_get_u32(p + BLOB_STEP_BLOCK_AT + 4 * d);
    }
    s->smem = blob_get_u32(p + BLOB_STEP_SMEM_AT);
    s->nargs = blob_get_u32(p + BLOB_STEP_NARGS_AT);
    for (int i = 0; i < BLOB_MAX_ARGS; i++) {
        const unsigned char *a = p + BLOB_STEP_ARGS_AT + 16 * i;
        s->args[i].kind = blob_get_u32(a);
        s->args[i].slot = blob_get_u32(a + 4);
        s->args[i].value = (int64_t)blob_get_u64(a + 8);
    }
    for (int i = 0; i < BLOB_MAX_SLOTS; i++) {
        const unsigned char *r = p + BLOB_STEP_SLOTS_AT + 24 * i;
        s->slot[i].space = blob_get_u32(r);
        s->slot[i].reserved = blob_get_u32(r + 4);
        s->slot[i].offset = blob_get_u64(r + 8);
        s->slot[i].bytes = blob_get_u64(r + 16);
    }
    for (int i = 0; i < BLOB_MAX_PARAMS; i++)
        s->params[i] = (int64_t)blob_get_u64(p + BLOB_STEP_PARAMS_AT + 8 * i);
}

static bnn_status parse_plan(bnn_model *m, const unsigned char *p, uint64_t size) {
    if (size < BLOB_PLAN_HEADER_SIZE)
        return bad("PLAN: %llu bytes, shorter than its header", (unsigned long long)size);
    uint32_t nsteps = blob_get_u32(p), step_size = blob_get_u32(p + 4);
    m->arena_item = blob_get_u64(p + 8);
    for (int i = 16; i < (int)BLOB_PLAN_HEADER_SIZE; i++)
        if (p[i])
            return bad("PLAN: reserved header bytes are not zero");
    if (step_size != BLOB_STEP_SIZE)
        return bad("PLAN: steps of %u bytes, version 1 has %u", step_size, BLOB_STEP_SIZE);
    if ((size - BLOB_PLAN_HEADER_SIZE) / BLOB_STEP_SIZE != nsteps ||
        (size - BLOB_PLAN_HEADER_SIZE) % BLOB_STEP_SIZE)
        return bad("PLAN: %u steps do not fill its %llu bytes", nsteps, (unsigned long long)size);
    if (m->arena_item % BLOB_ALIGN || m->arena_item > MAX_BYTES)
        return bad("PLAN: arena of %llu bytes per item is misaligned or too large",
                   (unsigned long long)m->arena_item);
    m->nsteps = (int)nsteps;
    m->steps = rt_calloc(nsteps, sizeof *m->steps);
    if (!m->steps)
        return rt_error(BNN_STATUS_OUT_OF_MEMORY, "out of memory loading the model");
    for (uint32_t i = 0; i < nsteps; i++)
        decode_step(p + BLOB_PLAN_HEADER_SIZE + (size_t)i * BLOB_STEP_SIZE, &m->steps[i]);
    return BNN_STATUS_OK;
}

bnn_status rt_parse_blob(bnn_model *m) {
    Section sec[BLOB_MAX_SECTIONS];
    int nsec = 0;
    TRY(parse_sections(m->blob, m->len, sec, &nsec));
    const Section *meta = NULL, *plan = NULL;
    size_t tl = 0;
    for (int i = 0; i < nsec; i++) {
        const unsigned char *at = m->blob + sec[i].offset;
        switch (sec[i].kind) {
        case BLOB_SECTION_META: meta = &sec[i]; break;
        case BLOB_SECTION_PLAN: plan = &sec[i]; break;
        case BLOB_SECTION_WEIGHTS:
            m->weights = at;
            m->weights_size = sec[i].size;
            break;
        case BLOB_SECTION_CUBIN: {
            RtCubin *cb = &m->cubins[m->ncubins++];
            memcpy(cb->arch, sec[i].tag, BLOB_TAG_SIZE);
            cb->data = at;
            cb->size = (size_t)sec[i].size;
            tl += (size_t)snprintf(m->targets + tl, sizeof m->targets - tl, "%s%s", tl ? "," : "",
                                   cb->arch);
            break;
        }
        }
    }
    /* The plan first: META's arena refs are checked against its arena size. */
    TRY(parse_plan(m, m->blob + plan->offset, plan->size));
    TRY(parse_meta(m, m->blob + meta->offset, meta->size));
    for (int i = 0; i < m->nsteps; i++) {
        StepCheck c = {m, &m->steps[i], i};
        TRY(check_step(&c));
    }
    return BNN_STATUS_OK;
}
