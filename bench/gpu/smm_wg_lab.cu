/* smm_wg_lab.cu: a few-row float16 product of Kiln's own on wgmma (kc_smm_kernel, below: the
 * reduction split over a thread-block cluster, programmatic dependent launch, the weights copied
 * before the wait), the second try after bench/gpu/smm_lab.cu's mma.sync one, against cuBLASLt
 * (kc_lt_try, the heuristic's first algorithm, as an untuned bundle runs it) on BERT-base's four
 * products at 128 rows. It was built into kc_blas.cuh's kc_lt_matmul (with an a_const flag set
 * by the emitter for weights) and measured in the batch-1 bundles; it lost there, so it lives
 * here (docs/cuda.md, "session 25").
 * check: the kernel against a float64 reference of the same float16 operands (BERT's shapes,
 *   odd ones, C with beta, alpha, A read after the wait).
 * time (default): a CUDA graph of 12 products of one shape, each with its own weights (12
 *   layers: read from memory as in the model) and the same X, alone and with a PDL-launched row
 *   kernel between them (reads X and writes it back; or reads the product D and writes it back,
 *   a stand-in for the model's Add + LayerNorm), 200 replays, the best median of the rounds; us
 *   a product. And kc_smm_kernel without its reduction (no cluster: each block's float32
 *   partial to a parts buffer) with a kernel after it that sums the parts and the bias into D,
 *   and kc_smm_ns_kernel (no split-K) where it holds the reduction.
 * Knobs: KC_SMM_BN (64, 128), KC_SMM_PUSH (partials pushed to their rows' block: 1, or pulled:
 * 0), KC_SMM_LAB (timing only: 1 no cluster reduction, 2 no B loads, 4 no A loads, 8 no wgmma,
 * 16 no cluster, 32 no PDL), KC_PDL (the row kernel's and cuBLASLt's neighbours' launch).
 * usage: nvcc -std=c++17 -O3 -arch=sm_90a -I runtime/cuda -I runtime -I tests/cuda \
 *          bench/gpu/smm_wg_lab.cu -o smm_wg -lcublasLt && ./smm_wg [check | ROUNDS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "gpu_test.h"
#include "kc_blas.cuh"
#include "kc_igemm.cuh" /* the wgmma pieces */
#include "lab.cuh"

/* ---- few rows on Hopper: D = act(alpha A B + beta C + bias), Kiln's own kernel ----
 * A product of at most KC_SMM_MAX_N columns (n: BERT-base's 128 tokens at batch 1, a late
 * convolution's pixels) against m = 768..3072 outputs is latency-bound: cuBLASLt's kernels
 * take 3.7-7.6 us inside a graph for 0.3-1.1 us of weights (docs/cuda.md), and they are
 * launched plainly, so each starts only once the kernel before it has drained. This one is
 * launched with programmatic dependent launch and copies its slice of A -- where a_const says
 * A is a weight (a flag the emitter would set) -- into shared memory before kc_pdl_wait, so the
 * weights' trip overlaps the kernel before; only B (just written, in L2) and C are read after the
 * wait. Work split: a block owns KC_SMM_BN = 64 of the m outputs for KC_SMM_ROWS = 128 of the n
 * columns and one of S <= 8 slices of the reduction (split-K); the S blocks of a tile are one
 * thread-block cluster. Each holds its whole slice (nsl <= KC_SMM_MAX_SL steps of 64) in
 * shared memory in wgmma's 128-byte swizzle -- B's columns K-major as the A operand of two
 * warpgroups of 64 columns each, A's (k, m) rows N-major as the B operand -- and multiplies
 * slice by slice as they land (wgmma m64n64k16, float32). It leaves its partial tile in
 * shared memory; after a cluster barrier each block sums 128 / S of the tile's columns over
 * the S partials through distributed shared memory in rank order (the same bits every run),
 * then alpha, beta C, the bias and the activation, and stores float16. Requires code built
 * for sm_90a (kc_smm_built), column-major A (k contiguous per output column of A^T: trans_a
 * 0) and B (trans_b 0), m and k multiples of 8, 16-byte aligned A and B rows, 8-byte aligned
 * C and D rows. */
#ifndef KC_SMM_MAX_N
#define KC_SMM_MAX_N 128 /* columns of D at most (one row tile of the kernel) */
#endif
#ifndef KC_SMM_LAB
#define KC_SMM_LAB                                                                                 \
    0 /* timing only: 1 no cluster reduction, 2 no B loads, 4 no A loads, 8 no wgmma,              \
         16 no cluster (with 1), 32 no PDL */
#endif
#ifndef KC_SMM_PUSH
#define KC_SMM_PUSH 0 /* partials pulled from every block (1: pushed to their rows' block) */
#endif
#define KC_SMM_ROWS 128 /* n a block: two warpgroups of 64 */
#ifndef KC_SMM_BN
#define KC_SMM_BN 64 /* m a block (64 or 128): 128-byte swizzle atoms of A's rows, 8 KB apart */
#endif
#define KC_SMM_MAX_SL 6 /* 64-deep reduction steps a block holds: 96 KB of B + 48 KB of A */
#define KC_SMM_MAX_S 8  /* blocks of a cluster: the portable maximum */
#define KC_SMM_P_LD (KC_SMM_BN + 4) /* floats: a column of a block's partial tile */

