/* The int8 plan (qplan.h): requantization multipliers, geometry and weight packing of the
 * quantize pass's nodes, for both targets. */
#include <math.h>
#include <string.h>

#include "backend/qplan.h"
#include "ir/geom.h"

bool qplan_value(const IrGraph *g, uint32_t v, float *scale, int32_t *zp) {
    if (v == IR_NONE) return false;
    const IrQuant *q = g->values[v].quant;
    if (!q || q->n != 1 || !(q->scales[0] > 0.0f)) return false;
    *scale = q->scales[0];
    *zp = q->zero_points ? q->zero_points[0] : 0;
    return true;
}

void qplan_multiplier(double m, int max_shift, int32_t *mult, int *shift) {
    int e;
    double f = frexp(m, &e); /* m = f 2^e, f in [0.5, 1) */
    int64_t q = (int64_t)llround(f * 2147483648.0);
    if (q == 2147483648LL) q /= 2, e++;
    int s = 31 - e;
    if (max_shift > 0 && s > max_shift) {
        q = (int64_t)llround(ldexp(m, max_shift));
        s = max_shift;
    }
    while (s > 62) q >>= 1, s--; /* tiny: precision goes, the range stays */
    while (q > 2147483647LL) q >>= 1, s--;
    if (s < 1) q = 2147483647LL, s = 1; /* a multiplier of 2^30 and more saturates */
    if (m <= 0.0) q = 0, s = 31;
    *mult = (int32_t)q;
    *shift = s;
}

/* The exponent of m's leading bit: m in [2^(e-1), 2^e) */
static int exponent(double m) {
    int e;
    frexp(m, &e);
    return e;
}

static const char *act_attr(const IrNode *n, float *alpha, float *beta) {
    if (n->op == IR_OP_QCONV) {
        *alpha = ir_attr_f(n, IR_ATTR_QCONV_ACT_ALPHA), *beta = ir_attr_f(n, IR_ATTR_QCONV_ACT_BETA);
        return ir_attr_s(n, IR_ATTR_QCONV_ACTIVATION);
    }
    *alpha = ir_attr_f(n, IR_ATTR_QGEMM_INT8_ACT_ALPHA), *beta = ir_attr_f(n, IR_ATTR_QGEMM_INT8_ACT_BETA);
    return ir_attr_s(n, IR_ATTR_QGEMM_INT8_ACTIVATION);
}

static int32_t clampq(double v) { return v < 0 ? 0 : v > 255 ? 255 : (int32_t)v; }

bool qplan_requant(const IrGraph *g, const IrNode *n, IrArena *a, QPlanRequant *rq,
                   const char **why) {
    float sx, sy, sr = 0.0f;
    int32_t zx, zy, zr = 0;
    uint32_t w = n->inputs[1];
    const IrQuant *wq = g->values[w].quant;
    bool res = n->op == IR_OP_QCONV && ir_has_input(n, 3);
    if (!qplan_value(g, n->inputs[0], &sx, &zx) || !qplan_value(g, n->outputs[0], &sy, &zy) ||
        (res && !qplan_value(g, n->inputs[3], &sr, &zr))) {
        *why = "an input or output without per-tensor quantization parameters";
        return false;
    }
    const IrType *ty = &g->values[n->outputs[0]].type;
    int64_t m = ty->dims[ty->rank - 1];
    if (!wq || wq->n != (uint32_t)m) {
        *why = "weights without one scale per output channel";
        return false;
    }
    memset(rq, 0, sizeof *rq);
    rq->m = m;
    rq->mult = ir_arena_alloc(a, (size_t)m * sizeof *rq->mult);
    rq->shift = ir_arena_alloc(a, (size_t)m);
    if (res) rq->rmult = ir_arena_alloc(a, (size_t)m * sizeof *rq->rmult);
    double mr = res ? (double)sr / sy : 0.0;
    for (int64_t c = 0; c < m; c++) {
        double mc = (double)sx * wq->scales[c] / sy;
        int32_t mult;
        int shift;
        /* with a residual both terms share the shift, small enough for either multiplier */
        int cap = res ? 31 - (exponent(mc) > exponent(mr) ? exponent(mc) : exponent(mr)) : 0;
        if (res && cap < 1) cap = 1;
        qplan_multiplier(mc, cap, &mult, &shift);
        rq->mult[c] = mult;
        rq->shift[c] = (uint8_t)shift;
        if (res) rq->rmult[c] = (int32_t)llround(ldexp(mr, shift));
    }
    rq->x_zp = zx, rq->y_zp = zy, rq->r_zp = zr;
    float alpha, beta;
    const char *act = act_attr(n, &alpha, &beta);
    rq->lo = 0, rq->hi = 255;
    if (strcmp(act, "Relu") == 0) {
        rq->lo = zy;
    } else if (strcmp(act, "Clip") == 0) {
        rq->lo = clampq(nearbyint(alpha / sy) + zy);
        rq->hi = clampq(nearbyint(beta / sy) + zy);
        if (rq->lo < zy && alpha >= 0) rq->lo = zy;
    } else if (act[0]) {
        *why = "an activation that is not a clamp";
        return false;
    }
    return true;
}

