/* rt_index.h: kernels that move elements to or from positions read from the data: Gather,
 * GatherElements, GatherND, ScatterND, ScatterElements (and the old Scatter) with their
 * reductions, and ReverseSequence. Indices are int32 or int64 (is64), negative ones count
 * from the end, and any index out of range returns RT_ERR_INDEX before it is used. C99. */
#ifndef KILN_RT_INDEX_H
#define KILN_RT_INDEX_H

#include "rt_data.h"

#define RT_REDUCE_NONE 0
#define RT_REDUCE_ADD 1
#define RT_REDUCE_MUL 2
#define RT_REDUCE_MAX 3
#define RT_REDUCE_MIN 4

RT_API int64_t rt_index_at(const void *idx, int is64, int64_t i) {
    return is64 ? ((const int64_t *)idx)[i] : (int64_t)((const int32_t *)idx)[i];
}

/* Wraps a negative index into [0, n); -1 when out of range. */
RT_API int64_t rt_index_wrap(int64_t v, int64_t n) {
    if (v < 0) v += n;
    return v >= 0 && v < n ? v : -1;
}

#define RT_COMBINE_ARITH(T, a, b, red)                                                             \
    do {                                                                                           \
        T va_, vb_;                                                                                \
        memcpy(&va_, a, sizeof(T));                                                                \
        memcpy(&vb_, b, sizeof(T));                                                                \
        if (red == RT_REDUCE_ADD)                                                                  \
            va_ = (T)(va_ + vb_);                                                                  \
        else if (red == RT_REDUCE_MUL)                                                             \
            va_ = (T)(va_ * vb_);                                                                  \
        else if (red == RT_REDUCE_MAX)                                                             \
            va_ = vb_ > va_ ? vb_ : va_;                                                           \
        else                                                                                       \
            va_ = vb_ < va_ ? vb_ : va_;                                                           \
        memcpy(a, &va_, sizeof(T));                                                                \
    } while (0)

/* *dst = reduce(*dst, *src) for element type dt (an RT_DT_ code). */
RT_API void rt_combine(void *dst, const void *src, size_t esz, int dt, int red) {
    if (red == RT_REDUCE_NONE) {
        memcpy(dst, src, esz);
        return;
    }
    switch (dt) {
    case RT_DT_F32:
        RT_COMBINE_ARITH(float, dst, src, red);
        break;
    case RT_DT_F64:
        RT_COMBINE_ARITH(double, dst, src, red);
        break;
    case RT_DT_I8:
        RT_COMBINE_ARITH(int8_t, dst, src, red);
        break;
    case RT_DT_I16:
        RT_COMBINE_ARITH(int16_t, dst, src, red);
        break;
    case RT_DT_I32:
        RT_COMBINE_ARITH(int32_t, dst, src, red);
        break;
    case RT_DT_I64:
        RT_COMBINE_ARITH(int64_t, dst, src, red);
        break;
    case RT_DT_U8:
        RT_COMBINE_ARITH(uint8_t, dst, src, red);
        break;
    case RT_DT_U16:
        RT_COMBINE_ARITH(uint16_t, dst, src, red);
        break;
    case RT_DT_U32:
        RT_COMBINE_ARITH(uint32_t, dst, src, red);
        break;
    case RT_DT_U64:
        RT_COMBINE_ARITH(uint64_t, dst, src, red);
        break;
    case RT_DT_BOOL: { /* add is or, mul is and, as numpy on bool */
        uint8_t a = *(uint8_t *)dst != 0, b = *(const uint8_t *)src != 0;
        *(uint8_t *)dst =
            (uint8_t)(red == RT_REDUCE_ADD || red == RT_REDUCE_MAX ? (a | b) : (a & b));
        break;
    }
    case RT_DT_F16:
    case RT_DT_BF16: {
        uint16_t ha, hb;
        float fa, fb;
        memcpy(&ha, dst, 2);
        memcpy(&hb, src, 2);
        fa = dt == RT_DT_F16 ? rt_f16_to_f32(ha) : rt_bf16_to_f32(ha);
        fb = dt == RT_DT_F16 ? rt_f16_to_f32(hb) : rt_bf16_to_f32(hb);
        if (red == RT_REDUCE_ADD)
            fa += fb;
        else if (red == RT_REDUCE_MUL)
            fa *= fb;
        else if (red == RT_REDUCE_MAX)
            fa = fb > fa ? fb : fa;
        else
            fa = fb < fa ? fb : fa;
        ha = dt == RT_DT_F16 ? rt_f32_to_f16(fa) : rt_f32_to_bf16(fa);
        memcpy(dst, &ha, 2);
        break;
    }
    default:
        memcpy(dst, src, esz);
        break;
    }
}

