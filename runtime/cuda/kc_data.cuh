/* kc_data.cuh: data movement of CUDA bundles, dtype-agnostic (elements moved by size):
 * one strided copy serves Transpose, Expand (stride 0), Slice (offset and signed steps)
 * and Concat (one copy per input into its place); Gather checks its indices and raises
 * KC_ERR_INDEX through the status flag (the element is then written as zero). */
#ifndef KILN_KC_DATA_CUH
#define KILN_KC_DATA_CUH

#include <string.h>

#include "kc_common.cuh"

#define KC_MAX_RANK 8 /* ranks of strided copies; the emitter merges or refuses more */

typedef struct KcStrided {
    int rank;
    int64_t dims[KC_MAX_RANK];  /* the iteration space (the output's shape) */
    int64_t src[KC_MAX_RANK];   /* source stride of each dimension, elements (may be <= 0) */
    int64_t dst[KC_MAX_RANK];   /* destination stride, elements */
    int64_t src0, dst0;         /* element offsets of index (0, ..., 0) */
} KcStrided;

/* I: the index type, int32_t when every index of the copy fits (32-bit division is several
 * times cheaper than 64-bit on the GPU). */
template <typename T, typename I>
__global__ void kc_strided_kernel(const T *x, T *y, KcStrided p, int64_t total) {
    kc_pdl_enter();
    KC_FOR(i, total) {
        I rest = (I)i, si = (I)p.src0, di = (I)p.dst0;
        for (int d = p.rank - 1; d >= 0; d--) {
            I q = rest % (I)p.dims[d];
            rest /= (I)p.dims[d];
            si += q * (I)p.src[d];
            di += q * (I)p.dst[d];
        }
        y[di] = x[si];
    }
}

/* p simplified: dimensions of size 1 dropped, and neighbours that are one run on both
 * sides merged (a Transpose of (b,t,h,d) to (b,h,t,d) keeps d contiguous, for example). */
static inline KcStrided kc_strided_simplify(const KcStrided *p) {
    KcStrided q;
    memset(&q, 0, sizeof q);
    q.src0 = p->src0, q.dst0 = p->dst0;
    for (int d = 0; d < p->rank; d++) {
        if (p->dims[d] == 1) continue;
        int r = q.rank - 1;
        if (r >= 0 && q.src[r] == p->src[d] * p->dims[d] && q.dst[r] == p->dst[d] * p->dims[d]) {
            q.dims[r] *= p->dims[d];
            q.src[r] = p->src[d], q.dst[r] = p->dst[d];
            continue;
        }
        q.dims[q.rank] = p->dims[d], q.src[q.rank] = p->src[d], q.dst[q.rank] = p->dst[d];
        q.rank++;
    }
    return q;
}

/* Elements per 16-byte vector that p can move at a time (1 when it cannot): the innermost
 * dimension contiguous on both sides, and every offset and stride (and both pointers)
 * 16-byte aligned in bytes. */
static inline int kc_strided_vec(const void *x, void *y, int elem, const KcStrided *p) {
    int v = 16 / elem, r = p->rank - 1;
    if (elem > 16 || r < 0 || p->src[r] != 1 || p->dst[r] != 1 || p->dims[r] % v != 0) return 1;
    if (((uintptr_t)x | (uintptr_t)y) % 16 != 0 || p->src0 % v != 0 || p->dst0 % v != 0)
        return 1;
    for (int d = 0; d < r; d++)
        if (p->src[d] % v != 0 || p->dst[d] % v != 0) return 1;
    return v;
}

template <typename T>
static inline void kc_strided_launch(cudaStream_t s, const void *x, void *y, const KcStrided *p,
                                     int64_t total, int small) {
    unsigned g = kc_grid(total);
    if (small)
        kc_launch(kc_strided_kernel<T, int32_t>, dim3(g), dim3(KC_THREADS), 0, s, (const T *)x,
                  (T *)y, *p, total);
    else
        kc_launch(kc_strided_kernel<T, int64_t>, dim3(g), dim3(KC_THREADS), 0, s, (const T *)x,
                  (T *)y, *p, total);
}

/* elem: bytes per element (1, 2, 4 or 8). */
static inline int kc_strided_copy(cudaStream_t s, const void *x, void *y, int elem,
                                  const KcStrided *p0) {
    KcStrided p = kc_strided_simplify(p0);
    int v = kc_strided_vec(x, y, elem, &p);
    if (v > 1) { /* move 16-byte vectors: strides and offsets in vectors */
        p.dims[p.rank - 1] /= v;
        for (int d = 0; d < p.rank; d++) p.src[d] /= v, p.dst[d] /= v;
        p.src[p.rank - 1] = p.dst[p.rank - 1] = 1;
        p.src0 /= v, p.dst0 /= v;
        elem = 16;
    }
    int64_t total = 1, reach = (p.src0 > p.dst0 ? p.src0 : p.dst0) + 1;
    for (int d = 0; d < p.rank; d++) {
        total *= p.dims[d];
        int64_t a = p.src[d] < 0 ? -p.src[d] : p.src[d], b = p.dst[d] < 0 ? -p.dst[d] : p.dst[d];
        reach += (p.dims[d] - 1) * (a > b ? a : b);
    }
    if (total <= 0) return KC_OK;
    int small = total < INT32_MAX && reach < INT32_MAX; /* every index fits in int32_t */
    switch (elem) {
    case 1: kc_strided_launch<uint8_t>(s, x, y, &p, total, small); break;
    case 2: kc_strided_launch<uint16_t>(s, x, y, &p, total, small); break;
    case 4: kc_strided_launch<uint32_t>(s, x, y, &p, total, small); break;
    case 8: kc_strided_launch<uint64_t>(s, x, y, &p, total, small); break;
    case 16: kc_strided_launch<uint4>(s, x, y, &p, total, small); break;
    default: return KC_ERR_VALUE;
    }
    KC_LAUNCHED();
    return KC_OK;
}

/* x: (outer, A, inner), idx: (n_idx) -> y: (outer, n_idx, inner); idx in [-A, A). */
template <typename T, typename I>
__global__ void kc_gather_kernel(const T *x, const I *idx, T *y, int64_t A, int64_t n_idx,
                                 int64_t inner, int64_t total, int *status) {
    kc_pdl_enter();
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
#define KC_GATHER_CASE(T)                                                                          \
    if (idx64)                                                                                     \
        kc_launch(kc_gather_kernel<T, int64_t>, dim3(g), dim3(KC_THREADS), 0, s, (const T *)x,     \
                  (const int64_t *)idx, (T *)y, A, n_idx, inner, total, status);                   \
    else                                                                                           \
        kc_launch(kc_gather_kernel<T, int32_t>, dim3(g), dim3(KC_THREADS), 0, s, (const T *)x,     \
                  (const int32_t *)idx, (T *)y, A, n_idx, inner, total, status)
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
