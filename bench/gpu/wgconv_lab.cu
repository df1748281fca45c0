/* wgconv_lab.cu: ResNet-50's fp16 3x3 convolutions (batch 256, then 32) on an H200 in one
 * process: the tensor-core implicit GEMM as its launcher picks it (kc_igemm_mma), the
 * mma.sync core, and the wgmma cores -- every thread loading (kc_igemm_wg_kernel, several
 * tiles, both forms of W) and warp-specialized (kc_igemm_ws_kernel: stages, loaders' lag)
 * -- CUDA events, median of 20 after 5 warm-ups; each output against the mma.sync one
 * (max |difference|, both accumulate in float32).
 * usage: nvcc -O3 -arch=sm_90a -I runtime/cuda bench/gpu/wgconv_lab.cu -o wglab && ./wglab
 * figures in docs/cuda.md. */
#include <algorithm>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <vector>

#include "kc_igemm.cuh"
#include "lab.cuh"

/* ---- a warp-specialized form of the wgmma core (sm_90a), measured here and not kept ----
 * The same product with the loads and the multiplies in different warps: warpgroup 0
 * gathers slices (KcWgLoad, 128 threads) into STAGES stages while warpgroups 1 and 2
 * multiply 64 rows each (BM 128). No block-wide barrier in the loop: stage s's "full"
 * mbarrier completes when the 128 loaders have seen their copies of its slice land (each
 * waits for its own cp.async groups LAG slices behind the newest, fences them to the async
 * proxy the tensor cores read through, and arrives), its "empty" one when the 256
 * multiplying threads are done with it (one wgmma group behind: the group of the slice
 * before has completed). The loaders run up to STAGES slices ahead of the multiplies. */
static __device__ __forceinline__ __attribute__((unused)) void kc_mbar_init(uint64_t *b,
                                                                            int count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile(
        "mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"((uint32_t)__cvta_generic_to_shared(b)),
        "r"(count)
        : "memory");
#endif
}
static __device__ __forceinline__ __attribute__((unused)) void kc_mbar_arrive(uint64_t *b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(
                     (uint32_t)__cvta_generic_to_shared(b))
                 : "memory");
#endif
}
/* Waits until the phase of parity `parity` of b has completed. */
static __device__ __forceinline__ __attribute__((unused)) void kc_mbar_wait(uint64_t *b,
                                                                            uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    uint32_t a = (uint32_t)__cvta_generic_to_shared(b), done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(a), "r"(parity)
                     : "memory");
    } while (!done);
#endif
}

