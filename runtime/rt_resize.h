/* rt_resize.h: Resize (and Upsample) kernel. Per resized axis the output coordinate maps
 * to an input coordinate by the coordinate transformation mode; the taps of the nearest,
 * linear or cubic filter (widened by antialias when downsampling) are taken as ONNX's
 * reference takes them, indices clamped to the edge, and the N-D result is the sum over the
 * product of the per-axis taps, computed in double. C99. */
#ifndef KILN_RT_RESIZE_H
#define KILN_RT_RESIZE_H

#include "rt_common.h"

#define RT_RESIZE_NEAREST 0
#define RT_RESIZE_LINEAR 1
#define RT_RESIZE_CUBIC 2

#define RT_CTM_HALF_PIXEL 0
#define RT_CTM_HALF_PIXEL_SYMMETRIC 1
#define RT_CTM_PYTORCH_HALF_PIXEL 2
#define RT_CTM_ALIGN_CORNERS 3
#define RT_CTM_ASYMMETRIC 4
#define RT_CTM_TF_CROP_AND_RESIZE 5

#define RT_NEAREST_ROUND_PREFER_FLOOR 0
#define RT_NEAREST_ROUND_PREFER_CEIL 1
#define RT_NEAREST_FLOOR 2
#define RT_NEAREST_CEIL 3

#define RT_KEEP_STRETCH 0
#define RT_KEEP_NOT_LARGER 1
#define RT_KEEP_NOT_SMALLER 2

/* Taps of one axis: an antialiased cubic at scale 1/16 needs 64; more is refused. */
#define RT_RESIZE_MAX_TAPS 64

typedef struct RtResize {
    int rank;
    int64_t in_dims[RT_MAX_RANK], out_dims[RT_MAX_RANK];
    double scale[RT_MAX_RANK];
    double roi[2 * RT_MAX_RANK]; /* starts then ends, per axis */
    int mode, ctm, nearest_mode, exclude_outside, antialias;
    double cubic_a, extrapolation;
} RtResize;

/* Fills p->scale (1 on axes not listed) from scales (n entries for axes, NULL: all axes)
 * or, when scales is NULL, from sizes with the keep-aspect-ratio policy; the implied output
 * dims must equal p->out_dims. roi (2n entries, NULL: 0 and 1) goes to p->roi. */
RT_API int rt_resize_prepare(RtResize *p, const int64_t *axes, int64_t n, const float *scales,
                             const int64_t *sizes, int policy, const double *roi) {
    int listed[RT_MAX_RANK];
    int64_t i, sized[RT_MAX_RANK];
    int d;
    double common = 0;
    if (n > p->rank || n < 0) return RT_ERR_SHAPE;
    for (d = 0; d < p->rank; d++) {
        p->scale[d] = 1.0;
        p->roi[d] = 0.0;
        p->roi[p->rank + d] = 1.0;
        listed[d] = 0;
    }
    for (i = 0; i < n; i++) {
        int64_t a = axes ? axes[i] : i;
        if (a < 0) a += p->rank;
        if (a < 0 || a >= p->rank) return RT_ERR_VALUE;
        listed[a] = 1;
        if (roi) {
            p->roi[a] = roi[i];
            p->roi[p->rank + a] = roi[n + i];
        }
        if (scales) {
            p->scale[a] = (double)scales[i];
            if (!(scales[i] > 0)) return RT_ERR_VALUE;
        } else {
            double s;
            if (p->in_dims[a] == 0) return RT_ERR_VALUE;
            s = (double)sizes[i] / (double)p->in_dims[a];
            sized[a] = sizes[i];
            p->scale[a] = s;
            if (i == 0 || (policy == RT_KEEP_NOT_LARGER && s < common) ||
                (policy == RT_KEEP_NOT_SMALLER && s > common))
                common = s;
        }
    }
    for (d = 0; d < p->rank; d++) {
        int64_t want = p->in_dims[d];
        if (listed[d]) {
            if (scales) {
                want = rt_floor_i64(p->scale[d] * (double)p->in_dims[d]);
            } else if (policy != RT_KEEP_STRETCH) {
                p->scale[d] = common;
                want = (int64_t)(common * (double)p->in_dims[d] + 0.5);
            } else {
                want = sized[d];
            }
        }
        if (want != p->out_dims[d]) return RT_ERR_SHAPE;
    }
    return RT_OK;
}

/* Taps of output coordinate o along axis d: indices (clamped) and weights; returns the
 * count, 0 when o reads the extrapolation value, -1 when there are too many taps. */
