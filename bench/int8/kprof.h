/* kprof.h: a per-layer profile of an int8 Kiln bundle, for bench/int8/profile.sh. Included
 * ahead of the bundle's C file (cc -include kprof.h), it pulls in rt_qconv.h and then wraps
 * every int8 kernel call by a macro of the same name that times the call under its source
 * line, so each node is one entry, in CPU time of the thread (CLOCK_THREAD_CPUTIME_ID: on a
 * shared, loaded machine the time a preempted call waits is not its own); convolutions also
 * record their geometry and MACs. At exit it prints one line per node, slowest first, with ms per run
 * and GMAC/s, and the sum by class (depthwise, 1x1, kxk, gemm, the rest). The time outside
 * the wrapped kernels (float ops, quantize/dequantize at the edges) is what bench_main's
 * total has beyond the sum. Not part of any bundle; C99 with POSIX clocks. */
#ifndef KILN_KPROF_H
#define KILN_KPROF_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rt_qconv.h"

typedef struct KProf {
    int line;
    const char *kind;
    double ms, macs, min; /* min: the fastest single call (a node runs once a run) */
    long calls;
    char geo[96];
} KProf;

static KProf kprof_v[2048];
static int kprof_n;

static double kprof_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static KProf *kprof_at(int line, const char *kind) {
    int i;
    for (i = 0; i < kprof_n; i++)
        if (kprof_v[i].line == line) return &kprof_v[i];
    if (kprof_n == 2048) abort();
    kprof_v[kprof_n].line = line;
    kprof_v[kprof_n].kind = kind;
    return &kprof_v[kprof_n++];
}

static void kprof_conv(KProf *k, const RtQConv2d *g, int dw) {
    double macs = (double)g->n * (double)(g->oh * g->ow) * (double)g->m * (double)(g->kh * g->kw) *
                  (double)(g->c / g->group);
    if (k->geo[0]) return;
    k->macs = macs;
    k->kind = dw ? "depthwise" : g->kh * g->kw == 1 ? "conv1x1" : "convkxk";
    snprintf(k->geo, sizeof k->geo, "%lldx%lldx%lld -> %lldx%lldx%lld k%lldx%lld s%lld g%lld",
             (long long)g->h, (long long)g->w, (long long)g->c, (long long)g->oh, (long long)g->ow,
             (long long)g->m, (long long)g->kh, (long long)g->kw, (long long)g->sh, (long long)g->group);
}

#define KPROF_CALL(kind, setup, call)                                                          \
    do {                                                                                       \
        KProf *kp_ = kprof_at(__LINE__, kind);                                                 \
        double t0_ = kprof_now();                                                              \
        call;                                                                                  \
        t0_ = kprof_now() - t0_;                                                               \
        kp_->ms += t0_;                                                                        \
        if (kp_->calls == 0 || t0_ < kp_->min) kp_->min = t0_;                                 \
        kp_->calls++;                                                                          \
        setup;                                                                                 \
    } while (0)
#define rt_qconv2d(g, ...) KPROF_CALL("conv", kprof_conv(kp_, g, 0), rt_qconv2d(g, __VA_ARGS__))
#define rt_qdwconv2d(g, ...) KPROF_CALL("depthwise", kprof_conv(kp_, g, 1), rt_qdwconv2d(g, __VA_ARGS__))
#define rt_qgemm_rows(rows, K, c4, np, N, ...)                                                 \
    KPROF_CALL("gemm", (kp_->macs = (double)(rows) * (double)(K) * (double)(N)),               \
               rt_qgemm_rows(rows, K, c4, np, N, __VA_ARGS__))
#define rt_qadd(...) KPROF_CALL("add", (void)0, rt_qadd(__VA_ARGS__))
#define rt_qmul(...) KPROF_CALL("mul", (void)0, rt_qmul(__VA_ARGS__))
#define rt_qlut(...) KPROF_CALL("lut", (void)0, rt_qlut(__VA_ARGS__))
#define rt_qmaxpool2d(...) KPROF_CALL("maxpool", (void)0, rt_qmaxpool2d(__VA_ARGS__))
#define rt_qgavgpool(...) KPROF_CALL("gavgpool", (void)0, rt_qgavgpool(__VA_ARGS__))

static int kprof_cmp(const void *a, const void *b) {
    double x = ((const KProf *)a)->ms, y = ((const KProf *)b)->ms;
    return x < y ? 1 : x > y ? -1 : 0;
}

__attribute__((destructor)) static void kprof_dump(void) {
    static const char *classes[] = {"depthwise", "conv1x1", "convkxk", "gemm", NULL};
    double total = 0, cms[5] = {0}, cmacs[5] = {0};
    int i, c;
    if (kprof_n == 0) return; /* the harness's own file */
    qsort(kprof_v, (size_t)kprof_n, sizeof kprof_v[0], kprof_cmp);
    for (i = 0; i < kprof_n; i++) {
        double ms = kprof_v[i].ms / (double)kprof_v[i].calls;
        total += ms;
        for (c = 0; classes[c] && strcmp(classes[c], kprof_v[i].kind) != 0; c++) {
        }
        cms[c] += ms;
        cmacs[c] += kprof_v[i].macs;
    }
    printf("kprof: %d int8 kernel calls per run, %.2f ms per run in them\n", kprof_n, total);
    for (c = 0; c < 5; c++)
        printf("kprof class %-9s %8.2f ms %5.1f%%  %8.1f MMAC  %6.2f GMAC/s\n",
               classes[c] ? classes[c] : "rest", cms[c], 100 * cms[c] / total, cmacs[c] * 1e-6,
               cms[c] > 0 ? cmacs[c] / cms[c] * 1e-6 : 0.0);
    if (getenv("KPROF_RAW")) /* per node by source line, for a same-run A/B of two bundles */
        for (i = 0; i < kprof_n; i++)
            printf("kprofraw %d %s %.4f %.4f %s\n", kprof_v[i].line, kprof_v[i].kind, kprof_v[i].min,
                   kprof_v[i].ms / (double)kprof_v[i].calls, kprof_v[i].geo);
    for (i = 0; i < kprof_n; i++) {
        double ms = kprof_v[i].ms / (double)kprof_v[i].calls;
        printf("kprof %8.3f ms %5.1f%%  %-9s %6.2f GMAC/s  %s\n", ms, 100 * ms / total,
               kprof_v[i].kind, kprof_v[i].macs > 0 ? kprof_v[i].macs / ms * 1e-6 : 0.0,
               kprof_v[i].geo);
    }
}

#endif
