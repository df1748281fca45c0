/* Dead code elimination: drops nodes none of whose outputs is read by a live node, a
 * subgraph or a graph output, last to first so that whole dead chains go in one run.
 * requires: nothing; invalidates: node ids; preserves: types, layouts, quant params. */
#include <stdlib.h>

#include "passes/passes.h"

bool pass_dce(IrGraph *g, Diag *d) {
    (void)d;
    uint32_t *uses = ir_use_counts(g);
    bool changed = false;
    for (uint32_t i = g->n_nodes; i-- > 0;) {
        IrNode *n = &g->nodes[i];
        if (n->dead) continue;
        bool used = false;
        for (uint32_t k = 0; k < n->n_outputs && !used; k++)
            used = n->outputs[k] != IR_NONE && uses[n->outputs[k]] > 0;
        if (used) continue;
        n->dead = true;
        changed = true;
        for (uint32_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] != IR_NONE && uses[n->inputs[k]] > 0) uses[n->inputs[k]]--;
        /* subgraph reads of a dead node's subgraphs are not subtracted: conservative */
    }
    free(uses);
    if (changed) ir_graph_compact(g);
    return changed;
}
