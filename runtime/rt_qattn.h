/* rt_qattn.h: QAttention (passes/quantize.c), FusedAttention on uint8 Q, K, V with per-tensor
 * scales s and zero points z, one query row at a time:
 *   S[j]  = sum_t (q[t] - zq) (k[j][t] - zk)                      int32, exact
 *   x[j]  = S[j] * (sq sk scale) + mask[j]                         float
 *   P[j]  = round(255 exp(x[j] - max x) / sum_j exp(..))           uint8, scale 1/255, zp 0
 *   O[t]  = sum_j P[j] (v[j][t] - zv)                              int32, exact
 *   y[t]  = clamp(zy + round(O[t] sv / (255 sy)))                  the multiplier as mult/2^shift
 * The probabilities take ONNX Runtime QAttention's convention (scale 1/255, zero point 0):
 * a row of P sums to about 255, so P V keeps 8 bits of each weight.
 *
 * The integer parts are exact on every path: portable C (sum of u8 x u8 products in
 * int32), AVX-512 VNNI (vpdpbusd: K and V, packed per (batch, head) into 64-byte blocks of
 * 16 columns x 4, are stored as k - 128 in int8, and 128 sum(q) / 128 sum(P) added back),
 * AVX2 (K and V packed per head as int16 pairs, 8 columns a vector, for vpmaddwd). The
 * float part (scale, mask, max, exp, sum, the rounding of P) is one C function on every
 * path, rt_qa_softmax_row, whose every multiply-add is an explicit fmaf: a compiler that
 * contracts a * b + c (GCC's GNU mode, clang's default) would otherwise round differently
 * from one that does not, and P, hence y, would differ by a step between builds. So all
 * paths write the same bytes (SSE or NEON float; not x87's excess precision). The GPU
 * (runtime/cuda/kc_qattn.cuh) repeats the row operation for operation; if a device's float
 * path differed, y would differ from these by one step where a P rounds the other way.
 * Scratch (caller's, RT_QA_SCRATCH bytes): sum_t k[j][t], a row of scores, P padded, the
 * int32 sums, the padded query row and (VNNI, AVX2) K and V packed.
 * Floor: B H Sq Sk (D + Dv) multiply-adds, 64 a vpdpbusd.
 * Also QMatMul (rt_qmatmul): a MatMul of two uint8 activations, exact int32 sums. C99. */
#ifndef KILN_RT_QATTN_H
#define KILN_RT_QATTN_H

#include <math.h>

#include "rt_common.h"
#include "rt_par.h"

#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && !defined(RT_QA_PORTABLE) && !defined(__CUDACC__)
#define RT_QA_VNNI 1
#include <immintrin.h>
#elif defined(__AVX2__) && !defined(RT_QA_PORTABLE) && !defined(__CUDACC__)
#define RT_QA_AVX2 1
#include <immintrin.h>
#endif

#define RT_QA_NB 4 /* 16-key blocks of scores (VNNI) or 16-output blocks of P V per pass:
                      4 zmm accumulators */
#define RT_QA_R16(n) (((n) + 15) / 16 * 16)
#define RT_QA_R4(n) (((n) + 3) / 4 * 4)
#define RT_QA_A64(n) (((n) + 63) / 64 * 64)
/* Bytes of scratch: ksum (sk int32), scores (sk16 int32), their floats (sk16), P (sk16 bytes),
 * O (dv16 int32), the query row (d4 int16), K packed (sk16 x d4 int16), V packed (sk4 x dv16
 * int16; VNNI packs bytes, AVX2 int16), each piece 64-byte aligned from the start. */
#define RT_QA_SCRATCH(sk, d, dv)                                                           \
    (RT_QA_A64(4 * (int64_t)(sk)) + 2 * RT_QA_A64(4 * (int64_t)RT_QA_R16(sk)) +          \
     RT_QA_A64((int64_t)RT_QA_R16(sk)) + RT_QA_A64(4 * (int64_t)RT_QA_R16(dv)) +         \
     RT_QA_A64(2 * (int64_t)RT_QA_R4(d)) + RT_QA_A64(2 * (int64_t)RT_QA_R16(sk) * RT_QA_R4(d)) + \
     RT_QA_A64(2 * (int64_t)RT_QA_R4(sk) * RT_QA_R16(dv)) + 64)

