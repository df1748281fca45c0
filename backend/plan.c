/* Lowering plans shared by the targets (plan.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/plan.h"
#include "ir/geom.h"
#include "runtime/rt_data.h"

void plan_copy(PlanCopy *c, int rank, const int64_t *dims, const int64_t *ys, int64_t yoff,
               const int64_t *xs, int64_t xoff) {
    IR_ASSERT(rank >= 0 && rank <= PLAN_COPY_MAX_DIMS);
    c->rank = 0;
    c->empty = false;
    c->yoff = yoff;
    c->xoff = xoff;
    for (int d = 0; d < rank; d++) {
        if (dims[d] == 0) c->empty = true;
        if (dims[d] <= 1) continue;
        int m = c->rank;
        if (m > 0 && c->ys[m - 1] == ys[d] * dims[d] && c->xs[m - 1] == xs[d] * dims[d]) {
            c->dims[m - 1] *= dims[d];
            c->ys[m - 1] = ys[d];
            c->xs[m - 1] = xs[d];
        } else {
            c->dims[m] = dims[d];
            c->ys[m] = ys[d];
            c->xs[m] = xs[d];
            c->rank++;
        }
    }
}

bool plan_copy_contiguous(const PlanCopy *c) {
    return c->rank == 0 || (c->rank == 1 && c->ys[0] == 1 && c->xs[0] == 1);
}

int64_t plan_copy_elems(const PlanCopy *c) {
    int64_t n = 1;
    for (int d = 0; d < c->rank; d++) n *= c->dims[d];
    return c->empty ? 0 : n;
}

void plan_strides(const int64_t *dims, int rank, int64_t *st) {
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        st[d] = s;
        s *= dims[d];
    }
}

void plan_permute(PlanCopy *c, int rank, const int64_t *dims, const int *perm) {
    int64_t vst[PLAN_COPY_MAX_DIMS], od[PLAN_COPY_MAX_DIMS], xs[PLAN_COPY_MAX_DIMS];
    int64_t ys[PLAN_COPY_MAX_DIMS];
    plan_strides(dims, rank, vst);
    for (int i = 0; i < rank; i++) {
        od[i] = dims[perm[i]];
        xs[i] = vst[perm[i]];
    }
    plan_strides(od, rank, ys);
    plan_copy(c, rank, od, ys, 0, xs, 0);
}

bool plan_depth_space(const IrNode *n, const IrType *x, PlanCopy *c, const char **why) {
    if (x->rank != 4) {
        *why = "inputs of rank other than 4";
        return false;
    }
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    bool d2s = n->op == IR_OP_DEPTH_TO_SPACE;
    int64_t b =
        ir_attr_i(n, d2s ? IR_ATTR_DEPTH_TO_SPACE_BLOCKSIZE : IR_ATTR_SPACE_TO_DEPTH_BLOCKSIZE);
    if (b <= 0) {
        *why = "a blocksize below 1";
        return false;
    }
    if (d2s && strcmp(ir_attr_s(n, IR_ATTR_DEPTH_TO_SPACE_MODE), "CRD") == 0) {
        int64_t v[6] = {N, C / (b * b), b, b, H, W};
        int perm[6] = {0, 1, 4, 2, 5, 3};
        plan_permute(c, 6, v, perm);
    } else if (d2s) { /* DCR */
        int64_t v[6] = {N, b, b, C / (b * b), H, W};
        int perm[6] = {0, 3, 4, 1, 5, 2};
        plan_permute(c, 6, v, perm);
    } else {
        int64_t v[6] = {N, C, H / b, b, W / b, b};
        int perm[6] = {0, 3, 5, 1, 2, 4};
        plan_permute(c, 6, v, perm);
    }
    return true;
}

void plan_tile(const IrType *x, const IrType *y, PlanCopy *c) {
    /* y viewed as (rep_0, d_0, rep_1, d_1, ...): x repeats with stride 0 */
    int R = x->rank;
    int64_t dims[PLAN_COPY_MAX_DIMS], ys[PLAN_COPY_MAX_DIMS], xs[PLAN_COPY_MAX_DIMS];
    int64_t xst[IR_MAX_RANK], yst[IR_MAX_RANK];
    plan_strides(x->dims, R, xst);
    plan_strides(y->dims, R, yst);
    for (int d = 0; d < R; d++) {
        if (x->dims[d] == 0) {
            memset(c, 0, sizeof *c);
            c->empty = true;
            return;
        }
        dims[2 * d] = y->dims[d] / x->dims[d];
        dims[2 * d + 1] = x->dims[d];
        ys[2 * d] = yst[d] * x->dims[d];
        ys[2 * d + 1] = yst[d];
        xs[2 * d] = 0;
        xs[2 * d + 1] = xst[d];
    }
    plan_copy(c, 2 * R, dims, ys, 0, xs, 0);
}

