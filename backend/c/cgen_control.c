/* Control flow in the C backend: If, Loop and Scan become C control flow (if/else, for
 * loops) whose bodies are the subgraphs' nodes, emitted inline through the same kernel
 * table, over memory that pass_plan_memory planned statically.
 *
 * Design.
 * - Scopes. A subgraph is emitted with its own CgenCtx (scope_open): g is the subgraph,
 *   weight offsets are its constants' (bundle.c lays every graph's constants into the one
 *   weights blob), and cx->expr overrides the placement of the values the enclosing node
 *   provides: OUTER values resolve to the enclosing graph's pointers, a scan slice to a
 *   pointer into the scanned tensor, a carried value to its state buffer, a result written
 *   in place to the node's output. Everything else resolves through cgen_ptr as usual.
 * - Memory. The planner gives each subgraph a sub-arena inside one block of the enclosing
 *   arena reserved while the owning node runs (offsets are already absolute), with space
 *   for its intermediates, for the outputs that are copied out after each iteration, and
 *   for the inputs the emitter fills (iteration number, condition, gathered slices). A
 *   loop-carried value lives in the node's own output buffer: it is initialised there, the
 *   body reads it from there, and the body's new value is copied back after each
 *   iteration (the body's result never aliases its input, so an iteration cannot read a
 *   half-updated state). Loop scan outputs, If results and axis-0 Scan outputs are
 *   written by the body straight into the node's output.
 * - Static shapes only. If branches must produce the If's static result types; carried
 *   values must keep their type across iterations; a Loop's scan outputs need a static
 *   length: a constant trip count without condition is checked here, otherwise the count
 *   is checked at run time (RT_ERR_SHAPE before a write past the end, and when the loop
 *   stops early). Sequence and optional values are refused by the bundle's type check.
 * - cgen_control_prepare readies subgraphs before the check: constant nodes are lowered,
 *   Identity nodes bypassed and dead nodes dropped inside them; a body whose values have
 *   no static types (shape inference relaxes loop-carried values) is typed again from the
 *   node's static input types, and a result whose length depends on the data takes the
 *   declared static shape of a shape-preserving reader. */
#include <stdlib.h>
#include <string.h>

#include "backend/c/cgen.h"
#include "passes/passes.h"

/* ---- preparing subgraphs ---- */

/* Whether every value of g (and of its subgraphs) that needs storage has a static type. */
static bool graph_static(const IrGraph *g) {
    for (uint32_t v = 0; v < g->n_values; v++) {
        const IrValue *val = &g->values[v];
        if (val->kind == IR_VALUE_CONST || (val->kind == IR_VALUE_NODE && val->producer == IR_NONE))
            continue;
        if (val->type.kind != IR_TYPE_TENSOR || !ir_type_is_static(&val->type)) return false;
    }
    for (uint32_t s = 0; s < g->n_subgraphs; s++)
        if (!graph_static(g->subgraphs[s])) return false;
    return true;
}

static uint32_t body_index(const IrNode *n, IrAttrId id) {
    const IrAttr *a = ir_node_attr(n, id);
    if (!a || !a->present || a->kind != IR_ATTR_KIND_GRAPH || a->n < 1 || !a->graphs)
        return IR_NONE;
    return a->graphs[0];
}

/* Normalized scan axis j of a Scan node (inputs or outputs); -1 when out of range. */
static int scan_axis(const IrNode *n, bool output, uint32_t j, int rank) {
    uint32_t n_axes;
    const int64_t *axes = ir_attr_ints(n, output ? IR_ATTR_SCAN_SCAN_OUTPUT_AXES
                                                 : IR_ATTR_SCAN_SCAN_INPUT_AXES, &n_axes);
    int64_t a = axes && j < n_axes ? axes[j] : 0;
    if (a < 0) a += rank;
    return a >= 0 && a < rank ? (int)a : -1;
}

static void drop_axis(IrType *t, int axis) {
    for (int i = axis; i + 1 < t->rank; i++) {
        t->dims[i] = t->dims[i + 1];
        t->syms[i] = t->syms[i + 1];
    }
    t->rank--;
}

