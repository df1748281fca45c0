/* The CUDA backend's per-op emitters, registered in cuda_emit_table by op id. Elementwise
 * ops reuse the C backend's description of them (cgen_eltwise_map: operands, merged loop
 * and store expression), rendered as one __global__ kernel specialised for the node (the
 * expressions' helpers have device versions in kc_common.cuh). Products go to cuBLASLt (kc_blas.cuh),
 * convolution is im2col + cuBLASLt (a direct kernel when depthwise), the rest are kc_*.cuh
 * kernels with the shapes baked in. Everything is enqueued on stream `s` of NAME_enqueue. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda.h"
#include "backend/plan.h"
#include "backend/target.h"
#include "ir/geom.h"
#include "passes/passes.h"

#define KOP_MAX_SLOTS 16  /* operands of one elementwise kernel (the C emitter's own cap) */
#define KOP_TYPE_CHARS 32 /* longest C type name of an operand */
#define KC_COPY_MAX_RANK 8 /* dims of one kc_strided_copy (kc_data.cuh's KC_MAX_RANK) */
/* im2col workspace a convolution may use to batch its images into one strided product: a
 * batch of images amortises the per-product cost (large batches would otherwise run one
 * small product per image); past this, images go in chunks. */
#define CONV_COL_BUDGET ((int64_t)256 << 20)

CudaEmitFn cuda_emit_table[IR_OP_COUNT];

bool cuda_op_supported(IrOp op) {
    cuda_tables_init();
    return op != IR_OP_UNKNOWN && cuda_emit_table[op] != NULL;
}

static bool unsupported(CudaCtx *cx, const IrNode *n, const char *what) {
    ir_node_diag(cx->c.b.d, DIAG_ERROR, n, ": the CUDA backend does not support %s", what);
    return false;
}

static IrDType dtype_of(CudaCtx *cx, uint32_t v) { return (IrDType)cgen_type(&cx->c, v)->dtype; }
static int64_t numel(CudaCtx *cx, uint32_t v) { return cgen_numel(&cx->c, v); }
static const char *ptr(CudaCtx *cx, uint32_t v) { return cgen_ptr(&cx->c, v); }
/* The element type of the kc_* kernels for n: "float" when its float operands are all
 * float32, "__half" when all float16 (--precision fp16), else NULL (and a diagnostic). */
static const char *ktype(CudaCtx *cx, const IrNode *n) {
    IrDType first = IR_DTYPE_UNDEF;
    for (uint32_t k = 0; k < n->n_inputs + n->n_outputs; k++) {
        uint32_t v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        if (v == IR_NONE) continue;
        IrDType t = dtype_of(cx, v);
        if ((t != IR_DTYPE_F32 && t != IR_DTYPE_F16) || (first && t != first)) {
            unsupported(cx, n, "element types other than all float32 or all float16");
            return NULL;
        }
        first = t;
    }
    return first == IR_DTYPE_F16 ? "__half" : "float";
}

/* v's pointer for a kc_* kernel: float16 as __half (cgen_ptr's uint16_t is for the C
 * expressions); const is cast away, the kernels' parameters put it back. */
static const char *kptr(CudaCtx *cx, uint32_t v) {
    if (dtype_of(cx, v) != IR_DTYPE_F16) return ptr(cx, v);
    return cgen_ptr_as(&cx->c, v, "__half");
}

/* An absent optional operand of element type T. */
static const char *knull(CudaCtx *cx, const char *T) {
    return cgen_fmt(&cx->c, "(const %s *)NULL", T);
}

static void checked(CudaCtx *cx, const char *call) {
    cw_line(cx->c.w, "if ((rc = %s) != KC_OK) return rc;", call);
}

/* ---- per-node map kernels ---- */

typedef struct KMap {
    int n_slots;
    char type[KOP_MAX_SLOTS][KOP_TYPE_CHARS];
    const char *arg[KOP_MAX_SLOTS]; /* pointer expression passed for slot k */
    char out_type[KOP_TYPE_CHARS];
    int rank;
    int64_t dims[IR_MAX_RANK];
    const char *store; /* "y[...] = ...;" over i0..i{rank-1} */
} KMap;

/* Writes the kernel of m for node n and its launch. */
static void emit_map_kernel(CudaCtx *cx, const IrNode *n, const KMap *m, uint32_t out) {
    CWriter *k = cx->kernels;
    const char *name = cgen_fmt(&cx->c, "%s_k%u", cx->c.b.opts->name, cx->n_kernels++);
    int64_t total = 1;
    for (int d = 0; d < m->rank; d++) total *= m->dims[d];
    cw_line(k, "/* %s '%s' */", n->op_type, n->name);
    cw_indent(k);
    cw_raw(k, "static __global__ void %s(", name);
    for (int s = 0; s < m->n_slots; s++) cw_raw(k, "const %s *x%d, ", m->type[s], s);
    cw_raw(k, "%s *y)", m->out_type);
    cw_raw(k, " {\n");
    k->indent++;
    cw_line(k, "kc_pdl_enter();");
    cw_open(k, "KC_FOR(t, %lld)", (long long)total);
    /* 32-bit index arithmetic when every index fits (cheaper division on the GPU) */
    const char *it = total < INT32_MAX ? "uint32_t" : "size_t";
    if (m->rank > 0) cw_line(k, "%s r = (%s)t;", it, it);
    for (int d = m->rank - 1; d >= 1; d--) {
        cw_line(k, "%s i%d = r %% %lldu;", it, d, (long long)m->dims[d]);
        cw_line(k, "r /= %lldu;", (long long)m->dims[d]);
    }
    if (m->rank > 0) cw_line(k, "%s i0 = r;", it);
    cw_line(k, "%s", m->store);
    cw_close(k, NULL);
    cw_close(k, NULL);
    cw_blank(k);
    cw_indent(cx->c.w);
    cw_raw(cx->c.w, "kc_launch(%s, dim3(kc_grid(%lld)), dim3(KC_THREADS), 0, s, ", name,
           (long long)total);
    for (int s = 0; s < m->n_slots; s++) cw_raw(cx->c.w, "%s, ", m->arg[s]);
    cw_raw(cx->c.w, "%s);\n", ptr(cx, out));
    cw_line(cx->c.w, "KC_LAUNCHED();");
}

/* Elementwise ops: the C backend's map of the node (cgen_eltwise_map: operands, merged
 * loop, store expression) as one kernel. */
static bool emit_eltwise(CudaCtx *cx, const IrNode *n) {
    CgenCtx *c = &cx->c;
    CgenMap map;
    uint32_t saved_rt = c->n_runtime;
    bool ok = cgen_eltwise_map(c, n, &map);
    c->n_runtime = saved_rt; /* the C runtime files are not part of a CUDA bundle */
    if (!ok) return false;
    if (numel(cx, map.out) == 0) return true;
    KMap m;
    memset(&m, 0, sizeof m);
    m.n_slots = map.n_in;
    for (int k = 0; k < map.n_in; k++) {
        snprintf(m.type[k], KOP_TYPE_CHARS, "%s", bundle_ctype(dtype_of(cx, map.ins[k])));
        m.arg[k] = ptr(cx, map.ins[k]);
    }
    snprintf(m.out_type, KOP_TYPE_CHARS, "%s", bundle_ctype(dtype_of(cx, map.out)));
    m.rank = map.L.rank;
    for (int d = 0; d < m.rank; d++) m.dims[d] = map.L.dims[d];
    m.store = cgen_map_store(c, &map);
    emit_map_kernel(cx, n, &m, map.out);
    return true;
}

/* Cast: load in the compute type, store in the target type. */
static bool emit_cast(CudaCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    IrDType ti = dtype_of(cx, x), to = dtype_of(cx, y);
    bool ok_in = ti != IR_DTYPE_STRING && ir_dtype_bits(ti) >= 8 && ti != IR_DTYPE_C64 &&
                 ti != IR_DTYPE_C128 && ir_dtype_size_bytes(ti, 1) <= 8;
    bool ok_out = to != IR_DTYPE_STRING && ir_dtype_bits(to) >= 8 && to != IR_DTYPE_C64 &&
                  to != IR_DTYPE_C128 && ir_dtype_size_bytes(to, 1) <= 8;
    bool f8_in = (ti >= IR_DTYPE_F8E4M3FN && ti <= IR_DTYPE_F8E5M2FNUZ) || ti == IR_DTYPE_F8E8M0;
    bool f8_out = (to >= IR_DTYPE_F8E4M3FN && to <= IR_DTYPE_F8E5M2FNUZ) || to == IR_DTYPE_F8E8M0;
    if (!ok_in || !ok_out || f8_in || f8_out)
        return unsupported(cx, n, cgen_fmt(&cx->c, "a cast from %s to %s", ir_dtype_name(ti),
                                           ir_dtype_name(to)));
    if (numel(cx, y) == 0) return true;
    const char *load = ti == IR_DTYPE_F16    ? "rt_f16_to_f32(x0[i0])"
                       : ti == IR_DTYPE_BF16 ? "rt_bf16_to_f32(x0[i0])"
                                             : "x0[i0]";
    const char *st;
    if (to == IR_DTYPE_F16) st = cgen_fmt(&cx->c, "rt_f32_to_f16((float)%s)", load);
    else if (to == IR_DTYPE_BF16) st = cgen_fmt(&cx->c, "rt_f32_to_bf16((float)%s)", load);
    else if (to == IR_DTYPE_BOOL) st = cgen_fmt(&cx->c, "(uint8_t)(%s != 0)", load);
    else st = cgen_fmt(&cx->c, "(%s)%s", bundle_ctype(to), load);
    KMap m;
    memset(&m, 0, sizeof m);
    m.n_slots = 1;
    snprintf(m.type[0], KOP_TYPE_CHARS, "%s", bundle_ctype(ti));
    m.arg[0] = ptr(cx, x);
    snprintf(m.out_type, KOP_TYPE_CHARS, "%s", bundle_ctype(to));
    m.rank = 1;
    m.dims[0] = numel(cx, y);
    m.store = cgen_fmt(&cx->c, "y[i0] = %s;", st);
    emit_map_kernel(cx, n, &m, y);
    return true;
}

/* ---- data movement ---- */

/* Reshape, Flatten, Squeeze, Unsqueeze, Identity: the bytes are the same. */
static bool emit_copy(CudaCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    int64_t bytes = (int64_t)ir_dtype_size_bytes(dtype_of(cx, y), numel(cx, y));
    if (numel(cx, x) != numel(cx, y)) return unsupported(cx, n, "a change of element count");
    if (cgen_same_storage(&cx->c, x, y)) {
        cw_comment(cx->c.w, "a view: the planner gave it its input's bytes");
        return true;
    }
    if (bytes > 0)
        cw_line(cx->c.w, "KC_CUDA(cudaMemcpyAsync(%s, %s, %lld, cudaMemcpyDeviceToDevice, s));",
                ptr(cx, y), ptr(cx, x), (long long)bytes);
    return true;
}

static int elem_bytes(CudaCtx *cx, uint32_t v) {
    return (int)ir_dtype_size_bytes(dtype_of(cx, v), 1);
}

static bool elem_ok(CudaCtx *cx, const IrNode *n, uint32_t v) {
    int e = elem_bytes(cx, v);
    if (ir_dtype_bits(dtype_of(cx, v)) < 8 || (e != 1 && e != 2 && e != 4 && e != 8))
        return unsupported(cx, n, cgen_fmt(&cx->c, "element type %s",
                                           ir_dtype_name(dtype_of(cx, v))));
    return true;
}

