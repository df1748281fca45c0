/* bench/gpu/tma_qconv_lab.cu: the int8 wgmma convolution with its operands brought by the
 * tensor memory accelerator (sm_90a), against kc_qconv (kc_qconv.cuh, which gives ResNet-50's
 * 3x3 layers and strided 1x1 downsamples to kc_qconv_wg_kernel: every thread gathers its
 * 16-byte chunks of A with cp.async, 167 instructions a thread a 128-byte slice, about as many
 * issue cycles as the slice's four wgmma need; docs/cuda.md).
 *
 * lab_qconv_tma_kernel: a block owns BN output channels of a tile of whole output rows -- TR
 * rows of one image, or NB whole images where one image has at most 128 pixels -- so that
 * the tile's A for one tap (r, s) and one 128-byte channel slice is one box of the NHWC input
 * seen as a 4-d tensor (C, W, H, N): the box starts at (c0, s dw - pw, oy0 sh - ph + r dh,
 * n0), walks W and H with the convolution's strides as the tensor map's element strides and
 * holds OW x TR x NB pixels of 128 bytes, in the 128-byte swizzle wgmma reads; the padding
 * is the box's out-of-bounds zero fill, so the form takes inputs whose zero point is 0 (every
 * ResNet-50 layer after a ReLU). B is W (M, Kp) as a 2-d tensor, a box of 128 bytes x BN
 * rows. One thread issues both copies of a slice on the stage's mbarrier (the weights' copies
 * of the first stages before griddepcontrol.wait), ST - 2 slices ahead; the two warpgroups
 * wait on the barrier and multiply (m64nBNk32, four a slice); the epilogue is
 * kc_qconv_wg_kernel's (the block's requantization table, kc_qepi_quad, 16-byte row stores
 * up to the tile's last valid pixel). Rows of the 128-row tile past the box's pixels are
 * computed from stale shared memory and not stored: 112 of 128 rows used at 28 x 28, 98 at
 * 14 x 14 and 7 x 7.
 *
 * usage: nvcc -std=c++17 -O3 -arch=sm_90a -I runtime/cuda -I tests/cuda \
 *            bench/gpu/tma_qconv_lab.cu -o tmalab
 *        ./tmalab check   (shapes against the host's integer formula and kc_qconv, byte for
 *                          byte; "N passed, N failed")
 *        ./tmalab time    (ResNet-50's eligible int8 layers at batch 256: kc_qconv and each
 *                          TMA variant, CUDA events, median of 20, outputs compared)
 * Not in the runtime: measured here first (docs/cuda.md). */
#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "gpu_test.h"
#include "kc_qconv.cuh"

/* ---- mbarriers and tensor copies ---- */
static __device__ __forceinline__ __attribute__((unused)) uint32_t lab_sa(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}
static __device__ __forceinline__ __attribute__((unused)) void lab_mbar_init(uint64_t *b,
                                                                             unsigned count) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(lab_sa(b)), "r"(count)
                 : "memory");
#endif
}
/* the calling thread's arrival, announcing `bytes` of copies that complete on b */
static __device__ __forceinline__ __attribute__((unused)) void lab_mbar_expect(uint64_t *b,
                                                                               unsigned bytes) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(lab_sa(b)),
                 "r"(bytes)
                 : "memory");
#endif
}
/* until the phase of parity `parity` of b has completed */
static __device__ __forceinline__ __attribute__((unused)) void lab_mbar_wait(uint64_t *b,
                                                                             unsigned parity) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    uint32_t done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(lab_sa(b)), "r"(parity)
                     : "memory");
    } while (!done);
#endif
}
static __device__ __forceinline__ __attribute__((unused)) void
lab_tma2(void *dst, const CUtensorMap *m, uint64_t *bar, int c0, int c1) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(lab_sa(dst)),
                 "l"((uint64_t)(uintptr_t)m), "r"(c0), "r"(c1), "r"(lab_sa(bar))
                 : "memory");
#endif
}
static __device__ __forceinline__ __attribute__((unused)) void
lab_tma4(void *dst, const CUtensorMap *m, uint64_t *bar, int c0, int c1, int c2, int c3) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(lab_sa(dst)),
                 "l"((uint64_t)(uintptr_t)m), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(lab_sa(bar))
                 : "memory");
#endif
}

