/* Pre-quantized models onto the int8 kernels (docs/int8.md, "Pre-quantized models"). Two
 * passes, run first in the pipeline:
 *
 * lower-qoperator: QOperator-format nodes (QLinearConv, QLinearMatMul and the com.microsoft
 * ops that onnxruntime.quantization writes: QGemm, QLinearAdd, QLinearMul,
 * QLinear(Global)AveragePool, QLinearConcat, QLinearSigmoid, QLinearLeakyRelu,
 * QLinearSoftmax) become DequantizeLinear -> the float op -> QuantizeLinear, the QDQ form,
 * with int32 biases dequantized by s_x * s_w. QLinearConv and QLinearMatMul that read a
 * graph input or write a graph output keep their reference kernels (the uint8 tensor is the
 * model's interface there, and the reference rounds as the ONNX spec says).
 *
 * fold-qdq: in a model with at least one QuantizeLinear -> DequantizeLinear pair, each pair
 * of one per-tensor scale and zero point is removed and the float value it rounded carries
 * the parameters instead (IrValue.quant; an int8 zero point z becomes the uint8 z + 128, the
 * same real values); a DequantizeLinear of a constant becomes a float constant, and an int8
 * one with zero points 0 (weights) keeps its scales (per tensor or per channel), which
 * passes/quantize.c then uses as they are. What remains is the annotated float graph that a
 * .qparams file gives, and the quantize pass lowers it onto the same kernels.
 * requires: constants lowered; invalidates: uses, node ids, shapes of new values (shape
 * inference reruns); preserves: float values' meaning within one quantization step. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"

/* ---- constants ---- */

static const IrTensor *const_of(const IrGraph *g, uint32_t v) {
    if (v == IR_NONE || g->values[v].kind != IR_VALUE_CONST) return NULL;
    return g->values[v].tensor;
}

/* A quantization parameter pair: scale (f32, one or n_ch entries), zero point (u8/i8/i32,
 * absent or as many entries). */
static bool const_params(const IrGraph *g, uint32_t sv, uint32_t zv, int64_t *n) {
    const IrTensor *s = const_of(g, sv), *z = const_of(g, zv);
    if (!s || s->dtype != IR_DTYPE_F32 || s->n_elems < 1 || s->rank > 1) return false;
    if (zv != IR_NONE) {
        if (!z || z->n_elems != s->n_elems) return false;
        if (z->dtype != IR_DTYPE_U8 && z->dtype != IR_DTYPE_I8 && z->dtype != IR_DTYPE_I32) return false;
    }
    *n = s->n_elems;
    return true;
}

static int64_t zp_at(const IrTensor *z, int64_t i) {
    if (!z) return 0;
    switch (z->dtype) {
    case IR_DTYPE_U8: return ((const uint8_t *)z->data)[i];
    case IR_DTYPE_I8: return ((const int8_t *)z->data)[i];
    default: return ((const int32_t *)z->data)[i];
    }
}

/* Per-tensor scale and zero point as the quantize pass keeps them (uint8 zero point). */
static bool scalar_params(const IrGraph *g, uint32_t sv, uint32_t zv, float *s, int32_t *z) {
    int64_t n;
    if (!const_params(g, sv, zv, &n) || n != 1) return false;
    const IrTensor *zt = const_of(g, zv);
    if (zt && zt->dtype == IR_DTYPE_I32) return false;
    *s = ((const float *)const_of(g, sv)->data)[0];
    *z = (int32_t)zp_at(zt, 0) + (zt && zt->dtype == IR_DTYPE_I8 ? 128 : 0);
    return *s > 0.0f && isfinite(*s);
}

/* ---- lower-qoperator ---- */

typedef struct Lw {
    IrGraph *g;
    PassOrder order;
    int32_t opset; /* of the nodes made: at least 13 (per-axis DequantizeLinear) */
} Lw;

static uint32_t add_node(Lw *L, IrOp op, const char *base, const char *suffix, uint32_t n_in) {
    IrGraph *g = L->g;
    uint32_t id = ir_node_add(g, op, pass_unique_name(g, base, suffix), n_in, 1, 0);
    g->nodes[id].opset = L->opset;
    pass_order_push(&L->order, id);
    return id;
}