bool plan_softmax_rows(const IrNode *n, const IrType *x, PlanRows *r, const char **why) {
    IrAttrId id = n->op == IR_OP_SOFTMAX       ? IR_ATTR_SOFTMAX_AXIS
                  : n->op == IR_OP_LOG_SOFTMAX ? IR_ATTR_LOG_SOFTMAX_AXIS
                                               : IR_ATTR_HARDMAX_AXIS;
    bool legacy = n->opset < 13;
    int64_t axis = ir_attr_present(n, id) ? ir_attr_i(n, id) : (legacy ? 1 : -1);
    int64_t a = axis < 0 ? axis + x->rank : axis;
    r->outer = r->len = r->inner = 1;
    if (x->rank == 0) return true;
    if (a < 0 || a >= x->rank) {
        *why = "an axis out of range";
        return false;
    }
    for (int d = 0; d < x->rank; d++) {
        if (d < a) r->outer *= x->dims[d];
        else if (d == a || legacy) r->len *= x->dims[d];
        else r->inner *= x->dims[d];
    }
    return true;
}

int64_t plan_tensor_i64(const IrTensor *t, int64_t i) {
    switch ((IrDType)t->dtype) {
    case IR_DTYPE_I64: return ((const int64_t *)t->data)[i];
    case IR_DTYPE_I32: return ((const int32_t *)t->data)[i];
    case IR_DTYPE_I16: return ((const int16_t *)t->data)[i];
    case IR_DTYPE_I8: return ((const int8_t *)t->data)[i];
    case IR_DTYPE_U8: return ((const uint8_t *)t->data)[i];
    case IR_DTYPE_F32: return (int64_t)((const float *)t->data)[i];
    case IR_DTYPE_F64: return (int64_t)((const double *)t->data)[i];
    default: return 0;
    }
}

bool plan_slice(const IrNode *n, const IrType *x, const IrType *y, const IrTensor *const in[5],
                PlanCopy *c, const char **why) {
    int R = x->rank;
    int64_t v[4][RT_MAX_RANK], cnt[4] = {0, 0, -1, -1};
    const int64_t *list[4] = {NULL, NULL, NULL, NULL};
    if (n->opset < 10) {
        static const IrAttrId ids[3] = {IR_ATTR_SLICE_STARTS, IR_ATTR_SLICE_ENDS,
                                        IR_ATTR_SLICE_AXES};
        for (int k = 0; k < 3; k++) {
            uint32_t m;
            list[k] = ir_attr_ints(n, ids[k], &m);
            cnt[k] = list[k] && m ? (int64_t)m : k < 2 ? 0 : -1;
            if (k == 2 && cnt[k] < 0) list[k] = NULL;
        }
        if (cnt[0] != cnt[1] || (cnt[2] >= 0 && cnt[2] != cnt[0])) {
            *why = "mismatched attributes";
            return false;
        }
    } else {
        for (int k = 0; k < 4; k++) {
            const IrTensor *t = in[k + 1];
            if (!t) continue;
            if (t->n_elems > R) {
                *why = "more slice entries than axes";
                return false;
            }
            cnt[k] = t->n_elems;
            for (int64_t i = 0; i < t->n_elems; i++) v[k][i] = plan_tensor_i64(t, i);
            list[k] = v[k];
        }
        if (cnt[0] != cnt[1] || (cnt[2] >= 0 && cnt[2] != cnt[0]) ||
            (cnt[3] >= 0 && cnt[3] != cnt[0])) {
            *why = "mismatched slice inputs";
            return false;
        }
    }
    int64_t st[RT_MAX_RANK], sp[RT_MAX_RANK];
    if (rt_slice_params(x->dims, R, list[0], list[1], list[2], list[3], cnt[0], y->dims, st,
                        sp) != 0) {
        *why = "slice parameters that disagree with the output shape";
        return false;
    }
    int64_t xs[RT_MAX_RANK], ys[RT_MAX_RANK], xst[RT_MAX_RANK], off = 0;
    plan_strides(x->dims, R, xs);
    plan_strides(y->dims, R, ys);
    for (int d = 0; d < R; d++) {
        xst[d] = xs[d] * sp[d];
        off += st[d] * xs[d];
    }
    plan_copy(c, R, y->dims, ys, 0, xst, off);
    return true;
}

