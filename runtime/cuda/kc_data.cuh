/* kc_data.cuh: data movement of CUDA bundles, dtype-agnostic (elements moved by size):
 * one strided copy serves Transpose, Expand (stride 0), Slice (offset and signed steps)
 * and Concat (one copy per input into its place); Gather checks its indices and raises
 * KC_ERR_INDEX through the status flag (the element is then written as zero). */
#ifndef KILN_KC_DATA_CUH
#define KILN_KC_DATA_CUH

#include "kc_common.cuh"

#define KC_MAX_RANK 8 /* ranks of strided copies; the emitter merges or refuses more */

typedef struct KcStrided {
    int rank;
    int64_t dims[KC_MAX_RANK];  /* the iteration space (the output's shape) */
    int64_t src[KC_MAX_RANK];   /* source stride of each dimension, elements (may be <= 0) */
    int64_t dst[KC_MAX_RANK];   /* destination stride, elements */
    int64_t src0, dst0;         /* element offsets of index (0, ..., 0) */
} KcStrided;

template <typename T>
__global__ void kc_strided_kernel(const T *x, T *y, KcStrided p, int64_t total) {
    KC_FOR(i, total) {
        int64_t rest = i, si = p.src0, di = p.dst0;
        for (int d = p.rank - 1; d >= 0; d--) {
            int64_t q = rest % p.dims[d];
            rest /= p.dims[d];
            si += q * p.src[d];
            di += q * p.dst[d];
        }
        y[di] = x[si];
    }
}

/* elem: bytes per element (1, 2, 4 or 8). */
static inline int kc_strided_copy(cudaStream_t s, const void *x, void *y, int elem,
                                  const KcStrided *p) {
    int64_t total = 1;
    for (int d = 0; d < p->rank; d++) total *= p->dims[d];
    if (total <= 0) return KC_OK;
    unsigned g = kc_grid(total);
    switch (elem) {
    case 1: kc_strided_kernel<uint8_t><<<g, KC_THREADS, 0, s>>>((const uint8_t *)x, (uint8_t *)y, *p, total); break;
    case 2: kc_strided_kernel<uint16_t><<<g, KC_THREADS, 0, s>>>((const uint16_t *)x, (uint16_t *)y, *p, total); break;
    case 4: kc_strided_kernel<uint32_t><<<g, KC_THREADS, 0, s>>>((const uint32_t *)x, (uint32_t *)y, *p, total); break;
    case 8: kc_strided_kernel<uint64_t><<<g, KC_THREADS, 0, s>>>((const uint64_t *)x, (uint64_t *)y, *p, total); break;
    default: return KC_ERR_VALUE;
    }
    KC_LAUNCHED();
    return KC_OK;
}

/* x: (outer, A, inner), idx: (n_idx) -> y: (outer, n_idx, inner); idx in [-A, A). */
template <typename T, typename I>
__global__ void kc_gather_kernel(const T *x, const I *idx, T *y, int64_t A, int64_t n_idx,
                                 int64_t inner, int64_t total, int *status) {
    KC_FOR(i, total) {
        int64_t in = i % inner, j = (i / inner) % n_idx, o = i / (inner * n_idx);
        int64_t k = (int64_t)idx[j];
        if (k < 0) k += A;
        if (k < 0 || k >= A) {
            kc_raise(status, KC_ERR_INDEX);
            y[i] = (T)0;
        } else {
            y[i] = x[(o * A + k) * inner + in];
        }
    }
}

/* elem: bytes per element; idx64: indices are int64 (else int32). */
static inline int kc_gather(cudaStream_t s, const void *x, const void *idx, int idx64, void *y,
                            int elem, int64_t outer, int64_t A, int64_t n_idx, int64_t inner,
                            int *status) {
    int64_t total = outer * n_idx * inner;
    if (total <= 0) return KC_OK;
    unsigned g = kc_grid(total);
#define KC_GATHER_CASE(T)                                                                   \
    if (idx64)                                                                              \
        kc_gather_kernel<T, int64_t><<<g, KC_THREADS, 0, s>>>((const T *)x, (const int64_t *)idx, \
                                                              (T *)y, A, n_idx, inner, total, status); \
    else                                                                                    \
        kc_gather_kernel<T, int32_t><<<g, KC_THREADS, 0, s>>>((const T *)x, (const int32_t *)idx, \
                                                              (T *)y, A, n_idx, inner, total, status)
    switch (elem) {
    case 1: KC_GATHER_CASE(uint8_t); break;
    case 2: KC_GATHER_CASE(uint16_t); break;
    case 4: KC_GATHER_CASE(uint32_t); break;
    case 8: KC_GATHER_CASE(uint64_t); break;
    default: return KC_ERR_VALUE;
    }
#undef KC_GATHER_CASE
    KC_LAUNCHED();
    return KC_OK;
}

#endif
