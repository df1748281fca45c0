/* rt_misc.h: kernels of the miscellaneous ops no other family owns: TensorScatter (KV-cache
 * writes), RotaryEmbedding, CausalConvWithState, DeformConv (2-D), LinearAttention, Unique,
 * TfIdfVectorizer, ArrayFeatureExtractor, TreeEnsemble, LabelEncoder (numeric keys) and the
 * seeded random generator. Float16 and bfloat16 kernels load through rt_*_to_f32 and compute
 * in float. Kernels that read indices from the data range-check them (RT_ERR_INDEX); Unique
 * treats its compiled count of unique elements as an upper bound (more is RT_ERR_SHAPE) and
 * returns the run-time count. C99. */
#ifndef KILN_RT_MISC_H
#define KILN_RT_MISC_H

#include "rt_common.h"

/* Load/store of one element as float, per storage type. */
#define RT_MISC_LD_F32(v) ((float)(v))
#define RT_MISC_ST_F32(v) ((float)(v))
#define RT_MISC_LD_F64(v) ((double)(v))
#define RT_MISC_ST_F64(v) ((double)(v))
#define RT_MISC_LD_F16(v) rt_f16_to_f32(v)
#define RT_MISC_ST_F16(v) rt_f32_to_f16((float)(v))
#define RT_MISC_LD_BF16(v) rt_bf16_to_f32(v)
#define RT_MISC_ST_BF16(v) rt_f32_to_bf16((float)(v))

/* ---- TensorScatter ------------------------------------------------------------------- */

/* out = past, then update written at rows write_indices[b] + s along the sequence axis.
 * past, out: (batch, outer, L, inner_bytes); update: (batch, outer, S, inner_bytes);
 * write_indices: (batch) or NULL (all 0). circular: positions taken modulo L; otherwise a
 * position outside [0, L) is RT_ERR_INDEX. */
RT_API int rt_tensor_scatter(const uint8_t *past, const uint8_t *update,
                             const int64_t *write_indices, uint8_t *out, int64_t batch,
                             int64_t outer, int64_t L, int64_t S, int64_t inner_bytes,
                             int circular) {
    int64_t b, o, s;
    if (out != past) rt_memmove(out, past, (size_t)(batch * outer * L * inner_bytes));
    for (b = 0; b < batch; b++) {
        int64_t start = write_indices ? write_indices[b] : 0;
        for (o = 0; o < outer; o++)
            for (s = 0; s < S; s++) {
                int64_t pos = start + s;
                if (circular) pos = ((pos % L) + L) % L;
                else if (pos < 0 || pos >= L) return RT_ERR_INDEX;
                memcpy(out + ((b * outer + o) * L + pos) * inner_bytes,
                       update + ((b * outer + o) * S + s) * inner_bytes, (size_t)inner_bytes);
            }
    }
    return RT_OK;
}

/* ---- ArrayFeatureExtractor ---------------------------------------------------------- */

/* y[o, j] = x[o, idx[j]]; x: (outer, L), idx: (n_idx), y: (outer, n_idx), elem_bytes each. */
RT_API int rt_gather_last(const uint8_t *x, const int64_t *idx, int64_t n_idx, uint8_t *y,
                          int64_t outer, int64_t L, int64_t elem_bytes) {
    int64_t o, j;
    for (j = 0; j < n_idx; j++)
        if (idx[j] < 0 || idx[j] >= L) return RT_ERR_INDEX;
    for (o = 0; o < outer; o++)
        for (j = 0; j < n_idx; j++)
            memcpy(y + (o * n_idx + j) * elem_bytes, x + (o * L + idx[j]) * elem_bytes,
                   (size_t)elem_bytes);
    return RT_OK;
}

/* ---- RotaryEmbedding ------------------------------------------------------------------ */

/* Rotates the first `rot` features of every head row of x (B sequences of S tokens, H heads
 * of D features; element (b,s,h,d) at b*sb + s*ss + h*sh + d) by the cached angles:
 * cos/sin rows of rot/2 entries at position pos[b*S+s] (pos: (B,S), rows < max_pos) or, when
 * pos is NULL, at row b*S+s. Halves are split (x[i], x[i+rot/2]) or interleaved (x[2i],
 * x[2i+1]). The remaining D - rot features are copied. y may alias x. */
