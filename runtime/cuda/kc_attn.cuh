/* kc_attn.cuh: FusedAttention (passes/fuse_attention.c) on the GPU,
 * y = softmax(scale * Q K^T + mask) V, in one kernel: the (Sq, Sk) score matrix is never
 * stored. Operands are read through element strides (the Transposes the pass absorbed), as
 * in runtime/rt_fusedattn.h: q (B,H,Sq,D), k (B,H,Sk,D), v (B,H,Sk,Dv), an additive mask
 * broadcast to (B,H,Sq,Sk) (stride 0 on broadcast dimensions; optional), y (B,H,Sq,Dv).
 * Four kernels:
 * - kc_attn_tc (float16, D = Dv a multiple of 16 up to 128, unit inner strides, rows on
 *   16-byte boundaries; sm_80 and newer): flash attention on tensor cores. A block of NW
 *   warps takes 16*NW query rows of one (batch, head); each warp keeps its 16 rows of Q as
 *   mma.sync m16n8k16 fragments, walks the keys in tiles of 64 (K and V staged in shared
 *   memory, their B fragments read by ldmatrix, V's transposed by it), computes the tile's
 *   scores in float32 accumulators, applies scale and mask (a mask shared by all query rows,
 *   BERT's (B, 1, 1, Sk), copied to shared memory with the tile),
 *   keeps a running row maximum and sum (online softmax, float32), rescales its float32
 *   output accumulators, and multiplies the tile's probabilities (rounded to float16) by V
 *   on the tensor cores again. One division by the row sum at the end.
 * - kc_attn_rt (float32 and float16, head sizes up to KC_ATTN_RT_D, any strides): a block of
 *   128 threads per tile of 64 (32, 16) query rows, each thread an 8 x 4 (4 x 4, 2 x 4) tile
 *   of the scores and of the output, both products as register-tiled outer products from
 *   shared memory, the online softmax in float32.
 * - kc_attn_tile (float32 and float16, head sizes up to KC_ATTN_MAX_D, any strides): a block
 *   per tile of 16 (or 8) query rows, eight threads a row, K and V tiles in shared memory as
 *   float32, the online softmax in float32 (the thread-per-row kernel it replaced made 24
 *   blocks at BERT-base batch 1 and left the GPU idle).
 * - kc_attn_rows (anything else: larger heads): one warp per query row; a first walk over
 *   the keys finds the row maximum and sum online, a second one recomputes each score and
 *   accumulates p * V for up to 32 * KC_ATTN_VR output columns at a time. Float32.
 * kc_attention<T, TC, D, DV> picks the first that applies (TC, D, DV: the emitter's
 * compile-time verdict; the pointers' alignment and the device's compute capability are
 * checked at capture). */
#ifndef KILN_KC_ATTN_CUH
#define KILN_KC_ATTN_CUH

#include "kc_common.cuh"

typedef struct KcAttn {
    int64_t b, h, sq, sk, d, dv;
    int64_t q_st[4], k_st[4], v_st[4], m_st[4], y_st[4];
    float scale;
} KcAttn;

#define KC_ATTN_LOG2E 1.44269504088896341f
#define KC_ATTN_VR 4      /* output columns per lane of kc_attn_rows' second walk */
#define KC_ATTN_WARPS 4   /* rows (warps) per block of kc_attn_rows */
#define KC_ATTN_BN 64     /* keys per tile of kc_attn_tc */
#define KC_ATTN_MAX_D 128 /* the largest head size of kc_attn_tc and kc_attn_tile */

