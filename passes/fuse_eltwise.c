/* Elementwise fusion: a tree of float elementwise nodes (arithmetic, unary math and the
 * activations of the table below), each read by the next alone and all of the output's
 * exact type (so intermediates never broadcast), becomes one FusedEltwise (domain "kiln")
 * that the C backend writes as one loop, with no intermediate tensors. Leaves (graph
 * inputs, constants, other nodes' results) become its inputs, read with broadcasting.
 * Runs after fuse, so that activations go into their producers' epilogues first. The fused
 * node takes the place of the tree's root (its last node). float32 and float64; opset 7 and
 * later (older binary ops broadcast differently).
 * requires: shapes; invalidates: uses, node ids; preserves: types, layouts, quant params. */
#include <math.h>
#include <string.h>

#include "passes/passes.h"

#define FE_MAX_INPUTS 16  /* = FusedEltwise's in_max in ops.def */
#define FE_MAX_STEPS 32   /* steps of one loop body; longer trees split */
#define FE_FIRST_OPSET 7  /* binary ops broadcast numpy-style from opset 7 on */
#define FE_NO_ATTR IR_ATTR_COUNT

/* The ops a FusedEltwise step can be, with the float attributes carried as parameters
 * (Gelu: parameter 0 is 1 for approximate="tanh"). */
static const struct {
    IrOp op;
    uint8_t arity;
    IrAttrId p0, p1;
} fe_ops[] = {
    {IR_OP_ADD, 2, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_SUB, 2, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_MUL, 2, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_DIV, 2, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_POW, 2, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_NEG, 1, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_ABS, 1, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_RELU, 1, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_EXP, 1, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_LOG, 1, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_SQRT, 1, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_RECIPROCAL, 1, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_FLOOR, 1, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_CEIL, 1, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_SIN, 1, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_COS, 1, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_TANH, 1, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_ERF, 1, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_SIGMOID, 1, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_SOFTPLUS, 1, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_SOFTSIGN, 1, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_HARD_SWISH, 1, FE_NO_ATTR, FE_NO_ATTR},
    {IR_OP_LEAKY_RELU, 1, IR_ATTR_LEAKY_RELU_ALPHA, FE_NO_ATTR},
    {IR_OP_HARD_SIGMOID, 1, IR_ATTR_HARD_SIGMOID_ALPHA, IR_ATTR_HARD_SIGMOID_BETA},
    {IR_OP_ELU, 1, IR_ATTR_ELU_ALPHA, FE_NO_ATTR},
    {IR_OP_CELU, 1, IR_ATTR_CELU_ALPHA, FE_NO_ATTR},
    {IR_OP_SELU, 1, IR_ATTR_SELU_ALPHA, IR_ATTR_SELU_GAMMA},
    {IR_OP_THRESHOLDED_RELU, 1, IR_ATTR_THRESHOLDED_RELU_ALPHA, FE_NO_ATTR},
    {IR_OP_GELU, 1, FE_NO_ATTR, FE_NO_ATTR},
};
#define FE_N_OPS (sizeof fe_ops / sizeof fe_ops[0])

static int fe_index(IrOp op) {
    for (size_t i = 0; i < FE_N_OPS; i++)
        if (fe_ops[i].op == op) return (int)i;
    return -1;
}

/* Whether node id can be a step: a listed op on float operands of its output's dtype. */
static bool fusable(const IrGraph *g, uint32_t id) {
    const IrNode *n = &g->nodes[id];
    int k = fe_index((IrOp)n->op);
    if (n->dead || k < 0 || n->opset < FE_FIRST_OPSET || n->n_outputs != 1 ||
        n->n_inputs != fe_ops[k].arity || n->outputs[0] == IR_NONE)
        return false;
    const IrType *to = &g->values[n->outputs[0]].type;
    if ((to->dtype != IR_DTYPE_F32 && to->dtype != IR_DTYPE_F64) || !ir_type_is_static(to))
        return false;
    for (uint32_t i = 0; i < n->n_inputs; i++) {
        if (n->inputs[i] == IR_NONE) return false;
        const IrType *ti = &g->values[n->inputs[i]].type;
        if (ti->dtype != to->dtype || !ir_type_is_static(ti) || ti->rank > to->rank) return false;
    }
    if (n->op == IR_OP_GELU) {
        const char *ap = ir_attr_s(n, IR_ATTR_GELU_APPROXIMATE);
        if (strcmp(ap, "none") != 0 && strcmp(ap, "tanh") != 0) return false;
    }
    return true;
}

