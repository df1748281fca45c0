/* qconv_gpu.cu: the int8 convolution kernel (kc_qconv of kc_qconv.cuh) against the C
 * target's integer formula on the host, byte for byte, on a GPU: fresh random uint8 inputs,
 * int8 weights, zero points, biases, multipliers and shifts (1 to 42), outputs poisoned before each
 * run, on shapes that take every path: the cp.async form (C % 16 == 0) with 64 and 128
 * channel blocks, the 4-byte and byte gathers, the byte gather through the reduction table
 * (an RGB 7x7 stem, Kp <= KC_QKTAB) and without it (Kp past the table), pixel counts that
 * are not multiples of the 128-pixel tile, channel counts in 16s (the shared-memory
 * epilogue, with and without a residual, partial column blocks) and not (the fragment
 * epilogue), an output one byte off 16 (the fragment epilogue), strides, pads, dilations;
 * requantization terms drawn at random (shifts 1 to 42: kc_qrequant_k, and kc_qrequant_hi
 * from 16 on) and as on ResNet-50's residual layers (shift 30 or 31, residual multipliers of
 * 2^30 and more: kc_qrequant_hi with the residual byte scaled), and layers of more tiles
 * than the device holds blocks (the persistent form's tile walk); the 1x1 form (kc_qconv1x1)
 * on remainder rows, partial column tiles, strides, C below Kp and tile walks; the folded
 * stem (kc_qconv_f32nchw: a float32 NCHW input quantized in the gather, ties of the quotient
 * planted) on odd sizes, pads, strides, dilations and channel counts 1 to 5, and its
 * quantization (kc_qquant_f32) against the C runtime's on the host (--host: that alone),
 * the quantize pass four pixels a thread where H W is a multiple of 4 (C 1 to 3);
 * -DKC_QSTEM_GATHER=1 tests its other form (the quantization in the table gather);
 * -DKC_Q1BM64_KMIN=64 (or 0) puts every 1x1-form layer on 64-row (128-row) tiles. The
 * uint8 max pool (kc_qmaxpool): 3x3 windows (the fixed-window kernel), 2x2 and C in bytes.
 * The cp.async form's 256-pixel tiles (KC_QWIDE) on small shapes, their block threshold
 * lowered (kc_qwide_min), and inputs without a zero point (-DKC_QADDR=1 -DKC_QZFILL=1 tests
 * the zero-filled copies). Built for sm_90a and run on a Hopper, every convolution case runs
 * three times: with the wgmma and halo forms (kc_qconv_wg, kc_qhalo), with the wgmma form on
 * the 1x1 form's layers too (kc_qwg_mode 2), and without them (the tiled kernels); --time
 * times each shape each way.
 * With --time also times ResNet-50's layer1 1x1 convolutions and its stem at batch 256
 * (CUDA events, median of 20), its input's quantize pass one and four pixels a thread, and
 * its int8 max pool by the loop and the fixed-window kernels.
 * usage: nvcc -O3 -arch=sm_90a -I runtime/cuda tests/cuda/qconv_gpu.cu -o qconv_gpu
 *        ./qconv_gpu [--time]; ends with "N passed, N failed". --ncu runs ResNet-50's int8
 *        stem (batch 256) alone, for a profiler, --ncu1x1 its layer1 conv3 (the 1x1 form),
 *        --ncu3x3 its layer2 conv2 (the wgmma form), --ncul3 / --ncul4 its layer3 / layer4
 *        conv3 (the 1x1 form at K 256, the wgmma form at K 512), --ncuc1 its layer1 conv1,
 *        each printing its median time (a quick A/B of two builds);
 *        --timestem checks the stem form on five shapes and times it at batch 256.
 * Programmatic dependent launch (kc_qlaunch): "late" cases give the kernel its input (and
 * residual) from a kernel launched just before on the same stream that lets it start at once
 * and writes after a spin (late_copy2): a kernel that read before its kc_pdl_sync would
 * read the poison left there. */
#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "gpu_test.h"
#include "kc_qconv.cuh"
#include "qconv_ref.h"

struct Dev {
    uint8_t *x, *r, *ybase, *y;
    int8_t *w;
    int32_t *rq;
};

static Dev upload(const Case &c, const KcQConv &p, const std::vector<uint8_t> &x,
                  const std::vector<int8_t> &w, const std::vector<int32_t> &rq,
                  const std::vector<uint8_t> &r, size_t ny) {
    Dev d;
    CK(cudaMalloc(&d.x, x.size()));
    CK(cudaMalloc(&d.w, w.size()));
    CK(cudaMalloc(&d.rq, rq.size() * 4));
    CK(cudaMalloc(&d.r, ny));
    CK(cudaMalloc(&d.ybase, ny + 16));
    d.y = d.ybase + c.yoff;
    CK(cudaMemcpy(d.x, x.data(), x.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.w, w.data(), w.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.rq, rq.data(), rq.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.r, r.data(), ny, cudaMemcpyHostToDevice));
    (void)p;
    return d;
}

static void release(Dev &d) {
    cudaFree(d.x), cudaFree(d.w), cudaFree(d.rq), cudaFree(d.r), cudaFree(d.ybase);
}

static const char *mode_tag = ""; /* "wg ": the case ran with the wgmma form on */

/* EMPTY: the clamp's interval empty (lo > hi, a Clip with min > max): every output is hi;
 * LATE: x and the residual written by the kernel launched just before (LateInputs) */
