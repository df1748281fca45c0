/* Unit tests of the int8 kernels of the quantize pass (runtime/rt_qconv.h, rt_qgemm.h):
 * convolution (dense, grouped, depthwise, channels not a multiple of 4, padding, strides,
 * dilations, a residual), the row GEMM, QAdd, QMaxPool and QGlobalAveragePool on fresh
 * random uint8 inputs and zero points with shapes that leave remainders in every tile
 * (rows not a multiple of RT_QGEMM_MR, channels not a multiple of 16 or 32), outputs
 * poisoned first, against naive loops written here. Results must match byte for byte.
 * tests/CMakeLists.txt builds this file once per SIMD path the compiler offers (portable,
 * AVX2, AVX-512 VNNI): each prints its path, and byte equality with one reference on every
 * path is the bit-identity across paths. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/rt_qconv.h"

#include "rt_test_util.h"

#define POISON_BYTE 0x5a

static void *poisoned(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    cr_assert(p);
    memset(p, POISON_BYTE, bytes ? bytes : 1);
    return p;
}

static uint8_t *rand_u8(int64_t n) {
    uint8_t *p = poisoned((size_t)n);
    for (int64_t i = 0; i < n; i++) p[i] = (uint8_t)rng_u32();
    return p;
}

/* The suite's fixture: a path the CPU lacks is skipped before a test body runs (the
 * compiler may use the path's instructions anywhere in a body, even to set up its cases). */
static void require_isa(void) {
#ifdef RT_QCONV_TEST_CPU
    __builtin_cpu_init();
    if (!__builtin_cpu_supports(RT_QCONV_TEST_CPU)) cr_skip_test("this CPU lacks " RT_QCONV_TEST_CPU);
#endif
}

TestSuite(rt_qconv, .init = require_isa);

/* The path this program was built for, once in the log. */
static void say_isa(void) {
    static bool said;
    if (!said) cr_log_info("int8 path: %s", RT_QGEMM_ISA);
    said = true;
}

/* y_zp + round-half-up(t / 2^s), clamped: in plain integer arithmetic (floor division). */
static int32_t ref_requant(int64_t t, int s, int32_t y_zp, int32_t lo, int32_t hi) {
    int64_t d = (int64_t)1 << s, u = t + d / 2;
    int64_t q = u / d - (u % d != 0 && u < 0);
    int64_t v = q + y_zp;
    v = v > lo ? v : lo; /* min(max(v, lo), hi): Clip's order (lo > hi gives hi) */
    return (int32_t)(v < hi ? v : hi);
}

/* Per-channel multipliers: random below 2^31 with shifts that keep the outputs in range
 * of the clamp often enough to be interesting. With a residual, half the calls keep every
 * shift in 33..38, where the AVX2 and AVX-512 paths requantize in int32 lanes (rt_qrq_prep,
 * rt_qrqz_prep: all the channels of a vector must be in range), the other half both sides
 * of 32. */
static void rand_requant(int64_t m, int32_t *mult, int32_t *rmult, uint8_t *shift) {
    bool int32_form = rng_u32() % 2 == 0;
    for (int64_t c = 0; c < m; c++) {
        if (rmult) { /* a shift shared with the residual's multiplier: smaller (qplan.c) */
            mult[c] = (int32_t)(rng_u32() >> 11) | (1 << 19);
            rmult[c] = (int32_t)(rng_u32() >> 2);
            shift[c] = (uint8_t)(int32_form ? rng_range(33, 38) : rng_range(28, 34));
        } else {
            mult[c] = (int32_t)(rng_u32() >> 1) | (1 << 29);
            shift[c] = (uint8_t)(rng_u32() % 8 == 0 ? rng_range(26, 37) : rng_range(38, 44));
        }
    }
}

