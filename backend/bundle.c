/* The bundle writer: NAME.h (API, sizes, status codes), NAME.c (NAME_run), the runtime
 * files it uses, the weights (NAME_weights.bin or NAME_weights.c), CMakeLists.txt,
 * README.md and, on request, NAME_test_main.c. Output is deterministic: the same graph
 * gives byte-identical files. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/cgen.h"
#include "backend/cgen_count.h"
#include "passes/passes.h"

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

static const CgenRuntimeFile *runtime_file(const char *name) {
    for (unsigned i = 0; i < cgen_n_runtime_files; i++)
        if (strcmp(cgen_runtime_files[i].name, name) == 0) return &cgen_runtime_files[i];
    return NULL;
}

static const char *type_kind_phrase(IrTypeKind k) {
    switch (k) {
    case IR_TYPE_SEQUENCE: return "a sequence";
    case IR_TYPE_OPTIONAL: return "an optional";
    case IR_TYPE_MAP: return "a map";
    case IR_TYPE_SPARSE_TENSOR: return "a sparse tensor";
    default: return "of unknown type (inference could not type it)";
    }
}

/* Every node of g and of its subgraphs has a kernel, and every value that needs storage is a
 * static numeric tensor (values seen from an enclosing graph are checked there). */
static bool check_supported(const IrGraph *g, Diag *d) {
    bool ok = true;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead || cgen_op_supported((IrOp)n->op)) continue;
        diag_error(d, "node '%s' (%s%s%s, opset %d): no C kernel for this op", n->name,
                   n->domain[0] ? n->domain : "", n->domain[0] ? "." : "", n->op_type, n->opset);
        ok = false;
    }
    for (uint32_t v = 0; v < g->n_values; v++) {
        const IrValue *val = &g->values[v];
        bool live = val->kind != IR_VALUE_NODE || val->producer != IR_NONE;
        if (!live) continue;
        if (val->type.kind != IR_TYPE_TENSOR || !ir_type_is_static(&val->type) ||
            val->type.dtype == IR_DTYPE_STRING || val->type.dtype == IR_DTYPE_UNDEF) {
            bool io = val->kind == IR_VALUE_INPUT;
            for (uint32_t k = 0; k < g->n_outputs; k++) io |= g->outputs[k] == v;
            if (io || val->kind == IR_VALUE_NODE) {
                const char *in_sub = g->parent ? " (in subgraph '" : "";
                const char *sub_name = g->parent ? g->name : "";
                const char *close = g->parent ? "')" : "";
                if (val->type.kind == IR_TYPE_TENSOR && val->type.dtype == IR_DTYPE_STRING)
                    diag_error(d, "value '%s'%s%s%s holds strings: the C backend has no string "
                               "type", val->name, in_sub, sub_name, close);
                else if (val->type.kind == IR_TYPE_TENSOR && val->type.dtype == IR_DTYPE_UNDEF)
                    diag_error(d, "value '%s'%s%s%s has no known element type", val->name,
                               in_sub, sub_name, close);
                else if (val->type.kind == IR_TYPE_TENSOR)
                    diag_error(d, "value '%s'%s%s%s (%s) has no static shape: fix symbolic "
                               "dimensions with --dim NAME=VALUE; shapes computed from input "
                               "data cannot be compiled", val->name, in_sub, sub_name, close,
                               ir_dtype_name((IrDType)val->type.dtype));
                else
                    diag_error(d, "value '%s' is %s: the C backend compiles tensors only "
                               "(sequences, optionals and maps are not supported)", val->name,
                               type_kind_phrase((IrTypeKind)val->type.kind));
                ok = false;
            }
        }
    }
    for (uint32_t s = 0; s < g->n_subgraphs; s++) ok &= check_supported(g->subgraphs[s], d);
    return ok;
}

/* The struct field of each output slot, in order: outputs have their own namespace, struct
 * NAME_outputs. A slot with a run-time count (cgen_has_count) also owns the field
 * FIELD_count, which the cgen_emit_count code writes: no other field may take that name, so
 * such a slot moves on to FIELD_2... while FIELD_count is taken. */
