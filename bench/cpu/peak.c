/* peak: one core's float multiply-add throughput, the ceiling the CPU benchmark's GFLOP/s
 * are set against: 12 independent chains of vector FMAs (acc = acc * m + a) at the widest
 * vector the compiler targets (-O3 -march=native: 16 floats with AVX-512, 8 with AVX, else 4),
 * enough to hide the FMA latency on two pipes. Build with -O3 -march=native
 * -ffp-contract=fast (so that a * m + a is one FMA). Prints JSON: gflops (the best of 5 timed
 * passes) and the vector width in floats. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <time.h>

#if defined(__AVX512F__)
#define LANES 16
#elif defined(__AVX__)
#define LANES 8
#else
#define LANES 4
#endif
#define CHAINS 12

typedef float vf __attribute__((vector_size(LANES * 4)));

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* n iterations of CHAINS FMAs on LANES floats; the result keeps the work alive. */
__attribute__((noinline)) static float run(long n, float m, float a) {
    vf acc[CHAINS], vm, va;
    int j;
    for (j = 0; j < LANES; j++) vm[j] = m, va[j] = a;
    for (j = 0; j < CHAINS; j++) acc[j] = va * (float)(j + 1);
    for (long i = 0; i < n; i++)
        for (j = 0; j < CHAINS; j++) acc[j] = acc[j] * vm + va;
    float s = 0;
    for (j = 0; j < CHAINS; j++)
        for (int k = 0; k < LANES; k++) s += acc[j][k];
    return s;
}

int main(void) {
    long n = 50000000; /* about 0.1 s a pass on a 2.5 GHz AVX2 core */
    double best = 0;
    volatile float sink;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        sink = run(n, 0.999999f, 1e-7f);
        double dt = now() - t0;
        double g = 2.0 * CHAINS * LANES * (double)n / dt / 1e9;
        if (g > best) best = g;
    }
    (void)sink;
    printf("{\"gflops\": %.1f, \"lanes\": %d}\n", best, LANES);
    return 0;
}
