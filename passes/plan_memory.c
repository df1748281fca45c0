/* Static memory plan, version 1: every intermediate tensor gets an offset in one arena.
 * A tensor lives from the node that produces it to its last use (uses inside subgraphs
 * count at the node that owns the subgraph); tensors are placed greedily, largest first,
 * at the lowest aligned offset free over their whole lifetime (the best-fit order of
 * TFLite's and TVM's planners). Inputs of a node stay live while it runs, so no output
 * aliases an input, with one exception: the output of a view op (Reshape, Flatten, Squeeze,
 * Unsqueeze, Identity: the same bytes) shares its input's block, the pair (or chain) living
 * from the first producer to the last use of any of them, and the emitters skip the copy
 * (root graph only). Other in-place reuse comes later.
 * Subgraphs (If, Loop, Scan) are planned on their own into a sub-arena; the owning node
 * reserves one block of its graph's arena, the size of its largest subgraph's, live while
 * the node runs, and the subgraph's offsets are then shifted into that block, so every
 * mem_offset in the model is a byte offset in the one arena. Which subgraph values need
 * space follows the C backend's control-flow emitter (backend/c/cgen_control.c):
 * - intermediates always;
 * - outputs, except one written straight into the owning node's output (an If result, a
 *   Loop scan output, a Scan output along axis 0), live to the end of the subgraph;
 * - inputs that the emitter fills: Loop iteration number and condition (when read), a
 *   carried value whose final result the node does not keep in its own output, a Scan
 *   input slice that is not contiguous (its scan axis has a non-1 dimension before it).
 * requires: static shapes on arena values; invalidates: nothing; preserves: everything. */
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"

typedef struct PlanItem {
    uint32_t value;       /* IR_NONE: the block of a node that owns subgraphs */
    uint32_t node;        /* owner of a block */
    int64_t size_bytes;
    int64_t lower_bytes;  /* what the item adds to the lower bound */
    uint32_t first, last; /* node indices; g->n_nodes stands for "after the last node" */
    int64_t offset;
} PlanItem;

/* The arena figures of one graph and its subgraphs. */
typedef struct PlanSizes {
    int64_t arena, lower, naive;
} PlanSizes;

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
    if (a->value != b->value) return a->value < b->value ? -1 : 1;
    return a->node < b->node ? -1 : (a->node > b->node);
}

static int cmp_offsets(const void *pa, const void *pb) {
    const int64_t *a = pa, *b = pb;
    return a[0] < b[0] ? -1 : (a[0] > b[0]);
}

/* ---- which subgraph values need space ---- */

static uint32_t count_in(const uint32_t *ids, uint32_t n, uint32_t v) {
    uint32_t c = 0;
    for (uint32_t i = 0; i < n; i++) c += ids[i] == v;
    return c;
}

/* The axis of scan input (or output) j of a Scan node, normalized against rank; -1 when
 * out of range. */
static int scan_axis(const IrNode *owner, bool output, uint32_t j, int rank) {
    uint32_t n_axes;
    const int64_t *axes = ir_attr_ints(owner, output ? IR_ATTR_SCAN_SCAN_OUTPUT_AXES
                                                     : IR_ATTR_SCAN_SCAN_INPUT_AXES, &n_axes);
    int64_t a = axes && j < n_axes ? axes[j] : 0;
    if (a < 0) a += rank;
    return a >= 0 && a < rank ? (int)a : -1;
}