static __device__ __forceinline__ float kc_attn_wsum(float v) {
    for (int o = KC_WARP / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* ---- one warp per query row ---- */

template <typename T>
static __device__ __forceinline__ float kc_attn_score(const T *qr, const T *kr, const T *mr,
                                                      const KcAttn &p, int lane) {
    float acc = 0.0f;
    for (int64_t t = lane; t < p.d; t += KC_WARP)
        acc += (float)qr[t * p.q_st[3]] * (float)kr[t * p.k_st[3]];
    acc = kc_attn_wsum(acc) * p.scale;
    return mr ? acc + (float)*mr : acc;
}

template <typename T>
__global__ void kc_attn_rows_kernel(const T *q, const T *k, const T *v, const T *mask, T *y,
                                    KcAttn p, int64_t rows) {
    int64_t row = (int64_t)blockIdx.x * KC_ATTN_WARPS + threadIdx.x / KC_WARP;
    int lane = threadIdx.x % KC_WARP;
    if (row >= rows) return;
    int64_t i = row % p.sq, bh = row / p.sq, hh = bh % p.h, bb = bh / p.h;
    const T *qr = q + bb * p.q_st[0] + hh * p.q_st[1] + i * p.q_st[2];
    const T *kb = k + bb * p.k_st[0] + hh * p.k_st[1];
    const T *vb = v + bb * p.v_st[0] + hh * p.v_st[1];
    const T *mb = mask ? mask + bb * p.m_st[0] + hh * p.m_st[1] + i * p.m_st[2] : NULL;
    T *yr = y + bb * p.y_st[0] + hh * p.y_st[1] + i * p.y_st[2];
    /* first walk: the row's maximum m and sum l of exp(s - m), online */
    float m = -INFINITY, l = 0.0f;
    for (int64_t j = 0; j < p.sk; j++) {
        float s = kc_attn_score(qr, kb + j * p.k_st[2], mb ? mb + j * p.m_st[3] : NULL, p, lane);
        float mn = fmaxf(m, s);
        if (mn == -INFINITY) continue; /* nothing but -inf so far: adds 0 */
        l = l * expf(m - mn) + expf(s - mn);
        m = mn;
    }
    /* rows of -inf only (or NaN): NaN, as the unfused softmax gives */
    float inv = 1.0f / l;
    if (m == -INFINITY) m = NAN;
    for (int64_t t0 = 0; t0 < p.dv; t0 += KC_WARP * KC_ATTN_VR) {
        float acc[KC_ATTN_VR];
        for (int r = 0; r < KC_ATTN_VR; r++) acc[r] = 0.0f;
        for (int64_t j = 0; j < p.sk; j++) {
            float s = kc_attn_score(qr, kb + j * p.k_st[2], mb ? mb + j * p.m_st[3] : NULL, p,
                                    lane);
            float w = expf(s - m) * inv;
            const T *vr = vb + j * p.v_st[2];
            for (int r = 0; r < KC_ATTN_VR; r++) {
                int64_t t = t0 + lane + r * KC_WARP;
                if (t < p.dv) acc[r] += w * (float)vr[t * p.v_st[3]];
            }
        }
        for (int r = 0; r < KC_ATTN_VR; r++) {
            int64_t t = t0 + lane + r * KC_WARP;
            if (t < p.dv) yr[t * p.y_st[3]] = (T)acc[r];
        }
    }
}

/* ---- a block per tile of query rows, eight threads a row (float32 arithmetic) ---- */

/* 4 elements t..t+3 of a row whose element stride is st, as floats; those at or past n
 * read as 0. vec: the 4 are contiguous and the first sits on 4 elements' boundary (one
 * 16-byte load for float, 8 for float16). Read-only global loads (ld.global.nc), so the
 * compiler may issue a tile's loads together ahead of its shared-memory stores. */
template <typename T>
static __device__ __forceinline__ float4 kc_attn_ld4(const T *row, int64_t st, int t, int n,
                                                     bool vec) {
    if (vec && t + 4 <= n) {
        if (sizeof(T) == 4) return __ldg(reinterpret_cast<const float4 *>(row + t));
        float2 r = __ldg(reinterpret_cast<const float2 *>(row + t));
        const __half2 *h = reinterpret_cast<const __half2 *>(&r);
        float2 a = __half22float2(h[0]), b = __half22float2(h[1]);
        return make_float4(a.x, a.y, b.x, b.y);
    }
    float e[4];
#pragma unroll
    for (int u = 0; u < 4; u++) e[u] = t + u < n ? (float)__ldg(row + (t + u) * st) : 0.0f;
    return make_float4(e[0], e[1], e[2], e[3]);
}

static __device__ __forceinline__ float kc_attn_dot4(float4 a, float4 b, float acc) {
    return fmaf(a.w, b.w, fmaf(a.z, b.z, fmaf(a.y, b.y, fmaf(a.x, b.x, acc))));
}

/* A block of 8 QT threads takes QT query rows of one (batch, head), 8 threads (lanes of one
 * warp) a row, and walks the keys in tiles of KT staged in shared memory as float32, with
 * the online softmax in float32:
 * - scores: lane c of a row takes keys c, c + 8, ... of the tile against its copy of Q's row
 *   (scaled, in registers), 16-byte reads of K rows whose stride (SKW) puts the 8 lanes'
 *   keys on 8 different bank quads (no conflicts; the other rows' lanes read the same words);
 * - the row's maximum and sum over its 8 lanes by shuffles; the probabilities go through a
 *   per-row strip of shared memory (only this warp reads it: __syncwarp);
 * - output: lane c holds columns 4 (c + 8 h) .. + 3 (h < NCH) of the row, 16-byte reads of V
 *   with the 8 lanes on one contiguous 128 bytes, 4 FMAs a read.
 * The thread that owns a row's scores owns its output: the rescale by the new maximum stays
 * in registers. Floor at BERT-base (S 128, D 64): 4.2 MFLOP a head; batch 1's 12 heads make
 * 96 blocks of 16 rows (8 rows, 192 blocks, where 16 would leave SMs without two blocks). */
template <typename T, int D, int DV, int QT>
__global__ void __launch_bounds__(8 * QT)
kc_attn_tile_kernel(const T *q, const T *k, const T *v, const T *mask, T *y, KcAttn p) {
    constexpr int NT = 8 * QT;                          /* threads */
    constexpr int D4 = (D + 3) / 4 * 4;                 /* Q and K columns, padded with 0 */
    constexpr int SKW = D4 + ((D4 / 4) % 2 ? 0 : 4);    /* K row stride: an odd number of quads */
    constexpr int NCH = (DV + 31) / 32;                 /* output quads per lane */
    constexpr int SVW = 32 * NCH;                       /* V row width, padded with 0 */
    constexpr int KT = SKW <= 68 && SVW <= 64 ? 64 : 32; /* keys per tile: under 48 KiB */
    constexpr int KU = KT / 8;                          /* scores per lane and tile */
    constexpr int SPW = KT + 8;                         /* probability strip: rows 8 banks apart */
    __shared__ __align__(16) float sk[KT * SKW];
    __shared__ __align__(16) float sv[KT * SVW];
    __shared__ __align__(16) float sp[QT * SPW];
    const int r = threadIdx.x / 8, c = threadIdx.x % 8;
    const int64_t bh = blockIdx.y, hh = bh % p.h, bb = bh / p.h;
    const int64_t i = (int64_t)blockIdx.x * QT + r;
    const bool live = i < p.sq;
    const T *kb = k + bb * p.k_st[0] + hh * p.k_st[1];
    const T *vb = v + bb * p.v_st[0] + hh * p.v_st[1];
    const T *mr = mask && live ? mask + bb * p.m_st[0] + hh * p.m_st[1] + i * p.m_st[2] : NULL;
    /* whole 16-byte (8-byte) loads of K and V rows: unit inner stride, rows and base on
     * 4 elements' boundary (the block's choice, the same for every thread) */
    const bool vk = p.k_st[3] == 1 && p.k_st[2] % 4 == 0 && ((uintptr_t)kb % (4 * sizeof(T))) == 0;
    const bool vv = p.v_st[3] == 1 && p.v_st[2] % 4 == 0 && ((uintptr_t)vb % (4 * sizeof(T))) == 0;
    const float sc = p.scale * KC_ATTN_LOG2E; /* scores in log2 units: exp2f below */
    float4 q4[D4 / 4];
    {
        const T *qp = q + bb * p.q_st[0] + hh * p.q_st[1] + (live ? i : 0) * p.q_st[2];
        const bool vq = p.q_st[3] == 1 && ((uintptr_t)qp % (4 * sizeof(T))) == 0;
#pragma unroll
        for (int t = 0; t < D4 / 4; t++) {
            float4 x = live ? kc_attn_ld4(qp, p.q_st[3], 4 * t, D, vq) : make_float4(0, 0, 0, 0);
            q4[t] = make_float4(x.x * sc, x.y * sc, x.z * sc, x.w * sc);
        }
    }
    float4 o[NCH];
#pragma unroll
    for (int h = 0; h < NCH; h++) o[h] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float m = -INFINITY, l = 0.0f;
    for (int64_t k0 = 0; k0 < p.sk; k0 += KT) {
        const int nk = p.sk - k0 < KT ? (int)(p.sk - k0) : KT;
        __syncthreads(); /* the previous tile is consumed */
        /* K and V rows k0.. as quads; keys past the end and padding columns read as 0 */
#pragma unroll
        for (int it = 0; it < (KT * (D4 / 4) + NT - 1) / NT; it++) {
            const int e = threadIdx.x + it * NT, key = e / (D4 / 4), t = 4 * (e % (D4 / 4));
            if (e >= KT * (D4 / 4)) break;
            float4 x = key < nk ? kc_attn_ld4(kb + (k0 + key) * p.k_st[2], p.k_st[3], t, D, vk)
                                : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            *reinterpret_cast<float4 *>(&sk[key * SKW + t]) = x;
        }
#pragma unroll
        for (int it = 0; it < (KT * (SVW / 4) + NT - 1) / NT; it++) {
            const int e = threadIdx.x + it * NT, key = e / (SVW / 4), t = 4 * (e % (SVW / 4));
            if (e >= KT * (SVW / 4)) break;
            float4 x = key < nk ? kc_attn_ld4(vb + (k0 + key) * p.v_st[2], p.v_st[3], t, DV, vv)
                                : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            *reinterpret_cast<float4 *>(&sv[key * SVW + t]) = x;
        }
        __syncthreads();
        float s[KU];
        float tmax = -INFINITY;
#pragma unroll
        for (int u = 0; u < KU; u++) {
            const int kk = c + 8 * u;
            const float *kr = &sk[kk * SKW];
            float a = 0.0f;
#pragma unroll
            for (int t = 0; t < D4 / 4; t++)
                a = kc_attn_dot4(q4[t], *reinterpret_cast<const float4 *>(kr + 4 * t), a);
            if (kk >= nk) a = -INFINITY;
            else if (mr) a += (float)mr[(k0 + kk) * p.m_st[3]] * KC_ATTN_LOG2E;
            s[u] = a;
            tmax = fmaxf(tmax, a);
        }
        /* the row's 8 lanes: maximum, then the sum of exp2 from it (online softmax) */
        tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
        tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 2));
        tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 4));
        const float mn = fmaxf(m, tmax);
        const float base = mn == -INFINITY ? 0.0f : mn; /* only -inf so far: exp2 gives 0 */
        const float alpha = exp2f(m - base);
        m = mn;
        float tsum = 0.0f;