static const char **output_names(CgenCtx *cx, const IrGraph *g) {
    const char **names = ir_arena_alloc(&cx->scratch, (g->n_outputs + 1) * sizeof *names);
    NameSet taken;
    nameset_init(&taken, 2 * g->n_outputs);
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t v = g->outputs[i];
        bool counted = cgen_has_count(g, v);
        for (;;) {
            const char *f = sanitize(&cx->scratch, g->values[v].name, &taken);
            name_take(&taken, f); /* taken either way: a refused name stays refused */
            const char *fc = counted ? cgen_fmt(cx, "%s_count", f) : NULL;
            if (fc && name_taken(&taken, fc)) continue;
            if (fc) name_take(&taken, fc);
            names[i] = f;
            break;
        }
    }
    nameset_free(&taken);
    return names;
}

static void assign_fields(CgenCtx *cx, IrGraph *g, const char **outf) {
    NameSet taken;
    nameset_init(&taken, g->n_inputs);
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        uint32_t v = g->inputs[i];
        cx->field[v] = sanitize(&cx->scratch, g->values[v].name, &taken);
        name_take(&taken, cx->field[v]);
    }
    nameset_free(&taken);
    /* A value produced by a node and listed as an output is written in place; inputs,
     * constants and repeats are copied. */
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t v = g->outputs[i];
        if (g->values[v].kind == IR_VALUE_NODE && !cx->field[v]) cx->field[v] = outf[i];
    }
}

/* Lists g and its subgraphs, depth first, into cx->graphs. */
static void collect_graphs(CgenCtx *cx, const IrGraph *g, uint32_t *cap) {
    if (cx->n_graphs == *cap) {
        *cap = *cap ? 2 * *cap : 4;
        cx->graphs = realloc(cx->graphs, *cap * sizeof *cx->graphs);
        IR_ASSERT(cx->graphs);
    }
    cx->graphs[cx->n_graphs++] = g;
    for (uint32_t s = 0; s < g->n_subgraphs; s++) collect_graphs(cx, g->subgraphs[s], cap);
}

/* Offsets in the weights blob: the root's constants first, then each subgraph's in the
 * order of cx->graphs. */
static void assign_weights(CgenCtx *cx, IrGraph *g) {
    uint32_t cap = 0;
    collect_graphs(cx, g, &cap);
    cx->graph_weight_offset = calloc(cx->n_graphs, sizeof *cx->graph_weight_offset);
    IR_ASSERT(cx->graph_weight_offset);
    cx->graph_weight_offset[0] = cx->weight_offset;
    int64_t off = 0;
    for (uint32_t gi = 0; gi < cx->n_graphs; gi++) {
        const IrGraph *h = cx->graphs[gi];
        if (gi > 0) {
            cx->graph_weight_offset[gi] = calloc(h->n_values + 1, sizeof(int64_t));
            IR_ASSERT(cx->graph_weight_offset[gi]);
        }
        int64_t *wo = cx->graph_weight_offset[gi];
        uint32_t *uses = ir_use_counts(h); /* constants nothing reads (folded away) are left out */
        for (uint32_t v = 0; v < h->n_values; v++) {
            wo[v] = -1;
            const IrValue *val = &h->values[v];
            if (val->kind != IR_VALUE_CONST || !val->tensor ||
                val->tensor->dtype == IR_DTYPE_STRING || uses[v] == 0)
                continue;
            wo[v] = off;
            off += ((int64_t)val->tensor->size_bytes + CGEN_ALIGN - 1) / CGEN_ALIGN * CGEN_ALIGN;
        }
        free(uses);
    }
    cx->weights_size = off;
}

static bool emit_body(CgenCtx *cx, IrGraph *g, const char **outf) {
    bool ok = cgen_emit_nodes(cx);
    /* outputs that no node wrote in place */
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t v = g->outputs[i];
        const char *f = outf[i];
        if (cx->field[v] && strcmp(cx->field[v], f) == 0 && g->values[v].kind == IR_VALUE_NODE)
            continue;
        if (cgen_has_count(g, v)) /* a repeat of a counted output: the count comes along */
            cw_line(cx->w, "*out->%s_count = *out->%s_count;", f, cx->field[v]);
        int64_t bytes = (int64_t)ir_dtype_size_bytes((IrDType)g->values[v].type.dtype,
                                                     cgen_numel(cx, v));
        cw_comment(cx->w, "output '%s' is a copy of '%s'", g->values[v].name, g->values[v].name);
        if (bytes > 0) cw_line(cx->w, "memcpy(out->%s, %s, %lld);", f, cgen_ptr(cx, v),
                               (long long)bytes);
    }
    return ok;
}

