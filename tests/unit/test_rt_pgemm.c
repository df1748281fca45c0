/* Unit tests of the fp32 packed GEMM microkernel (runtime/rt_pgemm.h) through its
 * convolution driver: fresh random inputs, outputs poisoned first, against a naive reference
 * in double, on remainder shapes (pixels not a multiple of the tile's rows, channels not a
 * multiple of 16 or 32, K = 1, N = 1), strides, pads, dilations, groups, residual and
 * activation epilogue; and Winograd F(4x4, 3x3) (runtime/rt_wino.h), which runs its products
 * on the same microkernel, on tile remainders (output sides not multiples of 4, tile counts
 * not multiples of a block), channels not multiples of 8 or 16, pads 0/1 and asymmetric.
 * The weights are packed here as backend/plan.c packs them. The CMake
 * file builds this program once per path (portable, AVX2+FMA, AVX-512; native where the
 * build machine's compiler picks one); a path the CPU lacks is skipped. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_pgemm.h"
#include "runtime/rt_wino.h"

#include "rt_test_util.h"

#define TOL_F32 1e-4 /* relative to the reference's magnitude, for float accumulations */

/* A path the CPU lacks is skipped before a test's body runs: the compiler may use the
 * path's instructions anywhere in it (a case's initializer, say). */
static void require_isa(void) {
#ifdef RT_PGEMM_TEST_CPU
    __builtin_cpu_init();
    if (!__builtin_cpu_supports(RT_PGEMM_TEST_CPU)) cr_skip_test("this CPU lacks " RT_PGEMM_TEST_CPU);
#endif
}
TestSuite(rt_pgemm, .init = require_isa);
TestSuite(rt_wino, .init = require_isa);

static void say_isa(void) {
    static bool said;
    if (!said) cr_log_info("fp32 gemm path: %s, tile %d x %d", RT_PGEMM_ISA, RT_PGEMM_MR, RT_PGEMM_NT);
    said = true;
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

/* w: (KH,KW,C/group,M) -> the panels of rt_pgemm.h. */
static float *pack(const float *w, const RtConvGeom *g, int64_t *n_out) {
    int64_t cg = g->c / g->group, mg = g->m / g->group, taps = g->k[1] * g->k[2];
    int64_t np = (mg + RT_PGEMM_NR - 1) / RT_PGEMM_NR, K = taps * cg;
    int64_t n = g->group * np * K * RT_PGEMM_NR;
    float *p = malloc((size_t)n * sizeof *p);
    for (int64_t gi = 0; gi < g->group; gi++)
        for (int64_t pi = 0; pi < np; pi++)
            for (int64_t k = 0; k < K; k++)
                for (int64_t j = 0; j < RT_PGEMM_NR; j++) {
                    int64_t col = pi * RT_PGEMM_NR + j;
                    p[((gi * np + pi) * K + k) * RT_PGEMM_NR + j] =
                        col < mg ? w[k * g->m + gi * mg + col] : 0.0f;
                }
    *n_out = n;
    return p;
}

/* x: (N,H,W,C), w: (KH,KW,C/group,M), r: (N,OH,OW,M) or NULL; y = act(conv + b + r). */
static double *conv_ref(const float *x, const float *w, const float *b, const float *r,
                        const RtConvGeom *g, const RtAct *act) {
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
                    if (act && act->kind == RT_ACT_RELU) acc = acc < 0 ? 0 : acc;
                    if (act && act->kind == RT_ACT_LEAKY_RELU) acc = acc < 0 ? act->alpha * acc : acc;
                    if (act && act->kind == RT_ACT_CLIP)
                        acc = acc < act->alpha ? act->alpha : acc > act->beta ? act->beta : acc;
                    if (act && act->kind == RT_ACT_SILU) acc = acc / (1.0 + exp(-acc));
                    if (act && act->kind == RT_ACT_GELU)
                        acc = 0.5 * acc * (1.0 + erf(acc * 0.70710678118654752));
                    y[at] = acc;
                }
    return y;
}

/* a float sum's rounding grows as the square root of its terms: beyond 1024 (AVX-512's
 * reduction blocks of 768 put up to 14k terms in one sum here) the tolerance grows so */
static double pconv_tol(const RtConvGeom *g) {
    double terms = (double)(g->k[1] * g->k[2] * (g->c / g->group));
    return TOL_F32 * (terms > 1024 ? sqrt(terms / 1024) : 1.0);
}

static void check_case(const Case *k, bool with_bias, bool with_res, const RtAct *act) {
    say_isa();
    rng_init();
    RtConvGeom g = case_geom(k);
    int64_t xn = g.n * g.in[1] * g.in[2] * g.c, yn = g.n * g.out[1] * g.out[2] * g.m;
    int64_t wn = g.k[1] * g.k[2] * (g.c / g.group) * g.m, pn;
    float *x = rand_f32(xn), *w = rand_f32(wn), *b = with_bias ? rand_f32(g.m) : NULL;
    float *r = with_res ? rand_f32(yn) : NULL, *y = poisoned_f32(yn);
    float *wp = pack(w, &g, &pn);
    double *want = conv_ref(x, w, b, r, &g, act);
    rt_pconv_nhwc_f32(x, wp, b, r, y, &g, act);
    expect_close_tol(y, want, yn, pconv_tol(&g), "pconv f32");
    free(x), free(w), free(b), free(r), free(y), free(wp), free(want);
}

Test(rt_pgemm, matches_the_reference_for_pointwise_convolutions_of_every_remainder) {
    /* pixels 1..2*MR+1 (every remainder of the tile's rows), channels around 16 and 32 */
    static const int64_t ms[] = {1, 3, 15, 16, 17, 31, 32, 33, 48, 70};
    static const int64_t cs[] = {1, 2, 7, 16, 33};
    for (int64_t pix = 1; pix <= 2 * RT_PGEMM_MR + 1; pix++)
        for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
            for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++) {
                Case k = {1, cs[ci], ms[mi], 1, 1, pix, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
                check_case(&k, (pix + mi) % 2 == 0, false, NULL);
            }
}

