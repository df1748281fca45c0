/* Unit tests of the nn runtime kernels (runtime/rt_conv.h, rt_pool.h, rt_norm.h): each
 * kernel runs on fresh random inputs, with its outputs poisoned first, against a naive
 * reference loop written here in double. The seed is printed with any failure. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/rt_conv.h"
#include "runtime/rt_norm.h"
#include "runtime/rt_pool.h"

#include "rt_test_util.h"

#define TOL_F32 1e-4 /* relative to the reference's magnitude, for float accumulations */
#define TOL_F16 4e-3 /* float16 keeps 11 significant bits */

static int64_t prod3(const int64_t *v) { return v[0] * v[1] * v[2]; }

/* ---- convolution ---- */

/* Output size of a convolution along one axis with leading pad p and trailing pad q. */
static int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p, int64_t q) {
    return (in + p + q - (k - 1) * d - 1) / s + 1;
}

static RtConvGeom conv_geom(int64_t n, int64_t c, int64_t m, int64_t group, const int64_t *in,
                            const int64_t *k, const int64_t *s, const int64_t *d,
                            const int64_t *pad, const int64_t *pad_end) {
    RtConvGeom g = {n, c, m, group, {0}, {0}, {0}, {0}, {0}, {0}};
    for (int a = 0; a < 3; a++) {
        g.in[a] = in[a], g.k[a] = k[a], g.s[a] = s[a], g.d[a] = d[a], g.pad[a] = pad[a];
        g.out[a] = conv_out(in[a], k[a], s[a], d[a], pad[a], pad_end[a]);
    }
    return g;
}

static double *conv_ref(const float *x, const float *w, const float *b, const RtConvGeom *g) {
    int64_t cg = g->c / g->group, mg = g->m / g->group, osz = prod3(g->out);
    double *y = calloc((size_t)(g->n * g->m * osz), sizeof *y);
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t m = 0; m < g->m; m++)
            for (int64_t o0 = 0; o0 < g->out[0]; o0++)
                for (int64_t o1 = 0; o1 < g->out[1]; o1++)
                    for (int64_t o2 = 0; o2 < g->out[2]; o2++) {
                        double acc = b ? b[m] : 0.0;
                        for (int64_t ci = 0; ci < cg; ci++)
                            for (int64_t k0 = 0; k0 < g->k[0]; k0++)
                                for (int64_t k1 = 0; k1 < g->k[1]; k1++)
                                    for (int64_t k2 = 0; k2 < g->k[2]; k2++) {
                                        int64_t i0 = o0 * g->s[0] + k0 * g->d[0] - g->pad[0];
                                        int64_t i1 = o1 * g->s[1] + k1 * g->d[1] - g->pad[1];
                                        int64_t i2 = o2 * g->s[2] + k2 * g->d[2] - g->pad[2];
                                        if (i0 < 0 || i0 >= g->in[0] || i1 < 0 || i1 >= g->in[1] ||
                                            i2 < 0 || i2 >= g->in[2])
                                            continue;
                                        int64_t c = (m / mg) * cg + ci;
                                        acc +=
                                            (double)x[(((n * g->c + c) * g->in[0] + i0) * g->in[1] +
                                                       i1) *
                                                          g->in[2] +
                                                      i2] *
                                            w[(((m * cg + ci) * g->k[0] + k0) * g->k[1] + k1) *
                                                  g->k[2] +
                                              k2];
                                    }
                        y[(((n * g->m + m) * g->out[0] + o0) * g->out[1] + o1) * g->out[2] + o2] =
                            acc;
                    }
    return y;
}

