/* Shape inference of sequence and optional ops: the container type wraps an element type
 * (IrType.elem), which is the union of what the sequence may hold. */
#include "shape.h"

static IrType container(ShapeCtx *c, IrTypeKind kind, const IrType *elem) {
    IrType t = shape_unknown();
    t.kind = (uint8_t)kind;
    if (elem && elem->kind != IR_TYPE_UNDEF) t.elem = shape_elem(c, elem);
    return t;
}

void shape_optional(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    if (x) {
        c->out[0] = container(c, IR_TYPE_OPTIONAL, x);
        return;
    }
    const IrAttr *a = ir_node_attr(c->node, IR_ATTR_OPTIONAL_TYPE);
    c->out[0] = container(c, IR_TYPE_OPTIONAL, a->present && a->types ? a->types : NULL);
}

void shape_optional_get(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    if (!x) return;
    if (x->kind == IR_TYPE_OPTIONAL) {
        if (x->elem) c->out[0] = *x->elem;
        return;
    }
    c->out[0] = *x; /* opset 18: a tensor or sequence passes through */
}

void shape_optional_has(ShapeCtx *c) { c->out[0] = shape_tensor(IR_DTYPE_BOOL, 0); }

void shape_seq_empty(ShapeCtx *c) {
    IrDType dt = ir_attr_present(c->node, IR_ATTR_SEQUENCE_EMPTY_DTYPE)
                     ? (IrDType)ir_attr_i(c->node, IR_ATTR_SEQUENCE_EMPTY_DTYPE)
                     : IR_DTYPE_F32;
    IrType e = shape_tensor(dt, -1);
    c->out[0] = container(c, IR_TYPE_SEQUENCE, &e);
}

void shape_seq_construct(ShapeCtx *c) {
    IrType e = shape_unknown();
    for (uint32_t i = 0; i < c->node->n_inputs; i++) {
        const IrType *t = shape_in(c, i);
        if (!t) continue;
        e = i == 0 ? *t : shape_union(c->g->arena, &e, t);
    }
    c->out[0] = container(c, IR_TYPE_SEQUENCE, &e);
}

/* SequenceInsert(seq, tensor, pos) and SequenceErase(seq, pos). */
void shape_seq_same(ShapeCtx *c) {
    const IrType *s = shape_in(c, 0);
    if (!s || s->kind != IR_TYPE_SEQUENCE) return;
    IrType e = s->elem ? *s->elem : shape_unknown();
    const IrType *x = c->node->op == IR_OP_SEQUENCE_INSERT ? shape_in(c, 1) : NULL;
    if (x && s->elem) e = shape_union(c->g->arena, &e, x);
    c->out[0] = container(c, IR_TYPE_SEQUENCE, &e);
}

void shape_seq_at(ShapeCtx *c) {
    const IrType *s = shape_in(c, 0);
    if (s && s->kind == IR_TYPE_SEQUENCE && s->elem) c->out[0] = *s->elem;
}

void shape_seq_length(ShapeCtx *c) { c->out[0] = shape_tensor(IR_DTYPE_I64, 0); }

void shape_split_to_seq(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    if (!x || x->kind != IR_TYPE_TENSOR) return;
    IrType e = *x;
    if (x->rank >= 0) {
        int axis;
        if (!shape_axis(c, ir_attr_i(c->node, IR_ATTR_SPLIT_TO_SEQUENCE_AXIS), x->rank, &axis))
            return;
        if (!shape_has_in(c, 1)) {
            bool keep = ir_attr_i(c->node, IR_ATTR_SPLIT_TO_SEQUENCE_KEEPDIMS) != 0;
            if (keep) {
                shape_set_dim(&e, axis, shape_dim_static(1));
            } else {
                for (int i = axis; i < e.rank - 1; i++) {
                    e.dims[i] = e.dims[i + 1];
                    e.syms[i] = e.syms[i + 1];
                }
                e.rank--;
            }
        } else {
            shape_set_dim(&e, axis, shape_dim_unknown());
        }
    }
    c->out[0] = container(c, IR_TYPE_SEQUENCE, &e);
}

void shape_concat_from_seq(ShapeCtx *c) {
    const IrType *s = shape_in(c, 0);
    if (!s || s->kind != IR_TYPE_SEQUENCE || !s->elem) return;
    IrType e = *s->elem;
    c->out[0] = shape_tensor((IrDType)e.dtype, -1);
    if (e.kind != IR_TYPE_TENSOR || e.rank < 0) return;
    bool new_axis = ir_attr_i(c->node, IR_ATTR_CONCAT_FROM_SEQUENCE_NEW_AXIS) != 0;
    int r = e.rank + (new_axis ? 1 : 0);
    if (r > IR_MAX_RANK) return;
    int axis;
    if (!shape_axis(c, ir_attr_i(c->node, IR_ATTR_CONCAT_FROM_SEQUENCE_AXIS), r, &axis)) return;
    if (new_axis) {
        for (int i = e.rank; i > axis; i--) {
            e.dims[i] = e.dims[i - 1];
            e.syms[i] = e.syms[i - 1];
        }
        e.rank++;
    }
    shape_set_dim(&e, axis, shape_dim_unknown());
    c->out[0] = e;
}
