/* rt_fusedattn.h: FusedAttention (passes/fuse_attention.c), softmax(scale * Q K^T + mask) V
 * one query row at a time: the row's scores go to a caller-provided scratch row of Sk
 * elements (a small node's on the stack; rt_fused_attention_par's, each worker's own, in the
 * arena: rt_par.h), so the (Sq, Sk) score matrix never exists.
 * Every operand is read through element strides, which is how the Transposes around the
 * pattern were absorbed. The softmax subtracts the row maximum and sums through rt_sum.h,
 * like rt_softmax.h; float exp is rt_vmath.h's. Contiguous head dimensions take loops that
 * vectorize (lane-split Q.K, contiguous P.V). C99. */
#ifndef KILN_RT_FUSEDATTN_H
#define KILN_RT_FUSEDATTN_H

#include "rt_common.h"
#include "rt_par.h"
#include "rt_sum.h"
#include "rt_vmath.h"

#define RT_FA_LANES 8 /* partial sums of a contiguous dot product: one AVX register */

/* Shapes and element strides of the logical operands, batch and head first:
 * q (B,H,Sq,D), k (B,H,Sk,D), v (B,H,Sk,Dv), mask (B,H,Sq,Sk) (stride 0 on broadcast
 * dimensions), y (B,H,Sq,Dv). */
typedef struct RtFusedAttn {
    int64_t b, h, sq, sk, d, dv;
    int64_t q_st[4], k_st[4], v_st[4], m_st[4], y_st[4];
} RtFusedAttn;

/* Defines rt_fused_attention_SFX(p, q, k, v, mask, y, row, scale); mask may be NULL;
 * row: scratch of p->sk elements. */
