/* Text form parser: reads what text_print.c writes back into an IrGraph. Hand-written
 * recursive descent over a small lexer; the text is untrusted (tests feed it garbage), so
 * every error becomes a "line:col: message" diagnostic and parsing stops at the first syntax
 * error. Value references may come before their definitions (and subgraphs may name values
 * of the enclosing graph defined further down); they are resolved once the whole text is read.
 *
 *   file      := "kiln-ir" 1 [model] [opsets] [plan] [symbols] "graph" NAME body
 *   model     := "model" { ("ir_version" "=" INT | "producer" "=" STR
 *                           | "producer_version" "=" STR) }
 *   opsets    := "opset" NAME "=" INT { "," NAME "=" INT }
 *   plan      := "plan" "arena=" INT "lower_bound=" INT "naive=" INT  (pass_plan_memory)
 *   symbols   := "symbols" NAME { "," NAME }
 *   body      := "{" { stmt } "}"
 *   stmt      := "input" decl ["=" init] | "const" decl "=" init
 *              | "outer" decl ["from" (VAL | "_")] | "output" ref { "," ref }
 *              | outs "=" NAME "(" [ref { "," ref }] ")" { meta } [ "{" attrs "}" ]
 *   decl      := VAL [":" type] [quant] ["mem=" INT]   VAL := %name | %"any bytes", then ~k
 *   outs      := "(" ")" | (decl | "_") { "," (decl | "_") }
 *   meta      := ("name" | "domain" | "ir_op" | "ir_op_domain") "=" NAME | "opset" "=" INT
 *   type      := DTYPE "[" ("*" | [dim {"," dim}]) "]" ["@" layout] | "?"
 *              | "seq<" type ">" | "opt<" type ">" | "map<" DTYPE "," type ">"
 *              | "sparse<" DTYPE "[" ... "]" ">"
 *   dim       := INT | "?" | NAME ["=" INT]
 *   quant     := "quant(" ["axis=" INT ","] "scale=" (FLOAT | floats)
 *                         ["," "zero_point=" (INT | ints)] ")"
 *   init      := tensor | data                    (data alone: the value's type gives dims)
 *   tensor    := ["tensor" NAME] DTYPE "[" [INT {"," INT}] "]" data
 *   data      := "hex" STR | "[" [STR {"," STR}] "]" | "<" ... ">" (elided: refused)
 *   attrs     := [NAME "=" avalue { "," NAME "=" avalue }] [","]
 *   avalue    := INT | FLOAT | STR | tensor | "sparse" tensor | "graph" NAME body
 *              | "type<" type ">" | [KIND] "[" [avalue {"," avalue}] "]" | "undef"
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "text.h"

#define NUMBER_MAX_CHARS 64 /* longer than any int64 or 9-digit float spelling */
#define TOKEN_SHOW_CHARS 40 /* how much of a bad token a diagnostic quotes */

/* ---- lexer ------------------------------------------------------------------------- */

typedef enum TokKind { TOK_EOF, TOK_IDENT, TOK_STRING, TOK_NUMBER, TOK_VALREF, TOK_PUNCT } TokKind;

typedef struct Tok {
    TokKind kind;
    uint32_t line, col;
    const char *start; /* IDENT, NUMBER: the text; STRING: between the quotes, undecoded;
                          VALREF: the name (bare, or between quotes when quoted) */
    size_t len;
    bool quoted; /* VALREF */
    int32_t dup; /* VALREF: k of ~k, or -1 */
    char punct;
} Tok;

typedef struct Scope Scope;
typedef struct PendingRef PendingRef;

typedef struct Parser {
    const char *text;
    size_t len, pos;
    uint32_t line, col;
    Tok tok;
    Diag *d;
    bool failed;
    IrGraph *root;
    IrArena *arena;
    Scope *scopes;
    uint32_t n_scopes, cap_scopes;
    PendingRef *refs;
    uint32_t n_refs, cap_refs;
    int depth;
    bool planned; /* a `plan` line: root values default to mem_offset -1 */
} Parser;

static void error_at(Parser *P, uint32_t line, uint32_t col, const char *fmt, ...)
    DIAG_PRINTF(4, 5);

static void error_at(Parser *P, uint32_t line, uint32_t col, const char *fmt, ...) {
    if (P->failed) return;
    P->failed = true;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error(P->d, "%" PRIu32 ":%" PRIu32 ": %s", line, col, msg);
}

static const char *tok_describe(const Tok *t, char *buf, size_t cap) {
    int show = t->len > TOKEN_SHOW_CHARS ? TOKEN_SHOW_CHARS : (int)t->len;
    switch (t->kind) {
    case TOK_EOF: snprintf(buf, cap, "end of input"); break;
    case TOK_IDENT: snprintf(buf, cap, "'%.*s'", show, t->start); break;
    case TOK_NUMBER: snprintf(buf, cap, "number '%.*s'", show, t->start); break;
    case TOK_STRING: snprintf(buf, cap, "a string"); break;
    case TOK_VALREF: snprintf(buf, cap, "value %%%.*s", show, t->start); break;
    case TOK_PUNCT: snprintf(buf, cap, "'%c'", t->punct); break;
    }
    return buf;
}

/* "expected X, found Y" at the current token. */
static void expected(Parser *P, const char *what) {
    char buf[TOKEN_SHOW_CHARS + 32];
    error_at(P, P->tok.line, P->tok.col, "expected %s, found %s", what,
             tok_describe(&P->tok, buf, sizeof buf));
}

static void advance_char(Parser *P) {
    if (P->text[P->pos] == '\n') {
        P->line++;
        P->col = 1;
    } else {
        P->col++;
    }
    P->pos++;
}

static void skip_space(Parser *P) {
    while (P->pos < P->len) {
        char c = P->text[P->pos];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            advance_char(P);
        } else if (c == '#') {
            while (P->pos < P->len && P->text[P->pos] != '\n') advance_char(P);
        } else {
            break;
        }
    }
}

/* The next non-blank character after the current token (comments not skipped: only used to
 * tell `f32[` from `f32` and `name=` from a statement keyword). */
static char peek_char(const Parser *P) {
    size_t i = P->pos;
    while (i < P->len && (P->text[i] == ' ' || P->text[i] == '\t')) i++;
    return i < P->len ? P->text[i] : 0;
}

/* Scans a quoted string starting at the opening quote; the token spans its inside. */
static void lex_string(Parser *P, Tok *t) {
    advance_char(P);
    t->start = P->text + P->pos;
    /* a string never spans lines, so the scan only moves the column (hex data of large
     * tensors passes through here: keep it a tight loop) */
    const char *s = t->start, *end = P->text + P->len;
    while (s < end && *s != '"' && *s != '\n') {
        if (*s == '\\' && s + 1 < end && s[1] != '\n') s++;
        s++;
    }
    P->col += (uint32_t)(s - t->start);
    P->pos = (size_t)(s - P->text);
    if (P->pos >= P->len || P->text[P->pos] != '"') {
        error_at(P, t->line, t->col, "unterminated string");
        return;
    }
    t->len = (size_t)(P->text + P->pos - t->start);
    advance_char(P);
}