/* shared-memory bytes of kc_smm_kernel holding nsl reduction steps */
static inline size_t kc_smm_smem(int nsl, int S) {
    size_t ops = (size_t)nsl * (KC_SMM_ROWS + KC_SMM_BN) * KC_WG_BK * sizeof(__half);
    size_t per = (KC_SMM_ROWS + S - 1) / S, rx = (size_t)S * per * KC_SMM_P_LD * sizeof(float);
    if (!KC_SMM_PUSH)                        /* the partial tile in the operands' place */
        return (ops > rx ? ops : rx) + 1024; /* + the base aligned up to 1024 */
    return ops + rx + 1024;                  /* the receive buffer after the operands */
}

/* Grid (ceil(m / 64), ceil(n / 128), S), cluster (1, 1, S), 256 threads; block (x, y, rank)
 * takes reduction steps rank * nsl .. + nsl of 64. ACT: the activation compiled in, or -1. */
template <int ACT>
__global__ void __launch_bounds__(256, 1)
    kc_smm_kernel(const __half *__restrict__ A, int64_t lda, const __half *__restrict__ B,
                  int64_t ldb, const __half *C, float beta, const __half *__restrict__ bias,
                  __half *D, int64_t ldd, int m, int n, int k, int nsl, float alpha, int act,
                  float al, float be, int a_const, float *parts) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ unsigned char kc_smm_raw[];
    __shared__ float sbias[KC_SMM_BN]; /* also the mark kc_smm_built looks for */
    enum { BK = KC_WG_BK, XS = KC_SMM_ROWS * BK, WS = BK * KC_SMM_BN };
    if (ACT >= 0) act = ACT;
    __half *xs = kc_wg_smem_base(kc_smm_raw); /* nsl steps of B: 128 columns x 64 */
    __half *ws = xs + nsl * XS;               /* nsl steps of A: 64 k x 64 outputs */
#if !KC_SMM_PUSH
    float *part = (float *)(void *)xs; /* after the product: the partial tile */
#endif
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, wq = (tid & 127) >> 5;
    const int f0 = blockIdx.x * KC_SMM_BN, t0 = blockIdx.y * KC_SMM_ROWS;
    const unsigned S = gridDim.z, rank = parts ? blockIdx.z : lab_cluster_rank();
    const int k0 = (int)rank * nsl * BK;
#if KC_SMM_PUSH
    /* phase one of the cluster barrier: this block has started (its peers write into its
     * shared memory once every block of the cluster has, kc_smm's reduction below) */
    if (!(KC_SMM_LAB & 1)) asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
#endif
    /* A's steps: 64 k-rows of BN / 8 16-byte chunks, each 64 columns an atom */
    auto load_a = [&](int st) {
        enum { CH = KC_SMM_BN / 8 };
        if (KC_SMM_LAB & 4) return;
#pragma unroll
        for (int i = 0; i < BK * CH / 256; i++) {
            const int q = tid + i * 256, kr = q / CH, c = q % CH, gk = k0 + st * BK + kr;
            const bool ok = gk < k && f0 + c * 8 < m;
            kc_ig_copy16(ws + st * WS + (c >> 3) * (BK * 64) + kr * 64 + (((c & 7) ^ (kr & 7)) * 8),
                         ok ? A + (int64_t)gk * lda + f0 + c * 8 : A, ok);
        }
    };
    if (a_const) {
        for (int st = 0; st < nsl; st++)
            load_a(st);
        kc_ig_commit();
    }
    for (int i = tid; i < KC_SMM_BN; i += 256)
        sbias[i] = bias && f0 + i < m ? __half2float(bias[f0 + i]) : 0.0f;
    kc_pdl_sync(); /* B and C are the kernels' before */
    if (!a_const)
        for (int st = 0; st < nsl; st++)
            load_a(st);
    /* B's steps, one copy group each (the first also holds A's where it is not constant):
     * 128 columns of 8 16-byte chunks, four a thread a step */
    for (int st = 0; st < nsl; st++) {
#pragma unroll
        for (int i = 0; i < KC_SMM_ROWS * 8 / 256; i++) {
            if (KC_SMM_LAB & 2) break;
            const int q = tid + i * 256, r = q >> 3, c = q & 7, gk = k0 + st * BK + c * 8;
            const bool ok = t0 + r < n && gk < k;
            kc_ig_copy16(xs + st * XS + r * 64 + ((c ^ (r & 7)) * 8),
                         ok ? B + (int64_t)(t0 + r) * ldb + gk : B, ok);
        }
        kc_ig_commit();
    }
    float acc[KC_SMM_BN / 2];
    for (int st = 0; st < nsl; st++) {
        switch (nsl - 1 - st) { /* step st's group landed (the later ones may still fly) */
        case 0:
            kc_ig_wait<0>();
            break;
        case 1:
            kc_ig_wait<1>();
            break;
        case 2:
            kc_ig_wait<2>();
            break;
        case 3:
            kc_ig_wait<3>();
            break;
        case 4:
            kc_ig_wait<4>();
            break;
        default:
            kc_ig_wait<5>();
            break;
        }
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        if (KC_SMM_LAB & 8) {
            for (int j = 0; j < KC_SMM_BN / 2; j++)
                acc[j] = (float)st;
            continue;
        }
        kc_wg_slice<KC_SMM_BN, 0>(acc, xs + st * XS + wg * 64 * BK, ws + st * WS, st > 0);
    }
    kc_wg_wait<0, KC_SMM_BN / 2>(acc);
    if (parts) { /* no reduction: slice rank's float32 partial into parts (rank, n, m) */
        const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int t = t0 + wg * 64 + wq * 16 + g + 8 * h;
            if (t >= n) continue;
            float *dst = parts + ((int64_t)rank * n + t) * m + f0 + t4 * 2;
#pragma unroll
            for (int j = 0; j < KC_SMM_BN / 8; j++)
                if (f0 + j * 8 + t4 * 2 < m)
                    *(float2 *)(dst + j * 8) =
                        make_float2(acc[j * 4 + 2 * h], acc[j * 4 + 2 * h + 1]);
        }
        return;
    }
    const int per = (KC_SMM_ROWS + (int)S - 1) / (int)S, lo = (int)rank * per;
    const int hi = lo + per < KC_SMM_ROWS ? lo + per : KC_SMM_ROWS;
