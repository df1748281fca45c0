/* Quantize: lowers the float nodes whose values carry quantization parameters (from a
 * .qparams file, driver/qparams.c, or from a pre-quantized model, passes/fold_qdq.c) to the
 * int8 kernels of ops.def's kiln section. Runs after "layout", so convolutions arrive as
 * NHWC FusedConv with their bias, residual and activation already fused; each becomes one
 * QConv whose requantization, bias, residual and clamp run in the kernel's epilogue.
 *
 * An annotated float value v (quant: per-tensor scale and a uint8 zero point) gets a uint8
 * twin "v.q" when an int8 node writes or reads it. Consecutive int8 nodes pass twins
 * directly; where a float node (an op without an int8 kernel) reads a twin, a
 * DequantizeLinear writes v; where an int8 node reads a float-produced v, a QuantizeLinear
 * makes the twin. Graph inputs and outputs stay float under their names.
 *
 * Nodes named in IrGraph.keep_float (kiln compile --keep-float) stay float, their neighbours
 * int8 with QuantizeLinear/DequantizeLinear between.
 * Lowered: Conv/FusedConv (2-D NHWC, constant weights, activation none/Relu/Clip) -> QConv;
 * Gemm/FusedGemm/MatMul/FusedMatMul with constant B -> QGemm; Add, Mul of one shape ->
 * QAdd, QMul, and Mul with one operand broadcast over a run of dims (a squeeze-excitation
 * scale over NHWC pixels) -> QMul; Relu, Clip, LeakyRelu, Sigmoid, Tanh, HardSigmoid, HardSwish, Gelu -> QLut
 * (a 256-entry table made here), and SiLU written as Mul(x, Sigmoid(x)) -> one QLut of
 * x * sigmoid(x) (the sigmoid's own rounding skipped); MaxPool, GlobalAveragePool (NHWC) -> QMaxPool,
 * QGlobalAveragePool; Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Slice, Split and Concat run
 * on the uint8 bytes (Concat's inputs, Slice's and Split's outputs requantized by table where
 * their parameters differ; the views' outputs take their input's); FusedAttention with Q, K, V and Y
 * annotated -> QAttention (the mask stays float; runtime/rt_qattn.h); MatMul of two annotated
 * activations -> QMatMul.
 * Weights: int8, symmetric per output channel (the model's own scales when a QDQ model gave
 * them), laid out (M, KH*KW*C/group) ("OHWI"); biases int32 with the input zero point's
 * correction folded in: b_q = round(b / (s_x s_w)) - z_x sum_k w_q. Zero ranges quantize
 * with scale 1 (all zeros), never a division by zero.
 * requires: static shapes, layout; invalidates: uses, node ids; preserves: float values'
 * meaning within one quantization step. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/geom.h"
#include "passes/passes.h"

#define QZ_MAX_TAPS 128   /* = RT_QCONV_MAX_TAPS */
#define QZ_MAX_C 4096     /* = RT_QCONV_MAX_C */
#define QZ_COPY_MAX 16384 /* = RT_QCONV_COPY_MAX */
#define QZ_GEMM_MR 8      /* = RT_QGEMM_MR */
#define QZ_QMM_MAX_K 16384 /* QMatMul's reduction: u8 x u8 sums stay exact in int32 */
#define QZ_ATTN_ELEMS (1 << 24) /* K, V at most: a head's QAttention scratch (RT_QA_SCRATCH) stays far from 2^31 bytes */

enum { K_FLOAT = 0, K_CONV, K_GEMM, K_ADD, K_MUL, K_LUT, K_SILU, K_MAXPOOL, K_GAP, K_VIEW, K_CONCAT, K_ATTN, K_SPLIT, K_QMM };

typedef struct Qz {
    IrGraph *g;
    uint32_t n_vals;  /* values before the pass: the tables cover these */
    uint8_t *kind;    /* per node */
    uint32_t *twin;   /* per value: the uint8 twin, or IR_NONE */
    uint32_t *silu_x; /* per node: the x a K_SILU node's table reads */
    bool *int8_read;  /* per value: a lowered node reads it as int8 */
    bool *float_read; /* per value: a float node or the graph's outputs read it */
    PassOrder order;
    bool changed;
} Qz;

/* ---- parameters ---- */

/* v's per-tensor parameters (a non-constant float32 tensor with a static shape). */
static bool act_q(const IrGraph *g, uint32_t v, float *s, int32_t *z) {
    if (v == IR_NONE) return false;
    const IrValue *val = &g->values[v];
    if (val->kind == IR_VALUE_CONST || !val->quant || val->quant->n != 1) return false;
    if (val->type.dtype != IR_DTYPE_F32 || !ir_type_is_static(&val->type)) return false;
    float sc = val->quant->scales[0];
    int32_t zp = val->quant->zero_points ? val->quant->zero_points[0] : 0;
    if (!(sc > 0.0f) || !isfinite(sc) || zp < 0 || zp > 255) return false;
    if (s) *s = sc;
    if (z) *z = zp;
    return true;
}

static bool same_q(const IrGraph *g, uint32_t a, uint32_t b) {
    float sa, sb;
    int32_t za, zb;
    return act_q(g, a, &sa, &za) && act_q(g, b, &sb, &zb) && sa == sb && za == zb;
}

static IrQuant *new_quant(IrGraph *g, uint32_t n, int32_t axis) {
    IrQuant *q = ir_arena_alloc(g->arena, sizeof *q);
    q->axis = axis;
    q->n = n;
    q->scales = ir_arena_alloc(g->arena, n * sizeof *q->scales);
    q->zero_points = ir_arena_alloc(g->arena, n * sizeof *q->zero_points);
    return q;
}

static void copy_q(IrGraph *g, uint32_t to, uint32_t from) {
    IrQuant *q = new_quant(g, 1, -1);
    q->scales[0] = g->values[from].quant->scales[0];
    q->zero_points[0] = g->values[from].quant->zero_points ? g->values[from].quant->zero_points[0] : 0;
    g->values[to].quant = q;
}

static uint32_t add_const(IrGraph *g, const char *base, IrDType dt, int rank, const int64_t *dims,
                          void **data) {
    const char *name = pass_fresh_name(g, base, '.');
    IrTensor *t = ir_tensor_new(g->arena, dt, rank, dims);
    t->name = name;
    IrType ty = ir_type_tensor(dt, rank, dims);
    uint32_t v = ir_value_add(g, name, &ty, IR_VALUE_CONST);
    g->values[v].tensor = t;
    g->values[v].producer = IR_NONE;
    *data = t->data;
    return v;
}

