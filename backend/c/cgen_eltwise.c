/* The elementwise family: unary math, activations, arithmetic, comparison, logic and
 * bitwise ops with numpy broadcasting, variadic Sum/Mean/Max/Min, Where and Clip. Each op
 * becomes a map (CgenMap: operands, one store expression, the broadcast loop with its
 * dimensions merged at compile time), which the C backend renders as an inline loop nest
 * and the CUDA backend as one kernel (cuda_ops.c). float16/bfloat16 compute in float and
 * round once on store. */
#include <math.h>
#include <string.h>

#include "backend/c/cgen.h"

#define ELT_MAX_IN CGEN_BCAST_MAX_IN /* Sum/Max/... are variadic; more is refused */


/* Computes merged loop dims and per-operand strides for out = f(ins...). */
bool cgen_bcast_loop(const CgenCtx *cx, uint32_t out, const uint32_t *ins, int n_in,
                     CgenBcastLoop *L) {
    const IrType *to = cgen_type(cx, out);
    int R = to->rank;
    int64_t st[CGEN_BCAST_MAX_IN + 1][IR_MAX_RANK];
    for (int k = 0; k <= n_in; k++) {
        const IrType *t = k == 0 ? to : cgen_type(cx, ins[k - 1]);
        if (t->rank > R) return false;
        int64_t s = 1;
        for (int d = R - 1; d >= 0; d--) {
            int td = d - (R - t->rank);
            int64_t dim = td >= 0 ? t->dims[td] : 1;
            if (dim != 1 && dim != to->dims[d]) return false;
            st[k][d] = dim == 1 ? 0 : s;
            s *= dim;
        }
    }
    L->rank = 0;
    for (int d = 0; d < R; d++) {
        if (to->dims[d] == 1) continue;
        int m = L->rank;
        bool merge = m > 0;
        for (int k = 0; k <= n_in && merge; k++)
            merge = L->stride[k][m - 1] == st[k][d] * to->dims[d];
        if (merge) {
            L->dims[m - 1] *= to->dims[d];
            for (int k = 0; k <= n_in; k++) L->stride[k][m - 1] = st[k][d];
        } else {
            L->dims[m] = to->dims[d];
            for (int k = 0; k <= n_in; k++) L->stride[k][m] = st[k][d];
            L->rank++;
        }
    }
    return true;
}

const char *cgen_bcast_index(CgenCtx *cx, const CgenBcastLoop *L, int k) {
    CWriter t;
    cw_init(&t);
    for (int d = 0; d < L->rank; d++) {
        int64_t s = L->stride[k][d];
        if (s == 0) continue;
        if (t.len) cw_raw(&t, " + ");
        if (s == 1) cw_raw(&t, "i%d", d);
        else cw_raw(&t, "i%d * %lld", d, (long long)s);
    }
    const char *r = cgen_fmt(cx, "%s", t.len ? t.buf : "0");
    cw_free(&t);
    return r;
}

/* Compute class of an element type: how values are loaded and stored. */
typedef enum { EC_F32, EC_F64, EC_F16, EC_BF16, EC_INT, EC_UINT, EC_BOOL, EC_NONE } EltClass;

static EltClass elt_class(IrDType t) {
    switch (t) {
    case IR_DTYPE_F32: return EC_F32;
    case IR_DTYPE_F64: return EC_F64;
    case IR_DTYPE_F16: return EC_F16;
    case IR_DTYPE_BF16: return EC_BF16;
    case IR_DTYPE_I8: case IR_DTYPE_I16: case IR_DTYPE_I32: case IR_DTYPE_I64: return EC_INT;
    case IR_DTYPE_U8: case IR_DTYPE_U16: case IR_DTYPE_U32: case IR_DTYPE_U64: return EC_UINT;
    case IR_DTYPE_BOOL: return EC_BOOL;
    default: return EC_NONE;
    }
}

static bool is_float_class(EltClass c) { return c <= EC_BF16; }

/* The C type computations happen in. */
static const char *compute_type(IrDType t) {
    EltClass c = elt_class(t);
    if (c == EC_F64) return "double";
    if (is_float_class(c)) return "float";
    return bundle_ctype(t);
}

