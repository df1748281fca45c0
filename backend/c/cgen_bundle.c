/* The C target's bundle: the check that every node has a C kernel, NAME.h (API, sizes,
 * status codes), NAME.c (NAME_run), NAME_test_main.c, CMakeLists.txt and README.md, around
 * the shared core's placement, runtime files and weights (backend/bundle.c). */
#include <stdlib.h>
#include <string.h>

#include "backend/c/cgen.h"
#include "backend/c/cgen_count.h"
#include "backend/plan.h"
#include "backend/qplan.h"
#include "backend/target.h"
#include "ir/open_dims.h"

static const char *type_kind_phrase(IrTypeKind k) {
    switch (k) {
    case IR_TYPE_SEQUENCE: return "a sequence";
    case IR_TYPE_OPTIONAL: return "an optional";
    case IR_TYPE_MAP: return "a map";
    case IR_TYPE_SPARSE_TENSOR: return "a sparse tensor";
    default: return "of unknown type (inference could not type it)";
    }
}

bool cgen_op_native(IrOp op) { return cgen_op_supported(op); }

bool cgen_prepare(IrGraph *g, const BundleOptions *o, Diag *d) {
    return qplan_pack_weights(g, d) && plan_pack_weights_f32(g, !(o && o->no_winograd), d) &&
           cgen_control_prepare(g, d) && cgen_rnn_prepare(g, d);
}

/* Every node of g and of its subgraphs has a kernel, and every value that needs storage is a
 * static numeric tensor (values seen from an enclosing graph are checked there). */
bool cgen_check(const IrGraph *g, Diag *d) {
    /* open input dims: one error naming each and its flag, not one per value they leave open */
    bool open = !g->parent && ir_report_open_dims(g, d) > 0;
    bool ok = !open;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead || cgen_op_supported((IrOp)n->op)) continue;
        if (n->op == IR_OP_UNKNOWN)
            ir_node_diag(d, DIAG_ERROR, n, ": op '%s' of domain '%s' is not one Kiln knows (no "
                         "kernel on any target)", n->op_type ? n->op_type : "?",
                         n->domain && n->domain[0] ? n->domain : "ai.onnx");
        else
            ir_node_diag(d, DIAG_ERROR, n, ": no C kernel for this op");
        ok = false;
    }
    for (uint32_t v = 0; v < g->n_values; v++) {
        const IrValue *val = &g->values[v];
        bool live = val->kind != IR_VALUE_NODE || val->producer != IR_NONE;
        if (!live) continue;
        /* the results of an op without a kernel: that op's error says it */
        if (val->kind == IR_VALUE_NODE && !cgen_op_supported((IrOp)g->nodes[val->producer].op))
            continue;
        if (val->type.kind != IR_TYPE_TENSOR || !ir_type_is_static(&val->type) ||
            val->type.dtype == IR_DTYPE_STRING || val->type.dtype == IR_DTYPE_UNDEF) {
            bool io = val->kind == IR_VALUE_INPUT;
            for (uint32_t k = 0; k < g->n_outputs; k++) io |= g->outputs[k] == v;
            if (open && val->type.kind == IR_TYPE_TENSOR) continue; /* reported above */
            if (io || val->kind == IR_VALUE_NODE) {
                const char *in_sub = g->parent ? " (in subgraph '" : "";
                const char *sub_name = g->parent ? g->name : "";
                const char *close = g->parent ? "')" : "";
                if (val->type.kind == IR_TYPE_TENSOR && val->type.dtype == IR_DTYPE_STRING)
                    diag_error(d, "value '%s'%s%s%s holds strings: the C backend has no string "
                               "type", val->name, in_sub, sub_name, close);
                else if (val->type.kind == IR_TYPE_TENSOR && val->type.dtype == IR_DTYPE_UNDEF)
                    diag_error(d, "value '%s'%s%s%s has no known element type", val->name,
                               in_sub, sub_name, close);
                else if (val->type.kind == IR_TYPE_TENSOR)
                    diag_error(d, "value '%s'%s%s%s (%s) has no static shape: fix symbolic "
                               "dimensions with --dim NAME=VALUE; shapes computed from input "
                               "data cannot be compiled", val->name, in_sub, sub_name, close,
                               ir_dtype_name((IrDType)val->type.dtype));
                else
                    diag_error(d, "value '%s' is %s: the C backend compiles tensors only "
                               "(sequences, optionals and maps are not supported)", val->name,
                               type_kind_phrase((IrTypeKind)val->type.kind));
                ok = false;
            }
        }
    }
    for (uint32_t s = 0; s < g->n_subgraphs; s++) ok &= cgen_check(g->subgraphs[s], d);
    return ok;
}

