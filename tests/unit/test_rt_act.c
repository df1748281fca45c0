/* Unit tests of the fused epilogues (runtime/rt_act.h) and the fused kernels that use them
 * (rt_conv_fused_f32, rt_gemm_f32 with an activation): every activation against a naive
 * formula written here, and the fused kernels against the plain kernel followed by a
 * reference epilogue, on fresh random inputs with outputs poisoned before the run. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "runtime/rt_conv.h"
#include "runtime/rt_matmul.h"

#define POISON_F32 NAN
#define TOL 1e-5

static unsigned rng_state = 4242u;

static float frand(void) { /* in [-4, 4) */
    rng_state = rng_state * 1103515245u + 12345u;
    return (float)((rng_state >> 8) & 0xffff) / 8192.0f - 4.0f;
}

static void fill(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = frand();
}

static void poison(float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = POISON_F32;
}

/* The activation by its textbook formula, in double. */
static double ref_act(double v, const RtAct *a) {
    switch (a->kind) {
    case RT_ACT_RELU: return v > 0 ? v : 0;
    case RT_ACT_CLIP: return fmin(fmax(v, a->alpha), a->beta);
    case RT_ACT_LEAKY_RELU: return v >= 0 ? v : a->alpha * v;
    case RT_ACT_SIGMOID: return 1 / (1 + exp(-v));
    case RT_ACT_HARD_SIGMOID: return fmax(0, fmin(1, a->alpha * v + a->beta));
    case RT_ACT_HARD_SWISH: return v * fmax(0, fmin(1, v / 6 + 0.5));
    case RT_ACT_SILU: return v / (1 + exp(-v));
    case RT_ACT_GELU: return 0.5 * v * (1 + erf(v / sqrt(2.0)));
    case RT_ACT_GELU_TANH:
        return 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    default: return v;
    }
}

static const RtAct all_acts[] = {
    {RT_ACT_NONE, 0, 0},         {RT_ACT_RELU, 0, 0},        {RT_ACT_CLIP, -1.5, 2.5},
    {RT_ACT_LEAKY_RELU, 0.1, 0}, {RT_ACT_SIGMOID, 0, 0},     {RT_ACT_HARD_SIGMOID, 0.2, 0.5},
    {RT_ACT_HARD_SWISH, 0, 0},   {RT_ACT_SILU, 0, 0},        {RT_ACT_GELU, 0, 0},
    {RT_ACT_GELU_TANH, 0, 0},
};
#define N_ACTS (sizeof all_acts / sizeof all_acts[0])

static void expect_close(float got, double want, const char *what, int kind, int64_t i) {
    cr_assert(fabs(got - want) <= TOL * (1 + fabs(want)),
              "%s, activation %d, element %lld: got %g, expected %g", what, kind, (long long)i,
              got, want);
}

Test(rt_act, every_activation_matches_its_formula_with_and_without_residual) {
    enum { N = 257 };
    float x[N], r[N], y[N];
    fill(x, N);
    fill(r, N);
    for (size_t k = 0; k < N_ACTS; k++) {
        for (int with_r = 0; with_r < 2; with_r++) {
            for (int i = 0; i < N; i++) y[i] = x[i];
            rt_act_row_f32(y, with_r ? r : NULL, N, &all_acts[k]);
            for (int i = 0; i < N; i++)
                expect_close(y[i], ref_act((double)x[i] + (with_r ? r[i] : 0), &all_acts[k]),
                             "row", all_acts[k].kind, i);
        }
    }
}

Test(rt_conv_fused, equals_conv_then_residual_then_activation) {
    /* x: (2,6,7,5), w: (6,3,3,3) with group 2, r and y: (2,6,7,5) (pads 1, stride 1) */
    RtConvGeom g = {2, 6, 6, 2, {1, 7, 5}, {1, 7, 5}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}};
    enum { NX = 2 * 6 * 7 * 5, NW = 6 * 3 * 9 };
    float x[NX], w[NW], b[6], r[NX], plain[NX], y[NX];
    fill(x, NX);
    fill(w, NW);
    fill(b, 6);
    fill(r, NX);
    poison(plain, NX);
    rt_conv_f32(x, w, b, plain, &g);
    for (size_t k = 0; k < N_ACTS; k++) {
        for (int with_r = 0; with_r < 2; with_r++) {
            poison(y, NX);
            rt_conv_fused_f32(x, w, b, with_r ? r : NULL, y, &g, &all_acts[k]);
            for (int i = 0; i < NX; i++)
                expect_close(y[i], ref_act((double)plain[i] + (with_r ? r[i] : 0), &all_acts[k]),
                             "conv", all_acts[k].kind, i);
        }
    }
}

Test(rt_gemm_act, equals_gemm_then_activation_across_tile_edges) {
    /* a: (5,9), b: (9,131) crosses the RT_MM_COLS tile edge, c: (131) */
    enum { M = 5, K = 9, N = 131 };
    float a[M * K], b[K * N], c[N], plain[M * N], y[M * N];
    fill(a, M * K);
    fill(b, K * N);
    fill(c, N);
    poison(plain, M * N);
    RtGemmf32 g = {.m = M, .n = N, .k = K, .alpha = 0.5f, .a = a, .a_rs = K, .a_cs = 1,
                   .b = b, .b_rs = N, .b_cs = 1, .beta = 1, .c = c, .c_rs = 0, .c_cs = 1,
                   .y = plain};
    rt_gemm_f32(&g);
    for (size_t k = 0; k < N_ACTS; k++) {
        poison(y, M * N);
        g.y = y;
        g.act = &all_acts[k];
        rt_gemm_f32(&g);
        for (int i = 0; i < M * N; i++)
            expect_close(y[i], ref_act(plain[i], &all_acts[k]), "gemm", all_acts[k].kind, i);
    }
}
