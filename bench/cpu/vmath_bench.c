/* vmath_bench: ns per element of the float math that the C bundles call, libm's (what the
 * bundles called before runtime/rt_vmath.h) against rt_vmath.h's, in the loops the runtime
 * and the elementwise emitter write: y[i] = f(x[i]) over 4096 floats (in L1), plus GELU and
 * SiLU as the fused epilogue computes them, a 128-wide softmax row (attention's shape), and
 * the epilogue's SiLU row (its vector forms against the loop of rt_vexp_nz_f32).
 * Build and run: bench/cpu/vmath_bench.sh (gcc -O3 -march=native). Prints one line per
 * function: libm ns/elt, vmath ns/elt, speed-up. Medians of 15 repeats. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <string.h>

#include "runtime/rt_act.h"
#include "runtime/rt_softmax.h"
#include "runtime/rt_vmath.h"

#define N 4096
#define REPS 15
#define ROW 128

static float xs[N], ys[N];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The old softmax row: libm expf, one value at a time into the sum (rt_softmax.h before). */
static void softmax_libm(const float *x, float *y, int64_t n) {
    float mx = x[0], inv;
    RtSumf32 acc;
    int64_t k;
    for (k = 1; k < n; k++) mx = x[k] > mx ? x[k] : mx;
    rt_sum_init_f32(&acc);
    for (k = 0; k < n; k++) rt_sum_add_f32(&acc, expf(x[k] - mx));
    inv = 1 / rt_sum_total_f32(&acc);
    for (k = 0; k < n; k++) y[k] = expf(x[k] - mx) * inv;
}

#define LOOP(NAME, EXPR)                                                                       \
    static void NAME(void) {                                                                   \
        int i;                                                                                 \
        for (i = 0; i < N; i++) {                                                              \
            float v = xs[i];                                                                   \
            ys[i] = (EXPR);                                                                    \
        }                                                                                      \
    }

LOOP(exp_libm, expf(v))
LOOP(exp_vm, rt_vexp_f32(v))
LOOP(tanh_libm, tanhf(v))
LOOP(tanh_vm, rt_vtanh_f32(v))
LOOP(erf_libm, erff(v))
LOOP(erf_vm, rt_verf_f32(v))
LOOP(sigmoid_libm, 1.0f / (1.0f + expf(-v)))
LOOP(sigmoid_vm, rt_vsigmoid_f32(v))
LOOP(gelu_libm, 0.5f * v * (1.0f + erff(v * 0.70710678f)))
LOOP(gelu_vm, 0.5f * v * (1.0f + rt_verf_f32(v * 0.70710678f)))
LOOP(silu_libm, v / (1.0f + expf(-v)))
LOOP(silu_vm, v / (1.0f + rt_vexp_f32(-v)))

/* The fused epilogue's SiLU row (rt_act.h, in place: a copy first, on both sides): the loop
 * of rt_vexp_nz_f32 that the compiler vectorizes, then rt_act_sigmoid_row_f32 (AVX-512 or
 * AVX2 vector forms where built for them). The "libm" column is the loop here. */
static void silu_row_loop(void) {
    int i;
    memcpy(ys, xs, sizeof ys);
    for (i = 0; i < N; i++) ys[i] = ys[i] / (1.0f + rt_vexp_nz_f32(-ys[i]));
}

static void silu_row_vec(void) {
    memcpy(ys, xs, sizeof ys);
    rt_act_sigmoid_row_f32(ys, N, 1);
}

static void softmax_old(void) {
    int r;
    for (r = 0; r < N / ROW; r++) softmax_libm(xs + r * ROW, ys + r * ROW, ROW);
}

static void softmax_new(void) { rt_softmax_f32(xs, ys, N / ROW, ROW, 1, RT_SOFTMAX); }

/* Median ns per element of f over REPS timed passes (each pass repeats f until 2 ms). */
static double time_ns(void (*f)(void)) {
    double t[REPS];
    int r, k, inner = 1;
    double t0 = now();
    f();
    while (now() - t0 < 2e-3 && inner < 100000) f(), inner++;
    for (r = 0; r < REPS; r++) {
        t0 = now();
        for (k = 0; k < inner; k++) f();
        t[r] = (now() - t0) / inner / N * 1e9;
    }
    qsort(t, REPS, sizeof t[0], cmp);
    return t[REPS / 2];
}

int main(void) {
    struct {
        const char *name;
        void (*before)(void), (*after)(void);
    } rows[] = {
        {"exp", exp_libm, exp_vm},          {"tanh", tanh_libm, tanh_vm},
        {"erf", erf_libm, erf_vm},          {"sigmoid", sigmoid_libm, sigmoid_vm},
        {"gelu (erf)", gelu_libm, gelu_vm}, {"silu", silu_libm, silu_vm},
        {"softmax 128", softmax_old, softmax_new},
        {"silu row", silu_row_loop, silu_row_vec}, /* loop of rt_vexp_nz, vector forms */
    };
    unsigned s = 12345u;
    int i;
    for (i = 0; i < N; i++) { /* in [-8, 8) */
        s = s * 1103515245u + 12345u;
        xs[i] = (float)((s >> 8) & 0xffff) / 4096.0f - 8.0f;
    }
    printf("%-12s %10s %10s %8s\n", "function", "libm ns/el", "vmath ns/el", "speed-up");
    for (i = 0; i < (int)(sizeof rows / sizeof rows[0]); i++) {
        double b = time_ns(rows[i].before), a = time_ns(rows[i].after);
        printf("%-12s %10.3f %10.3f %7.1fx\n", rows[i].name, b, a, b / a);
    }
    return 0;
}
