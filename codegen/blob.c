/* blob.c: the model.bin writer (see blob.h and docs/blob-format.md).
 * Everything is serialized field by field, little-endian, so the file does not depend on
 * the host's struct layout or byte order. */
#include "blob.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---------------------------------------------------------------- steps */

_Static_assert(sizeof(BlobBconvParams) <= sizeof(int64_t) * BLOB_MAX_PARAMS, "bconv params");
_Static_assert(sizeof(BlobConv2dParams) <= sizeof(int64_t) * BLOB_MAX_PARAMS, "conv params");

static void encode_step(const BlobStep *s, unsigned char *p) {
    memset(p, 0, BLOB_STEP_SIZE);
    blob_put_u32(p, s->kind);
    blob_put_u32(p + 4, s->epilogue);
    blob_put_u32(p + 8, s->flags);
    blob_put_u32(p + 12, s->alt_batch);
    memcpy(p + BLOB_STEP_KERNEL_AT, s->kernel, BLOB_KERNEL_NAME_SIZE);
    for (int d = 0; d < 3; d++) {
        blob_put_u32(p + BLOB_STEP_GRID_AT + 12 * d, s->grid[d].base);
        blob_put_u32(p + BLOB_STEP_GRID_AT + 12 * d + 4, s->grid[d].per_batch);
        blob_put_u32(p + BLOB_STEP_GRID_AT + 12 * d + 8, s->grid[d].div);
        blob_put_u32(p + BLOB_STEP_BLOCK_AT + 4 * d, s->block[d]);
    }
    blob_put_u32(p + BLOB_STEP_SMEM_AT, s->smem);
    blob_put_u32(p + BLOB_STEP_NARGS_AT, s->nargs);
    for (int i = 0; i < BLOB_MAX_ARGS; i++) {
        unsigned char *a = p + BLOB_STEP_ARGS_AT + 16 * i;
        blob_put_u32(a, s->args[i].kind);
        blob_put_u32(a + 4, s->args[i].slot);
        blob_put_u64(a + 8, (uint64_t)s->args[i].value);
    }
    for (int i = 0; i < BLOB_MAX_SLOTS; i++) {
        unsigned char *r = p + BLOB_STEP_SLOTS_AT + 24 * i;
        blob_put_u32(r, s->slot[i].space);
        blob_put_u32(r + 4, s->slot[i].reserved);
        blob_put_u64(r + 8, s->slot[i].offset);
        blob_put_u64(r + 16, s->slot[i].bytes);
    }
    for (int i = 0; i < BLOB_MAX_PARAMS; i++)
        blob_put_u64(p + BLOB_STEP_PARAMS_AT + 8 * i, (uint64_t)s->params[i]);
}

/* ---------------------------------------------------------------- the writer */

typedef struct BlobIo {
    char *name;
    BlobDType dtype;
    int rank;
    int64_t dims[BLOB_MAX_RANK];
    BlobRef where;
} BlobIo;

typedef struct BlobCubin {
    char arch[BLOB_TAG_SIZE];
    void *data;
    size_t n;
} BlobCubin;

struct BlobWriter {
    Buf weights;
    BlobIo *io; /* inputs and outputs, in the order added */
    bool *io_is_input;
    int nio, cap_io;
    BlobStep *steps;
    int nsteps, cap_steps;
    BlobCubin *cubins;
    int ncubins, cap_cubins;
    uint64_t arena;
    char misuse[256]; /* the first misuse seen, reported by blob_finish */
};

static void note_misuse(BlobWriter *w, const char *msg) {
    if (!w->misuse[0])
        snprintf(w->misuse, sizeof w->misuse, "%s", msg);
}

BlobWriter *blob_new(void) { return xcalloc(1, sizeof(BlobWriter)); }

void blob_free(BlobWriter *w) {
    if (!w)
        return;
    buf_free(&w->weights);
    for (int i = 0; i < w->nio; i++)
        free(w->io[i].name);
    free(w->io);
    free(w->io_is_input);
    free(w->steps);
    for (int i = 0; i < w->ncubins; i++)
        free(w->cubins[i].data);
    free(w->cubins);
    free(w);
}

static void pad_to(Buf *b, size_t align) {
    static const char zeros[BLOB_ALIGN];
    while (b->len % align)
        buf_put(b, zeros, align - b->len % align);
}

