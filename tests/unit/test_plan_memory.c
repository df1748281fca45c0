/* Unit tests of passes/plan_memory.c, the static arena planner. Graphs are built in C
 * (chains, diamonds, a value used late, graph outputs, OUTER uses from nested subgraphs,
 * views sharing their input's block, random DAGs with random sizes and views); every plan is checked against lifetimes, a lower bound and
 * a naive sum that the test computes on its own: no two tensors live at the same time share
 * a byte (all pairs), offsets are aligned, the arena holds every tensor and is at least the
 * lower bound. Random graphs are drawn fresh on every run; the seed is in failure messages. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/ir.h"
#include "passes/passes.h"

#define RANDOM_GRAPHS 300     /* random DAGs per run */
#define RANDOM_MAX_NODES 40
#define RANDOM_MAX_ELEMS 300  /* elements of a random tensor: spans several alignment units */

static unsigned test_seed(void) {
    static unsigned seed;
    if (!seed) seed = (unsigned)time(NULL) ^ (unsigned)clock() ^ 0x5bd1e995u;
    return seed;
}

/* ---- building graphs ---------------------------------------------------------------- */

static IrType f32_vec(int64_t n) { return ir_type_tensor(IR_DTYPE_F32, 1, &n); }

static uint32_t add_input(IrGraph *g, const char *name, int64_t n) {
    IrType t = f32_vec(n);
    uint32_t v = ir_value_add(g, name, &t, IR_VALUE_INPUT);
    ir_graph_add_input(g, v);
    return v;
}

/* A node of op with the given inputs and one output of n float32 elements. */
static uint32_t add_op(IrGraph *g, IrOp op, const char *name, int64_t n, uint32_t n_in,
                       const uint32_t *in) {
    IrType t = f32_vec(n);
    uint32_t v = ir_value_add(g, name, &t, IR_VALUE_NODE);
    uint32_t node = ir_node_add(g, op, name, n_in, 1, 0);
    IrNode *nd = &g->nodes[node];
    for (uint32_t k = 0; k < n_in; k++) nd->inputs[k] = in[k];
    nd->outputs[0] = v;
    g->values[v].producer = node;
    g->values[v].result_index = 0;
    return v;
}

static uint32_t relu(IrGraph *g, const char *name, int64_t n, uint32_t x) {
    return add_op(g, IR_OP_RELU, name, n, 1, &x);
}

static uint32_t add2(IrGraph *g, const char *name, int64_t n, uint32_t x, uint32_t y) {
    uint32_t in[2] = {x, y};
    return add_op(g, IR_OP_ADD, name, n, 2, in);
}

/* ---- the independent checker ------------------------------------------------------- */

typedef struct Life {
    bool in_arena;
    int64_t bytes, aligned;
    uint32_t first, last;
} Life;

static int64_t round_up(int64_t x) {
    int64_t r = x % PASS_ARENA_ALIGN;
    return r ? x + PASS_ARENA_ALIGN - r : x;
}

static bool is_graph_output(const IrGraph *g, uint32_t v) {
    for (uint32_t i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == v) return true;
    return false;
}

/* Resolves an OUTER value of sub to the id of the value it names in root, or IR_NONE. */
static uint32_t outer_root_value(const IrGraph *root, const IrGraph *sub, uint32_t v) {
    while (sub != root) {
        if (!sub || sub->values[v].kind != IR_VALUE_OUTER) return IR_NONE;
        v = sub->values[v].producer;
        sub = sub->parent;
    }
    return v;
}

/* Every value of root that sub (or a subgraph of it) reads through OUTER: its last use
 * becomes at least `node`. */
static void extend_by_subgraph(const IrGraph *root, const IrGraph *sub, uint32_t node,
                               Life *life) {
    for (uint32_t v = 0; v < sub->n_values; v++) {
        if (sub->values[v].kind != IR_VALUE_OUTER) continue;
        uint32_t r = outer_root_value(root, sub, v);
        if (r != IR_NONE && life[r].last < node) life[r].last = node;
    }
    for (uint32_t s = 0; s < sub->n_subgraphs; s++)
        extend_by_subgraph(root, sub->subgraphs[s], node, life);
}

