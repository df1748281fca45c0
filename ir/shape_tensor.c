/* Shape inference of tensor manipulation ops: Constant, Shape, Reshape, Concat, Split,
 * Slice, Gather, Squeeze, Unsqueeze, Expand, Pad, Tile, Range, Resize and the rest whose
 * output shape depends on input values. Values are used when constant (initializers,
 * Constant outputs or partial evaluation of shape arithmetic, which these functions also
 * extend: Shape -> Gather -> Concat -> Reshape chains stay known when shapes are static). */
#include <stdint.h>

#include "shape.h"

#include <math.h>
#include <string.h>

static IrType copy_in(const ShapeCtx *c, uint32_t i) {
    const IrType *t = shape_in(c, i);
    return t ? *t : shape_unknown();
}

/* Known int64 contents of input i with its shape; false when unknown. */
static bool known_ints(const ShapeCtx *c, uint32_t i, int64_t *buf, uint32_t *n,
                       const IrTensor **t) {
    *t = shape_const(c, i);
    if (!*t || ((*t)->dtype != IR_DTYPE_I64 && (*t)->dtype != IR_DTYPE_I32)) return false;
    return shape_tensor_ints(*t, buf, SHAPE_MAX_KNOWN_ELEMS, n);
}

/* Value of 1-D int input i as axes/sizes (from an attribute before opset `since`). */
static bool ints_from(const ShapeCtx *c, uint32_t in, IrAttrId attr, int32_t since,
                      int64_t *buf, uint32_t cap, uint32_t *n, bool *given) {
    if (shape_opset(c) < since) {
        const int64_t *v = ir_attr_ints(c->node, attr, n);
        *given = v != NULL;
        if (!v) return true;
        if (*n > cap) return false;
        memcpy(buf, v, *n * sizeof *v);
        return true;
    }
    *given = shape_has_in(c, in);
    if (!*given) {
        *n = 0;
        return true;
    }
    return shape_const_ints(c, in, buf, cap, n);
}

/* ---- constants and shape queries ---- */

void shape_constant(ShapeCtx *c) {
    const IrNode *n = c->node;
    IrArena *a = c->g->arena;
    IrTensor *t = NULL;
    if (ir_attr_present(n, IR_ATTR_CONSTANT_VALUE)) {
        t = ir_node_attr(n, IR_ATTR_CONSTANT_VALUE)->tensors;
    } else if (ir_attr_present(n, IR_ATTR_CONSTANT_SPARSE_VALUE)) {
        t = ir_node_attr(n, IR_ATTR_CONSTANT_SPARSE_VALUE)->tensors;
    } else if (ir_attr_present(n, IR_ATTR_CONSTANT_VALUE_INT)) {
        t = ir_tensor_new(a, IR_DTYPE_I64, 0, NULL);
        int64_t v = ir_attr_i(n, IR_ATTR_CONSTANT_VALUE_INT);
        memcpy(t->data, &v, sizeof v);
    } else if (ir_attr_present(n, IR_ATTR_CONSTANT_VALUE_INTS)) {
        const IrAttr *at = ir_node_attr(n, IR_ATTR_CONSTANT_VALUE_INTS);
        int64_t d = at->n;
        t = ir_tensor_new(a, IR_DTYPE_I64, 1, &d);
        if (d) memcpy(t->data, at->ints, (size_t)d * sizeof(int64_t));
    } else if (ir_attr_present(n, IR_ATTR_CONSTANT_VALUE_FLOAT)) {
        t = ir_tensor_new(a, IR_DTYPE_F32, 0, NULL);
        float v = ir_attr_f(n, IR_ATTR_CONSTANT_VALUE_FLOAT);
        memcpy(t->data, &v, sizeof v);
    } else if (ir_attr_present(n, IR_ATTR_CONSTANT_VALUE_FLOATS)) {
        const IrAttr *at = ir_node_attr(n, IR_ATTR_CONSTANT_VALUE_FLOATS);
        int64_t d = at->n;
        t = ir_tensor_new(a, IR_DTYPE_F32, 1, &d);
        if (d) memcpy(t->data, at->floats, (size_t)d * sizeof(float));
    } else if (ir_attr_present(n, IR_ATTR_CONSTANT_VALUE_STRING)) {
        c->out[0] = shape_tensor(IR_DTYPE_STRING, 0);
        return;
    } else if (ir_attr_present(n, IR_ATTR_CONSTANT_VALUE_STRINGS)) {
        int64_t d = ir_node_attr(n, IR_ATTR_CONSTANT_VALUE_STRINGS)->n;
        c->out[0] = ir_type_tensor(IR_DTYPE_STRING, 1, &d);
        return;
    }
    if (!t) {
        shape_error(c, "Constant without a value attribute");
        return;
    }
    c->out[0] = ir_type_tensor((IrDType)t->dtype, t->rank, t->dims);
    shape_set_known(c, 0, t);
}

void shape_identity(ShapeCtx *c) {
    c->out[0] = copy_in(c, 0);
    shape_set_known(c, 0, (IrTensor *)shape_const(c, 0));
}

void shape_shape(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    IrType o = shape_tensor(IR_DTYPE_I64, 1);
    c->out[0] = o;
    if (!x || x->rank < 0) return;
    int64_t r = x->rank, start = 0, end = r;
    if (shape_opset(c) >= 15) {
        start = ir_attr_i(c->node, IR_ATTR_SHAPE_START);
        if (ir_attr_present(c->node, IR_ATTR_SHAPE_END)) end = ir_attr_i(c->node, IR_ATTR_SHAPE_END);
    }
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    int64_t len = end > start ? end - start : 0;
    shape_set_dim(&c->out[0], 0, shape_dim_static(len));
    int64_t vals[IR_MAX_RANK];
    for (int64_t i = 0; i < len; i++) {
        vals[i] = x->dims[start + i];
        if (vals[i] < 0) return;
    }
    shape_set_known(c, 0, shape_new_i64(c, 1, &len, vals));
}

void shape_size(ShapeCtx *c) {
    c->out[0] = shape_tensor(IR_DTYPE_I64, 0);
    const IrType *x = shape_in(c, 0);
    int64_t n = x ? ir_type_numel(x) : -1;
    if (n >= 0) shape_set_known(c, 0, shape_new_i64(c, 0, NULL, &n));
}

/* ---- reshaping ---- */