/* The axis of counted output v (cgen_has_count) that its run-time count runs along, and the
 * fill of the entries past the count: -1 where entries are indices, 0 where they are data
 * or counts. */
static int count_axis(const IrGraph *g, uint32_t v, const char **fill) {
    const IrValue *val = &g->values[v];
    const IrNode *n = &g->nodes[val->producer];
    int rank = n->n_inputs > 0 && n->inputs[0] != IR_NONE ? g->values[n->inputs[0]].type.rank : 0;
    int64_t axis = 0;
    *fill = "0";
    switch (n->op) {
    case IR_OP_NON_ZERO: *fill = "-1"; return 1;
    case IR_OP_NON_MAX_SUPPRESSION: *fill = "-1"; return 0;
    case IR_OP_COMPRESS:
        if (ir_attr_present(n, IR_ATTR_COMPRESS_AXIS)) axis = ir_attr_i(n, IR_ATTR_COMPRESS_AXIS);
        break;
    default: /* Unique: y along its axis; indices (-1) and counts (0) along axis 0 */
        if (val->result_index == 1) *fill = "-1";
        if (val->result_index == 0 && ir_attr_present(n, IR_ATTR_UNIQUE_AXIS))
            axis = ir_attr_i(n, IR_ATTR_UNIQUE_AXIS);
        break;
    }
    return (int)(axis < 0 ? axis + rank : axis);
}

static bool any_count(const IrGraph *g) {
    for (uint32_t i = 0; i < g->n_outputs; i++)
        if (cgen_has_count(g, g->outputs[i])) return true;
    return false;
}

