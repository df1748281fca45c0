/* Attention fusion: MatMul(Q, K^T), a scale (Div or Mul by a scalar constant, optional), an
 * additive mask (Add of a tensor that broadcasts to the scores, optional; scales of Q or of
 * K^T before the product join it), Softmax over the
 * last axis and MatMul(., V) become one FusedAttention (domain "kiln"), whose kernel
 * (runtime/rt_fusedattn.h) computes one row of scores at a time instead of the whole
 * (.., Sq, Sk) matrix. Transposes feeding Q, K^T and V, and one Transpose reading the
 * result, are absorbed as strides (q_perm, k_perm, v_perm, y_perm; the Transposes that no
 * one else reads are left to dce). Q, K^T, V of one rank (2 to 4) and equal batch
 * dimensions (no batch broadcasting); an operand that is a view of one output of a Split along
 * the last axis (fuse-horizontal's packed Q, K, V) is read as a window of the Split's input
 * (q_window, k_window, v_window: the column offset, then the operand's dimensions), so no
 * Split runs; every intermediate is read by the pattern alone and is
 * no graph output; float32 only. The fused node takes the place of the last node.
 * requires: shapes; invalidates: uses, node ids; preserves: types, layouts, quant params. */
#include <string.h>

#include "passes/passes.h"

#define ATTN_MIN_RANK 2
#define ATTN_MAX_RANK 4 /* (batch, heads, rows, cols): what the kernel's strides describe */

typedef struct AttnOperand {
    uint32_t src;             /* the value read */
    int64_t perm[ATTN_MAX_RANK]; /* logical dimension i is src's dimension perm[i] */
    /* n_win > 0: src is a packed tensor P, and the operand stored (dims win[1..]) is the
     * window of P's last axis from column win[0] (the Q, K, V of fuse-horizontal's product) */
    int64_t win[1 + ATTN_MAX_RANK];
    int n_win;
} AttnOperand;

/* The integers of constant v (int64 or int32), at most max of them; their count, or -1. */
static int const_ints(const IrGraph *g, uint32_t v, int64_t *out, int max) {
    if (v == IR_NONE || g->values[v].kind != IR_VALUE_CONST || !g->values[v].tensor) return -1;
    const IrTensor *t = g->values[v].tensor;
    if ((t->dtype != IR_DTYPE_I64 && t->dtype != IR_DTYPE_I32) || t->n_elems > max || !t->data)
        return -1;
    for (int64_t i = 0; i < t->n_elems; i++)
        out[i] = t->dtype == IR_DTYPE_I64 ? ((const int64_t *)t->data)[i]
                                          : ((const int32_t *)t->data)[i];
    return (int)t->n_elems;
}

/* Slice node sp of a rank-r input whose last axis has N elements: true, with its first
 * column in *start, when it cuts the last axis alone, with step 1, by constants (inputs
 * from opset 10, attributes before); the output's type says how many columns it keeps. */
static bool slice_start(const IrGraph *g, const IrNode *sp, int r, int64_t N, int64_t *start) {
    int64_t st[IR_MAX_RANK], ax[IR_MAX_RANK], step[IR_MAX_RANK];
    int n_st, n_ax = -2, n_step = -2;
    if (sp->opset < 10) {
        uint32_t n1, n2;
        const int64_t *a1 = ir_attr_ints(sp, IR_ATTR_SLICE_STARTS, &n1);
        const int64_t *a2 = ir_attr_ints(sp, IR_ATTR_SLICE_AXES, &n2);
        if (!a1 || n1 != 1) return false;
        st[0] = a1[0];
        n_st = 1;
        if (a2) {
            if (n2 != 1) return false;
            ax[0] = a2[0];
            n_ax = 1;
        }
    } else {
        n_st = const_ints(g, sp->inputs[1], st, IR_MAX_RANK);
        if (ir_has_input(sp, 3)) n_ax = const_ints(g, sp->inputs[3], ax, IR_MAX_RANK);
        if (ir_has_input(sp, 4)) n_step = const_ints(g, sp->inputs[4], step, IR_MAX_RANK);
        if (n_st != 1 || n_ax == -1 || n_step == -1 || (n_step == 1 && step[0] != 1)) return false;
    }
    int64_t axis = n_ax == -2 ? 0 : ax[0];
    if (n_ax != -2 && n_ax != 1) return false;
    if (axis < 0) axis += r;
    if (axis != r - 1) return false;
    int64_t s = st[0] < 0 ? st[0] + N : st[0];
    *start = s < 0 ? 0 : s > N ? N : s;
    return true;
}

