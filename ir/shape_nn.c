/* Shape inference of neural-network ops: convolutions and pools (spatial output sizes from
 * kernel, strides, dilations, pads or auto_pad), Gemm and MatMul, normalizations with
 * extra outputs, recurrent layers, Attention, ROI ops, grid sampling, Col2Im,
 * depth/space rearrangements, Einsum and Det. */
#include "geom.h"
#include "shape.h"

#include <string.h>

#define SHAPE_MAX_SPATIAL (IR_MAX_RANK - 2)

static IrType copy_in(const ShapeCtx *c, uint32_t i) {
    const IrType *t = shape_in(c, i);
    return t ? *t : shape_unknown();
}

/* ---- convolution and pooling geometry (ir/geom.c) ---- */

/* The attributes of the node being inferred, for n spatial dims; false (after an error for
 * malformed attributes) when there are none to use. */
static bool conv_attrs(ShapeCtx *c, int n, const IrType *w, IrConvAttrs *a) {
    const char *why;
    if (n < 0 || n > IR_GEOM_SPATIAL) return false;
    if (ir_conv_attrs(c->node, n, w, a, &why)) return true;
    if (why) shape_error(c, "%s", why);
    return false;
}

static ShapeDim known_or_unknown(int64_t v) {
    return v < 0 ? shape_dim_unknown() : shape_dim_static(v);
}

/* x: (N,C,D...), w: (M,C/group,k...) or NULL for pools; channels: the output channels. */
static void conv_like(ShapeCtx *c, const IrType *x, const IrType *w, ShapeDim channels,
                      IrDType dtype, IrType *out) {
    *out = shape_tensor(dtype, -1);
    int r = x ? x->rank : -1;
    if (r < 0 && w && w->rank >= 0) r = w->rank;
    if (r < 2) return;
    IrConvAttrs a;
    if (!conv_attrs(c, r - 2, w, &a)) return;
    out->rank = (int8_t)r;
    shape_set_dim(out, 0, shape_dim(x, 0));
    shape_set_dim(out, 1, channels);
    for (int i = 0; i < r - 2; i++)
        shape_set_dim(out, i + 2, known_or_unknown(ir_conv_out_dim(&a, i, shape_dim(x, i + 2).v)));
}

static ShapeDim w_out_channels(const IrType *w) {
    return w ? shape_dim(w, 0) : shape_dim_unknown();
}

/* group must be positive and divide the input channels; the weights' second dim must be
 * C / group. */
static bool check_group(ShapeCtx *c, const IrType *x, const IrType *w) {
    int64_t group = ir_attr_i(c->node, IR_ATTR_CONV_GROUP);
    if (group <= 0) {
        shape_error(c, "group %lld is not positive", (long long)group);
        return false;
    }
    ShapeDim ch = shape_dim(x, 1);
    if (x && x->rank >= 2 && ch.v >= 0) {
        if (ch.v % group != 0) {
            shape_error(c, "group %lld does not divide the %lld input channels", (long long)group,
                        (long long)ch.v);
            return false;
        }
        ShapeDim wc = w && w->rank >= 2 ? shape_dim(w, 1) : shape_dim_unknown();
        if (wc.v >= 0 && wc.v * group != ch.v) {
            shape_error(c, "weights for %lld channels per group, input has %lld channels in %lld groups",
                        (long long)wc.v, (long long)ch.v, (long long)group);
            return false;
        }
    }
    return true;
}

void shape_conv(ShapeCtx *c) {
    const IrType *w = shape_in(c, 1);
    if (!check_group(c, shape_in(c, 0), w)) return;
    conv_like(c, shape_in(c, 0), w, w_out_channels(w), shape_dtype(c, 0), &c->out[0]);
}

void shape_conv_integer(ShapeCtx *c) {
    const IrType *w = shape_in(c, 1);
    conv_like(c, shape_in(c, 0), w, w_out_channels(w), IR_DTYPE_I32, &c->out[0]);
}

void shape_qlinear_conv(ShapeCtx *c) {
    const IrType *w = shape_in(c, 3);
    conv_like(c, shape_in(c, 0), w, w_out_channels(w), shape_dtype(c, 7), &c->out[0]);
}

