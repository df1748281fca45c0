/* C backend emitters of the data movement and indexing family: reshapes and copies,
 * Transpose, Concat, Split, Slice, Pad, Tile, Expand, DepthToSpace, gathers and scatters,
 * Shape/Size, fills (ConstantOfShape, EyeLike, Range, OneHot, Trilu) and Resize. Layouts are
 * resolved at compile time into strided copies (runtime/rt_data.h) with merged dims; inputs
 * that feed shapes and are not constants get a run-time check against the compiled shape. */
#include <math.h>
#include <string.h>

#include "backend/c/cgen.h"
#include "backend/plan.h"
#include "backend/c/cgen_count.h"
#include "runtime/rt_data.h"
#include "runtime/rt_index.h"
#include "runtime/rt_resize.h"

/* ---- helpers ---- */

static const IrType *T(const CgenCtx *cx, uint32_t v) { return cgen_type(cx, v); }
static IrDType dtype_of(const CgenCtx *cx, uint32_t v) { return (IrDType)T(cx, v)->dtype; }
static int rank_of(const CgenCtx *cx, uint32_t v) { return T(cx, v)->rank; }

/* Element size in bytes, or 0 for types that are not whole bytes (packed 4-/2-bit, strings). */
static size_t esz_of(const CgenCtx *cx, uint32_t v) {
    uint32_t bits = ir_dtype_bits(dtype_of(cx, v));
    return bits == 0 || bits % 8 ? 0 : bits / 8;
}

static int64_t bytes_of(const CgenCtx *cx, uint32_t v) {
    return (int64_t)ir_dtype_size_bytes(dtype_of(cx, v), cgen_numel(cx, v));
}

static int64_t prod(const int64_t *dims, int from, int to) {
    int64_t p = 1;
    for (int d = from; d < to; d++)
        p *= dims[d];
    return p;
}

static bool is_int_dtype(IrDType t) {
    return t == IR_DTYPE_I64 || t == IR_DTYPE_I32 || t == IR_DTYPE_I16 || t == IR_DTYPE_I8 ||
           t == IR_DTYPE_U8 || t == IR_DTYPE_U16 || t == IR_DTYPE_U32 || t == IR_DTYPE_U64;
}

/* Emits (in the current block) an int64 array named `name` holding input v and returns its
 * name: a static const array for a constant, the input itself for run-time int64 data, a
 * converted local copy for other integer types. *count gets the element count. */
static const char *i64_input(CgenCtx *cx, uint32_t v, const char *name, int64_t *count) {
    const IrTensor *t = cgen_const(cx, v);
    int64_t cnt = t ? t->n_elems : cgen_numel(cx, v);
    *count = cnt;
    if (t) {
        int64_t vals[IR_MAX_RANK * 2 + 8];
        if (cnt <= (int64_t)(sizeof vals / sizeof *vals)) {
            for (int64_t i = 0; i < cnt; i++)
                vals[i] = plan_tensor_i64(t, i);
            cw_line(cx->w, "static const int64_t %s[] = %s;", name,
                    cgen_i64_list(cx, vals, (uint32_t)cnt));
            return name;
        }
    }
    IrDType dt = dtype_of(cx, v);
    if (dt == IR_DTYPE_I64) return cgen_ptr(cx, v);
    cw_line(cx->w, "int64_t %s[%lld];", name, (long long)(cnt > 0 ? cnt : 1));
    cw_line(cx->w, "for (i_%s = 0; i_%s < %lld; i_%s++) %s[i_%s] = (int64_t)%s[i_%s];", name, name,
            (long long)cnt, name, name, name, cgen_ptr(cx, v), name);
    return name;
}

/* Declares the loop counter i64_input may need for `name` (call before it, same block). */
static void i64_input_decl(CgenCtx *cx, uint32_t v, const char *name) {
    const IrTensor *t = cgen_const(cx, v);
    bool small = t && t->n_elems <= IR_MAX_RANK * 2 + 8;
    if (!small && dtype_of(cx, v) != IR_DTYPE_I64) cw_line(cx->w, "int64_t i_%s;", name);
}

/* A literal of element type t with value v, for static const initializers. */
static const char *typed_lit(CgenCtx *cx, IrDType t, double v) {
    switch (t) {
    case IR_DTYPE_F32:
        if (isnan(v)) return "NAN";
        if (isinf(v)) return v > 0 ? "INFINITY" : "-INFINITY";
        return cgen_fmt(cx, "(float)%.9g", v);
    case IR_DTYPE_F64:
        if (isnan(v)) return "NAN";
        if (isinf(v)) return v > 0 ? "INFINITY" : "-INFINITY";
        return cgen_fmt(cx, "(double)%.17g", v);
    case IR_DTYPE_F16:
        return cgen_fmt(cx, "0x%04x", rt_f32_to_f16((float)v));
    case IR_DTYPE_BF16:
        return cgen_fmt(cx, "0x%04x", rt_f32_to_bf16((float)v));
    case IR_DTYPE_BOOL:
        return v != 0 ? "1" : "0";
    case IR_DTYPE_U64:
        return cgen_fmt(cx, "%lluu", (unsigned long long)v);
    default:
        return cgen_fmt(cx, "%lld", (long long)v);
    }
}

static const char *bptr(CgenCtx *cx, uint32_t v, int64_t off_bytes, bool is_const) {
    const char *p = cgen_ptr(cx, v);
    if (off_bytes == 0) return cgen_fmt(cx, "%s", p);
    return cgen_fmt(cx, "(%sunsigned char *)%s + %lld", is_const ? "const " : "", p,
                    (long long)off_bytes);
}

/* Emits copy c of x into y: a memcpy when it is one run, else rt_strided_copy. */
static void emit_plan_copy(CgenCtx *cx, uint32_t y, uint32_t x, size_t esz, const PlanCopy *c) {
    if (c->empty) return;
    const char *py = bptr(cx, y, c->yoff * (int64_t)esz, false);
    const char *px = bptr(cx, x, c->xoff * (int64_t)esz, true);
    if (plan_copy_contiguous(c)) {
        cw_line(cx->w, "memcpy(%s, %s, %lld);", py, px,
                (long long)(plan_copy_elems(c) * (int64_t)esz));
        return;
    }
    int nd = c->rank;
    cgen_use_runtime(cx, "rt_data.h");
    cw_open(cx->w, "%s", "");
    cw_line(cx->w, "static const int64_t dims[] = %s;", cgen_i64_list(cx, c->dims, (uint32_t)nd));
    cw_line(cx->w, "static const int64_t ys[] = %s;", cgen_i64_list(cx, c->ys, (uint32_t)nd));
    cw_line(cx->w, "static const int64_t xs[] = %s;", cgen_i64_list(cx, c->xs, (uint32_t)nd));
    cw_line(cx->w, "rt_strided_copy(%s, ys, %s, xs, dims, %d, %zu);", py, px, nd, esz);
    cw_close(cx->w, NULL);
}

/* Emits y[yoff + sum i*ys] = x[xoff + sum i*xs] over dims (offsets and strides in
 * elements) as planned by plan_copy: a memcpy when one run, else rt_strided_copy. */
static void emit_copy(CgenCtx *cx, uint32_t y, int64_t yoff, uint32_t x, int64_t xoff, size_t esz,
                      int rank, const int64_t *dims, const int64_t *ys, const int64_t *xs) {
    PlanCopy c;
    plan_copy(&c, rank, dims, ys, yoff, xs, xoff);
    emit_plan_copy(cx, y, x, esz, &c);
}

/* y = x permuted: x viewed as (vdims) (vrank dims, row-major), y = transpose(view, perm). */
static void emit_permute(CgenCtx *cx, uint32_t y, uint32_t x, size_t esz, int vrank,
                         const int64_t *vdims, const int *perm) {
    PlanCopy c;
    plan_permute(&c, vrank, vdims, perm);
    emit_plan_copy(cx, y, x, esz, &c);
}

static int norm_axis(int64_t a, int rank) { return (int)(a < 0 ? a + rank : a); }