/* ---- which nodes lower ---- */

static bool is_const_f32(const IrGraph *g, uint32_t v) {
    return v != IR_NONE && g->values[v].kind == IR_VALUE_CONST && g->values[v].tensor &&
           g->values[v].tensor->dtype == IR_DTYPE_F32;
}

static const char *act_of(const IrNode *n) {
    switch (n->op) {
    case IR_OP_FUSED_CONV: return ir_attr_s(n, IR_ATTR_FUSED_CONV_ACTIVATION);
    case IR_OP_FUSED_GEMM: return ir_attr_s(n, IR_ATTR_FUSED_GEMM_ACTIVATION);
    case IR_OP_FUSED_MAT_MUL: return ir_attr_s(n, IR_ATTR_FUSED_MAT_MUL_ACTIVATION);
    default: return "";
    }
}

static bool clamp_act(const char *a) {
    return !a[0] || strcmp(a, "Relu") == 0 || strcmp(a, "Clip") == 0;
}

static bool can_conv(const IrGraph *g, const IrNode *n) {
    if (!ir_has_input(n, 1) || n->n_outputs != 1) return false;
    uint32_t x = n->inputs[0], w = n->inputs[1], y = n->outputs[0];
    const IrType *tx = &g->values[x].type, *tw = &g->values[w].type, *ty = &g->values[y].type;
    if (!act_q(g, x, NULL, NULL) || !act_q(g, y, NULL, NULL) || !is_const_f32(g, w)) return false;
    if (tx->rank != 4 || tx->layout != IR_LAYOUT_NHWC || ty->layout != IR_LAYOUT_NHWC ||
        tw->rank != 4)
        return false;
    if (ir_has_input(n, 2) && !is_const_f32(g, n->inputs[2])) return false;
    if (n->op == IR_OP_FUSED_CONV && ir_has_input(n, 3) &&
        (!act_q(g, n->inputs[3], NULL, NULL) || g->values[n->inputs[3]].type.layout != IR_LAYOUT_NHWC))
        return false;
    if (!clamp_act(act_of(n))) return false;
    int64_t kh = tw->dims[0], kw = tw->dims[1], cg = tw->dims[2], m = tw->dims[3];
    int64_t c = tx->dims[3], group = c / (cg ? cg : 1);
    if (cg < 1 || c % cg != 0 || m != ty->dims[3] || m % group != 0) return false;
    if (kh * kw > QZ_MAX_TAPS || c > QZ_MAX_C || m > QZ_MAX_C) return false;
    bool depthwise = cg == 1 && m == c;
    if (!depthwise && cg % 4 != 0 && QZ_GEMM_MR * kh * kw * ((cg + 3) / 4) * 4 > QZ_COPY_MAX)
        return false;
    IrConvAttrs a;
    IrConvGeom cg2;
    const char *why;
    IrType wt = *tw; /* the attribute decoder wants (M, C/g, KH, KW) */
    wt.dims[0] = m, wt.dims[1] = cg, wt.dims[2] = kh, wt.dims[3] = kw;
    int64_t in[2] = {tx->dims[1], tx->dims[2]}, out[2] = {ty->dims[1], ty->dims[2]};
    return ir_conv_attrs(n, 2, &wt, &a, &why) && ir_conv_geom(&a, in, out, &cg2, &why) &&
           cg2.group == group;
}

/* Gemm-like: A (.., K) rows, constant B, optional constant bias of N; alpha 1, no transA. */
static bool gemm_shape(const IrGraph *g, const IrNode *n, int64_t *K, int64_t *N, bool *trans_b,
                       uint32_t *bias) {
    uint32_t a = n->inputs[0], b = n->inputs[1];
    const IrType *ta = &g->values[a].type, *tb = &g->values[b].type;
    bool gemm = n->op == IR_OP_GEMM || n->op == IR_OP_FUSED_GEMM;
    *bias = IR_NONE;
    *trans_b = false;
    if (!is_const_f32(g, b) || tb->rank != 2 || ta->rank < 2) return false;
    if (gemm) {
        bool fg = n->op == IR_OP_FUSED_GEMM;
        if (ir_attr_i(n, fg ? IR_ATTR_FUSED_GEMM_TRANS_A : IR_ATTR_GEMM_TRANS_A) != 0 ||
            ir_attr_f(n, fg ? IR_ATTR_FUSED_GEMM_ALPHA : IR_ATTR_GEMM_ALPHA) != 1.0f ||
            ta->rank != 2)
            return false;
        *trans_b = ir_attr_i(n, fg ? IR_ATTR_FUSED_GEMM_TRANS_B : IR_ATTR_GEMM_TRANS_B) != 0;
        if (ir_has_input(n, 2)) {
            if (ir_attr_f(n, fg ? IR_ATTR_FUSED_GEMM_BETA : IR_ATTR_GEMM_BETA) != 1.0f) return false;
            *bias = n->inputs[2];
        }
    } else if (n->op == IR_OP_FUSED_MAT_MUL && ir_has_input(n, 2)) {
        *bias = n->inputs[2];
    }
    *K = ta->dims[ta->rank - 1];
    *N = *trans_b ? tb->dims[0] : tb->dims[1];
    if ((*trans_b ? tb->dims[1] : tb->dims[0]) != *K) return false;
    if (*bias != IR_NONE) {
        if (!is_const_f32(g, *bias) || g->values[*bias].tensor->n_elems != *N) return false;
    }
    return *K >= 1 && *N >= 1 && *K <= QZ_MAX_C * 4 &&
           (*K % 4 == 0 || QZ_GEMM_MR * ((*K + 3) / 4) * 4 <= QZ_COPY_MAX);
}

static bool can_gemm(const IrGraph *g, const IrNode *n) {
    int64_t K, N;
    bool tb;
    uint32_t bias;
    return n->n_outputs == 1 && act_q(g, n->inputs[0], NULL, NULL) &&
           act_q(g, n->outputs[0], NULL, NULL) && clamp_act(act_of(n)) &&
           gemm_shape(g, n, &K, &N, &tb, &bias);
}

