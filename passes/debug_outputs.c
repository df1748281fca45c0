/* Debug outputs (see debug_outputs.h): turns intermediate values into graph outputs. The
 * bundle writer then gives each one a field of NAME_outputs, written in place by its node,
 * so the rest of the pipeline needs no special case. */
#include "passes/debug_outputs.h"

bool pass_value_exposable(const IrGraph *g, uint32_t v) {
    if (v == IR_NONE || v >= g->n_values) return false;
    const IrType *t = &g->values[v].type;
    if (t->kind != IR_TYPE_TENSOR || !ir_type_is_static(t)) return false;
    return t->dtype != IR_DTYPE_UNDEF && t->dtype != IR_DTYPE_STRING &&
           ir_dtype_bits((IrDType)t->dtype) > 0;
}

static bool is_output(const IrGraph *g, uint32_t v) {
    for (uint32_t i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == v) return true;
    return false;
}

uint32_t pass_expose_intermediates(IrGraph *g) {
    uint32_t added = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead || n->op == IR_OP_CONSTANT) continue;
        for (uint32_t k = 0; k < n->n_outputs; k++) {
            uint32_t v = n->outputs[k];
            if (!pass_value_exposable(g, v) || is_output(g, v)) continue;
            ir_graph_add_output(g, v);
            n = &g->nodes[i]; /* adding an output never moves nodes, but stay safe */
            added++;
        }
    }
    return added;
}
