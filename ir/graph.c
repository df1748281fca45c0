/* Graph construction and access: values, nodes, subgraphs, symbols, opsets, attributes.
 * Arrays grow inside the graph's arena (the old block is left behind; growth doubles, so
 * the waste is bounded by the final size). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

static void *grow(IrArena *a, void *old, uint32_t n, uint32_t *cap, size_t elem_bytes) {
    if (n < *cap) return old;
    uint32_t new_cap = *cap ? *cap * 2 : 8;
    IR_ASSERT(new_cap > *cap);
    void *p = ir_arena_alloc(a, (size_t)new_cap * elem_bytes);
    if (n) memcpy(p, old, (size_t)n * elem_bytes);
    *cap = new_cap;
    return p;
}

IrGraph *ir_graph_new(const char *name) {
    IrArena *arena = calloc(1, sizeof *arena);
    IR_ASSERT(arena);
    IrGraph *g = ir_arena_alloc(arena, sizeof *g);
    g->arena = arena;
    g->name = ir_arena_strdup(arena, name ? name : "");
    return g;
}

uint32_t ir_graph_add_subgraph(IrGraph *parent, const char *name) {
    IrGraph *g = ir_arena_alloc(parent->arena, sizeof *g);
    g->arena = parent->arena;
    g->parent = parent;
    g->name = ir_arena_strdup(parent->arena, name ? name : "");
    parent->subgraphs = grow(parent->arena, parent->subgraphs, parent->n_subgraphs,
                             &parent->cap_subgraphs, sizeof *parent->subgraphs);
    parent->subgraphs[parent->n_subgraphs] = g;
    return parent->n_subgraphs++;
}

void ir_graph_free(IrGraph *g) {
    if (!g) return;
    IR_ASSERT(!g->parent);
    IrArena *arena = g->arena;
    ir_arena_free(arena);
    free(arena);
}

const IrGraph *ir_graph_root(const IrGraph *g) {
    while (g->parent) g = g->parent;
    return g;
}

uint32_t ir_value_add(IrGraph *g, const char *name, const IrType *type, IrValueKind kind) {
    g->values = grow(g->arena, g->values, g->n_values, &g->cap_values, sizeof *g->values);
    IrValue *v = &g->values[g->n_values];
    memset(v, 0, sizeof *v);
    v->name = ir_arena_strdup(g->arena, name ? name : "");
    if (type) v->type = *type;
    else v->type.rank = -1;
    v->kind = (uint8_t)kind;
    v->producer = IR_NONE;
    return g->n_values++;
}

uint32_t ir_node_add(IrGraph *g, IrOp op, const char *name, uint32_t n_inputs,
                     uint32_t n_outputs, uint32_t n_attrs_unknown) {
    g->nodes = grow(g->arena, g->nodes, g->n_nodes, &g->cap_nodes, sizeof *g->nodes);
    IrNode *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    const IrOpInfo *info = ir_op_info(op);
    n->op = (uint16_t)op;
    n->name = ir_arena_strdup(g->arena, name ? name : "");
    n->op_type = info->name;
    n->domain = info->domain;
    n->n_inputs = n_inputs;
    n->inputs = ir_arena_alloc(g->arena, (n_inputs ? n_inputs : 1) * sizeof(uint32_t));
    for (uint32_t i = 0; i < n_inputs; i++) n->inputs[i] = IR_NONE;
    n->n_outputs = n_outputs;
    n->outputs = ir_arena_alloc(g->arena, (n_outputs ? n_outputs : 1) * sizeof(uint32_t));
    for (uint32_t i = 0; i < n_outputs; i++) n->outputs[i] = IR_NONE;
    n->n_attrs = op == IR_OP_UNKNOWN ? n_attrs_unknown : info->n_attrs;
    n->attrs = ir_arena_alloc(g->arena, (n->n_attrs ? n->n_attrs : 1) * sizeof(IrAttr));
    for (uint32_t i = 0; i < n->n_attrs; i++) {
        IrAttr *a = &n->attrs[i];
        a->id = IR_NONE;
        if (op != IR_OP_UNKNOWN) {
            const IrAttrInfo *ai = ir_attr_info((IrAttrId)(info->attr_base + i));
            a->id = info->attr_base + i;
            a->name = ai->name;
            a->kind = ai->kind;
        }
    }
    return g->n_nodes++;
}

void ir_graph_add_input(IrGraph *g, uint32_t value) {
    g->inputs = grow(g->arena, g->inputs, g->n_inputs, &g->cap_inputs, sizeof *g->inputs);
    g->inputs[g->n_inputs++] = value;
}

void ir_graph_add_output(IrGraph *g, uint32_t value) {
    g->outputs = grow(g->arena, g->outputs, g->n_outputs, &g->cap_outputs, sizeof *g->outputs);
    g->outputs[g->n_outputs++] = value;
}

uint32_t ir_graph_sym(IrGraph *g, const char *name) {
    IrGraph *root = (IrGraph *)ir_graph_root(g);
    for (uint32_t i = 0; i < root->n_syms; i++)
        if (strcmp(root->syms[i], name) == 0) return i + 1;
    root->syms = grow(root->arena, (void *)root->syms, root->n_syms, &root->cap_syms,
                      sizeof *root->syms);
    root->syms[root->n_syms++] = ir_arena_strdup(root->arena, name);
    return root->n_syms;
}

const char *ir_graph_sym_name(const IrGraph *g, uint32_t sym) {
    const IrGraph *root = ir_graph_root(g);
    IR_ASSERT(sym >= 1 && sym <= root->n_syms);
    return root->syms[sym - 1];
}

void ir_graph_set_opset(IrGraph *g, const char *domain, int64_t version) {
    IrGraph *root = (IrGraph *)ir_graph_root(g);
    if (!domain || strcmp(domain, "ai.onnx") == 0) domain = "";
    for (uint32_t i = 0; i < root->n_opsets; i++)
        if (strcmp(root->opsets[i].domain, domain) == 0) {
            root->opsets[i].version = version;
            return;
        }
    uint32_t cap = root->n_opsets; /* exact-size arrays: opsets are few */
    IrOpset *o = ir_arena_alloc(root->arena, (cap + 1) * sizeof *o);
    if (cap) memcpy(o, root->opsets, cap * sizeof *o);
    o[cap].domain = ir_arena_strdup(root->arena, domain);
    o[cap].version = version;
    root->opsets = o;
    root->n_opsets = cap + 1;
}

