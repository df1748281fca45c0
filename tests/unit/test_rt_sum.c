/* Unit tests of the blocked pairwise sums (runtime/rt_sum.h) and of the kernels that sum
 * through them (rt_reduce.h, rt_pool.h, rt_norm.h, rt_softmax.h), on long reductions of
 * realistic data: 160x160 maps and rows of 1e5 to 1e6 positive activations (a ReLU of a
 * normal draw, the data of a detector's feature maps), compared with a float64 reference.
 *
 * The bound: a sum of n floats through rt_sum is off by at most
 *   (RT_SUM_BLOCK + ceil(log2(n / RT_SUM_BLOCK)) + 1) * 2^-24 * sum |x|
 * (each value passes through at most RT_SUM_BLOCK - 1 adds in its block, one per level of
 * the pairwise tree, and one into the total). For n = 1e6 that is 48 ulps of sum |x|,
 * 2.9e-6 relative; a float added one value at a time may lose n ulps. The kernels' bounds
 * add the rounding of their last few operations (a division, an exp, a sqrt). Empty
 * reductions give the values ONNX (and numpy) give: a mean of nothing is NaN, a max -inf. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "runtime/rt_norm.h"
#include "runtime/rt_pool.h"
#include "runtime/rt_reduce.h"
#include "runtime/rt_softmax.h"
#include "runtime/rt_sum.h"

#include "rt_test_util.h"

#define MAP_SIDE 160 /* a 640x640 detector's stride-4 map */

/* The bound above, as a fraction of sum |x|, plus `extra` roundings of the result. */
static double sum_bound(int64_t n, int extra) {
    int levels = 0;
    while (((int64_t)RT_SUM_BLOCK << levels) < n) levels++;
    return (RT_SUM_BLOCK + levels + 1 + extra) * (FLT_EPSILON / 2);
}

/* A ReLU of a normal draw (scaled): the positive activations of a real feature map. */
static double rng_normal(void) {
    double s = 0;
    for (int k = 0; k < 4; k++) s += rng_unit();
    return s * 0.8660254; /* 4 uniforms of variance 1/3: about N(0, 1) */
}

static float *activations(int64_t n) {
    float *p = malloc((size_t)n * sizeof *p);
    cr_assert(p);
    for (int64_t i = 0; i < n; i++) {
        double v = 2.0 * rng_normal() + 0.5;
        p[i] = (float)(v > 0 ? v : 0);
    }
    return p;
}

static double sum_f64(const float *x, int64_t n, int64_t step, double *abs_sum) {
    double s = 0, a = 0;
    for (int64_t i = 0; i < n; i++) {
        s += x[i * step];
        a += fabs(x[i * step]);
    }
    if (abs_sum) *abs_sum = a;
    return s;
}

Test(rt_sum, long_sums_of_activations_stay_within_the_bound) {
    static const int64_t lengths[] = {1, 31, 32, 33, 1000, MAP_SIDE * MAP_SIDE, 100000, 1000000};
    rng_init();
    for (size_t k = 0; k < sizeof lengths / sizeof *lengths; k++) {
        int64_t n = lengths[k];
        float *x = activations(n);
        double abs_sum, want = sum_f64(x, n, 1, &abs_sum);
        double got = rt_sum_f32(x, n, 1);
        cr_assert(fabs(got - want) <= sum_bound(n, 0) * abs_sum,
                  "n %lld: sum %.9g, float64 %.9g, error %.3g > bound %.3g (seed %u)",
                  (long long)n, got, want, fabs(got - want), sum_bound(n, 0) * abs_sum, rng_seed);
        free(x);
    }
}

Test(rt_sum, signed_data_is_bounded_by_the_sum_of_magnitudes) {
    rng_init();
    int64_t n = 300000;
    float *x = rand_f32(n);
    double abs_sum, want = sum_f64(x, n, 1, &abs_sum);
    double got = rt_sum_f32(x, n, 1);
    cr_assert(fabs(got - want) <= sum_bound(n, 0) * abs_sum, "error %.3g (seed %u)",
              fabs(got - want), rng_seed);
    free(x);
}

