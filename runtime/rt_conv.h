/* rt_conv.h: Conv and ConvTranspose over NC + up to 3 spatial dims (1D and 2D are run as 3D
 * with leading sizes of 1). float and double use a direct "weight-stationary" loop: for each
 * weight tap, a strided axpy along output rows, four output channels at a time, so the
 * innermost loop streams one input row into four output rows and vectorizes. float16 and
 * bfloat16 gather per output element and accumulate in float. The geometry is resolved at
 * compile time (auto_pad, output_shape) into RtConvGeom: only leading pads remain. C99. */
#ifndef KILN_RT_CONV_H
#define KILN_RT_CONV_H

#include "rt_act.h"
#include "rt_common.h"

#define RT_CONV_SPATIAL 3 /* (D,H,W): 1D and 2D convolutions use leading sizes of 1 */
#define RT_CONV_BLOCK_M 4 /* output channels per axpy pass: 4 reuses of each input load */

typedef struct RtConvGeom {
    int64_t n, c, m, group;          /* batch, input channels, output channels, groups */
    int64_t in[RT_CONV_SPATIAL];     /* input spatial sizes */
    int64_t out[RT_CONV_SPATIAL];    /* output spatial sizes */
    int64_t k[RT_CONV_SPATIAL];      /* kernel */
    int64_t s[RT_CONV_SPATIAL];      /* strides */
    int64_t d[RT_CONV_SPATIAL];      /* dilations */
    int64_t pad[RT_CONV_SPATIAL];    /* leading pads (trailing ones follow from out) */
} RtConvGeom;

/* The range [lo, hi) of o in [0, n_o) with 0 <= o * s + off < n_i (s > 0). */
RT_API void rt_conv_range(int64_t n_i, int64_t n_o, int64_t s, int64_t off, int64_t *lo,
                          int64_t *hi) {
    int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t top = n_i - 1 - off;
    int64_t h = top < 0 ? 0 : top / s + 1;
    if (h > n_o) h = n_o;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

/* ConvTranspose as a per-output gather with an ACC accumulator: every output element sums
 * the input taps that reach it, so elements are independent (RT_FOR_EACH: the CUDA backend
 * runs it on one thread per element). The float16/bfloat16 kernels, and float/double
 * compiled for the GPU; float/double in C scatter instead (below), which vectorizes.
 * x: (N,C,D,H,W), w: (C,M/group,KD,KH,KW), b: (M) or NULL, y: (N,M,OD,OH,OW) */
#define RT_CONV_TRANSPOSE_GATHER_DEFINE(SFX, T, ACC, LOAD, STORE)                             \
    RT_API void rt_conv_transpose_gather_##SFX(const T *x, const T *w, const T *b, T *y,      \
                                               const RtConvGeom *g) {                         \
        const int64_t cg = g->c / g->group, mg = g->m / g->group;                             \
        const int64_t n_out = g->n * g->m * g->out[0] * g->out[1] * g->out[2];                \
        int64_t e, o[RT_CONV_SPATIAL], i[RT_CONV_SPATIAL], k[RT_CONV_SPATIAL], ci;             \
        int a;                                                                                \
        RT_FOR_EACH(e, n_out) {                                                               \
            int64_t rest = e, n, mm, grp, mo;                                                 \
            ACC acc;                                                                          \
            for (a = RT_CONV_SPATIAL - 1; a >= 0; a--) {                                      \
                o[a] = rest % g->out[a];                                                      \
                rest /= g->out[a];                                                            \
            }                                                                                 \
            mm = rest % g->m;                                                                 \
            n = rest / g->m;                                                                  \
            grp = mm / mg;                                                                    \
            mo = mm % mg;                                                                     \
            acc = b ? LOAD(b[mm]) : (ACC)0;                                                   \
            for (k[0] = 0; k[0] < g->k[0]; k[0]++)                                            \
                for (k[1] = 0; k[1] < g->k[1]; k[1]++)                                        \
                    for (k[2] = 0; k[2] < g->k[2]; k[2]++) {                                  \
                        int ok = 1;                                                           \
                        for (a = 0; a < RT_CONV_SPATIAL && ok; a++) {                         \
                            int64_t t = o[a] + g->pad[a] - k[a] * g->d[a];                    \
                            ok = t >= 0 && t % g->s[a] == 0 && t / g->s[a] < g->in[a];        \
                            i[a] = ok ? t / g->s[a] : 0;                                      \
                        }                                                                     \
                        if (!ok) continue;                                                    \
                        for (ci = 0; ci < cg; ci++)                                           \
                            acc += LOAD(x[(((n * g->c + grp * cg + ci) * g->in[0] + i[0]) *   \
                                               g->in[1] + i[1]) * g->in[2] + i[2]]) *         \
                                   LOAD(w[((((grp * cg + ci) * mg + mo) * g->k[0] + k[0]) *   \
                                               g->k[1] + k[1]) * g->k[2] + k[2]]);            \
                    }                                                                         \
            y[e] = STORE(acc);                                                                \
        }                                                                                     \
    }

