/* Horizontal fusion: the MatMuls (or the Gemms) that read one input with constant weights
 * of the same K become one product whose weights are theirs side by side along N (their
 * constant bias Adds, or the Gemms' C, one bias of the same order), and a Split along the
 * last axis hands each its old result. Attention's Q, K and V projections read one
 * normalized input: one product of N = 3 x hidden instead of three (one launch, A read
 * once). fuse-attention then reads Q, K and V through windows of the packed result (no
 * Split left), and fuse folds the bias into the product. Conditions: f32, static shapes, no
 * quantization or NHWC; each weight (and bias) read by its product alone; MatMul weights
 * (K, N); Gemm with transA 0 and alpha 1 (transB and beta are folded into the copy). The
 * new nodes take the place of the group's first member, so their results exist before any
 * member's reader. runs before fuse-attention and fuse.
 * requires: shapes; invalidates: uses, node ids; preserves: types, layouts, quant params. */
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"

#define HFUSE_MAX_MEMBERS 16 /* one group; readers past these stay as they are */

/* One product of a group: its node, weights, the bias it takes (IR_NONE: none) and the
 * value that the Split writes in its place. */
typedef struct Member {
    uint32_t node, w, bias, bias_add, out;
    int64_t n;       /* its columns */
    bool trans_b;    /* Gemm: W is (N, K) */
    double beta;     /* Gemm: C's factor */
} Member;

static bool plain_f32(const IrGraph *g, uint32_t v) {
    const IrValue *x = &g->values[v];
    return x->type.dtype == IR_DTYPE_F32 && x->quant == NULL && x->type.layout != IR_LAYOUT_NHWC &&
           ir_type_is_static(&x->type);
}

/* A constant f32 weight read by node `id` alone (in one slot). */
static bool own_const(const IrGraph *g, const PassUses *u, uint32_t v, uint32_t id) {
    return v != IR_NONE && plain_f32(g, v) && pass_const_f32(g, v) &&
           pass_sole_reader(g, u, v) == id;
}

/* Constant c as a bias of n elements along the last axis of a rank-r result. */
static bool is_bias(const IrTensor *c, int r, int64_t n) {
    if (c->n_elems != n || c->rank > r) return false;
    for (int i = 0; i + 1 < c->rank; i++)
        if (c->dims[i] != 1) return false;
    return true;
}

/* Whether node id reads x as a product the group can take, filling m. */
static bool member_of(const IrGraph *g, const PassUses *u, uint32_t id, uint32_t x, IrOp op,
                      Member *m) {
    const IrNode *n = &g->nodes[id];
    if (n->dead || n->op != op || n->n_outputs < 1 || n->n_inputs < 2 || n->inputs[0] != x ||
        n->inputs[1] == x)
        return false;
    const IrType *tx = &g->values[x].type;
    uint32_t y = n->outputs[0];
    if (y == IR_NONE || !plain_f32(g, y)) return false;
    int64_t K = tx->dims[tx->rank - 1];
    const IrTensor *w = own_const(g, u, n->inputs[1], id) ? pass_const_f32(g, n->inputs[1]) : NULL;
    if (!w || w->rank != 2) return false;
    memset(m, 0, sizeof *m);
    m->node = id;
    m->w = n->inputs[1];
    m->bias = m->bias_add = IR_NONE;
    m->out = y;
    m->beta = 1.0;
    if (op == IR_OP_GEMM) {
        if (tx->rank != 2 || ir_attr_i(n, IR_ATTR_GEMM_TRANS_A) != 0 ||
            ir_attr_f(n, IR_ATTR_GEMM_ALPHA) != 1.0f)
            return false;
        m->trans_b = ir_attr_i(n, IR_ATTR_GEMM_TRANS_B) != 0;
        if (w->dims[m->trans_b ? 1 : 0] != K) return false;
        m->n = w->dims[m->trans_b ? 0 : 1];
        if (n->n_inputs > 2 && n->inputs[2] != IR_NONE) {
            const IrTensor *c =
                own_const(g, u, n->inputs[2], id) ? pass_const_f32(g, n->inputs[2]) : NULL;
            if (!c || !is_bias(c, 2, m->n)) return false;
            m->bias = n->inputs[2];
            m->beta = ir_attr_f(n, IR_ATTR_GEMM_BETA);
        }
        return true;
    }
    if (w->dims[0] != K) return false;
    m->n = w->dims[1];
    /* a bias Add of a constant along the last axis that alone reads the product */
    uint32_t a = pass_sole_reader(g, u, y);
    if (a == IR_NONE || g->nodes[a].op != IR_OP_ADD) return true;
    uint32_t c = pass_other_input(&g->nodes[a], y), z = g->nodes[a].outputs[0];
    const IrTensor *ct = c != IR_NONE && own_const(g, u, c, a) ? pass_const_f32(g, c) : NULL;
    if (ct && is_bias(ct, g->values[y].type.rank, m->n) && plain_f32(g, z) &&
        ir_type_equal(&g->values[z].type, &g->values[y].type)) {
        m->bias = c;
        m->bias_add = a;
        m->out = z;
    }
    return true;
}