#define RT_ROTARY_DEFINE(SFX, T, LD, ST)                                                        \
    RT_API int rt_rotary_##SFX(const T *x, const T *cosc, const T *sinc, const int64_t *pos,    \
                               int64_t max_pos, T *y, int64_t B, int64_t S, int64_t H,          \
                               int64_t D, int64_t rot, int interleaved, int64_t sb, int64_t ss, \
                               int64_t sh) {                                                    \
        int64_t b, s, h, i, half = rot / 2;                                                     \
        for (b = 0; b < B; b++)                                                                 \
            for (s = 0; s < S; s++) {                                                           \
                int64_t row = b * S + s;                                                        \
                const T *c, *sn;                                                                \
                if (pos) {                                                                      \
                    if (pos[row] < 0 || pos[row] >= max_pos) return RT_ERR_INDEX;               \
                    row = pos[row];                                                             \
                }                                                                               \
                c = cosc + row * half, sn = sinc + row * half;                                  \
                for (h = 0; h < H; h++) {                                                       \
                    const T *xr = x + b * sb + s * ss + h * sh;                                 \
                    T *yr = y + b * sb + s * ss + h * sh;                                       \
                    for (i = 0; i < half; i++) {                                                \
                        int64_t i1 = interleaved ? 2 * i : i;                                   \
                        int64_t i2 = interleaved ? 2 * i + 1 : i + half;                        \
                        float x1 = (float)LD(xr[i1]), x2 = (float)LD(xr[i2]);                   \
                        float cv = (float)LD(c[i]), sv = (float)LD(sn[i]);                      \
                        yr[i1] = ST(cv * x1 - sv * x2);                                         \
                        yr[i2] = ST(sv * x1 + cv * x2);                                         \
                    }                                                                           \
                    if (yr != xr)                                                               \
                        for (i = rot; i < D; i++) yr[i] = xr[i];                                \
                }                                                                               \
            }                                                                                   \
        return RT_OK;                                                                           \
    }

RT_ROTARY_DEFINE(f32, float, RT_MISC_LD_F32, RT_MISC_ST_F32)
RT_ROTARY_DEFINE(f64, double, RT_MISC_LD_F64, RT_MISC_ST_F64)
RT_ROTARY_DEFINE(f16, uint16_t, RT_MISC_LD_F16, RT_MISC_ST_F16)
RT_ROTARY_DEFINE(bf16, uint16_t, RT_MISC_LD_BF16, RT_MISC_ST_BF16)

/* ---- CausalConvWithState ---------------------------------------------------------------- */

/* Depthwise causal 1-D convolution over padded = concat(past or zeros, x) along time:
 * y[b,c,t] = bias[c] + sum_k w[c,k] * padded[b,c,t+k], optionally SiLU'd; present holds the
 * last K-1 steps of padded. x, y: (B,C,L); w: (C,1,K); bias: (C) or NULL;
 * past, present: (B,C,K-1), past NULL for zeros. */
#define RT_CAUSAL_CONV_DEFINE(SFX, T, LD, ST)                                                   \
    RT_API void rt_causal_conv_##SFX(const T *x, const T *w, const T *bias, const T *past,      \
                                     T *y, T *present, int64_t B, int64_t C, int64_t L,         \
                                     int64_t K, int silu) {                                     \
        int64_t b, c, t, k, P = K - 1;                                                          \
        for (b = 0; b < B; b++)                                                                 \
            for (c = 0; c < C; c++) {                                                           \
                const T *xr = x + (b * C + c) * L;                                              \
                const T *pr = past ? past + (b * C + c) * P : NULL;                             \
                const T *wr = w + c * K;                                                        \
                T *yr = y + (b * C + c) * L;                                                    \
                T *qr = present + (b * C + c) * P;                                              \
                for (t = 0; t < L; t++) {                                                       \
                    float acc = bias ? (float)LD(bias[c]) : 0.0f;                               \
                    for (k = 0; k < K; k++) {                                                   \
                        int64_t p = t + k; /* index into padded */                              \
                        float v = p >= P ? (float)LD(xr[p - P]) : pr ? (float)LD(pr[p]) : 0.0f; \
                        acc += (float)LD(wr[k]) * v;                                            \
                    }                                                                           \
                    if (silu) {                                                                 \
                        float r = (float)LD(ST(acc)); /* rounded before the SiLU, as the reference */ \
                        acc = r / (1.0f + expf(-r));                                            \
                    }                                                                           \
                    yr[t] = ST(acc);                                                            \
                }                                                                               \
                for (k = 0; k < P; k++) {                                                       \
                    int64_t p = L + k;                                                          \
                    qr[k] = p >= P ? xr[p - P] : pr ? pr[p] : ST(0.0f);                         \
                }                                                                               \
            }                                                                                   \
    }