/* The float function of a unary activation node, for its table. */
static bool unary_fn(const IrGraph *g, const IrNode *n, double x, double *y) {
    switch (n->op) {
    case IR_OP_RELU: *y = x > 0 ? x : 0; return true;
    case IR_OP_LEAKY_RELU: *y = x >= 0 ? x : x * ir_attr_f(n, IR_ATTR_LEAKY_RELU_ALPHA); return true;
    case IR_OP_SIGMOID: *y = 1.0 / (1.0 + exp(-x)); return true;
    case IR_OP_TANH: *y = tanh(x); return true;
    case IR_OP_HARD_SIGMOID: {
        double v = ir_attr_f(n, IR_ATTR_HARD_SIGMOID_ALPHA) * x + ir_attr_f(n, IR_ATTR_HARD_SIGMOID_BETA);
        *y = v < 0 ? 0 : v > 1 ? 1 : v;
        return true;
    }
    case IR_OP_HARD_SWISH: {
        double v = x / 6.0 + 0.5;
        *y = x * (v < 0 ? 0 : v > 1 ? 1 : v);
        return true;
    }
    case IR_OP_GELU: *y = 0.5 * x * (1.0 + erf(x / sqrt(2.0))); return true;
    case IR_OP_CLIP: {
        double lo = -INFINITY, hi = INFINITY;
        if (n->opset < 11) {
            lo = ir_attr_f(n, IR_ATTR_CLIP_MIN), hi = ir_attr_f(n, IR_ATTR_CLIP_MAX);
        } else {
            if (ir_has_input(n, 1) && !pass_const_scalar(g, n->inputs[1], &lo)) return false;
            if (ir_has_input(n, 2) && !pass_const_scalar(g, n->inputs[2], &hi)) return false;
        }
        *y = x < lo ? lo : x > hi ? hi : x;
        return true;
    }
    default: return false;
    }
}

static bool can_lut(const IrGraph *g, const IrNode *n) {
    double y;
    return n->n_outputs == 1 && act_q(g, n->inputs[0], NULL, NULL) &&
           act_q(g, n->outputs[0], NULL, NULL) && unary_fn(g, n, 0.0, &y);
}

/* SiLU as exporters write it, Mul(x, Sigmoid(x)): x when n is that Mul and the Sigmoid's
 * output is read by n alone (no graph output), else IR_NONE; *sig: the Sigmoid node. */
static uint32_t silu_input(const IrGraph *g, const IrNode *n, uint32_t *sig) {
    if (n->op != IR_OP_MUL || n->n_inputs != 2 || n->n_outputs != 1) return IR_NONE;
    for (int k = 0; k < 2; k++) {
        uint32_t s = n->inputs[k], x = n->inputs[1 - k];
        uint32_t p = s != IR_NONE ? g->values[s].producer : IR_NONE;
        if (p == IR_NONE || g->values[s].kind != IR_VALUE_NODE || g->nodes[p].dead ||
            g->nodes[p].op != IR_OP_SIGMOID || g->nodes[p].inputs[0] != x || x == s)
            continue;
        uint32_t reads = 0;
        for (uint32_t i = 0; i < g->n_nodes; i++)
            for (uint32_t j = 0; !g->nodes[i].dead && j < g->nodes[i].n_inputs; j++)
                reads += g->nodes[i].inputs[j] == s;
        for (uint32_t o = 0; o < g->n_outputs; o++) reads += 2 * (g->outputs[o] == s);
        if (reads != 1) continue;
        *sig = p;
        return x;
    }
    return IR_NONE;
}

static bool can_binary(const IrGraph *g, const IrNode *n) {
    uint32_t a = n->inputs[0], b = n->inputs[1], y = n->outputs[0];
    return act_q(g, a, NULL, NULL) && act_q(g, b, NULL, NULL) && act_q(g, y, NULL, NULL) &&
           ir_type_numel(&g->values[a].type) == ir_type_numel(&g->values[y].type) &&
           ir_type_numel(&g->values[b].type) == ir_type_numel(&g->values[y].type) &&
           g->values[a].type.layout == g->values[y].type.layout &&
           g->values[b].type.layout == g->values[y].type.layout;
}

/* Mul(a, b) with b broadcast over a run of a's dims (ir_bcast_run: a squeeze-excitation
 * scale (N,1,1,C) over (N,H,W,C)), the broadcast operand moved to input 1 (Mul commutes);
 * QMul then reads B as (outer, inner). */
static bool can_mul_bcast(IrGraph *g, IrNode *n) {
    uint32_t y = n->outputs[0];
    int64_t outer, mid, inner;
    if (n->n_inputs != 2 || !act_q(g, n->inputs[0], NULL, NULL) ||
        !act_q(g, n->inputs[1], NULL, NULL) || !act_q(g, y, NULL, NULL))
        return false;
    if (ir_bcast_run(&g->values[n->inputs[0]].type, &g->values[y].type, &outer, &mid, &inner)) {
        uint32_t t = n->inputs[0];
        n->inputs[0] = n->inputs[1], n->inputs[1] = t;
    }
    const IrType *ta = &g->values[n->inputs[0]].type, *ty = &g->values[y].type;
    return ir_type_numel(ta) == ir_type_numel(ty) && ta->layout == ty->layout &&
           ir_bcast_run(&g->values[n->inputs[1]].type, ty, &outer, &mid, &inner);
}

/* FusedAttention with Q, K, V and Y annotated, a float mask or none, and keys and head
 * dimensions small enough for QAttention's scratch (bounded here by K's and V's element
 * counts; the emitter reads the exact shapes through the perms and windows). */
static bool can_attn(const IrGraph *g, const IrNode *n) {
    if (n->n_outputs != 1 || n->n_inputs < 3) return false;
    for (uint32_t k = 0; k < 3; k++)
        if (!act_q(g, n->inputs[k], NULL, NULL)) return false;
    if (!act_q(g, n->outputs[0], NULL, NULL)) return false;
    if (ir_has_input(n, 3) && g->values[n->inputs[3]].type.dtype != IR_DTYPE_F32) return false;
    int64_t nk = ir_type_numel(&g->values[n->inputs[1]].type);
    int64_t nv = ir_type_numel(&g->values[n->inputs[2]].type);
    return nk >= 1 && nv >= 1 && nk <= QZ_ATTN_ELEMS && nv <= QZ_ATTN_ELEMS;
}

/* MatMul of two annotated activations (an attention product no FusedAttention took): ranks
 * of 2 or more, a reduction short enough for exact int32 sums (runtime/rt_qattn.h). */
