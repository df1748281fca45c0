/* rt_act.h: the activation epilogues of fused kernels (FusedConv, FusedGemm, FusedMatMul of
 * passes/fuse.c): an activation kind with up to two parameters, applied to a row of results
 * right after the producing kernel wrote it (while it is still in cache), optionally after
 * adding a residual row. One loop per kind, so the kind test stays out of the inner loop.
 * float (exp, erf and tanh from rt_vmath.h, branch-free, so the loops vectorize; sigmoid and
 * SiLU by its AVX-512 and AVX2 vector forms where the bundle is built for them) and double.
 * C99. */
#ifndef KILN_RT_ACT_H
#define KILN_RT_ACT_H

#include <math.h>

#include "rt_common.h"
#include "rt_vmath.h"

typedef enum RtActKind {
    RT_ACT_NONE = 0,
    RT_ACT_RELU,         /* max(v, 0) */
    RT_ACT_CLIP,         /* min(max(v, alpha), beta) */
    RT_ACT_LEAKY_RELU,   /* v >= 0 ? v : alpha * v */
    RT_ACT_SIGMOID,      /* 1 / (1 + exp(-v)) */
    RT_ACT_HARD_SIGMOID, /* max(0, min(1, alpha * v + beta)) */
    RT_ACT_HARD_SWISH,   /* v * max(0, min(1, v / 6 + 1 / 2)) */
    RT_ACT_SILU,         /* v * sigmoid(v) */
    RT_ACT_GELU,         /* v / 2 * (1 + erf(v / sqrt 2)) */
    RT_ACT_GELU_TANH     /* v / 2 * (1 + tanh(sqrt(2 / pi) * (v + 0.044715 v^3))) */
} RtActKind;

/* alpha and beta are ONNX float attributes: floats hold them exactly, and a float kernel
 * reads them without a double conversion (a Cortex-M4F has no double unit). */
typedef struct RtAct {
    int kind; /* RtActKind */
    float alpha, beta;
} RtAct;

/* y[i] = sigmoid(y[i]), or with silu y[i] * sigmoid(y[i]), for i < n: whole vectors of
 * rt_vmath.h's rt_vsigmoid16/8_f32 and rt_vsilu16/8_f32 (the last one masked), or the
 * portable loop of rt_vexp_nz_f32. */
RT_API void rt_act_sigmoid_row_f32(float *y, int64_t n, int silu) {
    int64_t i = 0;
#if defined(__AVX512F__) && !defined(__CUDACC__)
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(y + i);
        _mm512_storeu_ps(y + i, silu ? rt_vsilu16_f32(v) : rt_vsigmoid16_f32(v));
    }
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        const __m512 v = _mm512_maskz_loadu_ps(m, y + i);
        _mm512_mask_storeu_ps(y + i, m, silu ? rt_vsilu16_f32(v) : rt_vsigmoid16_f32(v));
    }
    return;
#elif defined(__AVX2__) && defined(__FMA__) && !defined(__CUDACC__)
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(y + i);
        _mm256_storeu_ps(y + i, silu ? rt_vsilu8_f32(v) : rt_vsigmoid8_f32(v));
    }
    if (i < n) {
        static const int32_t ones[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
        const __m256i m = _mm256_loadu_si256((const __m256i *)(const void *)(ones + 8 - (n - i)));
        const __m256 v = _mm256_maskload_ps(y + i, m);
        _mm256_maskstore_ps(y + i, m, silu ? rt_vsilu8_f32(v) : rt_vsigmoid8_f32(v));
    }
    return;
#else
    if (silu)
        for (; i < n; i++) y[i] = y[i] / (1.0f + rt_vexp_nz_f32(-y[i]));
    else
        for (; i < n; i++) y[i] = 1.0f / (1.0f + rt_vexp_nz_f32(-y[i]));
#endif
}

RT_API void rt_act_sigmoid_row_f64(double *y, int64_t n, int silu) {
    int64_t i;
    for (i = 0; i < n; i++) y[i] = (silu ? y[i] : 1.0) / (1.0 + exp(-y[i]));
}

#define RT_ACT_SQRT1_2 0.70710678118654752440
#define RT_ACT_SQRT2_PI 0.79788456080286535588 /* sqrt(2 / pi) */
#define RT_ACT_GELU_C 0.044715                 /* the cubic term of the tanh form */

