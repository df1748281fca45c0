/* rt_pool.h: MaxPool (with the optional Indices output), AveragePool, LpPool and the global
 * pools, over NC + up to 3 spatial dims (1D and 2D run as 3D with leading sizes of 1). The
 * geometry (auto_pad, ceil_mode) is resolved at compile time into RtPoolGeom. Windows are
 * clipped to the input: padding never contributes a value, only (AveragePool with
 * count_include_pad) a count. 16-bit floats compute in float. Channels-last (NHWC) forms of
 * the max, average and global pools serve passes/layout.c. Every sum goes through rt_sum.h
 * (its error does not grow with the window or the map); an average over no element is NaN
 * (0/0, as numpy's and ONNX Runtime's mean of an empty set), so no output goes unwritten. C99. */
#ifndef KILN_RT_POOL_H
#define KILN_RT_POOL_H

#include "rt_common.h"
#include "rt_par.h"
#include "rt_sum.h"

#define RT_POOL_SPATIAL 3 /* (D,H,W): 1D and 2D pools use leading sizes of 1 */
#define RT_POOL_PAR_CHANNELS 16 /* the channels-last global pool's split: 16 floats are one
                                   cache line, so that no two tasks read one line */

typedef struct RtPoolGeom {
    int64_t nc;                      /* planes: batch * channels */
    int64_t in[RT_POOL_SPATIAL];     /* input spatial sizes */
    int64_t out[RT_POOL_SPATIAL];    /* output spatial sizes */
    int64_t k[RT_POOL_SPATIAL];      /* kernel */
    int64_t s[RT_POOL_SPATIAL];      /* strides */
    int64_t d[RT_POOL_SPATIAL];      /* dilations */
    int64_t pad[RT_POOL_SPATIAL];    /* leading pads */
    int64_t pad_end[RT_POOL_SPATIAL]; /* trailing pads (count_include_pad counts up to these) */
} RtPoolGeom;

/* Window of output position o along one axis: the taps [lo, hi) (tap t reads input
 * o*s - pad + t*d) that fall inside the input, and how many fall inside input + pads. */
RT_API void rt_pool_taps(const RtPoolGeom *g, int a, int64_t o, int64_t *lo, int64_t *hi,
                         int64_t *n_padded) {
    int64_t start = o * g->s[a] - g->pad[a], t, l = g->k[a], h = 0, np = 0;
    for (t = 0; t < g->k[a]; t++) {
        int64_t p = start + t * g->d[a];
        if (p >= 0 && p < g->in[a]) {
            if (t < l) l = t;
            h = t + 1;
        }
        if (p >= -g->pad[a] && p < g->in[a] + g->pad_end[a]) np++;
    }
    if (l > h) l = h;
    *lo = l;
    *hi = h;
    *n_padded = np;
}

/* Iterates the output positions of one plane and, inside, the valid taps of the window.
 * Declares: o0..o2 (output position), ip (input offset in the plane), lo/hi per axis. */