int64_t ir_graph_opset(const IrGraph *g, const char *domain) {
    const IrGraph *root = ir_graph_root(g);
    if (!domain || strcmp(domain, "ai.onnx") == 0) domain = "";
    for (uint32_t i = 0; i < root->n_opsets; i++)
        if (strcmp(root->opsets[i].domain, domain) == 0) return root->opsets[i].version;
    return 0;
}

void ir_graph_compact(IrGraph *g) {
    uint32_t *remap = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *remap);
    IR_ASSERT(remap);
    uint32_t k = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        remap[i] = g->nodes[i].dead ? IR_NONE : k;
        if (!g->nodes[i].dead) g->nodes[k++] = g->nodes[i];
    }
    g->n_nodes = k;
    for (uint32_t v = 0; v < g->n_values; v++) {
        IrValue *val = &g->values[v];
        if (val->kind == IR_VALUE_NODE && val->producer != IR_NONE)
            val->producer = remap[val->producer];
    }
    free(remap);
}

/* ---- attributes ---- */

IrAttr *ir_node_attr(const IrNode *n, IrAttrId id) {
    const IrOpInfo *info = ir_op_info((IrOp)n->op);
    IR_ASSERT(id >= info->attr_base && id < info->attr_base + info->n_attrs);
    return &n->attrs[id - info->attr_base];
}

bool ir_attr_present(const IrNode *n, IrAttrId id) { return ir_node_attr(n, id)->present; }

