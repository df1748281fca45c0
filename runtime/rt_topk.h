/* rt_topk.h: TopK along one axis. Each slice keeps its k best elements in the outputs
 * themselves, in order, by insertion (O(n*k), no scratch memory): among equal values the
 * lower index comes first, as ONNX specifies. f16/bf16 compare in float. */
#ifndef KILN_RT_TOPK_H
#define KILN_RT_TOPK_H

#include "rt_common.h"

#define RT_TOPK_ID(v) (v)

/* The k read from the data against the compiled one: RT_ERR_SHAPE when they differ. */
RT_API int rt_topk_check_k(int64_t k, int64_t compiled_k) {
    return k == compiled_k ? RT_OK : RT_ERR_SHAPE;
}

/* Defines rt_topk_SFX(x, vals, idx, outer, n, inner, k, largest).
 * x: (outer, n, inner); vals: (outer, k, inner) like x; idx: (outer, k, inner) int64. */
#define RT_TOPK_DEFINE(SFX, T, ACC, LD)                                                        \
    RT_API void rt_topk_##SFX(const T *x, T *vals, int64_t *idx, int64_t outer, int64_t n,     \
                              int64_t inner, int64_t k, int largest) {                         \
        int64_t o, i, j, m;                                                                    \
        for (o = 0; o < outer; o++)                                                            \
            for (i = 0; i < inner; i++) {                                                      \
                const T *xs = x + o * n * inner + i;                                           \
                T *vs = vals + o * k * inner + i;                                              \
                int64_t *is = idx + o * k * inner + i, have = 0;                               \
                for (j = 0; j < n; j++) {                                                      \
                    ACC v = LD(xs[j * inner]);                                                 \
                    /* position: after every kept element at least as good as v */             \
                    m = have;                                                                  \
                    while (m > 0) {                                                            \
                        ACC w = LD(vs[(m - 1) * inner]);                                       \
                        if (largest ? !(v > w) : !(v < w)) break;                              \
                        m--;                                                                   \
                    }                                                                          \
                    if (m >= k) continue;                                                      \
                    if (have < k) have++;                                                      \
                    {                                                                          \
                        int64_t s;                                                             \
                        for (s = have - 1; s > m; s--) {                                       \
                            vs[s * inner] = vs[(s - 1) * inner];                               \
                            is[s * inner] = is[(s - 1) * inner];                               \
                        }                                                                      \
                    }                                                                          \
                    vs[m * inner] = xs[j * inner];                                             \
                    is[m * inner] = j;                                                         \
                }                                                                              \
            }                                                                                  \
    }

RT_TOPK_DEFINE(f32, float, float, RT_TOPK_ID)
RT_TOPK_DEFINE(f64, double, double, RT_TOPK_ID)
RT_TOPK_DEFINE(f16, uint16_t, float, rt_f16_to_f32)
RT_TOPK_DEFINE(bf16, uint16_t, float, rt_bf16_to_f32)
RT_TOPK_DEFINE(i8, int8_t, int8_t, RT_TOPK_ID)
RT_TOPK_DEFINE(u8, uint8_t, uint8_t, RT_TOPK_ID)
RT_TOPK_DEFINE(i16, int16_t, int16_t, RT_TOPK_ID)
RT_TOPK_DEFINE(u16, uint16_t, uint16_t, RT_TOPK_ID)
RT_TOPK_DEFINE(i32, int32_t, int32_t, RT_TOPK_ID)
RT_TOPK_DEFINE(u32, uint32_t, uint32_t, RT_TOPK_ID)
RT_TOPK_DEFINE(i64, int64_t, int64_t, RT_TOPK_ID)
RT_TOPK_DEFINE(u64, uint64_t, uint64_t, RT_TOPK_ID)

#endif
