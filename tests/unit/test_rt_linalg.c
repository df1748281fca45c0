/* Unit tests of the linalg and reduction runtime kernels (rt_matmul.h, rt_softmax.h,
 * rt_reduce.h, rt_scan.h, rt_topk.h, rt_loss.h, rt_attention.h): each kernel runs on fresh random inputs against a
 * naive reference loop written here, with outputs poisoned before the run. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "runtime/rt_attention.h"
#include "runtime/rt_loss.h"
#include "runtime/rt_matmul.h"
#include "runtime/rt_reduce.h"
#include "runtime/rt_scan.h"
#include "runtime/rt_softmax.h"
#include "runtime/rt_topk.h"

#define POISON_F32 NAN
#define TOL 1e-4

static unsigned rng_state = 12345u;

static float frand(void) { /* in [-1, 1) */
    rng_state = rng_state * 1103515245u + 12345u;
    return (float)((rng_state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static int irand(int lo, int hi) { /* in [lo, hi] */
    rng_state = rng_state * 1103515245u + 12345u;
    return lo + (int)((rng_state >> 8) % (unsigned)(hi - lo + 1));
}

static void fill(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = frand();
}

static void poison(float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = POISON_F32;
}

static void expect_close(const float *got, const double *want, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= TOL * (1 + fabs(want[i])),
                  "element %lld: got %g, expected %g", (long long)i, got[i], want[i]);
}

/* Gemm for every transpose combination, C shape and a size crossing the tile edges. */
Test(rt_gemm, matches_naive_product_for_all_transposes_and_bias_shapes) {
    const int64_t M = 7, N = RT_MM_COLS + 5, K = 19;
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N);
    float *c = malloc(sizeof(float) * M * N), *y = malloc(sizeof(float) * M * N);
    double *ref = malloc(sizeof(double) * M * N);
    fill(a, M * K), fill(b, K * N), fill(c, M * N);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int cs = 0; cs < 4; cs++) { /* C: none, (M,N), (N), scalar */
                int64_t a_rs = ta ? 1 : K, a_cs = ta ? M : 1, b_rs = tb ? 1 : N, b_cs = tb ? K : 1;
                int64_t c_rs = cs == 1 ? N : 0, c_cs = cs == 1 || cs == 2 ? 1 : 0;
                double alpha = 0.5, beta = cs ? 2.0 : 0.0;
                for (int64_t i = 0; i < M; i++)
                    for (int64_t j = 0; j < N; j++) {
                        double s = 0;
                        for (int64_t k = 0; k < K; k++)
                            s += (double)a[i * a_rs + k * a_cs] * b[k * b_rs + j * b_cs];
                        ref[i * N + j] = alpha * s + (cs ? beta * c[i * c_rs + j * c_cs] : 0);
                    }
                poison(y, M * N);
                rt_gemm_f32(&(const RtGemmf32){.m = M, .n = N, .k = K, .alpha = (float)alpha,
                                               .a = a, .a_rs = a_rs, .a_cs = a_cs, .b = b,
                                               .b_rs = b_rs, .b_cs = b_cs, .beta = (float)beta,
                                               .c = cs ? c : NULL, .c_rs = c_rs, .c_cs = c_cs,
                                               .y = y});
                expect_close(y, ref, M * N);
            }
    free(a), free(b), free(c), free(y), free(ref);
}

Test(rt_gemm, computes_f16_products_in_float) {
    enum { M = 5, N = 6, K = 9 };
    uint16_t a[M * K], b[K * N], y[M * N];
    float yf[M * N];
    double ref[M * N];
    for (int i = 0; i < M * K; i++) a[i] = rt_f32_to_f16(frand());
    for (int i = 0; i < K * N; i++) b[i] = rt_f32_to_f16(frand());
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += rt_f16_to_f32(a[i * K + k]) * rt_f16_to_f32(b[k * N + j]);
            ref[i * N + j] = s;
        }
    memset(y, 0xff, sizeof y); /* NaN bits */
    rt_gemm_f16(&(const RtGemmf16){.m = M, .n = N, .k = K, .alpha = 1, .a = a, .a_rs = K,
                                   .a_cs = 1, .b = b, .b_rs = N, .b_cs = 1, .y = y});
    for (int i = 0; i < M * N; i++) {
        yf[i] = rt_f16_to_f32(y[i]);
        cr_assert(fabs(yf[i] - ref[i]) <= 4e-3 * (1 + fabs(ref[i])), "element %d", i);
    }
}