static const char *load(CgenCtx *cx, IrDType t, const char *name, const char *idx) {
    switch (elt_class(t)) {
    case EC_F16: return cgen_fmt(cx, "rt_f16_to_f32(%s[%s])", name, idx);
    case EC_BF16: return cgen_fmt(cx, "rt_bf16_to_f32(%s[%s])", name, idx);
    default: return cgen_fmt(cx, "%s[%s]", name, idx);
    }
}

static const char *store_wrap(CgenCtx *cx, IrDType t, const char *expr) {
    switch (elt_class(t)) {
    case EC_F16: return cgen_fmt(cx, "rt_f32_to_f16(%s)", expr);
    case EC_BF16: return cgen_fmt(cx, "rt_f32_to_bf16(%s)", expr);
    case EC_BOOL: return cgen_fmt(cx, "(uint8_t)((%s) != 0)", expr);
    case EC_F32:
    case EC_F64: return expr; /* computed in the storage type already */
    default: return cgen_fmt(cx, "(%s)(%s)", bundle_ctype(t), expr);
    }
}

/* The C target's float exp, tanh and erf are rt_vmath.h's, which loops vectorize (CUDA takes
 * only the expression and keeps libm's: cx->names is set for the C target alone). */
static bool vmath(CgenCtx *cx, IrDType t) { return cx->names && elt_class(t) != EC_F64; }

/* Math function name for the compute type: "exp" -> "expf" for float, or rt_vmath.h's. */
static const char *fn(CgenCtx *cx, IrDType t, const char *base) {
    if (vmath(cx, t) && (!strcmp(base, "exp") || !strcmp(base, "tanh") || !strcmp(base, "erf"))) {
        cgen_use_runtime(cx, "rt_vmath.h");
        return cgen_fmt(cx, "rt_v%s_f32", base);
    }
    return elt_class(t) == EC_F64 ? base : cgen_fmt(cx, "%sf", base);
}

/* The map out = expr(ins...) of node n into *m; false after a diagnostic. */
static bool build_map(CgenCtx *cx, const IrNode *n, uint32_t out, const uint32_t *ins, int n_in,
                      const char *expr, CgenMap *m) {
    if (n_in > ELT_MAX_IN) return cgen_unsupported(cx, n, "more than %d inputs", ELT_MAX_IN);
    if (!cgen_bcast_loop(cx, out, ins, n_in, &m->L))
        return cgen_unsupported(cx, n, "input shapes that do not broadcast to the output");
    m->out = out;
    m->n_in = n_in;
    for (int k = 0; k < n_in; k++) m->ins[k] = ins[k];
    m->expr = expr;
    return true;
}

const char *cgen_map_store(CgenCtx *cx, const CgenMap *m) {
    IrDType to = (IrDType)cgen_type(cx, m->out)->dtype;
    CWriter e; /* $k becomes the load of operand k */
    cw_init(&e);
    for (const char *p = m->expr; *p; p++) {
        if (*p == '$' && p[1] >= '0' && p[1] <= '9') {
            int k = p[1] - '0';
            char nm[8];
            snprintf(nm, sizeof nm, "x%d", k);
            cw_raw(&e, "%s", load(cx, (IrDType)cgen_type(cx, m->ins[k])->dtype, nm,
                                  cgen_bcast_index(cx, &m->L, k + 1)));
            p++;
        } else {
            cw_raw(&e, "%c", *p);
        }
    }
    const char *st = cgen_fmt(cx, "y[%s] = %s;", cgen_bcast_index(cx, &m->L, 0),
                              store_wrap(cx, to, e.buf ? e.buf : ""));
    cw_free(&e);
    return st;
}

