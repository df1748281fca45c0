/* Unit tests of the vectorizable float math (runtime/rt_vmath.h): exp, tanh, erf and sigmoid
 * against double libm over the whole float range (every 127th bit pattern of each sign, about
 * 33 million inputs per function, plus the specials), measuring the largest error in ulps of
 * the exact result and the largest absolute error; the figures are printed (the header's
 * comment quotes them) and held to bounds well inside the node tests' rtol 1e-3. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

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
