/* test_errors.c: damaged blobs and failing allocations. Every truncation, a bad magic, a
 * newer version, a damaged byte in each section, fields out of range (re-sealed so that the
 * checksums pass and the semantic checks are what must catch them), random damage; and the
 * allocation hook failing the Nth allocation of load + session + run for every N. Each gives
 * the right status and message, never a crash, and nothing leaks (ASan/LSan in CI; the hook
 * counts live allocations here). */
#include <stdlib.h>
#include <string.h>

#include "bnnrt.h"
#include "check.h"
#include "testmodels.h"

static bnn_status load_status(const void *data, size_t len) {
    bnn_model *m = NULL;
    bnn_status st = bnn_model_load_memory(data, len, &m);
    CHECK((st == BNN_STATUS_OK) == (m != NULL));
    bnn_model_free(m);
    return st;
}

/* Recompute every section checksum and the header checksum after a deliberate edit. */
static void reseal(unsigned char *b, size_t len) {
    uint32_t n = blob_get_u32(b + 16);
    for (uint32_t i = 0; i < n && 64 + (i + 1) * 48 <= len; i++) {
        unsigned char *e = b + 64 + i * 48;
        uint64_t off = blob_get_u64(e + 24), size = blob_get_u64(e + 32);
        if (off <= len && size <= len - off)
            blob_put_u64(e + 40, blob_fnv1a(BLOB_FNV_INIT, b + off, (size_t)size));
    }
    if (64 + (size_t)n * 48 <= len) {
        uint64_t h = blob_fnv1a(BLOB_FNV_INIT, b, 32);
        blob_put_u64(b + 32, blob_fnv1a(h, b + 64, (size_t)n * 48));
    }
}

static unsigned char *section(unsigned char *b, uint32_t kind, uint64_t *size) {
    uint32_t n = blob_get_u32(b + 16);
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *e = b + 64 + i * 48;
        if (blob_get_u32(e) == kind) {
            if (size)
                *size = blob_get_u64(e + 32);
            return b + blob_get_u64(e + 24);
        }
    }
    return NULL;
}

static unsigned char *step_at(unsigned char *b, int i) {
    return section(b, BLOB_SECTION_PLAN, NULL) + BLOB_PLAN_HEADER_SIZE + (size_t)i * BLOB_STEP_SIZE;
}

static unsigned char *slot_at(unsigned char *b, int step, int slot) {
    return step_at(b, step) + BLOB_STEP_SLOTS_AT + 24 * slot;
}

static void add_fake_cubins(BlobWriter *w, BlobStep *s, int index, void *user) {
    (void)s, (void)user;
    if (index == 0) {
        blob_add_cubin(w, "sm_80", "not a cubin", 11);
        blob_add_cubin(w, "sm_90a", "not a cubin either", 18);
    }
}

/* The MLP with two fake CUBIN sections (sections 3 and 4), so they are damaged too. */
static void build_blob(Buf *b) {
    TestMlp ref;
    build_mlp(9, b, &ref, add_fake_cubins, NULL);
    free_mlp(&ref);
}

typedef void (*Edit)(unsigned char *b, size_t *len);

static void expect(const Buf *orig, Edit edit, bool do_reseal, bnn_status want, const char *needle,
                   const char *what) {
    size_t len = orig->len;
    unsigned char *b = malloc(len + 256);
    memcpy(b, orig->data, len);
    memset(b + len, 0, 256);
    edit(b, &len);
    if (do_reseal)
        reseal(b, len);
    bnn_status st = load_status(b, len);
    CHECK_MSG(st == want, "%s: got %s (%s), expected %s", what, bnn_status_str(st), bnn_last_error(),
              bnn_status_str(want));
    CHECK_MSG(strstr(bnn_last_error(), needle) != NULL, "%s: message '%s' lacks '%s'", what,
              bnn_last_error(), needle);
    free(b);
}

/* ---------------------------------------------------------------- edits */

