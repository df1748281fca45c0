/* The C dialect driver: value placement (inputs, outputs, weights, arena), the body of
 * NAME_run node by node through the kernel table, and the helpers op-family emitters use.
 * bundle.c wraps the body into the bundle's files. */
#include "backend/c/cgen.h"
#include "backend/c/cgen_count.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

CgenEmitFn cgen_emit_table[IR_OP_COUNT];

void cgen_tables_init(void) {
    static bool ready;
    if (ready) return;
    cgen_register_eltwise(cgen_emit_table);
    cgen_register_nn(cgen_emit_table);
    cgen_register_linalg(cgen_emit_table);
    cgen_register_data(cgen_emit_table);
    cgen_register_cast(cgen_emit_table);
    cgen_register_rnn(cgen_emit_table);
    cgen_register_signal(cgen_emit_table);
    cgen_register_quant(cgen_emit_table);
    cgen_register_qint8(cgen_emit_table);
    cgen_register_misc(cgen_emit_table);
    cgen_register_flex(cgen_emit_table);
    cgen_register_fusedattn(cgen_emit_table);
    cgen_register_qattn(cgen_emit_table);
    cgen_register_fusedelt(cgen_emit_table);
    cgen_register_control(cgen_emit_table);
    ready = true;
}

bool cgen_op_supported(IrOp op) {
    cgen_tables_init();
    return op != IR_OP_UNKNOWN && cgen_emit_table[op] != NULL;
}

const char *cgen_fmt(CgenCtx *cx, const char *fmt, ...) {
    CWriter tmp;
    cw_init(&tmp);
    va_list ap;
    va_start(ap, fmt);
    cw_vraw(&tmp, fmt, ap);
    va_end(ap);
    const char *s = ir_arena_strdup(&cx->b.scratch, tmp.buf ? tmp.buf : "");
    cw_free(&tmp);
    return s;
}

const char *cgen_sfx(IrDType t) {
    switch (t) {
    case IR_DTYPE_F32: return "f32";
    case IR_DTYPE_F64: return "f64";
    case IR_DTYPE_F16: return "f16";
    case IR_DTYPE_BF16: return "bf16";
    case IR_DTYPE_I8: return "i8";
    case IR_DTYPE_U8: return "u8";
    case IR_DTYPE_I16: return "i16";
    case IR_DTYPE_U16: return "u16";
    case IR_DTYPE_I32: return "i32";
    case IR_DTYPE_U32: return "u32";
    case IR_DTYPE_I64: return "i64";
    case IR_DTYPE_U64: return "u64";
    case IR_DTYPE_BOOL: return "u8";
    default: return NULL;
    }
}

const char *cgen_float_sfx(IrDType t) {
    bool fl = t == IR_DTYPE_F32 || t == IR_DTYPE_F64 || t == IR_DTYPE_F16 || t == IR_DTYPE_BF16;
    return fl ? cgen_sfx(t) : NULL;
}

const char *cgen_flit(CgenCtx *cx, double v, bool dbl) {
    /* math.h's NAN and INFINITY are floats: a double literal casts them (-Wdouble-promotion) */
    if (isnan(v)) return dbl ? "(double)NAN" : "NAN";
    if (isinf(v) || (!dbl && (v > FLT_MAX || v < -FLT_MAX)))
        return v > 0 ? (dbl ? "(double)INFINITY" : "INFINITY") : (dbl ? "(-(double)INFINITY)" : "(-INFINITY)");
    char buf[64];
    snprintf(buf, sizeof buf, dbl ? "%.17g" : "%.9g", v);
    if (!strpbrk(buf, ".e")) strcat(buf, ".0");
    return cgen_fmt(cx, "%s%s", buf, dbl ? "" : "f");
}

const IrType *cgen_type(const CgenCtx *cx, uint32_t v) { return &cx->b.g->values[v].type; }

int64_t cgen_numel(const CgenCtx *cx, uint32_t v) { return ir_type_numel(cgen_type(cx, v)); }

const IrTensor *cgen_const(const CgenCtx *cx, uint32_t v) {
    if (v == IR_NONE) return NULL;
    const IrValue *val = &cx->b.g->values[v];
    return val->kind == IR_VALUE_CONST ? val->tensor : NULL;
}

