/* blas_gpu.cu: kc_lt_matmul's epilogues (kc_blas.cuh) against a double reference on the
 * host, on a GPU: D = act(A B + bias) with the exact erf GELU, ReLU and none, in float32
 * (erf GELU by kc_bias_act after the product: it must stay exact, 1e-5) and float16 (erf
 * GELU as cuBLASLt's tanh-form epilogue: within float16's rounding, 4e-3 of 1 + |y|), on
 * pre-activations spread over [-5, 5] where the two GELU forms differ most (|x| near 1
 * and 2.7), fresh random operands, D poisoned (NaN) before each run, odd shapes. Then the
 * products of one column (kc_gemv_kernel, or cuBLASLt where it does not fit), also with
 * their inputs written late by the kernel before (PDL builds).
 * usage: nvcc -O3 -arch=sm_90 -I runtime/cuda tests/cuda/blas_gpu.cu -o blas_gpu -lcublasLt
 *        ./blas_gpu; ends with "N passed, N failed". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "gpu_test.h"
#include "kc_blas.cuh"

static unsigned long long rng_state = 0x9e3779b97f4a7c15ull;

static double urand(void) { /* xorshift64, [0, 1) */
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

static double act_ref(int act, double x) {
    if (act == KC_ACT_RELU) return x > 0 ? x : 0;
    if (act == KC_ACT_GELU) return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    return x;
}

/* a device copy of h */
template <typename T>
static T *dev_copy(const std::vector<T> &h) {
    T *d;
    CK(cudaMalloc(&d, h.size() * sizeof(T)));
    CK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

/* Row-major Y (M, N) = act(X (M, K) W (K, N) + bias (N)), as the emitter maps it: the
 * column-major product Y^T = W^T X^T, m = N, n = M, bias along m. */
template <typename T>
static void case_one(const char *tname, int64_t M, int64_t N, int64_t K, int act, double tol,
                     cublasLtHandle_t lt, void *ws, size_t ws_size) {
    std::vector<T> x(M * K), w(K * N), b(N);
    std::vector<double> xh(M * K), wh(K * N), bh(N);
    /* x in {-1, 1} / sqrt(K) times a row scale, w in [-1, 1]: rows reach |y| up to ~5 */
    for (int64_t i = 0; i < M * K; i++) {
        double rs = 0.5 + 2.0 * (double)(i / K % 7) / 6.0;
        x[i] = (T)(float)((urand() < 0.5 ? -rs : rs) / sqrt((double)K)), xh[i] = (float)x[i];
    }
    for (int64_t i = 0; i < K * N; i++) w[i] = (T)(float)(2.0 * urand() - 1.0), wh[i] = (float)w[i];
    for (int64_t i = 0; i < N; i++) b[i] = (T)(float)(urand() - 0.5), bh[i] = (float)b[i];
    T *dx = dev_copy(x), *dw = dev_copy(w), *db = dev_copy(b), *dy;
    CK(cudaMalloc(&dy, M * N * sizeof(T)));
    CK(cudaMemset(dy, 0xff, M * N * sizeof(T))); /* NaN in both types */
    KcMatmul p;
    memset(&p, 0, sizeof p);
    p.m = N, p.n = M, p.k = K;
    p.A = dw, p.B = dx, p.D = dy;
    p.half = sizeof(T) == 2;
    p.lda = N, p.ldb = K, p.ldd = N;
    p.batch = 1;
    p.alpha = 1.0f;
    p.bias = db;
    p.act = act;
    int rc = kc_lt_matmul(lt, 0, ws, ws_size, CUBLAS_COMPUTE_32F, &p, NULL, 0);
    CK(cudaDeviceSynchronize());
    std::vector<T> y(M * N);
    CK(cudaMemcpy(y.data(), dy, M * N * sizeof(T), cudaMemcpyDeviceToHost));
    double worst = 0, xmax = 0;
    long bad = rc != KC_OK;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = bh[j];
            for (int64_t t = 0; t < K; t++) s += xh[i * K + t] * wh[t * N + j];
            xmax = fmax(xmax, fabs(s));
            double want = act_ref(act, s), got = (float)y[i * N + j];
            double e = fabs(got - want) / (1.0 + fabs(want));
            if (!(e <= tol)) bad++, e = e != e ? INFINITY : e;
            worst = fmax(worst, e);
        }
    const char *an = act == KC_ACT_GELU ? "erf GELU" : act == KC_ACT_RELU ? "ReLU" : "none";
    if (bad == 0)
        printf("ok   matmul %s %lldx%lldx%lld bias + %s (max err %.3g, |x| up to %.2f)\n", tname,
               (long long)M, (long long)N, (long long)K, an, worst, xmax), passed++;
    else
        printf("FAIL matmul %s %lldx%lldx%lld bias + %s: max err %.3g > %.3g, %ld bad, rc %d\n",
               tname, (long long)M, (long long)N, (long long)K, an, worst, tol, bad, rc), failed++;
    cudaFree(dx), cudaFree(dw), cudaFree(db), cudaFree(dy);
}

/* One column (a batch-1 classifier: y (N) = act(W (N, K) x (K) + beta c + bias), W as
 * PyTorch's Linear stores it, the emitter's trans_a product with m = N, n = 1): kc_gemv_kernel
 * where it fits (gemv: checked against kc_gemv_fits), else cuBLASLt, both through
 * kc_lt_matmul; with late, x and c are written by the kernel launched just before (poison
 * until then: LateInputs), for KC_PDL=1 builds. */
