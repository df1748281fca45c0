/* Epilogue fusion: a Conv, Gemm or MatMul followed by a bias Add (a constant per output
 * channel), for Conv a residual Add (a tensor of the output's exact type), and one
 * activation (Relu, Clip, LeakyRelu, Sigmoid, HardSigmoid, HardSwish, x * Sigmoid(x),
 * Gelu) becomes one FusedConv, FusedGemm or FusedMatMul (domain "kiln") whose kernel
 * applies them to each output tile as it is stored. Each intermediate must have the next
 * node of the chain as its only reader and be no graph output; the fused node takes the
 * place of the chain's last node, so every input is defined before it. float32 only.
 * A bias Add alone folds into a Conv's or Gemm's own bias without changing the op.
 * requires: shapes; invalidates: uses, node ids; preserves: types, layouts, quant params. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"

/* Activation attribute values and the runtime's RtActKind names, in RtActKind order. */
static const struct {
    const char *attr, *c_name;
} act_names[] = {
    {"", "RT_ACT_NONE"},
    {"Relu", "RT_ACT_RELU"},
    {"Clip", "RT_ACT_CLIP"},
    {"LeakyRelu", "RT_ACT_LEAKY_RELU"},
    {"Sigmoid", "RT_ACT_SIGMOID"},
    {"HardSigmoid", "RT_ACT_HARD_SIGMOID"},
    {"HardSwish", "RT_ACT_HARD_SWISH"},
    {"SiLU", "RT_ACT_SILU"},
    {"Gelu", "RT_ACT_GELU"},
    {"GeluTanh", "RT_ACT_GELU_TANH"},
};

const char *pass_act_c_name(const char *activation) {
    for (size_t i = 0; i < sizeof act_names / sizeof act_names[0]; i++)
        if (strcmp(act_names[i].attr, activation ? activation : "") == 0)
            return act_names[i].c_name;
    return NULL;
}

/* The node that alone reads v (pass_sole_reader), unless it is a fused node already: a
 * reader an earlier chain replaced takes no second epilogue. */
static uint32_t sole_reader(const IrGraph *g, const PassUses *u, uint32_t v) {
    uint32_t id = pass_sole_reader(g, u, v);
    return id != IR_NONE && ir_op_info((IrOp)g->nodes[id].op)->domain[0] ? IR_NONE : id;
}

/* The fused epilogue being collected. */
typedef struct Chain {
    uint32_t last;        /* node whose slot the fused node takes */
    uint32_t out;         /* value the chain produces so far */
    uint32_t bias;        /* constant bias value (per channel), or IR_NONE */
    uint32_t residual;    /* Conv only */
    const char *act;      /* activation attribute value, NULL: none */
    float alpha, beta;
    uint32_t nodes[5];    /* the chain in node order, the producer first */
    uint32_t n_nodes;
} Chain;

static void chain_add(Chain *ch, uint32_t id, uint32_t out) {
    IR_ASSERT(ch->n_nodes < sizeof ch->nodes / sizeof ch->nodes[0]);
    ch->nodes[ch->n_nodes++] = id;
    ch->last = id;
    ch->out = out;
}

/* Whether constant c is a bias along axis `axis` (m elements) of a rank-`rank` output:
 * right-aligned, every other dimension 1. */
static bool per_channel(const IrTensor *c, int rank, int axis, int64_t m) {
    if (c->n_elems != m || c->rank > rank) return false;
    for (int i = 0; i < c->rank; i++) {
        int a = rank - c->rank + i;
        if (a != axis && c->dims[i] != 1) return false;
        if (a == axis && c->dims[i] != m) return false;
    }
    return true;
}

/* Recognizes an activation node reading chain->out alone: Relu, Clip (constant bounds),
 * LeakyRelu, Sigmoid (or x * Sigmoid(x)), HardSigmoid, HardSwish, Gelu. When chain->out
 * carries quantization parameters (an int8 compile: kiln compile --int8, or a QDQ model),
 * only Relu and Clip fuse: an int8 kernel clamps in its requantization, and the other
 * activations run as int8 tables reading the value at its own parameters (passes/
 * quantize.c), which a fused node would hide. */