/* MatMul's batch loops (numpy broadcasting over the dims before the last two). */
static bool matmul_batches(const IrType *ta, const IrType *tb, const IrType *ty, PlanGemm *p,
                           const char **why) {
    int ra = ta->rank, rb = tb->rank;
    int bra = ra > 2 ? ra - 2 : 0, brb = rb > 2 ? rb - 2 : 0;
    int ryb = ty->rank - (ra == 1 ? 0 : 1) - (rb == 1 ? 0 : 1);
    if (ryb < 0 || ryb < bra || ryb < brb) {
        *why = "an output rank";
        return false;
    }
    int64_t ca = p->M * p->K, cb = p->K * p->N, cy = p->M * p->N;
    int64_t st_a[IR_MAX_RANK], st_b[IR_MAX_RANK], st_y[IR_MAX_RANK];
    for (int d = ryb - 1; d >= 0; d--) {
        int da = d - (ryb - bra), db = d - (ryb - brb);
        int64_t na = da >= 0 ? ta->dims[da] : 1, nbd = db >= 0 ? tb->dims[db] : 1;
        int64_t out = ty->dims[d];
        if ((na != 1 && na != out) || (nbd != 1 && nbd != out)) {
            *why = "batch dimensions that do not broadcast";
            return false;
        }
        st_a[d] = na == 1 ? 0 : ca;
        st_b[d] = nbd == 1 ? 0 : cb;
        st_y[d] = cy;
        ca *= na, cb *= nbd, cy *= out;
    }
    p->nb = 0;
    for (int d = 0; d < ryb; d++) {
        if (ty->dims[d] == 1) continue;
        p->bdim[p->nb] = ty->dims[d];
        p->sa[p->nb] = st_a[d], p->sb[p->nb] = st_b[d], p->sy[p->nb] = st_y[d];
        p->nb++;
    }
    /* B shared by every batch and A covering all of them: one product with M * batch rows */
    bool fold = p->nb > 0;
    for (int d = 0; d < p->nb && fold; d++)
        fold = p->sb[d] == 0 && p->sa[d] == p->sy[d] / p->N * p->K;
    if (fold) {
        for (int d = 0; d < p->nb; d++) p->M *= p->bdim[d];
        p->nb = 0;
    }
    return true;
}

