/* Shape inference of reductions (Reduce*, with axes as an attribute before opset 18, or
 * 13 for ReduceSum, and as an input after), ArgMax/ArgMin, and the two loss ops whose
 * output is a scalar or the per-sample shape depending on `reduction`. Known inputs of
 * ReduceSum/Prod/Max/Min are evaluated (shape_eval_reduce). */
#include "shape.h"

#include <string.h>

typedef struct ReduceIds {
    IrAttrId axes, keepdims, noop;
} ReduceIds;

static ReduceIds reduce_ids(IrOp op) {
#define IDS(OP)                                                                           \
    case IR_OP_##OP:                                                                      \
        return (ReduceIds){IR_ATTR_##OP##_AXES, IR_ATTR_##OP##_KEEPDIMS,                  \
                           IR_ATTR_##OP##_NOOP_WITH_EMPTY_AXES}
    switch (op) {
        IDS(REDUCE_L1);
        IDS(REDUCE_L2);
        IDS(REDUCE_LOG_SUM);
        IDS(REDUCE_LOG_SUM_EXP);
        IDS(REDUCE_MAX);
        IDS(REDUCE_MEAN);
        IDS(REDUCE_MIN);
        IDS(REDUCE_PROD);
        IDS(REDUCE_SUM);
        IDS(REDUCE_SUM_SQUARE);
    default: IR_ASSERT(!"not a reduction"); return (ReduceIds){IR_ATTR_COUNT, IR_ATTR_COUNT, IR_ATTR_COUNT};
    }
#undef IDS
}

/* Shape of x reduced over axes[0..n) (all axes when n is 0 and !noop). */
static void reduce_shape(ShapeCtx *c, const IrType *x, const int64_t *axes, uint32_t n,
                         bool keepdims, bool noop, IrType *o) {
    if (n == 0 && noop) {
        *o = *x;
        return;
    }
    bool red[IR_MAX_RANK] = {false};
    for (uint32_t i = 0; i < n; i++) {
        int a;
        if (!shape_axis(c, axes[i], x->rank, &a)) return;
        red[a] = true;
    }
    IrType r = shape_tensor((IrDType)x->dtype, 0);
    for (int i = 0; i < x->rank; i++) {
        bool reduce = n == 0 || red[i];
        if (reduce && !keepdims) continue;
        r.rank++;
        shape_set_dim(&r, r.rank - 1, reduce ? shape_dim_static(1) : shape_dim(x, i));
    }
    *o = r;
}

void shape_reduce(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    IrDType dt = shape_dtype(c, 0);
    ReduceIds ids = reduce_ids((IrOp)c->node->op);
    bool keepdims = ir_attr_i(c->node, ids.keepdims) != 0;
    int32_t since = c->node->op == IR_OP_REDUCE_SUM ? 13 : 18;
    int64_t axes[IR_MAX_RANK];
    uint32_t n = 0;
    bool noop = false;
    c->out[0] = shape_tensor(dt, -1);
    if (!x || x->rank < 0) return;
    if (shape_opset(c) < since) {
        const int64_t *v = ir_attr_ints(c->node, ids.axes, &n);
        if (n > IR_MAX_RANK) return;
        if (v) memcpy(axes, v, n * sizeof *v);
    } else {
        noop = ir_attr_i(c->node, ids.noop) != 0;
        if (shape_has_in(c, 1) && !shape_const_ints(c, 1, axes, IR_MAX_RANK, &n)) {
            /* axes unknown: with keepdims the rank stays */
            if (keepdims) c->out[0] = shape_tensor(dt, x->rank);
            return;
        }
    }
    reduce_shape(c, x, axes, n, keepdims, noop, &c->out[0]);
    /* partial evaluation of known inputs (ReduceProd of a shape vector...) */
    if (c->failed) return;
    if (n == 0 && noop) {
        shape_eval_relabel(c, 0);
        return;
    }
    bool reduced[IR_MAX_RANK];
    for (int i = 0; i < x->rank; i++) reduced[i] = n == 0;
    for (uint32_t i = 0; i < n; i++) {
        int a;
        if (shape_axis(c, axes[i], x->rank, &a)) reduced[a] = true;
    }
    shape_eval_reduce(c, reduced);
}

void shape_arg_reduce(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    bool is_max = c->node->op == IR_OP_ARG_MAX;
    int64_t axis = ir_attr_i(c->node, is_max ? IR_ATTR_ARG_MAX_AXIS : IR_ATTR_ARG_MIN_AXIS);
    bool keepdims =
        ir_attr_i(c->node, is_max ? IR_ATTR_ARG_MAX_KEEPDIMS : IR_ATTR_ARG_MIN_KEEPDIMS) != 0;
    c->out[0] = shape_tensor(IR_DTYPE_I64, -1);
    if (!x || x->rank < 0) return;
    reduce_shape(c, x, &axis, 1, keepdims, false, &c->out[0]);
    c->out[0].dtype = IR_DTYPE_I64;
}

/* scores (N, C, d1..dk), target (N, d1..dk): 'none' keeps the target's shape. */
static void loss_shape(ShapeCtx *c, const char *reduction) {
    IrDType dt = shape_dtype(c, 0);
    if (strcmp(reduction, "none") != 0) {
        c->out[0] = shape_tensor(dt, 0);
        return;
    }
    const IrType *t = shape_in(c, 1);
    IrType o = t ? *t : shape_tensor(dt, -1);
    o.kind = IR_TYPE_TENSOR;
    o.dtype = (uint8_t)dt;
    c->out[0] = o;
}

void shape_nll_loss(ShapeCtx *c) {
    loss_shape(c, ir_attr_s(c->node, IR_ATTR_NEGATIVE_LOG_LIKELIHOOD_LOSS_REDUCTION));
}

void shape_sce_loss(ShapeCtx *c) {
    loss_shape(c, ir_attr_s(c->node, IR_ATTR_SOFTMAX_CROSS_ENTROPY_LOSS_REDUCTION));
    if (c->n_out > 1) {
        const IrType *x = shape_in(c, 0);
        c->out[1] = x ? *x : shape_unknown();
    }
}