void shape_reshape(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    IrDType dt = shape_dtype(c, 0);
    int64_t s[IR_MAX_RANK];
    uint32_t n;
    bool ok;
    if (shape_opset(c) < 5) {
        const int64_t *v = ir_attr_ints(c->node, IR_ATTR_RESHAPE_SHAPE, &n);
        ok = v && n <= IR_MAX_RANK;
        if (ok) memcpy(s, v, n * sizeof *v);
    } else {
        ok = shape_const_ints(c, 1, s, IR_MAX_RANK, &n);
    }
    if (!ok) {
        const IrType *st = shape_in(c, 1);
        int r = st && st->rank == 1 && st->dims[0] >= 0 && st->dims[0] <= IR_MAX_RANK
                    ? (int)st->dims[0]
                    : -1;
        c->out[0] = shape_tensor(dt, r);
        return;
    }
    bool allowzero = shape_opset(c) >= 14 && ir_attr_i(c->node, IR_ATTR_RESHAPE_ALLOWZERO);
    IrType o = shape_tensor(dt, (int)n);
    int infer_at = -1;
    int64_t known_prod = 1;
    bool prod_ok = true;
    for (uint32_t i = 0; i < n; i++) {
        ShapeDim d;
        if (s[i] == 0 && !allowzero) d = x ? shape_dim(x, (int)i) : shape_dim_unknown();
        else if (s[i] == -1) {
            if (infer_at >= 0) {
                shape_error(c, "more than one -1 in the target shape");
                return;
            }
            infer_at = (int)i;
            continue;
        } else if (s[i] < -1) {
            shape_error(c, "invalid target dimension %lld", (long long)s[i]);
            return;
        } else d = shape_dim_static(s[i]);
        shape_set_dim(&o, (int)i, d);
        if (d.v > 0 && known_prod > INT64_MAX / d.v) {
            shape_error(c, "the target shape has more than 2^63 elements");
            return;
        }
        if (d.v >= 0) known_prod *= d.v;
        else prod_ok = false;
    }
    int64_t total = x ? ir_type_numel(x) : -1;
    if (infer_at >= 0 && prod_ok && total >= 0 && known_prod > 0) {
        if (total % known_prod) {
            shape_error(c, "cannot reshape %lld elements into the target shape",
                        (long long)total);
            return;
        }
        shape_set_dim(&o, infer_at, shape_dim_static(total / known_prod));
    }
    if (infer_at < 0 && prod_ok && total >= 0 && total != known_prod) {
        shape_error(c, "cannot reshape %lld elements into %lld", (long long)total,
                    (long long)known_prod);
        return;
    }
    c->out[0] = o;
    shape_eval_relabel(c, 0);
}

/* Product of dims [lo, hi); a single symbolic dim passes through. */
static ShapeDim dims_product(const IrType *t, int lo, int hi) {
    if (hi - lo == 1) return shape_dim(t, lo);
    int64_t p = 1;
    for (int i = lo; i < hi; i++) {
        if (t->dims[i] < 0) return shape_dim_unknown();
        p *= t->dims[i];
    }
    return shape_dim_static(p);
}

void shape_flatten(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    IrType o = shape_tensor(shape_dtype(c, 0), 2);
    c->out[0] = o;
    if (!x || x->rank < 0) return;
    int64_t axis = ir_attr_i(c->node, IR_ATTR_FLATTEN_AXIS);
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis > x->rank) {
        shape_error(c, "axis %lld out of range for rank %d", (long long)axis, x->rank);
        return;
    }
    shape_set_dim(&c->out[0], 0, dims_product(x, 0, (int)axis));
    shape_set_dim(&c->out[0], 1, dims_product(x, (int)axis, x->rank));
    shape_eval_relabel(c, 0);
}

void shape_transpose(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    IrDType dt = shape_dtype(c, 0);
    c->out[0] = shape_tensor(dt, -1);
    if (!x || x->rank < 0) return;
    uint32_t n;
    const int64_t *perm = ir_attr_ints(c->node, IR_ATTR_TRANSPOSE_PERM, &n);
    if (perm && n != (uint32_t)x->rank) {
        shape_error(c, "perm has %u entries for rank %d", n, x->rank);
        return;
    }
    IrType o = shape_tensor(dt, x->rank);
    bool seen[IR_MAX_RANK] = {false};
    for (int i = 0; i < x->rank; i++) {
        int64_t p = perm ? perm[i] : x->rank - 1 - i;
        if (p < 0) p += x->rank;
        if (p < 0 || p >= x->rank || seen[p]) {
            shape_error(c, "invalid perm");
            return;
        }
        seen[p] = true;
        shape_set_dim(&o, i, shape_dim(x, (int)p));
    }
    c->out[0] = o;
}

void shape_concat(ShapeCtx *c) {
    IrDType dt = IR_DTYPE_UNDEF;
    int r = -1;
    for (uint32_t i = 0; i < c->node->n_inputs; i++) {
        if (!dt) dt = shape_dtype(c, i);
        if (r < 0) r = shape_rank(c, i);
    }
    c->out[0] = shape_tensor(dt, r);
    if (r < 0) return;
    int axis;
    if (!shape_axis(c, ir_attr_i(c->node, IR_ATTR_CONCAT_AXIS), r, &axis)) return;
    IrType o = shape_tensor(dt, r);
    int64_t sum = 0;
    bool sum_ok = true;
    for (uint32_t i = 0; i < c->node->n_inputs; i++) {
        const IrType *t = shape_in(c, i);
        if (!t || t->rank < 0) {
            sum_ok = false;
            continue;
        }
        if (t->rank != r) {
            shape_error(c, "inputs have ranks %d and %d", r, t->rank);
            return;
        }
        for (int k = 0; k < r; k++) {
            ShapeDim d = shape_dim(t, k);
            if (k == axis) {
                if (d.v >= 0) sum += d.v;
                else sum_ok = false;
                continue;
            }
            ShapeDim cur = shape_dim(&o, k);
            if (cur.v >= 0 && d.v >= 0 && cur.v != d.v) {
                shape_error(c, "inputs differ in dimension %d: %lld and %lld", k,
                            (long long)cur.v, (long long)d.v);
                return;
            }
            if (cur.v < 0 && (d.v >= 0 || !cur.sym)) shape_set_dim(&o, k, d);
        }
    }
    if (sum_ok) shape_set_dim(&o, axis, shape_dim_static(sum));
    c->out[0] = o;
    shape_eval_concat(c, axis);
}

