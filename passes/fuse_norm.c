/* Normalization fusion: the decomposed forms exporters write for LayerNorm and RMSNorm
 * become one LayerNormalization or RMSNormalization node over the last axis (kernels in
 * runtime/rt_norm.h). Matched from each Sqrt:
 *   d = Sub(x, ReduceMean(x)); Div(d, Sqrt(Add(ReduceMean(Pow(d, 2)), eps)))  -> LayerNorm(x)
 *   Div(x, Sqrt(Add(ReduceMean(Pow(x, 2)), eps)))                            -> RMSNorm(x)
 * with Mul(d, d) for the square, Mul(., Reciprocal(Sqrt(.))) for the Div, then an optional
 * Mul by gamma and (LayerNorm) Add of beta, each of X[-1:] elements or one. Reductions must
 * be ReduceMean over the last axis alone with keepdims; every intermediate is read by the
 * pattern alone; eps is a scalar constant; float32 only. The fused node takes the place of
 * the pattern's last node; a missing gamma becomes a constant of ones. tf2onnx's form,
 * x * m + (Neg(mean) * m + beta) with m = Reciprocal(Sqrt(var + eps)) * gamma, is a
 * LayerNorm too (fuse_tf_layer_norm).
 * requires: shapes; invalidates: uses, node ids; preserves: types, layouts, quant params. */
#include <stdio.h>
#include <string.h>

#include "passes/passes.h"

/* ReduceMean(x) over the last axis alone, keepdims: its input, else IR_NONE. */
static uint32_t mean_last_axis(const IrGraph *g, uint32_t id) {
    if (id == IR_NONE) return IR_NONE;
    const IrNode *n = &g->nodes[id];
    uint32_t x = n->inputs[0];
    int rank = g->values[x].type.rank;
    if (rank < 1 || ir_attr_i(n, IR_ATTR_REDUCE_MEAN_KEEPDIMS) != 1) return IR_NONE;
    int64_t axis;
    if (n->opset < 18) {
        uint32_t na;
        const int64_t *ax = ir_attr_ints(n, IR_ATTR_REDUCE_MEAN_AXES, &na);
        if (na != 1) return IR_NONE;
        axis = ax[0];
    } else {
        if (n->n_inputs < 2 || n->inputs[1] == IR_NONE) return IR_NONE;
        const IrValue *a = &g->values[n->inputs[1]];
        if (a->kind != IR_VALUE_CONST || !a->tensor || !a->tensor->data ||
            a->tensor->dtype != IR_DTYPE_I64 || a->tensor->n_elems != 1)
            return IR_NONE;
        axis = ((const int64_t *)a->tensor->data)[0];
    }
    return axis == -1 || axis == rank - 1 ? x : IR_NONE;
}

/* The square node's operand: Pow(d, 2) or Mul(d, d); *reads: how often it reads d. */
static uint32_t square_of(const IrGraph *g, uint32_t v, uint32_t *reads) {
    uint32_t id = pass_producer(g, v, IR_OP_POW);
    if (id != IR_NONE && pass_const_near(g, g->nodes[id].inputs[1], 2.0)) {
        *reads = 1;
        return g->nodes[id].inputs[0];
    }
    id = pass_producer(g, v, IR_OP_MUL);
    if (id != IR_NONE && g->nodes[id].inputs[0] == g->nodes[id].inputs[1]) {
        *reads = 2;
        return g->nodes[id].inputs[0];
    }
    return IR_NONE;
}

/* Whether value p can be gamma or beta of a norm over the last axis (cols elements) of
 * type ty: one element, or X[-1:] right-aligned with every other dimension 1. */
static bool per_last_axis(const IrGraph *g, uint32_t p, const IrType *ty, int64_t cols) {
    const IrType *t = &g->values[p].type;
    if (t->dtype != ty->dtype || t->rank < 0 || t->rank > ty->rank || !ir_type_is_static(t))
        return false;
    int64_t n = ir_type_numel(t);
    if (n == 1) return true;
    if (n != cols || t->rank < 1) return false;
    for (int i = 0; i + 1 < t->rank; i++)
        if (t->dims[i] != 1) return false;
    return true;
}