static bool can_qmatmul(const IrGraph *g, const IrNode *n) {
    if (n->op != IR_OP_MAT_MUL || n->n_outputs != 1) return false;
    uint32_t a = n->inputs[0], b = n->inputs[1];
    if (!act_q(g, a, NULL, NULL) || !act_q(g, b, NULL, NULL) || !act_q(g, n->outputs[0], NULL, NULL))
        return false;
    const IrType *ta = &g->values[a].type, *tb = &g->values[b].type;
    return ta->rank >= 2 && tb->rank >= 2 && ta->dims[ta->rank - 1] <= QZ_QMM_MAX_K;
}

static bool is_view(IrOp op) {
    return op == IR_OP_RESHAPE || op == IR_OP_FLATTEN || op == IR_OP_SQUEEZE ||
           op == IR_OP_UNSQUEEZE || op == IR_OP_TRANSPOSE;
}

static bool kept_float(const IrGraph *g, const IrNode *n) {
    for (uint32_t k = 0; k < g->n_keep_float && n->name; k++)
        if (strcmp(g->keep_float[k], n->name) == 0) return true;
    return false;
}

static int decide(Qz *Q, uint32_t i) {
    IrGraph *g = Q->g;
    const IrNode *n = &g->nodes[i];
    if (n->n_outputs < 1 || n->outputs[0] == IR_NONE || kept_float(g, n)) return K_FLOAT;
    uint32_t x = n->n_inputs ? n->inputs[0] : IR_NONE, y = n->outputs[0];
    switch (n->op) {
    case IR_OP_CONV:
    case IR_OP_FUSED_CONV: return can_conv(g, n) ? K_CONV : K_FLOAT;
    case IR_OP_GEMM:
    case IR_OP_FUSED_GEMM:
    case IR_OP_MAT_MUL:
    case IR_OP_FUSED_MAT_MUL:
        return can_gemm(g, n) ? K_GEMM : can_qmatmul(g, n) ? K_QMM : K_FLOAT;
    case IR_OP_ADD: return can_binary(g, n) ? K_ADD : K_FLOAT;
    case IR_OP_FUSED_ATTENTION: return can_attn(g, n) ? K_ATTN : K_FLOAT;
    case IR_OP_SPLIT:
    case IR_OP_SLICE: /* a packed Q, K, V's parts; a part without parameters takes the whole's */
        if (!act_q(g, x, NULL, NULL)) return K_FLOAT;
        for (uint32_t k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] == IR_NONE || g->values[n->outputs[k]].type.dtype != IR_DTYPE_F32 ||
                !ir_type_is_static(&g->values[n->outputs[k]].type))
                return K_FLOAT;
        for (uint32_t k = 0; k < n->n_outputs; k++)
            if (!act_q(g, n->outputs[k], NULL, NULL)) copy_q(g, n->outputs[k], x);
        return K_SPLIT;
    case IR_OP_MUL: {
        uint32_t sig, sx = silu_input(g, n, &sig);
        if (sx != IR_NONE && act_q(g, sx, NULL, NULL) && act_q(g, y, NULL, NULL) &&
            !kept_float(g, &g->nodes[sig])) {
            Q->kind[sig] = K_FLOAT; /* the table replaces both nodes */
            g->nodes[sig].dead = true;
            Q->silu_x[i] = sx;
            return K_SILU;
        }
        return can_binary(g, n) || can_mul_bcast(g, &g->nodes[i]) ? K_MUL : K_FLOAT;
    }
    case IR_OP_MAX_POOL:
        if (n->n_outputs > 1 && n->outputs[1] != IR_NONE) return K_FLOAT;
        /* fallthrough */
    case IR_OP_GLOBAL_AVERAGE_POOL:
        if (!act_q(g, x, NULL, NULL) || !act_q(g, y, NULL, NULL) ||
            g->values[x].type.layout != IR_LAYOUT_NHWC || g->values[x].type.dims[3] > QZ_MAX_C)
            return K_FLOAT;
        if (n->op == IR_OP_MAX_POOL) {
            copy_q(g, y, x); /* max commutes with the (monotone) quantization */
            return K_MAXPOOL;
        }
        return K_GAP;
    case IR_OP_CONCAT:
        if (!act_q(g, y, NULL, NULL)) return K_FLOAT;
        for (uint32_t k = 0; k < n->n_inputs; k++)
            if (!act_q(g, n->inputs[k], NULL, NULL)) return K_FLOAT;
        return K_CONCAT;
    default:
        if (is_view((IrOp)n->op)) {
            /* the same values moved: the output takes the input's parameters (the layout
             * pass's boundary transposes come without their own) */
            if (!act_q(g, x, NULL, NULL) || g->values[y].type.dtype != IR_DTYPE_F32 ||
                !ir_type_is_static(&g->values[y].type))
                return K_FLOAT;
            copy_q(g, y, x);
            return K_VIEW;
        }
        return can_lut(g, n) ? K_LUT : K_FLOAT;
    }
}

/* The inputs lowered node i reads as int8 (the others stay as they are). */
static bool reads_int8(const Qz *Q, uint32_t i, uint32_t k) {
    const IrNode *n = &Q->g->nodes[i];
    switch (Q->kind[i]) {
    case K_SILU: return n->inputs[k] == Q->silu_x[i];
    case K_ATTN: return k < 3;
    case K_SPLIT: return k == 0;
    case K_QMM: return k < 2;
    case K_CONV: return k == 0 || k == 3;
    case K_GEMM:
    case K_LUT:
    case K_MAXPOOL:
    case K_GAP:
    case K_VIEW: return k == 0;
    case K_ADD:
    case K_MUL:
    case K_CONCAT: return k < n->n_inputs;
    default: return false;
    }
}

/* ---- building ---- */

static uint32_t twin(Qz *Q, uint32_t v) {
    IrGraph *g = Q->g;
    if (Q->twin[v] != IR_NONE) return Q->twin[v];
    IrType t = g->values[v].type;
    t.dtype = IR_DTYPE_U8;
    const char *name = pass_unique_name(g, g->values[v].name, ".q");
    uint32_t q = ir_value_add(g, name, &t, IR_VALUE_NODE);
    g->values[q].producer = IR_NONE;
    copy_q(g, q, v);
    Q->twin[v] = q;
    return q;
}

/* scale and zero point constants of v's parameters */
static void qdq_params(Qz *Q, uint32_t v, uint32_t *sv, uint32_t *zv) {
    IrGraph *g = Q->g;
    void *ps, *pz;
    float s;
    int32_t z;
    act_q(g, v, &s, &z);
    *sv = add_const(g, pass_unique_name(g, g->values[v].name, ".scale"), IR_DTYPE_F32, 0, NULL, &ps);
    *zv = add_const(g, pass_unique_name(g, g->values[v].name, ".zero_point"), IR_DTYPE_U8, 0, NULL, &pz);
    *(float *)ps = s;
    *(uint8_t *)pz = (uint8_t)z;
}

