/* Lowers sequences and optionals to plain tensors at compile time, for backends that need a
 * static memory plan. Every sequence value is tracked as a list of tensor values and every
 * optional as present (with its element) or absent; the container ops become tensor ops
 * (Split, Concat, Unsqueeze, Identity, constants), SequenceMap and Loops over sequences are
 * unrolled, and sequence or optional graph inputs and outputs become one tensor per element
 * (NAME_0, NAME_1...). What cannot be resolved at compile time is refused, naming the node.
 * requires: nothing; invalidates: node ids, uses; preserves: layouts, quant params. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"

#define LOWER_MAX_UNROLL 1024  /* copies of an unrolled body: code grows with each one */

/* ---- the compile-time picture of a container value -------------------------------- */

enum { BOX_NONE = 0, BOX_SEQ, BOX_OPT };

/* BOX_SEQ: n elements (tensor value ids). BOX_OPT: absent, or present with a tensor
 * (inner_seq false, elems[0]) or a sequence (inner_seq true, n elems). */
typedef struct Box {
    uint8_t kind;
    bool present;
    bool inner_seq;
    uint32_t n;
    const uint32_t *elems;
} Box;

typedef struct Lower {
    IrGraph *g;
    Diag *d;
    Box *box; /* per value id of g */
    uint32_t cap_box;
    PassOrder order; /* the rebuilt node order (node ids of g) */
    bool failed;
} Lower;

static const Box box_none;

static const Box *box_of(const Lower *L, uint32_t v) {
    return v != IR_NONE && v < L->cap_box ? &L->box[v] : &box_none;
}

static void box_set(Lower *L, uint32_t v, Box b) {
    if (v >= L->cap_box) {
        uint32_t cap = L->cap_box ? L->cap_box : 64;
        while (cap <= v) cap *= 2;
        Box *nb = realloc(L->box, cap * sizeof *nb);
        IR_ASSERT(nb);
        memset(nb + L->cap_box, 0, (cap - L->cap_box) * sizeof *nb);
        L->box = nb;
        L->cap_box = cap;
    }
    L->box[v] = b;
}

