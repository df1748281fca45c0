/* Channels-last layout: stores the activations of 2-D convolutions and everything between
 * them NHWC, rewriting weights and constant operands once at compile time instead of
 * transposing at run time; explicit Transposes remain only where the NHWC region meets an
 * NCHW graph input, a graph output or an op that needs NCHW, and pairs of Transposes that
 * undo each other (the model's own included) are removed. Runs after "fuse".
 *
 * Representation. A value stored channels-last has IrType.layout = IR_LAYOUT_NHWC and its
 * dims in storage order, (N,H,W,C): the dims always describe the bytes, row-major. So every
 * layout-agnostic emitter (elementwise with broadcasting, Concat, Pad, Resize, Transpose)
 * is correct on NHWC values unchanged, and only the layout-sensitive ops (OPF_LAYOUT: Conv,
 * FusedConv, the pools) read the tag. A Conv or FusedConv whose X is NHWC takes W as
 * (KH,KW,C/group,M) ("RSCK": the output channel innermost, what the NHWC kernel's inner
 * loop streams) and writes NHWC Y; bias and residual follow Y's layout. Conversions are
 * plain ONNX Transposes: perm (0,2,3,1) into NHWC, (0,3,1,2) back.
 *
 * Decision, in node order (one forward sweep):
 *  - seeds: f32/f64 Conv and FusedConv of rank 4 (constant weights are permuted here;
 *    others get a Transpose of perm (2,3,1,0));
 *  - joiners, NHWC when one of their activation inputs already is: elementwise ops whose
 *    operands are rank 4 (transposed if NCHW), constants (broadcast against NCHW then
 *    permuted: a per-channel (C,1,1) becomes (C)) or single elements; Concat on axis 1
 *    (becomes 3); Pad (pads permuted); Resize (scales, sizes, roi permuted); MaxPool
 *    without Indices, AveragePool, GlobalAveragePool, GlobalMaxPool; inference
 *    BatchNormalization (becomes Mul and Add by per-channel constants);
 *  - everything else (Flatten, Reshape, MatMul, Gemm, Transpose...) is a barrier and reads
 *    the NCHW value, which a Transpose after the NHWC producer makes (removed when unread).
 * With io_nhwc (`kiln compile --io-layout nhwc`), 4-D graph inputs and outputs are NHWC
 * themselves (typed (N,H,W,C) @nhwc, same names): no Transpose at the boundary of a region
 * that reaches them. Graphs with subgraphs get only the io rewrite (their loops may be
 * re-typed by shape inference later, which knows only NCHW).
 * requires: static shapes; invalidates: uses, node ids, value names of NHWC-produced
 * values (the NCHW copy gets ".nchw"); preserves: quant params, values' meaning. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"

#define LAYOUT_RANK 4 /* N, C, H, W: 2-D convolutions only */

static const int64_t to_nhwc[LAYOUT_RANK] = {0, 2, 3, 1};   /* NCHW -> NHWC */
static const int64_t to_nchw[LAYOUT_RANK] = {0, 3, 1, 2};   /* NHWC -> NCHW */
static const int64_t to_rsck[LAYOUT_RANK] = {2, 3, 1, 0};   /* (M,C/g,KH,KW) -> (KH,KW,C/g,M) */

typedef struct Lay {
    IrGraph *g;
    uint32_t n_orig;  /* values before the pass: the maps below cover these */
    uint32_t *nhwc;   /* per value: the value holding its NHWC form, or IR_NONE */
    uint32_t *bcast;  /* per constant: its form as an NHWC broadcast operand */
    uint32_t *rsck;   /* per weight: its (KH,KW,C/g,M) form */
    bool *native;     /* the NHWC form comes free (an NHWC producer or io input) */
    uint32_t *uses;   /* ir_use_counts before the pass */
    PassOrder order;  /* the new node order */
    bool changed;
} Lay;

/* t's dims permuted by perm (dims[i] = t.dims[perm[i]]), with layout. */
static IrType permuted_type(const IrType *t, const int64_t *perm, IrLayout layout) {
    IrType r = *t;
    for (int i = 0; i < LAYOUT_RANK; i++) {
        r.dims[i] = t->dims[perm[i]];
        r.syms[i] = t->syms[perm[i]];
    }
    r.layout = (uint8_t)layout;
    return r;
}

static bool is_static4(const IrGraph *g, uint32_t v) {
    const IrType *t = &g->values[v].type;
    return t->kind == IR_TYPE_TENSOR && t->rank == LAYOUT_RANK && ir_type_is_static(t) &&
           t->dtype != IR_DTYPE_STRING && ir_dtype_bits((IrDType)t->dtype) % 8 == 0 &&
           ir_dtype_bits((IrDType)t->dtype) > 0;
}

