/* rt_rnn.h: the recurrent ops LSTM, GRU and RNN (ONNX opsets 1-22) in one kernel per element
 * type. Batch rows are independent recurrences, so the kernel runs one row at a time. The
 * gates are matrix products over all the gates at once: the input projection x W^T of `chunk`
 * time steps in one product (W read once per chunk, not once per step), then per step the
 * recurrent product h R^T of all G*H gate units, then the gate nonlinearities over whole rows
 * in loops that vectorize (float sigmoid and tanh from rt_vmath.h). Both products are
 * rt_gemm (rt_matmul.h) but for float where the compiler targets AVX-512: there, 4 x 4 dot
 * products of 16 lanes reduced together (the projection) and 8 rows against one vector (the
 * recurrent product, a stream of R from L3 at batch 1). Weights the compiler packed
 * (RtRnn.packed, backend/c/cgen_rnn.c) take their own: float W of any kind, the projection
 * on its prepacked panels; a float LSTM's R, a step that streams its gate-interleaved panels
 * once (the sums of a block of units' four gates end together, its cells follow) on every
 * ISA path (AVX-512, AVX2, portable loops). rt_rnn_par_SFX shares each product's units
 * among the workers of an RtPar (rt_par.h; the steps stay in order, one after another; a
 * packed float LSTM's chunk of steps in one hook call, rt_rnn_lstm_steps_f32).
 * Caller scratch: RT_RNN_SCRATCH(G, hidden, chunk) elements (the previous and next hidden
 * state, the LSTM cell, a temporary, and chunk rows of G*H gate values).
 * Directions forward, reverse and bidirectional; layouts 0 and 1; sequence_lens. C99. */
#ifndef KILN_RT_RNN_H
#define KILN_RT_RNN_H

#include "rt_common.h"
#include "rt_fusedattn.h" /* rt_fa_gemm_f32, rt_fa_transpose16_f32: the panel path's tiles */
#include "rt_matmul.h"
#include "rt_vmath.h"

#define RT_RNN_SIMPLE 0
#define RT_RNN_GRU 1
#define RT_RNN_LSTM 2

/* Activation functions of the activations attribute. */
#define RT_RNN_SIGMOID 0
#define RT_RNN_TANH 1
#define RT_RNN_RELU 2
#define RT_RNN_AFFINE 3
#define RT_RNN_LEAKY_RELU 4
#define RT_RNN_THRESHOLDED_RELU 5
#define RT_RNN_SCALED_TANH 6
#define RT_RNN_HARD_SIGMOID 7
#define RT_RNN_ELU 8
#define RT_RNN_SOFTSIGN 9
#define RT_RNN_SOFTPLUS 10

#define RT_RNN_MAX_DIRS 2                     /* bidirectional */
#define RT_RNN_MAX_ACTS 3                     /* f, g, h of LSTM */
#define RT_RNN_PANEL 64 /* rows of W packed as a panel of W^T: 4 zmm of the tile's 6 x 4 */
/* Bytes of per-worker scratch (rt_par.h) the float input projection packs W's panels in,
 * for `input` features: without it (no RtPar, or less scratch) it takes the dot products. */
#define RT_RNN_PROJ_SCRATCH(input) ((int64_t)RT_RNN_PANEL * (input) * (int64_t)sizeof(float))
/* elements of ws the kernel uses, for G gates (LSTM 4, GRU 3, RNN 1) and chunk steps */
#define RT_RNN_SCRATCH(gates, hidden, chunk) ((4 + (gates) * (chunk)) * (hidden))

typedef struct RtRnnAct {
    int fn;
    float alpha, beta;
} RtRnnAct;

typedef struct RtRnn {
    int kind; /* RT_RNN_SIMPLE, RT_RNN_GRU, RT_RNN_LSTM */
    int64_t seq, batch, input, hidden;
    int num_dir; /* 1 or 2 */
    int reverse; /* the single direction runs backwards */
    int layout;  /* 0: X (seq, batch, input); 1: X (batch, seq, input) */
    RtRnnAct act[RT_RNN_MAX_DIRS][RT_RNN_MAX_ACTS]; /* per direction: f, g, h */
    int has_clip;
    float clip;              /* gate pre-activations are clipped to [-clip, clip] */
    int input_forget;        /* LSTM: the forget gate is 1 - the input gate */
    int linear_before_reset; /* GRU: apply R_h before the reset gate */
    int64_t chunk;           /* time steps whose input projection is one product (>= 1) */
    int packed; /* float: RT_RNN_PACKED_W, RT_RNN_PACKED_R (LSTM) or both; 0: ONNX's layout */
} RtRnn;

#define RT_RNN_PACKED_W 1 /* w holds rt_rnn_pack_w_f32's panels (RT_RNN_W_PACKED) */
#define RT_RNN_PACKED_R 2 /* r holds rt_rnn_lstm_pack_f32's panels (RT_RNN_LSTM_PACKED) */

/* The float LSTM's recurrent weights as the compiler lays them out (rt_rnn_lstm_pack_f32):
 * per direction, blocks of RT_RNN_LSTM_UNITS hidden units, each a panel (H, 4, UNITS) whose
 * row k holds R[q*H + j][k] of the four gates q (i o f c) of the block's units j, zero past
 * H. One step's product then reads one contiguous stream (the hardware prefetchers' best
 * case), h[k] broadcast against whole vectors of units: no horizontal sums, and the sums of
 * all four gates of a block end in registers together, ready for its cells. */
#define RT_RNN_LSTM_UNITS 16 /* a zmm of units a gate: 4 sums of 16 lanes, 8 with k split */
#define RT_RNN_LSTM_COLS (4 * RT_RNN_LSTM_UNITS) /* floats of a panel row: 256 bytes */
#define RT_RNN_LSTM_BLOCKS(hidden) (((hidden) + RT_RNN_LSTM_UNITS - 1) / RT_RNN_LSTM_UNITS)
/* elements of the packed r of one direction */
#define RT_RNN_LSTM_PACKED(hidden) (RT_RNN_LSTM_BLOCKS(hidden) * RT_RNN_LSTM_COLS * (hidden))

/* The float input weights W (G*H, I) of every kind, as the compiler lays them out
 * (rt_rnn_pack_w_f32): per direction, RT_RNN_PANEL rows of W at a time as a panel of W^T
 * (I, RT_RNN_PANEL), zero past G*H: the panels rt_rnn_proj_panels_f32 would otherwise pack
 * anew at every chunk (a transpose of all of W each time: ~14% of a layer's time at the
 * bench's sizes). Elements of one direction: */
#define RT_RNN_W_PACKED(rows, input)                                                               \
    (((rows) + RT_RNN_PANEL - 1) / RT_RNN_PANEL * RT_RNN_PANEL * (input))

/* out (num_dir * RT_RNN_W_PACKED(rows, input)) = w (num_dir, rows, input) as panels. */
RT_API void rt_rnn_pack_w_f32(const float *w, int64_t rows, int64_t input, int64_t num_dir,
                              float *out) {
    int64_t d, pn, t, j;
    for (d = 0; d < num_dir; d++) {
        const float *wd = w + d * rows * input;
        float *od = out + d * RT_RNN_W_PACKED(rows, input);
        for (pn = 0; pn < (rows + RT_RNN_PANEL - 1) / RT_RNN_PANEL; pn++)
            for (t = 0; t < input; t++)
                for (j = 0; j < RT_RNN_PANEL; j++) {
                    const int64_t row = pn * RT_RNN_PANEL + j;
                    od[(pn * input + t) * RT_RNN_PANEL + j] =
                        row < rows ? wd[row * input + t] : 0.0f;
                }
    }
}

/* out (num_dir * RT_RNN_LSTM_PACKED(H)) = r (num_dir, 4H, H) as panels; the compiler's
 * layout (backend/c/cgen_rnn.c), also the tests'. */