/* ---- the kernel ---- */
template <int BN, int ST>
__global__ void __launch_bounds__(256, 1)
    lab_qconv_tma_kernel(const __grid_constant__ CUtensorMap tx,
                         const __grid_constant__ CUtensorMap tw, const int32_t *__restrict__ rq,
                         const uint8_t *__restrict__ res, uint8_t *__restrict__ y, KcQConv p,
                         int TR, int NB, int tpi) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    enum { BM = 128, BK = KC_QWG_BK, THREADS = 256, YLD = KC_QYLD(BN) };
    enum { A_BYTES = BM * BK, B_BYTES = BN * BK };
    __shared__ int4 tab[BN / 2 * 3];
    __shared__ uint64_t full[ST];
    extern __shared__ unsigned char lab_raw[];
    uint8_t *const sa = (uint8_t *)(void *)kc_wg_smem_base(lab_raw);
    uint8_t *const sb = sa + ST * A_BYTES;
    const int tid = threadIdx.x, wg = tid / 128, wq = (tid % 128) / 32, lane = tid % 32;
    const int n0 = blockIdx.x * BN;
    const int img0 = (int)(blockIdx.y / tpi) * NB, oy0 = (int)(blockIdx.y % tpi) * TR;
    const int32_t m0 = (img0 * p.OH + oy0) * p.OW;
    const int32_t valid = (NB > 1 ? min(NB, p.N - img0) * p.OH : min(TR, p.OH - oy0)) * p.OW;
    const int32_t pend = m0 + valid;
    const int CS = p.C / BK, KT = p.R * p.S * CS;
    const unsigned tx_bytes = (unsigned)(p.OW * TR * NB * BK + B_BYTES);
    auto issue_w = [&](int kt) {
        lab_mbar_expect(&full[kt % ST], tx_bytes);
        lab_tma2(sb + (kt % ST) * B_BYTES, &tw, &full[kt % ST], kt * BK, n0);
    };
    /* X's slices are issued in order: the next one's channel slice, tap column and tap row
     * as a cursor (thread 0's), where dividing kt took about a hundred instructions */
    int xc = 0, xs = 0, xr = 0;
    auto issue_x = [&](int kt) {
        lab_tma4(sa + (kt % ST) * A_BYTES, &tx, &full[kt % ST], xc * BK, xs * p.dw - p.pw,
                 oy0 * p.sh - p.ph + xr * p.dh, img0);
        if (++xc == CS) {
            xc = 0;
            if (++xs == p.S) xs = 0, xr++;
        }
    };
    if (tid == 0) {
        for (int s = 0; s < ST; s++)
            lab_mbar_init(&full[s], 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    const int form = kc_q1tab_make(tab, rq, res, p, n0, BN / 2);
    const int pre = min(ST - 2, KT);
    if (tid == 0)
        for (int kt = 0; kt < pre; kt++)
            issue_w(kt); /* constant: before the wait */
    kc_pdl_sync();
    if (tid == 0)
        for (int kt = 0; kt < pre; kt++)
            issue_x(kt);
    int32_t acc[BN / 2]; /* written first by the first slice's wgmma (scale-d 0) */
    for (int kt = 0; kt < KT; kt++) {
        lab_mbar_wait(&full[kt % ST], (unsigned)(kt / ST) & 1u);
        __syncthreads(); /* every warpgroup is done with slice kt - 2: its stage is free */
        if (tid == 0 && kt + ST - 2 < KT) {
            issue_w(kt + ST - 2);
            issue_x(kt + ST - 2);
        }
        const uint8_t *as = sa + (kt % ST) * A_BYTES + wg * 64 * BK, *bs = sb + (kt % ST) * B_BYTES;
        kc_wg_pin<BN / 2>(acc);
        kc_wg_fence();
        const uint64_t da0 = kc_wg_desc((const __half *)(const void *)as, 16, 1024);
        const uint64_t db0 = kc_wg_desc((const __half *)(const void *)bs, 16, 1024);
#pragma unroll
        for (int kk = 0; kk < BK / 32; kk++) {
            if (BN == 64)
                kc_wgmma_u8s8_n64(acc, da0 + 2 * kk, db0 + 2 * kk, kt > 0 || kk > 0);
            else
                kc_wgmma_u8s8_n128(acc, da0 + 2 * kk, db0 + 2 * kk, kt > 0 || kk > 0);
        }
        kc_wg_commit();
        kc_qwg_wait<1, BN / 2>(acc);
    }
    kc_qwg_wait<0, BN / 2>(acc);
    __syncthreads(); /* the stages become the block's uint8 output tile */
    uint8_t *const ys = sa;
    kc_qwg_res_tile<BM, BN, THREADS>(ys, res, p, KcRowsFrom{m0, pend}, n0, tid);
    kc_qwg_epi_any<BN>(form, res, acc, tab, p, n0, ys + (wg * 64 + wq * 16 + (lane >> 2)) * YLD,
                       lane & 3);
    __syncthreads();
    kc_qepi16_store<BN, BM, THREADS>(y, p, pend, m0, n0, ys);
#else
    (void)tx, (void)tw, (void)rq, (void)res, (void)y, (void)p, (void)TR, (void)NB, (void)tpi;
#endif
}

/* The same product warp-specialized: a ninth warp issues the copies (its lane 0), up to ST
 * slices ahead, each stage's reuse gated by an "empty" mbarrier that the eight multiplying
 * warps arrive on once their wgmma group of that stage has completed (one wgmma group behind),
 * so that the loop has no block-wide barrier. The epilogue is the first kernel's, run by the
 * multiplying warps; the copying warp takes part only in its barriers. */
template <int BN, int ST>
__global__ void __launch_bounds__(288, 1)
    lab_qconv_tma_ws_kernel(const __grid_constant__ CUtensorMap tx,
                            const __grid_constant__ CUtensorMap tw, const int32_t *__restrict__ rq,
                            const uint8_t *__restrict__ res, uint8_t *__restrict__ y, KcQConv p,
                            int TR, int NB, int tpi) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    enum { BM = 128, BK = KC_QWG_BK, THREADS = 256, YLD = KC_QYLD(BN) };
    enum { A_BYTES = BM * BK, B_BYTES = BN * BK };
    __shared__ int4 tab[BN / 2 * 3];
    __shared__ uint64_t full[ST], empty[ST];
    extern __shared__ unsigned char lab_raw[];
    uint8_t *const sa = (uint8_t *)(void *)kc_wg_smem_base(lab_raw);
    uint8_t *const sb = sa + ST * A_BYTES;
    const int tid = threadIdx.x, wg = tid / 128, wq = (tid % 128) / 32, lane = tid % 32;
    const int n0 = blockIdx.x * BN;
    const int img0 = (int)(blockIdx.y / tpi) * NB, oy0 = (int)(blockIdx.y % tpi) * TR;
    const int32_t m0 = (img0 * p.OH + oy0) * p.OW;
    const int32_t valid = (NB > 1 ? min(NB, p.N - img0) * p.OH : min(TR, p.OH - oy0)) * p.OW;
    const int32_t pend = m0 + valid;
    const int CS = p.C / BK, KT = p.R * p.S * CS;
    const unsigned tx_bytes = (unsigned)(p.OW * TR * NB * BK + B_BYTES);
    if (tid == 0) {
        for (int s = 0; s < ST; s++)
            lab_mbar_init(&full[s], 1), lab_mbar_init(&empty[s], 8);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    const int form = kc_q1tab_make(tab, rq, res, p, n0, BN / 2);
    int32_t acc[BN / 2];
    if (tid == THREADS) { /* the copying warp's lane 0 */
        const int pre = min(ST, KT);
        for (int kt = 0; kt < pre; kt++) { /* the weights: constant, before the wait */
            lab_mbar_expect(&full[kt], tx_bytes);
            lab_tma2(sb + kt * B_BYTES, &tw, &full[kt], kt * BK, n0);
        }
        kc_pdl_sync();
        int xc = 0, xs = 0, xr = 0; /* the next slice's channel slice, tap column, tap row */
        for (int kt = 0; kt < KT; kt++) {
            const int b = kt % ST;
            if (kt >= pre) {
                lab_mbar_wait(&empty[b], (unsigned)(kt / ST - 1) & 1u);
                lab_mbar_expect(&full[b], tx_bytes);
                lab_tma2(sb + b * B_BYTES, &tw, &full[b], kt * BK, n0);
            }
            lab_tma4(sa + b * A_BYTES, &tx, &full[b], xc * BK, xs * p.dw - p.pw,
                     oy0 * p.sh - p.ph + xr * p.dh, img0);
            if (++xc == CS) {
                xc = 0;
                if (++xs == p.S) xs = 0, xr++;
            }
        }
    } else if (tid < THREADS) {
        kc_pdl_sync();
        for (int kt = 0; kt < KT; kt++) {
            lab_mbar_wait(&full[kt % ST], (unsigned)(kt / ST) & 1u);
            const uint8_t *as = sa + (kt % ST) * A_BYTES + wg * 64 * BK,
                          *bs = sb + (kt % ST) * B_BYTES;
            kc_wg_pin<BN / 2>(acc);
            kc_wg_fence();
            const uint64_t da0 = kc_wg_desc((const __half *)(const void *)as, 16, 1024);
            const uint64_t db0 = kc_wg_desc((const __half *)(const void *)bs, 16, 1024);
#pragma unroll
            for (int kk = 0; kk < BK / 32; kk++) {
                if (BN == 64)
                    kc_wgmma_u8s8_n64(acc, da0 + 2 * kk, db0 + 2 * kk, kt > 0 || kk > 0);
                else
                    kc_wgmma_u8s8_n128(acc, da0 + 2 * kk, db0 + 2 * kk, kt > 0 || kk > 0);
            }
            kc_wg_commit();
            kc_qwg_wait<1, BN / 2>(acc);
            /* slice kt - 1's group has completed: its stage is free */
            if (kt > 0 && lane == 0)
                asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(
                                 lab_sa(&empty[(kt - 1) % ST]))
                             : "memory");
        }
        kc_qwg_wait<0, BN / 2>(acc);
    }
    __syncthreads(); /* the stages become the block's uint8 output tile */
    uint8_t *const ys = sa;
    if (res && tid < THREADS) /* kc_qwg_res_tile's copy, the multiplying warps' */
        for (int i = tid; i < BM * (BN / 16); i += THREADS) {
            const int r = i / (BN / 16), q = i % (BN / 16), n = n0 + q * 16;
            if (m0 + r < pend && n < p.M)
                *(uint4 *)(void *)(ys + r * YLD + q * 16) =
                    *(const uint4 *)(const void *)(res + (size_t)(m0 + r) * p.M + n);
        }
    __syncthreads();
    if (tid < THREADS)
        kc_qwg_epi_any<BN>(form, res, acc, tab, p, n0, ys + (wg * 64 + wq * 16 + (lane >> 2)) * YLD,
                           lane & 3);
    __syncthreads();
    if (tid < THREADS) kc_qepi16_store<BN, BM, THREADS>(y, p, pend, m0, n0, ys);
#else
    (void)tx, (void)tw, (void)rq, (void)res, (void)y, (void)p, (void)TR, (void)NB, (void)tpi;
#endif
}