static uint32_t new_value(Lw *L, const char *base, const char *suffix, IrDType dt) {
    IrType t = pass_untyped_tensor(dt);
    uint32_t v = ir_value_add(L->g, pass_unique_name(L->g, base, suffix), &t, IR_VALUE_NODE);
    L->g->values[v].producer = IR_NONE;
    return v;
}

/* DequantizeLinear(q, s, z) along axis (per-tensor parameters: axis unused) -> a new f32. */
static uint32_t dq(Lw *L, uint32_t q, uint32_t s, uint32_t z, int64_t axis) {
    IrGraph *g = L->g;
    const char *base = g->values[q].name;
    uint32_t id = add_node(L, IR_OP_DEQUANTIZE_LINEAR, base, ".dq", z != IR_NONE ? 3 : 2);
    IrNode *n = &g->nodes[id];
    n->inputs[0] = q, n->inputs[1] = s;
    if (z != IR_NONE) n->inputs[2] = z;
    IrAttr *a = ir_node_attr(n, IR_ATTR_DEQUANTIZE_LINEAR_AXIS);
    a->present = true;
    a->kind = IR_ATTR_KIND_INT;
    a->i = axis;
    uint32_t f = new_value(L, base, ".f", IR_DTYPE_F32);
    pass_set_output(g, id, 0, f);
    return f;
}

/* QuantizeLinear(f, s, z) -> y (the QOperator node's own output, keeping name and type). */
static void qz(Lw *L, uint32_t f, uint32_t s, uint32_t z, uint32_t y) {
    IrGraph *g = L->g;
    uint32_t id = add_node(L, IR_OP_QUANTIZE_LINEAR, g->values[y].name, ".q", z != IR_NONE ? 3 : 2);
    IrNode *n = &g->nodes[id];
    n->inputs[0] = f, n->inputs[1] = s;
    if (z != IR_NONE) n->inputs[2] = z;
    pass_set_output(g, id, 0, y);
}

/* The int32 bias b dequantized by s_a * s_b (per channel when either has several). */
static uint32_t dq_bias(Lw *L, uint32_t b, uint32_t sa, uint32_t sb) {
    IrGraph *g = L->g;
    const IrTensor *ta = const_of(g, sa), *tb = const_of(g, sb);
    int64_t n = ta->n_elems > tb->n_elems ? ta->n_elems : tb->n_elems;
    float *p;
    uint32_t s = pass_add_const_f32(g, pass_unique_name(g, g->values[b].name, ".scale"), 1, &n, &p);
    for (int64_t i = 0; i < n; i++)
        p[i] = ((const float *)ta->data)[ta->n_elems == 1 ? 0 : i] *
               ((const float *)tb->data)[tb->n_elems == 1 ? 0 : i];
    return dq(L, b, s, IR_NONE, 0);
}

static void copy_attr(IrNode *n, IrAttrId to, const IrNode *src, IrAttrId from) {
    IrAttr *a = ir_node_attr(n, to);
    uint32_t id = a->id;
    const char *name = a->name;
    *a = *ir_node_attr(src, from);
    a->id = id;
    a->name = name;
}

static bool is_graph_input(const IrGraph *g, uint32_t v) {
    return v != IR_NONE && g->values[v].kind == IR_VALUE_INPUT;
}

/* Inputs (x, s, z) triples at the given positions all have constant per-tensor (or, for
 * weights, per-axis) parameters. */
static bool params_ok(const IrGraph *g, const IrNode *n, const int *scale_at, int count) {
    for (int k = 0; k < count; k++) {
        int64_t m;
        uint32_t s = n->inputs[scale_at[k]];
        uint32_t z = ir_has_input(n, (uint32_t)scale_at[k] + 1) ? n->inputs[scale_at[k] + 1] : IR_NONE;
        if (!const_params(g, s, z, &m)) return false;
    }
    return true;
}

/* Ops that move or pick values without arithmetic: on a quantized tensor they give the
 * same real values at the same parameters. */
static bool is_mover(IrOp op) {
    return op == IR_OP_MAX_POOL || op == IR_OP_FLATTEN || op == IR_OP_RESHAPE ||
           op == IR_OP_TRANSPOSE || op == IR_OP_SQUEEZE || op == IR_OP_UNSQUEEZE ||
           op == IR_OP_IDENTITY;
}

