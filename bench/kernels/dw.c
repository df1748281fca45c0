/* Kernel lab of the depthwise convolutions of runtime/rt_conv_nhwc.h, one thread: every
 * depthwise shape of MobileNetV2 and EfficientNet-B0 (224x224, batch 1) with its count and
 * its fused activation (ReLU6 = Clip 0..6, SiLU), timed on two builds of the kernel that
 * alternate within each repetition, so both see the same machine: A (this tree) and B
 * (another tree's runtime, or this one built with RT_NO_VECTOR_EXT, the portable loops).
 * bench/kernels/dw.sh builds both and runs it. Floors beside each shape: flops
 * (2 * 9 or 25 * pixels * channels) over the FMA peak, and bytes (input + output once) over
 * the bandwidth; B's output is compared with A's (max |diff| / max |y|).
 * Median of RUNS, thread CPU time. DW_COLD=1 in the environment: every call after the
 * caches are evicted and the input written again (evict), as inside a model. */
#define _POSIX_C_SOURCE 200112L /* clock_gettime */
#include <stdint.h>

#ifdef DW_IMPL /* one build of the kernel: DW_NAME(x, w, b, y, geometry, activation) */
#include "runtime/rt_conv_nhwc.h"

void DW_NAME(const float *x, const float *w, const float *b, float *y, const int64_t *shape,
             int act);
void DW_NAME(const float *x, const float *w, const float *b, float *y, const int64_t *shape,
             int act) {
    /* shape: C, H (= W), K, S */
    RtConvGeom g;
    RtAct a = {act, 0.0f, 6.0f};
    memset(&g, 0, sizeof g);
    g.n = 1, g.c = g.m = g.group = shape[0];
    g.in[0] = g.out[0] = g.k[0] = g.s[0] = g.d[0] = g.d[1] = g.d[2] = 1;
    g.in[1] = g.in[2] = shape[1];
    g.k[1] = g.k[2] = shape[2];
    g.s[1] = g.s[2] = shape[3];
    g.pad[1] = g.pad[2] = shape[2] / 2;
    g.out[1] = g.out[2] = (shape[1] + 2 * (shape[2] / 2) - shape[2]) / shape[3] + 1;
    rt_conv_nhwc_fused_f32(x, w, b, NULL, y, &g, &a);
}

#else
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RUNS 15
#define REPS 5 /* calls a timed run */
#define ACT_CLIP 2 /* RtActKind of runtime/rt_act.h */
#define ACT_SILU 7

void dw_a(const float *x, const float *w, const float *b, float *y, const int64_t *shape,
          int act);
void dw_b(const float *x, const float *w, const float *b, float *y, const int64_t *shape,
          int act);

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); /* CPU time: a shared machine preempts */
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct Shape {
    const char *model;
    int64_t c, h, k, s; /* channels, input side, kernel side, stride */
    int count, act;
} Shape;

static const Shape shapes[] = {
    {"mobilenet_v2", 32, 112, 3, 1, 1, ACT_CLIP},  {"mobilenet_v2", 96, 112, 3, 2, 1, ACT_CLIP},
    {"mobilenet_v2", 144, 56, 3, 1, 1, ACT_CLIP},  {"mobilenet_v2", 144, 56, 3, 2, 1, ACT_CLIP},
    {"mobilenet_v2", 192, 28, 3, 1, 2, ACT_CLIP},  {"mobilenet_v2", 192, 28, 3, 2, 1, ACT_CLIP},
    {"mobilenet_v2", 384, 14, 3, 1, 4, ACT_CLIP},  {"mobilenet_v2", 576, 14, 3, 1, 2, ACT_CLIP},
    {"mobilenet_v2", 576, 14, 3, 2, 1, ACT_CLIP},  {"mobilenet_v2", 960, 7, 3, 1, 3, ACT_CLIP},
    {"efficientnet_b0", 32, 112, 3, 1, 1, ACT_SILU},
    {"efficientnet_b0", 96, 112, 3, 2, 1, ACT_SILU},
    {"efficientnet_b0", 144, 56, 3, 1, 1, ACT_SILU},
    {"efficientnet_b0", 144, 56, 5, 2, 1, ACT_SILU},
    {"efficientnet_b0", 240, 28, 5, 1, 1, ACT_SILU},
    {"efficientnet_b0", 240, 28, 3, 2, 1, ACT_SILU},
    {"efficientnet_b0", 480, 14, 3, 1, 2, ACT_SILU},
    {"efficientnet_b0", 480, 14, 5, 1, 1, ACT_SILU},
    {"efficientnet_b0", 672, 14, 5, 1, 2, ACT_SILU},
    {"efficientnet_b0", 672, 14, 5, 2, 1, ACT_SILU},
    {"efficientnet_b0", 1152, 7, 5, 1, 3, ACT_SILU},
    {"efficientnet_b0", 1152, 7, 3, 1, 1, ACT_SILU},
};

