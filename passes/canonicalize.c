/* Canonical forms of data movement, so that the fuse and layout passes see one spelling of
 * what exporters write in several. PyTorch's dynamo exporter, tf2onnx and paddle2onnx move
 * size-1 dimensions with Transposes, split fused projections with Gathers of a constant
 * index behind a Transpose, stack Reshape/Squeeze/Unsqueeze views, reshape around products
 * and write global pools as ReduceMean; TorchScript writes Slices, single Reshapes and
 * GlobalAveragePool. Rules, applied one at a time until none applies (each removes a node
 * or lifts a view above a Transpose or a MatMul, so the loop ends):
 *   view of the same shape             -> its input (Reshape, Flatten, Squeeze, Unsqueeze)
 *   view(view(x))                      -> Reshape(x)                (the inner one read once)
 *   Transpose moving only size-1 dims  -> Reshape
 *   Transpose(Transpose(x))            -> Transpose(x), composed    (the inner one read once)
 *   view(Transpose(x)), the view only adding or removing size-1 dims
 *                                      -> Transpose(Reshape(x))     (the Transpose read once)
 *   Gather(Transpose(x), scalar index) -> Gather(x) and a view, when every reader of the
 *                                         Transpose is such a Gather and the Transpose
 *                                         left after each moves only size-1 dims
 *   Transpose of a constant            -> the transposed constant
 *   view of a constant                 -> the constant in the view's shape (copied where
 *                                         the view is its one reader or it is small)
 *   Gather of a constant at constant indices
 *                                      -> the gathered constant, when every index is in
 *                                         range and it is no larger than the data or small
 *   view(MatMul(A, B)) changing only size-1 batch dims
 *                                      -> MatMul(view(A), view(B)), when A and B come from
 *                                         views or Transposes read by the MatMul alone
 *   ReduceMean/ReduceMax over H and W of (N,C,H,W), keepdims
 *                                      -> GlobalAveragePool/GlobalMaxPool
 * Afterwards Transposes stand next to the products and the attention that can absorb them
 * (fuse-attention reads its operands through permutations), and the pairs meet (layout).
 * Static shapes only; the values keep their names and types (new ones get NAME.canon).
 * requires: static shapes where it rewrites; invalidates: uses, node ids; preserves: types,
 * layouts, quant params. */
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"

#define CANON_MAX_ROUNDS 16 /* rounds beyond 4 per node, for the lifted views */

static void restore_order(IrGraph *g);

static bool is_view(IrOp op) {
    return op == IR_OP_RESHAPE || op == IR_OP_FLATTEN || op == IR_OP_SQUEEZE ||
           op == IR_OP_UNSQUEEZE;
}

static const IrType *type_of(const IrGraph *g, uint32_t v) { return &g->values[v].type; }

static bool static_tensor(const IrGraph *g, uint32_t v) {
    const IrType *t = type_of(g, v);
    if (t->kind != IR_TYPE_TENSOR || t->rank < 0 || !ir_type_is_static(t) ||
        g->values[v].quant != NULL || t->layout != IR_LAYOUT_PLAIN)
        return false;
    for (int i = 0; i < t->rank; i++) /* a 0 in a Reshape's shape copies the input's dim */
        if (t->dims[i] < 1) return false;
    return true;
}

/* The dims of t other than 1, in order; returns their count. */
static int big_dims(const IrType *t, int64_t *out) {
    int n = 0;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] != 1) out[n++] = t->dims[i];
    return n;
}

/* Whether a and b differ only in size-1 dimensions. */
static bool same_big_dims(const IrType *a, const IrType *b) {
    int64_t da[IR_MAX_RANK], db[IR_MAX_RANK];
    int na = big_dims(a, da), nb = big_dims(b, db);
    return na == nb && memcmp(da, db, (size_t)na * sizeof *da) == 0;
}

/* A view node n (live, one input read, static in and out): its data input, else IR_NONE. */
static uint32_t view_input(const IrGraph *g, const IrNode *n) {
    if (n->dead || !is_view((IrOp)n->op) || n->n_outputs < 1) return IR_NONE;
    uint32_t x = n->inputs[0], y = n->outputs[0];
    if (x == IR_NONE || y == IR_NONE || !static_tensor(g, x) || !static_tensor(g, y))
        return IR_NONE;
    return x;
}