/* A mover on the uint8/int8 output of a QuantizeLinear (made here from a QOperator node, or
 * the model's own), as QOperator models have them (MaxPool, Flatten between QLinearConvs):
 * DequantizeLinear -> the op in float -> QuantizeLinear at the same parameters, so that the
 * pairs meet for fold-qdq. */
static bool lower_mover(Lw *L, uint32_t i) {
    IrGraph *g = L->g;
    IrNode old = g->nodes[i];
    if (!is_mover((IrOp)old.op) || old.n_outputs != 1 || !ir_has_input(&old, 0)) return false;
    uint32_t x = old.inputs[0], y = old.outputs[0];
    uint32_t qn = pass_producer(g, x, IR_OP_QUANTIZE_LINEAR);
    if (qn == IR_NONE || pass_is_graph_output(g, y)) return false;
    uint32_t s = g->nodes[qn].inputs[1];
    uint32_t z = ir_has_input(&g->nodes[qn], 2) ? g->nodes[qn].inputs[2] : IR_NONE;
    float sc;
    int32_t zp;
    if (!scalar_params(g, s, z, &sc, &zp)) return false;
    uint32_t f = dq(L, x, s, z, 1);
    const char *base = old.name && old.name[0] ? old.name : g->values[y].name;
    uint32_t id = add_node(L, (IrOp)old.op, base, ".float", old.n_inputs);
    IrNode *n = &g->nodes[id];
    n->opset = old.opset;
    memcpy(n->inputs, old.inputs, old.n_inputs * sizeof *old.inputs);
    n->inputs[0] = f;
    IR_ASSERT(n->n_attrs == old.n_attrs);
    memcpy(n->attrs, old.attrs, old.n_attrs * sizeof *old.attrs);
    uint32_t fo = new_value(L, base, ".out", IR_DTYPE_F32);
    pass_set_output(g, id, 0, fo);
    qz(L, fo, s, z, y);
    return true;
}

