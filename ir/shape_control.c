/* Shape inference of control flow: If (the union of both branches, or the branch that a
 * known condition picks), Loop and Scan (body inputs typed from the node, outputs from the
 * body, scan outputs stacked along a new or given axis) and SequenceMap. Subgraphs are
 * inferred recursively through shape_infer_subgraph before the node's own outputs are set. */
#include "shape.h"

#include <stdlib.h>
#include <string.h>

IrType shape_union(IrArena *arena, const IrType *a, const IrType *b) {
    if (a->kind != b->kind) return shape_unknown();
    IrType u = *a;
    if (a->kind == IR_TYPE_SEQUENCE || a->kind == IR_TYPE_OPTIONAL) {
        if (!a->elem || !b->elem) {
            u.elem = NULL;
            return u;
        }
        IrType e = shape_union(arena, a->elem, b->elem);
        u.elem = ir_arena_memdup(arena, &e, sizeof e);
        return u;
    }
    if (a->kind != IR_TYPE_TENSOR && a->kind != IR_TYPE_SPARSE_TENSOR) return u;
    if (a->dtype != b->dtype) u.dtype = IR_DTYPE_UNDEF;
    if (a->rank != b->rank) {
        u.rank = -1;
        return u;
    }
    for (int i = 0; i < a->rank; i++) {
        ShapeDim da = shape_dim(a, i), db = shape_dim(b, i);
        shape_set_dim(&u, i, shape_dim_same(da, db) ? da : shape_dim_unknown());
    }
    return u;
}

const IrType *shape_elem(ShapeCtx *c, const IrType *t) {
    return ir_arena_memdup(c->g->arena, t, sizeof *t);
}

static uint32_t graph_attr(ShapeCtx *c, IrAttrId id, bool *ok) {
    const IrAttr *a = ir_node_attr(c->node, id);
    *ok = a->present && a->kind == IR_ATTR_KIND_GRAPH && a->n >= 1 && a->graphs;
    if (!*ok) {
        shape_error(c, "missing graph attribute '%s'", a->name ? a->name : "?");
        return 0;
    }
    return a->graphs[0];
}

/* The same kind and element type with every dim unknown: what a loop-carried value is
 * known to be before the body runs more than once. */
static IrType relax(const IrType *t) {
    IrType r = *t;
    if (r.kind == IR_TYPE_TENSOR)
        for (int i = 0; i < r.rank; i++) {
            r.dims[i] = IR_DIM_UNKNOWN;
            r.syms[i] = 0;
        }
    return r;
}

static IrType in_or_unknown(const ShapeCtx *c, uint32_t i) {
    const IrType *t = shape_in(c, i);
    return t ? *t : shape_unknown();
}

void shape_if(ShapeCtx *c) {
    bool ok1, ok2;
    uint32_t then_i = graph_attr(c, IR_ATTR_IF_THEN_BRANCH, &ok1);
    uint32_t else_i = graph_attr(c, IR_ATTR_IF_ELSE_BRANCH, &ok2);
    if (!ok1 || !ok2) return;
    IrGraph *tg = shape_infer_subgraph(c, then_i, NULL, 0);
    IrGraph *eg = shape_infer_subgraph(c, else_i, NULL, 0);
    if (!tg || !eg) return;
    /* a condition known at compile time picks its branch's types */
    int64_t cond;
    uint32_t n;
    bool known = shape_const_ints(c, 0, &cond, 1, &n) && n == 1;
    for (uint32_t k = 0; k < c->n_out; k++) {
        if (k >= tg->n_outputs || k >= eg->n_outputs) break;
        const IrType *a = &tg->values[tg->outputs[k]].type;
        const IrType *b = &eg->values[eg->outputs[k]].type;
        c->out[k] = known ? (cond ? *a : *b) : shape_union(c->g->arena, a, b);
    }
}

/* Loop(M, cond, v_initial...N) -> (v_final...N, scan_outputs...K);
 * body(iter_num, cond, v...N) -> (cond, v...N, scan...K). */
void shape_loop(ShapeCtx *c) {
    bool ok;
    uint32_t body = graph_attr(c, IR_ATTR_LOOP_BODY, &ok);
    if (!ok) return;
    uint32_t n_carried = c->node->n_inputs >= 2 ? c->node->n_inputs - 2 : 0;
    IrType *in = malloc((n_carried + 2) * sizeof *in);
    IR_ASSERT(in);
    in[0] = shape_tensor(IR_DTYPE_I64, 0);
    in[1] = shape_tensor(IR_DTYPE_BOOL, 0);
    for (uint32_t i = 0; i < n_carried; i++) {
        IrType t = in_or_unknown(c, 2 + i);
        in[2 + i] = relax(&t);
    }
    IrGraph *b = shape_infer_subgraph(c, body, in, n_carried + 2);
    free(in);
    if (!b) return;
    for (uint32_t k = 0; k < c->n_out && 1 + k < b->n_outputs; k++) {
        const IrType *bt = &b->values[b->outputs[1 + k]].type;
        if (k < n_carried) {
            IrType init = in_or_unknown(c, 2 + k);
            c->out[k] = init.kind == IR_TYPE_UNDEF ? relax(bt) : shape_union(c->g->arena, &init, bt);
            continue;
        }
        if (bt->kind != IR_TYPE_TENSOR) continue;
        IrType o = *bt;
        if (o.rank >= 0 && o.rank < IR_MAX_RANK) {
            memmove(o.dims + 1, o.dims, (size_t)o.rank * sizeof o.dims[0]);
            memmove(o.syms + 1, o.syms, (size_t)o.rank * sizeof o.syms[0]);
            o.rank++;
            shape_set_dim(&o, 0, shape_dim_unknown());
        } else {
            o.rank = -1;
        }
        c->out[k] = o;
    }
}

