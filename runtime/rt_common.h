/* rt_common.h: shared by every runtime file that ships inside a bundle. Kernels are
 * `static inline` so that two bundles link into one program without clashes and unused
 * kernels cost nothing. No allocation, no printing, no exit: a kernel that meets input
 * data breaking the model's contract returns one of the status codes below (the bundle's
 * header documents them as NAME_ERR_*). C99. */
#ifndef KILN_RT_COMMON_H
#define KILN_RT_COMMON_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Under nvcc (the CUDA backend's generic kernels run the C backend's code on the device)
 * every kernel is also a device function. */
#ifdef __CUDACC__
#define RT_API static inline __host__ __device__
#define restrict __restrict__ /* C99's keyword, a CUDA C++ extension */
#else
#define RT_API static inline
#endif

/* memmove, which has no device version under nvcc: there a byte loop in the safe direction. */
#ifdef __CUDACC__
RT_API void *rt_memmove(void *dst, const void *src, size_t n) {
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    size_t i;
    if (d < s)
        for (i = 0; i < n; i++) d[i] = s[i];
    else
        for (i = n; i > 0; i--) d[i - 1] = s[i - 1];
    return dst;
}
#else
#define rt_memmove memmove
#endif

#define RT_OK 0
#define RT_ERR_INDEX 3 /* an index read from the data is out of range */
#define RT_ERR_SHAPE 4 /* a shape read from the data differs from the compiled one */
#define RT_ERR_VALUE 5 /* other data-dependent contract broken */

#define RT_MAX_RANK 8

/* RT_FOR_EACH(i, n): a kernel's loop over its independent output elements (each iteration
 * writes only its own elements and reads nothing another iteration writes). In C a plain
 * loop; compiled for the GPU a grid-stride loop, so the CUDA backend can launch such a node
 * on as many threads as it has elements (docs/cuda.md, "element-parallel"). Launched on one
 * thread it runs the iterations in order, as in C. i: an int64_t lvalue. */
#ifdef __CUDA_ARCH__
#define RT_ON_DEVICE 1 /* compiled for the GPU: a kernel may pick its per-element form */
#define RT_FOR_EACH(i, n)                                                                     \
    for ((i) = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; (i) < (n);                     \
         (i) += (int64_t)gridDim.x * blockDim.x)
#else
#define RT_ON_DEVICE 0
#define RT_FOR_EACH(i, n) for ((i) = 0; (i) < (n); (i)++)
#endif

/* A double rounded to an integer, without casting a function call's result
 * (-Wbad-function-cast); exact for float and double arguments. round: halves away from 0;
 * rint: halves to even, as nearbyint. */
RT_API int64_t rt_floor_i64(double x) {
    const double f = floor(x);
    return (int64_t)f;
}
RT_API int64_t rt_ceil_i64(double x) {
    const double f = ceil(x);
    return (int64_t)f;
}
RT_API int64_t rt_round_i64(double x) {
    const double f = round(x);
    return (int64_t)f;
}
RT_API int64_t rt_rint_i64(double x) {
    const double f = nearbyint(x);
    return (int64_t)f;
}

/* Element type codes, numbered as ONNX's TensorProto.DataType (the only definition: kernels
 * that move or convert elements of any type take one of these). */
enum {
    RT_DT_F32 = 1, RT_DT_U8 = 2, RT_DT_I8 = 3, RT_DT_U16 = 4, RT_DT_I16 = 5, RT_DT_I32 = 6,
    RT_DT_I64 = 7, RT_DT_BOOL = 9, RT_DT_F16 = 10, RT_DT_F64 = 11, RT_DT_U32 = 12,
    RT_DT_U64 = 13, RT_DT_BF16 = 16, RT_DT_F8E4M3FN = 17, RT_DT_F8E4M3FNUZ = 18,
    RT_DT_F8E5M2 = 19, RT_DT_F8E5M2FNUZ = 20, RT_DT_U4 = 21, RT_DT_I4 = 22,
    RT_DT_F4E2M1 = 23, RT_DT_F8E8M0 = 24, RT_DT_U2 = 25, RT_DT_I2 = 26
};

/* IEEE binary16 <-> binary32, round to nearest even; NaN and infinities kept. */
RT_API float rt_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    uint32_t bits;
    float f;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while ((man & 0x400u) == 0);
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    memcpy(&f, &bits, sizeof f);
    return f;
}

RT_API uint16_t rt_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) /* inf or NaN (keep NaN quiet and non-zero) */
        return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0));
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504 */
    if (absx < 0x38800000u) { /* subnormal or zero in half */
        if (absx < 0x33000000u) return (uint16_t)sign; /* below half of the smallest subnormal */
        uint32_t man = (absx & 0x7fffffu) | 0x800000u;
        int shift = 126 - (int)(absx >> 23); /* 14..24 */
        uint32_t r = man >> (shift - 1 + 1);
        uint32_t rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((absx >> 13) - (112u << 10));
    uint32_t rem = absx & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++;
    return (uint16_t)(sign | r);
}

RT_API float rt_bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

RT_API uint16_t rt_f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(x >> 16);
}

#endif