static bool take_activation(const IrGraph *g, const PassUses *r, Chain *ch) {
    uint32_t v = ch->out;
    if (r->ext[v]) return false;
    bool quantized = g->values[v].quant != NULL;
    uint32_t cnt = r->n_reads[v];
    if (cnt == 2 && !quantized) { /* SiLU: Sigmoid(v) and Mul(v, Sigmoid(v)) */
        uint32_t a = r->node[r->first[v]], b = r->node[r->first[v] + 1];
        if (g->nodes[a].op != IR_OP_SIGMOID) {
            uint32_t t = a;
            a = b;
            b = t;
        }
        const IrNode *sg = &g->nodes[a], *mul = &g->nodes[b];
        if (sg->op != IR_OP_SIGMOID || mul->op != IR_OP_MUL || sg->dead || mul->dead) return false;
        uint32_t s = sg->outputs[0];
        if (sole_reader(g, r, s) != b || pass_other_input(mul, v) != s) return false;
        chain_add(ch, a, s);
        chain_add(ch, b, mul->outputs[0]);
        ch->act = "SiLU";
        return true;
    }
    uint32_t id = sole_reader(g, r, v);
    if (id == IR_NONE) return false;
    const IrNode *n = &g->nodes[id];
    if (n->n_outputs < 1 || n->inputs[0] != v) return false;
    float alpha = 0.0f, beta = 0.0f;
    const char *act = NULL;
    if (!ir_op_has((IrOp)n->op, OPF_ACT)) return false; /* the ops below, per ops.def */
    switch (n->op) {
    case IR_OP_RELU:
        act = "Relu";
        break;
    case IR_OP_SIGMOID:
        act = "Sigmoid";
        break;
    case IR_OP_HARD_SWISH:
        act = "HardSwish";
        break;
    case IR_OP_LEAKY_RELU:
        act = "LeakyRelu";
        alpha = ir_attr_f(n, IR_ATTR_LEAKY_RELU_ALPHA);
        break;
    case IR_OP_HARD_SIGMOID:
        act = "HardSigmoid";
        alpha = ir_attr_f(n, IR_ATTR_HARD_SIGMOID_ALPHA);
        beta = ir_attr_f(n, IR_ATTR_HARD_SIGMOID_BETA);
        break;
    case IR_OP_GELU: {
        const char *ap = ir_attr_s(n, IR_ATTR_GELU_APPROXIMATE);
        act = strcmp(ap, "tanh") == 0 ? "GeluTanh" : strcmp(ap, "none") == 0 ? "Gelu" : NULL;
        break;
    }
    case IR_OP_CLIP:
        act = "Clip";
        if (n->opset < 11) {
            alpha = ir_attr_f(n, IR_ATTR_CLIP_MIN);
            beta = ir_attr_f(n, IR_ATTR_CLIP_MAX);
        } else {
            alpha = -INFINITY;
            beta = INFINITY;
            for (uint32_t k = 1; k < 3 && k < n->n_inputs; k++) {
                if (n->inputs[k] == IR_NONE) continue;
                const IrTensor *t = pass_const_f32(g, n->inputs[k]);
                if (!t || t->n_elems != 1) return false;
                float b = ((const float *)t->data)[0];
                if (k == 1) alpha = b;
                else beta = b;
            }
        }
        if (isnan(alpha) || isnan(beta)) return false;
        break;
    default:
        return false;
    }
    if (!act || (quantized && strcmp(act, "Relu") != 0 && strcmp(act, "Clip") != 0)) return false;
    chain_add(ch, id, n->outputs[0]);
    ch->act = act;
    ch->alpha = alpha;
    ch->beta = beta;
    return true;
}

/* Follows producer node pid through bias (when allowed), residual (when wanted) and
 * activation. */
