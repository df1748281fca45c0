/* The ONNX loader: checks the wire format's nesting, unpacks the ModelProto with
 * protobuf-c, and builds the IrGraph: opsets, inputs and initializers, nodes in
 * topological order (sorted when the model's order is not), typed attributes, subgraphs of
 * If/Loop/Scan with outer-scope values, and graph outputs. Any error gives a diagnostic
 * naming the node or tensor, and NULL. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend/onnx_internal.h"

/* A graph being built, and the names it can see. */
typedef struct Scope {
    struct Scope *parent;
    IrGraph *g;
    OnnxNameMap names;       /* name -> value id in g */
    const OnnxFrame *rename; /* renames names that cross into parent (function bodies) */
} Scope;

static bool convert_graph(OnnxCtx *c, const Onnx__GraphProto *gp, IrGraph *g, Scope *parent,
                          const OnnxFrame *rename, const OnnxFrame *attr_frame);

static const char *str_or_empty(const char *s) { return s ? s : ""; }

/* "kind 'name'" in the scratch arena, for diagnostics. */
static char *tmp_name(OnnxCtx *c, const char *kind, const char *name) {
    size_t len = strlen(kind) + strlen(name) + 4;
    char *s = ir_arena_alloc(&c->tmp, len);
    snprintf(s, len, "%s '%s'", kind, name);
    return s;
}

static char *tmp_attr_name(OnnxCtx *c, const char *desc, const char *name) {
    size_t len = strlen(desc) + strlen(name) + 16;
    char *s = ir_arena_alloc(&c->tmp, len);
    snprintf(s, len, "%s: attribute '%s'", desc, name);
    return s;
}

/* Finds name in s or, through OUTER values created on the way, in its enclosing scopes. */
static bool scope_lookup(OnnxCtx *c, Scope *s, const char *name, uint32_t *out) {
    if (onnx_namemap_get(&s->names, name, out)) return true;
    if (!s->parent) return false;
    const char *pname = s->rename ? onnx_frame_name(c, s->rename, name) : name;
    uint32_t pid;
    if (!pname[0] || !scope_lookup(c, s->parent, pname, &pid)) return false;
    IrType ty = s->parent->g->values[pid].type;
    uint32_t v = ir_value_add(s->g, name, &ty, IR_VALUE_OUTER);
    s->g->values[v].producer = pid;
    onnx_namemap_put(&s->names, s->g->values[v].name, v);
    *out = v;
    return true;
}

/* ---- attributes ---- */

/* The attribute's kind; files from before the type field carry only the value. */
static int attr_kind(const Onnx__AttributeProto *a) {
    if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
        return (int)a->type;
    if (a->n_floats) return IR_ATTR_KIND_FLOATS;
    if (a->n_ints) return IR_ATTR_KIND_INTS;
    if (a->n_strings) return IR_ATTR_KIND_STRINGS;
    if (a->n_tensors) return IR_ATTR_KIND_TENSORS;
    if (a->n_graphs) return IR_ATTR_KIND_GRAPHS;
    if (a->n_sparse_tensors) return IR_ATTR_KIND_SPARSE_TENSORS;
    if (a->n_type_protos) return IR_ATTR_KIND_TYPE_PROTOS;
    if (a->has_f) return IR_ATTR_KIND_FLOAT;
    if (a->has_i) return IR_ATTR_KIND_INT;
    if (a->has_s) return IR_ATTR_KIND_STRING;
    if (a->t) return IR_ATTR_KIND_TENSOR;
    if (a->g) return IR_ATTR_KIND_GRAPH;
    if (a->sparse_tensor) return IR_ATTR_KIND_SPARSE_TENSOR;
    if (a->tp) return IR_ATTR_KIND_TYPE_PROTO;
    return IR_ATTR_KIND_UNDEF;
}

