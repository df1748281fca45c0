/* bert_lt_b1.cu: which cuBLASLt algorithm BERT-base's fp16 products want at batch 1 (128 rows),
 * timed as the bundle runs them: inside a CUDA graph, each product after another, the weights
 * of 12 layers distinct (170 MB, more than the L2: read from memory as in the model).
 * Per shape (qkv 2304 x 768, proj 768 x 768, fc1 3072 x 768 with the GELU epilogue, fc2 768 x
 * 3072; column-major D(N x 128) = W(N x K) X(K x 128) + bias as kc_blas.cuh maps them) the
 * candidates are the heuristic's first 32 (8 MiB of workspace, as the bundle) and the first
 * with its SPLITK_NUM set to 2..16 (each reduction scheme cuBLASLt accepts). Each candidate:
 * a graph of the 12 layers' products of that shape, median of 30 replays / 12 (ms a product,
 * launch gaps included). Then the whole 48-product chain (12 x qkv, proj, fc1, fc2) as one
 * graph with the heuristic's firsts against each shape's best: median of 200 replays, 5
 * alternated rounds.
 * usage: nvcc -O2 -arch=sm_90 bench/gpu/bert_lt_b1.cu -lcublasLt -o blt && ./blt */
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { if ((x) != 0) { printf("error %d at %s:%d\n", (int)(x), __FILE__, __LINE__); exit(1); } } while (0)

static const int L = 12, ROWS = 128;
static const char *names[] = {"qkv", "proj", "fc1", "fc2"};
static const int NK[4][2] = {{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}};

__global__ void fill(__half *p, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
        p[i] = __float2half(((float)(h & 0xffff) / 32768.0f - 1.0f) * 0.05f);
    }
}

struct Shape {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, ld;
    __half *W[L], *bias, *X, *D;
};

static cublasLtHandle_t lt;
static void *ws;
static const size_t WSS = 8u << 20;
static cudaStream_t st;

static void product(Shape &s, int l, const cublasLtMatmulAlgo_t *a) {
    float one = 1, zero = 0;
    CK(cublasLtMatmul(lt, s.op, &one, s.W[l], s.la, s.X, s.lb, &zero, s.D, s.ld, s.D, s.ld, a,
                      ws, WSS, st));
}

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

/* median ms of reps replays of g */
static float replay(cudaGraphExec_t g, int reps) {
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0), cudaEventCreate(&e1);
    std::vector<float> t;
    for (int i = 0; i < reps + 3; i++) {
        cudaEventRecord(e0, st);
        CK(cudaGraphLaunch(g, st));
        cudaEventRecord(e1, st);
        CK(cudaEventSynchronize(e1));
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        if (i >= 3) t.push_back(ms);
    }
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    return median(t);
}

static void cfg(const cublasLtMatmulAlgo_t *a, char *buf) {
    int id = 0, tile = 0, sk = 0, red = 0, stages = 0, sw = 0, cust = 0;
    size_t w;
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sk, sizeof sk, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &sw, sizeof sw, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &cust, sizeof cust, &w);
    sprintf(buf, "algo %2d tile %3d splitk %2d red %d stages %2d swz %d cust %d", id, tile, sk, red,
            stages, sw, cust);
}

/* ms a product: a graph of the 12 layers' products of shape s with algorithm a */
static float time_shape(Shape &s, const cublasLtMatmulAlgo_t *a) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    float one = 1, zero = 0;
    bool ok = true;
    for (int l = 0; l < L && ok; l++)
        ok = cublasLtMatmul(lt, s.op, &one, s.W[l], s.la, s.X, s.lb, &zero, s.D, s.ld, s.D, s.ld,
                            a, ws, WSS, st) == CUBLAS_STATUS_SUCCESS;
    CK(cudaStreamEndCapture(st, &g));
    if (!ok) { cudaGraphDestroy(g); return -1; }
    CK(cudaGraphInstantiate(&ge, g, 0));
    float ms = replay(ge, 30) / L;
    cudaGraphExecDestroy(ge), cudaGraphDestroy(g);
    return ms;
}

static float time_chain(Shape *sh, const cublasLtMatmulAlgo_t *algos, int reps) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int l = 0; l < L; l++)
        for (int p = 0; p < 4; p++) product(sh[p], l, &algos[p]);
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    float ms = replay(ge, reps);
    cudaGraphExecDestroy(ge), cudaGraphDestroy(g);
    return ms;
}

