/* Kernel lab of runtime/rt_wino.h against runtime/rt_pgemm.h, one thread: every convolution
 * shape of ResNet-50 (224x224, batch 1) with its count in the model, timed on the packed
 * GEMM (rt_pconv_nhwc_f32) and, for 3x3 stride-1 ones, on Winograd F(4x4, 3x3)
 * (rt_wino_nhwc_tiles_ws_f32 in its workspace, as a bundle runs it on one worker),
 * alternating the two within each repetition so that both see the same machine; then a sweep of 3x3 stride-1 shapes (channels x image side) that sets the
 * emitter's rule (backend/plan.c, plan_wino_pays). GFLOP/s are the direct convolution's
 * 2*P*M*9*C flops over the time (Winograd's "effective" rate), beside the FMA rate measured
 * here. Each Winograd output is compared with the packed GEMM's (max |diff| / max |y|).
 * Median of RUNS, thread CPU time. Build and run:
 *   cc -O3 -march=native -I. bench/kernels/wino.c -o /tmp/wino -lm && /tmp/wino */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/plan.h"
#include "runtime/rt_wino.h"

#define RUNS 7

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); /* CPU time: a shared machine preempts */
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#if defined(RT_PGEMM_AVX512)
#define LANES 16
#elif defined(RT_PGEMM_AVX2)
#define LANES 8
#else
#define LANES 4
#endif
typedef float VecF __attribute__((vector_size(LANES * 4)));
static double fma_rate(void) { /* 12 independent FMA chains: flops a second */
    VecF acc[12], m, a;
    const long n = 100000000L;
    for (int i = 0; i < 12; i++)
        for (int l = 0; l < LANES; l++) acc[i][l] = (float)(i + l);
    for (int l = 0; l < LANES; l++) m[l] = 0.999f, a[l] = 0.001f;
    __asm__ volatile("" : "+x"(m), "+x"(a));
    double t0 = now_s();
    for (long it = 0; it < n / 12; it++)
        for (int i = 0; i < 12; i++) acc[i] = acc[i] * m + a;
    double t = now_s() - t0;
    float s = 0;
    for (int i = 0; i < 12; i++) s += acc[i][0];
    if (s == 12345.0f) printf("%f\n", (double)s);
    return (double)(n / 12) * 12 * LANES * 2 / t;
}

typedef struct Shape {
    const char *name;
    int64_t count, hw, c, m, k, s; /* times in the model, input side, channels, kernel, stride */
} Shape;

static const Shape resnet50[] = {
    {"stem 7x7/2 3->64 @224", 1, 224, 3, 64, 7, 2},
    {"l1 1x1 64->64 @56", 1, 56, 64, 64, 1, 1},
    {"l1 1x1 256->64 @56", 2, 56, 256, 64, 1, 1},
    {"l1 3x3 64 @56", 3, 56, 64, 64, 3, 1},
    {"l1 1x1 64->256 @56", 4, 56, 64, 256, 1, 1}, /* 3 + the downsample */
    {"l2 1x1 256->128 @56", 1, 56, 256, 128, 1, 1},
    {"l2 3x3/2 128 @56", 1, 56, 128, 128, 3, 2},
    {"l2 1x1/2 256->512 @56", 1, 56, 256, 512, 1, 2},
    {"l2 1x1 512->128 @28", 3, 28, 512, 128, 1, 1},
    {"l2 3x3 128 @28", 3, 28, 128, 128, 3, 1},
    {"l2 1x1 128->512 @28", 4, 28, 128, 512, 1, 1},
    {"l3 1x1 512->256 @28", 1, 28, 512, 256, 1, 1},
    {"l3 3x3/2 256 @28", 1, 28, 256, 256, 3, 2},
    {"l3 1x1/2 512->1024 @28", 1, 28, 512, 1024, 1, 2},
    {"l3 1x1 1024->256 @14", 5, 14, 1024, 256, 1, 1},
    {"l3 3x3 256 @14", 5, 14, 256, 256, 3, 1},
    {"l3 1x1 256->1024 @14", 6, 14, 256, 1024, 1, 1},
    {"l4 1x1 1024->512 @14", 1, 14, 1024, 512, 1, 1},
    {"l4 3x3/2 512 @14", 1, 14, 512, 512, 3, 2},
    {"l4 1x1/2 1024->2048 @14", 1, 14, 1024, 2048, 1, 2},
    {"l4 1x1 2048->512 @7", 2, 7, 2048, 512, 1, 1},
    {"l4 3x3 512 @7", 2, 7, 512, 512, 3, 1},
    {"l4 1x1 512->2048 @7", 3, 7, 512, 2048, 1, 1},
};