static void emit_header(CgenCtx *cx, IrGraph *g, CWriter *h, const char **outf) {
    const char *N = cx->opts->name;
    const char *U = cgen_upper_name(cx);
    cw_line(h, "/* %s.h: generated by kiln %s from %s. Do not edit.", N, KILN_VERSION,
            cx->opts->model_path ? cx->opts->model_path : "a model");
    cw_line(h, " *");
    cw_line(h, " * Usage (the caller owns all memory; nothing here allocates):");
    cw_line(h, " *   void *arena = ...;   %s_ARENA_SIZE bytes aligned to %s_ALIGN, e.g. a static", U, U);
    cw_line(h, " *                        buffer with your compiler's alignment attribute, or");
    cw_line(h, " *                        aligned_alloc(%s_ALIGN, size rounded up to %s_ALIGN)", U, U);
    cw_line(h, " *   %s_inputs in = {...};   pointers to the input tensors, row-major", N);
    cw_line(h, " *   %s_outputs out = {...}; pointers to room for the outputs", N);
    if (cx->opts->embed_weights)
        cw_line(h, " *   int rc = %s_run(&in, &out, %s_weights, arena);", N, N);
    else
        cw_line(h, " *   int rc = %s_run(&in, &out, weights, arena);  weights: the bytes of "
                   "%s_weights.bin, aligned to %s_ALIGN", N, N, U);
    cw_line(h, " *   if (rc != %s_OK) ... see the status codes below", U);
    if (any_count(g)) {
        cw_line(h, " *");
        cw_line(h, " * Outputs of data-dependent size (NonZero, Compress, Unique,");
        cw_line(h, " * NonMaxSuppression) have their compiled shape as an upper bound. Each such");
        cw_line(h, " * output FIELD comes with a field int64_t *FIELD_count: point it to an");
        cw_line(h, " * int64_t; %s_run writes how many entries along the axis its comment", N);
        cw_line(h, " * names hold results. Entries past the count hold the fill its comment");
        cw_line(h, " * gives (-1 for indices, 0 for data and counts). When nodes of the model read");
        cw_line(h, " * such a value too, its count must reach the bound, else %s_run returns", N);
        cw_line(h, " * %s_ERR_SHAPE.", U);
    }
    cw_line(h, " */");
    cw_line(h, "#ifndef %s_H", U);
    cw_line(h, "#define %s_H", U);
    cw_blank(h);
    cw_line(h, "#include <stdint.h>");
    cw_blank(h);
    cw_line(h, "#define %s_ARENA_SIZE %lld /* bytes of scratch memory for intermediates */", U,
            (long long)g->arena_size_bytes);
    cw_line(h, "#define %s_WEIGHTS_SIZE %lld /* bytes of %s */", U, (long long)cx->weights_size,
            cx->opts->embed_weights ? "the weights array" : "the weights file");
    cw_line(h, "#define %s_ALIGN %d /* required alignment of arena and weights */", U, CGEN_ALIGN);
    cw_blank(h);
    cw_line(h, "/* Status codes of %s_run. */", N);
    cw_line(h, "#define %s_OK 0", U);
    cw_line(h, "#define %s_ERR_NULL 1  /* a required pointer is NULL */", U);
    cw_line(h, "#define %s_ERR_ALIGN 2 /* arena or weights not aligned to %s_ALIGN */", U, U);
    cw_line(h, "#define %s_ERR_INDEX 3 /* an index in the input data is out of range */", U);
    cw_line(h, "#define %s_ERR_SHAPE 4 /* input data asks for a shape the model was not "
               "compiled for */", U);
    cw_line(h, "#define %s_ERR_VALUE 5 /* input data breaks another contract of an op */", U);
    cw_blank(h);
    cw_open(h, "typedef struct %s_inputs", N);
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        uint32_t v = g->inputs[i];
        cw_line(h, "const %s *%s; /* %s '%s' */", cgen_ctype((IrDType)g->values[v].type.dtype),
                cx->field[v], cgen_type_str(cx, &g->values[v].type), g->values[v].name);
    }
    if (g->n_inputs == 0) cw_line(h, "int unused; /* the model has no inputs */");
    cw_close(h, cgen_fmt(cx, " %s_inputs;", N));
    cw_blank(h);
    cw_open(h, "typedef struct %s_outputs", N);
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t v = g->outputs[i];
        cw_line(h, "%s *%s; /* %s '%s' */", cgen_ctype((IrDType)g->values[v].type.dtype),
                outf[i], cgen_type_str(cx, &g->values[v].type), g->values[v].name);
        if (!cgen_has_count(g, v)) continue;
        const char *fill;
        int axis = count_axis(g, v, &fill);
        int64_t bound = g->values[v].type.rank > axis ? g->values[v].type.dims[axis] : 0;
        cw_line(h, "int64_t *%s_count; /* count of '%s' along axis %d (<= %lld), then fill %s */",
                outf[i], g->values[v].name, axis, (long long)bound, fill);
    }
    cw_close(h, cgen_fmt(cx, " %s_outputs;", N));
    cw_blank(h);
    if (cx->opts->embed_weights) {
        cw_line(h, "extern const unsigned char %s_weights[]; /* in %s_weights.c */", N, N);
        cw_blank(h);
    }
    cw_line(h, "/* Runs the model. Returns %s_OK or a status code above. */", U);
    cw_line(h, "int %s_run(const %s_inputs *in, %s_outputs *out, const void *weights, "
               "void *arena);", N, N, N);
    cw_blank(h);
    cw_line(h, "#endif");
}

