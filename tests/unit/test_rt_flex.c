/* Unit tests of the FlexAttention kernels (runtime/rt_flex.h): the fused kernel against a
 * naive attention written here in double (grouped heads, different V head size, every input
 * type and softmax precision), the row helpers against the same reference, and the softmax
 * on its own, on fresh random inputs with outputs poisoned before the run. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "runtime/rt_flex.h"

#define TOL_F32 2e-5 /* float softmax and products: a few ulps of float on values near 1 */
#define TOL_F64 1e-12
#define TOL_F16 4e-3 /* a 1-ulp rounding of a score in half moves the output this much */
#define TOL_BF16 3e-2

static unsigned rng_state = 777u;

static double drand(void) { /* in [-2, 2) */
    rng_state = rng_state * 1103515245u + 12345u;
    return (double)((rng_state >> 8) & 0xffff) / 16384.0 - 2.0;
}

/* Shapes of one test case. */
typedef struct Case {
    int64_t B, Hq, Hkv, L, S, D, Dv;
} Case;

static const Case cases[] = {
    {2, 4, 4, 8, 6, 16, 16}, /* plain */
    {2, 8, 2, 4, 6, 16, 16}, /* grouped heads */
    {1, 2, 1, 3, 5, 8, 12},  /* grouped, different V head size */
    {1, 1, 1, 1, 1, 4, 3},   /* one key: the probability is 1 */
};
#define N_CASES (sizeof cases / sizeof cases[0])

static int64_t numel_q(const Case *c) { return c->B * c->Hq * c->L * c->D; }
static int64_t numel_k(const Case *c) { return c->B * c->Hkv * c->S * c->D; }
static int64_t numel_v(const Case *c) { return c->B * c->Hkv * c->S * c->Dv; }
static int64_t numel_y(const Case *c) { return c->B * c->Hq * c->L * c->Dv; }

/* Naive attention in double: y = softmax(q k^T * scale) v per (b, h), head h reading K/V
 * head h / (Hq / Hkv). q, k, v as doubles (the values the kernel sees after loading). */
static void ref_attention(const Case *c, const double *q, const double *k, const double *v,
                          double scale, double *y) {
    int64_t group = c->Hq / c->Hkv;
    double *s = malloc((size_t)c->S * sizeof *s);
    cr_assert(s);
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t h = 0; h < c->Hq; h++)
            for (int64_t i = 0; i < c->L; i++) {
                const double *qr = q + ((b * c->Hq + h) * c->L + i) * c->D;
                int64_t kv = b * c->Hkv + h / group;
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < c->S; j++) {
                    double acc = 0;
                    for (int64_t d = 0; d < c->D; d++) acc += qr[d] * k[(kv * c->S + j) * c->D + d];
                    s[j] = acc * scale;
                    if (s[j] > mx) mx = s[j];
                }
                for (int64_t j = 0; j < c->S; j++) sum += s[j] = exp(s[j] - mx);
                for (int64_t e = 0; e < c->Dv; e++) {
                    double acc = 0;
                    for (int64_t j = 0; j < c->S; j++)
                        acc += s[j] / sum * v[(kv * c->S + j) * c->Dv + e];
                    y[((b * c->Hq + h) * c->L + i) * c->Dv + e] = acc;
                }
            }
    free(s);
}

/* Random q, k, v as doubles exactly representable in the kernel's input type. */
typedef double (*RoundFn)(double);
static double round_f32(double x) { return (float)x; }
static double round_f64(double x) { return x; }
static double round_f16(double x) { return rt_f16_to_f32(rt_f32_to_f16((float)x)); }
static double round_bf16(double x) { return rt_bf16_to_f32(rt_f32_to_bf16((float)x)); }

static double *rand_vec(int64_t n, RoundFn rnd) {
    double *x = malloc((size_t)(n ? n : 1) * sizeof *x);
    cr_assert(x);
    for (int64_t i = 0; i < n; i++) x[i] = rnd(drand());
    return x;
}

static void expect_close(const double *got, const double *want, int64_t n, double tol,
                         const char *what, size_t ci) {
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])),
                  "%s, case %zu, element %lld: got %.9g, expected %.9g", what, ci, (long long)i,
                  got[i], want[i]);
}

/* Runs one fused kernel instance over every case: T is the storage type, LOAD/STORE convert
 * element to/from double, FN the kernel, A the softmax precision. */