static void collect(const IrGraph *g, const PassUses *r, uint32_t pid, int ch_axis, int64_t m,
                    bool allow_bias, bool want_residual, Chain *ch) {
    memset(ch, 0, sizeof *ch);
    ch->bias = ch->residual = IR_NONE;
    chain_add(ch, pid, g->nodes[pid].outputs[0]);
    const IrType *ty = &g->values[ch->out].type;
    uint32_t id = sole_reader(g, r, ch->out);
    if (allow_bias && id != IR_NONE && g->nodes[id].op == IR_OP_ADD) { /* bias */
        uint32_t c = pass_other_input(&g->nodes[id], ch->out);
        const IrTensor *t = c != IR_NONE ? pass_const_f32(g, c) : NULL;
        if (t && per_channel(t, ty->rank, ch_axis, m) &&
            ir_type_equal(&g->values[g->nodes[id].outputs[0]].type, ty)) {
            ch->bias = c;
            chain_add(ch, id, g->nodes[id].outputs[0]);
        }
    }
    id = sole_reader(g, r, ch->out);
    if (want_residual && id != IR_NONE && g->nodes[id].op == IR_OP_ADD) {
        uint32_t o = pass_other_input(&g->nodes[id], ch->out);
        if (o != IR_NONE && ir_type_equal(&g->values[o].type, ty) &&
            ir_type_equal(&g->values[g->nodes[id].outputs[0]].type, ty)) {
            ch->residual = o;
            chain_add(ch, id, g->nodes[id].outputs[0]);
        }
    }
    take_activation(g, r, ch);
}

/* The fused bias: the chain's constant `add`, plus the producer's own bias `own` (a
 * constant, or IR_NONE). own is rewritten in place when the producer is its only reader. */
static uint32_t merged_bias(IrGraph *g, const PassUses *r, uint32_t own, uint32_t add,
                            int64_t m, const char *base) {
    if (add == IR_NONE) return own;
    if (own == IR_NONE && g->values[add].tensor->rank == 1) return add;
    const float *a = pass_const_f32(g, add)->data;
    const float *o = own != IR_NONE ? pass_const_f32(g, own)->data : NULL;
    float *nb;
    uint32_t v;
    if (own != IR_NONE) {
        v = pass_rewrite_const_f32(g, own, !r->ext[own] && r->n_reads[own] == 1,
                                   ".fused", 1, &m, &nb);
    } else {
        char name[256];
        snprintf(name, sizeof name, "%s.bias", base);
        v = pass_add_const_f32(g, name, 1, &m, &nb);
    }
    for (int64_t c = 0; c < m; c++) nb[c] = (o ? o[c] : 0.0f) + a[c];
    return v;
}

/* Marks the chain's nodes but `slot` dead and makes node `slot` produce ch->out. */
static void finish(IrGraph *g, const Chain *ch, uint32_t slot) {
    for (uint32_t k = 0; k < ch->n_nodes; k++)
        if (ch->nodes[k] != slot) g->nodes[ch->nodes[k]].dead = true;
    pass_set_output(g, slot, 0, ch->out);
}

static void set_act(IrNode *n, const Chain *ch, IrAttrId kind, IrAttrId alpha, IrAttrId beta) {
    IrAttr *a = ir_node_attr(n, kind);
    a->present = true;
    a->s.data = ch->act;
    a->s.len = strlen(ch->act);
    if (ch->alpha != 0.0f) {
        IrAttr *x = ir_node_attr(n, alpha);
        x->present = true;
        x->f = ch->alpha;
    }
    if (ch->beta != 0.0f) {
        IrAttr *x = ir_node_attr(n, beta);
        x->present = true;
        x->f = ch->beta;
    }
}

/* Copies the attribute slot of `from` into slot `to` of n (same kind, value shared). */
static void copy_attr(IrNode *n, IrAttrId to, const IrNode *src, IrAttrId from) {
    IrAttr *a = ir_node_attr(n, to);
    uint32_t id = a->id;
    const char *name = a->name;
    *a = *ir_node_attr(src, from);
    a->id = id;
    a->name = name;
}