/* Bit k set when a holds a value of kind k. */
static uint32_t attr_held_kinds(const Onnx__AttributeProto *a) {
    uint32_t m = 0;
    m |= (uint32_t)a->has_f << IR_ATTR_KIND_FLOAT;
    m |= (uint32_t)a->has_i << IR_ATTR_KIND_INT;
    m |= (uint32_t)a->has_s << IR_ATTR_KIND_STRING;
    m |= (uint32_t)(a->t != NULL) << IR_ATTR_KIND_TENSOR;
    m |= (uint32_t)(a->g != NULL) << IR_ATTR_KIND_GRAPH;
    m |= (uint32_t)(a->n_floats != 0) << IR_ATTR_KIND_FLOATS;
    m |= (uint32_t)(a->n_ints != 0) << IR_ATTR_KIND_INTS;
    m |= (uint32_t)(a->n_strings != 0) << IR_ATTR_KIND_STRINGS;
    m |= (uint32_t)(a->n_tensors != 0) << IR_ATTR_KIND_TENSORS;
    m |= (uint32_t)(a->n_graphs != 0) << IR_ATTR_KIND_GRAPHS;
    m |= (uint32_t)(a->sparse_tensor != NULL) << IR_ATTR_KIND_SPARSE_TENSOR;
    m |= (uint32_t)(a->n_sparse_tensors != 0) << IR_ATTR_KIND_SPARSE_TENSORS;
    m |= (uint32_t)(a->tp != NULL) << IR_ATTR_KIND_TYPE_PROTO;
    m |= (uint32_t)(a->n_type_protos != 0) << IR_ATTR_KIND_TYPE_PROTOS;
    return m;
}

static bool list_count(OnnxCtx *c, size_t n, uint32_t *out, const char *what) {
    if (n > UINT32_MAX / 2) {
        diag_error(c->d, "%s: too many values", what);
        return false;
    }
    *out = (uint32_t)n;
    return true;
}

static bool sub_graph(OnnxCtx *c, Scope *s, const OnnxFlatNode *f, const Onnx__GraphProto *gp,
                      uint32_t *out, const char *what) {
    if (!gp) {
        diag_error(c->d, "%s: missing graph", what);
        return false;
    }
    uint32_t idx = ir_graph_add_subgraph(s->g, str_or_empty(gp->name));
    *out = idx;
    return convert_graph(c, gp, s->g->subgraphs[idx], s, f->rename, f->attr_frame);
}

