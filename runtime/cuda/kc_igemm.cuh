/* kc_igemm.cuh: channels-last convolution as an implicit GEMM on float16 tensor cores
 * (float32 accumulation): Y (pixels, K) = A (pixels, R*S*C) @ W (R*S*C, K), where A is
 * never stored -- each block gathers its tile of A from X (zero outside the image) into
 * shared memory, so the im2col buffer and its pass over memory disappear. Bias, residual
 * and activation are applied to the accumulators before the one store of Y.
 *
 * One block computes a BM x BN tile of Y over BK-wide slices of the reduction, STAGES
 * slices in flight (cp.async on sm_80+, plain loads below); warps hold WM x WN sub-tiles as
 * 16x16x16 WMMA fragments. Two gathers of A: with C a multiple of 8 each 16-byte cp.async
 * is 8 channels of one tap (VEC); with any other C (an RGB stem: 3 channels) each thread
 * owns one column of the slice -- one (tap, channel), divided out once per slice -- and
 * loads its rows' elements one by one into registers before the slice in shared memory is
 * multiplied, storing them after it (the next stage is then already free). Requires:
 * float16 storage, one group, K a multiple of 8 (16-byte stores of Y), 16-byte aligned
 * pointers (x: 2-byte when C % 8); the emitter uses it only then (docs/cuda.md). */
#ifndef KILN_KC_IGEMM_CUH
#define KILN_KC_IGEMM_CUH

#include <mma.h>

#include "kc_nn.cuh"

#define KC_IG_BK 32     /* reduction slice per stage */
#define KC_IG_STAGES 3  /* slices in flight */
#define KC_IG_PAD 8     /* halves of padding per shared row (bank spread, 16-byte rows) */
#define KC_IG_WAVE 128  /* blocks that about fill an H100/H200 (132 multiprocessors) once */

/* A 16-byte copy global -> shared, zero-filled when !ok (gmem is then not read). */
static __device__ __forceinline__ void kc_ig_copy16(void *smem, const void *gmem, bool ok) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    int n = ok ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(n));
#else
    *(uint4 *)smem = ok ? *(const uint4 *)gmem : make_uint4(0, 0, 0, 0);
#endif
}