RT_CAUSAL_CONV_DEFINE(f32, float, RT_MISC_LD_F32, RT_MISC_ST_F32)
RT_CAUSAL_CONV_DEFINE(f64, double, RT_MISC_LD_F64, RT_MISC_ST_F64)
RT_CAUSAL_CONV_DEFINE(f16, uint16_t, RT_MISC_LD_F16, RT_MISC_ST_F16)
RT_CAUSAL_CONV_DEFINE(bf16, uint16_t, RT_MISC_LD_BF16, RT_MISC_ST_BF16)

/* ---- DeformConv (2-D) -------------------------------------------------------------------- */

typedef struct RtDeformGeom {
    int64_t n, c, m, group, offset_group;
    int64_t ih, iw, oh, ow, kh, kw; /* input, output and kernel sizes */
    int64_t sh, sw, dh, dw, ph, pw; /* strides, dilations, leading pads */
} RtDeformGeom;

/* Bilinear sample of plane (ih, iw) at (h, w); samples outside the plane read 0. */
#define RT_DEFORM_DEFINE(SFX, T, LD, ST)                                                        \
    RT_API double rt_deform_sample_##SFX(const T *p, int64_t ih, int64_t iw, double h,          \
                                         double w) {                                            \
        double h0 = floor(h), w0 = floor(w), fh = h - h0, fw = w - w0, acc = 0.0;               \
        int64_t y0 = (int64_t)h0, x0 = (int64_t)w0, dy, dx;                                     \
        if (h <= -1.0 || h >= (double)ih || w <= -1.0 || w >= (double)iw) return 0.0;           \
        for (dy = 0; dy < 2; dy++)                                                              \
            for (dx = 0; dx < 2; dx++) {                                                        \
                int64_t yy = y0 + dy, xx = x0 + dx;                                             \
                double wt = (dy ? fh : 1.0 - fh) * (dx ? fw : 1.0 - fw);                        \
                if (yy < 0 || yy >= ih || xx < 0 || xx >= iw || wt == 0.0) continue;            \
                acc += wt * (double)LD(p[yy * iw + xx]);                                        \
            }                                                                                   \
        return acc;                                                                             \
    }                                                                                           \
    /* x: (N,C,IH,IW), w: (M,C/group,KH,KW), offset: (N,offset_group*KH*KW*2,OH,OW) as          \
     * (dh, dw) pairs per tap, bias: (M) or NULL, mask: (N,offset_group*KH*KW,OH,OW) or NULL,   \
     * y: (N,M,OH,OW). */                                                                       \
    RT_API void rt_deform_conv_##SFX(const T *x, const T *w, const T *offset, const T *bias,    \
                                     const T *mask, T *y, const RtDeformGeom *g) {              \
        int64_t cg = g->c / g->group, mg = g->m / g->group, cog = g->c / g->offset_group;       \
        int64_t kk = g->kh * g->kw, opl = g->oh * g->ow;                                        \
        int64_t b, m, c, i, j, a, e;                                                            \
        for (b = 0; b < g->n; b++)                                                              \
            for (m = 0; m < g->m; m++)                                                          \
                for (i = 0; i < g->oh; i++)                                                     \
                    for (j = 0; j < g->ow; j++) {                                               \
                        double acc = bias ? (double)LD(bias[m]) : 0.0;                          \
                        int64_t grp = m / mg;                                                   \
                        for (c = 0; c < cg; c++) {                                              \
                            int64_t ic = grp * cg + c, og = ic / cog;                           \
                            const T *xp = x + (b * g->c + ic) * g->ih * g->iw;                  \
                            const T *wp = w + (m * cg + c) * kk;                                \
                            for (a = 0; a < g->kh; a++)                                         \
                                for (e = 0; e < g->kw; e++) {                                   \
                                    int64_t tap = (og * g->kh + a) * g->kw + e;                 \
                                    int64_t oo = (b * g->offset_group * kk * 2 + tap * 2) * opl \
                                                 + i * g->ow + j;                               \
                                    double hh = (double)(i * g->sh - g->ph + a * g->dh) +       \
                                                (double)LD(offset[oo]);                         \
                                    double ww = (double)(j * g->sw - g->pw + e * g->dw) +       \
                                                (double)LD(offset[oo + opl]);                   \
                                    double v = rt_deform_sample_##SFX(xp, g->ih, g->iw, hh,     \
                                                                      ww);                      \
                                    if (mask)                                                   \
                                        v *= (double)LD(                                        \
                                            mask[(b * g->offset_group * kk + tap) * opl +       \
                                                 i * g->ow + j]);                               \
                                    acc += v * (double)LD(wp[a * g->kw + e]);                   \
                                }                                                               \
                        }                                                                       \
                        y[((b * g->m + m) * g->oh + i) * g->ow + j] = ST(acc);                  \
                    }                                                                           \
    }