/* Shapes and element strides as RtFusedAttn's (q (B,H,Sq,D), k (B,H,Sk,D), v (B,H,Sk,Dv),
 * mask (B,H,Sq,Sk) float with stride 0 on broadcast dimensions, y (B,H,Sq,Dv)), then the
 * quantization: zero points, the scores' multiplier sq sk scale, and Y's requantization
 * sv / (255 sy) = y_mult / 2^y_shift (y_mult < 2^31, 1 <= y_shift <= 62). */
typedef struct RtQAttn {
    int64_t b, h, sq, sk, d, dv;
    int64_t q_st[4], k_st[4], v_st[4], m_st[4], y_st[4];
    int32_t q_zp, k_zp, v_zp, y_zp;
    float score_scale;
    int32_t y_mult;
    int y_shift;
} RtQAttn;

/* e^x for x <= 0 with explicit fmaf (see the header): rt_vmath.h's range reduction and
 * polynomial; below -86.64 (and NaN), 0. */
RT_API float rt_qa_exp(float x) {
    float c = x < -86.64f ? -86.64f : x;
    float t = fmaf(c, 1.44269504f, 12582912.0f); /* 1.5 2^23: n in the low bits */
    float n = t - 12582912.0f;
    float r = fmaf(-n, 0.693145752f, c);
    r = fmaf(-n, 1.42860677e-6f, r);
    float p = fmaf(1.38938344e-3f, r, 8.36312576e-3f);
    p = fmaf(p, r, 4.16669426e-2f);
    p = fmaf(p, r, 1.66665775e-1f);
    p = fmaf(p, r, 4.99999994e-1f);
    float rr = r * r;
    p = fmaf(rr, p, 1.0f + r);
    uint32_t tb, e, keep = 0u - (uint32_t)(x >= -86.64f); /* 0 below (and for NaN) */
    float s, y;
    memcpy(&tb, &t, sizeof tb);
    e = (tb - 0x4b400000u + 126u) << 23; /* 2^(n-1): n in [-125, 0] */
    memcpy(&s, &e, sizeof s);
    y = (p * 2.0f) * s;
    memcpy(&e, &y, sizeof e);
    e &= keep; /* a select in the bits: GCC leaves a ?: whose arm computes unvectorized */
    memcpy(&y, &e, sizeof y);
    return y;
}

/* The float part of one query row, the same on every path: scores S (int32, sk) to P
 * (uint8, sk; 255 times the softmax, rounded) through the float row f (sk). mask: the
 * row's first element at stride ms, or NULL. Returns sum_j P[j]. */
RT_API int32_t rt_qa_softmax_row(const int32_t *S, float *f, uint8_t *P, int64_t sk, float mul,
                                 const float *mask, int64_t ms) {
    float mx = 0, lane[16] = {0}, sum = 0, r;
    int64_t j, l;
    int32_t psum = 0;
    for (j = 0; j < sk; j++) {
        float x = fmaf((float)S[j], mul, mask ? mask[j * ms] : 0.0f);
        f[j] = x;
        if (j == 0 || x > mx) mx = x;
    }
    for (j = 0; j < sk; j++) f[j] = rt_qa_exp(f[j] - mx);
    for (j = 0; j + 16 <= sk; j += 16)
        for (l = 0; l < 16; l++) lane[l] += f[j + l];
    for (l = 0; l < 16; l++) sum += lane[l];
    for (; j < sk; j++) sum += f[j];
    r = 255.0f / sum; /* sum >= 1: the maximum's e^0 */
    for (j = 0; j < sk; j++) {
        float v = nearbyintf(f[j] * r);
        P[j] = (uint8_t)(v > 255.0f ? 255 : v);
        psum += P[j];
    }
    return psum;
}

/* floor(t / 2^s + 1/2), 1 <= s <= 62 */
RT_API int64_t rt_qa_round_shift(int64_t t, int s) {
    int64_t u = t + ((int64_t)1 << (s - 1));
    return u >= 0 ? u >> s : -((-u - 1) >> s) - 1;
}

RT_API uint8_t rt_qa_requant(int32_t o, const RtQAttn *p) {
    int64_t v = rt_qa_round_shift((int64_t)o * p->y_mult, p->y_shift) + p->y_zp;
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* sum_t a[t] b[t] of two uint8 rows at element strides, exact in int32 (n < 33025) */
RT_API int32_t rt_qa_dot(const uint8_t *a, int64_t as, const uint8_t *b, int64_t bs, int64_t n) {
    int32_t s = 0;
    int64_t t = 0;
#ifdef RT_QA_AVX2
    if (as == 1 && bs == 1) {
        __m256i acc = _mm256_setzero_si256();
        for (; t + 16 <= n; t += 16) {
            __m256i x = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(a + t)));
            __m256i y = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(b + t)));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(x, y));
        }
        __m128i h = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
        h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4e));
        h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xb1));
        s = _mm_cvtsi128_si32(h);
    }
