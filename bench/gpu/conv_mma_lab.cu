/* conv_mma_lab.cu: ResNet-50's fp16 3x3 convolutions at batch 256 (and 32) on an H200, one
 * process: the WMMA implicit GEMM (kc_igemm_nhwc), the mma.sync core (kc_igemm_mma_kernel,
 * several tiles) and im2col + cuBLASLt (the product alone and with its im2col), CUDA events,
 * median of 20 after 5 warm-ups; each mma.sync tile's output against the WMMA kernel's
 * (max |difference|, both accumulate in float32). Also ResNet-50's 1x1 products as the same
 * core (R = S = 1) against cuBLASLt.
 * usage: nvcc -O3 -arch=sm_90 -I runtime/cuda bench/gpu/conv_mma_lab.cu -lcublasLt -o lab
 *        ./lab [BATCH] (default 256); figures in docs/cuda.md (2026-11-28). */
#include <algorithm>
#include <math.h>
#include <stdio.h>
#include <vector>

#include "kc_blas.cuh"
#include "kc_igemm.cuh"
#include "lab.cuh"
#include "kc_nn.cuh"


struct Shape {
    const char *name;
    int C, K, H, R, st, count;
};

#define MMA(BM, BN, BK, WM, WN, ST)                                                          \
    {#BM "x" #BN "x" #BK " w" #WM "x" #WN " s" #ST, [](const __half *x, const __half *w,      \
                                                       const __half *b, const __half *r,      \
                                                       __half *y, const KcConv2d *p,          \
                                                       int64_t P, int64_t K) {                \
         return kc_igemm_mma_launch<BM, BN, BK, WM, WN, ST>(0, x, w, b, r, y, p, P, K,          \
                                                            KC_ACT_RELU, 0.0f, 0.0f);          \
     }}

typedef int (*Launch)(const __half *, const __half *, const __half *, const __half *, __half *,
                      const KcConv2d *, int64_t, int64_t);
struct Cfg {
    const char *name;
    Launch f;
};