static void e_magic(unsigned char *b, size_t *len) { (void)len, b[3] = 'X'; }
static void e_version(unsigned char *b, size_t *len) { (void)len, blob_put_u32(b + 8, 2); }
static void e_version0(unsigned char *b, size_t *len) { (void)len, blob_put_u32(b + 8, 0); }
static void e_trailing(unsigned char *b, size_t *len) { (void)b, *len += 64; }
static void e_file_size(unsigned char *b, size_t *len) { blob_put_u64(b + 24, *len + 64); }
static void e_nsec(unsigned char *b, size_t *len) { (void)len, blob_put_u32(b + 16, 1); }
static void e_nsec_big(unsigned char *b, size_t *len) { (void)len, blob_put_u32(b + 16, 1000); }
static void e_table_byte(unsigned char *b, size_t *len) { (void)len, b[64 + 48 + 30] ^= 1; }
static void e_sec_offset(unsigned char *b, size_t *len) { blob_put_u64(b + 64 + 24, *len + 64); }
static void e_sec_size(unsigned char *b, size_t *len) { blob_put_u64(b + 64 + 32, *len); }
static void e_sec_misaligned(unsigned char *b, size_t *len) {
    (void)len;
    blob_put_u64(b + 64 + 24, blob_get_u64(b + 64 + 24) + 8);
}
static void e_sec_overlap(unsigned char *b, size_t *len) {
    (void)len;
    blob_put_u64(b + 64 + 48 + 24, blob_get_u64(b + 64 + 24)); /* PLAN where META is */
}
static void e_sec_kind(unsigned char *b, size_t *len) { (void)len, blob_put_u32(b + 64, 77); }
static void e_two_meta(unsigned char *b, size_t *len) { (void)len, blob_put_u32(b + 64 + 48, 1); }
static void e_tag(unsigned char *b, size_t *len) { (void)len, memcpy(b + 64 + 8, "sm_90a", 6); }
static void e_cubin_dup(unsigned char *b, size_t *len) {
    (void)len, memcpy(b + 64 + 4 * 48 + 8, "sm_80\0\0", 7);
}
static void e_cubin_tag(unsigned char *b, size_t *len) {
    (void)len, memcpy(b + 64 + 3 * 48 + 8, "sm_x", 5);
}
static void e_meta_count(unsigned char *b, size_t *len) {
    (void)len, blob_put_u32(section(b, BLOB_SECTION_META, NULL), 5);
}
static void e_meta_noout(unsigned char *b, size_t *len) {
    (void)len, blob_put_u32(section(b, BLOB_SECTION_META, NULL) + 4, 0);
}
static void e_meta_name(unsigned char *b, size_t *len) {
    (void)len, blob_put_u32(section(b, BLOB_SECTION_META, NULL) + 16 + 4, 100000);
}
static void e_meta_dim(unsigned char *b, size_t *len) {
    (void)len, blob_put_u64(section(b, BLOB_SECTION_META, NULL) + 16 + 24 + 8, 0);
}
static void e_meta_batch(unsigned char *b, size_t *len) {
    (void)len, blob_put_u64(section(b, BLOB_SECTION_META, NULL) + 16 + 24, 5);
}
static void e_meta_dtype(unsigned char *b, size_t *len) {
    (void)len, blob_put_u32(section(b, BLOB_SECTION_META, NULL) + 16 + 8, 42);
}
static void e_meta_bytes(unsigned char *b, size_t *len) {
    (void)len, blob_put_u64(section(b, BLOB_SECTION_META, NULL) + 16 + 96, 404);
}
static void e_arena_small(unsigned char *b, size_t *len) {
    (void)len, blob_put_u64(section(b, BLOB_SECTION_PLAN, NULL) + 8, 64);
}
static void e_arena_huge(unsigned char *b, size_t *len) {
    (void)len, blob_put_u64(section(b, BLOB_SECTION_PLAN, NULL) + 8, ~0ull << 6);
}
static void e_nsteps(unsigned char *b, size_t *len) {
    (void)len, blob_put_u32(section(b, BLOB_SECTION_PLAN, NULL), 1000);
}
static void e_step_size(unsigned char *b, size_t *len) {
    (void)len, blob_put_u32(section(b, BLOB_SECTION_PLAN, NULL) + 4, 700);
}
static void e_step_kind(unsigned char *b, size_t *len) { (void)len, blob_put_u32(step_at(b, 0), 99); }
static void e_step_epi(unsigned char *b, size_t *len) { (void)len, blob_put_u32(step_at(b, 3) + 4, 1); }
static void e_step_epi_bad(unsigned char *b, size_t *len) { (void)len, blob_put_u32(step_at(b, 1) + 4, 9); }
static void e_step_flags(unsigned char *b, size_t *len) { (void)len, blob_put_u32(step_at(b, 1) + 8, 0x12); }
/* The first flag bit past BLOB_STEP_ONE_WAVE has no meaning yet. */
static void e_step_flags_next(unsigned char *b, size_t *len) {
    (void)len, blob_put_u32(step_at(b, 1) + 8, BLOB_STEP_ONE_WAVE << 1);
}
/* Steps beside the main line (BLOB_STEP_BESIDE): step 1 beside 5 steps before it (there is one);
 * step 2 beside step 1, whose output it reads. */