void shape_deform_conv(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0), *w = shape_in(c, 1), *off = shape_in(c, 2);
    IrType *o = &c->out[0];
    *o = shape_tensor(shape_dtype(c, 0), -1);
    int r = x ? x->rank : -1;
    if (r < 2) return;
    o->rank = (int8_t)r;
    shape_set_dim(o, 0, shape_dim(x, 0));
    shape_set_dim(o, 1, w_out_channels(w));
    for (int i = 2; i < r; i++)
        shape_set_dim(o, i, off && off->rank == r ? shape_dim(off, i) : shape_dim_unknown());
}

void shape_conv_transpose(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0), *w = shape_in(c, 1);
    IrType *o = &c->out[0];
    *o = shape_tensor(shape_dtype(c, 0), -1);
    int r = x ? x->rank : -1;
    if (r < 2) return;
    IrConvAttrs a;
    if (!conv_attrs(c, r - 2, w, &a)) return;
    o->rank = (int8_t)r;
    shape_set_dim(o, 0, shape_dim(x, 0));
    ShapeDim wc = w ? shape_dim(w, 1) : shape_dim_unknown();
    shape_set_dim(o, 1, wc.v >= 0 ? shape_dim_static(wc.v * a.group) : shape_dim_unknown());
    for (int i = 0; i < r - 2; i++)
        shape_set_dim(o, i + 2, known_or_unknown(ir_conv_out_dim(&a, i, shape_dim(x, i + 2).v)));
}

void shape_pool(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    conv_like(c, x, NULL, x ? shape_dim(x, 1) : shape_dim_unknown(), shape_dtype(c, 0),
              &c->out[0]);
    if (c->n_out > 1) {
        c->out[1] = c->out[0];
        c->out[1].dtype = IR_DTYPE_I64;
    }
}

void shape_global_pool(ShapeCtx *c) {
    IrType t = copy_in(c, 0);
    t.kind = IR_TYPE_TENSOR;
    for (int i = 2; i < t.rank; i++) shape_set_dim(&t, i, shape_dim_static(1));
    c->out[0] = t;
}

void shape_max_unpool(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    IrType *o = &c->out[0];
    *o = shape_tensor(shape_dtype(c, 0), -1);
    int64_t os[IR_MAX_RANK];
    uint32_t n;
    if (shape_const_ints(c, 2, os, IR_MAX_RANK, &n)) {
        *o = ir_type_tensor(shape_dtype(c, 0), (int)n, os);
        return;
    }
    if (!x || x->rank < 2) return;
    if (shape_has_in(c, 2)) {
        *o = shape_tensor(shape_dtype(c, 0), x->rank);
        return;
    }
    int r = x->rank, sp = r - 2;
    uint32_t nk, ns, np;
    const int64_t *k = ir_attr_ints(c->node, IR_ATTR_MAX_UNPOOL_KERNEL_SHAPE, &nk);
    const int64_t *s = ir_attr_ints(c->node, IR_ATTR_MAX_UNPOOL_STRIDES, &ns);
    const int64_t *p = ir_attr_ints(c->node, IR_ATTR_MAX_UNPOOL_PADS, &np);
    o->rank = (int8_t)r;
    shape_set_dim(o, 0, shape_dim(x, 0));
    shape_set_dim(o, 1, shape_dim(x, 1));
    for (int i = 0; i < sp; i++) {
        ShapeDim in = shape_dim(x, i + 2);
        if (in.v < 0 || !k || nk != (uint32_t)sp) continue;
        int64_t st = s && ns == (uint32_t)sp ? s[i] : 1;
        int64_t pads = p && np == (uint32_t)(2 * sp) ? p[i] + p[i + sp] : 0;
        shape_set_dim(o, i + 2, shape_dim_static((in.v - 1) * st + k[i] - pads));
    }
}

/* ---- matrix products ---- */