/* Bare name characters from the current position, never ending with ':'. */
static size_t lex_bare_name(Parser *P) {
    size_t end = P->pos;
    while (end < P->len && ir_text_name_char((unsigned char)P->text[end])) end++;
    while (end > P->pos && P->text[end - 1] == ':') end--;
    size_t n = end - P->pos;
    P->col += (uint32_t)n;
    P->pos = end;
    return n;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static bool is_alnum(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static void lex(Parser *P) {
    Tok *t = &P->tok;
    if (P->failed) {
        t->kind = TOK_EOF;
        return;
    }
    skip_space(P);
    memset(t, 0, sizeof *t);
    t->line = P->line;
    t->col = P->col;
    t->dup = -1;
    t->start = P->text + P->pos;
    if (P->pos >= P->len) {
        t->kind = TOK_EOF;
        return;
    }
    char c = P->text[P->pos];
    char next = P->pos + 1 < P->len ? P->text[P->pos + 1] : 0;
    if (c == '"') {
        t->kind = TOK_STRING;
        lex_string(P, t);
    } else if (c == '%') {
        t->kind = TOK_VALREF;
        advance_char(P);
        if (P->pos < P->len && P->text[P->pos] == '"') {
            t->quoted = true;
            lex_string(P, t);
        } else {
            t->start = P->text + P->pos;
            t->len = lex_bare_name(P);
            if (t->len == 0) error_at(P, t->line, t->col, "expected a value name after '%%'");
        }
        if (P->pos + 1 < P->len && P->text[P->pos] == '~' && is_digit(P->text[P->pos + 1])) {
            advance_char(P);
            int64_t k = 0;
            while (P->pos < P->len && is_digit(P->text[P->pos])) {
                k = k * 10 + (P->text[P->pos] - '0');
                if (k > INT32_MAX) {
                    error_at(P, t->line, t->col, "value suffix ~k out of range");
                    return;
                }
                advance_char(P);
            }
            t->dup = (int32_t)k;
        }
    } else if (ir_text_ident_start((unsigned char)c)) {
        t->kind = TOK_IDENT;
        t->len = lex_bare_name(P);
    } else if (is_digit(c) || (c == '-' && (is_alnum(next) || next == '.'))) {
        t->kind = TOK_NUMBER;
        size_t end = P->pos + 1;
        while (end < P->len && (is_alnum(P->text[end]) || P->text[end] == '.' ||
                                P->text[end] == '+' || P->text[end] == '-'))
            end++;
        t->len = end - P->pos;
        P->col += (uint32_t)t->len;
        P->pos = end;
    } else if (strchr("{}()[]<>,=:@?*", c)) {
        t->kind = TOK_PUNCT;
        t->punct = c;
        t->len = 1;
        advance_char(P);
    } else {
        unsigned char uc = (unsigned char)c;
        if (uc >= 0x20 && uc < 0x7f) error_at(P, t->line, t->col, "unexpected character '%c'", c);
        else error_at(P, t->line, t->col, "unexpected byte 0x%02x", uc);
    }
}

static bool tok_is_punct(const Parser *P, char c) {
    return P->tok.kind == TOK_PUNCT && P->tok.punct == c;
}

static bool tok_is_ident(const Parser *P, const char *kw) {
    return P->tok.kind == TOK_IDENT && P->tok.len == strlen(kw) &&
           memcmp(P->tok.start, kw, P->tok.len) == 0;
}

static bool accept_punct(Parser *P, char c) {
    if (P->failed || !tok_is_punct(P, c)) return false;
    lex(P);
    return true;
}

static void expect_punct(Parser *P, char c, const char *context) {
    if (accept_punct(P, c)) return;
    char what[96];
    snprintf(what, sizeof what, "'%c' %s", c, context);
    expected(P, what);
}

static bool accept_ident(Parser *P, const char *kw) {
    if (P->failed || !tok_is_ident(P, kw)) return false;
    lex(P);
    return true;
}

/* ---- literals ---------------------------------------------------------------------- */

/* Hex digit values plus one (0: not a hex digit): a table, since tensor data of large models
 * is hundreds of megabytes of hex. */
static const unsigned char hex_table[256] = {
    ['0'] = 1,   ['1'] = 2,   ['2'] = 3,   ['3'] = 4,   ['4'] = 5,   ['5'] = 6,
    ['6'] = 7,   ['7'] = 8,   ['8'] = 9,   ['9'] = 10,  ['a'] = 11,  ['b'] = 12,
    ['c'] = 13,  ['d'] = 14,  ['e'] = 15,  ['f'] = 16,  ['A'] = 11,  ['B'] = 12,
    ['C'] = 13,  ['D'] = 14,  ['E'] = 15,  ['F'] = 16,
};

static int hex_digit(char c) { return (int)hex_table[(unsigned char)c] - 1; }

/* Decodes the current STRING (or quoted VALREF) token into the arena; NUL-terminated. */
static char *tok_decode(Parser *P, size_t *len_out) {
    const Tok *t = &P->tok;
    char *out = ir_arena_alloc(P->arena, t->len + 1);
    size_t n = 0;
    for (size_t i = 0; i < t->len; i++) {
        char c = t->start[i];
        if (c != '\\') {
            out[n++] = c;
            continue;
        }
        char e = ++i < t->len ? t->start[i] : 0;
        switch (e) {
        case '\\': out[n++] = '\\'; break;
        case '"': out[n++] = '"'; break;
        case 'n': out[n++] = '\n'; break;
        case 't': out[n++] = '\t'; break;
        case 'r': out[n++] = '\r'; break;
        case 'x': {
            int hi = i + 1 < t->len ? hex_digit(t->start[i + 1]) : -1;
            int lo = i + 2 < t->len ? hex_digit(t->start[i + 2]) : -1;
            if (hi < 0 || lo < 0) {
                error_at(P, t->line, t->col, "\\x in a string needs two hex digits");
                return NULL;
            }
            out[n++] = (char)(hi * 16 + lo);
            i += 2;
            break;
        }
        default:
            error_at(P, t->line, t->col, "unknown escape '\\%c' in a string",
                     e >= 0x20 && e < 0x7f ? e : '?');
            return NULL;
        }
    }
    out[n] = 0;
    *len_out = n;
    return out;
}

/* A name: a bare identifier or a string without NUL bytes. Arena copy; NULL on error. */
static const char *parse_name(Parser *P, const char *what) {
    if (P->failed) return NULL;
    const char *s = NULL;
    size_t len = 0;
    if (P->tok.kind == TOK_IDENT) {
        s = ir_arena_strndup(P->arena, P->tok.start, P->tok.len);
    } else if (P->tok.kind == TOK_STRING) {
        s = tok_decode(P, &len);
        if (s && memchr(s, 0, len)) {
            error_at(P, P->tok.line, P->tok.col, "a name cannot contain NUL bytes");
            return NULL;
        }
    } else {
        expected(P, what);
        return NULL;
    }
    if (!s) return NULL;
    lex(P);
    return s;
}

static bool tok_is_int(const Tok *t) {
    if (t->kind != TOK_NUMBER) return false;
    size_t i = t->start[0] == '-' ? 1 : 0;
    if (i == t->len) return false;
    for (; i < t->len; i++)
        if (!is_digit(t->start[i])) return false;
    return true;
}

static bool parse_int(Parser *P, int64_t *out, const char *what) {
    if (P->failed) return false;
    if (!tok_is_int(&P->tok)) {
        expected(P, what);
        return false;
    }
    char buf[NUMBER_MAX_CHARS + 1];
    if (P->tok.len > NUMBER_MAX_CHARS) {
        error_at(P, P->tok.line, P->tok.col, "integer too long");
        return false;
    }
    memcpy(buf, P->tok.start, P->tok.len);
    buf[P->tok.len] = 0;
    errno = 0;
    long long v = strtoll(buf, NULL, 10);
    if (errno == ERANGE) {
        error_at(P, P->tok.line, P->tok.col, "integer %s does not fit in 64 bits", buf);
        return false;
    }
    *out = v;
    lex(P);
    return true;
}

static bool tok_is_float(const Tok *t) {
    if (t->kind == TOK_NUMBER) return true;
    if (t->kind != TOK_IDENT) return false;
    return (t->len == 3 && (memcmp(t->start, "inf", 3) == 0 || memcmp(t->start, "nan", 3) == 0)) ||
           (t->len > 4 && memcmp(t->start, "nan:", 4) == 0);
}

/* A float: %.9g spellings, inf, -inf, nan, or nan:0xBITS. Integers are accepted too. */
static bool parse_float(Parser *P, float *out, const char *what) {
    if (P->failed) return false;
    const Tok *t = &P->tok;
    if (!tok_is_float(t)) {
        expected(P, what);
        return false;
    }
    char buf[NUMBER_MAX_CHARS + 1];
    if (t->len > NUMBER_MAX_CHARS) {
        error_at(P, t->line, t->col, "number too long");
        return false;
    }
    memcpy(buf, t->start, t->len);
    buf[t->len] = 0;
    char *end = NULL;
    if (strncmp(buf, "nan:0x", 6) == 0) {
        errno = 0;
        unsigned long long bits = strtoull(buf + 6, &end, 16);
        if (*end || end == buf + 6 || errno || bits > UINT32_MAX) {
            error_at(P, t->line, t->col, "bad NaN bits '%s'", buf);
            return false;
        }
        uint32_t b32 = (uint32_t)bits;
        memcpy(out, &b32, sizeof *out);
    } else if (strcmp(buf, "nan") == 0) {
        uint32_t b32 = IR_TEXT_NAN_BITS;
        memcpy(out, &b32, sizeof *out);
    } else {
        *out = strtof(buf, &end);
        if (*end || end == buf) {
            error_at(P, t->line, t->col, "bad number '%s'", buf);
            return false;
        }
    }
    lex(P);
    return true;
}

/* ---- scopes and references --------------------------------------------------------- */

typedef struct ScopeEntry {
    const char *name; /* NULL: free slot */
    int32_t dup;
    uint32_t value;
} ScopeEntry;

/* Names of one graph's values, for resolving references: an open-addressing hash table. */
struct Scope {
    IrGraph *g;
    int32_t parent; /* scope index of the enclosing graph, or -1 */
    ScopeEntry *tab;
    uint32_t cap, n;
};

typedef enum RefKind { REF_NODE_INPUT, REF_GRAPH_OUTPUT, REF_OUTER } RefKind;

/* A value reference to resolve at the end: slot `index` of node `node` (inputs), of the
 * graph's outputs, or the outer value `node` of g. */
struct PendingRef {
    RefKind kind;
    IrGraph *g;
    uint32_t scope; /* where the name is looked up */
    uint32_t node, index;
    const char *name;
    int32_t dup;
    uint32_t line, col;
};

typedef struct ValRef {
    const char *name;
    int32_t dup;
    uint32_t line, col;
} ValRef;

static uint32_t name_hash(const char *name, int32_t dup) {
    uint32_t h = ir_text_fnv1a(IR_TEXT_FNV_SEED, name, strlen(name));
    return ir_text_fnv1a(h, &dup, sizeof dup);
}

static ScopeEntry *scope_slot(Scope *s, const char *name, int32_t dup) {
    uint32_t mask = s->cap - 1;
    for (uint32_t i = name_hash(name, dup) & mask;; i = (i + 1) & mask) {
        ScopeEntry *e = &s->tab[i];
        if (!e->name || (e->dup == dup && strcmp(e->name, name) == 0)) return e;
    }
}

static uint32_t scope_new(Parser *P, IrGraph *g, int32_t parent) {
    if (P->n_scopes == P->cap_scopes) {
        uint32_t cap = P->cap_scopes ? P->cap_scopes * 2 : 8;
        Scope *s = realloc(P->scopes, cap * sizeof *s);
        IR_ASSERT(s);
        P->scopes = s;
        P->cap_scopes = cap;
    }
    Scope *s = &P->scopes[P->n_scopes];
    s->g = g;
    s->parent = parent;
    s->cap = 16;
    s->n = 0;
    s->tab = calloc(s->cap, sizeof *s->tab);
    IR_ASSERT(s->tab);
    return P->n_scopes++;
}

static void scope_declare(Parser *P, uint32_t scope, const ValRef *r, uint32_t value) {
    Scope *s = &P->scopes[scope];
    if ((s->n + 1) * 2 > s->cap) {
        ScopeEntry *old = s->tab;
        uint32_t old_cap = s->cap;
        s->cap *= 2;
        s->tab = calloc(s->cap, sizeof *s->tab);
        IR_ASSERT(s->tab);
        for (uint32_t i = 0; i < old_cap; i++)
            if (old[i].name) *scope_slot(s, old[i].name, old[i].dup) = old[i];
        free(old);
    }
    ScopeEntry *e = scope_slot(s, r->name, r->dup);
    if (e->name) {
        error_at(P, r->line, r->col, "value '%s' is defined twice", r->name);
        return;
    }
    e->name = r->name;
    e->dup = r->dup;
    e->value = value;
    s->n++;
}

static void ref_add(Parser *P, RefKind kind, IrGraph *g, uint32_t scope, uint32_t node,
                    uint32_t index, const ValRef *r) {
    if (P->n_refs == P->cap_refs) {
        uint32_t cap = P->cap_refs ? P->cap_refs * 2 : 64;
        PendingRef *p = realloc(P->refs, cap * sizeof *p);
        IR_ASSERT(p);
        P->refs = p;
        P->cap_refs = cap;
    }
    P->refs[P->n_refs++] = (PendingRef){kind, g, scope, node, index, r->name, r->dup,
                                        r->line, r->col};
}

static void resolve_refs(Parser *P) {
    for (uint32_t i = 0; i < P->n_refs; i++) {
        const PendingRef *r = &P->refs[i];
        Scope *s = &P->scopes[r->scope];
        ScopeEntry *e = scope_slot(s, r->name, r->dup);
        if (!e->name) {
            char suffix[16] = "";
            if (r->dup >= 0) snprintf(suffix, sizeof suffix, "~%" PRId32, r->dup);
            diag_error(P->d, "%" PRIu32 ":%" PRIu32 ": unknown value %%%s%s", r->line, r->col,
                       r->name, suffix);
            P->failed = true;
            continue;
        }
        switch (r->kind) {
        case REF_NODE_INPUT: r->g->nodes[r->node].inputs[r->index] = e->value; break;
        case REF_GRAPH_OUTPUT: r->g->outputs[r->index] = e->value; break;
        case REF_OUTER: r->g->values[r->node].producer = e->value; break;
        }
    }
}

static bool parse_valref(Parser *P, ValRef *r) {
    if (P->failed) return false;
    if (P->tok.kind != TOK_VALREF) {
        expected(P, "a value (%name)");
        return false;
    }
    r->line = P->tok.line;
    r->col = P->tok.col;
    r->dup = P->tok.dup;
    size_t len = P->tok.len;
    if (P->tok.quoted) {
        r->name = tok_decode(P, &len);
        if (!r->name) return false;
        if (memchr(r->name, 0, len)) {
            error_at(P, r->line, r->col, "a value name cannot contain NUL bytes");
            return false;
        }
    } else {
        r->name = ir_arena_strndup(P->arena, P->tok.start, len);
    }
    lex(P);
    return true;
}

/* ---- types ------------------------------------------------------------------------- */

static bool parse_dtype(Parser *P, IrDType *out) {
    if (P->failed) return false;
    char buf[32];
    if (P->tok.kind != TOK_IDENT || P->tok.len >= sizeof buf) {
        expected(P, "an element type (f32, i64, ...)");
        return false;
    }
    memcpy(buf, P->tok.start, P->tok.len);
    buf[P->tok.len] = 0;
    if (!ir_dtype_from_name(buf, out)) {
        error_at(P, P->tok.line, P->tok.col, "unknown element type '%s'", buf);
        return false;
    }
    lex(P);
    return true;
}

/* "[dims]" and "@layout" after a dtype. */
static void parse_dims(Parser *P, IrType *t) {
    expect_punct(P, '[', "after the element type");
    t->rank = 0;
    if (accept_punct(P, '*')) {
        t->rank = -1;
    } else if (!tok_is_punct(P, ']')) {
        do {
            if (P->failed) return;
            if (t->rank >= IR_MAX_RANK) {
                error_at(P, P->tok.line, P->tok.col, "rank above %d", IR_MAX_RANK);
                return;
            }
            int i = t->rank++;
            t->dims[i] = IR_DIM_UNKNOWN;
            if (accept_punct(P, '?')) continue;
            if (P->tok.kind == TOK_NUMBER) {
                parse_int(P, &t->dims[i], "a dimension");
                continue;
            }
            const char *sym = parse_name(P, "a dimension (integer, ? or symbol)");
            if (!sym) return;
            t->syms[i] = ir_graph_sym(P->root, sym);
            if (accept_punct(P, '=')) parse_int(P, &t->dims[i], "the symbol's value");
        } while (accept_punct(P, ','));
    }
    expect_punct(P, ']', "after the dimensions");
    if (accept_punct(P, '@')) {
        if (accept_ident(P, "nchw")) {
            t->layout = IR_LAYOUT_NCHW;
        } else if (accept_ident(P, "nhwc")) {
            t->layout = IR_LAYOUT_NHWC;
        } else {
            int64_t v = 0;
            if (parse_int(P, &v, "a layout (nchw, nhwc)") && (v < 0 || v > UINT8_MAX))
                error_at(P, P->line, P->col, "layout %" PRId64 " out of range", v);
            t->layout = (uint8_t)v;
        }
    }
}

static IrType *parse_type_ptr(Parser *P);

/* A type into *t; false for the undefined type `?` or on error. */
static bool parse_type(Parser *P, IrType *t) {
    memset(t, 0, sizeof *t);
    t->rank = -1;
    if (P->failed) return false;
    if (accept_punct(P, '?')) return false;
    if (++P->depth > IR_TEXT_MAX_NESTING) {
        error_at(P, P->tok.line, P->tok.col, "types nested deeper than %d", IR_TEXT_MAX_NESTING);
        return false;
    }
    if (accept_ident(P, "seq") || tok_is_ident(P, "opt")) {
        bool opt = accept_ident(P, "opt");
        t->kind = opt ? IR_TYPE_OPTIONAL : IR_TYPE_SEQUENCE;
        expect_punct(P, '<', opt ? "after opt" : "after seq");
        t->elem = parse_type_ptr(P);
        expect_punct(P, '>', "closing the element type");
    } else if (accept_ident(P, "map")) {
        IrDType key = IR_DTYPE_UNDEF;
        t->kind = IR_TYPE_MAP;
        expect_punct(P, '<', "after map");
        parse_dtype(P, &key);
        t->key_dtype = (uint8_t)key;
        expect_punct(P, ',', "after the key type");
        t->elem = parse_type_ptr(P);
        expect_punct(P, '>', "closing the map type");
    } else if (accept_ident(P, "sparse")) {
        IrDType dt = IR_DTYPE_UNDEF;
        t->kind = IR_TYPE_SPARSE_TENSOR;
        expect_punct(P, '<', "after sparse");
        parse_dtype(P, &dt);
        t->dtype = (uint8_t)dt;
        parse_dims(P, t);
        expect_punct(P, '>', "closing the sparse type");
    } else {
        IrDType dt = IR_DTYPE_UNDEF;
        t->kind = IR_TYPE_TENSOR;
        if (parse_dtype(P, &dt)) t->dtype = (uint8_t)dt;
        parse_dims(P, t);
    }
    P->depth--;
    return !P->failed;
}

static IrType *parse_type_ptr(Parser *P) {
    IrType t;
    if (!parse_type(P, &t)) return NULL;
    IrType *p = ir_arena_alloc(P->arena, sizeof *p);
    *p = t;
    return p;
}

static IrQuant *parse_quant(Parser *P) {
    uint32_t line = P->tok.line, col = P->tok.col;
    expect_punct(P, '(', "after quant");
    IrQuant *q = ir_arena_alloc(P->arena, sizeof *q);
    q->axis = -1;
    float *scales = NULL;
    int64_t *zps = NULL;
    uint32_t n_scales = 0, n_zps = 0, cap = 0;
    bool have_scale = false, have_zp = false;
    while (!P->failed && !tok_is_punct(P, ')')) {
        if (accept_ident(P, "axis")) {
            int64_t axis = 0;
            expect_punct(P, '=', "after axis");
            if (parse_int(P, &axis, "the axis") && (axis < INT32_MIN || axis > INT32_MAX))
                error_at(P, line, col, "quant axis out of range");
            q->axis = (int32_t)axis;
        } else if (tok_is_ident(P, "scale") || tok_is_ident(P, "zero_point")) {
            bool is_scale = tok_is_ident(P, "scale");
            lex(P);
            expect_punct(P, '=', "after the quant key");
            bool list = accept_punct(P, '[');
            uint32_t n = 0;
            while (!P->failed && !(list && tok_is_punct(P, ']'))) {
                if (n == cap) {
                    cap = cap ? cap * 2 : 8;
                    float *s2 = realloc(scales, cap * sizeof *s2);
                    int64_t *z2 = s2 ? realloc(zps, cap * sizeof *z2) : NULL;
                    IR_ASSERT(s2 && z2);
                    scales = s2;
                    zps = z2;
                }
                if (is_scale) parse_float(P, &scales[n], "a scale");
                else parse_int(P, &zps[n], "a zero point");
                n++;
                if (!list || !accept_punct(P, ',')) break;
            }
            if (list) expect_punct(P, ']', "closing the list");
            if (is_scale) {
                have_scale = true;
                n_scales = n;
            } else {
                have_zp = true;
                n_zps = n;
            }
        } else {
            expected(P, "axis, scale or zero_point");
        }
        if (!accept_punct(P, ',')) break;
    }
    expect_punct(P, ')', "closing quant");
    if (!P->failed && !have_scale) error_at(P, line, col, "quant needs a scale");
    if (!P->failed && have_zp && n_zps != n_scales)
        error_at(P, line, col, "quant has %" PRIu32 " scales but %" PRIu32 " zero points",
                 n_scales, n_zps);
    if (!P->failed) {
        q->n = n_scales;
        q->scales = ir_arena_alloc(P->arena, (n_scales ? n_scales : 1) * sizeof(float));
        if (n_scales) memcpy(q->scales, scales, n_scales * sizeof(float));
        if (have_zp) {
            q->zero_points = ir_arena_alloc(P->arena, (n_zps ? n_zps : 1) * sizeof(int32_t));
            for (uint32_t i = 0; i < n_zps; i++) {
                if (zps[i] < INT32_MIN || zps[i] > INT32_MAX)
                    error_at(P, line, col, "zero point out of range");
                q->zero_points[i] = (int32_t)zps[i];
            }
        }
    }
    free(scales);
    free(zps);
    return P->failed ? NULL : q;
}

/* ---- tensors ----------------------------------------------------------------------- */

/* Builds a tensor of dtype and dims from the data at the current token. */
static IrTensor *parse_tensor_data(Parser *P, IrDType dtype, int rank, const int64_t *dims,
                                   const char *name) {
    if (P->failed) return NULL;
    uint32_t line = P->tok.line, col = P->tok.col;
    int64_t n_elems = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0) {
            error_at(P, line, col, "a tensor dimension cannot be negative");
            return NULL;
        }
        if (dims[i] > 0 && n_elems > INT64_MAX / dims[i]) {
            error_at(P, line, col, "tensor too large");
            return NULL;
        }
        n_elems *= dims[i];
    }
    if (tok_is_punct(P, '<')) {
        error_at(P, line, col,
                 "tensor data was elided (printed without full_data) and cannot be parsed");
        return NULL;
    }
    IrTensor *t = NULL;
    if (accept_ident(P, "hex")) {
        if (P->tok.kind != TOK_STRING) {
            expected(P, "a string of hex digits after hex");
            return NULL;
        }
        if (dtype == IR_DTYPE_STRING) {
            error_at(P, line, col, "string tensors take a list of strings, not hex");
            return NULL;
        }
        const unsigned char *h = (const unsigned char *)P->tok.start;
        size_t n_hex = P->tok.len;
        size_t n_bytes = n_hex / 2;
        if (n_hex % 2) {
            error_at(P, P->tok.line, P->tok.col, "odd hex digits in tensor data");
            return NULL;
        }
        /* every element with storage takes at least one bit: bounds n_elems before the
         * byte count multiplies it by the element's bits */
        bool fits = ir_dtype_bits(dtype) == 0 || (uint64_t)n_elems <= (uint64_t)n_bytes * 8;
        if (!fits || ir_dtype_size_bytes(dtype, n_elems) != n_bytes) {
            if (fits)
                error_at(P, line, col, "tensor of %" PRId64 " %s elements needs %zu bytes, "
                         "hex gives %zu", n_elems, ir_dtype_name(dtype),
                         ir_dtype_size_bytes(dtype, n_elems), n_bytes);
            else
                error_at(P, line, col, "tensor of %" PRId64 " %s elements needs more than the "
                         "%zu bytes hex gives", n_elems, ir_dtype_name(dtype), n_bytes);
            return NULL;
        }
        t = ir_tensor_new(P->arena, dtype, rank, dims);
        IR_ASSERT(t->size_bytes == n_bytes);
        unsigned char *b = t->data;
        unsigned bad = 0; /* any digit that was not one: checked once, after the loop */
        for (size_t i = 0; i < n_bytes; i++) {
            unsigned hi = hex_table[h[2 * i]], lo = hex_table[h[2 * i + 1]];
            bad |= (hi == 0) | (lo == 0);
            b[i] = (unsigned char)(((hi - 1) << 4) | ((lo - 1) & 15));
        }
        if (bad) {
            error_at(P, P->tok.line, P->tok.col, "bad hex digit in tensor data");
            return NULL;
        }
        lex(P);
    } else if (tok_is_punct(P, '[')) {
        if (dtype != IR_DTYPE_STRING) {
            error_at(P, line, col, "a list of strings needs a string tensor");
            return NULL;
        }
        lex(P);
        IrStr *strs = NULL;
        int64_t n = 0;
        while (!P->failed && !tok_is_punct(P, ']')) {
            if (n >= n_elems) {
                error_at(P, P->tok.line, P->tok.col, "more strings than the %" PRId64
                         " elements of the tensor", n_elems);
                break;
            }
            if (!strs) strs = ir_arena_alloc(P->arena, (size_t)n_elems * sizeof *strs);
            if (P->tok.kind != TOK_STRING) {
                expected(P, "a string");
                break;
            }
            size_t len = 0;
            char *s = tok_decode(P, &len);
            if (!s) break;
            strs[n++] = (IrStr){s, len};
            lex(P);
            if (!accept_punct(P, ',')) break;
        }
        expect_punct(P, ']', "closing the strings");
        if (P->failed) return NULL;
        if (n != n_elems) {
            error_at(P, line, col, "%" PRId64 " strings for a tensor of %" PRId64 " elements",
                     n, n_elems);
            return NULL;
        }
        t = ir_tensor_new(P->arena, dtype, rank, dims);
        for (int64_t i = 0; i < n; i++) t->strings[i] = strs[i];
    } else {
        expected(P, "tensor data (hex\"...\" or a list of strings)");
        return NULL;
    }
    t->name = name;
    return t;
}

