/* Kernel lab of runtime/rt_pgemm.h: times the fp32 packed-GEMM convolution driver alone on
 * ResNet-50's and MobileNetV2's convolution shapes and prints GFLOP/s beside one core's fp32
 * peak (2 FMA pipes x lanes x 2 flops x clock). The clock is measured here: a chain of
 * dependent integer adds runs one a cycle. Median of RUNS. Every shape is first checked
 * against a naive loop in double (a wrong kernel stops the run). Build and run:
 *   cc -O3 -march=native -I. bench/kernels/pgemm.c -o /tmp/pgemm -lm && /tmp/pgemm */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rt_pgemm.h"

#define RUNS 9
#define CHAIN 200000000L /* dependent adds of the clock measurement */

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); /* CPU time: a shared machine preempts */
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The FMA rate measured: 12 independent chains of LANES-wide multiply-adds (GCC vector
 * extensions; -march=native makes them FMAs), flops per second. */
#if defined(RT_PGEMM_AVX512)
#define LANES 16
#elif defined(RT_PGEMM_AVX2)
#define LANES 8
#else
#define LANES 4
#endif
typedef float VecF __attribute__((vector_size(LANES * 4)));
static double fma_rate(void) {
    VecF acc[12], m, a;
    for (int i = 0; i < 12; i++)
        for (int l = 0; l < LANES; l++) acc[i][l] = (float)(i + l);
    for (int l = 0; l < LANES; l++) m[l] = 0.999f, a[l] = 0.001f;
    __asm__ volatile("" : "+x"(m), "+x"(a));
    double t0 = now_s();
    for (long it = 0; it < CHAIN / 12; it++)
        for (int i = 0; i < 12; i++) acc[i] = acc[i] * m + a;
    double t = now_s() - t0;
    float s = 0;
    for (int i = 0; i < 12; i++) s += acc[i][0];
    if (s == 12345.0f) printf("%f\n", (double)s);
    return (double)(CHAIN / 12) * 12 * LANES * 2 / t;
}

/* cycles per second: CHAIN dependent adds (1 cycle of latency each) */
static double clock_hz(void) {
    volatile long sink;
    long v = 1;
    double t0 = now_s();
    for (long i = 0; i < CHAIN; i++) __asm__ volatile("add $1, %0" : "+r"(v));
    sink = v;
    (void)sink;
    return (double)CHAIN / (now_s() - t0);
}

typedef struct Shape {
    const char *name;
    int64_t hw, c, m, k, s; /* input size, channels in/out, kernel, stride (pad k/2) */
} Shape;

static const Shape shapes[] = {
    {"resnet50 conv1 7x7/2", 224, 3, 64, 7, 2},
    {"resnet50 l1 1x1 64->64", 56, 64, 64, 1, 1},
    {"resnet50 l1 3x3 64", 56, 64, 64, 3, 1},
    {"resnet50 l1 1x1 64->256", 56, 64, 256, 1, 1},
    {"resnet50 l2 3x3 128", 28, 128, 128, 3, 1},
    {"resnet50 l3 1x1 1024->256", 14, 1024, 256, 1, 1},
    {"resnet50 l3 3x3 256", 14, 256, 256, 3, 1},
    {"resnet50 l4 3x3 512", 7, 512, 512, 3, 1},
    {"resnet50 l4 1x1 512->2048", 7, 512, 2048, 1, 1},
    {"mbv2 3x3/2 3->32 at 224", 224, 3, 32, 3, 2},
    {"mbv2 1x1 32->16 at 112", 112, 32, 16, 1, 1},
    {"mbv2 1x1 96->24 at 56", 56, 96, 24, 1, 1},
    {"mbv2 1x1 32->192 at 28", 28, 32, 192, 1, 1},
    {"mbv2 1x1 960->160 at 7", 7, 960, 160, 1, 1},
};

