/* The CUDA dialect driver and bundle writer: checks that every op has a CUDA emitter (all
 * missing ones reported at once), places values as the C backend does (bundle.c's fields
 * and weight offsets, the planner's arena offsets) inside one device allocation, emits
 * NAME_enqueue node by node through cuda_emit_table, and writes NAME.h, NAME.cu (context,
 * CUDA-graph capture at init, run entry points), the kc_*.cuh runtime files, the weights,
 * CMakeLists.txt, README.md and the optional NAME_test_main.cu. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/cgen_count.h"
#include "backend/cuda.h"
#include "passes/passes.h"

#define CUDA_DEV_ALIGN 256          /* cudaMalloc's own alignment; regions keep it */
#define CUDA_LT_WORKSPACE (8 << 20) /* cuBLASLt workspace bytes: room for split-K algorithms */
#define CUDA_MAX_DISABLED 72        /* --no-pass names plus the passes CUDA switches off */

void cuda_use_runtime(CudaCtx *cx, const char *file) {
    for (uint32_t i = 0; i < cx->n_rt; i++)
        if (strcmp(cx->rt[i], file) == 0) return;
    IR_ASSERT(cx->n_rt < CUDA_MAX_RUNTIME);
    cx->rt[cx->n_rt++] = file;
}

static int64_t dev_align(int64_t x) { return (x + CUDA_DEV_ALIGN - 1) / CUDA_DEV_ALIGN * CUDA_DEV_ALIGN; }

static const CgenRuntimeFile *runtime_file(const char *name) {
    for (unsigned i = 0; i < cgen_n_runtime_files; i++)
        if (strcmp(cgen_runtime_files[i].name, name) == 0) return &cgen_runtime_files[i];
    return NULL;
}

/* A subgraph runs inside its control-flow node's generic kernel, as C code: every node has
 * a C kernel and every value it stores is a static numeric tensor. */
static bool check_subgraph(const IrGraph *g, Diag *d) {
    bool ok = true;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead || cgen_op_supported((IrOp)n->op)) continue;
        diag_error(d, "node '%s' (%s, opset %d) in subgraph '%s': no C kernel for this op",
                   n->name, n->op_type, n->opset, g->name);
        ok = false;
    }
    for (uint32_t v = 0; v < g->n_values; v++) {
        const IrValue *val = &g->values[v];
        bool stored = val->kind == IR_VALUE_INPUT ||
                      (val->kind == IR_VALUE_NODE && val->producer != IR_NONE);
        for (uint32_t k = 0; k < g->n_outputs; k++) stored |= g->outputs[k] == v;
        if (!stored || val->kind == IR_VALUE_CONST) continue;
        if (val->type.kind != IR_TYPE_TENSOR || !ir_type_is_static(&val->type) ||
            val->type.dtype == IR_DTYPE_STRING || val->type.dtype == IR_DTYPE_UNDEF) {
            diag_error(d, "value '%s' in subgraph '%s' is not a tensor of static shape and "
                          "numeric type", val->name, g->name);
            ok = false;
        }
    }
    for (uint32_t s = 0; s < g->n_subgraphs; s++) ok &= check_subgraph(g->subgraphs[s], d);
    return ok;
}

/* Every live node has a CUDA emitter (its own or the generic path), every stored value is a
 * static numeric tensor, subgraphs as check_subgraph says. Reports all problems at once. */
static bool check_supported(const IrGraph *g, Diag *d) {
    bool ok = true;
    uint32_t n_missing = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead || cuda_op_supported((IrOp)n->op)) continue;
        diag_error(d, "node '%s' (%s%s%s, opset %d): no CUDA kernel for this op", n->name,
                   n->domain[0] ? n->domain : "", n->domain[0] ? "." : "", n->op_type, n->opset);
        n_missing++;
        ok = false;
    }
    if (n_missing)
        diag_error(d, "%u node(s) have no CUDA kernel (--target c compiles them)", n_missing);
    for (uint32_t s = 0; s < g->n_subgraphs; s++) ok &= check_subgraph(g->subgraphs[s], d);
    for (uint32_t v = 0; v < g->n_values; v++) {
        const IrValue *val = &g->values[v];
        if (val->kind == IR_VALUE_NODE && val->producer == IR_NONE) continue;
        if (val->kind == IR_VALUE_CONST) continue;
        if (val->type.kind != IR_TYPE_TENSOR || !ir_type_is_static(&val->type) ||
            val->type.dtype == IR_DTYPE_STRING || val->type.dtype == IR_DTYPE_UNDEF) {
            diag_error(d, "value '%s' is not a tensor of static shape and numeric type (fix "
                          "symbolic dimensions with --dim NAME=VALUE)", val->name);
            ok = false;
        }
    }
    return ok;
}

static void emit_node_comment(CudaCtx *cx, const IrNode *n) {
    CWriter tmp;
    cw_init(&tmp);
    cw_raw(&tmp, "%s '%s': (", n->op_type, n->name);
    for (uint32_t k = 0; k < n->n_inputs; k++) {
        uint32_t v = n->inputs[k];
        cw_raw(&tmp, "%s%s", k ? ", " : "", v == IR_NONE ? "_" : cx->c.g->values[v].name);
    }
    cw_raw(&tmp, ") -> ");
    for (uint32_t k = 0; k < n->n_outputs; k++) {
        uint32_t v = n->outputs[k];
        if (v == IR_NONE) cw_raw(&tmp, "%s_", k ? ", " : "");
        else cw_raw(&tmp, "%s%s %s", k ? ", " : "", cx->c.g->values[v].name,
                    cgen_type_str(&cx->c, &cx->c.g->values[v].type));
    }
    cw_comment(cx->c.w, "%s", tmp.buf);
    cw_free(&tmp);
}

static int64_t value_bytes(CudaCtx *cx, uint32_t v) {
    return (int64_t)ir_dtype_size_bytes((IrDType)cgen_type(&cx->c, v)->dtype, cgen_numel(&cx->c, v));
}

/* C++ keywords that are not C keywords (the C backend's field names avoid only those). */
static const char *const cpp_keywords[] = {
    "alignas", "alignof", "and", "and_eq", "asm", "bitand", "bitor", "bool", "catch",
    "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "consteval", "constexpr",
    "constinit", "const_cast", "co_await", "co_return", "co_yield", "decltype", "delete",
    "dynamic_cast", "explicit", "export", "false", "friend", "mutable", "namespace", "new",
    "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected",
    "public", "reinterpret_cast", "requires", "static_assert", "static_cast", "template",
    "this", "thread_local", "throw", "true", "try", "typeid", "typename", "using", "virtual",
    "wchar_t", "xor", "xor_eq", NULL};

static bool field_taken(CudaCtx *cx, IrGraph *g, const char *f) {
    for (uint32_t i = 0; i < g->n_inputs; i++)
        if (strcmp(cx->c.field[g->inputs[i]], f) == 0) return true;
    for (uint32_t i = 0; i < g->n_outputs; i++)
        if (cx->out_field[i] && (strcmp(cx->out_field[i], f) == 0 ||
                                 strcmp(cgen_fmt(&cx->c, "%s_count", cx->out_field[i]), f) == 0))
            return true;
    return false;
}

