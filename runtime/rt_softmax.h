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

#if defined(__AVX512F__) && !defined(RT_SM_PORTABLE) && !defined(__CUDACC__)
#define RT_SM_AVX512 1
#include <immintrin.h>
#elif defined(__AVX2__) && defined(__FMA__) && !defined(RT_SM_PORTABLE) && !defined(__CUDACC__)
#define RT_SM_AVX2 1
#include <immintrin.h>
#endif

#define RT_SM_NV 16 /* lanes of the float row's max and sum: one zmm, two ymm */
#define RT_SM_SUM_BLOCK 512 /* values summed in RT_SM_NV lanes before they join an rt_sum: 32
                               a lane, as rt_sum's blocks */

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

/* y[0..n) = e^(x - max x) (y may be x), and returns their sum: RT_SM_NV lanes side by side, each
 * RT_SM_SUM_BLOCK values' lanes added pairwise (8 + 8, 4 + 4, ...: rt_sum's block of 32
 * and 4 of its pairwise levels) and the block closed into an rt_sum as one of its blocks, so
 * that the error keeps rt_sum's bound. The max and the sum in AVX-512 or AVX2 registers
 * where the compiler targets them (GCC leaves the portable lane loops
 * scalar: a third of the attention kernel's time at Sk = 128), the exp loop vectorized by
 * the compiler either way. */
RT_API float rt_softmax_row_f32(const float *x, float *y, int64_t n) {
    float lane[RT_SM_NV], mx = x[0];
    int64_t j0, j, m = n - n % RT_SM_NV;
    int l;
    RtSumf32 s;
#ifdef RT_SM_AVX512
    __m512 acc = _mm512_set1_ps(x[0]);
    for (j = 0; j < m; j += RT_SM_NV) acc = _mm512_max_ps(acc, _mm512_loadu_ps(x + j));
    mx = _mm512_reduce_max_ps(acc);
#elif defined(RT_SM_AVX2)
    if (m > 0) {
        __m256 lo = _mm256_loadu_ps(x), hi = _mm256_loadu_ps(x + 8);
        for (j = RT_SM_NV; j < m; j += RT_SM_NV) {
            lo = _mm256_max_ps(lo, _mm256_loadu_ps(x + j));
            hi = _mm256_max_ps(hi, _mm256_loadu_ps(x + j + 8));
        }
        _mm256_storeu_ps(lane, _mm256_max_ps(lo, hi));
        for (l = 0; l < 8; l++) mx = lane[l] > mx ? lane[l] : mx;
    }
#else
    if (m > 0) {
        for (l = 0; l < RT_SM_NV; l++) lane[l] = x[l];
        for (j0 = RT_SM_NV; j0 < m; j0 += RT_SM_NV)
            for (l = 0; l < RT_SM_NV; l++) lane[l] = x[j0 + l] > lane[l] ? x[j0 + l] : lane[l];
        for (l = 0; l < RT_SM_NV; l++) mx = lane[l] > mx ? lane[l] : mx;
    }
#endif
    for (j = m; j < n; j++) mx = x[j] > mx ? x[j] : mx;
    for (j = 0; j < n; j++) y[j] = rt_vexp_f32(x[j] - mx);
    rt_sum_init_f32(&s);
    for (j0 = 0; j0 < m; j0 += RT_SM_SUM_BLOCK) {
        const int64_t e = m - j0 < RT_SM_SUM_BLOCK ? m : j0 + RT_SM_SUM_BLOCK;
#ifdef RT_SM_AVX512
        acc = _mm512_setzero_ps();
        for (j = j0; j < e; j += RT_SM_NV) acc = _mm512_add_ps(acc, _mm512_loadu_ps(y + j));
        _mm512_storeu_ps(lane, acc);
#elif defined(RT_SM_AVX2)
        { /* lanes 0-7 and 8-15 as the portable loop's */
            __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
            for (j = j0; j < e; j += RT_SM_NV) {
                lo = _mm256_add_ps(lo, _mm256_loadu_ps(y + j));
                hi = _mm256_add_ps(hi, _mm256_loadu_ps(y + j + 8));
            }
            _mm256_storeu_ps(lane, lo);
            _mm256_storeu_ps(lane + 8, hi);
        }
#else
        for (l = 0; l < RT_SM_NV; l++) lane[l] = 0;
        for (j = j0; j < e; j += RT_SM_NV)
            for (l = 0; l < RT_SM_NV; l++) lane[l] += y[j + l];
#endif
        for (l = RT_SM_NV / 2; l > 0; l /= 2) {
            int i;
            for (i = 0; i < l; i++) lane[i] += lane[i + l];
        }
        s.part = lane[0]; /* one closed block of rt_sum: its error bound holds */
        s.n_part = RT_SUM_BLOCK;
        rt_sum_close_f32(&s);
    }
    for (j = m; j < n; j++) rt_sum_add_f32(&s, y[j]);
    return rt_sum_total_f32(&s);
}

/* rt_softmax_f32(x, y, outer, n, inner, mode): as the others; along the last axis (inner = 1,
 * as in attention) each row through rt_softmax_row_f32, then scaled in a loop that
 * vectorizes. */
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
            if (inner == 1) {
                inv = 1 / rt_softmax_row_f32(xs, ys, n);
                for (k = 0; k < n; k++) ys[k] *= inv;
                continue;
            }
            for (k = 1; k < n; k++) mx = xs[k * inner] > mx ? xs[k * inner] : mx;
            for (k = 0; k < n; k++) ys[k * inner] = rt_vexp_f32(xs[k * inner] - mx);
            inv = 1 / rt_sum_f32(ys, n, inner);
            for (k = 0; k < n; k++) ys[k * inner] *= inv;
        }
}

#endif