/* Runs rt_conv_f32, rt_conv_f64 and rt_conv_f16 on one geometry against conv_ref. */
static void check_conv(const RtConvGeom *g, bool with_bias) {
    int64_t xn = g->n * g->c * prod3(g->in), yn = g->n * g->m * prod3(g->out);
    int64_t wn = g->m * (g->c / g->group) * prod3(g->k);
    float *x = rand_f32(xn), *w = rand_f32(wn), *b = with_bias ? rand_f32(g->m) : NULL;
    float *y = poisoned_f32(yn);
    double *want = conv_ref(x, w, b, g);
    rt_conv_f32(x, w, b, y, g);
    expect_close_tol(y, want, yn, TOL_F32, "conv f32");

    double *xd = malloc((size_t)xn * sizeof *xd), *wd = malloc((size_t)wn * sizeof *wd);
    double *bd = malloc((size_t)g->m * sizeof *bd), *yd = malloc((size_t)yn * sizeof *yd);
    for (int64_t i = 0; i < xn; i++)
        xd[i] = x[i];
    for (int64_t i = 0; i < wn; i++)
        wd[i] = w[i];
    for (int64_t i = 0; i < g->m; i++)
        bd[i] = b ? b[i] : 0;
    for (int64_t i = 0; i < yn; i++)
        yd[i] = NAN;
    rt_conv_f64(xd, wd, b ? bd : NULL, yd, g);
    for (int64_t i = 0; i < yn; i++)
        cr_assert(fabs(yd[i] - want[i]) <= 1e-9 * (1 + fabs(want[i])), "conv f64[%lld] (seed %u)",
                  (long long)i, rng_seed);

    /* float16: inputs rounded to half first, so the reference sees the same values */
    uint16_t *xh = malloc((size_t)xn * 2), *wh = malloc((size_t)wn * 2);
    uint16_t *bh = malloc((size_t)g->m * 2), *yh = malloc((size_t)yn * 2);
    for (int64_t i = 0; i < xn; i++)
        xh[i] = rt_f32_to_f16(x[i]), x[i] = rt_f16_to_f32(xh[i]);
    for (int64_t i = 0; i < wn; i++)
        wh[i] = rt_f32_to_f16(w[i]), w[i] = rt_f16_to_f32(wh[i]);
    for (int64_t i = 0; b && i < g->m; i++)
        bh[i] = rt_f32_to_f16(b[i]), b[i] = rt_f16_to_f32(bh[i]);
    for (int64_t i = 0; i < yn; i++)
        yh[i] = 0x7e00; /* NaN */
    free(want);
    want = conv_ref(x, w, b, g);
    rt_conv_f16(xh, wh, b ? bh : NULL, yh, g);
    for (int64_t i = 0; i < yn; i++)
        y[i] = rt_f16_to_f32(yh[i]);
    expect_close_tol(y, want, yn, TOL_F16, "conv f16");
    free(x), free(w), free(b), free(y), free(want);
    free(xd), free(wd), free(bd), free(yd), free(xh), free(wh), free(bh), free(yh);
}

Test(rt_conv, matches_reference_for_2d_with_padding_stride_and_bias) {
    rng_init();
    int64_t in[3] = {1, 9, 11}, k[3] = {1, 3, 3}, s[3] = {1, 2, 1}, d[3] = {1, 1, 1};
    int64_t p[3] = {0, 1, 2}, q[3] = {0, 2, 1};
    RtConvGeom g = conv_geom(2, 3, 6, 1, in, k, s, d, p, q);
    check_conv(&g, true);
}

Test(rt_conv, matches_reference_for_grouped_and_depthwise_2d) {
    rng_init();
    int64_t in[3] = {1, 8, 7}, k[3] = {1, 3, 2}, s[3] = {1, 1, 2}, d[3] = {1, 2, 1};
    int64_t p[3] = {0, 1, 0}, q[3] = {0, 1, 1};
    RtConvGeom g = conv_geom(1, 6, 9, 3, in, k, s, d, p, q); /* 3 out channels per group */
    check_conv(&g, true);
    RtConvGeom dw = conv_geom(1, 5, 5, 5, in, k, s, d, p, q);
    check_conv(&dw, false);
}

