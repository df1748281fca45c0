/* C backend emitters of the quantized integer family: ConvInteger, QLinearConv and
 * QLinearMatMul (MatMulInteger lives in cgen_linalg.c). Nodes become calls into
 * runtime/rt_quant.h with the geometry baked in; scales and zero points may be run-time
 * inputs, so the requantization multipliers are computed in the generated code, in the
 * scales' own type, just before the kernel call. */
#include <string.h>

#include "backend/c/cgen.h"
#include "ir/geom.h"

#define Q_SPATIAL 3          /* = RT_QCONV_SPATIAL */
#define Q_MAX_CHANNELS 65536 /* per-channel multiplier arrays live on the stack of NAME_run */

static IrDType q_dtype(const CgenCtx *cx, uint32_t v) { return (IrDType)cgen_type(cx, v)->dtype; }

static bool q_is_8bit(IrDType t) { return t == IR_DTYPE_U8 || t == IR_DTYPE_I8; }

static const char *q_sfx(IrDType t) { return t == IR_DTYPE_U8 ? "u8" : "i8"; }

static bool q_static(CgenCtx *cx, const IrNode *n, uint32_t v) {
    if (!ir_type_is_static(cgen_type(cx, v)))
        return cgen_unsupported(cx, n, "a tensor of non-static shape");
    return true;
}

/* ---- convolution geometry ---------------------------------------------------------- */

typedef struct QGeom {
    int64_t n, c, m, group;
    int64_t in[Q_SPATIAL], out[Q_SPATIAL], k[Q_SPATIAL], s[Q_SPATIAL], d[Q_SPATIAL];
    int64_t pad[Q_SPATIAL];
} QGeom;

/* Geometry of a convolution x (N,C,spatial...) * w (M,C/group,kernel...) -> y, from
 * ir/geom.c, padded to Q_SPATIAL dims with leading 1s. */
static bool q_conv_geom(CgenCtx *cx, const IrNode *n, uint32_t x, uint32_t w, uint32_t y,
                        QGeom *g) {
    const IrType *tx = cgen_type(cx, x), *tw = cgen_type(cx, w), *ty = cgen_type(cx, y);
    int ns = tx->rank - 2;
    if (ns < 0 || ns > Q_SPATIAL || ty->rank != tx->rank || tw->rank != tx->rank)
        return cgen_unsupported(cx, n, "inputs of rank %d (spatial dims 0..%d are supported)",
                                tx->rank, Q_SPATIAL);
    IrConvAttrs a;
    IrConvGeom cg;
    const char *why;
    if (!ir_conv_attrs(n, ns, tw, &a, &why) ||
        !ir_conv_geom(&a, tx->dims + 2, ty->dims + 2, &cg, &why))
        return cgen_unsupported(cx, n, "%s", why);
    memset(g, 0, sizeof *g);
    g->n = tx->dims[0], g->c = tx->dims[1], g->m = ty->dims[1];
    g->group = cg.group;
    if (g->group < 1 || g->c % g->group != 0 || g->m % g->group != 0 || tw->dims[0] != g->m ||
        tw->dims[1] != g->c / g->group)
        return cgen_unsupported(cx, n, "channel counts that disagree with group %lld",
                                (long long)g->group);
    int lead = Q_SPATIAL - ns;
    for (int i = 0; i < Q_SPATIAL; i++)
        g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
    for (int i = 0; i < ns; i++) {
        int b = lead + i;
        if (cg.k[i] != tw->dims[i + 2])
            return cgen_unsupported(cx, n, "a kernel that disagrees with the weights");
        g->in[b] = cg.in[i], g->out[b] = cg.out[i];
        g->k[b] = cg.k[i], g->s[b] = cg.s[i], g->d[b] = cg.d[i];
        g->pad[b] = cg.pad[i];
    }
    return true;
}

static void q_emit_geom(CgenCtx *cx, const QGeom *g) {
    CWriter *w = cx->w;
    cw_open(w, "static const RtQConvGeom geom =");
    cw_line(w, ".n = %lld, .c = %lld, .m = %lld, .group = %lld,", (long long)g->n, (long long)g->c,
            (long long)g->m, (long long)g->group);
    cw_line(w, ".in = %s, .out = %s,", cgen_i64_list(cx, g->in, Q_SPATIAL),
            cgen_i64_list(cx, g->out, Q_SPATIAL));
    cw_line(w, ".k = %s, .s = %s,", cgen_i64_list(cx, g->k, Q_SPATIAL),
            cgen_i64_list(cx, g->s, Q_SPATIAL));
    cw_line(w, ".d = %s, .pad = %s", cgen_i64_list(cx, g->d, Q_SPATIAL),
            cgen_i64_list(cx, g->pad, Q_SPATIAL));
    cw_close(w, ";");
}

