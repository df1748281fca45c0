/* rt_attention.h: the Attention op (opsets 23/24): softmax(Q K^T * scale [softcap] + bias) V
 * per batch, head and query row, with grouped KV heads, past key/value concatenation,
 * additive or boolean masks (broadcast; a short last dim is padded with -inf), causal
 * masking aligned to the end of the past, and per-batch valid KV lengths. Three passes over
 * the keys per query (max, exp-sum with V accumulation, optional probabilities out) need no
 * scratch beyond one row of V on the stack. f16/bf16 compute in float. */
#ifndef KILN_RT_ATTENTION_H
#define KILN_RT_ATTENTION_H

#include "rt_common.h"

#define RT_ATTN_MAX_HEAD 1024 /* V head size bound: the row accumulator lives on the stack */

typedef struct RtAttn {
    int64_t B, q_heads, kv_heads, q_seq, kv_seq, past, head, v_head;
    int64_t q_st[3], k_st[3], v_st[3], y_st[3]; /* element strides of batch, head, sequence */
    int64_t m_st[4], m_len; /* mask strides (b, h, q, k; 0 = broadcast), its last dim */
    int mask_kind;          /* 0 none, 1 additive (T), 2 boolean (uint8_t) */
    int causal;
    float scale, softcap; /* ONNX float attributes (the default scale rounded to float) */
    int qk_mode; /* what qk receives: 0/1 scaled (softcapped) scores, 2 plus bias, 3 softmax */
} RtAttn;

#define RT_ATTN_ID(v) (v)
/* The float kernels compute in float (a Cortex-M4F has no double unit), the float64 kernel in
 * double: A is the arithmetic type; loads widen to it, stores narrow from it. */
#define RT_ATTN_LD_F16(v) rt_f16_to_f32(v)
#define RT_ATTN_ST_F16(v) rt_f32_to_f16(v)
#define RT_ATTN_LD_BF16(v) rt_bf16_to_f32(v)
#define RT_ATTN_ST_BF16(v) rt_f32_to_bf16(v)

/* Defines rt_attention_SFX. q: (B, q_seq, q_heads*head) or (B, q_heads, q_seq, head), k/v
 * likewise with kv_heads (strides in p); past_k: (B, kv_heads, past, head) or NULL, past_v
 * likewise with v_head; nonpad: (B) int64 or NULL; present_k/present_v: (B, kv_heads,
 * past + kv_seq, head/v_head) or NULL; qk: (B, q_heads, q_seq, past + kv_seq) or NULL. */