/* The C rendering of map m: a block with operand pointers x0.., y and the merged loop nest. */
static bool render_map(CgenCtx *cx, const CgenMap *m) {
    CWriter *w = cx->w;
    const CgenBcastLoop *L = &m->L;
    if (cgen_numel(cx, m->out) == 0) {
        cw_comment(w, "empty output: nothing to compute");
        return true;
    }
    cw_open(w, "%s", "");
    for (int k = 0; k < m->n_in; k++)
        cw_line(w, "const %s *x%d = %s;", bundle_ctype((IrDType)cgen_type(cx, m->ins[k])->dtype), k,
                cgen_ptr(cx, m->ins[k]));
    cw_line(w, "%s *y = %s;", bundle_ctype((IrDType)cgen_type(cx, m->out)->dtype),
            cgen_ptr(cx, m->out));
    if (L->rank > 0) {
        cw_indent(w);
        cw_raw(w, "size_t ");
        for (int d = 0; d < L->rank; d++) cw_raw(w, "%si%d", d ? ", " : "", d);
        cw_raw(w, ";\n");
    }
    for (int d = 0; d < L->rank; d++)
        cw_line(w, "%sfor (i%d = 0; i%d < %lld; i%d++)", "", d, d, (long long)L->dims[d], d),
            w->indent++;
    cw_line(w, "%s", cgen_map_store(cx, m));
    w->indent -= L->rank;
    cw_close(w, NULL);
    return true;
}

/* ---- unary ---- */

