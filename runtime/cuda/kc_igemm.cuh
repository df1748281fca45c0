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
    kc_pdl_enter();
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
    kc_launch(kc_igemm_nhwc_kernel<BM, BN, WM, WN, VEC>, grid, dim3(threads), Sm::BYTES, s, x, w,
              bias, r, y, kc_geom<int32_t>(p), (int32_t)P, (int32_t)K, act, al, be);
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

/* Rows of a block's tile -> rows of Y: m0 + row, those below P (else -1). */
struct KcRowsFrom {
    int32_t m0, P;
    __device__ __forceinline__ int32_t operator()(int row) const {
        return m0 + row < P ? m0 + row : -1;
    }
};

/* The block's BM x BN tile of Y, float16 in shared memory (rows LD halves apart, bias
 * added), stored at rows rows(row) (-1: none) and columns n0.. of y (. x K) in 16-byte rows
 * by THREADS threads (this one tid of them), residual r (like y, or NULL) added and the
 * activation applied on the way, 8 channels at a time. */
template <int BM, int BN, int THREADS, int LD, typename Rows>
static __device__ __forceinline__ void kc_mma_store_tile(const __half *out, const __half *r,
                                                         __half *y, Rows rows, int32_t n0,
                                                         int32_t K, int act, float al,
                                                         float be, int tid) {
    const int BCH = BN / 8;
#pragma unroll
    for (int i = 0; i < BM * BCH / THREADS; i++) {
        int q = tid + i * THREADS, row = q / BCH, ch = q % BCH;
        int32_t gm = rows(row), gn = n0 + ch * 8;
        if (gm < 0 || gn >= K) continue;
        uint4 v = *(const uint4 *)(out + row * LD + ch * 8);
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

/* The A rows a thread gathers in the tap-walking implicit GEMMs (the mma.sync and wgmma
 * cores): rows a_row + i * STEP of the tile at m0, for each the offset in x of its first
 * tap's channel 0 (possibly outside the image: read only where the mask says the tap is
 * inside) and the mask of its taps inside (none past P). */
template <int PER, int STEP>
static __device__ __forceinline__ void kc_ig_rows(const KcGeom<int32_t> &p, int32_t m0,
                                                  int32_t P, int a_row, int32_t *a_off,
                                                  uint32_t *a_mask) {
    const int32_t taps = p.R * p.S;
#pragma unroll
    for (int i = 0; i < PER; i++) {
        int32_t pix = m0 + a_row + i * STEP;
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
}

/* A thread's place in the reduction: tap t at (r, s) of the kernel, channel c. */
struct KcIgCursor {
    int32_t t, r, s, c;
    /* channel c0 of tap 0 (c0 >= C when C < the slice: then in a later tap) */
    __device__ __forceinline__ void start(const KcGeom<int32_t> &p, int32_t c0) {
        t = 0, r = 0, s = 0, c = 0;
        step(p, c0);
    }
    __device__ __forceinline__ void step(const KcGeom<int32_t> &p, int32_t by) {
        c += by;
        while (c >= p.C) {
            c -= p.C, t++;
            if (++s == p.S) s = 0, r++;
        }
    }
};

/* A thread's part of the gather of an implicit GEMM's A tile: its PER rows, STEP apart from
 * row a_row of the tile at m0, each the image offset of its first tap and a mask of the taps
 * inside (kc_ig_rows), and the cursor of the next slice it loads, its column c0 fixed. Slice
 * by slice, row i's chunk is x + off[i] + koff() where in(i), else padding (a kernel tap's
 * where kin(), past the reduction else); then step the cursor. */
template <int PER, int STEP>
struct KcIgGather {
    int32_t off[PER];
    uint32_t mask[PER];
    KcIgCursor cur;
    int32_t tap_dh, tap_dw, taps;
    __device__ __forceinline__ KcIgGather(const KcGeom<int32_t> &p, int32_t m0, int32_t P, int a_row,
                                          int32_t c0) {
        taps = p.R * p.S;
        kc_ig_rows<PER, STEP>(p, m0, P, a_row, off, mask);
        cur.start(p, c0);
        tap_dh = p.dh * p.W * p.C, tap_dw = p.dw * p.C;
    }
    __device__ __forceinline__ int32_t koff() const { return cur.r * tap_dh + cur.s * tap_dw + cur.c; }
    __device__ __forceinline__ bool kin() const { return cur.t < taps; }
    __device__ __forceinline__ bool in(int i) const { return kin() && (mask[i] >> cur.t & 1u); }
};

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
    kc_pdl_enter();
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

    const int a_ch = tid % ACH, a_row = tid / ACH;
    KcIgGather<A_PER, A_STEP> ga(p, m0, P, a_row, a_ch * 8);

    auto load = [&](int stage) { /* the slice at the cursor, then advance it */
        __half *as = sa + stage * Sm::A_ELEMS;
        int32_t koff = ga.koff();
#pragma unroll
        for (int i = 0; i < A_PER; i++) {
            int row = a_row + i * A_STEP;
            bool ok = ga.in(i);
            kc_ig_copy16(as + row * BK + kc_mma_swz<ACH>(row, a_ch) * 8,
                         ok ? x + (ga.off[i] + koff) : x, ok);
        }
        ga.cur.step(p, BK);
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
    kc_mma_store_tile<BM, BN, THREADS, Sm::OUT_LD>(out, r, y, KcRowsFrom{m0, P}, n0, K, act, al, be,
                                                  tid);
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
    kc_launch(kc_igemm_mma_kernel<BM, BN, BK, WM, WN, STAGES, ACT>, grid, dim3(threads), Sm::BYTES,
              s, x, w, bias, r, y, kc_geom<int32_t>(p), (int32_t)P, (int32_t)K, act, al, be);
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

/* ---- the wgmma core (sm_90a): the same convolutions as the mma.sync core ----
 * A warpgroup (4 warps) multiplies a 64-row slab of the block's A tile by the whole B tile
 * with wgmma, both read by the tensor cores straight from shared memory through matrix
 * descriptors, so no ldmatrix and no fragments in registers: the 64-channel slices are
 * stored in the 128-byte swizzle the descriptors name (16-byte chunk c of row r at
 * c ^ (r % 8), rows of 128 bytes, 8-row atoms of 1024 bytes aligned to 1024). A: K-major
 * (a row's 64 reduction elements), gathered as by the mma.sync core (the same cursor and
 * tap masks). W: as stored, (R*S*C, K), N-major: each 64-column half of the tile is an
 * atom column (BK rows of 128 bytes), the second half 8 KB after the first. Every thread
 * loads (cp.async); slices land STAGES - 2 ahead, and one wgmma group stays in flight while
 * the next slice's loads are issued. Needs code built for sm_90a (the wgmma instructions):
 * kc_igemm_wg_built says whether the bundle has it, else the mma.sync core runs. */
#define KC_WG_BK 64 /* reduction slice: one 128-byte swizzle row of float16 */

template <int BM, int BN, int STAGES>
struct KcWgSmem {
    static const int A_ELEMS = BM * KC_WG_BK, B_ELEMS = KC_WG_BK * BN;
    static const int PIPE = STAGES * (A_ELEMS + B_ELEMS) * (int)sizeof(__half);
    static const int OUT_LD = BN + 8; /* halves: the epilogue tile's rows, 16 bytes apart */
    static const int OUT = BM * OUT_LD * (int)sizeof(__half);
    static const int BYTES = (PIPE > OUT ? PIPE : OUT) + 1024; /* + the base aligned up */
};

/* The first 1024-byte boundary of dynamic shared memory at raw (the 128-byte swizzle's
 * atoms must sit on one; the kernels ask 1024 bytes more than they use). */
static __device__ __forceinline__ __half *kc_wg_smem_base(unsigned char *raw) {
    uint32_t base = (uint32_t)__cvta_generic_to_shared(raw);
    return (__half *)(raw + ((1024u - (base & 1023u)) & 1023u));
}

/* Shared-memory matrix descriptor of a 128-byte-swizzled operand at p: leading and stride
 * byte offsets lbo, sbo. */
static __device__ __forceinline__ uint64_t kc_wg_desc(const __half *p, uint32_t lbo,
                                                      uint32_t sbo) {
    uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    return (uint64_t)((a & 0x3FFFF) >> 4) | (uint64_t)((lbo >> 4) & 0x3FFF) << 16 |
           (uint64_t)((sbo >> 4) & 0x3FFF) << 32 | 1ull << 62;
}

/* d (64 x 64 a warpgroup, float32) = A (64 x 16, descriptor da) * B (16 x 64,
 * db) + (acc ? d : 0); TB: B is N-major (1) or K-major (0). */
template <int TB>
static __device__ __forceinline__ void kc_wgmma_n64(float *d, uint64_t da, uint64_t db,
                                                   int acc) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
                 "%32, %33, p, 1, 1, 0, %35;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                   "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31])
                 : "l"(da), "l"(db), "r"(acc), "n"(TB));
#endif
}

