/* Unit tests of the miscellaneous kernels (runtime/rt_misc.h): TensorScatter, RotaryEmbedding,
 * CausalConvWithState, LinearAttention, Unique, ArrayFeatureExtractor and the random
 * generator, on fresh random inputs with outputs poisoned first, against naive references
 * written here (LinearAttention against the non-recurrent sum over past steps). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/rt_misc.h"

#include "rt_test_util.h"

#define TOL_F32 1e-4 /* relative to the reference's magnitude, for float accumulations */

static void expect_close(const float *got, const double *want, int64_t n, const char *what) {
    expect_close_tol(got, want, n, TOL_F32, what);
}

Test(rt_misc, tensor_scatter_writes_rows_linearly_and_circularly) {
    rng_init();
    enum { B = 2, O = 3, L = 5, S = 2, I = 4 };
    float *past = rand_f32(B * O * L * I), *upd = rand_f32(B * O * S * I);
    int64_t wi[B] = {rng_range(0, L - S), 4};
    for (int circ = 0; circ < 2; circ++) {
        float *out = poisoned_f32(B * O * L * I);
        int rc = rt_tensor_scatter((const uint8_t *)past, (const uint8_t *)upd, wi, (uint8_t *)out,
                                   B, O, L, S, I * 4, circ);
        if (!circ) { /* batch 1 writes rows 4 and 5: out of range */
            cr_assert_eq(rc, RT_ERR_INDEX);
            free(out);
            continue;
        }
        cr_assert_eq(rc, RT_OK);
        for (int b = 0; b < B; b++)
            for (int o = 0; o < O; o++)
                for (int l = 0; l < L; l++)
                    for (int i = 0; i < I; i++) {
                        float want = past[((b * O + o) * L + l) * I + i];
                        for (int s = 0; s < S; s++)
                            if ((wi[b] + s) % L == l) want = upd[((b * O + o) * S + s) * I + i];
                        cr_assert_eq(out[((b * O + o) * L + l) * I + i], want, "seed %u", rng_seed);
                    }
        free(out);
    }
    wi[1] = 1;
    float *out = poisoned_f32(B * O * L * I);
    cr_assert_eq(rt_tensor_scatter((const uint8_t *)past, (const uint8_t *)upd, wi, (uint8_t *)out,
                                   B, O, L, S, I * 4, 0),
                 RT_OK);
    free(out), free(past), free(upd);
}

Test(rt_misc, rotary_embedding_matches_naive_rotation_in_both_layouts) {
    for (int inter = 0; inter < 2; inter++) {
        rng_init();
        int64_t B = 2, S = 3, H = 2, D = 8, rot = 6, half = 3, P = 10;
        float *x = rand_f32(B * S * H * D), *c = rand_f32(P * half), *s = rand_f32(P * half);
        float *y = poisoned_f32(B * S * H * D);
        int64_t pos[6];
        for (int i = 0; i < 6; i++)
            pos[i] = rng_range(0, P - 1);
        /* (B, H, S, D) layout */
        cr_assert_eq(rt_rotary_f32(x, c, s, pos, P, y, B, S, H, D, rot, inter, H * S * D, D, S * D),
                     RT_OK);
        double *want = malloc((size_t)(B * S * H * D) * sizeof *want);
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t t = 0; t < S; t++) {
                    const float *xr = x + ((b * H + h) * S + t) * D;
                    double *wr = want + ((b * H + h) * S + t) * D;
                    int64_t p = pos[b * S + t];
                    for (int64_t d = 0; d < D; d++)
                        wr[d] = xr[d];
                    for (int64_t i = 0; i < half; i++) {
                        int64_t i1 = inter ? 2 * i : i, i2 = inter ? 2 * i + 1 : i + half;
                        double cv = c[p * half + i], sv = s[p * half + i];
                        wr[i1] = cv * xr[i1] - sv * xr[i2];
                        wr[i2] = sv * xr[i1] + cv * xr[i2];
                    }
                }
        expect_close(y, want, B * S * H * D, "rotary");
        pos[0] = P; /* out of the cache */
        cr_assert_eq(rt_rotary_f32(x, c, s, pos, P, y, B, S, H, D, rot, inter, H * S * D, D, S * D),
                     RT_ERR_INDEX);
        free(x), free(c), free(s), free(y), free(want);
    }
}