/* A field name that compiles as C++ (NAME.cu is C++): a keyword gets a '_' appended (more
 * until the name is free). */
static const char *cpp_safe(CudaCtx *cx, IrGraph *g, const char *f) {
    bool kw = false;
    for (int i = 0; cpp_keywords[i]; i++) kw |= strcmp(cpp_keywords[i], f) == 0;
    if (!kw) return f;
    do f = cgen_fmt(&cx->c, "%s_", f);
    while (field_taken(cx, g, f));
    return f;
}

/* cx->out_field from the C backend's names, then every input and output field C++-safe
 * (values written in place follow their output's field). */
static void cpp_safe_fields(CudaCtx *cx, IrGraph *g) {
    cx->out_field = ir_arena_alloc(&cx->c.scratch, (g->n_outputs + 1) * sizeof *cx->out_field);
    const char **out_fields = cgen_output_fields(&cx->c, g); /* once: naming is O(n) */
    for (uint32_t i = 0; i < g->n_outputs; i++) cx->out_field[i] = out_fields[i];
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        uint32_t v = g->inputs[i];
        cx->c.field[v] = cpp_safe(cx, g, cx->c.field[v]);
    }
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        const char *old = cx->out_field[i], *f = cpp_safe(cx, g, old);
        if (f == old) continue;
        uint32_t v = g->outputs[i];
        const char *cur = cx->c.field[v];
        if (g->values[v].kind == IR_VALUE_NODE && cur && strcmp(cur, old) == 0) cx->c.field[v] = f;
        cx->out_field[i] = f;
    }
}

/* Truncates w back to len bytes: drops what a refused emitter wrote. */
static void cw_truncate(CWriter *w, size_t len) {
    if (w->buf && len <= w->len) {
        w->len = len;
        w->buf[len] = 0;
    }
}

/* Node n through its CUDA kernel; where that kernel refuses the node (a dtype, attribute or
 * non-constant input it does not handle) and the C backend has a kernel, through the generic
 * path instead, with the refusal's diagnostics dropped. */
static bool emit_node(CudaCtx *cx, const IrNode *n) {
    if (cuda_emit_table[n->op] == cuda_emit_generic || !cgen_emit_table[n->op])
        return cuda_emit_table[n->op](cx, n);
    size_t body_len = cx->c.w->len, kernels_len = cx->kernels->len;
    uint32_t n_kernels = cx->n_kernels;
    bool uses_status = cx->uses_status;
    Diag quiet, *d = cx->c.d;
    diag_init(&quiet);
    cx->c.d = &quiet;
    bool ok = cuda_emit_table[n->op](cx, n);
    cx->c.d = d;
    diag_free(&quiet);
    if (ok) return true;
    cw_truncate(cx->c.w, body_len);
    cw_truncate(cx->kernels, kernels_len);
    cx->n_kernels = n_kernels;
    cx->uses_status = uses_status;
    return cuda_emit_generic(cx, n);
}

/* s as the body of a C string literal: quotes, backslashes and '?' escaped (no trigraphs),
 * other characters outside printable ASCII as '_'. */
static const char *c_string(CudaCtx *cx, const char *s) {
    CWriter tmp;
    cw_init(&tmp);
    cw_raw(&tmp, "%s", "");
    for (const char *p = s; *p; p++) {
        if (*p == '"' || *p == '\\' || *p == '?') cw_raw(&tmp, "\\%c", *p);
        else cw_raw(&tmp, "%c", *p >= ' ' && *p <= '~' ? *p : '_');
    }
    const char *r = cgen_fmt(&cx->c, "%s", tmp.buf);
    cw_free(&tmp);
    return r;
}

/* The path a node's emitted code takes, for the profile: its products go to cuBLASLt, it
 * runs the C code on one thread, or it is kernels of its own. */
static const char *node_kind(CudaCtx *cx, size_t body_from, uint32_t generic_before) {
    if (cx->n_generic != generic_before) return "generic";
    return strstr(cx->c.w->buf + body_from, "kc_lt_matmul") ? "cublaslt" : "kernel";
}

static bool emit_body(CudaCtx *cx, IrGraph *g) {
    bool ok = true;
    cx->prof_name = ir_arena_alloc(&cx->c.scratch, (g->n_nodes + 1) * sizeof *cx->prof_name);
    cx->prof_kind = ir_arena_alloc(&cx->c.scratch, (g->n_nodes + 1) * sizeof *cx->prof_kind);
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead) continue;
        cx->c.node = i;
        emit_node_comment(cx, n);
        uint32_t k = cx->n_prof++, generic_before = cx->n_generic;
        cw_line(cx->c.w, "KC_PROF(%u);", 2 * k);
        size_t body_from = cx->c.w->len;
        ok &= emit_node(cx, n);
        cx->prof_kind[k] = node_kind(cx, body_from, generic_before);
        cx->prof_name[k] = c_string(cx, cgen_fmt(&cx->c, "%s %s", n->op_type, n->name));
        cw_line(cx->c.w, "KC_PROF(%u);", 2 * k + 1);
    }
    for (uint32_t i = 0; i < g->n_outputs; i++) { /* outputs no node wrote in place */
        uint32_t v = g->outputs[i];
        const char *f = cx->out_field[i];
        if (cx->c.field[v] && strcmp(cx->c.field[v], f) == 0 && g->values[v].kind == IR_VALUE_NODE)
            continue;
        cw_comment(cx->c.w, "output '%s' is a copy", g->values[v].name);
        if (value_bytes(cx, v) > 0)
            cw_line(cx->c.w, "KC_CUDA(cudaMemcpyAsync(out->%s, %s, %lld, "
                             "cudaMemcpyDeviceToDevice, s));", f, cgen_ptr(&cx->c, v),
                    (long long)value_bytes(cx, v));
    }
    return ok;
}

/* The layout of the one device allocation: planned arena, im2col workspace, cuBLASLt
 * workspace, the context's input and output buffers, the status word. */
typedef struct DevLayout {
    int64_t col, lt_ws, status, total;
    int64_t *in, *out; /* per graph input / output slot */
    int64_t *count;    /* per output slot with a run-time count (cgen_has_count), else -1 */
} DevLayout;

static void dev_layout(CudaCtx *cx, IrGraph *g, DevLayout *L) {
    int64_t off = dev_align(g->arena_size_bytes);
    L->col = off;
    off += dev_align(cx->col_bytes);
    L->lt_ws = off;
    off += CUDA_LT_WORKSPACE;
    L->in = ir_arena_alloc(&cx->c.scratch, (g->n_inputs + 1) * sizeof *L->in);
    L->out = ir_arena_alloc(&cx->c.scratch, (g->n_outputs + 1) * sizeof *L->out);
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        L->in[i] = off;
        off += dev_align(value_bytes(cx, g->inputs[i]));
    }
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        L->out[i] = off;
        off += dev_align(value_bytes(cx, g->outputs[i]));
    }
    L->count = ir_arena_alloc(&cx->c.scratch, (g->n_outputs + 1) * sizeof *L->count);
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        L->count[i] = -1;
        if (cgen_has_count(g, g->outputs[i])) {
            L->count[i] = off;
            off += CUDA_DEV_ALIGN;
        }
    }
    L->status = off;
    L->total = off + CUDA_DEV_ALIGN;
}

