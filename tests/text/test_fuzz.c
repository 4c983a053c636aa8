/* test_fuzz.c: mutate valid models at random (fixed seed) and parse each mutant: the
 * parser must return a graph or NULL with a located message, never crash or leak (ASan
 * and UBSan run this too). A mutant that parses must still round-trip. */
#include <stdint.h>

#include "check.h"
#include "frontend.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint32_t rng(void) {
    /* xorshift64*: deterministic across platforms, unlike rand(). */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545f4914f6cdd1du) >> 32);
}

/* Bytes that matter to the lexer and the grammar, so mutants reach deep. */
static const char interesting[] = "[](){}=,:%$\"\\#-+.0123456789eNxb\n ";
static const char *const snippets[] = {
    "%x", "$w1", "f32[N,4]", "b1[", "hex \"", "base64 \"AAAA\"", "[1,2]", "{k=1}", "loc(\"a\", B)",
    "ret", "const", "graph", "99999999999999999999999", "1e999", "-inf", "nan", "\\x00", "\"",
    "pack(axis=1, word=32, pad=64, tile=k256)", "file \"nope\" offset 0", ",", "->", "N,N",
};

static char *mutate(const char *src, size_t len, size_t *out_len) {
    Buf b = {0};
    buf_put(&b, src, len);
    int rounds = 1 + (int)(rng() % 3);
    for (int r = 0; r < rounds; r++) {
        size_t n = b.len;
        size_t at = n ? rng() % n : 0;
        switch (rng() % 6) {
        case 0: /* truncate */
            b.len = at;
            b.data[b.len] = '\0';
            break;
        case 1: /* flip a byte to anything, NUL included */
            if (n)
                b.data[at] = (char)(rng() & 0xff);
            break;
        case 2: /* replace with an interesting byte */
            if (n)
                b.data[at] = interesting[rng() % (sizeof interesting - 1)];
            break;
        case 3: { /* insert a snippet */
            const char *s = snippets[rng() % (sizeof snippets / sizeof snippets[0])];
            Buf c = {0};
            buf_put(&c, b.data, at);
            buf_puts(&c, s);
            buf_put(&c, b.data + at, n - at);
            buf_free(&b);
            b = c;
            break;
        }
        case 4: { /* delete a span */
            size_t span = 1 + rng() % 16;
            if (at + span > n)
                span = n - at;
            memmove(b.data + at, b.data + at + span, n - at - span);
            b.len -= span;
            b.data[b.len] = '\0';
            break;
        }
        default: { /* duplicate a span */
            size_t span = 1 + rng() % 32;
            if (at + span > n)
                span = n - at;
            Buf c = {0};
            buf_put(&c, b.data, at + span);
            buf_put(&c, b.data + at, n - at);
            buf_free(&b);
            b = c;
            break;
        }
        }
    }
    *out_len = b.len;
    return b.data ? b.data : xstrdup("");
}

static int accepted, rejected;

static void fuzz_model(const char *path, int iterations) {
    size_t len;
    char *text = read_file(path, &len);
    CHECK_MSG(text != NULL, "%s", diag_message());
    if (!text)
        return;
    for (int i = 0; i < iterations; i++) {
        size_t mlen;
        char *m = mutate(text, len, &mlen);
        Graph *g = parse_text_string("fuzz.bnn", m, mlen);
        if (g) {
            accepted++;
            char *a = print_graph_to_string(g);
            Graph *h = parse_text_string("fuzz2.bnn", a, strlen(a));
            char *b = h ? print_graph_to_string(h) : NULL;
            CHECK_MSG(b && strcmp(a, b) == 0, "mutant %d of %s: accepted but does not round-trip:\n%s",
                      i, path, m);
            free(b);
            free_graph(h);
            free(a);
            free_graph(g);
        } else {
            rejected++;
            /* Located messages, except for failures after parsing (verify_graph). */
            CHECK_MSG(diag_message()[0] != '\0', "mutant %d of %s: NULL without a message:\n%s", i,
                      path, m);
        }
        free(m);
        diag_free_sources(); /* each parse keeps a copy of its text for carets */
    }
    free(text);
}

int main(int argc, char **argv) {
    const char *root = getenv("BNN_SOURCE_ROOT");
    if (!root) {
        fprintf(stderr, "BNN_SOURCE_ROOT not set\n");
        return 77;
    }
    int iterations = argc > 1 ? atoi(argv[1]) : 4000;
    static const char *const models[] = {"tests/text/mlp.bnn", "tests/text/conv.bnn"};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", root, models[i]);
        fuzz_model(path, iterations);
    }
    printf("%d mutants accepted, %d rejected\n", accepted, rejected);
    CHECK(rejected > 0);
    return check_report("test_fuzz");
}