RT_API int rt_resize_taps(const RtResize *p, int d, int64_t o, int64_t *idx, double *wt) {
    double in_w = (double)p->in_dims[d], out_f = p->scale[d] * in_w, s = p->scale[d], x, r, sum;
    double A = p->cubic_a, sc;
    int64_t out_i = p->out_dims[d], xf, start;
    int n, k;
    switch (p->ctm) {
    case RT_CTM_ALIGN_CORNERS:
        x = out_f == 1 ? 0.0 : (double)o * (in_w - 1) / (out_f - 1);
        break;
    case RT_CTM_ASYMMETRIC:
        x = (double)o / s;
        break;
    case RT_CTM_TF_CROP_AND_RESIZE: {
        double r0 = p->roi[d], r1 = p->roi[p->rank + d];
        x = out_f == 1 ? (r1 - r0) * (in_w - 1) / 2
                       : (double)o * (r1 - r0) * (in_w - 1) / (out_f - 1);
        x += r0 * (in_w - 1);
        if (x < 0 || x > in_w - 1) return 0;
        break;
    }
    case RT_CTM_PYTORCH_HALF_PIXEL:
        x = out_f == 1 ? -0.5 : ((double)o + 0.5) / s - 0.5;
        break;
    case RT_CTM_HALF_PIXEL_SYMMETRIC: {
        double adj = (double)out_i / out_f, center = in_w / 2;
        x = center * (1 - adj) + ((double)o + 0.5) / s - 0.5;
        break;
    }
    default:
        x = ((double)o + 0.5) / s - 0.5;
        break;
    }
    xf = rt_floor_i64(x);
    r = x == (double)xf ? 1.0 : x - (double)xf;
    sc = s < 1.0 ? s : 1.0;
    if (p->mode == RT_RESIZE_NEAREST) {
        n = 2;
        if (r == 1.0) {
            wt[0] = 0;
            wt[1] = 1;
        } else {
            int hi = p->nearest_mode == RT_NEAREST_ROUND_PREFER_FLOOR ? r > 0.5
                     : p->nearest_mode == RT_NEAREST_ROUND_PREFER_CEIL
                         ? r >= 0.5
                         : p->nearest_mode == RT_NEAREST_CEIL;
            wt[0] = hi ? 0 : 1;
            wt[1] = hi ? 1 : 0;
        }
    } else if (p->mode == RT_RESIZE_LINEAR) {
        if (p->antialias) {
            int64_t st = rt_floor_i64(-1 / sc) + 1;
            n = (int)(2 - 2 * st);
            if (n > RT_RESIZE_MAX_TAPS) return -1;
            for (k = 0; k < n; k++) {
                double a = fabs(((double)(st + k) - r) * sc);
                wt[k] = a < 1 ? 1 - a : 0;
            }
        } else {
            n = 2;
            wt[0] = 1 - r;
            wt[1] = r;
        }
    } else if (p->antialias) {
        int64_t st = rt_floor_i64(-2 / sc) + 1;
        n = (int)(2 - 2 * st);
        if (n > RT_RESIZE_MAX_TAPS) return -1;
        for (k = 0; k < n; k++) {
            double a = fabs(sc * ((double)(st + k) - r)), a2 = a * a, a3 = a2 * a;
            wt[k] = a <= 1  ? (A + 2) * a3 - (A + 3) * a2 + 1
                    : a < 2 ? A * a3 - 5 * A * a2 + 8 * A * a - 4 * A
                            : 0.0;
        }
    } else {
        double q = 1 - r;
        n = 4;
        wt[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
        wt[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
        wt[2] = ((A + 2) * q - (A + 3)) * q * q + 1;
        wt[3] = ((A * (q + 1) - 5 * A) * (q + 1) + 8 * A) * (q + 1) - 4 * A;
    }
    /* window start as the reference picks the n nearest (ties to the smaller index) */
    if (n % 2 == 0)
        start = xf + (r == 1.0 ? -(n / 2) : -(n / 2) + 1);
    else
        start = xf - (n - 1) / 2 + ((x - (double)xf) <= 0.5 ? 0 : 1);
    sum = 0;
    for (k = 0; k < n; k++) {
        int64_t j = start + k;
        if (p->exclude_outside && (j < 0 || j >= p->in_dims[d])) wt[k] = 0;
        sum += wt[k];
        idx[k] = j < 0 ? 0 : (j >= p->in_dims[d] ? p->in_dims[d] - 1 : j);
    }
    if (p->antialias || p->exclude_outside)
        for (k = 0; k < n; k++)
            wt[k] /= sum == 0 ? 1 : sum;
    return n;
}

/* Whether axis d is left as it is (scale 1, same size, whole roi), as the reference skips. */
RT_API int rt_resize_axis_identity(const RtResize *p, int d) {
    int roi_whole = p->ctm != RT_CTM_TF_CROP_AND_RESIZE ||
                    (fabs(p->roi[d]) <= 1e-9 && fabs(p->roi[p->rank + d] - 1) <= 1e-9);
    return fabs(p->scale[d] - 1.0) <= 1e-9 && p->in_dims[d] == p->out_dims[d] && roi_whole;
}

RT_API double rt_resize_load(const void *x, int dt, int64_t i) {
    switch (dt) {
    case 1:
        return (double)((const float *)x)[i];
    case 11:
        return ((const double *)x)[i];
    case 10:
        return (double)rt_f16_to_f32(((const uint16_t *)x)[i]);
    case 16:
        return (double)rt_bf16_to_f32(((const uint16_t *)x)[i]);
    case 2:
        return ((const uint8_t *)x)[i];
    case 3:
        return ((const int8_t *)x)[i];
    case 6:
        return ((const int32_t *)x)[i];
    default:
        return (double)((const int64_t *)x)[i];
    }
}

/* v rounded to even and clamped to [lo, hi], as an integer. */
RT_API int64_t rt_resize_clamp(double v, double lo, double hi) {
    v = nearbyint(v);
    v = v < lo ? lo : (v > hi ? hi : v);
    return (int64_t)v;
}

RT_API void rt_resize_store(void *y, int dt, int64_t i, double v) {
    switch (dt) {
    case 1:
        ((float *)y)[i] = (float)v;
        break;
    case 11:
        ((double *)y)[i] = v;
        break;
    case 10:
        ((uint16_t *)y)[i] = rt_f32_to_f16((float)v);
        break;
    case 16:
        ((uint16_t *)y)[i] = rt_f32_to_bf16((float)v);
        break;
    case 2:
        ((uint8_t *)y)[i] = (uint8_t)rt_resize_clamp(v, 0, 255);
        break;
    case 3:
        ((int8_t *)y)[i] = (int8_t)rt_resize_clamp(v, -128, 127);
        break;
    case 6:
        ((int32_t *)y)[i] = (int32_t)rt_resize_clamp(v, -2147483648.0, 2147483647.0);
        break;
    default:
        ((int64_t *)y)[i] = rt_rint_i64(v);
        break;
    }
}

/* rt_resize_taps, or the one tap of weight 1 on an axis the resize leaves alone. */
RT_API int rt_resize_axis_taps(const RtResize *p, int d, int64_t o, int64_t *idx, double *wt) {
    if (!rt_resize_axis_identity(p, d)) return rt_resize_taps(p, d, o, idx, wt);
    idx[0] = o;
    wt[0] = 1;
    return 1;
}

/* y: (p->out_dims), x: (p->in_dims), element type dt (ONNX code: f32, f64, f16, bf16, u8,
 * i8, i32, i64). RT_ERR_VALUE when an axis needs more than RT_RESIZE_MAX_TAPS taps. A task
 * is an output row (the last axis) in C: the other axes' taps once, then the row in order;
 * on the GPU (RT_ON_DEVICE) one element, so that every thread has one. */
RT_API int rt_resize(const RtResize *p, void *y, const void *x, int dt) {
    int64_t idx[RT_MAX_RANK][RT_RESIZE_MAX_TAPS], o[RT_MAX_RANK], xs[RT_MAX_RANK], n_out = 1, task;
    double wt[RT_MAX_RANK][RT_RESIZE_MAX_TAPS];
    int nt[RT_MAX_RANK], k[RT_MAX_RANK], d, R = p->rank, status = RT_OK;
    const int64_t len = R > 0 ? p->out_dims[R - 1] : 1, seg = RT_ON_DEVICE ? 1 : len;
    int64_t s = 1;
    for (d = R - 1; d >= 0; d--) {
        xs[d] = s;
        s *= p->in_dims[d];
        n_out *= p->out_dims[d];
    }
    RT_FOR_EACH(task, len > 0 ? n_out / seg : 0) {
        const int64_t row = task * seg / len, k0 = task * seg % len;
        int64_t rest = row, e;
        int extrap_row = 0;
        for (d = R - 2; d >= 0; d--) {
            o[d] = rest % p->out_dims[d];
            rest /= p->out_dims[d];
        }
        for (d = 0; d < R - 1 && status == RT_OK; d++) {
            nt[d] = rt_resize_axis_taps(p, d, o[d], idx[d], wt[d]);
            if (nt[d] < 0) status = RT_ERR_VALUE;
            if (nt[d] == 0) extrap_row = 1;
        }
        for (e = row * len + k0; e < row * len + k0 + seg && status == RT_OK; e++) {
            int extrap = extrap_row;
            double acc = 0;
            if (R > 0) {
                d = R - 1;
                nt[d] = rt_resize_axis_taps(p, d, e - row * len, idx[d], wt[d]);
                if (nt[d] < 0) {
                    status = RT_ERR_VALUE;
                    break;
                }
                if (nt[d] == 0) extrap = 1;
            }
            if (extrap) {
                rt_resize_store(y, dt, e, p->extrapolation);
                continue;
            }
            for (d = 0; d < R; d++)
                k[d] = 0;
            for (;;) { /* sum over the product of the taps */
                double w = 1;
                int64_t off = 0;
                for (d = 0; d < R; d++) {
                    w *= wt[d][k[d]];
                    off += idx[d][k[d]] * xs[d];
                }
                /* a zero weight skips its load (a NaN there is dropped, as intended) */
                if (w != 0) acc += w * rt_resize_load(x, dt, off);
                for (d = R - 1; d >= 0; d--) {
                    if (++k[d] < nt[d]) break;
                    k[d] = 0;
                }
                if (d < 0) break;
            }
            rt_resize_store(y, dt, e, acc);
        }
        if (status != RT_OK) break;
    }
    return status;
}

#endif