#define RT_ACT_DEFINE(SFX, T, ERF, TANH)                                                       \
    /* y: (n), r: (n) or NULL; y[i] = act(y[i] + r[i]). */                                    \
    RT_API void rt_act_row_##SFX(T *y, const T *r, int64_t n, const RtAct *a) {              \
        const T al = (T)a->alpha, be = (T)a->beta;                                           \
        int64_t i;                                                                           \
        if (r)                                                                               \
            for (i = 0; i < n; i++) y[i] += r[i];                                            \
        switch (a->kind) {                                                                   \
        case RT_ACT_RELU:                                                                    \
            for (i = 0; i < n; i++) y[i] = y[i] < (T)0 ? (T)0 : y[i];                        \
            break;                                                                           \
        case RT_ACT_CLIP:                                                                    \
            for (i = 0; i < n; i++) {                                                        \
                T v = y[i] < al ? al : y[i];                                                 \
                y[i] = v > be ? be : v;                                                      \
            }                                                                                \
            break;                                                                           \
        case RT_ACT_LEAKY_RELU:                                                              \
            for (i = 0; i < n; i++) y[i] = y[i] >= (T)0 ? y[i] : al * y[i];                  \
            break;                                                                           \
        case RT_ACT_SIGMOID:                                                                 \
            rt_act_sigmoid_row_##SFX(y, n, 0);                                               \
            break;                                                                           \
        case RT_ACT_HARD_SIGMOID:                                                            \
            for (i = 0; i < n; i++) {                                                        \
                T v = al * y[i] + be;                                                        \
                y[i] = v < (T)0 ? (T)0 : v > (T)1 ? (T)1 : v;                                \
            }                                                                                \
            break;                                                                           \
        case RT_ACT_HARD_SWISH:                                                              \
            for (i = 0; i < n; i++) {                                                        \
                T v = y[i] / (T)6 + (T)0.5;                                                  \
                y[i] *= v < (T)0 ? (T)0 : v > (T)1 ? (T)1 : v;                               \
            }                                                                                \
            break;                                                                           \
        case RT_ACT_SILU:                                                                    \
            rt_act_sigmoid_row_##SFX(y, n, 1);                                               \
            break;                                                                           \
        case RT_ACT_GELU:                                                                    \
            for (i = 0; i < n; i++)                                                          \
                y[i] = (T)0.5 * y[i] * ((T)1 + ERF(y[i] * (T)RT_ACT_SQRT1_2));               \
            break;                                                                           \
        case RT_ACT_GELU_TANH:                                                               \
            for (i = 0; i < n; i++) {                                                        \
                T v = y[i];                                                                  \
                y[i] = (T)0.5 * v *                                                          \
                       ((T)1 + TANH((T)RT_ACT_SQRT2_PI * (v + (T)RT_ACT_GELU_C * v * v * v))); \
            }                                                                                \
            break;                                                                           \
        default:                                                                             \
            break;                                                                           \
        }                                                                                    \
    }                                                                                        \
    /* One value: act(v). */                                                                 \
    RT_API T rt_act_##SFX(T v, const RtAct *a) {                                             \
        rt_act_row_##SFX(&v, (const T *)0, 1, a);                                            \
        return v;                                                                            \
    }

RT_ACT_DEFINE(f32, float, rt_verf_f32, rt_vtanh_f32)
RT_ACT_DEFINE(f64, double, erf, tanh)

#undef RT_ACT_DEFINE

/* y: rows x cols, rows ld apart; y[r][j] = act(y[r][j]): a tile of a packed product
 * (rt_pgemm.h) just stored, one call a tile instead of one a row (the rows' sigmoid loops
 * inline here, where a row of 32 values paid a call and the kind's switch; measured only
 * together with the vector rows: 16->96 @112 with SiLU 0.76-0.78x, bench/kernels/pgemm.c). */
RT_API void rt_act_rows_f32(float *y, int64_t ld, int64_t rows, int64_t cols, const RtAct *a) {
    int64_t r;
    if (a->kind == RT_ACT_SIGMOID || a->kind == RT_ACT_SILU) {
        const int silu = a->kind == RT_ACT_SILU;
        for (r = 0; r < rows; r++) rt_act_sigmoid_row_f32(y + r * ld, cols, silu);
    } else {
        for (r = 0; r < rows; r++) rt_act_row_f32(y + r * ld, (const float *)0, cols, a);
    }
}

#endif