Test(rt_conv, matches_reference_for_1d_3d_and_pointwise) {
    rng_init();
    int64_t in1[3] = {1, 1, 20}, k1[3] = {1, 1, 4}, s1[3] = {1, 1, 3}, d1[3] = {1, 1, 2};
    int64_t p1[3] = {0, 0, 3}, q1[3] = {0, 0, 0};
    RtConvGeom g1 = conv_geom(2, 2, 7, 1, in1, k1, s1, d1, p1, q1);
    check_conv(&g1, true);
    int64_t in3[3] = {4, 5, 6}, k3[3] = {2, 3, 2}, s3[3] = {2, 1, 1}, d3[3] = {1, 1, 2};
    int64_t p3[3] = {1, 1, 0}, q3[3] = {0, 1, 1};
    RtConvGeom g3 = conv_geom(1, 2, 3, 1, in3, k3, s3, d3, p3, q3);
    check_conv(&g3, true);
    int64_t inp[3] = {1, 1, 37}, kp[3] = {1, 1, 1}, one[3] = {1, 1, 1}, zero[3] = {0, 0, 0};
    RtConvGeom gp = conv_geom(1, 5, 10, 1, inp, kp, one, one, zero, zero);
    check_conv(&gp, true);
}

Test(rt_conv, leaves_padding_only_outputs_at_the_bias) {
    rng_init(); /* a window entirely in the padding: out = bias */
    int64_t in[3] = {1, 1, 2}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
    int64_t p[3] = {0, 0, 2}, q[3] = {0, 0, 2};
    RtConvGeom g = conv_geom(1, 1, 2, 1, in, k, s, d, p, q);
    check_conv(&g, true);
}

/* ConvTranspose as the scatter it is defined by, in double. */
static double *conv_transpose_ref(const float *x, const float *w, const float *b,
                                  const RtConvGeom *g) {
    int64_t cg = g->c / g->group, mg = g->m / g->group, osz = prod3(g->out);
    double *y = calloc((size_t)(g->n * g->m * osz), sizeof *y);
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t m = 0; m < g->m; m++)
            for (int64_t o = 0; o < osz; o++)
                y[(n * g->m + m) * osz + o] = b ? b[m] : 0;
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t c = 0; c < g->c; c++)
            for (int64_t i0 = 0; i0 < g->in[0]; i0++)
                for (int64_t i1 = 0; i1 < g->in[1]; i1++)
                    for (int64_t i2 = 0; i2 < g->in[2]; i2++)
                        for (int64_t mo = 0; mo < mg; mo++)
                            for (int64_t k0 = 0; k0 < g->k[0]; k0++)
                                for (int64_t k1 = 0; k1 < g->k[1]; k1++)
                                    for (int64_t k2 = 0; k2 < g->k[2]; k2++) {
                                        int64_t o0 = i0 * g->s[0] + k0 * g->d[0] - g->pad[0];
                                        int64_t o1 = i1 * g->s[1] + k1 * g->d[1] - g->pad[1];
                                        int64_t o2 = i2 * g->s[2] + k2 * g->d[2] - g->pad[2];
                                        if (o0 < 0 || o0 >= g->out[0] || o1 < 0 ||
                                            o1 >= g->out[1] || o2 < 0 || o2 >= g->out[2])
                                            continue;
                                        int64_t m = (c / cg) * mg + mo;
                                        y[(((n * g->m + m) * g->out[0] + o0) * g->out[1] + o1) *
                                              g->out[2] +
                                          o2] +=
                                            (double)x[(((n * g->c + c) * g->in[0] + i0) * g->in[1] +
                                                       i1) *
                                                          g->in[2] +
                                                      i2] *
                                            w[(((c * mg + mo) * g->k[0] + k0) * g->k[1] + k1) *
                                                  g->k[2] +
                                              k2];
                                    }
    return y;
}

