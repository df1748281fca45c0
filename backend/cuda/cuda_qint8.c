/* The CUDA target's int8 kernels (runtime/cuda/kc_qconv.cuh) for the nodes of the quantize
 * pass: QConv, QGemm, QAdd, QMul, QLut, QMaxPool, QGlobalAveragePool, QAttention and QMatMul
 * (kc_qattn.cuh), and per-tensor QuantizeLinear / DequantizeLinear between float32 and uint8
 * at the edges of float ops.
 *
 * cuda_qint8_prepare (the target's prepare step) lays out the weights for the GPU: a dense
 * QConv (one group) or QGemm gets int8 (M, 1, Kp) -- the quantize pass's (M, K) rows, zero
 * padded to Kp, a multiple of the kernel's 64-byte stage -- a depthwise QConv (KH*KW, 1, C);
 * and its bias input becomes one int32 (4, M) constant: bias (first, so the C code still
 * finds it there), then backend/qplan.c's per-channel mult, rmult (0 without a residual)
 * and shift. Rank 3 marks the GPU layout. Nodes the kernels do not take (grouped but not
 * depthwise convolutions, sizes past 32-bit indexing) keep the C target's packing
 * (qplan_pack_weights) and run on the generic path. The integer formula is the C
 * target's (kc_qconv.cuh says which), so the uint8 results are the same bytes.
 * A stem QConv reading a float32 NCHW graph input through QuantizeLinear and a Transpose into
 * NHWC runs as kc_qconv_f32nchw on the input itself, the two nodes folded (cuda_qstem_input). */
#include <string.h>

#include "backend/cuda/cuda.h"
#include "backend/qplan.h"

#define QC_BK 64 /* = KC_QBK */
#define KC_QA_MAX_SK_HOST 4096 /* = KC_QA_MAX_SK */

static bool emit_qattn(CudaCtx *cx, const IrNode *n);
static bool emit_qmatmul(CudaCtx *cx, const IrNode *n);

static const char *qptr(CudaCtx *cx, uint32_t v) { return cgen_ptr(&cx->c, v); }

static bool qrefuse(CudaCtx *cx, const IrNode *n, const char *what) {
    ir_node_diag(cx->c.b.d, DIAG_ERROR, n, ": the CUDA int8 kernel does not support %s", what);
    return false;
}

static void qchecked(CudaCtx *cx, const char *call) {
    cw_line(cx->c.w, "if ((rc = %s) != KC_OK) return rc;", call);
}

/* kc_qconv.cuh and the files it includes (its wgmma form uses kc_igemm.cuh's helpers) */
static void use_qconv(CudaCtx *cx) {
    cuda_use_runtime(cx, "kc_nn.cuh");
    cuda_use_runtime(cx, "kc_igemm.cuh");
    cuda_use_runtime(cx, "kc_qconv.cuh");
}

static bool fits32(int64_t v) { return v >= 0 && v < INT32_MAX; }

static uint32_t new_const(IrGraph *g, const char *base, const char *sfx, IrDType dt, int rank,
                          const int64_t *dims, void **data) {
    char name[256];
    snprintf(name, sizeof name, "%s%s", base ? base : "w", sfx);
    IrTensor *t = ir_tensor_new(g->arena, dt, rank, dims);
    t->name = ir_arena_strdup(g->arena, name);
    IrType ty = ir_type_tensor(dt, rank, dims);
    uint32_t v = ir_value_add(g, t->name, &ty, IR_VALUE_CONST);
    g->values[v].tensor = t;
    g->values[v].producer = IR_NONE;
    *data = t->data;
    return v;
}

