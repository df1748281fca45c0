/* rt_loss.h: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss. Both gather the (log)
 * probability of each sample's target class, weighted, then reduce (none, sum, mean over the
 * weights). SoftmaxCrossEntropyLoss takes raw scores: a log-softmax over the class axis is
 * computed on the fly (and written out when log_prob is wanted), so no scratch is needed.
 * Targets are range-checked. Sums in double. */
#ifndef KILN_RT_LOSS_H
#define KILN_RT_LOSS_H

#include "rt_common.h"

#define RT_LOSS_NONE 0
#define RT_LOSS_SUM 1
#define RT_LOSS_MEAN 2

#define RT_LOSS_ID(v) (v)

/* Defines rt_loss_SFX_TSFX. x: (N, C, D) log-probabilities (or scores when from_scores);
 * target: (N, D); w: (C) or NULL; y: (N, D) for RT_LOSS_NONE, else one value;
 * log_prob: (N, C, D) or NULL (from_scores only). RT_ERR_INDEX for a target outside [0, C)
 * that is not ignore_index (has_ignore). */
#define RT_LOSS_DEFINE(SFX, T, LD, ST, TT)                                                     \
    RT_API int rt_loss_##SFX##_##TT(const T *x, const TT##_t *target, const T *w, T *y,        \
                                    T *log_prob, int64_t N, int64_t C, int64_t D,              \
                                    int64_t ignore_index, int has_ignore, int reduction,       \
                                    int from_scores) {                                         \
        int64_t n, c, d;                                                                       \
        double total = 0, weight_sum = 0;                                                      \
        for (n = 0; n < N; n++)                                                                \
            for (d = 0; d < D; d++) {                                                          \
                const T *xs = x + n * C * D + d;                                               \
                int64_t t = (int64_t)target[n * D + d];                                        \
                double shift = 0, loss = 0, wt = 0;                                            \
                if (from_scores && C > 0) { /* log-softmax: x - max - log(sum(exp(x - max))) */ \
                    double mx = LD(xs[0]), s = 0;                                              \
                    for (c = 1; c < C; c++)                                                    \
                        if (LD(xs[c * D]) > mx) mx = LD(xs[c * D]);                            \
                    for (c = 0; c < C; c++) s += exp(LD(xs[c * D]) - mx);                      \
                    shift = mx + log(s);                                                       \
                    if (log_prob)                                                              \
                        for (c = 0; c < C; c++)                                                \
                            log_prob[n * C * D + c * D + d] = ST(LD(xs[c * D]) - shift);       \
                }                                                                              \
                if (!(has_ignore && t == ignore_index)) {                                      \
                    if (t < 0 || t >= C) return RT_ERR_INDEX;                                  \
                    wt = w ? LD(w[t]) : 1.0;                                                   \
                    loss = -(LD(xs[t * D]) - shift) * wt;                                      \
                }                                                                              \
                if (reduction == RT_LOSS_NONE) y[n * D + d] = ST(loss);                        \
                total += loss;                                                                 \
                weight_sum += wt;                                                              \
            }                                                                                  \
        if (reduction == RT_LOSS_SUM) y[0] = ST(total);                                        \
        if (reduction == RT_LOSS_MEAN) y[0] = ST(total / weight_sum);                          \
        return RT_OK;                                                                          \
    }

#define RT_LOSS_F32_LD(v) ((double)(v)) /* the loss sums in double */
#define RT_LOSS_F32_ST(v) ((float)(v))
#define RT_LOSS_F16_LD(v) ((double)rt_f16_to_f32(v))
#define RT_LOSS_F16_ST(v) rt_f32_to_f16((float)(v))
#define RT_LOSS_BF16_LD(v) ((double)rt_bf16_to_f32(v))
#define RT_LOSS_BF16_ST(v) rt_f32_to_bf16((float)(v))

#define RT_LOSS_TARGETS(SFX, T, LD, ST)                                                        \
    RT_LOSS_DEFINE(SFX, T, LD, ST, int32)                                                      \
    RT_LOSS_DEFINE(SFX, T, LD, ST, int64)

RT_LOSS_TARGETS(f32, float, RT_LOSS_F32_LD, RT_LOSS_F32_ST)
RT_LOSS_TARGETS(f64, double, RT_LOSS_ID, RT_LOSS_ID)
RT_LOSS_TARGETS(f16, uint16_t, RT_LOSS_F16_LD, RT_LOSS_F16_ST)
RT_LOSS_TARGETS(bf16, uint16_t, RT_LOSS_BF16_LD, RT_LOSS_BF16_ST)

#endif
