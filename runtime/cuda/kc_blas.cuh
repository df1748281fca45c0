/* kc_blas.cuh: matrix products of CUDA bundles through cuBLASLt. kc_lt_matmul is one
 * column-major, strided-batched D = act(alpha * op(A) op(B) + beta * C + bias) in float32
 * or float16 storage; the emitter maps row-major products onto it by swapping the operands
 * (C = A B row-major is C^T = B^T A^T column-major). The epilogue (bias, ReLU, tanh GELU;
 * erf GELU too in float16, kc_lt_epilogue) is fused when cuBLASLt has an algorithm for
 * it, else applied by kc_bias_act after a
 * plain product. Compute type: CUBLAS_COMPUTE_32F, which is no TF32 on float32 storage and
 * fp16 tensor cores with fp32 accumulation on float16 storage (--precision fp16); float32
 * products left in an fp16 bundle use CUBLAS_COMPUTE_32F_FAST_16F. Descriptors live only
 * for the call: enqueued inside a stream capture, the graph keeps what it needs.
 * Algorithms: each product site of the bundle (one kc_lt_matmul call in its code) has a
 * KcLtSite. Untuned, a product runs the heuristic's first algorithm. Tuning (NAME_cuda_tune:
 * one eager run, not captured) times the heuristic's first KC_LT_TUNE_CANDIDATES on the
 * product's real operands and keeps the fastest in the site; later captures run the site's
 * algorithm. kc_lt_tuning_write/_read store the sites as bytes, so that a saved cache gives
 * the same algorithms, hence the same output bytes, on the same cuBLASLt and device. */
#ifndef KILN_KC_BLAS_CUH
#define KILN_KC_BLAS_CUH

#include <cublasLt.h>
#include <string.h>

#include "kc_common.cuh"

typedef struct KcMatmul {
    int64_t m, n, k;            /* D: (m, n) column-major; op(A): (m, k); op(B): (k, n) */
    int trans_a, trans_b;       /* op = transpose */
    const void *A, *B, *C;      /* C may equal D; NULL: beta is 0 */
    void *D;
    int half;                   /* storage: 0 float32, 1 float16 (A, B, C, D and bias) */
    int64_t lda, ldb, ldd;      /* ldc = ldd */
    int64_t sa, sb, sd;         /* strides between batch entries, elements (0: broadcast) */
    int batch;
    float alpha, beta;
    const void *bias;           /* (m) or NULL: D[i][j] += bias[i] */
    int act;                    /* KC_ACT_* after the bias */
    float act_alpha, act_beta;
} KcMatmul;

/* The heuristic's first 8: on BERT-base's fp16 products the fastest of 16 was among them
 * (bench/gpu/lt_algos.cu on an H200: qkv 1.15x, fc1 1.17x over the first). */
#define KC_LT_TUNE_CANDIDATES 8
#define KC_LT_TUNE_WARMUP 2 /* untimed runs of each candidate */
#define KC_LT_TUNE_REPS 7   /* timed runs of each candidate, each between two events: median */
#define KC_LT_TUNE_MARGIN 0.03f /* another than the first only when this much faster */
/* A product whose first algorithm takes less keeps it: BERT-base batch 1's products (8-15
 * us) chose others 2% faster alone and their graph ran 1-3% slower; batch 32's graph ran
 * 1.5% faster, from its fc1 products (32 us, 6% faster alone) (H200, gpu-tune-check). */
#define KC_LT_TUNE_MIN_MS 0.02f

/* The algorithm of one product site and the product it was chosen for: it is used only for
 * a call with the same shape and epilogue whose operands are at least as aligned (a site in
 * a loop, e.g. a grouped convolution or a last, shorter chunk, can see others; those take
 * the heuristic's first). Fixed-width fields without padding: sites are stored as bytes. */
typedef struct KcLtSite {
    cublasLtMatmulAlgo_t algo;
    int64_t m, n, k, lda, ldb, ldd;
    int32_t batch, epi, trans, set; /* trans: trans_a | trans_b << 1; set: algo holds one */
    uint32_t align[4];              /* of A, B, C, D, bytes (kc_lt_align) */
    float first_ms, best_ms;        /* tuning's medians: the heuristic's first, the chosen */
    int32_t pick, spare;            /* the chosen one's place in the heuristic's list */
} KcLtSite;

