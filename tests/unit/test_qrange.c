/* Unit tests of driver/qrange.c: the range each calibration method picks, on fresh random
 * data with known outliers. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "driver/qrange.h"

#include "rt_test_util.h"

static QRange *feed(const float *x, int64_t n, QRangeMethod m) {
    QRange *r = malloc(sizeof *r);
    cr_assert(r);
    qrange_init(r);
    qrange_add_minmax(r, x, n);
    if (qrange_needs_hist(m)) {
        qrange_begin_hist(r);
        qrange_add_hist(r, x, n);
    }
    return r;
}

/* Laplace-distributed values (scale 0.3) plus one outlier at 50 */
static float *with_outlier(int64_t n) {
    float *x = rand_f32(n);
    for (int64_t i = 0; i < n; i++) {
        double u = fabs((double)x[i]) + 1e-9;
        x[i] = (float)((x[i] < 0 ? -0.3 : 0.3) * -log(u));
    }
    x[n / 2] = 50.0f;
    return x;
}

Test(qrange, minmax_covers_every_value_and_zero) {
    rng_init();
    int64_t n = 10000;
    float *x = rand_f32(n);
    for (int64_t i = 0; i < n; i++) x[i] = x[i] * 0.5f + 1.0f; /* all positive, but 0 is kept */
    x[n / 3] = 50.0f;
    QRange *r = feed(x, n, QRANGE_MINMAX);
    float s;
    int32_t z;
    qrange_params(r, QRANGE_MINMAX, 0, &s, &z);
    cr_assert_eq(z, 0, "zero point %d (seed %u)", z, rng_seed);
    cr_assert_float_eq(s, 50.0f / 255.0f, 1e-6, "scale %g (seed %u)", (double)s, rng_seed);
    free(x), free(r);
}

/* percentile and entropy cut the outlier off; mse weighs its one large error against the
 * rounding error of all the others, and clips less */
Test(qrange, percentile_entropy_and_mse_clip_a_lone_outlier) {
    rng_init();
    int64_t n = 100000;
    float *x = with_outlier(n);
    QRangeMethod ms[] = {QRANGE_PERCENTILE, QRANGE_ENTROPY, QRANGE_MSE};
    for (int k = 0; k < 3; k++) {
        QRange *r = feed(x, n, ms[k]);
        float s;
        int32_t z;
        qrange_params(r, ms[k], 99.9, &s, &z);
        double hi = (255 - z) * (double)s, lo = -z * (double)s;
        cr_assert(hi < (ms[k] == QRANGE_MSE ? 49.0 : 25.0) && hi > 1.0 && lo < -1.0, "method %d: range [%g, %g] (seed %u)", k, lo,
                  hi, rng_seed);
        free(r);
    }
    free(x);
}

/* A ReLU's output: half the values exactly 0, the rest exponential (scale 0.3), no outliers.
 * Zero is exact at any clipping, so the spike must not weigh on the choice; counted against
 * wide ranges (a level's mass spread over its bins) it pushed the search down to ~0.37 of the
 * range, about the 98th percentile of the nonzero values. The bound is a percentile of the
 * data, not a share of its maximum: the largest of 50,000 draws varies from seed to seed
 * (2.8 to 4+), and entropy rightly clips a lone far draw. */
static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

Test(qrange, entropy_ignores_the_spike_at_zero) {
    rng_init();
    int64_t n = 100000, m = 0;
    float *x = rand_f32(n), *nz = malloc((size_t)n * sizeof *nz);
    cr_assert(nz);
    for (int64_t i = 0; i < n; i++) {
        x[i] = i % 2 ? 0.0f : (float)(-0.3 * log(fabs((double)x[i]) + 1e-9));
        if (x[i] > 0.0f) nz[m++] = x[i];
    }
    qsort(nz, (size_t)m, sizeof *nz, cmp_float);
    double q995 = nz[(m * 995) / 1000];
    QRange *r = feed(x, n, QRANGE_ENTROPY);
    float s;
    int32_t z;
    qrange_params(r, QRANGE_ENTROPY, 0, &s, &z);
    double hi = (255 - z) * (double)s, top = r->hi;
    free(x), free(nz), free(r);
    cr_assert(z == 0 && hi >= q995, "range [0, %g] of [0, %g], 99.5th percentile %g (seed %u)",
              hi, top, q995, rng_seed);
}

Test(qrange, a_zero_range_quantizes_with_scale_one) {
    float x[16] = {0};
    QRangeMethod ms[] = {QRANGE_MINMAX, QRANGE_PERCENTILE, QRANGE_ENTROPY, QRANGE_MSE};
    for (int k = 0; k < 4; k++) {
        QRange *r = feed(x, 16, ms[k]);
        float s;
        int32_t z;
        qrange_params(r, ms[k], 99.99, &s, &z);
        cr_assert(s == 1.0f && z == 0, "method %d: scale %g zero point %d", k, (double)s, z);
        free(r);
    }
}

Test(qrange, method_names_parse_and_nonsense_is_refused) {
    QRangeMethod m;
    double p;
    cr_assert(qrange_parse_method("percentile:99.5", &m, &p) && m == QRANGE_PERCENTILE && p == 99.5);
    cr_assert(qrange_parse_method("percentile", &m, &p) && p == 99.99);
    cr_assert(qrange_parse_method("entropy", &m, &p) && m == QRANGE_ENTROPY);
    cr_assert(!qrange_parse_method("percentile:40", &m, &p));
    cr_assert(!qrange_parse_method("percentile:", &m, &p));
    cr_assert(!qrange_parse_method("kl", &m, &p));
}
