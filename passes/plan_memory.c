/* Static memory plan, version 1: every intermediate tensor gets an offset in one arena.
 * A tensor lives from the node that produces it to its last use (uses inside subgraphs
 * count at the node that owns the subgraph); tensors are placed greedily, largest first,
 * at the lowest aligned offset free over their whole lifetime (the best-fit order of
 * TFLite's and TVM's planners). Inputs of a node stay live while it runs, so no output
 * aliases an input: in-place reuse comes later.
 * requires: static shapes on arena values; invalidates: nothing; preserves: everything. */
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"

typedef struct PlanItem {
    uint32_t value;
    int64_t size_bytes;
    uint32_t first, last; /* node indices */
} PlanItem;

static int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

bool pass_value_in_arena(const IrGraph *g, uint32_t v) {
    const IrValue *val = &g->values[v];
    if (val->kind != IR_VALUE_NODE || val->producer == IR_NONE) return false;
    for (uint32_t i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == v) return false; /* written straight into the caller's buffer */
    return true;
}

/* Marks at node index `at` the uses of this graph's values by OUTER values of sub (and its
 * subgraphs). */
static void mark_outer_uses(const IrGraph *g, const IrGraph *sub, uint32_t at, uint32_t *last) {
    for (uint32_t v = 0; v < sub->n_values; v++) {
        const IrValue *val = &sub->values[v];
        if (val->kind != IR_VALUE_OUTER) continue;
        /* follow the chain of OUTER values up to g */
        const IrGraph *h = sub;
        uint32_t id = v;
        while (h && h != g && h->values[id].kind == IR_VALUE_OUTER) {
            id = h->values[id].producer;
            h = h->parent;
        }
        if (h == g && (last[id] == IR_NONE || last[id] < at)) last[id] = at;
    }
    for (uint32_t s = 0; s < sub->n_subgraphs; s++) mark_outer_uses(g, sub->subgraphs[s], at, last);
}

static int cmp_items(const void *pa, const void *pb) {
    const PlanItem *a = pa, *b = pb;
    if (a->size_bytes != b->size_bytes) return a->size_bytes > b->size_bytes ? -1 : 1;
    if (a->first != b->first) return a->first < b->first ? -1 : 1;
    return a->value < b->value ? -1 : (a->value > b->value);
}

static int cmp_offsets(const void *pa, const void *pb) {
    const int64_t *a = pa, *b = pb;
    return a[0] < b[0] ? -1 : (a[0] > b[0]);
}

bool pass_plan_memory(IrGraph *g, Diag *d) {
    uint32_t *last = malloc((g->n_values ? g->n_values : 1) * sizeof *last);
    PlanItem *items = malloc((g->n_values ? g->n_values : 1) * sizeof *items);
    int64_t *busy = malloc((g->n_values ? g->n_values : 1) * 2 * sizeof *busy);
    IR_ASSERT(last && items && busy);
    for (uint32_t v = 0; v < g->n_values; v++) {
        last[v] = IR_NONE;
        g->values[v].mem_offset = -1;
    }
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead) continue;
        for (uint32_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] != IR_NONE) last[n->inputs[k]] = i;
        for (uint32_t k = 0; k < n->n_attrs; k++)
            for (uint32_t s = 0; s < n->attrs[k].n && n->attrs[k].graphs; s++)
                mark_outer_uses(g, g->subgraphs[n->attrs[k].graphs[s]], i, last);
    }
    uint32_t n_items = 0;
    bool ok = true;
    int64_t naive = 0;
    for (uint32_t v = 0; v < g->n_values; v++) {
        if (!pass_value_in_arena(g, v)) continue;
        const IrValue *val = &g->values[v];
        int64_t numel = ir_type_numel(&val->type);
        if (numel < 0) {
            const IrNode *n = &g->nodes[val->producer];
            diag_error(d, "node '%s' (%s, opset %d): output '%s' has no static shape; "
                       "fix symbolic dimensions with --dim NAME=VALUE",
                       n->name, n->op_type, n->opset, val->name);
            ok = false;
            continue;
        }
        PlanItem *it = &items[n_items++];
        it->value = v;
        it->size_bytes = align_up((int64_t)ir_dtype_size_bytes((IrDType)val->type.dtype, numel),
                                  PASS_ARENA_ALIGN);
        it->first = val->producer;
        it->last = last[v] == IR_NONE ? val->producer : last[v];
        naive += it->size_bytes;
    }
    int64_t arena = 0, lower = 0;
    if (ok) {
        qsort(items, n_items, sizeof *items, cmp_items);
        for (uint32_t a = 0; a < n_items; a++) {
            uint32_t n_busy = 0;
            for (uint32_t b = 0; b < a; b++) {
                if (items[b].last < items[a].first || items[a].last < items[b].first) continue;
                busy[2 * n_busy] = g->values[items[b].value].mem_offset;
                busy[2 * n_busy + 1] = busy[2 * n_busy] + items[b].size_bytes;
                n_busy++;
            }
            qsort(busy, n_busy, 2 * sizeof *busy, cmp_offsets);
            int64_t off = 0;
            for (uint32_t b = 0; b < n_busy; b++) {
                if (busy[2 * b] - off >= items[a].size_bytes) break;
                if (busy[2 * b + 1] > off) off = busy[2 * b + 1];
            }
            g->values[items[a].value].mem_offset = off;
            if (off + items[a].size_bytes > arena) arena = off + items[a].size_bytes;
        }
        for (uint32_t t = 0; t < g->n_nodes; t++) {
            int64_t live = 0;
            for (uint32_t a = 0; a < n_items; a++)
                if (items[a].first <= t && t <= items[a].last) live += items[a].size_bytes;
            if (live > lower) lower = live;
        }
    }
    g->arena_size_bytes = arena;
    g->arena_lower_bound_bytes = lower;
    g->arena_naive_bytes = naive;
    free(last);
    free(items);
    free(busy);
    return ok;
}

bool pass_plan_memory_changed(IrGraph *g, Diag *d) {
    pass_plan_memory(g, d);
    return true;
}
