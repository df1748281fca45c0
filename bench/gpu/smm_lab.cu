/* smm_lab.cu: a few-row float16 product of Kiln's own (kc_smm, below: split-K over a thread-
 * block cluster, PDL-launched, weights copied before the wait) against cuBLASLt (kc_lt_matmul, the
 * heuristic's first algorithm, as an untuned bundle runs it), on BERT-base's four products at
 * 128 rows (qkv 768 -> 2304, proj 768 -> 768, fc1 768 -> 3072 with GELU, fc2 3072 -> 768) and a
 * few odd shapes (rows not a multiple of 16, ReLU, one split).
 * Correctness: each path against a float64 reference of the same float16 operands: the
 * largest error over the largest |reference|, and kc_smm's bits on a second run (equal).
 * Timing: BERT-base's 48 products (12 layers' distinct weights, 170 MB: read from memory as in
 * the model) as one CUDA graph per path, each product reading the previous one's output where
 * the shapes chain (as qkv -> proj does not, it reads a fixed buffer); medians of 200 replays in
 * 5 alternated rounds. With LN=1 a PDL-launched row kernel (a stand-in for Add+LayerNorm:
 * reads 128 x 768, writes it) runs between the products, as in the model.
 * usage: nvcc -O3 -arch=sm_90 -I runtime/cuda bench/gpu/smm_lab.cu -lcublasLt -o smm && ./smm
 * (./smm check: the correctness part alone, e.g. under compute-sanitizer).
 * Result (H200, 2026-11-29, bench/gpu/bert-ln-attn.md): correct (errors equal to cuBLASLt's,
 * same bits twice, memcheck 0 errors) but 1.2-2.2x slower than cuBLASLt's nvjet kernels, so it
 * was not put into the runtime; kept as the starting point of a faster one. */
#include "kc_blas.cuh"
#include "kc_igemm.cuh"
#include "lab.cuh"

/* ---- the kernel tried (was runtime/cuda/kc_smm.cuh on a branch; not in the runtime) ---- */
/* kc_smm: float16 products of few rows (at most 128: BERT-base's 128 tokens at batch 1)
 * on Hopper, in place of cuBLASLt there. Row-major Y (T, N) = act(X (T, K) W (K, N) + bias),
 * i.e. kc_blas.cuh's column-major D (m = N, n = T) = A (W) B (X), float32 accumulation.
 *
 * Why: at 128 rows a product is latency-bound. cuBLASLt's kernels take 3.7-7.6 us for
 * BERT-base's four shapes in a graph, against 0.3-1.1 us of weights at the memory's rate
 * (bench/gpu/bert-ln-attn.md), and they are launched plainly: each starts only once the
 * kernel before it has drained. This kernel is launched with programmatic dependent launch
 * (kc_launch_pdl) and starts copying its slice of W -- a constant -- into shared memory
 * before kc_pdl_wait, so the weights' trip overlaps the tail of the kernel before it; only
 * X (just written, in L2) is read after the wait.
 *
 * Work split: a block owns a 64-column tile of Y and one of S slices of the reduction
 * (split-K, S <= 8), so that the grid about fills the GPU (N / 64 x S blocks); the S blocks
 * of a tile form one thread-block cluster. Each block multiplies its (T x K/S) by (K/S x 64)
 * on mma.sync m16n8k16 (8 warps, 16 rows each), leaves its float32 partial tile in shared
 * memory, and after a cluster barrier each block sums T/S of the tile's rows over the S
 * partials through distributed shared memory, in rank order (the same bits every run),
 * adds the bias, applies the activation and stores float16. Requires sm_90 (clusters),
 * N % 64 == 0, K % (16 S) == 0 with K / S <= KC_SMM_MAX_KS, 16-byte aligned rows; kc_smm
 * returns KC_ERR_SHAPE where it does not apply, and the caller takes cuBLASLt. */