/* The float op of a QOperator node and where its quantized operands sit. */
static bool lower_one(Lw *L, uint32_t i) {
    IrGraph *g = L->g;
    IrNode old = g->nodes[i];
    uint32_t y = old.outputs[0];
    const char *base = old.name && old.name[0] ? old.name : g->values[y].name;
#define IN(k) (ir_has_input(&old, (k)) ? old.inputs[(k)] : IR_NONE)
    switch (old.op) {
    case IR_OP_QLINEAR_CONV: {
        static const int at[] = {1, 4, 6};
        if (!params_ok(g, &old, at, 3) || !const_of(g, IN(3))) return false;
        if (is_graph_input(g, IN(0)) || pass_is_graph_output(g, y)) return false;
        if (ir_has_input(&old, 8) && !const_of(g, IN(8))) return false;
        uint32_t x = dq(L, IN(0), IN(1), IN(2), 1), w = dq(L, IN(3), IN(4), IN(5), 0);
        uint32_t b = ir_has_input(&old, 8) ? dq_bias(L, IN(8), IN(1), IN(4)) : IR_NONE;
        uint32_t id = add_node(L, IR_OP_CONV, base, ".float", b != IR_NONE ? 3 : 2);
        IrNode *n = &g->nodes[id];
        n->inputs[0] = x, n->inputs[1] = w;
        if (b != IR_NONE) n->inputs[2] = b;
#define CA(A) copy_attr(n, IR_ATTR_CONV_##A, &old, IR_ATTR_QLINEAR_CONV_##A)
        CA(AUTO_PAD);
        CA(DILATIONS);
        CA(GROUP);
        CA(KERNEL_SHAPE);
        CA(PADS);
        CA(STRIDES);
#undef CA
        uint32_t f = new_value(L, base, ".out", IR_DTYPE_F32);
        pass_set_output(g, id, 0, f);
        qz(L, f, IN(6), IN(7), y);
        return true;
    }
    case IR_OP_QLINEAR_MAT_MUL: {
        static const int at[] = {1, 4, 6};
        if (!params_ok(g, &old, at, 3)) return false;
        if (is_graph_input(g, IN(0)) || is_graph_input(g, IN(3)) || pass_is_graph_output(g, y))
            return false;
        uint32_t a = dq(L, IN(0), IN(1), IN(2), 1), b = dq(L, IN(3), IN(4), IN(5), -1);
        uint32_t id = add_node(L, IR_OP_MAT_MUL, base, ".float", 2);
        g->nodes[id].inputs[0] = a, g->nodes[id].inputs[1] = b;
        uint32_t f = new_value(L, base, ".out", IR_DTYPE_F32);
        pass_set_output(g, id, 0, f);
        qz(L, f, IN(6), IN(7), y);
        return true;
    }
    case IR_OP_MS_QGEMM: {
        static const int at[] = {1, 4};
        bool qout = ir_has_input(&old, 7);
        if (!params_ok(g, &old, at, 2)) return false;
        if (qout) {
            static const int at_y[] = {7};
            if (!params_ok(g, &old, at_y, 1)) return false;
        }
        if (ir_has_input(&old, 6) && !const_of(g, IN(6))) return false;
        bool tb = ir_attr_i(&old, IR_ATTR_MS_QGEMM_TRANS_B) != 0;
        uint32_t a = dq(L, IN(0), IN(1), IN(2), 1), b = dq(L, IN(3), IN(4), IN(5), tb ? 0 : 1);
        uint32_t c = ir_has_input(&old, 6) ? dq_bias(L, IN(6), IN(1), IN(4)) : IR_NONE;
        uint32_t id = add_node(L, IR_OP_GEMM, base, ".float", c != IR_NONE ? 3 : 2);
        IrNode *n = &g->nodes[id];
        n->inputs[0] = a, n->inputs[1] = b;
        if (c != IR_NONE) n->inputs[2] = c;
        copy_attr(n, IR_ATTR_GEMM_ALPHA, &old, IR_ATTR_MS_QGEMM_ALPHA);
        copy_attr(n, IR_ATTR_GEMM_TRANS_A, &old, IR_ATTR_MS_QGEMM_TRANS_A);
        copy_attr(n, IR_ATTR_GEMM_TRANS_B, &old, IR_ATTR_MS_QGEMM_TRANS_B);
        if (!qout) {
            pass_set_output(g, id, 0, y); /* no y_scale: the output is float */
            return true;
        }
        uint32_t f = new_value(L, base, ".out", IR_DTYPE_F32);
        pass_set_output(g, id, 0, f);
        qz(L, f, IN(7), IN(8), y);
        return true;
    }
    case IR_OP_MS_QLINEAR_ADD:
    case IR_OP_MS_QLINEAR_MUL: {
        static const int at[] = {1, 4, 6};
        if (!params_ok(g, &old, at, 3)) return false;
        uint32_t a = dq(L, IN(0), IN(1), IN(2), 1), b = dq(L, IN(3), IN(4), IN(5), 1);
        uint32_t id = add_node(L, old.op == IR_OP_MS_QLINEAR_ADD ? IR_OP_ADD : IR_OP_MUL, base, ".float", 2);
        g->nodes[id].inputs[0] = a, g->nodes[id].inputs[1] = b;
        uint32_t f = new_value(L, base, ".out", IR_DTYPE_F32);
        pass_set_output(g, id, 0, f);
        qz(L, f, IN(6), IN(7), y);
        return true;
    }
    case IR_OP_MS_QLINEAR_CONCAT: {
        uint32_t n_x = (old.n_inputs - 2) / 3;
        if ((old.n_inputs - 2) % 3 != 0 || n_x < 1) return false;
        int at[1] = {0};
        if (!params_ok(g, &old, at, 1)) return false;
        for (uint32_t k = 0; k < n_x; k++) {
            at[0] = (int)(2 + 3 * k + 1);
            if (!params_ok(g, &old, at, 1)) return false;
        }
        uint32_t *xs = malloc(n_x * sizeof *xs);
        IR_ASSERT(xs);
        for (uint32_t k = 0; k < n_x; k++) xs[k] = dq(L, IN(2 + 3 * k), IN(3 + 3 * k), IN(4 + 3 * k), 1);
        uint32_t id = add_node(L, IR_OP_CONCAT, base, ".float", n_x);
        memcpy(g->nodes[id].inputs, xs, n_x * sizeof *xs);
        free(xs);
        copy_attr(&g->nodes[id], IR_ATTR_CONCAT_AXIS, &old, IR_ATTR_MS_QLINEAR_CONCAT_AXIS);
        uint32_t f = new_value(L, base, ".out", IR_DTYPE_F32);
        pass_set_output(g, id, 0, f);
        qz(L, f, IN(0), IN(1), y);
        return true;
    }
    case IR_OP_MS_QLINEAR_GLOBAL_AVERAGE_POOL:
    case IR_OP_MS_QLINEAR_AVERAGE_POOL:
    case IR_OP_MS_QLINEAR_SIGMOID:
    case IR_OP_MS_QLINEAR_LEAKY_RELU:
    case IR_OP_MS_QLINEAR_SOFTMAX: {
        static const int at[] = {1, 3};
        if (!params_ok(g, &old, at, 2)) return false;
        IrOp op = IR_OP_SIGMOID;
        int32_t opset = L->opset;
        if (old.op == IR_OP_MS_QLINEAR_GLOBAL_AVERAGE_POOL) {
            /* channels_last 1 would need transposes around the NCHW float op */
            if (ir_attr_i(&old, IR_ATTR_MS_QLINEAR_GLOBAL_AVERAGE_POOL_CHANNELS_LAST)) return false;
            op = IR_OP_GLOBAL_AVERAGE_POOL;
        } else if (old.op == IR_OP_MS_QLINEAR_AVERAGE_POOL) {
            if (ir_attr_i(&old, IR_ATTR_MS_QLINEAR_AVERAGE_POOL_CHANNELS_LAST)) return false;
            op = IR_OP_AVERAGE_POOL;
        } else if (old.op == IR_OP_MS_QLINEAR_LEAKY_RELU) {
            op = IR_OP_LEAKY_RELU;
        } else if (old.op == IR_OP_MS_QLINEAR_SOFTMAX) {
            op = IR_OP_SOFTMAX;
            /* the opset attribute says which Softmax: before 13 the input is coerced to 2-D */
            int64_t o = ir_attr_i(&old, IR_ATTR_MS_QLINEAR_SOFTMAX_OPSET);
            opset = o >= 1 && o < 13 ? (int32_t)o : 13;
        }
        uint32_t x = dq(L, IN(0), IN(1), IN(2), 1);
        uint32_t id = add_node(L, op, base, ".float", 1);
        IrNode *n = &g->nodes[id];
        n->opset = opset;
        n->inputs[0] = x;
        if (op == IR_OP_AVERAGE_POOL) {
#define CA(A) copy_attr(n, IR_ATTR_AVERAGE_POOL_##A, &old, IR_ATTR_MS_QLINEAR_AVERAGE_POOL_##A)
            CA(AUTO_PAD);
            CA(CEIL_MODE);
            CA(COUNT_INCLUDE_PAD);
            CA(KERNEL_SHAPE);
            CA(PADS);
            CA(STRIDES);
#undef CA
        } else if (op == IR_OP_LEAKY_RELU) {
            copy_attr(n, IR_ATTR_LEAKY_RELU_ALPHA, &old, IR_ATTR_MS_QLINEAR_LEAKY_RELU_ALPHA);
        } else if (op == IR_OP_SOFTMAX) {
            copy_attr(n, IR_ATTR_SOFTMAX_AXIS, &old, IR_ATTR_MS_QLINEAR_SOFTMAX_AXIS);
        }
        uint32_t f = new_value(L, base, ".out", IR_DTYPE_F32);
        pass_set_output(g, id, 0, f);
        qz(L, f, IN(3), IN(4), y);
        return true;
    }
    default: return lower_mover(L, i);
    }
#undef IN
}

