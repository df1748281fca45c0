/* C backend emitter of FlexAttention (ai.onnx.preview 1): softmax(score_mod(Q K^T * scale))
 * then prob_mod, times V, one query row at a time through runtime/rt_flex.h, with the
 * modifier subgraphs compiled to inline scalar code.
 *
 * Design.
 * - By the time the backend runs, shape inference has typed each modifier subgraph from the
 *   node's static shapes (scores: (B, Hq, L, S) in the softmax precision) and the fold pass
 *   has turned everything that depends only on shapes (Shape, Range, Reshape of the index
 *   ranges, the comparisons that build a causal mask...) into constants. What is left is a
 *   chain of elementwise nodes over the scores, constants and values of the enclosing graph.
 * - Such a subgraph is a scalar function of one score and of the position (b, h, i, j). The
 *   emitter walks its nodes in order and writes one `const T xN = expr;` per node result the
 *   output needs, inside the loop over a row's keys j: the subgraph input is row[j], a
 *   scalar constant becomes a literal, any other constant or enclosing value is read from
 *   the weights or its buffer at its broadcast index (its shape must broadcast to
 *   (B, Hq, L, S)). A node that is not elementwise is refused with a diagnostic naming it.
 * - Memory: the only scratch is one row of S scores in the softmax precision, on the stack
 *   of NAME_run (bounded by FLEX_MAX_ROW_BYTES); the full (B, Hq, L, S) score tensor never
 *   exists, and the subgraphs need no arena.
 * - Numerics follow ONNX's reference: Q and K are pre-scaled by sqrt(scale) in the input
 *   type (sqrt taken in float32), the dot product is rounded to the input type, softmax and
 *   the product with V run in the softmax precision (float, or double for double inputs or
 *   softmax_precision=DOUBLE); float16/bfloat16 softmax precisions are refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/c/cgen.h"

#define FLEX_MAX_ROW_BYTES 262144 /* one row of scores lives on the stack of NAME_run */
#define FLEX_RANK 4               /* FlexAttention's tensors are all rank 4 */

static const char *const flex_idx[FLEX_RANK] = {"b", "h", "i", "j"};

/* One modifier subgraph being compiled to scalar code. */
typedef struct FlexSub {
    CgenCtx *cx;              /* the enclosing graph's context */
    const IrNode *owner;      /* the FlexAttention node */
    const char *what;         /* "score_mod" or "prob_mod" */
    const IrGraph *g;         /* the subgraph */
    const int64_t *woff;      /* per value id of g: offset in the weights blob, -1 if none */
    const char **val;         /* per value id of g: C expression of its element, or NULL */
    int64_t full[FLEX_RANK];  /* B, Hq, L, S */
} FlexSub;

/* A C literal of element k of a constant tensor (numeric, not 16-bit float); NULL if the
 * type has no scalar form here. */
static const char *flex_lit(CgenCtx *cx, const IrTensor *t, int64_t k) {
    char buf[64];
    switch ((IrDType)t->dtype) {
    case IR_DTYPE_F32:
    case IR_DTYPE_F64: {
        bool f = t->dtype == IR_DTYPE_F32;
        double v = f ? (double)((const float *)t->data)[k] : ((const double *)t->data)[k];
        if (isnan(v)) return "NAN";
        if (isinf(v)) return v > 0 ? "INFINITY" : "(-INFINITY)";
        snprintf(buf, sizeof buf, f ? "%.9g" : "%.17g", v);
        if (!strpbrk(buf, ".en")) strcat(buf, ".0");
        return cgen_fmt(cx, v < 0 ? "(%s%s)" : "%s%s", buf, f ? "f" : "");
    }
    case IR_DTYPE_I64: {
        int64_t v = ((const int64_t *)t->data)[k];
        if (v == INT64_MIN) return "INT64_MIN";
        return cgen_fmt(cx, "((int64_t)%lldLL)", (long long)v);
    }
    case IR_DTYPE_I32: return cgen_fmt(cx, "((int32_t)%ld)", (long)((const int32_t *)t->data)[k]);
    case IR_DTYPE_I16: return cgen_fmt(cx, "((int16_t)%d)", ((const int16_t *)t->data)[k]);
    case IR_DTYPE_I8: return cgen_fmt(cx, "((int8_t)%d)", ((const int8_t *)t->data)[k]);
    case IR_DTYPE_U8:
    case IR_DTYPE_BOOL: return cgen_fmt(cx, "((uint8_t)%u)", ((const uint8_t *)t->data)[k]);
    case IR_DTYPE_U16: return cgen_fmt(cx, "((uint16_t)%u)", ((const uint16_t *)t->data)[k]);
    case IR_DTYPE_U32:
        return cgen_fmt(cx, "((uint32_t)%luUL)", (unsigned long)((const uint32_t *)t->data)[k]);
    case IR_DTYPE_U64:
        return cgen_fmt(cx, "((uint64_t)%lluULL)",
                        (unsigned long long)((const uint64_t *)t->data)[k]);
    default: return NULL;
    }
}

