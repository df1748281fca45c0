/* kc_blas.cuh: matrix products of CUDA bundles through cuBLASLt. kc_lt_matmul is one
 * column-major, strided-batched D = act(alpha * op(A) op(B) + beta * C + bias) in float32
 * or float16 storage; the emitter maps row-major products onto it by swapping the operands
 * (C = A B row-major is C^T = B^T A^T column-major). The epilogue (bias, ReLU, tanh GELU)
 * is fused when cuBLASLt has an algorithm for it, else applied by kc_bias_act after a
 * plain product. Compute type: CUBLAS_COMPUTE_32F, which is no TF32 on float32 storage and
 * fp16 tensor cores with fp32 accumulation on float16 storage (--precision fp16); float32
 * products left in an fp16 bundle use CUBLAS_COMPUTE_32F_FAST_16F. Descriptors live only
 * for the call: enqueued inside a stream capture, the graph keeps what it needs. */
#ifndef KILN_KC_BLAS_CUH
#define KILN_KC_BLAS_CUH

#include <cublasLt.h>

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

/* One attempt with the given epilogue; *no_algo set when cuBLASLt has none for it. */
static inline int kc_lt_try(cublasLtHandle_t lt, cudaStream_t s, void *ws, size_t ws_size,
                            cublasComputeType_t ct, const KcMatmul *p,
                            cublasLtEpilogue_t epi, int *no_algo) {
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, ld = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0, rc = KC_OK;
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
    if (cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 1, &heur, &found) !=
            CUBLAS_STATUS_SUCCESS ||
        found == 0) {
        *no_algo = 1;
        rc = KC_ERR_CUBLAS;
        goto done;
    }
    KC_LT_CHECK(cublasLtMatmul(lt, op, &p->alpha, p->A, la, p->B, lb, &beta,
                               p->C ? p->C : p->D, ld, p->D, ld,
                               &heur.algo, ws, ws_size, s));
done:
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (ld) cublasLtMatrixLayoutDestroy(ld);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (op) cublasLtMatmulDescDestroy(op);
    return rc;
}

/* The fused epilogue for p's bias and activation, or DEFAULT when cuBLASLt has none
 * (its GELU is the tanh form, so erf GELU is applied by kc_bias_act). */
static inline cublasLtEpilogue_t kc_lt_epilogue(const KcMatmul *p) {
    if (p->act == KC_ACT_NONE) return p->bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    if (p->act == KC_ACT_RELU) return p->bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    if (p->act == KC_ACT_GELU_TANH)
        return p->bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    return CUBLASLT_EPILOGUE_DEFAULT;
}

static inline int kc_lt_matmul(cublasLtHandle_t lt, cudaStream_t s, void *ws, size_t ws_size,
                               cublasComputeType_t ct, const KcMatmul *p) {
    int no_algo, rc;
    cublasLtEpilogue_t epi = kc_lt_epilogue(p);
    if (p->m == 0 || p->n == 0 || p->batch == 0) return KC_OK;
    if (epi != CUBLASLT_EPILOGUE_DEFAULT || (p->act == KC_ACT_NONE && !p->bias)) {
        rc = kc_lt_try(lt, s, ws, ws_size, ct, p, epi, &no_algo);
        if (rc == KC_OK || !no_algo || epi == CUBLASLT_EPILOGUE_DEFAULT) return rc;
    }
    /* unfused: a plain product, then bias and activation in one pass over D */
    if ((rc = kc_lt_try(lt, s, ws, ws_size, ct, p, CUBLASLT_EPILOGUE_DEFAULT, &no_algo)) != KC_OK)
        return rc;
    if (p->ldd != p->m || (p->batch > 1 && p->sd != p->m * p->n)) return KC_ERR_CUBLAS;
    if (p->half)
        return kc_bias_act(s, (__half *)p->D, (const __half *)p->bias, (const __half *)NULL, p->m,
                           1, p->m * p->n * p->batch, p->act, p->act_alpha, p->act_beta);
    return kc_bias_act(s, (float *)p->D, (const float *)p->bias, (const float *)NULL, p->m, 1,
                       p->m * p->n * p->batch, p->act, p->act_alpha, p->act_beta);
}

#endif