/* QuantizeLinear(v) -> twin, or DequantizeLinear(twin) -> v, pushed in the order. */
static void add_qdq(Qz *Q, uint32_t v, bool quantize) {
    IrGraph *g = Q->g;
    uint32_t q = twin(Q, v), sv, zv;
    qdq_params(Q, v, &sv, &zv);
    const char *name = pass_unique_name(g, g->values[v].name, quantize ? ".quantize" : ".dequantize");
    uint32_t id = ir_node_add(g, quantize ? IR_OP_QUANTIZE_LINEAR : IR_OP_DEQUANTIZE_LINEAR,
                              name, 3, 1, 0);
    IrNode *n = &g->nodes[id];
    n->opset = (int32_t)ir_graph_opset(g, "");
    if (n->opset < 13) n->opset = 13;
    n->inputs[0] = quantize ? v : q;
    n->inputs[1] = sv;
    n->inputs[2] = zv;
    pass_set_output(g, id, 0, quantize ? q : v);
    pass_order_push(&Q->order, id);
}

static int32_t sat_i32(double v) {
    return v > 2147483647.0 ? INT32_MAX : v < -2147483648.0 ? INT32_MIN : (int32_t)v;
}

/* Weights w[k][m] read as get(w, k, m) -> wq (M, K) int8 with per-channel scales sw, and the
 * bias with the zero-point correction. An existing per-channel annotation of M scales on
 * the weights (a QDQ model) gives the scales. */
static void quantize_weights(Qz *Q, uint32_t wv, int64_t M, int64_t K,
                             double (*get)(const float *, int64_t, int64_t, const int64_t *),
                             const int64_t *geo, uint32_t biasv, float sx, int32_t zx,
                             uint32_t *wq_out, uint32_t *bq_out) {
    IrGraph *g = Q->g;
    const float *w = g->values[wv].tensor->data;
    const IrQuant *given = g->values[wv].quant;
    int64_t dims[2] = {M, K};
    void *pw, *pb;
    uint32_t wq = add_const(g, pass_unique_name(g, g->values[wv].name, ".int8"), IR_DTYPE_I8, 2, dims, &pw);
    uint32_t bq = add_const(g, pass_unique_name(g, g->values[wv].name, ".bias_int32"), IR_DTYPE_I32, 1, dims, &pb);
    IrQuant *q = new_quant(g, (uint32_t)M, 0);
    int8_t *o = pw;
    int32_t *b = pb;
    const float *bias = biasv != IR_NONE ? g->values[biasv].tensor->data : NULL;
    for (int64_t m = 0; m < M; m++) {
        double amax = 0.0;
        for (int64_t k = 0; k < K; k++) {
            double a = fabs(get(w, k, m, geo));
            if (a > amax) amax = a;
        }
        double s = amax > 0.0 ? amax / 127.0 : 1.0; /* a zero range: scale 1, all zeros */
        /* a QDQ model's own scales, per channel or per tensor: its int8 values come back
         * exactly, -128 included */
        int lo = -127;
        if (given && (given->n == (uint32_t)M || given->n == 1) &&
            given->scales[given->n == 1 ? 0 : m] > 0.0f) {
            s = given->scales[given->n == 1 ? 0 : m];
            lo = -128;
        }
        q->scales[m] = (float)s;
        s = q->scales[m];
        int64_t sum = 0;
        for (int64_t k = 0; k < K; k++) {
            double r = nearbyint(get(w, k, m, geo) / s);
            int8_t v = (int8_t)(r > 127 ? 127 : r < lo ? lo : r);
            o[m * K + k] = v;
            sum += v;
        }
        double bb = bias ? nearbyint((double)bias[m] / ((double)sx * s)) : 0.0;
        b[m] = sat_i32(bb - (double)zx * (double)sum);
    }
    g->values[wq].quant = q;
    *wq_out = wq;
    *bq_out = bq;
}

/* RSCK (KH,KW,C/g,M): k runs over (kh, kw, c) */
static double get_rsck(const float *w, int64_t k, int64_t m, const int64_t *geo) {
    return w[k * geo[0] + m];
}
/* (K,N) */
static double get_kn(const float *w, int64_t k, int64_t m, const int64_t *geo) {
    return w[k * geo[0] + m];
}
/* (N,K) */
static double get_nk(const float *w, int64_t k, int64_t m, const int64_t *geo) {
    return w[m * geo[0] + k];
}

static void copy_attr(IrNode *n, IrAttrId to, const IrNode *src, IrAttrId from) {
    IrAttr *a = ir_node_attr(n, to);
    uint32_t id = a->id;
    const char *name = a->name;
    *a = *ir_node_attr(src, from);
    a->id = id;
    a->name = name;
}

static void set_act(IrNode *n, IrAttrId to, const char *act) {
    IrAttr *a = ir_node_attr(n, to);
    a->present = act[0] != 0;
    a->s.data = act;
    a->s.len = strlen(act);
}

static void build_conv(Qz *Q, uint32_t i) {
    IrGraph *g = Q->g;
    IrNode old = g->nodes[i];
    bool fused = old.op == IR_OP_FUSED_CONV;
    uint32_t x = old.inputs[0], w = old.inputs[1], y = old.outputs[0];
    uint32_t b = ir_has_input(&old, 2) ? old.inputs[2] : IR_NONE;
    uint32_t r = fused && ir_has_input(&old, 3) ? old.inputs[3] : IR_NONE;
    const IrType *tw = &g->values[w].type;
    int64_t M = tw->dims[3], K = tw->dims[0] * tw->dims[1] * tw->dims[2];
    float sx;
    int32_t zx;
    act_q(g, x, &sx, &zx);
    uint32_t wq, bq;
    int64_t geo[1] = {M};
    quantize_weights(Q, w, M, K, get_rsck, geo, b, sx, zx, &wq, &bq);
    uint32_t xq = twin(Q, x), rq = r != IR_NONE ? twin(Q, r) : IR_NONE, yq = twin(Q, y);
    IrNode *n = pass_replace_node(g, i, IR_OP_QCONV, old.name, r != IR_NONE ? 4 : 3, 1);
    n->inputs[0] = xq, n->inputs[1] = wq, n->inputs[2] = bq;
    if (r != IR_NONE) n->inputs[3] = rq;
#define CA(A) copy_attr(n, IR_ATTR_QCONV_##A, &old, fused ? IR_ATTR_FUSED_CONV_##A : IR_ATTR_CONV_##A)
    CA(AUTO_PAD);
    CA(DILATIONS);
    CA(GROUP);
    CA(PADS);
    CA(STRIDES);
#undef CA
    IrAttr *ks = ir_node_attr(n, IR_ATTR_QCONV_KERNEL_SHAPE);
    ks->present = true;
    ks->kind = IR_ATTR_KIND_INTS;
    ks->n = 2;
    ks->ints = ir_arena_alloc(g->arena, 2 * sizeof *ks->ints);
    ks->ints[0] = tw->dims[0], ks->ints[1] = tw->dims[1];
    if (fused) {
        copy_attr(n, IR_ATTR_QCONV_ACTIVATION, &old, IR_ATTR_FUSED_CONV_ACTIVATION);
        copy_attr(n, IR_ATTR_QCONV_ACT_ALPHA, &old, IR_ATTR_FUSED_CONV_ACT_ALPHA);
        copy_attr(n, IR_ATTR_QCONV_ACT_BETA, &old, IR_ATTR_FUSED_CONV_ACT_BETA);
    }
    pass_set_output(g, i, 0, yq);
}