/* The static type body input k of Loop or Scan node n sees, or an UNDEF type. */
static IrType body_input_type(const IrGraph *g, const IrNode *n, uint32_t k) {
    IrType none = {0};
    if (n->op == IR_OP_LOOP) {
        if (k == 0) return ir_type_tensor(IR_DTYPE_I64, 0, NULL);
        if (k == 1) return ir_type_tensor(IR_DTYPE_BOOL, 0, NULL);
        return k < n->n_inputs && n->inputs[k] != IR_NONE ? g->values[n->inputs[k]].type : none;
    }
    bool v8 = n->opset < 9;
    uint32_t base = v8 ? 1 : 0;
    int64_t m = ir_attr_i(n, IR_ATTR_SCAN_NUM_SCAN_INPUTS);
    uint32_t n_in = n->n_inputs - base;
    if (m < 0 || (uint32_t)m > n_in || k >= n_in || n->inputs[base + k] == IR_NONE) return none;
    IrType t = g->values[n->inputs[base + k]].type;
    uint32_t n_state = n_in - (uint32_t)m;
    if (t.kind != IR_TYPE_TENSOR || !ir_type_is_static(&t)) return none;
    int need = (v8 ? 1 : 0) + (k >= n_state ? 1 : 0);
    if (t.rank < need) return none;
    if (v8) drop_axis(&t, 0);                    /* the batch axis */
    if (k >= n_state) {
        int axis = v8 ? 0 : scan_axis(n, false, k - n_state, t.rank);
        if (axis < 0) return none;
        drop_axis(&t, axis);                     /* the sequence axis */
    }
    return t;
}

/* Pins the types of a Loop or Scan body's inputs to what the node gives them and infers
 * the body again. */
static bool retype_body(IrGraph *g, const IrNode *n, IrGraph *b, Diag *d) {
    for (uint32_t k = 0; k < b->n_inputs; k++) {
        IrType t = body_input_type(g, n, k);
        if (t.kind == IR_TYPE_TENSOR && ir_type_is_static(&t)) b->values[b->inputs[k]].type = t;
    }
    for (uint32_t v = 0; v < b->n_values; v++) {
        IrValue *val = &b->values[v];
        if (val->kind == IR_VALUE_OUTER && val->producer < g->n_values &&
            val->type.kind == IR_TYPE_UNDEF)
            val->type = g->values[val->producer].type;
    }
    return ir_infer_shapes(b, d);
}

/* A Loop or Scan result whose length depends on the data (a trip count computed at run
 * time) takes the static shape of a shape-preserving reader (Cast, Identity, a unary
 * elementwise op) whose type the model declares, e.g. a graph output: the emitter then
 * checks the trip count against it at run time. */
static bool shape_from_reader(IrGraph *g, uint32_t o) {
    IrType *t = &g->values[o].type;
    if (t->kind != IR_TYPE_TENSOR || t->rank < 0 || ir_type_is_static(t)) return false;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *r = &g->nodes[i];
        bool unary = r->op == IR_OP_CAST || r->op == IR_OP_IDENTITY ||
                     (ir_op_has((IrOp)r->op, OPF_ELTWISE) && r->n_inputs == 1);
        if (r->dead || !unary || r->n_inputs < 1 || r->inputs[0] != o || r->n_outputs < 1 ||
            r->outputs[0] == IR_NONE)
            continue;
        const IrType *rt = &g->values[r->outputs[0]].type;
        if (rt->kind != IR_TYPE_TENSOR || rt->rank != t->rank || !ir_type_is_static(rt)) continue;
        for (int k = 0; k < t->rank; k++) {
            if (t->dims[k] >= 0 && t->dims[k] != rt->dims[k]) return false;
            t->dims[k] = rt->dims[k];
            t->syms[k] = 0;
        }
        return true;
    }
    return false;
}

static bool prepare_graph(IrGraph *g, Diag *d, bool *retyped) {
    bool ok = true;
    for (uint32_t s = 0; s < g->n_subgraphs; s++) {
        IrGraph *sub = g->subgraphs[s];
        pass_lower_constants(sub, d);
        pass_remove_identity(sub, d);
        pass_dce(sub, d);
    }
    for (uint32_t i = 0; i < g->n_nodes && ok; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead || (n->op != IR_OP_LOOP && n->op != IR_OP_SCAN)) continue;
        uint32_t bi = body_index(n, n->op == IR_OP_LOOP ? IR_ATTR_LOOP_BODY : IR_ATTR_SCAN_BODY);
        for (uint32_t k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] != IR_NONE && shape_from_reader(g, n->outputs[k])) *retyped = true;
        if (bi >= g->n_subgraphs || graph_static(g->subgraphs[bi])) continue;
        ok = retype_body(g, n, g->subgraphs[bi], d);
        *retyped = true;
    }
    for (uint32_t s = 0; s < g->n_subgraphs && ok; s++)
        ok = prepare_graph(g->subgraphs[s], d, retyped);
    return ok;
}

