/* Text form printer: writes an IrGraph as the `kiln-ir 1` text that text_parse.c reads back
 * (grammar at the top of text_parse.c). Output is deterministic: the same graph gives the same
 * bytes. Values are printed under their ONNX names; names that are empty or shared by several
 * printed values of one graph get a `~k` suffix (k: their order among the namesakes). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "text.h"

#define NAME_UNIQUE (-2)    /* display: the bare name */
#define NAME_UNDECLARED (-1) /* not declared in this graph (e.g. produced by a dead node) */

/* Display names of one graph's printed values: dup[v] is NAME_UNIQUE, NAME_UNDECLARED or the
 * k of `%name~k`. The parent's map lets `outer` declarations name the enclosing value. */
typedef struct NameMap {
    const IrGraph *g;
    const struct NameMap *parent;
    int32_t *dup;
} NameMap;

typedef struct Printer {
    FILE *out;
    bool full_data;
    bool planned; /* the root carries a memory plan (pass_plan_memory) */
} Printer;

/* ---- small pieces ------------------------------------------------------------------ */

static void put_indent(Printer *p, int depth) {
    for (int i = 0; i < depth; i++) fputs("  ", p->out);
}

/* Length of the well-formed UTF-8 sequence of 2 to 4 bytes at s, or 0. */
static size_t utf8_seq_len(const unsigned char *s, size_t avail) {
    size_t n = s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3
             : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
    if (n == 0 || n > avail) return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    return n;
}

/* A string in quotes: UTF-8 text stays readable, other bytes outside printable ASCII are
 * escaped as \xHH. */
static void put_quoted(Printer *p, const char *s, size_t len) {
    static const char hexd[] = "0123456789abcdef";
    FILE *f = p->out;
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        size_t u = c >= 0x80 ? utf8_seq_len((const unsigned char *)s + i, len - i) : 0;
        if (u) {
            fwrite(s + i, 1, u, f);
            i += u - 1;
        } else if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
        } else if (c == '\n') {
            fputs("\\n", f);
        } else if (c == '\t') {
            fputs("\\t", f);
        } else if (c < 0x20 || c >= 0x7f) {
            fputs("\\x", f);
            fputc(hexd[c >> 4], f);
            fputc(hexd[c & 15], f);
        } else {
            fputc(c, f);
        }
    }
    fputc('"', f);
}

static void put_cstr(Printer *p, const char *s) { put_quoted(p, s ? s : "", s ? strlen(s) : 0); }

/* A name in identifier position: bare when it lexes as one identifier, else quoted. */
static void put_name(Printer *p, const char *s) {
    if (!s) s = "";
    size_t len = strlen(s);
    if (ir_text_is_ident(s, len)) fputs(s, p->out);
    else put_quoted(p, s, len);
}

/* Floats print with 9 significant digits (enough to read back the same float) and always
 * look like floats (a '.', an exponent, inf or nan); NaNs other than the default quiet NaN
 * print their bits. */
static void put_float(Printer *p, float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if (isnan(f)) {
        if (bits == IR_TEXT_NAN_BITS) fputs("nan", p->out);
        else fprintf(p->out, "nan:0x%08" PRIx32, bits);
        return;
    }
    if (isinf(f)) {
        fputs(f < 0 ? "-inf" : "inf", p->out);
        return;
    }
    char buf[48];
    snprintf(buf, sizeof buf, "%.9g", (double)f);
    fputs(buf, p->out);
    if (!strpbrk(buf, ".e")) fputs(".0", p->out);
}

static void put_value_ref(Printer *p, const NameMap *m, uint32_t v) {
    if (v == IR_NONE) {
        fputc('_', p->out);
        return;
    }
    if (v >= m->g->n_values) {
        fprintf(p->out, "%%\"<invalid %" PRIu32 ">\"", v);
        return;
    }
    const char *s = m->g->values[v].name ? m->g->values[v].name : "";
    size_t len = strlen(s);
    fputc('%', p->out);
    if (ir_text_is_bare_value(s, len)) fputs(s, p->out);
    else put_quoted(p, s, len);
    if (m->dup[v] >= 0) fprintf(p->out, "~%" PRId32, m->dup[v]);
}

