/* lab.cuh: what the fp16 kernel labs of bench/gpu share (conv_mma_lab.cu, wgconv_lab.cu):
 * tests/cuda/gpu_test.h's CK and time_ms (the median of 20 timed calls after 5 untimed
 * ones, CUDA events); lab_dev, a device buffer of n seeded pseudo-random halves in
 * [-scale/2, scale/2]; lab_geom, a square convolution's geometry; lab_maxdiff, the largest |a - b| over two device buffers (NaN counts
 * as 1e30). */
#ifndef KILN_BENCH_GPU_LAB_CUH
#define KILN_BENCH_GPU_LAB_CUH

#include <string.h>

#include <cuda_fp16.h>

#include "../../tests/cuda/gpu_test.h"
#include "kc_nn.cuh"

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