static bool need_esz(CgenCtx *cx, const IrNode *n, uint32_t v, size_t *esz) {
    *esz = esz_of(cx, v);
    if (*esz == 0)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(dtype_of(cx, v)));
    return true;
}

/* Copies input 0 to output 0 byte for byte. */
static void emit_whole_copy(CgenCtx *cx, const IrNode *n) {
    int64_t bytes = bytes_of(cx, n->outputs[0]);
    if (cgen_same_storage(cx, n->inputs[0], n->outputs[0])) {
        cw_comment(cx->w, "a view: the planner gave it its input's bytes");
        return;
    }
    if (bytes > 0)
        cw_line(cx->w, "memcpy(%s, %s, %lld);", cgen_ptr(cx, n->outputs[0]),
                cgen_ptr(cx, n->inputs[0]), (long long)bytes);
}

/* ---- reshapes and copies ---- */

static bool emit_reshape_like(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    const IrType *tx = T(cx, x), *ty = T(cx, y);
    if (bytes_of(cx, x) != bytes_of(cx, y))
        return cgen_unsupported(cx, n, "an output with another element count than the input");
    uint32_t shape_in = IR_NONE;
    int kind = -1; /* 0 squeeze, 1 unsqueeze, 2 reshape */
    if (n->op == IR_OP_RESHAPE && n->opset >= 5 && ir_has_input(n, 1))
        shape_in = n->inputs[1], kind = 2;
    if (n->op == IR_OP_SQUEEZE && n->opset >= 13 && ir_has_input(n, 1))
        shape_in = n->inputs[1], kind = 0;
    if (n->op == IR_OP_UNSQUEEZE && n->opset >= 13 && ir_has_input(n, 1))
        shape_in = n->inputs[1], kind = 1;
    if (shape_in != IR_NONE && cgen_const(cx, shape_in)) shape_in = IR_NONE;
    if (shape_in == IR_NONE) {
        emit_whole_copy(cx, n);
        return true;
    }
    cgen_use_runtime(cx, "rt_data.h");
    cw_open(cx->w, "%s", "");
    i64_input_decl(cx, shape_in, "sh");
    int64_t cnt;
    const char *sh = i64_input(cx, shape_in, "sh", &cnt);
    cw_line(cx->w, "static const int64_t in_dims[] = %s;", cgen_dims(cx, tx));
    cw_line(cx->w, "static const int64_t out_dims[] = %s;", cgen_dims(cx, ty));
    if (kind == 2)
        cgen_call_checked(cx, "rt_reshape_check(%s, %lld, in_dims, %d, out_dims, %d, %d)", sh,
                          (long long)cnt, tx->rank, ty->rank,
                          (int)ir_attr_i(n, IR_ATTR_RESHAPE_ALLOWZERO));
    else
        cgen_call_checked(cx, "rt_axes_check(%s, %lld, in_dims, %d, out_dims, %d, %d)", sh,
                          (long long)cnt, tx->rank, ty->rank, kind);
    emit_whole_copy(cx, n);
    cw_close(cx->w, NULL);
    return true;
}

static bool emit_identity(CgenCtx *cx, const IrNode *n) {
    if (T(cx, n->inputs[0])->kind != IR_TYPE_TENSOR)
        return cgen_unsupported(cx, n, "non-tensor values");
    emit_whole_copy(cx, n);
    return true;
}

/* Dropout in inference: y = x, mask all true. A training_mode given at run time that asks
 * for dropping with a non-zero ratio returns RT_ERR_VALUE (no random numbers here). */
static bool emit_dropout(CgenCtx *cx, const IrNode *n) {
    bool training = false;
    if (n->opset >= 12 && ir_has_input(n, 2)) {
        const IrTensor *tm = cgen_const(cx, n->inputs[2]);
        if (tm) {
            training = tm->n_elems > 0 && ((const uint8_t *)tm->data)[0] != 0;
        } else {
            const char *ratio = "0.5f";
            if (ir_has_input(n, 1)) {
                IrDType rt = dtype_of(cx, n->inputs[1]);
                ratio = cgen_fmt(cx, "%s[0]", cgen_ptr(cx, n->inputs[1]));
                if (rt == IR_DTYPE_F16) ratio = cgen_fmt(cx, "rt_f16_to_f32(%s)", ratio);
                if (rt == IR_DTYPE_BF16) ratio = cgen_fmt(cx, "rt_bf16_to_f32(%s)", ratio);
            }
            cw_line(cx->w, "if (%s[0] && %s != 0) return RT_ERR_VALUE;", cgen_ptr(cx, n->inputs[2]),
                    ratio);
        }
        if (training && ir_has_input(n, 1)) {
            const IrTensor *r = cgen_const(cx, n->inputs[1]);
            if (r && r->dtype == IR_DTYPE_F32 && ((const float *)r->data)[0] == 0) training = false;
        }
    }
    if (training) return cgen_unsupported(cx, n, "Dropout in training mode");
    emit_whole_copy(cx, n);
    if (n->n_outputs > 1 && n->outputs[1] != IR_NONE) {
        uint32_t m = n->outputs[1];
        int64_t k = cgen_numel(cx, m);
        if (dtype_of(cx, m) != IR_DTYPE_BOOL) return cgen_unsupported(cx, n, "a non-bool mask");
        if (k > 0) cw_line(cx->w, "memset(%s, 1, %lld);", cgen_ptr(cx, m), (long long)k);
    }
    return true;
}

/* ---- layout ---- */

static bool emit_transpose(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    size_t esz;
    if (!need_esz(cx, n, x, &esz)) return false;
    int R = rank_of(cx, x);
    uint32_t np;
    const int64_t *p = ir_attr_ints(n, IR_ATTR_TRANSPOSE_PERM, &np);
    int perm[RT_MAX_RANK];
    if (np && (int)np != R) return cgen_unsupported(cx, n, "a perm of the wrong length");
    for (int i = 0; i < R; i++) {
        perm[i] = np ? (int)p[i] : R - 1 - i;
        if (perm[i] < 0 || perm[i] >= R) return cgen_unsupported(cx, n, "a perm out of range");
    }
    emit_permute(cx, y, x, esz, R, T(cx, x)->dims, perm);
    return true;
}

static bool emit_depth_space(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    size_t esz;
    if (!need_esz(cx, n, x, &esz)) return false;
    PlanCopy c;
    const char *why = NULL;
    if (!plan_depth_space(n, T(cx, x), &c, &why)) return cgen_unsupported(cx, n, "%s", why);
    emit_plan_copy(cx, y, x, esz, &c);
    return true;
}

/* Concat and Split: part k (IR_NONE parts skipped) is the next slab of `whole` along axis;
 * into_whole copies the parts into it (Concat), else the slabs out to the parts (Split).
 * Returns the extent the parts cover along axis. */
static int64_t emit_slabs(CgenCtx *cx, uint32_t whole, const uint32_t *parts, uint32_t n_parts,
                          int axis, size_t esz, bool into_whole) {
    const IrType *tw = T(cx, whole);
    int R = tw->rank;
    int64_t ws[RT_MAX_RANK], off = 0;
    plan_strides(tw->dims, R, ws);
    for (uint32_t k = 0; k < n_parts; k++) {
        uint32_t p = parts[k];
        if (p == IR_NONE) continue;
        const IrType *tp = T(cx, p);
        int64_t ps[RT_MAX_RANK];
        plan_strides(tp->dims, R, ps);
        if (into_whole) emit_copy(cx, whole, off * ws[axis], p, 0, esz, R, tp->dims, ws, ps);
        else emit_copy(cx, p, 0, whole, off * ws[axis], esz, R, tp->dims, ps, ws);
        off += tp->dims[axis];
    }
    return off;
}

static bool emit_concat(CgenCtx *cx, const IrNode *n) {
    uint32_t y = n->outputs[0];
    size_t esz;
    if (!need_esz(cx, n, y, &esz)) return false;
    const IrType *ty = T(cx, y);
    int R = ty->rank, axis = norm_axis(ir_attr_i(n, IR_ATTR_CONCAT_AXIS), R);
    if (axis < 0 || axis >= R) return cgen_unsupported(cx, n, "axis out of range");
    emit_slabs(cx, y, n->inputs, n->n_inputs, axis, esz, true);
    return true;
}

