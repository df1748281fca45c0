/* GELU fusion: the decomposed forms exporters write become one Gelu node (opset 20; the
 * eltwise kernel, and an activation epilogue for the fuse pass that runs after this one).
 *   erf form:  x * 0.5 * (1 + Erf(x / sqrt 2))          (or Erf(x * 1/sqrt 2))
 *   tanh form: x * 0.5 * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))   -> approximate="tanh"
 *              with x^3 as Pow(x, 3), Mul(x, Mul(x, x)) or Mul(Mul(x, x), x)
 * The 0.5 may scale x first (Mul(Mul(x, 0.5), 1 + .)), the sum first, or the product last
 * (Mul or Div by 2), operands in either order. Constants match within a relative 1e-3
 * (pass_near); every intermediate is read by the pattern alone; float32 only.
 * requires: shapes; invalidates: uses, node ids; preserves: types, layouts, quant params. */
#include <string.h>

#include "passes/passes.h"

#define GELU_SQRT2 1.4142135623730951
#define GELU_INV_SQRT2 0.7071067811865476
#define GELU_SQRT_2_OVER_PI 0.7978845608028654
#define GELU_CUBIC 0.044715
#define GELU_MAX_NODES 12

typedef struct GeluMatch {
    uint32_t nodes[GELU_MAX_NODES];
    uint32_t n_nodes;
} GeluMatch;

static void add_node(GeluMatch *m, uint32_t id) {
    IR_ASSERT(m->n_nodes < GELU_MAX_NODES);
    m->nodes[m->n_nodes++] = id;
}

/* Whether node id halves value v: Mul(v, 0.5) or Div(v, 2). */
static bool halves(const IrGraph *g, uint32_t id, uint32_t v) {
    const IrNode *n = &g->nodes[id];
    if (n->op == IR_OP_MUL) return pass_const_near(g, pass_other_input(n, v), 0.5);
    return n->op == IR_OP_DIV && n->inputs[0] == v && pass_const_near(g, n->inputs[1], 2.0);
}

/* Whether v is x * 0.5 (a Mul read by node `reader` alone). */
static uint32_t half_of_x(const IrGraph *g, const PassUses *u, uint32_t v, uint32_t x,
                          uint32_t reader) {
    uint32_t id = pass_producer(g, v, IR_OP_MUL);
    if (id == IR_NONE || pass_sole_reader(g, u, v) != reader) return IR_NONE;
    return pass_other_input(&g->nodes[id], x) != IR_NONE && halves(g, id, x) ? id : IR_NONE;
}

/* From a = 1 + f(x) to the GELU's output: x * a * 0.5 in the orders listed on top. */
static uint32_t match_tail(const IrGraph *g, const PassUses *u, uint32_t x, uint32_t a,
                           GeluMatch *m) {
    uint32_t id = pass_sole_reader(g, u, a);
    if (id == IR_NONE) return IR_NONE;
    const IrNode *n = &g->nodes[id];
    uint32_t out = n->outputs[0];
    if (n->op == IR_OP_MUL && pass_other_input(n, a) == x) { /* (x * a) * 0.5 */
        add_node(m, id);
        uint32_t h = pass_sole_reader(g, u, out);
        if (h == IR_NONE || !halves(g, h, out)) return IR_NONE;
        add_node(m, h);
        return g->nodes[h].outputs[0];
    }
    if (n->op == IR_OP_MUL && pass_other_input(n, a) != IR_NONE) {
        uint32_t o = pass_other_input(n, a), h = half_of_x(g, u, o, x, id);
        if (h != IR_NONE) { /* (x * 0.5) * a */
            add_node(m, h);
            add_node(m, id);
            return out;
        }
    }
    if (halves(g, id, a)) { /* x * (a * 0.5) */
        add_node(m, id);
        uint32_t mul = pass_sole_reader(g, u, out);
        if (mul == IR_NONE || g->nodes[mul].op != IR_OP_MUL ||
            pass_other_input(&g->nodes[mul], out) != x)
            return IR_NONE;
        add_node(m, mul);
        return g->nodes[mul].outputs[0];
    }
    return IR_NONE;
}

/* f(x) -> Add(f(x), 1) -> tail: the output, after checking f's output is read once. */
static uint32_t match_one_plus(const IrGraph *g, const PassUses *u, uint32_t x, uint32_t f_out,
                               GeluMatch *m) {
    uint32_t id = pass_sole_reader(g, u, f_out);
    if (id == IR_NONE || g->nodes[id].op != IR_OP_ADD ||
        !pass_const_near(g, pass_other_input(&g->nodes[id], f_out), 1.0))
        return IR_NONE;
    add_node(m, id);
    return match_tail(g, u, x, g->nodes[id].outputs[0], m);
}