/* Packs w (M, taps, cg) per group into the panels of rt_qgemm.h, colsums after them. */
static int8_t *pack(const int8_t *w, int64_t M, int64_t G, int64_t taps, int64_t cg, int64_t *c4o,
                    int64_t *npo) {
    int64_t mg = M / G, c4 = (cg + 3) / 4, np = (mg + RT_QGEMM_NR - 1) / RT_QGEMM_NR, k4 = taps * c4;
    int64_t panel = G * np * k4 * RT_QGEMM_KB, bytes = panel + G * np * RT_QGEMM_NR * 4;
    int8_t *o = calloc((size_t)bytes, 1);
    cr_assert(o);
    for (int64_t g = 0; g < G; g++)
        for (int64_t p = 0; p < np; p++)
            for (int64_t j = 0; j < RT_QGEMM_NR; j++) {
                int64_t n = p * RT_QGEMM_NR + j;
                int32_t sum = 0;
                if (n < mg)
                    for (int64_t t = 0; t < taps; t++)
                        for (int64_t c = 0; c < cg; c++) {
                            int8_t v = w[((g * mg + n) * taps + t) * cg + c];
                            o[((g * np + p) * k4 + t * c4 + c / 4) * RT_QGEMM_KB + j * 4 + c % 4] = v;
                            sum += v;
                        }
                memcpy(o + panel + ((g * np + p) * RT_QGEMM_NR + j) * 4, &sum, 4);
            }
    *c4o = c4;
    *npo = np;
    return o;
}

static void check_bytes(const uint8_t *got, const uint8_t *want, int64_t n, const char *what) {
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "%s [%s], element %lld: %d, want %d (seed %u)", what,
                     RT_QGEMM_ISA, (long long)i, got[i], want[i], rng_seed);
}

/* One random convolution; depthwise picks one channel per group (kernels up to 5x5); big
 * gives reductions past one KC chunk of the AVX2 tile (RT_QGEMM_AVX2_KC blocks of 4), the
 * chunk boundary falling inside a tap; stem an RGB-like first layer (1-4 channels, 3x3 or
 * 7x7, stride 2, rows wide enough that a row tile lies in one output row or straddles two:
 * the ring's rows looked up once per output row of a tile; rows of 64 bytes and more, one
 * channel included: the ring's copies of 16 pixels at a time; bands of row tiles past one
 * output row and past one band); mnv2 MobileNetV2's depthwise
 * forms: on even draws exactly 32 channels at stride 1 along x (the AVX-512 kernel reads a
 * pair's two columns, side by side in memory, in one load; rows and columns in the padding
 * not), on odd ones 3x3 at stride 1 with any channels (two output rows from one column of 4
 * input rows; an odd last row of a band or of the image alone). */