/* Follows v into a sole-reader node of op (Mul or Add) whose other operand fits
 * per_last_axis and whose output keeps v's type; returns the node and the operand. */
static uint32_t take_affine(const IrGraph *g, const PassUses *u, uint32_t v, IrOp op,
                            int64_t cols, uint32_t *param) {
    uint32_t id = pass_sole_reader(g, u, v);
    if (id == IR_NONE || g->nodes[id].op != op) return IR_NONE;
    const IrNode *n = &g->nodes[id];
    uint32_t p = pass_other_input(n, v);
    if (p == IR_NONE || !per_last_axis(g, p, &g->values[v].type, cols) ||
        !ir_type_equal(&g->values[n->outputs[0]].type, &g->values[v].type))
        return IR_NONE;
    *param = p;
    return id;
}

#define NORM_MAX_NODES 11 /* ReduceMean Sub Pow ReduceMean Add Sqrt Reciprocal Mul Mul Add */
#define NORM_TF_NODES 13   /* the tf2onnx form: + Neg, and Mul Mul Add Add for the affine */

static void write_norm(IrGraph *g, uint32_t last, bool layer, uint32_t x, uint32_t gamma,
                       uint32_t beta, double eps);

/* The tf2onnx (TensorFlow/Keras) LayerNorm, after the Sqrt of fuse_at_sqrt's match:
 *   mean = ReduceMean(x); d = Sub(x, mean); var = ReduceMean(d * d)   (matched before)
 *   m = Reciprocal(Sqrt(var + eps)) * gamma
 *   y = x * m + (Neg(mean) * m + beta)
 * which is (x - mean) * m + beta. recip: the Reciprocal; d's Sub must be read by the square
 * alone. nodes holds the match so far. */
static bool fuse_tf_layer_norm(IrGraph *g, const PassUses *u, uint32_t *nodes,
                               uint32_t n_nodes, uint32_t d, uint32_t sq_reads,
                               uint32_t recip, double eps, int64_t cols) {
    const IrType *ty = &g->values[d].type;
    uint32_t sub = pass_producer(g, d, IR_OP_SUB);
    if (sub == IR_NONE || u->ext[d] || u->n_reads[d] != sq_reads) return false;
    uint32_t x = g->nodes[sub].inputs[0], mean = g->nodes[sub].inputs[1];
    uint32_t rm1 = pass_producer(g, mean, IR_OP_REDUCE_MEAN);
    if (rm1 == IR_NONE || mean_last_axis(g, rm1) != x || u->ext[mean] || u->n_reads[mean] != 2 ||
        !ir_type_equal(&g->values[x].type, ty))
        return false;
    uint32_t gamma = IR_NONE;
    uint32_t mg = take_affine(g, u, g->nodes[recip].outputs[0], IR_OP_MUL, cols, &gamma);
    if (mg == IR_NONE) {
        /* take_affine wants the product to keep the operand's (1-column) type: not here */
        mg = pass_sole_reader(g, u, g->nodes[recip].outputs[0]);
        if (mg == IR_NONE || g->nodes[mg].op != IR_OP_MUL) return false;
        gamma = pass_other_input(&g->nodes[mg], g->nodes[recip].outputs[0]);
        if (gamma == IR_NONE || !per_last_axis(g, gamma, ty, cols)) return false;
    }
    uint32_t m = g->nodes[mg].outputs[0];
    if (u->ext[m] || u->n_reads[m] != 2) return false;
    /* the two readers of m: Mul(x, m) and Mul(Neg(mean), m) */
    uint32_t mx = IR_NONE, mn = IR_NONE, neg = IR_NONE;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead || n->op != IR_OP_MUL) continue;
        uint32_t o = pass_other_input(n, m);
        if (o == IR_NONE) continue;
        uint32_t ng = pass_producer(g, o, IR_OP_NEG);
        if (o == x) mx = i;
        else if (ng != IR_NONE && g->nodes[ng].inputs[0] == mean &&
                 pass_sole_reader(g, u, o) == i)
            mn = i, neg = ng;
    }
    if (mx == IR_NONE || mn == IR_NONE) return false;
    uint32_t beta = IR_NONE;
    uint32_t ab = pass_sole_reader(g, u, g->nodes[mn].outputs[0]);
    if (ab == IR_NONE || g->nodes[ab].op != IR_OP_ADD) return false;
    beta = pass_other_input(&g->nodes[ab], g->nodes[mn].outputs[0]);
    if (beta == IR_NONE || !per_last_axis(g, beta, ty, cols)) return false;
    uint32_t fin = pass_sole_reader(g, u, g->nodes[mx].outputs[0]);
    if (fin == IR_NONE || fin != pass_sole_reader(g, u, g->nodes[ab].outputs[0]) ||
        g->nodes[fin].op != IR_OP_ADD)
        return false;
    uint32_t out = g->nodes[fin].outputs[0];
    if (!ir_type_equal(&g->values[out].type, ty)) return false;
    uint32_t all[NORM_TF_NODES + NORM_MAX_NODES], n_all = 0;
    for (uint32_t k = 0; k < n_nodes; k++) all[n_all++] = nodes[k];
    uint32_t more[] = {recip, rm1, sub, neg, mg, mx, mn, ab, fin};
    for (size_t k = 0; k < sizeof more / sizeof more[0]; k++) all[n_all++] = more[k];
    write_norm(g, fin, true, x, gamma, beta, eps);
    pass_retire_match(g, all, n_all, fin, out);
    return true;
}