#define RT_CONV_ID(v) (v)

#define RT_CONV_DEFINE_DIRECT(SFX, T)                                                         \
    /* y[0..len) += w * x[0, s, 2s..] for nb (1..4) output rows at once. */                   \
    RT_API void rt_conv_rows_##SFX(T *const *yr, const T *w, int nb, const T *xs, int64_t s,  \
                                   int64_t len) {                                             \
        int64_t i;                                                                            \
        int j;                                                                                \
        if (nb == RT_CONV_BLOCK_M) {                                                          \
            T *restrict y0 = yr[0], *restrict y1 = yr[1];                                     \
            T *restrict y2 = yr[2], *restrict y3 = yr[3];                                     \
            const T *restrict xv = xs;                                                        \
            const T w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];                               \
            if (s == 1) {                                                                     \
                for (i = 0; i < len; i++) {                                                   \
                    const T v = xv[i];                                                        \
                    y0[i] += w0 * v;                                                          \
                    y1[i] += w1 * v;                                                          \
                    y2[i] += w2 * v;                                                          \
                    y3[i] += w3 * v;                                                          \
                }                                                                             \
                return;                                                                       \
            }                                                                                 \
            for (i = 0; i < len; i++) {                                                       \
                const T v = xv[i * s];                                                        \
                y0[i] += w0 * v;                                                              \
                y1[i] += w1 * v;                                                              \
                y2[i] += w2 * v;                                                              \
                y3[i] += w3 * v;                                                              \
            }                                                                                 \
            return;                                                                           \
        }                                                                                     \
        for (j = 0; j < nb; j++) {                                                            \
            T *restrict y0 = yr[j];                                                           \
            const T *restrict xv = xs;                                                        \
            const T w0 = w[j];                                                                \
            for (i = 0; i < len; i++) y0[i] += w0 * xv[i * s];                                \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* Adds tap (d_off, h_off, w_off: the tap's input offsets) to output columns [c_lo, c_hi) \
     * of every output row that it reaches. yb: the nb output planes; xp: the input plane. */ \
    RT_API void rt_conv_tap_##SFX(const RtConvGeom *g, const T *xp, T *const *yb, int nb,     \
                                  const T *wt, int64_t d_off, int64_t h_off,                  \
                                  int64_t w_off, int64_t c_lo, int64_t c_hi) {                \
        int64_t d_lo, d_hi, h_lo, h_hi, od, oh;                                               \
        T *yr[RT_CONV_BLOCK_M];                                                               \
        int j;                                                                                \
        if (c_lo >= c_hi) return;                                                             \
        rt_conv_range(g->in[0], g->out[0], g->s[0], d_off, &d_lo, &d_hi);                     \
        rt_conv_range(g->in[1], g->out[1], g->s[1], h_off, &h_lo, &h_hi);                     \
        for (od = d_lo; od < d_hi; od++) {                                                    \
            const int64_t id = od * g->s[0] + d_off;                                          \
            for (oh = h_lo; oh < h_hi; oh++) {                                                \
                const int64_t ih = oh * g->s[1] + h_off;                                      \
                const int64_t orow = (od * g->out[1] + oh) * g->out[2] + c_lo;                \
                const T *xs = xp + (id * g->in[1] + ih) * g->in[2] + c_lo * g->s[2] + w_off;  \
                for (j = 0; j < nb; j++) yr[j] = yb[j] + orow;                                \
                rt_conv_rows_##SFX(yr, wt, nb, xs, g->s[2], c_hi - c_lo);                     \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* x: (N,C,D,H,W), w: (M,C/group,KD,KH,KW), b: (M) or NULL, r: (N,M,OD,OH,OW) or NULL,   \
     * y: (N,M,OD,OH,OW). y = act(conv(x, w) + b + r); act NULL: none. The epilogue runs on   \
     * each block of output planes right after it is complete, while it is in cache. */        \
    RT_API void rt_conv_fused_##SFX(const T *x, const T *w, const T *b, const T *r, T *y,      \
                                    const RtConvGeom *g, const RtAct *act) {                  \
        const int64_t cg = g->c / g->group, mg = g->m / g->group;                             \
        const int64_t isz = g->in[0] * g->in[1] * g->in[2];                                   \
        const int64_t osz = g->out[0] * g->out[1] * g->out[2];                                \
        const int64_t ksz = g->k[0] * g->k[1] * g->k[2];                                      \
        const RtAct no_act = {RT_ACT_NONE, 0.0f, 0.0f}; /* a residual without activation */     \
        int64_t n, m0, ci, kd, kh, kw, p;                                                     \
        for (n = 0; n < g->n; n++) {                                                          \
            for (m0 = 0; m0 < g->m;) {                                                        \
                const int64_t grp = m0 / mg, left = mg - m0 % mg;                             \
                const int nb = left < RT_CONV_BLOCK_M ? (int)left : RT_CONV_BLOCK_M;          \
                T *yb[RT_CONV_BLOCK_M];                                                       \
                T wt[RT_CONV_BLOCK_M];                                                        \
                int j;                                                                        \
                for (j = 0; j < nb; j++) {                                                    \
                    const T bv = b ? b[m0 + j] : (T)0;                                        \
                    yb[j] = y + (n * g->m + m0 + j) * osz;                                    \
                    for (p = 0; p < osz; p++) yb[j][p] = bv;                                  \
                }                                                                             \
                for (ci = 0; ci < cg; ci++) {                                                 \
                    const T *xp = x + (n * g->c + grp * cg + ci) * isz;                       \
                    for (kd = 0; kd < g->k[0]; kd++) {                                        \
                        const int64_t d_off = kd * g->d[0] - g->pad[0];                       \
                        for (kh = 0; kh < g->k[1]; kh++) {                                    \
                            const int64_t h_off = kh * g->d[1] - g->pad[1];                   \
                            const T *wk =                                                     \
                                w + (m0 * cg + ci) * ksz + (kd * g->k[1] + kh) * g->k[2];     \
                            for (kw = 0; kw < g->k[2]; kw++) {                                \
                                int64_t lo, hi;                                               \
                                const int64_t w_off = kw * g->d[2] - g->pad[2];               \
                                rt_conv_range(g->in[2], g->out[2], g->s[2], w_off, &lo, &hi); \
                                for (j = 0; j < nb; j++) wt[j] = wk[j * cg * ksz + kw];       \
                                rt_conv_tap_##SFX(g, xp, yb, nb, wt, d_off, h_off, w_off, lo, \
                                                  hi);                                        \
                            }                                                                 \
                        }                                                                     \
                    }                                                                         \
                }                                                                             \
                if (act || r)                                                                 \
                    for (j = 0; j < nb; j++)                                                  \
                        rt_act_row_##SFX(yb[j], r ? r + (n * g->m + m0 + j) * osz : NULL, osz, \
                                         act ? act : &no_act);                                 \
                m0 += nb;                                                                     \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* x: (N,C,D,H,W), w: (M,C/group,KD,KH,KW), b: (M) or NULL, y: (N,M,OD,OH,OW) */          \
    RT_API void rt_conv_##SFX(const T *x, const T *w, const T *b, T *y, const RtConvGeom *g) { \
        rt_conv_fused_##SFX(x, w, b, NULL, y, g, NULL);                                       \
    }                                                                                         \
                                                                                              \
    /* x: (N,C,D,H,W), w: (C,M/group,KD,KH,KW), b: (M) or NULL, y: (N,M,OD,OH,OW) */          \
    RT_API void rt_conv_transpose_##SFX(const T *x, const T *w, const T *b, T *y,             \
                                        const RtConvGeom *g) {                                \
        const int64_t cg = g->c / g->group, mg = g->m / g->group;                             \
        if (RT_ON_DEVICE) { /* one thread per output element there: the gather */             \
            rt_conv_transpose_gather_##SFX(x, w, b, y, g);                                    \
            return;                                                                           \
        }                                                                                     \
        const int64_t isz = g->in[0] * g->in[1] * g->in[2];                                   \
        const int64_t osz = g->out[0] * g->out[1] * g->out[2];                                \
        const int64_t ksz = g->k[0] * g->k[1] * g->k[2];                                      \
        int64_t n, mm, ci, kd, kh, kw, id, ih, iw, p;                                         \
        for (n = 0; n < g->n; n++) {                                                          \
            for (mm = 0; mm < g->m; mm++) {                                                   \
                const int64_t grp = mm / mg, mo = mm % mg;                                    \
                T *restrict yp = y + (n * g->m + mm) * osz;                                   \
                const T bv = b ? b[mm] : (T)0;                                                \
                for (p = 0; p < osz; p++) yp[p] = bv;                                         \
                for (ci = 0; ci < cg; ci++) {                                                 \
                    const T *restrict xp = x + (n * g->c + grp * cg + ci) * isz;              \
                    const T *wp = w + ((grp * cg + ci) * mg + mo) * ksz;                      \
                    for (kd = 0; kd < g->k[0]; kd++) {                                        \
                        int64_t d_lo, d_hi, d_off = kd * g->d[0] - g->pad[0];                 \
                        rt_conv_range(g->out[0], g->in[0], g->s[0], d_off, &d_lo, &d_hi);     \
                        for (kh = 0; kh < g->k[1]; kh++) {                                    \
                            int64_t h_lo, h_hi, h_off = kh * g->d[1] - g->pad[1];             \
                            rt_conv_range(g->out[1], g->in[1], g->s[1], h_off, &h_lo, &h_hi); \
                            for (kw = 0; kw < g->k[2]; kw++) {                                \
                                int64_t w_lo, w_hi, w_off = kw * g->d[2] - g->pad[2];         \
                                const T wv = wp[(kd * g->k[1] + kh) * g->k[2] + kw];          \
                                rt_conv_range(g->out[2], g->in[2], g->s[2], w_off, &w_lo,     \
                                              &w_hi);                                         \
                                for (id = d_lo; id < d_hi; id++) {                            \
                                    const int64_t od = id * g->s[0] + d_off;                  \
                                    for (ih = h_lo; ih < h_hi; ih++) {                        \
                                        const int64_t oh = ih * g->s[1] + h_off;              \
                                        T *restrict yr = yp + (od * g->out[1] + oh) * g->out[2]; \
                                        const T *restrict xr =                                \
                                            xp + (id * g->in[1] + ih) * g->in[2];             \
                                        for (iw = w_lo; iw < w_hi; iw++)                      \
                                            yr[iw * g->s[2] + w_off] += wv * xr[iw];          \
                                    }                                                         \
                                }                                                             \
                            }                                                                 \
                        }                                                                     \
                    }                                                                         \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
    }

/* Per-output gather with a float accumulator, for 16-bit float types. */
#define RT_CONV_DEFINE_GATHER(SFX, LOAD, STORE)                                               \
    /* x: (N,C,D,H,W), w: (M,C/group,KD,KH,KW), b: (M) or NULL, y: (N,M,OD,OH,OW) */          \
    RT_API void rt_conv_##SFX(const uint16_t *x, const uint16_t *w, const uint16_t *b,        \
                              uint16_t *y, const RtConvGeom *g) {                             \
        const int64_t cg = g->c / g->group, mg = g->m / g->group;                             \
        int64_t n, mm, o[RT_CONV_SPATIAL], ci, kd, kh, kw;                                    \
        uint16_t *yp = y;                                                                     \
        for (n = 0; n < g->n; n++)                                                            \
            for (mm = 0; mm < g->m; mm++)                                                     \
                for (o[0] = 0; o[0] < g->out[0]; o[0]++)                                      \
                    for (o[1] = 0; o[1] < g->out[1]; o[1]++)                                  \
                        for (o[2] = 0; o[2] < g->out[2]; o[2]++) {                            \
                            float acc = b ? LOAD(b[mm]) : 0.0f;                               \
                            const int64_t grp = mm / mg;                                      \
                            for (ci = 0; ci < cg; ci++)                                       \
                                for (kd = 0; kd < g->k[0]; kd++) {                            \
                                    int64_t id = o[0] * g->s[0] + kd * g->d[0] - g->pad[0];   \
                                    if (id < 0 || id >= g->in[0]) continue;                   \
                                    for (kh = 0; kh < g->k[1]; kh++) {                        \
                                        int64_t ih = o[1] * g->s[1] + kh * g->d[1] - g->pad[1]; \
                                        if (ih < 0 || ih >= g->in[1]) continue;               \
                                        for (kw = 0; kw < g->k[2]; kw++) {                    \
                                            int64_t iw =                                      \
                                                o[2] * g->s[2] + kw * g->d[2] - g->pad[2];    \
                                            if (iw < 0 || iw >= g->in[2]) continue;           \
                                            acc += LOAD(x[(((n * g->c + grp * cg + ci) *      \
                                                                g->in[0] + id) * g->in[1] +   \
                                                               ih) * g->in[2] + iw]) *        \
                                                   LOAD(w[(((mm * cg + ci) * g->k[0] + kd) *  \
                                                               g->k[1] + kh) * g->k[2] + kw]); \
                                        }                                                     \
                                    }                                                         \
                                }                                                             \
                            *yp++ = STORE(acc);                                               \
                        }                                                                     \
    }                                                                                         \
                                                                                              \
    /* x: (N,C,D,H,W), w: (C,M/group,KD,KH,KW), b: (M) or NULL, y: (N,M,OD,OH,OW) */          \
    RT_API void rt_conv_transpose_##SFX(const uint16_t *x, const uint16_t *w,                 \
                                        const uint16_t *b, uint16_t *y, const RtConvGeom *g) { \
        rt_conv_transpose_gather_##SFX(x, w, b, y, g);                                        \
    }

RT_CONV_TRANSPOSE_GATHER_DEFINE(f32, float, float, RT_CONV_ID, RT_CONV_ID)
RT_CONV_TRANSPOSE_GATHER_DEFINE(f64, double, double, RT_CONV_ID, RT_CONV_ID)
RT_CONV_TRANSPOSE_GATHER_DEFINE(f16, uint16_t, float, rt_f16_to_f32, rt_f32_to_f16)
RT_CONV_TRANSPOSE_GATHER_DEFINE(bf16, uint16_t, float, rt_bf16_to_f32, rt_f32_to_bf16)
RT_CONV_DEFINE_DIRECT(f32, float)
RT_CONV_DEFINE_DIRECT(f64, double)
RT_CONV_DEFINE_GATHER(f16, rt_f16_to_f32, rt_f32_to_f16)
RT_CONV_DEFINE_GATHER(bf16, rt_bf16_to_f32, rt_f32_to_bf16)

#undef RT_CONV_DEFINE_DIRECT
#undef RT_CONV_DEFINE_GATHER

#endif