static void check_conv_transpose(const RtConvGeom *g) {
    int64_t xn = g->n * g->c * prod3(g->in), yn = g->n * g->m * prod3(g->out);
    int64_t wn = g->c * (g->m / g->group) * prod3(g->k);
    float *x = rand_f32(xn), *w = rand_f32(wn), *b = rand_f32(g->m), *y = poisoned_f32(yn);
    double *want = conv_transpose_ref(x, w, b, g);
    rt_conv_transpose_f32(x, w, b, y, g);
    expect_close_tol(y, want, yn, TOL_F32, "conv_transpose f32");
    uint16_t *xh = malloc((size_t)xn * 2), *wh = malloc((size_t)wn * 2);
    uint16_t *bh = malloc((size_t)g->m * 2), *yh = malloc((size_t)yn * 2);
    for (int64_t i = 0; i < xn; i++)
        xh[i] = rt_f32_to_f16(x[i]), x[i] = rt_f16_to_f32(xh[i]);
    for (int64_t i = 0; i < wn; i++)
        wh[i] = rt_f32_to_f16(w[i]), w[i] = rt_f16_to_f32(wh[i]);
    for (int64_t i = 0; i < g->m; i++)
        bh[i] = rt_f32_to_f16(b[i]), b[i] = rt_f16_to_f32(bh[i]);
    for (int64_t i = 0; i < yn; i++)
        yh[i] = 0x7e00;
    free(want);
    want = conv_transpose_ref(x, w, b, g);
    rt_conv_transpose_f16(xh, wh, bh, yh, g);
    for (int64_t i = 0; i < yn; i++)
        y[i] = rt_f16_to_f32(yh[i]);
    expect_close_tol(y, want, yn, TOL_F16, "conv_transpose f16");
    free(x), free(w), free(b), free(y), free(want), free(xh), free(wh), free(bh), free(yh);
}

Test(rt_conv, transpose_matches_the_scatter_definition) {
    rng_init();
    /* 2D, groups, strides, dilations, pads, output padding (out one larger than needed) */
    RtConvGeom g = {2, 4, 6, 2, {1, 4, 5}, {1, 9, 12}, {1, 3, 2}, {1, 2, 3}, {1, 1, 2}, {0, 1, 0}};
    check_conv_transpose(&g);
    RtConvGeom g3 = {1, 2, 3, 1, {3, 2, 4}, {6, 5, 8}, {2, 2, 3}, {2, 2, 2}, {1, 1, 1}, {0, 0, 1}};
    check_conv_transpose(&g3);
}

/* ---- pools ---- */

static RtPoolGeom pool_geom(int64_t nc, const int64_t *in, const int64_t *k, const int64_t *s,
                            const int64_t *d, const int64_t *pad, const int64_t *pad_end,
                            bool ceil_mode) {
    RtPoolGeom g = {nc, {0}, {0}, {0}, {0}, {0}, {0}, {0}};
    for (int a = 0; a < 3; a++) {
        int64_t span = in[a] + pad[a] + pad_end[a] - (k[a] - 1) * d[a] - 1;
        int64_t out = (ceil_mode ? (span + s[a] - 1) / s[a] : span / s[a]) + 1;
        if (ceil_mode && (out - 1) * s[a] >= in[a] + pad[a]) out--;
        g.in[a] = in[a], g.out[a] = out, g.k[a] = k[a], g.s[a] = s[a], g.d[a] = d[a];
        g.pad[a] = pad[a], g.pad_end[a] = pad_end[a];
    }
    return g;
}

/* Reference pool: kind 0 max (with flat row-major argmax), 1 avg, 2 avg counting pads,
 * 3 L2. */