/* Gather: y: (outer, n_idx, inner), x: (outer, axis_dim, inner), idx: (n_idx). */
RT_API int rt_gather(void *y, const void *x, size_t esz, int64_t outer, int64_t axis_dim,
                     int64_t inner, const void *idx, int is64, int64_t n_idx) {
    unsigned char *py = (unsigned char *)y;
    const unsigned char *px = (const unsigned char *)x;
    size_t block = (size_t)inner * esz;
    int64_t o, i;
    for (i = 0; i < n_idx; i++)
        if (rt_index_wrap(rt_index_at(idx, is64, i), axis_dim) < 0) return RT_ERR_INDEX;
    for (o = 0; o < outer; o++)
        for (i = 0; i < n_idx; i++) {
            int64_t k = rt_index_wrap(rt_index_at(idx, is64, i), axis_dim);
            memcpy(py + (o * n_idx + i) * (int64_t)block, px + (o * axis_dim + k) * (int64_t)block,
                   block);
        }
    return RT_OK;
}

/* The offset in a (dims) tensor of the element at the position of element e of an (idims)
 * tensor, with the coordinate along axis replaced by its index value k. */
RT_API int64_t rt_index_elem_offset(int64_t e, const int64_t *idims, const int64_t *dims, int rank,
                                    int axis, int64_t k) {
    int64_t off = 0, s = 1;
    int d;
    for (d = rank - 1; d >= 0; d--) {
        int64_t c = e % idims[d];
        e /= idims[d];
        off += (d == axis ? k : c) * s;
        s *= dims[d];
    }
    return off;
}

/* GatherElements: y, idx: (idims), x: (xdims); y[p] = x[p with p[axis] = idx[p]]. */
RT_API int rt_gather_elements(void *y, const void *x, size_t esz, const int64_t *xdims,
                              const int64_t *idims, int rank, int axis, const void *idx, int is64) {
    int64_t n = 1, e;
    int d;
    for (d = 0; d < rank; d++)
        n *= idims[d];
    for (e = 0; e < n; e++)
        if (rt_index_wrap(rt_index_at(idx, is64, e), xdims[axis]) < 0) return RT_ERR_INDEX;
    for (e = 0; e < n; e++) {
        int64_t k = rt_index_wrap(rt_index_at(idx, is64, e), xdims[axis]);
        rt_data_move((unsigned char *)y + e * (int64_t)esz,
                     (const unsigned char *)x +
                         rt_index_elem_offset(e, idims, xdims, rank, axis, k) * (int64_t)esz,
                     esz);
    }
    return RT_OK;
}

/* ScatterElements: y = x (copied by the caller), then y[p with p[axis] = idx[p]] =
 * reduce(., upd[p]). y: (xdims), idx, upd: (idims). */
RT_API int rt_scatter_elements(void *y, const void *upd, size_t esz, int dt, int red,
                               const int64_t *xdims, const int64_t *idims, int rank, int axis,
                               const void *idx, int is64) {
    int64_t n = 1, e;
    int d;
    for (d = 0; d < rank; d++)
        n *= idims[d];
    for (e = 0; e < n; e++)
        if (rt_index_wrap(rt_index_at(idx, is64, e), xdims[axis]) < 0) return RT_ERR_INDEX;
    for (e = 0; e < n; e++) {
        int64_t k = rt_index_wrap(rt_index_at(idx, is64, e), xdims[axis]);
        rt_combine((unsigned char *)y +
                       rt_index_elem_offset(e, idims, xdims, rank, axis, k) * (int64_t)esz,
                   (const unsigned char *)upd + e * (int64_t)esz, esz, dt, red);
    }
    return RT_OK;
}

/* The element offset in x (xdims) of index tuple t (last entries at idx + t * last) in
 * batch b; -1 when out of range. Batch dims come first in x. */
