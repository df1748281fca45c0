/* Shape inference of elementwise ops: unary ops that keep their input's type, broadcasting
 * binary and variadic ops, comparisons and logic (bool results), Where, casts,
 * quantization, random generators and the training optimizers (outputs mirror inputs).
 * Known values of OPF_ELTWISE ops are computed afterwards by shape_eval_eltwise. */
#include "shape.h"

static IrType copy_in(const ShapeCtx *c, uint32_t i) {
    const IrType *t = shape_in(c, i);
    return t ? *t : shape_unknown();
}

void shape_same(ShapeCtx *c) { c->out[0] = copy_in(c, 0); }

void shape_bool_same(ShapeCtx *c) {
    IrType t = copy_in(c, 0);
    if (t.kind == IR_TYPE_UNDEF) t = shape_tensor(IR_DTYPE_BOOL, -1);
    t.dtype = IR_DTYPE_BOOL;
    c->out[0] = t;
}

/* Broadcast of inputs [first, n_inputs) with dtype of input `dtype_from`. */
static void bcast_range(ShapeCtx *c, uint32_t first, IrDType dtype) {
    IrType acc = shape_tensor(dtype, -1);
    bool have = false;
    for (uint32_t i = first; i < c->node->n_inputs; i++) {
        const IrType *t = shape_in(c, i);
        if (!t) continue;
        if (!have) {
            acc = *t;
            acc.kind = IR_TYPE_TENSOR;
            have = true;
            continue;
        }
        if (!shape_broadcast(c, &acc, t, &acc)) return;
    }
    acc.kind = IR_TYPE_TENSOR;
    acc.dtype = (uint8_t)dtype;
    acc.layout = IR_LAYOUT_PLAIN;
    c->out[0] = acc;
}

void shape_bcast(ShapeCtx *c) { bcast_range(c, 0, shape_dtype(c, 0)); }

void shape_bcast_bool(ShapeCtx *c) { bcast_range(c, 0, IR_DTYPE_BOOL); }

void shape_variadic_bcast(ShapeCtx *c) {
    IrDType dt = IR_DTYPE_UNDEF;
    for (uint32_t i = 0; i < c->node->n_inputs && !dt; i++) dt = shape_dtype(c, i);
    bcast_range(c, 0, dt);
}

void shape_string_concat(ShapeCtx *c) { bcast_range(c, 0, IR_DTYPE_STRING); }

void shape_where(ShapeCtx *c) {
    IrDType dt = shape_dtype(c, 1);
    if (!dt) dt = shape_dtype(c, 2);
    bcast_range(c, 0, dt);
}

void shape_cast(ShapeCtx *c) {
    IrType t = copy_in(c, 0);
    t.kind = IR_TYPE_TENSOR;
    t.layout = IR_LAYOUT_PLAIN;
    int64_t to = ir_attr_i(c->node, IR_ATTR_CAST_TO);
    if (to <= 0 || to >= IR_DTYPE_COUNT) {
        shape_error(c, "unsupported target type %lld", (long long)to);
        return;
    }
    t.dtype = (uint8_t)to;
    c->out[0] = t;
}

void shape_cast_like(ShapeCtx *c) {
    IrType t = copy_in(c, 0);
    t.kind = IR_TYPE_TENSOR;
    t.dtype = (uint8_t)shape_dtype(c, 1);
    c->out[0] = t;
}

void shape_quantize(ShapeCtx *c) {
    IrType t = copy_in(c, 0);
    t.kind = IR_TYPE_TENSOR;
    int64_t dt = shape_opset(c) >= 21 ? ir_attr_i(c->node, IR_ATTR_QUANTIZE_LINEAR_OUTPUT_DTYPE)
                                      : 0;
    if (dt <= 0 || dt >= IR_DTYPE_COUNT) dt = shape_has_in(c, 2) ? shape_dtype(c, 2) : IR_DTYPE_U8;
    t.dtype = (uint8_t)dt;
    c->out[0] = t;
}

void shape_dequantize(ShapeCtx *c) {
    IrType t = copy_in(c, 0);
    t.kind = IR_TYPE_TENSOR;
    int64_t dt = shape_opset(c) >= 23
                     ? ir_attr_i(c->node, IR_ATTR_DEQUANTIZE_LINEAR_OUTPUT_DTYPE)
                     : 0;
    if (dt <= 0 || dt >= IR_DTYPE_COUNT) dt = shape_opset(c) >= 19 ? shape_dtype(c, 1) : IR_DTYPE_F32;
    t.dtype = (uint8_t)dt;
    c->out[0] = t;
}

void shape_dyn_quantize(ShapeCtx *c) {
    IrType t = copy_in(c, 0);
    t.kind = IR_TYPE_TENSOR;
    t.dtype = IR_DTYPE_U8;
    c->out[0] = t;
    if (c->n_out > 1) c->out[1] = shape_tensor(IR_DTYPE_F32, 0);
    if (c->n_out > 2) c->out[2] = shape_tensor(IR_DTYPE_U8, 0);
}

void shape_dropout(ShapeCtx *c) {
    c->out[0] = copy_in(c, 0);
    if (c->n_out > 1) {
        IrType m = copy_in(c, 0);
        m.kind = IR_TYPE_TENSOR;
        m.dtype = IR_DTYPE_BOOL;
        c->out[1] = m;
    }
}