Test(rt_misc, causal_conv_with_state_matches_padded_convolution) {
    rng_init();
    int64_t B = 2, C = 3, L = 5, K = 4, P = K - 1;
    float *x = rand_f32(B * C * L), *w = rand_f32(C * K), *bias = rand_f32(C);
    float *past = rand_f32(B * C * P), *y = poisoned_f32(B * C * L), *pr = poisoned_f32(B * C * P);
    rt_causal_conv_f32(x, w, bias, past, y, pr, B, C, L, K, 1);
    double want_y[30], want_p[18];
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < C; c++) {
            double pad[8];
            for (int64_t t = 0; t < P; t++)
                pad[t] = past[(b * C + c) * P + t];
            for (int64_t t = 0; t < L; t++)
                pad[P + t] = x[(b * C + c) * L + t];
            for (int64_t t = 0; t < L; t++) {
                double acc = bias[c];
                for (int64_t k = 0; k < K; k++)
                    acc += w[c * K + k] * pad[t + k];
                want_y[(b * C + c) * L + t] = acc / (1.0 + exp(-acc));
            }
            for (int64_t t = 0; t < P; t++)
                want_p[(b * C + c) * P + t] = pad[L + t];
        }
    expect_close(y, want_y, B * C * L, "y");
    expect_close(pr, want_p, B * C * P, "present");
    free(x), free(w), free(bias), free(past), free(y), free(pr);
}

Test(rt_misc, linear_attention_linear_rule_equals_the_sum_over_past_steps) {
    rng_init();
    int64_t B = 2, T = 4, Hq = 4, Hkv = 2, dk = 3, dv = 5, G = Hq / Hkv;
    float *q = rand_f32(B * T * Hq * dk), *k = rand_f32(B * T * Hkv * dk);
    float *v = rand_f32(B * T * Hkv * dv), *past = rand_f32(B * Hkv * dk * dv);
    float *y = poisoned_f32(B * T * Hq * dv), *pr = poisoned_f32(B * Hkv * dk * dv);
    float state[15];
    rt_linear_attention_f32(q, k, v, past, NULL, 1, NULL, 1, y, pr, state, B, T, Hq, Hkv, dk, dv,
                            0.5f);
    double *want = malloc((size_t)(B * T * Hq * dv) * sizeof *want);
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t h = 0; h < Hq; h++)
                for (int64_t m = 0; m < dv; m++) {
                    int64_t hk = h / G;
                    double acc = 0;
                    for (int64_t d = 0; d < dk; d++) {
                        double s = past[((b * Hkv + hk) * dk + d) * dv + m];
                        for (int64_t u = 0; u <= t; u++)
                            s += (double)k[((b * T + u) * Hkv + hk) * dk + d] *
                                 v[((b * T + u) * Hkv + hk) * dv + m];
                        acc += q[((b * T + t) * Hq + h) * dk + d] * s;
                    }
                    want[((b * T + t) * Hq + h) * dv + m] = 0.5 * acc;
                }
    expect_close(y, want, B * T * Hq * dv, "y");
    free(q), free(k), free(v), free(past), free(y), free(pr), free(want);
}