/* A new node of op at the end of the node array (the caller places it), opset of the
 * default domain. */
static uint32_t new_node(IrGraph *g, IrOp op, const char *name, uint32_t n_in, uint32_t n_out) {
    uint32_t id = ir_node_add(g, op, name, n_in, n_out, 0);
    g->nodes[id].opset = (int32_t)pass_default_opset(g);
    return id;
}

/* Replaces the group's members by product, bias and Split, appended to g->nodes; their ids
 * go to out_ids (3 at most), their number is returned. */
static uint32_t fuse_group(IrGraph *g, uint32_t x, IrOp op, const Member *m, uint32_t n_m,
                           uint32_t *out_ids) {
    const IrType *tx = &g->values[x].type;
    int64_t K = tx->dims[tx->rank - 1], N = 0;
    bool any_bias = false;
    for (uint32_t i = 0; i < n_m; i++) {
        N += m[i].n;
        any_bias |= m[i].bias != IR_NONE;
    }
    const char *base = g->nodes[m[0].node].name; /* else the first result's name */
    if (!base || !base[0]) base = g->values[g->nodes[m[0].node].outputs[0]].name;
    /* the weights side by side: (K, N), row k holding every member's row k */
    float *wd, *bd = NULL;
    int64_t wdims[2] = {K, N};
    uint32_t wv = pass_add_const_f32(g, pass_unique_name(g, g->values[m[0].w].name, ".hcat"), 2,
                                     wdims, &wd);
    uint32_t bv = IR_NONE;
    if (any_bias) bv = pass_add_const_f32(g, pass_unique_name(g, base, ".bias"), 1, &N, &bd);
    int64_t col = 0;
    for (uint32_t i = 0; i < n_m; i++) {
        const float *src = pass_const_f32(g, m[i].w)->data;
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < m[i].n; j++)
                wd[k * N + col + j] = m[i].trans_b ? src[j * K + k] : src[k * m[i].n + j];
        if (m[i].bias != IR_NONE) {
            const float *b = pass_const_f32(g, m[i].bias)->data;
            for (int64_t j = 0; j < m[i].n; j++) bd[col + j] = (float)(m[i].beta * (double)b[j]);
        }
        col += m[i].n;
    }
    /* the packed result: x's leading dimensions, N columns */
    IrType ty = g->values[g->nodes[m[0].node].outputs[0]].type;
    ty.dims[ty.rank - 1] = N;
    uint32_t n_ids = 0;
    uint32_t prod = ir_value_add(g, pass_unique_name(g, base, ".packed"), &ty, IR_VALUE_NODE);
    uint32_t pid = new_node(g, op, base, op == IR_OP_GEMM && bv != IR_NONE ? 3 : 2, 1);
    out_ids[n_ids++] = pid;
    g->nodes[pid].inputs[0] = x;
    g->nodes[pid].inputs[1] = wv;
    uint32_t packed = prod;
    if (op == IR_OP_GEMM && bv != IR_NONE) g->nodes[pid].inputs[2] = bv;
    pass_set_output(g, pid, 0, prod);
    if (op == IR_OP_MAT_MUL && bv != IR_NONE) {
        packed = ir_value_add(g, pass_unique_name(g, base, ".packed_bias"), &ty, IR_VALUE_NODE);
        uint32_t aid = new_node(g, IR_OP_ADD, pass_unique_name(g, base, ".bias_add"), 2, 1);
        out_ids[n_ids++] = aid;
        g->nodes[aid].inputs[0] = prod;
        g->nodes[aid].inputs[1] = bv;
        pass_set_output(g, aid, 0, packed);
    }
    /* the Split: sizes as an input from opset 13, an attribute before */
    int32_t opset = (int32_t)pass_default_opset(g);
    uint32_t sid = new_node(g, IR_OP_SPLIT, pass_unique_name(g, base, ".split"),
                            opset >= 13 ? 2 : 1, n_m);
    out_ids[n_ids++] = sid;
    int64_t sizes[HFUSE_MAX_MEMBERS];
    for (uint32_t i = 0; i < n_m; i++) sizes[i] = m[i].n;
    IrNode *s = &g->nodes[sid];
    s->inputs[0] = packed;
    IrAttr *ax = ir_node_attr(s, IR_ATTR_SPLIT_AXIS);
    ax->present = true;
    ax->i = ty.rank - 1;
    if (opset >= 13) {
        int64_t nm = n_m;
        IrTensor *c = ir_tensor_new(g->arena, IR_DTYPE_I64, 1, &nm);
        c->name = pass_unique_name(g, base, ".split_sizes");
        memcpy(c->data, sizes, (size_t)n_m * sizeof *sizes);
        IrType ct = ir_type_tensor(IR_DTYPE_I64, 1, &nm);
        uint32_t cv = ir_value_add(g, c->name, &ct, IR_VALUE_CONST);
        g->values[cv].tensor = c;
        g->values[cv].producer = IR_NONE;
        g->nodes[sid].inputs[1] = cv;
    } else {
        IrAttr *sp = ir_node_attr(s, IR_ATTR_SPLIT_SPLIT);
        sp->present = true;
        sp->n = n_m;
        sp->ints = ir_arena_memdup(g->arena, sizes, (size_t)n_m * sizeof *sizes);
    }
    for (uint32_t i = 0; i < n_m; i++) {
        g->nodes[m[i].node].dead = true;
        if (m[i].bias_add != IR_NONE) g->nodes[m[i].bias_add].dead = true;
        pass_set_output(g, sid, i, m[i].out);
    }
    return n_ids;
}

