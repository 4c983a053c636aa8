/* test_errors.c: malformed models give file:line:col, the exact message, the offending
 * line and a caret, and NULL without leaks (ASan checks the leaks). */
#include "check.h"
#include "frontend.h"

typedef struct ErrorCase {
    const char *text;
    const char *want; /* the first line of the diagnostic, exactly */
} ErrorCase;

#define G "graph $g(%x: f32[N,4]) -> (f32[N,4]) {\n"
#define END "    ret %x\n}\n"

static const ErrorCase cases[] = {
    /* lexical */
    {"graph $g(%x: f32[N,4) -> () {\n",
     "m.bnn:1:21: expected ']' or ',' after dimension list, found ')'"},
    {G "    %y = f32[N,4] relu %x @\n",
     "m.bnn:2:27: unexpected character '@'"},
    {"const $w: u8[2] = hex \"00ff\n",
     "m.bnn:1:23: unterminated string"},
    {"const $w: u8[2] = hex \"00\\q\"\n",
     "m.bnn:1:26: unknown escape '\\q' in string (use \\\" \\\\ \\n \\t \\r or \\xHH)"},
    {"graph $g(% : f32[1]) -> () {\n", "m.bnn:1:10: expected a name after '%'"},
    {"graph $g(%\"\": f32[1]) -> () {\n", "m.bnn:1:10: empty name"},
    /* syntax */
    {G "    %y = f32[N,4] relu %x\n", "m.bnn:3:1: expected %name, 'ret', 'loc', ',' or '{' after operands, found end of file"},
    {G "    %y = f32[N,4] relu %x\n    ret %y\n", "m.bnn:4:1: expected ',' or '}' after operands, found end of file"},
    {"graph $g(%x f32[1]) -> () {\n", "m.bnn:1:13: expected ':' after '%x', found 'f32'"},
    {G "    %y = f32[N,4] relu %x {axis 1}\n", "m.bnn:2:33: expected '=' after 'axis', found '1'"},
    {"const $w: f32[2] = [1, 2\ngraph", "m.bnn:2:1: expected ']' or ',' after list element, found 'graph'"},
    {"", "m.bnn:1:1: expected 'const' or 'graph', found end of file"},
    /* types */
    {"graph $g(%x: f33[1]) -> () {\n",
     "m.bnn:1:14: unknown type 'f33' (expected f32, f16, i64, i32, i8, u8 or b1)"},
    {"graph $g(%x: f32[1,1,1,1,1,1,1]) -> () {\n", "m.bnn:1:30: rank 7 is above the maximum of 6"},
    {"graph $g(%x: f32[99999999999999999999]) -> () {\n",
     "m.bnn:1:18: dimension is out of range: '99999999999999999999' (allowed 0 to 2147483647)"},
    {"graph $g(%x: f32[-1]) -> () {\n",
     "m.bnn:1:18: dimension is out of range: '-1' (allowed 0 to 2147483647)"},
    {"graph $g(%x: f32[N,M]) -> () {\n",
     "m.bnn:1:20: expected a dimension (an integer or N), found 'M'"},
    {"graph $g(%x: f32[N,N]) -> () {\n", "m.bnn:1:20: only one dimension can be the batch N"},
    {"graph $g(%x: f32[N,64] pack(axis=1, word=32, pad=64, tile=k256)) -> () {\n",
     "m.bnn:1:29: pack(...) is only for b1 types, not f32"},
    {"graph $g(%x: b1[N,64] pack(axis=1, word=16, pad=64, tile=k256)) -> () {\n",
     "m.bnn:1:41: pack word must be 32 or 64, found 16"},
    {"graph $g(%x: b1[N,64] pack(axis=1, word=32, pad=64)) -> () {\n",
     "m.bnn:1:28: pack(...) needs axis, word, pad and tile; 'tile' is missing"},
    {"graph $g(%x: b1[65536,65536,65536]) -> () {\n",
     "m.bnn:1:29: type has too many elements (more than 2^40)"},
    /* constants */
    {"const $w: b1[64,784] = hex \"a3f0\"\n",
     "m.bnn:1:28: hex data of $w has 2 bytes, its type b1[64,784] needs 6272"},
    {"const $w: u8[2] = hex \"0g0f\"\n", "m.bnn:1:25: invalid hex digit 'g' in the data of $w"},
    {"const $w: u8[2] = hex \"00f\"\n", "m.bnn:1:23: hex data of $w has an odd number of digits (3)"},
    {"const $w: f32[2] = base64 \"AAAA*AAAAAA=\"\n",
     "m.bnn:1:32: invalid base64 character '*' in the data of $w"},
    {"const $w: f32[2] = base64 \"AAAAA\"\n",
     "m.bnn:1:27: base64 data of $w is truncated or badly padded"},
    {"const $w: f32[2] = base64 \"AAAAAAAAAAAA\"\n",
     "m.bnn:1:27: base64 data of $w has 9 bytes, its type f32[2] needs 8"},
    {"const $w: i32[4] = [1, -2, 3]\n", "m.bnn:1:20: $w has 3 elements, its type i32[4] needs 4"},
    {"const $w: i8[2] = [1, 300]\n",
     "m.bnn:1:23: element 1 of $w (i8) is out of range: '300' (allowed -128 to 127)"},
    {"const $w: i32[1] = [1.5]\n", "m.bnn:1:21: element 0 of $w (i32) must be an integer, found '1.5'"},
    {"const $w: f32[1] = [1e999]\n", "m.bnn:1:21: element 0 of $w (f32) is out of range for f32: '1e999'"},
    {"const $w: f16[1] = [70000]\n", "m.bnn:1:21: element 0 of $w (f16) is out of range for f16: 70000"},
    {"const $w: b1[2] = [1, 2]\n", "m.bnn:1:23: element 1 of $w (b1) is out of range: '2' (allowed -1 to 1)"},
    {"const $w: f32[N,2] = [1, 2]\n", "m.bnn:1:11: constant $w cannot have the batch dimension N"},
    {"const $w: u8[1] = [1]\nconst $w: u8[1] = [2]\n",
     "m.bnn:2:7: redefinition of $w (first defined at line 1, column 7)"},
    {"const $w: u8[1] = file \"does-not-exist.weights\" offset 0\n",
     "m.bnn:1:24: cannot open weights file 'dir/does-not-exist.weights' for $w: No such file or directory"},
    {"const $w: u8[1] = file \"x\" offset -1\n",
     "m.bnn:1:35: offset of $w is out of range: '-1' (allowed 0 to 9223372036854775807)"},
    /* statements */
    {G "    %y = f32[N,4] relu %z\n" END, "m.bnn:2:24: undefined value %z"},
    {G "    %y = f32[N,4] relu %z\n    %z = f32[N,4] relu %x\n" END, "m.bnn:2:24: undefined value %z"},
    {G "    %y = f32[N,4] add %x, $b\n" END, "m.bnn:2:27: undefined constant $b"},
    {G "    %x = f32[N,4] relu %x\n" END, "m.bnn:2:5: redefinition of %x (first defined at line 1, column 10)"},
    {G "    %y = f32[N,4] relu %x\n    %y = f32[N,4] relu %x\n" END,
     "m.bnn:3:5: redefinition of %y (first defined at line 2, column 5)"},
    {G "    %y = f32[N,4] frobnicate %x\n" END, "m.bnn:2:19: unknown op 'frobnicate'"},
    {G "    %y = f32[N,4] relu %x, %x\n" END, "m.bnn:2:19: relu takes 1 operand, found 2"},
    {G "    %y = f32[N,4] conv2d %x\n" END, "m.bnn:2:19: conv2d takes 2 to 3 operands, found 1"},
    {G "    %y = f32[N,4] relu %x {axis=1}\n" END,
     "m.bnn:2:28: unknown attribute 'axis': relu takes no attributes"},
    {G "    %y = f32[N,4] softmax %x {axes=1}\n" END,
     "m.bnn:2:31: unknown attribute 'axes' for softmax (it takes axis)"},
    {G "    %y = f32[N,4] softmax %x {axis=[1]}\n" END,
     "m.bnn:2:36: attribute 'axis' of softmax must be an integer, found a list"},
    {G "    %y = f32[N,4] softmax %x {axis=1, axis=2}\n" END,
     "m.bnn:2:39: attribute 'axis' given twice"},
    {G "    %y = f32[N,4] softmax %x {axis=99999999999999999999}\n" END,
     "m.bnn:2:36: attribute 'axis' of softmax is out of range: '99999999999999999999' (allowed "
     "-9223372036854775808 to 9223372036854775807)"},
    {G "    %y = f32[N,4] pad %x {pads=[0,1,0,x]}\n" END,
     "m.bnn:2:39: expected integer or number after ',', found 'x'"},
    {G "    %y = f32[N,4] clip %x {min=zero}\n" END,
     "m.bnn:2:32: attribute 'min' of clip must be a number, found 'zero'"},
    {G "    %y = f32[N,4] cast %x {to=[1]}\n" END,
     "m.bnn:2:31: attribute 'to' of cast must be a word or a string, found a list"},
    {G "    %y = f32[N,4] reshape %x\n    %z = reshape %y\n" END,
     "m.bnn:3:10: reshape needs its result type written before the op name"},
    {G "    %v = f32[N,1] topk %x {k=1}\n" END, "m.bnn:2:5: topk defines 2 results, found 1 name"},
    {G "    %v, %i = f32[N,1] topk %x {k=1}\n" END, "m.bnn:2:14: 1 result type for 2 results"},
    {G "    %v, %v = f32[N,1], i64[N,1] topk %x {k=1}\n" END,
     "m.bnn:2:9: %v is named twice in one statement"},
    {G "    ret %x, %x\n}\n", "m.bnn:2:5: ret gives 2 values, the graph signature declares 1"},
    {"graph $g(%x: f32[N,4]) -> (f32[N,5]) {\n    ret %x\n}\n",
     "m.bnn:2:9: %x has type f32[N,4], the graph signature declares f32[N,5]"},
    {G "    ret %x\n}\n}\n", "m.bnn:4:1: expected end of file, found '}'"},
};