static bool is_const(const IrGraph *g, uint32_t v) {
    const IrValue *val = &g->values[v];
    return val->kind == IR_VALUE_CONST && val->tensor && val->tensor->data &&
           val->tensor->dtype != IR_DTYPE_STRING &&
           ir_dtype_bits((IrDType)val->tensor->dtype) % 8 == 0;
}

static bool is_float(const IrGraph *g, uint32_t v) {
    uint8_t t = g->values[v].type.dtype;
    return t == IR_DTYPE_F32 || t == IR_DTYPE_F64;
}

/* A Transpose node reading in and writing out, appended to the order; add_transpose makes
 * the output, a new value of type ty named name. */
static void add_transpose_to(Lay *L, uint32_t in, const int64_t *perm, uint32_t out,
                             const char *name) {
    IrGraph *g = L->g;
    uint32_t id = ir_node_add(g, IR_OP_TRANSPOSE, name, 1, 1, 0);
    IrNode *n = &g->nodes[id];
    n->opset = (int32_t)ir_graph_opset(g, "");
    n->inputs[0] = in;
    IrAttr *a = ir_node_attr(n, IR_ATTR_TRANSPOSE_PERM);
    a->present = true;
    a->n = LAYOUT_RANK;
    a->ints = ir_arena_memdup(g->arena, perm, LAYOUT_RANK * sizeof *perm);
    pass_set_output(g, id, 0, out);
    pass_order_push(&L->order, id);
    L->changed = true;
}

static uint32_t add_transpose(Lay *L, uint32_t in, const int64_t *perm, const IrType *ty,
                              const char *name) {
    uint32_t out = ir_value_add(L->g, name, ty, IR_VALUE_NODE);
    add_transpose_to(L, in, perm, out, name);
    return out;
}

/* The data of constant v (rank <= 4, right-aligned to NCHW) permuted by perm into a tensor
 * of the permuted dims; strip: drop leading 1s (a broadcast operand keeps its meaning). The
 * new data replaces v's when exclusive, else goes into a new constant; returns the value. */
static uint32_t permute_const(Lay *L, uint32_t v, const int64_t *perm, bool strip,
                              IrLayout layout, const char *suffix) {
    IrGraph *g = L->g;
    const IrTensor *t = g->values[v].tensor;
    int64_t sd[LAYOUT_RANK], dd[LAYOUT_RANK], sst[LAYOUT_RANK];
    int lead = LAYOUT_RANK - t->rank;
    for (int i = 0; i < LAYOUT_RANK; i++) sd[i] = i < lead ? 1 : t->dims[i - lead];
    int64_t s = 1;
    for (int i = LAYOUT_RANK; i-- > 0;) {
        sst[i] = s;
        s *= sd[i];
    }
    for (int i = 0; i < LAYOUT_RANK; i++) dd[i] = sd[perm[i]];
    int first = 0;
    if (strip && t->rank < LAYOUT_RANK)
        while (first < LAYOUT_RANK - 1 && dd[first] == 1) first++;
    IrTensor *nt = ir_tensor_new(g->arena, (IrDType)t->dtype, LAYOUT_RANK - first, dd + first);
    size_t esz = ir_dtype_bits((IrDType)t->dtype) / 8;
    int64_t o = 0, i0, i1, i2, i3;
    const char *src = t->data;
    char *dst = nt->data;
    for (i0 = 0; i0 < dd[0]; i0++)
        for (i1 = 0; i1 < dd[1]; i1++)
            for (i2 = 0; i2 < dd[2]; i2++)
                for (i3 = 0; i3 < dd[3]; i3++, o++) {
                    int64_t at = i0 * sst[perm[0]] + i1 * sst[perm[1]] + i2 * sst[perm[2]] +
                                 i3 * sst[perm[3]];
                    memcpy(dst + (size_t)o * esz, src + (size_t)at * esz, esz);
                }
    IrType ty = ir_type_tensor((IrDType)t->dtype, nt->rank, nt->dims);
    ty.layout = (uint8_t)(nt->rank == LAYOUT_RANK ? layout : IR_LAYOUT_PLAIN);
    bool exclusive = L->uses[v] == 1 && !pass_is_graph_output(g, v);
    for (uint32_t i = 0; i < g->n_inputs && exclusive; i++) exclusive = g->inputs[i] != v;
    L->changed = true;
    if (exclusive) {
        nt->name = t->name ? t->name : g->values[v].name;
        g->values[v].tensor = nt;
        g->values[v].type = ty;
        return v;
    }
    const char *name = pass_unique_name(g, g->values[v].name, suffix);
    nt->name = name;
    uint32_t nv = ir_value_add(g, name, &ty, IR_VALUE_CONST);
    g->values[nv].tensor = nt;
    g->values[nv].producer = IR_NONE;
    return nv;
}