static void emit_header(CudaCtx *cx, IrGraph *g, CWriter *h, const DevLayout *L) {
    const char *N = cx->c.opts->name, *U = cgen_upper_name(&cx->c);
    cw_line(h, "/* %s.h: generated by kiln %s from %s (CUDA). Do not edit.", N, KILN_VERSION,
            cx->c.opts->model_path ? cx->c.opts->model_path : "a model");
    cw_line(h, " *");
    cw_line(h, " * Usage:");
    cw_line(h, " *   int st;");
    cw_line(h, " *   %s_cuda_ctx *ctx = %s_cuda_init(weights, &st); weights: the bytes of", N, N);
    cw_line(h, " *       %s_weights.bin in host memory (uploaded once; the caller may free them)", N);
    cw_line(h, " *   %s_cuda_run(ctx, &dev_in, &dev_out, stream);  device pointers, async", N);
    cw_line(h, " *   or %s_cuda_run_host(ctx, &host_in, &host_out); host pointers, synchronous", N);
    cw_line(h, " *   %s_cuda_free(ctx);", N);
    cw_line(h, " *");
    cw_line(h, " * init allocates one device arena (%s_DEVICE_BYTES: intermediates, workspaces and", U);
    cw_line(h, " * the context's own input and output buffers) and the weights, creates the cuBLASLt");
    cw_line(h, " * handle and captures the whole model as one CUDA graph on a private stream. The");
    cw_line(h, " * graph reads and writes the context's buffers: run copies the inputs in, launches");
    cw_line(h, " * the graph and copies the outputs out, all on the caller's stream (a pointer equal");
    cw_line(h, " * to the context's buffer, see %s_cuda_io, is not copied). One run at a time per", N);
    cw_line(h, " * context: runs on different streams share its buffers. Needs CUDA 12 or newer. */");
    cw_line(h, "#ifndef %s_CUDA_H", U);
    cw_line(h, "#define %s_CUDA_H", U);
    cw_blank(h);
    cw_line(h, "#include <stdint.h>");
    cw_line(h, "#include <cuda_runtime_api.h>");
    cw_blank(h);
    cw_line(h, "#define %s_ARENA_SIZE %lld /* bytes of planned intermediates */", U,
            (long long)g->arena_size_bytes);
    cw_line(h, "#define %s_DEVICE_BYTES %lld /* the whole device arena */", U, (long long)L->total);
    cw_line(h, "#define %s_WEIGHTS_SIZE %lld /* bytes of %s_weights.bin */", U,
            (long long)cx->c.weights_size, N);
    cw_blank(h);
    cw_line(h, "/* Status codes. */");
    cw_line(h, "#define %s_OK 0", U);
    cw_line(h, "#define %s_ERR_NULL 1    /* a required pointer is NULL */", U);
    cw_line(h, "#define %s_ERR_INDEX 3   /* an index in the input data is out of range */", U);
    cw_line(h, "#define %s_ERR_SHAPE 4   /* a shape read from the input data differs from the "
               "compiled one */", U);
    cw_line(h, "#define %s_ERR_VALUE 5   /* other input data breaking the model's contract */",
            U);
    cw_line(h, "#define %s_ERR_CUDA 10   /* a CUDA runtime call failed (no device, no kernel "
               "image for it, launch failure...) */", U);
    cw_line(h, "#define %s_ERR_CUBLAS 11 /* a cuBLASLt call failed or found no algorithm */", U);
    cw_line(h, "#define %s_ERR_NOMEM 12  /* host or device memory allocation failed */", U);
    cw_blank(h);
    cw_open(h, "typedef struct %s_inputs", N);
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        uint32_t v = g->inputs[i];
        cw_line(h, "const %s *%s; /* %s '%s' */", cgen_ctype((IrDType)g->values[v].type.dtype),
                cx->c.field[v], cgen_type_str(&cx->c, &g->values[v].type), g->values[v].name);
    }
    if (g->n_inputs == 0) cw_line(h, "int unused; /* the model has no inputs */");
    cw_close(h, cgen_fmt(&cx->c, " %s_inputs;", N));
    cw_blank(h);
    cw_open(h, "typedef struct %s_outputs", N);
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t v = g->outputs[i];
        cw_line(h, "%s *%s; /* %s '%s' */", cgen_ctype((IrDType)g->values[v].type.dtype),
                cx->out_field[i], cgen_type_str(&cx->c, &g->values[v].type),
                g->values[v].name);
        if (cgen_has_count(g, v))
            cw_line(h, "int64_t *%s_count; /* its run-time count (rows up to the compiled "
                       "bound; the rest is fill); NULL: not wanted */",
                    cx->out_field[i]);
    }
    cw_close(h, cgen_fmt(&cx->c, " %s_outputs;", N));
    cw_blank(h);
    cw_line(h, "typedef struct %s_cuda_ctx %s_cuda_ctx;", N, N);
    cw_blank(h);
    cw_line(h, "#ifdef __cplusplus");
    cw_line(h, "extern \"C\" {");
    cw_line(h, "#endif");
    cw_line(h, "/* NULL on failure, with *status (if not NULL) set to the reason. */");
    cw_line(h, "%s_cuda_ctx *%s_cuda_init(const void *host_weights, int *status);", N, N);
    cw_line(h, "/* Enqueues one run on stream (device pointers). Returns a launch status; the");
    cw_line(h, " * status of the data (%s_ERR_INDEX) is %s_cuda_status once the stream is done. */", U, N);
    cw_line(h, "int %s_cuda_run(%s_cuda_ctx *ctx, const %s_inputs *in, %s_outputs *out, "
               "cudaStream_t stream);", N, N, N, N);
    cw_line(h, "int %s_cuda_status(const %s_cuda_ctx *ctx);", N, N);
    cw_line(h, "/* Host pointers: copies in, runs, copies out and waits; returns any status. */");
    cw_line(h, "int %s_cuda_run_host(%s_cuda_ctx *ctx, const %s_inputs *in, %s_outputs *out);",
            N, N, N, N);
    cw_line(h, "/* The context's device buffers, which the graph reads and writes directly. */");
    cw_line(h, "void %s_cuda_io(const %s_cuda_ctx *ctx, %s_inputs *in, %s_outputs *out);", N, N,
            N, N);
    cw_line(h, "void %s_cuda_free(%s_cuda_ctx *ctx);", N, N);
    cw_blank(h);
    cw_line(h, "/* Where the time goes: runs the model once outside the graph, synchronously, on "
               "the");
    cw_line(h, " * context's own input buffers, with a CUDA event pair around each node; node_ms[i] "
               "gets");
    cw_line(h, " * node i's milliseconds. Slower than a graph launch (one launch at a time). */");
    cw_line(h, "#define %s_PROFILE_NODES %u", U, cx->n_prof);
    cw_line(h, "extern const char *const %s_profile_nodes[%u]; /* \"OpType name\" */", N,
            cx->n_prof ? cx->n_prof : 1);
    cw_line(h, "extern const char *const %s_profile_kinds[%u]; /* cublaslt, kernel or generic "
               "(one thread) */", N, cx->n_prof ? cx->n_prof : 1);
    cw_line(h, "int %s_cuda_profile(%s_cuda_ctx *ctx, float *node_ms);", N, N);
    cw_line(h, "#ifdef __cplusplus");
    cw_line(h, "}");
    cw_line(h, "#endif");
    cw_blank(h);
    cw_line(h, "#endif");
}