/* Fills slot from a; what names the attribute and node in diagnostics. */
static bool fill_attr(OnnxCtx *c, Scope *s, const OnnxFlatNode *f, IrAttr *slot,
                      const Onnx__AttributeProto *a, int kind, const char *what) {
    IrArena *ar = c->root->arena;
    slot->present = true;
    slot->kind = (uint8_t)kind;
    switch (kind) {
    case IR_ATTR_KIND_FLOAT:
        slot->f = a->f;
        return true;
    case IR_ATTR_KIND_INT:
        slot->i = a->i;
        return true;
    case IR_ATTR_KIND_STRING:
        slot->s.data = ir_arena_strndup(ar, (const char *)a->s.data, a->s.len);
        slot->s.len = a->s.len;
        return true;
    case IR_ATTR_KIND_FLOATS:
        if (!list_count(c, a->n_floats, &slot->n, what)) return false;
        slot->floats = ir_arena_memdup(ar, a->floats, a->n_floats * sizeof(float));
        return true;
    case IR_ATTR_KIND_INTS:
        if (!list_count(c, a->n_ints, &slot->n, what)) return false;
        slot->ints = ir_arena_memdup(ar, a->ints, a->n_ints * sizeof(int64_t));
        return true;
    case IR_ATTR_KIND_STRINGS:
        if (!list_count(c, a->n_strings, &slot->n, what)) return false;
        slot->strings = ir_arena_alloc(ar, (slot->n + 1) * sizeof(IrStr));
        for (uint32_t k = 0; k < slot->n; k++) {
            slot->strings[k].data =
                ir_arena_strndup(ar, (const char *)a->strings[k].data, a->strings[k].len);
            slot->strings[k].len = a->strings[k].len;
        }
        return true;
    case IR_ATTR_KIND_TENSOR:
    case IR_ATTR_KIND_SPARSE_TENSOR: {
        IrTensor *t = kind == IR_ATTR_KIND_TENSOR ? onnx_tensor_convert(c, a->t, what)
                                                  : onnx_sparse_convert(c, a->sparse_tensor, what);
        if (!t) return false;
        slot->n = 1;
        slot->tensors = t;
        return true;
    }
    case IR_ATTR_KIND_TENSORS:
    case IR_ATTR_KIND_SPARSE_TENSORS: {
        size_t n = kind == IR_ATTR_KIND_TENSORS ? a->n_tensors : a->n_sparse_tensors;
        if (!list_count(c, n, &slot->n, what)) return false;
        slot->tensors = ir_arena_alloc(ar, (slot->n + 1) * sizeof(IrTensor));
        for (uint32_t k = 0; k < slot->n; k++) {
            IrTensor *t = kind == IR_ATTR_KIND_TENSORS
                              ? onnx_tensor_convert(c, a->tensors[k], what)
                              : onnx_sparse_convert(c, a->sparse_tensors[k], what);
            if (!t) return false;
            slot->tensors[k] = *t;
        }
        return true;
    }
    case IR_ATTR_KIND_GRAPH:
        slot->n = 1;
        slot->graphs = ir_arena_alloc(ar, sizeof(uint32_t));
        return sub_graph(c, s, f, a->g, &slot->graphs[0], what);
    case IR_ATTR_KIND_GRAPHS:
        if (!list_count(c, a->n_graphs, &slot->n, what)) return false;
        slot->graphs = ir_arena_alloc(ar, (slot->n + 1) * sizeof(uint32_t));
        for (uint32_t k = 0; k < slot->n; k++)
            if (!sub_graph(c, s, f, a->graphs[k], &slot->graphs[k], what)) return false;
        return true;
    case IR_ATTR_KIND_TYPE_PROTO:
        if (!a->tp) {
            diag_error(c->d, "%s: missing type", what);
            return false;
        }
        slot->n = 1;
        slot->types = ir_arena_alloc(ar, sizeof(IrType));
        return onnx_type_convert(c, a->tp, &slot->types[0], what);
    case IR_ATTR_KIND_TYPE_PROTOS:
        if (!list_count(c, a->n_type_protos, &slot->n, what)) return false;
        slot->types = ir_arena_alloc(ar, (slot->n + 1) * sizeof(IrType));
        for (uint32_t k = 0; k < slot->n; k++)
            if (!onnx_type_convert(c, a->type_protos[k], &slot->types[k], what)) return false;
        return true;
    default:
        break;
    }
    diag_error(c->d, "%s: unknown attribute kind %d", what, kind);
    return false;
}

static const char *kind_name(int kind) {
    static const char *const names[] = {
        "undefined",      "float",      "int",        "string",  "tensor", "graph",
        "floats",         "ints",       "strings",    "tensors", "graphs", "sparse_tensor",
        "sparse_tensors", "type_proto", "type_protos"};
    return kind >= 0 && kind < (int)(sizeof names / sizeof names[0]) ? names[kind] : "invalid";
}