static void run_case(const Case &c, bool empty = false, bool late = false) {
    KcQConv p = params(c);
    if (empty) p.lo = irand(130, 255), p.hi = irand(0, 120);
    size_t nx = (size_t)c.N * c.H * c.W * c.C, ny = (size_t)c.N * p.OH * p.OW * c.M;
    std::vector<uint8_t> x(nx), r(ny), y(ny), want(ny);
    std::vector<int8_t> w((size_t)c.M * p.Kp);
    std::vector<int32_t> rq(4 * (size_t)c.M);
    fill(c, p, x, w, rq, r);
    reference(c, p, x, w, rq, r, want);
    Dev d = upload(c, p, x, w, rq, r, ny);
    CK(cudaMemset(d.ybase, 0xa5, ny + 16)); /* poison: unwritten outputs show up */
    LateInputs li(late, d.x, nx, c.res ? d.r : NULL, c.res ? ny : 0);
    int rc = kc_qconv(li.s, d.x, d.w, d.rq, c.res ? d.r : NULL, d.y, &p);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(y.data(), d.y, ny, cudaMemcpyDeviceToHost));
    std::vector<uint8_t> guard(16);
    CK(cudaMemcpy(guard.data(), d.ybase + c.yoff + ny, 16 - c.yoff, cudaMemcpyDeviceToHost));
    release(d);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < ny; i++)
        if (y[i] != want[i] && !bad++) first = i;
    bool spill = false;
    for (int i = 0; i < 16 - c.yoff; i++) spill |= guard[i] != 0xa5;
    int distinct = 0;
    bool seen[256] = {false};
    for (size_t i = 0; i < ny; i++) distinct += !seen[want[i]], seen[want[i]] = true;
    if (rc == KC_OK && !bad && !spill && (empty ? distinct == 1 : distinct > 16)) {
        passed++;
        printf("ok   %s%s%s: %dx%dx%dx%d -> %dx%dx%dx%d, %dx%d s%d p%d d%d%s%s, %zu bytes\n",
               mode_tag, late ? "late " : "", c.what, c.N, c.H, c.W, c.C, c.N, p.OH, p.OW, c.M, c.R,
               c.S, c.sh, c.ph, c.dh, c.res ? " +residual" : "", empty ? ", empty clamp" : "", ny);
    } else {
        failed++;
        printf("FAIL %s%s%s: rc %d, %zu of %zu bytes differ (first at %zu: %d, want %d), %s, %d "
               "distinct values\n",
               mode_tag, late ? "late " : "", c.what, rc, bad, ny, first, bad ? y[first] : 0,
               bad ? want[first] : 0, spill ? "wrote past the end" : "no spill", distinct);
    }
}

/* QuantizeLinear float32 -> uint8 as the C runtime computes it (rt_quantize_f32_8bit) */
static uint8_t quantize_ref(float v, float s, int z) {
    double d = nearbyint((double)v / (double)s) + (double)z;
    return (uint8_t)(int32_t)(d < 0.0 ? 0.0 : d > 255.0 ? 255.0 : d);
}

/* float inputs for a folded QuantizeLinear of scale s: a third drawn over the range (and past
 * both saturation ends), a third at the quotient's half-integers (x = (k + 1/2) s rounded to
 * float: ties where exact, else values the fast path must leave to the division), a third one
 * float step off those */
static float draw_f32(float s, int z) {
    int pick = irand(0, 2);
    float lo = (float)(-z - 20) * s, hi = (float)(275 - z) * s;
    if (pick == 0) return lo + (hi - lo) * (float)(urand32() >> 8) / 16777216.0f;
    float t = (float)(((double)irand(-z - 3, 258 - z) + 0.5) * (double)s);
    return pick == 1 ? t : nextafterf(t, irand(0, 1) ? INFINITY : -INFINITY);
}

/* kc_qquant_f32 (its host copy) against the C runtime's quotient in double on values of
 * draw_f32 for scales with few mantissa bits (many exact ties), 400 drawn ones (one near-tie
 * value in a thousand has its float product on the other side of the half-integer: a margin
 * of 0 or |q| 2^-24 fails here) and on the ends: 0, subnormals, huge values, infinities,
 * scales whose reciprocal is subnormal or infinite. One line, counted as one case. */
static void check_qquant(void) {
    std::vector<float> scales = {0.0234375f, 0.5f, 1.0f, 3.0f, 0.0186532f, 0.0171247f, 1.3e-5f,
                                 7.1e4f, 2.5e-39f, 3.0e38f};
    for (int i = 0; i < 400; i++) scales.push_back(1e-3f + 0.2f * (float)(urand32() >> 8) / 16777216.0f);
    size_t n = 0, bad = 0, slow = 0;
    for (float s : scales)
        for (int z : {0, 128, 255}) {
            float inv, rel;
            kc_qquant_terms(s, inv, rel);
            for (int i = 0; i < 3000; i++) {
                float v = draw_f32(s, z);
                if (i < 12) {
                    const float ends[] = {0.0f, -0.0f, 1e-45f, -1e-45f, 1e-40f, 3.4e38f,
                                          -3.4e38f, INFINITY, -INFINITY, 1e30f, s, -s};
                    v = ends[i];
                }
                uint32_t got = kc_qquant_f32(v, inv, rel, (double)s, (float)z);
                float q = v * inv, r = rintf(q);
                slow += !(fabsf(fabsf(q - r) - 0.5f) > fabsf(q) * rel);
                n++;
                if (got != quantize_ref(v, s, z) && !bad++)
                    printf("  quantize %.9g / %.9g + %d: %u, want %u\n", v, s, z, got,
                           quantize_ref(v, s, z));
            }
        }
    bool ok = !bad && slow > n / 50 && slow < n;
    ok ? passed++ : failed++;
    printf("%s kc_qquant_f32 on the host: %zu values, %zu by the division, %zu differ\n",
           ok ? "ok  " : "FAIL", n, slow, bad);
}

/* The folded stem (kc_qconv_f32nchw): a float32 NCHW input quantized in the gather against
 * the C runtime's QuantizeLinear, then the layer's reference, byte for byte. zp false: no
 * zero point tensor (x_zp 0). */