/* Whether the GPU kernels take node n, and its kind: 1 dense, 2 depthwise. */
static int gpu_kind(const IrGraph *g, const IrNode *n, QPlanConv *pc, QPlanGemm *pg) {
    const char *why;
    const IrValue *wv = &g->values[n->inputs[1]], *bv = &g->values[n->inputs[2]];
    if (wv->type.rank != 2 || wv->kind != IR_VALUE_CONST || !wv->tensor ||
        wv->tensor->dtype != IR_DTYPE_I8 || bv->kind != IR_VALUE_CONST || !bv->tensor ||
        bv->tensor->dtype != IR_DTYPE_I32)
        return 0;
    const IrType *tx = &g->values[n->inputs[0]].type, *ty = &g->values[n->outputs[0]].type;
    if (tx->dtype != IR_DTYPE_U8 || ty->dtype != IR_DTYPE_U8 || !ir_type_is_static(tx) ||
        !fits32(ir_type_numel(tx)) || !fits32(ir_type_numel(ty)))
        return 0;
    if (n->op == IR_OP_QCONV) {
        if (!qplan_conv(g, n, pc, &why)) return 0;
        if (pc->depthwise) return 2;
        return pc->group == 1 ? 1 : 0;
    }
    if (!qplan_gemm(g, n, pg, &why)) return 0;
    return 1;
}

bool cuda_qint8_prepare(IrGraph *g, Diag *d) {
    IrArena *scratch = g->arena;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        IrNode *n = &g->nodes[i];
        if (n->dead || (n->op != IR_OP_QCONV && n->op != IR_OP_QGEMM_INT8)) continue;
        QPlanConv pc;
        QPlanGemm pg;
        int kind = gpu_kind(g, n, &pc, &pg);
        QPlanRequant rq;
        const char *why;
        if (!kind || !qplan_requant(g, n, scratch, &rq, &why)) continue;
        const IrTensor *wt = g->values[n->inputs[1]].tensor;
        const int8_t *src = wt->data;
        int64_t M = wt->dims[0], K = wt->dims[1];
        const char *base = g->values[n->inputs[1]].name;
        const IrQuant *quant = g->values[n->inputs[1]].quant;
        void *pw, *pb;
        uint32_t wv;
        if (kind == 1) {
            int64_t Kp = (K + QC_BK - 1) / QC_BK * QC_BK;
            int64_t dims[3] = {M, 1, Kp};
            wv = new_const(g, base, ".gpu", IR_DTYPE_I8, 3, dims, &pw);
            int8_t *o = pw;
            memset(o, 0, (size_t)(M * Kp));
            for (int64_t m = 0; m < M; m++) memcpy(o + m * Kp, src + m * K, (size_t)K);
        } else {
            int64_t taps = pc.kh * pc.kw;
            int64_t dims[3] = {taps, 1, M};
            wv = new_const(g, base, ".gpu", IR_DTYPE_I8, 3, dims, &pw);
            int8_t *o = pw;
            for (int64_t c = 0; c < M; c++)
                for (int64_t t = 0; t < taps; t++) o[t * M + c] = src[c * taps + t];
        }
        g->values[wv].quant = (IrQuant *)quant;
        int64_t bdims[2] = {4, M};
        uint32_t bv = new_const(g, g->values[g->nodes[i].inputs[2]].name, ".gpu", IR_DTYPE_I32, 2,
                                bdims, &pb);
        int32_t *o = pb;
        const int32_t *bias = g->values[g->nodes[i].inputs[2]].tensor->data;
        for (int64_t m = 0; m < M; m++) {
            o[m] = bias[m];
            o[M + m] = rq.mult[m];
            o[2 * M + m] = rq.rmult ? rq.rmult[m] : 0;
            o[3 * M + m] = rq.shift[m];
        }
        g->nodes[i].inputs[1] = wv;
        g->nodes[i].inputs[2] = bv;
    }
    return qplan_pack_weights(g, d);
}

static bool need_u8(CudaCtx *cx, const IrNode *n, uint32_t v) {
    const IrType *t = cgen_type(&cx->c, v);
    if (t->dtype != IR_DTYPE_U8 || !ir_type_is_static(t)) return qrefuse(cx, n, "an operand that is not a static uint8 tensor");
    return true;
}

static void emit_params(CudaCtx *cx, const int64_t *v) {
    cw_line(cx->c.w, "static const KcQConv p = {%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, "
                     "%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, "
                     "%lld, %lld};",
            (long long)v[0], (long long)v[1], (long long)v[2], (long long)v[3], (long long)v[4],
            (long long)v[5], (long long)v[6], (long long)v[7], (long long)v[8], (long long)v[9],
            (long long)v[10], (long long)v[11], (long long)v[12], (long long)v[13],
            (long long)v[14], (long long)v[15], (long long)v[16], (long long)v[17],
            (long long)v[18], (long long)v[19], (long long)v[20], (long long)v[21]);
}