#define RT_POOL_FOR_WINDOWS(g, ...)                                                           \
    do {                                                                                      \
        int64_t o0, o1, o2, lo[RT_POOL_SPATIAL], hi[RT_POOL_SPATIAL], np[RT_POOL_SPATIAL];    \
        for (o0 = 0; o0 < (g)->out[0]; o0++) {                                                \
            rt_pool_taps((g), 0, o0, &lo[0], &hi[0], &np[0]);                                 \
            for (o1 = 0; o1 < (g)->out[1]; o1++) {                                            \
                rt_pool_taps((g), 1, o1, &lo[1], &hi[1], &np[1]);                             \
                for (o2 = 0; o2 < (g)->out[2]; o2++) {                                        \
                    rt_pool_taps((g), 2, o2, &lo[2], &hi[2], &np[2]);                         \
                    __VA_ARGS__                                                               \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
    } while (0)

/* Input coordinates of tap (t0,t1,t2) of the window at (o0,o1,o2). */
#define RT_POOL_I(g, a, o, t) ((o) * (g)->s[a] - (g)->pad[a] + (t) * (g)->d[a])

/* MaxPool for element type T compared as CT; LOWEST (raw T) is the max of nothing: -inf, or
 * the type's smallest value (ReduceMax's rule for an empty set). */
#define RT_POOL_DEFINE_MAX(SFX, T, CT, LOAD, LOWEST)                                          \
    /* x: (NC,D,H,W), y: (NC,OD,OH,OW), idx: (NC,OD,OH,OW) or NULL: flat input indices,       \
     * row-major (storage_order 0) or column-major over the spatial dims (1). */              \
    RT_API void rt_maxpool_##SFX(const T *x, T *y, int64_t *idx, const RtPoolGeom *g,         \
                                 int storage_order) {                                         \
        const int64_t isz = g->in[0] * g->in[1] * g->in[2];                                   \
        int64_t c;                                                                            \
        for (c = 0; c < g->nc; c++) {                                                         \
            const T *xp = x + c * isz;                                                        \
            RT_POOL_FOR_WINDOWS(g, {                                                          \
                int64_t t0, t1, t2, best_at = -1;                                             \
                T best_raw = 0;                                                               \
                CT best = 0;                                                                  \
                for (t0 = lo[0]; t0 < hi[0]; t0++) {                                          \
                    const int64_t i0 = RT_POOL_I(g, 0, o0, t0);                               \
                    for (t1 = lo[1]; t1 < hi[1]; t1++) {                                      \
                        const int64_t i1 = RT_POOL_I(g, 1, o1, t1);                           \
                        for (t2 = lo[2]; t2 < hi[2]; t2++) {                                  \
                            const int64_t i2 = RT_POOL_I(g, 2, o2, t2);                       \
                            const int64_t at = (i0 * g->in[1] + i1) * g->in[2] + i2;          \
                            const CT v = LOAD(xp[at]);                                        \
                            if (best_at < 0 || v > best) {                                    \
                                best = v;                                                     \
                                best_raw = xp[at];                                            \
                                best_at = storage_order                                       \
                                              ? i0 + (i1 + i2 * g->in[1]) * g->in[0]          \
                                              : at;                                           \
                            }                                                                 \
                        }                                                                     \
                    }                                                                         \
                }                                                                             \
                *y++ = best_raw;                                                              \
                if (idx) *idx++ = best_at < 0 ? -1 : c * isz + best_at;                       \
            });                                                                               \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* x: (NC,S), y: (NC); an empty map (S = 0) gives LOWEST */                               \
    RT_API void rt_global_maxpool_##SFX(const T *x, T *y, int64_t nc, int64_t size) {         \
        int64_t c, i;                                                                         \
        for (c = 0; c < nc; c++) {                                                            \
            const T *xp = x + c * size;                                                       \
            T best_raw = LOWEST;                                                              \
            CT best;                                                                          \
            if (size == 0) {                                                                  \
                y[c] = best_raw;                                                              \
                continue;                                                                     \
            }                                                                                 \
            best_raw = xp[0];                                                                 \
            best = LOAD(xp[0]);                                                               \
            for (i = 1; i < size; i++) {                                                      \
                const CT v = LOAD(xp[i]);                                                     \
                if (v > best) best = v, best_raw = xp[i];                                     \
            }                                                                                 \
            y[c] = best_raw;                                                                  \
        }                                                                                     \
    }

/* AveragePool, LpPool and the global average/Lp pools, summing in RtSumASFX (type ACC). */
#define RT_POOL_DEFINE_AVG(SFX, T, ACC, ASFX, LOAD, STORE, POW, SQRT, FABS)                   \
    /* x: (NC,D,H,W), y: (NC,OD,OH,OW) */                                                     \
    RT_API void rt_avgpool_##SFX(const T *x, T *y, const RtPoolGeom *g,                       \
                                 int count_include_pad) {                                     \
        const int64_t isz = g->in[0] * g->in[1] * g->in[2];                                   \
        int64_t c;                                                                            \
        for (c = 0; c < g->nc; c++) {                                                         \
            const T *xp = x + c * isz;                                                        \
            RT_POOL_FOR_WINDOWS(g, {                                                          \
                int64_t t0, t1, t2, cnt;                                                      \
                RtSum##ASFX sum;                                                              \
                rt_sum_init_##ASFX(&sum);                                                     \
                for (t0 = lo[0]; t0 < hi[0]; t0++) {                                          \
                    const int64_t i0 = RT_POOL_I(g, 0, o0, t0);                               \
                    for (t1 = lo[1]; t1 < hi[1]; t1++) {                                      \
                        const int64_t i1 = RT_POOL_I(g, 1, o1, t1);                           \
                        const T *row = xp + (i0 * g->in[1] + i1) * g->in[2];                  \
                        for (t2 = lo[2]; t2 < hi[2]; t2++)                                    \
                            rt_sum_add_##ASFX(&sum, LOAD(row[RT_POOL_I(g, 2, o2, t2)]));      \
                    }                                                                         \
                }                                                                             \
                cnt = count_include_pad ? np[0] * np[1] * np[2]                               \
                                        : (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]); \
                *y++ = STORE(cnt > 0 ? rt_sum_total_##ASFX(&sum) / (ACC)cnt : (ACC)0);        \
            });                                                                               \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* x: (NC,D,H,W), y: (NC,OD,OH,OW); y = (sum |x|^p)^(1/p) over the window */              \
    RT_API void rt_lppool_##SFX(const T *x, T *y, const RtPoolGeom *g, int64_t p) {           \
        const int64_t isz = g->in[0] * g->in[1] * g->in[2];                                   \
        int64_t c;                                                                            \
        for (c = 0; c < g->nc; c++) {                                                         \
            const T *xp = x + c * isz;                                                        \
            RT_POOL_FOR_WINDOWS(g, {                                                          \
                int64_t t0, t1, t2;                                                           \
                RtSum##ASFX acc;                                                              \
                ACC sum;                                                                      \
                (void)np;                                                                     \
                rt_sum_init_##ASFX(&acc);                                                     \
                for (t0 = lo[0]; t0 < hi[0]; t0++) {                                          \
                    const int64_t i0 = RT_POOL_I(g, 0, o0, t0);                               \
                    for (t1 = lo[1]; t1 < hi[1]; t1++) {                                      \
                        const int64_t i1 = RT_POOL_I(g, 1, o1, t1);                           \
                        const T *row = xp + (i0 * g->in[1] + i1) * g->in[2];                  \
                        for (t2 = lo[2]; t2 < hi[2]; t2++) {                                  \
                            const ACC v = FABS(LOAD(row[RT_POOL_I(g, 2, o2, t2)]));           \
                            rt_sum_add_##ASFX(&acc, p == 2 ? v * v : p == 1 ? v               \
                                                                   : POW(v, (ACC)p));         \
                        }                                                                     \
                    }                                                                         \
                }                                                                             \
                sum = rt_sum_total_##ASFX(&acc);                                              \
                *y++ = STORE(p == 2 ? SQRT(sum) : p == 1 ? sum : POW(sum, (ACC)1 / (ACC)p));  \
            });                                                                               \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* x: (NC,S), y: (NC); an empty map (S = 0) gives NaN */                                  \
    RT_API void rt_global_avgpool_##SFX(const T *x, T *y, int64_t nc, int64_t size) {         \
        int64_t c, i;                                                                         \
        for (c = 0; c < nc; c++) {                                                            \
            const T *xp = x + c * size;                                                       \
            RtSum##ASFX sum;                                                                  \
            rt_sum_init_##ASFX(&sum);                                                         \
            for (i = 0; i < size; i++) rt_sum_add_##ASFX(&sum, LOAD(xp[i]));                  \
            y[c] = STORE(rt_sum_total_##ASFX(&sum) / (ACC)size);                              \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* x: (NC,S), y: (NC) */                                                                  \
    RT_API void rt_global_lppool_##SFX(const T *x, T *y, int64_t nc, int64_t size,            \
                                       int64_t p) {                                           \
        int64_t c, i;                                                                         \
        for (c = 0; c < nc; c++) {                                                            \
            const T *xp = x + c * size;                                                       \
            RtSum##ASFX acc;                                                                  \
            ACC sum;                                                                          \
            rt_sum_init_##ASFX(&acc);                                                         \
            for (i = 0; i < size; i++) {                                                      \
                const ACC v = FABS(LOAD(xp[i]));                                              \
                rt_sum_add_##ASFX(&acc, p == 2 ? v * v : p == 1 ? v : POW(v, (ACC)p));        \
            }                                                                                 \
            sum = rt_sum_total_##ASFX(&acc);                                                  \
            y[c] = STORE(p == 2 ? SQRT(sum) : p == 1 ? sum : POW(sum, (ACC)1 / (ACC)p));      \
        }                                                                                     \
    }

/* Channels-last pools (the values passes/layout.c stores NHWC), float and double: the
 * geometry's nc is the batch, c the channels; every window reduces C contiguous values at a
 * time (RT_SUM_LANES of them side by side for the sums), in the same tap order and with the
 * same blocked sums as the NCHW kernels, so the results are bit-identical. */
#define RT_POOL_DEFINE_NHWC(SFX, T)                                                           \
    /* Output rows [u0, u1) of rt_maxpool_nhwc_SFX, rows numbered over (N,OD,OH): each      \
     * window's taps in the same order wherever its row falls. */                             \
    RT_API void rt_maxpool_nhwc_rows_##SFX(const T *x, T *y, const RtPoolGeom *g, int64_t c,  \
                                           int64_t u0, int64_t u1) {                          \
        const int64_t isz = g->in[0] * g->in[1] * g->in[2], rows = g->out[0] * g->out[1];     \
        int64_t u, k, o2, lo[RT_POOL_SPATIAL], hi[RT_POOL_SPATIAL], np[RT_POOL_SPATIAL];      \
        y += u0 * g->out[2] * c;                                                              \
        for (u = u0; u < u1; u++) {                                                           \
            const T *xn = x + u / rows * isz * c;                                             \
            const int64_t o0 = u % rows / g->out[1], o1 = u % g->out[1];                      \
            rt_pool_taps(g, 0, o0, &lo[0], &hi[0], &np[0]);                                   \
            rt_pool_taps(g, 1, o1, &lo[1], &hi[1], &np[1]);                                   \
            for (o2 = 0; o2 < g->out[2]; o2++) {                                              \
                int64_t t0, t1, t2;                                                           \
                int first = 1;                                                                \
                rt_pool_taps(g, 2, o2, &lo[2], &hi[2], &np[2]);                               \
                for (t0 = lo[0]; t0 < hi[0]; t0++) {                                          \
                    const int64_t i0 = RT_POOL_I(g, 0, o0, t0);                               \
                    for (t1 = lo[1]; t1 < hi[1]; t1++) {                                      \
                        const int64_t i1 = RT_POOL_I(g, 1, o1, t1);                           \
                        for (t2 = lo[2]; t2 < hi[2]; t2++) {                                  \
                            const int64_t i2 = RT_POOL_I(g, 2, o2, t2);                       \
                            const T *restrict xr =                                            \
                                xn + ((i0 * g->in[1] + i1) * g->in[2] + i2) * c;              \
                            if (first) {                                                      \
                                for (k = 0; k < c; k++) y[k] = xr[k];                         \
                                first = 0;                                                    \
                            } else {                                                          \
                                for (k = 0; k < c; k++) y[k] = xr[k] > y[k] ? xr[k] : y[k];   \
                            }                                                                 \
                        }                                                                     \
                    }                                                                         \
                }                                                                             \
                if (first)                                                                    \
                    for (k = 0; k < c; k++) y[k] = 0;                                         \
                y += c;                                                                       \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    typedef struct RtMaxpoolTask##SFX {                                                       \
        const T *x;                                                                           \
        T *y;                                                                                 \
        const RtPoolGeom *g;                                                                  \
        int64_t c, n_tasks;                                                                   \
    } RtMaxpoolTask##SFX;                                                                     \
                                                                                              \
    RT_API void rt_maxpool_nhwc_task_##SFX(void *arg, int64_t task, int worker) {             \
        const RtMaxpoolTask##SFX *t = (const RtMaxpoolTask##SFX *)arg;                        \
        const int64_t all = t->g->nc * t->g->out[0] * t->g->out[1];                           \
        (void)worker;                                                                         \
        rt_maxpool_nhwc_rows_##SFX(t->x, t->y, t->g, t->c,                                    \
                                   rt_par_part(all, t->n_tasks, task),                        \
                                   rt_par_part(all, t->n_tasks, task + 1));                   \
    }                                                                                         \
                                                                                              \
    /* rt_maxpool_nhwc_SFX with its output rows shared among par's workers (rt_par.h; NULL:  \
     * serial) in even parts (rt_par_part), as the convolutions around it cut theirs         \
     * (rt_pgemm.h, rt_conv_nhwc.h): serial, ResNet-50's pool after the stem read half its    \
     * input from the other worker's cache and the two layers after it half theirs            \
     * (bench/cpu/locality.py), and the second worker waited. */                              \
    RT_API void rt_maxpool_nhwc_par_##SFX(const T *x, T *y, const RtPoolGeom *g, int64_t c,   \
                                          const RtPar *par) {                                 \
        const int64_t all = g->nc * g->out[0] * g->out[1];                                    \
        RtMaxpoolTask##SFX t;                                                                 \
        if (all <= 0 || g->out[2] <= 0 || c <= 0) return;                                     \
        t.x = x;                                                                              \
        t.y = y;                                                                              \
        t.g = g;                                                                              \
        t.c = c;                                                                              \
        t.n_tasks = rt_par_chunks(par, all, 1);                                               \
        rt_par_run(par, t.n_tasks, rt_maxpool_nhwc_task_##SFX, &t);                           \
    }                                                                                         \
                                                                                              \
    /* x: (N,D,H,W,C), y: (N,OD,OH,OW,C); a window with no tap inside the input gives 0 */    \
    RT_API void rt_maxpool_nhwc_##SFX(const T *x, T *y, const RtPoolGeom *g, int64_t c) {     \
        rt_maxpool_nhwc_rows_##SFX(x, y, g, c, 0, g->nc * g->out[0] * g->out[1]);             \
    }                                                                                         \
                                                                                              \
    /* x: (N,D,H,W,C), y: (N,OD,OH,OW,C) */                                                   \
    RT_API void rt_avgpool_nhwc_##SFX(const T *x, T *y, const RtPoolGeom *g, int64_t c,       \
                                      int count_include_pad) {                                \
        const int64_t isz = g->in[0] * g->in[1] * g->in[2];                                   \
        int64_t n, k;                                                                         \
        for (n = 0; n < g->nc; n++) {                                                         \
            const T *xn = x + n * isz * c;                                                    \
            RT_POOL_FOR_WINDOWS(g, {                                                          \
                int64_t t0, t1, t2, cnt, k0;                                                  \
                for (k0 = 0; k0 < c; k0 += RT_SUM_LANES) {                                    \
                    const int w = (int)(c - k0 < RT_SUM_LANES ? c - k0 : RT_SUM_LANES);       \
                    RtSumLanes##SFX sum;                                                      \
                    rt_sum_lanes_init_##SFX(&sum);                                            \
                    for (t0 = lo[0]; t0 < hi[0]; t0++) {                                      \
                        const int64_t i0 = RT_POOL_I(g, 0, o0, t0);                           \
                        for (t1 = lo[1]; t1 < hi[1]; t1++) {                                  \
                            const int64_t i1 = RT_POOL_I(g, 1, o1, t1);                       \
                            for (t2 = lo[2]; t2 < hi[2]; t2++) {                              \
                                const int64_t i2 = RT_POOL_I(g, 2, o2, t2);                   \
                                rt_sum_lanes_add_##SFX(                                       \
                                    &sum, xn + ((i0 * g->in[1] + i1) * g->in[2] + i2) * c + k0, \
                                    w);                                                       \
                            }                                                                 \
                        }                                                                     \
                    }                                                                         \
                    rt_sum_lanes_total_##SFX(&sum, y + k0, w);                                \
                }                                                                             \
                cnt = count_include_pad ? np[0] * np[1] * np[2]                               \
                                        : (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]); \
                for (k = 0; k < c; k++) y[k] = cnt > 0 ? y[k] / (T)cnt : (T)0;                \
                y += c;                                                                       \
            });                                                                               \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* Channels [k0, k1) of one image's global pool: xn (S,C), yn (C). Each channel is its    \
     * own reduction over the map, in the same order whichever range it falls in. */          \
    RT_API void rt_global_pool_nhwc_range_##SFX(const T *xn, T *yn, int64_t size, int64_t c,  \
                                                int64_t k0, int64_t k1, int is_max) {         \
        int64_t i, k;                                                                         \
        if (is_max) { /* an empty map (size 0) gives -inf, as ReduceMax */                    \
            for (k = k0; k < k1; k++) yn[k] = size ? xn[k] : (T)-INFINITY;                    \
            for (i = 1; i < size; i++)                                                        \
                for (k = k0; k < k1; k++)                                                     \
                    yn[k] = xn[i * c + k] > yn[k] ? xn[i * c + k] : yn[k];                    \
        } else { /* an empty map (size 0) gives NaN, as the NCHW kernel */                    \
            rt_sum_rows_##SFX(xn + k0, size, c, k1 - k0, yn + k0);                            \
            for (k = k0; k < k1; k++) yn[k] = yn[k] / (T)size;                                \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    typedef struct RtGlobalPoolTask##SFX {                                                    \
        const T *x;                                                                           \
        T *y;                                                                                 \
        int64_t size, c, per, n_kc; /* channels a task (RT_POOL_PAR_CHANNELS-multiple), tasks \
                                       an image */                                            \
        int is_max;                                                                           \
    } RtGlobalPoolTask##SFX;                                                                  \
                                                                                              \
    RT_API void rt_global_pool_nhwc_task_##SFX(void *arg, int64_t task, int worker) {         \
        const RtGlobalPoolTask##SFX *t = (const RtGlobalPoolTask##SFX *)arg;                  \
        const int64_t n = task / t->n_kc, k0 = task % t->n_kc * t->per;                       \
        (void)worker;                                                                         \
        rt_global_pool_nhwc_range_##SFX(t->x + n * t->size * t->c, t->y + n * t->c, t->size,  \
                                        t->c, k0, k0 + t->per < t->c ? k0 + t->per : t->c,    \
                                        t->is_max);                                           \
    }                                                                                         \
                                                                                              \
    /* x: (N,S,C), y: (N,C); is_max: GlobalMaxPool, else GlobalAveragePool. Tasks are        \
     * (image, block of channels) among par's workers (rt_par.h; NULL: serial): a task owns   \
     * whole channels, so no sum is split. */                                                 \
    RT_API void rt_global_pool_nhwc_par_##SFX(const T *x, T *y, int64_t n_batch,              \
                                              int64_t size, int64_t c, int is_max,            \
                                              const RtPar *par) {                             \
        const int64_t units = (c + RT_POOL_PAR_CHANNELS - 1) / RT_POOL_PAR_CHANNELS;          \
        const int64_t n_kc = rt_par_chunks(par, units, n_batch);                              \
        RtGlobalPoolTask##SFX t;                                                              \
        if (n_batch <= 0 || c <= 0) return;                                                   \
        t.x = x;                                                                              \
        t.y = y;                                                                              \
        t.size = size;                                                                        \
        t.c = c;                                                                              \
        t.per = (units + n_kc - 1) / n_kc * RT_POOL_PAR_CHANNELS;                             \
        t.n_kc = (c + t.per - 1) / t.per;                                                     \
        t.is_max = is_max;                                                                    \
        rt_par_run(par, n_batch * t.n_kc, rt_global_pool_nhwc_task_##SFX, &t);                \
    }                                                                                         \
                                                                                              \
    RT_API void rt_global_pool_nhwc_##SFX(const T *x, T *y, int64_t n_batch, int64_t size,    \
                                          int64_t c, int is_max) {                            \
        rt_global_pool_nhwc_par_##SFX(x, y, n_batch, size, c, is_max, (const RtPar *)0);      \
    }

RT_POOL_DEFINE_NHWC(f32, float)
RT_POOL_DEFINE_NHWC(f64, double)
#undef RT_POOL_DEFINE_NHWC

#define RT_POOL_ID(v) (v)
RT_POOL_DEFINE_MAX(f32, float, float, RT_POOL_ID, -INFINITY)
RT_POOL_DEFINE_MAX(f64, double, double, RT_POOL_ID, -(double)INFINITY)
RT_POOL_DEFINE_MAX(f16, uint16_t, float, rt_f16_to_f32, 0xfc00u) /* -inf */
RT_POOL_DEFINE_MAX(bf16, uint16_t, float, rt_bf16_to_f32, 0xff80u) /* -inf */
RT_POOL_DEFINE_MAX(i8, int8_t, int8_t, RT_POOL_ID, INT8_MIN)
RT_POOL_DEFINE_MAX(u8, uint8_t, uint8_t, RT_POOL_ID, 0)
RT_POOL_DEFINE_AVG(f32, float, float, f32, RT_POOL_ID, RT_POOL_ID, powf, sqrtf, fabsf)
RT_POOL_DEFINE_AVG(f64, double, double, f64, RT_POOL_ID, RT_POOL_ID, pow, sqrt, fabs)
RT_POOL_DEFINE_AVG(f16, uint16_t, float, f32, rt_f16_to_f32, rt_f32_to_f16, powf, sqrtf, fabsf)
RT_POOL_DEFINE_AVG(bf16, uint16_t, float, f32, rt_bf16_to_f32, rt_f32_to_bf16, powf, sqrtf,
                   fabsf)
#undef RT_POOL_ID
#undef RT_POOL_DEFINE_MAX
#undef RT_POOL_DEFINE_AVG
#undef RT_POOL_FOR_WINDOWS
#undef RT_POOL_I

#endif