bool plan_gemm(const IrNode *n, const IrType *ta, const IrType *tb, const IrType *tc,
               const IrType *ty, PlanGemm *p, const char **why) {
    memset(p, 0, sizeof *p);
    p->alpha = 1.0;
    bool gemm = n->op == IR_OP_GEMM || n->op == IR_OP_FUSED_GEMM;
    p->fused = n->op == IR_OP_FUSED_GEMM || n->op == IR_OP_FUSED_MAT_MUL;
    if (p->fused) {
        bool g = n->op == IR_OP_FUSED_GEMM;
        p->activation = ir_attr_s(n, g ? IR_ATTR_FUSED_GEMM_ACTIVATION
                                       : IR_ATTR_FUSED_MAT_MUL_ACTIVATION);
        p->act_alpha = ir_attr_f(n, g ? IR_ATTR_FUSED_GEMM_ACT_ALPHA
                                      : IR_ATTR_FUSED_MAT_MUL_ACT_ALPHA);
        p->act_beta = ir_attr_f(n, g ? IR_ATTR_FUSED_GEMM_ACT_BETA
                                     : IR_ATTR_FUSED_MAT_MUL_ACT_BETA);
    }
    int64_t kb;
    if (gemm) {
        bool fg = n->op == IR_OP_FUSED_GEMM;
        if (ta->rank != 2 || tb->rank != 2) {
            *why = "operands of rank != 2";
            return false;
        }
        p->trans_a = ir_attr_i(n, fg ? IR_ATTR_FUSED_GEMM_TRANS_A : IR_ATTR_GEMM_TRANS_A) != 0;
        p->trans_b = ir_attr_i(n, fg ? IR_ATTR_FUSED_GEMM_TRANS_B : IR_ATTR_GEMM_TRANS_B) != 0;
        p->alpha = ir_attr_f(n, fg ? IR_ATTR_FUSED_GEMM_ALPHA : IR_ATTR_GEMM_ALPHA);
        p->beta = ir_attr_f(n, fg ? IR_ATTR_FUSED_GEMM_BETA : IR_ATTR_GEMM_BETA);
        p->M = p->trans_a ? ta->dims[1] : ta->dims[0];
        p->K = p->trans_a ? ta->dims[0] : ta->dims[1];
        p->N = p->trans_b ? tb->dims[0] : tb->dims[1];
        kb = p->trans_b ? tb->dims[1] : tb->dims[0];
    } else {
        int ra = ta->rank, rb = tb->rank;
        if (ra < 1 || rb < 1) {
            *why = "a rank-0 operand";
            return false;
        }
        p->M = ra == 1 ? 1 : ta->dims[ra - 2];
        p->K = ta->dims[ra - 1];
        kb = rb == 1 ? tb->dims[0] : tb->dims[rb - 2];
        p->N = rb == 1 ? 1 : tb->dims[rb - 1];
    }
    if (kb != p->K) {
        snprintf(p->why, sizeof p->why, "inner dimensions %lld and %lld", (long long)p->K,
                 (long long)kb);
        *why = p->why;
        return false;
    }
    if (!gemm && !matmul_batches(ta, tb, ty, p, why)) return false;
    p->a_rs = p->trans_a ? 1 : p->K, p->a_cs = p->trans_a ? p->M : 1;
    p->b_rs = p->trans_b ? 1 : p->N, p->b_cs = p->trans_b ? p->K : 1;
    if (tc && gemm) { /* unidirectional broadcast of C to (M, N) */
        int64_t cm = tc->rank >= 2 ? tc->dims[tc->rank - 2] : 1;
        int64_t cn = tc->rank >= 1 ? tc->dims[tc->rank - 1] : 1;
        if (tc->rank > 2 || (cm != 1 && cm != p->M) || (cn != 1 && cn != p->N)) {
            snprintf(p->why, sizeof p->why, "a C that does not broadcast to (%lld, %lld)",
                     (long long)p->M, (long long)p->N);
            *why = p->why;
            return false;
        }
        p->has_c = true;
        p->c_rs = cm == 1 ? 0 : cn;
        p->c_cs = cn == 1 ? 0 : 1;
    } else if (tc) { /* FusedMatMul's bias: (N) over every row */
        if (ir_type_numel(tc) != p->N) {
            *why = "a bias that is not (N)";
            return false;
        }
        p->has_c = true;
        p->beta = 1.0;
        p->c_rs = 0, p->c_cs = 1;
    }
    return true;
}

/* ---- packed fp32 convolution weights (plan.h, runtime/rt_pgemm.h) ---- */

/* Whether Conv/FusedConv n runs on the packed GEMM: channels-last f32, constant RSCK
 * weights, not depthwise (any number of taps: the driver cuts the reduction into blocks of
 * at most RT_PGEMM_MAX_TAPS, or reads a patch stem's kernel rows in place). */
static bool pack_conv_fits(const IrGraph *g, const IrNode *n, IrConvAttrs *a) {
    if ((n->op != IR_OP_CONV && n->op != IR_OP_FUSED_CONV) || n->n_inputs < 2) return false;
    const IrValue *x = &g->values[n->inputs[0]], *w = &g->values[n->inputs[1]];
    if (x->type.layout != IR_LAYOUT_NHWC || x->type.dtype != IR_DTYPE_F32 ||
        x->type.rank != 4 || w->kind != IR_VALUE_CONST || !w->tensor ||
        w->tensor->dtype != IR_DTYPE_F32 || w->type.rank != 4)
        return false;
    const char *why;
    if (!ir_conv_attrs(n, 2, NULL, a, &why) || a->group < 1) return false;
    const int64_t *d = w->type.dims; /* (KH, KW, C/group, M) */
    int64_t taps = d[0] * d[1], cg = d[2], M = d[3];
    if (taps < 1 || cg < 1 || M % a->group != 0 ||
        x->type.dims[3] != cg * a->group)
        return false;
    return !(cg == 1 && a->group > 1); /* depthwise: its own kernel */
}