/* d (64 x 128 a warpgroup, float32) = A (64 x 16, descriptor da) * B (16 x 128,
 * db) + (acc ? d : 0); TB: B is N-major (1) or K-major (0). */
template <int TB>
static __device__ __forceinline__ void kc_wgmma_n128(float *d, uint64_t da, uint64_t db,
                                                    int acc) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
                 "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
                 "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "
                 "%64, %65, p, 1, 1, 0, %67;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                   "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
                   "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
                   "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
                   "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
                   "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(da), "l"(db), "r"(acc), "n"(TB));
#endif
}

static __device__ __forceinline__ void kc_wg_fence(void) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
static __device__ __forceinline__ void kc_wg_commit(void) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
/* Pins the R accumulators d at this point of the program (the compiler may not move their
 * reads or writes across it: wgmma writes them asynchronously). */
template <int R>
static __device__ __forceinline__ void kc_wg_pin(float *d) {
#pragma unroll
    for (int i = 0; i < R; i++) asm volatile("" : "+f"(d[i])::"memory");
}
template <int R> /* the same for int32 accumulators */
static __device__ __forceinline__ void kc_wg_pin(int32_t *d) {
#pragma unroll
    for (int i = 0; i < R; i++) asm volatile("" : "+r"(d[i])::"memory");
}
/* Waits until at most N wgmma groups are pending, then pins the R accumulators d. */
template <int N, int R>
static __device__ __forceinline__ void kc_wg_wait(float *d) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
    kc_wg_pin<R>(d);
}

