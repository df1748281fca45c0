/* Float16 storage (the CUDA backend's --precision fp16): the float32 tensors that nodes run
 * in float16 read and write become float16. A node runs in float16 when the backend says so
 * (keep) and its float operands are all float32; its float32 outputs become float16 (a Cast
 * to float32 becomes a Cast to float16). Constants read only by such nodes are converted in
 * place, others get a float16 copy; values between the two precisions go through Casts;
 * graph inputs and outputs keep float32 (Casts at the boundary, outputs keep their names).
 * Values a subgraph reads stay float32. With io16 (--fp16-io), the float32 graph inputs and
 * outputs become float16 themselves instead: no Cast runs at the boundary where float16
 * nodes read an input or write an output (a float32 node still gets its Cast).
 * Conversion rounds to nearest even and saturates at
 * +-65504 (an attention mask of -1e9 stays a large finite negative). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "runtime/rt_common.h"

#define FP16_MAX 65504.0f /* the largest finite float16 */

typedef struct Fp16 {
    IrGraph *g;
    uint32_t n_vals, n_nodes; /* before the pass */
    bool *node16;             /* per original node */
    bool *was32;              /* per original value: retyped from float32 to float16 */
    uint32_t *to16, *to32;    /* per original value: its converted twin, or IR_NONE */
    PassOrder order;          /* the new node order */
} Fp16;

static bool is_float(uint8_t dt) {
    return dt == IR_DTYPE_F32 || dt == IR_DTYPE_F16 || dt == IR_DTYPE_BF16 || dt == IR_DTYPE_F64;
}

static uint8_t dtype(const IrGraph *g, uint32_t v) { return g->values[v].type.dtype; }

static bool has_subgraph(const IrNode *n) {
    for (uint32_t a = 0; a < n->n_attrs; a++)
        if (n->attrs[a].present && (n->attrs[a].kind == IR_ATTR_KIND_GRAPH ||
                                    n->attrs[a].kind == IR_ATTR_KIND_GRAPHS))
            return true;
    return false;
}

/* Values of g that its direct subgraphs read (their OUTER values' producers). */
static bool *subgraph_reads(const IrGraph *g) {
    bool *r = calloc(g->n_values + 1, sizeof *r);
    IR_ASSERT(r);
    for (uint32_t s = 0; s < g->n_subgraphs; s++) {
        const IrGraph *sg = g->subgraphs[s];
        if (sg->parent != g) continue;
        for (uint32_t v = 0; v < sg->n_values; v++)
            if (sg->values[v].kind == IR_VALUE_OUTER && sg->values[v].producer < g->n_values)
                r[sg->values[v].producer] = true;
    }
    return r;
}

/* Whether node n runs in float16: it has float32 operands, no other float type, no
 * subgraph, no output a subgraph reads, and the backend has a float16 kernel for it. */
static bool runs16(const IrGraph *g, const IrNode *n, const bool *pinned, PassFp16Keep keep,
                   void *arg) {
    bool any32 = false;
    for (uint32_t k = 0; k < n->n_inputs + n->n_outputs; k++) {
        bool out = k >= n->n_inputs;
        uint32_t v = out ? n->outputs[k - n->n_inputs] : n->inputs[k];
        if (v == IR_NONE) continue;
        uint8_t dt = dtype(g, v);
        if (is_float(dt) && dt != IR_DTYPE_F32) return false;
        if (g->values[v].type.kind != IR_TYPE_TENSOR) return false;
        if (out && pinned[v]) return false;
        any32 |= dt == IR_DTYPE_F32;
    }
    return any32 && !has_subgraph(n) && (!keep || keep(g, n, arg));
}

/* Ops that read any float type as it is (Cast converts; Shape and Size read no data):
 * their inputs are never converted. */
static bool any_precision(const IrNode *n) {
    return n->op == IR_OP_CAST || n->op == IR_OP_SHAPE || n->op == IR_OP_SIZE;
}