/* ---- types ------------------------------------------------------------------------- */

static void put_type(Printer *p, const IrGraph *g, const IrType *t);

static void put_dims(Printer *p, const IrGraph *g, const IrType *t) {
    FILE *f = p->out;
    fputs(ir_dtype_name((IrDType)t->dtype), f);
    if (t->rank < 0) {
        fputs("[*]", f);
    } else {
        fputc('[', f);
        int rank = t->rank > IR_MAX_RANK ? IR_MAX_RANK : t->rank;
        const IrGraph *root = ir_graph_root(g);
        for (int i = 0; i < rank; i++) {
            if (i) fputc(',', f);
            uint32_t sym = t->syms[i];
            if (sym && sym <= root->n_syms) {
                put_name(p, root->syms[sym - 1]);
                if (t->dims[i] != IR_DIM_UNKNOWN) fprintf(f, "=%" PRId64, t->dims[i]);
            } else if (t->dims[i] == IR_DIM_UNKNOWN) {
                fputc('?', f);
            } else {
                fprintf(f, "%" PRId64, t->dims[i]);
            }
        }
        fputc(']', f);
    }
    if (t->layout == IR_LAYOUT_NCHW) fputs("@nchw", f);
    else if (t->layout == IR_LAYOUT_NHWC) fputs("@nhwc", f);
    else if (t->layout != IR_LAYOUT_PLAIN) fprintf(f, "@%u", (unsigned)t->layout);
}

static void put_elem_type(Printer *p, const IrGraph *g, const IrType *t) {
    if (!t || t->kind == IR_TYPE_UNDEF) fputc('?', p->out);
    else put_type(p, g, t);
}

static void put_type(Printer *p, const IrGraph *g, const IrType *t) {
    FILE *f = p->out;
    switch (t->kind) {
    case IR_TYPE_TENSOR: put_dims(p, g, t); break;
    case IR_TYPE_SPARSE_TENSOR:
        fputs("sparse<", f);
        put_dims(p, g, t);
        fputc('>', f);
        break;
    case IR_TYPE_SEQUENCE:
        fputs("seq<", f);
        put_elem_type(p, g, t->elem);
        fputc('>', f);
        break;
    case IR_TYPE_OPTIONAL:
        fputs("opt<", f);
        put_elem_type(p, g, t->elem);
        fputc('>', f);
        break;
    case IR_TYPE_MAP:
        fprintf(f, "map<%s, ", ir_dtype_name((IrDType)t->key_dtype));
        put_elem_type(p, g, t->elem);
        fputc('>', f);
        break;
    default: fputc('?', f); break;
    }
}

static void put_float_list(Printer *p, const float *v, uint32_t n) {
    fputc('[', p->out);
    for (uint32_t i = 0; i < n; i++) {
        if (i) fputs(", ", p->out);
        put_float(p, v[i]);
    }
    fputc(']', p->out);
}

/* The mem_offset a value has unless the text says otherwise: -1 (no slot) in a planned root,
 * else 0, what ir_value_add leaves. */
static int64_t default_mem_offset(const IrGraph *g, bool planned) {
    return planned && !g->parent ? -1 : 0;
}

static void put_quant(Printer *p, const IrQuant *q);

/* ` : TYPE quant(...) mem=OFFSET` after a declared value; each part only when it says
 * something. */
static void put_value_type(Printer *p, const IrGraph *g, const IrValue *v) {
    if (v->type.kind != IR_TYPE_UNDEF) {
        fputs(" : ", p->out);
        put_type(p, g, &v->type);
    }
    if (v->quant) put_quant(p, v->quant);
    if (v->mem_offset != default_mem_offset(g, p->planned))
        fprintf(p->out, " mem=%" PRId64, v->mem_offset);
}