void shape_gemm(ShapeCtx *c) {
    const IrType *a = shape_in(c, 0), *b = shape_in(c, 1);
    IrType *o = &c->out[0];
    *o = shape_tensor(shape_dtype(c, 0), 2);
    bool ta = ir_attr_i(c->node, IR_ATTR_GEMM_TRANS_A) != 0;
    bool tb = ir_attr_i(c->node, IR_ATTR_GEMM_TRANS_B) != 0;
    if (a && a->rank == 2) shape_set_dim(o, 0, shape_dim(a, ta ? 1 : 0));
    if (b && b->rank == 2) shape_set_dim(o, 1, shape_dim(b, tb ? 0 : 1));
}

/* numpy matmul: 1-D operands are promoted and the added dim removed afterwards. */
static void matmul_shape(ShapeCtx *c, const IrType *a, const IrType *b, IrDType dtype) {
    IrType *o = &c->out[0];
    *o = shape_tensor(dtype, -1);
    if (!a || !b || a->rank < 1 || b->rank < 1) return;
    IrType pa = *a, pb = *b;
    if (a->rank == 1) {
        pa.rank = 2;
        shape_set_dim(&pa, 1, shape_dim(a, 0));
        shape_set_dim(&pa, 0, shape_dim_static(1));
    }
    if (b->rank == 1) {
        pb.rank = 2;
        shape_set_dim(&pb, 0, shape_dim(b, 0));
        shape_set_dim(&pb, 1, shape_dim_static(1));
    }
    ShapeDim ka = shape_dim(&pa, pa.rank - 1), kb = shape_dim(&pb, pb.rank - 2);
    if (ka.v >= 0 && kb.v >= 0 && ka.v != kb.v) {
        shape_error(c, "inner dimensions differ: %lld and %lld", (long long)ka.v,
                    (long long)kb.v);
        return;
    }
    IrType ba = pa, bb = pb, batch = shape_tensor(dtype, 0);
    ba.rank = (int8_t)(pa.rank - 2);
    bb.rank = (int8_t)(pb.rank - 2);
    if (!shape_broadcast(c, &ba, &bb, &batch)) return;
    int r = batch.rank;
    if (r + 2 > IR_MAX_RANK) return;
    IrType res = shape_tensor(dtype, r + 2);
    for (int i = 0; i < r; i++) shape_set_dim(&res, i, shape_dim(&batch, i));
    shape_set_dim(&res, r, shape_dim(&pa, pa.rank - 2));
    shape_set_dim(&res, r + 1, shape_dim(&pb, pb.rank - 1));
    if (b->rank == 1) { /* drop the appended column dim */
        res.rank--;
    }
    if (a->rank == 1) { /* drop the prepended row dim */
        int at = res.rank - (b->rank == 1 ? 1 : 2);
        for (int i = at; i < res.rank - 1; i++) {
            res.dims[i] = res.dims[i + 1];
            res.syms[i] = res.syms[i + 1];
        }
        res.rank--;
    }
    *o = res;
}

void shape_matmul(ShapeCtx *c) {
    matmul_shape(c, shape_in(c, 0), shape_in(c, 1), shape_dtype(c, 0));
}

void shape_matmul_integer(ShapeCtx *c) {
    matmul_shape(c, shape_in(c, 0), shape_in(c, 1), IR_DTYPE_I32);
}

/* inputs: a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp */
void shape_qlinear_matmul(ShapeCtx *c) {
    matmul_shape(c, shape_in(c, 0), shape_in(c, 3), shape_dtype(c, 7));
}

/* ---- normalizations ---- */

void shape_batch_norm(ShapeCtx *c) {
    c->out[0] = copy_in(c, 0);
    for (uint32_t k = 1; k < c->n_out && k < 3; k++) c->out[k] = copy_in(c, 2 + k);
}

void shape_layer_norm(ShapeCtx *c) {
    c->out[0] = copy_in(c, 0);
    const IrType *x = shape_in(c, 0);
    if (c->n_out < 2) return;
    IrDType st = (IrDType)ir_attr_i(c->node, IR_ATTR_LAYER_NORMALIZATION_STASH_TYPE);
    IrType m = shape_tensor(st, -1);
    int axis;
    if (x && x->rank >= 0 &&
        shape_axis(c, ir_attr_i(c->node, IR_ATTR_LAYER_NORMALIZATION_AXIS), x->rank, &axis)) {
        m = *x;
        m.dtype = (uint8_t)st;
        for (int i = axis; i < x->rank; i++) shape_set_dim(&m, i, shape_dim_static(1));
    }
    for (uint32_t k = 1; k < c->n_out; k++) c->out[k] = m;
}