#endif
    if (as == 1 && bs == 1)
        for (; t < n; t++) s += (int32_t)a[t] * b[t];
    else
        for (; t < n; t++) s += (int32_t)a[t * as] * b[t * bs];
    return s;
}

/* Scratch pieces (see RT_QA_SCRATCH). */
typedef struct RtQaWs {
    int32_t *ksum, *S, *O;
    float *f;
    uint8_t *P, *qr, *kp, *vp;
} RtQaWs;

RT_API void rt_qa_ws(const RtQAttn *p, void *scratch, RtQaWs *w) {
    uint8_t *s = (uint8_t *)scratch;
    int64_t sk16 = RT_QA_R16(p->sk);
    s += (64 - (int64_t)((uintptr_t)s % 64)) % 64;
    w->ksum = (int32_t *)(void *)s;
    s += RT_QA_A64(4 * p->sk);
    w->S = (int32_t *)(void *)s;
    s += RT_QA_A64(4 * sk16);
    w->f = (float *)(void *)s;
    s += RT_QA_A64(4 * sk16);
    w->P = s;
    s += RT_QA_A64(sk16);
    w->O = (int32_t *)(void *)s;
    s += RT_QA_A64(4 * RT_QA_R16(p->dv));
    w->qr = s;
    s += RT_QA_A64(2 * RT_QA_R4(p->d));
    w->kp = s;
    s += RT_QA_A64(2 * sk16 * RT_QA_R4(p->d));
    w->vp = s;
}