#pragma unroll
        for (int u = 0; u < KU; u++) {
            float pe = exp2f(s[u] - base);
            tsum += pe;
            sp[r * SPW + c + 8 * u] = pe;
        }
        tsum += __shfl_xor_sync(0xffffffffu, tsum, 1);
        tsum += __shfl_xor_sync(0xffffffffu, tsum, 2);
        tsum += __shfl_xor_sync(0xffffffffu, tsum, 4);
        l = l * alpha + tsum;
#pragma unroll
        for (int h = 0; h < NCH; h++)
            o[h] = make_float4(o[h].x * alpha, o[h].y * alpha, o[h].z * alpha, o[h].w * alpha);
        __syncwarp(); /* the row's probabilities are in sp */
        /* o += P V over the whole tile: keys past the end have p = 0 and V rows of 0 */
#pragma unroll 4
        for (int j = 0; j < KT; j += 4) {
            const float4 w = *reinterpret_cast<const float4 *>(&sp[r * SPW + j]);
            const float wj[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
            for (int u = 0; u < 4; u++)
#pragma unroll
                for (int h = 0; h < NCH; h++) {
                    const float4 x =
                        *reinterpret_cast<const float4 *>(&sv[(j + u) * SVW + 4 * (c + 8 * h)]);
                    o[h].x = fmaf(wj[u], x.x, o[h].x), o[h].y = fmaf(wj[u], x.y, o[h].y);
                    o[h].z = fmaf(wj[u], x.z, o[h].z), o[h].w = fmaf(wj[u], x.w, o[h].w);
                }
        }
    }
    if (!live) return;
    /* rows of -inf only: NaN, as the unfused softmax gives */
    const float inv = m == -INFINITY ? NAN : 1.0f / l;
    T *yr = y + bb * p.y_st[0] + hh * p.y_st[1] + i * p.y_st[2];
#pragma unroll
    for (int h = 0; h < NCH; h++) {
        const int t = 4 * (c + 8 * h);
        const float e[4] = {o[h].x, o[h].y, o[h].z, o[h].w};
#pragma unroll
        for (int u = 0; u < 4; u++)
            if (t + u < DV) yr[(t + u) * p.y_st[3]] = (T)(e[u] * inv);
    }
}

/* ---- a block per tile of query rows, register tiles of 8 x 4 (float32 arithmetic) ---- */

/* Head sizes up to 64 (D and DV, padded to quads): a block of 128 threads takes BQ = 8 RPT
 * query rows of one (batch, head) and walks the keys in tiles of 64, as a small SGEMM twice
 * over: thread (g, c) = (tid / 16, tid % 16) owns rows RPT g .. RPT g + RPT - 1 and
 * - of the scores, keys 4c .. 4c + 3 of the tile: an RPT x 4 outer product a column of the
 *   reduction, Q^T (pre-scaled into log2 units) and K^T staged column-major in shared memory,
 *   RPT / 4 + 1 16-byte loads for 4 RPT FMAs (kc_attn_tile: one load for 4);
 * - of the output, columns 4c .. 4c + 3: the tile's probabilities P^T (shared memory, over
 *   K^T's bytes where both do not fit) times V, the same outer product a key.
 * The row's maximum over its 16 threads (the lanes of one half warp) by shuffles, once a
 * tile; each thread keeps its own part of the row sum (the rescale is the row's), summed
 * once at the end. At most 48 KB of shared memory (D = DV = 64, RPT 8: Q^T, K^T / P^T and V
 * 16 KB each), so four blocks a multiprocessor. Scores, softmax and sums in float32. */
#define KC_ATTN_RT_D 64 /* the largest (padded) head size of kc_attn_rt */

/* One step of kc_attn_rt's outer products: acc[r][u] += col[r] b.u for its RPT rows, col
 * the thread's RPT consecutive floats of a column-major tile (Q^T or P^T; 16-byte aligned
 * for RPT 4 and 8, 8-byte for 2), b the four of K^T or V. */