/* Whether output k of subgraph sub is written straight into the owner's output buffer. */
static bool output_direct(const IrGraph *parent, const IrNode *owner, const IrGraph *sub,
                          uint32_t k) {
    uint32_t v = sub->outputs[k];
    if (count_in(sub->outputs, sub->n_outputs, v) != 1) return false;
    switch ((IrOp)owner->op) {
    case IR_OP_IF:
        return k < owner->n_outputs && owner->outputs[k] != IR_NONE;
    case IR_OP_LOOP: {
        uint32_t n_carried = owner->n_inputs >= 2 ? owner->n_inputs - 2 : 0;
        return k >= 1 + n_carried && k - 1 < owner->n_outputs && owner->outputs[k - 1] != IR_NONE;
    }
    case IR_OP_SCAN: {
        bool v8 = owner->opset < 9;
        int64_t m = ir_attr_i(owner, IR_ATTR_SCAN_NUM_SCAN_INPUTS);
        uint32_t n_in = owner->n_inputs - (v8 ? 1 : 0);
        if (m < 0 || (uint32_t)m > n_in) return false;
        uint32_t n_state = n_in - (uint32_t)m;
        if (k < n_state || k >= owner->n_outputs || owner->outputs[k] == IR_NONE) return false;
        if (v8) return true; /* (batch, sequence, ...): a slice is contiguous */
        const IrType *t = &parent->values[owner->outputs[k]].type;
        int axis = scan_axis(owner, true, k - n_state, t->rank);
        for (int i = 0; i < axis; i++)
            if (t->dims[i] != 1) return false;
        return axis >= 0;
    }
    default: return false;
    }
}

/* Whether input k of subgraph sub (read by someone: used) gets space. */
static bool input_needs_space(const IrGraph *parent, const IrNode *owner, uint32_t k,
                              bool used) {
    switch ((IrOp)owner->op) {
    case IR_OP_LOOP:
        if (k < 2) return used;
        return k - 2 >= owner->n_outputs || owner->outputs[k - 2] == IR_NONE;
    case IR_OP_SCAN: {
        bool v8 = owner->opset < 9;
        int64_t m = ir_attr_i(owner, IR_ATTR_SCAN_NUM_SCAN_INPUTS);
        uint32_t n_in = owner->n_inputs - (v8 ? 1 : 0);
        if (m < 0 || (uint32_t)m > n_in) return false;
        uint32_t n_state = n_in - (uint32_t)m;
        if (k < n_state) return k >= owner->n_outputs || owner->outputs[k] == IR_NONE;
        if (v8 || !used) return false;
        uint32_t x = owner->inputs[k];
        if (x == IR_NONE) return false;
        const IrType *t = &parent->values[x].type;
        int axis = scan_axis(owner, false, k - n_state, t->rank);
        for (int i = 0; i < axis; i++)
            if (t->dims[i] != 1) return true;
        return false;
    }
    default: return false;
    }
}

/* ---- the planner ---- */

static void shift_offsets(IrGraph *g, int64_t by) {
    for (uint32_t v = 0; v < g->n_values; v++)
        if (g->values[v].mem_offset >= 0) g->values[v].mem_offset += by;
    for (uint32_t s = 0; s < g->n_subgraphs; s++) shift_offsets(g->subgraphs[s], by);
}

static bool plan_graph(IrGraph *g, const IrGraph *parent, const IrNode *owner, Diag *d,
                       PlanSizes *out);

/* Plans the subgraphs of g's node i into *block: the largest sub-arena (and lower
 * bound), the sum of their naive sizes. */
static bool plan_node_subgraphs(IrGraph *g, uint32_t i, Diag *d, PlanSizes *block) {
    memset(block, 0, sizeof *block);
    bool ok = true;
    const IrNode *n = &g->nodes[i];
    for (uint32_t k = 0; k < n->n_attrs; k++) {
        for (uint32_t s = 0; s < n->attrs[k].n && n->attrs[k].graphs; s++) {
            uint32_t idx = n->attrs[k].graphs[s];
            if (idx >= g->n_subgraphs) continue; /* the verifier reports it */
            PlanSizes sz;
            ok &= plan_graph(g->subgraphs[idx], g, &g->nodes[i], d, &sz);
            if (sz.arena > block->arena) block->arena = sz.arena;
            if (sz.lower > block->lower) block->lower = sz.lower;
            block->naive += sz.naive;
        }
    }
    return ok;
}

static bool is_view(IrOp op) {
    return op == IR_OP_RESHAPE || op == IR_OP_FLATTEN || op == IR_OP_SQUEEZE ||
           op == IR_OP_UNSQUEEZE || op == IR_OP_IDENTITY;
}

static int64_t value_bytes(const IrGraph *g, uint32_t v) {
    const IrType *t = &g->values[v].type;
    int64_t numel = ir_type_numel(t);
    return t->kind != IR_TYPE_TENSOR || numel < 0
               ? -1
               : (int64_t)ir_dtype_size_bytes((IrDType)t->dtype, numel);
}

