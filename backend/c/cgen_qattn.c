/* C backend emitter of QAttention (passes/quantize.c): FusedAttention on uint8 Q, K, V. The
 * operands' shapes and strides as FusedAttention's (cgen_attn_operand), the zero points, the
 * scores' float multiplier s_q s_k scale and Y's requantization s_v / (255 s_y) as a
 * fixed-point multiplier (backend/qplan.h) baked into a static RtQAttn; one call into
 * runtime/rt_qattn.h, its scratch on the stack or, where the heads are shared among
 * workers, per worker in the arena. cgen_qattn_plan is shared with the CUDA emitter. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/c/cgen.h"
#include "backend/qplan.h"
#include "runtime/rt_qattn.h"

#define QA_STACK_MAX 65536 /* bytes of scratch on the stack */

bool cgen_qattn_plan(CgenCtx *cx, const IrNode *n, CgenQAttnPlan *pl) {
    const IrGraph *g = cx->b.g;
    uint32_t vals[4] = {n->inputs[0], n->inputs[1], n->inputs[2], n->outputs[0]};
    int64_t dims[4][4];
    RtQAttn *p = &pl->p;
    memset(pl, 0, sizeof *pl);
    for (int o = 0; o < 4; o++) {
        const IrType *t = cgen_type(cx, vals[o]);
        if (t->dtype != IR_DTYPE_U8 || !ir_type_is_static(t))
            return cgen_unsupported(cx, n, "operand %d: not a static uint8 tensor", o);
        if (!cgen_attn_operand(cx, n, o, dims[o], o == 0   ? p->q_st
                                                  : o == 1 ? p->k_st
                                                  : o == 2 ? p->v_st
                                                           : p->y_st,
                               &pl->off[o]))
            return cgen_unsupported(cx, n, "operand %d: a rank, perm or window the kernel "
                                           "cannot read", o);
    }
    p->b = dims[0][0], p->h = dims[0][1], p->sq = dims[0][2], p->d = dims[0][3];
    p->sk = dims[1][2], p->dv = dims[2][3];
    bool ok = dims[1][3] == p->d && dims[2][2] == p->sk && dims[3][2] == p->sq &&
              dims[3][3] == p->dv;
    for (int o = 1; o < 4; o++) ok &= dims[o][0] == p->b && dims[o][1] == p->h;
    if (!ok) return cgen_unsupported(cx, n, "Q, K, V and Y shapes that do not agree");
    if (p->sk < 1 || p->d < 1 || p->dv < 1 || p->d > 4096)
        return cgen_unsupported(cx, n, "%lld keys of %lld (1 to 4096 exact in int32)",
                                (long long)p->sk, (long long)p->d);
    const char *mask_kind = ir_attr_s(n, IR_ATTR_QATTENTION_MASK);
    pl->has_mask = strcmp(mask_kind, "add") == 0;
    if (!pl->has_mask && strcmp(mask_kind, "none") != 0)
        return cgen_unsupported(cx, n, "mask kind '%s'", mask_kind);
    if (pl->has_mask != (n->n_inputs > 3 && n->inputs[3] != IR_NONE))
        return cgen_unsupported(cx, n, "mask kind '%s' with%s a mask input", mask_kind,
                                pl->has_mask ? "out" : "");
    if (pl->has_mask) { /* right-aligned broadcast to (B, H, Sq, Sk) */
        const IrType *tm = cgen_type(cx, n->inputs[3]);
        int64_t want[4] = {p->b, p->h, p->sq, p->sk}, s = 1;
        if (tm->dtype != IR_DTYPE_F32 || tm->rank > 4)
            return cgen_unsupported(cx, n, "a mask of type %s", cgen_type_str(cx, tm));
        for (int i = tm->rank - 1; i >= 0; i--) {
            int a = 4 - tm->rank + i;
            if (tm->dims[i] != 1 && tm->dims[i] != want[a])
                return cgen_unsupported(cx, n, "a mask that does not broadcast to the scores");
            p->m_st[a] = tm->dims[i] == 1 ? 0 : s;
            s *= tm->dims[i];
        }
    }
    float sc[4];
    int32_t zp[4];
    for (int o = 0; o < 4; o++)
        if (!qplan_value(g, vals[o], &sc[o], &zp[o]))
            return cgen_unsupported(cx, n, "operand %d without quantization parameters", o);
    double scale = ir_attr_f(n, IR_ATTR_QATTENTION_SCALE);
    if (!isfinite(scale)) return cgen_unsupported(cx, n, "scale %g", scale);
    p->q_zp = zp[0], p->k_zp = zp[1], p->v_zp = zp[2], p->y_zp = zp[3];
    p->score_scale = (float)((double)sc[0] * (double)sc[1] * scale);
    qplan_multiplier((double)sc[2] / (255.0 * (double)sc[3]), 62, &p->y_mult, &p->y_shift);
    if (p->y_shift < 1) p->y_shift = 1, p->y_mult = 0;
    pl->scratch = RT_QA_SCRATCH(p->sk, p->d, p->dv);
    return true;
}

