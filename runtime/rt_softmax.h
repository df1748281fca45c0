/* rt_softmax.h: Softmax, LogSoftmax and Hardmax along one axis. The tensor is seen as
 * (outer, n, inner) with the axis in the middle (opset < 13 models coerce to 2-D, which is
 * inner = 1 and n = the product of the trailing dims). Max-subtracted for stability; the
 * exp-sum through rt_sum.h, so its error does not grow with n; f16/bf16 compute in float.
 * Float exp is rt_vmath.h's; float Softmax writes e^(x - max) into y in one loop that
 * vectorizes, sums y, then scales it (in place is safe: each element is read before it is
 * written). C99. */
#ifndef KILN_RT_SOFTMAX_H
#define KILN_RT_SOFTMAX_H

#include "rt_common.h"
#include "rt_sum.h"
#include "rt_vmath.h"

#define RT_SOFTMAX 0
#define RT_LOG_SOFTMAX 1
#define RT_HARDMAX 2

#define RT_SM_ID(v) (v)

/* Defines rt_softmax_SFX(x, y, outer, n, inner, mode); x, y: (outer, n, inner). */
#define RT_SOFTMAX_DEFINE(SFX, T, ACC, ASFX, LD, ST, EXP, LOG)                                \
    RT_API void rt_softmax_##SFX(const T *x, T *y, int64_t outer, int64_t n, int64_t inner,    \
                                 int mode) {                                                   \
        int64_t o, i, k;                                                                       \
        if (n <= 0) return;                                                                    \
        for (o = 0; o < outer; o++)                                                            \
            for (i = 0; i < inner; i++) {                                                      \
                const T *xs = x + o * n * inner + i;                                           \
                T *ys = y + o * n * inner + i;                                                 \
                ACC mx = LD(xs[0]), sum;                                                       \
                RtSum##ASFX acc;                                                               \
                int64_t arg = 0;                                                               \
                for (k = 1; k < n; k++) {                                                      \
                    ACC v = LD(xs[k * inner]);                                                 \
                    if (v > mx) mx = v, arg = k;                                               \
                }                                                                              \
                if (mode == RT_HARDMAX) {                                                      \
                    for (k = 0; k < n; k++) ys[k * inner] = ST((ACC)(k == arg));               \
                    continue;                                                                  \
                }                                                                              \
                rt_sum_init_##ASFX(&acc);                                                      \
                for (k = 0; k < n; k++) rt_sum_add_##ASFX(&acc, EXP(LD(xs[k * inner]) - mx));  \
                sum = rt_sum_total_##ASFX(&acc);                                               \
                if (mode == RT_LOG_SOFTMAX) {                                                  \
                    ACC ls = LOG(sum);                                                         \
                    for (k = 0; k < n; k++) ys[k * inner] = ST(LD(xs[k * inner]) - mx - ls);   \
                } else {                                                                       \
                    ACC inv = 1 / sum;                                                         \
                    for (k = 0; k < n; k++)                                                    \
                        ys[k * inner] = ST(EXP(LD(xs[k * inner]) - mx) * inv);                 \
                }                                                                              \
            }                                                                                  \
    }

/* LogSoftmax and Hardmax of float: the generic loops above. */
RT_SOFTMAX_DEFINE(f32_generic, float, float, f32, RT_SM_ID, RT_SM_ID, rt_vexp_f32, logf)
RT_SOFTMAX_DEFINE(f64, double, double, f64, RT_SM_ID, RT_SM_ID, exp, log)
RT_SOFTMAX_DEFINE(f16, uint16_t, float, f32, rt_f16_to_f32, rt_f32_to_f16, rt_vexp_f32, logf)
RT_SOFTMAX_DEFINE(bf16, uint16_t, float, f32, rt_bf16_to_f32, rt_f32_to_bf16, rt_vexp_f32, logf)

/* rt_softmax_f32(x, y, outer, n, inner, mode): as the others; Softmax's exp and scale loops
 * vectorize over the axis when inner = 1 (the last axis, as in attention). */
RT_API void rt_softmax_f32(const float *x, float *y, int64_t outer, int64_t n, int64_t inner,
                           int mode) {
    int64_t o, i, k;
    if (mode != RT_SOFTMAX) {
        rt_softmax_f32_generic(x, y, outer, n, inner, mode);
        return;
    }
    if (n <= 0) return;
    for (o = 0; o < outer; o++)
        for (i = 0; i < inner; i++) {
            const float *xs = x + o * n * inner + i;
            float *ys = y + o * n * inner + i;
            float mx = xs[0], inv;
            for (k = 1; k < n; k++) mx = xs[k * inner] > mx ? xs[k * inner] : mx;
            for (k = 0; k < n; k++) ys[k * inner] = rt_vexp_f32(xs[k * inner] - mx);
            inv = 1 / rt_sum_f32(ys, n, inner);
            for (k = 0; k < n; k++) ys[k * inner] *= inv;
        }
}

#endif