/* View groups as the planner's contract states them: the output of a Reshape, Flatten,
 * Squeeze, Unsqueeze or Identity whose input and output are both intermediates of the same
 * byte size shares its input's block; group[v] is the first value of v's chain. */
static uint32_t *view_group(const IrGraph *g, const Life *life) {
    uint32_t *grp = malloc((g->n_values + 1) * sizeof *grp);
    cr_assert_not_null(grp);
    for (uint32_t v = 0; v < g->n_values; v++) grp[v] = v;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        bool view = n->op == IR_OP_RESHAPE || n->op == IR_OP_FLATTEN ||
                    n->op == IR_OP_SQUEEZE || n->op == IR_OP_UNSQUEEZE ||
                    n->op == IR_OP_IDENTITY;
        if (!view || n->n_inputs < 1 || n->n_outputs < 1) continue;
        uint32_t x = n->inputs[0], y = n->outputs[0];
        if (life[x].in_arena && life[y].in_arena && life[x].bytes == life[y].bytes)
            grp[y] = grp[x];
    }
    return grp;
}

/* Lifetimes as the planner's contract states them: from the producing node to the last
 * node that reads the value (directly or from one of its subgraphs). */
static Life *lifetimes(const IrGraph *g) {
    Life *life = calloc(g->n_values, sizeof *life);
    cr_assert_not_null(life);
    for (uint32_t v = 0; v < g->n_values; v++) {
        const IrValue *val = &g->values[v];
        life[v].in_arena = val->kind == IR_VALUE_NODE && val->producer != IR_NONE &&
                           !is_graph_output(g, v);
        life[v].bytes = (int64_t)ir_dtype_size_bytes((IrDType)val->type.dtype,
                                                     ir_type_numel(&val->type));
        life[v].aligned = round_up(life[v].bytes);
        life[v].first = life[v].last = val->producer;
    }
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        for (uint32_t k = 0; k < n->n_inputs; k++) {
            uint32_t v = n->inputs[k];
            if (v != IR_NONE && g->values[v].kind == IR_VALUE_NODE && life[v].last < i)
                life[v].last = i;
        }
        for (uint32_t k = 0; k < n->n_attrs; k++) {
            const IrAttr *a = &n->attrs[k];
            if (!a->present || !a->graphs) continue;
            for (uint32_t s = 0; s < a->n; s++)
                extend_by_subgraph(g, g->subgraphs[a->graphs[s]], i, life);
        }
    }
    return life;
}

typedef struct PlanFacts {
    int64_t lower, naive;
} PlanFacts;

/* Checks g's plan (pass_plan_memory already run); returns the test's own lower bound and
 * naive sum. `what` names the case in messages. */