/* ---- the host side: tensor maps, the tile, the launch ---- */
static PFN_cuTensorMapEncodeTiled_v12000 lab_encode(void) {
    static PFN_cuTensorMapEncodeTiled_v12000 f;
    if (!f) {
        void *fn = NULL;
        cudaDriverEntryPointQueryResult q;
#if CUDART_VERSION >= 12050
        CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                            &q));
#else
        CK(cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault, &q));
#endif
        if (q != cudaDriverEntryPointSuccess || !fn) {
            printf("cuTensorMapEncodeTiled not found\n");
            exit(2);
        }
        f = (PFN_cuTensorMapEncodeTiled_v12000)fn;
    }
    return f;
}

struct LabPlan {
    CUtensorMap tx, tw;
    int TR, NB, tpi, bn, st, ws;
    dim3 grid;
    size_t smem;
};

static size_t lab_smem(int bn, int st) { return (size_t)st * (128 * 128 + bn * 128) + 1024; }

/* false where the form does not take the layer (why in *why) */
static bool lab_plan(LabPlan &L, const uint8_t *x, const int8_t *w, const KcQConv &p, int bn,
                     int st, int ws, const char **why) {
    *why = NULL;
    if (p.C % 128)
        *why = "C not in 128s";
    else if (p.x_zp)
        *why = "input zero point not 0";
    else if (p.M % 16)
        *why = "M not in 16s";
    else if (p.Kp != p.R * p.S * p.C)
        *why = "padded reduction";
    else if (p.OW > 128 || p.OW * p.sw > 256 || p.sw > 8 || p.sh > 8)
        *why = "row too wide";
    if (*why) return false;
    const int trmax = 128 / p.OW;
    if (trmax >= p.OH) {
        L.TR = p.OH, L.NB = std::min(128 / (p.OH * p.OW), p.N), L.tpi = 1;
    } else {
        const int t = (p.OH + trmax - 1) / trmax;
        L.TR = (p.OH + t - 1) / t, L.NB = 1, L.tpi = (p.OH + L.TR - 1) / L.TR;
    }
    if (L.TR * p.sh > 256) return *why = "tile too tall", false;
    const cuuint64_t xd[4] = {(cuuint64_t)p.C, (cuuint64_t)p.W, (cuuint64_t)p.H, (cuuint64_t)p.N};
    const cuuint64_t xs[3] = {(cuuint64_t)p.C, (cuuint64_t)p.W * p.C, (cuuint64_t)p.H * p.W * p.C};
    const cuuint32_t xb[4] = {128, (cuuint32_t)(p.OW * p.sw), (cuuint32_t)(L.TR * p.sh),
                              (cuuint32_t)L.NB};
    const cuuint32_t xe[4] = {1, (cuuint32_t)p.sw, (cuuint32_t)p.sh, 1};
    CUresult r =
        lab_encode()(&L.tx, CU_TENSOR_MAP_DATA_TYPE_UINT8, 4, (void *)x, xd, xs, xb, xe,
                     CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                     CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) return *why = "encoding X's map failed", false;
    const cuuint64_t wd[2] = {(cuuint64_t)p.Kp, (cuuint64_t)p.M};
    const cuuint64_t wstr[1] = {(cuuint64_t)p.Kp};
    const cuuint32_t wb[2] = {128, (cuuint32_t)bn}, we[2] = {1, 1};
    r = lab_encode()(&L.tw, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, (void *)w, wd, wstr, wb, we,
                     CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                     CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) return *why = "encoding W's map failed", false;
    L.bn = bn, L.st = st, L.ws = ws;
    L.grid = dim3((unsigned)((p.M + bn - 1) / bn), (unsigned)((p.N + L.NB - 1) / L.NB * L.tpi));
    L.smem = lab_smem(bn, st);
    return true;
}