/* Whether t may take part in scalar subgraph code (numeric, not 16-bit or narrower float). */
static bool flex_scalar_type(IrDType t) {
    switch (t) {
    case IR_DTYPE_F32: case IR_DTYPE_F64: case IR_DTYPE_I8: case IR_DTYPE_I16:
    case IR_DTYPE_I32: case IR_DTYPE_I64: case IR_DTYPE_U8: case IR_DTYPE_U16:
    case IR_DTYPE_U32: case IR_DTYPE_U64: case IR_DTYPE_BOOL: return true;
    default: return false;
    }
}

static bool flex_is_float(IrDType t) { return t == IR_DTYPE_F32 || t == IR_DTYPE_F64; }

/* Unsigned types (and bool): no `x < 0` test on them, -Wextra calls it always false. */
static bool flex_is_unsigned(IrDType t) {
    return t == IR_DTYPE_U8 || t == IR_DTYPE_U16 || t == IR_DTYPE_U32 || t == IR_DTYPE_U64 ||
           t == IR_DTYPE_BOOL;
}

/* The flat index, at position (b, h, i, j), of an element of a tensor of type t broadcast
 * to (B, Hq, L, S); NULL when t does not broadcast there. */
static const char *flex_bcast_index(FlexSub *fs, const IrType *t) {
    CgenCtx *cx = fs->cx;
    if (t->kind != IR_TYPE_TENSOR || !ir_type_is_static(t)) return NULL;
    CWriter e;
    cw_init(&e);
    int64_t stride = 1;
    bool ok = true;
    for (int d = t->rank - 1; d >= 0 && ok; d--) {
        int td = d - (t->rank - FLEX_RANK);
        int64_t dim = t->dims[d];
        if (dim == 1) continue;
        if (td < 0 || dim != fs->full[td]) {
            ok = false;
            break;
        }
        if (e.len) cw_raw(&e, " + ");
        if (stride == 1) cw_raw(&e, "%s", flex_idx[td]);
        else cw_raw(&e, "%s * %lld", flex_idx[td], (long long)stride);
        stride *= dim;
    }
    const char *r = ok ? cgen_fmt(cx, "%s", e.len ? e.buf : "0") : NULL;
    cw_free(&e);
    return r;
}

/* The C expression of value v's element at (b, h, i, j); NULL after a diagnostic. */
static const char *flex_value(FlexSub *fs, uint32_t v) {
    CgenCtx *cx = fs->cx;
    if (fs->val[v]) return fs->val[v];
    const IrValue *val = &fs->g->values[v];
    const IrType *t = &val->type;
    if (t->kind != IR_TYPE_TENSOR || !flex_scalar_type((IrDType)t->dtype)) {
        cgen_unsupported(cx, fs->owner, "%s value '%s' of type %s (scalar code takes float, "
                         "double, integer and bool values)", fs->what, val->name,
                         cgen_type_str(cx, t));
        return NULL;
    }
    const char *idx = flex_bcast_index(fs, t);
    if (!idx) {
        cgen_unsupported(cx, fs->owner, "%s value '%s' of shape %s, which does not broadcast "
                         "to the scores' shape", fs->what, val->name, cgen_type_str(cx, t));
        return NULL;
    }
    const char *ct = bundle_ctype((IrDType)t->dtype);
    if (val->kind == IR_VALUE_CONST && val->tensor && val->tensor->data) {
        if (val->tensor->n_elems == 1) return fs->val[v] = flex_lit(cx, val->tensor, 0);
        if (fs->woff[v] < 0) {
            cgen_unsupported(cx, fs->owner, "%s constant '%s' outside the weights", fs->what,
                             val->name);
            return NULL;
        }
        cx->uses_w = true;
        return fs->val[v] = cgen_fmt(cx, "((const %s *)(const void *)(w + %lld))[%s]", ct,
                                     (long long)fs->woff[v], idx);
    }
    if (val->kind == IR_VALUE_OUTER && val->producer < cx->b.g->n_values)
        return fs->val[v] = cgen_fmt(cx, "%s[%s]", cgen_ptr(cx, val->producer), idx);
    cgen_unsupported(cx, fs->owner, "%s value '%s' (neither a node result, a constant nor an "
                     "enclosing graph's value)", fs->what, val->name);
    return NULL;
}

