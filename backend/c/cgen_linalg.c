/* C backend emitters of the linalg and reduction family: MatMul, Gemm, MatMulInteger,
 * FusedMatMul and FusedGemm (the products with an activation epilogue, runtime/rt_act.h),
 * Einsum (an inline loop nest built from the equation), Softmax/LogSoftmax/Hardmax, the
 * Reduce* ops, ArgMax/ArgMin, CumSum/CumProd and TopK. Most nodes become calls into
 * runtime/rt_matmul.h, rt_softmax.h, rt_reduce.h, rt_scan.h and rt_topk.h with the shapes
 * baked in; axes, k or axis read from a non-constant input are checked at run time against
 * the compiled shapes. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/c/cgen.h"
#include "backend/plan.h"
#include "passes/passes.h"
#include "runtime/rt_pgemm.h" /* rt_pgemm_apk_bytes: the scratch of copied rows */

/* ---- helpers ---------------------------------------------------------------------- */

static bool is_float(IrDType t) {
    return t == IR_DTYPE_F32 || t == IR_DTYPE_F64 || t == IR_DTYPE_F16 || t == IR_DTYPE_BF16;
}

static IrDType dtype_of(const CgenCtx *cx, uint32_t v) { return (IrDType)cgen_type(cx, v)->dtype; }

/* Reads a constant integer tensor (i32 or i64) into out[max]; false if not constant/too big. */
static bool const_ints(const CgenCtx *cx, uint32_t v, int64_t *out, uint32_t max, uint32_t *n) {
    const IrTensor *t = cgen_const(cx, v);
    if (!t || (t->dtype != IR_DTYPE_I64 && t->dtype != IR_DTYPE_I32) || t->n_elems > max)
        return false;
    for (int64_t i = 0; i < t->n_elems; i++) {
        if (t->dtype == IR_DTYPE_I64) memcpy(&out[i], (const char *)t->data + 8 * i, 8);
        else {
            int32_t x;
            memcpy(&x, (const char *)t->data + 4 * i, 4);
            out[i] = x;
        }
    }
    *n = (uint32_t)t->n_elems;
    return true;
}

static bool static_type(CgenCtx *cx, const IrNode *n, uint32_t v) {
    const IrType *t = cgen_type(cx, v);
    if (!ir_type_is_static(t)) return cgen_unsupported(cx, n, "a tensor of non-static shape");
    return true;
}

/* (outer, n, inner) of t split at axis. */
static void split_at(const IrType *t, int axis, int64_t *outer, int64_t *n, int64_t *inner) {
    *outer = *inner = 1;
    *n = t->rank > 0 ? t->dims[axis] : 1;
    for (int d = 0; d < t->rank; d++) {
        if (d < axis) *outer *= t->dims[d];
        else if (d > axis) *inner *= t->dims[d];
    }
}

/* Normalises axis into [0, rank); false (after a diagnostic) when out of range. */
static bool norm_axis(CgenCtx *cx, const IrNode *n, int64_t axis, int rank, int *out) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= (rank > 0 ? rank : 1))
        return cgen_unsupported(cx, n, "axis %lld for a rank-%d input (out of range)",
                                (long long)axis, rank);
    *out = (int)a;
    return true;
}

/* ---- batched matrix products --------------------------------------------------------- */

/* Opens the batch loops; *oa, *ob, *oy receive the element offsets of the current batch. */
static void mm_open(CgenCtx *cx, const PlanGemm *s, const char **oa, const char **ob,
                    const char **oy) {
    CWriter *w = cx->w;
    const char *ea = "", *eb = "", *ey = "";
    if (s->nb > 0) {
        cw_indent(w);
        cw_raw(w, "size_t ");
        for (int d = 0; d < s->nb; d++) cw_raw(w, "%sb%d", d ? ", " : "", d);
        cw_raw(w, ";\n");
    }
    for (int d = 0; d < s->nb; d++) {
        cw_line(w, "for (b%d = 0; b%d < %lld; b%d++)", d, d, (long long)s->bdim[d], d);
        w->indent++;
        if (s->sa[d]) ea = cgen_fmt(cx, "%s + b%d * %lld", ea, d, (long long)s->sa[d]);
        if (s->sb[d]) eb = cgen_fmt(cx, "%s + b%d * %lld", eb, d, (long long)s->sb[d]);
        ey = cgen_fmt(cx, "%s + b%d * %lld", ey, d, (long long)s->sy[d]);
    }
    *oa = ea, *ob = eb, *oy = ey;
}

static void mm_close(CgenCtx *cx, const PlanGemm *s) { cx->w->indent -= s->nb; }

static bool mm_dtype_ok(IrDType t) {
    return is_float(t) || t == IR_DTYPE_I32 || t == IR_DTYPE_I64 || t == IR_DTYPE_U32 ||
           t == IR_DTYPE_U64;
}

/* The epilogue of a FusedGemm/FusedMatMul as an RtAct initializer, or NULL (after a
 * diagnostic). Fused products exist for float and double only. */
static const char *mm_act_init(CgenCtx *cx, const IrNode *n, IrDType t, const PlanGemm *p) {
    const char *kind = pass_act_c_name(p->activation);
    if (!kind) {
        cgen_unsupported(cx, n, "activation '%s'", p->activation);
        return NULL;
    }
    if (t != IR_DTYPE_F32 && t != IR_DTYPE_F64) {
        cgen_unsupported(cx, n, "a fused element type %s", ir_dtype_name(t));
        return NULL;
    }
    return cgen_fmt(cx, "{%s, %s, %s}", kind, cgen_flit(cx, p->act_alpha, false),
                    cgen_flit(cx, p->act_beta, false));
}

/* The plan of product node n (backend/plan.c); false after a diagnostic. */
static bool mm_plan(CgenCtx *cx, const IrNode *n, PlanGemm *p) {
    uint32_t a = n->inputs[0], b = n->inputs[1], y = n->outputs[0];
    const char *why;
    if (!static_type(cx, n, a) || !static_type(cx, n, b) || !static_type(cx, n, y)) return false;
    if (ir_has_input(n, 2) && !static_type(cx, n, n->inputs[2])) return false;
    if (!plan_gemm(n, cgen_type(cx, a), cgen_type(cx, b),
                   ir_has_input(n, 2) ? cgen_type(cx, n->inputs[2]) : NULL, cgen_type(cx, y), p,
                   &why))
        return cgen_unsupported(cx, n, "%s", why);
    return true;
}

/* A scale of RtGemmSFX (its SC type: float for the float kernels, double otherwise). */
static const char *gemm_scale(CgenCtx *cx, IrDType t, double v) {
    bool fl = t == IR_DTYPE_F32 || t == IR_DTYPE_F16 || t == IR_DTYPE_BF16;
    return cgen_flit(cx, v, !fl);
}

