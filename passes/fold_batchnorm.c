/* Folds an inference BatchNormalization into the Conv, ConvTranspose or Gemm that feeds it:
 * with s = scale / sqrt(var + eps), the producer's weights are scaled per output channel by
 * s and its bias becomes (b - mean) * s + beta. A Mul by a constant per output channel after
 * a Conv or ConvTranspose (a batch norm tf2onnx wrote as Mul and Add) folds the same way,
 * with s its factors and no shift. Only when the producer's output has no other
 * reader and is no graph output, and weights, bias and the four BN parameters are f32
 * constants of the right sizes. New weights are new constants in the graph arena (the old
 * ones may be shared); arithmetic in double, rounded once to float.
 * requires: shapes; invalidates: uses, node ids; preserves: types, layouts, quant params. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"

/* The per-channel factors s and shifts t (y = x * s + t) of BN node n over m channels;
 * false when its parameters are not f32 constants of m elements or it is not inference. */
static bool bn_factors(const IrGraph *g, const IrNode *n, int64_t m, double *s, double *t) {
    if (n->n_inputs < 5 || ir_attr_i(n, IR_ATTR_BATCH_NORMALIZATION_TRAINING_MODE) != 0 ||
        ir_attr_i(n, IR_ATTR_BATCH_NORMALIZATION_SPATIAL) != 1)
        return false;
    const IrTensor *p[4];
    for (int i = 0; i < 4; i++) {
        p[i] = pass_const_f32(g, n->inputs[i + 1]);
        if (!p[i] || p[i]->n_elems != m) return false;
    }
    double eps = ir_attr_f(n, IR_ATTR_BATCH_NORMALIZATION_EPSILON);
    const float *scale = p[0]->data, *bias = p[1]->data, *mean = p[2]->data, *var = p[3]->data;
    for (int64_t c = 0; c < m; c++) {
        s[c] = scale[c] / sqrt((double)var[c] + eps);
        t[c] = bias[c] - mean[c] * s[c];
    }
    return true;
}

/* Whether the BN's extra outputs (training statistics) are read. */
static bool bn_extra_outputs_used(const IrNode *n, const uint32_t *uses) {
    for (uint32_t k = 1; k < n->n_outputs; k++)
        if (n->outputs[k] != IR_NONE && uses[n->outputs[k]] > 0) return true;
    return false;
}

static const char *value_name(const IrGraph *g, uint32_t v, const char *fallback) {
    return g->values[v].name && g->values[v].name[0] ? g->values[v].name : fallback;
}

/* Conv: w (M, C/group, k...) scaled per row m; ConvTranspose: w (C, M/group, k...) scaled
 * per (c, mo) by s[group(c) * M/group + mo]. Returns false when shapes do not fit. */