static void test_cases(void) {
    int n = (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < n; i++) {
        const char *text = cases[i].text;
        Graph *g = parse_text_string("dir/m.bnn", text, strlen(text));
        CHECK_MSG(g == NULL, "case %d parsed: %s", i, text);
        free_graph(g);
        const char *msg = diag_message();
        const char *want = cases[i].want;
        /* The message starts with the path as given, then the wanted first line. */
        const char *first = strncmp(msg, "dir/", 4) == 0 ? msg + 4 : msg;
        size_t len = strcspn(first, "\n");
        CHECK_MSG(strlen(want) == len && strncmp(first, want, len) == 0,
                  "case %d:\n  want: %s\n  got:  %.*s", i, want, (int)len, first);
    }
    printf("%d error cases\n", n);
}

/* The diagnostic quotes the offending line with a caret under the column. */
static void test_caret(void) {
    const char *text = "graph $g(%x: f32[N,4]) -> (f32[N,4]) {\n"
                       "    %y = f32[N,4] relu %nope\n"
                       "    ret %y\n"
                       "}\n";
    Graph *g = parse_text_string("m.bnn", text, strlen(text));
    CHECK(g == NULL);
    CHECK_MSG(strcmp(diag_message(), "m.bnn:2:24: undefined value %nope\n"
                                     "      %y = f32[N,4] relu %nope\n"
                                     "                         ^") == 0,
              "got:\n%s", diag_message());
}