static void run_f32_case(const Case &c, float scale, bool has_zp) {
    KcQConv p = params(c);
    if (!has_zp) p.x_zp = 0;
    size_t nx = (size_t)c.N * c.H * c.W * c.C, ny = (size_t)c.N * p.OH * p.OW * c.M;
    std::vector<uint8_t> x(nx), r(ny), y(ny), want(ny);
    std::vector<int8_t> w((size_t)c.M * p.Kp);
    std::vector<int32_t> rq(4 * (size_t)c.M);
    fill(c, p, x, w, rq, r);
    std::vector<float> xf(nx); /* NCHW */
    for (int n = 0; n < c.N; n++)
        for (int ch = 0; ch < c.C; ch++)
            for (int i = 0; i < c.H * c.W; i++) {
                float v = draw_f32(scale, p.x_zp);
                xf[((size_t)n * c.C + ch) * c.H * c.W + i] = v;
                x[((size_t)n * c.H * c.W + i) * c.C + ch] = quantize_ref(v, scale, p.x_zp);
            }
    reference(c, p, x, w, rq, r, want);
    Dev d = upload(c, p, x, w, rq, r, ny);
    float *dxf, *ds;
    uint8_t *dz, zb = (uint8_t)p.x_zp;
    CK(cudaMalloc(&dxf, nx * 4));
    CK(cudaMalloc(&ds, 4));
    CK(cudaMalloc(&dz, 1));
    CK(cudaMemcpy(dxf, xf.data(), nx * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(ds, &scale, 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dz, &zb, 1, cudaMemcpyHostToDevice));
    CK(cudaMemset(d.ybase, 0xa5, ny + 16));
    uint8_t *dq; /* the room for the quantized input (KC_QSTEM_GATHER 0, the default) */
    CK(cudaMalloc(&dq, nx));
    int rc = kc_qconv_f32nchw(0, dxf, ds, has_zp ? dz : NULL, dq, d.w, d.rq, c.res ? d.r : NULL, d.y, &p);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(y.data(), d.y, ny, cudaMemcpyDeviceToHost));
    std::vector<uint8_t> guard(16);
    CK(cudaMemcpy(guard.data(), d.ybase + c.yoff + ny, 16 - c.yoff, cudaMemcpyDeviceToHost));
    release(d);
    cudaFree(dxf), cudaFree(ds), cudaFree(dz), cudaFree(dq);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < ny; i++)
        if (y[i] != want[i] && !bad++) first = i;
    bool spill = false;
    for (int i = 0; i < 16 - c.yoff; i++) spill |= guard[i] != 0xa5;
    int distinct = 0;
    bool seen[256] = {false};
    for (size_t i = 0; i < ny; i++) distinct += !seen[want[i]], seen[want[i]] = true;
    bool ok = rc == KC_OK && !bad && !spill && distinct > 16;
    ok ? passed++ : failed++;
    printf("%s %s (float32 NCHW, scale %g%s): %dx%dx%dx%d -> %dx%dx%dx%d, %dx%d s%d p%d d%d%s: "
           "%zu of %zu bytes differ%s, %d distinct\n", ok ? "ok  " : "FAIL", c.what, scale,
           has_zp ? "" : ", no zero point", c.N, c.C, c.H, c.W, c.N, p.OH, p.OW, c.M, c.R, c.S,
           c.sh, c.ph, c.dh, c.res ? " +residual" : "", bad, ny, spill ? ", wrote past the end" : "",
           distinct);
    if (bad) printf("  first at %zu: %d, want %d\n", first, y[first], want[first]);
}

/* kc_qhi_terms and kc_qrequant_hi (their host copies) against rt_qrequant1's formula in
 * 128-bit arithmetic, at the ends of every range the requantization admits: acc and the
 * multipliers at the int32 limits, the residual byte and the zero points at 0 and 255, every
 * shift 1..62; where kc_qhi_terms takes the channel (the output zero point folded into k0)
 * the byte must be the formula's. One line, counted as one case. */
static void check_hi_terms(void) {
    const int32_t big[] = {INT32_MIN, INT32_MIN + 1, -65536, -1, 0, 1, 65535, INT32_MAX};
    size_t n = 0, taken = 0, bad = 0;
    for (int shift = 1; shift <= 62; shift++)
        for (int32_t mult : big) {
            int32_t mults[4] = {mult, shift < 32 ? -(1 << (shift - 1)) : mult,
                                shift < 32 ? (1 << (shift - 1)) - 1 : mult, (int32_t)urand32()};
            for (int32_t m : mults)
                for (int res = 0; res < 2; res++)
                    for (int32_t rmult : {INT32_MIN, INT32_MAX, (int32_t)urand32()})
                        for (int32_t r_zp : {0, 255})
                            for (int32_t y_zp : {0, 255, 128})
                                for (int32_t acc : big)
                                    for (int32_t r : {0, 255, irand(0, 255)}) {
                                        int32_t rm = res ? rmult : 0, lo = irand(0, 1) ? 0 : y_zp, hi = irand(0, 3) ? 255 : irand(0, 255);
                                        int64_t k0 = ((int64_t)1 << (shift - 1)) - (int64_t)(res ? r_zp : 0) * rm;
                                        int32_t mh = m, rk = 0, s32 = 0;
                                        int64_t kh = k0;
                                        n++;
                                        if (!kc_qhi_terms(mh, kh, rk, s32, shift, y_zp)) continue;
                                        taken++;
                                        int32_t got = res ? kc_qrequant_hi<true>(acc, mh, kh, r, rm, rk, s32, lo, hi)
                                                          : kc_qrequant_hi<false>(acc, mh, kh, r, rm, rk, s32, lo, hi);
                                        if (s32 == 0 && res)
                                            got |= (got != kc_qrequant_hi<true, true>(acc, mh, kh, r, rm, rk, s32, lo, hi)) << 16;
                                        __int128 t = (__int128)acc * m + (__int128)(res ? r - r_zp : 0) * rm;
                                        __int128 v = ((t + ((__int128)1 << (shift - 1))) >> shift) + y_zp;
                                        v = v > lo ? v : lo;
                                        int32_t want = (int32_t)(v < hi ? v : hi);
                                        if (got != want && !bad++)
                                            printf("  hi terms: shift %d mult %d acc %d r %d rmult %d r_zp %d y_zp %d: %d, want %d\n",
                                                   shift, m, acc, r, rm, r_zp, y_zp, got, want);
                                    }
        }
    if (!bad && taken > n / 4) passed++;
    else failed++;
    printf("%s kc_qhi_terms + kc_qrequant_hi on the host: %zu of %zu term sets taken, %zu differ\n",
           bad || taken <= n / 4 ? "FAIL" : "ok  ", taken, n, bad);
}