static bool emit_split(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0];
    size_t esz;
    if (!need_esz(cx, n, x, &esz)) return false;
    const IrType *tx = T(cx, x);
    int R = tx->rank, axis = norm_axis(ir_attr_i(n, IR_ATTR_SPLIT_AXIS), R);
    if (axis < 0 || axis >= R) return cgen_unsupported(cx, n, "axis out of range");
    uint32_t sp = n->opset >= 13 && ir_has_input(n, 1) ? n->inputs[1] : IR_NONE;
    if (sp != IR_NONE && !cgen_const(cx, sp)) { /* sizes at run time: must be the compiled ones */
        int64_t want[IR_ARITY_VARIADIC];
        for (uint32_t k = 0; k < n->n_outputs; k++)
            want[k] = T(cx, n->outputs[k])->dims[axis];
        cgen_use_runtime(cx, "rt_data.h");
        cw_open(cx->w, "%s", "");
        i64_input_decl(cx, sp, "sp");
        int64_t cnt;
        const char *s = i64_input(cx, sp, "sp", &cnt);
        cw_line(cx->w, "static const int64_t want[] = %s;", cgen_i64_list(cx, want, n->n_outputs));
        cgen_call_checked(cx, "rt_check_dims(%s, %lld, want, %u)", s, (long long)cnt, n->n_outputs);
        cw_close(cx->w, NULL);
    }
    if (emit_slabs(cx, x, n->outputs, n->n_outputs, axis, esz, false) != tx->dims[axis])
        return cgen_unsupported(cx, n, "outputs that do not cover the input");
    return true;
}

/* Slice: starts/ends/axes/steps as attributes (before opset 10) or inputs. */
static bool emit_slice(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    size_t esz;
    if (!need_esz(cx, n, x, &esz)) return false;
    const IrType *tx = T(cx, x), *ty = T(cx, y);
    int R = tx->rank;
    bool all_const = true;
    for (uint32_t k = 1; k < n->n_inputs && n->opset >= 10; k++)
        if (n->inputs[k] != IR_NONE && !cgen_const(cx, n->inputs[k])) all_const = false;
    if (all_const) {
        const IrTensor *in[5] = {NULL, NULL, NULL, NULL, NULL};
        for (uint32_t k = 1; k < 5 && n->opset >= 10; k++)
            if (ir_has_input(n, k)) in[k] = cgen_const(cx, n->inputs[k]);
        PlanCopy c;
        const char *why;
        if (!plan_slice(n, tx, ty, in, &c, &why)) return cgen_unsupported(cx, n, "%s", why);
        emit_plan_copy(cx, y, x, esz, &c);
        return true;
    }
    /* parameters known only at run time: rt_slice_params in the bundle */
    static const char *const names[4] = {"starts", "ends", "axes", "steps"};
    const char *arr[4] = {NULL, NULL, "NULL", "NULL"};
    int64_t cnt = 0;
    cgen_use_runtime(cx, "rt_data.h");
    cw_open(cx->w, "%s", "");
    for (uint32_t k = 1; k < 5; k++)
        if (ir_has_input(n, k)) i64_input_decl(cx, n->inputs[k], names[k - 1]);
    cw_line(cx->w, "int64_t start[%d], step[%d];", R > 0 ? R : 1, R > 0 ? R : 1);
    cw_line(cx->w, "static const int64_t in_dims[] = %s;", cgen_dims(cx, tx));
    cw_line(cx->w, "static const int64_t out_dims[] = %s;", cgen_dims(cx, ty));
    for (uint32_t k = 1; k < 5; k++) {
        if (!ir_has_input(n, k)) continue;
        int64_t c;
        arr[k - 1] = i64_input(cx, n->inputs[k], names[k - 1], &c);
        if (k == 1)
            cnt = c;
        else if (c != cnt)
            return cgen_unsupported(cx, n, "mismatched slice inputs");
    }
    cgen_call_checked(cx,
                      "rt_slice_params(in_dims, %d, %s, %s, %s, %s, %lld, out_dims, "
                      "start, step)",
                      R, arr[0], arr[1], arr[2], arr[3], (long long)cnt);
    cw_line(cx->w, "rt_slice(%s, %s, %zu, in_dims, out_dims, %d, start, step);",
            cgen_ptr(cx, y), cgen_ptr(cx, x), esz, R);
    cw_close(cx->w, NULL);
    return true;
}

static bool emit_tile(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    size_t esz;
    if (!need_esz(cx, n, x, &esz)) return false;
    const IrType *tx = T(cx, x), *ty = T(cx, y);
    int R = tx->rank;
    if (!cgen_const(cx, n->inputs[1])) {
        cgen_use_runtime(cx, "rt_data.h");
        cw_open(cx->w, "%s", "");
        i64_input_decl(cx, n->inputs[1], "rep");
        int64_t cnt;
        const char *r = i64_input(cx, n->inputs[1], "rep", &cnt);
        cw_line(cx->w, "static const int64_t in_dims[] = %s;", cgen_dims(cx, tx));
        cw_line(cx->w, "static const int64_t out_dims[] = %s;", cgen_dims(cx, ty));
        cgen_call_checked(cx, "rt_tile_check(%s, %lld, in_dims, out_dims, %d)", r, (long long)cnt,
                          R);
        cw_close(cx->w, NULL);
    }
    PlanCopy c;
    plan_tile(tx, ty, &c);
    emit_plan_copy(cx, y, x, esz, &c);
    return true;
}

static bool emit_expand(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    size_t esz;
    if (!need_esz(cx, n, x, &esz)) return false;
    const IrType *tx = T(cx, x), *ty = T(cx, y);
    int R = ty->rank;
    if (tx->rank > R) return cgen_unsupported(cx, n, "an output of lower rank than the input");
    if (!cgen_const(cx, n->inputs[1])) {
        cgen_use_runtime(cx, "rt_data.h");
        cw_open(cx->w, "%s", "");
        i64_input_decl(cx, n->inputs[1], "shape");
        int64_t cnt;
        const char *s = i64_input(cx, n->inputs[1], "shape", &cnt);
        cw_line(cx->w, "static const int64_t in_dims[] = %s;", cgen_dims(cx, tx));
        cw_line(cx->w, "static const int64_t out_dims[] = %s;", cgen_dims(cx, ty));
        cgen_call_checked(cx, "rt_expand_check(%s, %lld, in_dims, %d, out_dims, %d)", s,
                          (long long)cnt, tx->rank, R);
        cw_close(cx->w, NULL);
    }
    int64_t xs[RT_MAX_RANK], ys[RT_MAX_RANK], xst[RT_MAX_RANK];
    plan_strides(tx->dims, tx->rank, xst);
    plan_strides(ty->dims, R, ys);
    for (int d = 0; d < R; d++) {
        int dx = d - (R - tx->rank);
        int64_t dim = dx >= 0 ? tx->dims[dx] : 1;
        if (dim != 1 && dim != ty->dims[d])
            return cgen_unsupported(cx, n, "shapes that do not broadcast");
        xs[d] = dim == 1 ? 0 : xst[dx];
    }
    emit_copy(cx, y, 0, x, 0, esz, R, ty->dims, ys, xs);
    return true;
}

