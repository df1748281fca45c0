/* Partial evaluation for shape inference: small known values (shape vectors, head counts,
 * attention scales) carried through elementwise arithmetic, comparisons, logic, Where,
 * casts, reductions and the data-movement ops (Reshape, Expand, Tile, Concat...), so that
 * the shapes an exporter computes from other shapes stay static. Integers are computed in
 * int64 with wrap-around, floats in double rounded to the element type after every op. */
#include "shape.h"

#include <math.h>
#include <string.h>

/* Cast of a float to an integer type is evaluated only when the value fits: C leaves the
 * rest undefined. 2^63 is exactly representable as a double. */
#define SHAPE_EVAL_I64_LIMIT 9223372036854775808.0

static bool dtype_is_float(IrDType t) { return t == IR_DTYPE_F32 || t == IR_DTYPE_F64; }

static bool dtype_supported(IrDType t) {
    switch (t) {
    case IR_DTYPE_F32:
    case IR_DTYPE_F64:
    case IR_DTYPE_I64:
    case IR_DTYPE_I32:
    case IR_DTYPE_I16:
    case IR_DTYPE_I8:
    case IR_DTYPE_U64:
    case IR_DTYPE_U32:
    case IR_DTYPE_U16:
    case IR_DTYPE_U8:
    case IR_DTYPE_BOOL: return true;
    default: return false;
    }
}

/* The value an integer of type t holds after storing x (two's complement wrap). */
static int64_t wrap_int(IrDType t, int64_t x) {
    switch (t) {
    case IR_DTYPE_I32: return (int32_t)(uint32_t)(uint64_t)x;
    case IR_DTYPE_I16: return (int16_t)(uint16_t)(uint64_t)x;
    case IR_DTYPE_I8: return (int8_t)(uint8_t)(uint64_t)x;
    case IR_DTYPE_U32: return (uint32_t)(uint64_t)x;
    case IR_DTYPE_U16: return (uint16_t)(uint64_t)x;
    case IR_DTYPE_U8: return (uint8_t)(uint64_t)x;
    case IR_DTYPE_BOOL: return x != 0;
    default: return x;
    }
}

static double round_float(IrDType t, double x) { return t == IR_DTYPE_F32 ? (double)(float)x : x; }

bool shape_vals_of(const IrTensor *t, ShapeVals *v) {
    if (!t || !t->data || !dtype_supported((IrDType)t->dtype) || t->n_elems < 0 ||
        t->n_elems > SHAPE_MAX_KNOWN_ELEMS || t->rank < 0 || t->rank > IR_MAX_RANK)
        return false;
    v->dtype = (IrDType)t->dtype;
    v->rank = t->rank;
    memcpy(v->dims, t->dims, sizeof v->dims);
    v->n = (uint32_t)t->n_elems;
    v->is_float = dtype_is_float(v->dtype);
    uint32_t n;
    if (v->is_float) return shape_tensor_floats(t, v->f, SHAPE_MAX_KNOWN_ELEMS, &n);
    return shape_tensor_ints(t, v->i, SHAPE_MAX_KNOWN_ELEMS, &n);
}

bool shape_in_vals(const ShapeCtx *c, uint32_t i, ShapeVals *v) {
    return shape_vals_of(shape_const(c, i), v);
}