/* The node making v where only one reader reads v, else NULL. */
static const IrNode *qsole_producer(CudaCtx *cx, uint32_t v) {
    const IrGraph *g = cx->c.b.g;
    if (!cx->uses || g->values[v].kind != IR_VALUE_NODE || cx->uses[v] != 1) return NULL;
    return &g->nodes[g->values[v].producer];
}

/* One uint8 zero point of a constant, 0 where there is none, -1 where it is no such value. */
static int qconst_zp(CudaCtx *cx, uint32_t v) {
    const IrValue *zv = v == IR_NONE ? NULL : &cx->c.b.g->values[v];
    if (!zv) return 0;
    if (zv->kind != IR_VALUE_CONST || !zv->tensor || zv->tensor->dtype != IR_DTYPE_U8 ||
        cgen_numel(&cx->c, v) != 1)
        return -1;
    return ((const uint8_t *)zv->tensor->data)[0];
}

uint32_t cuda_qstem_input(CudaCtx *cx, const IrNode *n, uint32_t folds[2]) {
    const IrGraph *g = cx->c.b.g;
    folds[0] = folds[1] = IR_NONE;
    if (n->op != IR_OP_QCONV || n->n_inputs < 3 || ir_has_input(n, 3)) return IR_NONE;
    const IrType *tw = cgen_type(&cx->c, n->inputs[1]), *tx = cgen_type(&cx->c, n->inputs[0]);
    QPlanConv pc;
    QPlanRequant rq;
    const char *why;
    if (tw->rank != 3 || tx->rank != 4 || tx->layout != IR_LAYOUT_NHWC ||
        tx->dtype != IR_DTYPE_U8 || !ir_type_is_static(tx) || !fits32(ir_type_numel(tx)) ||
        !qplan_conv(g, n, &pc, &why) || pc.depthwise || pc.group != 1 ||
        !qplan_requant(g, n, &cx->c.b.scratch, &rq, &why))
        return IR_NONE;
    /* the table gather of kc_qconv_f32nchw's KC_QSTEM_GATHER 1 (KC_QKTAB 512): held to so
     * that the knob takes every stem folded here */
    int64_t kp = (pc.kh * pc.kw * pc.c + QC_BK - 1) / QC_BK * QC_BK;
    if (kp > 512 || (pc.kh - 1) * pc.dh >= 0x4000 || (pc.kw - 1) * pc.dw >= 0x10000)
        return IR_NONE;
    /* QuantizeLinear and Transpose (0, 2, 3, 1) in either order, each read by the next alone */
    const IrNode *a = qsole_producer(cx, n->inputs[0]);
    const IrNode *b = a && a->n_inputs > 0 ? qsole_producer(cx, a->inputs[0]) : NULL;
    if (!b) return IR_NONE;
    const IrNode *t = a->op == IR_OP_TRANSPOSE ? a : b, *q = a->op == IR_OP_TRANSPOSE ? b : a;
    uint32_t np = 0;
    const int64_t *perm =
        t->op == IR_OP_TRANSPOSE ? ir_attr_ints(t, IR_ATTR_TRANSPOSE_PERM, &np) : NULL;
    if (!perm || np != 4 || perm[0] != 0 || perm[1] != 2 || perm[2] != 3 || perm[3] != 1 ||
        q->op != IR_OP_QUANTIZE_LINEAR || q->n_inputs < 2)
        return IR_NONE;
    uint32_t u = b->inputs[0], sc = q->inputs[1], zp = q->n_inputs > 2 ? q->inputs[2] : IR_NONE;
    const IrType *tu = cgen_type(&cx->c, u);
    if (g->values[u].kind != IR_VALUE_INPUT || tu->dtype != IR_DTYPE_F32 || tu->rank != 4 ||
        tu->layout == IR_LAYOUT_NHWC || tu->dims[0] != pc.n || tu->dims[1] != pc.c ||
        tu->dims[2] != pc.h || tu->dims[3] != pc.w)
        return IR_NONE;
    if (cgen_type(&cx->c, sc)->dtype != IR_DTYPE_F32 || cgen_numel(&cx->c, sc) != 1 ||
        cgen_type(&cx->c, q->outputs[0])->dtype != IR_DTYPE_U8 ||
        ir_attr_i(q, IR_ATTR_QUANTIZE_LINEAR_BLOCK_SIZE) > 0 || qconst_zp(cx, zp) != rq.x_zp)
        return IR_NONE;
    folds[0] = (uint32_t)(t - g->nodes), folds[1] = (uint32_t)(q - g->nodes);
    return u;
}