static bool fuse_conv(IrGraph *g, const PassUses *r, uint32_t pid) {
    const IrNode *p = &g->nodes[pid];
    const IrType *ty = &g->values[p->outputs[0]].type;
    if (ty->rank < 3 || ty->dims[1] < 1) return false;
    Chain ch;
    collect(g, r, pid, 1, ty->dims[1], true, true, &ch);
    if (ch.last == pid) return false;
    uint32_t own = p->n_inputs > 2 ? p->inputs[2] : IR_NONE;
    if (own != IR_NONE && ch.bias != IR_NONE && !pass_const_f32(g, own)) return false;
    uint32_t bias = merged_bias(g, r, own, ch.bias, ty->dims[1], g->nodes[pid].name);
    if (!ch.act && ch.residual == IR_NONE) { /* bias only: stays a Conv */
        IrNode *c = &g->nodes[pid];
        if (c->n_inputs < 3) {
            uint32_t *in = ir_arena_alloc(g->arena, 3 * sizeof *in);
            memcpy(in, c->inputs, c->n_inputs * sizeof *in);
            c->inputs = in;
            c->n_inputs = 3;
        }
        c->inputs[2] = bias;
        finish(g, &ch, pid);
        return true;
    }
    IrNode src = g->nodes[pid];
    IrNode *f = pass_replace_node(g, ch.last, IR_OP_FUSED_CONV, src.name,
                                  ch.residual != IR_NONE ? 4 : 3, 1);
    f->inputs[0] = src.inputs[0];
    f->inputs[1] = src.inputs[1];
    f->inputs[2] = bias;
    if (ch.residual != IR_NONE) f->inputs[3] = ch.residual;
    copy_attr(f, IR_ATTR_FUSED_CONV_AUTO_PAD, &src, IR_ATTR_CONV_AUTO_PAD);
    copy_attr(f, IR_ATTR_FUSED_CONV_DILATIONS, &src, IR_ATTR_CONV_DILATIONS);
    copy_attr(f, IR_ATTR_FUSED_CONV_GROUP, &src, IR_ATTR_CONV_GROUP);
    copy_attr(f, IR_ATTR_FUSED_CONV_KERNEL_SHAPE, &src, IR_ATTR_CONV_KERNEL_SHAPE);
    copy_attr(f, IR_ATTR_FUSED_CONV_PADS, &src, IR_ATTR_CONV_PADS);
    copy_attr(f, IR_ATTR_FUSED_CONV_STRIDES, &src, IR_ATTR_CONV_STRIDES);
    if (ch.act)
        set_act(f, &ch, IR_ATTR_FUSED_CONV_ACTIVATION, IR_ATTR_FUSED_CONV_ACT_ALPHA,
                IR_ATTR_FUSED_CONV_ACT_BETA);
    finish(g, &ch, ch.last);
    return true;
}