/* A product whose constant B backend/plan.c packed (rank 6, plan.h): the rows of A times
 * the panels on the packed GEMM of runtime/rt_pgemm.h, run as a 1x1 convolution over M
 * "pixels" of K channels, with the bias (N) and the activation in its epilogue. */
static bool emit_packed_product(CgenCtx *cx, const IrNode *n) {
    uint32_t a = n->inputs[0], b = n->inputs[1], y = n->outputs[0];
    const IrType *tb = cgen_type(cx, b), *ty = cgen_type(cx, y);
    bool fg = n->op == IR_OP_FUSED_GEMM, gemm = fg || n->op == IR_OP_GEMM;
    bool fused = fg || n->op == IR_OP_FUSED_MAT_MUL, has_c = ir_has_input(n, 2);
    if (!static_type(cx, n, a) || !static_type(cx, n, y)) return false;
    int64_t K = tb->dims[4], N = ty->rank > 0 ? ty->dims[ty->rank - 1] : 1;
    bool tr = gemm && ir_attr_i(n, fg ? IR_ATTR_FUSED_GEMM_TRANS_B : IR_ATTR_GEMM_TRANS_B) != 0;
    int64_t bd[2] = {tr ? N : K, tr ? K : N}; /* B as the model gave it */
    IrType vb = ir_type_tensor(IR_DTYPE_F32, 2, bd);
    PlanGemm p;
    const char *why, *act = NULL;
    if (!plan_gemm(n, cgen_type(cx, a), &vb, has_c ? cgen_type(cx, n->inputs[2]) : NULL, ty, &p,
                   &why))
        return cgen_unsupported(cx, n, "%s", why);
    if (fused && !(act = mm_act_init(cx, n, IR_DTYPE_F32, &p))) return false;
    if (cgen_numel(cx, y) == 0) return true;
    cgen_use_runtime(cx, "rt_act.h");
    cgen_use_runtime(cx, "rt_conv.h");
    cgen_use_runtime(cx, "rt_pgemm.h");
    CWriter *w = cx->w;
    cw_open(w, "%s", "");
    cw_open(w, "static const RtConvGeom geom =");
    cw_line(w, ".n = 1, .c = %lld, .m = %lld, .group = 1,", (long long)p.K, (long long)p.N);
    cw_line(w, ".in = {1, 1, %lld}, .out = {1, 1, %lld},", (long long)p.M, (long long)p.M);
    cw_line(w, ".k = {1, 1, 1}, .s = {1, 1, 1},");
    cw_line(w, ".d = {1, 1, 1}, .pad = {0, 0, 0}");
    cw_close(w, ";");
    if (fused) cw_line(w, "static const RtAct act = %s;", act);
    const char *par = cgen_par(cx, (double)p.M * (double)p.N * (double)p.K);
    bool split = strcmp(par, "NULL") != 0;
    /* rows 4 KiB apart (K a multiple of 1024: BERT's 3072 -> 768) are copied to the
     * workers' scratch, a pixel block at a time (rt_pgemm_apk_bytes) */
    if (split) cgen_par_scratch(cx, rt_pgemm_apk_bytes(p.M, p.K, 1));
    cw_line(w, "rt_pconv_nhwc%s_f32(%s, %s, %s, NULL, %s, &geom, %s%s%s);", split ? "_par" : "",
            cgen_ptr(cx, a), cgen_ptr(cx, b), p.has_c ? cgen_ptr(cx, n->inputs[2]) : "NULL",
            cgen_ptr(cx, y), fused ? "&act" : "NULL", split ? ", " : "", split ? par : "");
    cw_close(w, NULL);
    return true;
}

/* MatMul, and FusedMatMul: act(A @ B + bias), bias (N) broadcast over rows. */
static bool emit_matmul(CgenCtx *cx, const IrNode *n) {
    uint32_t a = n->inputs[0], b = n->inputs[1], y = n->outputs[0];
    if (cgen_type(cx, b)->rank == PLAN_PGEMM_RANK) return emit_packed_product(cx, n);
    IrDType t = dtype_of(cx, a);
    bool fused = n->op == IR_OP_FUSED_MAT_MUL;
    if (!mm_dtype_ok(t)) return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    PlanGemm s;
    if (!mm_plan(cx, n, &s)) return false;
    const char *act = NULL;
    if (fused && !(act = mm_act_init(cx, n, t, &s))) return false;
    bool has_bias = fused && ir_has_input(n, 2);
    if (has_bias && dtype_of(cx, n->inputs[2]) != t)
        return cgen_unsupported(cx, n, "a bias that is not (N) of the operands' type");
    if (cgen_numel(cx, y) == 0) return true;
    cgen_use_runtime(cx, "rt_act.h");
    cgen_use_runtime(cx, "rt_matmul.h");
    CWriter *w = cx->w;
    const char *ct = bundle_ctype(t), *oa, *ob, *oy;
    cw_open(w, "%s", "");
    if (fused) cw_line(w, "static const RtAct act = %s;", act);
    cw_line(w, "const %s *A = %s;", ct, cgen_ptr(cx, a));
    cw_line(w, "const %s *B = %s;", ct, cgen_ptr(cx, b));
    cw_line(w, "%s *Y = %s;", ct, cgen_ptr(cx, y));
    mm_open(cx, &s, &oa, &ob, &oy);
    /* A: (M,K) row-major; B: (K,N) row-major (a 1-D B is (K,1)) */
    const char *sfx = cgen_sfx(t), *one = gemm_scale(cx, t, 1.0);
    const char *par = cgen_par(cx, (double)s.M * (double)s.N * (double)s.K);
    bool split = strcmp(par, "NULL") != 0;
    cw_line(w, "rt_gemm%s_%s(&(const RtGemm%s){.m = %lld, .n = %lld, .k = %lld, .alpha = %s,",
            split ? "_par" : "", sfx, sfx, (long long)s.M, (long long)s.N, (long long)s.K, one);
    cw_line(w, "    .a = A%s, .a_rs = %lld, .a_cs = 1, .b = B%s, .b_rs = %lld, .b_cs = 1,", oa,
            (long long)s.K, ob, (long long)s.N);
    if (has_bias) /* the bias: (N), broadcast over rows */
        cw_line(w, "    .beta = %s, .c = %s, .c_rs = 0, .c_cs = 1,", one, cgen_ptr(cx, n->inputs[2]));
    cw_line(w, "    .y = Y%s%s}%s);", oy, fused ? ", .act = &act" : "", split ? ", par" : "");
    mm_close(cx, &s);
    cw_close(w, NULL);
    return true;
}