/* ---- recurrent layers: X (seq, batch, input) or, with layout 1, (batch, seq, input) ---- */

void shape_rnn(ShapeCtx *c) {
    IrAttrId dir_id, hid_id, layout_id;
    switch (c->node->op) {
    case IR_OP_RNN:
        dir_id = IR_ATTR_RNN_DIRECTION, hid_id = IR_ATTR_RNN_HIDDEN_SIZE;
        layout_id = IR_ATTR_RNN_LAYOUT;
        break;
    case IR_OP_GRU:
        dir_id = IR_ATTR_GRU_DIRECTION, hid_id = IR_ATTR_GRU_HIDDEN_SIZE;
        layout_id = IR_ATTR_GRU_LAYOUT;
        break;
    default:
        dir_id = IR_ATTR_LSTM_DIRECTION, hid_id = IR_ATTR_LSTM_HIDDEN_SIZE;
        layout_id = IR_ATTR_LSTM_LAYOUT;
        break;
    }
    const IrType *x = shape_in(c, 0), *r = shape_in(c, 2);
    IrDType dt = shape_dtype(c, 0);
    int64_t dirs = strcmp(ir_attr_s(c->node, dir_id), "bidirectional") == 0 ? 2 : 1;
    ShapeDim hid = ir_attr_present(c->node, hid_id)
                       ? shape_dim_static(ir_attr_i(c->node, hid_id))
                       : (r && r->rank == 3 ? shape_dim(r, 2) : shape_dim_unknown());
    bool batch_first = ir_attr_i(c->node, layout_id) != 0;
    ShapeDim seq = shape_dim_unknown(), batch = shape_dim_unknown();
    if (x && x->rank == 3) {
        seq = shape_dim(x, batch_first ? 1 : 0);
        batch = shape_dim(x, batch_first ? 0 : 1);
    }
    IrType y = shape_tensor(dt, 4), yh = shape_tensor(dt, 3);
    if (batch_first) {
        shape_set_dim(&y, 0, batch);
        shape_set_dim(&y, 1, seq);
        shape_set_dim(&yh, 0, batch);
        shape_set_dim(&yh, 1, shape_dim_static(dirs));
    } else {
        shape_set_dim(&y, 0, seq);
        shape_set_dim(&y, 2, batch);
        shape_set_dim(&yh, 0, shape_dim_static(dirs));
        shape_set_dim(&yh, 1, batch);
    }
    shape_set_dim(&y, batch_first ? 2 : 1, shape_dim_static(dirs));
    shape_set_dim(&y, 3, hid);
    shape_set_dim(&yh, 2, hid);
    c->out[0] = y;
    for (uint32_t k = 1; k < c->n_out; k++) c->out[k] = yh;
}

/* ---- Attention (opset 23/24): Q, K, V 4-D (B, heads, seq, head) or 3-D (B, seq, hidden) ---- */

static ShapeDim div_dim(ShapeDim a, int64_t b) {
    return a.v >= 0 && b > 0 && a.v % b == 0 ? shape_dim_static(a.v / b) : shape_dim_unknown();
}

static ShapeDim add_dim(ShapeDim a, ShapeDim b) {
    if (a.v >= 0 && b.v >= 0) return shape_dim_static(a.v + b.v);
    return shape_dim_unknown();
}