/* Row-major strides of t, elements. */
static void strides_of(const IrType *t, int64_t *st) {
    int64_t s = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        st[d] = s;
        s *= t->dims[d];
    }
}

/* Emits copy plan p of src into dst: one cudaMemcpyAsync when it is one run, else a
 * kc_strided_copy over its merged dims. emit_strided plans the copy over dims (rank r;
 * strides and offsets in elements) first. */
static void emit_copy_plan(CudaCtx *cx, uint32_t src, uint32_t dst, const PlanCopy *p) {
    CWriter *w = cx->c.w;
    PlanCopy c = *p;
    if (c.empty) return;
    int esize = elem_bytes(cx, dst);
    if (plan_copy_contiguous(&c)) {
        const char *d = ptr(cx, dst), *sp = ptr(cx, src);
        if (c.yoff) d = cgen_fmt(&cx->c, "(unsigned char *)%s + %lld", d, (long long)(c.yoff * esize));
        if (c.xoff)
            sp = cgen_fmt(&cx->c, "(const unsigned char *)%s + %lld", sp,
                          (long long)(c.xoff * esize));
        cw_line(w, "KC_CUDA(cudaMemcpyAsync(%s, %s, %lld, cudaMemcpyDeviceToDevice, s));", d, sp,
                (long long)(plan_copy_elems(&c) * esize));
        return;
    }
    cw_open(w, "%s", "");
    cw_line(w, "static const KcStrided p = {%d, %s, %s, %s, %lld, %lld};", c.rank,
            cgen_i64_list(&cx->c, c.dims, (uint32_t)c.rank),
            cgen_i64_list(&cx->c, c.xs, (uint32_t)c.rank),
            cgen_i64_list(&cx->c, c.ys, (uint32_t)c.rank), (long long)c.xoff, (long long)c.yoff);
    checked(cx, cgen_fmt(&cx->c, "kc_strided_copy(s, %s, %s, %d, &p)", ptr(cx, src),
                         ptr(cx, dst), esize));
    cw_close(w, NULL);
    cuda_use_runtime(cx, "kc_data.cuh");
}

static void emit_strided(CudaCtx *cx, uint32_t src, uint32_t dst, int r, const int64_t *dims,
                         const int64_t *sst, const int64_t *dstt, int64_t src0, int64_t dst0) {
    PlanCopy c;
    plan_copy(&c, r, dims, dstt, dst0, sst, src0);
    emit_copy_plan(cx, src, dst, &c);
}

static bool emit_transpose(CudaCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    if (!elem_ok(cx, n, y)) return false;
    const IrType *tx = cgen_type(&cx->c, x), *ty = cgen_type(&cx->c, y);
    int r = tx->rank;
    if (r > 8) return unsupported(cx, n, "rank above 8");
    if (numel(cx, y) == 0) return true;
    int64_t sx[IR_MAX_RANK], sy[IR_MAX_RANK], src[IR_MAX_RANK];
    strides_of(tx, sx);
    strides_of(ty, sy);
    uint32_t np = 0;
    const int64_t *perm = ir_attr_ints(n, IR_ATTR_TRANSPOSE_PERM, &np);
    for (int d = 0; d < r; d++) {
        int64_t p = perm && np == (uint32_t)r ? perm[d] : r - 1 - d;
        if (p < 0 || p >= r) return unsupported(cx, n, "a perm out of range");
        src[d] = sx[p];
    }
    emit_strided(cx, x, y, r, ty->dims, src, sy, 0, 0);
    return true;
}

/* DepthToSpace, SpaceToDepth: the C backend's copy plan (backend/plan.c) as one strided copy. */
static bool emit_depth_space(CudaCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    if (!elem_ok(cx, n, y)) return false;
    PlanCopy c;
    const char *why = NULL;
    if (!plan_depth_space(n, cgen_type(&cx->c, x), &c, &why)) return unsupported(cx, n, why);
    if (c.rank > KC_COPY_MAX_RANK) return unsupported(cx, n, "a copy of more than 8 merged dims");
    emit_copy_plan(cx, x, y, &c);
    return true;
}

/* Tile with constant repeats (the C backend checks run-time ones): one strided copy that
 * reads the input with stride 0 along each repeat. */
static bool emit_tile(CudaCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    if (!elem_ok(cx, n, y)) return false;
    if (!cgen_const(&cx->c, n->inputs[1])) return unsupported(cx, n, "repeats known only at run time");
    PlanCopy c;
    plan_tile(cgen_type(&cx->c, x), cgen_type(&cx->c, y), &c);
    if (c.rank > KC_COPY_MAX_RANK) return unsupported(cx, n, "a copy of more than 8 merged dims");
    emit_copy_plan(cx, x, y, &c);
    return true;
}

static bool emit_expand(CudaCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    if (!elem_ok(cx, n, y)) return false;
    const IrType *tx = cgen_type(&cx->c, x), *ty = cgen_type(&cx->c, y);
    int r = ty->rank;
    if (r > 8) return unsupported(cx, n, "rank above 8");
    if (numel(cx, y) == 0) return true;
    int64_t sx[IR_MAX_RANK], sy[IR_MAX_RANK], src[IR_MAX_RANK];
    strides_of(tx, sx);
    strides_of(ty, sy);
    for (int d = 0; d < r; d++) {
        int dx = d - (r - tx->rank);
        src[d] = dx < 0 || tx->dims[dx] == 1 ? 0 : sx[dx];
    }
    emit_strided(cx, x, y, r, ty->dims, src, sy, 0, 0);
    return true;
}

/* Concat and Split: part k (IR_NONE parts skipped) is the next slab of `whole` along axis
 * (its static shape says how many entries, whichever form Split's sizes took); into_whole
 * copies the parts in (Concat), else the slabs out (Split). */
static void emit_slabs(CudaCtx *cx, uint32_t whole, const uint32_t *parts, uint32_t n_parts,
                       int64_t axis, bool into_whole) {
    const IrType *tw = cgen_type(&cx->c, whole);
    int r = tw->rank;
    int64_t sw[IR_MAX_RANK], sp[IR_MAX_RANK], off = 0;
    strides_of(tw, sw);
    for (uint32_t k = 0; k < n_parts; k++) {
        uint32_t p = parts[k];
        if (p == IR_NONE) continue;
        const IrType *tp = cgen_type(&cx->c, p);
        strides_of(tp, sp);
        if (numel(cx, p) > 0) {
            if (into_whole) emit_strided(cx, p, whole, r, tp->dims, sp, sw, 0, off * sw[axis]);
            else emit_strided(cx, whole, p, r, tp->dims, sw, sp, off * sw[axis], 0);
        }
        off += tp->dims[axis];
    }
}

/* The axis attribute of Concat or Split normalized, or -1 when out of range (or rank > 8). */
static int64_t slab_axis(int64_t axis, int r) {
    if (axis < 0) axis += r;
    return r > 8 || axis < 0 || axis >= r ? -1 : axis;
}

static bool emit_split(CudaCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0];
    if (!elem_ok(cx, n, x)) return false;
    int64_t axis = slab_axis(ir_attr_i(n, IR_ATTR_SPLIT_AXIS), cgen_type(&cx->c, x)->rank);
    if (axis < 0) return unsupported(cx, n, "this rank or axis");
    emit_slabs(cx, x, n->outputs, n->n_outputs, axis, false);
    return true;
}

static bool emit_concat(CudaCtx *cx, const IrNode *n) {
    uint32_t y = n->outputs[0];
    if (!elem_ok(cx, n, y)) return false;
    int64_t axis = slab_axis(ir_attr_i(n, IR_ATTR_CONCAT_AXIS), cgen_type(&cx->c, y)->rank);
    if (axis < 0) return unsupported(cx, n, "this rank or axis");
    emit_slabs(cx, y, n->inputs, n->n_inputs, axis, true);
    return true;
}

static bool emit_slice(CudaCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    if (!elem_ok(cx, n, y)) return false;
    const IrType *tx = cgen_type(&cx->c, x), *ty = cgen_type(&cx->c, y);
    if (tx->rank > 8) return unsupported(cx, n, "rank above 8");
    const IrTensor *in[5] = {NULL, NULL, NULL, NULL, NULL};
    for (uint32_t k = 1; k < 5 && n->opset >= 10; k++) {
        if (!ir_has_input(n, k)) continue;
        if (!(in[k] = cgen_const(&cx->c, n->inputs[k])))
            return unsupported(cx, n, "slice parameters that are not constant");
    }
    PlanCopy c;
    const char *why;
    if (!plan_slice(n, tx, ty, in, &c, &why)) return unsupported(cx, n, why);
    emit_copy_plan(cx, x, y, &c);
    return true;
}

static bool emit_gather(CudaCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], idx = n->inputs[1], y = n->outputs[0];
    if (!elem_ok(cx, n, y)) return false;
    IrDType ti = dtype_of(cx, idx);
    if (ti != IR_DTYPE_I64 && ti != IR_DTYPE_I32) return unsupported(cx, n, "these index types");
    const IrType *tx = cgen_type(&cx->c, x);
    int64_t axis = ir_attr_i(n, IR_ATTR_GATHER_AXIS);
    if (axis < 0) axis += tx->rank;
    if (axis < 0 || axis >= tx->rank) return unsupported(cx, n, "an axis out of range");
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= tx->dims[d];
    for (int d = (int)axis + 1; d < tx->rank; d++) inner *= tx->dims[d];
    if (numel(cx, y) == 0) return true;
    cuda_use_runtime(cx, "kc_data.cuh");
    cx->uses_status = true;
    checked(cx, cgen_fmt(&cx->c, "kc_gather(s, %s, %s, %d, %s, %d, %lld, %lld, %lld, %lld, status)",
                         ptr(cx, x), ptr(cx, idx), ti == IR_DTYPE_I64, ptr(cx, y),
                         elem_bytes(cx, y), (long long)outer, (long long)tx->dims[axis],
                         (long long)numel(cx, idx), (long long)inner));
    return true;
}

/* ---- products ---- */

/* The KC_ACT_* kind of a fused activation attribute, or NULL. */
static const char *act_kind(const char *attr) {
    const char *c = pass_act_c_name(attr);
    if (!c) return NULL;
    static char buf[64]; /* "RT_ACT_X" -> "KC_ACT_X" */
    snprintf(buf, sizeof buf, "KC%s", c + 2);
    return buf;
}

typedef struct MmPlan {
    int64_t m, n, k, lda, ldb, ldd, sa, sb, sd;
    int trans_a, trans_b, batch;
    bool half; /* float16 storage */
    const char *A, *B, *C, *D, *bias, *act;
    double alpha, beta, act_alpha, act_beta;
} MmPlan;

/* The cuBLASLt compute type of a product: float16 storage accumulates in float32. */
static const char *compute_type(CudaCtx *cx, bool half) {
    return half ? "CUBLAS_COMPUTE_32F" : cgen_fmt(&cx->c, "%s_COMPUTE", bundle_upper_name(&cx->c.b));
}

