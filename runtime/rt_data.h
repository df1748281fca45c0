/* rt_data.h: data movement kernels that ship inside bundles: strided copies (Transpose,
 * Slice, Expand, Tile, Concat, Split, DepthToSpace...), fills, Pad in its four modes and
 * the run-time checks that a shape read from the data matches the compiled one. Elements
 * are moved as esz bytes, so every fixed-size dtype works. Strides count elements. C99. */
#ifndef KILN_RT_DATA_H
#define KILN_RT_DATA_H

#include "rt_common.h"

/* A strided view may have twice the rank of a tensor (Tile interleaves repeats with dims). */
#define RT_DATA_MAX_DIMS (2 * RT_MAX_RANK)

#define RT_PAD_CONSTANT 0
#define RT_PAD_REFLECT 1
#define RT_PAD_EDGE 2
#define RT_PAD_WRAP 3

RT_API void rt_data_move(unsigned char *y, const unsigned char *x, size_t esz) {
    switch (esz) { /* fixed sizes let the compiler turn memcpy into one move */
    case 1:
        *y = *x;
        break;
    case 2:
        memcpy(y, x, 2);
        break;
    case 4:
        memcpy(y, x, 4);
        break;
    case 8:
        memcpy(y, x, 8);
        break;
    default:
        memcpy(y, x, esz);
        break;
    }
}

/* y[sum i_d * ys_d] = x[sum i_d * xs_d] over the index box dims[0..rank).
 * y, x: views of (dims) with element strides ys, xs (negative and zero strides allowed). */
RT_API void rt_strided_copy(void *y, const int64_t *ys, const void *x, const int64_t *xs,
                            const int64_t *dims, int rank, size_t esz) {
    int64_t idx[RT_DATA_MAX_DIMS];
    int64_t inner, yi, xi;
    unsigned char *py = (unsigned char *)y;
    const unsigned char *px = (const unsigned char *)x;
    int d;
    for (d = 0; d < rank; d++)
        if (dims[d] <= 0) return;
    if (rank == 0) {
        rt_data_move(py, px, esz);
        return;
    }
    inner = dims[rank - 1];
    for (d = 0; d < rank; d++)
        idx[d] = 0;
    for (;;) {
        int64_t yo = 0, xo = 0, j;
        for (d = 0; d < rank - 1; d++) {
            yo += idx[d] * ys[d];
            xo += idx[d] * xs[d];
        }
        yi = ys[rank - 1];
        xi = xs[rank - 1];
        if (yi == 1 && xi == 1) {
            memcpy(py + yo * (int64_t)esz, px + xo * (int64_t)esz, (size_t)inner * esz);
        } else {
            for (j = 0; j < inner; j++)
                rt_data_move(py + (yo + j * yi) * (int64_t)esz, px + (xo + j * xi) * (int64_t)esz,
                             esz);
        }
        for (d = rank - 2; d >= 0; d--) {
            if (++idx[d] < dims[d]) break;
            idx[d] = 0;
        }
        if (d < 0) return;
    }
}

/* y[0..n) = *value (esz bytes each). */
RT_API void rt_fill(void *y, int64_t n, const void *value, size_t esz) {
    unsigned char *py = (unsigned char *)y;
    int64_t i;
    for (i = 0; i < n; i++)
        rt_data_move(py + i * (int64_t)esz, (const unsigned char *)value, esz);
}

/* RT_ERR_SHAPE unless data[0..n_data) equals expected[0..n). */
RT_API int rt_check_dims(const int64_t *data, int64_t n_data, const int64_t *expected, int n) {
    int i;
    if (n_data != n) return RT_ERR_SHAPE;
    for (i = 0; i < n; i++)
        if (data[i] != expected[i]) return RT_ERR_SHAPE;
    return RT_OK;
}

/* Reshape's shape input (0 copies the input dim unless allowzero, -1 is inferred) must
 * give the compiled output dims. in: (in_dims), out: (out_dims). */
