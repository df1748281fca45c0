/* The shared backend core (bundle.h): where values live (input and output fields, the
 * weights blob) and the writing of the bundle's files. Output is deterministic: the same
 * graph gives byte-identical files. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/bundle.h"

static const char *const c_keywords[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch",
    "typedef", "union", "unsigned", "void", "volatile", "while", "in", "out", "w", "a", "rc",
    NULL};

/* The names given in one namespace (struct fields): an open-addressing hash set, each name
 * keeping the next suffix to try after it, so that n names that clash cost O(n) lookups
 * instead of O(n^2) (or O(n^3)) string comparisons. Strings are borrowed (arena). */
typedef struct NameSet {
    const char **key;  /* NULL: an empty slot */
    uint32_t *next;    /* per slot: the next suffix for names built on this one */
    uint32_t cap, n;
} NameSet;

#define NAMESET_FNV_SEED 2166136261u
#define NAMESET_FNV_PRIME 16777619u

static uint32_t nameset_slot(const NameSet *t, const char *s) {
    uint32_t h = NAMESET_FNV_SEED;
    for (const char *p = s; *p; p++) h = (h ^ (uint8_t)*p) * NAMESET_FNV_PRIME;
    uint32_t i = h & (t->cap - 1);
    while (t->key[i] && strcmp(t->key[i], s) != 0) i = (i + 1) & (t->cap - 1);
    return i;
}

static void nameset_init(NameSet *t, uint32_t expect) {
    t->cap = 16;
    while (t->cap < 2 * expect + 16) t->cap *= 2;
    t->key = calloc(t->cap, sizeof *t->key);
    t->next = calloc(t->cap, sizeof *t->next);
    IR_ASSERT(t->key && t->next);
    t->n = 0;
}

static void nameset_free(NameSet *t) {
    free(t->key);
    free(t->next);
}

static bool name_taken(const NameSet *t, const char *s) { return t->key[nameset_slot(t, s)]; }

static void name_take(NameSet *t, const char *s) {
    if (2 * (t->n + 1) > t->cap) { /* grow: rehash every key */
        NameSet big;
        nameset_init(&big, t->cap);
        for (uint32_t i = 0; i < t->cap; i++)
            if (t->key[i]) {
                uint32_t j = nameset_slot(&big, t->key[i]);
                big.key[j] = t->key[i];
                big.next[j] = t->next[i];
                big.n++;
            }
        nameset_free(t);
        *t = big;
    }
    uint32_t i = nameset_slot(t, s);
    if (!t->key[i]) {
        t->key[i] = s;
        t->next[i] = 2;
        t->n++;
    }
}

/* A C identifier from an ONNX name, unique among the taken names: the name with other
 * characters as '_', then base_2, base_3... (the first one free; names are never given
 * back, so the search for a base resumes where it last stopped). */
static const char *sanitize(IrArena *ar, const char *name, NameSet *taken) {
    size_t len = strlen(name);
    char *s = ir_arena_alloc(ar, len + 16);
    size_t k = 0;
    if (len == 0 || (name[0] >= '0' && name[0] <= '9')) s[k++] = 'v';
    for (size_t i = 0; i < len && k < len + 8; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        s[k++] = ok ? c : '_';
    }
    s[k] = 0;
    for (int i = 0; c_keywords[i]; i++)
        if (strcmp(s, c_keywords[i]) == 0) {
            s[k++] = '_';
            s[k] = 0;
        }
    uint32_t b = nameset_slot(taken, s);
    if (!taken->key[b]) return s;
    const char *base = taken->key[b];
    for (uint32_t suffix = taken->next[b];; suffix++) {
        char *t = ir_arena_alloc(ar, strlen(base) + 16);
        sprintf(t, "%s_%u", base, suffix);
        if (!name_taken(taken, t)) {
            taken->next[nameset_slot(taken, base)] = suffix + 1;
            return t;
        }
    }
}