IrTensor *shape_vals_tensor(ShapeCtx *c, const ShapeVals *v) {
    IrTensor *t = ir_tensor_new(c->g->arena, v->dtype, v->rank, v->dims);
    IR_ASSERT(t->n_elems == (int64_t)v->n);
    uint8_t *p = t->data;
    for (uint32_t k = 0; k < v->n; k++) {
        int64_t x = v->is_float ? 0 : v->i[k];
        switch (v->dtype) {
        case IR_DTYPE_F32: {
            float f = (float)v->f[k];
            memcpy(p + 4 * k, &f, 4);
            break;
        }
        case IR_DTYPE_F64: memcpy(p + 8 * k, &v->f[k], 8); break;
        case IR_DTYPE_I64:
        case IR_DTYPE_U64: memcpy(p + 8 * k, &x, 8); break;
        case IR_DTYPE_I32:
        case IR_DTYPE_U32: {
            uint32_t y = (uint32_t)(uint64_t)x;
            memcpy(p + 4 * k, &y, 4);
            break;
        }
        case IR_DTYPE_I16:
        case IR_DTYPE_U16: {
            uint16_t y = (uint16_t)(uint64_t)x;
            memcpy(p + 2 * k, &y, 2);
            break;
        }
        case IR_DTYPE_I8:
        case IR_DTYPE_U8:
        case IR_DTYPE_BOOL: p[k] = (uint8_t)(uint64_t)x; break;
        default: IR_ASSERT(!"unsupported dtype in partial evaluation"); break;
        }
    }
    return t;
}

void shape_set_known_vals(ShapeCtx *c, uint32_t i, const ShapeVals *v) {
    if (i < c->n_out) shape_set_known(c, i, shape_vals_tensor(c, v));
}

/* Empty values of dtype and static type t; false when t is not small and static. */
bool shape_vals_init(ShapeVals *v, IrDType dtype, const IrType *t) {
    int64_t n = ir_type_numel(t);
    if (!dtype_supported(dtype) || n < 0 || n > SHAPE_MAX_KNOWN_ELEMS) return false;
    v->dtype = dtype;
    v->rank = t->rank;
    memcpy(v->dims, t->dims, sizeof v->dims);
    for (int i = t->rank; i < IR_MAX_RANK; i++) v->dims[i] = 0;
    v->n = (uint32_t)n;
    v->is_float = dtype_is_float(dtype);
    return true;
}

/* Stores element k of v from a value of the other class when needed (casts). */
bool shape_vals_put(ShapeVals *v, uint32_t k, bool from_float, int64_t i, double f) {
    if (v->is_float) {
        v->f[k] = round_float(v->dtype, from_float ? f : (double)i);
        return true;
    }
    if (from_float) {
        if (v->dtype == IR_DTYPE_BOOL) {
            v->i[k] = f != 0;
            return true;
        }
        if (!(f > -SHAPE_EVAL_I64_LIMIT && f < SHAPE_EVAL_I64_LIMIT)) return false;
        i = (int64_t)f; /* truncation toward zero, as C and ONNX Runtime */
    }
    v->i[k] = wrap_int(v->dtype, i);
    return true;
}

/* Flat index into src (numpy-broadcast against out) of out's flat index k. */
static uint32_t bcast_index(const ShapeVals *src, const ShapeVals *out, uint32_t k) {
    uint32_t idx = 0, stride = 1;
    for (int d = out->rank - 1; d >= 0; d--) {
        uint32_t coord = (uint32_t)(k % (uint64_t)out->dims[d]);
        k = (uint32_t)(k / (uint64_t)out->dims[d]);
        int sd = d - (out->rank - src->rank);
        if (sd < 0) continue;
        if (src->dims[sd] != 1) idx += coord * stride;
        stride *= (uint32_t)src->dims[sd];
    }
    return idx;
}

/* src broadcasts to out under numpy rules. */
static bool bcasts_to(const ShapeVals *src, const ShapeVals *out) {
    if (src->rank > out->rank) return false;
    for (int d = 0; d < src->rank; d++) {
        int64_t o = out->dims[d + out->rank - src->rank];
        if (src->dims[d] != 1 && src->dims[d] != o) return false;
    }
    return true;
}

/* ---- elementwise ---- */

static int64_t ipow(int64_t b, int64_t e) {
    uint64_t r = 1, x = (uint64_t)b;
    while (e > 0) {
        if (e & 1) r *= x;
        x *= x;
        e >>= 1;
    }
    return (int64_t)r;
}