#if KC_SMM_PUSH
    /* each row's partials go to the block that owns the row (rows lo..hi: block `rank`), slot
     * `rank` of its receive buffer (S slots of per rows), by stores to distributed shared
     * memory: one cluster barrier, no remote load waited for */
    float *rx = (float *)(void *)(ws + nsl * WS);
    if (!(KC_SMM_LAB & 1))
        asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory"); /* all started */
    {
        const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int r = wg * 64 + wq * 16 + g + 8 * h, q = r / per;
            float *dst = (KC_SMM_LAB & 1 ? rx : lab_cluster_map(rx, (unsigned)q)) +
                         ((int)rank * per + r - q * per) * KC_SMM_P_LD + t4 * 2;
#pragma unroll
            for (int j = 0; j < KC_SMM_BN / 8; j++)
                *(float2 *)(dst + j * 8) = make_float2(acc[j * 4 + 2 * h], acc[j * 4 + 2 * h + 1]);
        }
    }
    if (!(KC_SMM_LAB & 1)) lab_cluster_sync(); /* every partial is in its owner's buffer */
#else
    __syncthreads(); /* every warpgroup is done with the steps: they become the partial */
    {
        const int g = lane >> 2, t4 = lane & 3, r = wg * 64 + wq * 16 + g;
#pragma unroll
        for (int j = 0; j < KC_SMM_BN / 8; j++) {
            const int c = j * 8 + t4 * 2;
            *(float2 *)(part + r * KC_SMM_P_LD + c) = make_float2(acc[j * 4], acc[j * 4 + 1]);
            *(float2 *)(part + (r + 8) * KC_SMM_P_LD + c) =
                make_float2(acc[j * 4 + 2], acc[j * 4 + 3]);
        }
    }
    if (!(KC_SMM_LAB & 1)) lab_cluster_sync(); /* every block's partial is there */
#endif
    {
        const float *src[KC_SMM_MAX_S]; /* the S partials of a row, in rank order */
#pragma unroll
        for (int q = 0; q < KC_SMM_MAX_S; q++)
#if KC_SMM_PUSH
            src[q] = rx + (q < (int)S ? q : 0) * per * KC_SMM_P_LD - lo * KC_SMM_P_LD;
#else
            src[q] = KC_SMM_LAB & 1 ? part : lab_cluster_map(part, q < (int)S ? q : 0);
#endif
        for (int i = tid; i < (hi - lo) * (KC_SMM_BN / 4); i += 256) {
            const int r = lo + i / (KC_SMM_BN / 4), c = i % (KC_SMM_BN / 4) * 4;
            if (t0 + r >= n || f0 + c >= m) continue;
            const int off = r * KC_SMM_P_LD + c;
            float4 v[KC_SMM_MAX_S]; /* every load in flight before the first add */
#pragma unroll
            for (int q = 0; q < KC_SMM_MAX_S; q++)
                if (q < (int)S) v[q] = *(const float4 *)(src[q] + off);
            float o[4] = {v[0].x, v[0].y, v[0].z, v[0].w};
#pragma unroll
            for (int q = 1; q < KC_SMM_MAX_S; q++)
                if (q < (int)S) o[0] += v[q].x, o[1] += v[q].y, o[2] += v[q].z, o[3] += v[q].w;
            const int64_t at = (int64_t)(t0 + r) * ldd + f0 + c;
            uint2 cv = make_uint2(0, 0);
            if (C) cv = *(const uint2 *)(C + at);
            const __half *ch = (const __half *)&cv;
            __half h[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float y = alpha * o[e] + sbias[c + e];
                if (C) y += beta * __half2float(ch[e]);
                h[e] = __float2half_rn(kc_act(y, act, al, be));
            }
            *(uint2 *)(D + at) = *(const uint2 *)h;
        }
    }
#if !KC_SMM_PUSH
    if (!(KC_SMM_LAB & 1))
        lab_cluster_sync(); /* no block leaves while another reads its shared memory */
#endif
#else
    kc_pdl_sync();
    (void)A, (void)lda, (void)B, (void)ldb, (void)C, (void)beta, (void)bias, (void)D, (void)ldd;
    (void)m, (void)n, (void)k, (void)nsl, (void)alpha, (void)act, (void)al, (void)be, (void)a_const;