void shape_attention(ShapeCtx *c) {
    const IrType *q = shape_in(c, 0), *k = shape_in(c, 1), *v = shape_in(c, 2);
    const IrType *pk = shape_in(c, 4);
    IrDType dt = shape_dtype(c, 0);
    if (!q || !k || !v || q->rank < 0 || k->rank < 0 || v->rank < 0) {
        c->out[0] = shape_tensor(dt, q ? q->rank : -1);
        return;
    }
    for (int i = 0; i < 3; i++) {
        const IrType *t = i == 0 ? q : i == 1 ? k : v;
        if (t->rank != 3 && t->rank != 4) { /* (B, S, hidden) or (B, heads, S, head) */
            shape_error(c, "input %d has rank %d: Attention takes rank 3 or 4", i, t->rank);
            return;
        }
    }
    if (pk && pk->rank >= 0 && pk->rank != 4) {
        shape_error(c, "past_key has rank %d: Attention takes rank 4", pk->rank);
        return;
    }
    int64_t qh = ir_attr_i(c->node, IR_ATTR_ATTENTION_Q_NUM_HEADS);
    int64_t kvh = ir_attr_i(c->node, IR_ATTR_ATTENTION_KV_NUM_HEADS);
    ShapeDim b = shape_dim(q, 0), qheads, qseq, kvheads, kvseq, head, vhead;
    if (q->rank == 4) {
        qheads = shape_dim(q, 1), qseq = shape_dim(q, 2);
    } else {
        qheads = shape_dim_static(qh), qseq = shape_dim(q, 1);
    }
    if (k->rank == 4) {
        kvheads = shape_dim(k, 1), kvseq = shape_dim(k, 2), head = shape_dim(k, 3);
    } else {
        kvheads = shape_dim_static(kvh), kvseq = shape_dim(k, 1);
        head = div_dim(shape_dim(k, 2), kvh);
    }
    vhead = v->rank == 4 ? shape_dim(v, 3) : div_dim(shape_dim(v, 2), kvh);
    ShapeDim total = kvseq;
    if (pk && pk->rank == 4) total = add_dim(shape_dim(pk, 2), kvseq);
    IrType y = shape_tensor(dt, q->rank);
    shape_set_dim(&y, 0, b);
    if (q->rank == 4) {
        shape_set_dim(&y, 1, qheads);
        shape_set_dim(&y, 2, qseq);
        shape_set_dim(&y, 3, vhead);
    } else {
        shape_set_dim(&y, 1, qseq);
        shape_set_dim(&y, 2, vhead.v >= 0 && qheads.v > 0 ? shape_dim_static(vhead.v * qheads.v)
                                                          : shape_dim_unknown());
    }
    c->out[0] = y;
    IrType pres = shape_tensor(dt, 4);
    shape_set_dim(&pres, 0, b);
    shape_set_dim(&pres, 1, kvheads);
    shape_set_dim(&pres, 2, total);
    if (c->n_out > 1) {
        c->out[1] = pres;
        shape_set_dim(&c->out[1], 3, head);
    }
    if (c->n_out > 2) {
        c->out[2] = pres;
        shape_set_dim(&c->out[2], 3, vhead);
    }
    if (c->n_out > 3) {
        IrType qk = shape_tensor(dt, 4);
        shape_set_dim(&qk, 0, b);
        shape_set_dim(&qk, 1, qheads);
        shape_set_dim(&qk, 2, qseq);
        shape_set_dim(&qk, 3, total);
        c->out[3] = qk;
    }
}

/* ---- ROI ops and sampling ---- */

void shape_roi_align(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0), *rois = shape_in(c, 1);
    IrType o = shape_tensor(shape_dtype(c, 0), 4);
    if (rois && rois->rank == 2) shape_set_dim(&o, 0, shape_dim(rois, 0));
    if (x && x->rank == 4) shape_set_dim(&o, 1, shape_dim(x, 1));
    shape_set_dim(&o, 2, shape_dim_static(ir_attr_i(c->node, IR_ATTR_ROI_ALIGN_OUTPUT_HEIGHT)));
    shape_set_dim(&o, 3, shape_dim_static(ir_attr_i(c->node, IR_ATTR_ROI_ALIGN_OUTPUT_WIDTH)));
    c->out[0] = o;
}

void shape_max_roi_pool(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0), *rois = shape_in(c, 1);
    uint32_t n;
    const int64_t *ps = ir_attr_ints(c->node, IR_ATTR_MAX_ROI_POOL_POOLED_SHAPE, &n);
    if (n > SHAPE_MAX_SPATIAL) return;
    IrType o = shape_tensor(shape_dtype(c, 0), 2 + (int)n);
    if (rois && rois->rank == 2) shape_set_dim(&o, 0, shape_dim(rois, 0));
    if (x && x->rank >= 2) shape_set_dim(&o, 1, shape_dim(x, 1));
    for (uint32_t i = 0; i < n; i++) shape_set_dim(&o, 2 + (int)i, shape_dim_static(ps[i]));
    c->out[0] = o;
}

