/* Unit tests of control flow's memory plan (passes/plan_memory.c with subgraphs, as
 * backend/c/cgen_control.c relies on it): a Loop body's values get absolute offsets inside
 * the block its node reserves, never overlap what the enclosing graph keeps live across
 * the node nor each other while live, and exactly the subgraph values the emitter fills
 * or copies from get space (carried state lives in the node's output when it has one; scan
 * outputs are written in place). Sizes are drawn at random on every run. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <time.h>

#include "ir/ir.h"
#include "passes/passes.h"

#define MAX_ELEMS 200 /* elements of a random tensor: several alignment units */

static int64_t rand_elems(void) {
    static bool seeded;
    if (!seeded) {
        srand((unsigned)time(NULL));
        seeded = true;
    }
    return 1 + rand() % MAX_ELEMS;
}

static uint32_t add_value(IrGraph *g, const char *name, IrDType dt, int rank, const int64_t *dims,
                          IrValueKind kind) {
    IrType t = ir_type_tensor(dt, rank, dims);
    return ir_value_add(g, name, &t, kind);
}

static uint32_t add_input(IrGraph *g, const char *name, IrDType dt, int rank, const int64_t *d) {
    uint32_t v = add_value(g, name, dt, rank, d, IR_VALUE_INPUT);
    ir_graph_add_input(g, v);
    return v;
}

/* A node of op with inputs in[] and one output like `like` (an existing value's type). */
static uint32_t add_op(IrGraph *g, IrOp op, const char *name, uint32_t n_in, const uint32_t *in,
                       const IrType *like) {
    IrType t = *like;
    uint32_t v = ir_value_add(g, name, &t, IR_VALUE_NODE);
    uint32_t node = ir_node_add(g, op, name, n_in, 1, 0);
    for (uint32_t k = 0; k < n_in; k++) g->nodes[node].inputs[k] = in[k];
    g->nodes[node].outputs[0] = v;
    g->values[v].producer = node;
    return v;
}

static int64_t bytes_of(const IrGraph *g, uint32_t v) {
    return (int64_t)ir_dtype_size_bytes((IrDType)g->values[v].type.dtype,
                                        ir_type_numel(&g->values[v].type));
}

/* ---- the independent checker ---- */

typedef struct Span {
    int64_t lo, hi; /* bytes [lo, hi) */
    uint32_t first, last;
} Span;

static bool is_in(const uint32_t *ids, uint32_t n, uint32_t v) {
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] == v) return true;
    return false;
}

/* Lifetimes of the values of g that have space: root values from producer to last use
 * (uses from subgraphs count at their node); in a subgraph, inputs live all through,
 * outputs to the end. */
static Span *spans(const IrGraph *g, bool sub) {
    Span *s = calloc(g->n_values + 1, sizeof *s);
    cr_assert_not_null(s);
    uint32_t end = g->n_nodes;
    for (uint32_t v = 0; v < g->n_values; v++) {
        const IrValue *val = &g->values[v];
        s[v].lo = val->mem_offset;
        s[v].hi = val->mem_offset < 0 ? -1 : val->mem_offset + bytes_of(g, v);
        s[v].first = val->kind == IR_VALUE_NODE ? val->producer : 0;
        s[v].last = val->kind == IR_VALUE_INPUT && sub ? end : s[v].first;
        if (sub && is_in(g->outputs, g->n_outputs, v)) s[v].last = end;
    }
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        for (uint32_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] != IR_NONE && s[n->inputs[k]].last < i) s[n->inputs[k]].last = i;
        for (uint32_t k = 0; k < n->n_attrs; k++)
            for (uint32_t j = 0; j < n->attrs[k].n && n->attrs[k].graphs; j++) {
                const IrGraph *sg = g->subgraphs[n->attrs[k].graphs[j]];
                for (uint32_t v = 0; v < sg->n_values; v++)
                    if (sg->values[v].kind == IR_VALUE_OUTER &&
                        s[sg->values[v].producer].last < i)
                        s[sg->values[v].producer].last = i;
            }
    }
    return s;
}

static bool overlap(Span a, Span b) { return a.lo < b.hi && b.lo < a.hi; }