/* "if (!in->a || !in->b || !out->y) return NAME_ERR_NULL;" for one side of the API. */
static void emit_null_checks(CudaCtx *cx, IrGraph *g, CWriter *c) {
    const char *U = cgen_upper_name(&cx->c);
    cw_indent(c);
    cw_raw(c, "if (!ctx || !in || !out");
    for (uint32_t i = 0; i < g->n_inputs; i++) cw_raw(c, " || !in->%s", cx->c.field[g->inputs[i]]);
    for (uint32_t i = 0; i < g->n_outputs; i++)
        cw_raw(c, " || !out->%s", cx->out_field[i]);
    cw_raw(c, ") return %s_ERR_NULL;\n", U);
}

/* Copies between the caller's buffers and the context's: kind "In" or "Out". */
static void emit_io_copies(CudaCtx *cx, IrGraph *g, CWriter *c, bool inputs, const char *kind,
                           const char *stream) {
    uint32_t n = inputs ? g->n_inputs : g->n_outputs;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v = inputs ? g->inputs[i] : g->outputs[i];
        const char *f = inputs ? cx->c.field[v] : cx->out_field[i];
        if (value_bytes(cx, v) == 0) continue;
        if (inputs)
            cw_line(c, "if (in->%s != ctx->in.%s) KC_CUDA(cudaMemcpyAsync((void *)ctx->in.%s, "
                       "in->%s, %lld, cudaMemcpy%s, %s));", f, f, f, f,
                    (long long)value_bytes(cx, v), kind, stream);
        else
            cw_line(c, "if (out->%s != ctx->out.%s) KC_CUDA(cudaMemcpyAsync(out->%s, ctx->out.%s, "
                       "%lld, cudaMemcpy%s, %s));", f, f, f, f, (long long)value_bytes(cx, v), kind,
                    stream);
    }
    for (uint32_t i = 0; !inputs && i < n; i++) {
        if (!cgen_has_count(g, g->outputs[i])) continue;
        const char *f = cx->out_field[i];
        cw_line(c, "if (out->%s_count && out->%s_count != ctx->out.%s_count) "
                   "KC_CUDA(cudaMemcpyAsync(out->%s_count, ctx->out.%s_count, sizeof(int64_t), "
                   "cudaMemcpy%s, %s));", f, f, f, f, f, kind, stream);
    }
}