#define CHECK_FUSED(T, A, FN, RND, LOAD, STORE, POISON, TOL, WHAT)                               \
    for (size_t ci = 0; ci < N_CASES; ci++) {                                                   \
        const Case *c = &cases[ci];                                                             \
        double *q = rand_vec(numel_q(c), RND), *k = rand_vec(numel_k(c), RND);                  \
        double *v = rand_vec(numel_v(c), RND);                                                  \
        double *want = malloc((size_t)numel_y(c) * sizeof *want);                               \
        double *got = malloc((size_t)numel_y(c) * sizeof *got);                                 \
        T *tq = malloc((size_t)numel_q(c) * sizeof *tq);                                        \
        T *tk = malloc((size_t)numel_k(c) * sizeof *tk);                                        \
        T *tv = malloc((size_t)numel_v(c) * sizeof *tv);                                        \
        T *ty = malloc((size_t)numel_y(c) * sizeof *ty);                                        \
        A *row = malloc((size_t)c->S * sizeof *row);                                            \
        cr_assert(want && got && tq && tk && tv && ty && row);                                  \
        for (int64_t i = 0; i < numel_q(c); i++) tq[i] = STORE(q[i]);                           \
        for (int64_t i = 0; i < numel_k(c); i++) tk[i] = STORE(k[i]);                           \
        for (int64_t i = 0; i < numel_v(c); i++) tv[i] = STORE(v[i]);                           \
        for (int64_t i = 0; i < numel_y(c); i++) ty[i] = POISON;                                \
        double scale = 1.0 / sqrt((double)c->D);                                                \
        FN(tq, tk, tv, ty, c->B, c->Hq, c->Hkv, c->L, c->S, c->D, c->Dv,                        \
           (double)sqrtf((float)scale), row);                                                   \
        ref_attention(c, q, k, v, scale, want);                                                 \
        for (int64_t i = 0; i < numel_y(c); i++) got[i] = LOAD(ty[i]);                          \
        expect_close(got, want, numel_y(c), TOL, WHAT, ci);                                     \
        free(q), free(k), free(v), free(want), free(got);                                       \
        free(tq), free(tk), free(tv), free(ty), free(row);                                      \
    }

#define LD_PLAIN(x) ((double)(x))
#define ST_F32(x) ((float)(x))
#define ST_F64(x) ((double)(x))
#define LD_F16(x) ((double)rt_f16_to_f32(x))
#define ST_F16(x) rt_f32_to_f16((float)(x))
#define LD_BF16(x) ((double)rt_bf16_to_f32(x))
#define ST_BF16(x) rt_f32_to_bf16((float)(x))
#define POISON_HALF 0x7e00u /* a NaN in half and in bfloat16 alike */

Test(rt_flex, float_attention_matches_naive_attention_with_grouped_heads) {
    CHECK_FUSED(float, float, rt_flex_attention_f32_f32, round_f32, LD_PLAIN, ST_F32, NAN,
                TOL_F32, "f32/f32")
}

Test(rt_flex, float_attention_in_double_precision_matches) {
    CHECK_FUSED(float, double, rt_flex_attention_f32_f64, round_f32, LD_PLAIN, ST_F32, NAN,
                TOL_F32, "f32/f64")
}

Test(rt_flex, double_attention_matches_to_double_precision) {
    /* the pre-scale sqrt(scale) is taken in float, as ONNX's reference does: compare against
     * the same rounded scale */
    for (size_t ci = 0; ci < N_CASES; ci++) {
        const Case *c = &cases[ci];
        double *q = rand_vec(numel_q(c), round_f64), *k = rand_vec(numel_k(c), round_f64);
        double *v = rand_vec(numel_v(c), round_f64);
        double *want = malloc((size_t)numel_y(c) * sizeof *want);
        double *y = malloc((size_t)numel_y(c) * sizeof *y);
        double *row = malloc((size_t)c->S * sizeof *row);
        cr_assert(want && y && row);
        for (int64_t i = 0; i < numel_y(c); i++) y[i] = NAN;
        double ss = (double)sqrtf((float)(1.0 / sqrt((double)c->D)));
        rt_flex_attention_f64_f64(q, k, v, y, c->B, c->Hq, c->Hkv, c->L, c->S, c->D, c->Dv, ss,
                                  row);
        ref_attention(c, q, k, v, ss * ss, want);
        expect_close(y, want, numel_y(c), TOL_F64, "f64/f64", ci);
        free(q), free(k), free(v), free(want), free(y), free(row);
    }
}

Test(rt_flex, double_attention_in_float_precision_matches) {
    CHECK_FUSED(double, float, rt_flex_attention_f64_f32, round_f64, LD_PLAIN, ST_F64, NAN,
                TOL_F32, "f64/f32")
}

Test(rt_flex, half_attention_matches_within_half_precision) {
    CHECK_FUSED(uint16_t, float, rt_flex_attention_f16_f32, round_f16, LD_F16, ST_F16,
                POISON_HALF, TOL_F16, "f16/f32")
}

