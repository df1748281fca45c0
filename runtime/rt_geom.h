/* rt_geom.h: geometry ops of the signal/geometry family: GridSample (nearest, linear, cubic;
 * zeros, border, reflection padding; 1-3 spatial dims), AffineGrid, RoiAlign, MaxRoiPool,
 * Col2Im, MaxUnpool, NonMaxSuppression and Det. Geometry that the compiler knows is passed as
 * arguments; sizes read from the data (batch indices, unpool indices, selected box counts) are
 * range-checked against it. No scratch beyond what the caller passes. C99. */
#ifndef KILN_RT_GEOM_H
#define KILN_RT_GEOM_H

#include "rt_common.h"

#define RT_GEOM_MAX_SPATIAL 3
#define RT_GS_NEAREST 0
#define RT_GS_LINEAR 1
#define RT_GS_CUBIC 2
#define RT_GS_ZEROS 0
#define RT_GS_BORDER 1
#define RT_GS_REFLECTION 2
#define RT_GS_CUBIC_ALPHA (-0.75) /* Keys' kernel, as PyTorch and ONNX use */

typedef struct RtGridSample {
    int64_t n, c, ns;                /* batch, channels, spatial dims (1..3) */
    int64_t in[RT_GEOM_MAX_SPATIAL]; /* input spatial dims, data order (D, H, W) */
    int64_t points;                  /* output points per (n, c): product of out dims */
    int mode, padding, align_corners;
} RtGridSample;

/* Reflects v into [lo, hi] by the nearer border until inside (the ONNX rule). */
RT_API double rt_gs_reflect(double v, double lo, double hi) {
    double rng = hi - lo, dx, r;
    int64_t k;
    if (rng <= 0) return lo;
    if (v < lo) {
        dx = lo - v;
        k = (int64_t)(dx / rng);
        r = dx - (double)k * rng;
        return k % 2 == 0 ? lo + r : hi - r;
    }
    if (v > hi) {
        dx = v - hi;
        k = (int64_t)(dx / rng);
        r = dx - (double)k * rng;
        return k % 2 == 0 ? hi - r : lo + r;
    }
    return v;
}

/* Index i of a dim of size d under the padding mode; -1 where zeros padding reads 0. */
RT_API int64_t rt_gs_index(int64_t i, int64_t d, int padding, double lo, double hi) {
    if (padding == RT_GS_ZEROS) return i >= 0 && i < d ? i : -1;
    if (padding == RT_GS_BORDER) return i < 0 ? 0 : i >= d ? d - 1 : i;
    {
        const double r = rt_gs_reflect((double)i, lo, hi);
        i = (int64_t)r; /* toward zero */
    }
    return i < 0 ? 0 : i >= d ? d - 1 : i;
}