bool pass_lower_qoperator(IrGraph *g, Diag *d) {
    bool any = false;
    for (uint32_t i = 0; i < g->n_nodes && !any; i++) {
        const IrNode *n = &g->nodes[i];
        any = !n->dead && n->n_outputs == 1 && n->outputs[0] != IR_NONE &&
              (n->op == IR_OP_QLINEAR_CONV || n->op == IR_OP_QLINEAR_MAT_MUL ||
               strcmp(ir_op_info((IrOp)n->op)->domain, "com.microsoft") == 0);
    }
    if (!any || g->n_subgraphs) return false;
    Lw L = {.g = g, .opset = pass_default_opset(g)};
    if (L.opset < 13) L.opset = 13;
    uint32_t n_nodes = g->n_nodes;
    bool changed = false;
    for (uint32_t i = 0; i < n_nodes; i++) {
        if (g->nodes[i].dead) continue;
        if (g->nodes[i].n_outputs == 1 && g->nodes[i].outputs[0] != IR_NONE && lower_one(&L, i)) {
            g->nodes[i].dead = true;
            changed = true;
        } else {
            pass_order_push(&L.order, i);
        }
    }
    if (changed) pass_reorder_nodes(g, L.order.ids, L.order.n);
    free(L.order.ids);
    if (changed && !ir_infer_shapes(g, d)) return false;
    return changed;
}