/* Query rows [i_lo, i_hi) of batch b, head h (K's sums and, VNNI, K and V packed first). */
RT_API void rt_qattention_head(const RtQAttn *p, const uint8_t *q, const uint8_t *k,
                               const uint8_t *v, const float *mask, uint8_t *y, void *scratch,
                               int64_t b, int64_t h) {
    RtQaWs w;
    const uint8_t *qb = q + b * p->q_st[0] + h * p->q_st[1];
    const uint8_t *kb = k + b * p->k_st[0] + h * p->k_st[1];
    const uint8_t *vb = v + b * p->v_st[0] + h * p->v_st[1];
    uint8_t *yb = y + b * p->y_st[0] + h * p->y_st[1];
    const float *mb = mask ? mask + b * p->m_st[0] + h * p->m_st[1] : NULL;
    int64_t i, j, t, D = p->d, Dv = p->dv, Sk = p->sk;
    int64_t zqzk = (int64_t)p->q_zp * p->k_zp * D;
    rt_qa_ws(p, scratch, &w);
    for (j = 0; j < Sk; j++) {
        const uint8_t *kr = kb + j * p->k_st[2];
        int32_t s = 0;
        for (t = 0; t < D; t++) s += kr[t * p->k_st[3]];
        w.ksum[j] = s;
    }
#ifdef RT_QA_VNNI
    int64_t d4 = RT_QA_R4(D) / 4, sk4 = RT_QA_R4(Sk) / 4, nkb = RT_QA_R16(Sk) / 16;
    int64_t ntb = RT_QA_R16(Dv) / 16;
    /* kp[(jb d4 + kb) 64 + jj 4 + u] = k[16 jb + jj][4 kb + u] - 128 (0 past the ends) */
    for (int64_t jb = 0; jb < nkb; jb++)
        for (int64_t kq = 0; kq < d4; kq++)
            for (int jj = 0; jj < 16; jj++)
                for (int u = 0; u < 4; u++) {
                    int64_t jr = jb * 16 + jj, tc = kq * 4 + u;
                    w.kp[(jb * d4 + kq) * 64 + jj * 4 + u] =
                        jr < Sk && tc < D ? (uint8_t)(kb[jr * p->k_st[2] + tc * p->k_st[3]] ^ 0x80) : 0;
                }
    /* vp[(jq ntb + tb) 64 + tt 4 + u] = v[4 jq + u][16 tb + tt] - 128 (0 past the ends) */
    for (int64_t jq = 0; jq < sk4; jq++)
        for (int64_t tb = 0; tb < ntb; tb++)
            for (int tt = 0; tt < 16; tt++)
                for (int u = 0; u < 4; u++) {
                    int64_t jr = jq * 4 + u, tc = tb * 16 + tt;
                    w.vp[(jq * ntb + tb) * 64 + tt * 4 + u] =
                        jr < Sk && tc < Dv ? (uint8_t)(vb[jr * p->v_st[2] + tc * p->v_st[3]] ^ 0x80) : 0;
                }
    for (j = Sk; j < sk4 * 4; j++) w.P[j] = 0;
    for (t = D; t < d4 * 4; t++) w.qr[t] = 0;
#elif defined(RT_QA_AVX2)
    /* int16 pairs for vpmaddwd (u8 values: no product or pair sum overflows) */
    int16_t *kp = (int16_t *)(void *)w.kp, *vp = (int16_t *)(void *)w.vp, *q16 = (int16_t *)(void *)w.qr;
    int64_t d2 = (D + 1) / 2, sk2 = (Sk + 1) / 2, nkb = (Sk + 7) / 8, ntb = (Dv + 7) / 8;
    /* kp[((jb d2 + tq) 8 + jj) 2 + u] = k[8 jb + jj][2 tq + u] (0 past the ends) */
    for (int64_t jb = 0; jb < nkb; jb++)
        for (int64_t tq = 0; tq < d2; tq++)
            for (int jj = 0; jj < 8; jj++)
                for (int u = 0; u < 2; u++) {
                    int64_t jr = jb * 8 + jj, tc = tq * 2 + u;
                    kp[((jb * d2 + tq) * 8 + jj) * 2 + u] =
                        (int16_t)(jr < Sk && tc < D ? kb[jr * p->k_st[2] + tc * p->k_st[3]] : 0);
                }
    /* vp[((jq ntb + tb) 8 + tt) 2 + u] = v[2 jq + u][8 tb + tt] (0 past the ends) */
    for (int64_t jq = 0; jq < sk2; jq++)
        for (int64_t tb = 0; tb < ntb; tb++)
            for (int tt = 0; tt < 8; tt++)
                for (int u = 0; u < 2; u++) {
                    int64_t jr = jq * 2 + u, tc = tb * 8 + tt;
                    vp[((jq * ntb + tb) * 8 + tt) * 2 + u] =
                        (int16_t)(jr < Sk && tc < Dv ? vb[jr * p->v_st[2] + tc * p->v_st[3]] : 0);
                }
    for (j = Sk; j < sk2 * 2; j++) w.P[j] = 0;
    for (t = D; t < d2 * 2; t++) q16[t] = 0;
#endif
    for (i = 0; i < p->sq; i++) {
        const uint8_t *qr = qb + i * p->q_st[2];
        uint8_t *yr = yb + i * p->y_st[2];
        int32_t qsum = 0, psum;
        for (t = 0; t < D; t++) qsum += qr[t * p->q_st[3]];
        int64_t corr = zqzk - (int64_t)p->k_zp * qsum;
#ifdef RT_QA_VNNI
        for (t = 0; t < D; t++) w.qr[t] = qr[t * p->q_st[3]];
        for (int64_t jb = 0; jb < nkb; jb += RT_QA_NB) {
            __m512i acc[RT_QA_NB];
            int nb = nkb - jb < RT_QA_NB ? (int)(nkb - jb) : RT_QA_NB, u;
            for (u = 0; u < nb; u++) acc[u] = _mm512_setzero_si512();
            for (int64_t kq = 0; kq < d4; kq++) {
                int32_t a4;
                memcpy(&a4, w.qr + kq * 4, 4);
                const __m512i av = _mm512_set1_epi32(a4);
                for (u = 0; u < nb; u++)
                    acc[u] = _mm512_dpbusd_epi32(acc[u], av,
                                                 _mm512_loadu_si512(w.kp + ((jb + u) * d4 + kq) * 64));
            }
            for (u = 0; u < nb; u++) _mm512_storeu_si512(w.S + (jb + u) * 16, acc[u]);
        }
        corr += (int64_t)128 * qsum; /* k - 128 in the packed K */
        for (j = 0; j < Sk; j++)
            w.S[j] = (int32_t)(w.S[j] + corr - (int64_t)p->q_zp * w.ksum[j]);
#elif defined(RT_QA_AVX2)
        for (t = 0; t < D; t++) q16[t] = (int16_t)qr[t * p->q_st[3]];
        for (int64_t jb = 0; jb < nkb; jb += RT_QA_NB) {
            __m256i acc[RT_QA_NB];
            int nb = nkb - jb < RT_QA_NB ? (int)(nkb - jb) : RT_QA_NB, u;
            for (u = 0; u < nb; u++) acc[u] = _mm256_setzero_si256();
            for (int64_t tq = 0; tq < d2; tq++) {
                int32_t a2;
                memcpy(&a2, q16 + tq * 2, 4);
                const __m256i av = _mm256_set1_epi32(a2);
                for (u = 0; u < nb; u++)
                    acc[u] = _mm256_add_epi32(acc[u], _mm256_madd_epi16(av, _mm256_loadu_si256(
                        (const __m256i *)(const void *)(kp + ((jb + u) * d2 + tq) * 16))));
            }
            for (u = 0; u < nb; u++) _mm256_storeu_si256((__m256i *)(void *)(w.S + (jb + u) * 8), acc[u]);
        }
        for (j = 0; j < Sk; j++)
            w.S[j] = (int32_t)(w.S[j] + corr - (int64_t)p->q_zp * w.ksum[j]);
#else
        for (j = 0; j < Sk; j++) {
            const uint8_t *kr = kb + j * p->k_st[2];
            int32_t raw = rt_qa_dot(qr, p->q_st[3], kr, p->k_st[3], D);
            w.S[j] = (int32_t)(raw + corr - (int64_t)p->q_zp * w.ksum[j]);
        }
#endif
        psum = rt_qa_softmax_row(w.S, w.f, w.P, Sk, p->score_scale,
                                 mb ? mb + i * p->m_st[2] : NULL, p->m_st[3]);
#ifdef RT_QA_VNNI
        for (int64_t tb = 0; tb < ntb; tb += RT_QA_NB) {
            __m512i acc[RT_QA_NB];
            int nb = ntb - tb < RT_QA_NB ? (int)(ntb - tb) : RT_QA_NB, u;
            for (u = 0; u < nb; u++) acc[u] = _mm512_setzero_si512();
            for (int64_t jq = 0; jq < sk4; jq++) {
                int32_t a4;
                memcpy(&a4, w.P + jq * 4, 4);
                const __m512i av = _mm512_set1_epi32(a4);
                for (u = 0; u < nb; u++)
                    acc[u] = _mm512_dpbusd_epi32(acc[u], av,
                                                 _mm512_loadu_si512(w.vp + (jq * ntb + tb + u) * 64));
            }
            for (u = 0; u < nb; u++) _mm512_storeu_si512(w.O + (tb + u) * 16, acc[u]);
        }
        for (t = 0; t < Dv; t++) w.O[t] += (128 - p->v_zp) * psum; /* v - 128 packed */
#elif defined(RT_QA_AVX2)
        for (int64_t tb = 0; tb < ntb; tb += RT_QA_NB) {
            __m256i acc[RT_QA_NB];
            int nb = ntb - tb < RT_QA_NB ? (int)(ntb - tb) : RT_QA_NB, u;
            for (u = 0; u < nb; u++) acc[u] = _mm256_setzero_si256();
            for (int64_t jq = 0; jq < sk2; jq++) {
                const __m256i av = _mm256_set1_epi32((int32_t)w.P[jq * 2] | (int32_t)w.P[jq * 2 + 1] << 16);
                for (u = 0; u < nb; u++)
                    acc[u] = _mm256_add_epi32(acc[u], _mm256_madd_epi16(av, _mm256_loadu_si256(
                        (const __m256i *)(const void *)(vp + (jq * ntb + tb + u) * 16))));
            }
            for (u = 0; u < nb; u++) _mm256_storeu_si256((__m256i *)(void *)(w.O + (tb + u) * 8), acc[u]);
        }
        for (t = 0; t < Dv; t++) w.O[t] -= p->v_zp * psum;
#else
        for (t = 0; t < Dv; t++) w.O[t] = -p->v_zp * psum;
        for (j = 0; j < Sk; j++) {
            const uint8_t *vr = vb + j * p->v_st[2];
            int32_t pj = w.P[j];
            if (pj == 0) continue; /* most weights of a peaked row */
            if (p->v_st[3] == 1)
                for (t = 0; t < Dv; t++) w.O[t] += pj * vr[t];
            else
                for (t = 0; t < Dv; t++) w.O[t] += pj * vr[t * p->v_st[3]];
        }
#endif
        for (t = 0; t < Dv; t++) yr[t * p->y_st[3]] = rt_qa_requant(w.O[t], p);
    }
}