template <int RPT>
static __device__ __forceinline__ void kc_attn_rt_fma(float (&acc)[RPT][4], const float *col,
                                                      float4 b) {
    float a[RPT];
    if (RPT % 4 == 0) {
#pragma unroll
        for (int r = 0; r < RPT; r += 4) {
            const float4 x = *reinterpret_cast<const float4 *>(col + r);
            a[r] = x.x, a[r + 1] = x.y, a[r + 2] = x.z, a[r + 3] = x.w;
        }
    } else {
#pragma unroll
        for (int r = 0; r < RPT; r += 2) {
            const float2 x = *reinterpret_cast<const float2 *>(col + r);
            a[r] = x.x, a[r + 1] = x.y;
        }
    }
#pragma unroll
    for (int r = 0; r < RPT; r++) {
        acc[r][0] = fmaf(a[r], b.x, acc[r][0]), acc[r][1] = fmaf(a[r], b.y, acc[r][1]);
        acc[r][2] = fmaf(a[r], b.z, acc[r][2]), acc[r][3] = fmaf(a[r], b.w, acc[r][3]);
    }
}

template <typename T, int D, int DV, int RPT>
__global__ void __launch_bounds__(128, 4)
kc_attn_rt_kernel(const T *q, const T *k, const T *v, const T *mask, T *y, KcAttn p) {
    constexpr int BQ = 8 * RPT, KT = 64, NT = 128;
    constexpr int D4 = (D + 3) / 4 * 4, DV4 = (DV + 3) / 4 * 4;
    constexpr bool ALIAS = (D4 * BQ + D4 * KT + KT * BQ + KT * DV4) * 4 > 48 * 1024;
    constexpr int SKN = ALIAS ? (D4 > BQ ? D4 : BQ) * KT : D4 * KT;
    static_assert(D4 <= KC_ATTN_RT_D && DV4 <= KC_ATTN_RT_D, "head size");
    __shared__ __align__(16) float sm[D4 * BQ + SKN + KT * DV4 + (ALIAS ? 0 : KT * BQ)];
    float *sq = sm;                         /* Q^T: [d][row] */
    float *sk = sq + D4 * BQ;               /* K^T: [d][key] */
    float *sv = sk + SKN;                   /* V: [key][col] */
    float *sp = ALIAS ? sk : sv + KT * DV4; /* P^T: [key][row], over K^T where both do not fit */
    kc_pdl_wait(); /* launched by kc_launch_pdl after the product that wrote Q, K and V */
    const int tid = threadIdx.x, g = tid / 16, c = tid % 16;
    const int64_t bh = blockIdx.y, hh = bh % p.h, bb = bh / p.h;
    const int64_t i0 = (int64_t)blockIdx.x * BQ;
    const T *kb = k + bb * p.k_st[0] + hh * p.k_st[1];
    const T *vb = v + bb * p.v_st[0] + hh * p.v_st[1];
    const bool vk = p.k_st[3] == 1 && p.k_st[2] % 4 == 0 && ((uintptr_t)kb % (4 * sizeof(T))) == 0;
    const bool vv = p.v_st[3] == 1 && p.v_st[2] % 4 == 0 && ((uintptr_t)vb % (4 * sizeof(T))) == 0;
    const float sc = p.scale * KC_ATTN_LOG2E; /* scores in log2 units: exp2f below */
    {   /* Q^T, scaled; rows past Sq read as 0 */
        const T *qb = q + bb * p.q_st[0] + hh * p.q_st[1];
        const bool vq = p.q_st[3] == 1 && p.q_st[2] % 4 == 0 &&
                        ((uintptr_t)qb % (4 * sizeof(T))) == 0;
        for (int e = tid; e < BQ * (D4 / 4); e += NT) {
            const int row = e % BQ, t = 4 * (e / BQ);
            float4 x = i0 + row < p.sq ? kc_attn_ld4(qb + (i0 + row) * p.q_st[2], p.q_st[3], t, D, vq)
                                       : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            sq[(t + 0) * BQ + row] = x.x * sc, sq[(t + 1) * BQ + row] = x.y * sc;
            sq[(t + 2) * BQ + row] = x.z * sc, sq[(t + 3) * BQ + row] = x.w * sc;
        }
    }
    /* the mask of this thread's first row; row r's is p.m_st[2] r elements on */
    const T *mr = mask ? mask + bb * p.m_st[0] + hh * p.m_st[1] + (i0 + RPT * g) * p.m_st[2] : NULL;
    float o[RPT][4], m[RPT], l[RPT];
#pragma unroll
    for (int r = 0; r < RPT; r++) {
        m[r] = -INFINITY, l[r] = 0.0f;
#pragma unroll
        for (int u = 0; u < 4; u++) o[r][u] = 0.0f;
    }
    for (int64_t k0 = 0; k0 < p.sk; k0 += KT) {
        const int nk = p.sk - k0 < KT ? (int)(p.sk - k0) : KT;
        __syncthreads(); /* the previous tile's P^T and V are consumed */
        /* K^T and V for keys k0..; keys past the end and padding columns read as 0 */
#pragma unroll
        for (int it = 0; it < KT * (D4 / 4) / NT + (KT * (D4 / 4) % NT != 0); it++) {
            const int e = tid + it * NT, key = e % KT, t = 4 * (e / KT);
            if (e >= KT * (D4 / 4)) break;
            float4 x = key < nk ? kc_attn_ld4(kb + (k0 + key) * p.k_st[2], p.k_st[3], t, D, vk)
                                : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            sk[(t + 0) * KT + key] = x.x, sk[(t + 1) * KT + key] = x.y;
            sk[(t + 2) * KT + key] = x.z, sk[(t + 3) * KT + key] = x.w;
        }
#pragma unroll
        for (int it = 0; it < KT * (DV4 / 4) / NT + (KT * (DV4 / 4) % NT != 0); it++) {
            const int e = tid + it * NT, key = e / (DV4 / 4), t = 4 * (e % (DV4 / 4));
            if (e >= KT * (DV4 / 4)) break;
            float4 x = key < nk ? kc_attn_ld4(vb + (k0 + key) * p.v_st[2], p.v_st[3], t, DV, vv)
                                : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            *reinterpret_cast<float4 *>(&sv[key * DV4 + t]) = x;
        }
        __syncthreads();
        float s[RPT][4];
#pragma unroll
        for (int r = 0; r < RPT; r++)
#pragma unroll
            for (int u = 0; u < 4; u++) s[r][u] = 0.0f;
#pragma unroll 8
        for (int t = 0; t < D4; t++)
            kc_attn_rt_fma<RPT>(s, &sq[t * BQ + RPT * g],
                                *reinterpret_cast<const float4 *>(&sk[t * KT + 4 * c]));
        /* mask, the keys past the end, then the online softmax of each row */
#pragma unroll
        for (int r = 0; r < RPT; r++) {
            float tmax = -INFINITY;
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int kk = 4 * c + u;
                if (kk >= nk) s[r][u] = -INFINITY;
                else if (mr && i0 + RPT * g + r < p.sq)
                    s[r][u] += (float)mr[r * p.m_st[2] + (k0 + kk) * p.m_st[3]] * KC_ATTN_LOG2E;
                tmax = fmaxf(tmax, s[r][u]);
            }
            tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
            tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 2));
            tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 4));
            tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 8));
            const float mn = fmaxf(m[r], tmax);
            const float base = mn == -INFINITY ? 0.0f : mn; /* only -inf so far: exp2 gives 0 */
            const float alpha = exp2f(m[r] - base);
            m[r] = mn;
            float tsum = 0.0f;