RT_API int rt_reshape_check(const int64_t *shape, int64_t n, const int64_t *in_dims, int in_rank,
                            const int64_t *out_dims, int out_rank, int allowzero) {
    int64_t in_numel = 1, known = 1;
    int i, infer = -1;
    if (n != out_rank) return RT_ERR_SHAPE;
    for (i = 0; i < in_rank; i++)
        in_numel *= in_dims[i];
    for (i = 0; i < out_rank; i++) {
        int64_t s = shape[i];
        if (s == 0 && !allowzero) {
            if (i >= in_rank) return RT_ERR_SHAPE;
            s = in_dims[i];
        }
        if (s == -1) {
            if (infer >= 0) return RT_ERR_SHAPE;
            infer = i;
            continue;
        }
        if (s < 0 || s != out_dims[i]) return RT_ERR_SHAPE;
        known *= s;
    }
    if (infer >= 0 && (known == 0 || in_numel / known != out_dims[infer] || in_numel % known != 0))
        return RT_ERR_SHAPE;
    return RT_OK;
}

/* Expand's shape input broadcast with the input dims must give the output dims. */
RT_API int rt_expand_check(const int64_t *shape, int64_t n, const int64_t *in_dims, int in_rank,
                           const int64_t *out_dims, int out_rank) {
    int i;
    if ((n > in_rank ? n : in_rank) != out_rank) return RT_ERR_SHAPE;
    for (i = 0; i < out_rank; i++) {
        int64_t a = i - (out_rank - (int)n) >= 0 ? shape[i - (out_rank - (int)n)] : 1;
        int64_t b = i - (out_rank - in_rank) >= 0 ? in_dims[i - (out_rank - in_rank)] : 1;
        int64_t r = a == 1 ? b : a;
        if ((a != 1 && b != 1 && a != b) || r != out_dims[i]) return RT_ERR_SHAPE;
    }
    return RT_OK;
}

/* Tile's repeats must give out_dims = in_dims * repeats. */
RT_API int rt_tile_check(const int64_t *repeats, int64_t n, const int64_t *in_dims,
                         const int64_t *out_dims, int rank) {
    int i;
    if (n != rank) return RT_ERR_SHAPE;
    for (i = 0; i < rank; i++)
        if (repeats[i] < 0 || in_dims[i] * repeats[i] != out_dims[i]) return RT_ERR_SHAPE;
    return RT_OK;
}

/* Squeeze (unsqueeze 0) or Unsqueeze (1) with axes data: the implied output dims must be
 * the compiled ones. */
RT_API int rt_axes_check(const int64_t *axes, int64_t n, const int64_t *in_dims, int in_rank,
                         const int64_t *out_dims, int out_rank, int unsqueeze) {
    int mark[RT_DATA_MAX_DIMS];
    int i, j, r = unsqueeze ? in_rank + (int)n : in_rank;
    if (n < 0 || n > RT_MAX_RANK || r > RT_MAX_RANK) return RT_ERR_SHAPE;
    for (i = 0; i < r; i++)
        mark[i] = 0;
    for (i = 0; i < n; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
        if (a < 0 || a >= r || mark[a]) return RT_ERR_SHAPE;
        mark[a] = 1;
    }
    if (unsqueeze) {
        if (r != out_rank) return RT_ERR_SHAPE;
        for (i = 0, j = 0; i < r; i++) {
            int64_t want = mark[i] ? 1 : in_dims[j++];
            if (out_dims[i] != want) return RT_ERR_SHAPE;
        }
        return RT_OK;
    }
    for (i = 0, j = 0; i < in_rank; i++) {
        if (mark[i]) {
            if (in_dims[i] != 1) return RT_ERR_SHAPE;
            continue;
        }
        if (j >= out_rank || out_dims[j++] != in_dims[i]) return RT_ERR_SHAPE;
    }
    return j == out_rank ? RT_OK : RT_ERR_SHAPE;
}