BlobRef blob_add_weights(BlobWriter *w, const void *data, size_t n) {
    pad_to(&w->weights, BLOB_ALIGN);
    BlobRef r = {BLOB_SPACE_WEIGHTS, 0, w->weights.len, n};
    if (n)
        buf_put(&w->weights, data, n);
    return r;
}

const void *blob_weights_data(const BlobWriter *w, BlobRef r) {
    if (r.space != BLOB_SPACE_WEIGHTS || r.offset + r.bytes > w->weights.len) { /* a lowering bug */
        fprintf(stderr, "bnncc: internal error: blob_weights_data of a reference outside the weights\n");
        abort();
    }
    return w->weights.data + r.offset;
}

BlobRef blob_arena_ref(uint64_t offset, uint64_t item_bytes) {
    BlobRef r = {BLOB_SPACE_ARENA, 0, offset, item_bytes};
    return r;
}

void blob_set_arena(BlobWriter *w, uint64_t item_bytes) { w->arena = item_bytes; }

static void add_io(BlobWriter *w, bool input, const char *name, BlobDType dtype, int rank,
                   const int64_t *dims, BlobRef where) {
    if (rank < 1 || rank > BLOB_MAX_RANK) {
        note_misuse(w, "an input or output has a rank outside 1..8");
        rank = 1;
    }
    if (w->nio == w->cap_io) {
        w->cap_io = w->cap_io ? 2 * w->cap_io : 8;
        w->io = xrealloc(w->io, (size_t)w->cap_io * sizeof *w->io);
        w->io_is_input = xrealloc(w->io_is_input, (size_t)w->cap_io * sizeof *w->io_is_input);
    }
    BlobIo *io = &w->io[w->nio];
    w->io_is_input[w->nio++] = input;
    memset(io, 0, sizeof *io);
    io->name = xstrdup(name ? name : "");
    io->dtype = dtype;
    io->rank = rank;
    memcpy(io->dims, dims, (size_t)rank * sizeof *dims);
    io->where = where;
}

void blob_add_input(BlobWriter *w, const char *name, BlobDType dtype, int rank,
                    const int64_t *dims, BlobRef where) {
    add_io(w, true, name, dtype, rank, dims, where);
}

void blob_add_output(BlobWriter *w, const char *name, BlobDType dtype, int rank,
                     const int64_t *dims, BlobRef where) {
    add_io(w, false, name, dtype, rank, dims, where);
}

