/* parser.y: the grammar of the bnncc text format (docs/text-format.md, "Grammar").
 * The actions only collect tokens; text.c checks them and builds the Graph, so an
 * action that fails returns -1 and the parse stops (YYABORT). All values live in the
 * parse arena, hence no %destructor. */
%code top {
/* Generated code: its warnings are bison's business, not ours. */
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wunused-parameter"
}

%code requires {
#include "textparse.h"
/* A rule's location is where its first symbol starts (the end of the previous one if empty). */
#define YYLLOC_DEFAULT(Cur, Rhs, N) \
    do {                            \
        if (N)                      \
            (Cur) = YYRHSLOC(Rhs, 1); \
        else                        \
            (Cur) = YYRHSLOC(Rhs, 0); \
    } while (0)
}

%code {
#include <string.h>

#include "util.h"

int txlex(TXSTYPE *lval, TXLTYPE *lloc, void *scanner);
static void txerror(TXLTYPE *loc, void *scanner, ParseCtx *ctx, const char *msg);
}

%define api.pure full
%define api.prefix {tx}
%define api.location.type {TextLoc}
%define parse.error custom
%define parse.lac full
%locations
%parse-param {void *scanner} {ParseCtx *ctx}
%lex-param {void *scanner}

%union {
    Tok *tok;
    Vec *vec;
    OpCall *call;
}

%token <tok> IDENT "identifier" STRING "string" LOCAL "%name" GLOBAL "$name"
%token <tok> INT "integer" FLOAT "number"
%token <tok> KW_CONST "'const'" KW_GRAPH "'graph'" KW_RET "'ret'" KW_HEX "'hex'"
%token <tok> KW_BASE64 "'base64'" KW_FILE "'file'" KW_OFFSET "'offset'" KW_LOC "'loc'"
%token <tok> KW_PACK "'pack'" ARROW "'->'"

%type <tok> cdata num type dim pack_item operand attr aval word
%type <vec> nums nums_opt types types_opt dims dims_opt pack_opt pack_items names
%type <vec> operands operands_opt attrs_opt attr_list
%type <call> opcall

%start model

%%

model: consts graph ;

consts: %empty | consts cdecl ;

cdecl: KW_CONST GLOBAL ':' type '=' cdata   { if (build_const(ctx, $2, $4, $6)) YYABORT; } ;

cdata: KW_HEX STRING                        { $$ = $2; $$->kind = TK_HEX; }
     | KW_BASE64 STRING                     { $$ = $2; $$->kind = TK_BASE64; }
     | KW_FILE STRING KW_OFFSET INT         { $$ = $2; $$->kind = TK_FILE; $$->extra = $4; }
     | '[' nums_opt ']'                     { $$ = ctx_tok(ctx, TK_LIST, @1, NULL, 0); $$->list = $2; }
     ;

nums_opt: %empty                            { $$ = ctx_vec(ctx); }
        | nums
        ;
nums: num                                   { $$ = vec_push(ctx_vec(ctx), $1); }
    | nums ',' num                          { $$ = vec_push($1, $3); }
    ;
num: INT | FLOAT ;

graph: ghead '{' stmts ret '}' ;

ghead: gname '(' params_opt ')' ARROW '(' types_opt ')'
                                            { if (build_outputs(ctx, $7)) YYABORT; } ;

gname: KW_GRAPH GLOBAL                      { if (build_graph_name(ctx, $2)) YYABORT; } ;

params_opt: %empty | params ;
params: param | params ',' param ;
param: LOCAL ':' type                       { if (build_param(ctx, $1, $3)) YYABORT; } ;

types_opt: %empty                           { $$ = ctx_vec(ctx); }
         | types
         ;
types: type                                 { $$ = vec_push(ctx_vec(ctx), $1); }
     | types ',' type                       { $$ = vec_push($1, $3); }
     ;

type: IDENT '[' dims_opt ']' pack_opt       { $$ = build_type(ctx, $1, $3, $5); if (!$$) YYABORT; } ;

dims_opt: %empty                            { $$ = ctx_vec(ctx); }
        | dims
        ;
dims: dim                                   { $$ = vec_push(ctx_vec(ctx), $1); }
    | dims ',' dim                          { $$ = vec_push($1, $3); }
    ;
dim: INT | IDENT ;

pack_opt: %empty                            { $$ = NULL; }
        | KW_PACK '(' pack_items ')'        { $$ = $3; }
        ;
pack_items: pack_item                       { $$ = vec_push(ctx_vec(ctx), $1); }
          | pack_items ',' pack_item        { $$ = vec_push($1, $3); }
          ;
pack_item: IDENT '=' INT                    { $$ = $3; $$->key = $1; }
         | IDENT '=' IDENT                  { $$ = $3; $$->key = $1; }
         ;

stmts: %empty | stmts stmt ;

stmt: names '=' opcall                      { if (build_stmt(ctx, $1, NULL, $3)) YYABORT; }
    | names '=' types opcall                { if (build_stmt(ctx, $1, $3, $4)) YYABORT; }
    ;

names: LOCAL                                { $$ = vec_push(ctx_vec(ctx), $1); }
     | names ',' LOCAL                      { $$ = vec_push($1, $3); }
     ;