static void build_gemm(Qz *Q, uint32_t i) {
    IrGraph *g = Q->g;
    IrNode old = g->nodes[i];
    uint32_t a = old.inputs[0], w = old.inputs[1], y = old.outputs[0], bias;
    int64_t K, N;
    bool tb;
    gemm_shape(g, &old, &K, &N, &tb, &bias);
    float sx;
    int32_t zx;
    act_q(g, a, &sx, &zx);
    uint32_t wq, bq;
    int64_t geo[1] = {tb ? K : N};
    quantize_weights(Q, w, N, K, tb ? get_nk : get_kn, geo, bias, sx, zx, &wq, &bq);
    uint32_t aq = twin(Q, a), yq = twin(Q, y);
    IrNode *n = pass_replace_node(g, i, IR_OP_QGEMM_INT8, old.name, 3, 1);
    n->inputs[0] = aq, n->inputs[1] = wq, n->inputs[2] = bq;
    const char *act = act_of(&old);
    set_act(n, IR_ATTR_QGEMM_INT8_ACTIVATION, act);
    if (old.op == IR_OP_FUSED_GEMM) {
        copy_attr(n, IR_ATTR_QGEMM_INT8_ACT_ALPHA, &old, IR_ATTR_FUSED_GEMM_ACT_ALPHA);
        copy_attr(n, IR_ATTR_QGEMM_INT8_ACT_BETA, &old, IR_ATTR_FUSED_GEMM_ACT_BETA);
    } else if (old.op == IR_OP_FUSED_MAT_MUL) {
        copy_attr(n, IR_ATTR_QGEMM_INT8_ACT_ALPHA, &old, IR_ATTR_FUSED_MAT_MUL_ACT_ALPHA);
        copy_attr(n, IR_ATTR_QGEMM_INT8_ACT_BETA, &old, IR_ATTR_FUSED_MAT_MUL_ACT_BETA);
    }
    pass_set_output(g, i, 0, yq);
}

/* FusedAttention -> QAttention on the twins of Q, K, V (the mask stays float), the same
 * attributes. */
static void build_attn(Qz *Q, uint32_t i) {
    IrGraph *g = Q->g;
    IrNode old = g->nodes[i];
    uint32_t in[3] = {twin(Q, old.inputs[0]), twin(Q, old.inputs[1]), twin(Q, old.inputs[2])};
    uint32_t yq = twin(Q, old.outputs[0]);
    bool mask = ir_has_input(&old, 3);
    IrNode *n = pass_replace_node(g, i, IR_OP_QATTENTION, old.name, mask ? 4 : 3, 1);
    for (uint32_t k = 0; k < 3; k++) n->inputs[k] = in[k];
    if (mask) n->inputs[3] = old.inputs[3];
#define CA(A) copy_attr(n, IR_ATTR_QATTENTION_##A, &old, IR_ATTR_FUSED_ATTENTION_##A)
    CA(K_PERM);
    CA(K_WINDOW);
    CA(MASK);
    CA(Q_PERM);
    CA(Q_WINDOW);
    CA(SCALE);
    CA(V_PERM);
    CA(V_WINDOW);
    CA(Y_PERM);
#undef CA
    pass_set_output(g, i, 0, yq);
}

/* A table y = quantize_y(f(dequantize_x(q))) for q in 0..255 (f NULL: identity; silu:
 * x * sigmoid(x) instead of f). */
static uint32_t make_table(Qz *Q, const IrNode *fn, bool silu, uint32_t x, uint32_t y,
                           const char *base) {
    IrGraph *g = Q->g;
    float sx, sy;
    int32_t zx, zy;
    act_q(g, x, &sx, &zx);
    act_q(g, y, &sy, &zy);
    int64_t dims[1] = {256};
    void *p;
    uint32_t t = add_const(g, pass_unique_name(g, base, ".table"), IR_DTYPE_U8, 1, dims, &p);
    uint8_t *tab = p;
    for (int q = 0; q < 256; q++) {
        double xf = (double)(q - zx) * sx, yf = xf;
        if (silu) yf = xf / (1.0 + exp(-xf));
        else if (fn) unary_fn(g, fn, xf, &yf);
        double r = nearbyint(yf / sy) + zy;
        tab[q] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
    }
    return t;
}

/* A unary activation, or (silu) the Mul of Mul(x, Sigmoid(x)), as a table on x. */
static void build_lut(Qz *Q, uint32_t i, bool silu) {
    IrGraph *g = Q->g;
    IrNode old = g->nodes[i];
    uint32_t x = silu ? Q->silu_x[i] : old.inputs[0], y = old.outputs[0];
    uint32_t t = make_table(Q, &old, silu, x, y, old.name && old.name[0] ? old.name : "lut");
    uint32_t xq = twin(Q, x), yq = twin(Q, y);
    IrNode *n = pass_replace_node(g, i, IR_OP_QLUT, old.name, 2, 1);
    n->inputs[0] = xq, n->inputs[1] = t;
    pass_set_output(g, i, 0, yq);
}