/* The NHWC form of rank-4 value v: made once (a permuted constant or a Transpose). */
static uint32_t get_nhwc(Lay *L, uint32_t v) {
    if (v < L->n_orig && L->nhwc[v] != IR_NONE) return L->nhwc[v];
    IrGraph *g = L->g;
    uint32_t r;
    if (is_const(g, v)) {
        r = permute_const(L, v, to_nhwc, false, IR_LAYOUT_NHWC, ".nhwc");
    } else {
        IrType ty = permuted_type(&g->values[v].type, to_nhwc, IR_LAYOUT_NHWC);
        r = add_transpose(L, v, to_nhwc, &ty, pass_unique_name(g, g->values[v].name, ".nhwc"));
    }
    if (v < L->n_orig) L->nhwc[v] = r;
    return r;
}

/* An elementwise operand of an NHWC node: rank 4 -> its NHWC form; a constant of lower
 * rank -> broadcast against NCHW, permuted, leading 1s dropped; one element -> itself. */
static uint32_t get_operand(Lay *L, uint32_t v) {
    IrGraph *g = L->g;
    const IrType *t = &g->values[v].type;
    if (t->rank == LAYOUT_RANK) return get_nhwc(L, v);
    if (ir_type_numel(t) == 1) return v;
    if (L->bcast[v] == IR_NONE) L->bcast[v] = permute_const(L, v, to_nhwc, true,
                                                              IR_LAYOUT_PLAIN, ".nhwc");
    return L->bcast[v];
}

/* Conv weights (M,C/g,KH,KW) in the NHWC kernel's (KH,KW,C/g,M). */
static uint32_t get_rsck(Lay *L, uint32_t w) {
    if (L->rsck[w] != IR_NONE) return L->rsck[w];
    IrGraph *g = L->g;
    if (is_const(g, w)) {
        L->rsck[w] = permute_const(L, w, to_rsck, false, IR_LAYOUT_PLAIN, ".rsck");
    } else {
        IrType ty = permuted_type(&g->values[w].type, to_rsck, IR_LAYOUT_PLAIN);
        L->rsck[w] = add_transpose(L, w, to_rsck, &ty, pass_unique_name(g, g->values[w].name, ".rsck"));
    }
    return L->rsck[w];
}

/* ---- the decision ---- */

static bool act_ok(const Lay *L, uint32_t v) { return v != IR_NONE && is_static4(L->g, v); }

static bool native(const Lay *L, uint32_t v) { return v < L->n_orig && L->native[v]; }

/* An int64 constant of exactly n elements, or NULL. */
static const int64_t *const_i64(const IrGraph *g, uint32_t v, int64_t n) {
    if (v == IR_NONE || !is_const(g, v)) return NULL;
    const IrTensor *t = g->values[v].tensor;
    return t->dtype == IR_DTYPE_I64 && t->n_elems == n ? t->data : NULL;
}

/* Whether optional input k of n is absent or empty. */
static bool absent(const IrGraph *g, const IrNode *n, uint32_t k) {
    return !ir_has_input(n, k) || ir_type_numel(&g->values[n->inputs[k]].type) == 0;
}

typedef enum Role { R_NONE, R_CONV, R_POOL, R_ELT, R_CONCAT, R_PAD, R_RESIZE, R_BN } Role;