/* [tensor NAME] DTYPE[DIMS] DATA */
static IrTensor *parse_tensor(Parser *P) {
    const char *name = NULL;
    if (accept_ident(P, "tensor")) name = parse_name(P, "the tensor's name");
    IrDType dtype = IR_DTYPE_UNDEF;
    if (!parse_dtype(P, &dtype)) return NULL;
    expect_punct(P, '[', "after the element type");
    int64_t dims[IR_MAX_RANK];
    int rank = 0;
    if (!tok_is_punct(P, ']')) {
        do {
            if (rank >= IR_MAX_RANK) {
                error_at(P, P->tok.line, P->tok.col, "rank above %d", IR_MAX_RANK);
                return NULL;
            }
            parse_int(P, &dims[rank++], "a dimension");
        } while (accept_punct(P, ','));
    }
    expect_punct(P, ']', "after the dimensions");
    return parse_tensor_data(P, dtype, rank, dims, name);
}

static bool at_tensor_data(const Parser *P) {
    return tok_is_ident(P, "hex") || tok_is_punct(P, '[') || tok_is_punct(P, '<');
}

/* The initializer of an input or constant: a tensor, or its data alone. */
static IrTensor *parse_initializer(Parser *P, const IrType *type, const char *value_name) {
    if (!at_tensor_data(P)) return parse_tensor(P);
    bool is_static = type->kind == IR_TYPE_TENSOR && type->rank >= 0;
    for (int i = 0; is_static && i < type->rank; i++) is_static = type->dims[i] >= 0;
    if (!is_static) {
        error_at(P, P->tok.line, P->tok.col,
                 "data without dims needs a value type of static shape; write DTYPE[DIMS] DATA");
        return NULL;
    }
    return parse_tensor_data(P, (IrDType)type->dtype, type->rank, type->dims, value_name);
}