/* A new float32 tensor of dims, named after constant w with suffix, for a layout of w's
 * data computed at compile time; add_derived_const makes it a constant value. */
static IrTensor *derived_tensor(IrGraph *g, uint32_t w, const char *suffix, int rank,
                                const int64_t *dims) {
    char name[256];
    snprintf(name, sizeof name, "%s%s", g->values[w].name ? g->values[w].name : "w", suffix);
    IrTensor *pt = ir_tensor_new(g->arena, IR_DTYPE_F32, rank, dims);
    pt->name = ir_arena_strdup(g->arena, name);
    return pt;
}

static uint32_t add_derived_const(IrGraph *g, IrTensor *pt) {
    IrType ty = ir_type_tensor(IR_DTYPE_F32, pt->rank, pt->dims);
    uint32_t v = ir_value_add(g, pt->name, &ty, IR_VALUE_CONST);
    g->values[v].tensor = pt;
    g->values[v].producer = IR_NONE;
    return v;
}

/* The (K, M) matrix src (K = KH*KW*cg; element (k, m) at src[k*M + m], (M, K) at
 * src[m*K + k] when trans) as (G, NP, KH, KW, cg, 16) panels, a constant named after w;
 * returns the new value. */
static uint32_t pack_src_f32(IrGraph *g, uint32_t w, const float *src, int64_t G, int64_t KH,
                             int64_t KW, int64_t cg, int64_t M, bool trans) {
    int64_t mg = M / G, np = (mg + PLAN_PGEMM_NR - 1) / PLAN_PGEMM_NR, K = KH * KW * cg;
    int64_t dims[PLAN_PGEMM_RANK] = {G, np, KH, KW, cg, PLAN_PGEMM_NR};
    IrTensor *pt = derived_tensor(g, w, ".packed", PLAN_PGEMM_RANK, dims);
    float *o = pt->data;
    for (int64_t gi = 0; gi < G; gi++)
        for (int64_t p = 0; p < np; p++)
            for (int64_t k = 0; k < K; k++)
                for (int64_t j = 0; j < PLAN_PGEMM_NR; j++) {
                    int64_t col = p * PLAN_PGEMM_NR + j, m = gi * mg + col;
                    o[((gi * np + p) * K + k) * PLAN_PGEMM_NR + j] =
                        col >= mg ? 0.0f : trans ? src[m * K + k] : src[k * M + m];
                }
    return add_derived_const(g, pt);
}

/* The constant w as panels of its (K, M) matrix (pack_src_f32). */
static uint32_t pack_panels_f32(IrGraph *g, uint32_t w, int64_t G, int64_t KH, int64_t KW,
                                int64_t cg, int64_t M, bool trans) {
    return pack_src_f32(g, w, g->values[w].tensor->data, G, KH, KW, cg, M, trans);
}

/* ---- a bottleneck's conv3 and its downsample as one product (plan.h) ---- */

/* Whether packed conv n (attributes a) is a 1x1 of one group, no padding and no dilation
 * that matters (1x1), with strides s; unit strides when unit. */
static bool pointwise_conv(const IrGraph *g, const IrNode *n, IrConvAttrs *a, bool unit) {
    if (!pack_conv_fits(g, n, a) || a->group != 1 || a->ns != 2 ||
        (a->auto_pad != IR_AUTO_PAD_NOTSET && a->auto_pad != IR_AUTO_PAD_VALID))
        return false;
    const int64_t *wd = g->values[n->inputs[1]].type.dims; /* (KH, KW, C, M) */
    if (wd[0] != 1 || wd[1] != 1) return false;
    for (int i = 0; i < 2; i++)
        if (a->pads[i] != 0 || a->pads[2 + i] != 0 || a->s[i] < 1 || (unit && a->s[i] != 1))
            return false;
    return true;
}

/* Whether b is absent or a constant f32 bias of (M) (summed at compile time). */
static bool const_bias(const IrGraph *g, uint32_t b, int64_t M) {
    if (b == IR_NONE) return true;
    const IrValue *v = &g->values[b];
    return v->kind == IR_VALUE_CONST && v->tensor && v->tensor->dtype == IR_DTYPE_F32 &&
           ir_type_numel(&v->type) == M;
}