RT_API void rt_gs_cubic(double t, double *w) {
    double a = RT_GS_CUBIC_ALPHA, x = fabs(t);
    w[0] = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a;
    w[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
    w[2] = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1;
    w[3] = ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a;
}

/* Defines the kernels of element type T (accumulating in ACC):
 * rt_grid_sample_SFX: x: (N, C, in...), grid: (N, out..., ns) with the last spatial dim's
 *   coordinate first (x, y, z), y: (N, C, out...).
 * rt_affine_grid_SFX: theta: (N, ns, ns+1), grid: (N, out..., ns); out: ns dims (D, H, W).
 * rt_roi_align_SFX: x: (N, C, H, W), rois: (R, 4) as (x1, y1, x2, y2), bidx: (R), y: (R, C,
 *   oh, ow); RT_ERR_INDEX for a batch index outside [0, N).
 * rt_max_roi_pool_SFX: x: (N, C, H, W), rois: (R, 5) as (batch, x1, y1, x2, y2), y: (R, C,
 *   ph, pw).
 * rt_col2im_SFX: x: (N, C*prod(block), L) = (N, C*xK, xL), y: (N, C, image...); block
 *   sizes read from the data that disagree with xK or xL return RT_ERR_SHAPE.
 * rt_max_unpool_SFX: x, idx: (N, C, in...), y: (N, C, out...), indices into the inferred
 *   shape `inf` (N, C, inferred...) whose block sits at the origin of y.
 * rt_det_SFX: x: (batch, n, n), y: (batch); ws: n*n doubles. */
#define RT_GEOM_DEFINE(SFX, T, ACC)                                                                \
    RT_API void rt_grid_sample_##SFX(const RtGridSample *p, const T *x, const T *grid, T *y) {     \
        int64_t ns = p->ns, n, o, c, k, in_sz = 1, dstride[RT_GEOM_MAX_SPATIAL];                   \
        for (k = ns - 1; k >= 0; k--)                                                              \
            dstride[k] = in_sz, in_sz *= p->in[k];                                                 \
        for (n = 0; n < p->n; n++)                                                                 \
            for (o = 0; o < p->points; o++) {                                                      \
                int64_t idx[RT_GEOM_MAX_SPATIAL][4], ntap = 1, combos = 1, m;                      \
                double wt[RT_GEOM_MAX_SPATIAL][4];                                                 \
                const T *g = grid + (n * p->points + o) * ns;                                      \
                for (k = 0; k < ns; k++) {                                                         \
                    int64_t d = p->in[k], t, base;                                                 \
                    ACC v = (ACC)g[ns - 1 - k], lo, hi;                                            \
                    v = p->align_corners ? (v + 1) / 2 * (ACC)(d - 1)                              \
                                         : ((v + 1) * (ACC)d - 1) / 2;                             \
                    lo = p->align_corners ? 0 : (ACC)-0.5;                                         \
                    hi = p->align_corners ? (ACC)(d - 1) : (ACC)d - (ACC)0.5;                      \
                    if (p->mode == RT_GS_NEAREST) v = (ACC)rint((double)v);                        \
                    if (v < lo || v > hi) {                                                        \
                        if (p->padding == RT_GS_BORDER)                                            \
                            v = v < 0 ? 0 : v > (ACC)(d - 1) ? (ACC)(d - 1) : v;                   \
                        else if (p->padding == RT_GS_REFLECTION)                                   \
                            v = (ACC)rt_gs_reflect((double)v, (double)lo, (double)hi);             \
                    }                                                                              \
                    if (p->mode == RT_GS_NEAREST) {                                                \
                        ntap = 1;                                                                  \
                        idx[k][0] = rt_gs_index((int64_t)v, d, p->padding, (double)lo,             \
                                               (double)hi);                                        \
                        wt[k][0] = 1;                                                              \
                    } else {                                                                       \
                        ACC fl = (ACC)floor((double)v);                                            \
                        base = (int64_t)fl;                                                        \
                        if (p->mode == RT_GS_LINEAR) {                                             \
                            ntap = 2;                                                              \
                            wt[k][0] = 1 - (double)(v - fl), wt[k][1] = (double)(v - fl);          \
                        } else {                                                                   \
                            ntap = 4, base -= 1;                                                   \
                            rt_gs_cubic((double)(v - fl), wt[k]);                                  \
                        }                                                                          \
                        for (t = 0; t < ntap; t++)                                                 \
                            idx[k][t] = rt_gs_index(base + t, d, p->padding, (double)lo,           \
                                                        (double)hi);                               \
                    }                                                                              \
                    combos *= ntap;                                                                \
                }                                                                                  \
                for (c = 0; c < p->c; c++) {                                                       \
                    const T *xc = x + (n * p->c + c) * in_sz;                                      \
                    ACC acc = 0;                                                                   \
                    for (m = 0; m < combos; m++) {                                                 \
                        int64_t rest = m, off = 0;                                                 \
                        double w = 1;                                                              \
                        for (k = ns - 1; k >= 0; k--) {                                            \
                            int64_t t = rest % ntap, i = idx[k][t];                                \
                            rest /= ntap;                                                          \
                            if (i < 0) break;                                                      \
                            off += i * dstride[k], w *= wt[k][t];                                  \
                        }                                                                          \
                        if (k < 0) acc += (ACC)w * (ACC)xc[off];                                   \
                    }                                                                              \
                    y[(n * p->c + c) * p->points + o] = (T)acc;                                    \
                }                                                                                  \
            }                                                                                      \
    }                                                                                              \
    RT_API void rt_affine_grid_##SFX(const T *theta, T *grid, int64_t n, int64_t ns,               \
                                     const int64_t *out, int align_corners) {                      \
        int64_t b, o, k, j, pts = 1;                                                               \
        for (k = 0; k < ns; k++)                                                                   \
            pts *= out[k];                                                                         \
        for (b = 0; b < n; b++)                                                                    \
            for (o = 0; o < pts; o++) {                                                            \
                ACC base[RT_GEOM_MAX_SPATIAL + 1];                                                 \
                int64_t rest = o;                                                                  \
                /* base[0] = x (last dim), base[1] = y, base[2] = z; then the 1 */                 \
                for (k = ns - 1; k >= 0; k--) {                                                    \
                    int64_t L = out[k], i = rest % L;                                              \
                    ACC v;                                                                         \
                    rest /= L;                                                                     \
                    if (align_corners)                                                             \
                        v = L > 1 ? (ACC)-1 + (ACC)(2 * i) / (ACC)(L - 1) : -1;                    \
                    else                                                                           \
                        v = (ACC)(2 * i + 1) / (ACC)L - 1;                                         \
                    base[ns - 1 - k] = v;                                                          \
                }                                                                                  \
                base[ns] = 1;                                                                      \
                for (j = 0; j < ns; j++) {                                                         \
                    const T *th = theta + (b * ns + j) * (ns + 1);                                 \
                    ACC s = 0;                                                                     \
                    for (k = 0; k <= ns; k++)                                                      \
                        s += (ACC)th[k] * base[k];                                                 \
                    grid[(b * pts + o) * ns + j] = (T)s;                                           \
                }                                                                                  \
            }                                                                                      \
    }                                                                                              \
    RT_API int rt_roi_align_##SFX(const T *x, const T *rois, const int64_t *bidx, T *y, int64_t N, \
                                  int64_t C, int64_t H, int64_t W, int64_t R, int64_t oh,          \
                                  int64_t ow, int64_t sampling, ACC scale, int half_pixel,         \
                                  int max_mode) {                                                  \
        int64_t r, c, ph, pw, iy, ix;                                                              \
        for (r = 0; r < R; r++)                                                                    \
            if (bidx[r] < 0 || bidx[r] >= N) return RT_ERR_INDEX;                                  \
        for (r = 0; r < R; r++) {                                                                  \
            ACC off = half_pixel ? (ACC)0.5 : 0;                                                   \
            ACC sw = (ACC)rois[r * 4 + 0] * scale - off, sh = (ACC)rois[r * 4 + 1] * scale - off;  \
            ACC ew = (ACC)rois[r * 4 + 2] * scale - off, eh = (ACC)rois[r * 4 + 3] * scale - off;  \
            ACC rw = ew - sw, rh = eh - sh, bw, bh;                                                \
            int64_t gh, gw, cnt;                                                                   \
            const T *xb = x + bidx[r] * C * H * W;                                                 \
            if (!half_pixel) rw = rw > 1 ? rw : 1, rh = rh > 1 ? rh : 1;                           \
            bh = rh / (ACC)oh, bw = rw / (ACC)ow;                                                  \
            gh = sampling > 0 ? sampling : rt_ceil_i64((double)(rh / (ACC)oh));                    \
            gw = sampling > 0 ? sampling : rt_ceil_i64((double)(rw / (ACC)ow));                    \
            cnt = gh * gw > 1 ? gh * gw : 1;                                                       \
            for (ph = 0; ph < oh; ph++)                                                            \
                for (pw = 0; pw < ow; pw++) {                                                      \
                    T *yo = y + r * C * oh * ow + ph * ow + pw;                                    \
                    for (c = 0; c < C; c++)                                                        \
                        yo[c * oh * ow] = 0;                                                       \
                    for (iy = 0; iy < gh; iy++)                                                    \
                        for (ix = 0; ix < gw; ix++) {                                              \
                            ACC yy = sh + (ACC)ph * bh + ((ACC)iy + (ACC)0.5) * bh / (ACC)gh;      \
                            ACC xx = sw + (ACC)pw * bw + ((ACC)ix + (ACC)0.5) * bw / (ACC)gw;      \
                            ACC w1 = 0, w2 = 0, w3 = 0, w4 = 0, ly, lx;                            \
                            int64_t yl = 0, xl = 0, yh = 0, xh = 0;                                \
                            int first = iy == 0 && ix == 0;                                        \
                            if (!(yy < -1 || yy > (ACC)H || xx < -1 || xx > (ACC)W)) {             \
                                if (yy < 0) yy = 0;                                                \
                                if (xx < 0) xx = 0;                                                \
                                yl = (int64_t)yy, xl = (int64_t)xx;                                \
                                if (yl >= H - 1)                                                   \
                                    yh = yl = H - 1, yy = (ACC)yl;                                 \
                                else                                                               \
                                    yh = yl + 1;                                                   \
                                if (xl >= W - 1)                                                   \
                                    xh = xl = W - 1, xx = (ACC)xl;                                 \
                                else                                                               \
                                    xh = xl + 1;                                                   \
                                ly = yy - (ACC)yl, lx = xx - (ACC)xl;                              \
                                w1 = (1 - ly) * (1 - lx), w2 = (1 - ly) * lx;                      \
                                w3 = ly * (1 - lx), w4 = ly * lx;                                  \
                            }                                                                      \
                            for (c = 0; c < C; c++) {                                              \
                                const T *xc = xb + c * H * W;                                      \
                                ACC a1 = w1 * (ACC)xc[yl * W + xl],                                \
                                    a2 = w2 * (ACC)xc[yl * W + xh];                                \
                                ACC a3 = w3 * (ACC)xc[yh * W + xl],                                \
                                    a4 = w4 * (ACC)xc[yh * W + xh];                                \
                                T *yc = yo + c * oh * ow;                                          \
                                if (max_mode) {                                                    \
                                    ACC v = a1 > a2 ? a1 : a2;                                     \
                                    v = v > a3 ? v : a3, v = v > a4 ? v : a4;                      \
                                    if (first || v > (ACC)*yc) *yc = (T)v;                         \
                                } else {                                                           \
                                    *yc = (T)((ACC)*yc + a1 + a2 + a3 + a4);                       \
                                }                                                                  \
                            }                                                                      \
                        }                                                                          \
                    if (!max_mode)                                                                 \
                        for (c = 0; c < C; c++)                                                    \
                            yo[c * oh * ow] = (T)((ACC)yo[c * oh * ow] / (ACC)cnt);                \
                }                                                                                  \
        }                                                                                          \
        return RT_OK;                                                                              \
    }                                                                                              \
    RT_API int rt_max_roi_pool_##SFX(const T *x, const T *rois, T *y, int64_t N, int64_t C,        \
                                     int64_t H, int64_t W, int64_t R, int64_t ph_n, int64_t pw_n,  \
                                     ACC scale) {                                                  \
        int64_t r, c, ph, pw, h, w;                                                                \
        for (r = 0; r < R; r++) {                                                                  \
            ACC b = (ACC)rois[r * 5];                                                              \
            if (!(b >= 0 && b < (ACC)N)) return RT_ERR_INDEX;                                      \
        }                                                                                          \
        for (r = 0; r < R; r++) {                                                                  \
            const T *rr = rois + r * 5;                                                            \
            int64_t b = (int64_t)rr[0];                                                            \
            int64_t sw = rt_round_i64((double)((ACC)rr[1] * scale)),                               \
                    sh = rt_round_i64((double)((ACC)rr[2] * scale));                               \
            int64_t ew = rt_round_i64((double)((ACC)rr[3] * scale)),                               \
                    eh = rt_round_i64((double)((ACC)rr[4] * scale));                               \
            int64_t rh = eh - sh + 1 > 1 ? eh - sh + 1 : 1,                                        \
                    rw = ew - sw + 1 > 1 ? ew - sw + 1 : 1;                                        \
            ACC bh = (ACC)rh / (ACC)ph_n, bw = (ACC)rw / (ACC)pw_n;                                \
            for (c = 0; c < C; c++) {                                                              \
                const T *xc = x + (b * C + c) * H * W;                                             \
                for (ph = 0; ph < ph_n; ph++)                                                      \
                    for (pw = 0; pw < pw_n; pw++) {                                                \
                        int64_t hs = rt_floor_i64((double)((ACC)ph * bh)) + sh;                    \
                        int64_t he = rt_ceil_i64((double)((ACC)(ph + 1) * bh)) + sh;               \
                        int64_t ws = rt_floor_i64((double)((ACC)pw * bw)) + sw;                    \
                        int64_t we = rt_ceil_i64((double)((ACC)(pw + 1) * bw)) + sw;               \
                        ACC m = 0;                                                                 \
                        int any = 0;                                                               \
                        hs = hs < 0 ? 0 : hs > H ? H : hs, he = he < 0 ? 0 : he > H ? H : he;      \
                        ws = ws < 0 ? 0 : ws > W ? W : ws, we = we < 0 ? 0 : we > W ? W : we;      \
                        for (h = hs; h < he; h++)                                                  \
                            for (w = ws; w < we; w++)                                              \
                                if (!any || (ACC)xc[h * W + w] > m)                                \
                                    m = (ACC)xc[h * W + w], any = 1;                               \
                        y[((r * C + c) * ph_n + ph) * pw_n + pw] = (T)m;                           \
                    }                                                                              \
            }                                                                                      \
        }                                                                                          \
        return RT_OK;                                                                              \
    }                                                                                              \
    RT_API int rt_col2im_##SFX(const T *x, T *y, int64_t N, int64_t C, int64_t ns,                 \
                               const int64_t *img, const int64_t *blk, const int64_t *dil,         \
                               const int64_t *pad, const int64_t *str, int64_t xK, int64_t xL) {   \
        int64_t nb[RT_MAX_RANK], k, L = 1, K = 1, P = 1, n, c, kk, l;                              \
        for (k = 0; k < ns; k++) {                                                                 \
            if (blk[k] < 1 || blk[k] > img[k] + pad[k] + pad[k + ns]) return RT_ERR_SHAPE;         \
            nb[k] = (img[k] + pad[k] + pad[k + ns] - dil[k] * (blk[k] - 1) - 1) / str[k] + 1;      \
            if (nb[k] < 1) return RT_ERR_SHAPE;                                                    \
            L *= nb[k], K *= blk[k], P *= img[k];                                                  \
        }                                                                                          \
        if (K != xK || L != xL) return RT_ERR_SHAPE;                                               \
        for (n = 0; n < N * C * P; n++)                                                            \
            y[n] = 0;                                                                              \
        for (n = 0; n < N; n++)                                                                    \
            for (c = 0; c < C; c++)                                                                \
                for (kk = 0; kk < K; kk++)                                                         \
                    for (l = 0; l < L; l++) {                                                      \
                        int64_t rk = kk, rl = l, off = 0, st = 1;                                  \
                        for (k = ns - 1; k >= 0; k--) {                                            \
                            int64_t bi = rk % blk[k], li = rl % nb[k];                             \
                            int64_t pos = li * str[k] - pad[k] + bi * dil[k];                      \
                            rk /= blk[k], rl /= nb[k];                                             \
                            if (pos < 0 || pos >= img[k]) break;                                   \
                            off += pos * st, st *= img[k];                                         \
                        }                                                                          \
                        if (k < 0) y[(n * C + c) * P + off] += x[((n * C + c) * K + kk) * L + l];  \
                    }                                                                              \
        return RT_OK;                                                                              \
    }                                                                                              \
    RT_API int rt_max_unpool_##SFX(const T *x, const int64_t *idx, T *y, int64_t rank,             \
                                   const int64_t *in, const int64_t *inf, const int64_t *out) {    \
        int64_t nx = 1, ninf = 1, ny = 1, i, k;                                                    \
        for (k = 0; k < rank; k++)                                                                 \
            nx *= in[k], ninf *= inf[k], ny *= out[k];                                             \
        for (i = 0; i < nx; i++)                                                                   \
            if (idx[i] < 0 || idx[i] >= ninf) return RT_ERR_INDEX;                                 \
        for (i = 0; i < ny; i++)                                                                   \
            y[i] = 0;                                                                              \
        for (i = 0; i < nx; i++) {                                                                 \
            int64_t rest = idx[i], off = 0, st = 1;                                                \
            for (k = rank - 1; k >= 0; k--) {                                                      \
                off += (rest % inf[k]) * st;                                                       \
                rest /= inf[k], st *= out[k];                                                      \
            }                                                                                      \
            y[off] = x[i];                                                                         \
        }                                                                                          \
        return RT_OK;                                                                              \
    }                                                                                              \
    RT_API void rt_det_##SFX(const T *x, T *y, int64_t batch, int64_t n, double *a) {              \
        int64_t b, i, j, k;                                                                        \
        for (b = 0; b < batch; b++) {                                                              \
            double det = 1;                                                                        \
            for (i = 0; i < n * n; i++)                                                            \
                a[i] = (double)x[b * n * n + i];                                                   \
            for (k = 0; k < n && det != 0; k++) {                                                  \
                int64_t piv = k;                                                                   \
                for (i = k + 1; i < n; i++)                                                        \
                    if (fabs(a[i * n + k]) > fabs(a[piv * n + k])) piv = i;                        \
                if (a[piv * n + k] == 0) {                                                         \
                    det = 0;                                                                       \
                    break;                                                                         \
                }                                                                                  \
                if (piv != k) {                                                                    \
                    for (j = 0; j < n; j++) {                                                      \
                        double t = a[k * n + j];                                                   \
                        a[k * n + j] = a[piv * n + j], a[piv * n + j] = t;                         \
                    }                                                                              \
                    det = -det;                                                                    \
                }                                                                                  \
                det *= a[k * n + k];                                                               \
                for (i = k + 1; i < n; i++) {                                                      \
                    double f = a[i * n + k] / a[k * n + k];                                        \
                    for (j = k + 1; j < n; j++)                                                    \
                        a[i * n + j] -= f * a[k * n + j];                                          \
                }                                                                                  \
            }                                                                                      \
            y[b] = (T)det;                                                                         \
        }                                                                                          \
    }

