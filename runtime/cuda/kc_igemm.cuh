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

/* ---- the mma.sync core: C a multiple of 8, at most 32 taps (a 3x3 convolution, stride 1
 * or 2) ----
 * The same product, but the warps multiply with mma.sync m16n8k16 on fragments that
 * ldmatrix reads from shared memory, which is laid out without padding: each row's 16-byte
 * chunks are XOR-permuted by the row (KcMmaSwz), so the 8 rows one ldmatrix phase reads
 * land on 8 distinct bank groups. The gather's address math is hoisted out of the K loop:
 * each thread keeps, per A row it loads, the image offset of the row's first tap and a bit
 * mask of the taps inside the image; walking the reduction it only advances one (tap,
 * channel) cursor -- the thread's 16-byte column is fixed -- and adds the tap's offset
 * (one multiply-add per slice, no division). The epilogue adds the bias in registers,
 * rounds to float16 into shared memory, and stores Y in 16-byte rows (residual and
 * activation applied there, on 8 channels at a time). */

/* Physical 16-byte chunk of logical chunk ch in row r of a shared tile with CH chunks per
 * row (CH 4: 64-byte rows, two to a 128-byte bank line; CH >= 8: one or more lines). */
template <int CH>
static __device__ __forceinline__ int kc_mma_swz(int r, int ch) {
    return CH >= 8 ? ch ^ (r & 7) : ch ^ ((r >> 1) & 3);
}

static __device__ __forceinline__ void kc_ldsm_x4(unsigned *d, const __half *p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(a));
#endif
}

static __device__ __forceinline__ void kc_ldsm_x4_t(unsigned *d, const __half *p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(a));
#endif
}