#define KC_SMM_ROWS 128   /* rows of Y at most: 8 warps x 16 */
#define KC_SMM_BN 64      /* columns of a block's tile */
#define KC_SMM_MAX_S 8    /* split-K slices: blocks of a cluster (the portable maximum) */
#define KC_SMM_MAX_KS 384 /* reduction of one slice: X 98 KB + W 54 KB of shared memory */
#define KC_SMM_X_PAD 8    /* halves: rows 16 bytes apart mod 128, an odd count of 16-byte units */
#define KC_SMM_W_LD (KC_SMM_BN + 8)
#define KC_SMM_P_LD (KC_SMM_BN + 4) /* floats: a partial row */

static inline size_t kc_smm_smem(int ks) {
    size_t w = (size_t)ks * KC_SMM_W_LD * 2, x = (size_t)KC_SMM_ROWS * (ks + KC_SMM_X_PAD) * 2;
    size_t part = (size_t)KC_SMM_ROWS * KC_SMM_P_LD * 4;
    return w + (x > part ? x : part);
}


/* Grid (N / 64, S), cluster (1, S, 1), 256 threads. w: (K, N), x: (T, K), y: (T, N). */
__global__ void __launch_bounds__(256)
kc_smm_kernel(const __half *__restrict__ w, const __half *__restrict__ x,
              const __half *__restrict__ bias, __half *__restrict__ y, int T, int N, int K,
              int ks, int act, float al, float be) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) unsigned char kc_smm_raw[];
    __half *sw = (__half *)kc_smm_raw;                         /* (ks, W_LD) */
    __half *sx = sw + (size_t)ks * KC_SMM_W_LD;                /* (128, ks + PAD) */
    float *sp = (float *)sx;                                   /* after the product */
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int n0 = blockIdx.x * KC_SMM_BN, k0 = blockIdx.y * ks, xld = ks + KC_SMM_X_PAD;
    const unsigned S = gridDim.y, rank = lab_cluster_rank();

    /* W's slice first: constant, so it may be read before the kernel before has finished */
    for (int i = tid; i < ks * (KC_SMM_BN / 8); i += 256) {
        int r = i >> 3, c = (i & 7) * 8; /* KC_SMM_BN / 8 == 8 chunks a row */
        kc_ig_copy16(sw + r * KC_SMM_W_LD + c, w + (size_t)(k0 + r) * N + n0 + c, true);
    }
    kc_ig_commit();
#ifndef KC_SMM_LATE_TRIGGER
    kc_pdl_trigger();
#endif
    kc_pdl_wait(); /* x is the previous kernel's output */
#ifdef KC_SMM_LATE_TRIGGER
    kc_pdl_trigger();
#endif
    /* X's slice in two halves of the reduction (one where ks is not a multiple of 32), so the
     * first half is multiplied while the second arrives; each thread walks its 16-byte chunks
     * by steps of 256 without a division a chunk */
    const int kh = ks % 32 == 0 ? ks / 2 : ks, cpr = kh / 8;
    const int r0 = tid / cpr, c0 = tid - r0 * cpr, dr = 256 / cpr, dc = 256 - dr * cpr;
    for (int h = 0; h < ks; h += kh) {
        for (int r = r0, c = c0; r < KC_SMM_ROWS;) {
            bool ok = r < T;
            kc_ig_copy16(sx + r * xld + h + c * 8, x + (size_t)(ok ? r : 0) * K + k0 + h + c * 8, ok);
            r += dr, c += dc;
            if (c >= cpr) c -= cpr, r++;
        }
        kc_ig_commit();
    }

    float acc[KC_SMM_BN / 8][4];