/* The permutation of Transpose n (rank r), or false when malformed. */
static bool perm_of(const IrNode *n, int r, int64_t *perm) {
    uint32_t np;
    const int64_t *p = ir_attr_ints(n, IR_ATTR_TRANSPOSE_PERM, &np);
    if (np != 0 && np != (uint32_t)r) return false;
    bool seen[IR_MAX_RANK] = {false};
    for (int i = 0; i < r; i++) {
        perm[i] = np ? p[i] : r - 1 - i;
        if (perm[i] < 0 || perm[i] >= r || seen[perm[i]]) return false;
        seen[perm[i]] = true;
    }
    return true;
}

/* A live Transpose with static f32-or-any input and output: its input, else IR_NONE. */
static uint32_t transpose_input(const IrGraph *g, const IrNode *n, int64_t *perm) {
    if (n->dead || n->op != IR_OP_TRANSPOSE || n->n_outputs < 1) return IR_NONE;
    uint32_t x = n->inputs[0], y = n->outputs[0];
    if (x == IR_NONE || y == IR_NONE || !static_tensor(g, x) || !static_tensor(g, y))
        return IR_NONE;
    return perm_of(n, type_of(g, x)->rank, perm) ? x : IR_NONE;
}

/* The producer node of v when it is a live node, else IR_NONE. */
static uint32_t producer_of(const IrGraph *g, uint32_t v) {
    if (v == IR_NONE || g->values[v].kind != IR_VALUE_NODE) return IR_NONE;
    uint32_t id = g->values[v].producer;
    return id != IR_NONE && id < g->n_nodes && !g->nodes[id].dead ? id : IR_NONE;
}

/* A new i64 constant of rank 1 (a Reshape's shape). */
static uint32_t add_shape_const(IrGraph *g, const char *base, const IrType *t) {
    int64_t n = t->rank;
    IrTensor *c = ir_tensor_new(g->arena, IR_DTYPE_I64, 1, &n);
    const char *name = pass_unique_name(g, base, ".shape");
    c->name = name;
    memcpy(c->data, t->dims, (size_t)t->rank * sizeof(int64_t));
    IrType ty = ir_type_tensor(IR_DTYPE_I64, 1, &n);
    uint32_t v = ir_value_add(g, name, &ty, IR_VALUE_CONST);
    g->values[v].tensor = c;
    g->values[v].producer = IR_NONE;
    return v;
}

/* Node `slot` becomes Reshape(x) to the type of out, writing out, named name (NULL: the
 * node's own name). */
static void make_reshape(IrGraph *g, uint32_t slot, uint32_t x, uint32_t out,
                         const char *name) {
    if (!name) name = g->nodes[slot].name;
    uint32_t shape = add_shape_const(g, g->values[out].name, type_of(g, out));
    IrNode *r = pass_replace_node(g, slot, IR_OP_RESHAPE, name, 2, 1);
    r->inputs[0] = x;
    r->inputs[1] = shape;
    pass_set_output(g, slot, 0, out);
}

/* Node `slot` becomes Transpose(x, perm) writing out, named name (NULL: its own). */
static void make_transpose(IrGraph *g, uint32_t slot, uint32_t x, const int64_t *perm, int r,
                           uint32_t out, const char *name) {
    if (!name) name = g->nodes[slot].name;
    IrNode *t = pass_replace_node(g, slot, IR_OP_TRANSPOSE, name, 1, 1);
    t->inputs[0] = x;
    IrAttr *a = ir_node_attr(t, IR_ATTR_TRANSPOSE_PERM);
    a->present = true;
    a->n = (uint32_t)r;
    a->ints = ir_arena_memdup(g->arena, perm, (size_t)r * sizeof *perm);
    pass_set_output(g, slot, 0, out);
}

/* Whether perm (rank r, on input dims) keeps the order of the dims other than 1. */
static bool moves_only_unit_dims(const IrType *in, const int64_t *perm, int r) {
    int64_t last = -1;
    for (int i = 0; i < r; i++) {
        if (in->dims[perm[i]] == 1) continue;
        if (perm[i] < last) return false;
        last = perm[i];
    }
    return true;
}