Test(rt_gemm, integer_products_are_exact) {
    enum { M = 3, N = 5, K = 4 };
    int64_t a[M * K], b[K * N], y[M * N];
    for (int i = 0; i < M * K; i++) a[i] = irand(-1000, 1000);
    for (int i = 0; i < K * N; i++) b[i] = irand(-1000, 1000);
    for (int i = 0; i < M * N; i++) y[i] = INT64_MIN;
    rt_gemm_i64(&(const RtGemmi64){.m = M, .n = N, .k = K, .alpha = 1, .a = a, .a_rs = K,
                                   .a_cs = 1, .b = b, .b_rs = N, .b_cs = 1, .y = y});
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            int64_t s = 0;
            for (int k = 0; k < K; k++) s += a[i * K + k] * b[k * N + j];
            cr_assert_eq(y[i * N + j], s);
        }
}

Test(rt_matmul_integer, subtracts_per_row_and_per_column_zero_points) {
    enum { M = 4, N = 3, K = 6 };
    uint8_t a[M * K], za[M];
    int8_t b[K * N], zb[N];
    int32_t y[M * N];
    for (int i = 0; i < M * K; i++) a[i] = (uint8_t)irand(0, 255);
    for (int i = 0; i < K * N; i++) b[i] = (int8_t)irand(-128, 127);
    for (int i = 0; i < M; i++) za[i] = (uint8_t)irand(0, 255);
    for (int i = 0; i < N; i++) zb[i] = (int8_t)irand(-128, 127);
    for (int i = 0; i < M * N; i++) y[i] = INT32_MIN;
    rt_matmul_integer_u8i8(M, N, K, a, za, 1, b, zb, 1, y);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            int32_t s = 0;
            for (int k = 0; k < K; k++) s += (a[i * K + k] - za[i]) * (b[k * N + j] - zb[j]);
            cr_assert_eq(y[i * N + j], s);
        }
}

Test(rt_softmax, softmax_logsoftmax_and_hardmax_follow_their_definitions_on_a_middle_axis) {
    enum { O = 3, L = 7, I = 4, NE = O * L * I };
    float x[NE], y[NE];
    double ref[NE];
    fill(x, NE);
    x[5] = 80.0f; /* large: needs the max subtracted */
    for (int mode = 0; mode < 3; mode++) {
        for (int o = 0; o < O; o++)
            for (int i = 0; i < I; i++) {
                double mx = -INFINITY, sum = 0;
                int arg = 0;
                for (int k = 0; k < L; k++) {
                    double v = x[(o * L + k) * I + i];
                    if (v > mx) mx = v, arg = k;
                }
                for (int k = 0; k < L; k++) sum += exp(x[(o * L + k) * I + i] - mx);
                for (int k = 0; k < L; k++) {
                    double v = x[(o * L + k) * I + i];
                    ref[(o * L + k) * I + i] = mode == RT_SOFTMAX      ? exp(v - mx) / sum
                                               : mode == RT_LOG_SOFTMAX ? v - mx - log(sum)
                                                                        : (double)(k == arg);
                }
            }
        poison(y, NE);
        rt_softmax_f32(x, y, O, L, I, mode);
        expect_close(y, ref, NE);
    }
}

/* Naive reduction of x (3,4,5) over mask bits; op 0 sum, 1 max, 2 log-sum-exp. */
static void reduce_ref(const float *x, unsigned mask, int op, double *ref) {
    const int D[3] = {3, 4, 5};
    int od[3], n_out = 1;
    for (int d = 0; d < 3; d++) od[d] = (mask >> d) & 1 ? 1 : D[d], n_out *= od[d];
    for (int o = 0; o < n_out; o++) {
        int oi[3] = {o / (od[1] * od[2]), o / od[2] % od[1], o % od[2]};
        double acc = op == 1 ? -INFINITY : 0, mx = -INFINITY;
        for (int pass = 0; pass < (op == 2 ? 2 : 1); pass++)
            for (int i = 0; i < 60; i++) {
                int ii[3] = {i / 20, i / 5 % 4, i % 5}, ok = 1;
                for (int d = 0; d < 3; d++) ok &= ((mask >> d) & 1) || ii[d] == oi[d];
                if (!ok) continue;
                double v = x[i];
                if (op == 0) acc += v;
                else if (op == 1) acc = v > acc ? v : acc;
                else if (pass == 0) mx = v > mx ? v : mx;
                else acc += exp(v - mx);
            }
        ref[o] = op == 2 ? log(acc) + mx : acc;
    }
}