int main(void) {
    double hz = clock_hz(), fma = fma_rate() / 1e9;
    double peak = 2 * LANES * 2 * hz / 1e9;
    printf("path %s, tile %d x %d; clock %.2f GHz (add chain): nominal peak 2 FMA x %d lanes x"
           " 2 x clock = %.1f GFLOP/s; FMA loop measured %.1f GFLOP/s (the %% column's base)\n",
           RT_PGEMM_ISA, RT_PGEMM_MR, RT_PGEMM_NT, hz / 1e9, LANES, peak, fma);
    peak = fma;
    printf("%-28s %10s %10s %8s\n", "shape", "ms", "GFLOP/s", "of peak");
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const Shape *s = &shapes[si];
        RtConvGeom g;
        memset(&g, 0, sizeof g);
        g.n = 1, g.c = s->c, g.m = s->m, g.group = 1;
        g.in[0] = g.out[0] = g.k[0] = g.s[0] = g.d[0] = 1;
        g.in[1] = g.in[2] = s->hw, g.k[1] = g.k[2] = s->k, g.s[1] = g.s[2] = s->s;
        g.d[1] = g.d[2] = 1, g.pad[1] = g.pad[2] = s->k / 2;
        g.out[1] = g.out[2] = (s->hw + 2 * (s->k / 2) - s->k) / s->s + 1;
        int64_t np = (s->m + RT_PGEMM_NR - 1) / RT_PGEMM_NR, K = s->k * s->k * s->c;
        int64_t xn = s->hw * s->hw * s->c, yn = g.out[1] * g.out[2] * s->m;
        float *x = malloc((size_t)xn * 4), *w = malloc((size_t)(np * K * RT_PGEMM_NR) * 4);
        float *b = malloc((size_t)s->m * 4), *y = malloc((size_t)yn * 4);
        for (int64_t i = 0; i < xn; i++) x[i] = (float)(i % 7) * 0.25f - 0.5f;
        for (int64_t i = 0; i < np * K * RT_PGEMM_NR; i++) w[i] = (float)(i % 5) * 0.125f;
        for (int64_t i = 0; i < s->m; i++) b[i] = 0.5f;
        RtAct relu = {RT_ACT_RELU, 0.0, 0.0};
        double t[RUNS];
        rt_pconv_nhwc_f32(x, w, b, NULL, y, &g, &relu);
        for (int64_t oh = 0; oh < g.out[1]; oh++) /* w[p][k][j] is output channel p*16+j */
            for (int64_t ow = 0; ow < g.out[2]; ow++)
                for (int64_t m = 0; m < s->m; m++) {
                    double acc = b[m];
                    for (int64_t kh = 0; kh < s->k; kh++)
                        for (int64_t kw = 0; kw < s->k; kw++) {
                            int64_t ih = oh * s->s - g.pad[1] + kh, iw = ow * s->s - g.pad[2] + kw;
                            if (ih < 0 || ih >= s->hw || iw < 0 || iw >= s->hw) continue;
                            for (int64_t c = 0; c < s->c; c++)
                                acc += (double)x[(ih * s->hw + iw) * s->c + c] *
                                       w[((m / RT_PGEMM_NR) * K + (kh * s->k + kw) * s->c + c) *
                                             RT_PGEMM_NR + m % RT_PGEMM_NR];
                        }
                    acc = acc < 0 ? 0 : acc;
                    double got = y[(oh * g.out[2] + ow) * s->m + m];
                    if (fabs(got - acc) > 1e-4 * (1 + fabs(acc))) {
                        printf("%s: WRONG at (%lld,%lld,%lld): %g, want %g\n", s->name,
                               (long long)oh, (long long)ow, (long long)m, got, acc);
                        return 1;
                    }
                }
        for (int r = 0; r < RUNS; r++) {
            double t0 = now_s();
            rt_pconv_nhwc_f32(x, w, b, NULL, y, &g, &relu);
            t[r] = now_s() - t0;
        }
        qsort(t, RUNS, sizeof t[0], cmp);
        double flop = 2.0 * (double)yn * (double)K;
        double gf = flop / t[RUNS / 2] / 1e9;
        printf("%-28s %10.3f %10.1f %7.0f%%\n", s->name, t[RUNS / 2] * 1e3, gf, 100 * gf / peak);
        free(x), free(w), free(b), free(y);
    }
    return 0;
}
