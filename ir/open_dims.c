/* The open dims of a graph's inputs, and the one diagnostic that lists them (ir/open_dims.h).
 * Called by the backends' static-shape checks before they would list every value whose
 * shape is not static (a YOLOv8n without --dim: 176 lines that never named the dim). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "open_dims.h"

#define OPEN_DIMS_TEXT_MAX 8192 /* the diagnostic; a model with more open dims is cut */

static bool is_axis_name(const char *sym, const char *input, int axis) {
    char buf[64];
    size_t n = strlen(input);
    snprintf(buf, sizeof buf, "[%d]", axis);
    return strncmp(sym, input, n) == 0 && strcmp(sym + n, buf) == 0;
}

uint32_t ir_open_dims(const IrGraph *g, IrOpenDim **out) {
    uint32_t n = 0, cap = 0;
    IrOpenDim *v = NULL;
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        const IrValue *val = &g->values[g->inputs[i]];
        const IrType *t = &val->type;
        if (val->tensor) continue; /* an initializer's default: a weight, not an input */
        for (int a = 0; t->kind == IR_TYPE_TENSOR && a < t->rank; a++) {
            if (t->dims[a] >= 0) continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 8;
                IrOpenDim *p = realloc(v, cap * sizeof *p);
                IR_ASSERT(p);
                v = p;
            }
            const char *sym = t->syms[a] ? ir_graph_sym_name(g, t->syms[a]) : NULL;
            v[n++] = (IrOpenDim){i, a, t->syms[a], sym && !is_axis_name(sym, val->name, a)};
        }
    }
    *out = v;
    return n;
}

typedef struct Text {
    char buf[OPEN_DIMS_TEXT_MAX];
    size_t len;
} Text;

static void put(Text *t, const char *fmt, ...) DIAG_PRINTF(2, 3);
static void put(Text *t, const char *fmt, ...) {
    if (t->len >= sizeof t->buf) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->buf + t->len, sizeof t->buf - t->len, fmt, ap);
    va_end(ap);
    if (k > 0) t->len += (size_t)k;
}

uint32_t ir_report_open_dims(const IrGraph *g, Diag *d) {
    IrOpenDim *v;
    uint32_t n = ir_open_dims(g, &v);
    if (n == 0) return 0;
    Text *t = calloc(1, sizeof *t);
    IR_ASSERT(t);
    put(t, "%u dim%s of the inputs %s no value; a bundle needs one for each. Add:", n,
        n == 1 ? "" : "s", n == 1 ? "has" : "have");
    /* a symbol once, with where it appears */
    for (uint32_t i = 0; i < n; i++) {
        if (!v[i].named) continue;
        bool seen = false;
        for (uint32_t k = 0; k < i && !seen; k++) seen = v[k].named && v[k].sym == v[i].sym;
        if (seen) continue;
        const char *sym = ir_graph_sym_name(g, v[i].sym);
        put(t, "\n    --dim %s=N    (symbolic dim '%s': input '%s' axis %d", sym, sym,
            g->values[g->inputs[v[i].input]].name, v[i].axis);
        for (uint32_t k = i + 1; k < n; k++)
            if (v[k].named && v[k].sym == v[i].sym)
                put(t, ", input '%s' axis %d", g->values[g->inputs[v[k].input]].name, v[k].axis);
        put(t, ")");
    }
    /* an input with axes without a name: its whole shape, open axes as D<axis> */
    for (uint32_t i = 0; i < n; i++) {
        if (v[i].named) continue;
        bool seen = false;
        for (uint32_t k = 0; k < i && !seen; k++) seen = !v[k].named && v[k].input == v[i].input;
        if (seen) continue;
        const IrValue *val = &g->values[g->inputs[v[i].input]];
        put(t, "\n    --shape %s=", val->name);
        for (int a = 0; a < val->type.rank; a++) {
            if (val->type.dims[a] >= 0) put(t, "%s%lld", a ? "x" : "", (long long)val->type.dims[a]);
            else put(t, "%sD%d", a ? "x" : "", a);
        }
        uint32_t n_axes = 0;
        for (uint32_t k = i; k < n; k++) n_axes += !v[k].named && v[k].input == v[i].input;
        put(t, "    (input '%s': %s", val->name, n_axes > 1 ? "axes" : "axis");
        const char *sep = " ";
        for (uint32_t k = i; k < n; k++)
            if (!v[k].named && v[k].input == v[i].input) {
                put(t, "%s%d", sep, v[k].axis);
                sep = ", ";
            }
        put(t, " without a name or value; D<axis>: its size)");
    }
    if (t->len >= sizeof t->buf) memcpy(t->buf + sizeof t->buf - 4, "...", 4);
    diag_error(d, "%s", t->buf);
    free(t);
    free(v);
    return n;
}