static const char *list4(CgenCtx *cx, const int64_t v[4]) {
    return cgen_fmt(cx, "{%lld, %lld, %lld, %lld}", (long long)v[0], (long long)v[1],
                    (long long)v[2], (long long)v[3]);
}

static bool emit_qattention(CgenCtx *cx, const IrNode *n) {
    CgenQAttnPlan pl;
    if (!cgen_qattn_plan(cx, n, &pl)) return false;
    const RtQAttn *p = &pl.p;
    const char *ptr[4]; /* Q, K, V: the window's first element; Y */
    for (int o = 0; o < 4; o++) {
        uint32_t v = o < 3 ? n->inputs[o] : n->outputs[0];
        ptr[o] = pl.off[o] ? cgen_fmt(cx, "(%s + %lld)", cgen_ptr(cx, v), (long long)pl.off[o])
                           : cgen_ptr(cx, v);
    }
    /* a head whose scratch would not fit the stack takes the arena's (the workers' path,
     * serial without a hook) however small its work */
    double macs = (double)p->b * (double)p->h * (double)p->sq * (double)p->sk * (double)(p->d + p->dv);
    const char *par = cgen_par(cx, pl.scratch > QA_STACK_MAX ? INFINITY : macs);
    if (strcmp(par, "NULL") == 0 && pl.scratch > QA_STACK_MAX)
        return cgen_unsupported(cx, n, "%lld bytes of scratch on the stack (at most %d)",
                                (long long)pl.scratch, QA_STACK_MAX);
    cgen_use_runtime(cx, "rt_qattn.h");
    CWriter *w = cx->w;
    cw_open(w, "%s", "");
    cw_line(w, "static const RtQAttn p = {%lld, %lld, %lld, %lld, %lld, %lld,", (long long)p->b,
            (long long)p->h, (long long)p->sq, (long long)p->sk, (long long)p->d, (long long)p->dv);
    cw_line(w, "    %s, %s, %s, %s, %s,", list4(cx, p->q_st), list4(cx, p->k_st),
            list4(cx, p->v_st), list4(cx, p->m_st), list4(cx, p->y_st));
    char lit[64]; /* the multiplier as a float literal that reads back the same bits */
    snprintf(lit, sizeof lit, "%.9g", (double)p->score_scale);
    if (!strpbrk(lit, ".en")) strcat(lit, ".0");
    cw_line(w, "    %d, %d, %d, %d, %sf, %ld, %d}; /* zero points, s_q s_k scale, "
               "s_v / (255 s_y) */",
            (int)p->q_zp, (int)p->k_zp, (int)p->v_zp, (int)p->y_zp, lit, (long)p->y_mult,
            p->y_shift);
    const char *m = pl.has_mask ? cgen_ptr(cx, n->inputs[3]) : "NULL";
    if (strcmp(par, "NULL") != 0) {
        cgen_par_scratch(cx, pl.scratch);
        cw_line(w, "rt_qattention_par(&p, %s, %s, %s, %s, %s, par);", ptr[0], ptr[1], ptr[2], m,
                ptr[3]);
    } else {
        cw_line(w, "unsigned char ws[%lld]; /* RT_QA_SCRATCH(%lld, %lld, %lld) */",
                (long long)pl.scratch, (long long)p->sk, (long long)p->d, (long long)p->dv);
        cw_line(w, "rt_qattention(&p, %s, %s, %s, %s, %s, ws);", ptr[0], ptr[1], ptr[2], m, ptr[3]);
    }
    cw_close(w, NULL);
    return true;
}

