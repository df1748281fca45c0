/* int8_gemm_lab.cu: ResNet-50's 1x1 convolutions at batch 256 timed three ways, to choose
 * how Kiln's INT8 bundle should run them: Kiln's kc_qconv (uint8 x int8, the requantization
 * and residual fused, byte-exact), cuBLASLt int8 (IMMA: s8 x s8 -> s32; s8 x s8 -> s8 with a
 * per-channel float alpha and a float bias, CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO;
 * and with the residual as C, ..._BETA_HOST) and cuBLASLt fp16 (f16 x f16 -> f16, fp32
 * accumulation, the current fp16 path's product). The products are Y (rows x N) = X (rows x
 * K) W^T, both row-major: cuBLASLt's column-major "TN" form. Each cuBLASLt form tries the
 * heuristic's first 8 algorithms and keeps the fastest (median of 10 after 3 warm-ups); Kiln's
 * kernel is one launch form (median of 10). A stride-2 downsample is Kiln's strided 1x1; the
 * GEMMs time it as a plain product of the output's rows (the gather not counted).
 * The 1x1 form (kc_qconv1x1, 64- and 128-channel tiles) is timed beside kc_qconv's tiled
 * kernel (built with -DKC_Q1X1=0, so that kc_qconv is the tiled kernel) and its bytes compared
 * with that kernel's on every shape (exit 1 if any differ); -DKC_Q1X1_KMAX=512 lets the form
 * take every shape's K up to 512 (a lab-only reach: it takes 64 and 128 in bundles).
 * usage: nvcc -std=c++17 -O3 -arch=sm_90 -DKC_Q1X1=0 -DKC_Q1X1_KMAX=512 -I runtime/cuda \
 *            bench/gpu/int8_gemm_lab.cu -lcublasLt
 *        ./a.out     (one line a shape, then the sums weighted by the count in the model)
 *        ./a.out quick   (layer1 conv3, layer1 downsample, layer2 conv3; Kiln's kernels only:
 *                         with -DKC_QEPI_LAB=1/2/3, kc_qconv.cuh's timing-only epilogue knob) */
#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include <cublasLt.h>
#include <cuda_fp16.h>

#include "kc_qconv.cuh"

#define CK(call)                                                                            \
    do {                                                                                    \
        cudaError_t e_ = (call);                                                            \
        if (e_ != cudaSuccess) {                                                            \
            printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__);  \
            exit(2);                                                                        \
        }                                                                                   \
    } while (0)
#define LK(call)                                                                            \
    do {                                                                                    \
        cublasStatus_t s_ = (call);                                                         \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                  \
            printf("  (cublasLt status %d at line %d)\n", (int)s_, __LINE__);               \
            return -1.f;                                                                    \
        }                                                                                   \
    } while (0)

struct Shape {
    const char *what;
    int H, W, C, M, stride, res, count; /* input H x W x C at batch 256 */
};

__global__ void fill_kernel(uint8_t *p, size_t n, uint32_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
        p[i] = (uint8_t)h;
    }
}
__global__ void fill_half_kernel(__half *p, size_t n, uint32_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
        p[i] = __float2half(((int)(h & 255) - 128) / 128.f);
    }
}

template <class F> static float median_ms(F f, int reps = 10) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++) f();
    std::vector<float> ms;
    for (int i = 0; i < reps; i++) {
        CK(cudaEventRecord(a));
        f();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float t;
        CK(cudaEventElapsedTime(&t, a, b));
        ms.push_back(t);
    }
    cudaEventDestroy(a), cudaEventDestroy(b);
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

static cublasLtHandle_t lt;
static void *ws;
static const size_t WS = 32 << 20;

/* mode: 0 s8 -> s32; 1 s8 -> s8, alpha vector, bias; 2 the same with C = residual (beta
 * host); 3 f16 -> f16, bias + relu epilogue. Returns the best median ms, -1 when refused. */