/* Every value with space in sub (and deeper) against the spans live at node `at` of g. */
static void check_against(const IrGraph *sub, const IrGraph *g, const Span *gs, uint32_t at,
                          int64_t arena) {
    for (uint32_t v = 0; v < sub->n_values; v++) {
        int64_t off = sub->values[v].mem_offset;
        if (off < 0) continue;
        Span sv = {off, off + bytes_of(sub, v), 0, 0};
        cr_assert_leq(sv.hi, arena, "'%s' ends past the arena", sub->values[v].name);
        cr_assert_eq(off % PASS_ARENA_ALIGN, 0, "'%s' is not aligned", sub->values[v].name);
        for (uint32_t w = 0; w < g->n_values; w++) {
            if (gs[w].lo < 0 || gs[w].first > at || gs[w].last < at) continue;
            cr_assert(!overlap(sv, gs[w]), "'%s' of subgraph '%s' overlaps '%s', live across "
                      "the node that runs it", sub->values[v].name, sub->name,
                      g->values[w].name);
        }
    }
    for (uint32_t s = 0; s < sub->n_subgraphs; s++)
        check_against(sub->subgraphs[s], g, gs, at, arena);
}

static void check_graph(const IrGraph *g, bool sub, int64_t arena) {
    Span *s = spans(g, sub);
    for (uint32_t a = 0; a < g->n_values; a++) {
        if (s[a].lo < 0) continue;
        for (uint32_t b = a + 1; b < g->n_values; b++) {
            if (s[b].lo < 0 || s[a].last < s[b].first || s[b].last < s[a].first) continue;
            cr_assert(!overlap(s[a], s[b]), "'%s' and '%s' of '%s' are live together and share "
                      "bytes", g->values[a].name, g->values[b].name, g->name);
        }
    }
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        for (uint32_t k = 0; k < n->n_attrs; k++)
            for (uint32_t j = 0; j < n->attrs[k].n && n->attrs[k].graphs; j++) {
                const IrGraph *sg = g->subgraphs[n->attrs[k].graphs[j]];
                check_against(sg, g, s, i, arena);
                check_graph(sg, true, arena);
            }
    }
    free(s);
}

static void plan_and_check(IrGraph *g) {
    Diag d;
    diag_init(&d);
    cr_assert(pass_plan_memory(g, &d), "the planner refused a static graph");
    diag_free(&d);
    check_graph(g, false, g->arena_size_bytes);
}

static void set_graph_attr(IrGraph *g, uint32_t node, IrAttrId id, uint32_t sub) {
    IrAttr *a = ir_node_attr(&g->nodes[node], id);
    a->present = true;
    a->kind = IR_ATTR_KIND_GRAPH;
    a->n = 1;
    a->graphs = ir_arena_alloc(g->arena, sizeof *a->graphs);
    a->graphs[0] = sub;
}

/* ---- a Loop ---- */

typedef struct LoopCase {
    IrGraph *g;
    IrGraph *body;
    uint32_t p, loop_node, final, scan;          /* root */
    uint32_t b_iter, b_cond, b_state, t1, t2, t3; /* body */
} LoopCase;

/* root: p = Relu(x); (final, scan) = Loop(M, _, p); y = Add(final, p).
 * body(i, c, s): t1 = Relu(s); t2 = Add(t1, p); t3 = Neg(t2) -> (c, t2, t3).
 * With keep_final false, the Loop's first output is omitted. */
static LoopCase make_loop(bool keep_final) {
    LoopCase L;
    int64_t n = rand_elems(), trips = 4, scan_dims[2] = {trips, n};
    L.g = ir_graph_new("root");
    IrGraph *g = L.g;
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 1, &n);
    uint32_t m = add_input(g, "M", IR_DTYPE_I64, 0, NULL);
    L.p = add_op(g, IR_OP_RELU, "p", 1, &x, &g->values[x].type);
    uint32_t sb = ir_graph_add_subgraph(g, "body");
    L.body = g->subgraphs[sb];
    IrGraph *b = L.body;
    L.b_iter = add_input(b, "i", IR_DTYPE_I64, 0, NULL);
    L.b_cond = add_input(b, "c", IR_DTYPE_BOOL, 0, NULL);
    L.b_state = add_input(b, "s", IR_DTYPE_F32, 1, &n);
    uint32_t po = add_value(b, "p", IR_DTYPE_F32, 1, &n, IR_VALUE_OUTER);
    b->values[po].producer = L.p;
    L.t1 = add_op(b, IR_OP_RELU, "t1", 1, &L.b_state, &b->values[L.b_state].type);
    uint32_t in2[2] = {L.t1, po};
    L.t2 = add_op(b, IR_OP_ADD, "t2", 2, in2, &b->values[L.b_state].type);
    L.t3 = add_op(b, IR_OP_NEG, "t3", 1, &L.t2, &b->values[L.b_state].type);
    ir_graph_add_output(b, L.b_cond);
    ir_graph_add_output(b, L.t2);
    ir_graph_add_output(b, L.t3);
    L.final = add_value(g, "final", IR_DTYPE_F32, 1, &n, IR_VALUE_NODE);
    L.scan = add_value(g, "scan", IR_DTYPE_F32, 2, scan_dims, IR_VALUE_NODE);
    L.loop_node = ir_node_add(g, IR_OP_LOOP, "loop", 3, 2, 0);
    IrNode *ln = &g->nodes[L.loop_node];
    ln->inputs[0] = m;
    ln->inputs[2] = L.p;
    ln->outputs[0] = keep_final ? L.final : IR_NONE;
    ln->outputs[1] = L.scan;
    if (keep_final) g->values[L.final].producer = L.loop_node;
    g->values[L.scan].producer = L.loop_node;
    g->values[L.scan].result_index = 1;
    set_graph_attr(g, L.loop_node, IR_ATTR_LOOP_BODY, sb);
    uint32_t in3[2] = {keep_final ? L.final : L.p, L.p};
    uint32_t y = add_op(g, IR_OP_ADD, "y", 2, in3, &g->values[x].type);
    ir_graph_add_output(g, y);
    ir_graph_add_output(g, L.scan);
    return L;
}

