/* rt_quant.h: integer (quantized) kernels: ConvInteger / QLinearConv (NC + up to 3 spatial
 * dims, run as 3D with leading sizes of 1) and QLinearMatMul. Products of zero-point-shifted
 * values accumulate in int64 and are taken modulo 2^32 into int32 (ONNX Runtime's int32
 * accumulator wraps); the QLinear forms then requantize each sum as
 * ONNX's reference does: y = saturate(round_half_even(acc * mult + y_zp)) with the multiplier
 * x_scale * w_scale / y_scale computed in the scales' own type (rt_qscale_*). C99. */
#ifndef KILN_RT_QUANT_H
#define KILN_RT_QUANT_H

#include "rt_common.h"

#define RT_QCONV_SPATIAL 3 /* (D,H,W): 1D and 2D convolutions use leading sizes of 1 */

typedef struct RtQConvGeom {
    int64_t n, c, m, group;        /* batch, input channels, output channels, groups */
    int64_t in[RT_QCONV_SPATIAL];  /* input spatial sizes */
    int64_t out[RT_QCONV_SPATIAL]; /* output spatial sizes */
    int64_t k[RT_QCONV_SPATIAL];   /* kernel */
    int64_t s[RT_QCONV_SPATIAL];   /* strides */
    int64_t d[RT_QCONV_SPATIAL];   /* dilations */
    int64_t pad[RT_QCONV_SPATIAL]; /* leading pads (trailing ones follow from out) */
} RtQConvGeom;

/* The requantization multiplier a * b / c, each step rounded to the scales' type. */
RT_API double rt_qscale_f32(float a, float b, float c) { return (double)(a * b / c); }

RT_API double rt_qscale_f16(uint16_t a, uint16_t b, uint16_t c) {
    float ab = rt_f16_to_f32(rt_f32_to_f16(rt_f16_to_f32(a) * rt_f16_to_f32(b)));
    return (double)rt_f16_to_f32(rt_f32_to_f16(ab / rt_f16_to_f32(c)));
}

RT_API double rt_qscale_bf16(uint16_t a, uint16_t b, uint16_t c) {
    float ab = rt_bf16_to_f32(rt_f32_to_bf16(rt_bf16_to_f32(a) * rt_bf16_to_f32(b)));
    return (double)rt_bf16_to_f32(rt_f32_to_bf16(ab / rt_bf16_to_f32(c)));
}

/* Requantizes one int32 sum to [lo, hi]: round half to even (nearbyint in the default
 * rounding mode), then saturate. */
RT_API int32_t rt_requant(int32_t acc, double mult, int32_t zp, int32_t lo, int32_t hi) {
    double v = nearbyint((double)acc * mult + (double)zp);
    return v < (double)lo ? lo : v > (double)hi ? hi : (int32_t)v;
}

/* The store of one output element of channel m: raw int32 (ConvInteger) or requantized. */
#define RT_QSTORE_I32(y, acc, mult, m, zp) ((y) = (acc))
#define RT_QSTORE_U8(y, acc, mult, m, zp) ((y) = (uint8_t)rt_requant(acc, mult[m], zp, 0, 255))
#define RT_QSTORE_I8(y, acc, mult, m, zp) ((y) = (int8_t)rt_requant(acc, mult[m], zp, -128, 127))

/* Defines rt_qconv_SFX: y = conv(x - x_zp, w - w_zp[m * w_zp_step]) + bias, stored by STORE.
 * x: (N,C,D,H,W), w: (M,C/group,KD,KH,KW), bias: (M) int32 or NULL, mult: requantization
 * multiplier per output channel (mult[m * mult_step]; ignored by the int32 store),
 * y: (N,M,OD,OH,OW). Padding contributes zero (it stands for x_zp). */