#pragma unroll
    for (int j = 0; j < KC_SMM_BN / 8; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    const int row0 = warp * 16;
    const __half *ap = sx + (row0 + (lane & 15)) * xld + (lane >> 4) * 8;
    const __half *bp = sw + (lane & 15) * KC_SMM_W_LD + (lane >> 4) * 8;
    for (int h = 0; h < ks; h += kh) {
        if (h == 0 && kh < ks) kc_ig_wait<1>();
        else kc_ig_wait<0>();
        __syncthreads();
        if (row0 < T) { /* warp-uniform */
#pragma unroll 2
            for (int kk = h; kk < h + kh; kk += 16) {
                unsigned a[4], b[KC_SMM_BN / 16][4];
                kc_ldsm_x4(a, ap + kk);
#pragma unroll
                for (int j = 0; j < KC_SMM_BN / 16; j++) kc_ldsm_x4_t(b[j], bp + kk * KC_SMM_W_LD + j * 16);
#pragma unroll
                for (int j = 0; j < KC_SMM_BN / 16; j++) {
                    kc_mma16816(acc[2 * j], a, b[j]);
                    kc_mma16816(acc[2 * j + 1], a, b[j] + 2);
                }
            }
        }
    }
    __syncthreads(); /* sx is read by every warp: now it holds the partial */
    {
        const int r = row0 + (lane >> 2), c = (lane & 3) * 2;
#pragma unroll
        for (int j = 0; j < KC_SMM_BN / 8; j++) {
            *(float2 *)(sp + r * KC_SMM_P_LD + j * 8 + c) = make_float2(acc[j][0], acc[j][1]);
            *(float2 *)(sp + (r + 8) * KC_SMM_P_LD + j * 8 + c) = make_float2(acc[j][2], acc[j][3]);
        }
    }
    lab_cluster_sync(); /* every block's partial is there */
    {
        const float *peer[KC_SMM_MAX_S];
#pragma unroll
        for (int s = 0; s < KC_SMM_MAX_S; s++) peer[s] = lab_cluster_map(sp, s < (int)S ? s : 0);
        const int per = (T + (int)S - 1) / (int)S, lo = (int)rank * per;
        const int hi = lo + per < T ? lo + per : T;
        for (int i = tid; i < (hi - lo) * (KC_SMM_BN / 4); i += 256) {
            const int r = lo + (i >> 4), c = (i & 15) * 4; /* KC_SMM_BN / 4 == 16 a row */
            const int off = r * KC_SMM_P_LD + c;
            float4 q[KC_SMM_MAX_S]; /* every load in flight before the first add */
#pragma unroll
            for (int s = 0; s < KC_SMM_MAX_S; s++)
                if (s < (int)S) q[s] = *(const float4 *)(peer[s] + off);
            float4 v = q[0];
#pragma unroll
            for (int s = 1; s < KC_SMM_MAX_S; s++)
                if (s < (int)S) v.x += q[s].x, v.y += q[s].y, v.z += q[s].z, v.w += q[s].w;
            if (bias) {
                v.x += __half2float(bias[n0 + c]), v.y += __half2float(bias[n0 + c + 1]);
                v.z += __half2float(bias[n0 + c + 2]), v.w += __half2float(bias[n0 + c + 3]);
            }
            __half2 lo2 = __floats2half2_rn(kc_act(v.x, act, al, be), kc_act(v.y, act, al, be));
            __half2 hi2 = __floats2half2_rn(kc_act(v.z, act, al, be), kc_act(v.w, act, al, be));
            uint2 o;
            o.x = *(unsigned *)&lo2, o.y = *(unsigned *)&hi2;
            *(uint2 *)(y + (size_t)r * N + n0 + c) = o;
        }
    }
    lab_cluster_sync(); /* no block leaves while another reads its shared memory */
#endif
}

/* The split for a product of N columns and reduction K on a GPU of `sms` multiprocessors:
 * the fewest slices that give at least one block a multiprocessor, at most KC_SMM_MAX_S, each
 * a multiple of 16 and at most KC_SMM_MAX_KS deep; 0 where none fits. */