/* 2^25 ones: a float counting one at a time stops at 2^24; every partial sum of the
 * blocked tree is a power-of-two multiple of 32 and exact. */
Test(rt_sum, counts_ones_exactly_past_two_to_the_24) {
    RtSumf32 s;
    rt_sum_init_f32(&s);
    int64_t n = (int64_t)1 << 25;
    for (int64_t i = 0; i < n; i++) rt_sum_add_f32(&s, 1.0f);
    cr_assert_eq(rt_sum_total_f32(&s), (float)n);
}

Test(rt_sum, strided_sums_and_column_sums_are_bit_identical_to_the_scalar_sum) {
    rng_init();
    /* rows: one open block, one full block, full blocks and an open one, and many; cols 19:
     * two full lane groups (summed a block at a time) and a remainder */
    static const int64_t rows_of[] = {7, 32, 69, 12345};
    for (int t = 0; t < 4; t++) {
        int64_t rows = rows_of[t], cols = 19;
        float *x = activations(rows * cols);
        float *y = poisoned_f32(cols);
        rt_sum_rows_f32(x, rows, cols, cols, y);
        for (int64_t j = 0; j < cols; j++) {
            float want = rt_sum_f32(x + j, rows, cols);
            cr_assert(memcmp(&y[j], &want, sizeof want) == 0,
                      "%lld rows, column %lld: %.9g vs %.9g (seed %u)", (long long)rows,
                      (long long)j, (double)y[j], (double)want, rng_seed);
        }
        free(x);
        free(y);
    }
}

Test(rt_sum, double_sums_stay_within_their_bound) {
    rng_init();
    int64_t n = 200000;
    double *x = malloc((size_t)n * sizeof *x), want = 0, abs_sum = 0;
    cr_assert(x);
    for (int64_t i = 0; i < n; i++) {
        x[i] = rng_unit() + 0.25;
        abs_sum += fabs(x[i]);
    }
    /* the reference: float64 pairs summed in long double where it is wider, else Neumaier */
    double c = 0;
    for (int64_t i = 0; i < n; i++) {
        double t = want + x[i];
        c += fabs(want) >= fabs(x[i]) ? (want - t) + x[i] : (x[i] - t) + want;
        want = t;
    }
    want += c;
    double got = rt_sum_f64(x, n, 1);
    double bound = sum_bound(n, 0) / FLT_EPSILON * DBL_EPSILON * abs_sum;
    cr_assert(fabs(got - want) <= bound, "error %.3g > %.3g", fabs(got - want), bound);
    free(x);
}

/* ---- the kernels ---- */

/* ReduceMean over (H, W) of an (N, C, 160, 160) map, and over the channel axis (strided). */
Test(rt_reduce, mean_over_a_160x160_map_is_within_the_sum_bound) {
    rng_init();
    int64_t dims[4] = {1, 3, MAP_SIDE, MAP_SIDE}, plane = MAP_SIDE * MAP_SIDE;
    float *x = activations(3 * plane);
    float *y = poisoned_f32(3);
    int64_t axes[2] = {2, 3}, out_dims[4] = {1, 3, 1, 1};
    RtReducePlan p;
    cr_assert_eq(rt_reduce_plan(&p, 4, dims, axes, 2, 0, 1, 4, out_dims), RT_OK);
    rt_reduce_mean_f32(&p, x, y);
    for (int c = 0; c < 3; c++) {
        double abs_sum, want = sum_f64(x + c * plane, plane, 1, &abs_sum) / (double)plane;
        cr_assert(fabs(y[c] - want) <= sum_bound(plane, 1) * abs_sum / (double)plane,
                  "channel %d: %.9g vs %.9g (seed %u)", c, (double)y[c], want, rng_seed);
    }
    /* over the channels: a strided walk, 100000 long */
    int64_t dims2[2] = {100000, 2}, axes2[1] = {0}, out2[1] = {2};
    float *x2 = activations(200000);
    cr_assert_eq(rt_reduce_plan(&p, 2, dims2, axes2, 1, 0, 0, 1, out2), RT_OK);
    rt_reduce_sum_f32(&p, x2, y);
    for (int c = 0; c < 2; c++) {
        double abs_sum, want = sum_f64(x2 + c, 100000, 2, &abs_sum);
        cr_assert(fabs(y[c] - want) <= sum_bound(100000, 0) * abs_sum, "%.9g vs %.9g (seed %u)",
                  (double)y[c], want, rng_seed);
    }
    free(x);
    free(x2);
    free(y);
}

