/* The dimension overrides of a load: `--dim NAME=N` binds a symbolic dimension everywhere in
 * the model, `--shape INPUT=1x3x48x192` gives one graph input its whole shape (its symbolic
 * dims become bindings too, its dims without a name take the values directly), and the
 * main graph's input dims that stay open, a negative dim_value (-1, which exporters write
 * and ONNX Runtime reads as "unknown") or a dim with neither value nor name, become symbols
 * named "INPUT[AXIS]". An override the model cannot take (an input or a symbol it lacks, a
 * rank or fixed dim that differs, two values for one symbol) is an error, counted in
 * opts->n_override_errors so that the command can call it a usage error. Runs inside
 * onnx_load_buffer: prepare before the graph, input per graph input, finish after. */
#include <stdio.h>
#include <string.h>

#include "ir/open_dims.h"
#include "onnx_internal.h"

#define ONNX_DIMS_LIST_MAX 8 /* names listed in a diagnostic before "..." */

typedef struct OnnxBinding {
    const char *name;
    int64_t value;
    const char *input; /* the shape override's input that bound it; NULL: a dim override */
    bool used;
} OnnxBinding;

struct OnnxDims {
    OnnxBinding *binds;
    uint32_t n_binds;
    const OnnxShapeOverride **input_shape; /* per main-graph input, or NULL */
    uint32_t n_inputs;
};

static void override_error(OnnxCtx *c, const char *fmt, ...) DIAG_PRINTF(2, 3);
static void override_error(OnnxCtx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    diag_vadd(c->d, DIAG_ERROR, fmt, ap);
    va_end(ap);
    if (c->opts && c->opts->n_override_errors) (*c->opts->n_override_errors)++;
}

static OnnxBinding *find_binding(struct OnnxDims *D, const char *name) {
    for (uint32_t i = 0; i < D->n_binds; i++)
        if (strcmp(D->binds[i].name, name) == 0) return &D->binds[i];
    return NULL;
}

/* "1x3x48x192" for a diagnostic, in c->tmp. */
static const char *shape_text(OnnxCtx *c, const OnnxShapeOverride *s) {
    size_t cap = (size_t)s->rank * 21 + 2, k = 0;
    char *t = ir_arena_alloc(&c->tmp, cap);
    for (int a = 0; a < s->rank; a++)
        k += (size_t)snprintf(t + k, cap - k, "%s%lld", a ? "x" : "", (long long)s->dims[a]);
    return t;
}

/* The main graph's inputs, "'x', 'mask'", for a diagnostic. */
static const char *input_list(OnnxCtx *c, const Onnx__GraphProto *gp) {
    size_t cap = 32;
    for (size_t i = 0; i < gp->n_input && i < ONNX_DIMS_LIST_MAX; i++)
        cap += strlen(gp->input[i]->name ? gp->input[i]->name : "") + 4;
    char *t = ir_arena_alloc(&c->tmp, cap);
    size_t k = 0;
    for (size_t i = 0; i < gp->n_input && i < ONNX_DIMS_LIST_MAX; i++)
        k += (size_t)snprintf(t + k, cap - k, "%s'%s'", i ? ", " : "",
                              gp->input[i]->name ? gp->input[i]->name : "");
    if (gp->n_input > ONNX_DIMS_LIST_MAX) snprintf(t + k, cap - k, ", ...");
    if (gp->n_input == 0) snprintf(t, cap, "none");
    return t;
}

/* Binds symbol name to value for input; an error when it holds another value already. */
static bool bind(OnnxCtx *c, const char *name, int64_t value, const char *input, int axis) {
    struct OnnxDims *D = c->dims;
    OnnxBinding *b = find_binding(D, name);
    if (b) {
        b->used |= input != NULL;
        if (b->value == value) return true;
        if (b->input)
            override_error(c, "input shape '%s': axis %d is the symbolic dimension '%s', which "
                           "the shape of input '%s' sets to %lld; this shape says %lld", input,
                           axis, name, b->input, (long long)b->value, (long long)value);
        else
            override_error(c, "input shape '%s': axis %d is the symbolic dimension '%s', set "
                           "to %lld by a dimension override; this shape says %lld", input, axis,
                           name, (long long)b->value, (long long)value);
        return false;
    }
    D->binds[D->n_binds++] = (OnnxBinding){name, value, input, input != NULL};
    return true;
}

/* Checks shape override s against input k of the main graph and binds its symbols. */
static void prepare_shape(OnnxCtx *c, const Onnx__GraphProto *gp, const OnnxShapeOverride *s) {
    struct OnnxDims *D = c->dims;
    size_t k = 0;
    while (k < gp->n_input && strcmp(gp->input[k]->name ? gp->input[k]->name : "", s->input))
        k++;
    if (k == gp->n_input) {
        override_error(c, "input shape '%s=%s': the model has no input '%s' (its inputs: %s)",
                       s->input, shape_text(c, s), s->input, input_list(c, gp));
        return;
    }
    if (D->input_shape[k]) {
        override_error(c, "input '%s' is given two shapes", s->input);
        return;
    }
    const Onnx__TypeProto *tp = gp->input[k]->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
        override_error(c, "input shape '%s=%s': input '%s' is not a tensor", s->input,
                       shape_text(c, s), s->input);
        return;
    }
    const Onnx__TensorShapeProto *sh = tp->tensor_type->shape;
    if (sh && (int)sh->n_dim != s->rank) {
        override_error(c, "input shape '%s=%s': input '%s' has rank %zu, the shape gives %d "
                       "dims", s->input, shape_text(c, s), s->input, sh->n_dim, s->rank);
        return;
    }
    for (int a = 0; sh && a < s->rank; a++) {
        const Onnx__TensorShapeProto__Dimension *dim = sh->dim[a];
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            dim->dim_value >= 0) {
            if (dim->dim_value != s->dims[a]) {
                override_error(c, "input shape '%s=%s': axis %d of input '%s' is %lld in the "
                               "model", s->input, shape_text(c, s), a, s->input,
                               (long long)dim->dim_value);
                return;
            }
        } else if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   dim->dim_param && dim->dim_param[0]) {
            if (!bind(c, dim->dim_param, s->dims[a], s->input, a)) return;
        }
    }
    D->input_shape[k] = s;
}