void shape_split(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    IrDType dt = shape_dtype(c, 0);
    uint32_t k = c->n_out;
    for (uint32_t i = 0; i < k; i++) c->out[i] = shape_tensor(dt, x ? x->rank : -1);
    if (!x || x->rank < 0) return;
    for (uint32_t i = 0; i < k; i++) c->out[i] = *x;
    int axis;
    if (!shape_axis(c, ir_attr_i(c->node, IR_ATTR_SPLIT_AXIS), x->rank, &axis)) return;
    int64_t sizes[IR_ARITY_VARIADIC + 1];
    uint32_t n = 0;
    bool given;
    bool ok = ints_from(c, 1, IR_ATTR_SPLIT_SPLIT, 13, sizes, IR_ARITY_VARIADIC, &n, &given);
    ShapeDim d = shape_dim(x, axis);
    if (given && (!ok || n != k)) {
        if (ok) shape_error(c, "split has %u sizes for %u outputs", n, k);
        for (uint32_t i = 0; i < k; i++) shape_set_dim(&c->out[i], axis, shape_dim_unknown());
        return;
    }
    if (!given) {
        if (d.v < 0) {
            for (uint32_t i = 0; i < k; i++) shape_set_dim(&c->out[i], axis, shape_dim_unknown());
            return;
        }
        /* equal parts, the last one smaller; k may exceed sizes' room (a node may have more
         * outputs than IR_ARITY_VARIADIC), so no array */
        int64_t chunk = (d.v + k - 1) / k;
        for (uint32_t i = 0; i < k; i++) {
            int64_t left = d.v - chunk * i;
            int64_t size = left < chunk ? (left > 0 ? left : 0) : chunk;
            shape_set_dim(&c->out[i], axis, shape_dim_static(size));
        }
        return;
    }
    for (uint32_t i = 0; i < k; i++) shape_set_dim(&c->out[i], axis, shape_dim_static(sizes[i]));
}

/* Elements selected along one axis of size d by start:end:step (ONNX clamping rules). */
static int64_t slice_len(int64_t d, int64_t s, int64_t e, int64_t st, int64_t *first) {
    if (s < 0) s += d;
    if (e < 0) e += d;
    int64_t len;
    if (st > 0) {
        s = s < 0 ? 0 : s > d ? d : s;
        e = e < 0 ? 0 : e > d ? d : e;
        len = e > s ? (e - s + st - 1) / st : 0;
    } else {
        s = s < 0 ? 0 : s > d - 1 ? d - 1 : s;
        e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
        len = s > e ? (s - e + (-st) - 1) / (-st) : 0;
    }
    *first = s;
    return len;
}

void shape_slice(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    IrDType dt = shape_dtype(c, 0);
    c->out[0] = shape_tensor(dt, x ? x->rank : -1);
    if (!x || x->rank < 0) return;
    int r = x->rank;
    int64_t starts[IR_MAX_RANK], ends[IR_MAX_RANK], axes[IR_MAX_RANK], steps[IR_MAX_RANK];
    uint32_t ns, ne, na = 0, nst = 0;
    bool ok;
    if (shape_opset(c) < 10) {
        const int64_t *v;
        v = ir_attr_ints(c->node, IR_ATTR_SLICE_STARTS, &ns);
        ok = v && ns <= IR_MAX_RANK;
        if (ok) memcpy(starts, v, ns * sizeof *v);
        v = ir_attr_ints(c->node, IR_ATTR_SLICE_ENDS, &ne);
        ok = ok && v && ne <= IR_MAX_RANK;
        if (ok) memcpy(ends, v, ne * sizeof *v);
        v = ir_attr_ints(c->node, IR_ATTR_SLICE_AXES, &na);
        if (v && na <= IR_MAX_RANK) memcpy(axes, v, na * sizeof *v);
        else na = 0;
    } else {
        ok = shape_const_ints(c, 1, starts, IR_MAX_RANK, &ns) &&
             shape_const_ints(c, 2, ends, IR_MAX_RANK, &ne);
        if (shape_has_in(c, 3)) ok = ok && shape_const_ints(c, 3, axes, IR_MAX_RANK, &na);
        if (shape_has_in(c, 4)) ok = ok && shape_const_ints(c, 4, steps, IR_MAX_RANK, &nst);
    }
    if (!ok || ns != ne || (na && na != ns) || (nst && nst != ns)) return;
    IrType o = *x;
    o.kind = IR_TYPE_TENSOR;
    int64_t first[IR_MAX_RANK] = {0}, step_of[IR_MAX_RANK];
    bool sliced[IR_MAX_RANK] = {false};
    for (int i = 0; i < r; i++) step_of[i] = 1;
    for (uint32_t i = 0; i < ns; i++) {
        int axis;
        if (!shape_axis(c, na ? axes[i] : (int64_t)i, r, &axis)) return;
        int64_t st = nst ? steps[i] : 1;
        if (st == 0) {
            shape_error(c, "slice step is zero");
            return;
        }
        sliced[axis] = true;
        step_of[axis] = st;
        ShapeDim d = shape_dim(x, axis);
        if (d.v < 0) {
            shape_set_dim(&o, axis, shape_dim_unknown());
            continue;
        }
        shape_set_dim(&o, axis, shape_dim_static(slice_len(d.v, starts[i], ends[i], st, &first[axis])));
    }
    c->out[0] = o;
    /* partial evaluation of 1-D known values */
    ShapeVals xv, res;
    if (r != 1 || !shape_in_vals(c, 0, &xv) || !shape_vals_init(&res, xv.dtype, &o)) return;
    (void)sliced;
    for (uint32_t i = 0; i < res.n; i++) {
        int64_t j = first[0] + (int64_t)i * step_of[0];
        if (j < 0 || j >= (int64_t)xv.n) return;
        res.i[i] = xv.is_float ? 0 : xv.i[j];
        res.f[i] = xv.is_float ? xv.f[j] : 0;
    }
    shape_set_known_vals(c, 0, &res);
}

/* ---- gathers ---- */

void shape_gather(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0), *idx = shape_in(c, 1);
    IrDType dt = shape_dtype(c, 0);
    c->out[0] = shape_tensor(dt, -1);
    if (!x || !idx || x->rank < 0 || idx->rank < 0) return;
    int axis;
    if (!shape_axis(c, ir_attr_i(c->node, IR_ATTR_GATHER_AXIS), x->rank, &axis)) return;
    int r = x->rank + idx->rank - 1;
    if (r > IR_MAX_RANK) return;
    IrType o = shape_tensor(dt, r);
    int k = 0;
    for (int i = 0; i < axis; i++) shape_set_dim(&o, k++, shape_dim(x, i));
    for (int i = 0; i < idx->rank; i++) shape_set_dim(&o, k++, shape_dim(idx, i));
    for (int i = axis + 1; i < x->rank; i++) shape_set_dim(&o, k++, shape_dim(x, i));
    c->out[0] = o;
    /* partial evaluation: 1-D known data, known indices */
    const IrTensor *ki;
    int64_t iv[SHAPE_MAX_KNOWN_ELEMS];
    uint32_t ni;
    ShapeVals xv, res;
    if (x->rank != 1 || !shape_in_vals(c, 0, &xv) || !known_ints(c, 1, iv, &ni, &ki) ||
        !shape_vals_init(&res, xv.dtype, &o) || res.n != ni)
        return;
    for (uint32_t i = 0; i < ni; i++) {
        int64_t j = iv[i] < 0 ? iv[i] + xv.n : iv[i];
        if (j < 0 || j >= (int64_t)xv.n) {
            shape_error(c, "index %lld out of range", (long long)iv[i]);
            return;
        }
        res.i[i] = xv.is_float ? 0 : xv.i[j];
        res.f[i] = xv.is_float ? xv.f[j] : 0;
    }
    shape_set_known_vals(c, 0, &res);
}