static PlanFacts check_plan(const IrGraph *g, const char *what) {
    Life *life = lifetimes(g);
    PlanFacts f = {0, 0};
    uint32_t *grp = view_group(g, life);
    /* a view group is one block: the same offset for all, living over all their lifetimes
     * (its first value's entry stands for the group below; views count in the naive sum) */
    for (uint32_t v = 0; v < g->n_values; v++) {
        if (grp[v] == v) continue;
        cr_assert_eq(g->values[v].mem_offset, g->values[grp[v]].mem_offset,
                     "%s: view '%s' at %lld, its input's block at %lld", what,
                     g->values[v].name, (long long)g->values[v].mem_offset,
                     (long long)g->values[grp[v]].mem_offset);
        Life *r = &life[grp[v]];
        if (life[v].first < r->first) r->first = life[v].first;
        if (life[v].last > r->last) r->last = life[v].last;
    }
    for (uint32_t v = 0; v < g->n_values; v++) {
        const IrValue *val = &g->values[v];
        cr_assert_eq(pass_value_in_arena(g, v), life[v].in_arena, "%s: '%s' in arena?", what,
                     val->name);
        if (!life[v].in_arena) {
            cr_assert_eq(val->mem_offset, -1, "%s: '%s' is not an intermediate but has offset "
                         "%lld", what, val->name, (long long)val->mem_offset);
            continue;
        }
        f.naive += life[v].aligned;
        cr_assert_geq(val->mem_offset, 0, "%s: '%s' has no offset", what, val->name);
        cr_assert_eq(val->mem_offset % PASS_ARENA_ALIGN, 0, "%s: '%s' at %lld is not aligned",
                     what, val->name, (long long)val->mem_offset);
        cr_assert_leq(val->mem_offset + life[v].bytes, g->arena_size_bytes,
                      "%s: '%s' ends past the arena", what, val->name);
    }
    /* all pairs of blocks: lifetimes that meet must not share bytes */
    for (uint32_t a = 0; a < g->n_values; a++) {
        if (!life[a].in_arena || life[a].bytes == 0 || grp[a] != a) continue;
        for (uint32_t b = a + 1; b < g->n_values; b++) {
            if (!life[b].in_arena || life[b].bytes == 0 || grp[b] != b) continue;
            bool live_together = !(life[a].last < life[b].first || life[b].last < life[a].first);
            if (!live_together) continue;
            int64_t a0 = g->values[a].mem_offset, a1 = a0 + life[a].bytes;
            int64_t b0 = g->values[b].mem_offset, b1 = b0 + life[b].bytes;
            cr_assert(a1 <= b0 || b1 <= a0,
                      "%s: '%s' [%lld,%lld) nodes %u..%u and '%s' [%lld,%lld) nodes %u..%u "
                      "share bytes", what, g->values[a].name, (long long)a0, (long long)a1,
                      life[a].first, life[a].last, g->values[b].name, (long long)b0,
                      (long long)b1, life[b].first, life[b].last);
        }
    }
    /* lower bound: the most aligned bytes live at one node */
    for (uint32_t t = 0; t < g->n_nodes; t++) {
        int64_t live = 0;
        for (uint32_t v = 0; v < g->n_values; v++)
            if (life[v].in_arena && grp[v] == v && life[v].first <= t && t <= life[v].last)
                live += life[v].aligned;
        if (live > f.lower) f.lower = live;
    }
    cr_assert_eq(g->arena_lower_bound_bytes, f.lower, "%s: lower bound %lld, test says %lld",
                 what, (long long)g->arena_lower_bound_bytes, (long long)f.lower);
    cr_assert_eq(g->arena_naive_bytes, f.naive, "%s: naive sum %lld, test says %lld", what,
                 (long long)g->arena_naive_bytes, (long long)f.naive);
    cr_assert_geq(g->arena_size_bytes, f.lower, "%s: arena below the lower bound", what);
    cr_assert_leq(g->arena_size_bytes, f.naive, "%s: arena above the naive sum", what);
    free(grp);
    free(life);
    return f;
}

static void plan(IrGraph *g) {
    Diag d;
    diag_init(&d);
    cr_assert(pass_plan_memory(g, &d), "the planner refused a static graph");
    diag_free(&d);
}

static bool share_bytes(const IrGraph *g, uint32_t a, uint32_t b) {
    int64_t a0 = g->values[a].mem_offset, b0 = g->values[b].mem_offset;
    int64_t a1 = a0 + ir_type_numel(&g->values[a].type) * 4;
    int64_t b1 = b0 + ir_type_numel(&g->values[b].type) * 4;
    return a0 < b1 && b0 < a1;
}

/* ---- cases -------------------------------------------------------------------------- */