/* Whether the node producing v joins a tree whose nodes all have type ty: fusable, of type
 * ty, read by the tree alone. */
static uint32_t member(const IrGraph *g, const PassUses *u, uint32_t v, const IrType *ty) {
    if (g->values[v].kind != IR_VALUE_NODE) return IR_NONE;
    uint32_t id = g->values[v].producer;
    if (id == IR_NONE || !fusable(g, id) || pass_sole_reader(g, u, v) == IR_NONE) return IR_NONE;
    return ir_type_equal(&g->values[v].type, ty) ? id : IR_NONE;
}

typedef struct FeTree {
    uint32_t inputs[FE_MAX_INPUTS];
    uint32_t n_inputs;
    uint32_t steps[FE_MAX_STEPS]; /* node ids, operands before their readers */
    int64_t args[2 * FE_MAX_STEPS];
    uint32_t n_steps;
    uint32_t open; /* nodes being walked whose steps come when their operands are done */
} FeTree;

/* The operand index of value v in the tree: an input (added if new), or -1 when full. */
static int64_t leaf(FeTree *t, uint32_t v) {
    for (uint32_t i = 0; i < t->n_inputs; i++)
        if (t->inputs[i] == v) return i;
    if (t->n_inputs == FE_MAX_INPUTS) return -1;
    t->inputs[t->n_inputs] = v;
    return t->n_inputs++;
}

/* Adds node id (and the members under it) as steps; returns the operand encoding of its
 * result (FE_MAX_INPUTS + step), or -1 when the inputs are full. A member joins only while
 * the steps taken and the nodes still open fit FE_MAX_STEPS, so a longer chain is cut
 * (the rest is read as an input) and the walk never goes deeper than FE_MAX_STEPS. Inputs
 * are numbered after the walk, so step results are encoded with an offset of
 * FE_MAX_INPUTS until then. */
static int64_t walk(const IrGraph *g, const PassUses *u, const IrType *ty, uint32_t id,
                    FeTree *t) {
    const IrNode *n = &g->nodes[id];
    int64_t a[2] = {-1, -1};
    t->open++;
    for (uint32_t i = 0; i < n->n_inputs; i++) {
        uint32_t v = n->inputs[i], m = member(g, u, v, ty);
        /* a member needs room for itself and every open node */
        if (m != IR_NONE && t->n_steps + t->open + 1 <= FE_MAX_STEPS) a[i] = walk(g, u, ty, m, t);
        else a[i] = leaf(t, v);
        if (a[i] < 0) return -1;
    }
    t->open--;
    IR_ASSERT(t->n_steps < FE_MAX_STEPS);
    t->steps[t->n_steps] = id;
    t->args[2 * t->n_steps] = a[0];
    t->args[2 * t->n_steps + 1] = a[1];
    return FE_MAX_INPUTS + t->n_steps++;
}

static bool fuse_root(IrGraph *g, const PassUses *u, uint32_t root) {
    FeTree t;
    memset(&t, 0, sizeof t);
    uint32_t out = g->nodes[root].outputs[0];
    const IrType *ty = &g->values[out].type;
    if (walk(g, u, ty, root, &t) < 0 || t.n_steps < 2) return false;
    IrNode *f = pass_replace_node(g, root, IR_OP_FUSED_ELTWISE, g->nodes[root].name, t.n_inputs,
                                  1);
    memcpy(f->inputs, t.inputs, t.n_inputs * sizeof *t.inputs);
    IrAttr *ops = ir_node_attr(f, IR_ATTR_FUSED_ELTWISE_OPS);
    IrAttr *args = ir_node_attr(f, IR_ATTR_FUSED_ELTWISE_ARGS);
    IrAttr *params = ir_node_attr(f, IR_ATTR_FUSED_ELTWISE_PARAMS);
    ops->present = args->present = params->present = true;
    ops->n = t.n_steps;
    args->n = params->n = 2 * t.n_steps;
    ops->strings = ir_arena_alloc(g->arena, t.n_steps * sizeof *ops->strings);
    args->ints = ir_arena_alloc(g->arena, 2 * t.n_steps * sizeof *args->ints);
    params->floats = ir_arena_alloc(g->arena, 2 * t.n_steps * sizeof *params->floats);
    for (uint32_t s = 0; s < t.n_steps; s++) {
        /* the old root sits in a new slot now; its attributes are unchanged */
        uint32_t id = t.steps[s] == root ? g->values[out].producer : t.steps[s];
        const IrNode *n = &g->nodes[id];
        int k = fe_index((IrOp)n->op);
        const char *name = ir_op_name((IrOp)n->op);
        ops->strings[s].data = name;
        ops->strings[s].len = strlen(name);
        for (int j = 0; j < 2; j++) {
            int64_t a = t.args[2 * s + j];
            args->ints[2 * s + j] = a >= FE_MAX_INPUTS ? a - FE_MAX_INPUTS + t.n_inputs : a;
        }
        if (n->op == IR_OP_GELU)
            params->floats[2 * s] =
                strcmp(ir_attr_s(n, IR_ATTR_GELU_APPROXIMATE), "tanh") == 0 ? 1.0f : 0.0f;
        if (fe_ops[k].p0 != FE_NO_ATTR) params->floats[2 * s] = ir_attr_f(n, fe_ops[k].p0);
        if (fe_ops[k].p1 != FE_NO_ATTR) params->floats[2 * s + 1] = ir_attr_f(n, fe_ops[k].p1);
        if (t.steps[s] != root) g->nodes[id].dead = true;
    }
    pass_set_output(g, root, 0, out);
    return true;
}

