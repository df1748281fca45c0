/* Unit tests of the data movement runtime (runtime/rt_data.h, rt_index.h, rt_resize.h):
 * each kernel runs on fresh random inputs into poisoned outputs and is compared with a
 * naive reference loop written here; bad indices and shapes must return their status. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "runtime/rt_data.h"
#include "runtime/rt_index.h"
#include "runtime/rt_resize.h"

#define POISON 0x5a5a5a5a

static uint32_t rng_state = 12345u;
static uint32_t rnd(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}
static void fill_random(int32_t *p, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        p[i] = (int32_t)(rnd() % 100000) + 1;
}
static void poison(int32_t *p, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        p[i] = POISON;
}

Test(rt_data, strided_copy_transposes_a_3d_tensor) {
    enum { A = 3, B = 4, C = 5 };
    int32_t x[A * B * C], y[A * B * C];
    fill_random(x, A * B * C);
    poison(y, A * B * C);
    /* y: (C, A, B) = transpose(x, (2, 0, 1)) */
    const int64_t dims[] = {C, A, B}, ys[] = {A * B, B, 1}, xs[] = {1, B * C, C};
    rt_strided_copy(y, ys, x, xs, dims, 3, sizeof(int32_t));
    for (int c = 0; c < C; c++)
        for (int a = 0; a < A; a++)
            for (int b = 0; b < B; b++)
                cr_assert_eq(y[(c * A + a) * B + b], x[(a * B + b) * C + c]);
}

Test(rt_data, slice_with_negative_steps_matches_a_naive_loop) {
    enum { H = 7, W = 9 };
    int32_t x[H * W], y[H * W];
    fill_random(x, H * W);
    const int64_t in_dims[] = {H, W};
    const int64_t starts[] = {-1, 1}, ends[] = {-100, 100}, axes[] = {0, 1}, steps[] = {-2, 3};
    int64_t out_dims[] = {4, 3}, st[2], sp[2];
    cr_assert_eq(rt_slice_params(in_dims, 2, starts, ends, axes, steps, 2, out_dims, st, sp),
                 RT_OK);
    poison(y, H * W);
    rt_slice(y, x, sizeof(int32_t), in_dims, out_dims, 2, st, sp);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            cr_assert_eq(y[i * 3 + j], x[(H - 1 - 2 * i) * W + 1 + 3 * j]);
    cr_assert_eq(y[12], POISON, "wrote past the output");
    int64_t wrong[] = {3, 3};
    cr_assert_eq(rt_slice_params(in_dims, 2, starts, ends, axes, steps, 2, wrong, st, sp),
                 RT_ERR_SHAPE);
}

static int64_t ref_pad_src(int64_t c, int64_t n, int mode) {
    if (c >= 0 && c < n) return c;
    if (mode == RT_PAD_CONSTANT) return -1;
    if (mode == RT_PAD_EDGE) return c < 0 ? 0 : n - 1;
    if (mode == RT_PAD_WRAP) return ((c % n) + n) % n;
    while (c < 0 || c >= n)
        c = c < 0 ? -c : 2 * (n - 1) - c; /* reflect */
    return c;
}

Test(rt_data, pad_matches_a_naive_loop_in_every_mode) {
    enum { H = 3, W = 4 };
    int32_t x[H * W], y[64], value = -7;
    const int64_t in_dims[] = {H, W}, pads[] = {2, -1, 1, 3}, out_dims[] = {H + 3, W + 2};
    int64_t begin[2];
    cr_assert_eq(rt_pad_params(pads, 4, NULL, 2, in_dims, out_dims, 2, begin), RT_OK);
    for (int mode = 0; mode < 4; mode++) {
        fill_random(x, H * W);
        poison(y, 64);
        cr_assert_eq(rt_pad(y, x, 4, in_dims, out_dims, 2, begin, mode, &value), RT_OK);
        for (int i = 0; i < H + 3; i++)
            for (int j = 0; j < W + 2; j++) {
                int64_t si = ref_pad_src(i - 2, H, mode), sj = ref_pad_src(j + 1, W, mode);
                int32_t want = si < 0 || sj < 0 ? value : x[si * W + sj];
                cr_assert_eq(y[i * (W + 2) + j], want, "mode %d at (%d,%d)", mode, i, j);
            }
    }
}

Test(rt_data, trilu_keeps_the_upper_triangle_above_diagonal_k) {
    enum { R = 4, C = 5 };
    int32_t x[2 * R * C], y[2 * R * C];
    fill_random(x, 2 * R * C);
    poison(y, 2 * R * C);
    rt_trilu(y, x, 4, 2, R, C, 1, 1);
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < R; i++)
            for (int j = 0; j < C; j++) {
                int o = (b * R + i) * C + j;
                cr_assert_eq(y[o], j - i >= 1 ? x[o] : 0);
            }
}