/* Slice parameters (ONNX clamping rules) per axis of x: start[d], step[d] such that output
 * element i along d reads x at start[d] + i * step[d]. starts/ends/steps: n entries for
 * axes (NULL: 0..n-1; steps NULL: 1). Fails with RT_ERR_SHAPE when the implied output dims
 * differ from out_dims, RT_ERR_VALUE on a zero step or a repeated axis. */
RT_API int rt_slice_params(const int64_t *in_dims, int rank, const int64_t *starts,
                           const int64_t *ends, const int64_t *axes, const int64_t *steps,
                           int64_t n, const int64_t *out_dims, int64_t *start, int64_t *step) {
    int seen[RT_MAX_RANK];
    int64_t i;
    int d;
    if (rank > RT_MAX_RANK || n > rank || n < 0) return RT_ERR_SHAPE;
    for (d = 0; d < rank; d++) {
        start[d] = 0;
        step[d] = 1;
        seen[d] = 0;
    }
    for (i = 0; i < n; i++) {
        int64_t a = axes ? axes[i] : i, dim, s, e, st = steps ? steps[i] : 1, cnt;
        if (a < 0) a += rank;
        if (a < 0 || a >= rank || seen[a] || st == 0) return RT_ERR_VALUE;
        seen[a] = 1;
        dim = in_dims[a];
        s = starts[i];
        e = ends[i];
        if (s < 0) s += dim;
        if (e < 0) e += dim;
        if (st > 0) {
            s = s < 0 ? 0 : (s > dim ? dim : s);
            e = e < 0 ? 0 : (e > dim ? dim : e);
            cnt = e > s ? (e - s + st - 1) / st : 0;
        } else {
            s = s < 0 ? 0 : (s > dim - 1 ? dim - 1 : s);
            e = e < -1 ? -1 : (e > dim - 1 ? dim - 1 : e);
            cnt = s > e ? (s - e + (-st) - 1) / (-st) : 0;
        }
        if (cnt != out_dims[a]) return RT_ERR_SHAPE;
        start[a] = s;
        step[a] = st;
    }
    for (d = 0; d < rank; d++)
        if (!seen[d] && in_dims[d] != out_dims[d]) return RT_ERR_SHAPE;
    return RT_OK;
}

/* Copies a slice: y: (out_dims), x: (in_dims), per-axis start and step from rt_slice_params. */
RT_API void rt_slice(void *y, const void *x, size_t esz, const int64_t *in_dims,
                     const int64_t *out_dims, int rank, const int64_t *start, const int64_t *step) {
    int64_t xs[RT_MAX_RANK], ys[RT_MAX_RANK], s = 1, t = 1, off = 0;
    int d;
    for (d = rank - 1; d >= 0; d--) {
        xs[d] = s * step[d];
        ys[d] = t;
        off += start[d] * s;
        s *= in_dims[d];
        t *= out_dims[d];
    }
    rt_strided_copy(y, ys, (const unsigned char *)x + off * (int64_t)esz, xs, out_dims, rank, esz);
}

/* Pad's per-axis begin offsets from pads (2 * n_axes entries: all begins, then all ends)
 * and axes (NULL: 0..n_axes-1); out_dims must be in_dims + begin + end. */
RT_API int rt_pad_params(const int64_t *pads, int64_t n_pads, const int64_t *axes, int64_t n_axes,
                         const int64_t *in_dims, const int64_t *out_dims, int rank,
                         int64_t *begin) {
    int64_t i, end[RT_MAX_RANK];
    int d;
    if (n_pads != 2 * n_axes || n_axes > rank || rank > RT_MAX_RANK) return RT_ERR_SHAPE;
    for (d = 0; d < rank; d++)
        begin[d] = end[d] = 0;
    for (i = 0; i < n_axes; i++) {
        int64_t a = axes ? axes[i] : i;
        if (a < 0) a += rank;
        if (a < 0 || a >= rank) return RT_ERR_VALUE;
        begin[a] = pads[i];
        end[a] = pads[n_axes + i];
    }
    for (d = 0; d < rank; d++)
        if (in_dims[d] + begin[d] + end[d] != out_dims[d]) return RT_ERR_SHAPE;
    return RT_OK;
}