Test(plan_memory, reuses_space_along_a_chain_so_the_arena_beats_the_naive_sum) {
    enum { LEN = 8, ELEMS = 100 }; /* 400 bytes: 448 aligned */
    IrGraph *g = ir_graph_new("chain");
    uint32_t v = add_input(g, "x", ELEMS);
    char name[16];
    for (int i = 0; i < LEN; i++) {
        snprintf(name, sizeof name, "t%d", i);
        v = relu(g, name, ELEMS, v);
    }
    ir_graph_add_output(g, v);
    plan(g);
    PlanFacts f = check_plan(g, "chain");
    /* LEN-1 intermediates, at most two live at once */
    cr_assert_eq(f.naive, (LEN - 1) * round_up(ELEMS * 4));
    cr_assert_eq(f.lower, 2 * round_up(ELEMS * 4));
    cr_assert_eq(g->arena_size_bytes, f.lower, "a chain needs only two buffers, got %lld",
                 (long long)g->arena_size_bytes);
    cr_assert_lt(g->arena_size_bytes, f.naive);
    ir_graph_free(g);
}

Test(plan_memory, keeps_both_branches_of_a_diamond_apart_until_they_join) {
    IrGraph *g = ir_graph_new("diamond");
    uint32_t x = add_input(g, "x", 64);
    uint32_t top = relu(g, "top", 64, x);
    uint32_t left = relu(g, "left", 64, top);
    uint32_t right = relu(g, "right", 64, top);
    uint32_t join = add2(g, "join", 64, left, right);
    uint32_t after = relu(g, "after", 64, join);
    ir_graph_add_output(g, relu(g, "out", 64, after));
    plan(g);
    check_plan(g, "diamond");
    cr_assert(!share_bytes(g, left, right));
    cr_assert(!share_bytes(g, top, right), "top is read by the node that writes right");
    /* top is dead once right is written: after may take its place */
    cr_assert_eq(g->arena_size_bytes, 3 * 256, "three 256-byte tensors at most live at once");
    ir_graph_free(g);
}

Test(plan_memory, keeps_a_value_used_late_out_of_every_tensor_made_meanwhile) {
    enum { LEN = 6 };
    IrGraph *g = ir_graph_new("late");
    uint32_t x = add_input(g, "x", 32);
    uint32_t early = relu(g, "early", 32, x);
    uint32_t v = early, made[LEN];
    char name[16];
    for (int i = 0; i < LEN; i++) {
        snprintf(name, sizeof name, "m%d", i);
        made[i] = v = relu(g, name, 32 + 16 * i, v);
    }
    ir_graph_add_output(g, add2(g, "out", 32, v, early));
    plan(g);
    check_plan(g, "late");
    for (int i = 0; i < LEN; i++)
        cr_assert(!share_bytes(g, early, made[i]), "'early' shares bytes with m%d", i);
    ir_graph_free(g);
}

Test(plan_memory, leaves_graph_outputs_and_inputs_out_of_the_arena) {
    IrGraph *g = ir_graph_new("outputs");
    uint32_t x = add_input(g, "x", 50);
    uint32_t a = relu(g, "a", 50, x);
    uint32_t b = relu(g, "b", 50, a); /* an output that a later node also reads */
    uint32_t c = relu(g, "c", 50, b);
    ir_graph_add_output(g, b);
    ir_graph_add_output(g, c);
    plan(g);
    check_plan(g, "outputs");
    cr_assert(!pass_value_in_arena(g, x));
    cr_assert(!pass_value_in_arena(g, b));
    cr_assert(!pass_value_in_arena(g, c));
    cr_assert(pass_value_in_arena(g, a));
    cr_assert_eq(g->values[b].mem_offset, -1);
    cr_assert_eq(g->arena_size_bytes, 256, "only 'a' (200 bytes) lives in the arena");
    ir_graph_free(g);
}