/* The stem of cuda_qstem_input: kc_qconv_f32nchw on the float32 graph input, with the
 * QuantizeLinear's scale and zero point, and the QConv's own input (planned still) as the
 * room for the quantized NHWC bytes of its one pass (KC_QSTEM_GATHER 0). */
static bool emit_qstem(CudaCtx *cx, const IrNode *n, uint32_t u, const IrNode *q, const int64_t *v) {
    uint32_t zp = q->n_inputs > 2 ? q->inputs[2] : IR_NONE;
    use_qconv(cx);
    cw_open(cx->c.w, "%s", "");
    emit_params(cx, v);
    qchecked(cx, cgen_fmt(&cx->c, "kc_qconv_f32nchw(s, %s, %s, %s, %s, %s, %s, (const uint8_t *)NULL, %s, &p)",
                          qptr(cx, u), qptr(cx, q->inputs[1]),
                          zp == IR_NONE ? "(const uint8_t *)NULL" : qptr(cx, zp),
                          qptr(cx, n->inputs[0]), qptr(cx, n->inputs[1]), qptr(cx, n->inputs[2]),
                          qptr(cx, n->outputs[0])));
    cw_close(cx->c.w, NULL);
    return true;
}

/* QConv (dense or depthwise) and QGemm (a 1x1 convolution of rows x 1 x 1 pixels). */
static bool emit_qconv(CudaCtx *cx, const IrNode *n) {
    const IrGraph *g = cx->c.b.g;
    if (!need_u8(cx, n, n->inputs[0]) || !need_u8(cx, n, n->outputs[0])) return false;
    const IrType *tw = cgen_type(&cx->c, n->inputs[1]);
    if (tw->rank != 3) return qrefuse(cx, n, "weights in the C target's packing (a grouped convolution)");
    QPlanRequant rq;
    const char *why = "";
    if (!qplan_requant(g, n, &cx->c.b.scratch, &rq, &why)) return qrefuse(cx, n, why);
    bool dw = false;
    int64_t v[22];
    if (n->op == IR_OP_QCONV) {
        QPlanConv p;
        if (!qplan_conv(g, n, &p, &why)) return qrefuse(cx, n, why);
        dw = p.depthwise;
        int64_t K = p.kh * p.kw * p.c;
        int64_t t[22] = {p.n, p.h, p.w, p.c, p.oh, p.ow, p.m, p.kh, p.kw, p.sh, p.sw, p.ph, p.pw,
                         p.dh, p.dw, K, dw ? K : tw->dims[2], rq.x_zp, rq.y_zp, rq.r_zp, rq.lo, rq.hi};
        memcpy(v, t, sizeof v);
    } else {
        QPlanGemm p;
        if (!qplan_gemm(g, n, &p, &why)) return qrefuse(cx, n, why);
        int64_t t[22] = {p.rows, 1, 1, p.k, 1, 1, p.n, 1, 1, 1, 1, 0, 0, 1, 1, p.k, tw->dims[2],
                         rq.x_zp, rq.y_zp, rq.r_zp, rq.lo, rq.hi};
        memcpy(v, t, sizeof v);
    }
    uint32_t folds[2], u = cuda_qstem_input(cx, n, folds);
    if (u != IR_NONE) /* its QuantizeLinear and Transpose are folded in (cuda.c) */
        return emit_qstem(cx, n, u, &g->nodes[folds[1]], v);
    use_qconv(cx);
    bool res = n->op == IR_OP_QCONV && ir_has_input(n, 3);
    cw_open(cx->c.w, "%s", "");
    emit_params(cx, v);
    qchecked(cx, cgen_fmt(&cx->c, "%s(s, %s, %s, %s, %s, %s, &p)", dw ? "kc_qdwconv" : "kc_qconv",
                          qptr(cx, n->inputs[0]), qptr(cx, n->inputs[1]), qptr(cx, n->inputs[2]),
                          res ? qptr(cx, n->inputs[3]) : "(const uint8_t *)NULL",
                          qptr(cx, n->outputs[0])));
    cw_close(cx->c.w, NULL);
    return true;
}