static float lt_time(int mode, int64_t rows, int K, int N, const void *A, const void *B,
                     void *D, const void *Cres, const float *alpha_vec, const void *bias) {
    bool i8 = mode < 3;
    cudaDataType_t ab = i8 ? CUDA_R_8I : CUDA_R_16F;
    cudaDataType_t dt = mode == 0 ? CUDA_R_32I : i8 ? CUDA_R_8I : CUDA_R_16F;
    cublasComputeType_t ct = i8 ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F;
    cudaDataType_t st = mode == 0 ? CUDA_R_32I : CUDA_R_32F;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc, ld;
    LK(cublasLtMatmulDescCreate(&op, ct, st));
    cublasOperation_t T = CUBLAS_OP_T, Nn = CUBLAS_OP_N;
    LK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &T, sizeof T));
    LK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &Nn, sizeof Nn));
    if (mode == 1 || mode == 2) {
        int32_t pm = mode == 1 ? CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO
                               : CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST;
        LK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm));
    }
    if (mode >= 1) {
        cublasLtEpilogue_t epi = mode == 3 ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
        LK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
        LK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
        if (i8) {
            int32_t bt = CUDA_R_32F;
            LK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
        }
    }
    LK(cublasLtMatrixLayoutCreate(&la, ab, K, N, K));
    LK(cublasLtMatrixLayoutCreate(&lb, ab, K, rows, K));
    LK(cublasLtMatrixLayoutCreate(&lc, dt, N, rows, N));
    LK(cublasLtMatrixLayoutCreate(&ld, dt, N, rows, N));
    cublasLtMatmulPreference_t pref;
    LK(cublasLtMatmulPreferenceCreate(&pref));
    size_t wss = WS;
    LK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wss, sizeof wss));
    cublasLtMatmulHeuristicResult_t h[8];
    int found = 0;
    LK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, ld, pref, 8, h, &found));
    int32_t one_i = 1, zero_i = 0;
    float one_f = 1.f, zero_f = 0.f, beta_res = 0.5f;
    const void *alpha = mode == 0 ? (const void *)&one_i : mode <= 2 ? (const void *)alpha_vec : &one_f;
    const void *beta = mode == 0 ? (const void *)&zero_i : mode == 2 ? (const void *)&beta_res : &zero_f;
    const void *C = mode == 2 ? Cres : D;
    float best = -1.f;
    for (int i = 0; i < found; i++) {
        cublasStatus_t s0 = cublasLtMatmul(lt, op, alpha, A, la, B, lb, beta, C, lc, D, ld, &h[i].algo, ws, WS, 0);
        if (s0 != CUBLAS_STATUS_SUCCESS || cudaDeviceSynchronize() != cudaSuccess) continue;
        float t = median_ms([&] { cublasLtMatmul(lt, op, alpha, A, la, B, lb, beta, C, lc, D, ld, &h[i].algo, ws, WS, 0); });
        if (best < 0 || t < best) best = t;
    }
    if (!found) printf("  (mode %d: no algorithm)\n", mode);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la), cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc), cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(op);
    return best;
}