/* Gemm, and FusedGemm: act(alpha * A' @ B' + beta * C). */
static bool emit_gemm(CgenCtx *cx, const IrNode *n) {
    uint32_t a = n->inputs[0], b = n->inputs[1], y = n->outputs[0];
    if (cgen_type(cx, b)->rank == PLAN_PGEMM_RANK) return emit_packed_product(cx, n);
    IrDType t = dtype_of(cx, a);
    bool fused = n->op == IR_OP_FUSED_GEMM;
    if (!mm_dtype_ok(t)) return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    PlanGemm p;
    if (!mm_plan(cx, n, &p)) return false;
    const char *act = NULL;
    if (fused && !(act = mm_act_init(cx, n, t, &p))) return false;
    if (cgen_numel(cx, y) == 0) return true;
    cgen_use_runtime(cx, "rt_act.h");
    cgen_use_runtime(cx, "rt_matmul.h");
    if (fused) {
        cw_open(cx->w, "%s", "");
        cw_line(cx->w, "static const RtAct act = %s;", act);
    }
    const char *sfx = cgen_sfx(t);
    const char *par = cgen_par(cx, (double)p.M * (double)p.N * (double)p.K);
    bool split = strcmp(par, "NULL") != 0;
    cw_line(cx->w, "rt_gemm%s_%s(&(const RtGemm%s){.m = %lld, .n = %lld, .k = %lld, .alpha = %s,",
            split ? "_par" : "", sfx, sfx, (long long)p.M, (long long)p.N, (long long)p.K,
            gemm_scale(cx, t, p.alpha));
    cw_line(cx->w, "    .a = %s, .a_rs = %lld, .a_cs = %lld, .b = %s, .b_rs = %lld, .b_cs = %lld,",
            cgen_ptr(cx, a), (long long)p.a_rs, (long long)p.a_cs, cgen_ptr(cx, b),
            (long long)p.b_rs, (long long)p.b_cs);
    if (p.has_c)
        cw_line(cx->w, "    .beta = %s, .c = %s, .c_rs = %lld, .c_cs = %lld,",
                gemm_scale(cx, t, p.beta), cgen_ptr(cx, n->inputs[2]), (long long)p.c_rs,
                (long long)p.c_cs);
    cw_line(cx->w, "    .y = %s%s}%s);", cgen_ptr(cx, y), fused ? ", .act = &act" : "",
            split ? ", par" : "");
    if (fused) cw_close(cx->w, NULL);
    return true;
}

/* MatMulInteger: int8/uint8 operands, optional zero points (scalar, per row of A, per
 * column of B), int32 result; batched like MatMul. */
static bool emit_matmul_integer(CgenCtx *cx, const IrNode *n) {
    uint32_t a = n->inputs[0], b = n->inputs[1], y = n->outputs[0];
    IrDType t_a = dtype_of(cx, a), t_b = dtype_of(cx, b);
    bool ok_a = t_a == IR_DTYPE_U8 || t_a == IR_DTYPE_I8, ok_b = t_b == IR_DTYPE_U8 || t_b == IR_DTYPE_I8;
    if (!ok_a || !ok_b)
        return cgen_unsupported(cx, n, "element types %s x %s", ir_dtype_name(t_a),
                                ir_dtype_name(t_b));
    if (!static_type(cx, n, a) || !static_type(cx, n, b) || !static_type(cx, n, y)) return false;
    PlanGemm s; /* batched as MatMul; inputs 2 and 3 are zero points, not a C */
    const char *why;
    if (!plan_gemm(n, cgen_type(cx, a), cgen_type(cx, b), NULL, cgen_type(cx, y), &s, &why))
        return cgen_unsupported(cx, n, "%s", why);
    const IrType *ta = cgen_type(cx, a), *tb = cgen_type(cx, b);
    int64_t rows = ta->rank == 1 ? 1 : ta->dims[ta->rank - 2];
    const char *zp[2] = {NULL, NULL};
    int64_t zstep[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        if (!ir_has_input(n, 2 + (uint32_t)k)) continue;
        uint32_t z = n->inputs[2 + k];
        int64_t nz = cgen_numel(cx, z), want = k == 0 ? rows : (tb->rank == 1 ? 1 : s.N);
        if (nz != 1 && nz != want)
            return cgen_unsupported(cx, n, "a zero point of %lld elements", (long long)nz);
        if (nz != 1 && k == 0 && s.M != rows)
            return cgen_unsupported(cx, n, "per-row zero points with batched A");
        zp[k] = cgen_ptr(cx, z);
        zstep[k] = nz == 1 ? 0 : 1;
    }
    if (cgen_numel(cx, y) == 0) return true;
    cgen_use_runtime(cx, "rt_act.h");
    cgen_use_runtime(cx, "rt_matmul.h");
    CWriter *w = cx->w;
    const char *ca = bundle_ctype(t_a), *cb = bundle_ctype(t_b), *oa, *ob, *oy;
    cw_open(w, "%s", "");
    cw_line(w, "const %s *A = %s;", ca, cgen_ptr(cx, a));
    cw_line(w, "const %s *B = %s;", cb, cgen_ptr(cx, b));
    cw_line(w, "int32_t *Y = %s;", cgen_ptr(cx, y));
    mm_open(cx, &s, &oa, &ob, &oy);
    cw_line(w, "rt_matmul_integer_%s%s(%lld, %lld, %lld, A%s, %s, %lld, B%s, %s, %lld, Y%s);",
            cgen_sfx(t_a), cgen_sfx(t_b), (long long)s.M, (long long)s.N, (long long)s.K, oa,
            zp[0] ? zp[0] : cgen_fmt(cx, "(const %s *)NULL", ca), (long long)zstep[0], ob,
            zp[1] ? zp[1] : cgen_fmt(cx, "(const %s *)NULL", cb), (long long)zstep[1], oy);
    mm_close(cx, &s);
    cw_close(w, NULL);
    return true;
}

/* ---- softmax family ---------------------------------------------------------------- */

static bool emit_softmax(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    IrDType t = dtype_of(cx, x);
    if (!is_float(t)) return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    if (!static_type(cx, n, x)) return false;
    const char *mode = n->op == IR_OP_SOFTMAX       ? "RT_SOFTMAX"
                       : n->op == IR_OP_LOG_SOFTMAX ? "RT_LOG_SOFTMAX"
                                                    : "RT_HARDMAX";
    PlanRows r;
    const char *why;
    if (!plan_softmax_rows(n, cgen_type(cx, x), &r, &why)) return cgen_unsupported(cx, n, "%s", why);
    if (cgen_numel(cx, x) == 0) return true;
    cgen_use_runtime(cx, "rt_softmax.h");
    cw_line(cx->w, "rt_softmax_%s(%s, %s, %lld, %lld, %lld, %s);", cgen_sfx(t), cgen_ptr(cx, x),
            cgen_ptr(cx, y), (long long)r.outer, (long long)r.len, (long long)r.inner, mode);
    return true;
}