#pragma unroll
            for (int u = 0; u < 4; u++) {
                s[r][u] = exp2f(s[r][u] - base);
                tsum += s[r][u];
            }
            l[r] = l[r] * alpha + tsum;
#pragma unroll
            for (int u = 0; u < 4; u++) o[r][u] *= alpha;
        }
        if (ALIAS) __syncthreads(); /* every thread is done with K^T: P^T goes over it */
#pragma unroll
        for (int u = 0; u < 4; u++) {
            float *pr = &sp[(4 * c + u) * BQ + RPT * g];
            if (RPT % 4 == 0) {
#pragma unroll
                for (int r = 0; r < RPT; r += 4)
                    *reinterpret_cast<float4 *>(pr + r) =
                        make_float4(s[r][u], s[r + 1][u], s[r + 2][u], s[r + 3][u]);
            } else {
#pragma unroll
                for (int r = 0; r < RPT; r += 2)
                    *reinterpret_cast<float2 *>(pr + r) = make_float2(s[r][u], s[r + 1][u]);
            }
        }
        __syncthreads();
        /* o += P V over the tile: keys past the end have p = 0 and V rows of 0 */
        if (4 * c < DV4) {
#pragma unroll 8
            for (int j = 0; j < KT; j++)
                kc_attn_rt_fma<RPT>(o, &sp[j * BQ + RPT * g],
                                    *reinterpret_cast<const float4 *>(&sv[j * DV4 + 4 * c]));
        }
    }
#pragma unroll
    for (int r = 0; r < RPT; r++) {
        /* the row sum over its 16 threads */
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 4);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 8);
        const int64_t i = i0 + RPT * g + r;
        if (i >= p.sq || 4 * c >= DV) continue;
        /* rows of -inf only: NaN, as the unfused softmax gives */
        const float inv = m[r] == -INFINITY ? NAN : 1.0f / l[r];
        T *yr = y + bb * p.y_st[0] + hh * p.y_st[1] + i * p.y_st[2];
#pragma unroll
        for (int u = 0; u < 4; u++)
            if (4 * c + u < DV) yr[(4 * c + u) * p.y_st[3]] = (T)(o[r][u] * inv);
    }
}

/* Launches kc_attn_rt_kernel with RPT rows a thread: a block per 8 RPT query rows of a head. */
template <typename T, int D, int DV, int RPT>
static inline void kc_attn_rt(cudaStream_t s, const T *q, const T *k, const T *v, const T *mask,
                              T *y, const KcAttn *p) {
    kc_launch_pdl(kc_attn_rt_kernel<T, D, DV, RPT>,
                  dim3((unsigned)((p->sq + 8 * RPT - 1) / (8 * RPT)), (unsigned)(p->b * p->h)),
                  dim3(128), s, q, k, v, mask, y, *p);
}

/* ---- flash attention on tensor cores (float16) ---- */

static __device__ __forceinline__ uint32_t kc_attn_pack(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
}

/* c += a b: a 16x16 (row), b 16x8 (col) float16, c 16x8 float32 */
static __device__ __forceinline__ void kc_attn_mma(float c[4], const uint32_t a[4], uint32_t b0,
                                                   uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    (void)c, (void)a, (void)b0, (void)b1; /* never launched below sm_80 (kc_attention) */
#endif
}

/* 16 bytes global -> shared without a register stop (cp.async, sm_80+), of which the first
 * bytes (0..16) are read from src and the rest are zeros. */
static __device__ __forceinline__ void kc_attn_cp16n(void *dst, const void *src, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned sa = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(sa), "l"(src),
                 "r"(bytes));
#else
    (void)dst, (void)src, (void)bytes;
#endif
}

/* all 16 bytes where in, else zeros (src is then not read) */
static __device__ __forceinline__ void kc_attn_cp16(void *dst, const void *src, bool in) {
    kc_attn_cp16n(dst, src, in ? 16 : 0);
}

static __device__ __forceinline__ void kc_attn_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

template <int N>
static __device__ __forceinline__ void kc_attn_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

/* ldmatrix: lanes 8i..8i+7 name the 8 rows (16 bytes each, in shared memory) of matrix i;
 * register i of each lane gets matrix i's (row lane / 4, elements 2 (lane % 4), +1), or with
 * .trans the transposed matrix's: (elements 2 (lane % 4), +1 of column lane / 4). One
 * instruction for 4 (or 2) B fragments of mma.sync, where scalar loads took 8 (or 16). */
static __device__ __forceinline__ void kc_attn_ldm4(uint32_t r[4], const __half *row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned sa = (unsigned)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(sa));
#else
    (void)row, r[0] = r[1] = r[2] = r[3] = 0u;
#endif
}

static __device__ __forceinline__ void kc_attn_ldm2(uint32_t r[2], const __half *row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned sa = (unsigned)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(sa));
#else
    (void)row, r[0] = r[1] = 0u;
#endif
}