/* v's input when v is a view (Reshape, Flatten, Squeeze, Unsqueeze), else v. */
static uint32_t through_view(const IrGraph *g, uint32_t v) {
    const IrValue *sv = &g->values[v];
    if (sv->kind != IR_VALUE_NODE || sv->producer == IR_NONE) return v;
    IrOp op = (IrOp)g->nodes[sv->producer].op;
    return op == IR_OP_RESHAPE || op == IR_OP_FLATTEN || op == IR_OP_SQUEEZE ||
                   op == IR_OP_UNSQUEEZE
               ? g->nodes[sv->producer].inputs[0]
               : v;
}

static bool plain_static_f32(const IrGraph *g, uint32_t v) {
    const IrValue *x = &g->values[v];
    return x->type.dtype == IR_DTYPE_F32 && ir_type_is_static(&x->type) && x->type.rank >= 1 &&
           x->type.layout != IR_LAYOUT_NHWC && !x->quant;
}

/* Value p as columns [*off, *off + *w) of every row of a packed tensor *P (rows: all but P's
 * last axis): p is one output of a Split along P's last axis, a Slice of P's last axis alone
 * with step 1, or a Gather of one constant index along an axis of a view X of P whose
 * dimensions before it regroup P's rows and after it are the window (TorchScript, the dynamo
 * exporter's select of q, k or v from a packed projection). */
static bool packed_source(const IrGraph *g, uint32_t p, uint32_t *P, int64_t *off, int64_t *w) {
    const IrValue *pv = &g->values[p];
    if (pv->kind != IR_VALUE_NODE || pv->producer == IR_NONE || !plain_static_f32(g, p))
        return false;
    const IrNode *sp = &g->nodes[pv->producer];
    if (sp->dead || sp->n_inputs < 1 || sp->inputs[0] == IR_NONE) return false;
    const IrType *tw = &pv->type;
    if (sp->op == IR_OP_GATHER) {
        uint32_t x = sp->inputs[0];
        *P = through_view(g, x);
        int64_t idx[1];
        const IrType *tx = &g->values[x].type;
        if (!plain_static_f32(g, x) || !plain_static_f32(g, *P) || sp->n_inputs < 2 ||
            g->values[sp->inputs[1]].type.rank != 0 || const_ints(g, sp->inputs[1], idx, 1) != 1)
            return false;
        const IrType *tp = &g->values[*P].type;
        int64_t a = ir_attr_i(sp, IR_ATTR_GATHER_AXIS), M = 1, lead = 1, N = tp->dims[tp->rank - 1];
        if (a < 0) a += tx->rank;
        if (a < 0 || a >= tx->rank) return false;
        for (int i = 0; i + 1 < tp->rank; i++) M *= tp->dims[i];
        int c = 0;
        while (lead != M && c < tx->rank) lead *= tx->dims[c++];
        if (lead != M || a < c) return false;
        for (int i = c; i < a; i++)
            if (tx->dims[i] != 1) return false;
        int64_t i0 = idx[0] < 0 ? idx[0] + tx->dims[a] : idx[0];
        if (i0 < 0 || i0 >= tx->dims[a]) return false;
        *w = 1;
        for (int i = (int)a + 1; i < tx->rank; i++) *w *= tx->dims[i];
        *off = i0 * *w;
        return *w >= 1 && *off + *w <= N;
    }
    if (sp->op != IR_OP_SPLIT && sp->op != IR_OP_SLICE) return false;
    *P = sp->inputs[0];
    const IrType *tp = &g->values[*P].type;
    int rp = tp->rank;
    if (!plain_static_f32(g, *P) || tw->rank != rp) return false;
    for (int i = 0; i + 1 < rp; i++)
        if (tw->dims[i] != tp->dims[i]) return false;
    int64_t N = tp->dims[rp - 1];
    *off = 0;
    *w = tw->dims[rp - 1];
    if (sp->op == IR_OP_SLICE) {
        if (!slice_start(g, sp, rp, N, off)) return false;
    } else {
        int64_t axis = ir_attr_i(sp, IR_ATTR_SPLIT_AXIS);
        if (axis < 0) axis += rp;
        if (axis != rp - 1) return false;
        for (uint32_t k = 0; k < sp->n_outputs && sp->outputs[k] != p; k++) {
            if (sp->outputs[k] == IR_NONE) return false;
            const IrType *tk = &g->values[sp->outputs[k]].type;
            if (tk->rank != rp || !ir_type_is_static(tk)) return false;
            *off += tk->dims[rp - 1];
        }
    }
    return *w >= 1 && *off + *w <= N;
}