static IrAttrId dtype_attr(IrOp op) {
    switch (op) {
    case IR_OP_BERNOULLI: return IR_ATTR_BERNOULLI_DTYPE;
    case IR_OP_RANDOM_NORMAL_LIKE: return IR_ATTR_RANDOM_NORMAL_LIKE_DTYPE;
    case IR_OP_RANDOM_UNIFORM_LIKE: return IR_ATTR_RANDOM_UNIFORM_LIKE_DTYPE;
    case IR_OP_RANDOM_NORMAL: return IR_ATTR_RANDOM_NORMAL_DTYPE;
    case IR_OP_RANDOM_UNIFORM: return IR_ATTR_RANDOM_UNIFORM_DTYPE;
    default: IR_ASSERT(!"op without a dtype attribute"); return IR_ATTR_COUNT;
    }
}

void shape_like_random(ShapeCtx *c) {
    IrType t = copy_in(c, 0);
    t.kind = IR_TYPE_TENSOR;
    IrAttrId a = dtype_attr((IrOp)c->node->op);
    if (ir_attr_present(c->node, a)) t.dtype = (uint8_t)ir_attr_i(c->node, a);
    c->out[0] = t;
}

void shape_random(ShapeCtx *c) {
    IrAttrId a = dtype_attr((IrOp)c->node->op);
    IrAttrId s = c->node->op == IR_OP_RANDOM_NORMAL ? IR_ATTR_RANDOM_NORMAL_SHAPE
                                                    : IR_ATTR_RANDOM_UNIFORM_SHAPE;
    uint32_t n;
    const int64_t *dims = ir_attr_ints(c->node, s, &n);
    if (n > IR_MAX_RANK) return;
    c->out[0] = ir_type_tensor((IrDType)ir_attr_i(c->node, a), (int)n, dims);
}

void shape_multinomial(ShapeCtx *c) {
    IrType t = shape_tensor((IrDType)ir_attr_i(c->node, IR_ATTR_MULTINOMIAL_DTYPE), 2);
    const IrType *x = shape_in(c, 0);
    if (x && x->rank == 2) shape_set_dim(&t, 0, shape_dim(x, 0));
    shape_set_dim(&t, 1, shape_dim_static(ir_attr_i(c->node, IR_ATTR_MULTINOMIAL_SAMPLE_SIZE)));
    c->out[0] = t;
}

/* BitCast (opset 26) requires equal bit widths: the shape is kept. */
void shape_bitcast(ShapeCtx *c) {
    IrType t = copy_in(c, 0);
    t.kind = IR_TYPE_TENSOR;
    int64_t to = ir_attr_i(c->node, IR_ATTR_BIT_CAST_TO);
    if (to <= 0 || to >= IR_DTYPE_COUNT) return;
    t.dtype = (uint8_t)to;
    c->out[0] = t;
}

void shape_label_encoder(ShapeCtx *c) {
    IrType t = copy_in(c, 0);
    t.kind = IR_TYPE_TENSOR;
    const IrNode *n = c->node;
    if (ir_attr_present(n, IR_ATTR_LABEL_ENCODER_VALUES_TENSOR))
        t.dtype = ir_node_attr(n, IR_ATTR_LABEL_ENCODER_VALUES_TENSOR)->tensors[0].dtype;
    else if (ir_attr_present(n, IR_ATTR_LABEL_ENCODER_VALUES_STRINGS)) t.dtype = IR_DTYPE_STRING;
    else if (ir_attr_present(n, IR_ATTR_LABEL_ENCODER_VALUES_INT64S)) t.dtype = IR_DTYPE_I64;
    else if (ir_attr_present(n, IR_ATTR_LABEL_ENCODER_VALUES_FLOATS)) t.dtype = IR_DTYPE_F32;
    else t.dtype = IR_DTYPE_UNDEF;
    c->out[0] = t;
}

void shape_eye_like(ShapeCtx *c) {
    IrType t = copy_in(c, 0);
    t.kind = IR_TYPE_TENSOR;
    if (ir_attr_present(c->node, IR_ATTR_EYE_LIKE_DTYPE))
        t.dtype = (uint8_t)ir_attr_i(c->node, IR_ATTR_EYE_LIKE_DTYPE);
    c->out[0] = t;
}

/* Adagrad (R,T,X*n,G*n,H*n), Momentum (R,T,X*n,G*n,V*n), Adam (R,T,X*n,G*n,V*n,H*n):
 * output group 0 mirrors X, group k >= 1 mirrors input group k + 1. */
void shape_optimizer(ShapeCtx *c) {
    uint32_t groups = c->node->op == IR_OP_ADAM ? 4 : 3;
    if (c->node->n_inputs < 2) return;
    uint32_t n = (c->node->n_inputs - 2) / groups;
    if (!n) return;
    for (uint32_t j = 0; j < c->n_out; j++) {
        uint32_t g = j / n, k = j % n;
        uint32_t in = 2 + (g == 0 ? k : (g + 1) * n + k);
        c->out[j] = copy_in(c, in);
    }
}
