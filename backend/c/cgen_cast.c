/* C backend emitters of the type-conversion family: Cast, CastLike, BitCast,
 * QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear. The conversions themselves are
 * runtime/rt_cast.h (float8, float4, packed 4- and 2-bit types included). */
#include <string.h>

#include "backend/c/cgen.h"

/* The suffix of rt_cast.h's typed loop for x -> y, or NULL where rt_cast converts. */
static const char *typed_cast(IrDType x, IrDType y) {
    if (x == IR_DTYPE_F32)
        return y == IR_DTYPE_F16 ? "f32_f16" : y == IR_DTYPE_BF16 ? "f32_bf16" : NULL;
    if (y != IR_DTYPE_F32) return NULL;
    switch (x) {
    case IR_DTYPE_F16: return "f16_f32";
    case IR_DTYPE_BF16: return "bf16_f32";
    case IR_DTYPE_BOOL: case IR_DTYPE_U8: return "u8_f32";
    case IR_DTYPE_I8: return "i8_f32";
    case IR_DTYPE_U16: return "u16_f32";
    case IR_DTYPE_I16: return "i16_f32";
    case IR_DTYPE_U32: return "u32_f32";
    case IR_DTYPE_I32: return "i32_f32";
    default: return NULL;
    }
}

static bool emit_cast(CgenCtx *cx, const IrNode *n) {
    const IrType *tx = cgen_type(cx, n->inputs[0]), *ty = cgen_type(cx, n->outputs[0]);
    if (tx->dtype == IR_DTYPE_STRING || ty->dtype == IR_DTYPE_STRING ||
        tx->dtype == IR_DTYPE_C64 || tx->dtype == IR_DTYPE_C128)
        return cgen_unsupported(cx, n, "casts from or to %s",
                                ir_dtype_name((IrDType)(tx->dtype == IR_DTYPE_STRING ||
                                                                tx->dtype >= IR_DTYPE_C64
                                                            ? tx->dtype : ty->dtype)));
    bool like = n->op == IR_OP_CAST_LIKE;
    int64_t saturate = ir_attr_i(n, like ? IR_ATTR_CAST_LIKE_SATURATE : IR_ATTR_CAST_SATURATE);
    const char *rm = ir_attr_s(n, like ? IR_ATTR_CAST_LIKE_ROUND_MODE : IR_ATTR_CAST_ROUND_MODE);
    const char *mode = strcmp(rm, "down") == 0      ? "RT_ROUND_DOWN"
                       : strcmp(rm, "nearest") == 0 ? "RT_ROUND_NEAREST"
                                                    : "RT_ROUND_UP";
    cgen_use_runtime(cx, "rt_cast.h");
    const char *typed = typed_cast((IrDType)tx->dtype, (IrDType)ty->dtype);
    if (typed) {
        cw_line(cx->w, "rt_cast_%s(%s, %s, %lld);", typed, cgen_ptr(cx, n->inputs[0]),
                cgen_ptr(cx, n->outputs[0]), (long long)cgen_numel(cx, n->inputs[0]));
        return true;
    }
    cw_line(cx->w, "rt_cast(%s, %d, %s, %d, %lld, %d, %s);", cgen_ptr(cx, n->inputs[0]),
            tx->dtype, cgen_ptr(cx, n->outputs[0]), ty->dtype,
            (long long)cgen_numel(cx, n->inputs[0]), saturate != 0, mode);
    return true;
}

static bool emit_bitcast(CgenCtx *cx, const IrNode *n) {
    const IrType *tx = cgen_type(cx, n->inputs[0]), *ty = cgen_type(cx, n->outputs[0]);
    size_t bx = ir_dtype_size_bytes((IrDType)tx->dtype, cgen_numel(cx, n->inputs[0]));
    size_t by = ir_dtype_size_bytes((IrDType)ty->dtype, cgen_numel(cx, n->outputs[0]));
    if (bx != by || tx->dtype == IR_DTYPE_STRING || ty->dtype == IR_DTYPE_STRING)
        return cgen_unsupported(cx, n, "a bit cast between tensors of different byte sizes");
    if (bx) cw_line(cx->w, "memcpy(%s, %s, %zu);", cgen_ptr(cx, n->outputs[0]),
                    cgen_ptr(cx, n->inputs[0]), bx);
    return true;
}

