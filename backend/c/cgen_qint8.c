/* C backend emitters of the int8 kernels of the quantize pass (QConv, QGemm, QAdd, QMul,
 * QLut, QMaxPool, QGlobalAveragePool): the plan of backend/qplan.c baked into the code as
 * static tables (per-channel multipliers and shifts) and calls into runtime/rt_qconv.h.
 * The SIMD path (AVX-512 VNNI, AVX-VNNI, AVX2, NEON dot product, portable) is chosen by
 * the compiler's macros when the bundle is built. */
#include <string.h>

#include "backend/c/cgen.h"
#include "backend/qplan.h"

#define QI_PER_LINE 12 /* table entries per generated line */

/* static const T name[n] = {...}; wrapped */
static void emit_table(CgenCtx *cx, const char *ctype, const char *name, const int32_t *v32,
                       const uint8_t *v8, int64_t n) {
    CWriter *w = cx->w;
    cw_line(w, "static const %s %s[%lld] = {", ctype, name, (long long)n);
    w->indent++;
    for (int64_t i = 0; i < n; i += QI_PER_LINE) {
        char line[QI_PER_LINE * 14 + 8];
        size_t len = 0;
        for (int64_t j = i; j < n && j < i + QI_PER_LINE; j++)
            len += (size_t)snprintf(line + len, sizeof line - len, "%s%ld%s", j > i ? " " : "",
                                    (long)(v32 ? v32[j] : v8[j]), j + 1 < n ? "," : "");
        cw_line(w, "%s", line);
    }
    w->indent--;
    cw_line(w, "};");
}

static bool need_u8(CgenCtx *cx, const IrNode *n, uint32_t v) {
    if (cgen_type(cx, v)->dtype != IR_DTYPE_U8 || !ir_type_is_static(cgen_type(cx, v)))
        return cgen_unsupported(cx, n, "an operand that is not a static uint8 tensor");
    return true;
}

/* The RtQRequant local rq of a QConv/QGemm: tables, then the struct. */
static bool emit_requant(CgenCtx *cx, const IrNode *n, QPlanRequant *rq) {
    const char *why = "";
    if (!qplan_requant(cx->b.g, n, &cx->b.scratch, rq, &why)) return cgen_unsupported(cx, n, "%s", why);
    emit_table(cx, "int32_t", "mult", rq->mult, NULL, rq->m);
    if (rq->rmult) emit_table(cx, "int32_t", "rmult", rq->rmult, NULL, rq->m);
    emit_table(cx, "uint8_t", "shift", NULL, rq->shift, rq->m);
    cw_line(cx->w, "const RtQRequant rq = {%s, mult, %s, shift, %d, %d, %d, %d};",
            cgen_ptr(cx, n->inputs[2]), rq->rmult ? "rmult" : "NULL", (int)rq->y_zp, (int)rq->r_zp,
            (int)rq->lo, (int)rq->hi);
    return true;
}

static bool emit_qconv(CgenCtx *cx, const IrNode *n) {
    QPlanConv p;
    const char *why = "";
    if (!need_u8(cx, n, n->inputs[0]) || !need_u8(cx, n, n->outputs[0])) return false;
    if (!qplan_conv(cx->b.g, n, &p, &why)) return cgen_unsupported(cx, n, "%s", why);
    if (cgen_type(cx, n->inputs[1])->rank != 1)
        return cgen_unsupported(cx, n, "weights that are not packed (qplan_pack_weights)");
    cgen_use_runtime(cx, "rt_qconv.h");
    CWriter *w = cx->w;
    cw_line(w, "{");
    w->indent++;
    QPlanRequant rq;
    if (!emit_requant(cx, n, &rq)) return false;
    cw_line(w, "static const RtQConv2d geom = {%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, "
               "%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld};",
            (long long)p.n, (long long)p.h, (long long)p.w, (long long)p.c, (long long)p.oh,
            (long long)p.ow, (long long)p.m, (long long)p.kh, (long long)p.kw, (long long)p.sh,
            (long long)p.sw, (long long)p.dh, (long long)p.dw, (long long)p.ph, (long long)p.pw,
            (long long)p.group, (long long)p.c4, (long long)p.np);
    cw_line(w, "%s(&geom, %s, %d, %s, &rq, %s, %s);", p.depthwise ? "rt_qdwconv2d" : "rt_qconv2d",
            cgen_ptr(cx, n->inputs[0]), (int)rq.x_zp, cgen_ptr(cx, n->inputs[1]),
            ir_has_input(n, 3) ? cgen_ptr(cx, n->inputs[3]) : "NULL", cgen_ptr(cx, n->outputs[0]));
    w->indent--;
    cw_line(w, "}");
    return true;
}

static bool emit_qgemm(CgenCtx *cx, const IrNode *n) {
    QPlanGemm p;
    const char *why = "";
    if (!need_u8(cx, n, n->inputs[0]) || !need_u8(cx, n, n->outputs[0])) return false;
    if (!qplan_gemm(cx->b.g, n, &p, &why)) return cgen_unsupported(cx, n, "%s", why);
    if (cgen_type(cx, n->inputs[1])->rank != 1)
        return cgen_unsupported(cx, n, "weights that are not packed (qplan_pack_weights)");
    cgen_use_runtime(cx, "rt_qconv.h");
    CWriter *w = cx->w;
    cw_line(w, "{");
    w->indent++;
    QPlanRequant rq;
    if (!emit_requant(cx, n, &rq)) return false;
    cw_line(w, "rt_qgemm_rows(%lld, %lld, %lld, %lld, %lld, %s, %d, %s, &rq, %s);",
            (long long)p.rows, (long long)p.k, (long long)p.c4, (long long)p.np, (long long)p.n,
            cgen_ptr(cx, n->inputs[0]), (int)rq.x_zp, cgen_ptr(cx, n->inputs[1]),
            cgen_ptr(cx, n->outputs[0]));
    w->indent--;
    cw_line(w, "}");
    return true;
}