Test(plan_memory, gives_an_empty_arena_to_a_graph_without_intermediates) {
    IrGraph *g = ir_graph_new("empty");
    uint32_t x = add_input(g, "x", 9);
    ir_graph_add_output(g, relu(g, "y", 9, x));
    plan(g);
    check_plan(g, "empty");
    cr_assert_eq(g->arena_size_bytes, 0);
    cr_assert_eq(g->arena_lower_bound_bytes, 0);
    ir_graph_free(g);
}

/* Sets graph attribute `id` of node to subgraph index sub. */
static void set_graph_attr(IrGraph *g, uint32_t node, IrAttrId id, uint32_t sub) {
    IrAttr *a = ir_node_attr(&g->nodes[node], id);
    cr_assert_not_null(a);
    a->present = true;
    a->kind = IR_ATTR_KIND_GRAPH;
    a->n = 1;
    a->graphs = ir_arena_alloc(g->arena, sizeof *a->graphs);
    a->graphs[0] = sub;
}

/* An OUTER value in sub naming value `of` of sub's parent. */
static uint32_t add_outer(IrGraph *sub, const char *name, uint32_t of) {
    IrType t = sub->parent->values[of].type;
    uint32_t v = ir_value_add(sub, name, &t, IR_VALUE_OUTER);
    sub->values[v].producer = of;
    return v;
}

Test(plan_memory, extends_a_lifetime_to_a_use_inside_a_nested_subgraph) {
    /* a (big) is read directly only by node 1; an If at node 3 reads it from a subgraph of
     * its then-branch. c has a's size and is made at node 2: without the OUTER use it would
     * take a's bytes. */
    enum { BIG = 256, SMALL = 16 };
    IrGraph *g = ir_graph_new("outer");
    uint32_t x = add_input(g, "x", BIG);
    IrType bt = ir_type_tensor(IR_DTYPE_BOOL, 0, NULL);
    uint32_t cond = ir_value_add(g, "cond", &bt, IR_VALUE_INPUT);
    ir_graph_add_input(g, cond);
    uint32_t a = relu(g, "a", BIG, x);         /* node 0 */
    uint32_t b = relu(g, "b", SMALL, a);       /* node 1 */
    uint32_t c = relu(g, "c", BIG, b);         /* node 2 */
    uint32_t iff = add_op(g, IR_OP_IF, "if", SMALL, 1, &cond); /* node 3 */
    uint32_t if_node = g->values[iff].producer;
    uint32_t then_b = ir_graph_add_subgraph(g, "then");
    uint32_t else_b = ir_graph_add_subgraph(g, "else");
    IrGraph *then_g = g->subgraphs[then_b];
    uint32_t a_view = add_outer(then_g, "a", a);
    uint32_t inner = ir_graph_add_subgraph(then_g, "inner");
    add_outer(then_g->subgraphs[inner], "a", a_view); /* OUTER of an OUTER: two levels up */
    add_outer(g->subgraphs[else_b], "x", x);          /* a graph input: stays out */
    set_graph_attr(g, if_node, IR_ATTR_IF_THEN_BRANCH, then_b);
    set_graph_attr(g, if_node, IR_ATTR_IF_ELSE_BRANCH, else_b);
    uint32_t d = add2(g, "d", BIG, c, iff);    /* node 4 */
    ir_graph_add_output(g, d);
    plan(g);
    check_plan(g, "outer");
    cr_assert(!share_bytes(g, a, c), "'a' is read by the If (node 3) after 'c' is made");
    cr_assert(!share_bytes(g, a, iff));
    ir_graph_free(g);
}

/* A random DAG: each node reads one or two earlier values (any of them, so lifetimes are
 * long and varied), random sizes including empty tensors, some nodes' values are graph
 * outputs. */