static void put_quant(Printer *p, const IrQuant *q) {
    fputs(" quant(", p->out);
    if (q->axis == -1 && q->n == 1) {
        fputs("scale=", p->out);
        put_float(p, q->scales[0]);
        if (q->zero_points) fprintf(p->out, ", zero_point=%" PRId32, q->zero_points[0]);
    } else {
        fprintf(p->out, "axis=%" PRId32 ", scale=", q->axis);
        put_float_list(p, q->scales, q->n);
        if (q->zero_points) {
            fputs(", zero_point=[", p->out);
            for (uint32_t i = 0; i < q->n; i++)
                fprintf(p->out, "%s%" PRId32, i ? ", " : "", q->zero_points[i]);
            fputc(']', p->out);
        }
    }
    fputc(')', p->out);
}

/* ---- tensors ----------------------------------------------------------------------- */

static size_t strings_bytes(const IrTensor *t) {
    size_t total = 0;
    for (int64_t i = 0; t->strings && i < t->n_elems; i++) total += t->strings[i].len;
    return total;
}

/* The data part of a tensor literal: hex"..", a list of strings, or (elided) a size and
 * checksum in angle brackets, which the parser refuses. */
static void put_tensor_data(Printer *p, const IrTensor *t) {
    FILE *f = p->out;
    if (t->dtype == IR_DTYPE_STRING) {
        size_t total = strings_bytes(t);
        if (!p->full_data && total > IR_PRINT_ELIDE_BYTES) {
            uint32_t h = IR_TEXT_FNV_SEED;
            for (int64_t i = 0; i < t->n_elems; i++) {
                uint64_t len = t->strings[i].len;
                h = ir_text_fnv1a(h, &len, sizeof len);
                h = ir_text_fnv1a(h, t->strings[i].data, t->strings[i].len);
            }
            fprintf(f, "<%" PRId64 " strings fnv1a:%08" PRIx32 ">", t->n_elems, h);
            return;
        }
        fputc('[', f);
        for (int64_t i = 0; t->strings && i < t->n_elems; i++) {
            if (i) fputs(", ", f);
            put_quoted(p, t->strings[i].data ? t->strings[i].data : "", t->strings[i].len);
        }
        fputc(']', f);
        return;
    }
    size_t n = t->data ? t->size_bytes : 0;
    if (!p->full_data && n > IR_PRINT_ELIDE_BYTES) {
        fprintf(f, "<%zu bytes fnv1a:%08" PRIx32 ">", n,
                ir_text_fnv1a(IR_TEXT_FNV_SEED, t->data, n));
        return;
    }
    static const char hexd[] = "0123456789abcdef";
    enum { CHUNK_BYTES = 4096 };
    char buf[2 * CHUNK_BYTES];
    const unsigned char *b = t->data;
    fputs("hex\"", f);
    for (size_t i = 0; i < n; i += CHUNK_BYTES) {
        size_t k = n - i < CHUNK_BYTES ? n - i : CHUNK_BYTES;
        for (size_t j = 0; j < k; j++) {
            buf[2 * j] = hexd[b[i + j] >> 4];
            buf[2 * j + 1] = hexd[b[i + j] & 15];
        }
        fwrite(buf, 1, 2 * k, f);
    }
    fputc('"', f);
}

/* A full tensor literal: [tensor NAME] DTYPE[DIMS] DATA. */
static void put_tensor(Printer *p, const IrTensor *t) {
    FILE *f = p->out;
    if (t->name && t->name[0]) {
        fputs("tensor ", f);
        put_name(p, t->name);
        fputc(' ', f);
    }
    fprintf(f, "%s[", ir_dtype_name((IrDType)t->dtype));
    int rank = t->rank > IR_MAX_RANK ? IR_MAX_RANK : t->rank;
    for (int i = 0; i < rank; i++) fprintf(f, "%s%" PRId64, i ? "," : "", t->dims[i]);
    fputs("] ", f);
    put_tensor_data(p, t);
}