Test(rt_misc, unique_finds_sorted_and_first_occurrence_orders_and_checks_the_count) {
    for (int sorted = 0; sorted < 2; sorted++) {
        rng_init();
        enum { L = 40 };
        int64_t x[L], y[L], idx[L], inv[L], cnt[L];
        bool seen[8] = {false};
        int64_t U = 0;
        for (int i = 0; i < L; i++) {
            x[i] = rng_range(0, 7);
            if (!seen[x[i]]) seen[x[i]] = true, U++;
        }
        for (int i = 0; i < L; i++)
            y[i] = idx[i] = inv[i] = cnt[i] = -99;
        cr_assert_eq(rt_unique_i64(x, 1, L, 1, sorted, U + 1, y, idx, inv, cnt), RT_ERR_SHAPE);
        cr_assert_eq(rt_unique_i64(x, 1, L, 1, sorted, U, y, idx, inv, cnt), RT_OK);
        for (int64_t p = 0; p < U; p++) {
            int64_t first = -1, n = 0;
            for (int j = 0; j < L; j++)
                if (x[j] == y[p]) {
                    if (first < 0) first = j;
                    n++;
                }
            cr_assert_eq(idx[p], first, "seed %u", rng_seed);
            cr_assert_eq(cnt[p], n, "seed %u", rng_seed);
            if (p > 0 && sorted) cr_assert_lt(y[p - 1], y[p], "seed %u", rng_seed);
            if (p > 0 && !sorted) cr_assert_lt(idx[p - 1], idx[p], "seed %u", rng_seed);
        }
        for (int j = 0; j < L; j++)
            cr_assert_eq(y[inv[j]], x[j], "seed %u", rng_seed);
    }
}

Test(rt_misc, unique_along_an_axis_compares_whole_slices) {
    /* x: (2, 4, 1); slices along axis 1: (1,5) (0,3) (1,5) (0,2) */
    float x[8] = {1, 0, 1, 0, 5, 3, 5, 2}, y[6];
    int64_t idx[3], inv[4], cnt[3];
    cr_assert_eq(rt_unique_f32(x, 2, 4, 1, 1, 3, y, idx, inv, cnt), RT_OK);
    float want_y[6] = {0, 0, 1, 2, 3, 5};
    int64_t want_idx[3] = {3, 1, 0}, want_inv[4] = {2, 1, 2, 0}, want_cnt[3] = {1, 1, 2};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(y[i], want_y[i]);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(idx[i], want_idx[i]);
        cr_assert_eq(cnt[i], want_cnt[i]);
    }
    for (int i = 0; i < 4; i++)
        cr_assert_eq(inv[i], want_inv[i]);
}

Test(rt_misc, gather_last_rejects_indices_outside_the_last_axis) {
    float x[6] = {1, 2, 3, 4, 5, 6}, y[4] = {NAN, NAN, NAN, NAN};
    int64_t idx[2] = {2, 0};
    cr_assert_eq(rt_gather_last((const uint8_t *)x, idx, 2, (uint8_t *)y, 2, 3, 4), RT_OK);
    cr_assert(y[0] == 3 && y[1] == 1 && y[2] == 6 && y[3] == 4);
    idx[1] = 3;
    cr_assert_eq(rt_gather_last((const uint8_t *)x, idx, 2, (uint8_t *)y, 2, 3, 4), RT_ERR_INDEX);
}

Test(rt_misc, random_generator_has_the_moments_of_its_distributions) {
    enum { N = 200000 };
    RtRng r;
    rt_rng_seed(&r, (uint64_t)time(NULL));
    double su = 0, su2 = 0, sn = 0, sn2 = 0;
    for (int i = 0; i < N; i++) {
        double u = rt_rng_uniform(&r), z = rt_rng_normal(&r);
        cr_assert(u >= 0.0 && u < 1.0);
        su += u, su2 += u * u, sn += z, sn2 += z * z;
    }
    double mu = su / N, vu = su2 / N - mu * mu, mn = sn / N, vn = sn2 / N - mn * mn;
    /* 6 standard errors: sd(mean) = sqrt(var / N) */
    cr_assert(fabs(mu - 0.5) < 6 * sqrt(1.0 / 12 / N), "uniform mean %g", mu);
    cr_assert(fabs(vu - 1.0 / 12) < 0.01 * (1.0 / 12) * 6, "uniform variance %g", vu);
    cr_assert(fabs(mn) < 6 * sqrt(1.0 / N), "normal mean %g", mn);
    cr_assert(fabs(vn - 1.0) < 6 * sqrt(2.0 / N), "normal variance %g", vn);
    RtRng a, b;
    rt_rng_seed(&a, 42), rt_rng_seed(&b, 42);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(rt_rng_next(&a), rt_rng_next(&b));
}