static bool write_file(const char *dir, const char *file, const void *data, size_t len,
                       Diag *d) {
    size_t plen = strlen(dir) + strlen(file) + 2;
    char *path = malloc(plen);
    snprintf(path, plen, "%s/%s", dir, file);
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(data, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = false;
    if (!ok) diag_error(d, "%s: cannot write: %s", path, strerror(errno));
    free(path);
    return ok;
}

static bool write_writer(const char *dir, const char *file, CWriter *w, Diag *d) {
    size_t len;
    char *buf = cw_take(w, &len);
    bool ok = write_file(dir, file, buf, len, d);
    free(buf);
    return ok;
}

bool bundle_write_text(const char *dir, const char *file, CWriter *w, Diag *d) {
    return write_writer(dir, file, w, d);
}

bool bundle_write_raw(const char *dir, const char *file, const void *data, size_t len, Diag *d) {
    return write_file(dir, file, data, len, d);
}

const BundleRuntimeFile *bundle_runtime_file(const char *name) {
    for (unsigned i = 0; i < bundle_n_runtime_files; i++)
        if (strcmp(bundle_runtime_files[i].name, name) == 0) return &bundle_runtime_files[i];
    return NULL;
}

bool bundle_write_runtime(const char *dir, const char *const *names, uint32_t n,
                          char *const *texts, Diag *d) {
    bool ok = true;
    for (uint32_t i = 0; i < n && ok; i++) {
        const BundleRuntimeFile *rf = bundle_runtime_file(names[i]);
        IR_ASSERT(rf);
        const char *text = texts ? texts[i] : rf->text;
        ok &= write_file(dir, rf->name, text, strlen(text), d);
    }
    return ok;
}

bool bundle_make_dir(const char *dir, Diag *d) {
    if (mkdir(dir, 0777) == 0 || errno == EEXIST) return true;
    diag_error(d, "%s: cannot create: %s", dir, strerror(errno));
    return false;
}

const char *bundle_ctype(IrDType t) {
    switch (t) {
    case IR_DTYPE_F32: return "float";
    case IR_DTYPE_F64: return "double";
    case IR_DTYPE_I8: return "int8_t";
    case IR_DTYPE_I16: return "int16_t";
    case IR_DTYPE_I32: return "int32_t";
    case IR_DTYPE_I64: return "int64_t";
    case IR_DTYPE_U16: return "uint16_t";
    case IR_DTYPE_U32: return "uint32_t";
    case IR_DTYPE_U64: return "uint64_t";
    case IR_DTYPE_F16: return "uint16_t";  /* IEEE binary16 bits; see rt_common.h */
    case IR_DTYPE_BF16: return "uint16_t"; /* bfloat16 bits */
    case IR_DTYPE_C64: return "float";     /* (re, im) pairs */
    case IR_DTYPE_C128: return "double";
    default: return "uint8_t"; /* u8, bool, float8 bits, packed 4- and 2-bit pairs */
    }
}

const char *bundle_fmt(BundleCtx *b, const char *fmt, ...) {
    CWriter tmp;
    cw_init(&tmp);
    va_list ap;
    va_start(ap, fmt);
    cw_vraw(&tmp, fmt, ap);
    va_end(ap);
    const char *s = ir_arena_strdup(&b->scratch, tmp.buf ? tmp.buf : "");
    cw_free(&tmp);
    return s;
}

const char *bundle_upper_name(BundleCtx *b) {
    if (!b->upper) {
        char *u = ir_arena_strdup(&b->scratch, b->opts->name);
        for (char *p = u; *p; p++)
            if (*p >= 'a' && *p <= 'z') *p = (char)(*p - 'a' + 'A');
        b->upper = u;
    }
    return b->upper;
}

const char *bundle_type_str(BundleCtx *b, const IrType *t) {
    CWriter tmp;
    cw_init(&tmp);
    cw_raw(&tmp, "%s[", ir_dtype_name((IrDType)t->dtype));
    for (int i = 0; i < t->rank; i++) cw_raw(&tmp, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    cw_raw(&tmp, "]");
    if (t->layout == IR_LAYOUT_NHWC) cw_raw(&tmp, " NHWC"); /* dims listed in (N,H,W,C) order */
    const char *s = ir_arena_strdup(&b->scratch, tmp.buf);
    cw_free(&tmp);
    return s;
}

bool bundle_has_count(const IrGraph *g, uint32_t v) {
    if (v == IR_NONE || v >= g->n_values) return false;
    const IrValue *val = &g->values[v];
    if (val->kind != IR_VALUE_NODE || val->producer == IR_NONE) return false;
    const IrNode *n = &g->nodes[val->producer];
    switch (n->op) {
    case IR_OP_NON_ZERO:
    case IR_OP_COMPRESS:
    case IR_OP_NON_MAX_SUPPRESSION: return val->result_index == 0;
    case IR_OP_UNIQUE: return val->result_index != 2; /* inverse_indices has a fixed size */
    default: return false;
    }
}

/* The struct field of each output slot, in order: outputs have their own namespace, struct
 * NAME_outputs. A slot with a run-time count (bundle_has_count) also owns the field
 * FIELD_count, which the counting kernel's code writes: no other field may take that name, so
 * such a slot moves on to FIELD_2... while FIELD_count is taken. */
static const char **output_names(BundleCtx *b, const IrGraph *g) {
    const char **names = ir_arena_alloc(&b->scratch, (g->n_outputs + 1) * sizeof *names);
    NameSet taken;
    nameset_init(&taken, 2 * g->n_outputs);
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t v = g->outputs[i];
        bool counted = bundle_has_count(g, v);
        for (;;) {
            const char *f = sanitize(&b->scratch, g->values[v].name, &taken);
            name_take(&taken, f); /* taken either way: a refused name stays refused */
            const char *fc = counted ? bundle_fmt(b, "%s_count", f) : NULL;
            if (fc && name_taken(&taken, fc)) continue;
            if (fc) name_take(&taken, fc);
            names[i] = f;
            break;
        }
    }
    nameset_free(&taken);
    return names;
}

static void assign_fields(BundleCtx *b, const IrGraph *g, const char **outf) {
    NameSet taken;
    nameset_init(&taken, g->n_inputs);
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        uint32_t v = g->inputs[i];
        b->field[v] = sanitize(&b->scratch, g->values[v].name, &taken);
        name_take(&taken, b->field[v]);
    }
    nameset_free(&taken);
    /* A value produced by a node and listed as an output is written in place; inputs,
     * constants and repeats are copied. */
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t v = g->outputs[i];
        if (g->values[v].kind == IR_VALUE_NODE && !b->field[v]) b->field[v] = outf[i];
    }
}