/* Fuses FusedConv n = act(conv3(a) + b3 + r) whose residual r is the downsample
 * ds(x) + bd of its block (a 1x1 of stride s, no activation, read by n alone) into one
 * product over C3 + Cd: inputs (a, [W3; Wd], b3 + bd, none, x); the downsample dies. */
static bool fuse_downsample(IrGraph *g, IrNode *n, const uint32_t *uses) {
    IrConvAttrs a, ad;
    if (n->op != IR_OP_FUSED_CONV || n->n_inputs != 4 || !ir_has_input(n, 3) ||
        !pointwise_conv(g, n, &a, true))
        return false;
    const uint32_t r = n->inputs[3], y = n->outputs[0];
    const IrValue *rv = &g->values[r];
    if (rv->kind != IR_VALUE_NODE || rv->producer == IR_NONE || uses[r] != 1) return false;
    IrNode *d = &g->nodes[rv->producer];
    if (d->dead || d->n_outputs != 1 || !pointwise_conv(g, d, &ad, false) ||
        (d->op == IR_OP_FUSED_CONV &&
         (ir_has_input(d, 3) || ir_attr_s(d, IR_ATTR_FUSED_CONV_ACTIVATION)[0] != '\0')))
        return false;
    const IrType *ta = &g->values[n->inputs[0]].type, *tx = &g->values[d->inputs[0]].type;
    const IrType *ty = &g->values[y].type;
    if (!ir_type_equal(&rv->type, ty) || !ir_type_is_static(ty) || !ir_type_is_static(tx) ||
        tx->dims[0] != ty->dims[0])
        return false;
    /* x's side is exactly the output's times the stride: the emitter reads the stride back
     * as the sides' ratio (ops.def) */
    for (int i = 0; i < 2; i++)
        if (tx->dims[1 + i] != ty->dims[1 + i] * ad.s[i]) return false;
    /* channels a tap (rt_pgemm.h's two-operand driver): their greatest common divisor, at
     * least 16 (fewer would gather rows) */
    int64_t C3 = ta->dims[3], Cd = tx->dims[3], M = ty->dims[3], p = C3, q = Cd;
    while (q != 0) {
        int64_t t = p % q;
        p = q;
        q = t;
    }
    if (p < 16) return false;
    const uint32_t b3 = ir_has_input(n, 2) ? n->inputs[2] : IR_NONE;
    const uint32_t bd = ir_has_input(d, 2) ? d->inputs[2] : IR_NONE;
    if (!const_bias(g, b3, M) || !const_bias(g, bd, M)) return false;
    const float *w3 = g->values[n->inputs[1]].tensor->data;
    const float *wd = g->values[d->inputs[1]].tensor->data;
    float *cat = malloc((size_t)((C3 + Cd) * M) * sizeof *cat);
    if (!cat) return false;
    memcpy(cat, w3, (size_t)(C3 * M) * sizeof *cat);
    memcpy(cat + C3 * M, wd, (size_t)(Cd * M) * sizeof *cat);
    uint32_t wp = pack_src_f32(g, n->inputs[1], cat, 1, 1, 1, C3 + Cd, M, false);
    free(cat);
    uint32_t bias = IR_NONE;
    if (b3 != IR_NONE || bd != IR_NONE) {
        int64_t dims[1] = {M};
        IrTensor *bt = derived_tensor(g, b3 != IR_NONE ? b3 : bd, ".sum", 1, dims);
        float *o = bt->data;
        for (int64_t m = 0; m < M; m++)
            o[m] = (b3 != IR_NONE ? ((const float *)g->values[b3].tensor->data)[m] : 0.0f) +
                   (bd != IR_NONE ? ((const float *)g->values[bd].tensor->data)[m] : 0.0f);
        bias = add_derived_const(g, bt);
    }
    uint32_t *in = ir_arena_alloc(g->arena, 5 * sizeof *in);
    in[0] = n->inputs[0];
    in[1] = wp;
    in[2] = bias;
    in[3] = IR_NONE;
    in[4] = d->inputs[0];
    n->inputs = in;
    n->n_inputs = 5;
    d->dead = true;
    return true;
}

/* Whether product node n (MatMul, Gemm and their fused forms) runs on the packed GEMM: f32,
 * constant 2-D B, A's rows contiguous (no transA, batches folded into rows), alpha 1, and C
 * (if any) a bias of (N) with beta 1. */
