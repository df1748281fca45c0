/* Unit tests of the quantized integer kernels (runtime/rt_quant.h): ConvInteger/QLinearConv
 * and QLinearMatMul on fresh random 8-bit inputs and zero points, outputs poisoned first,
 * against naive reference loops written here. Integer results must match exactly. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/rt_cast.h"
#include "runtime/rt_quant.h"

#include "rt_test_util.h"

#define POISON_BYTE 0x5a

static void *poisoned(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    memset(p, POISON_BYTE, bytes ? bytes : 1);
    return p;
}

/* Reference requantization, in the same order of operations as ONNX's reference. */
static int32_t ref_requant(int64_t acc, double mult, int32_t zp, int32_t lo, int32_t hi) {
    double v = nearbyint((double)(int32_t)acc * mult + zp);
    return v < lo ? lo : v > hi ? hi : (int32_t)v;
}

Test(rt_quant, conv_integer_matches_naive_loops_with_per_channel_zero_points) {
    for (int rep = 0; rep < 20; rep++) {
        rng_init();
        RtQConvGeom g;
        memset(&g, 0, sizeof g);
        g.group = rng_range(1, 2);
        g.n = rng_range(1, 2), g.c = g.group * rng_range(1, 3), g.m = g.group * rng_range(1, 3);
        for (int i = 0; i < 3; i++) {
            bool used = i > 0;
            g.in[i] = used ? rng_range(3, 7) : 1;
            g.k[i] = used ? rng_range(1, 3) : 1;
            g.s[i] = used ? rng_range(1, 2) : 1;
            g.d[i] = used ? rng_range(1, 2) : 1;
            g.pad[i] = used ? rng_range(0, 1) : 0;
            int64_t ek = (g.k[i] - 1) * g.d[i] + 1;
            g.out[i] = (g.in[i] + 2 * g.pad[i] - ek) / g.s[i] + 1;
            if (g.out[i] < 1) g.out[i] = 1, g.pad[i] = ek; /* keep it valid */
        }
        int64_t cg = g.c / g.group, kvol = g.k[0] * g.k[1] * g.k[2];
        int64_t nx = g.n * g.c * g.in[0] * g.in[1] * g.in[2], nw = g.m * cg * kvol;
        int64_t ny = g.n * g.m * g.out[0] * g.out[1] * g.out[2];
        uint8_t *x = malloc((size_t)nx);
        int8_t *w = malloc((size_t)nw);
        for (int64_t i = 0; i < nx; i++)
            x[i] = (uint8_t)rng_u32();
        for (int64_t i = 0; i < nw; i++)
            w[i] = (int8_t)rng_u32();
        int8_t *wz = malloc((size_t)g.m);
        for (int64_t i = 0; i < g.m; i++)
            wz[i] = (int8_t)rng_range(-5, 5);
        int32_t x_zp = (int32_t)rng_range(0, 255);
        int32_t *y = poisoned((size_t)ny * sizeof *y);
        rt_qconv_u8i8_i32(x, x_zp, w, wz, 1, NULL, NULL, 0, 0, y, &g);
        for (int64_t b = 0; b < g.n; b++)
            for (int64_t m = 0; m < g.m; m++)
                for (int64_t oh = 0; oh < g.out[1]; oh++)
                    for (int64_t ow = 0; ow < g.out[2]; ow++) {
                        int64_t acc = 0, grp = m / (g.m / g.group);
                        for (int64_t c = 0; c < cg; c++)
                            for (int64_t kh = 0; kh < g.k[1]; kh++)
                                for (int64_t kw = 0; kw < g.k[2]; kw++) {
                                    int64_t ih = oh * g.s[1] + kh * g.d[1] - g.pad[1];
                                    int64_t iw = ow * g.s[2] + kw * g.d[2] - g.pad[2];
                                    if (ih < 0 || ih >= g.in[1] || iw < 0 || iw >= g.in[2])
                                        continue;
                                    int64_t xi =
                                        ((b * g.c + grp * cg + c) * g.in[1] + ih) * g.in[2] + iw;
                                    int64_t wi = ((m * cg + c) * g.k[1] + kh) * g.k[2] + kw;
                                    acc += (int64_t)(x[xi] - x_zp) * (w[wi] - wz[m]);
                                }
                        int64_t yi = ((b * g.m + m) * g.out[1] + oh) * g.out[2] + ow;
                        cr_assert_eq(y[yi], (int32_t)acc, "y[%lld] = %d, want %lld (seed %u)",
                                     (long long)yi, y[yi], (long long)acc, rng_seed);
                    }
        free(x), free(w), free(wz), free(y);
    }
}

Test(rt_quant, qlinear_conv_requantizes_with_bias_and_per_channel_scales) {
    rng_init();
    RtQConvGeom g = {.n = 1,
                     .c = 3,
                     .m = 4,
                     .group = 1,
                     .in = {1, 5, 6},
                     .out = {1, 5, 6},
                     .k = {1, 3, 3},
                     .s = {1, 1, 1},
                     .d = {1, 1, 1},
                     .pad = {0, 1, 1}};
    int8_t x[90], w[108], *y = poisoned(120);
    int32_t bias[4];
    double mult[4];
    for (int i = 0; i < 90; i++)
        x[i] = (int8_t)rng_u32();
    for (int i = 0; i < 108; i++)
        w[i] = (int8_t)rng_u32();
    for (int i = 0; i < 4; i++) {
        bias[i] = (int32_t)rng_range(-2000, 2000);
        mult[i] = rt_qscale_f32(0.02f, (float)rng_range(1, 9) * 0.001f, 0.05f);
    }
    int32_t *acc = poisoned(120 * sizeof *acc);
    rt_qconv_i8i8_i32(x, 3, w, NULL, 0, bias, NULL, 0, 0, acc, &g);
    rt_qconv_i8i8_i8(x, 3, w, NULL, 0, bias, mult, 1, -7, y, &g);
    for (int m = 0; m < 4; m++)
        for (int p = 0; p < 30; p++) {
            int32_t want = ref_requant(acc[m * 30 + p], mult[m], -7, -128, 127);
            cr_assert_eq(y[m * 30 + p], want, "y[%d] = %d, want %d (seed %u)", m * 30 + p,
                         y[m * 30 + p], want, rng_seed);
        }
    free(y), free(acc);
}

