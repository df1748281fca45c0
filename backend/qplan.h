/* The int8 plan, shared by the C and CUDA targets: how a node of the quantize pass
 * (passes/quantize.c) runs, worked out once from the IR's quantization parameters.
 * Requantization: the real multiplier s_x s_w[n] / s_y of each output channel as a 31-bit
 * integer and a right shift (the kernels compute floor((acc * mult + 2^(shift-1)) /
 * 2^shift)); the residual's s_r / s_y at the same shift; the clamp of the activation in
 * the output's integer domain. Geometry: the NHWC convolution as runtime/rt_qconv.h's
 * RtQConv2d. Packing: the target's prepare step lays the int8 weights (M, K) out in the
 * panels of runtime/rt_qgemm.h (depthwise: (KH*KW, C)). */
#ifndef KILN_BACKEND_QPLAN_H
#define KILN_BACKEND_QPLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/ir.h"

#define QPLAN_NR 16 /* = RT_QGEMM_NR: output channels per panel */
#define QPLAN_KB 64 /* = RT_QGEMM_KB: bytes per packed block (NR x 4) */

/* The real multiplier m as mult / 2^shift, mult < 2^31, 1 <= shift <= 62 (a multiplier too
 * small for 62 bits becomes 0). max_shift lowers the shift (the residual's shared one). */
void qplan_multiplier(double m, int max_shift, int32_t *mult, int *shift);

/* The per-channel requantization of a QConv or QGemm node (arrays of m entries in arena). */
typedef struct QPlanRequant {
    int64_t m;
    int32_t *mult, *rmult; /* rmult NULL without a residual */
    uint8_t *shift;
    int32_t x_zp, y_zp, r_zp, lo, hi;
} QPlanRequant;
bool qplan_requant(const IrGraph *g, const IrNode *n, IrArena *a, QPlanRequant *rq,
                   const char **why);

/* The geometry of QConv node n (its W already packed or not). */
typedef struct QPlanConv {
    int64_t n, h, w, c, oh, ow, m, kh, kw, sh, sw, dh, dw, ph, pw, group, c4, np;
    bool depthwise; /* one input and one output channel per group */
} QPlanConv;
bool qplan_conv(const IrGraph *g, const IrNode *n, QPlanConv *p, const char **why);
/* The same for QMaxPool (c4, np, m unused). */
bool qplan_pool(const IrGraph *g, const IrNode *n, QPlanConv *p, const char **why);

/* QGemm node n: rows of A, K, N, blocks of 4 along K and panels. */
typedef struct QPlanGemm {
    int64_t rows, k, n, c4, np;
} QPlanGemm;
bool qplan_gemm(const IrGraph *g, const IrNode *n, QPlanGemm *p, const char **why);

/* Two-input QAdd: a * ma + b * mb at one shift; QMul: m at a shift; QGlobalAveragePool: m
 * (x_scale / (HW y_scale)) at a shift. A QMul whose B repeats over a run of A's dims has
 * bcast set and Y read as (outer, mid, inner), B as (outer, inner) (ir_bcast_run). */
typedef struct QPlanEltwise {
    int32_t a_zp, b_zp, y_zp, ma, mb;
    int shift;
    bool bcast;
    int64_t outer, mid, inner;
} QPlanEltwise;
bool qplan_eltwise(const IrGraph *g, const IrNode *n, QPlanEltwise *p, const char **why);

/* The per-tensor (scale, zero point) of value v; false when it has none. */
bool qplan_value(const IrGraph *g, uint32_t v, float *scale, int32_t *zp);

/* Replaces the (M, K) int8 weights of every QConv and QGemm with their packed form (a new
 * 1-D constant "W.packed" keeping the per-channel scales). Idempotent. */
bool qplan_pack_weights(IrGraph *g, Diag *d);

#endif