/* pass_value_in_arena with the graph outputs marked in is_out (per value id): O(1). */
static bool in_arena(const IrGraph *g, const bool *is_out, uint32_t v) {
    const IrValue *val = &g->values[v];
    return val->kind == IR_VALUE_NODE && val->producer != IR_NONE && !is_out[v];
}

/* root[v]: the value whose block v shares (v itself unless v is the output of a view op
 * whose input is in the arena too), and last[root] widened to the group's last use. */
static void view_groups(const IrGraph *g, const bool *is_out, uint32_t *root, uint32_t *last) {
    for (uint32_t v = 0; v < g->n_values; v++) root[v] = v;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead || !is_view((IrOp)n->op) || n->n_inputs < 1 || n->n_outputs < 1) continue;
        uint32_t x = n->inputs[0], y = n->outputs[0];
        if (x == IR_NONE || y == IR_NONE || !in_arena(g, is_out, x) ||
            !in_arena(g, is_out, y) || value_bytes(g, x) < 0 ||
            value_bytes(g, x) != value_bytes(g, y))
            continue;
        root[y] = root[x];
    }
    for (uint32_t v = 0; v < g->n_values; v++) {
        uint32_t r = root[v], lv = last[v] == IR_NONE ? g->values[v].producer : last[v];
        if (r == v) continue;
        if (last[r] == IR_NONE || last[r] < lv) last[r] = lv;
    }
}

/* ---- the placed items, indexed by time ----
 * A segment tree over node indices: each placed item is listed at the O(log T) tree nodes
 * that make up its lifetime, so the items live during [first, last] are found by visiting
 * the tree nodes that meet that range, instead of by scanning every earlier item (which
 * made planning quadratic: minutes for 10^5 nodes). The plans are the same. */
typedef struct PlanIndex {
    uint32_t size;     /* leaves: a power of two covering every time point */
    uint32_t *head;    /* per tree node: first entry, IR_NONE: none */
    uint32_t *next;    /* per entry */
    uint32_t *item;    /* per entry */
    uint32_t n_entries, cap;
    uint32_t *seen;    /* per item: the last query that reported it */
} PlanIndex;

static void index_init(PlanIndex *x, uint32_t n_times, uint32_t n_items) {
    x->size = 1;
    while (x->size < n_times) x->size *= 2;
    uint32_t levels = 1;
    for (uint32_t s = x->size; s > 1; s /= 2) levels++;
    x->cap = (n_items ? n_items : 1) * 2 * levels;
    x->head = malloc(2 * (size_t)x->size * sizeof *x->head);
    x->next = malloc((size_t)x->cap * sizeof *x->next);
    x->item = malloc((size_t)x->cap * sizeof *x->item);
    x->seen = malloc((n_items ? n_items : 1) * sizeof *x->seen);
    IR_ASSERT(x->head && x->next && x->item && x->seen);
    for (uint32_t i = 0; i < 2 * x->size; i++) x->head[i] = IR_NONE;
    for (uint32_t i = 0; i < n_items; i++) x->seen[i] = IR_NONE;
    x->n_entries = 0;
}

static void index_free(PlanIndex *x) {
    free(x->head);
    free(x->next);
    free(x->item);
    free(x->seen);
}

/* Lists item a at the tree nodes (node covers [lo, hi]) that make up [first, last]. */
static void index_add(PlanIndex *x, uint32_t node, uint32_t lo, uint32_t hi, uint32_t first,
                      uint32_t last, uint32_t a) {
    if (last < lo || hi < first) return;
    if (first <= lo && hi <= last) {
        IR_ASSERT(x->n_entries < x->cap);
        x->item[x->n_entries] = a;
        x->next[x->n_entries] = x->head[node];
        x->head[node] = x->n_entries++;
        return;
    }
    uint32_t mid = lo + (hi - lo) / 2;
    index_add(x, 2 * node, lo, mid, first, last, a);
    index_add(x, 2 * node + 1, mid + 1, hi, first, last, a);
}

/* Appends to busy the arena ranges of the items live at some time in [first, last]
 * (reported once each, for query q); returns the new count. */
