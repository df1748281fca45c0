/* rt_matmul.h: matrix products of MatMul, Gemm and MatMulInteger, one matrix per call (the
 * emitter loops over broadcast batch dimensions). Operands are addressed through row and
 * column strides, so transposed and broadcast operands need no copies. Reference speed:
 * an i-k-j kernel over a small accumulator tile when B's rows are contiguous, lane-split dot
 * products (four columns at a time) when B is transposed, plain loops otherwise. f16/bf16
 * accumulate in float. C99. */
#ifndef KILN_RT_MATMUL_H
#define KILN_RT_MATMUL_H

#include "rt_act.h"
#include "rt_common.h"
#include "rt_par.h"

#ifndef RT_MM_ROWS
#define RT_MM_ROWS 4 /* rows of A that share one pass over a panel of B */
#endif
#ifndef RT_MM_COLS
#define RT_MM_COLS 128 /* accumulator tile width: RT_MM_ROWS x 128 doubles = 4 KiB of stack */
#endif
#define RT_MM_LANES 8 /* independent partial sums of a dot product: lets compilers vectorise */
#define RT_MM_DOTS 4  /* dot products summed together (the code below names four) */
/* Keeps a loop over RT_MM_LANES lanes a loop, so that compilers vectorise it across its lanes
 * (unrolled first, GCC vectorises the enclosing loop across its iterations instead: ~2x the
 * instructions). Not for nvcc, whose front end rejects the GCC pragma (a device thread has
 * no vector lanes to fill anyway). */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
#define RT_MM_NO_UNROLL _Pragma("GCC unroll 1")
#else
#define RT_MM_NO_UNROLL
#endif

#define RT_MM_ID(v) (v)

/* Defines RtGemmSFX and rt_gemm_SFX(&g): y = act(alpha * A @ B + beta * C) for one
 * matrix, the activation applied to each tile as it is stored. Callers name the fields
 * (designated initializers; what they leave out is 0 or NULL):
 *   m, n, k: the sizes; alpha, beta: the scales (in SC, the scale type: float for float
 *   kernels, so that they do no double arithmetic; beta unused without c);
 *   a: (M,K), element (i,k) at a[i*a_rs + k*a_cs]; b: (K,N), element (k,j) at b[k*b_rs +
 *   j*b_cs]; c: broadcast to (M,N), element (i,j) at c[i*c_rs + j*c_cs], or NULL;
 *   y: (M,N) row-major; act: the activation, or NULL.
 * T is the storage type, ACC the accumulator type, LD/ST convert between them; ACTROW(y, n,
 * act) applies an activation to a stored row (a no-op for types without fused kernels). */