static void conv_case(bool depthwise, bool residual, bool big, bool pointwise, bool stem, bool mnv2) {
    RtQConv2d g;
    memset(&g, 0, sizeof g);
    g.n = rng_range(1, 2);
    if (depthwise) {
        /* past 64 channels half the time: the AVX-512 kernel's blocks of 64 and a part block */
        g.c = g.m = g.group = rng_range(1, rng_u32() % 2 ? 40 : 150);
    } else {
        g.group = big ? 1 : rng_range(1, 2);
        g.c = g.group * (big ? rng_range(4 * RT_QGEMM_AVX2_KC / 9 + 1, RT_QCONV_COPY_MAX / (RT_QGEMM_MR * 9) / 4 * 4)
                             : rng_range(1, 37));
        g.m = g.group * rng_range(1, 45);
    }
    g.h = rng_range(1, 9), g.w = rng_range(1, depthwise ? 3 * RT_QDW_PIX : 9); /* rows of chunks */
    g.kh = rng_range(1, depthwise ? 5 : 3), g.kw = rng_range(1, depthwise ? 5 : 3);
    g.sh = rng_range(1, 2), g.sw = rng_range(1, 2), g.dh = rng_range(1, 2), g.dw = rng_range(1, 2);
    if (big) g.kh = g.kw = 3, g.dh = g.dw = 1;
    if (mnv2 && rng_u32() % 2 == 0) {
        g.c = g.m = g.group = 32;
        g.sw = 1;
        if (rng_u32() % 2) g.kh = g.kw = 3, g.dh = g.dw = 1;
    } else if (mnv2) {
        g.kh = g.kw = 3, g.sh = 1, g.dh = g.dw = 1; /* sw 1 or 2 */
        g.h = rng_range(1, 36); /* past two bands of RT_QDW_BAND (16) rows */
    }
    if (pointwise) { /* 1x1 layers: bands of row tiles (rt_qconv2d, up to RT_QCONV_BAND_C4
                      * blocks of 4 channels) and single tiles past them, full and part panels */
        static const int64_t ms[] = {16, 24, 32, 48, 64, 96};
        g.group = 1;
        g.c = 4 * rng_range(1, 80);
        g.m = rng_u32() % 2 ? ms[rng_u32() % 6] : rng_range(1, 100);
        g.h = rng_range(1, 14), g.w = rng_range(1, 14);
        g.kh = g.kw = g.sh = g.sw = g.dh = g.dw = 1;
    }
    if (stem) {
        g.group = 1;
        g.c = rng_range(1, 4);
        g.m = rng_range(1, 70);
        g.kh = g.kw = rng_u32() % 2 ? 7 : 3;
        g.sh = g.sw = 2, g.dh = g.dw = 1;
        g.h = rng_range(g.kh, 20), g.w = rng_range(g.kw, 90);
    }
    int64_t ekh = (g.kh - 1) * g.dh + 1, ekw = (g.kw - 1) * g.dw + 1;
    g.ph = pointwise ? 0 : rng_range(0, ekh - 1), g.pw = pointwise ? 0 : rng_range(0, ekw - 1);
    if (stem) g.ph = g.pw = g.kh / 2;
    if (g.h + 2 * g.ph < ekh) g.h = ekh;
    if (g.w + 2 * g.pw < ekw) g.w = ekw;
    g.oh = (g.h + 2 * g.ph - ekh) / g.sh + 1, g.ow = (g.w + 2 * g.pw - ekw) / g.sw + 1;
    int64_t cg = g.c / g.group, mg = g.m / g.group, taps = g.kh * g.kw;
    int64_t nx = g.n * g.h * g.w * g.c, ny = g.n * g.oh * g.ow * g.m, nw = g.m * taps * cg;
    int32_t x_zp = (int32_t)rng_range(0, 255);
    uint8_t *x = rand_u8(nx), *r = residual ? rand_u8(ny) : NULL;
    int8_t *w = malloc((size_t)nw);
    int32_t *bias = malloc((size_t)g.m * 4), *kbias = malloc((size_t)g.m * 4);
    int32_t *mult = malloc((size_t)g.m * 4), *rmult = malloc((size_t)g.m * 4);
    uint8_t *shift = malloc((size_t)g.m);
    cr_assert(w && bias && kbias && mult && rmult && shift);
    for (int64_t i = 0; i < nw; i++) w[i] = (int8_t)rng_range(-128, 127);
    rand_requant(g.m, mult, rmult, shift);
    RtQRequant q = {kbias, mult, residual ? rmult : NULL, shift, (int32_t)rng_range(0, 255),
                    (int32_t)rng_range(0, 255), 0, 255};
    q.lo = (int32_t)rng_range(0, 100), q.hi = (int32_t)rng_range(155, 255);
    if (rng_range(0, 4) == 0) /* an empty interval (a Clip with min > max): every output hi */
        q.lo = (int32_t)rng_range(130, 255), q.hi = (int32_t)rng_range(0, 120);
    for (int64_t m = 0; m < g.m; m++) { /* the zero-point correction, as quantize.c folds it */
        int64_t sum = 0;
        for (int64_t k = 0; k < taps * cg; k++) sum += w[m * taps * cg + k];
        bias[m] = (int32_t)rng_range(-20000, 20000);
        kbias[m] = bias[m] - x_zp * (int32_t)sum;
    }
    uint8_t *want = poisoned((size_t)ny), *got = poisoned((size_t)ny);
    for (int64_t b = 0; b < g.n; b++)
        for (int64_t oy = 0; oy < g.oh; oy++)
            for (int64_t ox = 0; ox < g.ow; ox++)
                for (int64_t m = 0; m < g.m; m++) {
                    int64_t gi = m / mg, acc = bias[m], o = ((b * g.oh + oy) * g.ow + ox) * g.m + m;
                    for (int64_t ky = 0; ky < g.kh; ky++)
                        for (int64_t kx = 0; kx < g.kw; kx++) {
                            int64_t iy = oy * g.sh - g.ph + ky * g.dh, ix = ox * g.sw - g.pw + kx * g.dw;
                            if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                            for (int64_t c = 0; c < cg; c++)
                                acc += (x[((b * g.h + iy) * g.w + ix) * g.c + gi * cg + c] - x_zp) *
                                       w[(m * taps + ky * g.kw + kx) * cg + c];
                        }
                    int64_t t = acc * mult[m] + (r ? (int64_t)(r[o] - q.r_zp) * rmult[m] : 0);
                    want[o] = (uint8_t)ref_requant(t, shift[m], q.y_zp, q.lo, q.hi);
                }
    int8_t *wp;
    if (depthwise) { /* (taps, C) */
        wp = malloc((size_t)nw);
        cr_assert(wp);
        for (int64_t c = 0; c < g.c; c++)
            for (int64_t t = 0; t < taps; t++) wp[t * g.c + c] = w[c * taps + t];
        rt_qdwconv2d(&g, x, x_zp, wp, &q, r, got);
    } else {
        wp = pack(w, g.m, g.group, taps, cg, &g.c4, &g.np);
        rt_qconv2d(&g, x, x_zp, wp, &q, r, got);
    }
    char what[160];
    snprintf(what, sizeof what, "%sconv n=%lld %lldx%lldx%lld -> %lld, group %lld, k %lldx%lld%s",
             depthwise ? "depthwise " : "", (long long)g.n, (long long)g.h, (long long)g.w,
             (long long)g.c, (long long)g.m, (long long)g.group, (long long)g.kh, (long long)g.kw,
             residual ? ", residual" : "");
    check_bytes(got, want, ny, what);
    free(x), free(r), free(w), free(wp), free(bias), free(kbias), free(mult), free(rmult);
    free(shift), free(want), free(got);
}