static bool ident_char(char c) {
    return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Whether text uses identifier word outside comments (not as part of a longer identifier or
 * as a member). */
bool cuda_uses_word(const char *text, const char *word) {
    size_t len = strlen(word);
    bool in_comment = false;
    for (const char *p = text; *p; p++) {
        if (in_comment) {
            if (p[0] == '*' && p[1] == '/') in_comment = false, p++;
            continue;
        }
        if (p[0] == '/' && p[1] == '*') {
            in_comment = true;
            p++;
            continue;
        }
        if (strncmp(p, word, len) != 0) continue;
        char before = p > text ? p[-1] : ' ';
        if (!ident_char(before) && before != '.' && before != '>' && !ident_char(p[len]))
            return true;
    }
    return false;
}

/* Host pointers: copy in, run, copy out, wait. */
static void emit_run_host(CudaCtx *cx, IrGraph *g, CWriter *c) {
    const char *N = cx->c.opts->name, *U = cgen_upper_name(&cx->c);
    cw_open(c, "int %s_cuda_run_host(%s_cuda_ctx *ctx, const %s_inputs *in, %s_outputs *out)", N,
            N, N, N);
    cw_line(c, "int rc;");
    emit_null_checks(cx, g, c);
    emit_io_copies(cx, g, c, true, "HostToDevice", "ctx->stream");
    cw_line(c, "if ((rc = %s_cuda_run(ctx, &ctx->in, &ctx->out, ctx->stream)) != %s_OK) return rc;",
            N, U);
    emit_io_copies(cx, g, c, false, "DeviceToHost", "ctx->stream");
    cw_line(c, "KC_CUDA(cudaStreamSynchronize(ctx->stream));");
    cw_line(c, "return %s;", cx->uses_status ? cgen_fmt(&cx->c, "%s_cuda_status(ctx)", N)
                                             : cgen_fmt(&cx->c, "%s_OK", U));
    cw_close(c, NULL);
}

/* NAME_cuda_profile and its node tables. */
static void emit_profile(CudaCtx *cx, CWriter *c) {
    const char *N = cx->c.opts->name, *U = cgen_upper_name(&cx->c);
    const char *const *tables[2] = {cx->prof_name, cx->prof_kind};
    const char *table_names[2] = {"nodes", "kinds"};
    for (int t = 0; t < 2; t++) {
        cw_open(c, "const char *const %s_profile_%s[%u] =", N, table_names[t],
                cx->n_prof ? cx->n_prof : 1);
        for (uint32_t k = 0; k < cx->n_prof; k++) cw_line(c, "\"%s\",", tables[t][k]);
        if (cx->n_prof == 0) cw_line(c, "\"\"");
        cw_close(c, ";");
        cw_blank(c);
    }
    cw_open(c, "int %s_cuda_profile(%s_cuda_ctx *ctx, float *node_ms)", N, N);
    cw_line(c, "enum { N_EV = 2 * %s_PROFILE_NODES };", U);
    cw_line(c, "cudaEvent_t *ev;");
    cw_line(c, "int made = 0, rc = %s_OK;", U);
    cw_line(c, "if (!ctx || (!node_ms && N_EV > 0)) return %s_ERR_NULL;", U);
    cw_line(c, "if (N_EV == 0) return %s_OK;", U);
    cw_line(c, "ev = (cudaEvent_t *)calloc(N_EV, sizeof *ev);");
    cw_line(c, "if (!ev) return %s_ERR_NOMEM;", U);
    cw_line(c, "while (made < N_EV && cudaEventCreate(&ev[made]) == cudaSuccess) made++;");
    cw_line(c, "if (made < N_EV) rc = %s_ERR_CUDA;", U);
    cw_line(c, "if (rc == %s_OK) rc = %s_enqueue(ctx, ctx->stream, ev);", U, N);
    cw_line(c, "if (cudaStreamSynchronize(ctx->stream) != cudaSuccess && rc == %s_OK) rc = "
               "%s_ERR_CUDA;", U, U);
    cw_open(c, "for (int i = 0; rc == %s_OK && i < %s_PROFILE_NODES; i++)", U, U);
    cw_line(c, "if (cudaEventElapsedTime(&node_ms[i], ev[2 * i], ev[2 * i + 1]) != cudaSuccess) "
               "rc = %s_ERR_CUDA;", U);
    cw_close(c, NULL);
    cw_line(c, "while (made > 0) cudaEventDestroy(ev[--made]);");
    cw_line(c, "free(ev);");
    cw_line(c, "return rc;");
    cw_close(c, NULL);
}

static void emit_source(CudaCtx *cx, IrGraph *g, CWriter *c, const DevLayout *L) {
    const char *N = cx->c.opts->name, *U = cgen_upper_name(&cx->c);
    cw_line(c, "/* %s.cu: generated by kiln %s from %s. Do not edit.", N, KILN_VERSION,
            cx->c.opts->model_path ? cx->c.opts->model_path : "a model");
    cw_line(c, " * %u nodes; arena %lld bytes (lower bound %lld); products in %s. */", g->n_nodes,
            (long long)g->arena_size_bytes, (long long)g->arena_lower_bound_bytes,
            cx->prec == CUDA_PREC_FP16 ? "float16 storage, fp16 tensor cores with fp32 accumulation"
                                       : "fp32 (no TF32)");
    cw_line(c, "#include <stdlib.h>");
    cw_line(c, "#include <string.h>");
    cw_blank(c);
    cw_line(c, "#include \"%s.h\"", N);
    if (cx->n_generic) {
        cw_line(c, "/* %u node(s) run the C backend's code on one device thread: the C runtime "
                   "files are", cx->n_generic);
        cw_line(c, " * compiled __host__ __device__ (their `(void)x;` counts as no use for "
                   "nvcc: warning 550 off). */");
        cw_line(c, "#define KC_C_RUNTIME 1");
        cw_line(c, "#pragma nv_diag_suppress 550");
    }
    for (uint32_t i = 0; i < cx->n_rt; i++) cw_line(c, "#include \"%s\"", cx->rt[i]);
    if (cx->n_generic) cw_line(c, "#pragma nv_diag_default 550");
    cw_blank(c);
    cw_line(c, "#define %s_OFF_COL %lld   /* im2col workspace (%lld bytes) */", U, (long long)L->col,
            (long long)cx->col_bytes);
    cw_line(c, "#define %s_OFF_LT_WS %lld /* cuBLASLt workspace */", U, (long long)L->lt_ws);
    cw_line(c, "#define %s_LT_WS_BYTES %d", U, CUDA_LT_WORKSPACE);
    cw_line(c, "#define %s_OFF_STATUS %lld", U, (long long)L->status);
    cw_line(c, "#define %s_COMPUTE %s", U,
            cx->prec == CUDA_PREC_FP16 ? "CUBLAS_COMPUTE_32F_FAST_16F" : "CUBLAS_COMPUTE_32F");
    cw_blank(c);
    cw_open(c, "struct %s_cuda_ctx", N);
    cw_line(c, "unsigned char *dev;     /* the device arena, %s_DEVICE_BYTES */", U);
    cw_line(c, "unsigned char *weights; /* device copy of the weights */");
    cw_line(c, "%s_inputs in;           /* the graph's input buffers, in dev */", N);
    cw_line(c, "%s_outputs out;         /* the graph's output buffers, in dev */", N);
    cw_line(c, "int *status;            /* device status word, in dev */");
    cw_line(c, "int *status_host;       /* pinned copy of it after each run */");
    cw_line(c, "cublasLtHandle_t lt;");
    cw_line(c, "cudaStream_t stream;    /* private: capture and run_host */");
    cw_line(c, "cudaGraph_t graph;");
    cw_line(c, "cudaGraphExec_t exec;");
    cw_close(c, ";");
    cw_blank(c);
    if (cx->kernels->len) {
        cw_raw(c, "%s", cx->kernels->buf);
        cw_blank(c);
    }
    cw_line(c, "/* Enqueues every node on s: once inside the capture of %s_cuda_init (prof NULL),", N);
    cw_line(c, " * and by %s_cuda_profile with an event pair per node in prof. */", N);
    cw_line(c, "#define KC_PROF(i) do { if (prof) KC_CUDA(cudaEventRecord(prof[i], s)); } while (0)");
    cw_open(c, "static int %s_enqueue(%s_cuda_ctx *ctx, cudaStream_t s, cudaEvent_t *prof)", N, N);
    const char *body = cx->c.w->buf ? cx->c.w->buf : "";
    /* locals only where the body uses them (nvcc warns about unused ones) */
    if (cuda_uses_word(body, "w")) cw_line(c, "const unsigned char *w = ctx->weights;");
    if (cuda_uses_word(body, "a")) cw_line(c, "unsigned char *a = ctx->dev;");
    if (cuda_uses_word(body, "in")) cw_line(c, "const %s_inputs *in = &ctx->in;", N);
    if (cuda_uses_word(body, "out")) cw_line(c, "%s_outputs *out = &ctx->out;", N);
    if (cuda_uses_word(body, "col")) cw_line(c, "unsigned char *col = ctx->dev + %s_OFF_COL;", U);
    if (cuda_uses_word(body, "lt_ws")) cw_line(c, "void *lt_ws = ctx->dev + %s_OFF_LT_WS;", U);
    if (cuda_uses_word(body, "status") || cx->uses_status) cw_line(c, "int *status = ctx->status;");
    if (cuda_uses_word(body, "rc")) cw_line(c, "int rc;");
    cw_line(c, "(void)ctx;");
    if (cx->uses_status) cw_line(c, "KC_CUDA(cudaMemsetAsync(status, 0, sizeof(int), s));");
    cw_blank(c);
    cw_raw(c, "%s", body);
    cw_line(c, "return KC_OK;");
    cw_close(c, NULL);
    cw_blank(c);

    cw_open(c, "void %s_cuda_free(%s_cuda_ctx *ctx)", N, N);
    cw_line(c, "if (!ctx) return;");
    cw_line(c, "if (ctx->exec) cudaGraphExecDestroy(ctx->exec);");
    cw_line(c, "if (ctx->graph) cudaGraphDestroy(ctx->graph);");
    cw_line(c, "if (ctx->stream) cudaStreamDestroy(ctx->stream);");
    cw_line(c, "if (ctx->lt) cublasLtDestroy(ctx->lt);");
    cw_line(c, "if (ctx->status_host) cudaFreeHost(ctx->status_host);");
    cw_line(c, "if (ctx->weights) cudaFree(ctx->weights);");
    cw_line(c, "if (ctx->dev) cudaFree(ctx->dev);");
    cw_line(c, "free(ctx);");
    cw_close(c, NULL);
    cw_blank(c);

    cw_open(c, "static int %s_setup(%s_cuda_ctx *ctx, const void *host_weights)", N, N);
    cw_line(c, "cudaError_t cap;");
    cw_line(c, "int rc;");
    cw_line(c, "if (cudaMalloc((void **)&ctx->dev, %s_DEVICE_BYTES) != cudaSuccess) return "
               "%s_ERR_NOMEM;", U, U);
    cw_line(c, "KC_CUDA(cudaMemset(ctx->dev, 0, %s_DEVICE_BYTES));", U);
    cw_line(c, "if (%s_WEIGHTS_SIZE > 0) {", U);
    cw_line(c, "    if (cudaMalloc((void **)&ctx->weights, %s_WEIGHTS_SIZE) != cudaSuccess) "
               "return %s_ERR_NOMEM;", U, U);
    cw_line(c, "    KC_CUDA(cudaMemcpy(ctx->weights, host_weights, %s_WEIGHTS_SIZE, "
               "cudaMemcpyHostToDevice));", U);
    cw_line(c, "}");
    cw_line(c, "if (cudaMallocHost((void **)&ctx->status_host, sizeof(int)) != cudaSuccess) "
               "return %s_ERR_NOMEM;", U);
    cw_line(c, "*ctx->status_host = 0;");
    cw_line(c, "ctx->status = (int *)(ctx->dev + %s_OFF_STATUS);", U);
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        uint32_t v = g->inputs[i];
        cw_line(c, "ctx->in.%s = (const %s *)(ctx->dev + %lld);", cx->c.field[v],
                cgen_ctype((IrDType)g->values[v].type.dtype), (long long)L->in[i]);
    }
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t v = g->outputs[i];
        cw_line(c, "ctx->out.%s = (%s *)(ctx->dev + %lld);", cx->out_field[i],
                cgen_ctype((IrDType)g->values[v].type.dtype), (long long)L->out[i]);
        if (L->count[i] >= 0)
            cw_line(c, "ctx->out.%s_count = (int64_t *)(ctx->dev + %lld);",
                    cx->out_field[i], (long long)L->count[i]);
    }
    cw_line(c, "if (cublasLtCreate(&ctx->lt) != CUBLAS_STATUS_SUCCESS) return %s_ERR_CUBLAS;", U);
    cw_line(c, "KC_CUDA(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));");
    cw_line(c, "KC_CUDA(cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal));");
    cw_line(c, "rc = %s_enqueue(ctx, ctx->stream, NULL);", N);
    cw_line(c, "cap = cudaStreamEndCapture(ctx->stream, &ctx->graph); /* ends it on failure too */");
    cw_line(c, "if (rc != KC_OK) return rc;");
    cw_line(c, "if (cap != cudaSuccess) return %s_ERR_CUDA;", U);
    cw_line(c, "KC_CUDA(cudaGraphInstantiate(&ctx->exec, ctx->graph, 0));");
    cw_line(c, "KC_CUDA(cudaGraphUpload(ctx->exec, ctx->stream));");
    cw_line(c, "KC_CUDA(cudaStreamSynchronize(ctx->stream));");
    cw_line(c, "return %s_OK;", U);
    cw_close(c, NULL);
    cw_blank(c);

    cw_open(c, "%s_cuda_ctx *%s_cuda_init(const void *host_weights, int *status)", N, N);
    cw_line(c, "%s_cuda_ctx *ctx;", N);
    cw_line(c, "int rc;");
    cw_line(c, "if (%s_WEIGHTS_SIZE > 0 && !host_weights) {", U);
    cw_line(c, "    if (status) *status = %s_ERR_NULL;", U);
    cw_line(c, "    return NULL;");
    cw_line(c, "}");
    cw_line(c, "ctx = (%s_cuda_ctx *)calloc(1, sizeof *ctx);", N);
    cw_line(c, "if (!ctx) {");
    cw_line(c, "    if (status) *status = %s_ERR_NOMEM;", U);
    cw_line(c, "    return NULL;");
    cw_line(c, "}");
    cw_line(c, "rc = %s_setup(ctx, host_weights);", N);
    cw_line(c, "if (status) *status = rc;");
    cw_line(c, "if (rc != %s_OK) {", U);
    cw_line(c, "    %s_cuda_free(ctx);", N);
    cw_line(c, "    return NULL;");
    cw_line(c, "}");
    cw_line(c, "return ctx;");
    cw_close(c, NULL);
    cw_blank(c);

    cw_open(c, "void %s_cuda_io(const %s_cuda_ctx *ctx, %s_inputs *in, %s_outputs *out)", N, N, N, N);
    cw_line(c, "if (ctx && in) *in = ctx->in;");
    cw_line(c, "if (ctx && out) *out = ctx->out;");
    cw_close(c, NULL);
    cw_blank(c);

    cw_open(c, "int %s_cuda_status(const %s_cuda_ctx *ctx)", N, N);
    cw_line(c, "return ctx ? *ctx->status_host : %s_ERR_NULL;", U);
    cw_close(c, NULL);
    cw_blank(c);

    cw_open(c, "int %s_cuda_run(%s_cuda_ctx *ctx, const %s_inputs *in, %s_outputs *out, "
               "cudaStream_t stream)", N, N, N, N);
    emit_null_checks(cx, g, c);
    emit_io_copies(cx, g, c, true, "Default", "stream");
    cw_line(c, "KC_CUDA(cudaGraphLaunch(ctx->exec, stream));");
    emit_io_copies(cx, g, c, false, "Default", "stream");
    if (cx->uses_status)
        cw_line(c, "KC_CUDA(cudaMemcpyAsync(ctx->status_host, ctx->status, sizeof(int), "
                   "cudaMemcpyDeviceToHost, stream));");
    cw_line(c, "return %s_OK;", U);
    cw_close(c, NULL);
    cw_blank(c);

    emit_run_host(cx, g, c);
    cw_blank(c);
    emit_profile(cx, c);
}


