/* rt_conv_nhwc.h: channels-last (NHWC) Conv with the fused bias/residual/activation epilogue,
 * for the values passes/layout.c stores NHWC. Weights come rewritten at compile time to
 * (KH,KW,C/group,M) ("RSCK"), so output channels are innermost everywhere: the kernel keeps
 * a register tile of RT_CNHWC_TILE_P output pixels x RT_CNHWC_TILE_M output channels and
 * streams the (kh, kw, c) reduction through it (one weight row load feeds TILE_P pixels).
 * Depthwise convolutions (C/group = 1) take their own loop, vectorized along channels.
 * Geometry is RtConvGeom of rt_conv.h with in[0] = out[0] = k[0] = 1 (2-D). C99. */
#ifndef KILN_RT_CONV_NHWC_H
#define KILN_RT_CONV_NHWC_H

#include "rt_act.h"
#include "rt_common.h"
#include "rt_conv.h"
#include "rt_par.h"

#define RT_CNHWC_TILE_P 4 /* output pixels per tile: 4 broadcasts per weight row load */
#define RT_CNHWC_TILE_M 8 /* output channels per tile: 4 x 8 accumulators fit 8 SSE or 4 AVX
                             registers, with room for the weight row and a broadcast */

/* The f32 tile with GCC/Clang vector extensions (portable C99 below otherwise, and under
 * nvcc, whose device code has no such vectors): one RT_CNHWC_TILE_M-wide vector accumulator
 * per pixel, whatever the target's SIMD width (the compiler splits it into the registers it
 * has). Plain loops get vectorized along the wrong axis at -O3, which spills the
 * accumulators. */
#if defined(__GNUC__) && !defined(RT_NO_VECTOR_EXT) && !defined(__CUDACC__)
#define RT_CNHWC_VEC 1
typedef float rt_cnhwc_v8f __attribute__((vector_size(RT_CNHWC_TILE_M * sizeof(float))));
RT_API void rt_conv_nhwc_tile4x8_f32(int64_t cg, int64_t M, const float *const *xp,
                                     const float *wp, int64_t kh_n, int64_t kw_n, int64_t xrow,
                                     int64_t xcol, int64_t wrow, int64_t wcol,
                                     float acc[][RT_CNHWC_TILE_M]) {
    rt_cnhwc_v8f a0, a1, a2, a3;
    int64_t kh, kw, c;
    memcpy(&a0, acc[0], sizeof a0);
    memcpy(&a1, acc[1], sizeof a1);
    memcpy(&a2, acc[2], sizeof a2);
    memcpy(&a3, acc[3], sizeof a3);
    for (kh = 0; kh < kh_n; kh++)
        for (kw = 0; kw < kw_n; kw++) {
            const float *w0 = wp + kh * wrow + kw * wcol;
            const int64_t xo = kh * xrow + kw * xcol;
            const float *x0 = xp[0] + xo, *x1 = xp[1] + xo, *x2 = xp[2] + xo, *x3 = xp[3] + xo;
            for (c = 0; c < cg; c++) {
                rt_cnhwc_v8f wv;
                memcpy(&wv, w0 + c * M, sizeof wv);
                a0 += x0[c] * wv;
                a1 += x1[c] * wv;
                a2 += x2[c] * wv;
                a3 += x3[c] * wv;
            }
        }
    memcpy(acc[0], &a0, sizeof a0);
    memcpy(acc[1], &a1, sizeof a1);
    memcpy(acc[2], &a2, sizeof a2);
    memcpy(acc[3], &a3, sizeof a3);
}

/* rt_conv_nhwc_dw8_f32's step: 4 blocks of L channels from m0 (VT: a vector of L floats), the
 * pixel's taps summed into 4 independent chains, bias first; the AVX-512 blocks of 16 and the
 * 8-channel tiles are this same loop. */
#define RT_CNHWC_DW_EDGE4(VT, L)                                                                \
    do {                                                                                       \
        VT a0, a1, a2, a3, xv, wv;                                                             \
        if (b) {                                                                               \
            memcpy(&a0, b + m0, sizeof a0);                                                    \
            memcpy(&a1, b + m0 + (L), sizeof a1);                                              \
            memcpy(&a2, b + m0 + 2 * (L), sizeof a2);                                          \
            memcpy(&a3, b + m0 + 3 * (L), sizeof a3);                                          \
        } else {                                                                               \
            memset(&a0, 0, sizeof a0);                                                         \
            a1 = a2 = a3 = a0;                                                                 \
        }                                                                                      \
        for (kh = kh_lo; kh < kh_hi; kh++) {                                                   \
            const int64_t ih = oh * g->s[1] - g->pad[1] + kh * g->d[1];                        \
            for (kw = kw_lo; kw < kw_hi; kw++) {                                               \
                const int64_t iw = ow * g->s[2] - g->pad[2] + kw * g->d[2];                    \
                const float *xr = xn + (ih * g->in[2] + iw) * M + m0;                          \
                const float *wr = w + (kh * g->k[2] + kw) * M + m0;                            \
                memcpy(&xv, xr, sizeof xv);                                                    \
                memcpy(&wv, wr, sizeof wv);                                                    \
                a0 += xv * wv;                                                                 \
                memcpy(&xv, xr + (L), sizeof xv);                                              \
                memcpy(&wv, wr + (L), sizeof wv);                                              \
                a1 += xv * wv;                                                                 \
                memcpy(&xv, xr + 2 * (L), sizeof xv);                                          \
                memcpy(&wv, wr + 2 * (L), sizeof wv);                                          \
                a2 += xv * wv;                                                                 \
                memcpy(&xv, xr + 3 * (L), sizeof xv);                                          \
                memcpy(&wv, wr + 3 * (L), sizeof wv);                                          \
                a3 += xv * wv;                                                                 \
            }                                                                                  \
        }                                                                                      \
        memcpy(yp + m0, &a0, sizeof a0);                                                       \
        memcpy(yp + m0 + (L), &a1, sizeof a1);                                                 \
        memcpy(yp + m0 + 2 * (L), &a2, sizeof a2);                                             \
        memcpy(yp + m0 + 3 * (L), &a3, sizeof a3);                                             \
    } while (0)

/* Depthwise, multiplier 1, M a multiple of the tile: one pixel whose taps [kh_lo, kh_hi) x
 * [kw_lo, kw_hi) are inside the input, 4 channel blocks of 8 at a time where they fit (4
 * independent FMA chains: one block at a time waits on the FMA latency every tap). */
RT_API void rt_conv_nhwc_dw8_f32(const RtConvGeom *g, const float *xn, const float *w,
                                 const float *b, float *yp, int64_t oh, int64_t ow, int64_t kh_lo,
                                 int64_t kh_hi, int64_t kw_lo, int64_t kw_hi) {
    const int64_t M = g->m, T = RT_CNHWC_TILE_M;
    int64_t m0 = 0, kh, kw;
#if defined(__AVX512F__)
    /* blocks of 16 on AVX-512 where the run's tiles take them (rt_conv_nhwc_dw_runk_f32):
     * EfficientNet's 7x7 layers of 5x5 kernels put 4 of a row's 7 pixels here */
    {
        typedef float v16f __attribute__((vector_size(16 * sizeof(float))));
        for (; M % 16 == 0 && M > 32 && m0 + 64 <= M; m0 += 64) RT_CNHWC_DW_EDGE4(v16f, 16);
    }
#endif
    for (; m0 + 4 * T <= M; m0 += 4 * T) RT_CNHWC_DW_EDGE4(rt_cnhwc_v8f, T);
    for (; m0 < M; m0 += T) {
        rt_cnhwc_v8f a, xv, wv;
        if (b) memcpy(&a, b + m0, sizeof a);
        else memset(&a, 0, sizeof a);
        for (kh = kh_lo; kh < kh_hi; kh++) {
            const int64_t ih = oh * g->s[1] - g->pad[1] + kh * g->d[1];
            for (kw = kw_lo; kw < kw_hi; kw++) {
                const int64_t iw = ow * g->s[2] - g->pad[2] + kw * g->d[2];
                memcpy(&xv, xn + (ih * g->in[2] + iw) * M + m0, sizeof xv);
                memcpy(&wv, w + (kh * g->k[2] + kw) * M + m0, sizeof wv);
                a += xv * wv;
            }
        }
        memcpy(yp + m0, &a, sizeof a);
    }
}
/* Depthwise, multiplier 1, M a multiple of 8, unit dilation: a tile of NP (<= 8)
 * neighbouring output pixels of one row, whose every kw tap is inside the input, times 8
 * channels; KW and the stride S are compile-time in each caller (rt_conv_nhwc_dw_run_f32),
 * so the loops unroll and the tile stays in registers: NP accumulators (8 of them cover the
 * FMA latency of two pipes), the KW weight vectors of the row kh, and one input vector,
 * loaded once per input column and fed to every pixel whose taps read it ((NP-1)*S + KW
 * loads for NP*KW FMAs, where one pixel at a time reloads NP*KW). x0: the input pixel of
 * pixel 0's tap (kh_lo, 0) at the block's first channel; w0: tap (kh_lo, 0) of the block;
 * xrow, wrow: one kh further; y: pixel 0's output at the block. Floor of a layer: OH*OW*M*
 * KH*KW FMAs, and its input and output moved once (a 3x3 layer makes 2.25 FMAs a byte of
 * output: most depthwise layers are bound by memory, bench/kernels/dw.c). */