/* ---- fold-qdq ---- */

/* DequantizeLinear of a constant -> a float constant; int8 with zero points 0 keeps its
 * scales. Returns the new value or IR_NONE. */
static uint32_t fold_const_dq(IrGraph *g, const IrNode *n) {
    const IrTensor *q = const_of(g, n->inputs[0]);
    uint32_t zv = ir_has_input(n, 2) ? n->inputs[2] : IR_NONE;
    int64_t m;
    if (!q || !const_params(g, n->inputs[1], zv, &m)) return IR_NONE;
    if (q->dtype != IR_DTYPE_I8 && q->dtype != IR_DTYPE_U8 && q->dtype != IR_DTYPE_I32) return IR_NONE;
    if (ir_attr_i(n, IR_ATTR_DEQUANTIZE_LINEAR_BLOCK_SIZE) != 0) return IR_NONE;
    int64_t axis = ir_attr_i(n, IR_ATTR_DEQUANTIZE_LINEAR_AXIS), inner = 1;
    if (m > 1) {
        if (axis < 0) axis += q->rank;
        if (axis < 0 || axis >= q->rank || q->dims[axis] != m) return IR_NONE;
        for (int k = (int)axis + 1; k < q->rank; k++) inner *= q->dims[k];
    }
    const float *s = const_of(g, n->inputs[1])->data;
    const IrTensor *z = const_of(g, zv);
    float *p;
    uint32_t v = pass_add_const_f32(g, g->values[n->outputs[0]].name, q->rank, q->dims, &p);
    bool zero_zp = true;
    for (int64_t i = 0; i < q->n_elems; i++) {
        int64_t c = m > 1 ? (i / inner) % m : 0;
        int64_t raw = q->dtype == IR_DTYPE_I8    ? ((const int8_t *)q->data)[i]
                      : q->dtype == IR_DTYPE_U8 ? ((const uint8_t *)q->data)[i]
                                                : ((const int32_t *)q->data)[i];
        int64_t zc = zp_at(z, c);
        zero_zp &= zc == 0;
        p[i] = (float)(raw - zc) * s[c];
    }
    if (q->dtype == IR_DTYPE_I8 && zero_zp) {
        IrQuant *qa = ir_arena_alloc(g->arena, sizeof *qa);
        qa->axis = m > 1 ? (int32_t)axis : -1;
        qa->n = (uint32_t)m;
        qa->scales = ir_arena_alloc(g->arena, (size_t)m * sizeof *qa->scales);
        qa->zero_points = ir_arena_alloc(g->arena, (size_t)m * sizeof *qa->zero_points);
        for (int64_t c = 0; c < m; c++) qa->scales[c] = s[c], qa->zero_points[c] = 0;
        g->values[v].quant = qa;
    }
    return v;
}

/* The QuantizeLinear node that makes v, looking through Casts to v's own type (PyTorch
 * 1.13's exporter writes QuantizeLinear -> Cast(uint8) -> DequantizeLinear), or IR_NONE. */
static uint32_t q_producer(const IrGraph *g, uint32_t v) {
    for (int hops = 0; hops < 4 && v != IR_NONE; hops++) {
        uint32_t q = pass_producer(g, v, IR_OP_QUANTIZE_LINEAR);
        if (q != IR_NONE) return q;
        uint32_t c = pass_producer(g, v, IR_OP_CAST);
        if (c == IR_NONE || g->values[g->nodes[c].inputs[0]].type.dtype != g->values[v].type.dtype)
            return IR_NONE;
        v = g->nodes[c].inputs[0];
    }
    return IR_NONE;
}