/* The math function name for float type t: "expf" / "exp". */
static const char *flex_fn(FlexSub *fs, IrDType t, const char *name) {
    return cgen_fmt(fs->cx, "%s%s", name, t == IR_DTYPE_F32 ? "f" : "");
}

/* A typed constant 1 or 0 for float type t. */
static const char *flex_one(IrDType t) { return t == IR_DTYPE_F32 ? "1.0f" : "1.0"; }
static const char *flex_zero(IrDType t) { return t == IR_DTYPE_F32 ? "0.0f" : "0.0"; }

static const char *flex_flit(FlexSub *fs, IrDType t, double v) {
    return cgen_fmt(fs->cx, "(%s)", cgen_flit(fs->cx, v, t != IR_DTYPE_F32));
}

/* The C expression of node n's (single) result from its inputs' expressions e[k] (of types
 * it[k]), or NULL after a diagnostic. */
static const char *flex_node_expr(FlexSub *fs, const IrNode *n, const char **e,
                                  const IrDType *it, IrDType ot) {
    CgenCtx *cx = fs->cx;
    const char *ct = bundle_ctype(ot);
    bool fl = flex_is_float(ot), fin = n->n_inputs > 0 && flex_is_float(it[0]);
    const char *a = n->n_inputs > 0 ? e[0] : NULL, *b = n->n_inputs > 1 ? e[1] : NULL;
    switch ((IrOp)n->op) {
    case IR_OP_IDENTITY: return a;
    case IR_OP_ADD: return cgen_fmt(cx, "(%s)(%s + %s)", ct, a, b);
    case IR_OP_SUB: return cgen_fmt(cx, "(%s)(%s - %s)", ct, a, b);
    case IR_OP_MUL: return cgen_fmt(cx, "(%s)(%s * %s)", ct, a, b);
    case IR_OP_DIV:
        if (!fl) break; /* integer division by zero has no defined result in C */
        return cgen_fmt(cx, "(%s / %s)", a, b);
    case IR_OP_POW:
        if (!fl) break;
        return cgen_fmt(cx, "%s(%s, (%s)%s)", flex_fn(fs, ot, "pow"), a, ct, b);
    case IR_OP_MAX:
    case IR_OP_MIN: {
        const char *op = n->op == IR_OP_MAX ? ">" : "<", *r = a;
        for (uint32_t k = 1; k < n->n_inputs; k++) /* NaN propagates, as numpy's does */
            r = fl ? cgen_fmt(cx, "(%s != %s || %s %s %s ? %s : %s)", r, r, r, op, e[k], r, e[k])
                   : cgen_fmt(cx, "(%s %s %s ? %s : %s)", r, op, e[k], r, e[k]);
        return r;
    }
    case IR_OP_EQUAL: return cgen_fmt(cx, "(uint8_t)(%s == %s)", a, b);
    case IR_OP_LESS: return cgen_fmt(cx, "(uint8_t)(%s < %s)", a, b);
    case IR_OP_LESS_OR_EQUAL: return cgen_fmt(cx, "(uint8_t)(%s <= %s)", a, b);
    case IR_OP_GREATER: return cgen_fmt(cx, "(uint8_t)(%s > %s)", a, b);
    case IR_OP_GREATER_OR_EQUAL: return cgen_fmt(cx, "(uint8_t)(%s >= %s)", a, b);
    case IR_OP_AND: return cgen_fmt(cx, "(uint8_t)(%s && %s)", a, b);
    case IR_OP_OR: return cgen_fmt(cx, "(uint8_t)(%s || %s)", a, b);
    case IR_OP_XOR: return cgen_fmt(cx, "(uint8_t)(!%s != !%s)", a, b);
    case IR_OP_NOT: return cgen_fmt(cx, "(uint8_t)!%s", a);
    case IR_OP_IS_NAN: return fin ? cgen_fmt(cx, "(uint8_t)(%s != %s)", a, a) : NULL;
    case IR_OP_WHERE: return cgen_fmt(cx, "(%s ? %s : %s)", a, b, e[2]);
    case IR_OP_NEG: return cgen_fmt(cx, "(%s)(-%s)", ct, a);
    case IR_OP_ABS:
        if (fl) return cgen_fmt(cx, "%s(%s)", flex_fn(fs, ot, "fabs"), a);
        if (flex_is_unsigned(ot)) return a;
        return cgen_fmt(cx, "(%s)(%s < 0 ? -%s : %s)", ct, a, a, a);
    case IR_OP_SIGN:
        if (flex_is_unsigned(ot)) return cgen_fmt(cx, "(%s)(%s > 0)", ct, a);
        return cgen_fmt(cx, "(%s)((%s > 0) - (%s < 0))", ct, a, a);
    case IR_OP_CAST:
        if (ot == IR_DTYPE_BOOL) return cgen_fmt(cx, "(uint8_t)(%s != 0)", a);
        return cgen_fmt(cx, "(%s)%s", ct, a);
    case IR_OP_RELU: return cgen_fmt(cx, "(%s < 0 ? (%s)0 : %s)", a, ct, a);
    case IR_OP_CLIP: {
        const char *r = a, *lo = b, *hi = n->n_inputs > 2 ? e[2] : NULL;
        if (n->opset < 11) { /* bounds are attributes before opset 11 */
            if (!fl) return NULL;
            lo = flex_flit(fs, ot, ir_attr_f(n, IR_ATTR_CLIP_MIN));
            hi = flex_flit(fs, ot, ir_attr_f(n, IR_ATTR_CLIP_MAX));
        }
        if (lo) r = cgen_fmt(cx, "(%s < %s ? %s : %s)", r, lo, lo, r);
        if (hi) r = cgen_fmt(cx, "(%s > %s ? %s : %s)", r, hi, hi, r);
        return r;
    }
    default: break;
    }
    if (!fl) return NULL;
    /* float-only unary math */
    switch ((IrOp)n->op) {
    case IR_OP_EXP: return cgen_fmt(cx, "%s(%s)", flex_fn(fs, ot, "exp"), a);
    case IR_OP_LOG: return cgen_fmt(cx, "%s(%s)", flex_fn(fs, ot, "log"), a);
    case IR_OP_SQRT: return cgen_fmt(cx, "%s(%s)", flex_fn(fs, ot, "sqrt"), a);
    case IR_OP_TANH: return cgen_fmt(cx, "%s(%s)", flex_fn(fs, ot, "tanh"), a);
    case IR_OP_SIN: return cgen_fmt(cx, "%s(%s)", flex_fn(fs, ot, "sin"), a);
    case IR_OP_COS: return cgen_fmt(cx, "%s(%s)", flex_fn(fs, ot, "cos"), a);
    case IR_OP_ERF: return cgen_fmt(cx, "%s(%s)", flex_fn(fs, ot, "erf"), a);
    case IR_OP_FLOOR: return cgen_fmt(cx, "%s(%s)", flex_fn(fs, ot, "floor"), a);
    case IR_OP_CEIL: return cgen_fmt(cx, "%s(%s)", flex_fn(fs, ot, "ceil"), a);
    case IR_OP_ROUND: return cgen_fmt(cx, "%s(%s)", flex_fn(fs, ot, "nearbyint"), a);
    case IR_OP_RECIPROCAL: return cgen_fmt(cx, "(%s / %s)", flex_one(ot), a);
    case IR_OP_SIGMOID:
        return cgen_fmt(cx, "(%s / (%s + %s(-%s)))", flex_one(ot), flex_one(ot),
                        flex_fn(fs, ot, "exp"), a);
    case IR_OP_SOFTPLUS:
        return cgen_fmt(cx, "%s(%s(%s) + %s)", flex_fn(fs, ot, "log"), flex_fn(fs, ot, "exp"), a,
                        flex_one(ot));
    case IR_OP_LEAKY_RELU:
        return cgen_fmt(cx, "(%s < %s ? %s * %s : %s)", a, flex_zero(ot),
                        flex_flit(fs, ot, ir_attr_f(n, IR_ATTR_LEAKY_RELU_ALPHA)), a, a);
    default: return NULL;
    }
}