/* One 64-wide slice on the tensor cores: acc (a warpgroup's 64 x BN, float32) += the
 * warpgroup's 64 rows of A at as (K-major) times W at bs (BMAJ as KcWgLoad's), four k16
 * steps in one wgmma group, committed; acc is overwritten where !accumulate. */
template <int BN, int BMAJ>
static __device__ __forceinline__ void kc_wg_slice(float *acc, const __half *as,
                                                   const __half *bs, bool accumulate) {
    const int BK = KC_WG_BK;
    kc_wg_pin<BN / 2>(acc);
    kc_wg_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++) {
        uint64_t da = kc_wg_desc(as + kk * 16, 16, 1024);
        /* W N-major: 64-column atoms BK * 128 bytes apart (leading), 8-row groups 1024
         * (stride); K-major: as A */
        uint64_t db = BMAJ == 0 ? kc_wg_desc(bs + kk * 16 * 64, BK * 128, 1024)
                                : kc_wg_desc(bs + kk * 16, 16, 1024);
        if (BN == 64)
            kc_wgmma_n64<BMAJ == 2 ? 0 : 1>(acc, da, db, accumulate || kk > 0);
        else
            kc_wgmma_n128<BMAJ == 2 ? 0 : 1>(acc, da, db, accumulate || kk > 0);
    }
    kc_wg_commit();
}

/* A warp's 16 rows of its warpgroup's accumulators (first row row0 of the block's tile),
 * plus the bias, rounded to float16 into the tile out (rows LD halves apart). */
