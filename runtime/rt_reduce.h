/* rt_reduce.h: the Reduce* ops and ArgMax/ArgMin. Reduce* works from a plan built at run
 * time from the axes (an attribute, a constant or a graph input alike): adjacent dimensions of
 * the same kind (kept or reduced) are merged, then every output element folds its reduced
 * elements, the innermost reduced group as a strided loop. The plan also checks the axes
 * against the compiled output shape. f16/bf16 accumulate in float, small ints in 64 bits.
 * Float sums (Sum, Mean, L1, L2, LogSum, SumSquare, the exp-sum of LogSumExp) go through
 * rt_sum.h, so their error does not grow with the number of reduced elements. An empty
 * reduction gives the ONNX values: Sum 0, Mean NaN (0/0), Max -inf, Min +inf, Prod 1. */
#ifndef KILN_RT_REDUCE_H
#define KILN_RT_REDUCE_H

#include "rt_common.h"
#include "rt_sum.h"

typedef struct RtReducePlan {
    int n_keep, n_red; /* merged groups of kept and of reduced dims, in input order */
    int64_t keep_dim[RT_MAX_RANK], keep_stride[RT_MAX_RANK];
    int64_t red_dim[RT_MAX_RANK], red_stride[RT_MAX_RANK];
    int64_t n_out;       /* output elements */
    int64_t n_red_elems; /* reduced elements per output element */
    int64_t red_outer_n, red_inner_n, red_inner_stride;
    int copy; /* noop_with_empty_axes and no axes: y = x */
} RtReducePlan;

/* Plans a reduction of x: dims (rank) over axes (n_axes entries, in [-rank, rank)); no axes
 * means all of them, or none when noop_empty. RT_ERR_INDEX for an axis out of range,
 * RT_ERR_SHAPE when the result's shape is not out_dims (out_rank). */
RT_API int rt_reduce_plan(RtReducePlan *p, int rank, const int64_t *dims, const int64_t *axes,
                          int64_t n_axes, int noop_empty, int keepdims, int out_rank,
                          const int64_t *out_dims) {
    uint8_t red[RT_MAX_RANK];
    int64_t stride[RT_MAX_RANK], s = 1;
    int d, r = 0, prev = -1;
    int64_t k;
    /* every entry defined, the unused groups too: gcc -O1 with the sanitizers otherwise
     * warns (-Wmaybe-uninitialized, an error under -Werror) in the kernels' offset loops */
    memset(p, 0, sizeof *p);
    if (rank < 0 || rank > RT_MAX_RANK) return RT_ERR_SHAPE;
    for (d = 0; d < rank; d++) red[d] = n_axes == 0 && !noop_empty;
    for (k = 0; k < n_axes; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
        if (a < 0 || a >= rank) return RT_ERR_INDEX;
        red[a] = 1;
    }
    p->copy = n_axes == 0 && noop_empty;
    for (d = 0; d < rank; d++) { /* the output shape this gives */
        if (red[d] && !keepdims) continue;
        if (r >= out_rank || out_dims[r] != (red[d] ? 1 : dims[d])) return RT_ERR_SHAPE;
        r++;
    }
    if (r != out_rank) return RT_ERR_SHAPE;
    for (d = rank - 1; d >= 0; d--) {
        stride[d] = s;
        s *= dims[d];
    }
    p->n_keep = p->n_red = 0;
    p->n_out = p->n_red_elems = 1;
    for (d = 0; d < rank; d++) {
        if (red[d]) p->n_red_elems *= dims[d];
        else p->n_out *= dims[d];
        if (dims[d] == 1) continue; /* size-1 dims move nothing */
        if (prev == red[d]) { /* merge with the previous group of the same kind */
            int64_t *gd = red[d] ? &p->red_dim[p->n_red - 1] : &p->keep_dim[p->n_keep - 1];
            int64_t *gs = red[d] ? &p->red_stride[p->n_red - 1] : &p->keep_stride[p->n_keep - 1];
            *gd *= dims[d];
            *gs = stride[d];
        } else if (red[d]) {
            p->red_dim[p->n_red] = dims[d];
            p->red_stride[p->n_red] = stride[d];
            p->n_red++;
        } else {
            p->keep_dim[p->n_keep] = dims[d];
            p->keep_stride[p->n_keep] = stride[d];
            p->n_keep++;
        }
        prev = red[d];
    }
    p->red_inner_n = p->n_red ? p->red_dim[p->n_red - 1] : 1;
    p->red_inner_stride = p->n_red ? p->red_stride[p->n_red - 1] : 0;
    p->red_outer_n = p->red_inner_n ? p->n_red_elems / p->red_inner_n : 0;
    return RT_OK;
}