Test(rt_qconv, convolutions_match_naive_loops_byte_for_byte) {
    say_isa();
    for (int rep = 0; rep < 60; rep++) {
        rng_init();
        conv_case(false, rep % 3 == 0, false, false, false, false);
    }
    for (int rep = 0; rep < 4; rep++) {
        rng_init();
        conv_case(false, rep % 2 == 0, true, false, false, false);
    }
}

Test(rt_qconv, rgb_stems_match_naive_loops_byte_for_byte) {
    say_isa();
    for (int rep = 0; rep < 16; rep++) {
        rng_init();
        conv_case(false, rep % 4 == 0, false, false, true, false);
    }
}

Test(rt_qconv, pointwise_convolutions_match_naive_loops_byte_for_byte) {
    say_isa();
    for (int rep = 0; rep < 40; rep++) {
        rng_init();
        conv_case(false, rep % 2 == 0, false, true, false, false);
    }
}

Test(rt_qconv, depthwise_convolutions_match_naive_loops_byte_for_byte) {
    say_isa();
    for (int rep = 0; rep < 40; rep++) {
        rng_init();
        conv_case(true, rep % 2 == 0, false, false, false, false);
    }
}

Test(rt_qconv, mobilenet_depthwise_forms_match_naive_loops_byte_for_byte) {
    say_isa();
    for (int rep = 0; rep < 48; rep++) {
        rng_init();
        conv_case(true, rep % 3 == 0, false, false, false, true);
    }
}