RT_GEOM_DEFINE(f32, float, float)
RT_GEOM_DEFINE(f64, double, double)

/* ---- NonMaxSuppression ---- */

/* True when boxes a and b (4 coordinates each) overlap by IoU above thr. center: the boxes
 * are (x_c, y_c, w, h), else two corners (y1, x1, y2, x2) in any order. */
RT_API int rt_nms_suppress(const float *a, const float *b, int center, float thr) {
    float ay0, ay1, ax0, ax1, by0, by1, bx0, bx1, ih, iw, inter, area_a, area_b, uni;
    if (center) {
        ax0 = a[0] - a[2] / 2;
        ax1 = a[0] + a[2] / 2;
        ay0 = a[1] - a[3] / 2;
        ay1 = a[1] + a[3] / 2;
        bx0 = b[0] - b[2] / 2;
        bx1 = b[0] + b[2] / 2;
        by0 = b[1] - b[3] / 2;
        by1 = b[1] + b[3] / 2;
    } else {
        ay0 = a[0] < a[2] ? a[0] : a[2];
        ay1 = a[0] < a[2] ? a[2] : a[0];
        ax0 = a[1] < a[3] ? a[1] : a[3];
        ax1 = a[1] < a[3] ? a[3] : a[1];
        by0 = b[0] < b[2] ? b[0] : b[2];
        by1 = b[0] < b[2] ? b[2] : b[0];
        bx0 = b[1] < b[3] ? b[1] : b[3];
        bx1 = b[1] < b[3] ? b[3] : b[1];
    }
    iw = (ax1 < bx1 ? ax1 : bx1) - (ax0 > bx0 ? ax0 : bx0);
    ih = (ay1 < by1 ? ay1 : by1) - (ay0 > by0 ? ay0 : by0);
    if (iw <= 0 || ih <= 0) return 0;
    inter = iw * ih;
    area_a = (ax1 - ax0) * (ay1 - ay0);
    area_b = (bx1 - bx0) * (by1 - by0);
    uni = area_a + area_b - inter;
    if (area_a <= 0 || area_b <= 0 || uni <= 0) return 0;
    return inter / uni > thr;
}

