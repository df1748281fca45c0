/* conv_gpu.cu: the direct convolution kernels of kc_nn.cuh against a double reference on
 * the host, on a GPU: the depthwise NHWC launcher (kc_dwconv_nhwc) and the W-blocked 3x3
 * kernel (kc_dwconv3_nhwc_kernel) launched directly, in float16 and float32, stride 1 and 2,
 * widths that leave a partial last block of pixels (OW 1, 2, 5, 7, 13), pads 0 and 1, with
 * and without bias, residual and ReLU6, index types int32 and int64; and the small-reduction
 * convolution on RGB stems: kc_conv_small (CUDA cores for K not 32/64, tensor cores
 * kc_conv_small_tc for 32 and 64) and kc_igemm_nhwc_any's few-channel route (ResNet-50's
 * 7x7x3 stem, 147 -> 10 steps of 16), with and without residual, odd sides and partial
 * tiles of 16 pixels; the stem kernel that reads the graph input channels-first (kc_stem_tc,
 * float32 and float16 input; C 1 to 4, K 32 and 64, strides 1 and 2, pads 0 to 3, output rows
 * of 7 to 300 pixels, the 4-byte and the 2-byte element loads); the NHWC max pool
 * (kc_pool_nhwc: 3x3 by the fixed-window kernel, 2x2 and C not in vectors by the others),
 * exact. Outputs are poisoned (NaN) before each run. --ncu launches ResNet-50's stem and max
 * pool once each at batch 256 (for a profiler). With --time also times
 * them at batch 256 (CUDA events, median of 20): MobileNetV2's depthwise layers (the
 * unblocked vector kernel against the blocked one with 2, 4 and 8 pixels a thread), its
 * stem (kc_conv_small's CUDA-core kernel against the tensor-core one) and ResNet-50's
 * stem (the implicit GEMM kc_igemm_tile against kc_conv_small_tc, and kc_stem_tc on NCHW
 * float32 and float16, with MobileNetV2's stem on it), and its max pool (the loop kernel
 * against the fixed-window one). The mma.sync implicit
 * GEMM (kc_igemm_mma): its launcher and two tiles directly, on partial tiles of rows and
 * columns, C below and off the slice width, strides 1 and 2, pads 0-2, 1x1, 3x3 and 5x5.
 * The plain 1x1 convolution of few input channels (kc_conv1x1_small): C 2 to 32 (odd pairs,
 * not in eights, a second step of 16 partly zero), K 16 to 240 in chunks of 16 and 48,
 * partial tiles of 16 pixels, the warps' grid stride, bias or none, residual, no activation,
 * ReLU and ReLU6, and the shapes it refuses; --time times it against cuBLASLt and its ReLU6
 * pass on MobileNetV2's shapes at batches 1, 32 and 256. Late cases (the implicit GEMM's tiles
 * and cores, the pools): input and residual written by the kernel launched just before
 * (LateInputs), which under -DKC_PDL=1 the kernels must wait for.
 * usage: nvcc -O3 -arch=sm_90 -I runtime/cuda tests/cuda/conv_gpu.cu -o conv_gpu
 *        ./conv_gpu [--time]; ends with "N passed, N failed". */
#include <algorithm>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <type_traits>
#include <vector>

#include <cuda_fp16.h>

#include "gpu_test.h"
#include "gpu_values.h"
#include "kc_blas.cuh"
#include "kc_igemm.cuh"
#include "kc_nn.cuh"