static void emit_lt(CudaCtx *cx, const MmPlan *p) {
    CWriter *w = cx->c.w;
    cuda_use_runtime(cx, "kc_blas.cuh");
    cw_open(w, "%s", "");
    cw_line(w, "KcMatmul p;");
    cw_line(w, "memset(&p, 0, sizeof p);");
    cw_line(w, "p.m = %lld; p.n = %lld; p.k = %lld;", (long long)p->m, (long long)p->n,
            (long long)p->k);
    cw_line(w, "p.trans_a = %d; p.trans_b = %d;", p->trans_a, p->trans_b);
    cw_line(w, "p.A = %s;", p->A);
    cw_line(w, "p.B = %s;", p->B);
    if (p->C) cw_line(w, "p.C = %s;", p->C);
    cw_line(w, "p.D = %s;", p->D);
    cw_line(w, "p.lda = %lld; p.ldb = %lld; p.ldd = %lld;", (long long)p->lda, (long long)p->ldb,
            (long long)p->ldd);
    cw_line(w, "p.sa = %lld; p.sb = %lld; p.sd = %lld; p.batch = %d;", (long long)p->sa,
            (long long)p->sb, (long long)p->sd, p->batch);
    cw_line(w, "p.alpha = %s; p.beta = %s;", cgen_flit(&cx->c, p->alpha, false), cgen_flit(&cx->c, p->beta, false));
    if (p->bias) cw_line(w, "p.bias = %s;", p->bias);
    cw_line(w, "p.act = %s; p.act_alpha = %s; p.act_beta = %s;", p->act ? p->act : "KC_ACT_NONE",
            cgen_flit(&cx->c, p->act_alpha, false), cgen_flit(&cx->c, p->act_beta, false));
    if (p->half) cw_line(w, "p.half = 1;");
    cw_line(w, "if ((rc = kc_lt_matmul(ctx->lt, s, lt_ws, %s_LT_WS_BYTES, %s, &p, %s)) != KC_OK) "
               "return rc;", bundle_upper_name(&cx->c.b), compute_type(cx, p->half),
            cuda_lt_site(cx));
    cw_close(w, NULL);
}

/* MatMul, FusedMatMul: act(A @ B + bias) with numpy batch broadcasting (one side's batch
 * broadcast, or equal batches). Row-major C = A B is computed as column-major C^T = B^T A^T. */
static bool emit_matmul(CudaCtx *cx, const IrNode *n) {
    uint32_t a = n->inputs[0], b = n->inputs[1], y = n->outputs[0];
    const char *T = ktype(cx, n);
    if (!T) return false;
    PlanGemm g;
    const char *why;
    bool bias = n->op == IR_OP_FUSED_MAT_MUL && ir_has_input(n, 2);
    if (!plan_gemm(n, cgen_type(&cx->c, a), cgen_type(&cx->c, b),
                   bias ? cgen_type(&cx->c, n->inputs[2]) : NULL, cgen_type(&cx->c, y), &g, &why))
        return unsupported(cx, n, why);
    int64_t M = g.M, N = g.N, K = g.K;
    MmPlan p;
    memset(&p, 0, sizeof p);
    p.alpha = 1.0;
    p.batch = 1;
    if (g.nb > 0) { /* one strided batch: B over every batch, A over all of them or shared */
        bool a_all = true, a_none = true, b_all = true;
        int64_t by = 1;
        for (int d = 0; d < g.nb; d++) {
            a_all &= g.sa[d] != 0, a_none &= g.sa[d] == 0, b_all &= g.sb[d] != 0;
            by *= g.bdim[d];
        }
        if (!b_all || (!a_all && !a_none))
            return unsupported(cx, n, "batch dimensions that broadcast on both sides");
        p.batch = (int)by;
        p.sa = N * K, p.sb = a_all ? M * K : 0, p.sd = M * N;
    }
    if (g.fused) {
        p.act = act_kind(g.activation);
        if (!p.act) return unsupported(cx, n, "this activation");
        p.act_alpha = g.act_alpha;
        p.act_beta = g.act_beta;
        if (bias) p.bias = ptr(cx, n->inputs[2]);
    }
    if (numel(cx, y) == 0) return true;
    p.half = T[0] == '_';
    p.m = N, p.n = M, p.k = K;
    p.A = ptr(cx, b), p.lda = N; /* B (K,N) row-major = (N,K) column-major */
    p.B = ptr(cx, a), p.ldb = K; /* A (M,K) row-major = (K,M) column-major */
    p.D = ptr(cx, y), p.ldd = N;
    emit_lt(cx, &p);
    return true;
}

/* Gemm, FusedGemm: act(alpha A' B' + beta C). A C of (N) or (1,N) with beta 1 is the
 * cuBLASLt bias; any other C is first broadcast into Y and accumulated with beta. */
static bool emit_gemm(CudaCtx *cx, const IrNode *n) {
    uint32_t a = n->inputs[0], b = n->inputs[1], y = n->outputs[0];
    const char *T = ktype(cx, n);
    if (!T) return false;
    const IrType *ty = cgen_type(&cx->c, y);
    PlanGemm g;
    const char *why;
    if (!plan_gemm(n, cgen_type(&cx->c, a), cgen_type(&cx->c, b),
                   ir_has_input(n, 2) ? cgen_type(&cx->c, n->inputs[2]) : NULL, ty, &g, &why))
        return unsupported(cx, n, why);
    int64_t M = g.M, N = g.N, K = g.K;
    MmPlan p;
    memset(&p, 0, sizeof p);
    p.alpha = g.alpha;
    if (g.fused) {
        p.act = act_kind(g.activation);
        if (!p.act) return unsupported(cx, n, "this activation");
        p.act_alpha = g.act_alpha;
        p.act_beta = g.act_beta;
    }
    if (numel(cx, y) == 0) return true;
    if (g.has_c && g.beta != 0.0) {
        uint32_t c = n->inputs[2];
        const IrType *tc = cgen_type(&cx->c, c);
        if (numel(cx, c) == N && g.beta == 1.0 && (tc->rank == 1 || tc->dims[0] == 1)) {
            p.bias = ptr(cx, c);
        } else { /* broadcast C into Y, then Y = alpha A'B' + beta Y */
            int64_t sc[IR_MAX_RANK], sy[IR_MAX_RANK], src[2];
            strides_of(tc, sc);
            strides_of(ty, sy);
            for (int d = 0; d < 2; d++) {
                int dc = d - (2 - tc->rank);
                src[d] = dc < 0 || tc->dims[dc] == 1 ? 0 : sc[dc];
            }
            emit_strided(cx, c, y, 2, ty->dims, src, sy, 0, 0);
            p.C = ptr(cx, y);
            p.beta = g.beta;
        }
    }
    p.batch = 1;
    p.half = T[0] == '_';
    p.m = N, p.n = M, p.k = K;
    /* column-major view: op(B)^T is (N,K): B stored (K,N) -> as is, ld N; (N,K) -> T, ld K */
    p.A = ptr(cx, b), p.trans_a = g.trans_b, p.lda = g.trans_b ? K : N;
    p.B = ptr(cx, a), p.trans_b = g.trans_a, p.ldb = g.trans_a ? M : K;
    p.D = ptr(cx, y), p.ldd = N;
    emit_lt(cx, &p);
    return true;
}

/* ---- convolution and pooling ---- */

typedef struct Geom {
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    int64_t group;
} Geom;

/* Kernel, strides, leading pads and dilations of a 1-D or 2-D Conv/FusedConv/pool on x with
 * output y (ir/geom.c); kernel from kshape (the weights' spatial dims; NULL for pools: the
 * attribute). 1-D ops use the W slot. NULL, or why not (geom: as a diagnostic). */
static const char *geom_why(CudaCtx *cx, const IrNode *n, uint32_t x, uint32_t y,
                            const int64_t *kshape, Geom *G) {
    const IrType *tx = cgen_type(&cx->c, x), *ty = cgen_type(&cx->c, y);
    bool nhwc = tx->layout == IR_LAYOUT_NHWC;
    if (nhwc != (ty->layout == IR_LAYOUT_NHWC) || (nhwc && tx->rank != 4))
        return "mixed layouts";
    int sp = tx->rank - 2, first = nhwc ? 1 : 2; /* the first spatial dim in storage order */
    if (sp < 1 || sp > 2) return "spatial ranks other than 1 and 2";
    int64_t in[2], out[2];
    IrType kt = ir_type_tensor(tx->dtype, sp + 2, (int64_t[]){1, 1, 1, 1});
    for (int i = 0; i < sp; i++) {
        in[i] = tx->dims[first + i], out[i] = ty->dims[first + i];
        if (kshape) kt.dims[i + 2] = kshape[i];
    }
    IrConvAttrs a;
    IrConvGeom cg;
    const char *why;
    if (!ir_conv_attrs(n, sp, kshape ? &kt : NULL, &a, &why)) return why;
    for (int i = 0; i < sp && kshape; i++) a.k[i] = kshape[i]; /* the weights decide */
    if (!ir_conv_geom(&a, in, out, &cg, &why)) return why;
    int64_t k[2] = {1, 1}, s[2] = {1, 1}, p[2] = {0, 0}, dd[2] = {1, 1};
    for (int i = 0; i < sp; i++) {
        int j = i + 2 - sp;
        k[j] = cg.k[i], s[j] = cg.s[i], p[j] = cg.pad[i], dd[j] = cg.d[i];
    }
    G->kh = k[0], G->kw = k[1], G->sh = s[0], G->sw = s[1], G->ph = p[0], G->pw = p[1];
    G->dh = dd[0], G->dw = dd[1];
    G->group = cg.group;
    return NULL;
}

static bool geom(CudaCtx *cx, const IrNode *n, uint32_t x, uint32_t y, const int64_t *kshape,
                 Geom *G) {
    const char *why = geom_why(cx, n, x, y, kshape, G);
    return why ? unsupported(cx, n, why) : true;
}

static const char *conv_params(CudaCtx *cx, int64_t C, int64_t H, int64_t W, const Geom *G,
                               int64_t OH, int64_t OW) {
    return cgen_fmt(&cx->c, "{.C = %lld, .H = %lld, .W = %lld, .R = %lld, .S = %lld, .OH = %lld, "
                            ".OW = %lld, .sh = %lld, .sw = %lld, .ph = %lld, .pw = %lld, "
                            ".dh = %lld, .dw = %lld}", (long long)C, (long long)H, (long long)W,
                    (long long)G->kh, (long long)G->kw, (long long)OH, (long long)OW,
                    (long long)G->sh, (long long)G->sw, (long long)G->ph, (long long)G->pw,
                    (long long)G->dh, (long long)G->dw);
}

/* H and W of a 1-D or 2-D NC... tensor (1-D: H = 1), or of a 2-D NHWC one. */
static void hw(const IrType *t, int64_t *h, int64_t *w) {
    bool nhwc = t->layout == IR_LAYOUT_NHWC;
    *h = t->rank == 4 ? t->dims[nhwc ? 1 : 2] : 1;
    *w = t->dims[nhwc ? 2 : t->rank - 1];
}

/* The channel count of an NC... or NHWC tensor. */
static int64_t channels(const IrType *t) {
    return t->dims[t->layout == IR_LAYOUT_NHWC ? t->rank - 1 : 1];
}

/* Images per product of a convolution of N images whose im2col takes col_image bytes each
 * (0: none): as many as fit CONV_COL_BUDGET when images can be batched, else one; the
 * workspace grows to hold them. */
