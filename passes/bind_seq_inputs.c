/* Binds sequence and optional graph inputs before the passes (kiln compile --seq NAME=SPEC):
 * a bound sequence becomes one tensor input per element (NAME_0, NAME_1...) feeding a
 * SequenceConstruct, a present optional tensor input a tensor input of the same name, an
 * absent one an empty Optional; lower-sequences then resolves the containers. Specs give
 * element shapes "[d,...][d,...]", a count N of the declared element shape, or "none".
 * requires: nothing; invalidates: uses, graph inputs; preserves: layouts, quant params. */
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"

/* Parses SPEC of "NAME=SPEC" into element shapes: "[d,...][d,...]" (one group per element,
 * "[]" a scalar), a count N (of elem's static shape) or "none" (*absent). */
static bool parse_spec(IrGraph *g, const char *spec, const IrType *elem, IrType **types,
                       uint32_t *n, bool *absent, Diag *d, const char *name) {
    *absent = false;
    *n = 0;
    if (strcmp(spec, "none") == 0) {
        *absent = true;
        return true;
    }
    if (spec[0] >= '0' && spec[0] <= '9') {
        char *end;
        unsigned long c = strtoul(spec, &end, 10);
        if (*end || c > PASS_MAX_SEQ_ELEMS) {
            diag_error(d, "--seq %s=%s: not a count", name, spec);
            return false;
        }
        if (c && (!elem || !ir_type_is_static(elem))) {
            diag_error(d, "--seq %s=%s: the declared element type has no static shape; give "
                          "the shapes: --seq %s=[d,...][d,...]", name, spec, name);
            return false;
        }
        *types = ir_arena_alloc(g->arena, (c ? c : 1) * sizeof **types);
        for (unsigned long i = 0; i < c; i++) (*types)[i] = *elem;
        *n = (uint32_t)c;
        return true;
    }
    uint32_t cap = 0;
    for (const char *p = spec; *p; p++) cap += *p == '[';
    *types = ir_arena_alloc(g->arena, (cap ? cap : 1) * sizeof **types);
    const char *p = spec;
    while (*p) {
        if (*p != '[' || *n >= PASS_MAX_SEQ_ELEMS) goto bad;
        p++;
        int64_t dims[IR_MAX_RANK];
        int rank = 0;
        while (*p && *p != ']') {
            char *end;
            long long v = strtoll(p, &end, 10);
            if (end == p || v < 0 || rank == IR_MAX_RANK) goto bad;
            dims[rank++] = v;
            p = end;
            if (*p == ',') p++;
            else if (*p != ']') goto bad;
        }
        if (*p != ']') goto bad;
        p++;
        (*types)[(*n)++] = ir_type_tensor((IrDType)elem->dtype, rank, dims);
    }
    return true;
bad:
    diag_error(d, "--seq %s=%s: expected element shapes like [2,3][4], a count, or none", name,
               spec);
    return false;
}

/* Adds one tensor graph input per element type, named base_K; returns their ids. */
static uint32_t *add_elem_inputs(IrGraph *g, const char *base, const IrType *types, uint32_t n,
                                 uint32_t **inputs, uint32_t *n_inputs) {
    uint32_t *e = ir_arena_alloc(g->arena, ((n) ? (n) : 1) * sizeof(uint32_t));
    for (uint32_t k = 0; k < n; k++) {
        e[k] = ir_value_add(g, pass_indexed_name(g, base, k), &types[k], IR_VALUE_INPUT);
        (*inputs)[(*n_inputs)++] = e[k];
    }
    return e;
}

/* out = SequenceConstruct(e...) (or SequenceEmpty), appended to g. */
static void add_construct(IrGraph *g, const char *name, const uint32_t *e, uint32_t n,
                          uint8_t dtype, uint32_t out) {
    uint32_t id = ir_node_add(g, n ? IR_OP_SEQUENCE_CONSTRUCT : IR_OP_SEQUENCE_EMPTY, name, n,
                              1, 0);
    g->nodes[id].opset = pass_default_opset(g);
    if (n) memcpy(g->nodes[id].inputs, e, n * sizeof *e);
    else {
        ir_node_attr(&g->nodes[id], IR_ATTR_SEQUENCE_EMPTY_DTYPE)->present = true;
        ir_node_attr(&g->nodes[id], IR_ATTR_SEQUENCE_EMPTY_DTYPE)->i = dtype;
    }
    pass_set_output(g, id, 0, out);
}

/* Moves the nodes from index first on to the front of g's node list. */
static void rotate_to_front(IrGraph *g, uint32_t first) {
    uint32_t k = g->n_nodes - first;
    if (!k || !first) return;
    IrNode *tmp = malloc(k * sizeof *tmp);
    IR_ASSERT(tmp);
    memcpy(tmp, g->nodes + first, k * sizeof *tmp);
    memmove(g->nodes + k, g->nodes, first * sizeof *tmp);
    memcpy(g->nodes, tmp, k * sizeof *tmp);
    free(tmp);
    for (uint32_t v = 0; v < g->n_values; v++) {
        IrValue *val = &g->values[v];
        if (val->kind == IR_VALUE_NODE && val->producer != IR_NONE)
            val->producer = val->producer >= first ? val->producer - first : val->producer + k;
    }
}