/* Lists g and its subgraphs, depth first, into b->graphs. */
static void collect_graphs(BundleCtx *b, const IrGraph *g, uint32_t *cap) {
    if (b->n_graphs == *cap) {
        *cap = *cap ? 2 * *cap : 4;
        b->graphs = realloc(b->graphs, *cap * sizeof *b->graphs);
        IR_ASSERT(b->graphs);
    }
    b->graphs[b->n_graphs++] = g;
    for (uint32_t s = 0; s < g->n_subgraphs; s++) collect_graphs(b, g->subgraphs[s], cap);
}

/* Offsets in the weights blob: the root's constants first, then each subgraph's in the
 * order of b->graphs. */
static void assign_weights(BundleCtx *b, const IrGraph *g) {
    uint32_t cap = 0;
    collect_graphs(b, g, &cap);
    b->graph_weight_offset = calloc(b->n_graphs, sizeof *b->graph_weight_offset);
    IR_ASSERT(b->graph_weight_offset);
    b->graph_weight_offset[0] = b->weight_offset;
    int64_t off = 0;
    for (uint32_t gi = 0; gi < b->n_graphs; gi++) {
        const IrGraph *h = b->graphs[gi];
        if (gi > 0) {
            b->graph_weight_offset[gi] = calloc(h->n_values + 1, sizeof(int64_t));
            IR_ASSERT(b->graph_weight_offset[gi]);
        }
        int64_t *wo = b->graph_weight_offset[gi];
        uint32_t *uses = ir_use_counts(h); /* constants nothing reads (folded away) are left out */
        for (uint32_t v = 0; v < h->n_values; v++) {
            wo[v] = -1;
            const IrValue *val = &h->values[v];
            if (val->kind != IR_VALUE_CONST || !val->tensor ||
                val->tensor->dtype == IR_DTYPE_STRING || uses[v] == 0)
                continue;
            wo[v] = off;
            off += ((int64_t)val->tensor->size_bytes + BUNDLE_ALIGN - 1) / BUNDLE_ALIGN * BUNDLE_ALIGN;
        }
        free(uses);
    }
    b->weights_size = off;
}

void bundle_ctx_init(BundleCtx *b, const IrGraph *g, const BundleOptions *opts, Diag *d) {
    memset(b, 0, sizeof *b);
    b->g = g;
    b->opts = opts;
    b->d = d;
    b->weight_offset = calloc(g->n_values + 1, sizeof *b->weight_offset);
    b->field = calloc(g->n_values + 1, sizeof *b->field);
    IR_ASSERT(b->weight_offset && b->field);
}

void bundle_ctx_free(BundleCtx *b) {
    for (uint32_t gi = 1; gi < b->n_graphs; gi++) free(b->graph_weight_offset[gi]);
    free(b->graph_weight_offset);
    free(b->graphs);
    free(b->weight_offset);
    free(b->field);
    ir_arena_free(&b->scratch);
}

void bundle_place(BundleCtx *b, const IrGraph *g) {
    b->out_field = output_names(b, g);
    assign_fields(b, g, b->out_field);
    assign_weights(b, g);
}

#define BUNDLE_WEIGHTS_LINE 1000   /* source characters per piece of the weights literal (C99
                                      promises 4095; MSVC takes 16380 per piece) */