static bool pack_gemm_fits(const IrGraph *g, const IrNode *n, PlanGemm *p) {
    if (n->op != IR_OP_MAT_MUL && n->op != IR_OP_FUSED_MAT_MUL && n->op != IR_OP_GEMM &&
        n->op != IR_OP_FUSED_GEMM)
        return false;
    if (n->n_inputs < 2 || n->n_outputs < 1 || n->outputs[0] == IR_NONE) return false;
    const IrValue *a = &g->values[n->inputs[0]], *b = &g->values[n->inputs[1]];
    const IrValue *y = &g->values[n->outputs[0]];
    bool has_c = ir_has_input(n, 2);
    const IrType *tc = has_c ? &g->values[n->inputs[2]].type : NULL;
    if (a->type.dtype != IR_DTYPE_F32 || b->kind != IR_VALUE_CONST || !b->tensor ||
        b->tensor->dtype != IR_DTYPE_F32 || b->type.rank != 2 || a->type.rank < 2 ||
        !ir_type_is_static(&a->type) || !ir_type_is_static(&y->type) ||
        (tc && (tc->dtype != IR_DTYPE_F32 || !ir_type_is_static(tc))))
        return false;
    const char *why;
    if (!plan_gemm(n, &a->type, &b->type, tc, &y->type, p, &why)) return false;
    if (p->nb != 0 || p->trans_a || p->alpha != 1.0 || p->M < 1 || p->N < 1 || p->K < 1)
        return false;
    if (p->has_c && (p->beta != 1.0 || p->c_rs != 0 || p->c_cs != 1 || ir_type_numel(tc) != p->N))
        return false;
    return true;
}

/* ---- Winograd F(4x4, 3x3) weights (plan.h, runtime/rt_wino.h) ---- */

/* Whether packed conv n (pack_conv_fits, attributes a) runs on Winograd: 3x3, dilation 1,
 * group 1, 2-D, output of static shape; stride 1 where plan_wino_pays (F(4x4, 3x3): 4) or
 * plan_wino2_pays (F(2x2, 3x3): 2), stride 2 where plan_winos2_pays (1: runtime/rt_wino.h's
 * RT_WINOS2); 0: not. */
static int wino_fits(const IrGraph *g, const IrNode *n, const IrConvAttrs *a) {
    const int64_t *wd = g->values[n->inputs[1]].type.dims; /* (KH, KW, C, M) */
    const IrType *ty = &g->values[n->outputs[0]].type;     /* (N, OH, OW, M) */
    if (a->group != 1 || a->ns != 2 || wd[0] != 3 || wd[1] != 3 || ty->rank != 4 ||
        !ir_type_is_static(ty))
        return 0;
    for (int i = 0; i < 2; i++)
        if (a->d[i] != 1 || a->s[i] != a->s[0]) return 0;
    if (a->s[0] == 2) return plan_winos2_pays(wd[2], wd[3], ty->dims[1], ty->dims[2]) ? 1 : 0;
    if (a->s[0] != 1) return 0;
    if (plan_wino_pays(wd[2], wd[3], ty->dims[1], ty->dims[2])) return 4;
    return plan_wino2_pays(wd[2], wd[3], ty->dims[1], ty->dims[2]) ? 2 : 0;
}

/* F(4x4, 3x3) (wm 4, 6x6 points) or F(2x2, 3x3) (wm 2, 4x4 points): one (c, m)'s 3x3
 * kernel k as U = G k GT, point p = U[p / A][p % A] into v, A = wm + 2. */