bool cgen_control_prepare(IrGraph *g, Diag *d) {
    bool retyped = false;
    if (!prepare_graph(g, d, &retyped)) return false;
    /* results of retyped loops become static too (inference keeps the pinned types) */
    return !retyped || ir_infer_shapes(g, d);
}

/* ---- scopes ---- */

static int64_t value_bytes(const CgenCtx *cx, uint32_t v) {
    const IrType *t = cgen_type(cx, v);
    return (int64_t)ir_dtype_size_bytes((IrDType)t->dtype, ir_type_numel(t));
}

/* Opens the scope of subgraph sub of cx->b.g into *in. cx is suspended (it must not allocate)
 * until scope_close. */
static void scope_open(CgenCtx *cx, const IrGraph *sub, CgenCtx *in) {
    const char **expr = calloc(sub->n_values + 1, sizeof *expr);
    const char **field = calloc(sub->n_values + 1, sizeof *field);
    IR_ASSERT(expr && field);
    for (uint32_t v = 0; v < sub->n_values; v++) {
        const IrValue *val = &sub->values[v];
        if (val->kind == IR_VALUE_OUTER && val->producer < cx->b.g->n_values)
            expr[v] = cgen_ptr(cx, val->producer);
    }
    uint32_t gi = 0;
    while (gi < cx->b.n_graphs && cx->b.graphs[gi] != sub) gi++;
    IR_ASSERT(gi < cx->b.n_graphs);
    *in = *cx;
    in->b.g = sub;
    in->b.field = field;
    in->expr = expr;
    if (cx->names) {
        in->local = calloc(sub->n_values + 1, sizeof *in->local);
        IR_ASSERT(in->local);
    }
    in->b.weight_offset = cx->b.graph_weight_offset[gi];
}

static void scope_close(CgenCtx *cx, CgenCtx *in) {
    cx->b.scratch = in->b.scratch;
    memcpy(cx->runtime, in->runtime, sizeof cx->runtime);
    cx->n_runtime = in->n_runtime;
    cx->n_temps = in->n_temps;
    cx->uses_rc = in->uses_rc;
    cx->uses_w = in->uses_w;
    cx->uses_a = in->uses_a;
    cx->uses_par = in->uses_par;
    cx->par_scratch = in->par_scratch;
    free(in->b.field);
    free(in->expr);
    if (in->local != cx->local) free(in->local);
}

/* Whether the planner has v, a subgraph output, written straight into the node's output. */
static bool written_in_place(const CgenCtx *in, uint32_t v) {
    const IrValue *val = &in->b.g->values[v];
    return val->kind == IR_VALUE_NODE && val->producer != IR_NONE && val->mem_offset < 0;
}

static void emit_copy(CgenCtx *in, const char *dst, uint32_t v) {
    int64_t bytes = value_bytes(in, v);
    if (bytes > 0) cw_line(in->w, "memcpy(%s, %s, %lld);", dst, cgen_ptr(in, v), (long long)bytes);
}

/* Same element type and element count: the same bytes. */
static bool same_storage(const IrType *a, const IrType *b) {
    return a->dtype == b->dtype && ir_type_numel(a) == ir_type_numel(b);
}

static bool check_sliceable(CgenCtx *cx, const IrNode *n, const IrType *t) {
    if (ir_dtype_bits((IrDType)t->dtype) >= 8) return true;
    return cgen_unsupported(cx, n, "slices of %s tensors (sub-byte elements)",
                            ir_dtype_name((IrDType)t->dtype));
}

/* ---- If ---- */

static bool emit_branch(CgenCtx *cx, const IrNode *n, const IrGraph *b, const char **dst) {
    CgenCtx in;
    scope_open(cx, b, &in);
    for (uint32_t k = 0; k < n->n_outputs; k++)
        if (dst[k] && written_in_place(&in, b->outputs[k])) in.expr[b->outputs[k]] = dst[k];
    bool ok = cgen_emit_nodes(&in);
    for (uint32_t k = 0; k < n->n_outputs; k++) {
        if (!dst[k] || written_in_place(&in, b->outputs[k])) continue;
        emit_copy(&in, dst[k], b->outputs[k]);
    }
    scope_close(cx, &in);
    return ok;
}

