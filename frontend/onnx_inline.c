/* Flattening of a graph's node list, with model-local functions (ModelProto.functions)
 * inlined: a call becomes its body's nodes, whose local names get the caller's name as a
 * prefix, whose formal inputs and outputs are bound to the caller's, and whose ref_attr_name
 * attributes take the caller's attributes or the function's defaults. Nested calls inline
 * recursively up to ONNX_MAX_INLINE_DEPTH. Also the frontend's string-keyed hash map. */
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx_internal.h"

/* ---- name map ---- */

static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

void onnx_namemap_put(OnnxNameMap *m, const char *key, uint32_t val) {
    if ((m->n + 1) * 2 > m->cap) { /* keep the load under one half */
        uint32_t cap = m->cap ? m->cap * 2 : 64;
        const char **keys = calloc(cap, sizeof *keys);
        uint32_t *vals = calloc(cap, sizeof *vals);
        IR_ASSERT(keys && vals);
        for (uint32_t i = 0; i < m->cap; i++) {
            if (!m->keys[i]) continue;
            uint32_t j = hash_str(m->keys[i]) & (cap - 1);
            while (keys[j])
                j = (j + 1) & (cap - 1);
            keys[j] = m->keys[i];
            vals[j] = m->vals[i];
        }
        free(m->keys);
        free(m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = cap;
    }
    uint32_t j = hash_str(key) & (m->cap - 1);
    while (m->keys[j]) {
        if (strcmp(m->keys[j], key) == 0) {
            m->vals[j] = val;
            return;
        }
        j = (j + 1) & (m->cap - 1);
    }
    m->keys[j] = key;
    m->vals[j] = val;
    m->n++;
}

bool onnx_namemap_get(const OnnxNameMap *m, const char *key, uint32_t *val) {
    if (!m->cap) return false;
    uint32_t j = hash_str(key) & (m->cap - 1);
    while (m->keys[j]) {
        if (strcmp(m->keys[j], key) == 0) {
            if (val) *val = m->vals[j];
            return true;
        }
        j = (j + 1) & (m->cap - 1);
    }
    return false;
}

void onnx_namemap_free(OnnxNameMap *m) {
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- flattening ---- */

static const char *str_or_empty(const char *s) { return s ? s : ""; }

static const char *norm_domain(const char *d) {
    if (!d || strcmp(d, "ai.onnx") == 0) return "";
    return d;
}

static char *tmp_printf(OnnxCtx *c, const char *a, const char *b, const char *cc) {
    size_t len = strlen(a) + strlen(b) + strlen(cc) + 1;
    char *s = ir_arena_alloc(&c->tmp, len);
    snprintf(s, len, "%s%s%s", a, b, cc);
    return s;
}

const char *onnx_frame_name(OnnxCtx *c, const OnnxFrame *fr, const char *name) {
    if (!name[0]) return "";
    for (size_t i = 0; i < fr->fn->n_input; i++)
        if (strcmp(str_or_empty(fr->fn->input[i]), name) == 0) return fr->actual_in[i];
    for (size_t i = 0; i < fr->fn->n_output; i++)
        if (strcmp(str_or_empty(fr->fn->output[i]), name) == 0 && fr->actual_out[i][0])
            return fr->actual_out[i];
    return tmp_printf(c, fr->prefix, name, "");
}

const char *onnx_node_desc(OnnxCtx *c, const OnnxFlatNode *f) {
    char ver[32];
    snprintf(ver, sizeof ver, ", opset %lld)", (long long)f->opset);
    const char *name = tmp_printf(c, "node '", f->name, "' (");
    const char *op = f->domain[0] ? tmp_printf(c, f->domain, "::", f->op_type) : f->op_type;
    return tmp_printf(c, name, op, ver);
}

/* The import version of domain inside fn (if it imports it), else the model's. */
static int64_t opset_of(OnnxCtx *c, const Onnx__FunctionProto *fn, const char *domain) {
    if (fn)
        for (size_t i = 0; i < fn->n_opset_import; i++)
            if (strcmp(norm_domain(fn->opset_import[i]->domain), domain) == 0)
                return fn->opset_import[i]->version;
    return ir_graph_opset(c->root, domain);
}

static const Onnx__FunctionProto *find_function(OnnxCtx *c, const Onnx__NodeProto *np) {
    const char *domain = norm_domain(np->domain);
    for (size_t i = 0; i < c->model->n_functions; i++) {
        const Onnx__FunctionProto *fn = c->model->functions[i];
        if (strcmp(str_or_empty(fn->name), str_or_empty(np->op_type)) == 0 &&
            strcmp(norm_domain(fn->domain), domain) == 0 &&
            strcmp(str_or_empty(fn->overload), str_or_empty(np->overload)) == 0)
            return fn;
    }
    return NULL;
}

/* Resolves ref_attr_name attributes of np against fr (the caller's attributes, then the
 * function's defaults); an unresolved reference drops the attribute, as ONNX specifies. */
static bool resolve_attrs(OnnxCtx *c, const Onnx__NodeProto *np, const OnnxFrame *fr,
                          const char *desc, const Onnx__AttributeProto ***out, uint32_t *n_out) {
    const Onnx__AttributeProto **attrs =
        ir_arena_alloc(&c->tmp, (np->n_attribute ? np->n_attribute : 1) * sizeof *attrs);
    uint32_t n = 0;
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *a = np->attribute[i];
        if (!a->ref_attr_name || !a->ref_attr_name[0]) {
            attrs[n++] = a;
            continue;
        }
        if (!fr) {
            diag_error(c->d, "%s: attribute '%s' refers to '%s' outside a function", desc,
                       str_or_empty(a->name), a->ref_attr_name);
            return false;
        }
        const Onnx__AttributeProto *src = NULL;
        for (size_t k = 0; k < fr->n_attrs && !src; k++)
            if (strcmp(str_or_empty(fr->attrs[k]->name), a->ref_attr_name) == 0) src = fr->attrs[k];
        for (size_t k = 0; k < fr->fn->n_attribute_proto && !src; k++)
            if (strcmp(str_or_empty(fr->fn->attribute_proto[k]->name), a->ref_attr_name) == 0)
                src = fr->fn->attribute_proto[k];
        if (!src) continue;
        Onnx__AttributeProto *copy = ir_arena_alloc(&c->tmp, sizeof *copy);
        *copy = *src;
        copy->name = a->name;
        copy->ref_attr_name = NULL;
        attrs[n++] = copy;
    }
    *out = attrs;
    *n_out = n;
    return true;
}

static void push(OnnxFlatVec *out, const OnnxFlatNode *f) {
    if (out->n == out->cap) {
        out->cap = out->cap ? out->cap * 2 : 64;
        out->v = realloc(out->v, out->cap * sizeof *out->v);
        IR_ASSERT(out->v);
    }
    out->v[out->n++] = *f;
}

/* A fresh prefix for the body of a call named name. */
static const char *fresh_prefix(OnnxCtx *c, const char *name, const char *op_type) {
    const char *base = name[0] ? name : op_type;
    const char *p = tmp_printf(c, base, "/", "");
    for (uint32_t k = 1; onnx_namemap_get(&c->prefixes, p, NULL); k++) {
        char num[16];
        snprintf(num, sizeof num, "_%u/", k);
        p = tmp_printf(c, base, num, "");
    }
    onnx_namemap_put(&c->prefixes, p, 0);
    return p;
}

static bool flatten(OnnxCtx *c, Onnx__NodeProto *const *nodes, size_t n_nodes,
                    const OnnxFrame *rename, const OnnxFrame *attr_frame, int depth,
                    OnnxFlatVec *out) {
    for (size_t i = 0; i < n_nodes; i++) {
        const Onnx__NodeProto *np = nodes[i];
        OnnxFlatNode f;
        memset(&f, 0, sizeof f);
        f.op_type = str_or_empty(np->op_type);
        f.domain = norm_domain(np->domain);
        f.name = str_or_empty(np->name);
        if (rename) f.name = tmp_printf(c, rename->prefix, f.name, "");
        f.opset = opset_of(c, attr_frame ? attr_frame->fn : NULL, f.domain);
        f.rename = rename;
        f.attr_frame = attr_frame;
        const char *desc = onnx_node_desc(c, &f);
        if (!f.op_type[0]) {
            diag_error(c->d, "%s: empty op_type", desc);
            return false;
        }
        if (np->n_input > UINT32_MAX / 2 || np->n_output > UINT32_MAX / 2) {
            diag_error(c->d, "%s: too many inputs or outputs", desc);
            return false;
        }
        f.n_inputs = (uint32_t)np->n_input;
        f.n_outputs = (uint32_t)np->n_output;
        f.inputs = ir_arena_alloc(&c->tmp, (f.n_inputs + 1) * sizeof *f.inputs);
        f.outputs = ir_arena_alloc(&c->tmp, (f.n_outputs + 1) * sizeof *f.outputs);
        for (uint32_t k = 0; k < f.n_inputs; k++) {
            const char *nm = str_or_empty(np->input[k]);
            f.inputs[k] = rename ? onnx_frame_name(c, rename, nm) : nm;
        }
        for (uint32_t k = 0; k < f.n_outputs; k++) {
            const char *nm = str_or_empty(np->output[k]);
            f.outputs[k] = rename ? onnx_frame_name(c, rename, nm) : nm;
        }
        if (!resolve_attrs(c, np, attr_frame, desc, &f.attrs, &f.n_attrs)) return false;

        const Onnx__FunctionProto *fn = find_function(c, np);
        if (!fn) {
            if (f.opset <= 0) {
                diag_error(c->d, "%s: domain '%s' is not imported by the model", desc,
                           f.domain[0] ? f.domain : "ai.onnx");
                return false;
            }
            if (++c->n_inlined_nodes > ONNX_MAX_INLINED_NODES) {
                diag_error(c->d, "%s: more than %u nodes after inlining functions", desc,
                           ONNX_MAX_INLINED_NODES);
                return false;
            }
            push(out, &f);
            continue;
        }
        if (depth >= ONNX_MAX_INLINE_DEPTH) {
            diag_error(c->d, "%s: functions nest deeper than %d calls", desc,
                       ONNX_MAX_INLINE_DEPTH);
            return false;
        }
        if (f.n_inputs > fn->n_input || f.n_outputs > fn->n_output) {
            diag_error(c->d,
                       "%s: %u inputs and %u outputs, but function '%s' takes %zu and "
                       "gives %zu",
                       desc, f.n_inputs, f.n_outputs, f.op_type, fn->n_input, fn->n_output);
            return false;
        }
        OnnxFrame *fr = ir_arena_alloc(&c->tmp, sizeof *fr);
        fr->fn = fn;
        fr->prefix = fresh_prefix(c, f.name, f.op_type);
        fr->actual_in = ir_arena_alloc(&c->tmp, (fn->n_input + 1) * sizeof *fr->actual_in);
        fr->actual_out = ir_arena_alloc(&c->tmp, (fn->n_output + 1) * sizeof *fr->actual_out);
        for (size_t k = 0; k < fn->n_input; k++)
            fr->actual_in[k] = k < f.n_inputs ? f.inputs[k] : "";
        for (size_t k = 0; k < fn->n_output; k++)
            fr->actual_out[k] = k < f.n_outputs ? f.outputs[k] : "";
        fr->attrs = f.attrs;
        fr->n_attrs = f.n_attrs;
        fr->depth = depth + 1;
        if (!flatten(c, fn->node, fn->n_node, fr, fr, depth + 1, out)) return false;
    }
    return true;
}

bool onnx_flatten(OnnxCtx *c, Onnx__NodeProto *const *nodes, size_t n_nodes,
                  const OnnxFrame *attr_frame, OnnxFlatVec *out) {
    return flatten(c, nodes, n_nodes, NULL, attr_frame, attr_frame ? attr_frame->depth : 0, out);
}