/* The expression template of unary node n in *expr; false after a diagnostic. */
static bool unary_expr(CgenCtx *cx, const IrNode *n, const char **expr) {
    uint32_t x = n->inputs[0];
    IrDType t = (IrDType)cgen_type(cx, x)->dtype;
    EltClass c = elt_class(t);
    bool fl = is_float_class(c), dbl = c == EC_F64;
    const char *CT = compute_type(t);
#define F(name) fn(cx, t, name)
#define L(v) cgen_flit(cx, v, dbl)
    const char *e = NULL;
    if (c == EC_NONE) return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    switch ((IrOp)n->op) {
    case IR_OP_NEG: e = c == EC_UINT ? "0 - $0" : "-$0"; break;
    case IR_OP_ABS:
        e = fl ? cgen_fmt(cx, "%s($0)", F("fabs")) : c == EC_INT ? "($0 < 0 ? -$0 : $0)" : "$0";
        break;
    case IR_OP_SIGN: e = c == EC_UINT ? "($0 > 0)" : "(($0 > 0) - ($0 < 0))"; break;
    case IR_OP_NOT: e = "!$0"; break;
    case IR_OP_BITWISE_NOT: e = cgen_fmt(cx, "(%s)~$0", bundle_ctype(t)); break;
    case IR_OP_IS_NAN: e = "isnan($0)"; break;
    case IR_OP_IS_INF: {
        bool neg = ir_attr_i(n, IR_ATTR_IS_INF_DETECT_NEGATIVE) != 0;
        bool pos = ir_attr_i(n, IR_ATTR_IS_INF_DETECT_POSITIVE) != 0;
        e = neg && pos ? "isinf($0)" : neg ? "(isinf($0) && $0 < 0)" : pos ? "(isinf($0) && $0 > 0)" : "0";
        break;
    }
    case IR_OP_RELU: e = fl ? cgen_fmt(cx, "($0 > 0 ? $0 : %s)", L(0)) : "($0 > 0 ? $0 : 0)"; break;
    default: break;
    }
    if (!e && !fl) return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    if (!e) switch ((IrOp)n->op) {
        case IR_OP_EXP: e = cgen_fmt(cx, "%s($0)", F("exp")); break;
        case IR_OP_LOG: e = cgen_fmt(cx, "%s($0)", F("log")); break;
        case IR_OP_SQRT: e = cgen_fmt(cx, "%s($0)", F("sqrt")); break;
        case IR_OP_RECIPROCAL: e = cgen_fmt(cx, "%s / $0", L(1)); break;
        case IR_OP_FLOOR: e = cgen_fmt(cx, "%s($0)", F("floor")); break;
        case IR_OP_CEIL: e = cgen_fmt(cx, "%s($0)", F("ceil")); break;
        case IR_OP_ROUND: e = cgen_fmt(cx, "%s($0)", F("nearbyint")); break; /* half to even */
        case IR_OP_SIN: e = cgen_fmt(cx, "%s($0)", F("sin")); break;
        case IR_OP_COS: e = cgen_fmt(cx, "%s($0)", F("cos")); break;
        case IR_OP_TAN: e = cgen_fmt(cx, "%s($0)", F("tan")); break;
        case IR_OP_ASIN: e = cgen_fmt(cx, "%s($0)", F("asin")); break;
        case IR_OP_ACOS: e = cgen_fmt(cx, "%s($0)", F("acos")); break;
        case IR_OP_ATAN: e = cgen_fmt(cx, "%s($0)", F("atan")); break;
        case IR_OP_SINH: e = cgen_fmt(cx, "%s($0)", F("sinh")); break;
        case IR_OP_COSH: e = cgen_fmt(cx, "%s($0)", F("cosh")); break;
        case IR_OP_ASINH: e = cgen_fmt(cx, "%s($0)", F("asinh")); break;
        case IR_OP_ACOSH: e = cgen_fmt(cx, "%s($0)", F("acosh")); break;
        case IR_OP_ATANH: e = cgen_fmt(cx, "%s($0)", F("atanh")); break;
        case IR_OP_TANH: e = cgen_fmt(cx, "%s($0)", F("tanh")); break;
        case IR_OP_ERF: e = cgen_fmt(cx, "%s($0)", F("erf")); break;
        case IR_OP_SIGMOID:
            if (vmath(cx, t)) {
                cgen_use_runtime(cx, "rt_vmath.h");
                e = "rt_vsigmoid_f32($0)";
                break;
            }
            e = cgen_fmt(cx, "($0 >= 0 ? %s / (%s + %s(-$0)) : %s($0) / (%s + %s($0)))", L(1), L(1),
                         F("exp"), F("exp"), L(1), F("exp"));
            break;
        case IR_OP_LEAKY_RELU:
            e = cgen_fmt(cx, "($0 >= 0 ? $0 : $0 * %s)", L(ir_attr_f(n, IR_ATTR_LEAKY_RELU_ALPHA)));
            break;
        case IR_OP_ELU:
            e = cgen_fmt(cx, "($0 >= 0 ? $0 : %s * (%s($0) - %s))", L(ir_attr_f(n, IR_ATTR_ELU_ALPHA)),
                         F("exp"), L(1));
            break;
        case IR_OP_CELU: {
            const char *al = L(ir_attr_f(n, IR_ATTR_CELU_ALPHA));
            e = cgen_fmt(cx, "(%s($0, %s) + %s(%s, %s * (%s($0 / %s) - %s)))", F("fmax"), L(0),
                         F("fmin"), L(0), al, F("exp"), al, L(1));
            break;
        }
        case IR_OP_SELU:
            e = cgen_fmt(cx, "%s * ($0 > 0 ? $0 : %s * (%s($0) - %s))",
                         L(ir_attr_f(n, IR_ATTR_SELU_GAMMA)), L(ir_attr_f(n, IR_ATTR_SELU_ALPHA)),
                         F("exp"), L(1));
            break;
        case IR_OP_HARD_SIGMOID:
            e = cgen_fmt(cx, "%s(%s, %s(%s, %s * $0 + %s))", F("fmax"), L(0), F("fmin"), L(1),
                         L(ir_attr_f(n, IR_ATTR_HARD_SIGMOID_ALPHA)),
                         L(ir_attr_f(n, IR_ATTR_HARD_SIGMOID_BETA)));
            break;
        case IR_OP_HARD_SWISH:
            e = cgen_fmt(cx, "$0 * %s(%s, %s(%s, $0 / %s + %s))", F("fmax"), L(0), F("fmin"), L(1),
                         L(6), L(0.5));
            break;
        case IR_OP_SOFTPLUS: /* log(1 + e^x) without overflow */
            e = cgen_fmt(cx, "($0 > 0 ? $0 + %s(%s(-$0)) : %s(%s($0)))", F("log1p"), F("exp"),
                         F("log1p"), F("exp"));
            break;
        case IR_OP_SOFTSIGN: e = cgen_fmt(cx, "$0 / (%s + %s($0))", L(1), F("fabs")); break;
        case IR_OP_MISH:
            e = cgen_fmt(cx, "$0 * %s($0 > 0 ? $0 + %s(%s(-$0)) : %s(%s($0)))", F("tanh"),
                         F("log1p"), F("exp"), F("log1p"), F("exp"));
            break;
        case IR_OP_THRESHOLDED_RELU:
            e = cgen_fmt(cx, "($0 > %s ? $0 : %s)", L(ir_attr_f(n, IR_ATTR_THRESHOLDED_RELU_ALPHA)),
                         L(0));
            break;
        case IR_OP_SWISH:
            e = cgen_fmt(cx, "$0 / (%s + %s(-%s * $0))", L(1), F("exp"),
                         L(ir_attr_f(n, IR_ATTR_SWISH_ALPHA)));
            break;
        case IR_OP_GELU:
            if (strcmp(ir_attr_s(n, IR_ATTR_GELU_APPROXIMATE), "tanh") == 0)
                e = cgen_fmt(cx, "%s * $0 * (%s + %s(%s * ($0 + %s * $0 * $0 * $0)))", L(0.5), L(1),
                             F("tanh"), L(0.7978845608028654), L(0.044715));
            else
                e = cgen_fmt(cx, "%s * $0 * (%s + %s($0 * %s))", L(0.5), L(1), F("erf"),
                             L(0.7071067811865476));
            break;
        default: return cgen_unsupported(cx, n, "this op in the elementwise emitter");
        }
#undef F
#undef L
    (void)CT;
    *expr = e;
    return true;
}