/* A Cast of v to dt (a new value, named after v), placed next in the order. */
static uint32_t add_cast(Fp16 *F, uint32_t v, uint8_t dt) {
    IrGraph *g = F->g;
    IrType ty = g->values[v].type;
    ty.dtype = dt;
    const char *suffix = dt == IR_DTYPE_F16 ? ".f16" : ".f32";
    const char *name = pass_unique_name(g, g->values[v].name, suffix);
    uint32_t nv = ir_value_add(g, name, &ty, IR_VALUE_NODE);
    uint32_t id = ir_node_add(g, IR_OP_CAST, name, 1, 1, 0);
    IrNode *n = &g->nodes[id];
    n->opset = (int32_t)ir_graph_opset(g, "");
    if (n->opset < 13) n->opset = 13;
    n->inputs[0] = v;
    IrAttr *to = ir_node_attr(n, IR_ATTR_CAST_TO);
    IR_ASSERT(to);
    to->present = true;
    to->i = dt;
    pass_set_output(g, id, 0, nv);
    pass_order_push(&F->order, id);
    return nv;
}

/* Constant data of t as float16, saturated. */
static IrTensor *to_f16_tensor(IrGraph *g, const IrTensor *t) {
    IrTensor *h = ir_tensor_new(g->arena, IR_DTYPE_F16, t->rank, t->dims);
    const float *src = t->data;
    uint16_t *dst = h->data;
    for (int64_t i = 0; i < t->n_elems; i++) {
        float f = src[i]; /* finite values saturate; infinities and NaN stay */
        if (isfinite(f) && f > FP16_MAX) f = FP16_MAX;
        if (isfinite(f) && f < -FP16_MAX) f = -FP16_MAX;
        dst[i] = rt_f32_to_f16(f);
    }
    h->name = t->name;
    return h;
}

/* v as float16 for a float16 reader. */
static uint32_t get16(Fp16 *F, uint32_t v, const bool *inplace) {
    IrGraph *g = F->g;
    if (F->to16[v] != IR_NONE) return F->to16[v];
    IrValue *val = &g->values[v];
    uint32_t r;
    if (val->kind == IR_VALUE_CONST && val->tensor && val->tensor->data) {
        IrTensor *h = to_f16_tensor(g, val->tensor);
        if (inplace[v]) {
            g->values[v].tensor = h;
            g->values[v].type.dtype = IR_DTYPE_F16;
            r = v;
        } else {
            IrType ty = val->type;
            ty.dtype = IR_DTYPE_F16;
            h->name = pass_unique_name(g, val->name, ".f16");
            r = ir_value_add(g, h->name, &ty, IR_VALUE_CONST);
            g->values[r].tensor = h;
            g->values[r].producer = IR_NONE;
        }
    } else {
        r = add_cast(F, v, IR_DTYPE_F16);
    }
    F->to16[v] = r;
    return r;
}

/* v (retyped to float16) as float32 for a float32 reader or a graph output. */
static uint32_t get32(Fp16 *F, uint32_t v) {
    if (F->to32[v] == IR_NONE) F->to32[v] = add_cast(F, v, IR_DTYPE_F32);
    return F->to32[v];
}


