/* rt_sum.h: sums whose rounding error does not grow with their length, for the reductions,
 * pools, normalizations and softmax (rt_reduce.h, rt_pool.h, rt_norm.h, rt_softmax.h,
 * rt_fusedattn.h, rt_flex.h). Adding n values one at a time to one float loses up to about
 * n ulps of the running total (a 160x160 map: 25600); here RT_SUM_BLOCK values are added
 * in sequence, and the block sums are combined pairwise by a binary counter (level k holds
 * the sum of 2^k blocks, a closing block carries upward like an increment), so the error is
 * bounded by (RT_SUM_BLOCK + log2(n / RT_SUM_BLOCK)) ulps of sum |x|: 46 for n = 1e6. The
 * values arrive one at a time, in any order and stride, with O(1) work per value.
 *
 * Why not a double accumulator: a Cortex-M4F has no double unit (each double add is a
 * library call), and float arithmetic gives the same results on every target. Why not
 * Kahan: four dependent operations per value, and -ffast-math deletes its correction.
 * The accumulator type follows the element type: float for f32, f16 and bf16, double for
 * f64. C99. */
#ifndef KILN_RT_SUM_H
#define KILN_RT_SUM_H

#include "rt_common.h"

#define RT_SUM_BLOCK 32  /* values added in sequence; 32 keeps a block's error below 32 ulps
                            and the counter's work to one carry per 32 values */
#define RT_SUM_LEVELS 32 /* pairwise levels: 2^32 blocks of 32, 2^37 values; beyond that the
                            top level keeps adding (never out of bounds) */
#define RT_SUM_LANES 8   /* columns summed side by side by rt_sum_rows_*: 8 floats are one
                            AVX register, and the state stays near 1 KiB of stack */

/* Defines, for accumulator type A (suffix SFX):
 *   RtSumSFX: the state of one sum; rt_sum_init_SFX, rt_sum_add_SFX(s, v), rt_sum_total_SFX;
 *   rt_sum_SFX(x, n, step): the sum of x[0], x[step], ... x[(n-1)*step];
 *   RtSumLanesSFX and rt_sum_lanes_*: RT_SUM_LANES sums side by side (one row at a time);
 *   rt_sum_rows_SFX(x, rows, row_step, cols, y): y[j] = sum over r of x[r*row_step + j],
 *   for j < cols (the column sums of a row-major block, e.g. a channels-last map). */