/* X (N, C, D1..Dr), grid (N, O1..Or, r) -> (N, C, O1..Or) */
void shape_grid_sample(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0), *grid = shape_in(c, 1);
    int r = x && x->rank >= 0 ? x->rank : grid && grid->rank >= 0 ? grid->rank : -1;
    IrType o = shape_tensor(shape_dtype(c, 0), r);
    if (r >= 2) {
        if (x && x->rank == r) {
            shape_set_dim(&o, 0, shape_dim(x, 0));
            shape_set_dim(&o, 1, shape_dim(x, 1));
        }
        if (grid && grid->rank == r)
            for (int i = 2; i < r; i++) shape_set_dim(&o, i, shape_dim(grid, i - 1));
    }
    c->out[0] = o;
}

/* theta (N, 2, 3) or (N, 3, 4); size (N, C, H, W) or (N, C, D, H, W) -> (N, H, W, 2) ... */
void shape_affine_grid(ShapeCtx *c) {
    int64_t size[5];
    uint32_t n;
    IrDType dt = shape_dtype(c, 0);
    if (!shape_const_ints(c, 1, size, 5, &n) || n < 4) {
        c->out[0] = shape_tensor(dt, -1);
        return;
    }
    int sp = (int)n - 2;
    IrType o = shape_tensor(dt, sp + 2);
    shape_set_dim(&o, 0, shape_dim_static(size[0]));
    for (int i = 0; i < sp; i++) shape_set_dim(&o, i + 1, shape_dim_static(size[2 + i]));
    shape_set_dim(&o, sp + 1, shape_dim_static(sp));
    c->out[0] = o;
}

/* input (N, C * prod(block), L), image_shape, block_shape -> (N, C, image_shape...) */
void shape_col2im(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    int64_t img[SHAPE_MAX_SPATIAL], blk[SHAPE_MAX_SPATIAL];
    uint32_t ni, nb;
    IrDType dt = shape_dtype(c, 0);
    if (!shape_const_ints(c, 1, img, SHAPE_MAX_SPATIAL, &ni)) {
        c->out[0] = shape_tensor(dt, -1);
        return;
    }
    IrType o = shape_tensor(dt, 2 + (int)ni);
    if (x && x->rank == 3) {
        shape_set_dim(&o, 0, shape_dim(x, 0));
        if (shape_const_ints(c, 2, blk, SHAPE_MAX_SPATIAL, &nb) && nb == ni) {
            int64_t p = 1;
            for (uint32_t i = 0; i < nb; i++) p *= blk[i];
            shape_set_dim(&o, 1, div_dim(shape_dim(x, 1), p));
        }
    }
    for (uint32_t i = 0; i < ni; i++) shape_set_dim(&o, 2 + (int)i, shape_dim_static(img[i]));
    c->out[0] = o;
}

static ShapeDim mul_dim(ShapeDim a, int64_t b) {
    return a.v >= 0 ? shape_dim_static(a.v * b) : shape_dim_unknown();
}

static void depth_space(ShapeCtx *c, int64_t b, bool to_space) {
    IrType t = copy_in(c, 0);
    t.kind = IR_TYPE_TENSOR;
    if (t.rank == 4 && b > 0) {
        ShapeDim ch = shape_dim(&t, 1), h = shape_dim(&t, 2), w = shape_dim(&t, 3);
        shape_set_dim(&t, 1, to_space ? div_dim(ch, b * b) : mul_dim(ch, b * b));
        shape_set_dim(&t, 2, to_space ? mul_dim(h, b) : div_dim(h, b));
        shape_set_dim(&t, 3, to_space ? mul_dim(w, b) : div_dim(w, b));
    }
    c->out[0] = t;
}

void shape_depth_to_space(ShapeCtx *c) {
    depth_space(c, ir_attr_i(c->node, IR_ATTR_DEPTH_TO_SPACE_BLOCKSIZE), true);
}