/* GlobalAveragePool, planar and channels-last, over 160x160: within the bound and
 * bit-identical to each other. */
Test(rt_pool, global_average_over_a_160x160_map_is_within_the_sum_bound) {
    rng_init();
    int64_t c = 11, size = MAP_SIDE * MAP_SIDE;
    float *x = activations(c * size), *xt = malloc((size_t)(c * size) * sizeof *xt);
    float *y = poisoned_f32(c), *yt = poisoned_f32(c);
    cr_assert(xt);
    for (int64_t k = 0; k < c; k++)
        for (int64_t i = 0; i < size; i++) xt[i * c + k] = x[k * size + i];
    rt_global_avgpool_f32(x, y, c, size);
    rt_global_pool_nhwc_f32(xt, yt, 1, size, c, 0);
    for (int64_t k = 0; k < c; k++) {
        double abs_sum, want = sum_f64(x + k * size, size, 1, &abs_sum) / (double)size;
        cr_assert(fabs(y[k] - want) <= sum_bound(size, 1) * abs_sum / (double)size,
                  "channel %lld: %.9g vs %.9g (seed %u)", (long long)k, (double)y[k], want,
                  rng_seed);
        cr_assert(memcmp(&y[k], &yt[k], sizeof *y) == 0, "NHWC differs from NCHW at %lld",
                  (long long)k);
    }
    free(x);
    free(xt);
    free(y);
    free(yt);
}

/* Softmax over a row of 1e5 scores: each probability within the sum's bound of its float64
 * value (relative), plus an exp and a product. */
Test(rt_softmax, a_row_of_1e5_sums_within_the_bound) {
    rng_init();
    int64_t n = 100000;
    float *x = rand_f32(n), *y = poisoned_f32(n);
    rt_softmax_f32(x, y, 1, n, 1, RT_SOFTMAX);
    double mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < n; i++) mx = fmax(mx, x[i]);
    for (int64_t i = 0; i < n; i++) sum += exp((double)x[i] - mx);
    for (int64_t i = 0; i < n; i++) {
        double want = exp((double)x[i] - mx) / sum;
        cr_assert(fabs(y[i] - want) <= sum_bound(n, 4) * want, "[%lld]: %.9g vs %.9g (seed %u)",
                  (long long)i, (double)y[i], want, rng_seed);
    }
    free(x);
    free(y);
}

/* LayerNormalization over rows of 1e5: mean and variance from blocked sums. A shifted row
 * (mean 3, spread 1) is the case where a sequential sum of the mean loses most. */
Test(rt_norm, layernorm_over_rows_of_1e5_is_within_the_bound) {
    rng_init();
    int64_t cols = 100000;
    float *x = activations(cols), *y = poisoned_f32(cols), one = 1, mean, inv_std;
    for (int64_t j = 0; j < cols; j++) x[j] += 3.0f;
    rt_layernorm_f32(x, &one, NULL, y, &mean, &inv_std, 1, cols, 0, 0, 1e-5f);
    double abs_sum, mu = sum_f64(x, cols, 1, &abs_sum) / (double)cols, var = 0;
    for (int64_t j = 0; j < cols; j++) var += ((double)x[j] - mu) * ((double)x[j] - mu);
    var /= (double)cols;
    cr_assert(fabs(mean - mu) <= sum_bound(cols, 1) * abs_sum / (double)cols,
              "mean %.9g vs %.9g (seed %u)", (double)mean, mu, rng_seed);
    double inv = 1 / sqrt(var + 1e-5);
    cr_assert(fabs(inv_std - inv) <= 4 * sum_bound(cols, 3) * inv, "inv_std %.9g vs %.9g",
              (double)inv_std, inv);
    free(x);
    free(y);
}