static void wino_points(double k[3][3], int wm, double *v) {
    static const double G4[6][3] = {{1.0 / 4, 0, 0},
                                    {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                    {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                    {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                    {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                    {0, 0, 1}};
    static const double G2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
    const double(*G)[3] = wm == 2 ? G2 : G4;
    const int A = wm + 2;
    double t[6][3];
    for (int i = 0; i < A; i++) /* t = G k */
        for (int s = 0; s < 3; s++)
            t[i][s] = G[i][0] * k[0][s] + G[i][1] * k[1][s] + G[i][2] * k[2][s];
    for (int i = 0; i < A; i++) /* U = t GT */
        for (int j = 0; j < A; j++)
            v[i * A + j] = t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2];
}

/* Stride 2 (runtime/rt_wino.h, RT_WINOS2): one (c, m)'s 3x3 kernel k as its 16 matrices'
 * values into v: 0-8 G (k00 k02; k20 k22) GT, 9-11 G (k01; k21), 12-14 G (k10 k12)T, 15 k11,
 * with G = (1 0; 1 1; 0 1). */
static void winos2_points(double k[3][3], double *v) {
    static const double G[3][2] = {{1, 0}, {1, 1}, {0, 1}};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            v[3 * i + j] = G[i][0] * G[j][0] * k[0][0] + G[i][0] * G[j][1] * k[0][2] +
                           G[i][1] * G[j][0] * k[2][0] + G[i][1] * G[j][1] * k[2][2];
    for (int i = 0; i < 3; i++) v[9 + i] = G[i][0] * k[0][1] + G[i][1] * k[2][1];
    for (int j = 0; j < 3; j++) v[12 + j] = G[j][0] * k[1][0] + G[j][1] * k[1][2];
    v[15] = k[1][1];
}

/* The constant (3, 3, C, M) w transformed per (c, m) in double (wino_points for wm 4 and 2,
 * winos2_points for wm 1, wino_fits' codes), one matrix of C x M a point q, stored (A, A,
 * NP, C, 16) (A = wm + 2; stride 2: (16, 1, NP, C, 16)): u[((q*NP + m/16)*C + c)*16 + m%16],
 * 0 past M. */
static uint32_t pack_wino_f32(IrGraph *g, uint32_t w, int64_t C, int64_t M, int wm) {
    const int A = wm + 2, points = wm == 1 ? 16 : A * A;
    const float *src = g->values[w].tensor->data;
    int64_t np = (M + PLAN_PGEMM_NR - 1) / PLAN_PGEMM_NR;
    int64_t dims[PLAN_WINO_RANK] = {wm == 1 ? 16 : A, wm == 1 ? 1 : A, np, C, PLAN_PGEMM_NR};
    IrTensor *pt = derived_tensor(g, w, ".wino", PLAN_WINO_RANK, dims);
    float *o = pt->data;
    for (int64_t c = 0; c < C; c++)
        for (int64_t m = 0; m < np * PLAN_PGEMM_NR; m++) {
            double k[3][3] = {{0}}, v[36];
            if (m < M)
                for (int r = 0; r < 3; r++)
                    for (int s = 0; s < 3; s++) k[r][s] = src[((r * 3 + s) * C + c) * M + m];
            if (wm == 1)
                winos2_points(k, v);
            else
                wino_points(k, wm, v);
            for (int q = 0; q < points; q++)
                o[((q * np + m / PLAN_PGEMM_NR) * C + c) * PLAN_PGEMM_NR + m % PLAN_PGEMM_NR] =
                    (float)v[q];
        }
    return add_derived_const(g, pt);
}

bool plan_pack_weights_f32(IrGraph *g, bool winograd, Diag *d) {
    (void)d;
    uint32_t *uses = ir_use_counts(g);
    if (!uses) return false;
    bool fused = false;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead) fused |= fuse_downsample(g, &g->nodes[i], uses);
    free(uses);
    if (fused) ir_graph_compact(g);
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        IrConvAttrs a;
        PlanGemm p;
        IrNode *n = &g->nodes[i];
        if (n->dead || (n->op == IR_OP_FUSED_CONV && ir_has_input(n, 4))) continue;
        int wm = 0;
        if (winograd && pack_conv_fits(g, n, &a) && (wm = wino_fits(g, n, &a)) > 0) {
            const int64_t *wd = g->values[n->inputs[1]].type.dims; /* (3, 3, C, M) */
            n->inputs[1] = pack_wino_f32(g, n->inputs[1], wd[2], wd[3], wm);
        } else if (pack_conv_fits(g, n, &a)) {
            const int64_t *wd = g->values[n->inputs[1]].type.dims; /* (KH, KW, C/group, M) */
            n->inputs[1] = pack_panels_f32(g, n->inputs[1], a.group, wd[0], wd[1], wd[2],
                                           wd[3], false);
        } else if (pack_gemm_fits(g, n, &p)) {
            n->inputs[1] = pack_panels_f32(g, n->inputs[1], 1, 1, 1, p.K, p.N, p.trans_b);
        }
    }
    return true;
}