template <typename T>
static void case_gemv(const char *tname, int64_t N, int64_t K, int act, int with_c, int gemv,
                      bool late, double tol, cublasLtHandle_t lt, void *ws, size_t ws_size) {
    std::vector<T> x(K), w(N * K), b(N), c(N);
    std::vector<double> xh(K), wh(N * K), bh(N), ch(N);
    for (int64_t i = 0; i < K; i++)
        x[i] = (T)(float)((2.0 * urand() - 1.0) * 3.0 / sqrt((double)K)), xh[i] = (float)x[i];
    for (int64_t i = 0; i < N * K; i++) w[i] = (T)(float)(2.0 * urand() - 1.0), wh[i] = (float)w[i];
    for (int64_t i = 0; i < N; i++) b[i] = (T)(float)(urand() - 0.5), bh[i] = (float)b[i];
    for (int64_t i = 0; i < N; i++) c[i] = (T)(float)(2.0 * urand() - 1.0), ch[i] = (float)c[i];
    T *dx = dev_copy(x), *dw = dev_copy(w), *db = dev_copy(b), *dc = dev_copy(c), *dy;
    CK(cudaMalloc(&dy, N * sizeof(T)));
    CK(cudaMemset(dy, 0xff, N * sizeof(T)));
    KcMatmul p;
    memset(&p, 0, sizeof p);
    p.m = N, p.n = 1, p.k = K;
    p.trans_a = 1;
    p.A = dw, p.B = dx, p.D = dy;
    p.C = with_c ? dc : NULL;
    p.beta = with_c ? 0.75f : 0.0f;
    p.half = sizeof(T) == 2;
    p.lda = K, p.ldb = K, p.ldd = N;
    p.batch = 1;
    p.alpha = 1.25f;
    p.bias = db;
    p.act = act;
    int rc, fits = kc_gemv_fits(&p);
    {
        LateInputs li(late, dx, K * sizeof(T), with_c ? dc : NULL, with_c ? N * sizeof(T) : 0);
        rc = kc_lt_matmul(lt, li.s, ws, ws_size, CUBLAS_COMPUTE_32F, &p, NULL, 0);
        CK(cudaDeviceSynchronize());
    }
    std::vector<T> y(N);
    CK(cudaMemcpy(y.data(), dy, N * sizeof(T), cudaMemcpyDeviceToHost));
    double worst = 0;
    long bad = (rc != KC_OK) + (fits != gemv);
    for (int64_t j = 0; j < N; j++) {
        double s = 0;
        for (int64_t t = 0; t < K; t++) s += wh[j * K + t] * xh[t];
        s = 1.25 * s + bh[j] + (with_c ? 0.75 * ch[j] : 0.0);
        double want = act_ref(act, s), got = (float)y[j];
        double e = fabs(got - want) / (1.0 + fabs(want));
        if (!(e <= tol)) bad++, e = e != e ? INFINITY : e;
        worst = fmax(worst, e);
    }
    const char *an = act == KC_ACT_GELU ? "erf GELU" : act == KC_ACT_RELU ? "ReLU" : "none";
    printf("%s one column %s %lldx%lld%s + %s (%s%s): max err %.3g, rc %d\n",
           bad ? "FAIL" : "ok  ", tname, (long long)N, (long long)K, with_c ? " + beta c" : "", an,
           fits ? "kc_gemv_kernel" : "cuBLASLt", late ? ", late inputs" : "", worst, rc);
    if (bad) failed++; else passed++;
    cudaFree(dx), cudaFree(dw), cudaFree(db), cudaFree(dc), cudaFree(dy);
}

int main() {
    cublasLtHandle_t lt;
    if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) {
        printf("FAIL cublasLtCreate\n0 passed, 1 failed\n");
        return 1;
    }
    size_t ws_size = 32u << 20;
    void *ws;
    CK(cudaMalloc(&ws, ws_size));
    case_one<float>("fp32", 130, 264, 72, KC_ACT_GELU, 1e-5, lt, ws, ws_size);
    case_one<float>("fp32", 37, 200, 768, KC_ACT_GELU, 1e-5, lt, ws, ws_size);
    case_one<float>("fp32", 64, 96, 40, KC_ACT_RELU, 1e-5, lt, ws, ws_size);
    case_one<__half>("fp16", 130, 264, 72, KC_ACT_GELU, 4e-3, lt, ws, ws_size);
    case_one<__half>("fp16", 128, 3072, 768, KC_ACT_GELU, 4e-3, lt, ws, ws_size); /* BERT fc1 */
    case_one<__half>("fp16", 37, 200, 64, KC_ACT_GELU, 4e-3, lt, ws, ws_size);
    case_one<__half>("fp16", 64, 96, 40, KC_ACT_NONE, 4e-3, lt, ws, ws_size);
    for (int late = 0; late < 2; late++) {
        case_gemv<__half>("fp16", 1000, 2048, KC_ACT_NONE, 0, KC_GEMV, late, 4e-3, lt, ws, ws_size);
        case_gemv<__half>("fp16", 768, 768, KC_ACT_GELU, 1, KC_GEMV, late, 4e-3, lt, ws, ws_size);
        case_gemv<__half>("fp16", 2, 768, KC_ACT_RELU, 0, KC_GEMV, late, 4e-3, lt, ws, ws_size);
        case_gemv<float>("fp32", 1000, 2048, KC_ACT_RELU, 1, KC_GEMV, late, 1e-5, lt, ws, ws_size);
        case_gemv<float>("fp32", 37, 100, KC_ACT_GELU, 0, KC_GEMV, late, 1e-5, lt, ws, ws_size);
        /* k not a multiple of a 16-byte load: cuBLASLt */
        case_gemv<__half>("fp16", 300, 770, KC_ACT_NONE, 1, 0, late, 4e-3, lt, ws, ws_size);
        case_gemv<float>("fp32", 300, 514, KC_ACT_RELU, 0, 0, late, 1e-5, lt, ws, ws_size);
    }
    cudaFree(ws);
    cublasLtDestroy(lt);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