/* ---- attributes -------------------------------------------------------------------- */

typedef struct Ctx {
    IrGraph *g;
    uint32_t scope;
} Ctx;

static void parse_body(Parser *P, IrGraph *g, int32_t parent_scope);

static const struct {
    const char *name;
    IrAttrKind kind;
} list_kinds[] = {
    {"ints", IR_ATTR_KIND_INTS},       {"floats", IR_ATTR_KIND_FLOATS},
    {"strings", IR_ATTR_KIND_STRINGS}, {"tensors", IR_ATTR_KIND_TENSORS},
    {"graphs", IR_ATTR_KIND_GRAPHS},   {"sparse_tensors", IR_ATTR_KIND_SPARSE_TENSORS},
    {"types", IR_ATTR_KIND_TYPE_PROTOS},
};

static IrAttrKind list_of(IrAttrKind scalar) {
    switch (scalar) {
    case IR_ATTR_KIND_INT: return IR_ATTR_KIND_INTS;
    case IR_ATTR_KIND_FLOAT: return IR_ATTR_KIND_FLOATS;
    case IR_ATTR_KIND_STRING: return IR_ATTR_KIND_STRINGS;
    case IR_ATTR_KIND_TENSOR: return IR_ATTR_KIND_TENSORS;
    case IR_ATTR_KIND_SPARSE_TENSOR: return IR_ATTR_KIND_SPARSE_TENSORS;
    case IR_ATTR_KIND_GRAPH: return IR_ATTR_KIND_GRAPHS;
    case IR_ATTR_KIND_TYPE_PROTO: return IR_ATTR_KIND_TYPE_PROTOS;
    default: return IR_ATTR_KIND_UNDEF;
    }
}