/* y = QAttention(q, k, v, mask); scratch: RT_QA_SCRATCH(p->sk, p->d, p->dv) bytes. */
RT_API void rt_qattention(const RtQAttn *p, const uint8_t *q, const uint8_t *k, const uint8_t *v,
                          const float *mask, uint8_t *y, void *scratch) {
    int64_t b, h;
    for (b = 0; b < p->b; b++)
        for (h = 0; h < p->h; h++) rt_qattention_head(p, q, k, v, mask, y, scratch, b, h);
}

typedef struct RtQaTask {
    const RtQAttn *p;
    const uint8_t *q, *k, *v;
    const float *mask;
    uint8_t *y;
    const RtPar *par;
    int64_t per_task; /* heads */
} RtQaTask;

RT_API void rt_qa_task(void *arg, int64_t task, int worker) {
    const RtQaTask *t = (const RtQaTask *)arg;
    int64_t n = t->p->b * t->p->h, i;
    for (i = task * t->per_task; i < n && i < (task + 1) * t->per_task; i++)
        rt_qattention_head(t->p, t->q, t->k, t->v, t->mask, t->y, rt_par_scratch(t->par, worker),
                           i / t->p->h, i % t->p->h);
}

/* The same, heads shared among the workers of par, each with RT_QA_SCRATCH bytes of its
 * scratch; a head is computed as the serial loop does, so the bytes do not change. */