/* A value's initializer: just the data when the tensor's dtype and dims are the value's
 * (static) type and its name is the value's; the full literal otherwise. */
static void put_initializer(Printer *p, const IrValue *v) {
    const IrTensor *t = v->tensor;
    bool short_form = v->type.kind == IR_TYPE_TENSOR && v->type.dtype == t->dtype &&
                      v->type.rank == t->rank && t->rank >= 0 && t->rank <= IR_MAX_RANK &&
                      (!t->name || strcmp(t->name, v->name ? v->name : "") == 0);
    for (int i = 0; short_form && i < t->rank; i++)
        short_form = v->type.syms[i] == 0 && v->type.dims[i] == t->dims[i];
    fputs(" = ", p->out);
    if (short_form) put_tensor_data(p, t);
    else put_tensor(p, t);
}

/* ---- graphs ------------------------------------------------------------------------ */

static void print_body(Printer *p, const IrGraph *g, const NameMap *parent, int depth);

static const char *const list_kind_names[] = {
    [IR_ATTR_KIND_FLOATS] = "floats",   [IR_ATTR_KIND_INTS] = "ints",
    [IR_ATTR_KIND_STRINGS] = "strings", [IR_ATTR_KIND_TENSORS] = "tensors",
    [IR_ATTR_KIND_GRAPHS] = "graphs",   [IR_ATTR_KIND_SPARSE_TENSORS] = "sparse_tensors",
    [IR_ATTR_KIND_TYPE_PROTOS] = "types",
};

static void put_subgraph(Printer *p, const IrGraph *g, uint32_t idx, const NameMap *m,
                         int depth) {
    if (idx >= g->n_subgraphs) {
        fprintf(p->out, "<invalid subgraph %" PRIu32 ">", idx);
        return;
    }
    const IrGraph *sub = g->subgraphs[idx];
    fputs("graph ", p->out);
    put_name(p, sub->name);
    fputs(" {\n", p->out);
    print_body(p, sub, m, depth + 1);
    put_indent(p, depth);
    fputc('}', p->out);
}

static void put_attr_value(Printer *p, const IrGraph *g, const IrAttr *a, const NameMap *m,
                           int depth) {
    FILE *f = p->out;
    uint8_t k = a->kind;
    switch (k) {
    case IR_ATTR_KIND_INT: fprintf(f, "%" PRId64, a->i); return;
    case IR_ATTR_KIND_FLOAT: put_float(p, a->f); return;
    case IR_ATTR_KIND_STRING: put_quoted(p, a->s.data ? a->s.data : "", a->s.len); return;
    case IR_ATTR_KIND_TENSOR:
    case IR_ATTR_KIND_SPARSE_TENSOR:
        if (k == IR_ATTR_KIND_SPARSE_TENSOR) fputs("sparse ", f);
        if (a->n >= 1 && a->tensors) put_tensor(p, &a->tensors[0]);
        else fputs("<missing tensor>", f);
        return;
    case IR_ATTR_KIND_GRAPH:
        if (a->n >= 1 && a->graphs) put_subgraph(p, g, a->graphs[0], m, depth);
        else fputs("<missing graph>", f);
        return;
    case IR_ATTR_KIND_TYPE_PROTO:
        fputs("type<", f);
        put_elem_type(p, g, a->n >= 1 && a->types ? &a->types[0] : NULL);
        fputc('>', f);
        return;
    case IR_ATTR_KIND_FLOATS: case IR_ATTR_KIND_INTS: case IR_ATTR_KIND_STRINGS:
    case IR_ATTR_KIND_TENSORS: case IR_ATTR_KIND_SPARSE_TENSORS: case IR_ATTR_KIND_GRAPHS:
    case IR_ATTR_KIND_TYPE_PROTOS: break;
    default: fputs("undef", f); return;
    }
    if (a->n == 0) {
        fprintf(f, "%s[]", list_kind_names[k]);
        return;
    }
    fputc('[', f);
    for (uint32_t i = 0; i < a->n; i++) {
        if (i) fputs(", ", f);
        switch (k) {
        case IR_ATTR_KIND_FLOATS: put_float(p, a->floats[i]); break;
        case IR_ATTR_KIND_INTS: fprintf(f, "%" PRId64, a->ints[i]); break;
        case IR_ATTR_KIND_STRINGS:
            put_quoted(p, a->strings[i].data ? a->strings[i].data : "", a->strings[i].len);
            break;
        case IR_ATTR_KIND_SPARSE_TENSORS: fputs("sparse ", f); /* fall through */
        case IR_ATTR_KIND_TENSORS: put_tensor(p, &a->tensors[i]); break;
        case IR_ATTR_KIND_GRAPHS: put_subgraph(p, g, a->graphs[i], m, depth); break;
        default:
            fputs("type<", f);
            put_elem_type(p, g, &a->types[i]);
            fputc('>', f);
            break;
        }
    }
    fputc(']', f);
}