int main(int argc, char **argv) {
    /* "quick": layer1 conv3, layer1 downsample and layer2 conv3 only, Kiln's kernels only (the
     * epilogue A/B of -DKC_QEPI_LAB, and the launch that ncu profiles) */
    const bool quick = argc > 1 && !strcmp(argv[1], "quick");
    static const Shape shapes[] = {
        /* what                      H    W    C     M  str res count */
        {"l1.0 conv1 64->64",        56,  56,  64,   64, 1, 0, 1},
        {"l1 conv1 256->64",         56,  56,  256,  64, 1, 0, 2},
        {"l1 conv3 64->256 +res",    56,  56,  64,  256, 1, 1, 3},
        {"l1 downsample 64->256",    56,  56,  64,  256, 1, 0, 1},
        {"l2.0 conv1 256->128",      56,  56,  256, 128, 1, 0, 1},
        {"l2 conv1 512->128",        28,  28,  512, 128, 1, 0, 3},
        {"l2 conv3 128->512 +res",   28,  28,  128, 512, 1, 1, 4},
        {"l2 downsample s2 256->512",56,  56,  256, 512, 2, 0, 1},
        {"l3.0 conv1 512->256",      28,  28,  512, 256, 1, 0, 1},
        {"l3 conv1 1024->256",       14,  14, 1024, 256, 1, 0, 5},
        {"l3 conv3 256->1024 +res",  14,  14,  256, 1024, 1, 1, 6},
        {"l3 downsample s2 512->1024",28, 28,  512, 1024, 2, 0, 1},
        {"l4.0 conv1 1024->512",     14,  14, 1024, 512, 1, 0, 1},
        {"l4 conv1 2048->512",        7,   7, 2048, 512, 1, 0, 2},
        {"l4 conv3 512->2048 +res",   7,   7,  512, 2048, 1, 1, 3},
        {"l4 downsample s2 1024->2048",14, 14, 1024, 2048, 2, 0, 1},
    };
    const int NB = 256;
    if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) return 2;
    CK(cudaMalloc(&ws, WS));
    /* the largest operands: 256 x 56 x 56 x 256 bytes in, rows x N x 4 bytes out */
    size_t maxx = (size_t)NB * 56 * 56 * 256, maxy = (size_t)NB * 56 * 56 * 256;
    uint8_t *x, *r, *y;
    int8_t *w;
    int32_t *rq, *y32;
    __half *xh, *wh, *yh, *bh;
    float *alpha, *biasf;
    CK(cudaMalloc(&x, maxx));
    CK(cudaMalloc(&r, maxy));
    CK(cudaMalloc(&y, maxy));
    CK(cudaMalloc(&w, 2048 * 2048));
    CK(cudaMalloc(&rq, 4 * 2048 * 4));
    CK(cudaMalloc(&y32, maxy * 4));
    CK(cudaMalloc(&xh, maxx * 2));
    CK(cudaMalloc(&wh, 2048 * 2048 * 2));
    CK(cudaMalloc(&yh, maxy * 2));
    CK(cudaMalloc(&bh, 2048 * 2));
    CK(cudaMalloc(&alpha, 2048 * 4));
    CK(cudaMalloc(&biasf, 2048 * 4));
    fill_kernel<<<1024, 256>>>(x, maxx, 1), fill_kernel<<<1024, 256>>>(r, maxy, 2);
    fill_kernel<<<1024, 256>>>((uint8_t *)w, 2048 * 2048, 3);
    fill_half_kernel<<<1024, 256>>>(xh, maxx, 4), fill_half_kernel<<<1024, 256>>>(wh, 2048 * 2048, 5);
    fill_half_kernel<<<8, 256>>>(bh, 2048, 6);
    {
        std::vector<float> a(2048), b(2048);
        for (int i = 0; i < 2048; i++) a[i] = 1e-3f * (1 + i % 7), b[i] = (float)(i % 13) - 6;
        CK(cudaMemcpy(alpha, a.data(), 2048 * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(biasf, b.data(), 2048 * 4, cudaMemcpyHostToDevice));
    }
    CK(cudaDeviceSynchronize());
    double sum[7] = {0};
    printf("%-28s %8s %8s %8s %8s %8s %8s %8s  (ms)\n", "shape b256", "kiln", "1x1 bn64", "1x1 bn128", "lt s32",
           "lt s8+C", "lt f16", "rows");
    bool exact = true;
    for (const Shape &s : shapes) {
        if (quick && !(s.C <= 128 && s.M >= 256 && s.stride == 1)) continue;
        KcQConv p;
        p.N = NB, p.H = s.H, p.W = s.W, p.C = s.C, p.M = s.M, p.R = p.S = 1;
        p.sh = p.sw = s.stride, p.ph = p.pw = 0, p.dh = p.dw = 1;
        p.OH = (s.H - 1) / s.stride + 1, p.OW = (s.W - 1) / s.stride + 1;
        p.K = s.C, p.Kp = (s.C + KC_QBK - 1) / KC_QBK * KC_QBK;
        p.x_zp = 3, p.y_zp = 0, p.r_zp = 5, p.lo = 0, p.hi = 255;
        {
            std::vector<int32_t> q(4 * s.M);
            for (int m = 0; m < s.M; m++) {
                q[m] = (m * 7919) % 40000 - 20000;
                q[s.M + m] = (1 << 19) + m;
                q[2 * s.M + m] = s.res ? (1 << 30) + m : 0;
                q[3 * s.M + m] = s.res ? 31 : 36;
            }
            CK(cudaMemcpy(rq, q.data(), q.size() * 4, cudaMemcpyHostToDevice));
        }
        int64_t rows = (int64_t)NB * p.OH * p.OW;
        double ops = 2.0 * rows * s.M * s.C;
        float tk = median_ms([&] { kc_qconv(0, x, w, rq, s.res ? r : NULL, y, &p); });
        CK(cudaGetLastError());
        /* the 1x1 form with 64- and 128-channel tiles, its bytes against kc_qconv's */
        size_t ny = (size_t)rows * s.M;
        std::vector<uint8_t> ya(ny), yb(ny);
        CK(cudaMemcpy(ya.data(), y, ny, cudaMemcpyDeviceToHost));
        float t1[2] = {-1.f, -1.f};
        for (int i = 0; i < 2; i++) {
            CK(cudaMemset(y, 0xa5, ny));
            if (!kc_qconv1x1(0, x, w, rq, s.res ? r : NULL, y, &p, 64 << i)) continue;
            CK(cudaDeviceSynchronize());
            CK(cudaGetLastError());
            CK(cudaMemcpy(yb.data(), y, ny, cudaMemcpyDeviceToHost));
            size_t bad = 0;
            for (size_t e = 0; e < ny; e++) bad += ya[e] != yb[e];
            if (bad && !KC_QEPI_LAB) printf("  1x1 bn %d: %zu of %zu bytes differ from kc_qconv\n", 64 << i, bad, ny), exact = false;
            t1[i] = median_ms([&] { kc_qconv1x1(0, x, w, rq, s.res ? r : NULL, y, &p, 64 << i); });
        }
        float t32 = quick ? -1.f : lt_time(0, rows, s.C, s.M, w, x, y32, NULL, alpha, biasf);
        float t8 = -1.f; /* refused (CUBLAS_STATUS_NOT_SUPPORTED, CUDA 13.0): not asked again */
        float t8c = -1.f; /* the residual as C: no faster than kc_qconv (docs/cuda.md), not timed */
        float th = quick ? -1.f : lt_time(3, rows, s.C, s.M, wh, xh, yh, NULL, NULL, bh);
        printf("%-28s %8.4f %8.4f %8.4f %8.4f %8.4f %8.4f %8lld  (%.0f TOPS kiln) x%d\n", s.what, tk, t1[0], t1[1],
               t32, t8c, th, (long long)rows, ops / tk / 1e9, s.count);
        float best = tk;
        for (int i = 0; i < 2; i++)
            if (t1[i] > 0 && t1[i] < best) best = t1[i];
        float v[6] = {tk, best, t32, t8, t8c, th};
        for (int i = 0; i < 6; i++) sum[i] += s.count * v[i];
    }
    printf("model sums (x count): kiln %.3f ms, kiln with the best 1x1 form %.3f, lt s32 %.3f, lt s8 %.3f, "
           "lt s8 with residual C %.3f, lt f16 %.3f\n", sum[0], sum[1], sum[2], sum[3], sum[4], sum[5]);
    printf("1x1 form %s\n", exact ? "byte-identical to kc_qconv on every shape" : "DIFFERS");
    return exact ? 0 : 1;
}
