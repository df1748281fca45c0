/* kc_qattn.cuh: QAttention (passes/quantize.c) on the GPU: FusedAttention on uint8 Q, K, V
 * with the C target's formula (runtime/rt_qattn.h), one block per query row:
 *   S[j] = sum_t (q[t] - zq) (k[j][t] - zk)              int32, a thread per key
 *   x[j] = fmaf((float)S[j], sq sk scale, mask[j])        float
 *   P[j] = rint(e^(x[j] - max) 255 / sum)                 uint8
 *   O[t] = sum_j P[j] (v[j][t] - zv), y = requantized     int32, a thread per output
 * The float row repeats rt_qa_softmax_row step by step: the same explicit-fmaf exp
 * (kc_qa_exp = rt_qa_exp), the same order of the sum (16 lanes over whole blocks of 16,
 * then the lanes and the tail in order), IEEE division and round-half-even. The integer
 * parts are exact in any order. So, built without --use_fast_math (the bundle's default),
 * the bytes should be the C bundle's; if a device's float path differs (not yet checked on
 * a GPU), y differs from the C bundle's by one quantization step where a P rounds the other
 * way. Operands through element strides as kc_attn.cuh's: q (B,H,Sq,D), k (B,H,Sk,D),
 * v (B,H,Sk,Dv), an additive float mask broadcast to (B,H,Sq,Sk), y (B,H,Sq,Dv).
 * Floor: B H Sq Sk (D + Dv) multiply-adds; this kernel reads K and V once per query row
 * (from L2 after the first), a first version: correctness before tensor cores.
 * Also QMatMul (kc_qmatmul): a MatMul of two uint8 activations, rt_qmatmul's bytes. */
#ifndef KILN_KC_QATTN_H
#define KILN_KC_QATTN_H

#include "kc_common.cuh"

#define KC_QA_THREADS 128  /* keys, then outputs, a thread takes in turn */
#define KC_QA_MAX_SK 4096  /* keys a block's shared memory holds: 9 bytes a key, 36 KB */

/* = RtQAttn (the emitter prints one initializer for both) */
typedef struct KcQAttn {
    int64_t b, h, sq, sk, d, dv;
    int64_t q_st[4], k_st[4], v_st[4], m_st[4], y_st[4];
    int32_t q_zp, k_zp, v_zp, y_zp;
    float score_scale;
    int32_t y_mult;
    int y_shift;
} KcQAttn;

/* floor(t / 2^s + 1/2), 1 <= s <= 62: rt_qa_round_shift */
static __device__ __forceinline__ int64_t kc_qa_round_shift(int64_t t, int s) {
    int64_t u = t + ((int64_t)1 << (s - 1));
    return u >= 0 ? u >> s : -((-u - 1) >> s) - 1;
}

/* rt_qa_exp, operation for operation */
static __device__ __forceinline__ float kc_qa_exp(float x) {
    float c = x < -86.64f ? -86.64f : x;
    float t = fmaf(c, 1.44269504f, 12582912.0f);
    float n = t - 12582912.0f;
    float r = fmaf(-n, 0.693145752f, c);
    r = fmaf(-n, 1.42860677e-6f, r);
    float p = fmaf(1.38938344e-3f, r, 8.36312576e-3f);
    p = fmaf(p, r, 4.16669426e-2f);
    p = fmaf(p, r, 1.66665775e-1f);
    p = fmaf(p, r, 4.99999994e-1f);
    float rr = __fmul_rn(r, r);
    p = fmaf(rr, p, __fadd_rn(1.0f, r));
    uint32_t e = (__float_as_uint(t) - 0x4b400000u + 126u) << 23;
    return x >= -86.64f ? __fmul_rn(__fmul_rn(p, 2.0f), __uint_as_float(e)) : 0.0f; /* NaN: 0 */
}