void shape_space_to_depth(ShapeCtx *c) {
    depth_space(c, ir_attr_i(c->node, IR_ATTR_SPACE_TO_DEPTH_BLOCKSIZE), false);
}

/* ---- Einsum: labels map to dims; "..." broadcasts; implicit output is the labels seen
 * once, in alphabetical order, after the ellipsis dims. ---- */

#define EINSUM_LABELS 52

static int label_index(char ch) {
    if (ch >= 'a' && ch <= 'z') return ch - 'a';
    if (ch >= 'A' && ch <= 'Z') return 26 + ch - 'A';
    return -1;
}

void shape_einsum(ShapeCtx *c) {
    const char *eq = ir_attr_s(c->node, IR_ATTR_EINSUM_EQUATION);
    IrDType dt = shape_dtype(c, 0);
    c->out[0] = shape_tensor(dt, -1);
    ShapeDim dims[EINSUM_LABELS];
    int count[EINSUM_LABELS] = {0};
    for (int i = 0; i < EINSUM_LABELS; i++) dims[i] = shape_dim_unknown();
    IrType ell = shape_tensor(dt, 0); /* broadcast of all ellipsis parts */
    bool have_ell = false;
    const char *p = eq;
    for (uint32_t in = 0; in < c->node->n_inputs; in++) {
        const IrType *t = shape_in(c, in);
        if (!t || t->rank < 0) return;
        int labels = 0;
        bool e = false;
        const char *q = p;
        while (*q && *q != ',' && *q != '-') {
            if (*q == '.') {
                e = true;
                q += 3;
                continue;
            }
            if (label_index(*q) >= 0) labels++;
            q++;
        }
        int ell_rank = t->rank - labels;
        if (ell_rank < 0 || (!e && ell_rank != 0)) {
            shape_error(c, "equation '%s' does not match the rank of input %u", eq, in);
            return;
        }
        int axis = 0;
        for (q = p; *q && *q != ',' && *q != '-'; q++) {
            if (*q == '.') {
                IrType part = shape_tensor(dt, ell_rank);
                for (int k = 0; k < ell_rank; k++) shape_set_dim(&part, k, shape_dim(t, axis + k));
                if (!shape_broadcast(c, have_ell ? &ell : &part, &part, &ell)) return;
                have_ell = true;
                axis += ell_rank;
                q += 2;
                continue;
            }
            int li = label_index(*q);
            if (li < 0) continue;
            ShapeDim d = shape_dim(t, axis++);
            if (dims[li].v < 0 || (d.v >= 0 && d.v != 1)) dims[li] = d;
            count[li]++;
        }
        p = q;
        if (*p == ',') p++;
    }
    IrType o = shape_tensor(dt, 0);
    const char *arrow = strstr(eq, "->");
    if (arrow) {
        for (const char *q = arrow + 2; *q; q++) {
            if (*q == '.') {
                for (int k = 0; k < ell.rank && o.rank < IR_MAX_RANK; k++) {
                    o.rank++;
                    shape_set_dim(&o, o.rank - 1, shape_dim(&ell, k));
                }
                q += 2;
                continue;
            }
            int li = label_index(*q);
            if (li < 0 || o.rank >= IR_MAX_RANK) continue;
            o.rank++;
            shape_set_dim(&o, o.rank - 1, dims[li]);
        }
    } else {
        for (int k = 0; k < ell.rank; k++) {
            o.rank++;
            shape_set_dim(&o, o.rank - 1, shape_dim(&ell, k));
        }
        for (int li = 0; li < EINSUM_LABELS; li++) {
            if (count[li] != 1 || o.rank >= IR_MAX_RANK) continue;
            o.rank++;
            shape_set_dim(&o, o.rank - 1, dims[li]);
        }
    }
    c->out[0] = o;
}

void shape_det(ShapeCtx *c) {
    IrType t = copy_in(c, 0);
    t.kind = IR_TYPE_TENSOR;
    if (t.rank >= 2) t.rank -= 2;
    c->out[0] = t;
}