static __device__ __forceinline__ void kc_ig_commit(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

template <int N>
static __device__ __forceinline__ void kc_ig_wait(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

/* Shared memory of one block: STAGES slices of A (BM x BK) and W (BK x BN). */
template <int BM, int BN>
struct KcIgSmem {
    static const int A_LD = KC_IG_BK + KC_IG_PAD, B_LD = BN + KC_IG_PAD;
    static const int A_ELEMS = BM * A_LD, B_ELEMS = KC_IG_BK * B_LD;
    static const size_t BYTES = (size_t)KC_IG_STAGES * (A_ELEMS + B_ELEMS) * sizeof(__half);
};

/* x (N,H,W,C), w (R,S,C,K), bias (K) or NULL, r like y or NULL, y (N,OH,OW,K) =
 * act(conv + bias + r); P = N*OH*OW output pixels. Grid: (ceil(K/BN), ceil(P/BM)).
 * VEC: C % 8 == 0 (16-byte gathers); else element gathers. */
template <int BM, int BN, int WM, int WN, bool VEC>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * KC_WARP)
kc_igemm_nhwc_kernel(const __half *__restrict__ x, const __half *__restrict__ w,
                     const __half *__restrict__ bias, const __half *__restrict__ r,
                     __half *__restrict__ y, KcGeom<int32_t> p, int32_t P, int32_t K,
                     int act, float al, float be) {
    using namespace nvcuda;
    typedef KcIgSmem<BM, BN> Sm;
    const int THREADS = (BM / WM) * (BN / WN) * KC_WARP;
    const int A_PER = VEC ? BM * (KC_IG_BK / 8) / THREADS /* 16-byte loads per thread, A */
                          : BM * KC_IG_BK / THREADS;      /* or elements */
    const int A_TPR = VEC ? KC_IG_BK / 8 : KC_IG_BK;      /* threads per row of a slice */
    const int B_PER = KC_IG_BK * (BN / 8) / THREADS; /* and W */
    const int FM = WM / 16, FN = WN / 16;
    extern __shared__ __align__(16) unsigned char kc_ig_raw[];
    __half *sa = (__half *)kc_ig_raw, *sb = sa + KC_IG_STAGES * Sm::A_ELEMS;

    const int tid = threadIdx.x, warp = tid / KC_WARP, lane = tid % KC_WARP;
    const int wm = warp / (BN / WN), wn = warp % (BN / WN);
    const int32_t m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int32_t RSC = p.R * p.S * p.C, KT = (RSC + KC_IG_BK - 1) / KC_IG_BK;

    /* This thread's A rows (output pixels): image offset, first input row/column; its
     * column of each slice, a_kc (VEC: the first of 8). */
    const int a_kc = VEC ? (tid % A_TPR) * 8 : tid % A_TPR;
    int32_t a_img[A_PER], a_ih[A_PER], a_iw[A_PER];
#pragma unroll
    for (int i = 0; i < A_PER; i++) {
        int32_t pix = m0 + tid / A_TPR + i * (THREADS / A_TPR);
        int32_t ow = pix % p.OW, oh = (pix / p.OW) % p.OH, n = pix / (p.OW * p.OH);
        bool ok = pix < P;
        a_img[i] = ok ? n * p.H * p.W * p.C : 0; /* < 2^31: kc_igemm_nhwc checks */
        a_ih[i] = ok ? oh * p.sh - p.ph : INT32_MIN / 2; /* a row past P reads nothing */
        a_iw[i] = ow * p.sw - p.pw;
    }
    __half a_reg[VEC ? 1 : A_PER]; /* element gathers: the next slice's column, in flight */

    /* Slice kt of A: VEC, cp.async into its stage; else into a_reg (then store_a). */
    auto load_a = [&](int stage, int32_t kt) {
        __half *as = sa + stage * Sm::A_ELEMS;
        int32_t k = kt * KC_IG_BK + a_kc; /* VEC: 8 channels of one tap (C % 8 == 0) */
        int32_t tap = k / p.C, c = k - tap * p.C, rr = tap / p.S, ss = tap - rr * p.S;
        bool kin = k < RSC;
#pragma unroll
        for (int i = 0; i < A_PER; i++) {
            int32_t ih = a_ih[i] + rr * p.dh, iw = a_iw[i] + ss * p.dw;
            bool ok = kin && ih >= 0 && ih < p.H && iw >= 0 && iw < p.W;
            int32_t at = ok ? a_img[i] + (ih * p.W + iw) * p.C + c : 0;
            if (VEC) {
                int row = tid / A_TPR + i * (THREADS / A_TPR);
                kc_ig_copy16(as + row * Sm::A_LD + a_kc, x + at, ok);
            } else {
                a_reg[VEC ? 0 : i] = ok ? x[at] : __float2half_rn(0.0f);
            }
        }
    };
    auto store_a = [&](int stage) {
        __half *as = sa + stage * Sm::A_ELEMS;
#pragma unroll
        for (int i = 0; i < A_PER && !VEC; i++)
            as[(tid / A_TPR + i * (THREADS / A_TPR)) * Sm::A_LD + a_kc] = a_reg[VEC ? 0 : i];
    };
    auto load_b = [&](int stage, int32_t kt) {
        __half *bs = sb + stage * Sm::B_ELEMS;
#pragma unroll
        for (int i = 0; i < B_PER; i++) {
            int q = tid + i * THREADS, kr = q / (BN / 8), nc = (q % (BN / 8)) * 8;
            int32_t gk = kt * KC_IG_BK + kr, gn = n0 + nc;
            bool ok = gk < RSC && gn < K;
            kc_ig_copy16(bs + kr * Sm::B_LD + nc, ok ? w + (int64_t)gk * K + gn : w, ok);
        }
    };

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; i++)
#pragma unroll
        for (int j = 0; j < FN; j++) wmma::fill_fragment(acc[i][j], 0.0f);

#pragma unroll
    for (int st = 0; st < KC_IG_STAGES - 1; st++) {
        if (st < KT) {
            load_a(st, st);
            store_a(st);
            load_b(st, st);
        }
        kc_ig_commit();
    }
    for (int32_t kt = 0; kt < KT; kt++) {
        kc_ig_wait<KC_IG_STAGES - 2>();
        __syncthreads(); /* slice kt landed; slice kt-1's stage is free */
        int32_t next = kt + KC_IG_STAGES - 1;
        if (next < KT) {
            load_a(next % KC_IG_STAGES, next);
            load_b(next % KC_IG_STAGES, next);
        }
        kc_ig_commit();
        const __half *as = sa + (kt % KC_IG_STAGES) * Sm::A_ELEMS;
        const __half *bs = sb + (kt % KC_IG_STAGES) * Sm::B_ELEMS;
#pragma unroll
        for (int kk = 0; kk < KC_IG_BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[FM];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb[FN];
#pragma unroll
            for (int i = 0; i < FM; i++)
                wmma::load_matrix_sync(fa[i], as + (wm * WM + i * 16) * Sm::A_LD + kk, Sm::A_LD);
#pragma unroll
            for (int j = 0; j < FN; j++)
                wmma::load_matrix_sync(fb[j], bs + kk * Sm::B_LD + wn * WN + j * 16, Sm::B_LD);
#pragma unroll
            for (int i = 0; i < FM; i++)
#pragma unroll
                for (int j = 0; j < FN; j++) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
        if (!VEC && next < KT) store_a(next % KC_IG_STAGES); /* read after the next sync */
    }
    kc_ig_wait<0>();
    __syncthreads(); /* the stages become each warp's 16x16 float scratch */

    float *scratch = (float *)kc_ig_raw + warp * 256;
    const int er = lane / 2, ec = (lane % 2) * 8; /* this lane's row and 8 columns */
#pragma unroll
    for (int i = 0; i < FM; i++)
#pragma unroll
        for (int j = 0; j < FN; j++) {
            wmma::store_matrix_sync(scratch, acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            int32_t gm = m0 + wm * WM + i * 16 + er, gn = n0 + wn * WN + j * 16 + ec;
            if (gm < P && gn < K) {
                float v[8];
#pragma unroll
                for (int e = 0; e < 8; e++) v[e] = scratch[er * 16 + ec + e];
                if (bias) {
                    uint4 bv = *(const uint4 *)(bias + gn);
                    const __half *bh = (const __half *)&bv;
#pragma unroll
                    for (int e = 0; e < 8; e++) v[e] += __half2float(bh[e]);
                }
                if (r) {
                    uint4 rv = *(const uint4 *)(r + (int64_t)gm * K + gn);
                    const __half *rh = (const __half *)&rv;
#pragma unroll
                    for (int e = 0; e < 8; e++) v[e] += __half2float(rh[e]);
                }
                uint4 out;
                __half *oh = (__half *)&out;
#pragma unroll
                for (int e = 0; e < 8; e++) oh[e] = __float2half_rn(kc_act(v[e], act, al, be));
                *(uint4 *)(y + (int64_t)gm * K + gn) = out;
            }
            __syncwarp();
        }
}

template <int BM, int BN, int WM, int WN, bool VEC>
static inline int kc_igemm_launch(cudaStream_t s, const __half *x, const __half *w,
                                  const __half *bias, const __half *r, __half *y,
                                  const KcConv2d *p, int64_t P, int64_t K, int act, float al,
                                  float be) {
    typedef KcIgSmem<BM, BN> Sm;
    const int threads = (BM / WM) * (BN / WN) * KC_WARP;
    /* shared memory past 48 KB is opt-in; set per launch (cheap, allowed inside a capture,
     * and right for whichever device is current) */
    KC_CUDA(cudaFuncSetAttribute(kc_igemm_nhwc_kernel<BM, BN, WM, WN, VEC>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, (int)Sm::BYTES));
    dim3 grid((unsigned)((K + BN - 1) / BN), (unsigned)((P + BM - 1) / BM));
    kc_igemm_nhwc_kernel<BM, BN, WM, WN, VEC><<<grid, threads, Sm::BYTES, s>>>(
        x, w, bias, r, y, kc_geom<int32_t>(p), (int32_t)P, (int32_t)K, act, al, be);
    KC_LAUNCHED();
    return KC_OK;
}

template <bool VEC>
static inline int kc_igemm_tile(cudaStream_t s, const __half *x, const __half *w,
                                const __half *bias, const __half *r, __half *y,
                                const KcConv2d *p, int64_t P, int64_t K, int act, float al,
                                float be) {
    if (K <= 64)
        return kc_igemm_launch<128, 64, 32, 32, VEC>(s, x, w, bias, r, y, p, P, K, act, al, be);
    if (((P + 127) / 128) * ((K + 127) / 128) >= KC_IG_WAVE)
        return kc_igemm_launch<128, 128, 32, 64, VEC>(s, x, w, bias, r, y, p, P, K, act, al, be);
    return kc_igemm_launch<64, 64, 32, 32, VEC>(s, x, w, bias, r, y, p, P, K, act, al, be);
}

/* Whether x, w, bias, r, y and the sizes suit the kernel (x aligned to xalign bytes). */
static inline int kc_igemm_check(const __half *x, const __half *w, const __half *bias,
                                 const __half *r, __half *y, const KcConv2d *p, int64_t N,
                                 int64_t K, int xalign) {
    int64_t P = N * p->OH * p->OW;
    if (K % 8 || !kc_small(N * p->H * p->W * p->C) || !kc_small(P * K) ||
        ((uintptr_t)w | (uintptr_t)bias | (uintptr_t)r | (uintptr_t)y) % 16 ||
        (uintptr_t)x % xalign)
        return KC_ERR_SHAPE;
    return KC_OK;
}

/* The convolution of N images (p: one group, C channels in eights); KC_ERR_SHAPE when the
 * requirements above do not hold (the emitter checks them at compile time, so this is a
 * guard). Tile: 128x64 for at most 64 output channels (a wider one would multiply zeros);
 * else 128x128 when that makes at least KC_IG_WAVE blocks, else 64x64. */
static inline int kc_igemm_nhwc(cudaStream_t s, const __half *x, const __half *w,
                                const __half *bias, const __half *r, __half *y,
                                const KcConv2d *p, int64_t N, int64_t K, int act, float al,
                                float be) {
    int64_t P = N * p->OH * p->OW;
    if (P <= 0 || K <= 0) return KC_OK;
    if (p->C % 8 || kc_igemm_check(x, w, bias, r, y, p, N, K, 16)) return KC_ERR_SHAPE;
    return kc_igemm_tile<true>(s, x, w, bias, r, y, p, P, K, act, al, be);
}

/* The same for any C (an RGB stem's 3 channels): the element gathers; fewer than 8
 * channels into 32 or 64 (ResNet-50's 7x7x3 stem) as kc_conv_small_tc (kc_nn.cuh), which
 * gathers each pixel's reduction once into its A fragments instead of a tile of C padded
 * to 8 through shared memory. */
static inline int kc_igemm_nhwc_any(cudaStream_t s, const __half *x, const __half *w,
                                    const __half *bias, const __half *r, __half *y,
                                    const KcConv2d *p, int64_t N, int64_t K, int act,
                                    float al, float be) {
    int64_t P = N * p->OH * p->OW;
    if (P <= 0 || K <= 0) return KC_OK;
    if (kc_igemm_check(x, w, bias, r, y, p, N, K, 2)) return KC_ERR_SHAPE;
    if (p->C < 8 && kc_conv_small_tc_ok(x, w, bias, r, y, p, N, K))
        return kc_conv_small_tc(s, x, w, bias, r, y, p, N, K, act, al, be);
    return kc_igemm_tile<false>(s, x, w, bias, r, y, p, P, K, act, al, be);
}

#endif