/* One scalar attribute value into a (kind and the matching field; lists of one for tensor,
 * graph and type). */
static void parse_attr_scalar(Parser *P, const Ctx *c, IrAttr *a) {
    if (P->failed) return;
    Tok t = P->tok;
    if (tok_is_int(&t)) {
        a->kind = IR_ATTR_KIND_INT;
        parse_int(P, &a->i, "an integer");
    } else if (tok_is_float(&t)) {
        a->kind = IR_ATTR_KIND_FLOAT;
        parse_float(P, &a->f, "a float");
    } else if (t.kind == TOK_STRING) {
        a->kind = IR_ATTR_KIND_STRING;
        char *s = tok_decode(P, &a->s.len);
        a->s.data = s;
        if (s) lex(P);
    } else if (tok_is_ident(P, "graph")) {
        lex(P);
        const char *name = parse_name(P, "the subgraph's name");
        if (!name) return;
        uint32_t idx = ir_graph_add_subgraph(c->g, name);
        parse_body(P, c->g->subgraphs[idx], (int32_t)c->scope);
        a->kind = IR_ATTR_KIND_GRAPH;
        a->n = 1;
        a->graphs = ir_arena_alloc(P->arena, sizeof *a->graphs);
        a->graphs[0] = idx;
    } else if (tok_is_ident(P, "type") && peek_char(P) == '<') {
        lex(P);
        lex(P);
        a->kind = IR_ATTR_KIND_TYPE_PROTO;
        a->n = 1;
        a->types = ir_arena_alloc(P->arena, sizeof *a->types);
        parse_type(P, &a->types[0]);
        expect_punct(P, '>', "closing the type");
    } else if (t.kind == TOK_IDENT && (tok_is_ident(P, "tensor") || tok_is_ident(P, "sparse") ||
                                       peek_char(P) == '[')) {
        a->kind = accept_ident(P, "sparse") ? IR_ATTR_KIND_SPARSE_TENSOR : IR_ATTR_KIND_TENSOR;
        IrTensor *tensor = parse_tensor(P);
        if (!tensor) return;
        a->n = 1;
        a->tensors = tensor;
    } else if (tok_is_ident(P, "undef")) {
        lex(P);
        a->kind = IR_ATTR_KIND_UNDEF;
    } else {
        expected(P, "an attribute value");
    }
}