static bool emit_center_crop_pad(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    size_t esz;
    if (!need_esz(cx, n, x, &esz)) return false;
    const IrType *tx = T(cx, x), *ty = T(cx, y);
    int R = tx->rank;
    if (!cgen_const(cx, n->inputs[1])) {
        uint32_t na;
        const int64_t *axes = ir_attr_ints(n, IR_ATTR_CENTER_CROP_PAD_AXES, &na);
        int64_t want[RT_MAX_RANK];
        uint32_t nw = na ? na : (uint32_t)R;
        for (uint32_t i = 0; i < nw; i++)
            want[i] = ty->dims[na ? norm_axis(axes[i], R) : (int)i];
        cgen_use_runtime(cx, "rt_data.h");
        cw_open(cx->w, "%s", "");
        i64_input_decl(cx, n->inputs[1], "shape");
        int64_t cnt;
        const char *s = i64_input(cx, n->inputs[1], "shape", &cnt);
        cw_line(cx->w, "static const int64_t want[] = %s;", cgen_i64_list(cx, want, nw));
        cgen_call_checked(cx, "rt_check_dims(%s, %lld, want, %u)", s, (long long)cnt, nw);
        cw_close(cx->w, NULL);
    }
    int64_t dims[RT_MAX_RANK], xs[RT_MAX_RANK], ys[RT_MAX_RANK], xoff = 0, yoff = 0;
    bool pads = false;
    plan_strides(tx->dims, R, xs);
    plan_strides(ty->dims, R, ys);
    for (int d = 0; d < R; d++) {
        int64_t a = tx->dims[d], b = ty->dims[d];
        dims[d] = a < b ? a : b;
        if (a > b) xoff += (a - b) / 2 * xs[d];
        if (a < b) yoff += (b - a) / 2 * ys[d], pads = true;
    }
    if (pads) cw_line(cx->w, "memset(%s, 0, %lld);", cgen_ptr(cx, y), (long long)bytes_of(cx, y));
    emit_copy(cx, y, yoff, x, xoff, esz, R, dims, ys, xs);
    return true;
}

static bool emit_pad(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    size_t esz;
    if (!need_esz(cx, n, x, &esz)) return false;
    const IrType *tx = T(cx, x), *ty = T(cx, y);
    IrDType dt = dtype_of(cx, x);
    int R = tx->rank;
    const char *mode_s = ir_attr_s(n, IR_ATTR_PAD_MODE);
    int mode = strcmp(mode_s, "constant") == 0  ? RT_PAD_CONSTANT
               : strcmp(mode_s, "reflect") == 0 ? RT_PAD_REFLECT
               : strcmp(mode_s, "edge") == 0    ? RT_PAD_EDGE
               : strcmp(mode_s, "wrap") == 0    ? RT_PAD_WRAP
                                                : -1;
    if (mode < 0) return cgen_unsupported(cx, n, "pad mode '%s'", mode_s);
    cgen_use_runtime(cx, "rt_data.h");
    cw_open(cx->w, "%s", "");
    const char *pads, *axes = "NULL", *value;
    int64_t n_pads, n_axes = R;
    if (n->opset < 11) {
        uint32_t np;
        const int64_t *p =
            ir_attr_ints(n, n->opset < 2 ? IR_ATTR_PAD_PADDINGS : IR_ATTR_PAD_PADS, &np);
        n_pads = np;
        cw_line(cx->w, "static const int64_t pads[] = %s;", cgen_i64_list(cx, p, np));
        pads = "pads";
    } else {
        if (ir_has_input(n, 3)) i64_input_decl(cx, n->inputs[3], "axes");
        i64_input_decl(cx, n->inputs[1], "pads");
    }
    cw_line(cx->w, "int64_t begin[%d];", R > 0 ? R : 1);
    if (n->opset >= 11) {
        pads = i64_input(cx, n->inputs[1], "pads", &n_pads);
        if (ir_has_input(n, 3)) axes = i64_input(cx, n->inputs[3], "axes", &n_axes);
    }
    if (n->opset >= 11 && ir_has_input(n, 2) && cgen_numel(cx, n->inputs[2]) > 0) {
        value = cgen_ptr(cx, n->inputs[2]);
    } else {
        double v = n->opset < 11 ? ir_attr_f(n, IR_ATTR_PAD_VALUE) : 0.0;
        cw_line(cx->w, "static const %s value = %s;", bundle_ctype(dt), typed_lit(cx, dt, v));
        value = "&value";
    }
    cw_line(cx->w, "static const int64_t in_dims[] = %s;", cgen_dims(cx, tx));
    cw_line(cx->w, "static const int64_t out_dims[] = %s;", cgen_dims(cx, ty));
    cgen_call_checked(cx, "rt_pad_params(%s, %lld, %s, %lld, in_dims, out_dims, %d, begin)", pads,
                      (long long)n_pads, axes, (long long)n_axes, R);
    static const char *const modes[] = {"RT_PAD_CONSTANT", "RT_PAD_REFLECT", "RT_PAD_EDGE",
                                        "RT_PAD_WRAP"};
    cgen_call_checked(cx, "rt_pad(%s, %s, %zu, in_dims, out_dims, %d, begin, %s, %s)",
                      cgen_ptr(cx, y), cgen_ptr(cx, x), esz, R, modes[mode], value);
    cw_close(cx->w, NULL);
    return true;
}

/* ---- shapes and fills ---- */

static bool emit_shape(CgenCtx *cx, const IrNode *n) {
    const IrType *tx = T(cx, n->inputs[0]);
    int R = tx->rank;
    int64_t s = n->opset >= 15 ? ir_attr_i(n, IR_ATTR_SHAPE_START) : 0, e = R;
    if (n->opset >= 15 && ir_attr_present(n, IR_ATTR_SHAPE_END))
        e = ir_attr_i(n, IR_ATTR_SHAPE_END);
    if (s < 0) s += R;
    if (e < 0) e += R;
    s = s < 0 ? 0 : (s > R ? R : s);
    e = e < 0 ? 0 : (e > R ? R : e);
    if (e <= s) return true;
    cw_open(cx->w, "%s", "");
    cw_line(cx->w, "static const int64_t dims[] = %s;",
            cgen_i64_list(cx, tx->dims + s, (uint32_t)(e - s)));
    cw_line(cx->w, "memcpy(%s, dims, sizeof dims);", cgen_ptr(cx, n->outputs[0]));
    cw_close(cx->w, NULL);
    return true;
}

static bool emit_size(CgenCtx *cx, const IrNode *n) {
    cw_line(cx->w, "%s[0] = %lld;", cgen_ptr(cx, n->outputs[0]),
            (long long)cgen_numel(cx, n->inputs[0]));
    return true;
}

static bool emit_constant_of_shape(CgenCtx *cx, const IrNode *n) {
    uint32_t y = n->outputs[0];
    size_t esz;
    if (!need_esz(cx, n, y, &esz)) return false;
    const IrType *ty = T(cx, y);
    const IrAttr *at = ir_node_attr(n, IR_ATTR_CONSTANT_OF_SHAPE_VALUE);
    const IrTensor *val = at && at->present && at->tensors ? at->tensors : NULL;
    cw_open(cx->w, "%s", "");
    if (!cgen_const(cx, n->inputs[0])) {
        cgen_use_runtime(cx, "rt_data.h");
        i64_input_decl(cx, n->inputs[0], "shape");
        int64_t cnt;
        const char *s = i64_input(cx, n->inputs[0], "shape", &cnt);
        cw_line(cx->w, "static const int64_t want[] = %s;", cgen_dims(cx, ty));
        cgen_call_checked(cx, "rt_check_dims(%s, %lld, want, %d)", s, (long long)cnt, ty->rank);
    }
    bool zero = true;
    if (val && val->size_bytes >= esz)
        for (size_t i = 0; i < esz; i++)
            zero &= ((const uint8_t *)val->data)[i] == 0;
    int64_t k = cgen_numel(cx, y);
    if (k > 0 && zero) {
        cw_line(cx->w, "memset(%s, 0, %lld);", cgen_ptr(cx, y), (long long)bytes_of(cx, y));
    } else if (k > 0) {
        int64_t b[16];
        for (size_t i = 0; i < esz && i < 16; i++)
            b[i] = ((const uint8_t *)val->data)[i];
        cgen_use_runtime(cx, "rt_data.h");
        cw_line(cx->w, "static const unsigned char value[] = %s;",
                cgen_i64_list(cx, b, (uint32_t)esz));
        cw_line(cx->w, "rt_fill(%s, %lld, value, %zu);", cgen_ptr(cx, y), (long long)k, esz);
    }
    cw_close(cx->w, NULL);
    return true;
}