/* A value named after base with type t, produced by nobody yet. */
static uint32_t new_value(IrGraph *g, uint32_t base, const IrType *t) {
    const char *name = pass_unique_name(g, g->values[base].name, ".canon");
    return ir_value_add(g, name, t, IR_VALUE_NODE);
}

/* The readers of v among live nodes (ids into out, at most max); their count, or -1 when
 * v is a graph output, read by a subgraph, or read more than max times. */
static int readers_of(const IrGraph *g, const uint32_t *uses, uint32_t v, uint32_t *out,
                      int max) {
    if (pass_is_graph_output(g, v)) return -1;
    int n = 0;
    uint32_t reads = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *m = &g->nodes[i];
        if (m->dead) continue;
        bool reads_v = false;
        for (uint32_t k = 0; k < m->n_inputs; k++)
            if (m->inputs[k] == v) reads_v = true, reads++;
        if (reads_v) {
            if (n == max) return -1;
            out[n++] = i;
        }
    }
    return reads == uses[v] ? n : -1; /* a use not by a live node: subgraph or output */
}

/* Gather(., scalar constant index) on axis: the normalized axis, else -1. */
static int scalar_gather_axis(const IrGraph *g, const IrNode *n, int r) {
    if (n->dead || n->op != IR_OP_GATHER || n->n_inputs != 2) return -1;
    const IrValue *idx = &g->values[n->inputs[1]];
    if (idx->kind != IR_VALUE_CONST || !idx->tensor || idx->tensor->rank != 0 ||
        (idx->tensor->dtype != IR_DTYPE_I64 && idx->tensor->dtype != IR_DTYPE_I32))
        return -1;
    int64_t a = ir_attr_i(n, IR_ATTR_GATHER_AXIS);
    if (a < 0) a += r;
    return a >= 0 && a < r ? (int)a : -1;
}

/* t without dimension axis (what a Gather of one index leaves). */
static IrType without_axis(const IrType *t, int axis) {
    IrType w = *t;
    for (int i = axis; i + 1 < t->rank; i++) w.dims[i] = t->dims[i + 1];
    w.rank = (int8_t)(t->rank - 1);
    return w;
}

#define CANON_MAX_GATHERS 16 /* Gathers behind one Transpose: q, k, v and a few more */

/* Every reader of Transpose t's output is a scalar Gather: each reads t's input on the
 * permuted axis, followed by a view when the rest of the permutation moves only size-1
 * dims. Returns whether it rewrote. */
static bool gathers_through_transpose(IrGraph *g, const uint32_t *uses, uint32_t t) {
    int64_t perm[IR_MAX_RANK];
    uint32_t x = transpose_input(g, &g->nodes[t], perm);
    if (x == IR_NONE) return false;
    uint32_t y = g->nodes[t].outputs[0];
    int r = type_of(g, x)->rank;
    uint32_t rd[CANON_MAX_GATHERS];
    int n = readers_of(g, uses, y, rd, CANON_MAX_GATHERS);
    if (n < 1) return false;
    for (int k = 0; k < n; k++) {
        int a = scalar_gather_axis(g, &g->nodes[rd[k]], r);
        if (a < 0 || g->nodes[rd[k]].inputs[0] != y || g->nodes[rd[k]].inputs[1] == y)
            return false;
        /* the permutation left: y's dims but a, as dims of x without perm[a] */
        IrType w = without_axis(type_of(g, x), (int)perm[a]);
        int64_t rest[IR_MAX_RANK];
        int j = 0;
        for (int i = 0; i < r; i++)
            if (i != a) rest[j++] = perm[i] > perm[a] ? perm[i] - 1 : perm[i];
        if (!moves_only_unit_dims(&w, rest, r - 1)) return false;
    }
    for (int k = 0; k < n; k++) {
        IrNode *gn = &g->nodes[rd[k]];
        int a = scalar_gather_axis(g, gn, r);
        uint32_t z = gn->outputs[0], idx = gn->inputs[1];
        IrType w = without_axis(type_of(g, x), (int)perm[a]);
        uint32_t wv = new_value(g, z, &w);
        const char *name = gn->name;
        int32_t opset = gn->opset;
        uint32_t ng = ir_node_add(g, IR_OP_GATHER, name, 2, 1, 0); /* may move g->nodes */
        IrNode *gg = &g->nodes[ng];
        gg->opset = opset;
        gg->inputs[0] = x;
        gg->inputs[1] = idx;
        IrAttr *ax = ir_node_attr(gg, IR_ATTR_GATHER_AXIS);
        ax->present = true;
        ax->i = perm[a];
        pass_set_output(g, ng, 0, wv);
        make_reshape(g, rd[k], wv, z, NULL); /* before its input's producer: caller reorders */
    }
    g->nodes[t].dead = true;
    return true;
}

