/* The subgraph inliner: copies the nodes of a body graph (a Loop or SequenceMap body, an If
 * branch) into its parent, one copy per call, so that a pass can unroll a loop or fold a
 * branch. Used by lower-sequences (passes/lower_sequences.c) to unroll bodies over
 * sequences. The caller places the copies (they are appended to the parent's nodes). */
#include <stdio.h>

#include "passes/passes.h"

uint32_t pass_inline_value(IrGraph *g, const IrGraph *b, uint32_t *map, uint32_t v) {
    if (v == IR_NONE) return IR_NONE;
    if (map[v] != IR_NONE) return map[v];
    const IrValue *val = &b->values[v];
    if (val->kind == IR_VALUE_OUTER) {
        map[v] = val->producer;
    } else if (val->kind == IR_VALUE_CONST && val->tensor) {
        const IrTensor *t = val->tensor;
        IrType ty = ir_type_tensor((IrDType)t->dtype, t->rank, t->dims);
        map[v] = ir_value_add(g, pass_fresh_name(g, val->name, '_'), &ty, IR_VALUE_CONST);
        g->values[map[v]].tensor = val->tensor;
    }
    return map[v];
}

bool pass_inline_body(IrGraph *g, const IrGraph *b, uint32_t *map, uint32_t iter,
                      bool (*each)(void *arg, uint32_t id), void *arg, char *why,
                      size_t why_len) {
    for (uint32_t i = 0; i < b->n_nodes; i++) {
        const IrNode *src = &b->nodes[i];
        if (src->dead) continue;
        for (uint32_t k = 0; k < src->n_attrs; k++)
            if (src->attrs[k].present && (src->attrs[k].kind == IR_ATTR_KIND_GRAPH ||
                                          src->attrs[k].kind == IR_ATTR_KIND_GRAPHS)) {
                snprintf(why, why_len, "its body has a node with a subgraph (%s): not unrolled",
                         src->op_type);
                return false;
            }
        const char *name = pass_indexed_name(g, src->name[0] ? src->name : src->op_type, iter);
        uint32_t id = ir_node_add(g, (IrOp)src->op, name, src->n_inputs, src->n_outputs,
                                  src->n_attrs);
        IrNode *n = &g->nodes[id];
        n->op_type = src->op_type;
        n->domain = src->domain;
        n->opset = src->opset;
        n->n_attrs = src->n_attrs;
        n->attrs = ir_arena_memdup(g->arena, src->attrs,
                                   (src->n_attrs ? src->n_attrs : 1) * sizeof *src->attrs);
        for (uint32_t k = 0; k < src->n_inputs; k++) {
            uint32_t v = pass_inline_value(g, b, map, src->inputs[k]);
            if (src->inputs[k] != IR_NONE && v == IR_NONE) {
                snprintf(why, why_len, "its body reads a value it does not define (%s)",
                         b->values[src->inputs[k]].name);
                return false;
            }
            g->nodes[id].inputs[k] = v;
        }
        for (uint32_t k = 0; k < src->n_outputs; k++) {
            uint32_t bv = src->outputs[k];
            if (bv == IR_NONE) continue;
            IrType t = pass_copy_type(&b->values[bv].type);
            uint32_t v = ir_value_add(g, pass_indexed_name(g, b->values[bv].name, iter), &t,
                                      IR_VALUE_NODE);
            pass_set_output(g, id, k, v);
            map[bv] = v;
        }
        if (each && !each(arg, id)) return false;
    }
    return true;
}