RT_API void rt_rnn_lstm_pack_f32(const float *r, int64_t H, int64_t num_dir, float *out) {
    int64_t d, b, k, q, u;
    for (d = 0; d < num_dir; d++) {
        const float *rd = r + d * 4 * H * H;
        float *od = out + d * RT_RNN_LSTM_PACKED(H);
        for (b = 0; b < RT_RNN_LSTM_BLOCKS(H); b++)
            for (k = 0; k < H; k++)
                for (q = 0; q < 4; q++)
                    for (u = 0; u < RT_RNN_LSTM_UNITS; u++) {
                        const int64_t j = b * RT_RNN_LSTM_UNITS + u;
                        od[(b * H + k) * RT_RNN_LSTM_COLS + q * RT_RNN_LSTM_UNITS + u] =
                            j < H ? rd[(q * H + j) * H + k] : 0.0f;
                    }
    }
}

/* Defines rt_rnn_gemv_gemm_SFX(v, M, n, k, c, y, par): y[0..n) = c[0..n) + v @ M^T for M (n, k)
 * row-major (the rows of W or R of some gates), or v @ M^T alone when c is NULL: one product
 * over all the gates' units on rt_gemm (rt_matmul.h), its columns among par's workers. */
#define RT_RNN_GEMV_GEMM_DEFINE(SFX, T)                                                            \
    RT_API void rt_rnn_gemv_gemm_##SFX(const T *v, const T *M, int64_t n, int64_t k, const T *c,   \
                                       T *y, const RtPar *par) {                                   \
        RtGemm##SFX g;                                                                             \
        memset(&g, 0, sizeof g);                                                                   \
        g.m = 1, g.n = n, g.k = k, g.alpha = 1, g.beta = 1;                                        \
        g.a = v, g.a_rs = k, g.a_cs = 1;                                                           \
        g.b = M, g.b_rs = 1, g.b_cs = k;                                                           \
        g.c = c, g.c_rs = 0, g.c_cs = 1;                                                           \
        g.y = y;                                                                                   \
        rt_gemm_par_##SFX(&g, par);                                                                \
    }

RT_RNN_GEMV_GEMM_DEFINE(f32, float)
RT_RNN_GEMV_GEMM_DEFINE(f64, double)

/* Defines rt_rnn_proj_gemm_SFX(x, xs, m, w, k, n, y, par): y (m, n) row-major = x w^T for x
 * (m, k) with rows xs apart and w (n, k) row-major: the input projection of m time steps on
 * rt_gemm, its tiles among par's workers. */
#define RT_RNN_PROJ_GEMM_DEFINE(SFX, T)                                                            \
    RT_API void rt_rnn_proj_gemm_##SFX(const T *x, int64_t xs, int64_t m, const T *w, int64_t k,   \
                                       int64_t n, T *y, const RtPar *par) {                        \
        RtGemm##SFX g;                                                                             \
        memset(&g, 0, sizeof g);                                                                   \
        g.m = m, g.n = n, g.k = k, g.alpha = 1;                                                    \
        g.a = x, g.a_rs = xs, g.a_cs = 1;                                                          \
        g.b = w, g.b_rs = 1, g.b_cs = k;                                                           \
        g.y = y;                                                                                   \
        rt_gemm_par_##SFX(&g, par);                                                                \
    }

RT_RNN_PROJ_GEMM_DEFINE(f32, float)
RT_RNN_PROJ_GEMM_DEFINE(f64, double)

/* rt_rnn_gemv_SFX(v, M, n, k, c, y, par): as rt_rnn_gemv_gemm_SFX. The recurrent product of
 * every step is one: at batch 1, M (R: G*H rows of H) comes from L3 each step (4 MiB at
 * H = 512), so that its rate is the rate of that stream. The AVX-512 (AVX2) form reads 8
 * rows of M side by side against one load of v, 16 (8) lanes a row summed at its end (~80
 * GB/s on the EPYC host against ~67 for rt_gemm's 4 dot products of 8 lanes); rows among
 * par's workers in multiples of 8, each row summed alike whatever its task. */
#if defined(RT_FA_AVX512) && !defined(RT_RNN_PORTABLE) /* rt_fusedattn.h's ISA tests */
#define RT_RNN_AVX512 1
#elif defined(RT_FA_AVX2) && !defined(RT_RNN_PORTABLE)
#define RT_RNN_AVX2 1
#endif
#if defined(RT_RNN_AVX512) || defined(RT_RNN_AVX2)
#include <immintrin.h>
#define RT_RNN_GEMV_ROWS 8 /* rows of M a pass: 8 sums and v's vector, 9 loads a step */
#if defined(__GNUC__) || defined(__clang__)
#define RT_RNN_INLINE __attribute__((always_inline)) /* nr becomes a constant */
#else
#define RT_RNN_INLINE
#endif
#ifdef RT_RNN_AVX512
/* y[g0 + r] = c[g0 + r] + M[g0 + r] . v for r < nr (1 or RT_RNN_GEMV_ROWS). */
RT_RNN_INLINE RT_API void rt_rnn_gemv_tile_f32(const int nr, const float *v, const float *M,
                                               int64_t k, const float *c, float *y,
                                               int64_t g0) {
    const int64_t km = k - k % 16;
    const __mmask16 tail = (__mmask16)((1u << (k % 16)) - 1);
    __m512 acc[RT_RNN_GEMV_ROWS];
    const float *m0 = M + g0 * k;
    int64_t t;
    int r;
    for (r = 0; r < nr; r++) acc[r] = _mm512_setzero_ps();
    for (t = 0; t < km; t += 16) {
        const __m512 x = _mm512_loadu_ps(v + t);
        for (r = 0; r < nr; r++)
            acc[r] = _mm512_fmadd_ps(x, _mm512_loadu_ps(m0 + r * k + t), acc[r]);
    }
    if (tail) {
        const __m512 x = _mm512_maskz_loadu_ps(tail, v + km);
        for (r = 0; r < nr; r++)
            acc[r] = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(tail, m0 + r * k + km), acc[r]);
    }
    for (r = 0; r < nr; r++) y[g0 + r] = (c ? c[g0 + r] : 0.0f) + _mm512_reduce_add_ps(acc[r]);
}
#else
/* The AVX2 form: 8 lanes a row, the tail through a masked load. */
RT_RNN_INLINE RT_API void rt_rnn_gemv_tile_f32(const int nr, const float *v, const float *M,
                                               int64_t k, const float *c, float *y,
                                               int64_t g0) {
    const int64_t km = k - k % 8;
    const __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(k % 8)),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256 acc[RT_RNN_GEMV_ROWS];
    const float *m0 = M + g0 * k;
    float lane[8];
    int64_t t;
    int r, l;
    for (r = 0; r < nr; r++) acc[r] = _mm256_setzero_ps();
    for (t = 0; t < km; t += 8) {
        const __m256 x = _mm256_loadu_ps(v + t);
        for (r = 0; r < nr; r++)
            acc[r] = _mm256_fmadd_ps(x, _mm256_loadu_ps(m0 + r * k + t), acc[r]);
    }
    if (k % 8) {
        const __m256 x = _mm256_maskload_ps(v + km, tail);
        for (r = 0; r < nr; r++)
            acc[r] = _mm256_fmadd_ps(x, _mm256_maskload_ps(m0 + r * k + km, tail), acc[r]);
    }
    for (r = 0; r < nr; r++) {
        _mm256_storeu_ps(lane, acc[r]);
        for (l = 4; l > 0; l /= 2) { /* 4 + 4, 2 + 2, 1 + 1 */
            int i;
            for (i = 0; i < l; i++) lane[i] += lane[i + l];
        }
        y[g0 + r] = (c ? c[g0 + r] : 0.0f) + lane[0];
    }
}
#endif
RT_API void rt_rnn_gemv_rows_f32(const float *v, const float *M, int64_t k, const float *c,
                                 float *y, int64_t lo, int64_t hi) {
    int64_t g = lo;
    for (; g + RT_RNN_GEMV_ROWS <= hi; g += RT_RNN_GEMV_ROWS)
        rt_rnn_gemv_tile_f32(RT_RNN_GEMV_ROWS, v, M, k, c, y, g);
    for (; g < hi; g++) rt_rnn_gemv_tile_f32(1, v, M, k, c, y, g);
}
typedef struct RtRnnGemvTask {
    const float *v, *M, *c;
    float *y;
    int64_t n, k, rows; /* rows a task: a multiple of RT_RNN_GEMV_ROWS */
} RtRnnGemvTask;
RT_API void rt_rnn_gemv_task_f32(void *arg, int64_t task, int worker) {
    const RtRnnGemvTask *a = (const RtRnnGemvTask *)arg;
    const int64_t lo = task * a->rows, hi = lo + a->rows < a->n ? lo + a->rows : a->n;
    (void)worker;
    rt_rnn_gemv_rows_f32(a->v, a->M, a->k, a->c, a->y, lo, hi);
}
RT_API void rt_rnn_gemv_f32(const float *v, const float *M, int64_t n, int64_t k, const float *c,
                            float *y, const RtPar *par) {
    const int64_t units = (n + RT_RNN_GEMV_ROWS - 1) / RT_RNN_GEMV_ROWS;
    const int64_t n_tasks = rt_par_chunks(par, units, 1);
    RtRnnGemvTask a;
    a.v = v;
    a.M = M;
    a.c = c;
    a.y = y;
    a.n = n;
    a.k = k;
    a.rows = (units + n_tasks - 1) / n_tasks * RT_RNN_GEMV_ROWS;
    rt_par_run(par, (n + a.rows - 1) / a.rows, rt_rnn_gemv_task_f32, &a);
}
#else
RT_API void rt_rnn_gemv_f32(const float *v, const float *M, int64_t n, int64_t k, const float *c,
                            float *y, const RtPar *par) {
    rt_rnn_gemv_gemm_f32(v, M, n, k, c, y, par);
}
#endif