#define RT_QCONV_DEFINE(SFX, TX, TW, TY, STORE)                                                 \
    RT_API void rt_qconv_##SFX(const TX *x, int32_t x_zp, const TW *w, const TW *w_zp,          \
                               int64_t w_zp_step, const int32_t *bias, const double *mult,      \
                               int64_t mult_step, int32_t y_zp, TY *y, const RtQConvGeom *g) {  \
        int64_t cg = g->c / g->group, mg = g->m / g->group;                                     \
        int64_t in_plane = g->in[0] * g->in[1] * g->in[2];                                      \
        int64_t out_plane = g->out[0] * g->out[1] * g->out[2];                                  \
        int64_t kvol = g->k[0] * g->k[1] * g->k[2];                                             \
        int64_t b, m, od, oh, ow, c, kd, kh, kw;                                                \
        (void)mult;                                                                             \
        (void)mult_step;                                                                        \
        (void)y_zp;                                                                             \
        for (b = 0; b < g->n; b++)                                                              \
            for (m = 0; m < g->m; m++) {                                                        \
                int64_t grp = m / mg;                                                           \
                int32_t wz = w_zp ? (int32_t)w_zp[m * w_zp_step] : 0;                           \
                const TW *wm = w + m * cg * kvol;                                               \
                TY *ym = y + (b * g->m + m) * out_plane;                                        \
                for (od = 0; od < g->out[0]; od++)                                              \
                    for (oh = 0; oh < g->out[1]; oh++)                                          \
                        for (ow = 0; ow < g->out[2]; ow++) {                                    \
                            int64_t acc = bias ? bias[m] : 0;                                   \
                            for (c = 0; c < cg; c++) {                                          \
                                const TX *xc = x + (b * g->c + grp * cg + c) * in_plane;        \
                                const TW *wc = wm + c * kvol;                                   \
                                for (kd = 0; kd < g->k[0]; kd++) {                              \
                                    int64_t id = od * g->s[0] + kd * g->d[0] - g->pad[0];       \
                                    if (id < 0 || id >= g->in[0]) continue;                     \
                                    for (kh = 0; kh < g->k[1]; kh++) {                          \
                                        int64_t ih = oh * g->s[1] + kh * g->d[1] - g->pad[1];   \
                                        if (ih < 0 || ih >= g->in[1]) continue;                 \
                                        for (kw = 0; kw < g->k[2]; kw++) {                      \
                                            int64_t iw =                                        \
                                                ow * g->s[2] + kw * g->d[2] - g->pad[2];        \
                                            int32_t xv, wv;                                     \
                                            if (iw < 0 || iw >= g->in[2]) continue;             \
                                            xv = (int32_t)xc[(id * g->in[1] + ih) * g->in[2] +  \
                                                             iw] - x_zp;                        \
                                            wv = (int32_t)wc[(kd * g->k[1] + kh) * g->k[2] +    \
                                                             kw] - wz;                          \
                                            acc += (int64_t)xv * wv;                            \
                                        }                                                       \
                                    }                                                           \
                                }                                                               \
                            }                                                                   \
                            STORE(ym[(od * g->out[1] + oh) * g->out[2] + ow], (int32_t)acc,    \
                                  mult, m * mult_step, y_zp);                                   \
                        }                                                                       \
            }                                                                                   \
    }

/* Defines rt_qmatmul_SFX for one matrix: y = (a - a_zp) @ (b - b_zp[j * b_zp_step]).
 * a: (M,K), b: (K,N), y: (M,N); mult: per column (mult[j * mult_step]). */
#define RT_QMATMUL_DEFINE(SFX, TA, TB, TY, STORE)                                               \
    RT_API void rt_qmatmul_##SFX(int64_t M, int64_t N, int64_t K, const TA *a, int32_t a_zp,    \
                                 const TB *b, const TB *b_zp, int64_t b_zp_step,                \
                                 const double *mult, int64_t mult_step, int32_t y_zp, TY *y) {  \
        int64_t i, j, k;                                                                        \
        (void)mult;                                                                             \
        (void)mult_step;                                                                        \
        (void)y_zp;                                                                             \
        for (i = 0; i < M; i++)                                                                 \
            for (j = 0; j < N; j++) {                                                           \
                int32_t bz = b_zp ? (int32_t)b_zp[j * b_zp_step] : 0;                           \
                int64_t acc = 0;                                                                \
                for (k = 0; k < K; k++)                                                         \
                    acc += (int64_t)((int32_t)a[i * K + k] - a_zp) * ((int32_t)b[k * N + j] - bz); \
                STORE(y[i * N + j], (int32_t)acc, mult, j * mult_step, y_zp);                   \
            }                                                                                   \
    }

#define RT_QUANT_DEFINE_ALL(XW, TX, TW)                                                         \
    RT_QCONV_DEFINE(XW##_i32, TX, TW, int32_t, RT_QSTORE_I32)                                   \
    RT_QCONV_DEFINE(XW##_u8, TX, TW, uint8_t, RT_QSTORE_U8)                                     \
    RT_QCONV_DEFINE(XW##_i8, TX, TW, int8_t, RT_QSTORE_I8)                                      \
    RT_QMATMUL_DEFINE(XW##_u8, TX, TW, uint8_t, RT_QSTORE_U8)                                   \
    RT_QMATMUL_DEFINE(XW##_i8, TX, TW, int8_t, RT_QSTORE_I8)

RT_QUANT_DEFINE_ALL(u8u8, uint8_t, uint8_t)
RT_QUANT_DEFINE_ALL(u8i8, uint8_t, int8_t)
RT_QUANT_DEFINE_ALL(i8u8, int8_t, uint8_t)
RT_QUANT_DEFINE_ALL(i8i8, int8_t, int8_t)

#endif
