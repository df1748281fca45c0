/* ir_verify: checks the invariants every pass must keep, on a graph and its subgraphs:
 * SSA (one producer per value, pointing back; uses after definitions; graph inputs and
 * outputs valid), node arity against the op table (trailing omitted optionals allowed),
 * attribute kinds against attrs.def, OUTER values against the parent graph, and, on
 * request, a dtype on every tensor value that nodes use or produce. Every failure is a
 * diagnostic; the result says whether there was none. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "shape.h"

typedef struct VerifyCtx {
    const IrGraph *g;
    const IrVerifyOpts *opts;
    Diag *d;
    unsigned depth;
    bool ok;
} VerifyCtx;

/* Subgraphs nest at most this deep (the frontend refuses deeper models). */
#define VERIFY_MAX_DEPTH 64

static void fail_graph(VerifyCtx *v, const char *fmt, ...) DIAG_PRINTF(2, 3);
static void fail_graph(VerifyCtx *v, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error(v->d, "verify: graph '%s': %s", v->g->name ? v->g->name : "", msg);
    v->ok = false;
}

static void fail_node(VerifyCtx *v, const IrNode *n, const char *fmt, ...) DIAG_PRINTF(3, 4);
static void fail_node(VerifyCtx *v, const IrNode *n, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error(v->d, "verify: graph '%s': node '%s' (%s, opset %d): %s",
               v->g->name ? v->g->name : "", n->name ? n->name : "",
               n->op_type ? n->op_type : ir_op_name((IrOp)n->op), (int)n->opset, msg);
    v->ok = false;
}

static const char *vname(const IrGraph *g, uint32_t id) {
    return id < g->n_values && g->values[id].name ? g->values[id].name : "?";
}

/* Count of inputs up to the last one present. */
static uint32_t effective_count(const uint32_t *ids, uint32_t n) {
    while (n > 0 && ids[n - 1] == IR_NONE) n--;
    return n;
}

/* ops.def's arity bounds hold for every version of an op, so old opsets are checked too
 * (loosely: the union of what the versions allow). */
static void check_arity(VerifyCtx *v, const IrNode *n) {
    if (n->op == IR_OP_UNKNOWN) return;
    const IrOpInfo *info = ir_op_info((IrOp)n->op);
    uint32_t ni = effective_count(n->inputs, n->n_inputs);
    uint32_t no = effective_count(n->outputs, n->n_outputs);
    if (ni < info->in_min) fail_node(v, n, "%u inputs, at least %u required", ni, info->in_min);
    /* An absent required input ("" in the model) is refused here, before shape inference
     * or any per-op code reads its type. */
    for (uint32_t k = 0; k < info->in_req && k < ni; k++)
        if (n->inputs[k] == IR_NONE) fail_node(v, n, "required input %u is absent", k);
    if (info->in_max != IR_ARITY_VARIADIC && ni > info->in_max)
        fail_node(v, n, "%u inputs, at most %u allowed", ni, info->in_max);
    if (no < info->out_min)
        fail_node(v, n, "%u outputs, at least %u required", no, info->out_min);
    if (info->out_max != IR_ARITY_VARIADIC && no > info->out_max)
        fail_node(v, n, "%u outputs, at most %u allowed", no, info->out_max);
}

static void check_attrs(VerifyCtx *v, const IrNode *n) {
    const IrGraph *g = v->g;
    const IrOpInfo *info = n->op == IR_OP_UNKNOWN ? NULL : ir_op_info((IrOp)n->op);
    if (info && n->n_attrs != info->n_attrs) {
        fail_node(v, n, "%u attribute slots, the op table has %u", n->n_attrs, info->n_attrs);
        return;
    }
    for (uint32_t i = 0; i < n->n_attrs; i++) {
        const IrAttr *a = &n->attrs[i];
        if (info) {
            const IrAttrInfo *ai = ir_attr_info((IrAttrId)(info->attr_base + i));
            if (a->id != info->attr_base + i) {
                fail_node(v, n, "attribute slot %u holds id %u, expected '%s'", i, a->id,
                          ai->name);
                continue;
            }
            if (a->present && a->kind != ai->kind)
                fail_node(v, n, "attribute '%s' has kind %u, the op table says %u", ai->name,
                          a->kind, ai->kind);
        }
        if (!a->present) continue;
        if (a->kind == IR_ATTR_KIND_GRAPH || a->kind == IR_ATTR_KIND_GRAPHS) {
            if (!a->graphs && a->n) {
                fail_node(v, n, "attribute '%s' has no graphs", a->name ? a->name : "?");
                continue;
            }
            for (uint32_t k = 0; k < a->n; k++)
                if (a->graphs[k] >= g->n_subgraphs)
                    fail_node(v, n, "attribute '%s' refers to subgraph %u of %u",
                              a->name ? a->name : "?", a->graphs[k], g->n_subgraphs);
        }
        if ((a->kind == IR_ATTR_KIND_TENSOR || a->kind == IR_ATTR_KIND_SPARSE_TENSOR) &&
            !a->tensors)
            fail_node(v, n, "attribute '%s' has no tensor", a->name ? a->name : "?");
    }
}