static double *pool_ref(const float *x, const RtPoolGeom *g, int kind, int64_t *arg) {
    int64_t osz = prod3(g->out), isz = prod3(g->in);
    double *y = calloc((size_t)(g->nc * osz), sizeof *y);
    for (int64_t c = 0; c < g->nc; c++)
        for (int64_t o0 = 0; o0 < g->out[0]; o0++)
            for (int64_t o1 = 0; o1 < g->out[1]; o1++)
                for (int64_t o2 = 0; o2 < g->out[2]; o2++) {
                    double acc = kind == 0 ? -INFINITY : 0;
                    int64_t cnt = 0, cnt_pad = 0, best = -1;
                    for (int64_t k0 = 0; k0 < g->k[0]; k0++)
                        for (int64_t k1 = 0; k1 < g->k[1]; k1++)
                            for (int64_t k2 = 0; k2 < g->k[2]; k2++) {
                                int64_t i[3] = {o0 * g->s[0] + k0 * g->d[0] - g->pad[0],
                                                o1 * g->s[1] + k1 * g->d[1] - g->pad[1],
                                                o2 * g->s[2] + k2 * g->d[2] - g->pad[2]};
                                bool in_pad = true, inside = true;
                                for (int a = 0; a < 3; a++) {
                                    inside = inside && i[a] >= 0 && i[a] < g->in[a];
                                    in_pad = in_pad && i[a] >= -g->pad[a] &&
                                             i[a] < g->in[a] + g->pad_end[a];
                                }
                                cnt_pad += in_pad;
                                if (!inside) continue;
                                int64_t at = (i[0] * g->in[1] + i[1]) * g->in[2] + i[2];
                                double v = x[c * isz + at];
                                cnt++;
                                if (kind == 0 && v > acc) acc = v, best = c * isz + at;
                                if (kind == 1 || kind == 2) acc += v;
                                if (kind == 3) acc += v * v;
                            }
                    int64_t oi = ((c * g->out[0] + o0) * g->out[1] + o1) * g->out[2] + o2;
                    if (kind == 1) acc /= (double)cnt;
                    if (kind == 2) acc /= (double)cnt_pad;
                    if (kind == 3) acc = sqrt(acc);
                    y[oi] = acc;
                    if (arg) arg[oi] = best;
                }
    return y;
}

Test(rt_pool, max_matches_reference_with_indices_in_both_storage_orders) {
    rng_init();
    int64_t in[3] = {1, 7, 8}, k[3] = {1, 3, 2}, s[3] = {1, 2, 2}, d[3] = {1, 1, 2};
    int64_t p[3] = {0, 1, 0}, q[3] = {0, 1, 1};
    RtPoolGeom g = pool_geom(6, in, k, s, d, p, q, true);
    int64_t xn = g.nc * prod3(g.in), yn = g.nc * prod3(g.out);
    float *x = rand_f32(xn), *y = poisoned_f32(yn);
    int64_t *idx = malloc((size_t)yn * sizeof *idx), *want_idx = malloc((size_t)yn * sizeof *idx);
    double *want = pool_ref(x, &g, 0, want_idx);
    for (int64_t i = 0; i < yn; i++)
        idx[i] = -7;
    rt_maxpool_f32(x, y, idx, &g, 0);
    expect_close_tol(y, want, yn, 0, "maxpool");
    for (int64_t i = 0; i < yn; i++)
        cr_assert_eq(idx[i], want_idx[i], "index %lld (seed %u)", (long long)i, rng_seed);
    rt_maxpool_f32(x, y, idx, &g, 1);
    for (int64_t i = 0; i < yn; i++) {
        int64_t plane = want_idx[i] / prod3(g.in), r = want_idx[i] % prod3(g.in);
        int64_t h = r / g.in[2], w = r % g.in[2];
        cr_assert_eq(idx[i], plane * prod3(g.in) + h + w * g.in[1], "column-major index %lld",
                     (long long)i);
    }
    free(x), free(y), free(idx), free(want_idx), free(want);
}

Test(rt_pool, average_counts_pads_only_when_asked) {
    rng_init();
    int64_t in[3] = {3, 6, 5}, k[3] = {2, 3, 3}, s[3] = {2, 2, 1}, d[3] = {1, 1, 2};
    int64_t p[3] = {1, 1, 2}, q[3] = {0, 2, 1};
    RtPoolGeom g = pool_geom(2, in, k, s, d, p, q, true);
    int64_t xn = g.nc * prod3(g.in), yn = g.nc * prod3(g.out);
    float *x = rand_f32(xn), *y = poisoned_f32(yn);
    for (int include = 0; include < 2; include++) {
        double *want = pool_ref(x, &g, 1 + include, NULL);
        rt_avgpool_f32(x, y, &g, include);
        expect_close_tol(y, want, yn, TOL_F32, include ? "avgpool incl. pads" : "avgpool");
        free(want);
    }
    double *want = pool_ref(x, &g, 3, NULL);
    for (int64_t i = 0; i < yn; i++)
        y[i] = NAN;
    rt_lppool_f32(x, y, &g, 2);
    expect_close_tol(y, want, yn, TOL_F32, "lppool p=2");
    free(want), free(x), free(y);
}

