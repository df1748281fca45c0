/* Unit tests of the vectorizable float math (runtime/rt_vmath.h): exp, tanh, erf and sigmoid
 * against double libm over the whole float range (every 127th bit pattern of each sign, about
 * 33 million inputs per function, plus the specials), measuring the largest error in ulps of
 * the exact result and the largest absolute error; the figures are printed (the header's
 * comment quotes them) and held to bounds well inside the node tests' rtol 1e-3. The rows of
 * sigmoid and SiLU (rt_act_sigmoid_row_f32: AVX-512, AVX2 or the portable loop, whichever
 * the build has; tests/CMakeLists.txt builds this file once per path) likewise, plus their
 * specials and row remainders. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/rt_act.h"
#include "runtime/rt_vmath.h"

#define STRIDE 127u /* odd, so that every mantissa pattern class is visited */

typedef struct Err {
    double ulp, abs;  /* largest error in ulps of the exact value, largest absolute error */
    float at_ulp, at_abs;
} Err;

static float from_bits(uint32_t u) {
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* The error of got against the exact value want, in ulps of want (as a float) and absolute. */
static void measure(Err *e, float x, float got, double want) {
    double aw = fabs(want);
    int ex;
    frexp(aw < 1.1754943508222875e-38 ? 1.1754943508222875e-38 : aw, &ex);
    double ulp = ldexp(1.0, ex - 24), d = fabs((double)got - want);
    if (d / ulp > e->ulp) e->ulp = d / ulp, e->at_ulp = x;
    if (d > e->abs) e->abs = d, e->at_abs = x;
}

static double ref_sigmoid(double x) { return 1 / (1 + exp(-x)); }

/* Sweeps finite inputs in [lo, hi] (both signs, by bit pattern) for f against ref. */
static Err sweep(float (*f)(float), double (*ref)(double), float lo, float hi) {
    Err e = {0, 0, 0, 0};
    for (uint32_t sign = 0; sign < 2; sign++)
        for (uint64_t u = 0; u < 0x7f800000u; u += STRIDE) {
            float x = from_bits((uint32_t)u | (sign << 31));
            if (x < lo || x > hi) continue;
            measure(&e, x, f(x), ref((double)x));
        }
    return e;
}

static void report(const char *name, Err e) {
    printf("rt_vmath %-8s max %.2f ulp (at %.9g), max abs error %.3g (at %.9g)\n", name, e.ulp,
           (double)e.at_ulp, e.abs, (double)e.at_abs);
}

Test(rt_vmath, exp_within_2_ulp) {
    /* the normal range of the result; below -86.64 the result is 0 by design (checked below) */
    Err e = sweep(rt_vexp_f32, exp, -86.64f, 88.72f);
    report("exp", e);
    cr_expect(e.ulp <= 2.0, "exp: %.2f ulp at %.9g", e.ulp, (double)e.at_ulp);
}

Test(rt_vmath, tanh_within_4_ulp) {
    Err e = sweep(rt_vtanh_f32, tanh, -INFINITY, INFINITY);
    report("tanh", e);
    cr_expect(e.ulp <= 4.0, "tanh: %.2f ulp at %.9g", e.ulp, (double)e.at_ulp);
    cr_expect(e.abs <= 2e-7, "tanh: abs error %g at %.9g", e.abs, (double)e.at_abs);
}

Test(rt_vmath, erf_within_4_ulp) {
    Err e = sweep(rt_verf_f32, erf, -INFINITY, INFINITY);
    report("erf", e);
    cr_expect(e.ulp <= 4.0, "erf: %.2f ulp at %.9g", e.ulp, (double)e.at_ulp);
    cr_expect(e.abs <= 2e-7, "erf: abs error %g at %.9g", e.abs, (double)e.at_abs);
}

Test(rt_vmath, sigmoid_within_4_ulp) {
    /* above -86.64: below it the result is 0 (rt_vexp_f32 flushes to 0) */
    Err e = sweep(rt_vsigmoid_f32, ref_sigmoid, -86.64f, INFINITY);
    report("sigmoid", e);
    cr_expect(e.ulp <= 4.0, "sigmoid: %.2f ulp at %.9g", e.ulp, (double)e.at_ulp);
}

Test(rt_vmath, specials) {
    cr_expect(rt_vexp_f32(-INFINITY) == 0.0f);
    cr_expect(rt_vexp_f32(-100.0f) == 0.0f);
    cr_expect(isinf(rt_vexp_f32(INFINITY)) && rt_vexp_f32(INFINITY) > 0);
    cr_expect(isinf(rt_vexp_f32(89.0f)));
    cr_expect(rt_vexp_f32(0.0f) == 1.0f);
    cr_expect(isnan(rt_vexp_f32(NAN)));
    cr_expect(rt_vtanh_f32(INFINITY) == 1.0f && rt_vtanh_f32(-INFINITY) == -1.0f);
    cr_expect(rt_vtanh_f32(0.0f) == 0.0f && isnan(rt_vtanh_f32(NAN)));
    cr_expect(rt_verf_f32(INFINITY) == 1.0f && rt_verf_f32(-INFINITY) == -1.0f);
    cr_expect(rt_verf_f32(0.0f) == 0.0f && isnan(rt_verf_f32(NAN)));
    cr_expect(rt_vsigmoid_f32(-INFINITY) == 0.0f && rt_vsigmoid_f32(INFINITY) == 1.0f);
    cr_expect(rt_vsigmoid_f32(0.0f) == 0.5f && isnan(rt_vsigmoid_f32(NAN)));
}

/* rt_vexp_nz_f32 is rt_vexp_f32 but for a floor of e^RT_VM_EXP_LO, which 1 + e^x cannot
 * tell from 0: every float's 1 / (1 + e^x) is the same bits with either. */
Test(rt_vmath, exp_without_its_zero_select_changes_no_sigmoid) {
    const float floor_lo = rt_vexp_f32(RT_VM_EXP_LO);
    uint32_t diff = 0, wrong = 0;
    for (uint64_t u = 0; u < (1ull << 32); u += 4099) { /* every exponent and sign, NaN, inf */
        float x, a, b, ea, eb;
        uint32_t bits = (uint32_t)u;
        memcpy(&x, &bits, sizeof x);
        ea = rt_vexp_nz_f32(x), eb = rt_vexp_f32(x);
        a = 1.0f / (1.0f + ea), b = 1.0f / (1.0f + eb);
        diff += memcmp(&a, &b, sizeof a) != 0;
        wrong += x < RT_VM_EXP_LO ? ea != floor_lo : memcmp(&ea, &eb, sizeof ea) != 0;
    }
    cr_expect(diff == 0, "%u values of 1 / (1 + e^x) differ", diff);
    cr_expect(wrong == 0, "%u values of e^x are neither rt_vexp_f32's nor the floor", wrong);
}

static double ref_silu(double x) { return x / (1 + exp(-x)); }

/* rt_act_sigmoid_row_f32 over the finite floats in [lo, hi] (both signs, by bit pattern, in
 * rows of up to 1000 values) against ref. */
static Err sweep_row(int silu, float lo, float hi) {
    static float x[1000], y[1000];
    Err e = {0, 0, 0, 0};
    int n = 0, i;
    for (uint32_t sign = 0; sign < 2; sign++)
        for (uint64_t u = 0; u < 0x7f800000u + STRIDE; u += STRIDE) {
            int flush = u >= 0x7f800000u;
            if (!flush) {
                float v = from_bits((uint32_t)u | (sign << 31));
                if (v >= lo && v <= hi) x[n++] = v;
            }
            if (n == 1000 || (flush && n > 0)) {
                memcpy(y, x, sizeof(float) * (size_t)n);
                rt_act_sigmoid_row_f32(y, n, silu);
                for (i = 0; i < n; i++)
                    measure(&e, x[i], y[i], (silu ? ref_silu : ref_sigmoid)((double)x[i]));
                n = 0;
            }
        }
    return e;
}

/* Within 5 ulp on [-20, 20] (where sigmoid is above 2e-9), 8 elsewhere above -86.64: the
 * vector forms' one-FMA reduction (rt_vmath.h) adds fl(ln 2)'s error times m (~1 ulp at
 * x = -17, ~3 more at m = 120) to the polynomial's 3; below -86.64 the result is below
 * 2.4e-38. */
static void expect_row(int silu, const char *name) {
    Err c = sweep_row(silu, -20.0f, 20.0f), e = sweep_row(silu, -86.64f, INFINITY);
    Err t = sweep_row(silu, -INFINITY, -86.64f);
    report(name, e);
    cr_expect(c.ulp <= 5.0, "%s: %.2f ulp at %.9g", name, c.ulp, (double)c.at_ulp);
    cr_expect(e.ulp <= 8.0, "%s: %.2f ulp at %.9g", name, e.ulp, (double)e.at_ulp);
    /* SiLU: x / (1 + e^-x); below -88.8 the exp is +inf and the quotient -0 */
    cr_expect(t.abs <= (silu ? 1e-35 : 2.4e-38), "%s: abs error %g at %.9g", name, t.abs,
              (double)t.at_abs);
}

Test(rt_vmath, sigmoid_rows_within_5_ulp_on_20) { expect_row(0, "sigmoid row"); }

Test(rt_vmath, silu_rows_within_5_ulp_on_20) { expect_row(1, "silu row"); }

Test(rt_vmath, sigmoid_and_silu_rows_specials) {
    float x[8] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e30f, -1e30f, -88.9f};
    float s[8], q[8];
    memcpy(s, x, sizeof x);
    memcpy(q, x, sizeof x);
    rt_act_sigmoid_row_f32(s, 8, 0);
    rt_act_sigmoid_row_f32(q, 8, 1);
    cr_expect(isnan(s[0]) && isnan(q[0]), "NaN: %g %g", (double)s[0], (double)q[0]);
    cr_expect(s[1] == 1.0f && q[1] == INFINITY, "+inf: %g %g", (double)s[1], (double)q[1]);
    /* SiLU(-inf) is -inf / +inf, NaN, as y / (1 + e^-y) in any form */
    cr_expect(s[2] == 0.0f && isnan(q[2]), "-inf: %g %g", (double)s[2], (double)q[2]);
    cr_expect(s[3] == 0.5f && q[3] == 0.0f && !signbit(q[3]), "0: %g %g", (double)s[3],
              (double)q[3]);
    cr_expect(s[4] == 0.5f && q[4] == 0.0f && signbit(q[4]), "-0: %g %g", (double)s[4],
              (double)q[4]);
    cr_expect(s[5] == 1.0f && q[5] == 1e30f, "1e30: %g %g", (double)s[5], (double)q[5]);
    cr_expect(s[6] == 0.0f && q[6] == 0.0f, "-1e30: %g %g", (double)s[6], (double)q[6]);
    cr_expect(s[7] == 0.0f && q[7] == 0.0f, "-88.9: %g %g", (double)s[7], (double)q[7]);
}