static __device__ __forceinline__ void kc_attn_ldm4t(uint32_t r[4], const __half *row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned sa = (unsigned)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(sa));
#else
    (void)row, r[0] = r[1] = r[2] = r[3] = 0u;
#endif
}

/* Fragment layouts of m16n8k16 (PTX ISA): lane = 4 g + t; A: registers 0-3 hold
 * (row g, cols 2t..2t+1), (row g+8, cols 2t..), (row g, cols 2t+8..), (row g+8, cols 2t+8..);
 * B: (k 2t..2t+1, col g), (k 2t+8.., col g); C: (row g, cols 2t, 2t+1), (row g+8, same). */
/* KS (key split, NW 2, D <= 64): both warps of a block take the same 16 query rows and
 * alternate key tiles (warp w the tiles w, w + 2, ..., staged together into the two stages),
 * then warp 0 merges warp 1's maximum, sum and output rows through shared memory. For grids
 * of at most one block an SM (BERT batch 1: 96 blocks of 16 rows), where one warp walking
 * all the keys is the latency. A round's two tiles are staged together (no copy overlaps
 * the compute: BERT's 128 keys are one round). At most a block an SM: no register cap (the
 * two-warp cap of 128 spilled). */
template <int D, int NW, bool KS = false>
__global__ void __launch_bounds__(NW * 32, KS ? 1 : NW == 1 ? 8 : (D <= 64 ? 16 : 8) / NW)
kc_attn_tc_kernel(const __half *q, const __half *k, const __half *v, const __half *mask,
                  __half *y, KcAttn p) {
    static_assert(!KS || (NW == 2 && D <= 64), "the key split: two warps, two stages");
    kc_pdl_wait(); /* launched by kc_launch_pdl after the product that wrote Q, K and V */
    /* two stages where they fit the 48 KiB of static shared memory: the next tile's copy
     * (cp.async) runs while this one is computed */
    const int STAGES = D <= 64 ? 2 : 1;
    __shared__ __align__(16) __half sks[STAGES][KC_ATTN_BN][D + 8]; /* +8: no bank conflicts */
    __shared__ __align__(16) __half svs[STAGES][KC_ATTN_BN][D + 8];
    /* a mask that every query row shares (m_st[2] = 0, BERT's (B, 1, 1, Sk)): the tile's
     * values staged here once instead of a global load per score; by cp.async with K and V
     * where the row is contiguous and on 16 bytes (a plain load there would stall the
     * staging threads for a memory latency before the next tile's copies start) */
    __shared__ __align__(16) __half smk[STAGES][KC_ATTN_BN];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int lr = lane % 8, lm = lane / 8; /* the row and matrix this lane names to ldmatrix */
    const int64_t bh = blockIdx.y, hh = bh % p.h, bb = bh / p.h;
    const __half *qb = q + bb * p.q_st[0] + hh * p.q_st[1];
    const __half *kb = k + bb * p.k_st[0] + hh * p.k_st[1];
    const __half *vb = v + bb * p.v_st[0] + hh * p.v_st[1];
    const __half *mb = mask ? mask + bb * p.m_st[0] + hh * p.m_st[1] : NULL;
    const bool mrow = mb && p.m_st[2] == 0;
    const bool masync = mrow && p.m_st[3] == 1 && ((uintptr_t)mb & 15) == 0;
    __half *yb = y + bb * p.y_st[0] + hh * p.y_st[1];
    const int64_t r0 =
        KS ? (int64_t)blockIdx.x * 16 : (int64_t)blockIdx.x * (16 * NW) + warp * 16;
    const int64_t rows[2] = {r0 + g, r0 + g + 8};
    const bool live[2] = {rows[0] < p.sq, rows[1] < p.sq};
    /* this warp's 16 rows of Q as A fragments */
    uint32_t qa[D / 16][4];
#pragma unroll
    for (int kb16 = 0; kb16 < D / 16; kb16++)
#pragma unroll
        for (int r = 0; r < 4; r++) {
            int half_row = r & 1, col = kb16 * 16 + 2 * t + (r >> 1) * 8;
            qa[kb16][r] = live[half_row] ? *reinterpret_cast<const uint32_t *>(
                                               qb + rows[half_row] * p.q_st[2] + col)
                                         : 0u;
        }
    float o[D / 8][4];
#pragma unroll
    for (int n = 0; n < D / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) o[n][e] = 0.0f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
    const float sc = p.scale * KC_ATTN_LOG2E; /* scores in log2 units: exp2f below */
    /* K and V rows k0.. into stage st; keys past the end read as zeros */
    auto stage = [&](int64_t k0, int st) {
        for (int c = threadIdx.x; c < KC_ATTN_BN * (D / 8); c += NW * 32) {
            int r = c / (D / 8), col = (c % (D / 8)) * 8;
            int64_t key = k0 + r;
            bool in = key < p.sk;
            kc_attn_cp16(&sks[st][r][col], in ? kb + key * p.k_st[2] + col : kb, in);
            kc_attn_cp16(&svs[st][r][col], in ? vb + key * p.v_st[2] + col : vb, in);
        }
        if (masync) {
            for (int c = threadIdx.x; c < KC_ATTN_BN / 8; c += NW * 32) {
                int64_t left = p.sk - (k0 + c * 8); /* keys of this chunk inside the row */
                int bytes = left <= 0 ? 0 : left >= 8 ? 16 : (int)left * 2;
                kc_attn_cp16n(&smk[st][c * 8], bytes ? mb + k0 + c * 8 : mb, bytes);
            }
        } else if (mrow) {
            for (int c = threadIdx.x; c < KC_ATTN_BN; c += NW * 32)
                smk[st][c] = k0 + c < p.sk ? mb[(k0 + c) * p.m_st[3]] : __float2half(0.0f);
        }
        kc_attn_commit();
    };
    if (STAGES == 2 && !KS) stage(0, 0);
    int tile = 0;
    for (int64_t k00 = 0; k00 < p.sk; k00 += (KS ? 2 : 1) * KC_ATTN_BN, tile++) {
        const int st = KS ? warp : tile % STAGES;
        const int64_t k0 = KS ? k00 + warp * KC_ATTN_BN : k00; /* this warp's tile */
        if (KS) { /* this round's two tiles, one a stage */
            stage(k00, 0);
            if (k00 + KC_ATTN_BN < p.sk) stage(k00 + KC_ATTN_BN, 1);
            kc_attn_wait<0>();
        } else if (STAGES == 2) { /* tile + 1 into the other stage (an empty group past the end) */
            if (k0 + KC_ATTN_BN < p.sk) stage(k0 + KC_ATTN_BN, 1 - st);
            else kc_attn_commit();
            kc_attn_wait<1>();
        } else {
            stage(k0, 0);
            kc_attn_wait<0>();
        }
        __syncthreads(); /* every thread's copies of this tile have landed */
        if (KS && k0 >= p.sk) { /* warp 1 past the last tile: nothing this round */
            __syncthreads();
            continue;
        }
        __half (*sk)[D + 8] = sks[st];
        __half (*sv)[D + 8] = svs[st];
        float s[KC_ATTN_BN / 8][4];
#pragma unroll
        for (int n = 0; n < KC_ATTN_BN / 8; n++) {
            s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
            /* K^T's B fragments: matrices 0-3 are the n-tile's 8 keys at columns 0-7, 8-15
             * of k16 block kb16, then of kb16 + 1 */
#pragma unroll
            for (int kb16 = 0; kb16 + 1 < D / 16; kb16 += 2) {
                uint32_t b[4];
                kc_attn_ldm4(b, &sk[n * 8 + lr][kb16 * 16 + lm * 8]);
                kc_attn_mma(s[n], qa[kb16], b[0], b[1]);
                kc_attn_mma(s[n], qa[kb16 + 1], b[2], b[3]);
            }
            if (D / 16 % 2) {
                uint32_t b[2];
                kc_attn_ldm2(b, &sk[n * 8 + lr][(D / 16 - 1) * 16 + (lm % 2) * 8]);
                kc_attn_mma(s[n], qa[D / 16 - 1], b[0], b[1]);
            }
        }
        /* scale, mask, keys past the end; the tile's row maxima */
        const int nk = p.sk - k0 < KC_ATTN_BN ? (int)(p.sk - k0) : KC_ATTN_BN;
        float tmax[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int n = 0; n < KC_ATTN_BN / 8; n++) {
            const float2 mk =
                mrow ? __half22float2(*reinterpret_cast<const __half2 *>(&smk[st][n * 8 + 2 * t]))
                     : make_float2(0.0f, 0.0f);
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int hr = e >> 1, kk = n * 8 + 2 * t + (e & 1); /* the key's place in the tile */
                float x = s[n][e] * sc + ((e & 1) ? mk.y : mk.x) * KC_ATTN_LOG2E;
                if (kk >= nk) x = -INFINITY;
                else if (mb && !mrow && live[hr])
                    x += (float)mb[rows[hr] * p.m_st[2] + (k0 + kk) * p.m_st[3]] *
                         KC_ATTN_LOG2E;
                s[n][e] = x;
                tmax[hr] = fmaxf(tmax[hr], x);
            }
        }
        float alpha[2], base[2];
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            /* the 4 lanes of a quad hold one row */
            tmax[hr] = fmaxf(tmax[hr], __shfl_xor_sync(0xffffffffu, tmax[hr], 1));
            tmax[hr] = fmaxf(tmax[hr], __shfl_xor_sync(0xffffffffu, tmax[hr], 2));
            float mn = fmaxf(m[hr], tmax[hr]);
            base[hr] = mn == -INFINITY ? 0.0f : mn; /* only -inf so far: exp2 gives 0 */
            alpha[hr] = exp2f(m[hr] - base[hr]);
            m[hr] = mn;
        }
        float tsum[2] = {0.0f, 0.0f};