Test(rt_pool, global_pools_reduce_each_plane) {
    rng_init();
    int64_t nc = 5, size = 33;
    float *x = rand_f32(nc * size), *y = poisoned_f32(nc);
    double want_avg[5], want_max[5], want_l3[5];
    for (int64_t c = 0; c < nc; c++) {
        double sum = 0, mx = -INFINITY, l3 = 0;
        for (int64_t i = 0; i < size; i++) {
            double v = x[c * size + i];
            sum += v, mx = v > mx ? v : mx, l3 += fabs(v) * fabs(v) * fabs(v);
        }
        want_avg[c] = sum / (double)size, want_max[c] = mx, want_l3[c] = cbrt(l3);
    }
    rt_global_avgpool_f32(x, y, nc, size);
    expect_close_tol(y, want_avg, nc, TOL_F32, "global avg");
    for (int64_t i = 0; i < nc; i++)
        y[i] = NAN;
    rt_global_maxpool_f32(x, y, nc, size);
    expect_close_tol(y, want_max, nc, 0, "global max");
    for (int64_t i = 0; i < nc; i++)
        y[i] = NAN;
    rt_global_lppool_f32(x, y, nc, size, 3);
    expect_close_tol(y, want_l3, nc, TOL_F32, "global lp3");
    free(x), free(y);
}

/* ---- normalizations ---- */

/* Mean and biased variance of n values at x[0], x[step], ... */
static void stats(const float *x, int64_t n, int64_t step, double *mean, double *var) {
    double s = 0, q = 0;
    for (int64_t i = 0; i < n; i++)
        s += x[i * step];
    *mean = s / (double)n;
    for (int64_t i = 0; i < n; i++)
        q += (x[i * step] - *mean) * (x[i * step] - *mean);
    *var = q / (double)n;
}

Test(rt_norm, batchnorm_inference_and_training_match_reference) {
    rng_init();
    int64_t N = 3, C = 4, S = 10, n = N * C * S;
    float *x = rand_f32(n), *sc = rand_f32(C), *bi = rand_f32(C), *mu = rand_f32(C);
    float *var = rand_f32(C), *y = poisoned_f32(n), *rm = poisoned_f32(C), *rv = poisoned_f32(C);
    for (int64_t c = 0; c < C; c++)
        var[c] = fabsf(var[c]) + 0.1f;
    double *want = malloc((size_t)n * sizeof *want), want_rm[4], want_rv[4];
    for (int64_t i = 0; i < n; i++) {
        int64_t c = (i / S) % C;
        want[i] = (x[i] - mu[c]) / sqrt(var[c] + 1e-5) * sc[c] + bi[c];
    }
    rt_batchnorm_f32(x, sc, bi, mu, var, y, N, C, S, 1e-5f);
    expect_close_tol(y, want, n, TOL_F32, "batchnorm");
    for (int64_t c = 0; c < C; c++) {
        double s = 0, q = 0;
        for (int64_t b = 0; b < N; b++)
            for (int64_t i = 0; i < S; i++)
                s += x[(b * C + c) * S + i];
        double m = s / (double)(N * S);
        for (int64_t b = 0; b < N; b++)
            for (int64_t i = 0; i < S; i++)
                q += pow(x[(b * C + c) * S + i] - m, 2);
        double v = q / (double)(N * S);
        for (int64_t b = 0; b < N; b++)
            for (int64_t i = 0; i < S; i++)
                want[(b * C + c) * S + i] =
                    (x[(b * C + c) * S + i] - m) / sqrt(v + 1e-5) * sc[c] + bi[c];
        want_rm[c] = mu[c] * 0.9 + m * 0.1, want_rv[c] = var[c] * 0.9 + v * 0.1;
    }
    rt_batchnorm_train_f32(x, sc, bi, mu, var, y, rm, rv, N, C, S, 1e-5f, 0.9f);
    expect_close_tol(y, want, n, TOL_F32, "batchnorm training");
    expect_close_tol(rm, want_rm, C, TOL_F32, "running mean");
    expect_close_tol(rv, want_rv, C, TOL_F32, "running var");
    free(x), free(sc), free(bi), free(mu), free(var), free(y), free(rm), free(rv), free(want);
}