/* Input offset of output element o, and of the o-th run of the innermost reduced group. */
RT_API int64_t rt_reduce_keep_offset(const RtReducePlan *p, int64_t o) {
    int64_t off = 0;
    int g;
    for (g = p->n_keep - 1; g >= 0; g--) {
        off += (o % p->keep_dim[g]) * p->keep_stride[g];
        o /= p->keep_dim[g];
    }
    return off;
}

RT_API int64_t rt_reduce_red_offset(const RtReducePlan *p, int64_t r) {
    int64_t off = 0;
    int g;
    for (g = p->n_red - 2; g >= 0; g--) {
        off += (r % p->red_dim[g]) * p->red_stride[g];
        r /= p->red_dim[g];
    }
    return off;
}

/* Defines rt_reduce_NAME(p, x, y): per output, acc = INIT; STEP for each element v; y = FIN
 * (FIN may use cnt, the number of reduced elements). x: dims of the plan, y: (n_out). */
#define RT_REDUCE_DEFINE(NAME, T, ACC, LD, ST, INIT, STEP, FIN)                                \
    RT_API void rt_reduce_##NAME(const RtReducePlan *p, const T *x, T *y) {                    \
        int64_t o, r, j, cnt = p->n_red_elems;                                                 \
        if (p->copy) {                                                                         \
            RT_FOR_EACH(o, p->n_out) y[o] = x[o];                                              \
            return;                                                                            \
        }                                                                                      \
        RT_FOR_EACH(o, p->n_out) {                                                             \
            const T *xo = x + rt_reduce_keep_offset(p, o);                                     \
            ACC acc = INIT;                                                                    \
            for (r = 0; r < p->red_outer_n; r++) {                                             \
                const T *xr = xo + rt_reduce_red_offset(p, r);                                 \
                for (j = 0; j < p->red_inner_n; j++) {                                         \
                    ACC v = LD(xr[j * p->red_inner_stride]);                                   \
                    STEP;                                                                      \
                }                                                                              \
            }                                                                                  \
            (void)cnt;                                                                         \
            y[o] = ST(FIN);                                                                    \
        }                                                                                      \
    }

/* Defines rt_reduce_NAME(p, x, y) for the sums: y = FIN(total of TERM(v)), the total kept
 * by an RtSumASFX accumulator (FIN may use cnt, the number of reduced elements). */
#define RT_REDUCE_SUM_DEFINE(NAME, T, ACC, ASFX, LD, ST, TERM, FIN)                            \
    RT_API void rt_reduce_##NAME(const RtReducePlan *p, const T *x, T *y) {                    \
        int64_t o, r, j, cnt = p->n_red_elems;                                                 \
        if (p->copy) {                                                                         \
            RT_FOR_EACH(o, p->n_out) y[o] = x[o];                                              \
            return;                                                                            \
        }                                                                                      \
        RT_FOR_EACH(o, p->n_out) {                                                             \
            const T *xo = x + rt_reduce_keep_offset(p, o);                                     \
            RtSum##ASFX s;                                                                     \
            ACC acc;                                                                           \
            rt_sum_init_##ASFX(&s);                                                            \
            for (r = 0; r < p->red_outer_n; r++) {                                             \
                const T *xr = xo + rt_reduce_red_offset(p, r);                                 \
                for (j = 0; j < p->red_inner_n; j++) {                                         \
                    ACC v = LD(xr[j * p->red_inner_stride]);                                   \
                    rt_sum_add_##ASFX(&s, TERM);                                               \
                }                                                                              \
            }                                                                                  \
            acc = rt_sum_total_##ASFX(&s);                                                     \
            (void)cnt;                                                                         \
            y[o] = ST(FIN);                                                                    \
        }                                                                                      \
    }