static void build_simple(Qz *Q, uint32_t i, IrOp op) {
    IrGraph *g = Q->g;
    IrNode old = g->nodes[i];
    uint32_t yq = twin(Q, old.outputs[0]);
    uint32_t nin = op == IR_OP_QADD || op == IR_OP_QMUL || op == IR_OP_QMATMUL ? 2 : 1;
    uint32_t in[2] = {twin(Q, old.inputs[0]), nin > 1 ? twin(Q, old.inputs[1]) : IR_NONE};
    IrNode *n = pass_replace_node(g, i, op, old.name, nin, 1);
    for (uint32_t k = 0; k < nin; k++) n->inputs[k] = in[k];
    if (op == IR_OP_QMAX_POOL) {
#define CA(A) copy_attr(n, IR_ATTR_QMAX_POOL_##A, &old, IR_ATTR_MAX_POOL_##A)
        CA(AUTO_PAD);
        CA(CEIL_MODE);
        CA(DILATIONS);
        CA(KERNEL_SHAPE);
        CA(PADS);
        CA(STRIDES);
#undef CA
    }
    pass_set_output(g, i, 0, yq);
}

/* Split or Slice on the bytes, after the node is in the order: a part with the input's
 * parameters is its twin; another is requantized by a table (QLut) from a part written
 * with the input's parameters, as the float Split between DequantizeLinear and
 * QuantizeLinear rounded it; a part a float node reads gets a DequantizeLinear. */
/* dst = table[src]: a QLut node named NAME.requant that moves src's bytes to dst's
 * parameters (a Split part's or a Concat input's), in the pass's node order. */
static void add_requant(Qz *Q, uint32_t src, uint32_t table, uint32_t dst, const char *name) {
    IrGraph *g = Q->g;
    uint32_t id = ir_node_add(g, IR_OP_QLUT, pass_unique_name(g, name, ".requant"), 2, 1, 0);
    g->nodes[id].opset = 1;
    g->nodes[id].inputs[0] = src;
    g->nodes[id].inputs[1] = table;
    pass_set_output(g, id, 0, dst);
    pass_order_push(&Q->order, id);
}

static void build_parts(Qz *Q, uint32_t i) {
    IrGraph *g = Q->g;
    uint32_t x = g->nodes[i].inputs[0], n_out = g->nodes[i].n_outputs;
    g->nodes[i].inputs[0] = twin(Q, x);
    for (uint32_t k = 0; k < n_out; k++) {
        uint32_t v = g->nodes[i].outputs[k], vq = twin(Q, v);
        if (same_q(g, v, x)) {
            pass_set_output(g, i, k, vq);
        } else {
            IrType ty = g->values[vq].type;
            uint32_t part = ir_value_add(g, pass_unique_name(g, g->values[v].name, ".part"), &ty,
                                         IR_VALUE_NODE);
            copy_q(g, part, x);
            pass_set_output(g, i, k, part);
            uint32_t t = make_table(Q, NULL, false, x, v, g->values[v].name);
            add_requant(Q, part, t, vq, g->values[v].name);
        }
        if (Q->float_read[v]) add_qdq(Q, v, false);
    }
}

/* Views and Concat keep their op and read the twins (Concat's inputs requantized by table
 * to the output's parameters where they differ). */
static void build_bytes(Qz *Q, uint32_t i, int kind) {
    IrGraph *g = Q->g;
    uint32_t y = g->nodes[i].outputs[0];
    uint32_t n_in = g->nodes[i].n_inputs;
    for (uint32_t k = 0; k < n_in; k++) {
        uint32_t v = g->nodes[i].inputs[k];
        if (!reads_int8(Q, i, k) || v == IR_NONE) continue;
        uint32_t vq = twin(Q, v);
        if (kind == K_CONCAT && !same_q(g, v, y)) {
            uint32_t t = make_table(Q, NULL, false, v, y, g->values[v].name);
            IrType ty = g->values[vq].type;
            uint32_t rq = ir_value_add(g, pass_unique_name(g, g->values[v].name, ".requant"), &ty,
                                       IR_VALUE_NODE);
            copy_q(g, rq, y);
            add_requant(Q, vq, t, rq, g->values[v].name);
            vq = rq;
        }
        g->nodes[i].inputs[k] = vq;
    }
    uint32_t yq = twin(Q, y);
    pass_set_output(g, i, 0, yq);
}

/* v, which the model rounds (IrQuant.rounds: a folded QuantizeLinear/DequantizeLinear pair),
 * is made by a float node or is a graph input, and float nodes or the graph's outputs read
 * it: they read DequantizeLinear(QuantizeLinear(v)) instead, as the model says (a graph
 * output keeps its name on the rounded value). */
static void round_for_float(Qz *Q, uint32_t v, uint32_t n_nodes) {
    IrGraph *g = Q->g;
    if (!Q->int8_read[v]) add_qdq(Q, v, true); /* else the caller made the QuantizeLinear */
    uint32_t q = Q->twin[v], sv, zv;
    IrType t = g->values[v].type;
    uint32_t r = ir_value_add(g, pass_unique_name(g, g->values[v].name, ".rounded"), &t, IR_VALUE_NODE);
    g->values[r].producer = IR_NONE;
    g->values[r].quant = g->values[v].quant;
    qdq_params(Q, v, &sv, &zv);
    uint32_t id = ir_node_add(g, IR_OP_DEQUANTIZE_LINEAR,
                              pass_unique_name(g, g->values[v].name, ".rounded"), 3, 1, 0);
    IrNode *n = &g->nodes[id];
    n->opset = (int32_t)ir_graph_opset(g, "");
    if (n->opset < 13) n->opset = 13;
    n->inputs[0] = q, n->inputs[1] = sv, n->inputs[2] = zv;
    pass_set_output(g, id, 0, r);
    pass_order_push(&Q->order, id);
    Q->changed = true;
    for (uint32_t j = 0; j < n_nodes; j++) {
        IrNode *m = &g->nodes[j];
        if (m->dead) continue;
        for (uint32_t k = 0; k < m->n_inputs; k++)
            if (m->inputs[k] == v && (Q->kind[j] == K_FLOAT || !reads_int8(Q, j, k)))
                m->inputs[k] = r;
    }
    for (uint32_t k = 0; k < g->n_outputs; k++) {
        if (g->outputs[k] != v) continue;
        const char *name = g->values[v].name;
        g->values[v].name = pass_unique_name(g, name, ".exact");
        g->values[r].name = name;
        g->outputs[k] = r;
    }
}

static bool needs_round(const Qz *Q, uint32_t v) {
    const IrGraph *g = Q->g;
    return v != IR_NONE && v < Q->n_vals && Q->float_read[v] && act_q(g, v, NULL, NULL) &&
           g->values[v].quant->rounds;
}