opcall: IDENT operands attrs_opt
            { $$ = ctx_alloc(ctx, sizeof *$$); $$->op = $1; $$->operands = $2; $$->attrs = $3; }
      | IDENT operands attrs_opt KW_LOC '(' STRING ')'
            { $$ = ctx_alloc(ctx, sizeof *$$); $$->op = $1; $$->operands = $2; $$->attrs = $3;
              $$->src_name = $6; }
      | IDENT operands attrs_opt KW_LOC '(' STRING ',' word ')'
            { $$ = ctx_alloc(ctx, sizeof *$$); $$->op = $1; $$->operands = $2; $$->attrs = $3;
              $$->src_name = $6; $$->src_op = $8; }
      | IDENT operands attrs_opt KW_LOC '(' STRING ',' STRING ')'
            { $$ = ctx_alloc(ctx, sizeof *$$); $$->op = $1; $$->operands = $2; $$->attrs = $3;
              $$->src_name = $6; $$->src_op = $8; }
      ;

operands_opt: %empty                        { $$ = ctx_vec(ctx); }
            | operands
            ;
operands: operand                           { $$ = vec_push(ctx_vec(ctx), $1); }
        | operands ',' operand              { $$ = vec_push($1, $3); }
        ;
operand: LOCAL | GLOBAL ;

attrs_opt: %empty                           { $$ = NULL; }
         | '{' '}'                          { $$ = ctx_vec(ctx); }
         | '{' attr_list '}'                { $$ = $2; }
         ;
attr_list: attr                             { $$ = vec_push(ctx_vec(ctx), $1); }
         | attr_list ',' attr               { $$ = vec_push($1, $3); }
         ;
attr: IDENT '=' aval                        { $$ = $3; $$->key = $1; } ;
aval: INT | FLOAT | STRING | word
    | '[' nums_opt ']'                      { $$ = ctx_tok(ctx, TK_LIST, @1, NULL, 0); $$->list = $2; }
    ;

/* Keywords are plain words where only a word can stand (attribute values, op types). */
word: IDENT | KW_CONST | KW_GRAPH | KW_RET | KW_HEX | KW_BASE64 | KW_FILE | KW_OFFSET
    | KW_LOC | KW_PACK ;

ret: KW_RET operands_opt                    { if (build_ret(ctx, $1, $2)) YYABORT; } ;

%%

/* Only called for "memory exhausted" (syntax errors go to yyreport_syntax_error). */
static void txerror(TXLTYPE *loc, void *scanner, ParseCtx *ctx, const char *msg) {
    (void)scanner;
    ctx_error(ctx, *loc, "%s", msg);
}

/* What the parser had just read, for "expected X after Y". */
static const char *describe_symbol(yysymbol_kind_t s) {
    switch (s) {
    case YYSYMBOL_dims: return "dimension list";
    case YYSYMBOL_type: return "type";
    case YYSYMBOL_types: return "type list";
    case YYSYMBOL_nums: return "list element";
    case YYSYMBOL_pack_items: return "pack(...) fields";
    case YYSYMBOL_names: return "result names";
    case YYSYMBOL_operands: return "operands";
    case YYSYMBOL_attrs_opt: return "attributes";
    case YYSYMBOL_attr_list: return "attribute";
    case YYSYMBOL_params: return "parameter list";
    case YYSYMBOL_cdata: return "constant data";
    case YYSYMBOL_ghead: return "graph signature";
    case YYSYMBOL_opcall: return "op";
    default: return NULL;
    }
}

/* Bison's name of a token, without the quotes it keeps around aliases. */
static void put_symbol(Buf *b, yysymbol_kind_t s) {
    const char *name = yysymbol_name(s);
    size_t n = strlen(name);
    if (n >= 2 && name[0] == '"' && name[n - 1] == '"')
        buf_put(b, name + 1, n - 2);
    else
        buf_puts(b, name);
}

static int yyreport_syntax_error(const yypcontext_t *yyctx, void *scanner, ParseCtx *ctx) {
    (void)scanner;
    if (ctx->failed)
        return 0;
    enum { MAX_EXPECTED = 5 };
    yysymbol_kind_t expected[MAX_EXPECTED];
    int n = yypcontext_expected_tokens(yyctx, expected, MAX_EXPECTED);
    Buf b = {0};
    if (n > 0) {
        buf_puts(&b, "expected ");
        for (int i = 0; i < n; i++) {
            if (i)
                buf_puts(&b, i == n - 1 ? " or " : ", ");
            put_symbol(&b, expected[i]);
        }
    } else {
        buf_puts(&b, "unexpected ");
        if (yypcontext_token(yyctx) == YYSYMBOL_YYEOF)
            buf_puts(&b, "end of file");
        else
            buf_printf(&b, "'%s'", ctx->last);
    }
    yysymbol_kind_t prev = YY_ACCESSING_SYMBOL(*yyctx->yyssp);
    const char *what = describe_symbol(prev);
    if (what)
        buf_printf(&b, " after %s", what);
    else if (prev != YYSYMBOL_YYEOF && prev < YYNTOKENS && ctx->prev[0])
        buf_printf(&b, " after '%s'", ctx->prev);
    if (n > 0) {
        if (yypcontext_token(yyctx) == YYSYMBOL_YYEOF)
            buf_puts(&b, ", found end of file");
        else
            buf_printf(&b, ", found '%s'", ctx->last);
    }
    ctx_error(ctx, *yypcontext_location(yyctx), "%s", b.data);
    buf_free(&b);
    return 0;
}
