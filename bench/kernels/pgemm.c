/* Kernel lab of runtime/rt_pgemm.h: times the fp32 packed-GEMM convolution driver alone, one
 * thread, on every convolution shape of ResNet-50 (224x224, batch 1, with its count in the
 * model), BERT-base's and ViT-B/16's products (sequence 128 and 197 tokens: a product is a
 * 1x1 convolution over its rows) and a few of MobileNetV2's, and prints beside each its
 * floor (2 x MACs over one core's measured FMA rate) and the fraction of that rate reached.
 * Rows sum per class of shape, weighted by the count in the model.
 *
 * Built with -DPGEMM_PEER (bench/kernels/pgemm_ab.sh), a second version of the kernel (another
 * git revision's runtime/, bench/kernels/pgemm_peer.c) runs beside this tree's on the same
 * inputs and weights, the two alternating within each repetition so that both see the same
 * machine; the ratio column is this tree's median over the peer's. Every shape is first
 * checked on both against a naive loop in double (a wrong kernel stops the run).
 *
 * Timing: thread CPU time (a shared machine preempts), median of RUNS (--runs N), and the
 * ratio of the minima (the runs least disturbed by other jobs). Warm caches; with --cold every
 * call comes after a read of COLD_BYTES (outside the timing) that evicts the 32 MiB L3:
 * weights and activations come from memory; with --cold-weights only the weights are flushed
 * (clflush), as a model's are (read once a run), the activations staying where the call before
 * left them. The rate is measured here on 12 chains of FMAs; the clock on a chain of dependent
 * adds. Build and run (this tree alone; pgemm_ab.sh for the A/B):
 *   cc -O3 -march=native -I. bench/kernels/pgemm.c -o /tmp/pgemm -lm
 *   /tmp/pgemm [--cold | --cold-weights] [--runs N] [FILTER]
 * FILTER: only the shapes whose name or class contains it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rt_pgemm.h"

#define RUNS 11   /* timed calls of each side per shape, unless --runs N */
#define MAX_RUNS 101
#define COLD_BYTES (64L << 20) /* twice the L3 */
#define CHAIN 200000000L /* dependent adds of the clock measurement */

#ifdef PGEMM_PEER
const char *peer_pgemm_isa(void);
int peer_pgemm_tile(int *mr, int *nt);
void peer_pconv_nhwc_f32(const float *x, const float *wp, const float *b, const float *r,
                         float *y, const RtConvGeom *g, const RtAct *act);
#endif

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
    const char *cls;  /* the class its time sums into */
    const char *name;
    int count;        /* how often the model runs it */
    int64_t h, w, c, m, k, s; /* input size, channels in/out, kernel, stride (pad k/2) */
    int act;          /* RtActKind of the epilogue */
    int res;          /* with a residual input (a bottleneck's last 1x1) */
} Shape;