static bool map_unary(CgenCtx *cx, const IrNode *n, CgenMap *m) {
    const char *e;
    return unary_expr(cx, n, &e) && build_map(cx, n, n->outputs[0], n->inputs, 1, e, m);
}

/* ---- binary and variadic ---- */

/* The expression template of binary node n in *expr; false after a diagnostic. */
static bool binary_expr(CgenCtx *cx, const IrNode *n, const char **expr) {
    IrDType t = (IrDType)cgen_type(cx, n->inputs[0])->dtype;
    EltClass c = elt_class(t);
    bool fl = is_float_class(c), dbl = c == EC_F64;
    const char *e = NULL;
    if (c == EC_NONE) return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    switch ((IrOp)n->op) {
    case IR_OP_ADD: e = "$0 + $1"; break;
    case IR_OP_SUB: e = "$0 - $1"; break;
    case IR_OP_MUL: e = "$0 * $1"; break;
    case IR_OP_DIV:
        e = fl ? "$0 / $1" : c == EC_INT ? "($1 == 0 ? 0 : ($1 == -1 ? 0 - $0 : $0 / $1))"
                                         : "($1 == 0 ? 0 : $0 / $1)";
        break;
    case IR_OP_POW: { /* an integer exponent converts explicitly (int32 does not fit a float) */
        EltClass ce = elt_class((IrDType)cgen_type(cx, n->inputs[1])->dtype);
        bool int_exp = ce == EC_INT || ce == EC_UINT;
        e = fl && dbl ? (int_exp ? "pow($0, (double)$1)" : "pow($0, $1)")
            : fl      ? (int_exp ? "powf($0, (float)$1)" : "powf($0, $1)")
                      : "pow((double)$0, (double)$1)";
        break;
    }
    case IR_OP_MOD:
        if (fl) e = dbl ? "fmod($0, $1)" : "fmodf($0, $1)";
        else if (ir_attr_i(n, IR_ATTR_MOD_FMOD)) e = "($1 == 0 ? 0 : $0 % $1)";
        else if (c == EC_UINT) e = "($1 == 0 ? 0 : $0 % $1)";
        else /* the sign of the divisor, as Python's % */
            e = "($1 == 0 ? 0 : (($0 % $1) != 0 && (($0 % $1) < 0) != ($1 < 0) ? ($0 % $1) + $1 : $0 % $1))";
        break;
    case IR_OP_EQUAL: e = "$0 == $1"; break;
    case IR_OP_GREATER: e = "$0 > $1"; break;
    case IR_OP_GREATER_OR_EQUAL: e = "$0 >= $1"; break;
    case IR_OP_LESS: e = "$0 < $1"; break;
    case IR_OP_LESS_OR_EQUAL: e = "$0 <= $1"; break;
    case IR_OP_AND: e = "$0 && $1"; break;
    case IR_OP_OR: e = "$0 || $1"; break;
    case IR_OP_XOR: e = "(!$0) != (!$1)"; break;
    case IR_OP_BITWISE_AND: e = "$0 & $1"; break;
    case IR_OP_BITWISE_OR: e = "$0 | $1"; break;
    case IR_OP_BITWISE_XOR: e = "$0 ^ $1"; break;
    case IR_OP_BIT_SHIFT: {
        bool left = strcmp(ir_attr_s(n, IR_ATTR_BIT_SHIFT_DIRECTION), "LEFT") == 0;
        unsigned bits = ir_dtype_bits(t);
        e = cgen_fmt(cx, "($1 >= %u ? 0 : $0 %s $1)", bits, left ? "<<" : ">>");
        break;
    }
    case IR_OP_PRELU: e = "($0 < 0 ? $0 * $1 : $0)"; break;
    default: return cgen_unsupported(cx, n, "this op in the elementwise emitter");
    }
    *expr = e;
    return true;
}