static uint32_t index_busy(PlanIndex *x, uint32_t node, uint32_t lo, uint32_t hi,
                           uint32_t first, uint32_t last, uint32_t q, const PlanItem *items,
                           int64_t *busy, uint32_t n_busy) {
    if (last < lo || hi < first) return n_busy;
    for (uint32_t e = x->head[node]; e != IR_NONE; e = x->next[e]) {
        uint32_t b = x->item[e];
        if (x->seen[b] == q) continue;
        x->seen[b] = q;
        busy[2 * n_busy] = items[b].offset;
        busy[2 * n_busy + 1] = items[b].offset + items[b].size_bytes;
        n_busy++;
    }
    if (lo == hi) return n_busy;
    uint32_t mid = lo + (hi - lo) / 2;
    n_busy = index_busy(x, 2 * node, lo, mid, first, last, q, items, busy, n_busy);
    return index_busy(x, 2 * node + 1, mid + 1, hi, first, last, q, items, busy, n_busy);
}

static bool plan_graph(IrGraph *g, const IrGraph *parent, const IrNode *owner, Diag *d,
                       PlanSizes *out) {
    size_t n_slots = (size_t)g->n_values + g->n_nodes + 1;
    uint32_t *last = malloc((g->n_values ? g->n_values : 1) * sizeof *last);
    uint32_t *root = malloc((g->n_values ? g->n_values : 1) * sizeof *root);
    PlanItem *items = malloc(n_slots * sizeof *items);
    int64_t *busy = malloc(n_slots * 2 * sizeof *busy);
    IR_ASSERT(last && root && items && busy);
    uint32_t end = owner ? g->n_nodes : 0; /* subgraph outputs are read after the last node */
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
                if (n->attrs[k].graphs[s] < g->n_subgraphs)
                    mark_outer_uses(g, g->subgraphs[n->attrs[k].graphs[s]], i, last);
    }
    bool *is_out = calloc(g->n_values ? g->n_values : 1, sizeof *is_out);
    IR_ASSERT(is_out);
    for (uint32_t k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] < g->n_values) is_out[g->outputs[k]] = true;
    for (uint32_t v = 0; v < g->n_values; v++) root[v] = v;
    if (!owner) view_groups(g, is_out, root, last);
    uint32_t n_items = 0;
    bool ok = true;
    int64_t naive = 0;
    for (uint32_t v = 0; v < g->n_values; v++) {
        const IrValue *val = &g->values[v];
        uint32_t first = 0, lastv = 0;
        if (root[v] != v) { /* a view: its root's block */
            naive += align_up(value_bytes(g, v), PASS_ARENA_ALIGN);
            continue;
        }
        if (!owner) {
            if (!in_arena(g, is_out, v)) continue;
            first = val->producer;
            lastv = last[v] == IR_NONE ? val->producer : last[v];
        } else if (val->kind == IR_VALUE_NODE && val->producer != IR_NONE) {
            bool direct = false;
            for (uint32_t k = 0; is_out[v] && k < g->n_outputs; k++)
                if (g->outputs[k] == v) direct = output_direct(parent, owner, g, k);
            if (direct) continue;
            first = val->producer;
            lastv = is_out[v] ? end : last[v] == IR_NONE ? val->producer : last[v];
        } else if (val->kind == IR_VALUE_INPUT) {
            bool needs = false;
            for (uint32_t k = 0; k < g->n_inputs; k++)
                if (g->inputs[k] == v)
                    needs = input_needs_space(parent, owner, k, last[v] != IR_NONE ||
                                              count_in(g->outputs, g->n_outputs, v) > 0);
            if (!needs) continue;
            first = 0;
            lastv = end;
        } else {
            continue;
        }
        int64_t numel = ir_type_numel(&val->type);
        if (numel < 0) {
            if (val->kind == IR_VALUE_NODE) {
                const IrNode *n = &g->nodes[val->producer];
                ir_node_diag(d, DIAG_ERROR, n, ": output '%s' has no static shape; fix symbolic "
                             "dimensions with --dim NAME=VALUE", val->name);
            } else {
                ir_node_diag(d, DIAG_ERROR, owner, ": subgraph input '%s' has no static shape",
                             val->name);
            }
            ok = false;
            continue;
        }
        PlanItem *it = &items[n_items++];
        it->value = v;
        it->node = IR_NONE;
        it->size_bytes = align_up((int64_t)ir_dtype_size_bytes((IrDType)val->type.dtype, numel),
                                  PASS_ARENA_ALIGN);
        it->lower_bytes = it->size_bytes;
        it->first = first;
        it->last = lastv;
        naive += it->size_bytes;
    }
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].dead || !ir_op_has((IrOp)g->nodes[i].op, OPF_SUBGRAPH)) continue;
        PlanSizes block;
        ok &= plan_node_subgraphs(g, i, d, &block);
        naive += block.naive;
        if (block.arena == 0) continue;
        PlanItem *it = &items[n_items++];
        it->value = IR_NONE;
        it->node = i;
        it->size_bytes = block.arena;
        it->lower_bytes = block.lower;
        it->first = it->last = i;
    }
    int64_t arena = 0, lower = 0;
    if (ok) {
        qsort(items, n_items, sizeof *items, cmp_items);
        uint32_t n_times = g->n_nodes + 1; /* first and last lie in [0, n_nodes] */
        PlanIndex index;
        index_init(&index, n_times, n_items);
        for (uint32_t a = 0; a < n_items; a++) {
            uint32_t n_busy = index_busy(&index, 1, 0, index.size - 1, items[a].first,
                                         items[a].last, a, items, busy, 0);
            qsort(busy, n_busy, 2 * sizeof *busy, cmp_offsets);
            int64_t off = 0;
            for (uint32_t b = 0; b < n_busy; b++) {
                if (busy[2 * b] - off >= items[a].size_bytes) break;
                if (busy[2 * b + 1] > off) off = busy[2 * b + 1];
            }
            items[a].offset = off;
            if (items[a].value != IR_NONE) g->values[items[a].value].mem_offset = off;
            if (off + items[a].size_bytes > arena) arena = off + items[a].size_bytes;
            index_add(&index, 1, 0, index.size - 1, items[a].first, items[a].last, a);
        }
        index_free(&index);
        for (uint32_t v = 0; v < g->n_values; v++)
            if (root[v] != v) g->values[v].mem_offset = g->values[root[v]].mem_offset;
        /* move each node's subgraphs into its block */
        for (uint32_t a = 0; a < n_items; a++) {
            if (items[a].value != IR_NONE) continue;
            const IrNode *n = &g->nodes[items[a].node];
            for (uint32_t k = 0; k < n->n_attrs; k++)
                for (uint32_t s = 0; s < n->attrs[k].n && n->attrs[k].graphs; s++)
                    if (n->attrs[k].graphs[s] < g->n_subgraphs)
                        shift_offsets(g->subgraphs[n->attrs[k].graphs[s]], items[a].offset);
        }
        /* the lower bound: the most bytes live at one node, by a sweep over the lifetimes */
        uint32_t n_t = g->n_nodes + (owner ? 1u : 0u);
        int64_t *delta = calloc((size_t)n_t + 2, sizeof *delta);
        IR_ASSERT(delta);
        for (uint32_t a = 0; a < n_items; a++) {
            if (items[a].first >= n_t) continue;
            delta[items[a].first] += items[a].lower_bytes;
            delta[(items[a].last < n_t ? items[a].last : n_t - 1) + 1] -= items[a].lower_bytes;
        }
        int64_t live = 0;
        for (uint32_t t = 0; t < n_t; t++) {
            live += delta[t];
            if (live > lower) lower = live;
        }
        free(delta);
    }
    g->arena_size_bytes = arena;
    g->arena_lower_bound_bytes = lower;
    g->arena_naive_bytes = naive;
    out->arena = arena;
    out->lower = lower;
    out->naive = naive;
    free(is_out);
    free(last);
    free(root);
    free(items);
    free(busy);
    return ok;
}

bool pass_plan_memory(IrGraph *g, Diag *d) {
    PlanSizes sz;
    return plan_graph(g, NULL, NULL, d, &sz);
}

bool pass_plan_memory_changed(IrGraph *g, Diag *d) {
    pass_plan_memory(g, d);
    return true;
}