template <int BN, int ST, int WS>
static void lab_launch_t(cudaStream_t s, const LabPlan &L, const int32_t *rq, const uint8_t *res,
                         uint8_t *y, const KcQConv &p) {
    static bool opted;
    void (*k)(const CUtensorMap, const CUtensorMap, const int32_t *, const uint8_t *, uint8_t *,
              KcQConv, int, int, int);
    if constexpr (WS) k = lab_qconv_tma_ws_kernel<BN, ST>;
    else k = lab_qconv_tma_kernel<BN, ST>;
    if (!opted) {
        CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)L.smem));
        opted = true;
    }
    kc_qlaunch(k, L.grid, dim3(WS ? 288 : 256), L.smem, s, L.tx, L.tw, rq, res, y, p, L.TR, L.NB,
               L.tpi);
}

/* the variants timed: BN, ST, warp-specialized */
static const int variants[][3] = {{128, 3, 0}, {128, 4, 0}, {64, 4, 0},
                                  {128, 4, 1}, {128, 6, 1}, {64, 4, 1}};
#define LAB_VARIANT(BN, ST, WS)                                                                    \
    if (L.bn == BN && L.st == ST && L.ws == WS) return lab_launch_t<BN, ST, WS>(s, L, rq, res, y, p)

static void lab_launch(cudaStream_t s, const LabPlan &L, const int32_t *rq, const uint8_t *res,
                       uint8_t *y, const KcQConv &p) {
    LAB_VARIANT(128, 3, 0);
    LAB_VARIANT(128, 4, 0);
    LAB_VARIANT(64, 4, 0);
    LAB_VARIANT(128, 4, 1);
    LAB_VARIANT(128, 6, 1);
    LAB_VARIANT(64, 4, 1);
    printf("no such variant\n");
    exit(2);
}