static bool emit_qelt(CgenCtx *cx, const IrNode *n) {
    QPlanEltwise p;
    const char *why = "";
    for (uint32_t k = 0; k < n->n_inputs; k++)
        if (!need_u8(cx, n, n->inputs[k])) return false;
    if (!need_u8(cx, n, n->outputs[0])) return false;
    if (!qplan_eltwise(cx->b.g, n, &p, &why)) return cgen_unsupported(cx, n, "%s", why);
    cgen_use_runtime(cx, "rt_qconv.h");
    int64_t count = cgen_numel(cx, n->outputs[0]);
    const char *y = cgen_ptr(cx, n->outputs[0]);
    if (n->op == IR_OP_QADD) {
        cw_line(cx->w, "rt_qadd(%lld, %s, %d, %ld, %s, %d, %ld, %d, %d, 0, 255, %s);",
                (long long)count, cgen_ptr(cx, n->inputs[0]), (int)p.a_zp, (long)p.ma,
                cgen_ptr(cx, n->inputs[1]), (int)p.b_zp, (long)p.mb, p.shift, (int)p.y_zp, y);
    } else if (n->op == IR_OP_QMUL && p.bcast) {
        cw_line(cx->w, "rt_qmul_bcast(%lld, %lld, %lld, %s, %d, %s, %d, %ld, %d, %d, %s);",
                (long long)p.outer, (long long)p.mid, (long long)p.inner,
                cgen_ptr(cx, n->inputs[0]), (int)p.a_zp, cgen_ptr(cx, n->inputs[1]), (int)p.b_zp,
                (long)p.ma, p.shift, (int)p.y_zp, y);
    } else if (n->op == IR_OP_QMUL) {
        cw_line(cx->w, "rt_qmul(%lld, %s, %d, %s, %d, %ld, %d, %d, %s);", (long long)count,
                cgen_ptr(cx, n->inputs[0]), (int)p.a_zp, cgen_ptr(cx, n->inputs[1]), (int)p.b_zp,
                (long)p.ma, p.shift, (int)p.y_zp, y);
    } else {
        const IrType *tx = cgen_type(cx, n->inputs[0]);
        cw_line(cx->w, "rt_qgavgpool(%lld, %lld, %lld, %s, %d, %ld, %d, %d, %s);",
                (long long)tx->dims[0], (long long)(tx->dims[1] * tx->dims[2]),
                (long long)tx->dims[3], cgen_ptr(cx, n->inputs[0]), (int)p.a_zp, (long)p.ma,
                p.shift, (int)p.y_zp, y);
    }
    return true;
}

static bool emit_qlut(CgenCtx *cx, const IrNode *n) {
    if (!need_u8(cx, n, n->inputs[0]) || !need_u8(cx, n, n->outputs[0])) return false;
    if (cgen_numel(cx, n->inputs[1]) != 256) return cgen_unsupported(cx, n, "a table of other than 256 entries");
    cgen_use_runtime(cx, "rt_qconv.h");
    cw_line(cx->w, "rt_qlut(%lld, %s, %s, %s);", (long long)cgen_numel(cx, n->outputs[0]),
            cgen_ptr(cx, n->inputs[0]), cgen_ptr(cx, n->inputs[1]), cgen_ptr(cx, n->outputs[0]));
    return true;
}

static bool emit_qmaxpool(CgenCtx *cx, const IrNode *n) {
    QPlanConv p;
    const char *why = "";
    if (!need_u8(cx, n, n->inputs[0]) || !need_u8(cx, n, n->outputs[0])) return false;
    if (!qplan_pool(cx->b.g, n, &p, &why)) return cgen_unsupported(cx, n, "%s", why);
    cgen_use_runtime(cx, "rt_qconv.h");
    CWriter *w = cx->w;
    cw_line(w, "{");
    w->indent++;
    cw_line(w, "static const RtQConv2d geom = {%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, "
               "%lld, %lld, %lld, %lld, %lld, %lld, %lld, 1, 0, 0};",
            (long long)p.n, (long long)p.h, (long long)p.w, (long long)p.c, (long long)p.oh,
            (long long)p.ow, (long long)p.m, (long long)p.kh, (long long)p.kw, (long long)p.sh,
            (long long)p.sw, (long long)p.dh, (long long)p.dw, (long long)p.ph, (long long)p.pw);
    cw_line(w, "rt_qmaxpool2d(&geom, %s, %s);", cgen_ptr(cx, n->inputs[0]), cgen_ptr(cx, n->outputs[0]));
    w->indent--;
    cw_line(w, "}");
    return true;
}

void cgen_register_qint8(CgenEmitFn *table) {
    table[IR_OP_QCONV] = emit_qconv;
    table[IR_OP_QGEMM_INT8] = emit_qgemm;
    table[IR_OP_QADD] = emit_qelt;
    table[IR_OP_QMUL] = emit_qelt;
    table[IR_OP_QGLOBAL_AVERAGE_POOL] = emit_qelt;
    table[IR_OP_QLUT] = emit_qlut;
    table[IR_OP_QMAX_POOL] = emit_qmaxpool;
}