static bool emit_qmaxpool(CudaCtx *cx, const IrNode *n) {
    QPlanConv p;
    const char *why = "";
    if (!need_u8(cx, n, n->inputs[0]) || !need_u8(cx, n, n->outputs[0])) return false;
    if (!qplan_pool(cx->c.b.g, n, &p, &why)) return qrefuse(cx, n, why);
    if (!fits32(cgen_numel(&cx->c, n->inputs[0]))) return qrefuse(cx, n, "2^31 elements or more");
    int64_t v[22] = {p.n, p.h, p.w, p.c, p.oh, p.ow, p.m, p.kh, p.kw, p.sh, p.sw,
                     p.ph, p.pw, p.dh, p.dw, 0, 0, 0, 0, 0, 0, 255};
    use_qconv(cx);
    cw_open(cx->c.w, "%s", "");
    emit_params(cx, v);
    qchecked(cx, cgen_fmt(&cx->c, "kc_qmaxpool(s, %s, %s, &p)", qptr(cx, n->inputs[0]),
                          qptr(cx, n->outputs[0])));
    cw_close(cx->c.w, NULL);
    return true;
}

/* QMul with B repeated over a run of A's dims (qplan_eltwise's bcast): kc_qelt.cuh. */
static bool emit_qmul_bcast(CudaCtx *cx, const IrNode *n, const QPlanEltwise *p) {
    use_qconv(cx); /* kc_qelt.cuh includes it */
    cuda_use_runtime(cx, "kc_qelt.cuh");
    qchecked(cx, cgen_fmt(&cx->c, "kc_qmul_bcast(s, %lld, %lld, %lld, %s, %d, %s, %d, %ld, %d, %d, %s)",
                          (long long)p->outer, (long long)p->mid, (long long)p->inner,
                          qptr(cx, n->inputs[0]), (int)p->a_zp, qptr(cx, n->inputs[1]),
                          (int)p->b_zp, (long)p->ma, p->shift, (int)p->y_zp,
                          qptr(cx, n->outputs[0])));
    return true;
}

static bool emit_qelt(CudaCtx *cx, const IrNode *n) {
    QPlanEltwise p;
    const char *why = "";
    for (uint32_t k = 0; k < n->n_inputs; k++)
        if (!need_u8(cx, n, n->inputs[k])) return false;
    if (!need_u8(cx, n, n->outputs[0])) return false;
    if (!qplan_eltwise(cx->c.b.g, n, &p, &why)) return qrefuse(cx, n, why);
    int64_t count = cgen_numel(&cx->c, n->outputs[0]);
    use_qconv(cx);
    if (p.bcast) return emit_qmul_bcast(cx, n, &p);
    if (n->op == IR_OP_QADD || n->op == IR_OP_QMUL) {
        if (cgen_numel(&cx->c, n->inputs[0]) != count || cgen_numel(&cx->c, n->inputs[1]) != count)
            return qrefuse(cx, n, "operands of other shapes than the output");
        qchecked(cx, cgen_fmt(&cx->c, "kc_qbinary(s, %lld, %s, %d, %ld, %s, %d, %ld, %d, %d, %d, %s)",
                              (long long)count, qptr(cx, n->inputs[0]), (int)p.a_zp, (long)p.ma,
                              qptr(cx, n->inputs[1]), (int)p.b_zp, (long)p.mb, p.shift,
                              (int)p.y_zp, n->op == IR_OP_QMUL, qptr(cx, n->outputs[0])));
        return true;
    }
    const IrType *tx = cgen_type(&cx->c, n->inputs[0]);
    if (tx->rank != 4) return qrefuse(cx, n, "an input that is not 4-D channels-last");
    qchecked(cx, cgen_fmt(&cx->c, "kc_qgavg(s, %s, %s, %lld, %lld, %lld, %d, %ld, %d, %d)",
                          qptr(cx, n->inputs[0]), qptr(cx, n->outputs[0]), (long long)tx->dims[0],
                          (long long)(tx->dims[1] * tx->dims[2]), (long long)tx->dims[3],
                          (int)p.a_zp, (long)p.ma, p.shift, (int)p.y_zp));
    return true;
}