bool pass_fp16(IrGraph *g, PassFp16Keep keep, void *arg, bool io16, Diag *d) {
    (void)d;
    Fp16 F;
    memset(&F, 0, sizeof F);
    F.g = g;
    F.n_vals = g->n_values;
    F.n_nodes = g->n_nodes;
    bool *pinned = subgraph_reads(g);
    F.node16 = calloc(F.n_nodes + 1, sizeof *F.node16);
    F.was32 = calloc(F.n_vals + 1, sizeof *F.was32);
    F.to16 = malloc((F.n_vals + 1) * sizeof *F.to16);
    F.to32 = malloc((F.n_vals + 1) * sizeof *F.to32);
    bool *inplace = malloc((F.n_vals + 1) * sizeof *inplace);
    IR_ASSERT(F.node16 && F.was32 && F.to16 && F.to32 && inplace);
    for (uint32_t v = 0; v < F.n_vals; v++) {
        F.to16[v] = F.to32[v] = IR_NONE;
        inplace[v] = g->values[v].kind == IR_VALUE_CONST && !pinned[v] &&
                     !pass_is_graph_output(g, v);
    }
    bool changed = false;
    for (uint32_t i = 0; i < F.n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead) continue;
        F.node16[i] = runs16(g, n, pinned, keep, arg);
        changed |= F.node16[i];
        for (uint32_t k = 0; k < n->n_inputs; k++) /* a constant converts in place only if */
            if (n->inputs[k] != IR_NONE && !F.node16[i]) inplace[n->inputs[k]] = false;
    }
    if (changed) {
        for (uint32_t i = 0; i < F.n_nodes; i++) { /* float16 nodes write float16 */
            if (!F.node16[i]) continue;
            IrNode *n = &g->nodes[i];
            for (uint32_t o = 0; o < n->n_outputs; o++) {
                uint32_t v = n->outputs[o];
                if (v == IR_NONE || dtype(g, v) != IR_DTYPE_F32) continue;
                g->values[v].type.dtype = IR_DTYPE_F16;
                F.was32[v] = true;
            }
            if (n->op == IR_OP_CAST && F.was32[n->outputs[0]])
                ir_node_attr(n, IR_ATTR_CAST_TO)->i = IR_DTYPE_F16;
        }
        for (uint32_t k = 0; io16 && k < g->n_inputs; k++) { /* float16 graph inputs */
            uint32_t v = g->inputs[k];
            if (v >= F.n_vals || pinned[v] || dtype(g, v) != IR_DTYPE_F32 ||
                g->values[v].type.kind != IR_TYPE_TENSOR)
                continue;
            g->values[v].type.dtype = IR_DTYPE_F16;
            F.was32[v] = true; /* float32 readers get a Cast, float16 ones read it as is */
        }
        for (uint32_t i = 0; i < F.n_nodes; i++) { /* readers get their precision */
            if (g->nodes[i].dead) continue;
            for (uint32_t k = 0; k < g->nodes[i].n_inputs && !any_precision(&g->nodes[i]); k++) {
                uint32_t v = g->nodes[i].inputs[k], r = v;
                if (v == IR_NONE || v >= F.n_vals) continue;
                if (F.node16[i] && dtype(g, v) == IR_DTYPE_F32) r = get16(&F, v, inplace);
                else if (!F.node16[i] && F.was32[v]) r = get32(&F, v);
                g->nodes[i].inputs[k] = r;
            }
            pass_order_push(&F.order, i);
        }
        for (uint32_t k = 0; k < g->n_outputs; k++) { /* outputs: float32 (io16: 16), same names */
            uint32_t v = g->outputs[k];
            if (v >= F.n_vals || (io16 ? F.was32[v] || dtype(g, v) != IR_DTYPE_F32 ||
                                             g->values[v].type.kind != IR_TYPE_TENSOR
                                       : !F.was32[v]))
                continue;
            uint32_t v32 = io16 ? get16(&F, v, inplace) : get32(&F, v);
            if (strcmp(g->values[v32].name, g->values[v].name) != 0) {
                const char *orig = g->values[v].name;
                g->values[v].name = pass_unique_name(g, orig, ".f16");
                g->values[v32].name = orig;
            }
            for (uint32_t j = k; j < g->n_outputs; j++)
                if (g->outputs[j] == v) g->outputs[j] = v32;
        }
        pass_reorder_nodes(g, F.order.ids, F.order.n);
    }
    free(pinned);
    free(F.node16);
    free(F.was32);
    free(F.to16);
    free(F.to32);
    free(F.order.ids);
    free(inplace);
    return changed;
}