/* ReduceMean or ReduceMax over both spatial axes of a float (N,C,H,W) tensor, keepdims:
 * the GlobalAveragePool or GlobalMaxPool it is (the dynamo exporter writes
 * nn.AdaptiveAvgPool2d(1) so; the layout pass keeps pools channels-last, not reductions). */
static IrOp global_pool_of(const IrGraph *g, const IrNode *n) {
    bool mean = n->op == IR_OP_REDUCE_MEAN;
    if (n->dead || (!mean && n->op != IR_OP_REDUCE_MAX) || n->n_outputs < 1) return IR_OP_COUNT;
    uint32_t x = n->inputs[0];
    if (x == IR_NONE || !static_tensor(g, x) || !static_tensor(g, n->outputs[0]))
        return IR_OP_COUNT;
    const IrType *t = type_of(g, x);
    if (t->rank != 4 || /* rank 3: a LayerNorm's mean over the last axis, for fuse-norm */
        (t->dtype != IR_DTYPE_F32 && t->dtype != IR_DTYPE_F64 && t->dtype != IR_DTYPE_F16))
        return IR_OP_COUNT;
    if (ir_attr_i(n, mean ? IR_ATTR_REDUCE_MEAN_KEEPDIMS : IR_ATTR_REDUCE_MAX_KEEPDIMS) != 1)
        return IR_OP_COUNT;
    int64_t axes[IR_MAX_RANK];
    uint32_t na = 0;
    if (n->n_inputs > 1 && n->inputs[1] != IR_NONE) { /* opset 18: axes as an input */
        const IrValue *a = &g->values[n->inputs[1]];
        if (a->kind != IR_VALUE_CONST || !a->tensor || a->tensor->dtype != IR_DTYPE_I64 ||
            a->tensor->n_elems > IR_MAX_RANK)
            return IR_OP_COUNT;
        na = (uint32_t)a->tensor->n_elems;
        memcpy(axes, a->tensor->data, na * sizeof *axes);
    } else {
        const int64_t *ax =
            ir_attr_ints(n, mean ? IR_ATTR_REDUCE_MEAN_AXES : IR_ATTR_REDUCE_MAX_AXES, &na);
        if (na > IR_MAX_RANK) return IR_OP_COUNT;
        memcpy(axes, ax, na * sizeof *axes);
    }
    bool seen[IR_MAX_RANK] = {false};
    for (uint32_t k = 0; k < na; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + t->rank : axes[k];
        if (a < 2 || a >= t->rank || seen[a]) return IR_OP_COUNT;
        seen[a] = true;
    }
    if (na != (uint32_t)t->rank - 2) return IR_OP_COUNT; /* none given: all axes */
    return mean ? IR_OP_GLOBAL_AVERAGE_POOL : IR_OP_GLOBAL_MAX_POOL;
}

/* The data of constant v where a fold may move it: a tensor with data, whole bytes an element;
 * else NULL. */
static const IrTensor *foldable_constant(const IrGraph *g, uint32_t v) {
    const IrValue *val = &g->values[v];
    if (val->kind != IR_VALUE_CONST || !val->tensor || !val->tensor->data) return NULL;
    uint32_t bits = ir_dtype_bits((IrDType)val->tensor->dtype);
    return bits >= 8 && bits % 8 == 0 ? val->tensor : NULL;
}

/* A new constant of dtype dt in y's place (its type, its name + ".const"); *data: its bytes,
 * for the caller to fill. */