#ifdef RT_RNN_AVX512
/* The input projection's tile: y[(t0 + r) * ys + g0 + c] = x[t0 + r] . w[g0 + c] for r < nr,
 * c < nc (<= 4): 4 x 4 dot products of 16 lanes (8 loads a step of 16 for 16 FMAs), the 16
 * sums reduced together (4 levels of block and lane shuffles, lane 4r + c holds sum (r, c)).
 * Rows past nr, nc repeat the last one (computed, not stored), so that every output is
 * summed alike wherever its tile falls. */
RT_API void rt_rnn_proj_tile_f32(const float *x, int64_t xs, int nr, const float *w, int nc,
                                 int64_t k, float *y, int64_t ys) {
    const int64_t km = k - k % 16;
    const __mmask16 tail = (__mmask16)((1u << (k % 16)) - 1);
    const float *xr[4], *wr[4];
    __m512 v[16], u[8], q[4], z[2], s;
    float out[16];
    int64_t t;
    int r, c, i;
    for (r = 0; r < 4; r++) xr[r] = x + (r < nr ? r : nr - 1) * xs;
    for (c = 0; c < 4; c++) wr[c] = w + (c < nc ? c : nc - 1) * k;
    for (i = 0; i < 16; i++) v[i] = _mm512_setzero_ps();
    for (t = 0; t < km; t += 16) { /* v[4c + r] sums x[r] . w[c] */
        __m512 xv[4], wv[4];
        for (r = 0; r < 4; r++) xv[r] = _mm512_loadu_ps(xr[r] + t);
        for (c = 0; c < 4; c++) wv[c] = _mm512_loadu_ps(wr[c] + t);
        for (c = 0; c < 4; c++)
            for (r = 0; r < 4; r++) v[4 * c + r] = _mm512_fmadd_ps(xv[r], wv[c], v[4 * c + r]);
    }
    if (tail) {
        __m512 xv[4], wv[4];
        for (r = 0; r < 4; r++) xv[r] = _mm512_maskz_loadu_ps(tail, xr[r] + km);
        for (c = 0; c < 4; c++) wv[c] = _mm512_maskz_loadu_ps(tail, wr[c] + km);
        for (c = 0; c < 4; c++)
            for (r = 0; r < 4; r++) v[4 * c + r] = _mm512_fmadd_ps(xv[r], wv[c], v[4 * c + r]);
    }
    /* 16 -> 8: blocks 0,1 of u[i] partial sums of v[2i], blocks 2,3 of v[2i + 1] */
    for (i = 0; i < 8; i++)
        u[i] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44),
                             _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xee));
    /* 8 -> 4: block b of q[j] a partial sum of v[4j + b] */
    for (i = 0; i < 4; i++)
        q[i] = _mm512_add_ps(_mm512_shuffle_f32x4(u[2 * i], u[2 * i + 1], 0x88),
                             _mm512_shuffle_f32x4(u[2 * i], u[2 * i + 1], 0xdd));
    /* 4 -> 2 -> 1 within each block: lane 4b + j of s the sum of v[4j + b] */
    for (i = 0; i < 2; i++)
        z[i] = _mm512_add_ps(_mm512_shuffle_ps(q[2 * i], q[2 * i + 1], 0x44),
                             _mm512_shuffle_ps(q[2 * i], q[2 * i + 1], 0xee));
    s = _mm512_add_ps(_mm512_shuffle_ps(z[0], z[1], 0x88), _mm512_shuffle_ps(z[0], z[1], 0xdd));
    _mm512_storeu_ps(out, s); /* lane 4r + c: v[4c + r], x[r] . w[c] */
    for (r = 0; r < nr; r++)
        for (c = 0; c < nc; c++) y[r * ys + c] = out[4 * r + c];
}
/* Columns [g_lo, g_hi) of y (m, ys) = x w^T: w's 4 rows at a time against every 4 rows of x
 * (w's rows stay in L1 while x's pass). */
RT_API void rt_rnn_proj_cols_f32(const float *x, int64_t xs, int64_t m, const float *w,
                                 int64_t k, float *y, int64_t ys, int64_t g_lo, int64_t g_hi) {
    int64_t g0, t0;
    for (g0 = g_lo; g0 < g_hi; g0 += 4) {
        const int nc = (int)(g_hi - g0 < 4 ? g_hi - g0 : 4);
        for (t0 = 0; t0 < m; t0 += 4)
            rt_rnn_proj_tile_f32(x + t0 * xs, xs, (int)(m - t0 < 4 ? m - t0 : 4), w + g0 * k, nc,
                                 k, y + t0 * ys + g0, ys);
    }
}
typedef struct RtRnnProjTask {
    const float *x, *w;
    float *y;
    const RtPar *par;
    int64_t xs, m, k, n, cols; /* columns a task: a multiple of 4 (of RT_RNN_PANEL: panels) */
} RtRnnProjTask;
RT_API void rt_rnn_proj_task_f32(void *arg, int64_t task, int worker) {
    const RtRnnProjTask *a = (const RtRnnProjTask *)arg;
    const int64_t lo = task * a->cols, hi = lo + a->cols < a->n ? lo + a->cols : a->n;
    (void)worker;
    rt_rnn_proj_cols_f32(a->x, a->xs, a->m, a->w, a->k, a->y, a->n, lo, hi);
}
/* Columns [g_lo, g_hi) of y (m, ys) = x w^T, RT_RNN_PANEL rows of w at a time packed as a
 * panel of w^T (k, RT_RNN_PANEL) in pw (16 x 16 register transposes), then the rows of x
 * against it as the attention's tiles (rt_fa_gemm_f32: 6 rows x 64 columns, x broadcast,
 * 4 + 6 loads for 24 FMAs, no horizontal sums): ~1.6x the dot products' rate at LSTM sizes;
 * the pack is 1/m of the product. */
RT_API void rt_rnn_proj_panels_f32(const float *x, int64_t xs, int64_t m, const float *w,
                                   int64_t k, float *y, int64_t ys, int64_t g_lo, int64_t g_hi,
                                   float *pw) {
    static const float one[RT_FA_MR] = {1, 1, 1, 1, 1, 1};
    int64_t g0, j, t;
    for (g0 = g_lo; g0 < g_hi; g0 += RT_RNN_PANEL) {
        const int64_t nc = g_hi - g0 < RT_RNN_PANEL ? g_hi - g0 : RT_RNN_PANEL;
        const float *wp = w + g0 * k;
        for (j = 0; j + 16 <= nc; j += 16) {
            for (t = 0; t + 16 <= k; t += 16)
                rt_fa_transpose16_f32(wp + j * k + t, k, pw + t * RT_RNN_PANEL + j, RT_RNN_PANEL);
            for (; t < k; t++) {
                int r;
                for (r = 0; r < 16; r++) pw[t * RT_RNN_PANEL + j + r] = wp[(j + r) * k + t];
            }
        }
        for (; j < nc; j++)
            for (t = 0; t < k; t++) pw[t * RT_RNN_PANEL + j] = wp[j * k + t];
        for (t = 0; t < m; t += RT_FA_MR)
            rt_fa_gemm_f32(m - t < RT_FA_MR ? m - t : RT_FA_MR, nc, k, x + t * xs, xs, 1, pw,
                           RT_RNN_PANEL, y + t * ys + g0, ys, one);
    }
}
RT_API void rt_rnn_proj_panel_task_f32(void *arg, int64_t task, int worker) {
    const RtRnnProjTask *a = (const RtRnnProjTask *)arg;
    const int64_t lo = task * a->cols, hi = lo + a->cols < a->n ? lo + a->cols : a->n;
    rt_rnn_proj_panels_f32(a->x, a->xs, a->m, a->w, a->k, a->y, a->n, lo, hi,
                           (float *)rt_par_scratch(a->par, worker));
}
/* rt_rnn_proj_gemm_f32's product, w's rows among par's workers: in panels of RT_RNN_PANEL
 * when par's scratch holds RT_RNN_PROJ_SCRATCH(k) bytes, else in fours through the dot
 * products; every output computed alike whatever the split. */