/* A zero point input of 1 or `per` elements (IR_NONE: absent); *step 0 for one value. */
static bool q_zero_point(CgenCtx *cx, const IrNode *n, uint32_t k, IrDType want, int64_t per,
                         const char **ptr, int64_t *step) {
    *ptr = NULL, *step = 0;
    if (!ir_has_input(n, k)) return true;
    uint32_t z = n->inputs[k];
    int64_t nz = cgen_numel(cx, z);
    if (q_dtype(cx, z) != want || (nz != 1 && nz != per))
        return cgen_unsupported(cx, n, "zero point input %u (%s, %lld elements)", k,
                                ir_dtype_name(q_dtype(cx, z)), (long long)nz);
    *ptr = cgen_ptr(cx, z);
    *step = nz == 1 ? 0 : 1;
    return true;
}

/* The requantization multipliers: mult[c] = a[0] * b[c * step] / y[0] in the scales' type,
 * for c < count. Declares `double mult[count]` in the current block. */
static bool q_emit_mult(CgenCtx *cx, const IrNode *n, uint32_t sa, uint32_t sb, uint32_t sy,
                        int64_t per, int64_t *count) {
    IrDType t = q_dtype(cx, sa);
    const char *fn = t == IR_DTYPE_F32    ? "rt_qscale_f32"
                     : t == IR_DTYPE_F16  ? "rt_qscale_f16"
                     : t == IR_DTYPE_BF16 ? "rt_qscale_bf16"
                                          : NULL;
    if (!fn || q_dtype(cx, sb) != t || q_dtype(cx, sy) != t)
        return cgen_unsupported(cx, n, "scales of type %s", ir_dtype_name(t));
    int64_t nb = cgen_numel(cx, sb);
    if (cgen_numel(cx, sa) != 1 || cgen_numel(cx, sy) != 1 || (nb != 1 && nb != per) ||
        per > Q_MAX_CHANNELS)
        return cgen_unsupported(cx, n,
                                "scales that are neither per tensor nor per output "
                                "channel");
    *count = nb;
    CWriter *w = cx->w;
    cw_line(w, "double mult[%lld];", (long long)nb);
    if (nb == 1) {
        cw_line(w, "mult[0] = %s(%s[0], %s[0], %s[0]);", fn, cgen_ptr(cx, sa), cgen_ptr(cx, sb),
                cgen_ptr(cx, sy));
    } else {
        cw_line(w, "int64_t c;");
        cw_line(w, "for (c = 0; c < %lld; c++)", (long long)nb);
        w->indent++;
        cw_line(w, "mult[c] = %s(%s[0], %s[c], %s[0]);", fn, cgen_ptr(cx, sa), cgen_ptr(cx, sb),
                cgen_ptr(cx, sy));
        w->indent--;
    }
    return true;
}

/* ---- ConvInteger, QLinearConv ------------------------------------------------------- */

static bool emit_qconv(CgenCtx *cx, const IrNode *n) {
    bool ql = n->op == IR_OP_QLINEAR_CONV;
    /* input positions: ConvInteger (x, w, x_zp, w_zp); QLinearConv (x, xs, xz, w, ws, wz,
     * ys, yz, B) */
    uint32_t x = n->inputs[0], w = n->inputs[ql ? 3 : 1], y = n->outputs[0];
    IrDType tx = q_dtype(cx, x), tw = q_dtype(cx, w), ty = q_dtype(cx, y);
    if (!q_is_8bit(tx) || !q_is_8bit(tw) || (ql ? !q_is_8bit(ty) : ty != IR_DTYPE_I32))
        return cgen_unsupported(cx, n, "element types %s x %s -> %s", ir_dtype_name(tx),
                                ir_dtype_name(tw), ir_dtype_name(ty));
    if (!q_static(cx, n, x) || !q_static(cx, n, w) || !q_static(cx, n, y)) return false;
    QGeom g;
    if (!q_conv_geom(cx, n, x, w, y, &g)) return false;
    const char *xz, *wz, *yz = NULL;
    int64_t xz_step, wz_step, yz_step;
    if (!q_zero_point(cx, n, ql ? 2 : 2, tx, 1, &xz, &xz_step) ||
        !q_zero_point(cx, n, ql ? 5 : 3, tw, g.m, &wz, &wz_step))
        return false;
    if (ql && !q_zero_point(cx, n, 7, ty, 1, &yz, &yz_step)) return false;
    const char *bias = "NULL";
    if (ql && ir_has_input(n, 8)) {
        uint32_t b = n->inputs[8];
        if (q_dtype(cx, b) != IR_DTYPE_I32 || cgen_numel(cx, b) != g.m)
            return cgen_unsupported(cx, n, "a bias that is not (M) int32");
        bias = cgen_ptr(cx, b);
    }
    if (cgen_numel(cx, y) == 0) return true;
    cgen_use_runtime(cx, "rt_quant.h");
    CWriter *wr = cx->w;
    cw_line(wr, "{");
    wr->indent++;
    q_emit_geom(cx, &g);
    int64_t n_mult = 0;
    if (ql && !q_emit_mult(cx, n, n->inputs[1], n->inputs[4], n->inputs[6], g.m, &n_mult))
        return false;
    cw_line(wr, "rt_qconv_%s%s_%s(%s, %s, %s, %s, %lld, %s, %s, %lld, %s, %s, &geom);", q_sfx(tx),
            q_sfx(tw), ql ? q_sfx(ty) : "i32", cgen_ptr(cx, x),
            xz ? cgen_fmt(cx, "(int32_t)%s[0]", xz) : "0", cgen_ptr(cx, w),
            wz ? wz : cgen_fmt(cx, "(const %s *)NULL", bundle_ctype(tw)), (long long)wz_step, bias,
            ql ? "mult" : "(const double *)NULL", (long long)(n_mult > 1),
            yz ? cgen_fmt(cx, "(int32_t)%s[0]", yz) : "0", cgen_ptr(cx, y));
    wr->indent--;
    cw_line(wr, "}");
    return true;
}