Test(rt_norm, layernorm_writes_output_mean_and_inv_std) {
    rng_init();
    int64_t rows = 6, cols = 17, n = rows * cols;
    float *x = rand_f32(n), *sc = rand_f32(cols), *bi = rand_f32(cols), *y = poisoned_f32(n);
    float *mean = poisoned_f32(rows), *inv = poisoned_f32(rows);
    double *want = malloc((size_t)n * sizeof *want), wm[6], wi[6];
    for (int64_t r = 0; r < rows; r++) {
        double m, v;
        stats(x + r * cols, cols, 1, &m, &v);
        wm[r] = m, wi[r] = 1 / sqrt(v + 1e-5);
        for (int64_t j = 0; j < cols; j++)
            want[r * cols + j] = (x[r * cols + j] - m) * wi[r] * sc[j] + bi[j];
    }
    rt_layernorm_f32(x, sc, bi, y, mean, inv, rows, cols, 1, 1, 1e-5f);
    expect_close_tol(y, want, n, TOL_F32, "layernorm");
    expect_close_tol(mean, wm, rows, TOL_F32, "mean");
    expect_close_tol(inv, wi, rows, TOL_F32, "inv_std");
    /* one scale value, no bias, no statistics */
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < cols; j++)
            want[r * cols + j] = (want[r * cols + j] - bi[j]) / sc[j] * sc[0];
    for (int64_t i = 0; i < n; i++)
        y[i] = NAN;
    rt_layernorm_f32(x, sc, NULL, y, NULL, NULL, rows, cols, 0, 0, 1e-5f);
    expect_close_tol(y, want, n, 1e-3, "layernorm scalar scale");
    /* RMSNormalization */
    for (int64_t r = 0; r < rows; r++) {
        double q = 0;
        for (int64_t j = 0; j < cols; j++)
            q += (double)x[r * cols + j] * x[r * cols + j];
        for (int64_t j = 0; j < cols; j++)
            want[r * cols + j] = x[r * cols + j] / sqrt(q / (double)cols + 1e-5) * sc[j];
    }
    for (int64_t i = 0; i < n; i++)
        y[i] = NAN;
    rt_rmsnorm_f32(x, sc, y, rows, cols, 1, 1e-5f);
    expect_close_tol(y, want, n, TOL_F32, "rmsnorm");
    free(x), free(sc), free(bi), free(y), free(mean), free(inv), free(want);
}