static int64_t conv_chunk(CudaCtx *cx, int64_t col_image, int64_t N, bool batched) {
    int64_t chunk = !batched ? 1 : col_image ? CONV_COL_BUDGET / col_image : N;
    if (chunk < 1) chunk = 1;
    if (chunk > N) chunk = N;
    if (col_image * chunk > cx->col_bytes) cx->col_bytes = col_image * chunk;
    return chunk;
}

typedef struct ConvNhwc {
    const char *T; /* element type */
    bool half;
    int64_t esize;
    uint32_t x, wt, y;
    int64_t N, C, K, H, W, OH, OW, group;
    const char *act;
    double al, be;
    const char *bias, *res; /* pointer expressions, or NULL */
} ConvNhwc;

/* A channels-last convolution as one call of a kernel that does it all, bias, residual and
 * activation included: fn(s, x, w, bias, r, y, &p, N, extra, act, al, be). */
static bool emit_conv_kernel(CudaCtx *cx, const ConvNhwc *c, const char *params, const char *fn,
                             int64_t extra) {
    CWriter *w = cx->c.w;
    const char *T = c->T;
    cw_open(w, "%s", "");
    cw_line(w, "static const KcConv2d p = %s;", params);
    checked(cx, cgen_fmt(&cx->c, "%s(s, %s, %s, %s, %s, %s, &p, %lld, %lld, %s, %s, %s)", fn,
                         kptr(cx, c->x), kptr(cx, c->wt), c->bias ? c->bias : knull(cx, T),
                         c->res ? c->res : knull(cx, T), kptr(cx, c->y), (long long)c->N,
                         (long long)extra, c->act, cgen_flit(&cx->c, c->al, false), cgen_flit(&cx->c, c->be, false)));
    cw_close(w, NULL);
    return true;
}

/* --conv auto's rule (docs/gpu-bench.md, "Convolution lowering"): the implicit GEMM where
 * im2col costs most against the product -- its pass moves 2 bytes per element of col for
 * 2*K flops on it, so at most IGEMM_AUTO_MAX_K output channels -- and where it makes at
 * least IGEMM_AUTO_MIN_BLOCKS blocks (kc_igemm_nhwc's tile: 128 rows, 64 or 128 columns),
 * the ones measured faster; smaller products keep cuBLASLt, which splits the reduction.
 * Channels not in eights (an RGB stem) go to the element gathers (kc_igemm_nhwc_any) by the
 * same rule, and only where a row of col, R*S*C elements written and read back by im2col,
 * is at least the output row's K: ResNet-50's 7x7 stem (147 against 64) 2.61 -> 1.09 ms
 * at batch 256 on an H100, MobileNetV2's 3x3 one (27 against 32) 0.77 -> 0.83 ms, kept. */
#define IGEMM_AUTO_MAX_K 128
#define IGEMM_AUTO_MIN_BLOCKS 128

/* Whether a channels-last convolution that is not a plain 1x1 one runs as kc_igemm_nhwc. */
static bool use_implicit(const CudaCtx *cx, const ConvNhwc *c, const Geom *G) {
    if (!c->half || c->group != 1 || c->K % 8) return false;
    if (cx->conv != CUDA_CONV_AUTO) return cx->conv == CUDA_CONV_IMPLICIT;
    int64_t rows = c->N * c->OH * c->OW, cols = c->K <= 64 ? 64 : 128;
    if (c->C % 8 && G->kh * G->kw * c->C < c->K) return false;
    return c->K <= IGEMM_AUTO_MAX_K &&
           (rows + 127) / 128 * ((c->K + cols - 1) / cols) >= IGEMM_AUTO_MIN_BLOCKS;
}

/* --conv auto's rule for the tensor-core implicit GEMM (kc_igemm_mma: channels in eights,
 * at most KC_MMA_MAX_TAPS taps; the wgmma core where the bundle is built for sm_90a, else
 * mma.sync), measured per layer against im2col + cuBLASLt (bench/gpu/wgconv_lab.cu and
 * conv_mma_lab.cu, H200, ResNet-50's 3x3 layers, docs/cuda.md): the wgmma core beats
 * cuBLASLt up to 512 output channels where it makes at least IGEMM_MMA_MIN_BLOCKS blocks of
 * 128 x 128 (batch 256: 512 channels 0.175 -> 0.137 ms; batch 32: 256 channels, 98 blocks,
 * 0.043 -> 0.033), not below (batch 32, 512 channels, 52 blocks: 0.033 against 0.041); the
 * mma.sync core ties cuBLASLt there (0.195 against 0.187 ms; 0.046 against 0.043). Not for
 * 1x1 kernels: there cuBLASLt won every ResNet-50 shape by 1.5-2.5x. --conv implicit takes
 * it wherever it suits. */
#define IGEMM_MMA_MAX_K 512
#define IGEMM_MMA_MIN_BLOCKS 96
#define IGEMM_MMA_MAX_TAPS 32 /* kc_igemm.cuh's KC_MMA_MAX_TAPS: a bit of a row's mask each */

/* A layer of the halo core (kc_igemm.cuh's kc_conv_halo_ok: 3x3, stride and dilation 1, 64
 * channels into at most 64, the output the input's size) takes the core at any size: at
 * batch 1 its persistent blocks, one an image row band, beat im2col + cuBLASLt (ResNet-50's
 * layer1 3x3 at batch 1 on an H200, profiled: 0.010-0.014 against 0.020-0.025 ms, one
 * launch instead of two; docs/cuda.md). */
static bool halo_layer(const ConvNhwc *c, const Geom *G) {
    return G->kh == 3 && G->kw == 3 && G->sh == 1 && G->sw == 1 && G->dh == 1 && G->dw == 1 &&
           c->C == 64 && c->K <= 64 && c->OH == c->H && c->OW == c->W;
}

static bool use_implicit_mma(const CudaCtx *cx, const ConvNhwc *c, const Geom *G) {
    if (!c->half || c->group != 1 || c->K % 8 || c->C % 8 || G->kh * G->kw > IGEMM_MMA_MAX_TAPS)
        return false;
    if (cx->conv != CUDA_CONV_AUTO) return cx->conv == CUDA_CONV_IMPLICIT;
    if (halo_layer(c, G)) return true;
    int64_t rows = c->N * c->OH * c->OW, cols = c->K <= 64 ? 64 : 128;
    return G->kh * G->kw > 1 && c->K <= IGEMM_MMA_MAX_K &&
           (rows + 127) / 128 * ((c->K + cols - 1) / cols) >= IGEMM_MMA_MIN_BLOCKS;
}

/* Whether a channels-last convolution that is not a plain 1x1 one runs as kc_conv_small
 * (kc_nn.cuh: a reduction of R*S*C <= CONV_SMALL_MAX_RSC elements on CUDA cores, or on
 * tensor cores for 32 or 64 output channels (kc_conv_small_tc), built around its store;
 * an RGB stem) rather than im2col + cuBLASLt or the implicit GEMM: MobileNetV2's stem at
 * batch 256 on an H100 0.77 -> 0.50 ms, at 32 0.111 -> 0.071 ms; on an H200 on tensor
 * cores 0.28 ms (docs/cuda.md). --conv im2col keeps im2col (the peer of the comparison). */
#define CONV_SMALL_MAX_RSC 32
#define CONV_SMALL_MAX_FLOATS 8192 /* kc_nn.cuh's KC_CS_MAX_FLOATS: W and bias, shared */

static bool use_conv_small(const CudaCtx *cx, const ConvNhwc *c, const Geom *G) {
    int64_t rsc = G->kh * G->kw * c->C, rc = (rsc + 7) / 8 * 8;
    return c->half && c->group == 1 && cx->conv != CUDA_CONV_IM2COL && c->K % 8 == 0 &&
           rsc <= CONV_SMALL_MAX_RSC && rc * c->K + c->K <= CONV_SMALL_MAX_FLOATS;
}

/* Whether a plain 1x1 convolution with a short reduction runs as kc_conv1x1_small (kc_nn.cuh:
 * tensor cores, each input pixel read once, bias, residual and any activation applied
 * before one 16-byte store of each output vector) rather than cuBLASLt, whose product of a
 * reduction of 16-32 is all store and which, with no ReLU6 epilogue, writes y and has
 * kc_bias_act read and write it again: MobileNetV2's expansions (16 -> 96 at 112x112, 24 ->
 * 144 at 56x56, 32 -> 192 at 28x28) and its first projection (32 -> 16), where there are
 * at least CONV1X1_SMALL_MIN_PIXELS output pixels. Measured on an H200 (tests/cuda/conv_gpu.cu
 * --time, docs/cuda.md): at batch 256 the four shapes 0.611 -> 0.436, 0.267 -> 0.176, 0.098
 * -> 0.076 and 0.111 -> 0.098 ms; at batch 32 112x112 and 56x56 win (0.099 -> 0.064, 0.046 ->
 * 0.036 ms) but 28x28 (25088 pixels: 0.026 against 0.029) and every batch-1 shape but the
 * 112x112 ones lose (a few blocks walk their chunks serially). --conv im2col keeps cuBLASLt
 * (the peer of the comparison). */
#define CONV1X1_SMALL_MAX_C 32  /* kc_nn.cuh's KC_C1_MAX_C */
#define CONV1X1_SMALL_MAX_K 240 /* KC_C1_MAX_K */
#define CONV1X1_SMALL_MIN_PIXELS 65536

static bool use_conv1x1_small(const CudaCtx *cx, const ConvNhwc *c) {
    int64_t P = c->N * c->H * c->W;
    return c->half && c->group == 1 && cx->conv != CUDA_CONV_IM2COL && c->C % 2 == 0 &&
           c->C <= CONV1X1_SMALL_MAX_C && c->K % 16 == 0 && c->K <= CONV1X1_SMALL_MAX_K &&
           P >= CONV1X1_SMALL_MIN_PIXELS && P < INT32_MAX;
}

/* An RGB stem that reads the graph input as it comes (kc_stem_tc, kc_nn.cuh): a float16
 * channels-last convolution of one group from at most STEM_MAX_C channels into 32 or 64, R
 * kernel rows of S*C rounded up to even at most STEM_MAX_RSC, no dilation, whose input is
 * the Transpose into NHWC of a graph input -- float16 (--fp16-io) or through the Cast of a
 * float32 one -- that only it reads. Its kernel reads the input channels-first in its own
 * type, so the Transpose and the Cast do not run. A block of kc_stem_tc walks output rows
 * (N*OH), so it takes the stem where there are at least STEM_MIN_ROWS of them: on the H200
 * (docs/cuda.md) ResNet-50 at batch 256 (28672 rows) 8.555 -> 8.226 ms (stem 0.917 +
 * Transpose 0.206 + Cast -> 0.893), batch 32 (3584) 1.490 -> 1.440, MobileNetV2 at batch 256
 * 4.822 -> 4.533; at batch 1 (112 rows, fewer than the multiprocessors) 0.340 -> 0.364, so
 * not there (1024: between the two measured, not measured itself). Not with --conv im2col
 * (the peer of the lowering comparisons). */
#define STEM_MAX_C 4              /* kc_nn.cuh's KC_STEM_MAX_C */
#define STEM_MAX_RSC 160          /* KC_CST_MAX_KS * 16: 7x7x3 154 */
#define STEM_MAX_WINDOW 65536     /* bytes of kc_stem_tc's window of input rows */
#define STEM_MIN_ROWS 1024

static bool graph_input(CudaCtx *cx, uint32_t v, IrDType dt) {
    return cx->c.b.g->values[v].kind == IR_VALUE_INPUT && dtype_of(cx, v) == dt;
}