static bool geom2d(const IrNode *n, const IrType *tx, const IrType *ty, int64_t m, int64_t cg,
                   QPlanConv *p, const char **why) {
    IrType wt = ir_type_tensor(IR_DTYPE_I8, 4, (int64_t[]){m, cg, 1, 1});
    IrConvAttrs a;
    IrConvGeom cgm;
    int64_t in[2] = {tx->dims[1], tx->dims[2]}, out[2] = {ty->dims[1], ty->dims[2]};
    if (!ir_conv_attrs(n, 2, &wt, &a, why) || !ir_conv_geom(&a, in, out, &cgm, why)) return false;
    memset(p, 0, sizeof *p);
    p->n = tx->dims[0], p->h = tx->dims[1], p->w = tx->dims[2], p->c = tx->dims[3];
    p->oh = ty->dims[1], p->ow = ty->dims[2], p->m = ty->dims[3];
    p->kh = cgm.k[0], p->kw = cgm.k[1], p->sh = cgm.s[0], p->sw = cgm.s[1];
    p->dh = cgm.d[0], p->dw = cgm.d[1], p->ph = cgm.pad[0], p->pw = cgm.pad[1];
    p->group = cgm.group;
    return true;
}

bool qplan_conv(const IrGraph *g, const IrNode *n, QPlanConv *p, const char **why) {
    const IrType *tx = &g->values[n->inputs[0]].type, *ty = &g->values[n->outputs[0]].type;
    if (tx->rank != 4 || ty->rank != 4 || tx->layout != IR_LAYOUT_NHWC) {
        *why = "an input that is not 4-D channels-last";
        return false;
    }
    int64_t group = ir_attr_i(n, IR_ATTR_QCONV_GROUP);
    if (group < 1 || tx->dims[3] % group != 0 || ty->dims[3] % group != 0) {
        *why = "channel counts that disagree with the group";
        return false;
    }
    int64_t cg = tx->dims[3] / group;
    if (!geom2d(n, tx, ty, ty->dims[3], cg, p, why)) return false;
    int64_t mg = p->m / group;
    p->c4 = (cg + 3) / 4;
    p->np = (mg + QPLAN_NR - 1) / QPLAN_NR;
    p->depthwise = cg == 1 && mg == 1;
    return true;
}

bool qplan_pool(const IrGraph *g, const IrNode *n, QPlanConv *p, const char **why) {
    const IrType *tx = &g->values[n->inputs[0]].type, *ty = &g->values[n->outputs[0]].type;
    if (tx->rank != 4 || tx->layout != IR_LAYOUT_NHWC) {
        *why = "an input that is not 4-D channels-last";
        return false;
    }
    return geom2d(n, tx, ty, tx->dims[3], 1, p, why);
}

bool qplan_gemm(const IrGraph *g, const IrNode *n, QPlanGemm *p, const char **why) {
    const IrType *ta = &g->values[n->inputs[0]].type, *ty = &g->values[n->outputs[0]].type;
    int64_t numel = ir_type_numel(ta);
    if (ta->rank < 1 || numel < 0) {
        *why = "an input of unknown shape";
        return false;
    }
    p->k = ta->dims[ta->rank - 1];
    p->n = ty->dims[ty->rank - 1];
    p->rows = p->k ? numel / p->k : 0;
    p->c4 = (p->k + 3) / 4;
    p->np = (p->n + QPLAN_NR - 1) / QPLAN_NR;
    return true;
}

bool qplan_eltwise(const IrGraph *g, const IrNode *n, QPlanEltwise *p, const char **why) {
    float sa, sb = 1.0f, sy;
    memset(p, 0, sizeof *p);
    bool two = n->op == IR_OP_QADD || n->op == IR_OP_QMUL;
    if (!qplan_value(g, n->inputs[0], &sa, &p->a_zp) || !qplan_value(g, n->outputs[0], &sy, &p->y_zp) ||
        (two && !qplan_value(g, n->inputs[1], &sb, &p->b_zp))) {
        *why = "an operand without per-tensor quantization parameters";
        return false;
    }
    if (n->op == IR_OP_QADD) {
        double ma = (double)sa / sy, mb = (double)sb / sy;
        int e = exponent(ma) > exponent(mb) ? exponent(ma) : exponent(mb);
        int shift = 31 - e;
        if (shift > 62 - 9) shift = 62 - 9; /* (a - a_zp) * ma + ... stays within int64 */
        if (shift < 1) shift = 1;
        p->ma = (int32_t)llround(ldexp(ma, shift));
        p->mb = (int32_t)llround(ldexp(mb, shift));
        p->shift = shift;
    } else if (n->op == IR_OP_QMUL) {
        qplan_multiplier((double)sa * sb / sy, 62 - 17, &p->ma, &p->shift);
        const IrType *tb = &g->values[n->inputs[1]].type, *ty = &g->values[n->outputs[0]].type;
        if (ir_type_numel(tb) != ir_type_numel(ty)) {
            p->bcast = ir_bcast_run(tb, ty, &p->outer, &p->mid, &p->inner);
            if (!p->bcast || ir_type_numel(&g->values[n->inputs[0]].type) != ir_type_numel(ty)) {
                *why = "a broadcast other than B repeated over a run of A's dims";
                return false;
            }
        }
    } else { /* global average pool */
        const IrType *tx = &g->values[n->inputs[0]].type;
        int64_t hw = tx->dims[1] * tx->dims[2];
        qplan_multiplier((double)sa / ((double)hw * sy), 62 - 32, &p->ma, &p->shift);
    }
    return true;
}

