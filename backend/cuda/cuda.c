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

#include "backend/c/cgen_count.h"
#include "backend/cuda/cuda.h"
#include "backend/target.h"
#include "ir/open_dims.h"
#include "passes/passes.h"

#define CUDA_DEV_ALIGN 256          /* cudaMalloc's own alignment; regions keep it */
#define CUDA_LT_WORKSPACE (8 << 20) /* cuBLASLt workspace bytes: room for split-K algorithms */

void cuda_use_runtime(CudaCtx *cx, const char *file) {
    for (uint32_t i = 0; i < cx->n_rt; i++)
        if (strcmp(cx->rt[i], file) == 0) return;
    IR_ASSERT(cx->n_rt < CUDA_MAX_RUNTIME);
    cx->rt[cx->n_rt++] = file;
}

static int64_t dev_align(int64_t x) { return (x + CUDA_DEV_ALIGN - 1) / CUDA_DEV_ALIGN * CUDA_DEV_ALIGN; }

/* A subgraph runs inside its control-flow node's generic kernel, as C code: every node has
 * a C kernel and every value it stores is a static numeric tensor. */
static bool check_subgraph(const IrGraph *g, Diag *d) {
    bool ok = true;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead || cgen_op_supported((IrOp)n->op)) continue;
        ir_node_diag(d, DIAG_ERROR, n, " in subgraph '%s': no C kernel for this op", g->name);
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
bool cuda_check(const IrGraph *g, Diag *d) {
    cuda_tables_init();
    bool open = ir_report_open_dims(g, d) > 0; /* one error for all the open input dims */
    bool ok = !open;
    uint32_t n_missing = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead || cuda_op_supported((IrOp)n->op)) continue;
        ir_node_diag(d, DIAG_ERROR, n, ": no CUDA kernel for this op");
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
        if (open && val->type.kind == IR_TYPE_TENSOR) continue; /* reported above */
        if (val->type.kind != IR_TYPE_TENSOR || !ir_type_is_static(&val->type) ||
            val->type.dtype == IR_DTYPE_STRING || val->type.dtype == IR_DTYPE_UNDEF) {
            diag_error(d, "value '%s' is not a tensor of static shape and numeric type (fix "
                          "symbolic dimensions with --dim NAME=VALUE)", val->name);
            ok = false;
        }
    }
    return ok;
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
        if (strcmp(cx->c.b.field[g->inputs[i]], f) == 0) return true;
    for (uint32_t i = 0; i < g->n_outputs; i++)
        if (cx->c.b.out_field[i] && (strcmp(cx->c.b.out_field[i], f) == 0 ||
                                 strcmp(cgen_fmt(&cx->c, "%s_count", cx->c.b.out_field[i]), f) == 0))
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

/* Every input and output field C++-safe (values written in place follow their output's
 * field). */
static void cpp_safe_fields(CudaCtx *cx, IrGraph *g) {
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        uint32_t v = g->inputs[i];
        cx->c.b.field[v] = cpp_safe(cx, g, cx->c.b.field[v]);
    }
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        const char *old = cx->c.b.out_field[i], *f = cpp_safe(cx, g, old);
        if (f == old) continue;
        uint32_t v = g->outputs[i];
        const char *cur = cx->c.b.field[v];
        if (g->values[v].kind == IR_VALUE_NODE && cur && strcmp(cur, old) == 0) cx->c.b.field[v] = f;
        cx->c.b.out_field[i] = f;
    }
}

/* Truncates w back to len bytes: drops what a refused emitter wrote. */
static void cw_truncate(CWriter *w, size_t len) {
    if (w->buf && len <= w->len) {
        w->len = len;
        w->buf[len] = 0;
    }
}

const char *cuda_lt_site(CudaCtx *cx) {
    return cgen_fmt(&cx->c, "&ctx->lt_sites[%u], ctx->lt_tuning", cx->n_lt_sites++);
}

/* A warning that node n runs on the generic path (its C code on one device thread), with
 * its size and why: a slow node should never go unnoticed. */
static void warn_generic(CudaCtx *cx, const IrNode *n, const char *why) {
    int64_t elems = 0;
    for (uint32_t k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] != IR_NONE) elems += cgen_numel(&cx->c, n->outputs[k]);
    ir_node_diag(cx->c.b.d, DIAG_WARNING, n, " runs as C code on one GPU thread (%lld output "
                 "elements): %s", (long long)elems, why);
}

/* Node n through its CUDA kernel; where that kernel refuses the node (a dtype, attribute or
 * non-constant input it does not handle) and the C backend has a kernel, through the generic
 * path instead, with a warning that gives the kernel's reason. */