/* Where v lives, as a pointer expression: the scope's override, the named local of the node
 * being emitted (when use_local), the input/output field, the weights or the arena. ct:
 * the element type to point to (NULL: v's own; another one casts where v is not raw
 * weights or arena bytes). */
static const char *placement_as(CgenCtx *cx, uint32_t v, bool use_local, const char *as) {
    IR_ASSERT(v != IR_NONE);
    const IrValue *val = &cx->b.g->values[v];
    const char *ct = as ? as : bundle_ctype((IrDType)val->type.dtype);
    const char *e = NULL;
    if (cx->expr && cx->expr[v]) e = cx->expr[v];
    else if (use_local && cx->local && cx->local[v]) e = cx->local[v];
    else if (cx->b.field[v])
        e = cgen_fmt(cx, "%s->%s", val->kind == IR_VALUE_INPUT ? "in" : "out", cx->b.field[v]);
    if (e) return as ? cgen_fmt(cx, "((%s%s *)%s)", val->kind == IR_VALUE_CONST ? "const " : "",
                                ct, e) : e;
    /* the C target goes through void *: the arena and the weights are BUNDLE_ALIGN-aligned
     * bytes, and clang's -Wcast-align reads a direct cast from unsigned char * as a doubt */
    const char *via = cx->names ? "(void *)" : "", *cvia = cx->names ? "(const void *)" : "";
    if (cx->b.weight_offset[v] >= 0) {
        cx->uses_w = true;
        return cgen_fmt(cx, "((const %s *)%s(w + %lld))", ct, cvia,
                        (long long)cx->b.weight_offset[v]);
    }
    cx->uses_a = true;
    IR_ASSERT(val->mem_offset >= 0);
    return cgen_fmt(cx, "((%s *)%s(a + %lld))", ct, via, (long long)val->mem_offset);
}

static const char *placement(CgenCtx *cx, uint32_t v, bool use_local) {
    return placement_as(cx, v, use_local, NULL);
}

const char *cgen_ptr(CgenCtx *cx, uint32_t v) { return placement(cx, v, true); }

const char *cgen_ptr_as(CgenCtx *cx, uint32_t v, const char *ctype) {
    return placement_as(cx, v, true, ctype);
}

bool cgen_same_storage(CgenCtx *cx, uint32_t a, uint32_t b) {
    return strcmp(placement(cx, a, false), placement(cx, b, false)) == 0;
}

const char *cgen_i64_list(CgenCtx *cx, const int64_t *v, uint32_t n) {
    CWriter tmp;
    cw_init(&tmp);
    cw_raw(&tmp, "{");
    for (uint32_t i = 0; i < n; i++) cw_raw(&tmp, "%s%lld", i ? ", " : "", (long long)v[i]);
    if (n == 0) cw_raw(&tmp, "0");
    cw_raw(&tmp, "}");
    const char *s = ir_arena_strdup(&cx->b.scratch, tmp.buf);
    cw_free(&tmp);
    return s;
}

const char *cgen_dims(CgenCtx *cx, const IrType *t) {
    return cgen_i64_list(cx, t->dims, t->rank > 0 ? (uint32_t)t->rank : 0);
}

/* Below this much work a kernel runs on the calling thread: waking a worker and joining it
 * costs a few microseconds, 64 Ki multiply-adds take about 10 us on one core of ~10 GFLOP/s
 * (the packed GEMM runs at 50-60 GFLOP/s: the split pays from ~4 such tasks up). */
#define CGEN_PAR_MIN_MACS 65536.0

const char *cgen_par(CgenCtx *cx, double macs) {
    if (macs < CGEN_PAR_MIN_MACS || cx->serial_only) return "NULL";
    cgen_use_runtime(cx, "rt_par.h");
    cx->uses_par = true;
    return "par";
}

void cgen_par_scratch(CgenCtx *cx, int64_t bytes) {
    bytes = (bytes + BUNDLE_ALIGN - 1) / BUNDLE_ALIGN * BUNDLE_ALIGN;
    if (bytes > cx->par_scratch) cx->par_scratch = bytes;
}

