/* C backend emitter of FusedEltwise (passes/fuse_eltwise.c): one loop nest over the output,
 * broadcast dimensions merged as in cgen_eltwise.c, whose body computes the steps into
 * locals (t0, t1, ...) with the expressions of cgen_eltwise.c (cgen_eltwise_expr) and
 * stores the last. One-element constant inputs become literals. float and double. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/c/cgen.h"
#include "passes/passes.h"

#define FEL_MAX_IN CGEN_BCAST_MAX_IN /* = FusedEltwise's in_max */
#define FEL_MAX_ATTRS 8 /* attribute slots of a step's op (Selu, HardSigmoid: 2) */


/* A one-element constant input as a literal of the compute type, or NULL. */
static const char *const_literal(CgenCtx *cx, uint32_t v, bool dbl) {
    const IrTensor *c = cgen_const(cx, v);
    if (!c || c->n_elems != 1 || !c->data) return NULL;
    double x = c->dtype == IR_DTYPE_F64 ? ((const double *)c->data)[0]
               : c->dtype == IR_DTYPE_F32 ? ((const float *)c->data)[0]
                                          : NAN;
    if (!isfinite(x)) return NULL;
    char buf[64];
    snprintf(buf, sizeof buf, dbl ? "%.17g" : "%.9g", x);
    if (!strpbrk(buf, ".e")) strcat(buf, ".0");
    return cgen_fmt(cx, "%s%s%s%s", x < 0 ? "(" : "", buf, dbl ? "" : "f", x < 0 ? ")" : "");
}

/* Replaces $0 and $1 in template tmpl by a0 and a1 (loads, locals, literals: atoms). */
static const char *substitute(CgenCtx *cx, const char *tmpl, const char *a0, const char *a1) {
    CWriter e;
    cw_init(&e);
    for (const char *p = tmpl; *p; p++) {
        if (*p == '$' && (p[1] == '0' || p[1] == '1')) {
            cw_raw(&e, "%s", p[1] == '0' ? a0 : a1);
            p++;
        } else {
            cw_raw(&e, "%c", *p);
        }
    }
    const char *r = cgen_fmt(cx, "%s", e.buf ? e.buf : "");
    cw_free(&e);
    return r;
}

static bool emit_fused_eltwise(CgenCtx *cx, const IrNode *n) {
    uint32_t out = n->outputs[0];
    IrDType t = (IrDType)cgen_type(cx, out)->dtype;
    if (t != IR_DTYPE_F32 && t != IR_DTYPE_F64)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    bool dbl = t == IR_DTYPE_F64;
    int n_in = (int)n->n_inputs;
    if (n_in > FEL_MAX_IN) return cgen_unsupported(cx, n, "more than %d inputs", FEL_MAX_IN);
    for (int k = 0; k < n_in; k++)
        if (n->inputs[k] == IR_NONE || cgen_type(cx, n->inputs[k])->dtype != t)
            return cgen_unsupported(cx, n, "input %d is absent or not of the output's type", k);
    uint32_t n_args, n_steps;
    const int64_t *args = ir_attr_ints(n, IR_ATTR_FUSED_ELTWISE_ARGS, &n_args);
    const IrAttr *ops = ir_node_attr(n, IR_ATTR_FUSED_ELTWISE_OPS);
    n_steps = ops->present ? ops->n : 0;
    if (n_steps == 0 || n_args != 2 * n_steps)
        return cgen_unsupported(cx, n, "%u ops with %u args (want 2 per op)", n_steps, n_args);
    CgenBcastLoop L;
    if (!cgen_bcast_loop(cx, out, n->inputs, n_in, &L))
        return cgen_unsupported(cx, n, "input shapes that do not broadcast to the output");
    if (cgen_numel(cx, out) == 0) {
        cw_comment(cx->w, "empty output: nothing to compute");
        return true;
    }
    /* operand expressions: the inputs' loads, then the steps' locals */
    const char *operand[FEL_MAX_IN];
    const char *lit[FEL_MAX_IN];
    for (int k = 0; k < n_in; k++) {
        lit[k] = const_literal(cx, n->inputs[k], dbl);
        operand[k] = lit[k] ? lit[k] : cgen_fmt(cx, "x%d[%s]", k, cgen_bcast_index(cx, &L, k + 1));
    }
    const char *CT = dbl ? "double" : "float";
    const char **body = ir_arena_alloc(&cx->b.scratch, n_steps * sizeof *body);
    for (uint32_t s = 0; s < n_steps; s++) {
        IrNode step;
        IrAttr slots[FEL_MAX_ATTRS];
        if (!pass_fused_eltwise_step(n, s, &step, slots, FEL_MAX_ATTRS))
            return cgen_unsupported(cx, n, "step %u: not an op FusedEltwise knows", s);
        uint32_t ins[2] = {out, out}; /* for the operands' dtype: the output's */
        step.inputs = ins;
        step.n_inputs = ir_op_info((IrOp)step.op)->in_min;
        step.outputs = &out;
        step.n_outputs = 1;
        const char *a[2] = {"", ""};
        for (uint32_t j = 0; j < 2; j++) {
            int64_t r = args[2 * s + j];
            bool want = j < step.n_inputs;
            if (!want && r == -1) continue;
            if (!want || r < 0 || r >= n_in + (int64_t)s)
                return cgen_unsupported(cx, n, "step %u: operand %lld", s, (long long)r);
            a[j] = r < n_in ? operand[r] : cgen_fmt(cx, "t%lld", (long long)(r - n_in));
        }
        const char *tmpl;
        if (!cgen_eltwise_expr(cx, &step, &tmpl)) return false;
        body[s] = substitute(cx, tmpl, a[0], a[1]);
    }
    CWriter *w = cx->w;
    cw_open(w, "%s", "");
    for (int k = 0; k < n_in; k++)
        if (!lit[k]) cw_line(w, "const %s *x%d = %s;", CT, k, cgen_ptr(cx, n->inputs[k]));
    cw_line(w, "%s *y = %s;", CT, cgen_ptr(cx, out));
    if (L.rank > 0) {
        cw_indent(w);
        cw_raw(w, "size_t ");
        for (int d = 0; d < L.rank; d++) cw_raw(w, "%si%d", d ? ", " : "", d);
        cw_raw(w, ";\n");
    }
    for (int d = 0; d < L.rank; d++) {
        const char *head = cgen_fmt(cx, "for (i%d = 0; i%d < %lld; i%d++)", d, d,
                                    (long long)L.dims[d], d);
        if (d + 1 < L.rank) {
            cw_line(w, "%s", head);
            w->indent++;
        } else {
            cw_open(w, "%s", head);
        }
    }
    if (L.rank == 0) cw_open(w, "%s", "");
    for (uint32_t s = 0; s + 1 < n_steps; s++) cw_line(w, "const %s t%u = %s;", CT, s, body[s]);
    cw_line(w, "y[%s] = %s;", cgen_bcast_index(cx, &L, 0), body[n_steps - 1]);
    cw_close(w, NULL);
    w->indent -= L.rank > 0 ? L.rank - 1 : 0;
    cw_close(w, NULL);
    return true;
}

void cgen_register_fusedelt(CgenEmitFn *table) { table[IR_OP_FUSED_ELTWISE] = emit_fused_eltwise; }
