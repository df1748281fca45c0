/* Unit tests of the signal/geometry runtime kernels (runtime/rt_signal.h, rt_geom.h): each
 * kernel runs on fresh random inputs, with outputs poisoned first, against a naive reference
 * written here in double, and the run-time checks (shapes and indices read from the data)
 * are shown to refuse bad values. The seed is printed with any failure. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/rt_geom.h"
#include "runtime/rt_signal.h"

#include "rt_test_util.h"

#define TOL_F32 1e-4 /* relative to the reference's magnitude, float results */
#define TEST_PI 3.14159265358979323846

static void expect_close(const float *got, const double *want, int64_t n, const char *what) {
    expect_close_tol(got, want, n, TOL_F32, what);
}

/* ---- DFT, STFT, windows ---- */

Test(rt_signal, dft_of_a_complex_signal_on_the_middle_axis_matches_the_direct_sum) {
    rng_init();
    enum { A = 3, L = 7, C = 4, N = 9 }; /* zero-padded from 7 to 9 */
    float x[A * L * C * 2], y[A * N * C * 2];
    double want[A * N * C * 2];
    const int64_t in_dims[] = {A, L, C, 2}, out_dims[] = {A, N, C, 2};
    fill_rand(x, A * L * C * 2);
    poison(y, A * N * C * 2);
    cr_assert_eq(rt_dft_f32(x, y, 4, in_dims, out_dims, -3, N, 0, 0), RT_OK);
    for (int a = 0; a < A; a++)
        for (int k = 0; k < N; k++)
            for (int c = 0; c < C; c++) {
                double re = 0, im = 0;
                for (int t = 0; t < L; t++) {
                    double ang = -2 * TEST_PI * k * t / N;
                    const float *v = x + ((a * L + t) * C + c) * 2;
                    re += v[0] * cos(ang) - v[1] * sin(ang);
                    im += v[0] * sin(ang) + v[1] * cos(ang);
                }
                want[((a * N + k) * C + c) * 2] = re, want[((a * N + k) * C + c) * 2 + 1] = im;
            }
    expect_close(y, want, A * N * C * 2, "y");
}

Test(rt_signal, irfft_of_a_onesided_dft_gives_the_signal_back_for_odd_and_even_lengths) {
    for (int n = 7; n <= 8; n++) {
        rng_init();
        float x[8], spec[5 * 2], back[8];
        double want[8];
        const int64_t xd[] = {1, n, 1}, sd[] = {1, n / 2 + 1, 2};
        fill_rand(x, n);
        poison(back, 8);
        cr_assert_eq(rt_dft_f32(x, spec, 3, xd, sd, 1, -1, 0, 1), RT_OK);
        cr_assert_eq(rt_dft_f32(spec, back, 3, sd, xd, 1, n, 1, 1), RT_OK);
        for (int i = 0; i < n; i++)
            want[i] = x[i];
        expect_close(back, want, n, "back");
    }
}

Test(rt_signal, dft_refuses_an_axis_or_length_that_disagrees_with_the_compiled_shapes) {
    float x[10] = {0}, y[12];
    const int64_t xd[] = {1, 10, 1}, yd[] = {1, 6, 2};                    /* one-sided */
    cr_assert_eq(rt_dft_f32(x, y, 3, xd, yd, 2, -1, 0, 1), RT_ERR_SHAPE); /* complex axis */
    cr_assert_eq(rt_dft_f32(x, y, 3, xd, yd, 0, -1, 0, 1), RT_ERR_SHAPE); /* axis 1 kept 10 */
    cr_assert_eq(rt_dft_f32(x, y, 3, xd, yd, 1, 12, 0, 1), RT_ERR_SHAPE); /* 7 bins, not 6 */
    cr_assert_eq(rt_dft_f32(x, y, 3, xd, yd, -2, 11, 0, 1), RT_OK);
}

Test(rt_signal, stft_frames_are_windowed_onesided_dfts) {
    rng_init();
    enum { L = 40, FL = 8, STEP = 5, FR = 1 + (L - FL) / STEP, BINS = FL / 2 + 1 };
    float x[L], win[FL], y[FR * BINS * 2];
    double want[FR * BINS * 2];
    fill_rand(x, L);
    fill_rand(win, FL);
    poison(y, FR * BINS * 2);
    cr_assert_eq(rt_stft_f32(x, win, FL, y, 1, L, 1, FR, BINS, STEP, FL, 1), RT_OK);
    for (int f = 0; f < FR; f++)
        for (int k = 0; k < BINS; k++) {
            double re = 0, im = 0;
            for (int t = 0; t < FL; t++) {
                double v = (double)x[f * STEP + t] * win[t], ang = -2 * TEST_PI * k * t / FL;
                re += v * cos(ang), im += v * sin(ang);
            }
            want[(f * BINS + k) * 2] = re, want[(f * BINS + k) * 2 + 1] = im;
        }
    expect_close(y, want, FR * BINS * 2, "y");
    cr_assert_eq(rt_stft_f32(x, win, FL, y, 1, L, 1, FR, BINS, STEP + 3, FL, 1), RT_ERR_SHAPE);
}