/* What node n can be in the NHWC region, from its op and operand shapes alone. */
static Role role_of(const Lay *L, const IrNode *n) {
    const IrGraph *g = L->g;
    if (n->n_outputs < 1 || n->outputs[0] == IR_NONE || !act_ok(L, n->outputs[0])) return R_NONE;
    for (uint32_t k = 1; k < n->n_outputs; k++)
        if (n->outputs[k] != IR_NONE && (n->op != IR_OP_BATCH_NORMALIZATION ||
                                          L->uses[n->outputs[k]] > 0 ||
                                          pass_is_graph_output(g, n->outputs[k])))
            return R_NONE;
    uint32_t x = n->n_inputs ? n->inputs[0] : IR_NONE;
    switch (n->op) {
    case IR_OP_CONV:
    case IR_OP_FUSED_CONV: {
        if (!act_ok(L, x) || !is_float(g, x) || !ir_has_input(n, 1) || !is_static4(g, n->inputs[1]) ||
            g->values[n->inputs[1]].type.dtype != g->values[x].type.dtype)
            return R_NONE;
        if (n->op == IR_OP_FUSED_CONV && ir_has_input(n, 3) && !act_ok(L, n->inputs[3])) return R_NONE;
        /* weights computed at run time (DequantizeLinear of a QDQ model) would need a
         * transpose every run: such a conv stays NCHW */
        if (!is_const(g, n->inputs[1])) return R_NONE;
        return R_CONV;
    }
    case IR_OP_MAX_POOL:
    case IR_OP_AVERAGE_POOL:
    case IR_OP_GLOBAL_AVERAGE_POOL:
    case IR_OP_GLOBAL_MAX_POOL:
        return act_ok(L, x) && is_float(g, x) ? R_POOL : R_NONE;
    case IR_OP_CONCAT: {
        int64_t axis = ir_attr_i(n, IR_ATTR_CONCAT_AXIS);
        if (axis != 1 && axis != 1 - LAYOUT_RANK) return R_NONE;
        for (uint32_t k = 0; k < n->n_inputs; k++)
            if (!act_ok(L, n->inputs[k])) return R_NONE;
        return R_CONCAT;
    }
    case IR_OP_PAD:
        if (!act_ok(L, x)) return R_NONE;
        if (n->opset < 11) {
            uint32_t np;
            const int64_t *p = ir_attr_ints(n, IR_ATTR_PAD_PADS, &np);
            return p && np == 2 * LAYOUT_RANK ? R_PAD : R_NONE;
        }
        return const_i64(g, ir_has_input(n, 1) ? n->inputs[1] : IR_NONE, 2 * LAYOUT_RANK) &&
                       absent(g, n, 3)
                   ? R_PAD
                   : R_NONE;
    case IR_OP_RESIZE: {
        uint32_t na;
        if (!act_ok(L, x) || n->opset < 11 || ir_attr_ints(n, IR_ATTR_RESIZE_AXES, &na))
            return R_NONE;
        if (!absent(g, n, 1) && (!is_const(g, n->inputs[1]) ||
                                 g->values[n->inputs[1]].tensor->n_elems != 2 * LAYOUT_RANK))
            return R_NONE;
        if (!absent(g, n, 2) && (!pass_const_f32(g, n->inputs[2]) ||
                                 g->values[n->inputs[2]].tensor->n_elems != LAYOUT_RANK))
            return R_NONE;
        if (!absent(g, n, 3) && !const_i64(g, n->inputs[3], LAYOUT_RANK)) return R_NONE;
        return R_RESIZE;
    }
    case IR_OP_BATCH_NORMALIZATION: {
        if (!act_ok(L, x) || g->values[x].type.dtype != IR_DTYPE_F32 || n->n_inputs < 5 ||
            ir_attr_i(n, IR_ATTR_BATCH_NORMALIZATION_TRAINING_MODE) != 0 ||
            ir_attr_i(n, IR_ATTR_BATCH_NORMALIZATION_SPATIAL) != 1)
            return R_NONE;
        int64_t c = g->values[x].type.dims[1];
        for (uint32_t k = 1; k < 5; k++) {
            const IrTensor *t = pass_const_f32(g, n->inputs[k]);
            if (!t || t->n_elems != c) return R_NONE;
        }
        return R_BN;
    }
    default:
        break;
    }
    if (!ir_op_has((IrOp)n->op, OPF_ELTWISE) || n->n_outputs != 1) return R_NONE;
    bool any = false;
    for (uint32_t k = 0; k < n->n_inputs; k++) {
        uint32_t v = n->inputs[k];
        if (v == IR_NONE) continue;
        const IrType *t = &g->values[v].type;
        if (t->rank == LAYOUT_RANK && act_ok(L, v)) any = true;
        else if (ir_type_numel(t) != 1 &&
                 !(t->rank >= 0 && t->rank < LAYOUT_RANK && is_const(g, v)))
            return R_NONE;
    }
    return any ? R_ELT : R_NONE;
}

/* Whether a node of role r joins the NHWC region: seeds always, the others when an
 * activation input is already NHWC at no cost. */
static bool joins(const Lay *L, const IrNode *n, Role r) {
    if (r == R_NONE) return false;
    if (r == R_CONV) return true;
    for (uint32_t k = 0; k < n->n_inputs; k++) {
        uint32_t v = n->inputs[k];
        if (v != IR_NONE && L->g->values[v].type.rank == LAYOUT_RANK && native(L, v)) return true;
    }
    return false;
}

/* ---- the rewrite ---- */