static uint32_t new_constant(IrGraph *g, uint32_t y, IrDType dt, uint8_t **data) {
    IrType ty = *type_of(g, y);
    IrTensor *c = ir_tensor_new(g->arena, dt, ty.rank, ty.dims);
    c->name = pass_unique_name(g, g->values[y].name, ".const");
    uint32_t v = ir_value_add(g, c->name, &ty, IR_VALUE_CONST);
    g->values[v].tensor = c;
    g->values[v].producer = IR_NONE;
    *data = c->data;
    return v;
}

/* Transpose of constant x: writes the permuted constant (named after the output) into
 * *out; false for data it does not move (strings, sub-byte types, over IR_MAX_RANK). */
static bool transpose_constant(IrGraph *g, uint32_t x, const int64_t *perm, uint32_t y,
                               uint32_t *out) {
    const IrTensor *t = foldable_constant(g, x);
    if (!t || t->rank < 1) return false;
    size_t es = ir_dtype_bits((IrDType)t->dtype) / 8;
    int r = t->rank;
    int64_t od[IR_MAX_RANK], istride[IR_MAX_RANK], idx[IR_MAX_RANK] = {0};
    for (int a = 0; a < r; a++)
        od[a] = t->dims[perm[a]];
    istride[r - 1] = 1;
    for (int a = r - 2; a >= 0; a--)
        istride[a] = istride[a + 1] * t->dims[a + 1];
    uint8_t *dst;
    *out = new_constant(g, y, (IrDType)t->dtype, &dst);
    const uint8_t *src = t->data;
    for (int64_t k = 0; k < t->n_elems; k++) { /* odometer over the output's dims */
        int64_t off = 0;
        for (int a = 0; a < r; a++)
            off += idx[a] * istride[perm[a]];
        memcpy(dst + (size_t)k * es, src + (size_t)off * es, es);
        for (int a = r - 1; a >= 0 && ++idx[a] == od[a]; a--)
            idx[a] = 0;
    }
    return true;
}

/* MatMul y = A x B read only by a view z that keeps y's last two dims and changes its batch
 * dims only in size-1 dims (tf2onnx's Tensordot Reshapes around a product, the rank-3
 * scores it reshapes to rank 4): the view moves onto the operands that carry the batch, so
 * that it meets the views and Transposes above them. Only when each such operand comes
 * from a view or a Transpose read by this MatMul alone (no node is added for good). */
static bool lift_view_over_matmul(IrGraph *g, const uint32_t *uses, uint32_t vid) {
    const IrNode *v = &g->nodes[vid];
    uint32_t y = v->inputs[0], z = v->outputs[0];
    uint32_t m = producer_of(g, y);
    if (m == IR_NONE || g->nodes[m].op != IR_OP_MAT_MUL || uses[y] != 1 ||
        pass_is_graph_output(g, y))
        return false;
    const IrType *ty = type_of(g, y), *tz = type_of(g, z);
    int r = ty->rank, s = tz->rank;
    if (r < 2 || s < 2 || ty->dims[r - 1] != tz->dims[s - 1] || ty->dims[r - 2] != tz->dims[s - 2])
        return false;
    IrType by = *ty, bz = *tz; /* the batch dims */
    by.rank = (int8_t)(r - 2);
    bz.rank = (int8_t)(s - 2);
    if (!same_big_dims(&by, &bz)) return false;
    uint32_t ops[2], lift[2] = {false, false};
    for (int k = 0; k < 2; k++) {
        ops[k] = g->nodes[m].inputs[k];
        if (ops[k] == IR_NONE || !static_tensor(g, ops[k])) return false;
        const IrType *to = type_of(g, ops[k]);
        if (to->rank == 2 && (r > 2 || k == 1)) continue; /* broadcast: stays */
        if (to->rank != r) return false;
        for (int a = 0; a + 2 < r; a++)
            if (to->dims[a] != ty->dims[a]) return false;
        uint32_t p = producer_of(g, ops[k]);
        if (p == IR_NONE || uses[ops[k]] != 1 || pass_is_graph_output(g, ops[k]) ||
            (!is_view((IrOp)g->nodes[p].op) && g->nodes[p].op != IR_OP_TRANSPOSE))
            return false;
        lift[k] = true;
    }
    if (!lift[0] && !lift[1]) return false;
    /* the new operand views are placed where the view and the MatMul were: inputs first */
    uint32_t nv = 0, newops[2] = {ops[0], ops[1]};
    for (int k = 0; k < 2; k++) {
        if (!lift[k]) continue;
        const IrType *to = type_of(g, ops[k]);
        IrType tn = *tz;
        tn.dtype = to->dtype;
        tn.dims[s - 2] = to->dims[r - 2];
        tn.dims[s - 1] = to->dims[r - 1];
        newops[k] = new_value(g, ops[k], &tn);
        nv++;
    }
    /* one lifted operand: the view's slot holds the MatMul, the MatMul's slot the view; two:
     * a Reshape node is added and the order restored by the caller */
    uint32_t mslot = m, vslot = vid;
    uint32_t first = IR_NONE;
    const char *vname = g->nodes[vslot].name, *mname = g->nodes[mslot].name;
    for (int k = 0; k < 2; k++) {
        if (!lift[k]) continue;
        if (first == IR_NONE) {
            make_reshape(g, mslot, ops[k], newops[k], vname);
            first = k;
        } else {
            uint32_t extra = ir_node_add(g, IR_OP_RESHAPE, g->nodes[vslot].name, 2, 1, 0);
            g->nodes[extra].opset = g->nodes[mslot].opset;
            make_reshape(g, extra, ops[k], newops[k], vname);
        }
    }
    IrNode *mm = pass_replace_node(g, vslot, IR_OP_MAT_MUL, mname, 2, 1);
    mm->inputs[0] = newops[0];
    mm->inputs[1] = newops[1];
    pass_set_output(g, vslot, 0, z);
    (void)nv;
    return true;
}