/* Erf(x / sqrt 2) or Erf(x * 1/sqrt 2): x. */
static uint32_t erf_operand(const IrGraph *g, const PassUses *u, uint32_t erf, GeluMatch *m) {
    uint32_t v = g->nodes[erf].inputs[0];
    if (pass_sole_reader(g, u, v) != erf) return IR_NONE;
    uint32_t id = pass_producer(g, v, IR_OP_DIV);
    if (id != IR_NONE && pass_const_near(g, g->nodes[id].inputs[1], GELU_SQRT2)) {
        add_node(m, id);
        return g->nodes[id].inputs[0];
    }
    id = pass_producer(g, v, IR_OP_MUL);
    if (id == IR_NONE) return IR_NONE;
    const IrNode *n = &g->nodes[id];
    for (int k = 0; k < 2; k++)
        if (pass_const_near(g, n->inputs[k], GELU_INV_SQRT2)) {
            add_node(m, id);
            return n->inputs[1 - k];
        }
    return IR_NONE;
}

/* Whether v = x^3 (read by `reader` alone): Pow(x, 3), Mul(x, Mul(x, x)), Mul(Mul(x, x), x). */
static bool is_cube(const IrGraph *g, const PassUses *u, uint32_t v, uint32_t x,
                    uint32_t reader, GeluMatch *m) {
    if (pass_sole_reader(g, u, v) != reader) return false;
    uint32_t id = pass_producer(g, v, IR_OP_POW);
    if (id != IR_NONE) {
        if (g->nodes[id].inputs[0] != x || !pass_const_near(g, g->nodes[id].inputs[1], 3.0))
            return false;
        add_node(m, id);
        return true;
    }
    id = pass_producer(g, v, IR_OP_MUL);
    if (id == IR_NONE) return false;
    uint32_t sq = pass_other_input(&g->nodes[id], x);
    uint32_t sq_id = pass_producer(g, sq, IR_OP_MUL);
    if (sq_id == IR_NONE || pass_sole_reader(g, u, sq) != id ||
        g->nodes[sq_id].inputs[0] != x || g->nodes[sq_id].inputs[1] != x)
        return false;
    add_node(m, sq_id);
    add_node(m, id);
    return true;
}

/* Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)): x. */
static uint32_t tanh_operand(const IrGraph *g, const PassUses *u, uint32_t th, GeluMatch *m) {
    uint32_t t = g->nodes[th].inputs[0];
    uint32_t scale = pass_producer(g, t, IR_OP_MUL);
    if (scale == IR_NONE || pass_sole_reader(g, u, t) != th) return IR_NONE;
    const IrNode *sn = &g->nodes[scale];
    uint32_t s = IR_NONE;
    for (int k = 0; k < 2; k++)
        if (pass_const_near(g, sn->inputs[k], GELU_SQRT_2_OVER_PI)) s = sn->inputs[1 - k];
    uint32_t add = pass_producer(g, s, IR_OP_ADD);
    if (add == IR_NONE || pass_sole_reader(g, u, s) != scale) return IR_NONE;
    const IrNode *an = &g->nodes[add];
    for (int k = 0; k < 2; k++) {
        uint32_t x = an->inputs[k], c = an->inputs[1 - k];
        uint32_t cm = pass_producer(g, c, IR_OP_MUL);
        if (cm == IR_NONE || pass_sole_reader(g, u, c) != add) continue;
        const IrNode *cn = &g->nodes[cm];
        for (int j = 0; j < 2; j++) {
            if (!pass_const_near(g, cn->inputs[j], GELU_CUBIC)) continue;
            uint32_t saved = m->n_nodes;
            if (is_cube(g, u, cn->inputs[1 - j], x, cm, m)) {
                add_node(m, cm);
                add_node(m, add);
                add_node(m, scale);
                return x;
            }
            m->n_nodes = saved;
        }
    }
    return IR_NONE;
}

static bool fuse_at(IrGraph *g, const PassUses *u, uint32_t id) {
    bool tanh_form = g->nodes[id].op == IR_OP_TANH;
    GeluMatch m = {{0}, 0};
    uint32_t x = tanh_form ? tanh_operand(g, u, id, &m) : erf_operand(g, u, id, &m);
    if (x == IR_NONE) return false;
    add_node(&m, id);
    uint32_t out = match_one_plus(g, u, x, g->nodes[id].outputs[0], &m);
    if (out == IR_NONE || !ir_type_equal(&g->values[out].type, &g->values[x].type) ||
        g->values[x].type.dtype != IR_DTYPE_F32)
        return false;
    uint32_t last = g->values[out].producer;
    IrNode *f = pass_replace_node(g, last, IR_OP_GELU, g->nodes[last].name, 1, 1);
    int32_t since = ir_op_info(IR_OP_GELU)->since_version;
    if (f->opset < since) f->opset = since;
    f->inputs[0] = x;
    if (tanh_form) {
        IrAttr *a = ir_node_attr(f, IR_ATTR_GELU_APPROXIMATE);
        a->present = true;
        a->s.data = "tanh";
        a->s.len = strlen("tanh");
    }
    pass_retire_match(g, m.nodes, m.n_nodes, last, out);
    return true;
}

static bool is_erf_or_tanh(const IrNode *n) { return n->op == IR_OP_ERF || n->op == IR_OP_TANH; }

bool pass_fuse_gelu(IrGraph *g, Diag *d) {
    (void)d;
    return pass_fuse_anchored(g, is_erf_or_tanh, fuse_at);
}