static bool convert_attrs(OnnxCtx *c, Scope *s, const OnnxFlatNode *f, uint32_t nid,
                          const char *desc) {
    IrOp op = (IrOp)s->g->nodes[nid].op;
    IrAttr *slots = s->g->nodes[nid].attrs; /* its own arena block: stays put */
    const IrOpInfo *info = ir_op_info(op);
    for (uint32_t k = 0; k < f->n_attrs; k++) {
        const Onnx__AttributeProto *a = f->attrs[k];
        const char *name = str_or_empty(a->name);
        const char *what = tmp_attr_name(c, desc, name);
        if (!name[0]) {
            diag_error(c->d, "%s: attribute without a name", desc);
            return false;
        }
        int kind = attr_kind(a);
        if (kind <= IR_ATTR_KIND_UNDEF || kind > IR_ATTR_KIND_TYPE_PROTOS) {
            diag_error(c->d, "%s: unknown attribute kind %d", what, kind);
            return false;
        }
        uint32_t other = attr_held_kinds(a) & ~(1u << kind);
        if (other) {
            int k2 = 0;
            while (!(other & (1u << k2)))
                k2++;
            diag_error(c->d, "%s: declared %s but holds a %s value", what, kind_name(kind),
                       kind_name(k2));
            return false;
        }
        IrAttr *slot;
        if (op == IR_OP_UNKNOWN) {
            for (uint32_t j = 0; j < k; j++)
                if (strcmp(slots[j].name, name) == 0) {
                    diag_error(c->d, "%s: given twice", what);
                    return false;
                }
            slot = &slots[k];
            slot->id = IR_NONE;
            slot->name = ir_arena_strdup(c->root->arena, name);
        } else {
            uint32_t id = ir_attr_lookup(op, name);
            if (id == IR_NONE) {
                diag_error(c->d, "%s: %s has no such attribute", what, info->name);
                return false;
            }
            slot = &slots[id - info->attr_base];
            if (slot->present) {
                diag_error(c->d, "%s: given twice", what);
                return false;
            }
            if (slot->kind != kind) {
                diag_error(c->d, "%s: has kind %s, the schema says %s", what, kind_name(kind),
                           kind_name(slot->kind));
                return false;
            }
        }
        if (!fill_attr(c, s, f, slot, a, kind, what)) return false;
    }
    return true;
}

/* ---- nodes ---- */

typedef struct Edge {
    uint32_t from, to;
} Edge;

typedef struct EdgeVec {
    Edge *v;
    size_t n, cap;
} EdgeVec;

static void edge_add(EdgeVec *e, uint32_t from, uint32_t to) {
    if (e->n == e->cap) {
        e->cap = e->cap ? e->cap * 2 : 256;
        e->v = realloc(e->v, e->cap * sizeof *e->v);
        IR_ASSERT(e->v);
    }
    e->v[e->n].from = from;
    e->v[e->n].to = to;
    e->n++;
}

static void dep_name(OnnxCtx *c, const OnnxNameMap *producers, const OnnxFrame *rename,
                     const char *name, uint32_t to, EdgeVec *e) {
    if (rename) name = onnx_frame_name(c, rename, name);
    uint32_t p;
    if (name[0] && onnx_namemap_get(producers, name, &p)) edge_add(e, p, to);
}

/* Adds edges for names a subgraph uses from enclosing scopes (over-approximated: every
 * name it uses; names it defines itself are simply not found among the producers). */
static void dep_graph(OnnxCtx *c, const OnnxNameMap *producers, const OnnxFrame *rename,
                      const Onnx__GraphProto *gp, uint32_t to, EdgeVec *e);

static void dep_attr(OnnxCtx *c, const OnnxNameMap *producers, const OnnxFrame *rename,
                     const Onnx__AttributeProto *a, uint32_t to, EdgeVec *e) {
    if (a->g) dep_graph(c, producers, rename, a->g, to, e);
    for (size_t k = 0; k < a->n_graphs; k++)
        dep_graph(c, producers, rename, a->graphs[k], to, e);
}

static void dep_graph(OnnxCtx *c, const OnnxNameMap *producers, const OnnxFrame *rename,
                      const Onnx__GraphProto *gp, uint32_t to, EdgeVec *e) {
    if (!gp) return;
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        for (size_t k = 0; k < np->n_input; k++)
            dep_name(c, producers, rename, str_or_empty(np->input[k]), to, e);
        for (size_t k = 0; k < np->n_attribute; k++)
            dep_attr(c, producers, rename, np->attribute[k], to, e);
    }
    for (size_t i = 0; i < gp->n_output; i++)
        dep_name(c, producers, rename, str_or_empty(gp->output[i]->name), to, e);
}

