/* rt_norm.h: the normalizations. BatchNormalization (inference, and training mode with the
 * running statistics), InstanceNormalization, GroupNormalization, LayerNormalization (with
 * the Mean/InvStdDev outputs), RMSNormalization, LRN, LpNormalization and
 * MeanVarianceNormalization. Statistics are two-pass (mean, then squared deviations) in the
 * accumulator type: float for float/float16/bfloat16, double for double, each sum through
 * rt_sum.h so that its error does not grow with the number of elements normalized. C99. */
#ifndef KILN_RT_NORM_H
#define KILN_RT_NORM_H

#include "rt_common.h"
#include "rt_par.h"
#include "rt_sum.h"

#define RT_NORM_MAX_RANK RT_MAX_RANK

#define RT_NORM_DEFINE(SFX, T, ACC, ASFX, LOAD, STORE, SQRT, POW, FABS)                       \
    /* Mean and (biased) variance of n elements x[0], x[step], ... */                         \
    RT_API void rt_norm_stats_##SFX(const T *x, int64_t n, int64_t step, ACC *mean,           \
                                    ACC *var) {                                               \
        RtSum##ASFX sum, sq;                                                                  \
        ACC mu;                                                                               \
        int64_t i;                                                                            \
        rt_sum_init_##ASFX(&sum);                                                             \
        rt_sum_init_##ASFX(&sq);                                                              \
        for (i = 0; i < n; i++) rt_sum_add_##ASFX(&sum, LOAD(x[i * step]));                   \
        mu = n > 0 ? rt_sum_total_##ASFX(&sum) / (ACC)n : (ACC)0;                             \
        for (i = 0; i < n; i++) {                                                             \
            const ACC dv = LOAD(x[i * step]) - mu;                                            \
            rt_sum_add_##ASFX(&sq, dv * dv);                                                  \
        }                                                                                     \
        *mean = mu;                                                                           \
        *var = n > 0 ? rt_sum_total_##ASFX(&sq) / (ACC)n : (ACC)0;                            \
    }                                                                                         \
                                                                                              \
    /* x, y: (N,C,S); scale, bias, mean, var: (C) */                                          \
    RT_API void rt_batchnorm_##SFX(const T *x, const T *scale, const T *bias, const T *mean,  \
                                   const T *var, T *y, int64_t n, int64_t c, int64_t s,       \
                                   ACC eps) {                                                 \
        int64_t b, ch, i;                                                                     \
        for (b = 0; b < n; b++)                                                               \
            for (ch = 0; ch < c; ch++) {                                                      \
                const ACC k = LOAD(scale[ch]) / SQRT(LOAD(var[ch]) + eps);                    \
                const ACC off = LOAD(bias[ch]) - LOAD(mean[ch]) * k;                          \
                const T *xp = x + (b * c + ch) * s;                                           \
                T *yp = y + (b * c + ch) * s;                                                 \
                for (i = 0; i < s; i++) yp[i] = STORE(LOAD(xp[i]) * k + off);                 \
            }                                                                                 \
    }                                                                                         \
                                                                                              \
    /* Training mode: normalizes with the batch statistics over (N,S) and writes the          \
     * running ones (either may be NULL). x, y: (N,C,S); the rest: (C) */                     \
    RT_API void rt_batchnorm_train_##SFX(const T *x, const T *scale, const T *bias,           \
                                         const T *in_mean, const T *in_var, T *y,             \
                                         T *run_mean, T *run_var, int64_t n, int64_t c,       \
                                         int64_t s, ACC eps, ACC momentum) {                  \
        int64_t b, ch, i;                                                                     \
        for (ch = 0; ch < c; ch++) {                                                          \
            RtSum##ASFX sum, sq;                                                              \
            ACC mu, var, k, off;                                                              \
            const int64_t cnt = n * s;                                                        \
            rt_sum_init_##ASFX(&sum);                                                         \
            rt_sum_init_##ASFX(&sq);                                                          \
            for (b = 0; b < n; b++)                                                           \
                for (i = 0; i < s; i++) rt_sum_add_##ASFX(&sum, LOAD(x[(b * c + ch) * s + i])); \
            mu = cnt > 0 ? rt_sum_total_##ASFX(&sum) / (ACC)cnt : (ACC)0;                     \
            for (b = 0; b < n; b++)                                                           \
                for (i = 0; i < s; i++) {                                                     \
                    const ACC dv = LOAD(x[(b * c + ch) * s + i]) - mu;                        \
                    rt_sum_add_##ASFX(&sq, dv * dv);                                          \
                }                                                                             \
            var = cnt > 0 ? rt_sum_total_##ASFX(&sq) / (ACC)cnt : (ACC)0;                     \
            k = LOAD(scale[ch]) / SQRT(var + eps);                                            \
            off = LOAD(bias[ch]) - mu * k;                                                    \
            for (b = 0; b < n; b++)                                                           \
                for (i = 0; i < s; i++)                                                       \
                    y[(b * c + ch) * s + i] = STORE(LOAD(x[(b * c + ch) * s + i]) * k + off); \
            if (run_mean)                                                                     \
                run_mean[ch] = STORE(LOAD(in_mean[ch]) * momentum + mu * (1 - momentum));     \
            if (run_var)                                                                      \
                run_var[ch] = STORE(LOAD(in_var[ch]) * momentum + var * (1 - momentum));      \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* x, y: (N,C,S); scale, bias: (C) */                                                     \
    RT_API void rt_instancenorm_##SFX(const T *x, const T *scale, const T *bias, T *y,        \
                                      int64_t n, int64_t c, int64_t s, ACC eps) {             \
        int64_t e, i;                                                                         \
        RT_FOR_EACH(e, n * c) { /* one (image, channel) plane */                              \
            const int64_t ch = e % c;                                                         \
            const T *xp = x + e * s;                                                          \
            T *yp = y + e * s;                                                                \
            ACC mu, var, k, off;                                                              \
            rt_norm_stats_##SFX(xp, s, 1, &mu, &var);                                         \
            k = LOAD(scale[ch]) / SQRT(var + eps);                                            \
            off = LOAD(bias[ch]) - mu * k;                                                    \
            for (i = 0; i < s; i++) yp[i] = STORE(LOAD(xp[i]) * k + off);                     \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* x, y: (N,C,S), statistics per (N, group of C/groups channels); scale, bias: (C) when   \
     * per_channel, else (groups) */                                                          \
    RT_API void rt_groupnorm_##SFX(const T *x, const T *scale, const T *bias, T *y,           \
                                   int64_t n, int64_t c, int64_t s, int64_t groups,           \
                                   int per_channel, ACC eps) {                                \
        const int64_t cpg = c / groups;                                                       \
        int64_t e, ch, i;                                                                     \
        RT_FOR_EACH(e, n * groups) { /* one (image, group) block */                           \
            const int64_t b = e / groups, gr = e % groups;                                    \
            const T *xp = x + (b * c + gr * cpg) * s;                                         \
            T *yp = y + (b * c + gr * cpg) * s;                                               \
            ACC mu, var, inv;                                                                 \
            rt_norm_stats_##SFX(xp, cpg * s, 1, &mu, &var);                                   \
            inv = 1 / SQRT(var + eps);                                                        \
            for (ch = 0; ch < cpg; ch++) {                                                    \
                const int64_t pi = per_channel ? gr * cpg + ch : gr;                          \
                const ACC k = LOAD(scale[pi]) * inv;                                          \
                const ACC off = LOAD(bias[pi]) - mu * k;                                      \
                for (i = 0; i < s; i++)                                                       \
                    yp[ch * s + i] = STORE(LOAD(xp[ch * s + i]) * k + off);                   \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* x, y: (rows,cols); scale: (cols) (scale_step 1) or (1) (0) */                          \
    RT_API void rt_rmsnorm_##SFX(const T *x, const T *scale, T *y, int64_t rows,              \
                                 int64_t cols, int64_t scale_step, ACC eps) {                 \
        int64_t r, j;                                                                         \
        RT_FOR_EACH(r, rows) {                                                                \
            const T *xp = x + r * cols;                                                       \
            T *yp = y + r * cols;                                                             \
            RtSum##ASFX sq;                                                                   \
            ACC inv;                                                                          \
            rt_sum_init_##ASFX(&sq);                                                          \
            for (j = 0; j < cols; j++) rt_sum_add_##ASFX(&sq, LOAD(xp[j]) * LOAD(xp[j]));     \
            inv = 1 / SQRT(rt_sum_total_##ASFX(&sq) / (ACC)(cols > 0 ? cols : 1) + eps);      \
            for (j = 0; j < cols; j++)                                                        \
                yp[j] = STORE(LOAD(xp[j]) * inv * LOAD(scale[j * scale_step]));               \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* x, y: (N,C,S); sums squares over channels [c - (size-1)/2, c + size/2] */              \
    RT_API void rt_lrn_##SFX(const T *x, T *y, int64_t n, int64_t c, int64_t s, int64_t size, \
                             ACC alpha, ACC beta, ACC bias) {                                 \
        const int64_t before = (size - 1) / 2, after = size - 1 - before;                     \
        int64_t e, cc, i;                                                                     \
        RT_FOR_EACH(e, n * c) { /* one (image, channel) plane */                              \
            const int64_t b = e / c, ch = e % c;                                              \
            const int64_t lo = ch - before < 0 ? 0 : ch - before;                             \
            const int64_t hi = ch + after >= c ? c - 1 : ch + after;                          \
            for (i = 0; i < s; i++) {                                                         \
                ACC sq = 0;                                                                   \
                for (cc = lo; cc <= hi; cc++) {                                               \
                    const ACC v = LOAD(x[(b * c + cc) * s + i]);                              \
                    sq += v * v;                                                              \
                }                                                                             \
                y[(b * c + ch) * s + i] = STORE(LOAD(x[(b * c + ch) * s + i]) /               \
                                                POW(bias + alpha / (ACC)size * sq, beta));    \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* x, y: (outer,len,inner); y = x / ||x||_p along len (p is 1 or 2); 0 where the norm     \
     * is 0 */                                                                                \
    RT_API void rt_lpnorm_##SFX(const T *x, T *y, int64_t outer, int64_t len, int64_t inner,  \
                                int64_t p) {                                                  \
        int64_t o, in, j;                                                                     \
        for (o = 0; o < outer; o++)                                                           \
            for (in = 0; in < inner; in++) {                                                  \
                const T *xp = x + o * len * inner + in;                                       \
                T *yp = y + o * len * inner + in;                                             \
                RtSum##ASFX acc;                                                              \
                ACC norm;                                                                     \
                rt_sum_init_##ASFX(&acc);                                                     \
                for (j = 0; j < len; j++) {                                                   \
                    const ACC v = LOAD(xp[j * inner]);                                        \
                    rt_sum_add_##ASFX(&acc, p == 1 ? FABS(v) : v * v);                        \
                }                                                                             \
                norm = rt_sum_total_##ASFX(&acc);                                             \
                if (p != 1) norm = SQRT(norm);                                                \
                for (j = 0; j < len; j++)                                                     \
                    yp[j * inner] = STORE(norm == 0 ? (ACC)0 : LOAD(xp[j * inner]) / norm);   \
            }                                                                                 \
    }                                                                                         \
                                                                                              \
    /* x, y: dims (rank <= RT_NORM_MAX_RANK); normalizes over the axes whose bit is set in    \
     * axes_mask: y = (x - mean) / (sqrt(mean(x^2) - mean^2) + eps) */                        \
    RT_API void rt_mvn_##SFX(const T *x, T *y, int rank, const int64_t *dims,                 \
                             unsigned axes_mask, ACC eps) {                                   \
        int64_t stride[RT_NORM_MAX_RANK], kd[RT_NORM_MAX_RANK], ks[RT_NORM_MAX_RANK];         \
        int64_t rd[RT_NORM_MAX_RANK], rs[RT_NORM_MAX_RANK], n_keep = 1, n_red = 1, gi, ri;    \
        int a, nk = 0, nr = 0;                                                                \
        for (a = rank - 1; a >= 0; a--)                                                       \
            stride[a] = a == rank - 1 ? 1 : stride[a + 1] * dims[a + 1];                      \
        for (a = 0; a < rank; a++) {                                                          \
            if (axes_mask & (1u << a)) {                                                      \
                rd[nr] = dims[a], rs[nr++] = stride[a], n_red *= dims[a];                     \
            } else {                                                                          \
                kd[nk] = dims[a], ks[nk++] = stride[a], n_keep *= dims[a];                    \
            }                                                                                 \
        }                                                                                     \
        for (gi = 0; gi < n_keep; gi++) {                                                     \
            int64_t base = 0, rem = gi;                                                       \
            RtSum##ASFX sum, sq;                                                              \
            ACC mu, sd;                                                                       \
            rt_sum_init_##ASFX(&sum);                                                         \
            rt_sum_init_##ASFX(&sq);                                                          \
            for (a = nk - 1; a >= 0; a--) base += (rem % kd[a]) * ks[a], rem /= kd[a];        \
            for (ri = 0; ri < n_red; ri++) {                                                  \
                int64_t off = base, r2 = ri;                                                  \
                ACC v;                                                                        \
                for (a = nr - 1; a >= 0; a--) off += (r2 % rd[a]) * rs[a], r2 /= rd[a];       \
                v = LOAD(x[off]);                                                             \
                rt_sum_add_##ASFX(&sum, v);                                                   \
                rt_sum_add_##ASFX(&sq, v * v);                                                \
            }                                                                                 \
            mu = rt_sum_total_##ASFX(&sum) / (ACC)n_red;                                      \
            sd = rt_sum_total_##ASFX(&sq) / (ACC)n_red - mu * mu;                             \
            sd = SQRT(sd > 0 ? sd : (ACC)0) + eps;                                            \
            for (ri = 0; ri < n_red; ri++) {                                                  \
                int64_t off = base, r2 = ri;                                                  \
                for (a = nr - 1; a >= 0; a--) off += (r2 % rd[a]) * rs[a], r2 /= rd[a];       \
                y[off] = STORE((LOAD(x[off]) - mu) / sd);                                     \
            }                                                                                 \
        }                                                                                     \
    }

/* Defines rt_layernorm_SFX: x, y: (rows,cols); scale: (cols) (scale_step 1) or (1) (0); bias
 * likewise or NULL; mean, inv_std: (rows) or NULL. */
#define RT_LAYERNORM_DEFINE(SFX, T, ACC, STATS, LOAD, STORE, SQRT)                              \
    RT_API void rt_layernorm_##SFX(const T *x, const T *scale, const T *bias, T *y,           \
                                   float *mean, float *inv_std, int64_t rows, int64_t cols,   \
                                   int64_t scale_step, int64_t bias_step, ACC eps) {          \
        int64_t r, j;                                                                         \
        for (r = 0; r < rows; r++) {                                                          \
            const T *xp = x + r * cols;                                                       \
            T *yp = y + r * cols;                                                             \
            ACC mu, var, inv;                                                                 \
            STATS(xp, cols, 1, &mu, &var);                                                    \
            inv = 1 / SQRT(var + eps);                                                        \
            for (j = 0; j < cols; j++) {                                                      \
                ACC v = (LOAD(xp[j]) - mu) * inv * LOAD(scale[j * scale_step]);               \
                if (bias) v += LOAD(bias[j * bias_step]);                                     \
                yp[j] = STORE(v);                                                             \
            }                                                                                 \
            if (mean) mean[r] = (float)mu;                                                    \
            if (inv_std) inv_std[r] = (float)inv;                                             \
        }                                                                                     \
    }

#define RT_NORM_ID(v) (v)
RT_NORM_DEFINE(f32, float, float, f32, RT_NORM_ID, RT_NORM_ID, sqrtf, powf, fabsf)
RT_NORM_DEFINE(f64, double, double, f64, RT_NORM_ID, RT_NORM_ID, sqrt, pow, fabs)
RT_NORM_DEFINE(f16, uint16_t, float, f32, rt_f16_to_f32, rt_f32_to_f16, sqrtf, powf, fabsf)
RT_NORM_DEFINE(bf16, uint16_t, float, f32, rt_bf16_to_f32, rt_f32_to_bf16, sqrtf, powf, fabsf)
RT_LAYERNORM_DEFINE(f32_ref, float, float, rt_norm_stats_f32, RT_NORM_ID, RT_NORM_ID, sqrtf)
RT_LAYERNORM_DEFINE(f64, double, double, rt_norm_stats_f64, RT_NORM_ID, RT_NORM_ID, sqrt)
RT_LAYERNORM_DEFINE(f16, uint16_t, float, rt_norm_stats_f16, rt_f16_to_f32, rt_f32_to_f16, sqrtf)
RT_LAYERNORM_DEFINE(bf16, uint16_t, float, rt_norm_stats_bf16, rt_bf16_to_f32, rt_f32_to_bf16,
                    sqrtf)

/* LayerNormalization of float: the reference loops above (rt_layernorm_f32_ref), and where the
 * compiler targets AVX-512 (or AVX2+FMA: the same 16 lanes as two ymm) and scale and bias run
 * along the row (the models' form), a row in vector registers: the mean and the squared
 * deviations summed in 16 lanes over blocks of 512 values (32 a lane, then 8 + 8, 4 + 4, ...:
 * rt_sum's block of 32 and 4 of its pairwise levels), each block closed into an rt_sum as one
 * of its blocks, so that the error keeps rt_sum's bound (GCC leaves the reference's sums
 * scalar: ~1.3 ns a value, a 768-wide row 1 us). */
#if (defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))) &&                      \
    !defined(RT_NORM_PORTABLE) && !defined(__CUDACC__)
/* One block's 16 lane sums folded (8 + 8, 4 + 4, ...) and closed into s as one of its blocks. */
RT_API void rt_norm_close16_f32(RtSumf32 *s, float lane[16]) {
    int l, i;
    for (l = 8; l > 0; l /= 2)
        for (i = 0; i < l; i++) lane[i] += lane[i + l];
    s->part = lane[0]; /* one closed block of rt_sum */
    s->n_part = RT_SUM_BLOCK;
    rt_sum_close_f32(s);
}

/* The values past the last whole 16 (m..n) added one at a time; s's total. */
RT_API float rt_norm_finish16_f32(RtSumf32 *s, const float *x, int64_t m, int64_t n, float mu,
                                  int sq) {
    int64_t j;
    for (j = m; j < n; j++) rt_sum_add_f32(s, sq ? (x[j] - mu) * (x[j] - mu) : x[j]);
    return rt_sum_total_f32(s);
}

RT_API float rt_norm_sum16_f32(const float *x, int64_t n, float mu, int sq);

/* A row's mean and 1 / sqrt(variance + eps) through rt_norm_sum16_f32. */
RT_API void rt_norm_row16_f32(const float *xp, int64_t cols, float eps, float *mu, float *inv) {
    const float m = rt_norm_sum16_f32(xp, cols, 0.0f, 0) / (float)cols;
    const float var = rt_norm_sum16_f32(xp, cols, m, 1) / (float)cols;
    *mu = m;
    *inv = 1 / sqrtf(var + eps);
}
#endif

#if defined(__AVX512F__) && !defined(RT_NORM_PORTABLE) && !defined(__CUDACC__)
#include <immintrin.h>
/* The sum of x[0..n), or of (x - mu)^2 when sq. */
RT_API float rt_norm_sum16_f32(const float *x, int64_t n, float mu, int sq) {
    const int64_t m = n - n % 16;
    const __m512 vmu = _mm512_set1_ps(mu);
    float lane[16];
    int64_t j0, j;
    RtSumf32 s;
    rt_sum_init_f32(&s);
    for (j0 = 0; j0 < m; j0 += 512) {
        const int64_t e = m - j0 < 512 ? m : j0 + 512;
        __m512 acc = _mm512_setzero_ps();
        for (j = j0; j < e; j += 16) {
            __m512 v = _mm512_loadu_ps(x + j);
            if (sq) {
                v = _mm512_sub_ps(v, vmu);
                v = _mm512_mul_ps(v, v);
            }
            acc = _mm512_add_ps(acc, v);
        }
        _mm512_storeu_ps(lane, acc);
        rt_norm_close16_f32(&s, lane);
    }
    return rt_norm_finish16_f32(&s, x, m, n, mu, sq);
}
RT_API void rt_layernorm_f32(const float *x, const float *scale, const float *bias, float *y,
                             float *mean, float *inv_std, int64_t rows, int64_t cols,
                             int64_t scale_step, int64_t bias_step, float eps) {
    const __mmask16 tail = (__mmask16)((1u << (cols % 16)) - 1);
    const int64_t m = cols - cols % 16;
    int64_t r, j;
    if (scale_step != 1 || (bias && bias_step != 1) || cols < 1) {
        rt_layernorm_f32_ref(x, scale, bias, y, mean, inv_std, rows, cols, scale_step,
                             bias_step, eps);
        return;
    }
    for (r = 0; r < rows; r++) {
        const float *xp = x + r * cols;
        float *yp = y + r * cols;
        float mu, inv;
        rt_norm_row16_f32(xp, cols, eps, &mu, &inv);
        const __m512 vmu = _mm512_set1_ps(mu), vinv = _mm512_set1_ps(inv);
        for (j = 0; j <= m; j += 16) {
            const __mmask16 k = j < m ? (__mmask16)0xffff : tail;
            __m512 v = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, xp + j), vmu), vinv);
            v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(k, scale + j));
            if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, bias + j));
            _mm512_mask_storeu_ps(yp + j, k, v);
        }
        if (mean) mean[r] = mu;
        if (inv_std) inv_std[r] = inv;
    }
}
#elif defined(__AVX2__) && defined(__FMA__) && !defined(RT_NORM_PORTABLE) && !defined(__CUDACC__)
#include <immintrin.h>
/* As the AVX-512 form, 16 lanes as two ymm (the same lanes, the same order). */
RT_API float rt_norm_sum16_f32(const float *x, int64_t n, float mu, int sq) {
    const int64_t m = n - n % 16;
    const __m256 vmu = _mm256_set1_ps(mu);
    float lane[16];
    int64_t j0, j;
    RtSumf32 s;
    rt_sum_init_f32(&s);
    for (j0 = 0; j0 < m; j0 += 512) {
        const int64_t e = m - j0 < 512 ? m : j0 + 512;
        __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
        for (j = j0; j < e; j += 16) {
            __m256 a = _mm256_loadu_ps(x + j), b = _mm256_loadu_ps(x + j + 8);
            if (sq) {
                a = _mm256_sub_ps(a, vmu);
                b = _mm256_sub_ps(b, vmu);
                a = _mm256_mul_ps(a, a);
                b = _mm256_mul_ps(b, b);
            }
            lo = _mm256_add_ps(lo, a);
            hi = _mm256_add_ps(hi, b);
        }
        _mm256_storeu_ps(lane, lo);
        _mm256_storeu_ps(lane + 8, hi);
        rt_norm_close16_f32(&s, lane);
    }
    return rt_norm_finish16_f32(&s, x, m, n, mu, sq);
}
RT_API void rt_layernorm_f32(const float *x, const float *scale, const float *bias, float *y,
                             float *mean, float *inv_std, int64_t rows, int64_t cols,
                             int64_t scale_step, int64_t bias_step, float eps) {
    const int64_t m = cols - cols % 8;
    int64_t r, j;
    if (scale_step != 1 || (bias && bias_step != 1) || cols < 1) {
        rt_layernorm_f32_ref(x, scale, bias, y, mean, inv_std, rows, cols, scale_step,
                             bias_step, eps);
        return;
    }
    for (r = 0; r < rows; r++) {
        const float *xp = x + r * cols;
        float *yp = y + r * cols;
        float mu, inv;
        rt_norm_row16_f32(xp, cols, eps, &mu, &inv);
        const __m256 vmu = _mm256_set1_ps(mu), vinv = _mm256_set1_ps(inv);
        for (j = 0; j < m; j += 8) {
            __m256 v = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xp + j), vmu), vinv);
            v = _mm256_mul_ps(v, _mm256_loadu_ps(scale + j));
            if (bias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + j));
            _mm256_storeu_ps(yp + j, v);
        }
        for (; j < cols; j++) {
            float v = (xp[j] - mu) * inv * scale[j];
            yp[j] = bias ? v + bias[j] : v;
        }
        if (mean) mean[r] = mu;
        if (inv_std) inv_std[r] = inv;
    }
}
#else
RT_API void rt_layernorm_f32(const float *x, const float *scale, const float *bias, float *y,
                             float *mean, float *inv_std, int64_t rows, int64_t cols,
                             int64_t scale_step, int64_t bias_step, float eps) {
    rt_layernorm_f32_ref(x, scale, bias, y, mean, inv_std, rows, cols, scale_step, bias_step,
                         eps);
}
#endif