template <int BN, int STAGES, int LAG, int ACT>
__global__ void __launch_bounds__(384, BN == 64 ? 2 : 1)
    kc_igemm_ws_kernel(const __half *__restrict__ x, const __half *__restrict__ w,
                       const __half *__restrict__ bias, const __half *__restrict__ r,
                       __half *__restrict__ y, KcGeom<int32_t> p, int32_t P, int32_t K, int act,
                       float al, float be) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    const int BM = 128, BK = KC_WG_BK;
    typedef KcWgSmem<BM, BN, STAGES> Sm;
    __shared__ float sbias[BN];
    __shared__ uint64_t full[STAGES], empty[STAGES];
    if (ACT >= 0) act = ACT;
    extern __shared__ unsigned char kc_wg_raw[];
    __half *sa = kc_wg_smem_base(kc_wg_raw);
    __half *sb = sa + STAGES * Sm::A_ELEMS;
    const int tid = threadIdx.x, wg = tid / 128;
    const int32_t m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int32_t KT = (p.R * p.S * p.C + BK - 1) / BK;
    if (tid == 0)
        for (int s = 0; s < STAGES; s++) kc_mbar_init(&full[s], 128), kc_mbar_init(&empty[s], 256);
    for (int i = tid; i < BN; i += 384)
        sbias[i] = bias && n0 + i < K ? __half2float(bias[n0 + i]) : 0.0f;
    __syncthreads();

    if (wg == 0) { /* the loaders */
        KcWgLoad<BM, BN, 128, 0> ld(p, m0, P, tid);
        for (int32_t kt = 0; kt < KT; kt++) {
            int s = kt % STAGES;
            if (kt >= STAGES) kc_mbar_wait(&empty[s], (kt / STAGES - 1) & 1);
            ld.load(p, x, w, sa + s * Sm::A_ELEMS, sb + s * Sm::B_ELEMS, kt, n0, K);
            kc_ig_commit();
            if (kt >= LAG) {
                kc_ig_wait<LAG>();
                asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
                kc_mbar_arrive(&full[(kt - LAG) % STAGES]);
            }
        }
        kc_ig_wait<0>();
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        for (int32_t kt = KT > LAG ? KT - LAG : 0; kt < KT; kt++)
            kc_mbar_arrive(&full[kt % STAGES]);
        return;
    }
    const int c = wg - 1, lane = tid % KC_WARP, wq = (tid % 128) / KC_WARP;
    float acc[BN / 2]; /* written first by the first slice's wgmma (scale-d 0) */
    for (int32_t kt = 0; kt < KT; kt++) {
        int s = kt % STAGES;
        kc_mbar_wait(&full[s], (kt / STAGES) & 1);
        kc_wg_slice<BN, 0>(acc, sa + s * Sm::A_ELEMS + c * 64 * BK, sb + s * Sm::B_ELEMS,
                           kt > 0);
        kc_wg_wait<1, BN / 2>(acc);
        if (kt > 0) kc_mbar_arrive(&empty[(kt - 1) % STAGES]);
    }
    kc_wg_wait<0, BN / 2>(acc);
    asm volatile("bar.sync 1, 256;\n" ::: "memory"); /* both multiplied: stages are free */
    __half *out = sa;
    kc_wg_tile_out<BN, Sm::OUT_LD>(out, acc, sbias, c * 64 + wq * 16, lane);
    asm volatile("bar.sync 1, 256;\n" ::: "memory");
    kc_mma_store_tile<BM, BN, 256, Sm::OUT_LD>(out, r, y, KcRowsFrom{m0, P}, n0, K, act, al, be,
                                               tid - 128);
#else
    (void)x, (void)w, (void)bias, (void)r, (void)y, (void)p, (void)P, (void)K, (void)act;
    (void)al, (void)be;
#endif
}

template <int BN, int STAGES, int LAG, int ACT>
static inline int kc_igemm_ws_run(cudaStream_t s, const __half *x, const __half *w,
                                  const __half *bias, const __half *r, __half *y,
                                  const KcConv2d *p, int64_t P, int64_t K, int act, float al,
                                  float be) {
    typedef KcWgSmem<128, BN, STAGES> Sm;
    KC_CUDA(cudaFuncSetAttribute(kc_igemm_ws_kernel<BN, STAGES, LAG, ACT>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, Sm::BYTES));
    dim3 grid((unsigned)((K + BN - 1) / BN), (unsigned)((P + 127) / 128));
    kc_igemm_ws_kernel<BN, STAGES, LAG, ACT><<<grid, 384, Sm::BYTES, s>>>(
        x, w, bias, r, y, kc_geom<int32_t>(p), (int32_t)P, (int32_t)K, act, al, be);
    KC_LAUNCHED();
    return KC_OK;
}

template <int BN, int STAGES, int LAG>
static inline int kc_igemm_ws_launch(cudaStream_t s, const __half *x, const __half *w,
                                     const __half *bias, const __half *r, __half *y,
                                     const KcConv2d *p, int64_t P, int64_t K, int act,
                                     float al, float be) {
    if (act == KC_ACT_RELU)
        return kc_igemm_ws_run<BN, STAGES, LAG, KC_ACT_RELU>(s, x, w, bias, r, y, p, P, K, act,
                                                            al, be);
    return kc_igemm_ws_run<BN, STAGES, LAG, -1>(s, x, w, bias, r, y, p, P, K, act, al, be);
}

/* wt (K, RSC) = w (RSC, K) transposed */
__global__ void transpose(const __half *w, __half *wt, int rsc, int k) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= (size_t)rsc * k) return;
    int a = (int)(i / k), b = (int)(i % k);
    wt[(size_t)b * rsc + a] = w[i];
}