BlobStep *blob_add_step(BlobWriter *w, BlobStepKind kind) {
    if (w->nsteps == w->cap_steps) {
        w->cap_steps = w->cap_steps ? 2 * w->cap_steps : 16;
        w->steps = xrealloc(w->steps, (size_t)w->cap_steps * sizeof *w->steps);
    }
    BlobStep *s = &w->steps[w->nsteps++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    return s;
}

BlobStep *blob_step_at(BlobWriter *w, int i) { return i >= 0 && i < w->nsteps ? &w->steps[i] : NULL; }

void blob_step_set_kernel(BlobStep *s, const char *name, const BlobGridDim grid[3],
                          const uint32_t block[3], uint32_t smem) {
    memset(s->kernel, 0, sizeof s->kernel);
    /* A name that does not fit is cut one byte short, so blob_finish can see it. */
    size_t n = strlen(name);
    memcpy(s->kernel, name, n < sizeof s->kernel ? n : sizeof s->kernel);
    for (int d = 0; d < 3; d++) {
        s->grid[d] = grid[d];
        s->block[d] = block[d];
    }
    s->smem = smem;
}

void blob_step_add_arg(BlobStep *s, BlobArgKind kind, uint32_t slot, int64_t value) {
    if (s->nargs < BLOB_MAX_ARGS) {
        BlobArg a = {kind, slot, value};
        s->args[s->nargs] = a;
    }
    s->nargs++; /* more than BLOB_MAX_ARGS is reported by blob_finish */
}

void blob_add_cubin(BlobWriter *w, const char *arch, const void *data, size_t n) {
    if (strlen(arch) >= BLOB_TAG_SIZE) {
        note_misuse(w, "a CUBIN architecture tag is longer than 15 characters");
        return;
    }
    if (w->ncubins == w->cap_cubins) {
        w->cap_cubins = w->cap_cubins ? 2 * w->cap_cubins : 4;
        w->cubins = xrealloc(w->cubins, (size_t)w->cap_cubins * sizeof *w->cubins);
    }
    BlobCubin *c = &w->cubins[w->ncubins++];
    memset(c, 0, sizeof *c);
    memcpy(c->arch, arch, strlen(arch));
    c->data = xmalloc(n);
    memcpy(c->data, data, n);
    c->n = n;
}

static bool ref_in_arena(const BlobWriter *w, BlobRef r) {
    return r.space != BLOB_SPACE_ARENA ||
           (r.offset <= w->arena && r.bytes <= w->arena - r.offset);
}

static int check_writer(const BlobWriter *w, char *err, size_t len) {
    if (w->misuse[0]) {
        snprintf(err, len, "%s", w->misuse);
        return -1;
    }
    int nout = 0;
    for (int i = 0; i < w->nio; i++) {
        nout += !w->io_is_input[i];
        if (!ref_in_arena(w, w->io[i].where) || w->io[i].where.space != BLOB_SPACE_ARENA) {
            snprintf(err, len, "graph %s '%s' is not inside the arena",
                     w->io_is_input[i] ? "input" : "output", w->io[i].name);
            return -1;
        }
    }
    if (nout == 0) {
        snprintf(err, len, "the model has no outputs");
        return -1;
    }
    for (int i = 0; i < w->nsteps; i++) {
        const BlobStep *s = &w->steps[i];
        if (s->kernel[BLOB_KERNEL_NAME_SIZE - 1]) {
            snprintf(err, len, "step %d: kernel name longer than %d characters", i,
                     BLOB_KERNEL_NAME_SIZE - 1);
            return -1;
        }
        if (s->nargs > BLOB_MAX_ARGS) {
            snprintf(err, len, "step %d: %u kernel arguments, at most %d", i, s->nargs,
                     BLOB_MAX_ARGS);
            return -1;
        }
        for (int j = 0; j < BLOB_MAX_SLOTS; j++)
            if (!ref_in_arena(w, s->slot[j])) {
                snprintf(err, len, "step %d (%s): slot %d is outside the arena of %llu bytes",
                         i, blob_step_name(s->kind), j, (unsigned long long)w->arena);
                return -1;
            }
    }
    return 0;
}

/* Section payloads, built before the table so their sizes are known. */
static void build_meta(const BlobWriter *w, Buf *b) {
    unsigned char rec[BLOB_META_RECORD_SIZE];
    unsigned char hdr[BLOB_META_HEADER_SIZE] = {0};
    int nin = 0;
    for (int i = 0; i < w->nio; i++)
        nin += w->io_is_input[i];
    size_t pool_at = BLOB_META_HEADER_SIZE + (size_t)w->nio * BLOB_META_RECORD_SIZE;
    size_t pool_size = 0;
    for (int i = 0; i < w->nio; i++)
        pool_size += strlen(w->io[i].name) + 1;
    blob_put_u32(hdr, (uint32_t)nin);
    blob_put_u32(hdr + 4, (uint32_t)(w->nio - nin));
    blob_put_u32(hdr + 8, (uint32_t)pool_at);
    blob_put_u32(hdr + 12, (uint32_t)pool_size);
    buf_put(b, hdr, sizeof hdr);
    /* Inputs first, then outputs, each in the order added. */
    size_t name_at = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < w->nio; i++) {
            if (w->io_is_input[i] != (pass == 0))
                continue;
            const BlobIo *io = &w->io[i];
            memset(rec, 0, sizeof rec);
            size_t n = strlen(io->name);
            blob_put_u32(rec, (uint32_t)name_at);
            blob_put_u32(rec + 4, (uint32_t)n);
            blob_put_u32(rec + 8, io->dtype);
            blob_put_u32(rec + 12, (uint32_t)io->rank);
            blob_put_u32(rec + 16, 0); /* the batch axis */
            for (int d = 0; d < io->rank; d++)
                blob_put_u64(rec + 24 + 8 * d, (uint64_t)io->dims[d]);
            blob_put_u64(rec + 88, io->where.offset);
            blob_put_u64(rec + 96, io->where.bytes);
            buf_put(b, rec, sizeof rec);
            name_at += n + 1;
        }
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < w->nio; i++)
            if (w->io_is_input[i] == (pass == 0))
                buf_put(b, w->io[i].name, strlen(w->io[i].name) + 1);
}