Test(rt_data, shape_checks_reject_data_that_asks_for_another_shape) {
    const int64_t in_dims[] = {2, 3, 4}, out_dims[] = {6, 4};
    const int64_t good[] = {-1, 4}, zero[] = {0, 12}, bad[] = {4, 6};
    cr_assert_eq(rt_reshape_check(good, 2, in_dims, 3, out_dims, 2, 0), RT_OK);
    cr_assert_eq(rt_reshape_check(bad, 2, in_dims, 3, out_dims, 2, 0), RT_ERR_SHAPE);
    const int64_t o2[] = {2, 12};
    cr_assert_eq(rt_reshape_check(zero, 2, in_dims, 3, o2, 2, 0), RT_OK);
    const int64_t e_in[] = {3, 1}, e_out[] = {2, 3, 5}, e_shape[] = {2, 1, 5};
    cr_assert_eq(rt_expand_check(e_shape, 3, e_in, 2, e_out, 3), RT_OK);
    cr_assert_eq(rt_expand_check(e_shape, 2, e_in, 2, e_out, 3), RT_ERR_SHAPE);
    const int64_t u_axes[] = {-1, 0}, u_out[] = {1, 2, 3, 4, 1};
    cr_assert_eq(rt_axes_check(u_axes, 2, in_dims, 3, u_out, 5, 1), RT_OK);
    cr_assert_eq(rt_axes_check(u_axes, 2, in_dims, 3, in_dims, 3, 1), RT_ERR_SHAPE);
}

Test(rt_index, gather_wraps_negative_indices_and_rejects_out_of_range) {
    enum { O = 3, D = 5, I = 2, N = 4 };
    int32_t x[O * D * I], y[O * N * I];
    int64_t idx[N] = {0, -1, 3, -5};
    fill_random(x, O * D * I);
    poison(y, O * N * I);
    cr_assert_eq(rt_gather(y, x, 4, O, D, I, idx, 1, N), RT_OK);
    for (int o = 0; o < O; o++)
        for (int k = 0; k < N; k++)
            for (int i = 0; i < I; i++) {
                int64_t s = idx[k] < 0 ? idx[k] + D : idx[k];
                cr_assert_eq(y[(o * N + k) * I + i], x[(o * D + s) * I + i]);
            }
    int32_t idx32[2] = {1, 5};
    cr_assert_eq(rt_gather(y, x, 4, O, D, I, idx32, 0, 2), RT_ERR_INDEX);
    idx32[1] = -6;
    cr_assert_eq(rt_gather(y, x, 4, O, D, I, idx32, 0, 2), RT_ERR_INDEX);
}

Test(rt_index, gather_elements_and_scatter_elements_with_add_match_naive_loops) {
    enum { A = 3, B = 4 };
    int32_t x[A * B], y[A * B];
    int64_t idx[A * 2];
    const int64_t xdims[] = {A, B}, idims[] = {A, 2};
    fill_random(x, A * B);
    for (int i = 0; i < A * 2; i++)
        idx[i] = (int64_t)(rnd() % (2 * B)) - B;
    poison(y, A * B);
    cr_assert_eq(rt_gather_elements(y, x, 4, xdims, idims, 2, 1, idx, 1), RT_OK);
    for (int i = 0; i < A; i++)
        for (int j = 0; j < 2; j++) {
            int64_t k = idx[i * 2 + j] < 0 ? idx[i * 2 + j] + B : idx[i * 2 + j];
            cr_assert_eq(y[i * 2 + j], x[i * B + k]);
        }
    float data[A * B], upd[A * 2], ref[A * B];
    for (int i = 0; i < A * B; i++)
        data[i] = ref[i] = (float)(rnd() % 1000) / 8;
    for (int i = 0; i < A * 2; i++)
        upd[i] = (float)(rnd() % 1000) / 8;
    for (int i = 0; i < A; i++)
        for (int j = 0; j < 2; j++) {
            int64_t k = idx[i * 2 + j] < 0 ? idx[i * 2 + j] + B : idx[i * 2 + j];
            ref[i * B + k] += upd[i * 2 + j];
        }
    cr_assert_eq(
        rt_scatter_elements(data, upd, 4, RT_DT_F32, RT_REDUCE_ADD, xdims, idims, 2, 1, idx, 1),
        RT_OK);
    for (int i = 0; i < A * B; i++)
        cr_assert_float_eq(data[i], ref[i], 1e-4);
    idx[3] = B;
    cr_assert_eq(
        rt_scatter_elements(data, upd, 4, RT_DT_F32, RT_REDUCE_ADD, xdims, idims, 2, 1, idx, 1),
        RT_ERR_INDEX);
}