/* The input coordinate that output coordinate c (already shifted by the begin pad) reads
 * along an axis of size n, or -1 for the constant value. */
RT_API int64_t rt_pad_source(int64_t c, int64_t n, int mode) {
    if (c >= 0 && c < n) return c;
    if (mode == RT_PAD_CONSTANT || n <= 0) return -1;
    if (mode == RT_PAD_EDGE) return c < 0 ? 0 : n - 1;
    if (mode == RT_PAD_WRAP) {
        c %= n;
        return c < 0 ? c + n : c;
    }
    if (n == 1) return 0; /* reflect: mirror without repeating the edge, period 2n-2 */
    c %= 2 * (n - 1);
    if (c < 0) c += 2 * (n - 1);
    return c < n ? c : 2 * (n - 1) - c;
}

/* Pad: y: (out_dims), x: (in_dims); begin[d] may be negative (a crop). value: esz bytes
 * for the constant mode. Returns RT_ERR_SHAPE when a non-constant mode pads an empty axis. */
RT_API int rt_pad(void *y, const void *x, size_t esz, const int64_t *in_dims,
                  const int64_t *out_dims, int rank, const int64_t *begin, int mode,
                  const void *value) {
    int64_t xs[RT_MAX_RANK], s = 1, n = 1, task;
    unsigned char *py = (unsigned char *)y;
    const unsigned char *px = (const unsigned char *)x;
    /* a task: an output row (the last axis) in C, one element on the GPU (RT_ON_DEVICE) */
    const int64_t len = rank > 0 ? out_dims[rank - 1] : 1, seg = RT_ON_DEVICE ? 1 : len;
    const int64_t in_len = rank > 0 ? in_dims[rank - 1] : 1, b = rank > 0 ? begin[rank - 1] : 0;
    int d;
    for (d = rank - 1; d >= 0; d--) {
        xs[d] = s;
        s *= in_dims[d];
        n *= out_dims[d];
        if (mode != RT_PAD_CONSTANT && in_dims[d] == 0 && out_dims[d] > 0) return RT_ERR_SHAPE;
    }
    RT_FOR_EACH(task, len > 0 ? n / seg : 0) { /* each task from its own coordinates */
        const int64_t row = task * seg / len, k0 = task * seg % len;
        int64_t base = 0, rest = row, k;
        for (d = rank - 2; d >= 0 && base >= 0; d--) {
            int64_t c = rt_pad_source(rest % out_dims[d] - begin[d], in_dims[d], mode);
            rest /= out_dims[d];
            base = c < 0 ? -1 : base + c * xs[d];
        }
        for (k = k0; k < k0 + seg; k++) {
            int64_t c = base < 0 ? -1 : rank > 0 ? rt_pad_source(k - b, in_len, mode) : 0;
            rt_data_move(py + (row * len + k) * (int64_t)esz,
                         c < 0 ? (const unsigned char *)value : px + (base + c) * (int64_t)esz,
                         esz);
        }
    }
    return RT_OK;
}

/* Trilu: keeps the lower (upper = 0) or upper triangle of each (rows, cols) matrix
 * relative to diagonal k and zeroes the rest. y, x: (batch, rows, cols). */
RT_API void rt_trilu(void *y, const void *x, size_t esz, int64_t batch, int64_t rows, int64_t cols,
                     int64_t k, int upper) {
    unsigned char *py = (unsigned char *)y;
    const unsigned char *px = (const unsigned char *)x;
    int64_t b, i, j;
    for (b = 0; b < batch; b++)
        for (i = 0; i < rows; i++)
            for (j = 0; j < cols; j++) {
                int64_t o = ((b * rows + i) * cols + j) * (int64_t)esz;
                int keep = upper ? j - i >= k : j - i <= k;
                if (keep)
                    rt_data_move(py + o, px + o, esz);
                else
                    memset(py + o, 0, esz);
            }
}

#endif
