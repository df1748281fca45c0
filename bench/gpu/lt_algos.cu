/* lt_algos.cu: how much cuBLASLt's first heuristic leaves on the table for BERT-base's fp16
 * products (the shapes of bench/gpu's BERT-base at batch 1, 32 and 256: 128 rows a sequence).
 * For each product D(N x M) = W^T(N x K) X^T(K x M) + bias, column-major as kc_blas.cuh maps a
 * row-major X W (fp16 storage, fp32 compute, BIAS epilogue), it asks the heuristic for up to
 * 16 algorithms with the given workspace, times each (CUDA events, median of 20 after 5
 * warm-ups, random operands) and prints the first's time, the best's, and the best's index.
 * usage: nvcc -O2 -arch=sm_90 bench/gpu/lt_algos.cu -lcublasLt -o lt && ./lt [WS_MIB (8)] */
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { if ((x) != 0) { printf("error %d at %s:%d\n", (int)(x), __FILE__, __LINE__); exit(1); } } while (0)

static float time_algo(cublasLtHandle_t lt, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t la,
                       cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t ld, const void *A,
                       const void *B, void *D, const cublasLtMatmulAlgo_t *algo, void *ws,
                       size_t wss, cudaStream_t s) {
    float one = 1, zero = 0;
    cudaEvent_t e0, e1;
    std::vector<float> t;
    cudaEventCreate(&e0), cudaEventCreate(&e1);
    for (int i = 0; i < 25; i++) {
        cudaEventRecord(e0, s);
        if (cublasLtMatmul(lt, op, &one, A, la, B, lb, &zero, D, ld, D, ld, algo, ws, wss, s) != 0)
            return -1;
        cudaEventRecord(e1, s);
        cudaEventSynchronize(e1);
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        if (i >= 5) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

/* uniform-ish values in [-1, 1): zeros would flatter the tensor cores (less power, higher
 * clocks) */
__global__ void fill(__half *p, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
        p[i] = __float2half((float)(h & 0xffff) / 32768.0f - 1.0f);
    }
}

int main(int argc, char **argv) {
    size_t wss = (size_t)(argc > 1 ? atoi(argv[1]) : 8) << 20;
    const char *names[] = {"qkv", "proj", "fc1", "fc2"};
    int NK[4][2] = {{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}};
    int rows[] = {128, 4096, 32768};
    cublasLtHandle_t lt;
    CK(cublasLtCreate(&lt));
    cudaStream_t s;
    cudaStreamCreate(&s);
    void *A, *B, *D, *ws, *bias;
    CK(cudaMalloc(&A, 3072 * 3072 * 2));
    CK(cudaMalloc(&B, (size_t)32768 * 3072 * 2));
    CK(cudaMalloc(&D, (size_t)32768 * 3072 * 2));
    CK(cudaMalloc(&bias, 3072 * 2));
    CK(cudaMalloc(&ws, wss + 1));
    fill<<<1024, 256>>>((__half *)A, 3072 * 3072, 1);
    fill<<<1024, 256>>>((__half *)B, (size_t)32768 * 3072, 2);
    fill<<<1024, 256>>>((__half *)bias, 3072, 3);
    CK(cudaDeviceSynchronize());
    printf("workspace %zu MiB\n", wss >> 20);
    double tot_first[3] = {0}, tot_best[3] = {0};
    for (int r = 0; r < 3; r++)
        for (int p = 0; p < 4; p++) {
            int64_t m = NK[p][0], n = rows[r], k = NK[p][1];
            cublasLtMatmulDesc_t op;
            CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
            cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
            CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
            CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
            cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
            CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
            CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
            cublasLtMatrixLayout_t la, lb, ld;
            CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, m, k, m));
            CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, k, n, k));
            CK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16F, m, n, m));
            cublasLtMatmulPreference_t pref;
            CK(cublasLtMatmulPreferenceCreate(&pref));
            uint64_t w64 = wss;
            CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &w64, sizeof w64));
            cublasLtMatmulHeuristicResult_t h[16];
            int found = 0;
            CK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 16, h, &found));
            float first = -1, best = 1e30f;
            int bi = -1;
            for (int i = 0; i < found; i++) {
                float t = time_algo(lt, op, la, lb, ld, A, B, D, &h[i].algo, ws, wss, s);
                if (i == 0) first = t;
                if (t > 0 && t < best) best = t, bi = i;
            }
            double fl = 2.0 * m * n * k;
            printf("rows %5d %-4s N %4lld K %4lld: %2d algos, first %.4f ms (%.0f TFLOP/s), best %.4f ms (#%d, %.0f TFLOP/s), first/best %.3f\n",
                   rows[r], names[p], (long long)m, (long long)k, found, first, fl / first / 1e9,
                   best, bi, fl / best / 1e9, first / best);
            tot_first[r] += first * (p == 0 || p == 1 ? 12 : 12);
            tot_best[r] += best * 12;
            cublasLtMatmulPreferenceDestroy(pref);
            cublasLtMatrixLayoutDestroy(la), cublasLtMatrixLayoutDestroy(lb), cublasLtMatrixLayoutDestroy(ld);
            cublasLtMatmulDescDestroy(op);
        }
    for (int r = 0; r < 3; r++)
        printf("rows %5d: 12 layers' products, first heuristic %.3f ms, best of 16 %.3f ms\n", rows[r],
               tot_first[r], tot_best[r]);
    return 0;
}