static bool emit_qlut(CudaCtx *cx, const IrNode *n) {
    if (!need_u8(cx, n, n->inputs[0]) || !need_u8(cx, n, n->outputs[0])) return false;
    if (cgen_numel(&cx->c, n->inputs[1]) != 256) return qrefuse(cx, n, "a table of other than 256 entries");
    use_qconv(cx);
    qchecked(cx, cgen_fmt(&cx->c, "kc_qlut(s, %lld, %s, %s, %s)",
                          (long long)cgen_numel(&cx->c, n->outputs[0]), qptr(cx, n->inputs[0]),
                          qptr(cx, n->inputs[1]), qptr(cx, n->outputs[0])));
    return true;
}

/* QuantizeLinear float32/float16 -> uint8 and DequantizeLinear uint8 -> float32 with one float32
 * scale and an optional uint8 zero point; anything else takes the generic path. */
static bool emit_qdq(CudaCtx *cx, const IrNode *n) {
    bool q = n->op == IR_OP_QUANTIZE_LINEAR;
    uint32_t x = n->inputs[0], sc = n->inputs[1], y = n->outputs[0];
    uint32_t zp = n->n_inputs > 2 ? n->inputs[2] : IR_NONE;
    IrDType xt = cgen_type(&cx->c, x)->dtype, yt = cgen_type(&cx->c, y)->dtype;
    bool xf = xt == IR_DTYPE_F32 || (q && xt == IR_DTYPE_F16); /* float16 as its bits */
    if (!(q ? xf && yt == IR_DTYPE_U8 : xt == IR_DTYPE_U8 && yt == IR_DTYPE_F32))
        return qrefuse(cx, n, "types other than float32 (or float16 into QuantizeLinear) and uint8");
    if (cgen_type(&cx->c, sc)->dtype != IR_DTYPE_F32 || cgen_numel(&cx->c, sc) != 1 ||
        (zp != IR_NONE && (cgen_type(&cx->c, zp)->dtype != IR_DTYPE_U8 || cgen_numel(&cx->c, zp) != 1)))
        return qrefuse(cx, n, "a scale or zero point that is not one value");
    if (q && ir_attr_i(n, IR_ATTR_QUANTIZE_LINEAR_BLOCK_SIZE) > 0)
        return qrefuse(cx, n, "blocked quantization");
    if (!q && ir_attr_i(n, IR_ATTR_DEQUANTIZE_LINEAR_BLOCK_SIZE) > 0)
        return qrefuse(cx, n, "blocked quantization");
    use_qconv(cx);
    qchecked(cx, cgen_fmt(&cx->c, "%s(s, %lld, %s, %s, %s, %s)",
                          q ? "kc_quantize_u8" : "kc_dequantize_u8",
                          (long long)cgen_numel(&cx->c, x), qptr(cx, x), qptr(cx, sc),
                          zp == IR_NONE ? "(const uint8_t *)NULL" : qptr(cx, zp), qptr(cx, y)));
    return true;
}

void cuda_register_qint8(CudaEmitFn *table) {
    table[IR_OP_QCONV] = emit_qconv;
    table[IR_OP_QGEMM_INT8] = emit_qconv;
    table[IR_OP_QADD] = emit_qelt;
    table[IR_OP_QMUL] = emit_qelt;
    table[IR_OP_QGLOBAL_AVERAGE_POOL] = emit_qelt;
    table[IR_OP_QLUT] = emit_qlut;
    table[IR_OP_QMAX_POOL] = emit_qmaxpool;
    table[IR_OP_QUANTIZE_LINEAR] = emit_qdq;
    table[IR_OP_DEQUANTIZE_LINEAR] = emit_qdq;
    table[IR_OP_QATTENTION] = emit_qattn;
    table[IR_OP_QMATMUL] = emit_qmatmul;
}