#define R50_1 "resnet50 1x1"
#define R50_3 "resnet50 3x3"
#define BERT "bert-base (128 rows)"
#define VIT "vit-b16 (197 rows)"
static const Shape shapes[] = {
    {"resnet50 stem", "r50 7x7/2 3->64 @224", 1, 224, 224, 3, 64, 7, 2, RT_ACT_RELU, 0},
    {R50_1, "r50 1x1 64->64 @56", 1, 56, 56, 64, 64, 1, 1, RT_ACT_RELU, 0},
    {R50_1, "r50 1x1 64->256 @56", 4, 56, 56, 64, 256, 1, 1, RT_ACT_RELU, 1},
    {R50_1, "r50 1x1 256->64 @56", 2, 56, 56, 256, 64, 1, 1, RT_ACT_RELU, 0},
    {R50_1, "r50 1x1 256->128 @56", 1, 56, 56, 256, 128, 1, 1, RT_ACT_RELU, 0},
    {R50_1, "r50 1x1/2 256->512 @56", 1, 56, 56, 256, 512, 1, 2, RT_ACT_NONE, 0},
    {R50_1, "r50 1x1 128->512 @28", 4, 28, 28, 128, 512, 1, 1, RT_ACT_RELU, 1},
    {R50_1, "r50 1x1 512->128 @28", 3, 28, 28, 512, 128, 1, 1, RT_ACT_RELU, 0},
    {R50_1, "r50 1x1 512->256 @28", 1, 28, 28, 512, 256, 1, 1, RT_ACT_RELU, 0},
    {R50_1, "r50 1x1/2 512->1024 @28", 1, 28, 28, 512, 1024, 1, 2, RT_ACT_NONE, 0},
    {R50_1, "r50 1x1 256->1024 @14", 6, 14, 14, 256, 1024, 1, 1, RT_ACT_RELU, 1},
    {R50_1, "r50 1x1 1024->256 @14", 5, 14, 14, 1024, 256, 1, 1, RT_ACT_RELU, 0},
    {R50_1, "r50 1x1 1024->512 @14", 1, 14, 14, 1024, 512, 1, 1, RT_ACT_RELU, 0},
    {R50_1, "r50 1x1/2 1024->2048 @14", 1, 14, 14, 1024, 2048, 1, 2, RT_ACT_NONE, 0},
    {R50_1, "r50 1x1 512->2048 @7", 3, 7, 7, 512, 2048, 1, 1, RT_ACT_RELU, 1},
    {R50_1, "r50 1x1 2048->512 @7", 2, 7, 7, 2048, 512, 1, 1, RT_ACT_RELU, 0},
    {R50_1, "r50 fc 2048->1000", 1, 1, 1, 2048, 1000, 1, 1, RT_ACT_NONE, 0},
    {R50_3, "r50 3x3 64 @56", 3, 56, 56, 64, 64, 3, 1, RT_ACT_RELU, 0},
    {R50_3, "r50 3x3/2 128 @56", 1, 56, 56, 128, 128, 3, 2, RT_ACT_RELU, 0},
    {R50_3, "r50 3x3 128 @28", 3, 28, 28, 128, 128, 3, 1, RT_ACT_RELU, 0},
    {R50_3, "r50 3x3/2 256 @28", 1, 28, 28, 256, 256, 3, 2, RT_ACT_RELU, 0},
    {R50_3, "r50 3x3 256 @14", 5, 14, 14, 256, 256, 3, 1, RT_ACT_RELU, 0},
    {R50_3, "r50 3x3/2 512 @14", 1, 14, 14, 512, 512, 3, 2, RT_ACT_RELU, 0},
    {R50_3, "r50 3x3 512 @7", 2, 7, 7, 512, 512, 3, 1, RT_ACT_RELU, 0},
    {BERT, "bert 128x768x2304 qkv", 12, 1, 128, 768, 2304, 1, 1, RT_ACT_NONE, 0},
    {BERT, "bert 128x768x768", 12, 1, 128, 768, 768, 1, 1, RT_ACT_NONE, 0},
    {BERT, "bert 128x768x3072 gelu", 12, 1, 128, 768, 3072, 1, 1, RT_ACT_GELU, 0},
    {BERT, "bert 128x3072x768", 12, 1, 128, 3072, 768, 1, 1, RT_ACT_NONE, 0},
    {VIT, "vit 197x768x768", 48, 1, 197, 768, 768, 1, 1, RT_ACT_NONE, 0},
    {VIT, "vit 197x768x3072 gelu", 12, 1, 197, 768, 3072, 1, 1, RT_ACT_GELU, 0},
    {VIT, "vit 197x3072x768", 12, 1, 197, 3072, 768, 1, 1, RT_ACT_NONE, 0},
    {"mobilenet_v2", "mbv2 3x3/2 3->32 @224", 1, 224, 224, 3, 32, 3, 2, RT_ACT_CLIP, 0},
    {"mobilenet_v2", "mbv2 1x1 32->16 @112", 1, 112, 112, 32, 16, 1, 1, RT_ACT_NONE, 0},
    {"mobilenet_v2", "mbv2 1x1 96->24 @56", 1, 56, 56, 96, 24, 1, 1, RT_ACT_NONE, 0},
    {"mobilenet_v2", "mbv2 1x1 32->192 @28", 1, 28, 28, 32, 192, 1, 1, RT_ACT_CLIP, 0},
    {"mobilenet_v2", "mbv2 1x1 960->160 @7", 1, 7, 7, 960, 160, 1, 1, RT_ACT_NONE, 0},
    {"mobilenet_v2", "mbv2 1x1 16->96 @112", 1, 112, 112, 16, 96, 1, 1, RT_ACT_CLIP, 0},
    {"mobilenet_v2", "mbv2 1x1 24->144 @56", 2, 56, 56, 24, 144, 1, 1, RT_ACT_CLIP, 0},
    {"mobilenet_v2", "mbv2 1x1 144->24 @56 res", 1, 56, 56, 144, 24, 1, 1, RT_ACT_NONE, 1},
    {"mobilenet_v2", "mbv2 1x1 144->32 @28", 1, 28, 28, 144, 32, 1, 1, RT_ACT_NONE, 0},
    {"efficientnet_b0", "effb0 1x1 40->240 @28", 2, 28, 28, 40, 240, 1, 1, RT_ACT_RELU, 0},
    {"efficientnet_b0", "effb0 1x1 480->112 @14", 1, 14, 14, 480, 112, 1, 1, RT_ACT_NONE, 0},
    {"effb0 silu", "effb0 1x1 16->96 @112 silu", 1, 112, 112, 16, 96, 1, 1, RT_ACT_SILU, 0},
    {"effb0 silu", "effb0 1x1 16->96 @112 none", 0, 112, 112, 16, 96, 1, 1, RT_ACT_NONE, 0},
    {"effb0 silu", "effb0 1x1 24->144 @56 silu", 2, 56, 56, 24, 144, 1, 1, RT_ACT_SILU, 0},
    {"effb0 silu", "effb0 1x1 24->144 @56 none", 0, 56, 56, 24, 144, 1, 1, RT_ACT_NONE, 0},
    {"effb0 silu", "effb0 1x1 40->240 @28 silu", 2, 28, 28, 40, 240, 1, 1, RT_ACT_SILU, 0},
    {"effb0 silu", "effb0 1x1 80->480 @14 silu", 3, 14, 14, 80, 480, 1, 1, RT_ACT_SILU, 0},
    {"effb0 silu", "effb0 1x1 112->672 @14 silu", 3, 14, 14, 112, 672, 1, 1, RT_ACT_SILU, 0},
    {"effb0 silu", "effb0 1x1 192->1152 @7 silu", 4, 7, 7, 192, 1152, 1, 1, RT_ACT_SILU, 0},
    {"effb0 silu", "effb0 1x1 320->1280 @7 silu", 1, 7, 7, 320, 1280, 1, 1, RT_ACT_SILU, 0},
    {"effb0 silu", "effb0 3x3/2 3->32 @224 silu", 1, 224, 224, 3, 32, 3, 2, RT_ACT_SILU, 0},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

typedef void (*ConvFn)(const float *x, const float *wp, const float *b, const float *r,
                       float *y, const RtConvGeom *g, const RtAct *act);

static float *falloc(int64_t n) {
    void *p = aligned_alloc(64, ((size_t)n * 4 + 63) / 64 * 64);
    if (!p) exit(2);
    return p;
}

static double act_ref(int kind, double v) {
    switch (kind) {
    case RT_ACT_RELU: return v < 0 ? 0 : v;
    case RT_ACT_CLIP: return v < 0 ? 0 : v > 6 ? 6 : v;
    case RT_ACT_GELU: return 0.5 * v * (1 + erf(v * RT_ACT_SQRT1_2));
    case RT_ACT_SIGMOID: return 1 / (1 + exp(-v));
    case RT_ACT_SILU: return v / (1 + exp(-v));
    default: return v;
    }
}

/* 0 when y matches the naive convolution in double on the checked pixels (every pixel of
 * small outputs, else every third and the last two tiles' worth) */
static int check(const char *side, const Shape *s, const RtConvGeom *g, const float *x,
                 const float *wp, const float *b, const float *r, const float *y) {
    const int64_t OH = g->out[1], OW = g->out[2], P = OH * OW, K = s->k * s->k * s->c;
    for (int64_t q = 0; q < P; q++) {
        if (P > 1024 && q % 3 != 0 && q < P - 32) continue;
        int64_t oh = q / OW, ow = q % OW;
        for (int64_t m = 0; m < s->m; m++) {
            double acc = b[m];
            for (int64_t kh = 0; kh < s->k; kh++)
                for (int64_t kw = 0; kw < s->k; kw++) {
                    int64_t ih = oh * s->s - g->pad[1] + kh, iw = ow * s->s - g->pad[2] + kw;
                    if (ih < 0 || ih >= s->h || iw < 0 || iw >= s->w) continue;
                    const float *xr = x + (ih * s->w + iw) * s->c;
                    const float *wr = wp + ((m / RT_PGEMM_NR) * K + (kh * s->k + kw) * s->c) *
                                               RT_PGEMM_NR + m % RT_PGEMM_NR;
                    for (int64_t c = 0; c < s->c; c++)
                        acc += (double)xr[c] * wr[c * RT_PGEMM_NR];
                }
            if (r) acc += r[q * s->m + m];
            acc = act_ref(s->act, acc);
            double got = y[q * s->m + m];
            if (!(fabs(got - acc) <= 1e-4 * (1 + fabs(acc)))) {
                printf("%s: %s WRONG at pixel %lld, channel %lld: %g, want %g\n", s->name, side,
                       (long long)q, (long long)m, got, acc);
                return 1;
            }
        }
    }
    return 0;
}

/* Reads COLD_BYTES a line at a time: the L3 then holds them (a large memset may bypass
 * the caches with non-temporal stores). */
static volatile unsigned char *cold_buf; /* NULL: warm caches */
static int cold_weights; /* the weights flushed from every cache before each call */

/* n floats at p out of every cache level (clflush; elsewhere nothing) */
static void flush(const float *p, int64_t n) {
#if defined(__x86_64__) || defined(__i386__)
    for (int64_t i = 0; i < n; i += 16) __builtin_ia32_clflush(p + i);
    __builtin_ia32_mfence();
#else
    (void)p, (void)n;
#endif
}
static void evict(void) {
    unsigned s = 0;
    if (!cold_buf) return;
    for (long i = 0; i < COLD_BYTES; i += 64) s += cold_buf[i];
    if (s == 1) printf(" ");
}

int main(int argc, char **argv) {
    int ai = 1, runs = RUNS;
    for (; ai < argc && argv[ai][0] == '-'; ai++)
        if (!strcmp(argv[ai], "--cold-weights")) {
            cold_weights = 1;
        } else if (!strcmp(argv[ai], "--cold")) {
            unsigned char *buf = malloc(COLD_BYTES);
            if (!buf) return 2;
            memset(buf, 1, COLD_BYTES); /* pages of their own, not the shared zero page */
            cold_buf = buf;
        } else if (!strcmp(argv[ai], "--runs") && ai + 1 < argc) {
            runs = atoi(argv[++ai]);
            runs = runs < 1 ? 1 : runs > MAX_RUNS ? MAX_RUNS : runs;
        } else {
            printf("usage: pgemm [--cold | --cold-weights] [--runs N] [FILTER]\n");
            return 2;
        }
    const char *filter = ai < argc ? argv[ai] : NULL;
    double hz = clock_hz(), fma = fma_rate() / 1e9;
    double nominal = 2 * LANES * 2 * hz / 1e9;
    printf("path %s, tile %d x %d; clock %.2f GHz (add chain): nominal peak 2 FMA x %d lanes x"
           " 2 x clock = %.1f GFLOP/s; FMA loop measured %.1f GFLOP/s (the floor's and %%"
           " columns' base)\n",
           RT_PGEMM_ISA, RT_PGEMM_MR, RT_PGEMM_NT, hz / 1e9, LANES, nominal, fma);
    const double peak = fma;
    int sides = 1;
    ConvFn fn[2] = {rt_pconv_nhwc_f32, NULL};
#ifdef PGEMM_PEER
    {
        int mr, nt, nr = peer_pgemm_tile(&mr, &nt);
        printf("peer: path %s, tile %d x %d\n", peer_pgemm_isa(), mr, nt);
        if (nr != RT_PGEMM_NR) {
            printf("the peer packs panels of %d columns, this tree %d: no A/B\n", nr,
                   RT_PGEMM_NR);
            return 1;
        }
        fn[1] = peer_pconv_nhwc_f32;
        sides = 2;
    }
#endif
    printf("caches %s\n", cold_buf       ? "cold (L3 evicted before every call)"
                           : cold_weights ? "warm, but the weights flushed before every call"
                                          : "warm");
    printf("%-26s %5s %8s %9s %7s", "shape", "count", "floor ms", "ms", "of peak");
    if (sides == 2) printf(" %9s %7s %9s %7s", "peer ms", "of peak", "this/peer", "(min)");
    printf("\n");
    double cls_floor = 0, cls_t[2] = {0, 0}, cls_min[2] = {0, 0};
    for (size_t si = 0; si < N_SHAPES; si++) {
        const Shape *s = &shapes[si];
        if (filter && !strstr(s->name, filter) && !strstr(s->cls, filter)) continue;
        RtConvGeom g;
        memset(&g, 0, sizeof g);
        g.n = 1, g.c = s->c, g.m = s->m, g.group = 1;
        g.in[0] = g.out[0] = g.k[0] = g.s[0] = g.d[0] = 1;
        g.in[1] = s->h, g.in[2] = s->w, g.k[1] = g.k[2] = s->k, g.s[1] = g.s[2] = s->s;
        g.d[1] = g.d[2] = 1, g.pad[1] = g.pad[2] = s->k / 2;
        g.out[1] = (s->h + 2 * (s->k / 2) - s->k) / s->s + 1;
        g.out[2] = (s->w + 2 * (s->k / 2) - s->k) / s->s + 1;
        int64_t np = (s->m + RT_PGEMM_NR - 1) / RT_PGEMM_NR, K = s->k * s->k * s->c;
        int64_t xn = s->h * s->w * s->c, yn = g.out[1] * g.out[2] * s->m;
        /* 64-byte aligned, as a bundle's arena and weights are */
        float *x = falloc(xn), *w = falloc(np * K * RT_PGEMM_NR), *b = falloc(s->m);
        float *y = falloc(yn), *r = s->res ? falloc(yn) : NULL;
        uint32_t seed = 12345u + (uint32_t)si;
#define RND() ((seed = seed * 1664525u + 1013904223u) >> 8) * (1.0f / 16777216.0f) - 0.5f
        for (int64_t i = 0; i < xn; i++) x[i] = RND();
        for (int64_t i = 0; i < np * K * RT_PGEMM_NR; i++) /* zeros past M, as plan.c */
            w[i] = (i / (K * RT_PGEMM_NR)) * RT_PGEMM_NR + i % RT_PGEMM_NR < s->m
                       ? RND() * 0.2f
                       : 0.0f;
        for (int64_t i = 0; i < s->m; i++) b[i] = RND();
        for (int64_t i = 0; r && i < yn; i++) r[i] = RND();
        RtAct act = {(RtActKind)s->act, s->act == RT_ACT_CLIP ? 0.0 : 0.0,
                     s->act == RT_ACT_CLIP ? 6.0 : 0.0};
        for (int side = 0; side < sides; side++) {
            memset(y, 0xff, (size_t)yn * 4); /* NaN: unwritten outputs show */
            fn[side](x, w, b, r, y, &g, &act);
            if (check(side ? "peer" : "this tree", s, &g, x, w, b, r, y)) return 1;
        }
        double t[2][MAX_RUNS];
        for (int rep = 0; rep < runs; rep++)
            for (int side = 0; side < sides; side++) {
                evict();
                if (cold_weights) flush(w, np * K * RT_PGEMM_NR);
                double t0 = now_s();
                fn[side](x, w, b, r, y, &g, &act);
                t[side][rep] = now_s() - t0;
            }
        double flop = 2.0 * (double)yn * (double)K, floor_ms = flop / peak / 1e6, med[2], mn[2];
        printf("%-26s %5d %8.3f", s->name, s->count, floor_ms);
        for (int side = 0; side < sides; side++) {
            qsort(t[side], (size_t)runs, sizeof t[side][0], cmp);
            med[side] = t[side][runs / 2] * 1e3, mn[side] = t[side][0] * 1e3;
            printf(" %9.3f %6.0f%%", med[side], 100 * floor_ms / med[side]);
        }
        if (sides == 2) printf(" %9.3f %7.3f", med[0] / med[1], mn[0] / mn[1]);
        printf("\n");
        cls_floor += s->count * floor_ms;
        for (int side = 0; side < sides; side++)
            cls_t[side] += s->count * med[side], cls_min[side] += s->count * mn[side];
        free(x), free(w), free(b), free(y), free(r);
        int more = 0; /* a later shape of this class still to run */
        for (size_t sj = si + 1; sj < N_SHAPES && !strcmp(shapes[sj].cls, s->cls); sj++)
            more |= !filter || strstr(shapes[sj].name, filter) || strstr(shapes[sj].cls, filter);
        if (!more) {
            printf("%-26s %5s %8.2f", s->cls, "all", cls_floor);
            for (int side = 0; side < sides; side++)
                printf(" %9.2f %6.0f%%", cls_t[side], 100 * cls_floor / cls_t[side]);
            if (sides == 2) printf(" %9.3f %7.3f", cls_t[0] / cls_t[1], cls_min[0] / cls_min[1]);
            printf("\n\n");
            cls_floor = cls_t[0] = cls_t[1] = cls_min[0] = cls_min[1] = 0;
        }
    }
    return 0;
}