static bool map_binary(CgenCtx *cx, const IrNode *n, CgenMap *m) {
    const char *e;
    uint32_t ins[2] = {n->inputs[0], n->inputs[1]};
    return binary_expr(cx, n, &e) && build_map(cx, n, n->outputs[0], ins, 2, e, m);
}

/* The map of each elementwise op (NULL: not one). */
typedef bool (*MapFn)(CgenCtx *cx, const IrNode *n, CgenMap *m);
static MapFn map_table[IR_OP_COUNT];

bool cgen_eltwise_expr(CgenCtx *cx, const IrNode *n, const char **expr) {
    if (map_table[n->op] == map_unary) return unary_expr(cx, n, expr);
    if (map_table[n->op] == map_binary) return binary_expr(cx, n, expr);
    return cgen_unsupported(cx, n, "this op in an elementwise expression");
}

static bool map_variadic(CgenCtx *cx, const IrNode *n, CgenMap *m) {
    IrDType t = (IrDType)cgen_type(cx, n->outputs[0])->dtype;
    EltClass c = elt_class(t);
    if (c == EC_NONE) return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    int k = (int)n->n_inputs;
    if (k > 10) return cgen_unsupported(cx, n, "more than 10 inputs");
    CWriter e;
    cw_init(&e);
    for (int i = 0; i < k; i++) {
        switch ((IrOp)n->op) {
        case IR_OP_SUM:
        case IR_OP_MEAN: cw_raw(&e, "%s$%d", i ? " + " : "", i); break;
        default: break;
        }
    }
    const char *expr;
    if (n->op == IR_OP_MEAN) {
        expr = cgen_fmt(cx, "(%s) / %s", e.buf, cgen_flit(cx, k, c == EC_F64));
    } else if (n->op == IR_OP_SUM) {
        expr = cgen_fmt(cx, "%s", e.buf);
    } else { /* Max/Min: fold pairwise; NaN propagates as in numpy */
        bool mx = n->op == IR_OP_MAX;
        const char *acc = "$0";
        for (int i = 1; i < k; i++) {
            if (is_float_class(c)) /* float for f32, f16 and bf16 (computed in float) */
                acc = cgen_fmt(cx, "rt_nan_%s%s(%s, $%d)", mx ? "max" : "min",
                               c == EC_F64 ? "" : "f", acc, i);
            else /* unsigned apart: uint64 does not fit int64 */
                acc = cgen_fmt(cx, "rt_%s_%s(%s, $%d)", mx ? "max" : "min",
                               c == EC_UINT ? "u" : "i", acc, i);
        }
        expr = acc;
        cgen_use_runtime(cx, "rt_eltwise.h");
    }
    cw_free(&e);
    return build_map(cx, n, n->outputs[0], n->inputs, k, expr, m);
}