/* Every row length 0..40 at every start 0..3 (the vector loops' remainders, masked or not):
 * the row's values within 5 ulp of rt_vsigmoid_f32's (on [-16, 16)), the values around it
 * untouched. */
Test(rt_vmath, sigmoid_and_silu_rows_keep_their_remainders) {
    float x[48], y[48];
    unsigned seed = 99u;
    int silu, n, off, i;
    for (silu = 0; silu < 2; silu++)
        for (n = 0; n <= 40; n++)
            for (off = 0; off < 4; off++) {
                for (i = 0; i < 48; i++) {
                    seed = seed * 1103515245u + 12345u;
                    x[i] = (float)((seed >> 8) & 0xffff) / 2048.0f - 16.0f; /* [-16, 16) */
                    y[i] = x[i];
                }
                rt_act_sigmoid_row_f32(y + off, n, silu);
                for (i = 0; i < 48; i++) {
                    if (i < off || i >= off + n) {
                        cr_assert(memcmp(&y[i], &x[i], sizeof y[i]) == 0,
                                  "silu %d, n %d, start %d: element %d written", silu, n, off, i);
                        continue;
                    }
                    {
                        double want = rt_vsigmoid_f32(x[i]) * (silu ? (double)x[i] : 1.0);
                        Err e = {0, 0, 0, 0};
                        measure(&e, x[i], y[i], want);
                        cr_assert(e.ulp <= 5.0, "silu %d, n %d, start %d, x %g: %g, want %g",
                                  silu, n, off, (double)x[i], (double)y[i], want);
                    }
                }
            }
}