/* The layout of scale/zero point against x: per tensor, per axis or blocked. */
static bool quant_layout(CgenCtx *cx, const IrNode *n, int64_t axis, int64_t block,
                         const char **out) {
    const IrType *tx = cgen_type(cx, n->inputs[0]);
    int64_t ns = cgen_numel(cx, n->inputs[1]);
    int r = tx->rank;
    if (axis < 0) axis += r;
    int64_t outer = 1, dim = 1, inner = 1;
    bool per_axis = false;
    /* a one-element scale is per tensor whatever the axis says (ONNX Runtime's quantizer
     * writes [1]-shaped scales with the default axis) */
    if (block > 0 || ns > 1) {
        if (r == 0 || axis < 0 || axis >= r)
            return cgen_unsupported(cx, n, "a quantization axis outside the input's rank");
        for (int d = 0; d < axis; d++) outer *= tx->dims[d];
        dim = tx->dims[axis];
        for (int d = (int)axis + 1; d < r; d++) inner *= tx->dims[d];
        per_axis = block <= 0;
        if (per_axis && ns != dim && ns != 1)
            return cgen_unsupported(cx, n, "a scale of %lld values for an axis of %lld",
                                    (long long)ns, (long long)dim);
    }
    *out = cgen_fmt(cx, "{%lld, %lld, %lld, %lld, %d}", (long long)outer, (long long)dim,
                    (long long)inner, (long long)(block > 0 ? block : 0), per_axis);
    return true;
}

static bool emit_quantize(CgenCtx *cx, const IrNode *n) {
    bool q = n->op == IR_OP_QUANTIZE_LINEAR;
    int64_t axis = ir_attr_i(n, q ? IR_ATTR_QUANTIZE_LINEAR_AXIS : IR_ATTR_DEQUANTIZE_LINEAR_AXIS);
    int64_t block = ir_attr_i(n, q ? IR_ATTR_QUANTIZE_LINEAR_BLOCK_SIZE
                                   : IR_ATTR_DEQUANTIZE_LINEAR_BLOCK_SIZE);
    const char *layout = NULL;
    if (!quant_layout(cx, n, axis, block, &layout)) return false;
    uint32_t zp = n->n_inputs > 2 ? n->inputs[2] : IR_NONE;
    int xt = cgen_type(cx, n->inputs[0])->dtype, st = cgen_type(cx, n->inputs[1])->dtype;
    int yt = cgen_type(cx, n->outputs[0])->dtype;
    cgen_use_runtime(cx, "rt_cast.h");
    cw_open(cx->w, "%s", "");
    cw_line(cx->w, "static const RtQuantLayout q = %s; /* outer, dim, inner, block, per_axis */",
            layout);
    if (q)
        cw_line(cx->w, "rt_quantize(%s, %d, %s, %d, %s, %d, %s, %lld, &q, %d);",
                cgen_ptr(cx, n->inputs[0]), xt, cgen_ptr(cx, n->inputs[1]), st,
                zp == IR_NONE ? "NULL" : cgen_ptr(cx, zp), yt, cgen_ptr(cx, n->outputs[0]),
                (long long)cgen_numel(cx, n->inputs[0]),
                ir_attr_i(n, IR_ATTR_QUANTIZE_LINEAR_SATURATE) != 0);
    else
        cw_line(cx->w, "rt_dequantize(%s, %d, %s, %d, %s, %s, %d, %lld, &q);",
                cgen_ptr(cx, n->inputs[0]), xt, cgen_ptr(cx, n->inputs[1]), st,
                zp == IR_NONE ? "NULL" : cgen_ptr(cx, zp), cgen_ptr(cx, n->outputs[0]), yt,
                (long long)cgen_numel(cx, n->inputs[0]));
    cw_close(cx->w, NULL);
    return true;
}

static bool emit_dynamic_quantize(CgenCtx *cx, const IrNode *n) {
    if (cgen_type(cx, n->inputs[0])->dtype != IR_DTYPE_F32 || n->n_outputs != 3)
        return cgen_unsupported(cx, n, "DynamicQuantizeLinear other than f32 with 3 outputs");
    cgen_use_runtime(cx, "rt_cast.h");
    cw_line(cx->w, "rt_dynamic_quantize(%s, %lld, %s, %s, %s);", cgen_ptr(cx, n->inputs[0]),
            (long long)cgen_numel(cx, n->inputs[0]), cgen_ptr(cx, n->outputs[0]),
            cgen_ptr(cx, n->outputs[1]), cgen_ptr(cx, n->outputs[2]));
    return true;
}

void cgen_register_cast(CgenEmitFn *table) {
    table[IR_OP_CAST] = emit_cast;
    table[IR_OP_CAST_LIKE] = emit_cast;
    table[IR_OP_BIT_CAST] = emit_bitcast;
    table[IR_OP_QUANTIZE_LINEAR] = emit_quantize;
    table[IR_OP_DEQUANTIZE_LINEAR] = emit_quantize;
    table[IR_OP_DYNAMIC_QUANTIZE_LINEAR] = emit_dynamic_quantize;
}