Test(rt_pgemm, matches_the_reference_for_a_padded_3x3_with_batches_and_tails) {
    Case k = {2, 5, 12, 1, 7, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    check_case(&k, true, false, NULL);
    Case k2 = {1, 64, 40, 1, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    check_case(&k2, true, false, NULL);
}

Test(rt_pgemm, matches_the_reference_with_strides_dilations_and_asymmetric_pads) {
    Case k = {1, 6, 20, 1, 11, 17, 3, 2, 2, 3, 2, 1, 2, 0, 1, 3};
    check_case(&k, true, false, NULL);
    Case k2 = {1, 3, 17, 1, 23, 21, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3}; /* a ResNet stem in small */
    check_case(&k2, true, false, NULL);
    Case k3 = {1, 9, 8, 1, 10, 10, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0}; /* strided 1x1 */
    check_case(&k3, false, false, NULL);
}

Test(rt_pgemm, matches_the_reference_for_grouped_convolutions) {
    Case k = {1, 6, 20, 2, 11, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    check_case(&k, true, false, NULL);
    Case k2 = {2, 64, 96, 4, 5, 6, 3, 3, 2, 1, 2, 1, 2, 1, 0, 1};
    check_case(&k2, true, false, NULL);
    Case k3 = {1, 8, 4, 4, 6, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}; /* N = 1 per group */
    check_case(&k3, false, false, NULL);
}

Test(rt_pgemm, applies_the_bias_residual_and_activation_epilogue) {
    RtAct relu = {RT_ACT_RELU, 0.0, 0.0}, relu6 = {RT_ACT_CLIP, 0.0, 6.0};
    RtAct leaky = {RT_ACT_LEAKY_RELU, 0.125, 0.0}; /* not a clamp: applied to stored rows */
    Case k = {1, 8, 40, 1, 6, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    check_case(&k, true, true, &relu);
    check_case(&k, true, true, &leaky);
    check_case(&k, false, false, &leaky);
    check_case(&k, false, true, NULL);
    check_case(&k, true, false, &relu6);
    Case k2 = {1, 24, 33, 1, 5, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    check_case(&k2, true, true, &relu);
}

Test(rt_pgemm, matches_the_reference_around_a_reduction_as_short_as_the_tile) {
    /* AVX-512's tile prefetches its own output and residual rows over its last RT_PGEMM_MR
     * reduction steps of the last tap, one row a step, where its rows are the output's
     * (more than a tile's columns apart), and not where the reduction has fewer steps than
     * rows: 1x1 reductions of one step fewer than the rows, as many, and one more, with full
     * and short tiles, a residual and a partial panel; a 3x3 of as many channels as rows
     * (the last of 9 taps prefetches); and rows a tile wide (no prefetch) */
    RtAct relu = {RT_ACT_RELU, 0.0, 0.0}, leaky = {RT_ACT_LEAKY_RELU, 0.125, 0.0};
    for (int64_t c = RT_PGEMM_MR - 1; c <= RT_PGEMM_MR + 1; c++) {
        Case k = {1, c, 72, 1, 3, 2 * RT_PGEMM_MR + 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
        check_case(&k, true, true, &relu);
        Case k2 = {1, c, 40, 1, 1, RT_PGEMM_MR + 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
        check_case(&k2, c % 2 == 0, true, &leaky);
    }
    Case k3 = {1, RT_PGEMM_MR, 48, 1, 6, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    check_case(&k3, true, true, &relu);
    Case k4 = {1, 64, RT_PGEMM_NT, 1, 4, 11, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    check_case(&k4, true, true, NULL);
}

#define KC3 (RT_PGEMM_KC / 3 - 15) /* whole taps, 3 a block */
#define KC2 (2 * RT_PGEMM_KC + 8)   /* one tap in 3 chunks */
Test(rt_pgemm, matches_the_reference_across_pixel_and_reduction_blocks) {
    /* more pixels than a block (RT_PGEMM_MC) with a partial last tile; reductions cut into
     * blocks of whole taps (KC/3 - 15 channels, 70 at KC 256: 3 taps a block) and into channel
     * chunks of one tap (2 KC + 8 channels, 520: 3 chunks), with the epilogue after the last
     * block (channel counts follow RT_PGEMM_KC: AVX-512's blocks are 768) */
    RtAct relu = {RT_ACT_RELU, 0.0, 0.0}, leaky = {RT_ACT_LEAKY_RELU, 0.125, 0.0};
    Case k = {1, KC3, 40, 1, 20, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    check_case(&k, true, true, &relu);
    Case k2 = {1, KC2, 24, 1, 1, 2 * RT_PGEMM_MC + 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    check_case(&k2, true, true, &leaky);
    /* 2 (KC + 44) channels in 2 groups, padded: 2 chunks a group */
    Case k3 = {1, 2 * (RT_PGEMM_KC + 44), 36, 2, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    check_case(&k3, true, false, &relu);
    /* a lone last pixel (AVX2: the one-row tile) across reduction blocks: a padded 3x3 on a
     * 7x7 image (49 pixels) of 2 KC + 8 channels, and one pixel of 4 KC + 6 (not a multiple of
     * the one-row tile's 4 partial sums) into 24 channels (a partial panel) */
    Case k4 = {1, KC2, 40, 1, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    check_case(&k4, true, true, &relu);
    Case k5 = {1, 4 * RT_PGEMM_KC + 6, 24, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    check_case(&k5, true, true, &leaky);
}

Test(rt_pgemm, matches_the_reference_where_rows_are_copied_or_tiles_are_short) {
    /* rows 4 KiB apart (a multiple of 1024 channels, or 512 at stride 2: copied to a buffer
     * on AVX-512), with a short last tile (AVX-512: a tile of its rows alone), the epilogue in
     * registers (full columns) and on stored rows (a partial second panel), across reduction
     * blocks; a padded 3x3/2 whose zero rows are copied too; and 2048 channels into 3 rows */
    RtAct relu = {RT_ACT_RELU, 0.0, 0.0}, leaky = {RT_ACT_LEAKY_RELU, 0.125, 0.0};
    Case k = {1, 1024, 40, 1, 1, 2 * RT_PGEMM_MR + 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    check_case(&k, true, true, &relu);
    Case k2 = {1, 512, 64, 1, 5, 9, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0};
    check_case(&k2, true, false, &leaky);
    Case k3 = {1, 512, 32, 1, 5, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
    check_case(&k3, false, true, NULL);
    Case k4 = {1, 2048, 48, 1, 1, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    check_case(&k4, true, false, NULL);
    /* every short tile's row count with whole columns, one reduction block and three */
    for (int64_t pix = RT_PGEMM_MR + 1; pix < 2 * RT_PGEMM_MR; pix++) {
        Case k5 = {1, 40, 64, 1, 1, pix, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
        check_case(&k5, true, true, &relu);
        Case k6 = {1, 3 * RT_PGEMM_KC - 68, 32, 1, 1, pix, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
        check_case(&k6, pix % 2 == 0, pix % 3 == 0, &leaky);
    }
}

Test(rt_pgemm, lets_nan_through_the_clamping_epilogue) {
    say_isa();
    rng_init();
    Case k = {1, 4, 32, 1, 1, 2 * RT_PGEMM_MR, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    RtConvGeom g = case_geom(&k);
    RtAct none = {RT_ACT_NONE, 0.0, 0.0}, relu = {RT_ACT_RELU, 0.0, 0.0};
    RtAct relu6 = {RT_ACT_CLIP, 0.0, 6.0};
    const RtAct *acts[] = {NULL, &none, &relu, &relu6};
    int64_t pn, yn = g.out[2] * g.m;
    float *x = rand_f32(g.in[2] * g.c), *w = rand_f32(g.c * g.m), *y = poisoned_f32(yn);
    float *wp = pack(w, &g, &pn);
    x[0] = NAN; /* pixel 0: every channel NaN */
    for (size_t ai = 0; ai < sizeof acts / sizeof acts[0]; ai++) {
        poison(y, yn);
        for (int64_t i = 0; i < yn; i++) y[i] = 1.0f;
        rt_pconv_nhwc_f32(x, wp, NULL, NULL, y, &g, acts[ai]);
        for (int64_t m = 0; m < g.m; m++)
            cr_assert(isnan(y[m]), "act %d: channel %lld of the NaN pixel is %g (seed %u)",
                      (int)ai, (long long)m, (double)y[m], rng_seed);
        cr_assert(!isnan(y[g.m]), "act %d: a NaN reached pixel 1", (int)ai);
    }
    free(x), free(w), free(y), free(wp);
}

Test(rt_pgemm, matches_the_reference_for_narrow_and_partial_column_tiles) {
    /* output channels that leave a last tile of one panel or of a partial one (AVX-512: one
     * panel's FMAs, or a second panel of 8 columns at 256 bits, masked stores in place)
     * under ReLU6 with a residual: MobileNetV2's and EfficientNet's 16, 24, 40, 144 and 26
     * (past the half panel), short reductions (16, 24 and 32: AVX-512's full tiles of these
     * read their rows at constant offsets, rt_pgemm_tile_dense_f32) and one across blocks
     * (300 channels: 2 chunks, the narrow tile reading back its masked columns); and groups of 12 and 20
     * channels, whose columns past the group's are the next group's or the next pixel's */
    RtAct relu6 = {RT_ACT_CLIP, 0.0, 6.0};
    static const int64_t ms[] = {8, 16, 24, 26, 40, 144};
    static const int64_t cs[] = {16, 24, 32, 300};
    for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
        for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++) {
            Case k = {1, cs[ci], ms[mi], 1, 3, 2 * RT_PGEMM_MR + 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
            check_case(&k, true, true, &relu6);
        }
    Case k2 = {1, 48, 24, 2, 5, 7, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    check_case(&k2, true, true, &relu6);
    Case k3 = {2, 600, 40, 2, 3, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    check_case(&k3, true, true, &relu6);
}

Test(rt_pgemm, applies_gelu_to_full_short_narrow_and_partial_tiles) {
    /* AVX-512 runs GELU on the tile's sums (rt_pgemm_gelu_st), other paths on stored rows:
     * every short tile's row count, one panel (16), a partial second one (24, 40), whole
     * columns (64), with and without a residual; and a reduction of three blocks (GELU
     * after the last alone) */
    RtAct gelu = {RT_ACT_GELU, 0.0, 0.0};
    static const int64_t ms[] = {16, 24, 40, 64};
    for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
        for (int64_t pix = 1; pix <= 2 * RT_PGEMM_MR; pix += 3) {
            Case k = {1, 48, ms[mi], 1, 1, pix, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
            check_case(&k, true, pix % 2 == 0, &gelu);
        }
    Case k2 = {1, 3 * RT_PGEMM_KC - 68, 40, 1, 1, RT_PGEMM_MR + 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    check_case(&k2, true, true, &gelu);
}

Test(rt_pgemm, writes_nothing_past_a_partial_last_column) {
    /* floats past y (the last pixel's row ends at a partial panel) keep their values */
    say_isa();
    rng_init();
    Case k = {1, 24, 24, 1, 1, RT_PGEMM_MR + 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    RtConvGeom g = case_geom(&k);
    RtAct relu6 = {RT_ACT_CLIP, 0.0, 6.0};
    int64_t pn, yn = g.out[2] * g.m;
    float *x = rand_f32(g.in[2] * g.c), *w = rand_f32(g.c * g.m), *b = rand_f32(g.m);
    float *r = rand_f32(yn + 32), *y = poisoned_f32(yn + 32);
    float *wp = pack(w, &g, &pn);
    for (int64_t i = yn; i < yn + 32; i++) y[i] = -7.0f;
    rt_pconv_nhwc_f32(x, wp, b, r, y, &g, &relu6);
    for (int64_t i = yn; i < yn + 32; i++)
        cr_assert(y[i] == -7.0f, "float %lld past y is %g (seed %u)", (long long)(i - yn),
                  (double)y[i], rng_seed);
    free(x), free(w), free(b), free(r), free(y), free(wp);
}

#if defined(RT_PGEMM_AVX512)
/* rt_pgemm_tile_pf_f32 of rows rows over x (row r's tap t at x + (r * taps_max + t) * kc;
 * the rows past the tile at its first row, as the driver's), reductions of kc a tap, both
 * panels at w, c ldc apart; GELU, or a Clip of [-0.5, 0.75] */
static void short_tile(int rows, int64_t cols, int taps, int taps_max, int64_t kc,
                       const float *x, const float *w, const float *init, int accum, float *c,
                       int64_t ldc, const float *res, int gelu) {
    const float *a[RT_PGEMM_MAX_TAPS * RT_PGEMM_MR];
    for (int t = 0; t < taps; t++)
        for (int r = 0; r < RT_PGEMM_MR; r++)
            a[t * RT_PGEMM_MR + r] = x + ((r < rows ? r : 0) * taps_max + t) * kc;
    rt_pgemm_tile_pf_f32(rows, cols, taps, kc, a, w, kc * RT_PGEMM_NR, taps * kc * RT_PGEMM_NR,
                         init, accum, c, ldc, res, gelu ? -INFINITY : -0.5f,
                         gelu ? INFINITY : 0.75f, gelu, NULL, 0, 0);
}

Test(rt_pgemm, short_tiles_give_each_row_the_full_tiles_bits_and_write_nothing_else) {
    /* AVX-512 runs a short tile on the code of 2, 4 or 7 rows (two tiles past 7), computing
     * rows past its own from their row pointers: each of its rows must get the bits the full
     * tile gives that row, and nothing past its rows or columns may change. Every row count,
     * narrow, half-panel and full columns, GELU, a later reduction block and a residual, one
     * and three taps; the rows past the tile point at its first row, as the driver's do. */
    say_isa();
    rng_init();
    enum { KC = 40, TAPS = 3, LDC = 40, N = RT_PGEMM_MR * LDC };
    static const int64_t colsv[] = {5, 16, 20, 24, 32};
    float *x = rand_f32(RT_PGEMM_MR * TAPS * KC), *w = rand_f32(2 * TAPS * KC * RT_PGEMM_NR);
    float *init = rand_f32(RT_PGEMM_NT), *res = rand_f32(N), *c0 = rand_f32(N);
    float *full = rand_f32(N), *c = rand_f32(N);
    for (int taps = 1; taps <= TAPS; taps += 2)
        for (size_t ci = 0; ci < sizeof colsv / sizeof colsv[0]; ci++)
            for (int v = 0; v < 8; v++) {
                const int gelu = v & 1, accum = v >> 1 & 1, with_res = v >> 2 & 1;
                const int64_t cols = colsv[ci];
                memcpy(full, c0, N * sizeof *c0);
                short_tile(RT_PGEMM_MR, cols, taps, TAPS, KC, x, w, init, accum, full, LDC,
                           with_res ? res : NULL, gelu);
                for (int rows = 1; rows < RT_PGEMM_MR; rows++) {
                    memcpy(c, c0, N * sizeof *c0);
                    short_tile(rows, cols, taps, TAPS, KC, x, w, init, accum, c, LDC,
                               with_res ? res : NULL, gelu);
                    for (int64_t i = 0; i < N; i++) {
                        const int64_t r = i / LDC, j = i % LDC;
                        const float *want = r < rows && j < cols ? &full[i] : &c0[i];
                        cr_assert(memcmp(&c[i], want, sizeof *c) == 0,
                                  "%d of %d rows, %lld columns, taps %d, gelu %d, accum %d, "
                                  "residual %d: row %lld column %lld is %a, want %a (seed %u)",
                                  rows, RT_PGEMM_MR, (long long)cols, taps, gelu, accum, with_res,
                                  (long long)r, (long long)j, (double)c[i], (double)*want,
                                  rng_seed);
                    }
                }
            }
    free(x), free(w), free(init), free(res), free(c0), free(full), free(c);
}
#endif

Test(rt_pgemm, matches_the_reference_for_small_channel_stems_read_by_kernel_rows) {
    /* 1-4 channels a group (whole taps gathered, or with unit dilation across read by
     * kernel rows: in place inside the image, gathered with zeros at its left and right
     * edges, the zero row above and below): 3x3/2 stems padded both sides, end only (TF's
     * SAME) and not at all, a 7x7/2 ResNet stem, 3x3/1 and 5x3 with dilation down, on odd
     * sizes whose rows don't fall on tile boundaries, output channels not a multiple of 16,
     * batches; and dilation across (the gather kept). Clip's epilogue in registers, SiLU's
     * on the stored rows */
    RtAct relu6 = {RT_ACT_CLIP, 0.0, 6.0}, silu = {RT_ACT_SILU, 0.0, 0.0};
    static const int64_t ms[] = {5, 17, 32, 40};
    for (int64_t c = 1; c <= 4; c++)
        for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
            const int64_t m = ms[mi];
            const RtAct *act = (c + (int64_t)mi) % 2 ? &relu6 : &silu;
            Case k = {1, c, m, 1, 9, 61, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
            check_case(&k, true, false, act);
            Case k2 = {2, c, m, 1, 8, 32, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1};
            check_case(&k2, c % 2 == 0, mi % 2 == 0, act);
            Case k3 = {1, c, m, 1, 7, 45, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0};
            check_case(&k3, true, true, act);
            Case k4 = {1, c, m, 1, 11, 67, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3};
            check_case(&k4, true, false, act);
            Case k5 = {1, c, m, 1, 6, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
            check_case(&k5, true, false, act);
            Case k6 = {1, c, m, 1, 9, 23, 5, 3, 1, 2, 2, 1, 2, 0, 3, 1};
            check_case(&k6, false, true, act);
            Case k7 = {1, c, m, 1, 9, 23, 3, 3, 1, 1, 1, 2, 1, 2, 1, 2};
            check_case(&k7, true, false, act);
        }
    Case k8 = {1, 6, 20, 2, 9, 41, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}; /* 3 channels a group */
    check_case(&k8, true, false, &relu6);
    /* kernel rows cut at both edges (an image narrower than the kernel), and pads across
     * wider than the kernel (windows wholly in the padding): the run inside, or none */
    Case k9 = {1, 3, 20, 1, 9, 2, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3};
    check_case(&k9, true, true, &relu6);
    Case k10 = {1, 2, 17, 1, 6, 5, 3, 3, 1, 1, 1, 1, 1, 4, 1, 4};
    check_case(&k10, true, false, &silu);
}

Test(rt_pgemm, matches_the_reference_for_kernels_of_more_taps_than_a_table) {
    /* more than RT_PGEMM_MAX_TAPS taps: patch stems (kernel = stride, ViT-B/16's 16x16/16 of 3
     * channels, read whole by kernel rows where it fits a reduction block, AVX-512's 768
     * values; in blocks of RT_PGEMM_MAX_TAPS taps on the other paths), one with a short last
     * pixel tile and odd columns, one padded, one of 2 groups and one of 20 channels a tap
     * (blocks of the table's taps), a 9x9 with dilation across and a 65x1 (taller than a
     * table: blocks too) */
    RtAct relu = {RT_ACT_RELU, 0.0, 0.0}, silu = {RT_ACT_SILU, 0.0, 0.0};
    Case k = {1, 3, 40, 1, 64, 48, 16, 16, 16, 16, 1, 1, 0, 0, 0, 0};
    check_case(&k, true, false, NULL);
    Case k2 = {1, 3, 37, 1, 45, 9 * 16, 9, 9, 9, 9, 1, 1, 0, 0, 0, 0};
    check_case(&k2, true, true, &relu);
    Case k3 = {2, 2, 24, 1, 33, 31, 11, 11, 4, 4, 1, 1, 2, 2, 2, 2};
    check_case(&k3, false, false, &silu);
    Case k4 = {1, 6, 32, 2, 20, 20, 9, 9, 9, 9, 1, 1, 0, 0, 0, 0};
    check_case(&k4, true, false, &relu);
    Case k5 = {1, 20, 33, 1, 17, 19, 9, 9, 2, 1, 1, 1, 1, 0, 1, 0};
    check_case(&k5, true, true, NULL);
    Case k6 = {1, 3, 17, 1, 13, 25, 9, 9, 1, 1, 1, 2, 0, 0, 0, 0};
    check_case(&k6, true, false, &silu);
    Case k7 = {1, 2, 16, 1, 70, 3, 65, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    check_case(&k7, true, false, NULL);
}

Test(rt_pgemm, matches_the_reference_for_a_long_reduction) {
    /* K = 9 * 300 and more panels than one L2 block holds */
    Case k = {1, 300, 160, 1, 4, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    check_case(&k, true, false, NULL);
}

/* ---- two operands: a 1x1 and a second 1x1 over another input (rt_pconv2_nhwc_f32) ---- */

/* y = act(conv(a, w) + conv(x2, w2) + b + r): a is (N, OH, OW, c) and x2 (N, h2, w2, c2),
 * read at stride s; the weights packed as one (c + c2, m) matrix, as backend/plan.c packs
 * a bottleneck's conv3 and its downsample. With par (workers 2): the split's output must
 * be the serial one, bit for bit. */
/* A parallel-for hook that runs every task here, last to first, worker ids cycling. */
static void reverse_for(void *ctx, int64_t n, RtTaskFn fn, void *arg) {
    (void)ctx;
    for (int64_t i = n - 1; i >= 0; i--) fn(arg, i, (int)(i % 2));
}

static void check_two(int64_t n, int64_t c, int64_t c2, int64_t m, int64_t oh, int64_t ow,
                      int64_t h2, int64_t w2, int64_t s, bool with_res, const RtAct *act) {
    say_isa();
    rng_init();
    Case ka = {n, c, m, 1, oh, ow, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    Case kb = {n, c2, m, 1, h2, w2, 1, 1, s, s, 1, 1, 0, 0, 0, 0};
    Case kw = {1, c + c2, m, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    RtConvGeom g = case_geom(&ka), g2 = case_geom(&kb), gw = case_geom(&kw);
    cr_assert(g2.out[1] == oh && g2.out[2] == ow, "the second operand's output is the first's");
    int64_t an = n * oh * ow * c, xn = n * h2 * w2 * c2, yn = n * oh * ow * m, pn;
    float *a = rand_f32(an), *x2 = rand_f32(xn), *w = rand_f32((c + c2) * m);
    float *b = rand_f32(m), *r = with_res ? rand_f32(yn) : NULL, *y = poisoned_f32(yn);
    float *wp = pack(w, &gw, &pn);
    double *y1 = conv_ref(a, w, b, NULL, &g, NULL);
    double *y2 = conv_ref(x2, w + c * m, NULL, r, &g2, NULL);
    for (int64_t i = 0; i < yn; i++) {
        double v = y1[i] + y2[i];
        if (act && act->kind == RT_ACT_RELU) v = v < 0 ? 0 : v;
        if (act && act->kind == RT_ACT_LEAKY_RELU) v = v < 0 ? act->alpha * v : v;
        y1[i] = v;
    }
    rt_pconv2_nhwc_f32(a, x2, wp, b, r, y, &g, &g2, act);
    double terms = (double)(c + c2);
    expect_close_tol(y, y1, yn, TOL_F32 * (terms > 1024 ? sqrt(terms / 1024) : 1.0),
                     "pconv2 f32");
    /* shared by 2, 3 and 7 workers (tasks run last to first): the serial bits */
    float *yp = poisoned_f32(yn);
    for (int wk = 2; wk <= 7; wk += wk == 3 ? 4 : 1) {
        RtPar par = {reverse_for, NULL, wk, NULL, 0};
        poison(yp, yn);
        rt_pconv2_nhwc_par_f32(a, x2, wp, b, r, yp, &g, &g2, act, &par);
        cr_assert(memcmp(yp, y, (size_t)yn * sizeof *y) == 0,
                  "%d workers: not the serial bits (seed %u)", wk, rng_seed);
    }
    free(a), free(x2), free(w), free(b), free(r), free(y), free(yp), free(wp), free(y1),
        free(y2);
}

/* One convolution three ways: serial without scratch (rows 4 KiB apart copied a tile at a
 * time), serial and on 2 workers (tasks last to first) with the workers' scratch of
 * rt_pgemm_apk_bytes (AVX-512: a pixel block's rows copied once for all its panels); the
 * same tiles and reduction blocks, so the same bits; and the reference */
static void check_scratch(const Case *k, bool with_res, const RtAct *act) {
    say_isa();
    rng_init();
    RtConvGeom g = case_geom(k);
    int64_t xn = g.n * g.in[1] * g.in[2] * g.c, yn = g.n * g.out[1] * g.out[2] * g.m, pn;
    int64_t wn = g.k[1] * g.k[2] * (g.c / g.group) * g.m;
    int64_t st = rt_pgemm_apk_bytes(g.out[1] * g.out[2], g.c, g.s[2]);
    cr_assert(st > 0, "no scratch asked for %lld channels at stride %lld", (long long)g.c,
              (long long)g.s[2]);
    float *x = rand_f32(xn), *w = rand_f32(wn), *b = rand_f32(g.m);
    float *r = with_res ? rand_f32(yn) : NULL, *y = poisoned_f32(yn), *yp = poisoned_f32(yn);
    float *ws = poisoned_f32(2 * st / (int64_t)sizeof(float));
    float *wp = pack(w, &g, &pn);
    double *want = conv_ref(x, w, b, r, &g, act);
    rt_pconv_nhwc_f32(x, wp, b, r, y, &g, act);
    expect_close_tol(y, want, yn, pconv_tol(&g), "pconv f32");
    for (int wk = 1; wk <= 2; wk++) {
        RtPar par = {wk > 1 ? reverse_for : NULL, NULL, wk, (unsigned char *)ws, st};
        poison(yp, yn);
        rt_pconv_nhwc_par_f32(x, wp, b, r, yp, &g, act, &par);
        cr_assert(memcmp(yp, y, (size_t)yn * sizeof *y) == 0,
                  "%d workers with scratch: not the bits without (seed %u)", wk, rng_seed);
    }
    free(x), free(w), free(b), free(r), free(y), free(yp), free(ws), free(wp), free(want);
}

Test(rt_pgemm, copies_rows_4_kib_apart_to_the_workers_scratch_with_the_same_bits) {
    /* BERT's 3072 -> 768 at fewer pixels (3 reduction blocks, more pixels than a block, a
     * short last tile, GELU); 1024 channels with a residual; ResNet-50's 1x1/2 of 512
     * channels and a padded 3x3/2 of 512 (zero rows copied) */
    RtAct relu = {RT_ACT_RELU, 0.0, 0.0}, gelu = {RT_ACT_GELU, 0.0, 0.0};
    Case k = {1, 3072, 40, 1, 1, RT_PGEMM_MC + 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    check_scratch(&k, false, &gelu);
    Case k2 = {1, 1024, 64, 1, 3, 2 * RT_PGEMM_MR + 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    check_scratch(&k2, true, &relu);
    Case k3 = {1, 512, 48, 1, 9, 11, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0};
    check_scratch(&k3, false, NULL);
    Case k4 = {1, 512, 32, 1, 5, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
    check_scratch(&k4, true, &relu);
}

Test(rt_pgemm, matches_the_reference_for_a_1x1_with_a_second_strided_operand) {
    /* ResNet's first bottleneck block: conv3 (c -> m) and its downsample (c2 -> m, stride 1
     * or 2) as one reduction. Pixels not multiples of the tile (short tiles), more than a
     * pixel block, m not a multiple of 16 or 32, c and c2 of greatest common divisor 16, 48
     * and 64 (taps of that many channels: 5, 3, 2), batches, x2's side odd (the downsample's
     * floor) or even, a residual, clamp and stored-row activations */
    RtAct relu = {RT_ACT_RELU, 0.0, 0.0}, leaky = {RT_ACT_LEAKY_RELU, 0.125, 0.0};
    check_two(1, 64, 64, 72, 5, 2 * RT_PGEMM_MR + 3, 5, 2 * RT_PGEMM_MR + 3, 1, false, &relu);
    check_two(2, 48, 96, 40, 4, 7, 8, 14, 2, false, &relu);
    check_two(1, 32, 48, 24, 3, 5, 5, 9, 2, true, &leaky);
    check_two(1, 16, 64, 33, 17, 17, 33, 34, 2, false, NULL);
    check_two(1, 64, 128, 256, 15, 16, 30, 32, 2, true, &relu);
}

Test(rt_pgemm, matches_the_reference_for_a_second_operand_across_reduction_blocks) {
    /* c + c2 past RT_PGEMM_KC: taps of 512 (AVX-512's 768-value blocks: one tap a block,
     * x2's rows 8 KiB apart at stride 2 copied to a buffer; AVX2's and the portable 256:
     * each tap in 2 channel chunks), a partial last tile; and taps of 3 * KC / 4 (one
     * block each where KC is 768 or 256) */
    RtAct relu = {RT_ACT_RELU, 0.0, 0.0};
    check_two(1, 512, 1024, 48, 3, 5, 5, 9, 2, false, &relu);
    check_two(1, 512, 1024, 40, 2, RT_PGEMM_MR + 3, 2, RT_PGEMM_MR + 3, 1, true, NULL);
    check_two(1, 3 * RT_PGEMM_KC / 4, 3 * RT_PGEMM_KC / 2, 32, 2, 9, 4, 18, 2, false, &relu);
    /* x2's rows 4 KiB apart in a block of several taps (AVX-512: copied to a buffer, one
     * run a row): 256 + 512 at stride 2 (ResNet-50's 14x14 block), short tiles and a
     * partial panel; 128 + 1024 at stride 1, blocks that start in a's tap and in x2's */
    check_two(1, 256, 512, 40, 3, 5, 6, 10, 2, true, &relu);
    check_two(1, 128, 1024, 64, 2, 2 * RT_PGEMM_MR + 1, 2, 2 * RT_PGEMM_MR + 1, 1, false, NULL);
    /* taps past KC (16 x 51 channels at KC 768, 16 x 17 at 256): each in 2 channel chunks,
     * every block past the first adding into the stored partial sums */
    check_two(1, RT_PGEMM_KC + RT_PGEMM_KC / 16, 2 * (RT_PGEMM_KC + RT_PGEMM_KC / 16), 24, 2,
              5, 2, 5, 1, true, &relu);
}

/* ---- Winograd F(4x4, 3x3) (runtime/rt_wino.h) ---- */

/* A 3x3 stride-1 case's error bound, relative to the magnitude of the terms that make the
 * outputs of its 4x4 tile (the reference over |x|, |w|, |bias|, |residual|, largest in the
 * tile): F(4x4, 3x3) rounds in its transforms (points up to 2: the output transform scales by
 * up to 8^2), and the output transform spreads each rounding over the whole tile, so an
 * output's error follows its tile's terms, not its own, which a padded corner can make
 * small (err 1.3e-5 at magnitude 0.25 in a tile of 1.6, seed 451485596), nor the output,
 * which random signs can bring near 0 (err 5.9e-4 at want -0.12 with C = 300, seed
 * 4270964981). Measured: at most 7.8e-6 of the tile's magnitude over 150 seeds (one input
 * channel: nothing averages the transforms' rounding). A wrong tap or channel costs a
 * whole term, >= 3e-4 of the magnitude here. */
#define TOL_WINO 3e-5

static float *abs_copy(const float *p, int64_t n) {
    if (!p) return NULL;
    float *a = malloc((size_t)(n > 0 ? n : 1) * sizeof *a);
    cr_assert(a);
    for (int64_t i = 0; i < n; i++) a[i] = fabsf(p[i]);
    return a;
}

/* w: (3,3,C,M) -> U = G w GT per (c, m) as (A*A, NP, C, 16), as backend/plan.c makes it:
 * A = 6 for tiles of wm = 4 (F(4x4, 3x3)), 4 for wm = 2 (F(2x2, 3x3)). */
static float *wino_pack_x(const float *w, int64_t C, int64_t M, int wm) {
    static const double G4[6][3] = {{1.0 / 4, 0, 0},          {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                    {-1.0 / 6, 1.0 / 6, -1.0 / 6}, {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                    {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};
    static const double G2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
    const double(*G)[3] = wm == 2 ? G2 : G4;
    const int A = wm + 2;
    int64_t np = (M + RT_PGEMM_NR - 1) / RT_PGEMM_NR;
    float *u = calloc((size_t)(A * A * np * C * RT_PGEMM_NR), sizeof *u);
    cr_assert(u);
    for (int64_t c = 0; c < C; c++)
        for (int64_t m = 0; m < M; m++) {
            double t[6][3];
            for (int i = 0; i < A; i++)
                for (int s = 0; s < 3; s++) {
                    t[i][s] = 0;
                    for (int r = 0; r < 3; r++) t[i][s] += G[i][r] * w[((r * 3 + s) * C + c) * M + m];
                }
            for (int i = 0; i < A; i++)
                for (int j = 0; j < A; j++) {
                    double v = 0;
                    for (int s = 0; s < 3; s++) v += t[i][s] * G[j][s];
                    u[(((i * A + j) * np + m / RT_PGEMM_NR) * C + c) * RT_PGEMM_NR +
                      m % RT_PGEMM_NR] = (float)v;
                }
        }
    return u;
}

/* w: (3,3,C,M) -> the stride-2 form's 16 matrices (16, 1, NP, C, 16), as backend/plan.c
 * makes them (rt_wino.h, RT_WINOS2): G = (1 0; 1 1; 0 1) along each dimension of two taps. */
static float *winos2_pack(const float *w, int64_t C, int64_t M) {
    static const double G[3][2] = {{1, 0}, {1, 1}, {0, 1}};
    int64_t np = (M + RT_PGEMM_NR - 1) / RT_PGEMM_NR;
    float *u = calloc((size_t)(16 * np * C * RT_PGEMM_NR), sizeof *u);
    cr_assert(u);
    for (int64_t c = 0; c < C; c++)
        for (int64_t m = 0; m < M; m++) {
#define W_(r, s) ((double)w[(((r) * 3 + (s)) * C + c) * M + m])
            double v[16];
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    v[3 * i + j] = G[i][0] * G[j][0] * W_(0, 0) + G[i][0] * G[j][1] * W_(0, 2) +
                                   G[i][1] * G[j][0] * W_(2, 0) + G[i][1] * G[j][1] * W_(2, 2);
            for (int i = 0; i < 3; i++) v[9 + i] = G[i][0] * W_(0, 1) + G[i][1] * W_(2, 1);
            for (int j = 0; j < 3; j++) v[12 + j] = G[j][0] * W_(1, 0) + G[j][1] * W_(1, 2);
            v[15] = W_(1, 1);
#undef W_
            for (int q = 0; q < 16; q++)
                u[((q * np + m / RT_PGEMM_NR) * C + c) * RT_PGEMM_NR + m % RT_PGEMM_NR] =
                    (float)v[q];
        }
    return u;
}

/* A parallel-for hook that runs the tasks last to first, task i on worker i % 2. */
static void wino_backwards(void *ctx, int64_t n, RtTaskFn fn, void *arg) {
    (void)ctx;
    for (int64_t i = n - 1; i >= 0; i--) fn(arg, i, (int)(i % 2));
}

/* k: a 3x3 stride-1 dilation-1 group-1 case on tiles of wm x wm pixels (4: rt_wino_*, 2:
 * rt_wino2_*). Also runs the tiles in two ranges split at the middle (as a parallel-for
 * would), which must give the same output. */
static void wino_case_x(const Case *k, bool with_bias, bool with_res, const RtAct *act,
                        int wm) {
    say_isa();
    rng_init();
    RtConvGeom g = case_geom(k);
    int64_t xn = g.n * g.in[1] * g.in[2] * g.c, yn = g.n * g.out[1] * g.out[2] * g.m;
    float *x = rand_f32(xn), *w = rand_f32(9 * g.c * g.m), *b = with_bias ? rand_f32(g.m) : NULL;
    float *r = with_res ? rand_f32(yn) : NULL, *y = poisoned_f32(yn), *y2 = poisoned_f32(yn);
    float *u = wm == RT_WINOS2 ? winos2_pack(w, g.c, g.m) : wino_pack_x(w, g.c, g.m, wm);
    const int ts = wm == RT_WINOS2 ? 2 : wm; /* the tile's side */
    double *want = conv_ref(x, w, b, r, &g, act);
    float *ax = abs_copy(x, xn), *aw = abs_copy(w, 9 * g.c * g.m), *ab = abs_copy(b, g.m);
    float *ar = abs_copy(r, yn);
    double *mag = conv_ref(ax, aw, ab, ar, &g, NULL);
    (wm == RT_WINOS2 ? rt_winos2_nhwc_f32 : wm == 2 ? rt_wino2_nhwc_f32 : rt_wino_nhwc_f32)(
        x, u, b, r, y, &g, act);
    int64_t oh = g.out[1], ow = g.out[2];
    for (int64_t i = 0; i < yn; i++) {
        int64_t m = i % g.m, px = i / g.m, col = px % ow, row = px / ow % oh, img = px / ow / oh;
        double tile = 0;
        for (int64_t r0 = row / ts * ts; r0 < row / ts * ts + ts && r0 < oh; r0++)
            for (int64_t c0 = col / ts * ts; c0 < col / ts * ts + ts && c0 < ow; c0++)
                tile = fmax(tile, mag[((img * oh + r0) * ow + c0) * g.m + m]);
        cr_assert(fabs((double)y[i] - want[i]) <= TOL_WINO * (1.0 + tile),
                  "wino f32[%lld]: got %g, want %g, terms' magnitude %g, its tile's %g (seed %u)",
                  (long long)i, (double)y[i], want[i], mag[i], tile, rng_seed);
    }
    free(ax), free(aw), free(ab), free(ar), free(mag);
    int64_t tiles = rt_wino_x_tiles(&g, wm);
    void (*tiles_fn)(const float *, const float *, const float *, const float *, float *,
                     const RtConvGeom *, const RtAct *, int64_t, int64_t) =
        wm == RT_WINOS2 ? rt_winos2_nhwc_tiles_f32
        : wm == 2       ? rt_wino2_nhwc_tiles_f32
                        : rt_wino_nhwc_tiles_f32;
    void (*par_fn)(const float *, const float *, const float *, const float *, float *,
                   const RtConvGeom *, const RtAct *, const RtPar *) =
        wm == RT_WINOS2 ? rt_winos2_nhwc_par_f32
        : wm == 2       ? rt_wino2_nhwc_par_f32
                        : rt_wino_nhwc_par_f32;
    void (*ws_fn)(const float *, const float *, const float *, const float *, float *,
                  const RtConvGeom *, const RtAct *, int64_t, int64_t, float *, int64_t) =
        wm == RT_WINOS2 ? rt_winos2_nhwc_tiles_ws_f32
        : wm == 2       ? rt_wino2_nhwc_tiles_ws_f32
                        : rt_wino_nhwc_tiles_ws_f32;
    tiles_fn(x, u, b, r, y2, &g, act, tiles / 2, tiles);
    tiles_fn(x, u, b, r, y2, &g, act, 0, tiles / 2);
    cr_assert(memcmp(y, y2, (size_t)yn * sizeof *y) == 0, "tile ranges differ (seed %u)",
              rng_seed);
    /* V and the products in a workspace (the bundle's per-worker scratch): through RtPar
     * on one worker (big blocks) and on two (a hook running the tasks backwards), and in
     * two ranges of either block size: other blocks, the same bytes */
    int64_t wsn = rt_wino_x_ws_floats(g.c, wm);
    float *ws = poisoned_f32(2 * wsn), *y3 = poisoned_f32(yn);
    RtPar par = {NULL, NULL, 1, (unsigned char *)ws, wsn * (int64_t)sizeof(float)};
    par_fn(x, u, b, r, y3, &g, act, &par);
    cr_assert(memcmp(y, y3, (size_t)yn * sizeof *y) == 0, "workspace run differs (seed %u)",
              rng_seed);
    for (int64_t i = 0; i < yn; i++) y3[i] = NAN;
    par.pfor = wino_backwards, par.workers = 2;
    par_fn(x, u, b, r, y3, &g, act, &par);
    cr_assert(memcmp(y, y3, (size_t)yn * sizeof *y) == 0,
              "workspace run on two workers differs (seed %u)", rng_seed);
    for (int big = 0; big < 2; big++) {
        int64_t tb = rt_wino_block_ws(g.c, big), mid = tiles / 3 / tb * tb;
        for (int64_t i = 0; i < yn; i++) y3[i] = NAN;
        ws_fn(x, u, b, r, y3, &g, act, mid, tiles, ws, tb);
        ws_fn(x, u, b, r, y3, &g, act, 0, mid, ws, tb);
        cr_assert(memcmp(y, y3, (size_t)yn * sizeof *y) == 0,
                  "workspace tile ranges differ, blocks of %lld (seed %u)", (long long)tb,
                  rng_seed);
    }
    free(ws), free(y3);
    free(x), free(w), free(b), free(r), free(y), free(y2), free(u), free(want);
}

static void wino_case(const Case *k, bool with_bias, bool with_res, const RtAct *act) {
    wino_case_x(k, with_bias, with_res, act, 4);
}

Test(rt_wino, matches_the_reference_on_tile_and_channel_remainders) {
    /* output sides 1..9 (every remainder of 4), channels around 8, 16 and 32 */
    static const int64_t cs[] = {1, 3, 8, 17};
    static const int64_t ms[] = {1, 16, 20, 33};
    for (int64_t h = 1; h <= 9; h += 2)
        for (int64_t w = 1; w <= 9; w += 3)
            for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++) {
                Case k = {1, cs[ci], ms[(h + ci) % 4], 1, h, w, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
                wino_case(&k, (h + w) % 2 == 0, false, NULL);
            }
}

Test(rt_wino, matches_the_reference_without_pads_with_batches_and_asymmetric_pads) {
    Case k = {2, 5, 12, 1, 7, 13, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0};
    wino_case(&k, true, false, NULL);
    Case k2 = {3, 24, 40, 1, 10, 6, 3, 3, 1, 1, 1, 1, 0, 1, 2, 0};
    wino_case(&k2, true, false, NULL);
}

Test(rt_wino, matches_the_reference_across_tile_blocks_and_long_reductions) {
    /* tiles past several blocks of rt_wino_block; C = 300 (a block of fewer tiles than
     * the microkernel's rows) */
    Case k = {1, 64, 40, 1, 22, 19, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    wino_case(&k, true, false, NULL);
    Case k2 = {1, 300, 36, 1, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    wino_case(&k2, true, false, NULL);
}

Test(rt_wino, matches_the_reference_where_blocks_split_into_short_microkernel_tiles) {
    /* a 14x14 output: 16 tiles, one block in the workspace (two calls of 8 rows where the
     * microkernel has 14), 4 + 8 + 4 tiles in other blocks; 13x17: 20 tiles, 10 + 10; 7x7:
     * 4 tiles, one short call; M = 40 leaves a narrow last panel of 8 columns */
    Case k = {1, 48, 40, 1, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    wino_case(&k, true, true, NULL);
    Case k2 = {1, 35, 64, 1, 13, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    wino_case(&k2, true, false, NULL);
    Case k3 = {2, 64, 33, 1, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    wino_case(&k3, false, false, NULL);
}

Test(rt_wino, matches_the_reference_where_a_block_of_16_tiles_runs_transposed) {
    /* blocks of exactly 16 tiles of whole vectors of channels run on rt_wino.h's own
     * 16-row tile (AVX-512) with V transposed: 13x15 (16 tiles, short last row and column
     * of tiles), M = 80 (a missing second panel); four 7x7 images (16 tiles across images);
     * C = 16 (one vector), 160 with M = 24 (a second panel of 8 columns); C = 40, not whole
     * vectors, keeps the other path. Each must give the bytes of the stack's blocks of 14. */
    Case k = {1, 32, 80, 1, 13, 15, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    wino_case(&k, true, true, NULL);
    Case k2 = {4, 16, 33, 1, 7, 7, 3, 3, 1, 1, 1, 1, 1, 0, 0, 1};
    wino_case(&k2, true, false, NULL);
    Case k3 = {1, 160, 24, 1, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    wino_case(&k3, false, true, NULL);
    Case k4 = {1, 40, 32, 1, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    wino_case(&k4, true, false, NULL);
}

Test(rt_wino, applies_the_bias_residual_and_activation_epilogue) {
    RtAct relu = {RT_ACT_RELU, 0.0, 0.0}, relu6 = {RT_ACT_CLIP, 0.0, 6.0};
    RtAct leaky = {RT_ACT_LEAKY_RELU, 0.125, 0.0}; /* not a clamp: applied to stored rows */
    Case k = {1, 8, 40, 1, 6, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    wino_case(&k, true, true, &relu);
    wino_case(&k, true, true, &leaky);
    wino_case(&k, false, false, &leaky);
    wino_case(&k, false, true, NULL);
    wino_case(&k, true, false, &relu6);
}

Test(rt_wino, f2x2_matches_the_reference) {
    /* F(2x2, 3x3) (rt_wino2_*): 7x7 and 8x8 outputs of whole vectors (one block of 16 tiles,
     * on rt_wino_p16_avx512 with AVX-512), with the residual and ReLU, a missing second
     * panel (M = 48) and a narrow one (M = 40); every remainder of 2 and channels that are
     * not whole vectors (the scalar transforms), pads asymmetric, batches across blocks */
    RtAct relu = {RT_ACT_RELU, 0.0, 0.0}, leaky = {RT_ACT_LEAKY_RELU, 0.125, 0.0};
    Case k = {1, 64, 48, 1, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    wino_case_x(&k, true, true, &relu, 2);
    Case k2 = {1, 320, 40, 1, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    wino_case_x(&k2, true, false, NULL, 2);
    Case k3 = {2, 17, 33, 1, 9, 6, 3, 3, 1, 1, 1, 1, 0, 1, 2, 0};
    wino_case_x(&k3, false, true, &leaky, 2);
    Case k4 = {3, 32, 16, 1, 5, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    wino_case_x(&k4, true, false, NULL, 2);
}

Test(rt_wino, stride2_matches_the_reference) {
    /* stride 2 on the phases of the input (RT_WINOS2): 56 -> 28 and 28 -> 14 as ResNet-50's
     * (pads 1), odd sides and every remainder of 2, no pads and asymmetric ones, channels
     * that are not whole vectors (the scalar transforms), a narrow last panel, batches,
     * the residual and activations */
    RtAct relu = {RT_ACT_RELU, 0.0, 0.0}, leaky = {RT_ACT_LEAKY_RELU, 0.125, 0.0};
    Case k = {1, 32, 48, 1, 28, 28, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
    wino_case_x(&k, true, true, &relu, RT_WINOS2);
    Case k2 = {1, 64, 40, 1, 15, 13, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
    wino_case_x(&k2, true, false, NULL, RT_WINOS2);
    Case k3 = {2, 17, 33, 1, 11, 9, 3, 3, 2, 2, 1, 1, 0, 1, 2, 0};
    wino_case_x(&k3, false, true, &leaky, RT_WINOS2);
    Case k4 = {3, 24, 16, 1, 10, 12, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0};
    wino_case_x(&k4, true, false, NULL, RT_WINOS2);
    Case k5 = {1, 300, 36, 1, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
    wino_case_x(&k5, true, false, &relu, RT_WINOS2);
}