#endif
}

/* whether the bundle's code holds kc_smm_kernel's body (built for sm_90a) */
static inline bool kc_smm_built(void) {
    static int built = -1;
    if (built < 0) {
        cudaFuncAttributes fa;
        built =
            cudaFuncGetAttributes(&fa, kc_smm_kernel<-1>) == cudaSuccess && fa.sharedSizeBytes > 0;
    }
    return built == 1;
}

/* The split of a product of `tiles` blocks and a reduction of k on a GPU of sms
 * multiprocessors: S blocks a tile of nsl steps of 64 each, no block without a step; the
 * fewest that give a block a multiprocessor, else the most there are. 0: none holds it. */
static inline int kc_smm_split(int64_t tiles, int64_t k, int sms, int *nsl) {
    const int64_t steps = (k + KC_WG_BK - 1) / KC_WG_BK;
    int best = 0;
    for (int s = 1; s <= KC_SMM_MAX_S; s++) {
        const int64_t per = (steps + s - 1) / s;
        if (per > KC_SMM_MAX_SL || (s - 1) * per >= steps) continue;
        best = s, *nsl = (int)per;
        if (tiles * s >= sms) break;
    }
    return best;
}

/* whether kc_smm_kernel takes p (the device and the split are checked by kc_smm) */
static inline int kc_smm_fits(const KcMatmul *p) {
    return p->half && p->batch == 1 && !p->trans_a && !p->trans_b && p->n >= 1 &&
           p->n <= KC_SMM_MAX_N && p->m % 8 == 0 && p->k % 8 == 0 && p->m <= INT32_MAX &&
           p->k <= INT32_MAX && p->lda % 8 == 0 && p->ldb % 8 == 0 && p->ldd % 4 == 0 &&
           ((uintptr_t)p->A & 15) == 0 && ((uintptr_t)p->B & 15) == 0 &&
           ((uintptr_t)p->D & 7) == 0 && ((uintptr_t)p->C & 7) == 0;
}

template <int ACT>
static inline int kc_smm_launch(cudaStream_t s, const KcMatmul *p, int S, int nsl, int a_const,
                                float *parts) {
    const size_t smem = kc_smm_smem(nsl, S);
    KC_CUDA(cudaFuncSetAttribute(kc_smm_kernel<ACT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)smem));
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute at[2];
    memset(&cfg, 0, sizeof cfg);
    memset(at, 0, sizeof at);
    cfg.gridDim = dim3((unsigned)((p->m + KC_SMM_BN - 1) / KC_SMM_BN),
                       (unsigned)((p->n + KC_SMM_ROWS - 1) / KC_SMM_ROWS), (unsigned)S);
    cfg.blockDim = dim3(256);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = 1, at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = KC_SMM_LAB & 16 || parts ? 1 : (unsigned)S;
    at[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[1].val.programmaticStreamSerializationAllowed = !(KC_SMM_LAB & 32);
    cfg.attrs = at;
    cfg.numAttrs = 2;
    const __half *C = (const __half *)p->C;
    KC_CUDA(cudaLaunchKernelEx(
        &cfg, kc_smm_kernel<ACT>, (const __half *)p->A, p->lda, (const __half *)p->B, p->ldb, C,
        C ? p->beta : 0.0f, (const __half *)p->bias, (__half *)p->D, p->ldd, (int)p->m, (int)p->n,
        (int)p->k, nsl, p->alpha, p->act, p->act_alpha, p->act_beta, a_const, parts));
    return KC_OK;
}

/* whether kc_smm_kernel takes p here (its layout, the device, the bundle's code and a split
 * that holds it: S blocks a tile of nsl steps) */
static inline int kc_smm_plan(const KcMatmul *p, int *S, int *nsl) {
    int dev = 0, major = 0, sms = 0;
    if (!kc_smm_fits(p) || !kc_smm_built() || cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        major < 9)
        return 0;
    const int64_t tiles =
        (p->m + KC_SMM_BN - 1) / KC_SMM_BN * ((p->n + KC_SMM_ROWS - 1) / KC_SMM_ROWS);
    return (*S = kc_smm_split(tiles, p->k, sms, nsl)) > 0;
}

/* kc_smm_kernel for p where it takes it: 1 when launched (*rc its status), 0 when not */
static inline int kc_smm(cudaStream_t s, const KcMatmul *p, int a_const, int *rc,
                         float *parts = NULL) {
    int S, nsl;
    if (!kc_smm_plan(p, &S, &nsl)) return 0;
    switch (p->act) {
    case KC_ACT_NONE:
        *rc = kc_smm_launch<KC_ACT_NONE>(s, p, S, nsl, a_const, parts);
        break;
    case KC_ACT_RELU:
        *rc = kc_smm_launch<KC_ACT_RELU>(s, p, S, nsl, a_const, parts);
        break;
    case KC_ACT_GELU:
        *rc = kc_smm_launch<KC_ACT_GELU>(s, p, S, nsl, a_const, parts);
        break;
    default:
        *rc = kc_smm_launch<-1>(s, p, S, nsl, a_const, parts);
        break;
    }
    return 1;
}