/* 1-D constant v with its halves (1 or 2 of LAYOUT_RANK entries) permuted into NHWC order
 * (pads, roi, scales, sizes): in place when only this node reads it, else a copy. */
static uint32_t permute_list(Lay *L, uint32_t v, int halves) {
    IrGraph *g = L->g;
    const IrTensor *t = g->values[v].tensor;
    IrTensor *nt = ir_tensor_new(g->arena, (IrDType)t->dtype, t->rank, t->dims);
    size_t esz = ir_dtype_bits((IrDType)t->dtype) / 8;
    for (int h = 0; h < halves; h++)
        for (int i = 0; i < LAYOUT_RANK; i++)
            memcpy((char *)nt->data + (size_t)(h * LAYOUT_RANK + i) * esz,
                   (const char *)t->data + (size_t)(h * LAYOUT_RANK + to_nhwc[i]) * esz, esz);
    if (L->uses[v] == 1 && !pass_is_graph_output(g, v) && g->values[v].kind == IR_VALUE_CONST) {
        nt->name = t->name ? t->name : g->values[v].name;
        g->values[v].tensor = nt;
        return v;
    }
    const char *name = pass_unique_name(g, g->values[v].name, ".nhwc");
    nt->name = name;
    uint32_t nv = ir_value_add(g, name, &g->values[v].type, IR_VALUE_CONST);
    g->values[nv].tensor = nt;
    g->values[nv].producer = IR_NONE;
    return nv;
}

/* Output v of node `node` becomes NHWC: a new value (v's name, unless v is a graph output)
 * and a Transpose back to v for the readers that want NCHW (dropped when none does). */
static void nhwc_output(Lay *L, uint32_t node, uint32_t v) {
    IrGraph *g = L->g;
    IrType ty = permuted_type(&g->values[v].type, to_nhwc, IR_LAYOUT_NHWC);
    const char *orig = g->values[v].name;
    bool keep = pass_is_graph_output(g, v);
    const char *nchw_name = keep ? orig : pass_unique_name(g, orig, ".nchw");
    const char *nhwc_name = keep ? pass_unique_name(g, orig, ".nhwc") : orig;
    g->values[v].name = nchw_name;
    uint32_t nv = ir_value_add(g, nhwc_name, &ty, IR_VALUE_NODE);
    g->values[nv].quant = g->values[v].quant;
    IrNode *n = &g->nodes[node];
    uint32_t k = 0;
    while (k < n->n_outputs && n->outputs[k] != v) k++;
    if (k == n->n_outputs) k = 0;
    pass_set_output(g, node, k, nv);
    pass_order_push(&L->order, node);
    add_transpose_to(L, nv, to_nchw, v, nchw_name);
    L->nhwc[v] = nv;
    L->native[v] = true;
}

static void set_int_attr(IrNode *n, IrAttrId id, int64_t v) {
    IrAttr *a = ir_node_attr(n, id);
    a->present = true;
    a->i = v;
}

/* Inference BatchNormalization on NHWC x: Mul by s = scale / sqrt(var + eps), Add
 * t = B - mean * s, both (C), in double rounded once (as fold-batchnorm does). */
static void convert_bn(Lay *L, uint32_t i) {
    IrGraph *g = L->g;
    uint32_t x = get_nhwc(L, g->nodes[i].inputs[0]);
    IrNode bn = g->nodes[i];
    int64_t c = g->values[bn.inputs[0]].type.dims[1];
    const float *scale = pass_const_f32(g, bn.inputs[1])->data;
    const float *bias = pass_const_f32(g, bn.inputs[2])->data;
    const float *mean = pass_const_f32(g, bn.inputs[3])->data;
    const float *var = pass_const_f32(g, bn.inputs[4])->data;
    double eps = ir_attr_f(&bn, IR_ATTR_BATCH_NORMALIZATION_EPSILON);
    char base[256];
    snprintf(base, sizeof base, "%s", bn.name && bn.name[0] ? bn.name : "bn");
    float *sd, *td;
    uint32_t sv = pass_add_const_f32(g, pass_unique_name(g, base, ".scale"), 1, &c, &sd);
    uint32_t tv = pass_add_const_f32(g, pass_unique_name(g, base, ".shift"), 1, &c, &td);
    for (int64_t k = 0; k < c; k++) {
        double s = scale[k] / sqrt((double)var[k] + eps);
        sd[k] = (float)s;
        td[k] = (float)(bias[k] - mean[k] * s);
    }
    uint32_t y = bn.outputs[0];
    IrType ty = permuted_type(&g->values[y].type, to_nhwc, IR_LAYOUT_NHWC);
    uint32_t mid = ir_value_add(g, pass_unique_name(g, base, ".scaled"), &ty, IR_VALUE_NODE);
    uint32_t mul = ir_node_add(g, IR_OP_MUL, pass_unique_name(g, base, ".mul"), 2, 1, 0);
    g->nodes[mul].opset = (int32_t)ir_graph_opset(g, "");
    g->nodes[mul].inputs[0] = x;
    g->nodes[mul].inputs[1] = sv;
    pass_set_output(g, mul, 0, mid);
    pass_order_push(&L->order, mul);
    uint32_t add = ir_node_add(g, IR_OP_ADD, base, 2, 1, 0);
    g->nodes[add].opset = (int32_t)ir_graph_opset(g, "");
    g->nodes[add].inputs[0] = mid;
    g->nodes[add].inputs[1] = tv;
    g->nodes[add].outputs[0] = y;
    g->nodes[i].dead = true;
    nhwc_output(L, add, y);
}