static bool refuse(Lower *L, uint32_t node, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static bool refuse(Lower *L, uint32_t node, const char *fmt, ...) {
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    ir_node_diag(L->d, DIAG_ERROR, &L->g->nodes[node], ": %s", why);
    L->failed = true;
    return false;
}

/* ---- small builders ---------------------------------------------------------------- */

/* base, or base_K with the smallest K that makes it unique in g */
static const char *fresh_name(IrGraph *g, const char *base) { return pass_fresh_name(g, base, '_'); }



static uint32_t add_const(Lower *L, const char *base, IrTensor *t) {
    IrGraph *g = L->g;
    IrType ty = ir_type_tensor((IrDType)t->dtype, t->rank, t->dims);
    uint32_t v = ir_value_add(g, fresh_name(g, base), &ty, IR_VALUE_CONST);
    g->values[v].tensor = t;
    return v;
}

static uint32_t add_const_i64(Lower *L, const char *base, int rank, const int64_t *vals,
                              int64_t n) {
    int64_t dims[1] = {n};
    IrTensor *t = ir_tensor_new(L->g->arena, IR_DTYPE_I64, rank, dims);
    if (n) memcpy(t->data, vals, (size_t)n * sizeof(int64_t));
    return add_const(L, base, t);
}

/* Turns value v (the output of a node that goes away) into a constant of data t. */
static void make_const(IrGraph *g, uint32_t v, IrTensor *t) {
    IrValue *val = &g->values[v];
    val->kind = IR_VALUE_CONST;
    val->producer = IR_NONE;
    val->tensor = t;
    val->type = ir_type_tensor((IrDType)t->dtype, t->rank, t->dims);
}

/* A new node of g at the end of its arrays (placed by emit), with the model's opset. */
static uint32_t new_node(Lower *L, IrOp op, const char *name, uint32_t n_in, uint32_t n_out) {
    uint32_t id = ir_node_add(L->g, op, name, n_in, n_out, 0);
    L->g->nodes[id].opset = pass_default_opset(L->g);
    return id;
}

/* out = Identity(x), emitted now. */
static void emit_identity(Lower *L, const char *name, uint32_t x, uint32_t out) {
    uint32_t id = new_node(L, IR_OP_IDENTITY, name, 1, 1);
    L->g->nodes[id].inputs[0] = x;
    pass_set_output(L->g, id, 0, out);
    pass_order_push(&L->order, id);
}

/* A fresh value that holds the result of copying x (Identity), named name. */
static uint32_t emit_copy(Lower *L, const char *name, uint32_t x) {
    IrGraph *g = L->g;
    IrType t = pass_copy_type(&g->values[x].type);
    uint32_t out = ir_value_add(g, fresh_name(g, name), &t, IR_VALUE_NODE);
    emit_identity(L, name, x, out);
    return out;
}

/* The integer in constant value v (one element of int32/int64), read through a Constant
 * node of g too. */
static bool const_int(const IrGraph *g, uint32_t v, int64_t *out) {
    if (v == IR_NONE || v >= g->n_values) return false;
    const IrValue *val = &g->values[v];
    const IrTensor *t = NULL;
    if (val->kind == IR_VALUE_CONST) t = val->tensor;
    else if (val->kind == IR_VALUE_NODE && val->producer != IR_NONE) {
        const IrNode *n = &g->nodes[val->producer];
        if (n->op != IR_OP_CONSTANT) return false;
        const IrAttr *a = ir_node_attr(n, IR_ATTR_CONSTANT_VALUE);
        if (a->present && a->tensors) t = a->tensors;
        a = ir_node_attr(n, IR_ATTR_CONSTANT_VALUE_INT);
        if (a->present) {
            *out = a->i;
            return true;
        }
    }
    if (!t || t->n_elems != 1 || !t->data) return false;
    if (t->dtype == IR_DTYPE_I64) memcpy(out, t->data, sizeof *out);
    else if (t->dtype == IR_DTYPE_I32) {
        int32_t x;
        memcpy(&x, t->data, sizeof x);
        *out = x;
    } else if (t->dtype == IR_DTYPE_BOOL || t->dtype == IR_DTYPE_U8) {
        *out = ((const uint8_t *)t->data)[0];
    } else {
        return false;
    }
    return true;
}

static uint32_t *elems_alloc(IrGraph *g, uint32_t n) {
    return ir_arena_alloc(g->arena, (n ? n : 1) * sizeof(uint32_t));
}

/* ---- the walk ---------------------------------------------------------------------- */

static void lower_node(Lower *L, uint32_t id);
static bool lower_graph(IrGraph *g, Diag *d, bool root);

/* Whether g (or a graph below it) has a sequence or optional value. */
static bool graph_has_containers(const IrGraph *g) {
    for (uint32_t v = 0; v < g->n_values; v++)
        if (ir_type_is_container(&g->values[v].type)) return true;
    for (uint32_t s = 0; s < g->n_subgraphs; s++)
        if (graph_has_containers(g->subgraphs[s])) return true;
    return false;
}

static bool node_has_containers(const Lower *L, const IrNode *n) {
    for (uint32_t i = 0; i < n->n_inputs; i++) {
        uint32_t v = n->inputs[i];
        if (v == IR_NONE) continue;
        if (box_of(L, v)->kind != BOX_NONE || ir_type_is_container(&L->g->values[v].type))
            return true;
    }
    for (uint32_t i = 0; i < n->n_outputs; i++)
        if (n->outputs[i] != IR_NONE && ir_type_is_container(&L->g->values[n->outputs[i]].type))
            return true;
    return false;
}

static const IrGraph *node_subgraph(const IrGraph *g, const IrNode *n, IrAttrId id) {
    const IrAttr *a = ir_node_attr(n, id);
    if (!a->present || !a->graphs || a->graphs[0] >= g->n_subgraphs) return NULL;
    return g->subgraphs[a->graphs[0]];
}

/* The sequence that input k of node id holds at compile time, or NULL (refused). */
static const Box *seq_input(Lower *L, uint32_t id, uint32_t k) {
    const IrNode *n = &L->g->nodes[id];
    const Box *b = k < n->n_inputs ? box_of(L, n->inputs[k]) : &box_none;
    if (b->kind == BOX_SEQ) return b;
    if (b->kind == BOX_OPT && b->present && b->inner_seq) return b;
    refuse(L, id, "input %s is not a sequence known at compile time",
           k < n->n_inputs && n->inputs[k] != IR_NONE ? L->g->values[n->inputs[k]].name : "");
    return NULL;
}

/* A position input (constant) normalized against a sequence of n elements; max_pos is n for
 * an insertion point and n - 1 for an element. */
static bool position(Lower *L, uint32_t id, uint32_t k, uint32_t n, bool insert,
                     uint32_t *pos) {
    const IrNode *node = &L->g->nodes[id];
    int64_t p;
    if (k >= node->n_inputs || node->inputs[k] == IR_NONE) {
        *pos = insert ? n : n - 1;
        if (!insert && n == 0) return refuse(L, id, "erasing from an empty sequence");
        return true;
    }
    if (!const_int(L->g, node->inputs[k], &p))
        return refuse(L, id, "the position is not a constant: the element count and shapes "
                             "of a sequence must be known at compile time");
    int64_t hi = insert ? (int64_t)n : (int64_t)n - 1;
    if (p < 0) p += n;
    if (p < 0 || p > hi) return refuse(L, id, "position out of range");
    *pos = (uint32_t)p;
    return true;
}

static Box seq_box(const uint32_t *elems, uint32_t n) {
    Box b = {BOX_SEQ, false, false, n, elems};
    return b;
}

static void lower_seq_insert_erase(Lower *L, uint32_t id, bool insert) {
    const Box *s = seq_input(L, id, 0);
    if (!s) return;
    IrNode *n = &L->g->nodes[id];
    uint32_t pos;
    if (!position(L, id, insert ? 2 : 1, s->n, insert, &pos)) return;
    if (insert && (n->n_inputs < 2 || n->inputs[1] == IR_NONE ||
                   box_of(L, n->inputs[1])->kind != BOX_NONE)) {
        refuse(L, id, "the inserted value is not a tensor");
        return;
    }
    if (insert && s->n + 1 > PASS_MAX_SEQ_ELEMS) {
        refuse(L, id, "sequence too long");
        return;
    }
    uint32_t m = insert ? s->n + 1 : s->n - 1;
    uint32_t *e = elems_alloc(L->g, m);
    const uint32_t *src = s->elems;
    uint32_t k = 0;
    for (uint32_t i = 0; i <= s->n; i++) {
        if (insert && i == pos) e[k++] = L->g->nodes[id].inputs[1];
        if (i < s->n && !(!insert && i == pos)) e[k++] = src[i];
    }
    box_set(L, L->g->nodes[id].outputs[0], seq_box(e, m));
}

static void lower_seq_at(Lower *L, uint32_t id) {
    const Box *s = seq_input(L, id, 0);
    uint32_t pos;
    if (!s) return;
    if (s->n == 0) {
        refuse(L, id, "the sequence is empty");
        return;
    }
    if (!position(L, id, 1, s->n, false, &pos)) return;
    IrNode *n = &L->g->nodes[id];
    emit_identity(L, n->name, s->elems[pos], n->outputs[0]);
}

static void lower_split_to_seq(Lower *L, uint32_t id) {
    IrGraph *g = L->g;
    IrNode *n = &g->nodes[id];
    uint32_t x = n->inputs[0];
    const IrType *tx = &g->values[x].type;
    if (box_of(L, x)->kind != BOX_NONE || !ir_type_is_static(tx)) {
        refuse(L, id, "the input is not a tensor of static shape");
        return;
    }
    int rank = tx->rank;
    int64_t axis = ir_attr_i(n, IR_ATTR_SPLIT_TO_SEQUENCE_AXIS);
    bool keepdims = ir_attr_i(n, IR_ATTR_SPLIT_TO_SEQUENCE_KEEPDIMS) != 0;
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) {
        refuse(L, id, "axis out of range");
        return;
    }
    int64_t dim = tx->dims[axis];
    int64_t *sizes = NULL;
    int64_t count = 0;
    bool given = n->n_inputs > 1 && n->inputs[1] != IR_NONE;
    if (!given) {
        count = dim;
        sizes = ir_arena_alloc(g->arena, (size_t)(count ? count : 1) * sizeof *sizes);
        for (int64_t i = 0; i < count; i++) sizes[i] = 1;
    } else {
        const IrValue *sv = &g->values[n->inputs[1]];
        const IrTensor *t = sv->kind == IR_VALUE_CONST ? sv->tensor : NULL;
        if (!t || !t->data || (t->dtype != IR_DTYPE_I64 && t->dtype != IR_DTYPE_I32) ||
            t->rank > 1) {
            refuse(L, id, "'split' is not a constant: the element count and shapes of the "
                          "sequence must be known at compile time");
            return;
        }
        int64_t *vals = ir_arena_alloc(g->arena, (size_t)(t->n_elems ? t->n_elems : 1) * 8);
        for (int64_t i = 0; i < t->n_elems; i++) {
            if (t->dtype == IR_DTYPE_I64) memcpy(&vals[i], (char *)t->data + 8 * i, 8);
            else {
                int32_t v32;
                memcpy(&v32, (char *)t->data + 4 * i, 4);
                vals[i] = v32;
            }
        }
        if (t->rank == 0) {
            int64_t step = vals[0];
            if (step <= 0) {
                refuse(L, id, "'split' must be positive");
                return;
            }
            count = (dim + step - 1) / step;
            sizes = ir_arena_alloc(g->arena, (size_t)(count ? count : 1) * sizeof *sizes);
            for (int64_t i = 0; i < count; i++) sizes[i] = i < count - 1 ? step : dim - step * i;
        } else {
            count = t->n_elems;
            sizes = vals;
            int64_t sum = 0;
            bool negative = false;
            for (int64_t i = 0; i < count; i++) {
                negative |= sizes[i] < 0;
                sum += sizes[i];
            }
            if (negative || sum != dim) {
                refuse(L, id, "'split' does not add up to the axis length");
                return;
            }
        }
    }
    if (count <= 0 || count > PASS_MAX_SEQ_ELEMS) {
        refuse(L, id, "cannot split into this many parts");
        return;
    }
    int32_t opset = n->opset;
    const char *name = n->name;
    uint32_t out = n->outputs[0];
    const char *base = g->values[out].name;
    uint32_t sp = given && g->values[n->inputs[1]].tensor->dtype == IR_DTYPE_I64 &&
                          g->values[n->inputs[1]].tensor->rank == 1
                      ? n->inputs[1]
                      : add_const_i64(L, "split", 1, sizes, count);
    uint32_t sid = new_node(L, IR_OP_SPLIT, name, opset >= 13 ? 2 : 1, (uint32_t)count);
    IrNode *s = &g->nodes[sid];
    s->opset = opset;
    ir_node_attr(s, IR_ATTR_SPLIT_AXIS)->present = true;
    ir_node_attr(s, IR_ATTR_SPLIT_AXIS)->i = axis;
    s->inputs[0] = x;
    if (opset >= 13) {
        s->inputs[1] = sp;
    } else {
        IrAttr *a = ir_node_attr(s, IR_ATTR_SPLIT_SPLIT);
        a->present = true;
        a->n = (uint32_t)count;
        a->ints = sizes;
    }
    uint32_t *e = elems_alloc(g, (uint32_t)count);
    for (int64_t i = 0; i < count; i++) {
        IrType t = *tx;
        t.dims[axis] = sizes[i];
        t.syms[axis] = 0;
        uint32_t v = ir_value_add(g, pass_indexed_name(g, base, (uint32_t)i), &t, IR_VALUE_NODE);
        pass_set_output(g, sid, (uint32_t)i, v);
        e[i] = v;
    }
    pass_order_push(&L->order, sid);
    if (!keepdims) {
        int64_t ax = axis;
        uint32_t axes = opset >= 13 ? add_const_i64(L, "squeeze_axes", 1, &ax, 1) : IR_NONE;
        for (int64_t i = 0; i < count; i++) {
            uint32_t q = new_node(L, IR_OP_SQUEEZE, pass_indexed_name(g, "squeeze", (uint32_t)i),
                                  opset >= 13 ? 2 : 1, 1);
            IrNode *qn = &g->nodes[q];
            qn->opset = opset;
            qn->inputs[0] = e[i];
            if (opset >= 13) {
                qn->inputs[1] = axes;
            } else {
                IrAttr *a = ir_node_attr(qn, IR_ATTR_SQUEEZE_AXES);
                a->present = true;
                a->n = 1;
                a->ints = ir_arena_memdup(g->arena, &ax, sizeof ax);
            }
            IrType t = *tx;
            for (int r = (int)axis; r < rank - 1; r++) {
                t.dims[r] = t.dims[r + 1];
                t.syms[r] = t.syms[r + 1];
            }
            t.rank--;
            uint32_t v = ir_value_add(g, pass_indexed_name(g, base, (uint32_t)i), &t, IR_VALUE_NODE);
            pass_set_output(g, q, 0, v);
            pass_order_push(&L->order, q);
            e[i] = v;
        }
    }
    box_set(L, out, seq_box(e, (uint32_t)count));
}