/* ---- the form without split-K: each block its whole reduction ----
 * kc_smm_ns_kernel: a block owns 64 outputs x 128 columns over all of k: A's steps for the
 * whole reduction (at most KC_NS_MAX_STEPS of 64: 96 KB) copied before the wait, B's streamed
 * after it through a ring of KC_NS_RING steps (two ahead; one wgmma group in flight), the
 * epilogue from the accumulators straight to D (4-byte stores). No cluster, no reduction; the
 * grid is only ceil(m / 64) x ceil(n / 128) blocks. */
#define KC_NS_MAX_STEPS 12
#define KC_NS_RING 4

static inline size_t kc_smm_ns_smem(int steps) {
    return (size_t)steps * KC_WG_BK * KC_SMM_BN * 2 +
           (size_t)KC_NS_RING * KC_SMM_ROWS * KC_WG_BK * 2 + 1024;
}

template <int ACT>
__global__ void __launch_bounds__(256, 1)
    kc_smm_ns_kernel(const __half *__restrict__ A, int64_t lda, const __half *__restrict__ B,
                     int64_t ldb, const __half *C, float beta, const __half *__restrict__ bias,
                     __half *D, int64_t ldd, int m, int n, int k, float alpha, int act, float al,
                     float be) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ unsigned char kc_smm_raw[];
    __shared__ float sbias[KC_SMM_BN];
    enum { BK = KC_WG_BK, XS = KC_SMM_ROWS * BK, WS = BK * KC_SMM_BN };
    if (ACT >= 0) act = ACT;
    const int steps = (k + BK - 1) / BK;
    __half *ws = kc_wg_smem_base(kc_smm_raw); /* every step of A */
    __half *xs = ws + steps * WS;             /* the ring of B's steps */
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, wq = (tid & 127) >> 5;
    const int f0 = blockIdx.x * KC_SMM_BN, t0 = blockIdx.y * KC_SMM_ROWS;
    for (int st = 0; st < steps; st++) {
#pragma unroll
        for (int i = 0; i < BK * 8 / 256; i++) {
            const int q = tid + i * 256, kr = q >> 3, c = q & 7, gk = st * BK + kr;
            const bool ok = gk < k && f0 + c * 8 < m;
            kc_ig_copy16(ws + st * WS + kr * 64 + ((c ^ (kr & 7)) * 8),
                         ok ? A + (int64_t)gk * lda + f0 + c * 8 : A, ok);
        }
    }
    kc_ig_commit();
    for (int i = tid; i < KC_SMM_BN; i += 256)
        sbias[i] = bias && f0 + i < m ? __half2float(bias[f0 + i]) : 0.0f;
    kc_pdl_sync();
    auto load_b = [&](int st) {
#pragma unroll
        for (int i = 0; i < KC_SMM_ROWS * 8 / 256; i++) {
            const int q = tid + i * 256, r = q >> 3, c = q & 7, gk = st * BK + c * 8;
            const bool ok = t0 + r < n && gk < k;
            kc_ig_copy16(xs + st % KC_NS_RING * XS + r * 64 + ((c ^ (r & 7)) * 8),
                         ok ? B + (int64_t)(t0 + r) * ldb + gk : B, ok);
        }
    };
#pragma unroll
    for (int st = 0; st < KC_NS_RING - 2; st++) {
        if (st < steps) load_b(st);
        kc_ig_commit();
    }
    float acc[KC_SMM_BN / 2];
    for (int st = 0; st < steps; st++) {
        kc_ig_wait<KC_NS_RING - 3>();
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads(); /* step st landed; every warpgroup is done with step st - 2 */
        if (st + KC_NS_RING - 2 < steps) load_b(st + KC_NS_RING - 2);
        kc_ig_commit();
        kc_wg_slice<KC_SMM_BN, 0>(acc, xs + st % KC_NS_RING * XS + wg * 64 * BK, ws + st * WS,
                                  st > 0);
        kc_wg_wait<1, KC_SMM_BN / 2>(acc);
    }
    kc_wg_wait<0, KC_SMM_BN / 2>(acc);
    const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int t = t0 + wg * 64 + wq * 16 + g + 8 * h;
        if (t >= n) continue;
#pragma unroll
        for (int j = 0; j < KC_SMM_BN / 8; j++) {
            const int c = j * 8 + t4 * 2;
            if (f0 + c >= m) continue;
            const int64_t at = (int64_t)t * ldd + f0 + c;
            float y0 = alpha * acc[j * 4 + 2 * h] + sbias[c];
            float y1 = alpha * acc[j * 4 + 2 * h + 1] + sbias[c + 1];
            if (C) {
                const __half2 cv = *(const __half2 *)(C + at);
                y0 += beta * __low2float(cv), y1 += beta * __high2float(cv);
            }
            *(__half2 *)(D + at) =
                __floats2half2_rn(kc_act(y0, act, al, be), kc_act(y1, act, al, be));
        }
    }
#else
    kc_pdl_sync();
    (void)A, (void)lda, (void)B, (void)ldb, (void)C, (void)beta, (void)bias, (void)D, (void)ldd;
    (void)m, (void)n, (void)k, (void)alpha, (void)act, (void)al, (void)be;
#endif
}