/* "[" v, v, ... "]", with an optional kind prefix (ints[...]) that empty lists need. */
static void parse_attr_list(Parser *P, const Ctx *c, IrAttr *a, IrAttrKind forced) {
    uint32_t line = P->tok.line, col = P->tok.col;
    expect_punct(P, '[', "opening the list");
    IrAttr *elems = NULL;
    uint32_t n = 0, cap = 0;
    IrAttrKind kind = forced;
    while (!P->failed && !tok_is_punct(P, ']')) {
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            IrAttr *e2 = realloc(elems, cap * sizeof *e2);
            IR_ASSERT(e2);
            elems = e2;
        }
        IrAttr *e = &elems[n];
        memset(e, 0, sizeof *e);
        uint32_t el_line = P->tok.line, el_col = P->tok.col;
        parse_attr_scalar(P, c, e);
        if (P->failed) break;
        n++;
        IrAttrKind k = list_of((IrAttrKind)e->kind);
        if (k == IR_ATTR_KIND_INTS && kind == IR_ATTR_KIND_FLOATS) k = IR_ATTR_KIND_FLOATS;
        if (k == IR_ATTR_KIND_FLOATS && kind == IR_ATTR_KIND_INTS && forced == IR_ATTR_KIND_UNDEF)
            kind = IR_ATTR_KIND_FLOATS; /* [1, 2.5]: floats */
        else if (kind == IR_ATTR_KIND_UNDEF) kind = k;
        if (k != kind || k == IR_ATTR_KIND_UNDEF) {
            error_at(P, el_line, el_col, "list elements of different kinds");
            break;
        }
        if (!accept_punct(P, ',')) break;
    }
    expect_punct(P, ']', "closing the list");
    if (!P->failed && kind == IR_ATTR_KIND_UNDEF)
        error_at(P, line, col, "an empty list needs its kind: ints[], floats[], strings[], ...");
    if (P->failed) {
        free(elems);
        return;
    }
    a->kind = (uint8_t)kind;
    a->n = n;
    size_t m = n ? n : 1;
    IrArena *ar = P->arena;
    switch (kind) {
    case IR_ATTR_KIND_INTS:
        a->ints = ir_arena_alloc(ar, m * sizeof *a->ints);
        for (uint32_t i = 0; i < n; i++) a->ints[i] = elems[i].i;
        break;
    case IR_ATTR_KIND_FLOATS:
        a->floats = ir_arena_alloc(ar, m * sizeof *a->floats);
        for (uint32_t i = 0; i < n; i++)
            a->floats[i] = elems[i].kind == IR_ATTR_KIND_INT ? (float)elems[i].i : elems[i].f;
        break;
    case IR_ATTR_KIND_STRINGS:
        a->strings = ir_arena_alloc(ar, m * sizeof *a->strings);
        for (uint32_t i = 0; i < n; i++) a->strings[i] = elems[i].s;
        break;
    case IR_ATTR_KIND_TENSORS:
    case IR_ATTR_KIND_SPARSE_TENSORS:
        a->tensors = ir_arena_alloc(ar, m * sizeof *a->tensors);
        for (uint32_t i = 0; i < n; i++) a->tensors[i] = elems[i].tensors[0];
        break;
    case IR_ATTR_KIND_GRAPHS:
        a->graphs = ir_arena_alloc(ar, m * sizeof *a->graphs);
        for (uint32_t i = 0; i < n; i++) a->graphs[i] = elems[i].graphs[0];
        break;
    default:
        a->types = ir_arena_alloc(ar, m * sizeof *a->types);
        for (uint32_t i = 0; i < n; i++) a->types[i] = elems[i].types[0];
        break;
    }
    free(elems);
}