/* median milliseconds of 20 runs of one convolution (random data, no check) */
static float time_case(const Case &c) {
    KcQConv p = params(c);
    size_t nx = (size_t)c.N * c.H * c.W * c.C, ny = (size_t)c.N * p.OH * p.OW * c.M;
    std::vector<uint8_t> x(nx), r(ny);
    std::vector<int8_t> w((size_t)c.M * p.Kp);
    std::vector<int32_t> rq(4 * (size_t)c.M);
    fill(c, p, x, w, rq, r);
    Dev d = upload(c, p, x, w, rq, r, ny);
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> ms;
    for (int i = 0; i < 23; i++) {
        CK(cudaEventRecord(a));
        kc_qconv(0, d.x, d.w, d.rq, c.res ? d.r : NULL, d.y, &p);
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float t;
        CK(cudaEventElapsedTime(&t, a, b));
        if (i >= 3) ms.push_back(t);
    }
    release(d);
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

/* kc_qmaxpool against the host's max over the taps inside (rt_qmaxpool2d), byte for byte:
 * 3x3 by the fixed-window kernel, other windows or C not in 16s by the loop kernels */
static void qmaxpool_case(int N, int H, int W, int C, int R, int st, int pad, bool late = false) {
    KcQConv p = {};
    p.N = N, p.H = H, p.W = W, p.C = C, p.M = C, p.R = p.S = R, p.sh = p.sw = st;
    p.ph = p.pw = pad, p.dh = p.dw = 1;
    p.OH = (H + 2 * pad - R) / st + 1, p.OW = (W + 2 * pad - R) / st + 1;
    size_t nx = (size_t)N * H * W * C, ny = (size_t)N * p.OH * p.OW * C;
    std::vector<uint8_t> x(nx), y(ny), want(ny);
    for (size_t i = 0; i < nx; i++) x[i] = (uint8_t)(rand() & 255);
    for (int n = 0; n < N; n++)
        for (int oy = 0; oy < p.OH; oy++)
            for (int ox = 0; ox < p.OW; ox++)
                for (int c = 0; c < C; c++) {
                    uint8_t m = 0;
                    for (int ky = 0; ky < R; ky++)
                        for (int kx = 0; kx < R; kx++) {
                            int iy = oy * st - pad + ky, ix = ox * st - pad + kx;
                            if (iy >= 0 && iy < H && ix >= 0 && ix < W)
                                m = std::max(m, x[((size_t)(n * H + iy) * W + ix) * C + c]);
                        }
                    want[((size_t)(n * p.OH + oy) * p.OW + ox) * C + c] = m;
                }
    uint8_t *dx, *dy;
    CK(cudaMalloc(&dx, nx));
    CK(cudaMalloc(&dy, ny));
    CK(cudaMemcpy(dx, x.data(), nx, cudaMemcpyHostToDevice));
    CK(cudaMemset(dy, 0xa5, ny));
    LateInputs li(late, dx, nx);
    int rc = kc_qmaxpool(li.s, dx, dy, &p);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(y.data(), dy, ny, cudaMemcpyDeviceToHost));
    cudaFree(dx), cudaFree(dy);
    size_t bad = rc != KC_OK;
    for (size_t i = 0; i < ny; i++) bad += y[i] != want[i];
    if (bad) failed++;
    else passed++;
    printf("%s %sqmaxpool N %d %dx%d C %d %dx%d stride %d pad %d: %zu bytes differ\n",
           bad ? "FAIL" : "ok  ", late ? "late " : "", N, H, W, C, R, R, st, pad, bad);
}