bool onnx_dims_prepare(OnnxCtx *c, const Onnx__GraphProto *gp) {
    struct OnnxDims *D = ir_arena_alloc(&c->tmp, sizeof *D);
    const OnnxLoadOptions *o = c->opts;
    c->dims = D;
    D->n_inputs = (uint32_t)gp->n_input;
    D->input_shape = ir_arena_alloc(&c->tmp, (gp->n_input + 1) * sizeof *D->input_shape);
    if (!o) return true;
    uint32_t before = c->d->n_errors;
    D->binds = ir_arena_alloc(&c->tmp, ((size_t)o->n_dims + (size_t)o->n_shapes * IR_MAX_RANK + 1) *
                                           sizeof *D->binds);
    for (uint32_t i = 0; i < o->n_dims; i++) {
        OnnxBinding *b = find_binding(D, o->dims[i].name);
        if (b && b->value != o->dims[i].value)
            override_error(c, "dimension '%s' is given two values, %lld and %lld",
                           o->dims[i].name, (long long)b->value, (long long)o->dims[i].value);
        else if (!b)
            D->binds[D->n_binds++] = (OnnxBinding){o->dims[i].name, o->dims[i].value, NULL, false};
    }
    for (uint32_t s = 0; s < o->n_shapes; s++) {
        const OnnxShapeOverride *sh = &o->shapes[s];
        bool ok = sh->input && sh->rank >= 0 && sh->rank <= IR_MAX_RANK;
        for (int a = 0; ok && a < sh->rank; a++) ok = sh->dims[a] >= 0;
        if (!ok) override_error(c, "input shape %u is malformed", s);
        else prepare_shape(c, gp, sh);
    }
    return c->d->n_errors == before;
}

bool onnx_dims_bound(OnnxCtx *c, const char *name, int64_t *value) {
    OnnxBinding *b = c->dims ? find_binding(c->dims, name) : NULL;
    if (!b) return false;
    b->used = true;
    *value = b->value;
    return true;
}

bool onnx_dims_input(OnnxCtx *c, uint32_t k, const char *name, IrType *t) {
    struct OnnxDims *D = c->dims;
    if (!D || t->kind != IR_TYPE_TENSOR) return true;
    const OnnxShapeOverride *s = k < D->n_inputs ? D->input_shape[k] : NULL;
    if (s && t->rank < 0) { /* the model gives no shape: the override is the shape */
        t->rank = (int8_t)s->rank;
        for (int a = 0; a < s->rank; a++) t->dims[a] = s->dims[a], t->syms[a] = 0;
    }
    int64_t known = 1; /* bounded like a tensor's element count */
    for (int a = 0; a < t->rank; a++) {
        if (t->dims[a] < 0 && !t->syms[a] && s) {
            t->dims[a] = s->dims[a];
        } else if (t->dims[a] < 0 && !t->syms[a]) { /* open, without a name: name it */
            size_t len = strlen(name) + 24;
            char *sym = ir_arena_alloc(&c->tmp, len);
            int64_t v;
            snprintf(sym, len, IR_OPEN_AXIS_FMT, name, a);
            if (onnx_dims_bound(c, sym, &v)) t->dims[a] = v;
            else t->syms[a] = ir_graph_sym(c->root, sym);
        }
        if (t->dims[a] > 0 && known > ONNX_MAX_ELEMS / t->dims[a]) {
            override_error(c, "input '%s': the shape has more than %lld elements", name,
                           (long long)ONNX_MAX_ELEMS);
            return false;
        }
        if (t->dims[a] >= 0) known *= t->dims[a];
    }
    return true;
}

bool onnx_dims_finish(OnnxCtx *c, const IrGraph *g) {
    struct OnnxDims *D = c->dims;
    bool ok = true;
    for (uint32_t i = 0; D && i < D->n_binds; i++) {
        if (D->binds[i].used || D->binds[i].input) continue;
        char open[256] = "";
        size_t k = 0;
        for (uint32_t s = 0; s < g->n_syms && s <= ONNX_DIMS_LIST_MAX && k < sizeof open; s++)
            k += (size_t)snprintf(open + k, sizeof open - k, s == ONNX_DIMS_LIST_MAX ? ", ..."
                                  : "%s'%s'", s ? ", " : "", g->syms[s]);
        override_error(c, "dimension '%s' is not a symbolic dimension of the model (%s%s)",
                       D->binds[i].name, g->n_syms ? "its open dims: " : "it has none open",
                       open);
        ok = false;
    }
    return ok;
}