/* QMatMul: A (..,M,K), B (..,K,N) of batch dimensions Y's or all 1. */
bool cgen_qmatmul_plan(CgenCtx *cx, const IrNode *n, RtQMatMul *pp) {
    uint32_t vals[3] = {n->inputs[0], n->inputs[1], n->outputs[0]};
    float sc[3];
    int32_t zp[3];
    for (int o = 0; o < 3; o++) {
        const IrType *t = cgen_type(cx, vals[o]);
        if (t->dtype != IR_DTYPE_U8 || !ir_type_is_static(t) || t->rank < 2)
            return cgen_unsupported(cx, n, "operand %d: not a static uint8 matrix", o);
        if (!qplan_value(cx->b.g, vals[o], &sc[o], &zp[o]))
            return cgen_unsupported(cx, n, "operand %d without quantization parameters", o);
    }
    const IrType *ta = cgen_type(cx, vals[0]), *tb = cgen_type(cx, vals[1]), *ty = cgen_type(cx, vals[2]);
    RtQMatMul p;
    memset(&p, 0, sizeof p);
    p.m = ta->dims[ta->rank - 2], p.k = ta->dims[ta->rank - 1], p.n = tb->dims[tb->rank - 1];
    if (tb->dims[tb->rank - 2] != p.k || ty->dims[ty->rank - 2] != p.m || ty->dims[ty->rank - 1] != p.n ||
        p.m < 1 || p.n < 1 || p.k < 1 || p.k > 16384)
        return cgen_unsupported(cx, n, "shapes that are no product of (M,K) and (K,N), K <= 16384");
    p.batch = ir_type_numel(ty) / (p.m * p.n);
    int64_t ab = ir_type_numel(ta) / (p.m * p.k), bb = ir_type_numel(tb) / (p.k * p.n);
    if ((ab != 1 && ab != p.batch) || (bb != 1 && bb != p.batch))
        return cgen_unsupported(cx, n, "batch dimensions other than Y's or all 1");
    p.a_bst = ab == 1 ? 0 : p.m * p.k, p.b_bst = bb == 1 ? 0 : p.k * p.n;
    p.a_zp = zp[0], p.b_zp = zp[1], p.y_zp = zp[2];
    qplan_multiplier((double)sc[0] * (double)sc[1] / (double)sc[2], 62, &p.y_mult, &p.y_shift);
    if (p.y_shift < 1) p.y_shift = 1, p.y_mult = 0;
    *pp = p;
    return true;
}

static bool emit_qmatmul(CgenCtx *cx, const IrNode *n) {
    RtQMatMul p;
    if (!cgen_qmatmul_plan(cx, n, &p)) return false;
    if (2 * p.n * 4 > QA_STACK_MAX) return cgen_unsupported(cx, n, "%lld columns", (long long)p.n);
    cgen_use_runtime(cx, "rt_qattn.h");
    CWriter *w = cx->w;
    cw_open(w, "%s", "");
    cw_line(w, "static const RtQMatMul p = {%lld, %lld, %lld, %lld, %lld, %lld, %d, %d, %d, %ld, %d};",
            (long long)p.batch, (long long)p.m, (long long)p.k, (long long)p.n, (long long)p.a_bst,
            (long long)p.b_bst, (int)p.a_zp, (int)p.b_zp, (int)p.y_zp, (long)p.y_mult, p.y_shift);
    cw_line(w, "int32_t ws[%lld]; /* a row of sums, B's column sums */", (long long)(2 * p.n));
    cw_line(w, "rt_qmatmul(&p, %s, %s, %s, ws);", cgen_ptr(cx, n->inputs[0]),
            cgen_ptr(cx, n->inputs[1]), cgen_ptr(cx, n->outputs[0]));
    cw_close(w, NULL);
    return true;
}

void cgen_register_qattn(CgenEmitFn *table) {
    table[IR_OP_QATTENTION] = emit_qattention;
    table[IR_OP_QMATMUL] = emit_qmatmul;
}