void cgen_use_runtime(CgenCtx *cx, const char *file) {
    for (uint32_t i = 0; i < cx->n_runtime; i++)
        if (strcmp(cx->runtime[i], file) == 0) return;
    const BundleRuntimeFile *rf = bundle_runtime_file(file);
    IR_ASSERT(rf); /* an emitter names a runtime file that does not exist */
    /* the files it includes come first, so that the bundle holds everything it needs */
    for (const char *p = strstr(rf->text, "#include \"rt_"); p; p = strstr(p + 1, "#include \"rt_")) {
        const char *start = p + strlen("#include \""), *end = strchr(start, '"');
        if (!end || end - start >= 64) continue;
        for (unsigned i = 0; i < bundle_n_runtime_files; i++)
            if (strlen(bundle_runtime_files[i].name) == (size_t)(end - start) &&
                strncmp(bundle_runtime_files[i].name, start, (size_t)(end - start)) == 0)
                cgen_use_runtime(cx, bundle_runtime_files[i].name);
    }
    for (uint32_t i = 0; i < cx->n_runtime; i++) /* added meanwhile through an include */
        if (strcmp(cx->runtime[i], file) == 0) return;
    IR_ASSERT(cx->n_runtime < CGEN_MAX_RUNTIME);
    cx->runtime[cx->n_runtime++] = rf->name;
}

void cgen_call_checked(CgenCtx *cx, const char *fmt, ...) {
    cw_indent(cx->w);
    cw_raw(cx->w, "if ((rc = ");
    va_list ap;
    va_start(ap, fmt);
    cw_vraw(cx->w, fmt, ap);
    va_end(ap);
    cw_raw(cx->w, ") != 0) return rc;\n");
    cx->uses_rc = true;
}

bool cgen_unsupported(CgenCtx *cx, const IrNode *n, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ir_node_diag(cx->b.d, DIAG_ERROR, n, ": the C backend does not support %s", msg);
    return false;
}

void cgen_emit_count(CgenCtx *cx, const uint32_t *vals, uint32_t n, const char *count,
                     int64_t bound) {
    const IrGraph *g = cx->b.g;
    bool root = g->parent == NULL && cx->expr == NULL;
    uint32_t *uses = ir_use_counts(g); /* node inputs, subgraph reads and graph outputs */
    bool internal = false;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v = vals[i];
        if (v == IR_NONE) continue;
        IR_ASSERT(bundle_has_count(g, v));
        uint32_t as_output = 0; /* graph output slots of the root: the caller sees the count */
        for (uint32_t k = 0; root && k < g->n_outputs; k++) as_output += g->outputs[k] == v;
        internal |= uses[v] > as_output;
    }
    free(uses);
    if (internal) /* downstream ops see the compiled shape: the fill must not reach them */
        cw_line(cx->w, "if (%s != %lld) return RT_ERR_SHAPE; /* read inside the graph */", count,
                (long long)bound);
    for (uint32_t i = 0; root && i < n; i++) {
        uint32_t v = vals[i];
        bool is_output = false;
        for (uint32_t k = 0; v != IR_NONE && k < g->n_outputs; k++) is_output |= g->outputs[k] == v;
        if (!is_output) continue;
        IR_ASSERT(cx->b.field[v]); /* bundle.c names every node value that is a graph output */
        cw_line(cx->w, "*out->%s_count = %s;", cx->b.field[v], count);
    }
}

const char *cgen_type_str(CgenCtx *cx, const IrType *t) { return bundle_type_str(&cx->b, t); }

/* ---- named locals ---- */

/* The names handed out, bundle-wide: per (graph, value) its local's name, and every name
 * taken, so that no two tensors (in any scope) share one. Open addressing. */
typedef struct CgenNameSlot {
    const IrGraph *g;
    uint32_t v;
    const char *name;
} CgenNameSlot;

struct CgenNames {
    IrArena arena;
    CgenNameSlot *by_value; /* key (g, v) */
    const char **taken;     /* key: the name */
    uint32_t cap, n;        /* of both tables */
};

struct CgenNames *cgen_names_new(void) {
    struct CgenNames *t = calloc(1, sizeof *t);
    IR_ASSERT(t);
    return t;
}

void cgen_names_free(struct CgenNames *t) {
    if (!t) return;
    free(t->by_value);
    free(t->taken);
    ir_arena_free(&t->arena);
    free(t);
}

