/* rt_scan.h: CumSum and CumProd along one axis (inclusive or exclusive, forwards or in
 * reverse). The tensor is seen as (outer, n, inner); the axis may come from the data, so
 * rt_scan_split turns it into that view and range-checks it. f16/bf16 accumulate in float. */
#ifndef KILN_RT_SCAN_H
#define KILN_RT_SCAN_H

#include "rt_common.h"

/* (outer, n, inner) of dims (rank) split at axis (in [-rank, rank), else RT_ERR_INDEX). */
RT_API int rt_scan_split(int rank, const int64_t *dims, int64_t axis, int64_t *outer, int64_t *n,
                         int64_t *inner) {
    int d;
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return RT_ERR_INDEX;
    *outer = *inner = 1;
    for (d = 0; d < rank; d++) {
        if (d < axis) *outer *= dims[d];
        else if (d > axis) *inner *= dims[d];
    }
    *n = dims[axis];
    return RT_OK;
}

#define RT_SCAN_ID(v) (v)

/* Defines rt_cumsum_SFX and rt_cumprod_SFX(x, y, outer, n, inner, exclusive, reverse).
 * x, y: (outer, n, inner). */
#define RT_SCAN_DEFINE(NAME, SFX, T, ACC, LD, ST, INIT, STEP)                                  \
    RT_API void rt_##NAME##_##SFX(const T *x, T *y, int64_t outer, int64_t n, int64_t inner,   \
                                  int exclusive, int reverse) {                                \
        int64_t o, i, k;                                                                       \
        for (o = 0; o < outer; o++)                                                            \
            for (i = 0; i < inner; i++) {                                                      \
                const T *xs = x + o * n * inner + i;                                           \
                T *ys = y + o * n * inner + i;                                                 \
                ACC acc = INIT;                                                                \
                for (k = 0; k < n; k++) {                                                      \
                    int64_t at = (reverse ? n - 1 - k : k) * inner;                            \
                    ACC v = LD(xs[at]);                                                        \
                    if (exclusive) {                                                           \
                        ys[at] = ST(acc);                                                      \
                        STEP;                                                                  \
                    } else {                                                                   \
                        STEP;                                                                  \
                        ys[at] = ST(acc);                                                      \
                    }                                                                          \
                }                                                                              \
            }                                                                                  \
    }

#define RT_SCAN_OPS(SFX, T, ACC, LD, ST)                                                       \
    RT_SCAN_DEFINE(cumsum, SFX, T, ACC, LD, ST, 0, acc += v)                                   \
    RT_SCAN_DEFINE(cumprod, SFX, T, ACC, LD, ST, 1, acc *= v)

RT_SCAN_OPS(f32, float, float, RT_SCAN_ID, RT_SCAN_ID)
RT_SCAN_OPS(f64, double, double, RT_SCAN_ID, RT_SCAN_ID)
RT_SCAN_OPS(f16, uint16_t, float, rt_f16_to_f32, rt_f32_to_f16)
RT_SCAN_OPS(bf16, uint16_t, float, rt_bf16_to_f32, rt_f32_to_bf16)
/* Integers wrap modulo 2^bits, as in ONNX Runtime: accumulate unsigned. */
RT_SCAN_OPS(i32, int32_t, uint32_t, (uint32_t), (int32_t))
RT_SCAN_OPS(i64, int64_t, uint64_t, (uint64_t), (int64_t))
RT_SCAN_OPS(u32, uint32_t, uint32_t, RT_SCAN_ID, RT_SCAN_ID)
RT_SCAN_OPS(u64, uint64_t, uint64_t, RT_SCAN_ID, RT_SCAN_ID)

#endif