/* The node making v where v is a node's output that only one reader reads, else NULL. */
static const IrNode *sole_producer(CudaCtx *cx, uint32_t v) {
    const IrGraph *g = cx->c.b.g;
    if (!cx->uses || g->values[v].kind != IR_VALUE_NODE || cx->uses[v] != 1) return NULL;
    return &g->nodes[g->values[v].producer];
}

uint32_t cuda_stem_input(CudaCtx *cx, const IrNode *n, uint32_t folds[2]) {
    folds[0] = folds[1] = IR_NONE;
    if ((n->op != IR_OP_CONV && n->op != IR_OP_FUSED_CONV) || cx->conv == CUDA_CONV_IM2COL ||
        n->n_inputs < 2)
        return IR_NONE;
    uint32_t x = n->inputs[0], wt = n->inputs[1], y = n->outputs[0];
    const IrType *tx = cgen_type(&cx->c, x), *tw = cgen_type(&cx->c, wt);
    const IrType *ty = cgen_type(&cx->c, y);
    if (tx->layout != IR_LAYOUT_NHWC || tx->rank != 4 || tw->rank != 4 ||
        dtype_of(cx, x) != IR_DTYPE_F16 || dtype_of(cx, wt) != IR_DTYPE_F16 ||
        dtype_of(cx, y) != IR_DTYPE_F16)
        return IR_NONE;
    for (uint32_t k = 2; k < n->n_inputs; k++)
        if (n->inputs[k] != IR_NONE && dtype_of(cx, n->inputs[k]) != IR_DTYPE_F16) return IR_NONE;
    Geom G;
    int64_t C = channels(tx), K = channels(ty), OW = ty->dims[2];
    if (tx->dims[0] * ty->dims[1] < STEM_MIN_ROWS) return IR_NONE;
    if (geom_why(cx, n, x, y, tw->dims, &G) || G.group != 1 || C > STEM_MAX_C || G.dh != 1 ||
        G.dw != 1 ||
        (K != 32 && K != 64) || G.kh * ((G.kw * C + 1) / 2 * 2) > STEM_MAX_RSC ||
        ((((G.kh - 1) * G.dh + 2) * (((OW - 1) * G.sw + (G.kw - 1) * G.dw + 2) / 2 * 2) * C + 2) *
             2 > STEM_MAX_WINDOW) || numel(cx, y) >= INT32_MAX)
        return IR_NONE;
    const IrNode *t = sole_producer(cx, x);
    uint32_t np = 0;
    const int64_t *perm =
        t && t->op == IR_OP_TRANSPOSE ? ir_attr_ints(t, IR_ATTR_TRANSPOSE_PERM, &np) : NULL;
    if (!perm || np != 4 || perm[0] != 0 || perm[1] != 2 || perm[2] != 3 || perm[3] != 1)
        return IR_NONE;
    uint32_t u = t->inputs[0];
    if (cgen_type(&cx->c, u)->layout == IR_LAYOUT_NHWC) return IR_NONE;
    if (graph_input(cx, u, IR_DTYPE_F16)) {
        folds[0] = (uint32_t)(t - cx->c.b.g->nodes);
        return u;
    }
    const IrNode *c = sole_producer(cx, u);
    if (!c || c->op != IR_OP_CAST || !graph_input(cx, c->inputs[0], IR_DTYPE_F32)) return IR_NONE;
    folds[0] = (uint32_t)(t - cx->c.b.g->nodes), folds[1] = (uint32_t)(c - cx->c.b.g->nodes);
    return c->inputs[0];
}

/* A channels-last convolution: depthwise as a direct kernel; otherwise products whose rows
 * are output pixels, Y (rows, M) = col (rows, KH*KW*C) @ W (KH*KW*C, M) -- 1x1 stride-1
 * convolutions read X itself, others an im2col of as many images as fit the budget -- with
 * bias, activation and residual in cuBLASLt's epilogue (residual as C, beta 1); grouped,
 * one product per group on column blocks and one bias/residual/activation pass after. */
static bool emit_conv_nhwc(CudaCtx *cx, const Geom *G, const ConvNhwc *c) {
    CWriter *w = cx->c.w;
    const IrType *tw = cgen_type(&cx->c, c->wt);
    const char *params = conv_params(cx, c->C, c->H, c->W, G, c->OH, c->OW);
    const char *T = c->T;
    if (c->group == c->C && tw->dims[2] == 1) /* depthwise */
        return emit_conv_kernel(cx, c, params, "kc_dwconv_nhwc", c->K / c->C);
    int64_t groups = c->group, Cg = c->C / groups, Mg = c->K / groups;
    int64_t P = c->OH * c->OW, CRS = c->C * G->kh * G->kw, CRSg = Cg * G->kh * G->kw;
    bool direct = G->kh == 1 && G->kw == 1 && G->sh == 1 && G->sw == 1 && G->ph == 0 &&
                  G->pw == 0 && c->OH == c->H && c->OW == c->W;
    if (direct && use_conv1x1_small(cx, c))
        return emit_conv_kernel(cx, c, params, "kc_conv1x1_small", c->K);
    if (!direct && use_conv_small(cx, c, G))
        return emit_conv_kernel(cx, c, params, "kc_conv_small", c->K);
    if (!direct && use_implicit_mma(cx, c, G)) {
        cuda_use_runtime(cx, "kc_igemm.cuh");
        return emit_conv_kernel(cx, c, params, "kc_igemm_mma", c->K);
    }
    if (!direct && use_implicit(cx, c, G)) {
        cuda_use_runtime(cx, "kc_igemm.cuh");
        return emit_conv_kernel(cx, c, params, c->C % 8 ? "kc_igemm_nhwc_any" : "kc_igemm_nhwc",
                                c->K);
    }
    bool epilogue = groups == 1; /* grouped: plain products, then one bias/residual/act pass */
    int64_t chunk = conv_chunk(cx, direct ? 0 : P * CRS * c->esize, c->N, true);
    bool chunks = c->N > chunk, grouped = groups > 1; /* loops only where they turn */
    cuda_use_runtime(cx, "kc_blas.cuh");
    cw_open(w, "%s", "");
    if (!direct) cw_line(w, "static const KcConv2d p = %s;", params);
    cw_line(w, "const %s *x = %s;", T, kptr(cx, c->x));
    cw_line(w, "const %s *wt = %s;", T, kptr(cx, c->wt));
    cw_line(w, "%s *y = %s;", T, kptr(cx, c->y));
    if (c->res && epilogue) cw_line(w, "const %s *r = %s;", T, c->res);
    cw_line(w, "KcMatmul m;");
    cw_line(w, "memset(&m, 0, sizeof m);");
    /* column-major, per group g: D_g (Mg, rows) = W_g (Mg, CRSg) B_g (CRSg, rows), B = col or
     * X, both (rows, CRS) row-major with group g's columns a block; W_g, D_g column blocks */
    cw_line(w, "m.m = %lld; m.k = %lld; m.batch = 1;", (long long)Mg, (long long)CRSg);
    cw_line(w, "m.lda = %lld; m.ldb = %lld; m.ldd = %lld;", (long long)c->K,
            (long long)(direct ? c->C : CRS), (long long)c->K);
    cw_line(w, "m.alpha = 1.0f;");
    if (epilogue) {
        if (c->bias) cw_line(w, "m.bias = %s;", c->bias);
        if (c->res) cw_line(w, "m.beta = 1.0f; /* the residual, as C */");
        cw_line(w, "m.act = %s; m.act_alpha = %s; m.act_beta = %s;", c->act, cgen_flit(&cx->c, c->al, false),
                cgen_flit(&cx->c, c->be, false));
    }
    if (c->half) cw_line(w, "m.half = 1;");
    const char *nb = "nb", *xi = "x", *yi = "y", *ri = "r";
    if (chunks) {
        cw_open(w, "for (int64_t i = 0; i < %lld; i += %lld)", (long long)c->N, (long long)chunk);
        cw_line(w, "int64_t nb = %lld - i < %lld ? %lld - i : %lld;", (long long)c->N,
                (long long)chunk, (long long)c->N, (long long)chunk);
        xi = cgen_fmt(&cx->c, "x + i * %lld", (long long)(c->H * c->W * c->C));
        yi = cgen_fmt(&cx->c, "y + i * %lld", (long long)(P * c->K));
        ri = cgen_fmt(&cx->c, "r + i * %lld", (long long)(P * c->K));
        cw_line(w, "m.n = nb * %lld;", (long long)P);
    } else {
        nb = cgen_fmt(&cx->c, "%lld", (long long)c->N);
        cw_line(w, "m.n = %lld;", (long long)(c->N * P));
    }
    if (!direct)
        checked(cx, cgen_fmt(&cx->c, "kc_im2col_nhwc(s, %s, (%s *)col, &p, %s, %lld)", xi, T, nb,
                             (long long)groups));
    if (grouped) cw_open(w, "for (int64_t g = 0; g < %lld; g++)", (long long)groups);
    const char *gm = grouped ? cgen_fmt(&cx->c, " + g * %lld", (long long)Mg) : "";
    cw_line(w, "m.A = wt%s;", gm);
    if (direct)
        cw_line(w, "m.B = %s%s;", xi, grouped ? cgen_fmt(&cx->c, " + g * %lld", (long long)Cg) : "");
    else
        cw_line(w, "m.B = (const %s *)col%s;", T,
                grouped ? cgen_fmt(&cx->c, " + g * %lld", (long long)CRSg) : "");
    if (c->res && epilogue) cw_line(w, "m.C = %s;", ri);
    cw_line(w, "m.D = %s%s;", yi, gm);
    cw_line(w, "if ((rc = kc_lt_matmul(ctx->lt, s, lt_ws, %s_LT_WS_BYTES, %s, &m, %s)) != KC_OK) "
               "return rc;", bundle_upper_name(&cx->c.b), compute_type(cx, c->half),
            cuda_lt_site(cx));
    if (grouped) cw_close(w, NULL);
    if (chunks) cw_close(w, NULL);
    if (!epilogue && (c->bias || c->res || strcmp(c->act, "KC_ACT_NONE") != 0))
        checked(cx, cgen_fmt(&cx->c, "kc_bias_act(s, y, %s, %s, %lld, 1, %lld, %s, %s, %s)",
                             c->bias ? c->bias : knull(cx, T), c->res ? c->res : knull(cx, T),
                             (long long)c->K, (long long)numel(cx, c->y), c->act,
                             cgen_flit(&cx->c, c->al, false), cgen_flit(&cx->c, c->be, false)));
    cw_close(w, NULL);
    return true;
}