/* ---- reductions -------------------------------------------------------------------- */

typedef struct ReduceInfo {
    IrOp op;
    const char *kernel;
    bool int_ok; /* has integer kernels */
    IrAttrId axes, keepdims, noop;
    int axes_input_since; /* first opset taking axes as an input */
} ReduceInfo;

#define RI(OP, K, INT, SINCE)                                                                \
    {IR_OP_##OP, K, INT, IR_ATTR_##OP##_AXES, IR_ATTR_##OP##_KEEPDIMS,                        \
     IR_ATTR_##OP##_NOOP_WITH_EMPTY_AXES, SINCE}
static const ReduceInfo reduce_info[] = {
    RI(REDUCE_SUM, "sum", true, 13),          RI(REDUCE_MEAN, "mean", true, 18),
    RI(REDUCE_MAX, "max", true, 18),          RI(REDUCE_MIN, "min", true, 18),
    RI(REDUCE_PROD, "prod", true, 18),        RI(REDUCE_L1, "l1", true, 18),
    RI(REDUCE_L2, "l2", false, 18),           RI(REDUCE_LOG_SUM, "log_sum", false, 18),
    RI(REDUCE_LOG_SUM_EXP, "log_sum_exp", false, 18),
    RI(REDUCE_SUM_SQUARE, "sum_square", true, 18),
};
#undef RI

static bool emit_reduce(CgenCtx *cx, const IrNode *n) {
    const ReduceInfo *ri = NULL;
    for (size_t i = 0; i < sizeof reduce_info / sizeof *reduce_info; i++)
        if (reduce_info[i].op == n->op) ri = &reduce_info[i];
    IR_ASSERT(ri);
    uint32_t x = n->inputs[0], y = n->outputs[0];
    IrDType t = dtype_of(cx, x);
    bool minmax = n->op == IR_OP_REDUCE_MAX || n->op == IR_OP_REDUCE_MIN;
    bool ok = is_float(t) || t == IR_DTYPE_I32 || t == IR_DTYPE_I64 || t == IR_DTYPE_U32 ||
              t == IR_DTYPE_U64 || t == IR_DTYPE_I8 || t == IR_DTYPE_U8 ||
              (t == IR_DTYPE_BOOL && minmax);
    if (!ok || (!is_float(t) && !ri->int_ok))
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    if (!static_type(cx, n, x) || !static_type(cx, n, y)) return false;
    const IrType *tx = cgen_type(cx, x), *ty = cgen_type(cx, y);
    int64_t axes[IR_MAX_RANK];
    uint32_t n_axes = 0;
    const char *axes_expr = NULL; /* run-time axes */
    if (n->opset < ri->axes_input_since) {
        const int64_t *av = ir_attr_ints(n, ri->axes, &n_axes);
        if (n_axes > IR_MAX_RANK) return cgen_unsupported(cx, n, "more axes than dimensions");
        if (av) memcpy(axes, av, n_axes * sizeof *axes);
    } else if (ir_has_input(n, 1)) {
        uint32_t av = n->inputs[1];
        if (!const_ints(cx, av, axes, IR_MAX_RANK, &n_axes)) {
            if (dtype_of(cx, av) != IR_DTYPE_I64 || !static_type(cx, n, av) ||
                cgen_numel(cx, av) > IR_MAX_RANK)
                return cgen_unsupported(cx, n, "this axes input");
            n_axes = (uint32_t)cgen_numel(cx, av);
            axes_expr = n_axes ? cgen_ptr(cx, av) : NULL;
        }
    }
    for (uint32_t i = 0; i < n_axes && !axes_expr; i++)
        if (axes[i] < -tx->rank || axes[i] >= (tx->rank ? tx->rank : 1))
            return cgen_unsupported(cx, n, "axis %lld (out of range)", (long long)axes[i]);
    bool keepdims = ir_attr_i(n, ri->keepdims) != 0;
    bool noop = ir_attr_i(n, ri->noop) != 0;
    cgen_use_runtime(cx, "rt_reduce.h");
    CWriter *w = cx->w;
    cw_open(w, "%s", "");
    cw_line(w, "static const int64_t in_dims[] = %s;", cgen_dims(cx, tx));
    cw_line(w, "static const int64_t out_dims[] = %s;", cgen_dims(cx, ty));
    if (n_axes && !axes_expr)
        cw_line(w, "static const int64_t axes[] = %s;", cgen_i64_list(cx, axes, n_axes));
    cw_line(w, "RtReducePlan plan;");
    cgen_call_checked(cx, "rt_reduce_plan(&plan, %d, in_dims, %s, %u, %d, %d, %d, out_dims)",
                      tx->rank, axes_expr ? axes_expr : n_axes ? "axes" : "NULL", n_axes,
                      noop, keepdims, ty->rank);
    cw_line(w, "rt_reduce_%s_%s(&plan, %s, %s);", ri->kernel, cgen_sfx(t), cgen_ptr(cx, x),
            cgen_ptr(cx, y));
    cw_close(w, NULL);
    return true;
}

static bool emit_arg(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    IrDType t = dtype_of(cx, x);
    bool is_min = n->op == IR_OP_ARG_MIN;
    if (!cgen_sfx(t) || t == IR_DTYPE_BOOL)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    if (!static_type(cx, n, x)) return false;
    int64_t axis = ir_attr_i(n, is_min ? IR_ATTR_ARG_MIN_AXIS : IR_ATTR_ARG_MAX_AXIS);
    int last = (int)ir_attr_i(n, is_min ? IR_ATTR_ARG_MIN_SELECT_LAST_INDEX
                                        : IR_ATTR_ARG_MAX_SELECT_LAST_INDEX);
    const IrType *tx = cgen_type(cx, x);
    int ax = 0;
    if (tx->rank > 0 && !norm_axis(cx, n, axis, tx->rank, &ax)) return false;
    int64_t outer, len, inner;
    split_at(tx, ax, &outer, &len, &inner);
    if (cgen_numel(cx, y) == 0) return true;
    cgen_use_runtime(cx, "rt_reduce.h");
    cw_line(cx->w, "rt_arg_%s(%s, %s, %lld, %lld, %lld, %d, %d);", cgen_sfx(t), cgen_ptr(cx, x),
            cgen_ptr(cx, y), (long long)outer, (long long)len, (long long)inner, is_min,
            last != 0);
    return true;
}

/* ---- scans and selection ------------------------------------------------------------ */

static bool emit_cum(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0], av = n->inputs[1];
    IrDType t = dtype_of(cx, x);
    bool prod = n->op == IR_OP_CUM_PROD;
    bool ok = is_float(t) || t == IR_DTYPE_I32 || t == IR_DTYPE_I64 || t == IR_DTYPE_U32 ||
              t == IR_DTYPE_U64;
    if (!ok) return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    if (!static_type(cx, n, x)) return false;
    int excl = (int)ir_attr_i(n, prod ? IR_ATTR_CUM_PROD_EXCLUSIVE : IR_ATTR_CUM_SUM_EXCLUSIVE);
    int rev = (int)ir_attr_i(n, prod ? IR_ATTR_CUM_PROD_REVERSE : IR_ATTR_CUM_SUM_REVERSE);
    const IrType *tx = cgen_type(cx, x);
    const char *kern = cgen_fmt(cx, "rt_%s_%s", prod ? "cumprod" : "cumsum", cgen_sfx(t));
    if (tx->rank == 0) return cgen_unsupported(cx, n, "a rank-0 input");
    if (cgen_numel(cx, x) == 0) return true;
    cgen_use_runtime(cx, "rt_scan.h");
    int64_t axis;
    uint32_t na;
    if (const_ints(cx, av, &axis, 1, &na) && na == 1) {
        int ax = 0;
        if (!norm_axis(cx, n, axis, tx->rank, &ax)) return false;
        int64_t outer, len, inner;
        split_at(tx, ax, &outer, &len, &inner);
        cw_line(cx->w, "%s(%s, %s, %lld, %lld, %lld, %d, %d);", kern, cgen_ptr(cx, x),
                cgen_ptr(cx, y), (long long)outer, (long long)len, (long long)inner, excl != 0,
                rev != 0);
        return true;
    }
    IrDType at = dtype_of(cx, av);
    if ((at != IR_DTYPE_I32 && at != IR_DTYPE_I64) || cgen_numel(cx, av) != 1)
        return cgen_unsupported(cx, n, "this axis input");
    CWriter *w = cx->w;
    cw_open(w, "%s", "");
    cw_line(w, "static const int64_t dims[] = %s;", cgen_dims(cx, tx));
    cw_line(w, "int64_t outer, len, inner;");
    cgen_call_checked(cx, "rt_scan_split(%d, dims, (int64_t)%s[0], &outer, &len, &inner)",
                      tx->rank, cgen_ptr(cx, av));
    cw_line(w, "%s(%s, %s, outer, len, inner, %d, %d);", kern, cgen_ptr(cx, x), cgen_ptr(cx, y),
            excl != 0, rev != 0);
    cw_close(w, NULL);
    return true;
}