RT_API void rt_rnn_proj_f32(const float *x, int64_t xs, int64_t m, const float *w, int64_t k,
                            int64_t n, float *y, const RtPar *par) {
    const int panels = par && par->scratch && par->scratch_stride >= RT_RNN_PROJ_SCRATCH(k);
    const int64_t step = panels ? RT_RNN_PANEL : 4, units = (n + step - 1) / step;
    const int64_t n_tasks = rt_par_chunks(par, units, 1);
    RtRnnProjTask a;
    a.x = x;
    a.w = w;
    a.y = y;
    a.xs = xs;
    a.m = m;
    a.k = k;
    a.n = n;
    a.par = par;
    a.cols = (units + n_tasks - 1) / n_tasks * step;
    if (m > 0)
        rt_par_run(par, (n + a.cols - 1) / a.cols,
                   panels ? rt_rnn_proj_panel_task_f32 : rt_rnn_proj_task_f32, &a);
}
#else
RT_API void rt_rnn_proj_f32(const float *x, int64_t xs, int64_t m, const float *w, int64_t k,
                            int64_t n, float *y, const RtPar *par) {
    rt_rnn_proj_gemm_f32(x, xs, m, w, k, n, y, par);
}
#endif
RT_API void rt_rnn_proj_f64(const double *x, int64_t xs, int64_t m, const double *w, int64_t k,
                            int64_t n, double *y, const RtPar *par) {
    rt_rnn_proj_gemm_f64(x, xs, m, w, k, n, y, par);
}
RT_API void rt_rnn_gemv_f64(const double *v, const double *M, int64_t n, int64_t k,
                            const double *c, double *y, const RtPar *par) {
    rt_rnn_gemv_gemm_f64(v, M, n, k, c, y, par);
}

/* rt_rnn_lstm_split_SFX(par, p, act, g, R, P, hp, hn, c, t1): one LSTM step as rt_rnn_step_SFX
 * computes it, its hidden units shared among par's workers; 0 where it does not (no workers,
 * or a recurrent product that is not summed row by row: only the ISA rows below split). */
RT_API int rt_rnn_lstm_split_f32(const RtPar *par, const RtRnn *p, const RtRnnAct *act, float *g,
                                 const float *R, const float *P, const float *hp, float *hn,
                                 float *c, float *t1);
/* rt_rnn_proj_packed_SFX(x, xs, m, wp, k, n, y, par): rt_rnn_proj_SFX's product with w
 * packed (wp: the RT_RNN_W_PACKED(n, k) panels of one direction): the rows of x against
 * each panel as the attention's tiles (rt_fa_gemm_f32: 6 rows x 64 columns where the
 * compiler targets AVX-512, loops that vectorize else), panels among par's workers. */
typedef struct RtRnnProjPackedTask {
    const float *x, *wp;
    float *y;
    int64_t xs, m, k, n, panels; /* panels a task */
} RtRnnProjPackedTask;
RT_API void rt_rnn_proj_packed_task_f32(void *arg, int64_t task, int worker) {
    static const float one[RT_FA_MR] = {1, 1, 1, 1, 1, 1};
    const RtRnnProjPackedTask *a = (const RtRnnProjPackedTask *)arg;
    const int64_t np = (a->n + RT_RNN_PANEL - 1) / RT_RNN_PANEL, p0 = task * a->panels;
    const int64_t p1 = p0 + a->panels < np ? p0 + a->panels : np;
    int64_t pn, t;
    (void)worker;
    for (pn = p0; pn < p1; pn++) {
        const int64_t g0 = pn * RT_RNN_PANEL;
        const int64_t nc = a->n - g0 < RT_RNN_PANEL ? a->n - g0 : RT_RNN_PANEL;
        for (t = 0; t < a->m; t += RT_FA_MR)
            rt_fa_gemm_f32(a->m - t < RT_FA_MR ? a->m - t : RT_FA_MR, nc, a->k, a->x + t * a->xs,
                           a->xs, 1, a->wp + g0 * a->k, RT_RNN_PANEL, a->y + t * a->n + g0,
                           a->n, one);
    }
}
RT_API void rt_rnn_proj_packed_f32(const float *x, int64_t xs, int64_t m, const float *wp,
                                   int64_t k, int64_t n, float *y, const RtPar *par) {
    const int64_t np = (n + RT_RNN_PANEL - 1) / RT_RNN_PANEL, n_tasks = rt_par_chunks(par, np, 1);
    RtRnnProjPackedTask a;
    a.x = x;
    a.wp = wp;
    a.y = y;
    a.xs = xs;
    a.m = m;
    a.k = k;
    a.n = n;
    a.panels = (np + n_tasks - 1) / n_tasks;
    if (m > 0) rt_par_run(par, (np + a.panels - 1) / a.panels, rt_rnn_proj_packed_task_f32, &a);
}
RT_API void rt_rnn_proj_packed_f64(const double *x, int64_t xs, int64_t m, const double *wp,
                                   int64_t k, int64_t n, double *y, const RtPar *par) {
    (void)x, (void)xs, (void)m, (void)wp, (void)k, (void)n, (void)y, (void)par;
    /* never reached: the compiler packs float weights only (RT_RNN_PACKED_W) */
}

/* rt_rnn_lstm_packed_SFX(par, p, act, g, R, P, hp, hn, c, t1): one LSTM step as
 * rt_rnn_step_SFX computes it where r is packed (R: the panels of one direction), its blocks of
 * units shared among par's workers; 0 where r is not packed. */
RT_API int rt_rnn_lstm_packed_f32(const RtPar *par, const RtRnn *p, const RtRnnAct *act,
                                  float *g, const float *R, const float *P, const float *hp,
                                  float *hn, float *c, float *t1);
RT_API int rt_rnn_lstm_packed_f64(const RtPar *par, const RtRnn *p, const RtRnnAct *act,
                                  double *g, const double *R, const double *P, const double *hp,
                                  double *hn, double *c, double *t1) {
    (void)par, (void)p, (void)act, (void)g, (void)R, (void)P, (void)hp, (void)hn, (void)c;
    (void)t1;
    return 0; /* the compiler packs float weights only */
}
RT_API int rt_rnn_lstm_split_f64(const RtPar *par, const RtRnn *p, const RtRnnAct *act,
                                 double *g, const double *R, const double *P, const double *hp,
                                 double *hn, double *c, double *t1) {
    (void)par, (void)p, (void)act, (void)g, (void)R, (void)P, (void)hp, (void)hn, (void)c;
    (void)t1;
    return 0; /* rt_gemm sums the double product: its tiles decide the order */
}
/* rt_rnn_lstm_steps_SFX(par, p, act, xw, R, P, hp, hn, c, t1, yb, ys, n, lo, rev): the n
 * steps of one chunk as n calls of rt_rnn_step_SFX compute them (hp and hn swapped after each,
 * step k at time t = rev ? lo + n - 1 - k : lo + k, its row of gates xw + (t - lo) * 4H, its
 * output copied to yb + t * ys where yb is not NULL), in one call of par's hook rather than
 * one a step; 0 where it does not (r not packed, no workers, one block of units). */