Test(rt_index, gather_nd_with_a_batch_dim_matches_a_naive_loop) {
    enum { Bt = 2, H = 3, W = 4, T = 5 };
    int32_t x[Bt * H * W], y[Bt * T * W];
    int32_t idx[Bt * T];
    const int64_t xdims[] = {Bt, H, W};
    fill_random(x, Bt * H * W);
    for (int i = 0; i < Bt * T; i++)
        idx[i] = (int32_t)(rnd() % (2 * H)) - H;
    poison(y, Bt * T * W);
    cr_assert_eq(rt_gather_nd(y, x, 4, xdims, 3, 1, idx, 0, T, 1), RT_OK);
    for (int b = 0; b < Bt; b++)
        for (int t = 0; t < T; t++) {
            int h = idx[b * T + t] < 0 ? idx[b * T + t] + H : idx[b * T + t];
            for (int w = 0; w < W; w++)
                cr_assert_eq(y[(b * T + t) * W + w], x[(b * H + h) * W + w]);
        }
    int64_t nd_idx[2] = {1, 3};
    int32_t upd[1] = {-3};
    int32_t z[H * W];
    const int64_t zd[] = {H, W};
    fill_random(z, H * W);
    int32_t before = z[1 * W + 3];
    cr_assert_eq(rt_scatter_nd(z, upd, 4, RT_DT_I32, RT_REDUCE_MUL, zd, 2, nd_idx, 1, 1, 2), RT_OK);
    cr_assert_eq(z[1 * W + 3], before * -3);
}

Test(rt_index, reverse_sequence_reverses_the_first_len_steps) {
    enum { Tm = 4, Bt = 3 };
    int32_t x[Tm * Bt], y[Tm * Bt];
    const int64_t dims[] = {Tm, Bt}, lens[] = {4, 1, 2};
    fill_random(x, Tm * Bt);
    poison(y, Tm * Bt);
    cr_assert_eq(rt_reverse_sequence(y, x, 4, dims, 2, 1, 0, lens, 1), RT_OK);
    for (int t = 0; t < Tm; t++)
        for (int b = 0; b < Bt; b++) {
            int src = t < lens[b] ? (int)lens[b] - 1 - t : t;
            cr_assert_eq(y[t * Bt + b], x[src * Bt + b]);
        }
}

Test(rt_resize, nearest_and_linear_upsampling_match_naive_formulas) {
    enum { H = 3, W = 4 };
    float x[H * W], y[2 * H * 2 * W];
    for (int i = 0; i < H * W; i++)
        x[i] = (float)(rnd() % 1000) / 16;
    RtResize p;
    memset(&p, 0, sizeof p);
    p.rank = 2;
    p.in_dims[0] = H, p.in_dims[1] = W, p.out_dims[0] = 2 * H, p.out_dims[1] = 2 * W;
    p.mode = RT_RESIZE_NEAREST;
    p.ctm = RT_CTM_ASYMMETRIC;
    p.nearest_mode = RT_NEAREST_FLOOR;
    const float scales[] = {2.0f, 2.0f};
    cr_assert_eq(rt_resize_prepare(&p, NULL, 2, scales, NULL, RT_KEEP_STRETCH, NULL), RT_OK);
    for (int i = 0; i < 4 * H * W; i++)
        y[i] = NAN;
    cr_assert_eq(rt_resize(&p, y, x, RT_DT_F32), RT_OK);
    for (int i = 0; i < 2 * H; i++)
        for (int j = 0; j < 2 * W; j++)
            cr_assert_eq(y[i * 2 * W + j], x[(i / 2) * W + j / 2]);
    /* linear, half_pixel: along each axis x_in = (o + 0.5) / 2 - 0.5, clamped at the edges */
    p.mode = RT_RESIZE_LINEAR;
    p.ctm = RT_CTM_HALF_PIXEL;
    for (int i = 0; i < 4 * H * W; i++)
        y[i] = NAN;
    cr_assert_eq(rt_resize(&p, y, x, RT_DT_F32), RT_OK);
    for (int i = 0; i < 2 * H; i++)
        for (int j = 0; j < 2 * W; j++) {
            double fi = (i + 0.5) / 2 - 0.5, fj = (j + 0.5) / 2 - 0.5;
            fi = fi < 0 ? 0 : (fi > H - 1 ? H - 1 : fi);
            fj = fj < 0 ? 0 : (fj > W - 1 ? W - 1 : fj);
            int i0 = (int)fi, j0 = (int)fj, i1 = i0 + 1 < H ? i0 + 1 : i0,
                j1 = j0 + 1 < W ? j0 + 1 : j0;
            double a = fi - i0, b = fj - j0;
            double want = (1 - a) * ((1 - b) * x[i0 * W + j0] + b * x[i0 * W + j1]) +
                          a * ((1 - b) * x[i1 * W + j0] + b * x[i1 * W + j1]);
            cr_assert_float_eq(y[i * 2 * W + j], want, 1e-4, "at (%d,%d)", i, j);
        }
    const float bad[] = {3.0f, 2.0f};
    cr_assert_eq(rt_resize_prepare(&p, NULL, 2, bad, NULL, RT_KEEP_STRETCH, NULL), RT_ERR_SHAPE);
}
