/* rt_fusedattn.h: FusedAttention (passes/fuse_attention.c), softmax(scale * Q K^T + mask) V,
 * without the (Sq, Sk) score matrix. Two ways, the same results up to rounding:
 * - the row path (float and double; the reference): one query row at a time, its scores in a
 *   scratch row of Sk elements, each score a dot product over the head dimension (lane-split
 *   when contiguous), P V as a sum of V's rows;
 * - the K^T path (float): per (batch, head), K^T in scratch (D rows of Sk keys padded to 16),
 *   then per tile of RT_FA_MR query rows the scores as a small product Q_tile K^T whose
 *   vectors hold 16 keys of one query (no horizontal sums: an earlier 4-keys-at-once form of
 *   the row path paid a fixed-order horizontal sum per score and gained nothing), the
 *   softmax on those rows, and P V as a product over V's rows. AVX-512 tiles where the
 *   compiler targets it (RT_FA_AVX512), portable loops that vectorize else.
 * Scratch is the caller's: a small node's on the stack, rt_fused_attention_par's per worker
 * in the arena (rt_par.h). Every operand is read through element strides, which is how the
 * Transposes around the pattern were absorbed. The softmax subtracts the row maximum and sums
 * in blocks (rt_sum.h), so its error does not grow with Sk: the K^T path's rows through
 * rt_softmax.h's rt_softmax_row_f32 (AVX-512: rt_fa_softmax_row_f32, its form for a padded
 * score row); float exp is rt_vmath.h's. C99. */
#ifndef KILN_RT_FUSEDATTN_H
#define KILN_RT_FUSEDATTN_H

#include "rt_common.h"
#include "rt_par.h"
#include "rt_softmax.h" /* rt_softmax_row_f32 */
#include "rt_sum.h"
#include "rt_vmath.h"

#if defined(__AVX512F__) && !defined(RT_FA_PORTABLE) && !defined(__CUDACC__)
#define RT_FA_AVX512 1
#include <immintrin.h>
#elif defined(__AVX2__) && defined(__FMA__) && !defined(RT_FA_PORTABLE) && !defined(__CUDACC__)
#define RT_FA_AVX2 1
#include <immintrin.h>
#endif
#if (defined(RT_FA_AVX512) || defined(RT_FA_AVX2)) && (defined(__GNUC__) || defined(__clang__))
#define RT_FA_INLINE __attribute__((always_inline)) /* the tile's sizes become constants */
#else
#define RT_FA_INLINE
#endif

#define RT_FA_LANES 8 /* partial sums of a contiguous dot product (row path): one AVX register */
#define RT_FA_MR 6    /* query rows a K^T tile: 6 x 4 zmm accumulators, 4 vectors of K^T or V
                         and a broadcast: 29 of 32 registers */
#define RT_FA_NV 16   /* floats a vector; keys are padded to a multiple in K^T */
#define RT_FA_NB 4    /* vectors a tile's row: 64 keys (scores) or 64 outputs (P V) */
/* Floats of scratch the K^T path uses: K^T (d rows of sk keys padded to RT_FA_NV), then
 * RT_FA_MR rows of scores of the same length. */
#define RT_FA_KT_SCRATCH(sk, d) (((sk) + RT_FA_NV - 1) / RT_FA_NV * RT_FA_NV * ((d) + RT_FA_MR))

/* Shapes and element strides of the logical operands, batch and head first:
 * q (B,H,Sq,D), k (B,H,Sk,D), v (B,H,Sk,Dv), mask (B,H,Sq,Sk) (stride 0 on broadcast
 * dimensions), y (B,H,Sq,Dv). */
typedef struct RtFusedAttn {
    int64_t b, h, sq, sk, d, dv;
    int64_t q_st[4], k_st[4], v_st[4], m_st[4], y_st[4];
} RtFusedAttn;