RT_DEFORM_DEFINE(f32, float, RT_MISC_LD_F32, RT_MISC_ST_F32)
RT_DEFORM_DEFINE(f64, double, RT_MISC_LD_F64, RT_MISC_ST_F64)
RT_DEFORM_DEFINE(f16, uint16_t, RT_MISC_LD_F16, RT_MISC_ST_F16)

/* ---- LinearAttention ------------------------------------------------------------------ */

/* Recurrent linear attention, one (batch, kv head) at a time, with the state in float:
 *   gated:  S *= exp(decay_t) (per row d of S, or one value per head)
 *   delta:  v_t = beta_t * (v_t - S^T k_t)
 *   S += k_t v_t^T;  y_t[h] = scale * S^T q_t[h] for the q heads h of this kv head.
 * q: (B,T,Hq*dk), k: (B,T,Hkv*dk), v: (B,T,Hkv*dv), past/present: (B,Hkv,dk,dv) (past may be
 * NULL), decay: (B,T,Hkv * decay_w) (decay_w 1 or dk) or NULL, beta: (B,T,beta_w) (beta_w
 * Hkv or 1) or NULL, y: (B,T,Hq*dv), state: dk*dv floats of scratch. */
#define RT_LINEAR_ATTENTION_DEFINE(SFX, T, LD, ST)                                              \
    RT_API void rt_linear_attention_##SFX(                                                      \
        const T *q, const T *k, const T *v, const T *past, const T *decay, int64_t decay_w,     \
        const T *beta, int64_t beta_w, T *y, T *present, float *state, int64_t B, int64_t Tn,   \
        int64_t Hq, int64_t Hkv, int64_t dk, int64_t dv, float scale) {                         \
        int64_t b, h, t, d, m, gq, group = Hq / Hkv;                                            \
        for (b = 0; b < B; b++)                                                                 \
            for (h = 0; h < Hkv; h++) {                                                         \
                const T *ps = past ? past + (b * Hkv + h) * dk * dv : NULL;                     \
                T *pr = present + (b * Hkv + h) * dk * dv;                                      \
                for (d = 0; d < dk * dv; d++) state[d] = ps ? LD(ps[d]) : 0.0f;                 \
                for (t = 0; t < Tn; t++) {                                                      \
                    int64_t bt = b * Tn + t;                                                    \
                    const T *kt = k + (bt * Hkv + h) * dk;                                      \
                    const T *vt = v + (bt * Hkv + h) * dv;                                      \
                    if (decay)                                                                  \
                        for (d = 0; d < dk; d++) {                                              \
                            float gd = expf(LD(decay[(bt * Hkv + h) * decay_w +                 \
                                                     (decay_w > 1 ? d : 0)]));                  \
                            for (m = 0; m < dv; m++) state[d * dv + m] *= gd;                   \
                        }                                                                       \
                    for (m = 0; m < dv; m++) {                                                  \
                        float u = LD(vt[m]);                                                    \
                        if (beta) {                                                             \
                            float r = 0.0f;                                                     \
                            for (d = 0; d < dk; d++) r += state[d * dv + m] * LD(kt[d]);        \
                            u = LD(beta[bt * beta_w + (beta_w > 1 ? h : 0)]) * (u - r);         \
                        }                                                                       \
                        for (d = 0; d < dk; d++) state[d * dv + m] += LD(kt[d]) * u;            \
                    }                                                                           \
                    for (gq = 0; gq < group; gq++) {                                            \
                        int64_t hq = h * group + gq;                                            \
                        const T *qt = q + (bt * Hq + hq) * dk;                                  \
                        T *yt = y + (bt * Hq + hq) * dv;                                        \
                        for (m = 0; m < dv; m++) {                                              \
                            float acc = 0.0f;                                                   \
                            for (d = 0; d < dk; d++) acc += LD(qt[d]) * state[d * dv + m];      \
                            yt[m] = ST(scale * acc);                                            \
                        }                                                                       \
                    }                                                                           \
                }                                                                               \
                for (d = 0; d < dk * dv; d++) pr[d] = ST(state[d]);                             \
            }                                                                                   \
    }