static bool emit_conv(CudaCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], wt = n->inputs[1], y = n->outputs[0];
    bool fused = n->op == IR_OP_FUSED_CONV;
    const char *T = ktype(cx, n);
    if (!T) return false;
    const IrType *tx = cgen_type(&cx->c, x), *tw = cgen_type(&cx->c, wt), *ty = cgen_type(&cx->c, y);
    if (tx->rank != 3 && tx->rank != 4) return unsupported(cx, n, "spatial ranks other than 1 and 2");
    bool nhwc = tx->layout == IR_LAYOUT_NHWC; /* then W is (KH,KW,C/group,M) */
    Geom G;
    if (!geom(cx, n, x, y, nhwc ? tw->dims : tw->dims + 2, &G)) return false;
    int64_t group = G.group;
    int64_t N = tx->dims[0], C = channels(tx), K = channels(ty), H, W, OH, OW;
    hw(tx, &H, &W);
    hw(ty, &OH, &OW);
    if (group <= 0 || C % group || K % group) return unsupported(cx, n, "this group count");
    const char *act = "KC_ACT_NONE";
    double al = 0, be = 0;
    if (fused) {
        act = act_kind(ir_attr_s(n, IR_ATTR_FUSED_CONV_ACTIVATION));
        if (!act) return unsupported(cx, n, "this activation");
        al = ir_attr_f(n, IR_ATTR_FUSED_CONV_ACT_ALPHA);
        be = ir_attr_f(n, IR_ATTR_FUSED_CONV_ACT_BETA);
    }
    const char *bias = ir_has_input(n, 2) ? kptr(cx, n->inputs[2]) : knull(cx, T);
    const char *res = fused && ir_has_input(n, 3) ? kptr(cx, n->inputs[3]) : knull(cx, T);
    bool half = T[0] == '_';
    int64_t esize = half ? 2 : 4;
    if (numel(cx, y) == 0) return true;
    cuda_use_runtime(cx, "kc_nn.cuh");
    CWriter *w = cx->c.w;
    if (nhwc) {
        ConvNhwc cv = {T, half, esize, x, wt, y, N, C, K, H, W, OH, OW, group, act, al, be,
                       ir_has_input(n, 2) ? bias : NULL, fused && ir_has_input(n, 3) ? res : NULL};
        uint32_t folds[2], src = cuda_stem_input(cx, n, folds);
        if (src != IR_NONE) { /* the Transpose (and Cast) before it are folded in (cuda.c) */
            cv.x = src;
            return emit_conv_kernel(cx, &cv, conv_params(cx, C, H, W, &G, OH, OW),
                                    dtype_of(cx, src) == IR_DTYPE_F16 ? "kc_stem_tc<__half>"
                                                                      : "kc_stem_tc<float>",
                                    K);
        }
        return emit_conv_nhwc(cx, &G, &cv);
    }
    if (group == C && tw->dims[1] == 1) { /* depthwise: direct */
        cw_open(w, "%s", "");
        cw_line(w, "static const KcConv2d p = %s;", conv_params(cx, C, H, W, &G, OH, OW));
        checked(cx, cgen_fmt(&cx->c, "kc_dwconv(s, %s, %s, %s, %s, %s, &p, %lld, %lld, %s, %s, %s)",
                             kptr(cx, x), kptr(cx, wt), bias, res, kptr(cx, y), (long long)N,
                             (long long)(K / C), act, cgen_flit(&cx->c, al, false), cgen_flit(&cx->c, be, false)));
        cw_close(w, NULL);
        return true;
    }
    int64_t Cg = C / group, Kg = K / group, P = OH * OW, CRS = Cg * G.kh * G.kw;
    bool direct = G.kh == 1 && G.kw == 1 && G.sh == 1 && G.sw == 1 && G.ph == 0 && G.pw == 0 &&
                  OH == H && OW == W;
    /* Images per product: one group -> a strided batch of images sharing the weights (stride
     * 0), as many as fit the im2col budget; grouped -> one image, a batch of groups. */
    int64_t chunk = conv_chunk(cx, direct ? 0 : C * G.kh * G.kw * P * esize, N, group == 1);
    bool chunks = N > chunk; /* the image loop only where it turns */
    cuda_use_runtime(cx, "kc_blas.cuh");
    cw_open(w, "%s", "");
    if (!direct) cw_line(w, "static const KcConv2d p = %s;", conv_params(cx, C, H, W, &G, OH, OW));
    cw_line(w, "const %s *x = %s;", T, kptr(cx, x));
    cw_line(w, "%s *y = %s;", T, kptr(cx, y));
    cw_line(w, "KcMatmul m;");
    cw_line(w, "memset(&m, 0, sizeof m);");
    /* per image and group: y (Kg, P) = W_g (Kg, CRS) @ col_g (CRS, P), row-major; as
     * column-major: y^T (P, Kg) = col_g^T (P, CRS) W_g^T (CRS, Kg) */
    cw_line(w, "m.m = %lld; m.n = %lld; m.k = %lld;", (long long)P, (long long)Kg, (long long)CRS);
    cw_line(w, "m.B = %s;", ptr(cx, wt));
    cw_line(w, "m.lda = %lld; m.ldb = %lld; m.ldd = %lld;", (long long)P, (long long)CRS,
            (long long)P);
    if (group == 1) /* images: col (or x) and y advance, the weights stay */
        cw_line(w, "m.sa = %lld; m.sb = 0; m.sd = %lld;", (long long)(CRS * P), (long long)(K * P));
    else
        cw_line(w, "m.sa = %lld; m.sb = %lld; m.sd = %lld; m.batch = %lld;", (long long)(CRS * P),
                (long long)(Kg * CRS), (long long)(Kg * P), (long long)group);
    cw_line(w, "m.alpha = 1.0f;");
    if (half) cw_line(w, "m.half = 1;");
    const char *xi = "x", *yi = "y";
    if (chunks) {
        cw_open(w, "for (int64_t i = 0; i < %lld; i += %lld)", (long long)N, (long long)chunk);
        xi = cgen_fmt(&cx->c, "x + i * %lld", (long long)(C * H * W));
        yi = cgen_fmt(&cx->c, "y + i * %lld", (long long)(K * P));
    }
    if (group == 1) {
        if (chunks)
            cw_line(w, "m.batch = (int)(%lld - i < %lld ? %lld - i : %lld);", (long long)N,
                    (long long)chunk, (long long)N, (long long)chunk);
        else
            cw_line(w, "m.batch = %lld;", (long long)N);
    }
    if (direct) {
        cw_line(w, "m.A = %s;", xi);
    } else {
        checked(cx, cgen_fmt(&cx->c, "kc_im2col(s, %s, (%s *)col, &p, %s)", xi, T,
                             group == 1 ? "m.batch" : "1"));
        cw_line(w, "m.A = col;");
    }
    cw_line(w, "m.D = %s;", yi);
    cw_line(w, "if ((rc = kc_lt_matmul(ctx->lt, s, lt_ws, %s_LT_WS_BYTES, %s, &m, %s)) != KC_OK) "
               "return rc;", bundle_upper_name(&cx->c.b), compute_type(cx, half), cuda_lt_site(cx));
    if (chunks) cw_close(w, NULL);
    if (ir_has_input(n, 2) || strcmp(act, "KC_ACT_NONE") != 0 || (fused && ir_has_input(n, 3)))
        checked(cx, cgen_fmt(&cx->c, "kc_bias_act(s, y, %s, %s, %lld, %lld, %lld, %s, %s, %s)",
                             bias, res, (long long)K, (long long)P, (long long)numel(cx, y), act,
                             cgen_flit(&cx->c, al, false), cgen_flit(&cx->c, be, false)));
    cw_close(w, NULL);
    return true;
}

static bool emit_pool(CudaCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    const char *T = ktype(cx, n);
    if (!T) return false;
    if (n->n_outputs > 1 && n->outputs[1] != IR_NONE)
        return unsupported(cx, n, "the Indices output of MaxPool");
    Geom G;
    if (!geom(cx, n, x, y, NULL, &G)) return false;
    const IrType *tx = cgen_type(&cx->c, x), *ty = cgen_type(&cx->c, y);
    int64_t H, W, OH, OW;
    hw(tx, &H, &W);
    hw(ty, &OH, &OW);
    bool is_max = n->op == IR_OP_MAX_POOL;
    int count_pad = is_max ? 0 : (int)ir_attr_i(n, IR_ATTR_AVERAGE_POOL_COUNT_INCLUDE_PAD);
    if (numel(cx, y) == 0) return true;
    cuda_use_runtime(cx, "kc_nn.cuh");
    bool nhwc = tx->layout == IR_LAYOUT_NHWC;
    cw_open(cx->c.w, "%s", "");
    cw_line(cx->c.w, "static const KcConv2d p = %s;",
            conv_params(cx, nhwc ? channels(tx) : 1, H, W, &G, OH, OW));
    if (nhwc)
        checked(cx, cgen_fmt(&cx->c, "kc_pool_nhwc(s, %s, %s, &p, %lld, %d, %d)", kptr(cx, x),
                             kptr(cx, y), (long long)tx->dims[0], is_max, count_pad));
    else
        checked(cx, cgen_fmt(&cx->c, "kc_pool(s, %s, %s, &p, %lld, %d, %d)", kptr(cx, x),
                             kptr(cx, y), (long long)(tx->dims[0] * tx->dims[1]), is_max,
                             count_pad));
    cw_close(cx->c.w, NULL);
    return true;
}

static bool emit_global_avg(CudaCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    const char *T = ktype(cx, n);
    if (!T) return false;
    const IrType *tx = cgen_type(&cx->c, x);
    if (tx->rank < 2) return unsupported(cx, n, "rank below 2");
    if (numel(cx, y) == 0) return true;
    cuda_use_runtime(cx, "kc_nn.cuh");
    if (tx->layout == IR_LAYOUT_NHWC) {
        int64_t C = channels(tx), N = tx->dims[0];
        checked(cx, cgen_fmt(&cx->c, "kc_global_avg_nhwc(s, %s, %s, %lld, %lld, %lld)",
                             kptr(cx, x), kptr(cx, y), (long long)N,
                             (long long)(N * C != 0 ? numel(cx, x) / (N * C) : 0), (long long)C));
        return true;
    }
    int64_t rows = tx->dims[0] * tx->dims[1];
    checked(cx, cgen_fmt(&cx->c, "kc_global_avg(s, %s, %s, %lld, %lld)", kptr(cx, x), kptr(cx, y),
                         (long long)rows, (long long)(rows ? numel(cx, x) / rows : 0)));
    return true;
}

static bool emit_batchnorm(CudaCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    const char *T = ktype(cx, n);
    if (!T) return false;
    if (ir_attr_i(n, IR_ATTR_BATCH_NORMALIZATION_TRAINING_MODE))
        return unsupported(cx, n, "training mode");
    for (uint32_t k = 1; k < n->n_outputs; k++)
        if (n->outputs[k] != IR_NONE) return unsupported(cx, n, "the training outputs");
    const IrType *tx = cgen_type(&cx->c, x);
    int64_t C = tx->rank > 1 ? tx->dims[1] : 1, total = numel(cx, x);
    int64_t NC = tx->dims[0] * C, HW = NC != 0 ? total / NC : 0;
    for (uint32_t k = 1; k < 5; k++)
        if (!ir_has_input(n, k) || numel(cx, n->inputs[k]) != C)
            return unsupported(cx, n, "parameters that are not (C)");
    if (total == 0) return true;
    cuda_use_runtime(cx, "kc_nn.cuh");
    checked(cx, cgen_fmt(&cx->c, "kc_batchnorm(s, %s, %s, %s, %s, %s, %s, %s, %lld, %lld, %lld)",
                         kptr(cx, x), kptr(cx, y), kptr(cx, n->inputs[1]), kptr(cx, n->inputs[2]),
                         kptr(cx, n->inputs[3]), kptr(cx, n->inputs[4]),
                         cgen_flit(&cx->c, ir_attr_f(n, IR_ATTR_BATCH_NORMALIZATION_EPSILON), false),
                         (long long)C, (long long)HW, (long long)total));
    return true;
}

