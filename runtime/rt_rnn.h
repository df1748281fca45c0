/* rt_rnn.h: the recurrent ops LSTM, GRU and RNN (ONNX opsets 1-22) in one kernel per element
 * type. Batch rows are independent recurrences, so the kernel runs one row at a time. The
 * gates are matrix products over all the gates at once (rt_gemm of rt_matmul.h): the input
 * projection x W^T of `chunk` time steps in one product (W read once per chunk, not once per
 * step), then per step the recurrent product h R^T of all G*H gate units, then the gate
 * nonlinearities over whole rows in loops that vectorize (float sigmoid and tanh from
 * rt_vmath.h). rt_rnn_par_SFX shares each product's columns of units among the workers of
 * an RtPar (rt_par.h; the steps stay in order, one after another). Caller scratch: RT_RNN_SCRATCH(G, hidden, chunk) elements (the previous and
 * next hidden state, the LSTM cell, a temporary, and chunk rows of G*H gate values).
 * Directions forward, reverse and bidirectional; layouts 0 and 1; sequence_lens. C99. */
#ifndef KILN_RT_RNN_H
#define KILN_RT_RNN_H

#include "rt_common.h"
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
} RtRnn;

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
    /* y[0..n) = c[0..n) + v @ M^T for M (n, k) row-major (the rows of W or R of some gates), or  \
     * v @ M^T alone when c is NULL: one product over all the gates' units. */                    \
    RT_API void rt_rnn_gemv_##SFX(const T *v, const T *M, int64_t n, int64_t k, const T *c,        \
                                  T *y, const RtPar *par) {                                        \
        RtGemm##SFX g;                                                                             \
        memset(&g, 0, sizeof g);                                                                   \
        g.m = 1, g.n = n, g.k = k, g.alpha = 1, g.beta = 1;                                        \
        g.a = v, g.a_rs = k, g.a_cs = 1;                                                           \
        g.b = M, g.b_rs = 1, g.b_cs = k;                                                           \
        g.c = c, g.c_rs = 0, g.c_cs = 1;                                                           \
        g.y = y;                                                                                   \
        rt_gemm_par_##SFX(&g, par); /* columns of units among the workers */                       \
    }                                                                                              \
    /* One step of one batch row: hp -> hn (and the LSTM cell c in place). g: the step's row of  \
     * the input projection (x W^T + the biases, G*H), overwritten; t1: H elements. */    \
    RT_API void rt_rnn_step_##SFX(const RtPar *par, const RtRnn *p, const RtRnnAct *act, T *g,     \
                                  const T *R,                                                      \
                                  const T *Rbh, const T *P, const T *hp, T *hn, T *c,              \
                                  T *t1) {                                                         \
        int64_t H = p->hidden, j;                                                                  \
        if (p->kind == RT_RNN_LSTM) { /* gates i o f c */                                          \
            T *gi = g, *go = g + H, *gf = g + 2 * H, *gc = g + 3 * H;                              \
            rt_rnn_gemv_##SFX(hp, R, 4 * H, H, g, g, par);                                         \
            if (P)                                                                                 \
                for (j = 0; j < H; j++) gi[j] += P[j] * c[j], gf[j] += P[2 * H + j] * c[j];        \
            rt_rnn_clip_row_##SFX(p, gi, H);                                                       \
            rt_rnn_act_row_##SFX(&act[0], gi, H);                                                  \
            if (p->input_forget) {                                                                 \
                for (j = 0; j < H; j++) gf[j] = 1 - gi[j];                                         \
            } else {                                                                               \
                rt_rnn_clip_row_##SFX(p, gf, H);                                                   \
                rt_rnn_act_row_##SFX(&act[0], gf, H);                                              \
            }                                                                                      \
            rt_rnn_clip_row_##SFX(p, gc, H);                                                       \
            rt_rnn_act_row_##SFX(&act[1], gc, H);                                                  \
            for (j = 0; j < H; j++) c[j] = gf[j] * c[j] + gi[j] * gc[j];                           \
            if (P)                                                                                 \
                for (j = 0; j < H; j++) go[j] += P[H + j] * c[j];                                  \
            rt_rnn_clip_row_##SFX(p, go, H);                                                       \
            rt_rnn_act_row_##SFX(&act[0], go, H);                                                  \
            for (j = 0; j < H; j++) t1[j] = c[j];                                                  \
            rt_rnn_act_row_##SFX(&act[2], t1, H);                                                  \
            for (j = 0; j < H; j++) hn[j] = go[j] * t1[j];                                         \
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
            const T *W = w + d * GH * I, *R = r + d * GH * H;                                      \
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
                    RtGemm##SFX g;                                                                 \
                    memset(&g, 0, sizeof g);                                                       \
                    g.m = n, g.n = GH, g.k = I, g.alpha = 1;                                       \
                    g.a = xb + lo * xstep, g.a_rs = xstep, g.a_cs = 1;                             \
                    g.b = W, g.b_rs = 1, g.b_cs = I;                                               \
                    g.y = xw;                                                                      \
                    rt_gemm_par_##SFX(&g, par);                                                    \
                    if (Wb)                                                                        \
                        for (k = 0; k < n; k++)                                                    \
                            for (j = 0; j < GH; j++) /* GRU's Rbh waits for the reset */    \
                                xw[k * GH + j] +=                                                  \
                                    Wb[j] + (lbr && j >= 2 * H ? (T)0 : Wb[GH + j]);               \
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

#endif