Test(rt_qconv, row_gemm_matches_naive_loops_on_remainder_shapes) {
    say_isa();
    for (int rep = 0; rep < 40; rep++) {
        rng_init();
        int64_t rows = rng_range(1, 27), K = rng_range(1, 70), N = rng_range(1, 70);
        if (rep % 8 == 7) K = rng_range(4 * RT_QGEMM_AVX2_KC + 1, 4 * RT_QGEMM_AVX2_KC + 300);
        int32_t a_zp = (int32_t)rng_range(0, 255);
        uint8_t *a = rand_u8(rows * K);
        int8_t *w = malloc((size_t)(N * K));
        int32_t *bias = malloc((size_t)N * 4), *kbias = malloc((size_t)N * 4);
        int32_t *mult = malloc((size_t)N * 4);
        uint8_t *shift = malloc((size_t)N);
        cr_assert(w && bias && kbias && mult && shift);
        for (int64_t i = 0; i < N * K; i++) w[i] = (int8_t)rng_range(-128, 127);
        rand_requant(N, mult, NULL, shift);
        for (int64_t n = 0; n < N; n++) {
            int64_t sum = 0;
            for (int64_t k = 0; k < K; k++) sum += w[n * K + k];
            bias[n] = (int32_t)rng_range(-20000, 20000);
            kbias[n] = bias[n] - a_zp * (int32_t)sum;
        }
        RtQRequant q = {kbias, mult, NULL, shift, (int32_t)rng_range(0, 255), 0, 0, 255};
        uint8_t *want = poisoned((size_t)(rows * N)), *got = poisoned((size_t)(rows * N));
        for (int64_t i = 0; i < rows; i++)
            for (int64_t n = 0; n < N; n++) {
                int64_t acc = bias[n];
                for (int64_t k = 0; k < K; k++) acc += (a[i * K + k] - a_zp) * w[n * K + k];
                want[i * N + n] = (uint8_t)ref_requant(acc * mult[n], shift[n], q.y_zp, 0, 255);
            }
        int64_t c4, np;
        int8_t *wp = pack(w, N, 1, 1, K, &c4, &np);
        rt_qgemm_rows(rows, K, c4, np, N, a, a_zp, wp, &q, got);
        char what[96];
        snprintf(what, sizeof what, "gemm %lldx%lld @ %lld", (long long)rows, (long long)K, (long long)N);
        check_bytes(got, want, rows * N, what);
        free(a), free(w), free(wp), free(bias), free(kbias), free(mult), free(shift), free(want), free(got);
    }
}