static bool emit_eye_like(CgenCtx *cx, const IrNode *n) {
    uint32_t y = n->outputs[0];
    const IrType *ty = T(cx, y);
    IrDType dt = dtype_of(cx, y);
    if (ty->rank != 2 || esz_of(cx, y) == 0) return cgen_unsupported(cx, n, "this output type");
    int64_t k = ir_attr_i(n, IR_ATTR_EYE_LIKE_K), rows = ty->dims[0], cols = ty->dims[1];
    cw_line(cx->w, "memset(%s, 0, %lld);", cgen_ptr(cx, y), (long long)bytes_of(cx, y));
    int64_t i0 = k >= 0 ? 0 : -k, i1 = rows < cols - k ? rows : cols - k;
    if (i1 > i0) {
        cw_open(cx->w, "%s", "");
        cw_line(cx->w, "int64_t i;");
        cw_line(cx->w, "for (i = %lld; i < %lld; i++) %s[i * %lld + i + %lld] = %s;", (long long)i0,
                (long long)i1, cgen_ptr(cx, y), (long long)cols, (long long)k,
                typed_lit(cx, dt, 1.0));
        cw_close(cx->w, NULL);
    }
    return true;
}

/* Loads element 0 of v as a double expression. */
static const char *scalar_load(CgenCtx *cx, uint32_t v) {
    IrDType t = dtype_of(cx, v);
    const char *p = cgen_ptr(cx, v);
    if (t == IR_DTYPE_F16) return cgen_fmt(cx, "(double)rt_f16_to_f32(%s[0])", p);
    if (t == IR_DTYPE_BF16) return cgen_fmt(cx, "(double)rt_bf16_to_f32(%s[0])", p);
    return cgen_fmt(cx, "(double)%s[0]", p);
}

static bool emit_range(CgenCtx *cx, const IrNode *n) {
    uint32_t y = n->outputs[0];
    IrDType t = dtype_of(cx, y);
    int64_t N = cgen_numel(cx, y);
    CWriter *w = cx->w;
    cw_open(w, "%s", "");
    if (is_int_dtype(t)) {
        cw_line(w,
                "int64_t start = (int64_t)%s[0], limit = (int64_t)%s[0], delta = (int64_t)%s[0];",
                cgen_ptr(cx, n->inputs[0]), cgen_ptr(cx, n->inputs[1]), cgen_ptr(cx, n->inputs[2]));
        cw_line(w, "int64_t count, i;");
        cw_line(w, "if (delta == 0) return RT_ERR_VALUE;");
        cw_line(w, "count = delta > 0 ? (limit - start + delta - 1) / delta "
                   ": (start - limit - delta - 1) / -delta;");
        cw_line(w, "if ((count < 0 ? 0 : count) != %lld) return RT_ERR_SHAPE;", (long long)N);
        cw_line(w, "for (i = 0; i < %lld; i++) %s[i] = (%s)(start + i * delta);", (long long)N,
                cgen_ptr(cx, y), bundle_ctype(t));
    } else {
        const char *store = t == IR_DTYPE_F16 ? "rt_f32_to_f16((float)(start + (double)i * delta))"
                            : t == IR_DTYPE_BF16
                                ? "rt_f32_to_bf16((float)(start + (double)i * delta))"
                                : cgen_fmt(cx, "(%s)(start + (double)i * delta)", bundle_ctype(t));
        cw_line(w, "double start = %s, limit = %s, delta = %s, count;",
                scalar_load(cx, n->inputs[0]), scalar_load(cx, n->inputs[1]),
                scalar_load(cx, n->inputs[2]));
        cw_line(w, "int64_t i;");
        cw_line(w, "if (delta == 0) return RT_ERR_VALUE;");
        cw_line(w, "count = ceil((limit - start) / delta);");
        cw_line(w, "if ((count < 0 ? 0 : count) != %lld) return RT_ERR_SHAPE;", (long long)N);
        cw_line(w, "for (i = 0; i < %lld; i++) %s[i] = %s;", (long long)N, cgen_ptr(cx, y), store);
    }
    cw_close(w, NULL);
    return true;
}

static bool emit_trilu(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    size_t esz;
    if (!need_esz(cx, n, x, &esz)) return false;
    const IrType *tx = T(cx, x);
    int R = tx->rank;
    if (R < 2) return cgen_unsupported(cx, n, "inputs of rank below 2");
    const char *k = "0";
    if (ir_has_input(n, 1)) {
        const IrTensor *kt = cgen_const(cx, n->inputs[1]);
        k = kt ? cgen_fmt(cx, "%lld", (long long)plan_tensor_i64(kt, 0))
               : cgen_fmt(cx, "%s[0]", cgen_ptr(cx, n->inputs[1]));
    }
    cgen_use_runtime(cx, "rt_data.h");
    cw_line(cx->w, "rt_trilu(%s, %s, %zu, %lld, %lld, %lld, %s, %d);", cgen_ptr(cx, y),
            cgen_ptr(cx, x), esz, (long long)prod(tx->dims, 0, R - 2), (long long)tx->dims[R - 2],
            (long long)tx->dims[R - 1], k, (int)ir_attr_i(n, IR_ATTR_TRILU_UPPER));
    return true;
}

static bool emit_one_hot(CgenCtx *cx, const IrNode *n) {
    uint32_t ind = n->inputs[0], depth = n->inputs[1], vals = n->inputs[2], y = n->outputs[0];
    const IrType *ty = T(cx, y);
    int R = ty->rank, axis = norm_axis(ir_attr_i(n, IR_ATTR_ONE_HOT_AXIS), R);
    if (axis < 0 || axis >= R) return cgen_unsupported(cx, n, "axis out of range");
    IrDType it = dtype_of(cx, ind);
    if (it == IR_DTYPE_F16 || it == IR_DTYPE_BF16 || esz_of(cx, y) == 0)
        return cgen_unsupported(cx, n, "these element types");
    int64_t D = ty->dims[axis], outer = prod(ty->dims, 0, axis),
            inner = prod(ty->dims, axis + 1, R);
    CWriter *w = cx->w;
    cw_open(w, "%s", "");
    cw_line(w, "int64_t o, j, i, k;");
    if (!cgen_const(cx, depth))
        cw_line(w, "if ((int64_t)%s != %lld) return RT_ERR_SHAPE;", scalar_load(cx, depth),
                (long long)D);
    cw_line(w, "for (o = 0; o < %lld; o++)", (long long)outer);
    w->indent++;
    cw_line(w, "for (j = 0; j < %lld; j++)", (long long)D);
    w->indent++;
    cw_open(w, "for (i = 0; i < %lld; i++)", (long long)inner);
    cw_line(w, "k = (int64_t)%s[o * %lld + i];", cgen_ptr(cx, ind), (long long)inner);
    cw_line(w, "if (k < 0) k += %lld;", (long long)D);
    cw_line(w, "%s[(o * %lld + j) * %lld + i] = %s[k == j];", cgen_ptr(cx, y), (long long)D,
            (long long)inner, cgen_ptr(cx, vals));
    cw_close(w, NULL);
    w->indent -= 2;
    cw_close(w, NULL);
    return true;
}

/* ---- indexing ---- */

static bool index_type(CgenCtx *cx, const IrNode *n, uint32_t v, int *is64) {
    IrDType t = dtype_of(cx, v);
    if (t != IR_DTYPE_I64 && t != IR_DTYPE_I32)
        return cgen_unsupported(cx, n, "indices of type %s", ir_dtype_name(t));
    *is64 = t == IR_DTYPE_I64;
    cgen_use_runtime(cx, "rt_data.h");
    cgen_use_runtime(cx, "rt_index.h");
    return true;
}

static bool emit_gather(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], idx = n->inputs[1], y = n->outputs[0];
    size_t esz;
    int is64;
    if (!need_esz(cx, n, x, &esz) || !index_type(cx, n, idx, &is64)) return false;
    const IrType *tx = T(cx, x);
    int R = tx->rank, axis = norm_axis(ir_attr_i(n, IR_ATTR_GATHER_AXIS), R);
    if (axis < 0 || axis >= R) return cgen_unsupported(cx, n, "axis out of range");
    cgen_call_checked(cx, "rt_gather(%s, %s, %zu, %lld, %lld, %lld, %s, %d, %lld)", cgen_ptr(cx, y),
                      cgen_ptr(cx, x), esz, (long long)prod(tx->dims, 0, axis),
                      (long long)tx->dims[axis], (long long)prod(tx->dims, axis + 1, R),
                      cgen_ptr(cx, idx), is64, (long long)cgen_numel(cx, idx));
    return true;
}