static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static uint32_t hash_key(const IrGraph *g, uint32_t v) {
    return (uint32_t)(((uintptr_t)g >> 4) * 2654435761u) ^ (v * 40503u);
}

static bool name_taken(const struct CgenNames *t, const char *name) {
    if (!t->cap) return false;
    for (uint32_t i = hash_str(name) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        if (!t->taken[i]) return false;
        if (strcmp(t->taken[i], name) == 0) return true;
    }
}

static void names_insert(struct CgenNames *t, const IrGraph *g, uint32_t v, const char *name);

static void names_grow(struct CgenNames *t) {
    CgenNameSlot *old = t->by_value;
    uint32_t old_cap = t->cap;
    t->cap = t->cap ? 2 * t->cap : 256;
    t->by_value = calloc(t->cap, sizeof *t->by_value);
    free(t->taken);
    t->taken = calloc(t->cap, sizeof *t->taken);
    IR_ASSERT(t->by_value && t->taken);
    t->n = 0;
    for (uint32_t i = 0; i < old_cap; i++)
        if (old[i].name) names_insert(t, old[i].g, old[i].v, old[i].name);
    free(old);
}

static void names_insert(struct CgenNames *t, const IrGraph *g, uint32_t v, const char *name) {
    if (2 * (t->n + 1) > t->cap) names_grow(t);
    uint32_t i = hash_key(g, v) & (t->cap - 1);
    while (t->by_value[i].name) i = (i + 1) & (t->cap - 1);
    t->by_value[i] = (CgenNameSlot){g, v, name};
    for (i = hash_str(name) & (t->cap - 1); t->taken[i]; i = (i + 1) & (t->cap - 1)) {}
    t->taken[i] = name;
    t->n++;
}

/* The local's name for value v of the graph being emitted: "t_" and the ONNX name with every
 * other character '_' (runs merged, no trailing '_'), then "_2", "_3"... when taken. The
 * prefix keeps it apart from the names emitters use inside their blocks (x0, y, geom...). */
static const char *local_name(CgenCtx *cx, uint32_t v) {
    struct CgenNames *t = cx->names;
    const IrGraph *g = cx->b.g;
    for (uint32_t i = t->cap ? hash_key(g, v) & (t->cap - 1) : 0; t->cap && t->by_value[i].name;
         i = (i + 1) & (t->cap - 1))
        if (t->by_value[i].g == g && t->by_value[i].v == v) return t->by_value[i].name;
    const char *src = g->values[v].name ? g->values[v].name : "";
    size_t len = strlen(src);
    if (len > CGEN_LOCAL_MAX_CHARS) src += len - CGEN_LOCAL_MAX_CHARS; /* keep the tail */
    char *base = ir_arena_alloc(&t->arena, strlen(src) + 4);
    size_t k = 0;
    base[k++] = 't';
    base[k++] = '_';
    for (const char *p = src; *p; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (ok) base[k++] = c;
        else if (base[k - 1] != '_') base[k++] = '_';
    }
    if (k > 2 && base[k - 1] == '_') k--;
    base[k] = 0;
    const char *name = base;
    for (unsigned suffix = 2; name_taken(t, name); suffix++) {
        char *s = ir_arena_alloc(&t->arena, k + 16);
        snprintf(s, k + 16, "%s_%u", base, suffix);
        name = s;
    }
    names_insert(t, g, v, name);
    return name;
}

/* Whether v lives in the arena or the weights (not a field, not a scope's override). */
static bool has_local(const CgenCtx *cx, uint32_t v) {
    if (v == IR_NONE || (cx->expr && cx->expr[v]) || cx->b.field[v]) return false;
    return cx->b.weight_offset[v] >= 0 || cx->b.g->values[v].mem_offset >= 0;
}

/* Drops one level of indentation (4 spaces) from every line of text into w. */
static void put_dedented(CWriter *w, const char *text) {
    for (const char *s = text; *s;) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) + 1 : strlen(s);
        size_t skip = n >= 4 && strncmp(s, "    ", 4) == 0 ? 4 : 0;
        cw_raw(w, "%.*s", (int)(n - skip), s + skip);
        s += n;
    }
}

