/* Kernel lab of the int8 convolutions (runtime/rt_qconv.h), one thread: the convolution
 * shapes that take most of ResNet-50's and MobileNetV2's int8 time (224x224, batch 1),
 * timed on two builds of the kernels that alternate within each repetition, so both see
 * the same machine: A (this tree's runtime) and B (another tree's, e.g. main's). Weights
 * are random bytes in the packed layout (rt_qgemm.h; the layout, not the values, sets the
 * time), requantization terms in the usual range (multipliers in [2^30, 2^31), shifts
 * 38..44). B's output must be A's byte for byte (the kernels compute exact sums). Prints
 * per shape the median thread CPU time of each and GMAC/s; the floor is the MACs over the
 * CPU's int8 multiply-add rate (bench/int8/floor.sh: one zmm vpdpbusd, 64 MACs, a cycle on
 * Zen 4). bench/int8/qlab.sh builds and runs it. */
#define _POSIX_C_SOURCE 200112L /* clock_gettime */
#include <stdint.h>

#ifdef QLAB_IMPL /* one build of the kernels: QLAB_NAME(shape, x, w, y) */
#include "runtime/rt_qconv.h"

void QLAB_NAME(const int64_t *s, const uint8_t *x, const int8_t *w, const int32_t *bias,
               const int32_t *mult, const uint8_t *shift, uint8_t *y);
void QLAB_NAME(const int64_t *s, const uint8_t *x, const int8_t *w, const int32_t *bias,
               const int32_t *mult, const uint8_t *shift, uint8_t *y) {
    /* s: H (= W), C, M, K, stride, depthwise */
    RtQConv2d g;
    RtQRequant q = {bias, mult, NULL, shift, 3, 0, 3, 255};
    memset(&g, 0, sizeof g);
    g.n = 1, g.h = g.w = s[0], g.c = s[1], g.m = s[2];
    g.kh = g.kw = s[3], g.sh = g.sw = s[4], g.dh = g.dw = 1;
    g.ph = g.pw = s[3] / 2;
    g.oh = g.ow = (s[0] + 2 * (s[3] / 2) - s[3]) / s[4] + 1;
    g.group = s[5] ? s[1] : 1;
    g.c4 = s[5] ? 1 : (s[1] + 3) / 4;
    g.np = s[5] ? 1 : (s[2] + RT_QGEMM_NR - 1) / RT_QGEMM_NR;
    if (s[5])
        rt_qdwconv2d(&g, x, 7, w, &q, NULL, y);
    else
        rt_qconv2d(&g, x, 7, w, &q, NULL, y);
}
#else
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void QLabFn(const int64_t *, const uint8_t *, const int8_t *, const int32_t *,
                    const int32_t *, const uint8_t *, uint8_t *);
QLabFn qlab_a, qlab_b;