static bool emit_if(CgenCtx *cx, const IrNode *n) {
    uint32_t bi[2] = {body_index(n, IR_ATTR_IF_THEN_BRANCH), body_index(n, IR_ATTR_IF_ELSE_BRANCH)};
    const IrGraph *br[2];
    for (int i = 0; i < 2; i++) {
        if (bi[i] >= cx->b.g->n_subgraphs)
            return cgen_unsupported(cx, n, "an If without both branches");
        br[i] = cx->b.g->subgraphs[bi[i]];
        if (br[i]->n_outputs != n->n_outputs)
            return cgen_unsupported(cx, n, "a branch with %u outputs for %u results",
                                    br[i]->n_outputs, n->n_outputs);
        for (uint32_t k = 0; k < n->n_outputs; k++) {
            if (n->outputs[k] == IR_NONE) continue;
            const IrType *bt = &br[i]->values[br[i]->outputs[k]].type;
            const IrType *ot = cgen_type(cx, n->outputs[k]);
            if (!same_storage(bt, ot))
                return cgen_unsupported(cx, n, "a %s branch result %s where the If's static "
                                        "result is %s", i ? "else" : "then",
                                        cgen_type_str(cx, bt), cgen_type_str(cx, ot));
        }
    }
    const char **dst = ir_arena_alloc(&cx->b.scratch, (n->n_outputs + 1) * sizeof *dst);
    for (uint32_t k = 0; k < n->n_outputs; k++)
        dst[k] = n->outputs[k] != IR_NONE ? cgen_ptr(cx, n->outputs[k]) : NULL;
    cw_open(cx->w, "if (%s[0])", cgen_ptr(cx, n->inputs[0]));
    bool ok = emit_branch(cx, n, br[0], dst);
    cx->w->indent--;
    cw_line(cx->w, "} else {");
    cx->w->indent++;
    ok &= emit_branch(cx, n, br[1], dst);
    cw_close(cx->w, NULL);
    return ok;
}

/* ---- Loop ---- */

/* Loop(M?, cond?, v_initial...N) -> (v_final...N, scan...K);
 * body(iter_num, cond, v...N) -> (cond, v...N, scan...K). */