/* Whether text (lines at indentation level `level`) is one block: "{" first, "}" last, and
 * every line between them deeper. */
static bool is_one_block(const char *text, int level) {
    size_t ind = 4 * (size_t)level, len = strlen(text);
    if (len < 2 * ind + 4 || strncmp(text + ind, "{\n", 2) != 0) return false;
    const char *last = text + len - 2; /* the last line: indentation, "}", newline */
    while (last > text && last[-1] != '\n') last--;
    if ((size_t)(text + len - last) != ind + 2 || last[ind] != '}') return false;
    for (const char *l = strchr(text, '\n') + 1; l < last; l = strchr(l, '\n') + 1)
        if (l[0] != '\n' && strncmp(l, "    ", 4) == 0 && (size_t)strspn(l, " ") <= ind)
            return false;
    return true;
}

/* Node n through its emitter, its arena and weight tensors as named locals: the code is
 * written one level deeper; the locals it uses are declared in a block around it (merged
 * with the block the emitter opened, if its code is one), and without any the code moves
 * back out, with no block. */
static bool emit_with_locals(CgenCtx *cx, const IrNode *n) {
    uint32_t ops[CGEN_MAX_NODE_LOCALS];
    uint32_t n_ops = 0;
    for (uint32_t k = 0; k < n->n_inputs + n->n_outputs; k++) {
        uint32_t v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        bool seen = false;
        for (uint32_t i = 0; i < n_ops && !seen; i++) seen = ops[i] == v;
        if (!seen && has_local(cx, v) && n_ops < CGEN_MAX_NODE_LOCALS) ops[n_ops++] = v;
    }
    for (uint32_t i = 0; i < n_ops; i++) cx->local[ops[i]] = local_name(cx, ops[i]);
    CWriter body, *outer = cx->w;
    cw_init(&body);
    body.indent = outer->indent + 1;
    cx->w = &body;
    bool ok = cgen_emit_table[n->op](cx, n);
    cx->w = outer;
    const char *text = body.buf ? body.buf : "";
    bool any = false;
    for (uint32_t i = 0; i < n_ops; i++) any |= cw_uses_word(text, cx->local[ops[i]]);
    if (any) {
        cw_open(outer, "%s", "");
        for (uint32_t i = 0; i < n_ops; i++) {
            uint32_t v = ops[i];
            if (!cw_uses_word(text, cx->local[v])) continue;
            const IrValue *val = &cx->b.g->values[v];
            const char *ct = bundle_ctype((IrDType)val->type.dtype);
            bool weight = cx->b.weight_offset[v] >= 0;
            if (weight) cx->uses_w = true;
            else cx->uses_a = true;
            cw_line(outer, "%s%s *%s = (%s%s *)(%svoid *)(%s + %lld); /* %s */",
                    weight ? "const " : "", ct, cx->local[v], weight ? "const " : "", ct,
                    weight ? "const " : "", weight ? "w" : "a",
                    (long long)(weight ? cx->b.weight_offset[v] : val->mem_offset),
                    cgen_type_str(cx, &val->type));
        }
        if (is_one_block(text, body.indent)) { /* its braces go: the locals' block is its */
            const char *inner = strchr(text, '\n') + 1;
            size_t n_inner = strlen(inner) - (4 * (size_t)body.indent + 2);
            char *copy = ir_arena_alloc(&cx->b.scratch, n_inner + 1);
            memcpy(copy, inner, n_inner);
            copy[n_inner] = 0;
            put_dedented(outer, copy);
        } else {
            cw_raw(outer, "%s", text);
        }
        cw_close(outer, NULL);
    } else {
        put_dedented(outer, text);
    }
    for (uint32_t i = 0; i < n_ops; i++) cx->local[ops[i]] = NULL;
    cw_free(&body);
    return ok;
}

bool cgen_emit_nodes(CgenCtx *cx) {
    bool ok = true;
    for (uint32_t i = 0; i < cx->b.g->n_nodes; i++) {
        const IrNode *n = &cx->b.g->nodes[i];
        if (n->dead) continue;
        cx->node = i;
        bundle_node_comment(&cx->b, cx->w, n);
        ok &= cx->names ? emit_with_locals(cx, n) : cgen_emit_table[n->op](cx, n);
    }
    return ok;
}
