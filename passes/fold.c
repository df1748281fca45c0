/* Constant folding of shape arithmetic: re-runs shape inference with partial evaluation and
 * turns every node whose outputs it computed into constants (Shape -> Gather -> Unsqueeze ->
 * Concat -> Reshape chains of exporters vanish at compile time).
 * requires: nothing; invalidates: node ids, uses; preserves: layouts, quant params. */
#include "passes/passes.h"

bool pass_fold(IrGraph *g, Diag *d) {
    uint32_t before = g->n_nodes;
    if (!ir_infer_shapes_fold(g, d)) return false;
    return g->n_nodes != before;
}