/* out = Concat(Unsqueeze(x_i, axis)...) or Concat(x_i...), emitted now. */
static void emit_concat(Lower *L, uint32_t id, const uint32_t *xs, uint32_t n_x, int64_t axis,
                        bool new_axis, uint32_t out) {
    IrGraph *g = L->g;
    int32_t opset = g->nodes[id].opset;
    const char *name = g->nodes[id].name;
    uint32_t *ins = elems_alloc(g, n_x);
    memcpy(ins, xs, n_x * sizeof *ins);
    if (new_axis) {
        uint32_t axes = opset >= 13 ? add_const_i64(L, "unsqueeze_axes", 1, &axis, 1) : IR_NONE;
        for (uint32_t i = 0; i < n_x; i++) {
            uint32_t u = new_node(L, IR_OP_UNSQUEEZE, pass_indexed_name(g, "unsqueeze", i),
                                  opset >= 13 ? 2 : 1, 1);
            IrNode *un = &g->nodes[u];
            un->opset = opset;
            un->inputs[0] = xs[i];
            if (opset >= 13) {
                un->inputs[1] = axes;
            } else {
                IrAttr *a = ir_node_attr(un, IR_ATTR_UNSQUEEZE_AXES);
                a->present = true;
                a->n = 1;
                a->ints = ir_arena_memdup(g->arena, &axis, sizeof axis);
            }
            IrType t = pass_untyped_tensor(g->values[xs[i]].type.dtype);
            uint32_t v = ir_value_add(g, pass_indexed_name(g, g->values[out].name, i), &t,
                                      IR_VALUE_NODE);
            pass_set_output(g, u, 0, v);
            pass_order_push(&L->order, u);
            ins[i] = v;
        }
    }
    uint32_t c = new_node(L, IR_OP_CONCAT, name, n_x, 1);
    IrNode *cn = &g->nodes[c];
    cn->opset = opset;
    ir_node_attr(cn, IR_ATTR_CONCAT_AXIS)->present = true;
    ir_node_attr(cn, IR_ATTR_CONCAT_AXIS)->i = axis;
    memcpy(cn->inputs, ins, n_x * sizeof *ins);
    pass_set_output(g, c, 0, out);
    pass_order_push(&L->order, c);
}