static bool emit_body(CgenCtx *cx, IrGraph *g, const char **outf) {
    bool ok = cgen_emit_nodes(cx);
    /* outputs that no node wrote in place */
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t v = g->outputs[i];
        const char *f = outf[i];
        if (cx->b.field[v] && strcmp(cx->b.field[v], f) == 0 && g->values[v].kind == IR_VALUE_NODE)
            continue;
        if (bundle_has_count(g, v)) /* a repeat of a counted output: the count comes along */
            cw_line(cx->w, "*out->%s_count = *out->%s_count;", f, cx->b.field[v]);
        int64_t bytes = (int64_t)ir_dtype_size_bytes((IrDType)g->values[v].type.dtype,
                                                     cgen_numel(cx, v));
        cw_comment(cx->w, "output '%s' is a copy of '%s'", g->values[v].name, g->values[v].name);
        if (bytes > 0) cw_line(cx->w, "memcpy(out->%s, %s, %lld);", f, cgen_ptr(cx, v),
                               (long long)bytes);
    }
    return ok;
}

static void emit_source(CgenCtx *cx, IrGraph *g, CWriter *c, const char *body,
                        const char **outf) {
    const char *N = cx->b.opts->name;
    const char *U = bundle_upper_name(&cx->b);
    cw_line(c, "/* %s.c: generated by kiln %s from %s. Do not edit.", N, KILN_VERSION,
            bundle_provenance(&cx->b));
    cw_line(c, " * %u nodes; arena %lld bytes (lower bound %lld, naive sum %lld). */",
            g->n_nodes, (long long)g->arena_size_bytes, (long long)g->arena_lower_bound_bytes,
            (long long)g->arena_naive_bytes);
    cw_line(c, "#include <math.h>");
    cw_line(c, "#include <stddef.h>");
    cw_line(c, "#include <stdint.h>");
    cw_line(c, "#include <string.h>");
    cw_blank(c);
    cw_line(c, "#include \"%s.h\"", N);
    cw_line(c, "#include \"rt_common.h\"");
    for (uint32_t i = 0; i < cx->n_runtime; i++)
        if (strcmp(cx->runtime[i], "rt_common.h") != 0) cw_line(c, "#include \"%s\"", cx->runtime[i]);
    cw_blank(c);
    /* Kernels that share their work: the body runs with an RtPar (runtime/rt_par.h) that
     * NAME_run makes serial and NAME_run_parallel points at the user's hook. */
    bool par = cx->uses_par;
    if (par) {
        cw_line(c, "/* The model, its big kernels sharing their tiles among the workers of pfor "
                   "(NULL: serial). */");
        cw_open(c, "static int %s_run_with(const %s_inputs *in, %s_outputs *out, const void "
                   "*weights, void *arena, RtParallelFor pfor, void *ctx, int workers)", N, N, N);
    } else {
        cw_open(c, "int %s_run(const %s_inputs *in, %s_outputs *out, const void *weights, "
                   "void *arena)", N, N, N);
    }
    if (cx->uses_w) cw_line(c, "const unsigned char *w = (const unsigned char *)weights;");
    if (cx->uses_a || (par && cx->b.par_scratch))
        cw_line(c, "unsigned char *a = (unsigned char *)arena;");
    if (par) cw_line(c, "RtPar par_;");
    if (par) cw_line(c, "const RtPar *par = &par_;");
    if (cx->uses_rc) cw_line(c, "int rc;");
    cw_indent(c);
    cw_raw(c, "if (!in || !out");
    if (cx->b.weights_size) cw_raw(c, " || !weights");
    if (g->arena_size_bytes) cw_raw(c, " || !arena");
    for (uint32_t i = 0; i < g->n_inputs; i++) cw_raw(c, " || !in->%s", cx->b.field[g->inputs[i]]);
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        cw_raw(c, " || !out->%s", outf[i]);
        if (bundle_has_count(g, g->outputs[i])) cw_raw(c, " || !out->%s_count", outf[i]);
    }
    cw_raw(c, ") return %s_ERR_NULL;\n", U);
    cw_line(c, "if ((uintptr_t)weights %% %s_ALIGN != 0 || (uintptr_t)arena %% %s_ALIGN != 0) "
               "return %s_ERR_ALIGN;", U, U, U);
    bool uses_a = cx->uses_a || (par && cx->b.par_scratch);
    if (!cx->uses_w && !uses_a) cw_line(c, "(void)weights;");
    if (!uses_a && cx->uses_w) cw_line(c, "(void)arena;");
    if (par) {
        cw_line(c, "par_.pfor = pfor;");
        cw_line(c, "par_.ctx = ctx;");
        cw_line(c, "par_.workers = workers;");
        if (cx->b.par_scratch) {
            cw_line(c, "par_.scratch = a + %lld; /* then %lld bytes a worker */",
                    (long long)bundle_scratch_offset(&cx->b), (long long)cx->b.par_scratch);
            cw_line(c, "par_.scratch_stride = %lld;", (long long)cx->b.par_scratch);
        } else {
            cw_line(c, "par_.scratch = NULL; /* no kernel asks for scratch */");
            cw_line(c, "par_.scratch_stride = 0;");
        }
    }
    cw_blank(c);
    cw_raw(c, "%s", body);
    cw_line(c, "return %s_OK;", U);
    cw_close(c, NULL);
    cw_blank(c);
    if (par) {
        cw_open(c, "int %s_run(const %s_inputs *in, %s_outputs *out, const void *weights, "
                   "void *arena)", N, N, N);
        cw_line(c, "return %s_run_with(in, out, weights, arena, NULL, NULL, 1);", N);
        cw_close(c, NULL);
        cw_blank(c);
    }
    cw_open(c, "int %s_run_parallel(const %s_inputs *in, %s_outputs *out, const void *weights, "
               "void *arena, %s_parallel_for_fn pfor, void *ctx)", N, N, N, N);
    if (par) {
        cw_line(c, "return %s_run_with(in, out, weights, arena, pfor, ctx, %s_WORKERS);", N, U);
    } else {
        cw_line(c, "(void)pfor, (void)ctx; /* no kernel of this model is big enough to share */");
        cw_line(c, "return %s_run(in, out, weights, arena);", N);
    }
    cw_close(c, NULL);
}