static inline int kc_smm_split(int64_t N, int64_t K, int sms) {
    int64_t tiles = N / KC_SMM_BN;
    for (int s = 1; s <= KC_SMM_MAX_S; s++) {
        if (K % (16 * s) != 0 || K / s > KC_SMM_MAX_KS) continue;
        if (tiles * s >= sms || s == KC_SMM_MAX_S) return s;
    }
    for (int s = KC_SMM_MAX_S; s >= 1; s--) /* fewer blocks than SMs: the deepest that fits */
        if (K % (16 * s) == 0 && K / s <= KC_SMM_MAX_KS) return s;
    return 0;
}

/* Whether kc_smm takes the product (shape and layout only; the device is checked there). */
static inline int kc_smm_ok(const KcMatmul *p) {
    return p->half && p->batch == 1 && !p->trans_a && !p->trans_b && !p->C && p->beta == 0.0f &&
           p->alpha == 1.0f && p->n >= 1 && p->n <= KC_SMM_ROWS && p->m % KC_SMM_BN == 0 &&
           p->k % 16 == 0 && p->lda == p->m && p->ldb == p->k && p->ldd == p->m &&
           ((uintptr_t)p->A | (uintptr_t)p->B | (uintptr_t)p->D) % 16 == 0 &&
           (p->act == KC_ACT_NONE || p->act == KC_ACT_RELU || p->act == KC_ACT_GELU ||
            p->act == KC_ACT_GELU_TANH);
}

/* The product on kc_smm_kernel; KC_ERR_SHAPE where it does not apply (kc_smm_ok, a device
 * before sm_90, no split that fits), and then nothing was enqueued. */
static inline int kc_smm(cudaStream_t s, const KcMatmul *p) {
    int dev = 0, major = 0, sms = 0, split;
    cudaFuncAttributes fa;
    if (!kc_smm_ok(p)) return KC_ERR_SHAPE;
    /* the kernel's body exists only in code built for sm_90 (an sm_80 build's PTX, compiled
     * by the driver for a newer GPU, has an empty one) */
    if (cudaFuncGetAttributes(&fa, kc_smm_kernel) != cudaSuccess || fa.ptxVersion < 90 ||
        cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        major < 9)
        return KC_ERR_SHAPE;
    if ((split = kc_smm_split(p->m, p->k, sms)) == 0) return KC_ERR_SHAPE;
    int ks = (int)(p->k / split);
    size_t smem = kc_smm_smem(ks);
    if (cudaFuncSetAttribute(kc_smm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)smem) != cudaSuccess)
        return KC_ERR_CUDA;
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute at[2];
    memset(&cfg, 0, sizeof cfg);
    memset(at, 0, sizeof at);
    cfg.gridDim = dim3((unsigned)(p->m / KC_SMM_BN), (unsigned)split, 1);
    cfg.blockDim = dim3(256, 1, 1);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = 1;
    at[0].val.clusterDim.y = (unsigned)split;
    at[0].val.clusterDim.z = 1;
    at[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
#ifdef KC_SMM_NO_PDL
    at[1].val.programmaticStreamSerializationAllowed = 0;
#else
    at[1].val.programmaticStreamSerializationAllowed = 1;
#endif
    cfg.attrs = at;
    cfg.numAttrs = 2;
    if (cudaLaunchKernelEx(&cfg, kc_smm_kernel, (const __half *)p->A, (const __half *)p->B,
                           (const __half *)p->bias, (__half *)p->D, (int)p->n, (int)p->m,
                           (int)p->k, ks, p->act, p->act_alpha, p->act_beta) != cudaSuccess)
        return KC_ERR_CUDA;
    return KC_OK;
}


#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define SCK(x) do { int e_ = (int)(x); if (e_ != 0) { printf("error %d at %s:%d\n", e_, __FILE__, __LINE__); exit(1); } } while (0)