/* The stored operand o->src seen as a window of a packed tensor P: o->src is a view of p,
 * or p itself, p is columns [off, off + w) of P's rows (packed_source), and o->src's leading
 * dimensions regroup P's rows, its others split the w columns. Then P is read in its place,
 * through strides. */
static void window(const IrGraph *g, AttnOperand *o) {
    const IrType *ts = &g->values[o->src].type;
    uint32_t P;
    int64_t off, w;
    if (!plain_static_f32(g, o->src) || !packed_source(g, through_view(g, o->src), &P, &off, &w))
        return;
    /* rows: the stored operand's leading dimensions multiply to P's rows */
    const IrType *tp = &g->values[P].type;
    int64_t M = 1, lead = 1;
    for (int i = 0; i + 1 < tp->rank; i++) M *= tp->dims[i];
    int c = 0;
    while (lead != M && c < ts->rank) lead *= ts->dims[c++];
    int64_t inner = 1;
    for (int i = c; i < ts->rank; i++) inner *= ts->dims[i];
    if (lead != M || inner != w) return;
    o->src = P;
    o->win[0] = off;
    for (int i = 0; i < ts->rank; i++) o->win[1 + i] = ts->dims[i];
    o->n_win = 1 + ts->rank;
}

/* Operand v (logical, rank r) read through the Transpose that produces it, if any. */
static void operand(const IrGraph *g, uint32_t v, int r, AttnOperand *o) {
    o->src = v;
    o->n_win = 0;
    for (int i = 0; i < r; i++) o->perm[i] = i;
    uint32_t t = pass_producer(g, v, IR_OP_TRANSPOSE);
    if (t == IR_NONE) {
        window(g, o);
        return;
    }
    const IrNode *n = &g->nodes[t];
    const IrType *ts = &g->values[n->inputs[0]].type;
    if (ts->rank != r || ts->dtype != IR_DTYPE_F32 || !ir_type_is_static(ts)) return;
    uint32_t np;
    const int64_t *p = ir_attr_ints(n, IR_ATTR_TRANSPOSE_PERM, &np);
    int64_t perm[ATTN_MAX_RANK];
    bool seen[ATTN_MAX_RANK] = {false};
    for (int i = 0; i < r; i++) {
        perm[i] = np ? (i < (int)np ? p[i] : -1) : r - 1 - i;
        if (perm[i] < 0 || perm[i] >= r || seen[perm[i]] || np > (uint32_t)r) return;
        seen[perm[i]] = true;
    }
    o->src = n->inputs[0];
    memcpy(o->perm, perm, sizeof perm);
    window(g, o);
}

/* Whether mask type tm broadcasts (right-aligned) to the scores' type ts. */
static bool broadcasts(const IrType *tm, const IrType *ts) {
    if (tm->dtype != IR_DTYPE_F32 || tm->rank < 0 || tm->rank > ts->rank || !ir_type_is_static(tm))
        return false;
    for (int i = 0; i < tm->rank; i++) {
        int64_t d = tm->dims[i], want = ts->dims[ts->rank - tm->rank + i];
        if (d != 1 && d != want) return false;
    }
    return true;
}

static void set_ints(IrGraph *g, IrNode *f, IrAttrId id, const int64_t *v, int n) {
    IrAttr *a = ir_node_attr(f, id);
    a->present = true;
    a->n = (uint32_t)n;
    a->ints = ir_arena_memdup(g->arena, v, (size_t)n * sizeof *v);
}