template <int BN, int LD>
static __device__ __forceinline__ void kc_wg_tile_out(__half *out, const float *acc,
                                                      const float *sbias, int row0, int lane) {
    const int g = lane >> 2, t4 = lane & 3, row = row0 + g;
#pragma unroll
    for (int j = 0; j < BN / 8; j++) {
        int col = j * 8 + t4 * 2;
        float b0 = sbias[col], b1 = sbias[col + 1];
        *(__half2 *)(out + row * LD + col) =
            __floats2half2_rn(acc[j * 4] + b0, acc[j * 4 + 1] + b1);
        *(__half2 *)(out + (row + 8) * LD + col) =
            __floats2half2_rn(acc[j * 4 + 2] + b0, acc[j * 4 + 3] + b1);
    }
}

/* A block's loads of one 64-wide slice for the wgmma cores, by THREADS threads: A's BM
 * rows gathered from x as the mma.sync core does (per row the image offset of its first
 * tap and a mask of the taps inside; one (tap, channel) cursor walks the reduction, each
 * thread's 16-byte column fixed), W's BK x BN tile (BMAJ 0: w (R*S*C, K), 64-column atoms
 * 8 KB apart; 2: w (K, R*S*C), rows of BK), both in the 128-byte swizzle. */
template <int BM, int BN, int THREADS, int BMAJ>
struct KcWgLoad {
    static const int BK = KC_WG_BK, ACH = BK / 8, BCH = BN / 8;
    static const int A_PER = BM * ACH / THREADS, A_STEP = THREADS / ACH;
    static const int B_PER = BK * BCH / THREADS;
    int tid, a_ch, a_row;
    KcIgGather<A_PER, A_STEP> ga;

    __device__ __forceinline__ KcWgLoad(const KcGeom<int32_t> &p, int32_t m0, int32_t P,
                                        int t)
        : tid(t), a_ch(t % ACH), a_row(t / ACH), ga(p, m0, P, t / ACH, t % ACH * 8) {}

    /* slice kt (the cursor's: slices load in order) into as, bs */
    __device__ __forceinline__ void load(const KcGeom<int32_t> &p, const __half *x,
                                         const __half *w, __half *as, __half *bs, int32_t kt,
                                         int32_t n0, int32_t K) {
        int32_t koff = ga.koff(), RSC = ga.taps * p.C;
#pragma unroll
        for (int i = 0; i < A_PER; i++) {
            int row = a_row + i * A_STEP;
            bool ok = ga.in(i);
            kc_ig_copy16(as + row * BK + (a_ch ^ (row & 7)) * 8, ok ? x + (ga.off[i] + koff) : x,
                         ok);
        }
        ga.cur.step(p, BK);
#pragma unroll
        for (int i = 0; i < B_PER; i++) {
            int q = tid + i * THREADS;
            if (BMAJ != 2) {
                int kr = q / BCH, nc = q % BCH;
                int32_t gk = kt * BK + kr, gn = n0 + nc * 8;
                bool ok = gk < RSC && gn < K;
                kc_ig_copy16(bs + (nc / 8) * (BK * 64) + kr * 64 + ((nc & 7) ^ (kr & 7)) * 8,
                             ok ? w + ((int64_t)gk * K + gn) : w, ok);
            } else {
                int nr = q / 8, kc = q % 8;
                int32_t gk = kt * BK + kc * 8, gn = n0 + nr;
                bool ok = gk < RSC && gn < K;
                kc_ig_copy16(bs + nr * 64 + (kc ^ (nr & 7)) * 8,
                             ok ? w + ((int64_t)gn * RSC + gk) : w, ok);
            }
        }
    }
};

/* x (N,H,W,C), w (R,S,C,K) (BMAJ 0: as stored; 2: (K, R*S*C), the lab's K-major form),
 * bias (K) or NULL, r like y or NULL, y (N,OH,OW,K); P = N*OH*OW. Grid (ceil(K/BN),
 * ceil(P/BM)), BM/64 warpgroups. Requires what kc_igemm_mma does, and sm_90a code. */