/* QAttention (runtime/cuda/kc_qattn.cuh): the C target's plan (cgen_qattn_plan), one block
 * per query row; heads past the kernel's shared memory take the generic path. */
static bool emit_qattn(CudaCtx *cx, const IrNode *n) {
    CgenQAttnPlan pl;
    if (!cgen_qattn_plan(&cx->c, n, &pl)) return false;
    const RtQAttn *p = &pl.p;
    if (p->sk > KC_QA_MAX_SK_HOST || !fits32(p->b * p->h * p->sq))
        return qrefuse(cx, n, "more than 4096 keys, or 2^31 query rows");
    const char *ptr[4];
    for (int o = 0; o < 4; o++) {
        uint32_t v = o < 3 ? n->inputs[o] : n->outputs[0];
        ptr[o] = pl.off[o] ? cgen_fmt(&cx->c, "(%s + %lld)", qptr(cx, v), (long long)pl.off[o])
                           : qptr(cx, v);
    }
    const int64_t *st[5] = {p->q_st, p->k_st, p->v_st, p->m_st, p->y_st};
    char lists[5][96];
    for (int o = 0; o < 5; o++)
        snprintf(lists[o], sizeof lists[o], "{%lld, %lld, %lld, %lld}", (long long)st[o][0],
                 (long long)st[o][1], (long long)st[o][2], (long long)st[o][3]);
    char lit[64]; /* the float multiplier, its bits read back */
    snprintf(lit, sizeof lit, "%.9g", (double)p->score_scale);
    if (!strpbrk(lit, ".en")) strcat(lit, ".0");
    cuda_use_runtime(cx, "kc_qattn.cuh");
    CWriter *w = cx->c.w;
    cw_open(w, "%s", "");
    cw_line(w, "static const KcQAttn p = {%lld, %lld, %lld, %lld, %lld, %lld,", (long long)p->b,
            (long long)p->h, (long long)p->sq, (long long)p->sk, (long long)p->d, (long long)p->dv);
    cw_line(w, "    %s, %s, %s, %s, %s,", lists[0], lists[1], lists[2], lists[3], lists[4]);
    cw_line(w, "    %d, %d, %d, %d, %sf, %ld, %d};", (int)p->q_zp, (int)p->k_zp, (int)p->v_zp,
            (int)p->y_zp, lit, (long)p->y_mult, p->y_shift);
    qchecked(cx, cgen_fmt(&cx->c, "kc_qattention(s, &p, %s, %s, %s, %s, %s)", ptr[0], ptr[1], ptr[2],
                          pl.has_mask ? qptr(cx, n->inputs[3]) : "(const float *)NULL", ptr[3]));
    cw_close(w, NULL);
    return true;
}

/* QMatMul (kc_qattn.cuh's kc_qmatmul): the C target's plan (cgen_qmatmul_plan), 32 x 32
 * output tiles a block. */
static bool emit_qmatmul(CudaCtx *cx, const IrNode *n) {
    RtQMatMul p;
    if (!cgen_qmatmul_plan(&cx->c, n, &p)) return false;
    if ((p.m + 31) / 32 > 65535 || !fits32((p.n + 31) / 32))
        return qrefuse(cx, n, "more than 2^21 rows");
    cuda_use_runtime(cx, "kc_qattn.cuh");
    CWriter *w = cx->c.w;
    cw_open(w, "%s", "");
    cw_line(w, "static const KcQMatMul p = {%lld, %lld, %lld, %lld, %lld, %lld, %d, %d, %d, %ld, %d};",
            (long long)p.batch, (long long)p.m, (long long)p.k, (long long)p.n, (long long)p.a_bst,
            (long long)p.b_bst, (int)p.a_zp, (int)p.b_zp, (int)p.y_zp, (long)p.y_mult, p.y_shift);
    qchecked(cx, cgen_fmt(&cx->c, "kc_qmatmul(s, &p, %s, %s, %s)", qptr(cx, n->inputs[0]),
                          qptr(cx, n->inputs[1]), qptr(cx, n->outputs[0])));
    cw_close(w, NULL);
    return true;
}