typedef struct Result {
    double direct_ms, wino_ms, err;
} Result;

/* Times shape s on the packed GEMM and (3x3 stride 1) on Winograd. */
static Result run_shape(const Shape *s) {
    RtConvGeom g;
    Result res = {0, 0, 0};
    memset(&g, 0, sizeof g);
    g.n = 1, g.c = s->c, g.m = s->m, g.group = 1;
    g.in[0] = g.out[0] = g.k[0] = g.s[0] = g.d[0] = 1;
    g.in[1] = g.in[2] = s->hw, g.k[1] = g.k[2] = s->k, g.s[1] = g.s[2] = s->s;
    g.d[1] = g.d[2] = 1, g.pad[1] = g.pad[2] = s->k / 2;
    g.out[1] = g.out[2] = (s->hw + 2 * (s->k / 2) - s->k) / s->s + 1;
    int64_t np = (s->m + RT_PGEMM_NR - 1) / RT_PGEMM_NR, K = s->k * s->k * s->c;
    int64_t xn = s->hw * s->hw * s->c, yn = g.out[1] * g.out[2] * s->m;
    int wino = s->k == 3 && s->s == 1;
    float *x = malloc((size_t)xn * 4), *w = malloc((size_t)(K * s->m) * 4);
    float *wp = malloc((size_t)(np * K * RT_PGEMM_NR) * 4);
    float *u = calloc((size_t)(36 * np * s->c * RT_PGEMM_NR), 4);
    float *ws = malloc((size_t)rt_wino_ws_floats(s->c) * 4); /* the bundle's worker scratch */
    const int64_t tiles = rt_wino_tiles(&g), tb = rt_wino_block_one(s->c);
    float *b = malloc((size_t)s->m * 4), *y = malloc((size_t)yn * 4), *y2 = malloc((size_t)yn * 4);
    for (int64_t i = 0; i < xn; i++) x[i] = (float)((i * 7919) % 13) * 0.15f - 0.9f;
    for (int64_t i = 0; i < K * s->m; i++) w[i] = (float)((i * 104729) % 11) * 0.02f - 0.1f;
    for (int64_t i = 0; i < s->m; i++) b[i] = 0.05f;
    for (int64_t p = 0; p < np; p++) /* w: (KH, KW, C, M) */
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < RT_PGEMM_NR; j++) {
                int64_t m = p * RT_PGEMM_NR + j;
                wp[(p * K + k) * RT_PGEMM_NR + j] = m < s->m ? w[k * s->m + m] : 0.0f;
            }
    if (wino) { /* U = G w GT, as backend/plan.c */
        static const double G[6][3] = {{0.25, 0, 0}, {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                       {-1.0 / 6, 1.0 / 6, -1.0 / 6}, {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                       {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};
        for (int64_t c = 0; c < s->c; c++)
            for (int64_t m = 0; m < s->m; m++)
                for (int i = 0; i < 6; i++)
                    for (int j = 0; j < 6; j++) {
                        double v = 0;
                        for (int r = 0; r < 3; r++)
                            for (int q = 0; q < 3; q++)
                                v += G[i][r] * w[((r * 3 + q) * s->c + c) * s->m + m] * G[j][q];
                        u[(((i * 6 + j) * np + m / RT_PGEMM_NR) * s->c + c) * RT_PGEMM_NR +
                          m % RT_PGEMM_NR] = (float)v;
                    }
    }
    RtAct relu = {RT_ACT_RELU, 0.0, 0.0};
    double td[RUNS], tw[RUNS];
    rt_pconv_nhwc_f32(x, wp, b, NULL, y, &g, &relu);
    if (wino) {
        double dmax = 0, ymax = 0;
        rt_wino_nhwc_tiles_ws_f32(x, u, b, NULL, y2, &g, &relu, 0, tiles, ws, tb);
        for (int64_t i = 0; i < yn; i++) {
            double d = fabs((double)y[i] - y2[i]);
            dmax = d > dmax ? d : dmax;
            ymax = fabs(y[i]) > ymax ? fabs(y[i]) : ymax;
        }
        res.err = dmax / (ymax > 0 ? ymax : 1);
    }
    for (int r = 0; r < RUNS; r++) {
        double t0 = now_s();
        rt_pconv_nhwc_f32(x, wp, b, NULL, y, &g, &relu);
        td[r] = now_s() - t0;
        if (wino) {
            t0 = now_s();
            rt_wino_nhwc_tiles_ws_f32(x, u, b, NULL, y2, &g, &relu, 0, tiles, ws, tb);
            tw[r] = now_s() - t0;
        }
    }
    qsort(td, RUNS, sizeof td[0], cmp);
    res.direct_ms = td[RUNS / 2] * 1e3;
    if (wino) {
        qsort(tw, RUNS, sizeof tw[0], cmp);
        res.wino_ms = tw[RUNS / 2] * 1e3;
    }
    free(x), free(w), free(wp), free(u), free(ws), free(b), free(y), free(y2);
    return res;
}

int main(int argc, char **argv) {
    int sweep = !(argc > 1 && strcmp(argv[1], "--model") == 0);
    double peak = fma_rate() / 1e9, tot_d = 0, tot_w = 0, tot_f = 0;
    printf("path %s, tile %d x %d, Winograd block %lld tiles at C=64; FMA loop %.1f GFLOP/s\n",
           RT_PGEMM_ISA, RT_PGEMM_MR, RT_PGEMM_NT, (long long)rt_wino_block_one(64), peak);
    printf("ResNet-50 convolutions (x count in the model):\n");
    printf("| shape | count | GFLOP (all) | packed ms (all) | packed GFLOP/s | of peak | "
           "Winograd ms (all) | Winograd eff. GFLOP/s | Winograd / packed | rule | max err |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n");
    for (size_t si = 0; si < sizeof resnet50 / sizeof resnet50[0]; si++) {
        const Shape *s = &resnet50[si];
        int64_t oh = (s->hw + 2 * (s->k / 2) - s->k) / s->s + 1;
        double flop = 2.0 * (double)(oh * oh * s->m) * (double)(s->k * s->k * s->c);
        Result r = run_shape(s);
        double n = (double)s->count;
        int pays = s->k == 3 && s->s == 1 && plan_wino_pays(s->c, s->m, oh, oh);
        tot_f += n * flop;
        tot_d += n * r.direct_ms;
        tot_w += n * (pays ? r.wino_ms : r.direct_ms);
        printf("| %s | %lld | %.3f | %.2f | %.1f | %.0f%% |", s->name, (long long)s->count,
               n * flop / 1e9, n * r.direct_ms, flop / r.direct_ms / 1e6,
               100 * flop / r.direct_ms / 1e6 / peak);
        if (r.wino_ms > 0)
            printf(" %.2f | %.1f | %.2f | %s | %.1e |\n", n * r.wino_ms, flop / r.wino_ms / 1e6,
                   r.wino_ms / r.direct_ms, pays ? "Winograd" : "packed", r.err);
        else
            printf(" | | | packed | |\n");
        fflush(stdout);
    }
    printf("all convolutions: %.2f GFLOP, packed %.1f ms (%.1f GFLOP/s), with the rule %.1f ms "
           "(ratio %.2f)\n", tot_f / 1e9, tot_d, tot_f / tot_d / 1e6, tot_w, tot_w / tot_d);
    if (!sweep) return 0;
    printf("\n3x3 stride-1 sweep (pad 1, C = M): Winograd / packed time\n| C \\ side |");
    static const int64_t sides[] = {4, 7, 8, 14, 28, 56};
    static const int64_t chans[] = {8, 16, 32, 64, 128, 256, 512};
    for (size_t i = 0; i < sizeof sides / sizeof sides[0]; i++) printf(" %lld |", (long long)sides[i]);
    printf("\n|---|");
    for (size_t i = 0; i < sizeof sides / sizeof sides[0]; i++) printf("---:|");
    printf("\n");
    for (size_t ci = 0; ci < sizeof chans / sizeof chans[0]; ci++) {
        printf("| %lld |", (long long)chans[ci]);
        for (size_t i = 0; i < sizeof sides / sizeof sides[0]; i++) {
            Shape s = {"sweep", 1, sides[i], chans[ci], chans[ci], 3, 1};
            if (chans[ci] * chans[ci] * sides[i] * sides[i] > 512LL * 512 * 14 * 14) {
                printf(" |");
                continue;
            }
            Result r = run_shape(&s);
            printf(" %.2f%s |", r.wino_ms / r.direct_ms,
                   plan_wino_pays(chans[ci], chans[ci], sides[i], sides[i]) ? "*" : "");
            fflush(stdout);
        }
        printf("\n");
    }
    printf("(* : the rule picks Winograd)\n");
    return 0;
}