RT_API int64_t rt_index_tuple_offset(const void *idx, int is64, int64_t t, int64_t last,
                                     const int64_t *xdims, int xrank, int batch_dims, int64_t b) {
    int64_t off = b, k;
    int d;
    for (k = 0; k < last; k++) {
        int64_t v = rt_index_wrap(rt_index_at(idx, is64, t * last + k), xdims[batch_dims + k]);
        if (v < 0) return -1;
        off = off * xdims[batch_dims + k] + v;
    }
    for (d = batch_dims + (int)last; d < xrank; d++)
        off *= xdims[d];
    return off;
}

/* GatherND: x: (xdims), batch_dims leading dims shared with idx; idx: (batch..., n_tup,
 * last) flattened to (n_batch, n_tup, last); y: (n_batch, n_tup, slice). */
RT_API int rt_gather_nd(void *y, const void *x, size_t esz, const int64_t *xdims, int xrank,
                        int batch_dims, const void *idx, int is64, int64_t n_tup, int64_t last) {
    int64_t n_batch = 1, slice = 1, b, t;
    int d;
    for (d = 0; d < batch_dims; d++)
        n_batch *= xdims[d];
    for (d = batch_dims + (int)last; d < xrank; d++)
        slice *= xdims[d];
    for (b = 0; b < n_batch; b++)
        for (t = 0; t < n_tup; t++)
            if (rt_index_tuple_offset(idx, is64, b * n_tup + t, last, xdims, xrank, batch_dims, b) <
                0)
                return RT_ERR_INDEX;
    for (b = 0; b < n_batch; b++)
        for (t = 0; t < n_tup; t++) {
            int64_t off =
                rt_index_tuple_offset(idx, is64, b * n_tup + t, last, xdims, xrank, batch_dims, b);
            memcpy((unsigned char *)y + (b * n_tup + t) * slice * (int64_t)esz,
                   (const unsigned char *)x + off * (int64_t)esz, (size_t)slice * esz);
        }
    return RT_OK;
}

/* ScatterND: y = x (copied by the caller), then each index tuple t of idx (n_tup, last)
 * selects a slice of y that is reduced with upd (n_tup, slice). y: (xdims). */
RT_API int rt_scatter_nd(void *y, const void *upd, size_t esz, int dt, int red,
                         const int64_t *xdims, int xrank, const void *idx, int is64, int64_t n_tup,
                         int64_t last) {
    int64_t slice = 1, t, j;
    int d;
    for (d = (int)last; d < xrank; d++)
        slice *= xdims[d];
    for (t = 0; t < n_tup; t++)
        if (rt_index_tuple_offset(idx, is64, t, last, xdims, xrank, 0, 0) < 0) return RT_ERR_INDEX;
    for (t = 0; t < n_tup; t++) {
        int64_t off = rt_index_tuple_offset(idx, is64, t, last, xdims, xrank, 0, 0);
        for (j = 0; j < slice; j++)
            rt_combine((unsigned char *)y + (off + j) * (int64_t)esz,
                       (const unsigned char *)upd + (t * slice + j) * (int64_t)esz, esz, dt, red);
    }
    return RT_OK;
}

/* ReverseSequence: y, x: (dims) with a batch axis and a time axis; the first lens[b]
 * steps of batch b are reversed, the rest copied. lens: (dims[batch_axis]). */
RT_API int rt_reverse_sequence(void *y, const void *x, size_t esz, const int64_t *dims, int rank,
                               int batch_axis, int time_axis, const void *lens, int is64) {
    int64_t n = 1, e, st[RT_MAX_RANK], s = 1;
    int d;
    for (d = rank - 1; d >= 0; d--) {
        st[d] = s;
        s *= dims[d];
    }
    n = s;
    for (e = 0; e < dims[batch_axis]; e++) {
        int64_t l = rt_index_at(lens, is64, e);
        if (l < 0 || l > dims[time_axis]) return RT_ERR_INDEX;
    }
    for (e = 0; e < n; e++) {
        int64_t b = e / st[batch_axis] % dims[batch_axis];
        int64_t t = e / st[time_axis] % dims[time_axis];
        int64_t l = rt_index_at(lens, is64, b), src = e;
        if (t < l) src = e + (l - 1 - 2 * t) * st[time_axis];
        rt_data_move((unsigned char *)y + e * (int64_t)esz,
                     (const unsigned char *)x + src * (int64_t)esz, esz);
    }
    return RT_OK;
}

#endif