template <int BM, int BN, int STAGES, int BMAJ, int ACT>
__global__ void __launch_bounds__(BM / 64 * 128)
kc_igemm_wg_kernel(const __half *__restrict__ x, const __half *__restrict__ w,
                   const __half *__restrict__ bias, const __half *__restrict__ r,
                   __half *__restrict__ y, KcGeom<int32_t> p, int32_t P, int32_t K, int act,
                   float al, float be) {
    kc_pdl_enter();
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    typedef KcWgSmem<BM, BN, STAGES> Sm;
    __shared__ float sbias[BN]; /* also the mark kc_igemm_wg_built looks for */
    if (ACT >= 0) act = ACT;
    const int THREADS = BM / 64 * 128, BK = KC_WG_BK;
    extern __shared__ unsigned char kc_wg_raw[];
    __half *sa = kc_wg_smem_base(kc_wg_raw);
    __half *sb = sa + STAGES * Sm::A_ELEMS;

    const int tid = threadIdx.x, wg = tid / 128, wq = (tid % 128) / KC_WARP;
    const int lane = tid % KC_WARP;
    const int32_t m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int32_t KT = (p.R * p.S * p.C + BK - 1) / BK;
    for (int i = tid; i < BN; i += THREADS)
        sbias[i] = bias && n0 + i < K ? __half2float(bias[n0 + i]) : 0.0f;

    KcWgLoad<BM, BN, THREADS, BMAJ> ld(p, m0, P, tid);

    float acc[BN / 2]; /* written first by the first slice's wgmma (scale-d 0) */

#pragma unroll
    for (int st = 0; st < STAGES - 2; st++) {
        if (st < KT) ld.load(p, x, w, sa + st * Sm::A_ELEMS, sb + st * Sm::B_ELEMS, st, n0, K);
        kc_ig_commit();
    }
    for (int32_t kt = 0; kt < KT; kt++) {
        kc_ig_wait<STAGES - 3>();
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads(); /* slice kt landed; every warpgroup is done with slice kt - 2 */
        int32_t next = kt + STAGES - 2;
        if (next < KT)
            ld.load(p, x, w, sa + next % STAGES * Sm::A_ELEMS, sb + next % STAGES * Sm::B_ELEMS,
                    next, n0, K);
        kc_ig_commit();
        kc_wg_slice<BN, BMAJ>(acc, sa + (kt % STAGES) * Sm::A_ELEMS + wg * 64 * BK,
                              sb + (kt % STAGES) * Sm::B_ELEMS, kt > 0);
        kc_wg_wait<1, BN / 2>(acc);
    }
    kc_wg_wait<0, BN / 2>(acc);
    kc_ig_wait<0>();
    __syncthreads(); /* the stages become the block's float16 tile of Y */

    __half *out = sa;
    kc_wg_tile_out<BN, Sm::OUT_LD>(out, acc, sbias, wg * 64 + wq * 16, lane);
    __syncthreads();
    kc_mma_store_tile<BM, BN, THREADS, Sm::OUT_LD>(out, r, y, KcRowsFrom{m0, P}, n0, K, act, al, be,
                                                  tid);
#else
    (void)x, (void)w, (void)bias, (void)r, (void)y, (void)p, (void)P, (void)K, (void)act;
    (void)al, (void)be;
#endif
}

template <int BM, int BN, int STAGES, int BMAJ, int ACT>
static inline int kc_igemm_wg_run(cudaStream_t s, const __half *x, const __half *w,
                                  const __half *bias, const __half *r, __half *y,
                                  const KcConv2d *p, int64_t P, int64_t K, int act, float al,
                                  float be) {
    typedef KcWgSmem<BM, BN, STAGES> Sm;
    KC_CUDA(cudaFuncSetAttribute(kc_igemm_wg_kernel<BM, BN, STAGES, BMAJ, ACT>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, Sm::BYTES));
    dim3 grid((unsigned)((K + BN - 1) / BN), (unsigned)((P + BM - 1) / BM));
    kc_launch(kc_igemm_wg_kernel<BM, BN, STAGES, BMAJ, ACT>, grid, dim3(BM / 64 * 128), Sm::BYTES,
              s, x, w, bias, r, y, kc_geom<int32_t>(p), (int32_t)P, (int32_t)K, act, al, be);
    KC_LAUNCHED();
    return KC_OK;
}