static bool attr_has_graph(const IrAttr *a) {
    return a->present && (a->kind == IR_ATTR_KIND_GRAPH || a->kind == IR_ATTR_KIND_GRAPHS) &&
           a->n > 0;
}

static void print_node(Printer *p, const IrGraph *g, const IrNode *n, const NameMap *m,
                       int depth) {
    FILE *f = p->out;
    put_indent(p, depth);
    if (n->n_outputs == 0) fputs("()", f);
    for (uint32_t i = 0; i < n->n_outputs; i++) {
        if (i) fputs(", ", f);
        uint32_t v = n->outputs[i];
        put_value_ref(p, m, v);
        if (v != IR_NONE && v < g->n_values) put_value_type(p, g, &g->values[v]);
    }
    fputs(" = ", f);
    const char *op_type = n->op_type ? n->op_type : "";
    const char *domain = n->domain ? n->domain : "";
    put_name(p, op_type);
    fputc('(', f);
    for (uint32_t i = 0; i < n->n_inputs; i++) {
        if (i) fputs(", ", f);
        put_value_ref(p, m, n->inputs[i]);
    }
    fputc(')', f);
    if (domain[0]) {
        fputs(" domain=", f);
        put_name(p, domain);
    }
    if (n->name && n->name[0]) {
        fputs(" name=", f);
        put_name(p, n->name);
    }
    if (n->opset != ir_graph_opset(g, domain)) fprintf(f, " opset=%" PRId32, n->opset);
    /* The IR op, when the op type does not look it up (say, an op kept unknown on purpose). */
    if (ir_op_lookup(domain, op_type) != (IrOp)n->op) {
        if (n->op == IR_OP_UNKNOWN || n->op >= IR_OP_COUNT) {
            fputs(" ir_op=unknown", f);
        } else {
            const IrOpInfo *info = ir_op_info((IrOp)n->op);
            fputs(" ir_op=", f);
            put_name(p, info->name);
            if (info->domain[0]) {
                fputs(" ir_op_domain=", f);
                put_name(p, info->domain);
            }
        }
    }
    uint32_t n_present = 0;
    bool multiline = false;
    for (uint32_t i = 0; i < n->n_attrs; i++) {
        n_present += n->attrs[i].present;
        multiline |= attr_has_graph(&n->attrs[i]);
    }
    if (n_present) {
        fputs(" {", f);
        bool first = true;
        for (uint32_t i = 0; i < n->n_attrs; i++) {
            const IrAttr *a = &n->attrs[i];
            if (!a->present) continue;
            if (!first) fputc(',', f);
            if (multiline) {
                fputc('\n', f);
                put_indent(p, depth + 1);
            } else if (!first) {
                fputc(' ', f);
            }
            first = false;
            put_name(p, a->name);
            fputc('=', f);
            put_attr_value(p, g, a, m, depth + 1);
        }
        if (multiline) {
            fputc('\n', f);
            put_indent(p, depth);
        }
        fputc('}', f);
    }
    fputc('\n', f);
}