/* One integer element; false when undefined (division by zero) or not evaluated. */
static bool eval_int(const IrNode *n, IrDType t, const int64_t *a, uint32_t nin, int64_t *r) {
    uint64_t x = (uint64_t)a[0], y = nin > 1 ? (uint64_t)a[1] : 0;
    bool is_unsigned = t == IR_DTYPE_U64 || t == IR_DTYPE_U32 || t == IR_DTYPE_U16 ||
                       t == IR_DTYPE_U8 || t == IR_DTYPE_BOOL;
    switch ((IrOp)n->op) {
    case IR_OP_NEG: *r = (int64_t)(0 - x); return true;
    case IR_OP_ABS: *r = a[0] < 0 ? (int64_t)(0 - x) : a[0]; return true;
    case IR_OP_SIGN: *r = (a[0] > 0) - (a[0] < 0); return true;
    case IR_OP_RELU: *r = a[0] > 0 ? a[0] : 0; return true;
    case IR_OP_NOT: *r = !a[0]; return true;
    case IR_OP_BITWISE_NOT: *r = (int64_t)~x; return true;
    case IR_OP_ADD:
    case IR_OP_SUM: *r = (int64_t)(x + y); return true;
    case IR_OP_SUB: *r = (int64_t)(x - y); return true;
    case IR_OP_MUL: *r = (int64_t)(x * y); return true;
    case IR_OP_DIV: /* truncation toward zero, as C and ONNX Runtime */
        if (a[1] == 0 || (a[1] == -1 && a[0] == INT64_MIN)) return false;
        *r = is_unsigned && t == IR_DTYPE_U64 ? (int64_t)(x / y) : a[0] / a[1];
        return true;
    case IR_OP_MOD: {
        if (a[1] == 0 || (a[1] == -1 && a[0] == INT64_MIN)) return false;
        int64_t m = a[0] % a[1];
        bool fmod_attr = ir_attr_i(n, IR_ATTR_MOD_FMOD) != 0;
        if (!fmod_attr && m != 0 && (m < 0) != (a[1] < 0)) m += a[1]; /* divisor's sign */
        *r = m;
        return true;
    }
    case IR_OP_POW:
        if (a[1] < 0) return false;
        *r = ipow(a[0], a[1]);
        return true;
    case IR_OP_MAX: *r = a[0] > a[1] ? a[0] : a[1]; return true;
    case IR_OP_MIN: *r = a[0] < a[1] ? a[0] : a[1]; return true;
    case IR_OP_EQUAL: *r = a[0] == a[1]; return true;
    case IR_OP_LESS: *r = a[0] < a[1]; return true;
    case IR_OP_LESS_OR_EQUAL: *r = a[0] <= a[1]; return true;
    case IR_OP_GREATER: *r = a[0] > a[1]; return true;
    case IR_OP_GREATER_OR_EQUAL: *r = a[0] >= a[1]; return true;
    case IR_OP_AND: *r = a[0] && a[1]; return true;
    case IR_OP_OR: *r = a[0] || a[1]; return true;
    case IR_OP_XOR: *r = !a[0] != !a[1]; return true;
    case IR_OP_BITWISE_AND: *r = (int64_t)(x & y); return true;
    case IR_OP_BITWISE_OR: *r = (int64_t)(x | y); return true;
    case IR_OP_BITWISE_XOR: *r = (int64_t)(x ^ y); return true;
    default: return false;
    }
}