RT_API int rt_rnn_lstm_steps_f32(const RtPar *par, const RtRnn *p, const RtRnnAct *act,
                                 float *xw, const float *R, const float *P, float *hp, float *hn,
                                 float *c, float *t1, float *yb, int64_t ys, int64_t n,
                                 int64_t lo, int rev);
RT_API int rt_rnn_lstm_steps_f64(const RtPar *par, const RtRnn *p, const RtRnnAct *act,
                                 double *xw, const double *R, const double *P, double *hp,
                                 double *hn, double *c, double *t1, double *yb, int64_t ys,
                                 int64_t n, int64_t lo, int rev) {
    (void)par, (void)p, (void)act, (void)xw, (void)R, (void)P, (void)hp, (void)hn, (void)c;
    (void)t1, (void)yb, (void)ys, (void)n, (void)lo, (void)rev;
    return 0; /* the compiler packs float weights only */
}

/* Defines rt_rnn_SFX. With G = 4 (LSTM, gates i o f c), 3 (GRU, gates z r h) or 1 (RNN) and
 * D = num_dir, layout 0: x: (S, B, I), y: (S, D, B, H), h0/c0/y_h/y_c: (D, B, H); layout 1:
 * x: (B, S, I), y: (B, S, D, H), h0/c0/y_h/y_c: (B, D, H). w: (D, G*H, I), r: (D, G*H, H),
 * bias: (D, 2*G*H) (Wb then Rb), peep: (D, 3*H) (i o f), seq_lens: (B). Every pointer but
 * x, w, r and ws may be NULL. ws: RT_RNN_SCRATCH(G, H, chunk) elements. Steps past a row's
 * length are zero in y; a length outside [0, S] returns RT_ERR_VALUE before anything is
 * written. */