static bool fuse_at_sqrt(IrGraph *g, const PassUses *u, uint32_t sq_id) {
    uint32_t nodes[NORM_MAX_NODES], n_nodes = 0;
    const IrNode *s = &g->nodes[sq_id];
    uint32_t add = pass_producer(g, s->inputs[0], IR_OP_ADD);
    if (add == IR_NONE || pass_sole_reader(g, u, s->inputs[0]) != sq_id) return false;
    const IrNode *an = &g->nodes[add];
    double eps;
    uint32_t var;
    if (pass_const_scalar(g, an->inputs[1], &eps)) var = an->inputs[0];
    else if (pass_const_scalar(g, an->inputs[0], &eps)) var = an->inputs[1];
    else return false;
    if (!(eps >= 0.0) || pass_sole_reader(g, u, var) != add) return false;
    uint32_t rm2 = pass_producer(g, var, IR_OP_REDUCE_MEAN);
    uint32_t sqv = mean_last_axis(g, rm2);
    if (sqv == IR_NONE || pass_sole_reader(g, u, sqv) != rm2) return false;
    uint32_t sq_reads = 0;
    uint32_t d = square_of(g, sqv, &sq_reads);
    if (d == IR_NONE) return false;
    nodes[n_nodes++] = g->values[sqv].producer;
    nodes[n_nodes++] = rm2;
    nodes[n_nodes++] = add;
    nodes[n_nodes++] = sq_id;
    const IrType *ty = &g->values[d].type;
    if (ty->dtype != IR_DTYPE_F32 || ty->rank < 1 || !ir_type_is_static(ty)) return false;
    int64_t cols = ty->dims[ty->rank - 1];
    /* d / sqrt(.), or d * Reciprocal(sqrt(.)) */
    uint32_t norm_id = pass_sole_reader(g, u, s->outputs[0]);
    if (norm_id == IR_NONE) return false;
    if (g->nodes[norm_id].op == IR_OP_RECIPROCAL) {
        nodes[n_nodes++] = norm_id;
        uint32_t mul = pass_sole_reader(g, u, g->nodes[norm_id].outputs[0]);
        if (mul == IR_NONE || g->nodes[mul].op != IR_OP_MUL) return false;
        if (pass_other_input(&g->nodes[mul], g->nodes[norm_id].outputs[0]) != d)
            return fuse_tf_layer_norm(g, u, nodes, n_nodes - 1, d, sq_reads, norm_id, eps,
                                      cols);
        norm_id = mul;
    } else if (g->nodes[norm_id].op != IR_OP_DIV || g->nodes[norm_id].inputs[0] != d ||
               g->nodes[norm_id].inputs[1] != s->outputs[0]) {
        return false;
    }
    nodes[n_nodes++] = norm_id;
    uint32_t out = g->nodes[norm_id].outputs[0];
    if (!ir_type_equal(&g->values[out].type, ty)) return false;
    /* LayerNorm when d = x - mean(x) is read by the square and the normalization alone */
    uint32_t x = d;
    bool layer = false;
    uint32_t sub = pass_producer(g, d, IR_OP_SUB);
    if (sub != IR_NONE && !u->ext[d] && u->n_reads[d] == sq_reads + 1) {
        const IrNode *sn = &g->nodes[sub];
        uint32_t rm1 = pass_producer(g, sn->inputs[1], IR_OP_REDUCE_MEAN);
        if (rm1 != IR_NONE && mean_last_axis(g, rm1) == sn->inputs[0] &&
            pass_sole_reader(g, u, sn->inputs[1]) == sub &&
            ir_type_equal(&g->values[sn->inputs[0]].type, ty)) {
            x = sn->inputs[0];
            layer = true;
            nodes[n_nodes++] = rm1;
            nodes[n_nodes++] = sub;
        }
    }
    uint32_t gamma = IR_NONE, beta = IR_NONE;
    uint32_t id = take_affine(g, u, out, IR_OP_MUL, cols, &gamma);
    if (id != IR_NONE) {
        nodes[n_nodes++] = id;
        out = g->nodes[id].outputs[0];
        if (layer && (id = take_affine(g, u, out, IR_OP_ADD, cols, &beta)) != IR_NONE) {
            nodes[n_nodes++] = id;
            out = g->nodes[id].outputs[0];
        }
    }
    uint32_t last = g->values[out].producer;
    if (gamma == IR_NONE) {
        float *ones;
        char name[256];
        snprintf(name, sizeof name, "%s.ones", g->nodes[last].name ? g->nodes[last].name : "norm");
        gamma = pass_add_const_f32(g, name, 1, &cols, &ones);
        for (int64_t c = 0; c < cols; c++) ones[c] = 1.0f;
    }
    write_norm(g, last, layer, x, gamma, beta, eps);
    pass_retire_match(g, nodes, n_nodes, last, out);
    return true;
}