static bool eval_float(const IrNode *n, const double *a, uint32_t nin, double *r) {
    double x = a[0], y = nin > 1 ? a[1] : 0;
    switch ((IrOp)n->op) {
    case IR_OP_NEG: *r = -x; return true;
    case IR_OP_ABS: *r = fabs(x); return true;
    case IR_OP_SIGN: *r = (double)((x > 0) - (x < 0)); return true;
    case IR_OP_RELU: *r = x > 0 ? x : 0; return true;
    case IR_OP_SQRT: *r = sqrt(x); return true;
    case IR_OP_RECIPROCAL: *r = 1.0 / x; return true;
    case IR_OP_CEIL: *r = ceil(x); return true;
    case IR_OP_FLOOR: *r = floor(x); return true;
    case IR_OP_ROUND: *r = nearbyint(x); return true; /* ties to even in the default mode */
    case IR_OP_EXP: *r = exp(x); return true;
    case IR_OP_LOG: *r = log(x); return true;
    case IR_OP_ADD:
    case IR_OP_SUM: *r = x + y; return true;
    case IR_OP_SUB: *r = x - y; return true;
    case IR_OP_MUL: *r = x * y; return true;
    case IR_OP_DIV: *r = x / y; return true;
    case IR_OP_MOD: *r = fmod(x, y); return true;
    case IR_OP_POW: *r = pow(x, y); return true;
    case IR_OP_MAX: *r = isnan(x) || isnan(y) ? NAN : x > y ? x : y; return true;
    case IR_OP_MIN: *r = isnan(x) || isnan(y) ? NAN : x < y ? x : y; return true;
    case IR_OP_EQUAL: *r = x == y; return true;
    case IR_OP_LESS: *r = x < y; return true;
    case IR_OP_LESS_OR_EQUAL: *r = x <= y; return true;
    case IR_OP_GREATER: *r = x > y; return true;
    case IR_OP_GREATER_OR_EQUAL: *r = x >= y; return true;
    default: return false;
    }
}

/* Variadic ops fold their inputs left to right with the binary form. */
static bool is_variadic(IrOp op) {
    return op == IR_OP_MAX || op == IR_OP_MIN || op == IR_OP_SUM || op == IR_OP_MEAN;
}

/* Ops of the `broadcast`/`axis` attribute era (before opset 7) broadcast differently. */
#define SHAPE_EVAL_NUMPY_BCAST_SINCE 7

void shape_eval_eltwise(ShapeCtx *c) {
    IrOp op = (IrOp)c->node->op;
    uint32_t nin = c->node->n_inputs;
    const IrType *ot = &c->out[0];
    if (c->failed || c->n_out < 1 || nin < 1 || nin > 3 || ot->kind != IR_TYPE_TENSOR) return;
    if (nin > 1 && !is_variadic(op) && op != IR_OP_WHERE &&
        shape_opset(c) < SHAPE_EVAL_NUMPY_BCAST_SINCE)
        return;
    ShapeVals in[3], out;
    for (uint32_t i = 0; i < nin; i++)
        if (!shape_in_vals(c, i, &in[i])) return;
    if (!shape_vals_init(&out, (IrDType)ot->dtype, ot)) return;
    for (uint32_t i = 0; i < nin; i++)
        if (!bcasts_to(&in[i], &out)) return;
    bool is_cast = op == IR_OP_CAST || op == IR_OP_CAST_LIKE;
    bool is_where = op == IR_OP_WHERE;
    if (is_where && nin != 3) return;
    /* the class the op computes in: its (data) inputs' */
    const ShapeVals *data = &in[is_where ? 1 : 0];
    bool fl = data->is_float;
    for (uint32_t i = is_where ? 2 : 1; i < (is_cast ? 1 : nin); i++)
        if (in[i].is_float != fl) return;
    for (uint32_t k = 0; k < out.n; k++) {
        int64_t ia[3], ir = 0;
        double fa[3], fr = 0;
        for (uint32_t i = 0; i < nin; i++) {
            uint32_t j = bcast_index(&in[i], &out, k);
            ia[i] = in[i].is_float ? 0 : in[i].i[j];
            fa[i] = in[i].is_float ? in[i].f[j] : 0;
        }
        bool ok = true;
        if (is_cast) {
            ir = ia[0];
            fr = fa[0];
        } else if (is_where) {
            ir = ia[0] ? ia[1] : ia[2];
            fr = ia[0] ? fa[1] : fa[2];
        } else if (is_variadic(op)) {
            IrOp base = op == IR_OP_MEAN ? IR_OP_SUM : op;
            IrNode n2 = *c->node;
            n2.op = (uint16_t)base;
            ir = ia[0];
            fr = fa[0];
            for (uint32_t i = 1; i < nin && ok; i++) {
                int64_t p[2] = {ir, ia[i]};
                double q[2] = {fr, fa[i]};
                ok = fl ? eval_float(&n2, q, 2, &fr) : eval_int(&n2, data->dtype, p, 2, &ir);
                if (fl) fr = round_float(data->dtype, fr);
                else ir = wrap_int(data->dtype, ir);
            }
            if (op == IR_OP_MEAN) {
                if (!fl) return; /* integer Mean: rounding is the kernel's choice */
                fr /= (double)nin;
            }
        } else {
            ok = fl ? eval_float(c->node, fa, nin, &fr)
                    : eval_int(c->node, data->dtype, ia, nin, &ir);
        }
        if (!ok || !shape_vals_put(&out, k, fl, ir, fr)) return;
    }
    shape_set_known_vals(c, 0, &out);
}