static IrGraph *random_graph(unsigned *state) {
    IrGraph *g = ir_graph_new("random");
    uint32_t n_nodes = 2 + (uint32_t)rand_r(state) % RANDOM_MAX_NODES;
    uint32_t *vals = malloc((n_nodes + 2) * sizeof *vals);
    uint32_t n_vals = 0;
    vals[n_vals++] = add_input(g, "x0", 1 + rand_r(state) % RANDOM_MAX_ELEMS);
    vals[n_vals++] = add_input(g, "x1", 1 + rand_r(state) % RANDOM_MAX_ELEMS);
    char name[16];
    for (uint32_t i = 0; i < n_nodes; i++) {
        /* prefer recent values, but reach back anywhere now and then */
        uint32_t span = rand_r(state) % 4 == 0 ? n_vals : (n_vals < 3 ? n_vals : 3);
        uint32_t p = vals[n_vals - 1 - (uint32_t)rand_r(state) % span];
        uint32_t q = vals[(uint32_t)rand_r(state) % n_vals];
        int64_t elems = rand_r(state) % 10 == 0 ? 0 : 1 + rand_r(state) % RANDOM_MAX_ELEMS;
        snprintf(name, sizeof name, "v%u", i);
        int pick = rand_r(state) % 5;
        if (pick == 4) /* a view of p: same bytes (Reshape's shape input is left out here) */
            vals[n_vals++] = add_op(g, rand_r(state) % 2 ? IR_OP_IDENTITY : IR_OP_FLATTEN, name,
                                    ir_type_numel(&g->values[p].type), 1, &p);
        else
            vals[n_vals++] = pick % 2 ? relu(g, name, elems, p) : add2(g, name, elems, p, q);
    }
    ir_graph_add_output(g, vals[n_vals - 1]);
    for (uint32_t i = 2; i + 1 < n_vals; i++)
        if (rand_r(state) % 8 == 0) ir_graph_add_output(g, vals[i]);
    free(vals);
    return g;
}

Test(plan_memory, gives_a_view_its_inputs_block_and_keeps_it_while_either_is_read) {
    enum { ELEMS = 100 };
    IrGraph *g = ir_graph_new("views");
    uint32_t x = add_input(g, "x", ELEMS);
    uint32_t a = relu(g, "a", ELEMS, x);
    uint32_t v = add_op(g, IR_OP_FLATTEN, "v", ELEMS, 1, &a);   /* a view of a */
    uint32_t w = add_op(g, IR_OP_IDENTITY, "w", ELEMS, 1, &v);  /* a view of a view */
    uint32_t b = relu(g, "b", ELEMS, w);
    uint32_t c = relu(g, "c", ELEMS, b);
    uint32_t y = add2(g, "y", ELEMS, c, a);                     /* a read long after its views */
    uint32_t o = add_op(g, IR_OP_IDENTITY, "o", ELEMS, 1, &y);  /* y's reader is an output */
    ir_graph_add_output(g, o);
    plan(g);
    check_plan(g, "views");
    cr_assert_eq(g->values[v].mem_offset, g->values[a].mem_offset);
    cr_assert_eq(g->values[w].mem_offset, g->values[a].mem_offset);
    cr_assert(!share_bytes(g, b, a) && !share_bytes(g, c, a),
              "b and c were placed in the block of a, which is read again by y");
    cr_assert_eq(g->values[o].mem_offset, -1, "a graph output is not a view of the arena");
    ir_graph_free(g);
}

Test(plan_memory, never_overlaps_live_tensors_in_random_graphs) {
    unsigned seed = test_seed(), state = seed;
    int64_t total_naive = 0, total_arena = 0;
    char what[64];
    for (int i = 0; i < RANDOM_GRAPHS; i++) {
        IrGraph *g = random_graph(&state);
        plan(g);
        snprintf(what, sizeof what, "random graph %d (seed %u)", i, seed);
        PlanFacts f = check_plan(g, what);
        total_naive += f.naive;
        total_arena += g->arena_size_bytes;
        ir_graph_free(g);
    }
    cr_assert_lt(total_arena, total_naive, "seed %u: reuse saved nothing over %d graphs", seed,
                 RANDOM_GRAPHS);
}