static void emit_source(CgenCtx *cx, IrGraph *g, CWriter *c, const char *body,
                        const char **outf) {
    const char *N = cx->opts->name;
    const char *U = cgen_upper_name(cx);
    cw_line(c, "/* %s.c: generated by kiln %s from %s. Do not edit.", N, KILN_VERSION,
            cx->opts->model_path ? cx->opts->model_path : "a model");
    cw_line(c, " * %u nodes; arena %lld bytes (lower bound %lld, naive sum %lld). */",
            g->n_nodes, (long long)g->arena_size_bytes, (long long)g->arena_lower_bound_bytes,
            (long long)g->arena_naive_bytes);
    cw_line(c, "#include <math.h>");
    cw_line(c, "#include <stddef.h>");
    cw_line(c, "#include <stdint.h>");
    cw_line(c, "#include <string.h>");
    cw_blank(c);
    cw_line(c, "#include \"%s.h\"", N);
    cw_line(c, "#include \"rt_common.h\"");
    for (uint32_t i = 0; i < cx->n_runtime; i++)
        if (strcmp(cx->runtime[i], "rt_common.h") != 0) cw_line(c, "#include \"%s\"", cx->runtime[i]);
    cw_blank(c);
    cw_open(c, "int %s_run(const %s_inputs *in, %s_outputs *out, const void *weights, "
               "void *arena)", N, N, N);
    if (cx->uses_w) cw_line(c, "const unsigned char *w = (const unsigned char *)weights;");
    if (cx->uses_a) cw_line(c, "unsigned char *a = (unsigned char *)arena;");
    if (cx->uses_rc) cw_line(c, "int rc;");
    cw_indent(c);
    cw_raw(c, "if (!in || !out");
    if (cx->weights_size) cw_raw(c, " || !weights");
    if (g->arena_size_bytes) cw_raw(c, " || !arena");
    for (uint32_t i = 0; i < g->n_inputs; i++) cw_raw(c, " || !in->%s", cx->field[g->inputs[i]]);
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        cw_raw(c, " || !out->%s", outf[i]);
        if (cgen_has_count(g, g->outputs[i])) cw_raw(c, " || !out->%s_count", outf[i]);
    }
    cw_raw(c, ") return %s_ERR_NULL;\n", U);
    cw_line(c, "if ((uintptr_t)weights %% %s_ALIGN != 0 || (uintptr_t)arena %% %s_ALIGN != 0) "
               "return %s_ERR_ALIGN;", U, U, U);
    if (!cx->uses_w && !cx->uses_a) cw_line(c, "(void)weights;");
    if (!cx->uses_a && cx->uses_w) cw_line(c, "(void)arena;");
    cw_blank(c);
    cw_raw(c, "%s", body);
    cw_line(c, "return %s_OK;", U);
    cw_close(c, NULL);
}

static bool emit_weights(CgenCtx *cx, const char *dir, Diag *d) {
    unsigned char *blob = calloc(1, cx->weights_size ? (size_t)cx->weights_size : 1);
    if (!blob) return false;
    for (uint32_t gi = 0; gi < cx->n_graphs; gi++) {
        const IrGraph *h = cx->graphs[gi];
        const int64_t *wo = cx->graph_weight_offset[gi];
        for (uint32_t v = 0; v < h->n_values; v++)
            if (wo[v] >= 0 && h->values[v].tensor->size_bytes)
                memcpy(blob + wo[v], h->values[v].tensor->data, h->values[v].tensor->size_bytes);
    }
    bool ok;
    const char *N = cx->opts->name;
    if (!cx->opts->embed_weights) {
        ok = write_file(dir, cgen_fmt(cx, "%s_weights.bin", N), blob, (size_t)cx->weights_size, d);
    } else {
        CWriter c;
        cw_init(&c);
        cw_line(&c, "/* %s_weights.c: generated by kiln; the model's weights as a const array, "
                    "for flash-resident weights. */", N);
        cw_line(&c, "#include \"%s.h\"", N);
        cw_blank(&c);
        cw_line(&c, "#if defined(__GNUC__) || defined(__clang__)");
        cw_line(&c, "__attribute__((aligned(%d)))", CGEN_ALIGN);
        cw_line(&c, "#elif defined(_MSC_VER)");
        cw_line(&c, "__declspec(align(%d))", CGEN_ALIGN);
        cw_line(&c, "#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L");
        cw_line(&c, "_Alignas(%d)", CGEN_ALIGN);
        cw_line(&c, "#endif");
        cw_line(&c, "const unsigned char %s_weights[%lld] = {", N,
                (long long)(cx->weights_size ? cx->weights_size : 1));
        if (cx->weights_size == 0) cw_line(&c, "    0");
        for (int64_t i = 0; i < cx->weights_size; i += 16) {
            cw_raw(&c, "   ");
            for (int64_t k = i; k < i + 16 && k < cx->weights_size; k++) cw_raw(&c, " %u,", blob[k]);
            cw_raw(&c, "\n");
        }
        cw_line(&c, "};");
        ok = write_writer(dir, cgen_fmt(cx, "%s_weights.c", N), &c, d);
    }
    free(blob);
    return ok;
}