bool pass_bind_seq_inputs(IrGraph *g, const char *const *specs, unsigned n_specs, Diag *d) {
    bool ok = true, any = false;
    for (uint32_t i = 0; i < g->n_inputs; i++)
        any |= ir_type_is_container(&g->values[g->inputs[i]].type);
    if (!any && !n_specs) return true;
    for (unsigned s = 0; s < n_specs; s++) {
        const char *eq = strchr(specs[s], '=');
        size_t len = eq ? (size_t)(eq - specs[s]) : strlen(specs[s]);
        bool found = false;
        for (uint32_t i = 0; i < g->n_inputs && !found; i++) {
            const IrValue *v = &g->values[g->inputs[i]];
            found = strlen(v->name) == len && strncmp(v->name, specs[s], len) == 0 &&
                    ir_type_is_container(&v->type);
        }
        if (!eq || !found) {
            diag_error(d, "--seq %s: expected NAME=SPEC naming a sequence or optional graph "
                          "input", specs[s]);
            ok = false;
        }
    }
    if (!ok) return false;
    uint32_t first_new = g->n_nodes, n_old = g->n_inputs, n_new = 0;
    uint32_t *old = malloc((n_old ? n_old : 1) * sizeof *old);
    IR_ASSERT(old);
    memcpy(old, g->inputs, n_old * sizeof *old);
    uint32_t cap = n_old + 1;
    for (unsigned s = 0; s < n_specs; s++)
        for (const char *p = specs[s]; *p; p++) cap += *p == '[' || (*p >= '0' && *p <= '9');
    for (unsigned s = 0; s < n_specs; s++) {
        const char *eq = strchr(specs[s], '=');
        unsigned long c = strtoul(eq + 1, NULL, 10);
        if (c <= PASS_MAX_SEQ_ELEMS) cap += (uint32_t)c;
    }
    uint32_t *inputs = malloc(cap * sizeof *inputs);
    IR_ASSERT(inputs);
    for (uint32_t i = 0; i < n_old && ok; i++) {
        uint32_t v = old[i];
        IrType vt = g->values[v].type;
        if (!ir_type_is_container(&vt)) {
            inputs[n_new++] = v;
            continue;
        }
        const char *name = g->values[v].name, *spec = NULL;
        for (unsigned s = 0; s < n_specs; s++)
            if (strncmp(specs[s], name, strlen(name)) == 0 && specs[s][strlen(name)] == '=')
                spec = specs[s] + strlen(name) + 1;
        const IrType *elem = vt.elem;
        bool opt = vt.kind == IR_TYPE_OPTIONAL;
        const IrType *inner = opt && elem && elem->kind == IR_TYPE_SEQUENCE ? elem->elem : elem;
        bool seq = !opt || (elem && elem->kind == IR_TYPE_SEQUENCE);
        if (!spec && seq) { /* left for pass_lower_sequences to refuse */
            inputs[n_new++] = v;
            continue;
        }
        if (!inner || inner->kind != IR_TYPE_TENSOR || inner->dtype == IR_DTYPE_UNDEF) {
            diag_error(d, "graph input '%s': its element type is not a tensor type", name);
            ok = false;
            break;
        }
        IrType *types = NULL;
        uint32_t n = 0;
        bool absent = false;
        if (spec && !parse_spec(g, spec, inner, &types, &n, &absent, d, name)) {
            ok = false;
            break;
        }
        if (absent && !opt) {
            diag_error(d, "--seq %s=none: '%s' is a sequence, not an optional", name, name);
            ok = false;
            break;
        }
        g->values[v].kind = IR_VALUE_NODE;
        g->values[v].producer = IR_NONE;
        if (absent) {
            uint32_t id = ir_node_add(g, IR_OP_OPTIONAL, name, 0, 1, 0);
            g->nodes[id].opset = pass_default_opset(g);
            pass_set_output(g, id, 0, v);
            continue;
        }
        if (!seq) { /* a present optional tensor: the input keeps the name */
            if (spec && n != 1) {
                diag_error(d, "--seq %s=%s: an optional tensor has one element", name, spec);
                ok = false;
                break;
            }
            IrType t = spec ? types[0] : *inner;
            const char *keep = name;
            g->values[v].name = pass_fresh_name(g, "optional", '_');
            uint32_t x = ir_value_add(g, keep, &t, IR_VALUE_INPUT);
            inputs[n_new++] = x;
            uint32_t id = ir_node_add(g, IR_OP_OPTIONAL, keep, 1, 1, 0);
            g->nodes[id].opset = pass_default_opset(g);
            g->nodes[id].inputs[0] = x;
            pass_set_output(g, id, 0, v);
            continue;
        }
        uint32_t *e = add_elem_inputs(g, name, types, n, &inputs, &n_new);
        if (!opt) {
            add_construct(g, name, e, n, inner->dtype, v);
            continue;
        }
        IrType st = *elem;
        uint32_t sv = ir_value_add(g, pass_fresh_name(g, "sequence", '_'), &st, IR_VALUE_NODE);
        add_construct(g, name, e, n, inner->dtype, sv);
        uint32_t id = ir_node_add(g, IR_OP_OPTIONAL, name, 1, 1, 0);
        g->nodes[id].opset = pass_default_opset(g);
        g->nodes[id].inputs[0] = sv;
        pass_set_output(g, id, 0, v);
    }
    if (ok) {
        g->n_inputs = 0;
        for (uint32_t i = 0; i < n_new; i++) ir_graph_add_input(g, inputs[i]);
        rotate_to_front(g, first_new);
    }
    free(old);
    free(inputs);
    return ok;
}