static bool emit_loop(CgenCtx *cx, const IrNode *n) {
    uint32_t bi = body_index(n, IR_ATTR_LOOP_BODY);
    if (bi >= cx->b.g->n_subgraphs) return cgen_unsupported(cx, n, "a Loop without a body");
    const IrGraph *b = cx->b.g->subgraphs[bi];
    uint32_t n_carried = n->n_inputs - 2;
    if (n->n_outputs < n_carried || b->n_inputs != n_carried + 2 ||
        b->n_outputs != 1 + n->n_outputs)
        return cgen_unsupported(cx, n, "a body with %u inputs and %u outputs for %u inputs and "
                                "%u outputs", b->n_inputs, b->n_outputs, n->n_inputs,
                                n->n_outputs);
    uint32_t n_scan = n->n_outputs - n_carried;
    if (b->values[b->inputs[0]].type.dtype != IR_DTYPE_I64)
        return cgen_unsupported(cx, n, "an iteration number that is not int64");
    for (uint32_t k = 0; k < n_carried; k++) {
        uint32_t init = n->inputs[2 + k], bout = b->outputs[1 + k];
        if (init == IR_NONE) return cgen_unsupported(cx, n, "an omitted initial value");
        const IrType *t = cgen_type(cx, init);
        if (!same_storage(t, &b->values[b->inputs[2 + k]].type) ||
            !same_storage(t, &b->values[bout].type) ||
            (n->outputs[k] != IR_NONE && !same_storage(t, cgen_type(cx, n->outputs[k]))))
            return cgen_unsupported(cx, n, "loop-carried value %u changing its type or shape "
                                    "across iterations (initial %s, body result %s)", k,
                                    cgen_type_str(cx, t),
                                    cgen_type_str(cx, &b->values[bout].type));
        for (uint32_t j = 0; j < n_carried; j++)
            if (j != k && bout == b->inputs[2 + j])
                return cgen_unsupported(cx, n, "a carried value passed to another carried slot");
    }
    int64_t len = -1; /* the static length of the scan outputs */
    for (uint32_t j = 0; j < n_scan; j++) {
        uint32_t o = n->outputs[n_carried + j];
        if (o == IR_NONE) continue;
        const IrType *ot = cgen_type(cx, o), *bt = &b->values[b->outputs[1 + n_carried + j]].type;
        if (!check_sliceable(cx, n, ot)) return false;
        if (ot->rank != bt->rank + 1 || ot->dtype != bt->dtype ||
            ir_type_numel(bt) * ot->dims[0] != ir_type_numel(ot))
            return cgen_unsupported(cx, n, "scan output %u of type %s from body results %s", j,
                                    cgen_type_str(cx, ot), cgen_type_str(cx, bt));
        if (len >= 0 && ot->dims[0] != len)
            return cgen_unsupported(cx, n, "scan outputs of different lengths");
        len = ot->dims[0];
    }
    const IrTensor *mc = cgen_const(cx, n->inputs[0]);
    bool has_cond = n->inputs[1] != IR_NONE;
    bool check_len = len >= 0;
    if (check_len && mc && !has_cond && mc->n_elems == 1 && mc->dtype == IR_DTYPE_I64) {
        int64_t m = ((const int64_t *)mc->data)[0];
        if ((m < 0 ? 0 : m) != len)
            return cgen_unsupported(cx, n, "a trip count of %lld for scan outputs of length %lld",
                                    (long long)m, (long long)len);
        check_len = false;
    }
    /* pointers of the enclosing graph first: cx is suspended while the body's scope is open */
    const char *mp = n->inputs[0] != IR_NONE ? cgen_ptr(cx, n->inputs[0]) : NULL;
    const char *cp = has_cond ? cgen_ptr(cx, n->inputs[1]) : NULL;
    const char **init = ir_arena_alloc(&cx->b.scratch, (n_carried + 1) * sizeof *init);
    const char **dst = ir_arena_alloc(&cx->b.scratch, (n->n_outputs + 1) * sizeof *dst);
    for (uint32_t k = 0; k < n_carried; k++) init[k] = cgen_ptr(cx, n->inputs[2 + k]);
    for (uint32_t k = 0; k < n->n_outputs; k++)
        dst[k] = n->outputs[k] != IR_NONE ? cgen_ptr(cx, n->outputs[k]) : NULL;
    unsigned id = cx->n_temps++;
    CgenCtx in;
    scope_open(cx, b, &in);
    const char *it = cgen_fmt(&in, "loop%u_i", id), *cv = cgen_fmt(&in, "loop%u_cond", id);
    CWriter *w = in.w;
    cw_open(w, "%s", "");
    cw_line(w, "int64_t %s;", it);
    if (has_cond) cw_line(w, "uint8_t %s = %s[0];", cv, cp);
    for (uint32_t k = 0; k < n_carried; k++) {
        uint32_t bin = b->inputs[2 + k];
        if (dst[k]) in.expr[bin] = dst[k];
        int64_t bytes = value_bytes(&in, bin);
        if (bytes > 0) cw_line(w, "memcpy(%s, %s, %lld);", cgen_ptr(&in, bin), init[k],
                               (long long)bytes);
    }
    for (uint32_t j = 0; j < n_scan; j++) {
        uint32_t bout = b->outputs[1 + n_carried + j];
        if (dst[n_carried + j] && written_in_place(&in, bout))
            in.expr[bout] = cgen_fmt(&in, "(%s + (size_t)%s * %lld)", dst[n_carried + j], it,
                                     (long long)cgen_numel(&in, bout));
    }
    const char *test = mp && has_cond ? cgen_fmt(&in, "%s < %s[0] && %s", it, mp, cv)
                       : mp           ? cgen_fmt(&in, "%s < %s[0]", it, mp)
                       : has_cond     ? cv
                                      : "";
    cw_open(w, "for (%s = 0; %s; %s++)", it, test, it);
    if (check_len) cw_line(w, "if (%s >= %lld) return RT_ERR_SHAPE; /* more iterations than the "
                              "scan outputs hold */", it, (long long)len);
    if (b->values[b->inputs[0]].mem_offset >= 0)
        cw_line(w, "%s[0] = %s;", cgen_ptr(&in, b->inputs[0]), it);
    if (b->values[b->inputs[1]].mem_offset >= 0)
        cw_line(w, "%s[0] = %s;", cgen_ptr(&in, b->inputs[1]), has_cond ? cv : "1");
    bool ok = cgen_emit_nodes(&in);
    cw_comment(w, "next iteration's state");
    if (has_cond) cw_line(w, "%s = %s[0];", cv, cgen_ptr(&in, b->outputs[0]));
    for (uint32_t k = 0; k < n_carried; k++) {
        uint32_t bin = b->inputs[2 + k], bout = b->outputs[1 + k];
        if (bout != bin) emit_copy(&in, cgen_ptr(&in, bin), bout);
    }
    for (uint32_t j = 0; j < n_scan; j++) {
        uint32_t bout = b->outputs[1 + n_carried + j];
        if (!dst[n_carried + j] || written_in_place(&in, bout)) continue;
        emit_copy(&in, cgen_fmt(&in, "(%s + (size_t)%s * %lld)", dst[n_carried + j], it,
                                (long long)cgen_numel(&in, bout)), bout);
    }
    cw_close(w, NULL);
    if (check_len) cw_line(w, "if (%s != %lld) return RT_ERR_SHAPE; /* fewer iterations than the "
                              "scan outputs hold */", it, (long long)len);
    cw_close(w, NULL);
    scope_close(cx, &in);
    return ok;
}