/* ---- packing ---- */

static uint32_t packed_const(IrGraph *g, uint32_t w, int64_t bytes, int8_t **data) {
    char name[256];
    snprintf(name, sizeof name, "%s.packed", g->values[w].name ? g->values[w].name : "w");
    IrTensor *t = ir_tensor_new(g->arena, IR_DTYPE_I8, 1, &bytes);
    t->name = ir_arena_strdup(g->arena, name);
    IrType ty = ir_type_tensor(IR_DTYPE_I8, 1, &bytes);
    uint32_t v = ir_value_add(g, t->name, &ty, IR_VALUE_CONST);
    g->values[v].tensor = t;
    g->values[v].producer = IR_NONE;
    g->values[v].quant = g->values[w].quant;
    *data = t->data;
    return v;
}

/* Panels of w (M, taps*cg) for group count G: see runtime/rt_qgemm.h. */
static uint32_t pack_panels(IrGraph *g, uint32_t w, int64_t G, int64_t taps, int64_t cg,
                            int64_t c4, int64_t np) {
    const IrTensor *t = g->values[w].tensor;
    const int8_t *src = t->data;
    int64_t M = t->dims[0], K = taps * cg, mg = M / G, k4 = taps * c4;
    int64_t panel_bytes = G * np * k4 * QPLAN_KB;
    int8_t *o;
    uint32_t v = packed_const(g, w, panel_bytes + G * np * QPLAN_NR * 4, &o);
    for (int64_t gi = 0; gi < G; gi++)
        for (int64_t p = 0; p < np; p++)
            for (int64_t j = 0; j < QPLAN_NR; j++) {
                int64_t n = p * QPLAN_NR + j;
                int32_t sum = 0;
                if (n < mg) {
                    const int8_t *row = src + (gi * mg + n) * K;
                    for (int64_t tap = 0; tap < taps; tap++)
                        for (int64_t c = 0; c < cg; c++) {
                            int64_t kb = tap * c4 + c / 4;
                            int8_t val = row[tap * cg + c];
                            o[((gi * np + p) * k4 + kb) * QPLAN_KB + j * 4 + c % 4] = val;
                            sum += val;
                        }
                }
                int64_t at = panel_bytes + ((gi * np + p) * QPLAN_NR + j) * 4;
                uint32_t u = (uint32_t)sum; /* little-endian, as the weights blob */
                for (int b = 0; b < 4; b++) o[at + b] = (int8_t)(uint8_t)(u >> (8 * b));
            }
    return v;
}

/* Depthwise (C, taps) -> (taps, C). */
static uint32_t pack_depthwise(IrGraph *g, uint32_t w, int64_t taps) {
    const IrTensor *t = g->values[w].tensor;
    const int8_t *src = t->data;
    int64_t C = t->dims[0];
    int8_t *o;
    uint32_t v = packed_const(g, w, C * taps, &o);
    for (int64_t c = 0; c < C; c++)
        for (int64_t k = 0; k < taps; k++) o[k * C + c] = src[c * taps + k];
    return v;
}

bool qplan_pack_weights(IrGraph *g, Diag *d) {
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        IrNode *n = &g->nodes[i];
        if (n->dead || (n->op != IR_OP_QCONV && n->op != IR_OP_QGEMM_INT8)) continue;
        uint32_t w = n->inputs[1];
        const IrValue *wv = &g->values[w];
        if (wv->type.rank != 2) continue; /* packed already */
        if (wv->kind != IR_VALUE_CONST || !wv->tensor || wv->tensor->dtype != IR_DTYPE_I8) {
            ir_node_diag(d, DIAG_ERROR, n, ": int8 weights must be a constant (M, K) tensor");
            return false;
        }
        const char *why = NULL;
        uint32_t packed;
        if (n->op == IR_OP_QCONV) {
            QPlanConv p;
            if (!qplan_conv(g, n, &p, &why)) {
                ir_node_diag(d, DIAG_ERROR, n, ": %s", why);
                return false;
            }
            int64_t taps = p.kh * p.kw;
            packed = p.depthwise ? pack_depthwise(g, w, taps)
                                 : pack_panels(g, w, p.group, taps, p.c / p.group, p.c4, p.np);
        } else {
            QPlanGemm p;
            if (!qplan_gemm(g, n, &p, &why)) {
                ir_node_diag(d, DIAG_ERROR, n, ": %s", why);
                return false;
            }
            packed = pack_panels(g, w, 1, 1, p.k, p.c4, p.np);
        }
        g->nodes[i].inputs[1] = packed;
    }
    return true;
}