struct Shape {
    const char *name;
    int C, K, H, R, st, count;
};

typedef int (*Launch)(const __half *, const __half *, const __half *, const __half *, __half *,
                      const KcConv2d *, int64_t, int64_t);
struct Cfg {
    const char *name;
    int bmaj;
    Launch f;
};

#define WG(BM, BN, ST, MAJ)                                                                  \
    {"wg " #BM "x" #BN " s" #ST " W" #MAJ, MAJ,                                                    \
     [](const __half *x, const __half *w, const __half *b, const __half *r, __half *y,        \
        const KcConv2d *p, int64_t P, int64_t K) {                                            \
         return kc_igemm_wg_launch<BM, BN, ST, MAJ>(0, x, w, b, r, y, p, P, K, KC_ACT_RELU,   \
                                                    0.0f, 0.0f);                              \
     }}

#define WS(BN, ST, LAG)                                                                      \
    {"ws 128x" #BN " s" #ST " lag" #LAG, 0,                                                  \
     [](const __half *x, const __half *w, const __half *b, const __half *r, __half *y,        \
        const KcConv2d *p, int64_t P, int64_t K) {                                            \
         return kc_igemm_ws_launch<BN, ST, LAG>(0, x, w, b, r, y, p, P, K, KC_ACT_RELU, 0.0f,  \
                                                0.0f);                                        \
     }}