/* log(sum(exp(v))) with the maximum subtracted first (two passes). */
#define RT_REDUCE_LSE_DEFINE(NAME, T, ACC, ASFX, LD, ST, EXP, LOG)                             \
    RT_API void rt_reduce_##NAME(const RtReducePlan *p, const T *x, T *y) {                    \
        int64_t o, r, j;                                                                       \
        if (p->copy) {                                                                         \
            RT_FOR_EACH(o, p->n_out) y[o] = x[o];                                              \
            return;                                                                            \
        }                                                                                      \
        RT_FOR_EACH(o, p->n_out) {                                                             \
            const T *xo = x + rt_reduce_keep_offset(p, o);                                     \
            ACC mx = -(ACC)INFINITY;                                                           \
            RtSum##ASFX s;                                                                     \
            for (r = 0; r < p->red_outer_n; r++) {                                             \
                const T *xr = xo + rt_reduce_red_offset(p, r);                                 \
                for (j = 0; j < p->red_inner_n; j++) {                                         \
                    ACC v = LD(xr[j * p->red_inner_stride]);                                   \
                    if (v > mx) mx = v;                                                        \
                }                                                                              \
            }                                                                                  \
            if (mx == -(ACC)INFINITY || mx == (ACC)INFINITY || mx != mx) {                     \
                y[o] = ST(mx);                                                                 \
                continue;                                                                      \
            }                                                                                  \
            rt_sum_init_##ASFX(&s);                                                            \
            for (r = 0; r < p->red_outer_n; r++) {                                             \
                const T *xr = xo + rt_reduce_red_offset(p, r);                                 \
                for (j = 0; j < p->red_inner_n; j++)                                           \
                    rt_sum_add_##ASFX(&s, EXP(LD(xr[j * p->red_inner_stride]) - mx));          \
            }                                                                                  \
            y[o] = ST(LOG(rt_sum_total_##ASFX(&s)) + mx);                                      \
        }                                                                                      \
    }

#define RT_RED_ID(v) (v)

/* Every Reduce* op for a floating type; sums accumulate in RtSumASFX (ACC's type). */
#define RT_REDUCE_FLOAT_OPS(S, T, ACC, ASFX, LD, ST, SQRT, LOG, EXP, FABS)                     \
    RT_REDUCE_SUM_DEFINE(sum_##S, T, ACC, ASFX, LD, ST, v, acc)                                \
    RT_REDUCE_SUM_DEFINE(mean_##S, T, ACC, ASFX, LD, ST, v, acc / (ACC)cnt)                    \
    RT_REDUCE_DEFINE(max_##S, T, ACC, LD, ST, -(ACC)INFINITY, if (v > acc || v != v) acc = v, acc) \
    RT_REDUCE_DEFINE(min_##S, T, ACC, LD, ST, (ACC)INFINITY, if (v < acc || v != v) acc = v, acc) \
    RT_REDUCE_DEFINE(prod_##S, T, ACC, LD, ST, 1, acc *= v, acc)                               \
    RT_REDUCE_SUM_DEFINE(l1_##S, T, ACC, ASFX, LD, ST, FABS(v), acc)                           \
    RT_REDUCE_SUM_DEFINE(l2_##S, T, ACC, ASFX, LD, ST, v * v, SQRT(acc))                       \
    RT_REDUCE_SUM_DEFINE(log_sum_##S, T, ACC, ASFX, LD, ST, v, LOG(acc))                       \
    RT_REDUCE_SUM_DEFINE(sum_square_##S, T, ACC, ASFX, LD, ST, v * v, acc)                     \
    RT_REDUCE_LSE_DEFINE(log_sum_exp_##S, T, ACC, ASFX, LD, ST, EXP, LOG)

/* The Reduce* ops of an integer type, accumulated in 64 bits. */
#define RT_REDUCE_INT_OPS(S, T, ACC, TMIN, TMAX, ABS)                                          \
    RT_REDUCE_DEFINE(sum_##S, T, ACC, (ACC), (T), 0, acc += v, acc)                            \
    RT_REDUCE_DEFINE(mean_##S, T, ACC, (ACC), (T), 0, acc += v, cnt ? acc / (ACC)cnt : 0)      \
    RT_REDUCE_DEFINE(max_##S, T, ACC, (ACC), (T), TMIN, if (v > acc) acc = v, acc)             \
    RT_REDUCE_DEFINE(min_##S, T, ACC, (ACC), (T), TMAX, if (v < acc) acc = v, acc)             \
    RT_REDUCE_DEFINE(prod_##S, T, ACC, (ACC), (T), 1, acc *= v, acc)                           \
    RT_REDUCE_DEFINE(l1_##S, T, ACC, (ACC), (T), 0, acc += ABS(v), acc)                        \
    RT_REDUCE_DEFINE(sum_square_##S, T, ACC, (ACC), (T), 0, acc += v * v, acc)

RT_REDUCE_FLOAT_OPS(f32, float, float, f32, RT_RED_ID, RT_RED_ID, sqrtf, logf, expf, fabsf)
RT_REDUCE_FLOAT_OPS(f64, double, double, f64, RT_RED_ID, RT_RED_ID, sqrt, log, exp, fabs)
RT_REDUCE_FLOAT_OPS(f16, uint16_t, float, f32, rt_f16_to_f32, rt_f32_to_f16, sqrtf, logf, expf,
                    fabsf)
RT_REDUCE_FLOAT_OPS(bf16, uint16_t, float, f32, rt_bf16_to_f32, rt_f32_to_bf16, sqrtf, logf,
                    expf, fabsf)
#define RT_RED_ABS(v) ((v) < 0 ? -(v) : (v))
RT_REDUCE_INT_OPS(i8, int8_t, int64_t, INT8_MIN, INT8_MAX, RT_RED_ABS)
RT_REDUCE_INT_OPS(u8, uint8_t, uint64_t, 0, UINT8_MAX, RT_RED_ID)
RT_REDUCE_INT_OPS(i32, int32_t, int64_t, INT32_MIN, INT32_MAX, RT_RED_ABS)
RT_REDUCE_INT_OPS(u32, uint32_t, uint64_t, 0, UINT32_MAX, RT_RED_ID)
RT_REDUCE_INT_OPS(i64, int64_t, int64_t, INT64_MIN, INT64_MAX, RT_RED_ABS)
RT_REDUCE_INT_OPS(u64, uint64_t, uint64_t, 0, UINT64_MAX, RT_RED_ID)

/* Defines rt_arg_SFX(x, y, outer, n, inner, is_min, last): the index of the largest (smallest)
 * element along the axis, the first one or (last) the last one among ties.
 * x: (outer, n, inner), y: (outer, inner) int64. */
#define RT_ARG_DEFINE(SFX, T, ACC, LD)                                                         \
    RT_API void rt_arg_##SFX(const T *x, int64_t *y, int64_t outer, int64_t n, int64_t inner,  \
                             int is_min, int last) {                                           \
        int64_t e, k;                                                                          \
        RT_FOR_EACH(e, outer * inner) {                                                        \
            const int64_t o = e / inner, i = e % inner;                                        \
            const T *xs = x + o * n * inner + i;                                               \
            ACC best = n > 0 ? LD(xs[0]) : 0;                                                  \
            int64_t bi = 0;                                                                    \
            for (k = 1; k < n; k++) {                                                          \
                ACC v = LD(xs[k * inner]);                                                     \
                int better = is_min ? v < best : v > best;                                     \
                if (better || (last && v == best)) best = v, bi = k;                           \
            }                                                                                  \
            y[o * inner + i] = bi;                                                             \
        }                                                                                      \
    }

RT_ARG_DEFINE(f32, float, float, RT_RED_ID)
RT_ARG_DEFINE(f64, double, double, RT_RED_ID)
RT_ARG_DEFINE(f16, uint16_t, float, rt_f16_to_f32)
RT_ARG_DEFINE(bf16, uint16_t, float, rt_bf16_to_f32)
RT_ARG_DEFINE(i8, int8_t, int8_t, RT_RED_ID)
RT_ARG_DEFINE(u8, uint8_t, uint8_t, RT_RED_ID)
RT_ARG_DEFINE(i16, int16_t, int16_t, RT_RED_ID)
RT_ARG_DEFINE(u16, uint16_t, uint16_t, RT_RED_ID)
RT_ARG_DEFINE(i32, int32_t, int32_t, RT_RED_ID)
RT_ARG_DEFINE(u32, uint32_t, uint32_t, RT_RED_ID)
RT_ARG_DEFINE(i64, int64_t, int64_t, RT_RED_ID)
RT_ARG_DEFINE(u64, uint64_t, uint64_t, RT_RED_ID)

#endif