Test(rt_qconv, add_pools_and_tables_match_naive_loops) {
    say_isa();
    for (int rep = 0; rep < 20; rep++) {
        rng_init();
        int64_t n = rng_range(1, 2), h = rng_range(1, 7), w = rng_range(1, 7), C = rng_range(1, 40);
        int64_t cnt = n * h * w * C;
        uint8_t *a = rand_u8(cnt), *b = rand_u8(cnt), *tab = rand_u8(256);
        int32_t az = (int32_t)rng_range(0, 255), bz = (int32_t)rng_range(0, 255), yz = (int32_t)rng_range(0, 255);
        int32_t ma = (int32_t)(rng_u32() >> 2), mb = (int32_t)(rng_u32() >> 2);
        int shift = (int)rng_range(28, 33);
        uint8_t *want = poisoned((size_t)cnt), *got = poisoned((size_t)cnt);
        for (int64_t i = 0; i < cnt; i++)
            want[i] = (uint8_t)ref_requant((int64_t)(a[i] - az) * ma + (int64_t)(b[i] - bz) * mb, shift, yz, 0, 255);
        rt_qadd(cnt, a, az, ma, b, bz, mb, shift, yz, 0, 255, got);
        check_bytes(got, want, cnt, "add");
        for (int64_t i = 0; i < cnt; i++) want[i] = tab[a[i]];
        memset(got, POISON_BYTE, (size_t)cnt);
        rt_qlut(cnt, a, tab, got);
        check_bytes(got, want, cnt, "table");
        /* global average pool */
        int32_t m = (int32_t)(rng_u32() >> 1) | (1 << 29);
        int gs = (int)rng_range(30, 34);
        memset(got, POISON_BYTE, (size_t)cnt);
        for (int64_t bb = 0; bb < n; bb++)
            for (int64_t c = 0; c < C; c++) {
                int64_t s = 0;
                for (int64_t p = 0; p < h * w; p++) s += a[(bb * h * w + p) * C + c] - az;
                want[bb * C + c] = (uint8_t)ref_requant(s * m, gs, yz, 0, 255);
            }
        rt_qgavgpool(n, h * w, C, a, az, m, gs, yz, got);
        check_bytes(got, want, n * C, "global average pool");
        /* 3x3 stride 2 max pool, pad 1 */
        RtQConv2d g = {n, h, w, C, (h + 2 - 3) / 2 + 1, (w + 2 - 3) / 2 + 1, C, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, 0};
        if (h < 2 || w < 2) g.kh = g.kw = 1, g.ph = g.pw = 0, g.oh = (h - 1) / 2 + 1, g.ow = (w - 1) / 2 + 1;
        memset(got, POISON_BYTE, (size_t)cnt);
        for (int64_t bb = 0; bb < n; bb++)
            for (int64_t oy = 0; oy < g.oh; oy++)
                for (int64_t ox = 0; ox < g.ow; ox++)
                    for (int64_t c = 0; c < C; c++) {
                        int best = -1;
                        for (int64_t ky = 0; ky < g.kh; ky++)
                            for (int64_t kx = 0; kx < g.kw; kx++) {
                                int64_t iy = oy * 2 - g.ph + ky, ix = ox * 2 - g.pw + kx;
                                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                                int v = a[((bb * h + iy) * w + ix) * C + c];
                                if (v > best) best = v;
                            }
                        want[((bb * g.oh + oy) * g.ow + ox) * C + c] = (uint8_t)best;
                    }
        rt_qmaxpool2d(&g, a, got);
        check_bytes(got, want, n * g.oh * g.ow * C, "max pool");
        free(a), free(b), free(tab), free(want), free(got);
    }
}

/* QMul with b repeated over the middle dim: inner widths around the 16- and 64-byte vectors
 * (1 is NCHW's per-channel scale), shifts across the plan's range (qplan_multiplier: up to
 * 45), a poisoned output whose every byte must be written. */
Test(rt_qconv, broadcast_mul_matches_naive_loops) {
    say_isa();
    static const int64_t inners[] = {1, 3, 15, 16, 17, 32, 63, 64, 65, 96, 144, 200};
    for (int rep = 0; rep < 36; rep++) {
        rng_init();
        int64_t outer = rng_range(1, 3), mid = rng_range(1, 23), inner = inners[rep % 12];
        int64_t cnt = outer * mid * inner;
        uint8_t *a = rand_u8(cnt), *b = rand_u8(outer * inner);
        uint8_t *want = poisoned((size_t)cnt), *got = poisoned((size_t)cnt);
        int32_t az = (int32_t)rng_range(0, 255), bz = (int32_t)rng_range(0, 255), yz = (int32_t)rng_range(0, 255);
        int32_t m = (int32_t)(rng_u32() >> 1) | (1 << 30);
        int shift = (int)rng_range(rep % 3 == 0 ? 36 : 20, 45);
        for (int64_t o = 0; o < outer; o++)
            for (int64_t p = 0; p < mid; p++)
                for (int64_t i = 0; i < inner; i++) {
                    int64_t k = (o * mid + p) * inner + i;
                    int64_t t = (int64_t)(a[k] - az) * (b[o * inner + i] - bz) * m;
                    want[k] = (uint8_t)ref_requant(t, shift, yz, 0, 255);
                }
        rt_qmul_bcast(outer, mid, inner, a, az, b, bz, m, shift, yz, got);
        check_bytes(got, want, cnt, "broadcast mul");
        free(a), free(b), free(want), free(got);
    }
}