#define RT_GEMM_DEFINE(SFX, T, ACC, SC, LD, ST, ACTROW)                                        \
    typedef struct RtGemm##SFX {                                                               \
        int64_t m, n, k;                                                                       \
        SC alpha, beta;                                                                        \
        const T *a;                                                                            \
        int64_t a_rs, a_cs;                                                                    \
        const T *b;                                                                            \
        int64_t b_rs, b_cs;                                                                    \
        const T *c;                                                                            \
        int64_t c_rs, c_cs;                                                                    \
        T *y;                                                                                  \
        const RtAct *act;                                                                      \
    } RtGemm##SFX;                                                                             \
    RT_API void rt_gemm_##SFX##_epilogue(int64_t M, int64_t N, int64_t i0, int64_t j0,         \
                                         int64_t rows, int64_t cols,                           \
                                         const ACC acc[RT_MM_ROWS][RT_MM_COLS], SC alpha,      \
                                         SC beta, const T *c, int64_t c_rs, int64_t c_cs,      \
                                         T *y, const RtAct *act) {                             \
        int64_t r, j;                                                                          \
        (void)M;                                                                               \
        for (r = 0; r < rows; r++) {                                                           \
            T *yr = y + (i0 + r) * N + j0;                                                     \
            for (j = 0; j < cols; j++) {                                                       \
                ACC v = alpha == (SC)1 ? acc[r][j] : (ACC)(alpha * (SC)acc[r][j]);             \
                if (c) {                                                                       \
                    ACC cv = LD(c[(i0 + r) * c_rs + (j0 + j) * c_cs]);                         \
                    v += beta == (SC)1 ? cv : (ACC)(beta * (SC)cv);                            \
                }                                                                              \
                yr[j] = ST(v);                                                                 \
            }                                                                                  \
            if (act) ACTROW(yr, cols, act);                                                    \
        }                                                                                      \
    }                                                                                          \
    /* Rows [i_lo, i_hi) and columns [j_lo, j_hi) of y (i_lo a multiple of RT_MM_ROWS, j_lo   \
     * of RT_MM_COLS: the serial loop's tiles, bit for bit). */                                \
    RT_API void rt_gemm_##SFX##_block(const RtGemm##SFX *g, int64_t i_lo, int64_t i_hi,        \
                                      int64_t j_lo, int64_t j_hi) {                            \
        const int64_t M = g->m, N = g->n, K = g->k, a_rs = g->a_rs, a_cs = g->a_cs;            \
        const int64_t b_rs = g->b_rs, b_cs = g->b_cs, c_rs = g->c_rs, c_cs = g->c_cs;          \
        const T *a = g->a, *b = g->b, *c = g->c;                                               \
        const SC alpha = g->alpha, beta = g->beta;                                             \
        T *y = g->y;                                                                           \
        const RtAct *act = g->act;                                                             \
        ACC acc[RT_MM_ROWS][RT_MM_COLS];                                                       \
        int64_t i0, j0, k, r, j;                                                               \
        for (i0 = i_lo; i0 < i_hi; i0 += RT_MM_ROWS) {                                         \
            int64_t rows = i_hi - i0 < RT_MM_ROWS ? i_hi - i0 : RT_MM_ROWS;                    \
            for (j0 = j_lo; j0 < j_hi; j0 += RT_MM_COLS) {                                     \
                int64_t cols = j_hi - j0 < RT_MM_COLS ? j_hi - j0 : RT_MM_COLS;                \
                if (b_cs == 1) { /* i-k-j: B rows contiguous */                                \
                    for (r = 0; r < rows; r++)                                                 \
                        for (j = 0; j < cols; j++) acc[r][j] = 0;                              \
                    for (k = 0; k < K; k++) {                                                  \
                        const T *bk = b + k * b_rs + j0;                                       \
                        for (r = 0; r < rows; r++) {                                           \
                            ACC av = LD(a[(i0 + r) * a_rs + k * a_cs]);                        \
                            ACC *ar = acc[r];                                                  \
                            for (j = 0; j < cols; j++) ar[j] += av * LD(bk[j]);                \
                        }                                                                      \
                    }                                                                          \
                } else if (b_rs == 1 && a_cs == 1) { /* dot products of contiguous rows */     \
                    /* RT_MM_DOTS columns at once: independent sums sharing the loads of A's  \
                     * row, their rows of B kept in L1 across the rows of A; each column      \
                     * summed exactly as one lane-split dot product */                        \
                    const int64_t k_main = K - K % RT_MM_LANES;                                \
                    for (j = 0; j < cols; j += RT_MM_DOTS) {                                   \
                        const int64_t nj = cols - j < RT_MM_DOTS ? cols - j : RT_MM_DOTS;      \
                        /* past the last column: column j again, computed and dropped */      \
                        const T *b0 = b + (j0 + j) * b_cs;                                     \
                        const T *b1 = b0 + (nj > 1 ? b_cs : 0);                                \
                        const T *b2 = b0 + (nj > 2 ? 2 * b_cs : 0);                            \
                        const T *b3 = b0 + (nj > 3 ? 3 * b_cs : 0);                            \
                        for (r = 0; r < rows; r++) {                                           \
                            const T *ar = a + (i0 + r) * a_rs;                                 \
                            ACC l0[RT_MM_LANES], l1[RT_MM_LANES], l2[RT_MM_LANES];             \
                            ACC l3[RT_MM_LANES], s[RT_MM_DOTS];                                \
                            int l, q;                                                          \
                            for (l = 0; l < RT_MM_LANES; l++) l0[l] = l1[l] = l2[l] = l3[l] = 0; \
                            for (k = 0; k < k_main; k += RT_MM_LANES) {                        \
                                RT_MM_NO_UNROLL for (l = 0; l < RT_MM_LANES; l++) {            \
                                    ACC av = LD(ar[k + l]);                                    \
                                    l0[l] += av * LD(b0[k + l]);                               \
                                    l1[l] += av * LD(b1[k + l]);                               \
                                    l2[l] += av * LD(b2[k + l]);                               \
                                    l3[l] += av * LD(b3[k + l]);                               \
                                }                                                              \
                            }                                                                  \
                            for (q = 0; q < RT_MM_DOTS; q++) s[q] = 0;                         \
                            for (k = k_main; k < K; k++) {                                     \
                                ACC av = LD(ar[k]);                                            \
                                s[0] += av * LD(b0[k]), s[1] += av * LD(b1[k]);                \
                                s[2] += av * LD(b2[k]), s[3] += av * LD(b3[k]);                \
                            }                                                                  \
                            for (l = 0; l < RT_MM_LANES; l++)                                  \
                                s[0] += l0[l], s[1] += l1[l], s[2] += l2[l], s[3] += l3[l];    \
                            for (q = 0; q < nj; q++) acc[r][j + q] = s[q];                     \
                        }                                                                      \
                    }                                                                          \
                } else { /* general strides */                                                 \
                    for (r = 0; r < rows; r++)                                                 \
                        for (j = 0; j < cols; j++) {                                           \
                            ACC s = 0;                                                         \
                            for (k = 0; k < K; k++)                                            \
                                s += LD(a[(i0 + r) * a_rs + k * a_cs]) *                       \
                                     LD(b[k * b_rs + (j0 + j) * b_cs]);                        \
                            acc[r][j] = s;                                                     \
                        }                                                                      \
                }                                                                              \
                rt_gemm_##SFX##_epilogue(M, N, i0, j0, rows, cols,                             \
                                         (const ACC(*)[RT_MM_COLS])acc, alpha, beta, c, c_rs,  \
                                         c_cs, y, act);                                        \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    typedef struct RtGemmTask##SFX {                                                           \
        const RtGemm##SFX *g;                                                                  \
        int64_t ic, n_jc, jc; /* rows a task, column chunks, columns a chunk */                \
    } RtGemmTask##SFX;                                                                         \
    RT_API void rt_gemm_##SFX##_task(void *arg, int64_t task, int worker) {                    \
        const RtGemmTask##SFX *t = (const RtGemmTask##SFX *)arg;                               \
        const int64_t i_lo = task / t->n_jc * t->ic, j_lo = task % t->n_jc * t->jc;            \
        const int64_t i_hi = i_lo + t->ic < t->g->m ? i_lo + t->ic : t->g->m;                  \
        const int64_t j_hi = j_lo + t->jc < t->g->n ? j_lo + t->jc : t->g->n;                  \
        (void)worker;                                                                          \
        if (i_lo < i_hi && j_lo < j_hi) rt_gemm_##SFX##_block(t->g, i_lo, i_hi, j_lo, j_hi);   \
    }                                                                                          \
    /* rt_gemm_SFX with its tiles shared among par's workers (rt_par.h; NULL: serial): rows  \
     * of RT_MM_ROWS split first, columns of RT_MM_COLS when there are too few rows. */       \
    RT_API void rt_gemm_par_##SFX(const RtGemm##SFX *g, const RtPar *par) {                    \
        const int64_t ui = (g->m + RT_MM_ROWS - 1) / RT_MM_ROWS;                               \
        const int64_t uj = (g->n + RT_MM_COLS - 1) / RT_MM_COLS;                               \
        const int64_t n_ic = rt_par_chunks(par, ui, 1), n_jc = rt_par_chunks(par, uj, n_ic);   \
        RtGemmTask##SFX t;                                                                     \
        if (g->m <= 0 || g->n <= 0) return;                                                    \
        t.g = g;                                                                               \
        t.ic = (ui + n_ic - 1) / n_ic * RT_MM_ROWS;                                            \
        t.jc = (uj + n_jc - 1) / n_jc * RT_MM_COLS;                                            \
        t.n_jc = (g->n + t.jc - 1) / t.jc;                                                     \
        rt_par_run(par, (g->m + t.ic - 1) / t.ic * t.n_jc, rt_gemm_##SFX##_task, &t);          \
    }                                                                                          \
    RT_API void rt_gemm_##SFX(const RtGemm##SFX *g) { rt_gemm_##SFX##_block(g, 0, g->m, 0, g->n); }