/* Rewrites node i of role r into its NHWC form. */
static void convert(Lay *L, uint32_t i, Role r) {
    IrGraph *g = L->g;
    if (r == R_BN) {
        convert_bn(L, i);
        return;
    }
    uint32_t n_in = g->nodes[i].n_inputs;
    uint32_t *in = ir_arena_memdup(g->arena, g->nodes[i].inputs, (n_in ? n_in : 1) * sizeof *in);
    switch (r) {
    case R_CONV:
        in[0] = get_nhwc(L, in[0]);
        in[1] = get_rsck(L, in[1]);
        if (g->nodes[i].op == IR_OP_FUSED_CONV && ir_has_input(&g->nodes[i], 3))
            in[3] = get_nhwc(L, in[3]);
        break;
    case R_POOL:
    case R_CONCAT:
        for (uint32_t k = 0; k < n_in; k++) in[k] = get_nhwc(L, in[k]);
        if (r == R_CONCAT) set_int_attr(&g->nodes[i], IR_ATTR_CONCAT_AXIS, LAYOUT_RANK - 1);
        break;
    case R_PAD:
        in[0] = get_nhwc(L, in[0]);
        if (g->nodes[i].opset < 11) {
            uint32_t np;
            IrAttr *a = ir_node_attr(&g->nodes[i], IR_ATTR_PAD_PADS);
            const int64_t *p = ir_attr_ints(&g->nodes[i], IR_ATTR_PAD_PADS, &np);
            int64_t *q = ir_arena_alloc(g->arena, 2 * LAYOUT_RANK * sizeof *q);
            for (int h = 0; h < 2; h++)
                for (int k = 0; k < LAYOUT_RANK; k++)
                    q[h * LAYOUT_RANK + k] = p[h * LAYOUT_RANK + to_nhwc[k]];
            a->ints = q;
        } else {
            in[1] = permute_list(L, in[1], 2);
        }
        break;
    case R_RESIZE:
        in[0] = get_nhwc(L, in[0]);
        for (uint32_t k = 1; k < 4 && k < n_in; k++)
            if (!absent(g, &g->nodes[i], k)) in[k] = permute_list(L, in[k], k == 1 ? 2 : 1);
        break;
    case R_ELT:
        for (uint32_t k = 0; k < n_in; k++)
            if (in[k] != IR_NONE) in[k] = get_operand(L, in[k]);
        break;
    default:
        IR_ASSERT(0);
    }
    g->nodes[i].inputs = in;
    nhwc_output(L, i, g->nodes[i].outputs[0]);
}

/* --io-layout nhwc: 4-D graph inputs become NHWC values of the same name; the old value,
 * renamed, is their Transpose to NCHW (dropped when nothing reads it). */
static void io_inputs(Lay *L) {
    IrGraph *g = L->g;
    for (uint32_t k = 0; k < g->n_inputs; k++) {
        uint32_t v = g->inputs[k];
        if (!is_static4(g, v) || g->values[v].tensor) continue;
        IrType ty = permuted_type(&g->values[v].type, to_nhwc, IR_LAYOUT_NHWC);
        const char *orig = g->values[v].name;
        g->values[v].name = pass_unique_name(g, orig, ".nchw");
        uint32_t nv = ir_value_add(g, orig, &ty, IR_VALUE_INPUT);
        g->values[nv].producer = IR_NONE;
        g->values[nv].quant = g->values[v].quant;
        g->inputs[k] = nv;
        add_transpose_to(L, nv, to_nchw, v, g->values[v].name);
        L->nhwc[v] = nv;
        L->native[v] = true;
    }
}

