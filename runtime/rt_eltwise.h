/* rt_eltwise.h: scalar helpers of inline elementwise code (Max/Min with numpy's NaN rule). */
#ifndef KILN_RT_ELTWISE_H
#define KILN_RT_ELTWISE_H

#include "rt_common.h"

RT_API float rt_nan_maxf(float a, float b) { return (a != a || b != b) ? NAN : (a > b ? a : b); }
RT_API float rt_nan_minf(float a, float b) { return (a != a || b != b) ? NAN : (a < b ? a : b); }
RT_API double rt_nan_max(double a, double b) {
    return (a != a || b != b) ? (double)NAN : (a > b ? a : b);
}
RT_API double rt_nan_min(double a, double b) {
    return (a != a || b != b) ? (double)NAN : (a < b ? a : b);
}
RT_API int64_t rt_max_i(int64_t a, int64_t b) { return a > b ? a : b; }
RT_API int64_t rt_min_i(int64_t a, int64_t b) { return a < b ? a : b; }
RT_API uint64_t rt_max_u(uint64_t a, uint64_t b) { return a > b ? a : b; }
RT_API uint64_t rt_min_u(uint64_t a, uint64_t b) { return a < b ? a : b; }

#endif