static bool emit_node(CudaCtx *cx, const IrNode *n) {
    if (cuda_emit_table[n->op] == cuda_emit_generic) {
        if (!cuda_element_parallel(n->op)) warn_generic(cx, n, "no CUDA kernel for this op");
        return cuda_emit_generic(cx, n);
    }
    if (!cgen_emit_table[n->op]) return cuda_emit_table[n->op](cx, n);
    size_t body_len = cx->c.w->len, kernels_len = cx->kernels->len;
    uint32_t n_kernels = cx->n_kernels, n_lt_sites = cx->n_lt_sites;
    bool uses_status = cx->uses_status;
    Diag quiet, *d = cx->c.b.d;
    diag_init(&quiet);
    cx->c.b.d = &quiet;
    bool ok = cuda_emit_table[n->op](cx, n);
    cx->c.b.d = d;
    if (!ok && !cuda_element_parallel(n->op)) {
        /* the kernel's first refusal, without its "node '...' (...): " prefix */
        const char *why = quiet.n_msgs ? quiet.msgs[0].text : "its CUDA kernel refused it";
        const char *cut = strstr(why, "): ");
        warn_generic(cx, n, cut ? cut + 3 : why);
    }
    diag_free(&quiet);
    if (ok) return true;
    cw_truncate(cx->c.w, body_len);
    cw_truncate(cx->kernels, kernels_len);
    cx->n_kernels = n_kernels;
    cx->n_lt_sites = n_lt_sites;
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

/* Whether the code emitted from body_from is comments alone: a view the planner aliased, a
 * node done by the kernel of the node before. */
static bool body_empty(const CudaCtx *cx, size_t body_from) {
    const char *p = cx->c.w->buf + body_from;
    for (;;) {
        while (*p == ' ' || *p == '\n') p++;
        if (p[0] != '/' || p[1] != '*') return *p == '\0';
        const char *e = strstr(p + 2, "*/");
        if (!e) return false;
        p = e + 2;
    }
}

/* The path a node's emitted code takes, for the profile: its products go to cuBLASLt, it
 * runs the C code on one thread, it is kernels of its own, or it runs nothing ("none":
 * the profile gives it 0 ms instead of the gap between two back-to-back events). */
static const char *node_kind(CudaCtx *cx, size_t body_from, uint32_t generic_before) {
    if (cx->n_generic != generic_before) return "generic";
    if (body_empty(cx, body_from)) return "none";
    return strstr(cx->c.w->buf + body_from, "kc_lt_matmul") ? "cublaslt" : "kernel";
}

/* Floating-point operations of node n (2 per multiply-add) for the profile's achieved
 * rates: products, convolutions and attention; 0 for everything else (rated by bytes). */
static double node_flops(CudaCtx *cx, const IrNode *n) {
    const IrGraph *g = cx->c.b.g;
    if (n->n_outputs < 1 || n->outputs[0] == IR_NONE || n->n_inputs < 2) return 0.0;
    const IrType *y = &g->values[n->outputs[0]].type, *a = &g->values[n->inputs[0]].type;
    double ny = (double)cgen_numel(&cx->c, n->outputs[0]);
    switch ((IrOp)n->op) {
    case IR_OP_MAT_MUL:
    case IR_OP_FUSED_MAT_MUL:
        return a->rank >= 1 ? 2.0 * ny * (double)a->dims[a->rank - 1] : 0.0;
    case IR_OP_GEMM:
    case IR_OP_FUSED_GEMM:
        if (a->rank != 2) return 0.0;
        return 2.0 * ny *
               (double)a->dims[ir_attr_i(n, n->op == IR_OP_GEMM ? IR_ATTR_GEMM_TRANS_A
                                                               : IR_ATTR_FUSED_GEMM_TRANS_A)
                                   ? 0 : 1];
    case IR_OP_CONV:
    case IR_OP_FUSED_CONV: { /* W holds M output channels' filters: (M,C/g,k..) or (k..,C/g,M) */
        if (y->rank < 3) return 0.0;
        int64_t M = y->dims[y->layout == IR_LAYOUT_NHWC ? y->rank - 1 : 1];
        return M > 0 ? 2.0 * ny * (double)cgen_numel(&cx->c, n->inputs[1]) / (double)M : 0.0;
    }
    case IR_OP_QGEMM_INT8: /* int8 operations, counted the same way */
        return a->rank >= 1 ? 2.0 * ny * (double)a->dims[a->rank - 1] : 0.0;
    case IR_OP_QCONV: { /* NHWC: K = KH*KW*C/group */
        uint32_t nk;
        const int64_t *ks = ir_attr_ints(n, IR_ATTR_QCONV_KERNEL_SHAPE, &nk);
        int64_t group = ir_attr_i(n, IR_ATTR_QCONV_GROUP);
        if (!ks || nk != 2 || a->rank != 4 || group < 1) return 0.0;
        return 2.0 * ny * (double)(ks[0] * ks[1] * (a->dims[3] / group));
    }
    case IR_OP_FUSED_ATTENTION: { /* Q K^T and P V: (numel(Q) + numel(Y)) * Sk multiply-adds */
        int64_t qd[4], kd[4], yd[4], st[4], off;
        if (!cgen_attn_operand(&cx->c, n, 0, qd, st, &off) ||
            !cgen_attn_operand(&cx->c, n, 1, kd, st, &off) ||
            !cgen_attn_operand(&cx->c, n, 3, yd, st, &off))
            return 0.0;
        return 2.0 * ((double)(qd[0] * qd[1] * qd[2] * qd[3]) + ny) * (double)kd[2];
    }
    default:
        return 0.0;
    }
}

/* Bytes of the tensors node n reads and writes (each once): its memory traffic at best. */
static double node_bytes(CudaCtx *cx, const IrNode *n) {
    double bytes = 0.0;
    for (uint32_t k = 0; k < n->n_inputs + n->n_outputs; k++) {
        uint32_t v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        if (v != IR_NONE) bytes += (double)value_bytes(cx, v);
    }
    return bytes;
}

static bool emit_body(CudaCtx *cx, IrGraph *g) {
    bool ok = true;
    cx->prof_name = ir_arena_alloc(&cx->c.b.scratch, (g->n_nodes + 1) * sizeof *cx->prof_name);
    cx->prof_kind = ir_arena_alloc(&cx->c.b.scratch, (g->n_nodes + 1) * sizeof *cx->prof_kind);
    cx->prof_flops = ir_arena_alloc(&cx->c.b.scratch, (g->n_nodes + 1) * sizeof *cx->prof_flops);
    cx->prof_bytes = ir_arena_alloc(&cx->c.b.scratch, (g->n_nodes + 1) * sizeof *cx->prof_bytes);
    uint32_t *uses = ir_use_counts(g); /* NULL (out of memory): nothing fused */
    uint32_t fused_into = IR_NONE;      /* a node the previous one's kernel already ran */
    /* the graph input's Transpose (and Cast, or QuantizeLinear before an int8 stem) that a
     * stem convolution's kernel does */
    bool *folded = ir_arena_alloc(&cx->c.b.scratch, (g->n_nodes + 1) * sizeof *folded);
    memset(folded, 0, (g->n_nodes + 1) * sizeof *folded);
    cx->uses = uses;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        uint32_t f[2];
        if (g->nodes[i].dead || (cuda_stem_input(cx, &g->nodes[i], f) == IR_NONE &&
                                 cuda_qstem_input(cx, &g->nodes[i], f) == IR_NONE))
            continue;
        for (int k = 0; k < 2; k++)
            if (f[k] != IR_NONE) folded[f[k]] = true;
    }
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead) continue;
        cx->c.node = i;
        bundle_node_comment(&cx->c.b, cx->c.w, n);
        uint32_t k = cx->n_prof++, generic_before = cx->n_generic;
        cw_line(cx->c.w, "KC_PROF(%u);", 2 * k);
        size_t body_from = cx->c.w->len;
        const char *op_type = n->op_type;
        /* an Add and the LayerNormalization after it that alone reads its sum: one kernel */
        uint32_t j = i + 1;
        while (j < g->n_nodes && g->nodes[j].dead) j++;
        if (i == fused_into) {
            cw_comment(cx->c.w, "done by the kernel of the node before");
        } else if (folded[i]) {
            cw_comment(cx->c.w, "done by the stem convolution that reads the graph input");
        } else if (n->op == IR_OP_ADD && uses && j < g->n_nodes && uses[n->outputs[0]] == 1 &&
                   cuda_emit_add_layernorm(cx, n, &g->nodes[j])) {
            fused_into = j;
            op_type = "Add+LayerNormalization";
        } else {
            ok &= emit_node(cx, n);
        }
        cx->prof_kind[k] = node_kind(cx, body_from, generic_before);
        cx->prof_name[k] = c_string(cx, cgen_fmt(&cx->c, "%s %s", op_type, n->name));
        cx->prof_flops[k] = node_flops(cx, n);
        cx->prof_bytes[k] = i == fused_into || folded[i] ? 0.0 : node_bytes(cx, n);
        if (fused_into == j && op_type != n->op_type) /* the pair's tensors, the sum left out */
            cx->prof_bytes[k] +=
                node_bytes(cx, &g->nodes[j]) - 2.0 * (double)value_bytes(cx, n->outputs[0]);
        cw_line(cx->c.w, "KC_PROF(%u);", 2 * k + 1);
    }
    cx->uses = NULL;
    free(uses);
    for (uint32_t i = 0; i < g->n_outputs; i++) { /* outputs no node wrote in place */
        uint32_t v = g->outputs[i];
        const char *f = cx->c.b.out_field[i];
        if (cx->c.b.field[v] && strcmp(cx->c.b.field[v], f) == 0 && g->values[v].kind == IR_VALUE_NODE)
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
    int64_t *count;    /* per output slot with a run-time count (bundle_has_count), else -1 */
} DevLayout;

