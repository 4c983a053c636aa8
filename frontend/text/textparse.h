/* textparse.h: what the text-format lexer (lexer.l), parser (parser.y) and the graph
 * builder (text.c) share. Internal to frontend/text; the public entry points are in
 * frontend.h. The language is described in docs/text-format.md. */
#ifndef BNN_TEXTPARSE_H
#define BNN_TEXTPARSE_H

#include <stdbool.h>
#include <stddef.h>

#include "ir.h"

/* A position in the model text: 1-based line and byte column. */
typedef struct TextLoc {
    int line;
    int col;
} TextLoc;

typedef enum {
    TK_INT,    /* integer literal, text as written */
    TK_FLOAT,  /* float literal (inf, nan included), text as written */
    TK_IDENT,  /* identifier or keyword used as a word */
    TK_STRING, /* quoted string, text decoded */
    TK_LOCAL,  /* %name, text without the sigil */
    TK_GLOBAL, /* $name, text without the sigil */
    TK_LIST,   /* [a, b, ...]: list holds Tok* */
    TK_TYPE,   /* a tensor type: type is set */
    TK_HEX,    /* constant data: hex "..." */
    TK_BASE64, /* constant data: base64 "..." */
    TK_FILE,   /* constant data: file "..." offset K (extra is K) */
} TokKind;

/* A growable array of pointers, owned by the parse arena. */
typedef struct Vec {
    void **items;
    int n, cap;
} Vec;

/* Every terminal and most nonterminals are a Tok; it keeps where it was written. */
typedef struct Tok {
    TokKind kind;
    TextLoc loc;
    char *text;
    Vec *list;
    Type *type;
    struct Tok *key;   /* attribute value: its key */
    struct Tok *extra; /* TK_FILE: the offset */
} Tok;

/* The right-hand side of a statement: op, operands, attributes, loc(...). */
typedef struct OpCall {
    Tok *op;
    Vec *operands;
    Vec *attrs;    /* NULL when none */
    Tok *src_name; /* NULL when no loc(...) */
    Tok *src_op;   /* NULL when loc(...) has no op type */
} OpCall;

/* The state of one parse. Everything the lexer and parser allocate is recorded in the
 * arena and freed when the parse ends, so an error at any point leaks nothing. */
typedef struct ParseCtx {
    const char *file; /* interned: nodes keep it in their Loc */
    char *dir;        /* side files are resolved against it */
    Graph *g;
    bool failed;      /* an error has been recorded */
    int line, col;    /* the lexer's position */
    char last[40];    /* text of the last token, for "found ..." in syntax errors */
    char prev[40];    /* and of the one before it, for "after ..." */
    void **allocs;
    int nallocs, cap_allocs;
    Vec **vecs;
    int nvecs, cap_vecs;
    TextLoc *def_locs; /* by value id: where each value was defined */
    int cap_def_locs;
    Vec *out_types;    /* the graph's declared result types */
} ParseCtx;

void *ctx_alloc(ParseCtx *ctx, size_t n);
Tok *ctx_tok(ParseCtx *ctx, TokKind kind, TextLoc loc, const char *text, size_t len);
Vec *ctx_vec(ParseCtx *ctx);
Vec *vec_push(Vec *v, void *item);
/* Records the first error only: later ones are consequences. */
void ctx_error(ParseCtx *ctx, TextLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Grammar actions (text.c). Each returns 0, or -1 after ctx_error. */
Tok *build_type(ParseCtx *ctx, Tok *dtype, Vec *dims, Vec *pack); /* NULL on error */
int build_const(ParseCtx *ctx, Tok *name, Tok *type, Tok *data);
int build_graph_name(ParseCtx *ctx, Tok *name);
int build_param(ParseCtx *ctx, Tok *name, Tok *type);
int build_outputs(ParseCtx *ctx, Vec *types);
int build_stmt(ParseCtx *ctx, Vec *names, Vec *types, OpCall *call);
int build_ret(ParseCtx *ctx, Tok *kw, Vec *operands);

/* The generated parser and scanner (prefix tx). */
int txparse(void *scanner, ParseCtx *ctx);

#endif