/* Topological order again after a rewrite that appended nodes (the Gathers). */
static void restore_order(IrGraph *g) {
    PassOrder o = {0};
    bool *done = calloc(g->n_values ? g->n_values : 1, sizeof *done);
    bool *placed = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *placed);
    IR_ASSERT(done && placed);
    for (uint32_t v = 0; v < g->n_values; v++) done[v] = g->values[v].kind != IR_VALUE_NODE;
    for (bool progress = true; progress;) {
        progress = false;
        for (uint32_t i = 0; i < g->n_nodes; i++) {
            const IrNode *m = &g->nodes[i];
            if (m->dead || placed[i]) continue;
            bool ready = true;
            for (uint32_t k = 0; k < m->n_inputs && ready; k++)
                ready = m->inputs[k] == IR_NONE || done[m->inputs[k]];
            if (!ready) continue;
            placed[i] = progress = true;
            pass_order_push(&o, i);
            for (uint32_t k = 0; k < m->n_outputs; k++)
                if (m->outputs[k] != IR_NONE) done[m->outputs[k]] = true;
        }
    }
    pass_reorder_nodes(g, o.ids, o.n);
    free(o.ids);
    free(done);
    free(placed);
}

/* A view of a constant (exporters' Unsqueeze of a Range of positions, a Reshape of a
 * weight; view_input has checked both static and without quantization parameters): the
 * constant itself in the view's shape. Copied only where the view is its one reader, or it
 * is small, so that a shared weight is not stored twice. */
#define CANON_FOLD_COPY_MAX 65536 /* bytes */
static bool view_constant(IrGraph *g, const uint32_t *uses, uint32_t x, uint32_t y, uint32_t *out) {
    const IrTensor *t = foldable_constant(g, x);
    if (!t || pass_is_graph_output(g, y) || (uses[x] != 1 && t->size_bytes > CANON_FOLD_COPY_MAX))
        return false;
    uint8_t *dst;
    *out = new_constant(g, y, (IrDType)t->dtype, &dst);
    memcpy(dst, t->data, t->size_bytes);
    return true;
}

/* Index k of it (int64 or int32), a negative one counted from dim. */
static int64_t gather_index(const IrTensor *it, int64_t k, int64_t dim) {
    int64_t i =
        it->dtype == IR_DTYPE_I64 ? ((const int64_t *)it->data)[k] : ((const int32_t *)it->data)[k];
    return i < 0 ? i + dim : i;
}