void shape_gather_elements(ShapeCtx *c) {
    IrType t = copy_in(c, 1);
    t.kind = IR_TYPE_TENSOR;
    t.dtype = (uint8_t)shape_dtype(c, 0);
    c->out[0] = t;
}

void shape_gather_nd(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0), *idx = shape_in(c, 1);
    IrDType dt = shape_dtype(c, 0);
    c->out[0] = shape_tensor(dt, -1);
    if (!x || !idx || x->rank < 0 || idx->rank < 1) return;
    int64_t b = ir_attr_i(c->node, IR_ATTR_GATHER_ND_BATCH_DIMS);
    int64_t m = idx->dims[idx->rank - 1];
    if (m < 0) return;
    int64_t r = idx->rank - 1 + x->rank - m - b;
    if (r < 0 || r > IR_MAX_RANK || b + m > x->rank) {
        shape_error(c, "indices do not fit the data rank");
        return;
    }
    IrType o = shape_tensor(dt, (int)r);
    int k = 0;
    for (int i = 0; i < idx->rank - 1; i++) shape_set_dim(&o, k++, shape_dim(idx, i));
    for (int64_t i = b + m; i < x->rank; i++) shape_set_dim(&o, k++, shape_dim(x, (int)i));
    c->out[0] = o;
}

/* ---- squeeze, unsqueeze, expand, pad, tile ---- */

void shape_squeeze(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    IrDType dt = shape_dtype(c, 0);
    c->out[0] = shape_tensor(dt, -1);
    int64_t axes[IR_MAX_RANK];
    uint32_t n;
    bool given;
    if (!ints_from(c, 1, IR_ATTR_SQUEEZE_AXES, 13, axes, IR_MAX_RANK, &n, &given) || !x ||
        x->rank < 0)
        return;
    bool drop[IR_MAX_RANK] = {false};
    if (given) {
        for (uint32_t i = 0; i < n; i++) {
            int a;
            if (!shape_axis(c, axes[i], x->rank, &a)) return;
            if (x->dims[a] >= 0 && x->dims[a] != 1) {
                shape_error(c, "cannot squeeze dimension %d of size %lld", a,
                            (long long)x->dims[a]);
                return;
            }
            drop[a] = true;
        }
    } else {
        for (int i = 0; i < x->rank; i++) {
            if (x->dims[i] < 0) return; /* might be 1: rank unknown */
            drop[i] = x->dims[i] == 1;
        }
    }
    IrType o = shape_tensor(dt, 0);
    for (int i = 0; i < x->rank; i++) {
        if (drop[i]) continue;
        o.rank++;
        shape_set_dim(&o, o.rank - 1, shape_dim(x, i));
    }
    c->out[0] = o;
    shape_eval_relabel(c, 0);
}

void shape_unsqueeze(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    IrDType dt = shape_dtype(c, 0);
    c->out[0] = shape_tensor(dt, -1);
    int64_t axes[IR_MAX_RANK];
    uint32_t n;
    bool given;
    if (!ints_from(c, 1, IR_ATTR_UNSQUEEZE_AXES, 13, axes, IR_MAX_RANK, &n, &given) || !given ||
        !x || x->rank < 0)
        return;
    int r = x->rank + (int)n;
    if (r > IR_MAX_RANK) {
        shape_error(c, "result rank %d above the limit %d", r, IR_MAX_RANK);
        return;
    }
    bool ins[IR_MAX_RANK] = {false};
    for (uint32_t i = 0; i < n; i++) {
        int a;
        if (!shape_axis(c, axes[i], r, &a)) return;
        if (ins[a]) {
            shape_error(c, "repeated axis %lld", (long long)axes[i]);
            return;
        }
        ins[a] = true;
    }
    IrType o = shape_tensor(dt, r);
    for (int i = 0, k = 0; i < r; i++)
        shape_set_dim(&o, i, ins[i] ? shape_dim_static(1) : shape_dim(x, k++));
    c->out[0] = o;
    shape_eval_relabel(c, 0);
}

void shape_expand(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    IrDType dt = shape_dtype(c, 0);
    int64_t s[IR_MAX_RANK];
    uint32_t n;
    c->out[0] = shape_tensor(dt, -1);
    if (!shape_const_ints(c, 1, s, IR_MAX_RANK, &n)) {
        const IrType *st = shape_in(c, 1);
        if (x && x->rank >= 0 && st && st->rank == 1 && st->dims[0] >= 0 &&
            st->dims[0] <= IR_MAX_RANK)
            c->out[0] = shape_tensor(dt, (int)(x->rank > st->dims[0] ? x->rank : st->dims[0]));
        return;
    }
    IrType target = ir_type_tensor(dt, (int)n, s);
    if (!x) return;
    IrType o = shape_tensor(dt, -1);
    if (!shape_broadcast(c, x, &target, &o)) return;
    c->out[0] = o;
    shape_eval_expand(c);
}

void shape_pad(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    IrDType dt = shape_dtype(c, 0);
    c->out[0] = shape_tensor(dt, x ? x->rank : -1);
    if (!x || x->rank < 0) return;
    int r = x->rank;
    int64_t pads[2 * IR_MAX_RANK], axes[IR_MAX_RANK];
    uint32_t np, na = 0;
    if (shape_opset(c) < 11) {
        IrAttrId id = shape_opset(c) < 2 ? IR_ATTR_PAD_PADDINGS : IR_ATTR_PAD_PADS;
        const int64_t *v = ir_attr_ints(c->node, id, &np);
        if (!v || np > 2 * IR_MAX_RANK) return;
        memcpy(pads, v, np * sizeof *v);
    } else if (!shape_const_ints(c, 1, pads, 2 * IR_MAX_RANK, &np)) {
        return;
    }
    if (shape_has_in(c, 3)) {
        if (!shape_const_ints(c, 3, axes, IR_MAX_RANK, &na)) return;
    } else {
        na = (uint32_t)r;
        for (int i = 0; i < r; i++) axes[i] = i;
    }
    if (np != 2 * na) {
        shape_error(c, "pads has %u entries for %u axes", np, na);
        return;
    }
    IrType o = *x;
    o.kind = IR_TYPE_TENSOR;
    for (uint32_t i = 0; i < na; i++) {
        int a;
        if (!shape_axis(c, axes[i], r, &a)) return;
        ShapeDim d = shape_dim(x, a);
        shape_set_dim(&o, a, d.v >= 0 ? shape_dim_static(d.v + pads[i] + pads[i + na])
                                      : shape_dim_unknown());
    }
    c->out[0] = o;
}