/* median milliseconds of 20 runs of f after 3 */
template <typename F>
static float time_f(F f) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> ms;
    for (int i = 0; i < 23; i++) {
        CK(cudaEventRecord(a));
        f();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float t;
        CK(cudaEventElapsedTime(&t, a, b));
        if (i >= 3) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

/* ResNet-50's batch-256 input quantized into NHWC bytes: one pixel a thread
 * (kc_qnchw_kernel) against four (kc_qnchw4_kernel); 154 MB read, 38.5 MB written */
static void time_qnchw(void) {
    const int64_t N = 256, HW = 224 * 224, pixels = N * HW;
    float *x, *sc;
    uint8_t *y;
    CK(cudaMalloc(&x, pixels * 3 * sizeof(float)));
    CK(cudaMemset(x, 0x3c, pixels * 3 * sizeof(float)));
    CK(cudaMalloc(&sc, sizeof(float)));
    const float s = 0.0186532f;
    CK(cudaMemcpy(sc, &s, sizeof s, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&y, pixels * 3));
    float one = time_f([&] {
        kc_qnchw_kernel<<<kc_grid(pixels), KC_THREADS>>>(x, sc, NULL, y, pixels, 3, HW);
    });
    float four = time_f([&] {
        kc_qnchw4_kernel<3><<<kc_grid(pixels / 4), KC_THREADS>>>(x, sc, NULL, y, pixels / 4, HW);
    });
    double bytes = (double)pixels * 3 * 5;
    printf("time ResNet-50 input quantize b256: 1 pixel a thread %.4f (%.2f TB/s), 4 %.4f ms "
           "(%.2f TB/s)\n", one, bytes / one / 1e9, four, bytes / four / 1e9);
    cudaFree(x), cudaFree(sc), cudaFree(y);
    /* ResNet-50's int8 max pool 3x3/2 after the stem: 205 MB read, 51 MB written */
    KcQConv p = {};
    p.N = 256, p.H = p.W = 112, p.C = p.M = 64, p.R = p.S = 3, p.sh = p.sw = 2;
    p.ph = p.pw = 1, p.dh = p.dw = 1, p.OH = p.OW = 56;
    uint8_t *px, *py;
    CK(cudaMalloc(&px, (size_t)256 * 112 * 112 * 64));
    CK(cudaMemset(px, 0x35, (size_t)256 * 112 * 112 * 64));
    CK(cudaMalloc(&py, (size_t)256 * 56 * 56 * 64));
    int64_t total = (int64_t)256 * 56 * 56 * 64;
    float loop = time_f([&] {
        kc_qmaxpool16_kernel<<<kc_grid(total / 16), KC_THREADS>>>((const uint4 *)(const void *)px,
                                                                  (uint4 *)(void *)py, p);
    });
    float fixed = time_f([&] { kc_qmaxpool(0, px, py, &p); });
    double pb = (double)256 * (112 * 112 + 56 * 56) * 64;
    printf("time ResNet-50 int8 max pool 3x3/2 b256: loop %.4f (%.2f TB/s) fixed 3x3 %.4f ms "
           "(%.2f TB/s)\n", loop, pb / loop / 1e9, fixed, pb / fixed / 1e9);
    cudaFree(px), cudaFree(py);
}

/* ResNet-50's stem at batch 256: --ncu, --timestem and --time run it */
static const Case kc_r50_stem = {"ResNet-50 stem b256", 256, 224, 224, 3, 64, 7, 7, 2, 2, 3, 3, 1, 1, false, 0};

int main(int argc, char **argv) {
    static const Case cases[] = {
        /* what                       N   H   W   C    M  R  S sh sw ph pw dh dw res yoff */
        {"stem, table gather",         2, 23, 21, 3,   64, 7, 7, 2, 2, 3, 3, 1, 1, false, 0},
        {"rgb 3x3, M 24",              1, 17, 19, 3,   24, 3, 3, 1, 1, 1, 1, 1, 1, true, 0},
        {"C 5, 5x5, M 48",             3,  9, 11, 5,   48, 5, 5, 1, 1, 2, 2, 1, 1, true, 0},
        {"C 7, 9x9, Kp past table",    1, 12, 13, 7,   32, 9, 9, 1, 1, 4, 4, 1, 1, false, 0},
        {"C 12, 4-byte gather",        2, 10,  9, 12, 160, 3, 3, 1, 1, 1, 1, 1, 1, true, 0},
        {"1x1 K 64, residual",         2, 13, 11, 64, 256, 1, 1, 1, 1, 0, 0, 1, 1, true, 0},
        {"1x1 K 64, M 48",             1, 15, 15, 64,  48, 1, 1, 1, 1, 0, 0, 1, 1, false, 0},
        {"3x3 C 32 s2 d2, M 136",      2, 19, 17, 32, 136, 3, 3, 2, 2, 2, 2, 2, 2, true, 0},
        {"3x3 C 48, M 80",             1, 14, 14, 48,  80, 3, 3, 1, 1, 1, 1, 1, 1, true, 0},
        {"3x3 C 64 s2, M 128",         2, 16, 16, 64, 128, 3, 3, 2, 2, 1, 1, 1, 1, false, 0},
        {"1x1 C 128, y off 16",        1,  9, 10, 128, 64, 1, 1, 1, 1, 0, 0, 1, 1, true, 1},
        {"stem, y off 16",             1, 11, 12, 3,   64, 7, 7, 2, 2, 3, 3, 1, 1, false, 3},
        {"1x1 K 64, ResNet residual rq", 2, 13, 11, 64, 256, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 1},
        {"1x1 C 128 M 64, ResNet rq",  1,  9, 10, 128, 64, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 1},
        /* more tiles than an H200 holds blocks at once (132 SMs x 2 of 128 channels, x 4 of
         * 64): a KC_QPERSIST block walks several, its residual prefetched (KC_QRPRE) */
        {"1x1 K 64 +res, 512 tiles",  32, 32, 32, 64, 256, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 1},
        {"3x3 C 16 M 64, 576 tiles",  32, 48, 48, 16,  64, 3, 3, 1, 1, 1, 1, 1, 1, true, 0},
        {"1x1 C 128 M 80, 800 tiles",  32, 40, 40, 128, 80, 1, 1, 1, 1, 0, 0, 1, 1, true, 5},
        /* the 1x1 form (kc_qconv1x1: aligned, C and M in 16s, Kp 64 to 256, KC_Q1X1_KMAX;
         * strided 64 and 128, KC_Q1X1_S2_KMAX): pixels not in
         * 128s, partial column tiles, C below Kp (zero chunks), strides (the row gather), its
         * 64- and 128-channel tiles, row tiles walked by several blocks (800 tiles) */
        {"1x1 form C 80 M 208 +res",   3,  7,  9, 80, 208, 1, 1, 1, 1, 0, 0, 1, 1, true, 0},
        {"1x1 form s2 C 256 M 512",    2, 15, 13, 256, 512, 1, 1, 2, 2, 0, 0, 1, 1, false, 0},
        {"1x1 form s2 C 64 M 48 +res", 3, 11, 17, 64, 48, 1, 1, 2, 2, 0, 0, 1, 1, true, 0, 1},
        {"1x1 form C 256 M 64",        2, 14, 14, 256, 64, 1, 1, 1, 1, 0, 0, 1, 1, false, 0},
        {"1x1 form C 128 M 80, 800 tiles", 32, 40, 40, 128, 80, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 1},
        {"1x1 form C 64 M 256, 1000 tiles", 40, 40, 80, 64, 256, 1, 1, 1, 1, 0, 0, 1, 1, true, 0},
        /* Kp 256 (the 1x1 form; strided with -DKC_Q1X1_S2_KMAX=256) and 512 (with
         * -DKC_Q1X1_KMAX=512, else the tiled kernel): ResNet-50's residual layers, C below Kp,
         * 64-channel tiles only at 512, tile walks */
        {"1x1 form C 256 M 1024 +res, ResNet rq", 4, 14, 14, 256, 1024, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 1},
        /* no residual: the output tile in the X tile's own buffer (KC_Q1ALIAS), blocks that walk
         * several row tiles (the buffer the next tile loads into is the one stored from) */
        {"1x1 form C 256 M 256, 800 tiles", 32, 40, 40, 256, 256, 1, 1, 1, 1, 0, 0, 1, 1, false, 0, 2},
        {"1x1 form C 64 M 64, 1000 tiles",  40, 40, 80, 64, 64, 1, 1, 1, 1, 0, 0, 1, 1, false, 0},
        {"1x1 form C 240 M 96 +res",   2,  9, 11, 240, 96, 1, 1, 1, 1, 0, 0, 1, 1, true, 0},
        {"1x1 form C 256 M 128 shifts 16..42 +res, 800 tiles", 32, 40, 40, 256, 128, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 2},
        {"1x1 form s2 C 256 M 512, ResNet rq", 4, 28, 28, 256, 512, 1, 1, 2, 2, 0, 0, 1, 1, false, 0, 1},
        {"1x1 form C 512 M 208 +res, ResNet rq", 2, 7, 9, 512, 208, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 1},
        {"1x1 form C 448 M 64",        3,  5, 13, 448, 64, 1, 1, 1, 1, 0, 0, 1, 1, false, 0},
        /* the forms of the folded requantization (kc_qepi_pair FORM 1 and 2) in both epilogues:
         * the 1x1 form's block table (one form a block) and the tiled kernel's per pair */
        {"1x1 form shifts 16..42 +res", 2, 21, 19, 64, 256, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 2},
        {"1x1 form shifts 16..42",      3, 13, 17, 128, 128, 1, 1, 1, 1, 0, 0, 1, 1, false, 0, 2},
        {"1x1 form M 64 shifts 16..42 +res", 2, 9, 23, 64, 64, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 2},
        {"3x3 C 32 M 96 shifts 16..42 +res", 2, 15, 13, 32, 96, 3, 3, 1, 1, 1, 1, 1, 1, true, 0, 2},
        {"3x3 C 64 M 128, ResNet rq +res", 2, 14, 14, 64, 128, 3, 3, 1, 1, 1, 1, 1, 1, true, 0, 1},
        /* no zero point (KC_QZFILL's copies): 128 x 64 and 128 x 128 tiles, pads, stride, K past R S C */
        {"3x3 C 48 M 64 s2, no zp +res", 2, 17, 15, 48, 64, 3, 3, 2, 2, 1, 1, 1, 1, true, 0, 1, true},
        {"3x3 C 32 M 144 d2, no zp",    2, 13, 16, 32, 144, 3, 3, 1, 1, 2, 2, 2, 2, false, 0, 2, true},
        /* the stem form (kc_qstem_kernel): 7x7/2 pads 3 on odd sizes, C 1..4, M 32 and 64,
         * output rows not in eights (a partial row group), widths not in 16s, more row
         * groups than resident blocks (the group walk), no zero point, other windows */
        {"qstem 7x7 s2 C 3 M 64",       3, 23, 21, 3,   64, 7, 7, 2, 2, 3, 3, 1, 1, false, 0},
        {"qstem 7x7 s2 C 1 M 32",       2, 37, 29, 1,   32, 7, 7, 2, 2, 3, 3, 1, 1, false, 0, 2},
        {"qstem 7x7 s2 C 2 M 64",       1, 19, 45, 2,   64, 7, 7, 2, 2, 3, 3, 1, 1, false, 0},
        {"qstem 7x7 s2 C 4 M 32, no zp", 2, 31, 17, 4,  32, 7, 7, 2, 2, 3, 3, 1, 1, false, 0, 0, true},
        {"qstem 7x7 s2 C 3 M 64, 480 groups", 160, 47, 45, 3, 64, 7, 7, 2, 2, 3, 3, 1, 1, false, 0},
        {"qstem 5x3 s1 C 3 M 32 pads 2,1", 2, 11, 13, 3, 32, 5, 3, 1, 1, 2, 1, 1, 1, false, 0},
        {"qstem 8x8 s3 C 4 M 64",       2, 27, 26, 4,   64, 8, 8, 3, 3, 3, 2, 1, 1, false, 0, 2},
        {"qstem 7x7 s2 C 3 M 64 b1",    1, 224, 224, 3, 64, 7, 7, 2, 2, 3, 3, 1, 1, false, 0},
        /* input rows of whole 16-byte chunks (W C % 16 == 0; a staged-rows form was measured on
         * them), strides (1, 2), 900 groups walked by the resident blocks, no zero point */
        {"qstem rows C 4 M 32 5x5 s1,2",  3, 13, 28, 4, 32, 5, 5, 1, 2, 2, 1, 1, 1, false, 0, 2},
        {"qstem rows C 3 M 64, 900 groups", 300, 48, 32, 3, 64, 7, 7, 2, 2, 3, 3, 1, 1, false, 0},
        {"qstem rows C 2 M 64 3x3 s2, no zp", 4, 17, 40, 2, 64, 3, 3, 2, 2, 1, 1, 1, 1, false, 0, 0, true},
        {"qstem rows C 1 M 32 8x8 s3",   2, 40, 48, 1,  32, 8, 8, 3, 3, 3, 2, 1, 1, false, 0, 2},
        /* RGB rows in whole words (KC_QSTEM_RGB4: C 3, W in 4s): no padding columns on the
         * left, right padding only, and a row's last four pixels past the window (W 84, 8x8
         * stride 5: 83 window words) */
        {"qstem rgb4 C 3 M 32 3x3 s2 pads 0", 2, 17, 40, 3, 32, 3, 3, 2, 2, 0, 0, 1, 1, false, 0, 0},
        {"qstem rgb4 C 3 M 32 8x8 s1,5, W past the window", 2, 10, 84, 3, 32, 8, 8, 1, 5, 0, 0, 1, 1, false, 0, 2},
        {"qstem rgb4 C 3 M 64 5x5 s1 pads 2, no zp", 3, 9, 20, 3, 64, 5, 5, 1, 1, 2, 2, 1, 1, false, 0, 1, true},
    };
    /* the wgmma form's own edges (kc_qconv_wg: C and M in 16s, at most 32 taps): C 16 (a
     * thread's first chunk in a later tap), reductions ending half way through a 128-byte slice
     * (Kp % 128 64), 5x5 (25 taps), M 16 and 208 (partial 64- and 128-channel tiles), one pixel
     * short of a row tile, strides, dilation, no zero point, ResNet-50's 1x1 layers past the 1x1
     * form (Kp 512 to 2048, strided Kp 512); mode 2 (every case once more) puts the 1x1 form's
     * layers on the wgmma form too */
    static const Case gcases[] = {
        {"3x3 C 16 M 16",               2, 11,  9, 16,  16, 3, 3, 1, 1, 1, 1, 1, 1, false, 0},
        {"3x3 C 64 M 208 +res",         1, 16,  8, 64, 208, 3, 3, 1, 1, 1, 1, 1, 1, true, 0, 2},
        {"5x5 C 32 M 96 s2 +res",       2, 19, 21, 32,  96, 5, 5, 2, 2, 2, 2, 1, 1, true, 0},
        {"3x3 C 80 M 128 d2, no zp",    1, 17, 15, 80, 128, 3, 3, 1, 1, 2, 2, 2, 2, false, 0, 0, true},
        {"3x3 C 128 M 64 s2 +res, ResNet rq", 3, 15, 16, 128, 64, 3, 3, 2, 2, 1, 1, 1, 1, true, 0, 1},
        {"1x1 C 1024 M 256",            2,  7,  9, 1024, 256, 1, 1, 1, 1, 0, 0, 1, 1, false, 0},
        {"1x1 s2 C 512 M 1024 +res",    2, 13, 13, 512, 1024, 1, 1, 2, 2, 0, 0, 1, 1, true, 0, 1},
        {"1x1 C 2048 M 48 +res",        1,  9, 14, 2048, 48, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 2},
        /* the halo form (kc_qhalo: C 64, M <= 64, 3x3 s1): more tiles than resident blocks (a
         * block walks several, across images), pads 0 and 2 (the output smaller, larger),
         * odd sides, M 16 and 48, a zero point in the padding and none */
        {"halo C 64 M 64 +res, 312 tiles", 12, 56, 56, 64, 64, 3, 3, 1, 1, 1, 1, 1, 1, true, 0, 1},
        {"halo C 64 M 16 pads 0",       2,  9, 30, 64,  16, 3, 3, 1, 1, 0, 0, 1, 1, false, 0, 2},
        {"halo C 64 M 48 +res",         3,  7,  5, 64,  48, 3, 3, 1, 1, 1, 1, 1, 1, true, 0},
        {"halo C 64 M 32 pads 2, no zp", 2, 13, 11, 64, 32, 3, 3, 1, 1, 2, 2, 1, 1, false, 0, 0, true},
    };
    check_hi_terms();
    check_qquant();
    /* one layer alone at batch 256, for a profiler, its median time printed */
    static const struct {
        const char *flag;
        Case c;
    } alone[] = {
        {"--ncu", kc_r50_stem}, /* ResNet-50's int8 stem */
        {"--ncu1x1", {"layer1 conv3 b256 (+res)", 256, 56, 56, 64, 256, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 1}},
        {"--ncu3x3", {"layer2 conv2 3x3 b256", 256, 28, 28, 128, 128, 3, 3, 1, 1, 1, 1, 1, 1, false, 0}},
        {"--ncul3", {"layer3 conv3 b256 (+res)", 256, 14, 14, 256, 1024, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 1}},
        {"--ncul4", {"layer4 conv3 b256 (+res)", 256, 7, 7, 512, 2048, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 1}},
        {"--ncuc1", {"layer1 conv1 b256", 256, 56, 56, 256, 64, 1, 1, 1, 1, 0, 0, 1, 1, false, 0}},
    };
    for (const auto &a : alone)
        if (argc > 1 && !strcmp(argv[1], a.flag)) {
            printf("time %s %.4f ms\n", a.c.what, time_case(a.c));
            return 0;
        }
    if (argc > 1 && !strcmp(argv[1], "--host")) { /* the host checks alone (no GPU) */
        printf("%d passed, %d failed\n", passed, failed);
        return failed != 0;
    }
    int nd = 0;
    CK(cudaGetDeviceCount(&nd));
    kc_qstem_min() = 0; /* the stem form on the small shapes too (fewer groups than a wave) */
    if (argc > 1 && !strcmp(argv[1], "--timestem")) { /* the stem form alone: an A/B of its knobs */
        static const Case sc[] = {
            {"stem 7x7 s2 b2 224",          2, 224, 224, 3, 64, 7, 7, 2, 2, 3, 3, 1, 1, false, 0, 0},
            {"stem 7x7 s2 b3, hi terms",    3, 61, 47, 3,   64, 7, 7, 2, 2, 3, 3, 1, 1, false, 0, 2},
            {"stem 5x5 C 4 M 32, no zp",    2, 33, 29, 4,   32, 5, 5, 1, 2, 2, 1, 1, 1, false, 0, 2, true},
            {"stem 3x3 s2 C 1 M 32",        3, 19, 40, 1,   32, 3, 3, 2, 2, 1, 1, 1, 1, false, 0, 0},
            {"stem rows C 4 M 32 5x5 s1,2", 3, 13, 28, 4,   32, 5, 5, 1, 2, 2, 1, 1, 1, false, 0, 2},
        };
        for (const Case &c : sc) run_case(c);
        for (int i = 0; i < 3; i++) printf("time stem b256 %8.4f ms\n", time_case(kc_r50_stem));
        printf("%d passed, %d failed\n", passed, failed);
        return failed != 0;
    }
    /* every case with the wgmma form (where the device and the build have it: sm_90a on a
     * Hopper) and without it (its layers on the cp.async kernel) */
    printf("the wgmma form %s\n", kc_qconv_wg_built() ? "built: every case with it and without" : "not built");
    for (int mode : {2, 1, 0}) {
        if (mode && !kc_qconv_wg_built()) continue;
        kc_qwg_mode() = mode, mode_tag = mode == 2 ? "wg+1x1 " : mode ? "wg " : "";
        for (const Case &c : cases) run_case(c);
        for (const Case &c : gcases) run_case(c);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i += 8) run_case(cases[i], true);
        /* the input and residual from the kernel just before (every form: the tiled kernels,
         * the 1x1, stem, wgmma and halo forms) */
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i += 3)
            run_case(cases[i], false, true);
        for (const Case &c : gcases)
            run_case(c, false, true);
    }
    mode_tag = "";
    /* the folded stem: the float32 NCHW input quantized in the gather (kc_qconv_f32nchw) */
    static const Case fcases[] = {
        {"f32 stem 7x7 s2",             2, 23, 21, 3,   64, 7, 7, 2, 2, 3, 3, 1, 1, false, 0},
        {"f32 stem 7x7 s2, y off 16",   1, 37, 29, 3,   32, 7, 7, 2, 2, 3, 3, 1, 1, false, 3},
        {"f32 C 1 5x5 pads 4, M 136",   3, 13, 11, 1,  136, 5, 5, 1, 1, 4, 4, 1, 1, true, 0},
        {"f32 C 5 3x3 s2 d2, M 24",     2, 17, 19, 5,   24, 3, 3, 2, 2, 2, 2, 2, 2, true, 0},
        {"f32 rgb 3x3 s2, M 32",        4, 31, 33, 3,   32, 3, 3, 2, 2, 1, 1, 1, 1, false, 0, 2},
        {"f32 C 4 4x4, 130 tiles",      4, 64, 65, 4,   64, 4, 4, 1, 1, 1, 2, 1, 1, false, 0},
        /* H W a multiple of 4: four pixels a thread in the quantize pass, C 3, 1, 2 */
        {"f32 stem 7x7 s2, HW % 4 = 0", 3, 24, 22, 3,   64, 7, 7, 2, 2, 3, 3, 1, 1, true, 0},
        {"f32 C 1 3x3, HW % 4 = 0",     2, 12, 9, 1,    16, 3, 3, 1, 1, 1, 1, 1, 1, false, 5},
        {"f32 C 2 3x3 s2, HW % 4 = 0",  1, 8, 14, 2,    32, 3, 3, 2, 2, 1, 1, 1, 1, false, 0},
        /* the stem form after the quantize pass (kc_qstem_kernel): C 3 and 4, M 64 and 32 */
        {"f32 qstem 7x7 s2 C 3",        5, 28, 20, 3,   64, 7, 7, 2, 2, 3, 3, 1, 1, false, 0},
        {"f32 qstem 7x7 s2 C 4, M 32",  2, 21, 23, 4,   32, 7, 7, 2, 2, 3, 3, 1, 1, false, 0},
    };
    const float fscales[] = {0.0234375f, 0.0186532f, 0.0171247f, 0.5f, 0.0078125f, 0.0213f,
                             0.0196078f, 0.0117647f, 0.25f, 0.0187f, 0.0221f};
    for (size_t i = 0; i < sizeof fcases / sizeof fcases[0]; i++)
        run_f32_case(fcases[i], fscales[i], i != 4);
    qmaxpool_case(2, 23, 21, 64, 3, 2, 1); /* ResNet-50's pool, odd sides */
    qmaxpool_case(3, 9, 10, 32, 3, 1, 0);  /* stride 1, no pads */
    qmaxpool_case(1, 7, 5, 16, 3, 2, 2);   /* pads 2: corner windows of 1 tap */
    qmaxpool_case(1, 8, 8, 48, 2, 2, 0);   /* 2x2: the loop kernel */
    qmaxpool_case(2, 9, 9, 24, 3, 2, 1);   /* C 24: bytes */
    qmaxpool_case(2, 23, 21, 64, 3, 2, 1, true); /* the input from the kernel just before */
    qmaxpool_case(2, 9, 9, 24, 3, 2, 1, true);
    /* the cp.async kernel's 256-pixel tiles (KC_QWIDE: 64-channel column tiles, eight warps),
     * reached on small shapes by lowering their block threshold: pixels not in 256s, partial
     * and two column tiles, pads, strides and dilations, a residual, no zero point, the
     * register epilogue (y off 16), and the 1x1 layers the 1x1 form leaves to this kernel */
    static const Case wcases[] = {
        {"wide 3x3 C 64 M 64 +res, ResNet rq", 2, 23, 21, 64, 64, 3, 3, 1, 1, 1, 1, 1, 1, true, 0, 1},
        {"wide 3x3 C 64 M 48, no zp",   3, 13, 17, 64,  48, 3, 3, 1, 1, 1, 1, 1, 1, false, 0, 0, true},
        {"wide 3x3 C 32 M 80 s2 d2 +res", 2, 31, 27, 32, 80, 3, 3, 2, 2, 2, 2, 2, 2, true, 0, 2},
        {"wide 3x3 C 16 M 64 +res, 288 tiles", 8, 48, 48, 16, 64, 3, 3, 1, 1, 1, 1, 1, 1, true, 0, 2},
        {"wide 5x5 C 48 M 64, y off 16", 2, 15, 19, 48, 64, 5, 5, 1, 1, 2, 2, 1, 1, true, 5},
        {"wide 1x1 s2 C 256 M 64 +res", 4, 29, 27, 256, 64, 1, 1, 2, 2, 0, 0, 1, 1, true, 0, 1},
        {"wide 1x1 C 512 M 112, no zp", 3, 11, 13, 512, 112, 1, 1, 1, 1, 0, 0, 1, 1, false, 0, 2, true},
        {"wide 3x3 C 64 M 16 s2, no zp +res", 2, 30, 30, 64, 16, 3, 3, 2, 2, 1, 1, 1, 1, true, 0, 0, true},
    };
    const int64_t wmin = kc_qwide_min();
    kc_qwide_min() = 1;
    for (const Case &c : wcases) run_case(c);
    kc_qwide_min() = wmin;
    if (argc > 1 && !strcmp(argv[1], "--time")) {
        static const Case t[] = {
            kc_r50_stem,
            {"layer1 conv3 b256 (+res)",  256, 56, 56, 64, 256, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 1},
            {"layer1 conv1 b256",         256, 56, 56, 256, 64, 1, 1, 1, 1, 0, 0, 1, 1, false, 0},
            {"layer2 conv3 b256 (+res)",  256, 28, 28, 128, 512, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 1},
            {"layer3 conv3 b256 (+res)",  256, 14, 14, 256, 1024, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 1},
            {"layer2 downsample b256",    256, 56, 56, 256, 512, 1, 1, 2, 2, 0, 0, 1, 1, false, 0, 1},
            {"layer2 conv1 b256",         256, 56, 56, 256, 128, 1, 1, 1, 1, 0, 0, 1, 1, false, 0},
            {"layer3 conv1 b256",         256, 28, 28, 512, 256, 1, 1, 1, 1, 0, 0, 1, 1, false, 0},
            {"layer4 conv3 b256 (+res)",  256, 7, 7, 512, 2048, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 1},
            {"layer1 conv2 3x3 b256",     256, 56, 56, 64, 64, 3, 3, 1, 1, 1, 1, 1, 1, false, 0},
            {"layer3 conv2 3x3 b256",     256, 14, 14, 256, 256, 3, 3, 1, 1, 1, 1, 1, 1, false, 0},
            {"layer2 conv2 3x3 b256",     256, 28, 28, 128, 128, 3, 3, 1, 1, 1, 1, 1, 1, false, 0},
            {"layer4 conv2 3x3 b256",     256, 7, 7, 512, 512, 3, 3, 1, 1, 1, 1, 1, 1, false, 0},
            {"layer2.0 conv2 3x3 s2 b256", 256, 56, 56, 128, 128, 3, 3, 2, 2, 1, 1, 1, 1, false, 0},
            {"layer3.0 downsample b256",  256, 28, 28, 512, 1024, 1, 1, 2, 2, 0, 0, 1, 1, false, 0, 1},
            {"layer3 conv1 C1024 b256",   256, 14, 14, 1024, 256, 1, 1, 1, 1, 0, 0, 1, 1, false, 0},
            {"layer4 conv1 C2048 b256",   256, 7, 7, 2048, 512, 1, 1, 1, 1, 0, 0, 1, 1, false, 0},
            {"layer2 conv2 3x3 b1",       1, 28, 28, 128, 128, 3, 3, 1, 1, 1, 1, 1, 1, false, 0},
            {"layer4 conv2 3x3 b1",       1, 7, 7, 512, 512, 3, 3, 1, 1, 1, 1, 1, 1, false, 0},
        };
        for (const Case &c : t) {
            KcQConv p = params(c);
            double ops = 2.0 * c.N * p.OH * p.OW * c.M * p.K;
            for (int mode : {2, 1, 0}) {
                if ((mode && !kc_qconv_wg_built()) || (mode == 2 && (c.R != 1 || c.S != 1))) continue;
                kc_qwg_mode() = mode;
                float ms = time_case(c);
                printf("time %-26s %s %8.4f ms %7.1f TOPS\n", c.what, mode == 2 ? "wg+1x1" : mode ? "wg    " : "old   ", ms, ops / ms / 1e9);
            }
            kc_qwg_mode() = KC_QWG;
        }
        time_qnchw();
        /* the stem by batch, kc_qstem_kernel (every group count) against the table gather */
        for (int nb : {1, 4, 16, 32, 64, 256}) {
            Case c = t[0];
            c.N = nb;
            kc_qstem_min() = 0;
            float a = time_case(c);
            kc_qstem_min() = INT64_MAX;
            float b = time_case(c);
            kc_qstem_min() = -1;
            printf("time stem b%-3d kc_qstem %8.4f ms, table gather %8.4f ms\n", nb, a, b);
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