Test(rt_reduce, every_axis_subset_matches_naive_reduction_with_keepdims) {
    const int64_t dims[3] = {3, 4, 5};
    float x[60], y[60];
    double ref[60];
    fill(x, 60);
    for (unsigned mask = 1; mask < 8; mask++) {
        int64_t axes[3], n_axes = 0, out[3];
        for (int d = 0; d < 3; d++) {
            if ((mask >> d) & 1) axes[n_axes++] = d - ((d & 1) ? 3 : 0); /* some negative */
            out[d] = (mask >> d) & 1 ? 1 : dims[d];
        }
        RtReducePlan p;
        cr_assert_eq(rt_reduce_plan(&p, 3, dims, axes, n_axes, 0, 1, 3, out), RT_OK);
        for (int op = 0; op < 3; op++) {
            reduce_ref(x, mask, op, ref);
            poison(y, 60);
            if (op == 0) rt_reduce_sum_f32(&p, x, y);
            else if (op == 1) rt_reduce_max_f32(&p, x, y);
            else rt_reduce_log_sum_exp_f32(&p, x, y);
            expect_close(y, ref, p.n_out);
        }
    }
}

Test(rt_reduce, plan_rejects_bad_axes_and_mismatched_output_shapes) {
    const int64_t dims[2] = {3, 4}, out_keep[2] = {3, 1}, out_drop[1] = {3};
    const int64_t bad_axis[1] = {2}, axis1[1] = {1};
    RtReducePlan p;
    cr_assert_eq(rt_reduce_plan(&p, 2, dims, bad_axis, 1, 0, 1, 2, out_keep), RT_ERR_INDEX);
    cr_assert_eq(rt_reduce_plan(&p, 2, dims, axis1, 1, 0, 0, 2, out_keep), RT_ERR_SHAPE);
    cr_assert_eq(rt_reduce_plan(&p, 2, dims, axis1, 1, 0, 0, 1, out_drop), RT_OK);
    cr_assert_eq(rt_reduce_plan(&p, 2, dims, NULL, 0, 1, 1, 2, dims), RT_OK);
    cr_assert(p.copy, "no axes with noop_with_empty_axes copies the input");
}

Test(rt_arg, picks_first_or_last_index_among_ties) {
    const float x[2 * 3] = {1, 5, 5, 2, 2, 0};
    int64_t y[2] = {-1, -1};
    rt_arg_f32(x, y, 2, 3, 1, 0, 0);
    cr_assert(y[0] == 1 && y[1] == 0);
    rt_arg_f32(x, y, 2, 3, 1, 0, 1);
    cr_assert(y[0] == 2 && y[1] == 1);
    rt_arg_f32(x, y, 2, 3, 1, 1, 1);
    cr_assert(y[0] == 0 && y[1] == 2);
}

Test(rt_scan, cumsum_exclusive_and_reverse_match_naive_scan) {
    enum { O = 2, L = 6, I = 3, NE = O * L * I };
    float x[NE], y[NE];
    double ref[NE];
    fill(x, NE);
    for (int excl = 0; excl < 2; excl++)
        for (int rev = 0; rev < 2; rev++) {
            for (int o = 0; o < O; o++)
                for (int i = 0; i < I; i++)
                    for (int k = 0; k < L; k++) {
                        double s = 0;
                        for (int j = 0; j < L; j++) {
                            int in = rev ? (excl ? j > k : j >= k) : (excl ? j < k : j <= k);
                            if (in) s += x[(o * L + j) * I + i];
                        }
                        ref[(o * L + k) * I + i] = s;
                    }
            poison(y, NE);
            rt_cumsum_f32(x, y, O, L, I, excl, rev);
            expect_close(y, ref, NE);
        }
    int64_t outer, n, inner;
    const int64_t dims[2] = {2, 5};
    cr_assert_eq(rt_scan_split(2, dims, -1, &outer, &n, &inner), RT_OK);
    cr_assert(outer == 2 && n == 5 && inner == 1);
    cr_assert_eq(rt_scan_split(2, dims, 2, &outer, &n, &inner), RT_ERR_INDEX);
}