bool pass_fuse_horizontal(IrGraph *g, Diag *d) {
    (void)d;
    if (g->n_subgraphs) return false; /* bodies' values are typed per copy: left alone */
    PassUses u;
    pass_uses_build(g, &u);
    uint32_t n_orig = g->n_nodes, n_vals = g->n_values; /* what u describes */
    /* per original node: the new nodes that go before it (a group's first member) */
    uint32_t *n_new = calloc(n_orig ? n_orig : 1, sizeof *n_new);
    uint32_t (*ids)[3] = calloc(n_orig ? n_orig : 1, sizeof *ids);
    IR_ASSERT(n_new && ids);
    bool changed = false;
    for (uint32_t x = 0; x < n_vals; x++) {
        if (u.n_reads[x] < 2 || !plain_f32(g, x) || g->values[x].type.rank < 2) continue;
        static const IrOp ops[2] = {IR_OP_MAT_MUL, IR_OP_GEMM};
        for (int o = 0; o < 2; o++) {
            Member m[HFUSE_MAX_MEMBERS];
            uint32_t n_m = 0, lo = UINT32_MAX;
            for (uint32_t r = 0; r < u.n_reads[x] && n_m < HFUSE_MAX_MEMBERS; r++) {
                uint32_t id = u.node[u.first[x] + r];
                bool dup = false; /* a node reading x twice is listed twice */
                for (uint32_t i = 0; i < n_m; i++) dup |= m[i].node == id;
                if (id >= n_orig || dup || !member_of(g, &u, id, x, ops[o], &m[n_m])) continue;
                lo = id < lo ? id : lo;
                n_m++;
            }
            if (n_m < 2) continue;
            /* members in node order: the packed columns follow the model's order */
            for (uint32_t i = 1; i < n_m; i++)
                for (uint32_t j = i; j > 0 && m[j - 1].node > m[j].node; j--) {
                    Member t = m[j];
                    m[j] = m[j - 1];
                    m[j - 1] = t;
                }
            n_new[lo] = fuse_group(g, x, ops[o], m, n_m, ids[lo]);
            changed = true;
        }
    }
    if (changed) {
        PassOrder order = {0};
        for (uint32_t i = 0; i < n_orig; i++) {
            for (uint32_t k = 0; k < n_new[i]; k++) pass_order_push(&order, ids[i][k]);
            if (!g->nodes[i].dead) pass_order_push(&order, i);
        }
        pass_reorder_nodes(g, order.ids, order.n);
        free(order.ids);
    }
    free(n_new);
    free(ids);
    pass_uses_free(&u);
    return changed;
}