#define KC_LT_CHECK(call)                                                                   \
    do {                                                                                    \
        if ((call) != CUBLAS_STATUS_SUCCESS) { rc = KC_ERR_CUBLAS; goto done; }             \
    } while (0)

static inline int kc_lt_layout(cublasLtMatrixLayout_t *l, cudaDataType_t type, int64_t rows,
                               int64_t cols, int64_t ld, int batch, int64_t stride) {
    if (cublasLtMatrixLayoutCreate(l, type, (uint64_t)rows, (uint64_t)cols, ld) !=
        CUBLAS_STATUS_SUCCESS)
        return KC_ERR_CUBLAS;
    if (batch > 1) {
        int32_t b = batch;
        int64_t st = stride;
        if (cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b,
                                             sizeof b) != CUBLAS_STATUS_SUCCESS ||
            cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                             &st, sizeof st) != CUBLAS_STATUS_SUCCESS)
            return KC_ERR_CUBLAS;
    }
    return KC_OK;
}

/* The alignment, in bytes (at most 256, cuBLASLt's default assumption), that every batch
 * entry of an operand at p with the given stride (elements) keeps. Told to the heuristic so
 * that it picks only algorithms valid for these addresses. */
static inline uint32_t kc_lt_align(const void *p, int batch, int64_t stride, size_t elem) {
    uint64_t bits = (uint64_t)(uintptr_t)p | 256u;
    if (batch > 1) bits |= (uint64_t)stride * elem;
    return (uint32_t)(bits & (~bits + 1));
}

/* Whether the site's algorithm was chosen for this product (see KcLtSite). */
static inline int kc_lt_site_fits(const KcLtSite *t, const KcMatmul *p, cublasLtEpilogue_t epi,
                                  const uint32_t al[4]) {
    if (!t || !t->set || t->m != p->m || t->n != p->n || t->k != p->k || t->lda != p->lda ||
        t->ldb != p->ldb || t->ldd != p->ldd || t->batch != p->batch || t->epi != (int32_t)epi ||
        t->trans != (p->trans_a | p->trans_b << 1))
        return 0;
    for (int i = 0; i < 4; i++)
        if (al[i] < t->align[i]) return 0;
    return 1;
}

/* Times the n candidates of heur on stream s (the product's real operands; outside any
 * capture) and sets *best to the fastest's index: median of KC_LT_TUNE_REPS runs after
 * KC_LT_TUNE_WARMUP, each run after a write over twice the L2 cache, so that operands come
 * from memory as in the graph, where the weights and often the activations are not in L2
 * (timed hot, BERT-base batch 1's picks were faster alone but slower in the graph). The
 * first stays unless another is KC_LT_TUNE_MARGIN faster (noise otherwise picks at random)
 * or it takes less than KC_LT_TUNE_MIN_MS.
 * A candidate cuBLASLt refuses to run is skipped. ms[0]: the first's median (-1: refused),
 * ms[1]: the chosen one's. Waits for the stream. */
