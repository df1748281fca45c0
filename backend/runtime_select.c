/* Which parts of the runtime files a bundle ships: each file is cut into its top-level items
 * (a function, a macro, a table or type, a macro instantiation that defines a family of
 * functions, an #if block, the include guard), and an item is kept when the bundle's own
 * code reaches it, directly or through kept items. Identifiers are matched as text, so a
 * name in a comment or a string also keeps its item: the cut errs on the side of keeping.
 * An item whose names cannot be told (an anonymous enum, a statement form the scanner does
 * not know) is always kept. Items keep their order and their leading comments. CUDA's
 * kc_*.cuh files cut the same way: a template's `template <...>` line belongs to the item it
 * introduces, and every overload or specialization of a reached name is kept. */
#include <stdlib.h>
#include <string.h>

#include "backend/bundle.h"

#define RT_SELECT_MAX_NESTING 8 /* macros instantiating macros: deeper ones keep their item */

typedef struct RtItem {
    const char *text; /* from its leading comments and blank lines */
    size_t len;
    bool always;      /* kept whatever the bundle uses */
    bool keep;
    const char *macro; /* a macro instantiation: the macro's name (in the file text) */
    size_t macro_len;
} RtItem;

typedef struct RtName { /* an identifier an item defines (or may define: over-approximated) */
    const char *s;
    size_t len;
    uint32_t item;
} RtName;

typedef struct RtScan {
    RtItem *items;
    uint32_t n_items, cap_items;
    RtName *names;
    uint32_t n_names, cap_names;
    RtName *refs; /* macro instantiations' expansions (their calls and uses) */
    uint32_t n_refs, cap_refs;
    char **owned; /* names made by pasting (macro instantiations): freed at the end */
    uint32_t n_owned, cap_owned;
} RtScan;