/* Printed values in declaration order: inputs, outer values, constants, node results. */
static uint32_t declared_values(const IrGraph *g, uint32_t *order, uint8_t *seen) {
    uint32_t k = 0;
#define DECLARE(v)                                                                        \
    do {                                                                                  \
        uint32_t v_ = (v);                                                                \
        if (v_ < g->n_values && !seen[v_]) {                                              \
            seen[v_] = 1;                                                                 \
            order[k++] = v_;                                                              \
        }                                                                                 \
    } while (0)
    for (uint32_t i = 0; i < g->n_inputs; i++) DECLARE(g->inputs[i]);
    for (uint32_t v = 0; v < g->n_values; v++)
        if (g->values[v].kind == IR_VALUE_OUTER) DECLARE(v);
    for (uint32_t v = 0; v < g->n_values; v++)
        if (g->values[v].kind == IR_VALUE_CONST) DECLARE(v);
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead) continue;
        for (uint32_t j = 0; j < n->n_outputs; j++) DECLARE(n->outputs[j]);
    }
#undef DECLARE
    return k;
}

typedef struct NameSlot {
    const char *name;
    uint32_t pos; /* declaration position */
    uint32_t v;
} NameSlot;

static int cmp_slot(const void *pa, const void *pb) {
    const NameSlot *a = pa, *b = pb;
    int c = strcmp(a->name, b->name);
    return c ? c : (a->pos < b->pos ? -1 : a->pos > b->pos);
}

/* Fills m->dup: a value whose name is empty or shared gets its rank among its namesakes in
 * declaration order. */
static void name_map_build(NameMap *m, const IrGraph *g, const NameMap *parent) {
    m->g = g;
    m->parent = parent;
    size_t n = g->n_values ? g->n_values : 1;
    m->dup = malloc(n * sizeof *m->dup);
    uint32_t *order = malloc(n * sizeof *order);
    NameSlot *slots = malloc(n * sizeof *slots);
    uint8_t *seen = calloc(n, 1);
    IR_ASSERT(m->dup && order && slots && seen);
    for (uint32_t v = 0; v < g->n_values; v++) m->dup[v] = NAME_UNDECLARED;
    uint32_t k = declared_values(g, order, seen);
    for (uint32_t i = 0; i < k; i++) {
        const char *name = g->values[order[i]].name;
        slots[i] = (NameSlot){name ? name : "", i, order[i]};
    }
    qsort(slots, k, sizeof *slots, cmp_slot);
    for (uint32_t i = 0; i < k;) {
        uint32_t j = i + 1;
        while (j < k && strcmp(slots[j].name, slots[i].name) == 0) j++;
        if (j - i == 1 && slots[i].name[0]) m->dup[slots[i].v] = NAME_UNIQUE;
        else
            for (uint32_t a = i; a < j; a++) m->dup[slots[a].v] = (int32_t)(a - i);
        i = j;
    }
    free(order);
    free(slots);
    free(seen);
}

static void print_decl(Printer *p, const IrGraph *g, const NameMap *m, const char *kw,
                       uint32_t v, int depth) {
    put_indent(p, depth);
    fprintf(p->out, "%s ", kw);
    put_value_ref(p, m, v);
    if (v < g->n_values) put_value_type(p, g, &g->values[v]);
}