int main(int argc, char **argv) {
    int N = argc > 1 ? atoi(argv[1]) : 256;
    Shape shapes[] = {
        {"l1 3x3 64", 64, 64, 56, 3, 1, 3},     {"l2 3x3 128 s2", 128, 128, 56, 3, 2, 1},
        {"l2 3x3 128", 128, 128, 28, 3, 1, 3},  {"l3 3x3 256 s2", 256, 256, 28, 3, 2, 1},
        {"l3 3x3 256", 256, 256, 14, 3, 1, 5},  {"l4 3x3 512 s2", 512, 512, 14, 3, 2, 1},
        {"l4 3x3 512", 512, 512, 7, 3, 1, 2},   {"l1 1x1 64->256", 64, 256, 56, 1, 1, 3},
        {"l1 1x1 256->64", 256, 64, 56, 1, 1, 2}, {"l2 1x1 512->128", 512, 128, 28, 1, 1, 3},
        {"l2 1x1 128->512", 128, 512, 28, 1, 1, 4}, {"l3 1x1 256->1024", 256, 1024, 14, 1, 1, 6},
        {"l3 1x1 1024->256", 1024, 256, 14, 1, 1, 5}, {"l4 1x1 512->2048", 512, 2048, 7, 1, 1, 3},
        {"l4 1x1 2048->512", 2048, 512, 7, 1, 1, 2},
    };
    Cfg cfgs[] = { /* the launcher's two tiles first, then the ones they were chosen over */
        MMA(128, 64, 32, 64, 32, 4),  MMA(128, 128, 64, 64, 32, 3), MMA(128, 64, 32, 64, 32, 6),
        MMA(256, 64, 32, 64, 32, 4),  MMA(128, 64, 64, 64, 32, 3),  MMA(128, 64, 32, 32, 32, 4),
        MMA(64, 64, 32, 32, 32, 4),   MMA(128, 128, 64, 64, 64, 3), MMA(128, 128, 64, 64, 64, 4),
        MMA(128, 128, 32, 64, 32, 4), MMA(128, 256, 64, 64, 64, 3), MMA(256, 128, 64, 64, 64, 3),
    };
    const int ncfg = sizeof cfgs / sizeof cfgs[0];
    cublasLtHandle_t lt;
    if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) return 2;
    size_t ws_size = 32 << 20;
    void *ws;
    CK(cudaMalloc(&ws, ws_size));
    printf("batch %d; ms per layer (median of 20); TFLOP/s; diff = max |mma - wmma|\n", N);
    double tot_old = 0, tot_lt = 0, tot_best = 0;
    for (const Shape &sh : shapes) {
        KcConv2d p = lab_geom(sh.C, sh.H, sh.R, sh.st);
        int64_t P = (int64_t)N * p.OH * p.OW, K = sh.K, RSC = sh.R * sh.R * sh.C;
        double flop = 2.0 * P * K * RSC;
        __half *x = lab_dev((size_t)N * sh.H * sh.H * sh.C, 1, 2.0f);
        __half *w = lab_dev((size_t)RSC * K, 2, 2.0f / sqrtf((float)RSC));
        __half *b = lab_dev(K, 3, 0.5f), *r = lab_dev(P * K, 4, 1.0f);
        __half *y0, *y1, *col = NULL;
        CK(cudaMalloc(&y0, P * K * 2));
        CK(cudaMalloc(&y1, P * K * 2));
        bool is1x1 = sh.R == 1 && sh.st == 1;
        if (!is1x1) CK(cudaMalloc(&col, P * RSC * 2));
        printf("%-18s P %7lld K %4lld RSC %5lld x%d  %.1f GFLOP\n", sh.name, (long long)P,
               (long long)K, (long long)RSC, sh.count, flop / 1e9);
        float t_old = -1;
        if (!is1x1) {
            t_old = time_ms([&] {
                kc_igemm_nhwc(0, x, w, b, r, y0, &p, N, K, KC_ACT_RELU, 0.0f, 0.0f);
            });
            printf("  %-26s %8.4f ms %6.1f TF/s\n", "wmma kc_igemm_nhwc", t_old, flop / t_old / 1e9);
        }
        /* cuBLASLt: D (K, P) col-major = W^T... as the bundle: m = K, n = P, k = RSC */
        KcMatmul m;
        memset(&m, 0, sizeof m);
        m.m = K, m.k = RSC, m.n = P, m.batch = 1, m.lda = K, m.ldb = RSC, m.ldd = K;
        m.alpha = 1.0f, m.beta = 1.0f, m.C = r, m.bias = b, m.act = KC_ACT_RELU, m.half = 1;
        m.A = w, m.B = is1x1 ? x : col, m.D = is1x1 ? y0 : y0;
        if (!is1x1) kc_im2col_nhwc(0, x, col, &p, N, 1);
        if (is1x1) m.D = y0;
        float t_mm = time_ms([&] {
            kc_lt_matmul(lt, 0, ws, ws_size, CUBLAS_COMPUTE_32F, &m, NULL, 0);
        });
        float t_lt = t_mm;
        if (!is1x1) {
            t_lt = time_ms([&] {
                kc_im2col_nhwc(0, x, col, &p, N, 1);
                kc_lt_matmul(lt, 0, ws, ws_size, CUBLAS_COMPUTE_32F, &m, NULL, 0);
            });
            printf("  %-26s %8.4f ms %6.1f TF/s (product alone %.4f ms, %.1f TF/s)\n",
                   "im2col + cuBLASLt", t_lt, flop / t_lt / 1e9, t_mm, flop / t_mm / 1e9);
        } else {
            printf("  %-26s %8.4f ms %6.1f TF/s\n", "cuBLASLt", t_lt, flop / t_lt / 1e9);
        }
        CK(cudaDeviceSynchronize());
        if (is1x1) { /* the reference for the diff: the WMMA kernel on the 1x1 geometry */
            kc_igemm_nhwc(0, x, w, b, r, y0, &p, N, K, KC_ACT_RELU, 0.0f, 0.0f);
            CK(cudaDeviceSynchronize());
        } else {
            kc_igemm_nhwc(0, x, w, b, r, y0, &p, N, K, KC_ACT_RELU, 0.0f, 0.0f);
        }
        float best = 1e9;
        for (int c = 0; c < ncfg; c++) {
            CK(cudaMemset(y1, 0xff, P * K * 2));
            cfgs[c].f(x, w, b, r, y1, &p, P, K);
            CK(cudaDeviceSynchronize());
            double d = lab_maxdiff(y0, y1, P * K);
            float t = time_ms([&] { cfgs[c].f(x, w, b, r, y1, &p, P, K); });
            best = std::min(best, t);
            printf("  mma %-22s %8.4f ms %6.1f TF/s diff %.3g%s\n", cfgs[c].name, t,
                   flop / t / 1e9, d, d > 0.05 ? "  MISMATCH" : "");
        }
        float t_auto = time_ms([&] {
            kc_igemm_mma(0, x, w, b, r, y1, &p, N, K, KC_ACT_RELU, 0.0f, 0.0f);
        });
        printf("  %-26s %8.4f ms %6.1f TF/s\n", "kc_igemm_mma (its rule)", t_auto,
               flop / t_auto / 1e9);
        tot_old += sh.count * (t_old > 0 ? std::min(t_old, t_lt) : t_lt);
        tot_lt += sh.count * t_lt;
        tot_best += sh.count * std::min(best, t_old > 0 ? std::min(t_old, t_lt) : t_lt);
        cudaFree(x), cudaFree(w), cudaFree(b), cudaFree(r), cudaFree(y0), cudaFree(y1);
        if (col) cudaFree(col);
    }
    printf("sum over ResNet-50's layers: min(old, lt) %.3f ms, lt %.3f, with the best mma %.3f\n",
           tot_old, tot_lt, tot_best);
    return 0;
}