static bool emit_topk(CgenCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], yv = n->outputs[0], yi = n->outputs[1];
    IrDType t = dtype_of(cx, x);
    if (!cgen_sfx(t) || t == IR_DTYPE_BOOL)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    if (!static_type(cx, n, x) || !static_type(cx, n, yv)) return false;
    const IrType *tx = cgen_type(cx, x), *ty = cgen_type(cx, yv);
    int ax = 0;
    if (tx->rank == 0) return cgen_unsupported(cx, n, "a rank-0 input");
    if (!norm_axis(cx, n, ir_attr_i(n, IR_ATTR_TOP_K_AXIS), tx->rank, &ax)) return false;
    int64_t outer, len, inner, k = ty->rank == tx->rank ? ty->dims[ax] : -1;
    split_at(tx, ax, &outer, &len, &inner);
    if (k < 0 || k > len) return cgen_unsupported(cx, n, "an output shape that does not fit k");
    int largest = n->opset < 11 ? 1 : (int)ir_attr_i(n, IR_ATTR_TOP_K_LARGEST);
    const char *kexpr = NULL;
    if (n->opset >= 10) {
        int64_t kc;
        uint32_t nk;
        if (!ir_has_input(n, 1)) return cgen_unsupported(cx, n, "a missing k input");
        if (const_ints(cx, n->inputs[1], &kc, 1, &nk) && nk == 1) {
            if (kc != k) return cgen_unsupported(cx, n, "k %lld with an output of %lld",
                                                 (long long)kc, (long long)k);
        } else {
            IrDType kt = dtype_of(cx, n->inputs[1]);
            if ((kt != IR_DTYPE_I64 && kt != IR_DTYPE_I32) || cgen_numel(cx, n->inputs[1]) != 1)
                return cgen_unsupported(cx, n, "this k input");
            kexpr = cgen_ptr(cx, n->inputs[1]);
        }
    }
    cgen_use_runtime(cx, "rt_topk.h");
    if (kexpr) cgen_call_checked(cx, "rt_topk_check_k((int64_t)%s[0], %lld)", kexpr, (long long)k);
    if (k == 0 || outer * inner == 0) return true;
    cw_line(cx->w, "rt_topk_%s(%s, %s, %s, %lld, %lld, %lld, %lld, %d);", cgen_sfx(t),
            cgen_ptr(cx, x), cgen_ptr(cx, yv), cgen_ptr(cx, yi), (long long)outer,
            (long long)len, (long long)inner, (long long)k, largest != 0);
    return true;
}

/* ---- losses ------------------------------------------------------------------------ */

static bool emit_loss(CgenCtx *cx, const IrNode *n) {
    bool sce = n->op == IR_OP_SOFTMAX_CROSS_ENTROPY_LOSS;
    uint32_t x = n->inputs[0], tg = n->inputs[1], y = n->outputs[0];
    IrDType t = dtype_of(cx, x), tt = dtype_of(cx, tg);
    if (!is_float(t)) return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    if (tt != IR_DTYPE_I32 && tt != IR_DTYPE_I64)
        return cgen_unsupported(cx, n, "target type %s", ir_dtype_name(tt));
    if (!static_type(cx, n, x) || !static_type(cx, n, tg) || !static_type(cx, n, y)) return false;
    const IrType *tx = cgen_type(cx, x);
    if (tx->rank < 2) return cgen_unsupported(cx, n, "an input of rank < 2");
    int64_t N = tx->dims[0], C = tx->dims[1], D = 1;
    for (int d = 2; d < tx->rank; d++) D *= tx->dims[d];
    if (cgen_numel(cx, tg) != N * D) return cgen_unsupported(cx, n, "a target shape");
    IrAttrId red_id = sce ? IR_ATTR_SOFTMAX_CROSS_ENTROPY_LOSS_REDUCTION
                          : IR_ATTR_NEGATIVE_LOG_LIKELIHOOD_LOSS_REDUCTION;
    IrAttrId ii_id = sce ? IR_ATTR_SOFTMAX_CROSS_ENTROPY_LOSS_IGNORE_INDEX
                         : IR_ATTR_NEGATIVE_LOG_LIKELIHOOD_LOSS_IGNORE_INDEX;
    const char *red = ir_attr_s(n, red_id);
    const char *mode = strcmp(red, "none") == 0  ? "RT_LOSS_NONE"
                       : strcmp(red, "sum") == 0  ? "RT_LOSS_SUM"
                       : strcmp(red, "mean") == 0 ? "RT_LOSS_MEAN"
                                                  : NULL;
    if (!mode) return cgen_unsupported(cx, n, "reduction '%s'", red);
    bool has_ii = ir_attr_present(n, ii_id);
    bool has_w = ir_has_input(n, 2), has_lp = sce && n->n_outputs > 1 && n->outputs[1] != IR_NONE;
    const char *ct = bundle_ctype(t);
    cgen_use_runtime(cx, "rt_loss.h");
    cgen_call_checked(cx, "rt_loss_%s_%s(%s, %s, %s, %s, %s, %lld, %lld, %lld, %lld, %d, %s, %d)",
                      cgen_sfx(t), tt == IR_DTYPE_I32 ? "int32" : "int64", cgen_ptr(cx, x),
                      cgen_ptr(cx, tg), has_w ? cgen_ptr(cx, n->inputs[2]) : cgen_fmt(cx, "(const %s *)NULL", ct),
                      cgen_ptr(cx, y), has_lp ? cgen_ptr(cx, n->outputs[1]) : cgen_fmt(cx, "(%s *)NULL", ct),
                      (long long)N, (long long)C, (long long)D,
                      (long long)(has_ii ? ir_attr_i(n, ii_id) : 0), has_ii, mode, sce);
    return true;
}