/* kc_smm_ns_kernel for p (the layout kc_smm_fits asks, m even, k at most KC_NS_MAX_STEPS
 * steps): 1 when launched, *rc its status */
static inline int kc_smm_ns(cudaStream_t s, const KcMatmul *p, int *rc) {
    const int steps = (int)((p->k + KC_WG_BK - 1) / KC_WG_BK);
    if (!kc_smm_fits(p) || steps > KC_NS_MAX_STEPS || !kc_smm_built()) return 0;
    const size_t smem = kc_smm_ns_smem(steps);
    void (*kern)(const __half *, int64_t, const __half *, int64_t, const __half *, float,
                 const __half *, __half *, int64_t, int, int, int, float, int, float, float) =
        p->act == KC_ACT_NONE   ? kc_smm_ns_kernel<KC_ACT_NONE>
        : p->act == KC_ACT_GELU ? kc_smm_ns_kernel<KC_ACT_GELU>
                                : kc_smm_ns_kernel<-1>;
    if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) !=
        cudaSuccess)
        return *rc = KC_ERR_CUDA, 1;
    const __half *C = (const __half *)p->C;
    kc_launch_as<true>(kern,
                       dim3((unsigned)((p->m + KC_SMM_BN - 1) / KC_SMM_BN),
                            (unsigned)((p->n + KC_SMM_ROWS - 1) / KC_SMM_ROWS)),
                       dim3(256), smem, s, (const __half *)p->A, p->lda, (const __half *)p->B,
                       p->ldb, C, C ? p->beta : 0.0f, (const __half *)p->bias, (__half *)p->D,
                       p->ldd, (int)p->m, (int)p->n, (int)p->k, p->alpha, p->act, p->act_alpha,
                       p->act_beta);
    *rc = cudaGetLastError() == cudaSuccess ? KC_OK : KC_ERR_CUDA;
    return 1;
}

/* reads the 128 x n row block of x and writes it back (the model's LayerNorm's traffic) */
__global__ void row_pass(__half *x, int64_t n) {
    kc_pdl_sync();
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n / 8;
         i += (int64_t)gridDim.x * blockDim.x) {
        uint4 v = ((uint4 *)x)[i];
        ((uint4 *)x)[i] = v;
    }
}

/* d (nm float16, m a row) = the sum of S float32 partials of parts (S, nm) + bias: the reduction
 * of kc_smm_kernel's parts, as the kernel after a product (an Add + LayerNorm) would do it while
 * it reads the product */
__global__ void parts_pass(const float *parts, int S, int64_t nm, int m, const __half *bias,
                           __half *d) {
    kc_pdl_sync();
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nm / 4;
         i += (int64_t)gridDim.x * blockDim.x) {
        float4 v = ((const float4 *)parts)[i];
        for (int q = 1; q < S; q++) {
            float4 u = ((const float4 *)(parts + q * nm))[i];
            v.x += u.x, v.y += u.y, v.z += u.z, v.w += u.w;
        }
        const int c = (int)(i * 4 % m);
        __half h[4] = {__float2half(v.x + __half2float(bias[c])),
                       __float2half(v.y + __half2float(bias[c + 1])),
                       __float2half(v.z + __half2float(bias[c + 2])),
                       __float2half(v.w + __half2float(bias[c + 3]))};
        ((uint2 *)d)[i] = *(const uint2 *)h;
    }
}

struct Shape {
    const char *name;
    int m, k, act;
};

/* Row-major Y (M, N) = act(1.25 X (M, K) W (K, N) + 0.75 C + bias) by kc_smm_kernel against
 * float64: fails where the kernel does not take it or any element is off by more than 4e-3 of
 * 1 + |y| (float16 output). */