/* Marks in need[] the values of fs->g that output `out` depends on. */
static void flex_mark_needed(const FlexSub *fs, uint32_t out, bool *need) {
    need[out] = true;
    for (uint32_t i = fs->g->n_nodes; i-- > 0;) {
        const IrNode *n = &fs->g->nodes[i];
        if (n->dead) continue;
        bool used = false;
        for (uint32_t k = 0; k < n->n_outputs; k++)
            used |= n->outputs[k] != IR_NONE && need[n->outputs[k]];
        if (!used) continue;
        for (uint32_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] != IR_NONE) need[n->inputs[k]] = true;
    }
}

/* Whether t is (B, Hq, L, S) of element type at. */
static bool flex_is_full(const IrType *t, IrDType at, const int64_t *full) {
    if (t->kind != IR_TYPE_TENSOR || t->dtype != at || t->rank != FLEX_RANK) return false;
    for (int d = 0; d < FLEX_RANK; d++)
        if (t->dims[d] != full[d]) return false;
    return true;
}

/* Writes the body of the loop over j that applies subgraph `sub` to row[j]. */
static bool flex_emit_sub(CgenCtx *cx, const IrNode *owner, const char *what,
                          const IrGraph *sub, IrDType at, const int64_t *full) {
    IrType want = ir_type_tensor(at, FLEX_RANK, full);
    if (sub->n_inputs != 1 || sub->n_outputs != 1)
        return cgen_unsupported(cx, owner, "a %s with %u inputs and %u outputs (1 and 1 expected)",
                                what, sub->n_inputs, sub->n_outputs);
    const IrType *tin = &sub->values[sub->inputs[0]].type;
    const IrType *tout = &sub->values[sub->outputs[0]].type;
    if (!flex_is_full(tin, at, full) || !flex_is_full(tout, at, full))
        return cgen_unsupported(cx, owner, "a %s typed %s -> %s (both %s expected)", what,
                                cgen_type_str(cx, tin), cgen_type_str(cx, tout),
                                cgen_type_str(cx, &want));
    uint32_t gi = 0;
    while (gi < cx->b.n_graphs && cx->b.graphs[gi] != sub) gi++;
    IR_ASSERT(gi < cx->b.n_graphs);
    FlexSub fs = {cx, owner, what, sub, cx->b.graph_weight_offset[gi], NULL, {0}};
    memcpy(fs.full, full, sizeof fs.full);
    fs.val = calloc(sub->n_values + 1, sizeof *fs.val);
    bool *need = calloc(sub->n_values + 1, sizeof *need);
    const char **e = NULL;
    IrDType *it = NULL;
    IR_ASSERT(fs.val && need);
    fs.val[sub->inputs[0]] = "row[j]";
    flex_mark_needed(&fs, sub->outputs[0], need);
    CWriter *w = cx->w;
    bool ok = true;
    cw_open(w, "for (j = 0; j < %lld; j++)", (long long)full[3]);
    cw_comment(w, "%s '%s'", what, sub->name);
    for (uint32_t i = 0; i < sub->n_nodes && ok; i++) {
        const IrNode *n = &sub->nodes[i];
        if (n->dead || n->n_outputs < 1 || n->outputs[0] == IR_NONE || !need[n->outputs[0]])
            continue;
        uint32_t o = n->outputs[0];
        const IrType *ot = &sub->values[o].type;
        bool eltwise = ir_op_has((IrOp)n->op, OPF_ELTWISE) || n->op == IR_OP_CAST ||
                       n->op == IR_OP_IDENTITY || n->op == IR_OP_CLIP || n->op == IR_OP_WHERE;
        if (n->n_outputs != 1 || !eltwise) {
            ok = cgen_unsupported(cx, owner, "%s node '%s' (%s): scalar code takes elementwise "
                                  "nodes only", what, n->name, n->op_type);
            break;
        }
        free(e);
        free(it);
        e = calloc(n->n_inputs + 1, sizeof *e);
        it = calloc(n->n_inputs + 1, sizeof *it);
        IR_ASSERT(e && it);
        for (uint32_t k = 0; k < n->n_inputs && ok; k++) {
            if (n->inputs[k] == IR_NONE) continue;
            it[k] = (IrDType)sub->values[n->inputs[k]].type.dtype;
            ok = (e[k] = flex_value(&fs, n->inputs[k])) != NULL;
        }
        if (!ok) break;
        if (!flex_scalar_type((IrDType)ot->dtype) || !flex_bcast_index(&fs, ot)) {
            ok = cgen_unsupported(cx, owner, "%s node '%s' (%s) with result %s", what, n->name,
                                  n->op_type, cgen_type_str(cx, ot));
            break;
        }
        const char *x = n->n_inputs > 0 && e[0] ? flex_node_expr(&fs, n, e, it, (IrDType)ot->dtype)
                                                : NULL;
        if (!x) {
            ok = cgen_unsupported(cx, owner, "%s node '%s' (%s on %s) in scalar code", what,
                                  n->name, n->op_type, ir_dtype_name((IrDType)ot->dtype));
            break;
        }
        cw_line(w, "const %s x%u = %s; /* %s */", bundle_ctype((IrDType)ot->dtype), o, x,
                n->op_type);
        fs.val[o] = cgen_fmt(cx, "x%u", o);
    }
    const char *r = ok ? flex_value(&fs, sub->outputs[0]) : NULL;
    if (r && strcmp(r, "row[j]") != 0) cw_line(w, "row[j] = %s;", r);
    cw_close(w, NULL);
    free(e);
    free(it);
    free(need);
    free(fs.val);
    return ok && r;
}