void shape_tile(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    IrDType dt = shape_dtype(c, 0);
    c->out[0] = shape_tensor(dt, x ? x->rank : -1);
    int64_t rep[IR_MAX_RANK];
    uint32_t n;
    if (!x || x->rank < 0 || !shape_const_ints(c, 1, rep, IR_MAX_RANK, &n)) return;
    if (n != (uint32_t)x->rank) {
        shape_error(c, "repeats has %u entries for rank %d", n, x->rank);
        return;
    }
    IrType o = *x;
    o.kind = IR_TYPE_TENSOR;
    for (int i = 0; i < x->rank; i++) {
        ShapeDim d = shape_dim(x, i);
        shape_set_dim(&o, i, d.v >= 0 ? shape_dim_static(d.v * rep[i])
                             : rep[i] == 1 ? d
                                           : shape_dim_unknown());
    }
    c->out[0] = o;
    shape_eval_tile(c);
}

/* ---- generators ---- */

void shape_constant_of_shape(ShapeCtx *c) {
    IrDType dt = IR_DTYPE_F32;
    const IrTensor *val = NULL;
    if (ir_attr_present(c->node, IR_ATTR_CONSTANT_OF_SHAPE_VALUE)) {
        val = ir_node_attr(c->node, IR_ATTR_CONSTANT_OF_SHAPE_VALUE)->tensors;
        if (val) dt = (IrDType)val->dtype;
    }
    int64_t s[IR_MAX_RANK];
    uint32_t n;
    if (!shape_const_ints(c, 0, s, IR_MAX_RANK, &n)) {
        const IrType *st = shape_in(c, 0);
        int r = st && st->rank == 1 && st->dims[0] >= 0 && st->dims[0] <= IR_MAX_RANK
                    ? (int)st->dims[0]
                    : -1;
        c->out[0] = shape_tensor(dt, r);
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        if (s[i] < 0) {
            shape_error(c, "negative dimension %lld", (long long)s[i]);
            return;
        }
    c->out[0] = ir_type_tensor(dt, (int)n, s);
    /* partial evaluation: the fill value (zero by default) repeated */
    ShapeVals fill, v;
    if (!shape_vals_init(&fill, dt, &c->out[0])) return;
    if (val && (!shape_vals_of(val, &v) || v.n != 1)) return;
    for (uint32_t i = 0; i < fill.n; i++) {
        fill.i[i] = val && !v.is_float ? v.i[0] : 0;
        fill.f[i] = val && v.is_float ? v.f[0] : 0;
    }
    shape_set_known_vals(c, 0, &fill);
}

/* Integer ranges are evaluated only with start and delta far from int64 overflow. */
#define SHAPE_RANGE_INT_LIMIT 1e15
/* An integer range longer than the known-value limit (position ids over a static sequence)
 * is still a compile-time constant: when folding, it is written straight into a tensor of up
 * to this many elements, so that no node computes it at run time. Float ranges stay nodes:
 * ONNX Runtime accumulates them step by step, which rounds differently. */
#define SHAPE_RANGE_FOLD_MAX 65536

static void fold_long_int_range(ShapeCtx *c, IrDType dt, int64_t len, int64_t start,
                                int64_t delta) {
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    size_t width = 8;
    if (dt == IR_DTYPE_I32) lo = INT32_MIN, hi = INT32_MAX, width = 4;
    else if (dt == IR_DTYPE_I16) lo = INT16_MIN, hi = INT16_MAX, width = 2;
    else if (dt != IR_DTYPE_I64) return;
    if (!(fabs((double)start + (double)(len - 1) * (double)delta) < SHAPE_RANGE_INT_LIMIT)) return;
    int64_t last = start + (len - 1) * delta;
    if (start < lo || start > hi || last < lo || last > hi) return;
    IrTensor *t = ir_tensor_new(c->g->arena, dt, 1, &len);
    uint8_t *p = t->data;
    for (int64_t i = 0; i < len; i++) {
        int64_t x = start + i * delta;
        if (width == 8) memcpy(p + 8 * i, &x, 8);
        else if (width == 4) memcpy(p + 4 * i, &(int32_t){(int32_t)x}, 4);
        else memcpy(p + 2 * i, &(int16_t){(int16_t)x}, 2);
    }
    shape_set_known(c, 0, t);
}

void shape_range(ShapeCtx *c) {
    IrDType dt = shape_dtype(c, 0);
    c->out[0] = shape_tensor(dt, 1);
    double v[3];
    uint32_t n;
    for (uint32_t i = 0; i < 3; i++)
        if (!shape_const_floats(c, i, &v[i], 1, &n)) return;
    if (v[2] == 0) {
        shape_error(c, "delta is zero");
        return;
    }
    double cnt = ceil((v[1] - v[0]) / v[2]);
    if (!(cnt < (double)INT64_MAX)) {
        shape_error(c, "the range has no finite length");
        return;
    }
    int64_t len = cnt > 0 ? (int64_t)cnt : 0;
    shape_set_dim(&c->out[0], 0, shape_dim_static(len));
    /* partial evaluation: start + i * delta, in the element type */
    bool int_ok = fabs(v[0]) < SHAPE_RANGE_INT_LIMIT && fabs(v[2]) < SHAPE_RANGE_INT_LIMIT;
    if (len > SHAPE_MAX_KNOWN_ELEMS) {
        if (c->st->fold && int_ok && len <= SHAPE_RANGE_FOLD_MAX)
            fold_long_int_range(c, dt, len, (int64_t)v[0], (int64_t)v[2]);
        return;
    }
    ShapeVals r;
    if (!shape_vals_init(&r, dt, &c->out[0])) return;
    if (!r.is_float && !int_ok) return;
    for (uint32_t i = 0; i < r.n; i++) {
        int64_t iv = (int64_t)v[0] + (int64_t)i * (int64_t)v[2];
        if (!shape_vals_put(&r, i, r.is_float, iv, v[0] + (double)i * v[2])) return;
    }
    shape_set_known_vals(c, 0, &r);
}

/* Resize (opset 10: X, scales; 11+: X, roi, scales, sizes; 18+: axes) and Upsample. */
void shape_resize(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    IrDType dt = shape_dtype(c, 0);
    c->out[0] = shape_tensor(dt, x ? x->rank : -1);
    if (!x || x->rank < 0) return;
    int r = x->rank;
    double scales[IR_MAX_RANK];
    int64_t sizes[IR_MAX_RANK], axes[IR_MAX_RANK];
    uint32_t nsc = 0, nsz = 0, na = 0;
    bool is_up = c->node->op == IR_OP_UPSAMPLE;
    int32_t ver = shape_opset(c);
    uint32_t scales_in = is_up || ver < 11 ? 1 : 2;
    bool have_scales = false, have_sizes = false;
    if (is_up && ver < 9) {
        const IrAttr *a = ir_node_attr(c->node, IR_ATTR_UPSAMPLE_SCALES);
        if (a->present && a->n <= IR_MAX_RANK) {
            for (uint32_t i = 0; i < a->n; i++) scales[i] = a->floats[i];
            nsc = a->n;
            have_scales = true;
        }
    } else if (shape_has_in(c, scales_in)) {
        const IrTensor *t = shape_const(c, scales_in);
        if (!t) return;
        have_scales = t->n_elems > 0 && shape_tensor_floats(t, scales, IR_MAX_RANK, &nsc);
        if (t->n_elems > 0 && !have_scales) return;
    }
    if (!is_up && ver >= 11 && shape_has_in(c, 3)) {
        const IrTensor *t = shape_const(c, 3);
        if (!t) return;
        have_sizes = t->n_elems > 0 && shape_tensor_ints(t, sizes, IR_MAX_RANK, &nsz);
        if (t->n_elems > 0 && !have_sizes) return;
    }
    uint32_t cnt = have_sizes ? nsz : nsc;
    if (!is_up && ver >= 18) {
        const int64_t *av = ir_attr_ints(c->node, IR_ATTR_RESIZE_AXES, &na);
        if (av && na <= IR_MAX_RANK) memcpy(axes, av, na * sizeof *av);
        else na = 0;
    }
    if (!na) {
        na = (uint32_t)r;
        for (int i = 0; i < r; i++) axes[i] = i;
    }
    if (!have_scales && !have_sizes) return;
    if (cnt != na) {
        shape_error(c, "%s has %u entries for %u axes", have_sizes ? "sizes" : "scales", cnt,
                    na);
        return;
    }
    IrType o = *x;
    o.kind = IR_TYPE_TENSOR;
    const char *policy = !is_up && ver >= 18
                             ? ir_attr_s(c->node, IR_ATTR_RESIZE_KEEP_ASPECT_RATIO_POLICY)
                             : "stretch";
    bool keep = have_sizes && strcmp(policy, "stretch") != 0;
    double keep_scale = 0;
    if (keep) {
        bool larger = strcmp(policy, "not_smaller") == 0;
        for (uint32_t i = 0; i < na; i++) {
            int a;
            if (!shape_axis(c, axes[i], r, &a)) return;
            if (x->dims[a] <= 0) return;
            double s = (double)sizes[i] / (double)x->dims[a];
            if (i == 0 || (larger ? s > keep_scale : s < keep_scale)) keep_scale = s;
        }
    }
    for (uint32_t i = 0; i < na; i++) {
        int a;
        if (!shape_axis(c, axes[i], r, &a)) return;
        ShapeDim d = shape_dim(x, a);
        ShapeDim od = shape_dim_unknown();
        if (keep) od = shape_dim_static((int64_t)roundf((float)(keep_scale * (double)d.v)));
        else if (have_sizes) od = shape_dim_static(sizes[i]);
        else if (d.v >= 0) od = shape_dim_static((int64_t)floorf((float)d.v * (float)scales[i]));
        else if (scales[i] == 1.0) od = d;
        shape_set_dim(&o, a, od);
    }
    c->out[0] = o;
}

/* ---- selection ---- */

void shape_top_k(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    IrType o = copy_in(c, 0);
    o.kind = IR_TYPE_TENSOR;
    if (o.rank >= 0) {
        int axis;
        if (!shape_axis(c, ir_attr_i(c->node, IR_ATTR_TOP_K_AXIS), x->rank, &axis)) return;
        int64_t k = -1;
        uint32_t n;
        if (shape_opset(c) < 10) k = ir_attr_i(c->node, IR_ATTR_TOP_K_K);
        else if (!shape_const_ints(c, 1, &k, 1, &n)) k = -1;
        shape_set_dim(&o, axis, shape_dim_static(k));
    }
    c->out[0] = o;
    if (c->n_out > 1) {
        c->out[1] = o;
        c->out[1].dtype = IR_DTYPE_I64;
    }
}

void shape_one_hot(ShapeCtx *c) {
    const IrType *idx = shape_in(c, 0);
    IrDType dt = shape_dtype(c, 2);
    c->out[0] = shape_tensor(dt, -1);
    if (!idx || idx->rank < 0 || idx->rank + 1 > IR_MAX_RANK) return;
    int r = idx->rank + 1;
    int axis;
    if (!shape_axis(c, ir_attr_i(c->node, IR_ATTR_ONE_HOT_AXIS), r, &axis)) return;
    double depth;
    uint32_t n;
    ShapeDim dd = shape_const_floats(c, 1, &depth, 1, &n) ? shape_dim_static((int64_t)depth)
                                                          : shape_dim_unknown();
    IrType o = shape_tensor(dt, r);
    for (int i = 0, k = 0; i < r; i++) shape_set_dim(&o, i, i == axis ? dd : shape_dim(idx, k++));
    c->out[0] = o;
}

/* Data-dependent sizes (NonZero, Unique, Compress, NonMaxSuppression): the size along the
 * counted axis comes from the data, so the compiled shape is an upper bound (docs/bundle.md).
 * The model's declared static size there is the bound when it has one (left to the merge);
 * else inference gives the largest count the input allows. */

/* Output k's size along axis as the model (or an earlier inference) declared it, or -1. */
static int64_t count_declared(const ShapeCtx *c, uint32_t k, int axis) {
    if (k >= c->node->n_outputs) return -1;
    uint32_t v = c->node->outputs[k];
    if (v == IR_NONE || v >= c->g->n_values) return -1;
    const IrType *t = &c->g->values[v].type;
    return t->kind == IR_TYPE_TENSOR && axis < t->rank ? t->dims[axis] : -1;
}

/* Sets dim axis of t to the bound unless the model declared that size itself. */
static void count_bound(const ShapeCtx *c, IrType *t, uint32_t k, int axis, int64_t bound) {
    if (bound >= 0 && count_declared(c, k, axis) < 0)
        shape_set_dim(t, axis, shape_dim_static(bound));
}

void shape_non_zero(ShapeCtx *c) {
    IrType o = shape_tensor(IR_DTYPE_I64, 2);
    const IrType *x = shape_in(c, 0);
    int r = shape_rank(c, 0);
    if (r >= 0) shape_set_dim(&o, 0, shape_dim_static(r));
    if (x && r >= 0 && ir_type_is_static(x)) count_bound(c, &o, 0, 1, ir_type_numel(x));
    c->out[0] = o;
}

void shape_unique(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    IrDType dt = shape_dtype(c, 0);
    bool has_axis = ir_attr_present(c->node, IR_ATTR_UNIQUE_AXIS);
    IrType y = shape_tensor(dt, 1);
    IrType idx = shape_tensor(IR_DTYPE_I64, 1);
    IrType cnt = shape_tensor(IR_DTYPE_I64, 1);
    IrType inv = shape_tensor(IR_DTYPE_I64, 1);
    int axis = 0;
    int64_t slices = -1; /* L: the slices compared, the most unique ones there can be */
    if (has_axis) {
        if (!x || x->rank < 0) y.rank = -1;
        else {
            if (!shape_axis(c, ir_attr_i(c->node, IR_ATTR_UNIQUE_AXIS), x->rank, &axis)) return;
            y = *x;
            y.kind = IR_TYPE_TENSOR;
            shape_set_dim(&y, axis, shape_dim_unknown());
            shape_set_dim(&inv, 0, shape_dim(x, axis));
            slices = x->dims[axis];
        }
    } else if (x && x->rank >= 0 && ir_type_is_static(x)) {
        slices = ir_type_numel(x);
        shape_set_dim(&inv, 0, shape_dim_static(slices));
    }
    /* y, indices and counts share one bound: a declared one of them, else L */
    int64_t bound = count_declared(c, 0, axis);
    if (bound < 0) bound = count_declared(c, 1, 0);
    if (bound < 0) bound = count_declared(c, 3, 0);
    if (bound < 0) bound = slices;
    if (y.rank >= 0) count_bound(c, &y, 0, axis, bound);
    count_bound(c, &idx, 1, 0, bound);
    count_bound(c, &cnt, 3, 0, bound);
    c->out[0] = y;
    if (c->n_out > 1) c->out[1] = idx;
    if (c->n_out > 2) c->out[2] = inv;
    if (c->n_out > 3) c->out[3] = cnt;
}

void shape_compress(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    const IrType *ct = shape_in(c, 1);
    IrDType dt = shape_dtype(c, 0);
    const IrTensor *cond = shape_const(c, 1);
    int64_t kept = -1;
    int64_t cv[SHAPE_MAX_CONST_ELEMS];
    uint32_t n;
    if (cond && shape_tensor_ints(cond, cv, SHAPE_MAX_CONST_ELEMS, &n)) {
        kept = 0;
        for (uint32_t i = 0; i < n; i++) kept += cv[i] != 0;
    }
    /* without a constant condition: the extent compressed (or fewer conditions) bounds it */
    int64_t n_cond = ct && ct->rank >= 0 && ir_type_is_static(ct) ? ir_type_numel(ct) : -1;
    if (!ir_attr_present(c->node, IR_ATTR_COMPRESS_AXIS)) {
        IrType o = shape_tensor(dt, 1);
        if (kept >= 0) shape_set_dim(&o, 0, shape_dim_static(kept));
        else if (x && x->rank >= 0 && ir_type_is_static(x)) {
            int64_t numel = ir_type_numel(x);
            count_bound(c, &o, 0, 0, n_cond >= 0 && n_cond < numel ? n_cond : numel);
        }
        c->out[0] = o;
        return;
    }
    c->out[0] = shape_tensor(dt, x ? x->rank : -1);
    if (!x || x->rank < 0) return;
    int axis;
    if (!shape_axis(c, ir_attr_i(c->node, IR_ATTR_COMPRESS_AXIS), x->rank, &axis)) return;
    IrType o = *x;
    o.kind = IR_TYPE_TENSOR;
    shape_set_dim(&o, axis, shape_dim_static(kept));
    if (kept < 0 && x->dims[axis] >= 0)
        count_bound(c, &o, 0, axis, n_cond >= 0 && n_cond < x->dims[axis] ? n_cond : x->dims[axis]);
    c->out[0] = o;
}

void shape_nms(ShapeCtx *c) {
    IrType o = shape_tensor(IR_DTYPE_I64, 2);
    shape_set_dim(&o, 1, shape_dim_static(3));
    /* boxes (B, n, 4), scores (B, C, n): at most min(max_output_boxes_per_class, n) per
     * (batch, class); a max read from data bounds nothing, an absent one is 0 */
    const IrType *b = shape_in(c, 0), *s = shape_in(c, 1);
    if (b && s && b->rank == 3 && s->rank == 3 && b->dims[0] >= 0 && b->dims[1] >= 0 &&
        s->dims[1] >= 0) {
        int64_t per_class = shape_has_in(c, 2) ? b->dims[1] : 0, m;
        uint32_t k;
        if (shape_has_in(c, 2) && shape_const_ints(c, 2, &m, 1, &k) && k == 1)
            per_class = m < 0 ? 0 : m < per_class ? m : per_class;
        count_bound(c, &o, 0, 0, b->dims[0] * s->dims[1] * per_class);
    }
    c->out[0] = o;
}

void shape_center_crop_pad(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    IrDType dt = shape_dtype(c, 0);
    c->out[0] = shape_tensor(dt, x ? x->rank : -1);
    int64_t s[IR_MAX_RANK];
    uint32_t n, na;
    if (!x || x->rank < 0 || !shape_const_ints(c, 1, s, IR_MAX_RANK, &n)) return;
    const int64_t *axes = ir_attr_ints(c->node, IR_ATTR_CENTER_CROP_PAD_AXES, &na);
    if (!axes) na = n;
    if (na != n || (!axes && n != (uint32_t)x->rank)) {
        shape_error(c, "shape has %u entries for %u axes", n, na);
        return;
    }
    IrType o = *x;
    o.kind = IR_TYPE_TENSOR;
    for (uint32_t i = 0; i < n; i++) {
        int a;
        if (!shape_axis(c, axes ? axes[i] : (int64_t)i, x->rank, &a)) return;
        shape_set_dim(&o, a, shape_dim_static(s[i]));
    }
    c->out[0] = o;
}

/* ---- signal processing ---- */

void shape_window(ShapeCtx *c) {
    IrAttrId dt_attr = c->node->op == IR_OP_HANN_WINDOW      ? IR_ATTR_HANN_WINDOW_OUTPUT_DATATYPE
                       : c->node->op == IR_OP_HAMMING_WINDOW ? IR_ATTR_HAMMING_WINDOW_OUTPUT_DATATYPE
                                                             : IR_ATTR_BLACKMAN_WINDOW_OUTPUT_DATATYPE;
    IrType o = shape_tensor((IrDType)ir_attr_i(c->node, dt_attr), 1);
    int64_t size;
    uint32_t n;
    if (shape_const_ints(c, 0, &size, 1, &n)) shape_set_dim(&o, 0, shape_dim_static(size));
    c->out[0] = o;
}

void shape_mel_weight_matrix(ShapeCtx *c) {
    IrType o = shape_tensor((IrDType)ir_attr_i(c->node, IR_ATTR_MEL_WEIGHT_MATRIX_OUTPUT_DATATYPE), 2);
    int64_t bins, dft;
    uint32_t n;
    if (shape_const_ints(c, 1, &dft, 1, &n)) shape_set_dim(&o, 0, shape_dim_static(dft / 2 + 1));
    if (shape_const_ints(c, 0, &bins, 1, &n)) shape_set_dim(&o, 1, shape_dim_static(bins));
    c->out[0] = o;
}

/* DFT: input (..., 1 or 2); output (..., 2) with the transformed axis resized. */
void shape_dft(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    IrDType dt = shape_dtype(c, 0);
    c->out[0] = shape_tensor(dt, x ? x->rank : -1);
    if (!x || x->rank < 2) return;
    int r = x->rank;
    int64_t axis_v = -2;
    uint32_t n;
    if (shape_opset(c) < 20) axis_v = ir_attr_i(c->node, IR_ATTR_DFT_AXIS);
    else if (shape_has_in(c, 2) && !shape_const_ints(c, 2, &axis_v, 1, &n)) return;
    int axis;
    if (!shape_axis(c, axis_v, r, &axis)) return;
    IrType o = *x;
    o.kind = IR_TYPE_TENSOR;
    shape_set_dim(&o, r - 1, shape_dim_static(2));
    ShapeDim len = shape_dim(x, axis);
    int64_t dl;
    if (shape_has_in(c, 1)) {
        len = shape_const_ints(c, 1, &dl, 1, &n) ? shape_dim_static(dl) : shape_dim_unknown();
    }
    bool onesided = ir_attr_i(c->node, IR_ATTR_DFT_ONESIDED) != 0;
    bool inverse = ir_attr_i(c->node, IR_ATTR_DFT_INVERSE) != 0;
    if (onesided && inverse) { /* irfft: the full real signal comes back */
        if (!shape_has_in(c, 1))
            len = len.v >= 1 ? shape_dim_static(2 * (len.v - 1)) : shape_dim_unknown();
        shape_set_dim(&o, r - 1, shape_dim_static(1));
    } else if (onesided) {
        len = len.v >= 0 ? shape_dim_static(len.v / 2 + 1) : shape_dim_unknown();
    }
    shape_set_dim(&o, axis, len);
    c->out[0] = o;
}

/* STFT: signal (B, L, 1|2), frame_step, window, frame_length -> (B, frames, bins, 2). */
void shape_stft(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0), *w = shape_in(c, 2);
    IrType o = shape_tensor(shape_dtype(c, 0), 4);
    shape_set_dim(&o, 3, shape_dim_static(2));
    if (x && x->rank == 3) shape_set_dim(&o, 0, shape_dim(x, 0));
    int64_t step = -1, flen = -1;
    uint32_t n;
    if (!shape_const_ints(c, 1, &step, 1, &n)) step = -1;
    if (shape_has_in(c, 3)) {
        if (!shape_const_ints(c, 3, &flen, 1, &n)) flen = -1;
    } else if (w && w->rank == 1) {
        flen = w->dims[0];
    }
    if (x && x->rank == 3 && x->dims[1] >= 0 && step > 0 && flen > 0)
        shape_set_dim(&o, 1, shape_dim_static((x->dims[1] - flen) / step + 1));
    if (flen > 0) {
        bool onesided = ir_attr_i(c->node, IR_ATTR_STFT_ONESIDED) != 0;
        shape_set_dim(&o, 2, shape_dim_static(onesided ? flen / 2 + 1 : flen));
    }
    c->out[0] = o;
}