/* d += a (16x16, row) * b (16x8, col), float16 in, float32 accumulation */
static __device__ __forceinline__ void kc_mma16816(float *d, const unsigned *a,
                                                   const unsigned *b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

#define KC_MMA_MAX_TAPS 32 /* R*S: one bit of a row's tap mask each */

template <int BM, int BN, int BK, int STAGES>
struct KcMmaSmem {
    static const int A_ELEMS = BM * BK, B_ELEMS = BK * BN;
    static const int PIPE = STAGES * (A_ELEMS + B_ELEMS) * (int)sizeof(__half);
    static const int OUT_LD = BN + 8; /* halves: the epilogue tile's rows, 16 bytes apart */
    static const int OUT = BM * OUT_LD * (int)sizeof(__half);
    static const int BYTES = PIPE > OUT ? PIPE : OUT;
};

/* x (N,H,W,C), w (R,S,C,K), bias (K) or NULL, r like y or NULL, y (N,OH,OW,K); P = N*OH*OW.
 * Grid (ceil(K/BN), ceil(P/BM)); (BM/WM)*(BN/WN) warps. Requires C % 8 == 0, K % 8 == 0,
 * R*S <= KC_MMA_MAX_TAPS, 16-byte aligned pointers, sm_80+ (kc_igemm_mma checks). */
template <int BM, int BN, int BK, int WM, int WN, int STAGES, int ACT>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * KC_WARP)
kc_igemm_mma_kernel(const __half *__restrict__ x, const __half *__restrict__ w,
                    const __half *__restrict__ bias, const __half *__restrict__ r,
                    __half *__restrict__ y, KcGeom<int32_t> p, int32_t P, int32_t K, int act,
                    float al, float be) {
    typedef KcMmaSmem<BM, BN, BK, STAGES> Sm;
    if (ACT >= 0) act = ACT;
    const int THREADS = (BM / WM) * (BN / WN) * KC_WARP;
    const int ACH = BK / 8, BCH = BN / 8;          /* 16-byte chunks per row of A, of W */
    const int A_PER = BM * ACH / THREADS, B_PER = BK * BCH / THREADS;
    const int A_STEP = THREADS / ACH;              /* rows between a thread's A rows */
    const int FM = WM / 16, FN = WN / 8;           /* m16 and n8 tiles per warp */
    extern __shared__ __align__(128) unsigned char kc_mma_raw[];
    __half *sa = (__half *)kc_mma_raw, *sb = sa + STAGES * Sm::A_ELEMS;

    const int tid = threadIdx.x, warp = tid / KC_WARP, lane = tid % KC_WARP;
    const int wm = warp / (BN / WN), wn = warp % (BN / WN);
    const int32_t m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int32_t taps = p.R * p.S, KT = (taps * p.C + BK - 1) / BK;

    /* A rows: offset of tap (0,0)'s channel 0 in x (possibly outside the image: only read where the
     * mask says the tap is inside), mask of the taps inside */
    const int a_ch = tid % ACH, a_row = tid / ACH;
    int32_t a_off[A_PER];
    uint32_t a_mask[A_PER];
#pragma unroll
    for (int i = 0; i < A_PER; i++) {
        int32_t pix = m0 + a_row + i * A_STEP;
        int32_t ow = pix % p.OW, oh = (pix / p.OW) % p.OH, n = pix / (p.OW * p.OH);
        int32_t ih = oh * p.sh - p.ph, iw = ow * p.sw - p.pw;
        uint32_t m = 0;
        for (int32_t t = 0, rr = 0, ss = 0; t < taps; t++) {
            int32_t h = ih + rr * p.dh, v = iw + ss * p.dw;
            if (h >= 0 && h < p.H && v >= 0 && v < p.W) m |= 1u << t;
            if (++ss == p.S) ss = 0, rr++;
        }
        a_mask[i] = pix < P ? m : 0;
        a_off[i] = pix < P ? ((n * p.H + ih) * p.W + iw) * p.C : 0;
    }
    /* the cursor of the next slice this thread loads: tap, its (rr, ss), channel c */
    int32_t cur_t = 0, cur_r = 0, cur_s = 0, cur_c = a_ch * 8;
    while (cur_c >= p.C) { /* C < BK: the thread's column starts in a later tap */
        cur_c -= p.C, cur_t++;
        if (++cur_s == p.S) cur_s = 0, cur_r++;
    }
    const int32_t tap_dh = p.dh * p.W * p.C, tap_dw = p.dw * p.C;

    auto load = [&](int stage) { /* the slice at the cursor, then advance it */
        __half *as = sa + stage * Sm::A_ELEMS;
        int32_t koff = cur_r * tap_dh + cur_s * tap_dw + cur_c;
        bool kin = cur_t < taps;
#pragma unroll
        for (int i = 0; i < A_PER; i++) {
            int row = a_row + i * A_STEP;
            bool ok = kin && (a_mask[i] >> cur_t & 1u);
            kc_ig_copy16(as + row * BK + kc_mma_swz<ACH>(row, a_ch) * 8,
                         ok ? x + (a_off[i] + koff) : x, ok);
        }
        cur_c += BK;
        while (cur_c >= p.C) {
            cur_c -= p.C, cur_t++;
            if (++cur_s == p.S) cur_s = 0, cur_r++;
        }
    };
    auto load_b = [&](int stage, int32_t kt) {
        __half *bs = sb + stage * Sm::B_ELEMS;
#pragma unroll
        for (int i = 0; i < B_PER; i++) {
            int q = tid + i * THREADS, kr = q / BCH, nc = q % BCH;
            int32_t gk = kt * BK + kr, gn = n0 + nc * 8;
            bool ok = gk < taps * p.C && gn < K;
            kc_ig_copy16(bs + kr * BN + kc_mma_swz<BCH>(kr, nc) * 8,
                         ok ? w + ((int64_t)gk * K + gn) : w, ok);
        }
    };

    float acc[FM][FN][4];
#pragma unroll
    for (int i = 0; i < FM; i++)
#pragma unroll
        for (int j = 0; j < FN; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;

#pragma unroll
    for (int st = 0; st < STAGES - 1; st++) {
        if (st < KT) load(st), load_b(st, st);
        kc_ig_commit();
    }
    for (int32_t kt = 0; kt < KT; kt++) {
        kc_ig_wait<STAGES - 2>();
        __syncthreads(); /* slice kt landed; slice kt-1's stage is free */
        int32_t next = kt + STAGES - 1;
        if (next < KT) load(next % STAGES), load_b(next % STAGES, next);
        kc_ig_commit();
        const __half *as = sa + (kt % STAGES) * Sm::A_ELEMS;
        const __half *bs = sb + (kt % STAGES) * Sm::B_ELEMS;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned fa[FM][4], fb[FN][2];
#pragma unroll
            for (int i = 0; i < FM; i++) { /* rows lane%16, chunk kk/8 + lane/16 */
                int row = wm * WM + i * 16 + (lane & 15), ch = kk / 8 + (lane >> 4);
                kc_ldsm_x4(fa[i], as + row * BK + kc_mma_swz<ACH>(row, ch) * 8);
            }
#pragma unroll
            for (int j = 0; j < FN; j += 2) { /* k rows lane%16, the n8 pair's chunk lane/16 */
                int kr = kk + (lane & 15), ch = (wn * WN + j * 8) / 8 + (lane >> 4);
                unsigned t[4];
                kc_ldsm_x4_t(t, bs + kr * BN + kc_mma_swz<BCH>(kr, ch) * 8);
                fb[j][0] = t[0], fb[j][1] = t[1], fb[j + 1][0] = t[2], fb[j + 1][1] = t[3];
            }
#pragma unroll
            for (int i = 0; i < FM; i++)
#pragma unroll
                for (int j = 0; j < FN; j++) kc_mma16816(acc[i][j], fa[i], fb[j]);
        }
    }
    kc_ig_wait<0>();
    __syncthreads(); /* the stages become the block's float16 tile of Y */

    __half *out = (__half *)kc_mma_raw;
    const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
    for (int j = 0; j < FN; j++) {
        int col = wn * WN + j * 8 + t4 * 2;
        float b0 = 0.0f, b1 = 0.0f;
        if (bias && n0 + col < K) /* K even: col + 1 is in too */
            b0 = __half2float(bias[n0 + col]), b1 = __half2float(bias[n0 + col + 1]);
#pragma unroll
        for (int i = 0; i < FM; i++) {
            int row = wm * WM + i * 16 + g;
            *(__half2 *)(out + row * Sm::OUT_LD + col) =
                __floats2half2_rn(acc[i][j][0] + b0, acc[i][j][1] + b1);
            *(__half2 *)(out + (row + 8) * Sm::OUT_LD + col) =
                __floats2half2_rn(acc[i][j][2] + b0, acc[i][j][3] + b1);
        }
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < BM * BCH / THREADS; i++) {
        int q = tid + i * THREADS, row = q / BCH, ch = q % BCH;
        int32_t gm = m0 + row, gn = n0 + ch * 8;
        if (gm >= P || gn >= K) continue;
        uint4 v = *(const uint4 *)(out + row * Sm::OUT_LD + ch * 8);
        const __half *vh = (const __half *)&v;
        float f[8];
#pragma unroll
        for (int e = 0; e < 8; e++) f[e] = __half2float(vh[e]);
        if (r) {
            uint4 rv = *(const uint4 *)(r + ((int64_t)gm * K + gn));
            const __half *rh = (const __half *)&rv;
#pragma unroll
            for (int e = 0; e < 8; e++) f[e] += __half2float(rh[e]);
        }
        uint4 o;
        __half *oh = (__half *)&o;
#pragma unroll
        for (int e = 0; e < 8; e++) oh[e] = __float2half_rn(kc_act(f[e], act, al, be));
        *(uint4 *)(y + ((int64_t)gm * K + gn)) = o;
    }
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int ACT>
static inline int kc_igemm_mma_run(cudaStream_t s, const __half *x, const __half *w,
                                   const __half *bias, const __half *r, __half *y,
                                   const KcConv2d *p, int64_t P, int64_t K, int act, float al,
                                   float be) {
    typedef KcMmaSmem<BM, BN, BK, STAGES> Sm;
    const int threads = (BM / WM) * (BN / WN) * KC_WARP;
    KC_CUDA(cudaFuncSetAttribute(kc_igemm_mma_kernel<BM, BN, BK, WM, WN, STAGES, ACT>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, Sm::BYTES));
    dim3 grid((unsigned)((K + BN - 1) / BN), (unsigned)((P + BM - 1) / BM));
    kc_igemm_mma_kernel<BM, BN, BK, WM, WN, STAGES, ACT><<<grid, threads, Sm::BYTES, s>>>(
        x, w, bias, r, y, kc_geom<int32_t>(p), (int32_t)P, (int32_t)K, act, al, be);
    KC_LAUNCHED();
    return KC_OK;
}

/* ReLU, the activation of nearly every convolution this kernel runs, compiled into the
 * epilogue (kc_act's switch asked per element costs about half of kc_stem_tc's
 * instructions, whose reduction is as short); any other activation read at run time. */
template <int BM, int BN, int BK, int WM, int WN, int STAGES>
static inline int kc_igemm_mma_launch(cudaStream_t s, const __half *x, const __half *w,
                                      const __half *bias, const __half *r, __half *y,
                                      const KcConv2d *p, int64_t P, int64_t K, int act,
                                      float al, float be) {
    if (act == KC_ACT_RELU)
        return kc_igemm_mma_run<BM, BN, BK, WM, WN, STAGES, KC_ACT_RELU>(s, x, w, bias, r, y, p,
                                                                         P, K, act, al, be);
    return kc_igemm_mma_run<BM, BN, BK, WM, WN, STAGES, -1>(s, x, w, bias, r, y, p, P, K, act,
                                                            al, be);
}

/* Whether kc_igemm_mma suits the convolution (besides kc_igemm_check's pointers/sizes). */
static inline int kc_igemm_mma_ok(const KcConv2d *p) {
    return p->C % 8 == 0 && p->R * p->S <= KC_MMA_MAX_TAPS;
}

/* The convolution on the mma.sync core; KC_ERR_SHAPE where it does not suit (the emitter
 * checks at compile time); before sm_80 the WMMA kernel (kc_igemm_nhwc's). Tiles as
 * measured on ResNet-50's 3x3 layers (H200, bench/gpu/conv_mma_lab.cu, batch 256 / 32): at
 * most 64 output channels 128 rows x 64 columns, 4 warps of 64x32, 32-wide slices in 4
 * stages (64 channels 0.291 / 0.047 ms; 8 warps 0.304-0.311; 6 stages 0.333); more
 * channels 128x128, 8 warps of 64x32, 64-wide slices in 3 stages (96 KB; 128 channels
 * 0.219 / 0.043 ms, 256 0.198 / 0.043: 4 warps of 64x64 0.236 / 0.045 and 0.200 / 0.047;
 * 4 stages, 128x256 and 256x128 tiles slower). Double-buffering the fragments across
 * k-steps (the next step's ldmatrix before this step's mma, the barrier moved before a
 * slice's last step) was slower on every shape (0.291 -> 0.397 ms at 64 channels, 0.201 ->
 * 0.224 at 256: more registers, fewer blocks a multiprocessor) and is not kept. */
static inline int kc_igemm_mma(cudaStream_t s, const __half *x, const __half *w,
                               const __half *bias, const __half *r, __half *y,
                               const KcConv2d *p, int64_t N, int64_t K, int act, float al,
                               float be) {
    int64_t P = N * p->OH * p->OW;
    if (P <= 0 || K <= 0) return KC_OK;
    if (!kc_igemm_mma_ok(p) || kc_igemm_check(x, w, bias, r, y, p, N, K, 16))
        return KC_ERR_SHAPE;
    int dev = 0, major = 0; /* ldmatrix, mma.sync m16n8k16 and cp.async need sm_80 */
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        major < 8)
        return kc_igemm_tile<true>(s, x, w, bias, r, y, p, P, K, act, al, be); /* WMMA */
    if (K <= 64)
        return kc_igemm_mma_launch<128, 64, 32, 64, 32, 4>(s, x, w, bias, r, y, p, P, K, act,
                                                            al, be);
    return kc_igemm_mma_launch<128, 128, 64, 64, 32, 3>(s, x, w, bias, r, y, p, P, K, act, al,
                                                         be);
}

#endif