#define RT_MM_ST_F32(v) (v)
#define RT_MM_ST_I32(v) ((int32_t)(v))
#define RT_MM_ST_I64(v) ((int64_t)(v))
#define RT_MM_ST_U32(v) ((uint32_t)(v))
#define RT_MM_ST_U64(v) ((uint64_t)(v))

#define RT_MM_ACT_F32(y, n, act) rt_act_row_f32(y, (const float *)0, n, act)
#define RT_MM_ACT_F64(y, n, act) rt_act_row_f64(y, (const double *)0, n, act)
#define RT_MM_ACT_NONE(y, n, act) ((void)(y), (void)(n), (void)(act))

RT_GEMM_DEFINE(f32, float, float, float, RT_MM_ID, RT_MM_ID, RT_MM_ACT_F32)
RT_GEMM_DEFINE(f64, double, double, double, RT_MM_ID, RT_MM_ID, RT_MM_ACT_F64)
RT_GEMM_DEFINE(f16, uint16_t, float, float, rt_f16_to_f32, rt_f32_to_f16, RT_MM_ACT_NONE)
RT_GEMM_DEFINE(bf16, uint16_t, float, float, rt_bf16_to_f32, rt_f32_to_bf16, RT_MM_ACT_NONE)
/* Integer products wrap modulo 2^bits as ONNX Runtime's do: accumulate unsigned; a Gemm's
 * float scales apply in double. */