Test(control_plan, places_a_loop_body_inside_its_block_apart_from_values_live_across_it) {
    LoopCase L = make_loop(true);
    plan_and_check(L.g);
    const IrValue *bv = L.body->values;
    cr_assert_geq(bv[L.t1].mem_offset, 0, "an intermediate of the body has space");
    cr_assert_geq(bv[L.t2].mem_offset, 0, "a carried result is copied out: it has space");
    cr_assert_geq(bv[L.b_cond].mem_offset, 0, "the condition read back has space");
    ir_graph_free(L.g);
}

Test(control_plan, keeps_carried_state_in_the_nodes_output_and_writes_scan_outputs_in_place) {
    LoopCase L = make_loop(true);
    plan_and_check(L.g);
    const IrValue *bv = L.body->values;
    cr_assert_lt(bv[L.b_state].mem_offset, 0, "the state lives in the Loop's output");
    cr_assert_lt(bv[L.t3].mem_offset, 0, "a scan output is written into the Loop's output");
    cr_assert_lt(bv[L.b_iter].mem_offset, 0, "an unread iteration number needs no space");
    ir_graph_free(L.g);
}

Test(control_plan, gives_carried_state_its_own_space_when_the_final_value_is_dropped) {
    LoopCase L = make_loop(false);
    plan_and_check(L.g);
    cr_assert_geq(L.body->values[L.b_state].mem_offset, 0);
    ir_graph_free(L.g);
}

Test(control_plan, nests_an_if_block_inside_the_loop_body_block) {
    LoopCase L = make_loop(true);
    /* body gains: (u) = If(c) with then: u1 = Relu(t1), u2 = Neg(u1) -> u2; else -> t1 */
    IrGraph *b = L.body;
    uint32_t tb = ir_graph_add_subgraph(b, "then"), eb = ir_graph_add_subgraph(b, "else");
    IrGraph *then_g = b->subgraphs[tb], *else_g = b->subgraphs[eb];
    const IrType *ty = &b->values[L.t1].type;
    uint32_t t1o = add_value(then_g, "t1", IR_DTYPE_F32, ty->rank, ty->dims, IR_VALUE_OUTER);
    then_g->values[t1o].producer = L.t1;
    uint32_t u1 = add_op(then_g, IR_OP_RELU, "u1", 1, &t1o, ty);
    uint32_t u2 = add_op(then_g, IR_OP_NEG, "u2", 1, &u1, ty);
    ir_graph_add_output(then_g, u2);
    uint32_t t1e = add_value(else_g, "t1", IR_DTYPE_F32, ty->rank, ty->dims, IR_VALUE_OUTER);
    else_g->values[t1e].producer = L.t1;
    ir_graph_add_output(else_g, t1e);
    uint32_t u = add_value(b, "u", IR_DTYPE_F32, ty->rank, ty->dims, IR_VALUE_NODE);
    uint32_t ifn = ir_node_add(b, IR_OP_IF, "if", 1, 1, 0);
    b->nodes[ifn].inputs[0] = L.b_cond;
    b->nodes[ifn].outputs[0] = u;
    b->values[u].producer = ifn;
    set_graph_attr(b, ifn, IR_ATTR_IF_THEN_BRANCH, tb);
    set_graph_attr(b, ifn, IR_ATTR_IF_ELSE_BRANCH, eb);
    /* t3 now reads u, so t1 and u stay live across the If */
    uint32_t in2[2] = {u, L.t2};
    uint32_t w = add_op(b, IR_OP_ADD, "w", 2, in2, ty);
    b->outputs[2] = w;
    plan_and_check(L.g);
    cr_assert_geq(then_g->values[u1].mem_offset, 0, "a branch intermediate has space");
    cr_assert_lt(then_g->values[u2].mem_offset, 0, "a branch result goes into the If's output");
    ir_graph_free(L.g);
}
