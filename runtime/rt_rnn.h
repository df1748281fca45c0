/* rt_rnn.h: the recurrent ops LSTM, GRU and RNN (ONNX opsets 1-22) in one kernel per element
 * type. Batch rows are independent recurrences, so the kernel runs one row at a time and
 * needs only RT_RNN_SCRATCH(hidden) elements of caller scratch (the previous and next hidden
 * state, the LSTM cell or the GRU update gate, the GRU reset-scaled state). Gates are
 * computed unit by unit as dot products against the rows of W and R, so no gate buffer is
 * needed. Directions forward, reverse and bidirectional; layouts 0 and 1; sequence_lens. C99. */
#ifndef KILN_RT_RNN_H
#define KILN_RT_RNN_H

#include "rt_common.h"

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
#define RT_RNN_SCRATCH(hidden) (4 * (hidden)) /* elements of ws the kernel uses */

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
} RtRnn;

/* Defines rt_rnn_SFX. With G = 4 (LSTM, gates i o f c), 3 (GRU, gates z r h) or 1 (RNN) and
 * D = num_dir, layout 0: x: (S, B, I), y: (S, D, B, H), h0/c0/y_h/y_c: (D, B, H); layout 1:
 * x: (B, S, I), y: (B, S, D, H), h0/c0/y_h/y_c: (B, D, H). w: (D, G*H, I), r: (D, G*H, H),
 * bias: (D, 2*G*H) (Wb then Rb), peep: (D, 3*H) (i o f), seq_lens: (B). Every pointer but
 * x, w, r and ws may be NULL. ws: RT_RNN_SCRATCH(H) elements. Steps past a row's length
 * are zero in y; a length outside [0, S] returns RT_ERR_VALUE before anything is written. */
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
    RT_API T rt_rnn_dot_##SFX(const T *a, const T *b, int64_t n) {                                 \
        T s = 0;                                                                                   \
        int64_t k;                                                                                 \
        for (k = 0; k < n; k++)                                                                    \
            s += a[k] * b[k];                                                                      \
        return s;                                                                                  \
    }                                                                                              \
    /* Pre-activation of gate g, unit j: x W_gj + h R_gj + Wb_gj + Rb_gj. */                       \
    RT_API T rt_rnn_gate_##SFX(const RtRnn *p, const T *xr, const T *W, const T *hr, const T *R,   \
                               const T *Wb, int64_t G, int64_t g, int64_t j) {                     \
        int64_t H = p->hidden, row = g * H + j;                                                    \
        T v = rt_rnn_dot_##SFX(xr, W + row * p->input, p->input);                                  \
        if (hr) v += rt_rnn_dot_##SFX(hr, R + row * H, H);                                         \
        if (Wb) v += Wb[row] + Wb[G * H + row];                                                    \
        return v;                                                                                  \
    }                                                                                              \
    RT_API T rt_rnn_clip_##SFX(const RtRnn *p, T v) {                                              \
        if (!p->has_clip) return v;                                                                \
        return v < -(T)p->clip ? -(T)p->clip : v > (T)p->clip ? (T)p->clip : v;                    \
    }                                                                                              \
    /* One step of one batch row: hp -> hn (and the LSTM cell c in place). */                      \
    RT_API void rt_rnn_step_##SFX(const RtRnn *p, const RtRnnAct *act, const T *xr, const T *W,    \
                                  const T *R, const T *Wb, const T *P, const T *hp, T *hn, T *c,   \
                                  T *rh) {                                                         \
        int64_t H = p->hidden, j;                                                                  \
        if (p->kind == RT_RNN_LSTM) {                                                              \
            for (j = 0; j < H; j++) {                                                              \
                T gi = rt_rnn_gate_##SFX(p, xr, W, hp, R, Wb, 4, 0, j);                            \
                T go = rt_rnn_gate_##SFX(p, xr, W, hp, R, Wb, 4, 1, j);                            \
                T gf = rt_rnn_gate_##SFX(p, xr, W, hp, R, Wb, 4, 2, j);                            \
                T gc = rt_rnn_gate_##SFX(p, xr, W, hp, R, Wb, 4, 3, j);                            \
                T i, f, cn;                                                                        \
                if (P) gi += P[j] * c[j], gf += P[2 * H + j] * c[j];                               \
                i = rt_rnn_act_##SFX(&act[0], rt_rnn_clip_##SFX(p, gi));                           \
                f = p->input_forget ? 1 - i : rt_rnn_act_##SFX(&act[0], rt_rnn_clip_##SFX(p, gf)); \
                cn = f * c[j] + i * rt_rnn_act_##SFX(&act[1], rt_rnn_clip_##SFX(p, gc));           \
                if (P) go += P[H + j] * cn;                                                        \
                c[j] = cn;                                                                         \
                hn[j] = rt_rnn_act_##SFX(&act[0], rt_rnn_clip_##SFX(p, go)) *                      \
                        rt_rnn_act_##SFX(&act[2], cn);                                             \
            }                                                                                      \
        } else if (p->kind == RT_RNN_GRU) {                                                        \
            T *z = c;                                                                              \
            for (j = 0; j < H; j++) {                                                              \
                T gz = rt_rnn_gate_##SFX(p, xr, W, hp, R, Wb, 3, 0, j);                            \
                T gr = rt_rnn_gate_##SFX(p, xr, W, hp, R, Wb, 3, 1, j);                            \
                T rr = rt_rnn_act_##SFX(&act[0], rt_rnn_clip_##SFX(p, gr));                        \
                z[j] = rt_rnn_act_##SFX(&act[0], rt_rnn_clip_##SFX(p, gz));                        \
                if (p->linear_before_reset) {                                                      \
                    T hh = rt_rnn_dot_##SFX(hp, R + (2 * H + j) * H, H);                           \
                    T gh = rt_rnn_dot_##SFX(xr, W + (2 * H + j) * p->input, p->input);             \
                    if (Wb) gh += Wb[2 * H + j], hh += Wb[5 * H + j];                              \
                    gh = rt_rnn_act_##SFX(&act[1], rt_rnn_clip_##SFX(p, gh + rr * hh));            \
                    hn[j] = (1 - z[j]) * gh + z[j] * hp[j];                                        \
                } else {                                                                           \
                    rh[j] = rr * hp[j];                                                            \
                }                                                                                  \
            }                                                                                      \
            if (!p->linear_before_reset)                                                           \
                for (j = 0; j < H; j++) {                                                          \
                    T gh = rt_rnn_gate_##SFX(p, xr, W, rh, R, Wb, 3, 2, j);                        \
                    gh = rt_rnn_act_##SFX(&act[1], rt_rnn_clip_##SFX(p, gh));                      \
                    hn[j] = (1 - z[j]) * gh + z[j] * hp[j];                                        \
                }                                                                                  \
        } else {                                                                                   \
            for (j = 0; j < H; j++)                                                                \
                hn[j] = rt_rnn_act_##SFX(                                                          \
                    &act[0],                                                                       \
                    rt_rnn_clip_##SFX(p, rt_rnn_gate_##SFX(p, xr, W, hp, R, Wb, 1, 0, j)));        \
        }                                                                                          \
    }                                                                                              \
    RT_API int rt_rnn_##SFX(const RtRnn *p, const T *x, const T *w, const T *r, const T *bias,     \
                            const int32_t *seq_lens, const T *h0, const T *c0, const T *peep,      \
                            T *y, T *y_h, T *y_c, T *ws) {                                         \
        int64_t S = p->seq, B = p->batch, I = p->input, H = p->hidden, D = p->num_dir;             \
        int64_t G = p->kind == RT_RNN_LSTM ? 4 : p->kind == RT_RNN_GRU ? 3 : 1;                    \
        int64_t b, d, s, t, j;                                                                     \
        if (seq_lens)                                                                              \
            for (b = 0; b < B; b++)                                                                \
                if (seq_lens[b] < 0 || seq_lens[b] > S) return RT_ERR_VALUE;                       \
        for (d = 0; d < D; d++) {                                                                  \
            const T *W = w + d * G * H * I, *R = r + d * G * H * H;                                \
            const T *Wb = bias ? bias + d * 2 * G * H : NULL;                                      \
            const T *P = peep ? peep + d * 3 * H : NULL;                                           \
            int rev = p->reverse || d == 1;                                                        \
            for (b = 0; b < B; b++) {                                                              \
                int64_t len = seq_lens ? seq_lens[b] : S;                                          \
                int64_t hat = (p->layout ? b * D + d : d * B + b) * H;                             \
                T *hp = ws, *hn = ws + H, *c = ws + 2 * H, *rh = ws + 3 * H, *tmp;                 \
                for (j = 0; j < H; j++) {                                                          \
                    hp[j] = h0 ? h0[hat + j] : 0;                                                  \
                    c[j] = c0 && p->kind == RT_RNN_LSTM ? c0[hat + j] : 0;                         \
                }                                                                                  \
                for (s = 0; s < len; s++) {                                                        \
                    t = rev ? len - 1 - s : s;                                                     \
                    rt_rnn_step_##SFX(p, p->act[d], x + (p->layout ? b * S + t : t * B + b) * I,   \
                                      W, R, Wb, P, hp, hn, c, rh);                                 \
                    if (y) {                                                                       \
                        T *yr = y + (p->layout ? (b * S + t) * D + d : (t * D + d) * B + b) * H;   \
                        for (j = 0; j < H; j++)                                                    \
                            yr[j] = hn[j];                                                         \
                    }                                                                              \
                    tmp = hp, hp = hn, hn = tmp;                                                   \
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
    }

RT_RNN_DEFINE(f32, float, expf, tanhf, logf, fabsf)
RT_RNN_DEFINE(f64, double, exp, tanh, log, fabs)

#endif