static void parse_attr_value(Parser *P, const Ctx *c, IrAttr *a) {
    if (tok_is_punct(P, '[')) {
        parse_attr_list(P, c, a, IR_ATTR_KIND_UNDEF);
        return;
    }
    if (P->tok.kind == TOK_IDENT && peek_char(P) == '[')
        for (size_t i = 0; i < sizeof list_kinds / sizeof list_kinds[0]; i++)
            if (tok_is_ident(P, list_kinds[i].name)) {
                lex(P);
                parse_attr_list(P, c, a, list_kinds[i].kind);
                return;
            }
    parse_attr_scalar(P, c, a);
}

/* ---- statements -------------------------------------------------------------------- */

typedef struct Decl {
    ValRef ref;
    IrType type;
    bool has_type;
    IrQuant *quant;
    bool has_mem;
    int64_t mem_offset;
} Decl;

static bool parse_decl(Parser *P, Decl *d) {
    memset(d, 0, sizeof *d);
    d->type.rank = -1;
    if (!parse_valref(P, &d->ref)) return false;
    if (accept_punct(P, ':')) d->has_type = parse_type(P, &d->type);
    if (accept_ident(P, "quant")) d->quant = parse_quant(P);
    if (tok_is_ident(P, "mem") && peek_char(P) == '=') {
        lex(P);
        lex(P);
        d->has_mem = parse_int(P, &d->mem_offset, "the value's arena offset");
    }
    return !P->failed;
}

static uint32_t add_decl(Parser *P, const Ctx *c, const Decl *d, IrValueKind kind) {
    uint32_t v = ir_value_add(c->g, d->ref.name, d->has_type ? &d->type : NULL, kind);
    c->g->values[v].quant = d->quant;
    c->g->values[v].mem_offset = d->has_mem ? d->mem_offset
                                 : P->planned && c->g == P->root ? -1 : 0;
    scope_declare(P, c->scope, &d->ref, v);
    return v;
}

typedef struct NodeAttr {
    IrAttr a;
    uint32_t line, col;
} NodeAttr;

typedef struct OutSlot {
    bool present;
    Decl decl;
} OutSlot;

typedef struct InSlot {
    bool present;
    ValRef ref;
} InSlot;

/* The metadata after a node's arguments: name=, domain=, opset=, ir_op=, ir_op_domain=. */
typedef struct NodeMeta {
    const char *name, *domain, *ir_op, *ir_op_domain;
    int64_t opset;
    bool has_opset;
} NodeMeta;

static void parse_node_meta(Parser *P, NodeMeta *m) {
    while (!P->failed && P->tok.kind == TOK_IDENT && peek_char(P) == '=') {
        const char **target = NULL;
        if (tok_is_ident(P, "name")) target = &m->name;
        else if (tok_is_ident(P, "domain")) target = &m->domain;
        else if (tok_is_ident(P, "ir_op")) target = &m->ir_op;
        else if (tok_is_ident(P, "ir_op_domain")) target = &m->ir_op_domain;
        else if (!tok_is_ident(P, "opset")) {
            expected(P, "name=, domain=, opset=, ir_op= or '{'");
            return;
        }
        lex(P);
        lex(P); /* '=' */
        if (target) {
            *target = parse_name(P, "a name");
        } else {
            m->has_opset = parse_int(P, &m->opset, "the opset version");
        }
    }
}

/* Which IrOp a node is: its ir_op= override, else the (domain, op type) lookup. */
static IrOp node_op(Parser *P, const NodeMeta *m, const char *op_type, uint32_t line,
                    uint32_t col) {
    if (!m->ir_op) return ir_op_lookup(m->domain ? m->domain : "", op_type);
    if (strcmp(m->ir_op, "unknown") == 0) return IR_OP_UNKNOWN;
    IrOp op = ir_op_lookup(m->ir_op_domain ? m->ir_op_domain : "", m->ir_op);
    if (op == IR_OP_UNKNOWN) error_at(P, line, col, "ir_op '%s' is not in the op table", m->ir_op);
    return op;
}

static void parse_node(Parser *P, const Ctx *c) {
    OutSlot *outs = NULL;
    InSlot *ins = NULL;
    NodeAttr *attrs = NULL;
    uint32_t n_outs = 0, n_ins = 0, n_attrs = 0, cap_outs = 0, cap_ins = 0, cap_attrs = 0;
#define PUSH(arr, n, cap)                                                                 \
    do {                                                                                  \
        if ((n) == (cap)) {                                                               \
            (cap) = (cap) ? (cap) * 2 : 4;                                                \
            void *p_ = realloc((arr), (cap) * sizeof *(arr));                             \
            IR_ASSERT(p_);                                                                \
            (arr) = p_;                                                                   \
        }                                                                                 \
        memset(&(arr)[(n)], 0, sizeof *(arr));                                            \
        (n)++;                                                                            \
    } while (0)

    if (accept_punct(P, '(')) {
        expect_punct(P, ')', "in '() =' (a node without results)");
    } else {
        do {
            PUSH(outs, n_outs, cap_outs);
            OutSlot *o = &outs[n_outs - 1];
            if (accept_ident(P, "_")) continue;
            o->present = parse_decl(P, &o->decl);
        } while (!P->failed && accept_punct(P, ','));
    }
    expect_punct(P, '=', "after the node's results");
    uint32_t op_line = P->tok.line, op_col = P->tok.col;
    const char *op_type = parse_name(P, "an op name");
    expect_punct(P, '(', "opening the node's arguments");
    if (!P->failed && !tok_is_punct(P, ')')) {
        do {
            PUSH(ins, n_ins, cap_ins);
            InSlot *in = &ins[n_ins - 1];
            if (accept_ident(P, "_")) continue;
            in->present = parse_valref(P, &in->ref);
        } while (!P->failed && accept_punct(P, ','));
    }
    expect_punct(P, ')', "closing the node's arguments");
    NodeMeta meta;
    memset(&meta, 0, sizeof meta);
    parse_node_meta(P, &meta);
    if (accept_punct(P, '{')) {
        while (!P->failed && !tok_is_punct(P, '}')) {
            PUSH(attrs, n_attrs, cap_attrs);
            NodeAttr *na = &attrs[n_attrs - 1];
            na->line = P->tok.line;
            na->col = P->tok.col;
            na->a.name = parse_name(P, "an attribute name");
            expect_punct(P, '=', "after the attribute name");
            parse_attr_value(P, c, &na->a);
            na->a.present = true;
            na->a.id = IR_NONE;
            if (!accept_punct(P, ',')) break;
        }
        expect_punct(P, '}', "closing the attributes");
    }
#undef PUSH
    IrOp op = P->failed ? IR_OP_UNKNOWN : node_op(P, &meta, op_type, op_line, op_col);
    if (!P->failed && meta.has_opset && (meta.opset < INT32_MIN || meta.opset > INT32_MAX))
        error_at(P, op_line, op_col, "opset out of range");
    if (!P->failed) {
        IrGraph *g = c->g;
        const char *domain = meta.domain ? meta.domain : "";
        uint32_t id = ir_node_add(g, op, meta.name, n_ins, n_outs, n_attrs);
        IrNode *n = &g->nodes[id];
        n->op_type = op_type;
        n->domain = domain;
        n->opset = meta.has_opset ? (int32_t)meta.opset : (int32_t)ir_graph_opset(g, domain);
        const IrOpInfo *info = ir_op_info(op);
        for (uint32_t i = 0; i < n_attrs && !P->failed; i++) {
            IrAttr *slot = &n->attrs[i];
            if (op != IR_OP_UNKNOWN) {
                uint32_t aid = ir_attr_lookup(op, attrs[i].a.name);
                if (aid == IR_NONE) {
                    error_at(P, attrs[i].line, attrs[i].col, "op %s (opset %" PRId32
                             ") has no attribute '%s'", op_type, n->opset, attrs[i].a.name);
                    break;
                }
                slot = &n->attrs[aid - info->attr_base];
                if (slot->present) {
                    error_at(P, attrs[i].line, attrs[i].col, "attribute '%s' given twice",
                             attrs[i].a.name);
                    break;
                }
                attrs[i].a.id = slot->id;
                attrs[i].a.name = slot->name;
            }
            *slot = attrs[i].a;
        }
        for (uint32_t i = 0; i < n_ins; i++)
            if (ins[i].present) ref_add(P, REF_NODE_INPUT, g, c->scope, id, i, &ins[i].ref);
        for (uint32_t i = 0; i < n_outs && !P->failed; i++) {
            if (!outs[i].present) continue;
            uint32_t v = add_decl(P, c, &outs[i].decl, IR_VALUE_NODE);
            g->values[v].producer = id;
            g->values[v].result_index = i;
            g->nodes[id].outputs[i] = v;
        }
    }
    free(outs);
    free(ins);
    free(attrs);
}