/* Node last becomes LayerNormalization(x, gamma, beta?) or RMSNormalization(x, gamma) over
 * the last axis. */
static void write_norm(IrGraph *g, uint32_t last, bool layer, uint32_t x, uint32_t gamma,
                       uint32_t beta, double eps) {
    IrOp op = layer ? IR_OP_LAYER_NORMALIZATION : IR_OP_RMSNORMALIZATION;
    const char *name = g->nodes[last].name;
    IrNode *f = pass_replace_node(g, last, op, name, layer && beta != IR_NONE ? 3 : 2, 1);
    int32_t since = ir_op_info(op)->since_version;
    if (f->opset < since) f->opset = since; /* older models: the op of its first version */
    f->inputs[0] = x;
    f->inputs[1] = gamma;
    if (layer && beta != IR_NONE) f->inputs[2] = beta;
    IrAttr *e = ir_node_attr(f, layer ? IR_ATTR_LAYER_NORMALIZATION_EPSILON
                                      : IR_ATTR_RMSNORMALIZATION_EPSILON);
    e->present = true;
    e->f = (float)eps;
    IrAttr *ax = ir_node_attr(f, layer ? IR_ATTR_LAYER_NORMALIZATION_AXIS
                                       : IR_ATTR_RMSNORMALIZATION_AXIS);
    ax->present = true;
    ax->i = -1;
}

static bool is_sqrt(const IrNode *n) { return n->op == IR_OP_SQRT; }

bool pass_fuse_norm(IrGraph *g, Diag *d) {
    (void)d;
    return pass_fuse_anchored(g, is_sqrt, fuse_at_sqrt);
}