static void lower_concat_from_seq(Lower *L, uint32_t id) {
    const Box *s = seq_input(L, id, 0);
    if (!s) return;
    if (s->n == 0) {
        refuse(L, id, "the sequence is empty");
        return;
    }
    IrNode *n = &L->g->nodes[id];
    int64_t axis = ir_attr_i(n, IR_ATTR_CONCAT_FROM_SEQUENCE_AXIS);
    bool new_axis = ir_attr_i(n, IR_ATTR_CONCAT_FROM_SEQUENCE_NEW_AXIS) != 0;
    emit_concat(L, id, s->elems, s->n, axis, new_axis, n->outputs[0]);
}

/* Lowers each copy pass_inline_body makes. */
static bool lower_copy(void *arg, uint32_t id) {
    Lower *L = arg;
    lower_node(L, id);
    return !L->failed;
}

/* Inlines body b after node `at` (passes/inline.c), lowering each copy; a body the inliner
 * refuses refuses the node. */
static bool inline_body(Lower *L, uint32_t at, const IrGraph *b, uint32_t *map, uint32_t iter) {
    char why[256];
    if (pass_inline_body(L->g, b, map, iter, lower_copy, L, why, sizeof why)) return true;
    return L->failed ? false : refuse(L, at, "%s", why);
}

static void lower_seq_map(Lower *L, uint32_t id) {
    IrGraph *g = L->g;
    const IrGraph *b = node_subgraph(g, &g->nodes[id], IR_ATTR_SEQUENCE_MAP_BODY);
    const Box *s0 = seq_input(L, id, 0);
    if (!s0) return;
    const IrNode *n = &g->nodes[id];
    if (!b || b->n_inputs != n->n_inputs || b->n_outputs != n->n_outputs) {
        refuse(L, id, "the body's inputs or outputs do not match the node's");
        return;
    }
    uint32_t count = s0->n, n_in = n->n_inputs, n_out = n->n_outputs;
    for (uint32_t j = 0; j < n_in; j++) {
        const Box *bj = box_of(L, g->nodes[id].inputs[j]);
        if (bj->kind == BOX_SEQ && bj->n != count) {
            refuse(L, id, "its sequences have different lengths");
            return;
        }
        if (bj->kind == BOX_OPT) {
            refuse(L, id, "an optional input");
            return;
        }
    }
    uint32_t **outs = calloc(n_out ? n_out : 1, sizeof *outs);
    uint32_t *map = malloc((b->n_values ? b->n_values : 1) * sizeof *map);
    IR_ASSERT(outs && map);
    for (uint32_t k = 0; k < n_out; k++) outs[k] = elems_alloc(g, count);
    for (uint32_t i = 0; i < count && !L->failed; i++) {
        for (uint32_t v = 0; v < b->n_values; v++) map[v] = IR_NONE;
        for (uint32_t j = 0; j < n_in; j++) {
            uint32_t x = g->nodes[id].inputs[j];
            const Box *bj = box_of(L, x);
            map[b->inputs[j]] = bj->kind == BOX_SEQ ? bj->elems[i] : x;
        }
        if (!inline_body(L, id, b, map, i)) break;
        for (uint32_t k = 0; k < n_out; k++) {
            uint32_t v = pass_inline_value(L->g, b, map, b->outputs[k]);
            if (v == IR_NONE || box_of(L, v)->kind != BOX_NONE) {
                refuse(L, id, "a body output is not a tensor");
                break;
            }
            outs[k][i] = v;
        }
    }
    if (!L->failed)
        for (uint32_t k = 0; k < n_out; k++)
            box_set(L, g->nodes[id].outputs[k], seq_box(outs[k], count));
    free(outs);
    free(map);
}

/* Whether body output cond_out always equals body input cond_in (Identity chains). */
static bool cond_passes_through(const IrGraph *b, uint32_t cond_out, uint32_t cond_in) {
    for (uint32_t steps = 0; steps < b->n_nodes + 1; steps++) {
        if (cond_out == cond_in) return true;
        const IrValue *v = &b->values[cond_out];
        if (v->kind != IR_VALUE_NODE || v->producer == IR_NONE) return false;
        const IrNode *n = &b->nodes[v->producer];
        if (n->op != IR_OP_IDENTITY || n->n_inputs < 1) return false;
        cond_out = n->inputs[0];
    }
    return false;
}