static bool fuse_at_softmax(IrGraph *g, const PassUses *u, uint32_t sm_id) {
    const IrNode *sm = &g->nodes[sm_id];
    uint32_t p = sm->inputs[0], probs = sm->outputs[0];
    const IrType *ts = &g->values[p].type;
    int r = ts->rank;
    if (r < ATTN_MIN_RANK || r > ATTN_MAX_RANK || !ir_type_is_static(ts)) return false;
    int64_t axis = ir_attr_present(sm, IR_ATTR_SOFTMAX_AXIS) ? ir_attr_i(sm, IR_ATTR_SOFTMAX_AXIS)
                   : sm->opset < 13                         ? 1
                                                            : -1;
    if (axis < 0) axis += r;
    if (axis != r - 1 || pass_sole_reader(g, u, p) != sm_id) return false;
    uint32_t nodes[9], n_nodes = 0; /* add, scale, mm1, softmax, mm2, q/k scales, y */
    /* backwards: mask, scale, the first MatMul */
    uint32_t cur = p, mask = IR_NONE;
    uint32_t add = pass_producer(g, cur, IR_OP_ADD);
    if (add != IR_NONE) {
        const IrNode *an = &g->nodes[add];
        for (int k = 0; k < 2 && mask == IR_NONE; k++) {
            uint32_t s = an->inputs[k], m = an->inputs[1 - k];
            if (s == m || !broadcasts(&g->values[m].type, ts)) continue;
            if (!ir_type_equal(&g->values[s].type, ts) || pass_sole_reader(g, u, s) != add)
                continue;
            uint32_t prod = g->values[s].kind == IR_VALUE_NODE ? g->values[s].producer : IR_NONE;
            if (prod == IR_NONE) continue;
            IrOp op = (IrOp)g->nodes[prod].op;
            if (op != IR_OP_MAT_MUL && op != IR_OP_DIV && op != IR_OP_MUL) continue;
            mask = m;
            cur = s;
        }
        if (mask == IR_NONE) return false;
        nodes[n_nodes++] = add;
    }
    double scale = 1.0, c;
    uint32_t sc = pass_producer(g, cur, IR_OP_DIV);
    if (sc != IR_NONE && pass_const_scalar(g, g->nodes[sc].inputs[1], &c) && c != 0.0) {
        scale = 1.0 / c;
    } else if ((sc = pass_producer(g, cur, IR_OP_MUL)) != IR_NONE) {
        const IrNode *mn = &g->nodes[sc];
        if (pass_const_scalar(g, mn->inputs[1], &c)) scale = c;
        else if (pass_const_scalar(g, mn->inputs[0], &c)) scale = c;
        else return false;
    } else {
        sc = IR_NONE;
    }
    if (sc != IR_NONE) {
        nodes[n_nodes++] = sc;
        const IrNode *sn = &g->nodes[sc];
        cur = sn->op == IR_OP_DIV || pass_const_scalar(g, sn->inputs[1], &c) ? sn->inputs[0]
                                                                            : sn->inputs[1];
        if (!ir_type_equal(&g->values[cur].type, ts) || pass_sole_reader(g, u, cur) != sc)
            return false;
    }
    uint32_t mm1 = pass_producer(g, cur, IR_OP_MAT_MUL);
    if (mm1 == IR_NONE) return false; /* cur's only reader was checked on the way */
    nodes[n_nodes++] = mm1;
    nodes[n_nodes++] = sm_id;
    /* forwards: the second MatMul and an optional Transpose */
    uint32_t mm2 = pass_sole_reader(g, u, probs);
    if (mm2 == IR_NONE || g->nodes[mm2].op != IR_OP_MAT_MUL || g->nodes[mm2].inputs[0] != probs)
        return false;
    nodes[n_nodes++] = mm2;
    uint32_t q = g->nodes[mm1].inputs[0], kt = g->nodes[mm1].inputs[1];
    uint32_t v = g->nodes[mm2].inputs[1], y = g->nodes[mm2].outputs[0];
    const IrType *tq = &g->values[q].type, *tk = &g->values[kt].type, *tv = &g->values[v].type;
    const IrType *ty = &g->values[y].type;
    if (tq->rank != r || tk->rank != r || tv->rank != r || ty->rank != r) return false;
    if (!ir_type_is_static(tq) || !ir_type_is_static(tk) || !ir_type_is_static(tv) ||
        !ir_type_is_static(ty) || tq->dtype != IR_DTYPE_F32 ||
        tk->dtype != IR_DTYPE_F32 || tv->dtype != IR_DTYPE_F32 || ty->dtype != IR_DTYPE_F32)
        return false;
    for (int i = 0; i + 2 < r; i++)
        if (tq->dims[i] != ts->dims[i] || tk->dims[i] != ts->dims[i] ||
            tv->dims[i] != ts->dims[i] || ty->dims[i] != ts->dims[i])
            return false;
    if (tv->dims[r - 2] != ts->dims[r - 1]) return false;
    /* a scale applied to Q before the product (torch's MultiheadAttention), or to K^T
     * (the dynamo exporter's scaled_dot_product_attention scales both by the root of the
     * scale), joins scale */
    uint32_t *operands[2] = {&q, &kt};
    for (int o = 0; o < 2; o++) {
        uint32_t in = *operands[o];
        uint32_t qs = pass_producer(g, in, IR_OP_DIV);
        if (qs == IR_NONE) qs = pass_producer(g, in, IR_OP_MUL);
        if (qs == IR_NONE || pass_sole_reader(g, u, in) != mm1) continue;
        const IrNode *qn = &g->nodes[qs];
        int k = -1; /* which input is the constant */
        if (pass_const_scalar(g, qn->inputs[1], &c)) k = 1;
        else if (qn->op == IR_OP_MUL && pass_const_scalar(g, qn->inputs[0], &c)) k = 0;
        if (k >= 0 && (qn->op == IR_OP_MUL || c != 0.0) &&
            ir_type_equal(&g->values[qn->inputs[1 - k]].type, &g->values[in].type)) {
            scale *= qn->op == IR_OP_DIV ? 1.0 / c : c;
            *operands[o] = qn->inputs[1 - k];
            nodes[n_nodes++] = qs;
        }
    }
    AttnOperand oq, ok, ov;
    operand(g, q, r, &oq);
    operand(g, kt, r, &ok);
    operand(g, v, r, &ov);
    int64_t t = ok.perm[r - 1]; /* K^T -> K: swap the last two */
    ok.perm[r - 1] = ok.perm[r - 2];
    ok.perm[r - 2] = t;
    int64_t yperm[ATTN_MAX_RANK];
    for (int i = 0; i < r; i++) yperm[i] = i;
    uint32_t out = y, last = mm2;
    uint32_t tr = pass_sole_reader(g, u, y);
    if (tr != IR_NONE && g->nodes[tr].op == IR_OP_TRANSPOSE) {
        uint32_t np;
        const int64_t *pp = ir_attr_ints(&g->nodes[tr], IR_ATTR_TRANSPOSE_PERM, &np);
        bool seen[ATTN_MAX_RANK] = {false}, okp = np == 0 || np == (uint32_t)r;
        int64_t inv[ATTN_MAX_RANK];
        for (int j = 0; j < r && okp; j++) {
            int64_t pj = np ? pp[j] : r - 1 - j;
            okp = pj >= 0 && pj < r && !seen[pj];
            if (okp) seen[pj] = true, inv[pj] = j;
        }
        if (okp) {
            memcpy(yperm, inv, sizeof inv);
            out = g->nodes[tr].outputs[0];
            last = tr;
            nodes[n_nodes++] = tr;
        }
    }
    IrNode *f = pass_replace_node(g, last, IR_OP_FUSED_ATTENTION, g->nodes[mm1].name,
                                  mask != IR_NONE ? 4 : 3, 1);
    f->inputs[0] = oq.src;
    f->inputs[1] = ok.src;
    f->inputs[2] = ov.src;
    if (mask != IR_NONE) f->inputs[3] = mask;
    IrAttr *a = ir_node_attr(f, IR_ATTR_FUSED_ATTENTION_SCALE);
    a->present = true;
    a->f = (float)scale;
    a = ir_node_attr(f, IR_ATTR_FUSED_ATTENTION_MASK);
    a->present = true;
    a->s.data = mask != IR_NONE ? "add" : "none";
    a->s.len = strlen(a->s.data);
    set_ints(g, f, IR_ATTR_FUSED_ATTENTION_Q_PERM, oq.perm, r);
    set_ints(g, f, IR_ATTR_FUSED_ATTENTION_K_PERM, ok.perm, r);
    set_ints(g, f, IR_ATTR_FUSED_ATTENTION_V_PERM, ov.perm, r);
    set_ints(g, f, IR_ATTR_FUSED_ATTENTION_Y_PERM, yperm, r);
    static const IrAttrId win_ids[3] = {IR_ATTR_FUSED_ATTENTION_Q_WINDOW,
                                        IR_ATTR_FUSED_ATTENTION_K_WINDOW,
                                        IR_ATTR_FUSED_ATTENTION_V_WINDOW};
    const AttnOperand *ops[3] = {&oq, &ok, &ov};
    for (int o = 0; o < 3; o++)
        if (ops[o]->n_win) set_ints(g, f, win_ids[o], ops[o]->win, ops[o]->n_win);
    pass_retire_match(g, nodes, n_nodes, last, out);
    return true;
}

static bool is_softmax(const IrNode *n) { return n->op == IR_OP_SOFTMAX; }

bool pass_fuse_attention(IrGraph *g, Diag *d) {
    (void)d;
    return pass_fuse_anchored(g, is_softmax, fuse_at_softmax);
}