/* ---- strings, text and ML ---- */

void shape_string_split(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    if (!x || x->rank < 0 || x->rank + 1 > IR_MAX_RANK) {
        c->out[0] = shape_tensor(IR_DTYPE_STRING, -1);
        if (c->n_out > 1) c->out[1] = shape_tensor(IR_DTYPE_I64, -1);
        return;
    }
    IrType y = *x;
    y.kind = IR_TYPE_TENSOR;
    y.dtype = IR_DTYPE_STRING;
    y.rank++;
    shape_set_dim(&y, y.rank - 1, shape_dim_unknown());
    c->out[0] = y;
    if (c->n_out > 1) {
        IrType z = *x;
        z.kind = IR_TYPE_TENSOR;
        z.dtype = IR_DTYPE_I64;
        c->out[1] = z;
    }
}

void shape_string_normalizer(ShapeCtx *c) {
    IrType t = copy_in(c, 0);
    t.kind = IR_TYPE_TENSOR;
    t.dtype = IR_DTYPE_STRING;
    uint32_t n = ir_node_attr(c->node, IR_ATTR_STRING_NORMALIZER_STOPWORDS)->n;
    if (n && t.rank > 0) shape_set_dim(&t, t.rank - 1, shape_dim_unknown());
    c->out[0] = t;
}