RT_LINEAR_ATTENTION_DEFINE(f32, float, RT_MISC_LD_F32, RT_MISC_ST_F32)
RT_LINEAR_ATTENTION_DEFINE(f16, uint16_t, RT_MISC_LD_F16, RT_MISC_ST_F16)
RT_LINEAR_ATTENTION_DEFINE(bf16, uint16_t, RT_MISC_LD_BF16, RT_MISC_ST_BF16)

/* ---- Unique ------------------------------------------------------------------------------ */

/* Unique slices of x viewed as (A, L, I) along its middle axis (a flattened tensor is
 * (1, numel, 1)). Slices compare lexicographically in (a, i) order. Outputs: y (A, U, I),
 * idx (U) first occurrences, inv (L) the output slice of each input slice, cnt (U). sorted:
 * slices in ascending order, else in order of first occurrence. U is the compiled bound:
 * rt_unique_upto writes the run-time count n <= U to *count and fills the entries past it
 * (y 0, idx -1, cnt 0); more than U unique slices is RT_ERR_SHAPE. rt_unique is the strict
 * form: n must equal U. O(L^2 * A * I) time and no scratch beyond the outputs: inv holds
 * first occurrences until the last pass. */
#define RT_UNIQUE_DEFINE(SFX, T)                                                                \
    RT_API int rt_unique_cmp_##SFX(const T *x, int64_t A, int64_t L, int64_t I, int64_t j1,     \
                                   int64_t j2) {                                                \
        int64_t a, i;                                                                           \
        for (a = 0; a < A; a++)                                                                 \
            for (i = 0; i < I; i++) {                                                           \
                T u = x[(a * L + j1) * I + i], w = x[(a * L + j2) * I + i];                     \
                if (u < w) return -1;                                                           \
                if (w < u) return 1;                                                            \
            }                                                                                   \
        return 0;                                                                               \
    }                                                                                           \
    RT_API int rt_unique_upto_##SFX(const T *x, int64_t A, int64_t L, int64_t I, int sorted,    \
                                    int64_t U, T *y, int64_t *idx, int64_t *inv, int64_t *cnt,  \
                                    int64_t *count) {                                           \
        int64_t j, j2, p, n = 0, a, i;                                                          \
        for (j = 0; j < L; j++) {                                                               \
            inv[j] = j;                                                                         \
            for (j2 = 0; j2 < j; j2++)                                                          \
                if (inv[j2] == j2 && rt_unique_cmp_##SFX(x, A, L, I, j2, j) == 0) {             \
                    inv[j] = j2;                                                                \
                    break;                                                                      \
                }                                                                               \
            if (inv[j] == j) n++;                                                               \
        }                                                                                       \
        if (n > U) return RT_ERR_SHAPE;                                                         \
        *count = n;                                                                             \
        n = 0;                                                                                  \
        for (j = 0; j < L; j++) {                                                               \
            if (inv[j] != j) continue;                                                          \
            p = n++;                                                                            \
            if (sorted) {                                                                       \
                p = 0;                                                                          \
                for (j2 = 0; j2 < L; j2++)                                                      \
                    if (inv[j2] == j2 && rt_unique_cmp_##SFX(x, A, L, I, j2, j) < 0) p++;       \
            }                                                                                   \
            idx[p] = j;                                                                         \
            cnt[p] = 0;                                                                         \
        }                                                                                       \
        for (j = 0; j < L; j++) {                                                               \
            for (p = 0; p < n && idx[p] != inv[j]; p++) {                                       \
            }                                                                                   \
            inv[j] = p;                                                                         \
            cnt[p]++;                                                                           \
        }                                                                                       \
        for (p = n; p < U; p++) /* the fill */                                                  \
            idx[p] = -1, cnt[p] = 0;                                                            \
        for (a = 0; a < A; a++)                                                                 \
            for (p = 0; p < U; p++)                                                             \
                for (i = 0; i < I; i++)                                                         \
                    y[(a * U + p) * I + i] = p < n ? x[(a * L + idx[p]) * I + i] : (T)0;        \
        return RT_OK;                                                                           \
    }                                                                                           \
    RT_API int rt_unique_##SFX(const T *x, int64_t A, int64_t L, int64_t I, int sorted,         \
                               int64_t U, T *y, int64_t *idx, int64_t *inv, int64_t *cnt) {     \
        int64_t n;                                                                              \
        int rc = rt_unique_upto_##SFX(x, A, L, I, sorted, U, y, idx, inv, cnt, &n);             \
        return rc != RT_OK ? rc : n != U ? RT_ERR_SHAPE : RT_OK;                                \
    }

