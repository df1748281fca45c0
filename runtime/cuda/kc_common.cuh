/* kc_common.cuh: the base of every CUDA bundle (backend/cuda.c): status codes, launch
 * geometry and error checks, the device status flag that kernels raise on bad data, and
 * device versions of the scalar helpers the C eltwise expressions use (float16/bfloat16
 * bits, NaN-propagating max/min), so the same expression text compiles for the GPU.
 * Everything is static or a template: two bundles link into one program. */
#ifndef KILN_KC_COMMON_CUH
#define KILN_KC_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Status codes, equal to the NAME_ERR_* codes of every CUDA bundle's header. */
#define KC_OK 0
#define KC_ERR_NULL 1
#define KC_ERR_INDEX 3
#define KC_ERR_SHAPE 4
#define KC_ERR_VALUE 5
#define KC_ERR_CUDA 10
#define KC_ERR_CUBLAS 11
#define KC_ERR_NOMEM 12
#define KC_ERR_TUNING 13 /* a tuning cache of another cuBLASLt, device or model, or damaged */

#define KC_THREADS 256       /* threads per block of the 1-D kernels */
#define KC_MAX_BLOCKS 65536  /* grid cap; kernels loop (grid stride) over the rest */
#define KC_WARP 32

/* Blocks for n elements, one per thread, capped (grid-stride loops cover the rest). */
static inline unsigned kc_grid(int64_t n) {
    int64_t b = (n + KC_THREADS - 1) / KC_THREADS;
    if (b < 1) b = 1;
    return (unsigned)(b > KC_MAX_BLOCKS ? KC_MAX_BLOCKS : b);
}

/* Enqueued work is checked right after each launch: a bad configuration or a missing
 * kernel image shows up here, inside NAME_cuda_init (the capture), not at run time. */
#define KC_LAUNCHED()                                                                       \
    do {                                                                                    \
        if (cudaGetLastError() != cudaSuccess) return KC_ERR_CUDA;                          \
    } while (0)
#define KC_CUDA(call)                                                                       \
    do {                                                                                    \
        if ((call) != cudaSuccess) return KC_ERR_CUDA;                                      \
    } while (0)

#define KC_FOR(i, n)                                                                        \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);               \
         i += (int64_t)gridDim.x * blockDim.x)

/* Programmatic dependent launch (Hopper): a kernel launched by kc_launch_pdl may start while
 * the kernel before it on the stream drains, so the launch and the block scheduling overlap
 * the previous kernel's tail (BERT-base batch 1: 97 launches of a few microseconds each). Its
 * first statement is kc_pdl_wait(), which returns once the previous grid has finished and its
 * writes are visible (a no-op when the kernel was launched the plain way), so nothing it reads
 * or writes races. */
