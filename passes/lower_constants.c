/* Turns Constant nodes into constant values (initializers), so that later passes see one
 * kind of constant and the backends find their data in the weights. String constants stay.
 * requires: nothing; invalidates: node ids; preserves: types, layouts, quant params. */
#include <string.h>

#include "passes/passes.h"

bool pass_lower_constants(IrGraph *g, Diag *d) {
    (void)d;
    bool changed = false;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        IrNode *n = &g->nodes[i];
        if (n->dead || n->op != IR_OP_CONSTANT || n->n_outputs != 1) continue;
        IrValue *v = &g->values[n->outputs[0]];
        IrTensor *t = NULL;
        for (uint32_t k = 0; k < n->n_attrs && !t; k++) {
            IrAttr *at = &n->attrs[k];
            if (!at->present) continue;
            if (at->id == IR_ATTR_CONSTANT_VALUE && at->tensors) t = at->tensors;
            else if (at->id == IR_ATTR_CONSTANT_SPARSE_VALUE && at->tensors) t = at->tensors;
            else if (at->id == IR_ATTR_CONSTANT_VALUE_FLOAT) {
                t = ir_tensor_new(g->arena, IR_DTYPE_F32, 0, NULL);
                memcpy(t->data, &at->f, sizeof(float));
            } else if (at->id == IR_ATTR_CONSTANT_VALUE_INT) {
                t = ir_tensor_new(g->arena, IR_DTYPE_I64, 0, NULL);
                memcpy(t->data, &at->i, sizeof(int64_t));
            } else if (at->id == IR_ATTR_CONSTANT_VALUE_FLOATS) {
                int64_t dim = at->n;
                t = ir_tensor_new(g->arena, IR_DTYPE_F32, 1, &dim);
                if (at->n) memcpy(t->data, at->floats, at->n * sizeof(float));
            } else if (at->id == IR_ATTR_CONSTANT_VALUE_INTS) {
                int64_t dim = at->n;
                t = ir_tensor_new(g->arena, IR_DTYPE_I64, 1, &dim);
                if (at->n) memcpy(t->data, at->ints, at->n * sizeof(int64_t));
            }
        }
        if (!t || t->dtype == IR_DTYPE_STRING) continue; /* strings stay: no C kernel */
        v->kind = IR_VALUE_CONST;
        v->producer = IR_NONE;
        v->tensor = t;
        v->type = ir_type_tensor((IrDType)t->dtype, t->rank, t->dims);
        n->dead = true;
        changed = true;
    }
    if (changed) ir_graph_compact(g);
    return changed;
}