static float *rand_buf(int64_t n) {
    float *p = aligned_alloc(64, (size_t)((n * 4 + 63) / 64 * 64));
    for (int64_t i = 0; i < n; i++) p[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
    return p;
}

/* DW_COLD=1: the caches as a layer inside a model finds them (bench/cpu/profile.py times
 * the big depthwise layers 2-4x slower in a model than warm here): JUNK_BYTES written over
 * everything, then the input written again, as the layer before writes it. */
#define JUNK_BYTES (64 << 20)
static void evict(float *x, int64_t xn, unsigned char *junk, int r) {
    memset(junk, r & 0xff, JUNK_BYTES);
    for (int64_t i = 0; i < xn; i++) x[i] += 0.0f; /* a store of the same value (-0 + 0 is +0:
                                                      not folded away) */
}

int main(int argc, char **argv) {
    double peak = argc > 1 ? atof(argv[1]) : 96.8; /* GFLOP/s, bench/cpu/peak.c */
    double bw = argc > 2 ? atof(argv[2]) : 20.0;   /* GB/s of one core */
    const int cold = getenv("DW_COLD") && atoi(getenv("DW_COLD")) != 0;
    unsigned char *junk = cold ? malloc(JUNK_BYTES) : NULL;
    double sum_a[2] = {0, 0}, sum_b[2] = {0, 0};
    if (cold && !junk) return 2;
    printf("one core: %.1f GFLOP/s, %.1f GB/s; ms are per call, medians of %d runs%s\n\n", peak,
           bw, RUNS, cold ? ", caches cold (DW_COLD)" : "");
    printf("| model | C @ side, KxK/S | count | A ms | B ms | A / B | A GFLOP/s | flop floor ms "
           "| byte floor ms | max rel diff |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const Shape *s = &shapes[i];
        int64_t sh[4] = {s->c, s->h, s->k, s->s};
        int64_t oh = (s->h + 2 * (s->k / 2) - s->k) / s->s + 1;
        int64_t xn = s->h * s->h * s->c, yn = oh * oh * s->c;
        float *x = rand_buf(xn), *w = rand_buf(s->k * s->k * s->c), *b = rand_buf(s->c);
        float *ya = rand_buf(yn), *yb = rand_buf(yn);
        double ta[RUNS], tb[RUNS], diff = 0, big = 0;
        for (int r = 0; r < RUNS && !cold; r++) {
            double t0 = now_s();
            for (int k = 0; k < REPS; k++) dw_a(x, w, b, ya, sh, s->act);
            double t1 = now_s();
            for (int k = 0; k < REPS; k++) dw_b(x, w, b, yb, sh, s->act);
            double t2 = now_s();
            ta[r] = (t1 - t0) / REPS, tb[r] = (t2 - t1) / REPS;
        }
        for (int r = 0; r < RUNS && cold; r++) /* each call alone after an eviction, A and B */
            for (int q = 0; q < 2; q++) {         /* first in turn */
                const int is_a = (q + r) % 2 == 0;
                double t0;
                evict(x, xn, junk, r);
                t0 = now_s();
                if (is_a) dw_a(x, w, b, ya, sh, s->act);
                else dw_b(x, w, b, yb, sh, s->act);
                *(is_a ? &ta[r] : &tb[r]) = now_s() - t0;
            }
        for (int64_t j = 0; j < yn; j++) {
            diff = fmax(diff, fabs((double)ya[j] - yb[j]));
            big = fmax(big, fabs((double)ya[j]));
        }
        qsort(ta, RUNS, sizeof *ta, cmp);
        qsort(tb, RUNS, sizeof *tb, cmp);
        double a = ta[RUNS / 2] * 1e3, bb = tb[RUNS / 2] * 1e3;
        double flop = 2.0 * (double)(s->k * s->k) * (double)yn;
        double bytes = 4.0 * (double)(xn + yn);
        int mi = s->model[0] == 'm' ? 0 : 1;
        sum_a[mi] += a * s->count, sum_b[mi] += bb * s->count;
        printf("| %s | %lld @ %lld, %lldx%lld/%lld | %d | %.3f | %.3f | %.2f | %.1f | %.3f | %.3f "
               "| %.1e |\n",
               s->model, (long long)s->c, (long long)s->h, (long long)s->k, (long long)s->k,
               (long long)s->s, s->count, a, bb, a / bb, flop / a * 1e-6, flop / peak * 1e-6,
               bytes / bw * 1e-6, diff / (big > 0 ? big : 1));
        free(x), free(w), free(b), free(ya), free(yb);
    }
    printf("\nall depthwise layers, ms (x count): mobilenet_v2 A %.3f B %.3f (%.2fx), "
           "efficientnet_b0 A %.3f B %.3f (%.2fx)\n",
           sum_a[0], sum_b[0], sum_a[0] / sum_b[0], sum_a[1], sum_b[1], sum_a[1] / sum_b[1]);
    free(junk);
    return 0;
}
#endif