Test(rt_topk, returns_sorted_best_k_with_lower_index_first_among_ties) {
    const float x[8] = {3, 1, 4, 1, 5, 9, 2, 6};
    const float tie[6] = {2, 7, 7, 1, 7, 2};
    float v[4];
    int64_t idx[4];
    poison(v, 4);
    rt_topk_f32(x, v, idx, 1, 8, 1, 3, 1);
    cr_assert(v[0] == 9 && v[1] == 6 && v[2] == 5);
    cr_assert(idx[0] == 5 && idx[1] == 7 && idx[2] == 4);
    rt_topk_f32(x, v, idx, 1, 8, 1, 3, 0);
    cr_assert(v[0] == 1 && v[1] == 1 && v[2] == 2);
    cr_assert(idx[0] == 1 && idx[1] == 3 && idx[2] == 6);
    rt_topk_f32(tie, v, idx, 1, 6, 1, 4, 1);
    cr_assert(idx[0] == 1 && idx[1] == 2 && idx[2] == 4 && idx[3] == 0);
    /* strided: two columns of a (4, 2) tensor along axis 0 */
    const float col[8] = {1, 8, 4, 2, 3, 6, 2, 4};
    float v2[4];
    int64_t i2[4];
    rt_topk_f32(col, v2, i2, 1, 4, 2, 2, 1);
    cr_assert(v2[0] == 4 && v2[2] == 3 && v2[1] == 8 && v2[3] == 6);
    cr_assert(i2[0] == 1 && i2[2] == 2 && i2[1] == 0 && i2[3] == 2);
    cr_assert_eq(rt_topk_check_k(3, 4), RT_ERR_SHAPE);
}

Test(rt_loss, softmax_cross_entropy_matches_naive_mean_with_weights_and_ignore_index) {
    enum { N = 3, C = 4, D = 2 };
    float x[N * C * D], w[C], y = NAN, lp[N * C * D];
    int64_t tg[N * D] = {0, 3, 2, 1, 1, 2};
    fill(x, N * C * D), fill(w, C);
    for (int c = 0; c < C; c++) w[c] += 2; /* positive weights */
    double total = 0, wsum = 0;
    for (int n = 0; n < N; n++)
        for (int d = 0; d < D; d++) {
            double s = 0;
            for (int c = 0; c < C; c++) s += exp(x[(n * C + c) * D + d]);
            int64_t t = tg[n * D + d];
            if (t == 2) continue; /* ignore_index */
            total += -(x[(n * C + t) * D + d] - log(s)) * w[t];
            wsum += w[t];
        }
    poison(lp, N * C * D);
    cr_assert_eq(rt_loss_f32_int64(x, tg, w, &y, lp, N, C, D, 2, 1, RT_LOSS_MEAN, 1), RT_OK);
    cr_assert(fabs(y - total / wsum) <= TOL, "got %g, expected %g", y, total / wsum);
    for (int i = 0; i < N * C * D; i++) cr_assert(!isnan(lp[i]), "log_prob %d written", i);
    tg[0] = C; /* out of range and not ignored */
    cr_assert_eq(rt_loss_f32_int64(x, tg, w, &y, lp, N, C, D, 2, 1, RT_LOSS_MEAN, 1),
                 RT_ERR_INDEX);
}

Test(rt_attention, grouped_causal_attention_matches_naive_softmax_of_scores) {
    enum { B = 2, QH = 4, KVH = 2, QS = 3, KS = 5, HD = 4, VD = 3 };
    float q[B * QH * QS * HD], k[B * KVH * KS * HD], v[B * KVH * KS * VD], y[B * QH * QS * VD];
    double ref[B * QH * QS * VD];
    fill(q, B * QH * QS * HD), fill(k, B * KVH * KS * HD), fill(v, B * KVH * KS * VD);
    const int64_t past = 0;
    RtAttn p = {B, QH, KVH, QS, KS, past, HD, VD, {QH * QS * HD, QS * HD, HD},
                {KVH * KS * HD, KS * HD, HD}, {KVH * KS * VD, KS * VD, VD},
                {QH * QS * VD, QS * VD, VD}, {0, 0, 0, 0}, 0, 0, 1, 0.5, 0.0, 0};
    for (int b = 0; b < B; b++)
        for (int h = 0; h < QH; h++)
            for (int i = 0; i < QS; i++) {
                int kh = h / (QH / KVH);
                double s[KS], mx = -INFINITY, sum = 0;
                for (int j = 0; j < KS; j++) {
                    double dot = 0;
                    for (int d = 0; d < HD; d++)
                        dot += q[((b * QH + h) * QS + i) * HD + d] * k[((b * KVH + kh) * KS + j) * HD + d];
                    s[j] = j > i ? -INFINITY : dot * 0.5;
                    mx = s[j] > mx ? s[j] : mx;
                }
                for (int j = 0; j < KS; j++) sum += exp(s[j] - mx);
                for (int d = 0; d < VD; d++) {
                    double o = 0;
                    for (int j = 0; j < KS; j++)
                        o += exp(s[j] - mx) / sum * v[((b * KVH + kh) * KS + j) * VD + d];
                    ref[((b * QH + h) * QS + i) * VD + d] = o;
                }
            }
    poison(y, B * QH * QS * VD);
    rt_attention_f32(&p, q, k, v, NULL, NULL, NULL, NULL, NULL, y, NULL, NULL, NULL);
    expect_close(y, ref, B * QH * QS * VD);
}