__global__ void __launch_bounds__(KC_QA_THREADS)
kc_qattn_rows(KcQAttn p, const uint8_t *__restrict__ q, const uint8_t *__restrict__ k,
              const uint8_t *__restrict__ v, const float *__restrict__ mask,
              uint8_t *__restrict__ y) {
    kc_pdl_enter();
    extern __shared__ float kc_qa_smem[];
    float *f = kc_qa_smem;                                /* sk */
    uint8_t *P = (uint8_t *)(f + p.sk);                   /* sk */
    __shared__ float lane[16], red[KC_QA_THREADS / 32], row_r, row_mx;
    int64_t row = blockIdx.x, i = row % p.sq, bh = row / p.sq, h = bh % p.h, b = bh / p.h;
    const uint8_t *qr = q + b * p.q_st[0] + h * p.q_st[1] + i * p.q_st[2];
    const uint8_t *kb = k + b * p.k_st[0] + h * p.k_st[1];
    const uint8_t *vb = v + b * p.v_st[0] + h * p.v_st[1];
    const float *mr = mask ? mask + b * p.m_st[0] + h * p.m_st[1] + i * p.m_st[2] : NULL;
    uint8_t *yr = y + b * p.y_st[0] + h * p.y_st[1] + i * p.y_st[2];
    int tid = threadIdx.x;
    float mx = -INFINITY;
    for (int64_t j = tid; j < p.sk; j += KC_QA_THREADS) {
        const uint8_t *kr = kb + j * p.k_st[2];
        int32_t s = 0;
        for (int64_t t = 0; t < p.d; t++)
            s += ((int32_t)qr[t * p.q_st[3]] - p.q_zp) * ((int32_t)kr[t * p.k_st[3]] - p.k_zp);
        float x = fmaf(__int2float_rn(s), p.score_scale, mr ? mr[j * p.m_st[3]] : 0.0f);
        f[j] = x;
        mx = fmaxf(mx, x);
    }
    /* the row maximum (exact in any order) */
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    if ((tid & 31) == 0) red[tid >> 5] = mx;
    __syncthreads();
    if (tid == 0) {
        float m = red[0];
        for (int w = 1; w < KC_QA_THREADS / 32; w++) m = fmaxf(m, red[w]);
        row_mx = m;
    }
    __syncthreads();
    mx = row_mx;
    for (int64_t j = tid; j < p.sk; j += KC_QA_THREADS) f[j] = kc_qa_exp(__fsub_rn(f[j], mx));
    __syncthreads();
    int64_t whole = p.sk / 16 * 16;
    if (tid < 16) { /* rt_qa_softmax_row's lanes */
        float l = 0.0f;
        for (int64_t j = 0; j < whole; j += 16) l = __fadd_rn(l, f[j + tid]);
        lane[tid] = l;
    }
    __syncthreads();
    if (tid == 0) {
        float sum = 0.0f;
        for (int l = 0; l < 16; l++) sum = __fadd_rn(sum, lane[l]);
        for (int64_t j = whole; j < p.sk; j++) sum = __fadd_rn(sum, f[j]);
        row_r = __fdiv_rn(255.0f, sum);
    }
    __syncthreads();
    float r = row_r;
    for (int64_t j = tid; j < p.sk; j += KC_QA_THREADS) {
        float e = rintf(__fmul_rn(f[j], r));
        P[j] = (uint8_t)(e > 255.0f ? 255 : (int)e);
    }
    __syncthreads();
    for (int64_t t = tid; t < p.dv; t += KC_QA_THREADS) {
        int32_t o = 0;
        for (int64_t j = 0; j < p.sk; j++)
            o += (int32_t)P[j] * ((int32_t)vb[j * p.v_st[2] + t * p.v_st[3]] - p.v_zp);
        int64_t u = kc_qa_round_shift((int64_t)o * p.y_mult, p.y_shift) + p.y_zp;
        yr[t * p.y_st[3]] = (uint8_t)(u < 0 ? 0 : u > 255 ? 255 : u);
    }
}

/* rt_qattention on the GPU; p->sk <= KC_QA_MAX_SK and B H Sq < 2^31 (the emitter checks). */
static inline int kc_qattention(cudaStream_t s, const KcQAttn *p, const uint8_t *q,
                                const uint8_t *k, const uint8_t *v, const float *mask,
                                uint8_t *y) {
    int64_t rows = p->b * p->h * p->sq;
    if (rows <= 0) return KC_OK;
    size_t smem = (size_t)p->sk * (sizeof(float) + 1);
    kc_launch(kc_qattn_rows, dim3((unsigned)rows), dim3(KC_QA_THREADS), smem, s, *p, q, k, v, mask,
              y);
    KC_LAUNCHED();
    return KC_OK;
}