#pragma unroll
        for (int n = 0; n < KC_ATTN_BN / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float pe = exp2f(s[n][e] - base[e >> 1]);
                s[n][e] = pe;
                tsum[e >> 1] += pe;
            }
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            tsum[hr] += __shfl_xor_sync(0xffffffffu, tsum[hr], 1);
            tsum[hr] += __shfl_xor_sync(0xffffffffu, tsum[hr], 2);
            l[hr] = l[hr] * alpha[hr] + tsum[hr];
        }
#pragma unroll
        for (int n = 0; n < D / 8; n++) {
            o[n][0] *= alpha[0], o[n][1] *= alpha[0];
            o[n][2] *= alpha[1], o[n][3] *= alpha[1];
        }
        /* o += P V: the score accumulators of n-tiles 2j, 2j+1 are the A fragment of keys
         * 16j..16j+15 */
#pragma unroll
        for (int j = 0; j < KC_ATTN_BN / 16; j++) {
            uint32_t pa[4] = {kc_attn_pack(s[2 * j][0], s[2 * j][1]),
                              kc_attn_pack(s[2 * j][2], s[2 * j][3]),
                              kc_attn_pack(s[2 * j + 1][0], s[2 * j + 1][1]),
                              kc_attn_pack(s[2 * j + 1][2], s[2 * j + 1][3])};
            /* V's B fragments, transposed by ldmatrix: matrices 0-3 are keys 16j..16j+7,
             * 16j+8.. at columns 8n..8n+7, then at 8(n+1).. */
#pragma unroll
            for (int n = 0; n < D / 8; n += 2) {
                uint32_t b[4];
                kc_attn_ldm4t(b, &sv[j * 16 + (lm % 2) * 8 + lr][(n + lm / 2) * 8]);
                kc_attn_mma(o[n], pa, b[0], b[1]);
                kc_attn_mma(o[n + 1], pa, b[2], b[3]);
            }
        }
        __syncthreads(); /* this stage is consumed before the next copy into it */
    }
    if (KS) { /* warp 1's partial rows into stage 0's K tile (consumed), merged by warp 0 */
        float *xs = reinterpret_cast<float *>(&sks[0][0][0]) + lane * (D / 2 + 4);
        if (warp == 1) {
#pragma unroll
            for (int n = 0; n < D / 8; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) xs[n * 4 + e] = o[n][e];
            xs[D / 2] = m[0], xs[D / 2 + 1] = m[1], xs[D / 2 + 2] = l[0], xs[D / 2 + 3] = l[1];
        }
        __syncthreads();
        if (warp == 1) return;
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            const float m1 = xs[D / 2 + hr], mn = fmaxf(m[hr], m1);
            const float base = mn == -INFINITY ? 0.0f : mn; /* both -inf: 0 weights, NaN row */
            const float a0 = exp2f(m[hr] - base), a1 = exp2f(m1 - base);
            l[hr] = l[hr] * a0 + xs[D / 2 + 2 + hr] * a1;
            m[hr] = mn;
#pragma unroll
            for (int n = 0; n < D / 8; n++) {
                o[n][2 * hr] = o[n][2 * hr] * a0 + xs[n * 4 + 2 * hr] * a1;
                o[n][2 * hr + 1] = o[n][2 * hr + 1] * a0 + xs[n * 4 + 2 * hr + 1] * a1;
            }
        }
    }
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        if (!live[hr]) continue;
        /* rows of -inf only: NaN, as the unfused softmax gives */
        float inv = m[hr] == -INFINITY ? NAN : 1.0f / l[hr];
        __half *yr = yb + rows[hr] * p.y_st[2];