/* ---- Scan ---- */

/* One scanned tensor of a Scan node: where slice `pos` of batch `b` lies. */
typedef struct ScanSlice {
    const char *base;   /* the whole tensor */
    int64_t outer;      /* product of the dims before the scan axis (batch excluded) */
    int64_t inner;      /* elements of one slice row: product of the dims after the axis */
    bool reverse;
} ScanSlice;

/* Scan-9+: Scan(states...N, scans...M) -> (states...N, scan outputs...K);
 * Scan-8:  Scan(sequence_lens?, states...N, scans...M), every tensor with a leading batch
 * axis and the sequence axis next; body(states...N, slices...M) -> (states, outputs). */
static bool emit_scan(CgenCtx *cx, const IrNode *n) {
    uint32_t bi = body_index(n, IR_ATTR_SCAN_BODY);
    if (bi >= cx->b.g->n_subgraphs) return cgen_unsupported(cx, n, "a Scan without a body");
    const IrGraph *b = cx->b.g->subgraphs[bi];
    bool v8 = n->opset < 9;
    uint32_t base = v8 ? 1 : 0;
    if (v8 && n->n_inputs > 0 && n->inputs[0] != IR_NONE)
        return cgen_unsupported(cx, n, "sequence_lens (every sequence has the full length)");
    int64_t m = ir_attr_i(n, IR_ATTR_SCAN_NUM_SCAN_INPUTS);
    uint32_t n_in = n->n_inputs - base;
    if (m < 1 || (uint32_t)m > n_in || n->n_outputs < n_in - (uint32_t)m ||
        b->n_inputs != n_in || b->n_outputs != n->n_outputs)
        return cgen_unsupported(cx, n, "num_scan_inputs %lld with a body of %u inputs and %u "
                                "outputs", (long long)m, b->n_inputs, b->n_outputs);
    uint32_t n_state = n_in - (uint32_t)m, n_scan_out = n->n_outputs - n_state;
    uint32_t n_dirs, n_odirs;
    const int64_t *dirs = ir_attr_ints(n, v8 ? IR_ATTR_SCAN_DIRECTIONS
                                             : IR_ATTR_SCAN_SCAN_INPUT_DIRECTIONS, &n_dirs);
    const int64_t *odirs = v8 ? NULL : ir_attr_ints(n, IR_ATTR_SCAN_SCAN_OUTPUT_DIRECTIONS,
                                                    &n_odirs);
    if (v8) n_odirs = 0;
    for (uint32_t j = 0; j < (uint32_t)m; j++)
        if (n->inputs[base + n_state + j] == IR_NONE)
            return cgen_unsupported(cx, n, "an omitted scan input");
    /* the batch (Scan-8) and the sequence length, from the first scanned input */
    const IrType *t0 = cgen_type(cx, n->inputs[base + n_state]);
    int ax0 = v8 ? 1 : scan_axis(n, false, 0, t0->rank);
    if (ax0 < 0 || ax0 >= t0->rank) return cgen_unsupported(cx, n, "a scan axis out of range");
    int64_t batch = v8 ? t0->dims[0] : 1, len = t0->dims[ax0];
    ScanSlice *sl = ir_arena_alloc(&cx->b.scratch, (n->n_outputs + m + 1) * sizeof *sl);
    ScanSlice *osl = sl + m;
    bool need_o = false;
    for (uint32_t j = 0; j < (uint32_t)m + n_scan_out; j++) {
        bool is_out = j >= (uint32_t)m;
        uint32_t jj = is_out ? j - (uint32_t)m : j;
        uint32_t x = is_out ? n->outputs[n_state + jj] : n->inputs[base + n_state + jj];
        uint32_t bv = is_out ? b->outputs[n_state + jj] : b->inputs[n_state + jj];
        ScanSlice *s = is_out ? &osl[jj] : &sl[jj];
        memset(s, 0, sizeof *s);
        if (x == IR_NONE) continue;
        const IrType *t = cgen_type(cx, x), *bt = &b->values[bv].type;
        if (!check_sliceable(cx, n, t)) return false;
        int axis = v8 ? 1 : scan_axis(n, is_out, jj, t->rank);
        if (axis < 0 || t->rank < (v8 ? 2 : 1) || t->dims[axis] != len ||
            (v8 && t->dims[0] != batch) || t->dtype != bt->dtype ||
            ir_type_numel(bt) * len * batch != ir_type_numel(t))
            return cgen_unsupported(cx, n, "scan %s %u of type %s for body values %s and "
                                    "sequence length %lld", is_out ? "output" : "input", jj,
                                    cgen_type_str(cx, t), cgen_type_str(cx, bt), (long long)len);
        s->outer = 1;
        s->inner = 1;
        for (int i = v8 ? 1 : 0; i < axis; i++) s->outer *= t->dims[i];
        for (int i = axis + 1; i < t->rank; i++) s->inner *= t->dims[i];
        s->reverse = is_out ? (odirs && jj < n_odirs && odirs[jj] != 0)
                            : (dirs && jj < n_dirs && dirs[jj] != 0);
        need_o |= s->outer > 1 && (is_out || b->values[bv].mem_offset >= 0);
    }
    for (uint32_t k = 0; k < n_state; k++) {
        uint32_t init = n->inputs[base + k];
        if (init == IR_NONE) return cgen_unsupported(cx, n, "an omitted initial state");
        const IrType *t = cgen_type(cx, init), *bt = &b->values[b->inputs[k]].type;
        const IrType *ot = &b->values[b->outputs[k]].type;
        if (t->dtype != bt->dtype || ir_type_numel(bt) * batch != ir_type_numel(t) ||
            !same_storage(bt, ot))
            return cgen_unsupported(cx, n, "state %u changing its type or shape (initial %s, "
                                    "body result %s)", k, cgen_type_str(cx, t),
                                    cgen_type_str(cx, ot));
        for (uint32_t j = 0; j < n_state; j++)
            if (j != k && b->outputs[k] == b->inputs[j])
                return cgen_unsupported(cx, n, "a state passed to another state slot");
    }
    /* pointers of the enclosing graph first: cx is suspended while the body's scope is open */
    const char **init = ir_arena_alloc(&cx->b.scratch, (n_state + 1) * sizeof *init);
    const char **dst = ir_arena_alloc(&cx->b.scratch, (n->n_outputs + 1) * sizeof *dst);
    for (uint32_t k = 0; k < n_state; k++) init[k] = cgen_ptr(cx, n->inputs[base + k]);
    for (uint32_t k = 0; k < n->n_outputs; k++)
        dst[k] = n->outputs[k] != IR_NONE ? cgen_ptr(cx, n->outputs[k]) : NULL;
    for (uint32_t j = 0; j < (uint32_t)m; j++)
        sl[j].base = cgen_ptr(cx, n->inputs[base + n_state + j]);
    for (uint32_t j = 0; j < n_scan_out; j++) osl[j].base = dst[n_state + j];
    unsigned id = cx->n_temps++;
    CgenCtx in;
    scope_open(cx, b, &in);
    CWriter *w = in.w;
    const char *it = cgen_fmt(&in, "scan%u_i", id), *bv8 = cgen_fmt(&in, "scan%u_b", id);
    const char *ov = cgen_fmt(&in, "scan%u_o", id);
    const char *pos_fwd = it, *pos_rev = cgen_fmt(&in, "(%lld - %s)", (long long)(len - 1), it);
    /* the first slice row of batch b at position pos: ((b * len + pos) * outer) * inner */
    cw_open(w, "%s", "");
    cw_line(w, "int64_t %s;", it);
    if (v8) cw_line(w, "int64_t %s;", bv8);
    if (need_o) cw_line(w, "int64_t %s;", ov);
    if (v8) cw_open(w, "for (%s = 0; %s < %lld; %s++)", bv8, bv8, (long long)batch, bv8);
    for (uint32_t k = 0; k < n_state; k++) {
        uint32_t bin = b->inputs[k];
        int64_t se = cgen_numel(&in, bin);
        if (dst[k]) in.expr[bin] = v8 ? cgen_fmt(&in, "(%s + (size_t)%s * %lld)", dst[k], bv8,
                                                 (long long)se) : dst[k];
        int64_t bytes = value_bytes(&in, bin);
        const char *src = v8 ? cgen_fmt(&in, "(%s + (size_t)%s * %lld)", init[k], bv8,
                                        (long long)se) : init[k];
        if (bytes > 0) cw_line(w, "memcpy(%s, %s, %lld);", cgen_ptr(&in, bin), src,
                               (long long)bytes);
    }
    /* pointer to the slice (or its first row when outer > 1) of a scanned tensor */
    const char **at = ir_arena_alloc(&in.b.scratch, (n->n_outputs + m + 1) * sizeof *at);
    for (uint32_t j = 0; j < (uint32_t)m + n_scan_out; j++) {
        ScanSlice *s = j < (uint32_t)m ? &sl[j] : &osl[j - (uint32_t)m];
        if (!s->base) continue;
        const char *pos = s->reverse ? pos_rev : pos_fwd;
        at[j] = v8 ? cgen_fmt(&in, "(%s + ((size_t)%s * %lld + (size_t)%s) * %lld)", s->base,
                              bv8, (long long)len, pos, (long long)s->inner)
                   : cgen_fmt(&in, "(%s + (size_t)%s * %lld)", s->base, pos,
                              (long long)s->inner);
    }
    for (uint32_t j = 0; j < (uint32_t)m; j++) {
        uint32_t bin = b->inputs[n_state + j];
        if (sl[j].outer == 1) in.expr[bin] = at[j];
    }
    for (uint32_t j = 0; j < n_scan_out; j++) {
        uint32_t bout = b->outputs[n_state + j];
        if (osl[j].base && written_in_place(&in, bout)) {
            IR_ASSERT(osl[j].outer == 1);
            in.expr[bout] = at[m + j];
        }
    }
    cw_open(w, "for (%s = 0; %s < %lld; %s++)", it, it, (long long)len, it);
    for (uint32_t j = 0; j < (uint32_t)m; j++) {
        uint32_t bin = b->inputs[n_state + j];
        if (sl[j].outer == 1 || b->values[bin].mem_offset < 0) continue;
        int64_t row_bytes = (int64_t)ir_dtype_size_bytes((IrDType)cgen_type(&in, bin)->dtype,
                                                         sl[j].inner);
        cw_line(w, "for (%s = 0; %s < %lld; %s++) memcpy(%s + %s * %lld, %s + %s * %lld, %lld);",
                ov, ov, (long long)sl[j].outer, ov, cgen_ptr(&in, bin), ov,
                (long long)sl[j].inner, at[j], ov, (long long)(len * sl[j].inner),
                (long long)row_bytes);
    }
    bool ok = cgen_emit_nodes(&in);
    cw_comment(w, "next iteration's state");
    for (uint32_t k = 0; k < n_state; k++)
        if (b->outputs[k] != b->inputs[k])
            emit_copy(&in, cgen_ptr(&in, b->inputs[k]), b->outputs[k]);
    for (uint32_t j = 0; j < n_scan_out; j++) {
        uint32_t bout = b->outputs[n_state + j];
        if (!osl[j].base || written_in_place(&in, bout)) continue;
        if (osl[j].outer == 1) {
            emit_copy(&in, at[m + j], bout);
            continue;
        }
        int64_t row_bytes = (int64_t)ir_dtype_size_bytes((IrDType)cgen_type(&in, bout)->dtype,
                                                         osl[j].inner);
        cw_line(w, "for (%s = 0; %s < %lld; %s++) memcpy(%s + %s * %lld, %s + %s * %lld, %lld);",
                ov, ov, (long long)osl[j].outer, ov, at[m + j], ov,
                (long long)(len * osl[j].inner), cgen_ptr(&in, bout), ov,
                (long long)osl[j].inner, (long long)row_bytes);
    }
    cw_close(w, NULL);
    if (v8) cw_close(w, NULL);
    cw_close(w, NULL);
    scope_close(cx, &in);
    return ok;
}

void cgen_register_control(CgenEmitFn *table) {
    table[IR_OP_IF] = emit_if;
    table[IR_OP_LOOP] = emit_loop;
    table[IR_OP_SCAN] = emit_scan;
}