/* Unrolls a Loop whose state or body holds sequences or optionals: the trip count must be
 * a constant and the condition constant true throughout. */
static void lower_loop(Lower *L, uint32_t id) {
    IrGraph *g = L->g;
    const IrNode *n = &g->nodes[id];
    const IrGraph *b = node_subgraph(g, n, IR_ATTR_LOOP_BODY);
    int64_t trips, cond = 1;
    if (!b || b->n_inputs < 2 || b->n_outputs < 1 || n->n_inputs < 2 ||
        b->n_inputs != n->n_inputs || b->n_outputs < b->n_inputs - 1) {
        refuse(L, id, "malformed Loop");
        return;
    }
    if (n->inputs[0] == IR_NONE || !const_int(g, n->inputs[0], &trips)) {
        refuse(L, id, "the trip count is not a constant: a loop over sequences is unrolled at "
                      "compile time, so its trip count must be known");
        return;
    }
    if (n->inputs[1] != IR_NONE && !const_int(g, n->inputs[1], &cond)) {
        refuse(L, id, "the loop condition is not a constant");
        return;
    }
    int64_t bcond;
    if (!cond_passes_through(b, b->outputs[0], b->inputs[1]) &&
        !(const_int(b, b->outputs[0], &bcond) && bcond)) {
        refuse(L, id, "the body's condition is computed: the trip count of a loop over "
                      "sequences must be known at compile time");
        return;
    }
    if (!cond) trips = 0;
    if (trips < 0) trips = 0;
    if (trips > LOWER_MAX_UNROLL) {
        refuse(L, id, "too many iterations to unroll");
        return;
    }
    uint32_t n_carried = n->n_inputs - 2, n_scan = b->n_outputs - 1 - n_carried;
    uint32_t *state = malloc((n_carried + 1) * sizeof *state);
    uint32_t **scans = calloc(n_scan + 1, sizeof *scans);
    uint32_t *map = malloc((b->n_values ? b->n_values : 1) * sizeof *map);
    IR_ASSERT(state && scans && map);
    for (uint32_t k = 0; k < n_carried; k++) state[k] = g->nodes[id].inputs[2 + k];
    for (uint32_t j = 0; j < n_scan; j++) scans[j] = elems_alloc(g, (uint32_t)trips);
    uint32_t cond_v = g->nodes[id].inputs[1];
    if (cond_v == IR_NONE) {
        IrTensor *t = ir_tensor_new(g->arena, IR_DTYPE_BOOL, 0, NULL);
        ((uint8_t *)t->data)[0] = 1;
        cond_v = add_const(L, "cond", t);
    }
    for (int64_t i = 0; i < trips && !L->failed; i++) {
        for (uint32_t v = 0; v < b->n_values; v++) map[v] = IR_NONE;
        map[b->inputs[0]] = add_const_i64(L, "iter", 0, &i, 1);
        map[b->inputs[1]] = cond_v;
        for (uint32_t k = 0; k < n_carried; k++) map[b->inputs[2 + k]] = state[k];
        if (!inline_body(L, id, b, map, (uint32_t)i)) break;
        for (uint32_t k = 0; k < n_carried; k++)
            state[k] = pass_inline_value(L->g, b, map, b->outputs[1 + k]);
        for (uint32_t j = 0; j < n_scan; j++) {
            uint32_t v = pass_inline_value(L->g, b, map, b->outputs[1 + n_carried + j]);
            if (box_of(L, v)->kind != BOX_NONE) {
                refuse(L, id, "a scan output is not a tensor");
                break;
            }
            scans[j][i] = v;
        }
    }
    for (uint32_t k = 0; k < n_carried && !L->failed; k++) {
        uint32_t out = g->nodes[id].outputs[k];
        if (out == IR_NONE) continue;
        const Box *bs = box_of(L, state[k]);
        if (bs->kind != BOX_NONE) box_set(L, out, *bs);
        else emit_identity(L, g->nodes[id].name, state[k], out);
    }
    for (uint32_t j = 0; j < n_scan && !L->failed; j++) {
        uint32_t out = g->nodes[id].outputs[n_carried + j];
        if (out == IR_NONE) continue;
        if (trips == 0) {
            refuse(L, id, "a scan output of a loop that runs zero times");
            break;
        }
        emit_concat(L, id, scans[j], (uint32_t)trips, 0, true, out);
    }
    free(state);
    free(scans);
    free(map);
}

/* The layout of a container box as graph outputs: how many tensors it flattens into, or -1
 * when it is not known. */
static int64_t flat_count(const Box *b) {
    switch (b->kind) {
    case BOX_NONE: return 1;
    case BOX_SEQ: return b->n;
    case BOX_OPT: return !b->present ? 0 : b->inner_seq ? (int64_t)b->n : 1;
    default: return -1;
    }
}

static bool same_layout(const Box *a, const Box *b) {
    return a->kind == b->kind && a->present == b->present && a->inner_seq == b->inner_seq &&
           flat_count(a) == flat_count(b);
}

/* A branch of an If, lowered in place by its own walk. */
typedef struct Branch {
    IrGraph *g;
    Lower L;
} Branch;

static bool lower_walk(Lower *L);
static void flatten_outputs(Lower *L);
static void finish(Lower *L);

