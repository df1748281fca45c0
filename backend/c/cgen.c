/* The C dialect driver: value placement (inputs, outputs, weights, arena), the body of
 * NAME_run node by node through the kernel table, and the helpers op-family emitters use.
 * bundle.c wraps the body into the bundle's files. */
#include "backend/c/cgen.h"
#include "backend/c/cgen_count.h"

#include <stdarg.h>
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
    cgen_register_misc(cgen_emit_table);
    cgen_register_flex(cgen_emit_table);
    cgen_register_fusedattn(cgen_emit_table);
    cgen_register_fusedelt(cgen_emit_table);
    cgen_register_control(cgen_emit_table);
    ready = true;
}

bool cgen_op_supported(IrOp op) {
    cgen_tables_init();
    return op != IR_OP_UNKNOWN && cgen_emit_table[op] != NULL;
}

const char *cgen_ctype(IrDType t) {
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

const IrType *cgen_type(const CgenCtx *cx, uint32_t v) { return &cx->b.g->values[v].type; }

int64_t cgen_numel(const CgenCtx *cx, uint32_t v) { return ir_type_numel(cgen_type(cx, v)); }

const IrTensor *cgen_const(const CgenCtx *cx, uint32_t v) {
    if (v == IR_NONE) return NULL;
    const IrValue *val = &cx->b.g->values[v];
    return val->kind == IR_VALUE_CONST ? val->tensor : NULL;
}

const char *cgen_ptr(CgenCtx *cx, uint32_t v) {
    IR_ASSERT(v != IR_NONE);
    const IrValue *val = &cx->b.g->values[v];
    const char *ct = cgen_ctype((IrDType)val->type.dtype);
    if (cx->expr && cx->expr[v]) return cx->expr[v];
    if (cx->b.field[v]) {
        bool is_input = val->kind == IR_VALUE_INPUT;
        return cgen_fmt(cx, "%s->%s", is_input ? "in" : "out", cx->b.field[v]);
    }
    if (cx->b.weight_offset[v] >= 0) {
        cx->uses_w = true;
        return cgen_fmt(cx, "((const %s *)(w + %lld))", ct, (long long)cx->b.weight_offset[v]);
    }
    cx->uses_a = true;
    IR_ASSERT(val->mem_offset >= 0);
    return cgen_fmt(cx, "((%s *)(a + %lld))", ct, (long long)val->mem_offset);
}

void cgen_test_main_includes(CWriter *w, const char *name) {
    cw_line(w, "#include <stdio.h>");
    cw_line(w, "#include <stdlib.h>");
    cw_line(w, "#include <string.h>");
    cw_line(w, "#include \"%s.h\"", name);
    cw_blank(w);
    cw_line(w, "#define POISON_BYTE 0xA5 /* unwritten output elements show up as garbage */");
    cw_blank(w);
}

bool cgen_same_storage(CgenCtx *cx, uint32_t a, uint32_t b) {
    return strcmp(cgen_ptr(cx, a), cgen_ptr(cx, b)) == 0;
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
    diag_error(cx->b.d, "node '%s' (%s, opset %d): the C backend does not support %s", n->name,
               n->op_type, n->opset, msg);
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

static void emit_node_comment(CgenCtx *cx, const IrNode *n) {
    CWriter tmp;
    cw_init(&tmp);
    cw_raw(&tmp, "%s '%s': %s(", n->op_type, n->name, n->op_type);
    for (uint32_t k = 0; k < n->n_inputs; k++) {
        uint32_t v = n->inputs[k];
        if (v == IR_NONE) cw_raw(&tmp, "%s_", k ? ", " : "");
        else cw_raw(&tmp, "%s%s %s", k ? ", " : "", cx->b.g->values[v].name,
                    cgen_type_str(cx, &cx->b.g->values[v].type));
    }
    cw_raw(&tmp, ") -> ");
    for (uint32_t k = 0; k < n->n_outputs; k++) {
        uint32_t v = n->outputs[k];
        if (v == IR_NONE) cw_raw(&tmp, "%s_", k ? ", " : "");
        else cw_raw(&tmp, "%s%s %s", k ? ", " : "", cx->b.g->values[v].name,
                    cgen_type_str(cx, &cx->b.g->values[v].type));
    }
    cw_comment(cx->w, "%s", tmp.buf);
    cw_free(&tmp);
}

bool cgen_emit_nodes(CgenCtx *cx) {
    bool ok = true;
    for (uint32_t i = 0; i < cx->b.g->n_nodes; i++) {
        const IrNode *n = &cx->b.g->nodes[i];
        if (n->dead) continue;
        cx->node = i;
        emit_node_comment(cx, n);
        ok &= cgen_emit_table[n->op](cx, n);
    }
    return ok;
}