static void print_body(Printer *p, const IrGraph *g, const NameMap *parent, int depth) {
    FILE *f = p->out;
    NameMap m;
    name_map_build(&m, g, parent);
    size_t n = g->n_values ? g->n_values : 1;
    uint8_t *in_inputs = calloc(n, 1);
    IR_ASSERT(in_inputs);
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        uint32_t v = g->inputs[i];
        print_decl(p, g, &m, "input", v, depth);
        if (v < g->n_values) {
            in_inputs[v] = 1;
            if (g->values[v].tensor) put_initializer(p, &g->values[v]);
        }
        fputc('\n', f);
    }
    for (uint32_t v = 0; v < g->n_values; v++) {
        const IrValue *val = &g->values[v];
        if (val->kind != IR_VALUE_OUTER || in_inputs[v]) continue;
        print_decl(p, g, &m, "outer", v, depth);
        /* `from %y` when the enclosing value prints under another name */
        if (!parent || val->producer >= parent->g->n_values) {
            fputs(" from _", f);
        } else {
            const IrValue *pv = &parent->g->values[val->producer];
            bool same = parent->dup[val->producer] == m.dup[v] &&
                        strcmp(pv->name ? pv->name : "", val->name ? val->name : "") == 0;
            if (!same) {
                fputs(" from ", f);
                put_value_ref(p, parent, val->producer);
            }
        }
        fputc('\n', f);
    }
    for (uint32_t v = 0; v < g->n_values; v++) {
        const IrValue *val = &g->values[v];
        if (val->kind != IR_VALUE_CONST || in_inputs[v]) continue;
        print_decl(p, g, &m, "const", v, depth);
        if (val->tensor) put_initializer(p, val);
        fputc('\n', f);
    }
    for (uint32_t i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead) print_node(p, g, &g->nodes[i], &m, depth);
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        put_indent(p, depth);
        fputs("output ", f);
        put_value_ref(p, &m, g->outputs[i]);
        fputc('\n', f);
    }
    free(in_inputs);
    free(m.dup);
}

void ir_print(FILE *out, const IrGraph *g, const IrPrintOpts *opts) {
    const IrGraph *root = ir_graph_root(g);
    Printer p = {out, opts ? opts->full_data : true, false};
    p.planned = root->arena_size_bytes || root->arena_lower_bound_bytes || root->arena_naive_bytes;
    for (uint32_t v = 0; v < root->n_values && !p.planned; v++)
        p.planned = root->values[v].mem_offset != 0;
    fprintf(out, "%s %d\n", IR_TEXT_MAGIC, IR_TEXT_VERSION);
    fprintf(out, "model ir_version=%" PRId64, root->ir_version);
    if (root->producer_name) {
        fputs(" producer=", out);
        put_cstr(&p, root->producer_name);
    }
    if (root->producer_version) {
        fputs(" producer_version=", out);
        put_cstr(&p, root->producer_version);
    }
    fputc('\n', out);
    if (root->n_opsets) {
        fputs("opset ", out);
        for (uint32_t i = 0; i < root->n_opsets; i++) {
            if (i) fputs(", ", out);
            put_name(&p, root->opsets[i].domain);
            fprintf(out, "=%" PRId64, root->opsets[i].version);
        }
        fputc('\n', out);
    }
    if (p.planned)
        fprintf(out, "plan arena=%" PRId64 " lower_bound=%" PRId64 " naive=%" PRId64 "\n",
                root->arena_size_bytes, root->arena_lower_bound_bytes, root->arena_naive_bytes);
    if (root->n_syms) {
        fputs("symbols ", out);
        for (uint32_t i = 0; i < root->n_syms; i++) {
            if (i) fputs(", ", out);
            put_name(&p, root->syms[i]);
        }
        fputc('\n', out);
    }
    fputs("graph ", out);
    put_name(&p, g->name);
    fputs(" {\n", out);
    print_body(&p, g, NULL, 1);
    fputs("}\n", out);
}

char *ir_print_to_string(const IrGraph *g, const IrPrintOpts *opts) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    IR_ASSERT(f);
    ir_print(f, g, opts);
    fclose(f);
    return buf;
}