static inline int kc_lt_pick(cublasLtHandle_t lt, cudaStream_t s, void *ws, size_t ws_size,
                             cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t la,
                             cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t ld,
                             const KcMatmul *p, const float *beta,
                             const cublasLtMatmulHeuristicResult_t *heur, int n, int *best,
                             float out_ms[2]) {
    cudaEvent_t ev[2 * KC_LT_TUNE_REPS];
    float best_ms = -1.0f; /* none yet */
    int made = 0, rc = KC_OK, dev, l2 = 0;
    void *flush = NULL; /* tuning only: the bundle's arena has no room for it */
    size_t flush_bytes = 0;
    *best = 0;
    if (cudaGetDevice(&dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) == cudaSuccess && l2 > 0 &&
        cudaMalloc(&flush, 2 * (size_t)l2) == cudaSuccess)
        flush_bytes = 2 * (size_t)l2;
    else
        flush = NULL; /* timed with whatever L2 holds */
    while (made < 2 * KC_LT_TUNE_REPS && cudaEventCreate(&ev[made]) == cudaSuccess) made++;
    if (made < 2 * KC_LT_TUNE_REPS) rc = KC_ERR_CUDA;
    for (int c = 0; c < n && rc == KC_OK; c++) {
        float ms[KC_LT_TUNE_REPS], med;
        int ok = 1;
        for (int r = 0; r < KC_LT_TUNE_WARMUP + KC_LT_TUNE_REPS && ok && rc == KC_OK; r++) {
            int t = r - KC_LT_TUNE_WARMUP; /* timed run t, between ev[2t] and ev[2t + 1] */
            if (t >= 0 && ((flush && cudaMemsetAsync(flush, r, flush_bytes, s) != cudaSuccess) ||
                           cudaEventRecord(ev[2 * t], s) != cudaSuccess))
                rc = KC_ERR_CUDA;
            ok = rc == KC_OK &&
                 cublasLtMatmul(lt, op, &p->alpha, p->A, la, p->B, lb, beta, p->C ? p->C : p->D,
                                ld, p->D, ld, &heur[c].algo, ws, ws_size, s) ==
                     CUBLAS_STATUS_SUCCESS;
            if (t >= 0 && ok && cudaEventRecord(ev[2 * t + 1], s) != cudaSuccess)
                rc = KC_ERR_CUDA;
        }
        if (rc != KC_OK || cudaStreamSynchronize(s) != cudaSuccess) {
            rc = KC_ERR_CUDA;
            break;
        }
        if (!ok) continue; /* refused: nothing of it ran */
        for (int r = 0; r < KC_LT_TUNE_REPS; r++) {
            if (cudaEventElapsedTime(&ms[r], ev[2 * r], ev[2 * r + 1]) != cudaSuccess)
                rc = KC_ERR_CUDA;
            for (int q = r; q > 0 && ms[q] < ms[q - 1]; q--) { /* insertion sort */
                float x = ms[q];
                ms[q] = ms[q - 1];
                ms[q - 1] = x;
            }
        }
        med = ms[KC_LT_TUNE_REPS / 2];
        if (c == 0) out_ms[0] = med;
        if (rc == KC_OK && (best_ms < 0.0f || med < best_ms)) {
            best_ms = med;
            *best = c;
        }
    }
    if (*best != 0 && out_ms[0] > 0.0f &&
        (best_ms > out_ms[0] * (1.0f - KC_LT_TUNE_MARGIN) || out_ms[0] < KC_LT_TUNE_MIN_MS)) {
        *best = 0;
        best_ms = out_ms[0];
    }
    out_ms[1] = best_ms;
    while (made > 0) cudaEventDestroy(ev[--made]);
    if (flush) cudaFree(flush);
    return rc;
}

/* One attempt with the given epilogue; *no_algo set when cuBLASLt has none for it. With a
 * site that fits, its algorithm; else the heuristic's first, or, tuning an unset site, the
 * fastest of the heuristic's first KC_LT_TUNE_CANDIDATES, kept in the site. */