int64_t ir_attr_i(const IrNode *n, IrAttrId id) {
    const IrAttr *a = ir_node_attr(n, id);
    return a->present ? a->i : ir_attr_info(id)->def_i;
}

float ir_attr_f(const IrNode *n, IrAttrId id) {
    const IrAttr *a = ir_node_attr(n, id);
    return a->present ? a->f : ir_attr_info(id)->def_f;
}

const char *ir_attr_s(const IrNode *n, IrAttrId id) {
    const IrAttr *a = ir_node_attr(n, id);
    if (a->present) return a->s.data ? a->s.data : "";
    return ir_attr_info(id)->def_s ? ir_attr_info(id)->def_s : "";
}

const int64_t *ir_attr_ints(const IrNode *n, IrAttrId id, uint32_t *n_out) {
    const IrAttr *a = ir_node_attr(n, id);
    *n_out = a->present ? a->n : 0;
    return a->present ? a->ints : NULL;
}

/* ---- types ---- */

IrType ir_type_tensor(IrDType dtype, int rank, const int64_t *dims) {
    IrType t;
    memset(&t, 0, sizeof t);
    t.kind = IR_TYPE_TENSOR;
    t.dtype = (uint8_t)dtype;
    IR_ASSERT(rank >= -1 && rank <= IR_MAX_RANK);
    t.rank = (int8_t)rank;
    for (int i = 0; i < rank; i++) t.dims[i] = dims ? dims[i] : IR_DIM_UNKNOWN;
    return t;
}

bool ir_type_is_static(const IrType *t) {
    if (t->kind != IR_TYPE_TENSOR || t->rank < 0) return false;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] < 0) return false;
    return true;
}

int64_t ir_type_numel(const IrType *t) {
    if (!ir_type_is_static(t)) return -1;
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] > 0 && n > INT64_MAX / t->dims[i]) return -1; /* overflow: not usable */
        n *= t->dims[i];
    }
    return n;
}

bool ir_type_equal(const IrType *a, const IrType *b) {
    if (a->kind != b->kind || a->dtype != b->dtype || a->rank != b->rank ||
        a->layout != b->layout || a->key_dtype != b->key_dtype)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i] || a->syms[i] != b->syms[i]) return false;
    if (!a->elem || !b->elem) return a->elem == b->elem;
    return ir_type_equal(a->elem, b->elem);
}

IrTensor *ir_tensor_new(IrArena *a, IrDType dtype, int rank, const int64_t *dims) {
    IR_ASSERT(rank >= 0 && rank <= IR_MAX_RANK);
    IrTensor *t = ir_arena_alloc(a, sizeof *t);
    t->dtype = (uint8_t)dtype;
    t->rank = (int8_t)rank;
    t->n_elems = 1;
    for (int i = 0; i < rank; i++) {
        t->dims[i] = dims[i];
        t->n_elems *= dims[i];
    }
    if (dtype == IR_DTYPE_STRING) {
        t->strings = ir_arena_alloc(a, (size_t)(t->n_elems ? t->n_elems : 1) * sizeof(IrStr));
    } else {
        t->size_bytes = ir_dtype_size_bytes(dtype, t->n_elems);
        t->data = ir_arena_alloc(a, t->size_bytes ? t->size_bytes : 1);
    }
    return t;
}

void ir_node_diag(Diag *d, DiagLevel level, const IrNode *n, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *op = n->op_type ? n->op_type : ir_op_name((IrOp)n->op);
    const char *dom = n->domain && n->domain[0] ? n->domain : "";
    char full[1280];
    snprintf(full, sizeof full, "node '%s' (%s%s%s, opset %d)%s", n->name ? n->name : "", dom,
             dom[0] ? "." : "", op, n->opset, msg);
    if (level == DIAG_ERROR) diag_error(d, "%s", full);
    else if (level == DIAG_WARNING) diag_warning(d, "%s", full);
    else diag_note(d, "%s", full);
}