/* ---- reductions ---- */

void shape_eval_reduce(ShapeCtx *c, const bool *reduced) {
    IrOp op = (IrOp)c->node->op;
    const IrType *ot = &c->out[0];
    ShapeVals x, out;
    if (c->failed || !shape_in_vals(c, 0, &x)) return;
    if (op != IR_OP_REDUCE_SUM && op != IR_OP_REDUCE_PROD && op != IR_OP_REDUCE_MAX &&
        op != IR_OP_REDUCE_MIN)
        return;
    if (!shape_vals_init(&out, x.dtype, ot) || x.dtype == IR_DTYPE_BOOL) return;
    bool seen[SHAPE_MAX_KNOWN_ELEMS] = {false};
    for (uint32_t k = 0; k < x.n; k++) {
        /* output flat index: the coordinates of k with reduced axes dropped */
        uint32_t rem = k, o = 0, stride = 1;
        for (int d = x.rank - 1; d >= 0; d--) {
            uint32_t coord = (uint32_t)(rem % (uint64_t)x.dims[d]);
            rem = (uint32_t)(rem / (uint64_t)x.dims[d]);
            if (reduced[d]) continue;
            o += coord * stride;
            stride *= (uint32_t)x.dims[d];
        }
        if (o >= out.n) return;
        int64_t xi = x.is_float ? 0 : x.i[k];
        double xf = x.is_float ? x.f[k] : 0;
        if (!seen[o]) {
            seen[o] = true;
            out.i[o] = xi;
            out.f[o] = xf;
            continue;
        }
        switch (op) {
        case IR_OP_REDUCE_SUM:
            out.i[o] = (int64_t)((uint64_t)out.i[o] + (uint64_t)xi);
            out.f[o] += xf;
            break;
        case IR_OP_REDUCE_PROD:
            out.i[o] = (int64_t)((uint64_t)out.i[o] * (uint64_t)xi);
            out.f[o] *= xf;
            break;
        case IR_OP_REDUCE_MAX:
            if (xi > out.i[o]) out.i[o] = xi;
            if (xf > out.f[o] || isnan(xf)) out.f[o] = xf;
            break;
        default:
            if (xi < out.i[o]) out.i[o] = xi;
            if (xf < out.f[o] || isnan(xf)) out.f[o] = xf;
            break;
        }
        out.i[o] = wrap_int(x.dtype, out.i[o]);
        out.f[o] = round_float(x.dtype, out.f[o]);
    }
    for (uint32_t o = 0; o < out.n; o++) {
        if (seen[o]) continue;
        /* empty reduction: the identity of Sum and Prod; Max/Min of nothing is left alone */
        if (op != IR_OP_REDUCE_SUM && op != IR_OP_REDUCE_PROD) return;
        out.i[o] = op == IR_OP_REDUCE_PROD;
        out.f[o] = op == IR_OP_REDUCE_PROD;
    }
    shape_set_known_vals(c, 0, &out);
}