#define RT_SUM_DEFINE(SFX, A)                                                                  \
    typedef struct RtSum##SFX {                                                                \
        A part;         /* the open block */                                                   \
        int32_t n_part; /* values in it */                                                     \
        uint32_t live;  /* bit k set: level[k] holds a partial sum */                          \
        A level[RT_SUM_LEVELS];                                                                \
    } RtSum##SFX;                                                                              \
                                                                                               \
    RT_API void rt_sum_init_##SFX(RtSum##SFX *s) {                                             \
        s->part = 0;                                                                           \
        s->n_part = 0;                                                                         \
        s->live = 0;                                                                           \
    }                                                                                          \
                                                                                               \
    /* Closes the open block: carries it up through the live levels, as a binary increment    \
     * does; at the top level, sums only grow. */                                              \
    RT_API void rt_sum_close_##SFX(RtSum##SFX *s) {                                            \
        A c = s->part;                                                                         \
        int k = 0;                                                                             \
        for (; ((s->live >> k) & 1u) && k < RT_SUM_LEVELS - 1; k++) {                          \
            c += s->level[k];                                                                  \
            s->live &= ~(1u << k);                                                             \
        }                                                                                      \
        if ((s->live >> k) & 1u) c += s->level[k];                                             \
        s->level[k] = c;                                                                       \
        s->live |= 1u << k;                                                                    \
        s->part = 0;                                                                           \
        s->n_part = 0;                                                                         \
    }                                                                                          \
                                                                                               \
    RT_API void rt_sum_add_##SFX(RtSum##SFX *s, A v) {                                         \
        s->part += v;                                                                          \
        if (++s->n_part == RT_SUM_BLOCK) rt_sum_close_##SFX(s);                                \
    }                                                                                          \
                                                                                               \
    /* The open block, then the levels from the smallest up: partial sums meet in order of    \
     * size, as in a pairwise sum. */                                                          \
    RT_API A rt_sum_total_##SFX(const RtSum##SFX *s) {                                         \
        A t = s->part;                                                                         \
        int k;                                                                                 \
        for (k = 0; k < RT_SUM_LEVELS; k++)                                                    \
            if ((s->live >> k) & 1u) t += s->level[k];                                         \
        return t;                                                                              \
    }                                                                                          \
                                                                                               \
    RT_API A rt_sum_##SFX(const A *x, int64_t n, int64_t step) {                               \
        RtSum##SFX s;                                                                          \
        int64_t i;                                                                             \
        rt_sum_init_##SFX(&s);                                                                 \
        for (i = 0; i < n; i++) rt_sum_add_##SFX(&s, x[i * step]);                             \
        return rt_sum_total_##SFX(&s);                                                         \
    }                                                                                          \
                                                                                               \
    typedef struct RtSumLanes##SFX {                                                           \
        A part[RT_SUM_LANES];                                                                  \
        int32_t n_part;                                                                        \
        uint32_t live;                                                                         \
        A level[RT_SUM_LEVELS][RT_SUM_LANES];                                                  \
    } RtSumLanes##SFX;                                                                         \
                                                                                               \
    RT_API void rt_sum_lanes_init_##SFX(RtSumLanes##SFX *s) {                                  \
        int j;                                                                                 \
        for (j = 0; j < RT_SUM_LANES; j++) s->part[j] = 0;                                     \
        s->n_part = 0;                                                                         \
        s->live = 0;                                                                           \
    }                                                                                          \
                                                                                               \
    /* Closes the open block of every lane, as rt_sum_close. */                                \
    RT_API void rt_sum_lanes_close_##SFX(RtSumLanes##SFX *s) {                                 \
        int j, k = 0;                                                                          \
        for (; ((s->live >> k) & 1u) && k < RT_SUM_LEVELS - 1; k++) {                          \
            for (j = 0; j < RT_SUM_LANES; j++) s->part[j] += s->level[k][j];                   \
            s->live &= ~(1u << k);                                                             \
        }                                                                                      \
        if ((s->live >> k) & 1u)                                                               \
            for (j = 0; j < RT_SUM_LANES; j++) s->part[j] += s->level[k][j];                   \
        for (j = 0; j < RT_SUM_LANES; j++) s->level[k][j] = s->part[j], s->part[j] = 0;        \
        s->live |= 1u << k;                                                                    \
        s->n_part = 0;                                                                         \
    }                                                                                          \
                                                                                               \
    /* Adds x[0..w) (w <= RT_SUM_LANES) to lanes 0..w-1; the carry works as in rt_sum. */      \
    RT_API void rt_sum_lanes_add_##SFX(RtSumLanes##SFX *s, const A *x, int w) {                \
        int j;                                                                                 \
        for (j = 0; j < w; j++) s->part[j] += x[j];                                            \
        if (++s->n_part == RT_SUM_BLOCK) rt_sum_lanes_close_##SFX(s);                          \
    }                                                                                          \
                                                                                               \
    /* y[0..w) = the lanes' totals: each lane's open block, then its live levels from the     \
     * smallest up, as rt_sum_total (the lanes side by side, only the live levels visited). */ \
    RT_API void rt_sum_lanes_total_##SFX(const RtSumLanes##SFX *s, A *y, int w) {              \
        A t[RT_SUM_LANES];                                                                     \
        uint32_t live = s->live;                                                               \
        int j, k;                                                                              \
        for (j = 0; j < RT_SUM_LANES; j++) t[j] = s->part[j];                                  \
        for (k = 0; live; k++, live >>= 1)                                                     \
            if (live & 1u)                                                                     \
                for (j = 0; j < RT_SUM_LANES; j++) t[j] += s->level[k][j];                     \
        for (j = 0; j < w; j++) y[j] = t[j];                                                   \
    }                                                                                          \
                                                                                               \
    /* x: rows of row_step elements, the first cols of each summed; y: (cols) */               \
    RT_API void rt_sum_rows_##SFX(const A *x, int64_t rows, int64_t row_step, int64_t cols,    \
                                  A *y) {                                                      \
        RtSumLanes##SFX s;                                                                     \
        int64_t j0, r;                                                                         \
        for (j0 = 0; j0 < cols; j0 += RT_SUM_LANES) {                                          \
            const int w = (int)(cols - j0 < RT_SUM_LANES ? cols - j0 : RT_SUM_LANES);          \
            rt_sum_lanes_init_##SFX(&s);                                                       \
            if (w < RT_SUM_LANES) {                                                            \
                for (r = 0; r < rows; r++) rt_sum_lanes_add_##SFX(&s, x + r * row_step + j0, w); \
            } else { /* each block's sums in a local (registers), then closed as by _add */    \
                for (r = 0; r < rows;) {                                                       \
                    const int64_t n = rows - r < RT_SUM_BLOCK ? rows - r : RT_SUM_BLOCK;       \
                    A p[RT_SUM_LANES];                                                         \
                    int64_t i;                                                                 \
                    int j;                                                                     \
                    for (j = 0; j < RT_SUM_LANES; j++) p[j] = 0;                               \
                    for (i = 0; i < n; i++)                                                    \
                        for (j = 0; j < RT_SUM_LANES; j++) p[j] += x[(r + i) * row_step + j0 + j]; \
                    for (j = 0; j < RT_SUM_LANES; j++) s.part[j] = p[j];                       \
                    s.n_part = (int32_t)n;                                                     \
                    if (n == RT_SUM_BLOCK) rt_sum_lanes_close_##SFX(&s);                       \
                    r += n;                                                                    \
                }                                                                              \
            }                                                                                  \
            rt_sum_lanes_total_##SFX(&s, y + j0, w);                                           \
        }                                                                                      \
    }

RT_SUM_DEFINE(f32, float)
RT_SUM_DEFINE(f64, double)
#undef RT_SUM_DEFINE

#endif