static void emit_test_main(CgenCtx *cx, IrGraph *g, CWriter *c, const char **outf) {
    const char *N = cx->opts->name;
    const char *U = cgen_upper_name(cx);
    bool embed = cx->opts->embed_weights;
    cw_line(c, "/* %s_test_main.c: generated by kiln. A test harness, not part of the model code:", N);
    cw_line(c, " * %s_test %sIN_FILE... OUT_FILE... reads each input as raw little-endian bytes,", N,
            embed ? "" : "WEIGHTS_FILE ");
    cw_line(c, " * poisons the outputs, runs the model and writes each output's raw bytes.");
    if (any_count(g))
        cw_line(c, " * Prints each count field of the outputs as a line \"FIELD_count N\". */");
    else
        cw_line(c, " */");
    cgen_test_main_includes(c, N);
    cw_open(c, "static void *aligned_block(size_t size)");
    cw_line(c, "unsigned char *p = malloc(size + %s_ALIGN);", U);
    cw_line(c, "if (!p) { fprintf(stderr, \"out of memory\\n\"); exit(2); }");
    cw_line(c, "memset(p, 0, size + %s_ALIGN);", U);
    cw_line(c, "return p + (%s_ALIGN - (size_t)((uintptr_t)p %% %s_ALIGN));", U, U);
    cw_close(c, NULL);
    cw_blank(c);
    cw_open(c, "static void *read_file(const char *path, size_t want)");
    cw_line(c, "void *p = aligned_block(want);");
    cw_line(c, "FILE *f = fopen(path, \"rb\");");
    cw_line(c, "if (!f || (want && fread(p, 1, want, f) != want)) { fprintf(stderr, \"%%s: "
               "cannot read %%lu bytes\\n\", path, (unsigned long)want); exit(2); }");
    cw_line(c, "fclose(f);");
    cw_line(c, "return p;");
    cw_close(c, NULL);
    cw_blank(c);
    cw_open(c, "static void write_file(const char *path, const void *p, size_t n)");
    cw_line(c, "FILE *f = fopen(path, \"wb\");");
    cw_line(c, "if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0) { fprintf(stderr, "
               "\"%%s: cannot write\\n\", path); exit(2); }");
    cw_close(c, NULL);
    cw_blank(c);
    cw_open(c, "int main(int argc, char **argv)");
    uint32_t nargs = g->n_inputs + g->n_outputs + (embed ? 0 : 1);
    cw_line(c, "%s_inputs in;", N);
    cw_line(c, "%s_outputs out;", N);
    cw_line(c, "int rc, arg = 1;");
    uint32_t n_counts = 0;
    for (uint32_t i = 0; i < g->n_outputs; i++) n_counts += cgen_has_count(g, g->outputs[i]);
    if (n_counts) cw_line(c, "int64_t counts[%u]; /* the outputs' run-time counts */", n_counts);
    cw_line(c, "void *arena = aligned_block(%s_ARENA_SIZE + 1);", U);
    cw_line(c, "if (argc != %u) { fprintf(stderr, \"usage: %%s %sIN... OUT...\\n\", argv[0]); "
               "return 2; }", nargs + 1, embed ? "" : "WEIGHTS ");
    cw_line(c, "memset(&in, 0, sizeof in);");
    if (embed) cw_line(c, "const void *weights = %s_weights;", N);
    else cw_line(c, "const void *weights = read_file(argv[arg++], %s_WEIGHTS_SIZE);", U);
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        uint32_t v = g->inputs[i];
        cw_line(c, "in.%s = read_file(argv[arg++], %lld);", cx->field[v],
                (long long)ir_dtype_size_bytes((IrDType)g->values[v].type.dtype, cgen_numel(cx, v)));
    }
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t v = g->outputs[i];
        long long bytes =
            (long long)ir_dtype_size_bytes((IrDType)g->values[v].type.dtype, cgen_numel(cx, v));
        const char *f = outf[i];
        cw_line(c, "out.%s = aligned_block(%lld);", f, bytes);
        if (bytes > 0) cw_line(c, "memset(out.%s, POISON_BYTE, %lld);", f, bytes);
    }
    if (n_counts) cw_comment(c, "-2 is no count: shows when the run forgets one");
    for (uint32_t i = 0, k = 0; i < g->n_outputs; i++)
        if (cgen_has_count(g, g->outputs[i])) {
            cw_line(c, "counts[%u] = -2;", k);
            cw_line(c, "out.%s_count = &counts[%u];", outf[i], k++);
        }
    cw_line(c, "rc = %s_run(&in, &out, weights, arena);", N);
    cw_line(c, "if (rc != %s_OK) { fprintf(stderr, \"%s_run failed: status %%d\\n\", rc); "
               "return 1; }", U, N);
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t v = g->outputs[i];
        cw_line(c, "write_file(argv[arg++], out.%s, %lld);", outf[i],
                (long long)ir_dtype_size_bytes((IrDType)g->values[v].type.dtype, cgen_numel(cx, v)));
    }
    for (uint32_t i = 0, k = 0; i < g->n_outputs; i++)
        if (cgen_has_count(g, g->outputs[i]))
            cw_line(c, "printf(\"%s_count %%lld\\n\", (long long)counts[%u]);", outf[i], k++);
    cw_line(c, "return 0;");
    cw_close(c, NULL);
}