static void e_step_beside_far(unsigned char *b, size_t *len) {
    (void)len, blob_put_u32(step_at(b, 1) + 8, BLOB_STEP_BESIDE | 5u << BLOB_STEP_BESIDE_SHIFT);
}
static void e_step_beside_reads(unsigned char *b, size_t *len) {
    (void)len, blob_put_u32(step_at(b, 2) + 8, BLOB_STEP_BESIDE | 1u << BLOB_STEP_BESIDE_SHIFT);
    memcpy(step_at(b, 2) + BLOB_STEP_KERNEL_AT, "k2", 3); /* only GPU kernels run beside */
}
/* A batch alternative (BLOB_STEP_BATCH_ALT) that is not another kernel for the step before it:
 * step 1 (bgemm) follows a step of another kind; or alt_batch on a plain step. */
static void e_step_alt_kind(unsigned char *b, size_t *len) {
    (void)len, blob_put_u32(step_at(b, 1) + 8, 4), blob_put_u32(step_at(b, 1) + 12, 16);
}
static void e_step_alt_batch(unsigned char *b, size_t *len) { (void)len, blob_put_u32(step_at(b, 1) + 12, 16); }
/* A tensor-map argument (BLOB_ARG_TMAP_PLANES) on a step that is not sm_90a-only. */
static void e_arg_tmap(unsigned char *b, size_t *len) {
    (void)len, blob_put_u32(step_at(b, 1) + BLOB_STEP_NARGS_AT, 1);
    blob_put_u32(step_at(b, 1) + BLOB_STEP_ARGS_AT, BLOB_ARG_TMAP_PLANES);
}
/* An sm_90a-only kernel (BLOB_STEP_SM90A) on a main step: other GPUs would have nothing to run. */
static void e_step_sm90a_main(unsigned char *b, size_t *len) {
    (void)len, blob_put_u32(step_at(b, 1) + 8, BLOB_STEP_SM90A);
}
static void e_step_k(unsigned char *b, size_t *len) {
    (void)len, blob_put_u64(step_at(b, 1) + BLOB_STEP_PARAMS_AT + 16, 10000);
}
static void e_step_neg(unsigned char *b, size_t *len) {
    (void)len, blob_put_u64(step_at(b, 1) + BLOB_STEP_PARAMS_AT + 8, (uint64_t)-3);
}
static void e_slot_out_of_weights(unsigned char *b, size_t *len) {
    uint64_t wsize = 0;
    section(b, BLOB_SECTION_WEIGHTS, &wsize);
    (void)len, blob_put_u64(slot_at(b, 1, BLOB_SLOT_W) + 8, wsize + 64);
}
static void e_slot_huge(unsigned char *b, size_t *len) {
    (void)len, blob_put_u64(slot_at(b, 1, BLOB_SLOT_W) + 8, ~0ull << 6);
}
static void e_slot_misaligned(unsigned char *b, size_t *len) {
    (void)len, blob_put_u64(slot_at(b, 2, BLOB_SLOT_IN) + 8, 4);
}
static void e_slot_bytes(unsigned char *b, size_t *len) {
    (void)len, blob_put_u64(slot_at(b, 2, BLOB_SLOT_OUT) + 16, 44);
}
static void e_slot_space(unsigned char *b, size_t *len) {
    (void)len, blob_put_u32(slot_at(b, 1, BLOB_SLOT_P1), 9);
}
static void e_slot_missing(unsigned char *b, size_t *len) {
    (void)len, memset(slot_at(b, 1, BLOB_SLOT_P1), 0, 24);
}
static void e_slot_wrong_space(unsigned char *b, size_t *len) {
    (void)len, blob_put_u32(slot_at(b, 1, BLOB_SLOT_W), BLOB_SPACE_ARENA);
}
static void e_slot_extra(unsigned char *b, size_t *len) {
    (void)len, memcpy(slot_at(b, 3, BLOB_SLOT_W), slot_at(b, 1, BLOB_SLOT_W), 24);
}
static void e_overlap(unsigned char *b, size_t *len) {
    /* bgemm 2 writes its logits over its own input. */
    (void)len, memcpy(slot_at(b, 2, BLOB_SLOT_OUT) + 8, slot_at(b, 2, BLOB_SLOT_IN) + 8, 8);
}
static void e_kernel_name(unsigned char *b, size_t *len) {
    (void)len, memcpy(step_at(b, 1) + BLOB_STEP_KERNEL_AT, "bad/name", 8);
}
static void e_kernel_unterminated(unsigned char *b, size_t *len) {
    (void)len, memset(step_at(b, 1) + BLOB_STEP_KERNEL_AT, 'k', BLOB_KERNEL_NAME_SIZE);
}
static void e_nargs(unsigned char *b, size_t *len) {
    (void)len, blob_put_u32(step_at(b, 1) + BLOB_STEP_NARGS_AT, 9);
}
static void e_arg_slot(unsigned char *b, size_t *len) {
    (void)len;
    unsigned char *s = step_at(b, 1);
    blob_put_u32(s + BLOB_STEP_NARGS_AT, 1);
    blob_put_u32(s + BLOB_STEP_ARGS_AT, BLOB_ARG_PTR);
    blob_put_u32(s + BLOB_STEP_ARGS_AT + 4, BLOB_SLOT_X0); /* an empty slot */
}
static void e_grid(unsigned char *b, size_t *len) {
    (void)len;
    unsigned char *s = step_at(b, 1);
    memcpy(s + BLOB_STEP_KERNEL_AT, "k", 1);
    blob_put_u32(s + BLOB_STEP_BLOCK_AT, 1), blob_put_u32(s + BLOB_STEP_BLOCK_AT + 4, 1);
    blob_put_u32(s + BLOB_STEP_BLOCK_AT + 8, 1); /* grid divisors stay 0 */
}
static void e_block(unsigned char *b, size_t *len) {
    e_grid(b, len);
    unsigned char *s = step_at(b, 1);
    for (int d = 0; d < 3; d++)
        blob_put_u32(s + BLOB_STEP_GRID_AT + 12 * d + 8, 1);
    blob_put_u32(s + BLOB_STEP_BLOCK_AT, 2048);
}