static const IrGraph *flex_graph(CgenCtx *cx, const IrNode *n, IrAttrId id) {
    const IrAttr *a = ir_node_attr(n, id);
    if (!a || !a->present || a->kind != IR_ATTR_KIND_GRAPH || a->n < 1 || !a->graphs ||
        a->graphs[0] >= cx->b.g->n_subgraphs)
        return NULL;
    return cx->b.g->subgraphs[a->graphs[0]];
}

static bool emit_flex_attention(CgenCtx *cx, const IrNode *n) {
    uint32_t q = n->inputs[0], k = n->inputs[1], v = n->inputs[2], y = n->outputs[0];
    const IrType *tq = cgen_type(cx, q), *tk = cgen_type(cx, k), *tv = cgen_type(cx, v);
    const IrType *ty = cgen_type(cx, y);
    IrDType t = (IrDType)tq->dtype;
    const char *sfx = cgen_float_sfx(t);
    if (!sfx || tk->dtype != t || tv->dtype != t || ty->dtype != t)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    if (tq->rank != FLEX_RANK || tk->rank != FLEX_RANK || tv->rank != FLEX_RANK ||
        ty->rank != FLEX_RANK)
        return cgen_unsupported(cx, n, "inputs of rank other than 4");
    int64_t B = tq->dims[0], Hq = tq->dims[1], L = tq->dims[2], D = tq->dims[3];
    int64_t Hkv = tk->dims[1], S = tk->dims[2], Dv = tv->dims[3];
    if (tk->dims[0] != B || tv->dims[0] != B || tv->dims[1] != Hkv || tv->dims[2] != S ||
        tk->dims[3] != D || Hkv <= 0 || Hq % Hkv != 0 || ty->dims[0] != B || ty->dims[1] != Hq ||
        ty->dims[2] != L || ty->dims[3] != Dv)
        return cgen_unsupported(cx, n, "Q %s, K %s, V %s -> Y %s (mismatched shapes)",
                                cgen_type_str(cx, tq), cgen_type_str(cx, tk),
                                cgen_type_str(cx, tv), cgen_type_str(cx, ty));
    IrDType at = t == IR_DTYPE_F64 ? IR_DTYPE_F64 : IR_DTYPE_F32;
    if (ir_attr_present(n, IR_ATTR_FLEX_ATTENTION_SOFTMAX_PRECISION)) {
        int64_t sp = ir_attr_i(n, IR_ATTR_FLEX_ATTENTION_SOFTMAX_PRECISION);
        if (sp != IR_DTYPE_F32 && sp != IR_DTYPE_F64)
            return cgen_unsupported(cx, n, "softmax_precision %lld (float and double only)",
                                    (long long)sp);
        at = (IrDType)sp;
    }
    if (cgen_numel(cx, y) == 0) return true;
    if (S == 0) return cgen_unsupported(cx, n, "an empty key sequence (softmax of no scores)");
    size_t row_bytes = ir_dtype_size_bytes(at, S);
    if (row_bytes > FLEX_MAX_ROW_BYTES)
        return cgen_unsupported(cx, n, "a key sequence of %lld (a row of scores above %d bytes "
                                "of stack)", (long long)S, FLEX_MAX_ROW_BYTES);
    double scale = ir_attr_present(n, IR_ATTR_FLEX_ATTENTION_SCALE)
                       ? (double)ir_attr_f(n, IR_ATTR_FLEX_ATTENTION_SCALE)
                       : 1.0 / sqrt((double)D);
    double sqrt_scale = (double)sqrtf((float)scale); /* taken in float32, as the reference */
    char ss[64];
    snprintf(ss, sizeof ss, "%.17g", sqrt_scale);
    if (!strpbrk(ss, ".en")) strcat(ss, ".0");
    const IrGraph *smod = flex_graph(cx, n, IR_ATTR_FLEX_ATTENTION_SCORE_MOD);
    const IrGraph *pmod = flex_graph(cx, n, IR_ATTR_FLEX_ATTENTION_PROB_MOD);
    const char *asfx = at == IR_DTYPE_F64 ? "f64" : "f32", *act = bundle_ctype(at);
    const char *pq = cgen_ptr(cx, q), *pk = cgen_ptr(cx, k), *pv = cgen_ptr(cx, v);
    const char *py = cgen_ptr(cx, y);
    cgen_use_runtime(cx, "rt_flex.h");
    CWriter *w = cx->w;
    cw_open(w, "%s", "");
    cw_line(w, "%s row[%lld]; /* one query's scores, then probabilities */", act, (long long)S);
    if (!smod && !pmod) {
        cw_line(w, "rt_flex_attention_%s_%s(%s, %s, %s, %s, %lld, %lld, %lld, %lld, %lld, %lld, "
                   "%lld, %s, row);", sfx, asfx, pq, pk, pv, py, (long long)B, (long long)Hq,
                (long long)Hkv, (long long)L, (long long)S, (long long)D, (long long)Dv, ss);
        cw_close(w, NULL);
        return true;
    }
    int64_t group = Hq / Hkv;
    const char *kvh = group == 1 ? "h" : cgen_fmt(cx, "h / %lld", (long long)group);
    cw_line(w, "int64_t b, h, i, j;");
    cw_line(w, "for (b = 0; b < %lld; b++)", (long long)B);
    w->indent++;
    cw_open(w, "for (h = 0; h < %lld; h++)", (long long)Hq);
    cw_line(w, "const int64_t kv = b * %lld + %s; /* the K/V head */", (long long)Hkv, kvh);
    cw_open(w, "for (i = 0; i < %lld; i++)", (long long)L);
    cw_line(w, "const int64_t qi = (b * %lld + h) * %lld + i; /* the query row */", (long long)Hq,
            (long long)L);
    cw_line(w, "rt_flex_scores_%s_%s(%s + qi * %lld, %s + kv * %lld, %lld, %lld, %s, row);", sfx,
            asfx, pq, (long long)D, pk, (long long)(S * D), (long long)S, (long long)D, ss);
    const int64_t full[FLEX_RANK] = {B, Hq, L, S};
    bool ok = true;
    if (smod) ok &= flex_emit_sub(cx, n, "score_mod", smod, at, full);
    cw_line(w, "rt_flex_softmax_%s(row, %lld);", asfx, (long long)S);
    if (pmod && ok) ok &= flex_emit_sub(cx, n, "prob_mod", pmod, at, full);
    cw_line(w, "rt_flex_apply_%s_%s(row, %s + kv * %lld, %lld, %lld, %s + qi * %lld);", sfx, asfx,
            pv, (long long)(S * Dv), (long long)S, (long long)Dv, py, (long long)Dv);
    cw_close(w, NULL);
    cw_close(w, NULL);
    w->indent--;
    cw_close(w, NULL);
    return ok;
}

void cgen_register_flex(CgenEmitFn *table) { table[IR_OP_FLEX_ATTENTION] = emit_flex_attention; }