static void emit_test_main(CudaCtx *cx, IrGraph *g, CWriter *c) {
    const char *N = cx->c.opts->name, *U = cgen_upper_name(&cx->c);
    cw_line(c, "/* %s_test_main.cu: generated by kiln. A test harness, not part of the model code:", N);
    cw_line(c, " * %s_test WEIGHTS_FILE IN_FILE... OUT_FILE... reads each input as raw little-endian", N);
    cw_line(c, " * bytes, poisons the outputs, runs the model on the GPU through %s_cuda_run_host and", N);
    cw_line(c, " * writes each output's raw bytes (the argument order of the C test main). When every");
    cw_line(c, " * input file holds K samples back to back (K times the input's size), it runs K times");
    cw_line(c, " * and each output file holds the K outputs back to back. */");
    cgen_test_main_includes(c, N);
    cw_line(c, "/* The whole file; *size its length. Exits on failure. */");
    cw_open(c, "static unsigned char *read_all(const char *path, size_t *size)");
    cw_line(c, "FILE *f = fopen(path, \"rb\");");
    cw_line(c, "long n;");
    cw_line(c, "unsigned char *p;");
    cw_line(c, "if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) "
               "!= 0) { fprintf(stderr, \"%%s: cannot read\\n\", path); exit(2); }");
    cw_line(c, "p = (unsigned char *)calloc(1, (size_t)n + 1);");
    cw_line(c, "if (!p || (n && fread(p, 1, (size_t)n, f) != (size_t)n)) { fprintf(stderr, \"%%s: "
               "cannot read %%ld bytes\\n\", path, n); exit(2); }");
    cw_line(c, "fclose(f);");
    cw_line(c, "*size = (size_t)n;");
    cw_line(c, "return p;");
    cw_close(c, NULL);
    cw_blank(c);
    cw_line(c, "/* How many samples of `want` bytes a file of `size` bytes holds; exits if none or");
    cw_line(c, " * a partial one, or a count other than *k (0: not yet known). */");
    cw_open(c, "static void count_samples(const char *path, size_t size, size_t want, size_t *k)");
    cw_line(c, "size_t n;");
    cw_line(c, "if (want == 0) return; /* an empty input fits any count */");
    cw_line(c, "n = size / want;");
    cw_line(c, "if (size %% want != 0 || n == 0 || (*k && n != *k)) { fprintf(stderr, "
               "\"%%s: %%lu bytes is not %%s %%lu-byte samples\\n\", path, (unsigned long)size, "
               "*k ? \"the other inputs' count of\" : \"a whole number of\", (unsigned long)want); "
               "exit(2); }");
    cw_line(c, "*k = n;");
    cw_close(c, NULL);
    cw_blank(c);
    cw_open(c, "int main(int argc, char **argv)");
    cw_line(c, "%s_inputs in;", N);
    cw_line(c, "%s_outputs out;", N);
    cw_line(c, "%s_cuda_ctx *ctx;", N);
    cw_line(c, "const unsigned char *weights;");
    cw_line(c, "size_t size, k = 0;");
    cw_line(c, "FILE *fo[%u];", g->n_outputs ? g->n_outputs : 1);
    cw_line(c, "int rc, arg = 1;");
    for (uint32_t i = 0; i < g->n_inputs; i++)
        cw_line(c, "const unsigned char *in%u;", i);
    cw_line(c, "if (argc != %u) { fprintf(stderr, \"usage: %%s WEIGHTS IN... OUT...\\n\", argv[0]); "
               "return 2; }", g->n_inputs + g->n_outputs + 2);
    cw_line(c, "memset(&in, 0, sizeof in);");
    cw_line(c, "memset(&out, 0, sizeof out); /* no run-time counts wanted */");
    cw_line(c, "weights = read_all(argv[arg], &size);");
    cw_line(c, "if (size < %s_WEIGHTS_SIZE) { fprintf(stderr, \"%%s: %%lu bytes, %%lu expected\\n\", "
               "argv[arg], (unsigned long)size, (unsigned long)%s_WEIGHTS_SIZE); return 2; }", U, U);
    cw_line(c, "arg++;");
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        cw_line(c, "in%u = read_all(argv[arg], &size);", i);
        cw_line(c, "count_samples(argv[arg++], size, %lld, &k);",
                (long long)value_bytes(cx, g->inputs[i]));
    }
    cw_line(c, "if (k == 0) k = 1;");
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t v = g->outputs[i];
        const char *f = cx->out_field[i];
        cw_line(c, "out.%s = (%s *)malloc(%lld + 1);", f,
                cgen_ctype((IrDType)g->values[v].type.dtype), (long long)value_bytes(cx, v));
        cw_line(c, "if (!out.%s || !(fo[%u] = fopen(argv[arg + %u], \"wb\"))) { fprintf(stderr, "
                   "\"%%s: cannot write\\n\", argv[arg + %u]); return 2; }", f, i, i, i);
    }
    cw_line(c, "ctx = %s_cuda_init(weights, &rc);", N);
    cw_line(c, "if (!ctx) { fprintf(stderr, \"%s_cuda_init failed: status %%d\\n\", rc); return 1; }", N);
    cw_open(c, "for (size_t j = 0; j < k; j++)");
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        uint32_t v = g->inputs[i];
        cw_line(c, "in.%s = (const %s *)(in%u + j * %lld);", cx->c.field[v],
                cgen_ctype((IrDType)g->values[v].type.dtype), i, (long long)value_bytes(cx, v));
    }
    for (uint32_t i = 0; i < g->n_outputs; i++)
        cw_line(c, "memset(out.%s, POISON_BYTE, %lld + 1);", cx->out_field[i],
                (long long)value_bytes(cx, g->outputs[i]));
    cw_line(c, "rc = %s_cuda_run_host(ctx, &in, &out);", N);
    cw_line(c, "if (rc != %s_OK) { fprintf(stderr, \"%s_cuda_run_host failed on sample %%lu: "
               "status %%d\\n\", (unsigned long)j, rc); return 1; }", U, N);
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        int64_t nb = value_bytes(cx, g->outputs[i]);
        if (nb > 0)
            cw_line(c, "if (fwrite(out.%s, 1, %lld, fo[%u]) != %lld) { fprintf(stderr, \"%%s: "
                       "cannot write\\n\", argv[arg + %u]); return 2; }", cx->out_field[i],
                    (long long)nb, i, (long long)nb, i);
    }
    cw_close(c, NULL);
    for (uint32_t i = 0; i < g->n_outputs; i++)
        cw_line(c, "if (fclose(fo[%u]) != 0) { fprintf(stderr, \"%%s: cannot write\\n\", argv[arg + "
                   "%u]); return 2; }", i, i);
    cw_line(c, "%s_cuda_free(ctx);", N);
    cw_line(c, "return 0;");
    cw_close(c, NULL);
}