/* LinearAttention (opset 27): q, k, v packed (B, T, heads * D); state (B, H_kv, d_k, d_v). */
void shape_linear_attention(ShapeCtx *c) {
    const IrType *q = shape_in(c, 0), *k = shape_in(c, 1), *v = shape_in(c, 2);
    IrDType dt = shape_dtype(c, 0);
    int64_t qh = ir_attr_i(c->node, IR_ATTR_LINEAR_ATTENTION_Q_NUM_HEADS);
    int64_t kvh = ir_attr_i(c->node, IR_ATTR_LINEAR_ATTENTION_KV_NUM_HEADS);
    ShapeDim dk = k && k->rank == 3 ? div_dim(shape_dim(k, 2), kvh) : shape_dim_unknown();
    ShapeDim dv = v && v->rank == 3 ? div_dim(shape_dim(v, 2), kvh) : shape_dim_unknown();
    IrType y = shape_tensor(dt, 3);
    if (q && q->rank == 3) {
        shape_set_dim(&y, 0, shape_dim(q, 0));
        shape_set_dim(&y, 1, shape_dim(q, 1));
    }
    shape_set_dim(&y, 2, dv.v >= 0 && qh > 0 ? shape_dim_static(dv.v * qh) : shape_dim_unknown());
    c->out[0] = y;
    if (c->n_out > 1) {
        IrType s = shape_tensor(dt, 4);
        shape_set_dim(&s, 0, shape_dim(&y, 0));
        shape_set_dim(&s, 1, shape_dim_static(kvh > 0 ? kvh : -1));
        shape_set_dim(&s, 2, dk);
        shape_set_dim(&s, 3, dv);
        c->out[1] = s;
    }
}

/* CausalConvWithState (opset 27): input (B, C, L), weight (C, 1, k) -> output (B, C, L),
 * present_state (B, C, k - 1). */
void shape_causal_conv_with_state(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0), *w = shape_in(c, 1);
    c->out[0] = copy_in(c, 0);
    if (c->n_out < 2) return;
    IrType s = shape_tensor(shape_dtype(c, 0), 3);
    if (x && x->rank == 3) {
        shape_set_dim(&s, 0, shape_dim(x, 0));
        shape_set_dim(&s, 1, shape_dim(x, 1));
    }
    if (w && w->rank == 3 && w->dims[2] >= 1) shape_set_dim(&s, 2, shape_dim_static(w->dims[2] - 1));
    c->out[1] = s;
}

/* FlexAttention (ai.onnx.preview 1): Q (B, Hq, Sq, D), K (B, Hkv, Skv, D),
 * V (B, Hkv, Skv, Dv) -> (B, Hq, Sq, Dv). The modifier subgraphs see the score tensor
 * (B, Hq, Sq, Skv) in the softmax precision. */
void shape_flex_attention(ShapeCtx *c) {
    const IrType *q = shape_in(c, 0), *k = shape_in(c, 1), *v = shape_in(c, 2);
    IrDType dt = shape_dtype(c, 0);
    IrType y = shape_tensor(dt, 4), scores = shape_tensor(IR_DTYPE_F32, 4);
    if (ir_attr_present(c->node, IR_ATTR_FLEX_ATTENTION_SOFTMAX_PRECISION))
        scores.dtype = (uint8_t)ir_attr_i(c->node, IR_ATTR_FLEX_ATTENTION_SOFTMAX_PRECISION);
    else if (dt == IR_DTYPE_F64)
        scores.dtype = IR_DTYPE_F64;
    if (q && q->rank == 4)
        for (int i = 0; i < 3; i++) {
            shape_set_dim(&y, i, shape_dim(q, i));
            shape_set_dim(&scores, i, shape_dim(q, i));
        }
    if (v && v->rank == 4) shape_set_dim(&y, 3, shape_dim(v, 3));
    if (k && k->rank == 4) shape_set_dim(&scores, 3, shape_dim(k, 2));
    IrAttrId mods[2] = {IR_ATTR_FLEX_ATTENTION_SCORE_MOD, IR_ATTR_FLEX_ATTENTION_PROB_MOD};
    for (int i = 0; i < 2; i++) {
        const IrAttr *a = ir_node_attr(c->node, mods[i]);
        if (a->present && a->n >= 1 && a->graphs) shape_infer_subgraph(c, a->graphs[0], &scores, 1);
    }
    c->out[0] = y;
}