/* Bytes of the fp32 weights in the packed GEMM's panel layout (backend/plan.c: rank 6) and
 * what the same weights take in the model's layout (M output channels x the reduction). */
static void packed_sizes(const IrGraph *g, int64_t *packed, int64_t *raw) {
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead || n->n_inputs < 2 || n->inputs[1] == IR_NONE || n->outputs[0] == IR_NONE)
            continue;
        const IrType *tw = &g->values[n->inputs[1]].type, *ty = &g->values[n->outputs[0]].type;
        if (tw->rank != PLAN_PGEMM_RANK || tw->dtype != IR_DTYPE_F32 || ty->rank < 1) continue;
        *packed += 4 * ir_type_numel(tw);
        *raw += 4 * tw->dims[2] * tw->dims[3] * tw->dims[4] * ty->dims[ty->rank - 1];
    }
    for (uint32_t s = 0; s < g->n_subgraphs; s++) packed_sizes(g->subgraphs[s], packed, raw);
}

/* ---- the C target's places in the frame (backend/frame.c) ---- */

static void c_usage(BundleCtx *b, CWriter *h) {
    const char *N = b->opts->name, *U = bundle_upper_name(b);
    cw_line(h, " * Usage (the caller owns all memory; nothing here allocates):");
    cw_line(h, " *   void *arena = ...;   %s_ARENA_SIZE bytes aligned to %s_ALIGN, e.g. a static", U, U);
    cw_line(h, " *                        buffer with your compiler's alignment attribute, or");
    cw_line(h, " *                        aligned_alloc(%s_ALIGN, size rounded up to %s_ALIGN)", U, U);
    cw_line(h, " *   %s_inputs in = {...};   pointers to the input tensors, row-major", N);
    cw_line(h, " *   %s_outputs out = {...}; pointers to room for the outputs", N);
    if (b->opts->embed_weights)
        cw_line(h, " *   int rc = %s_run(&in, &out, %s_weights, arena);", N, N);
    else
        cw_line(h, " *   int rc = %s_run(&in, &out, weights, arena);  weights: the bytes of "
                   "%s_weights.bin, aligned to %s_ALIGN", N, N, U);
    cw_line(h, " *   if (rc != %s_OK) ... see the status codes below", U);
    cw_line(h, " * On several cores: %s_run_parallel(&in, &out, weights, arena, pfor, ctx), pfor a", N);
    cw_line(h, " * parallel-for of yours that runs fn(arg, i, w) for every i < n_tasks on workers");
    cw_line(h, " * 0 <= w < %s_WORKERS and returns when all are done (examples/parallel has one", U);
    cw_line(h, " * on pthreads). Outputs are the same bytes for any schedule and worker count.");
    bundle_emit_count_usage(b, h);
}