#pragma unroll
        for (int n = 0; n < D / 8; n++)
            *reinterpret_cast<__half2 *>(yr + n * 8 + 2 * t) =
                __floats2half2_rn(o[n][2 * hr] * inv, o[n][2 * hr + 1] * inv);
    }
}

/* Launches kc_attn_tc for head size D when it applies (float16, compute capability 8 or
 * newer, 16-byte aligned operands); false otherwise. */
template <typename T, int D>
struct KcAttnTc {
    static bool launch(cudaStream_t, const T *, const T *, const T *, const T *, T *,
                       const KcAttn *) {
        return false;
    }
};

template <int D>
struct KcAttnTc<__half, D> {
    static bool launch(cudaStream_t s, const __half *q, const __half *k, const __half *v,
                       const __half *mask, __half *y, const KcAttn *p) {
        int dev = 0, major = 0, sms = 1;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) !=
                cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            return false;
        uintptr_t bits = (uintptr_t)q | (uintptr_t)k | (uintptr_t)v | (uintptr_t)y;
        if (major < 8 || (bits & 15) != 0) return false;
        int64_t heads = p->b * p->h;
        /* four warps (64 rows) a block where that still gives every SM two blocks; at most
         * one 16-row block an SM: two warps a block, splitting the keys (KS) */
        int64_t big = (p->sq + 63) / 64 * heads, small = (p->sq + 15) / 16 * heads;
        if (big >= 2 * (int64_t)sms)
            kc_launch_pdl(kc_attn_tc_kernel<D, 4>,
                          dim3((unsigned)((p->sq + 63) / 64), (unsigned)heads), dim3(128), s, q,
                          k, v, mask, y, *p);
        else if (D <= 64 && p->sk > KC_ATTN_BN && small <= sms)
            kc_launch_pdl(kc_attn_tc_kernel<D, 2, (D <= 64)>,
                          dim3((unsigned)((p->sq + 15) / 16), (unsigned)heads), dim3(64), s, q,
                          k, v, mask, y, *p);
        else
            kc_launch_pdl(kc_attn_tc_kernel<D, 1>,
                          dim3((unsigned)((p->sq + 15) / 16), (unsigned)heads), dim3(32), s, q,
                          k, v, mask, y, *p);
        return true;
    }
};

template <>
struct KcAttnTc<__half, 0> {
    static bool launch(cudaStream_t, const __half *, const __half *, const __half *,
                       const __half *, __half *, const KcAttn *) {
        return false;
    }
};

/* FusedAttention: TC (the emitter's compile-time verdict: float16, D = DV in 16s, unit inner
 * strides, row strides in eights) tries the tensor-core kernel; D, DV (0: over
 * KC_ATTN_MAX_D) select the tiled kernel; else one warp per row. */
template <typename T, bool TC, int D, int DV>
static inline int kc_attention(cudaStream_t s, const T *q, const T *k, const T *v,
                               const T *mask, T *y, const KcAttn *p) {
    int64_t rows = p->b * p->h * p->sq, heads = p->b * p->h;
    if (rows <= 0 || p->dv <= 0) return KC_OK;
    if (heads > 65535) return KC_ERR_SHAPE; /* grid y: the emitter refuses these */
    if (TC && KcAttnTc<T, TC ? D : 0>::launch(s, q, k, v, mask, y, p)) {
    } else if (D > 0 && DV > 0) {
        /* 16 rows a block where that still gives every SM two blocks, else 8 */
        int dev = 0, sms = 132;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            return KC_ERR_CUDA;
        constexpr bool RT = D > 0 && DV > 0 && (D + 3) / 4 * 4 <= KC_ATTN_RT_D &&
                            (DV + 3) / 4 * 4 <= KC_ATTN_RT_D;
        constexpr int RD = RT ? D : 4, RDV = RT ? DV : 4;
        /* the register tiles: 64 rows a block where that makes a block a multiprocessor,
         * else 32, else 16 (BERT-base batch 1: 12 heads, 96 blocks) */
        if (RT && (p->sq + 63) / 64 * heads >= (int64_t)sms)
            kc_attn_rt<T, RD, RDV, 8>(s, q, k, v, mask, y, p);
        else if (RT && (p->sq + 31) / 32 * heads >= (int64_t)sms)
            kc_attn_rt<T, RD, RDV, 4>(s, q, k, v, mask, y, p);
        else if (RT)
            kc_attn_rt<T, RD, RDV, 2>(s, q, k, v, mask, y, p);
        else if ((p->sq + 15) / 16 * heads >= 2 * (int64_t)sms)
            kc_attn_tile_kernel<T, D ? D : 1, DV ? DV : 1, 16>
                <<<dim3((unsigned)((p->sq + 15) / 16), (unsigned)heads), 128, 0, s>>>(
                    q, k, v, mask, y, *p);
        else
            kc_attn_tile_kernel<T, D ? D : 1, DV ? DV : 1, 8>
                <<<dim3((unsigned)((p->sq + 7) / 8), (unsigned)heads), 64, 0, s>>>(
                    q, k, v, mask, y, *p);
    } else {
        int64_t blocks = (rows + KC_ATTN_WARPS - 1) / KC_ATTN_WARPS;
        if (blocks > INT32_MAX) return KC_ERR_SHAPE;
        kc_attn_rows_kernel<T><<<(unsigned)blocks, KC_ATTN_WARPS * KC_WARP, 0, s>>>(
            q, k, v, mask, y, *p, rows);
    }
    KC_LAUNCHED();
    return KC_OK;
}

#endif
