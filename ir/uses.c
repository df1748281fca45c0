/* Use analysis: which nodes (and subgraphs, through OUTER values) read a value, computed on
 * demand rather than maintained by hand (DESIGN.md, IR). */
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* Whether sub or its subgraphs read g's value v through OUTER values. */
static bool outer_reads(const IrGraph *g, const IrGraph *sub, uint32_t v) {
    for (uint32_t i = 0; i < sub->n_values; i++) {
        const IrValue *val = &sub->values[i];
        if (val->kind != IR_VALUE_OUTER) continue;
        const IrGraph *h = sub;
        uint32_t id = i;
        while (h && h != g && h->values[id].kind == IR_VALUE_OUTER) {
            id = h->values[id].producer;
            h = h->parent;
        }
        if (h == g && id == v) return true;
    }
    for (uint32_t s = 0; s < sub->n_subgraphs; s++)
        if (outer_reads(g, sub->subgraphs[s], v)) return true;
    return false;
}

uint32_t *ir_use_counts(const IrGraph *g) {
    uint32_t *uses = calloc(g->n_values ? g->n_values : 1, sizeof *uses);
    IR_ASSERT(uses);
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead) continue;
        for (uint32_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] != IR_NONE) uses[n->inputs[k]]++;
    }
    for (uint32_t i = 0; i < g->n_outputs; i++) uses[g->outputs[i]]++;
    for (uint32_t s = 0; s < g->n_subgraphs; s++)
        for (uint32_t v = 0; v < g->n_values; v++)
            if (outer_reads(g, g->subgraphs[s], v)) uses[v]++;
    return uses;
}

static void replace_outer(IrGraph *g, IrGraph *sub, uint32_t from, uint32_t to) {
    for (uint32_t i = 0; i < sub->n_values; i++) {
        IrValue *val = &sub->values[i];
        if (val->kind == IR_VALUE_OUTER && sub->parent == g && val->producer == from)
            val->producer = to;
    }
}

void ir_replace_uses(IrGraph *g, uint32_t from, uint32_t to) {
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        IrNode *n = &g->nodes[i];
        if (n->dead) continue;
        for (uint32_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == from) n->inputs[k] = to;
    }
    for (uint32_t s = 0; s < g->n_subgraphs; s++) replace_outer(g, g->subgraphs[s], from, to);
}