#define RT_RNN_DEFINE(SFX, T, EXP, TANH, LOG, FABS)                                                \
    RT_API T rt_rnn_act_##SFX(const RtRnnAct *a, T v) {                                            \
        switch (a->fn) {                                                                           \
        case RT_RNN_SIGMOID:                                                                       \
            return 1 / (1 + EXP(-v));                                                              \
        case RT_RNN_TANH:                                                                          \
            return TANH(v);                                                                        \
        case RT_RNN_RELU:                                                                          \
            return v > 0 ? v : 0;                                                                  \
        case RT_RNN_AFFINE:                                                                        \
            return (T)a->alpha * v + (T)a->beta;                                                   \
        case RT_RNN_LEAKY_RELU:                                                                    \
            return v >= 0 ? v : (T)a->alpha * v;                                                   \
        case RT_RNN_THRESHOLDED_RELU:                                                              \
            return v > (T)a->alpha ? v : 0;                                                        \
        case RT_RNN_SCALED_TANH:                                                                   \
            return (T)a->alpha * TANH((T)a->beta * v);                                             \
        case RT_RNN_HARD_SIGMOID: {                                                                \
            T u = (T)a->alpha * v + (T)a->beta;                                                    \
            return u < 0 ? 0 : u > 1 ? 1 : u;                                                      \
        }                                                                                          \
        case RT_RNN_ELU:                                                                           \
            return v >= 0 ? v : (T)a->alpha * (EXP(v) - 1);                                        \
        case RT_RNN_SOFTSIGN:                                                                      \
            return v / (1 + FABS(v));                                                              \
        default:                                                                                   \
            return v > 0 ? v + LOG(1 + EXP(-v)) : LOG(1 + EXP(v)); /* softplus */                  \
        }                                                                                          \
    }                                                                                              \
    /* v[0..n) = act(v[0..n)); the common functions in loops that vectorize. */                 \
    RT_API void rt_rnn_act_row_##SFX(const RtRnnAct *a, T *v, int64_t n) {                         \
        int64_t j;                                                                                 \
        switch (a->fn) {                                                                           \
        case RT_RNN_SIGMOID:                                                                       \
            for (j = 0; j < n; j++) v[j] = 1 / (1 + EXP(-v[j]));                                   \
            break;                                                                                 \
        case RT_RNN_TANH:                                                                          \
            for (j = 0; j < n; j++) v[j] = TANH(v[j]);                                             \
            break;                                                                                 \
        default:                                                                                   \
            for (j = 0; j < n; j++) v[j] = rt_rnn_act_##SFX(a, v[j]);                              \
            break;                                                                                 \
        }                                                                                          \
    }                                                                                              \
    RT_API void rt_rnn_clip_row_##SFX(const RtRnn *p, T *v, int64_t n) {                           \
        const T lo = -(T)p->clip, hi = (T)p->clip;                                                 \
        int64_t j;                                                                                 \
        if (!p->has_clip) return;                                                                  \
        for (j = 0; j < n; j++) v[j] = v[j] < lo ? lo : v[j] > hi ? hi : v[j];                     \
    }                                                                                              \
    /* The LSTM step after its recurrent product, for hidden units [j0, j1): g holds the      \
     * gate pre-activations (i o f c, H each), c the cell (updated), hn the output; every      \
     * unit alone, so that any split of the units gives the same bytes. t1: H elements. */    \
    RT_API void rt_rnn_lstm_gates_##SFX(const RtRnn *p, const RtRnnAct *act, T *g, const T *P,  \
                                        T *c, T *t1, T *hn, int64_t j0, int64_t j1) {          \
        const int64_t H = p->hidden, n = j1 - j0;                                                  \
        T *gi = g + j0, *go = g + H + j0, *gf = g + 2 * H + j0, *gc = g + 3 * H + j0;              \
        const T *Pi = P ? P + j0 : NULL, *Po = P ? P + H + j0 : NULL;                              \
        const T *Pf = P ? P + 2 * H + j0 : NULL;                                                   \
        int64_t j;                                                                                 \
        c += j0, t1 += j0, hn += j0;                                                               \
        if (P)                                                                                     \
            for (j = 0; j < n; j++) gi[j] += Pi[j] * c[j], gf[j] += Pf[j] * c[j];                  \
        rt_rnn_clip_row_##SFX(p, gi, n);                                                           \
        rt_rnn_act_row_##SFX(&act[0], gi, n);                                                      \
        if (p->input_forget) {                                                                     \
            for (j = 0; j < n; j++) gf[j] = 1 - gi[j];                                             \
        } else {                                                                                   \
            rt_rnn_clip_row_##SFX(p, gf, n);                                                       \
            rt_rnn_act_row_##SFX(&act[0], gf, n);                                                  \
        }                                                                                          \
        rt_rnn_clip_row_##SFX(p, gc, n);                                                           \
        rt_rnn_act_row_##SFX(&act[1], gc, n);                                                      \
        for (j = 0; j < n; j++) c[j] = gf[j] * c[j] + gi[j] * gc[j];                               \
        if (P)                                                                                     \
            for (j = 0; j < n; j++) go[j] += Po[j] * c[j];                                         \
        rt_rnn_clip_row_##SFX(p, go, n);                                                           \
        rt_rnn_act_row_##SFX(&act[0], go, n);                                                      \
        for (j = 0; j < n; j++) t1[j] = c[j];                                                      \
        rt_rnn_act_row_##SFX(&act[2], t1, n);                                                      \
        for (j = 0; j < n; j++) hn[j] = go[j] * t1[j];                                             \
    }                                                                                              \
    /* One step of one batch row: hp -> hn (and the LSTM cell c in place). g: the step's row of  \
     * the input projection (x W^T + the biases, G*H), overwritten; t1: H elements. */    \
    RT_API void rt_rnn_step_##SFX(const RtPar *par, const RtRnn *p, const RtRnnAct *act, T *g,     \
                                  const T *R,                                                      \
                                  const T *Rbh, const T *P, const T *hp, T *hn, T *c,              \
                                  T *t1) {                                                         \
        int64_t H = p->hidden, j;                                                                  \
        if (p->kind == RT_RNN_LSTM) { /* gates i o f c */                                          \
            if (rt_rnn_lstm_packed_##SFX(par, p, act, g, R, P, hp, hn, c, t1)) return;             \
            if (rt_rnn_lstm_split_##SFX(par, p, act, g, R, P, hp, hn, c, t1)) return;              \
            rt_rnn_gemv_##SFX(hp, R, 4 * H, H, g, g, par);                                         \
            rt_rnn_lstm_gates_##SFX(p, act, g, P, c, t1, hn, 0, H);                                \
        } else if (p->kind == RT_RNN_GRU) { /* gates z r h */                                      \
            T *gz = g, *gr = g + H, *gh = g + 2 * H;                                               \
            rt_rnn_gemv_##SFX(hp, R, 2 * H, H, g, g, par);                                         \
            rt_rnn_clip_row_##SFX(p, g, 2 * H);                                                    \
            rt_rnn_act_row_##SFX(&act[0], g, 2 * H);                                               \
            if (p->linear_before_reset) { /* h = g(x Wh + Wbh + r (hp Rh + Rbh)) */                \
                rt_rnn_gemv_##SFX(hp, R + 2 * H * H, H, H, Rbh, t1, par);                          \
                for (j = 0; j < H; j++) gh[j] += gr[j] * t1[j];                                    \
            } else { /* h = g(x Wh + (r hp) Rh + Wbh + Rbh) */                                     \
                for (j = 0; j < H; j++) t1[j] = gr[j] * hp[j];                                     \
                rt_rnn_gemv_##SFX(t1, R + 2 * H * H, H, H, gh, gh, par);                           \
            }                                                                                      \
            rt_rnn_clip_row_##SFX(p, gh, H);                                                       \
            rt_rnn_act_row_##SFX(&act[1], gh, H);                                                  \
            for (j = 0; j < H; j++) hn[j] = (1 - gz[j]) * gh[j] + gz[j] * hp[j];                   \
        } else {                                                                                   \
            rt_rnn_gemv_##SFX(hp, R, H, H, g, g, par);                                             \
            rt_rnn_clip_row_##SFX(p, g, H);                                                        \
            rt_rnn_act_row_##SFX(&act[0], g, H);                                                   \
            for (j = 0; j < H; j++) hn[j] = g[j];                                                  \
        }                                                                                          \
    }                                                                                              \
    RT_API int rt_rnn_par_##SFX(const RtRnn *p, const T *x, const T *w, const T *r,                \
                                const T *bias, const int32_t *seq_lens, const T *h0, const T *c0,  \
                                const T *peep, T *y, T *y_h, T *y_c, T *ws, const RtPar *par) {    \
        int64_t S = p->seq, B = p->batch, I = p->input, H = p->hidden, D = p->num_dir;             \
        int64_t G = p->kind == RT_RNN_LSTM ? 4 : p->kind == RT_RNN_GRU ? 3 : 1;                    \
        int64_t C = p->chunk, GH = G * H;                                                          \
        int lbr = p->kind == RT_RNN_GRU && p->linear_before_reset;                                 \
        int64_t b, d, t, j, s0;                                                                 \
        if (seq_lens)                                                                              \
            for (b = 0; b < B; b++)                                                                \
                if (seq_lens[b] < 0 || seq_lens[b] > S) return RT_ERR_VALUE;                       \
        for (d = 0; d < D; d++) {                                                                  \
            const T *W = w + d * (p->packed & RT_RNN_PACKED_W ? RT_RNN_W_PACKED(GH, I) : GH * I);  \
            const T *R = r + d * (p->packed & RT_RNN_PACKED_R ? RT_RNN_LSTM_PACKED(H) : GH * H);   \
            const T *Wb = bias ? bias + d * 2 * GH : NULL;                                         \
            const T *P = peep ? peep + d * 3 * H : NULL;                                           \
            int rev = p->reverse || d == 1;                                                        \
            for (b = 0; b < B; b++) {                                                              \
                int64_t len = seq_lens ? seq_lens[b] : S;                                          \
                int64_t hat = (p->layout ? b * D + d : d * B + b) * H;                             \
                int64_t xstep = p->layout ? I : B * I; /* between time steps in x */               \
                const T *xb = x + (p->layout ? b * S : b) * I;                                     \
                T *hp = ws, *hn = ws + H, *c = ws + 2 * H, *t1 = ws + 3 * H, *xw = ws + 4 * H;     \
                T *tmp;                                                                            \
                for (j = 0; j < H; j++) {                                                          \
                    hp[j] = h0 ? h0[hat + j] : 0;                                                  \
                    c[j] = c0 && p->kind == RT_RNN_LSTM ? c0[hat + j] : 0;                         \
                }                                                                                  \
                for (s0 = 0; s0 < len; s0 += C) {                                                  \
                    /* the input projection of n steps [lo, lo + n) in one product */             \
                    int64_t n = len - s0 < C ? len - s0 : C, lo = rev ? len - s0 - n : s0, k;      \
                    if (p->packed & RT_RNN_PACKED_W)                                       \
                        rt_rnn_proj_packed_##SFX(xb + lo * xstep, xstep, n, W, I, GH, xw, par);    \
                    else                                                                           \
                        rt_rnn_proj_##SFX(xb + lo * xstep, xstep, n, W, I, GH, xw, par);          \
                    if (Wb)                                                                        \
                        for (k = 0; k < n; k++)                                                    \
                            for (j = 0; j < GH; j++) /* GRU's Rbh waits for the reset */    \
                                xw[k * GH + j] +=                                                  \
                                    Wb[j] + (lbr && j >= 2 * H ? (T)0 : Wb[GH + j]);               \
                    if (p->kind == RT_RNN_LSTM &&                                                  \
                        rt_rnn_lstm_steps_##SFX(par, p, p->act[d], xw, R, P, hp, hn, c, t1,        \
                                                y ? y + (p->layout ? b * S * D + d : d * B + b) * H \
                                                  : NULL,                                          \
                                                (p->layout ? D : D * B) * H, n, lo, rev)) {        \
                        if (n & 1) tmp = hp, hp = hn, hn = tmp;                                    \
                        continue;                                                                  \
                    }                                                                              \
                    for (k = 0; k < n; k++) {                                                      \
                        t = rev ? lo + n - 1 - k : lo + k;                                         \
                        rt_rnn_step_##SFX(par, p, p->act[d], xw + (t - lo) * GH, R,                \
                                          Wb ? Wb + GH + 2 * H : NULL, P, hp, hn, c, t1);          \
                        if (y) {                                                                   \
                            T *yr =                                                                \
                                y + (p->layout ? (b * S + t) * D + d : (t * D + d) * B + b) * H;   \
                            for (j = 0; j < H; j++)                                                \
                                yr[j] = hn[j];                                                     \
                        }                                                                          \
                        tmp = hp, hp = hn, hn = tmp;                                               \
                    }                                                                              \
                }                                                                                  \
                if (y)                                                                             \
                    for (t = len; t < S; t++) {                                                    \
                        T *yr = y + (p->layout ? (b * S + t) * D + d : (t * D + d) * B + b) * H;   \
                        for (j = 0; j < H; j++)                                                    \
                            yr[j] = 0;                                                             \
                    }                                                                              \
                if (y_h)                                                                           \
                    for (j = 0; j < H; j++)                                                        \
                        y_h[hat + j] = hp[j];                                                      \
                if (y_c)                                                                           \
                    for (j = 0; j < H; j++)                                                        \
                        y_c[hat + j] = c[j];                                                       \
            }                                                                                      \
        }                                                                                          \
        return RT_OK;                                                                              \
    }                                                                                              \
    RT_API int rt_rnn_##SFX(const RtRnn *p, const T *x, const T *w, const T *r, const T *bias,     \
                            const int32_t *seq_lens, const T *h0, const T *c0, const T *peep,      \
                            T *y, T *y_h, T *y_c, T *ws) {                                         \
        return rt_rnn_par_##SFX(p, x, w, r, bias, seq_lens, h0, c0, peep, y, y_h, y_c, ws,         \
                                (const RtPar *)0);                                                 \
    }

RT_RNN_DEFINE(f32, float, rt_vexp_f32, rt_vtanh_f32, logf, fabsf)
RT_RNN_DEFINE(f64, double, exp, tanh, log, fabs)

/* One float LSTM step's operands, shared by its tasks; per: what a task owns (hidden units, a
 * multiple of RT_RNN_SPLIT_UNITS, for rt_rnn_lstm_task_f32; blocks of RT_RNN_LSTM_UNITS units
 * for rt_rnn_lstm_packed_task_f32). */