/* ---- QMatMul: the product of two uint8 activations (rt_qmatmul's formula) ---- */

#define KC_QMM_TILE 32 /* a block's output tile side; each of its 256 threads takes 2 x 2 */

/* = RtQMatMul (the emitter prints one initializer for both) */
typedef struct KcQMatMul {
    int64_t batch, m, k, n, a_bst, b_bst;
    int32_t a_zp, b_zp, y_zp, y_mult;
    int y_shift;
} KcQMatMul;

/* sum_t (a - za)(b - zb) from 32 x 32 tiles of A and B in shared memory, their zero points
 * taken off as they are staged (a tile's padding is 0, so it adds nothing). The sum is exact
 * in int32 for K <= 16384 (the emitter's bound) and so equals rt_qmatmul's in any order; the
 * requantization is rt_qmatmul's. The batch walks gridDim.z. */
__global__ void __launch_bounds__(256)
kc_qmatmul_tiles(KcQMatMul p, const uint8_t *__restrict__ a, const uint8_t *__restrict__ b,
                 uint8_t *__restrict__ y) {
    kc_pdl_enter();
    __shared__ int32_t as[KC_QMM_TILE][KC_QMM_TILE + 1], bs[KC_QMM_TILE][KC_QMM_TILE + 1];
    int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    int64_t i0 = (int64_t)blockIdx.y * KC_QMM_TILE, j0 = (int64_t)blockIdx.x * KC_QMM_TILE;
    for (int64_t bi = blockIdx.z; bi < p.batch; bi += gridDim.z) {
        const uint8_t *A = a + bi * p.a_bst, *B = b + bi * p.b_bst;
        int32_t acc[2][2] = {{0, 0}, {0, 0}};
        for (int64_t k0 = 0; k0 < p.k; k0 += KC_QMM_TILE) {
            for (int e = threadIdx.x; e < KC_QMM_TILE * KC_QMM_TILE; e += 256) {
                int r = e / KC_QMM_TILE, c = e % KC_QMM_TILE;
                int64_t i = i0 + r, t = k0 + c, tb = k0 + r, j = j0 + c;
                as[r][c] = i < p.m && t < p.k ? (int32_t)A[i * p.k + t] - p.a_zp : 0;
                bs[r][c] = tb < p.k && j < p.n ? (int32_t)B[tb * p.n + j] - p.b_zp : 0;
            }
            __syncthreads();
            for (int c = 0; c < KC_QMM_TILE; c++) {
                int32_t a0 = as[ty][c], a1 = as[ty + 16][c], b0 = bs[c][tx], b1 = bs[c][tx + 16];
                acc[0][0] += a0 * b0, acc[0][1] += a0 * b1;
                acc[1][0] += a1 * b0, acc[1][1] += a1 * b1;
            }
            __syncthreads();
        }
        uint8_t *Y = y + bi * p.m * p.n;
        for (int u = 0; u < 2; u++)
            for (int v = 0; v < 2; v++) {
                int64_t i = i0 + ty + 16 * u, j = j0 + tx + 16 * v;
                if (i >= p.m || j >= p.n) continue;
                int64_t o = kc_qa_round_shift((int64_t)acc[u][v] * p.y_mult, p.y_shift) + p.y_zp;
                Y[i * p.n + j] = (uint8_t)(o < 0 ? 0 : o > 255 ? 255 : o);
            }
    }
}

/* rt_qmatmul on the GPU; M and N in 32s fit a grid's y and x (the emitter checks). */
static inline int kc_qmatmul(cudaStream_t s, const KcQMatMul *p, const uint8_t *a, const uint8_t *b,
                             uint8_t *y) {
    if (p->batch <= 0 || p->m <= 0 || p->n <= 0) return KC_OK;
    dim3 grid((unsigned)((p->n + KC_QMM_TILE - 1) / KC_QMM_TILE),
              (unsigned)((p->m + KC_QMM_TILE - 1) / KC_QMM_TILE),
              (unsigned)(p->batch < 65535 ? p->batch : 65535));
    kc_launch(kc_qmatmul_tiles, grid, dim3(256), 0, s, *p, a, b, y);
    KC_LAUNCHED();
    return KC_OK;
}

#endif