static void test_edits(const Buf *b) {
    static const struct {
        Edit edit;
        bool reseal;
        bnn_status want;
        const char *needle, *what;
    } cases[] = {
        {e_magic, false, BNN_STATUS_BAD_BLOB, "bad magic", "bad magic"},
        {e_version, false, BNN_STATUS_VERSION, "format version 2 is newer", "newer version"},
        {e_version0, true, BNN_STATUS_BAD_BLOB, "version 0", "version 0"},
        {e_trailing, false, BNN_STATUS_BAD_BLOB, "trailing data", "trailing bytes"},
        {e_file_size, true, BNN_STATUS_BAD_BLOB, "truncated", "file size too large"},
        {e_nsec, true, BNN_STATUS_BAD_BLOB, "sections", "one section"},
        {e_nsec_big, false, BNN_STATUS_BAD_BLOB, "sections", "1000 sections"},
        {e_table_byte, false, BNN_STATUS_CHECKSUM, "section table is damaged", "table byte"},
        {e_sec_offset, true, BNN_STATUS_BAD_BLOB, "outside the file", "section offset"},
        {e_sec_size, true, BNN_STATUS_BAD_BLOB, "outside the file", "section size"},
        {e_sec_misaligned, true, BNN_STATUS_BAD_BLOB, "misaligned", "section misaligned"},
        {e_sec_overlap, true, BNN_STATUS_BAD_BLOB, "overlap", "sections overlap"},
        {e_sec_kind, true, BNN_STATUS_BAD_BLOB, "unknown kind", "section kind"},
        {e_two_meta, true, BNN_STATUS_BAD_BLOB, "one of each", "two META"},
        {e_tag, true, BNN_STATUS_BAD_BLOB, "bad tag", "tag on META"},
        {e_cubin_dup, true, BNN_STATUS_BAD_BLOB, "two CUBIN sections for sm_80", "dup arch"},
        {e_cubin_tag, true, BNN_STATUS_BAD_BLOB, "bad tag 'sm_x'", "bad arch tag"},
        {e_meta_count, true, BNN_STATUS_BAD_BLOB, "fill it exactly", "META counts"},
        {e_meta_noout, true, BNN_STATUS_BAD_BLOB, "outputs", "no outputs"},
        {e_meta_name, true, BNN_STATUS_BAD_BLOB, "bad name", "META name"},
        {e_meta_dim, true, BNN_STATUS_BAD_BLOB, "bad dimension 1", "META dim 0"},
        {e_meta_batch, true, BNN_STATUS_BAD_BLOB, "bad dimension 0", "META batch dim"},
        {e_meta_dtype, true, BNN_STATUS_BAD_BLOB, "bad dtype 42", "META dtype"},
        {e_meta_bytes, true, BNN_STATUS_BAD_BLOB, "its shape needs 400", "META item bytes"},
        {e_arena_small, true, BNN_STATUS_BAD_BLOB, "outside the arena", "arena too small"},
        {e_arena_huge, true, BNN_STATUS_BAD_BLOB, "too large", "arena huge"},
        {e_nsteps, true, BNN_STATUS_BAD_BLOB, "do not fill", "step count"},
        {e_step_size, true, BNN_STATUS_BAD_BLOB, "steps of 700 bytes", "step size"},
        {e_step_kind, true, BNN_STATUS_BAD_BLOB, "unknown step kind 99", "step kind"},
        {e_step_epi, true, BNN_STATUS_BAD_BLOB, "epilogue on a step", "epilogue on argmax"},
        {e_step_epi_bad, true, BNN_STATUS_BAD_BLOB, "unknown epilogue 9", "bad epilogue"},
        {e_step_flags, true, BNN_STATUS_BAD_BLOB, "unknown flags", "step flags"},
        {e_step_flags_next, true, BNN_STATUS_BAD_BLOB, "unknown flags 0x100", "the flag after ONE_WAVE"},
        {e_step_beside_far, true, BNN_STATUS_BAD_BLOB, "a step beside the 5 before it", "beside too far"},
        {e_step_beside_reads, true, BNN_STATUS_BAD_BLOB, "it runs beside step 1, but its slot in overlaps", "beside a writer"},
        {e_step_alt_kind, true, BNN_STATUS_BAD_BLOB, "a batch alternative (from batch 16) that is not", "alt step"},
        {e_step_alt_batch, true, BNN_STATUS_BAD_BLOB, "alt_batch 16 on a step that is no batch", "alt_batch"},
        {e_arg_tmap, true, BNN_STATUS_BAD_BLOB, "kernel argument 0 is malformed", "tmap arg"},
        {e_step_sm90a_main, true, BNN_STATUS_BAD_BLOB, "an sm_90a-only kernel on a step that is no batch", "sm90a main"},
        {e_step_k, true, BNN_STATUS_BAD_BLOB, "step 1 (bgemm): bad shape", "k too large"},
        {e_step_neg, true, BNN_STATUS_BAD_BLOB, "bad shape", "negative n"},
        {e_slot_out_of_weights, true, BNN_STATUS_BAD_BLOB, "outside the weights", "weights ref"},
        {e_slot_huge, true, BNN_STATUS_BAD_BLOB, "outside the weights", "weights ref overflow"},
        {e_slot_misaligned, true, BNN_STATUS_BAD_BLOB, "misaligned", "misaligned slot"},
        {e_slot_bytes, true, BNN_STATUS_BAD_BLOB, "has 44 bytes, the step's shape needs 40", "slot size"},
        {e_slot_space, true, BNN_STATUS_BAD_BLOB, "slot p1 is malformed", "slot space"},
        {e_slot_missing, true, BNN_STATUS_BAD_BLOB, "slot p1 must be in the weights", "no dir"},
        {e_slot_wrong_space, true, BNN_STATUS_BAD_BLOB, "slot w (offset 0, 1120 bytes) lies outside the arena", "w in arena"},
        {e_slot_extra, true, BNN_STATUS_BAD_BLOB, "slot w is used", "argmax with weights"},
        {e_overlap, true, BNN_STATUS_BAD_BLOB, "overlaps slot in", "output over input"},
        {e_kernel_name, true, BNN_STATUS_BAD_BLOB, "bad kernel name", "kernel name chars"},
        {e_kernel_unterminated, true, BNN_STATUS_BAD_BLOB, "bad kernel name", "kernel name NUL"},
        {e_nargs, true, BNN_STATUS_BAD_BLOB, "9 kernel arguments", "nargs"},
        {e_arg_slot, true, BNN_STATUS_BAD_BLOB, "argument 0 is malformed", "arg on empty slot"},
        {e_grid, true, BNN_STATUS_BAD_BLOB, "zero grid divisor", "grid divisor"},
        {e_block, true, BNN_STATUS_BAD_BLOB, "threads per block", "block too large"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        expect(b, cases[i].edit, cases[i].reseal, cases[i].want, cases[i].needle, cases[i].what);
}

static void test_truncation_and_checksums(const Buf *b) {
    unsigned char *copy = malloc(b->len);
    memcpy(copy, b->data, b->len);
    for (size_t len = 0; len < b->len; len++) {
        bnn_status st = load_status(copy, len);
        CHECK_MSG(st == BNN_STATUS_BAD_BLOB, "truncated to %zu: %s", len, bnn_status_str(st));
        CHECK_MSG(strstr(bnn_last_error(), "truncated") != NULL, "truncated to %zu: '%s'", len,
                  bnn_last_error());
    }
    CHECK(load_status(NULL, 0) == BNN_STATUS_BAD_BLOB);
    /* One flipped byte in each section is a checksum error naming it. */
    uint32_t n = blob_get_u32(copy + 16);
    static const char *const names[] = {"", "META", "PLAN", "WEIGHTS", "CUBIN"};
    for (uint32_t i = 0; i < n; i++) {
        const unsigned char *e = copy + 64 + i * 48;
        uint64_t off = blob_get_u64(e + 24), size = blob_get_u64(e + 32);
        uint32_t kind = blob_get_u32(e);
        for (uint64_t at = 0; at < size; at += size / 7 + 1) {
            copy[off + at] ^= 0x10;
            bnn_status st = load_status(copy, b->len);
            CHECK_MSG(st == BNN_STATUS_CHECKSUM, "section %u byte %llu: %s", i,
                      (unsigned long long)at, bnn_status_str(st));
            CHECK_STR_CONTAINS(bnn_last_error(), names[kind]);
            copy[off + at] ^= 0x10;
        }
    }
    CHECK(load_status(copy, b->len) == BNN_STATUS_OK);
    free(copy);
}

/* Random damage, re-sealed so it reaches the semantic checks: loading never crashes, and a
 * blob that loads runs on the CPU without touching memory out of bounds (ASan watches). */
static void test_random_damage(const Buf *b) {
    uint64_t seed = 99;
    unsigned char *copy = malloc(b->len);
    int loaded = 0;
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(copy, b->data, b->len);
        int flips = 1 + (int)(test_rand(&seed) % 4);
        for (int f = 0; f < flips; f++) {
            size_t at = (size_t)(test_rand(&seed) % b->len);
            copy[at] = (unsigned char)test_rand(&seed);
        }
        reseal(copy, b->len);
        bnn_model *m = NULL;
        if (bnn_model_load_memory(copy, b->len, &m) != BNN_STATUS_OK)
            continue;
        loaded++;
        bnn_session *s = NULL;
        if (bnn_session_create(m, BNN_DEVICE_CPU, 2, &s) == BNN_STATUS_OK) {
            float x[2 * MLP_K0] = {0}, logits[20];
            int64_t label[2];
            const void *in[1] = {x};
            void *out[2] = {logits, label};
            bnn_tensor_info info;
            /* Damage may change sizes: run only what the buffers above can hold. */
            bool fits = bnn_model_num_inputs(m) == 1 && bnn_model_num_outputs(m) == 2;
            for (int i = 0; fits && i < 3; i++) {
                bnn_status st = i == 0 ? bnn_model_input_info(m, 0, &info)
                                       : bnn_model_output_info(m, i - 1, &info);
                fits = st == BNN_STATUS_OK && info.item_bytes <= (i == 0   ? sizeof x / 2
                                                                  : i == 1 ? sizeof logits / 2
                                                                           : sizeof label / 2);
            }
            if (fits)
                CHECK(bnn_session_run(s, 2, in, out) == BNN_STATUS_OK);
        }
        bnn_session_free(s);
        bnn_model_free(m);
    }
    CHECK_MSG(loaded > 0, "no damaged blob loaded: the test exercises nothing past the checks");
    free(copy);
}

/* ---------------------------------------------------------------- the allocation hook */

typedef struct Hook {
    long count, fail_at, live;
} Hook;

static void *hook_alloc(void *user, void *ptr, size_t size) {
    Hook *h = user;
    if (size == 0) {
        if (ptr)
            h->live--;
        free(ptr);
        return NULL;
    }
    if (++h->count == h->fail_at)
        return NULL;
    void *p = realloc(ptr, size);
    if (p && !ptr)
        h->live++;
    return p;
}

/* Load, create a CPU session, run; with the Nth allocation failing for every N until a
 * whole pass needs no more: each failure is OUT_OF_MEMORY and nothing stays allocated. */
static void test_alloc_failures(const Buf *b, bool from_file, const char *path) {
    float x[3 * MLP_K0] = {0}, logits[30];
    int64_t label[3];
    const void *in[1] = {x};
    void *out[2] = {logits, label};
    for (long n = 1;; n++) {
        Hook h = {0, n, 0};
        bnn_set_allocator(hook_alloc, &h);
        bnn_model *m = NULL;
        bnn_session *s = NULL;
        bnn_status st = from_file ? bnn_model_load_file(path, &m)
                                  : bnn_model_load_memory(b->data, b->len, &m);
        if (st == BNN_STATUS_OK)
            st = bnn_session_create(m, BNN_DEVICE_CPU, 3, &s);
        if (st == BNN_STATUS_OK)
            st = bnn_session_set_profiling(s, 1); /* the step times */
        if (st == BNN_STATUS_OK)
            st = bnn_session_set_threads(s, 3); /* the thread pool */
        if (st == BNN_STATUS_OK)
            st = bnn_session_run(s, 3, in, out);
        bool failed = h.count >= n;
        CHECK_MSG(failed ? st == BNN_STATUS_OUT_OF_MEMORY : st == BNN_STATUS_OK,
                  "allocation %ld failing: %s (%s)", n, bnn_status_str(st), bnn_last_error());
        if (failed)
            CHECK_STR_CONTAINS(bnn_last_error(), "out of memory");
        bnn_session_free(s);
        bnn_model_free(m);
        CHECK_MSG(h.live == 0, "allocation %ld failing: %ld allocations leaked", n, h.live);
        bnn_set_allocator(NULL, NULL);
        if (!failed) {
            CHECK(n > 3); /* the model, its copy, its steps, the session, ... */
            break;
        }
    }
}

/* The float chain of a bconv (epi_stages, epi_div, epi_residual: params 21..23), on the conv
 * test model: step 1 is a threshold bconv, step 4 an i32 one. */
#define BCONV_EPI_STAGES_AT (BLOB_STEP_PARAMS_AT + 8 * 21)
static void e_chain_on_threshold(unsigned char *b, size_t *len) {
    (void)len, blob_put_u64(step_at(b, 1) + BCONV_EPI_STAGES_AT, 1);
}
static void e_chain_stages(unsigned char *b, size_t *len) {
    (void)len, blob_put_u32(step_at(b, 4) + 4, BLOB_EPI_AFFINE);
    blob_put_u64(step_at(b, 4) + BCONV_EPI_STAGES_AT, BLOB_EPI_MAX_STAGES + 1);
}
static void e_chain_residual(unsigned char *b, size_t *len) {
    (void)len, blob_put_u32(step_at(b, 4) + 4, BLOB_EPI_AFFINE);
    blob_put_u64(step_at(b, 4) + BCONV_EPI_STAGES_AT, 1);
    blob_put_u64(step_at(b, 4) + BCONV_EPI_STAGES_AT + 16, 3);
}
static void e_chain_no_params(unsigned char *b, size_t *len) {
    (void)len, blob_put_u32(step_at(b, 4) + 4, BLOB_EPI_AFFINE);
    blob_put_u64(step_at(b, 4) + BCONV_EPI_STAGES_AT, 2);
}

/* A threshold by a residual of bits (epi_residual = words << 2 on a threshold bconv): its side
 * bits must be 0, its words in range, its residual bits in in2. */
static void e_resthr_side(unsigned char *b, size_t *len) {
    (void)len, blob_put_u64(step_at(b, 1) + BCONV_EPI_STAGES_AT + 16, (64u << 2) | 1u);
}
static void e_resthr_words(unsigned char *b, size_t *len) {
    (void)len, blob_put_u64(step_at(b, 1) + BCONV_EPI_STAGES_AT + 16, 1ull << 40);
}
static void e_resthr_no_in2(unsigned char *b, size_t *len) {
    (void)len, blob_put_u64(step_at(b, 1) + BCONV_EPI_STAGES_AT + 16, 64u << 2);
}

/* The float chain of the conv model's f32 conv2d step (epi_stages, epi_div, epi_relu: params
 * 18..20; in2 holds its constants). */
#define CONV2D_EPI_STAGES_AT (BLOB_STEP_PARAMS_AT + 8 * 18)
static unsigned char *conv2d_step(unsigned char *b) {
    uint32_t nsteps;
    memcpy(&nsteps, section(b, BLOB_SECTION_PLAN, NULL), 4);
    for (uint32_t i = 0; i < nsteps; i++) {
        uint32_t kind;
        memcpy(&kind, step_at(b, (int)i), 4);
        if (kind == BLOB_STEP_CONV2D)
            return step_at(b, (int)i);
    }
    fprintf(stderr, "test_errors: the conv model has no conv2d step\n");
    abort();
}
static void e_conv2d_chain_stages(unsigned char *b, size_t *len) {
    (void)len, blob_put_u64(conv2d_step(b) + CONV2D_EPI_STAGES_AT, BLOB_EPI_MAX_STAGES + 1);
}
static void e_conv2d_chain_relu(unsigned char *b, size_t *len) {
    (void)len, blob_put_u64(conv2d_step(b) + CONV2D_EPI_STAGES_AT, 1);
    blob_put_u64(conv2d_step(b) + CONV2D_EPI_STAGES_AT + 16, 2); /* relu after a stage 1 it lacks */
}
static void e_conv2d_chain_no_in2(unsigned char *b, size_t *len) {
    (void)len, blob_put_u64(conv2d_step(b) + CONV2D_EPI_STAGES_AT, 2);
}
/* a list of the bit kernel's sums (slot x0) on a conv2d step that writes floats */
static void e_conv2d_list_no_bits(unsigned char *b, size_t *len) {
    unsigned char *x0 = conv2d_step(b) + BLOB_STEP_SLOTS_AT + 24 * BLOB_SLOT_X0;
    (void)len, blob_put_u32(x0, BLOB_SPACE_ARENA);
    blob_put_u64(x0 + 8, 0);
    blob_put_u64(x0 + 16, 128);
}

static void test_bconv_chain(void) {
    Buf b = {0};
    TestConv ref;
    build_conv(5, &b, &ref, NULL, NULL);
    free_conv(&ref);
    CHECK_MSG(load_status(b.data, b.len) == BNN_STATUS_OK, "conv model: %s", bnn_last_error());
    expect(&b, e_chain_on_threshold, true, BNN_STATUS_BAD_BLOB, "without a float chain", "chain on threshold");
    expect(&b, e_chain_stages, true, BNN_STATUS_BAD_BLOB, "bad float chain: 9 stages", "chain stages");
    expect(&b, e_chain_residual, true, BNN_STATUS_BAD_BLOB, "residual 3", "chain residual");
    expect(&b, e_chain_no_params, true, BNN_STATUS_BAD_BLOB, "slot p0", "chain without p0");
    expect(&b, e_resthr_side, true, BNN_STATUS_BAD_BLOB, "needs a float chain, or the threshold epilogue",
           "residual threshold with a side");
    expect(&b, e_resthr_words, true, BNN_STATUS_BAD_BLOB, "needs a float chain, or the threshold epilogue",
           "residual threshold words");
    expect(&b, e_resthr_no_in2, true, BNN_STATUS_BAD_BLOB, "slot in2", "residual threshold without in2");
    expect(&b, e_conv2d_chain_stages, true, BNN_STATUS_BAD_BLOB, "bad float chain: 9 stages", "conv2d chain stages");
    expect(&b, e_conv2d_chain_relu, true, BNN_STATUS_BAD_BLOB, "bad float chain: 1 stages, div 0, relu 2",
           "conv2d chain relu");
    expect(&b, e_conv2d_chain_no_in2, true, BNN_STATUS_BAD_BLOB, "slot in2", "conv2d chain without in2");
    expect(&b, e_conv2d_list_no_bits, true, BNN_STATUS_BAD_BLOB, "slot x0 (the bit kernel's list)",
           "conv2d list without bits");
    buf_free(&b);
}

int main(void) {
    Buf b = {0};
    test_bconv_chain();
    build_blob(&b);
    test_truncation_and_checksums(&b);
    test_edits(&b);
    test_random_damage(&b);
    test_alloc_failures(&b, false, NULL);
    char path[] = "/tmp/bnnrt_alloc_XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0) {
        FILE *f = fdopen(fd, "wb");
        fwrite(b.data, 1, b.len, f);
        fclose(f);
        test_alloc_failures(&b, true, path);
        remove(path);
    }
    buf_free(&b);
    return check_report("test_errors");
}