#define RT_ATTENTION_DEFINE(SFX, T, A, LD, ST, EXP, TANH)                                      \
    RT_API A rt_attn_score_##SFX(const RtAttn *p, const T *q, const T *k,                 \
                                      const T *past_k, const T *mask_f, const uint8_t *mask_b, \
                                      const int64_t *nonpad, int64_t b, int64_t h, int64_t i,  \
                                      int64_t j, T *qk, int64_t qk_at) {                       \
        int64_t kh = h / (p->q_heads / p->kv_heads), d;                                        \
        const T *qr = q + b * p->q_st[0] + h * p->q_st[1] + i * p->q_st[2];                    \
        const T *kr = j < p->past                                                              \
                          ? past_k + ((b * p->kv_heads + kh) * p->past + j) * p->head          \
                          : k + b * p->k_st[0] + kh * p->k_st[1] + (j - p->past) * p->k_st[2]; \
        A s = 0, bias = 0;                                                                     \
        for (d = 0; d < p->head; d++) s += (A)LD(qr[d]) * (A)LD(kr[d]);                        \
        s *= (A)p->scale;                                                                      \
        if (p->softcap > 0) s = (A)p->softcap * TANH(s / (A)p->softcap);                       \
        if (qk && p->qk_mode <= 1) qk[qk_at] = ST(s);                                          \
        if (p->mask_kind) {                                                                    \
            int64_t m = b * p->m_st[0] + h * p->m_st[1] + i * p->m_st[2] + j * p->m_st[3];     \
            if (j >= p->m_len) bias = -(A)INFINITY;                                            \
            else if (p->mask_kind == 1) bias = (A)LD(mask_f[m]);                               \
            else if (!mask_b[m]) bias = -(A)INFINITY;                                          \
        }                                                                                      \
        if (p->causal && j > i + p->past) bias += -(A)INFINITY;                                \
        if (nonpad && j >= nonpad[b]) bias += -(A)INFINITY;                                    \
        s += bias;                                                                             \
        if (qk && p->qk_mode == 2) qk[qk_at] = ST(s);                                          \
        return s;                                                                              \
    }                                                                                          \
    RT_API void rt_attention_##SFX(const RtAttn *p, const T *q, const T *k, const T *v,        \
                                   const T *past_k, const T *past_v, const T *mask_f,          \
                                   const uint8_t *mask_b, const int64_t *nonpad, T *y,         \
                                   T *present_k, T *present_v, T *qk) {                        \
        int64_t total = p->past + p->kv_seq, b, h, i, j, d;                                    \
        A acc[RT_ATTN_MAX_HEAD];                                                               \
        for (b = 0; b < p->B; b++)                                                             \
            for (h = 0; h < p->kv_heads; h++)                                                  \
                for (j = 0; j < total; j++) {                                                  \
                    int64_t at = (b * p->kv_heads + h) * total + j;                            \
                    int64_t old = (b * p->kv_heads + h) * p->past + j, nj = j - p->past;       \
                    if (present_k)                                                             \
                        for (d = 0; d < p->head; d++)                                          \
                            present_k[at * p->head + d] =                                      \
                                j < p->past ? past_k[old * p->head + d]                        \
                                            : k[b * p->k_st[0] + h * p->k_st[1] +              \
                                                nj * p->k_st[2] + d];                          \
                    if (present_v)                                                             \
                        for (d = 0; d < p->v_head; d++)                                        \
                            present_v[at * p->v_head + d] =                                    \
                                j < p->past ? past_v[old * p->v_head + d]                      \
                                            : v[b * p->v_st[0] + h * p->v_st[1] +              \
                                                nj * p->v_st[2] + d];                          \
                }                                                                              \
        for (b = 0; b < p->B; b++)                                                             \
            for (h = 0; h < p->q_heads; h++)                                                   \
                for (i = 0; i < p->q_seq; i++) {                                               \
                    int64_t kh = h / (p->q_heads / p->kv_heads);                               \
                    int64_t row = ((b * p->q_heads + h) * p->q_seq + i) * total;               \
                    A mx = -(A)INFINITY, sum = 0;                                              \
                    T *yr = y + b * p->y_st[0] + h * p->y_st[1] + i * p->y_st[2];              \
                    for (j = 0; j < total; j++) {                                              \
                        A s = rt_attn_score_##SFX(p, q, k, past_k, mask_f, mask_b,             \
                                                       nonpad, b, h, i, j, qk, row + j);       \
                        if (s > mx) mx = s;                                                    \
                    }                                                                          \
                    for (d = 0; d < p->v_head; d++) acc[d] = 0;                                \
                    for (j = 0; j < total; j++) {                                              \
                        A e = EXP(rt_attn_score_##SFX(p, q, k, past_k, mask_f, mask_b,         \
                                                           nonpad, b, h, i, j, NULL, 0) -      \
                                       mx);                                                    \
                        const T *vr = j < p->past ? past_v + ((b * p->kv_heads + kh) *         \
                                                                  p->past + j) * p->v_head     \
                                                  : v + b * p->v_st[0] + kh * p->v_st[1] +     \
                                                        (j - p->past) * p->v_st[2];            \
                        sum += e;                                                              \
                        for (d = 0; d < p->v_head; d++) acc[d] += e * (A)LD(vr[d]);            \
                    }                                                                          \
                    for (d = 0; d < p->v_head; d++) yr[d] = ST(acc[d] / sum);                  \
                    if (qk && p->qk_mode == 3)                                                 \
                        for (j = 0; j < total; j++)                                            \
                            qk[row + j] = ST((EXP(rt_attn_score_##SFX(                         \
                                                             p, q, k, past_k, mask_f, mask_b,  \
                                                             nonpad, b, h, i, j, NULL, 0) -    \
                                                         mx) /                                 \
                                                     sum));                                    \
                }                                                                              \
    }

RT_ATTENTION_DEFINE(f32, float, float, RT_ATTN_ID, RT_ATTN_ID, expf, tanhf)
RT_ATTENTION_DEFINE(f64, double, double, RT_ATTN_ID, RT_ATTN_ID, exp, tanh)
RT_ATTENTION_DEFINE(f16, uint16_t, float, RT_ATTN_LD_F16, RT_ATTN_ST_F16, expf, tanhf)
RT_ATTENTION_DEFINE(bf16, uint16_t, float, RT_ATTN_LD_BF16, RT_ATTN_ST_BF16, expf, tanhf)

#endif
