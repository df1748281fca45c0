/* Unit tests of the channels-last kernels (runtime/rt_conv_nhwc.h and the NHWC pools of
 * runtime/rt_pool.h): fresh random inputs, outputs poisoned first, against naive reference
 * loops written here in double (convolution) or the NCHW kernels on the transposed input
 * (pools, which must agree bit for bit). The seed is printed with any failure. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rt_conv_nhwc.h"
#include "runtime/rt_pool.h"

#include "rt_test_util.h"

#define TOL_F32 1e-4 /* relative to the reference's magnitude, for float accumulations */
#define TOL_F64 1e-9

static double *to_f64(const float *x, int64_t n) {
    double *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = x ? x[i] : NAN;
    return p;
}

/* A 2-D convolution case: sizes as ONNX states them (pads begin/end per axis). */
typedef struct Case {
    int64_t n, c, m, group, h, w, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
} Case;

static RtConvGeom case_geom(const Case *k) {
    RtConvGeom g;
    memset(&g, 0, sizeof g);
    g.n = k->n, g.c = k->c, g.m = k->m, g.group = k->group;
    g.in[0] = g.out[0] = g.k[0] = g.s[0] = g.d[0] = 1;
    g.in[1] = k->h, g.in[2] = k->w, g.k[1] = k->kh, g.k[2] = k->kw;
    g.s[1] = k->sh, g.s[2] = k->sw, g.d[1] = k->dh, g.d[2] = k->dw;
    g.pad[1] = k->pt, g.pad[2] = k->pl;
    g.out[1] = (k->h + k->pt + k->pb - (k->kh - 1) * k->dh - 1) / k->sh + 1;
    g.out[2] = (k->w + k->pl + k->pr - (k->kw - 1) * k->dw - 1) / k->sw + 1;
    return g;
}

/* x: (N,H,W,C), w: (KH,KW,C/group,M), r: (N,OH,OW,M) or NULL; y = relu?(conv + b + r). */
static double *conv_ref(const float *x, const float *w, const float *b, const float *r,
                        const RtConvGeom *g, bool relu) {
    int64_t cg = g->c / g->group, mg = g->m / g->group, OH = g->out[1], OW = g->out[2];
    double *y = malloc((size_t)(g->n * OH * OW * g->m) * sizeof *y);
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++)
                for (int64_t m = 0; m < g->m; m++) {
                    double acc = b ? b[m] : 0.0;
                    for (int64_t kh = 0; kh < g->k[1]; kh++)
                        for (int64_t kw = 0; kw < g->k[2]; kw++) {
                            int64_t ih = oh * g->s[1] + kh * g->d[1] - g->pad[1];
                            int64_t iw = ow * g->s[2] + kw * g->d[2] - g->pad[2];
                            if (ih < 0 || ih >= g->in[1] || iw < 0 || iw >= g->in[2]) continue;
                            for (int64_t ci = 0; ci < cg; ci++) {
                                int64_t c = (m / mg) * cg + ci;
                                acc += (double)x[((n * g->in[1] + ih) * g->in[2] + iw) * g->c + c] *
                                       w[((kh * g->k[2] + kw) * cg + ci) * g->m + m];
                            }
                        }
                    int64_t at = ((n * OH + oh) * OW + ow) * g->m + m;
                    if (r) acc += r[at];
                    y[at] = relu && acc < 0 ? 0 : acc;
                }
    return y;
}