/* Defines rt_fused_attention_SFX(p, q, k, v, mask, y, row, scale), the row path; mask may be
 * NULL; row: scratch of p->sk elements. */
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
        const T *qb = q + b * p->q_st[0] + h * p->q_st[1];                                     \
        const T *kb = k + b * p->k_st[0] + h * p->k_st[1];                                     \
        const T *vb = v + b * p->v_st[0] + h * p->v_st[1];                                     \
        T *yb = y + b * p->y_st[0] + h * p->y_st[1];                                           \
        int64_t i, j, t;                                                                       \
        for (i = i_lo; i < i_hi; i++) {                                                        \
            const T *qr = qb + i * p->q_st[2];                                                 \
            T *yr = yb + i * p->y_st[2];                                                       \
            T mx = 0, inv;                                                                     \
            for (j = 0; j < p->sk; j++) {                                                      \
                const T *kr = kb + j * p->k_st[2];                                             \
                T s = rt_fa_dot_##SFX(qr, p->q_st[3], kr, p->k_st[3], p->d) * scale;           \
                if (mask)                                                                      \
                    s += mask[b * p->m_st[0] + h * p->m_st[1] + i * p->m_st[2] +               \
                              j * p->m_st[3]];                                                 \
                row[j] = s;                                                                    \
                if (j == 0 || s > mx) mx = s;                                                  \
            }                                                                                  \
            for (j = 0; j < p->sk; j++) row[j] = EXP(row[j] - mx);                             \
            inv = 1 / rt_sum_##SFX(row, p->sk, 1);                                             \
            for (t = 0; t < p->dv; t++) yr[t * p->y_st[3]] = 0;                                \
            for (j = 0; j < p->sk; j++) {                                                      \
                const T *vr = vb + j * p->v_st[2];                                             \
                T w = row[j] * inv;                                                            \
                if (p->y_st[3] == 1 && p->v_st[3] == 1)                                        \
                    for (t = 0; t < p->dv; t++) yr[t] += w * vr[t];                            \
                else                                                                           \
                    for (t = 0; t < p->dv; t++) yr[t * p->y_st[3]] += w * vr[t * p->v_st[3]];  \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    RT_API void rt_fused_attention_##SFX(const RtFusedAttn *p, const T *q, const T *k,         \
                                         const T *v, const T *mask, T *y, T *row, T scale) {   \
        int64_t b, h;                                                                          \
        for (b = 0; b < p->b; b++)                                                             \
            for (h = 0; h < p->h; h++)                                                         \
                rt_fused_attention_rows_##SFX(p, q, k, v, mask, y, row, scale, b, h, 0, p->sq); \
    }

RT_FUSEDATTN_DEFINE(f32, float, rt_vexp_f32)
RT_FUSEDATTN_DEFINE(f64, double, exp)

/* ---- the K^T path (float) ---- */

#ifdef RT_FA_AVX512
/* One tile of rt_fa_gemm_f32: mr rows of c, nb vectors wide, the last vector's lanes masked by
 * `last` (keys or outputs past the end: not read from b, not stored). Called with constant
 * sizes (6 x 4 and the edges: 1-5 rows, 1-3 vectors), so that, inlined, its loops unroll and
 * the accumulators stay in registers. */
RT_FA_INLINE RT_API void rt_fa_tile_f32(const int mr, const int nb, int64_t kn, const float *a,
                                        int64_t a_rs, int64_t a_cs, const float *b,
                                        int64_t b_rs, float *c, int64_t c_rs, const float *mul,
                                        __mmask16 last) {
    __m512 acc[RT_FA_MR][RT_FA_NB], bv[RT_FA_NB];
    int64_t k;
    int r, u;
    for (r = 0; r < mr; r++)
        for (u = 0; u < nb; u++) acc[r][u] = _mm512_setzero_ps();
    for (k = 0; k < kn; k++) {
        const float *bk = b + k * b_rs, *ak = a + k * a_cs;
        for (u = 0; u < nb - 1; u++) bv[u] = _mm512_loadu_ps(bk + u * RT_FA_NV);
        bv[nb - 1] = _mm512_maskz_loadu_ps(last, bk + (nb - 1) * RT_FA_NV);
        for (r = 0; r < mr; r++) {
            const __m512 av = _mm512_set1_ps(ak[r * a_rs]);
            for (u = 0; u < nb; u++) acc[r][u] = _mm512_fmadd_ps(av, bv[u], acc[r][u]);
        }
    }
    for (r = 0; r < mr; r++) {
        const __m512 m = _mm512_set1_ps(mul[r]);
        for (u = 0; u < nb; u++)
            _mm512_mask_storeu_ps(c + r * c_rs + u * RT_FA_NV,
                                  u == nb - 1 ? last : (__mmask16)0xffff,
                                  _mm512_mul_ps(acc[r][u], m));
    }
}
/* dst[t * ds + j] = src[j * ss + t] for j, t < 16: a 16 x 16 block transposed in registers
 * (pairs of floats, of doubles, then 128-bit blocks twice: 64 shuffles for 256 floats). */
RT_API void rt_fa_transpose16_f32(const float *src, int64_t ss, float *dst, int64_t ds) {
    __m512 r[16], t[16];
    int i;
    for (i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(src + i * ss);
    for (i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (i = 0; i < 16; i += 4) {
        const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
        const __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    for (i = 0; i < 4; i++) { /* r[i + 4k]: column i of the 4 x 4 block of rows 4k.. */
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    }
    for (i = 0; i < 16; i++) _mm512_storeu_ps(dst + i * ds, r[i]);
}
#endif

#ifdef RT_FA_AVX2
/* The AVX2 tile of rt_fa_gemm_f32: mr rows of c, nb (1 or 2) vectors of 8 wide, the last
 * vector's first `w` lanes loaded and stored (6 x 2 ymm accumulators, 2 vectors of b and a
 * broadcast: 15 of 16 registers). */
RT_FA_INLINE RT_API void rt_fa_tile8_f32(const int mr, const int nb, int64_t kn, const float *a,
                                         int64_t a_rs, int64_t a_cs, const float *b,
                                         int64_t b_rs, float *c, int64_t c_rs, const float *mul,
                                         int w) {
    const __m256i lastm = _mm256_cmpgt_epi32(_mm256_set1_epi32(w),
                                             _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256 acc[RT_FA_MR][2], bv[2];
    int64_t k;
    int r, u;
    for (r = 0; r < mr; r++)
        for (u = 0; u < nb; u++) acc[r][u] = _mm256_setzero_ps();
    for (k = 0; k < kn; k++) {
        const float *bk = b + k * b_rs, *ak = a + k * a_cs;
        if (nb == 2) bv[0] = _mm256_loadu_ps(bk);
        bv[nb - 1] = _mm256_maskload_ps(bk + (nb - 1) * 8, lastm);
        for (r = 0; r < mr; r++) {
            const __m256 av = _mm256_broadcast_ss(ak + r * a_rs);
            for (u = 0; u < nb; u++) acc[r][u] = _mm256_fmadd_ps(av, bv[u], acc[r][u]);
        }
    }
    for (r = 0; r < mr; r++) {
        const __m256 m = _mm256_set1_ps(mul[r]);
        if (nb == 2) _mm256_storeu_ps(c + r * c_rs, _mm256_mul_ps(acc[r][0], m));
        _mm256_maskstore_ps(c + r * c_rs + (nb - 1) * 8, lastm, _mm256_mul_ps(acc[r][nb - 1], m));
    }
}
#endif

/* c[r * c_rs + j] = mul[r] * sum over k < kn of a[r * a_rs + k * a_cs] * b[k * b_rs + j], for
 * r < rows (<= RT_FA_MR), j < cols: the two products of a tile of query rows, the scores
 * (a: Q, b: K^T) and P V (a: the probabilities, b: V). b's and c's rows are contiguous. */
RT_API void rt_fa_gemm_f32(int64_t rows, int64_t cols, int64_t kn, const float *a,
                           int64_t a_rs, int64_t a_cs, const float *b, int64_t b_rs, float *c,
                           int64_t c_rs, const float *mul) {
#ifdef RT_FA_AVX512
    /* vectors of a row cut into tiles of 4, the last two evened out (5 = 3 + 2, 6 = 3 + 3,
     * 7 = 4 + 3): a 1-vector tile runs at a third of the rate (7 loads for 6 FMAs). The rows
     * past the last 6 (ViT's 197 queries leave 5) run as one tile of as many rows, not as
     * tiles of one row each: one load of b for all of them (lab, 12 heads of ViT: 0.97-0.99x
     * the time; BERT's 128 leave 2: 0.98-0.99x). A row's sums run in the same order either way */
    const int64_t nv = (cols + RT_FA_NV - 1) / RT_FA_NV;
    const __mmask16 tail = (__mmask16)((1u << (cols - (nv - 1) * RT_FA_NV)) - 1);
    int64_t r0, v0;
    for (r0 = 0; r0 < rows; r0 += rows - r0 >= RT_FA_MR ? RT_FA_MR : rows - r0) {
        const int tr = rows - r0 >= RT_FA_MR ? RT_FA_MR : (int)(rows - r0); /* rows */
        const float *ar = a + r0 * a_rs;
        float *cr = c + r0 * c_rs;
        for (v0 = 0; v0 < nv;) {
            const int64_t left = nv - v0;
            const int nb = left == 5 || left == 6 ? 3 : left > 4 ? RT_FA_NB : (int)left;
            const __mmask16 last = v0 + nb == nv ? tail : (__mmask16)0xffff;
            const float *bj = b + v0 * RT_FA_NV;
            float *cj = cr + v0 * RT_FA_NV;
#define RT_FA_TILE_CASE(NB)                                                                    \
    case NB:                                                                                   \
        if (tr == RT_FA_MR)                                                                    \
            rt_fa_tile_f32(RT_FA_MR, NB, kn, ar, a_rs, a_cs, bj, b_rs, cj, c_rs, mul + r0,      \
                           last);                                                              \
        else if (tr == 5)                                                                      \
            rt_fa_tile_f32(5, NB, kn, ar, a_rs, a_cs, bj, b_rs, cj, c_rs, mul + r0, last);      \
        else if (tr == 4)                                                                      \
            rt_fa_tile_f32(4, NB, kn, ar, a_rs, a_cs, bj, b_rs, cj, c_rs, mul + r0, last);      \
        else if (tr == 3)                                                                      \
            rt_fa_tile_f32(3, NB, kn, ar, a_rs, a_cs, bj, b_rs, cj, c_rs, mul + r0, last);      \
        else if (tr == 2)                                                                      \
            rt_fa_tile_f32(2, NB, kn, ar, a_rs, a_cs, bj, b_rs, cj, c_rs, mul + r0, last);      \
        else                                                                                   \
            rt_fa_tile_f32(1, NB, kn, ar, a_rs, a_cs, bj, b_rs, cj, c_rs, mul + r0, last);      \
        break;
            switch (nb) {
                RT_FA_TILE_CASE(1)
                RT_FA_TILE_CASE(2)
                RT_FA_TILE_CASE(3)
                default:
                RT_FA_TILE_CASE(4)
            }
#undef RT_FA_TILE_CASE
            v0 += nb;
        }
    }
#elif defined(RT_FA_AVX2)
    int64_t r0, j0;
    for (r0 = 0; r0 < rows; r0 += rows - r0 >= RT_FA_MR ? RT_FA_MR : 1) {
        const int full = rows - r0 >= RT_FA_MR;
        const float *ar = a + r0 * a_rs;
        float *cr = c + r0 * c_rs;
        for (j0 = 0; j0 < cols; j0 += 16) {
            const int64_t left = cols - j0;
            const int w = (int)(left > 16 ? 8 : left > 8 ? left - 8 : left);
            if (left > 8 && full)
                rt_fa_tile8_f32(RT_FA_MR, 2, kn, ar, a_rs, a_cs, b + j0, b_rs, cr + j0, c_rs,
                                mul + r0, w);
            else if (left > 8)
                rt_fa_tile8_f32(1, 2, kn, ar, a_rs, a_cs, b + j0, b_rs, cr + j0, c_rs, mul + r0,
                                w);
            else if (full)
                rt_fa_tile8_f32(RT_FA_MR, 1, kn, ar, a_rs, a_cs, b + j0, b_rs, cr + j0, c_rs,
                                mul + r0, w);
            else
                rt_fa_tile8_f32(1, 1, kn, ar, a_rs, a_cs, b + j0, b_rs, cr + j0, c_rs, mul + r0,
                                w);
        }
    }
#else
    /* i-k-j over a tile of RT_FA_NB * RT_FA_NV columns: the inner loop vectorizes */
    float acc[RT_FA_MR][RT_FA_NB * RT_FA_NV];
    int64_t j0, k, r, j;
    for (j0 = 0; j0 < cols; j0 += RT_FA_NB * RT_FA_NV) {
        const int64_t w = cols - j0 < RT_FA_NB * RT_FA_NV ? cols - j0 : RT_FA_NB * RT_FA_NV;
        for (r = 0; r < rows; r++)
            for (j = 0; j < w; j++) acc[r][j] = 0;
        for (k = 0; k < kn; k++) {
            const float *bk = b + k * b_rs + j0;
            for (r = 0; r < rows; r++) {
                const float av = a[r * a_rs + k * a_cs];
                float *ar = acc[r];
                for (j = 0; j < w; j++) ar[j] += av * bk[j];
            }
        }
        for (r = 0; r < rows; r++)
            for (j = 0; j < w; j++) c[r * c_rs + j0 + j] = acc[r][j] * mul[r];
    }
#endif
}

#ifdef RT_FA_AVX512
/* rt_softmax_row_f32 on a score row of the K^T path, s[0..sk) in place, returning the sum:
 * the row runs on to skp (sk rounded up to 16: K^T's padding, scores never read), so the
 * exp loop takes whole vectors (ViT's 197 keys left 5 to scalar exps a row) and the max and
 * the sum mask the last vector in registers instead of a scalar tail through rt_sum_add.
 * The sum as rt_softmax_row_f32's: 16 lanes over blocks of RT_SM_SUM_BLOCK values, each
 * block's lanes added pairwise (8 + 8, 4 + 4, ...) and closed into an rt_sum as one of its
 * blocks, so that rt_sum's error bound holds. Past sk the row holds exps of scores that no
 * one reads (possibly inf: no trap). */
RT_API float rt_fa_softmax_row_f32(float *s, int64_t sk, int64_t skp) {
    const int64_t m = sk - 1 - (sk - 1) % RT_FA_NV; /* the last vector: [m, sk), 1-16 keys */
    const __mmask16 tail = (__mmask16)((1u << (sk - m)) - 1u);
    __m512 acc = _mm512_mask_loadu_ps(_mm512_set1_ps(s[0]), tail, s + m);
    float mx;
    int64_t j, j0;
    RtSumf32 sum;
    for (j = 0; j < m; j += RT_FA_NV) acc = _mm512_max_ps(acc, _mm512_loadu_ps(s + j));
    mx = _mm512_reduce_max_ps(acc);
    for (j = 0; j < skp; j++) s[j] = rt_vexp_f32(s[j] - mx);
    rt_sum_init_f32(&sum);
    for (j0 = 0; j0 < sk; j0 += RT_SM_SUM_BLOCK) {
        const int64_t e = sk - j0 < RT_SM_SUM_BLOCK ? sk : j0 + RT_SM_SUM_BLOCK;
        acc = _mm512_setzero_ps();
        for (j = j0; j + RT_FA_NV <= e; j += RT_FA_NV)
            acc = _mm512_add_ps(acc, _mm512_loadu_ps(s + j));
        if (j < e)
            acc = _mm512_add_ps(
                acc, _mm512_maskz_loadu_ps((__mmask16)((1u << (e - j)) - 1u), s + j));
        sum.part = _mm512_reduce_add_ps(acc); /* pairwise: lanes i + 8, then i + 4, ... */
        sum.n_part = RT_SUM_BLOCK;
        rt_sum_close_f32(&sum);
    }
    return rt_sum_total_f32(&sum);
}
#endif

/* Query rows [i_lo, i_hi) of batch b, head h through K^T; ws: RT_FA_KT_SCRATCH(p->sk, p->d)
 * floats. A V or Y whose last dimension is strided goes the row path (ws holds its row). */
RT_API void rt_fused_attention_kt_rows_f32(const RtFusedAttn *p, const float *q, const float *k,
                                           const float *v, const float *mask, float *y,
                                           float *ws, float scale, int64_t b, int64_t h,
                                           int64_t i_lo, int64_t i_hi) {
    const int64_t sk = p->sk, d = p->d, skp = (sk + RT_FA_NV - 1) / RT_FA_NV * RT_FA_NV;
    const float *qb = q + b * p->q_st[0] + h * p->q_st[1];
    const float *kb = k + b * p->k_st[0] + h * p->k_st[1];
    const float *vb = v + b * p->v_st[0] + h * p->v_st[1];
    const float *mb = mask ? mask + b * p->m_st[0] + h * p->m_st[1] : (const float *)0;
    float *yb = y + b * p->y_st[0] + h * p->y_st[1];
    float *kt = ws, *sc = ws + d * skp; /* K^T (d, skp), scores (RT_FA_MR, skp) */
    float scl[RT_FA_MR], inv[RT_FA_MR];
    int64_t i0, j, t, r;
    if (p->v_st[3] != 1 || p->y_st[3] != 1) {
        rt_fused_attention_rows_f32(p, q, k, v, mask, y, ws, scale, b, h, i_lo, i_hi);
        return;
    }
    j = 0;
#ifdef RT_FA_AVX512
    if (p->k_st[3] == 1) /* 16 x 16 blocks in registers; the scalar loops do the edges */
        for (; j + 16 <= sk; j += 16) {
            for (t = 0; t + 16 <= d; t += 16)
                rt_fa_transpose16_f32(kb + j * p->k_st[2] + t, p->k_st[2], kt + t * skp + j, skp);
            for (; t < d; t++)
                for (r = 0; r < 16; r++) kt[t * skp + j + r] = kb[(j + r) * p->k_st[2] + t];
        }
#endif
    for (; j < sk; j++) {
        const float *kr = kb + j * p->k_st[2];
        for (t = 0; t < d; t++) kt[t * skp + j] = kr[t * p->k_st[3]];
    }
    for (t = 0; t < d; t++) /* the padding's scores are computed and never read */
        for (j = sk; j < skp; j++) kt[t * skp + j] = 0;
    for (r = 0; r < RT_FA_MR; r++) scl[r] = scale;
    for (i0 = i_lo; i0 < i_hi; i0 += RT_FA_MR) {
        const int64_t rows = i_hi - i0 < RT_FA_MR ? i_hi - i0 : RT_FA_MR;
        rt_fa_gemm_f32(rows, skp, d, qb + i0 * p->q_st[2], p->q_st[2], p->q_st[3], kt, skp, sc,
                       skp, scl);
        for (r = 0; r < rows; r++) {
            float *s = sc + r * skp;
            if (mb) {
                const float *mr = mb + (i0 + r) * p->m_st[2];
                const int64_t ms = p->m_st[3];
                if (ms == 1)
                    for (j = 0; j < sk; j++) s[j] += mr[j];
                else
                    for (j = 0; j < sk; j++) s[j] += mr[j * ms];
            }
#ifdef RT_FA_AVX512
            inv[r] = 1 / rt_fa_softmax_row_f32(s, sk, skp);
#else
            inv[r] = 1 / rt_softmax_row_f32(s, s, sk);
#endif
        }
        rt_fa_gemm_f32(rows, p->dv, sk, sc, skp, 1, vb, p->v_st[2], yb + i0 * p->y_st[2],
                       p->y_st[2], inv);
    }
}

/* rt_fused_attention_f32 through K^T; ws: RT_FA_KT_SCRATCH(p->sk, p->d) floats. */
RT_API void rt_fused_attention_kt_f32(const RtFusedAttn *p, const float *q, const float *k,
                                      const float *v, const float *mask, float *y, float *ws,
                                      float scale) {
    int64_t b, h;
    for (b = 0; b < p->b; b++)
        for (h = 0; h < p->h; h++)
            rt_fused_attention_kt_rows_f32(p, q, k, v, mask, y, ws, scale, b, h, 0, p->sq);
}

/* Defines rt_fused_attention_par_SFX: ROWS (the row path for double, K^T for float) over
 * par's workers, tasks of (batch, head, chunk of query rows); each worker's scratch is its
 * own (the row path: p->sk elements of T; K^T: RT_FA_KT_SCRATCH(p->sk, p->d) floats). */
#define RT_FUSEDATTN_PAR_DEFINE(SFX, T, ROWS)                                                  \
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
        ROWS(a->p, a->q, a->k, a->v, a->mask, a->y, (T *)rt_par_scratch(a->par, worker),       \
             a->scale, bh / a->p->h, bh % a->p->h, i_lo, i_hi);                                \
    }                                                                                          \
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

RT_FUSEDATTN_PAR_DEFINE(f32, float, rt_fused_attention_kt_rows_f32)
RT_FUSEDATTN_PAR_DEFINE(f64, double, rt_fused_attention_rows_f64)

#endif