/* rt_layernorm_f32 with its rows shared among par's workers (rt_par.h; NULL: serial): a task
 * normalizes whole rows, each as the serial call does, so no statistic is split. The rows are
 * BERT's tokens (128 x 768: ~0.1 ms a call on one core, 25 calls a run). */
typedef struct RtLayernormTask {
    const float *x, *scale, *bias;
    float *y, *mean, *inv_std;
    int64_t rows, cols, scale_step, bias_step, per; /* per: rows a task */
    float eps;
} RtLayernormTask;

RT_API void rt_layernorm_task_f32(void *arg, int64_t task, int worker) {
    const RtLayernormTask *t = (const RtLayernormTask *)arg;
    const int64_t r0 = task * t->per, r1 = r0 + t->per < t->rows ? r0 + t->per : t->rows;
    (void)worker;
    rt_layernorm_f32(t->x + r0 * t->cols, t->scale, t->bias, t->y + r0 * t->cols,
                     t->mean ? t->mean + r0 : NULL, t->inv_std ? t->inv_std + r0 : NULL, r1 - r0,
                     t->cols, t->scale_step, t->bias_step, t->eps);
}

RT_API void rt_layernorm_par_f32(const float *x, const float *scale, const float *bias, float *y,
                                 float *mean, float *inv_std, int64_t rows, int64_t cols,
                                 int64_t scale_step, int64_t bias_step, float eps,
                                 const RtPar *par) {
    const int64_t n = rt_par_chunks(par, rows, 1);
    RtLayernormTask t;
    if (rows <= 0) return;
    t.x = x;
    t.scale = scale;
    t.bias = bias;
    t.y = y;
    t.mean = mean;
    t.inv_std = inv_std;
    t.rows = rows;
    t.cols = cols;
    t.scale_step = scale_step;
    t.bias_step = bias_step;
    t.per = (rows + n - 1) / n;
    t.eps = eps;
    rt_par_run(par, (rows + t.per - 1) / t.per, rt_layernorm_task_f32, &t);
}

#undef RT_NORM_ID
#undef RT_NORM_DEFINE
#undef RT_LAYERNORM_DEFINE

#endif