template <int BM, int BN, int STAGES, int BMAJ>
static inline int kc_igemm_wg_launch(cudaStream_t s, const __half *x, const __half *w,
                                     const __half *bias, const __half *r, __half *y,
                                     const KcConv2d *p, int64_t P, int64_t K, int act,
                                     float al, float be) {
    if (act == KC_ACT_RELU)
        return kc_igemm_wg_run<BM, BN, STAGES, BMAJ, KC_ACT_RELU>(s, x, w, bias, r, y, p, P, K,
                                                                 act, al, be);
    return kc_igemm_wg_run<BM, BN, STAGES, BMAJ, -1>(s, x, w, bias, r, y, p, P, K, act, al,
                                                     be);
}

/* ---- the halo core (sm_90a): 3x3 stride-1 convolutions of 64 channels into at most 64 ----
 * The implicit GEMMs above gather A once per tap, so each input pixel crosses from L2 into
 * shared memory R*S times, and each block loads all of W again: on ResNet-50's layer-1 3x3
 * (64 -> 64 at 56x56) that is what bounds them (~1.4 GB through L2 at batch 256 for 59
 * GFLOP). Here a persistent block keeps the whole of W in shared memory (9 taps of 64 x 64,
 * 8 KB each, loaded once) and, for each tile of 128 output positions, loads the input rows
 * the tile's windows cover once: positions run over the padded grid of one image (q = oh *
 * Wp + ow, Wp = W + 2 pw; the columns ow >= OW are computed and not stored), so tap (r, s)'s
 * A is the halo tile itself from row r * Wp + s on -- a descriptor offset, no copy (the
 * 128-byte swizzle follows the address, so a start at any 128-byte row reads the rows from
 * there on). Two blocks a multiprocessor take turns at loading and multiplying. */
struct KcRowsHalo { /* tile row -> output pixel of image n (padded-grid positions q0..) */
    int32_t q0, base, Wp, OW, OH;
    __device__ __forceinline__ int32_t operator()(int row) const {
        int32_t q = q0 + row, oh = q / Wp, ow = q % Wp;
        return oh < OH && ow < OW ? base + oh * OW + ow : -1;
    }
};

/* Input rows of one halo tile: the 128 positions and their 3x3 windows' reach, 2 Wp + 2. */
static __host__ __device__ __forceinline__ int64_t kc_halo_rows(int64_t Wp) {
    return 128 + 2 * Wp + 2;
}

/* Bytes of the halo core's shared memory: W's 9 taps, then the halo tile (also the
 * epilogue's 128 x 72 tile), and the base aligned up to 1024. */
static inline int kc_halo_smem(const KcConv2d *p) {
    int64_t rows = kc_halo_rows(p->W + 2 * p->pw);
    int64_t tile = rows * 128 > 128 * 72 * 2 ? rows * 128 : 128 * 72 * 2;
    int64_t b = 9 * 8192 + tile + 1024;
    return b > INT32_MAX ? INT32_MAX : (int)b;
}

/* x (N,H,W,64), w (3,3,64,K), K <= 64; grid-stride over N * ceil(OH * Wp / 128) tiles;
 * 256 threads (two warpgroups of 64 positions x 64 channels). */