int main(int argc, char **argv) {
    Shape shapes[] = {
        {"l1 3x3 64", 64, 64, 56, 3, 1, 3},    {"l2 3x3 128 s2", 128, 128, 56, 3, 2, 1},
        {"l2 3x3 128", 128, 128, 28, 3, 1, 3}, {"l3 3x3 256 s2", 256, 256, 28, 3, 2, 1},
        {"l3 3x3 256", 256, 256, 14, 3, 1, 5}, {"l4 3x3 512 s2", 512, 512, 14, 3, 2, 1},
        {"l4 3x3 512", 512, 512, 7, 3, 1, 2},
    };
    Cfg cfgs[] = {
        WG(128, 64, 4, 0), WG(128, 64, 3, 0), WG(128, 64, 4, 2), WG(128, 128, 3, 0),
        WG(128, 128, 3, 2), WG(256, 128, 3, 0), WS(64, 4, 2), WS(128, 4, 2), WS(128, 6, 3),
        {"halo (3x3, C 64, K <= 64)", 0,
         [](const __half *x, const __half *w, const __half *b, const __half *r, __half *y,
            const KcConv2d *p, int64_t P, int64_t K) {
             return kc_conv_halo_ok(p, K) ? kc_conv_halo(0, x, w, b, r, y, p, P / (p->OH * p->OW),
                                                         K, KC_ACT_RELU, 0.0f, 0.0f)
                                          : KC_ERR_SHAPE;
         }},
    };
    const int ncfg = sizeof cfgs / sizeof cfgs[0];
    printf("wgmma code built: %d\n", (int)kc_igemm_wg_built());
    int batches[] = {256, 32};
    for (int N : batches) {
        if (argc > 1 && atoi(argv[1]) != N) continue;
        printf("batch %d; ms per layer (median of 20); TFLOP/s; diff = max |wg - mma|\n", N);
        double tot_mma = 0, tot_best = 0, tot_auto = 0;
        std::vector<double> tot_cfg(ncfg, 0.0);
        for (const Shape &sh : shapes) {
            KcConv2d p = lab_geom(sh.C, sh.H, sh.R, sh.st);
            int64_t P = (int64_t)N * p.OH * p.OW, K = sh.K, RSC = sh.R * sh.R * sh.C;
            double flop = 2.0 * P * K * RSC;
            __half *x = lab_dev((size_t)N * sh.H * sh.H * sh.C, 1, 2.0f);
            __half *w = lab_dev((size_t)RSC * K, 2, 2.0f / sqrtf((float)RSC)), *wt;
            CK(cudaMalloc(&wt, RSC * K * 2));
            transpose<<<(unsigned)((RSC * K + 255) / 256), 256>>>(w, wt, (int)RSC, (int)K);
            __half *b = lab_dev(K, 3, 0.5f), *r = lab_dev(P * K, 4, 1.0f);
            __half *y0, *y1;
            CK(cudaMalloc(&y0, P * K * 2));
            CK(cudaMalloc(&y1, P * K * 2));
            printf("%-16s P %7lld K %4lld RSC %5lld x%d  %.1f GFLOP\n", sh.name, (long long)P,
                   (long long)K, (long long)RSC, sh.count, flop / 1e9);
            auto mma = [&](__half *y) { /* the mma.sync core's tiles, as before wgmma */
                return K <= 64 ? kc_igemm_mma_launch<128, 64, 32, 64, 32, 4>(
                                     0, x, w, b, r, y, &p, P, K, KC_ACT_RELU, 0.0f, 0.0f)
                               : kc_igemm_mma_launch<128, 128, 64, 64, 32, 3>(
                                     0, x, w, b, r, y, &p, P, K, KC_ACT_RELU, 0.0f, 0.0f);
            };
            CK(mma(y0) == KC_OK ? cudaSuccess : cudaErrorUnknown);
            CK(cudaDeviceSynchronize());
            float t_mma = time_ms([&] { mma(y0); });
            printf("  %-22s %8.4f ms %6.1f TF/s\n", "mma.sync", t_mma, flop / t_mma / 1e9);
            CK(kc_igemm_mma(0, x, w, b, r, y1, &p, N, K, KC_ACT_RELU, 0.0f, 0.0f) == KC_OK
                   ? cudaSuccess
                   : cudaErrorUnknown);
            CK(cudaDeviceSynchronize());
            double d_auto = lab_maxdiff(y0, y1, P * K);
            float t_auto = time_ms([&] {
                kc_igemm_mma(0, x, w, b, r, y1, &p, N, K, KC_ACT_RELU, 0.0f, 0.0f);
            });
            tot_auto += sh.count * t_auto;
            printf("  %-22s %8.4f ms %6.1f TF/s diff %.3g%s\n", "kc_igemm_mma (launcher)", t_auto,
                   flop / t_auto / 1e9, d_auto, d_auto > 0.05 ? "  MISMATCH" : "");
            float best = t_mma;
            for (int c = 0; c < ncfg; c++) {
                const __half *wc = cfgs[c].bmaj == 2 ? wt : w;
                CK(cudaMemset(y1, 0xff, P * K * 2));
                if (cfgs[c].f(x, wc, b, r, y1, &p, P, K) == KC_ERR_SHAPE) continue;
                cudaError_t e = cudaDeviceSynchronize();
                if (e != cudaSuccess) {
                    printf("  %-22s error %s\n", cfgs[c].name, cudaGetErrorString(e));
                    return 3;
                }
                double d = lab_maxdiff(y0, y1, P * K);
                float t = time_ms([&] { cfgs[c].f(x, wc, b, r, y1, &p, P, K); });
                if (d <= 0.05) best = std::min(best, t);
                tot_cfg[c] += sh.count * t;
                printf("  %-22s %8.4f ms %6.1f TF/s diff %.3g%s\n", cfgs[c].name, t,
                       flop / t / 1e9, d, d > 0.05 ? "  MISMATCH" : "");
            }
            tot_mma += sh.count * t_mma;
            tot_best += sh.count * best;
            cudaFree(x), cudaFree(w), cudaFree(wt), cudaFree(b), cudaFree(r), cudaFree(y0);
            cudaFree(y1);
        }
        printf("sum over ResNet-50's 16 layers at batch %d: mma.sync %.3f ms, launcher %.3f, "
               "best per layer %.3f\n", N, tot_mma, tot_auto, tot_best);
        for (int c = 0; c < ncfg; c++)
            printf("  all layers on %-22s %.3f ms\n", cfgs[c].name, tot_cfg[c]);
    }
    return 0;
}