static __device__ __forceinline__ void kc_pdl_wait(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

/* Lets the kernel launched after this one by kc_launch_pdl start once every block of this
 * grid has passed here (the last wave is on the device), so that its blocks take the
 * multiprocessors this grid's drain frees and run what comes before their kc_pdl_wait there.
 * Called after kc_pdl_wait: a chain overlaps two grids at most. */
static __device__ __forceinline__ void kc_pdl_trigger(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/* What a kernel launched with programmatic dependent launch does before it reads an input or
 * writes anything: wait for the grid before it, then let the next one launch. */
static __device__ __forceinline__ void kc_pdl_sync(void) {
    kc_pdl_wait();
    kc_pdl_trigger();
}

/* Programmatic dependent launch for the float kernels (KC_PDL 1; the int8 ones have KC_QPDL):
 * each runs kc_pdl_enter (kc_pdl_sync) first, and kc_launch launches it with the attribute;
 * KC_PDL 0: plain launches and no instruction in the kernels (an A/B knob). */
#ifndef KC_PDL
#define KC_PDL 0
#endif
static __device__ __forceinline__ void kc_pdl_enter(void) {
#if KC_PDL
    kc_pdl_sync();
#endif
}
/* Launches kernel k on s with smem bytes of dynamic shared memory; where PDL, allowed to
 * overlap the previous kernel if k's code was built for sm_90 or later (PTX version 90: its
 * kc_pdl_wait is the instruction; code built for an older target and compiled from PTX by the
 * driver has none, so it launches the plain way). kc_launch and kc_qlaunch (kc_qconv.cuh) are
 * it under their knobs, kc_launch_pdl with PDL and no dynamic shared memory. */
template <bool PDL, typename... P, typename... A>
static inline void kc_launch_as(void (*k)(P...), dim3 grid, dim3 block, size_t smem,
                                cudaStream_t s, A... args) {
    if (!PDL) {
        k<<<grid, block, smem, s>>>(args...);
        return;
    }
    cudaFuncAttributes fa;
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute at[1];
    memset(&cfg, 0, sizeof cfg);
    memset(at, 0, sizeof at);
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed =
        cudaFuncGetAttributes(&fa, k) == cudaSuccess && fa.ptxVersion >= 90;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    (void)cudaLaunchKernelEx(&cfg, k, args...); /* an error stays for KC_LAUNCHED */
}
template <typename... P, typename... A>
static inline void kc_launch_pdl(void (*k)(P...), dim3 grid, dim3 block, cudaStream_t s,
                                 A... args) {
    kc_launch_as<true>(k, grid, block, 0, s, args...);
}
#define kc_launch kc_launch_as<KC_PDL != 0>

/* Raises a status (the first one wins); read back by NAME_cuda_run. */
static __device__ __forceinline__ void kc_raise(int *status, int code) {
    atomicCAS(status, 0, code);
}

/* A bundle that runs some nodes as the C backend's code on the device (KC_C_RUNTIME, see
 * docs/cuda.md) includes the C runtime files, compiled __host__ __device__: their scalar
 * helpers replace the device versions below, which have the same names and results. */
#ifdef KC_C_RUNTIME
#include "rt_common.h"
#include "rt_eltwise.h"
#else
/* float16 / bfloat16 values are stored as their bits (uint16_t), as in the C bundles. */
static __device__ __forceinline__ float rt_f16_to_f32(uint16_t h) {
    return __half2float(__ushort_as_half(h));
}
static __device__ __forceinline__ uint16_t rt_f32_to_f16(float f) {
    return __half_as_ushort(__float2half_rn(f));
}
static __device__ __forceinline__ float rt_bf16_to_f32(uint16_t h) {
    return __bfloat162float(__ushort_as_bfloat16(h));
}
static __device__ __forceinline__ uint16_t rt_f32_to_bf16(float f) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}
static __device__ __forceinline__ double rt_nan_max(double a, double b) {
    return (a != a || b != b) ? (double)NAN : (a > b ? a : b);
}
static __device__ __forceinline__ double rt_nan_min(double a, double b) {
    return (a != a || b != b) ? (double)NAN : (a < b ? a : b);
}
static __device__ __forceinline__ float rt_nan_maxf(float a, float b) {
    return (a != a || b != b) ? NAN : (a > b ? a : b);
}
static __device__ __forceinline__ float rt_nan_minf(float a, float b) {
    return (a != a || b != b) ? NAN : (a < b ? a : b);
}
static __device__ __forceinline__ int64_t rt_max_i(int64_t a, int64_t b) { return a > b ? a : b; }
static __device__ __forceinline__ int64_t rt_min_i(int64_t a, int64_t b) { return a < b ? a : b; }
static __device__ __forceinline__ uint64_t rt_max_u(uint64_t a, uint64_t b) { return a > b ? a : b; }
static __device__ __forceinline__ uint64_t rt_min_u(uint64_t a, uint64_t b) { return a < b ? a : b; }
#endif

/* The activation epilogues of FusedConv/FusedGemm/FusedMatMul (kinds as RtActKind of
 * runtime/rt_act.h). */
enum {
    KC_ACT_NONE = 0, KC_ACT_RELU, KC_ACT_CLIP, KC_ACT_LEAKY_RELU, KC_ACT_SIGMOID,
    KC_ACT_HARD_SIGMOID, KC_ACT_HARD_SWISH, KC_ACT_SILU, KC_ACT_GELU, KC_ACT_GELU_TANH
};

static __device__ __forceinline__ float kc_act(float v, int kind, float al, float be) {
    switch (kind) {
    case KC_ACT_RELU: return v < 0.0f ? 0.0f : v;
    case KC_ACT_CLIP: v = v < al ? al : v; return v > be ? be : v;
    case KC_ACT_LEAKY_RELU: return v >= 0.0f ? v : al * v;
    case KC_ACT_SIGMOID: return 1.0f / (1.0f + expf(-v));
    case KC_ACT_HARD_SIGMOID: v = al * v + be; return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    case KC_ACT_HARD_SWISH: {
        float h = v / 6.0f + 0.5f;
        return v * (h < 0.0f ? 0.0f : h > 1.0f ? 1.0f : h);
    }
    case KC_ACT_SILU: return v / (1.0f + expf(-v));
    case KC_ACT_GELU: return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    case KC_ACT_GELU_TANH:
        return 0.5f * v * (1.0f + tanhf(0.79788456080286535f * (v + 0.044715f * v * v * v)));
    default: return v;
    }
}

/* Index arithmetic of the hot kernels: I is int32_t when every index of a launch fits
 * (kc_small), else int64_t; 32-bit division costs a fraction of 64-bit on the GPU. */
static inline int kc_small(int64_t n) { return n < INT32_MAX; }

/* y: (outer, C, inner); y = act(y + bias[c] + r), bias and r optional. */
template <typename T, typename I>
__global__ void kc_bias_act_kernel(T *y, const T *bias, const T *r, I C, I inner, I total,
                                   int kind, float al, float be) {
    kc_pdl_enter();
    KC_FOR(i64, total) {
        I i = (I)i64;
        float v = (float)y[i];
        if (bias) v += (float)bias[(i / inner) % C];
        if (r) v += (float)r[i];
        y[i] = (T)kc_act(v, kind, al, be);
    }
}

/* The same on 16-byte vectors (8 float16 or 4 float32 values) where the channels are
 * innermost (inner 1) and everything is aligned to them: one load and store per vector
 * instead of per element. */
template <typename T, typename I>
__global__ void kc_bias_act_vec_kernel(T *y, const T *bias, const T *r, I C, I nvec, int kind,
                                       float al, float be) {
    kc_pdl_enter();
    const int V = 16 / sizeof(T);
    KC_FOR(v64, nvec) {
        I v = (I)v64, c = (v * V) % C;
        uint4 yv = reinterpret_cast<const uint4 *>(y)[v], bv = yv, rv = yv;
        if (bias) bv = *reinterpret_cast<const uint4 *>(bias + c);
        if (r) rv = reinterpret_cast<const uint4 *>(r)[v];
        T *ye = reinterpret_cast<T *>(&yv);
        const T *bb = reinterpret_cast<const T *>(&bv), *rr = reinterpret_cast<const T *>(&rv);
#pragma unroll
        for (int e = 0; e < V; e++) {
            float x = (float)ye[e];
            if (bias) x += (float)bb[e];
            if (r) x += (float)rr[e];
            ye[e] = (T)kc_act(x, kind, al, be);
        }
        reinterpret_cast<uint4 *>(y)[v] = yv;
    }
}

template <typename T>
static inline int kc_bias_act(cudaStream_t s, T *y, const T *bias, const T *r, int64_t C,
                              int64_t inner, int64_t total, int kind, float al, float be) {
    if (total <= 0) return KC_OK;
    const int64_t V = 16 / (int64_t)sizeof(T);
    if (inner == 1 && C % V == 0 && total % V == 0 &&
        (((uintptr_t)y | (uintptr_t)bias | (uintptr_t)r) & 15) == 0) {
        int64_t nvec = total / V;
        if (kc_small(total))
            kc_launch(kc_bias_act_vec_kernel<T, int32_t>, dim3(kc_grid(nvec)), dim3(KC_THREADS), 0,
                      s, y, bias, r, (int32_t)C, (int32_t)nvec, kind, al, be);
        else
            kc_launch(kc_bias_act_vec_kernel<T, int64_t>, dim3(kc_grid(nvec)), dim3(KC_THREADS), 0,
                      s, y, bias, r, C, nvec, kind, al, be);
        KC_LAUNCHED();
        return KC_OK;
    }
    if (kc_small(total))
        kc_launch(kc_bias_act_kernel<T, int32_t>, dim3(kc_grid(total)), dim3(KC_THREADS), 0, s, y,
                  bias, r, (int32_t)C, (int32_t)inner, (int32_t)total, kind, al, be);
    else
        kc_launch(kc_bias_act_kernel<T, int64_t>, dim3(kc_grid(total)), dim3(KC_THREADS), 0, s, y,
                  bias, r, C, inner, total, kind, al, be);
    KC_LAUNCHED();
    return KC_OK;
}

#endif