/* ---- Attention ----------------------------------------------------------------------- */

static bool emit_attention(CgenCtx *cx, const IrNode *n) {
    uint32_t q = n->inputs[0], k = n->inputs[1], v = n->inputs[2], y = n->outputs[0];
    IrDType t = dtype_of(cx, q);
    if (!is_float(t)) return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    for (uint32_t i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] != IR_NONE && !static_type(cx, n, n->inputs[i])) return false;
    if (!static_type(cx, n, y)) return false;
    const IrType *tq = cgen_type(cx, q), *tk = cgen_type(cx, k), *tv = cgen_type(cx, v);
    int r = tq->rank;
    if ((r != 3 && r != 4) || tk->rank != r || tv->rank != r)
        return cgen_unsupported(cx, n, "inputs of rank %d", r);
    int64_t B = tq->dims[0], qH, kvH, qs, kvs, hd, khd, vhd;
    int64_t qst[3], kst[3], vst[3], yst[3];
    if (r == 3) {
        if (!ir_attr_present(n, IR_ATTR_ATTENTION_Q_NUM_HEADS) ||
            !ir_attr_present(n, IR_ATTR_ATTENTION_KV_NUM_HEADS))
            return cgen_unsupported(cx, n, "3-D inputs without q_num_heads and kv_num_heads");
        qH = ir_attr_i(n, IR_ATTR_ATTENTION_Q_NUM_HEADS);
        kvH = ir_attr_i(n, IR_ATTR_ATTENTION_KV_NUM_HEADS);
        if (qH <= 0 || kvH <= 0 || tq->dims[2] % qH || tk->dims[2] % kvH || tv->dims[2] % kvH)
            return cgen_unsupported(cx, n, "hidden sizes that do not split into the heads");
        qs = tq->dims[1], kvs = tk->dims[1];
        hd = tq->dims[2] / qH, khd = tk->dims[2] / kvH, vhd = tv->dims[2] / kvH;
        qst[0] = qs * tq->dims[2], qst[1] = hd, qst[2] = tq->dims[2];
        kst[0] = kvs * tk->dims[2], kst[1] = khd, kst[2] = tk->dims[2];
        vst[0] = kvs * tv->dims[2], vst[1] = vhd, vst[2] = tv->dims[2];
        yst[0] = qs * qH * vhd, yst[1] = vhd, yst[2] = qH * vhd;
    } else {
        qH = tq->dims[1], kvH = tk->dims[1], qs = tq->dims[2], kvs = tk->dims[2];
        hd = tq->dims[3], khd = tk->dims[3], vhd = tv->dims[3];
        qst[0] = qH * qs * hd, qst[1] = qs * hd, qst[2] = hd;
        kst[0] = kvH * kvs * khd, kst[1] = kvs * khd, kst[2] = khd;
        vst[0] = kvH * kvs * vhd, vst[1] = kvs * vhd, vst[2] = vhd;
        yst[0] = qH * qs * vhd, yst[1] = qs * vhd, yst[2] = vhd;
    }
    if (khd != hd || kvH <= 0 || qH % kvH || tk->dims[0] != B || tv->dims[0] != B)
        return cgen_unsupported(cx, n, "these Q/K/V head shapes");
    if (vhd > 1024) return cgen_unsupported(cx, n, "a V head size above 1024");
    int64_t past = 0;
    bool has_pk = ir_has_input(n, 4), has_pv = ir_has_input(n, 5);
    if (has_pk != has_pv) return cgen_unsupported(cx, n, "past_key without past_value");
    if (has_pk) {
        const IrType *tp = cgen_type(cx, n->inputs[4]), *tpv = cgen_type(cx, n->inputs[5]);
        if (tp->rank != 4 || tp->dims[1] != kvH || tp->dims[3] != hd || tpv->rank != 4 ||
            tpv->dims[2] != tp->dims[2] || tpv->dims[3] != vhd)
            return cgen_unsupported(cx, n, "past key/value shapes");
        past = tp->dims[2];
    }
    int64_t total = past + kvs, mst[4] = {0, 0, 0, 0}, mlen = 0;
    int mask_kind = 0;
    if (ir_has_input(n, 3)) {
        const IrType *tm = cgen_type(cx, n->inputs[3]);
        const int64_t full[4] = {B, qH, qs, total};
        mask_kind = tm->dtype == IR_DTYPE_BOOL ? 2 : 1;
        if (mask_kind == 1 && tm->dtype != t) return cgen_unsupported(cx, n, "this mask type");
        if (tm->rank < 1 || tm->rank > 4) return cgen_unsupported(cx, n, "a mask of rank %d", tm->rank);
        int64_t st = 1;
        for (int d = 3; d >= 4 - tm->rank; d--) {
            int64_t md = tm->dims[d - (4 - tm->rank)];
            if (d == 3) mlen = md;
            else if (md != 1 && md != full[d])
                return cgen_unsupported(cx, n, "a mask that does not broadcast");
            mst[d] = d == 3 ? 1 : md == 1 ? 0 : st;
            st *= md;
        }
    }
    double scale = ir_attr_present(n, IR_ATTR_ATTENTION_SCALE)
                       ? ir_attr_f(n, IR_ATTR_ATTENTION_SCALE) : 1.0 / sqrt((double)hd);
    int64_t qk_mode = ir_attr_i(n, IR_ATTR_ATTENTION_QK_MATMUL_OUTPUT_MODE);
    uint32_t outs[4] = {y, IR_NONE, IR_NONE, IR_NONE};
    for (uint32_t i = 1; i < n->n_outputs && i < 4; i++) outs[i] = n->outputs[i];
    const char *ct = bundle_ctype(t);
    cgen_use_runtime(cx, "rt_attention.h");
    CWriter *w = cx->w;
    cw_open(w, "%s", "");
    cw_line(w, "static const RtAttn p = {%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld,",
            (long long)B, (long long)qH, (long long)kvH, (long long)qs, (long long)kvs,
            (long long)past, (long long)hd, (long long)vhd);
    w->indent++;
    cw_line(w, "%s, %s, %s, %s,", cgen_i64_list(cx, qst, 3), cgen_i64_list(cx, kst, 3),
            cgen_i64_list(cx, vst, 3), cgen_i64_list(cx, yst, 3));
    cw_line(w, "%s, %lld, %d, %d, %s, %s, %d};", cgen_i64_list(cx, mst, 4), (long long)mlen,
            mask_kind, ir_attr_i(n, IR_ATTR_ATTENTION_IS_CAUSAL) != 0,
            cgen_flit(cx, (float)scale, false),
            cgen_flit(cx, ir_attr_f(n, IR_ATTR_ATTENTION_SOFTCAP), false), (int)qk_mode);
    w->indent--;