template <int ACT>
__global__ void __launch_bounds__(256, 2)
kc_conv_halo_kernel(const __half *__restrict__ x, const __half *__restrict__ w,
                    const __half *__restrict__ bias, const __half *__restrict__ r,
                    __half *__restrict__ y, KcGeom<int32_t> p, int32_t N, int32_t K, int act,
                    float al, float be) {
    kc_pdl_enter();
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    const int BM = 128, BN = 64, LD = BN + 8;
    __shared__ float sbias[BN];
    if (ACT >= 0) act = ACT;
    extern __shared__ unsigned char kc_wg_raw[];
    __half *sb = kc_wg_smem_base(kc_wg_raw);
    const int taps = 9, tid = threadIdx.x, wg = tid / 128;
    const int wq = (tid % 128) / KC_WARP, lane = tid % KC_WARP;
    const int32_t Wp = p.W + 2 * p.pw, rows = (int32_t)kc_halo_rows(Wp);
    __half *sh = sb + taps * 64 * 64;
    for (int q = tid; q < taps * 64 * 8; q += 256) { /* W: tap rows of 64 channels */
        int wr = q / 8, nc = q % 8;
        bool ok = nc * 8 < K;
        kc_ig_copy16(sb + wr * 64 + (nc ^ (wr & 7)) * 8, ok ? w + ((int64_t)wr * K + nc * 8) : w,
                     ok);
    }
    kc_ig_commit();
    for (int i = tid; i < BN; i += 256) sbias[i] = bias && i < K ? __half2float(bias[i]) : 0.0f;
    const int32_t T = (p.OH * Wp + BM - 1) / BM, ntiles = N * T;
    for (int32_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
        int32_t n = tile / T, q0 = tile % T * BM;
        for (int q = tid; q < rows * 8; q += 256) { /* the halo: padded positions q0.. */
            int i = q / 8, ch = q % 8;
            int32_t pi = q0 + i, ih = pi / Wp - p.ph, iw = pi % Wp - p.pw;
            bool ok = ih >= 0 && ih < p.H && iw >= 0 && iw < p.W;
            kc_ig_copy16(sh + i * 64 + (ch ^ (i & 7)) * 8,
                         ok ? x + (((int64_t)n * p.H + ih) * p.W + iw) * 64 + ch * 8 : x, ok);
        }
        kc_ig_commit();
        kc_ig_wait<0>();
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        float acc[BN / 2];
        kc_wg_pin<BN / 2>(acc);
        kc_wg_fence();
#pragma unroll
        for (int t = 0; t < taps; t++) {
            const __half *as = sh + (wg * 64 + t / 3 * Wp + t % 3) * 64;
            const __half *bs = sb + t * 64 * 64;
#pragma unroll
            for (int kk = 0; kk < 4; kk++)
                kc_wgmma_n64<1>(acc, kc_wg_desc(as + kk * 16, 16, 1024),
                                kc_wg_desc(bs + kk * 16 * 64, 64 * 128, 1024), t > 0 || kk > 0);
        }
        kc_wg_commit();
        kc_wg_wait<0, BN / 2>(acc);
        __syncthreads(); /* both warpgroups done with the halo: it becomes Y's tile */
        kc_wg_tile_out<BN, LD>(sh, acc, sbias, wg * 64 + wq * 16, lane);
        __syncthreads();
        KcRowsHalo rows = {q0, n * p.OH * p.OW, Wp, p.OW, p.OH};
        kc_mma_store_tile<BM, BN, 256, LD>(sh, r, y, rows, 0, K, act, al, be, tid);
        __syncthreads(); /* the tile is stored: the next halo may land */
    }
#else
    (void)x, (void)w, (void)bias, (void)r, (void)y, (void)p, (void)N, (void)K, (void)act;
    (void)al, (void)be;
#endif
}

/* Whether the halo core suits p into K channels (3x3, stride and dilation 1, C 64,
 * K <= 64, two blocks' shared memory a multiprocessor). */
static inline bool kc_conv_halo_ok(const KcConv2d *p, int64_t K) {
    return p->C == 64 && K <= 64 && K % 8 == 0 && p->R == 3 && p->S == 3 && p->sh == 1 &&
           p->sw == 1 && p->dh == 1 && p->dw == 1 && p->OW == p->W + 2 * p->pw - 2 &&
           p->OH == p->H + 2 * p->ph - 2 && kc_halo_smem(p) <= 113 * 1024;
}