/* Node locations point at the result name, so later errors can name the line. */
static void test_node_locs(void) {
    const char *text = "graph $g(%x: f32[N,4]) -> (f32[N,4]) {\n"
                       "  %a = f32[N,4] relu %x\n"
                       "\n"
                       "        %b = f32[N,4] relu %a  # comment\n"
                       "    ret %b\n"
                       "}\n";
    Graph *g = parse_text_string("locs.bnn", text, strlen(text));
    CHECK_MSG(g != NULL, "%s", diag_message());
    if (!g)
        return;
    CHECK(g->nodes[0]->loc.line == 2 && g->nodes[0]->loc.col == 3);
    CHECK(g->nodes[1]->loc.line == 4 && g->nodes[1]->loc.col == 9);
    CHECK(strcmp(g->nodes[1]->loc.file, "locs.bnn") == 0);
    free_graph(g);
}

/* Omitted result types come from infer_node_types; operand errors it finds are reported
 * at the statement (the wording is infer.c's, the place is checked here). */
static void test_inferred_types(void) {
    const char *text = "graph $g(%x: f32[N,4]) -> (f32[N,4], i64[N,2]) {\n"
                       "    %y = relu %x\n"
                       "    %v, %i = topk %y {k=2}\n"
                       "    ret %y, %i\n"
                       "}\n";
    Graph *g = parse_text_string("infer.bnn", text, strlen(text));
    CHECK_MSG(g != NULL, "%s", diag_message());
    if (g) {
        char *s = print_graph_to_string(g);
        CHECK_STR_CONTAINS(s, "    %y = f32[N,4] relu %x\n");
        CHECK_STR_CONTAINS(s, "    %v, %i = f32[N,2], i64[N,2] topk %y {k=2}\n");
        free(s);
        free_graph(g);
    }
    static const struct {
        const char *body;
        const char *want;
    } bad[] = {
        {"    %y = f32[N,5] relu %x\n    ret %y\n",
         "infer.bnn:2:10: %y is declared f32[N,5], but relu gives f32[N,4]\n"},
        {"    %y = conv2d %x, %x\n    ret %y\n", "infer.bnn:2:5: "},
        {"    %y = i32[N,4] dense %x, %x\n    ret %y\n", "infer.bnn:2:5: "},
        {"    %y = f32[N,3] reshape %x\n    ret %x\n", "infer.bnn:2:5: "},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        Buf b = {0};
        buf_printf(&b, "graph $g(%%x: f32[N,4]) -> (f32[N,4]) {\n%s}\n", bad[i].body);
        g = parse_text_string("infer.bnn", b.data, b.len);
        CHECK(g == NULL);
        free_graph(g);
        CHECK_MSG(strncmp(diag_message(), bad[i].want, strlen(bad[i].want)) == 0,
                  "bad %zu: want '%s', got '%s'", i, bad[i].want, diag_message());
        buf_free(&b);
    }
}

int main(void) {
    test_cases();
    test_caret();
    test_node_locs();
    test_inferred_types();
    diag_free_sources();
    return check_report("test_errors");
}