Test(rt_flex, bfloat16_attention_matches_within_bfloat16_precision) {
    CHECK_FUSED(uint16_t, float, rt_flex_attention_bf16_f32, round_bf16, LD_BF16, ST_BF16,
                POISON_HALF, TOL_BF16, "bf16/f32")
}

Test(rt_flex, row_helpers_chain_to_the_fused_kernel) {
    /* scores, softmax and apply called one row at a time give the fused kernel's bytes */
    const Case *c = &cases[1];
    int64_t group = c->Hq / c->Hkv;
    float *q = malloc((size_t)numel_q(c) * sizeof *q), *k = malloc((size_t)numel_k(c) * sizeof *k);
    float *v = malloc((size_t)numel_v(c) * sizeof *v);
    float *y1 = malloc((size_t)numel_y(c) * sizeof *y1);
    float *y2 = malloc((size_t)numel_y(c) * sizeof *y2);
    float row[16];
    cr_assert(q && k && v && y1 && y2 && c->S <= 16);
    for (int64_t i = 0; i < numel_q(c); i++) q[i] = (float)drand();
    for (int64_t i = 0; i < numel_k(c); i++) k[i] = (float)drand();
    for (int64_t i = 0; i < numel_v(c); i++) v[i] = (float)drand();
    for (int64_t i = 0; i < numel_y(c); i++) y1[i] = y2[i] = NAN;
    rt_flex_attention_f32_f32(q, k, v, y1, c->B, c->Hq, c->Hkv, c->L, c->S, c->D, c->Dv, 0.5,
                              row);
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t h = 0; h < c->Hq; h++)
            for (int64_t i = 0; i < c->L; i++) {
                int64_t qi = (b * c->Hq + h) * c->L + i, kv = b * c->Hkv + h / group;
                rt_flex_scores_f32_f32(q + qi * c->D, k + kv * c->S * c->D, c->S, c->D, 0.5, row);
                rt_flex_softmax_f32(row, c->S);
                rt_flex_apply_f32_f32(row, v + kv * c->S * c->Dv, c->S, c->Dv, y2 + qi * c->Dv);
            }
    for (int64_t i = 0; i < numel_y(c); i++)
        cr_assert(y1[i] == y2[i], "element %lld: fused %g, by rows %g", (long long)i, y1[i], y2[i]);
    free(q), free(k), free(v), free(y1), free(y2);
}

Test(rt_flex, scores_round_the_prescaled_inputs_to_half) {
    /* q = k = 1.1 (rounded to half), sqrt(scale) = 0.7: each pre-scaled factor is rounded to
     * half before the dot product, as ONNX's reference computes in float16 */
    uint16_t q[4], kk[8];
    float row[2] = {NAN, NAN};
    for (int d = 0; d < 4; d++) q[d] = rt_f32_to_f16(1.1f);
    for (int d = 0; d < 8; d++) kk[d] = rt_f32_to_f16(d < 4 ? 1.1f : -0.3f);
    rt_flex_scores_f16_f32(q, kk, 2, 4, 0.7, row);
    float ss = rt_f16_to_f32(rt_f32_to_f16(0.7f));
    float qs = rt_f16_to_f32(rt_f32_to_f16(rt_f16_to_f32(q[0]) * ss));
    float k1 = rt_f16_to_f32(rt_f32_to_f16(rt_f16_to_f32(kk[4]) * ss));
    cr_assert_eq(row[0], rt_f16_to_f32(rt_f32_to_f16(4 * qs * qs)));
    cr_assert_eq(row[1], rt_f16_to_f32(rt_f32_to_f16(4 * qs * k1)));
}

Test(rt_flex, softmax_sums_to_one_and_keeps_order) {
    double row[9], want[9], sum = 0, mx = -INFINITY;
    for (int j = 0; j < 9; j++) {
        row[j] = 8 * drand();
        if (row[j] > mx) mx = row[j];
    }
    for (int j = 0; j < 9; j++) sum += want[j] = exp(row[j] - mx);
    rt_flex_softmax_f64(row, 9);
    for (int j = 0; j < 9; j++)
        cr_assert(fabs(row[j] - want[j] / sum) <= TOL_F64, "element %d: %.17g vs %.17g", j,
                  row[j], want[j] / sum);
}

Test(rt_flex, softmax_of_a_masked_out_row_is_nan_as_in_the_reference) {
    float row[3] = {-INFINITY, -INFINITY, -INFINITY};
    rt_flex_softmax_f32(row, 3);
    for (int j = 0; j < 3; j++) cr_assert(isnan(row[j]));
}