RT_UNIQUE_DEFINE(f32, float)
RT_UNIQUE_DEFINE(f64, double)
RT_UNIQUE_DEFINE(i8, int8_t)
RT_UNIQUE_DEFINE(u8, uint8_t)
RT_UNIQUE_DEFINE(i16, int16_t)
RT_UNIQUE_DEFINE(u16, uint16_t)
RT_UNIQUE_DEFINE(i32, int32_t)
RT_UNIQUE_DEFINE(u32, uint32_t)
RT_UNIQUE_DEFINE(i64, int64_t)
RT_UNIQUE_DEFINE(u64, uint64_t)

/* ---- TfIdfVectorizer -------------------------------------------------------------------- */

#define RT_TFIDF_TF 0
#define RT_TFIDF_IDF 1
#define RT_TFIDF_TFIDF 2

/* Counts the pool's n-grams in each row of x and weighs the counts. x: (rows, C) token ids;
 * pool: the n-grams, grouped by size: those of size k+1 start at pool[start[k]] (k <
 * n_sizes) and run to the next group; the j-th n-gram of the pool (counting across groups)
 * lands in column out_index[j] of y: (rows, out_size). For each skip distance 1..max_skip+1,
 * every n-gram of sizes min_gram..max_gram whose tokens are that distance apart is looked up;
 * unigrams are counted at distance 1 only. mode: RT_TFIDF_*; weights: per n-gram or NULL. */
#define RT_TFIDF_DEFINE(SFX, T)                                                                 \
    RT_API void rt_tfidf_##SFX(const T *x, int64_t rows, int64_t C, const int64_t *pool,        \
                               int64_t pool_len, const int64_t *start, int64_t n_sizes,         \
                               const int64_t *out_index, const float *weights, int mode,        \
                               int64_t min_gram, int64_t max_gram, int64_t max_skip, float *y,  \
                               int64_t out_size) {                                              \
        int64_t r, sd, i, n, j, e, col;                                                         \
        for (i = 0; i < rows * out_size; i++) y[i] = 0.0f;                                      \
        for (r = 0; r < rows; r++) {                                                            \
            const T *xr = x + r * C;                                                            \
            float *yr = y + r * out_size;                                                       \
            for (sd = 1; sd <= max_skip + 1; sd++) {                                            \
                int64_t lo = sd == 1 || min_gram > 1 ? min_gram : 2;                            \
                for (i = 0; i < C; i++)                                                         \
                    for (n = lo; n <= max_gram && n <= n_sizes; n++) {                          \
                        int64_t from = start[n - 1];                                            \
                        int64_t to = n < n_sizes ? start[n] : pool_len;                         \
                        int64_t id0 = 0;                                                        \
                        if (i + (n - 1) * sd >= C) break;                                       \
                        for (j = 0; j < n - 1; j++) /* ids of the smaller groups */             \
                            id0 += ((j + 1 < n_sizes ? start[j + 1] : pool_len) - start[j]) /   \
                                   (j + 1);                                                     \
                        for (j = from; j + n <= to; j += n) {                                   \
                            for (e = 0; e < n && (int64_t)xr[i + e * sd] == pool[j + e]; e++) { \
                            }                                                                   \
                            if (e == n) {                                                       \
                                yr[out_index[id0 + (j - from) / n]] += 1.0f;                    \
                                break;                                                          \
                            }                                                                   \
                        }                                                                       \
                    }                                                                           \
            }                                                                                   \
            for (col = 0; col < out_size; col++) {                                              \
                float f = yr[col], w = weights ? weights[col] : 1.0f;                           \
                yr[col] = mode == RT_TFIDF_TF ? f : mode == RT_TFIDF_IDF ? (f > 0 ? w : 0.0f)   \
                                                                         : f * w;               \
            }                                                                                   \
        }                                                                                       \
    }