static void emit_cmake(CudaCtx *cx, CWriter *c) {
    const char *N = cx->c.opts->name;
    cw_line(c, "# Generated by kiln %s. Builds the model as a static CUDA library.", KILN_VERSION);
    cw_line(c, "cmake_minimum_required(VERSION 3.18)");
    cw_line(c, "if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)");
    cw_line(c, "  set(CMAKE_CUDA_ARCHITECTURES 80 90) # Ampere and Hopper; override with -D");
    cw_line(c, "endif()");
    cw_line(c, "project(%s LANGUAGES CXX CUDA)", N);
    cw_line(c, "if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)");
    cw_line(c, "  set(CMAKE_BUILD_TYPE Release)");
    cw_line(c, "endif()");
    cw_line(c, "find_package(CUDAToolkit 12 REQUIRED)");
    cw_line(c, "add_library(%s STATIC %s.cu)", N, N);
    cw_line(c, "target_include_directories(%s PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})", N);
    cw_line(c, "target_link_libraries(%s PUBLIC CUDA::cudart CUDA::cublasLt)", N);
    if (cx->c.opts->test_main) {
        cw_line(c, "if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/%s_test_main.cu)", N);
        cw_line(c, "  add_executable(%s_test %s_test_main.cu)", N, N);
        cw_line(c, "  target_link_libraries(%s_test PRIVATE %s)", N, N);
        cw_line(c, "endif()");
    }
}