static void lower_if(Lower *L, uint32_t id) {
    IrGraph *g = L->g;
    const IrNode *n = &g->nodes[id];
    const IrAttr *ta = ir_node_attr(n, IR_ATTR_IF_THEN_BRANCH);
    const IrAttr *ea = ir_node_attr(n, IR_ATTR_IF_ELSE_BRANCH);
    if (!ta->present || !ea->present || ta->graphs[0] >= g->n_subgraphs ||
        ea->graphs[0] >= g->n_subgraphs) {
        refuse(L, id, "malformed If");
        return;
    }
    Branch br[2];
    br[0].g = g->subgraphs[ta->graphs[0]];
    br[1].g = g->subgraphs[ea->graphs[0]];
    for (int k = 0; k < 2; k++) {
        memset(&br[k].L, 0, sizeof br[k].L);
        br[k].L.g = br[k].g;
        br[k].L.d = L->d;
        if (br[k].g->n_outputs != g->nodes[id].n_outputs) {
            refuse(L, id, "a branch has the wrong number of outputs");
            return;
        }
        for (uint32_t v = 0; v < br[k].g->n_values; v++) {
            const IrValue *val = &br[k].g->values[v];
            if (val->kind == IR_VALUE_OUTER && box_of(L, val->producer)->kind != BOX_NONE) {
                refuse(L, id, "a branch reads the sequence or optional '%s' of the enclosing "
                              "graph", g->values[val->producer].name);
                return;
            }
        }
        if (!lower_walk(&br[k].L)) {
            L->failed = true;
            free(br[k].L.box);
            free(br[k].L.order.ids);
            if (k == 1) {
                free(br[0].L.box);
                free(br[0].L.order.ids);
            }
            return;
        }
    }
    uint32_t n_out = g->nodes[id].n_outputs;
    bool ok = true;
    uint32_t total = 0;
    for (uint32_t k = 0; k < n_out && ok; k++) {
        const Box *a = box_of(&br[0].L, br[0].g->outputs[k]);
        const Box *e = box_of(&br[1].L, br[1].g->outputs[k]);
        if (!same_layout(a, e)) {
            refuse(L, id, "output %s is a sequence or optional whose element count differs "
                          "between the branches: it cannot be made static", g->values[
                              g->nodes[id].outputs[k]].name);
            ok = false;
        }
        total += (uint32_t)flat_count(a);
    }
    if (ok) {
        uint32_t *outs = elems_alloc(g, total);
        uint32_t at = 0;
        for (uint32_t k = 0; k < n_out; k++) {
            uint32_t old = g->nodes[id].outputs[k];
            const Box *a = box_of(&br[0].L, br[0].g->outputs[k]);
            if (a->kind == BOX_NONE) {
                outs[at++] = old;
                continue;
            }
            uint32_t m = (uint32_t)flat_count(a);
            const uint32_t *src = a->elems;
            uint32_t *e = elems_alloc(g, m);
            for (uint32_t j = 0; j < m; j++) {
                IrType t = pass_copy_type(&br[0].g->values[src[j]].type);
                e[j] = ir_value_add(g, pass_indexed_name(g, g->values[old].name, j), &t,
                                    IR_VALUE_NODE);
                outs[at++] = e[j];
            }
            Box nb = *a;
            nb.elems = e;
            box_set(L, old, nb);
        }
        for (int k = 0; k < 2; k++) {
            flatten_outputs(&br[k].L);
            finish(&br[k].L);
        }
        IrNode *nn = &g->nodes[id];
        nn->outputs = outs;
        nn->n_outputs = total;
        for (uint32_t j = 0; j < total; j++) pass_set_output(g, id, j, outs[j]);
        pass_order_push(&L->order, id);
    } else {
        L->failed = true;
    }
    for (int k = 0; k < 2; k++) {
        free(br[k].L.box);
        free(br[k].L.order.ids);
    }
}

/* Whether subgraph sub of L->g reads a container of L->g. */
static bool reads_outer_container(const Lower *L, const IrGraph *sub) {
    for (uint32_t v = 0; v < sub->n_values; v++)
        if (sub->values[v].kind == IR_VALUE_OUTER &&
            box_of(L, sub->values[v].producer)->kind != BOX_NONE)
            return true;
    return false;
}

/* Lowers the containers that live inside the subgraphs of node id (a Loop or Scan body that
 * builds a sequence and concatenates it again), keeping the node. Refused when a subgraph
 * takes, returns or reads from outside a sequence or optional. */
static void lower_subgraphs_in_place(Lower *L, uint32_t id) {
    IrGraph *g = L->g;
    const IrNode *n = &g->nodes[id];
    for (uint32_t k = 0; k < n->n_attrs && !L->failed; k++) {
        const IrAttr *a = &n->attrs[k];
        if (!a->present || !(a->kind == IR_ATTR_KIND_GRAPH || a->kind == IR_ATTR_KIND_GRAPHS))
            continue;
        for (uint32_t j = 0; j < a->n && !L->failed; j++) {
            if (a->graphs[j] >= g->n_subgraphs) continue;
            IrGraph *sub = g->subgraphs[a->graphs[j]];
            if (!graph_has_containers(sub)) continue;
            bool io = reads_outer_container(L, sub);
            for (uint32_t i = 0; i < sub->n_inputs; i++)
                io |= ir_type_is_container(&sub->values[sub->inputs[i]].type);
            for (uint32_t i = 0; i < sub->n_outputs; i++)
                io |= ir_type_is_container(&sub->values[sub->outputs[i]].type);
            if (io) {
                refuse(L, id, "its subgraph '%s' takes or returns a sequence or optional",
                       sub->name);
                return;
            }
            if (!lower_graph(sub, L->d, false)) L->failed = true;
        }
    }
}