RT_API void rt_qattention_par(const RtQAttn *p, const uint8_t *q, const uint8_t *k,
                              const uint8_t *v, const float *mask, uint8_t *y, const RtPar *par) {
    int64_t heads = p->b * p->h, n = rt_par_chunks(par, heads, 1);
    RtQaTask t;
    t.p = p;
    t.q = q;
    t.k = k;
    t.v = v;
    t.mask = mask;
    t.y = y;
    t.par = par;
    t.per_task = (heads + n - 1) / n;
    rt_par_run(par, (heads + t.per_task - 1) / t.per_task, rt_qa_task, &t);
}

/* ---- QMatMul: the product of two uint8 activations ---- */

/* batch products of A (M,K) and B (K,N) (a_bst, b_bst: elements between batches, 0 for a
 * broadcast operand), y (batch,M,N); Y's requantization s_a s_b / s_y = y_mult / 2^y_shift. */
typedef struct RtQMatMul {
    int64_t batch, m, k, n, a_bst, b_bst;
    int32_t a_zp, b_zp, y_zp, y_mult;
    int y_shift;
} RtQMatMul;

/* sum_k (a - za)(b - zb) = sum a b - za colsum(B) - zb rowsum(A) + K za zb, the raw sums of
 * u8 x u8 in int32 (exact for K < 33025), a row of B at a time so the loop over N vectorizes
 * on every path. ws: 2 N int32. */
RT_API void rt_qmatmul(const RtQMatMul *p, const uint8_t *a, const uint8_t *b, uint8_t *y,
                       int32_t *ws) {
    int32_t *acc = ws, *cs = ws + p->n;
    int64_t bi, i, j, t, zz = (int64_t)p->a_zp * p->b_zp * p->k;
    for (bi = 0; bi < p->batch; bi++) {
        const uint8_t *A = a + bi * p->a_bst, *B = b + bi * p->b_bst;
        uint8_t *Y = y + bi * p->m * p->n;
        for (j = 0; j < p->n; j++) cs[j] = 0;
        for (t = 0; t < p->k; t++)
            for (j = 0; j < p->n; j++) cs[j] += B[t * p->n + j];
        for (i = 0; i < p->m; i++) {
            const uint8_t *ar = A + i * p->k;
            int32_t rs = 0;
            for (j = 0; j < p->n; j++) acc[j] = 0;
            for (t = 0; t < p->k; t++) {
                int32_t av = ar[t];
                const uint8_t *br = B + t * p->n;
                rs += av;
                for (j = 0; j < p->n; j++) acc[j] += av * br[j];
            }
            for (j = 0; j < p->n; j++) {
                int32_t o = (int32_t)(acc[j] - (int64_t)p->a_zp * cs[j] - (int64_t)p->b_zp * rs + zz);
                int64_t v = rt_qa_round_shift((int64_t)o * p->y_mult, p->y_shift) + p->y_zp;
                Y[i * p->n + j] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        }
    }
}

#endif /* KILN_RT_QATTN_H */