typedef struct RtRnnLstmTask {
    const RtRnn *p;
    const RtRnnAct *act;
    float *g, *hn, *c, *t1;
    const float *R, *P, *hp;
    int64_t per;
} RtRnnLstmTask;
RT_API RtRnnLstmTask rt_rnn_lstm_task_of(const RtRnn *p, const RtRnnAct *act, float *g,
                                         const float *R, const float *P, const float *hp,
                                         float *hn, float *c, float *t1, int64_t per) {
    RtRnnLstmTask a;
    a.p = p;
    a.act = act;
    a.g = g;
    a.hn = hn;
    a.c = c;
    a.t1 = t1;
    a.R = R;
    a.P = P;
    a.hp = hp;
    a.per = per;
    return a;
}

#if defined(RT_RNN_AVX512) || defined(RT_RNN_AVX2)
#define RT_RNN_SPLIT_UNITS 16 /* hidden units a block: two tiles of RT_RNN_GEMV_ROWS rows a gate,
                                 and whole vectors of the gate functions */
/* Task i: units [j0, j1), their rows of the four gates (rt_rnn_gemv_rows_f32 sums every row
 * alone, in one order), then their cells and outputs. */
RT_API void rt_rnn_lstm_task_f32(void *arg, int64_t task, int worker) {
    const RtRnnLstmTask *a = (const RtRnnLstmTask *)arg;
    const int64_t H = a->p->hidden, j0 = task * a->per;
    const int64_t j1 = j0 + a->per < H ? j0 + a->per : H;
    int64_t q;
    (void)worker;
    for (q = 0; q < 4; q++)
        rt_rnn_gemv_rows_f32(a->hp, a->R, H, a->g, a->g, q * H + j0, q * H + j1);
    rt_rnn_lstm_gates_f32(a->p, a->act, a->g, a->P, a->c, a->t1, a->hn, j0, j1);
}
RT_API int rt_rnn_lstm_split_f32(const RtPar *par, const RtRnn *p, const RtRnnAct *act, float *g,
                                 const float *R, const float *P, const float *hp, float *hn,
                                 float *c, float *t1) {
    const int64_t H = p->hidden, blocks = (H + RT_RNN_SPLIT_UNITS - 1) / RT_RNN_SPLIT_UNITS;
    const int64_t n_tasks = rt_par_chunks(par, blocks, 1);
    RtRnnLstmTask a;
    if (n_tasks <= 1) return 0;
    a = rt_rnn_lstm_task_of(p, act, g, R, P, hp, hn, c, t1,
                            (blocks + n_tasks - 1) / n_tasks * RT_RNN_SPLIT_UNITS);
    rt_par_run(par, (H + a.per - 1) / a.per, rt_rnn_lstm_task_f32, &a);
    return 1;
}
#else
RT_API int rt_rnn_lstm_split_f32(const RtPar *par, const RtRnn *p, const RtRnnAct *act, float *g,
                                 const float *R, const float *P, const float *hp, float *hn,
                                 float *c, float *t1) {
    (void)par, (void)p, (void)act, (void)g, (void)R, (void)P, (void)hp, (void)hn, (void)c;
    (void)t1;
    return 0; /* the portable product is rt_gemm's: its tiles decide the order */
}
#endif

/* The packed LSTM step (RT_RNN_LSTM_PACKED). A block's product: g[q*H + j0 + u] += sum over k
 * of v[k] * pan[k][q][u] for the gates q and units u < nu, pan its panel (H, 4, UNITS).
 * Floor: the panel's 256 * H bytes from wherever they live (L3 at H = 512: 4 MiB a step);
 * 8 (AVX-512) FMAs a 512 bytes, far below what one core can compute. */
#ifdef RT_RNN_AVX512
/* 8 sums of 16 lanes: the 4 gates at even k and at odd k (4 FMAs of latency 4 per chain
 * keep both FMA pipes busy), added at the end. */
RT_API void rt_rnn_lstm_block_f32(const float *v, const float *pan, int64_t H, float *g,
                                  int64_t j0, int nu) {
    const __mmask16 m = (__mmask16)((1u << nu) - 1);
    __m512 a[8];
    int64_t k;
    int q;
    for (q = 0; q < 8; q++) a[q] = _mm512_setzero_ps();
    for (k = 0; k + 2 <= H; k += 2) {
        const float *pk = pan + k * RT_RNN_LSTM_COLS;
        const __m512 x0 = _mm512_set1_ps(v[k]), x1 = _mm512_set1_ps(v[k + 1]);
        for (q = 0; q < 4; q++) {
            a[q] = _mm512_fmadd_ps(x0, _mm512_loadu_ps(pk + 16 * q), a[q]);
            a[4 + q] = _mm512_fmadd_ps(x1, _mm512_loadu_ps(pk + RT_RNN_LSTM_COLS + 16 * q),
                                       a[4 + q]);
        }
    }
    if (k < H) {
        const __m512 x0 = _mm512_set1_ps(v[k]);
        for (q = 0; q < 4; q++)
            a[q] = _mm512_fmadd_ps(x0, _mm512_loadu_ps(pan + k * RT_RNN_LSTM_COLS + 16 * q), a[q]);
    }
    for (q = 0; q < 4; q++) {
        float *gq = g + q * H + j0;
        const __m512 s = _mm512_add_ps(a[q], a[4 + q]);
        _mm512_mask_storeu_ps(gq, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, gq), s));
    }
}
#elif defined(RT_RNN_AVX2)
/* 8 sums of 8 lanes: each gate's 16 units in two. */
RT_API void rt_rnn_lstm_block_f32(const float *v, const float *pan, int64_t H, float *g,
                                  int64_t j0, int nu) {
    __m256 a[8];
    float s[RT_RNN_LSTM_COLS];
    int64_t k;
    int q, u;
    for (q = 0; q < 8; q++) a[q] = _mm256_setzero_ps();
    for (k = 0; k < H; k++) {
        const float *pk = pan + k * RT_RNN_LSTM_COLS;
        const __m256 x = _mm256_set1_ps(v[k]);
        for (q = 0; q < 8; q++) a[q] = _mm256_fmadd_ps(x, _mm256_loadu_ps(pk + 8 * q), a[q]);
    }
    for (q = 0; q < 8; q++) _mm256_storeu_ps(s + 8 * q, a[q]);
    for (q = 0; q < 4; q++)
        for (u = 0; u < nu; u++) g[q * H + j0 + u] += s[q * RT_RNN_LSTM_UNITS + u];
}
#else
/* The portable form: one row of the panel a k, in a loop that vectorizes. */
RT_API void rt_rnn_lstm_block_f32(const float *v, const float *pan, int64_t H, float *g,
                                  int64_t j0, int nu) {
    float s[RT_RNN_LSTM_COLS];
    int64_t k;
    int q, u;
    for (q = 0; q < RT_RNN_LSTM_COLS; q++) s[q] = 0;
    for (k = 0; k < H; k++) {
        const float *pk = pan + k * RT_RNN_LSTM_COLS;
        const float x = v[k];
        for (q = 0; q < RT_RNN_LSTM_COLS; q++) s[q] += x * pk[q];
    }
    for (q = 0; q < 4; q++)
        for (u = 0; u < nu; u++) g[q * H + j0 + u] += s[q * RT_RNN_LSTM_UNITS + u];
}
#endif
/* Task i: blocks [b0, b1), their products (each block summed alone, in one order), then the
 * cells and outputs of their units. */