#define RT_CNHWC_DW_NP 8 /* output pixels a tile: 8 independent FMA chains */
#if defined(__GNUC__) && !defined(__clang__)
#define RT_CNHWC_UNROLL _Pragma("GCC unroll 32")
#else
#define RT_CNHWC_UNROLL
#endif
/* One tile (see above) for a vector type VT of the tile's channels: 8 (rt_cnhwc_v8f). Where
 * the bundle is built for AVX-512 and M is a multiple of 16 from 32, the tiles of 16 channels
 * in intrinsics below take the row (rt_conv_nhwc_dwz_f32; a vector-extension form of this
 * tile for 16 channels, rt_conv_nhwc_dwk16_f32, ran before them). */
#define RT_CNHWC_DWK_DEFINE(NAME, VT)                                                           \
    static inline __attribute__((always_inline)) void NAME(                                   \
        const float *x0, const float *w0, const float *b, float *y, int64_t M, int64_t xrow,  \
        int64_t wrow, int64_t n_kh, const int KW, const int S, const int NP) {                \
        VT acc[RT_CNHWC_DW_NP], wv[5], xv;                                                    \
        int64_t kh;                                                                           \
        int p, j, kw;                                                                         \
        RT_CNHWC_UNROLL for (p = 0; p < NP; p++) {                                            \
            if (b) memcpy(&acc[p], b, sizeof acc[p]);                                         \
            else memset(&acc[p], 0, sizeof acc[p]);                                           \
        }                                                                                     \
        for (kh = 0; kh < n_kh; kh++) {                                                       \
            /* stepped, not indexed: j * M would hold a register per column */                \
            const float *xr = x0 + kh * xrow, *wr = w0 + kh * wrow;                           \
            RT_CNHWC_UNROLL for (kw = 0; kw < KW; kw++) {                                     \
                memcpy(&wv[kw], wr, sizeof wv[kw]);                                           \
                wr += M;                                                                      \
            }                                                                                 \
            RT_CNHWC_UNROLL for (j = 0; j < (NP - 1) * S + KW; j++) {                         \
                memcpy(&xv, xr, sizeof xv);                                                   \
                xr += M;                                                                      \
                RT_CNHWC_UNROLL for (kw = 0; kw < KW; kw++) {                                 \
                    const int q = j - kw; /* pixel q / S reads column j at tap kw */          \
                    if (q >= 0 && q % S == 0 && q / S < NP) acc[q / S] += xv * wv[kw];        \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
        RT_CNHWC_UNROLL for (p = 0; p < NP; p++) memcpy(y + p * M, &acc[p], sizeof acc[p]);   \
    }
RT_CNHWC_DWK_DEFINE(rt_conv_nhwc_dwk_f32, rt_cnhwc_v8f)
#if defined(__AVX512F__)
#define RT_CNHWC_DW16 1 /* the 16-channel tiles below, in intrinsics */
#endif
#undef RT_CNHWC_DWK_DEFINE

#if defined(__AVX512F__)
/* The 3x3 and 5x5 tiles (stride 1 or 2) of RT_CNHWC_DW16 builds in AVX-512 intrinsics: NP
 * (1-8) pixels x 16 channels, accumulators in named registers and each kernel row written out
 * (its K weight vectors, then its input columns, NP + K - 1 at stride 1 and 2 (NP - 1) + K at
 * stride 2, each loaded once and fed to the pixels that read it), all rows unrolled for an
 * interior row (n_kh K). The vector-extension tile (RT_CNHWC_DWK_DEFINE) for 16 channels, which
 * these replace, compiled to FMAs that each loaded their input (24 zmm loads a 3x3 kernel row of
 * 8 pixels instead of 10) and kept the 8 accumulators on the stack across the kernel-row loop
 * (GCC 12, -march=native on Zen 4). L / R: the tile's first L / last R
 * input columns are outside the input (pad): skipped, with the taps that read them, so that a
 * row's edge pixels run in the row's tiles (rt_conv_nhwc_dwz_row_f32). Each pixel's taps in the
 * order of the other paths (bias, then kh, kw ascending, the taps inside), one FMA each: the
 * same sums. act, on the registers before the store (rt_conv_nhwc_dwz_act): RT_DWZ_CLAMP
 * min(max(., lo), hi) (Clip; ReLU: hi +inf), the comparisons' operand order as
 * rt_act_row_f32's (NaN stays NaN); RT_DWZ_SILU and RT_DWZ_SIGMOID by the vector functions
 * rt_act_sigmoid_row_f32 runs (lane by lane: the same values); RT_DWZ_NONE none. */
/* The activations the tiles apply in their registers (rt_conv_nhwc_dwz_act). */
enum { RT_DWZ_NONE = 0, RT_DWZ_CLAMP, RT_DWZ_SILU, RT_DWZ_SIGMOID };
#define RT_DWZ_F(p, wv)                                                                        \
    if ((p) < NP) a##p = _mm512_fmadd_ps(xv, wv, a##p)
#define RT_DWZ_C(j, NCOL, FMAS)                                                                \
    if ((j) >= L && (j) < (NCOL)-R) {                                                          \
        xv = _mm512_loadu_ps(xr + (j) * M);                                                    \
        FMAS;                                                                                  \
    }
#define RT_DWZ_W3(XR, WR)                                                                      \
    const float *xr = (XR), *wr = (WR);                                                        \
    const __m512 w0 = _mm512_loadu_ps(wr), w1 = _mm512_loadu_ps(wr + M),                       \
                 w2 = _mm512_loadu_ps(wr + 2 * M);                                             \
    __m512 xv
#define RT_DWZ_W5(XR, WR)                                                                      \
    RT_DWZ_W3(XR, WR);                                                                         \
    const __m512 w3 = _mm512_loadu_ps(wr + 3 * M), w4 = _mm512_loadu_ps(wr + 4 * M)
/* column j feeds pixel p at tap kw where j = S p + kw */
#define RT_DWZ_ROW31(XR, WR)                                                                   \
    do {                                                                                       \
        RT_DWZ_W3(XR, WR);                                                                     \
        RT_DWZ_C(0, NP + 2, RT_DWZ_F(0, w0));                                                  \
        RT_DWZ_C(1, NP + 2, RT_DWZ_F(0, w1); RT_DWZ_F(1, w0));                                 \
        RT_DWZ_C(2, NP + 2, RT_DWZ_F(0, w2); RT_DWZ_F(1, w1); RT_DWZ_F(2, w0));                \
        RT_DWZ_C(3, NP + 2, RT_DWZ_F(1, w2); RT_DWZ_F(2, w1); RT_DWZ_F(3, w0));                \
        RT_DWZ_C(4, NP + 2, RT_DWZ_F(2, w2); RT_DWZ_F(3, w1); RT_DWZ_F(4, w0));                \
        RT_DWZ_C(5, NP + 2, RT_DWZ_F(3, w2); RT_DWZ_F(4, w1); RT_DWZ_F(5, w0));                \
        RT_DWZ_C(6, NP + 2, RT_DWZ_F(4, w2); RT_DWZ_F(5, w1); RT_DWZ_F(6, w0));                \
        RT_DWZ_C(7, NP + 2, RT_DWZ_F(5, w2); RT_DWZ_F(6, w1); RT_DWZ_F(7, w0));                \
        RT_DWZ_C(8, NP + 2, RT_DWZ_F(6, w2); RT_DWZ_F(7, w1));                                 \
        RT_DWZ_C(9, NP + 2, RT_DWZ_F(7, w2));                                                  \
    } while (0)
#define RT_DWZ_ROW32(XR, WR)                                                                   \
    do {                                                                                       \
        RT_DWZ_W3(XR, WR);                                                                     \
        RT_DWZ_C(0, (NP - 1) * 2 + 3, RT_DWZ_F(0, w0));                                        \
        RT_DWZ_C(1, (NP - 1) * 2 + 3, RT_DWZ_F(0, w1));                                        \
        RT_DWZ_C(2, (NP - 1) * 2 + 3, RT_DWZ_F(0, w2); RT_DWZ_F(1, w0));                       \
        RT_DWZ_C(3, (NP - 1) * 2 + 3, RT_DWZ_F(1, w1));                                        \
        RT_DWZ_C(4, (NP - 1) * 2 + 3, RT_DWZ_F(1, w2); RT_DWZ_F(2, w0));                       \
        RT_DWZ_C(5, (NP - 1) * 2 + 3, RT_DWZ_F(2, w1));                                        \
        RT_DWZ_C(6, (NP - 1) * 2 + 3, RT_DWZ_F(2, w2); RT_DWZ_F(3, w0));                       \
        RT_DWZ_C(7, (NP - 1) * 2 + 3, RT_DWZ_F(3, w1));                                        \
        RT_DWZ_C(8, (NP - 1) * 2 + 3, RT_DWZ_F(3, w2); RT_DWZ_F(4, w0));                       \
        RT_DWZ_C(9, (NP - 1) * 2 + 3, RT_DWZ_F(4, w1));                                        \
        RT_DWZ_C(10, (NP - 1) * 2 + 3, RT_DWZ_F(4, w2); RT_DWZ_F(5, w0));                      \
        RT_DWZ_C(11, (NP - 1) * 2 + 3, RT_DWZ_F(5, w1));                                       \
        RT_DWZ_C(12, (NP - 1) * 2 + 3, RT_DWZ_F(5, w2); RT_DWZ_F(6, w0));                      \
        RT_DWZ_C(13, (NP - 1) * 2 + 3, RT_DWZ_F(6, w1));                                       \
        RT_DWZ_C(14, (NP - 1) * 2 + 3, RT_DWZ_F(6, w2); RT_DWZ_F(7, w0));                      \
        RT_DWZ_C(15, (NP - 1) * 2 + 3, RT_DWZ_F(7, w1));                                       \
        RT_DWZ_C(16, (NP - 1) * 2 + 3, RT_DWZ_F(7, w2));                                       \
    } while (0)
#define RT_DWZ_ROW51(XR, WR)                                                                   \
    do {                                                                                       \
        RT_DWZ_W5(XR, WR);                                                                     \
        RT_DWZ_C(0, NP + 4, RT_DWZ_F(0, w0));                                                  \
        RT_DWZ_C(1, NP + 4, RT_DWZ_F(0, w1); RT_DWZ_F(1, w0));                                 \
        RT_DWZ_C(2, NP + 4, RT_DWZ_F(0, w2); RT_DWZ_F(1, w1); RT_DWZ_F(2, w0));                \
        RT_DWZ_C(3, NP + 4, RT_DWZ_F(0, w3); RT_DWZ_F(1, w2); RT_DWZ_F(2, w1); RT_DWZ_F(3, w0)); \
        RT_DWZ_C(4, NP + 4, RT_DWZ_F(0, w4); RT_DWZ_F(1, w3); RT_DWZ_F(2, w2); RT_DWZ_F(3, w1); RT_DWZ_F(4, w0)); \
        RT_DWZ_C(5, NP + 4, RT_DWZ_F(1, w4); RT_DWZ_F(2, w3); RT_DWZ_F(3, w2); RT_DWZ_F(4, w1); RT_DWZ_F(5, w0)); \
        RT_DWZ_C(6, NP + 4, RT_DWZ_F(2, w4); RT_DWZ_F(3, w3); RT_DWZ_F(4, w2); RT_DWZ_F(5, w1); RT_DWZ_F(6, w0)); \
        RT_DWZ_C(7, NP + 4, RT_DWZ_F(3, w4); RT_DWZ_F(4, w3); RT_DWZ_F(5, w2); RT_DWZ_F(6, w1); RT_DWZ_F(7, w0)); \
        RT_DWZ_C(8, NP + 4, RT_DWZ_F(4, w4); RT_DWZ_F(5, w3); RT_DWZ_F(6, w2); RT_DWZ_F(7, w1)); \
        RT_DWZ_C(9, NP + 4, RT_DWZ_F(5, w4); RT_DWZ_F(6, w3); RT_DWZ_F(7, w2));                \
        RT_DWZ_C(10, NP + 4, RT_DWZ_F(6, w4); RT_DWZ_F(7, w3));                                \
        RT_DWZ_C(11, NP + 4, RT_DWZ_F(7, w4));                                                 \
    } while (0)
#define RT_DWZ_ROW52(XR, WR)                                                                   \
    do {                                                                                       \
        RT_DWZ_W5(XR, WR);                                                                     \
        RT_DWZ_C(0, (NP - 1) * 2 + 5, RT_DWZ_F(0, w0));                                        \
        RT_DWZ_C(1, (NP - 1) * 2 + 5, RT_DWZ_F(0, w1));                                        \
        RT_DWZ_C(2, (NP - 1) * 2 + 5, RT_DWZ_F(0, w2); RT_DWZ_F(1, w0));                       \
        RT_DWZ_C(3, (NP - 1) * 2 + 5, RT_DWZ_F(0, w3); RT_DWZ_F(1, w1));                       \
        RT_DWZ_C(4, (NP - 1) * 2 + 5, RT_DWZ_F(0, w4); RT_DWZ_F(1, w2); RT_DWZ_F(2, w0));      \
        RT_DWZ_C(5, (NP - 1) * 2 + 5, RT_DWZ_F(1, w3); RT_DWZ_F(2, w1));                       \
        RT_DWZ_C(6, (NP - 1) * 2 + 5, RT_DWZ_F(1, w4); RT_DWZ_F(2, w2); RT_DWZ_F(3, w0));      \
        RT_DWZ_C(7, (NP - 1) * 2 + 5, RT_DWZ_F(2, w3); RT_DWZ_F(3, w1));                       \
        RT_DWZ_C(8, (NP - 1) * 2 + 5, RT_DWZ_F(2, w4); RT_DWZ_F(3, w2); RT_DWZ_F(4, w0));      \
        RT_DWZ_C(9, (NP - 1) * 2 + 5, RT_DWZ_F(3, w3); RT_DWZ_F(4, w1));                       \
        RT_DWZ_C(10, (NP - 1) * 2 + 5, RT_DWZ_F(3, w4); RT_DWZ_F(4, w2); RT_DWZ_F(5, w0));     \
        RT_DWZ_C(11, (NP - 1) * 2 + 5, RT_DWZ_F(4, w3); RT_DWZ_F(5, w1));                      \
        RT_DWZ_C(12, (NP - 1) * 2 + 5, RT_DWZ_F(4, w4); RT_DWZ_F(5, w2); RT_DWZ_F(6, w0));     \
        RT_DWZ_C(13, (NP - 1) * 2 + 5, RT_DWZ_F(5, w3); RT_DWZ_F(6, w1));                      \
        RT_DWZ_C(14, (NP - 1) * 2 + 5, RT_DWZ_F(5, w4); RT_DWZ_F(6, w2); RT_DWZ_F(7, w0));     \
        RT_DWZ_C(15, (NP - 1) * 2 + 5, RT_DWZ_F(6, w3); RT_DWZ_F(7, w1));                      \
        RT_DWZ_C(16, (NP - 1) * 2 + 5, RT_DWZ_F(6, w4); RT_DWZ_F(7, w2));                      \
        RT_DWZ_C(17, (NP - 1) * 2 + 5, RT_DWZ_F(7, w3));                                       \
        RT_DWZ_C(18, (NP - 1) * 2 + 5, RT_DWZ_F(7, w4));                                       \
    } while (0)
#define RT_DWZ_ST(p)                                                                           \
    do {                                                                                       \
        if ((p) < NP) {                                                                        \
            if (act == RT_DWZ_CLAMP) a##p = _mm512_min_ps(hi, _mm512_max_ps(lo, a##p));        \
            else if (act == RT_DWZ_SILU) a##p = rt_vsilu16_f32(a##p);                          \
            else if (act == RT_DWZ_SIGMOID) a##p = rt_vsigmoid16_f32(a##p);                    \
            _mm512_storeu_ps(y + (p) * M, a##p);                                               \
        }                                                                                      \
    } while (0)
#define RT_DWZ_ROWS(ROW)                                                                       \
    do {                                                                                       \
        if (n_kh == K) {                                                                       \
            ROW(xt, wt);                                                                       \
            ROW(xt + xrow, wt + K * M);                                                        \
            ROW(xt + 2 * xrow, wt + 2 * K * M);                                                \
            if (K == 5) {                                                                      \
                ROW(xt + 3 * xrow, wt + 3 * K * M);                                            \
                ROW(xt + 4 * xrow, wt + 4 * K * M);                                            \
            }                                                                                  \
        } else {                                                                               \
            for (kh = 0; kh < n_kh; kh++) ROW(xt + kh * xrow, wt + kh * K * M);                \
        }                                                                                      \
    } while (0)
/* xt: the tile's input column 0 in its first kernel row (kh_lo), channel m0; wt: tap
 * (kh_lo, 0) at m0; xrow: one kernel row further in the input; y: pixel 0's output at m0. */
static inline __attribute__((always_inline)) void
rt_conv_nhwc_dwz_f32(const float *xt, const float *wt, const float *b, float *y, int64_t M,
                     int64_t xrow, int64_t n_kh, const int K, const int S, const int NP,
                     const int L, const int R, int act, __m512 lo, __m512 hi) {
    __m512 a0 = b ? _mm512_loadu_ps(b) : _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0,
           a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    int64_t kh;
    if (K == 3 && S == 1) RT_DWZ_ROWS(RT_DWZ_ROW31);
    else if (K == 3) RT_DWZ_ROWS(RT_DWZ_ROW32);
    else if (S == 1) RT_DWZ_ROWS(RT_DWZ_ROW51);
    else RT_DWZ_ROWS(RT_DWZ_ROW52);
    RT_DWZ_ST(0); RT_DWZ_ST(1); RT_DWZ_ST(2); RT_DWZ_ST(3);
    RT_DWZ_ST(4); RT_DWZ_ST(5); RT_DWZ_ST(6); RT_DWZ_ST(7);
    (void)a1, (void)a2, (void)a3, (void)a4, (void)a5, (void)a6, (void)a7;
}
#undef RT_DWZ_F
#undef RT_DWZ_C
#undef RT_DWZ_W3
#undef RT_DWZ_W5
#undef RT_DWZ_ROW31
#undef RT_DWZ_ROW32
#undef RT_DWZ_ROW51
#undef RT_DWZ_ROW52
#undef RT_DWZ_ST
#undef RT_DWZ_ROWS

/* The act of rt_conv_nhwc_dwz_f32 for an RtAct (NULL: none), with its Clip bounds; *acted:
 * whether the tiles apply it (else, a kind they do not apply, RT_DWZ_NONE: rt_act_row_f32
 * runs after them). */
static inline int rt_conv_nhwc_dwz_act(const RtAct *act, __m512 *lo, __m512 *hi, int *acted) {
    const int kind = act ? act->kind : RT_ACT_NONE;
    const int a = kind == RT_ACT_CLIP || kind == RT_ACT_RELU ? RT_DWZ_CLAMP
                  : kind == RT_ACT_SILU                      ? RT_DWZ_SILU
                  : kind == RT_ACT_SIGMOID                   ? RT_DWZ_SIGMOID
                                                             : RT_DWZ_NONE;
    *lo = _mm512_set1_ps(kind == RT_ACT_CLIP ? act->alpha : 0.0f);
    *hi = _mm512_set1_ps(kind == RT_ACT_CLIP ? act->beta : INFINITY);
    *acted = a != RT_DWZ_NONE;
    return a;
}

/* NP pixels from p, every 16-channel block: x, w as xt, wt of rt_conv_nhwc_dwz_f32 for pixel
 * 0 at channel 0 */
#define RT_DWZ_TILES(NP, L, R)                                                                 \
    for (m0 = 0; m0 < M; m0 += 16)                                                             \
    rt_conv_nhwc_dwz_f32(x + p * S * M + m0, w + m0, b ? b + m0 : NULL, y + p * M + m0, M,     \
                         xrow, n_kh, K, S, NP, L, R, act, lo, hi)

/* A run of n pixels, all inside in kw: tiles of 8 pixels, then 4, then the last 1-3. */
static inline __attribute__((always_inline)) void
rt_conv_nhwc_dwz_run_f32(const float *x, const float *w, const float *b, float *y, int64_t M,
                         int64_t xrow, int64_t n_kh, int64_t n, const int K, const int S,
                         int act, __m512 lo, __m512 hi) {
    int64_t p = 0, m0;
    for (; p + 8 <= n; p += 8) RT_DWZ_TILES(8, 0, 0);
    for (; p + 4 <= n; p += 4) RT_DWZ_TILES(4, 0, 0);
    if (n - p == 3) RT_DWZ_TILES(3, 0, 0);
    else if (n - p == 2) RT_DWZ_TILES(2, 0, 0);
    else if (n - p == 1) RT_DWZ_TILES(1, 0, 0);
}

/* A whole output row of n pixels with pad (K - 1) / 2 on the left (x: the first pad column):
 * at stride 1 n = W, at stride 2 n = W / 2 (W even); tiles of 8 pixels, the first one skipping
 * the left pad columns, the last (1-8 pixels) the right ones (at stride 2 one fewer than the
 * left). 7- and 14-wide rows ran their edge pixels one at a time (rt_conv_nhwc_dw8_f32) and
 * then the activation pass. */
static inline __attribute__((always_inline)) void
rt_conv_nhwc_dwz_row_f32(const float *x, const float *w, const float *b, float *y, int64_t M,
                         int64_t xrow, int64_t n_kh, int64_t n, const int K, const int S,
                         int act, __m512 lo, __m512 hi) {
    const int LE = (K - 1) / 2, RE = S == 1 ? LE : LE - 1; /* the pad columns */
    int64_t p = 0, m0;
#define RT_DWZ_LAST(L)                                                                         \
    do {                                                                                       \
        switch (n - p) {                                                                       \
        case 1: RT_DWZ_TILES(1, L, RE); break;                                                 \
        case 2: RT_DWZ_TILES(2, L, RE); break;                                                 \
        case 3: RT_DWZ_TILES(3, L, RE); break;                                                 \
        case 4: RT_DWZ_TILES(4, L, RE); break;                                                 \
        case 5: RT_DWZ_TILES(5, L, RE); break;                                                 \
        case 6: RT_DWZ_TILES(6, L, RE); break;                                                 \
        case 7: RT_DWZ_TILES(7, L, RE); break;                                                 \
        default: RT_DWZ_TILES(8, L, RE); break;                                                \
        }                                                                                      \
    } while (0)
    if (n <= 8) {
        RT_DWZ_LAST(LE);
        return;
    }
    /* tiles of 8, or of 4 where 8 would leave fewer pixels than RE to the last tile (the
     * right edge pixels must all be in it: 5x5, n = 8 k + 1) */
    if (n - 8 >= RE) {
        RT_DWZ_TILES(8, LE, 0);
        p = 8;
    } else {
        RT_DWZ_TILES(4, LE, 0);
        p = 4;
    }
    while (n - p > 8) {
        if (n - p - 8 >= RE) {
            RT_DWZ_TILES(8, 0, 0);
            p += 8;
        } else {
            RT_DWZ_TILES(4, 0, 0);
            p += 4;
        }
    }
    RT_DWZ_LAST(0);
#undef RT_DWZ_LAST
}
#undef RT_DWZ_TILES

/* The 5x5 runs and rows as functions of their own, out of line: inlined beside the 3x3 ones in
 * rt_conv_nhwc_dw_run_f32 they made MobileNetV2's 3x3 layers 1.02-1.04x slower in
 * bench/kernels/dw.sh and in the model (profile.py, 7 runs), the 3x3 code unchanged. */
static __attribute__((noinline)) void
rt_conv_nhwc_dwz_run5_f32(const float *x, const float *w, const float *b, float *y, int64_t M,
                          int64_t xrow, int64_t n_kh, int64_t n, const int S, int act, __m512 lo,
                          __m512 hi) {
    if (S == 1) rt_conv_nhwc_dwz_run_f32(x, w, b, y, M, xrow, n_kh, n, 5, 1, act, lo, hi);
    else rt_conv_nhwc_dwz_run_f32(x, w, b, y, M, xrow, n_kh, n, 5, 2, act, lo, hi);
}
static __attribute__((noinline)) void
rt_conv_nhwc_dwz_row5_f32(const float *x, const float *w, const float *b, float *y, int64_t M,
                          int64_t xrow, int64_t n_kh, int64_t n, const int S, int act, __m512 lo,
                          __m512 hi) {
    if (S == 1) rt_conv_nhwc_dwz_row_f32(x, w, b, y, M, xrow, n_kh, n, 5, 1, act, lo, hi);
    else rt_conv_nhwc_dwz_row_f32(x, w, b, y, M, xrow, n_kh, n, 5, 2, act, lo, hi);
}
#endif


/* Pixels [ow, ow + n) of output row oh, all inside in kw (see rt_conv_nhwc_dwk_f32), every
 * 8-channel block: tiles of 8 pixels, then of 4, then one of the last 1-3. */
static inline __attribute__((always_inline)) void
rt_conv_nhwc_dw_runk_f32(const RtConvGeom *g, const float *xn, const float *w, const float *b,
                         float *yp, int64_t oh, int64_t ow, int64_t n,
                         int64_t kh_lo, int64_t kh_hi, const int KW, const int S, const RtAct *act,
                         int *acted) {
    const int64_t M = g->m, xrow = g->in[2] * M * g->d[1], wrow = KW * M, n_kh = kh_hi - kh_lo;
    const int64_t ih = oh * g->s[1] - g->pad[1] + kh_lo * g->d[1];
    const float *xk = xn + (ih * g->in[2] - g->pad[2]) * M, *wk = w + kh_lo * wrow;
    int64_t p = 0, m0;
    (void)act, (void)acted;
#if defined(RT_CNHWC_DW16)
    if (M % 16 == 0 && M >= 32) {
        __m512 lo, hi;
        const int a = rt_conv_nhwc_dwz_act(act, &lo, &hi, acted);
        if (KW == 3)
            rt_conv_nhwc_dwz_run_f32(xk + ow * S * M, wk, b, yp, M, xrow, n_kh, n, 3, S, a, lo,
                                     hi);
        else
            rt_conv_nhwc_dwz_run5_f32(xk + ow * S * M, wk, b, yp, M, xrow, n_kh, n, S, a, lo, hi);
        return;
    }
#endif
    for (; p + 8 <= n; p += 8)
        for (m0 = 0; m0 < M; m0 += RT_CNHWC_TILE_M)
            rt_conv_nhwc_dwk_f32(xk + (ow + p) * S * M + m0, wk + m0, b ? b + m0 : NULL,
                                 yp + p * M + m0, M, xrow, wrow, n_kh, KW, S, 8);
    for (; p + 4 <= n; p += 4)
        for (m0 = 0; m0 < M; m0 += RT_CNHWC_TILE_M)
            rt_conv_nhwc_dwk_f32(xk + (ow + p) * S * M + m0, wk + m0, b ? b + m0 : NULL,
                                 yp + p * M + m0, M, xrow, wrow, n_kh, KW, S, 4);
    /* the last 1-3 pixels in one tile: one pixel at a time ran one chain of KH*KW FMAs a
     * block, each waiting on the one before (28 wide: 3 tiles of 8, then 2 such pixels) */
    for (m0 = 0; n - p == 3 && m0 < M; m0 += RT_CNHWC_TILE_M)
        rt_conv_nhwc_dwk_f32(xk + (ow + p) * S * M + m0, wk + m0, b ? b + m0 : NULL,
                             yp + p * M + m0, M, xrow, wrow, n_kh, KW, S, 3);
    for (m0 = 0; n - p == 2 && m0 < M; m0 += RT_CNHWC_TILE_M)
        rt_conv_nhwc_dwk_f32(xk + (ow + p) * S * M + m0, wk + m0, b ? b + m0 : NULL,
                             yp + p * M + m0, M, xrow, wrow, n_kh, KW, S, 2);
    for (m0 = 0; n - p == 1 && m0 < M; m0 += RT_CNHWC_TILE_M)
        rt_conv_nhwc_dwk_f32(xk + (ow + p) * S * M + m0, wk + m0, b ? b + m0 : NULL,
                             yp + p * M + m0, M, xrow, wrow, n_kh, KW, S, 1);
}
#endif

/* Depthwise (multiplier 1, M a multiple of 8, unit dilation along W, a 3- or 5-wide kernel
 * with stride 1 or 2): output pixels [ow, ow + n) of row oh, all inside in kw, by the vector
 * tiles; returns n, or 0 where no vector path fits (the caller's loops run). */
RT_API int64_t rt_conv_nhwc_dw_run_f32(const RtConvGeom *g, const float *xn, const float *w,
                                       const float *b, float *yp, int64_t oh, int64_t ow,
                                       int64_t n, int64_t kh_lo, int64_t kh_hi, const RtAct *act,
                                       int *acted) {
#ifdef RT_CNHWC_VEC
    if (g->m == g->c && g->m % RT_CNHWC_TILE_M == 0 && g->d[2] == 1 && n > 0 &&
        (g->k[2] == 3 || g->k[2] == 5) && (g->s[2] == 1 || g->s[2] == 2)) {
        const int64_t k = g->k[2], s = g->s[2];
        if (k == 3 && s == 1)
            rt_conv_nhwc_dw_runk_f32(g, xn, w, b, yp, oh, ow, n, kh_lo, kh_hi, 3, 1, act, acted);
        else if (k == 3)
            rt_conv_nhwc_dw_runk_f32(g, xn, w, b, yp, oh, ow, n, kh_lo, kh_hi, 3, 2, act, acted);
        else if (s == 1)
            rt_conv_nhwc_dw_runk_f32(g, xn, w, b, yp, oh, ow, n, kh_lo, kh_hi, 5, 1, act, acted);
        else
            rt_conv_nhwc_dw_runk_f32(g, xn, w, b, yp, oh, ow, n, kh_lo, kh_hi, 5, 2, act, acted);
        return n;
    }
#endif
    (void)g, (void)xn, (void)w, (void)b, (void)yp, (void)oh, (void)ow, (void)n, (void)kh_lo;
    (void)kh_hi, (void)act, (void)acted;
    return 0;
}

RT_API int64_t rt_conv_nhwc_dw_run_f64(const RtConvGeom *g, const double *xn, const double *w,
                                       const double *b, double *yp, int64_t oh, int64_t ow,
                                       int64_t n, int64_t kh_lo, int64_t kh_hi, const RtAct *act,
                                       int *acted) {
    (void)g, (void)xn, (void)w, (void)b, (void)yp, (void)oh, (void)ow, (void)n, (void)kh_lo;
    (void)kh_hi, (void)act, (void)acted;
    return 0;
}

/* Depthwise 3x3 or 5x5 (multiplier 1, unit dilation along W, pad (K - 1) / 2 on the left), M
 * a multiple of 16 from 32, on AVX-512: output row oh whole, its edge pixels in its tiles
 * (rt_conv_nhwc_dwz_row_f32), where the row is W wide at stride 1 or W / 2 at stride 2, W
 * even, and at most 16 wide (the 7x7 and 14x14 maps, where the edge pixels are 2/7 or 1/7 of
 * a 3x3 row: MobileNetV2's 0.47-0.80x the time in bench/kernels/dw.sh; its 112-wide rows ran
 * 1.05-1.12x, 28 and 56 even, so wider rows keep the interior runs); returns the pixels done
 * (OW) or 0 where this path does not fit. *acted: the activation act applied in the tiles
 * (rt_conv_nhwc_dwz_act). */
RT_API int64_t rt_conv_nhwc_dw_row_f32(const RtConvGeom *g, const float *xn, const float *w,
                                       const float *b, float *yp, int64_t oh, int64_t kh_lo,
                                       int64_t kh_hi, const RtAct *act, int *acted) {
#if defined(RT_CNHWC_DW16)
    const int64_t M = g->m, W = g->in[2], OW = g->out[2];
    const int64_t K = g->k[2];
    if (g->m == g->c && M % 16 == 0 && M >= 32 && (K == 3 || K == 5) && g->d[2] == 1 &&
        g->pad[2] == (K - 1) / 2 && OW <= 16 &&
        ((g->s[2] == 1 && OW == W) || (g->s[2] == 2 && W % 2 == 0 && OW == W / 2))) {
        const int64_t xrow = W * M * g->d[1], n_kh = kh_hi - kh_lo;
        const int64_t ih = oh * g->s[1] - g->pad[1] + kh_lo * g->d[1];
        const float *xk = xn + (ih * W - g->pad[2]) * M, *wk = w + kh_lo * K * M;
        __m512 lo, hi;
        const int a = rt_conv_nhwc_dwz_act(act, &lo, &hi, acted);
        if (K == 3 && g->s[2] == 1)
            rt_conv_nhwc_dwz_row_f32(xk, wk, b, yp, M, xrow, n_kh, OW, 3, 1, a, lo, hi);
        else if (K == 3)
            rt_conv_nhwc_dwz_row_f32(xk, wk, b, yp, M, xrow, n_kh, OW, 3, 2, a, lo, hi);
        else
            rt_conv_nhwc_dwz_row5_f32(xk, wk, b, yp, M, xrow, n_kh, OW, (int)g->s[2], a, lo, hi);
        return OW;
    }
#endif
    (void)g, (void)xn, (void)w, (void)b, (void)yp, (void)oh, (void)kh_lo, (void)kh_hi;
    (void)act, (void)acted;
    return 0;
}

RT_API int64_t rt_conv_nhwc_dw_row_f64(const RtConvGeom *g, const double *xn, const double *w,
                                       const double *b, double *yp, int64_t oh, int64_t kh_lo,
                                       int64_t kh_hi, const RtAct *act, int *acted) {
    (void)g, (void)xn, (void)w, (void)b, (void)yp, (void)oh, (void)kh_lo, (void)kh_hi;
    (void)act, (void)acted;
    return 0;
}

#ifdef RT_CNHWC_VEC
/* Depthwise, multiplier 1, M a multiple of 8: RT_CNHWC_TILE_P neighbouring output pixels
 * of one row whose every kw tap is inside the input, 8 channels at a time. The pixels share
 * each tap's weight vector and are 4 independent accumulation chains (one pixel at a time
 * waits on the FMA latency each tap). */
RT_API void rt_conv_nhwc_dw4x8_f32(const RtConvGeom *g, const float *xn, const float *w,
                                   const float *b, float *yp, int64_t oh, int64_t ow,
                                   int64_t kh_lo, int64_t kh_hi) {
    const int64_t M = g->m, KW = g->k[2], xs = g->s[2] * M; /* next pixel's input */
    int64_t m0, kh, kw;
    for (m0 = 0; m0 < M; m0 += RT_CNHWC_TILE_M) {
        rt_cnhwc_v8f a0, a1, a2, a3, wv, xv;
        if (b) memcpy(&a0, b + m0, sizeof a0);
        else memset(&a0, 0, sizeof a0);
        a1 = a2 = a3 = a0;
        for (kh = kh_lo; kh < kh_hi; kh++) {
            const int64_t ih = oh * g->s[1] - g->pad[1] + kh * g->d[1];
            const float *xr = xn + (ih * g->in[2] + ow * g->s[2] - g->pad[2]) * M + m0;
            const float *wr = w + kh * KW * M + m0;
            for (kw = 0; kw < KW; kw++) {
                const float *xk = xr + kw * g->d[2] * M;
                memcpy(&wv, wr + kw * M, sizeof wv);
                memcpy(&xv, xk, sizeof xv);
                a0 += xv * wv;
                memcpy(&xv, xk + xs, sizeof xv);
                a1 += xv * wv;
                memcpy(&xv, xk + 2 * xs, sizeof xv);
                a2 += xv * wv;
                memcpy(&xv, xk + 3 * xs, sizeof xv);
                a3 += xv * wv;
            }
        }
        memcpy(yp + m0, &a0, sizeof a0);
        memcpy(yp + M + m0, &a1, sizeof a1);
        memcpy(yp + 2 * M + m0, &a2, sizeof a2);
        memcpy(yp + 3 * M + m0, &a3, sizeof a3);
    }
}
#endif

/* The vector depthwise quad of interior pixels where it exists and fits (returns 1), else 0.
 */
RT_API int rt_conv_nhwc_dw_quad_f32(const RtConvGeom *g, const float *xn, const float *w,
                                    const float *b, float *yp, int64_t oh, int64_t ow,
                                    int64_t kh_lo, int64_t kh_hi) {
#ifdef RT_CNHWC_VEC
    if (g->m == g->c && g->m % RT_CNHWC_TILE_M == 0 && RT_CNHWC_TILE_P == 4) {
        rt_conv_nhwc_dw4x8_f32(g, xn, w, b, yp, oh, ow, kh_lo, kh_hi);
        return 1;
    }
#endif
    (void)g, (void)xn, (void)w, (void)b, (void)yp, (void)oh, (void)ow, (void)kh_lo, (void)kh_hi;
    return 0;
}

RT_API int rt_conv_nhwc_dw_quad_f64(const RtConvGeom *g, const double *xn, const double *w,
                                    const double *b, double *yp, int64_t oh, int64_t ow,
                                    int64_t kh_lo, int64_t kh_hi) {
    (void)g, (void)xn, (void)w, (void)b, (void)yp, (void)oh, (void)ow, (void)kh_lo, (void)kh_hi;
    return 0;
}

/* The vector depthwise pixel where it exists and fits (returns 1), else 0. */
RT_API int rt_conv_nhwc_dw_fast_f32(const RtConvGeom *g, const float *xn, const float *w,
                                    const float *b, float *yp, int64_t oh, int64_t ow,
                                    int64_t kh_lo, int64_t kh_hi, int64_t kw_lo, int64_t kw_hi) {
#ifdef RT_CNHWC_VEC
    if (g->m == g->c && g->m % RT_CNHWC_TILE_M == 0) {
        rt_conv_nhwc_dw8_f32(g, xn, w, b, yp, oh, ow, kh_lo, kh_hi, kw_lo, kw_hi);
        return 1;
    }
#endif
    (void)g, (void)xn, (void)w, (void)b, (void)yp, (void)oh, (void)ow;
    (void)kh_lo, (void)kh_hi, (void)kw_lo, (void)kw_hi;
    return 0;
}

RT_API int rt_conv_nhwc_dw_fast_f64(const RtConvGeom *g, const double *xn, const double *w,
                                    const double *b, double *yp, int64_t oh, int64_t ow,
                                    int64_t kh_lo, int64_t kh_hi, int64_t kw_lo, int64_t kw_hi) {
    (void)g, (void)xn, (void)w, (void)b, (void)yp, (void)oh, (void)ow;
    (void)kh_lo, (void)kh_hi, (void)kw_lo, (void)kw_hi;
    return 0;
}

/* The vector tile where it exists and fits (returns 1), else 0: the caller's loops run. */
RT_API int rt_conv_nhwc_fast_f32(const RtConvGeom *g, int np, int64_t tm, const float *const *xp,
                                 const float *wp, int64_t kh_n, int64_t kw_n,
                                 float acc[][RT_CNHWC_TILE_M]) {
#ifdef RT_CNHWC_VEC
    const int64_t cg = g->c / g->group;
    if (np == RT_CNHWC_TILE_P && tm == RT_CNHWC_TILE_M) {
        rt_conv_nhwc_tile4x8_f32(cg, g->m, xp, wp, kh_n, kw_n, g->in[2] * g->c * g->d[1],
                                 g->c * g->d[2], g->k[2] * cg * g->m, cg * g->m, acc);
        return 1;
    }
#endif
    (void)g, (void)np, (void)tm, (void)xp, (void)wp, (void)kh_n, (void)kw_n, (void)acc;
    return 0;
}

RT_API int rt_conv_nhwc_fast_f64(const RtConvGeom *g, int np, int64_t tm, const double *const *xp,
                                 const double *wp, int64_t kh_n, int64_t kw_n,
                                 double acc[][RT_CNHWC_TILE_M]) {
    (void)g, (void)np, (void)tm, (void)xp, (void)wp, (void)kh_n, (void)kw_n, (void)acc;
    return 0;
}

#define RT_CONV_NHWC_DEFINE(SFX, T)                                                           \
    /* Accumulates NP (compile-time) pixels x TM channels of one group. xp[p]: the input      \
     * pixel row (C values) of pixel p at tap (kh_lo, kw_lo), already offset to the group;    \
     * wp: the weights of tap (kh_lo, kw_lo), offset to the group and channel block; acc is   \
     * [NP][RT_CNHWC_TILE_M], preset with the bias. */                                        \
    RT_API void rt_conv_nhwc_tile_##SFX(const RtConvGeom *g, int np, int64_t tm,              \
                                        const T *const *xp, const T *wp, int64_t kh_n,        \
                                        int64_t kw_n, T acc[][RT_CNHWC_TILE_M]) {             \
        const int64_t cg = g->c / g->group, C = g->c, M = g->m;                               \
        const int64_t xrow = g->in[2] * C * g->d[1], xcol = C * g->d[2];                      \
        const int64_t wrow = g->k[2] * cg * M, wcol = cg * M;                                 \
        int64_t kh, kw, c;                                                                    \
        int p, j;                                                                             \
        if (np == RT_CNHWC_TILE_P && tm == RT_CNHWC_TILE_M) {                                 \
            T a[RT_CNHWC_TILE_P][RT_CNHWC_TILE_M];                                            \
            for (p = 0; p < RT_CNHWC_TILE_P; p++)                                             \
                for (j = 0; j < RT_CNHWC_TILE_M; j++) a[p][j] = acc[p][j];                    \
            for (kh = 0; kh < kh_n; kh++)                                                     \
                for (kw = 0; kw < kw_n; kw++) {                                               \
                    const T *restrict w0 = wp + kh * wrow + kw * wcol;                        \
                    const T *restrict x0 = xp[0] + kh * xrow + kw * xcol;                     \
                    const T *restrict x1 = xp[1] + kh * xrow + kw * xcol;                     \
                    const T *restrict x2 = xp[2] + kh * xrow + kw * xcol;                     \
                    const T *restrict x3 = xp[3] + kh * xrow + kw * xcol;                     \
                    for (c = 0; c < cg; c++) {                                                \
                        const T *restrict wv = w0 + c * M;                                    \
                        const T v0 = x0[c], v1 = x1[c], v2 = x2[c], v3 = x3[c];               \
                        for (j = 0; j < RT_CNHWC_TILE_M; j++) {                               \
                            a[0][j] += v0 * wv[j];                                            \
                            a[1][j] += v1 * wv[j];                                            \
                            a[2][j] += v2 * wv[j];                                            \
                            a[3][j] += v3 * wv[j];                                            \
                        }                                                                     \
                    }                                                                         \
                }                                                                             \
            for (p = 0; p < RT_CNHWC_TILE_P; p++)                                             \
                for (j = 0; j < RT_CNHWC_TILE_M; j++) acc[p][j] = a[p][j];                    \
            return;                                                                           \
        }                                                                                     \
        for (p = 0; p < np; p++)                                                              \
            for (kh = 0; kh < kh_n; kh++)                                                     \
                for (kw = 0; kw < kw_n; kw++) {                                               \
                    const T *w0 = wp + kh * wrow + kw * wcol;                                 \
                    const T *x0 = xp[p] + kh * xrow + kw * xcol;                              \
                    for (c = 0; c < cg; c++) {                                                \
                        const T v = x0[c];                                                    \
                        for (j = 0; j < tm; j++) acc[p][j] += v * w0[c * M + j];              \
                    }                                                                         \
                }                                                                             \
    }                                                                                         \
                                                                                              \
    /* Depthwise (C/group = 1, multiplier mg = M/C): pixel (n, oh, ow) of every channel.     \
     * taps [kh_lo, kh_hi) x [kw_lo, kw_hi) are the ones inside the input. */                 \
    RT_API void rt_conv_nhwc_dw_pixel_##SFX(const RtConvGeom *g, const T *xn, const T *w,     \
                                            const T *b, T *yp, int64_t oh, int64_t ow,        \
                                            int64_t kh_lo, int64_t kh_hi, int64_t kw_lo,      \
                                            int64_t kw_hi) {                                  \
        const int64_t C = g->c, M = g->m, mg = g->m / g->group;                               \
        int64_t m0, kh, kw, j;                                                                \
        if (rt_conv_nhwc_dw_fast_##SFX(g, xn, w, b, yp, oh, ow, kh_lo, kh_hi, kw_lo, kw_hi))  \
            return;                                                                           \
        for (m0 = 0; m0 < M; m0 += RT_CNHWC_TILE_M) {                                         \
            const int64_t tm = M - m0 < RT_CNHWC_TILE_M ? M - m0 : RT_CNHWC_TILE_M;           \
            T a[RT_CNHWC_TILE_M];                                                             \
            for (j = 0; j < RT_CNHWC_TILE_M; j++) a[j] = b && j < tm ? b[m0 + j] : (T)0;      \
            for (kh = kh_lo; kh < kh_hi; kh++) {                                              \
                const int64_t ih = oh * g->s[1] - g->pad[1] + kh * g->d[1];                   \
                for (kw = kw_lo; kw < kw_hi; kw++) {                                          \
                    const int64_t iw = ow * g->s[2] - g->pad[2] + kw * g->d[2];               \
                    const T *restrict xr = xn + (ih * g->in[2] + iw) * C;                     \
                    const T *restrict wr = w + (kh * g->k[2] + kw) * M + m0;                  \
                    if (mg == 1 && tm == RT_CNHWC_TILE_M) {                                   \
                        for (j = 0; j < RT_CNHWC_TILE_M; j++) a[j] += xr[m0 + j] * wr[j];     \
                    } else {                                                                  \
                        for (j = 0; j < tm; j++) a[j] += xr[(m0 + j) / mg] * wr[j];           \
                    }                                                                         \
                }                                                                             \
            }                                                                                 \
            for (j = 0; j < tm; j++) yp[m0 + j] = a[j];                                       \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* The convolution's work; the epilogue (act(. + b + r)) runs on each tile of output    \
     * pixels (all M channels) right after it is complete. */                                \
    typedef struct RtConvNhwcTask##SFX {                                                      \
        const T *x, *w, *b, *r;                                                               \
        T *y;                                                                                 \
        const RtConvGeom *g;                                                                  \
        const RtAct *act;                                                                     \
        int64_t n_tasks; /* output rows (of all images, n * OH) cut in n_tasks even parts */  \
    } RtConvNhwcTask##SFX;                                                                    \
    /* Output rows [r_lo, r_hi) of n * OH: each row's pixels, all M channels. */              \
    RT_API void rt_conv_nhwc_rows_##SFX(const RtConvNhwcTask##SFX *t, int64_t r_lo,           \
                                        int64_t r_hi) {                                       \
        const T *x = t->x, *w = t->w, *b = t->b, *r = t->r;                                   \
        T *y = t->y;                                                                          \
        const RtConvGeom *g = t->g;                                                           \
        const RtAct *act = t->act;                                                            \
        const int64_t C = g->c, M = g->m, cg = g->c / g->group, mg = g->m / g->group;         \
        const int64_t H = g->in[1], W = g->in[2], OH = g->out[1], OW = g->out[2];             \
        const RtAct no_act = {RT_ACT_NONE, 0.0f, 0.0f}; /* a residual without activation */     \
        int64_t n, oh, ow, kh_lo, kh_hi, row;                                                 \
        for (row = r_lo; row < r_hi; row++) {                                                 \
            const T *xn = x + row / OH * H * W * C;                                           \
            n = row / OH;                                                                     \
            oh = row % OH;                                                                    \
            {                                                                                 \
                int64_t ow_lo, ow_hi; /* pixels whose every kw tap is inside the input */     \
                rt_conv_range(H, g->k[1], g->d[1], oh * g->s[1] - g->pad[1], &kh_lo, &kh_hi); \
                {                                                                             \
                    const int64_t e = (g->k[2] - 1) * g->d[2];                                \
                    ow_lo = g->pad[2] > 0 ? (g->pad[2] + g->s[2] - 1) / g->s[2] : 0;          \
                    ow_hi = W - 1 - e + g->pad[2] < 0 ? 0 : (W - 1 - e + g->pad[2]) / g->s[2] + 1; \
                    if (ow_hi > OW) ow_hi = OW;                                               \
                    if (ow_lo > ow_hi) ow_lo = ow_hi;                                         \
                }                                                                             \
                for (ow = 0; ow < OW;) {                                                      \
                    T *yp = y + ((n * OH + oh) * OW + ow) * M;                                \
                    int64_t np = 1, kw_lo = 0, kw_hi = g->k[2];                               \
                    int acted = 0; /* the activation done in the tiles' registers */          \
                    /* depthwise: the whole row, else its interior, by the vector tiles      \
                     * where they fit */                                                      \
                    int64_t run =                                                             \
                        cg == 1 && ow == 0                                                    \
                            ? rt_conv_nhwc_dw_row_##SFX(g, xn, w, b, yp, oh, kh_lo, kh_hi,    \
                                                        r ? NULL : act, &acted)               \
                            : 0;                                                              \
                    if (cg == 1 && run == 0 && ow >= ow_lo && ow < ow_hi)                     \
                        run = rt_conv_nhwc_dw_run_##SFX(g, xn, w, b, yp, oh, ow, ow_hi - ow,  \
                                                        kh_lo, kh_hi, r ? NULL : act, &acted); \
                    if (run > 0) {                                                            \
                        np = run;                                                             \
                    } else if (ow >= ow_lo && ow + RT_CNHWC_TILE_P <= ow_hi) {                \
                        np = RT_CNHWC_TILE_P;                                                 \
                    } else {                                                                  \
                        rt_conv_range(W, g->k[2], g->d[2], ow * g->s[2] - g->pad[2], &kw_lo,  \
                                      &kw_hi);                                                \
                    }                                                                         \
                    if (run > 0) {                                                            \
                        /* computed by rt_conv_nhwc_dw_run */                                 \
                    } else if (cg == 1 && np == 1) {                                          \
                        rt_conv_nhwc_dw_pixel_##SFX(g, xn, w, b, yp, oh, ow, kh_lo, kh_hi,    \
                                                    kw_lo, kw_hi);                            \
                    } else if (cg == 1) {                                                     \
                        int p;                                                                \
                        if (!rt_conv_nhwc_dw_quad_##SFX(g, xn, w, b, yp, oh, ow, kh_lo, kh_hi)) \
                            for (p = 0; p < np; p++)                                          \
                                rt_conv_nhwc_dw_pixel_##SFX(g, xn, w, b, yp + p * M, oh,      \
                                                            ow + p, kh_lo, kh_hi, kw_lo,      \
                                                            kw_hi);                           \
                    } else {                                                                  \
                        int64_t grp, m0;                                                      \
                        const T *xp[RT_CNHWC_TILE_P];                                         \
                        T acc[RT_CNHWC_TILE_P][RT_CNHWC_TILE_M];                              \
                        const int64_t ih0 = oh * g->s[1] - g->pad[1] + kh_lo * g->d[1];       \
                        for (grp = 0; grp < g->group; grp++) {                                \
                            int p;                                                            \
                            for (p = 0; p < np; p++) {                                        \
                                const int64_t iw0 =                                           \
                                    (ow + p) * g->s[2] - g->pad[2] + kw_lo * g->d[2];         \
                                xp[p] = xn + (ih0 * W + iw0) * C + grp * cg;                  \
                            }                                                                 \
                            for (m0 = 0; m0 < mg; m0 += RT_CNHWC_TILE_M) {                    \
                                const int64_t tm =                                            \
                                    mg - m0 < RT_CNHWC_TILE_M ? mg - m0 : RT_CNHWC_TILE_M;    \
                                const int64_t mo = grp * mg + m0;                             \
                                const T *wp =                                                 \
                                    w + ((kh_lo * g->k[2] + kw_lo) * cg) * M + mo;            \
                                int64_t j;                                                    \
                                for (p = 0; p < np; p++)                                      \
                                    for (j = 0; j < RT_CNHWC_TILE_M; j++)                     \
                                        acc[p][j] = b && j < tm ? b[mo + j] : (T)0;           \
                                if (!rt_conv_nhwc_fast_##SFX(g, (int)np, tm, xp, wp,          \
                                                             kh_hi - kh_lo, kw_hi - kw_lo, acc)) \
                                    rt_conv_nhwc_tile_##SFX(g, (int)np, tm, xp, wp, kh_hi - kh_lo, \
                                                            kw_hi - kw_lo, acc);              \
                                for (p = 0; p < np; p++)                                      \
                                    for (j = 0; j < tm; j++) yp[p * M + mo + j] = acc[p][j];  \
                            }                                                                 \
                        }                                                                     \
                    }                                                                         \
                    if ((act || r) && !acted)                                                 \
                        rt_act_row_##SFX(yp, r ? r + (yp - y) : NULL, np * M,                 \
                                         act ? act : &no_act);                                \
                    ow += np;                                                                 \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    RT_API void rt_conv_nhwc_task_##SFX(void *arg, int64_t task, int worker) {                \
        const RtConvNhwcTask##SFX *t = (const RtConvNhwcTask##SFX *)arg;                      \
        const int64_t all = t->g->n * t->g->out[1];                                           \
        (void)worker;                                                                         \
        rt_conv_nhwc_rows_##SFX(t, rt_par_part(all, t->n_tasks, task),                        \
                                rt_par_part(all, t->n_tasks, task + 1));                      \
    }                                                                                         \
    /* rt_conv_nhwc_fused_SFX with its output rows shared among par's workers (rt_par.h;     \
     * NULL: serial), in even parts (rt_par_part): rt_pconv_nhwc_par_f32 cuts the rows of one \
     * image alike, so that in a depthwise layer between two 1x1 products each worker reads  \
     * the rows it wrote, and the next product reads the rows this layer's worker wrote. */   \
    RT_API void rt_conv_nhwc_fused_par_##SFX(const T *x, const T *w, const T *b, const T *r,  \
                                             T *y, const RtConvGeom *g, const RtAct *act,     \
                                             const RtPar *par) {                              \
        const int64_t all = g->n * g->out[1], n_rc = rt_par_chunks(par, all, 1);              \
        RtConvNhwcTask##SFX t;                                                                \
        if (all <= 0) return;                                                                 \
        t.x = x;                                                                              \
        t.w = w;                                                                              \
        t.b = b;                                                                              \
        t.r = r;                                                                              \
        t.y = y;                                                                              \
        t.g = g;                                                                              \
        t.act = act;                                                                          \
        t.n_tasks = n_rc;                                                                     \
        rt_par_run(par, n_rc, rt_conv_nhwc_task_##SFX, &t);                                   \
    }                                                                                         \
    /* x: (N,H,W,C), w: (KH,KW,C/group,M), b: (M) or NULL, r: (N,OH,OW,M) or NULL,            \
     * y: (N,OH,OW,M). y = act(conv(x, w) + b + r); act NULL: none. */                        \
    RT_API void rt_conv_nhwc_fused_##SFX(const T *x, const T *w, const T *b, const T *r,      \
                                         T *y, const RtConvGeom *g, const RtAct *act) {       \
        rt_conv_nhwc_fused_par_##SFX(x, w, b, r, y, g, act, (const RtPar *)0);                \
    }                                                                                         \
    /* x: (N,H,W,C), w: (KH,KW,C/group,M), b: (M) or NULL, y: (N,OH,OW,M) */                  \
    RT_API void rt_conv_nhwc_##SFX(const T *x, const T *w, const T *b, T *y,                  \
                                   const RtConvGeom *g) {                                     \
        rt_conv_nhwc_fused_##SFX(x, w, b, NULL, y, g, NULL);                                  \
    }

RT_CONV_NHWC_DEFINE(f32, float)
RT_CONV_NHWC_DEFINE(f64, double)

#undef RT_CONV_NHWC_DEFINE

#endif