static void check_case(const Case *k, bool with_bias, bool fused) {
    rng_init();
    RtConvGeom g = case_geom(k);
    int64_t xn = g.n * g.in[1] * g.in[2] * g.c, yn = g.n * g.out[1] * g.out[2] * g.m;
    int64_t wn = g.k[1] * g.k[2] * (g.c / g.group) * g.m;
    float *x = rand_f32(xn), *w = rand_f32(wn), *b = with_bias ? rand_f32(g.m) : NULL;
    float *r = fused ? rand_f32(yn) : NULL, *y = poisoned_f32(yn);
    double *want = conv_ref(x, w, b, r, &g, fused);
    RtAct relu = {RT_ACT_RELU, 0.0, 0.0};
    if (fused) rt_conv_nhwc_fused_f32(x, w, b, r, y, &g, &relu);
    else rt_conv_nhwc_f32(x, w, b, y, &g);
    for (int64_t i = 0; i < yn; i++)
        cr_assert(fabs(y[i] - want[i]) <= TOL_F32 * (1 + fabs(want[i])),
                  "conv f32[%lld]: got %g, want %g (seed %u)", (long long)i, (double)y[i],
                  want[i], rng_seed);
    double *xd = to_f64(x, xn), *wd = to_f64(w, wn), *bd = b ? to_f64(b, g.m) : NULL;
    double *rd = r ? to_f64(r, yn) : NULL, *yd = to_f64(NULL, yn);
    if (fused) rt_conv_nhwc_fused_f64(xd, wd, bd, rd, yd, &g, &relu);
    else rt_conv_nhwc_f64(xd, wd, bd, yd, &g);
    for (int64_t i = 0; i < yn; i++)
        cr_assert(fabs(yd[i] - want[i]) <= TOL_F64 * (1 + fabs(want[i])),
                  "conv f64[%lld]: got %g, want %g (seed %u)", (long long)i, yd[i], want[i],
                  rng_seed);
    free(x), free(w), free(b), free(r), free(y), free(want);
    free(xd), free(wd), free(bd), free(rd), free(yd);
}