static void dev_layout(CudaCtx *cx, IrGraph *g, DevLayout *L) {
    int64_t off = dev_align(g->arena_size_bytes);
    L->col = off;
    off += dev_align(cx->col_bytes);
    L->lt_ws = off;
    off += CUDA_LT_WORKSPACE;
    L->in = ir_arena_alloc(&cx->c.b.scratch, (g->n_inputs + 1) * sizeof *L->in);
    L->out = ir_arena_alloc(&cx->c.b.scratch, (g->n_outputs + 1) * sizeof *L->out);
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        L->in[i] = off;
        off += dev_align(value_bytes(cx, g->inputs[i]));
    }
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        L->out[i] = off;
        off += dev_align(value_bytes(cx, g->outputs[i]));
    }
    L->count = ir_arena_alloc(&cx->c.b.scratch, (g->n_outputs + 1) * sizeof *L->count);
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        L->count[i] = -1;
        if (bundle_has_count(g, g->outputs[i])) {
            L->count[i] = off;
            off += CUDA_DEV_ALIGN;
        }
    }
    L->status = off;
    L->total = off + CUDA_DEV_ALIGN;
}

/* ---- the CUDA target's places in the frame (backend/frame.c) ---- */

/* The CudaCtx a frame callback's BundleCtx belongs to (CudaCtx.c.b is its first member). */
static CudaCtx *cuda_of(BundleCtx *b) { return (CudaCtx *)(void *)b; }