RT_TFIDF_DEFINE(i32, int32_t)
RT_TFIDF_DEFINE(i64, int64_t)

/* ---- TreeEnsemble (ai.onnx.ml) --------------------------------------------------------- */

#define RT_TREE_LEQ 0
#define RT_TREE_LT 1
#define RT_TREE_GTE 2
#define RT_TREE_GT 3
#define RT_TREE_EQ 4
#define RT_TREE_NEQ 5
#define RT_TREE_MEMBER 6

#define RT_TREE_AVERAGE 0
#define RT_TREE_SUM 1
#define RT_TREE_MIN 2
#define RT_TREE_MAX 3

/* A tree ensemble, as compile-time tables. Node k compares feature[k] of a row with split[k]
 * (or, for RT_TREE_MEMBER, with members[member_start[k] .. + member_count[k]]) and goes to
 * next[0][k] when true, next[1][k] when false; next_leaf says whether that id is a leaf. A
 * NaN feature goes the true way where missing_true[k]. Leaf j adds weight[j] to target[j]. */
typedef struct RtTreeEnsemble {
    int64_t n_trees, n_nodes, n_targets;
    int agg; /* RT_TREE_AVERAGE... */
    const int64_t *root;
    const uint8_t *root_leaf;
    const uint8_t *mode;
    const int64_t *feature;
    const double *split;
    const int64_t *next[2];
    const uint8_t *next_leaf[2];
    const uint8_t *missing_true;
    const int64_t *member_start, *member_count;
    const double *members;
    const int64_t *target;
    const double *weight;
} RtTreeEnsemble;

RT_API int rt_tree_node_true(const RtTreeEnsemble *e, int64_t k, double v) {
    double s = e->split[k];
    int64_t i;
    if (v != v && e->missing_true[k]) return 1;
    switch (e->mode[k]) {
    case RT_TREE_LEQ: return v <= s;
    case RT_TREE_LT: return v < s;
    case RT_TREE_GTE: return v >= s;
    case RT_TREE_GT: return v > s;
    case RT_TREE_EQ: return v == s;
    case RT_TREE_NEQ: return v != s;
    default:
        for (i = 0; i < e->member_count[k]; i++)
            if (e->members[e->member_start[k] + i] == v) return 1;
        return 0;
    }
}

/* x: (rows, F) as double loads by LD, y: (rows, n_targets). A walk longer than n_nodes
 * steps (a cycle in the tables) is RT_ERR_VALUE. */
#define RT_TREE_DEFINE(SFX, T, LD, ST, TMAX)                                                    \
    RT_API int rt_tree_ensemble_##SFX(const T *x, int64_t rows, int64_t F,                      \
                                      const RtTreeEnsemble *e, T *y) {                          \
        int64_t r, t, j;                                                                        \
        double acc[RT_TREE_MAX_TARGETS];                                                        \
        for (r = 0; r < rows; r++) {                                                            \
            const T *xr = x + r * F;                                                            \
            for (j = 0; j < e->n_targets; j++)                                                  \
                acc[j] = e->agg == RT_TREE_MIN ? TMAX : e->agg == RT_TREE_MAX ? -TMAX : 0.0;    \
            for (t = 0; t < e->n_trees; t++) {                                                  \
                int64_t id = e->root[t], steps = 0;                                             \
                int leaf = e->root_leaf[t];                                                     \
                double wv;                                                                      \
                while (!leaf) {                                                                 \
                    int side = rt_tree_node_true(e, id, (double)LD(xr[e->feature[id]])) ? 0 : 1; \
                    if (++steps > e->n_nodes) return RT_ERR_VALUE;                              \
                    leaf = e->next_leaf[side][id];                                              \
                    id = e->next[side][id];                                                     \
                }                                                                               \
                wv = e->weight[id];                                                             \
                j = e->target[id];                                                              \
                if (e->agg == RT_TREE_SUM) acc[j] += wv;                                        \
                else if (e->agg == RT_TREE_AVERAGE) acc[j] += wv / (double)e->n_trees;          \
                else if (e->agg == RT_TREE_MIN) acc[j] = wv < acc[j] ? wv : acc[j];             \
                else acc[j] = wv > acc[j] ? wv : acc[j];                                        \
            }                                                                                   \
            for (j = 0; j < e->n_targets; j++) y[r * e->n_targets + j] = ST(acc[j]);            \
        }                                                                                       \
        return RT_OK;                                                                           \
    }

