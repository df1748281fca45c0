/* Removes Identity nodes (chains too) and Dropout that drops nothing, inference-time or of
 * constant ratio 0 (whose mask output is unused): their
 * readers read the input instead. When the output is a graph output, the node that makes
 * the input writes the graph output itself (if nothing else reads the input); otherwise
 * the node stays, since the output must be written.
 * requires: nothing; invalidates: uses; preserves: types, layouts, quant params. */
#include <stdlib.h>

#include "passes/passes.h"

static bool is_graph_output(const IrGraph *g, uint32_t v) {
    for (uint32_t i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == v) return true;
    return false;
}

/* Whether v is a one-element constant (bool, f16/f32/f64) equal to want. */
static bool const_is(const IrGraph *g, uint32_t v, double want) {
    const IrValue *c = &g->values[v];
    if (c->kind != IR_VALUE_CONST || !c->tensor || !c->tensor->data || c->tensor->n_elems != 1)
        return false;
    double x;
    if (c->tensor->dtype == IR_DTYPE_BOOL) return ((const uint8_t *)c->tensor->data)[0] == want;
    if (c->tensor->dtype == IR_DTYPE_F16) /* 0 and -0 only: the ratio that matters */
        return want == 0.0 && (((const uint16_t *)c->tensor->data)[0] & 0x7fff) == 0;
    return pass_const_scalar(g, v, &x) && x == want;
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
            /* inference (training_mode absent or a constant false), or a constant ratio of 0
             * (exporters write training mode with ratio 0: nothing is dropped, no scaling) */
            if (n->n_inputs > 2 && n->inputs[2] != IR_NONE && !const_is(g, n->inputs[2], 0.0) &&
                !(n->n_inputs > 1 && n->inputs[1] != IR_NONE && const_is(g, n->inputs[1], 0.0)))
                continue;
            if (n->n_outputs > 1 && n->outputs[1] != IR_NONE && uses[n->outputs[1]]) continue;
        }
        uint32_t y = n->outputs[0], x = n->inputs[0];
        if (y == IR_NONE || g->values[x].type.kind != IR_TYPE_TENSOR) continue;
        if (is_graph_output(g, y)) {
            /* the graph output's producer writes it directly, when x is an intermediate
             * that nothing else reads (paddle2onnx ends every graph with an Identity) */
            const IrValue *xv = &g->values[x];
            if (xv->kind != IR_VALUE_NODE || xv->producer == IR_NONE || uses[x] != 1 ||
                is_graph_output(g, x) || !ir_type_equal(&xv->type, &g->values[y].type))
                continue;
            pass_set_output(g, xv->producer, xv->result_index, y);
            n->dead = true;
            changed = true;
            continue;
        }
        ir_replace_uses(g, y, x);
        uses[x] += uses[y] - 1; /* y's readers read x now; this node no longer does */
        n->dead = true;
        changed = true;
    }
    free(uses);
    if (changed) ir_graph_compact(g);
    return changed;
}