/* One note naming the ops that stay float although a value they read or write has
 * parameters (no int8 kernel, or a neighbour without parameters), with their counts. */
static void note_float(const Qz *Q, Diag *d) {
    const IrGraph *g = Q->g;
    char list[512];
    size_t len = 0;
    uint32_t total = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        bool seen_before = false, touches = false;
        if (n->dead || Q->kind[i] != K_FLOAT) continue;
        for (uint32_t k = 0; k < n->n_inputs && !touches; k++) touches = act_q(g, n->inputs[k], NULL, NULL);
        for (uint32_t k = 0; k < n->n_outputs && !touches; k++) touches = act_q(g, n->outputs[k], NULL, NULL);
        if (!touches) continue;
        total++;
        for (uint32_t j = 0; j < i && !seen_before; j++) {
            const IrNode *m = &g->nodes[j];
            if (m->dead || Q->kind[j] != K_FLOAT || m->op != n->op) continue;
            for (uint32_t k = 0; k < m->n_inputs && !seen_before; k++) seen_before = act_q(g, m->inputs[k], NULL, NULL);
            for (uint32_t k = 0; k < m->n_outputs && !seen_before; k++) seen_before = act_q(g, m->outputs[k], NULL, NULL);
        }
        if (seen_before || len + 64 > sizeof list) continue;
        uint32_t count = 0;
        for (uint32_t j = i; j < g->n_nodes; j++) {
            const IrNode *m = &g->nodes[j];
            bool t = false;
            if (m->dead || Q->kind[j] != K_FLOAT || m->op != n->op) continue;
            for (uint32_t k = 0; k < m->n_inputs && !t; k++) t = act_q(g, m->inputs[k], NULL, NULL);
            for (uint32_t k = 0; k < m->n_outputs && !t; k++) t = act_q(g, m->outputs[k], NULL, NULL);
            count += t;
        }
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s x%u", len ? ", " : "",
                                ir_op_name((IrOp)n->op), count);
    }
    if (total)
        diag_note(d, "int8: %u node%s float (no int8 kernel for them, or a neighbour without "
                  "parameters): %s", total, total == 1 ? " stays" : "s stay", list);
}

bool pass_quantize(IrGraph *g, Diag *d) {
    bool any = false;
    for (uint32_t v = 0; v < g->n_values && !any; v++) any = act_q(g, v, NULL, NULL);
    if (!any || g->n_subgraphs) return false;
    Qz Q = {.g = g, .n_vals = g->n_values};
    uint32_t n_nodes = g->n_nodes;
    Q.kind = calloc(n_nodes ? n_nodes : 1, 1);
    Q.twin = malloc(Q.n_vals * sizeof *Q.twin);
    Q.silu_x = malloc((n_nodes ? n_nodes : 1) * sizeof *Q.silu_x);
    Q.int8_read = calloc(Q.n_vals, 1);
    Q.float_read = calloc(Q.n_vals, 1);
    IR_ASSERT(Q.kind && Q.twin && Q.silu_x && Q.int8_read && Q.float_read);
    for (uint32_t v = 0; v < Q.n_vals; v++) Q.twin[v] = IR_NONE;
    /* decide, in order (views and max pools pass their input's parameters on) */
    for (uint32_t i = 0; i < n_nodes; i++)
        if (!g->nodes[i].dead) Q.kind[i] = (uint8_t)decide(&Q, i);
    note_float(&Q, d);
    for (uint32_t i = 0; i < n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead) continue;
        for (uint32_t k = 0; k < n->n_inputs; k++) {
            uint32_t v = n->inputs[k];
            if (v == IR_NONE) continue;
            if (Q.kind[i] != K_FLOAT && reads_int8(&Q, i, k)) Q.int8_read[v] = true;
            else Q.float_read[v] = true;
        }
    }
    for (uint32_t k = 0; k < g->n_outputs; k++) Q.float_read[g->outputs[k]] = true;
    /* graph inputs read as int8, or rounded by the model and read as float */
    for (uint32_t k = 0; k < g->n_inputs; k++) {
        if (Q.int8_read[g->inputs[k]]) add_qdq(&Q, g->inputs[k], true);
        if (needs_round(&Q, g->inputs[k])) round_for_float(&Q, g->inputs[k], n_nodes);
    }
    for (uint32_t i = 0; i < n_nodes; i++) {
        if (g->nodes[i].dead) continue;
        int kind = Q.kind[i];
        uint32_t y = g->nodes[i].outputs[0];
        switch (kind) {
        case K_CONV: build_conv(&Q, i); break;
        case K_GEMM: build_gemm(&Q, i); break;
        case K_ATTN: build_attn(&Q, i); break;
        case K_LUT: build_lut(&Q, i, false); break;
        case K_SILU: build_lut(&Q, i, true); break;
        case K_ADD: build_simple(&Q, i, IR_OP_QADD); break;
        case K_QMM: build_simple(&Q, i, IR_OP_QMATMUL); break;
        case K_MUL: build_simple(&Q, i, IR_OP_QMUL); break;
        case K_MAXPOOL: build_simple(&Q, i, IR_OP_QMAX_POOL); break;
        case K_GAP: build_simple(&Q, i, IR_OP_QGLOBAL_AVERAGE_POOL); break;
        case K_VIEW:
        case K_CONCAT: build_bytes(&Q, i, kind); break;
        default: break;
        }
        pass_order_push(&Q.order, i);
        if (kind == K_SPLIT) {
            Q.changed = true;
            build_parts(&Q, i);
        } else if (kind != K_FLOAT) {
            Q.changed = true;
            if (Q.float_read[y]) add_qdq(&Q, y, false);
        } else {
            uint32_t n_out = g->nodes[i].n_outputs; /* nodes added below move g->nodes */
            for (uint32_t k = 0; k < n_out; k++) {
                uint32_t v = g->nodes[i].outputs[k];
                if (v != IR_NONE && v < Q.n_vals && Q.int8_read[v]) add_qdq(&Q, v, true);
                if (needs_round(&Q, v)) round_for_float(&Q, v, n_nodes);
            }
        }
    }
    if (Q.changed) pass_reorder_nodes(g, Q.order.ids, Q.order.n);
    bool changed = Q.changed;
    free(Q.order.ids);
    free(Q.kind);
    free(Q.twin);
    free(Q.silu_x);
    free(Q.int8_read);
    free(Q.float_read);
    return changed;
}
