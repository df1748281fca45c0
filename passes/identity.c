/* Removes Identity nodes and inference-time Dropout (whose mask output is unused): their
 * readers read the input instead. A node whose output is a graph output stays, since the
 * output must be written.
 * requires: nothing; invalidates: uses; preserves: types, layouts, quant params. */
#include <stdlib.h>

#include "passes/passes.h"

static bool is_graph_output(const IrGraph *g, uint32_t v) {
    for (uint32_t i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == v) return true;
    return false;
}

bool pass_remove_identity(IrGraph *g, Diag *d) {
    (void)d;
    bool changed = false;
    uint32_t *uses = ir_use_counts(g);
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        IrNode *n = &g->nodes[i];
        if (n->dead || n->n_inputs < 1 || n->inputs[0] == IR_NONE) continue;
        bool dropout = n->op == IR_OP_DROPOUT;
        if (n->op != IR_OP_IDENTITY && !dropout) continue;
        if (dropout) {
            /* inference only: training_mode absent or a constant false */
            if (n->n_inputs > 2 && n->inputs[2] != IR_NONE) {
                const IrValue *tm = &g->values[n->inputs[2]];
                if (tm->kind != IR_VALUE_CONST || !tm->tensor || tm->tensor->n_elems != 1 ||
                    ((const uint8_t *)tm->tensor->data)[0] != 0)
                    continue;
            }
            if (n->n_outputs > 1 && n->outputs[1] != IR_NONE && uses[n->outputs[1]]) continue;
        }
        uint32_t y = n->outputs[0], x = n->inputs[0];
        if (y == IR_NONE || is_graph_output(g, y)) continue;
        if (g->values[x].type.kind != IR_TYPE_TENSOR) continue;
        ir_replace_uses(g, y, x);
        n->dead = true;
        changed = true;
    }
    free(uses);
    if (changed) ir_graph_compact(g);
    return changed;
}