static bool same_quant(const IrQuant *q, float s, int32_t z) {
    return q->n == 1 && q->scales[0] == s && (q->zero_points ? q->zero_points[0] : 0) == z;
}

bool pass_fold_qdq(IrGraph *g, Diag *d) {
    if (g->n_subgraphs) return false;
    /* a statically quantized model: some QuantizeLinear feeds a DequantizeLinear */
    bool pairs = false;
    for (uint32_t i = 0; i < g->n_nodes && !pairs; i++) {
        const IrNode *n = &g->nodes[i];
        pairs = !n->dead && n->op == IR_OP_DEQUANTIZE_LINEAR && q_producer(g, n->inputs[0]) != IR_NONE;
    }
    if (!pairs) return false;
    bool changed = false, identities = false;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        IrNode *n = &g->nodes[i];
        if (n->dead || n->op != IR_OP_DEQUANTIZE_LINEAR || n->outputs[0] == IR_NONE) continue;
        uint32_t out = n->outputs[0], to = IR_NONE;
        uint32_t qn = q_producer(g, n->inputs[0]);
        if (qn != IR_NONE) {
            const IrNode *q = &g->nodes[qn];
            uint32_t v = q->inputs[0];
            float s, sq;
            int32_t z, zq;
            uint32_t dz = ir_has_input(n, 2) ? n->inputs[2] : IR_NONE;
            uint32_t qz = ir_has_input(q, 2) ? q->inputs[2] : IR_NONE;
            if (!scalar_params(g, n->inputs[1], dz, &s, &z) ||
                !scalar_params(g, q->inputs[1], qz, &sq, &zq) || s != sq || z != zq ||
                g->values[v].type.dtype != IR_DTYPE_F32 || g->values[v].kind == IR_VALUE_CONST ||
                z < 0 || z > 255)
                continue;
            if (g->values[v].quant && !same_quant(g->values[v].quant, s, z)) continue;
            if (!g->values[v].quant) {
                IrQuant *qa = ir_arena_alloc(g->arena, sizeof *qa);
                qa->axis = -1;
                qa->n = 1;
                qa->scales = ir_arena_alloc(g->arena, sizeof *qa->scales);
                qa->zero_points = ir_arena_alloc(g->arena, sizeof *qa->zero_points);
                qa->scales[0] = s, qa->zero_points[0] = z;
                qa->rounds = true;
                g->values[v].quant = qa;
            }
            to = v;
        } else {
            to = fold_const_dq(g, n);
            n = &g->nodes[i];
        }
        if (to == IR_NONE) continue;
        changed = true;
        if (pass_is_graph_output(g, out)) {
            /* the output keeps its name (and the parameters): an Identity, removed below */
            if (g->values[to].quant && g->values[to].kind != IR_VALUE_CONST)
                g->values[out].quant = g->values[to].quant;
            IrNode *id = pass_replace_node(g, i, IR_OP_IDENTITY, g->nodes[i].name, 1, 1);
            id->opset = pass_default_opset(g);
            id->inputs[0] = to;
            pass_set_output(g, i, 0, out);
            identities = true;
            continue;
        }
        ir_replace_uses(g, out, to);
        n->dead = true;
    }
    /* QuantizeLinear nodes (and the Casts after them) nobody reads any more, last first */
    uint32_t *uses = ir_use_counts(g);
    for (uint32_t i = g->n_nodes; i-- > 0;) {
        IrNode *n = &g->nodes[i];
        if (n->dead || (n->op != IR_OP_QUANTIZE_LINEAR && n->op != IR_OP_CAST) ||
            n->outputs[0] == IR_NONE || uses[n->outputs[0]] != 0 ||
            pass_is_graph_output(g, n->outputs[0]) ||
            (n->op == IR_OP_CAST && q_producer(g, n->outputs[0]) == IR_NONE))
            continue;
        n->dead = true;
        for (uint32_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] != IR_NONE) uses[n->inputs[k]]--;
    }
    free(uses);
    if (changed) ir_graph_compact(g);
    if (identities) pass_remove_identity(g, d);
    return changed;
}