static void lower_node(Lower *L, uint32_t id) {
    IrGraph *g = L->g;
    IrNode *n = &g->nodes[id];
    IrOp op = (IrOp)n->op;
    if (op == IR_OP_IF) {
        const IrGraph *t = node_subgraph(g, n, IR_ATTR_IF_THEN_BRANCH);
        const IrGraph *e = node_subgraph(g, n, IR_ATTR_IF_ELSE_BRANCH);
        if (node_has_containers(L, n) || (t && graph_has_containers(t)) ||
            (e && graph_has_containers(e)))
            lower_if(L, id);
        else
            pass_order_push(&L->order, id);
        return;
    }
    if (op == IR_OP_LOOP) {
        const IrGraph *b = node_subgraph(g, n, IR_ATTR_LOOP_BODY);
        bool unroll = node_has_containers(L, n) || (b && reads_outer_container(L, b));
        for (uint32_t i = 0; b && i < b->n_outputs; i++)
            unroll |= ir_type_is_container(&b->values[b->outputs[i]].type);
        if (unroll) {
            lower_loop(L, id);
            return;
        }
        lower_subgraphs_in_place(L, id);
        if (!L->failed) pass_order_push(&L->order, id);
        return;
    }
    switch (op) {
    case IR_OP_SEQUENCE_EMPTY:
        box_set(L, n->outputs[0], seq_box(NULL, 0));
        return;
    case IR_OP_SEQUENCE_CONSTRUCT:
        for (uint32_t i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] == IR_NONE || box_of(L, n->inputs[i])->kind != BOX_NONE) {
                refuse(L, id, "an input is not a tensor");
                return;
            }
        box_set(L, n->outputs[0],
                seq_box(ir_arena_memdup(g->arena, n->inputs,
                                        (n->n_inputs ? n->n_inputs : 1) * sizeof(uint32_t)),
                        n->n_inputs));
        return;
    case IR_OP_SEQUENCE_INSERT: lower_seq_insert_erase(L, id, true); return;
    case IR_OP_SEQUENCE_ERASE: lower_seq_insert_erase(L, id, false); return;
    case IR_OP_SEQUENCE_AT: lower_seq_at(L, id); return;
    case IR_OP_SEQUENCE_LENGTH: {
        const Box *s = seq_input(L, id, 0);
        if (!s) return;
        IrTensor *t = ir_tensor_new(g->arena, IR_DTYPE_I64, 0, NULL);
        int64_t len = s->n;
        memcpy(t->data, &len, sizeof len);
        make_const(g, g->nodes[id].outputs[0], t);
        return;
    }
    case IR_OP_SPLIT_TO_SEQUENCE: lower_split_to_seq(L, id); return;
    case IR_OP_CONCAT_FROM_SEQUENCE: lower_concat_from_seq(L, id); return;
    case IR_OP_SEQUENCE_MAP: lower_seq_map(L, id); return;
    case IR_OP_OPTIONAL: {
        uint32_t x = n->n_inputs > 0 ? n->inputs[0] : IR_NONE;
        Box b = {BOX_OPT, x != IR_NONE, false, 0, NULL};
        if (x != IR_NONE) {
            const Box *bx = box_of(L, x);
            if (bx->kind == BOX_OPT) {
                refuse(L, id, "an optional of an optional");
                return;
            }
            b.inner_seq = bx->kind == BOX_SEQ;
            b.n = b.inner_seq ? bx->n : 1;
            b.elems = b.inner_seq ? bx->elems : ir_arena_memdup(g->arena, &x, sizeof x);
        }
        box_set(L, n->outputs[0], b);
        return;
    }
    case IR_OP_OPTIONAL_HAS_ELEMENT: {
        uint32_t x = n->n_inputs > 0 ? n->inputs[0] : IR_NONE;
        const Box *bx = box_of(L, x);
        if (x != IR_NONE && bx->kind == BOX_NONE && ir_type_is_container(&g->values[x].type)) {
            refuse(L, id, "the input is not known at compile time");
            return;
        }
        IrTensor *t = ir_tensor_new(g->arena, IR_DTYPE_BOOL, 0, NULL);
        ((uint8_t *)t->data)[0] = x != IR_NONE && (bx->kind != BOX_OPT || bx->present);
        make_const(g, g->nodes[id].outputs[0], t);
        return;
    }
    case IR_OP_OPTIONAL_GET_ELEMENT:
    case IR_OP_IDENTITY: {
        uint32_t x = n->inputs[0];
        const Box *bx = box_of(L, x);
        uint32_t out = n->outputs[0];
        if (bx->kind == BOX_NONE) {
            if (ir_type_is_container(&g->values[x].type)) {
                refuse(L, id, "the input is not known at compile time");
                return;
            }
            if (op == IR_OP_IDENTITY) pass_order_push(&L->order, id);
            else emit_identity(L, n->name, x, out);
            return;
        }
        if (op == IR_OP_IDENTITY || bx->kind == BOX_SEQ) {
            box_set(L, out, *bx);
            return;
        }
        if (!bx->present) {
            refuse(L, id, "the optional is empty");
            return;
        }
        if (bx->inner_seq) box_set(L, out, seq_box(bx->elems, bx->n));
        else emit_identity(L, n->name, bx->elems[0], out);
        return;
    }
    default:
        break;
    }
    if (node_has_containers(L, n)) {
        refuse(L, id, "this op cannot take or make a sequence or optional in a static "
                      "bundle");
        return;
    }
    lower_subgraphs_in_place(L, id);
    if (!L->failed) pass_order_push(&L->order, id);
}

/* Walks the nodes of L->g in order, lowering each; false when one was refused. */
static bool lower_walk(Lower *L) {
    uint32_t n_old = L->g->n_nodes;
    for (uint32_t i = 0; i < n_old && !L->failed; i++) {
        if (L->g->nodes[i].dead) continue;
        lower_node(L, i);
    }
    return !L->failed;
}

/* Frees name for a graph output: a value of g that has it and is no graph input is
 * renamed. */
static void claim_name(IrGraph *g, const char *name) {
    for (uint32_t v = 0; v < g->n_values; v++) {
        if (!g->values[v].name || strcmp(g->values[v].name, name) != 0) continue;
        bool input = false;
        for (uint32_t i = 0; i < g->n_inputs; i++) input |= g->inputs[i] == v;
        if (!input) g->values[v].name = fresh_name(g, name);
    }
}

/* Replaces every container output of L->g by its element tensors, each written by an
 * Identity named after the output (NAME_0, NAME_1...; a present optional tensor keeps NAME). */