static bool map_where(CgenCtx *cx, const IrNode *n, CgenMap *m) {
    return build_map(cx, n, n->outputs[0], n->inputs, 3, "($0 ? $1 : $2)", m);
}

static bool map_clip(CgenCtx *cx, const IrNode *n, CgenMap *m) {
    IrDType t = (IrDType)cgen_type(cx, n->inputs[0])->dtype;
    bool dbl = elt_class(t) == EC_F64;
    uint32_t ins[3];
    int k = 0;
    ins[k++] = n->inputs[0];
    const char *lo = NULL, *hi = NULL; /* NULL: no bound on that side */
    if (n->opset < 11) {
        lo = cgen_flit(cx, ir_attr_f(n, IR_ATTR_CLIP_MIN), dbl);
        hi = cgen_flit(cx, ir_attr_f(n, IR_ATTR_CLIP_MAX), dbl);
    } else {
        if (n->n_inputs > 1 && n->inputs[1] != IR_NONE) {
            ins[k] = n->inputs[1];
            lo = cgen_fmt(cx, "$%d", k++);
        }
        if (n->n_inputs > 2 && n->inputs[2] != IR_NONE) {
            ins[k] = n->inputs[2];
            hi = cgen_fmt(cx, "$%d", k++);
        }
    }
    /* max(x, lo) first, then min(., hi): with lo > hi every element becomes hi, as ONNX says */
    const char *e = "$0";
    if (lo) e = cgen_fmt(cx, "(%s < %s ? %s : %s)", e, lo, lo, e);
    if (hi) e = cgen_fmt(cx, "(%s > %s ? %s : %s)", e, hi, hi, e);
    return build_map(cx, n, n->outputs[0], ins, k, e, m);
}

bool cgen_eltwise_map(CgenCtx *cx, const IrNode *n, CgenMap *m) {
    IR_ASSERT(map_table[n->op]);
    return map_table[n->op](cx, n, m);
}

bool cgen_eltwise_op(IrOp op) {
    cgen_tables_init();
    return op != IR_OP_UNKNOWN && map_table[op] != NULL;
}

/* A float Add/Sub/Mul/Div whose loops merged into one or two, columns stepping by 0 or 1:
 * the operation of rt_binary_par_f32 (rt_eltwise.h), or -1. */
static int binary_par_op(CgenCtx *cx, const IrNode *n, const CgenMap *m) {
    static const IrOp ops[] = {IR_OP_ADD, IR_OP_SUB, IR_OP_MUL, IR_OP_DIV};
    int op = -1;
    for (int i = 0; i < 4; i++)
        if ((IrOp)n->op == ops[i]) op = i;
    if (op < 0 || m->n_in != 2 || m->L.rank < 1 || m->L.rank > 2) return -1;
    if (cgen_type(cx, m->out)->dtype != IR_DTYPE_F32) return -1;
    for (int k = 0; k < 2; k++) {
        if (cgen_type(cx, m->ins[k])->dtype != IR_DTYPE_F32) return -1;
        if (m->L.stride[k + 1][m->L.rank - 1] > 1) return -1;
    }
    return op;
}

/* Large float Add/Sub/Mul/Div maps go to the workers (rt_binary_par_f32): BERT's residual
 * Adds and EfficientNet's squeeze-excitation scale Muls, which ran serially inline. An
 * element counts as two multiply-adds against CGEN_PAR_MIN_MACS (32 Ki elements: ~8 us on
 * one core): its input was mostly written by the workers of the layer before, each its own
 * rows, and a map on the calling thread reads the other worker's half from that core's
 * cache (EfficientNet-B0's 7x7x1152 SE scales took 0.005 ms on one thread, 0.087 inline on
 * two when the two vCPUs sat on two L3s; split, each worker scales the rows it wrote).
 * Smaller ones stay inline loops. */