static bool emit_softmax(CudaCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    const char *T = ktype(cx, n);
    if (!T) return false;
    bool is_log = n->op == IR_OP_LOG_SOFTMAX;
    const IrType *tx = cgen_type(&cx->c, x);
    PlanRows r;
    const char *why;
    if (tx->rank == 0) return unsupported(cx, n, "a scalar input");
    if (!plan_softmax_rows(n, tx, &r, &why)) return unsupported(cx, n, why);
    int64_t outer = r.outer, D = r.len, inner = r.inner;
    if (numel(cx, y) == 0) return true;
    cuda_use_runtime(cx, "kc_nn.cuh");
    checked(cx, cgen_fmt(&cx->c, "kc_softmax(s, %s, %s, %lld, %lld, %lld, %d)", kptr(cx, x),
                         kptr(cx, y), (long long)outer, (long long)D, (long long)inner, is_log));
    return true;
}

static bool emit_layernorm(CudaCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    const char *T = ktype(cx, n);
    if (!T) return false;
    const IrType *tx = cgen_type(&cx->c, x);
    int64_t axis = ir_attr_i(n, IR_ATTR_LAYER_NORMALIZATION_AXIS);
    if (axis < 0) axis += tx->rank;
    if (axis < 0 || axis >= tx->rank) return unsupported(cx, n, "this axis");
    int64_t rows = 1, D = 1;
    for (int d = 0; d < tx->rank; d++) {
        if (d < axis) rows *= tx->dims[d];
        else D *= tx->dims[d];
    }
    if (!ir_has_input(n, 1) || numel(cx, n->inputs[1]) != D ||
        (ir_has_input(n, 2) && numel(cx, n->inputs[2]) != D))
        return unsupported(cx, n, "a scale or bias that is not the normalized shape");
    const char *none = cgen_fmt(&cx->c, "(%s *)NULL", T);
    const char *mean = n->n_outputs > 1 && n->outputs[1] != IR_NONE ? kptr(cx, n->outputs[1])
                                                                   : none;
    const char *inv = n->n_outputs > 2 && n->outputs[2] != IR_NONE ? kptr(cx, n->outputs[2])
                                                                  : none;
    if (numel(cx, y) == 0) return true;
    cuda_use_runtime(cx, "kc_nn.cuh");
    checked(cx, cgen_fmt(&cx->c, "kc_layernorm(s, %s, %s, %s, %s, %s, %s, %lld, %lld, %s)",
                         kptr(cx, x), kptr(cx, n->inputs[1]),
                         ir_has_input(n, 2) ? kptr(cx, n->inputs[2]) : knull(cx, T),
                         kptr(cx, y), mean, inv, (long long)rows, (long long)D,
                         cgen_flit(&cx->c, ir_attr_f(n, IR_ATTR_LAYER_NORMALIZATION_EPSILON), false)));
    return true;
}

/* InstanceNormalization (groups = C) and GroupNormalization over (N, C, spatial...). */
static bool emit_groupnorm(CudaCtx *cx, const IrNode *n) {
    uint32_t x = n->inputs[0], y = n->outputs[0];
    if (!ktype(cx, n)) return false;
    const IrType *tx = cgen_type(&cx->c, x);
    if (tx->rank < 2) return unsupported(cx, n, "inputs of rank below 2");
    int64_t N = tx->dims[0], C = tx->dims[1], S = N * C > 0 ? numel(cx, x) / (N * C) : 0;
    bool inst = n->op == IR_OP_INSTANCE_NORMALIZATION;
    int64_t G = inst ? C : ir_attr_i(n, IR_ATTR_GROUP_NORMALIZATION_NUM_GROUPS);
    if (G < 1 || C % G != 0) return unsupported(cx, n, "num_groups that does not divide C");
    if (!ir_has_input(n, 1) || !ir_has_input(n, 2) ||
        numel(cx, n->inputs[1]) != numel(cx, n->inputs[2]))
        return unsupported(cx, n, "scale and bias of different sizes");
    int64_t P = numel(cx, n->inputs[1]);
    if (P != C && (inst || P != G)) return unsupported(cx, n, "scale and bias neither (C) nor (num_groups)");
    float eps = ir_attr_f(n, inst ? IR_ATTR_INSTANCE_NORMALIZATION_EPSILON
                                  : IR_ATTR_GROUP_NORMALIZATION_EPSILON);
    if (numel(cx, y) == 0) return true;
    cuda_use_runtime(cx, "kc_nn.cuh");
    checked(cx, cgen_fmt(&cx->c, "kc_groupnorm(s, %s, %s, %s, %s, %lld, %lld, %lld, %lld, %d, %s)",
                         kptr(cx, x), kptr(cx, n->inputs[1]), kptr(cx, n->inputs[2]),
                         kptr(cx, y), (long long)N, (long long)C, (long long)S, (long long)G,
                         P == C, cgen_flit(&cx->c, eps, false)));
    return true;
}

/* Where v lives in the arena as [*lo, *hi) bytes; false for graph inputs/outputs and weights
 * (buffers of their own). */
static bool arena_range(CudaCtx *cx, uint32_t v, int64_t *lo, int64_t *hi) {
    const IrValue *val = &cx->c.b.g->values[v];
    if (cx->c.b.field[v] || cx->c.b.weight_offset[v] >= 0 || val->mem_offset < 0) return false;
    *lo = val->mem_offset;
    *hi = *lo + (int64_t)ir_dtype_size_bytes(dtype_of(cx, v), numel(cx, v));
    return true;
}

/* Whether a kernel that reads x row by row and writes y row by row, each row read whole
 * before it is written, may run: y and x do not overlap, or are the same bytes. */
static bool rowwise_alias_ok(CudaCtx *cx, uint32_t x, uint32_t y) {
    int64_t xl, xh, yl, yh;
    if (!arena_range(cx, x, &xl, &xh) || !arena_range(cx, y, &yl, &yh)) return true;
    return xh <= yl || yh <= xl || (xl == yl && xh == yh);
}

bool cuda_emit_add_layernorm(CudaCtx *cx, const IrNode *add, const IrNode *ln) {
    uint32_t a = add->inputs[0], b = add->inputs[1], sum = add->outputs[0];
    uint32_t y = ln->outputs[0];
    if (add->op != IR_OP_ADD || ln->op != IR_OP_LAYER_NORMALIZATION || ln->inputs[0] != sum)
        return false;
    for (uint32_t k = 1; k < ln->n_outputs; k++)
        if (ln->outputs[k] != IR_NONE) return false; /* mean and inverse deviation: unfused */
    IrDType t = dtype_of(cx, sum);
    if ((t != IR_DTYPE_F32 && t != IR_DTYPE_F16) || dtype_of(cx, y) != t ||
        !ir_type_equal(cgen_type(&cx->c, a), cgen_type(&cx->c, sum)) ||
        !ir_type_equal(cgen_type(&cx->c, b), cgen_type(&cx->c, sum)))
        return false; /* a broadcast or another type: the Add's own kernel */
    const IrType *tx = cgen_type(&cx->c, sum);
    int64_t axis = ir_attr_i(ln, IR_ATTR_LAYER_NORMALIZATION_AXIS);
    if (axis < 0) axis += tx->rank;
    if (axis < 0 || axis >= tx->rank) return false;
    int64_t rows = 1, D = 1;
    for (int d = 0; d < tx->rank; d++) {
        if (d < axis) rows *= tx->dims[d];
        else D *= tx->dims[d];
    }
    if (D < 1 || D > 1024 || rows < 1) return false; /* kc_add_layernorm's KC_LN_MAX */
    if (!ir_has_input(ln, 1) || numel(cx, ln->inputs[1]) != D ||
        dtype_of(cx, ln->inputs[1]) != t ||
        (ir_has_input(ln, 2) &&
         (numel(cx, ln->inputs[2]) != D || dtype_of(cx, ln->inputs[2]) != t)))
        return false;
    if (!rowwise_alias_ok(cx, a, y) || !rowwise_alias_ok(cx, b, y)) return false;
    const char *T = t == IR_DTYPE_F16 ? "__half" : "float";
    cuda_use_runtime(cx, "kc_nn.cuh");
    cw_comment(cx->c.w, "with the LayerNormalization after it: the sum is never stored");
    double eps = ir_attr_f(ln, IR_ATTR_LAYER_NORMALIZATION_EPSILON);
    checked(cx, cgen_fmt(&cx->c, "kc_add_layernorm(s, %s, %s, %s, %s, %s, %lld, %lld, %s)",
                         kptr(cx, a), kptr(cx, b), kptr(cx, ln->inputs[1]),
                         ir_has_input(ln, 2) ? kptr(cx, ln->inputs[2]) : knull(cx, T), kptr(cx, y),
                         (long long)rows, (long long)D, cgen_flit(&cx->c, eps, false)));
    return true;
}

/* ---- attention ---- */

#define ATTN_RANK 4     /* kc_attn.cuh's (B, H, rows, cols) */
#define ATTN_TC_MAX_D 128 /* the largest head size of the tensor-core kernel */

/* Operand v's device pointer moved on by off elements (a window of a packed tensor). */
static const char *attn_ptr(CudaCtx *cx, uint32_t v, int64_t off) {
    return off ? cgen_fmt(&cx->c, "(%s + %lld)", kptr(cx, v), (long long)off) : kptr(cx, v);
}

static const char *attn_list(CudaCtx *cx, const int64_t v[ATTN_RANK]) {
    return cgen_fmt(&cx->c, "{%lld, %lld, %lld, %lld}", (long long)v[0], (long long)v[1],
                    (long long)v[2], (long long)v[3]);
}

/* FusedAttention (passes/fuse_attention.c): kc_attention (kc_attn.cuh), the tensor-core
 * flash-attention kernel where the operands allow it (float16, head size a multiple of 16
 * up to 128, unit inner strides, rows and windows on 16-byte boundaries), else the tiled
 * float kernel (head sizes up to 128), else one warp per query row.
 * Same operand conventions as the C emitter (backend/c/cgen_fusedattn.c). */