static int cmp_edge(const void *a, const void *b) {
    const Edge *x = a, *y = b;
    return x->from < y->from ? -1 : x->from > y->from ? 1 : 0;
}

/* Orders the flat nodes topologically into order[]; keeps the model's order when it
 * already is. False (naming a node) on a cycle. */
static bool topo_order(OnnxCtx *c, const OnnxFlatVec *fv, const OnnxNameMap *producers,
                       uint32_t *order) {
    EdgeVec e = {0};
    for (uint32_t i = 0; i < fv->n; i++) {
        const OnnxFlatNode *f = &fv->v[i];
        for (uint32_t k = 0; k < f->n_inputs; k++) {
            uint32_t p;
            if (f->inputs[k][0] && onnx_namemap_get(producers, f->inputs[k], &p))
                edge_add(&e, p, i);
        }
        /* names in subgraphs of an inlined body node are the body's: rename them */
        for (uint32_t k = 0; k < f->n_attrs; k++)
            dep_attr(c, producers, f->rename, f->attrs[k], i, &e);
    }
    bool sorted = true;
    for (size_t k = 0; k < e.n && sorted; k++)
        sorted = e.v[k].from < e.v[k].to;
    if (sorted) {
        for (uint32_t i = 0; i < fv->n; i++)
            order[i] = i;
        free(e.v);
        return true;
    }
    /* Kahn's algorithm over a CSR of the edges, queue in model order */
    qsort(e.v, e.n, sizeof *e.v, cmp_edge);
    uint32_t *indeg = calloc(fv->n + 1, sizeof *indeg);
    size_t *first = calloc(fv->n + 1, sizeof *first);
    IR_ASSERT(indeg && first);
    for (size_t k = 0; k < e.n; k++) {
        indeg[e.v[k].to]++;
        first[e.v[k].from + 1]++;
    }
    for (uint32_t i = 0; i < fv->n; i++)
        first[i + 1] += first[i];
    uint32_t head = 0, tail = 0;
    for (uint32_t i = 0; i < fv->n; i++)
        if (!indeg[i]) order[tail++] = i;
    while (head < tail) {
        uint32_t u = order[head++];
        for (size_t k = first[u]; k < first[u + 1]; k++)
            if (--indeg[e.v[k].to] == 0) order[tail++] = e.v[k].to;
    }
    bool ok = tail == fv->n;
    if (!ok) {
        for (uint32_t i = 0; i < fv->n; i++)
            if (indeg[i]) {
                diag_error(c->d, "%s: is part of a cycle", onnx_node_desc(c, &fv->v[i]));
                break;
            }
    }
    free(indeg);
    free(first);
    free(e.v);
    return ok;
}

static bool emit_node(OnnxCtx *c, Scope *s, const OnnxFlatNode *f, const OnnxNameMap *vinfo,
                      Onnx__TypeProto *const *vtypes) {
    const char *desc = onnx_node_desc(c, f);
    IrGraph *g = s->g;
    IrOp op = ir_op_lookup(f->domain, f->op_type);
    uint32_t *ins = ir_arena_alloc(&c->tmp, (f->n_inputs + 1) * sizeof *ins);
    for (uint32_t k = 0; k < f->n_inputs; k++) {
        ins[k] = IR_NONE;
        if (!f->inputs[k][0]) continue;
        if (!scope_lookup(c, s, f->inputs[k], &ins[k])) {
            diag_error(c->d, "%s: input '%s' is not defined", desc, f->inputs[k]);
            return false;
        }
    }
    uint32_t nid = ir_node_add(g, op, f->name, f->n_inputs, f->n_outputs,
                               op == IR_OP_UNKNOWN ? f->n_attrs : 0);
    IrNode *n = &g->nodes[nid];
    if (op == IR_OP_UNKNOWN) {
        n->op_type = ir_arena_strdup(g->arena, f->op_type);
        n->domain = ir_arena_strdup(g->arena, f->domain);
    }
    n->opset = (int32_t)(f->opset > INT32_MAX ? INT32_MAX : f->opset);
    memcpy(n->inputs, ins, f->n_inputs * sizeof *ins);
    if (!convert_attrs(c, s, f, nid, desc)) return false;
    for (uint32_t k = 0; k < f->n_outputs; k++) {
        const char *name = f->outputs[k];
        if (!name[0]) continue;
        IrType ty;
        uint32_t vi;
        if (onnx_namemap_get(vinfo, name, &vi)) {
            if (!onnx_type_convert(c, vtypes[vi], &ty, tmp_name(c, "value", name))) return false;
        } else {
            onnx_type_convert(c, NULL, &ty, name);
        }
        uint32_t v = ir_value_add(g, name, &ty, IR_VALUE_NODE);
        g->values[v].producer = nid;
        g->values[v].result_index = k;
        g->nodes[nid].outputs[k] = v;
        onnx_namemap_put(&s->names, g->values[v].name, v);
    }
    return true;
}