static void c_sizes(BundleCtx *b, CWriter *h) {
    const char *U = bundle_upper_name(b);
    int64_t packed = 0, raw = 0;
    packed_sizes(b->g, &packed, &raw);
    cw_line(h, "#define %s_ALIGN %d /* required alignment of arena and weights */", U, BUNDLE_ALIGN);
    cw_line(h, "#define %s_WORKERS %d /* workers %s_run_parallel's hook may use (kiln compile "
               "--workers) */", U, bundle_workers(b), b->opts->name);
    cw_line(h, "#define %s_PACKED_WEIGHTS_SIZE %lld /* bytes of the weights in the packed GEMM's "
               "panel layout; %lld in the model's */", U, (long long)packed, (long long)raw);
}

static void c_api(BundleCtx *b, CWriter *h) {
    const char *N = b->opts->name, *U = bundle_upper_name(b);
    if (b->opts->embed_weights) {
        cw_line(h, "extern const unsigned char %s_weights[]; /* in %s_weights.c */", N, N);
        cw_blank(h);
    }
    cw_line(h, "/* Runs the model. Returns %s_OK or a status code above. */", U);
    cw_line(h, "int %s_run(const %s_inputs *in, %s_outputs *out, const void *weights, "
               "void *arena);", N, N, N);
    cw_blank(h);
    cw_line(h, "/* The parallel-for hook of %s_run_parallel: pfor(ctx, n_tasks, fn, arg) must call",
            N);
    cw_line(h, " * fn(arg, i, worker) once for every i in [0, n_tasks), in any order, with");
    cw_line(h, " * 0 <= worker < %s_WORKERS and no two calls at once on one worker id, and return", U);
    cw_line(h, " * when all are done. A NULL pfor runs serially (as %s_run). */", N);
    cw_line(h, "typedef void (*%s_task_fn)(void *arg, int64_t task, int worker);", N);
    cw_line(h, "typedef void (*%s_parallel_for_fn)(void *ctx, int64_t n_tasks, %s_task_fn fn, "
               "void *arg);", N, N);
    cw_line(h, "/* %s_run with the big kernels' work shared through pfor; the same bytes out. */", N);
    cw_line(h, "int %s_run_parallel(const %s_inputs *in, %s_outputs *out, const void *weights, "
               "void *arena, %s_parallel_for_fn pfor, void *ctx);", N, N, N, N);
}

static void c_readme_facts(BundleCtx *b, CWriter *m) {
    int64_t packed = 0, raw = 0;
    packed_sizes(b->g, &packed, &raw);
    cw_line(m, "- packed weights: %lld bytes of the weights are in the packed GEMM's panel layout "
               "(%lld in the model's layout)", (long long)packed, (long long)raw);
    cw_line(m, "- alignment: %d bytes for arena and weights", BUNDLE_ALIGN);
    cw_line(m, "- workers: `%s_run_parallel` shares the big kernels among up to %d worker%s of "
               "a parallel-for hook you pass (`%s.h`)", b->opts->name, bundle_workers(b),
            bundle_workers(b) > 1 ? "s" : "", b->opts->name);
}

