/* kc_blas.cuh: matrix products of CUDA bundles through cuBLASLt. kc_lt_matmul is one
 * column-major, strided-batched D = act(alpha * op(A) op(B) + beta * C + bias) in float32
 * storage; the emitter maps row-major products onto it by swapping the operands
 * (C = A B row-major is C^T = B^T A^T column-major). The epilogue (bias, ReLU, tanh GELU)
 * is fused when cuBLASLt has an algorithm for it, else applied by kc_bias_act after a
 * plain product. Compute type: CUBLAS_COMPUTE_32F (no TF32) or, for --precision fp16,
 * CUBLAS_COMPUTE_32F_FAST_16F (fp16 tensor cores, fp32 accumulate). Descriptors live only
 * for the call: enqueued inside a stream capture, the graph keeps what it needs. */
#ifndef KILN_KC_BLAS_CUH
#define KILN_KC_BLAS_CUH

#include <cublasLt.h>

#include "kc_common.cuh"

typedef struct KcMatmul {
    int64_t m, n, k;            /* D: (m, n) column-major; op(A): (m, k); op(B): (k, n) */
    int trans_a, trans_b;       /* op = transpose */
    const float *A, *B, *C;     /* C may equal D; NULL: beta is 0 */
    float *D;
    int64_t lda, ldb, ldd;      /* ldc = ldd */
    int64_t sa, sb, sd;         /* strides between batch entries, elements (0: broadcast) */
    int batch;
    float alpha, beta;
    const float *bias;          /* (m) or NULL: D[i][j] += bias[i] */
    int act;                    /* KC_ACT_* after the bias */
    float act_alpha, act_beta;
} KcMatmul;

#define KC_LT_CHECK(call)                                                                   \
    do {                                                                                    \
        if ((call) != CUBLAS_STATUS_SUCCESS) { rc = KC_ERR_CUBLAS; goto done; }             \
    } while (0)

static inline int kc_lt_layout(cublasLtMatrixLayout_t *l, int64_t rows, int64_t cols,
                               int64_t ld, int batch, int64_t stride) {
    if (cublasLtMatrixLayoutCreate(l, CUDA_R_32F, (uint64_t)rows, (uint64_t)cols, ld) !=
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
    if ((rc = kc_lt_layout(&la, p->trans_a ? p->k : p->m, p->trans_a ? p->m : p->k, p->lda,
                           p->batch, p->sa)) != KC_OK)
        goto done;
    if ((rc = kc_lt_layout(&lb, p->trans_b ? p->n : p->k, p->trans_b ? p->k : p->n, p->ldb,
                           p->batch, p->sb)) != KC_OK)
        goto done;
    if ((rc = kc_lt_layout(&ld, p->m, p->n, p->ldd, p->batch, p->sd)) != KC_OK) goto done;
    KC_LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    KC_LT_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws64, sizeof ws64));
    if (cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 1, &heur, &found) !=
            CUBLAS_STATUS_SUCCESS ||
        found == 0) {
        *no_algo = 1;
        rc = KC_ERR_CUBLAS;
        goto done;
    }
    KC_LT_CHECK(cublasLtMatmul(lt, op, &p->alpha, p->A, la, p->B, lb, &beta,
                               p->C ? (const void *)p->C : (const void *)p->D, ld, p->D, ld,
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
    return kc_bias_act(s, p->D, p->bias, NULL, p->m, 1, p->m * p->n * p->batch, p->act,
                       p->act_alpha, p->act_beta);
}

#endif