static inline int kc_lt_try(cublasLtHandle_t lt, cudaStream_t s, void *ws, size_t ws_size,
                            cublasComputeType_t ct, const KcMatmul *p,
                            cublasLtEpilogue_t epi, KcLtSite *site, int tune, int *no_algo) {
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, ld = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t heur[KC_LT_TUNE_CANDIDATES];
    int found = 0, best = 0, want = 1, rc = KC_OK;
    float tuned_ms[2] = {-1.0f, -1.0f};
    cublasOperation_t ta = p->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    float beta = p->C ? p->beta : 0.0f;
    uint64_t ws64 = ws_size;
    uint32_t al[4];
    cudaDataType_t dt = p->half ? CUDA_R_16F : CUDA_R_32F;
    size_t es = p->half ? 2 : 4;
    *no_algo = 0;
    KC_LT_CHECK(cublasLtMatmulDescCreate(&op, ct, CUDA_R_32F));
    KC_LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    KC_LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    KC_LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                               sizeof epi));
    if (epi == CUBLASLT_EPILOGUE_BIAS || epi == CUBLASLT_EPILOGUE_RELU_BIAS ||
        epi == CUBLASLT_EPILOGUE_GELU_BIAS)
        KC_LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                   &p->bias, sizeof p->bias));
    if ((rc = kc_lt_layout(&la, dt, p->trans_a ? p->k : p->m, p->trans_a ? p->m : p->k, p->lda,
                           p->batch, p->sa)) != KC_OK)
        goto done;
    if ((rc = kc_lt_layout(&lb, dt, p->trans_b ? p->n : p->k, p->trans_b ? p->k : p->n, p->ldb,
                           p->batch, p->sb)) != KC_OK)
        goto done;
    if ((rc = kc_lt_layout(&ld, dt, p->m, p->n, p->ldd, p->batch, p->sd)) != KC_OK) goto done;
    KC_LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    KC_LT_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws64, sizeof ws64));
    al[0] = kc_lt_align(p->A, p->batch, p->sa, es);
    al[1] = kc_lt_align(p->B, p->batch, p->sb, es);
    al[2] = kc_lt_align(p->C ? p->C : p->D, p->batch, p->sd, es);
    al[3] = kc_lt_align(p->D, p->batch, p->sd, es);
    KC_LT_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al[0], sizeof al[0]));
    KC_LT_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al[1], sizeof al[1]));
    KC_LT_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al[2], sizeof al[2]));
    KC_LT_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al[3], sizeof al[3]));
    if (kc_lt_site_fits(site, p, epi, al)) {
        /* checked against these descriptors first; refused: the heuristic's first */
        if (cublasLtMatmulAlgoCheck(lt, op, la, lb, ld, ld, &site->algo, &heur[0]) ==
                CUBLAS_STATUS_SUCCESS &&
            heur[0].workspaceSize <= ws_size &&
            cublasLtMatmul(lt, op, &p->alpha, p->A, la, p->B, lb, &beta, p->C ? p->C : p->D, ld,
                           p->D, ld, &site->algo, ws, ws_size, s) == CUBLAS_STATUS_SUCCESS)
            goto done;
    }
    if (tune && site && !site->set) want = KC_LT_TUNE_CANDIDATES;
    if (cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, want, heur, &found) !=
            CUBLAS_STATUS_SUCCESS ||
        found == 0) {
        *no_algo = 1;
        rc = KC_ERR_CUBLAS;
        goto done;
    }
    if (want > 1) {
        if (found > 1 &&
            (rc = kc_lt_pick(lt, s, ws, ws_size, op, la, lb, ld, p, &beta, heur, found, &best,
                             tuned_ms)) != KC_OK)
            goto done;
        memset(site, 0, sizeof *site);
        site->algo = heur[best].algo;
        site->m = p->m;
        site->n = p->n;
        site->k = p->k;
        site->lda = p->lda;
        site->ldb = p->ldb;
        site->ldd = p->ldd;
        site->batch = p->batch;
        site->epi = (int32_t)epi;
        site->trans = p->trans_a | p->trans_b << 1;
        site->set = 1;
        memcpy(site->align, al, sizeof site->align);
        site->first_ms = tuned_ms[0];
        site->best_ms = tuned_ms[1];
        site->pick = best;
    }
    KC_LT_CHECK(cublasLtMatmul(lt, op, &p->alpha, p->A, la, p->B, lb, &beta,
                               p->C ? p->C : p->D, ld, p->D, ld,
                               &heur[best].algo, ws, ws_size, s));
done:
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (ld) cublasLtMatrixLayoutDestroy(ld);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (op) cublasLtMatmulDescDestroy(op);
    return rc;
}

/* The fused epilogue for p's bias and activation, or DEFAULT when cuBLASLt has none.
 * cuBLASLt's GELU is the tanh form: it differs from the exact erf GELU by at most 4.7e-4
 * (at |x| = 2.70), and everywhere by at most 0.63 of the worst rounding of x itself to
 * float16 (half an ulp of x; the ratio peaks at |x| = 1), so float16 storage takes it for
 * erf GELU too (BERT's fc1: one pass over its (rows, 3072) output less); float32 keeps the
 * exact erf through kc_bias_act (docs/cuda.md). */
static inline cublasLtEpilogue_t kc_lt_epilogue(const KcMatmul *p) {
    if (p->act == KC_ACT_NONE) return p->bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    if (p->act == KC_ACT_RELU) return p->bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    if (p->act == KC_ACT_GELU_TANH || (p->act == KC_ACT_GELU && p->half))
        return p->bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    return CUBLASLT_EPILOGUE_DEFAULT;
}

/* ---- one column: D = act(alpha A x + beta C + bias), Kiln's own kernel ----
 * A product with one column (n = 1: a batch-1 classifier or pooler, m outputs of a k-long
 * dot product each) reads its (m, k) weights once and does 2 flops a weight: bound by
 * memory, where cuBLASLt's tiles spent 13.8 us on ResNet-50's 2048 x 1000 classifier (4 MB:
 * 0.9 us at 4.8 TB/s; ncu, H200). One warp a row of A (trans_a: row i at A + i * lda, k
 * contiguous values), 16-byte loads, float accumulation, then the epilogue in float; it
 * launches through kc_launch (programmatic dependent launch under KC_PDL, which cuBLASLt's
 * kernels cannot have: docs/cuda.md). KC_GEMV 0 sends these products to cuBLASLt. */