static bool remove_axis(IrType *t, int axis) {
    if (t->rank <= 0 || axis < 0 || axis >= t->rank) return false;
    for (int i = axis; i < t->rank - 1; i++) {
        t->dims[i] = t->dims[i + 1];
        t->syms[i] = t->syms[i + 1];
    }
    t->rank--;
    return true;
}

static bool insert_axis(IrType *t, int axis, ShapeDim d) {
    if (t->rank < 0 || t->rank >= IR_MAX_RANK || axis < 0 || axis > t->rank) return false;
    for (int i = t->rank; i > axis; i--) {
        t->dims[i] = t->dims[i - 1];
        t->syms[i] = t->syms[i - 1];
    }
    t->rank++;
    shape_set_dim(t, axis, d);
    return true;
}

/* Scan (opset 9+): inputs N states then M scan inputs; body(states, slices) -> (states,
 * scan outputs K); each scan output gains the sequence length at its output axis. */
void shape_scan(ShapeCtx *c) {
    if (shape_opset(c) < 9) return; /* opset 8 form (batched, sequence_lens) not inferred */
    bool ok;
    uint32_t body = graph_attr(c, IR_ATTR_SCAN_BODY, &ok);
    if (!ok) return;
    int64_t m = ir_attr_i(c->node, IR_ATTR_SCAN_NUM_SCAN_INPUTS);
    uint32_t n_in = c->node->n_inputs;
    if (m < 1 || (uint32_t)m > n_in) {
        shape_error(c, "num_scan_inputs %lld does not fit %u inputs", (long long)m, n_in);
        return;
    }
    uint32_t n_state = n_in - (uint32_t)m;
    uint32_t n_axes, n_oaxes;
    const int64_t *in_axes = ir_attr_ints(c->node, IR_ATTR_SCAN_SCAN_INPUT_AXES, &n_axes);
    const int64_t *out_axes = ir_attr_ints(c->node, IR_ATTR_SCAN_SCAN_OUTPUT_AXES, &n_oaxes);
    IrType *in = malloc(n_in * sizeof *in);
    IR_ASSERT(in);
    ShapeDim seq = shape_dim_unknown();
    for (uint32_t i = 0; i < n_in; i++) {
        in[i] = in_or_unknown(c, i);
        if (i < n_state || in[i].kind != IR_TYPE_TENSOR || in[i].rank < 0) continue;
        uint32_t j = i - n_state;
        int axis;
        if (!shape_axis(c, in_axes && j < n_axes ? in_axes[j] : 0, in[i].rank, &axis)) {
            free(in);
            return;
        }
        if (seq.v < 0) seq = shape_dim(&in[i], axis);
        remove_axis(&in[i], axis);
    }
    IrGraph *b = shape_infer_subgraph(c, body, in, n_in);
    free(in);
    if (!b) return;
    for (uint32_t k = 0; k < c->n_out && k < b->n_outputs; k++) {
        IrType o = b->values[b->outputs[k]].type;
        if (k >= n_state && o.kind == IR_TYPE_TENSOR && o.rank >= 0) {
            uint32_t j = k - n_state;
            int axis;
            if (!shape_axis(c, out_axes && j < n_oaxes ? out_axes[j] : 0, o.rank + 1, &axis))
                return;
            if (!insert_axis(&o, axis, seq)) o.rank = -1;
        }
        c->out[k] = o;
    }
}

/* SequenceMap(seq, extra...) -> sequences of the body's outputs. */
void shape_sequence_map(ShapeCtx *c) {
    bool ok;
    uint32_t body = graph_attr(c, IR_ATTR_SEQUENCE_MAP_BODY, &ok);
    if (!ok) return;
    uint32_t n_in = c->node->n_inputs;
    IrType *in = malloc((n_in ? n_in : 1) * sizeof *in);
    IR_ASSERT(in);
    for (uint32_t i = 0; i < n_in; i++) {
        IrType t = in_or_unknown(c, i);
        if (t.kind == IR_TYPE_SEQUENCE) t = t.elem ? *t.elem : shape_unknown();
        in[i] = t;
    }
    IrGraph *b = shape_infer_subgraph(c, body, in, n_in);
    free(in);
    if (!b) return;
    for (uint32_t k = 0; k < c->n_out && k < b->n_outputs; k++) {
        IrType s = shape_unknown();
        s.kind = IR_TYPE_SEQUENCE;
        const IrType *bt = &b->values[b->outputs[k]].type;
        if (bt->kind != IR_TYPE_UNDEF) s.elem = shape_elem(c, bt);
        c->out[k] = s;
    }
}