static void fill(std::vector<__half> &v, unsigned seed, float scale) {
    for (size_t i = 0; i < v.size(); i++) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
        v[i] = __float2half(((float)(h & 0xffff) / 32768.0f - 1.0f) * scale);
    }
}

static double act_ref(double v, int act) {
    if (act == KC_ACT_RELU) return v < 0 ? 0 : v;
    if (act == KC_ACT_GELU) return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    return v;
}

struct Dev {
    cublasLtHandle_t lt;
    void *ws;
    size_t ws_bytes = 8u << 20;
};

static int run_path(Dev &d, cudaStream_t s, const KcMatmul &p, int smm) {
    if (smm) return kc_smm(s, &p);
    return kc_lt_matmul(d.lt, s, d.ws, d.ws_bytes, CUBLAS_COMPUTE_32F, &p, NULL, 0);
}

static int check(Dev &d, int T, int N, int K, int act, unsigned seed) {
    std::vector<__half> w((size_t)K * N), x((size_t)T * K), b(N), y((size_t)T * N), y2(y.size());
    fill(w, seed, 0.05f), fill(x, seed * 7 + 1, 1.0f), fill(b, seed * 3 + 2, 0.5f);
    __half *dw, *dx, *db, *dy;
    SCK(cudaMalloc(&dw, w.size() * 2)); SCK(cudaMalloc(&dx, x.size() * 2));
    SCK(cudaMalloc(&db, b.size() * 2)); SCK(cudaMalloc(&dy, y.size() * 2));
    SCK(cudaMemcpy(dw, w.data(), w.size() * 2, cudaMemcpyHostToDevice));
    SCK(cudaMemcpy(dx, x.data(), x.size() * 2, cudaMemcpyHostToDevice));
    SCK(cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice));
    KcMatmul p;
    memset(&p, 0, sizeof p);
    p.m = N, p.n = T, p.k = K, p.A = dw, p.B = dx, p.D = dy, p.lda = N, p.ldb = K, p.ldd = N;
    p.batch = 1, p.alpha = 1.0f, p.bias = db, p.act = act, p.half = 1;
    std::vector<double> ref((size_t)T * N);
    double amax = 0;
    for (int r = 0; r < T; r++)
        for (int c = 0; c < N; c++) {
            double a = __half2float(b[c]);
            for (int k = 0; k < K; k++)
                a += (double)__half2float(x[(size_t)r * K + k]) * __half2float(w[(size_t)k * N + c]);
            ref[(size_t)r * N + c] = act_ref(a, act);
            amax = std::max(amax, fabs(ref[(size_t)r * N + c]));
        }
    int bad = 0;
    for (int smm = 0; smm < 2; smm++) {
        SCK(cudaMemset(dy, 0xff, y.size() * 2));
        int rc = run_path(d, 0, p, smm);
        SCK(cudaDeviceSynchronize());
        if (rc != KC_OK) { printf("  T=%d N=%d K=%d act=%d %s: rc %d\n", T, N, K, act, smm ? "smm" : "lt", rc); bad = 1; continue; }
        SCK(cudaMemcpy(y.data(), dy, y.size() * 2, cudaMemcpyDeviceToHost));
        double err = 0;
        for (size_t i = 0; i < y.size(); i++) {
            double v = __half2float(y[i]);
            err = std::max(err, std::isfinite(v) ? fabs(v - ref[i]) : INFINITY);
        }
        int same = 1;
        if (smm) {
            SCK(cudaMemset(dy, 0, y.size() * 2));
            SCK(run_path(d, 0, p, 1));
            SCK(cudaMemcpy(y2.data(), dy, y.size() * 2, cudaMemcpyDeviceToHost));
            same = memcmp(y.data(), y2.data(), y.size() * 2) == 0;
        }
        /* float16 output: half an ulp of the largest value is 2^-11 relative */
        int ok = err / amax < 2e-3 && same;
        printf("  T=%3d N=%4d K=%4d act=%d %-3s max err / max |ref| %.2e%s %s\n", T, N, K, act,
               smm ? "smm" : "lt", err / amax, smm ? (same ? " (same bits twice)" : " (BITS DIFFER)") : "",
               ok ? "ok" : "FAIL");
        bad |= !ok;
    }
    cudaFree(dw), cudaFree(dx), cudaFree(db), cudaFree(dy);
    return bad;
}