bool pass_fuse_eltwise(IrGraph *g, Diag *d) {
    (void)d;
    PassUses u;
    pass_uses_build(g, &u);
    bool changed = false;
    uint32_t n_nodes = g->n_nodes; /* nodes added by rewriting are dead shells */
    /* a root: fusable, and not itself a member of its reader's tree */
    for (uint32_t i = 0; i < n_nodes; i++) {
        if (!fusable(g, i)) continue;
        uint32_t v = g->nodes[i].outputs[0];
        uint32_t r = pass_sole_reader(g, &u, v);
        if (r != IR_NONE && fusable(g, r) &&
            ir_type_equal(&g->values[v].type, &g->values[g->nodes[r].outputs[0]].type))
            continue;
        changed |= fuse_root(g, &u, i);
    }
    pass_uses_free(&u);
    if (changed) ir_graph_compact(g);
    return changed;
}

bool pass_fused_eltwise_step(const IrNode *f, uint32_t k, IrNode *step, IrAttr *slots,
                             uint32_t n_slots) {
    uint32_t n_ops, n_params;
    const IrAttr *ops = ir_node_attr(f, IR_ATTR_FUSED_ELTWISE_OPS);
    const float *params = NULL;
    n_ops = ops->present && ops->kind == IR_ATTR_KIND_STRINGS ? ops->n : 0;
    const IrAttr *pa = ir_node_attr(f, IR_ATTR_FUSED_ELTWISE_PARAMS);
    n_params = pa->present && pa->kind == IR_ATTR_KIND_FLOATS ? pa->n : 0;
    params = pa->floats;
    if (k >= n_ops || !ops->strings[k].data) return false;
    IrOp op = ir_op_lookup("", ops->strings[k].data);
    int i = fe_index(op);
    if (i < 0) return false;
    const IrOpInfo *info = ir_op_info(op);
    if (info->n_attrs > n_slots) return false;
    memset(step, 0, sizeof *step);
    memset(slots, 0, n_slots * sizeof *slots);
    step->op = (uint16_t)op;
    step->name = f->name;
    step->op_type = info->name;
    step->domain = "";
    step->opset = info->since_version > FE_FIRST_OPSET ? info->since_version : FE_FIRST_OPSET;
    step->attrs = slots;
    step->n_attrs = info->n_attrs;
    for (uint32_t a = 0; a < info->n_attrs; a++) {
        const IrAttrInfo *ai = ir_attr_info((IrAttrId)(info->attr_base + a));
        slots[a].id = info->attr_base + a;
        slots[a].name = ai->name;
        slots[a].kind = ai->kind;
    }
    float p[2] = {2 * k < n_params ? params[2 * k] : 0.0f,
                  2 * k + 1 < n_params ? params[2 * k + 1] : 0.0f};
    if (op == IR_OP_GELU && p[0] != 0.0f) {
        IrAttr *a = ir_node_attr(step, IR_ATTR_GELU_APPROXIMATE);
        a->present = true;
        a->s.data = "tanh";
        a->s.len = strlen("tanh");
    }
    IrAttrId ids[2] = {fe_ops[i].p0, fe_ops[i].p1};
    for (int j = 0; j < 2; j++)
        if (ids[j] != FE_NO_ATTR) {
            IrAttr *a = ir_node_attr(step, ids[j]);
            a->present = true;
            a->f = p[j];
        }
    return true;
}