/* --io-layout nhwc: 4-D graph outputs become their NHWC forms, under their names. */
static void io_outputs(Lay *L) {
    IrGraph *g = L->g;
    for (uint32_t k = 0; k < g->n_outputs; k++) {
        uint32_t v = g->outputs[k];
        if (v >= L->n_orig || !is_static4(g, v) || g->values[v].kind == IR_VALUE_INPUT) continue;
        uint32_t nv = get_nhwc(L, v);
        if (nv == v || g->values[nv].kind == IR_VALUE_INPUT) continue;
        const char *orig = g->values[v].name;
        g->values[v].name = pass_unique_name(g, orig, ".nchw");
        if (g->values[nv].tensor) g->values[nv].tensor->name = orig;
        g->values[nv].name = orig;
        for (uint32_t j = k; j < g->n_outputs; j++)
            if (g->outputs[j] == v) g->outputs[j] = nv;
    }
}


/* ---- Transpose pairs ---- */

/* The perm of Transpose node n over rank r into p (absent: reversed). */
static bool perm_of(const IrNode *n, int r, int64_t *p) {
    uint32_t np;
    const int64_t *a = ir_attr_ints(n, IR_ATTR_TRANSPOSE_PERM, &np);
    if (a && (int)np != r) return false;
    for (int i = 0; i < r; i++) {
        p[i] = a ? a[i] : r - 1 - i;
        if (p[i] < 0 || p[i] >= r) return false;
    }
    return true;
}

/* Whether a live node reads v where the layout tag matters (an OPF_LAYOUT op), other than
 * node `except`. */
static bool read_by_layout_op(const IrGraph *g, uint32_t v, uint32_t except) {
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead || i == except || !ir_op_has((IrOp)n->op, OPF_LAYOUT)) continue;
        for (uint32_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == v) return true;
    }
    return false;
}

/* Whether v is written by a node whose emitter reads the tag of its output (an OPF_LAYOUT
 * op writes the layout its own inputs and rewrite chose): then v's tag cannot change after
 * the fact. Graph inputs, constants and other ops' results are bytes whatever the tag. */
static bool layout_fixed_by_producer(const IrGraph *g, uint32_t v) {
    const IrValue *val = &g->values[v];
    return val->kind == IR_VALUE_NODE && val->producer != IR_NONE &&
           ir_op_has((IrOp)g->nodes[val->producer].op, OPF_LAYOUT);
}

/* Whether Transpose node t keeps the bytes in order (it moves only dimensions of size 1). */
static bool moves_only_ones(const IrGraph *g, const IrNode *t) {
    const IrType *tx = &g->values[t->inputs[0]].type;
    int64_t p[IR_MAX_RANK];
    if (tx->rank < 1 || !ir_type_is_static(tx) || !perm_of(t, tx->rank, p)) return false;
    int64_t last = -1;
    for (int i = 0; i < tx->rank; i++) {
        if (tx->dims[p[i]] == 1) continue;
        if (p[i] < last) return false;
        last = p[i];
    }
    return true;
}

/* Readers that copy bytes whatever the dims (Reshape, Flatten, Squeeze, Unsqueeze with
 * constant shape or axes) read the input of a byte-preserving Transpose directly, e.g. the
 * (N,1,1,C) result of an NHWC GlobalAveragePool before Flatten. */
static bool skip_byte_transposes(IrGraph *g) {
    bool changed = false;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        IrNode *r = &g->nodes[i];
        bool copy = r->op == IR_OP_RESHAPE || r->op == IR_OP_FLATTEN || r->op == IR_OP_SQUEEZE ||
                    r->op == IR_OP_UNSQUEEZE;
        if (r->dead || !copy || r->n_inputs < 1 || r->inputs[0] == IR_NONE) continue;
        for (uint32_t k = 1; k < r->n_inputs && copy; k++)
            copy = r->inputs[k] == IR_NONE || g->values[r->inputs[k]].kind == IR_VALUE_CONST;
        const IrValue *z = &g->values[r->inputs[0]];
        if (!copy || z->kind != IR_VALUE_NODE || z->producer == IR_NONE) continue;
        const IrNode *t = &g->nodes[z->producer];
        if (t->dead || t->op != IR_OP_TRANSPOSE || !moves_only_ones(g, t)) continue;
        r->inputs[0] = t->inputs[0];
        changed = true;
    }
    return changed;
}

/* Transpose(P) then Transpose(P^-1): the second's readers read the first's input (which
 * takes the second's place and name where that was a graph output). The layout tags must
 * agree, or not matter to the readers nor to the input's producer (then the input takes
 * the tag the readers expect).
 * Unread Transposes go. */
