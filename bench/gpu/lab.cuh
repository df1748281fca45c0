/* lab.cuh: what the fp16 kernel labs of bench/gpu share (conv_mma_lab.cu, wgconv_lab.cu, and
 * the cluster helpers and graph timing of smm_lab.cu and smm_wg_lab.cu):
 * tests/cuda/gpu_test.h's CK and time_ms (the median of 20 timed calls after 5 untimed
 * ones, CUDA events); lab_dev, a device buffer of n seeded pseudo-random halves in
 * [-scale/2, scale/2]; lab_geom, a square convolution's geometry; lab_maxdiff, the largest |a - b|
 * over two device buffers (NaN counts as 1e30). */
#ifndef KILN_BENCH_GPU_LAB_CUH
#define KILN_BENCH_GPU_LAB_CUH

#include <string.h>

#include <cuda_fp16.h>

#include "../../tests/cuda/gpu_test.h"
#include "kc_nn.cuh"

/* Thread-block clusters (sm_90): this block's rank in its cluster, a barrier of the whole
 * cluster (its shared-memory writes visible to the others after it), and the address of the
 * same shared variable in block `rank` (distributed shared memory). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
static __device__ __forceinline__ unsigned lab_cluster_rank(void) {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
static __device__ __forceinline__ void lab_cluster_sync(void) {
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;\n" ::
                     : "memory");
}
static __device__ __forceinline__ float *lab_cluster_map(float *p, unsigned rank) {
    uint64_t out;
    asm volatile("mapa.u64 %0, %1, %2;\n" : "=l"(out) : "l"(p), "r"(rank));
    return (float *)out;
}
#endif

/* The median of 200 event-timed replays of graph e on s, after 20 untimed ones (ms). */
static float lab_graph_median_ms(cudaGraphExec_t e, cudaStream_t s, cudaEvent_t e0,
                                 cudaEvent_t e1) {
    std::vector<float> t;
    for (int i = 0; i < 20; i++)
        CK(cudaGraphLaunch(e, s));
    for (int i = 0; i < 200; i++) {
        CK(cudaEventRecord(e0, s));
        CK(cudaGraphLaunch(e, s));
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

/* A square convolution's geometry: C channels of H x H, an R x R kernel of stride st, pads
 * R / 2, no dilation. */
static KcConv2d lab_geom(int C, int H, int R, int st) {
    KcConv2d p;
    p.C = C, p.H = p.W = H, p.R = p.S = R, p.sh = p.sw = st;
    p.ph = p.pw = R / 2, p.dh = p.dw = 1;
    p.OH = p.OW = (H + 2 * p.ph - R) / st + 1;
    return p;
}

__global__ void lab_fill(__half *p, size_t n, uint32_t seed, float scale) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t h = (uint32_t)i * 2654435761u ^ seed;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
    p[i] = __float2half((((h & 0xffff) / 65535.0f) - 0.5f) * scale);
}

static __half *lab_dev(size_t n, uint32_t seed, float scale) {
    __half *p;
    CK(cudaMalloc(&p, n * 2));
    lab_fill<<<(unsigned)((n + 255) / 256), 256>>>(p, n, seed, scale);
    CK(cudaGetLastError());
    return p;
}

__global__ void lab_maxdiff_kernel(const __half *a, const __half *b, size_t n, unsigned *out) {
    float m = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float d = fabsf(__half2float(a[i]) - __half2float(b[i]));
        m = d <= m ? m : d == d ? d : 1e30f;
    }
    atomicMax(out, __float_as_uint(m)); /* non-negative floats order as their bits */
}

static double lab_maxdiff(const __half *a, const __half *b, size_t n) {
    unsigned *d, h;
    CK(cudaMalloc(&d, 4));
    CK(cudaMemset(d, 0, 4));
    lab_maxdiff_kernel<<<1024, 256>>>(a, b, n, d);
    CK(cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost));
    cudaFree(d);
    float f;
    memcpy(&f, &h, 4);
    return f;
}

#endif
