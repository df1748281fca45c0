/* Common subexpression elimination: two live nodes with the same op, domain, opset, inputs
 * (in order; either order for two-input commutative ops) and attributes compute the same
 * values, so the later one's readers read the earlier one's outputs and the later one dies.
 * Random ops, ops with subgraphs, unknown ops and nodes whose outputs are graph outputs
 * are left alone. Nodes are visited in order, so whole duplicated chains merge in one run.
 * requires: nothing; invalidates: node ids, uses; preserves: types, layouts, quant params. */
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"

#define CSE_FNV_PRIME 16777619u
#define CSE_FNV_SEED 2166136261u

static uint32_t mix(uint32_t h, uint32_t v) {
    for (int i = 0; i < 4; i++) h = (h ^ ((v >> (8 * i)) & 0xffu)) * CSE_FNV_PRIME;
    return h;
}

/* Input k of n, with the two inputs of a commutative op in ascending id order. */
static uint32_t input_at(const IrNode *n, uint32_t k) {
    if (n->n_inputs == 2 && ir_op_has((IrOp)n->op, OPF_COMMUT)) {
        uint32_t a = n->inputs[0], b = n->inputs[1];
        uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
        return k == 0 ? lo : hi;
    }
    return n->inputs[k];
}

static uint32_t node_hash(const IrNode *n) {
    uint32_t h = mix(CSE_FNV_SEED, n->op);
    h = mix(h, n->n_inputs);
    for (uint32_t k = 0; k < n->n_inputs; k++) h = mix(h, input_at(n, k));
    return h;
}

static bool same_tensor(const IrTensor *a, const IrTensor *b) {
    if (a->dtype != b->dtype || a->rank != b->rank || a->n_elems != b->n_elems ||
        a->size_bytes != b->size_bytes || a->strings || b->strings)
        return false;
    if (memcmp(a->dims, b->dims, (size_t)(a->rank > 0 ? a->rank : 0) * sizeof a->dims[0]))
        return false;
    return a->size_bytes == 0 || (a->data && b->data && !memcmp(a->data, b->data, a->size_bytes));
}

/* Attribute equality, bit for bit (a NaN float equals the same NaN). */
static bool same_attr(const IrAttr *a, const IrAttr *b) {
    if (a->present != b->present) return false;
    if (!a->present) return true;
    if (a->kind != b->kind || a->n != b->n) return false;
    switch (a->kind) {
    case IR_ATTR_KIND_INT:
        return a->i == b->i;
    case IR_ATTR_KIND_FLOAT:
        return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    case IR_ATTR_KIND_STRING:
        return a->s.len == b->s.len && (!a->s.len || !memcmp(a->s.data, b->s.data, a->s.len));
    case IR_ATTR_KIND_INTS:
        return !a->n || !memcmp(a->ints, b->ints, a->n * sizeof *a->ints);
    case IR_ATTR_KIND_FLOATS:
        return !a->n || !memcmp(a->floats, b->floats, a->n * sizeof *a->floats);
    case IR_ATTR_KIND_STRINGS:
        for (uint32_t i = 0; i < a->n; i++)
            if (a->strings[i].len != b->strings[i].len ||
                (a->strings[i].len &&
                 memcmp(a->strings[i].data, b->strings[i].data, a->strings[i].len)))
                return false;
        return true;
    case IR_ATTR_KIND_TENSOR:
    case IR_ATTR_KIND_TENSORS:
        for (uint32_t i = 0; i < a->n; i++)
            if (!same_tensor(&a->tensors[i], &b->tensors[i])) return false;
        return true;
    default:
        return false; /* graphs, types, sparse: never merged */
    }
}

static bool same_node(const IrGraph *g, const IrNode *a, const IrNode *b) {
    if (a->op != b->op || a->opset != b->opset || a->n_inputs != b->n_inputs ||
        a->n_outputs != b->n_outputs || a->n_attrs != b->n_attrs)
        return false;
    for (uint32_t k = 0; k < a->n_inputs; k++)
        if (input_at(a, k) != input_at(b, k)) return false;
    for (uint32_t k = 0; k < a->n_outputs; k++) {
        uint32_t va = a->outputs[k], vb = b->outputs[k];
        if ((va == IR_NONE) != (vb == IR_NONE)) return false;
        if (va != IR_NONE && !ir_type_equal(&g->values[va].type, &g->values[vb].type))
            return false;
    }
    for (uint32_t k = 0; k < a->n_attrs; k++)
        if (!same_attr(&a->attrs[k], &b->attrs[k])) return false;
    return true;
}

static bool candidate(const IrGraph *g, const IrNode *n) {
    if (n->dead || n->op == IR_OP_UNKNOWN || n->n_outputs == 0) return false;
    if (ir_op_has((IrOp)n->op, OPF_RANDOM) || ir_op_has((IrOp)n->op, OPF_SUBGRAPH)) return false;
    for (uint32_t k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] != IR_NONE && pass_is_graph_output(g, n->outputs[k])) return false;
    return true;
}

bool pass_cse(IrGraph *g, Diag *d) {
    (void)d;
    uint32_t cap = 16;
    while (cap < 2 * g->n_nodes) cap *= 2;
    uint32_t *table = malloc(cap * sizeof *table); /* node ids, open addressing */
    IR_ASSERT(table);
    for (uint32_t i = 0; i < cap; i++) table[i] = IR_NONE;
    bool changed = false;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (!candidate(g, n)) continue;
        uint32_t slot = node_hash(n) & (cap - 1);
        while (table[slot] != IR_NONE && !same_node(g, &g->nodes[table[slot]], n))
            slot = (slot + 1) & (cap - 1);
        if (table[slot] == IR_NONE) {
            table[slot] = i;
            continue;
        }
        const IrNode *keep = &g->nodes[table[slot]];
        for (uint32_t k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] != IR_NONE) ir_replace_uses(g, n->outputs[k], keep->outputs[k]);
        g->nodes[i].dead = true;
        changed = true;
    }
    free(table);
    if (changed) ir_graph_compact(g);
    return changed;
}