#define RT_TREE_MAX_TARGETS 1024 /* targets of one ensemble (the accumulator is on the stack) */
RT_TREE_DEFINE(f32, float, RT_MISC_LD_F32, RT_MISC_ST_F32, 3.4028234663852886e38)
RT_TREE_DEFINE(f64, double, RT_MISC_LD_F64, RT_MISC_ST_F64, 1.7976931348623157e308)
RT_TREE_DEFINE(f16, uint16_t, RT_MISC_LD_F16, RT_MISC_ST_F16, 65504.0)

/* ---- LabelEncoder (ai.onnx.ml), numeric keys ---------------------------------------- */

/* The slot of x in keys: (n) ascending, without duplicates or NaN (the emitter sorts the
 * model's keys, keeping the last of repeated ones); -1 when absent. A NaN x matches any NaN
 * key: it gets nan_slot (the NaN key's slot, or -1). Binary search: O(log n) per element. */
#define RT_LABEL_FIND_DEFINE(SFX, T, ISNAN)                                                     \
    RT_API int64_t rt_label_find_##SFX(const T *keys, int64_t n, T x, int64_t nan_slot) {       \
        int64_t lo = 0, hi = n;                                                                 \
        if (ISNAN(x)) return nan_slot;                                                          \
        while (lo < hi) {                                                                       \
            int64_t mid = lo + (hi - lo) / 2;                                                   \
            if (keys[mid] < x) lo = mid + 1;                                                    \
            else hi = mid;                                                                      \
        }                                                                                       \
        return lo < n && keys[lo] == x ? lo : -1;                                               \
    }

#define RT_LABEL_NO_NAN(x) 0
#define RT_LABEL_IS_NAN(x) ((x) != (x))
RT_LABEL_FIND_DEFINE(i64, int64_t, RT_LABEL_NO_NAN)
RT_LABEL_FIND_DEFINE(i32, int32_t, RT_LABEL_NO_NAN)
RT_LABEL_FIND_DEFINE(i16, int16_t, RT_LABEL_NO_NAN)
RT_LABEL_FIND_DEFINE(f32, float, RT_LABEL_IS_NAN)
RT_LABEL_FIND_DEFINE(f64, double, RT_LABEL_IS_NAN)

/* ---- random numbers ------------------------------------------------------------------ */

/* The generator of the random ops: splitmix64 (Steele, Lea and Flood 2014), a 64-bit state
 * advanced by a Weyl increment and mixed; each node seeds its own from the `seed` attribute
 * (or RT_RNG_DEFAULT_SEED), so a bundle's random outputs are the same on every run and every
 * platform. They are not the values ONNX Runtime draws: no generator standard exists. */
#define RT_RNG_DEFAULT_SEED 0x6b696c6e5eedULL /* "kiln" + "seed": any fixed value works */

typedef struct RtRng {
    uint64_t s;
} RtRng;

RT_API void rt_rng_seed(RtRng *r, uint64_t seed) { r->s = seed; }

RT_API uint64_t rt_rng_next(RtRng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 53 random bits. */
RT_API double rt_rng_uniform(RtRng *r) {
    return (double)(rt_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Standard normal by Box-Muller (one of the pair; 1 - u keeps the log finite). */
RT_API double rt_rng_normal(RtRng *r) {
    double u = 1.0 - rt_rng_uniform(r), v = rt_rng_uniform(r);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

#endif