/* ---- data movement ---- */

void shape_eval_relabel(ShapeCtx *c, uint32_t in) {
    ShapeVals v;
    const IrType *ot = &c->out[0];
    int64_t n = ir_type_numel(ot);
    if (c->failed || ot->kind != IR_TYPE_TENSOR || n < 0 || !shape_in_vals(c, in, &v) ||
        n != (int64_t)v.n || ot->dtype != v.dtype)
        return;
    v.rank = ot->rank;
    memcpy(v.dims, ot->dims, sizeof v.dims);
    for (int i = ot->rank; i < IR_MAX_RANK; i++) v.dims[i] = 0;
    shape_set_known_vals(c, 0, &v);
}

void shape_eval_expand(ShapeCtx *c) {
    ShapeVals x, out;
    const IrType *ot = &c->out[0];
    if (c->failed || !shape_in_vals(c, 0, &x) || !shape_vals_init(&out, x.dtype, ot) ||
        !bcasts_to(&x, &out))
        return;
    for (uint32_t k = 0; k < out.n; k++) {
        uint32_t j = bcast_index(&x, &out, k);
        out.i[k] = x.is_float ? 0 : x.i[j];
        out.f[k] = x.is_float ? x.f[j] : 0;
    }
    shape_set_known_vals(c, 0, &out);
}

void shape_eval_tile(ShapeCtx *c) {
    ShapeVals x, out;
    const IrType *ot = &c->out[0];
    if (c->failed || !shape_in_vals(c, 0, &x) || !shape_vals_init(&out, x.dtype, ot) ||
        x.rank != out.rank)
        return;
    for (uint32_t k = 0; k < out.n; k++) {
        uint32_t rem = k, j = 0, stride = 1;
        for (int d = out.rank - 1; d >= 0; d--) {
            uint32_t coord = (uint32_t)(rem % (uint64_t)out.dims[d]);
            rem = (uint32_t)(rem / (uint64_t)out.dims[d]);
            if (x.dims[d] <= 0) return;
            j += (uint32_t)(coord % (uint64_t)x.dims[d]) * stride;
            stride *= (uint32_t)x.dims[d];
        }
        out.i[k] = x.is_float ? 0 : x.i[j];
        out.f[k] = x.is_float ? x.f[j] : 0;
    }
    shape_set_known_vals(c, 0, &out);
}

void shape_eval_concat(ShapeCtx *c, int axis) {
    ShapeVals out, part;
    const IrType *ot = &c->out[0];
    if (c->failed || ot->kind != IR_TYPE_TENSOR || ot->rank < 1 ||
        !shape_vals_init(&out, (IrDType)ot->dtype, ot))
        return;
    /* outer: product of dims before axis; each part contributes inner blocks per outer */
    uint64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= (uint64_t)out.dims[d];
    for (int d = axis + 1; d < out.rank; d++) inner *= (uint64_t)out.dims[d];
    uint64_t row = (uint64_t)out.dims[axis] * inner, at = 0;
    for (uint32_t i = 0; i < c->node->n_inputs; i++) {
        if (!shape_in_vals(c, i, &part) || part.dtype != out.dtype || part.rank != out.rank)
            return;
        uint64_t block = (uint64_t)part.dims[axis] * inner;
        if (at + block > row) return;
        for (uint64_t o = 0; o < outer; o++)
            for (uint64_t e = 0; e < block; e++) {
                uint64_t src = o * block + e, dst = o * row + at + e;
                if (src >= part.n || dst >= out.n) return;
                out.i[dst] = part.is_float ? 0 : part.i[src];
                out.f[dst] = part.is_float ? part.f[src] : 0;
            }
        at += block;
    }
    if (at != row) return;
    shape_set_known_vals(c, 0, &out);
}
