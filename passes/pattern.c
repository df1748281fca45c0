/* Pattern-matching helpers of the fuse-norm, fuse-gelu, fuse-attention and fuse-eltwise
 * passes: who reads a value (and whether it is its only reader), scalar constants matched
 * with a tolerance, and the other operand of a binary node. Not a pass itself; the
 * rewriting helpers they also use live in passes/rewrite.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"

/* Constants in exported graphs are rounded to float32 (and some exporters write 1/sqrt(2)
 * or sqrt(2/pi) with 4-6 digits), so pattern constants match within this relative error. */
#define PATTERN_REL_TOL 1e-3

void pass_uses_build(const IrGraph *g, PassUses *u) {
    uint32_t nv = g->n_values ? g->n_values : 1;
    u->n_reads = calloc(nv, sizeof *u->n_reads);
    u->reader = malloc(nv * sizeof *u->reader);
    u->ext = calloc(nv, sizeof *u->ext);
    u->first = calloc(nv + 1, sizeof *u->first);
    IR_ASSERT(u->n_reads && u->reader && u->ext && u->first);
    for (uint32_t v = 0; v < nv; v++) u->reader[v] = IR_NONE;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead) continue;
        for (uint32_t k = 0; k < n->n_inputs; k++) {
            uint32_t v = n->inputs[k];
            if (v == IR_NONE) continue;
            u->n_reads[v]++;
            u->reader[v] = i;
        }
    }
    for (uint32_t v = 0; v < nv; v++) u->first[v + 1] = u->first[v] + u->n_reads[v];
    u->node = malloc((u->first[nv] + 1) * sizeof *u->node);
    uint32_t *fill = calloc(nv, sizeof *fill);
    IR_ASSERT(u->node && fill);
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead) continue;
        for (uint32_t k = 0; k < n->n_inputs; k++) {
            uint32_t v = n->inputs[k];
            if (v != IR_NONE) u->node[u->first[v] + fill[v]++] = i;
        }
    }
    free(fill);
    uint32_t *uses = ir_use_counts(g);
    for (uint32_t v = 0; v < g->n_values; v++) u->ext[v] = uses[v] != u->n_reads[v];
    free(uses);
}

void pass_uses_free(PassUses *u) {
    free(u->n_reads);
    free(u->reader);
    free(u->ext);
    free(u->first);
    free(u->node);
    memset(u, 0, sizeof *u);
}

uint32_t pass_sole_reader(const IrGraph *g, const PassUses *u, uint32_t v) {
    if (v == IR_NONE || v >= g->n_values || u->ext[v] || u->n_reads[v] != 1) return IR_NONE;
    uint32_t id = u->reader[v];
    if (id == IR_NONE || id >= g->n_nodes || g->nodes[id].dead) return IR_NONE;
    const IrNode *n = &g->nodes[id];
    for (uint32_t k = 0; k < n->n_inputs; k++) /* a rewritten slot may hold another node */
        if (n->inputs[k] == v) return id;
    return IR_NONE;
}

uint32_t pass_producer(const IrGraph *g, uint32_t v, IrOp op) {
    if (v == IR_NONE || v >= g->n_values || g->values[v].kind != IR_VALUE_NODE) return IR_NONE;
    uint32_t id = g->values[v].producer;
    if (id == IR_NONE || id >= g->n_nodes) return IR_NONE;
    const IrNode *n = &g->nodes[id];
    if (n->dead || n->op != op || n->n_outputs < 1 || n->outputs[0] != v) return IR_NONE;
    return id;
}

bool pass_const_scalar(const IrGraph *g, uint32_t v, double *out) {
    if (v == IR_NONE || v >= g->n_values) return false;
    const IrValue *val = &g->values[v];
    if (val->kind != IR_VALUE_CONST || !val->tensor || !val->tensor->data) return false;
    const IrTensor *t = val->tensor;
    if (t->n_elems != 1) return false;
    switch (t->dtype) {
    case IR_DTYPE_F32: *out = ((const float *)t->data)[0]; return true;
    case IR_DTYPE_F64: *out = ((const double *)t->data)[0]; return true;
    default: return false;
    }
}

bool pass_near(double x, double want) {
    return fabs(x - want) <= PATTERN_REL_TOL * fabs(want);
}

bool pass_const_near(const IrGraph *g, uint32_t v, double want) {
    double x;
    return pass_const_scalar(g, v, &x) && pass_near(x, want);
}

uint32_t pass_other_input(const IrNode *n, uint32_t v) {
    if (n->n_inputs != 2) return IR_NONE;
    if (n->inputs[0] == v && n->inputs[1] != v) return n->inputs[1];
    if (n->inputs[1] == v && n->inputs[0] != v) return n->inputs[0];
    return IR_NONE;
}

void pass_retire_match(IrGraph *g, const uint32_t *nodes, uint32_t n_nodes, uint32_t keep,
                       uint32_t out) {
    for (uint32_t k = 0; k < n_nodes; k++)
        if (nodes[k] != keep) g->nodes[nodes[k]].dead = true;
    pass_set_output(g, keep, 0, out);
}

bool pass_fuse_anchored(IrGraph *g, PassAnchorFn anchor, PassFuseAtFn fuse) {
    PassUses u;
    pass_uses_build(g, &u);
    bool changed = false;
    uint32_t n_nodes = g->n_nodes; /* nodes added by rewriting are dead shells */
    for (uint32_t i = 0; i < n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead || !anchor(n) || n->n_outputs < 1 || n->outputs[0] == IR_NONE) continue;
        if (g->values[n->outputs[0]].type.dtype != IR_DTYPE_F32) continue;
        changed |= fuse(g, &u, i);
    }
    pass_uses_free(&u);
    if (changed) ir_graph_compact(g);
    return changed;
}