#define BUNDLE_WEIGHTS_MSVC_MAX 65535 /* MSVC's limit on a literal after concatenation */

/* Byte i of p (n bytes) as string-literal text into out (at most 4 characters): printable
 * ASCII as itself, except " \ and ? (?? starts a trigraph in C99); other bytes as octal
 * escapes, three digits when a digit follows, so that the escape ends where it should. The
 * text also reads as a Python bytes literal (tests/bundle/test_embed.sh decodes it). */
static int weights_char(const unsigned char *p, int64_t i, int64_t n, char *out) {
    unsigned char c = p[i];
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '?') {
        out[0] = (char)c;
        return 1;
    }
    bool digit_next = i + 1 < n && p[i + 1] >= '0' && p[i + 1] <= '9';
    return sprintf(out, digit_next ? "\\%03o" : "\\%o", c);
}

/* NAME_weights.c: the blob as one const array, initialized by one string literal of dense
 * pieces. A list of numbers costs a compiler a tree node per byte (ResNet-50's 102 MB: gcc
 * 188 s and 12.9 GB); a literal is read as text (seconds, about 13 bytes of memory per
 * weight byte, most of it the preprocessor's copy of the file). Streamed to the file. */
static bool write_weights_c(BundleCtx *b, const char *dir, const unsigned char *blob, Diag *d) {
    const char *N = b->opts->name;
    const char *path = bundle_fmt(b, "%s/%s_weights.c", dir, N);
    int64_t n = b->weights_size;
    FILE *f = fopen(path, "wb");
    if (!f) {
        diag_error(d, "%s: cannot write: %s", path, strerror(errno));
        return false;
    }
    fprintf(f, "/* %s_weights.c: generated by kiln; the model's weights (%lld bytes) as a const "
               "array, for\n * flash-resident weights. One string literal: compilers read it "
               "as text, in seconds. */\n", N, (long long)n);
    fprintf(f, "#include \"%s.h\"\n\n", N);
    fprintf(f, "#if defined(__GNUC__) /* and Clang: a literal of any length */\n"
               "#pragma GCC diagnostic ignored \"-Woverlength-strings\"\n#endif\n");
    if (n > BUNDLE_WEIGHTS_MSVC_MAX)
        fprintf(f, "#if defined(_MSC_VER) && !defined(__clang__)\n"
                   "#error \"MSVC takes string literals up to 64 KiB: compile the model with "
                   "--weights bin, or build with clang-cl\"\n#endif\n");
    fprintf(f, "#if defined(__GNUC__) || defined(__clang__)\n__attribute__((aligned(%d)))\n"
               "#elif defined(_MSC_VER)\n__declspec(align(%d))\n"
               "#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L\n_Alignas(%d)\n"
               "#endif\n", BUNDLE_ALIGN, BUNDLE_ALIGN, BUNDLE_ALIGN);
    fprintf(f, "const unsigned char %s_weights[%lld] = /* + 1: the literal's closing NUL */\n",
            N, (long long)n + 1);
    char line[BUNDLE_WEIGHTS_LINE + 16];
    int64_t i = 0;
    do {
        size_t k = 0;
        line[k++] = '"';
        while (i < n && k < BUNDLE_WEIGHTS_LINE) k += (size_t)weights_char(blob, i++, n, line + k);
        line[k++] = '"';
        if (i >= n) line[k++] = ';';
        line[k++] = '\n';
        fwrite("    ", 1, 4, f);
        fwrite(line, 1, k, f);
    } while (i < n);
    bool ok = !ferror(f);
    if (fclose(f) != 0) ok = false;
    if (!ok) diag_error(d, "%s: cannot write: %s", path, strerror(errno));
    return ok;
}

bool bundle_write_weights(BundleCtx *b, const char *dir, Diag *d) {
    unsigned char *blob = calloc(1, b->weights_size ? (size_t)b->weights_size : 1);
    if (!blob) return false;
    for (uint32_t gi = 0; gi < b->n_graphs; gi++) {
        const IrGraph *h = b->graphs[gi];
        const int64_t *wo = b->graph_weight_offset[gi];
        for (uint32_t v = 0; v < h->n_values; v++)
            if (wo[v] >= 0 && h->values[v].tensor->size_bytes)
                memcpy(blob + wo[v], h->values[v].tensor->data, h->values[v].tensor->size_bytes);
    }
    bool ok;
    if (!b->opts->embed_weights)
        ok = write_file(dir, bundle_fmt(b, "%s_weights.bin", b->opts->name), blob,
                        (size_t)b->weights_size, d);
    else
        ok = write_weights_c(b, dir, blob, d);
    free(blob);
    return ok;
}