Test(rt_conv_nhwc, matches_the_reference_for_a_padded_3x3_with_a_channel_tail) {
    Case k = {2, 5, 12, 1, 7, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    check_case(&k, true, false);
}

Test(rt_conv_nhwc, matches_the_reference_with_strides_dilations_and_asymmetric_pads) {
    Case k = {1, 6, 20, 2, 11, 17, 3, 2, 2, 3, 2, 1, 2, 0, 1, 3};
    check_case(&k, true, false);
}

Test(rt_conv_nhwc, matches_the_reference_for_depthwise_convolutions) {
    Case k = {1, 16, 16, 16, 9, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
    check_case(&k, true, false);
    Case k2 = {2, 13, 13, 13, 8, 10, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2};
    check_case(&k2, false, false);
}

Test(rt_conv_nhwc, matches_the_reference_for_depthwise_quads_of_interior_pixels) {
    /* channels a multiple of 8: the 4-pixel vector path, with dilation, stride 1 and 2, a
     * 5x5 kernel, rows whose interior is not a multiple of 4 */
    Case k = {1, 24, 24, 24, 10, 23, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2};
    check_case(&k, true, false);
    Case k2 = {2, 16, 16, 16, 9, 19, 5, 5, 1, 2, 1, 1, 2, 2, 2, 2};
    check_case(&k2, false, false);
    Case k3 = {1, 32, 32, 32, 7, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    check_case(&k3, true, true);
}

Test(rt_conv_nhwc, matches_the_reference_for_depthwise_runs_of_8_4_and_1_pixel_tiles) {
    /* the register tiles of rt_conv_nhwc_dw_run_f32: 3- and 5-wide kernels, stride 1 and 2
     * along W, interiors of 8 + 4 + 3 pixels, any height, stride and pads along H, batches */
    Case k = {2, 8, 8, 8, 7, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    check_case(&k, true, false);
    Case k2 = {1, 40, 40, 40, 9, 33, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2};
    check_case(&k2, true, true);
    Case k3 = {1, 16, 16, 16, 6, 31, 5, 3, 1, 2, 1, 1, 0, 1, 3, 1};
    check_case(&k3, false, false);
    Case k4 = {2, 24, 24, 24, 5, 20, 1, 5, 3, 1, 1, 1, 0, 2, 0, 0};
    check_case(&k4, true, true);
    Case k5 = {1, 8, 8, 8, 4, 11, 3, 3, 2, 2, 2, 1, 0, 0, 1, 0}; /* dilated in H only */
    check_case(&k5, true, false);
}

Test(rt_conv_nhwc, matches_the_reference_for_depthwise_tiles_of_16_channels) {
    /* channels a multiple of 16 above 32: AVX-512 builds take 16 channels a tile
     * (rt_conv_nhwc_dwk16; 16 and 32 keep 8) and a vector; 3x3 and 5x5, stride 1 and 2,
     * interiors of 8 + 4 + 1..3 pixels, with and without the residual and activation
     * epilogue */
    Case k = {1, 48, 48, 48, 7, 29, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2};
    check_case(&k, true, true);
    Case k2 = {2, 32, 32, 32, 9, 35, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
    check_case(&k2, false, false);
    Case k3 = {1, 16, 16, 16, 8, 30, 5, 5, 2, 2, 1, 1, 2, 2, 1, 1};
    check_case(&k3, true, false);
    Case k4 = {1, 64, 64, 64, 5, 21, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    check_case(&k4, true, true);
    /* edge pixels (rt_conv_nhwc_dw8_f32): 64 channels at a time in blocks of 16, then the
     * rest (16 or 32) in blocks of 8; 7 wide with a 5x5 kernel, as EfficientNet's last stage */
    Case k5 = {1, 80, 80, 80, 7, 7, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2};
    check_case(&k5, true, true);
    Case k6 = {2, 96, 96, 96, 9, 12, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
    check_case(&k6, false, false);
}

Test(rt_conv_nhwc, matches_the_reference_for_depthwise_tails_of_1_to_3_pixels) {
    /* a row's interior after its tiles of 8 and 4: 0-3 pixels left (one tile of NP 1-3),
     * 8-channel and (AVX-512) 16-channel blocks, 3x3 at stride 1 and 2, 5x5 */
    for (int64_t wd = 1; wd <= 21; wd++)
        for (int ci = 0; ci < 2; ci++) {
            const int64_t c = ci ? 48 : 24;
            Case k = {1, c, c, c, 5, wd, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
            check_case(&k, true, ci == 0);
            Case k2 = {1, c, c, c, 6, wd, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
            check_case(&k2, ci == 1, true);
            Case k3 = {1, c, c, c, 5, wd, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2};
            check_case(&k3, true, false);
        }
}

Test(rt_conv_nhwc, matches_the_reference_for_a_depthwise_multiplier_of_two) {
    Case k = {1, 4, 8, 4, 6, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    check_case(&k, true, false);
}

Test(rt_conv_nhwc, matches_the_reference_for_pointwise_and_strided_1x1) {
    Case k = {1, 16, 24, 1, 1, 63, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    check_case(&k, true, false);
    Case k2 = {1, 9, 8, 1, 10, 10, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0};
    check_case(&k2, false, false);
}

Test(rt_conv_nhwc, applies_the_residual_and_activation_epilogue) {
    Case k = {1, 8, 16, 1, 6, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    check_case(&k, true, true);
    Case k2 = {1, 12, 12, 12, 6, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    check_case(&k2, true, true);
}

/* y = act(conv(x, w) + b) with no residual: a depthwise run's tiles may apply a Clip, ReLU,
 * SiLU or sigmoid in their registers (AVX-512 3x3), the rest after the store; both against
 * the reference's activation here. */
static void check_act(const Case *k, const RtAct *act) {
    rng_init();
    RtConvGeom g = case_geom(k);
    int64_t xn = g.n * g.in[1] * g.in[2] * g.c, yn = g.n * g.out[1] * g.out[2] * g.m;
    int64_t wn = g.k[1] * g.k[2] * (g.c / g.group) * g.m;
    float *x = rand_f32(xn), *w = rand_f32(wn), *b = rand_f32(g.m), *y = poisoned_f32(yn);
    double *want = conv_ref(x, w, b, NULL, &g, false);
    rt_conv_nhwc_fused_f32(x, w, b, NULL, y, &g, act);
    for (int64_t i = 0; i < yn; i++) {
        double v = want[i];
        if (act->kind == RT_ACT_RELU) v = v < 0 ? 0 : v;
        else if (act->kind == RT_ACT_SILU) v = v / (1 + exp(-v));
        else if (act->kind == RT_ACT_SIGMOID) v = 1 / (1 + exp(-v));
        else if (act->kind == RT_ACT_HARD_SWISH) v *= fmin(1, fmax(0, v / 6 + 0.5));
        else v = v < act->alpha ? act->alpha : v > act->beta ? act->beta : v;
        cr_assert(fabs(y[i] - v) <= TOL_F32 * (1 + fabs(v)),
                  "conv+act %d f32[%lld]: got %g, want %g (seed %u)", act->kind, (long long)i,
                  (double)y[i], v, rng_seed);
    }
    free(x), free(w), free(b), free(y), free(want);
}

Test(rt_conv_nhwc, applies_an_activation_without_a_residual_in_depthwise_runs) {
    const RtAct clip = {RT_ACT_CLIP, -0.25f, 0.3f}, relu = {RT_ACT_RELU, 0.0f, 0.0f};
    const RtAct silu = {RT_ACT_SILU, 0.0f, 0.0f}, sigm = {RT_ACT_SIGMOID, 0.0f, 0.0f};
    const RtAct hsw = {RT_ACT_HARD_SWISH, 0.0f, 0.0f};
    /* rows up to 16 wide: whole by the AVX-512 3x3 tiles, their edge pixels included */
    for (int64_t wd = 1; wd <= 21; wd++)
        for (int ci = 0; ci < 4; ci++) {
            const int64_t c = ci == 0 ? 24 : ci == 1 ? 32 : ci == 2 ? 48 : 144;
            Case k = {1, c, c, c, 5, wd, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
            check_act(&k, wd % 2 ? &clip : &relu);
            Case k2 = {2, c, c, c, 6, wd, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
            check_act(&k2, wd % 2 ? &relu : &clip);
            Case k3 = {1, c, c, c, 5, wd, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2};
            check_act(&k3, &clip);
            check_act(&k, wd % 2 ? &silu : &sigm);
            check_act(&k2, wd % 2 ? &sigm : &silu);
            check_act(&k, &hsw); /* not applied in the tiles */
        }
}

/* ---- pools: NHWC kernels against the NCHW ones on the transposed data, bit for bit ---- */

static float *nchw_of(const float *x, int64_t n, int64_t c, int64_t s) {
    float *t = malloc((size_t)(n * c * s) * sizeof *t);
    for (int64_t b = 0; b < n; b++)
        for (int64_t k = 0; k < c; k++)
            for (int64_t p = 0; p < s; p++) t[(b * c + k) * s + p] = x[(b * s + p) * c + k];
    return t;
}

static void check_pools(int64_t n, int64_t c, const RtPoolGeom *gp) {
    rng_init();
    int64_t isz = gp->in[0] * gp->in[1] * gp->in[2], osz = gp->out[0] * gp->out[1] * gp->out[2];
    float *x = rand_f32(n * isz * c), *xt = nchw_of(x, n, c, isz);
    RtPoolGeom gc = *gp, gn = *gp;
    gc.nc = n * c;
    gn.nc = n;
    for (int kind = 0; kind < 3; kind++) {
        float *y = poisoned_f32(n * osz * c), *want = poisoned_f32(n * osz * c);
        if (kind == 0) {
            rt_maxpool_f32(xt, want, NULL, &gc, 0);
            rt_maxpool_nhwc_f32(x, y, &gn, c);
        } else {
            rt_avgpool_f32(xt, want, &gc, kind == 2);
            rt_avgpool_nhwc_f32(x, y, &gn, c, kind == 2);
        }
        float *yt = nchw_of(y, n, c, osz);
        cr_assert(memcmp(yt, want, (size_t)(n * osz * c) * sizeof *yt) == 0,
                  "pool kind %d differs from the NCHW kernel (seed %u)", kind, rng_seed);
        free(y), free(want), free(yt);
    }
    for (int is_max = 0; is_max < 2; is_max++) {
        float *y = poisoned_f32(n * c), *want = poisoned_f32(n * c);
        if (is_max) rt_global_maxpool_f32(xt, want, n * c, isz);
        else rt_global_avgpool_f32(xt, want, n * c, isz);
        rt_global_pool_nhwc_f32(x, y, n, isz, c, is_max);
        cr_assert(memcmp(y, want, (size_t)(n * c) * sizeof *y) == 0,
                  "global pool %d differs from the NCHW kernel (seed %u)", is_max, rng_seed);
        free(y), free(want);
    }
    free(x), free(xt);
}

Test(rt_pool_nhwc, agrees_bit_for_bit_with_the_nchw_pools) {
    RtPoolGeom g = {0, {1, 9, 10}, {1, 5, 5}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1},
                    {0, 1, 1}};
    check_pools(2, 7, &g);
    RtPoolGeom g2 = {0, {1, 8, 8}, {1, 3, 4}, {1, 2, 3}, {1, 3, 2}, {1, 2, 1}, {0, 0, 1},
                     {0, 1, 1}};
    check_pools(1, 16, &g2);
}