static bool fuse_gemm(IrGraph *g, const PassUses *r, uint32_t pid) {
    const IrNode *p = &g->nodes[pid];
    const IrType *ty = &g->values[p->outputs[0]].type;
    bool has_c = p->n_inputs > 2 && p->inputs[2] != IR_NONE;
    if (ty->rank != 2 || ty->dims[1] < 1) return false;
    Chain ch;
    collect(g, r, pid, 1, ty->dims[1], !has_c, false, &ch);
    if (ch.last == pid) return false;
    IrNode src = g->nodes[pid];
    uint32_t c = has_c ? src.inputs[2] : ch.bias;
    if (!ch.act) { /* bias only: becomes Gemm's C */
        IrNode *gm = &g->nodes[pid];
        uint32_t *in = ir_arena_alloc(g->arena, 3 * sizeof *in);
        memcpy(in, gm->inputs, gm->n_inputs * sizeof *in);
        gm->inputs = in;
        gm->n_inputs = 3;
        gm->inputs[2] = c;
        IrAttr *be = ir_node_attr(gm, IR_ATTR_GEMM_BETA);
        be->present = true;
        be->f = 1.0f;
        finish(g, &ch, pid);
        return true;
    }
    IrNode *f = pass_replace_node(g, ch.last, IR_OP_FUSED_GEMM, src.name, c != IR_NONE ? 3 : 2,
                                  1);
    f->inputs[0] = src.inputs[0];
    f->inputs[1] = src.inputs[1];
    if (c != IR_NONE) f->inputs[2] = c;
    copy_attr(f, IR_ATTR_FUSED_GEMM_ALPHA, &src, IR_ATTR_GEMM_ALPHA);
    copy_attr(f, IR_ATTR_FUSED_GEMM_TRANS_A, &src, IR_ATTR_GEMM_TRANS_A);
    copy_attr(f, IR_ATTR_FUSED_GEMM_TRANS_B, &src, IR_ATTR_GEMM_TRANS_B);
    if (has_c) {
        copy_attr(f, IR_ATTR_FUSED_GEMM_BETA, &src, IR_ATTR_GEMM_BETA);
    } else if (c != IR_NONE) {
        IrAttr *be = ir_node_attr(f, IR_ATTR_FUSED_GEMM_BETA);
        be->present = true;
        be->f = 1.0f;
    }
    set_act(f, &ch, IR_ATTR_FUSED_GEMM_ACTIVATION, IR_ATTR_FUSED_GEMM_ACT_ALPHA,
            IR_ATTR_FUSED_GEMM_ACT_BETA);
    finish(g, &ch, ch.last);
    return true;
}

static bool fuse_matmul(IrGraph *g, const PassUses *r, uint32_t pid) {
    const IrNode *p = &g->nodes[pid];
    const IrType *ty = &g->values[p->outputs[0]].type;
    const IrType *tb = &g->values[p->inputs[1]].type;
    if (ty->rank < 2 || tb->rank < 2 || ty->dims[ty->rank - 1] < 1) return false;
    Chain ch;
    collect(g, r, pid, ty->rank - 1, ty->dims[ty->rank - 1], true, false, &ch);
    if (ch.last == pid) return false;
    uint32_t bias = ch.bias;
    if (bias != IR_NONE && g->values[bias].tensor->rank != 1) {
        int64_t nn = ty->dims[ty->rank - 1];
        bias = merged_bias(g, r, IR_NONE, bias, nn, g->nodes[pid].name);
    }
    IrNode src = g->nodes[pid];
    IrNode *f = pass_replace_node(g, ch.last, IR_OP_FUSED_MAT_MUL, src.name,
                                  bias != IR_NONE ? 3 : 2, 1);
    f->inputs[0] = src.inputs[0];
    f->inputs[1] = src.inputs[1];
    if (bias != IR_NONE) f->inputs[2] = bias;
    if (ch.act)
        set_act(f, &ch, IR_ATTR_FUSED_MAT_MUL_ACTIVATION, IR_ATTR_FUSED_MAT_MUL_ACT_ALPHA,
                IR_ATTR_FUSED_MAT_MUL_ACT_BETA);
    finish(g, &ch, ch.last);
    return true;
}

bool pass_fuse(IrGraph *g, Diag *d) {
    (void)d;
    bool changed = false;
    PassUses r;
    pass_uses_build(g, &r);
    uint32_t n_nodes = g->n_nodes; /* nodes added by rewriting are dead shells */
    for (uint32_t i = 0; i < n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead || n->n_outputs != 1 || n->outputs[0] == IR_NONE) continue;
        if (g->values[n->outputs[0]].type.dtype != IR_DTYPE_F32) continue;
        if (!ir_op_has((IrOp)n->op, OPF_TAKES_ACT)) continue; /* Conv, Gemm, MatMul */
        bool did = false;
        if (n->op == IR_OP_CONV) did = fuse_conv(g, &r, i);
        else if (n->op == IR_OP_GEMM) did = fuse_gemm(g, &r, i);
        else if (n->op == IR_OP_MAT_MUL) did = fuse_matmul(g, &r, i);
        changed |= did;
    }
    pass_uses_free(&r);
    if (changed) ir_graph_compact(g);
    return changed;
}