static bool cancel_pairs(IrGraph *g) {
    bool changed = false, again = true;
    while (again) {
        again = false;
        for (uint32_t i = 0; i < g->n_nodes; i++) {
            IrNode *t2 = &g->nodes[i];
            if (t2->dead || t2->op != IR_OP_TRANSPOSE || t2->outputs[0] == IR_NONE) continue;
            uint32_t y = t2->inputs[0], z = t2->outputs[0];
            const IrValue *yv = &g->values[y];
            if (yv->kind != IR_VALUE_NODE || yv->producer == IR_NONE) continue;
            uint32_t j = yv->producer;
            const IrNode *t1 = &g->nodes[j];
            if (t1->dead || t1->op != IR_OP_TRANSPOSE) continue;
            uint32_t x = t1->inputs[0];
            /* a graph output z is taken over by x (and its name) when x is an intermediate */
            bool out = pass_is_graph_output(g, z);
            if (out && (g->values[x].kind != IR_VALUE_NODE || pass_is_graph_output(g, x)))
                continue;
            int r = g->values[x].type.rank;
            int64_t p1[IR_MAX_RANK], p2[IR_MAX_RANK];
            if (r < 1 || r != g->values[z].type.rank || !perm_of(t1, r, p1) || !perm_of(t2, r, p2))
                continue;
            bool identity = true;
            for (int k = 0; k < r && identity; k++) identity = p1[p2[k]] == k;
            if (!identity) continue;
            uint8_t lx = g->values[x].type.layout, lz = g->values[z].type.layout;
            if (lx != lz && read_by_layout_op(g, z, IR_NONE)) {
                if (read_by_layout_op(g, x, j) || pass_is_graph_output(g, x) ||
                    layout_fixed_by_producer(g, x))
                    continue;
                g->values[x].type.layout = lz;
            }
            ir_replace_uses(g, z, x);
            if (out) {
                const char *name = g->values[z].name;
                g->values[z].name = pass_unique_name(g, name, ".dead");
                g->values[x].name = name;
                for (uint32_t k = 0; k < g->n_outputs; k++)
                    if (g->outputs[k] == z) g->outputs[k] = x;
            }
            g->nodes[i].dead = true;
            changed = again = true;
        }
    }
    changed |= skip_byte_transposes(g);
    uint32_t *uses = ir_use_counts(g);
    for (uint32_t i = g->n_nodes; i-- > 0;) {
        IrNode *n = &g->nodes[i];
        if (n->dead || n->op != IR_OP_TRANSPOSE || n->outputs[0] == IR_NONE ||
            uses[n->outputs[0]] > 0)
            continue;
        n->dead = true;
        changed = true;
        if (uses[n->inputs[0]] > 0) uses[n->inputs[0]]--;
    }
    free(uses);
    if (changed) ir_graph_compact(g);
    return changed;
}

/* ---- entry points ---- */

bool pass_layout_io(IrGraph *g, bool io_nhwc, bool propagate, Diag *d) {
    (void)d;
    if (g->n_subgraphs > 0) propagate = false;
    Lay L;
    memset(&L, 0, sizeof L);
    L.g = g;
    L.n_orig = g->n_values;
    size_t nv = g->n_values ? g->n_values : 1;
    L.nhwc = malloc(nv * sizeof *L.nhwc);
    L.bcast = malloc(nv * sizeof *L.bcast);
    L.rsck = malloc(nv * sizeof *L.rsck);
    L.native = calloc(nv, sizeof *L.native);
    IR_ASSERT(L.nhwc && L.bcast && L.rsck && L.native);
    for (size_t v = 0; v < nv; v++) L.nhwc[v] = L.bcast[v] = L.rsck[v] = IR_NONE;
    L.uses = ir_use_counts(g);
    uint32_t n_nodes = g->n_nodes; /* the model's nodes; the ones added here are placed */
    if (io_nhwc) io_inputs(&L);
    for (uint32_t i = 0; i < n_nodes; i++) {
        if (g->nodes[i].dead) continue;
        Role r = propagate ? role_of(&L, &g->nodes[i]) : R_NONE;
        if (joins(&L, &g->nodes[i], r)) convert(&L, i, r);
        else pass_order_push(&L.order, i);
    }
    if (io_nhwc) io_outputs(&L);
    bool changed = L.changed;
    if (changed) pass_reorder_nodes(g, L.order.ids, L.order.n);
    changed |= cancel_pairs(g);
    free(L.nhwc);
    free(L.bcast);
    free(L.rsck);
    free(L.native);
    free(L.uses);
    free(L.order.ids);
    return changed;
}

bool pass_layout(IrGraph *g, Diag *d) { return pass_layout_io(g, false, true, d); }