#ifndef KC_GEMV
#define KC_GEMV 1
#endif
#define KC_GEMV_WARPS 8 /* rows a block */

template <typename T>
__global__ void kc_gemv_kernel(const T *__restrict__ A, int64_t lda, const T *__restrict__ x,
                               const T *__restrict__ C, float beta, const T *__restrict__ bias,
                               T *__restrict__ D, int m, int k, float alpha, int act, float al,
                               float be) {
    kc_pdl_enter();
    const int VEC = 16 / (int)sizeof(T); /* values a 16-byte load */
    const int lane = threadIdx.x % KC_WARP;
    const int row = blockIdx.x * KC_GEMV_WARPS + threadIdx.x / KC_WARP;
    if (row >= m) return;
    const T *a = A + (int64_t)row * lda;
    float acc = 0.0f;
    for (int j = lane * VEC; j < k; j += KC_WARP * VEC) {
        uint4 av = __ldg((const uint4 *)(a + j)), xv = __ldg((const uint4 *)(x + j));
        const T *ap = (const T *)&av, *xp = (const T *)&xv;
#pragma unroll
        for (int t = 0; t < VEC; t++) acc += (float)ap[t] * (float)xp[t];
    }
#pragma unroll
    for (int o = KC_WARP / 2; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) {
        float v = alpha * acc;
        if (C) v += beta * (float)C[row];
        if (bias) v += (float)bias[row];
        D[row] = (T)kc_act(v, act, al, be);
    }
}

/* whether kc_gemv_kernel takes p: one column, A's rows contiguous and 16-byte aligned, x
 * contiguous and 16-byte aligned, k a multiple of a load */
static inline int kc_gemv_fits(const KcMatmul *p) {
    const int64_t vec = 16 / (p->half ? 2 : 4); /* values a 16-byte load */
    return KC_GEMV && p->n == 1 && p->batch == 1 && p->trans_a && !p->trans_b &&
           p->k % vec == 0 && p->lda % vec == 0 && p->m <= INT32_MAX && p->k <= INT32_MAX &&
           ((uintptr_t)p->A & 15) == 0 && ((uintptr_t)p->B & 15) == 0;
}

template <typename T>
static inline void kc_gemv_launch(cudaStream_t s, const KcMatmul *p) {
    kc_launch(kc_gemv_kernel<T>, dim3((unsigned)((p->m + KC_GEMV_WARPS - 1) / KC_GEMV_WARPS)),
              dim3(KC_GEMV_WARPS * KC_WARP), 0, s, (const T *)p->A, p->lda, (const T *)p->B,
              (const T *)p->C, p->C ? p->beta : 0.0f, (const T *)p->bias, (T *)p->D, (int)p->m,
              (int)p->k, p->alpha, p->act, p->act_alpha, p->act_beta);
}

/* kc_gemv_kernel for p where it fits: 1 when launched, 0 when p is for cuBLASLt */
static inline int kc_gemv(cudaStream_t s, const KcMatmul *p) {
    if (!kc_gemv_fits(p)) return 0;
    if (p->half)
        kc_gemv_launch<__half>(s, p);
    else
        kc_gemv_launch<float>(s, p);
    return 1;
}

/* site: the call's KcLtSite (NULL: none); tune: time and choose (an eager run only). */
static inline int kc_lt_matmul(cublasLtHandle_t lt, cudaStream_t s, void *ws, size_t ws_size,
                               cublasComputeType_t ct, const KcMatmul *p, KcLtSite *site,
                               int tune) {
    int no_algo, rc;
    cublasLtEpilogue_t epi = kc_lt_epilogue(p);
    if (p->m == 0 || p->n == 0 || p->batch == 0) return KC_OK;
    if (kc_gemv(s, p)) {
        KC_LAUNCHED();
        return KC_OK;
    }
    if (epi != CUBLASLT_EPILOGUE_DEFAULT || (p->act == KC_ACT_NONE && !p->bias)) {
        rc = kc_lt_try(lt, s, ws, ws_size, ct, p, epi, site, tune, &no_algo);
        if (rc == KC_OK || !no_algo || epi == CUBLASLT_EPILOGUE_DEFAULT) return rc;
    }
    /* unfused: a plain product, then bias and activation in one pass over D */
    if ((rc = kc_lt_try(lt, s, ws, ws_size, ct, p, CUBLASLT_EPILOGUE_DEFAULT, site, tune,
                        &no_algo)) != KC_OK)
        return rc;
    if (p->ldd != p->m || (p->batch > 1 && p->sd != p->m * p->n)) return KC_ERR_CUBLAS;
    if (p->half)
        return kc_bias_act(s, (__half *)p->D, (const __half *)p->bias, (const __half *)NULL, p->m,
                           1, p->m * p->n * p->batch, p->act, p->act_alpha, p->act_beta);
    return kc_bias_act(s, (float *)p->D, (const float *)p->bias, (const float *)NULL, p->m, 1,
                       p->m * p->n * p->batch, p->act, p->act_alpha, p->act_beta);
}