/* Gather of constant data at constant indices (position embeddings at positions that a
 * Range made): the rows gathered, as a constant, where that is no larger than the data or
 * small, and every index is in range (else the kernel reports it at run time). */
static bool gather_constant(IrGraph *g, const IrNode *n, uint32_t *out) {
    if (n->op != IR_OP_GATHER || n->n_inputs != 2 || n->n_outputs < 1) return false;
    uint32_t x = n->inputs[0], ix = n->inputs[1], y = n->outputs[0];
    const IrTensor *t = foldable_constant(g, x), *it = foldable_constant(g, ix);
    if (!t || !it || g->values[x].quant || g->values[ix].quant || pass_is_graph_output(g, y) ||
        !static_tensor(g, y) || t->rank < 1 ||
        (it->dtype != IR_DTYPE_I64 && it->dtype != IR_DTYPE_I32))
        return false;
    int64_t axis = ir_attr_i(n, IR_ATTR_GATHER_AXIS);
    if (axis < 0) axis += t->rank;
    if (axis < 0 || axis >= t->rank) return false;
    size_t es = ir_dtype_bits((IrDType)t->dtype) / 8;
    int64_t outer = 1, inner = 1, dim = t->dims[axis];
    for (int a = 0; a < axis; a++)
        outer *= t->dims[a];
    for (int a = (int)axis + 1; a < t->rank; a++)
        inner *= t->dims[a];
    size_t bytes = (size_t)(outer * it->n_elems * inner) * es;
    const IrType *ty = type_of(g, y);
    int64_t n_out = 1;
    for (int a = 0; a < ty->rank; a++)
        n_out *= ty->dims[a];
    if ((int64_t)(bytes / es) != n_out || (bytes > t->size_bytes && bytes > CANON_FOLD_COPY_MAX))
        return false;
    for (int64_t k = 0; k < it->n_elems; k++) { /* every index in range, before any change */
        int64_t i = gather_index(it, k, dim);
        if (i < 0 || i >= dim) return false;
    }
    uint8_t *dst;
    *out = new_constant(g, y, (IrDType)t->dtype, &dst);
    const uint8_t *src = t->data;
    for (int64_t k = 0; k < it->n_elems; k++) {
        int64_t i = gather_index(it, k, dim);
        for (int64_t o = 0; o < outer; o++)
            memcpy(dst + ((size_t)(o * it->n_elems + k) * inner) * es,
                   src + ((size_t)(o * dim + i) * inner) * es, (size_t)inner * es);
    }
    return true;
}