#if defined(__AVX512F__)
static double ref_gelu(double x) { return 0.5 * x * (1 + erf(x * 0.70710678118654752)); }

/* rt_vgelu16_f32 (the packed products' GELU epilogue) over the floats of [-20, 20] (by bit
 * pattern, 16 at a time): within 3 ulp of x for normal x > 0 (the rational erf is a few ulp
 * off near 1: 2.8 ulp at x = 5.55, where erf(x / sqrt 2) is 1 - 4e-8), 1.2e-6 absolute for x
 * <= 0 (1 + erf cancels there: 1.1e-6 at -5.55; rt_verf_f32's form, whose erf is within 1
 * ulp of 1 there: 4.5e-7); and the specials */
Test(rt_vmath, gelu16_within_its_bounds) {
    static float x[16], y[16];
    Err e = {0, 0, 0, 0};
    double worst_pos = 0, worst_neg = 0;
    int n = 0;
    for (uint32_t sign = 0; sign < 2; sign++)
        for (uint64_t u = 0; u < 0x7f800000u; u += STRIDE) {
            float v = from_bits((uint32_t)u | (sign << 31));
            if (v < -20.0f || v > 20.0f) continue;
            x[n++] = v;
            if (n < 16) continue;
            _mm512_storeu_ps(y, rt_vgelu16_f32(_mm512_loadu_ps(x)));
            for (int i = 0; i < 16; i++) {
                double want = ref_gelu((double)x[i]), d = fabs((double)y[i] - want);
                measure(&e, x[i], y[i], want);
                if (x[i] > 1e-30f && d / ((double)x[i] * 0x1p-23) > worst_pos)
                    worst_pos = d / ((double)x[i] * 0x1p-23);
                if (x[i] <= 0 && d > worst_neg) worst_neg = d;
            }
            n = 0;
        }
    printf("rt_vmath gelu16   max abs error %.3g (at %.9g); x > 1e-30: %.2f ulp of x; x <= 0: abs "
           "%.3g\n", e.abs, (double)e.at_abs, worst_pos, worst_neg);
    cr_expect(worst_pos <= 3.0, "gelu16: %.2f ulp of x", worst_pos);
    cr_expect(worst_neg <= 1.2e-6, "gelu16: abs error %g for x <= 0", worst_neg);
    float s[16] = {NAN, INFINITY, 0.0f, -0.0f, 1e30f, -1e30f, -5.7f, 5.7f,
                   1.0f, -1.0f, 3.0f, -3.0f, 0.5f, -0.5f, 1e-30f, -1e-30f};
    _mm512_storeu_ps(y, rt_vgelu16_f32(_mm512_loadu_ps(s)));
    cr_expect(isnan(y[0]) && y[1] == INFINITY && y[2] == 0.0f && y[3] == 0.0f &&
                  y[4] == 1e30f && y[5] == 0.0f,
              "specials: %g %g %g %g %g %g", (double)y[0], (double)y[1], (double)y[2],
              (double)y[3], (double)y[4], (double)y[5]);
}
#endif