/* host values rounded to T, and a device copy */
template <typename T>
struct Buf {
    std::vector<double> h; /* the values as T holds them */
    T *d = NULL;
    size_t n;
    Buf(size_t n_, double scale) : h(n_), n(n_) {
        std::vector<T> t(n_);
        for (size_t i = 0; i < n_; i++) t[i] = to_t<T>(nrand() * scale), h[i] = from_t(t[i]);
        CK(cudaMalloc(&d, (n_ ? n_ : 1) * sizeof(T)));
        CK(cudaMemcpy(d, t.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
    }
    void poison() { CK(cudaMemset(d, 0xff, n * sizeof(T))); } /* NaN in both types */
    std::vector<double> get() const {
        std::vector<T> t(n);
        CK(cudaMemcpy(t.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
        std::vector<double> r(n);
        for (size_t i = 0; i < n; i++) r[i] = from_t(t[i]);
        return r;
    }
    ~Buf() { cudaFree(d); }
};

static KcConv2d geom(int64_t C, int64_t H, int64_t W, int64_t R, int64_t S, int64_t st,
                     int64_t pad) {
    KcConv2d p;
    p.C = C, p.H = H, p.W = W, p.R = R, p.S = S, p.sh = p.sw = st, p.ph = p.pw = pad;
    p.dh = p.dw = 1;
    p.OH = (H + 2 * pad - R) / st + 1, p.OW = (W + 2 * pad - S) / st + 1;
    return p;
}

/* y = act(conv(x, w) + b + r), NHWC, weights (R,S,C/g,K), g = 1 or depthwise (g = C = K) */
static std::vector<double> conv_ref(const KcConv2d &p, int64_t N, int64_t K, bool dw,
                                    const std::vector<double> &x, const std::vector<double> &w,
                                    const std::vector<double> *b, const std::vector<double> *r,
                                    bool relu6) {
    std::vector<double> y(N * p.OH * p.OW * K);
    for (int64_t n = 0; n < N; n++)
        for (int64_t oh = 0; oh < p.OH; oh++)
            for (int64_t ow = 0; ow < p.OW; ow++)
                for (int64_t k = 0; k < K; k++) {
                    double acc = b ? (*b)[k] : 0.0;
                    for (int64_t rr = 0; rr < p.R; rr++)
                        for (int64_t ss = 0; ss < p.S; ss++) {
                            int64_t ih = oh * p.sh - p.ph + rr, iw = ow * p.sw - p.pw + ss;
                            if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
                            const double *xp = &x[((n * p.H + ih) * p.W + iw) * p.C];
                            if (dw) {
                                acc += xp[k] * w[(rr * p.S + ss) * K + k];
                            } else {
                                for (int64_t c = 0; c < p.C; c++)
                                    acc += xp[c] * w[((rr * p.S + ss) * p.C + c) * K + k];
                            }
                        }
                    int64_t at = ((n * p.OH + oh) * p.OW + ow) * K + k;
                    if (r) acc += (*r)[at];
                    if (relu6) acc = acc < 0 ? 0 : acc > 6 ? 6 : acc;
                    y[at] = acc;
                }
    return y;
}

/* how: 0 the launcher kc_dwconv_nhwc, 1 the blocked kernel in int32, 2 in int64 */
template <typename T, int PW>
static void dw_case(const char *tname, int how, int64_t N, int64_t C, int64_t H, int64_t W,
                    int64_t st, int64_t pad, bool bias, bool res, bool relu6, double tol) {
    KcConv2d p = geom(C, H, W, 3, 3, st, pad);
    int64_t ny = N * p.OH * p.OW * C;
    Buf<T> x(N * H * W * C, 1.0), w(9 * C, 0.5), b(C, 0.5), r(ny, 1.0), y(ny, 1.0);
    y.poison();
    int act = relu6 ? KC_ACT_CLIP : KC_ACT_NONE, rc = KC_OK;
    const T *bp = bias ? b.d : NULL, *rp = res ? r.d : NULL;
    if (how == 0) {
        rc = kc_dwconv_nhwc<T>(0, x.d, w.d, bp, rp, y.d, &p, N, 1, act, 0.0f, 6.0f);
    } else {
        int64_t total = N * p.OH * ((p.OW + PW - 1) / PW) * (C / (int64_t)(16 / sizeof(T)));
        if (how == 1 && st == 1)
            kc_dwconv3_nhwc_kernel<T, int32_t, 1, PW><<<kc_grid(total), KC_THREADS>>>(
                x.d, w.d, bp, rp, y.d, kc_geom<int32_t>(&p), (int32_t)N, act, 0.0f, 6.0f);
        else if (how == 1)
            kc_dwconv3_nhwc_kernel<T, int32_t, 2, PW><<<kc_grid(total), KC_THREADS>>>(
                x.d, w.d, bp, rp, y.d, kc_geom<int32_t>(&p), (int32_t)N, act, 0.0f, 6.0f);
        else if (st == 1)
            kc_dwconv3_nhwc_kernel<T, int64_t, 1, PW><<<kc_grid(total), KC_THREADS>>>(
                x.d, w.d, bp, rp, y.d, kc_geom<int64_t>(&p), N, act, 0.0f, 6.0f);
        else
            kc_dwconv3_nhwc_kernel<T, int64_t, 2, PW><<<kc_grid(total), KC_THREADS>>>(
                x.d, w.d, bp, rp, y.d, kc_geom<int64_t>(&p), N, act, 0.0f, 6.0f);
        CK(cudaGetLastError());
    }
    CK(cudaDeviceSynchronize());
    std::vector<double> want =
        conv_ref(p, N, C, true, x.h, w.h, bias ? &b.h : NULL, res ? &r.h : NULL, relu6);
    double worst = 0;
    long bad = rc != KC_OK;
    gpu_compare(y.get(), want, &worst, &bad, tol);
    char what[200];
    snprintf(what, sizeof what,
             "dwconv3 %s %s PW %d N %lld C %lld %lldx%lld stride %lld pad %lld%s%s%s",
             how == 0 ? "launcher" : how == 1 ? "int32" : "int64", tname, PW, (long long)N,
             (long long)C, (long long)H, (long long)W, (long long)st, (long long)pad,
             bias ? " bias" : "", res ? " residual" : "", relu6 ? " relu6" : "");
    gpu_report(what, worst, tol, bad);
}

/* how: 0 kc_conv_small, 1 kc_igemm_nhwc_any */
static void small_case(int how, int64_t N, int64_t C, int64_t H, int64_t W, int64_t R,
                       int64_t K, int64_t st, int64_t pad, bool res) {
    KcConv2d p = geom(C, H, W, R, R, st, pad);
    int64_t ny = N * p.OH * p.OW * K;
    Buf<__half> x(N * H * W * C, 1.0), w(R * R * C * K, 0.3), b(K, 0.5), r(ny, 1.0), y(ny, 1.0);
    y.poison();
    int rc = how == 0 ? kc_conv_small(0, x.d, w.d, b.d, res ? r.d : NULL, y.d, &p, N, K,
                                      KC_ACT_CLIP, 0.0f, 6.0f)
                      : kc_igemm_nhwc_any(0, x.d, w.d, b.d, res ? r.d : NULL, y.d, &p, N, K,
                                          KC_ACT_CLIP, 0.0f, 6.0f);
    CK(cudaDeviceSynchronize());
    std::vector<double> want = conv_ref(p, N, K, false, x.h, w.h, &b.h, res ? &r.h : NULL, true);
    double worst = 0;
    long bad = rc != KC_OK;
    gpu_compare(y.get(), want, &worst, &bad, 2e-3);
    char what[200];
    snprintf(what, sizeof what, "%s N %lld C %lld %lldx%lld %lldx%lld K %lld stride %lld%s",
             how == 0 ? "conv_small" : "igemm_nhwc_any", (long long)N, (long long)C, (long long)H, (long long)W, (long long)R, (long long)R,
             (long long)K, (long long)st, res ? " residual" : "");
    gpu_report(what, worst, 2e-3, bad);
}

/* kc_stem_tc: x channels-first (N,C,H,W) in TI, as the graph input comes, against the NHWC
 * reference of the same values (float16-representable, so float32 input is exact too) */
template <typename TI>
static void stem_case(const char *tname, int64_t N, int64_t C, int64_t H, int64_t W, int64_t R,
                      int64_t K, int64_t st, int64_t pad, bool res) {
    KcConv2d p = geom(C, H, W, R, R, st, pad);
    int64_t ny = N * p.OH * p.OW * K;
    Buf<__half> x(N * H * W * C, 1.0), w(R * R * C * K, 0.3), b(K, 0.5), r(ny, 1.0), y(ny, 1.0);
    std::vector<TI> xt(N * C * H * W);
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < H * W; i++)
                xt[(n * C + c) * H * W + i] = to_t<TI>(x.h[(n * H * W + i) * C + c]);
    TI *xd = NULL;
    CK(cudaMalloc(&xd, xt.size() * sizeof(TI)));
    CK(cudaMemcpy(xd, xt.data(), xt.size() * sizeof(TI), cudaMemcpyHostToDevice));
    y.poison();
    int rc = kc_stem_tc<TI>(0, xd, w.d, b.d, res ? r.d : NULL, y.d, &p, N, K, KC_ACT_CLIP, 0.0f,
                            6.0f);
    CK(cudaDeviceSynchronize());
    cudaFree(xd);
    std::vector<double> want = conv_ref(p, N, K, false, x.h, w.h, &b.h, res ? &r.h : NULL, true);
    double worst = 0;
    long bad = rc != KC_OK;
    gpu_compare(y.get(), want, &worst, &bad, 2e-3);
    char what[200];
    snprintf(what, sizeof what,
             "stem_tc NCHW %s N %lld C %lld %lldx%lld %lldx%lld K %lld stride %lld pad %lld%s",
             tname, (long long)N, (long long)C, (long long)H, (long long)W, (long long)R,
             (long long)R, (long long)K, (long long)st, (long long)pad, res ? " residual" : "");
    gpu_report(what, worst, 2e-3, bad);
}

/* kc_pool_nhwc max pooling against the host's max over the window (exact: the max of
 * values T holds), fp16 and fp32; 3x3 goes to the fixed-window kernel, other windows to
 * the loop over p's bounds. */
/* LATE (pool_case, mma_case): the input (and the residual) written by the kernel launched just
 * before, which lets the kernel start at once and writes after a spin (LateInputs): the
 * kernel's wait for it under programmatic dependent launch (KC_PDL=1) */
template <typename T>
static void pool_case(const char *tname, int64_t N, int64_t C, int64_t H, int64_t W, int64_t R,
                      int64_t st, int64_t pad, bool late = false) {
    KcConv2d p = geom(C, H, W, R, R, st, pad);
    int64_t ny = N * p.OH * p.OW * C;
    Buf<T> x(N * H * W * C, 1.0), y(ny, 1.0);
    std::vector<double> want(ny);
    for (int64_t n = 0; n < N; n++)
        for (int64_t oh = 0; oh < p.OH; oh++)
            for (int64_t ow = 0; ow < p.OW; ow++)
                for (int64_t c = 0; c < C; c++) {
                    double m = -INFINITY;
                    for (int64_t rr = 0; rr < R; rr++)
                        for (int64_t ss = 0; ss < R; ss++) {
                            int64_t ih = oh * st - pad + rr, iw = ow * st - pad + ss;
                            if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                                m = std::max(m, x.h[((n * H + ih) * W + iw) * C + c]);
                        }
                    want[((n * p.OH + oh) * p.OW + ow) * C + c] = m;
                }
    y.poison();
    LateInputs li(late, x.d, x.n * sizeof(T));
    int rc = kc_pool_nhwc<T>(li.s, x.d, y.d, &p, N, 1, 0);
    CK(cudaDeviceSynchronize());
    double worst = 0;
    long bad = rc != KC_OK;
    gpu_compare(y.get(), want, &worst, &bad, 0.0);
    char what[200];
    snprintf(what, sizeof what,
             "%smaxpool NHWC %s N %lld C %lld %lldx%lld %lldx%lld stride %lld pad %lld",
             late ? "late " : "", tname, (long long)N, (long long)C, (long long)H, (long long)W,
             (long long)R, (long long)R, (long long)st, (long long)pad);
    gpu_report(what, worst, 0.0, bad);
}

/* The tensor-core implicit GEMM (kc_igemm_mma): cfg 0 its launcher (on sm_90a code the
 * wgmma core, else mma.sync 128x64, or 128x128 of 8 warps with 64-wide slices); mma.sync:
 * 1 the 128x128 tile of 4 warps of 64x64, 2 the 64x64 tile; wgmma (sm_90a code only): 3
 * 128x64 in 4 stages, 4 128x128 in 3; 5 the halo core (3x3 stride 1, C 64, K <= 64; the
 * launcher takes it there). Pixels and channels off the tiles, C not a multiple
 * of the slice (slices straddle taps), stride 2, pads 0..2, 1x1 and 5x5 kernels. */
static void mma_case(int cfg, int64_t N, int64_t C, int64_t H, int64_t W, int64_t R, int64_t K,
                     int64_t st, int64_t pad, bool bias, bool res, int act = KC_ACT_CLIP,
                     bool late = false) {
    KcConv2d p = geom(C, H, W, R, R, st, pad);
    int64_t ny = N * p.OH * p.OW * K, P = N * p.OH * p.OW;
    Buf<__half> x(N * H * W * C, 1.0), w(R * R * C * K, 0.3), b(K, 0.5), r(ny, 1.0), y(ny, 1.0);
    y.poison();
    const __half *bp = bias ? b.d : NULL, *rp = res ? r.d : NULL;
    LateInputs li(late, x.d, x.n * sizeof(__half), res ? r.d : NULL,
                  res ? r.n * sizeof(__half) : 0);
    const cudaStream_t s = li.s;
    int rc = cfg == 0   ? kc_igemm_mma(s, x.d, w.d, bp, rp, y.d, &p, N, K, act, 0.0f, 6.0f)
             : cfg == 1 ? kc_igemm_mma_launch<128, 128, 64, 64, 64, 3>(s, x.d, w.d, bp, rp, y.d, &p,
                                                                       P, K, act, 0.0f, 6.0f)
             : cfg == 2 ? kc_igemm_mma_launch<64, 64, 32, 32, 32, 4>(s, x.d, w.d, bp, rp, y.d, &p,
                                                                     P, K, act, 0.0f, 6.0f)
             : cfg == 3 ? kc_igemm_wg_launch<128, 64, 4, 0>(s, x.d, w.d, bp, rp, y.d, &p, P, K, act,
                                                            0.0f, 6.0f)
             : cfg == 4 ? kc_igemm_wg_launch<128, 128, 3, 0>(s, x.d, w.d, bp, rp, y.d, &p, P, K,
                                                             act, 0.0f, 6.0f)
                        : kc_conv_halo(s, x.d, w.d, bp, rp, y.d, &p, N, K, act, 0.0f, 6.0f);
    CK(cudaDeviceSynchronize());
    std::vector<double> want = conv_ref(p, N, K, false, x.h, w.h, bias ? &b.h : NULL,
                                        res ? &r.h : NULL, act == KC_ACT_CLIP);
    if (act == KC_ACT_RELU) /* the form with ReLU compiled into the epilogue */
        for (double &v : want) v = v < 0 ? 0 : v;
    double worst = 0;
    long bad = rc != KC_OK;
    gpu_compare(y.get(), want, &worst, &bad, 4e-3);
    char what[200];
    snprintf(
        what, sizeof what,
        "%sigemm_mma cfg %d N %lld C %lld %lldx%lld %lldx%lld K %lld stride %lld pad %lld%s%s %s",
        late ? "late " : "", cfg, (long long)N, (long long)C, (long long)H, (long long)W,
        (long long)R, (long long)R, (long long)K, (long long)st, (long long)pad,
        bias ? " bias" : "", res ? " residual" : "", act == KC_ACT_RELU ? "relu" : "relu6");
    gpu_report(what, worst, 4e-3, bad);
}

/* kc_conv1x1_small: a plain 1x1 convolution, C even <= 32 -> K in sixteens; act 0 none,
 * 1 ReLU, 2 ReLU6. want_rc: KC_ERR_SHAPE for the shapes it must refuse. */
static void c1_case(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, bool bias,
                    bool res, int actk, int want_rc = KC_OK) {
    KcConv2d p = geom(C, H, W, 1, 1, 1, 0);
    int64_t ny = N * H * W * K;
    Buf<__half> x(N * H * W * C, 1.0), w(C * K, 0.3), b(K, 0.5), r(ny, 1.0), y(ny, 1.0);
    y.poison();
    const int acts[3] = {KC_ACT_NONE, KC_ACT_RELU, KC_ACT_CLIP};
    int rc = kc_conv1x1_small(0, x.d, w.d, bias ? b.d : NULL, res ? r.d : NULL, y.d, &p, N, K,
                              acts[actk], 0.0f, 6.0f);
    CK(cudaDeviceSynchronize());
    std::vector<double> want =
        conv_ref(p, N, K, false, x.h, w.h, bias ? &b.h : NULL, res ? &r.h : NULL, actk == 2);
    if (actk == 1)
        for (double &v : want) v = v < 0 ? 0 : v;
    double worst = 0;
    long bad = rc != want_rc;
    if (want_rc == KC_OK) gpu_compare(y.get(), want, &worst, &bad, 2e-3);
    char what[200];
    snprintf(what, sizeof what, "conv1x1_small N %lld C %lld %lldx%lld K %lld%s%s %s%s",
             (long long)N, (long long)C, (long long)H, (long long)W, (long long)K,
             bias ? " bias" : "", res ? " residual" : "",
             actk == 0 ? "none" : actk == 1 ? "relu" : "relu6",
             want_rc == KC_OK ? "" : " (refused)");
    gpu_report(what, worst, 2e-3, bad);
}

/* ---- timing at MobileNetV2 fp16 batch 256 ---- */

/* a device buffer of n halves, every byte 0x30 (each value about 0.13): timing only */
struct DevBuf {
    __half *d = NULL;
    size_t n;
    DevBuf(size_t n_) : n(n_) {
        CK(cudaMalloc(&d, n * sizeof(__half)));
        CK(cudaMemset(d, 0x30, n * sizeof(__half)));
    }
    ~DevBuf() { cudaFree(d); }
};

template <int ST, int PW>
static float time_dw3(const __half *x, const __half *w, const __half *b, __half *y,
                      const KcConv2d &p, int64_t N) {
    int64_t total = N * p.OH * ((p.OW + PW - 1) / PW) * (p.C / 8);
    return time_ms([&] {
        kc_dwconv3_nhwc_kernel<__half, int32_t, ST, PW><<<kc_grid(total), KC_THREADS>>>(
            x, w, b, NULL, y, kc_geom<int32_t>(&p), (int32_t)N, KC_ACT_CLIP, 0.0f, 6.0f);
    });
}

/* MobileNetV2's 1x1 convolutions of at most 32 input channels at batches 1, 32, 256:
 * kc_conv1x1_small against the bundles' lowering before it, cuBLASLt's heuristic first
 * algorithm with the bias epilogue and kc_bias_act's ReLU6 pass after it; and the kernel
 * with other chunk widths than the launcher's (0: not a divisor of K). */
static void timing_1x1(void) {
    cublasLtHandle_t lt;
    if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) return;
    size_t ws_size = 32u << 20;
    void *ws;
    CK(cudaMalloc(&ws, ws_size));
    /* side, C, K, ReLU6 */
    const int64_t L[][4] = {{112, 16, 96, 1}, {56, 24, 144, 1}, {28, 32, 192, 1}, {112, 32, 16, 0}};
    const int64_t batches[] = {1, 32, 256};
    for (int64_t N : batches) {
        double sum_lt = 0, sum_c1 = 0;
        for (auto &l : L) {
            KcConv2d p = geom(l[1], l[0], l[0], 1, 1, 1, 0);
            int64_t P = N * l[0] * l[0];
            int act = l[3] ? KC_ACT_CLIP : KC_ACT_NONE;
            DevBuf x(P * l[1]), w(l[1] * l[2]), b(l[2]), y(P * l[2]);
            KcMatmul m;
            memset(&m, 0, sizeof m);
            m.m = l[2], m.n = P, m.k = l[1], m.batch = 1;
            m.lda = l[2], m.ldb = l[1], m.ldd = l[2];
            m.alpha = 1.0f, m.half = 1;
            m.A = w.d, m.B = x.d, m.D = y.d, m.bias = b.d;
            m.act = act, m.act_alpha = 0.0f, m.act_beta = 6.0f;
            float tl = time_ms([&] {
                kc_lt_matmul(lt, 0, ws, ws_size, CUBLAS_COMPUTE_32F, &m, NULL, 0);
            });
            float tc = time_ms([&] {
                kc_conv1x1_small(0, x.d, w.d, b.d, NULL, y.d, &p, N, l[2], act, 0.0f, 6.0f);
            });
            /* other chunk widths: 16, 24 and 32 channels (where K allows), 96 or 72 */
            float tn[4] = {0, 0, 0, 0};
            auto chunks = [&](auto ks) {
                constexpr int KS = decltype(ks)::value;
                tn[0] = time_ms([&] {
                    kc_conv1x1_tc_launch<KS, 2>(0, x.d, w.d, b.d, NULL, y.d, P, l[1], l[2], act,
                                                0.0f, 6.0f);
                });
                if (l[2] % 24 == 0)
                    tn[1] = time_ms([&] {
                        kc_conv1x1_tc_launch<KS, 3>(0, x.d, w.d, b.d, NULL, y.d, P, l[1], l[2],
                                                    act, 0.0f, 6.0f);
                    });
                if (l[2] % 32 == 0)
                    tn[2] = time_ms([&] {
                        kc_conv1x1_tc_launch<KS, 4>(0, x.d, w.d, b.d, NULL, y.d, P, l[1], l[2],
                                                    act, 0.0f, 6.0f);
                    });
                if (l[2] % 96 == 0)
                    tn[3] = time_ms([&] {
                        kc_conv1x1_tc_launch<KS, 12>(0, x.d, w.d, b.d, NULL, y.d, P, l[1], l[2],
                                                     act, 0.0f, 6.0f);
                    });
                else if (l[2] % 72 == 0)
                    tn[3] = time_ms([&] {
                        kc_conv1x1_tc_launch<KS, 9>(0, x.d, w.d, b.d, NULL, y.d, P, l[1], l[2],
                                                    act, 0.0f, 6.0f);
                    });
            };
            if (l[1] > 16) chunks(std::integral_constant<int, 2>());
            else chunks(std::integral_constant<int, 1>());
            double gb = (double)(x.n + y.n) * 2 / 1e9;
            printf("time 1x1 b%lld %lldx%lld %lld -> %lld%s: cuBLASLt %.4f conv1x1_small %.4f "
                   "ms (%.2f TB/s); act at run time: chunks of 16 %.4f, 24 %.4f, 32 %.4f, 96/72 %.4f\n",
                   (long long)N, (long long)l[0], (long long)l[0], (long long)l[1],
                   (long long)l[2], l[3] ? " relu6" : "", tl, tc, gb / tc, tn[0], tn[1], tn[2],
                   tn[3]);
            int64_t times = l[0] == 56 ? 2 : l[0] == 28 ? 3 : 1;
            sum_lt += tl * times, sum_c1 += tc * times;
        }
        printf("time 1x1 sum b%lld: cuBLASLt %.4f conv1x1_small %.4f ms\n", (long long)N,
               sum_lt, sum_c1);
    }
    cudaFree(ws);
    cublasLtDestroy(lt);
}

static void timing(void) {
    const int64_t N = 256;
    /* MobileNetV2's depthwise layers: input side, channels, stride (how many) */
    const int64_t L[][4] = {{112, 32, 1, 1}, {112, 96, 2, 1}, {56, 144, 1, 1}, {56, 144, 2, 1},
                            {28, 192, 1, 2}, {28, 192, 2, 1}, {14, 384, 1, 4}, {14, 576, 1, 2},
                            {14, 576, 2, 1}, {7, 960, 1, 3}};
    double sum_old = 0, sum_new = 0;
    for (auto &l : L) {
        KcConv2d p = geom(l[1], l[0], l[0], 3, 3, l[2], 1);
        DevBuf x(N * p.H * p.W * p.C), w(9 * p.C), b(p.C), y(N * p.OH * p.OW * p.C);
        double gb = (double)(x.n + y.n) * 2 / 1e9;
        float old = time_ms([&] {
            kc_dwconv_nhwc_vec_launch<__half, int32_t>(0, x.d, w.d, b.d, NULL, y.d, &p, N,
                                                       KC_ACT_CLIP, 0.0f, 6.0f);
        });
        float t2 = l[2] == 1 ? time_dw3<1, 2>(x.d, w.d, b.d, y.d, p, N)
                             : time_dw3<2, 2>(x.d, w.d, b.d, y.d, p, N);
        float t4 = l[2] == 1 ? time_dw3<1, 4>(x.d, w.d, b.d, y.d, p, N)
                             : time_dw3<2, 4>(x.d, w.d, b.d, y.d, p, N);
        float t8 = l[2] == 1 ? time_dw3<1, 8>(x.d, w.d, b.d, y.d, p, N)
                             : time_dw3<2, 8>(x.d, w.d, b.d, y.d, p, N);
        float lau = time_ms([&] {
            kc_dwconv_nhwc<__half>(0, x.d, w.d, b.d, NULL, y.d, &p, N, 1, KC_ACT_CLIP, 0.0f,
                                   6.0f);
        });
        printf("time dw %lldx%lld C %lld s%lld: old %.4f PW2 (act at run time) %.4f PW4 %.4f PW8 %.4f launcher "
               "%.4f ms (floor at 4 TB/s %.4f; launcher %.2f TB/s) x%lld\n",
               (long long)l[0], (long long)l[0], (long long)l[1], (long long)l[2], old, t2, t4,
               t8, lau, gb / 4.0, gb / lau, (long long)l[3]);
        sum_old += old * l[3], sum_new += lau * l[3];
    }
    printf("time dw sum (MobileNetV2 b256): old %.4f launcher %.4f ms\n", sum_old, sum_new);
    KcConv2d p = geom(3, 224, 224, 3, 3, 2, 1);
    DevBuf x(N * 224 * 224 * 3), w(27 * 32), b(32), y(N * p.OH * p.OW * 32);
    float ms = time_ms([&] {
        kc_conv_small(0, x.d, w.d, b.d, NULL, y.d, &p, N, 32, KC_ACT_CLIP, 0.0f, 6.0f);
    });
    float old = time_ms([&] {
        kc_conv_small_launch<32>(0, x.d, w.d, b.d, NULL, y.d, &p, N * p.OH * p.OW, 32,
                                 KC_ACT_CLIP, 0.0f, 6.0f);
    });
    printf("time MobileNetV2 stem 224x224x3 -> 32 s2 b256: CUDA cores %.4f tensor cores %.4f "
           "ms (%.2f TB/s)\n", old, ms, (double)(x.n + y.n) * 2 / ms / 1e9);
    KcConv2d q = geom(3, 224, 224, 7, 7, 2, 3);
    DevBuf w7(147 * 64), b7(64), y7(N * q.OH * q.OW * 64);
    int64_t P7 = N * q.OH * q.OW;
    old = time_ms([&] {
        kc_igemm_tile<false>(0, x.d, w7.d, b7.d, NULL, y7.d, &q, P7, 64, KC_ACT_RELU, 0.0f,
                             0.0f);
    });
    ms = time_ms([&] {
        kc_igemm_nhwc_any(0, x.d, w7.d, b7.d, NULL, y7.d, &q, N, 64, KC_ACT_RELU, 0.0f, 0.0f);
    });
    printf("time ResNet-50 stem 7x7x3 -> 64 s2 b256: implicit GEMM %.4f conv_small_tc %.4f ms "
           "(%.1f TFLOP/s)\n", old, ms, 2.0 * P7 * 64 * 147 / ms / 1e9);
    /* the graph input as it comes (NCHW float32, or float16 with --fp16-io) */
    float *xf = NULL;
    CK(cudaMalloc(&xf, x.n * sizeof(float)));
    CK(cudaMemset(xf, 0, x.n * sizeof(float)));
    float sf = time_ms([&] {
        kc_stem_tc<float>(0, xf, w7.d, b7.d, NULL, y7.d, &q, N, 64, KC_ACT_RELU, 0.0f, 0.0f);
    });
    float sh = time_ms([&] {
        kc_stem_tc<__half>(0, x.d, w7.d, b7.d, NULL, y7.d, &q, N, 64, KC_ACT_RELU, 0.0f, 0.0f);
    });
    printf("time ResNet-50 stem 7x7x3 -> 64 s2 b256: stem_tc NCHW float32 %.4f (%.1f TFLOP/s) "
           "float16 %.4f ms\n", sf, 2.0 * P7 * 64 * 147 / sf / 1e9, sh);
    float mf = time_ms([&] {
        kc_stem_tc<float>(0, xf, w.d, b.d, NULL, y.d, &p, N, 32, KC_ACT_CLIP, 0.0f, 6.0f);
    });
    printf("time MobileNetV2 stem 224x224x3 -> 32 s2 b256: stem_tc NCHW float32 %.4f ms\n", mf);
    /* the register allocation asked for 1 resident block (the launch bounds' default) */
    float r1 = time_ms([&] {
        kc_stem_tc_launch<float, 8, true, 1>(0, xf, w7.d, b7.d, NULL, y7.d, &q, N, KC_ACT_RELU,
                                             0.0f, 0.0f);
    });
    float m1 = time_ms([&] {
        kc_stem_tc_launch<float, 4, true, 1>(0, xf, w.d, b.d, NULL, y.d, &p, N, KC_ACT_CLIP, 0.0f,
                                             6.0f);
    });
    printf("time stem_tc float32 min blocks 1 (%d above): ResNet-50 %.4f MobileNetV2 %.4f ms\n",
           KC_STEM_MIN_BLOCKS, r1, m1);
    /* the activation read at run time in the epilogue (the form before ReLU and Clip were
     * compiled in), and other register budgets with ReLU compiled in */
    float a0 = time_ms([&] {
        kc_stem_tc_launch<float, 8, true, KC_STEM_MIN_BLOCKS, -1>(0, xf, w7.d, b7.d, NULL, y7.d,
                                                                  &q, N, KC_ACT_RELU, 0.0f, 0.0f);
    });
    float c0 = time_ms([&] {
        kc_stem_tc_launch<float, 4, true, KC_STEM_MIN_BLOCKS, -1>(0, xf, w.d, b.d, NULL, y.d, &p,
                                                                  N, KC_ACT_CLIP, 0.0f, 6.0f);
    });
    float a4 = time_ms([&] {
        kc_stem_tc_launch<float, 8, true, 4, KC_ACT_RELU>(0, xf, w7.d, b7.d, NULL, y7.d, &q, N,
                                                          KC_ACT_RELU, 0.0f, 0.0f);
    });
    float a6 = time_ms([&] {
        kc_stem_tc_launch<float, 8, true, 6, KC_ACT_RELU>(0, xf, w7.d, b7.d, NULL, y7.d, &q, N,
                                                          KC_ACT_RELU, 0.0f, 0.0f);
    });
    printf("time stem_tc float32, activation at run time: ResNet-50 %.4f (compiled in %.4f) "
           "MobileNetV2 %.4f (%.4f) ms; ReLU compiled in, min blocks 4 %.4f 6 %.4f ms\n", a0, sf,
           c0, mf, a4, a6);
    /* ResNet-50's max pool 3x3/2 after the stem: the fixed-window kernel (kc_pool_nhwc)
     * against the loop kernel; 411 MB read, 103 MB written */
    KcConv2d pp = geom(64, 112, 112, 3, 3, 2, 1);
    __half *py = NULL;
    CK(cudaMalloc(&py, (size_t)N * 56 * 56 * 64 * sizeof(__half)));
    float pn = time_ms([&] { kc_pool_nhwc<__half>(0, y7.d, py, &pp, N, 1, 0); });
    float po = time_ms([&] {
        kc_pool_nhwc_vec_kernel<__half, int32_t><<<kc_grid(N * 56 * 56 * 8), KC_THREADS>>>(
            y7.d, py, kc_geom<int32_t>(&pp), (int32_t)N, 1, 0);
    });
    double pb = (double)N * (112 * 112 + 56 * 56) * 64 * 2;
    printf("time ResNet-50 max pool 3x3/2 b256: loop %.4f (%.2f TB/s) fixed 3x3 %.4f ms "
           "(%.2f TB/s)\n", po, pb / po / 1e9, pn, pb / pn / 1e9);
    cudaFree(py);
    cudaFree(xf);
    /* ResNet-50's 3x3 layers on the mma.sync core (layer1 64 @ 56x56 on 128x64 tiles, layer3
     * 256 @ 14x14 on 128x128): ReLU read at run time against compiled in */
    const int64_t L3[][2] = {{56, 64}, {28, 128}, {14, 256}};
    for (auto &l : L3) {
        KcConv2d c = geom(l[1], l[0], l[0], 3, 3, 1, 1);
        int64_t P = N * c.OH * c.OW, K = l[1];
        DevBuf cx(P * K), cw(9 * K * K), cb(K), cy(P * K);
        auto both = [&](auto run) { return time_ms([&] { run(); }); };
        float rt = both([&] {
            if (K <= 64)
                kc_igemm_mma_run<128, 64, 32, 64, 32, 4, -1>(0, cx.d, cw.d, cb.d, NULL, cy.d, &c,
                                                             P, K, KC_ACT_RELU, 0.0f, 0.0f);
            else
                kc_igemm_mma_run<128, 128, 64, 64, 32, 3, -1>(0, cx.d, cw.d, cb.d, NULL, cy.d, &c,
                                                              P, K, KC_ACT_RELU, 0.0f, 0.0f);
        });
        float ct = both([&] {
            kc_igemm_mma(0, cx.d, cw.d, cb.d, NULL, cy.d, &c, N, K, KC_ACT_RELU, 0.0f, 0.0f);
        });
        printf("time ResNet-50 3x3 %lld @ %lldx%lld b256: ReLU at run time %.4f compiled in "
               "%.4f ms (%.1f TFLOP/s)\n", (long long)K, (long long)l[0], (long long)l[0], rt,
               ct, 2.0 * P * K * 9 * K / ct / 1e9);
    }
}

/* --ncu: ResNet-50's stem (float32 NCHW input) and its max pool once each at batch 256, for
 * a profiler's single-launch reading */
static void ncu_once(void) {
    const int64_t N = 256;
    KcConv2d q = geom(3, 224, 224, 7, 7, 2, 3), pp = geom(64, 112, 112, 3, 3, 2, 1);
    DevBuf w7(147 * 64), b7(64), y7(N * q.OH * q.OW * 64), py(N * 56 * 56 * 64);
    float *xf = NULL;
    CK(cudaMalloc(&xf, (size_t)N * 3 * 224 * 224 * sizeof(float)));
    CK(cudaMemset(xf, 0, (size_t)N * 3 * 224 * 224 * sizeof(float)));
    kc_stem_tc<float>(0, xf, w7.d, b7.d, NULL, y7.d, &q, N, 64, KC_ACT_RELU, 0.0f, 0.0f);
    kc_pool_nhwc<__half>(0, y7.d, py.d, &pp, N, 1, 0);
    kc_pool_nhwc_vec_kernel<__half, int32_t><<<kc_grid(N * 56 * 56 * 8), KC_THREADS>>>(
        y7.d, py.d, kc_geom<int32_t>(&pp), (int32_t)N, 1, 0);
    CK(cudaDeviceSynchronize());
    cudaFree(xf);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--time") == 0) {
        timing_1x1();
        timing();
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--ncu") == 0) {
        ncu_once();
        return 0;
    }
    /* the blocked kernel directly: partial blocks, pads, strides, epilogues */
    dw_case<__half, KC_DW_PW>("fp16", 1, 2, 16, 9, 9, 1, 1, true, false, true, 2e-3);    /* OW 9 */
    dw_case<__half, KC_DW_PW>("fp16", 1, 2, 24, 13, 13, 2, 1, true, false, true, 2e-3);  /* OW 7 */
    dw_case<__half, KC_DW_PW>("fp16", 1, 3, 8, 7, 7, 1, 1, false, true, false, 2e-3);
    dw_case<__half, 4>("fp16", 1, 1, 32, 14, 14, 2, 1, true, true, true, 2e-3);   /* OW 7 */
    dw_case<__half, KC_DW_PW>("fp16", 1, 2, 8, 5, 5, 1, 0, true, false, false, 2e-3);    /* OW 3 */
    dw_case<__half, KC_DW_PW>("fp16", 1, 2, 8, 3, 3, 1, 0, true, true, true, 2e-3);      /* OW 1 */
    dw_case<__half, 4>("fp16", 1, 2, 16, 4, 4, 2, 1, true, false, true, 2e-3);    /* OW 2 */
    dw_case<__half, KC_DW_PW>("fp16", 2, 2, 16, 11, 10, 2, 1, true, true, true, 2e-3);
    dw_case<__half, 4>("fp16", 1, 2, 16, 10, 13, 1, 1, true, true, true, 2e-3);
    dw_case<__half, 8>("fp16", 1, 2, 16, 10, 21, 2, 1, true, false, true, 2e-3);
    dw_case<float, KC_DW_PW>("fp32", 1, 2, 12, 9, 11, 1, 1, true, true, true, 1e-5);
    dw_case<float, 4>("fp32", 1, 2, 4, 15, 15, 2, 1, true, false, false, 1e-5);
    dw_case<float, KC_DW_PW>("fp32", 2, 1, 8, 8, 9, 2, 0, false, true, true, 1e-5);
    /* the launcher: blocked (enough threads), unblocked, scalar (channels not in vectors) */
    dw_case<__half, 4>("fp16", 0, 16, 32, 56, 57, 1, 1, true, false, true, 2e-3);
    dw_case<__half, 4>("fp16", 0, 16, 64, 57, 56, 2, 1, true, true, true, 2e-3);
    dw_case<__half, 4>("fp16", 0, 1, 16, 9, 9, 2, 1, true, false, true, 2e-3);
    dw_case<__half, 4>("fp16", 0, 2, 12, 9, 9, 1, 1, true, false, true, 2e-3);
    dw_case<float, 4>("fp32", 0, 8, 16, 60, 61, 1, 1, true, true, true, 1e-5);
    small_case(0, 2, 3, 17, 19, 3, 32, 2, 1, false); /* MobileNetV2's stem, odd sides: TC */
    small_case(0, 1, 3, 15, 13, 3, 32, 1, 1, true);  /* TC, residual, partial tile */
    small_case(0, 1, 1, 9, 11, 3, 64, 1, 1, true);   /* TC, one step (9 of 16) */
    small_case(0, 2, 3, 16, 16, 3, 16, 1, 1, true);  /* CUDA cores: K 16 */
    small_case(0, 1, 2, 9, 9, 3, 24, 1, 1, false);   /* R*S*C 18 -> 24, K 24 */
    small_case(1, 2, 3, 29, 31, 7, 64, 2, 3, false); /* ResNet-50's stem: 10 steps */
    small_case(1, 1, 3, 20, 20, 7, 64, 2, 3, true);
    small_case(1, 1, 4, 12, 12, 5, 32, 1, 2, false); /* 100 -> 7 steps */
    small_case(1, 1, 3, 14, 14, 7, 48, 2, 3, false); /* K 48: the implicit GEMM */
    stem_case<float>("fp32", 2, 3, 29, 31, 7, 64, 2, 3, false);  /* ResNet-50's stem, odd */
    stem_case<__half>("fp16", 2, 3, 29, 31, 7, 64, 2, 3, false);
    stem_case<float>("fp32", 1, 3, 224, 224, 7, 64, 2, 3, false); /* OW 112: a half tile */
    stem_case<float>("fp32", 3, 3, 17, 19, 3, 32, 2, 1, true);   /* MobileNetV2's, residual */
    stem_case<__half>("fp16", 1, 1, 9, 11, 3, 64, 1, 1, true);   /* C 1, one step */
    stem_case<float>("fp32", 1, 4, 12, 70, 5, 32, 1, 2, false);  /* C 4, OW 70: 3 warps */
    stem_case<float>("fp32", 2, 3, 20, 20, 7, 32, 2, 0, true);   /* no pads, OW 7 */
    stem_case<__half>("fp16", 1, 2, 40, 300, 3, 64, 1, 1, false); /* OW 300: warps loop */
    stem_case<float>("fp32", 2, 3, 15, 17, 5, 64, 1, 2, true);   /* s C odd: 2-byte loads */
    stem_case<__half>("fp16", 1, 1, 33, 35, 7, 32, 2, 3, false); /* C 1 s 2: pairs, S C odd */
    mma_case(0, 2, 64, 9, 9, 3, 64, 1, 1, true, true);    /* P 162: a partial tile of rows */
    mma_case(0, 3, 24, 11, 13, 3, 40, 2, 1, true, false); /* C 24 < the 32-wide slice, K 40 */
    mma_case(0, 1, 136, 7, 7, 3, 200, 1, 1, true, true);  /* K 200: a partial 128 tile */
    mma_case(0, 2, 8, 10, 9, 3, 8, 2, 0, false, true);    /* C 8, K 8, no pads */
    mma_case(0, 1, 16, 12, 11, 5, 24, 1, 2, true, false); /* 5x5: 25 taps */
    mma_case(0, 2, 32, 9, 9, 1, 72, 2, 0, true, true);    /* 1x1 stride 2 */
    mma_case(0, 4, 128, 14, 14, 3, 128, 2, 1, true, true); /* ResNet-50's layer-2 stride 2 */
    mma_case(1, 2, 48, 10, 10, 3, 136, 1, 1, true, true); /* 64-wide slices over C 48 */
    mma_case(1, 1, 256, 7, 7, 3, 256, 1, 1, false, true);
    mma_case(2, 3, 40, 9, 8, 3, 56, 2, 1, true, true);
    mma_case(2, 1, 64, 6, 6, 3, 64, 1, 1, true, false);
    mma_case(0, 2, 64, 9, 9, 3, 64, 1, 1, true, true, KC_ACT_RELU);   /* 128x64, ReLU */
    mma_case(0, 1, 136, 7, 7, 3, 200, 2, 1, true, true, KC_ACT_RELU); /* 128x128, ReLU */
    mma_case(2, 3, 40, 9, 8, 3, 56, 1, 1, false, true, KC_ACT_RELU);
    if (kc_igemm_wg_built()) { /* the wgmma core's tiles on the same shapes */
        for (int cfg = 3; cfg <= 4; cfg++) {
            mma_case(cfg, 2, 64, 9, 9, 3, 64, 1, 1, true, true);
            mma_case(cfg, 3, 24, 11, 13, 3, 40, 2, 1, true, false);
            mma_case(cfg, 1, 136, 7, 7, 3, 200, 1, 1, true, true);
            mma_case(cfg, 2, 8, 10, 9, 3, 8, 2, 0, false, true);
            mma_case(cfg, 1, 16, 12, 11, 5, 24, 1, 2, true, false);
            mma_case(cfg, 2, 32, 9, 9, 1, 72, 2, 0, true, true);
            mma_case(cfg, 4, 128, 14, 14, 3, 128, 2, 1, true, true);
            mma_case(cfg, 2, 48, 10, 10, 3, 136, 1, 1, true, true);
            mma_case(cfg, 1, 256, 7, 7, 3, 256, 1, 1, false, true);
            mma_case(cfg, 3, 40, 9, 8, 3, 56, 1, 1, false, true, KC_ACT_RELU);
            mma_case(cfg, 2, 512, 7, 7, 3, 520, 1, 1, true, true, KC_ACT_RELU);
        }
        /* the halo core: tiles across rows and the image's end, pads 1 and 0, K below 64 */
        mma_case(5, 2, 64, 9, 9, 3, 64, 1, 1, true, true);
        mma_case(5, 3, 64, 11, 13, 3, 40, 1, 1, true, false);
        mma_case(5, 1, 64, 30, 29, 3, 64, 1, 1, false, true, KC_ACT_RELU);
        mma_case(5, 2, 64, 10, 7, 3, 8, 1, 0, true, true);
        mma_case(5, 2, 64, 56, 56, 3, 64, 1, 1, true, false, KC_ACT_RELU);
        mma_case(5, 1, 64, 1, 1, 3, 16, 1, 1, true, true);
        mma_case(0, 2, 64, 20, 20, 3, 64, 1, 1, true, true); /* the launcher's halo route */
    } else {
        printf("note: no wgmma code in this build (not sm_90a): its cases not run\n");
    }
    pool_case<__half>("fp16", 2, 64, 23, 21, 3, 2, 1); /* ResNet-50's pool, odd sides */
    pool_case<__half>("fp16", 3, 16, 9, 10, 3, 1, 0);  /* stride 1, no pads */
    pool_case<float>("fp32", 1, 12, 7, 5, 3, 2, 2);    /* pads 2: corner windows of 1 */
    pool_case<__half>("fp16", 1, 24, 8, 8, 2, 2, 0);   /* 2x2: the loop kernel */
    pool_case<__half>("fp16", 2, 6, 9, 9, 3, 2, 1);    /* C 6: not whole vectors */
    /* input and residual from the kernel launched just before (LateInputs): under KC_PDL=1 the
     * kernels' wait; every tile and core of the implicit GEMM, the pool's three kernels */
    for (int cfg = 0; cfg <= (kc_igemm_wg_built() ? 5 : 2); cfg++) {
        mma_case(cfg, 2, 64, 9, 9, 3, 64, 1, 1, true, true, KC_ACT_CLIP, true);
        if (cfg != 5) mma_case(cfg, 4, 128, 14, 14, 3, 128, 2, 1, true, true, KC_ACT_CLIP, true);
    }
    pool_case<__half>("fp16", 2, 64, 23, 21, 3, 2, 1, true);
    pool_case<__half>("fp16", 1, 24, 8, 8, 2, 2, 0, true);
    pool_case<__half>("fp16", 2, 6, 9, 9, 3, 2, 1, true);
    c1_case(2, 16, 9, 11, 96, true, false, 2);    /* MobileNetV2's 16 -> 96, P 198: partial */
    c1_case(1, 32, 6, 5, 192, true, true, 2);     /* 32 -> 192: 4 chunks of 48 */
    c1_case(1, 24, 7, 9, 144, true, true, 1);     /* 24 -> 144: 2 steps (8 zero), residual */
    c1_case(1, 32, 5, 7, 16, false, true, 0);     /* 32 -> 16, chunks of 16 */
    c1_case(3, 6, 4, 5, 32, true, false, 2);      /* C 6 */
    c1_case(1, 30, 6, 6, 48, true, false, 0);     /* C 30: not in eights */
    c1_case(1, 2, 1, 13, 64, true, true, 2);      /* C 2, P 13: one partial tile */
    c1_case(2, 18, 5, 5, 240, true, true, 2);     /* K 240: 5 chunks of 48 */
    c1_case(1, 8, 6, 7, 80, false, false, 1);     /* K 80: chunks of 16 */
    c1_case(12, 16, 112, 112, 32, true, false, 2); /* past the grid: the warps loop */
    c1_case(1, 34, 4, 4, 32, true, false, 2, KC_ERR_SHAPE); /* C over 32 */
    c1_case(1, 15, 4, 4, 32, true, false, 2, KC_ERR_SHAPE); /* C odd */
    c1_case(1, 16, 4, 4, 40, true, false, 2, KC_ERR_SHAPE); /* K not in sixteens */
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