Test(rt_signal, symmetric_windows_are_symmetric_and_periodic_hann_starts_at_zero) {
    for (int kind = 0; kind < 3; kind++)
        for (int i = 0; i < 11; i++)
            cr_assert_float_eq(rt_window_value(kind, i, 11, 0),
                               rt_window_value(kind, 10 - i, 11, 0), 1e-12);
    cr_assert_float_eq(rt_window_value(RT_WIN_HANN, 0, 16, 1), 0.0, 1e-12);
    cr_assert_float_eq(rt_window_value(RT_WIN_HANN, 8, 16, 1), 1.0, 1e-12);
    cr_assert_float_eq(rt_window_value(RT_WIN_HAMMING, 0, 16, 1), 4.0 / 46.0, 1e-12);
}

/* ---- GridSample, AffineGrid ---- */

Test(rt_geom, bilinear_grid_sample_on_an_affine_identity_grid_reproduces_the_input) {
    rng_init();
    enum { N = 2, C = 3, H = 5, W = 6 };
    float x[N * C * H * W], grid[N * H * W * 2], y[N * C * H * W];
    const float theta[N * 6] = {1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0};
    const int64_t out[] = {H, W};
    double want[N * C * H * W];
    fill_rand(x, N * C * H * W);
    poison(y, N * C * H * W);
    for (int ac = 0; ac <= 1; ac++) {
        RtGridSample p = {N, C, 2, {H, W, 1}, H * W, RT_GS_LINEAR, RT_GS_ZEROS, ac};
        rt_affine_grid_f32(theta, grid, N, 2, out, ac);
        rt_grid_sample_f32(&p, x, grid, y);
        for (int i = 0; i < N * C * H * W; i++)
            want[i] = x[i];
        expect_close(y, want, N * C * H * W, "y");
    }
}

Test(rt_geom, nearest_grid_sample_reads_zeros_outside_and_clamps_with_border_padding) {
    const float x[4] = {1, 2, 3, 4};     /* (1, 1, 2, 2) */
    const float grid[2] = {-3.0f, 0.9f}; /* far left, bottom row */
    float y[1];
    RtGridSample p = {1, 1, 2, {2, 2, 1}, 1, RT_GS_NEAREST, RT_GS_ZEROS, 0};
    rt_grid_sample_f32(&p, x, grid, y);
    cr_assert_eq(y[0], 0.0f);
    p.padding = RT_GS_BORDER;
    rt_grid_sample_f32(&p, x, grid, y);
    cr_assert_eq(y[0], 3.0f);
}

/* ---- RoiAlign, MaxUnpool, Col2Im, NMS, Det ---- */

Test(rt_geom, roi_align_averages_a_constant_image_to_that_constant) {
    float x[2 * 1 * 6 * 6], y[2 * 1 * 2 * 3];
    const float rois[8] = {0.5f, 1.0f, 4.0f, 5.0f, 1.0f, 0.0f, 3.0f, 2.5f};
    const int64_t bidx[2] = {1, 0};
    double want[12];
    for (int i = 0; i < 72; i++)
        x[i] = 2.5f;
    poison(y, 12);
    cr_assert_eq(rt_roi_align_f32(x, rois, bidx, y, 2, 1, 6, 6, 2, 2, 3, 2, 1.0f, 1, 0), RT_OK);
    for (int i = 0; i < 12; i++)
        want[i] = 2.5;
    expect_close(y, want, 12, "y");
}

Test(rt_geom, roi_align_refuses_a_batch_index_out_of_range) {
    float x[36] = {0}, y[4];
    const float rois[4] = {0, 0, 2, 2};
    const int64_t bidx[1] = {1};
    cr_assert_eq(rt_roi_align_f32(x, rois, bidx, y, 1, 1, 6, 6, 1, 2, 2, 0, 1.0f, 1, 0),
                 RT_ERR_INDEX);
}