#define OPT_IN(i) (ir_has_input(n, i) ? cgen_ptr(cx, n->inputs[i]) : cgen_fmt(cx, "(const %s *)NULL", ct))
#define OPT_OUT(i) (outs[i] != IR_NONE ? cgen_ptr(cx, outs[i]) : cgen_fmt(cx, "(%s *)NULL", ct))
    cw_line(w, "rt_attention_%s(&p, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);", cgen_sfx(t),
            cgen_ptr(cx, q), cgen_ptr(cx, k), cgen_ptr(cx, v), OPT_IN(4), OPT_IN(5),
            mask_kind == 1 ? cgen_ptr(cx, n->inputs[3]) : cgen_fmt(cx, "(const %s *)NULL", ct),
            mask_kind == 2 ? cgen_ptr(cx, n->inputs[3]) : "(const uint8_t *)NULL",
            ir_has_input(n, 6) ? cgen_ptr(cx, n->inputs[6]) : "(const int64_t *)NULL",
            cgen_ptr(cx, y), OPT_OUT(1), OPT_OUT(2), OPT_OUT(3));
#undef OPT_IN
#undef OPT_OUT
    cw_close(w, NULL);
    return true;
}

/* ---- Einsum ------------------------------------------------------------------------ */

#define EIN_LABELS 52  /* a-z, A-Z */
#define EIN_MAX_IDS (EIN_LABELS + IR_MAX_RANK) /* plus the dims an ellipsis stands for */
#define EIN_MAX_IN 8   /* operands of one Einsum */

static int ein_label(char c) {
    if (c >= 'a' && c <= 'z') return c - 'a';
    if (c >= 'A' && c <= 'Z') return 26 + c - 'A';
    return -1;
}

/* Parses one term ("b...ij") for an operand of rank `rank` (-1: the output, whose ellipsis
 * has ell_rank dims) into ids; false on a malformed term. */
static bool ein_term(const char *s, size_t len, int rank, int ell_rank, int *ids, int *n_ids,
                     int *n_ell) {
    int explicit_n = 0;
    bool ell = false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') continue;
        if (s[i] == '.') {
            if (ell || i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.') return false;
            ell = true;
            i += 2;
            continue;
        }
        if (ein_label(s[i]) < 0) return false;
        explicit_n++;
    }
    int e = rank < 0 ? (ell ? ell_rank : 0) : rank - explicit_n;
    if (e < 0 || (!ell && e != 0) || e > IR_MAX_RANK) return false;
    *n_ell = e;
    *n_ids = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') continue;
        if (s[i] == '.') {
            for (int k = 0; k < e; k++) ids[(*n_ids)++] = EIN_LABELS + (IR_MAX_RANK - e) + k;
            i += 2;
            continue;
        }
        ids[(*n_ids)++] = ein_label(s[i]);
    }
    return true;
}

static const char *ein_var(CgenCtx *cx, int id) {
    if (id < 26) return cgen_fmt(cx, "i_%c", 'a' + id);
    if (id < EIN_LABELS) return cgen_fmt(cx, "i_%c", 'A' + id - 26);
    return cgen_fmt(cx, "e%d", id - EIN_LABELS);
}

