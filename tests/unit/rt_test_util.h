/* rt_test_util.h: what the unit tests of the runtime kernels (test_rt_*.c) share: a seeded
 * generator whose seed every failure message names (rng_unit, rng_u32, rng_range), random and
 * poisoned float buffers, and the closeness check relative to the reference's magnitude. Header-only and static inline:
 * each test program uses what it needs. */
#ifndef KILN_RT_TEST_UTIL_H
#define KILN_RT_TEST_UTIL_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static uint64_t rng_state;
static unsigned rng_seed;

/* A fresh seed per call (the clock and a counter), kept in rng_seed for the messages; with
 * KILN_TEST_SEED=N in the environment every call takes seed N, which replays the case a
 * failure message named (a case's data depends only on its seed and its shape). */
static inline void rng_init(void) {
    static unsigned counter;
    const char *fixed = getenv("KILN_TEST_SEED");
    rng_seed = fixed && *fixed ? (unsigned)strtoul(fixed, NULL, 10)
                               : (unsigned)time(NULL) * 2654435761u + counter++;
    rng_state = rng_seed | 1u;
}

static inline double rng_unit(void) { /* uniform in [-1, 1) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / (double)(1ull << 52) - 1.0;
}

static inline uint32_t rng_u32(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

static inline int64_t rng_range(int64_t lo, int64_t hi) { /* uniform in [lo, hi] */
    return lo + (int64_t)(rng_u32() % (uint32_t)(hi - lo + 1));
}

static inline void fill_rand(float *p, int64_t n) {
    for (int64_t i = 0; i < n; i++) p[i] = (float)rng_unit();
}

static inline void poison(float *p, int64_t n) { /* NaN: an unwritten element shows */
    for (int64_t i = 0; i < n; i++) p[i] = NAN;
}

static inline float *rand_f32(int64_t n) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    cr_assert(p);
    fill_rand(p, n);
    return p;
}

static inline float *poisoned_f32(int64_t n) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    cr_assert(p);
    poison(p, n);
    return p;
}

/* |got - want| <= tol * (1 + |want|) for every element. */
static inline void expect_close_tol(const float *got, const double *want, int64_t n, double tol,
                                    const char *what) {
    for (int64_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - want[i]);
        cr_assert(err <= tol * (1.0 + fabs(want[i])), "%s[%lld]: got %g, want %g (seed %u)", what,
                  (long long)i, (double)got[i], want[i], rng_seed);
    }
}

#endif