/* ---- graphs ---- */

static IrType tensor_type_of(const IrTensor *t) {
    return ir_type_tensor((IrDType)t->dtype, t->rank, t->dims);
}

static bool convert_graph(OnnxCtx *c, const Onnx__GraphProto *gp, IrGraph *g, Scope *parent,
                          const OnnxFrame *rename, const OnnxFrame *attr_frame) {
    Scope s = {parent, g, {0}, rename};
    OnnxNameMap vinfo = {0}, inits = {0}, producers = {0};
    OnnxFlatVec fv = {0};
    uint32_t *order = NULL;
    bool ok = false;
    const char *gname = str_or_empty(gp->name);

    /* declared types: value_info, then graph outputs */
    size_t n_vt = gp->n_value_info + gp->n_output;
    Onnx__TypeProto **vtypes = ir_arena_alloc(&c->tmp, (n_vt + 1) * sizeof *vtypes);
    for (size_t i = 0; i < gp->n_value_info; i++) {
        vtypes[i] = gp->value_info[i]->type;
        onnx_namemap_put(&vinfo, str_or_empty(gp->value_info[i]->name), (uint32_t)i);
    }
    for (size_t i = 0; i < gp->n_output; i++) {
        vtypes[gp->n_value_info + i] = gp->output[i]->type;
        onnx_namemap_put(&vinfo, str_or_empty(gp->output[i]->name),
                         (uint32_t)(gp->n_value_info + i));
    }

    /* initializers (sparse ones after dense ones) */
    size_t n_init = gp->n_initializer + gp->n_sparse_initializer;
    if (n_init > UINT32_MAX / 2) {
        diag_error(c->d, "graph '%s': too many initializers", gname);
        goto out;
    }
    bool *used = ir_arena_alloc(&c->tmp, n_init + 1);
    for (size_t i = 0; i < n_init; i++) {
        const char *name =
            i < gp->n_initializer
                ? str_or_empty(gp->initializer[i]->name)
                : (gp->sparse_initializer[i - gp->n_initializer]->values
                       ? str_or_empty(gp->sparse_initializer[i - gp->n_initializer]->values->name)
                       : "");
        if (!name[0]) {
            diag_error(c->d, "graph '%s': initializer %zu has no name", gname, i);
            goto out;
        }
        if (onnx_namemap_get(&inits, name, NULL)) {
            diag_error(c->d, "graph '%s': initializer '%s' is given twice", gname, name);
            goto out;
        }
        onnx_namemap_put(&inits, name, (uint32_t)i);
    }

    /* inputs; an input with an initializer keeps it as its default */
    for (size_t i = 0; i < gp->n_input; i++) {
        const char *name = str_or_empty(gp->input[i]->name);
        const char *what = tmp_name(c, "graph input", name);
        if (!name[0]) {
            diag_error(c->d, "graph '%s': input %zu has no name", gname, i);
            goto out;
        }
        if (onnx_namemap_get(&s.names, name, NULL)) {
            diag_error(c->d, "%s: is given twice", what);
            goto out;
        }
        IrType ty;
        if (!onnx_type_convert(c, gp->input[i]->type, &ty, what)) goto out;
        if (g == c->root && !onnx_dims_input(c, (uint32_t)i, name, &ty)) goto out;
        uint32_t v = ir_value_add(g, name, &ty, IR_VALUE_INPUT);
        uint32_t ii;
        if (onnx_namemap_get(&inits, name, &ii)) {
            used[ii] = true;
            const char *iwhat = tmp_name(c, "initializer", name);
            IrTensor *t =
                ii < gp->n_initializer
                    ? onnx_tensor_convert(c, gp->initializer[ii], iwhat)
                    : onnx_sparse_convert(c, gp->sparse_initializer[ii - gp->n_initializer], iwhat);
            if (!t) goto out;
            g->values[v].tensor = t;
            if (g->values[v].type.kind == IR_TYPE_UNDEF) g->values[v].type = tensor_type_of(t);
        }
        ir_graph_add_input(g, v);
        onnx_namemap_put(&s.names, g->values[v].name, v);
    }
    for (size_t i = 0; i < n_init; i++) {
        if (used[i]) continue;
        const char *name = i < gp->n_initializer
                               ? gp->initializer[i]->name
                               : gp->sparse_initializer[i - gp->n_initializer]->values->name;
        const char *what = tmp_name(c, "initializer", name);
        IrTensor *t =
            i < gp->n_initializer
                ? onnx_tensor_convert(c, gp->initializer[i], what)
                : onnx_sparse_convert(c, gp->sparse_initializer[i - gp->n_initializer], what);
        if (!t) goto out;
        IrType ty = tensor_type_of(t);
        uint32_t v = ir_value_add(g, name, &ty, IR_VALUE_CONST);
        g->values[v].tensor = t;
        onnx_namemap_put(&s.names, g->values[v].name, v);
    }

    /* nodes: flatten (inlining functions), check single definitions, order, emit */
    if (!onnx_flatten(c, gp->node, gp->n_node, attr_frame, &fv)) goto out;
    for (uint32_t i = 0; i < fv.n; i++) {
        const OnnxFlatNode *f = &fv.v[i];
        for (uint32_t k = 0; k < f->n_outputs; k++) {
            const char *name = f->outputs[k];
            if (!name[0]) continue;
            if (onnx_namemap_get(&s.names, name, NULL) ||
                onnx_namemap_get(&producers, name, NULL)) {
                diag_error(c->d, "%s: output '%s' is already defined", onnx_node_desc(c, f), name);
                goto out;
            }
            onnx_namemap_put(&producers, name, i);
        }
    }
    order = malloc((fv.n + 1) * sizeof *order);
    IR_ASSERT(order);
    if (!topo_order(c, &fv, &producers, order)) goto out;
    for (uint32_t i = 0; i < fv.n; i++)
        if (!emit_node(c, &s, &fv.v[order[i]], &vinfo, vtypes)) goto out;

    /* outputs */
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = str_or_empty(gp->output[i]->name);
        uint32_t v;
        if (!name[0] || !scope_lookup(c, &s, name, &v)) {
            diag_error(c->d, "graph '%s': output '%s' is not defined", gname, name);
            goto out;
        }
        if (g->values[v].type.kind == IR_TYPE_UNDEF) {
            IrType ty;
            if (!onnx_type_convert(c, gp->output[i]->type, &ty, tmp_name(c, "graph output", name)))
                goto out;
            g->values[v].type = ty;
        }
        ir_graph_add_output(g, v);
    }
    ok = true;