static void emit_cmake(CgenCtx *cx, CWriter *c) {
    const char *N = cx->opts->name;
    cw_line(c, "# Generated by kiln %s. Builds the model as a static library.", KILN_VERSION);
    cw_line(c, "cmake_minimum_required(VERSION 3.13)");
    cw_line(c, "project(%s C)", N);
    cw_line(c, "if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)");
    cw_line(c, "  set(CMAKE_BUILD_TYPE Release) # the kernels want an optimizing build");
    cw_line(c, "endif()");
    cw_line(c, "add_library(%s STATIC %s.c%s)", N, N,
            cx->opts->embed_weights ? cgen_fmt(cx, " %s_weights.c", N) : "");
    cw_line(c, "set_target_properties(%s PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON)", N);
    cw_line(c, "target_include_directories(%s PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})", N);
    cw_line(c, "if(NOT MSVC)");
    cw_line(c, "  target_link_libraries(%s PUBLIC m)", N);
    cw_line(c, "endif()");
    if (cx->opts->test_main) {
        cw_line(c, "if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/%s_test_main.c)", N);
        cw_line(c, "  add_executable(%s_test %s_test_main.c)", N, N);
        cw_line(c, "  target_link_libraries(%s_test PRIVATE %s)", N, N);
        cw_line(c, "endif()");
    }
}

static void emit_readme(CgenCtx *cx, IrGraph *g, CWriter *c, const char **outf) {
    const char *N = cx->opts->name;
    cw_line(c, "# %s", N);
    cw_blank(c);
    cw_line(c, "Generated by kiln %s from `%s`%s.", KILN_VERSION,
            cx->opts->model_path ? cx->opts->model_path : "a model",
            cx->opts->command_line ? cgen_fmt(cx, " with `%s`", cx->opts->command_line) : "");
    cw_blank(c);
    cw_line(c, "| input | type |");
    cw_line(c, "|---|---|");
    for (uint32_t i = 0; i < g->n_inputs; i++)
        cw_line(c, "| `%s` | %s |", cx->field[g->inputs[i]],
                cgen_type_str(cx, &g->values[g->inputs[i]].type));
    cw_blank(c);
    cw_line(c, "| output | type |");
    cw_line(c, "|---|---|");
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t v = g->outputs[i];
        cw_line(c, "| `%s` | %s |", outf[i], cgen_type_str(cx, &g->values[v].type));
        if (!cgen_has_count(g, v)) continue;
        const char *fill;
        int axis = count_axis(g, v, &fill);
        cw_line(c, "| `%s_count` | i64 count of `%s` along axis %d; fill %s past it |", outf[i],
                outf[i], axis, fill);
    }
    cw_blank(c);
    cw_line(c, "- arena: %lld bytes (lower bound %lld, naive sum %lld)",
            (long long)g->arena_size_bytes, (long long)g->arena_lower_bound_bytes,
            (long long)g->arena_naive_bytes);
    cw_line(c, "- weights: %lld bytes (%s)", (long long)cx->weights_size,
            cx->opts->embed_weights ? cgen_fmt(cx, "`%s_weights.c`", N)
                                    : cgen_fmt(cx, "`%s_weights.bin`", N));
    cw_line(c, "- alignment: %d bytes for arena and weights", CGEN_ALIGN);
    cw_blank(c);
    cw_line(c, "Build: `cmake -S . -B build && cmake --build build`, or compile `%s.c` with any "
               "C99 compiler. API and status codes: `%s.h`.", N, N);
}