static bool emit_einsum(CgenCtx *cx, const IrNode *n) {
    const char *eq = ir_attr_s(n, IR_ATTR_EINSUM_EQUATION);
    uint32_t y = n->outputs[0];
    IrDType t = dtype_of(cx, y);
    if (!cgen_sfx(t) || t == IR_DTYPE_BOOL)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    if (n->n_inputs > EIN_MAX_IN) return cgen_unsupported(cx, n, "more than %d operands", EIN_MAX_IN);
    for (uint32_t k = 0; k < n->n_inputs; k++)
        if (!static_type(cx, n, n->inputs[k])) return false;
    if (!static_type(cx, n, y)) return false;
    const char *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
    int ids[EIN_MAX_IN][IR_MAX_RANK], n_ids[EIN_MAX_IN], ell_rank = 0;
    int64_t size[EIN_MAX_IDS];
    int count[EIN_MAX_IDS] = {0};
    for (int i = 0; i < EIN_MAX_IDS; i++) size[i] = -1;
    const char *p = eq;
    for (uint32_t k = 0; k < n->n_inputs; k++) {
        const char *end = memchr(p, ',', (size_t)(eq + lhs_len - p));
        if (!end) end = eq + lhs_len;
        if (k + 1 < n->n_inputs && end == eq + lhs_len)
            return cgen_unsupported(cx, n, "equation '%s' (too few terms)", eq);
        const IrType *tk = cgen_type(cx, n->inputs[k]);
        int ne;
        if (!ein_term(p, (size_t)(end - p), tk->rank, 0, ids[k], &n_ids[k], &ne))
            return cgen_unsupported(cx, n, "equation '%s'", eq);
        if (ne > ell_rank) ell_rank = ne;
        for (int d = 0; d < n_ids[k]; d++) {
            int id = ids[k][d];
            int64_t dim = tk->dims[d];
            if (size[id] < 0 || size[id] == 1) size[id] = dim;
            else if (dim != 1 && dim != size[id])
                return cgen_unsupported(cx, n, "equation '%s' with mismatched dims", eq);
            count[id]++;
        }
        p = end + 1;
    }
    int out_ids[EIN_MAX_IDS], n_out = 0;
    if (arrow) {
        int ne;
        if (!ein_term(arrow + 2, strlen(arrow + 2), -1, ell_rank, out_ids, &n_out, &ne))
            return cgen_unsupported(cx, n, "equation '%s'", eq);
    } else { /* implicit: the ellipsis, then labels used once, alphabetically */
        for (int k = 0; k < ell_rank; k++) out_ids[n_out++] = EIN_LABELS + IR_MAX_RANK - ell_rank + k;
        for (int id = 0; id < EIN_LABELS; id++)
            if (count[id] == 1) out_ids[n_out++] = id;
    }
    const IrType *ty = cgen_type(cx, y);
    if (n_out != ty->rank) return cgen_unsupported(cx, n, "equation '%s' for this output", eq);
    bool in_out[EIN_MAX_IDS] = {false};
    for (int d = 0; d < n_out; d++) {
        if (size[out_ids[d]] < 0) return cgen_unsupported(cx, n, "equation '%s'", eq);
        if (size[out_ids[d]] != ty->dims[d])
            return cgen_unsupported(cx, n, "equation '%s' for this output shape", eq);
        in_out[out_ids[d]] = true;
    }
    int sum_ids[EIN_MAX_IDS], n_sum = 0;
    for (int id = 0; id < EIN_MAX_IDS; id++)
        if (size[id] >= 0 && !in_out[id]) sum_ids[n_sum++] = id;
    if (cgen_numel(cx, y) == 0) return true;
    /* element strides of every operand per id (repeated labels add up: diagonals) */
    int64_t stride[EIN_MAX_IN + 1][EIN_MAX_IDS];
    memset(stride, 0, sizeof stride);
    for (uint32_t k = 0; k <= n->n_inputs; k++) {
        const IrType *tk = k < n->n_inputs ? cgen_type(cx, n->inputs[k]) : ty;
        const int *kid = k < n->n_inputs ? ids[k] : out_ids;
        int64_t s = 1;
        for (int d = tk->rank - 1; d >= 0; d--) {
            if (tk->dims[d] != 1) stride[k][kid[d]] += s;
            s *= tk->dims[d];
        }
    }
    bool fl = is_float(t);
    const char *acc_t = t == IR_DTYPE_F64 ? "double" : fl ? "float" : bundle_ctype(t);
    CWriter *w = cx->w;
    cw_open(w, "%s", "");
    for (uint32_t k = 0; k < n->n_inputs; k++)
        cw_line(w, "const %s *x%u = %s;", bundle_ctype(t), k, cgen_ptr(cx, n->inputs[k]));
    cw_line(w, "%s *y = %s;", bundle_ctype(t), cgen_ptr(cx, y));
    if (n_out + n_sum > 0) {
        cw_indent(w);
        cw_raw(w, "size_t ");
        for (int d = 0; d < n_out + n_sum; d++)
            cw_raw(w, "%s%s", d ? ", " : "", ein_var(cx, d < n_out ? out_ids[d] : sum_ids[d - n_out]));
        cw_raw(w, ";\n");
    }
    for (int d = 0; d < n_out; d++) {
        const char *v = ein_var(cx, out_ids[d]);
        cw_line(w, "for (%s = 0; %s < %lld; %s++)", v, v, (long long)size[out_ids[d]], v);
        w->indent++;
    }
    cw_open(w, "%s", "");
    cw_line(w, "%s acc = 0;", acc_t);
    for (int d = 0; d < n_sum; d++) {
        const char *v = ein_var(cx, sum_ids[d]);
        cw_line(w, "for (%s = 0; %s < %lld; %s++)", v, v, (long long)size[sum_ids[d]], v);
        w->indent++;
    }
    CWriter e;
    cw_init(&e);
    for (uint32_t k = 0; k <= n->n_inputs; k++) {
        CWriter ix;
        cw_init(&ix);
        for (int id = 0; id < EIN_MAX_IDS; id++) {
            if (!stride[k][id]) continue;
            if (ix.len) cw_raw(&ix, " + ");
            if (stride[k][id] == 1) cw_raw(&ix, "%s", ein_var(cx, id));
            else cw_raw(&ix, "%s * %lld", ein_var(cx, id), (long long)stride[k][id]);
        }
        const char *idx = ix.len ? ix.buf : "0";
        if (k == n->n_inputs) {
            const char *val = t == IR_DTYPE_F16    ? "rt_f32_to_f16(acc)"
                              : t == IR_DTYPE_BF16 ? "rt_f32_to_bf16(acc)"
                                                   : "acc";
            w->indent -= n_sum;
            cw_line(w, "y[%s] = %s;", idx, val);
        } else {
            const char *ld = t == IR_DTYPE_F16    ? cgen_fmt(cx, "rt_f16_to_f32(x%u[%s])", k, idx)
                             : t == IR_DTYPE_BF16 ? cgen_fmt(cx, "rt_bf16_to_f32(x%u[%s])", k, idx)
                                                  : cgen_fmt(cx, "x%u[%s]", k, idx);
            cw_raw(&e, "%s%s", k ? " * " : "", ld);
            if (k + 1 == n->n_inputs) cw_line(w, "acc += %s;", e.buf);
        }
        cw_free(&ix);
    }
    cw_free(&e);
    cw_close(w, NULL);
    w->indent -= n_out;
    cw_close(w, NULL);
    return true;
}

void cgen_register_linalg(CgenEmitFn *table) {
    table[IR_OP_MAT_MUL] = emit_matmul;
    table[IR_OP_GEMM] = emit_gemm;
    table[IR_OP_FUSED_MAT_MUL] = emit_matmul;
    table[IR_OP_FUSED_GEMM] = emit_gemm;
    table[IR_OP_MAT_MUL_INTEGER] = emit_matmul_integer;
    table[IR_OP_SOFTMAX] = table[IR_OP_LOG_SOFTMAX] = table[IR_OP_HARDMAX] = emit_softmax;
    for (size_t i = 0; i < sizeof reduce_info / sizeof *reduce_info; i++)
        table[reduce_info[i].op] = emit_reduce;
    table[IR_OP_ARG_MAX] = table[IR_OP_ARG_MIN] = emit_arg;
    table[IR_OP_CUM_SUM] = table[IR_OP_CUM_PROD] = emit_cum;
    table[IR_OP_TOP_K] = emit_topk;
    table[IR_OP_EINSUM] = emit_einsum;
    table[IR_OP_ATTENTION] = emit_attention;
    table[IR_OP_NEGATIVE_LOG_LIKELIHOOD_LOSS] = emit_loss;
    table[IR_OP_SOFTMAX_CROSS_ENTROPY_LOSS] = emit_loss;
}
