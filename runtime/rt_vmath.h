/* rt_vmath.h: float exp, tanh, erf and sigmoid written so that a compiler vectorizes the loops
 * that call them: no libm call, no branch (both sides of a range split are computed and one is
 * selected), float arithmetic only (a Cortex-M4F has no double unit), the scale 2^n built in
 * the exponent bits through memcpy. Used by softmax (rt_softmax.h), the fused activation
 * epilogues (rt_act.h) and the elementwise emitter's float expressions (Exp, Tanh, Erf,
 * Sigmoid, SiLU/Swish, GELU, Softplus, Mish, Elu, ...).
 *
 * Accuracy over the float range, measured by tests/unit/test_rt_vmath.c against double libm
 * (which holds them to 2, 4, 4 and 4 ulp): exp 1.32 ulp, tanh 2.82 ulp (1.2e-7 absolute), erf
 * 2.39 ulp (1.4e-7 absolute), sigmoid 3.18 ulp; the node tests' tolerance is rtol 1e-3.
 * Specials: exp(-inf) = 0, exp(+inf) = +inf, exp(NaN) = NaN; inputs below -86.64 give 0 (no
 * denormals), above 88.72 give +inf; tanh and erf saturate to +-1 and keep NaN.
 *
 * Coefficients: least-squares fits (relative error, 4000 Chebyshev nodes, in double) of
 * exp(r) = 1 + r + r^2 P(r) on |r| <= ln2/2, tanh(x) = x P(x^2) on |x| <= 0.625,
 * erf(x) = x P(x^2) on |x| <= 1 and erfc(x) = exp(-x^2) Q(1/x) on 1 <= x <= 4 (erf(4) rounds
 * to 1 in float). C99. */
#ifndef KILN_RT_VMATH_H
#define KILN_RT_VMATH_H

#include "rt_common.h"