static void parse_statement(Parser *P, const Ctx *c, int32_t parent_scope) {
    Decl d;
    if (accept_ident(P, "input")) {
        if (!parse_decl(P, &d)) return;
        uint32_t v = add_decl(P, c, &d, IR_VALUE_INPUT);
        ir_graph_add_input(c->g, v);
        if (accept_punct(P, '='))
            c->g->values[v].tensor = parse_initializer(P, &d.type, d.ref.name);
    } else if (accept_ident(P, "const")) {
        if (!parse_decl(P, &d)) return;
        uint32_t v = add_decl(P, c, &d, IR_VALUE_CONST);
        expect_punct(P, '=', "before the constant's data");
        if (!P->failed) c->g->values[v].tensor = parse_initializer(P, &d.type, d.ref.name);
    } else if (accept_ident(P, "outer")) {
        if (!parse_decl(P, &d)) return;
        uint32_t v = add_decl(P, c, &d, IR_VALUE_OUTER);
        ValRef from = d.ref;
        if (accept_ident(P, "from")) {
            if (accept_ident(P, "_")) return;
            if (!parse_valref(P, &from)) return;
        }
        if (parent_scope < 0) {
            error_at(P, from.line, from.col, "an outer value outside a subgraph needs 'from _'");
            return;
        }
        ref_add(P, REF_OUTER, c->g, (uint32_t)parent_scope, v, 0, &from);
    } else if (accept_ident(P, "output")) {
        do {
            uint32_t idx = c->g->n_outputs;
            ir_graph_add_output(c->g, IR_NONE);
            if (accept_ident(P, "_")) continue;
            ValRef r;
            if (parse_valref(P, &r)) ref_add(P, REF_GRAPH_OUTPUT, c->g, c->scope, 0, idx, &r);
        } while (!P->failed && accept_punct(P, ','));
    } else if (P->tok.kind == TOK_VALREF || tok_is_ident(P, "_") || tok_is_punct(P, '(')) {
        parse_node(P, c);
    } else {
        expected(P, "a statement (input, const, outer, output or a node)");
    }
}

static void parse_body(Parser *P, IrGraph *g, int32_t parent_scope) {
    if (P->failed) return;
    if (++P->depth > IR_TEXT_MAX_NESTING) {
        error_at(P, P->tok.line, P->tok.col, "graphs nested deeper than %d",
                 IR_TEXT_MAX_NESTING);
        return;
    }
    Ctx c = {g, scope_new(P, g, parent_scope)};
    expect_punct(P, '{', "opening the graph body");
    while (!P->failed && !tok_is_punct(P, '}') && P->tok.kind != TOK_EOF)
        parse_statement(P, &c, parent_scope);
    expect_punct(P, '}', "closing the graph body");
    P->depth--;
}

/* ---- the file ---------------------------------------------------------------------- */

static void parse_header(Parser *P) {
    IrGraph *g = P->root;
    if (!accept_ident(P, IR_TEXT_MAGIC)) {
        expected(P, "'" IR_TEXT_MAGIC " 1' at the start");
        return;
    }
    int64_t version = 0;
    if (parse_int(P, &version, "the text form version") && version != IR_TEXT_VERSION)
        error_at(P, 1, 1, "text form version %" PRId64 " is not supported (this is %d)", version,
                 IR_TEXT_VERSION);
    if (accept_ident(P, "model")) {
        for (;;) {
            if (accept_ident(P, "ir_version")) {
                expect_punct(P, '=', "after ir_version");
                parse_int(P, &g->ir_version, "the IR version");
            } else if (tok_is_ident(P, "producer") || tok_is_ident(P, "producer_version")) {
                bool is_version = tok_is_ident(P, "producer_version");
                lex(P);
                expect_punct(P, '=', "after the key");
                if (P->tok.kind != TOK_STRING) {
                    expected(P, "a string");
                    return;
                }
                size_t len = 0;
                const char *s = tok_decode(P, &len);
                if (!s) return;
                lex(P);
                if (is_version) g->producer_version = s;
                else g->producer_name = s;
            } else {
                break;
            }
        }
    }
    if (accept_ident(P, "opset")) {
        do {
            const char *domain = parse_name(P, "an opset domain");
            expect_punct(P, '=', "after the domain");
            int64_t v = 0;
            if (parse_int(P, &v, "the opset version")) ir_graph_set_opset(g, domain, v);
        } while (!P->failed && accept_punct(P, ','));
    }
    if (accept_ident(P, "plan")) {
        P->planned = true;
        const char *keys[] = {"arena", "lower_bound", "naive"};
        int64_t *fields[] = {&g->arena_size_bytes, &g->arena_lower_bound_bytes,
                             &g->arena_naive_bytes};
        for (int i = 0; i < 3 && !P->failed; i++) {
            if (!accept_ident(P, keys[i])) {
                char what[32];
                snprintf(what, sizeof what, "'%s='", keys[i]);
                expected(P, what);
                return;
            }
            expect_punct(P, '=', "after the plan key");
            parse_int(P, fields[i], "a size in bytes");
        }
    }
    if (accept_ident(P, "symbols")) {
        do {
            const char *sym = parse_name(P, "a symbol name");
            if (sym) ir_graph_sym(g, sym);
        } while (!P->failed && accept_punct(P, ','));
    }
}

IrGraph *ir_parse(const char *text, size_t len, Diag *d) {
    Parser P;
    memset(&P, 0, sizeof P);
    P.text = text ? text : "";
    P.len = text ? len : 0;
    P.line = 1;
    P.col = 1;
    P.d = d;
    P.root = ir_graph_new("");
    P.arena = P.root->arena;
    lex(&P);
    parse_header(&P);
    if (!P.failed) {
        if (!accept_ident(&P, "graph")) expected(&P, "'graph'");
        const char *name = parse_name(&P, "the graph's name");
        if (name) P.root->name = name;
        parse_body(&P, P.root, -1);
        if (!P.failed && P.tok.kind != TOK_EOF) expected(&P, "end of input after the graph");
    }
    if (!P.failed) resolve_refs(&P);
    for (uint32_t i = 0; i < P.n_scopes; i++) free(P.scopes[i].tab);
    free(P.scopes);
    free(P.refs);
    if (P.failed) {
        ir_graph_free(P.root);
        return NULL;
    }
    return P.root;
}