#define RT_FUSEDATTN_DEFINE(SFX, T, EXP)                                                       \
    /* a . b over n elements at strides as, bs: RT_FA_LANES partial sums side by side when     \
     * both are contiguous (the head dimension usually is), so that the loop vectorizes. */    \
    RT_API T rt_fa_dot_##SFX(const T *a, int64_t as, const T *b, int64_t bs, int64_t n) {      \
        T lane[RT_FA_LANES] = {0}, s = 0;                                                      \
        int64_t t = 0, l;                                                                      \
        if (as == 1 && bs == 1)                                                                \
            for (; t + RT_FA_LANES <= n; t += RT_FA_LANES)                                     \
                for (l = 0; l < RT_FA_LANES; l++) lane[l] += a[t + l] * b[t + l];              \
        for (l = 0; l < RT_FA_LANES; l++) s += lane[l];                                        \
        for (; t < n; t++) s += a[t * as] * b[t * bs];                                         \
        return s;                                                                              \
    }                                                                                          \
    /* Query rows [i_lo, i_hi) of batch b, head h. */                                        \
    RT_API void rt_fused_attention_rows_##SFX(const RtFusedAttn *p, const T *q, const T *k,    \
                                              const T *v, const T *mask, T *y, T *row,         \
                                              T scale, int64_t b, int64_t h, int64_t i_lo,     \
                                              int64_t i_hi) {                                  \
        int64_t i, j, t;                                                                       \
        {                                                                                      \
            {                                                                                  \
                const T *qb = q + b * p->q_st[0] + h * p->q_st[1];                             \
                const T *kb = k + b * p->k_st[0] + h * p->k_st[1];                             \
                const T *vb = v + b * p->v_st[0] + h * p->v_st[1];                             \
                T *yb = y + b * p->y_st[0] + h * p->y_st[1];                                   \
                for (i = i_lo; i < i_hi; i++) {                                                \
                    const T *qr = qb + i * p->q_st[2];                                         \
                    T *yr = yb + i * p->y_st[2];                                               \
                    T mx = 0, inv;                                                             \
                    for (j = 0; j < p->sk; j++) {                                              \
                        const T *kr = kb + j * p->k_st[2];                                     \
                        T s = rt_fa_dot_##SFX(qr, p->q_st[3], kr, p->k_st[3], p->d) * scale;   \
                        if (mask)                                                              \
                            s += mask[b * p->m_st[0] + h * p->m_st[1] + i * p->m_st[2] +       \
                                      j * p->m_st[3]];                                         \
                        row[j] = s;                                                            \
                        if (j == 0 || s > mx) mx = s;                                          \
                    }                                                                          \
                    for (j = 0; j < p->sk; j++) row[j] = EXP(row[j] - mx);                     \
                    inv = 1 / rt_sum_##SFX(row, p->sk, 1);                                     \
                    for (t = 0; t < p->dv; t++) yr[t * p->y_st[3]] = 0;                        \
                    for (j = 0; j < p->sk; j++) {                                              \
                        const T *vr = vb + j * p->v_st[2];                                     \
                        T w = row[j] * inv;                                                    \
                        if (p->y_st[3] == 1 && p->v_st[3] == 1)                                \
                            for (t = 0; t < p->dv; t++) yr[t] += w * vr[t];                    \
                        else                                                                   \
                            for (t = 0; t < p->dv; t++)                                        \
                                yr[t * p->y_st[3]] += w * vr[t * p->v_st[3]];                  \
                    }                                                                          \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    RT_API void rt_fused_attention_##SFX(const RtFusedAttn *p, const T *q, const T *k,         \
                                         const T *v, const T *mask, T *y, T *row, T scale) {   \
        int64_t b, h;                                                                          \
        for (b = 0; b < p->b; b++)                                                             \
            for (h = 0; h < p->h; h++)                                                         \
                rt_fused_attention_rows_##SFX(p, q, k, v, mask, y, row, scale, b, h, 0, p->sq); \
    }                                                                                          \
    typedef struct RtFusedAttnTask##SFX {                                                      \
        const RtFusedAttn *p;                                                                  \
        const T *q, *k, *v, *mask;                                                             \
        T *y, scale;                                                                           \
        const RtPar *par;                                                                      \
        int64_t n_ic, ic; /* query row chunks of a head, rows a chunk */                       \
    } RtFusedAttnTask##SFX;                                                                    \
    RT_API void rt_fused_attention_task_##SFX(void *arg, int64_t task, int worker) {           \
        const RtFusedAttnTask##SFX *a = (const RtFusedAttnTask##SFX *)arg;                     \
        const int64_t bh = task / a->n_ic, i_lo = task % a->n_ic * a->ic;                      \
        const int64_t i_hi = i_lo + a->ic < a->p->sq ? i_lo + a->ic : a->p->sq;                \
        rt_fused_attention_rows_##SFX(a->p, a->q, a->k, a->v, a->mask, a->y,                   \
                                      (T *)rt_par_scratch(a->par, worker), a->scale,           \
                                      bh / a->p->h, bh % a->p->h, i_lo, i_hi);                 \
    }                                                                                          \
    /* rt_fused_attention_SFX over par's workers (rt_par.h), tasks of (batch, head, chunk of  \
     * query rows); each worker's row of scores is its scratch (p->sk elements of T). */       \
    RT_API void rt_fused_attention_par_##SFX(const RtFusedAttn *p, const T *q, const T *k,     \
                                             const T *v, const T *mask, T *y, T scale,         \
                                             const RtPar *par) {                               \
        RtFusedAttnTask##SFX a;                                                                \
        const int64_t bh = p->b * p->h;                                                        \
        if (bh <= 0 || p->sq <= 0) return;                                                     \
        a.p = p;                                                                               \
        a.q = q;                                                                               \
        a.k = k;                                                                               \
        a.v = v;                                                                               \
        a.mask = mask;                                                                         \
        a.y = y;                                                                               \
        a.scale = scale;                                                                       \
        a.par = par;                                                                           \
        a.n_ic = rt_par_chunks(par, p->sq, bh);                                                \
        a.ic = (p->sq + a.n_ic - 1) / a.n_ic;                                                  \
        a.n_ic = (p->sq + a.ic - 1) / a.ic;                                                    \
        rt_par_run(par, bh * a.n_ic, rt_fused_attention_task_##SFX, &a);                       \
    }

RT_FUSEDATTN_DEFINE(f32, float, rt_vexp_f32)
RT_FUSEDATTN_DEFINE(f64, double, exp)

#endif