static bool emit_gather_elements(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], idx = n->inputs[1], y = n->outputs[0];
    size_t esz;
    int is64;
    if (!need_esz(cx, n, x, &esz) || !index_type(cx, n, idx, &is64)) return false;
    const IrType *tx = T(cx, x), *ti = T(cx, idx);
    int R = tx->rank, axis = norm_axis(ir_attr_i(n, IR_ATTR_GATHER_ELEMENTS_AXIS), R);
    if (axis < 0 || axis >= R || ti->rank != R) return cgen_unsupported(cx, n, "axis or rank");
    cw_open(cx->w, "%s", "");
    cw_line(cx->w, "static const int64_t xdims[] = %s;", cgen_dims(cx, tx));
    cw_line(cx->w, "static const int64_t idims[] = %s;", cgen_dims(cx, ti));
    cgen_call_checked(cx, "rt_gather_elements(%s, %s, %zu, xdims, idims, %d, %d, %s, %d)",
                      cgen_ptr(cx, y), cgen_ptr(cx, x), esz, R, axis, cgen_ptr(cx, idx), is64);
    cw_close(cx->w, NULL);
    return true;
}

static bool emit_gather_nd(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], idx = n->inputs[1], y = n->outputs[0];
    size_t esz;
    int is64;
    if (!need_esz(cx, n, x, &esz) || !index_type(cx, n, idx, &is64)) return false;
    const IrType *tx = T(cx, x), *ti = T(cx, idx);
    int b = (int)ir_attr_i(n, IR_ATTR_GATHER_ND_BATCH_DIMS);
    int64_t last = ti->rank > 0 ? ti->dims[ti->rank - 1] : 0;
    int64_t nb = prod(tx->dims, 0, b);
    if (last <= 0 || b + last > tx->rank || nb == 0)
        return cgen_unsupported(cx, n, "these index shapes");
    int64_t n_tup = cgen_numel(cx, idx) / last / nb;
    cw_open(cx->w, "%s", "");
    cw_line(cx->w, "static const int64_t xdims[] = %s;", cgen_dims(cx, tx));
    cgen_call_checked(cx, "rt_gather_nd(%s, %s, %zu, xdims, %d, %d, %s, %d, %lld, %lld)",
                      cgen_ptr(cx, y), cgen_ptr(cx, x), esz, tx->rank, b, cgen_ptr(cx, idx), is64,
                      (long long)n_tup, (long long)last);
    cw_close(cx->w, NULL);
    return true;
}

static int reduction_of(const char *s) {
    if (strcmp(s, "add") == 0) return RT_REDUCE_ADD;
    if (strcmp(s, "mul") == 0) return RT_REDUCE_MUL;
    if (strcmp(s, "max") == 0) return RT_REDUCE_MAX;
    if (strcmp(s, "min") == 0) return RT_REDUCE_MIN;
    if (strcmp(s, "none") == 0) return RT_REDUCE_NONE;
    return -1;
}

static bool emit_scatter(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], idx = n->inputs[1], upd = n->inputs[2], y = n->outputs[0];
    size_t esz;
    int is64;
    if (!need_esz(cx, n, x, &esz) || !index_type(cx, n, idx, &is64)) return false;
    const IrType *tx = T(cx, x), *ti = T(cx, idx);
    IrDType dt = dtype_of(cx, x);
    int red = RT_REDUCE_NONE;
    if (n->op == IR_OP_SCATTER_ND && n->opset >= 16)
        red = reduction_of(ir_attr_s(n, IR_ATTR_SCATTER_ND_REDUCTION));
    if (n->op == IR_OP_SCATTER_ELEMENTS && n->opset >= 16)
        red = reduction_of(ir_attr_s(n, IR_ATTR_SCATTER_ELEMENTS_REDUCTION));
    if (red < 0) return cgen_unsupported(cx, n, "this reduction");
    static const char *const reds[] = {"RT_REDUCE_NONE", "RT_REDUCE_ADD", "RT_REDUCE_MUL",
                                       "RT_REDUCE_MAX", "RT_REDUCE_MIN"};
    emit_whole_copy(cx, n);
    cw_open(cx->w, "%s", "");
    cw_line(cx->w, "static const int64_t xdims[] = %s;", cgen_dims(cx, tx));
    if (n->op == IR_OP_SCATTER_ND) {
        int64_t last = ti->rank > 0 ? ti->dims[ti->rank - 1] : 0;
        if (last <= 0 || last > tx->rank) return cgen_unsupported(cx, n, "these index shapes");
        cgen_call_checked(cx, "rt_scatter_nd(%s, %s, %zu, %d, %s, xdims, %d, %s, %d, %lld, %lld)",
                          cgen_ptr(cx, y), cgen_ptr(cx, upd), esz, (int)dt, reds[red], tx->rank,
                          cgen_ptr(cx, idx), is64, (long long)(cgen_numel(cx, idx) / last),
                          (long long)last);
    } else {
        IrAttrId ax = n->op == IR_OP_SCATTER ? IR_ATTR_SCATTER_AXIS : IR_ATTR_SCATTER_ELEMENTS_AXIS;
        int axis = norm_axis(ir_attr_i(n, ax), tx->rank);
        if (axis < 0 || axis >= tx->rank || ti->rank != tx->rank)
            return cgen_unsupported(cx, n, "axis or rank");
        cw_line(cx->w, "static const int64_t idims[] = %s;", cgen_dims(cx, ti));
        cgen_call_checked(cx,
                          "rt_scatter_elements(%s, %s, %zu, %d, %s, xdims, idims, %d, %d, %s, %d)",
                          cgen_ptr(cx, y), cgen_ptr(cx, upd), esz, (int)dt, reds[red], tx->rank,
                          axis, cgen_ptr(cx, idx), is64);
    }
    cw_close(cx->w, NULL);
    return true;
}

static bool emit_reverse_sequence(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], lens = n->inputs[1], y = n->outputs[0];
    size_t esz;
    int is64;
    if (!need_esz(cx, n, x, &esz) || !index_type(cx, n, lens, &is64)) return false;
    const IrType *tx = T(cx, x);
    int R = tx->rank;
    int ba = norm_axis(ir_attr_i(n, IR_ATTR_REVERSE_SEQUENCE_BATCH_AXIS), R);
    int ta = norm_axis(ir_attr_i(n, IR_ATTR_REVERSE_SEQUENCE_TIME_AXIS), R);
    if (ba < 0 || ba >= R || ta < 0 || ta >= R || ba == ta) return cgen_unsupported(cx, n, "axes");
    cw_open(cx->w, "%s", "");
    cw_line(cx->w, "static const int64_t dims[] = %s;", cgen_dims(cx, tx));
    cgen_call_checked(cx, "rt_reverse_sequence(%s, %s, %zu, dims, %d, %d, %d, %s, %d)",
                      cgen_ptr(cx, y), cgen_ptr(cx, x), esz, R, ba, ta, cgen_ptr(cx, lens), is64);
    cw_close(cx->w, NULL);
    return true;
}

/* Compress and NonZero: their output sizes come from the data. The compiled shape bounds
 * the count along the counted axis; entries past the count are filled (0 for Compress's
 * data, -1 for NonZero's indices), and cgen_emit_count hands the count on (docs/bundle.md,
 * "Outputs of data-dependent size"). A count above the bound is RT_ERR_SHAPE. */
static const char *nonzero_test(CgenCtx *cx, uint32_t v, const char *idx) {
    IrDType t = dtype_of(cx, v);
    const char *p = cgen_ptr(cx, v);
    if (t == IR_DTYPE_F16 || t == IR_DTYPE_BF16)
        return cgen_fmt(cx, "(%s[%s] & 0x7fff) != 0", p, idx);
    return cgen_fmt(cx, "%s[%s] != 0", p, idx);
}

