/* rt_flex.h: FlexAttention (ai.onnx.preview 1), one query row at a time: the scaled scores
 * of a row against every key (Q and K pre-scaled by sqrt(scale) and the product rounded to
 * the input type, as ONNX's reference does), a softmax over the row, and the row of
 * probabilities times V. The emitter runs the model's score_mod / prob_mod between these
 * steps as inline code; rt_flex_attention_* chains them when the node has no modifier.
 * Scores and probabilities live in the softmax precision A (float or double); f16/bf16
 * inputs load through rt_*_to_f32. C99. */
#ifndef KILN_RT_FLEX_H
#define KILN_RT_FLEX_H

#include "rt_common.h"
#include "rt_sum.h"

/* Load T as its compute type C (float for f16/bf16/f32, double for f64) and store back. */
#define RT_FLEX_LD_F32(v) ((float)(v))
#define RT_FLEX_ST_F32(v) ((float)(v))
#define RT_FLEX_LD_F64(v) ((double)(v))
#define RT_FLEX_ST_F64(v) ((double)(v))
#define RT_FLEX_LD_F16(v) rt_f16_to_f32(v)
#define RT_FLEX_ST_F16(v) rt_f32_to_f16((float)(v))
#define RT_FLEX_LD_BF16(v) rt_bf16_to_f32(v)
#define RT_FLEX_ST_BF16(v) rt_f32_to_bf16((float)(v))

/* Softmax over one row of n scores in place (max-subtracted, the exp-sum through rt_sum.h;
 * a row of -inf gives NaN, as the reference's exp(-inf - -inf) does). */
#define RT_FLEX_SOFTMAX_DEFINE(ASFX, A, EXP)                                                    \
    RT_API void rt_flex_softmax_##ASFX(A *row, int64_t n) {                                     \
        A mx = row[0], sum;                                                                     \
        RtSum##ASFX acc;                                                                        \
        int64_t j;                                                                              \
        for (j = 1; j < n; j++)                                                                 \
            if (row[j] > mx) mx = row[j];                                                       \
        rt_sum_init_##ASFX(&acc);                                                               \
        for (j = 0; j < n; j++) {                                                               \
            row[j] = EXP(row[j] - mx);                                                          \
            rt_sum_add_##ASFX(&acc, row[j]);                                                    \
        }                                                                                       \
        sum = rt_sum_total_##ASFX(&acc);                                                        \
        for (j = 0; j < n; j++) row[j] = row[j] / sum;                                          \
    }

RT_FLEX_SOFTMAX_DEFINE(f32, float, expf)
RT_FLEX_SOFTMAX_DEFINE(f64, double, exp)

/* Defines, for input type T (suffix SFX, compute type C) and softmax precision A (suffix
 * ASFX):
 *   rt_flex_scores_SFX_ASFX(q, k, S, D, sqrt_scale, row)
 *     q: (D), k: (S, D) -> row: (S); row[j] = T(sum_d T(q[d]*ss) * T(k[j,d]*ss)) as A,
 *     ss = T(sqrt_scale), the dot product accumulated in double.
 *   rt_flex_apply_SFX_ASFX(p, v, S, Dv, y)
 *     p: (S) probabilities, v: (S, Dv) -> y: (Dv) = T(sum_j p[j] * A(v[j,:])).
 *   rt_flex_attention_SFX_ASFX(q, k, v, y, B, Hq, Hkv, L, S, D, Dv, sqrt_scale, row)
 *     q: (B,Hq,L,D), k: (B,Hkv,S,D), v: (B,Hkv,S,Dv) -> y: (B,Hq,L,Dv), query head h
 *     reading K/V head h / (Hq / Hkv); row: (S) scratch. */
#define RT_FLEX_DEFINE(SFX, T, C, LD, ST, ASFX, A)                                              \
    RT_API void rt_flex_scores_##SFX##_##ASFX(const T *q, const T *k, int64_t S, int64_t D,     \
                                              double sqrt_scale, A *row) {                      \
        C ss = LD(ST(sqrt_scale));                                                              \
        int64_t j, d;                                                                           \
        for (j = 0; j < S; j++) {                                                               \
            const T *kr = k + j * D;                                                            \
            double acc = 0;                                                                     \
            for (d = 0; d < D; d++)                                                             \
                acc += (double)LD(ST(LD(q[d]) * ss)) * (double)LD(ST(LD(kr[d]) * ss));          \
            row[j] = (A)LD(ST(acc));                                                            \
        }                                                                                       \
    }                                                                                           \
    RT_API void rt_flex_apply_##SFX##_##ASFX(const A *p, const T *v, int64_t S, int64_t Dv,     \
                                             T *y) {                                            \
        int64_t j, e;                                                                           \
        for (e = 0; e < Dv; e++) {                                                              \
            A acc = 0;                                                                          \
            for (j = 0; j < S; j++) acc += p[j] * (A)LD(v[j * Dv + e]);                         \
            y[e] = ST(acc);                                                                     \
        }                                                                                       \
    }                                                                                           \
    RT_API void rt_flex_attention_##SFX##_##ASFX(                                               \
        const T *q, const T *k, const T *v, T *y, int64_t B, int64_t Hq, int64_t Hkv,           \
        int64_t L, int64_t S, int64_t D, int64_t Dv, double sqrt_scale, A *row) {               \
        int64_t b, h, i, group = Hq / Hkv;                                                      \
        for (b = 0; b < B; b++)                                                                 \
            for (h = 0; h < Hq; h++) {                                                          \
                int64_t kv = b * Hkv + h / group;                                               \
                for (i = 0; i < L; i++) {                                                       \
                    int64_t qi = (b * Hq + h) * L + i;                                          \
                    rt_flex_scores_##SFX##_##ASFX(q + qi * D, k + kv * S * D, S, D, sqrt_scale, \
                                                  row);                                         \
                    rt_flex_softmax_##ASFX(row, S);                                             \
                    rt_flex_apply_##SFX##_##ASFX(row, v + kv * S * Dv, S, Dv, y + qi * Dv);     \
                }                                                                               \
            }                                                                                   \
    }

RT_FLEX_DEFINE(f32, float, float, RT_FLEX_LD_F32, RT_FLEX_ST_F32, f32, float)
RT_FLEX_DEFINE(f32, float, float, RT_FLEX_LD_F32, RT_FLEX_ST_F32, f64, double)
RT_FLEX_DEFINE(f64, double, double, RT_FLEX_LD_F64, RT_FLEX_ST_F64, f64, double)
RT_FLEX_DEFINE(f64, double, double, RT_FLEX_LD_F64, RT_FLEX_ST_F64, f32, float)
RT_FLEX_DEFINE(f16, uint16_t, float, RT_FLEX_LD_F16, RT_FLEX_ST_F16, f32, float)
RT_FLEX_DEFINE(f16, uint16_t, float, RT_FLEX_LD_F16, RT_FLEX_ST_F16, f64, double)
RT_FLEX_DEFINE(bf16, uint16_t, float, RT_FLEX_LD_BF16, RT_FLEX_ST_BF16, f32, float)
RT_FLEX_DEFINE(bf16, uint16_t, float, RT_FLEX_LD_BF16, RT_FLEX_ST_BF16, f64, double)

#endif
