/* C backend emitter of FusedAttention (passes/fuse_attention.c): the logical operands' shapes
 * and element strides (through the absorbed transposes' perms and packed windows) baked into
 * a static RtFusedAttn, the kernel's scratch (float: K^T and a tile's scores; double: a row
 * of Sk scores) on the stack or, where the node shares its work, per worker in the arena,
 * one call into runtime/rt_fusedattn.h. float and double. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/c/cgen.h"
#include "runtime/rt_fusedattn.h"

#define FA_RANK 4           /* the kernel's (B, H, rows, cols) */
#define FA_MAX_ROW 16384    /* scratch elements on the stack: 64 KiB of float */

/* Logical shape, element strides (padded in front to FA_RANK) and element offset of
 * FusedAttention node n's operand k (0 Q, 1 K, 2 V, 3 Y): the value as stored, or (q_window,
 * k_window, v_window) the window of a packed tensor P's last axis that fuse-attention found:
 * the stored operand's dims, whose leading ones regroup P's rows (stride: P's last dim)
 * and the others split the window's columns; then read through the operand's perm (logical
 * dimension i is stored dimension perm[i]). False when perm is no permutation or the window
 * does not fit. Shared with the CUDA emitter and QAttention's (cgen_qattn.c). */
bool cgen_attn_operand(CgenCtx *cx, const IrNode *n, int k, int64_t dims[FA_RANK],
                       int64_t st[FA_RANK], int64_t *offset) {
    static const IrAttrId perm_ids[2][4] = { /* FusedAttention, QAttention */
        {IR_ATTR_FUSED_ATTENTION_Q_PERM, IR_ATTR_FUSED_ATTENTION_K_PERM,
         IR_ATTR_FUSED_ATTENTION_V_PERM, IR_ATTR_FUSED_ATTENTION_Y_PERM},
        {IR_ATTR_QATTENTION_Q_PERM, IR_ATTR_QATTENTION_K_PERM, IR_ATTR_QATTENTION_V_PERM,
         IR_ATTR_QATTENTION_Y_PERM}};
    static const IrAttrId win_ids[2][3] = {
        {IR_ATTR_FUSED_ATTENTION_Q_WINDOW, IR_ATTR_FUSED_ATTENTION_K_WINDOW,
         IR_ATTR_FUSED_ATTENTION_V_WINDOW},
        {IR_ATTR_QATTENTION_Q_WINDOW, IR_ATTR_QATTENTION_K_WINDOW, IR_ATTR_QATTENTION_V_WINDOW}};
    int qa = n->op == IR_OP_QATTENTION;
    const IrType *t = cgen_type(cx, k < 3 ? n->inputs[k] : n->outputs[0]);
    uint32_t nw = 0;
    const int64_t *win = k < 3 ? ir_attr_ints(n, win_ids[qa][k], &nw) : NULL;
    int64_t sd[FA_RANK], stride[FA_RANK];
    int r = win ? (int)nw - 1 : t->rank;
    if (r < 1 || r > FA_RANK || t->rank < 1) return false;
    *offset = 0;
    if (win) {
        int64_t N = t->dims[t->rank - 1], M = 1, lead = 1, w = 1, s;
        for (int i = 0; i + 1 < t->rank; i++) M *= t->dims[i];
        int c = 0;
        for (int i = 0; i < r; i++) {
            sd[i] = win[1 + i];
            if (sd[i] < 1) return false;
        }
        while (lead != M && c < r) lead *= sd[c++];
        for (int i = c; i < r; i++) w *= sd[i];
        if (lead != M || win[0] < 0 || w < 1 || win[0] + w > N) return false;
        s = 1;
        for (int i = r - 1; i >= c; i--) stride[i] = s, s *= sd[i];
        s = N;
        for (int i = c - 1; i >= 0; i--) stride[i] = s, s *= sd[i];
        *offset = win[0];
    } else {
        int64_t s = 1;
        for (int i = r - 1; i >= 0; i--) sd[i] = t->dims[i], stride[i] = s, s *= t->dims[i];
    }
    uint32_t n_perm;
    const int64_t *perm = ir_attr_ints(n, perm_ids[qa][k], &n_perm);
    static const int64_t ident[FA_RANK] = {0, 1, 2, 3};
    if (!perm) perm = ident, n_perm = (uint32_t)r; /* absent: the operand as stored */
    if (n_perm != (uint32_t)r) return false;
    bool seen[FA_RANK] = {false};
    for (int i = 0; i < FA_RANK; i++) {
        dims[i] = 1;
        st[i] = 0;
    }
    for (int i = 0; i < r; i++) {
        int64_t p = perm[i];
        if (p < 0 || p >= r || seen[p]) return false;
        seen[p] = true;
        dims[FA_RANK - r + i] = sd[p];
        st[FA_RANK - r + i] = sd[p] == 1 ? 0 : stride[p];
    }
    return true;
}