static bool emit_compress(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], c = n->inputs[1], y = n->outputs[0];
    size_t esz;
    if (!need_esz(cx, n, x, &esz)) return false;
    const IrType *tx = T(cx, x), *ty = T(cx, y);
    bool has_axis = ir_attr_present(n, IR_ATTR_COMPRESS_AXIS);
    int R = tx->rank, axis = has_axis ? norm_axis(ir_attr_i(n, IR_ATTR_COMPRESS_AXIS), R) : 0;
    if (has_axis && (axis < 0 || axis >= R)) return cgen_unsupported(cx, n, "axis out of range");
    int64_t outer = has_axis ? prod(tx->dims, 0, axis) : 1;
    int64_t dim = has_axis ? tx->dims[axis] : cgen_numel(cx, x);
    int64_t inner = has_axis ? prod(tx->dims, axis + 1, R) : 1;
    int64_t nc = cgen_numel(cx, c) < dim ? cgen_numel(cx, c) : dim;
    int64_t bound = has_axis ? (ty->rank == R ? ty->dims[axis] : -1) : cgen_numel(cx, y);
    if (bound < 0 || cgen_numel(cx, y) != outer * bound * inner)
        return cgen_unsupported(cx, n, "an output of shape %s", cgen_type_str(cx, ty));
    long long row = (long long)(inner * (int64_t)esz);
    CWriter *w = cx->w;
    cw_open(w, "%s", "");
    cw_line(w, "int64_t o, j, m, k = 0; /* k: the slices kept, the count */");
    cw_line(w, "for (j = 0; j < %lld; j++) k += %s;", (long long)nc, nonzero_test(cx, c, "j"));
    if (nc > bound) cw_line(w, "if (k > %lld) return RT_ERR_SHAPE;", (long long)bound);
    cw_open(w, "for (o = 0; o < %lld; o++)", (long long)outer);
    cw_line(w, "unsigned char *dst = (unsigned char *)%s + o * %lld;", cgen_ptr(cx, y),
            (long long)bound * row);
    cw_line(w, "const unsigned char *src = (const unsigned char *)%s + o * %lld;", cgen_ptr(cx, x),
            (long long)dim * row);
    cw_open(w, "for (j = 0, m = 0; j < %lld; j++)", (long long)nc);
    cw_line(w, "if (!(%s)) continue;", nonzero_test(cx, c, "j"));
    cw_line(w, "memcpy(dst + m * %lld, src + j * %lld, %lld);", row, row, row);
    cw_line(w, "m++;");
    cw_close(w, NULL);
    cw_line(w, "memset(dst + k * %lld, 0, (size_t)((%lld - k) * %lld)); /* the fill */", row,
            (long long)bound, row);
    cw_close(w, NULL);
    cgen_emit_count(cx, &y, 1, "k", bound);
    cw_close(w, NULL);
    return true;
}

static bool emit_non_zero(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    const IrType *tx = T(cx, x), *ty = T(cx, y);
    int R = tx->rank;
    int64_t N = cgen_numel(cx, x), bound = ty->rank == 2 && ty->dims[0] == R ? ty->dims[1] : -1;
    if (bound < 0 || esz_of(cx, x) == 0) return cgen_unsupported(cx, n, "this output type");
    const char *py = cgen_ptr(cx, y);
    CWriter *w = cx->w;
    cw_open(w, "%s", "");
    cw_line(w, "int64_t i, k = 0; /* k: the nonzero elements so far, then the count */");
    cw_open(w, "for (i = 0; i < %lld; i++)", (long long)N);
    cw_line(w, "if (!(%s)) continue;", nonzero_test(cx, x, "i"));
    if (bound < N) cw_line(w, "if (k == %lld) return RT_ERR_SHAPE;", (long long)bound);
    int64_t rest = N;
    for (int d = 0; d < R; d++) {
        rest /= tx->dims[d] ? tx->dims[d] : 1;
        cw_line(w, "%s[%lld + k] = i / %lld %% %lld;", py, (long long)(d * bound),
                (long long)rest, (long long)tx->dims[d]);
    }
    cw_line(w, "k++;");
    cw_close(w, NULL);
    if (R > 0 && bound > 0) {
        cw_comment(w, "the fill: -1 past the count");
        cw_open(w, "for (i = k; i < %lld; i++)", (long long)bound);
        for (int d = 0; d < R; d++) cw_line(w, "%s[%lld + i] = -1;", py, (long long)(d * bound));
        cw_close(w, NULL);
    }
    cgen_emit_count(cx, &y, 1, "k", bound);
    cw_close(w, NULL);
    return true;
}

/* ---- Resize and Upsample ---- */