/* ---- QLinearMatMul ------------------------------------------------------------------ */

static bool emit_qlinear_matmul(CgenCtx *cx, const IrNode *n) {
    /* inputs: a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp */
    uint32_t a = n->inputs[0], b = n->inputs[3], y = n->outputs[0];
    IrDType ta = q_dtype(cx, a), tb = q_dtype(cx, b), ty = q_dtype(cx, y);
    if (!q_is_8bit(ta) || !q_is_8bit(tb) || !q_is_8bit(ty))
        return cgen_unsupported(cx, n, "element types %s x %s -> %s", ir_dtype_name(ta),
                                ir_dtype_name(tb), ir_dtype_name(ty));
    if (!q_static(cx, n, a) || !q_static(cx, n, b) || !q_static(cx, n, y)) return false;
    const IrType *sa = cgen_type(cx, a), *sb = cgen_type(cx, b), *sy = cgen_type(cx, y);
    if (sa->rank < 2 || sb->rank < 2 || sy->rank < 2)
        return cgen_unsupported(cx, n, "operands of rank below 2");
    int64_t M = sa->dims[sa->rank - 2], K = sa->dims[sa->rank - 1];
    int64_t N = sb->dims[sb->rank - 1];
    if (sb->dims[sb->rank - 2] != K || sy->dims[sy->rank - 2] != M || sy->dims[sy->rank - 1] != N)
        return cgen_unsupported(cx, n, "operand shapes that do not multiply");
    int64_t batch = cgen_numel(cx, y) / (M * N > 0 ? M * N : 1);
    int64_t ba = cgen_numel(cx, a) / (M * K > 0 ? M * K : 1);
    int64_t bb = cgen_numel(cx, b) / (K * N > 0 ? K * N : 1);
    if ((ba != batch && ba != 1) || (bb != batch && bb != 1))
        return cgen_unsupported(cx, n, "batch dimensions that broadcast partially");
    const char *az, *bz, *yz;
    int64_t az_step, bz_step, yz_step;
    if (!q_zero_point(cx, n, 2, ta, 1, &az, &az_step) ||
        !q_zero_point(cx, n, 5, tb, N, &bz, &bz_step) ||
        !q_zero_point(cx, n, 7, ty, 1, &yz, &yz_step))
        return false;
    if (cgen_numel(cx, y) == 0) return true;
    cgen_use_runtime(cx, "rt_quant.h");
    CWriter *w = cx->w;
    cw_line(w, "{");
    w->indent++;
    int64_t n_mult;
    if (!q_emit_mult(cx, n, n->inputs[1], n->inputs[4], n->inputs[6], N, &n_mult)) return false;
    const char *call_fmt = "rt_qmatmul_%s%s_%s(%lld, %lld, %lld, %s%s, %s, %s%s, %s, %lld, mult, "
                           "%lld, %s, %s%s);";
    const char *azs = az ? cgen_fmt(cx, "(int32_t)%s[0]", az) : "0";
    const char *bzs = bz ? bz : cgen_fmt(cx, "(const %s *)NULL", bundle_ctype(tb));
    const char *yzs = yz ? cgen_fmt(cx, "(int32_t)%s[0]", yz) : "0";
    if (batch > 1) {
        cw_line(w, "int64_t bt;");
        cw_line(w, "for (bt = 0; bt < %lld; bt++)", (long long)batch);
        w->indent++;
    }
    cw_line(w, call_fmt, q_sfx(ta), q_sfx(tb), q_sfx(ty), (long long)M, (long long)N, (long long)K,
            cgen_ptr(cx, a),
            batch > 1 && ba > 1 ? cgen_fmt(cx, " + bt * %lld", (long long)(M * K)) : "", azs,
            cgen_ptr(cx, b),
            batch > 1 && bb > 1 ? cgen_fmt(cx, " + bt * %lld", (long long)(K * N)) : "", bzs,
            (long long)bz_step, (long long)(n_mult > 1), yzs, cgen_ptr(cx, y),
            batch > 1 ? cgen_fmt(cx, " + bt * %lld", (long long)(M * N)) : "");
    if (batch > 1) w->indent--;
    w->indent--;
    cw_line(w, "}");
    return true;
}

void cgen_register_quant(CgenEmitFn *table) {
    table[IR_OP_CONV_INTEGER] = emit_qconv;
    table[IR_OP_QLINEAR_CONV] = emit_qconv;
    table[IR_OP_QLINEAR_MAT_MUL] = emit_qlinear_matmul;
}