/* Applies the first rule that matches (use counts are exact for each); whether one did. */
static bool canon_once(IrGraph *g, const uint32_t *uses) {
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        IrNode *n = &g->nodes[i];
        if (n->dead) continue;
        int64_t perm[IR_MAX_RANK];
        IrOp pool = global_pool_of(g, n);
        if (pool != IR_OP_COUNT) {
            uint32_t px = n->inputs[0], py = n->outputs[0];
            IrNode *gp = pass_replace_node(g, i, pool, n->name, 1, 1);
            gp->inputs[0] = px;
            pass_set_output(g, i, 0, py);
            return true;
        }
        uint32_t x = view_input(g, n);
        if (x != IR_NONE) {
            uint32_t y = n->outputs[0];
            /* a view of the same shape */
            if (ir_type_equal(type_of(g, x), type_of(g, y)) && !pass_is_graph_output(g, y)) {
                ir_replace_uses(g, y, x);
                n->dead = true;
                return true;
            }
            if (lift_view_over_matmul(g, uses, i)) {
                restore_order(g);
                return true;
            }
            uint32_t folded;
            if (view_constant(g, uses, x, y, &folded)) {
                ir_replace_uses(g, y, folded);
                g->nodes[i].dead = true;
                return true;
            }
            uint32_t p = producer_of(g, x);
            if (p == IR_NONE || uses[x] != 1 || pass_is_graph_output(g, x)) continue;
            /* a view of a view */
            uint32_t xx = view_input(g, &g->nodes[p]);
            if (xx != IR_NONE) {
                g->nodes[p].dead = true;
                make_reshape(g, i, xx, y, NULL);
                return true;
            }
            /* a size-1 view of a Transpose: the view first */
            uint32_t tx = transpose_input(g, &g->nodes[p], perm);
            if (tx == IR_NONE || !same_big_dims(type_of(g, x), type_of(g, y))) continue;
            const IrType *tin = type_of(g, tx), *tout = type_of(g, y);
            /* x' = tx's dims other than 1 in order, then as many 1s as y has */
            IrType xp = *tin;
            int rank_in = tin->rank, nb = 0, ones = 0;
            int64_t pos_of[IR_MAX_RANK]; /* tx axis -> its place among those dims */
            for (int a = 0; a < rank_in; a++)
                if (tin->dims[a] != 1) pos_of[a] = nb, xp.dims[nb++] = tin->dims[a];
            for (int j = 0; j < tout->rank; j++) ones += tout->dims[j] == 1;
            for (int j = 0; j < ones; j++) xp.dims[nb + j] = 1;
            xp.rank = (int8_t)(nb + ones);
            /* y's dims other than 1, in order, are tx's axes perm[a] */
            int64_t order[IR_MAX_RANK], newperm[IR_MAX_RANK];
            int no = 0, bi = 0, oi = 0;
            for (int a = 0; a < rank_in; a++)
                if (tin->dims[perm[a]] != 1) order[no++] = pos_of[perm[a]];
            for (int j = 0; j < tout->rank; j++)
                newperm[j] = tout->dims[j] == 1 ? nb + oi++ : order[bi++];
            uint32_t xv = new_value(g, x, &xp);
            const char *tname = g->nodes[p].name, *vname = g->nodes[i].name;
            make_reshape(g, p, tx, xv, vname); /* p comes first: the view */
            make_transpose(g, i, xv, newperm, tout->rank, y, tname);
            return true;
        }
        uint32_t gathered;
        if (gather_constant(g, n, &gathered)) {
            ir_replace_uses(g, n->outputs[0], gathered);
            g->nodes[i].dead = true;
            return true;
        }
        x = transpose_input(g, n, perm);
        if (x == IR_NONE) continue;
        uint32_t y = n->outputs[0];
        int r = type_of(g, x)->rank;
        uint32_t folded;
        if (!pass_is_graph_output(g, y) && transpose_constant(g, x, perm, y, &folded)) {
            ir_replace_uses(g, y, folded);
            n->dead = true;
            return true;
        }
        if (moves_only_unit_dims(type_of(g, x), perm, r)) {
            bool identity = true;
            for (int a = 0; a < r; a++) identity &= perm[a] == a;
            if (identity && pass_is_graph_output(g, y)) continue;
            if (identity) {
                ir_replace_uses(g, y, x);
                n->dead = true;
            } else {
                make_reshape(g, i, x, y, NULL);
            }
            return true;
        }
        uint32_t p = producer_of(g, x);
        int64_t inner[IR_MAX_RANK];
        uint32_t xx = p != IR_NONE && uses[x] == 1 && !pass_is_graph_output(g, x)
                          ? transpose_input(g, &g->nodes[p], inner)
                          : IR_NONE;
        if (xx != IR_NONE) { /* y[a] = x[perm[a]] = xx[inner[perm[a]]] */
            int64_t both[IR_MAX_RANK];
            for (int a = 0; a < r; a++) both[a] = inner[perm[a]];
            g->nodes[p].dead = true;
            make_transpose(g, i, xx, both, r, y, NULL);
            return true;
        }
        if (gathers_through_transpose(g, uses, i)) {
            restore_order(g);
            return true;
        }
    }
    return false;
}

bool pass_canonicalize(IrGraph *g, Diag *d) {
    (void)d;
    if (g->n_subgraphs) return false; /* loop bodies keep their spelling */
    bool changed = false;
    /* each rewrite removes a node or lifts a view above a Transpose: bounded */
    for (uint32_t round = 0, max = 4 * g->n_nodes + CANON_MAX_ROUNDS; round < max; round++) {
        uint32_t *uses = ir_use_counts(g);
        bool c = canon_once(g, uses);
        free(uses);
        if (!c) break;
        changed = true;
    }
    if (changed) ir_graph_compact(g);
    return changed;
}