bool cgen_write_bundle(IrGraph *g, const CgenOptions *opts, const char *out_dir, Diag *d) {
    cgen_tables_init();
    if (!pass_pipeline_run(g, opts->passes, PASS_STAGE_OPTIMIZE, d)) return false;
    if (!cgen_control_prepare(g, d)) return false;
    if (!check_supported(g, d)) return false;
    if (!pass_pipeline_run(g, opts->passes, PASS_STAGE_PLAN, d)) return false;
    if (mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
        diag_error(d, "%s: cannot create: %s", out_dir, strerror(errno));
        return false;
    }
    CgenCtx cx;
    memset(&cx, 0, sizeof cx);
    cx.g = g;
    cx.opts = opts;
    cx.d = d;
    cx.weight_offset = calloc(g->n_values + 1, sizeof *cx.weight_offset);
    cx.field = calloc(g->n_values + 1, sizeof *cx.field);
    IR_ASSERT(cx.weight_offset && cx.field);
    const char **outf = output_names(&cx, g);
    assign_fields(&cx, g, outf);
    assign_weights(&cx, g);
    cgen_use_runtime(&cx, "rt_common.h");
    CWriter body, h, c;
    cw_init(&body);
    cw_init(&h);
    cw_init(&c);
    body.indent = 1;
    cx.w = &body;
    bool ok = emit_body(&cx, g, outf);
    if (ok) {
        emit_header(&cx, g, &h, outf);
        emit_source(&cx, g, &c, body.buf ? body.buf : "", outf);
        ok &= write_writer(out_dir, cgen_fmt(&cx, "%s.h", opts->name), &h, d);
        ok &= write_writer(out_dir, cgen_fmt(&cx, "%s.c", opts->name), &c, d);
        for (uint32_t i = 0; i < cx.n_runtime && ok; i++) {
            const CgenRuntimeFile *rf = runtime_file(cx.runtime[i]);
            IR_ASSERT(rf);
            ok &= write_file(out_dir, rf->name, rf->text, strlen(rf->text), d);
        }
        ok &= emit_weights(&cx, out_dir, d);
        CWriter m;
        cw_init(&m);
        emit_cmake(&cx, &m);
        ok &= write_writer(out_dir, "CMakeLists.txt", &m, d);
        emit_readme(&cx, g, &m, outf);
        ok &= write_writer(out_dir, "README.md", &m, d);
        if (opts->test_main) {
            emit_test_main(&cx, g, &m, outf);
            ok &= write_writer(out_dir, cgen_fmt(&cx, "%s_test_main.c", opts->name), &m, d);
        }
    }
    cw_free(&body);
    cw_free(&h);
    cw_free(&c);
    for (uint32_t gi = 1; gi < cx.n_graphs; gi++) free(cx.graph_weight_offset[gi]);
    free(cx.graph_weight_offset);
    free(cx.graphs);
    free(cx.weight_offset);
    free(cx.field);
    ir_arena_free(&cx.scratch);
    return ok;
}

/* ---- Shared with the CUDA bundle writer (backend/cuda.c): thin exports of the helpers
 * above, so that both dialects place values and write files the same way. ---- */

void cgen_bundle_assign(CgenCtx *cx, IrGraph *g) {
    assign_fields(cx, g, output_names(cx, g));
    assign_weights(cx, g);
}

const char **cgen_output_fields(CgenCtx *cx, IrGraph *g) { return output_names(cx, g); }

bool cgen_write_text(const char *dir, const char *file, CWriter *w, Diag *d) {
    return write_writer(dir, file, w, d);
}

bool cgen_write_raw(const char *dir, const char *file, const void *data, size_t len, Diag *d) {
    return write_file(dir, file, data, len, d);
}

bool cgen_write_weights(CgenCtx *cx, const char *dir, Diag *d) { return emit_weights(cx, dir, d); }