out:
    onnx_namemap_free(&s.names);
    onnx_namemap_free(&vinfo);
    onnx_namemap_free(&inits);
    onnx_namemap_free(&producers);
    free(fv.v);
    free(order);
    return ok;
}

/* ---- entry points ---- */

static bool check_options(const OnnxLoadOptions *opts, Diag *d) {
    if (!opts) return true;
    for (uint32_t i = 0; i < opts->n_dims; i++) {
        if (!opts->dims[i].name || !opts->dims[i].name[0]) {
            diag_error(d, "dimension override %u has no name", i);
            return false;
        }
        if (opts->dims[i].value < 0) {
            diag_error(d, "dimension override %s=%lld is negative", opts->dims[i].name,
                       (long long)opts->dims[i].value);
            return false;
        }
    }
    return true;
}

IrGraph *onnx_load_buffer(const uint8_t *buf, size_t len, const char *base_dir,
                          const OnnxLoadOptions *opts, Diag *d) {
    if (!check_options(opts, d)) return NULL;
    if ((unsigned long long)len > (unsigned long long)ONNX_MAX_FILE_BYTES) {
        diag_error(d, "model is larger than %lld bytes", (long long)ONNX_MAX_FILE_BYTES);
        return NULL;
    }
    if (!buf && len) return NULL;
    if (!onnx_wire_check(buf, len, &onnx__model_proto__descriptor, ONNX_MAX_NESTING, d))
        return NULL;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    if (!m) {
        diag_error(d, "not a valid ONNX model (protobuf decoding failed)");
        return NULL;
    }
    if (!m->graph) {
        diag_error(d, "model has no graph");
        onnx__model_proto__free_unpacked(m, NULL);
        return NULL;
    }
    OnnxCtx c;
    memset(&c, 0, sizeof c);
    c.d = d;
    c.opts = opts;
    c.base_dir = base_dir;
    c.model = m;
    c.root = ir_graph_new(str_or_empty(m->graph->name));
    IrGraph *g = c.root;
    g->ir_version = m->has_ir_version ? m->ir_version : 0;
    g->producer_name = ir_arena_strdup(g->arena, str_or_empty(m->producer_name));
    g->producer_version = ir_arena_strdup(g->arena, str_or_empty(m->producer_version));
    for (size_t i = 0; i < m->n_opset_import; i++)
        ir_graph_set_opset(g, str_or_empty(m->opset_import[i]->domain),
                           m->opset_import[i]->has_version ? m->opset_import[i]->version : 0);
    bool ok = onnx_dims_prepare(&c, m->graph);
    if (ok) ok = convert_graph(&c, m->graph, g, NULL, NULL, NULL);
    if (ok) ok = onnx_dims_finish(&c, g);
    if (ok) ok = ir_verify(g, d);
    if (ok && opts && opts->infer_shapes) ok = ir_infer_shapes(g, d);
    onnx_namemap_free(&c.prefixes);
    ir_arena_free(&c.tmp);
    free(c.base_real);
    onnx__model_proto__free_unpacked(m, NULL);
    if (!ok) {
        ir_graph_free(g);
        return NULL;
    }
    return g;
}

IrGraph *onnx_load_file(const char *path, const OnnxLoadOptions *opts, Diag *d) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        diag_error(d, "%s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > ONNX_MAX_FILE_BYTES) {
        diag_error(d, "%s: not a regular file of at most %lld bytes", path,
                   (long long)ONNX_MAX_FILE_BYTES);
        close(fd);
        return NULL;
    }
    size_t len = (size_t)st.st_size;
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) {
        diag_error(d, "%s: out of memory reading %zu bytes", path, len);
        close(fd);
        return NULL;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t r = read(fd, buf + done, len - done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        done += (size_t)r;
    }
    close(fd);
    if (done != len) {
        diag_error(d, "%s: short read", path);
        free(buf);
        return NULL;
    }
    /* external data lives next to the model */
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    IR_ASSERT(dir);
    IrGraph *g = onnx_load_buffer(buf, len, dir, opts, d);
    free(dir);
    free(buf);
    return g;
}