static bool fold_conv(IrGraph *g, const uint32_t *uses, uint32_t pid, const double *s,
                      const double *t, int64_t m) {
    IrNode *p = &g->nodes[pid];
    bool tr = p->op == IR_OP_CONV_TRANSPOSE;
    const IrTensor *w = pass_const_f32(g, p->inputs[1]);
    uint32_t bv = p->n_inputs > 2 ? p->inputs[2] : IR_NONE;
    const IrTensor *b = bv != IR_NONE ? pass_const_f32(g, bv) : NULL;
    if (!w || w->rank < 3 || (bv != IR_NONE && (!b || b->n_elems != m))) return false;
    int64_t group = ir_attr_i(p, tr ? IR_ATTR_CONV_TRANSPOSE_GROUP : IR_ATTR_CONV_GROUP);
    int64_t ksz = 1;
    for (int i = 2; i < w->rank; i++) ksz *= w->dims[i];
    if (group < 1 || m % group != 0) return false;
    if (!tr && w->dims[0] != m) return false;
    if (tr && (w->dims[1] * group != m || w->dims[0] % group != 0)) return false;
    float *nw, *nb;
    const float *ow = w->data, *ob = b ? b->data : NULL;
    uint32_t wv = pass_rewrite_const_f32(g, p->inputs[1], uses[p->inputs[1]] == 1, ".bn", w->rank,
                                         w->dims, &nw);
    uint32_t nbv;
    if (b) {
        nbv = pass_rewrite_const_f32(g, bv, uses[bv] == 1, ".bn", 1, &m, &nb);
    } else {
        char name[256];
        snprintf(name, sizeof name, "%s.bn_bias", value_name(g, g->nodes[pid].inputs[1], "w"));
        nbv = pass_add_const_f32(g, name, 1, &m, &nb);
    }
    int64_t rows = w->dims[0], per_row = w->dims[1] * ksz;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t e = 0; e < per_row; e++) {
            int64_t ch = tr ? (r / (rows / group)) * (m / group) + e / ksz : r;
            nw[r * per_row + e] = (float)(ow[r * per_row + e] * s[ch]);
        }
    for (int64_t c = 0; c < m; c++) nb[c] = (float)((ob ? ob[c] : 0.0) * s[c] + t[c]);
    p = &g->nodes[pid]; /* values grew; nodes did not, but keep the habit */
    if (p->n_inputs < 3) {
        uint32_t *in = ir_arena_alloc(g->arena, 3 * sizeof *in);
        memcpy(in, p->inputs, p->n_inputs * sizeof *in);
        in[2] = IR_NONE;
        p->inputs = in;
        p->n_inputs = 3;
    }
    p->inputs[1] = wv;
    p->inputs[2] = nbv;
    return true;
}

/* Gemm y = alpha * A' @ B' + beta * C with y (M,N): B' columns scaled by alpha * s, C
 * becomes (N) = (beta * C - mean) * s + bias; alpha = beta = 1. C must be absent, a scalar,
 * (N) or (1,N). */
static bool fold_gemm(IrGraph *g, const uint32_t *uses, uint32_t pid, const double *s,
                      const double *t, int64_t n) {
    IrNode *p = &g->nodes[pid];
    const IrTensor *b = pass_const_f32(g, p->inputs[1]);
    uint32_t cv = p->n_inputs > 2 ? p->inputs[2] : IR_NONE;
    const IrTensor *c = cv != IR_NONE ? pass_const_f32(g, cv) : NULL;
    if (!b || b->rank != 2 || (cv != IR_NONE && !c)) return false;
    if (c && !(c->n_elems == 1 || (c->n_elems == n && (c->rank == 1 ||
                                                       (c->rank == 2 && c->dims[0] == 1)))))
        return false;
    bool trans_b = ir_attr_i(p, IR_ATTR_GEMM_TRANS_B) != 0;
    if ((trans_b ? b->dims[0] : b->dims[1]) != n) return false;
    double alpha = ir_attr_f(p, IR_ATTR_GEMM_ALPHA), beta = ir_attr_f(p, IR_ATTR_GEMM_BETA);
    float *nw, *nc;
    const float *ob = b->data, *oc = c ? c->data : NULL;
    int64_t c_elems = c ? c->n_elems : 0;
    uint32_t wv = pass_rewrite_const_f32(g, p->inputs[1], uses[p->inputs[1]] == 1, ".bn", 2,
                                         b->dims, &nw);
    uint32_t ncv;
    if (c) {
        ncv = pass_rewrite_const_f32(g, cv, uses[cv] == 1, ".bn", 1, &n, &nc);
    } else {
        char name[256];
        snprintf(name, sizeof name, "%s.bn_bias", value_name(g, g->nodes[pid].inputs[1], "b"));
        ncv = pass_add_const_f32(g, name, 1, &n, &nc);
    }
    for (int64_t i = 0; i < b->dims[0]; i++)
        for (int64_t j = 0; j < b->dims[1]; j++) {
            int64_t col = trans_b ? i : j;
            nw[i * b->dims[1] + j] = (float)(ob[i * b->dims[1] + j] * alpha * s[col]);
        }
    for (int64_t j = 0; j < n; j++) {
        double cj = oc ? oc[c_elems == 1 ? 0 : j] * beta : 0.0;
        nc[j] = (float)(cj * s[j] + t[j]);
    }
    p = &g->nodes[pid];
    if (p->n_inputs < 3) {
        uint32_t *in = ir_arena_alloc(g->arena, 3 * sizeof *in);
        memcpy(in, p->inputs, p->n_inputs * sizeof *in);
        p->inputs = in;
        p->n_inputs = 3;
    }
    p->inputs[1] = wv;
    p->inputs[2] = ncv;
    IrAttr *a = ir_node_attr(p, IR_ATTR_GEMM_ALPHA), *be = ir_node_attr(p, IR_ATTR_GEMM_BETA);
    a->present = be->present = true;
    a->f = be->f = 1.0f;
    return true;
}

