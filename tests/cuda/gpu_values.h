/* gpu_values.h: the seeded values of the float GPU kernel tests (conv_gpu.cu, ln_attn_gpu.cu):
 * xorshift64 uniform and Box-Muller normal draws from one fixed seed, and the conversions
 * between double and the tested element type T (float or __half) through float. */
#ifndef KILN_TESTS_GPU_VALUES_H
#define KILN_TESTS_GPU_VALUES_H

#include <math.h>

static unsigned long long rng_state = 88172645463325252ull;

static double urand(void) { /* xorshift64, [0, 1) */
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}
static double nrand(void) {
    double u = urand() + 1e-12, v = urand();
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

template <typename T> static T to_t(double v) { return (T)(float)v; }
template <typename T> static double from_t(T v) { return (double)(float)v; }

#endif