static void emit_readme(CudaCtx *cx, IrGraph *g, CWriter *c, const DevLayout *L) {
    const char *N = cx->c.opts->name;
    cw_line(c, "# %s (CUDA)", N);
    cw_blank(c);
    cw_line(c, "Generated by kiln %s from `%s`%s.", KILN_VERSION,
            cx->c.opts->model_path ? cx->c.opts->model_path : "a model",
            cx->c.opts->command_line ? cgen_fmt(&cx->c, " with `%s`", cx->c.opts->command_line)
                                     : "");
    cw_blank(c);
    cw_line(c, "| input | type |");
    cw_line(c, "|---|---|");
    for (uint32_t i = 0; i < g->n_inputs; i++)
        cw_line(c, "| `%s` | %s |", cx->c.field[g->inputs[i]],
                cgen_type_str(&cx->c, &g->values[g->inputs[i]].type));
    cw_blank(c);
    cw_line(c, "| output | type |");
    cw_line(c, "|---|---|");
    for (uint32_t i = 0; i < g->n_outputs; i++)
        cw_line(c, "| `%s` | %s |", cx->out_field[i],
                cgen_type_str(&cx->c, &g->values[g->outputs[i]].type));
    cw_blank(c);
    cw_line(c, "- arena: %lld bytes planned (lower bound %lld, naive sum %lld); one device "
               "allocation of %lld bytes with the workspaces and I/O buffers",
            (long long)g->arena_size_bytes, (long long)g->arena_lower_bound_bytes,
            (long long)g->arena_naive_bytes, (long long)L->total);
    cw_line(c, "- weights: %lld bytes (`%s_weights.bin`), uploaded once by `%s_cuda_init`",
            (long long)cx->c.weights_size, N, N);
    cw_line(c, "- matrix products: cuBLASLt, %s",
            cx->prec == CUDA_PREC_FP16 ? "fp16 tensor cores with fp32 accumulation"
                                       : "fp32 (TF32 off)");
    cw_line(c, "- the whole model is one CUDA graph, captured at init");
    if (cx->n_generic)
        cw_line(c, "- %u node(s) without a CUDA kernel run the C backend's code on one device "
                   "thread (correct, slow)", cx->n_generic);
    cw_blank(c);
    cw_line(c, "Build: `cmake -S . -B build && cmake --build build` (CUDA 12 or newer), or "
               "`nvcc -c %s.cu` and link with `-lcublasLt -lcudart`. API and status codes: "
               "`%s.h`.", N, N);
}

/* The float16 storage of --precision fp16 covers the nodes that have a CUDA kernel of their
 * own (all of them take float16); nodes on the generic path (the C code on one thread)
 * stay float32. */
static bool runs_in_fp16(const IrGraph *g, const IrNode *n, void *arg) {
    (void)g, (void)arg;
    return cuda_emit_table[n->op] && cuda_emit_table[n->op] != cuda_emit_generic;
}

bool cuda_write_bundle(IrGraph *g, const CgenOptions *opts, const CudaOptions *co,
                       const char *out_dir, Diag *d) {
    cuda_tables_init();
    if (opts->embed_weights) {
        diag_error(d, "the CUDA backend reads weights from NAME_weights.bin (--weights embed "
                      "is for the C backend)");
        return false;
    }
    /* The passes run as for C, less those whose results have no CUDA kernel yet: fused
     * attention and elementwise chains. */
    static const char *const no_cuda_kernel[] = {"fuse-attention", "fuse-eltwise"};
    enum { N_NO_CUDA = sizeof no_cuda_kernel / sizeof *no_cuda_kernel };
    const PassOptions *po = opts->passes;
    const char *disabled[CUDA_MAX_DISABLED];
    PassOptions popts;
    memset(&popts, 0, sizeof popts);
    if (po) popts = *po;
    popts.n_disabled = 0;
    for (unsigned i = 0; po && i < po->n_disabled && i < CUDA_MAX_DISABLED - N_NO_CUDA; i++)
        disabled[popts.n_disabled++] = po->disabled[i];
    for (unsigned i = 0; i < N_NO_CUDA; i++)
        if (pass_known(no_cuda_kernel[i])) disabled[popts.n_disabled++] = no_cuda_kernel[i];
    popts.disabled = disabled;
    if (!pass_pipeline_run(g, &popts, PASS_STAGE_OPTIMIZE, d)) return false;
    if (co->prec == CUDA_PREC_FP16) pass_fp16(g, runs_in_fp16, NULL, d);
    if (!cgen_control_prepare(g, d)) return false;
    if (!check_supported(g, d)) return false;
    if (!pass_pipeline_run(g, &popts, PASS_STAGE_PLAN, d)) return false;
    if (mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
        diag_error(d, "%s: cannot create: %s", out_dir, strerror(errno));
        return false;
    }
    CudaCtx cx;
    memset(&cx, 0, sizeof cx);
    cx.prec = co->prec;
    cx.conv = co->conv;
    cx.c.g = g;
    cx.c.opts = opts;
    cx.c.d = d;
    cx.c.weight_offset = calloc(g->n_values + 1, sizeof *cx.c.weight_offset);
    cx.c.field = calloc(g->n_values + 1, sizeof *cx.c.field);
    IR_ASSERT(cx.c.weight_offset && cx.c.field);
    cgen_bundle_assign(&cx.c, g);
    cpp_safe_fields(&cx, g);
    cuda_use_runtime(&cx, "kc_common.cuh");
    cuda_use_runtime(&cx, "kc_blas.cuh"); /* the context holds the cuBLASLt handle */
    CWriter body, kernels, h, c, m;
    cw_init(&body);
    cw_init(&kernels);
    cw_init(&h);
    cw_init(&c);
    cw_init(&m);
    body.indent = 1;
    cx.c.w = &body;
    cx.kernels = &kernels;
    bool ok = emit_body(&cx, g);
    if (ok) {
        DevLayout L;
        dev_layout(&cx, g, &L);
        emit_header(&cx, g, &h, &L);
        emit_source(&cx, g, &c, &L);
        ok &= cgen_write_text(out_dir, cgen_fmt(&cx.c, "%s.h", opts->name), &h, d);
        ok &= cgen_write_text(out_dir, cgen_fmt(&cx.c, "%s.cu", opts->name), &c, d);
        for (uint32_t i = 0; i < cx.n_rt && ok; i++) {
            const CgenRuntimeFile *rf = runtime_file(cx.rt[i]);
            IR_ASSERT(rf);
            ok &= cgen_write_raw(out_dir, rf->name, rf->text, strlen(rf->text), d);
        }
        ok &= cgen_write_weights(&cx.c, out_dir, d);
        emit_cmake(&cx, &m);
        ok &= cgen_write_text(out_dir, "CMakeLists.txt", &m, d);
        emit_readme(&cx, g, &m, &L);
        ok &= cgen_write_text(out_dir, "README.md", &m, d);
        if (opts->test_main) {
            emit_test_main(&cx, g, &m);
            ok &= cgen_write_text(out_dir, cgen_fmt(&cx.c, "%s_test_main.cu", opts->name), &m, d);
        }
    }
    cw_free(&body);
    cw_free(&kernels);
    cw_free(&h);
    cw_free(&c);
    cw_free(&m);
    for (uint32_t gi = 1; gi < cx.c.n_graphs; gi++) free(cx.c.graph_weight_offset[gi]);
    free(cx.c.graph_weight_offset);
    free(cx.c.graphs);
    free(cx.c.weight_offset);
    free(cx.c.field);
    free(cx.c.expr);
    ir_arena_free(&cx.c.scratch);
    return ok;
}
