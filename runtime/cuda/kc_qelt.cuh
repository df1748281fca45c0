/* kc_qelt.cuh: int8 elementwise kernels of the quantize pass beside kc_qconv.cuh's equal-shape
 * QAdd/QMul: QMul with B repeated over the middle dim (EfficientNet's squeeze-excitation
 * scale (N,1,1,C) over NHWC pixels). The C target's formula (rt_qmul_bcast in
 * runtime/rt_qconv.h), so a CUDA bundle writes the same uint8 bytes as the C bundle. */
#ifndef KILN_KC_QELT_CUH
#define KILN_KC_QELT_CUH

#include "kc_common.cuh"
#include "kc_qconv.cuh" /* kc_qround_shift */

/* y, a (outer, mid, inner), b (outer, inner): one thread per output byte; I: the index type,
 * 32-bit where the tensor allows it (a 64-bit division and remainder per byte is a long
 * instruction sequence on the GPU). */
template <typename I>
__global__ void kc_qmul_bcast_kernel(I count, I plane, I inner, const uint8_t *__restrict__ a,
                                     int32_t a_zp, const uint8_t *__restrict__ b, int32_t b_zp,
                                     int32_t m, int shift, int32_t y_zp, uint8_t *__restrict__ y) {
    kc_pdl_enter();
    KC_FOR(i64, count) {
        I i = (I)i64, o = i / plane, c = i % inner; /* plane = mid * inner */
        int64_t t = (int64_t)((int32_t)a[i] - a_zp) * ((int32_t)b[o * inner + c] - b_zp) * m;
        int64_t v = kc_qround_shift(t, shift) + y_zp;
        y[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
}

static inline int kc_qmul_bcast(cudaStream_t s, int64_t outer, int64_t mid, int64_t inner,
                                const uint8_t *a, int32_t a_zp, const uint8_t *b, int32_t b_zp,
                                int32_t m, int shift, int32_t y_zp, uint8_t *y) {
    int64_t count = outer * mid * inner;
    if (count <= 0) return KC_OK;
    if (count <= INT32_MAX)
        kc_launch(kc_qmul_bcast_kernel<int32_t>, dim3(kc_grid(count)), dim3(KC_THREADS), 0, s,
                  (int32_t)count, (int32_t)(mid * inner), (int32_t)inner, a, a_zp, b, b_zp, m,
                  shift, y_zp, y);
    else
        kc_launch(kc_qmul_bcast_kernel<int64_t>, dim3(kc_grid(count)), dim3(KC_THREADS), 0, s,
                  count, mid * inner, inner, a, a_zp, b, b_zp, m, shift, y_zp, y);
    KC_LAUNCHED();
    return KC_OK;
}

#endif