void shape_tfidf(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    uint32_t n;
    const int64_t *idx = ir_attr_ints(c->node, IR_ATTR_TF_IDF_VECTORIZER_NGRAM_INDEXES, &n);
    int64_t width = -1;
    for (uint32_t i = 0; idx && i < n; i++)
        if (idx[i] + 1 > width) width = idx[i] + 1;
    int r = x ? x->rank : -1;
    IrType o = shape_tensor(IR_DTYPE_F32, r);
    if (r == 1) shape_set_dim(&o, 0, shape_dim_static(width));
    if (r == 2) {
        shape_set_dim(&o, 0, shape_dim(x, 0));
        shape_set_dim(&o, 1, shape_dim_static(width));
    }
    c->out[0] = o;
}

void shape_image_decoder(ShapeCtx *c) {
    IrType o = shape_tensor(IR_DTYPE_U8, 3);
    bool gray = strcmp(ir_attr_s(c->node, IR_ATTR_IMAGE_DECODER_PIXEL_FORMAT), "Grayscale") == 0;
    shape_set_dim(&o, 2, shape_dim_static(gray ? 1 : 3));
    c->out[0] = o;
}

void shape_tree_ensemble(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0);
    IrType o = shape_tensor(shape_dtype(c, 0), 2);
    if (x && x->rank == 2) shape_set_dim(&o, 0, shape_dim(x, 0));
    shape_set_dim(&o, 1, shape_dim_static(ir_attr_i(c->node, IR_ATTR_TREE_ENSEMBLE_N_TARGETS)));
    c->out[0] = o;
}

/* X (..., C), indices Y -> (..., numel(Y)); 1-D X gives (1, numel(Y)). */
void shape_array_feature_extractor(ShapeCtx *c) {
    const IrType *x = shape_in(c, 0), *y = shape_in(c, 1);
    IrDType dt = shape_dtype(c, 0);
    c->out[0] = shape_tensor(dt, x ? x->rank : -1);
    if (!x || x->rank < 1) return;
    IrType o = *x;
    o.kind = IR_TYPE_TENSOR;
    if (x->rank == 1) {
        o.rank = 2;
        shape_set_dim(&o, 0, shape_dim_static(1));
    }
    shape_set_dim(&o, o.rank - 1, shape_dim_static(y ? ir_type_numel(y) : -1));
    c->out[0] = o;
}