RT_API uint32_t rt_vm_bits(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

RT_API float rt_vm_float(uint32_t u) {
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* v with the sign of s. */
RT_API float rt_vm_copysign(float v, float s) {
    return rt_vm_float((rt_vm_bits(v) & 0x7fffffffu) | (rt_vm_bits(s) & 0x80000000u));
}

RT_API float rt_vm_abs(float v) { return rt_vm_float(rt_vm_bits(v) & 0x7fffffffu); }

/* c ? a : b through a bit mask: GCC does not if-convert a ?: whose arms compute (under its
 * default -ftrapping-math it will not speculate them), and leaves the loop scalar. */
RT_API float rt_vm_sel(int c, float a, float b) {
    uint32_t m = 0u - (uint32_t)(c != 0);
    return rt_vm_float((rt_vm_bits(a) & m) | (rt_vm_bits(b) & ~m));
}

#define RT_VM_EXP_HI 88.72283f   /* above: +inf */
#define RT_VM_EXP_LO -86.64f    /* below: 0 (keeps n >= -125: 2^(n-1) stays normal) */
#define RT_VM_LOG2E 1.44269504f
#define RT_VM_LN2_HI 0.693145752f /* ln 2 in two parts: n * LN2_HI is exact for |n| < 2^9 */
#define RT_VM_LN2_LO 1.42860677e-6f
#define RT_VM_ROUND 12582912.0f /* 1.5 * 2^23: adding it rounds to an integer, kept in the bits */

/* e^x, except that below RT_VM_EXP_LO it gives e^RT_VM_EXP_LO (2.4e-38) instead of 0: for
 * callers that cannot tell the two apart (1 + e^x rounds to 1 either way, as in sigmoid and
 * SiLU) or never go there (tanh, erf), rt_vexp_f32 less one select: about 15% faster in a
 * vectorized loop, the same bits. The magic-number rounding keeps n in the low mantissa bits
 * of t, so no float-to-int conversion (undefined for NaN) is needed; the integer work is
 * unsigned. */
RT_API float rt_vexp_nz_f32(float x) {
    float c = rt_vm_sel(x > RT_VM_EXP_HI, RT_VM_EXP_HI, x);
    c = rt_vm_sel(c < RT_VM_EXP_LO, RT_VM_EXP_LO, c);
    float t = c * RT_VM_LOG2E + RT_VM_ROUND;
    float n = t - RT_VM_ROUND;
    float r = c - n * RT_VM_LN2_HI;
    r = r - n * RT_VM_LN2_LO;
    float p = 1.38938344e-3f;
    p = p * r + 8.36312576e-3f;
    p = p * r + 4.16669426e-2f;
    p = p * r + 1.66665775e-1f;
    p = p * r + 4.99999994e-1f;
    p = 1.0f + r + r * r * p;
    /* bits(t) - bits(ROUND) = n, in [-125, 128] after the clamp: 2^n = 2 * 2^(n-1), whose
     * biased exponent n + 126 is in [1, 254] */
    uint32_t e = (rt_vm_bits(t) - rt_vm_bits(RT_VM_ROUND) + 126u) << 23;
    float y = (p * 2.0f) * rt_vm_float(e);
    return rt_vm_sel(x > RT_VM_EXP_HI, (float)INFINITY, y);
}

/* e^x. */
RT_API float rt_vexp_f32(float x) { return rt_vm_sel(x < RT_VM_EXP_LO, 0.0f, rt_vexp_nz_f32(x)); }

/* 1 / (1 + e^-x): e^-x is +inf below -88.7 (y = 0) and at most 2.4e-38 above 86.64 (y = 1). */
RT_API float rt_vsigmoid_f32(float x) { return 1.0f / (1.0f + rt_vexp_nz_f32(-x)); }

/* Sigmoid and SiLU on whole vectors, for the fused epilogues' rows (rt_act_row_f32): the
 * loops above vectorize, but to 8 lanes (GCC tunes Zen 4 as Zen 3), with both clamps of the
 * exp as selects and e^x built in the exponent bits; here each 16 (AVX-512) or 8 (AVX2+FMA)
 * values take: a clamp of x (two min/max, NaN passing), m = round(-x log2 e), r = x + m ln2
 * (one FMA: fl(ln2)'s error times |m| <= 128 stays below 2.5e-7 of r), e^-r = P(r) of
 * degree 5 (least squares on |r| <= ln2/2, 1.7e-7 relative in float Horner), 2^m P(r) by
 * vscalefps (AVX-512: 2^m of any m, overflow to +inf) or in the exponent bits (AVX2: m
 * clamped to [-126, 128], 2^128 is the +inf pattern), d = 1 + e^-x, then 1 / d or x / d:
 * one division (Zen 4's divider runs beside the FMA pipes; a reciprocal estimate and its
 * Newton step cost more FMAs than the division cost, 0.22 against 0.18 ns a value).
 * Measured (a loop over 4096 values in L1, Zen 4): 0.18 ns a SiLU value against 0.41 for the
 * loop of rt_vsigmoid_f32's form; Cody and Waite's second FMA (ln 2 in two parts) cost 15%
 * more. Error (tests/unit/test_rt_vmath.c prints it): 4.2 ulp on [-20, 20], 6 ulp beyond
 * (fl(ln 2)'s error times m), against rt_vsigmoid_f32's 3.2; x below -88.8 gives d = +inf
 * (sigmoid 0, SiLU -0, NaN at -inf, as y / (1 + e^-y) gives), x above 87.3 gives e^-x ~ 0
 * (sigmoid 1, SiLU x), NaN gives NaN. */
#define RT_VM_SIG_LO -88.8f /* -x log2 e rounds to 128: 2^m is +inf */
#define RT_VM_SIG_HI 87.3f  /* -x log2 e rounds to -126: 2^m is normal */
#define RT_VM_SIG_C1 -0.9999997019767761f /* e^-r = 1 + r (C1 + r (C2 + ...)) */
#define RT_VM_SIG_C2 0.4999915063381195f
#define RT_VM_SIG_C3 -0.1666763573884964f
#define RT_VM_SIG_C4 0.04189793020486832f
#define RT_VM_SIG_C5 -0.008290311321616173f
#define RT_VM_LN2 0.693147182f /* fl(ln 2) */

#if defined(__AVX512F__) && !defined(__CUDACC__)
#include <immintrin.h>
/* 1 + e^-x of 16 values (x clamped as above; NaN passes: max and min return their second
 * operand where one is NaN) */
static inline __m512 rt_vsig_den16_f32(__m512 x) {
    const __m512 c = _mm512_min_ps(_mm512_set1_ps(RT_VM_SIG_HI),
                                   _mm512_max_ps(_mm512_set1_ps(RT_VM_SIG_LO), x));
    const __m512 m = _mm512_roundscale_ps(_mm512_mul_ps(c, _mm512_set1_ps(-RT_VM_LOG2E)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 r = _mm512_fmadd_ps(m, _mm512_set1_ps(RT_VM_LN2), c);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(RT_VM_SIG_C5), r, _mm512_set1_ps(RT_VM_SIG_C4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(RT_VM_SIG_C3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(RT_VM_SIG_C2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(RT_VM_SIG_C1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    /* m = 128 at c = RT_VM_SIG_LO: P(r) 2^128 is +inf as in the AVX2 form (P(r) >= 1) */
    return _mm512_add_ps(_mm512_scalef_ps(p, m), _mm512_set1_ps(1.0f));
}

/* sigmoid of 16 values */
static inline __m512 rt_vsigmoid16_f32(__m512 x) {
    return _mm512_div_ps(_mm512_set1_ps(1.0f), rt_vsig_den16_f32(x));
}

/* SiLU (x sigmoid x) of 16 values */
static inline __m512 rt_vsilu16_f32(__m512 x) { return _mm512_div_ps(x, rt_vsig_den16_f32(x)); }
#endif

#if defined(__AVX2__) && defined(__FMA__) && !defined(__CUDACC__)
#include <immintrin.h>
/* 1 + e^-x of 8 values, as rt_vsig_den16_f32 (2^m in the exponent bits) */
static inline __m256 rt_vsig_den8_f32(__m256 x) {
    const __m256 c = _mm256_min_ps(_mm256_set1_ps(RT_VM_SIG_HI),
                                   _mm256_max_ps(_mm256_set1_ps(RT_VM_SIG_LO), x));
    const __m256 m = _mm256_round_ps(_mm256_mul_ps(c, _mm256_set1_ps(-RT_VM_LOG2E)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 r = _mm256_fmadd_ps(m, _mm256_set1_ps(RT_VM_LN2), c);
    /* biased exponent m + 127 in [1, 255]: 2^m, or +inf at m = 128 (NaN: any) */
    const __m256i e = _mm256_slli_epi32(
        _mm256_add_epi32(_mm256_cvtps_epi32(m), _mm256_set1_epi32(127)), 23);
    __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(RT_VM_SIG_C5), r, _mm256_set1_ps(RT_VM_SIG_C4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(RT_VM_SIG_C3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(RT_VM_SIG_C2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(RT_VM_SIG_C1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    return _mm256_fmadd_ps(p, _mm256_castsi256_ps(e), _mm256_set1_ps(1.0f));
}

/* sigmoid of 8 values */
static inline __m256 rt_vsigmoid8_f32(__m256 x) {
    return _mm256_div_ps(_mm256_set1_ps(1.0f), rt_vsig_den8_f32(x));
}

/* SiLU of 8 values */
static inline __m256 rt_vsilu8_f32(__m256 x) { return _mm256_div_ps(x, rt_vsig_den8_f32(x)); }
#endif

/* tanh x: x P(x^2) near 0 (1 - 2/(e^2x + 1) loses the low bits there), 1 - 2/(e^2|x| + 1)
 * beyond, with the sign of x. |x| is clamped to 10, where tanh rounds to 1. */
RT_API float rt_vtanh_f32(float x) {
    float a = rt_vm_abs(x);
    float s = x * x;
    float p = 1.51547500e-2f;
    p = p * s - 5.19104741e-2f;
    p = p * s + 1.33070004e-1f;
    p = p * s - 3.33321992e-1f;
    p = p * s + 9.99999949e-1f;
    float small = x * p;
    float ac = rt_vm_sel(a > 10.0f, 10.0f, a);
    float big = 1.0f - 2.0f / (rt_vexp_nz_f32(2.0f * ac) + 1.0f); /* 2 ac >= 0 */
    return rt_vm_sel(a <= 0.625f, small, rt_vm_copysign(big, x));
}

/* erf x: x P(x^2) for |x| <= 1, 1 - e^(-x^2) Q(1/|x|) for 1 < |x| (|x| clamped to 4), with
 * the sign of x. */
RT_API float rt_verf_f32(float x) {
    float a = rt_vm_abs(x);
    float s = x * x;
    float p = 7.89821012e-5f;
    p = p * s - 8.02435410e-4f;
    p = p * s + 5.19005357e-3f;
    p = p * s - 2.68548085e-2f;
    p = p * s + 1.12836124e-1f;
    p = p * s - 3.76126288e-1f;
    p = p * s + 1.12837917e+0f;
    float small = x * p;
    float ac = rt_vm_sel(a > 4.0f, 4.0f, rt_vm_sel(a < 1.0f, 1.0f, a));
    float u = 1.0f / ac;
    float q = -1.69467963e-2f;
    q = q * u + 1.16897487e-1f;
    q = q * u - 3.47588904e-1f;
    q = q * u + 5.69493033e-1f;
    q = q * u - 5.02415283e-1f;
    q = q * u + 4.98701485e-2f;
    q = q * u + 5.57938332e-1f;
    q = q * u + 3.35604302e-4f;
    float big = 1.0f - rt_vexp_nz_f32(-(ac * ac)) * q; /* -(ac^2) >= -16 */
    return rt_vm_sel(a <= 1.0f, small, rt_vm_copysign(big, x));
}

/* GELU, x/2 (1 + erf(x/sqrt 2)), of 16 values: erf z = z P(z^2) / Q(z^2) with z clamped to
 * [-4, 4] (erf 4 rounds to 1), P of degree 6 and Q of degree 4 in z^2 (a rational fit of
 * erf(z)/z on [0, 4], relative error 6.5e-8 in double, all of Q's coefficients positive),
 * 12 FMAs and one division: rt_verf_f32's two branches (two polynomials, a division and an
 * exp, both evaluated) cost about 3x the instructions, and its loop vectorizes to 8 lanes.
 * The epilogue of the packed products (rt_pgemm.h) and rt_act_row_f32's GELU. Error against
 * double (tests/unit/test_rt_vmath.c prints it). NaN passes (max and min return their second
 * operand where one is NaN). */
#define RT_VM_GELU_P0 1.1283790943220797f
#define RT_VM_GELU_P1 0.20711909144742408f
#define RT_VM_GELU_P2 0.05152405661658777f
#define RT_VM_GELU_P3 0.00399030161745643f
#define RT_VM_GELU_P4 1.472793731023363e-4f
#define RT_VM_GELU_P5 -1.942277452895297e-6f
#define RT_VM_GELU_P6 1.9110913740405522e-8f
#define RT_VM_GELU_Q1 0.5168857664604801f
#define RT_VM_GELU_Q2 0.11796818806688351f
#define RT_VM_GELU_Q3 0.014957533697862698f
#define RT_VM_GELU_Q4 1.02104481188496e-3f
#if defined(__AVX512F__) && !defined(__CUDACC__)
static inline __m512 rt_vgelu16_f32(__m512 x) {
    const __m512 z = _mm512_min_ps(
        _mm512_set1_ps(4.0f),
        _mm512_max_ps(_mm512_set1_ps(-4.0f), _mm512_mul_ps(x, _mm512_set1_ps(0.70710678f))));
    const __m512 t = _mm512_mul_ps(z, z);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(RT_VM_GELU_P6), t, _mm512_set1_ps(RT_VM_GELU_P5));
    __m512 q = _mm512_fmadd_ps(_mm512_set1_ps(RT_VM_GELU_Q4), t, _mm512_set1_ps(RT_VM_GELU_Q3));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(RT_VM_GELU_P4));
    q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(RT_VM_GELU_Q2));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(RT_VM_GELU_P3));
    q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(RT_VM_GELU_Q1));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(RT_VM_GELU_P2));
    q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(RT_VM_GELU_P1));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(RT_VM_GELU_P0));
    /* erf z, within [-1, 1] (the rounding of the fit and of its terms passes 1 near 4) */
    const __m512 e = _mm512_min_ps(
        _mm512_set1_ps(1.0f),
        _mm512_max_ps(_mm512_set1_ps(-1.0f), _mm512_div_ps(_mm512_mul_ps(z, p), q)));
    const __m512 h = _mm512_mul_ps(x, _mm512_set1_ps(0.5f));
    return _mm512_mul_ps(h, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}
#endif

#endif