Test(rt_quant, qlinear_matmul_matches_naive_loops_for_all_sign_combinations) {
    for (int rep = 0; rep < 10; rep++) {
        rng_init();
        int64_t M = rng_range(1, 6), N = rng_range(1, 7), K = rng_range(1, 40);
        uint8_t *a = malloc((size_t)(M * K)), *yu = poisoned((size_t)(M * N));
        int8_t *b = malloc((size_t)(K * N)), *bz = malloc((size_t)N),
               *yi = poisoned((size_t)(M * N));
        for (int64_t i = 0; i < M * K; i++)
            a[i] = (uint8_t)rng_u32();
        for (int64_t i = 0; i < K * N; i++)
            b[i] = (int8_t)rng_u32();
        for (int64_t i = 0; i < N; i++)
            bz[i] = (int8_t)rng_range(-3, 3);
        int32_t az = (int32_t)rng_range(0, 255);
        double mult = rt_qscale_f32(0.01f, 0.02f, 0.3f);
        rt_qmatmul_u8i8_u8(M, N, K, a, az, b, bz, 1, &mult, 0, 128, yu);
        rt_qmatmul_u8i8_i8(M, N, K, a, az, b, bz, 1, &mult, 0, 0, yi);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                int64_t acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += (int64_t)(a[i * K + k] - az) * (b[k * N + j] - bz[j]);
                cr_assert_eq(yu[i * N + j], ref_requant(acc, mult, 128, 0, 255), "seed %u",
                             rng_seed);
                cr_assert_eq(yi[i * N + j], ref_requant(acc, mult, 0, -128, 127), "seed %u",
                             rng_seed);
            }
        free(a), free(b), free(bz), free(yu), free(yi);
    }
}

Test(rt_quant, requantization_rounds_half_to_even_and_saturates) {
    cr_assert_eq(rt_requant(5, 0.5, 0, 0, 255), 2); /* 2.5 -> 2 */
    cr_assert_eq(rt_requant(7, 0.5, 0, 0, 255), 4); /* 3.5 -> 4 */
    cr_assert_eq(rt_requant(-5, 0.5, 0, -128, 127), -2);
    cr_assert_eq(rt_requant(100000, 1.0, 0, -128, 127), 127);
    cr_assert_eq(rt_requant(-100000, 1.0, 10, 0, 255), 0);
}

Test(rt_quant, float16_scales_round_each_step_to_half) {
    /* 0.1 * 0.1 / 0.3 in half steps differs from the float result in the 4th digit */
    uint16_t a = rt_f32_to_f16(0.1f), c = rt_f32_to_f16(0.3f);
    float ab = rt_f16_to_f32(rt_f32_to_f16(rt_f16_to_f32(a) * rt_f16_to_f32(a)));
    double want = rt_f16_to_f32(rt_f32_to_f16(ab / rt_f16_to_f32(c)));
    cr_assert_eq(rt_qscale_f16(a, a, c), want);
    cr_assert(fabs(want - 0.1 * 0.1 / 0.3) < 1e-3);
}

/* rt_quantize's float32 -> 8-bit per-tensor loop against its general loop (the same tensor
 * given as per axis with one channel): byte for byte, on ties (k + 0.5) * scale, values far
 * outside the range, zeros and random values, for uint8 and int8 with and without a zero point. */
Test(rt_quant, per_tensor_float_to_8bit_matches_the_general_loop) {
    enum { N = 1037 };
    float x[N];
    float scale = 0.03125f; /* a power of two: (k + 0.5) * scale is an exact tie */
    for (int i = 0; i < N; i++) {
        switch (i % 4) {
        case 0: x[i] = ((float)rng_range(-300, 300) + 0.5f) * scale; break;
        case 1: x[i] = (float)rng_range(-100000, 100000) * 1e-3f; break;
        case 2: x[i] = (float)rng_range(-2000, 2000); break;
        default: x[i] = (i % 8 == 3) ? 0.0f : -(float)rng_range(0, 1000) * 1e-4f; break;
        }
    }
    const RtQuantLayout fast = {1, 1, N, 0, 0}, general = {1, 1, N, 0, 1};
    const uint8_t zu = 131;
    const int8_t zi = -7;
    for (int t = 0; t < 4; t++) {
        int yt = t < 2 ? RT_DT_U8 : RT_DT_I8;
        const void *zp = (t % 2) ? (yt == RT_DT_U8 ? (const void *)&zu : (const void *)&zi) : NULL;
        uint8_t *a = poisoned(N), *b = poisoned(N);
        rt_quantize(x, RT_DT_F32, &scale, RT_DT_F32, zp, yt, a, N, &fast, 1);
        rt_quantize(x, RT_DT_F32, &scale, RT_DT_F32, zp, yt, b, N, &general, 1);
        cr_assert_arr_eq(a, b, N, "type %d, zero point %s", yt, zp ? "set" : "none");
        free(a);
        free(b);
    }
}