static int ctm_of(const char *s) {
    static const char *const names[] = {"half_pixel",         "half_pixel_symmetric",
                                        "pytorch_half_pixel", "align_corners",
                                        "asymmetric",         "tf_crop_and_resize"};
    for (int i = 0; i < 6; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

static bool emit_resize(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    const IrType *tx = T(cx, x), *ty = T(cx, y);
    IrDType dt = dtype_of(cx, x);
    if (dt != IR_DTYPE_F32 && dt != IR_DTYPE_F64 && dt != IR_DTYPE_F16 && dt != IR_DTYPE_BF16 &&
        dt != IR_DTYPE_U8 && dt != IR_DTYPE_I8 && dt != IR_DTYPE_I32 && dt != IR_DTYPE_I64)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(dt));
    int R = tx->rank;
    const char *mode_s, *scales = "NULL", *sizes = "NULL", *roi = "NULL", *axes = "NULL";
    int ctm, nmode = RT_NEAREST_ROUND_PREFER_FLOOR, policy = RT_KEEP_STRETCH, anti = 0, excl = 0;
    double cubic_a = -0.75, extrap = 0;
    int64_t n_axes = R;
    uint32_t scales_v = IR_NONE, sizes_v = IR_NONE, roi_v = IR_NONE;
    cgen_use_runtime(cx, "rt_resize.h");
    cw_open(cx->w, "%s", "");
    if (n->op == IR_OP_UPSAMPLE || n->opset < 11) {
        mode_s = n->op == IR_OP_UPSAMPLE ? ir_attr_s(n, IR_ATTR_UPSAMPLE_MODE)
                                         : ir_attr_s(n, IR_ATTR_RESIZE_MODE);
        ctm = RT_CTM_ASYMMETRIC;
        nmode = RT_NEAREST_FLOOR;
        if (n->op == IR_OP_UPSAMPLE && n->opset < 9) {
            uint32_t k;
            const IrAttr *a = ir_node_attr(n, IR_ATTR_UPSAMPLE_SCALES);
            k = a && a->present ? a->n : 0;
            if ((int)k != R) return cgen_unsupported(cx, n, "scales of the wrong length");
            CWriter t;
            cw_init(&t);
            for (uint32_t i = 0; i < k; i++)
                cw_raw(&t, "%s%.9gf", i ? ", " : "", a->floats[i]);
            cw_line(cx->w, "static const float scales[] = {%s};", t.buf);
            cw_free(&t);
            scales = "scales";
        } else {
            scales_v = n->inputs[1];
        }
    } else {
        mode_s = ir_attr_s(n, IR_ATTR_RESIZE_MODE);
        ctm = ctm_of(ir_attr_s(n, IR_ATTR_RESIZE_COORDINATE_TRANSFORMATION_MODE));
        const char *nm = ir_attr_s(n, IR_ATTR_RESIZE_NEAREST_MODE);
        nmode = strcmp(nm, "round_prefer_ceil") == 0 ? RT_NEAREST_ROUND_PREFER_CEIL
                : strcmp(nm, "floor") == 0           ? RT_NEAREST_FLOOR
                : strcmp(nm, "ceil") == 0            ? RT_NEAREST_CEIL
                                                     : RT_NEAREST_ROUND_PREFER_FLOOR;
        const char *kp = ir_attr_s(n, IR_ATTR_RESIZE_KEEP_ASPECT_RATIO_POLICY);
        policy = strcmp(kp, "not_larger") == 0    ? RT_KEEP_NOT_LARGER
                 : strcmp(kp, "not_smaller") == 0 ? RT_KEEP_NOT_SMALLER
                                                  : RT_KEEP_STRETCH;
        anti = (int)ir_attr_i(n, IR_ATTR_RESIZE_ANTIALIAS);
        excl = (int)ir_attr_i(n, IR_ATTR_RESIZE_EXCLUDE_OUTSIDE);
        cubic_a = ir_attr_f(n, IR_ATTR_RESIZE_CUBIC_COEFF_A);
        extrap = ir_attr_f(n, IR_ATTR_RESIZE_EXTRAPOLATION_VALUE);
        if (ir_has_input(n, 1) && cgen_numel(cx, n->inputs[1]) > 0) roi_v = n->inputs[1];
        if (ir_has_input(n, 2) && cgen_numel(cx, n->inputs[2]) > 0) scales_v = n->inputs[2];
        if (ir_has_input(n, 3) && cgen_numel(cx, n->inputs[3]) > 0) sizes_v = n->inputs[3];
        uint32_t na;
        const int64_t *ax = ir_attr_ints(n, IR_ATTR_RESIZE_AXES, &na);
        if (na) {
            n_axes = na;
            cw_line(cx->w, "static const int64_t axes[] = %s;", cgen_i64_list(cx, ax, na));
            axes = "axes";
        }
    }
    if (ctm < 0) return cgen_unsupported(cx, n, "this coordinate_transformation_mode");
    int mode = strcmp(mode_s, "nearest") == 0 ? RT_RESIZE_NEAREST
               : strcmp(mode_s, "linear") == 0 || strcmp(mode_s, "bilinear") == 0 ? RT_RESIZE_LINEAR
               : strcmp(mode_s, "cubic") == 0                                     ? RT_RESIZE_CUBIC
                                                                                  : -1;
    if (mode < 0) return cgen_unsupported(cx, n, "mode '%s'", mode_s);
    if (scales_v == IR_NONE && sizes_v == IR_NONE && strcmp(scales, "NULL") == 0)
        return cgen_unsupported(cx, n, "neither scales nor sizes");
    cw_line(cx->w, "RtResize p;");
    if (roi_v != IR_NONE && ctm == RT_CTM_TF_CROP_AND_RESIZE) {
        int64_t k = cgen_numel(cx, roi_v);
        if (k != 2 * n_axes) return cgen_unsupported(cx, n, "a roi of the wrong length");
        IrDType rt = dtype_of(cx, roi_v);
        const char *ld = rt == IR_DTYPE_F16    ? "rt_f16_to_f32"
                         : rt == IR_DTYPE_BF16 ? "rt_bf16_to_f32"
                                               : "";
        cw_line(cx->w, "double roi[%lld];", (long long)k);
        cw_line(cx->w, "int i;");
        cw_line(cx->w, "for (i = 0; i < %lld; i++) roi[i] = (double)%s(%s[i]);", (long long)k, ld,
                cgen_ptr(cx, roi_v));
        roi = "roi";
    }
    if (scales_v != IR_NONE) {
        if (dtype_of(cx, scales_v) != IR_DTYPE_F32)
            return cgen_unsupported(cx, n, "scales not float");
        if (cgen_numel(cx, scales_v) != n_axes)
            return cgen_unsupported(cx, n, "scales of the wrong length");
        scales = cgen_ptr(cx, scales_v);
    } else if (sizes_v != IR_NONE) {
        if (cgen_numel(cx, sizes_v) != n_axes)
            return cgen_unsupported(cx, n, "sizes of the wrong length");
        sizes = cgen_ptr(cx, sizes_v);
    }
    cw_line(cx->w, "static const int64_t in_dims[] = %s;", cgen_dims(cx, tx));
    cw_line(cx->w, "static const int64_t out_dims[] = %s;", cgen_dims(cx, ty));
    cw_line(cx->w, "p.rank = %d;", R);
    cw_line(cx->w, "memcpy(p.in_dims, in_dims, sizeof in_dims);");
    cw_line(cx->w, "memcpy(p.out_dims, out_dims, sizeof out_dims);");
    static const char *const modes[] = {"RT_RESIZE_NEAREST", "RT_RESIZE_LINEAR", "RT_RESIZE_CUBIC"};
    static const char *const ctms[] = {"RT_CTM_HALF_PIXEL",         "RT_CTM_HALF_PIXEL_SYMMETRIC",
                                       "RT_CTM_PYTORCH_HALF_PIXEL", "RT_CTM_ALIGN_CORNERS",
                                       "RT_CTM_ASYMMETRIC",         "RT_CTM_TF_CROP_AND_RESIZE"};
    static const char *const nmodes[] = {"RT_NEAREST_ROUND_PREFER_FLOOR",
                                         "RT_NEAREST_ROUND_PREFER_CEIL", "RT_NEAREST_FLOOR",
                                         "RT_NEAREST_CEIL"};
    static const char *const policies[] = {"RT_KEEP_STRETCH", "RT_KEEP_NOT_LARGER",
                                           "RT_KEEP_NOT_SMALLER"};
    cw_line(cx->w, "p.mode = %s;", modes[mode]);
    cw_line(cx->w, "p.ctm = %s;", ctms[ctm]);
    cw_line(cx->w, "p.nearest_mode = %s;", nmodes[nmode]);
    cw_line(cx->w, "p.exclude_outside = %d;", excl);
    cw_line(cx->w, "p.antialias = %d;", anti);
    cw_line(cx->w, "p.cubic_a = %.17g;", cubic_a);
    cw_line(cx->w, "p.extrapolation = %.17g;", extrap);
    cgen_call_checked(cx, "rt_resize_prepare(&p, %s, %lld, %s, %s, %s, %s)", axes,
                      (long long)n_axes, scales, sizes, policies[policy], roi);
    cgen_call_checked(cx, "rt_resize(&p, %s, %s, %d /* %s */)", cgen_ptr(cx, y), cgen_ptr(cx, x),
                      (int)dt, ir_dtype_name(dt));
    cw_close(cx->w, NULL);
    return true;
}

void cgen_register_data(CgenEmitFn *table) {
    table[IR_OP_RESHAPE] = table[IR_OP_FLATTEN] = emit_reshape_like;
    table[IR_OP_SQUEEZE] = table[IR_OP_UNSQUEEZE] = emit_reshape_like;
    table[IR_OP_IDENTITY] = emit_identity;
    table[IR_OP_DROPOUT] = emit_dropout;
    table[IR_OP_TRANSPOSE] = emit_transpose;
    table[IR_OP_DEPTH_TO_SPACE] = table[IR_OP_SPACE_TO_DEPTH] = emit_depth_space;
    table[IR_OP_CONCAT] = emit_concat;
    table[IR_OP_SPLIT] = emit_split;
    table[IR_OP_SLICE] = emit_slice;
    table[IR_OP_TILE] = emit_tile;
    table[IR_OP_EXPAND] = emit_expand;
    table[IR_OP_CENTER_CROP_PAD] = emit_center_crop_pad;
    table[IR_OP_PAD] = emit_pad;
    table[IR_OP_SHAPE] = emit_shape;
    table[IR_OP_SIZE] = emit_size;
    table[IR_OP_CONSTANT_OF_SHAPE] = emit_constant_of_shape;
    table[IR_OP_EYE_LIKE] = emit_eye_like;
    table[IR_OP_RANGE] = emit_range;
    table[IR_OP_TRILU] = emit_trilu;
    table[IR_OP_ONE_HOT] = emit_one_hot;
    table[IR_OP_GATHER] = emit_gather;
    table[IR_OP_GATHER_ELEMENTS] = emit_gather_elements;
    table[IR_OP_GATHER_ND] = emit_gather_nd;
    table[IR_OP_SCATTER] = table[IR_OP_SCATTER_ELEMENTS] = table[IR_OP_SCATTER_ND] = emit_scatter;
    table[IR_OP_REVERSE_SEQUENCE] = emit_reverse_sequence;
    table[IR_OP_COMPRESS] = emit_compress;
    table[IR_OP_NON_ZERO] = emit_non_zero;
    table[IR_OP_RESIZE] = table[IR_OP_UPSAMPLE] = emit_resize;
}