/* ---- cases ---- */
static unsigned long long rng = 0x9E3779B97F4A7C15ull;
static uint32_t u32(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}
static int irand(int lo, int hi) { return lo + (int)(u32() % (uint32_t)(hi - lo + 1)); }

struct Shape {
    const char *what;
    int N, H, W, C, M, R, S, sh, sw, ph, pw, dh, dw;
    bool res;
    int count; /* layers of this shape in ResNet-50 (time) */
};

struct Layer {
    KcQConv p;
    std::vector<uint8_t> x, r;
    std::vector<int8_t> w;
    std::vector<int32_t> rq;
    uint8_t *dx, *dr, *dy, *dy2;
    int8_t *dw;
    int32_t *drq;
    size_t ny;
};

/* random operands; requantization as on ResNet-50 (kc_qhi_terms' reach) or drawn wide */
static void make(Layer &L, const Shape &c, bool resnet_rq) {
    KcQConv &p = L.p;
    p.N = c.N, p.H = c.H, p.W = c.W, p.C = c.C, p.M = c.M, p.R = c.R, p.S = c.S;
    p.sh = c.sh, p.sw = c.sw, p.ph = c.ph, p.pw = c.pw, p.dh = c.dh, p.dw = c.dw;
    p.OH = (c.H + 2 * c.ph - c.dh * (c.R - 1) - 1) / c.sh + 1;
    p.OW = (c.W + 2 * c.pw - c.dw * (c.S - 1) - 1) / c.sw + 1;
    p.K = c.R * c.S * c.C, p.Kp = (p.K + KC_QBK - 1) / KC_QBK * KC_QBK;
    p.x_zp = 0, p.y_zp = resnet_rq ? 0 : irand(0, 255), p.r_zp = irand(0, 255);
    p.lo = resnet_rq || irand(0, 1) ? 0 : irand(0, 80);
    p.hi = resnet_rq || irand(0, 1) ? 255 : irand(170, 255);
    size_t nx = (size_t)c.N * c.H * c.W * c.C;
    L.ny = (size_t)c.N * p.OH * p.OW * c.M;
    L.x.resize(nx), L.r.resize(L.ny), L.w.resize((size_t)c.M * p.Kp), L.rq.resize(4 * (size_t)c.M);
    for (auto &v : L.x)
        v = (uint8_t)u32();
    for (auto &v : L.r)
        v = (uint8_t)u32();
    for (int m = 0; m < c.M; m++)
        for (int k = 0; k < p.Kp; k++)
            L.w[(size_t)m * p.Kp + k] = k < p.K ? (int8_t)(u32() % 255 - 127) : 0;
    for (int m = 0; m < c.M; m++) {
        /* ResNet-50's residual layers: one shift, 30 or 31, small multipliers, residual
         * multipliers in [2^30, 2^31) (qconv_gpu's rqform 1) */
        int sh = resnet_rq ? 30 + (c.M & 1) : irand(16, 40);
        L.rq[m] = irand(-40000, 40000);
        L.rq[c.M + m] = resnet_rq ? irand(1 << 18, (1 << 21) - 1)
                                  : irand(1 << (sh - 14), (int)((1u << (sh - 12)) - 1));
        L.rq[2 * c.M + m] =
            c.res ? (resnet_rq ? irand(1 << 30, 0x7fffffff) : irand(-(1 << 14), 1 << 14)) : 0;
        L.rq[3 * c.M + m] = sh;
    }
    CK(cudaMalloc(&L.dx, nx));
    CK(cudaMalloc(&L.dr, L.ny));
    CK(cudaMalloc(&L.dy, L.ny));
    CK(cudaMalloc(&L.dy2, L.ny));
    CK(cudaMalloc(&L.dw, L.w.size()));
    CK(cudaMalloc(&L.drq, L.rq.size() * 4));
    CK(cudaMemcpy(L.dx, L.x.data(), nx, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(L.dr, L.r.data(), L.ny, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(L.dw, L.w.data(), L.w.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(L.drq, L.rq.data(), L.rq.size() * 4, cudaMemcpyHostToDevice));
}

static void drop(Layer &L) {
    cudaFree(L.dx), cudaFree(L.dr), cudaFree(L.dy), cudaFree(L.dy2), cudaFree(L.dw),
        cudaFree(L.drq);
}

/* rt_qrequant1's formula on the host (tests/cuda/qconv_gpu.cu's reference) */
static void reference(const Layer &L, const Shape &c, std::vector<uint8_t> &y) {
    const KcQConv &p = L.p;
    y.assign(L.ny, 0);
    for (int n = 0; n < c.N; n++)
        for (int oy = 0; oy < p.OH; oy++)
            for (int ox = 0; ox < p.OW; ox++)
                for (int m = 0; m < c.M; m++) {
                    int64_t acc = L.rq[m];
                    for (int ky = 0; ky < c.R; ky++)
                        for (int kx = 0; kx < c.S; kx++) {
                            int iy = oy * c.sh - c.ph + ky * c.dh,
                                ix = ox * c.sw - c.pw + kx * c.dw;
                            if (iy < 0 || iy >= c.H || ix < 0 || ix >= c.W) continue; /* x_zp 0 */
                            const uint8_t *xr = &L.x[((size_t)(n * c.H + iy) * c.W + ix) * c.C];
                            const int8_t *wr = &L.w[(size_t)m * p.Kp + (ky * c.S + kx) * c.C];
                            for (int ch = 0; ch < c.C; ch++)
                                acc += (int32_t)xr[ch] * wr[ch];
                        }
                    size_t o = ((size_t)(n * p.OH + oy) * p.OW + ox) * c.M + m;
                    int64_t t = (int64_t)(int32_t)acc * L.rq[c.M + m];
                    if (c.res) t += (int64_t)((int32_t)L.r[o] - p.r_zp) * L.rq[2 * c.M + m];
                    int s = L.rq[3 * c.M + m];
                    int64_t v = ((t + ((int64_t)1 << (s - 1))) >> s) + p.y_zp;
                    v = v > p.lo ? v : p.lo;
                    y[o] = (uint8_t)(v < p.hi ? v : p.hi);
                }
}

static size_t differ(const std::vector<uint8_t> &a, const std::vector<uint8_t> &b, size_t *first) {
    size_t bad = 0;
    for (size_t i = 0; i < a.size(); i++)
        if (a[i] != b[i] && !bad++) *first = i;
    return bad;
}

static void check_shape(const Shape &c, bool host, bool resnet_rq) {
    Layer L;
    make(L, c, resnet_rq);
    const KcQConv &p = L.p;
    std::vector<uint8_t> want, got(L.ny), ref(L.ny);
    CK(cudaMemset(L.dy2, 0x5a, L.ny));
    int rc = kc_qconv(0, L.dx, L.dw, L.drq, c.res ? L.dr : NULL, L.dy2, &L.p);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(ref.data(), L.dy2, L.ny, cudaMemcpyDeviceToHost));
    if (host)
        reference(L, c, want);
    else
        want = ref;
    size_t first = 0;
    if (host && (rc != KC_OK || differ(ref, want, &first))) {
        printf("FAIL %s: kc_qconv differs from the host (rc %d, first at %zu)\n", c.what, rc,
               first);
        failed++;
    }
    int distinct = 0;
    bool seen[256] = {false};
    for (uint8_t v : want)
        distinct += !seen[v], seen[v] = true;
    for (const auto &v : variants) {
        if (v[0] > 64 && p.M < 128) continue;
        LabPlan P;
        const char *why;
        if (!lab_plan(P, L.dx, L.dw, p, v[0], v[1], v[2], &why)) {
            printf("FAIL %s: not taken (%s)\n", c.what, why);
            failed++;
            break;
        }
        CK(cudaMemset(L.dy, 0xa5, L.ny)); /* poison: an unwritten byte shows */
        lab_launch(0, P, L.drq, c.res ? L.dr : NULL, L.dy, p);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(got.data(), L.dy, L.ny, cudaMemcpyDeviceToHost));
        size_t bad = differ(got, want, &first);
        if (!bad && distinct > 8) {
            passed++;
            printf("ok   %s BN %d ST %d%s: %dx%dx%dx%d -> %dx%dx%d, %dx%d s%d%s, tile %d rows x %d "
                   "images, grid %u x %u%s\n",
                   c.what, v[0], v[1], v[2] ? " ws" : "", c.N, c.H, c.W, c.C, p.OH, p.OW, c.M, c.R,
                   c.S, c.sh, c.res ? " +res" : "", P.TR, P.NB, P.grid.x, P.grid.y,
                   host ? ", host-checked" : "");
        } else {
            failed++;
            printf("FAIL %s BN %d ST %d%s: %zu of %zu bytes differ (first at %zu: %d, want %d), %d "
                   "distinct\n",
                   c.what, v[0], v[1], v[2] ? " ws" : "", bad, L.ny, first, bad ? got[first] : 0,
                   bad ? want[first] : 0, distinct);
        }
    }
    drop(L);
}

/* ResNet-50's layers that the form takes (batch 256), with their counts in the model */
static const Shape r50[] = {
    {"layer2 3x3", 256, 28, 28, 128, 128, 3, 3, 1, 1, 1, 1, 1, 1, false, 3},
    {"layer2.0 3x3 s2", 256, 56, 56, 128, 128, 3, 3, 2, 2, 1, 1, 1, 1, false, 1},
    {"layer3 3x3", 256, 14, 14, 256, 256, 3, 3, 1, 1, 1, 1, 1, 1, false, 5},
    {"layer3.0 3x3 s2", 256, 28, 28, 256, 256, 3, 3, 2, 2, 1, 1, 1, 1, false, 1},
    {"layer4 3x3", 256, 7, 7, 512, 512, 3, 3, 1, 1, 1, 1, 1, 1, false, 2},
    {"layer4.0 3x3 s2", 256, 14, 14, 512, 512, 3, 3, 2, 2, 1, 1, 1, 1, false, 1},
    {"layer2.0 downsample", 256, 56, 56, 256, 512, 1, 1, 2, 2, 0, 0, 1, 1, false, 1},
    {"layer3.0 downsample", 256, 28, 28, 512, 1024, 1, 1, 2, 2, 0, 0, 1, 1, false, 1},
    {"layer4.0 downsample", 256, 14, 14, 1024, 2048, 1, 1, 2, 2, 0, 0, 1, 1, false, 1},
    {"layer2 conv3 (1x1 +res)", 256, 28, 28, 128, 512, 1, 1, 1, 1, 0, 0, 1, 1, true, 4},
    {"layer3 conv3 (1x1 +res)", 256, 14, 14, 256, 1024, 1, 1, 1, 1, 0, 0, 1, 1, true, 6},
    {"layer4 conv3 (1x1 +res)", 256, 7, 7, 512, 2048, 1, 1, 1, 1, 0, 0, 1, 1, true, 3},
};

static void check(void) {
    /* small batches against the host; every tile form: TR rows (28: 4 rows, 14: 7), whole
     * images (7 x 7: two a tile, an odd count; 9 x 9: one), strides, a dilation, a residual,
     * partial column tiles (M 48, 80), wide requantization terms */
    const Shape small[] = {
        {"28x28 3x3", 3, 28, 28, 128, 128, 3, 3, 1, 1, 1, 1, 1, 1, false, 0},
        {"56->28 3x3 s2", 2, 56, 56, 128, 128, 3, 3, 2, 2, 1, 1, 1, 1, false, 0},
        {"14x14 3x3 C256", 3, 14, 14, 256, 256, 3, 3, 1, 1, 1, 1, 1, 1, false, 0},
        {"28->14 3x3 s2 C256", 2, 28, 28, 256, 128, 3, 3, 2, 2, 1, 1, 1, 1, false, 0},
        {"7x7 3x3 C512, 5 images", 5, 7, 7, 512, 128, 3, 3, 1, 1, 1, 1, 1, 1, false, 0},
        {"14->7 3x3 s2 C512", 3, 14, 14, 512, 128, 3, 3, 2, 2, 1, 1, 1, 1, false, 0},
        {"56->28 1x1 s2", 2, 56, 56, 256, 256, 1, 1, 2, 2, 0, 0, 1, 1, false, 0},
        {"9x9 3x3 d2", 3, 9, 9, 128, 64, 3, 3, 1, 1, 2, 2, 2, 2, false, 0},
        {"11x13 5x3 p(2,1)", 2, 11, 13, 128, 48, 5, 3, 1, 1, 2, 1, 1, 1, false, 0},
        {"20x20 1x1 +res M80", 2, 20, 20, 128, 80, 1, 1, 1, 1, 0, 0, 1, 1, true, 0},
        {"30x30 3x3 s2 +res", 2, 30, 30, 128, 128, 3, 3, 2, 2, 1, 1, 1, 1, true, 0},
    };
    for (const Shape &c : small)
        check_shape(c, true, false);
    for (const Shape &c : small)
        check_shape(c, true, true);
}

static void time_all(void) {
    double sum_ref = 0, sum_best = 0;
    for (const Shape &c : r50) {
        Layer L;
        make(L, c, true);
        const KcQConv &p = L.p;
        const uint8_t *res = c.res ? L.dr : NULL;
        std::vector<uint8_t> a(L.ny), b(L.ny);
        float tref = time_ms([&] { kc_qconv(0, L.dx, L.dw, L.drq, res, L.dy2, &L.p); });
        CK(cudaMemcpy(a.data(), L.dy2, L.ny, cudaMemcpyDeviceToHost));
        const double ops = 2.0 * L.ny * p.K;
        printf("%-26s x%d  kc_qconv %.4f ms (%.0f TOPS)", c.what, c.count, tref, ops / tref / 1e9);
        float best = tref;
        for (const auto &v : variants) {
            LabPlan P;
            const char *why;
            if (v[0] > 64 && p.M < 128) continue;
            if (!lab_plan(P, L.dx, L.dw, p, v[0], v[1], v[2], &why)) {
                printf("  [not taken: %s]", why);
                break;
            }
            CK(cudaMemset(L.dy, 0xa5, L.ny));
            float t = time_ms([&] { lab_launch(0, P, L.drq, res, L.dy, p); });
            CK(cudaMemcpy(b.data(), L.dy, L.ny, cudaMemcpyDeviceToHost));
            size_t first = 0, bad = differ(a, b, &first);
            printf("  | BN %d ST %d%s %.4f (%.0f)%s", v[0], v[1], v[2] ? " ws" : "", t,
                   ops / t / 1e9, bad ? " DIFFERS" : "");
            if (bad)
                failed++;
            else
                passed++, best = std::min(best, t);
        }
        printf("\n");
        sum_ref += c.count * tref, sum_best += c.count * best;
        drop(L);
    }
    printf("ResNet-50 batch 256, these layers weighted by their counts: kc_qconv %.3f ms, with "
           "the faster TMA variant where it wins %.3f ms\n",
           sum_ref, sum_best);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "check";
    int dev = 0, major = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    if (major != 9) {
        printf("needs an sm_90 device\n0 passed, 1 failed\n");
        return 1;
    }
    if (!strcmp(mode, "time"))
        time_all();
    else
        check();
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