/* the stand-in for Add+LayerNorm: one warp a row, PDL-launched, waits first */
__global__ void rows_kernel(const __half *a, __half *y, int rows, int D) {
    kc_pdl_wait();
    kc_pdl_trigger();
    int row = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;
    float s = 0;
    for (int j = lane; j < D; j += 32) s += __half2float(a[(size_t)row * D + j]);
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    for (int j = lane; j < D; j += 32)
        y[(size_t)row * D + j] = __float2half(__half2float(a[(size_t)row * D + j]) - s / D);
}

int main(int argc, char **argv) {
    Dev d;
    SCK(cublasLtCreate(&d.lt));
    SCK(cudaMalloc(&d.ws, d.ws_bytes));
    int bad = 0;
    printf("correctness (float64 reference of the float16 operands):\n");
    bad |= check(d, 128, 2304, 768, KC_ACT_NONE, 1);
    bad |= check(d, 128, 768, 768, KC_ACT_NONE, 2);
    bad |= check(d, 128, 3072, 768, KC_ACT_GELU, 3);
    bad |= check(d, 128, 768, 3072, KC_ACT_NONE, 4);
    bad |= check(d, 77, 256, 96, KC_ACT_RELU, 5);
    bad |= check(d, 1, 64, 16, KC_ACT_NONE, 6);
    bad |= check(d, 100, 1024, 2048, KC_ACT_GELU, 7);
    bad |= check(d, 16, 128, 32, KC_ACT_NONE, 8);
    if (argc > 1) { /* "check": correctness only (compute-sanitizer) */
        printf(bad ? "FAIL\n" : "all checks passed\n");
        return bad;
    }

    const int L = 12, T = 128;
    const int NK[4][2] = {{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}};
    const int ACT[4] = {KC_ACT_NONE, KC_ACT_NONE, KC_ACT_GELU, KC_ACT_NONE};
    std::vector<__half *> W;
    for (int l = 0; l < L; l++)
        for (int j = 0; j < 4; j++) {
            std::vector<__half> h((size_t)NK[j][0] * NK[j][1]);
            fill(h, 100 + l * 4 + j, 0.05f);
            __half *p;
            SCK(cudaMalloc(&p, h.size() * 2));
            SCK(cudaMemcpy(p, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
            W.push_back(p);
        }
    std::vector<__half> hb(3072), hx((size_t)T * 3072);
    fill(hb, 9, 0.1f), fill(hx, 10, 1.0f);
    __half *bias, *X, *Q, *H, *F, *Z;
    SCK(cudaMalloc(&bias, 3072 * 2));
    SCK(cudaMemcpy(bias, hb.data(), 3072 * 2, cudaMemcpyHostToDevice));
    SCK(cudaMalloc(&X, (size_t)T * 768 * 2)); SCK(cudaMalloc(&Q, (size_t)T * 2304 * 2));
    SCK(cudaMalloc(&H, (size_t)T * 3072 * 2)); SCK(cudaMalloc(&F, (size_t)T * 768 * 2));
    SCK(cudaMalloc(&Z, (size_t)T * 768 * 2));
    SCK(cudaMemcpy(X, hx.data(), (size_t)T * 768 * 2, cudaMemcpyHostToDevice));
    cudaStream_t s;
    SCK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraphExec_t ge[2][2];
    for (int ln = 0; ln < 2; ln++)
        for (int smm = 0; smm < 2; smm++) {
            cudaGraph_t g;
            SCK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
            for (int l = 0; l < L; l++) {
                /* qkv: X -> Q; proj: X -> F; [ln: F -> Z]; fc1: Z|X -> H; fc2: H -> F; [ln: F -> X] */
                __half *in[4] = {X, X, ln ? Z : X, H}, *out[4] = {Q, F, H, F};
                for (int j = 0; j < 4; j++) {
                    KcMatmul p;
                    memset(&p, 0, sizeof p);
                    p.m = NK[j][0], p.n = T, p.k = NK[j][1], p.A = W[l * 4 + j], p.B = in[j];
                    p.D = out[j], p.lda = p.m, p.ldb = p.k, p.ldd = p.m, p.batch = 1;
                    p.alpha = 1.0f, p.bias = bias, p.act = ACT[j], p.half = 1;
                    SCK(run_path(d, s, p, smm));
                    if (ln && (j == 1 || j == 3)) {
                        kc_launch_pdl(rows_kernel, dim3(T / 8), dim3(256), s, (const __half *)F,
                                      j == 1 ? Z : X, T, 768);
                        KC_LAUNCHED();
                    }
                }
            }
            SCK(cudaStreamEndCapture(s, &g));
            SCK(cudaGraphInstantiate(&ge[ln][smm], g, 0));
            cudaGraphDestroy(g);
        }
    cudaEvent_t e0, e1;
    SCK(cudaEventCreate(&e0)); SCK(cudaEventCreate(&e1));
    for (int ln = 0; ln < 2; ln++) {
        std::vector<float> med[2];
        for (int round = 0; round < 5; round++)
            for (int smm = 0; smm < 2; smm++) {
                med[smm].push_back(lab_graph_median_ms(ge[ln][smm], s, e0, e1));
            }
        std::vector<float> r;
        for (int i = 0; i < 5; i++) r.push_back(med[1][i] / med[0][i]);
        std::sort(r.begin(), r.end());
        std::sort(med[0].begin(), med[0].end()), std::sort(med[1].begin(), med[1].end());
        printf("48 products%s in one graph: cuBLASLt %.4f ms, kc_smm %.4f ms (medians of 5 rounds "
               "x 200), kc_smm / cuBLASLt %.3f (rounds %.3f-%.3f)\n",
               ln ? " + 24 PDL row kernels" : "", med[0][2], med[1][2], r[2], r[0], r[4]);
    }
    /* per shape: a graph of the 12 layers' products of one shape */
    for (int j = 0; j < 4; j++) {
        float best[2];
        for (int smm = 0; smm < 2; smm++) {
            cudaGraph_t g;
            cudaGraphExec_t e;
            SCK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
            for (int l = 0; l < L; l++) {
                KcMatmul p;
                memset(&p, 0, sizeof p);
                __half *in = j == 3 ? H : X, *out = j == 0 ? Q : j == 2 ? H : F;
                if (j == 2) in = X;
                p.m = NK[j][0], p.n = T, p.k = NK[j][1], p.A = W[l * 4 + j], p.B = in, p.D = out;
                p.lda = p.m, p.ldb = p.k, p.ldd = p.m, p.batch = 1, p.alpha = 1.0f, p.bias = bias;
                p.act = ACT[j], p.half = 1;
                SCK(run_path(d, s, p, smm));
            }
            SCK(cudaStreamEndCapture(s, &g));
            SCK(cudaGraphInstantiate(&e, g, 0));
            best[smm] = lab_graph_median_ms(e, s, e0, e1) / L * 1000.0f;
        }
        int sms = 0;
        SCK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
        int S = kc_smm_split(NK[j][0], NK[j][1], sms);
        printf("  %d x %d -> %d (split %d, %d blocks): cuBLASLt %.2f us, kc_smm %.2f us a product\n",
               T, NK[j][1], NK[j][0], S, NK[j][0] / 64 * S, best[0], best[1]);
    }
    printf(bad ? "FAIL\n" : "all checks passed\n");
    return bad;
}
