/* Helpers shared by the rewriting passes (cse, fold-batchnorm, fuse, fuse-patterns): graph
 * output checks, reading and creating f32 constants, and replacing a node in place so that
 * a fused node takes the position of the last node of its pattern (the node order stays a
 * topological order without any re-sorting). Not a pass itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"

#define REWRITE_NAME_TRIES 100000 /* suffixes tried before giving up on a unique name (loop
                                     unrolling names up to one per iteration) */

bool pass_is_graph_output(const IrGraph *g, uint32_t v) {
    for (uint32_t i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == v) return true;
    return false;
}

const IrTensor *pass_const_f32(const IrGraph *g, uint32_t v) {
    if (v == IR_NONE || v >= g->n_values) return NULL;
    const IrValue *val = &g->values[v];
    if (val->kind != IR_VALUE_CONST || !val->tensor || !val->tensor->data) return NULL;
    if (val->tensor->dtype != IR_DTYPE_F32) return NULL;
    return val->tensor;
}

static bool name_taken(const IrGraph *g, const char *name) {
    for (uint32_t v = 0; v < g->n_values; v++)
        if (g->values[v].name && strcmp(g->values[v].name, name) == 0) return true;
    return false;
}

const char *pass_fresh_name(IrGraph *g, const char *name, char sep) {
    if (!name_taken(g, name)) return ir_arena_strdup(g->arena, name);
    size_t len = strlen(name) + 24;
    char *buf = ir_arena_alloc(g->arena, len);
    for (unsigned k = 1; k < REWRITE_NAME_TRIES; k++) {
        snprintf(buf, len, "%s%c%u", name, sep, k);
        if (!name_taken(g, buf)) return buf;
    }
    return buf;
}

const char *pass_indexed_name(IrGraph *g, const char *base, uint32_t k) {
    size_t len = strlen(base) + 24;
    char *buf = ir_arena_alloc(g->arena, len);
    snprintf(buf, len, "%s_%u", base, k);
    return pass_fresh_name(g, buf, '_');
}

IrType pass_untyped_tensor(uint8_t dtype) {
    IrType t;
    memset(&t, 0, sizeof t);
    t.kind = IR_TYPE_TENSOR;
    t.dtype = dtype;
    t.rank = -1;
    for (int i = 0; i < IR_MAX_RANK; i++) t.dims[i] = IR_DIM_UNKNOWN;
    return t;
}

IrType pass_copy_type(const IrType *t) {
    if (t->kind != IR_TYPE_TENSOR || ir_type_is_static(t)) return *t;
    return pass_untyped_tensor(t->dtype);
}

int32_t pass_default_opset(const IrGraph *g) {
    return (int32_t)ir_graph_opset(ir_graph_root(g), "");
}

const char *pass_unique_name(IrGraph *g, const char *base, const char *suffix) {
    char name[256];
    snprintf(name, sizeof name, "%s%s", base ? base : "v", suffix);
    return pass_fresh_name(g, name, '.');
}

uint32_t pass_add_const_f32(IrGraph *g, const char *base, int rank, const int64_t *dims,
                            float **data) {
    const char *name = pass_fresh_name(g, base, '.');
    IrTensor *t = ir_tensor_new(g->arena, IR_DTYPE_F32, rank, dims);
    t->name = name;
    IrType ty = ir_type_tensor(IR_DTYPE_F32, rank, dims);
    uint32_t v = ir_value_add(g, name, &ty, IR_VALUE_CONST);
    g->values[v].tensor = t;
    g->values[v].producer = IR_NONE;
    *data = t->data;
    return v;
}

uint32_t pass_rewrite_const_f32(IrGraph *g, uint32_t v, bool exclusive, const char *suffix,
                                int rank, const int64_t *dims, float **data) {
    if (exclusive && g->values[v].kind == IR_VALUE_CONST && !pass_is_graph_output(g, v)) {
        IrTensor *t = ir_tensor_new(g->arena, IR_DTYPE_F32, rank, dims);
        t->name = g->values[v].tensor ? g->values[v].tensor->name : g->values[v].name;
        g->values[v].tensor = t;
        g->values[v].type = ir_type_tensor(IR_DTYPE_F32, rank, dims);
        *data = t->data;
        return v;
    }
    char name[256];
    snprintf(name, sizeof name, "%s%s", g->values[v].name ? g->values[v].name : "c", suffix);
    return pass_add_const_f32(g, name, rank, dims, data);
}

IrNode *pass_replace_node(IrGraph *g, uint32_t slot, IrOp op, const char *name,
                          uint32_t n_inputs, uint32_t n_outputs) {
    char *keep = ir_arena_strdup(g->arena, name ? name : "");
    uint32_t k = ir_node_add(g, op, keep, n_inputs, n_outputs, 0);
    IrNode tmp = g->nodes[slot];
    g->nodes[slot] = g->nodes[k];
    g->nodes[k] = tmp;
    IrNode *old = &g->nodes[k];
    old->dead = true;
    for (uint32_t i = 0; i < old->n_outputs; i++)
        if (old->outputs[i] != IR_NONE) g->values[old->outputs[i]].producer = k;
    IrNode *n = &g->nodes[slot];
    const IrOpInfo *info = ir_op_info(op);
    n->opset = (int32_t)ir_graph_opset(g, info->domain);
    if (n->opset == 0) {
        ir_graph_set_opset(g, info->domain, info->since_version);
        n->opset = info->since_version;
    }
    return n;
}

void pass_set_output(IrGraph *g, uint32_t id, uint32_t k, uint32_t v) {
    IrNode *n = &g->nodes[id];
    n->outputs[k] = v;
    g->values[v].kind = IR_VALUE_NODE;
    g->values[v].producer = id;
    g->values[v].result_index = k;
}

void pass_order_push(PassOrder *o, uint32_t id) {
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 64;
        o->ids = realloc(o->ids, o->cap * sizeof *o->ids);
        IR_ASSERT(o->ids);
    }
    o->ids[o->n++] = id;
}

void pass_reorder_nodes(IrGraph *g, const uint32_t *order, uint32_t n_order) {
    for (uint32_t v = 0; v < g->n_values; v++) {
        IrValue *val = &g->values[v];
        if (val->kind == IR_VALUE_NODE && val->producer != IR_NONE &&
            (val->producer >= g->n_nodes || g->nodes[val->producer].dead))
            val->producer = IR_NONE;
    }
    IrNode *nodes = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof *nodes);
    bool *placed = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *placed);
    IR_ASSERT(nodes && placed);
    uint32_t k = 0;
    for (uint32_t j = 0; j < n_order; j++) {
        IR_ASSERT(!placed[order[j]] && !g->nodes[order[j]].dead);
        placed[order[j]] = true;
        nodes[k++] = g->nodes[order[j]];
    }
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        if (placed[i]) continue;
        IR_ASSERT(g->nodes[i].dead);
        nodes[k++] = g->nodes[i];
    }
    memcpy(g->nodes, nodes, g->n_nodes * sizeof *nodes);
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead) continue;
        for (uint32_t o = 0; o < n->n_outputs; o++)
            if (n->outputs[o] != IR_NONE) g->values[n->outputs[o]].producer = i;
    }
    free(nodes);
    free(placed);
    ir_graph_compact(g);
}