static bool needs_dtype(const IrType *t) {
    return t->kind == IR_TYPE_UNDEF ||
           ((t->kind == IR_TYPE_TENSOR || t->kind == IR_TYPE_SPARSE_TENSOR) && !t->dtype);
}

static bool verify_graph(const IrGraph *g, const IrVerifyOpts *opts, Diag *d, unsigned depth);

static void check_graph(VerifyCtx *v) {
    const IrGraph *g = v->g;
    uint32_t nv = g->n_values;
    /* producers seen from the node side, and where each value is defined in order */
    uint32_t *def_by = malloc((nv ? nv : 1) * sizeof *def_by);
    uint8_t *is_input = calloc(nv ? nv : 1, 1);
    IR_ASSERT(def_by && is_input);
    for (uint32_t i = 0; i < nv; i++) def_by[i] = IR_NONE;
    /* which values anything reads: a value whose producer a pass removed is fine unread */
    uint8_t *is_read = calloc(nv ? nv : 1, 1);
    IR_ASSERT(is_read);
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead) continue;
        for (uint32_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] < nv) is_read[n->inputs[k]] = 1;
    }
    for (uint32_t i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] < nv) is_read[g->outputs[i]] = 1;
    for (uint32_t s = 0; s < g->n_subgraphs; s++) {
        const IrGraph *sub = g->subgraphs[s];
        for (uint32_t k = 0; sub && k < sub->n_values; k++)
            if (sub->values[k].kind == IR_VALUE_OUTER && sub->values[k].producer < nv)
                is_read[sub->values[k].producer] = 1;
    }

    for (uint32_t i = 0; i < g->n_inputs; i++) {
        uint32_t id = g->inputs[i];
        if (id >= nv) {
            fail_graph(v, "input %u refers to value %u of %u", i, id, nv);
            continue;
        }
        if (is_input[id]) fail_graph(v, "value '%s' is listed as an input twice", vname(g, id));
        is_input[id] = 1;
        if (g->values[id].kind != IR_VALUE_INPUT)
            fail_graph(v, "input '%s' is not of kind input", vname(g, id));
    }
    for (uint32_t id = 0; id < nv; id++) {
        const IrValue *val = &g->values[id];
        if (val->type.layout == IR_LAYOUT_NHWC &&
            (val->type.kind != IR_TYPE_TENSOR || val->type.rank != 4))
            fail_graph(v, "value '%s' is marked NHWC but is not a 4-D tensor", val->name);
        switch (val->kind) {
        case IR_VALUE_INPUT:
            if (!is_input[id]) fail_graph(v, "input value '%s' is not a graph input", val->name);
            break;
        case IR_VALUE_CONST:
            if (!val->tensor) fail_graph(v, "constant '%s' has no data", val->name);
            break;
        case IR_VALUE_OUTER:
            if (!g->parent) fail_graph(v, "outer value '%s' in a root graph", val->name);
            else if (val->producer >= g->parent->n_values)
                fail_graph(v, "outer value '%s' refers to value %u of the parent's %u",
                           val->name, val->producer, g->parent->n_values);
            break;
        case IR_VALUE_NODE:
            if (val->producer == IR_NONE && !is_read[id]) {
                /* left behind by a pass that removed its producer; nothing reads it */
            } else if (val->producer >= g->n_nodes) {
                fail_graph(v, "value '%s' has no producer", val->name);
            } else {
                const IrNode *p = &g->nodes[val->producer];
                if (val->result_index >= p->n_outputs || p->outputs[val->result_index] != id)
                    fail_graph(v, "value '%s' names node '%s' output %u, which does not point "
                                  "back to it",
                               val->name, p->name, val->result_index);
            }
            break;
        default: fail_graph(v, "value '%s' has unknown kind %u", val->name, val->kind); break;
        }
    }

    for (uint32_t ni = 0; ni < g->n_nodes; ni++) {
        const IrNode *n = &g->nodes[ni];
        if (n->dead) continue;
        if (n->op >= IR_OP_COUNT) {
            fail_node(v, n, "op id %u out of range", n->op);
            continue;
        }
        for (uint32_t k = 0; k < n->n_inputs; k++) {
            uint32_t id = n->inputs[k];
            if (id == IR_NONE) continue;
            if (id >= nv) {
                fail_node(v, n, "input %u refers to value %u of %u", k, id, nv);
                continue;
            }
            const IrValue *val = &g->values[id];
            if (val->kind != IR_VALUE_NODE) continue;
            if (def_by[id] == IR_NONE)
                fail_node(v, n, "input %u '%s' is used before it is defined", k, val->name);
            if (v->opts->require_types && needs_dtype(&val->type))
                fail_node(v, n, "input %u '%s' has no type", k, val->name);
        }
        for (uint32_t k = 0; k < n->n_outputs; k++) {
            uint32_t id = n->outputs[k];
            if (id == IR_NONE) continue;
            if (id >= nv) {
                fail_node(v, n, "output %u refers to value %u of %u", k, id, nv);
                continue;
            }
            const IrValue *val = &g->values[id];
            if (def_by[id] != IR_NONE)
                fail_node(v, n, "output %u '%s' is already produced by node '%s'", k, val->name,
                          g->nodes[def_by[id]].name);
            else if (val->kind != IR_VALUE_NODE)
                fail_node(v, n, "output %u '%s' is a graph input, constant or outer value", k,
                          val->name);
            else if (val->producer != ni || val->result_index != k)
                fail_node(v, n, "output %u '%s' names another producer", k, val->name);
            def_by[id] = ni;
            if (v->opts->require_types && needs_dtype(&val->type))
                fail_node(v, n, "output %u '%s' has no type", k, val->name);
        }
        check_arity(v, n);
        check_attrs(v, n);
    }

    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t id = g->outputs[i];
        if (id >= nv) {
            fail_graph(v, "output %u refers to value %u of %u", i, id, nv);
            continue;
        }
        const IrValue *val = &g->values[id];
        if (val->kind == IR_VALUE_NODE && def_by[id] == IR_NONE)
            fail_graph(v, "output '%s' is not produced by any live node", val->name);
        if (v->opts->require_types && needs_dtype(&val->type))
            fail_graph(v, "output '%s' has no type", val->name);
    }
    free(def_by);
    free(is_read);
    free(is_input);

    for (uint32_t i = 0; i < g->n_subgraphs; i++) {
        const IrGraph *s = g->subgraphs[i];
        if (!s || s->parent != g) {
            fail_graph(v, "subgraph %u does not name this graph as its parent", i);
            continue;
        }
        if (v->depth + 1 > VERIFY_MAX_DEPTH) {
            fail_graph(v, "subgraphs nest deeper than %d", VERIFY_MAX_DEPTH);
            continue;
        }
        if (!verify_graph(s, v->opts, v->d, v->depth + 1)) v->ok = false;
    }
}

static bool verify_graph(const IrGraph *g, const IrVerifyOpts *opts, Diag *d, unsigned depth) {
    VerifyCtx v = {g, opts, d, depth, true};
    check_graph(&v);
    return v.ok;
}

bool ir_verify_opts(const IrGraph *g, const IrVerifyOpts *opts, Diag *d) {
    IrVerifyOpts none = {false};
    return verify_graph(g, opts ? opts : &none, d, 0);
}

bool ir_verify(const IrGraph *g, Diag *d) { return ir_verify_opts(g, NULL, d); }