static const char *list4(CgenCtx *cx, const int64_t v[FA_RANK]) {
    return cgen_fmt(cx, "{%lld, %lld, %lld, %lld}", (long long)v[0], (long long)v[1],
                    (long long)v[2], (long long)v[3]);
}

static bool emit_fused_attention(CgenCtx *cx, const IrNode *n) {
    IrDType t = (IrDType)cgen_type(cx, n->outputs[0])->dtype;
    if (t != IR_DTYPE_F32 && t != IR_DTYPE_F64)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    uint32_t vals[4] = {n->inputs[0], n->inputs[1], n->inputs[2], n->outputs[0]};
    int64_t dims[4][FA_RANK], st[4][FA_RANK], off[4]; /* q, k, v, y */
    for (int o = 0; o < 4; o++)
        if (cgen_type(cx, vals[o])->dtype != t ||
            !cgen_attn_operand(cx, n, o, dims[o], st[o], &off[o]))
            return cgen_unsupported(cx, n, "operand %d: a rank, perm or window the kernel "
                                           "cannot read", o);
    const char *ptr[3]; /* Q, K, V: the window's first element */
    for (int o = 0; o < 3; o++)
        ptr[o] = off[o] ? cgen_fmt(cx, "(%s + %lld)", cgen_ptr(cx, vals[o]), (long long)off[o])
                        : cgen_ptr(cx, vals[o]);
    int64_t B = dims[0][0], H = dims[0][1], Sq = dims[0][2], D = dims[0][3];
    int64_t Sk = dims[1][2], Dv = dims[2][3];
    bool ok = dims[1][3] == D && dims[2][2] == Sk && dims[3][2] == Sq && dims[3][3] == Dv;
    for (int o = 1; o < 4; o++) ok &= dims[o][0] == B && dims[o][1] == H;
    if (!ok) return cgen_unsupported(cx, n, "Q, K, V and Y shapes that do not agree");
    if (Sk < 1 || Sk > FA_MAX_ROW)
        return cgen_unsupported(cx, n, "%lld keys (the scratch row holds 1 to %d)",
                                (long long)Sk, FA_MAX_ROW);
    const char *mask_kind = ir_attr_s(n, IR_ATTR_FUSED_ATTENTION_MASK);
    bool has_mask = strcmp(mask_kind, "add") == 0;
    if (!has_mask && strcmp(mask_kind, "none") != 0)
        return cgen_unsupported(cx, n, "mask kind '%s'", mask_kind);
    if (has_mask != (n->n_inputs > 3 && n->inputs[3] != IR_NONE))
        return cgen_unsupported(cx, n, "mask kind '%s' with%s a mask input", mask_kind,
                                has_mask ? "out" : "");
    int64_t mst[FA_RANK] = {0, 0, 0, 0};
    if (has_mask) { /* right-aligned broadcast to (B, H, Sq, Sk) */
        const IrType *tm = cgen_type(cx, n->inputs[3]);
        int64_t want[FA_RANK] = {B, H, Sq, Sk}, s = 1;
        if (tm->dtype != t || tm->rank > FA_RANK)
            return cgen_unsupported(cx, n, "a mask of type %s", cgen_type_str(cx, tm));
        for (int i = tm->rank - 1; i >= 0; i--) {
            int a = FA_RANK - tm->rank + i;
            if (tm->dims[i] != 1 && tm->dims[i] != want[a])
                return cgen_unsupported(cx, n, "a mask that does not broadcast to the scores");
            mst[a] = tm->dims[i] == 1 ? 0 : s;
            s *= tm->dims[i];
        }
    }
    bool dbl = t == IR_DTYPE_F64;
    double scale = ir_attr_f(n, IR_ATTR_FUSED_ATTENTION_SCALE);
    if (!isfinite(scale)) return cgen_unsupported(cx, n, "scale %g", scale);
    cgen_use_runtime(cx, "rt_fusedattn.h");
    CWriter *w = cx->w;
    cw_open(w, "%s", "");
    cw_line(w, "static const RtFusedAttn p = {%lld, %lld, %lld, %lld, %lld, %lld,", (long long)B,
            (long long)H, (long long)Sq, (long long)Sk, (long long)D, (long long)Dv);
    cw_line(w, "    %s, %s, %s, %s, %s};", list4(cx, st[0]), list4(cx, st[1]), list4(cx, st[2]),
            list4(cx, mst), list4(cx, st[3]));
    char lit[64]; /* the scale as a C literal of the compute type */
    snprintf(lit, sizeof lit, dbl ? "%.17g" : "%.9g", scale);
    if (!strpbrk(lit, ".en")) strcat(lit, ".0");
    /* float goes through K^T (rt_fused_attention_kt_*), whose scratch holds K^T and a tile's
     * scores; double, and float whose K^T would not fit the stack, through rows of scores */
    int64_t kt_elems = RT_FA_KT_SCRATCH(Sk, D);
    int64_t elem = dbl ? (int64_t)sizeof(double) : (int64_t)sizeof(float);
    /* big enough to share: the scratch is the workers' in the arena */
    const char *par = cgen_par(cx, (double)B * (double)H * (double)Sq * (double)Sk *
                                       (double)(D + Dv));
    const char *q = ptr[0], *k = ptr[1], *v = ptr[2], *y = cgen_ptr(cx, n->outputs[0]);
    const char *m = has_mask ? cgen_ptr(cx, n->inputs[3]) : "NULL", *f = dbl ? "" : "f";
    if (strcmp(par, "NULL") != 0) {
        cgen_par_scratch(cx, (dbl ? Sk : kt_elems) * elem);
        cw_line(w, "rt_fused_attention_par_%s(&p, %s, %s, %s, %s, %s, %s%s, par);",
                dbl ? "f64" : "f32", q, k, v, m, y, lit, f);
    } else if (!dbl && kt_elems <= FA_MAX_ROW) {
        cw_line(w, "float ws[%lld]; /* RT_FA_KT_SCRATCH(%lld, %lld): K^T, a tile's scores */",
                (long long)kt_elems, (long long)Sk, (long long)D);
        cw_line(w, "rt_fused_attention_kt_f32(&p, %s, %s, %s, %s, %s, ws, %sf);", q, k, v, m, y,
                lit);
    } else {
        cw_line(w, "%s row[%lld]; /* one row of scores */", bundle_ctype(t), (long long)Sk);
        cw_line(w, "rt_fused_attention_%s(&p, %s, %s, %s, %s, %s, row, %s%s);",
                dbl ? "f64" : "f32", q, k, v, m, y, lit, f);
    }
    cw_close(w, NULL);
    return true;
}

void cgen_register_fusedattn(CgenEmitFn *table) {
    table[IR_OP_FUSED_ATTENTION] = emit_fused_attention;
}