template <int ACT>
static inline int kc_conv_halo_run(cudaStream_t s, const __half *x, const __half *w,
                                   const __half *bias, const __half *r, __half *y,
                                   const KcConv2d *p, int64_t N, int64_t K, int act, float al,
                                   float be) {
    static int sms = 0;
    int dev = 0;
    if (!sms && (cudaGetDevice(&dev) != cudaSuccess ||
                 cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess))
        return KC_ERR_CUDA;
    int bytes = kc_halo_smem(p);
    int64_t Wp = p->W + 2 * p->pw, tiles = N * ((p->OH * Wp + 127) / 128);
    KC_CUDA(cudaFuncSetAttribute(kc_conv_halo_kernel<ACT>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    unsigned grid = (unsigned)(tiles < 2 * sms ? tiles : 2 * sms);
    kc_launch(kc_conv_halo_kernel<ACT>, grid, dim3(256), bytes, s, x, w, bias, r, y,
              kc_geom<int32_t>(p), (int32_t)N, (int32_t)K, act, al, be);
    KC_LAUNCHED();
    return KC_OK;
}

static inline int kc_conv_halo(cudaStream_t s, const __half *x, const __half *w,
                               const __half *bias, const __half *r, __half *y,
                               const KcConv2d *p, int64_t N, int64_t K, int act, float al,
                               float be) {
    if (act == KC_ACT_RELU)
        return kc_conv_halo_run<KC_ACT_RELU>(s, x, w, bias, r, y, p, N, K, act, al, be);
    return kc_conv_halo_run<-1>(s, x, w, bias, r, y, p, N, K, act, al, be);
}

/* Whether this build holds the wgmma core's code (sm_90a): its kernel then has the static
 * shared bias row, which the body built for any other target lacks. */
static inline bool kc_igemm_wg_built(void) {
    static int built = -1;
    if (built < 0) {
        cudaFuncAttributes fa;
        built = cudaFuncGetAttributes(&fa, kc_igemm_wg_kernel<128, 64, 4, 0, KC_ACT_RELU>) ==
                        cudaSuccess &&
                fa.sharedSizeBytes > 0;
    }
    return built > 0;
}

/* The halo core where it suits, else the wgmma core's tile for P x K (the lab:
 * bench/gpu/wgconv_lab.cu; docs/cuda.md, "wgmma for the 3x3 convolutions"). */
static inline int kc_igemm_wg(cudaStream_t s, const __half *x, const __half *w,
                              const __half *bias, const __half *r, __half *y,
                              const KcConv2d *p, int64_t P, int64_t K, int act, float al,
                              float be) {
    if (kc_conv_halo_ok(p, K))
        return kc_conv_halo(s, x, w, bias, r, y, p, P / (p->OH * p->OW), K, act, al, be);
    if (K <= 64 || (P + 127) / 128 * ((K + 127) / 128) < KC_IG_WAVE)
        return kc_igemm_wg_launch<128, 64, 3, 0>(s, x, w, bias, r, y, p, P, K, act, al, be);
    return kc_igemm_wg_launch<128, 128, 3, 0>(s, x, w, bias, r, y, p, P, K, act, al, be);
}

/* The convolution on the tensor cores; KC_ERR_SHAPE where it does not suit (the emitter
 * checks at compile time). On a Hopper whose code this build holds (sm_90a) the wgmma or
 * the halo core (kc_igemm_wg); before sm_80 the WMMA kernel (kc_igemm_nhwc's); else the
 * mma.sync core. Its tiles as
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
    if (major == 9 && kc_igemm_wg_built())
        return kc_igemm_wg(s, x, w, bias, r, y, p, P, K, act, al, be);
    if (K <= 64)
        return kc_igemm_mma_launch<128, 64, 32, 64, 32, 4>(s, x, w, bias, r, y, p, P, K, act,
                                                            al, be);
    return kc_igemm_mma_launch<128, 128, 64, 64, 32, 3>(s, x, w, bias, r, y, p, P, K, act, al,
                                                         be);
}

#endif