RT_API void rt_rnn_lstm_packed_task_f32(void *arg, int64_t task, int worker) {
    const RtRnnLstmTask *a = (const RtRnnLstmTask *)arg;
    const int64_t H = a->p->hidden, nb = RT_RNN_LSTM_BLOCKS(H), b0 = task * a->per;
    const int64_t b1 = b0 + a->per < nb ? b0 + a->per : nb;
    const int64_t j1 = b1 * RT_RNN_LSTM_UNITS < H ? b1 * RT_RNN_LSTM_UNITS : H;
    int64_t b;
    (void)worker;
    for (b = b0; b < b1; b++) {
        const int64_t j0 = b * RT_RNN_LSTM_UNITS;
        rt_rnn_lstm_block_f32(a->hp, a->R + b * H * RT_RNN_LSTM_COLS, H, a->g, j0,
                              (int)(H - j0 < RT_RNN_LSTM_UNITS ? H - j0 : RT_RNN_LSTM_UNITS));
    }
    rt_rnn_lstm_gates_f32(a->p, a->act, a->g, a->P, a->c, a->t1, a->hn, b0 * RT_RNN_LSTM_UNITS,
                          j1);
}
RT_API int rt_rnn_lstm_packed_f32(const RtPar *par, const RtRnn *p, const RtRnnAct *act,
                                  float *g, const float *R, const float *P, const float *hp,
                                  float *hn, float *c, float *t1) {
    const int64_t nb = RT_RNN_LSTM_BLOCKS(p->hidden), n_tasks = rt_par_chunks(par, nb, 1);
    RtRnnLstmTask a;
    if (!(p->packed & RT_RNN_PACKED_R)) return 0;
    a = rt_rnn_lstm_task_of(p, act, g, R, P, hp, hn, c, t1, (nb + n_tasks - 1) / n_tasks);
    rt_par_run(par, (nb + a.per - 1) / a.per, rt_rnn_lstm_packed_task_f32, &a);
    return 1;
}

/* A chunk's steps in one hook call. The blocks of units are cut into slots, one a worker (at
 * most RT_RNN_SLOTS); a slot's blocks of every step are one claim, taken from the slot's own
 * counter (the next step it has to compute) and computed as the one-step task does (products,
 * cells, outputs, then its units' part of the output row), then counted done; a step may be
 * claimed only once every block of the step before is done (its outputs are this step's hp;
 * its reads of hn's buffer are over). Task i takes slot i's steps, and another slot's where
 * its own must wait: so a worker computes the same units at every step (their panels of R
 * stay in its caches: on this VM the two vCPUs may not share an L3) and a step costs one
 * shared count, while no task depends on another one's running: a claim waits for nothing
 * once taken, and a hook that runs the tasks one after another (or on fewer threads) has the
 * first task take every slot. A task that finds nothing to claim for RT_RNN_SPIN_POLLS polls
 * (a worker the OS took off its core) leaves the call, holding no claim, and the caller calls
 * the hook again for the steps left: the hook's own way of waiting (kiln_pool's sleep) then
 * holds on a loaded machine. The bytes do not depend on who computes a slot. Needs atomics:
 * GNU C (GCC, Clang) on the host; one hook call a step else. */
#if defined(__GNUC__) && !defined(__CUDACC__)
#ifndef RT_RNN_SPIN_POLLS
#define RT_RNN_SPIN_POLLS 1024 /* polls a task waits for a step (~30-100 us) before it leaves */
#endif
#define RT_RNN_SLOTS 16 /* slots at most: more workers take the slots' steps where they can */
#if defined(__x86_64__) || defined(__i386__)
#define RT_RNN_PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define RT_RNN_PAUSE() __asm__ __volatile__("yield" ::: "memory")
#else
#define RT_RNN_PAUSE() ((void)0)
#endif
typedef struct RtRnnLstmSteps {
    RtRnnLstmTask s; /* g, hp and hn unused */
    float *ha, *hb;  /* hp and hn of the chunk's first step (swapped at every step) */
    float *xw, *yb;
    int64_t ys, n, lo, nb, slots;
    int rev;
    char pad0[64];
    int64_t done; /* blocks computed, all steps together */
    char pad1[64];
    struct {
        int64_t next; /* the slot's first step nobody claimed */
        char pad[64 - sizeof(int64_t)];
    } slot[RT_RNN_SLOTS];
} RtRnnLstmSteps;
/* Slot i's step s, claimed. */
RT_API void rt_rnn_lstm_slot_f32(RtRnnLstmSteps *a, int64_t i, int64_t s) {
    const int64_t H = a->s.p->hidden, b0 = i * a->nb / a->slots, b1 = (i + 1) * a->nb / a->slots;
    const int64_t t = a->rev ? a->lo + a->n - 1 - s : a->lo + s;
    const int64_t j0 = b0 * RT_RNN_LSTM_UNITS;
    const int64_t j1 = b1 * RT_RNN_LSTM_UNITS < H ? b1 * RT_RNN_LSTM_UNITS : H;
    float *g = a->xw + (t - a->lo) * 4 * H, *hn = s & 1 ? a->ha : a->hb;
    const float *hp = s & 1 ? a->hb : a->ha;
    int64_t b, j;
    for (b = b0; b < b1; b++) {
        j = b * RT_RNN_LSTM_UNITS;
        rt_rnn_lstm_block_f32(hp, a->s.R + b * H * RT_RNN_LSTM_COLS, H, g, j,
                              (int)(H - j < RT_RNN_LSTM_UNITS ? H - j : RT_RNN_LSTM_UNITS));
    }
    rt_rnn_lstm_gates_f32(a->s.p, a->s.act, g, a->s.P, a->s.c, a->s.t1, hn, j0, j1);
    if (a->yb)
        for (j = j0; j < j1; j++) a->yb[t * a->ys + j] = hn[j];
    __atomic_fetch_add(&a->done, b1 - b0, __ATOMIC_RELEASE);
}
RT_API void rt_rnn_lstm_steps_task_f32(void *arg, int64_t task, int worker) {
    RtRnnLstmSteps *a = (RtRnnLstmSteps *)arg;
    int spins = 0;
    (void)worker;
    for (;;) {
        const int64_t done = __atomic_load_n(&a->done, __ATOMIC_ACQUIRE);
        int64_t k, i = 0, s = 0, left = 0;
        for (k = 0; k < a->slots; k++) { /* its own slot first, then the others' */
            i = (task + k) % a->slots;
            s = __atomic_load_n(&a->slot[i].next, __ATOMIC_RELAXED);
            if (s >= a->n) continue;
            left = 1;
            if (done < s * a->nb) continue; /* the step before is not done */
            if (__atomic_compare_exchange_n(&a->slot[i].next, &s, s + 1, 0, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED))
                break;
        }
        if (!left) return;
        if (k < a->slots) {
            rt_rnn_lstm_slot_f32(a, i, s);
            spins = 0;
        } else if (++spins > RT_RNN_SPIN_POLLS) {
            return; /* the caller calls again */
        } else {
            RT_RNN_PAUSE();
        }
    }
}
RT_API int rt_rnn_lstm_steps_f32(const RtPar *par, const RtRnn *p, const RtRnnAct *act,
                                 float *xw, const float *R, const float *P, float *hp, float *hn,
                                 float *c, float *t1, float *yb, int64_t ys, int64_t n,
                                 int64_t lo, int rev) {
    const int64_t nb = RT_RNN_LSTM_BLOCKS(p->hidden);
    RtRnnLstmSteps a;
    int64_t i;
    if (!(p->packed & RT_RNN_PACKED_R) || !par || !par->pfor || par->workers <= 1 || nb <= 1)
        return 0;
    a.s = rt_rnn_lstm_task_of(p, act, NULL, R, P, NULL, NULL, c, t1, 0);
    a.ha = hp;
    a.hb = hn;
    a.xw = xw;
    a.yb = yb;
    a.ys = ys;
    a.n = n;
    a.lo = lo;
    a.nb = nb;
    a.slots = par->workers < nb ? par->workers : nb;
    if (a.slots > RT_RNN_SLOTS) a.slots = RT_RNN_SLOTS;
    a.rev = rev;
    a.done = 0;
    for (i = 0; i < a.slots; i++) a.slot[i].next = 0;
    while (__atomic_load_n(&a.done, __ATOMIC_ACQUIRE) < n * nb)
        rt_par_run(par, par->workers, rt_rnn_lstm_steps_task_f32, &a);
    return 1;
}
#else
RT_API int rt_rnn_lstm_steps_f32(const RtPar *par, const RtRnn *p, const RtRnnAct *act,
                                 float *xw, const float *R, const float *P, float *hp, float *hn,
                                 float *c, float *t1, float *yb, int64_t ys, int64_t n,
                                 int64_t lo, int rev) {
    (void)par, (void)p, (void)act, (void)xw, (void)R, (void)P, (void)hp, (void)hn, (void)c;
    (void)t1, (void)yb, (void)ys, (void)n, (void)lo, (void)rev;
    return 0; /* no atomics: one hook call a step (rt_rnn_lstm_packed_f32) */
}
#endif

#endif