static void check_one(int64_t M, int64_t N, int64_t K, int act, int with_c, int a_const,
                      int form = 0) { /* 0 split-K, 1 its float32 parts summed after, 2 no split */
    const bool parts = form == 1;
    typedef __half T;
    std::vector<T> x(M * K), w(K * N), b(N), c(M * N);
    std::vector<double> xh(M * K), wh(K * N), bh(N), ch(M * N);
    unsigned long long r = 0x9e3779b97f4a7c15ull;
    auto urand = [&]() {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        return (double)(r >> 11) / 9007199254740992.0;
    };
    for (int64_t i = 0; i < M * K; i++)
        x[i] = (T)(float)((2 * urand() - 1) * 2 / sqrt((double)K)), xh[i] = (float)x[i];
    for (int64_t i = 0; i < K * N; i++)
        w[i] = (T)(float)(2 * urand() - 1), wh[i] = (float)w[i];
    for (int64_t i = 0; i < N; i++)
        b[i] = (T)(float)(urand() - 0.5), bh[i] = (float)b[i];
    for (int64_t i = 0; i < M * N; i++)
        c[i] = (T)(float)(2 * urand() - 1), ch[i] = (float)c[i];
    T *dx, *dw, *db, *dc, *dy;
    CK(cudaMalloc(&dx, M * K * 2));
    CK(cudaMalloc(&dw, K * N * 2));
    CK(cudaMalloc(&db, N * 2));
    CK(cudaMalloc(&dc, M * N * 2));
    CK(cudaMalloc(&dy, M * N * 2));
    CK(cudaMemcpy(dx, x.data(), M * K * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dw, w.data(), K * N * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b.data(), N * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dc, c.data(), M * N * 2, cudaMemcpyHostToDevice));
    CK(cudaMemset(dy, 0xff, M * N * 2));
    KcMatmul p;
    memset(&p, 0, sizeof p);
    p.m = N, p.n = M, p.k = K, p.A = dw, p.B = dx, p.D = dy, p.C = with_c ? dc : NULL;
    p.beta = with_c ? 0.75f : 0.0f, p.half = 1, p.lda = N, p.ldb = K, p.ldd = N, p.batch = 1;
    p.alpha = parts ? 1.0f : 1.25f, p.bias = db, p.act = act;
    float *dp = NULL;
    int rc = KC_OK, taken, split = 0, nsl = 0;
    if (parts) { /* the float32 parts, then their sum and the bias by parts_pass */
        CK(cudaMalloc(&dp, (size_t)KC_SMM_MAX_S * M * N * 4));
        kc_smm_plan(&p, &split, &nsl);
        taken = kc_smm(0, &p, a_const, &rc, dp);
        parts_pass<<<48, 256>>>(dp, split, M * N, (int)N, db, dy);
    } else if (form == 2) {
        taken = kc_smm_ns(0, &p, &rc);
    } else {
        taken = kc_smm(0, &p, a_const, &rc);
    }
    CK(cudaDeviceSynchronize());
    std::vector<T> y(M * N);
    CK(cudaMemcpy(y.data(), dy, M * N * 2, cudaMemcpyDeviceToHost));
    double worst = 0;
    long bad = !taken + (rc != KC_OK);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t t = 0; t < K; t++)
                s += xh[i * K + t] * wh[t * N + j];
            s = (parts ? 1.0 : 1.25) * s + bh[j] + (with_c ? 0.75 * ch[i * N + j] : 0.0);
            double want = act == KC_ACT_RELU   ? (s > 0 ? s : 0)
                          : act == KC_ACT_GELU ? 0.5 * s * (1 + erf(s / sqrt(2.0)))
                                               : s;
            double e = fabs((float)y[i * N + j] - want) / (1 + fabs(want));
            if (!(e <= 4e-3)) bad++, e = e != e ? INFINITY : e;
            worst = fmax(worst, e);
        }
    printf("%s %lldx%lldx%lld%s act %d, A %s%s: max err %.3g\n", bad ? "FAIL" : "ok  ",
           (long long)M, (long long)N, (long long)K, with_c ? " + beta C" : "", act,
           a_const ? "constant" : "written",
           parts       ? ", float32 parts summed after"
           : form == 2 ? ", no split"
                       : "",
           worst);
    bad ? failed++ : passed++;
    cudaFree(dp);
    cudaFree(dx), cudaFree(dw), cudaFree(db), cudaFree(dc), cudaFree(dy);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "check") == 0) {
        check_one(128, 2304, 768, KC_ACT_NONE, 0, 1);
        check_one(128, 768, 768, KC_ACT_NONE, 1, 1);
        check_one(128, 3072, 768, KC_ACT_GELU, 0, 1);
        check_one(128, 768, 3072, KC_ACT_NONE, 0, 1);
        check_one(77, 136, 200, KC_ACT_RELU, 1, 0);
        check_one(1, 64, 64, KC_ACT_NONE, 1, 1);
        check_one(128, 768, 768, KC_ACT_NONE, 0, 1, 1);
        check_one(128, 768, 3072, KC_ACT_NONE, 0, 1, 1);
        check_one(77, 136, 200, KC_ACT_NONE, 0, 0, 1);
        check_one(128, 2304, 768, KC_ACT_NONE, 0, 1, 2);
        check_one(128, 3072, 768, KC_ACT_GELU, 0, 1, 2);
        check_one(128, 768, 768, KC_ACT_NONE, 1, 1, 2);
        check_one(77, 136, 200, KC_ACT_RELU, 1, 0, 2);
        printf("%d passed, %d failed\n", passed, failed);
        return failed != 0;
    }
    const int rounds = argc > 1 ? atoi(argv[1]) : 3, L = 12, T = 128;
    const Shape shapes[] = {{"qkv", 2304, 768, KC_ACT_NONE},
                            {"proj", 768, 768, KC_ACT_NONE},
                            {"fc1", 3072, 768, KC_ACT_GELU},
                            {"fc2", 768, 3072, KC_ACT_NONE}};
    cublasLtHandle_t lt;
    if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) return 1;
    size_t ws_size = 8u << 20;
    void *ws;
    CK(cudaMalloc(&ws, ws_size));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    printf("KC_SMM_BN %d, KC_PDL %d\n", KC_SMM_BN, KC_PDL);
    for (const Shape &sh : shapes) {
        std::vector<__half> hw((size_t)sh.k * sh.m), hx((size_t)T * sh.k), hb(sh.m);
        for (size_t i = 0; i < hw.size(); i++)
            hw[i] = __float2half((float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f);
        for (size_t i = 0; i < hx.size(); i++)
            hx[i] = __float2half((float)((i * 40503u) % 1000) / 2000.0f - 0.25f);
        for (size_t i = 0; i < hb.size(); i++)
            hb[i] = __float2half(0.01f * (float)(i % 7));
        __half *w, *x, *b, *d;
        CK(cudaMalloc(&w, hw.size() * 2 * L));
        for (int l = 0; l < L; l++)
            CK(cudaMemcpy(w + (size_t)l * hw.size(), hw.data(), hw.size() * 2,
                          cudaMemcpyHostToDevice));
        CK(cudaMalloc(&x, hx.size() * 2));
        CK(cudaMemcpy(x, hx.data(), hx.size() * 2, cudaMemcpyHostToDevice));
        CK(cudaMalloc(&b, hb.size() * 2));
        CK(cudaMemcpy(b, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice));
        CK(cudaMalloc(&d, (size_t)T * sh.m * 2));
        float ms[4][3] = {}, *parts;
        CK(cudaMalloc(&parts, (size_t)KC_SMM_MAX_S * T * sh.m * 4));
        int split = 0, nsl = 0;
        for (int path = 0; path < 4; path++) /* cuBLASLt, kc_smm, kc_smm's parts, no split */
            for (int ln = 0; ln < 3; ln++) { /* no kernel between, the row kernel on X, on D */
                if (path == 2 && ln != 2) continue; /* parts need their reduction after them */
                if (path == 3 && sh.k > KC_NS_MAX_STEPS * KC_WG_BK) continue; /* not taken */
                cudaGraph_t g;
                cudaGraphExec_t ge;
                CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
                for (int l = 0; l < L; l++) {
                    KcMatmul p;
                    memset(&p, 0, sizeof p);
                    p.m = sh.m, p.n = T, p.k = sh.k;
                    p.A = w + (size_t)l * hw.size(), p.B = x, p.D = d;
                    p.lda = sh.m, p.ldb = sh.k, p.ldd = sh.m;
                    p.batch = 1, p.alpha = 1.0f, p.bias = b, p.act = sh.act, p.half = 1;
                    int rc = KC_OK, no_algo = 0;
                    if (path == 0) {
                        rc = kc_lt_try(lt, s, ws, ws_size, CUBLAS_COMPUTE_32F, &p,
                                       kc_lt_epilogue(&p), NULL, 0, &no_algo);
                    } else if (path == 3) {
                        if (!kc_smm_ns(s, &p, &rc)) rc = -1;
                    } else {
                        kc_smm_plan(&p, &split, &nsl);
                        if (!kc_smm(s, &p, 1, &rc, path == 2 ? parts : NULL)) rc = -1;
                    }
                    if (rc != KC_OK) {
                        printf("FAIL %s path %d rc %d\n", sh.name, path, rc);
                        return 1;
                    }
                    if (ln == 1)
                        kc_launch_pdl(row_pass, dim3(48), dim3(256), s, x, (int64_t)T * sh.k);
                    if (ln == 2 && path != 2)
                        kc_launch_pdl(row_pass, dim3(48), dim3(256), s, d, (int64_t)T * sh.m);
                    if (ln == 2 && path == 2)
                        kc_launch_pdl(parts_pass, dim3(48), dim3(256), s, (const float *)parts,
                                      split, (int64_t)T * sh.m, sh.m, (const __half *)b, d);
                }
                CK(cudaStreamEndCapture(s, &g));
                CK(cudaGraphInstantiate(&ge, g, 0));
                std::vector<float> best;
                cudaEvent_t e0, e1;
                CK(cudaEventCreate(&e0));
                CK(cudaEventCreate(&e1));
                for (int r = 0; r < rounds; r++)
                    best.push_back(lab_graph_median_ms(ge, s, e0, e1));
                std::sort(best.begin(), best.end());
                ms[path][ln] = best[0];
                CK(cudaGraphExecDestroy(ge));
                CK(cudaGraphDestroy(g));
            }
        printf("%-5s 128x%dx%d (split %d x %d): us a product: cuBLASLt %.2f, kc_smm %.2f (%.2fx); "
               "with the row kernel: %.2f, %.2f (%.2fx)\n",
               sh.name, sh.m, sh.k, split, nsl, ms[0][0] * 1e3 / L, ms[1][0] * 1e3 / L,
               ms[1][0] / ms[0][0], ms[0][1] * 1e3 / L, ms[1][1] * 1e3 / L, ms[1][1] / ms[0][1]);
        printf(
            "      with a kernel reading the product: cuBLASLt %.2f, kc_smm %.2f (%.2fx), kc_smm's "
            "float32 parts summed by that kernel %.2f (%.2fx)\n",
            ms[0][2] * 1e3 / L, ms[1][2] * 1e3 / L, ms[1][2] / ms[0][2], ms[2][2] * 1e3 / L,
            ms[2][2] / ms[0][2]);
        if (ms[3][0] > 0)
            printf("      without split-K (%d blocks): %.2f (%.2fx); with the row kernel %.2f "
                   "(%.2fx); "
                   "with a kernel reading the product %.2f (%.2fx)\n",
                   (sh.m + KC_SMM_BN - 1) / KC_SMM_BN, ms[3][0] * 1e3 / L, ms[3][0] / ms[0][0],
                   ms[3][1] * 1e3 / L, ms[3][1] / ms[0][1], ms[3][2] * 1e3 / L,
                   ms[3][2] / ms[0][2]);
        cudaFree(w), cudaFree(x), cudaFree(b), cudaFree(d), cudaFree(parts);
    }
    return 0;
}