/* boxes: (B, n, 4), scores: (B, C, n), sel: (cap, 3) as (batch, class, box). Greedy NMS per
 * (batch, class) in the order (score descending, index ascending) without scratch: the boxes
 * already selected are the rows of sel written so far. has_score_thr: only scores above
 * score_thr are candidates. More than cap selections return RT_ERR_SHAPE; fewer leave the
 * remaining rows at -1 (the compiled output shape is an upper bound; rt_nms_count counts the
 * rows written). */
RT_API int rt_nms(const float *boxes, const float *scores, int64_t *sel, int64_t B, int64_t C,
                  int64_t n, int64_t cap, int64_t max_per_class, float iou_thr, int has_score_thr,
                  float score_thr, int center) {
    int64_t b, c, i, k, count = 0;
    for (i = 0; i < cap * 3; i++)
        sel[i] = -1;
    for (b = 0; b < B; b++)
        for (c = 0; c < C; c++) {
            const float *sc = scores + (b * C + c) * n, *bx = boxes + b * n * 4;
            int64_t start = count, cur = -1;
            float cur_s = 0;
            while (count - start < max_per_class) {
                /* the next candidate after (cur_s, cur) in the order */
                int64_t best = -1;
                for (i = 0; i < n; i++) {
                    float s = sc[i];
                    if (has_score_thr && !(s > score_thr)) continue;
                    if (cur >= 0 && (s > cur_s || (s == cur_s && i <= cur))) continue;
                    if (best < 0 || s > sc[best]) best = i;
                }
                if (best < 0) break;
                cur = best;
                cur_s = sc[best];
                for (k = start; k < count; k++)
                    if (rt_nms_suppress(bx + sel[k * 3 + 2] * 4, bx + best * 4, center, iou_thr))
                        break;
                if (k < count) continue;
                if (count >= cap) return RT_ERR_SHAPE;
                sel[count * 3] = b;
                sel[count * 3 + 1] = c;
                sel[count * 3 + 2] = best;
                count++;
            }
        }
    return RT_OK;
}

/* The selections rt_nms wrote into sel (cap, 3): the rows before the first -1 row. */
RT_API int64_t rt_nms_count(const int64_t *sel, int64_t cap) {
    int64_t k = 0;
    while (k < cap && sel[k * 3] >= 0) k++;
    return k;
}

#endif