/* The same with a scale and a bias per column (scale_step 1: the AVX-512 path's form, the
 * sums in 16 lanes over blocks of 512 closed into an rt_sum): the same bound. */
Test(rt_norm, layernorm_with_per_column_scale_over_rows_of_1e5_is_within_the_bound) {
    rng_init();
    int64_t cols = 100003; /* blocks of 512, a partial one and 3 values past the last vector */
    float *x = activations(cols), *y = poisoned_f32(cols), *sc = rand_f32(cols);
    float *bi = rand_f32(cols), mean, inv_std;
    for (int64_t j = 0; j < cols; j++) x[j] += 3.0f;
    rt_layernorm_f32(x, sc, bi, y, &mean, &inv_std, 1, cols, 1, 1, 1e-5f);
    double abs_sum, mu = sum_f64(x, cols, 1, &abs_sum) / (double)cols, var = 0;
    for (int64_t j = 0; j < cols; j++) var += ((double)x[j] - mu) * ((double)x[j] - mu);
    var /= (double)cols;
    cr_assert(fabs(mean - mu) <= sum_bound(cols, 1) * abs_sum / (double)cols,
              "mean %.9g vs %.9g (seed %u)", (double)mean, mu, rng_seed);
    double inv = 1 / sqrt(var + 1e-5);
    cr_assert(fabs(inv_std - inv) <= 4 * sum_bound(cols, 3) * inv, "inv_std %.9g vs %.9g",
              (double)inv_std, inv);
    for (int64_t j = 0; j < cols; j++) {
        double want = ((double)x[j] - mu) * inv * sc[j] + bi[j];
        cr_assert(fabs(y[j] - want) <= 1e-4 * (1 + fabs(want)), "y[%lld] %.9g vs %.9g (seed %u)",
                  (long long)j, (double)y[j], want, rng_seed);
    }
    free(x), free(y), free(sc), free(bi);
}

/* ---- empty reductions: every output written, with ONNX's values ---- */

Test(rt_pool, global_pools_of_an_empty_map_give_nan_and_minus_infinity) {
    float x[1] = {0}, y[3], yt[3];
    poison(y, 3);
    rt_global_avgpool_f32(x, y, 3, 0);
    for (int c = 0; c < 3; c++) cr_assert(isnan(y[c]), "avg [%d] = %g", c, (double)y[c]);
    poison(yt, 3);
    rt_global_pool_nhwc_f32(x, yt, 1, 0, 3, 0);
    for (int c = 0; c < 3; c++) cr_assert(isnan(yt[c]));
    y[0] = 7;
    rt_global_maxpool_f32(x, y, 3, 0);
    for (int c = 0; c < 3; c++) cr_assert(isinf(y[c]) && y[c] < 0, "max [%d] = %g", c, (double)y[c]);
    yt[0] = 7;
    rt_global_pool_nhwc_f32(x, yt, 1, 0, 3, 1);
    for (int c = 0; c < 3; c++) cr_assert(isinf(yt[c]) && yt[c] < 0);
}

Test(rt_reduce, empty_reductions_give_the_onnx_values) {
    int64_t dims[2] = {2, 0}, axes[1] = {1}, out_dims[2] = {2, 1};
    float x[1] = {0}, y[2];
    RtReducePlan p;
    cr_assert_eq(rt_reduce_plan(&p, 2, dims, axes, 1, 0, 1, 2, out_dims), RT_OK);
    poison(y, 2);
    rt_reduce_sum_f32(&p, x, y);
    cr_assert(y[0] == 0 && y[1] == 0);
    poison(y, 2);
    rt_reduce_mean_f32(&p, x, y);
    cr_assert(isnan(y[0]) && isnan(y[1]));
    poison(y, 2);
    rt_reduce_max_f32(&p, x, y);
    cr_assert(isinf(y[0]) && y[0] < 0);
    poison(y, 2);
    rt_reduce_log_sum_exp_f32(&p, x, y);
    cr_assert(isinf(y[1]) && y[1] < 0);
}