static void flatten_outputs(Lower *L) {
    IrGraph *g = L->g;
    uint32_t n_old = g->n_outputs;
    uint32_t *old = malloc((n_old ? n_old : 1) * sizeof *old);
    IR_ASSERT(old);
    memcpy(old, g->outputs, n_old * sizeof *old);
    g->n_outputs = 0;
    for (uint32_t i = 0; i < n_old; i++) {
        uint32_t v = old[i];
        const Box *b = box_of(L, v);
        if (b->kind == BOX_NONE) {
            ir_graph_add_output(g, v);
            continue;
        }
        uint32_t m = (uint32_t)flat_count(b);
        const char *base = g->values[v].name;
        for (uint32_t j = 0; j < m; j++) {
            uint32_t e = b->elems[j];
            uint32_t out;
            if (b->kind == BOX_OPT && !b->inner_seq) {
                /* the tensor takes the optional's name */
                claim_name(g, base);
                IrType t = pass_copy_type(&g->values[e].type);
                out = ir_value_add(g, base, &t, IR_VALUE_NODE);
                emit_identity(L, base, e, out);
            } else {
                char *nm = ir_arena_alloc(g->arena, strlen(base) + 24);
                sprintf(nm, "%s_%u", base, j);
                claim_name(g, nm);
                out = emit_copy(L, nm, e);
            }
            ir_graph_add_output(g, out);
        }
    }
    free(old);
}

/* Puts the nodes of L->g in the order of L->order (others go away) and drops subgraphs
 * that no node refers to any more (unrolled bodies). */
static void finish(Lower *L) {
    IrGraph *g = L->g;
    IrNode *nodes = malloc((L->order.n ? L->order.n : 1) * sizeof *nodes);
    IR_ASSERT(nodes);
    for (uint32_t i = 0; i < L->order.n; i++) nodes[i] = g->nodes[L->order.ids[i]];
    memcpy(g->nodes, nodes, L->order.n * sizeof *nodes);
    g->n_nodes = L->order.n;
    free(nodes);
    for (uint32_t v = 0; v < g->n_values; v++)
        if (g->values[v].kind == IR_VALUE_NODE) g->values[v].producer = IR_NONE;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        for (uint32_t k = 0; k < g->nodes[i].n_outputs; k++)
            if (g->nodes[i].outputs[k] != IR_NONE) {
                IrValue *val = &g->values[g->nodes[i].outputs[k]];
                val->kind = IR_VALUE_NODE;
                val->producer = i;
                val->result_index = k;
            }
    /* subgraphs still referred to, renumbered in order */
    uint32_t *remap = malloc((g->n_subgraphs ? g->n_subgraphs : 1) * sizeof *remap);
    IR_ASSERT(remap);
    for (uint32_t s = 0; s < g->n_subgraphs; s++) remap[s] = IR_NONE;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        for (uint32_t k = 0; k < g->nodes[i].n_attrs; k++) {
            const IrAttr *a = &g->nodes[i].attrs[k];
            if (!a->present || !(a->kind == IR_ATTR_KIND_GRAPH || a->kind == IR_ATTR_KIND_GRAPHS))
                continue;
            for (uint32_t j = 0; j < a->n; j++)
                if (a->graphs[j] < g->n_subgraphs) remap[a->graphs[j]] = 0;
        }
    uint32_t kept = 0, n_before = g->n_subgraphs;
    for (uint32_t s = 0; s < g->n_subgraphs; s++)
        if (remap[s] != IR_NONE) {
            g->subgraphs[kept] = g->subgraphs[s];
            remap[s] = kept++;
        }
    if (kept != g->n_subgraphs) {
        g->n_subgraphs = kept;
        for (uint32_t i = 0; i < g->n_nodes; i++)
            for (uint32_t k = 0; k < g->nodes[i].n_attrs; k++) {
                IrAttr *a = &g->nodes[i].attrs[k];
                if (!a->present ||
                    !(a->kind == IR_ATTR_KIND_GRAPH || a->kind == IR_ATTR_KIND_GRAPHS))
                    continue;
                uint32_t *gs = ir_arena_memdup(g->arena, a->graphs, a->n * sizeof *gs);
                for (uint32_t j = 0; j < a->n; j++)
                    if (gs[j] < n_before) gs[j] = remap[gs[j]];
                a->graphs = gs;
            }
    }
    free(remap);
}

/* Refuses container graph inputs that binding left (their length is unknown). */
static bool check_inputs(Lower *L) {
    IrGraph *g = L->g;
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        const IrValue *v = &g->values[g->inputs[i]];
        if (!ir_type_is_container(&v->type)) continue;
        bool opt = v->type.kind == IR_TYPE_OPTIONAL;
        diag_error(L->d, "graph input '%s' is %s of unknown length: give its element shapes "
                         "with --seq %s=[d,...][d,...]%s%s%s", v->name,
                   opt ? "an optional sequence" : "a sequence", v->name,
                   opt ? " (or --seq " : "", opt ? v->name : "", opt ? "=none: absent)" : "");
        L->failed = true;
    }
    return !L->failed;
}

static bool lower_graph(IrGraph *g, Diag *d, bool root) {
    Lower L;
    memset(&L, 0, sizeof L);
    L.g = g;
    L.d = d;
    bool ok = (!root || check_inputs(&L)) && lower_walk(&L);
    if (ok) {
        flatten_outputs(&L);
        finish(&L);
    }
    free(L.box);
    free(L.order.ids);
    return ok;
}

bool pass_lower_sequences(IrGraph *g, Diag *d) {
    if (!graph_has_containers(g)) {
        bool any = false;
        for (uint32_t i = 0; i < g->n_nodes && !any; i++) {
            IrOp op = (IrOp)g->nodes[i].op;
            any = op == IR_OP_OPTIONAL_HAS_ELEMENT || op == IR_OP_OPTIONAL ||
                  op == IR_OP_OPTIONAL_GET_ELEMENT || op == IR_OP_SEQUENCE_EMPTY ||
                  op == IR_OP_SEQUENCE_LENGTH;
        }
        if (!any) return false;
    }
    if (!lower_graph(g, d, true)) return false;
    ir_infer_shapes(g, d);
    return true;
}