RT_GEMM_DEFINE(i32, int32_t, uint32_t, double, (uint32_t), RT_MM_ST_I32, RT_MM_ACT_NONE)
RT_GEMM_DEFINE(i64, int64_t, uint64_t, double, (uint64_t), RT_MM_ST_I64, RT_MM_ACT_NONE)
RT_GEMM_DEFINE(u32, uint32_t, uint32_t, double, RT_MM_ID, RT_MM_ST_U32, RT_MM_ACT_NONE)
RT_GEMM_DEFINE(u64, uint64_t, uint64_t, double, RT_MM_ID, RT_MM_ST_U64, RT_MM_ACT_NONE)

/* Defines rt_matmul_integer_SFX: y = (A - a_zp) @ (B - b_zp) in int32 for one matrix.
 * a: (M,K) row-major, a_zp: per row (a_zp_step 1) or one value (step 0), or NULL;
 * b: (K,N) row-major, b_zp: per column (b_zp_step 1) or one value (step 0), or NULL;
 * y: (M,N) int32. */
#define RT_MATMUL_INTEGER_DEFINE(SFX, TA, TB)                                                  \
    RT_API void rt_matmul_integer_##SFX(int64_t M, int64_t N, int64_t K, const TA *a,          \
                                        const TA *a_zp, int64_t a_zp_step, const TB *b,        \
                                        const TB *b_zp, int64_t b_zp_step, int32_t *y) {       \
        int64_t i, j, k;                                                                       \
        for (i = 0; i < M; i++) {                                                              \
            int32_t za = a_zp ? (int32_t)a_zp[i * a_zp_step] : 0;                              \
            int32_t *yr = y + i * N;                                                           \
            for (j = 0; j < N; j++) yr[j] = 0;                                                 \
            for (k = 0; k < K; k++) {                                                          \
                int32_t av = (int32_t)a[i * K + k] - za;                                       \
                const TB *bk = b + k * N;                                                      \
                if (b_zp)                                                                      \
                    for (j = 0; j < N; j++)                                                    \
                        yr[j] += av * ((int32_t)bk[j] - (int32_t)b_zp[j * b_zp_step]);         \
                else                                                                           \
                    for (j = 0; j < N; j++) yr[j] += av * (int32_t)bk[j];                      \
            }                                                                                  \
        }                                                                                      \
    }

RT_MATMUL_INTEGER_DEFINE(u8u8, uint8_t, uint8_t)
RT_MATMUL_INTEGER_DEFINE(u8i8, uint8_t, int8_t)
RT_MATMUL_INTEGER_DEFINE(i8u8, int8_t, uint8_t)
RT_MATMUL_INTEGER_DEFINE(i8i8, int8_t, int8_t)

#endif