/* A Mul of the producer's output x by a constant that is one factor per output channel
 * (a scalar, or of shape (M,1,..), (1,M,1,..) right-aligned against x): the factors in s,
 * shifts 0, and the constant's input slot in *k; false otherwise. tf2onnx writes a batch
 * norm it did not fold as Mul then Add (the Add is a bias for `fuse`). */
static bool mul_factors(const IrGraph *g, const IrNode *n, uint32_t x, int64_t m, double *s,
                        double *t) {
    uint32_t c = pass_other_input(n, x);
    const IrTensor *ct = pass_const_f32(g, c);
    const IrType *tx = &g->values[x].type;
    if (!ct || ct->rank > tx->rank || !ir_type_equal(&g->values[n->outputs[0]].type, tx))
        return false;
    for (int i = 0; i < ct->rank; i++) {
        int axis = tx->rank - ct->rank + i;
        if (ct->dims[i] != 1 && !(axis == 1 && ct->dims[i] == m)) return false;
    }
    const float *f = ct->data;
    for (int64_t ch = 0; ch < m; ch++) {
        s[ch] = f[ct->n_elems == 1 ? 0 : ch];
        t[ch] = 0.0;
    }
    return true;
}

bool pass_fold_batchnorm(IrGraph *g, Diag *d) {
    (void)d;
    bool changed = false;
    uint32_t *uses = ir_use_counts(g);
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        IrNode *n = &g->nodes[i];
        bool mul = n->op == IR_OP_MUL;
        if (n->dead || (n->op != IR_OP_BATCH_NORMALIZATION && !mul) || n->n_outputs < 1)
            continue;
        uint32_t x = n->inputs[0], y = n->outputs[0];
        if (mul && pass_const_f32(g, x)) x = n->inputs[1]; /* the constant may come first */
        if (x == IR_NONE || y == IR_NONE || bn_extra_outputs_used(n, uses)) continue;
        const IrValue *xv = &g->values[x];
        if (xv->kind != IR_VALUE_NODE || xv->producer == IR_NONE || uses[x] != 1 ||
            pass_is_graph_output(g, x) || xv->result_index != 0)
            continue;
        uint32_t pid = xv->producer;
        const IrNode *p = &g->nodes[pid];
        bool gemm = p->op == IR_OP_GEMM;
        if (p->op != IR_OP_CONV && p->op != IR_OP_CONV_TRANSPOSE && !gemm) continue;
        if (mul && (gemm || g->values[x].type.rank < 3)) continue; /* convolutions only */
        const IrType *ty = &xv->type;
        if (ty->dtype != IR_DTYPE_F32 || ty->rank < 2 || ty->dims[1] < 1) continue;
        if (gemm && ty->rank != 2) continue;
        int64_t m = ty->dims[1];
        double *s = malloc((size_t)m * sizeof *s), *t = malloc((size_t)m * sizeof *t);
        IR_ASSERT(s && t);
        bool ok = (mul ? mul_factors(g, n, x, m, s, t) : bn_factors(g, n, m, s, t)) &&
                  (gemm ? fold_gemm(g, uses, pid, s, t, m) : fold_conv(g, uses, pid, s, t, m));
        free(s);
        free(t);
        if (!ok) continue;
        /* the producer now writes the BN's output */
        n = &g->nodes[i];
        n->dead = true;
        g->values[x].producer = IR_NONE;
        pass_set_output(g, pid, 0, y);
        changed = true;
    }
    free(uses);
    if (changed) ir_graph_compact(g);
    return changed;
}