static bool is_id0(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_id(char c) { return is_id0(c) || (c >= '0' && c <= '9'); }

static void grow(void **p, uint32_t *cap, uint32_t need, size_t size) {
    if (need <= *cap) return;
    *cap = *cap ? 2 * *cap : 64;
    while (*cap < need) *cap *= 2;
    *p = realloc(*p, *cap * size);
    IR_ASSERT(*p);
}

static void add_name(RtScan *s, const char *id, size_t len, uint32_t item) {
    grow((void **)&s->names, &s->cap_names, s->n_names + 1, sizeof *s->names);
    s->names[s->n_names++] = (RtName){id, len, item};
}

/* Past a comment, string or character literal at p (p itself when none starts there). */
static const char *skip_lexeme(const char *p, const char *end) {
    if (p + 1 < end && p[0] == '/' && p[1] == '*') {
        const char *q = p + 2;
        while (q + 1 < end && !(q[0] == '*' && q[1] == '/')) q++;
        return q + 1 < end ? q + 2 : end;
    }
    if (p + 1 < end && p[0] == '/' && p[1] == '/') {
        while (p < end && *p != '\n') p++;
        return p;
    }
    if (*p == '"' || *p == '\'') {
        char quote = *p++;
        while (p < end && *p != quote && *p != '\n') p += (*p == '\\' && p + 1 < end) ? 2 : 1;
        return p < end ? p + 1 : end;
    }
    return p;
}

static const char *line_end(const char *p, const char *end) {
    while (p < end && *p != '\n') p++;
    return p < end ? p + 1 : end;
}

/* The end of a preprocessor line at p: continuation lines and comments that run on past
 * the line's end included. */
static const char *directive_end(const char *p, const char *end) {
    while (p < end) {
        const char *q = skip_lexeme(p, end);
        if (q != p) {
            p = q;
            continue;
        }
        if (*p == '\\' && p + 1 < end && (p[1] == '\n' || p[1] == '\r')) {
            p = line_end(p, end);
            continue;
        }
        if (*p == '\n') return p + 1;
        p++;
    }
    return end;
}

/* The directive's word at p ("#  ifdef X": "ifdef"), its length in *n. */
static const char *directive_word(const char *p, const char *end, size_t *n) {
    p++; /* '#' */
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    const char *w = p;
    while (p < end && is_id(*p)) p++;
    *n = (size_t)(p - w);
    return w;
}

static bool word_is(const char *w, size_t n, const char *s) { return strlen(s) == n && strncmp(w, s, n) == 0; }

/* Whether w (n chars) is the keyword of an anonymous tag: `enum {`, `struct {` name nothing. */
static bool is_tag_keyword(const char *w, size_t n) {
    return word_is(w, n, "enum") || word_is(w, n, "struct") || word_is(w, n, "union") ||
           word_is(w, n, "class");
}

/* Whether the identifier w (n chars) is a compiler's attribute word, __name__ (reserved:
 * `__launch_bounds__(...)`, `__align__(16)`, `__attribute__((...))`), which a declaration
 * uses and never defines: every kernel behind one would otherwise keep every other. */
static bool is_attribute(const char *w, size_t n) {
    return n > 4 && w[0] == '_' && w[1] == '_' && w[n - 1] == '_' && w[n - 2] == '_';
}

/* Names a span of code may define: identifiers right before a '(' at brace depth 0 (function
 * names; macro names of instantiations, harmless), the last identifier before a ';' at depth
 * 0 (typedef names, declarations), identifiers before '[' or '=' at depth 0 (tables), the
 * identifier before a '{' at depth 0 (a struct, union or enum tag, also behind an attribute:
 * `struct __align__(16) KcVec {`), and #define names; outside parentheses (parameters define
 * nothing). Over-approximated on purpose. */
static void scan_defs(RtScan *s, const char *p, const char *end, uint32_t item) {
    int depth = 0, parens = 0;
    const char *last_id = NULL;
    size_t last_len = 0;
    bool line_start = true;
    while (p < end) {
        const char *q = skip_lexeme(p, end);
        if (q != p) {
            p = q;
            continue;
        }
        char c = *p;
        if (line_start && c == '#') {
            size_t n;
            const char *w = directive_word(p, end, &n);
            if (word_is(w, n, "define")) {
                const char *id = w + n;
                while (id < end && (*id == ' ' || *id == '\t')) id++;
                const char *e = id;
                while (e < end && is_id(*e)) e++;
                if (e > id) add_name(s, id, (size_t)(e - id), item);
            }
            p = directive_end(p, end);
            continue;
        }
        if (c == '\n') line_start = true;
        else if (c != ' ' && c != '\t' && c != '\r') line_start = false;
        if (is_id0(c)) {
            const char *e = p;
            while (e < end && is_id(*e)) e++;
            last_id = p;
            last_len = (size_t)(e - p);
            p = e;
            continue;
        }
        bool tag = c == '{' && last_id && !is_tag_keyword(last_id, last_len);
        if (depth == 0 && parens == 0 && last_id && !is_attribute(last_id, last_len) &&
            (c == '(' || c == ';' || c == '[' || c == '=' || tag))
            add_name(s, last_id, last_len, item);
        if (c == '{') depth++;
        if (c == '}') depth--;
        if (c == '(') parens++;
        if (c == ')') parens--;
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') last_id = NULL;
        p++;
    }
}

static uint32_t new_item(RtScan *s, const char *from, const char *to, bool always) {
    grow((void **)&s->items, &s->cap_items, s->n_items + 1, sizeof *s->items);
    s->items[s->n_items] = (RtItem){from, (size_t)(to - from), always, false, NULL, 0};
    return s->n_items++;
}

/* Whether the identifier at p (len n) is a function-like macro #defined in an earlier item. */
static bool is_fn_macro(const RtScan *s, const char *p, size_t n) {
    for (uint32_t i = 0; i < s->n_names; i++) {
        const RtName *nm = &s->names[i];
        if (nm->len != n || strncmp(nm->s, p, n) != 0) continue;
        if (nm->s[nm->len] == '(') return true; /* "#define NAME(": '(' right after the name */
    }
    return false;
}

/* The end of a code item at p: a ';' at depth 0, or the '}' that closes the outer brace when
 * no ';' or declarator follows on its line (a function), or, for a macro instantiation, the
 * ')' that closes its arguments. */
static const char *code_end(const RtScan *s, const char *p, const char *end, bool *instantiation) {
    const char *start = p;
    while (start < end && is_id(*start)) start++;
    *instantiation = start > p && start < end && *start == '(' && is_fn_macro(s, p, (size_t)(start - p));
    int braces = 0, parens = 0;
    while (p < end) {
        const char *q = skip_lexeme(p, end);
        if (q != p) {
            p = q;
            continue;
        }
        char c = *p++;
        if (c == '(') parens++;
        if (c == ')' && --parens == 0 && braces == 0 && *instantiation) {
            const char *r = p;
            for (;;) { /* spaces and trailing comments end the line too */
                while (r < end && (*r == ' ' || *r == '\t')) r++;
                if (r + 1 >= end || r[0] != '/' || (r[1] != '*' && r[1] != '/')) break;
                r = skip_lexeme(r, end);
            }
            if (r >= end || *r == '\n' || *r == '\r') return line_end(r, end);
        }
        if (c == '{') braces++;
        if (c == '}' && --braces == 0 && parens == 0) {
            const char *r = p;
            while (r < end && (*r == ' ' || *r == '\t')) r++;
            if (r >= end || *r == '\n' || *r == '\r') return line_end(p, end);
        }
        if (c == ';' && braces == 0 && parens == 0) return line_end(p, end);
    }
    return end;
}

/* Cuts text into items; false when it does not read as the scanner expects (unbalanced #if). */
static bool scan_file(RtScan *s, const char *text) {
    const char *p = text, *end = text + strlen(text), *pending = text;
    bool guard_seen = false;
    int guard_depth = 0; /* 1 inside the include guard */
    while (p < end) {
        const char *t = p;
        while (t < end && (*t == ' ' || *t == '\t' || *t == '\r')) t++;
        if (t >= end) break;
        if (*t == '\n') { /* a blank line joins the next item */
            p = t + 1;
            continue;
        }
        if (t + 1 < end && t[0] == '/' && (t[1] == '*' || t[1] == '/')) { /* joins the next item */
            const char *q = skip_lexeme(t, end), *r = q;
            while (r < end && (*r == ' ' || *r == '\t' || *r == '\r')) r++;
            p = r < end && *r == '\n' ? r + 1 : q;
            continue;
        }
        if (*t == '#') {
            size_t n;
            const char *w = directive_word(t, end, &n);
            const char *e = directive_end(t, end);
            bool opens = word_is(w, n, "if") || word_is(w, n, "ifdef") || word_is(w, n, "ifndef");
            if (opens && !guard_seen && word_is(w, n, "ifndef") &&
                (strncmp(w + n, " KILN_RT_", 9) == 0 || strncmp(w + n, " KILN_KC_", 9) == 0)) {
                /* the include guard and its #define */
                guard_seen = true;
                guard_depth = 1;
                e = directive_end(e, end);
                new_item(s, pending, e, true);
            } else if (opens) { /* an #if block: one item, to its #endif */
                int depth = 1;
                const char *q = e;
                while (q < end && depth > 0) {
                    const char *r = q;
                    while (r < end && (*r == ' ' || *r == '\t')) r++;
                    if (r < end && *r == '#') {
                        size_t m;
                        const char *v = directive_word(r, end, &m);
                        if (word_is(v, m, "if") || word_is(v, m, "ifdef") || word_is(v, m, "ifndef"))
                            depth++;
                        else if (word_is(v, m, "endif"))
                            depth--;
                        q = directive_end(r, end);
                    } else {
                        const char *lex = skip_lexeme(r, end);
                        q = line_end(lex > r ? lex - 1 : r, end);
                    }
                }
                if (depth > 0) return false;
                uint32_t it = new_item(s, pending, q, false);
                uint32_t before = s->n_names;
                scan_defs(s, e, q, it);
                s->items[it].always = s->n_names == before;
                e = q;
            } else if (word_is(w, n, "endif") && guard_depth == 1) {
                guard_depth = 0;
                new_item(s, pending, e, true);
            } else if (word_is(w, n, "define")) {
                uint32_t it = new_item(s, pending, e, false);
                uint32_t before = s->n_names;
                scan_defs(s, t, e, it);
                s->items[it].always = s->n_names == before;
            } else if (word_is(w, n, "undef")) { /* goes with the macro it ends */
                const char *id = w + n;
                while (id < e && (*id == ' ' || *id == '\t')) id++;
                const char *ie = id;
                while (ie < e && is_id(*ie)) ie++;
                uint32_t it = new_item(s, pending, e, ie == id);
                if (ie > id) add_name(s, id, (size_t)(ie - id), it);
            } else { /* #include, #pragma, #error: kept */
                new_item(s, pending, e, true);
            }
            p = pending = e;
            continue;
        }
        bool inst;
        const char *e = code_end(s, t, end, &inst);
        uint32_t it = new_item(s, pending, e, false);
        if (inst) {
            const char *m = t;
            while (is_id(*m)) m++;
            s->items[it].macro = t;
            s->items[it].macro_len = (size_t)(m - t);
        } else {
            uint32_t before = s->n_names;
            scan_defs(s, t, e, it);
            s->items[it].always = s->n_names == before;
        }
        p = pending = e;
    }
    if (pending < end) new_item(s, pending, end, true); /* trailing comments */
    return true;
}

/* The text of macro `name`'s #define (its parameters at *params, body after them). */
static const char *macro_def(const RtScan *s, const char *name, size_t n, const char **body) {
    for (uint32_t i = 0; i < s->n_names; i++) {
        const RtName *nm = &s->names[i];
        if (nm->len == n && strncmp(nm->s, name, n) == 0 && nm->s[n] == '(') {
            const char *q = nm->s + n;
            while (*q && *q != ')') q++;
            *body = *q ? q + 1 : q;
            return nm->s + n + 1;
        }
    }
    return NULL;
}

/* The k-th comma-separated argument of the call at args ('(' excluded) into out. */
static bool nth_arg(const char *args, int k, char *out, size_t cap) {
    int depth = 0, i = 0;
    const char *a = args;
    for (const char *p = args;; p++) {
        if (*p == '(') depth++;
        if ((*p == ',' && depth == 0) || (*p == ')' && depth == 0) || !*p) {
            if (i == k) {
                while (a < p && (*a == ' ' || *a == '\t' || *a == '\n')) a++;
                const char *b = p;
                while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\n')) b--;
                if ((size_t)(b - a) + 1 > cap) return false;
                memcpy(out, a, (size_t)(b - a));
                out[b - a] = 0;
                return true;
            }
            if (*p != ',') return false;
            i++;
            a = p + 1;
        }
        if (*p == ')') depth--;
    }
}

/* Index of parameter id (len n) in the list at params, or -1. */
static int param_index(const char *params, const char *id, size_t n) {
    int k = 0;
    for (const char *p = params; *p && *p != ')';) {
        while (*p == ' ' || *p == ',') p += *p == ',' ? (k++, 1) : 1;
        const char *e = p;
        while (is_id(*e)) e++;
        if ((size_t)(e - p) == n && strncmp(p, id, n) == 0) return k;
        if (e == p) p++;
        else p = e;
    }
    return -1;
}

/* The body of the macro with params at params (body..bend), its parameters replaced by the
 * arguments at args and A ## B pasted, comments dropped and continuation lines joined:
 * what the instantiation defines, as text. malloc'd. */
static char *expand(const char *params, const char *args, const char *body, const char *bend) {
    size_t cap = (size_t)(bend - body) * 2 + 64, n = 0;
    char *out = malloc(cap);
    IR_ASSERT(out);
    for (const char *p = body; p < bend;) {
        char arg[256];
        const char *piece = p;
        size_t plen = 1;
        const char *q = skip_lexeme(p, bend);
        if (q != p) { /* a comment becomes a space, a literal stays */
            bool comment = p[0] == '/';
            piece = comment ? " " : p;
            plen = comment ? 1 : (size_t)(q - p);
            p = q;
        } else if (p[0] == '#' && p + 1 < bend && p[1] == '#') { /* paste: no space around */
            while (n > 0 && (out[n - 1] == ' ' || out[n - 1] == '\t')) n--;
            p += 2;
            while (p < bend && (*p == ' ' || *p == '\t')) p++;
            continue;
        } else if (p[0] == '\\' && p + 1 < bend && (p[1] == '\n' || p[1] == '\r')) {
            piece = "\n";
            p = line_end(p, bend);
        } else if (is_id0(*p)) {
            const char *e = p;
            while (e < bend && is_id(*e)) e++;
            int k = param_index(params, p, (size_t)(e - p));
            plen = (size_t)(e - p);
            if (k >= 0 && nth_arg(args, k, arg, sizeof arg)) {
                piece = arg;
                plen = strlen(arg);
            }
            p = e;
        } else {
            p++;
        }
        if (n + plen + 1 > cap) {
            cap = 2 * (n + plen + 1);
            out = realloc(out, cap);
            IR_ASSERT(out);
        }
        memcpy(out + n, piece, plen);
        n += plen;
    }
    out[n] = 0;
    return out;
}

/* Macro instantiation `macro(args...)` for item it: the names its expansion defines join
 * s->names, its expansion joins the item's references (s->refs); instantiations inside it are
 * expanded in turn. An expansion we cannot read keeps the item whatever the bundle uses. */
static void instantiate(RtScan *s, uint32_t it, const char *macro, size_t mlen, const char *args,
                        int level) {
    const char *body, *params = macro_def(s, macro, mlen, &body);
    if (!params || level > RT_SELECT_MAX_NESTING) {
        s->items[it].always = true;
        return;
    }
    char *x = expand(params, args, body, directive_end(body, body + strlen(body)));
    size_t len = strlen(x);
    grow((void **)&s->owned, &s->cap_owned, s->n_owned + 1, sizeof *s->owned);
    s->owned[s->n_owned++] = x;
    grow((void **)&s->refs, &s->cap_refs, s->n_refs + 1, sizeof *s->refs);
    s->refs[s->n_refs++] = (RtName){x, len, it};
    scan_defs(s, x, x + len, it);
    int depth = 0;
    for (const char *p = x; *p;) { /* instantiations inside: at depth 0, a macro and '(' */
        if (!is_id0(*p)) {
            depth += (*p == '{') - (*p == '}');
            p++;
            continue;
        }
        const char *e = p;
        while (is_id(*e)) e++;
        if (depth == 0 && *e == '(' && is_fn_macro(s, p, (size_t)(e - p)))
            instantiate(s, it, p, (size_t)(e - p), e + 1, level + 1);
        p = e;
    }
}

static int name_cmp(const void *a, const void *b) {
    const RtName *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = strncmp(x->s, y->s, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Whether an identifier that ends at e is the stem of a runtime file's name: `.h` or `.cuh`
 * follows, and no identifier character after it (an #include line, a file's own header
 * comment "rt_cast.h: ..."). */
static bool is_file_name(const char *e, const char *end) {
    size_t n = (size_t)(end - e);
    if (n >= 2 && strncmp(e, ".h", 2) == 0) return n == 2 || !is_id(e[2]);
    return n >= 4 && strncmp(e, ".cuh", 4) == 0 && (n == 4 || !is_id(e[4]));
}

/* Keeps every item that defines an identifier of text[0..len), and what those reach, but
 * not the stem of an included file's name. */
static void reach(RtScan *s, const char *text, size_t len, uint32_t **stack, uint32_t *n_stack,
                  uint32_t *cap_stack) {
    if (s->n_names == 0) return; /* nothing to find (and bsearch takes no NULL array) */
    for (const char *p = text, *end = text + len; p < end;) {
        if (!is_id0(*p) || (p > text && is_id(p[-1]))) {
            p++;
            continue;
        }
        const char *e = p;
        while (e < end && is_id(*e)) e++;
        if (is_file_name(e, end)) { /* "rt_cast.h" names a file, not rt_cast */
            p = e;
            continue;
        }
        RtName key = {p, (size_t)(e - p), 0};
        RtName *hit = bsearch(&key, s->names, s->n_names, sizeof *s->names, name_cmp);
        if (hit) {
            while (hit > s->names && name_cmp(hit - 1, &key) == 0) hit--;
            for (; hit < s->names + s->n_names && name_cmp(hit, &key) == 0; hit++) {
                RtItem *it = &s->items[hit->item];
                if (it->keep) continue;
                it->keep = true;
                grow((void **)stack, cap_stack, *n_stack + 1, sizeof **stack);
                (*stack)[(*n_stack)++] = hit->item;
            }
        }
        p = e;
    }
}

static void push(uint32_t **stack, uint32_t *n, uint32_t *cap, uint32_t item) {
    grow((void **)stack, cap, *n + 1, sizeof **stack);
    (*stack)[(*n)++] = item;
}

char **bundle_runtime_select(const char *const *names, uint32_t n, const char *const *roots,
                             uint32_t n_roots) {
    RtScan s = {0};
    uint32_t *first = calloc(n + 1, sizeof *first);
    char **out = calloc(n + 1, sizeof *out);
    IR_ASSERT(first && out);
    bool ok = true;
    for (uint32_t f = 0; f < n && ok; f++) {
        first[f] = s.n_items;
        ok = scan_file(&s, bundle_runtime_file(names[f])->text);
    }
    first[n] = s.n_items;
    uint32_t *stack = NULL, n_stack = 0, cap_stack = 0;
    if (ok) {
        for (uint32_t i = 0; i < s.n_items; i++) {
            if (!s.items[i].macro) continue;
            uint32_t before = s.n_names;
            instantiate(&s, i, s.items[i].macro, s.items[i].macro_len,
                        s.items[i].macro + s.items[i].macro_len + 1, 0);
            if (s.n_names == before) s.items[i].always = true; /* defines nothing we can see */
        }
        if (s.n_names > 1) qsort(s.names, s.n_names, sizeof *s.names, name_cmp);
        for (uint32_t i = 0; i < s.n_items; i++)
            if (s.items[i].always) {
                s.items[i].keep = true;
                push(&stack, &n_stack, &cap_stack, i);
            }
        for (uint32_t r = 0; r < n_roots; r++)
            if (roots[r]) reach(&s, roots[r], strlen(roots[r]), &stack, &n_stack, &cap_stack);
        while (n_stack > 0) {
            uint32_t it = stack[--n_stack];
            reach(&s, s.items[it].text, s.items[it].len, &stack, &n_stack, &cap_stack);
            if (!s.items[it].macro) continue;
            for (uint32_t k = 0; k < s.n_refs; k++) /* what its expansion calls */
                if (s.refs[k].item == it)
                    reach(&s, s.refs[k].s, s.refs[k].len, &stack, &n_stack, &cap_stack);
        }
    }
    for (uint32_t f = 0; f < n; f++) {
        const char *text = bundle_runtime_file(names[f])->text;
        if (!ok) { /* a file the scanner cannot cut ships whole */
            out[f] = strdup(text);
            IR_ASSERT(out[f]);
            continue;
        }
        size_t len = 0;
        for (uint32_t i = first[f]; i < first[f + 1]; i++) len += s.items[i].keep ? s.items[i].len : 0;
        out[f] = malloc(len + 1);
        IR_ASSERT(out[f]);
        len = 0;
        for (uint32_t i = first[f]; i < first[f + 1]; i++)
            if (s.items[i].keep) {
                memcpy(out[f] + len, s.items[i].text, s.items[i].len);
                len += s.items[i].len;
            }
        out[f][len] = 0;
    }
    free(stack);
    free(first);
    for (uint32_t i = 0; i < s.n_owned; i++) free(s.owned[i]);
    free(s.owned);
    free(s.refs);
    free(s.names);
    free(s.items);
    return out;
}

uint32_t bundle_runtime_items(const char *text) {
    RtScan s = {0};
    bool ok = scan_file(&s, text);
    size_t at = 0; /* the items tile the text: each starts where the last ended */
    for (uint32_t i = 0; ok && i < s.n_items; i++) {
        ok = s.items[i].text == text + at;
        at += s.items[i].len;
    }
    ok = ok && at == strlen(text);
    uint32_t n = ok ? s.n_items : 0;
    free(s.names);
    free(s.items);
    return n;
}