static bool emit_eltwise(CgenCtx *cx, const IrNode *n) {
    CgenMap m;
    if (!cgen_eltwise_map(cx, n, &m)) return false;
    int op = binary_par_op(cx, n, &m);
    const char *par = op < 0 ? "NULL" : cgen_par(cx, 2.0 * (double)cgen_numel(cx, m.out));
    if (strcmp(par, "NULL") == 0) return render_map(cx, &m);
    const CgenBcastLoop *L = &m.L;
    int64_t rows = L->rank == 2 ? L->dims[0] : 1, cols = L->dims[L->rank - 1];
    int64_t rs[2], cs[2];
    for (int k = 0; k < 2; k++) {
        rs[k] = L->rank == 2 ? L->stride[k + 1][0] : 0;
        cs[k] = L->stride[k + 1][L->rank - 1];
    }
    static const char *const names[] = {"RT_BIN_ADD", "RT_BIN_SUB", "RT_BIN_MUL", "RT_BIN_DIV"};
    cgen_use_runtime(cx, "rt_eltwise.h");
    cw_line(cx->w, "rt_binary_par_f32(%s, %s, %lld, %lld, %s, %lld, %lld, %s, %lld, %lld, %s);",
            names[op], cgen_ptr(cx, m.ins[0]), (long long)rs[0], (long long)cs[0],
            cgen_ptr(cx, m.ins[1]), (long long)rs[1], (long long)cs[1], cgen_ptr(cx, m.out),
            (long long)rows, (long long)cols, par);
    return true;
}

void cgen_register_eltwise(CgenEmitFn *table) {
    static const IrOp unary[] = {
        IR_OP_NEG, IR_OP_ABS, IR_OP_SIGN, IR_OP_NOT, IR_OP_BITWISE_NOT,
        IR_OP_IS_NAN, IR_OP_IS_INF, IR_OP_RELU, IR_OP_EXP, IR_OP_LOG, IR_OP_SQRT,
        IR_OP_RECIPROCAL, IR_OP_FLOOR, IR_OP_CEIL, IR_OP_ROUND, IR_OP_SIN, IR_OP_COS, IR_OP_TAN,
        IR_OP_ASIN, IR_OP_ACOS, IR_OP_ATAN, IR_OP_SINH, IR_OP_COSH, IR_OP_ASINH, IR_OP_ACOSH,
        IR_OP_ATANH, IR_OP_TANH, IR_OP_ERF, IR_OP_SIGMOID, IR_OP_LEAKY_RELU, IR_OP_ELU,
        IR_OP_CELU, IR_OP_SELU, IR_OP_HARD_SIGMOID, IR_OP_HARD_SWISH, IR_OP_SOFTPLUS,
        IR_OP_SOFTSIGN, IR_OP_MISH, IR_OP_THRESHOLDED_RELU, IR_OP_SWISH, IR_OP_GELU};
    static const IrOp binary[] = {
        IR_OP_ADD, IR_OP_SUB, IR_OP_MUL, IR_OP_DIV, IR_OP_POW, IR_OP_MOD, IR_OP_EQUAL,
        IR_OP_GREATER, IR_OP_GREATER_OR_EQUAL, IR_OP_LESS, IR_OP_LESS_OR_EQUAL, IR_OP_AND,
        IR_OP_OR, IR_OP_XOR, IR_OP_BITWISE_AND, IR_OP_BITWISE_OR, IR_OP_BITWISE_XOR,
        IR_OP_BIT_SHIFT, IR_OP_PRELU};
    for (size_t i = 0; i < sizeof unary / sizeof *unary; i++) map_table[unary[i]] = map_unary;
    for (size_t i = 0; i < sizeof binary / sizeof *binary; i++) map_table[binary[i]] = map_binary;
    map_table[IR_OP_SUM] = map_table[IR_OP_MEAN] = map_table[IR_OP_MAX] = map_table[IR_OP_MIN] =
        map_variadic;
    map_table[IR_OP_WHERE] = map_where;
    map_table[IR_OP_CLIP] = map_clip;
    for (int op = 0; op < IR_OP_COUNT; op++)
        if (map_table[op]) table[op] = emit_eltwise;
}