Test(rt_norm, instance_and_group_norms_match_reference) {
    rng_init();
    int64_t N = 2, C = 6, S = 9, G = 3, n = N * C * S;
    float *x = rand_f32(n), *sc = rand_f32(C), *bi = rand_f32(C), *y = poisoned_f32(n);
    double *want = malloc((size_t)n * sizeof *want);
    for (int64_t p = 0; p < N * C; p++) {
        double m, v;
        stats(x + p * S, S, 1, &m, &v);
        for (int64_t i = 0; i < S; i++)
            want[p * S + i] = (x[p * S + i] - m) / sqrt(v + 1e-5) * sc[p % C] + bi[p % C];
    }
    rt_instancenorm_f32(x, sc, bi, y, N, C, S, 1e-5f);
    expect_close_tol(y, want, n, TOL_F32, "instancenorm");
    for (int per_channel = 0; per_channel < 2; per_channel++) {
        int64_t cpg = C / G;
        for (int64_t b = 0; b < N; b++)
            for (int64_t gr = 0; gr < G; gr++) {
                double m, v;
                stats(x + (b * C + gr * cpg) * S, cpg * S, 1, &m, &v);
                for (int64_t c = gr * cpg; c < (gr + 1) * cpg; c++)
                    for (int64_t i = 0; i < S; i++) {
                        int64_t pi = per_channel ? c : gr;
                        want[(b * C + c) * S + i] =
                            (x[(b * C + c) * S + i] - m) / sqrt(v + 1e-5) * sc[pi] + bi[pi];
                    }
            }
        for (int64_t i = 0; i < n; i++)
            y[i] = NAN;
        rt_groupnorm_f32(x, sc, bi, y, N, C, S, G, per_channel, 1e-5f);
        expect_close_tol(y, want, n, TOL_F32, "groupnorm");
    }
    free(x), free(sc), free(bi), free(y), free(want);
}

Test(rt_norm, lrn_lpnorm_and_mvn_match_reference) {
    rng_init();
    int64_t N = 2, C = 5, S = 6, n = N * C * S, size = 4;
    float *x = rand_f32(n), *y = poisoned_f32(n);
    double *want = malloc((size_t)n * sizeof *want);
    for (int64_t b = 0; b < N; b++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < S; i++) {
                double sq = 0;
                for (int64_t cc = c - (size - 1) / 2; cc <= c + size / 2; cc++)
                    if (cc >= 0 && cc < C) sq += pow(x[(b * C + cc) * S + i], 2);
                want[(b * C + c) * S + i] =
                    x[(b * C + c) * S + i] / pow(1.0 + 1e-4 / (double)size * sq, 0.75);
            }
    rt_lrn_f32(x, y, N, C, S, size, 1e-4f, 0.75f, 1.0f);
    expect_close_tol(y, want, n, TOL_F32, "lrn");
    for (int64_t p = 1; p <= 2; p++) { /* along C of (N,C,S) */
        for (int64_t b = 0; b < N; b++)
            for (int64_t i = 0; i < S; i++) {
                double norm = 0;
                for (int64_t c = 0; c < C; c++)
                    norm += p == 1 ? fabs(x[(b * C + c) * S + i]) : pow(x[(b * C + c) * S + i], 2);
                if (p == 2) norm = sqrt(norm);
                for (int64_t c = 0; c < C; c++)
                    want[(b * C + c) * S + i] = x[(b * C + c) * S + i] / norm;
            }
        for (int64_t i = 0; i < n; i++)
            y[i] = NAN;
        rt_lpnorm_f32(x, y, N, C, S, p);
        expect_close_tol(y, want, n, TOL_F32, "lpnorm");
    }
    /* MVN over axes {0, 2} of (N,C,S) */
    for (int64_t c = 0; c < C; c++) {
        double s = 0, q = 0;
        for (int64_t b = 0; b < N; b++)
            for (int64_t i = 0; i < S; i++)
                s += x[(b * C + c) * S + i];
        double m = s / (double)(N * S);
        for (int64_t b = 0; b < N; b++)
            for (int64_t i = 0; i < S; i++)
                q += pow(x[(b * C + c) * S + i] - m, 2);
        double sd = sqrt(q / (double)(N * S)) + 1e-9;
        for (int64_t b = 0; b < N; b++)
            for (int64_t i = 0; i < S; i++)
                want[(b * C + c) * S + i] = (x[(b * C + c) * S + i] - m) / sd;
    }
    int64_t dims[3] = {N, C, S};
    for (int64_t i = 0; i < n; i++)
        y[i] = NAN;
    rt_mvn_f32(x, y, 3, dims, 0x5u, 1e-9f);
    expect_close_tol(y, want, n, 1e-3, "mvn");
    free(x), free(y), free(want);
}