static void cuda_usage(BundleCtx *b, CWriter *h) {
    const char *N = b->opts->name, *U = bundle_upper_name(b);
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
    cw_line(h, " * context: runs on different streams share its buffers. Needs CUDA 12 or newer.");
    cw_line(h, " * Optional: %s_cuda_tune(ctx) times cuBLASLt's candidate algorithms per product", N);
    cw_line(h, " * and keeps the fastest; %s_cuda_tuning / %s_cuda_load_tuning save and restore", N, N);
    cw_line(h, " * that choice, so that a later process runs the same algorithms (same output bytes).");
    bundle_emit_count_usage(b, h);
}

static void cuda_sizes(BundleCtx *b, CWriter *h) {
    cw_line(h, "#define %s_DEVICE_BYTES %lld /* the whole device arena */", bundle_upper_name(b),
            (long long)cuda_of(b)->layout->total);
}

static void cuda_api(BundleCtx *b, CWriter *h) {
    CudaCtx *cx = cuda_of(b);
    const char *N = b->opts->name, *U = bundle_upper_name(b);
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
    cw_line(h, "/* cuBLASLt algorithm tuning (docs/cuda.md). Without it each product runs the");
    cw_line(h, " * heuristic's first algorithm. %s_cuda_tune runs the model once, eagerly, on the", N);
    cw_line(h, " * context's own buffers (no run in flight), timing up to 8 algorithms per product,");
    cw_line(h, " * and captures the graph again with the fastest; synchronous. %s_cuda_tuning", N);
    cw_line(h, " * writes the choice into buf if it holds `bytes` and returns its size (buf NULL: the");
    cw_line(h, " * size only). %s_cuda_load_tuning takes such bytes and captures again; bytes of", N);
    cw_line(h, " * another cuBLASLt version, device or model, or damaged: %s_ERR_TUNING, the", U);
    cw_line(h, " * context unchanged. */");
    cw_line(h, "#define %s_LT_SITES %u /* cuBLASLt product sites */", U, cx->n_lt_sites);
    cw_line(h, "int %s_cuda_tune(%s_cuda_ctx *ctx);", N, N);
    cw_line(h, "size_t %s_cuda_tuning(const %s_cuda_ctx *ctx, void *buf, size_t bytes);", N, N);
    cw_line(h, "int %s_cuda_load_tuning(%s_cuda_ctx *ctx, const void *buf, size_t bytes);", N, N);
    cw_blank(h);
    cw_line(h, "/* Where the time goes: runs the model once outside the graph, synchronously, on "
               "the");
    cw_line(h, " * context's own input buffers, with a CUDA event pair around each node; node_ms[i] "
               "gets");
    cw_line(h, " * node i's milliseconds. Slower than a graph launch (one launch at a time). */");
    cw_line(h, "#define %s_PROFILE_NODES %u", U, cx->n_prof);
    cw_line(h, "extern const char *const %s_profile_nodes[%u]; /* \"OpType name\" */", N,
            cx->n_prof ? cx->n_prof : 1);
    cw_line(h, "extern const char *const %s_profile_kinds[%u]; /* cublaslt, kernel, generic "
               "(one thread) or none (launches nothing: 0 ms) */", N, cx->n_prof ? cx->n_prof : 1);
    cw_line(h, "/* node i's floating-point operations (2 per multiply-add of its products, "
               "convolutions");
    cw_line(h, " * and attention; 0 elsewhere) and the bytes of the tensors it reads and "
               "writes */");
    cw_line(h, "extern const double %s_profile_flops[%u];", N, cx->n_prof ? cx->n_prof : 1);
    cw_line(h, "extern const double %s_profile_bytes[%u];", N, cx->n_prof ? cx->n_prof : 1);
    cw_line(h, "int %s_cuda_profile(%s_cuda_ctx *ctx, float *node_ms);", N, N);
    cw_line(h, "#ifdef __cplusplus");
    cw_line(h, "}");
    cw_line(h, "#endif");
}

/* "if (!in->a || !in->b || !out->y) return NAME_ERR_NULL;" for one side of the API. */
static void emit_null_checks(CudaCtx *cx, IrGraph *g, CWriter *c) {
    const char *U = bundle_upper_name(&cx->c.b);
    cw_indent(c);
    cw_raw(c, "if (!ctx || !in || !out");
    for (uint32_t i = 0; i < g->n_inputs; i++) cw_raw(c, " || !in->%s", cx->c.b.field[g->inputs[i]]);
    for (uint32_t i = 0; i < g->n_outputs; i++)
        cw_raw(c, " || !out->%s", cx->c.b.out_field[i]);
    cw_raw(c, ") return %s_ERR_NULL;\n", U);
}

/* Copies between the caller's buffers and the context's: kind "In" or "Out". */
static void emit_io_copies(CudaCtx *cx, IrGraph *g, CWriter *c, bool inputs, const char *kind,
                           const char *stream) {
    uint32_t n = inputs ? g->n_inputs : g->n_outputs;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v = inputs ? g->inputs[i] : g->outputs[i];
        const char *f = inputs ? cx->c.b.field[v] : cx->c.b.out_field[i];
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
        if (!bundle_has_count(g, g->outputs[i])) continue;
        const char *f = cx->c.b.out_field[i];
        cw_line(c, "if (out->%s_count && out->%s_count != ctx->out.%s_count) "
                   "KC_CUDA(cudaMemcpyAsync(out->%s_count, ctx->out.%s_count, sizeof(int64_t), "
                   "cudaMemcpy%s, %s));", f, f, f, f, f, kind, stream);
    }
}