Test(rt_geom, max_unpool_scatters_into_the_inferred_block_and_checks_indices) {
    const float x[2] = {5, 7};
    const int64_t in[] = {1, 1, 1, 2}, inf[] = {1, 1, 2, 2}, out[] = {1, 1, 3, 3};
    int64_t idx[2] = {1, 2};
    float y[9];
    poison(y, 9);
    cr_assert_eq(rt_max_unpool_f32(x, idx, y, 4, in, inf, out), RT_OK);
    const float want[9] = {0, 5, 0, 7, 0, 0, 0, 0, 0};
    for (int i = 0; i < 9; i++)
        cr_assert_eq(y[i], want[i], "y[%d] = %g", i, (double)y[i]);
    idx[1] = 4;
    cr_assert_eq(rt_max_unpool_f32(x, idx, y, 4, in, inf, out), RT_ERR_INDEX);
}

Test(rt_geom, col2im_sums_overlapping_blocks_like_a_naive_loop) {
    rng_init();
    enum { C = 2, IH = 5, IW = 6, KH = 2, KW = 3, SH = 1, SW = 2 };
    const int64_t img[] = {IH, IW}, blk[] = {KH, KW}, dil[] = {1, 1}, pad[] = {1, 0, 0, 1};
    const int64_t str[] = {SH, SW};
    int64_t nbh = (IH + 1 - KH) / SH + 1, nbw = (IW + 1 - KW) / SW + 1, L = nbh * nbw;
    float x[C * KH * KW * 15], y[C * IH * IW];
    double want[C * IH * IW] = {0};
    cr_assert_eq(L, 15);
    fill_rand(x, C * KH * KW * L);
    poison(y, C * IH * IW);
    cr_assert_eq(rt_col2im_f32(x, y, 1, C, 2, img, blk, dil, pad, str, KH * KW, L), RT_OK);
    for (int c = 0; c < C; c++)
        for (int kh = 0; kh < KH; kh++)
            for (int kw = 0; kw < KW; kw++)
                for (int bh = 0; bh < nbh; bh++)
                    for (int bw = 0; bw < nbw; bw++) {
                        int h = bh * SH - 1 + kh, w = bw * SW + kw;
                        if (h < 0 || h >= IH || w < 0 || w >= IW) continue;
                        want[(c * IH + h) * IW + w] +=
                            x[((c * KH + kh) * KW + kw) * L + bh * nbw + bw];
                    }
    expect_close(y, want, C * IH * IW, "y");
    cr_assert_eq(rt_col2im_f32(x, y, 1, C, 2, img, blk, dil, pad, str, KH * KW, L + 1),
                 RT_ERR_SHAPE);
}

Test(rt_geom, nms_keeps_the_best_of_overlapping_boxes_and_pads_unused_rows) {
    /* boxes 0 and 1 overlap heavily, box 2 is apart */
    const float boxes[12] = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 5, 5, 6, 6};
    const float scores[3] = {0.6f, 0.9f, 0.5f};
    int64_t sel[4 * 3];
    cr_assert_eq(rt_nms(boxes, scores, sel, 1, 1, 3, 4, 10, 0.5f, 0, 0.0f, 0), RT_OK);
    const int64_t want[12] = {0, 0, 1, 0, 0, 2, -1, -1, -1, -1, -1, -1};
    for (int i = 0; i < 12; i++)
        cr_assert_eq(sel[i], want[i], "sel[%d] = %lld", i, (long long)sel[i]);
    /* a capacity of one row is too small for two selections */
    cr_assert_eq(rt_nms(boxes, scores, sel, 1, 1, 3, 1, 10, 0.5f, 0, 0.0f, 0), RT_ERR_SHAPE);
    /* the score threshold drops box 2 */
    cr_assert_eq(rt_nms(boxes, scores, sel, 1, 1, 3, 4, 10, 0.5f, 1, 0.55f, 0), RT_OK);
    cr_assert_eq(sel[5], -1);
}

Test(rt_geom, det_matches_the_cofactor_expansion_of_3x3_matrices) {
    rng_init();
    float x[4 * 9], y[4];
    double ws[9], want[4];
    fill_rand(x, 36);
    poison(y, 4);
    rt_det_f32(x, y, 4, 3, ws);
    for (int b = 0; b < 4; b++) {
        const float *m = x + b * 9;
        want[b] = (double)m[0] * ((double)m[4] * m[8] - (double)m[5] * m[7]) -
                  (double)m[1] * ((double)m[3] * m[8] - (double)m[5] * m[6]) +
                  (double)m[2] * ((double)m[3] * m[7] - (double)m[4] * m[6]);
    }
    expect_close(y, want, 4, "det");
}