static void c_test_locals(BundleCtx *b, CWriter *c) {
    (void)b;
    cw_line(c, "void *arena;");
}

static void c_test_setup(BundleCtx *b, CWriter *c) {
    cw_line(c, "arena = aligned_block(%s_ARENA_SIZE + 1, &blocks[nb++]);", bundle_upper_name(b));
}

static void c_test_run(BundleCtx *b, CWriter *c) {
    const char *N = b->opts->name;
    cw_line(c, "rc = %s_run(&in, &out, weights, arena);", N);
    cw_line(c, "if (rc != %s_OK) { fprintf(stderr, \"%s_run failed: status %%d\\n\", rc); "
               "status = 1; goto done; }", bundle_upper_name(b), N);
}

static const BundleDialect c_dialect = {
    .label = "",
    .guard = "",
    .status = BUNDLE_STATUS_ALIGN,
    .source = "%s.c",
    .test_main = "%s_test_main.c",
    .usage = c_usage,
    .sizes = c_sizes,
    .api = c_api,
    .readme_facts = c_readme_facts,
    .build_by_hand = ", or compile `%s.c` with any C99 compiler",
    .cmake_version = "3.13",
    .cmake_languages = "C",
    .cmake_library = "set_target_properties(%s PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON)\n"
                     "if(NOT MSVC)\n"
                     "  target_link_libraries(%s PUBLIC m)\n"
                     "endif()\n",
    .test_run_note = "",
    .test_locals = c_test_locals,
    .test_setup = c_test_setup,
    .test_run = c_test_run,
};

bool cgen_emit_bundle(IrGraph *g, const BundleOptions *opts, const char *out_dir, Diag *d) {
    cgen_tables_init();
    if (!bundle_make_dir(out_dir, d)) return false;
    CgenCtx cx;
    memset(&cx, 0, sizeof cx);
    bundle_ctx_init(&cx.b, g, opts, d);
    bundle_place(&cx.b, g);
    cx.names = cgen_names_new();
    cx.local = calloc(g->n_values + 1, sizeof *cx.local);
    IR_ASSERT(cx.local);
    const char **outf = cx.b.out_field;
    cgen_use_runtime(&cx, "rt_common.h");
    CWriter body, h, c;
    cw_init(&body);
    cw_init(&h);
    cw_init(&c);
    body.indent = 1;
    cx.w = &body;
    bool ok = emit_body(&cx, g, outf);
    cx.b.par_scratch = cx.par_scratch;
    if (ok) {
        bundle_emit_header(&cx.b, &c_dialect, &h);
        emit_source(&cx, g, &c, body.buf ? body.buf : "", outf);
        /* only the runtime code that NAME.h and NAME.c reach (the test main reads NAME.h) */
        const char *roots[] = {h.buf, c.buf};
        char **rt = bundle_runtime_select(cx.runtime, cx.n_runtime, roots, 2);
        ok &= bundle_write_text(out_dir, cgen_fmt(&cx, "%s.h", opts->name), &h, d);
        ok &= bundle_write_text(out_dir, cgen_fmt(&cx, "%s.c", opts->name), &c, d);
        ok = ok && bundle_write_runtime(out_dir, cx.runtime, cx.n_runtime, rt, d);
        for (uint32_t i = 0; i < cx.n_runtime; i++) free(rt[i]);
        free(rt);
        ok &= bundle_write_weights(&cx.b, out_dir, d);
        CWriter m;
        cw_init(&m);
        bundle_emit_cmake(&cx.b, &c_dialect, &m);
        ok &= bundle_write_text(out_dir, "CMakeLists.txt", &m, d);
        bundle_emit_readme(&cx.b, &c_dialect, &m);
        ok &= bundle_write_text(out_dir, "README.md", &m, d);
        if (opts->test_main) {
            bundle_emit_test_main(&cx.b, &c_dialect, &m);
            ok &= bundle_write_text(out_dir, cgen_fmt(&cx, "%s_test_main.c", opts->name), &m, d);
        }
    }
    cw_free(&body);
    cw_free(&h);
    cw_free(&c);
    cgen_names_free(cx.names);
    free(cx.local);
    bundle_ctx_free(&cx.b);
    return ok;
}