static bool emit_fused_attention(CudaCtx *cx, const IrNode *n) {
    const char *T = ktype(cx, n);
    if (!T) return false;
    int64_t dims[4][ATTN_RANK], st[4][ATTN_RANK], off[4]; /* q, k, v, y */
    for (int o = 0; o < 4; o++)
        if (!cgen_attn_operand(&cx->c, n, o, dims[o], st[o], &off[o]))
            return unsupported(cx, n, "an operand rank, perm or window the attention kernel "
                                      "cannot read");
    int64_t B = dims[0][0], H = dims[0][1], Sq = dims[0][2], D = dims[0][3];
    int64_t Sk = dims[1][2], Dv = dims[2][3];
    bool ok = dims[1][3] == D && dims[2][2] == Sk && dims[3][2] == Sq && dims[3][3] == Dv;
    for (int o = 1; o < 4; o++) ok &= dims[o][0] == B && dims[o][1] == H;
    if (!ok) return unsupported(cx, n, "Q, K, V and Y shapes that do not agree");
    if (Sk < 1) return unsupported(cx, n, "attention over no keys");
    const char *mask_kind = ir_attr_s(n, IR_ATTR_FUSED_ATTENTION_MASK);
    bool has_mask = strcmp(mask_kind, "add") == 0;
    if ((!has_mask && strcmp(mask_kind, "none") != 0) ||
        has_mask != (n->n_inputs > 3 && n->inputs[3] != IR_NONE))
        return unsupported(cx, n, cgen_fmt(&cx->c, "mask kind '%s' with these inputs", mask_kind));
    int64_t mst[ATTN_RANK] = {0, 0, 0, 0};
    if (has_mask) { /* right-aligned broadcast to (B, H, Sq, Sk) */
        const IrType *tm = cgen_type(&cx->c, n->inputs[3]);
        int64_t want[ATTN_RANK] = {B, H, Sq, Sk}, s = 1;
        if (tm->rank > ATTN_RANK) return unsupported(cx, n, "a mask of rank over 4");
        for (int i = tm->rank - 1; i >= 0; i--) {
            int a = ATTN_RANK - tm->rank + i;
            if (tm->dims[i] != 1 && tm->dims[i] != want[a])
                return unsupported(cx, n, "a mask that does not broadcast to the scores");
            mst[a] = tm->dims[i] == 1 ? 0 : s;
            s *= tm->dims[i];
        }
    }
    double scale = ir_attr_f(n, IR_ATTR_FUSED_ATTENTION_SCALE);
    if (!isfinite(scale)) return unsupported(cx, n, "a scale that is not finite");
    if (numel(cx, n->outputs[0]) == 0) return true;
    /* the tensor-core kernel: float16, D = Dv in 16s up to 128, each operand's rows
     * contiguous and every row start on a 16-byte boundary (strides in eights) */
    bool tc = T[0] == '_' && D == Dv && D % 16 == 0 && D <= ATTN_TC_MAX_D;
    for (int o = 0; o < 4 && tc; o++) {
        tc &= (st[o][3] == 1 || dims[o][3] == 1) && off[o] % 8 == 0;
        for (int i = 0; i < 3; i++) tc &= st[o][i] % 8 == 0;
    }
    if (B * H > 65535) return unsupported(cx, n, "over 65535 (batch, head) pairs");
    /* head sizes the register kernels take (kc_attn.cuh's KC_ATTN_MAX_D) */
    bool small = D <= ATTN_TC_MAX_D && Dv <= ATTN_TC_MAX_D;
    cuda_use_runtime(cx, "kc_attn.cuh");
    CWriter *w = cx->c.w;
    cw_open(w, "%s", "");
    cw_line(w, "static const KcAttn p = {%lld, %lld, %lld, %lld, %lld, %lld,", (long long)B,
            (long long)H, (long long)Sq, (long long)Sk, (long long)D, (long long)Dv);
    cw_line(w, "    %s, %s, %s, %s, %s, %s};", attn_list(cx, st[0]), attn_list(cx, st[1]),
            attn_list(cx, st[2]), attn_list(cx, mst), attn_list(cx, st[3]),
            cgen_flit(&cx->c, scale, false));
    checked(cx, cgen_fmt(&cx->c, "kc_attention<%s, %s, %d, %d>(s, %s, %s, %s, %s, %s, &p)", T,
                         tc ? "true" : "false", small ? (int)D : 0, small ? (int)Dv : 0,
                         attn_ptr(cx, n->inputs[0], off[0]), attn_ptr(cx, n->inputs[1], off[1]),
                         attn_ptr(cx, n->inputs[2], off[2]),
                         has_mask ? kptr(cx, n->inputs[3]) : knull(cx, T),
                         kptr(cx, n->outputs[0])));
    cw_close(w, NULL);
    return true;
}

/* ---- the generic path: the C backend's code on one device thread ---- */

/* Threads of a block, and the most blocks, of an element-parallel node (the kernel's
 * RT_FOR_EACH strides over the rest). */
#define PAR_THREADS 256
#define PAR_MAX_BLOCKS 65536

bool cuda_element_parallel(IrOp op) {
    switch (op) {
    case IR_OP_REDUCE_SUM:
    case IR_OP_REDUCE_MEAN:
    case IR_OP_REDUCE_MAX:
    case IR_OP_REDUCE_MIN:
    case IR_OP_REDUCE_PROD:
    case IR_OP_REDUCE_L1:
    case IR_OP_REDUCE_L2:
    case IR_OP_REDUCE_LOG_SUM:
    case IR_OP_REDUCE_LOG_SUM_EXP:
    case IR_OP_REDUCE_SUM_SQUARE:
    case IR_OP_ARG_MAX:
    case IR_OP_ARG_MIN:
    case IR_OP_PAD:
    case IR_OP_RESIZE:
    case IR_OP_UPSAMPLE:
    case IR_OP_CONV_TRANSPOSE:
    case IR_OP_INSTANCE_NORMALIZATION: /* when kc_groupnorm refuses a node */
    case IR_OP_GROUP_NORMALIZATION:
    case IR_OP_RMSNORMALIZATION:
    case IR_OP_LRN:
        return true;
    default:
        return false;
    }
}

bool cuda_emit_generic(CudaCtx *cx, const IrNode *n) {
    CgenCtx *c = &cx->c;
    if (n->op == IR_OP_UNKNOWN || !cgen_emit_table[n->op])
        return unsupported(cx, n, "this op (no C kernel either)");
    CWriter body, *saved = c->w;
    bool saved_rc = c->uses_rc;
    const char **saved_expr = c->expr; /* no overrides here: NULL marks the root graph */
    cw_init(&body);
    body.indent = 1;
    c->w = &body;
    c->uses_rc = false;
    c->expr = NULL;
    c->serial_only = true; /* one device thread: no RtPar (runtime/rt_par.h) here */
    bool ok = cgen_emit_table[n->op](c, n);
    bool rc = c->uses_rc;
    c->w = saved;
    c->uses_rc = saved_rc;
    c->expr = saved_expr;
    /* the C runtime files it used (dependencies first), compiled for the device too */
    cuda_use_runtime(cx, "rt_common.h");
    cuda_use_runtime(cx, "rt_eltwise.h");
    for (uint32_t i = 0; i < c->n_runtime; i++) cuda_use_runtime(cx, c->runtime[i]);
    const char *text = body.buf ? body.buf : "";
    if (!ok || !*text) {
        cw_free(&body);
        return ok;
    }
    const char *N = c->b.opts->name;
    const char *name = cgen_fmt(c, "%s_k%u", N, cx->n_kernels++);
    CWriter *k = cx->kernels;
    bool par = cuda_element_parallel(n->op);
    cw_line(k, "/* %s '%s': the C backend's code, run by %s */", n->op_type, n->name,
            par ? "one device thread per output element" : "one device thread");
    /* parameters the body does not use stay unnamed (C++), rather than (void)-cast */
#define PARAM(nm) (cw_uses_word(text, nm) ? nm : "")
    cw_open(k, "static __device__ int %s_body(const unsigned char *%s, unsigned char *%s, "
               "const %s_inputs *%s, %s_outputs *%s)", name, PARAM("w"), PARAM("a"), N,
            PARAM("in"), N, PARAM("out"));
#undef PARAM
    if (rc || cw_uses_word(text, "rc")) cw_line(k, "int rc;");
    cw_raw(k, "%s", text);
    cw_line(k, "return KC_OK;");
    cw_close(k, NULL);
    cw_open(k, "static __global__ void %s(const unsigned char *w, unsigned char *a, %s_inputs in, "
               "%s_outputs out, int *status)", name, N, N);
    cw_line(k, "kc_pdl_enter();");
    cw_line(k, "int st = %s_body(w, a, &in, &out);", name);
    cw_line(k, "if (st != KC_OK) kc_raise(status, st);");
    cw_close(k, NULL);
    cw_blank(k);
    cw_free(&body);
    int64_t blocks = 1;
    if (par) {
        blocks = (numel(cx, n->outputs[0]) + PAR_THREADS - 1) / PAR_THREADS;
        blocks = blocks < 1 ? 1 : blocks > PAR_MAX_BLOCKS ? PAR_MAX_BLOCKS : blocks;
    }
    cw_line(c->w, "kc_launch(%s, dim3(%lld), dim3(%d), 0, s, w, a, *in, *out, status);", name,
            (long long)blocks, par ? PAR_THREADS : 1);
    cw_line(c->w, "KC_LAUNCHED();");
    cx->uses_status = true;
    if (par)
        cx->n_parallel++;
    else
        cx->n_generic++;
    return true;
}

void cuda_tables_init(void) {
    static bool ready;
    if (ready) return;
    cgen_tables_init();
    for (int op = 0; op < IR_OP_COUNT; op++)
        if (cgen_eltwise_op((IrOp)op)) cuda_emit_table[op] = emit_eltwise;
    cuda_emit_table[IR_OP_CAST] = emit_cast;
    cuda_emit_table[IR_OP_RESHAPE] = emit_copy;
    cuda_emit_table[IR_OP_FLATTEN] = emit_copy;
    cuda_emit_table[IR_OP_SQUEEZE] = emit_copy;
    cuda_emit_table[IR_OP_UNSQUEEZE] = emit_copy;
    cuda_emit_table[IR_OP_IDENTITY] = emit_copy;
    cuda_emit_table[IR_OP_TRANSPOSE] = emit_transpose;
    cuda_emit_table[IR_OP_EXPAND] = emit_expand;
    cuda_emit_table[IR_OP_DEPTH_TO_SPACE] = emit_depth_space;
    cuda_emit_table[IR_OP_SPACE_TO_DEPTH] = emit_depth_space;
    cuda_emit_table[IR_OP_TILE] = emit_tile;
    cuda_emit_table[IR_OP_CONCAT] = emit_concat;
    cuda_emit_table[IR_OP_SLICE] = emit_slice;
    cuda_emit_table[IR_OP_SPLIT] = emit_split;
    cuda_emit_table[IR_OP_GATHER] = emit_gather;
    cuda_emit_table[IR_OP_MAT_MUL] = emit_matmul;
    cuda_emit_table[IR_OP_FUSED_MAT_MUL] = emit_matmul;
    cuda_emit_table[IR_OP_GEMM] = emit_gemm;
    cuda_emit_table[IR_OP_FUSED_GEMM] = emit_gemm;
    cuda_emit_table[IR_OP_CONV] = emit_conv;
    cuda_emit_table[IR_OP_FUSED_CONV] = emit_conv;
    cuda_emit_table[IR_OP_MAX_POOL] = emit_pool;
    cuda_emit_table[IR_OP_AVERAGE_POOL] = emit_pool;
    cuda_emit_table[IR_OP_GLOBAL_AVERAGE_POOL] = emit_global_avg;
    cuda_emit_table[IR_OP_BATCH_NORMALIZATION] = emit_batchnorm;
    cuda_emit_table[IR_OP_SOFTMAX] = emit_softmax;
    cuda_emit_table[IR_OP_LOG_SOFTMAX] = emit_softmax;
    cuda_emit_table[IR_OP_LAYER_NORMALIZATION] = emit_layernorm;
    cuda_emit_table[IR_OP_INSTANCE_NORMALIZATION] = emit_groupnorm;
    cuda_emit_table[IR_OP_GROUP_NORMALIZATION] = emit_groupnorm;
    cuda_emit_table[IR_OP_FUSED_ATTENTION] = emit_fused_attention;
    cuda_register_qint8(cuda_emit_table);
    for (int op = 0; op < IR_OP_COUNT; op++)
        if (!cuda_emit_table[op] && cgen_emit_table[op]) cuda_emit_table[op] = cuda_emit_generic;
    ready = true;
}