static const int64_t shapes[][6] = {
    /* H, C, M, K, stride, depthwise */
    {224, 3, 64, 7, 2, 0},   {56, 64, 64, 3, 1, 0},    {28, 128, 128, 3, 1, 0},
    {14, 256, 256, 3, 1, 0}, {7, 512, 512, 3, 1, 0},   {56, 64, 256, 1, 1, 0},
    {56, 256, 64, 1, 1, 0},  {28, 512, 128, 1, 1, 0},  {14, 1024, 256, 1, 1, 0},
    {7, 2048, 512, 1, 1, 0}, {224, 3, 32, 3, 2, 0},    {112, 16, 96, 1, 1, 0},
    {112, 32, 16, 1, 1, 0},  {56, 24, 144, 1, 1, 0},   {56, 144, 24, 1, 1, 0},
    {14, 96, 576, 1, 1, 0},  {7, 960, 320, 1, 1, 0},   {112, 32, 32, 3, 1, 1},
    {56, 144, 144, 3, 1, 1}, {112, 96, 96, 3, 2, 1},   {14, 576, 576, 3, 1, 1},
    {28, 192, 192, 3, 1, 1}, {56, 144, 144, 3, 2, 1},  {7, 960, 960, 3, 1, 1},
};

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int runs = argc > 1 ? atoi(argv[1]) : 9;
    /* QLAB_FIRST, QLAB_LAST: a range of the shapes (ResNet-50's: 0..9) */
    size_t first = getenv("QLAB_FIRST") ? (size_t)atoi(getenv("QLAB_FIRST")) : 0;
    size_t last = getenv("QLAB_LAST") ? (size_t)atoi(getenv("QLAB_LAST")) : sizeof shapes / sizeof shapes[0] - 1;
    unsigned s = 12345u;
    double sum_a = 0, sum_b = 0;
    size_t i;
    if (runs < 1 || runs > 100) return 2;
    printf("| shape | MMAC | A ms | A GMAC/s | B ms | B GMAC/s | B / A | B / A of the minima |\n"
           "|---|---|---|---|---|---|---|---|\n");
    for (i = first; i <= last && i < sizeof shapes / sizeof shapes[0]; i++) {
        const int64_t *sh = shapes[i];
        int64_t H = sh[0], C = sh[1], M = sh[2], K = sh[3], dw = sh[5];
        int64_t OH = (H + 2 * (K / 2) - K) / sh[4] + 1, c4 = dw ? 1 : (C + 3) / 4, np = (M + 15) / 16;
        size_t xn = (size_t)(H * H * C), yn = (size_t)(OH * OH * M);
        size_t wn = dw ? (size_t)(K * K * C) : (size_t)(np * K * K * c4 * 64 + np * 64);
        uint8_t *x = malloc(xn), *ya = malloc(yn), *yb = malloc(yn), *shift = malloc((size_t)M);
        int8_t *w = malloc(wn);
        int32_t *bias = malloc((size_t)M * 4), *mult = malloc((size_t)M * 4);
        double ta[100], tb[100], macs = (double)(OH * OH * M * K * K) * (double)(dw ? 1 : C);
        size_t j;
        int r;
        for (j = 0; j < xn; j++) s = s * 1103515245u + 12345u, x[j] = (uint8_t)(s >> 16);
        for (j = 0; j < wn; j++) s = s * 1103515245u + 12345u, w[j] = (int8_t)(s >> 16);
        if (!dw) /* the packed weights past C are zeros, as qplan packs them: the kernels may
                  * read any byte there (the RGB ring's 4-byte copies) */
            for (j = 0; j < (size_t)(np * K * K * c4 * 64); j++)
                if ((int64_t)(j / 64 % (size_t)c4) * 4 + (int64_t)(j % 4) >= C) w[j] = 0;
        for (j = 0; j < (size_t)M; j++) {
            s = s * 1103515245u + 12345u;
            bias[j] = (int32_t)(s >> 12) - (1 << 19);
            mult[j] = (int32_t)((s >> 1) | (1u << 30));
            shift[j] = (uint8_t)(38 + (s >> 20) % 7);
        }
        for (r = 0; r < runs; r++) {
            double t0 = now_ms();
            qlab_a(sh, x, w, bias, mult, shift, ya);
            ta[r] = now_ms() - t0;
            t0 = now_ms();
            qlab_b(sh, x, w, bias, mult, shift, yb);
            tb[r] = now_ms() - t0;
        }
        /* QLAB_NOCHECK: time a B that is not exact (a part of a kernel left out, to see its share) */
        if (!getenv("QLAB_NOCHECK") && memcmp(ya, yb, yn) != 0) {
            printf("shape %zu: A and B differ\n", i);
            return 1;
        }
        qsort(ta, (size_t)runs, sizeof ta[0], cmp_double);
        qsort(tb, (size_t)runs, sizeof tb[0], cmp_double);
        sum_a += ta[runs / 2], sum_b += tb[runs / 2];
        printf("| %lldx%lldx%lld -> %lld k%lld s%lld%s | %.1f | %.3f | %.1f | %.3f | %.1f | %.3fx | %.3fx |\n",
               (long long)H, (long long)H, (long long)C, (long long)M, (long long)K, (long long)sh[4],
               dw ? " dw" : "", macs * 1e-6, ta[runs / 2], macs / ta[runs / 2] * 1e-6, tb[runs / 2],
               macs / tb[runs / 2] * 1e-6, tb[runs / 2] / ta[runs / 2], tb[0] / ta[0]);
        free(x), free(ya), free(yb), free(shift), free(w), free(bias), free(mult);
    }
    printf("| all | | %.3f | | %.3f | | %.3fx | |\n", sum_a, sum_b, sum_b / sum_a);
    return 0;
}
#endif