static void build_plan(const BlobWriter *w, Buf *b) {
    unsigned char hdr[BLOB_PLAN_HEADER_SIZE] = {0};
    blob_put_u32(hdr, (uint32_t)w->nsteps);
    blob_put_u32(hdr + 4, BLOB_STEP_SIZE);
    blob_put_u64(hdr + 8, w->arena);
    buf_put(b, hdr, sizeof hdr);
    unsigned char rec[BLOB_STEP_SIZE];
    for (int i = 0; i < w->nsteps; i++) {
        encode_step(&w->steps[i], rec);
        buf_put(b, rec, sizeof rec);
    }
}

int blob_finish(BlobWriter *w, Buf *out, char *err, size_t err_len) {
    if (check_writer(w, err, err_len) != 0)
        return -1;
    Buf meta = {0}, plan = {0};
    build_meta(w, &meta);
    build_plan(w, &plan);

    int nsec = 3 + w->ncubins;
    struct {
        uint32_t kind;
        const char *tag;
        const void *data;
        size_t n;
    } sec[3 + 64];
    if (nsec > (int)BLOB_MAX_SECTIONS) {
        snprintf(err, err_len, "%d CUBINs, at most %u", w->ncubins, BLOB_MAX_SECTIONS - 3);
        buf_free(&meta);
        buf_free(&plan);
        return -1;
    }
    sec[0].kind = BLOB_SECTION_META, sec[0].tag = "", sec[0].data = meta.data, sec[0].n = meta.len;
    sec[1].kind = BLOB_SECTION_PLAN, sec[1].tag = "", sec[1].data = plan.data, sec[1].n = plan.len;
    sec[2].kind = BLOB_SECTION_WEIGHTS, sec[2].tag = "", sec[2].data = w->weights.data,
    sec[2].n = w->weights.len;
    for (int i = 0; i < w->ncubins; i++) {
        sec[3 + i].kind = BLOB_SECTION_CUBIN;
        sec[3 + i].tag = w->cubins[i].arch;
        sec[3 + i].data = w->cubins[i].data;
        sec[3 + i].n = w->cubins[i].n;
    }

    size_t base = out->len; /* the blob may be appended to a non-empty buffer */
    unsigned char hdr[BLOB_HEADER_SIZE] = {0};
    size_t table_size = (size_t)nsec * BLOB_SECTION_ENTRY_SIZE;
    unsigned char *table = xcalloc(1, table_size);
    size_t at = BLOB_HEADER_SIZE + table_size;
    at = (at + BLOB_ALIGN - 1) / BLOB_ALIGN * BLOB_ALIGN;
    for (int i = 0; i < nsec; i++) {
        unsigned char *e = table + (size_t)i * BLOB_SECTION_ENTRY_SIZE;
        blob_put_u32(e, sec[i].kind);
        memcpy(e + 8, sec[i].tag, strlen(sec[i].tag));
        blob_put_u64(e + 24, at);
        blob_put_u64(e + 32, sec[i].n);
        blob_put_u64(e + 40, blob_fnv1a(BLOB_FNV_INIT, sec[i].data, sec[i].n));
        at += (sec[i].n + BLOB_ALIGN - 1) / BLOB_ALIGN * BLOB_ALIGN;
    }
    memcpy(hdr, BLOB_MAGIC, 8);
    blob_put_u32(hdr + 8, BLOB_VERSION);
    blob_put_u32(hdr + 12, BLOB_HEADER_SIZE);
    blob_put_u32(hdr + 16, (uint32_t)nsec);
    blob_put_u64(hdr + 24, at); /* the file size */
    uint64_t h = blob_fnv1a(BLOB_FNV_INIT, hdr, 32);
    blob_put_u64(hdr + 32, blob_fnv1a(h, table, table_size));

    buf_put(out, hdr, sizeof hdr);
    buf_put(out, table, table_size);
    for (int i = 0; i < nsec; i++) {
        while ((out->len - base) % BLOB_ALIGN)
            buf_put(out, "", 1);
        if (sec[i].n)
            buf_put(out, sec[i].data, sec[i].n);
    }
    while ((out->len - base) % BLOB_ALIGN)
        buf_put(out, "", 1);
    free(table);
    buf_free(&meta);
    buf_free(&plan);
    return 0;
}

int blob_write_file(BlobWriter *w, const char *path, char *err, size_t err_len) {
    Buf b = {0};
    if (blob_finish(w, &b, err, err_len) != 0) {
        buf_free(&b);
        return -1;
    }
    int rc = write_file_atomic(path, b.data, b.len);
    if (rc != 0)
        snprintf(err, err_len, "cannot write '%s'", path);
    buf_free(&b);
    return rc;
}