/* ---- the tuning cache: a KcLtTuningHead, then the sites as they are in memory ---- */

#define KC_LT_TUNING_MAGIC 0x4b4c5455u /* "KLTU" */
#define KC_LT_TUNING_VERSION 1u        /* of this layout */

typedef struct KcLtTuningHead {
    uint32_t magic, version;
    uint64_t lt_version;      /* cublasLtGetVersion(): algorithms are this library's */
    uint64_t model;           /* the bundle's NAME_LT_MODEL: its product sites */
    int32_t cc_major, cc_minor, sms; /* the device's compute capability and SM count */
    int32_t sites;            /* NAME_LT_SITES */
    uint32_t site_bytes, pad; /* sizeof(KcLtSite) */
    uint64_t sum;             /* FNV-1a of the sites: a damaged file is refused */
} KcLtTuningHead;

static inline uint64_t kc_fnv1a(const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* The header this process would write for n sites of model on the current device. */
static inline int kc_lt_tuning_head(KcLtTuningHead *h, const KcLtSite *sites, int n,
                                    uint64_t model) {
    int dev;
    memset(h, 0, sizeof *h);
    h->magic = KC_LT_TUNING_MAGIC;
    h->version = KC_LT_TUNING_VERSION;
    h->lt_version = (uint64_t)cublasLtGetVersion();
    h->model = model;
    KC_CUDA(cudaGetDevice(&dev));
    KC_CUDA(cudaDeviceGetAttribute(&h->cc_major, cudaDevAttrComputeCapabilityMajor, dev));
    KC_CUDA(cudaDeviceGetAttribute(&h->cc_minor, cudaDevAttrComputeCapabilityMinor, dev));
    KC_CUDA(cudaDeviceGetAttribute(&h->sms, cudaDevAttrMultiProcessorCount, dev));
    h->sites = n;
    h->site_bytes = (uint32_t)sizeof(KcLtSite);
    h->sum = sites ? kc_fnv1a(sites, (size_t)n * sizeof *sites) : 0;
    return KC_OK;
}

/* Writes the cache of n sites into buf when it holds `bytes` or more; returns its size
 * either way (0 when the device cannot be asked). */
static inline size_t kc_lt_tuning_write(const KcLtSite *sites, int n, uint64_t model, void *buf,
                                        size_t bytes) {
    KcLtTuningHead h;
    size_t size = sizeof h + (size_t)n * sizeof *sites;
    if (kc_lt_tuning_head(&h, sites, n, model) != KC_OK) return 0;
    if (buf && bytes >= size) {
        memcpy(buf, &h, sizeof h);
        if (n > 0) memcpy((unsigned char *)buf + sizeof h, sites, (size_t)n * sizeof *sites);
    }
    return size;
}

/* Reads a cache into the n sites if it is one for this cuBLASLt, device and model, intact;
 * else KC_ERR_TUNING and the sites are left as they were. */
static inline int kc_lt_tuning_read(KcLtSite *sites, int n, uint64_t model, const void *buf,
                                    size_t bytes) {
    KcLtTuningHead want, got;
    const unsigned char *body = (const unsigned char *)buf + sizeof got;
    size_t size = sizeof got + (size_t)n * sizeof *sites;
    if (!buf || bytes != size) return KC_ERR_TUNING;
    memcpy(&got, buf, sizeof got);
    if (kc_lt_tuning_head(&want, NULL, n, model) != KC_OK) return KC_ERR_CUDA;
    want.sum = n > 0 ? kc_fnv1a(body, (size_t)n * sizeof *sites) : 0;
    if (memcmp(&want, &got, sizeof got) != 0) return KC_ERR_TUNING;
    if (n > 0) memcpy(sites, body, (size_t)n * sizeof *sites);
    return KC_OK;
}

#endif