int main() {
    CK(cublasLtCreate(&lt));
    CK(cudaStreamCreate(&st));
    CK(cudaMalloc(&ws, WSS));
    Shape sh[4];
    cublasLtMatmulAlgo_t first[4], best[4];
    for (int p = 0; p < 4; p++) {
        Shape &s = sh[p];
        int64_t m = NK[p][0], n = ROWS, k = NK[p][1];
        for (int l = 0; l < L; l++) {
            CK(cudaMalloc(&s.W[l], m * k * 2));
            fill<<<1024, 256>>>(s.W[l], m * k, 17 * l + p);
        }
        CK(cudaMalloc(&s.bias, m * 2));
        CK(cudaMalloc(&s.X, k * n * 2));
        CK(cudaMalloc(&s.D, m * n * 2));
        fill<<<64, 256>>>(s.bias, m, 99);
        fill<<<256, 256>>>(s.X, k * n, 98);
        CK(cublasLtMatmulDescCreate(&s.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        cublasOperation_t t = CUBLAS_OP_N;
        CK(cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
        CK(cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_TRANSB, &t, sizeof t));
        cublasLtEpilogue_t epi = p == 2 ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
        CK(cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
        CK(cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &s.bias, sizeof s.bias));
        CK(cublasLtMatrixLayoutCreate(&s.la, CUDA_R_16F, m, k, m));
        CK(cublasLtMatrixLayoutCreate(&s.lb, CUDA_R_16F, k, n, k));
        CK(cublasLtMatrixLayoutCreate(&s.ld, CUDA_R_16F, m, n, m));
    }
    CK(cudaDeviceSynchronize());
    for (int p = 0; p < 4; p++) {
        Shape &s = sh[p];
        cublasLtMatmulPreference_t pref;
        CK(cublasLtMatmulPreferenceCreate(&pref));
        uint64_t w64 = WSS;
        CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &w64, sizeof w64));
        cublasLtMatmulHeuristicResult_t h[32];
        int found = 0;
        CK(cublasLtMatmulAlgoGetHeuristic(lt, s.op, s.la, s.lb, s.ld, s.ld, pref, 32, h, &found));
        std::vector<cublasLtMatmulAlgo_t> cand;
        std::vector<int> from; /* heuristic index, or -splitk for the first's split variants */
        for (int i = 0; i < found; i++) cand.push_back(h[i].algo), from.push_back(i);
        const int sks[] = {2, 3, 4, 6, 8, 12, 16};
        const int reds[] = {CUBLASLT_REDUCTION_SCHEME_INPLACE, CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE,
                            CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE};
        for (int sk : sks)
            for (int red : reds) {
                cublasLtMatmulAlgo_t a = h[0].algo;
                uint32_t r = (uint32_t)red;
                if (cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sk, sizeof sk) ||
                    cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &r, sizeof r))
                    continue;
                cublasLtMatmulHeuristicResult_t chk;
                if (cublasLtMatmulAlgoCheck(lt, s.op, s.la, s.lb, s.ld, s.ld, &a, &chk) != CUBLAS_STATUS_SUCCESS ||
                    chk.workspaceSize > WSS)
                    continue;
                cand.push_back(a), from.push_back(-(sk * 10 + red));
            }
        float t0 = -1, tb = 1e30f;
        int bi = 0;
        for (size_t c = 0; c < cand.size(); c++) {
            float t = time_shape(s, &cand[c]);
            char buf[160];
            cfg(&cand[c], buf);
            printf("%-4s cand %2zu (%s %3d) %s: %.4f ms\n", names[p], c, from[c] >= 0 ? "heur" : "split",
                   from[c] >= 0 ? from[c] : -from[c], buf, t);
            if (c == 0) t0 = t;
            if (t > 0 && t < tb) tb = t, bi = (int)c;
        }
        char buf[160];
        cfg(&cand[bi], buf);
        printf("%-4s N %d K %d: %d heuristic + %zu split variants; first %.4f ms, best %.4f ms (cand %d: %s) first/best %.3f\n",
               names[p], NK[p][0], NK[p][1], found, cand.size() - found, t0, tb, bi, buf, t0 / tb);
        first[p] = cand[0];
        best[p] = cand[bi];
        cublasLtMatmulPreferenceDestroy(pref);
    }
    std::vector<float> a, b;
    for (int r = 0; r < 5; r++) {
        a.push_back(time_chain(sh, first, 200));
        b.push_back(time_chain(sh, best, 200));
        printf("chain of 48 products, round %d: heuristic firsts %.4f ms, per-shape best %.4f ms\n", r,
               a.back(), b.back());
    }
    printf("chain median of rounds: firsts %.4f ms, best %.4f ms, ratio %.3f\n", median(a), median(b),
           median(a) / median(b));
    return 0;
}