/* Host pointers: copy in, run, copy out, wait. */
static void emit_run_host(CudaCtx *cx, IrGraph *g, CWriter *c) {
    const char *N = cx->c.b.opts->name, *U = bundle_upper_name(&cx->c.b);
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

/* 64-bit FNV-1a of a string: the model identity of a tuning cache (NAME_LT_MODEL). */
static uint64_t fnv1a(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* NAME_cuda_tune, NAME_cuda_tuning and NAME_cuda_load_tuning (kc_blas.cuh's sites and
 * cache). Tuning and loading share NAME_set_sites: new sites, then the graph captured again;
 * a failure leaves the sites, and so the graph, as they were. */
static void emit_tuning(CudaCtx *cx, CWriter *c) {
    const char *N = cx->c.b.opts->name, *U = bundle_upper_name(&cx->c.b);
    cw_line(c, "/* Every site tuned: the enqueue run eagerly on the private stream (nothing is "
               "captured), each product timing its candidates. */");
    cw_open(c, "static int %s_tune_sites(%s_cuda_ctx *ctx)", N, N);
    cw_line(c, "int rc;");
    cw_line(c, "memset(ctx->lt_sites, 0, sizeof ctx->lt_sites);");
    cw_line(c, "ctx->lt_tuning = 1;");
    cw_line(c, "rc = %s_enqueue(ctx, ctx->stream, NULL);", N);
    cw_line(c, "ctx->lt_tuning = 0;");
    cw_line(c, "if (cudaStreamSynchronize(ctx->stream) != cudaSuccess && rc == %s_OK) rc = "
               "%s_ERR_CUDA;", U, U);
    cw_line(c, "return rc;");
    cw_close(c, NULL);
    cw_blank(c);
    cw_line(c, "/* New sites, tuned (buf NULL) or read from a cache, and the graph captured with "
               "them; a failure puts the old sites back. */");
    cw_open(c, "static int %s_set_sites(%s_cuda_ctx *ctx, const void *buf, size_t bytes)", N, N);
    cw_line(c, "KcLtSite *old = (KcLtSite *)malloc(sizeof ctx->lt_sites);");
    cw_line(c, "int rc;");
    cw_line(c, "if (!old) return %s_ERR_NOMEM;", U);
    cw_line(c, "memcpy(old, ctx->lt_sites, sizeof ctx->lt_sites);");
    cw_line(c, "rc = buf ? kc_lt_tuning_read(ctx->lt_sites, %s_LT_SITES, %s_LT_MODEL, buf, bytes)",
            U, U);
    cw_line(c, "         : %s_tune_sites(ctx);", N);
    cw_line(c, "if (rc == %s_OK) rc = %s_capture(ctx);", U, N);
    cw_line(c, "if (rc != %s_OK) memcpy(ctx->lt_sites, old, sizeof ctx->lt_sites);", U);
    cw_line(c, "free(old);");
    cw_line(c, "return rc;");
    cw_close(c, NULL);
    cw_blank(c);
    cw_open(c, "int %s_cuda_tune(%s_cuda_ctx *ctx)", N, N);
    cw_line(c, "return ctx ? %s_set_sites(ctx, NULL, 0) : %s_ERR_NULL;", N, U);
    cw_close(c, NULL);
    cw_blank(c);
    cw_open(c, "size_t %s_cuda_tuning(const %s_cuda_ctx *ctx, void *buf, size_t bytes)", N, N);
    cw_line(c, "return ctx ? kc_lt_tuning_write(ctx->lt_sites, %s_LT_SITES, %s_LT_MODEL, buf, "
               "bytes) : 0;", U, U);
    cw_close(c, NULL);
    cw_blank(c);
    cw_open(c, "int %s_cuda_load_tuning(%s_cuda_ctx *ctx, const void *buf, size_t bytes)", N, N);
    cw_line(c, "return ctx && buf ? %s_set_sites(ctx, buf, bytes) : %s_ERR_NULL;", N, U);
    cw_close(c, NULL);
}

/* NAME_cuda_profile and its node tables. */
static void emit_profile(CudaCtx *cx, CWriter *c) {
    const char *N = cx->c.b.opts->name, *U = bundle_upper_name(&cx->c.b);
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
    const double *const nums[2] = {cx->prof_flops, cx->prof_bytes};
    const char *num_names[2] = {"flops", "bytes"};
    for (int t = 0; t < 2; t++) {
        cw_open(c, "const double %s_profile_%s[%u] =", N, num_names[t],
                cx->n_prof ? cx->n_prof : 1);
        for (uint32_t k = 0; k < cx->n_prof; k++) cw_line(c, "%.17g,", nums[t][k]);
        if (cx->n_prof == 0) cw_line(c, "0");
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
    cw_line(c, "if (strcmp(%s_profile_kinds[i], \"none\") == 0) node_ms[i] = 0.0f; /* launches "
               "nothing */", N);
    cw_line(c, "else if (cudaEventElapsedTime(&node_ms[i], ev[2 * i], ev[2 * i + 1]) != "
               "cudaSuccess) rc = %s_ERR_CUDA;", U);
    cw_close(c, NULL);
    cw_line(c, "while (made > 0) cudaEventDestroy(ev[--made]);");
    cw_line(c, "free(ev);");
    cw_line(c, "return rc;");
    cw_close(c, NULL);
}

static void emit_source(CudaCtx *cx, IrGraph *g, CWriter *c, const DevLayout *L) {
    const char *N = cx->c.b.opts->name, *U = bundle_upper_name(&cx->c.b);
    cw_line(c, "/* %s.cu: generated by kiln %s from %s. Do not edit.", N, KILN_VERSION,
            bundle_provenance(&cx->c.b));
    cw_line(c, " * %u nodes; arena %lld bytes (lower bound %lld); products in %s. */", g->n_nodes,
            (long long)g->arena_size_bytes, (long long)g->arena_lower_bound_bytes,
            cx->prec == CUDA_PREC_FP16 ? "float16 storage, fp16 tensor cores with fp32 accumulation"
                                       : "fp32 (no TF32)");
    cw_line(c, "#include <stdlib.h>");
    cw_line(c, "#include <string.h>");
    cw_blank(c);
    cw_line(c, "#include \"%s.h\"", N);
    if (cx->n_generic || cx->n_parallel) {
        cw_line(c, "/* %u node(s) run the C backend's code on the device (%u on one thread): the "
                   "C runtime files are", cx->n_generic + cx->n_parallel, cx->n_generic);
        cw_line(c, " * compiled __host__ __device__ (their `(void)x;` counts as no use for "
                   "nvcc: warning 550 off). */");
        cw_line(c, "#define KC_C_RUNTIME 1");
        cw_line(c, "#define RT_QGEMM_PORTABLE 1 /* rt_qgemm.h's plain C: no host SIMD on the device */");
        cw_line(c, "#pragma nv_diag_suppress 550");
    }
    for (uint32_t i = 0; i < cx->n_rt; i++) cw_line(c, "#include \"%s\"", cx->rt[i]);
    if (cx->n_generic || cx->n_parallel) cw_line(c, "#pragma nv_diag_default 550");
    cw_blank(c);
    cw_line(c, "#define %s_OFF_COL %lld   /* im2col workspace (%lld bytes) */", U, (long long)L->col,
            (long long)cx->col_bytes);
    cw_line(c, "#define %s_OFF_LT_WS %lld /* cuBLASLt workspace */", U, (long long)L->lt_ws);
    cw_line(c, "#define %s_LT_WS_BYTES %d", U, CUDA_LT_WORKSPACE);
    cw_line(c, "#define %s_OFF_STATUS %lld", U, (long long)L->status);
    cw_line(c, "#define %s_LT_MODEL 0x%016llxull /* FNV-1a of %s_enqueue's body: the model a "
               "tuning cache is for */", U, (unsigned long long)fnv1a(cx->c.w->buf ? cx->c.w->buf : ""), N);
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
    cw_line(c, "KcLtSite lt_sites[%u]; /* per product: its cuBLASLt algorithm once tuned */",
            cx->n_lt_sites ? cx->n_lt_sites : 1);
    cw_line(c, "int lt_tuning;          /* set during %s_cuda_tune's eager run */", N);
    cw_close(c, ";");
    cw_blank(c);
    if (cx->kernels->len) {
        cw_raw(c, "%s", cx->kernels->buf);
        cw_blank(c);
    }
    cw_line(c, "/* Enqueues every node on s: once inside the capture of %s_cuda_init (prof NULL),", N);
    cw_line(c, " * and by %s_cuda_profile with an event pair per node in prof. */", N);
    cw_line(c, "#define KC_PROF(i) do { if (prof) KC_CUDA(cudaEventRecord(prof[i], s)); } while (0)");
    const char *body = cx->c.w->buf ? cx->c.w->buf : "";
    /* locals only where the body uses them (nvcc warns about unused ones) */
    CWriter locals;
    cw_init(&locals);
    locals.indent = 1;
    if (cw_uses_word(body, "w")) cw_line(&locals, "const unsigned char *w = ctx->weights;");
    if (cw_uses_word(body, "a")) cw_line(&locals, "unsigned char *a = ctx->dev;");
    if (cw_uses_word(body, "in")) cw_line(&locals, "const %s_inputs *in = &ctx->in;", N);
    if (cw_uses_word(body, "out")) cw_line(&locals, "%s_outputs *out = &ctx->out;", N);
    if (cw_uses_word(body, "col"))
        cw_line(&locals, "unsigned char *col = ctx->dev + %s_OFF_COL;", U);
    if (cw_uses_word(body, "lt_ws")) cw_line(&locals, "void *lt_ws = ctx->dev + %s_OFF_LT_WS;", U);
    if (cw_uses_word(body, "status") || cx->uses_status)
        cw_line(&locals, "int *status = ctx->status;");
    if (cw_uses_word(body, "rc")) cw_line(&locals, "int rc;");
    /* ctx unnamed when nothing reads it (C++), rather than (void)-cast */
    bool ctx_used = locals.len > 0 || cw_uses_word(body, "ctx");
    cw_open(c, "static int %s_enqueue(%s_cuda_ctx *%s, cudaStream_t s, cudaEvent_t *prof)", N, N,
            ctx_used ? "ctx" : "");
    if (locals.len) cw_raw(c, "%s", locals.buf);
    cw_free(&locals);
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

    cw_line(c, "/* Captures the model as a new graph on the private stream; the old one stays on "
               "failure. */");
    cw_open(c, "static int %s_capture(%s_cuda_ctx *ctx)", N, N);
    cw_line(c, "cudaGraph_t graph = NULL;");
    cw_line(c, "cudaGraphExec_t exec = NULL;");
    cw_line(c, "cudaError_t cap;");
    cw_line(c, "int rc;");
    cw_line(c, "KC_CUDA(cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal));");
    cw_line(c, "rc = %s_enqueue(ctx, ctx->stream, NULL);", N);
    cw_line(c, "cap = cudaStreamEndCapture(ctx->stream, &graph); /* ends it on failure too */");
    cw_line(c, "if (rc == %s_OK && cap != cudaSuccess) rc = %s_ERR_CUDA;", U, U);
    cw_line(c, "if (rc == %s_OK && cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) rc = "
               "%s_ERR_CUDA;", U, U);
    cw_line(c, "if (rc == %s_OK && cudaGraphUpload(exec, ctx->stream) != cudaSuccess) rc = "
               "%s_ERR_CUDA;", U, U);
    cw_line(c, "if (rc == %s_OK && cudaStreamSynchronize(ctx->stream) != cudaSuccess) rc = "
               "%s_ERR_CUDA;", U, U);
    cw_line(c, "if (rc != %s_OK) {", U);
    cw_line(c, "    if (exec) cudaGraphExecDestroy(exec);");
    cw_line(c, "    if (graph) cudaGraphDestroy(graph);");
    cw_line(c, "    return rc;");
    cw_line(c, "}");
    cw_line(c, "if (ctx->exec) cudaGraphExecDestroy(ctx->exec); /* freed once a launch of it ends */");
    cw_line(c, "if (ctx->graph) cudaGraphDestroy(ctx->graph);");
    cw_line(c, "ctx->graph = graph;");
    cw_line(c, "ctx->exec = exec;");
    cw_line(c, "return %s_OK;", U);
    cw_close(c, NULL);
    cw_blank(c);

    cw_open(c, "static int %s_setup(%s_cuda_ctx *ctx, const void *host_weights)", N, N);
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
        cw_line(c, "ctx->in.%s = (const %s *)(ctx->dev + %lld);", cx->c.b.field[v],
                bundle_ctype((IrDType)g->values[v].type.dtype), (long long)L->in[i]);
    }
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t v = g->outputs[i];
        cw_line(c, "ctx->out.%s = (%s *)(ctx->dev + %lld);", cx->c.b.out_field[i],
                bundle_ctype((IrDType)g->values[v].type.dtype), (long long)L->out[i]);
        if (L->count[i] >= 0)
            cw_line(c, "ctx->out.%s_count = (int64_t *)(ctx->dev + %lld);",
                    cx->c.b.out_field[i], (long long)L->count[i]);
    }
    cw_line(c, "if (cublasLtCreate(&ctx->lt) != CUBLAS_STATUS_SUCCESS) return %s_ERR_CUBLAS;", U);
    cw_line(c, "KC_CUDA(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));");
    cw_line(c, "return %s_capture(ctx);", N);
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
    emit_tuning(cx, c);
    cw_blank(c);
    emit_profile(cx, c);
}


static void cuda_readme_facts(BundleCtx *b, CWriter *c) {
    CudaCtx *cx = cuda_of(b);
    cw_line(c, "- one device allocation of %lld bytes: the arena, the workspaces and the I/O "
               "buffers; weights uploaded once by `%s_cuda_init`", (long long)cx->layout->total,
            b->opts->name);
    cw_line(c, "- matrix products: cuBLASLt, %s",
            cx->prec == CUDA_PREC_FP16 ? "fp16 tensor cores with fp32 accumulation"
                                       : "fp32 (TF32 off)");
    cw_line(c, "- the whole model is one CUDA graph, captured at init; `%s_cuda_tune` picks "
               "cuBLASLt's fastest algorithm for each of the %u product sites (optional; "
               "`%s_cuda_tuning` / `%s_cuda_load_tuning` save and restore the choice)",
            b->opts->name, cx->n_lt_sites, b->opts->name, b->opts->name);
    if (cx->n_generic)
        cw_line(c, "- %u node(s) without a CUDA kernel run the C backend's code on one device "
                   "thread (correct, slow)", cx->n_generic);
    if (cx->n_parallel)
        cw_line(c, "- %u node(s) (Reduce*, ArgMax/ArgMin, Pad, Resize, ConvTranspose, instance, "
                   "group and RMS normalization, LRN) run the C backend's code on one device "
                   "thread per output element or row", cx->n_parallel);
}

static void cuda_test_locals(BundleCtx *b, CWriter *c) {
    cw_line(c, "%s_cuda_ctx *ctx = NULL;", b->opts->name);
}

static void cuda_test_setup(BundleCtx *b, CWriter *c) {
    const char *N = b->opts->name;
    cw_line(c, "ctx = %s_cuda_init(weights, &rc);", N);
    cw_line(c, "if (!ctx) { fprintf(stderr, \"%s_cuda_init failed: status %%d\\n\", rc); status = 1; "
               "goto done; }", N);
}

static void cuda_test_run(BundleCtx *b, CWriter *c) {
    const char *N = b->opts->name;
    cw_line(c, "rc = %s_cuda_run_host(ctx, &in, &out);", N);
    cw_line(c, "if (rc != %s_OK) { fprintf(stderr, \"%s_cuda_run_host failed on sample %%lu: "
               "status %%d\\n\", (unsigned long)j, rc); status = 1; goto done; }",
            bundle_upper_name(b), N);
}

static void cuda_test_teardown(BundleCtx *b, CWriter *c) {
    cw_line(c, "if (ctx) %s_cuda_free(ctx);", b->opts->name);
}

static const char *const cuda_includes[] = {"<stddef.h>", "<cuda_runtime_api.h>", NULL};

static const BundleDialect cuda_dialect = {
    .label = "CUDA",
    .guard = "_CUDA",
    .includes = cuda_includes,
    .status = BUNDLE_STATUS_CUDA,
    .count_optional = true,
    .source = "%s.cu",
    .test_main = "%s_test_main.cu",
    .usage = cuda_usage,
    .sizes = cuda_sizes,
    .api = cuda_api,
    .readme_facts = cuda_readme_facts,
    .build_by_hand = " (CUDA 12 or newer), or `nvcc -c %s.cu` and link with `-lcublasLt -lcudart`",
    .cmake_version = "3.18",
    .cmake_before_project = "if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)\n"
                            "  set(CMAKE_CUDA_ARCHITECTURES 80 90a) # Ampere, and Hopper with wgmma; "
                            "override with -D\n"
                            "endif()\n",
    .cmake_languages = "CXX CUDA",
    .cmake_after_project = "find_package(CUDAToolkit 12 REQUIRED)\n",
    .cmake_library = "target_link_libraries(%s PUBLIC CUDA::cudart CUDA::cublasLt)\n",
    .test_run_note = " on the GPU through %s_cuda_run_host",
    .test_locals = cuda_test_locals,
    .test_setup = cuda_test_setup,
    .test_run = cuda_test_run,
    .test_teardown = cuda_test_teardown,
};

/* The float16 storage of --precision fp16 covers the nodes that have a CUDA kernel of their
 * own (all of them take float16); nodes on the generic path (the C code on one thread)
 * stay float32. */
static bool runs_in_fp16(const IrGraph *g, const IrNode *n, void *arg) {
    (void)g, (void)arg;
    /* the int8 edges keep float32 (and their scales): the C target's exact quantization */
    if (n->op == IR_OP_QUANTIZE_LINEAR || n->op == IR_OP_DEQUANTIZE_LINEAR) return false;
    return cuda_emit_table[n->op] && cuda_emit_table[n->op] != cuda_emit_generic;
}

bool cuda_op_native(IrOp op) {
    cuda_tables_init();
    return op != IR_OP_UNKNOWN && cuda_emit_table[op] && cuda_emit_table[op] != cuda_emit_generic;
}

static const CudaOptions cuda_defaults = {CUDA_PREC_FP32, CUDA_CONV_AUTO, false};

bool cuda_accepts(const BundleOptions *opts, Diag *d) {
    if (!opts->embed_weights) return true;
    diag_error(d, "the CUDA backend reads weights from NAME_weights.bin (--weights embed is "
                  "for the C backend)");
    return false;
}

bool cuda_prepare(IrGraph *g, const BundleOptions *opts, Diag *d) {
    const CudaOptions *co = opts->cuda ? opts->cuda : &cuda_defaults;
    if (!cuda_qint8_prepare(g, d)) return false;
    if (co->prec == CUDA_PREC_FP16) pass_fp16(g, runs_in_fp16, NULL, co->io16, d);
    return cgen_control_prepare(g, d);
}

bool cuda_emit_bundle(IrGraph *g, const BundleOptions *opts, const char *out_dir, Diag *d) {
    const CudaOptions *co = opts->cuda ? opts->cuda : &cuda_defaults;
    cuda_tables_init();
    if (!bundle_make_dir(out_dir, d)) return false;
    CudaCtx cx;
    memset(&cx, 0, sizeof cx);
    cx.prec = co->prec;
    cx.conv = co->conv;
    bundle_ctx_init(&cx.c.b, g, opts, d);
    bundle_place(&cx.c.b, g);
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
        cx.layout = &L;
        bundle_emit_header(&cx.c.b, &cuda_dialect, &h);
        emit_source(&cx, g, &c, &L);
        /* the C runtime files the generic path includes: what the bundle's text reaches */
        const char *roots[] = {h.buf, c.buf};
        char **rt = bundle_runtime_select(cx.rt, cx.n_rt, roots, 2);
        ok &= bundle_write_text(out_dir, cgen_fmt(&cx.c, "%s.h", opts->name), &h, d);
        ok &= bundle_write_text(out_dir, cgen_fmt(&cx.c, "%s.cu", opts->name), &c, d);
        ok = ok && bundle_write_runtime(out_dir, cx.rt, cx.n_rt, rt, d);
        for (uint32_t i = 0; i < cx.n_rt; i++) free(rt[i]);
        free(rt);
        ok &= bundle_write_weights(&cx.c.b, out_dir, d);
        bundle_emit_cmake(&cx.c.b, &cuda_dialect, &m);
        ok &= bundle_write_text(out_dir, "CMakeLists.txt", &m, d);
        bundle_emit_readme(&cx.c.b, &cuda_dialect, &m);
        ok &= bundle_write_text(out_dir, "README.md", &m, d);
        if (opts->test_main) {
            bundle_emit_test_main(&cx.c.b, &cuda_dialect, &m);
            ok &= bundle_write_text(out_dir, cgen_fmt(&cx.c, "%s_test_main.cu", opts->name), &m, d);
        }
    }
    cw_free(&body);
    cw_free(&kernels);
    cw_free(&h);
    cw_free(&c);
    cw_free(&m);
    free(cx.c.expr);
    bundle_ctx_free(&cx.c.b);
    return ok;
}
